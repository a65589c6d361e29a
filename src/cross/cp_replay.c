/* The replay of the critical path's graph (critpath.c builds it, cp_run.c
 * puts its events in replay order) under a scenario: the sweeps (the
 * measured run and what-ifs side by side), the edges' shifts; cp_run.c
 * drives it (internal to src/cross/, cp_run_int.h). */
#include "base/bigmem.h"
#include "cross/cp_run_int.h"

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
         * (cp_run.c order_fix: after every member's sync before it) */
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
