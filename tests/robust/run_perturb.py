#!/usr/bin/env python3
"""Reads of memory nothing wrote: mergetrace runs on the same inputs with
freshly allocated memory filled with different bytes (glibc's
MALLOC_PERTURB_; ASan's malloc_fill_byte in sanitizer builds) and must
write the same report.json each time. Inputs: sample_traces/dp8 with every
host synchronisation made zero-length (a zero-length sync is its own
latest earlier sync: the case where the ideal what-if read shifts it had
not written, 2026-11-25), sample_traces pp8 and dp4-old as they are.

Usage: run_perturb.py --mergetrace BIN --samples DIR --work DIR
Exit 0 all the same, 1 a difference or a failed run."""

import argparse
import json
import os
import shutil
import subprocess
import sys


def zero_syncs(src, dst):
    """dst: the ranks of src with every *Synchronize complete event 0 us long; their count."""
    os.makedirs(dst, exist_ok=True)
    n = 0
    for f in sorted(os.listdir(src)):
        if not f.startswith("rank-") or not f.endswith(".json"):
            continue
        with open(os.path.join(src, f)) as fh:
            d = json.load(fh)
        for e in d["traceEvents"]:
            if e.get("ph") == "X" and "Synchronize" in str(e.get("name", "")):
                e["dur"] = 0
                n += 1
        with open(os.path.join(dst, f), "w") as fh:
            json.dump(d, fh)
    return n


def run(bin_, inp, out, fill):
    env = dict(os.environ)
    env.pop("MALLOC_PERTURB_", None)
    if fill is not None:
        env["MALLOC_PERTURB_"] = str(fill)
        extra = "malloc_fill_byte=%d:max_malloc_fill_size=1073741824" % fill
        env["ASAN_OPTIONS"] = env["ASAN_OPTIONS"] + ":" + extra if env.get("ASAN_OPTIONS") else extra
    shutil.rmtree(out, ignore_errors=True)
    p = subprocess.run([bin_, "-q", "--no-merge", "--no-html", "-o", out, inp],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, text=True)
    if p.returncode != 0:
        print("FAIL: %s (fill %s) exited %d: %s" % (inp, fill, p.returncode, p.stderr.strip()[-300:]))
        return None
    with open(os.path.join(out, "report.json"), "rb") as fh:
        return fh.read()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mergetrace", required=True)
    ap.add_argument("--samples", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    shutil.rmtree(a.work, ignore_errors=True)
    z8 = os.path.join(a.work, "dp8-zero-syncs")
    n = zero_syncs(os.path.join(a.samples, "dp8"), z8)
    if n < 8:
        print("FAIL: dp8 holds %d synchronisations, expected one per rank at least" % n)
        return 1
    bad = 0
    for inp in (z8, os.path.join(a.samples, "pp8"), os.path.join(a.samples, "dp4-old")):
        base = run(a.mergetrace, inp, os.path.join(a.work, "out"), None)
        if base is None:
            bad += 1
            continue
        for fill in (165, 90):
            got = run(a.mergetrace, inp, os.path.join(a.work, "out"), fill)
            if got is None:
                bad += 1
            elif got != base:
                print("FAIL: %s: report.json differs with fresh memory filled with %d" % (inp, fill))
                bad += 1
            else:
                print("ok: %s, fill %d" % (os.path.basename(inp), fill))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
