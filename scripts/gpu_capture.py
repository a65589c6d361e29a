#!/usr/bin/env python3
"""Capture real Kineto traces (and NCCL profiler plugin files) on a GPU
machine, each with torch's own numbers beside it as an oracle.

Run by scripts/gpu_capture (one command on a machine with PyTorch, CUDA and
a GPU); docs/TESTING.md, "Real GPU fixtures", says how. Writes OUT/<set>/:

  eager/    a small transformer trained eagerly: record_function ranges,
            schedule(wait=1, warmup=1, active=3), record_shapes,
            profile_memory, with_stack
  compile/  the same model under torch.compile (no stacks: dynamo's frames
            would make the file many times larger)
  graphs/   the same training step captured once as a CUDA graph, replayed
  nccl1/    a world-size-1 NCCL process group running every collective it
            allows, plus send/recv to self on a communicator of its own
            (ctypes, the same libnccl), with the NCCL profiler plugin loaded
            when one is given: the plugin's files go to nccl1/plugin/, what
            the job issued to nccl1/oracle/issued.json
  gloo4/    four processes on the one GPU, gloo backend, CUDA tensors; rank 2
            sleeps before each all-reduce (the job's known straggler); 10
            profiled steps
  gloo4async/ the same with the all-reduce non-blocking (async_op=True),
            a forward pass under "## overlap ##", then wait()
  gloo4nosleep/, gloo4asyncnosleep/  their twins: the same jobs, same
            seeds, with rank 2's sleep left out (what removing it gives)
  overlap/  NCCL send/recv to self (a real communication kernel) on a side
            stream beside matrix products, then once more alone: 5 steps
  ab/       three eager runs of 12 profiled steps each, no stacks: a1 and a2
            the same job (an A/A pair), b with a batch 25 % larger (A/B)
  frgloo4/  Flight Recorder dumps of a hung job: four CPU processes (gloo);
            ranks 0, 1, 3 wait in the world's all-reduce #6 that rank 2
            never enters (it is in an all-reduce of group "tp", ranks 2-3);
            each dumps on demand after the timeout: pickle/ and json/
            (comm_lib_trace_rank_R), oracle/ the truth and each rank's times
  frnccl1/  Flight Recorder dumps of a one-rank NCCL job beside its trace:
            collectives completed on two groups, then an all-reduce queued
            behind a 2 s GPU sleep, dumped in flight (inflight/) and after
            (after/), each dump function under its own folder

Each trace X.pt.trace.json.gz has oracle/X.oracle.json.gz beside it (a
folder of its own, so that a run over the set's directory reads the traces
alone): torch's
key_averages(), the kernels of prof.events(), and every event of the
profiler's own result (prof.profiler.kineto_results.events()) as rows, so
the numbers mergetrace must reproduce can be worked out from torch's objects
rather than from the JSON file. OUT/provenance.json names the versions.

--cpu-smoke runs eager, gloo4, gloo4async, ab and frgloo4 on the CPU alone (to test
this script on a machine without a GPU); its files are not fixtures.

Exit status: 0 when every part ran to the end, 1 when one failed or timed
out (the other parts' files are still written).
"""
import argparse
import gzip
import json
import os
import platform
import shutil
import subprocess
import sys
import time
import traceback

import torch
import torch.nn as nn

STEPS = 6            # wait 1 + warmup 1 + active 3, and one after
ACTIVE = 3


def log(*a):
    print("[capture %.1fs]" % (time.time() - T0), *a, flush=True)


T0 = time.time()


def attr(o, *names):
    for n in names:
        if hasattr(o, n):
            v = getattr(o, n)
            return v() if callable(v) else v
    return None


def kineto_rows(prof):
    """Every event of the profiler's own result, as compact rows."""
    res = prof.profiler.kineto_results
    names, index, rows = [], {}, []
    fields = ["name", "device_type", "device_index", "resource_id", "start_ns",
              "duration_ns", "correlation_id", "linked_correlation_id",
              "start_thread_id", "is_async", "activity_type"]
    missing = set()
    for e in res.events():
        row = []
        for f in fields:
            v = None
            if f == "name":
                n = e.name()
                if n not in index:
                    index[n] = len(names)
                    names.append(n)
                v = index[n]
            else:
                acc = {"resource_id": "device_resource_id"}.get(f, f)
                scale = 1
                if not hasattr(e, acc) and f.endswith("_ns"):
                    acc, scale = f[:-3] + "_us", 1000   # older torch: us only
                if hasattr(e, acc):
                    try:
                        v = getattr(e, acc)()
                        if scale != 1 and v is not None:
                            v *= scale
                    except Exception:  # noqa: BLE001 - an accessor that cannot answer
                        v = None
                else:
                    missing.add(f)
                if f == "device_type" and v is not None:
                    v = str(v).split(".")[-1]
                elif f == "activity_type" and v is not None and not isinstance(v, (int, str)):
                    v = str(v)
                elif isinstance(v, bool):
                    v = int(v)
            row.append(v)
        rows.append(row)
    return {"fields": fields, "names": names, "rows": rows, "missing_accessors": sorted(missing)}


def oracle(prof, extra):
    o = {"what": "torch's own numbers for the trace beside this file",
         "torch": torch.__version__, "step_num": prof.step_num}
    ka = []
    for e in prof.key_averages():
        ka.append({"name": e.key, "count": e.count,
                   "cpu_time_total_us": e.cpu_time_total,
                   "self_cpu_time_total_us": e.self_cpu_time_total,
                   "device_time_total_us": attr(e, "device_time_total", "cuda_time_total"),
                   "self_device_time_total_us": attr(e, "self_device_time_total",
                                                     "self_cuda_time_total")})
    o["key_averages"] = ka
    kern = {}
    for fe in prof.events():
        for k in getattr(fe, "kernels", []) or []:
            d = kern.setdefault(k.name, [0, 0.0])
            d[0] += 1
            d[1] += k.duration
    o["function_event_kernels"] = {n: {"count": c, "duration_us": t} for n, (c, t) in kern.items()}
    try:
        o["kineto_events"] = kineto_rows(prof)
    except Exception as ex:  # noqa: BLE001 - recorded, the rest still useful
        o["kineto_events_error"] = repr(ex)
    o.update(extra)
    return o


def handler(dirpath, stem, extra):
    """on_trace_ready: the trace (gzip) and its oracle, written once."""
    def ready(prof):
        os.makedirs(dirpath, exist_ok=True)
        plain = os.path.join(dirpath, stem + ".pt.trace.json")
        prof.export_chrome_trace(plain)
        with open(plain, "rb") as f, gzip.open(plain + ".gz", "wb", compresslevel=9) as g:
            shutil.copyfileobj(f, g)
        os.remove(plain)
        o = oracle(prof, extra() if callable(extra) else extra)
        os.makedirs(os.path.join(dirpath, "oracle"), exist_ok=True)
        with gzip.open(os.path.join(dirpath, "oracle", stem + ".oracle.json.gz"), "wt") as g:
            json.dump(o, g, separators=(",", ":"))
        log("wrote", os.path.join(dirpath, stem), "events", len(o.get("kineto_events", {}).get("rows", [])))
    return ready


def activities(cpu):
    a = [torch.profiler.ProfilerActivity.CPU]
    if not cpu:
        a.append(torch.profiler.ProfilerActivity.CUDA)
    return a


def schedule():
    return torch.profiler.schedule(wait=1, warmup=1, active=ACTIVE, repeat=1)


# ---- the model --------------------------------------------------------------

class Tiny(nn.Module):
    def __init__(self, vocab=512, d=128, heads=4, layers=2):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        layer = nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.0, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, layers)
        self.head = nn.Linear(d, vocab)

    def forward(self, x):
        return self.head(self.enc(self.emb(x)))


def batch(dev, vocab=512, b=8, t=64, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(0, vocab, (b, t), generator=g)
    y = torch.randint(0, vocab, (b, t), generator=g)
    return x.to(dev), y.to(dev)


def train_step(model, opt, x, y, rf):
    with rf("## forward ##"):
        out = model(x)
        loss = nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
    with rf("## backward ##"):
        loss.backward()
    with rf("## optimizer ##"):
        opt.step()
        opt.zero_grad(set_to_none=True)
    return loss


def sync(cpu):
    if not cpu:
        torch.cuda.synchronize()


def part_train(out, kind, cpu):
    dev = "cpu" if cpu else "cuda"
    torch.manual_seed(0)
    model = Tiny().to(dev)
    step_model = model
    rf = torch.profiler.record_function
    if kind == "compile":
        step_model = torch.compile(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3,
                            capturable=(kind == "graphs"))
    x, y = batch(dev)
    if kind == "graphs":
        # Warm up on a side stream, then capture the whole step once.
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                train_step(model, opt, x, y, rf)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        opt.zero_grad(set_to_none=True)
        with torch.cuda.graph(g):
            out_ = model(x)
            loss_ = nn.functional.cross_entropy(out_.reshape(-1, out_.shape[-1]), y.reshape(-1))
            loss_.backward()
            opt.step()

        def run_step(i):
            xi, yi = batch(dev, seed=i)
            with rf("## copy inputs ##"):
                x.copy_(xi)
                y.copy_(yi)
            with rf("## graph replay ##"):
                g.replay()
    else:
        if kind == "compile":
            t = time.time()
            for i in range(2):
                train_step(step_model, opt, x, y, rf)
            sync(cpu)
            log("compile warm-up", round(time.time() - t, 1), "s")

        def run_step(i):
            xi, yi = batch(dev, seed=i)
            train_step(step_model, opt, xi, yi, rf)
    sync(cpu)
    d = os.path.join(out, kind)
    with torch.profiler.profile(activities=activities(cpu), schedule=schedule(),
                                record_shapes=True, profile_memory=True,
                                with_stack=(kind == "eager"),
                                on_trace_ready=handler(d, "train_" + kind,
                                                       {"set": kind, "steps_profiled": ACTIVE})) as prof:
        for i in range(STEPS):
            run_step(i)
            prof.step()
    sync(cpu)


def part_ab(out, cpu):
    dev = "cpu" if cpu else "cuda"
    rf = torch.profiler.record_function
    for tag, b in (("a1", 8), ("a2", 8), ("b", 10)):
        torch.manual_seed(0)
        model = Tiny().to(dev)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        sync(cpu)
        with torch.profiler.profile(activities=activities(cpu),
                                    schedule=torch.profiler.schedule(wait=1, warmup=1, active=12,
                                                                     repeat=1),
                                    on_trace_ready=handler(os.path.join(out, "ab"), "train_" + tag,
                                                           {"set": "ab", "tag": tag, "batch": b,
                                                            "steps_profiled": 12})) as prof:
            for i in range(14):
                xi, yi = batch(dev, b=b, seed=i)
                train_step(model, opt, xi, yi, rf)
                prof.step()
        sync(cpu)


# ---- NCCL, world size 1 -----------------------------------------------------

NCCL_FLOAT32 = 7


def nccl_lib():
    """the libnccl this process loaded (torch's), else the NCCL wheel's"""
    for _ in range(2):
        with open("/proc/self/maps") as f:
            for line in f:
                p = line.split()[-1]
                if "libnccl.so" in p:
                    return p
        try:
            torch.cuda.nccl.version()   # makes torch load it
        except Exception:  # noqa: BLE001
            break
    try:
        import nvidia.nccl as m
        for root in m.__path__:
            p = os.path.join(root, "lib", "libnccl.so.2")
            if os.path.exists(p):
                return p
    except Exception:  # noqa: BLE001
        pass
    return None


class NcclSelf:
    """A communicator of one rank of our own, through ctypes on the libnccl
    torch loaded: send/recv to self is the one NCCL operation that runs a
    kernel (ncclDevKernel_SendRecv) with a single GPU."""

    def __init__(self):
        import ctypes
        self.ct = ctypes
        self.path = nccl_lib()
        self.error = None
        if not self.path:
            self.error = "libnccl not in this process's maps"
            return
        lib = self.lib = ctypes.CDLL(self.path)

        class UID(ctypes.Structure):
            _fields_ = [("internal", ctypes.c_char * 128)]
        v = ctypes.c_int()
        lib.ncclGetVersion(ctypes.byref(v))
        self.version = v.value
        uid = UID()
        r = lib.ncclGetUniqueId(ctypes.byref(uid))
        self.comm = ctypes.c_void_p()
        lib.ncclCommInitRank.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, UID, ctypes.c_int]
        r2 = lib.ncclCommInitRank(ctypes.byref(self.comm), 1, uid, 0)
        if r or r2:
            self.error = "ncclGetUniqueId %d ncclCommInitRank %d" % (r, r2)
        lib.ncclSend.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                                 ctypes.c_void_p, ctypes.c_void_p]
        lib.ncclRecv.argtypes = lib.ncclSend.argtypes

    def sendrecv(self, send, recv, stream):
        ct, lib = self.ct, self.lib
        st = ct.c_void_p(stream.cuda_stream)
        lib.ncclGroupStart()
        a = lib.ncclSend(ct.c_void_p(send.data_ptr()), send.numel(), NCCL_FLOAT32, 0, self.comm, st)
        b = lib.ncclRecv(ct.c_void_p(recv.data_ptr()), recv.numel(), NCCL_FLOAT32, 0, self.comm, st)
        c = lib.ncclGroupEnd()
        return {"send": a, "recv": b, "group_end": c}

    def close(self):
        if not self.error:
            self.lib.ncclCommDestroy(self.comm)


def nccl_self_p2p(n_elems, rounds):
    """send/recv to self on a new communicator of one rank. Returns what was
    issued."""
    nc = NcclSelf()
    if nc.error:
        return {"error": nc.error, "lib": nc.path}
    send = torch.ones(n_elems, device="cuda")
    recv = torch.zeros(n_elems, device="cuda")
    issued = []
    for i in range(rounds):
        with torch.profiler.record_function("## self p2p ##"):
            r = nc.sendrecv(send, recv, torch.cuda.current_stream())
        r["round"] = i
        issued.append(r)
    torch.cuda.synchronize()
    ok = bool(torch.equal(send, recv))
    nc.close()
    return {"lib": nc.path, "version": nc.version, "count": n_elems, "datatype": "ncclFloat32",
            "rounds": issued, "recv_equals_send": ok}


def part_overlap(out):
    """Communication beside compute on one GPU: per step an NCCL send/recv
    to self on a side stream while the default stream runs matrix products
    (hidden, as far as the two overlap), then one more send/recv alone
    (exposed)."""
    d = os.path.join(out, "overlap")
    nc = NcclSelf()
    if nc.error:
        raise RuntimeError(nc.error)
    rf = torch.profiler.record_function
    n = 1 << 26                      # 256 MiB of float32 each way
    send = torch.ones(n, device="cuda")
    recv = torch.empty(n, device="cuda")
    a = torch.randn(4096, 4096, device="cuda")
    b = torch.randn(4096, 4096, device="cuda")
    side = torch.cuda.Stream()
    main = torch.cuda.current_stream()
    torch.cuda.synchronize()
    issued = []
    with torch.profiler.profile(activities=activities(False),
                                schedule=torch.profiler.schedule(wait=1, warmup=1, active=5, repeat=1),
                                on_trace_ready=handler(d, "overlap", lambda: {
                                    "set": "overlap", "bytes_each_way": 4 * n, "issued": issued})) as prof:
        for i in range(8):
            side.wait_stream(main)
            with torch.cuda.stream(side):
                with rf("## comm beside compute ##"):
                    issued.append(nc.sendrecv(send, recv, side))
            with rf("## compute ##"):
                for _ in range(3):
                    torch.mm(a, b)
            main.wait_stream(side)
            with rf("## comm alone ##"):
                issued.append(nc.sendrecv(send, recv, main))
            torch.cuda.synchronize()
            prof.step()
    nc.close()


def part_nccl1(out):
    import torch.distributed as dist
    d = os.path.join(out, "nccl1")
    os.makedirs(d, exist_ok=True)
    dist.init_process_group("nccl", init_method="tcp://127.0.0.1:29611", rank=0, world_size=1,
                            device_id=torch.device("cuda:0"))
    issued = []

    def coll(name, fn, count, dtype):
        try:
            fn()
            issued.append({"op": name, "count": count, "dtype": dtype, "ok": True})
        except Exception as ex:  # noqa: BLE001 - what torch refuses is a result too
            issued.append({"op": name, "ok": False, "error": repr(ex)[:300]})

    n = 1 << 16
    a = torch.ones(n, device="cuda")
    o = torch.empty(n, device="cuda")
    steps_issued = []
    p2p = {}
    with torch.profiler.profile(activities=activities(False), schedule=schedule(), record_shapes=True,
                                on_trace_ready=handler(d, "nccl_ws1", lambda: {
                                    "set": "nccl1", "issued_per_step": steps_issued,
                                    "self_p2p": p2p})) as prof:
        for i in range(STEPS):
            issued.clear()
            with torch.profiler.record_function("## collectives ##"):
                coll("all_reduce", lambda: dist.all_reduce(a), n, "float32")
                coll("all_gather_into_tensor", lambda: dist.all_gather_into_tensor(o, a), n, "float32")
                coll("reduce_scatter_tensor", lambda: dist.reduce_scatter_tensor(o, a), n, "float32")
                coll("broadcast", lambda: dist.broadcast(a, 0), n, "float32")
                coll("reduce", lambda: dist.reduce(a, 0), n, "float32")
                coll("all_to_all_single", lambda: dist.all_to_all_single(o, a), n, "float32")
                coll("barrier", lambda: dist.barrier(), 0, "")
                coll("send_to_self", lambda: dist.send(a, 0), n, "float32")
            r = nccl_self_p2p(4096, 2)
            p2p.setdefault("per_step", []).append(r)
            torch.cuda.synchronize()
            steps_issued.append(list(issued))
            prof.step()
    torch.cuda.synchronize()
    dist.destroy_process_group()
    os.makedirs(os.path.join(d, "oracle"), exist_ok=True)
    with open(os.path.join(d, "oracle", "issued.json"), "w") as f:
        json.dump({"steps": steps_issued, "self_p2p": p2p}, f, indent=1)


# ---- gloo, four processes -----------------------------------------------------

GLOO_RANKS = 4
STRAGGLER = 2
STRAGGLER_SLEEP_S = 0.015


def gloo_worker(rank, out, cpu, port, asyn=False, sleep_s=STRAGGLER_SLEEP_S):
    import torch.distributed as dist
    dev = "cpu" if cpu else "cuda:0"
    if not cpu:
        torch.cuda.set_device(0)
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % port, rank=rank,
                            world_size=GLOO_RANKS)
    torch.manual_seed(rank)
    model = nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 256)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    rf = torch.profiler.record_function
    name = ("gloo4async" if asyn else "gloo4") + ("" if sleep_s else "nosleep")
    d = os.path.join(out, name)
    walls = []
    ops = []
    with torch.profiler.profile(activities=activities(cpu),
                                schedule=torch.profiler.schedule(wait=1, warmup=1, active=10, repeat=1),
                                record_shapes=True,
                                on_trace_ready=handler(d, "rank-%d" % rank, lambda: {
                                    "set": name, "async_op": asyn,
                                    "rank": rank, "world_size": GLOO_RANKS,
                                    "straggler": STRAGGLER, "straggler_sleep_s": sleep_s,
                                    "allreduce_return_walls_ns": walls, "ops": ops})) as prof:
        for i in range(12):
            x = torch.randn(64, 256, device=dev)
            with rf("## forward ##"):
                loss = model(x).pow(2).mean()
            with rf("## backward ##"):
                loss.backward()
            flat = torch.cat([p.grad.reshape(-1) for p in model.parameters()])
            if rank == STRAGGLER and sleep_s:
                time.sleep(sleep_s)
            with rf("## allreduce ##"):
                if asyn:
                    # non-blocking: the call returns at once, the wait ends
                    # when the collective does; work in between
                    work = dist.all_reduce(flat, async_op=True)
                    with rf("## overlap ##"):
                        model(x).sum()
                    work.wait()
                else:
                    dist.all_reduce(flat)
            walls.append(time.time_ns())
            for name, fn in (("broadcast", lambda: dist.broadcast(flat[:1024], 0)),
                             ("all_gather", lambda: dist.all_gather(
                                 [torch.empty(256, device=dev) for _ in range(GLOO_RANKS)],
                                 flat[:256].contiguous())),
                             ("barrier", lambda: dist.barrier())):
                try:
                    fn()
                    if i == 0:
                        ops.append({"op": name, "ok": True})
                except Exception as ex:  # noqa: BLE001
                    if i == 0:
                        ops.append({"op": name, "ok": False, "error": repr(ex)[:300]})
            with rf("## optimizer ##"):
                opt.step()
                opt.zero_grad(set_to_none=True)
            sync(cpu)
            prof.step()
    dist.destroy_process_group()


def part_gloo4(out, cpu, asyn=False, sleep_s=STRAGGLER_SLEEP_S):
    import torch.multiprocessing as mp
    mp.spawn(gloo_worker, args=(out, cpu, 29700 + os.getpid() % 200, asyn, sleep_s),
             nprocs=GLOO_RANKS, join=True)


# ---- Flight Recorder dumps of a hung gloo job ------------------------------------
#
# Four CPU processes (gloo: one GPU cannot hold a four-rank NCCL communicator).
# Five all-reduces on the world group and two all-gathers on a subgroup of
# ranks 2 and 3 ("tp"); then ranks 0, 1 and 3 enter all-reduce #6 of the
# world while rank 2 enters an all-reduce of "tp" instead. Every collective
# in flight times out after FR_TIMEOUT_S; each process then dumps its Flight
# Recorder on demand in both encodings. Not yet run: no machine with
# PyTorch >= 2.8 has been lent since this part was written (docs/TESTING.md).

FR_TIMEOUT_S = 5
FR_CULPRIT = 2


def fr_dump(c10d, names):
    """The first of torch's dump functions that exists and answers, and its name."""
    for n in names:
        fn = getattr(c10d, n, None)
        if fn is None:
            continue
        try:
            return n, fn()
        except Exception as ex:  # noqa: BLE001
            log("frgloo4:", n, "failed:", repr(ex)[:200])
    return None, None


def fr_worker(rank, out, port):
    import datetime
    import torch.distributed as dist
    import torch._C._distributed_c10d as c10d
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % port, rank=rank,
                            world_size=GLOO_RANKS, timeout=datetime.timedelta(seconds=FR_TIMEOUT_S))
    tp = dist.new_group([2, 3])
    x = torch.ones(1024)
    for _ in range(5):
        dist.all_reduce(x)
    if rank in (2, 3):
        for _ in range(2):
            dist.all_gather([torch.empty(256) for _ in range(2)], x[:256].contiguous(), group=tp)
    hung = {"rank": rank, "t_enter_ns": time.time_ns(), "torch": torch.__version__,
            "c10d_dump_names": sorted(n for n in dir(c10d) if "dump" in n.lower()
                                      or "trace" in n.lower())}
    try:
        if rank == FR_CULPRIT:
            dist.all_reduce(x, group=tp)      # rank 3 is in the world's all-reduce
        else:
            dist.all_reduce(x)                # rank 2 never enters it
        hung["error"] = None
    except Exception as ex:  # noqa: BLE001
        hung["error"] = repr(ex)[:300]
    hung["t_dump_ns"] = time.time_ns()
    d = os.path.join(out, "frgloo4")
    for enc, names, mode in (("pickle", ("_dump_fr_trace", "_dump_nccl_trace"), "wb"),
                             ("json", ("_dump_fr_trace_json", "_dump_nccl_trace_json"), "w")):
        name, blob = fr_dump(c10d, names)
        hung[enc] = name
        if blob is None:
            continue
        if mode == "w" and isinstance(blob, bytes):
            blob = blob.decode("utf-8")
        os.makedirs(os.path.join(d, enc), exist_ok=True)
        with open(os.path.join(d, enc, "comm_lib_trace_rank_%d" % rank), mode) as f:
            f.write(blob)
    os.makedirs(os.path.join(d, "oracle"), exist_ok=True)
    with open(os.path.join(d, "oracle", "rank-%d.json" % rank), "w") as f:
        json.dump(hung, f, indent=1)
    # the group is broken: leave without tearing it down (that may wait)
    os._exit(0 if hung["pickle"] or hung["json"] else 3)


def part_frgloo4(out):
    import torch.multiprocessing as mp
    # the Flight Recorder's buffer (both spellings: before and since 2.8)
    os.environ.setdefault("TORCH_FR_BUFFER_SIZE", "2000")
    os.environ.setdefault("TORCH_NCCL_TRACE_BUFFER_SIZE", "2000")
    d = os.path.join(out, "frgloo4")
    os.makedirs(os.path.join(d, "oracle"), exist_ok=True)
    with open(os.path.join(d, "oracle", "truth.json"), "w") as f:
        json.dump({"culprit": FR_CULPRIT, "group": "default_pg", "collective": "all_reduce",
                   "seq": 6, "stuck": [0, 1, 3],
                   "culprit_in": {"group": "tp (ranks 2, 3)", "collective": "all_reduce"}}, f, indent=1)
    mp.spawn(fr_worker, args=(out, 29900 + os.getpid() % 90), nprocs=GLOO_RANKS, join=True)


# ---- Flight Recorder dumps of a real NCCL group, beside its trace ------------------
#
# One process (one GPU holds a one-rank NCCL communicator only): 8
# all-reduces on the default group and 4 all-gathers on a second group,
# completed; then an all-reduce queued behind a 2 s GPU sleep
# (torch.cuda._sleep), dumped while it waits ("inflight") and again once it
# completed ("after"); the whole run profiled (trace/rank-0...), so that
# the dumps' entries can be placed on the trace by the collectives both
# hold. Each dump function torch has is tried under its own name (the
# NCCL recorder and the generic one are separate in some versions).

def part_frnccl1(out):
    os.environ["TORCH_NCCL_ENABLE_TIMING"] = "1"   # starts recorded
    os.environ.setdefault("TORCH_FR_BUFFER_SIZE", "2000")
    import torch.distributed as dist
    import torch._C._distributed_c10d as c10d
    d = os.path.join(out, "frnccl1")
    os.makedirs(os.path.join(d, "oracle"), exist_ok=True)
    dist.init_process_group("nccl", init_method="tcp://127.0.0.1:29613", rank=0, world_size=1,
                            device_id=torch.device("cuda:0"))
    g2 = dist.new_group([0])
    a = torch.ones(1 << 20, device="cuda")
    o = torch.empty(1 << 20, device="cuda")
    info = {"torch": torch.__version__, "dumps": {}}

    def dump(sub):
        info["dumps"][sub] = {"t_ns": time.time_ns()}
        for enc, names, mode in (("pickle", ("_dump_nccl_trace", "_dump_fr_trace"), "wb"),
                                 ("json", ("_dump_nccl_trace_json", "_dump_fr_trace_json"), "w")):
            for n in names:
                fn = getattr(c10d, n, None)
                if fn is None:
                    continue
                try:
                    blob = fn()
                except Exception as ex:  # noqa: BLE001
                    info["dumps"][sub][n] = repr(ex)[:200]
                    continue
                if mode == "w" and isinstance(blob, bytes):
                    blob = blob.decode("utf-8")
                sd = os.path.join(d, sub, enc + n.replace("_dump", "").replace("_trace", "").replace("_json", ""))
                os.makedirs(sd, exist_ok=True)
                with open(os.path.join(sd, "comm_lib_trace_rank_0"), mode) as f:
                    f.write(blob)
                info["dumps"][sub][n] = len(blob)

    prof = torch.profiler.profile(activities=activities(False), record_shapes=True)
    prof.start()
    for i in range(8):
        dist.all_reduce(a)
        if i % 2:
            dist.all_gather_into_tensor(o, a, group=g2)
    torch.cuda.synchronize()
    time.sleep(0.5)                 # the watchdog discovers the completions
    info["t_sleep_ns"] = time.time_ns()
    torch.cuda._sleep(4_000_000_000)    # about 2 s at the H200's clock
    dist.all_reduce(a)
    time.sleep(0.5)
    dump("inflight")
    torch.cuda.synchronize()
    info["t_done_ns"] = time.time_ns()
    time.sleep(0.5)
    dump("after")
    prof.stop()
    os.makedirs(os.path.join(d, "trace"), exist_ok=True)
    plain = os.path.join(d, "trace", "rank-0.pt.trace.json")
    prof.export_chrome_trace(plain)
    with open(plain, "rb") as f, gzip.open(plain + ".gz", "wb", compresslevel=9) as g:
        shutil.copyfileobj(f, g)
    os.remove(plain)
    with open(os.path.join(d, "oracle", "info.json"), "w") as f:
        json.dump(info, f, indent=1)
    log("frnccl1:", info)
    dist.destroy_process_group()


# ---- provenance ---------------------------------------------------------------

def provenance(out, cpu, results):
    p = {"script": "scripts/gpu_capture.py", "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
         "python": platform.python_version(), "torch": torch.__version__,
         "cuda": torch.version.cuda, "cpu_smoke": cpu, "parts": results}
    if not cpu and torch.cuda.is_available():
        p["gpu"] = torch.cuda.get_device_name(0)
        p["capability"] = list(torch.cuda.get_device_capability(0))
        try:
            p["nccl"] = ".".join(str(x) for x in torch.cuda.nccl.version())
        except Exception as ex:  # noqa: BLE001
            p["nccl"] = repr(ex)
        try:
            p["cudnn"] = torch.backends.cudnn.version()
        except Exception:  # noqa: BLE001
            pass
        try:
            p["driver"] = subprocess.run(["nvidia-smi", "--query-gpu=driver_version,name",
                                          "--format=csv,noheader"], capture_output=True,
                                         text=True, timeout=30).stdout.strip()
        except Exception as ex:  # noqa: BLE001
            p["driver"] = repr(ex)
    with open(os.path.join(out, "provenance.json"), "w") as f:
        json.dump(p, f, indent=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--parts", default="eager,graphs,nccl1,gloo4,gloo4async,ab,overlap,compile,frgloo4,frnccl1")
    ap.add_argument("--cpu-smoke", action="store_true")
    ap.add_argument("--one", help=argparse.SUPPRESS)   # run one part in this process
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    if a.one:
        {"eager": lambda: part_train(a.out, "eager", a.cpu_smoke),
         "compile": lambda: part_train(a.out, "compile", a.cpu_smoke),
         "graphs": lambda: part_train(a.out, "graphs", a.cpu_smoke),
         "nccl1": lambda: part_nccl1(a.out),
         "gloo4": lambda: part_gloo4(a.out, a.cpu_smoke),
         "gloo4async": lambda: part_gloo4(a.out, a.cpu_smoke, True),
         "gloo4nosleep": lambda: part_gloo4(a.out, a.cpu_smoke, False, 0.0),
         "gloo4asyncnosleep": lambda: part_gloo4(a.out, a.cpu_smoke, True, 0.0),
         "ab": lambda: part_ab(a.out, a.cpu_smoke),
         "overlap": lambda: part_overlap(a.out),
         "frgloo4": lambda: part_frgloo4(a.out),
         "frnccl1": lambda: part_frnccl1(a.out)}[a.one]()
        return
    results = {}
    for part in a.parts.split(","):
        if a.cpu_smoke and part not in ("eager", "gloo4", "gloo4async", "gloo4nosleep",
                                        "gloo4asyncnosleep", "ab", "frgloo4"):
            continue
        t = time.time()
        # Each part in a process of its own: a crash or a hang in one (NCCL,
        # a compiler) leaves the others' files, and NCCL reads its
        # environment (the plugin) at its first communicator.
        cmd = [sys.executable, os.path.abspath(__file__), "--out", a.out, "--one", part]
        if a.cpu_smoke:
            cmd.append("--cpu-smoke")
        # NCCL's files (the plugin's, NCCL_DEBUG's) go to the part's own
        # folder: a part that uses NCCL must not add files to another's set
        env = dict(os.environ)
        if "MERGETRACE_NCCL_DIR" in env:
            env["MERGETRACE_NCCL_DIR"] = os.path.join(a.out, part, "plugin")
        if "NCCL_DEBUG_FILE" in env:
            os.makedirs(os.path.join(a.out, part, "oracle"), exist_ok=True)
            env["NCCL_DEBUG_FILE"] = os.path.join(a.out, part, "oracle", "nccl_debug.%p.log")
        try:
            r = subprocess.run(cmd, timeout=150 if part == "compile" else 100, env=env)
            results[part] = {"rc": r.returncode, "seconds": round(time.time() - t, 1)}
        except subprocess.TimeoutExpired:
            results[part] = {"rc": "timeout", "seconds": round(time.time() - t, 1)}
        log(part, results[part])
        provenance(a.out, a.cpu_smoke, results)
    # a part that failed must fail the capture, not only its log line
    if any(r["rc"] != 0 for r in results.values()):
        sys.exit(1)


if __name__ == "__main__":
    try:
        main()
    except Exception:
        traceback.print_exc()
        sys.exit(1)
