#!/usr/bin/env python3
"""mergetrace's memory section against the generator's truth (a known
allocation schedule per rank, scripts/gen_traces.py --memory), and its
warnings on broken [memory] events.

* dp, 4 ranks, rank 2 leaking 16 MiB per step: per rank the events, peak
  allocated, its step, op, annotation and Bytes, reserved at the peak,
  peak reserved, allocated at the end, per step allocated at the end,
  allocations, frees and peak, the trend (bytes per step), "grows on every
  step" (rank 2 only), the peak's aligned time within 5 us of the truth's
  true time on the reference rank's clock; the summary's top rank, max /
  median; the terminal names the leaking rank.
* the merged trace's counter track per rank: on the rank's GPU process,
  peak and reserved at the peak as the truth, at the truth's time (5 us),
  under 3 % of the file;
* pp, 4 ranks in 2 stages (stage 0 holds twice the activations): per-stage
  max and top rank from the truth; the summary's top rank is in stage 0.
* one trace edited by this script: a negative "Total Allocated", a missing
  one, two events swapped in time on one thread, a device id no GPU event
  has: exit 0, one warning each naming the file and traceEvents[index] of
  the first such event (the index found here), and the numbers of the good
  events unchanged.

Usage: check_memory_gen.py MERGETRACE GEN_TRACES_PY WORK_DIR"""
import json
import os
import shutil
import subprocess
import sys
from decimal import Decimal

failures = []


def check(what, got, want):
    if got != want:
        failures.append("%s: mergetrace %r, expected %r" % (what, got, want))


def run(exe, args):
    p = subprocess.run([exe] + args, capture_output=True, text=True)
    return p


def gen(py, out, args):
    subprocess.run([sys.executable, py, "--seed", "5", "--memory", "--quiet", "--out", out] + args, check=True)
    with open(os.path.join(out, "truth.json")) as f:
        return json.load(f)


def report(out):
    with open(os.path.join(out, "report.json")) as f:
        return json.load(f, parse_float=Decimal)


def compare_rank(tag, d, m):
    check(tag + " events", d["events"], m["events"])
    check(tag + " device", d["device"], m["device"])
    check(tag + " peak_allocated", d["peak_allocated"], m["peak_allocated"])
    check(tag + " peak_allocated_step", d["peak_allocated_step"], m["peak_step"])
    check(tag + " peak_op", d["peak_op"], m["peak_op"])
    check(tag + " peak_annotation", d["peak_annotation"], m["peak_annotation"])
    check(tag + " peak_allocation_bytes", d["peak_allocation_bytes"], m["peak_bytes"])
    check(tag + " reserved_at_peak", d["reserved_at_peak"], m["reserved_at_peak"])
    check(tag + " unused_reserved_at_peak", d["unused_reserved_at_peak"], m["reserved_at_peak"] - m["peak_allocated"])
    check(tag + " peak_reserved", d["peak_reserved"], m["peak_reserved"])
    check(tag + " end_allocated", d["end_allocated"], m["end_allocated"])
    check(tag + " trend_bytes_per_step", d["trend_bytes_per_step"], m["trend_bytes_per_step"])
    check(tag + " trend_steps", d["trend_steps"], m["trend_steps"])
    check(tag + " grows_every_step", d["grows_every_step"], m["grows_every_step"])
    got = [{k: s[k] for k in ("step", "allocated_end", "allocs", "frees", "peak_allocated")} for s in d["steps"]]
    check(tag + " steps", got, m["steps"])
    err = abs(Decimal(d["peak_allocated_us"]) * 1000 - m["peak_ref_clock_ns"])
    if err > 5000:
        failures.append("%s: aligned peak time %s us is %s ns from the truth" % (tag, d["peak_allocated_us"], err))


def merged_counters(o, truth):
    """The merged trace's counter track of each rank: on the rank's GPU
    process, its largest "allocated" the truth's peak, at the peak's true
    time on the reference clock (5 us), and all of it under 3 % of the file."""
    with open(os.path.join(o, "merged.json"), "rb") as f:
        raw = f.read()
    d = json.loads(raw, parse_float=Decimal)
    names = {e["pid"]: e["args"]["name"] for e in d["traceEvents"] if e.get("ph") == "M"
             and e.get("name") == "process_name"}
    cs = [e for e in d["traceEvents"] if e.get("ph") == "C"]
    size = sum(len(json.dumps(e, separators=(",", ":"), default=str)) + 2 for e in cs)
    if size > 0.03 * len(raw):
        failures.append("merged: counter events are %d of %d bytes" % (size, len(raw)))
    for rt in truth["ranks"]:
        m = rt["memory"]
        mine = [e for e in cs if names.get(e["pid"]) == "rank %d GPU %d" % (rt["rank"], m["device"])]
        check("merged rank %d track names" % rt["rank"], sorted({e["name"] for e in mine}),
              ["memory GPU %d" % m["device"]])
        if not mine:
            continue
        top = max(mine, key=lambda e: (e["args"]["allocated"], -e["ts"]))
        check("merged rank %d peak" % rt["rank"], top["args"]["allocated"], m["peak_allocated"])
        check("merged rank %d reserved at peak" % rt["rank"], top["args"]["reserved"], m["reserved_at_peak"])
        if abs(top["ts"] * 1000 - m["peak_ref_clock_ns"]) > 5000:
            failures.append("merged rank %d: peak at %s us, truth %d ns" % (rt["rank"], top["ts"],
                                                                          m["peak_ref_clock_ns"]))


def by_rank(rep):
    return {r["rank"]: r for r in rep["memory"]["ranks"]}


def dp_case(exe, py, work):
    out = os.path.join(work, "dp")
    truth = gen(py, out, ["--kind", "dp", "--ranks", "4", "--steps", "6", "--mem-leak-rank", "2"])
    o = os.path.join(work, "dp-out")
    p = run(exe, ["--merged-format", "json", "--no-html", "-o", o, out])
    if p.returncode:
        failures.append("dp: exit %d %s" % (p.returncode, p.stderr))
        return
    rep = report(o)
    merged_counters(o, truth)
    got = by_rank(rep)
    peaks = []
    for rt in truth["ranks"]:
        m = rt["memory"]
        devs = got[rt["rank"]]["devices"]
        check("dp rank %d devices" % rt["rank"], len(devs), 1)
        compare_rank("dp rank %d" % rt["rank"], devs[0], m)
        peaks.append((m["peak_allocated"], -rt["rank"]))
    s = rep["memory"]["summary"]
    check("dp top_rank", s["top_rank"], -max(peaks)[1])
    check("dp max_peak", s["max_peak"], max(peaks)[0])
    v = sorted(p for p, _ in peaks)
    med = (v[1] + v[2]) / 2
    check("dp median_peak", Decimal(s["median_peak"]), Decimal(med))
    check("dp max_over_median", s["max_over_median"], Decimal("%.3f" % (max(v) / med)))
    if "rank 2 GPU 2: allocated at step end grows on every step after warm-up, +16.00 MiB per step (5 steps)" \
            not in p.stdout:
        failures.append("dp: the terminal does not name the leaking rank:\n" + p.stdout)
    lines = p.stdout.split("\nmemory:")[1].split("\n\n")[0].count("\n") + 1
    if lines > 4:
        failures.append("dp: the terminal's memory section has %d lines" % lines)
    return out


def pp_case(exe, py, work):
    out = os.path.join(work, "pp")
    truth = gen(py, out, ["--kind", "pp", "--ranks", "4", "--pp-stages", "2", "--chunks", "5"])
    o = os.path.join(work, "pp-out")
    p = run(exe, ["--no-merge", "--no-html", "--pp-stages", "0-1,2-3", "-o", o, out])
    if p.returncode:
        failures.append("pp: exit %d %s" % (p.returncode, p.stderr))
        return
    rep = report(o)
    got = by_rank(rep)
    for rt in truth["ranks"]:
        compare_rank("pp rank %d" % rt["rank"], got[rt["rank"]]["devices"][0], rt["memory"])
    st = rep["memory"]["summary"]["stages"]
    for s, ranks in enumerate(([0, 1], [2, 3])):
        pk = max((truth["ranks"][r]["memory"]["peak_allocated"], -r) for r in ranks)
        check("pp stage %d max_peak" % s, st[s]["max_peak"], pk[0])
        check("pp stage %d top_rank" % s, st[s]["top_rank"], -pk[1])
        check("pp stage %d ranks" % s, st[s]["ranks"], 2)
    if st[0]["max_peak"] <= st[1]["max_peak"]:
        failures.append("pp: stage 0 should hold the most memory: %s" % st)
    check("pp top in stage 0", rep["memory"]["summary"]["top_rank"] in (0, 1), True)


def broken_case(exe, dp_dir, work):
    """Rank 0's trace with its [memory] events damaged, alone."""
    src = os.path.join(dp_dir, "rank-0.json")
    with open(src) as f:
        d = json.load(f, parse_float=Decimal)
    ev = d["traceEvents"]
    mem = [i for i, e in enumerate(ev) if e.get("name") == "[memory]"]
    neg, miss, swap_a, swap_b, nogpu = mem[3], mem[5], mem[7], mem[8], mem[9]
    ev[neg]["args"]["Total Allocated"] = -1
    del ev[miss]["args"]["Total Allocated"]
    # the later event of a pair on one thread gets an earlier ts than the one before it in the file
    ev[swap_a]["ts"], ev[swap_b]["ts"] = ev[swap_b]["ts"], ev[swap_a]["ts"]
    ev[nogpu]["args"]["Device Id"] = 7
    bdir = os.path.join(work, "broken")
    os.makedirs(bdir)
    path = os.path.join(bdir, "rank-0.json")

    with open(path, "w") as f:
        f.write(dumps_exact(d))
    o = os.path.join(work, "broken-out")
    p = run(exe, ["--no-merge", "--no-html", "-o", o, path])
    if p.returncode:
        failures.append("broken: exit %d %s" % (p.returncode, p.stderr))
        return
    want = {
        "negative": (1, neg, "with a negative"),
        "missing": (1, miss, "without \"Total Allocated\""),
        "order": (1, swap_b, "earlier than the memory event before it on the same thread"),
        "nogpu": (1, nogpu, "of a GPU device id that no GPU activity of the trace has"),
    }
    for k, (count, idx, text) in want.items():
        line = [l for l in p.stdout.splitlines() if text in l]
        if len(line) != 1:
            failures.append("broken %s: expected one warning with %r:\n%s" % (k, text, p.stdout))
            continue
        exp = "%s: %d [memory] event" % (path, count)
        if exp not in line[0] or ("traceEvents[%d]" % idx) not in line[0]:
            failures.append("broken %s: %r does not name %s and traceEvents[%d]" % (k, line[0], path, idx))
    rep = report(o)
    iss = rep["memory"]["ranks"][0]["issues"]
    check("broken issues", sorted(iss), ["device_without_gpu_events", "missing_total", "negative_total",
                                         "out_of_order"])
    check("broken first events", [iss[k]["first_event"] for k in ("negative_total", "missing_total",
                                                                 "out_of_order", "device_without_gpu_events")],
          [neg, miss, swap_b, nogpu])


def dumps_exact(o):
    """JSON text with Decimals written as they were read (exact ts)."""
    if isinstance(o, dict):
        return "{" + ", ".join(json.dumps(k) + ": " + dumps_exact(v) for k, v in o.items()) + "}"
    if isinstance(o, list):
        return "[" + ", ".join(dumps_exact(v) for v in o) + "]"
    if isinstance(o, Decimal):
        return str(o)
    return json.dumps(o)


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 64
    os.environ["ASAN_OPTIONS"] = "detect_leaks=0"  # Open MPI's own allocations are not ours
    exe, py, work = sys.argv[1:]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    dp_dir = dp_case(exe, py, work)
    pp_case(exe, py, work)
    if dp_dir:
        broken_case(exe, dp_dir, work)
    for f in failures:
        print("FAIL " + f, file=sys.stderr)
    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
