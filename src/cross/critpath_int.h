/* The dependency graph of mt_critpath_run (include/mergetrace/critpath.h),
 * shared by its graph builder (critpath.c) and its replay, path and
 * projections (cp_replay.c, cp_walk.c, cp_run.c): internal to src/cross/ and the unit tests. */
#ifndef MT_CROSS_CRITPATH_INT_H
#define MT_CROSS_CRITPATH_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/hash.h"
#include "base/interval.h"
#include "mergetrace/critpath.h"

/* A function inlined into each of its callers, so that the arguments a
 * caller passes as constants (a replay's scenario flags, a lane count)
 * drop the tests and loops they govern (cp_run.c, cp_ideal.c). */
#define CP_INLINE static inline __attribute__((always_inline))

/* How far past an activity's start the end of its inferred stream-wait
 * predecessor may lie (ns): timestamps rounded apart (critpath.c). */
#define CP_EDGE_TOL 1000

/* The least lateness (ns) placed as a host pause (critpath.c). */
#define CP_PAUSE_MIN 10000

/* What bound the start of an activity. */
enum { CP_B_NONE = 0, CP_B_STREAM, CP_B_LAUNCH, CP_B_X };

/* One GPU activity; times aligned (reference clock). 72 bytes: the graph
 * holds one per GPU activity of the job, all of it fresh memory the kernel
 * zeroes first; what only the graph build reads (the stream) stays in the
 * rank's result (mt_an_gact_t), what is derived cheaply is not stored
 * (cp_node_T). */
typedef struct cp_node {
    int64_t s, e;
    int64_t L;            /* launch call end, INT64_MIN when not linked */
    const char *name;     /* borrowed from the rank's result; name_len bytes */
    uint32_t name_len;
    int32_t rank_i;       /* index into cp_graph_t.ranks */
    int32_t pstream;      /* previous activity on the stream, -1 */
    int32_t px;           /* inferred stream-wait predecessor, or the first explicit one; -1 */
    int32_t px2;          /* the second explicit predecessor (mt_rank_analysis_t.gdeps), -1 */
    int32_t inst;         /* instance (cp_graph_t.inst), -1 */
    int32_t rstep;        /* rank step (cp_graph_t.rs), -1 */
    int32_t job;          /* job step (cp_run.c), -1 */
    int32_t lsync;        /* the rank's latest sync ending at or before L, -1 (cp_run.c) */
    uint8_t cls;          /* mt_an_class_t */
    uint8_t bind;         /* CP_B_* */
    uint8_t absent;       /* a comm activity of an instance with fewer members than its group
                           * while ranks have no trace (mt_critpath_t.comm_absent_ns) */
    uint8_t xnamed;       /* px and px2 are the waits the trace names (gdeps), not inferred */
} cp_node_t;
_Static_assert(sizeof(cp_node_t) <= 72, "cp_node_t: 72 bytes a GPU activity");

/* A host call that blocked the rank's CPU: a synchronisation with the
 * GPU (w), or a host collective (hi: a gloo:* range, which runs on the CPU
 * and returns when the last member has arrived and the data is moved). */
typedef struct cp_sync {
    int64_t s, e;
    int64_t late;         /* host collective: its host time since the rank's sync before it (or its
                           * step's start) over the median member's, >= 0; what the straggler
                           * what-if takes away from a straggler's arrival */
    int32_t w;            /* the activity it waited for (GPU-bound when its end >= s), -1 */
    int32_t hi;           /* its host collective (cp_graph_t.hin); -1 none; -2 a host pause
                           * (critpath.c place_pauses): CPU-bound, its late taken off in the
                           * straggler what-if */
    int32_t rank_i;
    int32_t rstep;        /* rank step holding its start, -1 */
    int32_t job;          /* job step (cp_run.c), -1 */
    int32_t sb;           /* the rank's latest sync ending at or before s, -1 (cp_run.c) */
    int32_t bar;          /* the rank's latest host collective ending at or before e (itself if
                           * it is one), -1: what a launch after it still waits for when launch
                           * gaps are dropped (cp_replay.c no_launch_gap) */
    int32_t jnext;        /* the job step whose rank step starts after this sync, the last of the
                           * step before, when the host waited for its GPU's queue here and started
                           * the step within CP_NEXT_GAP: that start follows it (cp_replay.c edge_fill),
                           * -1 */
} cp_sync_t;
_Static_assert(sizeof(cp_sync_t) <= 56, "cp_sync_t: jnext fills the padding");

/* How long after a sync that ends a rank step (the host waited for its
 * GPU's queue) the rank's next step may start for that start to follow the
 * sync (ns): the host's own work between the two (cp_sync_t.jnext). A
 * longer gap is taken as the host waiting for something else (a data
 * loader), and the start stays where it was measured. */
#define CP_NEXT_GAP 100000

/* How far from its measured end the unchanged run may replay such a sync
 * (ns) for its job step to take the edge at all (cp_replay.c cp_edge_base): a
 * larger error is the model's, not a move to carry; cp_graph_t.cd0 holds
 * CP_EDGE_OFF for the syncs of a step without it. */
#define CP_NEXT_ERR 20000
#define CP_EDGE_OFF INT64_MIN

typedef struct cp_inst {
    int64_t maxstart;     /* last arrival */
    int64_t transfer;     /* shortest participant duration */
    int32_t last;         /* node of the last arrival */
    uint32_t n;           /* participants found: cp_graph_t.imem[m0 .. m0 + n) */
    bool absent;          /* host collective (hin) short of its group while ranks have no
                           * trace (mt_critpath_t.comm_absent_ns) */
    size_t m0;
} cp_inst_t;

typedef struct cp_rank {
    const mt_rank_analysis_t *an;
    const mt_clock_t *clk; /* NULL: own clock */
    int32_t rank;
    size_t node0, n_nodes, sync0, n_syncs, rs0;
    int64_t lambda;       /* smallest start - launch end: which edge binds (the path) */
    int64_t lat;          /* the replay's launch latency: median start - launch end
                           * of its launch-bound activities (lambda when none) */
    int64_t sync_lag;     /* the replay's sync return lag: median sync end - end
                           * of the activity waited for, over its GPU-bound syncs */
    bool by_start;        /* its nodes come by start (the replay order's merge) */
    bool end_late;        /* an instance's last arrival after a member's end: by_end
                           * is not the order of the end events */
    bool waits_named;     /* its trace names stream waits (gdeps): px of its nodes with xnamed is no
                           * inference */
} cp_rank_t;

/* What one replay reads of a node, packed into one 64-byte record and
 * stored in replay order (the order of the nodes' start events): a replay
 * visits the nodes in time order across ranks, so reading cp_node_t (72
 * bytes, rank by rank) missed the cache at nearly every node; the records
 * are read as a stream. What every scenario computes the same way is
 * worked out once (cp_run.c hot_fill, called by cp_order_build as the start
 * events come, or by cp_hot_build after a topological order; the job
 * steps known by then). */
typedef struct cp_hot {
    int64_t s;            /* measured start */
    int64_t dt;           /* measured duration e - s; for an instance member cp_node_t.T */
    int64_t llat;         /* launch end + the rank's launch latency (CP_H_LAUNCH) */
    int32_t pred[3];      /* pstream, px, px2; -1 */
    int32_t job;          /* job step, -1 */
    int32_t lsync;        /* cp_node_t.lsync */
    int32_t inst;         /* instance, -1 */
    int32_t id;           /* the node */
    int32_t rstep;        /* rank step, -1 */
    int32_t rank_i;       /* its rank (cp_scen_t.late) */
    uint8_t flags;        /* bit q: pred[q] is in the same job step; CP_H_LAUNCH */
    uint8_t sflags;       /* where lsync (bits 0-1) and its rank step's sb_start (bits 2-3)
                           * are against its job step: CP_S_SAME, CP_S_NEXT (cp_event_int.h
                           * shift_at); the sync's own record not read per node and lane */
} cp_hot_t;
_Static_assert(sizeof(cp_hot_t) == 64, "cp_hot_t: one cache line a node");

/* CP_H_PXINF: the node is a communication kernel and pred[1] a stream
 * wait inferred from the times (no event of its trace names its waits:
 * cp_node_t.px without xnamed) */
/* CP_H_PREV << q: pred[q] is of the rank's step before, and the node's
 * rank step starts after that step's last sync (cp_sync_t.jnext): it
 * moves with the sync's shift there (cp_rp_t.cd) */
enum { CP_H_LAUNCH = 8, CP_H_PXINF = 16, CP_H_PREV = 32 };

/* cp_hot_t.sflags, per sync (shifted by 2 for sb_start): CP_S_SAME the
 * sync is in the node's job step (cp_sync_t.job), CP_S_NEXT it is the
 * step before's last sync that the node's step starts after (cp_sync_t.jnext,
 * the node in a step) */
enum { CP_S_SAME = 1, CP_S_NEXT = 2 };

/* The mt_cp_kind_t of a node's time on a path: its class (mt_an_class_t)
 * as a path kind (the walk in cp_walk.c and the strips in cp_strip.c). */
static inline int cp_node_kind(const cp_node_t *n)
{
    return n->cls == MT_AN_COMPUTE ? MT_CP_COMPUTE : n->cls == MT_AN_COMM ? MT_CP_COMM : MT_CP_MEMORY;
}

/* The names' hash, memoised by name pointer (cp_run.c's top names,
 * cp_ideal.c's typical values): a rank's nodes borrow their names from its
 * string pool, so a name repeats as the same pointer (the kernel names are
 * long: the hashes cost as much as the sort). A memo of CP_NAME_MEMO
 * entries, zeroed before use. */
typedef struct cp_name_memo {
    const char *p;
    uint32_t len;
    uint64_t h;
} cp_name_memo_t;

enum { CP_NAME_MEMO = 1024 };

/* The names' hash seed: the graph's (cp_name_hash) and the reductions'
 * (cp_dist.c) hashes of a name must be the same. */
#define CP_NAME_SEED 0x9e3779b97f4a7c15ull

static inline uint64_t cp_name_hash(cp_name_memo_t *memo, const cp_node_t *n)
{
    cp_name_memo_t *m = &memo[((uintptr_t)n->name >> 3) & (CP_NAME_MEMO - 1)];
    if (m->p != n->name || m->len != n->name_len || !n->name) {
        m->p = n->name;
        m->len = n->name_len;
        m->h = mt_hash64(n->name, n->name_len, CP_NAME_SEED);
    }
    return m->h;
}

/* The clock of rank r: clocks[i] is ranks[i]'s (n of them); NULL when
 * clocks is NULL or r is not listed (own clock). The graph build
 * (critpath.c) and the reductions (cp_dist.c) read a rank's the same way. */
static inline const mt_clock_t *cp_clock_of(const mt_clock_t *clocks, const int32_t *ranks, size_t n, int32_t r)
{
    for (size_t i = 0; clocks && i < n; i++)
        if (ranks[i] == r)
            return &clocks[i];
    return NULL;
}

/* The rank-step whose range holds raw time t (mt_iv_find_hint; *hint
 * SIZE_MAX when a's steps are not sorted by start): a rank's activities
 * and syncs come nearly in time order, so the search (6 M instructions on
 * a 256-rank job) is mostly skipped. The graph's (critpath.c) and the
 * reductions' (cp_dist.c) rank step of an activity. */
static inline long cp_rank_step_of(const mt_rank_analysis_t *a, int64_t t, size_t *hint)
{
    /* fast path, in line: t in the step of the previous answer (the
     * search's first test, without the call and its generic field reads:
     * 47 instructions a call on a 256-rank job) */
    size_t h = *hint;
    if (h != SIZE_MAX && h > 0 && h <= a->n_steps) {
        const mt_an_step_t *x = &a->steps[h - 1];
        if (x->cpu_start_ns <= t && x->cpu_end_ns >= t && (h == a->n_steps || a->steps[h].cpu_start_ns > t))
            return (long)(h - 1);
    }
    return mt_iv_find_hint(a->steps, a->n_steps, sizeof *a->steps, offsetof(mt_an_step_t, cpu_start_ns),
                           offsetof(mt_an_step_t, cpu_end_ns), t, hint);
}

/* cp_rank_step_of's first hint for a: 0, or SIZE_MAX when its steps are
 * not sorted by start (the hint would not be the binary search's answer). */
static inline size_t cp_step_hint0(const mt_rank_analysis_t *a)
{
    for (size_t k = 1; k < a->n_steps; k++)
        if (a->steps[k - 1].cpu_start_ns > a->steps[k].cpu_start_ns)
            return SIZE_MAX;
    return 0;
}

/* One rank step (aligned). */
typedef struct cp_rs {
    int32_t rank_i;
    int32_t last;         /* its last-ending activity, -1 */
    int64_t step, start, cpu_end, end;
    int32_t job;          /* index of the job step */
    int32_t sb_start;     /* the rank's latest sync ending at or before start, -1 (cp_run.c) */
    int32_t sb_end;       /* ... at or before cpu_end, -1 (cp_run.c) */
    const mt_an_step_t *src;
} cp_rs_t;

typedef struct cp_graph {
    cp_node_t *nodes;
    size_t n_nodes;
    int32_t *by_end;      /* per rank (from node0), node ids by end; the graph
                           * build's, then build_order's (cp_run.c: by its end
                           * key); freed after it */
    cp_rank_t *ranks;     /* by rank */
    size_t n_ranks;
    cp_sync_t *syncs;     /* per rank (from sync0), by end */
    size_t n_syncs;
    cp_inst_t *inst;
    size_t n_inst;
    cp_inst_t *hin;       /* host collectives: last and hmem are syncs, not nodes */
    size_t n_hin;
    int32_t *hmem;        /* their member syncs */
    size_t n_hmem;
    int32_t *imem;        /* the instances' member nodes */
    size_t n_imem;
    cp_rs_t *rs;          /* rank steps, rank by rank, each by start */
    size_t n_rs;
    int32_t *js;          /* rank steps ordered by (step, rank) (cp_run.c) */
    int64_t *ev;          /* replay order (cp_run.c); after cp_hot_build a node
                           * event holds the node's index in hot, not its id */
    cp_hot_t *hot;        /* the nodes in replay order: what a replay reads (cp_run.c) */
    int32_t *pos;         /* per node: its index in hot */
    int64_t *e0;          /* per node: its measured end */
    uint32_t *annot;      /* per node: its activity's annotation (mt_an_gact_t.annot), the
                           * one field of the ranks' activities read after the build (the root
                           * causes); NULL when no rank has annotations (all 0) */
    size_t n_ev;
    size_t n_jnext;       /* syncs with jnext (cp_run.c): the replays take two passes */
    int64_t *cd0;         /* per sync with jnext: how far the unchanged run's first pass moved it
                           * against the others of its job step, or CP_EDGE_OFF (cp_run.c
                           * edge_base); NULL */
    uint64_t waits_inferred, waits_explicit, pauses; /* what the build inferred (mt_critpath_t) */
    uint64_t waits_unresolved; /* the ranks' stream-wait records left to the inference (mt_critpath_t) */
    int64_t pause_ns;
    bool explicit_deps;   /* some rank gave its dependencies (gdeps): replay in topological order */
    bool topo_cycle;      /* ... but they hold a cycle: replayed in time order */
    bool order_cycle;     /* the time order breaks an edge and the edges hold a cycle:
                           * replayed in time order (cp_run.c order_fix) */
    const mt_cp_dist_t *dist; /* the whole-job statistics reduced over the processes (cp_dist.h;
                           * mt_cp_request_t.reduce): the straggler factors and the ideal's typical
                           * values are read from it; NULL: worked out from the graph */
} cp_graph_t;

/* How many of rank R's syncs (g->syncs from R->sync0, by end) end at or
 * before t: the index of the first that ends after it. */
static inline size_t cp_syncs_ended(const cp_graph_t *g, const cp_rank_t *R, int64_t t)
{
    size_t lo = 0, hi = R->n_syncs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (g->syncs[R->sync0 + mid].e <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Whether job step j has a period: used, and its predecessor is the step
 * before it (the replays' and the report's periods of a pipeline). */
static inline bool cp_step_has_period(const mt_critpath_t *c, size_t j)
{
    return j > 0 && c->steps[j].used && c->steps[j].step == c->steps[j - 1].step + 1;
}

/* A matched comm activity's transfer: its end - its instance's last
 * arrival (n->inst >= 0). */
static inline int64_t cp_node_T(const cp_graph_t *g, const cp_node_t *n)
{
    return n->e - g->inst[n->inst].maxstart;
}

/* A replay scenario (cp_run.c). */
typedef struct cp_scen {
    const double *factor; /* per node duration factor; NULL: 1 */
    int drop_launch;
    int comm_transfer;
    int carry;            /* one replay of the whole run: shifts carry over from step to step */
    int pin_inferred;     /* an activity bound by an inferred stream wait (CP_H_PXINF) keeps its
                           * predecessor's measured end there: the other binding of an edge no
                           * event names (the what-ifs' ranges, docs/whatif.md) */
    const uint8_t *late;  /* per rank: bit 1, the straggler what-if's ranks: their host pauses
                           * and host collective arrivals without their lateness (cp_sync_t.late);
                           * bit 2, those with a slow host: no launch gaps of their own (what-if
                           * "launch" on that rank alone; the ideal what-if's too, cp_ideal_run);
                           * NULL: none */
} cp_scen_t;

/* Replayed times of one scenario (cp_run.c). */
typedef struct cp_rp {
    int64_t *s, *e, *sd, *ims; /* replayed starts, ends, sync shifts, instance last arrivals */
    int64_t *hims;        /* host collectives' last replayed arrivals */
    uint8_t *sdone, *idone, *hidone;
    int carry;            /* the scenario's carry */
    int64_t *jend;        /* replayed job step ends */
    int64_t *hc;          /* per rank step: host time removed since its last sync (<= 0; what-if launch) */
    int64_t *rend;        /* per rank step: its replayed end (cp_replay's scratch) */
    int64_t *cd;          /* per sync with jnext: the shift its next rank step starts with (cp_run.c
                           * edge_fill, from a first pass) */
    int cd_on;            /* the second pass: the edge from a step's last sync to the next step taken */
    const int64_t *cd0;   /* the unchanged run's offsets the edge is taken against (cp_run.c
                           * edge_fill); NULL: cp_graph_t.cd0 */
} cp_rp_t;

/* Replay g under sc; times[j] gets the time of job step j of c (c's steps
 * and g's job fields set by mt_critpath_run). */
void cp_replay(const cp_graph_t *g, const cp_scen_t *sc, cp_rp_t *r, const mt_critpath_t *c, int64_t *times);

/* One segment of a step's critical path (cp_run.c walk). */
typedef struct cp_pseg {
    int64_t a, b;
    int32_t rank_i;
    int32_t node;         /* the activity, -1 for host and idle */
    int kind;             /* mt_cp_kind_t */
} cp_pseg_t;

/* The critical path of job step j of c (g's job fields and js set by
 * mt_critpath_run) in time order: *out (malloc, the caller frees) and *n.
 * 0, or -1 out of memory. */
int cp_path_of(const cp_graph_t *g, mt_critpath_t *c, size_t j, cp_pseg_t **out, size_t *n);

/* The steps that get a strip of report.html (critpath.h mt_cp_strip_t):
 * the median and the slowest used step of c (c's steps and statistics
 * set), into pick[0..return) with their names in why[]. */
size_t cp_strips_pick(const mt_critpath_t *c, size_t pick[2], const char *why[2]);

/* The strip of step j, whose critical path (cp_path_of: the caller walks
 * it, so that this file needs nothing of the replay's) is ps[0..np), as
 * c's next strip. MT_OK or MT_ERR_NOMEM. */
mt_status_t cp_strip_add(const cp_graph_t *g, mt_critpath_t *c, size_t j, const char *why, const cp_pseg_t *ps,
                         size_t np);

/* The ideal what-if (critpath.h mt_cp_ideal_t) into c->ideal; late
 * (per rank_i, cp_scen_t.late, borrowed; NULL: none): bit 2 marks the
 * stragglers whose host is slow, whose launch gaps the ideal drops where
 * it makes them ideal. MT_OK or MT_ERR_NOMEM. */
mt_status_t cp_ideal_run(const cp_graph_t *g, const mt_cp_request_t *rq, const uint8_t *late, mt_critpath_t *c);

/* A node's end event's time: its end, or its instance's last arrival
 * when that is later. */
static inline int64_t cp_end_key(const cp_graph_t *g, const cp_node_t *x)
{
    int64_t t = x->e;
    if (x->inst >= 0 && g->inst[x->inst].maxstart > t)
        t = g->inst[x->inst].maxstart;
    return t;
}

/* What cp_rank_order orders by: the end, cp_end_key, the start. */
enum { CP_BY_END, CP_BY_END_KEY, CP_BY_START };

/* Rank R's nodes ordered by (t, id), t as `by` says, into ord[R->node0
 * ..) (the stable radix sort; the fallback where a rank's own order does
 * not give it: critpath.c, cp_run.c cp_order_build). key/val: scratch of
 * R->n_nodes. 0, or -1 out of memory. */
int cp_rank_order(const cp_graph_t *g, const cp_rank_t *R, int by, int32_t *ord, uint64_t *key, uint32_t *val);

/* The medians over the job's ranks that the host pauses and the host
 * collective members' lateness take (cp_pauses_place), as a process's
 * graph gets them from the job (cp_part_build). All borrowed. */
typedef struct cp_pause_med {
    const int64_t *hin;   /* per host collective of g: its members' median gap (cp_host_gap) */
    const int64_t *inst;  /* per instance of g: its members' median start */
    const int64_t *steps; /* the job's step numbers, ascending, and per number the median over
                           * the job's rank steps of it of their first launch's time after their
                           * start, of those whose first launch is after it (INT64_MIN: fewer
                           * than 2 such) */
    const int64_t *step_gap;
    size_t n_steps;
} cp_pause_med_t;

/* Host collective member k of rank R's syncs (g->syncs from R->sync0, by
 * end, no pause yet): its time since the members were last together
 * (the rank's latest host collective ending by its start, or its rank
 * step's start, whichever is later), that point into *anchor. */
int64_t cp_host_gap(const cp_graph_t *g, const cp_rank_t *R, size_t k, int64_t *anchor);

/* g's host collective members' lateness (cp_sync_t.late) and its host
 * pauses (cp_sync_t.hi -2, each rank's syncs laid out anew by end: g's
 * hmem and hin[].last follow), the medians md's or, NULL, those of g's
 * own members and rank steps (the whole job's graph). g's instances,
 * host collectives, start bindings and rank steps set; called once. 0,
 * or -1 out of memory. */
int cp_pauses_place(cp_graph_t *g, const cp_pause_med_t *md);

/* Build the graph from the ranks' results (see mt_critpath_run for the
 * arguments; borrowed: the analyses but their GPU activities (gacts,
 * gdeps, gstep), and their clocks and ranks, must outlive g; rows and m
 * are read only until the build calls rows_done(ctx) (when not NULL),
 * before it allocates the graph's tables). mark_absent: set cp_node_t.absent
 * (the job has ranks without a trace). pauses: the host collective
 * members' lateness and the host pauses (cp_pauses_place), which take
 * medians over the job's ranks; false for a process's own ranks, which
 * get them from the job (cp_part_build).
 * MT_OK, MT_ERR_NOMEM or
 * MT_ERR_LIMIT (2^31 events in the replay order); g is empty on error. */
mt_status_t cp_graph_build(const mt_rank_analysis_t *const *an, size_t n_an, const mt_clock_t *clocks,
                           const int32_t *ranks, size_t n_ranks, const mt_crow_t *rows, size_t n_rows,
                           const mt_match_t *m, bool mark_absent, bool pauses, void (*rows_done)(void *ctx),
                           void *ctx, cp_graph_t *g);
void cp_graph_free(cp_graph_t *g);

#endif
