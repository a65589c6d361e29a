/* mt_critpath_run: job steps from the rank steps, the replay of the graph
 * (critpath.c builds it) under a scenario, the critical path of each step,
 * the statistics, what-if projections and root causes of waiting
 * (include/mergetrace/critpath.h). */
#define _POSIX_C_SOURCE 200809L /* strndup */
#include "base/bigmem.h"
#include "base/hash.h"
#include "base/sort.h"
#include "base/stats.h"
#include "cross/cp_dist.h"
#include "cross/critpath_int.h"

#include <assert.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- replay ---- */

typedef cp_scen_t scen_t;
typedef cp_rp_t rp_t;

static void rp_free(rp_t *r)
{
    free(r->s);
    free(r->e);
    free(r->sd);
    free(r->ims);
    free(r->hims);
    free(r->sdone);
    free(r->idone);
    free(r->hidone);
    free(r->jend);
    free(r->hc);
    free(r->rend);
    free(r->cd);
}

static int rp_alloc(const cp_graph_t *g, rp_t *r)
{
    size_t n = g->n_nodes ? g->n_nodes : 1;
    r->s = mt_big_malloc(n * sizeof *r->s);
    r->e = mt_big_malloc(n * sizeof *r->e);
    r->sdone = mt_big_malloc(n);
    r->sd = malloc((g->n_syncs ? g->n_syncs : 1) * sizeof *r->sd);
    r->ims = malloc((g->n_inst ? g->n_inst : 1) * sizeof *r->ims);
    r->idone = malloc(g->n_inst ? g->n_inst : 1);
    r->hims = malloc((g->n_hin ? g->n_hin : 1) * sizeof *r->hims);
    r->hidone = malloc(g->n_hin ? g->n_hin : 1);
    r->jend = malloc((g->n_rs ? g->n_rs : 1) * sizeof *r->jend);
    r->hc = malloc((g->n_rs ? g->n_rs : 1) * sizeof *r->hc);
    r->rend = malloc((g->n_rs ? g->n_rs : 1) * sizeof *r->rend);
    r->cd = malloc((g->n_syncs ? g->n_syncs : 1) * sizeof *r->cd);
    return r->s && r->e && r->sdone && r->sd && r->ims && r->idone && r->hims && r->hidone && r->jend && r->hc &&
                   r->rend && r->cd
               ? 0
               : -1;
}

/* The latest sync of rank R ending at or before aligned time t: its
 * index in g->syncs, or -1. */
static long sync_before(const cp_graph_t *g, const cp_rank_t *R, int64_t t)
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
static long host_cover(const cp_graph_t *g, const cp_rank_t *R, int64_t t, long q, long self)
{
    size_t a = q >= 0 ? (size_t)q + 1 : R->sync0, b = R->sync0 + R->n_syncs;
    for (size_t k = a; k < b && k < a + 8; k++) {
        const cp_sync_t *y = &g->syncs[k];
        if ((long)k != self && y->hi >= 0 && y->s <= t && y->e > t && g->hin[y->hi].maxstart <= t)
            return (long)k;
    }
    return q;
}

/* The host shift of sync q (-1: none) as seen from job step job: its
 * shift when it belongs to the same step (each step is replayed from its
 * measured start: shifts do not carry over from one step to the next),
 * the edge's shift (r->cd, second pass) when it is the step before's last
 * sync that the step's start follows (cp_sync_t.jnext), or its shift in
 * any step when the run carries them (a pipeline, what-if "stage").
 * Inlined: the edge's test made it too large for the compiler to inline,
 * and its calls were 20 M instructions on the 256-rank job. */
CP_INLINE int64_t shift_of(const cp_graph_t *g, const rp_t *r, long q, int32_t job)
{
    if (q < 0)
        return 0;
    if (r->carry || g->syncs[q].job == job)
        return r->sd[q];
    /* (job -1, outside every step: jnext -1 names no edge, and r->cd of
     * a sync without one is never written) */
    return r->cd_on && job >= 0 && g->syncs[q].jnext == job ? r->cd[q] : 0;
}

/* The replayed end of node p as seen from job step job: a node of
 * another step keeps its measured end. */
static int64_t end_in(const cp_graph_t *g, const rp_t *r, int32_t p, int32_t job)
{
    return r->carry || g->nodes[p].job == job ? r->e[p] : g->nodes[p].e;
}

/* The replay's per-event functions are inlined into sweep(), which
 * cp_replay instantiates for the plain scenario (the measured replay) with
 * the scenario's flags as constants, so the compiler drops the tests of
 * the others from the loop (fast path: the replays are most of
 * mt_critpath_run). The ideal what-if's no-delay scenarios have their own
 * replay of many scenarios at once (cp_ideal.c). */

/* Predecessor q (0 pstream, 1 px, 2 px2) of the node of h: its replayed
 * end; a node of another step keeps its measured end (as end_in). */
CP_INLINE int64_t pred_at(const cp_graph_t *g, const scen_t *sc, const rp_t *r, const cp_hot_t *h, int q)
{
    int32_t p = h->pred[q];
    int same = h->flags >> q & 1;
    if (sc->carry || same)
        return r->e[p];
    /* of the step before, on a rank step whose start follows that step's
     * last sync: moved as the sync is (cp_rp_t.cd) */
    if (r->cd_on && (h->flags & (CP_H_PREV << q)))
        return g->e0[p] + r->cd[g->rs[h->rstep].sb_start];
    return g->e0[p];
}

/* What-if launch (start_of): the start best of the node of h raised to
 * its rank step's replayed start, and the host time its launch would
 * still have cost taken from its rank step (r->hc). From the record alone
 * (its launch end + the rank's latency is llat): reading cp_node_t here
 * was a cache miss at each node. */
CP_INLINE int64_t no_launch_gap(const cp_graph_t *g, rp_t *r, const cp_hot_t *h, int64_t best)
{
    if ((h->flags & CP_H_LAUNCH) && h->rstep >= 0) {
        /* no launch gaps (critpath.h "what-if launch"): nothing of a
         * step starts before its rank's step does, and the host catches
         * up with the GPU: the time its launch would still have made the
         * activity wait is host time removed from the rank's step, so its
         * later syncs and its step end move earlier by it too */
        const cp_rs_t *x = &g->rs[h->rstep];
        int64_t floor = x->start + shift_of(g, r, x->sb_start, h->job);
        /* ... nor before the host collective its launch came after:
         * waiting for other ranks (gloo) is no launch gap (issue 38: on
         * gloo4 the what-if took the collectives away, 22.55 ms ->
         * 832.8 us); a host pause (a late host) is, as in the measured
         * host time it was inferred from */
        int32_t b = h->lsync >= 0 ? g->syncs[h->lsync].bar : -1;
        int64_t after = b >= 0 ? g->syncs[b].e + shift_of(g, r, b, h->job) : INT64_MIN;
        if (after > floor)
            floor = after;
        if (best < floor)
            best = floor;
        int64_t v = h->llat + shift_of(g, r, h->lsync, h->job) + r->hc[h->rstep];
        if (v > best)
            r->hc[h->rstep] -= v - best;
    }
    return best;
}

/* The replayed start of the node at hot[k]: the latest of its
 * dependencies (stream order, its launch + the rank's launch latency, an
 * inferred stream wait), each with no measured slack: what the model
 * cannot explain shows as replay error. Reads the node's cp_hot_t
 * (cp_node_t only for what-if launch). */
CP_INLINE void start_of(const cp_graph_t *g, const scen_t *sc, rp_t *r, int32_t k)
{
    const cp_hot_t *h = &g->hot[k];
    int32_t id = h->id;
    int64_t best = INT64_MIN;
    for (int q = 0; q < 3; q++) { /* stream order, the inferred (or explicit) cross dependencies */
        if (h->pred[q] < 0)
            continue;
        int64_t v = sc->pin_inferred && q == 1 && (h->flags & CP_H_PXINF) ? g->e0[h->pred[q]]
                                                                           : pred_at(g, sc, r, h, q);
        if (v > best)
            best = v;
    }
    /* the straggler what-if's ranks keep no launch gaps of their own: the
     * median rank's host is not that slow (a rank whose CPU is slow or
     * late: its lateness is host time the kernels' speed does not hold) */
    bool drop = sc->drop_launch || (sc->late && (sc->late[h->rank_i] & 2));
    if ((h->flags & CP_H_LAUNCH) && !drop) {
        /* lsync: the search done once per graph, not once per replay (a
         * run makes 20-odd replays) */
        int64_t v = h->llat + shift_of(g, r, h->lsync, h->job);
        if (v > best)
            best = v;
    }
    if (drop)
        best = no_launch_gap(g, r, h, best);
    r->s[id] = best == INT64_MIN ? h->s : best;
    r->sdone[id] = 1;
}

/* sweep3's start event of the node at hot[k] in each lane (r[0] measured
 * under P, r[1] "comm" under C when comm, r[2] "launch" under L, r[3]
 * the straggler what-if under F when F->factor): start_of in each lane
 * whose start is not done yet (an instance member's start may have been
 * replayed at another member's end, in that lane's own order). The one
 * record and its predecessors are read once a lane from the cache: what
 * the side-by-side sweep saves is the passes over the graph, not these
 * reads. */
CP_INLINE void start3(const cp_graph_t *g, const scen_t *P, const scen_t *C, const scen_t *L, const scen_t *F,
                      rp_t *r, bool meas, bool comm, bool launch, int32_t k)
{
    int32_t id = g->hot[k].id;
    if (meas && !r[0].sdone[id])
        start_of(g, P, &r[0], k);
    if (comm && !r[1].sdone[id])
        start_of(g, C, &r[1], k);
    if (launch && !r[2].sdone[id])
        start_of(g, L, &r[2], k);
    if (F->factor && !r[3].sdone[id])
        start_of(g, F, &r[3], k);
}

/* The latest replayed end of rank step q's activities so far (r->rend)
 * raised to v, the end just replayed of one of them (end_of). */
CP_INLINE void rend_max(rp_t *r, int32_t q, int64_t v)
{
    if (q >= 0 && v > r->rend[q])
        r->rend[q] = v;
}

/* The replayed end of the node at hot[k]; its rank step's latest end
 * raised with it (each node's end is replayed once, and nothing changes
 * it after: the maximum taken here, not in one more pass over hot after
 * the sweep, which read its 64 bytes a node again). */
CP_INLINE void end_of(const cp_graph_t *g, const scen_t *sc, rp_t *r, int32_t k)
{
    const cp_hot_t *h = &g->hot[k];
    int32_t id = h->id;
    if (!r->sdone[id])
        start_of(g, sc, r, k);
    if (h->inst >= 0 && sc->comm_transfer) {
        r->e[id] = r->s[id] + g->inst[h->inst].transfer;
        rend_max(r, h->rstep, r->e[id]);
        return;
    }
    if (h->inst >= 0) {
        const cp_inst_t *I = &g->inst[h->inst];
        if (!r->idone[h->inst]) {
            int64_t ms = INT64_MIN;
            for (uint32_t m = 0; m < I->n; m++) {
                int32_t mm = g->imem[I->m0 + m];
                /* the member's record, not its cp_node_t: read at its
                 * start event, so nearly always in the cache still */
                const cp_hot_t *hm = &g->hot[g->pos[mm]];
                if (!r->sdone[mm])
                    start_of(g, sc, r, g->pos[mm]);
                int64_t v = sc->carry || hm->job == h->job ? r->s[mm] : hm->s;
                if (v > ms)
                    ms = v;
            }
            r->ims[h->inst] = ms;
            r->idone[h->inst] = 1;
        }
        int64_t T = h->dt;
        if (sc->factor && sc->factor[id] != 1.0) /* what-if pattern: the transfer, not the wait */
            T = (int64_t)((double)T * sc->factor[id] + 0.5);
        int64_t v = r->ims[h->inst] + T;
        r->e[id] = v > r->s[id] ? v : r->s[id];
        rend_max(r, h->rstep, r->e[id]);
        return;
    }
    int64_t d = h->dt;
    if (sc->factor && sc->factor[id] != 1.0)
        d = (int64_t)((double)d * sc->factor[id] + 0.5);
    r->e[id] = r->s[id] + d;
    rend_max(r, h->rstep, r->e[id]);
}

/* Node i into g->hot[at] (job fields set), and its measured end into
 * g->e0. */
CP_INLINE void hot_fill(cp_graph_t *g, size_t i, size_t at)
{
    const cp_node_t *n = &g->nodes[i];
    cp_hot_t *h = &g->hot[at];
    *h = (cp_hot_t){.s = n->s, .dt = n->inst >= 0 ? cp_node_T(g, n) : n->e - n->s, .pred = {n->pstream, n->px, n->px2},
                    .job = n->job, .lsync = n->lsync, .inst = n->inst, .id = (int32_t)i, .rstep = n->rstep,
                    .rank_i = n->rank_i};
    /* a predecessor of the step before on the rank moves with the edge
     * when the rank step's start follows that step's last sync (the host
     * waited for its GPU: cp_sync_t.jnext): else the first kernel of the
     * step stays at its predecessor's measured end while its launch moves
     * with the sync (CP_H_PREV) */
    int32_t sj = -1;
    if (n->rstep >= 0 && g->rs[n->rstep].sb_start >= 0 && g->syncs[g->rs[n->rstep].sb_start].jnext == n->job)
        sj = g->syncs[g->rs[n->rstep].sb_start].job;
    for (int q = 0; q < 3; q++) {
        const cp_node_t *p = h->pred[q] >= 0 ? &g->nodes[h->pred[q]] : NULL;
        if (p && p->job == n->job)
            h->flags |= (uint8_t)(1u << q);
        else if (p && sj >= 0 && p->job == sj && p->rank_i == n->rank_i)
            h->flags |= (uint8_t)(CP_H_PREV << q);
    }
    /* a communication kernel's wait for another stream that no event
     * names (NCCL's stream told to wait for the gradient's kernel): the
     * edge whose other binding the ranges try */
    if (n->px >= 0 && n->bind == CP_B_X && n->cls == MT_AN_COMM && !n->xnamed)
        h->flags |= CP_H_PXINF;
    if (n->L != INT64_MIN) {
        h->flags |= CP_H_LAUNCH;
        h->llat = n->L + g->ranks[n->rank_i].lat;
    }
    g->e0[i] = n->e;
}

static int hot_alloc(cp_graph_t *g)
{
    size_t N = g->n_nodes ? g->n_nodes : 1;
    g->hot = mt_big_malloc(N * sizeof *g->hot);
    g->pos = mt_big_malloc(N * sizeof *g->pos);
    g->e0 = mt_big_malloc(N * sizeof *g->e0);
    return g->hot && g->pos && g->e0 ? 0 : -1;
}

/* g->hot, g->pos and g->e0 from g->nodes (job fields set) and g->ev in
 * topological order (topo_order), whose node events then hold indices
 * into hot; 0, or -1 out of memory. (In time order build_order fills them
 * as it merges.) */
static int cp_hot_build(cp_graph_t *g)
{
    if (hot_alloc(g))
        return -1;
    size_t k = 0;
    for (size_t j = 0; j < g->n_ev; j++)
        if ((int)(g->ev[j] >> 32) == 2)
            g->pos[g->ev[j] & 0xffffffff] = (int32_t)k++;
    assert(k == g->n_nodes);
    for (size_t i = 0; i < g->n_nodes; i++)
        hot_fill(g, i, (size_t)g->pos[i]);
    for (size_t j = 0; j < g->n_ev; j++) {
        int type = (int)(g->ev[j] >> 32);
        if (type != 1)
            g->ev[j] = ((int64_t)type << 32) | (int64_t)g->pos[g->ev[j] & 0xffffffff];
    }
    return 0;
}

/* The replayed arrival of host collective member y: its start moved
 * with its rank's host (the sync before it, the host time the what-if
 * "launch" removed so far), less its lateness in the straggler what-if. */
static int64_t arrival_of(const cp_graph_t *g, const scen_t *sc, const rp_t *r, const cp_sync_t *y)
{
    int64_t a = y->s + shift_of(g, r, y->sb, y->job);
    if (y->rstep >= 0)
        a += r->hc[y->rstep];
    if (sc->late && (sc->late[y->rank_i] & 1))
        a -= y->late;
    return a;
}

static void sync_of(const cp_graph_t *g, const scen_t *sc, rp_t *r, const cp_rank_t *R, size_t j)
{
    const cp_sync_t *s = &g->syncs[j];
    int64_t s1 = s->hi >= 0 ? arrival_of(g, sc, r, s) : s->s + shift_of(g, r, s->sb, s->job);
    if (s->rstep >= 0) { /* host time removed before it (no launch gaps); its shift carries it on */
        if (s->hi < 0)
            s1 += r->hc[s->rstep];
        r->hc[s->rstep] = 0;
    }
    int64_t v;
    if (s->hi >= 0) {
        /* a host collective (gloo): it returns at the last member's
         * replayed arrival + its own transfer (its measured end - the
         * measured last arrival), never before its own arrival; the
         * members' arrivals taken once, at the first member's return
         * (order_fix: after every member's sync before it) */
        const cp_inst_t *I = &g->hin[s->hi];
        if (!r->hidone[s->hi]) {
            int64_t ms = INT64_MIN;
            for (uint32_t q = 0; q < I->n; q++) {
                const cp_sync_t *y = &g->syncs[g->hmem[I->m0 + q]];
                int64_t a = r->carry || y->job == s->job ? arrival_of(g, sc, r, y) : y->s;
                if (a > ms)
                    ms = a;
            }
            r->hims[s->hi] = ms;
            r->hidone[s->hi] = 1;
        }
        int64_t T = s->e - I->maxstart;
        v = r->hims[s->hi] + (T > 0 ? T : 0);
        if (v < s1)
            v = s1;
    } else if (s->w >= 0 && g->nodes[s->w].e >= s->s) {
        v = end_in(g, r, s->w, s->job) + R->sync_lag;
        if (v < s1)
            v = s1;
    } else {
        v = s1 + (s->e - s->s);
        if (s->hi == -2 && sc->late && (sc->late[s->rank_i] & 1)) /* a host pause: without its lateness */
            v -= s->late;
    }
    r->sd[j] = v - s->e;
}

/* The replay order of a graph with explicit dependencies (and no host
 * syncs): Kahn's topological order over the events start(n) (after the
 * ends of its predecessors), end(n) (after start(n) and, for an instance
 * member, the starts of every member: through one event per instance).
 * Explicit dependencies need not agree with the measured order (a receive
 * posted before the compute it follows has ended), so time order would
 * not do. Returns 1 when the dependencies hold a cycle (the caller falls
 * back to time order), -1 out of memory. */
static int topo_order(cp_graph_t *g)
{
    size_t N = g->n_nodes, NI = g->n_inst, NE = 2 * N + NI;
    uint32_t *indeg = calloc(NE ? NE : 1, sizeof *indeg);
    size_t *off = calloc(NE + 1, sizeof *off);
    uint32_t *adj = NULL, *q = NULL;
    int ret = -1;
    if (!indeg || !off)
        goto out;
    /* edges: end(p) -> start(n); start(n) -> end(n); start(m) -> inst(I) -> end(x) */
#define EDGES(ADD)                                                                  \
    for (size_t i = 0; i < N; i++) {                                                \
        const cp_node_t *x = &g->nodes[i];                                          \
        if (x->pstream >= 0)                                                        \
            ADD(N + (size_t)x->pstream, i);                                         \
        if (x->px >= 0)                                                             \
            ADD(N + (size_t)x->px, i);                                              \
        if (x->px2 >= 0)                                                            \
            ADD(N + (size_t)x->px2, i);                                             \
        ADD(i, N + i);                                                              \
        if (x->inst >= 0) {                                                         \
            ADD(i, 2 * N + (size_t)x->inst);                                        \
            ADD(2 * N + (size_t)x->inst, N + i);                                    \
        }                                                                           \
    }
#define COUNT(a, b) (off[(a) + 1]++, indeg[(b)]++)
    EDGES(COUNT)
    for (size_t i = 0; i < NE; i++)
        off[i + 1] += off[i];
    adj = mt_big_malloc((off[NE] ? off[NE] : 1) * sizeof *adj);
    q = mt_big_malloc((NE ? NE : 1) * sizeof *q);
    size_t *fill = malloc((NE ? NE : 1) * sizeof *fill);
    if (!adj || !q || !fill) {
        free(fill);
        goto out;
    }
    memcpy(fill, off, NE * sizeof *fill);
#define PUT(a, b) (adj[fill[(a)]++] = (uint32_t)(b))
    EDGES(PUT)
#undef PUT
#undef COUNT
#undef EDGES
    free(fill);
    size_t head = 0, tail = 0, k = 0;
    for (size_t i = 0; i < NE; i++)
        if (!indeg[i])
            q[tail++] = (uint32_t)i;
    while (head < tail) {
        size_t v = q[head++];
        if (v < N)
            g->ev[k++] = ((int64_t)2 << 32) | (int64_t)v;
        else if (v < 2 * N)
            g->ev[k++] = (int64_t)(v - N);
        for (size_t e = off[v]; e < off[v + 1]; e++)
            if (!--indeg[adj[e]])
                q[tail++] = adj[e];
    }
    g->n_ev = k;
    ret = k == 2 * N ? 0 : 1;
out:
    free(indeg);
    free(off);
    free(adj);
    free(q);
    return ret;
}


/* ---- the replay order kept to the graph's edges ----
 *
 * The time order of build_order reads a predecessor's replayed end when
 * its measured end is no later than the successor's measured start. Real
 * traces break that by a few ns to a microsecond (timestamps rounded to
 * 1 us, a kernel that begins as the one before it on its stream is still
 * ending): the successor's start was then replayed before its
 * predecessor's end, from the predecessor's *measured* end, so a what-if
 * that moved the predecessor did not move the successor, nor anything
 * after it (issue 38: "rank 5 at the median rank's speed" gained 1.5 us
 * of 1.66 ms, rank 3's step end pinned by its last copy's start). Here
 * the order is made a topological one, as close to the time order as the
 * edges allow: an event whose dependency has not come yet waits for it
 * and follows it at once. Dependencies: a start after its predecessors'
 * ends (every step's: a run that carries shifts reads them all) and after
 * the sync its launch follows; an end after its start and, for an
 * instance member, after every member's start; a sync after the end of
 * what it waited for and after the sync before it. */

/* Event indices: start of hot[k] k, end of hot[k] N + k, sync j 2N + j,
 * instance i (all its members started) 2N + S + i. */
typedef struct ord_fix {
    const cp_graph_t *g;
    size_t N, S;
    uint8_t *done;
    int32_t *head, *next; /* per event: the first event waiting for it; the next waiter */
    uint32_t *started;    /* per instance: members started */
    int64_t *ev;          /* the order, rewritten (o->w never passes the read: a copy is read) */
    size_t w;
    int32_t *stack;
    size_t top;
} ord_fix_t;

/* The first dependency of event e not yet emitted, or -1. */
static int32_t ord_blocker(const ord_fix_t *o, int32_t e)
{
    const cp_graph_t *g = o->g;
    size_t N = o->N;
    if ((size_t)e < N) {
        const cp_hot_t *h = &g->hot[e];
        for (int q = 0; q < 3; q++) {
            int32_t p = h->pred[q];
            if (p >= 0 && !o->done[N + (size_t)g->pos[p]])
                return (int32_t)(N + (size_t)g->pos[p]);
        }
        if ((h->flags & CP_H_LAUNCH) && h->lsync >= 0 && !o->done[2 * N + (size_t)h->lsync])
            return (int32_t)(2 * N + (size_t)h->lsync);
        return -1;
    }
    if ((size_t)e < 2 * N) {
        size_t k = (size_t)e - N;
        if (!o->done[k])
            return (int32_t)k;
        int32_t i = g->hot[k].inst;
        if (i >= 0 && !o->done[2 * N + o->S + (size_t)i])
            return (int32_t)(2 * N + o->S + (size_t)i);
        return -1;
    }
    if ((size_t)e >= 2 * N + o->S) /* an instance: emitted when its last member starts */
        return -1;
    const cp_sync_t *y = &g->syncs[(size_t)e - 2 * N];
    if (y->sb >= 0 && (size_t)y->sb != (size_t)e - 2 * N && !o->done[2 * N + (size_t)y->sb])
        return (int32_t)(2 * N + (size_t)y->sb);
    if (y->w >= 0 && !o->done[N + (size_t)g->pos[y->w]])
        return (int32_t)(N + (size_t)g->pos[y->w]);
    if (y->hi >= 0) { /* a host collective: after every member's sync before it */
        const cp_inst_t *I = &g->hin[y->hi];
        for (uint32_t q = 0; q < I->n; q++) {
            int32_t b = g->syncs[g->hmem[I->m0 + q]].sb;
            if (b >= 0 && b != g->hmem[I->m0 + q] && !o->done[2 * N + (size_t)b])
                return (int32_t)(2 * N + (size_t)b);
        }
    }
    return -1;
}

/* Emit e if nothing holds it (else it waits for its blocker), then every
 * waiter this frees, depth first through o->stack. */
static void ord_try(ord_fix_t *o, int32_t e0)
{
    size_t N = o->N, S = o->S;
    o->stack[o->top++] = e0;
    while (o->top) {
        int32_t e = o->stack[--o->top];
        if (o->done[e])
            continue;
        int32_t b = ord_blocker(o, e);
        if (b >= 0) {
            o->next[e] = o->head[b];
            o->head[b] = e;
            continue;
        }
        o->done[e] = 1;
        if ((size_t)e < 2 * N + S) { /* a real event (not an instance's) */
            int type = (size_t)e < N ? 2 : (size_t)e < 2 * N ? 0 : 1;
            int64_t id = type == 2 ? e : type == 0 ? e - (int64_t)N : e - (int64_t)(2 * N);
            o->ev[o->w++] = ((int64_t)type << 32) | id;
        }
        if ((size_t)e < N && o->g->hot[e].inst >= 0) {
            int32_t i = o->g->hot[e].inst;
            if (++o->started[i] == o->g->inst[i].n)
                o->stack[o->top++] = (int32_t)(2 * N + S + (size_t)i);
        }
        for (int32_t x = o->head[e]; x >= 0; x = o->next[x])
            o->stack[o->top++] = x;
        o->head[e] = -1;
    }
}

/* g->ev (time order, node events by hot index) made topological as above.
 * 0; 1 when the edges hold a cycle (a collective matched across ranks in
 * an order that contradicts a stream's: g->ev is left in time order, the
 * replay reads a measured end there as before); -1 out of memory. Fast
 * path: nothing is allocated but the done flags when the time order
 * already respects every edge. */
static int order_fix(cp_graph_t *g)
{
    size_t N = g->n_nodes, S = g->n_syncs, NI = g->n_inst, E = 2 * N + S + NI;
    ord_fix_t o = {.g = g, .N = N, .S = S};
    if (E > INT32_MAX)
        return 0;
    o.done = calloc(E ? E : 1, 1);
    if (!o.done)
        return -1;
    /* a first pass: does the time order already hold? */
    uint32_t *cnt = calloc(NI ? NI : 1, sizeof *cnt);
    if (!cnt) {
        free(o.done);
        return -1;
    }
    o.started = cnt;
    bool ok = true;
    for (size_t j = 0; j < g->n_ev && ok; j++) {
        int64_t v = g->ev[j];
        int type = (int)(v >> 32);
        size_t id = (size_t)(v & 0xffffffff);
        int32_t e = (int32_t)(type == 2 ? id : type == 0 ? N + id : 2 * N + id);
        if (ord_blocker(&o, e) >= 0) {
            ok = false;
            break;
        }
        o.done[e] = 1;
        if (type == 2 && g->hot[id].inst >= 0 && ++cnt[g->hot[id].inst] == g->inst[g->hot[id].inst].n)
            o.done[2 * N + S + (size_t)g->hot[id].inst] = 1;
    }
    if (ok) {
        free(o.done);
        free(cnt);
        return 0;
    }
    memset(o.done, 0, E);
    memset(cnt, 0, (NI ? NI : 1) * sizeof *cnt);
    o.head = malloc(E * sizeof *o.head);
    o.next = malloc(E * sizeof *o.next);
    o.stack = malloc(E * sizeof *o.stack);
    int64_t *copy = malloc((g->n_ev ? g->n_ev : 1) * sizeof *copy);
    int ret = -1;
    if (!o.head || !o.next || !o.stack || !copy)
        goto out;
    memset(o.head, 0xff, E * sizeof *o.head);
    memcpy(copy, g->ev, g->n_ev * sizeof *copy);
    o.ev = g->ev;
    for (size_t j = 0; j < g->n_ev; j++) {
        int64_t v = copy[j];
        int type = (int)(v >> 32);
        size_t id = (size_t)(v & 0xffffffff);
        ord_try(&o, (int32_t)(type == 2 ? id : type == 0 ? N + id : 2 * N + id));
    }
    if (o.w != g->n_ev) { /* a cycle: events never freed */
        memcpy(g->ev, copy, g->n_ev * sizeof *copy);
        ret = 1;
    } else {
        ret = 0;
    }
out:
    free(o.done);
    free(cnt);
    free(o.head);
    free(o.next);
    free(o.stack);
    free(copy);
    return ret;
}

/* One sorted source of build_order's merge: a rank's node ends, syncs or
 * node starts, items at..end of ord (NULL: the ids themselves). */
typedef struct bo_src {
    const int32_t *ord;
    size_t at, end;
    int type;
} bo_src_t;

/* The head (key, tie) of x; tie = type << 32 | id orders equal times as
 * the replay needs them: ends, syncs, starts, each by id. */
CP_INLINE void bo_head(const cp_graph_t *g, const bo_src_t *x, uint64_t *key, uint64_t *tie)
{
    size_t id = x->ord ? (size_t)x->ord[x->at] : x->at;
    int64_t t = x->type == 0 ? cp_end_key(g, &g->nodes[id]) : x->type == 1 ? g->syncs[id].e : g->nodes[id].s;
    *key = mt_sort_key_i64(t);
    *tie = (uint64_t)x->type << 32 | id;
}

/* The replay order: node ends (key cp_end_key), sync ends, node starts; by
 * key, in that type order at equal keys, each type by id; and, with it,
 * g->hot, g->pos and g->e0 (cp_hot_build), the node events holding
 * indices into hot. Job fields must be set. With explicit dependencies
 * and no syncs: topo_order and cp_hot_build. 0, or -1 out of memory.
 *
 * Fast path: each rank's ends, syncs and starts are each already sorted
 * (syncs by end, nodes by end in by_end; a rank's nodes nearly always
 * come by start), so the order is a merge of 3 sources per rank (a loser
 * tree: about log2(3 x ranks) comparisons an event), not a radix sort of
 * 2 x nodes + syncs 64-bit keys; the same order, since (key, type, id) is
 * a total order. Besides the order itself (8 bytes an event) it touches no
 * new memory but a start order for ranks whose nodes do not come by start
 * (4 bytes a node), where the sort took 24 bytes an event of keys, a
 * permutation and the sort's scratch, each fresh pages (clear_page was a
 * third of the section's time on 8 x 157 MB). The hot records are written
 * as the start events come, in order: no second pass over the events. */
static int build_order(cp_graph_t *g)
{
    size_t N = g->n_nodes, S = g->n_syncs, n = 2 * N + S;
    g->ev = mt_big_malloc((n ? n : 1) * sizeof *g->ev);
    if (!g->ev)
        return -1;
    if (g->explicit_deps && !S) {
        int t = topo_order(g);
        if (t < 0)
            return -1;
        if (t == 0)
            return cp_hot_build(g);
        g->topo_cycle = true; /* time order below */
    }
    if (hot_alloc(g))
        return -1;
    int ret = -1;
    size_t nmax = 0;
    for (size_t i = 0; i < g->n_ranks; i++)
        if (g->ranks[i].n_nodes > nmax)
            nmax = g->ranks[i].n_nodes;
    int32_t *so = NULL; /* start orders of the ranks whose nodes do not come by start */
    uint64_t *key = NULL;
    uint32_t *val = NULL;
    bo_src_t *src = malloc((3 * g->n_ranks + 1) * sizeof *src);
    mt_kmerge_t m = {0};
    if (!src)
        goto out;
    size_t k = 0;
    for (size_t i = 0; i < g->n_ranks; i++) {
        const cp_rank_t *R = &g->ranks[i];
        if (!R->n_nodes && !R->n_syncs)
            continue;
        bool by_start = R->by_start;
        if ((R->end_late || !by_start) &&
            ((!key && !(key = mt_big_malloc((nmax ? nmax : 1) * sizeof *key))) ||
             (!val && !(val = mt_big_malloc((nmax ? nmax : 1) * sizeof *val)))))
            goto out;
        /* by_end (by end, then id: cp_graph_build) is the
         * end events' order unless an instance's last arrival comes after
         * a member's end (clock error: rare) */
        if (R->end_late && cp_rank_order(g, R, CP_BY_END_KEY, g->by_end, key, val))
            goto out;
        if (!by_start) {
            if (!so && !(so = mt_big_malloc((N ? N : 1) * sizeof *so)))
                goto out;
            if (cp_rank_order(g, R, CP_BY_START, so, key, val))
                goto out;
        }
        /* only sources with items: each leaf is a level of the tree in
         * the end (256 ranks without syncs: 512 leaves, not 768) */
        if (R->n_nodes)
            src[k++] = (bo_src_t){.ord = g->by_end, .at = R->node0, .end = R->node0 + R->n_nodes, .type = 0};
        if (R->n_syncs)
            src[k++] = (bo_src_t){.at = R->sync0, .end = R->sync0 + R->n_syncs, .type = 1};
        if (R->n_nodes)
            src[k++] = (bo_src_t){.ord = by_start ? NULL : so, .at = R->node0, .end = R->node0 + R->n_nodes, .type = 2};
    }
    free(key);
    free(val);
    key = NULL;
    val = NULL;
    if (!k) { /* no rank has a node or a sync: nothing to order */
        g->n_ev = 0;
        ret = 0;
        goto out;
    }
    if (mt_kmerge_init(&m, k) != MT_OK)
        goto out;
    for (size_t q = 0; q < k; q++)
        bo_head(g, &src[q], &m.key[q], &m.tie[q]);
    mt_kmerge_start(&m);
    size_t nh = 0; /* start events so far: the next hot index */
#ifndef NDEBUG
    uint64_t pk = 0, pt = 0; /* the last event's (key, tie): every source must be sorted */
#endif
    for (size_t j = 0; j < n; j++) {
        uint32_t q = mt_kmerge_top(&m);
        bo_src_t *x = &src[q];
        uint64_t tie = m.tie[q];
        int type = (int)(tie >> 32);
        size_t id = (size_t)(tie & 0xffffffff);
        assert(m.key[q] != MT_KMERGE_END || tie != MT_KMERGE_END);
#ifndef NDEBUG
        /* a source out of order would pop an end before its start and
         * index pos[] before it is written */
        assert(j == 0 || m.key[q] > pk || (m.key[q] == pk && tie > pt));
        pk = m.key[q];
        pt = tie;
#endif
        if (type == 1) {
            g->ev[j] = ((int64_t)1 << 32) | (int64_t)id;
        } else {
            /* a node's end comes after its start unless both are at one
             * time (s == end_key: the end first); such an end's event
             * waits in pos for the start to give it its hot index */
            const cp_node_t *nd = &g->nodes[id];
            bool end_first = type == 0 ? m.key[q] == mt_sort_key_i64(nd->s) : cp_end_key(g, nd) == nd->s;
            if (type == 0) {
                if (end_first)
                    g->pos[id] = (int32_t)j;
                else
                    g->ev[j] = g->pos[id];
            } else {
                if (end_first)
                    g->ev[g->pos[id]] = (int64_t)nh;
                g->pos[id] = (int32_t)nh;
                hot_fill(g, id, nh);
                g->ev[j] = ((int64_t)2 << 32) | (int64_t)nh++;
            }
        }
        uint64_t nk = MT_KMERGE_END, nt = MT_KMERGE_END;
        if (++x->at < x->end)
            bo_head(g, x, &nk, &nt);
        mt_kmerge_next(&m, nk, nt);
    }
    assert(nh == N);
    g->n_ev = n;
    ret = order_fix(g);
    if (ret > 0) {
        g->order_cycle = true;
        ret = 0;
    }
out:
    free(so);
    free(key);
    free(val);
    free(src);
    mt_kmerge_free(&m);
    return ret;
}

/* The events of g in replay order under sc (a copy: see CP_INLINE). */
CP_INLINE void sweep(const cp_graph_t *g, const scen_t sc, rp_t *r)
{
    for (size_t k = 0; k < g->n_ev; k++) {
        int64_t v = g->ev[k];
        int type = (int)(v >> 32);
        int32_t id = (int32_t)(v & 0xffffffff); /* a sync, or a node's index in hot */
        if (type == 0) {
            end_of(g, &sc, r, id);
        } else if (type == 1) {
            sync_of(g, &sc, r, &g->ranks[g->syncs[id].rank_i], (size_t)id);
        } else if (!r->sdone[g->hot[id].id]) {
            start_of(g, &sc, r, id);
        }
    }
}

/* The measured replay (r[0], when meas) and the what-ifs "communication
 * at its transfer time" (r[1], when comm) and "no launch gaps" (r[2],
 * when launch) side by side in one sweep of the events: each lane's steps
 * are exactly those of its own sweep (a lane reads and writes only its
 * own arrays, and the events come in the same order), but the events and
 * the nodes' records are read once, not once per scenario (fast path:
 * every run without a pipeline replays these three). The flags are
 * constants where the callers can make them so: see CP_INLINE. */
CP_INLINE void sweep3(const cp_graph_t *g, rp_t *r, bool meas, bool comm, bool launch, const double *f,
                      const uint8_t *late, int pin)
{
    const scen_t P = {.pin_inferred = pin}, C = {.comm_transfer = 1, .pin_inferred = pin},
                 L = {.drop_launch = 1, .pin_inferred = pin}, F = {.factor = f, .late = late, .pin_inferred = pin};
    for (size_t k = 0; k < g->n_ev; k++) {
        int64_t v = g->ev[k];
        int type = (int)(v >> 32);
        int32_t id = (int32_t)(v & 0xffffffff); /* a sync, or a node's index in hot */
        if (type == 0) {
            if (meas)
                end_of(g, &P, &r[0], id);
            if (comm)
                end_of(g, &C, &r[1], id);
            if (launch)
                end_of(g, &L, &r[2], id);
            if (f)
                end_of(g, &F, &r[3], id);
        } else if (type == 1) {
            const cp_rank_t *R = &g->ranks[g->syncs[id].rank_i];
            if (meas)
                sync_of(g, &P, &r[0], R, (size_t)id);
            if (comm)
                sync_of(g, &C, &r[1], R, (size_t)id);
            if (launch)
                sync_of(g, &L, &r[2], R, (size_t)id);
            if (f)
                sync_of(g, &F, &r[3], R, (size_t)id);
        } else {
            start3(g, &P, &C, &L, &F, r, meas, comm, launch, id);
        }
    }
}

/* r set for a replay under sc. */
static void replay_init(const cp_graph_t *g, const scen_t *sc, rp_t *r)
{
    /* r->s needs no start: every node's start event sets it */
    memcpy(r->e, g->e0, g->n_nodes * sizeof *r->e);
    memset(r->sdone, 0, g->n_nodes ? g->n_nodes : 1);
    memset(r->idone, 0, g->n_inst ? g->n_inst : 1);
    memset(r->hidone, 0, g->n_hin ? g->n_hin : 1);
    memset(r->sd, 0, (g->n_syncs ? g->n_syncs : 1) * sizeof *r->sd);
    memset(r->hc, 0, (g->n_rs ? g->n_rs : 1) * sizeof *r->hc);
    for (size_t i = 0; i < g->n_rs; i++)
        r->rend[i] = INT64_MIN;
    r->carry = sc->carry;
    r->cd_on = 0;
}

/* Whether a replay under sc takes the edge from a rank step's last sync
 * to the rank's next step (cp_sync_t.jnext) in a second pass: one run
 * carries every shift anyway; with communication at its transfer time the
 * ranks never wait for each other, so their offsets would not settle. */
static bool edge_wanted(const cp_graph_t *g, const scen_t *sc)
{
    return g->n_jnext && !sc->carry && !sc->comm_transfer;
}

/* How far each sync that a rank step starts after (jnext) moved in a
 * first pass of r (r->sd, each step replayed from its measured start)
 * against the others of its job step: its shift less the largest of
 * theirs, into out (per sync), less base[q] when base (the same of the
 * unchanged run). */
static void edge_rel(const cp_graph_t *g, const mt_critpath_t *c, const rp_t *r, const int64_t *base, int64_t *out)
{
    for (size_t j = 0; j < c->n_steps; j++) {
        const mt_cp_step_t *s = &c->steps[j];
        int64_t o = INT64_MIN;
        for (uint32_t k = s->first; k < s->first + s->n; k++) {
            int32_t q = g->rs[g->js[k]].sb_start;
            if (q >= 0 && g->syncs[q].jnext == (int32_t)j && r->sd[q] > o)
                o = r->sd[q];
        }
        for (uint32_t k = s->first; k < s->first + s->n; k++) {
            int32_t q = g->rs[g->js[k]].sb_start;
            if (q >= 0 && g->syncs[q].jnext == (int32_t)j)
                out[q] = base && base[q] == CP_EDGE_OFF ? 0 : r->sd[q] - o - (base ? base[q] : 0);
        }
    }
}

/* The unchanged run r's offsets (edge_rel; r: its first pass, it has no
 * other) into out, what the other replays' edges are taken against
 * (edge_fill). */
static void edge_rel_base(const cp_graph_t *g, const mt_critpath_t *c, const rp_t *r, int64_t *out)
{
    edge_rel(g, c, r, NULL, out);
    /* a job step whose rank steps' syncs the unchanged run does not
     * replay within CP_NEXT_ERR of their measured ends takes no edge: the
     * offsets it would carry are the model's error (on gloo4, host-bound,
     * up to 432 us: its what-if moved 8.01 -> 8.24 ms, away from the
     * truth) */
    for (size_t j = 0; j < c->n_steps; j++) {
        const mt_cp_step_t *s = &c->steps[j];
        bool off = false;
        for (uint32_t k = s->first; k < s->first + s->n && !off; k++) {
            int32_t q = g->rs[g->js[k]].sb_start;
            off = q >= 0 && g->syncs[q].jnext == (int32_t)j && (r->sd[q] > CP_NEXT_ERR || r->sd[q] < -CP_NEXT_ERR);
        }
        for (uint32_t k = s->first; off && k < s->first + s->n; k++) {
            int32_t q = g->rs[g->js[k]].sb_start;
            if (q >= 0 && g->syncs[q].jnext == (int32_t)j)
                out[q] = CP_EDGE_OFF;
        }
    }
}

/* g->cd0 from the unchanged run r (edge_rel_base), for the replays after
 * it; nothing without an edge. 0, or -1 out of memory. */
static int edge_base(cp_graph_t *g, const mt_critpath_t *c, const rp_t *r)
{
    if (!g->n_jnext)
        return 0;
    if (!(g->cd0 = calloc(g->n_syncs, sizeof *g->cd0)))
        return -1;
    edge_rel_base(g, c, r, g->cd0);
    return 0;
}

/* The edge's shifts (r->cd) for r's second pass, from its first: what a
 * rank's start takes into the next step is how far its previous step's
 * end moved against the other ranks' (a slow GPU's host that waited for
 * it starts earlier once it is fast), never the step's common move, and
 * less what the unchanged run's first pass gave (r->cd0, else g->cd0:
 * the model's own error, so that the unchanged run replays as it did).
 * The next step is still replayed from its measured start and the shifts
 * come from a pass that carried nothing: no error adds up over the steps.
 * False when there is no unchanged run yet (r is it: nothing to move)
 * or when nothing moves by CP_EDGE_TOL or more (fast path: the second
 * pass would replay the first again; on the 256-rank job most replays). */
static bool edge_fill(const cp_graph_t *g, const mt_critpath_t *c, rp_t *r)
{
    const int64_t *base = r->cd0 ? r->cd0 : g->cd0;
    if (!base)
        return false;
    edge_rel(g, c, r, base, r->cd);
    for (size_t q = 0; q < g->n_syncs; q++)
        if (g->syncs[q].jnext >= 0 && (r->cd[q] >= CP_EDGE_TOL || r->cd[q] <= -CP_EDGE_TOL))
            return true;
    return false;
}

/* Whether r's edge (edge_fill's r->cd) moves any sync at all: else a
 * second pass would replay its first exactly (shift_of and pred_at add
 * r->cd, 0 everywhere). */
static bool edge_any(const cp_graph_t *g, const rp_t *r)
{
    for (size_t q = 0; q < g->n_syncs; q++)
        if (g->syncs[q].jnext >= 0 && r->cd[q])
            return true;
    return false;
}

/* The job step times of a replay (r swept): times[j] and r->jend[j]. */
static void replay_finish(const cp_graph_t *g, rp_t *r, const mt_critpath_t *c, int64_t *times)
{
    /* rank step ends: the host end shifted, or the latest replayed end of
     * its activities (end_of kept it in rend) */
    int64_t *rend = r->rend;
    for (size_t i = 0; i < g->n_rs; i++) {
        const cp_rs_t *x = &g->rs[i];
        int64_t v = x->cpu_end + shift_of(g, r, x->sb_end, x->job) + r->hc[i];
        if (v > rend[i])
            rend[i] = v;
    }
    for (size_t j = 0; j < c->n_steps; j++) {
        const mt_cp_step_t *s = &c->steps[j];
        int64_t lo = INT64_MAX, hi = INT64_MIN;
        for (uint32_t k = s->first; k < s->first + s->n; k++) {
            int32_t q = g->js[k];
            const cp_rs_t *x = &g->rs[q];
            /* each step replays from its measured start; in one run
             * (carry) from it shifted with its rank's host */
            int64_t st = x->start + (r->carry ? shift_of(g, r, x->sb_start, x->job) : 0);
            if (st < lo)
                lo = st;
            if (rend[q] > hi)
                hi = rend[q];
        }
        times[j] = hi - lo;
        r->jend[j] = hi;
    }
}

/* Replay under sc; times[j] gets the job step time of job step j. */
void cp_replay(const cp_graph_t *g, const scen_t *sc, rp_t *r, const mt_critpath_t *c, int64_t *times)
{
    for (int pass = 0; pass < 2; pass++) {
        if (pass) { /* the edge to the next step's start: its shifts from the first pass */
            if (!edge_fill(g, c, r))
                break;
            replay_init(g, sc, r);
            r->cd_on = 1;
        } else {
            replay_init(g, sc, r);
        }
        /* the scenarios every run replays (measured, the what-ifs "comm"
         * and "launch") each with its flags as constants: see CP_INLINE */
        if (!sc->factor && !sc->carry && !sc->drop_launch && !sc->comm_transfer)
            sweep(g, (scen_t){0}, r);
        else if (!sc->factor && !sc->carry && !sc->drop_launch && sc->comm_transfer)
            sweep(g, (scen_t){.comm_transfer = 1}, r);
        else if (!sc->factor && !sc->carry && sc->drop_launch && !sc->comm_transfer)
            sweep(g, (scen_t){.drop_launch = 1}, r);
        else
            sweep(g, *sc, r);
        if (!edge_wanted(g, sc))
            break;
    }
    replay_finish(g, r, c, times);
}

/* sweep3's replays: r[0..3], times[0..3] as cp_replay's r and times (r[1]
 * and times[1] untouched without comm, r[2] and times[2] without launch,
 * r[3] and times[3] without f, the straggler what-if's factors); pin:
 * every lane with the inferred stream waits pinned (the ranges' other
 * binding, cp_scen_t.pin_inferred), and then at most one of comm and
 * launch (the ranges need the better one only). */
static void cp_replay3(const cp_graph_t *g, rp_t *r, bool comm, bool launch, const double *f, const uint8_t *late,
                       bool pin, const mt_critpath_t *c, int64_t *const *times)
{
    const scen_t sc[4] = {{0}, {.comm_transfer = 1}, {.drop_launch = 1}, {.factor = f, .late = late}};
    const bool on[4] = {true, comm, launch, f != NULL};
    for (int l = 0; l < 4; l++)
        if (on[l])
            replay_init(g, &sc[l], &r[l]);
    /* each combination its own inlined sweep: the flags stay constants */
    if (!pin && comm)
        sweep3(g, r, true, true, true, f, late, 0);
    else if (!pin)
        sweep3(g, r, true, false, true, f, late, 0);
    else if (comm)
        sweep3(g, r, true, true, false, f, late, 1);
    else if (launch)
        sweep3(g, r, true, false, true, f, late, 1);
    else
        sweep3(g, r, true, false, false, f, late, 1);
    if (comm) /* "comm" takes no edge to the next step (edge_wanted) */
        replay_finish(g, &r[1], c, times[1]);
    if (g->n_jnext) {
        /* the second pass of the others (cp_replay), side by side again,
         * against the unchanged run of lane 0 (its offsets in its cd, its
         * second pass the same as its first: not replayed again). A lane
         * whose edge moves no sync at all would replay its first pass
         * again: it keeps it (fast path: on the 256-rank job the "launch"
         * lane moves none, and the second sweep was 2/3 of these replays) */
        edge_rel_base(g, c, &r[0], r[0].cd);
        bool again[4] = {false, false, false, false};
        for (int l = 2; l < 4; l++)
            if (on[l]) {
                r[l].cd0 = r[0].cd;
                edge_fill(g, c, &r[l]);
                r[l].cd0 = NULL;
                again[l] = edge_any(g, &r[l]);
                if (again[l]) {
                    replay_init(g, &sc[l], &r[l]);
                    r[l].cd_on = 1;
                }
            }
        const double *f2 = again[3] ? f : NULL;
        if (!pin && again[2])
            sweep3(g, r, false, false, true, f2, late, 0);
        else if (!pin && f2)
            sweep3(g, r, false, false, false, f2, late, 0);
        else if (again[2])
            sweep3(g, r, false, false, true, f2, late, 1);
        else if (f2)
            sweep3(g, r, false, false, false, f2, late, 1);
    }
    for (int l = 0; l < 4; l++)
        if (on[l] && l != 1)
            replay_finish(g, &r[l], c, times[l]);
}

/* ---- the critical path of one step ---- */

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

enum { CP_K_COMM_WAIT = MT_CP_KIND_COUNT_ };

/* What a walk does with each segment: the path's statistics (WK_PATH),
 * or one of the sinks: cp_path_of's record (sink_rec), the root causes'
 * late rank (sink_q; cross_q after the transfer of an instance, before
 * the walk moves to its last arrival, nonzero stopping the walk there)
 * and waiting rank (sink_p). A sink gets each segment with kind
 * CP_K_COMM_WAIT for a matched communication activity the walk could
 * not follow to its last arrival. The mode is a constant in each
 * compiled walk (walk_core), so each sink is inlined into its own copy
 * (it was called through a pointer at each segment). */
enum { WK_PATH, WK_REC, WK_Q, WK_P };

CP_INLINE void sink_q(walk_t *w, int32_t rank_i, int kind, int64_t d, int32_t node);
CP_INLINE void sink_p(walk_t *w, int32_t rank_i, int kind, int64_t d, int32_t node);
CP_INLINE int cross_q(walk_t *w, int32_t inst, bool host);

/* cp_path_of's recording: the segments as they come (backward). */
typedef struct rec {
    cp_pseg_t *v;
    size_t n, cap;
    bool fail;
} rec_t;

CP_INLINE void sink_rec(walk_t *w, int32_t rank_i, int kind, int64_t d, int32_t node)
{
    rec_t *x = w->ctx;
    if (MT_GROW(x->v, x->cap, x->n + 1, 64)) {
        x->fail = true;
        return;
    }
    /* seg() has moved w->cur to the segment's start already */
    x->v[x->n++] = (cp_pseg_t){w->cur, w->cur + d, rank_i, node, kind == CP_K_COMM_WAIT ? MT_CP_COMM : kind};
}

/* One segment of the walk back to a: w->cur moves to it. Inlined into
 * walk_core, each call with its kind a constant (a call per segment was a
 * fifth of the root causes' walks). */
CP_INLINE void seg(walk_t *w, int mode, int rank_i, int kind, int64_t a, int32_t node)
{
    if (a > w->cur)
        a = w->cur;
    if (a < w->t0)
        a = w->t0;
    int64_t d = w->cur - a;
    w->cur = a;
    if (d <= 0)
        return;
    if (mode == WK_REC) {
        sink_rec(w, rank_i, kind, d, node);
        return;
    }
    if (mode == WK_Q) {
        sink_q(w, rank_i, kind, d, node);
        return;
    }
    if (mode == WK_P) {
        sink_p(w, rank_i, kind, d, node);
        return;
    }
    if (kind == CP_K_COMM_WAIT)
        kind = MT_CP_COMM;
    w->s->kind_ns[kind] += d;
    /* by index, not a search of the step's rank steps: that made each
     * segment O(ranks) (a 256-rank job's paths have thousands) */
    if (w->rs_at[rank_i] >= 0)
        w->c->rank_steps[w->rs_at[rank_i]].path_ns += d;
    if (node >= 0 && w->s->used)
        w->node_ns[node] += d;
    if (node >= 0 && w->g->nodes[node].absent)
        w->absent_ns += d;
}

/* Walk back from w->cur: on rank_i's host (node < 0), from the end of a
 * node, or from its start (at_start); each segment as mode says (WK_*,
 * a constant in each copy: walk_path and the root causes' walks). */
CP_INLINE void walk_core(walk_t *w, int mode, int32_t rank_i, int32_t node, bool at_start)
{
    const cp_graph_t *g = w->g;
    enum { AT_HOST, AT_END, AT_START, AT_SYNC } where = node < 0 ? AT_HOST : at_start ? AT_START : AT_END;
    int32_t id = node;
    size_t j = 0;
    /* the sync AT_HOST finds when it is known already: the latest sync
     * before a launch end (cp_node_t.lsync) or a sync's start
     * (cp_sync_t.sb), worked out before the walks; -2: search */
    long known = -2;
    size_t guard = 2 * g->n_nodes + 2 * g->n_syncs + 16;
    while (w->cur > w->t0 && !w->stop && guard--) {
        if (where == AT_HOST) {
            long q = known != -2 ? known : sync_before(g, &g->ranks[rank_i], w->cur);
            known = -2;
            if (q >= 0 && g->syncs[q].e > w->cur) { /* host work inside a host collective (host_cover) */
                j = (size_t)q;
                where = AT_SYNC;
                continue;
            }
            if (q < 0 || g->syncs[q].e <= w->t0) {
                seg(w, mode, rank_i, MT_CP_HOST, w->t0, -1);
                break;
            }
            seg(w, mode, rank_i, MT_CP_HOST, g->syncs[q].e, -1);
            j = (size_t)q;
            where = AT_SYNC;
        } else if (where == AT_SYNC) {
            const cp_sync_t *s = &g->syncs[j];
            if (s->hi >= 0) {
                /* a host collective: its transfer, then the host of the
                 * member that arrived last, from its arrival back (the
                 * ranks that waited for it are not on the path) */
                const cp_inst_t *I = &g->hin[s->hi];
                const int64_t cur0 = w->cur;
                if (I->last >= 0 && I->maxstart > s->s && I->maxstart <= w->cur) {
                    seg(w, mode, rank_i, MT_CP_COMM, I->maxstart, -1);
                    /* a synchronisation point of the root causes (as a
                     * GPU instance's transfer) */
                    if (mode == WK_Q && cross_q(w, s->hi, true)) {
                        w->stop = true;
                        break;
                    }
                    rank_i = g->syncs[I->last].rank_i;
                    if (w->cur == g->syncs[I->last].s)
                        known = g->syncs[I->last].sb;
                } else {
                    seg(w, mode, rank_i, MT_CP_COMM, s->s, -1);
                    if (w->cur == s->s)
                        known = s->sb;
                }
                if (mode == WK_PATH && I->absent)
                    w->absent_ns += cur0 - w->cur;
                where = AT_HOST;
            } else if (s->w >= 0 && g->nodes[s->w].e >= s->s) {
                seg(w, mode, rank_i, MT_CP_HOST, g->nodes[s->w].e, -1);
                id = s->w;
                where = AT_END;
            } else {
                seg(w, mode, rank_i, MT_CP_HOST, s->s, -1);
                if (w->cur == s->s)
                    known = s->sb;
                where = AT_HOST;
            }
        } else if (where == AT_END) {
            const cp_node_t *n = &g->nodes[id];
            rank_i = n->rank_i;
            if (n->inst >= 0 && g->inst[n->inst].maxstart <= w->cur) {
                const cp_inst_t *I = &g->inst[n->inst];
                seg(w, mode, rank_i, MT_CP_COMM, I->maxstart, id);
                if (mode == WK_Q && cross_q(w, n->inst, false)) {
                    w->stop = true;
                    break;
                }
                id = I->last;
                rank_i = g->nodes[id].rank_i;
            } else {
                seg(w, mode, rank_i, n->inst >= 0 && n->cls == MT_AN_COMM ? CP_K_COMM_WAIT : cp_node_kind(n), n->s, id);
            }
            where = AT_START;
        } else {
            const cp_node_t *n = &g->nodes[id];
            rank_i = n->rank_i;
            if (n->bind == CP_B_STREAM) {
                seg(w, mode, rank_i, MT_CP_IDLE, g->nodes[n->pstream].e, -1);
                id = n->pstream;
                where = AT_END;
            } else if (n->bind == CP_B_X) {
                seg(w, mode, rank_i, MT_CP_IDLE, g->nodes[n->px].e, -1);
                id = n->px;
                where = AT_END;
            } else if (n->bind == CP_B_LAUNCH) {
                seg(w, mode, rank_i, MT_CP_HOST, n->L, -1);
                if (w->cur == n->L)
                    known = n->lsync;
                where = AT_HOST;
            } else {
                seg(w, mode, rank_i, MT_CP_IDLE, w->t0, -1);
                break;
            }
        }
    }
    if (w->cur > w->t0 && !w->stop) /* the guard ran out: a cycle through zero-length segments */
        seg(w, mode, rank_i, MT_CP_IDLE, w->t0, -1);
}

/* The path's statistics (WK_PATH) and cp_path_of's record (WK_REC). */
static void walk_path(walk_t *w, int32_t rank_i, int32_t node, bool at_start)
{
    walk_core(w, WK_PATH, rank_i, node, at_start);
}

static void walk_rec(walk_t *w, int32_t rank_i, int32_t node, bool at_start)
{
    walk_core(w, WK_REC, rank_i, node, at_start);
}

/* Walk the critical path of job step j from the rank step that ends it,
 * recorded (rec) or counted; false when that rank step is not found. */
static bool walk_step(walk_t *w, size_t j, bool rec)
{
    const cp_graph_t *g = w->g;
    const mt_critpath_t *c = w->c;
    const mt_cp_step_t *s = &c->steps[j];
    const cp_rs_t *x = NULL;
    for (uint32_t k = s->first; k < s->first + s->n; k++)
        if (c->rank_steps[k].rank == s->end_rank)
            x = &g->rs[g->js[k]];
    if (!x)
        return false;
    int32_t node = x->last >= 0 && g->nodes[x->last].e >= x->cpu_end ? x->last : -1;
    if (rec)
        walk_rec(w, x->rank_i, node, false);
    else
        walk_path(w, x->rank_i, node, false);
    return true;
}

int cp_path_of(const cp_graph_t *g, mt_critpath_t *c, size_t j, cp_pseg_t **out, size_t *n)
{
    mt_cp_step_t *s = &c->steps[j];
    rec_t x = {0};
    walk_t wk = {.g = g, .c = c, .s = s, .t0 = s->start_ns, .cur = s->end_ns, .ctx = &x};
    walk_step(&wk, j, true);
    if (x.fail) {
        free(x.v);
        return -1;
    }
    for (size_t a = 0, b = x.n; a + 1 < b; a++, b--) { /* the walk goes backward */
        cp_pseg_t t = x.v[a];
        x.v[a] = x.v[b - 1];
        x.v[b - 1] = t;
    }
    *out = x.v;
    *n = x.n;
    return 0;
}

/* ---- helpers ---- */

/* name aggregation: (hash, node) */
typedef struct nh {
    uint64_t h;
    int32_t node;
    int32_t rank_i;
} nh_t;

/* Sort v[0..k), which holds nodes in increasing order, by (hash, rank,
 * node): a stable radix sort by hash keeps the nodes (and so their ranks,
 * the nodes being rank by rank) in order within a hash (a qsort with a
 * comparator cost more than the hashes). 0, or -1 out of memory. */
static int nh_sort(nh_t *v, size_t k)
{
    uint64_t *key = mt_big_malloc((k ? k : 1) * sizeof *key);
    uint32_t *perm = mt_big_malloc((k ? k : 1) * sizeof *perm);
    int bad = !key || !perm;
    for (size_t i = 0; !bad && i < k; i++) {
        key[i] = v[i].h;
        perm[i] = (uint32_t)i;
    }
    bad = bad || mt_sort_u64(key, perm, k) != MT_OK;
    if (!bad)
        mt_sort_permute(v, sizeof *v, perm, k);
    free(key);
    free(perm);
    return bad ? -1 : 0;
}

static int name_ns_cmp(const void *pa, const void *pb)
{
    const mt_cp_name_t *a = pa, *b = pb;
    if (a->ns != b->ns)
        return a->ns > b->ns ? -1 : 1;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    if (a->kind != b->kind)
        return a->kind < b->kind ? -1 : 1;
    return strcmp(a->name, b->name);
}

#define CP_TOP 10
#define CP_CAUSES 10

/* Free the names of v[0..n) and v. */
static void names_free(mt_cp_name_t *v, size_t n)
{
    for (size_t j = 0; j < n; j++)
        free(v[j].name);
    free(v);
}

/* Sort v[0..n) most first, free the names past the first CP_CAUSES and
 * return how many are kept. */
static size_t names_keep_top(mt_cp_name_t *v, size_t n)
{
    qsort(v, n, sizeof *v, name_ns_cmp);
    for (size_t k = CP_CAUSES; k < n; k++)
        free(v[k].name);
    return n < CP_CAUSES ? n : CP_CAUSES;
}

/* The straggler what-if's factors: see critpath.h "what-if". */
static int straggler_factors(const cp_graph_t *g, const mt_cp_request_t *rq, double *f, nh_t *nh, size_t *n_nh)
{
    if (g->dist) { /* reduced over the processes (cp_dist.c): the same numbers */
        cp_name_memo_t *memo = calloc(CP_NAME_MEMO, sizeof *memo);
        if (!memo)
            return -1;
        for (size_t i = 0; i < g->n_nodes; i++) {
            const cp_node_t *n = &g->nodes[i];
            f[i] = n->cls == MT_AN_COMM ? 1.0 : cp_dist_factor(g->dist, cp_name_hash(memo, n), g->ranks[n->rank_i].rank);
        }
        free(memo);
        *n_nh = 0;
        return 0;
    }
    int32_t *stage_of = NULL; /* per rank_i: its pipeline stage, -1 */
    if (rq->n_stages >= 2 && rq->stage_ranks && rq->stage_first) {
        if (!(stage_of = malloc((g->n_ranks ? g->n_ranks : 1) * sizeof *stage_of)))
            return -1;
        for (size_t i = 0; i < g->n_ranks; i++) {
            stage_of[i] = -1;
            for (size_t q = 0; q < rq->n_stages; q++)
                for (size_t k = rq->stage_first[q]; k < rq->stage_first[q + 1]; k++)
                    if (rq->stage_ranks[k] == g->ranks[i].rank)
                        stage_of[i] = (int32_t)q;
        }
    }
    size_t k = 0;
    cp_name_memo_t *memo = calloc(CP_NAME_MEMO, sizeof *memo);
    if (!memo) {
        free(stage_of);
        return -1;
    }
    for (size_t i = 0; i < g->n_nodes; i++) {
        const cp_node_t *n = &g->nodes[i];
        f[i] = 1.0;
        if (n->cls == MT_AN_COMM)
            continue;
        nh[k++] = (nh_t){cp_name_hash(memo, n), (int32_t)i, n->rank_i};
    }
    free(memo);
    if (nh_sort(nh, k)) {
        free(stage_of);
        return -1;
    }
    *n_nh = k;
    double *means = malloc((g->n_ranks ? g->n_ranks : 1) * sizeof *means);
    int32_t *rk = malloc((g->n_ranks ? g->n_ranks : 1) * sizeof *rk);
    if (!means || !rk) {
        free(means);
        free(rk);
        free(stage_of);
        return -1;
    }
    for (size_t a = 0; a < k;) {
        size_t b = a;
        while (b < k && nh[b].h == nh[a].h)
            b++;
        /* per rank mean over [a, b) */
        size_t nr = 0;
        for (size_t x = a; x < b;) {
            size_t y = x;
            double sum = 0;
            while (y < b && nh[y].rank_i == nh[x].rank_i) {
                const cp_node_t *n = &g->nodes[nh[y].node];
                sum += (double)(n->e - n->s);
                y++;
            }
            means[nr] = sum / (double)(y - x);
            rk[nr++] = nh[x].rank_i;
            x = y;
        }
        double *tmp = malloc(nr * sizeof *tmp);
        if (!tmp) {
            free(means);
            free(rk);
            free(stage_of);
            return -1;
        }
        memcpy(tmp, means, nr * sizeof *tmp);
        double med = mt_stats_median_f64(tmp, nr);
        for (size_t q = 0; q < nr; q++) {
            int strag = 0;
            for (size_t s = 0; s < rq->n_stragglers; s++)
                strag |= g->ranks[rk[q]].rank == rq->stragglers[s];
            if (!strag || nr < 2)
                continue;
            /* in a pipeline, the median rank of its own stage: stages do
             * different work under the same kernel names (a slow rank of a
             * light stage was below the job's median and kept its speed) */
            double mq = med;
            if (stage_of && stage_of[rk[q]] >= 0) {
                /* the stage's ranks that are not named: with two ranks a
                 * stage the median of both is the mean of the straggler
                 * and its peer, and half the slowdown stayed (issue 38,
                 * 1F1B of 4 stages x 2: +6.12 % against the twin) */
                size_t ns = 0, nall = 0;
                for (size_t x = 0; x < nr; x++) {
                    if (stage_of[rk[x]] != stage_of[rk[q]])
                        continue;
                    nall++;
                    int named = 0;
                    for (size_t s = 0; s < rq->n_stragglers; s++)
                        named |= g->ranks[rk[x]].rank == rq->stragglers[s];
                    if (!named)
                        tmp[ns++] = means[x];
                }
                if (ns >= 1) {
                    mq = mt_stats_median_f64(tmp, ns);
                } else if (nall >= 2) { /* every rank of the stage named: all of them */
                    for (size_t x = 0; x < nr; x++)
                        if (stage_of[rk[x]] == stage_of[rk[q]])
                            tmp[ns++] = means[x];
                    mq = mt_stats_median_f64(tmp, ns);
                }
            }
            if (!(means[q] > mq))
                continue;
            double fac = mq / means[q];
            for (size_t x = a; x < b; x++)
                if (nh[x].rank_i == rk[q])
                    f[nh[x].node] = fac;
        }
        free(tmp);
        a = b;
    }
    free(means);
    free(rk);
    free(stage_of);
    return 0;
}

/* ---- root causes ---- */

/* Segments of one walk at most (critpath.h "root causes": Limits). */
#define CP_RC_SEG 65536

/* A cause key: kind and name (borrowed from a rank's result). */
typedef struct rc_key {
    const char *name;
    uint32_t len;
    uint32_t kind;        /* mt_rc_kind_t */
} rc_key_t;

/* One segment of the late rank's walk, with what charging it to each
 * waiting rank reads worked out once (rc_charge: an instance has up to
 * ranks - 1 waiters, each charged from the same segments). */
typedef struct rc_seg {
    int32_t key, rank_i;
    int64_t d;
    double fq;            /* d / the late rank's sum of its key (set with those sums) */
    size_t ann;           /* its (rank, annotation)'s index in rc_t.ann */
    uint32_t kind;        /* its key's mt_rc_kind_t */
    int32_t cause;        /* its (key, rank)'s index in rc_t.cs once charged, -1 */
} rc_seg_t;

/* Wait charged to one annotation of one rank, by kind. */
typedef struct rc_ann {
    int64_t ns;
    int64_t kind_ns[MT_RC_KIND_COUNT_];
} rc_ann_t;

/* Where the late rank's walk left the transfer of an instance. */
typedef struct rc_cross {
    size_t pos;           /* segments before it */
    int32_t inst;         /* in g->inst, or in g->hin when host */
    bool host;            /* a host collective */
    int64_t t;            /* its last arrival (clipped to the step start) */
} rc_cross_t;

/* A (key, rank) charged: the causes before sorting. */
typedef struct rc_cause {
    int32_t key, rank_i;
    int64_t ns;
} rc_cause_t;

enum { RC_KEY_HOST = 0, RC_KEY_IDLE = 1 };

/* A hash index over the entries of an array its owner keeps (the keys
 * and the causes below): open addressing with linear probing; a slot
 * holds an entry's index, -1 empty; cap a power of two, at least twice
 * the entries. */
typedef struct itab {
    int32_t *slot;
    size_t cap;
} itab_t;

static int itab_init(itab_t *t, size_t cap)
{
    t->cap = cap;
    t->slot = malloc(cap * sizeof *t->slot);
    if (!t->slot)
        return -1;
    memset(t->slot, 0xff, cap * sizeof *t->slot);
    return 0;
}

static void itab_put(int32_t *slot, size_t cap, uint64_t h, int32_t e)
{
    size_t i = h & (cap - 1);
    while (slot[i] >= 0)
        i = (i + 1) & (cap - 1);
    slot[i] = e;
}

/* Find-or-insert: the entry of hash h that same(ctx, e) accepts; when
 * there is none, n (the caller then stores entry n and counts it), with
 * the table doubled first when n + 1 entries need it (entries 0..n-1
 * placed again by hash(ctx, e)). -1 out of memory, the table unchanged.
 * Inline, so that each caller's same and hash are direct calls. */
static inline int32_t itab_get(itab_t *t, uint64_t h, size_t n, bool (*same)(const void *ctx, int32_t e),
                               uint64_t (*hash)(const void *ctx, int32_t e), const void *ctx)
{
    for (size_t i = h & (t->cap - 1); t->slot[i] >= 0; i = (i + 1) & (t->cap - 1))
        if (same(ctx, t->slot[i]))
            return t->slot[i];
    if (2 * (n + 1) > t->cap) {
        size_t cap = 2 * t->cap;
        int32_t *v = malloc(cap * sizeof *v);
        if (!v)
            return -1;
        memset(v, 0xff, cap * sizeof *v);
        for (size_t k = 0; k < n; k++)
            itab_put(v, cap, hash(ctx, (int32_t)k), (int32_t)k);
        free(t->slot);
        t->slot = v;
        t->cap = cap;
    }
    itab_put(t->slot, t->cap, h, (int32_t)n);
    return (int32_t)n;
}

typedef struct rc {
    const cp_graph_t *g;
    rc_key_t *keys;
    size_t n_keys, cap_keys;
    itab_t ktab;          /* over keys */
    int32_t *nkey, *wkey; /* per node: its key; comm_wait key of a matched comm node, -1 */
    int32_t *mr;          /* per instance member (imem order): member ranks, sorted within each instance */
    int32_t *hmr;         /* the same per host collective member (hmem order) */
    rc_seg_t *segs;       /* the late rank's walk */
    size_t n_segs, cap_segs;
    rc_cross_t *cross;
    size_t n_cross, cap_cross;
    const cp_inst_t *inst; /* the instance whose waits are charged (GPU or host) */
    int64_t *accq, *accp; /* per key: the late rank's and the waiting rank's time */
    int32_t *touched;     /* keys with time in accq: touched[0 .. n_tq); in accp: touched[n_keys ..][0 .. n_tp) */
    uint8_t *mark;        /* per key: bit 0 in the first list, bit 1 in the second */
    size_t n_tq, n_tp;
    uint32_t q_stamp;     /* accq holds segs[0 .. q_npos) of walk q_stamp (0: nothing) */
    size_t q_npos;
    size_t n_walk;        /* segments of the current walk */
    rc_cause_t *cs;
    size_t n_cs, cap_cs;
    itab_t ctab;          /* over cs */
    rc_ann_t *ann;        /* per rank and annotation: ann[aoff[rank_i] + annot] */
    size_t *aoff;
    /* Per rank, against the late rank's walk of x->inst (its number in
     * stamp): in_at == stamp when the rank is a member of x->inst (n_irank
     * of them); fc_at == stamp when fc holds the first crossing (index in
     * cross) whose instance holds the rank, the crossings before fc_next
     * scanned. Stamps, not clearing: a 256-rank job walks once per
     * collective. */
    uint32_t *in_at, *fc_at;
    int32_t *fc;
    uint32_t stamp;
    size_t n_irank, fc_next;
    int err;
} rc_t;

static uint64_t key_hash(const char *name, uint32_t len, uint32_t kind)
{
    return mt_hash64(name, len, 0x9e3779b97f4a7c15ULL * (kind + 1));
}

/* A key looked up in x's keys (key_of's itab_get context). */
typedef struct key_probe {
    const rc_key_t *keys;
    rc_key_t k;
} key_probe_t;

static bool key_same(const void *ctx, int32_t e)
{
    const key_probe_t *p = ctx;
    const rc_key_t *k = &p->keys[e];
    return k->kind == p->k.kind && k->len == p->k.len &&
           (k->name == p->k.name || !memcmp(k->name, p->k.name, k->len));
}

static uint64_t key_rehash(const void *ctx, int32_t e)
{
    const rc_key_t *k = &((const key_probe_t *)ctx)->keys[e];
    return key_hash(k->name, k->len, k->kind);
}

/* The key of (kind, name), added when new; -1 out of memory. */
static int32_t key_of(rc_t *x, uint32_t kind, const char *name, uint32_t len)
{
    if (MT_GROW(x->keys, x->cap_keys, x->n_keys + 1, 64))
        return -1;
    key_probe_t p = {x->keys, {name, len, kind}};
    int32_t e = itab_get(&x->ktab, key_hash(name, len, kind), x->n_keys, key_same, key_rehash, &p);
    if (e >= 0 && (size_t)e == x->n_keys)
        x->keys[x->n_keys++] = p.k;
    return e;
}

static uint64_t cause_hash(int32_t key, int32_t rank_i)
{
    return ((uint64_t)(uint32_t)key * 0x9e3779b97f4a7c15ULL) ^ ((uint64_t)(uint32_t)rank_i * 0xc2b2ae3d27d4eb4fULL);
}

/* A cause looked up in x's causes (charge's itab_get context). */
typedef struct cause_probe {
    const rc_cause_t *cs;
    int32_t key, rank_i;
} cause_probe_t;

static bool cause_same(const void *ctx, int32_t e)
{
    const cause_probe_t *p = ctx;
    return p->cs[e].key == p->key && p->cs[e].rank_i == p->rank_i;
}

static uint64_t cause_rehash(const void *ctx, int32_t e)
{
    const rc_cause_t *c = &((const cause_probe_t *)ctx)->cs[e];
    return cause_hash(c->key, c->rank_i);
}

/* The index in x->cs of (key, rank_i), added with 0 ns when new; -1 out
 * of memory. */
static int32_t cause_of(rc_t *x, int32_t key, int32_t rank_i)
{
    if (MT_GROW(x->cs, x->cap_cs, x->n_cs + 1, 64))
        return -1;
    cause_probe_t p = {x->cs, key, rank_i};
    int32_t e = itab_get(&x->ctab, cause_hash(key, rank_i), x->n_cs, cause_same, cause_rehash, &p);
    if (e >= 0 && (size_t)e == x->n_cs)
        x->cs[x->n_cs++] = (rc_cause_t){key, rank_i, 0};
    return e;
}

static int32_t seg_key(const rc_t *x, int kind, int32_t node)
{
    if (kind == MT_CP_HOST)
        return RC_KEY_HOST;
    if (node < 0 || kind == MT_CP_IDLE)
        return RC_KEY_IDLE;
    if (kind == CP_K_COMM_WAIT && x->wkey[node] >= 0)
        return x->wkey[node];
    return x->nkey[node];
}

/* The late rank's walk: its segments kept in order. */
CP_INLINE void sink_q(walk_t *w, int32_t rank_i, int kind, int64_t d, int32_t node)
{
    rc_t *x = w->ctx;
    if (MT_GROW(x->segs, x->cap_segs, x->n_segs + 1, 256)) {
        x->err = 1;
        w->stop = true;
        return;
    }
    uint32_t an = 0;
    if (node >= 0 && x->g->annot && x->g->nodes[node].rank_i == rank_i)
        an = x->g->annot[node];
    int32_t key = seg_key(x, kind, node);
    x->segs[x->n_segs++] = (rc_seg_t){.key = key, .rank_i = rank_i, .d = d, .ann = x->aoff[rank_i] + an,
                                      .kind = x->keys[key].kind, .cause = -1};
    if (++x->n_walk >= CP_RC_SEG)
        w->stop = true;
}

/* The late rank's walk left instance K's transfer (host: a host
 * collective, g->hin): a synchronisation point for the waiting ranks in
 * K; the walk ends when K holds them all. */
CP_INLINE int cross_q(walk_t *w, int32_t inst, bool host)
{
    rc_t *x = w->ctx;
    if (MT_GROW(x->cross, x->cap_cross, x->n_cross + 1, 16)) {
        x->err = 1;
        return 1;
    }
    x->cross[x->n_cross++] = (rc_cross_t){x->n_segs, inst, host, w->cur};
    const cp_inst_t *K = host ? &x->g->hin[inst] : &x->g->inst[inst];
    if (K->n < x->inst->n)
        return 0;
    /* K holds every rank of x->inst when it holds n_irank distinct ones
     * marked in in_at: one pass over K (its member ranks sorted), not a
     * search of K per member of x->inst */
    const int32_t *v = (host ? x->hmr : x->mr) + K->m0;
    size_t have = 0;
    for (uint32_t m = 0; m < K->n; m++)
        have += (m == 0 || v[m] != v[m - 1]) && x->in_at[v[m]] == x->stamp;
    return have == x->n_irank;
}

/* The first crossing of the late rank's walk whose instance holds rank_i
 * (an index in x->cross), or -1. The crossings are scanned once per walk,
 * each marking its ranks, as far as the waiters need: an instance's
 * waiters share them (a search per waiter and crossing cost more than
 * the walks on a 256-rank job). */
static int32_t first_cross(rc_t *x, int32_t rank_i)
{
    while (x->fc_at[rank_i] != x->stamp && x->fc_next < x->n_cross) {
        const rc_cross_t *y = &x->cross[x->fc_next];
        const cp_inst_t *K = y->host ? &x->g->hin[y->inst] : &x->g->inst[y->inst];
        const int32_t *v = (y->host ? x->hmr : x->mr) + K->m0;
        for (uint32_t m = 0; m < K->n; m++) {
            int32_t r = v[m];
            if (x->fc_at[r] != x->stamp) {
                x->fc_at[r] = x->stamp;
                x->fc[r] = (int32_t)x->fc_next;
            }
        }
        x->fc_next++;
    }
    return x->fc_at[rank_i] == x->stamp ? x->fc[rank_i] : -1;
}

/* Note key in the list of bit (1: accq's, 2: accp's). */
static void touch(rc_t *x, int32_t key, uint8_t bit)
{
    if (!(x->mark[key] & bit)) {
        x->mark[key] |= bit;
        if (bit == 1)
            x->touched[x->n_tq++] = key;
        else
            x->touched[x->n_keys + x->n_tp++] = key;
    }
}

/* The waiting rank's walk: summed per key. */
CP_INLINE void sink_p(walk_t *w, int32_t rank_i, int kind, int64_t d, int32_t node)
{
    (void)rank_i;
    rc_t *x = w->ctx;
    int32_t key = seg_key(x, kind, node);
    touch(x, key, 2);
    x->accp[key] += d;
    if (++x->n_walk >= CP_RC_SEG)
        w->stop = true;
}

/* The root causes' walks (see WK_Q, WK_P). */
static void walk_q(walk_t *w, int32_t rank_i, int32_t node)
{
    walk_core(w, WK_Q, rank_i, node, true);
}

static void walk_p(walk_t *w, int32_t rank_i, int32_t node)
{
    walk_core(w, WK_P, rank_i, node, true);
}

static void rc_free(rc_t *x)
{
    free(x->keys);
    free(x->ktab.slot);
    free(x->nkey);
    free(x->wkey);
    free(x->mr);
    free(x->hmr);
    free(x->segs);
    free(x->cross);
    free(x->accq);
    free(x->accp);
    free(x->touched);
    free(x->mark);
    free(x->cs);
    free(x->ctab.slot);
    free(x->ann);
    free(x->aoff);
    free(x->in_at);
    free(x->fc_at);
    free(x->fc);
}

/* Sort each instance's member ranks mr[I.m0 .. I.m0 + I.n) of inst[0 .. n). */
static void member_ranks_sort(int32_t *mr, const cp_inst_t *inst, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int32_t *v = mr + inst[i].m0;
        uint32_t k = 1;
        while (k < inst[i].n && v[k - 1] <= v[k])
            k++;
        if (k < inst[i].n) /* members usually come in rank order already */
            qsort(v, inst[i].n, sizeof *v, mt_cmp_i32);
    }
}

/* Keys of every node and the sorted member ranks of every instance (GPU
 * and host). */
static int rc_init(const cp_graph_t *g, rc_t *x)
{
    size_t nn = g->n_nodes ? g->n_nodes : 1;
    x->g = g;
    x->nkey = mt_big_malloc(nn * sizeof *x->nkey);
    x->wkey = mt_big_malloc(nn * sizeof *x->wkey);
    x->mr = malloc((g->n_imem ? g->n_imem : 1) * sizeof *x->mr);
    if (itab_init(&x->ktab, 64) || itab_init(&x->ctab, 64) || !x->nkey || !x->wkey || !x->mr)
        return -1;
    if (key_of(x, MT_RC_HOST, "", 0) != RC_KEY_HOST || key_of(x, MT_RC_IDLE, "", 0) != RC_KEY_IDLE)
        return -1;
    /* A rank's nodes borrow their names from its string pool, so a name
     * repeats as the same pointer: a small cache by pointer spares most
     * hashes of the bytes (they were 3/4 of the root causes' cost on a
     * 256-rank job). */
    enum { NC = 256 };
    struct {
        const char *name;
        uint32_t len, cls;
        int32_t key, wkey; /* wkey -1: not looked up yet */
    } nc[NC];
    memset(nc, 0, sizeof nc);
    for (size_t k = 0; k < g->n_nodes; k++) {
        const cp_node_t *n = &g->nodes[k];
        size_t h = (size_t)(((uintptr_t)n->name >> 3) * 0x9e3779b97f4a7c15ULL >> 56) % NC;
        if (!(nc[h].name == n->name && n->name && nc[h].len == n->name_len && nc[h].cls == n->cls)) {
            uint32_t kind = n->cls == MT_AN_COMPUTE ? MT_RC_COMPUTE
                            : n->cls == MT_AN_COMM  ? MT_RC_COMM_TRANSFER
                                                    : MT_RC_MEMORY;
            int32_t key = key_of(x, kind, n->name, n->name_len);
            if (key < 0)
                return -1;
            nc[h].name = n->name;
            nc[h].len = n->name_len;
            nc[h].cls = n->cls;
            nc[h].key = key;
            nc[h].wkey = -1;
        }
        x->nkey[k] = nc[h].key;
        x->wkey[k] = -1;
        if (n->inst >= 0 && n->cls == MT_AN_COMM) {
            if (nc[h].wkey < 0 && (nc[h].wkey = key_of(x, MT_RC_COMM_WAIT, n->name, n->name_len)) < 0)
                return -1;
            x->wkey[k] = nc[h].wkey;
        }
    }
    for (size_t i = 0; i < g->n_imem; i++)
        x->mr[i] = g->nodes[g->imem[i]].rank_i;
    member_ranks_sort(x->mr, g->inst, g->n_inst);
    x->hmr = malloc((g->n_hmem ? g->n_hmem : 1) * sizeof *x->hmr);
    if (!x->hmr)
        return -1;
    for (size_t i = 0; i < g->n_hmem; i++)
        x->hmr[i] = g->syncs[g->hmem[i]].rank_i;
    member_ranks_sort(x->hmr, g->hin, g->n_hin);
    /* per rank: its annotations and "none" */
    x->aoff = malloc((g->n_ranks + 1) * sizeof *x->aoff);
    if (!x->aoff)
        return -1;
    x->aoff[0] = 0;
    for (size_t r = 0; r < g->n_ranks; r++)
        x->aoff[r + 1] = x->aoff[r] + g->ranks[r].an->n_annots + 1;
    x->ann = calloc(x->aoff[g->n_ranks] ? x->aoff[g->n_ranks] : 1, sizeof *x->ann);
    x->accq = calloc(x->n_keys, sizeof *x->accq);
    x->accp = calloc(x->n_keys, sizeof *x->accp);
    x->touched = malloc(2 * x->n_keys * sizeof *x->touched);
    x->mark = calloc(x->n_keys, 1);
    size_t nr = g->n_ranks ? g->n_ranks : 1;
    x->in_at = calloc(nr, sizeof *x->in_at);
    x->fc_at = calloc(nr, sizeof *x->fc_at);
    x->fc = malloc(nr * sizeof *x->fc);
    return x->ann && x->accq && x->accp && x->touched && x->mark && x->in_at && x->fc_at && x->fc ? 0 : -1;
}

/* Charge the wait of one participant (critpath.h "root causes"): the late
 * rank's segments segs[0 .. npos) against the waiting rank's walk, whose
 * sums are in accp. */
static int rc_charge(rc_t *x, mt_critpath_t *c, int32_t q_rank_i, size_t npos, int64_t wait)
{
    /* The late rank's sums depend only on its walk and npos: kept from the
     * previous waiter when they are the same (an instance's waiters
     * usually share their first crossing) */
    if (x->q_stamp != x->stamp || x->q_npos != npos) {
        for (size_t i = 0; i < x->n_tq; i++) {
            x->accq[x->touched[i]] = 0;
            x->mark[x->touched[i]] &= (uint8_t)~1u;
        }
        x->n_tq = 0;
        for (size_t i = 0; i < npos; i++) {
            touch(x, x->segs[i].key, 1);
            x->accq[x->segs[i].key] += x->segs[i].d;
        }
        for (size_t i = 0; i < npos; i++)
            x->segs[i].fq = (double)x->segs[i].d / (double)x->accq[x->segs[i].key];
        x->q_stamp = x->stamp;
        x->q_npos = npos;
    }
    /* a key of the waiting rank alone has accq 0: it adds nothing */
    int64_t pos = 0;
    for (size_t i = 0; i < x->n_tq; i++) {
        int32_t k = x->touched[i];
        if (x->accq[k] > x->accp[k])
            pos += x->accq[k] - x->accp[k];
    }
    int64_t att = pos < wait ? pos : wait;
    double cum = 0.0; /* rounded as a running sum: the charges add up to att */
    int64_t given = 0;
    for (size_t i = 0; i < npos && att > 0; i++) {
        rc_seg_t *sg = &x->segs[i];
        int64_t ex = x->accq[sg->key] - x->accp[sg->key];
        if (ex <= 0)
            continue;
        cum += (double)att * ((double)ex / (double)pos) * sg->fq;
        int64_t to = (int64_t)(cum + 0.5);
        if (to > att)
            to = att;
        int64_t v = to - given;
        if (v <= 0)
            continue;
        given = to;
        if (sg->cause < 0 && (sg->cause = cause_of(x, sg->key, sg->rank_i)) < 0)
            return -1;
        x->cs[sg->cause].ns += v;
        c->rc_kind_ns[sg->kind] += v;
        rc_ann_t *an = &x->ann[sg->ann];
        an->ns += v;
        an->kind_ns[sg->kind] += v;
        c->attributed_ns += v;
        if (sg->rank_i == q_rank_i)
            c->short_ns += v;
        else
            c->long_ns += v;
        c->ranks[sg->rank_i].caused_ns += v;
    }
    for (size_t i = 0; i < x->n_tp; i++) {
        int32_t k = x->touched[x->n_keys + i];
        x->accp[k] = 0;
        x->mark[k] &= (uint8_t)~2u;
    }
    x->n_tp = 0;
    return 0;
}

/* The top (rank, annotation) causes into c->by_annot: kind is the kind
 * with the most of its time (the lowest on ties). */
static int annot_causes(const cp_graph_t *g, const rc_t *x, mt_critpath_t *c)
{
    size_t n = 0;
    for (size_t i = 0; i < x->aoff[g->n_ranks]; i++)
        n += x->ann[i].ns > 0;
    mt_cp_name_t *v = calloc(n ? n : 1, sizeof *v);
    if (!v)
        return -1;
    size_t nv = 0;
    for (size_t r = 0; r < g->n_ranks; r++) {
        const mt_rank_analysis_t *a = g->ranks[r].an;
        for (size_t k = 0; k <= a->n_annots; k++) {
            const rc_ann_t *e = &x->ann[x->aoff[r] + k];
            if (e->ns <= 0)
                continue;
            uint32_t best = 0;
            for (uint32_t q = 1; q < MT_RC_KIND_COUNT_; q++)
                if (e->kind_ns[q] > e->kind_ns[best])
                    best = q;
            mt_an_str_t nm = k ? a->annots[k - 1] : (mt_an_str_t){0, 0};
            v[nv] = (mt_cp_name_t){.rank = g->ranks[r].rank, .kind = best, .ns = e->ns};
            if (!(v[nv].name = strndup(nm.len ? a->strings + nm.off : "", nm.len))) {
                names_free(v, nv);
                return -1;
            }
            nv++;
        }
    }
    c->by_annot = v;
    c->n_by_annot = names_keep_top(v, nv);
    return 0;
}

/* Charge the waits of the members of instance I (host: a host
 * collective, its members syncs; else a GPU one, its members nodes) to
 * their causes. 0, or -1 out of memory. Not forced inline: one copy keeps
 * walk_p and rc_charge inlined into it (two forced copies called them:
 * mt_critpath_run 1.2 % more instructions on the 256-rank job of
 * scripts/bench, against 0.17 % so). */
static int rc_inst(const cp_graph_t *g, mt_critpath_t *c, rc_t *x, const cp_inst_t *I, bool host)
{
    const int32_t *mem = host ? g->hmem : g->imem;
    /* a member's arrival, rank and rank step */
#define RC_S(id) (host ? g->syncs[id].s : g->nodes[id].s)
#define RC_RANK(id) (host ? g->syncs[id].rank_i : g->nodes[id].rank_i)
#define RC_RSTEP(id) (host ? g->syncs[id].rstep : g->nodes[id].rstep)
    if (I->last < 0)
        return 0;
    const int32_t q = I->last, q_rank = RC_RANK(q), q_rstep = RC_RSTEP(q);
    if (q_rstep < 0 || g->rs[q_rstep].job < 0 || !c->steps[g->rs[q_rstep].job].used)
        return 0;
    int64_t t0 = c->steps[g->rs[q_rstep].job].start_ns;
    bool walked = false;
    int64_t qend = t0;
    for (uint32_t k = 0; k < I->n; k++) {
        int32_t pid = mem[I->m0 + k];
        const int64_t ps = RC_S(pid);
        const int32_t p_rank = RC_RANK(pid);
        int64_t wait = I->maxstart - ps;
        if (pid == q || wait <= 0 || p_rank == q_rank)
            continue;
        c->wait_ns += wait;
        if (!walked) {
            /* the late rank's walk, once per instance */
            x->n_segs = x->n_cross = x->n_walk = x->fc_next = x->n_irank = 0;
            x->inst = I;
            x->stamp++;
            const int32_t *mr = (host ? x->hmr : x->mr) + I->m0;
            for (uint32_t m = 0; m < I->n; m++) {
                x->n_irank += x->in_at[mr[m]] != x->stamp;
                x->in_at[mr[m]] = x->stamp;
            }
            walk_t wq = {.g = g, .c = c, .t0 = t0, .cur = RC_S(q), .ctx = x};
            /* a host arrival is walked back on its host (node -1) */
            walk_q(&wq, q_rank, host ? -1 : q);
            if (x->err)
                return -1;
            qend = wq.cur;
            walked = true;
        }
        /* the previous synchronisation point: the first instance on
         * the late rank's walk that p took part in */
        size_t npos = x->n_segs;
        int64_t w0 = qend;
        int32_t y = first_cross(x, p_rank);
        if (y >= 0) {
            npos = x->cross[y].pos;
            w0 = x->cross[y].t;
        }
        x->n_walk = 0;
        walk_t wp = {.g = g, .c = c, .t0 = w0, .cur = ps, .ctx = x};
        walk_p(&wp, p_rank, host ? -1 : pid);
        if (rc_charge(x, c, q_rank, npos, wait))
            return -1;
    }
#undef RC_S
#undef RC_RANK
#undef RC_RSTEP
    return 0;
}

static mt_status_t root_causes(const cp_graph_t *g, mt_critpath_t *c)
{
    rc_t x = {0};
    mt_status_t st = MT_ERR_NOMEM;
    if (rc_init(g, &x))
        goto out;
    for (size_t ii = 0; ii < g->n_inst; ii++) {
        const cp_inst_t *I = &g->inst[ii];
        if (ii + 1 < g->n_inst) {
            /* the next instance's members (each in another rank's part of
             * the nodes) and the 8 nodes before each, where their waiting
             * ranks' walks go back first, and those nodes' keys, fetched
             * while this one's walks
             * run: each first read of a member, and of most nodes its walk
             * reached, was a cache miss on a big job */
            const cp_inst_t *J = &g->inst[ii + 1];
            for (uint32_t k = 0; k < J->n; k++) {
                int32_t m = g->imem[J->m0 + k];
                const char *a = (const char *)&g->nodes[m > 8 ? m - 8 : 0], *b = (const char *)&g->nodes[m + 1];
                for (; a < b; a += 64)
                    __builtin_prefetch(a);
                __builtin_prefetch(&x.nkey[m > 8 ? m - 8 : 0]); /* their keys (seg_key) */
            }
        }
        if (rc_inst(g, c, &x, I, false))
            goto out;
    }
    /* host collectives (gloo): a member blocked in its range until the
     * last arrival waited as a GPU instance's member does; the walks start
     * on the hosts, at the arrivals */
    for (size_t ii = 0; ii < g->n_hin; ii++) {
        if (rc_inst(g, c, &x, &g->hin[ii], true))
            goto out;
    }
    /* the top causes */
    mt_cp_name_t *top = calloc(x.n_cs ? x.n_cs : 1, sizeof *top);
    if (!top)
        goto out;
    size_t nt = 0;
    for (size_t i = 0; i < x.n_cs; i++) {
        const rc_key_t *k = &x.keys[x.cs[i].key];
        top[nt] = (mt_cp_name_t){.rank = g->ranks[x.cs[i].rank_i].rank, .kind = k->kind, .ns = x.cs[i].ns};
        if (!(top[nt].name = strndup(k->name, k->len))) {
            names_free(top, nt);
            goto out;
        }
        nt++;
    }
    c->causes = top;
    c->n_causes = names_keep_top(top, nt);
    if (annot_causes(g, &x, c))
        goto out;
    st = MT_OK;
out:
    rc_free(&x);
    return st;
}

/* ---- the driver ---- */

/* The p50 of the projected periods of a scenario replayed as one run (its
 * job step ends in r->jend): each the measured period + (its change in the
 * scenario's run - its change in the unchanged run, b_end); v is scratch
 * of c->n_steps. */
static int64_t carried_period(const mt_critpath_t *c, const rp_t *r, const int64_t *b_end, int64_t *v)
{
    size_t n = 0;
    for (size_t j = 1; j < c->n_steps; j++)
        if (cp_step_has_period(c, j))
            v[n++] = c->steps[j].end_ns - c->steps[j - 1].end_ns + (r->jend[j] - r->jend[j - 1]) -
                     (b_end[j] - b_end[j - 1]);
    return mt_stats_pct_i64(v, n, 50);
}

/* The ranges (mt_cp_whatif_t.ranged, docs/whatif.md "Ranges"): the
 * what-ifs again with the inferred stream waits of communication kernels
 * pinned (cp_scen_t.pin_inferred), each change projected on the measured
 * steps and periods against the unchanged run pinned the same way. */
typedef struct alt {
    int64_t *base;  /* per job step: the pinned unchanged replay's step times */
    int64_t *bend;  /* pipelines: its job step ends */
    uint64_t waits; /* the pinned waits: communication kernels bound by an inferred one (CP_H_PXINF) */
} alt_t;

/* x's other binding from the pinned replay of its scenario (times; r
 * swept, for a pipeline's periods); per and tmp scratch of c->n_steps. */
static void alt_set(const mt_critpath_t *c, const alt_t *a, const int64_t *times, const rp_t *r, int64_t *per,
                    int64_t *tmp, mt_cp_whatif_t *x)
{
    x->alt_waits = a->waits;
    size_t n = 0;
    for (size_t j = 0; j < c->n_steps && !x->period_only && x->steps; j++) {
        const mt_cp_step_t *s = &c->steps[j];
        if (s->refused || !s->used)
            continue;
        int64_t v = s->time_ns + (times[j] - a->base[j]);
        tmp[n++] = v > 0 ? v : 0;
    }
    if (n) {
        x->alt_p50_ns = mt_stats_pct_i64(tmp, n, 50);
        int64_t d = x->alt_p50_ns - x->p50_ns;
        x->ranged = (double)(d < 0 ? -d : d) >= 0.005 * (double)(x->p50_ns + x->gain_ns);
    }
    if (x->carried) {
        x->alt_period_p50_ns = carried_period(c, r, a->bend, per);
        int64_t d = x->alt_period_p50_ns - x->period_p50_ns;
        x->period_ranged = (double)(d < 0 ? -d : d) >= 0.005 * (double)c->period_p50_ns;
    }
}

/* Pipeline stage q's what-if factors into fac: its ranks' activities
 * other than communication at f. */
static void stage_factors(const cp_graph_t *g, const mt_cp_request_t *rq, size_t q, double f, double *fac)
{
    for (size_t i = 0; i < g->n_nodes; i++) {
        int32_t rk = g->ranks[g->nodes[i].rank_i].rank;
        int in = 0;
        for (size_t k = rq->stage_first[q]; k < rq->stage_first[q + 1] && !in; k++)
            in = rq->stage_ranks[k] == rk;
        fac[i] = in && g->nodes[i].cls != MT_AN_COMM ? f : 1.0;
    }
}

/* What-if "pattern"'s factors into fac (--what-if kernel:GLOB=F); the
 * activities its glob matched. */
static uint64_t pattern_factors(const cp_graph_t *g, const mt_cp_request_t *rq, double *fac)
{
    uint64_t hits = 0;
    for (size_t i = 0; i < g->n_nodes; i++) {
        char buf[MT_AN_NAME_MAX + 1];
        const cp_node_t *n = &g->nodes[i];
        memcpy(buf, n->name, n->name_len);
        buf[n->name_len] = '\0';
        bool hit = fnmatch(rq->pattern, buf, 0) == 0;
        fac[i] = hit ? rq->factor : 1.0;
        hits += hit;
    }
    return hits;
}

/* The ranges without a pipeline (alt_t), after the what-ifs: the unchanged
 * run, the straggler's what-if and the better of "comm" and "launch"
 * pinned in one sweep of lanes beside each other (cp_replay3), the
 * pattern's in one replay more. "comm" and "launch" only speed things up,
 * and a pinned edge can only hold an activity back, so their pinned gain
 * is at most their own: one that gains under the 0.5 % a range needs is
 * not replayed again (fast path: on a job without a straggler this is one
 * sweep of two lanes, or none). fac, nh, r, rw[0..2] and the at[1..3]
 * arrays are scratch (at[0] = alt->base); per and tmp as for alt_set. */
static mt_status_t alt_lanes(const cp_graph_t *g, const mt_cp_request_t *rq, mt_critpath_t *c, double *fac, nh_t *nh,
                             const uint8_t *late, alt_t *alt, int64_t **at, rp_t *r, rp_t *rw, int64_t *per,
                             int64_t *tmp)
{
    int k = -1; /* the better of "comm" and "launch", when a range may show */
    for (int wi = MT_WI_COMM; wi <= MT_WI_LAUNCH; wi++) {
        const mt_cp_whatif_t *x = &c->whatif[wi];
        if (x->run && x->steps && (double)x->gain_ns >= 0.005 * (double)(x->p50_ns + x->gain_ns) &&
            (k < 0 || x->gain_ns > c->whatif[k].gain_ns))
            k = wi;
    }
    bool strag = c->whatif[MT_WI_STRAGGLER].run && c->whatif[MT_WI_STRAGGLER].steps;
    bool comm = k == MT_WI_COMM, launch = k == MT_WI_LAUNCH;
    size_t nn = 0;
    if (k >= 0 || strag) {
        at[0] = alt->base;
        for (int l = 1; l < 4; l++)
            if (!(at[l] = malloc(c->n_steps * sizeof *at[l])))
                return MT_ERR_NOMEM;
        if ((comm && rp_alloc(g, &rw[0])) || (launch && rp_alloc(g, &rw[1])) || (strag && rp_alloc(g, &rw[2])))
            return MT_ERR_NOMEM;
        /* the straggler's factors again: the pattern's took fac over */
        if (strag && straggler_factors(g, rq, fac, nh, &nn))
            return MT_ERR_NOMEM;
        rp_t lanes[4] = {*r, rw[0], rw[1], rw[2]};
        cp_replay3(g, lanes, comm, launch, strag ? fac : NULL, strag ? late : NULL, true, c, at);
        *r = lanes[0];
        for (int l = 0; l < 3; l++) {
            rp_free(&rw[l]);
            rw[l] = (rp_t){0};
        }
        if (k >= 0)
            alt_set(c, alt, at[comm ? 1 : 2], r, per, tmp, &c->whatif[k]);
        if (strag)
            alt_set(c, alt, at[3], r, per, tmp, &c->whatif[MT_WI_STRAGGLER]);
    }
    if (c->whatif[MT_WI_PATTERN].run && c->whatif[MT_WI_PATTERN].steps) {
        mt_cp_whatif_t *x = &c->whatif[MT_WI_PATTERN];
        scen_t b = {.pin_inferred = 1}, w = {.pin_inferred = 1, .factor = fac};
        if (!at[1] && !(at[1] = malloc(c->n_steps * sizeof *at[1])))
            return MT_ERR_NOMEM;
        if (k < 0 && !strag) /* the unchanged run pinned: not swept above */
            cp_replay(g, &b, r, c, alt->base);
        pattern_factors(g, rq, fac);
        cp_replay(g, &w, r, c, at[1]);
        alt_set(c, alt, at[1], r, per, tmp, x);
    }
    return MT_OK;
}

/* mt_cp_dist_in_t.members_of: the graph's instance members by (rank,
 * index), with their transfers (the nodes are rank by rank). */
static mt_status_t dist_members(const void *ctx, mt_cp_member_t **out, size_t *n_out)
{
    const cp_graph_t *g = ctx;
    size_t nm = 0;
    for (size_t i = 0; i < g->n_nodes; i++)
        nm += g->nodes[i].inst >= 0;
    mt_cp_member_t *m = malloc((nm ? nm : 1) * sizeof *m);
    if (!m)
        return MT_ERR_NOMEM;
    nm = 0;
    for (size_t r = 0; r < g->n_ranks; r++) {
        const cp_rank_t *R = &g->ranks[r];
        for (size_t k = 0; k < R->n_nodes; k++) {
            const cp_node_t *n = &g->nodes[R->node0 + k];
            if (n->inst >= 0)
                m[nm++] = (mt_cp_member_t){R->rank, (uint32_t)k, cp_node_T(g, n)};
        }
    }
    *out = m;
    *n_out = nm;
    return MT_OK;
}

/* The whole-job statistics by reductions (mt_cp_request_t.reduce): what
 * only the graph knows yet handed to the hook, which runs them with the
 * other processes (cp_dist.c); the members only on demand (the instances'
 * owners work them out when the match was sharded). MT_OK or the hook's
 * error. */
static mt_status_t dist_run(const cp_graph_t *g, const mt_cp_request_t *rq, mt_cp_dist_t **out)
{
    /* the job steps: one per step number, in order (as mt_critpath_run
     * lays them out); used as there */
    size_t ns = 0;
    int64_t *steps = malloc(g->n_rs * sizeof *steps);
    if (!steps)
        return MT_ERR_NOMEM;
    for (size_t i = 0; i < g->n_rs; i++)
        steps[i] = g->rs[i].step;
    qsort(steps, g->n_rs, sizeof *steps, mt_cmp_i64);
    for (size_t i = 0; i < g->n_rs; i++)
        if (!ns || steps[ns - 1] != steps[i])
            steps[ns++] = steps[i];
    size_t u0 = ns <= (size_t)(rq->warmup > 0 ? rq->warmup : 0) ? 0 : (size_t)(rq->warmup > 0 ? rq->warmup : 0);
    mt_cp_dist_in_t in = {.used_steps = steps + u0, .n_used = ns - u0, .members_of = dist_members, .members_ctx = g,
                          .rq = rq};
    mt_status_t st = rq->reduce(rq->hook_ctx, &in, out);
    free(steps);
    return st;
}

mt_status_t mt_critpath_run(const mt_cp_request_t *rq, const mt_rank_analysis_t *const *an, size_t n_an,
                            const mt_clock_t *clocks, const int32_t *ranks, size_t n_ranks, const mt_crow_t *rows,
                            size_t n_rows, const mt_match_t *m, mt_critpath_t **out)
{
    *out = NULL;
    cp_graph_t g;
    mt_status_t st = cp_graph_build(an, n_an, clocks, ranks, n_ranks, rows, n_rows, m, rq->n_absent > 0, rq->rows_done,
                                    rq->hook_ctx, &g);
    if (st != MT_OK)
        return st;
    mt_cp_dist_t *dist = NULL;
    if (rq->reduce && g.n_rs && (rq->n_stragglers || rq->ideal) && (st = dist_run(&g, rq, &dist)) != MT_OK) {
        cp_graph_free(&g);
        return st;
    }
    g.dist = dist;
    if (rq->built)
        rq->built(rq->hook_ctx);
    if (!g.n_rs) {
        cp_graph_free(&g);
        return MT_OK;
    }
    st = MT_ERR_NOMEM;
    rp_t r = {0}, rw[3] = {{0}, {0}, {0}};
    int64_t *wt[3] = {NULL, NULL, NULL};
    alt_t alt = {0};                          /* the ranges' pinned unchanged run */
    int64_t *at[4] = {NULL, NULL, NULL, NULL}; /* without a pipeline: the pinned lanes of cp_replay3 */
    mt_critpath_t *c = calloc(1, sizeof *c);
    int64_t *times = NULL, *meas = NULL, *tmp = NULL, *node_ns = NULL;
    int32_t *rs_at = NULL;
    int64_t *b_end = NULL, *b_time = NULL, *per = NULL; /* pipelines: the unchanged run, periods */
    double *fac = NULL, *err = NULL;
    nh_t *nh = NULL;
    uint8_t *late = NULL; /* per rank: 1 a straggler (cp_scen_t.late), 2 with a slow host (below) */
    if (!c)
        goto out;
    if (!(late = calloc(g.n_ranks ? g.n_ranks : 1, 1)))
        goto out;
    for (size_t i = 0; i < g.n_ranks; i++)
        for (size_t q = 0; q < rq->n_stragglers; q++)
            late[i] |= g.ranks[i].rank == rq->stragglers[q];
    /* the rank steps' latest syncs before their starts and host ends (the
     * nodes' and syncs' below, with their job steps): each replay reads a
     * shift by index, with no search */
    for (size_t i = 0; i < g.n_rs; i++) {
        cp_rs_t *x = &g.rs[i];
        x->sb_start = (int32_t)sync_before(&g, &g.ranks[x->rank_i], x->start);
        x->sb_end = (int32_t)sync_before(&g, &g.ranks[x->rank_i], x->cpu_end);
    }
    c->warmup = rq->warmup;
    /* ---- job steps ---- */
    g.js = malloc(g.n_rs * sizeof *g.js);
    c->rank_steps = calloc(g.n_rs, sizeof *c->rank_steps);
    c->steps = calloc(g.n_rs, sizeof *c->steps);
    c->ranks = calloc(g.n_ranks ? g.n_ranks : 1, sizeof *c->ranks);
    if (!g.js || !c->rank_steps || !c->steps || !c->ranks)
        goto out;
    {
        /* (step, rank, start): rank steps are rank by rank, each by start,
         * so a stable sort by step is enough */
        uint64_t *key = malloc(g.n_rs * sizeof *key);
        uint32_t *perm = malloc(g.n_rs * sizeof *perm);
        int bad = !key || !perm;
        for (size_t i = 0; !bad && i < g.n_rs; i++) {
            key[i] = mt_sort_key_i64(g.rs[i].step);
            perm[i] = (uint32_t)i;
        }
        bad = bad || mt_sort_u64(key, perm, g.n_rs) != MT_OK;
        for (size_t i = 0; !bad && i < g.n_rs; i++)
            g.js[i] = (int32_t)perm[i];
        free(key);
        free(perm);
        if (bad)
            goto out;
    }
    int64_t residual = 0;
    for (size_t i = 0; i < g.n_ranks; i++) {
        c->ranks[i].rank = g.ranks[i].rank;
        if (g.ranks[i].clk && g.ranks[i].clk->residual_p99_ns > residual)
            residual = (int64_t)g.ranks[i].clk->residual_p99_ns;
    }
    c->n_ranks = g.n_ranks;
    size_t w = 0; /* rank steps kept: one per (step, rank) */
    for (size_t a = 0; a < g.n_rs;) {
        size_t b = a;
        while (b < g.n_rs && g.rs[g.js[b]].step == g.rs[g.js[a]].step)
            b++;
        mt_cp_step_t *s = &c->steps[c->n_steps];
        s->step = g.rs[g.js[a]].step;
        s->first = (uint32_t)w;
        s->start_ns = INT64_MAX;
        s->end_ns = INT64_MIN;
        for (size_t k = a; k < b; k++) {
            if (k > a && g.rs[g.js[k]].rank_i == g.rs[g.js[k - 1]].rank_i)
                continue; /* a step number seen twice on a rank: the first */
            const cp_rs_t *x = &g.rs[g.js[k]];
            g.js[w] = g.js[k];
            mt_cp_rank_step_t *y = &c->rank_steps[w++];
            y->rank = g.ranks[x->rank_i].rank;
            y->start_ns = x->start;
            y->end_ns = x->end;
            y->compute_ns = x->src->compute_ns;
            y->comm_ns = x->src->comm_ns;
            y->memory_ns = x->src->memory_ns;
            y->idle_ns = x->src->idle_ns;
            if (x->start < s->start_ns)
                s->start_ns = x->start;
            if (x->end > s->end_ns) {
                s->end_ns = x->end;
                s->end_rank = y->rank;
            }
        }
        s->n = (uint32_t)(w - s->first);
        s->time_ns = s->end_ns - s->start_ns;
        for (uint32_t k = s->first; k < s->first + s->n; k++)
            g.rs[g.js[k]].job = (int32_t)c->n_steps;
        c->n_steps++;
        a = b;
    }
    c->n_rank_steps = w;
    /* each node's job step and the latest sync before its launch end, in
     * one pass over the nodes (72 bytes each, the graph's largest array);
     * likewise the syncs (a sync's start is usually after the sync
     * before it) */
    long guess = -1;
    for (size_t i = 0; i < g.n_nodes; i++) {
        cp_node_t *n = &g.nodes[i];
        n->job = n->rstep >= 0 ? g.rs[n->rstep].job : -1;
        n->lsync = -1;
        if (n->L != INT64_MIN) {
            n->lsync = (int32_t)(guess = sync_near(&g, &g.ranks[n->rank_i], n->L, guess));
            if (g.n_hin)
                n->lsync = (int32_t)host_cover(&g, &g.ranks[n->rank_i], n->L, n->lsync, -1);
        }
    }
    for (size_t i = 0; i < g.n_syncs; i++) {
        cp_sync_t *y = &g.syncs[i];
        y->job = y->rstep >= 0 ? g.rs[y->rstep].job : -1;
        /* a rank's syncs are in end order (critpath.c place_pauses) */
        y->bar = y->hi >= 0 ? (int32_t)i
                 : i > 0 && g.syncs[i - 1].rank_i == y->rank_i ? g.syncs[i - 1].bar
                                                                 : -1;
        y->sb = (int32_t)sync_near(&g, &g.ranks[y->rank_i], y->s, (long)i - 1);
        if (g.n_hin)
            y->sb = (int32_t)host_cover(&g, &g.ranks[y->rank_i], y->s, y->sb, (long)i);
        y->jnext = -1;
    }
    /* the edge from a rank step's last sync to the rank's next step
     * (docs/whatif.md, "host sync -> next step"): where the host waited
     * there for its GPU's queue (the activity it waited for started after
     * the call: its end set by the GPU) and started the next step within
     * CP_NEXT_GAP of it, that start follows the sync: a replay moves it,
     * and what the rank does after it, by how far the sync moved against
     * the other ranks (edge_fill). A slow GPU's host that waits for it at
     * the step's end (the gradients' allreduce, then the optimizer) starts
     * each next step late, and a what-if that speeds it must start it
     * earlier. */
    for (size_t i = 0; i < g.n_rs; i++) {
        const cp_rs_t *x = &g.rs[i];
        if (x->sb_start < 0)
            continue;
        cp_sync_t *y = &g.syncs[x->sb_start];
        if (y->job >= 0 && y->job != x->job && y->hi == -1 && y->w >= 0 && g.nodes[y->w].s > y->s &&
            x->start - y->e <= CP_NEXT_GAP) {
            y->jnext = x->job;
            g.n_jnext++;
        }
    }
    /* the replay order and the hot records need the job fields; the
     * replay's arrays are allocated after them (no page of theirs is
     * touched before the first replay) */
    if (build_order(&g))
        goto out;
    free(g.by_end); /* read by nothing after the order: its pages freed before the replay's */
    g.by_end = NULL;
    if (rp_alloc(&g, &r))
        goto out;
    for (size_t j = 0; j < c->n_steps; j++)
        c->steps[j].used = (int)j >= rq->warmup || c->n_steps <= (size_t)(rq->warmup > 0 ? rq->warmup : 0);
    /* ---- near-critical ranks ---- */
    for (size_t j = 0; j < c->n_steps; j++) {
        mt_cp_step_t *s = &c->steps[j];
        int64_t slack = 2 * residual;
        if (s->time_ns / 1000 > slack)
            slack = s->time_ns / 1000;
        if (slack > c->slack_ns)
            c->slack_ns = slack;
        uint32_t near = 0;
        for (uint32_t k = s->first; k < s->first + s->n; k++) {
            mt_cp_rank_step_t *y = &c->rank_steps[k];
            y->near_critical = y->end_ns >= s->end_ns - slack;
            near += (uint32_t)y->near_critical;
            if (s->used) { /* c->ranks is g.ranks' order: no search (it made this O(steps x ranks^2)) */
                mt_cp_rank_t *cr = &c->ranks[g.rs[g.js[k]].rank_i];
                cr->near_critical += (uint32_t)y->near_critical;
                cr->end_rank += y->rank == s->end_rank;
            }
        }
        s->undecided = near > 1;
    }
    /* ---- replay with the measured durations ---- */
    times = malloc(c->n_steps * sizeof *times);
    meas = malloc(c->n_steps * sizeof *meas);
    tmp = malloc(c->n_steps * sizeof *tmp);
    err = malloc(c->n_steps * sizeof *err);
    fac = mt_big_malloc((g.n_nodes ? g.n_nodes : 1) * sizeof *fac);
    nh = mt_big_malloc((g.n_nodes ? g.n_nodes : 1) * sizeof *nh);
    if (!times || !meas || !tmp || !err || !fac || !nh)
        goto out;
    /* A pipeline (two stages or more) is replayed as one run with shifts
     * carried from step to step: chunk k of a stage waits for chunk k - 1,
     * so a change that speeds every chunk shows only when the chunks see
     * each other's replayed times (docs/whatif.md "Pipelines"). Every
     * scenario is then compared with the unchanged run (b_time, b_end),
     * and also projects the period. Without one, the what-ifs "comm"
     * and "launch" are replayed beside the measured one (cp_replay3),
     * their step times kept for the what-ifs below (wt). */
    /* A straggler whose own host is slow (its GPU idles waiting for its
     * launches, past each step's first: that gap is a late start, a pause)
     * by 2 % of the used steps' time or more over the median rank: the
     * straggler what-if drops its launch gaps (late bit 2), and so does
     * the ideal what-if wherever it makes that rank ideal. Only for a
     * named straggler: over every rank the measure is noisy on real jobs
     * (on the DLRM set it named ranks 1, 3, 4 and 5, not rank 7, the
     * straggler, and moved M_W from rank 7 to rank 4). */
    if (rq->n_stragglers && g.n_ranks >= 2) {
        double *li = calloc(g.n_ranks, sizeof *li), *tmpv = malloc(g.n_ranks * sizeof *tmpv);
        if (!li || !tmpv) {
            free(li);
            free(tmpv);
            goto out;
        }
        int32_t prev_rs = -1;
        for (size_t i = 0; i < g.n_nodes; i++) {
            const cp_node_t *n = &g.nodes[i];
            bool first = n->rstep != prev_rs;
            prev_rs = n->rstep;
            if (first || n->bind != CP_B_LAUNCH || n->job < 0 || !c->steps[n->job].used)
                continue;
            int64_t r0 = n->pstream >= 0 ? g.nodes[n->pstream].e : INT64_MIN;
            if (n->px >= 0 && g.nodes[n->px].e > r0)
                r0 = g.nodes[n->px].e;
            if (r0 != INT64_MIN && n->s > r0)
                li[n->rank_i] += (double)(n->s - r0);
        }
        memcpy(tmpv, li, g.n_ranks * sizeof *tmpv);
        double med = mt_stats_median_f64(tmpv, g.n_ranks), run = 0;
        for (size_t j = 0; j < c->n_steps; j++)
            run += c->steps[j].used ? (double)c->steps[j].time_ns : 0;
        for (size_t i = 0; i < g.n_ranks; i++)
            if ((late[i] & 1) && li[i] - med >= 0.02 * run)
                late[i] |= 2;
        free(li);
        free(tmpv);
    }
    bool pipe = rq->n_stages >= 2 && rq->stage_ranks && rq->stage_first && c->n_steps >= 2;
    if (pipe) {
        scen_t sc0 = {0};
        cp_replay(&g, &sc0, &r, c, times);
        if (edge_base(&g, c, &r))
            goto out;
    } else {
        bool comm = g.n_inst > 0, strag = rq->n_stragglers > 0;
        /* the straggler what-if's factors (below) now: its replay is a
         * fourth lane (fast path: one pass over the graph less when the
         * job has a straggler) */
        size_t nn = 0;
        if (strag && straggler_factors(&g, rq, fac, nh, &nn))
            goto out;
        wt[0] = malloc(c->n_steps * sizeof *wt[0]);
        wt[1] = malloc(c->n_steps * sizeof *wt[1]);
        wt[2] = strag ? malloc(c->n_steps * sizeof *wt[2]) : NULL;
        if (!wt[0] || !wt[1] || (strag && !wt[2]) || (comm && rp_alloc(&g, &rw[0])) || rp_alloc(&g, &rw[1]) ||
            (strag && rp_alloc(&g, &rw[2])))
            goto out;
        rp_t lanes[4] = {r, rw[0], rw[1], rw[2]};
        cp_replay3(&g, lanes, comm, true, strag ? fac : NULL, strag ? late : NULL, false, c,
                   (int64_t *const[4]){times, wt[0], wt[1], wt[2]});
        r = lanes[0];
        if (edge_base(&g, c, &r))
            goto out;
        /* done with: freed before the paths' arrays come, and the "launch"
         * lane's ends taken over as node_ns (memory touched already: a
         * fresh page costs more than clearing it) */
        node_ns = rw[1].e;
        rw[1].e = NULL;
        memset(node_ns, 0, (g.n_nodes ? g.n_nodes : 1) * sizeof *node_ns);
        rp_free(&rw[0]);
        rp_free(&rw[1]);
        rp_free(&rw[2]);
        rw[0] = rw[1] = rw[2] = (rp_t){0};
    }
    if (!node_ns && !(node_ns = calloc(g.n_nodes ? g.n_nodes : 1, sizeof *node_ns)))
        goto out;
    size_t ne = 0;
    for (size_t j = 0; j < c->n_steps; j++) {
        mt_cp_step_t *s = &c->steps[j];
        s->replay_ns = times[j];
        int64_t d = times[j] - s->time_ns;
        double e = s->time_ns > 0 ? (double)(d < 0 ? -d : d) / (double)s->time_ns : 0.0;
        s->refused = e > 0.05;
        if (s->used) {
            err[ne++] = e;
            c->refused += s->refused;
        }
    }
    if (ne) {
        qsort(err, ne, sizeof *err, mt_cmp_dbl);
        c->replay_err_median = err[(ne - 1) / 2];
        c->replay_err_max = err[ne - 1];
    }
    /* ---- critical paths ---- */
    rs_at = malloc((g.n_ranks ? g.n_ranks : 1) * sizeof *rs_at);
    if (!rs_at)
        goto out;
    memset(rs_at, 0xff, (g.n_ranks ? g.n_ranks : 1) * sizeof *rs_at);
    for (size_t j = 0; j < c->n_steps; j++) {
        mt_cp_step_t *s = &c->steps[j];
        /* a step holds one rank step per rank (rank_steps[k].rank is its rank's) */
        for (uint32_t k = s->first; k < s->first + s->n; k++)
            rs_at[g.rs[g.js[k]].rank_i] = (int32_t)k;
        walk_t wk = {.g = &g, .c = c, .s = s, .t0 = s->start_ns, .cur = s->end_ns, .node_ns = node_ns, .rs_at = rs_at};
        bool walked = walk_step(&wk, j, false);
        for (uint32_t k = s->first; k < s->first + s->n; k++)
            rs_at[g.rs[g.js[k]].rank_i] = -1;
        if (!walked)
            continue;
        if (!s->used)
            continue;
        for (int k = 0; k < MT_CP_KIND_COUNT_; k++)
            c->kind_ns[k] += s->kind_ns[k];
        c->comm_absent_ns += wk.absent_ns;
        c->path_ns += s->time_ns;
        for (uint32_t k = s->first; k < s->first + s->n; k++)
            c->ranks[g.rs[g.js[k]].rank_i].path_ns += c->rank_steps[k].path_ns;
    }
    /* ---- statistics of the used steps ---- */
    size_t nu = 0;
    for (size_t j = 0; j < c->n_steps; j++)
        if (c->steps[j].used)
            tmp[nu++] = c->steps[j].time_ns;
    c->used = nu;
    if (nu) {
        qsort(tmp, nu, sizeof *tmp, mt_cmp_i64);
        c->p50_ns = mt_stats_pct_sorted(tmp, nu, 50);
        c->p90_ns = mt_stats_pct_sorted(tmp, nu, 90);
        c->p99_ns = mt_stats_pct_sorted(tmp, nu, 99);
        c->max_ns = tmp[nu - 1];
        int64_t sum = 0;
        for (size_t k = 0; k < nu; k++)
            sum += tmp[k];
        c->mean_ns = sum / (int64_t)nu;
    }
    for (size_t j = 0; j < c->n_steps; j++)
        c->steps[j].spike = c->steps[j].used && c->steps[j].time_ns * 2 > 3 * c->p50_ns && nu >= 3;
    /* ---- imbalance: the path's time of a kind minus the ranks' mean ---- */
    for (int k = 0; k < MT_CP_KIND_COUNT_; k++) {
        if (k == MT_CP_HOST)
            continue;
        int64_t own = 0;
        for (size_t j = 0; j < c->n_steps; j++) {
            const mt_cp_step_t *s = &c->steps[j];
            if (!s->used || !s->n)
                continue;
            int64_t sum = 0;
            for (uint32_t q = s->first; q < s->first + s->n; q++) {
                const mt_cp_rank_step_t *y = &c->rank_steps[q];
                sum += k == MT_CP_COMPUTE ? y->compute_ns
                       : k == MT_CP_COMM  ? y->comm_ns
                       : k == MT_CP_MEMORY ? y->memory_ns
                                           : y->idle_ns;
            }
            own += sum / s->n;
        }
        c->imbalance_ns[k] = c->kind_ns[k] - own;
    }
    /* comm on the path that may be waiting for ranks without a trace */
    c->absent_ranks = rq->n_absent;
    if (c->comm_absent_ns > c->kind_ns[MT_CP_COMM])
        c->comm_absent_ns = c->kind_ns[MT_CP_COMM];
    /* ---- top names on the path ---- */
    {
        size_t k = 0;
        cp_name_memo_t *memo = calloc(CP_NAME_MEMO, sizeof *memo);
        if (!memo)
            goto out;
        for (size_t i = 0; i < g.n_nodes; i++)
            if (node_ns[i] > 0)
                nh[k++] = (nh_t){cp_name_hash(memo, &g.nodes[i]), (int32_t)i, 0};
        free(memo);
        if (nh_sort(nh, k))
            goto out;
        size_t ng = 0;
        for (size_t a = 0; a < k;) {
            size_t b = a;
            while (b < k && nh[b].h == nh[a].h)
                b++;
            ng++;
            a = b;
        }
        c->top = calloc(ng ? ng : 1, sizeof *c->top);
        if (!c->top)
            goto out;
        for (size_t a = 0; a < k;) {
            size_t b = a;
            int64_t sum = 0;
            while (b < k && nh[b].h == nh[a].h)
                sum += node_ns[nh[b++].node];
            const cp_node_t *n = &g.nodes[nh[a].node];
            mt_cp_name_t *t = &c->top[c->n_top];
            *t = (mt_cp_name_t){.rank = -1, .kind = (uint32_t)cp_node_kind(n), .ns = sum};
            if (!(t->name = strndup(n->name, n->name_len)))
                goto out;
            c->n_top++;
            a = b;
        }
        qsort(c->top, c->n_top, sizeof *c->top, name_ns_cmp);
        for (size_t i = CP_TOP; i < c->n_top; i++)
            free(c->top[i].name);
        if (c->n_top > CP_TOP)
            c->n_top = CP_TOP;
    }
    /* ---- what-ifs (pipelines: see above) ---- */
    if (pipe) {
        b_end = malloc(c->n_steps * sizeof *b_end);
        b_time = malloc(c->n_steps * sizeof *b_time);
        per = malloc(c->n_steps * sizeof *per);
        c->stage_wi = calloc(rq->n_stages, sizeof *c->stage_wi);
        if (!b_end || !b_time || !per || !c->stage_wi)
            goto out;
        scen_t base = {.carry = 1};
        cp_replay(&g, &base, &r, c, b_time);
        memcpy(b_end, r.jend, c->n_steps * sizeof *b_end);
        size_t np = 0; /* the measured periods */
        for (size_t j = 1; j < c->n_steps; j++)
            if (cp_step_has_period(c, j))
                per[np++] = c->steps[j].end_ns - c->steps[j - 1].end_ns;
        c->periods = np;
        c->period_p50_ns = mt_stats_pct_i64(per, np, 50);
    }
    /* ---- the ranges' other binding (alt_t): the unchanged run pinned,
     * and without a pipeline the what-ifs "comm", "launch" and the
     * straggler's beside it in one sweep, as the measured one was; only
     * for a graph with communication kernels whose stream wait no event
     * names ---- */
    for (size_t k = 0; k < g.n_nodes; k++)
        alt.waits += (g.hot[k].flags & CP_H_PXINF) != 0;
    c->waits_pinned = alt.waits; /* the ideal what-if's S range too (cp_ideal_run) */
    if (alt.waits) {
        if (!(alt.base = malloc(c->n_steps * sizeof *alt.base)))
            goto out;
        if (pipe) {
            scen_t b = {.carry = 1, .pin_inferred = 1};
            if (!(alt.bend = malloc(c->n_steps * sizeof *alt.bend)))
                goto out;
            cp_replay(&g, &b, &r, c, alt.base);
            memcpy(alt.bend, r.jend, c->n_steps * sizeof *alt.bend);
        }
    }
    for (int wi = 0; wi < MT_WI_COUNT_; wi++) {
        mt_cp_whatif_t *x = &c->whatif[wi];
        scen_t sc = {.carry = pipe};
        for (size_t j = 0; j < c->n_steps; j++)
            c->steps[j].whatif_ns[wi] = -1;
        if (wi == MT_WI_STRAGGLER) {
            if (!rq->n_stragglers)
                continue;
            size_t nn = 0; /* without a pipeline: replayed beside the measured one */
            if (pipe && straggler_factors(&g, rq, fac, nh, &nn))
                goto out;
            sc.factor = fac;
            sc.late = late;
            int len = snprintf(x->label, sizeof x->label, "rank%s", rq->n_stragglers > 1 ? "s" : "");
            for (size_t i = 0; i < rq->n_stragglers && len > 0 && (size_t)len < sizeof x->label - 24; i++)
                len += snprintf(x->label + len, sizeof x->label - (size_t)len, " %d", rq->stragglers[i]);
            snprintf(x->label + len, sizeof x->label - (size_t)len, " at the median rank's speed");
        } else if (wi == MT_WI_COMM) {
            if (!g.n_inst)
                continue;
            sc.comm_transfer = 1;
            snprintf(x->label, sizeof x->label, "communication at its transfer time, no waiting");
        } else if (wi == MT_WI_LAUNCH) {
            sc.drop_launch = 1;
            snprintf(x->label, sizeof x->label, "no host launch gaps");
        } else {
            if (!rq->pattern)
                continue;
            x->matched = pattern_factors(&g, rq, fac);
            sc.factor = fac;
            snprintf(x->label, sizeof x->label, "kernels %.60s x %.3g", rq->pattern, rq->factor);
        }
        if (!pipe && wi != MT_WI_PATTERN) /* replayed with the measured one */
            memcpy(times, wt[wi == MT_WI_COMM ? 0 : wi == MT_WI_LAUNCH ? 1 : 2], c->n_steps * sizeof *times);
        else
            cp_replay(&g, &sc, &r, c, times);
        size_t n1 = 0;
        x->period_only = pipe && wi == MT_WI_COMM; /* critpath.h: its step times are no prediction */
        for (size_t j = 0; j < c->n_steps && !x->period_only; j++) {
            mt_cp_step_t *s = &c->steps[j];
            if (s->refused)
                continue;
            /* the change the model predicts, on the measured time: the
             * model's own error on the step cancels to first order */
            int64_t v = s->time_ns + (times[j] - (pipe ? b_time[j] : s->replay_ns));
            s->whatif_ns[wi] = v > 0 ? v : 0;
            if (s->used) {
                tmp[n1] = s->whatif_ns[wi];
                meas[n1++] = s->time_ns;
            }
        }
        x->run = true;
        x->steps = n1;
        if (n1) {
            x->p50_ns = mt_stats_pct_i64(tmp, n1, 50);
            x->gain_ns = mt_stats_pct_i64(meas, n1, 50) - x->p50_ns;
        }
        if (pipe && c->periods) {
            x->carried = true;
            x->period_p50_ns = carried_period(c, &r, b_end, per);
            x->period_gain_ns = c->period_p50_ns - x->period_p50_ns;
        }
        if (alt.waits && pipe && (wi == MT_WI_STRAGGLER || wi == MT_WI_PATTERN)) {
            scen_t pw = sc;
            pw.pin_inferred = 1;
            cp_replay(&g, &pw, &r, c, times);
            alt_set(c, &alt, times, &r, per, tmp, x);
        }
    }
    if (alt.waits && !pipe && (st = alt_lanes(&g, rq, c, fac, nh, late, &alt, at, &r, rw, per, tmp)) != MT_OK)
        goto out;
    st = MT_ERR_NOMEM;
    if (alt.waits && pipe) {
        /* of "comm" and "launch", the one the terminal may name best (by
         * its period): one pinned run, not two */
        int k = -1;
        for (int wi = MT_WI_COMM; wi <= MT_WI_LAUNCH; wi++)
            if (c->whatif[wi].run && c->whatif[wi].carried &&
                (k < 0 || c->whatif[wi].period_gain_ns > c->whatif[k].period_gain_ns))
                k = wi;
        if (k >= 0) {
            scen_t pw = {.carry = 1, .pin_inferred = 1, .comm_transfer = k == MT_WI_COMM,
                         .drop_launch = k == MT_WI_LAUNCH};
            cp_replay(&g, &pw, &r, c, times);
            alt_set(c, &alt, times, &r, per, tmp, &c->whatif[k]);
        }
    }
    /* ---- what-if "stage": one run per stage, shifts carried over ---- */
    if (pipe) {
        double f = rq->stage_factor > 0 ? rq->stage_factor : 0.9;
        for (size_t q = 0; c->periods && q < rq->n_stages; q++) {
            stage_factors(&g, rq, q, f, fac);
            scen_t sc = {.factor = fac, .carry = 1};
            cp_replay(&g, &sc, &r, c, times);
            mt_cp_stage_wi_t *x = &c->stage_wi[c->n_stage_wi++];
            x->stage = (uint32_t)q;
            x->p50_ns = carried_period(c, &r, b_end, per);
            x->gain_ns = c->period_p50_ns - x->p50_ns;
        }
        if (alt.waits && c->n_stage_wi) {
            /* the best stage's other binding (the one the terminal names) */
            size_t bs = 0;
            for (size_t i = 1; i < c->n_stage_wi; i++)
                if (c->stage_wi[i].gain_ns > c->stage_wi[bs].gain_ns)
                    bs = i;
            mt_cp_stage_wi_t *x = &c->stage_wi[bs];
            stage_factors(&g, rq, x->stage, f, fac);
            scen_t sc = {.factor = fac, .carry = 1, .pin_inferred = 1};
            cp_replay(&g, &sc, &r, c, times);
            x->alt_p50_ns = carried_period(c, &r, alt.bend, per);
            int64_t d = x->alt_p50_ns - x->p50_ns;
            x->ranged = (double)(d < 0 ? -d : d) >= 0.005 * (double)c->period_p50_ns;
        }
    }
    /* The replays' and the paths' arrays are done with: freed before the
     * root causes and the ideal what-if allocate theirs, so that those
     * reuse the memory (a fresh page costs more than the work done on
     * it) and the peak holds one set, not both. */
    rp_free(&r);
    r = (rp_t){0};
    free(node_ns);
    free(fac);
    free(nh);
    node_ns = NULL;
    fac = NULL;
    nh = NULL;
    /* ---- the strips of report.html: the median and the slowest step ---- */
    {
        size_t pick[2];
        const char *why[2];
        size_t n_pick = cp_strips_pick(c, pick, why);
        mt_status_t sst = MT_OK;
        for (size_t i = 0; i < n_pick && sst == MT_OK; i++) {
            cp_pseg_t *ps = NULL;
            size_t np = 0;
            sst = cp_path_of(&g, c, pick[i], &ps, &np) ? MT_ERR_NOMEM : cp_strip_add(&g, c, pick[i], why[i], ps, np);
            free(ps);
        }
        if ((st = sst) != MT_OK)
            goto out;
    }
    /* ---- root causes and the ideal what-if: not when most of the job has
     * no trace (issue 39 item 7: one rank of eight alone was told its
     * waiting's causes and a straggler slowdown; whom it waited for is
     * in the traces that are not there) ---- */
    bool told = rq->n_absent <= n_an;
    if (told && (st = root_causes(&g, c)) != MT_OK)
        goto out;
    if (told && rq->ideal && (st = cp_ideal_run(&g, rq, late, c)) != MT_OK)
        goto out;
    /* ---- what the model inferred, and the check (critpath.h) ---- */
    c->waits_inferred = g.waits_inferred;
    c->waits_explicit = g.waits_explicit;
    c->waits_unresolved = g.waits_unresolved;
    c->host_colls = g.n_hmem;
    c->pauses = g.pauses;
    c->pause_ns = g.pause_ns;
    {
        const mt_cp_whatif_t *x = &c->whatif[MT_WI_STRAGGLER];
        if (x->run && x->steps && rq->n_stragglers && c->wait_ns > 0 && c->path_ns > 0 && c->p50_ns > 0) {
            for (size_t i = 0; i < c->n_ranks; i++) {
                if (c->ranks[i].rank != rq->stragglers[0])
                    continue;
                c->check_run = true;
                c->check_rank = c->ranks[i].rank;
                c->check_caused = (double)c->ranks[i].caused_ns / (double)c->wait_ns;
                c->check_path = (double)c->ranks[i].path_ns / (double)c->path_ns;
                c->check_gain = (double)x->gain_ns / (double)c->p50_ns;
                c->check_failed = c->check_caused >= 0.5 && c->check_path >= 0.5 && c->check_gain < 0.02;
            }
        }
    }
    st = MT_OK;
out:
    rp_free(&r);
    rp_free(&rw[0]);
    rp_free(&rw[1]);
    rp_free(&rw[2]);
    free(wt[0]);
    free(wt[1]);
    free(wt[2]);
    free(alt.base);
    free(alt.bend);
    for (int l = 1; l < 4; l++)
        free(at[l]);
    free(times);
    free(meas);
    free(tmp);
    free(b_end);
    free(b_time);
    free(per);
    free(err);
    free(late);
    free(node_ns);
    free(rs_at);
    free(fac);
    free(nh);
    cp_graph_free(&g);
    mt_cp_dist_free(dist);
    if (st != MT_OK) {
        mt_critpath_free(c);
        return st;
    }
    *out = c;
    return MT_OK;
}
