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
  - root causes: on every job at least 95 % of the waiting attributed, the
    kinds summing to the attributed time, each cause's kind the class of
    the generator's activity of that name; on the data-parallel jobs the
    waiting itself equals the generator's (truth.json collectives: last
    true arrival - each participant's, over the used steps) within 1 %; on
    the straggler jobs (truth.json "straggler") the first cause is that
    rank and a forward kernel (the injected phase), and the first cause by
    annotation is that rank's truth.json "straggler_phase" ("## forward
    ##", kind compute) holding the injection within 20 %, on the pipelines a
    compute kernel of the stage with the largest busy time (truth.json
    pipeline.stage_busy_ns);
  - what-if "stage 1 10 % faster" on the pipeline equals the period p50 the
    generator measured (truth.json pipeline.period_ns) on the same pipeline
    written with stage 1 10 % faster, within 3 %;
  - what-if "no host launch gaps" on a job whose host works 400 us before
    every launch (--host-gap-us) equals the measured p50 step time of the
    same job without it within 2 %;
  - what-if "kernel:ncclDevKernel_AllReduce*=1/3" on a job whose allreduce
    transfers take 3 times as long (--slow-comm 3) equals the measured p50
    step time of the same job without it within 2 %;
  - on pipelines every what-if replays the whole run: on pp-4stage with
    send/recv transfers 2 x as long (--slow-comm 2) "kernel:
    ncclDevKernel_SendRecv*=0.5", and on it with 300 us of host work before
    every launch (--host-gap-us 300) "no host launch gaps", project the
    period p50 of pp-4stage the generator measured (truth.json
    pipeline.period_ns) within 3 % and its step p50 (truth step_times)
    within 2 %.
report.html of the straggler jobs (4 ranks, and 32 ranks with the straggler
at rank 29) and of the pipeline, parsed with html.parser:
  - a strip of the median and of the slowest used step: the truth's time of
    the step drawn is within 0.5 % of the truth's p50 (resp. max) of the
    used steps, and the strip's time within 0.5 % of the truth's time of
    that step;
  - the generator's straggler is the first row and holds most of the path
    lane; the path lane tiles the step (contiguous from 0 to the step time);
    the strip's critical path by kind equals the truth's path of that step
    within 0.1 % of the step; at most 24 rows (the 32-rank job: 24 of 32);
  - the what-if table: straggler_at_median projected p50 within 2 % of the
    truth's p50 of the twin job without the straggler, its measured p50
    within 0.5 % of the truth's p50, every number equal to report.json's
    what_if; "pattern" not run with its reason; the pipeline's stage 1 row
    within 3 % of the faster pipeline's truth period;
  - the root causes: the sentence's attributed share, the by-kind table and
    the tables of causes by activity and by annotation equal report.json's
    root_causes row by row (the % of wait within 0.005 of us / wait_us);
    on the straggler jobs the first row of each is the generator's
    injection (truth.json "straggler": its rank, kind compute, and on
    dp-straggler a forward kernel; "straggler_phase": that rank's
    annotation, kind compute).
The ideal what-if of the straggler jobs: by_worker holds all 4 workers, or
16 of 32 ("workers": 32), the straggler among them with the largest S, and
M_W names it.
Standard library only. Exit 0 pass, 1 fail, 77 skip."""

import argparse
import html.parser
import json
import os
import subprocess
import sys

JOBS = {
    "dp-straggler": ["--kind", "dp", "--ranks", "4", "--steps", "8", "--seed", "21", "--straggler", "2",
                     "--straggler-delay-us", "400"],
    "dp-plain": ["--kind", "dp", "--ranks", "4", "--steps", "8", "--seed", "21"],
    # another straggler: 8 ranks, rank 5 250 us late in steps 12-15 only
    "dp-straggler-r5": ["--kind", "dp", "--ranks", "8", "--steps", "8", "--seed", "5", "--straggler", "5",
                        "--straggler-delay-us", "250", "--straggler-steps", "12-15"],
    # twins of dp-plain: host-bound launches; allreduce transfers 3 x as long
    "dp-hostgap": ["--kind", "dp", "--ranks", "4", "--steps", "8", "--seed", "21", "--host-gap-us", "400"],
    "dp-slowcomm": ["--kind", "dp", "--ranks", "4", "--steps", "8", "--seed", "21", "--slow-comm", "3"],
    "pp-4stage": ["--kind", "pp", "--ranks", "4", "--pp-stages", "4", "--chunks", "6", "--seed", "16",
                  "--ranks-per-node", "1", "--stage-us", "2000,3500,2500,3000"],
    # the same pipeline with stage 1 (the slowest) 10 % faster
    "pp-4stage-fast1": ["--kind", "pp", "--ranks", "4", "--pp-stages", "4", "--chunks", "6", "--seed", "16",
                        "--ranks-per-node", "1", "--stage-us", "2000,3150,2500,3000"],
    # twins of pp-4stage: send/recv transfers 2 x as long; host work before every launch
    "pp-slowcomm": ["--kind", "pp", "--ranks", "4", "--pp-stages", "4", "--chunks", "6", "--seed", "16",
                    "--ranks-per-node", "1", "--stage-us", "2000,3500,2500,3000", "--slow-comm", "2"],
    "pp-hostgap": ["--kind", "pp", "--ranks", "4", "--pp-stages", "4", "--chunks", "6", "--seed", "16",
                   "--ranks-per-node", "1", "--stage-us", "2000,3500,2500,3000", "--host-gap-us", "300"],
}
# more ranks than a strip shows (critpath.h MT_CP_STRIP_RANKS = 24) and its twin
DP32 = {"dp32-straggler": ["--kind", "dp", "--ranks", "32", "--steps", "5", "--seed", "5", "--straggler", "29",
                           "--straggler-delay-us", "400"],
        "dp32-plain": ["--kind", "dp", "--ranks", "32", "--steps", "5", "--seed", "5"]}
# extra mergetrace arguments per job
MT_ARGS = {"dp-slowcomm": ["--what-if", "kernel:ncclDevKernel_AllReduce*=0.333333"],
           "pp-slowcomm": ["--what-if", "kernel:ncclDevKernel_SendRecv*=0.5"]}
FORWARD = ("sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n", "void at::native::vectorized_elementwise_kernel<4, "
           "at::native::(anonymous namespace)::clamp_min_functor")


def pct(v, p):
    s = sorted(v)
    k = -(-p * len(s) // 100) - 1
    return s[max(0, k)]


def truth_wait_ns(truth):
    """All waiting in the collectives of the used steps (after the first),
    from the generator's true arrivals; a collective belongs to the last
    step started by its last arrival (data-parallel steps follow each
    other)."""
    starts = [s["start_ns"] for s in truth["step_times"]]
    total = 0
    for c in truth["collectives"]:
        ts = list(c["true_start_ns"].values())
        last = max(ts)
        if sum(1 for x in starts if x <= last) <= 1:
            continue
        total += sum(last - x for x in ts)
    return total


def root_cause_checks(name, truth, got, errors):
    rc = got["root_causes"]
    if rc["attributed_pct"] < 95.0:
        errors.append("%s: root causes attribute %.2f %% of the waiting" % (name, rc["attributed_pct"]))
    if abs(sum(rc["by_kind_us"].values()) - rc["attributed_us"]) > 0.001 * len(rc["by_kind_us"]):
        errors.append("%s: root-cause kinds %s do not sum to %.3f" % (name, rc["by_kind_us"], rc["attributed_us"]))
    causes = rc["causes"]
    top = causes[0] if causes else {}
    # each cause's kind from the class of what the generator wrote under
    # that name (gpu_memcpy / gpu_memset events, NCCL kernels, other kernels)
    for c in causes:
        n = c["name"]
        want = (("host", "idle") if not n else ("memory",) if n.startswith(("Memcpy", "Memset"))
                else ("comm_transfer", "comm_wait") if n.startswith("nccl") else ("compute",))
        if c["kind"] not in want:
            errors.append("%s: cause %s of kind %s, expected %s" % (name, n[:60], c["kind"], "/".join(want)))
    print("%s: waited %.3f us, attributed %.2f %% (short %.3f, long %.3f), by kind %s; first cause %s" %
          (name, rc["wait_us"], rc["attributed_pct"], rc["short_term_us"], rc["long_term_us"], rc["by_kind_us"],
           {k: (v[:40] if k == "name" else v) for k, v in top.items()}))
    if truth["kind"] == "dp":
        want = truth_wait_ns(truth) / 1000.0
        if abs(rc["wait_us"] - want) > 0.01 * want:
            errors.append("%s: waited %.3f us, truth %.3f us" % (name, rc["wait_us"], want))
    if truth.get("straggler") is not None:
        strag = truth["straggler"]
        if top.get("rank") != strag or top.get("kind") != "compute" or not top.get("name", "").startswith(FORWARD):
            errors.append("%s: first root cause %s, injected: rank %d forward kernels" % (name, top, strag))
        # what the injection made the others wait: every other rank waits
        # the delay at each collective of the straggler's used steps
        steps = [s["step"] for s in truth["step_times"]][1:]
        if truth.get("straggler_steps"):
            a, b = (int(x) for x in truth["straggler_steps"].split("-"))
            steps = [x for x in steps if a <= x <= b]
        per_step = len(truth["collectives"]) // len(truth["step_times"])
        injected = (truth["world_size"] - 1) * per_step * truth["straggler_delay_us"] * len(steps)
        fwd = sum(c["us"] for c in causes if c["rank"] == strag and c["name"].startswith(FORWARD))
        print("%s: charged to rank %d's forward kernels %.3f us of the %.3f us the injection caused (%.1f %%)" %
              (name, strag, fwd, injected, 100.0 * fwd / injected))
        if abs(fwd - injected) > 0.2 * injected:
            errors.append("%s: rank %d's forward kernels charged %.3f us, injected %.3f us" % (name, strag, fwd, injected))
        # by annotation: the first is the injected phase of that rank, and
        # it holds the injection (its kernels and whatever else ran in it)
        ann = rc["by_annotation"]
        atop = ann[0] if ann else {}
        phase = truth["straggler_phase"]
        print("%s: first annotation cause %s; injected: rank %d %s" % (name, atop, strag, phase))
        if atop.get("rank") != strag or atop.get("annotation") != phase or atop.get("kind") != "compute":
            errors.append("%s: first annotation cause %s, injected: rank %d %s (compute)" % (name, atop, strag, phase))
        elif abs(atop["us"] - injected) > 0.2 * injected or atop["us"] < fwd - 0.001 * len(causes):
            errors.append("%s: rank %d %s charged %.3f us, injected %.3f us, its forward kernels %.3f us" %
                          (name, strag, phase, atop["us"], injected, fwd))
        if abs(atop.get("pct", 0) - 100.0 * atop.get("us", 0) / rc["wait_us"]) > 0.01:
            errors.append("%s: annotation pct %s of %.3f us waited" % (name, atop, rc["wait_us"]))
    if truth.get("pipeline"):
        busy = [b["p50"] for b in truth["pipeline"]["stage_busy_ns"]]
        slow = truth["pipeline"]["stages"][busy.index(max(busy))]
        if top.get("rank") not in slow or top.get("kind") != "compute":
            errors.append("%s: first root cause %s, slowest stage's ranks %s" % (name, top, slow))


def check_steps(name, truth, got, errors):
    """report.json "steps" of one job against its truth.json: step times,
    replay, the critical path by kind and its communication share, the
    ranks' shares, root causes (root_cause_checks). gen_merged runs it on a
    merged trace read back."""
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
    root_cause_checks(name, truth, got, errors)
    print("%s: p50 %.3f us p99 %.3f us (truth %.3f, %.3f), replay error max %.4f %%, comm on path %.2f %%, "
          "attributed %.1f %%" % (name, got["p50_us"], got["p99_us"], pct(tt, 50) / 1000.0, pct(tt, 99) / 1000.0,
                                  100 * errs[-1], cp["comm_pct"], got["root_causes"]["attributed_pct"]))


STRAGGLER = {"dp-straggler": 2, "dp32-straggler": 29}
HTML_JOBS = ("dp-straggler", "dp32-straggler", "pp-4stage")
STRIP_RANKS = 24


class StepsPage(html.parser.HTMLParser):
    """The strips and the what-if table of report.html's steps section."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.strips = []    # {step, why, time_us, path: [(rank, kind, a, b)], rows: [rank], kinds: {kind: us}}
        self.whatif = {}    # scenario (or "stage:N") -> cell texts
        self.cur = None     # the strip being read
        self.cell = None    # (dict to fill, key) while in a td
        self.tr = None
        self.in_whatif = False
        self.text = []
        self.rc = {}        # "rckind", "rc-causes", "rc-annot" -> rows of cell texts; "sentence" -> text
        self.rc_table = None
        self.in_rc_p = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        cls = a.get("class", "")
        if tag == "figure" and cls == "strip":
            self.cur = {"step": int(a["data-step"]), "why": a["data-why"], "time_us": float(a["data-time-us"]),
                        "path": [], "rows": [], "kinds": {}}
            self.strips.append(self.cur)
        elif self.cur is not None and tag == "rect" and cls == "cp":
            self.cur["path"].append((int(a["data-rank"]), a["data-kind"], float(a["data-a-us"]),
                                     float(a["data-b-us"])))
        elif self.cur is not None and tag == "g" and cls == "row":
            self.cur["rows"].append(int(a["data-rank"]))
        elif self.cur is not None and tag == "td" and "data-kind" in a:
            self.cell = (self.cur["kinds"], a["data-kind"])
            self.text = []
        elif tag == "table" and cls == "whatif":
            self.in_whatif = True
        elif tag == "table" and set(cls.split()) & {"rckind", "rc-causes", "rc-annot"}:
            self.rc_table = self.rc.setdefault((set(cls.split()) & {"rckind", "rc-causes", "rc-annot"}).pop(), [])
        elif self.rc_table is not None and tag == "tr":
            self.tr = []
            self.rc_table.append(self.tr)
        elif tag == "p" and cls == "rc":
            self.in_rc_p = True
        elif self.in_whatif and tag == "tr" and "data-scenario" in a:
            key = a["data-scenario"] + (":" + a["data-stage"] if "data-stage" in a else "")
            self.tr = self.whatif.setdefault(key, [])
        elif self.tr is not None and tag == "td":
            self.text = []
            self.cell = (self.tr, None)

    def handle_endtag(self, tag):
        if tag == "figure":
            self.cur = None
        elif tag == "table":
            self.in_whatif = False
            self.rc_table = None
        elif tag == "p":
            self.in_rc_p = False
        elif tag == "tr":
            self.tr = None
        elif tag == "td" and self.cell:
            box, key = self.cell
            t = "".join(self.text).strip()
            if key is None:
                box.append(t)
            else:
                box[key] = float(t)
            self.cell = None

    def handle_data(self, data):
        if self.cell:
            self.text.append(data)
        if self.in_rc_p:
            self.rc["sentence"] = self.rc.get("sentence", "") + data


def check_html(name, page, truth, got, plain_truth, fast_truth, errors):
    """report.html's steps section of one job against its truth (see the top)."""
    p = StepsPage()
    p.feed(open(page, encoding="utf-8").read())
    used = truth["step_times"][1:]
    tt = [s["time_ns"] for s in used]
    ttime = {s["step"]: s["time_ns"] for s in truth["step_times"]}
    tpath = {c["step"]: c["kind_ns"] for c in truth["critical_path"]}
    whys = [s["why"] for s in p.strips]
    if whys != ["median", "slowest"]:
        errors.append("%s: strips %s, want median and slowest" % (name, whys))
    for st in p.strips:
        want = pct(tt, 50) if st["why"] == "median" else max(tt)
        step_t = ttime.get(st["step"])
        if step_t is None or abs(step_t - want) > 0.005 * want:
            errors.append("%s: %s strip of step %d (truth time %s), truth's %s step time %d ns"
                          % (name, st["why"], st["step"], step_t, st["why"], want))
            continue
        if abs(st["time_us"] * 1000 - step_t) > 0.005 * step_t:
            errors.append("%s: step %d strip time %.3f us, truth %.3f us" % (name, st["step"], st["time_us"],
                                                                             step_t / 1000.0))
        path = st["path"]
        ends = [(a, b) for _, _, a, b in path]
        if not path or ends[0][0] != 0.0 or abs(ends[-1][1] - st["time_us"]) > 0.0005 or any(
                ends[i][0] != ends[i - 1][1] for i in range(1, len(ends))):
            errors.append("%s: step %d path lane does not tile [0, %.3f]: %s" % (name, st["step"], st["time_us"],
                                                                                 ends[:3]))
        by_rank = {}
        for r, _, a, b in path:
            by_rank[r] = by_rank.get(r, 0.0) + b - a
        if name in STRAGGLER:
            sr = STRAGGLER[name]
            if not st["rows"] or st["rows"][0] != sr or by_rank.get(sr, 0.0) < 0.5 * st["time_us"]:
                errors.append("%s: step %d strip rows %s, path by rank %s; the straggler is rank %d"
                              % (name, st["step"], st["rows"][:4], by_rank, sr))
        n_ranks = truth["world_size"]
        if len(st["rows"]) != min(n_ranks, STRIP_RANKS) or len(set(st["rows"])) != len(st["rows"]):
            errors.append("%s: step %d strip has %d rows for %d ranks" % (name, st["step"], len(st["rows"]), n_ranks))
        for k, v in tpath[st["step"]].items():
            if abs(st["kinds"].get(k, -1.0) * 1000 - v) > 0.001 * step_t:
                errors.append("%s: step %d strip %s on the path %s us, truth %.3f us"
                              % (name, st["step"], k, st["kinds"].get(k), v / 1000.0))
        print("%s: %s strip step %d %.3f us (truth %.3f), rows %s, path by rank %s" % (
            name, st["why"], st["step"], st["time_us"], step_t / 1000.0, st["rows"][:4],
            {r: round(v, 3) for r, v in sorted(by_rank.items())}))
    # the what-if table: columns steps, measured, projected, gain, gain %, replay error, status
    wi = {w["scenario"]: w for w in got["what_if"]}
    pipe = "period_what_if" in got
    for sc, w in wi.items():
        row = p.whatif.get(sc)
        # on a pipeline "comm" gives the period only: without waiting a
        # receive does not wait for its sender, the stages drift apart and
        # a step's span grows (critpath.h period_only)
        if (w.get("step_projection") is False) != (pipe and sc == "comm_at_transfer"):
            errors.append("%s: what-if %s step_projection %s on a %s" % (name, sc, w.get("step_projection"),
                                                                          "pipeline" if pipe else "non-pipeline"))
        if w.get("step_projection") is False:
            if "p50_us" in w or "gain_us" in w or w["steps"] != 0 or not row or row[4] != "" \
                    or not row[-1].startswith("step time not projected on a pipeline"):
                errors.append("%s: what-if %s without a step projection: %s, table row %s" % (name, sc, w, row))
            if any(sc in s.get("what_if_us", {}) for s in got["per_step"]):
                errors.append("%s: a step projected by what-if %s" % (name, sc))
        elif not row or int(row[2]) != w["steps"] or float(row[4]) != w["p50_us"] or float(row[5]) != w["gain_us"] \
                or abs(float(row[3]) - (w["p50_us"] + w["gain_us"])) > 0.0005:
            errors.append("%s: what-if table row %s = %s; report.json %s" % (name, sc, row, w))
        if "period_p50_us" in w:  # a pipeline: the period row beside it
            row = p.whatif.get(sc + ":period")
            if not row or float(row[4]) != w["period_p50_us"] or float(row[5]) != w["period_gain_us"] \
                    or abs(float(row[3]) - (w["period_p50_us"] + w["period_gain_us"])) > 0.0005:
                errors.append("%s: what-if table period row %s = %s; report.json %s" % (name, sc, row, w))
    if not p.whatif.get("pattern") or not p.whatif["pattern"][-1].startswith("not run: no --what-if"):
        errors.append("%s: what-if pattern row %s" % (name, p.whatif.get("pattern")))
    if name in STRAGGLER:
        row = p.whatif.get("straggler_at_median")
        want = pct([s["time_ns"] for s in plain_truth["step_times"][1:]], 50) / 1000.0 if plain_truth else None
        if not row or want is None:
            errors.append("%s: no straggler what-if row (%s) or no twin truth" % (name, row))
        else:
            meas, proj = float(row[3]), float(row[4])
            print("%s: what-if table straggler at median %.3f us (twin's truth p50 %.3f us), measured %.3f us "
                  "(truth %.3f us)" % (name, proj, want, meas, pct(tt, 50) / 1000.0))
            if abs(proj - want) > 0.02 * want or abs(meas - pct(tt, 50) / 1000.0) > 0.005 * pct(tt, 50) / 1000.0:
                errors.append("%s: what-if table straggler row %s; twin truth p50 %.3f us" % (name, row, want))
    if fast_truth:
        row = p.whatif.get("stage:1")
        want = fast_truth["pipeline"]["period_ns"]["p50"] / 1000.0
        if not row or abs(float(row[4]) - want) > 0.03 * want:
            errors.append("%s: what-if table stage 1 row %s; the faster pipeline's period %.3f us" % (name, row, want))
        else:
            print("%s: what-if table stage 1 period %s us, the faster pipeline's truth %.3f us" % (name, row[4], want))
    check_html_root_causes(name, p.rc, truth, got["root_causes"], errors)


def check_html_root_causes(name, page, truth, rc, errors):
    """report.html's root causes against report.json's (and the injection)."""
    wait = rc["wait_us"]
    sentence = page.get("sentence", "")
    if "(%.2f %%)" % rc["attributed_pct"] not in sentence:
        errors.append("%s: root-cause sentence %r, attributed %.2f %%" % (name, sentence, rc["attributed_pct"]))
    kinds = [r for r in page.get("rckind", []) if r]
    want = [[k, v, 100.0 * v / rc["attributed_us"] if rc["attributed_us"] else 0.0] for k, v in rc["by_kind_us"].items()]
    if len(kinds) != len(want) or any(r[0] != k or float(r[1]) != v or abs(float(r[2]) - q) > 0.005 + 1e-9
                                      for r, (k, v, q) in zip(kinds, want)):
        errors.append("%s: root-cause kind table %s; report.json %s" % (name, kinds, rc["by_kind_us"]))
    causes = [r for r in page.get("rc-causes", []) if r]
    ok = len(causes) == len(rc["causes"])
    for r, c in zip(causes, rc["causes"]):
        ok = ok and len(r) == 5 and int(r[0]) == c.get("rank") and r[1] == c["kind"] and r[2] == c["name"] and \
            float(r[3]) == c["us"] and abs(float(r[4]) - 100.0 * c["us"] / wait) <= 0.005 + 1e-9
    if not ok:
        errors.append("%s: root-cause table %s; report.json %s" % (name, causes[:3], rc["causes"][:3]))
    ann = [r for r in page.get("rc-annot", []) if r]
    ok = len(ann) == len(rc["by_annotation"])
    for r, c in zip(ann, rc["by_annotation"]):
        ok = ok and len(r) == 5 and int(r[0]) == c["rank"] and r[1] == c["annotation"] and r[2] == c["kind"] and \
            float(r[3]) == c["us"] and float(r[4]) == c["pct"]
    if not ok:
        errors.append("%s: annotation table %s; report.json %s" % (name, ann[:3], rc["by_annotation"][:3]))
    print("%s: html root causes: %d causes, first %s; %d annotations, first %s" %
          (name, len(causes), [x[:60] for x in causes[0]] if causes else None, len(ann), ann[0] if ann else None))
    if truth.get("straggler") is not None:
        strag, phase = truth["straggler"], truth["straggler_phase"]
        top = causes[0] if causes else ["", "", "", "", ""]
        # the forward kernel only where root_cause_checks asks it of report.json: on the 32-rank job the
        # straggler's backward GEMM comes first (seen: 83.4 ms vs 77.8 ms of 182.5 ms waited; the twin
        # without the straggler waits 70.7 ms, charged to GEMMs of several ranks: the generator's noise)
        if top[0] != str(strag) or top[1] != "compute" or (name in JOBS and not top[2].startswith(FORWARD)):
            errors.append("%s: html first root cause %s; injected: rank %d forward kernels" % (name, top, strag))
        top = ann[0] if ann else ["", "", "", "", ""]
        if top[0] != str(strag) or top[1] != phase or top[2] != "compute":
            errors.append("%s: html first annotation cause %s; injected: rank %d %s" % (name, top, strag, phase))


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
        html_arg = [] if name in HTML_JOBS else ["--no-html"]
        r = subprocess.run([a.mergetrace, "-q", "--no-merge"] + html_arg + ["-o", o] + MT_ARGS.get(name, []) + [d],
                           capture_output=True, text=True,
                           env=dict(os.environ, ASAN_OPTIONS="detect_leaks=0"))  # Open MPI's own allocations
        if r.returncode:
            errors.append("%s: exit %d: %s" % (name, r.returncode, r.stderr.strip()))
            continue
        truth = json.load(open(os.path.join(d, "truth.json")))
        got = json.load(open(os.path.join(o, "report.json")))["steps"]
        rep[name] = got
        check_steps(name, truth, got, errors)
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
    # pipeline twins: each what-if replays the whole run (a chunk waits for
    # the previous one), so its projected period and step p50 on the changed
    # pipeline against what the generator measured on pp-4stage (truth.json)
    if "pp-4stage" in rep:
        truth = json.load(open(os.path.join(a.out, "pp-4stage", "truth.json")))
        want_per = truth["pipeline"]["period_ns"]["p50"] / 1000.0
        want_p50 = pct([s["time_ns"] for s in truth["step_times"]][1:], 50) / 1000.0
        for job, scen, what in (("pp-slowcomm", "pattern", "send/recv transfers x 1/2"),
                                ("pp-hostgap", "no_launch_gaps", "no host launch gaps")):
            if job not in rep:
                continue
            wi = {w["scenario"]: w for w in rep[job]["what_if"]}
            if "period_p50_us" not in wi.get(scen, {}):
                errors.append("%s: no period projection for what-if %s: %s" % (job, scen, wi.get(scen)))
                continue
            proj, per = wi[scen]["p50_us"], wi[scen]["period_p50_us"]
            now = rep[job]["period_what_if"]["period_p50_us"]
            print("what-if %s on %s: period %.3f us (measured %.3f), step p50 %.3f us (measured %.3f); "
                  "pp-4stage (truth) period %.3f us (%.3f %%), step p50 %.3f us (%.3f %%)"
                  % (what, job, per, now, proj, rep[job]["p50_us"], want_per, 100 * (per - want_per) / want_per,
                     want_p50, 100 * (proj - want_p50) / want_p50))
            if abs(per - want_per) > 0.03 * want_per:
                errors.append("%s: what-if %s period %.3f vs the twin's %.3f" % (job, scen, per, want_per))
            if abs(proj - want_p50) > 0.02 * want_p50:
                errors.append("%s: what-if %s step p50 %.3f vs the twin's %.3f" % (job, scen, proj, want_p50))
    # more ranks than a strip shows (critpath.h MT_CP_STRIP_RANKS = 24), with its twin; not in JOBS:
    # only the strip and the ideal what-if's bound are checked on it
    for name, args in DP32.items():
        d = os.path.join(a.out, name)
        subprocess.run([sys.executable, a.gen, "--out", d, "--quiet"] + args, check=True)
        if name.endswith("plain"):
            continue
        r = subprocess.run([a.mergetrace, "-q", "--no-merge", "-o", d + "-out", d], capture_output=True, text=True,
                           env=dict(os.environ, ASAN_OPTIONS="detect_leaks=0"))
        if r.returncode:
            errors.append("%s: exit %d: %s" % (name, r.returncode, r.stderr.strip()))
            continue
        rep[name] = json.load(open(os.path.join(d + "-out", "report.json")))["steps"]
    # the ideal what-if replays at most 16 workers (critpath.h MT_CP_IDEAL_WORKERS): the generator's
    # straggler among them, with the largest S, and M_W's rank
    for name, sr in STRAGGLER.items():
        I = rep.get(name, {}).get("ideal")
        if not I:
            errors.append("%s: no ideal what-if" % name)
            continue
        n = json.load(open(os.path.join(a.out, name, "truth.json")))["world_size"]
        ws = [w["worker"] for w in I["by_worker"]]
        top = max(I["by_worker"], key=lambda w: w["s"])["worker"] if ws else None
        print("%s: ideal what-if by_worker %d of %s workers, largest S worker %s, M_W rank %s"
              % (name, len(ws), I.get("workers", len(ws)), top, I.get("m_w", {}).get("rank")))
        if len(ws) != min(n, 16) or (n > 16) != ("workers" in I) or I.get("workers", n) != n or top != sr or \
                I.get("m_w", {}).get("rank") != sr:
            errors.append("%s: ideal by_worker %s, workers %s, m_w %s; straggler %d of %d ranks"
                          % (name, ws, I.get("workers"), I.get("m_w"), sr, n))
    for name in HTML_JOBS:
        if name not in rep:
            continue
        truth = json.load(open(os.path.join(a.out, name, "truth.json")))
        plain = json.load(open(os.path.join(a.out, "dp-plain", "truth.json"))) if name == "dp-straggler" else None
        if name == "dp32-straggler":  # its twin: the same job without the straggler
            plain = json.load(open(os.path.join(a.out, "dp32-plain", "truth.json")))
        fast = json.load(open(os.path.join(a.out, "pp-4stage-fast1", "truth.json"))) if name == "pp-4stage" else None
        check_html(name, os.path.join(a.out, name + "-out", "report.html"), truth, rep[name], plain, fast, errors)
    for e in errors:
        print("FAIL " + e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
