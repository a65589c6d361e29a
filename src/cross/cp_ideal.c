/* The ideal what-if (include/mergetrace/critpath.h, mt_cp_ideal_t): the
 * replay of the critical-path graph with no gaps and every activity at its
 * type's typical value, then one group (operation type, worker, stage) at
 * a time restored to its measured values; S, S per group, M_S and M_W.
 * Method of "Understanding Stragglers in Large Model Training Using
 * What-if Analysis" (OSDI 2025); what differs from its artifact:
 * docs/whatif.md. */
#include "base/bigmem.h"
#include "base/sort.h"
#include "base/stats.h"
#include "cross/cp_dist.h"
#include "cross/critpath_int.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct coord {
    int32_t worker, stage, rank;
} coord_t;

typedef struct ctx {
    const coord_t *co;   /* per rank_i */
    const cp_graph_t *g;
    const uint16_t *lab; /* per node: its index in the type labels, LAB_NONE */
    const uint32_t *nref; /* per node: the reads of its end in a sweep (lanes_t) */
    const uint8_t *rdom;  /* per node: 1 when its end never raises its rank step's (lanes_t) */
    bool carry;           /* a pipeline: the run replayed as one (lanes_t.carry) */
    const uint8_t *late;  /* per rank_i: bit 2 a straggler with a slow host (cp_ideal_run), NULL */
    const int64_t *ev;    /* the events by job step, NULL: two passes (lanes_t.ev, ev_order) */
    const int32_t *jx;    /* lanes_t.jx, n_jx */
    const uint32_t *rx;   /* lanes_t.rx, n_rx rows */
    size_t n_rx;
    size_t n_jx;
    const uint32_t *ev_at;
} ctx_t;

#define LAB_CAP 257 /* a Kineto graph has 3 classes; a timeline a dozen types */
#define LAB_NONE UINT16_MAX

/* ---- the replays: K scenarios ("lanes") in one sweep ----
 *
 * Every replay of the what-if is the same scenario, no delay (an activity
 * starts at the latest replayed end of its predecessors of the same step,
 * else at the step's measured start; launches and host syncs as measured,
 * shifted by the syncs' replayed shifts), with other durations: each
 * activity either at its measured value or at its type's typical one. The
 * order of the visits (the graph's replay order, g->ev) and every branch
 * depend on the graph alone, so K scenarios are replayed in one sweep,
 * each value a row of K lanes (fast path: one sweep per scenario read
 * every 64-byte record and took every branch 20-odd times; that was most
 * of the what-if's cost). Lane l of node i takes actual[i] when bit l of
 * mask[i] is set, else ideal[i]. */
#define LANES_MAX 32
/* A row's lanes at most: a sweep that takes the edge to the next step in
 * the same pass (ln_run's E) replays each scenario twice, side by side. */
#define LANE_ROW (2 * LANES_MAX)

typedef struct lanes {
    const cp_graph_t *g;
    const int64_t *actual, *ideal;
    const uint32_t *mask;
    const uint32_t *rmask;     /* per rank: the lanes that keep its host pauses (its worker, stage, all) */
    const int64_t *job_start;  /* per job step: its measured start */
    /* A pipeline (a Kineto job of two stages or more) is replayed as one
     * run, shifts carried from step to step, as its what-ifs are
     * (cp_run.c, docs/whatif.md "Pipelines"): its steps are chunks, and
     * chunk k of a stage waits for chunk k - 1 of its own and of the next
     * stage (a receive posted when the host has synced on the chunk
     * before). Replayed step by step, a stage made ideal kept the launch
     * times its slow chunks had pushed back, and S of a slow GPU of stage
     * 1 was 1.023 against a step-time ratio of 1.091 (issue 38). */
    bool carry;
    /* per rank: the lanes that drop its launch gaps (a straggler's slow
     * host made ideal: critpath_int.h cp_scen_t.late bit 2; issue 38: S
     * of a rank 300 us slow at each launch was 1.06 against a step-time
     * ratio of 1.30), NULL when there is none; hc: per rank step, K
     * lanes, the host time taken away
     * so far in its step, which its next sync and its step end take (as
     * cp_run.c's what-if "launch", rp_t.hc) */
    const uint32_t *dmask;
    int64_t *hc;
    /* A node's replayed start lives from its start event to its end event,
     * its replayed end from its end event to its last reader (successors'
     * starts, a host sync waiting for it): each in a slot of a pool (K
     * lanes a slot) that holds the rows alive at one time, not a row per
     * node. Fast path: rows per node were 8 bytes x K lanes x nodes of
     * fresh memory every sweep (48 MB on 8 x 157 MB), which the kernel
     * zeroes, dear on virtual machines, and which capped the lanes at 64
     * MiB; the pool stays in the cache. */
    int32_t *slot;             /* per node: the slot of its start (open) or end (ended, still read), -1 */
    uint8_t *state;            /* per node: 0 not started, 1 open, 2 ended */
    const uint32_t *nref;      /* per node: how many times a sweep reads its end */
    /* per node: 1 when a later node of its rank step follows it on its
     * stream and lasts no less than 0 in every lane, so that one ends no
     * earlier and the rank step's replayed end (rend) need not take this
     * one's (fast path: the maximum over K lanes at every end was a tenth
     * of the sweep) */
    const uint8_t *rdom;
    uint32_t *left;            /* per node: reads of its end still to come this sweep */
    int64_t *pool;             /* cap slots of stride lanes (the widest sweep's K) */
    int32_t *free_slots;       /* the free slots below top */
    size_t cap, top, n_free, stride;
    int64_t spare[LANE_ROW];   /* where a start goes when the pool could not grow */
    bool fail;
    uint32_t pin;              /* this sweep's lanes with the inferred communication waits pinned
                                * (critpath_int.h cp_scen_t.pin_inferred) */
    int64_t pinm[LANE_ROW];    /* pin as lane masks (lane_bits): all ones in a pinned lane, else 0 */
    int64_t *sd;               /* per host sync: its replayed shift, K lanes */
    int64_t *cd;               /* per host sync with jnext (its row jx[q]): the shift its next rank
                                * step starts with, K lanes, from the first pass (cp_replay.c edge_fill) */
    const int32_t *jx;         /* per host sync: its row in cd (those with jnext; with ev, its rank
                                * step's place in its next step), -1 */
    size_t n_jx;
    bool cd_on;                /* the second pass: the edge to the next step's start taken */
    /* The events by job step (the nodes and syncs of no step first), each
     * step's in the replay order, ev_at[j + 1] the first of step j, NULL
     * when the sweeps take two passes (ctx_t.ev): see ln_run's E. */
    const int64_t *ev;
    const uint32_t *ev_at;
    int64_t *ims;              /* per instance: its last replayed arrival, K lanes */
    int64_t *rend;             /* per rank step: its replayed end, K lanes (rx: its row) */
    /* with ev: per rank step, its row in rend, its place in its step (the
     * rows of a step's rank steps are done with once its time is taken,
     * and the next step's take them over); the last row for the rank
     * steps of no step (never read) */
    const uint32_t *rx;
    size_t n_rx;
    uint8_t *idone;
} lanes_t;

/* The lane count K is a constant in each instance of the sweep (ln_run's
 * callers, LN_RUN_K), so the lane loops are unrolled and, with AVX2,
 * vectorised. */
#define FOR_LANES for (int l = 0; l < K; l++)
#define MAX_TO(a, b) ((a) = (b) > (a) ? (b) : (a))
#define MIN_TO(a, b) ((a) = (b) < (a) ? (b) : (a))

/* Lane rows: a = max(a, b); a = b; a += b; a = max(a, b + c) (restrict
 * parameters: the rows of one array never overlap, and saying so lets the
 * compiler vectorise the loops after inlining; GCC does not take restrict
 * from a local pointer). */
CP_INLINE void lane_max(int64_t *restrict a, const int64_t *restrict b, const int K)
{
    FOR_LANES MAX_TO(a[l], b[l]);
}

CP_INLINE void lane_add(int64_t *restrict a, const int64_t *restrict b, const int K)
{
    FOR_LANES a[l] += b[l];
}

CP_INLINE void lane_max_sum(int64_t *restrict a, const int64_t *restrict b, const int64_t *restrict c, const int K)
{
    FOR_LANES {
        int64_t v = b[l] + c[l];
        MAX_TO(a[l], v);
    }
}

CP_INLINE void lane_fill(int64_t *restrict a, int64_t v, const int K)
{
    FOR_LANES a[l] = v;
}

CP_INLINE void lane_max_c(int64_t *restrict a, int64_t v, const int K)
{
    FOR_LANES MAX_TO(a[l], v);
}

/* a = max(a, b + v); a = b + v */
CP_INLINE void lane_max_add(int64_t *restrict a, const int64_t *restrict b, int64_t v, const int K)
{
    FOR_LANES MAX_TO(a[l], b[l] + v);
}

CP_INLINE void lane_set_add(int64_t *restrict a, const int64_t *restrict b, int64_t v, const int K)
{
    FOR_LANES a[l] = b[l] + v;
}

/* a = max(a, e0 in the lanes where pm is all ones, else b): pm a row of
 * masks, not a bit per lane (fast path: the test of bit l of a word in
 * each lane kept the loop scalar; on 8 x 157 MB it was 89 M instructions
 * of the 24-lane sweep's 615 M) */
CP_INLINE void lane_max_pin(int64_t *restrict a, const int64_t *restrict b, int64_t e0, const int64_t *restrict pm,
                            const int K)
{
    FOR_LANES {
        int64_t v = (b[l] & ~pm[l]) | (e0 & pm[l]);
        MAX_TO(a[l], v);
    }
}

CP_INLINE void lane_copy(int64_t *restrict a, const int64_t *restrict b, const int K)
{
    FOR_LANES a[l] = b[l];
}

/* Two rows into a in one pass (ln_start: its first dependency with the
 * next, where a copy of the first and a pass more cost a call to memmove
 * a start): a = max(b, c); a = max(b, c + v); a = max(b, v); a = max(b,
 * c pinned as lane_max_pin); a = c pinned. */
CP_INLINE void lane_max2(int64_t *restrict a, const int64_t *restrict b, const int64_t *restrict c, const int K)
{
    FOR_LANES a[l] = c[l] > b[l] ? c[l] : b[l];
}

CP_INLINE void lane_max2_add(int64_t *restrict a, const int64_t *restrict b, const int64_t *restrict c, int64_t v,
                             const int K)
{
    FOR_LANES {
        int64_t w = c[l] + v;
        a[l] = w > b[l] ? w : b[l];
    }
}

CP_INLINE void lane_max2_c(int64_t *restrict a, const int64_t *restrict b, int64_t v, const int K)
{
    FOR_LANES a[l] = v > b[l] ? v : b[l];
}

CP_INLINE void lane_max2_pin(int64_t *restrict a, const int64_t *restrict b, const int64_t *restrict c, int64_t e0,
                             const int64_t *restrict pm, const int K)
{
    FOR_LANES {
        int64_t w = (c[l] & ~pm[l]) | (e0 & pm[l]);
        a[l] = w > b[l] ? w : b[l];
    }
}

CP_INLINE void lane_set_pin(int64_t *restrict a, const int64_t *restrict c, int64_t e0, const int64_t *restrict pm,
                            const int K)
{
    FOR_LANES a[l] = (c[l] & ~pm[l]) | (e0 & pm[l]);
}

/* A scenario mask (bit l: scenario l) as lane bits of a sweep of K lanes:
 * with both passes in one sweep (E) scenario l has lanes l and K / 2 + l
 * (its first pass and its second). */
CP_INLINE uint64_t lane_bits(uint32_t m, const int K, const bool E)
{
    if (!E)
        return m;
    /* the bits past the lanes (a slow host's mask is a complement) kept
     * off the second pass's lanes */
    uint64_t lo = (uint64_t)m & ((1ull << (K / 2)) - 1);
    return lo | lo << (K / 2);
}

/* The row of node id: its start while open, its end once ended. */
CP_INLINE int64_t *slot_of(lanes_t *x, int32_t id, const int K)
{
    int32_t q = x->slot[id];
    (void)K;
    return q >= 0 ? x->pool + (size_t)q * x->stride : x->spare;
}

/* A slot for node id's start (its row); the pool doubles when full (on
 * failure: x->fail, and the spare row). */
CP_INLINE int64_t *slot_take(lanes_t *x, int32_t id)
{
    size_t q;
    if (x->n_free) {
        q = (size_t)x->free_slots[--x->n_free];
    } else {
        if (x->top == x->cap) {
            size_t nc = x->cap * 2;
            int64_t *p = nc <= INT32_MAX ? mt_big_realloc(x->pool, nc * x->stride * sizeof *p) : NULL;
            if (p)
                x->pool = p;
            int32_t *f = p ? realloc(x->free_slots, nc * sizeof *f) : NULL;
            if (!p || !f) {
                x->fail = true;
                x->slot[id] = -1;
                return x->spare;
            }
            x->free_slots = f;
            x->cap = nc;
        }
        q = x->top++;
    }
    x->slot[id] = (int32_t)q;
    return x->pool + q * x->stride;
}

/* Node id has ended: its slot is free. */
CP_INLINE void slot_give(lanes_t *x, int32_t id)
{
    if (x->slot[id] >= 0)
        x->free_slots[x->n_free++] = x->slot[id];
    x->slot[id] = -1;
}

/* One read of node id's replayed end: its row once ended, else its
 * measured end in buf (a node not replayed yet keeps it, as in cp_replay.c's
 * replay). The row is freed after its last read (x->nref counts them) but
 * stays readable until the next slot_take. */
CP_INLINE const int64_t *end_read(lanes_t *x, int32_t id, int64_t *restrict buf, const int K)
{
    assert(x->left[id] > 0);
    x->left[id]--;
    if (x->state[id] == 2) {
        const int64_t *p = slot_of(x, id, K);
        if (!x->left[id])
            slot_give(x, id);
        return p;
    }
    int64_t e0 = x->g->e0[id];
    FOR_LANES buf[l] = e0;
    return buf;
}

/* The K lanes of the shift of sync q (-1: none) that job step job sees
 * (cp_replay.c shift_of): its own in that step or in one run (C), the edge's
 * when the step starts after it (cp_sync_t.jnext, second pass), else
 * NULL (none: the step replays from its measured start). */
CP_INLINE const int64_t *sd_seen(const lanes_t *x, long q, int32_t job, const int K, const bool C)
{
    if (q < 0)
        return NULL;
    if (C || x->g->syncs[q].job == job)
        return x->sd + (size_t)q * (size_t)K;
    /* (job -1, outside every step: jnext -1 names no edge) */
    return x->cd_on && job >= 0 && x->g->syncs[q].jnext == job ? x->cd + (size_t)x->jx[q] * (size_t)K : NULL;
}

/* sd_seen for a sync of a node's record, its tests of the sync's job and
 * jnext made once by hot_fill (f: cp_hot_t.sflags shifted to the sync's
 * bits; cp_event_int.h shift_at): the sync's record not read a node. */
CP_INLINE const int64_t *sd_at(const lanes_t *x, int32_t q, unsigned f, const int K, const bool C)
{
    if (q < 0)
        return NULL;
    if (C || (f & CP_S_SAME))
        return x->sd + (size_t)q * (size_t)K;
    return x->cd_on && (f & CP_S_NEXT) ? x->cd + (size_t)x->jx[q] * (size_t)K : NULL;
}

/* The replayed start of the node at hot[k] (cp_replay.c start_of, no delay),
 * into a row of its own, taken first and the latest dependency gathered
 * in it (through the lane functions: GCC vectorises a loop over a row
 * only where restrict says the rows do not overlap, and it takes restrict
 * from parameters, not from a local pointer). Every dependency gives
 * every lane a value, so the first is held (pend) and taken with the
 * second in one pass (lane_max2...), copied only when it is the one, and
 * a start with none takes its fallback in every lane (fast path: a row of
 * INT64_MIN first, a test of each lane at the end and the copy of a local
 * row into the slot were a fifth of the sweep on 8 x 157 MB; the copy of
 * the first, a call to memmove at each start, 43 M instructions of the
 * 24-lane sweep's 615 M there). */
CP_INLINE void ln_start(lanes_t *x, int32_t k, const int K, const bool C, const bool D, const bool E)
{
    const cp_graph_t *g = x->g;
    const cp_hot_t *h = &g->hot[k];
    /* taken first: a take may move the pool, and the rows end_read gives
     * stay readable until the next take (a row it frees is not this one:
     * a row is free only after its last read) */
    int64_t *best = slot_take(x, h->id);
    bool any = false;
    /* the first dependency's row, not in best yet; a row end_read gives
     * stays readable until the next take (none before best is done), and
     * a measured end it fills in stays in its own buffer */
    const int64_t *pend = NULL;
    int64_t buf[3][LANE_ROW];
    if (h->job >= 0 || C) /* no delay: only predecessors of the same step count, any in one run */
        for (int q = 0; q < 3; q++) {
            if (h->pred[q] < 0 || !(C || (h->flags >> q & 1)))
                continue;
            const int64_t *pe = end_read(x, h->pred[q], buf[q], K);
            if (q == 1 && x->pin && (h->flags & CP_H_PXINF)) { /* the other binding: its measured end */
                int64_t e0 = g->e0[h->pred[q]];
                if (pend)
                    lane_max2_pin(best, pend, pe, e0, x->pinm, K);
                else if (any)
                    lane_max_pin(best, pe, e0, x->pinm, K);
                else
                    lane_set_pin(best, pe, e0, x->pinm, K);
                pend = NULL;
            } else if (pend) {
                lane_max2(best, pend, pe, K);
                pend = NULL;
            } else if (any) {
                lane_max(best, pe, K);
            } else {
                pend = pe;
            }
            any = true;
        }
    uint64_t dm = D && (h->flags & CP_H_LAUNCH) && h->rstep >= 0 ? lane_bits(x->dmask[h->rank_i], K, E) : 0;
    if (dm) {
        /* a slow host made ideal (cp_replay.c no_launch_gap, lane by lane):
         * nothing of its step starts before its rank step does, and the
         * time its launch would still have made the activity wait is
         * host time taken from the rank step (hc) */
        int32_t q = h->lsync;
        const cp_rs_t *rs = &g->rs[h->rstep];
        const int64_t *sd = sd_at(x, q, h->sflags, K, C);
        const int64_t *fs = sd_at(x, rs->sb_start, (unsigned)h->sflags >> 2, K, C);
        int64_t *hc = x->hc + (size_t)h->rstep * (size_t)K;
        int32_t b = q >= 0 ? g->syncs[q].bar : -1; /* the host collective it came after */
        const int64_t *bs = b >= 0 && (C || g->syncs[b].job == h->job) ? x->sd + (size_t)b * (size_t)K : NULL;
        if (pend)
            lane_copy(best, pend, K);
        else if (!any)
            lane_fill(best, INT64_MIN, K);
        pend = NULL;
        any = true;
        FOR_LANES {
            int64_t lv = h->llat + (sd ? sd[l] : 0);
            if (!(dm >> l & 1)) {
                MAX_TO(best[l], lv);
                continue;
            }
            MAX_TO(best[l], rs->start + (fs ? fs[l] : 0));
            if (b >= 0)
                MAX_TO(best[l], g->syncs[b].e + (bs ? bs[l] : 0));
            if (lv + hc[l] > best[l])
                hc[l] -= lv + hc[l] - best[l];
        }
    } else if (h->flags & CP_H_LAUNCH) {
        int32_t q = h->lsync;
        const int64_t *sd = sd_at(x, q, h->sflags, K, C);
        if (sd && pend)
            lane_max2_add(best, pend, sd, h->llat, K);
        else if (sd && any)
            lane_max_add(best, sd, h->llat, K);
        else if (sd)
            lane_set_add(best, sd, h->llat, K);
        else if (pend)
            lane_max2_c(best, pend, h->llat, K);
        else if (any)
            lane_max_c(best, h->llat, K);
        else
            lane_fill(best, h->llat, K);
        pend = NULL;
        any = true;
    }
    if (pend) /* one dependency alone */
        lane_copy(best, pend, K);
    if (!any) {
        int64_t fb = h->job >= 0 && x->job_start && !C ? x->job_start[h->job] : INT64_MIN;
        if (fb == INT64_MIN)
            fb = h->s;
        lane_fill(best, fb, K);
    }
    x->state[h->id] = 1;
}

/* Node id has ended, its end in its row (v, where its start was): its
 * rank step's end moves up to it (unless a later node of the step ends
 * no earlier: rdom), and the row is freed unless something will read it
 * (fast path: the end into a new row and a copy of it, with the slots'
 * bookkeeping, were a tenth of the sweep). */
CP_INLINE void end_set(lanes_t *x, const cp_hot_t *h, const int64_t *restrict v, const int K, const bool E)
{
    int32_t id = h->id;
    if (h->rstep >= 0 && !x->rdom[id])
        lane_max(x->rend + (E ? (size_t)x->rx[h->rstep] : (size_t)h->rstep) * (size_t)K, v, K);
    if (!x->left[id])
        slot_give(x, id);
    x->state[id] = 2;
}

/* The replayed end of the node at hot[k] (cp_replay.c end_of, no delay). */
CP_INLINE void ln_end(lanes_t *x, int32_t k, const int K, const bool C, const bool D, const bool E)
{
    const cp_graph_t *g = x->g;
    const cp_hot_t *h = &g->hot[k];
    int32_t id = h->id;
    if (!x->state[id])
        ln_start(x, k, K, C, D, E);
    int64_t da = x->actual[id] >= 0 ? x->actual[id] : h->dt;
    int64_t di = x->ideal[id] >= 0 ? x->ideal[id] : h->dt;
    uint32_t m = x->mask[id];
    int64_t d[LANE_ROW];
    /* both passes (E): each scenario's value in both its lanes (a lane
     * bit of 64 made this loop a third of the sweep: not vectorised) */
    const int H = E ? K / 2 : K;
    for (int l = 0; l < H; l++) {
        int64_t v = m >> l & 1 ? da : di;
        d[l] = v;
        if (E)
            d[H + l] = v;
    }
    if (h->inst < 0) {
        int64_t *s = slot_of(x, id, K);
        lane_add(s, d, K);
        end_set(x, h, s, K, E);
        return;
    }
    const cp_inst_t *I = &g->inst[h->inst];
    int64_t *restrict ims = x->ims + (size_t)h->inst * (size_t)K;
    if (!x->idone[h->inst]) { /* the last arrival, once per instance */
        FOR_LANES ims[l] = INT64_MIN;
        for (uint32_t q = 0; q < I->n; q++) {
            int32_t mm = g->imem[I->m0 + q];
            if (!x->state[mm])
                ln_start(x, g->pos[mm], K, C, D, E);
            if (C || g->nodes[mm].job == h->job) {
                lane_max(ims, slot_of(x, mm, K), K);
            } else {
                int64_t v = g->nodes[mm].s; /* another step: as measured */
                FOR_LANES MAX_TO(ims[l], v);
            }
        }
        x->idone[h->inst] = 1;
    }
    int64_t *s = slot_of(x, id, K); /* the members' starts may have moved the pool */
    lane_max_sum(s, ims, d, K);
    end_set(x, h, s, K, E);
}

/* The replayed shift of host sync j (cp_replay.c sync_of, no delay). */
CP_INLINE void ln_sync(lanes_t *x, size_t j, const int K, const bool C, const bool D, const bool E)
{
    const cp_graph_t *g = x->g;
    const cp_sync_t *S = &g->syncs[j];
    int64_t *restrict sd = x->sd + j * (size_t)K;
    int64_t s1[LANE_ROW];
    const int64_t *sb = sd_seen(x, S->sb, S->job, K, C);
    if (sb) {
        FOR_LANES s1[l] = S->s + sb[l];
    } else {
        FOR_LANES s1[l] = S->s;
    }
    if (D && S->rstep >= 0) { /* host time taken away before it (a slow host made ideal) */
        int64_t *hc = x->hc + (size_t)S->rstep * (size_t)K;
        FOR_LANES {
            s1[l] += hc[l];
            hc[l] = 0;
        }
    }
    if (S->hi >= 0) {
        /* a host collective (cp_replay.c sync_of): the last member's
         * replayed arrival + its own transfer */
        const cp_inst_t *I = &g->hin[S->hi];
        int64_t am[LANE_ROW];
        FOR_LANES am[l] = INT64_MIN;
        for (uint32_t q = 0; q < I->n; q++) {
            const cp_sync_t *y = &g->syncs[g->hmem[I->m0 + q]];
            int64_t ya[LANE_ROW];
            const int64_t *sh = C || y->job == S->job ? sd_seen(x, y->sb, S->job, K, C) : NULL;
            if (sh) {
                FOR_LANES ya[l] = y->s + sh[l];
            } else {
                FOR_LANES ya[l] = y->s;
            }
            if (D && y != S && y->rstep >= 0 && (C || y->job == S->job)) {
                const int64_t *hc = x->hc + (size_t)y->rstep * (size_t)K;
                FOR_LANES ya[l] += hc[l];
            }
            FOR_LANES MAX_TO(am[l], y == S ? s1[l] : ya[l]);
        }
        int64_t T = S->e - I->maxstart;
        if (T < 0)
            T = 0;
        FOR_LANES sd[l] = (am[l] + T < s1[l] ? s1[l] : am[l] + T) - S->e;
    } else if (S->hi == -2) {
        /* a host pause: its lateness is a delay of its rank's, at its
         * typical value (none) unless the rank's group is restored */
        uint64_t mk = lane_bits(x->rmask[S->rank_i], K, E);
        FOR_LANES sd[l] = s1[l] + (S->e - S->s) - ((mk >> l & 1) ? 0 : S->late) - S->e;
    } else if (S->w >= 0 && g->nodes[S->w].e >= S->s) {
        const cp_node_t *w = &g->nodes[S->w];
        int64_t lag = g->ranks[S->rank_i].sync_lag;
        if (C || w->job == S->job) {
            int64_t buf[LANE_ROW];
            const int64_t *we = end_read(x, S->w, buf, K);
            FOR_LANES sd[l] = (we[l] + lag < s1[l] ? s1[l] : we[l] + lag) - S->e;
        } else {
            FOR_LANES sd[l] = (w->e + lag < s1[l] ? s1[l] : w->e + lag) - S->e;
        }
    } else {
        FOR_LANES sd[l] = s1[l] + (S->e - S->s) - S->e;
    }
}

/* x->cd from a first pass (x->sd), lane by lane, for the second
 * (cp_replay.c edge_fill): per job step, each sync its rank step starts
 * after (jnext) gets its shift less the largest of those in the step,
 * less the same of the unchanged run (g->cd0). Whether any lane's moves
 * by CP_EDGE_TOL or more (else the second pass would be the first). */
CP_INLINE bool ln_edge_fill(lanes_t *x, const mt_critpath_t *c, const int K)
{
    bool moved = false;
    const cp_graph_t *g = x->g;
    for (size_t j = 0; j < c->n_steps; j++) {
        const mt_cp_step_t *s = &c->steps[j];
        int64_t o[LANE_ROW];
        FOR_LANES o[l] = INT64_MIN;
        for (uint32_t k = s->first; k < s->first + s->n; k++) {
            int32_t q = g->rs[g->js[k]].sb_start;
            if (q >= 0 && g->syncs[q].jnext == (int32_t)j)
                lane_max(o, x->sd + (size_t)q * (size_t)K, K);
        }
        for (uint32_t k = s->first; k < s->first + s->n; k++) {
            int32_t q = g->rs[g->js[k]].sb_start;
            if (q >= 0 && g->syncs[q].jnext == (int32_t)j) {
                const int64_t *sd = x->sd + (size_t)q * (size_t)K;
                int64_t *cd = x->cd + (size_t)x->jx[q] * (size_t)K;
                int64_t b = g->cd0[q];
                if (b == CP_EDGE_OFF) {
                    FOR_LANES cd[l] = 0;
                } else {
                    FOR_LANES {
                        cd[l] = sd[l] - o[l] - b;
                        moved |= cd[l] >= CP_EDGE_TOL || cd[l] <= -CP_EDGE_TOL;
                    }
                }
            }
        }
    }
    x->cd_on = true;
    return moved;
}

/* ln_edge_fill for job step j alone, in a sweep of both passes (ln_run's
 * E: lanes 0..H-1 the first pass, H..K-1 the second, H = K / 2): the
 * edge's shifts of the syncs its rank steps start after into lanes H.. of
 * their x->cd rows (lanes 0.. stay 0: the first pass takes no edge), from
 * lanes 0.. of their x->sd (their steps come before j in x->ev: replayed
 * already). Whether any moves by CP_EDGE_TOL or more. */
CP_INLINE bool ln_edge_step(lanes_t *x, const mt_critpath_t *c, size_t j, const int K)
{
    const int H = K / 2;
    bool moved = false;
    const cp_graph_t *g = x->g;
    const mt_cp_step_t *s = &c->steps[j];
    int64_t o[LANES_MAX];
    lane_fill(o, INT64_MIN, H);
    for (uint32_t k = s->first; k < s->first + s->n; k++) {
        int32_t q = g->rs[g->js[k]].sb_start;
        if (q >= 0 && g->syncs[q].jnext == (int32_t)j)
            lane_max(o, x->sd + (size_t)q * (size_t)K, H);
    }
    for (uint32_t k = s->first; k < s->first + s->n; k++) {
        int32_t q = g->rs[g->js[k]].sb_start;
        if (q >= 0 && g->syncs[q].jnext == (int32_t)j) {
            const int64_t *sd = x->sd + (size_t)q * (size_t)K;
            int64_t *cd = x->cd + (size_t)x->jx[q] * (size_t)K + H;
            int64_t b = g->cd0[q];
            if (b == CP_EDGE_OFF) {
                lane_fill(cd, 0, H);
            } else {
                for (int l = 0; l < H; l++) {
                    cd[l] = sd[l] - o[l] - b;
                    moved |= cd[l] >= CP_EDGE_TOL || cd[l] <= -CP_EDGE_TOL;
                }
            }
        }
    }
    return moved;
}

/* One event of the replay order (g->ev): a node's end (type 0) or start
 * (2; its index in hot), or a sync (1). */
CP_INLINE void ln_event(lanes_t *x, int64_t v, const int K, const bool C, const bool D, const bool E)
{
    int type = (int)(v >> 32);
    int32_t id = (int32_t)(v & 0xffffffff); /* a sync, or a node's index in hot */
    if (type == 0)
        ln_end(x, id, K, C, D, E);
    else if (type == 1)
        ln_sync(x, (size_t)id, K, C, D, E);
    else if (!x->state[x->g->hot[id].id])
        ln_start(x, id, K, C, D, E);
}

/* A pipeline whose job steps are its chunks, replayed as one run, is
 * measured by its period (cp_step_has_period), the time between two
 * chunks' ends: a chunk's latency is no measure of the job's speed there.
 * Equalising the stages' work (the ideal) moves the bottleneck to a stage
 * that had slack, and with no bound on the chunks in flight the later
 * chunks queue before it: the mean latency grows with the chunk count
 * (sample_traces/pp8, no straggler: ideal 9.16 ms over a no-delay
 * 7.79 ms, S 0.850), while the period is the bottleneck's time whatever
 * the chunk count. */

/* Job step j's replayed time, its rank steps replayed (ln_run): each rank
 * step's end, the host end shifted or the latest replayed end of its
 * activities (every node has an end event: g->ev), and the step's time
 * from its earliest start to its latest end summed in sum over the used
 * steps (used); a run replayed as one (C): also its period from the step
 * before's end (prev) summed in psum (np). */
CP_INLINE void ln_step_time(lanes_t *x, const mt_critpath_t *c, size_t j, const int K, const bool C, const bool D,
                            const bool E, double *restrict sum, double *restrict psum, int64_t *restrict prev,
                            uint64_t *used, uint64_t *np)
{
    const cp_graph_t *g = x->g;
    const mt_cp_step_t *s = &c->steps[j];
    if (!s->used && !C) /* a carried run's unused steps: their ends start periods */
        return;
    int64_t lo[LANE_ROW], hi[LANE_ROW];
    FOR_LANES {
        lo[l] = INT64_MAX;
        hi[l] = INT64_MIN;
    }
    for (uint32_t k = s->first; k < s->first + s->n; k++) {
        int32_t q = g->js[k];
        const cp_rs_t *r = &g->rs[q];
        int64_t *re = x->rend + (size_t)(E ? x->rx[q] : (uint32_t)q) * (size_t)K;
        const int64_t *hc = D ? x->hc + (size_t)q * (size_t)K : NULL;
        if (r->sb_end >= 0 && (C || g->syncs[r->sb_end].job == r->job)) {
            const int64_t *sh = x->sd + (size_t)r->sb_end * (size_t)K;
            FOR_LANES MAX_TO(re[l], r->cpu_end + sh[l] + (hc ? hc[l] : 0));
        } else {
            FOR_LANES MAX_TO(re[l], r->cpu_end + (hc ? hc[l] : 0));
        }
        /* in one run: the rank step's start moved with its host (not
         * by the edge to the next step: cp_replay.c replay_finish) */
        const int64_t *sh = C ? sd_seen(x, r->sb_start, r->job, K, C) : NULL;
        if (sh) {
            FOR_LANES MIN_TO(lo[l], r->start + sh[l]);
        } else {
            FOR_LANES MIN_TO(lo[l], r->start);
        }
        FOR_LANES MAX_TO(hi[l], re[l]);
    }
    if (C && cp_step_has_period(c, j)) {
        FOR_LANES psum[l] += (double)(hi[l] - prev[l]);
        (*np)++;
    }
    if (C)
        FOR_LANES prev[l] = hi[l];
    if (!s->used)
        return;
    FOR_LANES sum[l] += (double)(hi[l] - lo[l]);
    (*used)++;
}

/* Replay the K lanes of x; mean[l] gets lane l's mean job step time over
 * the used steps of c (steps refused for other projections count too: S is
 * the ratio of two replays of the same graph, no delay vs ideal, as in the
 * paper, not a projection from a measured time), *n_used their count;
 * a run replayed as one (C) with periods: the mean period and the
 * periods' count instead. */
CP_INLINE void ln_run(lanes_t *x, const mt_critpath_t *c, double *mean, uint64_t *n_used, const int K,
                      const bool C, const bool D, const bool E)
{
    const cp_graph_t *g = x->g;
    size_t N = g->n_nodes;
    x->cd_on = false;
    bool moved = false;
    double sum[LANE_ROW] = {0}, psum[LANE_ROW] = {0};
    uint64_t used = 0, np = 0;
    int64_t prev[LANE_ROW] = {0}; /* the step before's replayed end (carried runs) */
    uint64_t pb = lane_bits(x->pin, K, E);
    FOR_LANES x->pinm[l] = pb >> l & 1 ? -1 : 0;
    for (int pass = 0; pass < 2; pass++) {
        /* the edge to the next step's start (cp_replay.c edge_fill), lane by
         * lane; none moves by CP_EDGE_TOL: the first pass stands */
        if (pass && !ln_edge_fill(x, c, K))
            break;
        /* Both passes in one (E), each scenario in two lanes, l (the
         * first pass) and H + l (the second): without a run carried as
         * one, a job step's replay reads nothing of another step's but
         * the edge's shifts (the first pass of the steps before it), so
         * the events replayed step by step (x->ev) give each lane what
         * its own pass gave, and the second pass needs only the first
         * pass of the steps before. Fast path: the second pass was a
         * sweep of its own, and a sweep's cost is much of it per event,
         * not per lane (on the 256-rank job 33 M instructions a pass of
         * the ideal's 2 x 35 M of one lane). */
        if (E) {
            x->cd_on = true;
            memset(x->cd, 0, (x->n_jx ? x->n_jx : 1) * (size_t)K * sizeof *x->cd);
        }
        memset(x->state, 0, N ? N : 1);
        memcpy(x->left, x->nref, (N ? N : 1) * sizeof *x->left);
        /* raised by its activities' ends (end_set); with E each step's
         * rows before its events */
        for (size_t i = 0; !E && i < g->n_rs * (size_t)K; i++)
            x->rend[i] = INT64_MIN;
        /* a sync's shift may be read before its sync is replayed (a sync
         * that ends where the next starts, or one of zero length, is its
         * own or a later one's sb): 0 then, as in cp_replay.c's replay */
        memset(x->sd, 0, (g->n_syncs ? g->n_syncs : 1) * (size_t)K * sizeof *x->sd);
        x->top = x->n_free = 0;
        memset(x->idone, 0, g->n_inst ? g->n_inst : 1);
        if (D)
            memset(x->hc, 0, (g->n_rs ? g->n_rs : 1) * (size_t)K * sizeof *x->hc);
        if (E) {
            for (size_t j = 0; j <= c->n_steps; j++) { /* j - 1: the job step (-1: none) */
                size_t nr = j ? c->steps[j - 1].n : 0;
                if (j)
                    moved |= ln_edge_step(x, c, j - 1, K);
                else
                    nr = 1; /* the row of the rank steps of no step */
                for (size_t i = 0; i < nr; i++)
                    lane_fill(x->rend + (j ? i : x->n_rx - 1) * (size_t)K, INT64_MIN, K);
                for (size_t k = x->ev_at[j]; k < x->ev_at[j + 1]; k++)
                    ln_event(x, x->ev[k], K, C, D, E);
                if (j) /* its rank steps have ended: its time, before the next step takes their rows */
                    ln_step_time(x, c, j - 1, K, C, D, E, sum, psum, prev, &used, &np);
            }
        } else {
            for (size_t k = 0; k < g->n_ev; k++)
                ln_event(x, g->ev[k], K, C, D, E);
        }
        assert(x->fail || x->top == x->n_free); /* every row came back: the reads were counted right */
        if (E || C || !g->n_jnext || !g->cd0) /* one run carries every shift; no edge: one pass */
            break;
    }
    for (size_t j = 0; !E && j < c->n_steps; j++)
        ln_step_time(x, c, j, K, C, D, E, sum, psum, prev, &used, &np);
    /* a pipeline run as one: the mean period (ln_step_time) */
    if (np) {
        FOR_LANES mean[l] = psum[l] / (double)np;
        used = np;
    } else {
        FOR_LANES mean[l] = used ? sum[l] / (double)used : 0.0;
    }
    if (E && moved) /* the second pass stands (else the first, as in ln_edge_fill) */
        for (int l = 0; l < K / 2; l++)
            mean[l] = mean[K / 2 + l];
    if (n_used)
        *n_used = used;
}

/* Each sweep is compiled twice on x86-64 with glibc (target_clones needs
 * its ifunc), for AVX2 and for any x86-64 CPU, and the dynamic loader
 * picks the one the CPU runs: with
 * AVX2 four lanes take one instruction (baseline x86-64 has no 64-bit
 * compare). MT_PORTABLE_SCAN (the comparison build of tests/perf) keeps
 * the baseline one only, so the two are compared on every test run. */
#if defined(__x86_64__) && defined(__GLIBC__) && defined(__has_attribute) && !defined(MT_PORTABLE_SCAN)
#if __has_attribute(target_clones)
#define LN_CLONES __attribute__((target_clones("avx2", "default")))
#endif
#endif
#ifndef LN_CLONES
#define LN_CLONES
#endif

/* Each width five times: replayed step by step, as one run (lanes_t.carry:
 * a constant, so that the step-by-step sweeps of every job without a
 * pipeline take none of its tests; as a field read at each use they cost
 * 4 M instructions of 520 M on the 256-rank job), with slow hosts to
 * make ideal (lanes_t.dmask; carried or not), and step by step with both
 * passes in one sweep of twice the lanes (ln_run's E; with slow hosts or
 * not). */
#define LN_RUN_K(W)                                                                       \
    LN_CLONES                                                                             \
    static void ln_run##W(lanes_t *x, const mt_critpath_t *c, double *mean, uint64_t *n)  \
    {                                                                                     \
        ln_run(x, c, mean, n, W, false, false, false);                                    \
    }                                                                                     \
    LN_CLONES                                                                             \
    static void ln_run##W##c(lanes_t *x, const mt_critpath_t *c, double *mean, uint64_t *n) \
    {                                                                                     \
        ln_run(x, c, mean, n, W, true, false, false);                                     \
    }                                                                                     \
    LN_CLONES                                                                             \
    static void ln_run##W##d(lanes_t *x, const mt_critpath_t *c, double *mean, uint64_t *n) \
    {                                                                                     \
        ln_run(x, c, mean, n, W, x->carry, true, false);                                  \
    }                                                                                     \
    LN_CLONES                                                                             \
    static void ln_run##W##e(lanes_t *x, const mt_critpath_t *c, double *mean, uint64_t *n) \
    {                                                                                     \
        ln_run(x, c, mean, n, 2 * W, false, false, true);                                 \
    }                                                                                     \
    LN_CLONES                                                                             \
    static void ln_run##W##ed(lanes_t *x, const mt_critpath_t *c, double *mean, uint64_t *n) \
    {                                                                                     \
        ln_run(x, c, mean, n, 2 * W, false, true, true);                                  \
    }
LN_RUN_K(1)
LN_RUN_K(4)
LN_RUN_K(8)
LN_RUN_K(16)
LN_RUN_K(24)
LN_RUN_K(32)
#undef LN_RUN_K

/* A scenario: the activities of its group (all, a type label, a worker,
 * a stage or a rank; != invert) at their measured values, the others at
 * their typical values. */
enum { SC_ALL, SC_LABEL, SC_WORKER, SC_STAGE, SC_RANK };

typedef struct scen {
    int kind;
    int32_t v;            /* the label index, worker, stage or rank */
    int invert;
    double mean;          /* the replayed mean step time */
    int pin;              /* the inferred communication waits pinned (S's range, cp_run.c alt_t) */
} scen_t;

/* The narrowest instantiated sweep (LN_RUN_K) for n scenarios, at most
 * LANES_MAX. */
static size_t lane_width(size_t n)
{
    return n <= 1 ? 1 : n <= 4 ? 4 : n <= 8 ? 8 : n <= 16 ? 16 : n <= 24 ? 24 : LANES_MAX;
}

/* The next narrower instantiated sweep below w. */
static size_t lane_narrower(size_t w)
{
    return w > 24 ? 24 : w > 16 ? 16 : w > 8 ? 8 : w > 4 ? 4 : 1;
}

/* Replay scenarios v[0..n) in sweeps of at most k_max lanes (1 to
 * LANES_MAX); *n_used gets the used steps' count. 0, or -1 out of memory. */
static int replay_all(const ctx_t *x, const mt_critpath_t *c, const int64_t *actual, const int64_t *ideal,
                      const int64_t *job_start, scen_t *v, size_t n, size_t k_max, uint64_t *n_used)
{
    const cp_graph_t *g = x->g;
    size_t N = g->n_nodes, NR = g->n_ranks;
    if (!n)
        return 0;
    /* the widest sweep: a lane count instantiated, at most k_max */
    size_t W = lane_width(n);
    while (W > 1 && W > k_max)
        W = lane_narrower(W);
    lanes_t L = {.g = g, .actual = actual, .ideal = ideal, .job_start = job_start, .carry = x->carry, .ev = x->ev,
                 .ev_at = x->ev_at, .jx = x->jx, .n_jx = x->n_jx, .rx = x->rx,
                 .n_rx = x->n_rx};
    /* a row's lanes: each scenario twice when both passes are one sweep */
    size_t R = x->ev ? 2 * W : W;
    uint32_t *mask = malloc((N ? N : 1) * sizeof *mask);
    uint32_t *rm = malloc((NR ? NR : 1) * sizeof *rm);
    uint32_t *rmk = malloc((NR ? NR : 1) * sizeof *rmk);
    uint32_t *lm = malloc((LAB_CAP + 1) * sizeof *lm);
    L.stride = R;
    L.cap = N < 1024 ? (N ? N : 1) : 1024; /* doubles as needed */
    L.pool = malloc(L.cap * R * sizeof *L.pool);
    L.free_slots = malloc(L.cap * sizeof *L.free_slots);
    L.slot = malloc((N ? N : 1) * sizeof *L.slot);
    L.left = malloc((N ? N : 1) * sizeof *L.left);
    L.state = malloc(N ? N : 1);
    L.sd = malloc((g->n_syncs ? g->n_syncs : 1) * R * sizeof *L.sd);
    L.cd = malloc((x->n_jx ? x->n_jx : 1) * R * sizeof *L.cd);
    L.ims = malloc((g->n_inst ? g->n_inst : 1) * R * sizeof *L.ims);
    L.rend = malloc((x->rx ? x->n_rx : g->n_rs ? g->n_rs : 1) * R * sizeof *L.rend);
    L.idone = malloc(g->n_inst ? g->n_inst : 1);
    bool slow = false;
    for (size_t r = 0; x->late && r < NR && !slow; r++)
        slow = x->late[r] & 2;
    uint32_t *dm = slow ? malloc((NR ? NR : 1) * sizeof *dm) : NULL;
    if (slow)
        L.hc = malloc((g->n_rs ? g->n_rs : 1) * R * sizeof *L.hc);
    L.dmask = dm;
    int ret = -1;
    if (slow && (!dm || !L.hc))
        goto out;
    if (!mask || !rm || !rmk || !lm || !L.pool || !L.free_slots || !L.slot || !L.left || !L.state || !L.sd || !L.cd || !L.ims ||
        !L.rend || !L.idone)
        goto out;
    L.mask = mask;
    L.rmask = rmk;
    L.nref = x->nref;
    L.rdom = x->rdom;
    for (size_t a = 0; a < n;) {
        size_t left = n - a;
        size_t K = lane_width(left);
        if (K > W)
            K = W;
        size_t k_used = left < K ? left : K; /* lanes past it: padding */
        /* a node's lanes: by its rank (worker, stage, rank), by its label, for all, inverted */
        uint32_t all = 0, inv = 0;
        L.pin = 0;
        memset(rm, 0, (NR ? NR : 1) * sizeof *rm);
        memset(lm, 0, (LAB_CAP + 1) * sizeof *lm);
        for (size_t l = 0; l < k_used; l++) {
            const scen_t *s = &v[a + l];
            uint32_t bit = 1u << l;
            if (s->invert)
                inv |= bit;
            if (s->pin)
                L.pin |= bit;
            if (s->kind == SC_ALL) {
                all |= bit;
            } else if (s->kind == SC_LABEL) {
                if (s->v >= 0 && s->v < LAB_CAP)
                    lm[s->v] |= bit;
            } else {
                for (size_t r = 0; r < NR; r++) {
                    const coord_t *co = &x->co[r];
                    if ((s->kind == SC_WORKER && co->worker == s->v) || (s->kind == SC_STAGE && co->stage == s->v) ||
                        (s->kind == SC_RANK && co->rank == s->v))
                        rm[r] |= bit;
                }
            }
        }
        for (size_t i = 0; i < N; i++) {
            uint16_t lb = x->lab[i];
            mask[i] = (all | rm[g->nodes[i].rank_i] | lm[lb < LAB_CAP ? lb : LAB_CAP]) ^ inv;
        }
        for (size_t r = 0; r < NR; r++) {
            rmk[r] = (all | rm[r]) ^ inv;
            if (dm) /* a slow host keeps its gaps where its rank is measured */
                dm[r] = x->late[r] & 2 ? ~rmk[r] : 0;
        }
        double mean[LANE_ROW];
        /* (ev: never a run carried as one, cp_ideal_run) */
#define LN_PICK(W) (L.ev ? (L.dmask ? ln_run##W##ed : ln_run##W##e) : L.dmask ? ln_run##W##d : L.carry ? ln_run##W##c : ln_run##W)
        switch (K) {
        case 1: LN_PICK(1)(&L, c, mean, n_used); break;
        case 4: LN_PICK(4)(&L, c, mean, n_used); break;
        case 8: LN_PICK(8)(&L, c, mean, n_used); break;
        case 16: LN_PICK(16)(&L, c, mean, n_used); break;
        case 24: LN_PICK(24)(&L, c, mean, n_used); break;
        default: LN_PICK(32)(&L, c, mean, n_used); break;
        }
#undef LN_PICK
        for (size_t l = 0; l < k_used; l++)
            v[a + l].mean = mean[l];
        a += k_used;
    }
    ret = L.fail ? -1 : 0;
out:
    free(dm);
    free(L.hc);
    free(mask);
    free(rm);
    free(rmk);
    free(lm);
    free(L.pool);
    free(L.free_slots);
    free(L.slot);
    free(L.left);
    free(L.state);
    free(L.sd);
    free(L.cd);
    free(L.ims);
    free(L.rend);
    free(L.idone);
    return ret;
}

/* The decomposition label of a node: send and receive of a direction
 * together for timelines; the class for Kineto graphs. */
static void label_of(const cp_graph_t *g, const cp_node_t *n, char *buf, size_t cap)
{
    if (!g->explicit_deps) {
        const char *s = mt_an_class_str((mt_an_class_t)n->cls);
        size_t len = strlen(s) < cap - 1 ? strlen(s) : cap - 1;
        memcpy(buf, s, len);
        buf[len] = '\0';
        return;
    }
    size_t len = n->name_len < cap - 1 ? n->name_len : cap - 1;
    if (len > 5 && (memcmp(n->name + len - 5, "-send", 5) == 0 || memcmp(n->name + len - 5, "-recv", 5) == 0) &&
        len - 5 + 9 < cap) {
        memcpy(buf, n->name, len - 5);
        memcpy(buf + len - 5, "-pp-comm", 9);
        return;
    }
    memcpy(buf, n->name, len);
    buf[len] = '\0';
}


static int share_cmp(const void *pa, const void *pb)
{
    const mt_cp_share_t *a = pa, *b = pb;
    if (a->s != b->s)
        return a->s > b->s ? -1 : 1;
    return strcmp(a->name, b->name);
}

/* Distinct values of v[0..n) into *out (sorted); their count. */
static size_t distinct(int32_t *v, size_t n)
{
    qsort(v, n, sizeof *v, mt_cmp_i32);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!k || v[k - 1] != v[i])
            v[k++] = v[i];
    return k;
}

/* kn[0..n) (ascending) and their names' hashes hk[0..n) rearranged so
 * that equal hashes lie together, each group's nodes still ascending (the
 * groups by their first node): all the typical values need of a sort by
 * (hash, node), each group's value being its own. In linear time (fast
 * path: the radix sort of the 64-bit hashes was a tenth of the what-if on
 * the 256-rank job; a job has a few dozen names). 0, or -1 out of memory. */
static int group_by_hash(uint64_t *hk, uint32_t *kn, size_t n)
{
    size_t cap = 64, ng = 0; /* slots (a power of two, at most half full) and groups */
    int32_t *slot = malloc(cap * sizeof *slot);
    uint64_t *gh = malloc(cap / 2 * sizeof *gh); /* per group: its hash, */
    uint32_t *at = malloc((cap / 2 + 1) * sizeof *at); /* its count, then where its next node goes */
    uint32_t *gid = malloc((n ? n : 1) * sizeof *gid), *kn0 = malloc((n ? n : 1) * sizeof *kn0);
    int ret = -1;
    if (!slot || !gh || !at || !gid || !kn0)
        goto out;
    memset(slot, 0xff, cap * sizeof *slot);
    for (size_t i = 0; i < n; i++) {
        uint64_t h = hk[i];
        size_t s = (size_t)(h ^ h >> 32) & (cap - 1);
        while (slot[s] >= 0 && gh[slot[s]] != h)
            s = (s + 1) & (cap - 1);
        if (slot[s] < 0) {
            if (ng + 1 > cap / 2) { /* grow: twice the slots, the groups placed again */
                size_t nc = cap * 2;
                int32_t *ns = malloc(nc * sizeof *ns);
                uint64_t *ngh = realloc(gh, nc / 2 * sizeof *gh);
                if (ngh)
                    gh = ngh;
                uint32_t *nat = ngh ? realloc(at, (nc / 2 + 1) * sizeof *at) : NULL;
                if (nat)
                    at = nat;
                if (!ns || !ngh || !nat) {
                    free(ns);
                    goto out;
                }
                memset(ns, 0xff, nc * sizeof *ns);
                for (size_t q = 0; q < ng; q++) {
                    size_t t = (size_t)(gh[q] ^ gh[q] >> 32) & (nc - 1);
                    while (ns[t] >= 0)
                        t = (t + 1) & (nc - 1);
                    ns[t] = (int32_t)q;
                }
                free(slot);
                slot = ns;
                cap = nc;
                s = (size_t)(h ^ h >> 32) & (cap - 1);
                while (slot[s] >= 0)
                    s = (s + 1) & (cap - 1);
            }
            slot[s] = (int32_t)ng;
            gh[ng] = h;
            at[ng++] = 0;
        }
        gid[i] = (uint32_t)slot[s];
        at[gid[i]]++;
    }
    /* the counts into the groups' first places */
    uint32_t sum = 0;
    for (size_t q = 0; q < ng; q++) {
        uint32_t k = at[q];
        at[q] = sum;
        sum += k;
    }
    memcpy(kn0, kn, n * sizeof *kn0);
    for (size_t i = 0; i < n; i++) {
        uint32_t to = at[gid[i]]++;
        kn[to] = kn0[i];
        hk[to] = gh[gid[i]];
    }
    ret = 0;
out:
    free(slot);
    free(gh);
    free(at);
    free(gid);
    free(kn0);
    return ret;
}

/* g->ev by job step, for sweeps of both passes at once (ctx_t.ev, ln_run's
 * E): the events of no step first, then step by step, each step's in
 * their replay order; *at (c->n_steps + 2 entries) where each group
 * begins (at[j + 1]: step j's), at[c->n_steps + 1] = g->n_ev. None (*ev
 * NULL) where a step's replay could read another step's: an instance
 * whose members are of different steps (ln_end starts each member when
 * the first ends), or an edge from a sync of a step not before the one
 * it starts (a rank's step numbers out of time order). 0, or -1 out of
 * memory. */
static int ev_order(const cp_graph_t *g, const mt_critpath_t *c, int64_t **ev, uint32_t **at)
{
    *ev = NULL;
    *at = NULL;
    for (size_t i = 0; i < g->n_inst; i++) {
        const cp_inst_t *I = &g->inst[i];
        for (uint32_t m = 1; m < I->n; m++)
            if (g->nodes[g->imem[I->m0 + m]].job != g->nodes[g->imem[I->m0]].job)
                return 0;
    }
    for (size_t j = 0; j < c->n_steps; j++) {
        const mt_cp_step_t *s = &c->steps[j];
        for (uint32_t k = s->first; k < s->first + s->n; k++) {
            int32_t q = g->rs[g->js[k]].sb_start;
            if (q >= 0 && g->syncs[q].jnext == (int32_t)j && g->syncs[q].job >= (int32_t)j)
                return 0;
        }
    }
    size_t ng = c->n_steps + 1; /* the groups: no step, then each step */
    uint32_t *a = calloc(ng + 1, sizeof *a), *w = malloc(ng * sizeof *w);
    int64_t *e = malloc((g->n_ev ? g->n_ev : 1) * sizeof *e);
    /* each event's job step, looked up once (fast path: the second pass
     * read each node's record again) */
    int32_t *jb = malloc((g->n_ev ? g->n_ev : 1) * sizeof *jb);
    if (!a || !w || !e || !jb) {
        free(a);
        free(w);
        free(e);
        free(jb);
        return -1;
    }
    for (size_t k = 0; k < g->n_ev; k++) {
        int64_t v = g->ev[k];
        int32_t id = (int32_t)(v & 0xffffffff);
        int32_t job = (int)(v >> 32) == 1 ? g->syncs[id].job : g->hot[id].job;
        jb[k] = job;
        a[job + 2]++;
    }
    for (size_t q = 1; q <= ng; q++)
        a[q] += a[q - 1];
    memcpy(w, a, ng * sizeof *w);
    for (size_t k = 0; k < g->n_ev; k++)
        e[w[jb[k] + 1]++] = g->ev[k];
    free(jb);
    free(w);
    *ev = e;
    *at = a;
    return 0;
}

mt_status_t cp_ideal_run(const cp_graph_t *g, const mt_cp_request_t *rq, const uint8_t *late, mt_critpath_t *c)
{
    mt_cp_ideal_t *I = &c->ideal;
    memset(I, 0, sizeof *I);
    I->blamed_stage = I->ms_stage = I->mw_rank = I->mw_worker = I->mw_stage = -1;
    size_t N = g->n_nodes, NR = g->n_ranks;
    mt_status_t st = MT_ERR_NOMEM;
    int64_t *job_start = malloc((c->n_steps ? c->n_steps : 1) * sizeof *job_start);
    int64_t *actual = malloc((N ? N : 1) * sizeof *actual);
    int64_t *ideal = malloc((N ? N : 1) * sizeof *ideal);
    int64_t *vals = malloc((N ? N : 1) * sizeof *vals);
    /* cp_staged_median's stages of the ranks' means and its scratch */
    size_t nst = rq->n_coords ? 0 : rq->n_stages;
    int32_t *rst = malloc((NR ? NR : 1) * sizeof *rst);
    int64_t *ssc = malloc((NR + 2 * nst + 1) * sizeof *ssc);
    uint64_t *hk = malloc((N ? N : 1) * sizeof *hk); /* name hashes of the used steps' nodes */
    uint32_t *kn = malloc((N ? N : 1) * sizeof *kn); /* ... and the nodes */
    coord_t *co = malloc((NR ? NR : 1) * sizeof *co);
    int32_t *ws = malloc((NR ? NR : 1) * sizeof *ws), *ss = malloc((NR ? NR : 1) * sizeof *ss);
    char (*labels)[64] = NULL;
    uint16_t *lab = NULL;
    uint32_t *nref = NULL;
    uint8_t *rdom = NULL;
    int64_t *ev = NULL; /* ctx_t.ev, ev_at */
    uint32_t *ev_at = NULL;
    int32_t *jx = NULL; /* ctx_t.jx */
    uint32_t *rx = NULL; /* ctx_t.rx */
    double *rex = NULL; /* per rank: its measured durations' excess over the ideal ones */
    scen_t *sc = NULL;
    if (!job_start || !actual || !ideal || !vals || !rst || !ssc || !hk || !kn || !co || !ws || !ss)
        goto out;
    for (size_t j = 0; j < c->n_steps; j++)
        job_start[j] = c->steps[j].start_ns;
    for (size_t k = 0; k < NR; k++) {
        co[k] = (coord_t){g->ranks[k].rank, -1, g->ranks[k].rank};
        for (size_t q = 0; q < rq->n_coords; q++)
            if (rq->coords[q].rank == g->ranks[k].rank)
                co[k] = (coord_t){rq->coords[q].worker, rq->coords[q].stage, g->ranks[k].rank};
        if (rq->n_coords || !rq->stage_ranks || !rq->stage_first)
            continue;
        /* A Kineto job: the pipeline pass's stages; the worker is the
         * rank's place in its stage's ranks (listed ascending), the
         * data-parallel index when stages are blocks of DP x TP ranks. */
        for (size_t s = 0; s < rq->n_stages; s++)
            for (size_t q = rq->stage_first[s]; q < rq->stage_first[s + 1]; q++)
                if (rq->stage_ranks[q] == g->ranks[k].rank)
                    co[k] = (coord_t){(int32_t)(q - rq->stage_first[s]), (int32_t)s, g->ranks[k].rank};
    }
    /* measured values and the typical value of each name; the names of a
     * rank point into its string pool, so a direct-mapped memo of pointer
     * -> hash spares hashing the same long kernel name again and again */
    cp_name_memo_t memo[CP_NAME_MEMO];
    memset(memo, 0, sizeof memo);
    /* A pipeline's run is replayed as one (lanes_t.carry): the nodes
     * outside the used steps take the typical value of their name too (a
     * slow GPU's warm-up chunk at its measured length held every later
     * chunk of the ideal back by as much), from the used steps' values. */
    bool carry = !rq->n_coords && rq->n_stages >= 2 && rq->stage_ranks && rq->stage_first && c->n_steps >= 2;
    size_t nk = 0;
    for (size_t i = 0; i < N; i++) {
        const cp_node_t *n = &g->nodes[i];
        int64_t T = n->inst >= 0 ? cp_node_T(g, n) : 0;
        actual[i] = n->inst >= 0 ? (T > 0 ? T : 0) : n->e - n->s;
        ideal[i] = actual[i];
        if (carry || (n->job >= 0 && c->steps[n->job].used)) {
            hk[nk] = cp_name_hash(memo, n);
            kn[nk++] = (uint32_t)i;
        }
    }
    /* each name's nodes together, by node (qsort with a comparator cost
     * 10 % of the what-if on 256 ranks, a radix sort by (hash, node) 10 %
     * still: group_by_hash) */
    if (group_by_hash(hk, kn, nk))
        goto out;
    for (size_t a0 = 0; a0 < nk;) {
        size_t b = a0;
        while (b < nk && hk[b] == hk[a0])
            b++;
        /* the group's nodes of used steps first (stable: still by node) */
        size_t a = a0, u = a0;
        if (carry) {
            for (size_t k = a0; k < b; k++) {
                const cp_node_t *n = &g->nodes[kn[k]];
                if (n->job >= 0 && c->steps[n->job].used)
                    vals[u++ - a0] = (int64_t)kn[k];
            }
            size_t o = u;
            for (size_t k = a0; k < b; k++) {
                const cp_node_t *n = &g->nodes[kn[k]];
                if (!(n->job >= 0 && c->steps[n->job].used))
                    vals[o++ - a0] = (int64_t)kn[k];
            }
            for (size_t k = a0; k < b; k++)
                kn[k] = (uint32_t)vals[k - a0];
        } else {
            u = b;
        }
        if (u == a0) { /* no value of a used step: as measured */
            a0 = b;
            continue;
        }
        const cp_node_t *n0 = &g->nodes[kn[a]];
        int64_t typical;
        if (g->dist && cp_dist_typical(g->dist, hk[a0], &typical)) {
            /* reduced over the processes (cp_dist.c): the same value */
        } else if (n0->cls == MT_AN_COMM) {
            /* the median transfer (the mean of the two middle values) */
            for (size_t k = a; k < u; k++)
                vals[k - a] = actual[kn[k]];
            /* by selection: a sort of every transfer of the job's most
             * common collective was a quarter of the what-if's own work */
            typical = mt_stats_median_i64(vals, u - a);
        } else if (rq->n_coords) {
            /* a timeline (the paper's jobs): the mean, as its artifact */
            double sum = 0;
            for (size_t k = a; k < u; k++)
                sum += (double)actual[kn[k]];
            typical = (int64_t)(sum / (double)(u - a) + 0.5);
        } else {
            /* a Kineto job: the median over ranks of each rank's mean, the
             * straggler what-if's "median rank's speed". The paper's mean
             * over every worker is its median on thousands of them; on 8
             * ranks one GPU 1.25x slow raises the mean by 3 % and the
             * ideal with it (issue 38: S 1.197 against the twins' 1.225).
             * The nodes come rank by rank (node ids, stable sort). */
            size_t nr = 0;
            for (size_t x = a; x < u;) {
                size_t y = x;
                double sum = 0;
                int32_t ri = g->nodes[kn[x]].rank_i;
                while (y < u && g->nodes[kn[y]].rank_i == ri)
                    sum += (double)actual[kn[y++]];
                vals[nr] = (int64_t)(sum / (double)(y - x) + 0.5);
                rst[nr++] = co[ri].stage;
                x = y;
            }
            typical = cp_staged_median(vals, rst, nr, nst, ssc);
        }
        for (size_t k = a; k < b; k++)
            ideal[kn[k]] = typical;
        a0 = b;
    }
    /* read by nothing below: freed before the replays' tables come (20
     * bytes a node, 33 MB of process 0's peak at 4096 ranks x 320) */
    free(vals);
    free(rst);
    free(ssc);
    free(hk);
    free(kn);
    vals = NULL;
    rst = NULL;
    ssc = NULL;
    hk = NULL;
    kn = NULL;
    /* every node of the same name outside the used steps too */
    ctx_t x = {.co = co, .g = g, .carry = carry, .late = late};
    /* the reads of each node's end in a sweep (lanes_t.nref): ln_start's
     * predecessors of the same step, ln_sync's activity waited for */
    nref = calloc(N ? N : 1, sizeof *nref);
    rdom = calloc(N ? N : 1, 1);
    if (!nref || !rdom)
        goto out;
    for (size_t k = 0; k < N; k++) {
        const cp_hot_t *h = &g->hot[k];
        if (h->job < 0 && !carry)
            continue;
        for (int q = 0; q < 3; q++)
            if (h->pred[q] >= 0 && (carry || (h->flags >> q & 1)))
                nref[h->pred[q]]++;
        /* lanes_t.rdom: its stream predecessor starts it no earlier than
         * that one's end (ln_start, in every lane: no pinning on stream
         * order), and it ends no earlier than it starts (an instance
         * member's end is at least its start; another's duration is 0 or
         * more in each lane) */
        int32_t p = h->pred[0];
        if (p >= 0 && (carry || (h->flags & 1)) && h->rstep >= 0 && g->hot[g->pos[p]].rstep == h->rstep &&
            (h->inst >= 0 || ((actual[h->id] >= 0 || h->dt >= 0) && (ideal[h->id] >= 0 || h->dt >= 0))))
            rdom[p] = 1;
    }
    x.rdom = rdom;
    for (size_t j = 0; j < g->n_syncs; j++) {
        const cp_sync_t *S = &g->syncs[j];
        if (S->w >= 0 && g->nodes[S->w].e >= S->s && (carry || g->nodes[S->w].job == S->job))
            nref[S->w]++;
    }
    x.nref = nref;
    /* both passes of a sweep in one (ln_run's E) where there are two:
     * replayed step by step, with the edge to the next step */
    if (!carry && g->n_jnext && g->cd0 && ev_order(g, c, &ev, &ev_at))
        goto out;
    x.ev = ev;
    x.ev_at = ev_at;
    /* the edge's rows (lanes_t.cd) only for the syncs that have one; with
     * both passes in one sweep, only for those of the step being replayed
     * (its rank step's place in it: the rows of a step are read while its
     * events are, and ln_edge_step writes them just before) */
    if (g->n_jnext) {
        if (!(jx = malloc(g->n_syncs * sizeof *jx)))
            goto out;
        for (size_t q = 0; q < g->n_syncs; q++)
            jx[q] = ev || g->syncs[q].jnext < 0 ? -1 : (int32_t)x.n_jx++;
        for (size_t j = 0; ev && j < c->n_steps; j++) {
            const mt_cp_step_t *s = &c->steps[j];
            for (uint32_t k = s->first; k < s->first + s->n; k++) {
                int32_t q = g->rs[g->js[k]].sb_start;
                if (q >= 0 && g->syncs[q].jnext == (int32_t)j)
                    jx[q] = (int32_t)(k - s->first);
            }
            if (s->n > x.n_jx)
                x.n_jx = s->n;
        }
    }
    x.jx = jx;
    /* with both passes in one sweep, a step's rank steps' rows of rend
     * the next step's (lanes_t.rx) */
    if (ev) {
        if (!(rx = malloc((g->n_rs ? g->n_rs : 1) * sizeof *rx)))
            goto out;
        size_t nmax = 0;
        for (size_t j = 0; j < c->n_steps; j++)
            nmax = c->steps[j].n > nmax ? c->steps[j].n : nmax;
        for (size_t i = 0; i < g->n_rs; i++)
            rx[i] = (uint32_t)nmax;
        for (size_t j = 0; j < c->n_steps; j++)
            for (uint32_t k = c->steps[j].first; k < c->steps[j].first + c->steps[j].n; k++)
                rx[g->js[k]] = k - c->steps[j].first;
        x.n_rx = nmax + 1;
    }
    x.rx = rx;
    /* the type labels */
    labels = malloc(LAB_CAP * sizeof *labels);
    lab = malloc((N ? N : 1) * sizeof *lab);
    if (!labels || !lab)
        goto out;
    x.lab = lab;
    size_t nl = 0;
    int32_t by_cls[256]; /* a Kineto graph's label is its class: found once per class */
    for (size_t k = 0; k < 256; k++)
        by_cls[k] = -1;
    for (size_t i = 0; i < N; i++) {
        if (!g->explicit_deps && by_cls[g->nodes[i].cls] >= 0) {
            lab[i] = (uint16_t)by_cls[g->nodes[i].cls];
            continue;
        }
        char buf[64];
        label_of(g, &g->nodes[i], buf, sizeof buf);
        size_t k = 0;
        while (k < nl && strcmp(labels[k], buf))
            k++;
        if (k == nl && nl < LAB_CAP)
            memcpy(labels[nl++], buf, sizeof buf);
        lab[i] = k < nl ? (uint16_t)k : LAB_NONE;
        if (!g->explicit_deps)
            by_cls[g->nodes[i].cls] = lab[i];
    }
    /* the workers and stages */
    for (size_t k = 0; k < NR; k++) {
        ws[k] = co[k].worker;
        ss[k] = co[k].stage;
    }
    size_t nw = distinct(ws, NR), ns = distinct(ss, NR);
    if (ns && ss[0] < 0) { /* stage unknown */
        memmove(ss, ss + 1, (ns - 1) * sizeof *ss);
        ns--;
    }
    size_t nw_all = nw;
    /* per rank: its measured durations' excess over the ideal ones, summed
     * over the used steps (sums of integers below 2^53: exact in any
     * order); read for the workers to replay and for M_W's guesses */
    rex = calloc(NR ? NR : 1, sizeof *rex);
    if (!rex)
        goto out;
    for (size_t i = 0; i < N; i++) {
        const cp_node_t *n = &g->nodes[i];
        if (n->job >= 0 && c->steps[n->job].used && actual[i] > ideal[i])
            rex[n->rank_i] += (double)(actual[i] - ideal[i]);
    }
    if (nw > MT_CP_IDEAL_WORKERS) {
        /* One replay per worker made the what-if O(workers x activities):
         * 256 ranks of a Kineto job took 7x the load. Replayed: the workers
         * whose measured durations exceed the ideal ones the most (summed
         * over the used steps), the only ones whose S can be large. */
        double *ex = calloc(nw, sizeof *ex);
        if (!ex)
            goto out;
        for (size_t r = 0; r < NR; r++) {
            int32_t w = co[r].worker;
            size_t lo = 0, hi = nw;
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (ws[mid] < w)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            ex[lo] += rex[r];
        }
        for (size_t k = 0; k < MT_CP_IDEAL_WORKERS; k++) { /* selection: the largest first, lowest id on ties */
            size_t b = k;
            for (size_t q = k + 1; q < nw; q++)
                if (ex[q] > ex[b] || (ex[q] == ex[b] && ws[q] < ws[b]))
                    b = q;
            double te = ex[k];
            int32_t tw = ws[k];
            ex[k] = ex[b];
            ws[k] = ws[b];
            ex[b] = te;
            ws[b] = tw;
        }
        free(ex);
        nw = MT_CP_IDEAL_WORKERS;
        qsort(ws, nw, sizeof *ws, mt_cmp_i32);
    }
    /* The scenarios that need no other's result, replayed together: no
     * delay (all measured), ideal (none), one per type, worker and stage
     * (that group measured), and M_S's (the last stage at its ideal
     * values), in sweeps of up to LANES_MAX lanes (the rows alive at one
     * time are what a sweep holds, not a row per node and lane). */
    /* ... and, when the graph holds communication kernels' inferred stream
     * waits, no delay and ideal again with them pinned: S's other binding
     * (mt_cp_ideal_t.alt_s; in the lanes the last sweep would pad) */
    size_t n_pin = c->waits_pinned ? 2 : 0;
    size_t n_sc = 2 + nl + nw + ns + (ns ? 1 : 0) + n_pin;
    /* M_W replays one rank at its ideal values, the rank known only from
     * the S per worker and stage; the lanes the last sweep pads with take
     * guesses: the ranks whose measured durations exceed the ideal ones
     * the most. When M_W's rank is among them, its own sweep is spared
     * (fast path: one more sweep of the graph, a twentieth of the critical
     * path on 8 x 157 MB; the lanes are independent, so the result is the
     * same). When every rank M_W can pick (those of the workers replayed)
     * fits beside the scenarios in one sweep, they all take lanes and M_W
     * never has a sweep of its own (fast path: on 8 x 157 MB the guess
     * missed, and that sweep of one lane cost half of the 16 lanes' one;
     * 24 lanes cost less than both). */
    size_t rem = n_sc % LANES_MAX, n_guess = rem ? lane_width(rem) - rem : 0;
    if (n_guess > NR)
        n_guess = NR;
    size_t n_cand = 0; /* the ranks M_W may pick: those of a worker replayed */
    for (size_t r = 0; r < NR && nw; r++)
        n_cand += bsearch(&co[r].worker, ws, nw, sizeof *ws, mt_cmp_i32) != NULL;
    bool all_cand = nw && n_sc + n_cand <= LANES_MAX;
    if (all_cand)
        n_guess = n_cand;
    sc = malloc((n_sc + n_guess) * sizeof *sc);
    if (!sc)
        goto out;
    size_t q = 0;
    sc[q++] = (scen_t){SC_ALL, 0, 0, 0, 0};
    sc[q++] = (scen_t){SC_ALL, 0, 1, 0, 0};
    for (size_t k = 0; k < nl; k++)
        sc[q++] = (scen_t){SC_LABEL, (int32_t)k, 0, 0, 0};
    for (size_t k = 0; k < nw; k++)
        sc[q++] = (scen_t){SC_WORKER, ws[k], 0, 0, 0};
    for (size_t k = 0; k < ns; k++)
        sc[q++] = (scen_t){SC_STAGE, ss[k], 0, 0, 0};
    if (ns)
        sc[q++] = (scen_t){SC_STAGE, ss[ns - 1], 1, 0, 0};
    if (n_pin) {
        sc[q++] = (scen_t){SC_ALL, 0, 0, 0, 1};
        sc[q++] = (scen_t){SC_ALL, 0, 1, 0, 1};
    }
    for (size_t r = 0; all_cand && r < NR; r++)
        if (bsearch(&co[r].worker, ws, nw, sizeof *ws, mt_cmp_i32))
            sc[q++] = (scen_t){SC_RANK, co[r].rank, 1, 0, 0};
    for (size_t k = 0; !all_cand && k < n_guess; k++) { /* selection: the largest first, lowest rank on ties */
        size_t b = NR;
        for (size_t r = 0; r < NR; r++)
            if (rex[r] >= 0 && (b == NR || rex[r] > rex[b] || (rex[r] == rex[b] && co[r].rank < co[b].rank)))
                b = r;
        sc[q++] = (scen_t){SC_RANK, co[b].rank, 1, 0, 0};
        rex[b] = -1;
    }
    int rr = replay_all(&x, c, actual, ideal, job_start, sc, n_sc + n_guess, LANES_MAX, &I->steps);
    if (rr)
        goto out;
    double t_nd = sc[0].mean, t_id = sc[1].mean;
    if (!I->steps || t_id <= 0) {
        st = MT_OK;
        goto out;
    }
    I->run = true;
    for (size_t j = 0; carry && j < c->n_steps && !I->by_period; j++)
        I->by_period = cp_step_has_period(c, j);
    I->nodelay_ns = (int64_t)(t_nd + 0.5);
    I->ideal_ns = (int64_t)(t_id + 0.5);
    I->s = t_nd / t_id;
    if (n_pin && sc[n_sc - 1].mean > 0) {
        I->alt_s = sc[n_sc - 2].mean / sc[n_sc - 1].mean;
        double d = I->alt_s - I->s;
        I->s_ranged = (d < 0 ? -d : d) >= 0.005 * I->s;
    }
    /* by type */
    I->by_type = calloc(nl ? nl : 1, sizeof *I->by_type);
    if (!I->by_type)
        goto out;
    for (size_t k = 0; k < nl; k++) {
        mt_cp_share_t *s = &I->by_type[I->n_type++];
        snprintf(s->name, sizeof s->name, "%s", labels[k]);
        s->id = -1;
        s->s = sc[2 + k].mean / t_id;
    }
    qsort(I->by_type, I->n_type, sizeof *I->by_type, share_cmp);
    /* by worker and by stage */
    I->n_worker_all = nw_all;
    I->by_worker = calloc(nw ? nw : 1, sizeof *I->by_worker);
    I->by_stage = calloc(ns ? ns : 1, sizeof *I->by_stage);
    I->heat = calloc((nw ? nw : 1) * (ns ? ns : 1), sizeof *I->heat);
    if (!I->by_worker || !I->by_stage || !I->heat)
        goto out;
    for (size_t k = 0; k < nw; k++) {
        I->by_worker[k] = (mt_cp_share_t){.id = ws[k], .s = sc[2 + nl + k].mean / t_id};
        I->n_worker++;
    }
    double best = -1;
    for (size_t k = 0; k < ns; k++) {
        I->by_stage[k] = (mt_cp_share_t){.id = ss[k], .s = sc[2 + nl + nw + k].mean / t_id};
        I->n_stage++;
        if (I->by_stage[k].s > best) {
            best = I->by_stage[k].s;
            I->blamed_stage = ss[k];
        }
    }
    for (size_t a = 0; a < nw; a++)
        for (size_t b = 0; b < ns; b++) {
            double u = I->by_worker[a].s, v = I->by_stage[b].s;
            I->heat[a * ns + b] = u < v ? u : v;
        }
    /* M_S: the last stage at the ideal values in the no-delay replay */
    if (ns && t_nd > t_id) {
        double trem = sc[2 + nl + nw + ns].mean;
        I->has_ms = true;
        I->ms_stage = ss[ns - 1];
        I->ms_rem_ns = (int64_t)(trem + 0.5);
        I->ms = (t_nd - trem) / (t_nd - t_id);
    }
    /* M_W: the rank with the largest min(S_worker, S_stage), lowest rank on ties */
    if (t_nd > t_id && nw) {
        int32_t pick = -1;
        double hv = -1;
        for (size_t k = 0; k < NR; k++) {
            double u = 0, v = 1e300;
            for (size_t a = 0; a < nw; a++)
                if (I->by_worker[a].id == co[k].worker)
                    u = I->by_worker[a].s;
            for (size_t b = 0; b < ns; b++)
                if (I->by_stage[b].id == co[k].stage)
                    v = I->by_stage[b].s;
            double h = u < v ? u : v;
            if (h > hv || (h == hv && co[k].rank < pick)) {
                hv = h;
                pick = co[k].rank;
                I->mw_worker = co[k].worker;
                I->mw_stage = co[k].stage;
            }
        }
        scen_t mw = {SC_RANK, pick, 1, 0, 0};
        size_t k = 0;
        while (k < n_guess && sc[n_sc + k].v != pick)
            k++;
        if (k < n_guess)
            mw.mean = sc[n_sc + k].mean;
        else if (replay_all(&x, c, actual, ideal, job_start, &mw, 1, 1, NULL))
            goto out;
        I->has_mw = true;
        I->mw_rank = pick;
        I->mw_rem_ns = (int64_t)(mw.mean + 0.5);
        I->mw = (t_nd - mw.mean) / (t_nd - t_id);
    }
    st = MT_OK;
out:
    free(job_start);
    free(rst);
    free(ssc);
    free(sc);
    free(actual);
    free(ideal);
    free(vals);
    free(hk);
    free(kn);
    free(co);
    free(ws);
    free(ss);
    free(labels);
    free(lab);
    free(nref);
    free(rdom);
    free(ev);
    free(ev_at);
    free(jx);
    free(rx);
    free(rex);
    return st;
}
