#!/usr/bin/env python3
"""ctest gen_merged: a merged trace re-analysed gives the per-rank run's numbers.

For two generated jobs (4 data-parallel ranks with a straggler and clocks
that drift up to 50 ppm; an 8-rank DP 2 x PP 4 pipeline with a slow stage),
mergetrace runs on the per-rank traces (run A, which writes
merged.json.gz), then on that merged.json.gz alone (run B: read back by
rank, no clock fit), and under mpirun -n 2 (run C, when --mpiexec is given:
each process reads its share of the ranks from the same file).

What is the same and why it may differ: the merged trace holds every event
at its corrected time (the clock fit of run A applied), so run B's cross-rank
numbers are run A's exactly, except where run A measured a duration on a
rank's own clock: a rank with a fitted drift d (ppm) has its corrected
durations longer by d * 1e-6 of themselves. So every number of steps,
stragglers, wait, collectives, pipeline, temporal, overlap, idle and kernels
must agree within 2 * D of itself (D: run A's largest fitted |drift|, in
1e-6; twice, for ratios of two ranks' durations) plus one unit of the last
printed digit (0.01: percentages have 2 decimals; us 3); imbalance_us
(time on the path - the ranks' mean, a difference of sums) within 2 * D
of the critical path's length. The test prints the largest difference it
saw against its tolerance. Not
compared: pipeline latency_raw_us / the raw clock fields (on "the ranks'
own clocks", which for a merged trace are the corrected clock).
Exactly equal: the step count, the suspects (whole job, clock-free, per
step), the blamed stage, the critical path's ranks, the ideal what-if's S
values (4 decimals) on the pipeline job.
Run B against the generator's own truth (truth.json, written beside the
job), with the functions and tolerances of the checks that hold the
per-rank runs to it: steps (run_step_checks.check_steps: step time p50/p99
within 0.5 %, the replay, the critical path by kind within 0.1 % of its
length and its communication share within 1 point, root causes: the
waiting within 1 % on the data-parallel job, the straggler's forward
kernels and annotation first, the slowest stage's rank first on the
pipeline), the straggler rank (run_gen_checks.compare_straggler), the
pipeline (run_gen_checks.compare_pipeline: stages, chunks, stage busy,
period, latency and OverlapScore per chunk and overall, the critical
stage; the latency on the input's own clocks too, since they are the
corrected ones) and the ideal what-if's blamed stage (the stage with the largest
mean busy time, as gen_whatif_stages).
Run B also says that no clock was fitted (clock.fit false with a reason,
rank_source "merged trace") and writes no merged trace; run C's report
equals run B's in those sections.
Standard library only. Exit 0 pass, 1 fail."""

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_gen_checks import compare_pipeline, compare_straggler  # noqa: E402
from run_step_checks import check_steps  # noqa: E402

JOBS = {
    "dp-straggler": ["--kind", "dp", "--ranks", "4", "--steps", "8", "--seed", "21", "--straggler", "2",
                     "--straggler-delay-us", "400"],
    "pp-slow1": ["--kind", "pp", "--ranks", "8", "--pp-stages", "4", "--stage-us", "3000,5000,3000", "--seed", "3"],
}
SECTIONS = ["steps", "stragglers", "wait", "collectives", "pipeline", "temporal", "overlap", "idle", "kernels"]
ABS = 0.01
RAW = ("latency_raw_us", "raw")


def walk(x, y, path, out):
    if isinstance(x, dict) and isinstance(y, dict):
        for k in sorted(set(x) | set(y)):
            if k in x and k in y:
                walk(x[k], y[k], path + "." + k, out)
            else:
                out.append((path + "." + k, "only in one report"))
    elif isinstance(x, list) and isinstance(y, list):
        if len(x) != len(y):
            out.append((path, "lengths %d and %d" % (len(x), len(y))))
        for i, (u, v) in enumerate(zip(x, y)):
            walk(u, v, "%s[%d]" % (path, i), out)
    elif isinstance(x, (int, float)) and isinstance(y, (int, float)) and not isinstance(x, bool) \
            and not isinstance(y, bool):
        out.append((path, x, y))
    elif x != y:
        out.append((path, "%r vs %r" % (x, y)))


def members(path):
    """Gzip members in a file (the merged trace is written as one per piece)."""
    data, n = open(path, "rb").read(), 0
    while data:
        z = zlib.decompressobj(31)
        z.decompress(data)
        data, n = z.unused_data, n + 1
    return n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gen", required=True)
    ap.add_argument("--mergetrace", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--mpiexec", default="")
    a = ap.parse_args()
    errors = []

    def check(ok, what):
        print(("ok   " if ok else "FAIL ") + what)
        if not ok:
            errors.append(what)

    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0")  # mpirun: Open MPI's own allocations are not ours
    if os.geteuid() == 0:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    for name, args in JOBS.items():
        d = os.path.join(a.out, name)
        oa, ob, oc = d + "-A", d + "-B", d + "-C"
        for p in (d, oa, ob, oc):
            shutil.rmtree(p, ignore_errors=True)
        subprocess.run([sys.executable, a.gen, "--out", d, "--quiet"] + args, check=True)
        subprocess.run([a.mergetrace, d, "-o", oa, "-q"], check=True)
        merged = os.path.join(oa, "merged.json.gz")
        subprocess.run([a.mergetrace, merged, "-o", ob, "-q"], check=True)
        ra = json.load(open(os.path.join(oa, "report.json")))
        rb = json.load(open(os.path.join(ob, "report.json")))
        drift = max(abs(c["drift_ppm"]) for c in ra["clock"]["ranks"])
        rel = 2 * drift * 1e-6
        length = ra["steps"]["critical_path"]["length_us"]
        print("%s: %d ranks; largest fitted drift in run A %.1f ppm" % (name, len(ra["inputs"]), drift))
        # run B says how its clocks came to be
        check(rb["clock"].get("fit") is False and "merged trace" in rb["clock"].get("reason", ""),
              "%s B: clock.fit false with the reason" % name)
        check(all(i["rank_source"] == "merged trace" for i in rb["inputs"]) and
              [i["rank"] for i in rb["inputs"]] == [i["rank"] for i in ra["inputs"]],
              "%s B: the same ranks, from the merged trace's pids" % name)
        check(not os.path.exists(os.path.join(ob, "merged.json.gz")) and not rb.get("merged"),
              "%s B: no merged trace written" % name)
        # exactly equal
        # (run A also lists truth.json as skipped: it is no trace)
        wa = sorted((w["code"], w.get("rank")) for w in ra["warnings"] if w["code"] != "skipped_file")
        wb = sorted((w["code"], w.get("rank")) for w in rb["warnings"])
        check(wa == wb, "%s: the same warnings %s (e.g. no [memory] device without GPU work: the pids are back)" %
              (name, wb))
        check(rb["steps"]["used"] == ra["steps"]["used"] and len(rb["steps"]["per_step"]) == len(ra["steps"]["per_step"]),
              "%s: steps used %d = %d" % (name, rb["steps"]["used"], ra["steps"]["used"]))
        sa, sb = ra["stragglers"], rb["stragglers"]
        check(sa["suspects"] == sb["suspects"] and sa["suspects_clock_free"] == sb["suspects_clock_free"] and
              [s["suspects"] for s in sa["by_step"]] == [s["suspects"] for s in sb["by_step"]],
              "%s: straggler suspects %s, per step the same" % (name, sb["suspects"]))
        check(sa.get("evidence") == sb.get("evidence"), "%s: straggler evidence text the same" % name)
        ia, ib = ra["steps"].get("ideal", {}), rb["steps"].get("ideal", {})
        check(ia.get("s") == ib.get("s") and ia.get("blamed_stage") == ib.get("blamed_stage") and
              ia.get("by_stage") == ib.get("by_stage"),
              "%s: ideal S %s, blamed stage %s, S per stage the same" % (name, ib.get("s"), ib.get("blamed_stage")))
        if "pipeline" in ra:
            check("pipeline" in rb, "%s: pipeline section in both" % name)
        # run B against the generator's truth, not only against run A
        truth = json.load(open(os.path.join(d, "truth.json")))
        terr = []
        check_steps(name + " B", truth, rb["steps"], terr)
        compare_straggler(name + " B", rb, truth, terr)
        compare_pipeline(name + " B", rb, truth, terr, corrected_input=True)
        if truth.get("pipeline"):
            busy = [s["mean"] for s in truth["pipeline"]["stage_busy_ns"]]
            if ib.get("blamed_stage") != busy.index(max(busy)):
                terr.append("%s B: ideal what-if blames stage %s, the generator's slowest stage is %d (busy %s ns)" %
                            (name, ib.get("blamed_stage"), busy.index(max(busy)), busy))
        if truth.get("pipeline"):
            gp, tp = rb["pipeline"], truth["pipeline"]
            print("     %s B: period p50 %.3f us (truth %.3f), stage busy means %s us (truth %s), critical stage %s, "
                  "blamed stage %s" % (name, gp["period_us"]["p50"], tp["period_ns"]["p50"] / 1000.0,
                                       [b["mean"] for b in gp["stage_busy_us"]],
                                       [round(b["mean"] / 1000.0, 3) for b in tp["stage_busy_ns"]],
                                       gp["critical_stage"], ib.get("blamed_stage")))
        for e in terr:
            check(False, e)
        check(not terr, "%s B: steps, critical path, root causes, straggler%s against truth.json" %
              (name, ", pipeline, blamed stage" if truth.get("pipeline") else ""))
        # within the drift
        worst, n = None, 0
        for sec in SECTIONS:
            if sec not in ra and sec not in rb:
                continue
            out = []
            walk(ra.get(sec), rb.get(sec), sec, out)
            for o in out:
                if any(r in o[0] for r in RAW):
                    continue
                if len(o) == 2:
                    check(False, "%s: %s: %s" % (name, o[0], o[1]))
                    continue
                n += 1
                diff = abs(o[1] - o[2])
                scale = length if "imbalance_us" in o[0] else max(abs(o[1]), abs(o[2]))
                lim = rel * scale + ABS
                if worst is None or diff / lim > worst[3]:
                    worst = (o[0], o[1], o[2], diff / lim)
                if diff > lim:
                    check(False, "%s: %s: %s (per-rank) vs %s (merged)" % (name, o[0], o[1], o[2]))
        print("     %s: %d numbers compared; largest difference %s (%.0f %% of its tolerance)" %
              (name, n, "%s %s vs %s" % worst[:3] if worst else "none", 100 * worst[3] if worst else 0))
        # -n 2: each process reads its share of the ranks
        if a.mpiexec:
            subprocess.run([a.mpiexec, "--oversubscribe", "-n", "2", a.mergetrace, merged, "-o", oc, "-q"],
                           check=True, env=env, timeout=120)
            rc = json.load(open(os.path.join(oc, "report.json")))
            same = all(rc.get(s) == rb.get(s) for s in SECTIONS)
            check(same, "%s C (mpirun -n 2): the same report sections as B" % name)
            # the merged trace written by 2 processes (gzip members per piece) read back
            od, oe = d + "-D", d + "-E"
            for p in (od, oe):
                shutil.rmtree(p, ignore_errors=True)
            subprocess.run([a.mpiexec, "--oversubscribe", "-n", "2", a.mergetrace, d, "-o", od, "-q"],
                           check=True, env=env, timeout=120)
            subprocess.run([a.mergetrace, os.path.join(od, "merged.json.gz"), "-o", oe, "-q"], check=True)
            re_ = json.load(open(os.path.join(oe, "report.json")))
            check(all(re_.get(s) == rb.get(s) for s in SECTIONS),
                  "%s: the merged trace written by mpirun -n 2 (%d gzip members) reads back as B" %
                  (name, members(os.path.join(od, "merged.json.gz"))))
    # a merged trace of ranks 0-1 named beside the traces of ranks 2-3: read
    # back by rank and aligned with the others (not every input is merged),
    # and merged again (the merge's second pass reads the parts' metadata)
    d = os.path.join(a.out, "dp-straggler")
    o1, o2 = d + "-half", d + "-mixed"
    for p in (o1, o2):
        shutil.rmtree(p, ignore_errors=True)
    subprocess.run([a.mergetrace, "--ranks", "0-1", d, "-o", o1, "-q"], check=True)
    r = subprocess.run([a.mergetrace, os.path.join(o1, "merged.json.gz"), os.path.join(d, "rank-2.json"),
                        os.path.join(d, "rank-3.json"), "-o", o2, "-q"])
    ok = r.returncode == 0 and os.path.exists(os.path.join(o2, "merged.json.gz"))
    if ok:
        rm = json.load(open(os.path.join(o2, "report.json")))
        ra = json.load(open(os.path.join(d + "-A", "report.json")))
        ok = [i["rank_source"] for i in rm["inputs"]] == ["merged trace"] * 2 + ["distributedInfo"] * 2 and \
            rm["stragglers"]["suspects"] == ra["stragglers"]["suspects"] and "fit" not in rm["clock"]
        with gzip.open(os.path.join(o2, "merged.json.gz"), "rt") as f:
            ev2 = json.load(f)
        ok = ok and ev2["otherData"]["ranks"] == [0, 1, 2, 3]
    check(ok, "a merged trace of ranks 0-1 beside rank-2.json and rank-3.json: analysed, aligned, merged again")
    if ok:
        # ranks 0-1's memory counters pass through once: the merge does not
        # write them again from the parts' [memory] events (it doubled them)
        with gzip.open(os.path.join(o1, "merged.json.gz"), "rt") as f:
            ev1 = json.load(f)
        def counters(doc):
            return sorted(json.dumps(e, sort_keys=True) for e in doc["traceEvents"]
                          if e.get("ph") == "C" and e.get("pid", 0) < 3 * 4096)
        c1, c2 = counters(ev1), counters(ev2)
        check(len(c1) > 0 and c1 == c2, "ranks 0-1's memory counters merged again: %d in the first merge, %d after"
              % (len(c1), len(c2)))
        # and their processes keep their names: a string pid ("Spans",
        # "Traces") is one again, not a CPU process named by its merged pid
        def names(doc):
            return sorted((e["pid"], e["name"], json.dumps(e["args"], sort_keys=True)) for e in doc["traceEvents"]
                          if e.get("ph") == "M" and e["name"] in ("process_name", "process_labels")
                          and 4096 <= e.get("pid", 0) < 3 * 4096)
        n1, n2 = names(ev1), names(ev2)
        check(n1 == n2 and any("Spans" in x[2] for x in n1),
              "ranks 0-1's process names merged again: %s, then %s" % (n1[:6], n2[:6]))
    # the merged trace against its own per-rank traces as --baseline: the
    # baseline's job is aligned (the merged input's no-fit is not copied to it)
    ob = d + "-baseline"
    shutil.rmtree(ob, ignore_errors=True)
    r = subprocess.run([a.mergetrace, "-q", "--baseline", d, os.path.join(d + "-A", "merged.json.gz"), "-o", ob])
    ok = r.returncode == 0
    if ok:
        rb_ = json.load(open(os.path.join(ob, "baseline", "report.json")))
        rr = json.load(open(os.path.join(ob, "report.json")))
        ok = "fit" not in rb_["clock"] and rr["clock"].get("fit") is False
    check(ok, "--baseline the per-rank traces, the merged trace as the run: the baseline fitted, the run not")
    if errors:
        print("%d check(s) failed" % len(errors))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
