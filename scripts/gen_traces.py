#!/usr/bin/env python3
"""Seeded generator of synthetic multi-rank Kineto (PyTorch profiler) traces
with ground truth, for mergetrace tests and benchmarks.

The job is simulated in true time (integer ns).  Each rank's file is written in
that rank's own clock, local(t) = t + offset + round(drift_ppm * 1e-6 * (t - T0)),
and truth.json holds the numbers a test compares mergetrace against (event
counts, GPU time breakdown, annotation projections, collective instances with
their true start/end times, pipeline overlap).  Standard library only; the
same seed gives byte-identical output.
"""

import argparse
import gzip
import hashlib
import json
import os
import random
import sys
import time
from array import array
from bisect import bisect_left, bisect_right

PROG = "gen_traces.py"
QUARTER_NS = 7889238000000000          # Kineto's ChromeTraceBaseTime interval
EPOCH_2026_NS = 1767189312000000000    # an exact multiple of QUARTER_NS
BIL = 1000000000
MIB = 1 << 20
MEM_BASE = 512 * MIB                   # --memory: weights allocated before the window
MEM_UNIT = 8 * MIB                     # --memory: the schedule's allocation unit
HALF_BIL = 500000000

# GPU activity classes used for the truth breakdown.
CLS_COMPUTE, CLS_COMM, CLS_MEM = 0, 1, 2

# Kernel specs: (name, [args fragments after the common kernel args]).
# Some names contain "(anonymous namespace)" before the real parameter list,
# as real ATen kernels do, so "cut at the first '('" is a visible mistake.
def _kspec(name, regs, smem, grid, block):
    return (name, ['"registers per thread": %d' % regs, '"shared memory": %d' % smem,
                   '"grid": [%d, %d, %d]' % grid, '"block": [%d, %d, %d]' % block])

# The annotation around the forward pass of the data-parallel jobs: the
# phase --straggler slows (truth.json "straggler_phase").
STRAG_PHASE = "## forward ##"

K_GEMM_F32 = _kspec("sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_cublas",
                    168, 213248, (132, 1, 1), (384, 1, 1))
K_GEMM_F32_BW = _kspec("sm90_xmma_gemm_f32f32_tf32f32_f32_nt_n_tilesize128x256x32_cublas",
                       168, 221184, (132, 1, 1), (384, 1, 1))
K_RELU = _kspec("void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)"
                "::clamp_min_functor<float>, std::array<char*, 2ul> >(int, at::native::"
                "(anonymous namespace)::clamp_min_functor<float>, std::array<char*, 2ul>)",
                26, 0, (4096, 1, 1), (128, 1, 1))
K_THRESH_BW = _kspec("void at::native::vectorized_elementwise_kernel<4, at::native::"
                     "threshold_kernel_functor<float>, std::array<char*, 3ul> >(int, at::native::"
                     "threshold_kernel_functor<float>, std::array<char*, 3ul>)",
                     28, 0, (4096, 1, 1), (128, 1, 1))
K_FOREACH = _kspec("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::"
                   "(anonymous namespace)::TensorListMetadata<2>, at::native::(anonymous namespace)"
                   "::BinaryOpListAlphaFunctor<float, 2, 2, 0>, std::plus<float>, float>(at::native::"
                   "(anonymous namespace)::TensorListMetadata<2>, at::native::(anonymous namespace)"
                   "::BinaryOpListAlphaFunctor<float, 2, 2, 0>, std::plus<float>, float)",
                   40, 0, (320, 1, 1), (512, 1, 1))
K_GEMM_BF16 = _kspec("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_cublas",
                     168, 222208, (132, 1, 1), (384, 1, 1))
K_GELU = _kspec("void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)"
                "::gelu_functor<c10::BFloat16>, std::array<char*, 2ul> >(int, at::native::"
                "(anonymous namespace)::gelu_functor<c10::BFloat16>, std::array<char*, 2ul>)",
                30, 0, (8192, 1, 1), (128, 1, 1))
K_GEMM_BF16_BW = _kspec("sm90_xmma_gemm_bf16bf16_bf16f32_f32_nt_n_tilesize128x128x64_cublas",
                        168, 213248, (132, 1, 1), (384, 1, 1))
K_ADD_BF16 = _kspec("void at::native::vectorized_elementwise_kernel<4, at::native::"
                    "CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul> >(int, at::native::"
                    "CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul>)",
                    24, 0, (8192, 1, 1), (128, 1, 1))

NCCL_NEW = {
    ("allreduce", "Float"): "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
    ("allreduce", "BFloat16"): "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
    ("p2p", None): "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)",
    ("allgather", "Float"): "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
    ("reducescatter", "Float"): "ncclDevKernel_ReduceScatter_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
}
NCCL_OLD = {
    ("allreduce", "Float"): "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
    ("allreduce", "BFloat16"): "ncclKernel_AllReduce_RING_LL_Sum_half(ncclDevComm*, unsigned long, ncclWork*)",
    ("p2p", None): "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)",
    ("allgather", "Float"): "ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)",
    ("reducescatter", "Float"): "ncclKernel_ReduceScatter_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
}
# c10d op, nccl:* annotation and "Collective name" of each collective
COLL_OPS = {"allreduce": ("c10d::allreduce_", "nccl:all_reduce", "allreduce"),
            "send": ("c10d::send", "nccl:send", "send"), "recv": ("c10d::recv_", "nccl:recv", "recv"),
            "allgather": ("c10d::_allgather_base_", "nccl:_all_gather_base", "_allgather_base"),
            "reducescatter": ("c10d::_reduce_scatter_base_", "nccl:_reduce_scatter_base", "_reduce_scatter_base")}
NCCL_KARGS = ['"registers per thread": 96', '"shared memory": 0', '"grid": [16, 1, 1]',
              '"block": [512, 1, 1]']
OLD_TYPE = {"Float": "float", "BFloat16": "c10::Half"}

# Launch APIs: (cat, name, cbid).
API_KERNEL = ("cuda_runtime", "cudaLaunchKernel", 211)
API_NCCL_NEW = ("cuda_driver", "cuLaunchKernelEx", 652)
API_MEMCPY = ("cuda_runtime", "cudaMemcpyAsync", 41)
API_MEMSET = ("cuda_runtime", "cudaMemsetAsync", 51)
API_DEVSYNC = ("cuda_runtime", "cudaDeviceSynchronize", 165)
API_STREAMSYNC = ("cuda_runtime", "cudaStreamSynchronize", 131)

_NAME = {}


def nm(name):
    """The '"name": ...' fragment of an event, JSON-escaped once per name."""
    f = _NAME.get(name)
    if f is None:
        f = _NAME[name] = '"name": ' + json.dumps(name)
    return f


_CAT = {}


def catf(cat):
    f = _CAT.get(cat)
    if f is None:
        f = _CAT[cat] = '"cat": "%s"' % cat
    return f


def comms_id(seed, pg, seq, p2p, pair):
    """A seeded 64-bit id shared by all participants of one instance (half of
    them exceed INT64_MAX, as real ones can)."""
    h = hashlib.blake2b(("%d|%s|%d|%d|%s" % (seed, pg, seq, int(p2p), pair)).encode(),
                        digest_size=8)
    return int.from_bytes(h.digest(), "big")


def union_measure(starts, ends):
    """Total length of the union of [s, e) intervals; returns (measure, merged list)."""
    if not starts:
        return 0, []
    order = sorted(range(len(starts)), key=starts.__getitem__)
    merged = []
    cs = starts[order[0]]
    ce = ends[order[0]]
    for i in order[1:]:
        s = starts[i]
        e = ends[i]
        if s > ce:
            merged.append((cs, ce))
            cs, ce = s, e
        elif e > ce:
            ce = e
    merged.append((cs, ce))
    return sum(e - s for s, e in merged), merged


def merged_of(iv):
    return union_measure([a for a, _ in iv], [b for _, b in iv])


def inter_measure(a, b):
    """Measure of the intersection of two sorted, disjoint interval lists."""
    i = j = 0
    tot = 0
    while i < len(a) and j < len(b):
        s = max(a[i][0], b[j][0])
        e = min(a[i][1], b[j][1])
        if e > s:
            tot += e - s
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return tot


def median_lo(v):
    s = sorted(v)
    return s[(len(s) - 1) // 2]


def mean_int(v):
    n = len(v)
    return (2 * sum(v) + n) // (2 * n)


def device_props(n, new):
    if new:
        name, mem, major, sms, optin, smpm = "NVIDIA H100 80GB HBM3", 85045231616, 9, 132, 232448, 233472
    else:
        name, mem, major, sms, optin, smpm = "NVIDIA A100-SXM4-40GB", 42298834944, 8, 108, 166912, 167936
    out = []
    for i in range(n):
        out.append('{"id": %d, "name": "%s", "totalGlobalMem": %d, "computeMajor": %d, '
                   '"computeMinor": 0, "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048, '
                   '"regsPerBlock": 65536, "warpSize": 32, "sharedMemPerBlock": 49152, "numSms": %d, '
                   '"regsPerMultiprocessor": 65536, "sharedMemPerBlockOptin": %d, '
                   '"sharedMemPerMultiprocessor": %d}' % (i, name, mem, major, sms, optin, smpm))
    return out


class Job:
    """Run-wide settings and shared state (process groups, collective log)."""

    def __init__(self, a):
        self.a = a
        self.seed = a.seed
        self.new = a.format == "new"
        self.W = a.ranks
        self.rpn = a.ranks_per_node
        self.rng = random.Random(a.seed)
        # T0: a few hours into the 2026 quarter, plus a random ns remainder.
        self.T0 = EPOCH_2026_NS + 3 * 3600 * BIL + self.rng.randrange(3600 * BIL)
        self.jitter_ns = int(round(a.end_jitter_us * 1000))
        self.gap_ns = int(round(a.host_gap_us * 1000))
        self.srange = parse_range(a.straggler_steps) if a.straggler_steps else None
        self.collectives = []
        self.keep_coll = not a.no_collective_truth
        self.pgs = []   # (name, desc, ranks)
        self.wait = [[0, 0, 0] for _ in range(self.W)]   # count, arrived last, wait ns
        self.pgs.append(("0", "default_pg", list(range(self.W))))

    def in_steps(self, step):
        """Is ProfilerStep step within --straggler-steps (every step without it)?"""
        r = self.srange
        return r is None or step is None or r[0] <= step <= r[1]

    def scaled(self, name, dur, rank=None, step=None):
        """A compute kernel's duration after --slow-pct, --slow-kernel (on
        --slow-kernel-rank only, when given) and --slow-rank (applied after the random draws, so a pair of jobs with
        one seed differs only by these factors)."""
        a = self.a
        f = 1.0 + a.slow_pct / 100.0
        if a.slow_kernel and a.slow_kernel[0] in name and a.slow_kernel_rank in (None, rank):
            f *= a.slow_kernel[1]
        if a.slow_rank and rank == a.slow_rank[0] and self.in_steps(step):
            f *= a.slow_rank[1]
        return dur if f == 1.0 else int(round(dur * f))

    def slow_host_ns(self, rank, step):
        """--slow-host: rank's host work before each of its compute and
        memory launches (a slow CPU), 0 for the others."""
        sh = self.a.slow_host
        return int(round(sh[1] * 1000)) if sh and rank == sh[0] and self.in_steps(step) else 0

    def late_ns(self, rank, step):
        """--late-rank: how long rank's host waits at the start of step
        (a data loader, a pause), 0 for the others."""
        lr = self.a.late_rank
        return int(round(lr[1] * 1000)) if lr and rank == lr[0] and self.in_steps(step) else 0

    def xfer(self, T, members=()):
        """A collective's transfer time after --slow-comm and, when rank R of
        --slow-link R:F is among its members, F (applied after the random
        draws, so a pair of jobs with one seed differs only by them)."""
        f = self.a.slow_comm
        sl = self.a.slow_link
        if sl and sl[0] in members:
            f *= sl[1]
        return T if f == 1.0 else int(round(T * f))

    def log_coll(self, rec):
        # Who waited for whom, in true time: a participant's kernel starts when
        # it arrives and ends with everyone, so max(start) - start is its wait.
        st = rec["true_start_ns"]
        last = max(st.values())
        for r, v in st.items():
            w = self.wait[int(r)]
            w[0] += 1
            w[1] += v == last
            w[2] += last - v
        if self.keep_coll:
            self.collectives.append(rec)


class Rank:
    """One rank: its clock, its simulation cursors, its writer and its stats."""

    def __init__(self, job, rank, off_ns, drift_ppb, path):
        a = job.a
        self.job = job
        self.rank = rank
        self.new = job.new
        self.rng = random.Random(job.rng.getrandbits(64))
        self.krng = random.Random(a.seed * 1000003 + rank) if a.shuffle_keys else None
        self.jrng = random.Random(a.seed * 1000033 + rank) if a.ts_jitter_ns else None
        self.off = off_ns
        self.dppb = drift_ppb
        self.T0 = job.T0
        self.dev = rank % job.rpn
        self.pid = 100000 + rank * 13
        self.tid_main = self.pid
        self.tid_ag = self.pid + 5
        self.s_comp = 7
        self.s_nccl = 40 + rank % 3           # default / tensor-parallel communicator
        self.s_p2p = 52 + rank % 5            # pipeline P2P communicator
        self.free = {}
        self.ext = 0
        self.corr = 1000 + 17 * rank
        self.pyid = 1
        self.pg_seq = {}
        self.p2p_seq = {}
        self.unlinked = a.unlinked
        self.indent = a.indent
        self.used_ag = False
        self.mem_total = 0
        # --memory: a known allocation schedule (see mem_on_call); its own
        # random numbers, so the job's timing is the same as without it
        self.memsim = a.memory
        self.mem_log = []
        self.mem_reserved = 1 << 34
        if self.memsim:
            self.mrng = random.Random(a.seed * 7919 + rank)
            self.mem_total = MEM_BASE          # weights, allocated before the profiling window
            self.mem_reserved = MEM_BASE
            self.mem_ann = None
            self.mem_fwd = []
            self.mem_grads = []
            self.mem_relu = 0
            self.mem_blocks = []
            self.mem_leak = a.mem_leak_mb * MIB if a.mem_leak_rank == rank else 0
        # profiling window
        self.win_s = job.T0 + self.ri(0, 3000000)
        self.next_start = self.win_s + self.ri(300000, 2000000)
        self.base = (self.loc(self.win_s) // QUARTER_NS) * QUARTER_NS
        # writer
        self.path = path
        self.f = gzip.open(path, "wb", compresslevel=6) if a.gzip else open(path, "wb")
        self.nbytes = 0
        self.buf = []
        self.started = False
        if self.indent == 0:
            self.sep, self.evpre = ", ", ""
        else:
            self.sep, self.evpre = ",\n  ", "\n  "
        self.cnt = {}     # (ph, cat) -> events written
        # stats (written ns)
        self.ivs = (array("q"), array("q"), array("q"))
        self.ive = (array("q"), array("q"), array("q"))
        self.n_sync = 0
        self.n_kernel = [0, 0]
        self.n_memcpy = 0
        self.n_memset = 0
        self.gpu_lo = None
        self.gpu_hi = None
        # projection: per step lists, flushed into proj
        self.step_anns = []
        self.step_launch = []
        self.proj = {}
        self.chunk_iv = []
        # steps: (step, true start, true end = max(range end, last GPU end of its launches))
        self.step_hi = 0
        self.step_hi_node = None
        self.step_times = []
        self.step_ranges = []   # (step, written start ns, written end ns)
        self.step_no = None
        self.kind = a.kind
        # the schedule's own dependency graph, for the critical-path truth:
        # GPU nodes (s, e, cls, bind, pred, le, m, last) and syncs
        self.gnodes = []
        self.slast = {}
        self.last_comm = None
        self.gsyncs = []

    # ---------------------------------------------------------------- clock
    def loc(self, t):
        return t + self.off + (self.dppb * (t - self.T0) + HALF_BIL) // BIL

    def ri(self, lo, hi):
        return lo + int((hi - lo) * self.rng.random())

    def vary(self, ns):
        q = self.job.a.noise_pct / 100.0
        return int(ns * (1.0 - q + 2.0 * q * self.rng.random()))

    def next_ext(self):
        self.ext += 1
        return self.ext

    def next_corr(self):
        self.corr += 1
        return self.corr

    # ---------------------------------------------------------------- writer
    def write(self, txt):
        self.nbytes += len(txt)
        self.f.write(txt.encode("ascii"))

    def header(self):
        job = self.job
        a = job.a
        ind = self.indent
        nl = "" if ind == 0 else "\n"
        sp = " " if ind == 0 else "  "
        props = device_props(max(8, job.rpn), self.new)
        if ind == 0:
            dp = "[" + ", ".join(props) + "]"
        else:
            dp = "[\n    " + ",\n    ".join(props) + "\n  ]"
        if self.new:
            cfgs = ", ".join('{"pg_name": "%s", "pg_desc": "%s", "backend_config": "cuda:nccl", '
                             '"pg_size": %d, "ranks": %s}' % (n, d, len(rs), json.dumps(rs))
                             for n, d, rs in job.pgs)
            di = ('{"backend": "nccl", "rank": %d, "world_size": %d, "pg_count": %d, '
                  '"pg_config": [%s], "nccl_version": "2.21.5"}' % (self.rank, job.W, len(job.pgs), cfgs))
        else:
            di = '{"backend": "nccl", "rank": %d, "world_size": %d}' % (self.rank, job.W)
        head = [("schemaVersion", "1"), ("deviceProperties", dp)]
        tail = []
        self.trace_name = '"/tmp/gen_traces/rank-%d.%d.pt.trace.json"' % (self.rank, self.win_s // 1000000)
        if a.shuffle_keys:
            tail = [("traceName", self.trace_name), ("distributedInfo", di)]
            if self.new:
                tail += [("displayTimeUnit", '"ms"'), ("baseTimeNanoseconds", str(self.base))]
        else:
            head.append(("distributedInfo", di))
            if self.new:
                head += [("displayTimeUnit", '"ms"'), ("baseTimeNanoseconds", str(self.base))]
            tail = [("traceName", self.trace_name)]
        self.tail = tail
        txt = "{" + nl + "".join('%s"%s": %s,%s' % (sp if ind else "", k, v, nl if ind else " ")
                                 for k, v in head)
        txt += ('%s"traceEvents": [' % (sp if ind else ""))
        self.write(txt)

    def finish(self):
        self.flush()
        ind = self.indent
        if ind == 0:
            txt = "]" + "".join(', "%s": %s' % (k, v) for k, v in self.tail) + "}"
        else:
            txt = "\n  ]" + "".join(',\n  "%s": %s' % (k, v) for k, v in self.tail) + "\n}\n"
        self.write(txt)
        self.f.close()

    def put(self, ph, cat, top, br, args):
        """Render one event. top: fragments in Kineto key order; br: where
        Kineto starts its second line; args: fragments or None."""
        c = self.cnt
        k = (ph, cat)
        c[k] = c.get(k, 0) + 1
        if self.krng is not None:
            sh = self.krng.shuffle
            if args:
                args = list(args)
                sh(args)
                top = top + ['"args": {' + ", ".join(args) + "}"]
            sh(top)
            self.buf.append("{" + ", ".join(top) + "}")
        elif self.indent == 2:
            s = "{\n    " + ", ".join(top[:br])
            if br < len(top):
                s += ",\n    " + ", ".join(top[br:])
            if args:
                s += ',\n    "args": {\n      ' + ", ".join(args) + "\n    }"
            self.buf.append(s + "\n  }")
        elif args:
            self.buf.append("{" + ", ".join(top) + ', "args": {' + ", ".join(args) + "}}")
        else:
            self.buf.append("{" + ", ".join(top) + "}")

    def flush(self):
        if not self.buf:
            return
        txt = self.sep.join(self.buf)
        if self.started:
            txt = self.sep + txt
        else:
            txt = self.evpre + txt
            self.started = True
        self.buf.clear()
        self.write(txt)

    def tsw(self, t):
        """Written form of a point in time: (written abs ns, text)."""
        ls = self.loc(t)
        if self.new:
            r = ls - self.base
            return ls, "%d.%03d" % divmod(r, 1000)
        tu = ls // 1000
        return tu * 1000, str(tu)

    def X(self, cat, name, pid, tid, s, e, args):
        """A complete (ph X) event from true [s, e]; returns (written start
        ns, written end ns, ts text)."""
        off = self.off
        dp = self.dppb
        t0 = self.T0
        ls = s + off + (dp * (s - t0) + HALF_BIL) // BIL
        le = e + off + (dp * (e - t0) + HALF_BIL) // BIL
        if self.jrng is not None and pid == self.dev:
            # --ts-jitter-ns: GPU timestamps as a profiler rounds them apart
            # (a kernel that begins as the one before it ends is written a
            # few ns before that end); its own random numbers
            j = self.job.a.ts_jitter_ns
            ls += self.jrng.randint(-j, j)
            le = max(ls, le + self.jrng.randint(-j, j))
        if self.new:
            r = ls - self.base
            d = le - ls
            ts = "%d.%03d" % divmod(r, 1000)
            du = "%d.%03d" % divmod(d, 1000)
            ws, we = ls, le
        else:
            tu = ls // 1000
            dd = (le - ls) // 1000
            ts = str(tu)
            du = str(dd)
            ws = tu * 1000
            we = ws + dd * 1000
        self.put("X", cat, ['"ph": "X"', _CAT.get(cat) or catf(cat), _NAME.get(name) or nm(name),
                            '"pid": %s' % pid, '"tid": %s' % tid, '"ts": ' + ts, '"dur": ' + du], 5, args)
        return ws, we, ts

    def ua(self, name, tid, s, e, ext, extra=None):
        args = ['"External id": %d' % ext]
        if extra:
            args += extra
        ws, we, _ = self.X("user_annotation", name, self.pid, tid, s, e, args)
        key = "ProfilerStep#*" if name.startswith("ProfilerStep#") else name
        self.step_anns.append((key, tid, ws, we))

    def pyfunc(self, name, s, e, parent):
        if not self.new:
            return
        self.pyid += 1
        self.X("python_function", name, self.pid, self.tid_main, s, e,
               ['"Python parent id": %d' % parent, '"Python id": %d' % self.pyid])

    def mem_instant(self, t, nbytes, tid=None, op=None, ann=None):
        if tid is None:
            addr = 0x7F0000000000 + (self.ri(0, 1 << 24) << 9)
            tid = self.tid_main
        else:
            addr = 0x7E0000000000 + (self.mrng.randrange(1 << 24) << 9)
        self.mem_total += nbytes
        if self.memsim:
            # the caching allocator: reserved grows in 32 MiB segments, never shrinks
            self.mem_reserved = max(self.mem_reserved, -(-self.mem_total // (32 * MIB)) * 32 * MIB)
            if self.mem_log and t <= self.mem_log[-1]["t"]:
                raise AssertionError("memory schedule out of time order")
            self.mem_log.append({"t": t, "written_ns": self.loc(t), "bytes": nbytes, "total": self.mem_total,
                                 "reserved": self.mem_reserved, "op": op,
                                 "ann": ann or "ProfilerStep#%d" % self.step_no, "step": self.step_no})
        ws, ts = self.tsw(t)
        self.put("i", "cpu_instant_event",
                 ['"ph": "i"', '"cat": "cpu_instant_event"', '"s": "t"', '"name": "[memory]"',
                  '"pid": %d' % self.pid, '"tid": %d' % tid, '"ts": ' + ts], 4,
                 ['"Device Type": 1', '"Device Id": %d' % self.dev, '"Addr": %d' % addr,
                  '"Bytes": %d' % nbytes, '"Total Allocated": %d' % self.mem_total,
                  '"Total Reserved": %d' % self.mem_reserved])

    def mem_on_call(self, tid, op, t0, t1):
        """--memory: the allocations and frees of the innermost op `op`,
        running in (t0, t1) on thread tid. Forward GEMMs keep activations
        of growing size, relu one more; backward frees them and allocates
        gradients, which the optimizer frees; the leaking rank allocates in
        the optimizer and never frees. Pipeline stages hold activations in
        proportion to how early they are (stage 0 the most)."""
        acts = []
        if op == "aten::addmm":
            b = MEM_UNIT * (len(self.mem_fwd) + 1)
            self.mem_fwd.append(b)
            acts = [b]
        elif op == "aten::relu":
            self.mem_relu = 2 * MEM_UNIT
            acts = [self.mem_relu]
        elif op == "aten::threshold_backward":
            acts = [-self.mem_relu]
        elif op == "aten::mm" and self.kind == "dp":
            g = MEM_UNIT // 2
            self.mem_grads.append(g)
            acts = [g, -self.mem_fwd.pop()]
        elif op == "aten::_foreach_mul_" and self.mem_leak:
            acts = [self.mem_leak]
        elif op == "aten::_foreach_add_":
            acts = [-g for g in self.mem_grads]
            self.mem_grads = []
        elif op == "aten::mm":
            b = MEM_UNIT * (self.S - self.stage)
            self.mem_blocks.append(b)
            acts = [b]
        elif op == "aten::add" and self.kind == "pp":
            acts = [-b for b in self.mem_blocks]
            self.mem_blocks = []
        if not acts:
            return
        gap = min(100, (t1 - t0 - 1000) // (len(acts) + 1))
        for k, b in enumerate(acts):
            self.mem_instant(t0 + 1000 + k * gap, b, tid, op, self.mem_ann)

    def mem_truth(self):
        """The schedule's numbers (analysis.h "memory"), from mem_log."""
        log = self.mem_log
        if not log:
            return None
        pk = max(range(len(log)), key=lambda k: (log[k]["total"], -k))
        pr = max(range(len(log)), key=lambda k: (log[k]["reserved"], -k))
        steps = []
        for num, s0, s1 in self.step_ranges:
            inside = [m for m in log if s0 <= m["written_ns"] < s1]
            upto = [m for m in log if m["written_ns"] <= s1]
            steps.append({"step": num, "allocated_end": upto[-1]["total"] if upto else None,
                          "allocs": sum(1 for m in inside if m["bytes"] > 0),
                          "frees": sum(1 for m in inside if m["bytes"] < 0),
                          "peak_allocated": max((m["total"] for m in inside), default=None)})
        ends = [(k, st["allocated_end"]) for k, st in enumerate(steps) if st["allocated_end"] is not None]
        used = [(k, e) for k, e in ends if k >= 1]
        trend = None
        if len(used) >= 2:
            n = len(used)
            sx = sum(k for k, _ in used)
            sy = sum(e for _, e in used)
            sxx = sum(k * k for k, _ in used)
            sxy = sum(k * e for k, e in used)
            trend = round((n * sxy - sx * sy) / (n * sxx - sx * sx))
        grows = len(used) >= 2 and all(ends[i][1] > ends[i - 1][1] for i in range(1, len(ends)))
        m = log[pk]
        return {"device": self.dev, "events": len(log), "peak_allocated": m["total"], "peak_true_ns": m["t"],
                "peak_written_ns": m["written_ns"], "peak_step": m["step"], "peak_op": m["op"],
                "peak_annotation": m["ann"], "peak_bytes": m["bytes"], "reserved_at_peak": m["reserved"],
                "peak_reserved": log[pr]["reserved"], "peak_reserved_true_ns": log[pr]["t"],
                "end_allocated": log[-1]["total"], "steps": steps, "trend_bytes_per_step": trend,
                "trend_steps": len(used), "grows_every_step": grows, "leak_bytes_per_step": self.mem_leak}

    # ---------------------------------------------------------------- CPU stacks
    def call(self, tid, t, frames, api):
        """Nested CPU frames [(cat, name, extra args)], outermost first, with
        one launch/API call inside the innermost. Emits the CPU events.
        Returns (t_after, launch_start, launch_end, corr, ext for the GPU side,
        written launch ts)."""
        rnd = self.rng.random
        n = len(frames)
        exts = [self.next_ext() for _ in range(n)]
        starts = []
        x = t
        for _ in range(n):
            starts.append(x)
            x += 2000 + int(6000 * rnd())
        ls = x
        if self.memsim:
            self.mem_on_call(tid, frames[-1][1], starts[-1], ls)
        le = ls + 3000 + int(6000 * rnd())
        x = le
        ends = [0] * n
        for i in range(n - 1, -1, -1):
            x += 1500 + int(4000 * rnd())
            ends[i] = x
        inner = None
        for i in range(n):
            cat, name, extra = frames[i]
            if cat == "user_annotation":
                self.ua(name, tid, starts[i], ends[i], exts[i], extra)
            else:
                a = ['"External id": %d' % exts[i]]
                if extra:
                    a += extra
                self.X(cat, name, self.pid, tid, starts[i], ends[i], a)
                inner = exts[i]
        corr = self.next_corr()
        if self.unlinked:
            inner = corr
        lws, _, _ = self.X(api[0], api[1], self.pid, tid, ls, le,
                           ['"External id": %d' % inner, '"cbid": %d' % api[2], '"correlation": %d' % corr])
        return x, ls, le, corr, inner, lws

    # ---------------------------------------------------------------- GPU side
    def gpu(self, cat, name, stream, s, e, ext, corr, extra, tid, ls, lws, cls, p2p=False, bind=None, le=None):
        if cat == "kernel":
            args = ['"External id": %d' % ext, '"queued": 0', '"device": %d' % self.dev, '"context": 1',
                    '"stream": %d' % stream, '"correlation": %d' % corr] + extra
        else:
            nb = extra
            args = ['"External id": %d' % ext, '"device": %d' % self.dev, '"context": 1',
                    '"stream": %d' % stream, '"correlation": %d' % corr, '"bytes": %d' % nb,
                    '"memory bandwidth (GB/s)": %.3f' % (nb / max(1, e - s))]
        ws, we, ts = self.X(cat, name, self.dev, stream, s, e, args)
        _, lts = self.tsw(ls)
        self.put("s", "ac2g", ['"ph": "s"', '"id": %d' % corr, '"pid": %d' % self.pid, '"tid": %d' % tid,
                               '"ts": ' + lts, '"cat": "ac2g"', '"name": "ac2g"'], 5, None)
        self.put("f", "ac2g", ['"ph": "f"', '"id": %d' % corr, '"pid": %d' % self.dev, '"tid": %d' % stream,
                               '"ts": ' + ts, '"cat": "ac2g"', '"name": "ac2g"', '"bp": "e"'], 5, None)
        self.ivs[cls].append(ws)
        self.ive[cls].append(we)
        if cat == "kernel":
            self.n_kernel[1 if cls == CLS_COMM else 0] += 1
        elif cat == "gpu_memcpy":
            self.n_memcpy += 1
        else:
            self.n_memset += 1
        if self.gpu_lo is None or ws < self.gpu_lo:
            self.gpu_lo = ws
        if self.gpu_hi is None or we > self.gpu_hi:
            self.gpu_hi = we
        self.step_launch.append((tid, lws, ws, we))
        # what bound the start (the schedule knows): ("stream"|"launch"|"x", pred node)
        node = {"s": s, "e": e, "cls": cls, "bind": bind[0] if bind else None,
                "pred": bind[1] if bind else None, "le": le, "m": None, "last": None}
        self.gnodes.append(node)
        idx = len(self.gnodes) - 1
        self.slast[stream] = idx
        if cls == CLS_COMM:
            self.last_comm = idx
        if e > self.step_hi:
            self.step_hi = e
            self.step_hi_node = idx
        if not p2p:
            self.chunk_iv.append((s, e))
        f = self.free
        if f.get(stream, 0) < e:
            f[stream] = e
        return ws, we

    def launch_compute(self, tid, t, frames, kspec, dur, dep=0, api=API_KERNEL, kind="kernel", nbytes=0,
                       dep_node=None):
        """CPU frames + launch + one GPU activity on the compute stream.
        Returns (t_after, gpu_start, gpu_end)."""
        # --host-gap-us: host work before the launch (no random draw, so
        # the twin without it has the same noise)
        t += self.job.gap_ns + self.job.slow_host_ns(self.rank, self.step_no)
        x, ls, le, corr, ext, lws = self.call(tid, t, frames, api)
        if kind == "kernel":
            dur = self.job.scaled(kspec[0], dur, self.rank, self.step_no)
        st = self.s_comp
        fs = self.free.get(st, 0)
        ln = le + self.ri(2500, 7000)
        gs = max(fs, ln, dep)
        ge = gs + dur
        if gs == fs and st in self.slast:
            bind = ("stream", self.slast[st])
        elif gs == ln:
            bind = ("launch", None)
        else:
            # dep: the end of dep_node, else of this rank's last collective
            bind = ("x", self.last_comm if dep_node is None else dep_node)
        if kind == "kernel":
            self.gpu("kernel", kspec[0], st, gs, ge, ext, corr, kspec[1], tid, ls, lws, CLS_COMPUTE, bind=bind, le=le)
        else:
            self.gpu(kind, kspec, st, gs, ge, ext, corr, nbytes, tid, ls, lws, CLS_MEM, bind=bind, le=le)
        return x, gs, ge

    def comm_frames(self, coll, pg, ranks, dtype, nelems, seq, cid, peer=None, nout=None):
        """CPU frames of one collective / P2P op (c10d op > record_param_comms >
        nccl:* annotation) and the metadata to copy onto its kernel."""
        op, ann, cname = COLL_OPS[coll]
        if not self.new:
            rpc = ['"Input Dims": [[], [], [], [], [], [], []]',
                   '"Input type": ["TensorList", "Scalar", "Scalar", "Scalar", "", "", ""]']
            uaa = ['"Input Dims": [[%d]]' % nelems, '"Input type": ["%s"]' % OLD_TYPE[dtype]]
            return [("cpu_op", op, None), ("cpu_op", "record_param_comms", rpc),
                    ("user_annotation", ann, uaa)], []
        rstr = '"Process Group Ranks": "[%s]"' % ", ".join(str(r) for r in ranks)
        desc = self.job.pg_desc[pg]
        k = ['"Collective name": "%s"' % cname, '"dtype": "%s"' % dtype, '"In msg nelems": %d' % nelems,
             '"Out msg nelems": %d' % (nelems if nout is None else nout), '"Group size": %d' % len(ranks),
             '"In split size": "[]"',
             '"Out split size": "[]"', '"Process Group Name": "%s"' % pg,
             '"Process Group Description": "%s"' % desc, rstr]
        if coll == "send":
            k.append('"Dst Rank": %d' % peer)
        elif coll == "recv":
            k.append('"Src Rank": %d' % peer)
        k += ['"Seq": %d' % seq, '"Comms Id": %d' % cid]
        grank = ranks.index(peer) if peer is not None else ranks.index(self.rank)
        stride = ranks[1] - ranks[0] if len(ranks) > 1 else 1
        rpc = k + ['"Rank": %d' % grank, '"Global rank start": %d' % ranks[0],
                   '"Global rank stride": %d' % stride]
        return [("cpu_op", op, None), ("cpu_op", "record_param_comms", rpc),
                ("user_annotation", ann, None)], k

    def launch_comm(self, tid, t, coll, pg, ranks, dtype, nelems, stream, peer=None, seq_key=None, nout=None):
        """Launch a collective / P2P op; the kernel is emitted later by
        emit_comm once every participant's readiness is known."""
        if seq_key is None:
            seq = self.pg_seq[pg] = self.pg_seq.get(pg, 0) + 1
            cid = comms_id(self.job.seed, pg, seq, False, "")
        else:
            seq = self.p2p_seq[seq_key] = self.p2p_seq.get(seq_key, 0) + 1
            cid = comms_id(self.job.seed, pg, seq, True, "%d-%d" % seq_key)
        frames, kmeta = self.comm_frames(coll, pg, ranks, dtype, nelems, seq, cid, peer, nout)
        api = API_NCCL_NEW if self.new else API_KERNEL
        x, ls, le, corr, ext, lws = self.call(tid, t, frames, api)
        ln = le + self.ri(3000, 8000)
        lb = max(ln, self.free.get(stream, 0))
        pend = dict(ln=ln, le=le, comp_node=self.slast.get(self.s_comp), coll=coll, pg=pg, seq=seq, cid=cid, stream=stream, ext=ext, corr=corr,
                    ls=ls, lws=lws, tid=tid, lb=lb, kmeta=kmeta, dtype=dtype, nelems=nelems,
                    ua_ext=self.ext, ann=COLL_OPS[coll][1])
        return x, pend

    def emit_comm(self, p, s, e):
        kind = "p2p" if p["coll"] in ("send", "recv") else p["coll"]
        names = NCCL_NEW if self.new else NCCL_OLD
        kname = names[(kind, None if kind == "p2p" else p["dtype"])]
        st = p["stream"]
        if st in self.slast and s == self.free.get(st, 0):
            bind = ("stream", self.slast[st])
        elif s == p["ln"]:
            bind = ("launch", None)
        elif p["comp_node"] is not None and s == self.gnodes[p["comp_node"]]["e"]:
            bind = ("x", p["comp_node"])
        else:
            bind = None
        self.gpu("kernel", kname, st, s, e, p["ext"], p["corr"], NCCL_KARGS + p["kmeta"],
                 p["tid"], p["ls"], p["lws"], CLS_COMM, p2p=(kind == "p2p"), bind=bind, le=p["le"])
        if self.new:
            # Kineto widens GPU user annotations by 1 ns on each side.
            self.X("gpu_user_annotation", p["ann"], self.dev, p["stream"], s - 1, e + 1,
                   ['"External id": %d' % p["ua_ext"]])
        return len(self.gnodes) - 1

    def sync(self, t, api, stream_wait, ext):
        """A CPU sync call that returns once the GPU work it waits for ended."""
        corr = self.next_corr()
        s0 = t
        cpu = s0 + self.ri(3000, 6000)
        s1 = max(cpu, stream_wait + self.ri(2000, 5000))
        w = None   # GPU-bound: the node that ended last (at stream_wait)
        if s1 > cpu:
            w = max((i for i in self.slast.values()), key=lambda i: self.gnodes[i]["e"], default=None)
            if w is not None and self.gnodes[w]["e"] != stream_wait:
                w = max((i for i in self.slast.values() if self.gnodes[i]["e"] == stream_wait), default=None)
        self.gsyncs.append((s0, s1, w))
        self.X(api[0], api[1], self.pid, self.tid_main, s0, s1,
               ['"External id": %d' % ext, '"cbid": %d' % api[2], '"correlation": %d' % corr])
        if self.new and not self.job.a.no_cuda_sync:
            ctx = api is API_DEVSYNC
            kind = "Context Sync" if ctx else "Stream Sync"
            tid = -1 if ctx else self.s_comp
            self.X("cuda_sync", kind, self.dev, tid, s0 + 1000, s1 - 1000,
                   ['"External id": %d' % ext, '"cuda_sync_kind": "%s"' % kind, '"stream": %d' % tid,
                    '"correlation": %d' % corr, '"device": %d' % self.dev, '"context": 1'])
            self.n_sync += 1
        return s1

    def stream_wait(self, tid, t, src, dst):
        """--stream-wait-events: a cudaEventRecord on stream src and a
        cudaStreamWaitEvent of stream dst on it, as DDP's reducer issues
        before a bucket's allreduce, with the cuda_sync "Stream Wait Event"
        record that names them (enable_cuda_sync_events: the wait's own
        correlation, wait_on_stream, the record call's correlation).
        Returns the host time after the calls."""
        ext = self.next_ext()
        rc = self.next_corr()
        r0 = t
        r1 = r0 + self.ri(2000, 4000)
        self.X("cuda_runtime", "cudaEventRecord", self.pid, tid, r0, r1,
               ['"External id": %d' % ext, '"cbid": 135', '"correlation": %d' % rc])
        w0 = r1 + self.ri(1000, 3000)
        w1 = w0 + self.ri(2000, 4000)
        wc = self.next_corr()
        self.X("cuda_runtime", "cudaStreamWaitEvent", self.pid, tid, w0, w1,
               ['"External id": %d' % ext, '"cbid": 147', '"correlation": %d' % wc])
        self.cuda_event_id = getattr(self, "cuda_event_id", 0) + 1
        self.X("cuda_sync", "Stream Wait Event", self.dev, dst, w0 + 500, w0 + 510,
               ['"External id": %d' % ext, '"cuda_sync_kind": "Stream Wait Event"', '"wait_on_stream": %d' % src,
                '"wait_on_cuda_event_record_corr_id": %d' % rc, '"wait_on_cuda_event_id": %d' % self.cuda_event_id,
                '"stream": %d' % dst, '"correlation": %d' % wc, '"device": %d' % self.dev, '"context": 1'])
        self.n_sync += 1
        return w1

    # ---------------------------------------------------------------- steps
    def end_step(self, step, end_t):
        """Emit the ProfilerStep range and fold this step's projection."""
        self.ua("ProfilerStep#%d" % step, self.tid_main, self.step_s, end_t, self.step_ext)
        self.step_times.append((step, self.step_s, max(end_t, self.step_hi),
                                None if end_t >= self.step_hi else self.step_hi_node))
        self.step_hi = 0
        self.step_ranges.append((step, self.loc(self.step_s), self.loc(end_t)))
        self.step_hi_node = None
        self.fold_projection()
        self.flush()

    def fold_projection(self):
        by_tid = {}
        allv = sorted((l[1], l[2], l[3]) for l in self.step_launch)
        all_ts = [v[0] for v in allv]
        for tid, lws, ws, we in self.step_launch:
            by_tid.setdefault(tid, []).append((lws, ws, we))
        keyed = {}
        for tid, v in by_tid.items():
            v.sort()
            keyed[tid] = ([x[0] for x in v], v)
        proj = self.proj
        for key, tid, a0, a1 in self.step_anns:
            rec = proj.get(key)
            if rec is None:
                rec = proj[key] = [0, 0, 0, 0]
            rec[0] += 1
            rec[1] += a1 - a0
            tsl, v = keyed.get(tid, ([], []))
            i = bisect_left(tsl, a0)
            j = bisect_right(tsl, a1)
            if j > i:
                rec[2] += union_measure([x[1] for x in v[i:j]], [x[2] for x in v[i:j]])[0]
            i = bisect_left(all_ts, a0)
            j = bisect_right(all_ts, a1)
            if j > i:
                rec[3] += union_measure([x[1] for x in allv[i:j]], [x[2] for x in allv[i:j]])[0]
        self.step_anns = []
        self.step_launch = []

    # ---------------------------------------------------------------- data parallel
    def dp_phase1(self, step, cfg, strag_extra):
        """Forward and backward up to the allreduce launches (which are left
        pending in self.pend)."""
        self.step_no = step
        M = self.tid_main
        t = self.next_start
        self.step_s = t
        self.step_ext = self.next_ext()
        t += self.ri(5000, 15000) + self.job.late_ns(self.rank, step)
        self.mem_instant(t, cfg.act_bytes)
        t += self.ri(2000, 5000)
        t, _, _ = self.launch_compute(M, t, [("cpu_op", "aten::to", None), ("cpu_op", "aten::copy_", None)],
                                      "Memcpy HtoD (Pinned -> Device)", self.vary(cfg.memcpy_ns),
                                      api=API_MEMCPY, kind="gpu_memcpy", nbytes=cfg.input_bytes)
        f0 = t + self.ri(3000, 8000)
        fext = self.next_ext()
        x = f0 + self.ri(5000, 10000)
        self.mem_ann = STRAG_PHASE
        for _ in range(cfg.layers):
            x, _, _ = self.launch_compute(M, x, [("cpu_op", "aten::linear", None), ("cpu_op", "aten::addmm", None)],
                                          K_GEMM_F32, self.vary(cfg.gemm_ns) + strag_extra)
        x, _, _ = self.launch_compute(M, x, [("cpu_op", "aten::relu", None)], K_RELU,
                                      self.vary(cfg.relu_ns) + strag_extra)
        f1 = x + self.ri(3000, 8000)
        self.ua(STRAG_PHASE, M, f0, f1, fext)
        self.pyfunc("torch/nn/modules/module.py(1747): _call_impl", f0 + 1000, f1 - 1000, 1)
        if self.job.a.mid_sync:
            # the host blocks until the forward has run (a .item() on the
            # loss, a timing call): the backward is launched only then
            f1 = self.sync(f1 + self.ri(2000, 5000), API_STREAMSYNC, self.free.get(self.s_comp, 0), self.step_ext)
        # backward: the autograd thread runs the ops, the main thread waits
        b0 = f1 + self.ri(5000, 15000)
        bext = self.next_ext()
        self.used_ag = True
        A = self.tid_ag
        self.mem_ann = "## backward ##"
        y = max(b0 + self.ri(10000, 25000), getattr(self, "ag_t", 0))
        y, _, _ = self.launch_compute(A, y, [("cpu_op", "autograd::engine::evaluate_function: ReluBackward0", None),
                                             ("cpu_op", "aten::threshold_backward", None)],
                                      K_THRESH_BW, self.vary(cfg.relu_ns))
        y += self.ri(4000, 12000)
        # DDP buckets fill as weight gradients appear: bucket b is launched
        # after weight-gradient GEMM number after[b].
        L = cfg.layers
        B = cfg.buckets
        after = [-(-(b + 1) * L // B) - 1 for b in range(B)]
        self.pend = []
        bi = 0
        for li in range(L):
            y, _, _ = self.launch_compute(A, y, [("cpu_op", "autograd::engine::evaluate_function: AddmmBackward0", None),
                                                 ("cpu_op", "aten::mm", None)],
                                          K_GEMM_F32_BW, self.vary(2 * cfg.gemm_ns))
            while bi < B and after[bi] == li:
                y += self.ri(3000, 8000)
                if self.new and self.job.a.stream_wait_events:
                    y = self.stream_wait(A, y, self.s_comp, self.s_nccl) + self.ri(1000, 3000)
                y, p = self.launch_comm(A, y, "allreduce", "0", cfg.all_ranks, "Float",
                                        cfg.bucket_nelems[bi], self.s_nccl)
                # The NCCL stream waits for the gradients on the compute stream.
                p["lb"] = max(p["lb"], self.free.get(self.s_comp, 0))
                self.pend.append(p)
                bi += 1
            y += self.ri(4000, 12000)
        self.ag_t = y
        b1 = y + self.ri(5000, 10000)
        self.ua("## backward ##", M, b0, b1, bext)
        self.main_t = b1

    def dp_phase3(self, cfg, ar_end):
        M = self.tid_main
        t = self.main_t + self.ri(5000, 15000)
        o0 = t
        oext = self.next_ext()
        self.mem_ann = "Optimizer.step#SGD.step"
        x = o0 + self.ri(5000, 10000)
        x, _, _ = self.launch_compute(M, x, [("cpu_op", "aten::_foreach_mul_", None)], K_FOREACH,
                                      self.vary(cfg.opt_ns), dep=ar_end)
        x, _, _ = self.launch_compute(M, x, [("cpu_op", "aten::_foreach_add_", None)], K_FOREACH,
                                      self.vary(cfg.opt_ns))
        o1 = x + self.ri(3000, 6000)
        self.ua("Optimizer.step#SGD.step", M, o0, o1, oext)
        self.pyfunc("torch/optim/optimizer.py(487): wrapper", o0 - 2000, o1 + 1000, 1)
        x += self.ri(8000, 15000)
        x, _, _ = self.launch_compute(M, x, [("cpu_op", "aten::zero_", None), ("cpu_op", "aten::fill_", None)],
                                      "Memset (Device)", self.vary(cfg.memset_ns), api=API_MEMSET,
                                      kind="gpu_memset", nbytes=cfg.memset_bytes)
        x += self.ri(3000, 8000)
        tail = self.free_max()   # a device sync: every stream
        x = self.sync(x, API_DEVSYNC, tail, self.step_ext)
        x += self.ri(2000, 5000)
        self.mem_ann = None
        self.mem_instant(x, -cfg.act_bytes)
        end = x + self.ri(10000, 30000)
        self.end_step(self.step_no, end)
        self.next_start = end + self.ri(1000, 4000)
        self.last_t = end

    # ---------------------------------------------------------------- pipeline parallel
    def pp_begin(self, k, step, cfg):
        M = self.tid_main
        self.step_no = step
        self.chunk_iv = []
        t = self.next_start
        self.step_s = t
        self.step_ext = self.next_ext()
        t += self.ri(5000, 15000) + self.job.late_ns(self.rank, step)
        self.mem_ann = None
        # --memory: earlier stages keep more activations
        self.pp_act = cfg.act_bytes * (cfg.S - self.stage) if self.memsim else cfg.act_bytes
        self.mem_instant(t, self.pp_act)
        t += self.ri(2000, 5000)
        self.dep = 0
        self.pend_recv = None
        if self.stage == 0:
            t, _, _ = self.launch_compute(M, t, [("cpu_op", "aten::to", None), ("cpu_op", "aten::copy_", None)],
                                          "Memcpy HtoD (Pinned -> Device)", self.vary(cfg.memcpy_ns),
                                          api=API_MEMCPY, kind="gpu_memcpy", nbytes=cfg.input_bytes)
        else:
            peer = self.rank - cfg.G
            t, p = self.launch_comm(M, t, "recv", self.pp_pg, self.pp_ranks, "BFloat16", cfg.p2p_nelems,
                                    self.s_p2p, peer=peer, seq_key=(peer, self.rank))
            self.pend_recv = p
        self.cpu_t = t + self.ri(3000, 8000)
        self.mem_ann = "## forward ##"
        self.fwd_ext = self.next_ext()
        self.fwd_s = self.cpu_t
        self.cpu_t += self.ri(3000, 6000)

    def pp_block(self, b, cfg):
        M = self.tid_main
        x = self.cpu_t
        dur = cfg.block_ns[self.stage]
        x, _, _ = self.launch_compute(M, x, [("cpu_op", "aten::linear", None), ("cpu_op", "aten::mm", None)],
                                      K_GEMM_BF16, self.vary(dur * 88 // 100), dep=self.dep)
        x, _, _ = self.launch_compute(M, x, [("cpu_op", "aten::gelu", None)], K_GELU, self.vary(dur * 12 // 100))
        self.pend_ar = None
        if cfg.G > 1:
            x += self.ri(3000, 8000)
            x, p = self.launch_comm(M, x, "allreduce", self.tp_pg, self.tp_ranks, "BFloat16",
                                    cfg.tp_nelems, self.s_nccl)
            p["lb"] = max(p["lb"], self.free.get(self.s_comp, 0))
            self.pend_ar = p
        self.cpu_t = x + self.ri(4000, 10000)

    def pp_finish(self, cfg):
        """Final residual add (waits for the last TP allreduce), the send to
        the next stage, then a stream sync."""
        M = self.tid_main
        x = self.cpu_t
        x, _, _ = self.launch_compute(M, x, [("cpu_op", "aten::add", None)], K_ADD_BF16,
                                      self.vary(cfg.final_ns[self.stage]), dep=self.dep)
        x += self.ri(3000, 8000)
        self.ua("## forward ##", M, self.fwd_s, x, self.fwd_ext)
        self.pend_send = None
        if self.stage < cfg.S - 1:
            peer = self.rank + cfg.G
            x += self.ri(3000, 8000)
            x, p = self.launch_comm(M, x, "send", self.pp_pg, self.pp_ranks, "BFloat16", cfg.p2p_nelems,
                                    self.s_p2p, peer=peer, seq_key=(self.rank, peer))
            p["lb"] = max(p["lb"], self.free.get(self.s_comp, 0))
            self.pend_send = p
        x += self.ri(3000, 8000)
        x = self.sync(x, API_STREAMSYNC, self.free.get(self.s_comp, 0), self.step_ext)
        x += self.ri(2000, 5000)
        self.mem_ann = None
        self.mem_instant(x, -self.pp_act)
        self.cpu_end = x
        self.chunk_gpu = (min(s for s, _ in self.chunk_iv), max(e for _, e in self.chunk_iv))
        self.chunk_busy = merged_of(self.chunk_iv)[0]

    # ---------------------------------------------------------------- end of file
    def finalize(self, gpu_devices):
        """Python top frame, M events, the Trace span, the window end."""
        new = self.new
        win_e = max(self.last_t, self.free_max()) + self.ri(20000, 60000)
        self.win_e = win_e
        if new:
            self.X("python_function", "train.py(212): <module>", self.pid, self.tid_main,
                   self.win_s + 50000, win_e - 10000, ['"Python parent id": null', '"Python id": 1'])
        _, mts = self.tsw(self.win_s)

        def meta(name, pid, tid, arg):
            self.put("M", None, [nm(name), '"ph": "M"', '"ts": ' + mts, '"pid": %s' % pid, '"tid": %s' % tid],
                     5, [arg])
        meta("process_name", self.pid, 0, '"name": "python3"')
        meta("process_labels", self.pid, 0, '"labels": "CPU"')
        meta("process_sort_index", self.pid, 0, '"sort_index": %d' % self.pid)
        gbase = 5000000 if new else 16777216
        for d in range(gpu_devices):
            meta("process_name", d, 0, '"name": "python3"')
            meta("process_labels", d, 0, '"labels": "GPU %d"' % d)
            meta("process_sort_index", d, 0, '"sort_index": %d' % (gbase + d))
        for st in sorted(s for s in self.free if s >= 0):
            meta("thread_name", self.dev, st, '"name": "stream %d "' % st)
            meta("thread_sort_index", self.dev, st, '"sort_index": %d' % st)
        threads = [(self.tid_main, "python3")]
        if self.used_ag:
            threads.append((self.tid_ag, "pt_autograd_0"))
        for tid, tn in threads:
            meta("thread_name", self.pid, tid, '"name": "thread %d (%s)"' % (tid, tn))
            meta("thread_sort_index", self.pid, tid, '"sort_index": %d' % tid)
        self.X("Trace", "PyTorch Profiler (0)", '"Spans"', '"PyTorch Profiler"', self.win_s, win_e,
               ['"Op count": 0'])
        self.put("M", None, ['"name": "process_sort_index"', '"ph": "M"', '"ts": ' + mts, '"pid": "Spans"',
                             '"tid": 0'], 3, ['"sort_index": 536870912'])
        self.put("i", None, ['"name": "Iteration Start: PyTorch Profiler"', '"ph": "i"', '"s": "g"',
                             '"pid": "Traces"', '"tid": "Trace PyTorch Profiler"', '"ts": ' + mts], 3, None)
        _, ets = self.tsw(win_e + self.ri(1000, 5000))
        self.put("i", None, ['"name": "Record Window End"', '"ph": "i"', '"s": "g"', '"pid": ""', '"tid": ""',
                             '"ts": ' + ets], 3, None)
        self.finish()

    def free_max(self):
        return max(self.free.values()) if self.free else 0

    # ---------------------------------------------------------------- truth
    def truth(self):
        c, cm, me = [union_measure(self.ivs[i], self.ive[i]) for i in range(3)]
        compute_ns, cu = c
        comm_total, mu = cm
        overlap = inter_measure(cu, mu)
        busy_cc, ccu = union_measure(list(self.ivs[0]) + list(self.ivs[1]), list(self.ive[0]) + list(self.ive[1]))
        mem_ns = 0
        if me[1]:
            mem_total = me[0]
            mem_ns = mem_total - inter_measure(me[1], ccu)
        busy_all = union_measure(list(self.ivs[0]) + list(self.ivs[1]) + list(self.ivs[2]),
                                 list(self.ive[0]) + list(self.ive[1]) + list(self.ive[2]))[0]
        span = (self.gpu_hi - self.gpu_lo) if self.gpu_lo is not None else 0
        ph = {k: 0 for k in ("X", "s", "f", "i", "M")}
        cat = {}
        for (p, c), n in self.cnt.items():
            ph[p] = ph.get(p, 0) + n
            c = "None" if c is None else c
            cat[c] = cat.get(c, 0) + n
        return {
            "counts": {"events": sum(self.cnt.values()), "ph": ph,
                       "cat": {k: cat[k] for k in sorted(cat, key=lambda x: (x == "None", x))}},
            "gpu": {"kernels_compute": self.n_kernel[0], "kernels_comm": self.n_kernel[1],
                    "memcpy": self.n_memcpy, "memset": self.n_memset, "sync": self.n_sync,
                    "span_ns": span, "compute_ns": compute_ns, "comm_ns": comm_total - overlap,
                    "comm_total_ns": comm_total, "overlap_ns": overlap, "memory_ns": mem_ns,
                    "idle_ns": span - busy_all},
            "collective_kernels": self.n_kernel[1],
            "projection": {k: {"count": v[0], "cpu_ns": v[1], "gpu_ns": v[2], "gpu_ns_any_thread": v[3]}
                           for k, v in sorted(self.proj.items())},
        }


# ==================================================================== config
class Cfg:
    pass


def parse_range(s):
    a, _, b = s.partition("-")
    lo, hi = int(a), int(b or a)
    if lo > hi:
        raise ValueError
    return lo, hi


def clock_setup(job):
    """Per node offset/drift, per rank a further offset of up to 1 us."""
    a = job.a
    rng = job.rng
    nodes = (job.W + job.rpn - 1) // job.rpn
    maxoff = int(round(a.max_offset_ms * 1000000))
    maxd = int(round(a.max_drift_ppm * 1000))
    node_cl = [(rng.randint(-maxoff, maxoff), rng.randint(-maxd, maxd)) for _ in range(nodes)]
    out = []
    for r in range(job.W):
        off, d = node_cl[r // job.rpn]
        out.append((off + rng.randint(-1000, 1000), d))
    return out


def make_ranks(job, outdir):
    ext = ".json.gz" if job.a.gzip else ".json"
    ranks = []
    for r, (off, d) in enumerate(clock_setup(job)):
        ranks.append(Rank(job, r, off, d, os.path.join(outdir, "rank-%d%s" % (r, ext))))
    return ranks


def size_done(job, ranks, done_steps):
    a = job.a
    if a.size_mb is not None:
        return max(R.nbytes for R in ranks) >= a.size_mb * 1000000
    return done_steps >= job.nsteps


def link_instance(made, arrivals):
    """One collective / send-recv instance in the schedule's graph: every
    participant's node ends at the last arrival + its transfer."""
    m = max(arrivals)
    i = arrivals.index(m)
    last = (made[i][0].rank, made[i][1])
    for R, idx in made:
        R.gnodes[idx]["m"] = m
        R.gnodes[idx]["last"] = last


def critical_path_truth(ranks, steps):
    """The critical path of each job step from the schedule's own bindings
    (what the simulation used to place each start): back from the job step
    end to its start, segments by kind as mergetrace defines them
    (critpath.h): compute, comm (a collective's transfer after its last
    arrival), memory, host (launch delay, host time back to a sync or the
    step start, a sync's lag), idle (stream and cross-stream waits)."""
    byr = {R.rank: R for R in ranks}
    kinds = {CLS_COMPUTE: "compute", CLS_COMM: "comm", CLS_MEM: "memory"}
    out = []
    for step, (t0, t1, rk, node) in steps:
        seg = {"compute": 0, "comm": 0, "memory": 0, "host": 0, "idle": 0}
        cur = [t1]

        def go(kind, a):
            a = min(max(a, t0), cur[0])
            seg[kind] += cur[0] - a
            cur[0] = a
        R = byr[rk]
        where, i = ("end", node) if node is not None else ("host", None)
        guard = 100000
        while cur[0] > t0 and guard:
            guard -= 1
            if where == "host":
                sy = [x for x in R.gsyncs if x[1] <= cur[0]]
                if not sy or sy[-1][1] <= t0:
                    go("host", t0)
                    break
                s0, s1, w = sy[-1]
                go("host", s1)
                if w is not None and R.gnodes[w]["e"] >= s0:
                    go("host", R.gnodes[w]["e"])
                    where, i = "end", w
                else:
                    go("host", s0)
            elif where == "end":
                n = R.gnodes[i]
                if n["m"] is not None and n["m"] <= cur[0]:
                    go("comm", n["m"])
                    R = byr[n["last"][0]]
                    i = n["last"][1]
                else:
                    go(kinds[n["cls"]], n["s"])
                where = "start"
            else:
                n = R.gnodes[i]
                if n["bind"] in ("stream", "x") and n["pred"] is not None:
                    go("idle", R.gnodes[n["pred"]]["e"])
                    where, i = "end", n["pred"]
                elif n["bind"] == "launch":
                    go("host", n["le"])
                    where = "host"
                else:
                    go("idle", t0)
                    break
        out.append({"step": step, "kind_ns": seg})
    return out


def run_dp(job, ranks):
    a = job.a
    rng = job.rng
    cfg = Cfg()
    cfg.layers = a.layers
    cfg.buckets = a.buckets
    cfg.all_ranks = list(range(job.W))
    cfg.gemm_ns = 300000
    cfg.relu_ns = 40000
    cfg.opt_ns = 90000
    cfg.memcpy_ns = 60000
    cfg.memset_ns = 8000
    cfg.input_bytes = 1572864
    cfg.memset_bytes = 4194304
    cfg.act_bytes = 33554432
    # the bucket sizes are the program: --program-seed keeps them across seeds (an A/A pair)
    prng = random.Random(a.program_seed) if a.program_seed is not None else rng
    cfg.bucket_nelems = [prng.choice((1572864, 2097152, 2621440, 3145728)) for _ in range(a.buckets)]
    job.pg_desc = {"0": "default_pg"}
    strag = a.straggler
    d_ns = int(round(a.straggler_delay_us * 1000))
    srange = parse_range(a.straggler_steps) if a.straggler_steps else None
    nfwd = cfg.layers + 1
    for R in ranks:
        R.header()
    step = a.first_step
    n = 0
    while True:
        for R in ranks:
            extra = 0
            if strag is not None and R.rank == strag and d_ns > 0 and (srange is None or srange[0] <= step <= srange[1]):
                extra = d_ns // nfwd
            R.dp_phase1(step, cfg, extra)
        # allreduce buckets in order: a rank's NCCL stream is free only once
        # its previous bucket ended, which depends on every rank.
        ar_end = {}
        for b in range(cfg.buckets):
            ps = [R.pend[b] for R in ranks]
            ready = [max(p["lb"], R.free.get(R.s_nccl, 0)) for p, R in zip(ps, ranks)]
            nbytes = ps[0]["nelems"] * 4
            T = job.xfer(12000 + nbytes // 80 + (nbytes // 160 if job.W > job.rpn else 0), cfg.all_ranks)
            m = max(ready)
            ends = {}
            made = []
            for p, R, rd in zip(ps, ranks, ready):
                e = m + T + int(job.jitter_ns * rng.random())
                made.append((R, R.emit_comm(p, rd, e)))
                ends[R.rank] = e
                ar_end[R.rank] = e
            link_instance(made, ready)
            job.log_coll({"pg": "0", "seq": ps[0]["seq"], "comms_id": ps[0]["cid"], "kind": "allreduce",
                          "participants": list(range(job.W)), "nelems": ps[0]["nelems"], "dtype": "Float",
                          "true_start_ns": {str(r.rank): rd for r, rd in zip(ranks, ready)},
                          "true_end_ns": {str(k): v for k, v in ends.items()}})
        for R in ranks:
            R.dp_phase3(cfg, ar_end[R.rank])
        n += 1
        step += 1
        if size_done(job, ranks, n):
            break
    return n, None


def run_pp(job, ranks):
    a = job.a
    rng = job.rng
    S = a.pp_stages
    W = job.W
    G = W // S
    cfg = Cfg()
    cfg.S = S
    cfg.G = G
    stage_us = [int(x) for x in a.stage_us.split(",")]
    while len(stage_us) < S:
        stage_us.append(stage_us[-1])
    cfg.tp_nelems = 4194304
    cfg.p2p_nelems = 4194304
    tp_T = 10000 + cfg.tp_nelems * 2 // 150 if G > 1 else 0
    cfg.block_ns = []
    cfg.final_ns = []
    nb = a.pp_blocks
    for s in range(S):
        busy = stage_us[s] * 1000
        comp = max(busy - nb * tp_T, busy // 10)
        cfg.final_ns.append(comp * 2 // 100)
        cfg.block_ns.append((comp - comp * 2 // 100) // nb)
    cfg.memcpy_ns = 40000
    cfg.input_bytes = 1048576
    cfg.act_bytes = 16777216
    stages = [list(range(s * G, (s + 1) * G)) for s in range(S)]
    job.pg_desc = {"0": "default_pg"}
    for s in range(S):
        name = str(1 + s)
        job.pgs.append((name, "TENSOR_MODEL_PARALLEL_GROUP", stages[s]))
        job.pg_desc[name] = "TENSOR_MODEL_PARALLEL_GROUP"
    for i in range(G):
        name = str(1 + S + i)
        job.pgs.append((name, "PIPELINE_MODEL_PARALLEL_GROUP", [i + s * G for s in range(S)]))
        job.pg_desc[name] = "PIPELINE_MODEL_PARALLEL_GROUP"
    for R in ranks:
        s = R.rank // G
        i = R.rank % G
        R.stage = s
        R.S = S
        R.tp_pg = str(1 + s)
        R.tp_ranks = stages[s]
        R.pp_pg = str(1 + S + i)
        R.pp_ranks = [i + x * G for x in range(S)]
        R.header()
    p2p_bytes = cfg.p2p_nelems * 2
    p2p_T = 8000 + p2p_bytes // 40 + (p2p_bytes // 80 if G < job.rpn or job.rpn < W else 0)
    per_chunk = []
    emit_prev = None
    k = 0
    while True:
        step = a.first_step + k
        for s in range(S):
            rs = [ranks[r] for r in stages[s]]
            for R in rs:
                R.pp_begin(k, step, cfg)
            if s > 0:
                for R in rs:
                    P = ranks[R.rank - G]
                    ps, pr = P.pend_send, R.pend_recv
                    ss = ps["lb"]
                    rr = max(pr["lb"], R.free.get(R.s_p2p, 0))
                    m = max(ss, rr) + job.xfer(p2p_T, (P.rank, R.rank))
                    es = m + int(job.jitter_ns * rng.random())
                    er = m + int(job.jitter_ns * rng.random())
                    link_instance([(P, P.emit_comm(ps, ss, es)), (R, R.emit_comm(pr, rr, er))], [ss, rr])
                    R.dep = er
                    job.log_coll({"pg": ps["pg"], "seq": ps["seq"], "comms_id": ps["cid"], "kind": "sendrecv",
                                  "src": P.rank, "dst": R.rank, "participants": [P.rank, R.rank],
                                  "nelems": cfg.p2p_nelems, "dtype": "BFloat16",
                                  "true_start_ns": {str(P.rank): ss, str(R.rank): rr},
                                  "true_end_ns": {str(P.rank): es, str(R.rank): er}})
            for b in range(nb):
                for R in rs:
                    R.pp_block(b, cfg)
                if G > 1:
                    ps = [R.pend_ar for R in rs]
                    ready = [max(p["lb"], R.free.get(R.s_nccl, 0)) for p, R in zip(ps, rs)]
                    m = max(ready) + job.xfer(tp_T, stages[s])
                    ends = {}
                    made = []
                    for p, R, rd in zip(ps, rs, ready):
                        e = m + int(job.jitter_ns * rng.random())
                        made.append((R, R.emit_comm(p, rd, e)))
                        R.dep = e
                        ends[R.rank] = e
                    link_instance(made, ready)
                    job.log_coll({"pg": ps[0]["pg"], "seq": ps[0]["seq"], "comms_id": ps[0]["cid"],
                                  "kind": "allreduce", "participants": list(stages[s]),
                                  "nelems": cfg.tp_nelems, "dtype": "BFloat16",
                                  "true_start_ns": {str(R.rank): rd for R, rd in zip(rs, ready)},
                                  "true_end_ns": {str(k2): v for k2, v in ends.items()}})
                else:
                    for R in rs:
                        R.dep = 0
            for R in rs:
                R.pp_finish(cfg)
        # pipeline truth on the stage leaders, true time
        leaders = [ranks[st[0]] for st in stages]
        stage_ns = [L.chunk_busy for L in leaders]
        emit = leaders[-1].chunk_gpu[1]
        rec = {"k": k, "chunk_step": step, "emit_ns": emit, "stage_ns": stage_ns,
               "latency_ns": emit - leaders[0].chunk_gpu[0],
               "period_ns": None, "hidden_ns": None, "overlap_score": None}
        if emit_prev is not None:
            period = emit - emit_prev
            hidden = sum(stage_ns) - period
            den = sum(stage_ns) - max(stage_ns)
            rec["period_ns"] = period
            rec["hidden_ns"] = hidden
            rec["overlap_score"] = min(1.0, max(0.0, hidden / den)) if den > 0 else 0.0
        per_chunk.append(rec)
        emit_prev = emit
        # when each rank starts the next chunk
        for R in ranks:
            R.next_start = R.cpu_end + R.ri(10000, 30000)
        if S > 1 and a.pp_mode != "overlapped":
            if a.pp_mode == "serialized":
                gate = max(ranks[r].chunk_gpu[1] for r in stages[-1]) + rng.randint(5000, 20000)
            else:
                L1 = leaders[1]
                g0, g1 = L1.chunk_gpu
                gate = g0 + int(a.pp_partial * (g1 - g0))
            for r in stages[0]:
                R = ranks[r]
                R.next_start = max(R.next_start, gate + R.ri(0, 10000))
        for R in ranks:
            R.end_step(step, R.next_start - R.ri(1000, 3000))
            R.last_t = R.next_start
        k += 1
        if size_done(job, ranks, k):
            break
    after = [c for c in per_chunk if c["k"] >= 1]
    pipe = {"stages": stages, "mode": a.pp_mode, "warmup": 1, "chunks": k}
    if a.pp_mode == "partial":
        pipe["partial_fraction"] = a.pp_partial
    pipe["per_chunk"] = per_chunk
    if after:
        hid = sum(c["hidden_ns"] for c in after)
        den = sum(sum(c["stage_ns"]) - max(c["stage_ns"]) for c in after)
        pipe["overlap_score"] = min(1.0, max(0.0, hid / den)) if den > 0 else 0.0
        per = [c["period_ns"] for c in after]
        pipe["period_ns"] = {"p50": median_lo(per), "mean": mean_int(per)}
        pipe["latency_ns"] = {"p50": median_lo([c["latency_ns"] for c in after])}
        pipe["stage_busy_ns"] = [{"p50": median_lo([c["stage_ns"][s] for c in after]),
                                  "mean": mean_int([c["stage_ns"][s] for c in after])} for s in range(S)]
    else:
        pipe["overlap_score"] = None
        pipe["period_ns"] = None
        pipe["latency_ns"] = None
        pipe["stage_busy_ns"] = None
    return k, pipe


# ==================================================================== FSDP, TP, 1F1B
# These schedules couple the ranks inside a step (a layer waits for its
# all-gather, an allreduce, a microbatch from the stage before), so each
# rank's step is a program (a Python generator) that posts its collectives
# as its host reaches them and yields the key of an instance whose end its
# next GPU work needs; run_programs resumes it once every participant has
# posted and the instance is placed. The host never waits for the GPU
# inside a step (NCCL work and stream waits are asynchronous), so each
# rank's host timeline is its own; only the GPU side is coupled.
class Rendezvous:
    """Instances of a step: their participants' pending launches, placed
    once all have posted and each is the oldest pending one of its
    (rank, stream)."""

    def __init__(self, job):
        self.job = job
        self.inst = {}
        self.order = []
        self.queues = {}   # (rank, stream) -> keys in the order that rank posted them
        self.done = {}     # key -> {rank: (end, node index)}

    def post(self, key, members, R, p, T, kind, pg, extra=None):
        I = self.inst.get(key)
        if I is None:
            I = self.inst[key] = {"members": members, "parts": [], "T": T, "kind": kind, "pg": pg,
                                  "extra": extra or {}}
            self.order.append(key)
        I["parts"].append((R, p))
        self.queues.setdefault((R.rank, p["stream"]), []).append(key)

    def place(self):
        """Place every instance that can be; returns whether one was."""
        job = self.job
        rng = job.rng
        moved = False
        rest = []
        for key in self.order:
            I = self.inst[key]
            parts = I["parts"]
            if len(parts) < len(I["members"]) or \
                    any(self.queues[(R.rank, p["stream"])][0] != key for R, p in parts):
                rest.append(key)
                continue
            for R, p in parts:
                self.queues[(R.rank, p["stream"])].pop(0)
            parts = sorted(parts, key=lambda x: x[0].rank)
            ready = [max(p["lb"], R.free.get(p["stream"], 0)) for R, p in parts]
            m = max(ready) + I["T"]
            made = []
            ends = {}
            for (R, p), rd in zip(parts, ready):
                e = m + int(job.jitter_ns * rng.random())
                made.append((R, R.emit_comm(p, rd, e)))
                ends[R.rank] = e
            link_instance(made, ready)
            self.done[key] = {R.rank: (ends[R.rank], idx) for R, idx in made}
            p0 = parts[0][1]
            rec = {"pg": p0["pg"], "seq": p0["seq"], "comms_id": p0["cid"], "kind": I["kind"]}
            rec.update(I["extra"])
            rec.update({"participants": [R.rank for R, _ in parts], "nelems": p0["nelems"], "dtype": p0["dtype"],
                        "true_start_ns": {str(R.rank): rd for (R, _), rd in zip(parts, ready)},
                        "true_end_ns": {str(k): v for k, v in ends.items()}})
            job.log_coll(rec)
            moved = True
        self.order = rest
        return moved


def run_programs(rv, progs):
    """Run each rank's step program (generators yielding instance keys)
    until all have finished, placing instances as they complete."""
    state = [[g, None, True] for g in progs]   # generator, awaited key, first resume
    while state:
        moved = False
        for st in state:
            g, key, first = st
            while True:
                if first:
                    val = None
                elif key in rv.done:
                    val = rv.done[key]
                else:
                    break
                try:
                    got = g.send(val)
                except StopIteration:
                    st[0] = None
                    break
                st[1], st[2] = got, False
                key, first = got, False
                moved = True
        state = [st for st in state if st[0] is not None]
        if rv.place():
            moved = True
        if state and not moved:
            raise AssertionError("schedule deadlock: %s" % [st[1] for st in state])


def post_comm(R, rv, tid, x, key, coll, pg, ranks, nelems, stream, T, after_compute, dtype="Float", nout=None,
              peer=None, seq_key=None, kind=None, extra=None):
    """Launch one collective / P2P op on R's host at x and post it; returns
    the host time after the launch."""
    x += R.ri(3000, 8000)
    x, p = R.launch_comm(tid, x, coll, pg, ranks, dtype, nelems, stream, peer=peer, seq_key=seq_key, nout=nout)
    if after_compute:
        # the communication stream waits for the compute stream's work so far
        p["lb"] = max(p["lb"], R.free.get(R.s_comp, 0))
    rv.post(key, ranks if seq_key is None else seq_key, R, p, T, kind or coll, pg, extra)
    return x


def step_begin(R, step, cfg, memcpy=True):
    """A step's start on R's host: the late host's wait, the input copy."""
    R.step_no = step
    M = R.tid_main
    t = R.next_start
    R.step_s = t
    R.step_ext = R.next_ext()
    t += R.ri(5000, 15000) + R.job.late_ns(R.rank, step)
    R.mem_instant(t, cfg.act_bytes)
    t += R.ri(2000, 5000)
    if memcpy:
        t, _, _ = R.launch_compute(M, t, [("cpu_op", "aten::to", None), ("cpu_op", "aten::copy_", None)],
                                   "Memcpy HtoD (Pinned -> Device)", R.vary(cfg.memcpy_ns),
                                   api=API_MEMCPY, kind="gpu_memcpy", nbytes=cfg.input_bytes)
    return t


def coll_T(job, nbytes):
    return 12000 + nbytes // 80 + (nbytes // 160 if job.W > job.rpn else 0)


def fsdp_step(R, rv, step, cfg):
    """FSDP: each layer's parameters are all-gathered on their own stream
    (the next layer's prefetched before this layer's GEMM, which waits for
    its own), in the forward and again in the backward; each layer's
    gradients are reduce-scattered on a third stream after its backward
    GEMM; the optimizer waits for the last reduce-scatter."""
    job = R.job
    M, A = R.tid_main, R.tid_ag
    L = cfg.layers
    W = cfg.all_ranks
    T = job.xfer(coll_T(job, cfg.layer_nelems * 4), W)
    x = step_begin(R, step, cfg)

    def ag(x, tid, ph, i):
        return post_comm(R, rv, tid, x, ("ag", step, ph, i), "allgather", "0", W, cfg.layer_nelems // len(W),
                         R.s_nccl, T, False, nout=cfg.layer_nelems)
    f0 = x + R.ri(3000, 8000)
    fext = R.next_ext()
    x = f0 + R.ri(5000, 10000)
    x = ag(x, M, "f", 0)
    for i in range(L):
        if i + 1 < L:
            x = ag(x, M, "f", i + 1)
        end, node = (yield ("ag", step, "f", i))[R.rank]
        x, _, _ = R.launch_compute(M, x, [("cpu_op", "aten::linear", None), ("cpu_op", "aten::addmm", None)],
                                   K_GEMM_F32, R.vary(cfg.gemm_ns), dep=end, dep_node=node)
    x, _, _ = R.launch_compute(M, x, [("cpu_op", "aten::relu", None)], K_RELU, R.vary(cfg.relu_ns))
    f1 = x + R.ri(3000, 8000)
    R.ua(STRAG_PHASE, M, f0, f1, fext)
    b0 = f1 + R.ri(5000, 15000)
    bext = R.next_ext()
    R.used_ag = True
    y = max(b0 + R.ri(10000, 25000), getattr(R, "ag_t", 0))
    y, _, _ = R.launch_compute(A, y, [("cpu_op", "autograd::engine::evaluate_function: ReluBackward0", None),
                                      ("cpu_op", "aten::threshold_backward", None)], K_THRESH_BW, R.vary(cfg.relu_ns))
    y = ag(y, A, "b", L - 1)
    for i in range(L - 1, -1, -1):
        if i > 0:
            y = ag(y, A, "b", i - 1)
        end, node = (yield ("ag", step, "b", i))[R.rank]
        y, _, _ = R.launch_compute(A, y, [("cpu_op", "autograd::engine::evaluate_function: AddmmBackward0", None),
                                          ("cpu_op", "aten::mm", None)],
                                   K_GEMM_F32_BW, R.vary(2 * cfg.gemm_ns), dep=end, dep_node=node)
        y = post_comm(R, rv, A, y, ("rs", step, i), "reducescatter", "0", W, cfg.layer_nelems, R.s_rs, T, True,
                      nout=cfg.layer_nelems // len(W))
    R.ag_t = y
    b1 = y + R.ri(5000, 10000)
    R.ua("## backward ##", M, b0, b1, bext)
    R.main_t = b1
    end, _ = (yield ("rs", step, 0))[R.rank]
    R.dp_phase3(cfg, end)


def tp_step(R, rv, step, cfg):
    """Tensor parallel (Megatron's MLP): in every layer, forward and
    backward, two GEMMs then an allreduce of the activations over the TP
    group that the next layer's GEMM waits for (on the critical path);
    with more than one TP group, the gradients are allreduced over each
    data-parallel group at the end of the backward."""
    job = R.job
    M, A = R.tid_main, R.tid_ag
    L = cfg.layers
    T = job.xfer(coll_T(job, cfg.tp_nelems * 4), R.tp_ranks)
    x = step_begin(R, step, cfg)
    f0 = x + R.ri(3000, 8000)
    fext = R.next_ext()
    x = f0 + R.ri(5000, 10000)
    dep = (0, None)
    for i in range(L):
        x, _, _ = R.launch_compute(M, x, [("cpu_op", "aten::linear", None), ("cpu_op", "aten::addmm", None)],
                                   K_GEMM_F32, R.vary(cfg.gemm_ns), dep=dep[0], dep_node=dep[1])
        x, _, _ = R.launch_compute(M, x, [("cpu_op", "aten::linear", None), ("cpu_op", "aten::mm", None)],
                                   K_GEMM_F32, R.vary(cfg.gemm_ns))
        x = post_comm(R, rv, M, x, ("tp", step, "f", R.tp_pg, i), "allreduce", R.tp_pg, R.tp_ranks, cfg.tp_nelems,
                      R.s_nccl, T, True)
        dep = (yield ("tp", step, "f", R.tp_pg, i))[R.rank]
    x, _, _ = R.launch_compute(M, x, [("cpu_op", "aten::relu", None)], K_RELU, R.vary(cfg.relu_ns),
                               dep=dep[0], dep_node=dep[1])
    f1 = x + R.ri(3000, 8000)
    R.ua(STRAG_PHASE, M, f0, f1, fext)
    b0 = f1 + R.ri(5000, 15000)
    bext = R.next_ext()
    R.used_ag = True
    y = max(b0 + R.ri(10000, 25000), getattr(R, "ag_t", 0))
    y, _, _ = R.launch_compute(A, y, [("cpu_op", "autograd::engine::evaluate_function: ReluBackward0", None),
                                      ("cpu_op", "aten::threshold_backward", None)], K_THRESH_BW, R.vary(cfg.relu_ns))
    dep = (0, None)
    for i in range(L - 1, -1, -1):
        for k in range(2):
            y, _, _ = R.launch_compute(A, y, [("cpu_op", "autograd::engine::evaluate_function: MmBackward0", None),
                                              ("cpu_op", "aten::mm", None)],
                                       K_GEMM_F32_BW, R.vary(cfg.gemm_ns), dep=dep[0] if k == 0 else 0,
                                       dep_node=dep[1] if k == 0 else None)
        y = post_comm(R, rv, A, y, ("tp", step, "b", R.tp_pg, i), "allreduce", R.tp_pg, R.tp_ranks, cfg.tp_nelems,
                      R.s_nccl, T, True)
        dep = (yield ("tp", step, "b", R.tp_pg, i))[R.rank]
    if len(R.dp_ranks) > 1:
        Td = job.xfer(coll_T(job, cfg.grad_nelems * 4), R.dp_ranks)
        y = post_comm(R, rv, A, y, ("dp", step, R.dp_pg), "allreduce", R.dp_pg, R.dp_ranks, cfg.grad_nelems,
                      R.s_rs, Td, True)
        dep = (yield ("dp", step, R.dp_pg))[R.rank]
    R.ag_t = y
    b1 = y + R.ri(5000, 10000)
    R.ua("## backward ##", M, b0, b1, bext)
    R.main_t = b1
    R.dp_phase3(cfg, dep[0])


def f1b_step(R, rv, step, cfg):
    """One iteration of a 1F1B pipeline (Megatron's schedule: S - 1 - s
    warm-up forwards on stage s, then one forward and one backward in
    turn, then the remaining backwards). Each transfer between two stages
    is one instance of the pair (a steady-state send_forward_recv_backward
    on one side is send_backward_recv_forward on the other: one grouped
    SendRecv kernel each), so a stage waits for its neighbour: the stages
    hold each other back. The gradients are allreduced over each stage's
    data-parallel group at the end."""
    job = R.job
    M = R.tid_main
    s, S, G, Mb = R.stage, cfg.S, cfg.G, cfg.micro
    w = min(S - s - 1, Mb)
    r = Mb - w
    prev = R.rank - G if s > 0 else None
    nxt = R.rank + G if s < S - 1 else None
    Tp = {peer: job.xfer(cfg.p2p_T, (R.rank, peer)) for peer in (prev, nxt) if peer is not None}
    x = step_begin(R, step, cfg, memcpy=(s == 0))
    R.f1b_n = {}
    keys = []   # this rank's P2P instances

    def p2p(x, peer, coll, after):
        lo, hi = min(R.rank, peer), max(R.rank, peer)
        n = R.f1b_n[peer] = R.f1b_n.get(peer, 0) + 1
        key = ("pp", step, lo, hi, n)
        st = R.s_p2p if peer == prev else R.s_p2p_next
        x = post_comm(R, rv, M, x, key, coll, R.pp_pg, R.pp_ranks, cfg.p2p_nelems, st, Tp[peer], after,
                      dtype="BFloat16", peer=peer, seq_key=(lo, hi), kind="sendrecv",
                      extra={"src": lo, "dst": hi})
        keys.append(key)
        return x, key

    def compute(x, fwd, dep):
        if fwd:
            ks = [([("cpu_op", "aten::linear", None), ("cpu_op", "aten::mm", None)], K_GEMM_BF16,
                   cfg.f_ns[s] * 88 // 100),
                  ([("cpu_op", "aten::gelu", None)], K_GELU, cfg.f_ns[s] * 12 // 100)]
        else:
            ks = [([("cpu_op", "autograd::engine::evaluate_function: MmBackward0", None), ("cpu_op", "aten::mm", None)],
                   K_GEMM_BF16_BW, cfg.f_ns[s] * 2 * 88 // 100),
                  ([("cpu_op", "aten::gelu_backward", None)], K_GELU, cfg.f_ns[s] * 2 * 12 // 100)]
        for j, (fr, k, d) in enumerate(ks):
            x, _, _ = R.launch_compute(M, x, fr, k, R.vary(d), dep=dep[0] if j == 0 else 0,
                                       dep_node=dep[1] if j == 0 else None)
        return x + R.ri(3000, 8000)
    none = (0, None)
    for j in range(w):
        dep = none
        if prev is not None:
            x, k = p2p(x, prev, "recv", False)
            dep = (yield k)[R.rank]
        x = compute(x, True, dep)
        if nxt is not None:
            x, _ = p2p(x, nxt, "send", True)
    xk = None
    if r > 0 and prev is not None:
        x, xk = p2p(x, prev, "recv", False)
    for i in range(r):
        dep = (yield xk)[R.rank] if xk is not None else none
        x = compute(x, True, dep)
        dep = none
        if nxt is not None:
            x, k = p2p(x, nxt, "send", True)   # send_forward_recv_backward
            dep = (yield k)[R.rank]
        x = compute(x, False, dep)
        xk = None
        if prev is not None:
            # send_backward(_recv_forward): the recv side of the pair's instance
            x, k = p2p(x, prev, "recv", True)
            xk = k if i < r - 1 else None
    for i in range(w):
        dep = none
        if nxt is not None:
            x, k = p2p(x, nxt, "recv", False)
            dep = (yield k)[R.rank]
        x = compute(x, False, dep)
        if prev is not None:
            x, _ = p2p(x, prev, "send", True)
    dep = none
    if G > 1:
        Td = job.xfer(coll_T(job, cfg.grad_nelems * 2), R.dp_ranks)
        x = post_comm(R, rv, M, x, ("dp", step, R.dp_pg), "allreduce", R.dp_pg, R.dp_ranks, cfg.grad_nelems,
                      R.s_nccl, Td, True, dtype="BFloat16")
        dep = (yield ("dp", step, R.dp_pg))[R.rank]
    for k in keys[-1:]:
        yield k   # placed before the step's end (its device sync waits for every stream)
    R.main_t = x
    R.dp_phase3(cfg, dep[0])


def run_sched(job, ranks):
    """--kind fsdp, tp, 1f1b: each step, every rank's program (above)."""
    a = job.a
    cfg = Cfg()
    cfg.layers = a.layers
    cfg.all_ranks = list(range(job.W))
    cfg.gemm_ns = 300000
    cfg.relu_ns = 40000
    cfg.opt_ns = 90000
    cfg.memcpy_ns = 60000
    cfg.memset_ns = 8000
    cfg.input_bytes = 1572864
    cfg.memset_bytes = 4194304
    cfg.act_bytes = 33554432
    cfg.layer_nelems = 2097152
    cfg.tp_nelems = 1048576
    cfg.grad_nelems = 2097152
    job.pg_desc = {"0": "default_pg"}
    W = job.W
    if a.kind == "fsdp":
        prog = fsdp_step
        cfg.gemm_ns = 250000
        for R in ranks:
            R.s_rs = 60 + R.rank % 3
    elif a.kind == "tp":
        prog = tp_step
        cfg.gemm_ns = 150000
        tp = a.tp_size or W
        ngroups = W // tp
        for g in range(ngroups):
            job.pgs.append((str(1 + g), "TENSOR_MODEL_PARALLEL_GROUP", list(range(g * tp, (g + 1) * tp))))
        if ngroups > 1:
            for i in range(tp):
                job.pgs.append((str(1 + ngroups + i), "DATA_PARALLEL_GROUP", list(range(i, W, tp))))
        for R in ranks:
            g, i = R.rank // tp, R.rank % tp
            R.tp_pg, R.tp_ranks = str(1 + g), list(range(g * tp, (g + 1) * tp))
            R.dp_pg, R.dp_ranks = str(1 + ngroups + i), list(range(i, W, tp))
            R.s_rs = 60 + R.rank % 3
    else:
        prog = f1b_step
        S = a.pp_stages
        G = W // S
        cfg.S, cfg.G, cfg.micro = S, G, a.microbatches
        stage_us = [int(v) for v in a.stage_us.split(",")]
        while len(stage_us) < S:
            stage_us.append(stage_us[-1])
        # --stage-us: a microbatch's forward and backward (1 : 2) on the stage
        cfg.f_ns = [u * 1000 // 3 for u in stage_us]
        cfg.p2p_nelems = 1048576
        nb = cfg.p2p_nelems * 2
        cfg.p2p_T = 8000 + nb // 40 + (nb // 80 if G < job.rpn or job.rpn < W else 0)
        cfg.input_bytes = 1048576
        cfg.memcpy_ns = 40000
        for i in range(G):
            job.pgs.append((str(1 + i), "PIPELINE_MODEL_PARALLEL_GROUP", [i + s * G for s in range(S)]))
        if G > 1:
            for s in range(S):
                job.pgs.append((str(1 + G + s), "DATA_PARALLEL_GROUP", list(range(s * G, (s + 1) * G))))
        for R in ranks:
            R.stage, R.S = R.rank // G, S
            i = R.rank % G
            R.pp_pg, R.pp_ranks = str(1 + i), [i + s * G for s in range(S)]
            R.dp_pg, R.dp_ranks = str(1 + G + R.stage), list(range(R.stage * G, (R.stage + 1) * G))
            R.s_p2p_next = 64 + R.rank % 5
    for n, d, _ in job.pgs:
        job.pg_desc[n] = d
    for R in ranks:
        R.header()
    step = a.first_step
    n = 0
    while True:
        rv = Rendezvous(job)
        run_programs(rv, [prog(R, rv, step, cfg) for R in ranks])
        n += 1
        step += 1
        if size_done(job, ranks, n):
            break
    return n, None


# ==================================================================== CLI
def build_parser():
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Write synthetic per-rank Kineto traces of a data- or pipeline-parallel job "
                    "(each rank in its own skewed clock) and truth.json with the exact answers.",
        epilog="Notes: --size-mb counts uncompressed bytes of the largest rank file (MB = 10^6 B) "
               "and wins over --steps/--chunks. Same seed and options give byte-identical files.")
    g = p.add_argument_group("job")
    g.add_argument("--kind", choices=("dp", "pp", "fsdp", "tp", "1f1b"), default="dp",
                   help="data parallel (default), pipeline parallel (a chunk per step, forward only), FSDP "
                        "(all-gathers and reduce-scatters on their own streams), tensor parallel (an allreduce "
                        "in every layer), or a 1F1B pipeline (microbatches forward and backward)")
    g.add_argument("--ranks", type=int, default=8, metavar="W", help="world size (default 8)")
    g.add_argument("--ranks-per-node", type=int, default=4, metavar="N",
                   help="ranks sharing one node clock (default 4)")
    g.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    g.add_argument("--program-seed", type=int, default=None, metavar="S",
                   help="dp: draw the allreduce bucket sizes from S instead of --seed, so that two seeds are "
                        "two runs of one program (an A/A pair)")
    g.add_argument("--steps", type=int, default=None, metavar="N",
                   help="profiler steps to write (dp default 6; for pp the same as --chunks)")
    g.add_argument("--size-mb", type=float, default=None, metavar="M",
                   help="instead of a step count: add steps until a rank file reaches about M MB")
    g.add_argument("--first-step", type=int, default=10, metavar="N", help="first ProfilerStep number (default 10)")
    g.add_argument("--slow-pct", type=float, default=0.0, metavar="P",
                   help="every compute kernel P %% slower (after the random draws: same seed, same job otherwise)")
    g.add_argument("--slow-kernel", default=None, metavar="SUBSTR:F",
                   help="compute kernels whose name contains SUBSTR last F times as long")
    g.add_argument("--slow-kernel-rank", type=int, default=None, metavar="R",
                   help="--slow-kernel on rank R only (one slow kernel type on one GPU)")
    g.add_argument("--slow-link", default=None, metavar="R:F",
                   help="every collective and send/recv rank R takes part in transfers F times as long "
                        "(a bad link: every member waits for it)")
    g.add_argument("--host-gap-us", type=float, default=0.0, metavar="US",
                   help="host work before every compute / memory launch (default 0): host-bound launch gaps")
    g.add_argument("--slow-comm", type=float, default=1.0, metavar="F",
                   help="multiply every collective and send/recv transfer time by F (default 1)")
    g.add_argument("--end-jitter-us", type=float, default=2.0, metavar="US",
                   help="spread of one collective's kernel end times in true time (default 2)")
    c = p.add_argument_group("clocks")
    c.add_argument("--max-offset-ms", type=float, default=50.0, metavar="MS",
                   help="node clock offsets uniform in +-MS (default 50)")
    c.add_argument("--max-drift-ppm", type=float, default=50.0, metavar="PPM",
                   help="node clock drifts uniform in +-PPM (default 50)")
    d = p.add_argument_group("data parallel")
    d.add_argument("--layers", type=int, default=4, metavar="L",
                   help="linear layers, one weight-gradient GEMM each (default 4)")
    d.add_argument("--buckets", type=int, default=4, metavar="B", help="allreduce buckets per step (default 4)")
    d.add_argument("--straggler", type=int, default=None, metavar="R", help="rank whose compute is slower")
    d.add_argument("--straggler-delay-us", type=float, default=0.0, metavar="D",
                   help="how late the straggler reaches each collective (default 0 = none)")
    d.add_argument("--straggler-steps", default=None, metavar="A-B",
                   help="limit the straggler (and --slow-rank, --late-rank) to ProfilerStep numbers A..B")
    d.add_argument("--ts-jitter-ns", type=int, default=0, metavar="N",
                   help="write each GPU start and end up to N ns off its true time (default 0)")
    d.add_argument("--noise-pct", type=float, default=10.0, metavar="P",
                   help="each GPU activity's duration drawn uniform in +-P %% of its nominal one (default 10)")
    d.add_argument("--slow-rank", default=None, metavar="R:F",
                   help="every compute kernel of rank R lasts F times as long (a slow GPU); dp and pp")
    d.add_argument("--slow-host", default=None, metavar="R:US",
                   help="rank R's host works US microseconds before each compute / memory launch (a slow CPU)")
    d.add_argument("--mid-sync", action="store_true",
                   help="dp: a cudaStreamSynchronize of the compute stream after the forward (the host waits "
                        "for the GPU before it launches the backward)")
    d.add_argument("--no-cuda-sync", action="store_true",
                   help="write no cuda_sync events (a profile without enable_cuda_sync_events); the runtime "
                        "sync calls stay")
    d.add_argument("--stream-wait-events", action="store_true",
                   help="dp: before each bucket's allreduce a cudaEventRecord on the compute stream and a "
                        "cudaStreamWaitEvent of the NCCL stream, with their cuda_sync \"Stream Wait Event\" "
                        "record (a profile with enable_cuda_sync_events; new format only)")
    d.add_argument("--late-rank", default=None, metavar="R:US",
                   help="rank R's host waits US microseconds at the start of every step (a data loader); dp and pp")
    q = p.add_argument_group("pipeline parallel")
    q.add_argument("--pp-stages", type=int, default=2, metavar="S", help="pipeline stages (default 2)")
    q.add_argument("--pp-mode", choices=("overlapped", "serialized", "partial"), default="overlapped",
                   help="when stage 0 starts the next chunk (default overlapped)")
    q.add_argument("--pp-partial", type=float, default=0.5, metavar="F",
                   help="partial mode: fraction of stage 1's chunk work stage 0 waits for (default 0.5)")
    q.add_argument("--stage-us", default="4000,3000", metavar="LIST",
                   help="busy GPU us per stage per chunk (default 4000,3000; last value repeats)")
    q.add_argument("--chunks", type=int, default=None, metavar="N", help="chunks = ProfilerSteps (default 12)")
    q.add_argument("--pp-blocks", type=int, default=2, metavar="N",
                   help="layer blocks per chunk, one TP allreduce each (default 2)")
    q.add_argument("--microbatches", type=int, default=8, metavar="M",
                   help="1f1b: microbatches per step (default 8); --stage-us is then a microbatch's forward "
                        "and backward on the stage (1 : 2)")
    q.add_argument("--tp-size", type=int, default=None, metavar="T",
                   help="tp: ranks per tensor-parallel group (default all; fewer: data parallel across groups)")
    m = p.add_argument_group("memory")
    m.add_argument("--memory", action="store_true",
                   help="[memory] events from a known allocation schedule per rank (truth.json ranks[].memory); "
                        "pipeline stage s holds (stages - s) times the activations of the last")
    m.add_argument("--mem-leak-rank", type=int, default=None, metavar="R",
                   help="with --memory: rank that allocates --mem-leak-mb in every optimizer step and never frees it")
    m.add_argument("--mem-leak-mb", type=int, default=16, metavar="MB", help="the leak per step in MiB (default 16)")
    o = p.add_argument_group("output")
    o.add_argument("--format", choices=("new", "old"), default="new",
                   help="new: PyTorch>=2.4 style (relative ns ts, metadata); old: pre-2.2 (integer us, none)")
    o.add_argument("--out", required=True, metavar="DIR", help="output directory (created)")
    o.add_argument("--gzip", action="store_true", help="write rank-<r>.json.gz")
    o.add_argument("--shuffle-keys", action="store_true",
                   help="seeded per-event key order; distributedInfo/baseTimeNanoseconds after traceEvents")
    o.add_argument("--indent", type=int, choices=(0, 1, 2), default=1,
                   help="0 compact one line, 1 one event per line (default), 2 Kineto's multi-line layout")
    o.add_argument("--unlinked", action="store_true",
                   help="External id of launches and GPU activities = correlation (as in unlinked old traces)")
    o.add_argument("--no-collective-truth", action="store_true", help="leave the collectives list out of truth.json")
    o.add_argument("--quiet", action="store_true", help="no summary line on stderr")
    return p


def usage_error(opt, what):
    sys.stderr.write("%s: %s: %s\n" % (PROG, opt, what))
    sys.exit(2)


def check_args(a):
    if a.ranks < 1:
        usage_error("--ranks", "expected an integer >= 1")
    if a.ranks_per_node < 1:
        usage_error("--ranks-per-node", "expected an integer >= 1")
    if a.steps is not None and a.steps < 1:
        usage_error("--steps", "expected an integer >= 1")
    if a.chunks is not None and a.chunks < 1:
        usage_error("--chunks", "expected an integer >= 1")
    if a.size_mb is not None and not a.size_mb > 0:
        usage_error("--size-mb", "expected a number > 0")
    if a.layers < 1:
        usage_error("--layers", "expected an integer >= 1")
    if a.buckets < 1:
        usage_error("--buckets", "expected an integer >= 1")
    if a.first_step < 0:
        usage_error("--first-step", "expected an integer >= 0")
    if not a.end_jitter_us >= 0:
        usage_error("--end-jitter-us", "expected a number >= 0")
    if not a.host_gap_us >= 0:
        usage_error("--host-gap-us", "expected a number >= 0")
    if not a.slow_comm > 0:
        usage_error("--slow-comm", "expected a number > 0")
    if not a.slow_pct > -100:
        usage_error("--slow-pct", "expected a number > -100")
    if a.slow_kernel is not None:
        sub, _, f = a.slow_kernel.rpartition(":")
        try:
            fv = float(f)
        except ValueError:
            fv = -1.0
        if not sub or not fv > 0:
            usage_error("--slow-kernel", "expected SUBSTR:FACTOR with a factor > 0")
        a.slow_kernel = (sub, fv)
    if not 0 <= a.ts_jitter_ns <= 1000:
        usage_error("--ts-jitter-ns", "expected an integer in 0..1000")
    if not 0 <= a.noise_pct < 100:
        usage_error("--noise-pct", "expected a number in 0..99")
    for opt in ("slow_rank", "late_rank", "slow_host", "slow_link"):
        v = getattr(a, opt)
        if v is None:
            continue
        r, _, f = v.partition(":")
        try:
            rv, fv = int(r), float(f)
        except ValueError:
            rv, fv = -1, -1.0
        fac = opt in ("slow_rank", "slow_link")
        if not 0 <= rv < a.ranks or not (fv > 0 if fac else fv >= 0):
            usage_error("--" + opt.replace("_", "-"), "expected R:%s with R in 0..%d" %
                        ("F with F > 0" if fac else "US with US >= 0", a.ranks - 1))
        setattr(a, opt, (rv, fv))
    if not a.max_offset_ms >= 0:
        usage_error("--max-offset-ms", "expected a number >= 0")
    if not 0 <= a.max_drift_ppm <= 1000:
        usage_error("--max-drift-ppm", "expected a number in 0..1000")
    if a.straggler is not None and not 0 <= a.straggler < a.ranks:
        usage_error("--straggler", "expected a rank in 0..%d" % (a.ranks - 1))
    if not a.straggler_delay_us >= 0:
        usage_error("--straggler-delay-us", "expected a number >= 0")
    if a.straggler_steps:
        try:
            parse_range(a.straggler_steps)
        except ValueError:
            usage_error("--straggler-steps", "expected A-B with integers A <= B")
    if a.kind in ("pp", "1f1b"):
        if a.pp_stages < 2 or a.ranks % a.pp_stages:
            usage_error("--pp-stages", "expected an integer >= 2 that divides --ranks")
        try:
            su = [int(x) for x in a.stage_us.split(",")]
            if not su or min(su) < 100:
                raise ValueError
        except ValueError:
            usage_error("--stage-us", "expected comma-separated integers >= 100")
        if not 0 <= a.pp_partial <= 1:
            usage_error("--pp-partial", "expected a number in 0..1")
        if a.pp_blocks < 1:
            usage_error("--pp-blocks", "expected an integer >= 1")
    if a.kind != "dp":
        if a.straggler is not None:
            usage_error("--straggler", "only for --kind dp")
        if a.mid_sync:
            usage_error("--mid-sync", "only for --kind dp")
    if a.kind in ("fsdp", "tp", "1f1b") and a.memory:
        usage_error("--memory", "only for --kind dp and pp")
    if a.microbatches < 1:
        usage_error("--microbatches", "expected an integer >= 1")
    if a.tp_size is not None and (a.kind != "tp" or a.tp_size < 2 or a.ranks % a.tp_size):
        usage_error("--tp-size", "expected an integer >= 2 that divides --ranks, with --kind tp")
    if a.slow_kernel_rank is not None and not (a.slow_kernel and 0 <= a.slow_kernel_rank < a.ranks):
        usage_error("--slow-kernel-rank", "expected a rank in 0..%d, with --slow-kernel" % (a.ranks - 1))
    if a.mem_leak_rank is not None and not (a.memory and 0 <= a.mem_leak_rank < a.ranks and a.kind == "dp"):
        usage_error("--mem-leak-rank", "expected a rank in 0..%d, with --memory and --kind dp" % (a.ranks - 1))
    if a.mem_leak_mb < 1:
        usage_error("--mem-leak-mb", "expected an integer >= 1")
    if a.indent == 2 and a.shuffle_keys:
        pass  # shuffled events are written one per line whatever the indent


def main(argv=None):
    a = build_parser().parse_args(argv)
    check_args(a)
    t_start = time.perf_counter()
    os.makedirs(a.out, exist_ok=True)
    job = Job(a)
    if a.kind != "pp":
        job.nsteps = a.steps if a.steps is not None else 6
    else:
        job.nsteps = a.chunks if a.chunks is not None else (a.steps if a.steps is not None else 12)
    ranks = make_ranks(job, a.out)
    if a.kind == "dp":
        nsteps, pipe = run_dp(job, ranks)
    elif a.kind == "pp":
        nsteps, pipe = run_pp(job, ranks)
    else:
        nsteps, pipe = run_sched(job, ranks)
    ndev = max(8, job.rpn)
    for R in ranks:
        R.finalize(ndev)
    truth = {"generator": PROG, "seed": a.seed, "kind": a.kind, "format": a.format,
             "world_size": job.W, "ranks_per_node": job.rpn, "true_t0_ns": job.T0,
             "steps": nsteps, "first_step": a.first_step,
             "end_jitter_ns": job.jitter_ns,
             "straggler": a.straggler if (a.straggler is not None and a.straggler_delay_us > 0) else None,
             "straggler_delay_us": a.straggler_delay_us, "straggler_steps": a.straggler_steps,
             "slow_rank": list(a.slow_rank) if a.slow_rank else None,
             "late_rank": list(a.late_rank) if a.late_rank else None,
             "slow_host": list(a.slow_host) if a.slow_host else None,
             "ranks": []}
    if truth["straggler"] is not None:
        truth["straggler_phase"] = STRAG_PHASE
    # twin options, only when given (so jobs without them keep their bytes)
    if a.host_gap_us:
        truth["host_gap_ns"] = job.gap_ns
    if a.slow_comm != 1.0:
        truth["slow_comm"] = a.slow_comm
    if a.slow_link:
        truth["slow_link"] = list(a.slow_link)
    if a.slow_kernel_rank is not None:
        truth["slow_kernel_rank"] = a.slow_kernel_rank
    if a.kind == "1f1b":
        truth["microbatches"] = a.microbatches
    for R in ranks:
        rt = {"rank": R.rank, "file": os.path.basename(R.path), "node": R.rank // job.rpn, "device": R.dev,
              "pid": R.pid, "base_time_ns": R.base if job.new else None,
              "clock_offset_ns": R.off, "clock_drift_ppm": R.dppb / 1000.0, "clock_drift_ppb": R.dppb,
              "bytes": R.nbytes}
        rt.update(R.truth())
        if a.memory:
            rt["memory"] = R.mem_truth()
            if rt["memory"]:
                rt["memory"]["peak_ref_clock_ns"] = ranks[0].loc(rt["memory"]["peak_true_ns"])
        w = job.wait[R.rank]
        rt["collective_wait"] = {"count": w[0], "arrived_last": w[1], "wait_ns": w[2]}
        truth["ranks"].append(rt)
    # Job step times in true time: the earliest rank start to the latest
    # rank end (range end, or the last end of the GPU work launched in it).
    st = {}
    for R in ranks:
        for step, s0, s1, node in R.step_times:
            lo, hi, rk, nd = st.get(step, (s0, s1, R.rank, node))
            if s1 > hi:
                rk, nd = R.rank, node
            st[step] = (min(lo, s0), max(hi, s1), rk, nd)
    truth["step_times"] = [{"step": k, "start_ns": v[0], "end_ns": v[1], "time_ns": v[1] - v[0]}
                           for k, v in sorted(st.items())]
    truth["critical_path"] = critical_path_truth(ranks, sorted(st.items()))
    if job.keep_coll:
        truth["collectives"] = job.collectives
    if pipe is not None:
        truth["pipeline"] = pipe
    with open(os.path.join(a.out, "truth.json"), "w") as f:
        json.dump(truth, f, indent=1)
        f.write("\n")
    el = time.perf_counter() - t_start
    if not a.quiet:
        tot = sum(R.nbytes for R in ranks)
        sys.stderr.write("%s: %d ranks, %d steps, %.1f MB in %.2f s (%.1f MB/s) -> %s\n"
                         % (PROG, job.W, nsteps, tot / 1e6, el, tot / 1e6 / max(el, 1e-9), a.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
