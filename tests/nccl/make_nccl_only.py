#!/usr/bin/env python3
"""Writes tests/data/nccl-only/: a 4-rank job seen only through the NCCL
plugin's JSON lines (docs/FORMATS.md), with known clocks.

True time t. Rank r's host clock reads t + HOST_OFF[r]; its GPU clock reads
t + HOST_OFF[r] - GPU_OFF[r]. Every GPU stamp is seen by the host exactly
SEEN_NS later (start) or SEEN_NS + 500 (stop), so the reader's offset bound
is GPU_OFF[r] + SEEN_NS on every rank: the rows land on the host clock + SEEN_NS,
and mergetrace's offsets onto rank 0 must be HOST_OFF[0] - HOST_OFF[r].
Collectives: 6 AllReduce on the 4-rank communicator (rank 2 enters each
one 200 us after the others: the straggler); 3 AllGather on each pair
communicator {0,1} and {2,3}; one Send/Recv 0->1 and 2->3 on the 4-rank
communicator. Every instance ends at the same true time on all ranks.
Rank 3's file ends with a line cut short (a killed process)."""
import os
import sys

HOST_OFF = [0, 5000000, -3000000, 12345678]
GPU_OFF = [1700000000000000000, 1700000000000000000 - 777, 42, 1600000000000000000]
SEEN_NS = 2000
T0 = 1767189312000000000
WORLD = "00000000000abcde"
PAIR = ["0000000000001111", "0000000000002222"]


def main(out):
    os.makedirs(out, exist_ok=True)
    for r in range(4):
        lines = ['{"type":"process","format":"mergetrace-nccl","version":1,"host":"node%d","pid":%d,"abi":6,"mask":70}'
                 % (r // 2, 4000 + r),
                 '{"type":"clock","realtime_ns":%d,"monotonic_ns":%d}' % (T0 + HOST_OFF[r], 1000 + r)]
        lines.append('{"type":"init","comm":"%s","name":"world","rank":%d,"nranks":4,"nNodes":2,'
                     '"realtime_ns":%d,"monotonic_ns":1,"tid":10}' % (WORLD, r, T0 + HOST_OFF[r]))
        lines.append('{"type":"init","comm":"%s","name":"pair","rank":%d,"nranks":2,"nNodes":1,'
                     '"realtime_ns":%d,"monotonic_ns":1,"tid":10}' % (PAIR[r // 2], r % 2, T0 + HOST_OFF[r]))
        host = lambda t: t + HOST_OFF[r]
        gpu = lambda t: t + HOST_OFF[r] - GPU_OFF[r]
        tid = 0
        tasks = []   # (comm, rank in comm, func, seq or None, peer, count, true start, true end)
        for k in range(6):
            start = T0 + 1000000 + k * 1000000 + (200000 if r == 2 else 0)
            end = T0 + 1000000 + k * 1000000 + 300000
            tasks.append((WORLD, r, "AllReduce", k, None, 1048576, start, end))
        for k in range(3):
            start = T0 + 8000000 + k * 500000 + r * 1000
            end = T0 + 8000000 + k * 500000 + 100000
            tasks.append((PAIR[r // 2], r % 2, "AllGather", k, None, 4096, start, end))
        start, end = T0 + 10000000 + r * 3000, T0 + 10000000 + 60000
        tasks.append((WORLD, r, "Send" if r % 2 == 0 else "Recv", None, r + 1 if r % 2 == 0 else r - 1, 65536,
                      start, end))
        for comm, cr, func, seq, peer, count, start, end in tasks:
            tid += 1
            hs = host(start) - 15000
            if seq is not None:
                lines.append('{"type":"coll","comm":"%s","rank":%d,"id":%d,"func":"%s","seq":%d,"count":%d,'
                             '"datatype":"ncclFloat32","root":-1,"algo":"RING","proto":"LL128","nChannels":2,'
                             '"nWarps":16,"host_start_ns":%d,"host_stop_ns":%d,"tid":10}'
                             % (comm, cr, tid, func, seq, count, hs, hs + 4000))
            else:
                lines.append('{"type":"p2p","comm":"%s","rank":%d,"id":%d,"func":"%s","count":%d,'
                             '"datatype":"ncclInt8","peer":%d,"nChannels":1,"host_start_ns":%d,"host_stop_ns":%d,'
                             '"tid":10}' % (comm, cr, tid, func, count, peer, hs, hs + 4000))
            for ch in range(2 if seq is not None else 1):
                gs, ge = gpu(start) + ch * 100, gpu(end) - ch * 100
                lines.append('{"type":"kch","comm":"%s","rank":%d,"parent":%d,"parent_type":"%s","func":"%s",%s'
                             '"channel":%d,"gpu_start_ns":%d,"gpu_start_seen_ns":%d,"gpu_stop_ns":%d,'
                             '"gpu_stop_seen_ns":%d,"tid":11}'
                             % (comm, cr, tid, "coll" if seq is not None else "p2p", func,
                                '"seq":%d,' % seq if seq is not None else "", ch, gs, gs + GPU_OFF[r] + SEEN_NS + ch * 7,
                                ge, ge + GPU_OFF[r] + SEEN_NS + 500))
        lines.append('{"type":"stats","why":"exit","dropped_ring_full":0,"dropped_no_ring":0,"dropped_pool_full":0,'
                     '"unhandled_events":0,"unknown_handles":0,"threads":2,"open_events":0}')
        text = "\n".join(lines) + "\n"
        if r == 3:
            text += '{"type":"coll","comm":"0000'
        with open(os.path.join(out, "node%d-pid%d.jsonl" % (r // 2, 4000 + r)), "w") as f:
            f.write(text)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/data/nccl-only")
