#!/usr/bin/env python3
"""ctest host_wait: the "host wait" of every output against the traces read
here (issue 39 papercut: the worst stream of a rank was the NCCL stream
idling between collectives, so every GPU-bound data-parallel job read
38-46 % "host wait" while its compute stream waited about 1 %; report.html
showed the sum over streams in ms, 1763.55 ms on gloo4's 220.16 ms span).

Host wait of a stream (HTA's rule, as docs/FORMATS.md describes it): a gap
between its activities whose next activity's launch call started after the
stream's latest end. The rank's figure: the largest among the streams that
run anything but NCCL kernels, as a share of the span (the first GPU
activity's start to the last one's end). Checked on sample_traces/dp8 (a
GPU-bound job, NCCL on its own stream) and tests/data/real/gloo4 (gloo:
no NCCL stream), in report.json (idle[].host_wait_pct), the terminal's
column and report.html's table.

Usage: check_host_wait.py MERGETRACE SOURCE_DIR WORK_DIR"""

import glob
import gzip
import json
import os
import re
import shutil
import subprocess
import sys

GPU = ("kernel", "gpu_memcpy", "gpu_memset")


def load(path):
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rt") as f:
        return json.load(f)


def host_wait_pct(doc):
    ev = doc["traceEvents"]
    launch = {e["args"]["correlation"]: e["ts"] for e in ev
              if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
    acts = [e for e in ev if e.get("cat") in GPU and e.get("ph") == "X"]
    first = min(e["ts"] for e in acts)
    last = max(e["ts"] + e["dur"] for e in acts)
    streams = {}
    for e in acts:
        streams.setdefault((e["pid"], e["tid"]), []).append(e)
    best = {True: 0.0, False: 0.0}  # by: runs work other than NCCL
    for xs in streams.values():
        xs.sort(key=lambda e: (e["ts"], e["ts"] + e["dur"]))
        work = any(not (e["cat"] == "kernel" and "nccl" in e["name"].lower()) for e in xs)
        end, hw = xs[0]["ts"] + xs[0]["dur"], 0.0
        for e in xs[1:]:
            if e["ts"] > end:
                la = launch.get(e["args"].get("correlation"))
                if la is not None and la > end:
                    hw += e["ts"] - end
            end = max(end, e["ts"] + e["dur"])
        best[work] = max(best[work], hw)
    hw = best[True] if any(
        any(not (e["cat"] == "kernel" and "nccl" in e["name"].lower()) for e in xs) for xs in streams.values()) \
        else best[False]
    return 100.0 * hw / (last - first), 100.0 * max(best.values()) / (last - first)


def main():
    mt, src, work = sys.argv[1:4]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    bad = []
    for rel, pattern in (("sample_traces/dp8", "rank-*.json"), ("tests/data/real/gloo4", "rank-*.pt.trace.json.gz")):
        d = os.path.join(src, rel)
        out = os.path.join(work, os.path.basename(rel))
        p = subprocess.run([mt, "--no-merge", "--color=never", "-o", out, d], capture_output=True, text=True)
        if p.returncode:
            bad.append("%s: exit %d %s" % (rel, p.returncode, p.stderr))
            continue
        with open(os.path.join(out, "report.json")) as f:
            rep = json.load(f)
        with open(os.path.join(out, "report.html")) as f:
            html = f.read()
        idle = {x["rank"]: x for x in rep["idle"]}
        term = {}
        for line in p.stdout.splitlines():
            m = re.match(r"\s+(\d+)\s+[\d.]+\s+(?:\S+\s+){5}([\d.]+)%", line)
            if m and "GPU time" not in line:
                term.setdefault(int(m.group(1)), float(m.group(2)))
        worst_any = 0.0
        for f in sorted(glob.glob(os.path.join(d, pattern))):
            doc = load(f)
            r = doc["distributedInfo"]["rank"]
            want, any_stream = host_wait_pct(doc)
            worst_any = max(worst_any, any_stream)
            got = idle.get(r, {}).get("host_wait_pct")
            if got is None or abs(got - want) > 0.05:
                bad.append("%s rank %d: report.json host_wait_pct %s, traces say %.2f" % (rel, r, got, want))
            if r not in term or abs(term[r] - want) > 0.06:
                bad.append("%s rank %d: terminal host wait %s %%, traces say %.2f" % (rel, r, term.get(r), want))
            cell = '<td class="n" data-v="%.1f">%.1f</td></tr>' % (want, want)
            if cell not in html:
                bad.append("%s rank %d: report.html's GPU-time table has no host wait %.1f %%" % (rel, r, want))
        print("%s: host wait %s %% of the span (the worst stream of all, NCCL's too: %.1f %%)"
              % (rel, ", ".join("%d: %.2f" % (r, idle[r]["host_wait_pct"]) for r in sorted(idle)
                                if "host_wait_pct" in idle[r]), worst_any))
    for b in bad:
        print("FAIL:", b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
