#!/usr/bin/env python3
"""Run comparisons (--baseline) on pairs of generated jobs whose difference
is known by construction, and check compare.json against it:

  A/A       seed-only pairs: at most 5 % of the job-level verdicts are not
            "within noise" (the false-alarm rate, printed);
  2 %       every compute kernel 2 % slower (same seed): the pipeline period
            "slower" in >= 80 % of seeds over 50 chunks (the detection rate,
            printed); the period's relative delta near +2 %;
  kernel    one kernel 20 % slower on every rank (same seed): its relative
            delta is 0.20 (generator durations x 1.2, rounded to ns), the
            top kernel mover, sign +; other compute kernels unchanged;
  pipeline  serialized vs overlapped (same seed): OverlapScore "slower" with
            the generator's truth values for A and B; period "slower";
  straggler a straggler removed (same seed): straggler_wait_pct "faster";
  explained the parts add up to the per-step delta within 2 %;
  gates     relative gates pass and fail as written (exit codes 0 / 3),
            a within-noise change passes unless --strict-gates;
  self      a job compared with itself: zero deltas, "within noise".

With --dirs, only the kernel, pipeline, straggler and self pairs run, each
baseline given as its directory of traces (--baseline TRACEDIR: both jobs
analysed in one run), against the same truths.

Usage: check_compare.py BUILD_DIR [--pairs N] [--keep DIR] [--dirs]"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
GEN = os.path.join(HERE, "..", "..", "scripts", "gen_traces.py")
FAILS = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        FAILS.append(what)


def gen(out, *args):
    subprocess.run([sys.executable, GEN, "--quiet", "--out", out] + list(args), check=True)
    with open(os.path.join(out, "truth.json")) as f:
        return json.load(f)


def analyse(exe, traces, out, *extra):
    r = subprocess.run([exe, "-q", "--no-merge", "--no-html", "-o", out] + list(extra) + [traces],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return r


def compare(exe, tmp, base_out, traces, name, *extra):
    out = os.path.join(tmp, "c_" + name)
    r = analyse(exe, traces, out, "--baseline", base_out, *extra)
    cj = None
    p = os.path.join(out, "compare.json")
    if os.path.exists(p):
        with open(p) as f:
            cj = json.load(f)
    return r, cj


def metric(cj, name):
    return next(m for m in cj["metrics"] if m["name"] == name)


PP = ["--kind", "pp", "--ranks", "4", "--pp-stages", "2", "--chunks", "50"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--pairs", type=int, default=20)
    ap.add_argument("--keep", default=None)
    ap.add_argument("--dirs", action="store_true",
                    help="only the pairs of known truth, each baseline given as its directory of traces")
    a = ap.parse_args()
    exe = os.path.join(a.build, "mergetrace")
    tmp = a.keep or tempfile.mkdtemp(prefix="mt-compare-")
    os.makedirs(tmp, exist_ok=True)
    try:
        if a.dirs:
            run_truth(exe, tmp, True)
        else:
            run(exe, tmp, a.pairs)
    finally:
        if not a.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    print("%d failure(s)" % len(FAILS))
    return 1 if FAILS else 0


def job(exe, tmp, name, *args):
    d = os.path.join(tmp, name)
    t = gen(d, *args)
    o = os.path.join(tmp, "o_" + name)
    r = analyse(exe, d, o)
    if r.returncode:
        raise SystemExit("mergetrace failed on %s: %s" % (name, r.stderr))
    return d, o, t


def run(exe, tmp, pairs):
    # ---- A/A: seed-only pairs, every job-level verdict counted
    alarms = verdicts = 0
    for s in range(pairs):
        _, oa, _ = job(exe, tmp, "aa%d" % s, *PP, "--seed", str(100 + s))
        db, _, _ = job(exe, tmp, "ab%d" % s, *PP, "--seed", str(5000 + s))
        r, cj = compare(exe, tmp, oa, db, "aa%d" % s)
        for m in cj["metrics"]:
            if m["verdict"] == "n/a":
                continue
            verdicts += 1
            alarms += m["verdict"] != "within noise"
        shutil.rmtree(os.path.join(tmp, "ab%d" % s), ignore_errors=True)
    rate = alarms / max(verdicts, 1)
    check(rate <= 0.05, "A/A: %d of %d job-level verdicts not within noise (%.1f %%, at most 5 %%)"
          % (alarms, verdicts, 100 * rate))
    # ---- 2 % slower compute, same seeds as A of the A/A pairs
    hits = 0
    rels = []
    for s in range(pairs):
        ds = os.path.join(tmp, "sl%d" % s)
        gen(ds, *PP, "--seed", str(100 + s), "--slow-pct", "2")
        _, cj = compare(exe, tmp, os.path.join(tmp, "o_aa%d" % s), ds, "sl%d" % s)
        m = metric(cj, "period_p50_us")
        hits += m["verdict"] == "slower"
        rels.append(m["rel"])
        # the step and period times must not get faster; shares (of the
        # critical path, of the span) may fall when compute grows
        wrong = [x["name"] for x in cj["metrics"]
                 if x["verdict"] == "faster" and x["name"].startswith(("step_", "period_"))]
        if wrong:
            check(False, "2 %% slower, seed %d: nothing is faster (%s)" % (100 + s, ", ".join(wrong)))
        shutil.rmtree(ds, ignore_errors=True)
    check(hits >= 0.8 * pairs, "2 %% slower compute over 50 chunks: period slower in %d of %d seeds (at least 80 %%)"
          % (hits, pairs))
    rels.sort()
    med = rels[len(rels) // 2]
    check(0.01 <= med <= 0.03, "2 %% slower: median relative period delta %.4f (0.01 .. 0.03)" % med)

    da, oa = run_truth(exe, tmp, False)
    run_gates(exe, tmp, da, oa)


def run_truth(exe, tmp, dirs):
    """The pairs whose truth is known by construction. dirs: the baseline
    is given as its directory of traces (analysed in the same run) rather
    than as the output directory of an earlier run."""
    how = " (baseline: its traces)" if dirs else ""

    def base(d, o):
        return d if dirs else o

    # ---- one kernel 20 % slower on every rank
    da, oa, _ = job(exe, tmp, "k0", *PP, "--seed", "7")
    dk = os.path.join(tmp, "k1")
    gen(dk, *PP, "--seed", "7", "--slow-kernel", "gemm_bf16:1.2")
    r, cj = compare(exe, tmp, base(da, oa), dk, "k1")
    check(r.returncode == 0, "kernel 20 %% slower%s: exit %d %s" % (how, r.returncode, r.stderr.strip()))
    top = cj["kernels"]["top"]
    gemm = [k for k in top if "gemm_bf16" in k["name"]]
    check(bool(gemm) and abs(gemm[0]["rel"] - 0.20) <= 0.001,
          "kernel 20 %% slower%s: relative delta %s (0.20 +- 0.001)" % (how, gemm[0]["rel"] if gemm else None))
    check(bool(gemm) and top[0]["name"] == gemm[0]["name"] and top[0]["delta_us"] > 0,
          "kernel 20 % slower: the top mover, positive")
    # GELU and add are one template (vectorized_elementwise_kernel<...>): one entry, unchanged.
    ew = [k for k in top if k["name"].startswith("at::native::vectorized_elementwise_kernel")]
    check(len(ew) == 1 and abs(ew[0]["rel"]) < 1e-6,
          "kernel 20 %% slower: the elementwise kernels are one entry, unchanged (%s)" % [k["rel"] for k in ew])
    ex = cj["explained"]
    tot = sum(p["delta"] for p in ex["parts"])
    check(abs(tot - ex["delta"]) <= 0.02 * abs(ex["delta"]) + 1e-3,
          "explained: parts sum %.3f vs delta %.3f (within 2 %%)" % (tot, ex["delta"]))
    comp = next(p for p in ex["parts"] if p["name"] == "compute")
    check(comp["delta"] > 0 and comp["delta"] >= 0.5 * ex["delta"],
          "explained: compute carries the kernel's slowdown (%.3f of %.3f us)" % (comp["delta"], ex["delta"]))

    # ---- a pipeline serialized vs overlapped
    dser = os.path.join(tmp, "ser")
    tser = gen(dser, *PP, "--seed", "7", "--pp-mode", "serialized")
    tov = json.load(open(os.path.join(da, "truth.json")))
    r, cj = compare(exe, tmp, base(da, oa), dser, "ser")
    m = metric(cj, "overlap")
    ta, tb = tov["pipeline"]["overlap_score"], tser["pipeline"]["overlap_score"]
    check(m["verdict"] == "slower", "serialized vs overlapped: overlap %s (slower)" % m["verdict"])
    check(abs(m["a"] - ta) <= 0.01 and abs(m["b"] - tb) <= 0.01,
          "serialized vs overlapped%s: overlap %.4f -> %.4f, truth %.4f -> %.4f (+- 0.01)"
          % (how, m["a"], m["b"], ta, tb))
    check(abs(m["delta"] - (tb - ta)) <= 0.02, "serialized vs overlapped: delta %.4f, truth %.4f"
          % (m["delta"], tb - ta))
    check(metric(cj, "period_p50_us")["verdict"] == "slower", "serialized vs overlapped: period slower")

    # ---- a straggler removed (data parallel)
    DP = ["--kind", "dp", "--ranks", "8", "--steps", "30", "--seed", "11"]
    dst, ost, _ = job(exe, tmp, "st1", *DP, "--straggler", "3", "--straggler-delay-us", "800")
    dno = os.path.join(tmp, "st0")
    gen(dno, *DP)
    r, cj = compare(exe, tmp, base(dst, ost), dno, "st0")
    m = metric(cj, "straggler_wait_pct")
    check(m["verdict"] == "faster" and m["delta"] < 0,
          "straggler removed%s: straggler_wait_pct %s, delta %.2f (faster, < 0)" % (how, m["verdict"], m["delta"]))
    check(cj["rank_most_changed_compute"] == 3,
          "straggler removed: rank whose compute changed most %s (3)" % cj["rank_most_changed_compute"])
    check(any(n.startswith("no per-step times") for n in cj["notes"]) or metric(cj, "step_p50_us")["verdict"] != "n/a",
          "straggler removed: step metrics present or said to be missing")

    # ---- a job compared with itself
    r, cj = compare(exe, tmp, base(da, oa), da, "self")
    bad = [m["name"] for m in cj["metrics"] if m["verdict"] not in ("within noise", "n/a") or
           (m["delta"] not in (None, 0))]
    check(not bad, "self%s: zero deltas, within noise everywhere (%s)" % (how, bad))
    return da, oa


def run_gates(exe, tmp, da, oa):

    # ---- gates relative to the baseline (2 % slower pair of seed 7)
    dsl = os.path.join(tmp, "g1")
    gen(dsl, *PP, "--seed", "7", "--slow-pct", "5")
    cases = [
        (["--gate", "period_p50_us<=1.10*baseline"], 0),
        (["--gate", "period_p50_us<=baseline"], 3),
        (["--gate", "overlap>=baseline-0.05"], 0),
        (["--gate", "overlap>=baseline+0.5"], 0),  # OverlapScore within noise: passes ...
        (["--strict-gates", "--gate", "overlap>=baseline+0.5"], 3),  # ... unless --strict-gates
    ]
    for extra, want in cases:
        r, _ = compare(exe, tmp, oa, dsl, "g", *extra)
        check(r.returncode == want, "gate %s on 5 %% slower: exit %d (want %d)" % (" ".join(extra), r.returncode, want))
    # within noise: the seed-only pair (a small change the test calls noise)
    _, oab, _ = job(exe, tmp, "gn", *PP, "--seed", "8")
    r, cj = compare(exe, tmp, oa, os.path.join(tmp, "gn"), "gn0", "--gate", "overlap>=baseline+0.0001")
    v = metric(cj, "overlap")
    if v["verdict"] == "within noise" and v["b"] < v["a"] + 0.0001:
        check(r.returncode == 0, "gate on a within-noise change passes (exit %d)" % r.returncode)
        r, _ = compare(exe, tmp, oa, os.path.join(tmp, "gn"), "gn1", "--strict-gates", "--gate",
                       "overlap>=baseline+0.0001")
        check(r.returncode == 3, "the same gate with --strict-gates fails (exit %d)" % r.returncode)


if __name__ == "__main__":
    sys.exit(main())
