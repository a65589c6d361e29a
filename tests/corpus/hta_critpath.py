#!/usr/bin/env python3
"""ctest hta_critpath: mergetrace's critical path against HTA's own expected
output on HTA's single-rank critical-path test trace (corpus:
facebookresearch__HolisticTraceAnalysis/tests/data/critical_path/end_to_end/
simple_add: input/trace.json.gz and HTA's output/overlaid_critical_path_trace
.json.gz, which marks every event on its path with args.critical and adds
its edges as cat "critical_path" flows).

HTA's path lies inside the "[param|cuda]" range; mergetrace computes a path
per ProfilerStep, so the test runs it on a copy of the input with that one
range renamed "ProfilerStep#0" (nothing else changed). Every number below
is read from HTA's files; docs/whatif.md "HTA's critical path" explains each
difference:
  - the memcpy time on the path equals HTA's critical memcpys' durations;
  - GPU work HTA reaches only through a sync edge whose sync call began
    after that work had ended (a CPU-bound sync: the host did not wait) is
    not on ours; all other GPU time on HTA's path is on ours, so ours =
    HTA's GPU time - that work;
  - our path tiles the step range, HTA's runs from its first critical
    op's start to its last critical op's end: ours = HTA's span + the host
    time before its first and after its last op.
Standard library only. Exit 0 pass, 1 fail, 77 skip (no corpus)."""

import argparse
import gzip
import json
import os
import subprocess
import sys

REL = "facebookresearch__HolisticTraceAnalysis/tests/data/critical_path/end_to_end/simple_add"
RANGE = "[param|cuda]"
GPU = ("kernel", "gpu_memcpy", "gpu_memset")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--mergetrace", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    src = os.path.join(a.corpus, REL)
    if not os.path.isdir(src):
        print("skip: no %s" % src)
        return 77
    inp = json.load(gzip.open(os.path.join(src, "input", "trace.json.gz")))
    hta = json.load(gzip.open(os.path.join(src, "output", "overlaid_critical_path_trace.json.gz")))["traceEvents"]
    rng = [e for e in inp["traceEvents"] if e.get("cat") == "user_annotation" and e.get("name") == RANGE]
    if len(rng) != 1:
        print("FAIL: %d %s ranges in the input" % (len(rng), RANGE))
        return 1
    rng[0]["name"] = "ProfilerStep#0"
    d = os.path.join(a.out, "trace")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "rank-0.json"), "w") as f:
        json.dump(inp, f)
    o = os.path.join(a.out, "out")
    r = subprocess.run([a.mergetrace, "-q", "--no-merge", "--no-html", "-o", o, d], capture_output=True, text=True,
                       env=dict(os.environ, ASAN_OPTIONS="detect_leaks=0"))
    if r.returncode:
        print("FAIL: mergetrace exit %d: %s" % (r.returncode, r.stderr.strip()))
        return 1
    steps = json.load(open(os.path.join(o, "report.json")))["steps"]
    errors = []

    # HTA's path: its critical events and edges
    crit = [e for e in hta if e.get("ph") == "X" and isinstance(e.get("args"), dict)
            and e["args"].get("critical") == 1]
    gpu = [e for e in crit if e.get("cat") in GPU]
    cpu = [e for e in crit if e.get("cat") not in GPU]
    flows = {}
    for e in hta:
        if e.get("cat") == "critical_path":
            flows.setdefault(e["id"], {})[e["ph"]] = e
    # GPU work reached only through a sync edge whose sync call started
    # after the GPU work feeding it ended (CPU-bound: the host never waited)
    sync_edges = sorted((x["s"]["ts"], x["f"]) for x in flows.values() if x["s"]["args"]["type"].endswith("sync_dependency"))
    hta_only = []
    prev = None
    for gts, f in sync_edges:
        call = [e for e in cpu if e["pid"] == f["pid"] and e["tid"] == f["tid"] and e["ts"] < f["ts"] <= e["ts"] + e["dur"]]
        chain = [e for e in gpu if (prev is None or e["ts"] > prev) and e["ts"] <= gts]
        if call and chain and call[0]["ts"] > max(e["ts"] + e["dur"] for e in chain):
            hta_only += chain
            print("HTA: sync %s at %d us starts %d us after the GPU work it links (%d activities, %d us) ended"
                  % (call[0]["name"], call[0]["ts"], call[0]["ts"] - gts, len(chain), sum(e["dur"] for e in chain)))
        prev = gts
    hta_gpu = sum(e["dur"] for e in gpu)
    hta_memcpy = sum(e["dur"] for e in gpu if e["cat"] == "gpu_memcpy")
    only = sum(e["dur"] for e in hta_only)
    lo = min(e["ts"] for e in crit)
    hi = max(e["ts"] + e["dur"] for e in crit)
    lead = lo - rng[0]["ts"]
    tail = rng[0]["ts"] + rng[0]["dur"] - hi
    if not steps or len(steps["per_step"]) != 1:
        print("FAIL: steps %s" % (steps and steps["per_step"]))
        return 1
    s = steps["per_step"][0]
    p = s["path_us"]
    print("mergetrace: step %.3f us, path by kind %s" % (s["time_us"], p))
    print("HTA: span %d us (+ %d us host before its first op, %d us after its last = %d), GPU on the path %d us "
          "(memcpy %d us, %d activities), of which %d us only through a CPU-bound sync"
          % (hi - lo, lead, tail, hi - lo + lead + tail, hta_gpu, hta_memcpy, len(gpu), only))
    if abs(s["time_us"] - (hi - lo + lead + tail)) > 0.001:
        errors.append("path length %.3f us, HTA's span + lead + tail %d us" % (s["time_us"], hi - lo + lead + tail))
    if abs(p["memory"] - hta_memcpy - sum(e["dur"] for e in gpu if e["cat"] == "gpu_memset" and e not in hta_only)) > 0.001:
        errors.append("memory on the path %.3f us, HTA's memcpys %d us" % (p["memory"], hta_memcpy))
    if abs(p["compute"] + p["memory"] - (hta_gpu - only)) > 0.001:
        errors.append("GPU on the path %.3f us, HTA's %d us - %d us" % (p["compute"] + p["memory"], hta_gpu, only))
    if not hta_only or len(hta_only) == len(gpu):
        errors.append("expected some, not all, of HTA's GPU work behind a CPU-bound sync: %d of %d"
                      % (len(hta_only), len(gpu)))
    if p["comm"] or p["idle"]:
        errors.append("comm %.3f / idle %.3f on a single-stream path without collectives" % (p["comm"], p["idle"]))
    for e in errors:
        print("FAIL " + e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
