#!/usr/bin/env python3
"""Check a directory written by scripts/gen_traces.py against its truth.json,
recomputing everything from the rank files with Python's json module (no
code shared with the generator).  Usage: check_truth.py DIR [DIR...]
Exit 0 when every check passes, 1 otherwise."""

import gzip
import json
import re
import sys
from bisect import bisect_left, bisect_right
from decimal import Decimal

BIL = 10 ** 9


class Fail(Exception):
    pass


def no_constants(name):
    raise ValueError("non-JSON constant %s" % name)


def no_dup_pairs(pairs):
    d = {}
    for k, v in pairs:
        if k in d:
            raise ValueError("duplicate key %r" % k)
        d[k] = v
    return d


def read_text(path):
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return raw.decode("ascii")


def merge(iv):
    iv = sorted(iv)
    out = []
    for s, e in iv:
        if out and s <= out[-1][1]:
            if e > out[-1][1]:
                out[-1][1] = e
        else:
            out.append([s, e])
    return out


def measure(m):
    return sum(e - s for s, e in m)


def intersect(a, b):
    i = j = tot = 0
    while i < len(a) and j < len(b):
        lo = max(a[i][0], b[j][0])
        hi = min(a[i][1], b[j][1])
        if hi > lo:
            tot += hi - lo
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return tot


class Clock:
    def __init__(self, off, dppb, t0):
        self.off, self.d, self.t0 = off, dppb, t0

    def local(self, t):
        return t + self.off + (self.d * (t - self.t0) + BIL // 2) // BIL

    def true(self, loc):
        t = loc - self.off
        for _ in range(4):
            t = loc - self.off - (self.d * (t - self.t0) + BIL // 2) // BIL
        return t


class Checker:
    def __init__(self, d):
        self.d = d
        self.errors = []
        self.notes = []

    def expect(self, cond, msg):
        if not cond:
            self.errors.append(msg)

    def run(self):
        d = self.d
        with open(d + "/truth.json") as f:
            truth = json.load(f)
        self.truth = truth
        new = truth["format"] == "new"
        self.new = new
        t0 = truth["true_t0_ns"]
        self.ranks = {}
        for rt in truth["ranks"]:
            self.ranks[rt["rank"]] = self.check_rank(rt, Clock(rt["clock_offset_ns"], rt["clock_drift_ppb"], t0))
        self.check_collectives()
        if "pipeline" in truth:
            self.check_pipeline()
        return self.errors

    # ---------------------------------------------------------------- per rank
    def check_rank(self, rt, clk):
        r = rt["rank"]
        path = self.d + "/" + rt["file"]
        txt = read_text(path)
        try:
            doc = json.loads(txt, parse_float=Decimal, parse_constant=no_constants,
                             object_pairs_hook=no_dup_pairs)
        except ValueError as e:
            raise Fail("%s: not strict JSON: %s" % (path, e))
        evs = doc["traceEvents"]
        self.expect(len(txt) == rt["bytes"], "rank %d: %d bytes, truth %d" % (r, len(txt), rt["bytes"]))
        di = doc.get("distributedInfo", {})
        self.expect(di.get("rank") == r and di.get("world_size") == self.truth["world_size"],
                    "rank %d: distributedInfo %r" % (r, di))
        # timestamp syntax, on the raw text
        pat = re.compile(r'"(ts|dur)": ([^,}\s]+)')
        good = re.compile(r"^\d+\.\d{3}$" if self.new else r"^\d+$")
        bad = [m.group(0) for m in pat.finditer(txt) if not good.match(m.group(2))]
        self.expect(not bad, "rank %d: %d ts/dur values with the wrong form, e.g. %s" % (r, len(bad), bad[:3]))
        if self.new:
            base = doc["baseTimeNanoseconds"]
            self.expect(base == rt["base_time_ns"] and base % 7889238000000000 == 0,
                        "rank %d: baseTimeNanoseconds %r" % (r, base))
            self.expect("Comms Id" in txt and "Process Group Name" in txt, "rank %d: no metadata" % r)
        else:
            base = None
            self.expect("baseTimeNanoseconds" not in doc and "Process Group Name" not in txt
                        and "Comms Id" not in txt and "cuda_sync" not in txt,
                        "rank %d: new-format things in an old file" % r)

        def ns(v):
            if base is not None:
                q = v * 1000
                assert q == int(q)
                return base + int(q)
            return int(v) * 1000

        # counts
        ph, cat = {}, {}
        for e in evs:
            ph[e["ph"]] = ph.get(e["ph"], 0) + 1
            c = e.get("cat", "None")
            cat[c] = cat.get(c, 0) + 1
        tc = rt["counts"]
        self.expect(len(evs) == tc["events"], "rank %d: %d events, truth %d" % (r, len(evs), tc["events"]))
        self.expect(ph == {k: v for k, v in tc["ph"].items() if v}, "rank %d: ph %r vs %r" % (r, ph, tc["ph"]))
        self.expect(cat == tc["cat"], "rank %d: cat %r vs %r" % (r, cat, tc["cat"]))
        self.expect(evs[-1].get("name") == "Record Window End", "rank %d: last event %r" % (r, evs[-1]))

        # GPU activities and launches
        gpu = []          # (cls, s, e, ev)
        launch = {}       # correlation -> (pid, tid, ts)
        flows_s, flows_f = {}, {}
        n_sync = 0
        for e in evs:
            c = e.get("cat")
            if c in ("kernel", "gpu_memcpy", "gpu_memset"):
                s = ns(e["ts"])
                cls = "mem" if c != "kernel" else ("comm" if e["name"].startswith("nccl") else "compute")
                gpu.append((cls, s, s + ns(e["dur"]) - (base or 0), e))
            elif c in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {}):
                launch[e["args"]["correlation"]] = (e["pid"], e["tid"], ns(e["ts"]))
            elif c == "cuda_sync":
                n_sync += 1
            elif c == "ac2g":
                (flows_s if e["ph"] == "s" else flows_f)[e["id"]] = e
        for cls, s, en, e in gpu:
            corr = e["args"]["correlation"]
            self.expect(corr in launch, "rank %d: GPU activity without launch, corr %s" % (r, corr))
            self.expect(corr in flows_s and corr in flows_f and flows_f[corr]["ts"] == e["ts"]
                        and flows_f[corr].get("bp") == "e", "rank %d: flow pair for corr %s" % (r, corr))
            if corr in launch:
                self.expect(launch[corr][2] < s, "rank %d: kernel %s starts before its launch" % (r, corr))
        self.expect(len(flows_s) == len(flows_f) == len(gpu), "rank %d: flows %d/%d for %d activities"
                    % (r, len(flows_s), len(flows_f), len(gpu)))
        comp = merge([(s, e) for c, s, e, _ in gpu if c == "compute"])
        comm = merge([(s, e) for c, s, e, _ in gpu if c == "comm"])
        mem = merge([(s, e) for c, s, e, _ in gpu if c == "mem"])
        cc = merge([tuple(x) for x in comp + comm])
        allb = merge([tuple(x) for x in cc + mem])
        span = max(e for _, _, e, _ in gpu) - min(s for _, s, _, _ in gpu)
        ov = intersect(comp, comm)
        got = {"kernels_compute": sum(1 for g in gpu if g[0] == "compute"),
               "kernels_comm": sum(1 for g in gpu if g[0] == "comm"),
               "memcpy": sum(1 for g in gpu if g[3]["cat"] == "gpu_memcpy"),
               "memset": sum(1 for g in gpu if g[3]["cat"] == "gpu_memset"),
               "sync": n_sync, "span_ns": span, "compute_ns": measure(comp),
               "comm_ns": measure(comm) - ov, "comm_total_ns": measure(comm), "overlap_ns": ov,
               "memory_ns": measure(mem) - intersect(mem, cc), "idle_ns": span - measure(allb)}
        for k, v in got.items():
            self.expect(rt["gpu"][k] == v, "rank %d: gpu.%s = %r, recomputed %r" % (r, k, rt["gpu"][k], v))
        self.expect(rt["collective_kernels"] == got["kernels_comm"], "rank %d: collective_kernels" % r)

        # projection
        per_thread = {}
        for cls, s, en, e in gpu:
            p, t, lts = launch[e["args"]["correlation"]]
            per_thread.setdefault((p, t), []).append((lts, s, en))
            per_thread.setdefault("all", []).append((lts, s, en))
        idx = {}
        for k, v in per_thread.items():
            v.sort()
            idx[k] = ([x[0] for x in v], v)
        proj = {}
        for e in evs:
            if e.get("cat") != "user_annotation":
                continue
            key = "ProfilerStep#*" if e["name"].startswith("ProfilerStep#") else e["name"]
            a0 = ns(e["ts"])
            a1 = a0 + ns(e["dur"]) - (base or 0)
            p = proj.setdefault(key, [0, 0, 0, 0])
            p[0] += 1
            p[1] += a1 - a0
            for slot, k in ((2, (e["pid"], e["tid"])), (3, "all")):
                ts, v = idx.get(k, ([], []))
                sel = v[bisect_left(ts, a0):bisect_right(ts, a1)]
                p[slot] += measure(merge([(x[1], x[2]) for x in sel]))
        want = rt["projection"]
        self.expect(set(proj) == set(want), "rank %d: projection keys %s vs %s" % (r, sorted(proj), sorted(want)))
        for k, p in proj.items():
            w = want.get(k, {})
            got = {"count": p[0], "cpu_ns": p[1], "gpu_ns": p[2], "gpu_ns_any_thread": p[3]}
            self.expect(got == w, "rank %d: projection[%s] %r vs truth %r" % (r, k, got, w))

        # for the cross-rank checks
        nccl = []
        for cls, s, en, e in gpu:
            if cls == "comm":
                nccl.append((s, en, e))
        steps = [e for e in evs if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#")]
        return {"clk": clk, "ns": ns, "base": base, "nccl": nccl, "gpu": gpu, "launch": launch,
                "steps": steps}

    # ---------------------------------------------------------------- collectives
    def check_collectives(self):
        truth = self.truth
        colls = truth.get("collectives")
        if colls is None:
            self.notes.append("no collectives in truth (--no-collective-truth)")
            return
        jit = truth["end_jitter_ns"]
        tol = 2 if self.new else 2003   # old files floor to whole us (start and duration), +-1 ns inverse
        by_id = {}
        for i, c in enumerate(colls):
            self.expect(c["comms_id"] not in by_id, "duplicate comms_id %d" % c["comms_id"])
            by_id[c["comms_id"]] = i
            ends = list(c["true_end_ns"].values())
            self.expect(max(ends) - min(ends) <= jit, "collective %d: truth ends spread %d > jitter"
                        % (i, max(ends) - min(ends)))
        self.big_ids = sum(1 for c in colls if c["comms_id"] >= 1 << 63)
        mapped = {}   # (coll index, rank) -> (true start, true end)
        for r, info in self.ranks.items():
            clk = info["clk"]
            mine = {}
            for i, c in enumerate(colls):
                if str(r) in c["true_end_ns"]:
                    mine.setdefault("p2p" if c["kind"] == "sendrecv" else "coll", []).append(i)
            self.expect(sum(len(v) for v in mine.values()) == len(info["nccl"]),
                        "rank %d: %d NCCL kernels, truth lists %d participations"
                        % (r, len(info["nccl"]), sum(len(v) for v in mine.values())))
            if self.new:
                for s, e, ev in info["nccl"]:
                    a = ev["args"]
                    i = by_id.get(a.get("Comms Id"))
                    if i is None:
                        self.expect(False, "rank %d: kernel with unknown Comms Id %r" % (r, a.get("Comms Id")))
                        continue
                    c = colls[i]
                    self.expect(a["Seq"] == c["seq"] and a["Process Group Name"] == c["pg"],
                                "rank %d: Seq/pg mismatch for comms id %d" % (r, c["comms_id"]))
                    mapped[(i, r)] = (clk.true(s), clk.true(e))
            else:
                for kind, ids in mine.items():
                    ks = sorted((x for x in info["nccl"] if ("SendRecv" in x[2]["name"]) == (kind == "p2p")),
                                key=lambda x: (x[0], x[1]))
                    ids = sorted(ids, key=lambda i: colls[i]["true_start_ns"][str(r)])
                    self.expect(len(ks) == len(ids), "rank %d: %s kernels %d vs truth %d" % (r, kind, len(ks), len(ids)))
                    for (s, e, ev), i in zip(ks, ids):
                        mapped[(i, r)] = (clk.true(s), clk.true(e))
        worst = 0
        for i, c in enumerate(colls):
            ends = []
            for rs, te in c["true_end_ns"].items():
                m = mapped.get((i, int(rs)))
                if m is None:
                    continue
                ends.append(m[1])
                worst = max(worst, abs(m[1] - te))
                self.expect(abs(m[1] - te) <= tol and abs(m[0] - c["true_start_ns"][rs]) <= tol,
                            "collective %d rank %s: file maps to start %d end %d, truth %d %d"
                            % (i, rs, m[0], m[1], c["true_start_ns"][rs], te))
            if ends:
                self.expect(max(ends) - min(ends) <= jit + 2 * tol,
                            "collective %d: ends from files spread %d ns" % (i, max(ends) - min(ends)))
        # waiting per rank, from the start times found in the files
        wait = {r: [0, 0, 0] for r in self.ranks}
        for i, c in enumerate(colls):
            st = {int(rs): mapped[(i, int(rs))][0] for rs in c["true_start_ns"] if (i, int(rs)) in mapped}
            if len(st) != len(c["true_start_ns"]):
                continue
            last = max(st.values())
            for r, v in st.items():
                wait[r][0] += 1
                wait[r][1] += v == last
                wait[r][2] += last - v
        for rt in truth["ranks"]:
            w = rt["collective_wait"]
            g = wait[rt["rank"]]
            self.expect(w["count"] == g[0] and abs(w["wait_ns"] - g[2]) <= 2 * tol * max(1, g[0]),
                        "rank %d: collective_wait %r, from files %r" % (rt["rank"], w, g))
            if self.new:
                self.expect(w["arrived_last"] == g[1], "rank %d: arrived_last %d, from files %d"
                            % (rt["rank"], w["arrived_last"], g[1]))
        self.notes.append("%d collectives, %d with Comms Id > 2^63, worst end error %d ns"
                          % (len(colls), self.big_ids, worst))

    # ---------------------------------------------------------------- pipeline
    def check_pipeline(self):
        p = self.truth["pipeline"]
        pcs = p["per_chunk"]
        self.expect(len(pcs) == p["chunks"], "pipeline: per_chunk length")
        for k, c in enumerate(pcs):
            self.expect(c["k"] == k, "chunk %d: k" % k)
            if k == 0:
                self.expect(c["period_ns"] is None, "chunk 0 has a period")
                continue
            per = c["emit_ns"] - pcs[k - 1]["emit_ns"]
            hid = sum(c["stage_ns"]) - per
            den = sum(c["stage_ns"]) - max(c["stage_ns"])
            sc = min(1.0, max(0.0, hid / den)) if den > 0 else 0.0
            self.expect(c["period_ns"] == per and c["hidden_ns"] == hid and abs(c["overlap_score"] - sc) < 1e-12,
                        "chunk %d: period/hidden/score do not follow the definitions" % k)
        after = pcs[p["warmup"]:]
        hid = sum(c["hidden_ns"] for c in after)
        den = sum(sum(c["stage_ns"]) - max(c["stage_ns"]) for c in after)
        self.expect(abs(p["overlap_score"] - min(1.0, max(0.0, hid / den))) < 1e-12, "pipeline overlap_score")
        per = sorted(c["period_ns"] for c in after)
        self.expect(p["period_ns"]["p50"] == per[(len(per) - 1) // 2], "period p50")
        self.expect(abs(p["period_ns"]["mean"] - sum(per) / len(per)) <= 0.5, "period mean")
        # stage_ns and emit_ns again, from the leaders' files
        tol1 = 2 if self.new else 2003
        worst = 0
        for s, members in enumerate(p["stages"]):
            info = self.ranks[members[0]]
            clk = info["clk"]
            ns = info["ns"]
            steps = {int(e["name"].split("#")[1]): e for e in info["steps"]}
            for c in pcs:
                st = steps[c["chunk_step"]]
                a0 = ns(st["ts"])
                a1 = a0 + ns(st["dur"]) - (info["base"] or 0)
                iv = []
                for cls, gs, ge, ev in info["gpu"]:
                    if "SendRecv" in ev["name"]:
                        continue
                    lp, lt, lts = info["launch"][ev["args"]["correlation"]]
                    if lt == st["tid"] and a0 <= lts <= a1:
                        iv.append((clk.true(gs), clk.true(ge)))
                m = merge(iv)
                got = measure(m)
                err = abs(got - c["stage_ns"][s])
                worst = max(worst, err)
                self.expect(err <= tol1 * 2 * len(iv), "chunk %d stage %d: stage_ns %d from file, truth %d"
                            % (c["k"], s, got, c["stage_ns"][s]))
                if s == len(p["stages"]) - 1:
                    self.expect(abs(m[-1][1] - c["emit_ns"]) <= tol1, "chunk %d: emit_ns from file %d, truth %d"
                                % (c["k"], m[-1][1], c["emit_ns"]))
        self.notes.append("pipeline: %d chunks, overlap_score %.3f, worst stage_ns error %d ns"
                          % (len(pcs), p["overlap_score"], worst))


def main(argv):
    if len(argv) < 2:
        sys.stderr.write("usage: check_truth.py DIR [DIR...]\n")
        return 2
    bad = 0
    for d in argv[1:]:
        ch = Checker(d.rstrip("/"))
        try:
            errs = ch.run()
        except Fail as e:
            errs = [str(e)]
        if errs:
            bad += 1
            print("FAIL %s: %d problems" % (d, len(errs)))
            for e in errs[:30]:
                print("  " + e)
        else:
            print("ok   %s: %d ranks; %s" % (d, len(ch.ranks), "; ".join(ch.notes)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
