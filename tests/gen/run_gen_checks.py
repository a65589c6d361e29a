#!/usr/bin/env python3
"""ctest gen_truth_check: generated jobs against the generator's truth.json.

1. The sample sets and freshly generated jobs (new and old format, gzip,
   shuffled keys, one-line layout, unlinked kernels, pipeline) are checked
   against their truth by tests/gen/check_truth.py, which re-reads the
   traces with Python's json module.
2. mergetrace --json loads each job, and its per-rank numbers (events per
   phase and category, compute / comm kernels, memcpy, memset, sync,
   communication kernels tied to a collective, world size) must equal the
   truth, which the generator computed from its simulation.
Standard library only. Exit 0 pass, 1 fail, 77 skip."""

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))

JOBS = {
    "dp-new-gz": ["--kind", "dp", "--ranks", "4", "--steps", "3", "--seed", "11", "--gzip", "--shuffle-keys",
                  "--indent", "0", "--straggler", "2", "--straggler-delay-us", "200"],
    "dp-old-unlinked": ["--kind", "dp", "--ranks", "4", "--steps", "3", "--seed", "12", "--format", "old",
                        "--unlinked"],
    "pp-serialized": ["--kind", "pp", "--ranks", "4", "--pp-stages", "2", "--pp-mode", "serialized", "--chunks", "5",
                      "--seed", "13"],
    "pp-3stage-kineto-layout": ["--kind", "pp", "--ranks", "6", "--pp-stages", "3", "--chunks", "4", "--seed", "14",
                                "--indent", "2"],
}


def run_mergetrace(mt, d):
    env = dict(os.environ)
    if os.geteuid() == 0:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    env["ASAN_OPTIONS"] = "detect_leaks=0"  # Open MPI's allocations, not ours
    p = subprocess.run([mt, "--json", "--no-progress", d], capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise AssertionError("mergetrace %s: exit %d\n%s" % (d, p.returncode, p.stderr))
    return json.loads(p.stdout)


def compare(name, d, got, truth):
    errors = []

    def eq(what, a, b):
        if a != b:
            errors.append("%s: %s: mergetrace %r, truth %r" % (name, what, a, b))

    eq("world_size", got["world_size"], truth["world_size"])
    eq("ranks loaded", got["ranks"]["loaded"], [r["rank"] for r in truth["ranks"]])
    eq("skipped", [os.path.basename(s["path"]) for s in got["skipped"]], ["truth.json"])
    by_rank = {i["rank"]: i for i in got["inputs"]}
    for tr in truth["ranks"]:
        g = by_rank.get(tr["rank"])
        if g is None:
            errors.append("%s: rank %d missing" % (name, tr["rank"]))
            continue
        r = "rank %d" % tr["rank"]
        eq(r + " events", g["events"], tr["counts"]["events"])
        eq(r + " events by phase", g["ph"], {k: v for k, v in tr["counts"]["ph"].items() if v})
        eq(r + " events by category", g["cat"], {k: v for k, v in tr["counts"]["cat"].items() if v})
        gpu = tr["gpu"]
        eq(r + " compute kernels", g["kernels_compute"], gpu["kernels_compute"])
        eq(r + " comm kernels", g["kernels_comm"], gpu["kernels_comm"])
        eq(r + " memcpy", g["memcpy"], gpu["memcpy"])
        eq(r + " memset", g["memset"], gpu["memset"])
        eq(r + " sync", g["sync"], gpu["sync"])
        eq(r + " comm kernels with their collective", g["comm_with_collective"], tr["collective_kernels"])
        eq(r + " truncated", g["truncated"], False)
        eq(r + " json bytes", g["json_bytes"], tr["bytes"])
    return errors


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gen", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--mergetrace", required=True)
    a = ap.parse_args()
    check = os.path.join(HERE, "check_truth.py")
    os.makedirs(a.out, exist_ok=True)
    dirs = []
    for s in ("dp8", "pp8", "dp4-old"):
        d = os.path.join(ROOT, "sample_traces", s)
        if os.path.isdir(d):
            dirs.append(("sample " + s, d))
    for name, args in JOBS.items():
        d = os.path.join(a.out, name)
        p = subprocess.run([sys.executable, a.gen, "--out", d, "--quiet"] + args, capture_output=True, text=True)
        if p.returncode != 0:
            print("FAIL: generating %s: %s" % (name, p.stderr))
            return 1
        dirs.append((name, d))
    passed = failed = 0
    p = subprocess.run([sys.executable, check] + [d for _, d in dirs], capture_output=True, text=True)
    if p.returncode != 0:
        print("FAIL: check_truth.py:\n" + p.stdout + p.stderr)
        failed += 1
    else:
        passed += 1
    for name, d in dirs:
        with open(os.path.join(d, "truth.json")) as f:
            truth = json.load(f)
        try:
            errs = compare(name, d, run_mergetrace(a.mergetrace, d), truth)
        except AssertionError as e:
            errs = [str(e)]
        if errs:
            failed += 1
            print("FAIL " + name)
            for e in errs[:20]:
                print("  " + e)
        else:
            passed += 1
            print("ok   " + name)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
