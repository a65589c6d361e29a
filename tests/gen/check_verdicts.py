#!/usr/bin/env python3
"""False-alarm rate and power of the idle and exposed-communication verdicts
of a comparison (--baseline) at 1, 2, 3, 8 and 64 ranks, on generated
data-parallel jobs whose difference is known by construction (issue 39):

  A/A     two seeds, the same job (host gaps of GAP us before every launch):
          idle_pct and exposed_comm_pct verdicts not "within noise" are false
          alarms (at most 5 % of them over all pairs);
  +50 %   the baseline with host gaps of GAP us, this run with the gap that
          makes the job's idle 1.5 times as large (GAP2, other seed): the
          measured idle ratio (temporal[] of both reports, read here) is
          1.40 .. 1.60, and idle_pct is "slower" in at least 80 % of pairs;
  gate    'idle_pct<=1.05*baseline' fails (exit 3) on the 2- and 3-rank +50 %
          pairs; with --too-few-passes a 2-steps-against-2 job's gate
          passes, without it it fails;
  warm-up a 1-rank job whose host is 1.5 ms late at the start of each of
          its first 12 steps (of 24; --late-rank --straggler-steps) as the
          baseline of the same job without: the baseline's steps are "not
          steady" (compare.json steady.a, a note), this run's are; an A/A
          baseline (another seed, no lateness) is steady.

Prints a table of the rates per world size (docs/compare.md quotes it).
  nsight  with --corpus: the Nsight Systems pair mfu_2gpu_before/after
          (GindaChen/nsys-ai fixtures; every rank idler after, 2 ranks, no
          steps): idle_pct "too few samples to tell" and the gate
          'idle_pct<=1.05*baseline' fails (main before: within noise, exit 0).

Usage: check_verdicts.py BUILD_DIR [--pairs N] [--keep DIR] [--corpus DIR]"""

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
GAP, GAP2 = 100, 161   # idle(GAP2) / idle(GAP) = 1.5 for this job (measured below, every pair)
STEPS = 30


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        FAILS.append(what)


def gen(out, ranks, seed, gap, steps=STEPS, *extra):
    subprocess.run([sys.executable, GEN, "--quiet", "--out", out, "--ranks", str(ranks), "--steps", str(steps),
                    "--seed", str(seed), "--program-seed", "1", "--host-gap-us", str(gap)] + list(extra), check=True)


def analyse(exe, traces, out, *extra):
    return subprocess.run([exe, "-q", "--no-merge", "--no-html", "-o", out] + list(extra) + [traces],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def idle_sum(out):
    with open(os.path.join(out, "report.json")) as f:
        r = json.load(f)
    return sum(t["idle_us"] for t in r["temporal"]) / sum(t["span_us"] for t in r["temporal"])


def verdicts(out):
    with open(os.path.join(out, "compare.json")) as f:
        return {m["name"]: m for m in json.load(f)["metrics"]}


def pair(exe, tmp, name, ranks, seed_a, gap_a, seed_b, gap_b, *extra):
    da, db = os.path.join(tmp, name + "_a"), os.path.join(tmp, name + "_b")
    oa, ob = os.path.join(tmp, name + "_oa"), os.path.join(tmp, name + "_ob")
    gen(da, ranks, seed_a, gap_a)
    gen(db, ranks, seed_b, gap_b)
    r = analyse(exe, da, oa)
    if r.returncode:
        raise SystemExit("mergetrace failed on %s: %s" % (da, r.stderr))
    r = analyse(exe, db, ob, "--baseline", oa, *extra)
    ratio = idle_sum(ob) / idle_sum(oa)
    v = verdicts(ob) if os.path.exists(os.path.join(ob, "compare.json")) else {}
    for d in (da, db):
        shutil.rmtree(d, ignore_errors=True)
    return r, ratio, v


def movers(exe, tmp):
    """Issue 39 papercut: the A/B movers of a job whose only change is one
    slow rank (every compute kernel of rank 3 1.5x) name its compute first:
    the NCCL kernels of the other ranks grew more (they wait for it), and
    were the first line. Kernel rows carry calls per rank, here the
    generator's: a weight-gradient GEMM per layer per step (4 x 6 = 24)."""
    da, db = os.path.join(tmp, "mv_a"), os.path.join(tmp, "mv_b")
    oa, ob = os.path.join(tmp, "mv_oa"), os.path.join(tmp, "mv_ob")
    for d, extra in ((da, []), (db, ["--slow-rank", "3:1.5"])):
        subprocess.run([sys.executable, GEN, "--quiet", "--out", d, "--ranks", "8", "--steps", "6", "--seed", "5"]
                       + extra, check=True)
    analyse(exe, da, oa)
    r = subprocess.run([exe, "--no-merge", "--no-html", "--color=never", "-o", ob, "--baseline", oa, db],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    rows = [x for x in r.stdout.splitlines() if x.startswith("  kernel ")]
    check(r.returncode == 0 and rows and "nccl" not in rows[0].lower() and "gemm" in rows[0],
          "slow rank A/B: the first kernel mover is its compute, not NCCL (%s)" % (rows[:1],))
    check(bool(rows) and "(24 calls, " in rows[0], "slow rank A/B: the GEMM's calls per rank beside it (24)")
    check(any("nccl" in x.lower() for x in rows[1:]), "slow rank A/B: the NCCL kernel's change still shown, after")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--pairs", type=int, default=10)
    ap.add_argument("--keep", default=None)
    ap.add_argument("--corpus", default=None)
    a = ap.parse_args()
    exe = os.path.join(a.build, "mergetrace")
    tmp = a.keep or tempfile.mkdtemp(prefix="mt-verdicts-")
    os.makedirs(tmp, exist_ok=True)
    try:
        run(exe, tmp, a.pairs)
        movers(exe, tmp)
        nsight(exe, tmp, a.corpus)
    finally:
        if not a.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    print("%d failure(s)" % len(FAILS))
    return 1 if FAILS else 0


def run(exe, tmp, pairs):
    alarms = tests = 0
    print("ranks  A/A false alarms (idle, exposed comm)  +50 % idle: slower  idle ratio (min..max)")
    for ranks in (1, 2, 3, 8, 64):
        n = pairs if ranks < 64 else max(2, pairs // 5)
        fa = ft = hits = 0
        ratios = []
        for s in range(n):
            _, _, v = pair(exe, tmp, "aa%d_%d" % (ranks, s), ranks, 100 + s, GAP, 5000 + s, GAP)
            for k in ("idle_pct", "exposed_comm_pct"):
                if v[k]["verdict"] in ("n/a", "too few samples to tell"):
                    check(False, "%d ranks A/A seed %d: %s has a verdict (%s)" % (ranks, s, k, v[k]["verdict"]))
                    continue
                ft += 1
                fa += v[k]["verdict"] != "within noise"
            _, ratio, v = pair(exe, tmp, "up%d_%d" % (ranks, s), ranks, 100 + s, GAP, 5000 + s, GAP2)
            ratios.append(ratio)
            hits += v["idle_pct"]["verdict"] == "slower"
        alarms += fa
        tests += ft
        print("%5d  %d of %d (%.1f %%)%s  %d of %d  %.3f..%.3f" % (ranks, fa, ft, 100.0 * fa / max(ft, 1),
              " " * 20, hits, n, min(ratios), max(ratios)))
        check(all(1.40 <= x <= 1.60 for x in ratios), "%d ranks: the +50 %% pairs' idle ratio is 1.40 .. 1.60" % ranks)
        check(hits >= 0.8 * n, "%d ranks: +50 %% idle called slower in %d of %d pairs (at least 80 %%)"
              % (ranks, hits, n))
    check(alarms <= 0.05 * tests, "A/A: %d of %d idle / exposed comm verdicts not within noise (at most 5 %%)"
          % (alarms, tests))
    # gates on the 2- and 3-rank pairs: a relative gate that can fail
    for ranks in (2, 3):
        r, _, _ = pair(exe, tmp, "g%d" % ranks, ranks, 7, GAP, 8, GAP2, "--gate", "idle_pct<=1.05*baseline")
        check(r.returncode == 3, "%d ranks +50 %% idle: gate idle_pct<=1.05*baseline fails (exit %d, want 3)"
              % (ranks, r.returncode))
        r, _, _ = pair(exe, tmp, "ga%d" % ranks, ranks, 7, GAP, 8, GAP, "--gate", "idle_pct<=1.05*baseline")
        check(r.returncode in (0, 3), "%d ranks A/A: gate runs (exit %d)" % (ranks, r.returncode))
    # too few samples: 2 ranks, 2 steps a side (per-step samples 2 against 2)
    da, db = os.path.join(tmp, "few_a"), os.path.join(tmp, "few_b")
    oa, ob = os.path.join(tmp, "few_oa"), os.path.join(tmp, "few_ob")
    gen(da, 2, 7, GAP, 3)
    gen(db, 2, 8, GAP2, 3)
    analyse(exe, da, oa)
    r = analyse(exe, db, ob, "--baseline", oa, "--gate", "idle_pct<=1.05*baseline")
    v = verdicts(ob)["idle_pct"]
    check(v["verdict"] == "too few samples to tell" and v["detectable"] is None,
          "2 ranks, few steps: idle_pct says too few samples to tell (%s, %d / %d %s)"
          % (v["verdict"], v["n_a"], v["n_b"], v["samples"]))
    check(r.returncode == 3, "too few samples: the relative gate fails (exit %d, want 3)" % r.returncode)
    r = analyse(exe, db, ob, "--baseline", oa, "--gate", "idle_pct<=1.05*baseline", "--too-few-passes")
    check(r.returncode == 0, "too few samples with --too-few-passes: the gate passes (exit %d, want 0)"
          % r.returncode)
    # warm-up in the baseline's window (issue 39 item 2)
    outs = {}
    for name, seed, extra in (("warm", 5, ("--late-rank", "0:1500", "--straggler-steps", "10-21")),
                              ("steady", 5, ()), ("other", 6, ())):
        d = os.path.join(tmp, "w_" + name)
        gen(d, 1, seed, 0, 24, *extra)
        outs[name] = os.path.join(tmp, "wo_" + name)
        analyse(exe, d, outs[name])
    for base, want in (("warm", False), ("other", True)):
        ob = os.path.join(tmp, "wc_" + base)
        analyse(exe, os.path.join(tmp, "w_steady"), ob, "--baseline", outs[base])
        with open(os.path.join(ob, "compare.json")) as f:
            cj = json.load(f)
        noted = any("baseline's steps are not steady" in n for n in cj["notes"])
        check(cj["steady"]["a"]["steady"] == want and noted != want and cj["steady"]["b"]["steady"],
              "warm-up: baseline %s steady %s (p %.2g, half %+.1f %%), want %s; this run steady"
              % (base, cj["steady"]["a"]["steady"], cj["steady"]["a"]["trend_p"],
                 100 * cj["steady"]["a"]["half_rel"], want))


def nsight(exe, tmp, corpus):
    fx = os.path.join(corpus or "", "GindaChen__nsys-ai", "tests", "fixtures")
    if not corpus or not os.path.exists(os.path.join(fx, "mfu_2gpu_before.sqlite")):
        print("skip the Nsight pair: no corpus")
        return
    oa, ob = os.path.join(tmp, "ns_a"), os.path.join(tmp, "ns_b")
    if analyse(exe, os.path.join(fx, "mfu_2gpu_before.sqlite"), oa).returncode:
        print("skip the Nsight pair: this build does not read .sqlite")
        return
    r = analyse(exe, os.path.join(fx, "mfu_2gpu_after.sqlite"), ob, "--baseline", oa, "--gate",
                "idle_pct<=1.05*baseline")
    v = verdicts(ob)["idle_pct"]
    check(r.returncode == 3 and v["verdict"] == "too few samples to tell",
          "Nsight mfu_2gpu: idle_pct %s -> %s %s, gate exit %d (want too few, 3)"
          % (v["a"], v["b"], v["verdict"], r.returncode))


if __name__ == "__main__":
    sys.exit(main())
