#!/usr/bin/env python3
"""ctest gen_whatif_stages: the ideal what-if's stages on a Kineto pipeline.

The generator writes a DP 2 x PP 4 pipeline whose stage 1 has 5 ms of GPU
work per chunk against 3 ms for the others (--stage-us 3000,5000,3000).
The slow stage is the generator's truth: the one with the largest mean
busy time per chunk (truth.json pipeline.stage_busy_ns, measured on its
own schedule). Checked in report.json steps.ideal:
  - by_stage has the four stages and blamed_stage is the truth's slow
    stage (the largest S);
  - workers are the two data-parallel indices (0, 1), not the 8 ranks;
  - m_s exists for the last stage (3) and m_w names a rank of the slow
    stage, with worker = its place in the stage;
  - heat is 2 x 4 with heat[w][s] = min(S_worker w, S_stage s);
and report.html has the "Ideal what-if" heat map with the slow stage's S.
Standard library only. Exit 0 pass, 1 fail."""

import argparse
import json
import os
import subprocess
import sys

ARGS = ["--kind", "pp", "--ranks", "8", "--pp-stages", "4", "--stage-us", "3000,5000,3000", "--seed", "3"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gen", required=True)
    ap.add_argument("--mergetrace", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    d = os.path.join(a.out, "pp-slow1")
    o = os.path.join(a.out, "pp-slow1-out")
    subprocess.run([sys.executable, a.gen, "--out", d, "--quiet"] + ARGS, check=True)
    subprocess.run([a.mergetrace, d, "-o", o, "-q"], check=True)
    truth = json.load(open(os.path.join(d, "truth.json")))
    busy = [s["mean"] for s in truth["pipeline"]["stage_busy_ns"]]
    slow = busy.index(max(busy))
    stages = truth["pipeline"]["stages"]
    rep = json.load(open(os.path.join(o, "report.json")))
    i = rep["steps"]["ideal"]
    errors = []

    def check(ok, what):
        print(("ok   " if ok else "FAIL ") + what)
        if not ok:
            errors.append(what)

    by_stage = {s["stage"]: s["s"] for s in i["by_stage"]}
    by_worker = {w["worker"]: w["s"] for w in i["by_worker"]}
    check(sorted(by_stage) == [0, 1, 2, 3], "four stages: %s" % sorted(by_stage))
    check(i.get("blamed_stage") == slow, "blamed stage %s = the generator's slow stage %d (busy %s ns)" %
          (i.get("blamed_stage"), slow, busy))
    check(bool(by_stage) and max(by_stage, key=by_stage.get) == slow, "the slow stage has the largest S (%s)" % by_stage)
    check(sorted(by_worker) == [0, 1], "workers are the data-parallel indices: %s" % sorted(by_worker))
    check("m_s" in i and i["m_s"]["stage"] == 3, "M_S of the last stage: %s" % i.get("m_s"))
    mw = i.get("m_w", {})
    check(mw.get("stage") == slow and mw.get("rank") in stages[slow] and
          stages[slow].index(mw.get("rank")) == mw.get("worker"), "M_W names a rank of the slow stage: %s" % mw)
    heat = i.get("heat", [])
    ok = len(heat) == 2 and all(len(r) == 4 for r in heat)
    for w in range(2 if ok else 0):
        for s in range(4):
            ok &= abs(heat[w][s] - min(by_worker[w], by_stage[s])) <= 1e-4
    check(ok, "heat = min(S_worker, S_stage), 2 x 4")
    html = open(os.path.join(o, "report.html"), encoding="utf-8").read()
    check('<section id="whatif">' in html and 'class="whatif-heat"' in html, "report.html has the heat map")
    check(">%.4f</td>" % by_stage[slow] in html, "report.html shows the slow stage's S %.4f" % by_stage[slow])
    if errors:
        print("%d check(s) failed" % len(errors))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
