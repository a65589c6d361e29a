#!/usr/bin/env python3
"""Independent check of the NCCL plugin's JSON lines left by test_nccl_plugin:
every line of every *.jsonl under DIR parses as strict JSON (UTF-8), has a
known type and exactly the keys docs/FORMATS.md lists, with the documented
JSON types. Usage: check_jsonl.py DIR"""
import glob
import json
import os
import sys

INT, STR, NUL = "int", "str", "null"
KEYS = {
    "process": {"format": STR, "version": INT, "host": STR, "pid": INT, "abi": INT, "mask": INT},
    "clock": {"realtime_ns": INT, "monotonic_ns": INT},
    "init": {"comm": STR, "name": STR, "rank": INT, "nranks": INT, "nNodes": INT,
             "realtime_ns": INT, "monotonic_ns": INT, "tid": INT},
    "coll": {"comm": STR, "rank": INT, "id": INT, "func": STR, "seq": INT, "count": INT,
             "datatype": STR, "root": INT, "algo": STR, "proto": STR, "nChannels": INT,
             "nWarps": INT, "host_start_ns": INT, "host_stop_ns": INT, "tid": INT},
    "p2p": {"comm": STR, "rank": INT, "id": INT, "func": STR, "count": INT, "datatype": STR,
            "peer": INT, "nChannels": INT, "host_start_ns": INT, "host_stop_ns": INT, "tid": INT},
    "kch": {"comm": STR, "rank": INT, "parent": INT, "parent_type": (STR, NUL), "channel": INT,
            "gpu_start_ns": INT, "gpu_start_seen_ns": INT, "gpu_stop_ns": (INT, NUL),
            "gpu_stop_seen_ns": (INT, NUL), "tid": INT},
    # "open" lines, by their "of"
    "open coll": {"comm": STR, "rank": INT, "id": INT, "func": STR, "seq": INT, "count": INT,
                  "datatype": STR, "host_start_ns": INT, "tid": INT},
    "open p2p": {"comm": STR, "rank": INT, "id": INT, "func": STR, "count": INT, "datatype": STR,
                 "peer": INT, "host_start_ns": INT, "tid": INT},
    "open kch": {"comm": STR, "rank": INT, "parent": INT, "parent_type": STR, "func": STR, "channel": INT,
                 "gpu_start_ns": INT, "gpu_start_seen_ns": INT, "tid": INT},
    "stats": {"why": STR, "dropped_ring_full": INT, "dropped_no_ring": INT,
              "dropped_pool_full": INT, "unhandled_events": INT, "unknown_handles": INT,
              "threads": INT},
}
OPTIONAL = {"kch": {"func": STR, "seq": INT}, "open kch": {"seq": INT},
            "stats": dict({"open_events": INT},
                          **{"unhandled_" + t: INT for t in (
                              "Group", "Coll", "P2p", "ProxyOp", "ProxyStep", "ProxyCtrl",
                              "KernelCh", "NetPlugin", "GroupApi", "CollApi", "P2pApi",
                              "KernelLaunch", "CeColl", "CeSync", "CeBatch", "other")})}


def kind(v):
    if v is None:
        return NUL
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return INT
    if isinstance(v, str):
        return STR
    return type(v).__name__


def reject_constant(name):
    raise ValueError("non-standard JSON constant " + name)


def check_file(path):
    lines = 0
    with open(path, "rb") as f:
        for no, raw in enumerate(f, 1):
            where = "%s:%d" % (path, no)
            if not raw.endswith(b"\n"):
                raise SystemExit(where + ": line does not end with a newline")
            obj = json.loads(raw.decode("utf-8"), parse_constant=reject_constant)
            if not isinstance(obj, dict) or "type" not in obj:
                raise SystemExit(where + ": not an object with a type")
            t = obj.pop("type")
            if t == "open":
                t += " " + str(obj.pop("of", None))
            if t not in KEYS:
                raise SystemExit(where + ": unknown type " + repr(t))
            if no == 1 and t != "process":
                raise SystemExit(where + ": the first line must be the process line")
            want = dict(KEYS[t])
            for k, v in OPTIONAL.get(t, {}).items():
                if k in obj:
                    want[k] = v
            if set(obj) != set(want):
                raise SystemExit("%s: %s keys %s, expected %s" % (where, t, sorted(obj), sorted(want)))
            for k, v in obj.items():
                ok = want[k] if isinstance(want[k], tuple) else (want[k],)
                if kind(v) not in ok:
                    raise SystemExit("%s: %s.%s is %s" % (where, t, k, kind(v)))
            if "comm" in obj and (len(obj["comm"]) != 16 or obj["comm"] != obj["comm"].lower()
                                  or any(c not in "0123456789abcdef" for c in obj["comm"])):
                raise SystemExit(where + ": comm is not 16 lowercase hex digits")
            lines += 1
    return lines


def main():
    files = sorted(glob.glob(os.path.join(sys.argv[1], "nccl_plugin_*", "*.jsonl")))
    if not files:
        print("no plugin output under " + sys.argv[1])
        return 1
    total = sum(check_file(p) for p in files)
    print("ok: %d files, %d lines" % (len(files), total))
    return 0


if __name__ == "__main__":
    sys.exit(main())
