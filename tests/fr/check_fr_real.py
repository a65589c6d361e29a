#!/usr/bin/env python3
"""The program on real Flight Recorder dumps (tests/data/real/frgloo4 and
frnccl1; frgloo4:
recorded by scripts/gpu_capture's frgloo4 part with PyTorch 2.11: four gloo
processes; ranks 0, 1, 3 in the world's all-reduce #6, rank 2 in an
all-reduce of the group of ranks 2 and 3; every collective timed out after
5 s and each rank dumped on demand), against the capture's own truth
(oracle/truth.json) and what the dumps themselves say, read here with
Python's json module:

- exit 4; the hung group is the one whose entries name the truth's group
  (process_group [id, "default_pg"]), at the truth's sequence number and
  collective; the ranks that entered it are the truth's stuck ranks;
- the culprit's last entry is the truth's (its collective, in the group
  whose entries only the culprit and its partners have); the partners that
  are stuck in the hung group wait in each other's groups with the
  culprit: order_mismatch with them as culprits (never_enqueued when none);
- gloo's recorder writes no start or completion and no group ranks (its
  pg_config holds one "" placeholder, with every rank on some dumps and
  none on others): said in report.json (stateless_dumps, groups_from_dumps);
  before this check the program refused the dumps as "of different jobs";
- the pickle and JSON dumps give the same report; -j 2, every entry on
  process 0 (MERGETRACE_FR_ENTRIES) and, with MPIEXEC, mpirun -n 2 and 3 the
  same report.json;
- frnccl1 (a one-rank NCCL job, scripts/gpu_capture's frnccl1 part): in
  flight, the one entry not completed (read here from the dump) is where
  the group is, its rank in it (ambiguous, exit 4); after, no hang and
  every entry counted; the header-only dump of PyTorch's generic recorder
  (no "entries") read as empty and said so (it was refused); beside the
  job's trace, each completed entry's slice at its discovered start, after
  its CPU range began, in the same order and name.

usage: check_fr_real.py MERGETRACE WORKDIR [MPIEXEC]"""
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SET = os.path.join(ROOT, "tests", "data", "real", "frgloo4")
fails = 0


def fail(msg):
    global fails
    fails += 1
    print("FAIL " + msg)


def run(cmd, env=None):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)


def report(out):
    with open(os.path.join(out, "report.json")) as f:
        r = json.load(f)
    r.pop("inputs", None)  # the file names differ between encodings
    return r


def nccl(prog, work):
    """tests/data/real/frnccl1: a one-rank NCCL job's dumps, in flight and
    after, a header-only dump, and the dump beside the job's own trace."""
    d = os.path.join(ROOT, "tests", "data", "real", "frnccl1")
    with open(os.path.join(d, "inflight", "json", "comm_lib_trace_rank_0")) as f:
        inflight = json.load(f)["entries"]
    open_ = [e for e in inflight if e["state"] != "completed"]
    reps = {}
    for sub, code in (("inflight", 4), ("after", 0), ("header-only", 0)):
        for enc in ("json", "pickle"):
            out = os.path.join(work, "nccl", sub, enc)
            p = run([prog, "--color=never", "--no-progress", "-o", out, os.path.join(d, sub, enc)])
            tag = "frnccl1/%s/%s" % (sub, enc)
            if p.returncode != code:
                fail("%s: exit %d, expected %d: %s" % (tag, p.returncode, code, p.stderr.strip()[-300:]))
                continue
            with open(os.path.join(out, "report.json")) as f:
                reps[(sub, enc)] = json.load(f)
            h = reps[(sub, enc)]["hang"]
            if sub == "inflight":
                # the one entry not completed: the all-reduce queued behind
                # the GPU's sleep; the one rank is in it
                want = (open_[0]["process_group"][0], open_[0]["collective_seq_id"]) if len(open_) == 1 else None
                if (h["group"], h["collective_seq_id"]) != want or h["verdict"] != "ambiguous" or \
                        h.get("entered_ranks") != [0] or h.get("stateless_dumps") != 0:
                    fail("%s: %s #%s %s entered %s, expected %s, ambiguous, [0]" % (
                        tag, h["group"], h["collective_seq_id"], h["verdict"], h.get("entered_ranks"), want))
            elif sub == "after":
                n = sum(i["events"] for i in reps[(sub, enc)]["inputs"])
                if h["hung"] or n != len(inflight) or "no hang" not in p.stdout:
                    fail("%s: hung %s, %s entries, expected none and %d" % (tag, h["hung"], n, len(inflight)))
            elif h["hung"] or sum(i["events"] for i in reps[(sub, enc)]["inputs"]) != 0 or \
                    "hold no entries" not in p.stdout:
                # PyTorch's generic recorder in an NCCL job: a header only
                # (it was refused: 'expected an array "entries"')
                fail("%s: terminal %r" % (tag, p.stdout[:200]))
    for r in reps.values():
        r.pop("inputs", None)  # the file names differ between encodings
    for sub in ("inflight", "after", "header-only"):
        if (sub, "json") in reps and reps[(sub, "json")] != reps.get((sub, "pickle")):
            fail("frnccl1/%s: the pickle and JSON dumps give different reports" % sub)
    # beside the job's trace: no collective in common (one rank: no
    # record_param_comms), so the dump is placed on its wall clock; each
    # entry's slice starts at its discovered start (the dump's own number)
    # after its CPU range in the trace began (issued there, discovered by
    # the watchdog within a second)
    both = os.path.join(work, "nccl", "beside")
    os.makedirs(both)
    shutil.copy(os.path.join(d, "trace", "rank-0.pt.trace.json.gz"), both)
    shutil.copy(os.path.join(d, "inflight", "json", "comm_lib_trace_rank_0"), both)
    out = os.path.join(work, "nccl", "beside-out")
    p = run([prog, "--color=never", "--no-progress", "-o", out, both])
    if p.returncode != 4:
        fail("frnccl1 beside its trace: exit %d: %s" % (p.returncode, p.stderr.strip()[-300:]))
        return
    import gzip
    with gzip.open(os.path.join(out, "merged.json.gz")) as f:
        m = json.load(f)
    ev = m["traceEvents"] if isinstance(m, dict) else m
    names = {e["pid"]: e["args"]["name"] for e in ev if e.get("ph") == "M" and e.get("name") == "process_name"}
    frs = sorted((e for e in ev if e.get("ph") == "X" and names.get(e["pid"], "").endswith("Flight Recorder")
                  and e["args"].get("completed")), key=lambda e: e["args"]["record_id"])
    cpu = sorted((e for e in ev if e.get("ph") == "X" and e.get("cat") == "user_annotation"
                  and e["name"].startswith("nccl:")), key=lambda e: e["ts"])
    done = sorted((e for e in inflight if e["state"] == "completed"), key=lambda e: e["record_id"])
    if len(frs) != len(done) or len(cpu) < len(done):
        fail("frnccl1 beside: %d completed entries placed, %d in the dump, %d CPU ranges" % (len(frs), len(done),
                                                                                            len(cpu)))
        return
    for e, x, c in zip(frs, done, cpu):
        if abs(e["ts"] - x["time_discovered_started_ns"] / 1000.0) > 0.5 or not 0 <= e["ts"] - c["ts"] <= 1e6 \
                or e["name"].split(" #")[0] != c["name"]:
            fail("frnccl1 beside: %s at %.3f us, discovered %.3f, its CPU range %s at %.3f" % (
                e["name"], e["ts"], x["time_discovered_started_ns"] / 1000.0, c["name"], c["ts"]))
            break


def main():
    prog, work = os.path.abspath(sys.argv[1]), sys.argv[2]
    mpiexec = sys.argv[3] if len(sys.argv) > 3 else None
    shutil.rmtree(work, ignore_errors=True)
    with open(os.path.join(SET, "oracle", "truth.json")) as f:
        t = json.load(f)
    dumps = {}
    for r in range(4):
        with open(os.path.join(SET, "json", "comm_lib_trace_rank_%d" % r)) as f:
            dumps[r] = json.load(f)["entries"]
    # the hung group's id: its entries' process_group is [id, desc]
    ids = {e["process_group"][0] for d in dumps.values() for e in d if e["process_group"][1] == t["group"]}
    if len(ids) != 1:
        fail("the dumps name %r with %d ids" % (t["group"], len(ids)))
        return 1
    hung_id = ids.pop()
    # the culprit's group: the one besides the world's, whose entries only
    # some ranks have
    members = {}
    for r, d in dumps.items():
        for e in d:
            members.setdefault(e["process_group"][0], set()).add(r)
    sub = [g for g, m in members.items() if g != hung_id and t["culprit"] in m]
    partners = members[sub[0]] - {t["culprit"]} if sub else set()
    want_culprits = sorted({t["culprit"]} | (partners & set(t["stuck"])))
    want_verdict = "order_mismatch" if len(want_culprits) > 1 else "never_enqueued"

    outs = {}
    for enc in ("json", "pickle"):
        out = os.path.join(work, enc)
        p = run([prog, "--color=never", "--no-progress", "-o", out, os.path.join(SET, enc)])
        tag = "frgloo4/" + enc
        if p.returncode != 4:
            fail("%s: exit %d, expected 4: %s" % (tag, p.returncode, p.stderr.strip()[-300:]))
            continue
        h = report(out)["hang"]
        outs[enc] = report(out)
        checks = (("verdict", h["verdict"], want_verdict), ("group", h["group"], hung_id),
                  ("collective_seq_id", h["collective_seq_id"], t["seq"]),
                  ("profiling_name", h["profiling_name"], "gloo:" + t["collective"]),
                  ("entered_ranks", sorted(h["entered_ranks"]), sorted(t["stuck"])),
                  ("culprit_ranks", sorted(h["culprit_ranks"]), want_culprits),
                  ("culprit_last rank", (h["culprit_last"] or {}).get("rank"), t["culprit"]),
                  ("culprit_last collective", ((h["culprit_last"] or {}).get("entry") or {}).get("profiling_name"),
                   "gloo:" + t["culprit_in"]["collective"]),
                  ("culprit_last group", ((h["culprit_last"] or {}).get("entry") or {}).get("process_group"),
                   sub[0] if sub else None),
                  ("stateless_dumps", h["stateless_dumps"], 4), ("groups_from_dumps", h["groups_from_dumps"], 2))
        for k, got, want in checks:
            if got != want:
                fail("%s: %s %r, expected %r" % (tag, k, got, want))
        if "no start or completion" not in p.stdout or "entered it" not in p.stdout:
            fail("%s: the terminal does not say what the dumps lack or who entered:\n%s" % (tag, p.stdout))
    if len(outs) == 2 and outs["json"] != outs["pickle"]:
        fail("frgloo4: the pickle and JSON dumps give different reports")
    nccl(prog, work)
    base = outs.get("json")
    if base is None:
        print("fr_real: %d failures" % fails)
        return 1
    variants = [("-j 2", [prog, "-j", "2", "--no-progress"], None),
                ("every entry on process 0", [prog, "--no-progress"], dict(os.environ, MERGETRACE_FR_ENTRIES="1"))]
    if mpiexec:
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                   OMPI_MCA_btl_vader_single_copy_mechanism="none",
                   ASAN_OPTIONS=os.environ.get("ASAN_OPTIONS", "") + ":detect_leaks=0")
        for n in (2, 3):
            variants.append(("-n %d" % n, [mpiexec, "--oversubscribe", "-n", str(n), prog, "--no-progress"], env))
    for i, (tag, cmd, env) in enumerate(variants):
        out = os.path.join(work, "v%d" % i)
        p = run(cmd + ["-o", out, os.path.join(SET, "json")], env=env)
        if p.returncode != 4:
            fail("frgloo4 %s: exit %d: %s" % (tag, p.returncode, p.stderr.strip()[-300:]))
        elif report(out) != base:
            fail("frgloo4 %s: report.json differs from the run by hand" % tag)
    print("fr_real: %d failures" % fails)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
