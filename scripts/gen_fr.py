#!/usr/bin/env python3
"""Generator of synthetic PyTorch Flight Recorder dumps (one file per rank,
pickle and JSON encodings) for the hang scenarios of issue 41, with a truth
file per scenario.

Written from the format's documented facts (top level: version,
comm_lib_version or nccl_version, pg_config, pg_status, entries; per entry:
record_id, pg_id, process_group, collective_seq_id, p2p_seq_id, op_id,
profiling_name, time_created_ns, time_discovered_started_ns,
time_discovered_completed_ns, duration_ms, state, retired, timeout_ms,
is_p2p, sizes and dtypes, frames (pickle only), thread id and name). The
JSON encoding writes 0 for an undiscovered time and has no frames; the
pickle one writes None.  Standard library only; deterministic.

The job runs in true time (ns); rank r's clock reads t + OFFSET[r].  Every
rank's dump is taken when its own watchdog fires (its oldest uncompleted
collective started timeout_ms before), or, for a rank that is not stuck, at
the same true time as the others.
"""

import argparse
import json
import os
import pickle
import sys

WORLD = 4
T0 = 1767189312000000000        # true start of the job, ns
STEP_NS = 50_000_000             # one iteration
COLL_NS = 2_000_000              # a completed all_reduce
TIMEOUT_MS = 600_000
OFFSET = [0, 1_700_000_123, -2_300_000_456, 5_100_000_789]   # rank clocks, ns
BIG_TID = 18446744073709551557   # a thread id beyond int64: must be kept exactly

# Process groups: 0 the default group, 1 and 2 tensor-parallel pairs.
PGS = {
    "0": {"name": "0", "desc": "default_pg", "ranks": [0, 1, 2, 3]},
    "1": {"name": "1", "desc": "tp", "ranks": [0, 1]},
    "2": {"name": "2", "desc": "tp", "ranks": [2, 3]},
}

# Point-to-point scenarios (pipeline parallelism) add their own groups: a
# send's profiling_name names group ranks (positions in the group's sorted
# ranks), which differ from global ranks in groups 5 and 6.
PP_PGS = dict(PGS, **{
    "3": {"name": "3", "desc": "pp", "ranks": [0, 1, 2, 3]},
    "4": {"name": "4", "desc": "dp", "ranks": [0, 2]},
    "5": {"name": "5", "desc": "pp", "ranks": [0, 2]},
    "6": {"name": "6", "desc": "pp", "ranks": [1, 3]},
})
P2P_NS = 1_000_000               # one completed send/recv
HOP_NS = 3_000_000               # a stage's compute between its recv and its send

SCENARIOS = ["skip", "stuck_other", "size_mismatch", "restart", "missing_dump", "slow_rank",
             "pp_chain", "pp_stuck", "p2p_size", "pp_clean", "pp_cycle", "pp_batch", "pp_missing"]


def pg_of(rank, kind):
    if kind == "0":
        return "0"
    return "1" if rank < 2 else "2"


class Rank:
    def __init__(self, r, version, pgs=PGS):
        self.r = r
        self.version = version
        self.pgs = pgs
        self.entries = []
        self.record = 0
        self.seq = {g: 0 for g in pgs}
        self.p2p_seq = {g: 0 for g in pgs}
        self.evicted = 0          # entries the ring buffer lost (the first ones)
        self.dump_true = None

    def p2p(self, pg, kind, peer, created, started, completed, numel=4096, dtype="Float", batched=False):
        """A send to / recv from global rank peer in group pg. p2p_seq_id
        counts this rank's point-to-point operations in the group (every
        peer, both directions); collective_seq_id stays the group's last
        collective number; batched: in the batch of the operation before
        (batch_isend_irecv: one p2p_seq_id for all of it)."""
        ranks = sorted(self.pgs[pg]["ranks"])
        me, other = ranks.index(self.r), ranks.index(peer)
        e = self.add(pg, "send %d->%d" % (me, other) if kind == "send" else "recv %d<-%d" % (me, other),
                     created, started, completed, numel=numel, dtype=dtype, p2p=True, batched=batched)
        return e

    def add(self, pg, name, created, started, completed, numel=1024, dtype="Float", p2p=False, batched=False):
        if p2p and batched:
            pass
        elif p2p:
            self.p2p_seq[pg] += 1
        else:
            self.seq[pg] += 1
        e = {
            "record_id": self.record,
            "pg_id": int(pg),
            "process_group": (self.pgs[pg]["name"], self.pgs[pg]["desc"]),
            "collective_seq_id": self.seq[pg],
            "p2p_seq_id": self.p2p_seq[pg],
            "op_id": self.seq[pg] + self.p2p_seq[pg],
            "profiling_name": "nccl:" + name,
            "true_created": created, "true_started": started, "true_completed": completed,
            "duration_ms": None if completed is None else (completed - started) / 1e6,
            "state": "completed" if completed is not None else ("started" if started is not None else "scheduled"),
            "retired": completed is not None,
            "timeout_ms": TIMEOUT_MS,
            "is_p2p": p2p,
            "input_sizes": [[numel]],
            "input_dtypes": [dtype],
            "output_sizes": [[numel * (2 if name == "all_gather" else 1)]],
            "output_dtypes": [dtype],
            "frames": [{"name": "train_step", "filename": "train.py", "line": 42 + self.r}],
            "thread_id": BIG_TID if self.r == 1 else 139_900_000_000_000 + self.r,
            "thread_name": "pt_nccl_watchdg",
        }
        self.record += 1
        self.entries.append(e)
        return e


def local(r, t):
    return None if t is None else t + OFFSET[r]


def build_pp(scenario):
    """The point-to-point scenarios: (ranks, truth) in true time, the truth
    without the parts build() adds for every scenario.

    pp_chain: a 4-stage pipeline (group 3); stage 0 never sends its next
      micro-batch (it is elsewhere: its last entry is a completed
      all_reduce); stages 1-3 each wait in a recv from the stage before: the
      chain 3 -> 2 -> 1 -> 0 ends at rank 0, which is not waiting.
    pp_stuck: the same pipeline; stage 2 never sends to stage 3: it is stuck
      in an all_reduce of group 4 (dp, ranks 0 and 2) that rank 0 never
      enqueued (rank 0's last entry is its completed send): 3 -> 2 -> 0.
    p2p_size: two 2-stage pipelines (groups 5 = ranks 0, 2 and 6 = ranks 1,
      3: group ranks differ from global ones); rank 0 sends 2048 elements to
      rank 2, which receives 1024: both stuck; ranks 1 and 3 wait for them in
      the default group's all_reduce.
    pp_cycle: the 4-stage pipeline; stage 2 enters an all_gather of group 2
      (tp, ranks 2 and 3) before its send to stage 3, which waits in the
      recv and never enqueues the all_gather: 3 -> 2 -> 3, an order mismatch.
    pp_batch: the 4-stage pipeline; the last step's sends and recvs are
      batches (batch_isend_irecv: stage s sends its previous micro-batch on
      and receives the next one, one p2p_seq_id); stage 0 never sends:
      stage 1's batch waits in its recv from rank 0 (its send to stage 2 is
      matched: both ends have it open), stages 2 and 3 are in matched ops.
    pp_missing: the 4-stage pipeline hangs in the backward pass: stage 3
      never sends its gradients back and has no dump; stages 0-2 wait in
      their recv from the stage after: 0 -> 1 -> 2, then rank 3 (no dump:
      cannot decide).
    pp_clean: the 4-stage pipeline, no hang: the dump is taken while stage 2's
      send to stage 3 and stage 3's recv are both in flight; rank 0's ring
      buffer lost its first entries; p2p_seq_id differs between the two ends
      of every pair (stages 1 and 2 count their sends and recvs together)."""
    version = {"pp_chain": "2.10", "pp_stuck": "2.9", "p2p_size": "2.8", "pp_clean": "2.10",
               "pp_cycle": "2.7", "pp_batch": "2.8", "pp_missing": "2.9"}[scenario]
    ranks = [Rank(r, version, PP_PGS) for r in range(WORLD)]
    ops = {r: [] for r in range(WORLD)}

    def op(r, created, *args):
        ops[r].append((created, len(ops[r]), args))

    def link(g, src, dst, t0, done=True, numel=4096, recv_numel=None):
        # the receiver posted its recv earlier and waits in it; both run
        # once the send is there
        cr = t0 - 200_000
        comp = t0 + P2P_NS if done else None
        op(src, t0, "p2p", g, "send", dst, t0, t0, comp, numel)
        op(dst, cr, "p2p", g, "recv", src, cr, cr, comp, recv_numel or numel)

    def coll(g, members, t0, stuck=()):
        arrive = {r: t0 + r * 100_000 for r in members}
        start = max(arrive.values())
        for r in members:
            op(r, arrive[r], "coll", g, "all_reduce", arrive[r], arrive[r] if r in stuck else start,
               None if r in stuck else start + COLL_NS)

    n_iter, n_mb, step = 4, 2, 80_000_000
    t = T0
    two = scenario == "p2p_size"
    for it in range(n_iter):
        for m in range(n_mb):
            if two:
                link("5", 0, 2, t + (2 * m + 1) * HOP_NS)
                link("6", 1, 3, t + (2 * m + 1) * HOP_NS + 50_000)
            else:
                for s in range(3):
                    link("3", s, s + 1, t + (4 * m + s + 1) * HOP_NS)
        tb = t + 4 * n_mb * HOP_NS
        for m in range(n_mb):
            if two:
                link("5", 2, 0, tb + (2 * m + 1) * HOP_NS)
                link("6", 3, 1, tb + (2 * m + 1) * HOP_NS + 50_000)
            else:
                for s in (3, 2, 1):
                    link("3", s, s - 1, tb + (4 * m + (3 - s) + 1) * HOP_NS)
        ta = tb + 4 * n_mb * HOP_NS + HOP_NS
        coll("4", (0, 2), ta)
        coll("0", range(WORLD), ta + 10 * COLL_NS)
        t += step
    h = t
    truth = {"scenario": scenario, "world": WORLD, "version": version, "offsets_ns": OFFSET,
             "timeout_ms": TIMEOUT_MS, "slowdown_before": False, "no_dump_ranks": []}
    if scenario == "pp_chain":
        for s in (1, 2, 3):  # recvs posted at the iteration's start; rank 0 never sends
            op(s, h + s * 1000, "p2p", "3", "recv", s - 1, h + s * 1000, h + s * 1000, None, 4096)
    elif scenario == "pp_stuck":
        link("3", 0, 1, h + HOP_NS)
        link("3", 1, 2, h + 2 * HOP_NS)
        op(3, h + 1000, "p2p", "3", "recv", 2, h + 1000, h + 1000, None, 4096)
        c = h + 2 * HOP_NS + P2P_NS + 100_000
        op(2, c, "coll", "4", "all_reduce", c, c, None)
    elif scenario == "pp_missing":
        for s_ in (0, 1, 2):
            op(s_, h + s_ * 1000, "p2p", "3", "recv", s_ + 1, h + s_ * 1000, h + s_ * 1000, None, 4096)
    elif scenario == "pp_batch":
        for s_ in (1, 2):  # send first, then the recv, one batch
            c = h + s_ * 1000
            op(s_, c, "p2p", "3", "send", s_ + 1, c, c, None, 4096)
            op(s_, c + 1, "p2p", "3", "recv", s_ - 1, c + 1, c + 1, None, 4096, True)
        op(3, h + 3000, "p2p", "3", "recv", 2, h + 3000, h + 3000, None, 4096)
    elif scenario == "pp_cycle":
        link("3", 0, 1, h + HOP_NS)
        link("3", 1, 2, h + 2 * HOP_NS)
        op(3, h + 1000, "p2p", "3", "recv", 2, h + 1000, h + 1000, None, 4096)
        c = h + 2 * HOP_NS + P2P_NS + 100_000
        op(2, c, "coll", "2", "all_gather", c, c, None)
    elif scenario == "p2p_size":
        link("5", 0, 2, h + HOP_NS, done=False, numel=2048, recv_numel=1024)
        link("6", 1, 3, h + HOP_NS + 50_000)
        link("6", 3, 1, h + 2 * HOP_NS)
        coll("0", (1, 3), h + 3 * HOP_NS, stuck=(1, 3))
    else:  # pp_clean
        link("3", 0, 1, h + HOP_NS)
        link("3", 1, 2, h + 2 * HOP_NS)
        link("3", 2, 3, h + 3 * HOP_NS, done=False)
    for r in range(WORLD):
        for created, _, a in sorted(ops[r], key=lambda x: (x[0], x[1])):
            if a[0] == "p2p":
                ranks[r].p2p(a[1], a[2], a[3], a[4], a[5], a[6], numel=a[7], batched=len(a) > 8 and a[8])
            else:
                ranks[r].add(a[1], a[2], a[3], a[4], a[5])
    if scenario == "pp_clean":
        ranks[0].evicted = 6
    last = lambda r: ranks[r].entries[-1]
    first_open = lambda r: next(e for e in ranks[r].entries if e["true_completed"] is None)
    if scenario == "pp_chain":
        e = last(1)
        truth.update({"verdict": "never_enqueued", "group": "3", "group_desc": "pp",
                      "collective_seq_id": e["collective_seq_id"], "profiling_name": e["profiling_name"],
                      "culprit_ranks": [0],
                      "culprit_last": {"pg": "0", "profiling_name": "nccl:all_reduce",
                                       "collective_seq_id": last(0)["collective_seq_id"], "state": "completed"},
                      "p2p": {"waiter": 1, "peer": 0, "p2p_seq_id": e["p2p_seq_id"]}, "chain": [3, 2, 1, 0]})
    elif scenario == "pp_stuck":
        e = last(2)
        truth.update({"verdict": "never_enqueued", "group": "4", "group_desc": "dp",
                      "collective_seq_id": e["collective_seq_id"], "profiling_name": "nccl:all_reduce",
                      "culprit_ranks": [0],
                      "culprit_last": {"pg": "3", "profiling_name": "nccl:send 0->1",
                                       "collective_seq_id": last(0)["collective_seq_id"], "state": "completed"},
                      "p2p": None, "chain": [3, 2, 0]})
    elif scenario == "pp_missing":
        e = last(2)
        truth.update({"verdict": "no_dump", "group": "3", "group_desc": "pp",
                      "collective_seq_id": e["collective_seq_id"], "profiling_name": "nccl:recv 2<-3",
                      "culprit_ranks": [], "no_dump_ranks": [3], "missing": [3],
                      "p2p": {"waiter": 2, "peer": 3, "p2p_seq_id": e["p2p_seq_id"]}, "chain": [0, 1, 2]})
    elif scenario == "pp_batch":
        e = last(1)
        truth.update({"verdict": "never_enqueued", "group": "3", "group_desc": "pp",
                      "collective_seq_id": e["collective_seq_id"], "profiling_name": "nccl:recv 1<-0",
                      "culprit_ranks": [0],
                      "culprit_last": {"pg": "0", "profiling_name": "nccl:all_reduce",
                                       "collective_seq_id": last(0)["collective_seq_id"], "state": "completed"},
                      "p2p": {"waiter": 1, "peer": 0, "p2p_seq_id": e["p2p_seq_id"]}, "chain": [1, 0]})
    elif scenario == "pp_cycle":
        e = last(3)
        truth.update({"verdict": "order_mismatch", "group": "3", "group_desc": "pp",
                      "collective_seq_id": e["collective_seq_id"], "profiling_name": "nccl:recv 3<-2",
                      "culprit_ranks": [2, 3],
                      "p2p": {"waiter": 3, "peer": 2, "p2p_seq_id": e["p2p_seq_id"]}, "chain": [3, 2],
                      "other_group": "2", "other_profiling_name": "nccl:all_gather"})
    elif scenario == "p2p_size":
        e = first_open(0)
        truth.update({"verdict": "size_mismatch", "group": "5", "group_desc": "pp",
                      "collective_seq_id": e["collective_seq_id"], "profiling_name": "nccl:send 0->1",
                      "culprit_ranks": [0, 2],
                      "p2p": {"waiter": 0, "peer": 2, "p2p_seq_id": e["p2p_seq_id"]}, "chain": [1, 0],
                      "sizes": {"send": 2048, "recv": 1024}})
    else:
        truth.update({"verdict": "no_hang", "group": "", "group_desc": "", "collective_seq_id": 0,
                      "profiling_name": "", "culprit_ranks": [], "p2p": None, "chain": []})
    return ranks, truth


def build(scenario):
    """Returns (ranks, truth) in true time."""
    if scenario.startswith("pp_") or scenario.startswith("p2p_"):
        ranks, truth = build_pp(scenario)
        return finish(scenario, ranks, truth)
    version = {"skip": "2.10", "stuck_other": "2.7", "size_mismatch": "2.4",
               "restart": "2.3", "missing_dump": "2.8", "slow_rank": "2.9"}[scenario]
    ranks = [Rank(r, version) for r in range(WORLD)]
    n_iter = 6
    # arrival delay of each rank per iteration (ns): rank 1 slows down in slow_rank
    def delay(r, it):
        if scenario == "slow_rank" and r == 1:
            return it * 40_000_000
        return r * 100_000
    t = T0
    last_start = {}
    for it in range(n_iter):
        # tp all_gather in groups 1 and 2, then the default group's all_reduce
        arrive = [t + delay(r, it) for r in range(WORLD)]
        for r in range(WORLD):
            pg = pg_of(r, "tp")
            mates = PGS[pg]["ranks"]
            start = max(arrive[m] for m in mates)
            ranks[r].add(pg, "all_gather", arrive[r], start, start + COLL_NS)
        t2 = [a + 10 * COLL_NS for a in arrive]
        start = max(t2)
        for r in range(WORLD):
            ranks[r].add("0", "all_reduce", t2[r], start, start + COLL_NS)
        t = start + STEP_NS
        last_start = start
    # the hang
    truth = {"scenario": scenario, "world": WORLD, "version": version, "offsets_ns": OFFSET,
             "timeout_ms": TIMEOUT_MS}
    hang = t
    waits = {}
    if scenario in ("skip", "slow_rank", "missing_dump"):
        culprit = 3 if scenario != "slow_rank" else 1
        # the culprit runs one more tp all_gather (completed), then never enqueues the all_reduce
        for r in range(WORLD):
            pg = pg_of(r, "tp")
            ranks[r].add(pg, "all_gather", hang, hang + 1000, hang + 1000 + COLL_NS)
        for r in range(WORLD):
            if r == culprit:
                continue
            c = hang + 10 * COLL_NS + r * 1000
            ranks[r].add("0", "all_reduce", c, c, None)
        arrivals = [hang + 10 * COLL_NS + r * 1000 for r in range(WORLD) if r != culprit]
        dump = max(arrivals) + TIMEOUT_MS * 1_000_000
        for r in range(WORLD):
            ranks[r].dump_true = dump
        e0 = ranks[0].entries[-1]
        for r in range(WORLD):
            if r != culprit:
                waits[r] = (dump - ranks[r].entries[-1]["true_started"]) / 1e9
        truth.update({"verdict": "never_enqueued" if scenario != "missing_dump" else "no_dump",
                      "group": "0", "group_desc": "default_pg",
                      "collective_seq_id": e0["collective_seq_id"], "profiling_name": "nccl:all_reduce",
                      "culprit_ranks": [culprit] if scenario != "missing_dump" else [],
                      "no_dump_ranks": [culprit] if scenario == "missing_dump" else [],
                      "culprit_last": {"pg": pg_of(culprit, "tp"), "profiling_name": "nccl:all_gather",
                                       "collective_seq_id": ranks[culprit].entries[-1]["collective_seq_id"],
                                       "state": "completed"},
                      "slowdown_before": scenario == "slow_rank"})
    elif scenario == "stuck_other":
        # rank 3 enters tp all_gather (group 2) and waits; rank 2 went to the
        # default group's all_reduce instead: order differs between 2 and 3.
        for r in (0, 1, 2):
            c = hang + r * 1000
            ranks[r].add("0", "all_reduce", c, c, None)
        ranks[3].add("2", "all_gather", hang + 5000, hang + 5000, None)
        dump = hang + 5000 + TIMEOUT_MS * 1_000_000
        for r in range(WORLD):
            ranks[r].dump_true = dump
            waits[r] = (dump - ranks[r].entries[-1]["true_started"]) / 1e9
        truth.update({"verdict": "order_mismatch", "group": "0", "group_desc": "default_pg",
                      "collective_seq_id": ranks[0].entries[-1]["collective_seq_id"],
                      "profiling_name": "nccl:all_reduce", "culprit_ranks": [2, 3], "no_dump_ranks": [],
                      "other_group": "2", "other_profiling_name": "nccl:all_gather",
                      "other_collective_seq_id": ranks[3].entries[-1]["collective_seq_id"],
                      "slowdown_before": False})
    elif scenario == "size_mismatch":
        for r in range(WORLD):
            c = hang + r * 1000
            ranks[r].add("0", "all_reduce", c, c, None, numel=2048 if r == 1 else 1024)
        dump = hang + 3000 + TIMEOUT_MS * 1_000_000
        for r in range(WORLD):
            ranks[r].dump_true = dump
            waits[r] = (dump - ranks[r].entries[-1]["true_started"]) / 1e9
        truth.update({"verdict": "size_mismatch", "group": "0", "group_desc": "default_pg",
                      "collective_seq_id": ranks[0].entries[-1]["collective_seq_id"],
                      "profiling_name": "nccl:all_reduce", "culprit_ranks": [1], "no_dump_ranks": [],
                      "sizes": {str(r): [[2048 if r == 1 else 1024]] for r in range(WORLD)},
                      "slowdown_before": False})
    elif scenario == "restart":
        # rank 2 died and was restarted: its new process starts counting from 1
        # and issues the first iteration's collectives while the others wait in #N+1.
        old = ranks[2]
        ranks[2] = Rank(2, version)
        ranks[2].record = 0
        for r in (0, 1, 3):
            c = hang + r * 1000
            ranks[r].add("0", "all_reduce", c, c, None)
        rs = hang + 30_000_000_000
        pg = pg_of(2, "tp")
        ranks[2].add(pg, "all_gather", rs, rs, None)
        dump = hang + 3000 + TIMEOUT_MS * 1_000_000
        for r in range(WORLD):
            ranks[r].dump_true = dump
        for r in (0, 1, 3):
            waits[r] = (dump - ranks[r].entries[-1]["true_started"]) / 1e9
        truth.update({"verdict": "desync", "group": "0", "group_desc": "default_pg",
                      "collective_seq_id": ranks[0].entries[-1]["collective_seq_id"],
                      "profiling_name": "nccl:all_reduce", "culprit_ranks": [2], "no_dump_ranks": [],
                      "restarted_seq": {"0": 0, "2": 1}, "old_last_seq": old.seq["0"],
                      "slowdown_before": False})
    return finish(scenario, ranks, truth)


def finish(scenario, ranks, truth):
    """What every scenario's truth has: the dump's time, the waits, each
    rank's last completed entry."""
    # one rule for every scenario: the first watchdog fires and every rank
    # dumps; a wait is that time minus the start of the hung collective
    # (a point-to-point verdict: of each rank's first entry not completed,
    # the operation it is blocked in)
    stuck = [e["true_started"] for rk in ranks for e in rk.entries
             if e["true_started"] is not None and e["true_completed"] is None]
    dump = min(stuck) + TIMEOUT_MS * 1_000_000
    waits = {}
    for rk in ranks:
        rk.dump_true = dump
        if truth.get("p2p"):
            op = next((e for e in rk.entries if e["true_completed"] is None), None)
            if truth["verdict"] != "no_hang" and op and op["true_started"] is not None:
                waits[rk.r] = (dump - op["true_started"]) / 1e9
            continue
        for e in rk.entries:
            if (str(e["pg_id"]) == truth["group"] and e["collective_seq_id"] == truth["collective_seq_id"]
                    and e["true_started"] is not None and e["true_completed"] is None):
                waits[rk.r] = (dump - e["true_started"]) / 1e9
    truth["waits_s"] = {str(r): round(w, 9) for r, w in sorted(waits.items())}
    truth["last_completed"] = {}
    for rk in ranks:
        done = [e for e in rk.entries if e["state"] == "completed"]
        if done:
            d = done[-1]
            truth["last_completed"][str(rk.r)] = {"pg": str(d["pg_id"]), "profiling_name": d["profiling_name"],
                                                 "collective_seq_id": d["collective_seq_id"]}
    if scenario == "missing_dump":
        truth["missing"] = [3]
    truth["dump_time_local_ns"] = {str(rk.r): local(rk.r, rk.dump_true) for rk in ranks}
    return ranks, truth


def dump_obj(rk, encoding, clock=None):
    """The dump of one rank as Python objects, in the rank's own clock
    (clock: true time -> the dump's time; default: + OFFSET[r])."""
    r = rk.r
    if clock is None:
        clock = lambda t: local(r, t)
    entries = []
    for e in rk.entries[rk.evicted:]:
        d = {k: v for k, v in e.items() if not k.startswith("true_")}
        d["time_created_ns"] = clock(e["true_created"])
        started = clock(e["true_started"])
        completed = clock(e["true_completed"])
        if encoding == "json":
            d["time_discovered_started_ns"] = started or 0
            d["time_discovered_completed_ns"] = completed or 0
            d["process_group"] = list(d["process_group"])
            del d["frames"]
        else:
            d["time_discovered_started_ns"] = started
            d["time_discovered_completed_ns"] = completed
        entries.append(d)
    pg_cfg = {}
    pg_status = {}
    for pg, c in rk.pgs.items():
        if r not in c["ranks"]:
            continue
        pg_cfg[c["name"]] = {"name": c["name"], "desc": c["desc"], "ranks": str(c["ranks"])}
        mine = [e for e in rk.entries if str(e["pg_id"]) == pg]
        last = lambda st: max([e["collective_seq_id"] for e in mine if st(e)] or [-1])
        pg_status[pg] = {
            "last_enqueued_collective": last(lambda e: True),
            "last_started_collective": last(lambda e: e["state"] != "scheduled"),
            "last_completed_collective": last(lambda e: e["state"] == "completed"),
        }
    top = {"version": rk.version}
    if rk.version in ("2.3", "2.4"):
        top["nccl_version"] = "2.20.5"
    else:
        top["comm_lib_version"] = "2.21.5"
    top["pg_config"] = pg_cfg
    top["pg_status"] = pg_status
    top["entries"] = entries
    return top


# --from-traces: the dump clock of each rank minus its trace's own clock
# (ns; FROM_SHIFT[r % 4]), and how late a dump discovers a start or a
# completion (uniform in [0, FROM_LAG_NS]; PyTorch's watchdog polls).
FROM_SHIFT = [0, 1_250_000_321, -730_000_017, 0]
FROM_LAG_NS = 200_000
FROM_LATER_NS = 2_000_000_000    # the job goes on this long after the trace's window before it hangs


def from_traces(tdir, out, prefix, encodings):
    """Dumps of the job whose Kineto traces scripts/gen_traces.py wrote into
    tdir (rank-<r>.json), into out (beside them is fine): each rank's
    collectives of the trace as entries (by group and Seq; created at the
    record_param_comms start, started and completed at the kernel's start
    and end plus a discovery lag), then, FROM_LATER_NS after the trace, three
    more all_reduces of group 0 and a fourth that every rank but rank 1
    started and rank 1 never enqueued (the hang). Each rank's dump clock is
    its trace's + FROM_SHIFT[r % 4]. Rank 3's dump has lost the trace's
    entries (its ring buffer moved on): no collective in common, so it can
    only be placed on its wall clock (its shift is 0). truth.json: the shifts,
    the lag bound, and each entry's times on its trace's own clock (ns, by
    rank and record_id)."""
    import random
    traces = sorted(glob_traces(tdir))
    truth = {"shift_ns": {}, "lag_max_ns": FROM_LAG_NS, "unaligned": [], "culprit": 1, "entries": {}}
    for r, path in traces:
        with open(path) as f:
            doc = json.load(f)
        base = int(doc.get("baseTimeNanoseconds", 0))
        abs_ns = lambda ts: base + int(round(float(ts) * 1000))
        cpu = {}
        kern = []
        for e in doc["traceEvents"]:
            a = e.get("args") or {}
            if e.get("ph") != "X":
                continue
            if e.get("name") == "record_param_comms" and "External id" in a:
                cpu[a["External id"]] = abs_ns(e["ts"])
            elif e.get("cat") == "kernel" and "Seq" in a and "Process Group Name" in a:
                kern.append((abs_ns(e["ts"]), abs_ns(e["ts"]) + int(round(float(e["dur"]) * 1000)), a))
        kern.sort(key=lambda k: k[0])
        pgs = {}
        for c in (doc.get("distributedInfo") or {}).get("pg_config", []):
            pgs[c["pg_name"]] = {"name": c["pg_name"], "desc": c["pg_desc"], "ranks": c["ranks"]}
        rk = Rank(r, "2.10", pgs)
        rng = random.Random(1000 + r)
        lag = lambda: rng.randint(0, FROM_LAG_NS)
        for start, end, a in kern:
            pg = a["Process Group Name"]
            rk.seq[pg] = a["Seq"] - 1
            created = cpu.get(a.get("External id"), start)
            name = {"allreduce": "all_reduce", "allgather": "all_gather",
                    "reduce_scatter": "reduce_scatter"}.get(a.get("Collective name"), a.get("Collective name"))
            e = rk.add(pg, name, created, start + lag(), end + lag(), numel=int(a.get("In msg nelems", 1)),
                       dtype=a.get("dtype", "Float"))
        later = (kern[-1][1] if kern else 0) + FROM_LATER_NS
        for k in range(4):
            t = later + k * STEP_NS
            if k == 3 and r == 1:
                break
            done = None if k == 3 else t + COLL_NS + lag()
            rk.add("0", "all_reduce", t, t + lag(), done, numel=1 << 20)
        if r % 4 == 3:   # its ring buffer lost the trace's entries
            rk.evicted = len(kern)
            truth["unaligned"].append(r)
        shift = FROM_SHIFT[r % 4]
        truth["shift_ns"][str(r)] = shift
        truth["entries"][str(r)] = {str(e["record_id"]): [e["true_created"], e["true_started"], e["true_completed"]]
                                    for e in rk.entries[rk.evicted:]}
        for enc in encodings:
            obj = dump_obj(rk, enc, clock=lambda t, s=shift: None if t is None else t + s)
            data = json.dumps(obj).encode() if enc == "json" else pickle.dumps(obj, protocol=2 + r % 4)
            with open(os.path.join(out, enc if len(encodings) > 1 else "", "%s%d" % (prefix, r)), "wb") as f:
                f.write(data)
    with open(os.path.join(out, "fr_truth.json"), "w") as f:
        json.dump(truth, f, indent=1, sort_keys=True)
        f.write("\n")


def glob_traces(tdir):
    import re
    for fn in os.listdir(tdir):
        m = re.match(r"rank-(\d+)\.json$", fn)
        if m:
            yield int(m.group(1)), os.path.join(tdir, fn)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="gen_fr.py", description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="output directory: <out>/<scenario>/{pickle,json}/ and truth.json")
    ap.add_argument("--scenario", action="append", choices=SCENARIOS,
                    help="one scenario (repeatable); default: all")
    ap.add_argument("--prefix", default="nccl_trace_rank_", help="file name prefix (default nccl_trace_rank_)")
    ap.add_argument("--from-traces", metavar="DIR",
                    help="instead of the scenarios: dumps of the job whose traces scripts/gen_traces.py wrote "
                         "into DIR, each rank's dump clock shifted from its trace's by a known amount, "
                         "into --out (JSON; --encoding), and fr_truth.json (see from_traces)")
    ap.add_argument("--encoding", choices=["json", "pickle"], default="json",
                    help="--from-traces: the dumps' encoding (default json)")
    a = ap.parse_args(argv)
    if a.from_traces:
        os.makedirs(a.out, exist_ok=True)
        from_traces(a.from_traces, a.out, a.prefix, [a.encoding])
        return 0
    for sc in a.scenario or SCENARIOS:
        ranks, truth = build(sc)
        for enc in ("pickle", "json"):
            d = os.path.join(a.out, sc, enc)
            os.makedirs(d, exist_ok=True)
            for rk in ranks:
                if rk.r in truth.get("missing", []):
                    continue
                obj = dump_obj(rk, enc)
                path = os.path.join(d, "%s%d" % (a.prefix, rk.r))
                if enc == "json":
                    data = json.dumps(obj, indent=None).encode()
                else:
                    # protocols 2 to 5 across ranks: every opcode family the reader must know
                    data = pickle.dumps(obj, protocol=2 + rk.r % 4)
                with open(path, "wb") as f:
                    f.write(data)
        with open(os.path.join(a.out, sc, "truth.json"), "w") as f:
            json.dump(truth, f, indent=1, sort_keys=True)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
