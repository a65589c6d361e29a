#!/usr/bin/env python3
"""A large operation-level timeline for timing the timeline path: the
artifact's job ST (DP 2 x PP 4, 6784 operations) with its data-parallel
ranks copied COPIES times (default 16: DP 32 x PP 4 = 128 ranks, 108,544
operations), every copy with the same times (a consistent job: the
replay must reproduce it).

usage: timeline_scale.py ST_TIMELINE.json.gz OUT.json.gz [COPIES]"""
import gzip
import json
import sys


def main():
    src, out = sys.argv[1], sys.argv[2]
    copies = int(sys.argv[3]) if len(sys.argv) > 3 else 16
    ev = json.load(gzip.open(src))
    ndp = 1 + max(e["pid"] for e in ev if "pid" in e)
    ntid = 1 + max(e["tid"] for e in ev if "tid" in e)
    res = []
    for c in range(copies):
        for e in ev:
            e2 = dict(e)
            if "pid" in e2:
                e2["pid"] = e["pid"] + c * ndp
            if "tid" in e2:
                e2["tid"] = e["tid"] + c * ntid
            if e.get("name") == "process_name":
                e2["args"] = {"name": "DP rank [%d]" % e2["pid"]}
            res.append(e2)
    with gzip.open(out, "wt") as fo:
        json.dump(res, fo)


if __name__ == "__main__":
    main()
