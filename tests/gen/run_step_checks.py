#!/usr/bin/env python3
"""ctest gen_steps: report.json "steps" against the generator's truth.

The generator writes the same job twice with the same seed (so the same
noise): with a straggler (rank 2, forward kernels 400 us slower per step)
and without. Checked, for both jobs and a pipeline job:
  - step time p50 / p99 after the warm-up step equal the truth's (computed
    from the simulation in true time: earliest rank start to latest rank
    end of each ProfilerStep) within 0.5 %;
  - the replay with measured durations gives every step time back within
    0.5 % (median) and 1 % (worst);
  - communication on the critical path equals the generator's (truth.json
    critical_path: walked from its schedule's own bindings) within 1 point;
  - the critical path tiles each step (its kinds sum to the step time) and
    the ranks' shares sum to 100 %;
  - what-if "straggler at the median speed" on the straggler job equals the
    measured p50 step time of the job without the straggler within 2 %;
  - root causes name rank 2 and a forward kernel (the injected phase) first;
  - what-if "stage 1 10 % faster" on the pipeline equals the period p50 the
    generator measured (truth.json pipeline.period_ns) on the same pipeline
    written with stage 1 10 % faster, within 3 %;
  - what-if "no host launch gaps" on a job whose host works 400 us before
    every launch (--host-gap-us) equals the measured p50 step time of the
    same job without it within 2 %;
  - what-if "kernel:ncclDevKernel_AllReduce*=1/3" on a job whose allreduce
    transfers take 3 times as long (--slow-comm 3) equals the measured p50
    step time of the same job without it within 2 %.
Standard library only. Exit 0 pass, 1 fail, 77 skip."""

import argparse
import json
import os
import subprocess
import sys

JOBS = {
    "dp-straggler": ["--kind", "dp", "--ranks", "4", "--steps", "8", "--seed", "21", "--straggler", "2",
                     "--straggler-delay-us", "400"],
    "dp-plain": ["--kind", "dp", "--ranks", "4", "--steps", "8", "--seed", "21"],
    # twins of dp-plain: host-bound launches; allreduce transfers 3 x as long
    "dp-hostgap": ["--kind", "dp", "--ranks", "4", "--steps", "8", "--seed", "21", "--host-gap-us", "400"],
    "dp-slowcomm": ["--kind", "dp", "--ranks", "4", "--steps", "8", "--seed", "21", "--slow-comm", "3"],
    "pp-4stage": ["--kind", "pp", "--ranks", "4", "--pp-stages", "4", "--chunks", "6", "--seed", "16",
                  "--ranks-per-node", "1", "--stage-us", "2000,3500,2500,3000"],
    # the same pipeline with stage 1 (the slowest) 10 % faster
    "pp-4stage-fast1": ["--kind", "pp", "--ranks", "4", "--pp-stages", "4", "--chunks", "6", "--seed", "16",
                        "--ranks-per-node", "1", "--stage-us", "2000,3150,2500,3000"],
}
# extra mergetrace arguments per job
MT_ARGS = {"dp-slowcomm": ["--what-if", "kernel:ncclDevKernel_AllReduce*=0.333333"]}
FORWARD = ("sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n", "void at::native::vectorized_elementwise_kernel<4, "
           "at::native::(anonymous namespace)::clamp_min_functor")


def pct(v, p):
    s = sorted(v)
    k = -(-p * len(s) // 100) - 1
    return s[max(0, k)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gen", required=True)
    ap.add_argument("--mergetrace", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    errors = []
    rep = {}
    for name, args in JOBS.items():
        d = os.path.join(a.out, name)
        subprocess.run([sys.executable, a.gen, "--out", d, "--quiet"] + args, check=True)
        o = d + "-out"
        r = subprocess.run([a.mergetrace, "-q", "--no-merge", "--no-html", "-o", o] + MT_ARGS.get(name, []) + [d],
                           capture_output=True, text=True,
                           env=dict(os.environ, ASAN_OPTIONS="detect_leaks=0"))  # Open MPI's own allocations
        if r.returncode:
            errors.append("%s: exit %d: %s" % (name, r.returncode, r.stderr.strip()))
            continue
        truth = json.load(open(os.path.join(d, "truth.json")))
        got = json.load(open(os.path.join(o, "report.json")))["steps"]
        rep[name] = got
        tt = [s["time_ns"] for s in truth["step_times"]][1:]
        for key, p in (("p50_us", 50), ("p99_us", 99)):
            want = pct(tt, p) / 1000.0
            if abs(got[key] - want) > 0.005 * want:
                errors.append("%s: %s %.3f, truth %.3f" % (name, key, got[key], want))
        times = [s["time_us"] for s in got["per_step"]]
        if [s["step"] for s in got["per_step"]] != [s["step"] for s in truth["step_times"]]:
            errors.append("%s: steps %s" % (name, [s["step"] for s in got["per_step"]]))
        errs = sorted(abs(s["replay_us"] - s["time_us"]) / s["time_us"] for s in got["per_step"] if s["used"])
        if errs[(len(errs) - 1) // 2] > 0.005 or errs[-1] > 0.01:
            errors.append("%s: replay errors %s" % (name, errs))
        for s in got["per_step"]:
            tot = sum(s["path_us"].values())
            if abs(tot - s["time_us"]) > 0.002:
                errors.append("%s: step %d path %.3f != time %.3f" % (name, s["step"], tot, s["time_us"]))
        cp = got["critical_path"]
        if abs(cp["length_us"] - sum(t for s, t in zip(got["per_step"], times) if s["used"])) > 0.01:
            errors.append("%s: path length %.3f" % (name, cp["length_us"]))
        # communication on the critical path against the generator's own
        # path (truth.json critical_path: the bindings its schedule used)
        tcp = truth["critical_path"][1:]
        tlen = sum(sum(c["kind_ns"].values()) for c in tcp)
        tcomm = 100.0 * sum(c["kind_ns"]["comm"] for c in tcp) / tlen
        tkinds = {k: sum(c["kind_ns"][k] for c in tcp) / 1000.0 for k in tcp[0]["kind_ns"]}
        print("%s: critical path by kind %s us; truth %s us" % (name, cp["by_kind_us"], tkinds))
        for k, v in tkinds.items():  # every kind, far tighter (seen: within 2 us of 30-90 ms)
            if abs(cp["by_kind_us"][k] - v) > 0.001 * tlen / 1000.0:
                errors.append("%s: %s on the critical path %.3f us, truth %.3f us" % (name, k, cp["by_kind_us"][k], v))
        if abs(cp["comm_pct"] - tcomm) > 1.0:
            errors.append("%s: comm on the critical path %.2f %%, truth %.2f %%" % (name, cp["comm_pct"], tcomm))
        share = sum(r["path_pct"] for r in cp["ranks"])
        if abs(share - 100.0) > 0.1:
            errors.append("%s: rank shares sum to %.2f" % (name, share))
        print("%s: p50 %.3f us p99 %.3f us (truth %.3f, %.3f), replay error max %.4f %%, comm on path %.2f %%, "
              "attributed %.1f %%" % (name, got["p50_us"], got["p99_us"], pct(tt, 50) / 1000.0, pct(tt, 99) / 1000.0,
                                      100 * errs[-1], cp["comm_pct"], got["root_causes"]["attributed_pct"]))
    if "dp-straggler" in rep and "dp-plain" in rep:
        wi = {w["scenario"]: w for w in rep["dp-straggler"]["what_if"]}
        want = rep["dp-plain"]["p50_us"]
        if "straggler_at_median" not in wi:
            errors.append("dp-straggler: no straggler what-if")
        else:
            proj = wi["straggler_at_median"]["p50_us"]
            print("what-if straggler at median: %.3f us; measured without the straggler %.3f us (%.3f %%)"
                  % (proj, want, 100 * (proj - want) / want))
            if abs(proj - want) > 0.02 * want:
                errors.append("dp-straggler: what-if %.3f vs measured %.3f" % (proj, want))
        causes = rep["dp-straggler"]["root_causes"]["causes"]
        if not causes or causes[0]["rank"] != 2 or not causes[0]["name"].startswith(FORWARD):
            errors.append("dp-straggler: first root cause %s" % (causes[:1],))
    # twins: the projection on the changed job against the plain job's measured time
    for job, scen, what in (("dp-hostgap", "no_launch_gaps", "no host launch gaps"),
                            ("dp-slowcomm", "pattern", "allreduce transfers x 1/3")):
        if job not in rep or "dp-plain" not in rep:
            continue
        wi = {w["scenario"]: w for w in rep[job]["what_if"]}
        want = rep["dp-plain"]["p50_us"]
        if scen not in wi or "p50_us" not in wi[scen]:
            errors.append("%s: no what-if %s" % (job, scen))
            continue
        proj = wi[scen]["p50_us"]
        print("what-if %s on %s: %.3f us (measured %.3f); measured without the change %.3f us (%.3f %%)"
              % (what, job, proj, rep[job]["p50_us"], want, 100 * (proj - want) / want))
        if abs(proj - want) > 0.02 * want:
            errors.append("%s: what-if %s %.3f vs measured %.3f" % (job, scen, proj, want))
    if "pp-4stage" in rep and "pp-4stage-fast1" in rep:
        pw = rep["pp-4stage"].get("period_what_if")
        truth = json.load(open(os.path.join(a.out, "pp-4stage-fast1", "truth.json")))
        want = truth["pipeline"]["period_ns"]["p50"] / 1000.0
        st = [x for x in (pw or {}).get("stages", []) if x["stage"] == 1]
        if not st:
            errors.append("pp-4stage: no period what-if for stage 1: %s" % (pw,))
        else:
            proj = st[0]["p50_us"]
            print("what-if stage 1 10 %% faster: period %.3f us (now %.3f); the faster pipeline's period (truth) "
                  "%.3f us (%.3f %%)" % (proj, pw["period_p50_us"], want, 100 * (proj - want) / want))
            if abs(proj - want) > 0.03 * want:
                errors.append("pp-4stage: stage what-if %.3f vs the faster pipeline's period %.3f" % (proj, want))
    for e in errors:
        print("FAIL " + e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
