/* The replay of the critical path's graph (critpath.c builds it, cp_run.c
 * puts its events in replay order) under a scenario: the sweeps (the
 * measured run and what-ifs side by side) over the per-event rules of
 * cp_event_int.h, the edges' shifts; cp_run.c drives it (internal to
 * src/cross/, cp_run_int.h). */
#include "base/bigmem.h"
#include "cross/cp_event_int.h"

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

int cp_rp_alloc_lean(const cp_graph_t *g, rp_t *r)
{
    r->sd = malloc((g->n_syncs ? g->n_syncs : 1) * sizeof *r->sd);
    r->ims = malloc((g->n_inst ? g->n_inst : 1) * sizeof *r->ims);
    r->idone = malloc(g->n_inst ? g->n_inst : 1);
    r->hims = malloc((g->n_hin ? g->n_hin : 1) * sizeof *r->hims);
    r->hidone = malloc(g->n_hin ? g->n_hin : 1);
    r->jend = malloc((g->n_rs ? g->n_rs : 1) * sizeof *r->jend);
    r->hc = malloc((g->n_rs ? g->n_rs : 1) * sizeof *r->hc);
    r->rend = malloc((g->n_rs ? g->n_rs : 1) * sizeof *r->rend);
    r->cd = malloc((g->n_syncs ? g->n_syncs : 1) * sizeof *r->cd);
    return r->sd && r->ims && r->idone && r->hims && r->hidone && r->jend && r->hc && r->rend && r->cd ? 0 : -1;
}

int cp_rp_alloc_nodes(const cp_graph_t *g, rp_t *r)
{
    size_t n = g->n_nodes ? g->n_nodes : 1;
    if (!r->s)
        r->s = mt_big_malloc(n * sizeof *r->s);
    if (!r->e)
        r->e = mt_big_malloc(n * sizeof *r->e);
    if (!r->sdone)
        r->sdone = mt_big_malloc(n);
    return r->s && r->e && r->sdone ? 0 : -1;
}

int cp_rp_alloc(const cp_graph_t *g, rp_t *r)
{
    return cp_rp_alloc_lean(g, r) || cp_rp_alloc_nodes(g, r) ? -1 : 0;
}

/* The events of g in replay order under sc (a copy: see CP_INLINE). */
CP_INLINE void sweep(const cp_graph_t *g, const scen_t sc, rp_t *r)
{
    for (size_t k = 0; k < g->n_ev; k++)
        event_of(g, &sc, r, g->ev[k]);
}

void (*cp_replay_probe)(const cp_graph_t *g, const scen_t *sc, const rp_t *r, const bool *on, int n);

void cp_rp_init(const cp_graph_t *g, const scen_t *sc, rp_t *r)
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
            cp_rp_init(g, sc, r);
            r->cd_on = 1;
        } else {
            cp_rp_init(g, sc, r);
        }
        /* the scenarios every run replays (measured, the what-ifs "comm"
         * and "launch") each with its flags as constants: see CP_INLINE */
        /* (a pinned scenario, the ranges' other binding, is swept as it
         * is: the constant ones have pin_inferred 0) */
        bool plain = !sc->factor && !sc->carry && !sc->pin_inferred;
        if (plain && !sc->drop_launch && !sc->comm_transfer)
            sweep(g, (scen_t){0}, r);
        else if (plain && !sc->drop_launch && sc->comm_transfer)
            sweep(g, (scen_t){.comm_transfer = 1}, r);
        else if (plain && sc->drop_launch && !sc->comm_transfer)
            sweep(g, (scen_t){.drop_launch = 1}, r);
        else
            sweep(g, *sc, r);
        if (cp_replay_probe) {
            /* the scenario as swept: the constant ones above keep only their flag */
            scen_t u = *sc;
            if (plain && !(sc->drop_launch && sc->comm_transfer))
                u = (scen_t){.comm_transfer = sc->comm_transfer, .drop_launch = sc->drop_launch};
            cp_replay_probe(g, &u, r, (const bool[1]){true}, 1);
        }
        if (!edge_wanted(g, sc))
            break;
    }
    replay_finish(g, r, c, times);
}

/* ---- the measured run and three what-ifs side by side, in lane rows ----
 *
 * cp_replay3's lanes, each a scenario of its own: 0 the measured run, 1
 * "comm" (communication at its transfer time), 2 "launch" (no launch
 * gaps), 3 the straggler what-if (its factors and late ranks). Each value
 * is a row of the four lanes (a node's start and end, a sync's shift, an
 * instance's last arrival, a rank step's host time taken and end), so
 * that one event's record is read and tested once and its arithmetic
 * done for every lane at once (fast path: the scalar sweeps, one lane
 * after the other, were 117.3 M instructions on the 256-rank job, about
 * 100 a node and lane, most of them the tests of the record and of the
 * scenario repeated in each lane; the rows 80 M). The rules are those of cp_event_int.h lane by
 * lane (start_of, end_of, inst_last, sync_of, hin_last; scenarios without
 * carry): the lanes differ only in which of them apply (rw_start's drop
 * lanes, rw_end's "comm" lane, the straggler's factors and lateness), and
 * a lane's starts come where its own sweep makes them (sdone: a bit per
 * lane; "comm" starts no instance member early). test_cp_part compares
 * every lane with cp_part.c's replay, which runs cp_event_int.h's rules
 * themselves. */
#define RL 4
typedef int64_t row_t[RL];

typedef struct rows {
    const cp_graph_t *g;
    row_t (*se)[2];        /* per node: replayed start and end, side by side (one
                            * cache line a node: the end event reads the start) */
    uint8_t *sdone;        /* per node: the lanes whose start is replayed (bit l) */
    row_t *sd, *cd;        /* per sync: shift; the edge's shift (rp_t.cd, second pass) */
    row_t *ims, *hims;     /* per instance, host collective: the last replayed arrival */
    uint8_t *idone, *hidone; /* the same for every lane that reads them ("comm" reads no ims) */
    row_t *hc, *rend;      /* per rank step: host time taken (what-if launch), replayed end */
    const double *f;       /* lane 3's factors, NULL */
    const uint8_t *late;   /* lane 3's late ranks (cp_scen_t.late), NULL */
    unsigned on;           /* the lanes this pass replays */
    bool cd_on, pin;
} rows_t;

/* A row as one value of four lanes (GCC's vector extension, no
 * intrinsics: with AVX2 one register, else the compiler splits it), and
 * its loads and stores from rows that are 8-byte aligned only. */
#if defined(__GNUC__) && !defined(__clang__)
/* (the helpers below are always inlined: the ABI of a 32-byte vector
 * passed without AVX, that GCC warns of, is never used) */
#pragma GCC diagnostic ignored "-Wpsabi"
#endif
typedef int64_t v4_t __attribute__((vector_size(32)));
typedef int64_t v4u_t __attribute__((vector_size(32), aligned(8)));

CP_INLINE v4_t v4_ld(const int64_t *p)
{
    return *(const v4u_t *)p;
}

CP_INLINE void v4_st(int64_t *p, v4_t v)
{
    *(v4u_t *)p = v;
}

CP_INLINE v4_t v4_spl(int64_t v)
{
    return (v4_t){v, v, v, v};
}

/* m's lanes all ones or zero: a where m, else b */
CP_INLINE v4_t v4_sel(v4_t m, v4_t a, v4_t b)
{
    return (a & m) | (b & ~m);
}

CP_INLINE v4_t v4_max(v4_t a, v4_t b)
{
    return v4_sel(a > b, a, b);
}

/* A lane mask (bit l) as a row of all-ones and zero lanes. */
static const int64_t lane_m[16][RL] = {
    {0, 0, 0, 0},   {-1, 0, 0, 0},   {0, -1, 0, 0},   {-1, -1, 0, 0},   {0, 0, -1, 0},   {-1, 0, -1, 0},
    {0, -1, -1, 0}, {-1, -1, -1, 0}, {0, 0, 0, -1},   {-1, 0, 0, -1},   {0, -1, 0, -1},  {-1, -1, 0, -1},
    {0, 0, -1, -1}, {-1, 0, -1, -1}, {0, -1, -1, -1}, {-1, -1, -1, -1}};
static const int64_t row_zero[RL];

/* The row of the shift of sync q as a node's record sees it (shift_at,
 * f its sflags bits): row_zero for none. */
CP_INLINE const int64_t *rl_shift_at(const rows_t *x, int32_t q, unsigned f)
{
    if (q < 0)
        return row_zero;
    if (f & CP_S_SAME)
        return x->sd[q];
    return x->cd_on && (f & CP_S_NEXT) ? x->cd[q] : row_zero;
}

/* The row of the shift of sync q as job step job sees it (shift_of). */
CP_INLINE const int64_t *rl_shift_of(const rows_t *x, long q, int32_t job)
{
    if (q < 0)
        return row_zero;
    const cp_sync_t *y = &x->g->syncs[q];
    if (y->job == job)
        return x->sd[q];
    return x->cd_on && job >= 0 && y->jnext == job ? x->cd[q] : row_zero;
}

/* start_of of the node at hot[k], stored in the lanes of m (the others
 * keep theirs): the launch lane and a slow-host straggler's lane drop
 * the launch gaps (no_launch_gap, which takes host time from the rank
 * step in the lanes of m only). */
CP_INLINE void rw_start(rows_t *x, int32_t k, unsigned m)
{
    const cp_graph_t *g = x->g;
    const cp_hot_t *h = &g->hot[k];
    int32_t id = h->id;
    v4_t best = v4_spl(INT64_MIN);
    /* (a dependency, or a launch of a rank step, gives every lane a
     * value: the fallback to the measured start is tested without) */
    bool any = (h->flags & CP_H_LAUNCH) && h->rstep >= 0;
#pragma GCC unroll 3
    for (int q = 0; q < 3; q++) {
        int32_t p = h->pred[q];
        if (p < 0)
            continue;
        any = true;
        if (x->pin && q == 1 && (h->flags & CP_H_PXINF))
            best = v4_max(best, v4_spl(g->e0[p]));
        else if (h->flags >> q & 1)
            best = v4_max(best, v4_ld(x->se[p][1]));
        else if (x->cd_on && (h->flags & (CP_H_PREV << q)))
            best = v4_max(best, v4_ld(x->cd[g->rs[h->rstep].sb_start]) + g->e0[p]);
        else
            best = v4_max(best, v4_spl(g->e0[p]));
    }
    if (h->flags & CP_H_LAUNCH) {
        v4_t lv = v4_ld(rl_shift_at(x, h->lsync, h->sflags)) + h->llat;
        unsigned dm = 4u | (x->late && (x->late[h->rank_i] & 2) ? 8u : 0u); /* the lanes that drop the gap */
        v4_t drop = v4_ld(lane_m[dm]);
        if (h->rstep < 0) {
            best = v4_sel(drop, best, v4_max(best, lv));
        } else {
            const cp_rs_t *rs = &g->rs[h->rstep];
            v4_t fl = v4_ld(rl_shift_at(x, rs->sb_start, (unsigned)h->sflags >> 2)) + rs->start;
            int32_t b = h->lsync >= 0 ? g->syncs[h->lsync].bar : -1;
            if (b >= 0)
                fl = v4_max(fl, v4_ld(rl_shift_of(x, b, h->job)) + g->syncs[b].e);
            int64_t *hc = x->hc[h->rstep];
            v4_t bd = v4_max(best, fl);
            v4_t c = v4_ld(hc), hv = lv + c;
            v4_t nh = v4_sel(hv > bd, c - (hv - bd), c);
            v4_st(hc, v4_sel(v4_ld(lane_m[m & dm]), nh, c));
            best = v4_sel(drop, bd, v4_max(best, lv));
        }
    }
    if (!any)
        best = v4_sel(best == v4_spl(INT64_MIN), v4_spl(h->s), best);
    if (((m | ~x->on) & 15u) == 15u) { /* (a lane not replayed takes anything) */
        v4_st(x->se[id][0], best);
    } else {
        v4_t mk = v4_ld(lane_m[m]);
        v4_st(x->se[id][0], v4_sel(mk, best, v4_ld(x->se[id][0])));
    }
    x->sdone[id] |= (uint8_t)m;
}

/* inst_last of instance i in the lanes of m (not "comm"), every member,
 * into x->ims[i]. */
CP_INLINE void rw_inst_last(rows_t *x, int32_t i, int32_t job, unsigned m)
{
    const cp_graph_t *g = x->g;
    const cp_inst_t *I = &g->inst[i];
    v4_t ms = v4_spl(INT64_MIN);
    for (uint32_t q = 0; q < I->n; q++) {
        int32_t mm = g->imem[I->m0 + q];
        const cp_hot_t *hm = &g->hot[g->pos[mm]];
        unsigned need = m & ~(unsigned)x->sdone[mm];
        if (need)
            rw_start(x, g->pos[mm], need);
        ms = v4_max(ms, hm->job == job ? v4_ld(x->se[mm][0]) : v4_spl(hm->s));
    }
    v4_st(x->ims[i], ms);
}

/* end_of of the node at hot[k] in every lane ("comm": an instance member
 * at its transfer time; the straggler's: its factor). */
CP_INLINE void rw_end(rows_t *x, int32_t k)
{
    const cp_graph_t *g = x->g;
    const cp_hot_t *h = &g->hot[k];
    int32_t id = h->id;
    unsigned need = x->on & ~(unsigned)x->sdone[id];
    if (need)
        rw_start(x, k, need);
    int64_t d3 = h->dt;
    if (x->f && x->f[id] != 1.0) /* what-if pattern: the transfer, not the wait */
        d3 = (int64_t)((double)d3 * x->f[id] + 0.5);
    v4_t d = {h->dt, h->dt, h->dt, d3};
    v4_t s = v4_ld(x->se[id][0]), e;
    if (h->inst >= 0) {
        unsigned nc = x->on & ~2u;
        if (nc && !x->idone[h->inst]) {
            rw_inst_last(x, h->inst, h->job, nc);
            x->idone[h->inst] = 1;
        }
        e = v4_max(v4_ld(x->ims[h->inst]) + d, s);
        e[1] = s[1] + g->inst[h->inst].transfer; /* "comm" */
    } else {
        e = s + d;
    }
    v4_st(x->se[id][1], e);
    if (h->rstep >= 0)
        v4_st(x->rend[h->rstep], v4_max(v4_ld(x->rend[h->rstep]), e));
}

/* The replayed arrival of host collective member y (arrival_of), every lane. */
CP_INLINE v4_t rw_arrival(const rows_t *x, const cp_sync_t *y)
{
    v4_t a = v4_ld(rl_shift_of(x, y->sb, y->job)) + y->s;
    if (y->rstep >= 0)
        a += v4_ld(x->hc[y->rstep]);
    if (x->late && (x->late[y->rank_i] & 1))
        a[3] -= y->late;
    return a;
}

/* sync_of of sync j, every lane. */
CP_INLINE void rw_sync(rows_t *x, size_t j)
{
    const cp_graph_t *g = x->g;
    const cp_sync_t *s = &g->syncs[j];
    v4_t s1;
    if (s->hi >= 0) {
        s1 = rw_arrival(x, s);
    } else {
        s1 = v4_ld(rl_shift_of(x, s->sb, s->job)) + s->s;
        if (s->rstep >= 0)
            s1 += v4_ld(x->hc[s->rstep]);
    }
    if (s->rstep >= 0)
        v4_st(x->hc[s->rstep], v4_spl(0));
    v4_t v;
    if (s->hi >= 0) {
        const cp_inst_t *I = &g->hin[s->hi];
        if (!x->hidone[s->hi]) {
            v4_t ms = v4_spl(INT64_MIN);
            for (uint32_t q = 0; q < I->n; q++) {
                const cp_sync_t *y = &g->syncs[g->hmem[I->m0 + q]];
                ms = v4_max(ms, y->job == s->job ? rw_arrival(x, y) : v4_spl(y->s));
            }
            v4_st(x->hims[s->hi], ms);
            x->hidone[s->hi] = 1;
        }
        int64_t T = s->e - I->maxstart;
        v = v4_max(v4_ld(x->hims[s->hi]) + (T > 0 ? T : 0), s1);
    } else if (s->w >= 0 && g->nodes[s->w].e >= s->s) {
        int64_t lag = g->ranks[s->rank_i].sync_lag;
        const cp_node_t *w = &g->nodes[s->w];
        v = v4_max((w->job == s->job ? v4_ld(x->se[s->w][1]) : v4_spl(w->e)) + lag, s1);
    } else {
        v = s1 + (s->e - s->s);
        if (s->hi == -2 && x->late && (x->late[s->rank_i] & 1)) /* a host pause: without its lateness */
            v[3] -= s->late;
    }
    v4_st(x->sd[j], v - s->e);
}

/* One sweep of the events in the lanes of x0->on, pinned (PIN) or not,
 * the second pass (CD) or the first. On a copy of x0 whose address goes
 * nowhere: the flags are constants, and its fields are not read again
 * after each store through a uint8_t pointer (which may alias anything
 * else). */
CP_INLINE void rw_sweep(const rows_t *x0, const bool PIN, const bool CD)
{
    rows_t y = *x0, *x = &y;
    y.pin = PIN;
    y.cd_on = CD;
    const cp_graph_t *g = x->g;
    for (size_t k = 0; k < g->n_ev; k++) {
        int64_t v = g->ev[k];
        int type = (int)(v >> 32);
        int32_t id = (int32_t)(v & 0xffffffff); /* a sync, or a node's index in hot */
        if (type == 0) {
            rw_end(x, id);
        } else if (type == 1) {
            rw_sync(x, (size_t)id);
        } else {
            unsigned need = x->on & ~(unsigned)x->sdone[g->hot[id].id];
            if (need)
                rw_start(x, id, need);
        }
    }
}

/* Compiled twice on x86-64 with glibc, for AVX2 (four lanes in one
 * instruction; baseline x86-64 has no 64-bit compare) and any x86-64,
 * as cp_ideal.c's sweeps; MT_PORTABLE_SCAN keeps the baseline one only. */
#if defined(__x86_64__) && defined(__GLIBC__) && defined(__has_attribute) && !defined(MT_PORTABLE_SCAN)
#if __has_attribute(target_clones)
#define RW_CLONES __attribute__((target_clones("avx2", "default")))
#endif
#endif
#ifndef RW_CLONES
#define RW_CLONES
#endif

/* The sweep pinned or not, first pass or second, each with its flags
 * constants. */
RW_CLONES static void rw_sweep_1(const rows_t *x)
{
    rw_sweep(x, false, false);
}

RW_CLONES static void rw_sweep_1p(const rows_t *x)
{
    rw_sweep(x, true, false);
}

RW_CLONES static void rw_sweep_2(const rows_t *x)
{
    rw_sweep(x, false, true);
}

RW_CLONES static void rw_sweep_2p(const rows_t *x)
{
    rw_sweep(x, true, true);
}

static void rows_free(rows_t *x)
{
    free(x->se);
    free(x->sdone);
    free(x->sd);
    free(x->cd);
    free(x->ims);
    free(x->hims);
    free(x->idone);
    free(x->hidone);
    free(x->hc);
    free(x->rend);
}

static int rows_alloc(const cp_graph_t *g, rows_t *x)
{
    size_t n = g->n_nodes ? g->n_nodes : 1, ns = g->n_syncs ? g->n_syncs : 1, ni = g->n_inst ? g->n_inst : 1,
           nh = g->n_hin ? g->n_hin : 1, nr = g->n_rs ? g->n_rs : 1;
    /* (a lane that has not started a member may read its row, and drops
     * what it read: rw_inst_last's "comm" lane) */
    x->se = mt_big_malloc(n * sizeof *x->se);
    x->sdone = mt_big_malloc(n);
    x->sd = malloc(ns * sizeof *x->sd);
    x->cd = calloc(ns, sizeof *x->cd); /* a lane of no second pass reads 0 */
    x->ims = malloc(ni * sizeof *x->ims);
    x->idone = malloc(ni);
    x->hims = malloc(nh * sizeof *x->hims);
    x->hidone = malloc(nh);
    x->hc = malloc(nr * sizeof *x->hc);
    x->rend = malloc(nr * sizeof *x->rend);
    return x->se && x->sdone && x->sd && x->cd && x->ims && x->idone && x->hims && x->hidone && x->hc &&
                   x->rend
               ? 0
               : -1;
}

/* x set for a pass of the lanes of on (cp_rp_init, every lane). */
static void rows_init(const cp_graph_t *g, rows_t *x, unsigned on)
{
    for (size_t i = 0; i < g->n_nodes; i++)
        v4_st(x->se[i][1], v4_spl(g->e0[i]));
    memset(x->sdone, 0, g->n_nodes ? g->n_nodes : 1);
    memset(x->idone, 0, g->n_inst ? g->n_inst : 1);
    memset(x->hidone, 0, g->n_hin ? g->n_hin : 1);
    memset(x->sd, 0, (g->n_syncs ? g->n_syncs : 1) * sizeof *x->sd);
    memset(x->hc, 0, (g->n_rs ? g->n_rs : 1) * sizeof *x->hc);
    for (size_t i = 0; i < g->n_rs; i++)
        v4_st(x->rend[i], v4_spl(INT64_MIN));
    x->on = on;
}

/* Lane l of x into r: the shifts, host time and rank step ends (what the
 * step times and the edge read); the rest too for the probe. */
static void rows_out(const cp_graph_t *g, const rows_t *x, int l, rp_t *r, int cd_on)
{
    for (size_t q = 0; q < g->n_syncs; q++)
        r->sd[q] = x->sd[q][l];
    for (size_t i = 0; i < g->n_rs; i++) {
        r->hc[i] = x->hc[i][l];
        r->rend[i] = x->rend[i][l];
    }
    r->carry = 0;
    r->cd_on = cd_on;
    if (!cp_replay_probe)
        return;
    for (size_t i = 0; i < g->n_nodes; i++) {
        r->sdone[i] = x->sdone[i] >> l & 1;
        r->s[i] = x->se[i][0][l];
        r->e[i] = x->se[i][1][l];
    }
    for (size_t i = 0; i < g->n_inst; i++) {
        r->idone[i] = l != 1 && x->idone[i]; /* "comm" reads no last arrival */
        r->ims[i] = x->ims[i][l];
    }
    for (size_t i = 0; i < g->n_hin; i++) {
        r->hidone[i] = x->hidone[i];
        r->hims[i] = x->hims[i][l];
    }
}

/* The replays of the lanes of on in one sweep of x; the probe told. */
static void rows_run(const cp_graph_t *g, rows_t *x, rp_t *r, unsigned on, bool pin, int cd_on)
{
    x->cd_on = cd_on;
    if (cd_on)
        (pin ? rw_sweep_2p : rw_sweep_2)(x);
    else
        (pin ? rw_sweep_1p : rw_sweep_1)(x);
    for (int l = 0; l < RL; l++)
        if (on >> l & 1)
            rows_out(g, x, l, &r[l], cd_on);
    if (cp_replay_probe) {
        const scen_t sw[4] = {{.pin_inferred = pin},
                              {.comm_transfer = 1, .pin_inferred = pin},
                              {.drop_launch = 1, .pin_inferred = pin},
                              {.factor = x->f, .late = x->late, .pin_inferred = pin}};
        bool b[4];
        for (int l = 0; l < RL; l++)
            b[l] = on >> l & 1;
        cp_replay_probe(g, sw, r, b, 4);
    }
}

/* The replays of the lanes: r[0..3], times[0..3] as cp_replay's r and
 * times (r[1] and times[1] untouched without comm, r[2] and times[2]
 * without launch, r[3] and times[3] without f, the straggler what-if's
 * factors); of r, the shifts, host times and step ends (sd, hc, rend,
 * jend, cd) only, the starts and ends with cp_replay_probe set. pin:
 * every lane with the inferred stream waits pinned (the ranges' other
 * binding, cp_scen_t.pin_inferred), and then at most one of comm and
 * launch (the ranges need the better one only). */
int cp_replay3(const cp_graph_t *g, rp_t *r, bool comm, bool launch, const double *f, const uint8_t *late, bool pin,
               const mt_critpath_t *c, int64_t *const *times)
{
    const bool on[4] = {true, comm, launch, f != NULL};
    rows_t x = {.g = g, .f = f, .late = f ? late : NULL};
    if (rows_alloc(g, &x)) {
        rows_free(&x);
        return -1;
    }
    /* pinned, "launch" only without "comm" (the better one alone) */
    unsigned on1 = 1u | (comm ? 2u : 0u) | (launch && !(pin && comm) ? 4u : 0u) | (f ? 8u : 0u);
    rows_init(g, &x, on1);
    rows_run(g, &x, r, on1, pin, 0);
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
        unsigned on2 = 0;
        for (int l = 2; l < 4; l++)
            if (on[l]) {
                r[l].cd0 = r[0].cd;
                edge_fill(g, c, &r[l]);
                r[l].cd0 = NULL;
                if (edge_any(g, &r[l]))
                    on2 |= 1u << l;
            }
        if (on2) {
            rows_init(g, &x, on2);
            for (int l = 2; l < 4; l++)
                if (on2 >> l & 1)
                    for (size_t q = 0; q < g->n_syncs; q++)
                        x.cd[q][l] = r[l].cd[q];
            rows_run(g, &x, r, on2, pin, 1);
        }
    }
    rows_free(&x);
    for (int l = 0; l < 4; l++)
        if (on[l] && l != 1)
            replay_finish(g, &r[l], c, times[l]);
    return 0;
}
