/* What the three files of mt_critpath_run share (internal to src/cross/):
 * cp_replay.c replays the graph under a scenario (its per-event rules in
 * cp_event_int.h, shared with cp_part.c's replay of one process's ranks),
 * cp_walk.c walks the critical path of a step and the root causes of
 * waiting, cp_run.c puts the graph in replay order and drives them
 * (mt_critpath_run). The dependencies go one way: cp_run.c calls the
 * other two, cp_walk.c neither. */
#ifndef MT_CROSS_CP_RUN_INT_H
#define MT_CROSS_CP_RUN_INT_H

#include "cross/critpath_int.h"

typedef cp_scen_t scen_t;
typedef cp_rp_t rp_t;

/* ---- a rank's sync at a time (the replay, the walks and the driver) ---- */

/* The latest sync of rank R ending at or before aligned time t: its
 * index in g->syncs, or -1. */
static inline long sync_before(const cp_graph_t *g, const cp_rank_t *R, int64_t t)
{
    size_t lo = cp_syncs_ended(g, R, t);
    return lo ? (long)(R->sync0 + lo - 1) : -1;
}

/* sync_before(g, R, t) given a guess h (any index, -1 included): h when
 * it is the answer, else the search. Fast path: the nodes of a rank come
 * by start and most launches between two syncs share their answer, so the
 * previous node's answer nearly always holds (the searches were 3 % of
 * mt_critpath_run on an 8-rank job); inlined, so that the test costs no
 * call (the calls were 34 instructions each on 8 x 157 MB). */
CP_INLINE long sync_near(const cp_graph_t *g, const cp_rank_t *R, int64_t t, long h)
{
    long a = (long)R->sync0, b = (long)(R->sync0 + R->n_syncs);
    if (h == -1 ? a == b || g->syncs[a].e > t
                : h >= a && h < b && g->syncs[h].e <= t && (h + 1 == b || g->syncs[h + 1].e > t))
        return h;
    return sync_before(g, R, t);
}

/* The sync whose shift moves host time t of rank R, given q, the latest
 * sync ending by t: a host collective of R (other than self) that covers
 * t after its last arrival when there is one, else q. The host work a
 * gloo collective does once every member has arrived (copying the result
 * back to the GPU: launches inside its range) waits for that arrival,
 * not for the sync before the collective, so it moves with the
 * collective (its shift is its last arrival's, as its end's). The
 * syncs come by end: the one covering t ends after q, within a few. */
static inline long host_cover(const cp_graph_t *g, const cp_rank_t *R, int64_t t, long q, long self)
{
    size_t a = q >= 0 ? (size_t)q + 1 : R->sync0, b = R->sync0 + R->n_syncs;
    for (size_t k = a; k < b && k < a + 8; k++) {
        const cp_sync_t *y = &g->syncs[k];
        if ((long)k != self && y->hi >= 0 && y->s <= t && y->e > t && g->hin[y->hi].maxstart <= t)
            return (long)k;
    }
    return q;
}

/* ---- the graph's job fields and replay order (cp_run.c) ---- */

/* g's job fields from its rank steps' (cp_rs_t.job set: the job steps
 * numbered): the rank steps' sb_start and sb_end, the nodes' job and
 * lsync, the syncs' job, bar, sb and jnext (and g->n_jnext). Each rank's
 * own: a process's graph of its ranks gets them as the whole job's has
 * them (cp_part.c). */
void cp_job_fields(cp_graph_t *g);

/* g's replay order (g->ev) and hot records (g->hot, pos, e0): node ends
 * (key cp_end_key), sync ends, node starts, by key, at equal keys in that
 * type order, each type by id, made topological over the graph's edges
 * (order_fix; g->order_cycle when they hold a cycle), or, topo (the job
 * has explicit dependencies and no sync: mt_critpath_run), a topological
 * order (g->topo_cycle when it fails: time order). Job fields must be set
 * (cp_job_fields). 0, or -1 out of memory. */
int cp_order_build(cp_graph_t *g, bool topo);

/* A test's look at each graph as cp_graph_build leaves it, before
 * mt_critpath_run's caller may drop the ranks' activities
 * (mt_cp_request_t.built; tests/unit/cp_part_check.c keeps a copy to
 * build a process's graph from). NULL in the program. Not thread-safe. */
extern void (*cp_built_probe)(const cp_graph_t *g);

/* ---- the replay (cp_replay.c) ---- */

/* Free r's arrays (not r). */
void cp_rp_free(rp_t *r);

/* Allocate r's arrays for g: 0, or -1 out of memory (cp_rp_free frees
 * what was allocated). */
int cp_rp_alloc(const cp_graph_t *g, rp_t *r);

/* cp_rp_alloc in two parts: every array but the per-node ones (s, e,
 * sdone), which cp_replay3 needs only for cp_replay_probe (its lanes
 * live in rows of its own meanwhile); and those (each one not allocated
 * yet). 0, or -1 out of memory (cp_rp_free frees what was allocated). */
int cp_rp_alloc_lean(const cp_graph_t *g, rp_t *r);
int cp_rp_alloc_nodes(const cp_graph_t *g, rp_t *r);

/* r set for a replay of g under sc (a pass: cd and cd0 left as they
 * are, cd_on cleared). */
void cp_rp_init(const cp_graph_t *g, const scen_t *sc, rp_t *r);

/* A test's look at every sweep (tests/unit/cp_part_check.c): when set,
 * cp_replay and cp_replay3 call it after each sweep of the events, before
 * the step times are worked out, with the lanes' scenarios as swept
 * (sc[0..n)), their arrays as the sweep left them (r[0..n)) and which
 * lanes it replayed (on). NULL in the program. Not thread-safe: set it
 * before any replay. */
extern void (*cp_replay_probe)(const cp_graph_t *g, const scen_t *sc, const rp_t *r, const bool *on, int n);

/* g->cd0 from the unchanged run r, for the replays after it; nothing
 * without an edge. 0, or -1 out of memory. */
int cp_edge_base(cp_graph_t *g, const mt_critpath_t *c, const rp_t *r);

/* The measured run and up to three what-ifs replayed side by side in one
 * sweep (see cp_replay.c): r[0..3] and times[0..3] as cp_replay's r and
 * times, of r the shifts and step ends only (sd, hc, rend, jend, cd; the
 * starts and ends too when cp_replay_probe is set). 0, or -1 out of
 * memory. */
int cp_replay3(const cp_graph_t *g, rp_t *r, bool comm, bool launch, const double *f, const uint8_t *late, bool pin,
                const mt_critpath_t *c, int64_t *const *times);

/* ---- the walks and root causes (cp_walk.c) ---- */

/* The walk back along the binding edges: the critical path of a step
 * (its statistics, or its segments recorded), and the root causes'
 * walks (their segments go to the root causes' sinks instead). */
typedef struct walk {
    const cp_graph_t *g;
    mt_critpath_t *c;
    mt_cp_step_t *s;
    int64_t t0, cur;
    int64_t *node_ns;     /* per node: time on the paths of the used steps */
    const int32_t *rs_at; /* per rank: its rank step's index in c->rank_steps within w->s, -1 */
    int64_t absent_ns;    /* WK_PATH: comm of instances short of their group (cp_node_t.absent) */
    void *ctx;            /* the sink's state (WK_REC, WK_Q, WK_P) */
    bool stop;
} walk_t;

/* Walk the critical path of job step j from the rank step that ends it,
 * recorded (rec) or counted; false when that rank step is not found. */
bool cp_walk_step(walk_t *w, size_t j, bool rec);

/* qsort comparator of mt_cp_name_t: most ns first, then rank, kind, name. */
int cp_name_ns_cmp(const void *pa, const void *pb);

/* The root causes of waiting into c (critpath.h "root causes"): MT_OK,
 * or MT_ERR_NOMEM. */
mt_status_t cp_root_causes(const cp_graph_t *g, mt_critpath_t *c);

#endif
