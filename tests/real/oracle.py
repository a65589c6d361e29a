"""torch's own numbers for a trace of tests/data/real/, worked out from the
profiler's in-memory result that scripts/gpu_capture.py saved beside it
(oracle/X.oracle.json.gz), never from the trace file mergetrace reads."""
import gzip
import json
import os
import sys

# the union of intervals, written once for the Python tests (the generator's)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
from gen_traces import merged_of  # noqa: E402

MEMORY = "[memory]"


def load(path):
    with gzip.open(path, "rt") as f:
        return json.load(f)


class Oracle:
    def __init__(self, path):
        o = load(path)
        self.raw = o
        k = o["kineto_events"]
        F = {f: i for i, f in enumerate(k["fields"])}
        names = k["names"]
        self.cpu, self.gpu_all = [], []
        for r in k["rows"]:
            e = {"name": names[r[F["name"]]], "start": r[F["start_ns"]], "dur": r[F["duration_ns"]],
                 "corr": r[F["correlation_id"]], "tid": r[F["start_thread_id"]],
                 "dev": r[F["device_index"]], "stream": r[F["resource_id"]]}
            (self.gpu_all if r[F["device_type"]] == "CUDA" else self.cpu).append(e)
        self.launch = {}
        for e in self.cpu:
            if e["corr"] and e["name"].startswith("cu"):   # cudaLaunchKernel, cuLaunchKernelEx, ...
                self.launch.setdefault(e["corr"], e)
        # On the device are activities (kernels, copies, sets), the
        # allocator's [memory] records and the GPU side of record_function
        # ranges. The profiler's rows carry no activity type (torch 2.11 has
        # no accessor for it) and names alone do not tell them apart
        # (Inductor wraps each Triton launch in a CPU range of the kernel's
        # name), but the GPU side of a range has the correlation id and the
        # name of its CPU range, while a kernel has the id of its launch.
        # Activities launched before the profiled window (a CUDA graph's
        # replay still running) have no launch row and are kept.
        cpu_ids = {(e["corr"], e["name"]) for e in self.cpu}
        self.gpu = [e for e in self.gpu_all
                    if e["name"] != MEMORY and (e["corr"], e["name"]) not in cpu_ids]

    def comm_compute(self):
        """NCCL kernels, and the other kernels (copies and sets apart)"""
        comm = [e for e in self.gpu if e["name"].startswith("ncclDevKernel")]
        comp = [e for e in self.gpu if not e["name"].startswith(("ncclDevKernel", "Memcpy", "Memset"))]
        return comm, comp

    def kinds(self):
        """count and summed ns of kernels, copies and sets"""
        out = {"kernel": [0, 0], "memcpy": [0, 0], "memset": [0, 0]}
        for e in self.gpu:
            k = "memcpy" if e["name"].startswith("Memcpy") else \
                "memset" if e["name"].startswith("Memset") else "kernel"
            out[k][0] += 1
            out[k][1] += e["dur"]
        return out

    def busy_ns(self):
        """the union of every GPU activity's interval"""
        return union_ns(self.gpu)

    def ranges(self, name_pred):
        return [e for e in self.cpu if name_pred(e["name"])]

    def projection_ns(self, name_pred, same_thread=False):
        """GPU time (the union of the intervals, as docs/report-schema.md
        defines it: activities on two streams at once count once) of the
        activities launched while a range was open: any thread of the
        process, or the range's own thread alone."""
        rs = self.ranges(name_pred)
        picked = []
        for g in self.gpu:
            ln = self.launch.get(g["corr"])
            if not ln:
                continue
            for r in rs:
                if r["start"] <= ln["start"] <= r["start"] + r["dur"] and \
                        (not same_thread or r["tid"] == ln["tid"]):
                    picked.append(g)
                    break
        return union_ns(picked)

    def key_average(self, name):
        """key_averages() rows of that name (a CPU range and, for
        record_function ranges, its GPU side)"""
        return [x for x in self.raw["key_averages"] if x["name"] == name]


def inter_ns(a, b):
    """the measure of union(a) and union(b) together"""
    return union_ns(a) + union_ns(b) - union_ns(list(a) + list(b))


def union_ns(events):
    """the measure of the union of the events' [start, start + dur)"""
    return merged_of([(e["start"], e["start"] + e["dur"]) for e in events])[0]
