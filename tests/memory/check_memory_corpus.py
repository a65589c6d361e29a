#!/usr/bin/env python3
"""mergetrace's memory section on the three corpus traces that carry
[memory] events, checked against numbers this script computes itself from
the JSON (Python's json with exact decimals, never mergetrace's loader):

* per device (Device Type, Device Id): the events, the peak of "Total
  Allocated" and its timestamp (the first event at the peak in (ts, file
  order), absolute us: ts + baseTimeNanoseconds), the reserved total and
  Bytes of that event; peak of "Total Reserved"; for the 2021 tb_plugin
  sample, which has no totals, the running sum of "Bytes" in the same order;
* per ProfilerStep#N range: allocations and frees (Bytes > 0 / < 0, ts in
  [start, end)) and allocated after the last event at or before the end;
* the innermost cpu_op on the peak event's thread holding its ts (latest
  start, then shortest; 2021 traces write tids as strings: "25738" is
  thread 25738);
* the summary's top rank and peak.

One trace per run, so the aligned time is the trace's own.
Usage: check_memory_corpus.py MERGETRACE CORPUS_DIR WORK_DIR   (exit 77: no corpus)"""
import gzip
import json
import os
import shutil
import subprocess
import sys
from decimal import Decimal

FILES = [
    "AMD-AGI__TraceLens/tests/traces/mi300/ddp_resnet18_no_pool/train_resnet18.json.gz",
    "facebookresearch__HolisticTraceAnalysis/tests/data/df_index_resolver/df_index_resolver.json.gz",
    "pytorch__kineto/tb_plugin/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz",
]

failures = []


def check(what, got, want):
    if got != want:
        failures.append("%s: mergetrace %r, expected %r" % (what, got, want))


def ns(v):
    """A ts in us (exact decimal or int) as integer ns."""
    return int(Decimal(v) * 1000)


def us_text(x):
    """integer ns as the us number report.json prints (3 decimals)."""
    return Decimal(x) / 1000


def expected(path):
    with gzip.open(path, "rb") as f:
        d = json.loads(f.read(), parse_float=Decimal)
    ev = d["traceEvents"] if isinstance(d, dict) else d
    base = int(d.get("baseTimeNanoseconds", 0)) if isinstance(d, dict) else 0
    mems = [(ns(e["ts"]) + base, i, e) for i, e in enumerate(ev)
            if e.get("ph") == "i" and e.get("name") == "[memory]"]
    mems.sort(key=lambda m: (m[0], m[1]))
    steps = sorted((ns(e["ts"]) + base, ns(e["ts"]) + base + ns(e["dur"]), int(e["name"][13:]))
                   for e in ev if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#")
                   and e.get("cat") in ("user_annotation", None))
    devs = {}
    for t, i, e in mems:
        a = e["args"]
        devs.setdefault((a["Device Type"], a["Device Id"]), []).append((t, a, e))
    out = {}
    for key, lst in devs.items():
        has_tot = any("Total Allocated" in a for _, a, _ in lst)
        states = []
        run = 0
        for t, a, _ in lst:
            if has_tot:
                alloc = a["Total Allocated"]
            else:
                run += a["Bytes"]
                alloc = run
            states.append((t, alloc, a.get("Total Reserved", -1), a["Bytes"]))
        pk = max(range(len(states)), key=lambda k: (states[k][1], -k))
        pe = lst[pk][2]
        ops = [(ns(e["ts"]) + base, -ns(e["dur"]), e["name"]) for e in ev
               if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "Operator") and str(e.get("pid")) == str(pe["pid"])
               and str(e.get("tid")) == str(pe["tid"]) and ns(e["ts"]) + base <= states[pk][0] <= ns(e["ts"]) + base + ns(e["dur"])]
        r = {"events": len(states), "peak_allocated": states[pk][1], "peak_ts_ns": states[pk][0],
             "reserved_at_peak": states[pk][2] if has_tot else None, "peak_bytes": states[pk][3],
             "reconstructed": not has_tot, "end_allocated": states[-1][1], "op": max(ops)[2] if ops else None}
        if has_tot:
            pr = max(range(len(states)), key=lambda k: (states[k][2], -k))
            r["peak_reserved"] = states[pr][2]
            r["peak_reserved_ts_ns"] = states[pr][0]
        st = []
        for s0, s1, num in steps:
            inside = [s for s in states if s0 <= s[0] < s1]
            upto = [s for s in states if s[0] <= s1]
            st.append({"step": num, "allocs": sum(1 for s in inside if s[3] > 0),
                       "frees": sum(1 for s in inside if s[3] < 0),
                       "allocated_end": upto[-1][1] if upto else None})
        r["steps"] = st
        out[key] = r
    return out


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 64
    os.environ["ASAN_OPTIONS"] = "detect_leaks=0"  # Open MPI's own allocations are not ours
    exe, corpus, work = sys.argv[1:]
    paths = [os.path.join(corpus, f) for f in FILES]
    if not all(os.path.exists(p) for p in paths):
        print("corpus not found: skipped", file=sys.stderr)
        return 77
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    for n, path in enumerate(paths):
        out = os.path.join(work, "out%d" % n)
        p = subprocess.run([exe, "--no-merge", "--no-html", "-o", out, path], capture_output=True, text=True)
        name = os.path.basename(path)
        if p.returncode != 0:
            failures.append("%s: exit %d: %s" % (name, p.returncode, p.stderr.strip()))
            continue
        if "\nmemory: peak allocated" not in p.stdout:
            failures.append("%s: no memory lines in the terminal summary" % name)
        with open(os.path.join(out, "report.json")) as f:
            rep = json.load(f, parse_float=Decimal)
        want = expected(path)
        got = {}
        for rk in rep["memory"]["ranks"]:
            for d in rk["devices"]:
                got[({"cpu": 0, "gpu": 1}[d["device_type"]], d["device"])] = d
            check("%s issues" % name, rk["issues"], {})
        check("%s devices" % name, sorted(got), sorted(want))
        for key, w in want.items():
            g = got.get(key)
            if g is None:
                continue
            tag = "%s device %s" % (name, key)
            check(tag + " events", g["events"], w["events"])
            check(tag + " reconstructed", g["reconstructed"], w["reconstructed"])
            check(tag + " peak_allocated", g["peak_allocated"], w["peak_allocated"])
            check(tag + " peak_allocated_us", g["peak_allocated_us"], us_text(w["peak_ts_ns"]))
            check(tag + " peak_allocation_bytes", g["peak_allocation_bytes"], w["peak_bytes"])
            check(tag + " reserved_at_peak", g["reserved_at_peak"], w["reserved_at_peak"])
            check(tag + " end_allocated", g["end_allocated"], w["end_allocated"])
            check(tag + " peak_op", g["peak_op"], w["op"])
            if "peak_reserved" in w:
                check(tag + " peak_reserved", g["peak_reserved"], w["peak_reserved"])
                check(tag + " peak_reserved_us", g["peak_reserved_us"], us_text(w["peak_reserved_ts_ns"]))
            gs = [{"step": s["step"], "allocs": s["allocs"], "frees": s["frees"],
                   "allocated_end": s["allocated_end"]} for s in g["steps"]]
            check(tag + " steps", gs, w["steps"])
            print("%s: peak %d B at %s us, %d events, %d steps" % (tag, g["peak_allocated"], g["peak_allocated_us"],
                                                                  g["events"], len(gs)))
        tops = max(((d["peak_allocated"], -rk["rank"]) for rk in rep["memory"]["ranks"] for d in rk["devices"]
                    if (d["device_type"] == "gpu") == (rep["memory"]["summary"]["basis"] == "gpu")))
        check(name + " summary max_peak", rep["memory"]["summary"]["max_peak"], tops[0])
    for f in failures:
        print("FAIL " + f, file=sys.stderr)
    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
