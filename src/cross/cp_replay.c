/* The replay of the critical path's graph (critpath.c builds it) under a
 * scenario: the replay order kept to the graph's edges, the sweeps (the
 * measured run and what-ifs side by side), the edges' shifts; cp_run.c
 * drives it (internal to src/cross/, cp_run_int.h). */
#include "base/bigmem.h"
#include "base/sort.h"
#include "cross/cp_run_int.h"

#include <assert.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* ---- replay ---- */

void cp_rp_free(rp_t *r)
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

int cp_rp_alloc(const cp_graph_t *g, rp_t *r)
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
 * into hot; 0, or -1 out of memory. (In time order cp_build_order fills them
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
 * The time order of cp_build_order reads a predecessor's replayed end when
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

/* One sorted source of cp_build_order's merge: a rank's node ends, syncs or
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
int cp_build_order(cp_graph_t *g)
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
int cp_edge_base(cp_graph_t *g, const mt_critpath_t *c, const rp_t *r)
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
void cp_replay3(const cp_graph_t *g, rp_t *r, bool comm, bool launch, const double *f, const uint8_t *late,
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
