#!/usr/bin/env python3
"""Writes tests/data/nccl-inspector/: a 3-rank job seen only through NCCL
Inspector logs (compact JSON lines, as the Inspector writes them), with
known clocks. Rank r's host clock reads true time + HOST_OFF_US[r];
mergetrace's offsets onto rank 0 must be HOST_OFF_US[0] - HOST_OFF_US[r]
(0, -2.5, +1.25 ms). Five verbose AllReduce records (rank 1 enters each
100 us after the others; all end together), then one plain Broadcast
record without event_trace_ts (counted as untimed)."""
import os
import sys

HOST_OFF_US = [0, 2500, -1250]
T0_US = 1752867229000000
ID = "0x7f8c496ae9f661"


def main(out):
    os.makedirs(out, exist_ok=True)
    for r in range(3):
        lines = []
        for k in range(5):
            start = T0_US + 1000 * k + (100 if r == 1 else 0) + HOST_OFF_US[r]
            stop = T0_US + 1000 * k + 400 + HOST_OFF_US[r]
            lines.append(
                '{"header":{"id":"%s","rank":%d,"n_ranks":3,"nnodes":3},"metadata":{'
                '"inspector_output_format_version":"v4.0","git_rev":"","rec_mechanism":"nccl_profiler_interface",'
                '"dump_timestamp_us":%d,"hostname":"host%d","pid":%d},"coll_perf":{"coll":"AllReduce","coll_sn":%d,'
                '"coll_msg_size_bytes":4194304,"coll_exec_time_us":%d,"coll_timing_source":"kernel_gpu",'
                '"coll_algobw_gbs":%.6f,"coll_busbw_gbs":%.6f,"event_trace_sn":{"coll_start_sn":1,"coll_stop_sn":2,'
                '"kernel_events":[{"channel_id":0,"kernel_start_sn":3,"kernel_stop_sn":5,"kernel_record_sn":4}]},'
                '"event_trace_ts":{"coll_start_ts":%d,"coll_stop_ts":%d,"kernel_events":[{"channel_id":0,'
                '"kernel_start_ts":%d,"kernel_stop_ts":%d,"kernel_record_ts":%d}]}}}'
                % (ID, r, stop + 300, r, 7000 + r, k + 1, stop - start, 4194304 / (stop - start) / 1e3,
                   4194304 / (stop - start) / 1e3 * 4 / 3, start - 30, start - 25, start, stop, stop))
        lines.append('{"header":{"id":"%s","rank":%d,"n_ranks":3,"nnodes":3},"metadata":{"dump_timestamp_us":%d,'
                     '"hostname":"host%d","pid":%d},"coll_perf":{"coll":"Broadcast","coll_sn":1,'
                     '"coll_msg_size_bytes":8,"coll_exec_time_us":12,"coll_timing_source":"collective_cpu",'
                     '"coll_algobw_gbs":"nan","coll_busbw_gbs":"nan"}}' % (ID, r, T0_US + 9000, r, 7000 + r))
        with open(os.path.join(out, "host%d-pid%d.log" % (r, 7000 + r)), "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/data/nccl-inspector")
