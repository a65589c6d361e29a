#!/usr/bin/env python3
"""Write the hostile-names fixture (rank-0.json .. rank-2.json here): a tiny
3-rank job whose kernel, annotation, memcpy and process group names are
HTML/script injection attempts, for the report.html tests. Deterministic:
run it again to get the same bytes."""
import json
import os

H_SCRIPT = "<script>alert(1)</script>"
H_IMG = "\"><img src=x onerror=alert(1)>"
H_AMP = "&amp; 'single' \"double\""
H_SVG = "<svg onload=alert(2)>"
RANKS = 3
STEPS = 4
# each rank's clock: true time + offset (us); rank 2 arrives late
OFFSET_US = [0.0, 1234.5, -777.25]
LATE_US = [0.0, 0.0, 60.0]


def events(rank):
    ev, corr = [], 1000
    off = OFFSET_US[rank]

    def x(cat, name, pid, tid, ts, dur, args=None):
        e = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid,
             "ts": round(ts + off, 3), "dur": dur}
        if args:
            e["args"] = args
        ev.append(e)
    for s in range(STEPS):
        t0 = 1000.0 + 1000.0 * s
        x("user_annotation", f"ProfilerStep#{s}", 10, 10, t0, 900.0)
        x("user_annotation", H_IMG, 10, 10, t0 + 10, 200.0)
        corr += 1
        x("cuda_runtime", "cudaLaunchKernel", 10, 10, t0 + 20, 5.0, {"correlation": corr})
        x("kernel", H_SCRIPT, 0, 7, t0 + 30, 100.0 + 10 * rank, {"correlation": corr})
        corr += 1
        x("cuda_runtime", "cudaMemcpyAsync", 10, 10, t0 + 40, 5.0, {"correlation": corr})
        x("gpu_memcpy", H_SVG, 0, 7, t0 + 150, 20.0, {"correlation": corr})
        x("user_annotation", H_AMP, 10, 10, t0 + 300, 100.0)
        x("cpu_op", "record_param_comms", 10, 10, t0 + 305, 50.0,
          {"External id": 100 + s, "Collective name": "allreduce", "In msg nelems": 1048576,
           "Out msg nelems": 1048576, "dtype": "Float", "Process Group Name": H_IMG,
           "Process Group Desc": H_SCRIPT, "Group size": RANKS, "Seq": s})
        corr += 1
        x("cuda_driver", "cuLaunchKernelEx", 10, 10, t0 + 310, 5.0, {"correlation": corr, "External id": 100 + s})
        start = t0 + 320 + LATE_US[rank] + 3 * s * (rank == 1)
        end = t0 + 520.0  # the kernels of one allreduce end together
        x("kernel", "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 0, 20,
          start, round(end - start, 3), {"correlation": corr, "External id": 100 + s})
    return ev


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    for r in range(RANKS):
        doc = {"schemaVersion": 1,
               "distributedInfo": {"backend": "nccl", "rank": r, "world_size": RANKS},
               "traceEvents": events(r),
               "baseTimeNanoseconds": 1767189312000000000}
        with open(os.path.join(here, f"rank-{r}.json"), "w") as f:
            json.dump(doc, f, indent=None)
            f.write("\n")


if __name__ == "__main__":
    main()
