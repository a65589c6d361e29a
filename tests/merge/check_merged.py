#!/usr/bin/env python3
"""Check a merged timeline written by mergetrace against its input traces,
recomputing everything from the rank files with Python's json module and
integer arithmetic (no code shared with mergetrace).

Usage: check_merged.py MERGED(.json|.json.gz) --input DIR_OR_FILE... \\
           [--clocks CLOCKS.json] [--gpu-only] [--window START_NS END_NS] [--tol-ns N]

CLOCKS.json: {"ranks": [{"rank", "path", "offset_ns", "drift_ppm", "anchor_ns"}]}
(a rank without an entry gets the identity). Input files get their rank from
CLOCKS.json (by path), else distributedInfo.rank, else a number in the file
name (rank-3, rank3, rank_3, worker3); a single file without any is rank 0.

Checks, for every input rank:
  * every input event appears exactly once in the merged file, except the
    process_name / process_labels / process_sort_index metadata it replaces
    and the metadata of pids that have no other event; matched by rank,
    name, ph, tid, the expected merged pid ((rank + 1) * 4096 + slot: GPU
    pids by device, numeric CPU pids ascending, string pids in order of
    appearance), the expected flow id (numbers rank * 2^32 + id mod 2^32,
    strings "r<rank>:id"), every other key's value, and the corrected ts
    and dur: corrected(t) = t + llround(offset_ns + drift_ppm * 1e-6 *
    (t - anchor_ns)) on absolute ns (ts * 1000 + baseTimeNanoseconds),
    rebuilt with Python ints (the double expression evaluated as C does);
  * no merged event of the rank is left over besides the new process
    metadata and the memory counter tracks ("C" events "memory GPU d" /
    "memory CPU"), and each merged pid has one process_name and a
    process_sort_index equal to the pid;
  * every counter point is the state ("Total Allocated", "Total Reserved")
    of one of the rank's [memory] events at its corrected ts, and without
    --window a track's largest allocated is the device's peak;
  * the file's envelope: displayTimeUnit, otherData.generator and ranks.
The last pid of each rank, (rank + 2) * 4096 - 1, holds the rank's Flight
Recorder entries when dumps were given beside the traces; it is passed
over (tests/fr/check_fr_merged.py checks it).
Prints the first failures, then "N passed, M failed"; exits 1 on failure.
"""

import argparse
import gzip
import json
import os
import re
import sys
from collections import Counter, defaultdict
from decimal import ROUND_HALF_UP, Decimal

PIDS_PER_RANK = 4096
GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset", "cuda_sync", "gpu_user_annotation",
            "Kernel", "Memcpy", "Memset"}
PROCESS_META = {"process_name", "process_labels", "process_sort_index"}
REWRITTEN = {"ts", "dur", "pid", "id"}
NUM_ID = re.compile(r"-?[0-9]+\Z")
RANK_IN_NAME = re.compile(r"(?:rank|worker)[-_]?([0-9]+)", re.IGNORECASE)
MAX_SHOWN = 20


def no_constants(name):
    raise ValueError("non-JSON constant %s" % name)


def load_json(path):
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    if raw[:3] == b"\xef\xbb\xbf":
        raw = raw[3:]
    # Decimal keeps every digit of fractional times; ints stay ints.
    return json.loads(raw.decode("utf-8"), parse_float=Decimal, parse_constant=no_constants)


def us_to_ns(v):
    """A JSON number of microseconds -> int ns, rounded half away from zero
    (what mergetrace's loader does)."""
    if isinstance(v, bool) or not isinstance(v, (int, Decimal)):
        return None
    return int((Decimal(v) * 1000).to_integral_value(rounding=ROUND_HALF_UP))


def llround(x):
    return int(Decimal(x).to_integral_value(rounding=ROUND_HALF_UP))


class Clock:
    def __init__(self, offset_ns=0.0, drift_ppm=0.0, anchor_ns=0):
        self.offset = float(offset_ns)
        self.drift = float(drift_ppm)
        self.anchor = int(anchor_ns)

    def apply(self, t):
        # C: t + llround(offset_ns + drift_ppm * 1e-6 * (double)(t - anchor_ns))
        return t + llround(self.offset + self.drift * 1e-6 * float(t - self.anchor))


def norm_pid(ev):
    """The pid as mergetrace's loader sees it: numeric strings are numbers,
    an absent pid is 0."""
    p = ev.get("pid", 0)
    if isinstance(p, str) and NUM_ID.match(p):
        return int(p)
    if isinstance(p, bool) or p is None or isinstance(p, (dict, list)):
        return 0
    if isinstance(p, Decimal):
        return int(p) if p == int(p) else 0
    return p


def expected_id(v, rank):
    if isinstance(v, str):
        return "r%d:%s" % (rank, v)
    if isinstance(v, bool) or v is None or isinstance(v, (dict, list)):
        return v
    if isinstance(v, Decimal):
        if v != int(v):
            return "r%d:%s" % (rank, format(v, "f") if "E" in str(v) else str(v))
        v = int(v)
    return (rank << 32) + (v % (1 << 32))


def canon(d):
    return json.dumps(d, sort_keys=True, default=str, ensure_ascii=True)


def events_of(doc):
    if isinstance(doc, list):
        return doc
    if isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list):
        return doc["traceEvents"]
    return None


def gpu_label(ev):
    if ev.get("ph") != "M" or ev.get("name") != "process_labels":
        return None
    lab = (ev.get("args") or {}).get("labels")
    m = re.match(r"GPU ([0-9]+)", lab) if isinstance(lab, str) else None
    return int(m.group(1)) if m else None


def slots_of(events):
    """original pid -> slot, following mergetrace's rule."""
    info = {}
    order = 0
    for ev in events:
        if not isinstance(ev, dict):
            continue
        p = norm_pid(ev)
        key = (isinstance(p, str), p)
        if key not in info:
            info[key] = {"first": order, "live": False, "gpu": False, "dev": None}
            order += 1
        e = info[key]
        if ev.get("ph") != "M":
            e["live"] = True
        if not isinstance(p, str):
            if ev.get("cat") in GPU_CATS:
                e["gpu"] = True
            d = gpu_label(ev)
            if d is not None:
                e["gpu"] = True
                e["dev"] = d

    def sort_key(item):
        (is_str, p), e = item
        if is_str:
            return (2, 0, e["first"])
        if e["gpu"]:
            return (0, e["dev"] if e["dev"] is not None else p, p)
        return (1, p, 0)

    live = sorted(((k, e) for k, e in info.items() if e["live"]), key=sort_key)
    return {k: i for i, (k, e) in enumerate(live)}, {k: e["gpu"] for k, e in info.items()}


def rank_from_name(path):
    m = None
    for m in RANK_IN_NAME.finditer(os.path.basename(path)):
        pass
    return int(m.group(1)) if m else None


def list_inputs(args):
    files = []
    for a in args:
        if os.path.isdir(a):
            for n in sorted(os.listdir(a)):
                if n.endswith(".json") or n.endswith(".json.gz"):
                    files.append(os.path.join(a, n))
        else:
            files.append(a)
    return files


class Result:
    def __init__(self):
        self.passed = 0
        self.failed = 0
        self.shown = 0

    def ok(self, n=1):
        self.passed += n

    def fail(self, what):
        self.failed += 1
        if self.shown < MAX_SHOWN:
            print("FAIL: " + what)
            self.shown += 1
        elif self.shown == MAX_SHOWN:
            print("FAIL: ... (more failures not shown)")
            self.shown += 1


def match_group(exp, got, tol):
    """exp, got: lists of (ts, dur, what). Pairs within tol (ns) in order;
    returns (matched, missing, extra)."""
    exp.sort(key=lambda x: (x[0] is None, x[0] or 0, x[1] is None, x[1] or 0))
    got.sort(key=lambda x: (x[0] is None, x[0] or 0, x[1] is None, x[1] or 0))
    if tol == 0:
        ce = Counter((e[0], e[1]) for e in exp)
        cg = Counter((g[0], g[1]) for g in got)
        matched = sum(min(ce[k], cg[k]) for k in ce)

        def surplus(items, mine, other):
            left = {k: mine[k] - other[k] for k in mine if mine[k] > other[k]}
            out = []
            for it in items:
                k = (it[0], it[1])
                if left.get(k, 0) > 0:
                    left[k] -= 1
                    out.append(it)
            return out
        return matched, surplus(exp, ce, cg), surplus(got, cg, ce)

    def close(a, b, t):
        if a is None or b is None:
            return a is b
        return abs(a - b) <= t

    used = [False] * len(got)
    matched, missing = 0, []
    j0 = 0
    for e in exp:
        while j0 < len(got) and used[j0]:
            j0 += 1
        hit = None
        j = j0
        while j < len(got):
            g = got[j]
            if e[0] is not None and g[0] is not None and g[0] > e[0] + tol:
                break
            if not used[j] and close(e[0], g[0], tol) and close(e[1], g[1], 2 * tol):
                hit = j
                break
            j += 1
        if hit is None:
            missing.append(e)
        else:
            used[hit] = True
            matched += 1
    extra = [g for g, u in zip(got, used) if not u]
    return matched, missing, extra


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("merged")
    ap.add_argument("--input", nargs="+", required=True)
    ap.add_argument("--clocks")
    ap.add_argument("--gpu-only", action="store_true")
    ap.add_argument("--window", nargs=2, type=int, metavar=("START_NS", "END_NS"))
    ap.add_argument("--report", help="report.json of the run: its merged.events must be the "
                    "number of entries of traceEvents (the header's process_name included)")
    ap.add_argument("--tol-ns", type=int, default=0,
                    help="accept corrected times this far off (default 0: exact)")
    a = ap.parse_args()
    res = Result()

    clocks_by_path, clocks_by_rank = {}, {}
    if a.clocks:
        with open(a.clocks) as f:
            cj = json.load(f, parse_float=Decimal)
        for c in cj.get("ranks", []):
            clk = Clock(c.get("offset_ns", 0), c.get("drift_ppm", 0), c.get("anchor_ns", 0))
            clocks_by_rank[int(c["rank"])] = clk
            if c.get("path"):
                clocks_by_path[os.path.realpath(c["path"])] = int(c["rank"])
                clocks_by_path.setdefault(os.path.basename(c["path"]), int(c["rank"]))

    try:
        merged = load_json(a.merged)
    except (OSError, ValueError) as e:
        print("FAIL: %s: cannot load: %s" % (a.merged, e))
        print("0 passed, 1 failed")
        return 1
    mev = events_of(merged)
    if not isinstance(merged, dict) or mev is None:
        print("FAIL: %s: no traceEvents array" % a.merged)
        print("0 passed, 1 failed")
        return 1

    if a.report:
        with open(a.report) as f:
            said = (json.load(f).get("merged") or {}).get("events")
        if said != len(mev):
            res.fail("report.json says merged.events %s; the file holds %d" % (said, len(mev)))
        else:
            res.ok()

    # merged events by rank (from the pid)
    by_rank = defaultdict(list)
    for ev in mev:
        p = ev.get("pid") if isinstance(ev, dict) else None
        if not isinstance(p, int) or isinstance(p, bool) or p < 0:
            res.fail("merged event without an integer pid: %s" % canon(ev)[:200])
            continue
        if p < PIDS_PER_RANK:
            if p != 0 or ev.get("ph") != "M":
                res.fail("merged event on pid %d (no rank owns it): %s" % (p, canon(ev)[:200]))
            continue
        if p % PIDS_PER_RANK == PIDS_PER_RANK - 1:
            continue  # the rank's Flight Recorder entries (dumps beside the traces): not of its trace
        by_rank[p // PIDS_PER_RANK - 1].append(ev)

    inputs = []
    files = list_inputs(a.input)
    for path in files:
        try:
            doc = load_json(path)
        except (OSError, ValueError, UnicodeDecodeError) as e:
            res.fail("%s: cannot load: %s" % (path, e))
            continue
        evs = events_of(doc)
        if evs is None:
            continue  # not a trace (truth.json and such)
        rank = clocks_by_path.get(os.path.realpath(path))
        if rank is None:
            rank = clocks_by_path.get(os.path.basename(path))
        if rank is None and isinstance(doc, dict):
            r = (doc.get("distributedInfo") or {}).get("rank")
            rank = r if isinstance(r, int) else None
        if rank is None:
            rank = rank_from_name(path)
        if rank is None and len(files) == 1:
            rank = 0
        if rank is None:
            res.fail("%s: no rank" % path)
            continue
        base = doc.get("baseTimeNanoseconds") if isinstance(doc, dict) else None
        base = int(base) if isinstance(base, (int, Decimal)) and not isinstance(base, bool) else 0
        inputs.append((rank, path, evs, base))

    if a.clocks:
        for rank in sorted(set(r for r, _, _, _ in inputs) - set(clocks_by_rank)):
            print("note: rank %d has no clock in %s: identity" % (rank, a.clocks))

    seen_ranks = set()
    for rank, path, evs, base in sorted(inputs, key=lambda x: x[0]):
        if rank in seen_ranks:
            res.fail("rank %d appears twice among the inputs (%s)" % (rank, path))
            continue
        seen_ranks.add(rank)
        clk = clocks_by_rank.get(rank, Clock())
        slots, gpu = slots_of(evs)
        first = (rank + 1) * PIDS_PER_RANK

        exp = defaultdict(list)
        for ev in evs:
            if not isinstance(ev, dict):
                continue
            p = norm_pid(ev)
            key = (isinstance(p, str), p)
            if key not in slots:
                continue  # a pid with metadata only
            if ev.get("ph") == "M" and ev.get("name") in PROCESS_META:
                continue
            if a.gpu_only and not gpu[key]:
                continue
            ts = dur = None
            t0 = us_to_ns(ev.get("ts")) if "ts" in ev else None
            if t0 is not None:
                ts = clk.apply(t0 + base)
                d = us_to_ns(ev.get("dur")) if "dur" in ev else None
                if d is not None:
                    dur = max(clk.apply(t0 + base + max(d, 0)) - ts, 0)
                if a.window and ev.get("ph") != "M":
                    end = ts + dur if dur is not None else ts
                    if end < a.window[0] or ts > a.window[1]:
                        continue
            rest = {k: v for k, v in ev.items() if k not in REWRITTEN}
            if "id" in ev:
                rest["id"] = expected_id(ev["id"], rank)
            rest["pid"] = first + slots[key]
            if "ts" in ev and t0 is None:
                rest["ts"] = ev["ts"]
                if "dur" in ev:
                    rest["dur"] = ev["dur"]
            exp[canon(rest)].append((ts, dur, ev))

        # [memory] states of the input, for the counter tracks mergetrace
        # adds: (track name, allocated, reserved) -> corrected ts
        mem_states = defaultdict(list)
        mem_peak = {}
        for ev in evs:
            if not isinstance(ev, dict) or ev.get("name") != "[memory]" or ev.get("ph") != "i":
                continue
            ag = ev.get("args") or {}
            if "Total Allocated" not in ag or "ts" not in ev:
                continue
            track = "memory CPU" if ag.get("Device Type", 0) == 0 else "memory GPU %s" % ag.get("Device Id")
            t = clk.apply(us_to_ns(ev["ts"]) + base)
            mem_states[(track, ag["Total Allocated"], ag.get("Total Reserved"))].append(t)
            if ag["Total Allocated"] >= 0:
                mem_peak[track] = max(mem_peak.get(track, 0), ag["Total Allocated"])
        counters = defaultdict(list)

        got = defaultdict(list)
        names, sorts = defaultdict(int), {}
        for ev in by_rank.get(rank, []):
            if ev.get("ph") == "C" and str(ev.get("name", "")).startswith("memory "):
                counters[ev["name"]].append(ev)
                continue
            if ev.get("ph") == "M" and ev.get("name") in PROCESS_META:
                if ev["name"] == "process_name":
                    names[ev["pid"]] += 1
                elif ev["name"] == "process_sort_index":
                    sorts[ev["pid"]] = (ev.get("args") or {}).get("sort_index")
                continue
            rest = {k: v for k, v in ev.items() if k not in REWRITTEN}
            if "id" in ev:
                rest["id"] = ev["id"]
            rest["pid"] = ev["pid"]
            ts = dur = None
            if isinstance(ev.get("ts"), (int, Decimal)) and not isinstance(ev.get("ts"), bool):
                ts = us_to_ns(ev["ts"])
                if "dur" in ev:
                    dur = us_to_ns(ev["dur"])
            elif "ts" in ev:
                rest["ts"] = ev["ts"]
                if "dur" in ev:
                    rest["dur"] = ev["dur"]
            got[canon(rest)].append((ts, dur, ev))

        for k in set(exp) | set(got):
            matched, missing, extra = match_group(exp.get(k, []), got.get(k, []), a.tol_ns)
            res.ok(matched)
            for ts, dur, ev in missing:
                alt = [g for g in got.get(k, [])]
                hint = (" (merged has ts %s)" % ", ".join(str(g[0]) for g in alt[:3])) if alt else ""
                res.fail("%s: rank %d: missing: %s, expected ts %s dur %s%s"
                         % (path, rank, canon(ev)[:200], ts, dur, hint))
            for ts, dur, ev in extra:
                res.fail("%s: rank %d: unexpected merged event: %s" % (path, rank, canon(ev)[:200]))

        # the memory counter tracks: every point is a state of one of the
        # rank's [memory] events (time corrected), and the track keeps the
        # device's peak unless a window or --gpu-only cut it
        for track, cs in counters.items():
            for ev in cs:
                ag = ev.get("args") or {}
                ts = mem_states.get((track, ag.get("allocated"), ag.get("reserved")), [])
                t = us_to_ns(ev["ts"])
                if any(abs(t - x) <= a.tol_ns for x in ts):
                    res.ok()
                elif mem_states and any(k[0] == track for k in mem_states):
                    res.fail("%s: rank %d: counter %s is no [memory] state of the input" % (path, rank,
                                                                                           canon(ev)[:200]))
            if not a.window and track in mem_peak:
                top = max(ev["args"]["allocated"] for ev in cs)
                if top == mem_peak[track]:
                    res.ok()
                else:
                    res.fail("%s: rank %d: %s peaks at %d, the input at %d" % (path, rank, track, top,
                                                                           mem_peak[track]))

        # the new process metadata: one name and the sort index per pid
        used = sorted(set(first + s for k, s in slots.items() if not a.gpu_only or gpu[k]))
        for p in used:
            if names.get(p) != 1:
                res.fail("rank %d: pid %d has %d process_name events" % (rank, p, names.get(p, 0)))
            elif sorts.get(p) != p:
                res.fail("rank %d: pid %d has process_sort_index %r" % (rank, p, sorts.get(p)))
            else:
                res.ok()
        for p in set(names) - set(used):
            res.fail("rank %d: process_name for pid %d, which has no events" % (rank, p))

    for r in sorted(set(by_rank) - seen_ranks):
        res.fail("merged events of rank %d, which is not among the inputs" % r)

    od = merged.get("otherData")
    if merged.get("displayTimeUnit") not in ("ms", "ns"):
        res.fail("displayTimeUnit is %r" % merged.get("displayTimeUnit"))
    elif not isinstance(od, dict) or not str(od.get("generator", "")).startswith("mergetrace "):
        res.fail("otherData.generator missing: %r" % od)
    elif not isinstance(od.get("ranks"), list) or not seen_ranks <= set(od["ranks"]):
        res.fail("otherData.ranks %r does not list every input rank %s" % (od.get("ranks"), sorted(seen_ranks)))
    else:
        res.ok()

    if not inputs:
        res.fail("no input trace")
    print("%d passed, %d failed" % (res.passed, res.failed))
    return 1 if res.failed else 0


if __name__ == "__main__":
    sys.exit(main())
