#!/usr/bin/env python3
"""End-to-end test of NCCL plugin files as mergetrace inputs, against known
numbers. A 4-rank job on 4 nodes is generated (scripts/gen_traces.py, no drift, no end
jitter, so its truth gives every rank's clock offset exactly); for every
rank an NCCL plugin file is written from that rank's own communication
kernels: the same times on a GPU clock GPU_OFF[r] away from the host, each
stamp seen SEEN_NS later, plus EXTRA AllReduces 50 ms before the profiled
window (NCCL records the whole run, Kineto a window).

Checked:
- Kineto + NCCL: clocks aligned on Kineto rows, offsets identical to the
  Kineto-only run; per rank, pairs = its communication kernels, and every
  |difference| of start and end is SEEN_NS (the offset bound is
  GPU_OFF + SEEN_NS, so NCCL's rows sit SEEN_NS after Kineto's kernels).
- NCCL only (under mpirun -n 2): every rank present, offsets equal the
  generator's truth (offset_r = clock_offset_0 - clock_offset_r), the
  collective table and the stragglers cover all 4 ranks, and report.json
  equals the one of a single process.
- The same two jobs with the files of NCCL's example profiler instead
  (<dump>_<hash>_<rank>.json; GPU clock AHEAD_NS[r] ahead of the rank's
  host clock; plus two files of a sub-communicator, which must be left
  out; rank 3's file names another pid than its trace): Kineto + example:
  every |difference| is AHEAD_NS[r] and the signed median +AHEAD_NS[r],
  the pid mismatch of rank 3 (only) reported and warned about; example only, -n 2 equal to -n 1: offsets equal
  truth + AHEAD_NS[0] - AHEAD_NS[r].
Usage: test_nccl_inputs.py MERGETRACE MPIEXEC REPO_ROOT WORKDIR"""
import json
import os
import shutil
import subprocess
import sys
from decimal import Decimal

SEEN_NS = 2000
EXTRA = 3
FUNCS = {"allreduce": "AllReduce", "allgather": "AllGather", "_allgather_base": "AllGather",
         "reduce_scatter": "ReduceScatter", "_reduce_scatter_base": "ReduceScatter", "broadcast": "Broadcast",
         "reduce": "Reduce", "all_to_all": "AllToAll", "alltoall_base": "AllToAll"}
WORLD = "0123456789abcdef"
fails = []


def check(cond, what):
    if not cond:
        fails.append(what)
        print("FAIL:", what)


def trace_pid(path):
    t = json.load(open(path))
    return next(e["pid"] for e in t["traceEvents"] if e.get("cat") == "cuda_runtime")


def comm_kernels(path):
    t = json.load(open(path), parse_float=Decimal)
    base = int(t.get("baseTimeNanoseconds", 0))
    out = []
    for e in t["traceEvents"]:
        if e.get("cat") == "kernel" and e.get("name", "").startswith("ncclDevKernel"):
            a = e["args"]
            s = base + int(Decimal(e["ts"]) * 1000)
            out.append((s, s + int(Decimal(e["dur"]) * 1000), FUNCS[a["Collective name"]], int(a["In msg nelems"])))
    return sorted(out)


def write_nccl(path, r, kernels, off_ns, off0_ns, first_true, pid):
    gpu_off = 1000000000 * (r + 1) + 17 * r
    lines = ['{"type":"process","format":"mergetrace-nccl","version":1,"host":"n%d","pid":%d,"abi":6,"mask":70}'
             % (r, pid),
             '{"type":"init","comm":"%s","name":"default_pg","rank":%d,"nranks":4,"nNodes":1,"realtime_ns":1,'
             '"monotonic_ns":1,"tid":1}' % (WORLD, r)]
    # the EXTRA collectives before the window: same true times on every rank
    tasks = []
    for k in range(EXTRA):
        end_true = first_true - 50000000 + k * 1000000
        tasks.append((end_true - 300000 + off_ns, end_true + off_ns, "AllReduce", 1024))
    tasks += kernels
    seqs = {}
    for i, (s, e, func, count) in enumerate(tasks, 1):
        seq = seqs.get(func, 0)
        seqs[func] = seq + 1
        lines.append('{"type":"coll","comm":"%s","rank":%d,"id":%d,"func":"%s","seq":%d,"count":%d,'
                     '"datatype":"ncclFloat32","root":-1,"algo":"RING","proto":"LL","nChannels":1,"nWarps":16,'
                     '"host_start_ns":%d,"host_stop_ns":%d,"tid":1}' % (WORLD, r, i, func, seq, count, s - 9000,
                                                                         s - 8000))
        lines.append('{"type":"kch","comm":"%s","rank":%d,"parent":%d,"parent_type":"coll","func":"%s","seq":%d,'
                     '"channel":0,"gpu_start_ns":%d,"gpu_start_seen_ns":%d,"gpu_stop_ns":%d,"gpu_stop_seen_ns":%d,'
                     '"tid":2}' % (WORLD, r, i, func, seq, s - gpu_off, s + SEEN_NS + 3 * (i % 5), e - gpu_off,
                                   e + SEEN_NS + 500))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


AHEAD_NS = [3000, 3250, 2500, 4125]
WORLD_DEC = 12715772615376301750
SUB_DEC = 4432120985773260157


def ev(name, cat, ph, pid, ts_us, args=None):
    s = '{"name": "%s", "cat": "%s", "ph": "%s", "id": 0, "pid": %d, "tid": 1, "ts": %.6f' % (name, cat, ph, pid, ts_us)
    return s + (', "args": {%s}},\n' % args if args is not None else "},\n")


def write_example(path, r, kernels, off_ns, first_true, pid, comm=WORLD_DEC, only_extra=False):
    """The example profiler's file of rank r: every task with one kernel
    channel on a GPU clock AHEAD_NS[r] ahead of the rank's host clock; host
    ts counted from an arbitrary plugin start."""
    start0 = first_true - 60000000 + off_ns
    tasks = []
    for k in range(EXTRA):
        end_true = first_true - 50000000 + k * 1000000
        tasks.append((end_true - 300000 + off_ns, end_true + off_ns, "AllReduce", 1024))
    if not only_extra:
        tasks += kernels
    out = ["[\n"]
    seqs = {}
    for s, e, func, count in tasks:
        seq = seqs.get(func, 0)
        seqs[func] = seq + 1
        out.append(ev(func, "COLL_API", "b", pid, 0.0, '"count": %d, "datatype": ncclFloat32, "root": 0, '
                      '"GraphCaptured": 0, "Stream": 0x1234' % count))
        out.append(ev(func, "COLL", "b", pid, (s - 9000 - start0) / 1000.0,
                      '"SeqNum": %d, "CommHash": %d, "Rank": %d, "Count": %d, "Datatype": "ncclFloat32", '
                      '"Algorithm": "RING", "Protocol": "LL", "nChannels": 1' % (seq, comm, r, count)))
        out.append(ev("KernelCh", "GPU", "b", pid, (s + 2000 - start0) / 1000.0,
                      '"Channel": 0, "StartGpuClk": %d, "StopGpuClk": %d' % (s + AHEAD_NS[r], e + AHEAD_NS[r])))
        out.append(ev("KernelCh", "GPU", "e", pid, (e + 2500 - start0) / 1000.0))
        out.append(ev(func, "COLL", "e", pid, (e + 3000 - start0) / 1000.0))
        out.append(ev(func, "COLL_API", "e", pid, (s - 8000 - start0) / 1000.0))
    out.append("{}]\n")
    with open(path, "w") as f:
        f.write("".join(out))


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
    if p.returncode != 0:
        print(" ".join(cmd), "->", p.returncode, p.stderr)
    check(p.returncode == 0, "exit code 0: " + " ".join(cmd))
    return p


def offsets(rep):
    return {c["rank"]: Decimal(str(c["offset_us"])) for c in rep["clock"]["ranks"]}


def main():
    bin_, mpiexec, root, work = sys.argv[1:5]
    if os.getuid() == 0:
        os.environ.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    os.environ["OMPI_MCA_btl_vader_single_copy_mechanism"] = "none"
    os.environ["ASAN_OPTIONS"] = "detect_leaks=0"  # Open MPI's own allocations are not ours
    shutil.rmtree(work, ignore_errors=True)
    gen, both, only = (os.path.join(work, d) for d in ("gen", "both", "only"))
    subprocess.run([sys.executable, os.path.join(root, "scripts/gen_traces.py"), "--ranks", "4", "--ranks-per-node", "1", "--steps", "3",
                    "--max-drift-ppm", "0", "--end-jitter-us", "0", "--indent", "0", "--quiet", "--out", gen],
                   check=True)
    truth = json.load(open(os.path.join(gen, "truth.json")))
    offs = {t["rank"]: t["clock_offset_ns"] for t in truth["ranks"]}
    os.makedirs(both)
    os.makedirs(only)
    kern = {r: comm_kernels(os.path.join(gen, "rank-%d.json" % r)) for r in range(4)}
    pids = {r: trace_pid(os.path.join(gen, "rank-%d.json" % r)) for r in range(4)}
    # the first kernel's true end on rank 0: every rank's extra tasks sit before it
    first_true = kern[0][0][1] - offs[0]
    for r in range(4):
        shutil.copy(os.path.join(gen, "rank-%d.json" % r), both)
        for d in (both, only):
            write_nccl(os.path.join(d, "n%d-pid%d.jsonl" % (r, 100 + r)), r, kern[r], offs[r], offs[0], first_true,
                       pids[r])
    env_args = ["--no-progress", "-q", "--no-merge"]
    run([bin_] + env_args + ["-o", os.path.join(work, "o-gen"), gen])
    run([bin_] + env_args + ["-o", os.path.join(work, "o-both"), both])
    ref = json.load(open(os.path.join(work, "o-gen/report.json")), parse_float=Decimal)
    rb = json.load(open(os.path.join(work, "o-both/report.json")), parse_float=Decimal)
    check(rb["nccl"]["alignment_source"] == "kineto", "both: aligned on kineto")
    check(offsets(rb) == offsets(ref), "both: offsets equal the Kineto-only run's")
    check(rb["ranks"]["loaded"] == [0, 1, 2, 3], "both: 4 ranks loaded")
    check(not any(i.get("nccl_only") for i in rb["inputs"]), "both: no rank is NCCL only")
    for f in rb["nccl"]["files"]:
        a, r = f["agreement"], f["rank"]
        check(f["with_kineto"] and f["aligned_on"] == "kineto", "both: rank %d joined, aligned on kineto" % r)
        check(f["kineto_pid"] == pids[r] and not f["join_pid_differs"] and not f["join_size_differs"],
              "both: rank %d join checks agree" % r)
        check(a is not None and a["pairs"] == len(kern[r]), "both: rank %d pairs %s == %d kernels"
              % (r, a and a["pairs"], len(kern[r])))
        check(a is not None and a["nccl_rows"] == len(kern[r]) + EXTRA and a["kineto_rows"] == len(kern[r]),
              "both: rank %d row counts" % r)
        want = Decimal(SEEN_NS) / 1000
        for k in ("start_p50_us", "start_p99_us", "end_p50_us", "end_p99_us", "start_median_us"):
            check(a is not None and a[k] == want, "both: rank %d %s = %s, expected %s" % (r, k, a and a[k], want))
        check(Decimal(str(f["gpu_offset_bound_us"])) * 1000 == 1000000000 * (r + 1) + 17 * r + SEEN_NS,
              "both: rank %d offset bound" % r)
    # the memory plan (mpi/job.c job_plan) counts each file once: the
    # traces' GPU activities (kernel, gpu_memcpy and gpu_memset events),
    # their NCCL kernels' rows and the NCCL files' rows (each kernel and
    # EXTRA more), not a joined rank's trace twice
    run([bin_] + env_args + ["--no-html", "--timings", "-o", os.path.join(work, "o-both-t"), both])
    plan = json.load(open(os.path.join(work, "o-both-t/timings.json")))["memory_plan"]
    acts = sum(1 for r in range(4) for e in json.load(open(os.path.join(gen, "rank-%d.json" % r)))["traceEvents"]
               if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"))
    rows = sum(len(kern[r]) + len(kern[r]) + EXTRA for r in range(4))
    check(plan["gpu_activities"] == acts and plan["rows"] == rows,
          "both: memory plan %s, expected %d GPU activities, %d rows" % (plan, acts, rows))
    # NCCL only, two processes, and one
    run([mpiexec, "--oversubscribe", "-n", "2", bin_] + env_args + ["-o", os.path.join(work, "o-only2"), only])
    run([bin_] + env_args + ["-o", os.path.join(work, "o-only1"), only])
    r2 = json.load(open(os.path.join(work, "o-only2/report.json")), parse_float=Decimal)
    check(open(os.path.join(work, "o-only1/report.json")).read() == open(os.path.join(work, "o-only2/report.json")).read(),
          "only: report.json of -n 2 equals -n 1")
    check(r2["nccl"]["alignment_source"] == "nccl", "only: aligned on nccl")
    check(r2["ranks"]["loaded"] == [0, 1, 2, 3] and all(i["nccl_only"] for i in r2["inputs"]),
          "only: 4 ranks, all NCCL only")
    for r, o in offsets(r2).items():
        check(o * 1000 == offs[0] - offs[r], "only: rank %d offset %s us, truth %d ns" % (r, o, offs[0] - offs[r]))
    ranks_in_table = {x["rank"] for x in r2["stragglers"]["ranks"]}
    check(ranks_in_table == {0, 1, 2, 3}, "only: stragglers cover every rank (%s)" % sorted(ranks_in_table))
    n_inst = sum(c["count"] for c in r2["collectives"])
    check(n_inst == len(kern[0]) + EXTRA, "only: %d instances in the collective table, expected %d"
          % (n_inst, len(kern[0]) + EXTRA))
    check(r2["matching"]["full"] == len(kern[0]) + EXTRA, "only: every instance full")
    # NCCL's example profiler: with Kineto, then alone (-n 2 and -n 1)
    bx, ox = os.path.join(work, "both-x"), os.path.join(work, "only-x")
    os.makedirs(bx)
    os.makedirs(ox)
    for r in range(4):
        shutil.copy(os.path.join(gen, "rank-%d.json" % r), bx)
        for d in (bx, ox):
            # rank 3's file is of another process: joined by rank, with a warning
            write_example(os.path.join(d, "nccl_%d_%d.json" % (WORLD_DEC, r)), r, kern[r], offs[r], first_true,
                          pids[r] if r != 3 else 4242)
            if r < 2:
                write_example(os.path.join(d, "nccl_%d_%d.json" % (SUB_DEC, r)), r, kern[r], offs[r], first_true,
                              pids[r], comm=SUB_DEC, only_extra=True)
    px = run([bin_, "--no-progress", "--no-merge", "--color=never", "-o", os.path.join(work, "o-both-x"), bx])
    check("rank 3: nccl_%d_3.json is of pid 4242, its Kineto trace of pid %d: not the same process?" % (WORLD_DEC, pids[3])
          in px.stdout, "both-x: the stray pid is warned about")
    rb = json.load(open(os.path.join(work, "o-both-x/report.json")), parse_float=Decimal)
    check(rb["nccl"]["alignment_source"] == "kineto", "both-x: aligned on kineto")
    check(offsets(rb) == offsets(ref), "both-x: offsets equal the Kineto-only run's")
    check(rb["ranks"]["loaded"] == [0, 1, 2, 3], "both-x: 4 ranks loaded")
    check(sorted(os.path.basename(x["path"]) for x in rb["skipped"])
          == ["nccl_%d_0.json" % SUB_DEC, "nccl_%d_1.json" % SUB_DEC], "both-x: the sub-communicator's files left out")
    for f in rb["nccl"]["files"]:
        a, r = f["agreement"], f["rank"]
        check(f["format"] == "example" and f["comm_size"] == 4, "both-x: rank %d format and size" % r)
        check(f["join_pid_differs"] == (r == 3) and not f["join_size_differs"], "both-x: rank %d join checks" % r)
        check(f["with_kineto"] and f["aligned_on"] == "kineto", "both-x: rank %d joined, aligned on kineto" % r)
        check(a is not None and a["pairs"] == len(kern[r]) and a["nccl_rows"] == len(kern[r]) + EXTRA,
              "both-x: rank %d pairs %s == %d kernels" % (r, a and a["pairs"], len(kern[r])))
        want = Decimal(AHEAD_NS[r]) / 1000
        for k in ("start_p50_us", "start_p99_us", "end_p50_us", "end_p99_us", "start_median_us"):
            check(a is not None and a[k] == want, "both-x: rank %d %s = %s, expected %s" % (r, k, a and a[k], want))
    run([mpiexec, "--oversubscribe", "-n", "2", bin_] + env_args + ["-o", os.path.join(work, "o-only-x2"), ox])
    run([bin_] + env_args + ["-o", os.path.join(work, "o-only-x1"), ox])
    r2 = json.load(open(os.path.join(work, "o-only-x2/report.json")), parse_float=Decimal)
    check(open(os.path.join(work, "o-only-x1/report.json")).read()
          == open(os.path.join(work, "o-only-x2/report.json")).read(), "only-x: report.json of -n 2 equals -n 1")
    check(r2["ranks"]["loaded"] == [0, 1, 2, 3] and all(i["nccl_only"] for i in r2["inputs"]),
          "only-x: 4 ranks, all NCCL only")
    check(len(r2["skipped"]) == 2, "only-x: 2 files left out")
    for r, o in offsets(r2).items():
        want = offs[0] + AHEAD_NS[0] - offs[r] - AHEAD_NS[r]
        check(o * 1000 == want, "only-x: rank %d offset %s us, expected %d ns" % (r, o, want))
    check(r2["matching"]["full"] == len(kern[0]) + EXTRA, "only-x: every instance full")
    print("%s: %d failure(s)" % (os.path.basename(sys.argv[0]), len(fails)))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
