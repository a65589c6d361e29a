/* The replay's per-event rules (internal to src/cross/): a node's start
 * and end, a sync's return, an instance's and a host collective's last
 * arrival, under a scenario. Shared, inlined, by the one-process sweep
 * of one scenario (cp_replay.c cp_replay) and the replay of one
 * process's ranks in supersteps (cp_part.c). cp_replay.c's side-by-side
 * sweep of four scenarios (cp_replay3) does the same rules on lane rows
 * (its rw_ functions), as cp_ideal.c does for its no-delay scenarios: a
 * change here goes there too, and test_cp_part compares every lane of
 * it with cp_part.c's replay by these. */
#ifndef MT_CROSS_CP_EVENT_INT_H
#define MT_CROSS_CP_EVENT_INT_H

#include "cross/cp_run_int.h"

#include <limits.h>

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

/* shift_of(g, r, q, job) for sync q of a node's record whose tests of
 * q's job and jnext against the node's job step hot_fill made once (f:
 * cp_hot_t.sflags, shifted to q's bits): the sync's record is not read at
 * each node in each lane (the test was about 10 M instructions on the
 * 256-rank job). sc->carry, r's own (cp_rp_init), as pred_at's: a
 * constant in the inlined sweeps. */
CP_INLINE int64_t shift_at(const scen_t *sc, const rp_t *r, int32_t q, unsigned f)
{
    if (q < 0)
        return 0;
    if (sc->carry || (f & CP_S_SAME))
        return r->sd[q];
    return r->cd_on && (f & CP_S_NEXT) ? r->cd[q] : 0;
}

/* The replayed end of node p as seen from job step job: a node of
 * another step keeps its measured end. */
static inline int64_t end_in(const cp_graph_t *g, const rp_t *r, int32_t p, int32_t job)
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
CP_INLINE int64_t no_launch_gap(const cp_graph_t *g, const scen_t *sc, rp_t *r, const cp_hot_t *h, int64_t best)
{
    if ((h->flags & CP_H_LAUNCH) && h->rstep >= 0) {
        /* no launch gaps (critpath.h "what-if launch"): nothing of a
         * step starts before its rank's step does, and the host catches
         * up with the GPU: the time its launch would still have made the
         * activity wait is host time removed from the rank's step, so its
         * later syncs and its step end move earlier by it too */
        const cp_rs_t *x = &g->rs[h->rstep];
        int64_t floor = x->start + shift_at(sc, r, x->sb_start, (unsigned)h->sflags >> 2);
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
        int64_t v = h->llat + shift_at(sc, r, h->lsync, h->sflags) + r->hc[h->rstep];
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
        int64_t v = h->llat + shift_at(sc, r, h->lsync, h->sflags);
        if (v > best)
            best = v;
    }
    if (drop)
        best = no_launch_gap(g, sc, r, h, best);
    r->s[id] = best == INT64_MIN ? h->s : best;
    r->sdone[id] = 1;
}

/* The latest replayed end of rank step q's activities so far (r->rend)
 * raised to v, the end just replayed of one of them (end_of). */
CP_INLINE void rend_max(rp_t *r, int32_t q, int64_t v)
{
    if (q >= 0 && v > r->rend[q])
        r->rend[q] = v;
}

/* The last replayed arrival of instance i as read at the end event of a
 * member of job step job (its first member's end: end_of): the latest
 * replayed start of its members, a member of another step at its measured
 * start; a member not started yet is started here, in this scenario's
 * order. only (-1: every member, as end_of reads it): the members of
 * rank_i only, INT64_MIN when none (a rank's share in the partitioned
 * replay, cp_part.c). */
CP_INLINE int64_t inst_last(const cp_graph_t *g, const scen_t *sc, rp_t *r, int32_t i, int32_t job, int32_t only)
{
    const cp_inst_t *I = &g->inst[i];
    int64_t ms = INT64_MIN;
    for (uint32_t m = 0; m < I->n; m++) {
        int32_t mm = g->imem[I->m0 + m];
        /* the member's record, not its cp_node_t: read at its
         * start event, so nearly always in the cache still */
        const cp_hot_t *hm = &g->hot[g->pos[mm]];
        if (only >= 0 && hm->rank_i != only)
            continue;
        if (!r->sdone[mm])
            start_of(g, sc, r, g->pos[mm]);
        int64_t v = sc->carry || hm->job == job ? r->s[mm] : hm->s;
        if (v > ms)
            ms = v;
    }
    return ms;
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
        if (!r->idone[h->inst]) {
            r->ims[h->inst] = inst_last(g, sc, r, h->inst, h->job, -1);
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
static inline int64_t arrival_of(const cp_graph_t *g, const scen_t *sc, const rp_t *r, const cp_sync_t *y)
{
    int64_t a = y->s + shift_of(g, r, y->sb, y->job);
    if (y->rstep >= 0)
        a += r->hc[y->rstep];
    if (sc->late && (sc->late[y->rank_i] & 1))
        a -= y->late;
    return a;
}

/* The last replayed arrival of host collective hi as read at the return
 * of a member of job step job (its first member's: sync_of): the latest
 * replayed arrival of its members, a member of another step at its
 * measured start. only as inst_last's. */
static inline int64_t hin_last(const cp_graph_t *g, const scen_t *sc, const rp_t *r, int32_t hi, int32_t job,
                               int32_t only)
{
    const cp_inst_t *I = &g->hin[hi];
    int64_t ms = INT64_MIN;
    for (uint32_t q = 0; q < I->n; q++) {
        const cp_sync_t *y = &g->syncs[g->hmem[I->m0 + q]];
        if (only >= 0 && y->rank_i != only)
            continue;
        int64_t a = r->carry || y->job == job ? arrival_of(g, sc, r, y) : y->s;
        if (a > ms)
            ms = a;
    }
    return ms;
}

/* The return of sync s, its first half: its own replayed arrival (the
 * call's start moved), and the host time removed before it in its rank
 * step (no launch gaps) taken into its shift, so cleared. A host
 * collective's members' arrivals are read after this (sync_shift): the
 * returning member's own then without its removed host time (issue 43
 * step 3: the partitioned replay reads them at the same point). */
CP_INLINE int64_t sync_arrival(const cp_graph_t *g, const scen_t *sc, rp_t *r, const cp_sync_t *s)
{
    int64_t s1 = s->hi >= 0 ? arrival_of(g, sc, r, s) : s->s + shift_of(g, r, s->sb, s->job);
    if (s->rstep >= 0) { /* host time removed before it (no launch gaps); its shift carries it on */
        if (s->hi < 0)
            s1 += r->hc[s->rstep];
        r->hc[s->rstep] = 0;
    }
    return s1;
}

/* The return of sync j, its second half: its shift, from its own arrival
 * s1 (sync_arrival) and what it waited for (its host collective's last
 * arrival, the activity it synchronised with, or its own duration). */
static inline void sync_shift(const cp_graph_t *g, const scen_t *sc, rp_t *r, const cp_rank_t *R, size_t j, int64_t s1)
{
    const cp_sync_t *s = &g->syncs[j];
    int64_t v;
    if (s->hi >= 0) {
        /* a host collective (gloo): it returns at the last member's
         * replayed arrival + its own transfer (its measured end - the
         * measured last arrival), never before its own arrival; the
         * members' arrivals taken once, at the first member's return
         * (cp_run.c order_fix: after every member's sync before it) */
        const cp_inst_t *I = &g->hin[s->hi];
        if (!r->hidone[s->hi]) {
            r->hims[s->hi] = hin_last(g, sc, r, s->hi, s->job, -1);
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

static inline void sync_of(const cp_graph_t *g, const scen_t *sc, rp_t *r, const cp_rank_t *R, size_t j)
{
    sync_shift(g, sc, r, R, j, sync_arrival(g, sc, r, &g->syncs[j]));
}

/* One event of the replay order (a value of g->ev) under sc: a node's
 * end, a sync's return or a node's start. The step of the one-process
 * sweep (cp_replay.c sweep) and of a process's share (cp_part.c). */
CP_INLINE void event_of(const cp_graph_t *g, const scen_t *sc, rp_t *r, int64_t v)
{
    int type = (int)(v >> 32);
    int32_t id = (int32_t)(v & 0xffffffff); /* a sync, or a node's index in hot */
    if (type == 0) {
        end_of(g, sc, r, id);
    } else if (type == 1) {
        sync_of(g, sc, r, &g->ranks[g->syncs[id].rank_i], (size_t)id);
    } else if (!r->sdone[g->hot[id].id]) {
        start_of(g, sc, r, id);
    }
}

#endif
