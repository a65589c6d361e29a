#!/usr/bin/env python3
"""ctest real_gpu: mergetrace on the traces captured on a real GPU
(tests/data/real/, scripts/gpu_capture) against torch's own numbers.

Usage: check_real.py MERGETRACE ROOT OUTDIR

The oracle of each trace is the profiler's in-memory result that the
capture script saved beside it (tests/real/oracle.py): every event as torch
holds it, torch's key_averages() and the kernels of prof.events(). Nothing
here reads the trace file that mergetrace reads.

Tolerances. Kineto writes times in microseconds with three decimals, so
every time stamp and duration mergetrace reads is the profiler's nanosecond
value exactly; report.json rounds each value to 0.001 us. Sums and unions
are therefore compared within 0.002 us per rounded value involved; torch's
key_averages() are float sums of microseconds (error far below that).
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from oracle import Oracle, inter_ns, union_ns  # noqa: E402

FAILS = []
CHECKS = [0]


def check(ok, what):
    CHECKS[0] += 1
    if not ok:
        FAILS.append(what)
        print("FAIL", what)


def near(a, b, tol=0.002):
    return a is not None and b is not None and abs(a - b) <= tol


def run(mt, out, *inputs, extra=()):
    cmd = [mt, "-q", "--no-progress", "--no-merge", "-o", out] + list(extra) + list(inputs)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        print(p.stdout, p.stderr)
    check(p.returncode == 0, "%s: exit %d" % (" ".join(inputs), p.returncode))
    with open(os.path.join(out, "report.json")) as f:
        return json.load(f)


def by_rank(rows, rank):
    return [x for x in rows if x.get("rank") == rank]


def ka_cpu(o, name, count):
    """key_averages()'s CPU entry of a range: the one with CPU time (the GPU
    side of a record_function range has the same name and none)."""
    xs = [x for x in o.key_average(name) if x["count"] == count and x["cpu_time_total_us"] > 0]
    return xs[0] if len(xs) == 1 else None


# torch's own inconsistency: in ab/a1, prof.events() holds five GPU
# activities (15.168 us: kernels of four names) that its event rows and the
# trace file do not, and key_averages() adds them to Optimizer.step and the
# ranges around it. a2 and b, the same program profiled later in the same
# process, agree to the ns. A second capture showed it again (five, 15.037
# us, a1 alone): the first profiled run of a process. The test holds the
# difference to exactly the committed one, so that any other moves.
TORCH_EXTRA = {"ab a1": (5, 15.168)}


def check_rank(tag, rep, rank, o, torch_attributes_all):
    """One rank of a report against its oracle."""
    extra_n, extra_us = TORCH_EXTRA.get(tag, (0, 0.0))
    inp = [x for x in rep["inputs"] if x["rank"] == rank][0]
    c = inp["counts"]
    kinds = o.kinds()
    check(c["kernels_compute"] + c["kernels_comm"] == kinds["kernel"][0],
          "%s rank %d: kernels %d, torch %d" % (tag, rank, c["kernels_compute"] + c["kernels_comm"],
                                                 kinds["kernel"][0]))
    check(c["memcpy"] == kinds["memcpy"][0], "%s rank %d: memcpy %d, torch %d" %
          (tag, rank, c["memcpy"], kinds["memcpy"][0]))
    check(c["memset"] == kinds["memset"][0], "%s rank %d: memset %d, torch %d" %
          (tag, rank, c["memset"], kinds["memset"][0]))
    t = by_rank(rep["temporal"], rank)[0]
    busy = t["compute_us"] + t["comm_us"] + t["memory_us"]
    check(near(busy, o.busy_ns() / 1e3, 0.003),
          "%s rank %d: GPU busy %.3f us, torch %.3f" % (tag, rank, busy, o.busy_ns() / 1e3))
    n_steps = len(o.ranges(lambda n: n.startswith("ProfilerStep#")))
    if rep.get("steps") and rank == rep["ranks"]["loaded"][0]:
        s = rep["steps"]
        check(s["warmup"] + s["used"] == n_steps, "%s: steps %d + %d, torch %d ProfilerStep ranges" %
              (tag, s["warmup"], s["used"], n_steps))
    if torch_attributes_all:
        fk = o.raw["function_event_kernels"]
        n = sum(v["count"] for v in fk.values())
        us = sum(v["duration_us"] for v in fk.values())
        check(n == sum(k[0] for k in kinds.values()) + extra_n,
              "%s rank %d: prof.events() %d GPU activities, rows %d" % (tag, rank, n, sum(k[0] for k in kinds.values())))
        # one stream: the busy time is the sum of the activities
        check(near(busy + extra_us, us, 0.003), "%s rank %d: GPU busy %.3f us, prof.events() kernels %.3f" %
              (tag, rank, busy, us))
    proj = by_rank(rep["projection"], rank)
    check(len(proj) >= 3, "%s rank %d: %d projection rows" % (tag, rank, len(proj)))
    for p in proj:
        name = p["name"]
        if name == "ProfilerStep#*":
            pred, ka_name = (lambda n: n.startswith("ProfilerStep#")), "ProfilerStep*"
        else:
            pred, ka_name = (lambda n, name=name: n == name), name
        check(len(o.ranges(pred)) == p["count"], "%s rank %d: %s count %d, torch %d" %
              (tag, rank, name, p["count"], len(o.ranges(pred))))
        want_any = o.projection_ns(pred) / 1e3
        want_own = o.projection_ns(pred, same_thread=True) / 1e3
        check(near(p["gpu_us"], want_any), "%s rank %d: %s GPU %.3f us (any thread), torch's events %.3f" %
              (tag, rank, name, p["gpu_us"], want_any))
        check(near(p["gpu_same_thread_us"], want_own), "%s rank %d: %s GPU %.3f us (own thread), torch's events %.3f"
              % (tag, rank, name, p["gpu_same_thread_us"], want_own))
        if torch_attributes_all:
            # torch's own aggregate: the device time of the kernels launched
            # under the range by its own thread's ops
            ka = ka_cpu(o, ka_name, p["count"])
            check(ka is not None and (near(p["gpu_same_thread_us"], ka["device_time_total_us"]) or
                                      near(p["gpu_same_thread_us"] + extra_us, ka["device_time_total_us"])),
                  "%s rank %d: %s own-thread GPU %.3f us, key_averages() %s" %
                  (tag, rank, name, p["gpu_same_thread_us"], ka and ka["device_time_total_us"]))


def main():
    mt, root, out = sys.argv[1:4]
    real = os.path.join(root, "tests", "data", "real")
    os.makedirs(out, exist_ok=True)

    # Single-process sets. torch_attributes_all: every GPU activity was
    # launched by an op of its own thread, so key_averages() and
    # prof.events() see them all. Not so for a CUDA graph (torch ties the
    # graph's kernels to no op: prof.events() holds 12 of its 791
    # activities) or for the NCCL set (send/recv issued through ctypes, and
    # copies made by NCCL's own threads).
    for tag, stem, all_attr in (("eager", "train_eager", True), ("compile", "train_compile", True),
                                ("graphs", "train_graphs", False), ("nccl1", "nccl_ws1", False),
                                ("overlap", "overlap", False)):
        rep = run(mt, os.path.join(out, tag), os.path.join(real, tag))
        o = Oracle(os.path.join(real, tag, "oracle", stem + ".oracle.json.gz"))
        check_rank(tag, rep, 0, o, all_attr)
        # one rank has no clock to align: no warning that nothing aligns it,
        # and nothing of the set's directory but its trace is read
        codes = [w["code"] for w in rep["warnings"]]
        check("no_comm_kernels" not in codes and "skipped_file" not in codes,
              "%s: warnings %s" % (tag, codes))

    # Communication beside compute: NCCL send/recv kernels on a side stream
    # next to matrix products, then alone. The overlap pass against the
    # union of torch's NCCL kernel rows and their intersection with the
    # other kernels.
    rep = load_json(os.path.join(out, "overlap", "report.json"))
    o = Oracle(os.path.join(real, "overlap", "oracle", "overlap.oracle.json.gz"))
    comm, comp = o.comm_compute()
    ov, t = rep["overlap"][0], rep["temporal"][0]
    want_comm, want_hidden = union_ns(comm) / 1e3, inter_ns(comm, comp) / 1e3
    check(len(comm) == 10 and near(ov["comm_us"], want_comm) and near(ov["overlapped_us"], want_hidden)
          and near(t["comm_us"], want_comm - want_hidden, 0.003) and near(t["compute_us"], union_ns(comp) / 1e3),
          "overlap: comm %.3f us, hidden %.3f, exposed %.3f, compute %.3f; torch %.3f, %.3f, %.3f, %.3f" %
          (ov["comm_us"], ov["overlapped_us"], t["comm_us"], t["compute_us"], want_comm, want_hidden,
           want_comm - want_hidden, union_ns(comp) / 1e3))
    check(0 < want_hidden < want_comm, "overlap: the fixture should hide part of its communication")

    # Four processes on one GPU, gloo; blocking and non-blocking all_reduce.
    for tag in ("gloo4", "gloo4async"):
        rep = run(mt, os.path.join(out, tag), os.path.join(real, tag))
        check(rep["ranks"]["loaded"] == [0, 1, 2, 3], "%s: ranks %s" % (tag, rep["ranks"]["loaded"]))
        for r in range(4):
            o = Oracle(os.path.join(real, tag, "oracle", "rank-%d.oracle.json.gz" % r))
            check_rank(tag, rep, r, o, False)

    # A/A and A/B: three runs of one process; a2 repeats a1, b has a 25 %
    # larger batch. The GPU compute per step that the comparison explains
    # must be torch's kernel time per ProfilerStep, and the A/A pair must
    # agree on it within 0.5 %.
    per_step = {}
    for t in ("a1", "a2", "b"):
        o = Oracle(os.path.join(real, "ab", "oracle", "train_%s.oracle.json.gz" % t))
        per_step[t] = o.kinds()["kernel"][1] / 1e3 / len(o.ranges(lambda n: n.startswith("ProfilerStep#")))
        rep = run(mt, os.path.join(out, "ab_" + t), os.path.join(real, "ab", "train_%s.pt.trace.json.gz" % t))
        check_rank("ab " + t, rep, 0, o, True)
    base = os.path.join(out, "ab_a1", "report.json")
    for t in ("a2", "b"):
        run(mt, os.path.join(out, "ab_cmp_" + t), os.path.join(real, "ab", "train_%s.pt.trace.json.gz" % t),
            extra=("--baseline", base))
        with open(os.path.join(out, "ab_cmp_" + t, "compare.json")) as f:
            cmp = json.load(f)
        comp = [p for p in cmp["explained"]["parts"] if p["name"] == "compute"][0]
        # compare.json keeps 6 significant digits
        check(near(comp["a"], per_step["a1"], 0.01) and near(comp["b"], per_step[t], 0.01),
              "ab %s: compute per step %s -> %s us, torch %.3f -> %.3f" %
              (t, comp["a"], comp["b"], per_step["a1"], per_step[t]))
        rel = comp["delta"] / comp["a"]
        if t == "a2":
            check(abs(rel) < 0.005, "A/A: compute per step moved %.2f %%" % (100 * rel))
        else:
            check(rel > 0.05, "A/B: compute per step moved %.2f %% (batch 25 %% larger)" % (100 * rel))
        # issue 39 item 2: the step time fell 23 % against a1 while torch's
        # kernel time per step stayed (a2) or grew (b): the verdict says the
        # change is all host/idle time and names the GPU work's change, as
        # torch measures it (kernel time per step, a1 -> t), and flags a1,
        # whose steps rise through its window (the first profiled one)
        want = 100 * (per_step[t] / per_step["a1"] - 1)
        sc = cmp["explained"]["step_change"] or ""
        got = sc.split("GPU work ")[-1].split(" %")[0] if "GPU work " in sc else "nan"
        check(sc.startswith("-22.9 %: all of it host/idle time") and abs(float(got) - want) < 0.6,
              "ab %s: step change said as %r, torch's kernel time per step %+.1f %%" % (t, sc, want))
        check(not cmp["steady"]["a"]["steady"] and cmp["steady"]["b"]["steady"] and
              any("baseline's steps are not steady" in n for n in cmp["notes"]),
              "ab %s: a1 flagged as not steady (p %s), %s not (p %s)" % (t, cmp["steady"]["a"]["trend_p"], t,
                                                                       cmp["steady"]["b"]["trend_p"]))

    # The NCCL plugin inside NCCL 2.28.9: every send/recv the job issued is
    # in its file, with its count, type and peer; NCCL's group and API
    # events, which the activation mask did not ask for, are counted by
    # type, one Group and GroupApi per ncclGroupEnd, one P2pApi per call.
    with open(os.path.join(real, "nccl1", "oracle", "issued.json")) as f:
        issued = json.load(f)
    rounds = [r for s in issued["self_p2p"]["per_step"] for r in s["rounds"]]
    step0 = issued["self_p2p"]["per_step"][0]
    check(all(r["send"] == 0 and r["recv"] == 0 and r["group_end"] == 0 for r in rounds), "nccl1: an NCCL call failed")
    plugin_dir = os.path.join(real, "nccl1", "plugin")
    files = sorted(os.listdir(plugin_dir))
    check(len(files) == 1, "nccl1: plugin files %s" % files)
    # every line has the keys and types of docs/FORMATS.md (the checker of
    # ctest nccl_plugin_jsonl)
    sys.path.insert(0, os.path.join(root, "tests", "nccl"))
    import check_jsonl  # noqa: E402
    check(check_jsonl.check_file(os.path.join(plugin_dir, files[0])) > 0, "nccl1: empty plugin file")
    lines = [json.loads(x) for x in open(os.path.join(plugin_dir, files[0]))]
    head = lines[0]
    check(head["type"] == "process" and head["abi"] == 5, "nccl1: NCCL 2.28.9 should load the v5 table: %s" % head)
    p2p = [x for x in lines if x["type"] == "p2p"]
    check(sorted(x["func"] for x in p2p) == sorted(["Send", "Recv"] * len(rounds)),
          "nccl1: %d p2p lines for %d send/recv pairs" % (len(p2p), len(rounds)))
    check(all(x["count"] == step0["count"] and x["datatype"] == step0["datatype"] and x["peer"] == 0
              for x in p2p), "nccl1: a p2p line differs from what was issued")
    inits = [x for x in lines if x["type"] == "init"]
    # one communicator per step for the ctypes send/recv, one for torch's group
    check(len(inits) == len(issued["self_p2p"]["per_step"]) + 1, "nccl1: %d communicators" % len(inits))
    last = [x for x in lines if x["type"] == "stats"][-1]
    check(last.get("unhandled_Group") == len(rounds) and last.get("unhandled_GroupApi") == len(rounds)
          and last.get("unhandled_P2pApi") == 2 * len(rounds) and last["unhandled_events"] == 4 * len(rounds),
          "nccl1: unhandled events %s for %d groups" % ({k: v for k, v in last.items() if "unhandled" in k},
                                                        len(rounds)))
    check(last["dropped_ring_full"] == 0 and last["dropped_pool_full"] == 0 and last["open_events"] == 0,
          "nccl1: drops or open events %s" % last)
    # mergetrace's reader: the file alone, and beside the Kineto trace
    rep = run(mt, os.path.join(out, "nccl1_plugin"), os.path.join(plugin_dir, files[0]))
    nf = rep["nccl"]["files"][0]
    check(nf["format"] == "plugin" and nf["tasks"] == 2 * len(rounds) and nf["communicators"] == len(inits)
          and nf["unknown_lines"] == 0 and nf["dropped"] == 0,
          "nccl1: reader saw %s" % {k: nf[k] for k in ("format", "tasks", "communicators", "unknown_lines")})
    check(any(w["code"] == "nccl_no_gpu_times" for w in rep["warnings"]),
          "nccl1: no warning that the tasks have no GPU times")

    # Provenance is written down for every set.
    prov = load_json(os.path.join(real, "provenance.json"))
    check(prov["torch"].startswith("2.11") and prov["gpu"].startswith("NVIDIA"), "provenance: %s" % prov)

    print("%d checks, %d failed" % (CHECKS[0], len(FAILS)))
    return 1 if FAILS else 0


def load_json(path):
    with open(path) as f:
        return json.load(f)


if __name__ == "__main__":
    sys.exit(main())
