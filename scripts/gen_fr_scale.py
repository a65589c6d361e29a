#!/usr/bin/env python3
"""Fast writer of a large synthetic Flight Recorder job (JSON dumps, one per
rank) for scripts/bench --only fr: N ranks x E entries x 3 groups per rank,
one rank that never enqueues the default group's last all_reduce.
With --encoding pickle each dump is that JSON's value pickled (protocol 2,
every string interned first: PyTorch's pickler writes a repeated string
once and refers to it after, as Python's does an interned one).

gen_fr.py writes the small scenarios with truth files through json.dumps of
dicts (too slow for millions of entries); this writes each entry from a
string template with the same fields and the same JSON conventions (0 for
an undiscovered time, no frames).  Deterministic for a seed.

Groups: 0 the default group (every rank); tp groups of 8 consecutive ranks
(names "tp<k>", ids 1 + k); dp groups of the ranks equal modulo 8 (names
"dp<j>", ids 1 + N/8 + j).  Each iteration is a tp all_gather, a dp
reduce_scatter and a default all_reduce.  Rank clocks read true time plus a
seeded offset of up to +-5 s.  The culprit (--culprit, default N-1) runs the
last iteration's tp and dp collectives and never enqueues its all_reduce;
the other ranks start that all_reduce and wait until the watchdog dumps.
"""

import argparse
import json
import os
import pickle
import random
import sys
from multiprocessing import Pool

T0 = 1767189312000000000
STEP_NS = 50_000_000
COLL_NS = 2_000_000
TIMEOUT_MS = 600_000
TP = 8

ENTRY = ('{{"record_id": {rid}, "pg_id": {pg}, "process_group": ["{pgn}", "{pgd}"], '
         '"collective_seq_id": {seq}, "p2p_seq_id": 0, "op_id": {seq}, "profiling_name": "nccl:{name}", '
         '"time_created_ns": {tc}, "time_discovered_started_ns": {ts}, "time_discovered_completed_ns": {tf}, '
         '"duration_ms": {dur}, "state": "{state}", "retired": {ret}, "timeout_ms": {tmo}, "is_p2p": false, '
         '"input_sizes": [[{n}]], "input_dtypes": ["Float"], "output_sizes": [[{no}]], "output_dtypes": ["Float"], '
         '"thread_id": {tid}, "thread_name": "pt_nccl_watchdg"}}')


def groups(r, n):
    tp, dp = r // TP, r % TP
    return [("0", "0", "default_pg", list(range(n))),
            (str(1 + tp), "tp%d" % tp, "tp", list(range(tp * TP, tp * TP + TP))),
            (str(1 + n // TP + dp), "dp%d" % dp, "dp", list(range(dp, n, TP)))]


def interned(v):
    """v with every string (keys and values) interned."""
    if isinstance(v, str):
        return sys.intern(v)
    if isinstance(v, dict):
        return {sys.intern(k): interned(x) for k, x in v.items()}
    if isinstance(v, list):
        return [interned(x) for x in v]
    return v


def write_rank(args):
    out, r, n, entries, culprit, seed, enc = args
    rnd = random.Random(seed * 1_000_003 + r)
    off = rnd.randrange(-5_000_000_000, 5_000_000_000)
    gs = groups(r, n)
    iters = (entries + 2) // 3
    # the buffer keeps the last `entries`; the job ran `iters` iterations
    recs = []
    seq = [0, 0, 0]
    t = T0
    rid = 0
    kinds = (("all_gather", 1, 2), ("reduce_scatter", 2, 1), ("all_reduce", 0, 1))
    last_it = iters - 1
    stuck_start = None
    for it in range(iters):
        for k, (name, gi, mult) in enumerate(kinds):
            c = t + k * 10 * COLL_NS + (r % 97) * 1000
            s = t + k * 10 * COLL_NS + 100_000
            f = s + COLL_NS
            if it == last_it and gi == 0:
                if r == culprit:
                    continue
                s, f = c, None
                stuck_start = s
            seq[gi] += 1
            g = gs[gi]
            done = f is not None
            recs.append(ENTRY.format(
                rid=rid, pg=g[0], pgn=g[1], pgd=g[2], seq=seq[gi], name=name,
                tc=c + off, ts=s + off, tf=(f + off) if done else 0,
                dur=("%.3f" % ((f - s) / 1e6)) if done else "null",
                state="completed" if done else "started", ret="true" if done else "false",
                tmo=TIMEOUT_MS, n=1024, no=1024 * mult, tid=139_900_000_000_000 + r))
            rid += 1
        t += STEP_NS
    recs = recs[-entries:]
    last = {}
    for gi in range(3):
        last[gi] = seq[gi]
    status = {}
    cfg = {}
    for gi, g in enumerate(gs):
        cfg[g[1]] = {"name": g[1], "desc": g[2], "ranks": str(g[3])}
        stuck = gi == 0 and r != culprit
        done = seq[gi] - (1 if stuck else 0)
        status[g[0]] = {"last_enqueued_collective": seq[gi], "last_started_collective": seq[gi],
                        "last_completed_collective": done}
    head = json.dumps({"version": "2.10", "comm_lib_version": "2.21.5", "pg_config": cfg,
                       "pg_status": status})
    path = os.path.join(out, "comm_lib_trace_rank_%d" % r)
    text = head[:-1] + ', "entries": [' + ", ".join(recs) + "]}"
    if enc == "pickle":
        with open(path + ".tmp", "wb") as fh:
            fh.write(pickle.dumps(interned(json.loads(text)), protocol=2))
    else:
        with open(path + ".tmp", "w") as fh:
            fh.write(text)
    os.replace(path + ".tmp", path)
    return stuck_start


def main(argv=None):
    ap = argparse.ArgumentParser(prog="gen_fr_scale.py", description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="folder of the dumps; the truth goes to OUT.truth.json")
    ap.add_argument("--ranks", type=int, default=4096)
    ap.add_argument("--entries", type=int, default=2000, help="entries per dump (default 2000)")
    ap.add_argument("--culprit", type=int, default=-1, help="the rank that skips (default the last)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--encoding", choices=("json", "pickle"), default="json")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    a = ap.parse_args(argv)
    if a.ranks < TP or a.ranks % TP:
        ap.error("--ranks must be a multiple of %d" % TP)
    culprit = a.culprit if a.culprit >= 0 else a.ranks - 1
    os.makedirs(a.out, exist_ok=True)
    work = [(a.out, r, a.ranks, a.entries, culprit, a.seed, a.encoding) for r in range(a.ranks)]
    with Pool(a.jobs) as p:
        for _ in p.imap_unordered(write_rank, work, chunksize=16):
            pass
    # beside the dumps' folder, not in it: mergetrace reads every file there
    with open(a.out.rstrip("/") + ".truth.json", "w") as fh:
        json.dump({"ranks": a.ranks, "entries": a.entries, "culprit": culprit, "group": "0",
                   "profiling_name": "nccl:all_reduce"}, fh)
        fh.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
