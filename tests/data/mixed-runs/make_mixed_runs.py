#!/usr/bin/env python3
"""Write the CLI fixtures of traces from different runs (issue 19, item 1):
two ranks each of two generated jobs that differ only in their seed, in the
old format (no Comms Id, so their collectives pair up by stream order).

  drift/  ranks 0-1 of an 8-rank job (seed 1) and ranks 2-3 of another
          (seed 2): the fit needs a drift of thousands of ppm
  sizes/  the same with 4-rank jobs: no significant drift, but ranks 2-3
          disagree with 0-1 on the size of 11 of 24 collectives and the
          fit's residual p99 is 144 us

Usage: make_mixed_runs.py  (rewrites drift/ and sizes/ beside this file)"""
import os
import shutil
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
gen = os.path.join(here, "..", "..", "..", "scripts", "gen_traces.py")

with tempfile.TemporaryDirectory() as tmp:
    for name, ranks in (("drift", "8"), ("sizes", "4")):
        out = os.path.join(here, name)
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        for seed in ("1", "2"):
            subprocess.run([sys.executable, gen, "--format", "old", "--ranks", ranks, "--seed", seed, "--indent", "0", "--gzip",
                            "--quiet", "--out", os.path.join(tmp, name + seed)], check=True)
        for seed, r in (("1", 0), ("1", 1), ("2", 2), ("2", 3)):
            shutil.copy(os.path.join(tmp, name + seed, "rank-%d.json.gz" % r), out)
