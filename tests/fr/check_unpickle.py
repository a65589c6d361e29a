#!/usr/bin/env python3
"""Every generated Flight Recorder pickle dump (scripts/gen_fr.py, all
scenarios, protocols 2-5) and a set of edge-case pickles decoded by
mergetrace's unpickler (the fr_pickle_json tool) must give the values
Python's own pickle gives (tuples as lists, ints exact); pickles that need
code or another opcode must be refused with a one-line error naming the byte.

usage: check_unpickle.py FR_PICKLE_JSON WORKDIR"""
import collections
import json
import math
import os
import pickle
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def norm(v):
    if isinstance(v, (list, tuple)):
        return [norm(x) for x in v]
    if isinstance(v, dict):
        return {str(k): norm(x) for k, x in v.items()}
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def decode(tool, path):
    p = subprocess.run([tool, path], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def main():
    tool, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "gen_fr.py"), "--out", work], check=True)
    fails = 0
    n = 0
    for dirpath, _, files in sorted(os.walk(work)):
        if not dirpath.endswith("pickle"):
            continue
        for f in sorted(files):
            path = os.path.join(dirpath, f)
            with open(path, "rb") as fh:
                want = norm(pickle.load(fh))
            rc, out, err = decode(tool, path)
            got = json.loads(out) if rc == 0 else None
            n += 1
            if got != want:
                print("FAIL %s: rc %d %s" % (path, rc, err.strip()))
                fails += 1
    # edge values, every protocol
    big = {"u64max": 2**64 - 1, "top": 2**63, "i64min": -2**63, "i64max": 2**63 - 1, "neg1": -1,
           "m128": -128, "m129": -129, "b255": 255, "b256": 256, "i32": -2**31, "f": 0.1, "f2": 2.0,
           "inf": float("inf"), "s": "caf\u00e9 \"q\"\n", "long": "x" * 300, "e": [], "t": (), "t1": (1,),
           "t3": (1, 2, 3), "t4": (1, 2, 3, 4), "b": [True, False, None], 7: "int key"}
    shared = [1, 2]
    big["shared"] = [shared, shared, {"x": shared}]
    edge = os.path.join(work, "edge")
    os.makedirs(edge)
    for proto in range(2, 6):
        path = os.path.join(edge, "ok%d" % proto)
        with open(path, "wb") as fh:
            pickle.dump(big, fh, protocol=proto)
        rc, out, err = decode(tool, path)
        n += 1
        if rc != 0 or json.loads(out) != norm(big):
            print("FAIL %s: rc %d %s" % (path, rc, err.strip()))
            fails += 1
    # refused: code (a global), another opcode, a bigger int, an old protocol, truncation
    refused = {
        "global_od": (pickle.dumps(collections.OrderedDict(a=1), protocol=2), "refused global collections.OrderedDict"),
        "global_p4": (pickle.dumps(collections.OrderedDict(a=1), protocol=4), "refused global collections.OrderedDict"),
        "set": (pickle.dumps({1, 2}, protocol=4), "unknown opcode 0x8f"),
        "bytes": (pickle.dumps(b"ab", protocol=3), "unknown opcode 0x43"),
        "u65": (pickle.dumps(2**64, protocol=2), "an int wider than 64 bits"),
        "proto0": (pickle.dumps([1], protocol=0), "expected PROTO 2 to 5"),
        "trunc": (pickle.dumps({"a": "bcdef"}, protocol=2)[:-4], "truncated input"),
        "nostop": (pickle.dumps([1], protocol=2)[:-1], "the bytes end before STOP"),
        "instr": (pickle.dumps("abcdef", protocol=2)[:-6], "the bytes end inside a string"),
        "after": (pickle.dumps([1], protocol=2) + b"N", "bytes after STOP"),
        "reduce": (b"\x80\x02c__builtin__\neval\nX\x01\x00\x00\x001\x85R.", "refused global __builtin__.eval"),
    }
    for name, (data, msg) in sorted(refused.items()):
        path = os.path.join(edge, name)
        with open(path, "wb") as fh:
            fh.write(data)
        rc, out, err = decode(tool, path)
        n += 1
        if rc != 2 or msg not in err or path not in err or "byte " not in err or err.count("\n") != 1:
            print("FAIL %s: rc %d stderr %r (expected %r)" % (name, rc, err, msg))
            fails += 1
    print("fr_unpickle: %d files, %d failures" % (n, fails))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
