#!/usr/bin/env python3
# The twin matrix (issue 38): jobs written by scripts/gen_traces.py with
# and without one change (same seed, same noise), across straggler kinds,
# parallelism, profiler settings and boundness. For each pair the what-if
# that removes the change must give the twin's measured step time (a
# pipeline: its period), and S the pair's step-time ratio. Each job is
# first checked against its own schedule's truth (step p50 within 0.5 %).
# Usage: twin_matrix.py MERGETRACE GEN_TRACES OUT_DIR [--table]
# (--table prints the markdown table of docs/whatif.md).
import json
import os
import subprocess
import sys

NOISE = ["--noise-pct", "2"]
DP = ["--kind", "dp", "--ranks", "8", "--steps", "8"]
PP = ["--kind", "pp", "--ranks", "8", "--pp-stages", "2", "--chunks", "10"]
FSDP = ["--kind", "fsdp", "--ranks", "8", "--steps", "8"]
TP = ["--kind", "tp", "--ranks", "8", "--steps", "8"]
TP24 = TP + ["--tp-size", "4"]
F1B = ["--kind", "1f1b", "--ranks", "8", "--pp-stages", "4", "--stage-us", "1200", "--steps", "6"]
F1B24 = ["--kind", "1f1b", "--ranks", "8", "--pp-stages", "2", "--stage-us", "1200", "--steps", "6"]

# name, seed, the job's arguments, the change, the what-if (straggler |
# kernel:GLOB=F | "" none: S only), whether S is checked (a straggler:
# the change is one rank's), and for a known failure why (reported, not
# counted as failed). A pipeline's S is a ratio of periods, checked
# against the ratio of the measured mean periods (its chunks' latencies
# grow with the chunk count when a later stage is the bottleneck).
# Where arrival order names no straggler (between pipeline stages every
# instance is a pair; a late host's lateness passed on by its group), the
# terminal's "likely straggler" line (M_W's rank at its typical values) is
# the what-if checked: seeds 54, 55, 56 and 66, which were known failures
# ("no what-if") until 2026-11-29, and 67. It must name the changed rank.
# Seed 67 (1F1B, old format) was a known failure until 2026-11-29: its
# SendRecv kernels, matched by stream order, fitted rank 1's clock 993 us
# off; paired by their ends (match.c blind_pair, the 5 us window: with 2 %
# noise the microbatches are so regular that a 20 us window finds peaks one
# microbatch off nearly as high) every clock is within 1.5 us.
PAIRS = [
    ("slow GPU x1.1, DDP", 11, DP, ["--slow-rank", "3:1.1"], "straggler", True),
    ("slow GPU x1.25, DDP", 12, DP, ["--slow-rank", "5:1.25"], "straggler", True),
    ("slow GPU x1.5, DDP, old format", 13, DP + ["--format", "old"], ["--slow-rank", "2:1.5"], "straggler", True),
    ("slow GPU x1.25, DDP, no ac2g links", 14, DP + ["--unlinked"], ["--slow-rank", "6:1.25"], "straggler", True),
    ("slow GPU x1.25, DDP, CPU-bound", 15, DP + ["--host-gap-us", "400"], ["--slow-rank", "1:1.25"], "straggler", True),
    ("slow GPU x1.5, DDP, mixed", 16, DP + ["--host-gap-us", "80"], ["--slow-rank", "4:1.5"], "straggler", True),
    ("slow GPU x1.5, DDP, steps 12-14 only", 17, DP, ["--slow-rank", "0:1.5", "--straggler-steps", "12-14"],
     "straggler", True),
    ("late host 2 ms, DDP, steps 13-15 only", 68, DP, ["--late-rank", "2:2000", "--straggler-steps", "13-15"],
     "straggler", True),
    ("slow GPU x1.25, tensor parallel 2x4, no ac2g links", 69, TP24 + ["--unlinked"], ["--slow-rank", "1:1.25"],
     "straggler", True),
    ("slow GPU x1.25, pipeline 2x4 (TP)", 18, PP, ["--slow-rank", "5:1.25"], "straggler", True),
    ("slow GPU x1.25, DDP, timestamps 3 ns apart", 19, DP + ["--ts-jitter-ns", "3"], ["--slow-rank", "5:1.25"],
     "straggler", True),
    ("late host 2 ms, DDP", 21, DP, ["--late-rank", "2:2000"], "straggler", True),
    ("late host 2 ms, DDP, timestamps 3 ns apart", 25, DP + ["--ts-jitter-ns", "3"], ["--late-rank", "4:2000"],
     "straggler", True),
    ("late host 2 ms, DDP, old format", 22, DP + ["--format", "old"], ["--late-rank", "7:2000"], "straggler", True),
    ("late host 1 ms, DDP, CPU-bound", 23, DP + ["--host-gap-us", "400"], ["--late-rank", "3:1000"], "straggler", True),
    ("late host 1.5 ms, pipeline 2x4 (TP)", 24, PP, ["--late-rank", "6:1500"], "straggler", True),
    ("slow host 300 us a launch, DDP", 26, DP, ["--slow-host", "3:300"], "straggler", True),
    # host-blocking syncs in the step (a cudaStreamSynchronize after the
    # forward: the backward is launched once the GPU has run the forward)
    # and profiles without cuda_sync events (the runtime calls only)
    ("slow GPU x1.25, DDP, host sync after the forward", 41, DP + ["--mid-sync"], ["--slow-rank", "5:1.25"],
     "straggler", True),
    ("late host 2 ms, DDP, host sync after the forward, no cuda_sync events", 42,
     DP + ["--mid-sync", "--no-cuda-sync"], ["--late-rank", "1:2000"], "straggler", True),
    ("slow GPU x1.5, DDP, mixed, no cuda_sync events", 43, DP + ["--no-cuda-sync", "--host-gap-us", "80"],
     ["--slow-rank", "6:1.5"], "straggler", True),
    ("slow GEMMs x1.5 (all ranks), DDP, host sync after the forward", 44, DP + ["--mid-sync"],
     ["--slow-kernel", "gemm:1.5"], "kernel:*gemm*=0.666667", False),
    ("slow GEMMs x1.5 (all ranks), DDP", 31, DP, ["--slow-kernel", "gemm:1.5"], "kernel:*gemm*=0.666667", False),
    ("slow GEMMs x1.5 (all ranks), pipeline", 32, PP, ["--slow-kernel", "gemm:1.5"], "kernel:*gemm*=0.666667",
     False),
    # stage imbalance (sample_traces/pp8: stage 0 4 ms, stage 1 3 ms of
    # work a chunk) against the same work split evenly: no what-if
    # removes it but the ideal, so S only (of periods: S 0.850 when it
    # was of chunk latencies)
    ("stage imbalance 4/3 ms vs 3.5/3.5 ms, pipeline 2x4 (TP)", 2, PP + ["--stage-us", "3500,3500"],
     ["--stage-us", "4000,3000"], "", True),
    ("slow communication x2, DDP", 33, DP, ["--slow-comm", "2"], "kernel:*AllReduce*=0.5", False),
    ("slow communication x2, DDP, old format", 34, DP + ["--format", "old"], ["--slow-comm", "2"],
     "kernel:*AllReduce*=0.5", False),
    # FSDP (all-gathers, the next layer's prefetched, and reduce-scatters
    # on their own streams), tensor parallel (an allreduce in every layer
    # that the next layer waits for; 2x4: DP across two TP groups), a 1F1B
    # pipeline (4 stages of 2 DP ranks, 8 microbatches: the stages hold
    # each other back); a bad link (every collective with that rank in it
    # slower: here every one of the job's collectives, so slow
    # communication removes it); one kernel type slow on one rank only
    # (the forward GEMMs, `tn_n` in their name)
    ("slow GPU x1.25, FSDP", 51, FSDP, ["--slow-rank", "3:1.25"], "straggler", True),
    ("late host 2 ms, FSDP, old format", 52, FSDP + ["--format", "old"], ["--late-rank", "5:2000"], "straggler",
     True),
    ("slow GPU x1.25, tensor parallel 8", 53, TP, ["--slow-rank", "2:1.25"], "straggler", True),
    ("late host 1 ms, tensor parallel 8", 64, TP, ["--late-rank", "5:1000"], "straggler", True),
    ("late host 1 ms, tensor parallel 2x4", 54, TP24, ["--late-rank", "6:1000"], "straggler", True),
    ("slow GPU x1.25, 1F1B 4 stages", 55, F1B, ["--slow-rank", "5:1.25"], "straggler", True),
    ("late host 2 ms, 1F1B 4 stages", 56, F1B, ["--late-rank", "1:2000"], "straggler", True),
    ("slow GPU x1.25, 1F1B 2 stages x 4", 65, F1B24, ["--slow-rank", "6:1.25"], "straggler", True),
    ("late host 1 ms, 1F1B 2 stages x 4", 66, F1B24, ["--late-rank", "1:1000"], "straggler", True),
    ("late host 1 ms, 1F1B 2 stages x 4, old format", 67, F1B24 + ["--format", "old"], ["--late-rank", "1:1000"],
     "straggler", True),
    ("slow GEMMs x1.5 (all ranks), 1F1B 4 stages", 57, F1B, ["--slow-kernel", "gemm:1.5"],
     "kernel:*gemm*=0.666667", False),
    ("bad link x2 on rank 3, DDP", 58, DP, ["--slow-link", "3:2"], "kernel:*AllReduce*=0.5", False),
    ("bad link x2 on rank 1, FSDP", 59, FSDP, ["--slow-link", "1:2"], "kernel:ncclDevKernel_*=0.5", False),
    ("bad link x2 on rank 4, tensor parallel 8", 60, TP, ["--slow-link", "4:2"], "kernel:*AllReduce*=0.5", False),
    ("forward GEMMs x2 on rank 3 only, DDP", 61, DP, ["--slow-kernel", "tn_n:2", "--slow-kernel-rank", "3"],
     "straggler", True),
    ("forward GEMMs x2 on rank 6 only, tensor parallel 2x4", 62, TP24,
     ["--slow-kernel", "tn_n:2", "--slow-kernel-rank", "6"], "straggler", True),
    ("forward GEMMs x2 on rank 0 only, FSDP, no cuda_sync events", 63, FSDP + ["--no-cuda-sync"],
     ["--slow-kernel", "tn_n:2", "--slow-kernel-rank", "0"], "straggler", True),
    # pairs 12 and 21 again, profiled as with enable_cuda_sync_events and
    # DDP's cudaEventRecord / cudaStreamWaitEvent before each bucket's
    # allreduce: the NCCL stream's waits are read from the trace, so the
    # straggler what-if is one number (no range: RANGED below)
    ("slow GPU x1.25, DDP, stream waits recorded", 12, DP + ["--stream-wait-events"], ["--slow-rank", "5:1.25"],
     "straggler", True),
    ("late host 2 ms, DDP, stream waits recorded", 21, DP + ["--stream-wait-events"], ["--late-rank", "2:2000"],
     "straggler", True),
]

# Whether the changed job's straggler what-if carries a range
# (alt_p50_us: its communication kernels' stream waits are inferred, the
# replay pinned to their measured ends gives another answer), by pair
# (seed, stream waits recorded); pairs not listed are not checked.
RANGED = {(12, False): True, (12, True): False, (21, False): True, (21, True): False}


def gen(gen_py, out, seed, args):
    subprocess.run([sys.executable, gen_py, "--quiet", "--seed", str(seed), "--out", out] + NOISE + args, check=True,
                   timeout=300)
    with open(os.path.join(out, "truth.json")) as f:
        return json.load(f)


def analyse(mt, src, out, extra=()):
    p = subprocess.run([mt, "-q", "--no-progress", "--no-merge", "-o", out] + list(extra) + [src],
                       capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        raise SystemExit("%s: exit %d\n%s%s" % (src, p.returncode, p.stdout, p.stderr))
    with open(os.path.join(out, "report.json")) as f:
        r = json.load(f)
    st = r["steps"]
    if r.get("pipeline"):  # the measured mean period, for S on a pipeline
        st["_period_mean_us"] = r["pipeline"]["period_us"]["mean"]
    return st


def truth_p50(t, warmup=1):
    v = sorted(x["time_ns"] for x in t["step_times"][warmup:])
    return v[(len(v) - 1) // 2] / 1e3


def main():
    mt, gen_py, out = sys.argv[1:4]
    table = "--table" in sys.argv[4:]
    os.makedirs(out, exist_ok=True)
    failed, rows, errs, serrs = 0, [], [], []
    only = [int(x) for x in os.environ.get("TWIN_ONLY", "").split(",") if x]
    n_run = n_known = 0
    for name, seed, base, change, wi, s_check, *known in PAIRS:
        if only and seed not in only:
            continue
        n_run += 1
        recorded = "--stream-wait-events" in base
        tag = "p%d%s" % (seed, "w" if recorded else "")
        d_chg, d_twin = os.path.join(out, tag + "_changed"), os.path.join(out, tag + "_twin")
        t_chg = gen(gen_py, d_chg, seed, base + change)
        t_twin = gen(gen_py, d_twin, seed, base)
        extra = ["--what-if", wi] if wi.startswith("kernel:") else []
        if not wi:  # S only
            sc = None
        a = analyse(mt, d_chg, os.path.join(d_chg, "out"), extra)
        b = analyse(mt, d_twin, os.path.join(d_twin, "out"))
        bad = []
        for st, t, who in ((a, t_chg, "changed"), (b, t_twin, "twin")):
            tp = truth_p50(t, st["warmup"])
            if abs(st["p50_us"] - tp) > 0.005 * tp:
                bad.append("%s job's step p50 %.3f us, its schedule %.3f" % (who, st["p50_us"], tp))
        # a pipeline's what-ifs are checked on the period (its measured
        # p50 in period_what_if), not on the chunks' latency
        pipe = bool(b.get("period_what_if"))
        key = "period_p50_us" if pipe else "p50_us"
        want = b["period_what_if"]["period_p50_us"] if pipe else b[key]
        measured = a["period_what_if"]["period_p50_us"] if pipe and a.get("period_what_if") else a["p50_us"]
        if wi:
            sc = "straggler_at_median" if wi == "straggler" else "pattern"
        w = [x for x in a["what_if"] if x["scenario"] == sc]
        got = w[0].get(key) if w else None
        I = a.get("ideal") or {}
        mw = I.get("m_w") or {}
        if wi == "straggler" and not w and mw.get("value", 0) >= 0.5 and I.get("s", 0) >= 1.02:
            # no straggler named: the terminal's "likely straggler" line,
            # M_W's rank at its typical values (a mean, against the twin's
            # mean period or mean step time)
            sc = "likely straggler (M_W rank %d)" % mw["rank"]
            got = mw["removed_mean_us"]
            changed = [int(x.split(":")[0]) for k, x in zip(change, change[1:]) if k in ("--slow-rank", "--late-rank")]
            if changed and mw["rank"] not in changed:
                bad.append("the likely straggler is rank %d, the changed rank %s" % (mw["rank"], changed))
            want = b["_period_mean_us"] if I.get("of") == "period" else b["mean_us"]
        err = (got - want) / want * 100 if got is not None else None
        if err is None:
            if wi:
                bad.append("no what-if %s" % sc)
        else:
            if not known:   # the summary is over the pairs expected to pass
                errs.append(abs(err))
            if abs(err) > 2.0:
                bad.append("what-if %.3f us, the twin %.3f us (%+.2f %%)" % (got, want, err))
        want_range = RANGED.get((seed, recorded))
        if want_range is not None and w and ("alt_p50_us" in w[0]) != want_range:
            bad.append("the what-if %s a range (alt_p50_us), expected %s" % (
                "carries" if "alt_p50_us" in w[0] else "carries no", "one" if want_range else "none"))
        s_txt = ""
        if s_check:
            # S of the changed job over S of its twin (the twin's own
            # imbalance: a pipeline's stages of unequal work, the noise)
            # against the ratio of their mean step times (a pipeline's S
            # is of periods: the ratio of the mean periods)
            of_period = a.get("ideal", {}).get("of") == "period"
            ratio = (a["_period_mean_us"] / b["_period_mean_us"]) if of_period else a["mean_us"] / b["mean_us"]
            s = a["ideal"]["s"] / b["ideal"]["s"] if a.get("ideal") and b.get("ideal") else None
            if s is None:
                bad.append("no S")
            else:
                se = (s - ratio) / ratio * 100
                if not known:
                    serrs.append(abs(se))
                s_txt = "%.4f / %.4f vs %.4f (%+.2f %%)" % (a["ideal"]["s"], b["ideal"]["s"], ratio, se)
                if abs(se) > 2.0:
                    bad.append("S %s" % s_txt)
        rows.append((name + (" (known failure)" if known and bad else ""), " ".join(change),
                     sc if wi == "straggler" else (wi or "(S only)"), measured, got, want, err, s_txt))
        if bad and known:
            n_known += 1
            print("KNOWN %s: %s (%s)" % (name, "; ".join(bad), known[0]))
        elif bad:
            failed += 1
            print("FAIL %s: %s" % (name, "; ".join(bad)))
        elif known:
            print("ok   %s (listed as a known failure: %s; take it off the list)" % (name, known[0]))
        else:
            print("ok   %s: %s%s" % (name, "what-if %+.2f %%" % err if err is not None else "no what-if",
                                       (", S " + s_txt) if s_txt else ""))
    errs.sort()
    serrs.sort()
    med = errs[(len(errs) - 1) // 2] if errs else 0.0
    print("what-if error |%%|: median %.2f %%, worst %.2f %% (%d pairs); S error |%%|: median %.2f %%, worst %.2f %% "
          "(%d pairs); known failures left out"
          % (med, errs[-1] if errs else 0, len(errs), serrs[(len(serrs) - 1) // 2] if serrs else 0,
             serrs[-1] if serrs else 0, len(serrs)))
    if med > 0.5:
        failed += 1
        print("FAIL the median what-if error is over 0.5 %")
    if table:
        print("\n| pair | change | what-if | measured | projected | twin | error | S vs ratio |")
        print("|---|---|---|---|---|---|---|---|")
        for r in rows:
            print("| %s | `%s` | %s | %.1f us | %s | %.1f us | %s | %s |" %
                  (r[0], r[1], r[2], r[3], "%.1f us" % r[4] if r[4] is not None else "-", r[5],
                   "%+.2f %%" % r[6] if r[6] is not None else "-", r[7] or "-"))
    print("%d pairs, %d failed, %d known failures" % (n_run, failed, n_known))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
