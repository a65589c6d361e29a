#!/usr/bin/env python3
"""Writes tests/data/nccl-example/: a 3-rank job seen only through the
Chrome-trace files of NCCL's example profiler plugin, as that plugin prints
them (one event per line, "{}]" at the end), one file per process and
communicator: nccl_profile_<commHash>_<rank>.json.

Rank r's GPU clock reads true time + GPU_OFF_NS[r]; mergetrace's offsets
onto rank 0 must be GPU_OFF_NS[0] - GPU_OFF_NS[r] (0, -2.5, +1.25 ms).
World communicator: five AllReduce (SeqNum 0..4; rank 1's kernels start
100 us after the others', all end together), then a Broadcast without
kernel channels (counted as untimed), then rank 0 sends to rank 1. Host
"ts" are us since each plugin's start (CLOCK_MONOTONIC; not used to align).
Rank 2's file has the defects of older plugin versions: API events with
unquoted datatypes and stream pointers and a zero "ts".
A second communicator of ranks 0 and 1 (two files) must be left out: the
world communicator has the most files."""
import os
import sys

WORLD = 12715772615376301750
SUB = 4432120985773260157
GPU_OFF_NS = [0, 2500000, -1250000]
T0_NS = 1765223116927674080          # true time of the first AllReduce
HOST_START_NS = [T0_NS - 2000000000, T0_NS - 2000123457, T0_NS - 1999876543]


def ev(name, cat, ph, id_, pid, ts_us, args=None):
    s = '{"name": "%s", "cat": "%s", "ph": "%s", "id": %d, "pid": %d, "tid": 1, "ts": %.6f' % (
        name, cat, ph, id_, pid, ts_us)
    if args is not None:
        s += ', "args": {%s}' % args
    return s + "},\n"


def host_us(r, true_ns):
    return (true_ns - HOST_START_NS[r]) / 1000.0


def api(r, pid, func, k, ts, ph, old):
    if ph == "e":
        return ev(func, "COLL_API", "e", k, pid, ts)
    if old:
        return ev(func, "COLL_API", "b", k, pid, 0.0,
                  '"count": 1048576, "datatype": ncclFloat32, "root": 0, "GraphCaptured": 0, "Stream": 0x55d0c0ffee00')
    return ev(func, "COLL_API", "b", k, pid, ts,
              '"count": 1048576, "datatype": "ncclFloat32", "root": 0, "GraphCaptured": 0, "Stream": "0x55d0c0ffee00"')


def world_file(r):
    pid = 5000 + r
    old = r == 2
    out = ["[\n"]
    off = GPU_OFF_NS[r]
    for k in range(5):
        t_enq = T0_NS + 1000000 * k - 50000
        start = T0_NS + 1000000 * k + (100000 if r == 1 else 0)
        stop = T0_NS + 1000000 * k + 400000
        out.append(ev("Group API", "GROUP_API", "b", k, pid, host_us(r, t_enq - 2000), '"groupApiId": %d, "groupDepth": 1' % k))
        out.append(api(r, pid, "AllReduce", k, host_us(r, t_enq - 1000), "b", old))
        out.append(ev("AllReduce", "COLL", "b", k, pid, host_us(r, t_enq),
                      '"SeqNum": %d, "CommHash": %d, "Rank": %d, "Count": 1048576, "Datatype": "ncclFloat32", '
                      '"Algorithm": "RING", "Protocol": "SIMPLE", "nChannels": 2' % (k, WORLD, r)))
        for ch in range(2):
            s = start + (3000 if ch else 0)
            e = stop - (0 if ch else 5000)
            out.append(ev("KernelCh", "GPU", "b", 0, pid, host_us(r, s + 7000),
                          '"Channel": %d, "StartGpuClk": %d, "StopGpuClk": %d' % (ch, s + off, e + off)))
            out.append(ev("KernelCh", "GPU", "e", 0, pid, host_us(r, e + 6000)))
        out.append(ev("AllReduce", "COLL", "e", k, pid, host_us(r, stop + 8000)))
        out.append(api(r, pid, "AllReduce", k, host_us(r, t_enq + 3000), "e", old))
        out.append(ev("Group API", "GROUP_API", "e", k, pid, host_us(r, stop + 9000)))
    t = T0_NS + 5000000
    out.append(ev("Broadcast", "COLL", "b", 5, pid, host_us(r, t),
                  '"SeqNum": 0, "CommHash": %d, "Rank": %d, "Count": 8, "Datatype": "ncclInt8", '
                  '"Algorithm": "RING", "Protocol": "LL", "nChannels": 1' % (WORLD, r)))
    out.append(ev("Broadcast", "COLL", "e", 5, pid, host_us(r, t + 20000)))
    if r in (0, 1):
        func = "Send" if r == 0 else "Recv"
        s = T0_NS + 6000000
        e = s + 50000
        out.append(ev(func, "P2P_API", "b", 0, pid, 0.0 if old else host_us(r, s - 3000),
                      '"count": 64, "datatype": "ncclFloat32", "GraphCaptured": 0, "Stream": "0x55d0c0ffee00"'))
        out.append(ev(func, "P2P", "b", 0, pid, host_us(r, s - 2000),
                      '"CommHash": %d, "Rank": %d, "Peer": %d, "Count": 64, "Datatype": "ncclFloat32", '
                      '"nChannels": 1' % (WORLD, r, 1 - r)))
        out.append(ev("KernelCh", "GPU", "b", 0, pid, host_us(r, s + 7000),
                      '"Channel": 0, "StartGpuClk": %d, "StopGpuClk": %d' % (s + off, e + off)))
        out.append(ev("KernelCh", "GPU", "e", 0, pid, host_us(r, e + 6000)))
        out.append(ev(func, "P2P", "e", 0, pid, host_us(r, e + 8000)))
        out.append(ev(func, "P2P_API", "e", 0, pid, host_us(r, s - 1000)))
    out.append("{}]\n")
    return "".join(out)


def sub_file(r):
    pid = 5000 + r
    out = ["[\n"]
    for k in range(2):
        s = T0_NS + 8000000 + 1000000 * k
        out.append(ev("AllGather", "COLL", "b", k, pid, host_us(r, s - 40000),
                      '"SeqNum": %d, "CommHash": %d, "Rank": %d, "Count": 256, "Datatype": "ncclBfloat16", '
                      '"Algorithm": "RING", "Protocol": "LL128", "nChannels": 1' % (k, SUB, r)))
        out.append(ev("KernelCh", "GPU", "b", 0, pid, host_us(r, s + 7000),
                      '"Channel": 0, "StartGpuClk": %d, "StopGpuClk": %d'
                      % (s + GPU_OFF_NS[r], s + 90000 + GPU_OFF_NS[r])))
        out.append(ev("KernelCh", "GPU", "e", 0, pid, host_us(r, s + 97000)))
        out.append(ev("AllGather", "COLL", "e", k, pid, host_us(r, s + 99000)))
    out.append("{}]\n")
    return "".join(out)


def main(out):
    os.makedirs(out, exist_ok=True)
    for r in range(3):
        with open(os.path.join(out, "nccl_profile_%d_%d.json" % (WORLD, r)), "w") as f:
            f.write(world_file(r))
    for r in range(2):
        with open(os.path.join(out, "nccl_profile_%d_%d.json" % (SUB, r)), "w") as f:
            f.write(sub_file(r))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "data", "nccl-example"))
