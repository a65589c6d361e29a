/* The replay of one process's ranks in supersteps (cp_part.h): its
 * events, the points where it reads the instances it shares with other
 * processes, the supersteps themselves with the one-process sweep's
 * per-event rules (cp_event_int.h), and the instances' owners. */
#include "cross/cp_part.h"
#include "cross/cp_event_int.h"

#include <stdlib.h>
#include <string.h>

/* ---- the plan ---- */

void cp_part_plan_free(cp_part_plan_t *p)
{
    free(p->ev);
    free(p->rd);
    free(p->seg);
    free(p->xi);
    free(p->xh);
    free(p->need);
    free(p->lneed);
    memset(p, 0, sizeof *p);
}

/* The rank_i of event v of g->ev. */
static int32_t ev_rank(const cp_graph_t *g, int64_t v)
{
    int type = (int)(v >> 32);
    int32_t id = (int32_t)(v & 0xffffffff);
    return type == 1 ? g->syncs[id].rank_i : g->hot[id].rank_i;
}

/* The job step of event v of g->ev (-1 outside every step). */
static int32_t ev_job(const cp_graph_t *g, int64_t v)
{
    int type = (int)(v >> 32);
    int32_t id = (int32_t)(v & 0xffffffff);
    return type == 1 ? g->syncs[id].job : g->hot[id].job;
}

/* The instance whose last arrival event v reads (cp_part_msg_t.u), or -1:
 * a node's end of an instance member, a host collective member's return. */
static long ev_reads(const cp_graph_t *g, int64_t v)
{
    int type = (int)(v >> 32);
    int32_t id = (int32_t)(v & 0xffffffff);
    if (type == 0)
        return g->hot[id].inst;
    if (type == 1 && g->syncs[id].hi >= 0)
        return (long)g->n_inst + g->syncs[id].hi;
    return -1;
}

/* The rank_i of member m of instance u. */
static int32_t member_rank(const cp_graph_t *g, size_t u, uint32_t m)
{
    if (u < g->n_inst)
        return g->nodes[g->imem[g->inst[u].m0 + m]].rank_i;
    const cp_inst_t *I = &g->hin[u - g->n_inst];
    return g->syncs[g->hmem[I->m0 + m]].rank_i;
}

/* What cp_part_plan works with. */
typedef struct plan_ctx {
    const cp_graph_t *g;
    const uint32_t *proc_of;
    uint32_t me;
    bool carry;
    size_t n_jseg;        /* streams a rank: job steps + 1, or 1 carried */
    int32_t *lr;          /* per rank_i: its index among this process's ranks, -1 */
    uint32_t *rstamp;     /* per rank_i: the last instance that counted it */
} plan_ctx_t;

/* The stream of rank_i ri (this process's) in job step j. */
static size_t seg_of(const plan_ctx_t *c, int32_t ri, int32_t j)
{
    return (size_t)c->lr[ri] * c->n_jseg + (c->carry ? 0 : (size_t)(j + 1));
}

mt_status_t cp_part_plan(const cp_graph_t *g, const uint32_t *proc_of, uint32_t n_procs, uint32_t me, bool carry,
                         cp_part_plan_t *p)
{
    memset(p, 0, sizeof *p);
    p->me = me;
    p->n_procs = n_procs;
    size_t NU = g->n_inst + g->n_hin, NR = g->n_ranks;
    int32_t n_jobs = 0;
    for (size_t i = 0; i < g->n_rs; i++)
        if (g->rs[i].job + 1 > n_jobs)
            n_jobs = g->rs[i].job + 1;
    plan_ctx_t c = {.g = g, .proc_of = proc_of, .me = me, .carry = carry, .n_jseg = carry ? 1 : (size_t)n_jobs + 1};
    size_t n_local = 0;
    c.lr = malloc((NR ? NR : 1) * sizeof *c.lr);
    c.rstamp = malloc((NR ? NR : 1) * sizeof *c.rstamp);
    uint32_t *pstamp = malloc((n_procs ? n_procs : 1) * sizeof *pstamp);
    size_t *first = malloc((NU ? NU : 1) * sizeof *first); /* per instance: its first end in g->ev */
    p->need = calloc(NU ? NU : 1, sizeof *p->need);
    p->lneed = calloc(NU ? NU : 1, sizeof *p->lneed);
    p->xi = calloc(g->n_inst ? g->n_inst : 1, 1);
    p->xh = calloc(g->n_hin ? g->n_hin : 1, 1);
    if (!c.lr || !c.rstamp || !pstamp || !first || !p->need || !p->lneed || !p->xi || !p->xh)
        goto nomem;
    for (size_t i = 0; i < NR; i++) {
        c.lr[i] = proc_of[i] == me ? (int32_t)n_local++ : -1;
        c.rstamp[i] = UINT32_MAX;
    }
    p->n_seg = n_local * c.n_jseg;
    p->seg = calloc(p->n_seg ? p->n_seg : 1, sizeof *p->seg);
    if (!p->seg)
        goto nomem;
    /* per instance: the processes holding members, this one's ranks */
    for (uint32_t q = 0; q < n_procs; q++)
        pstamp[q] = UINT32_MAX;
    for (size_t u = 0; u < NU; u++) {
        const cp_inst_t *I = u < g->n_inst ? &g->inst[u] : &g->hin[u - g->n_inst];
        for (uint32_t m = 0; m < I->n; m++) {
            int32_t ri = member_rank(g, u, m);
            uint32_t q = proc_of[ri];
            if (pstamp[q] != (uint32_t)u) {
                pstamp[q] = (uint32_t)u;
                p->need[u]++;
            }
            if (q == me && c.rstamp[ri] != (uint32_t)u) {
                c.rstamp[ri] = (uint32_t)u;
                p->lneed[u]++;
            }
        }
        /* read by the supersteps: members on another process, or on two
         * of this process's ranks (each rank a stream of its own) */
        bool x = (p->need[u] > 1 && p->lneed[u]) || p->lneed[u] > 1;
        if (u < g->n_inst)
            p->xi[u] = x;
        else
            p->xh[u - g->n_inst] = x;
        first[u] = SIZE_MAX;
    }
    for (size_t i = 0; i < NR; i++)
        c.rstamp[i] = UINT32_MAX;
    /* this process's events by stream, and each shared instance's first
     * end (where the one-process sweep reads it): counted, then placed */
    for (size_t k = 0; k < g->n_ev; k++) {
        int64_t v = g->ev[k];
        long u = ev_reads(g, v);
        if (u >= 0 && first[u] == SIZE_MAX)
            first[u] = k;
        int32_t ri = ev_rank(g, v);
        if (c.lr[ri] >= 0)
            p->seg[seg_of(&c, ri, ev_job(g, v))].e1++;
    }
    for (size_t u = 0; u < NU; u++) {
        if (!(u < g->n_inst ? p->xi[u] : p->xh[u - g->n_inst]) || first[u] == SIZE_MAX)
            continue;
        int32_t j = ev_job(g, g->ev[first[u]]);
        const cp_inst_t *I = u < g->n_inst ? &g->inst[u] : &g->hin[u - g->n_inst];
        for (uint32_t m = 0; m < I->n; m++) {
            int32_t ri = member_rank(g, u, m);
            if (c.lr[ri] >= 0 && c.rstamp[ri] != (uint32_t)u) {
                c.rstamp[ri] = (uint32_t)u;
                p->seg[seg_of(&c, ri, j)].r1++;
            }
        }
    }
    size_t e = 0, rr = 0;
    for (size_t s = 0; s < p->n_seg; s++) {
        size_t ne = p->seg[s].e1, nr = p->seg[s].r1;
        p->seg[s] = (cp_part_seg_t){.e0 = e, .e1 = e, .r0 = rr, .r1 = rr};
        e += ne;
        rr += nr;
    }
    p->n_ev = e;
    p->n_rd = rr;
    p->ev = malloc((e ? e : 1) * sizeof *p->ev);
    p->rd = malloc((rr ? rr : 1) * sizeof *p->rd);
    if (!p->ev || !p->rd)
        goto nomem;
    for (size_t i = 0; i < NR; i++)
        c.rstamp[i] = UINT32_MAX;
    for (size_t k = 0; k < g->n_ev; k++) {
        int64_t v = g->ev[k];
        long u = ev_reads(g, v);
        if (u >= 0 && first[u] == k && ((size_t)u < g->n_inst ? p->xi[u] : p->xh[(size_t)u - g->n_inst])) {
            /* each of this process's member ranks reads it before its next
             * event in the stream of the first end's job step: its events
             * before the first end done */
            int32_t j = ev_job(g, v);
            const cp_inst_t *I = (size_t)u < g->n_inst ? &g->inst[u] : &g->hin[(size_t)u - g->n_inst];
            for (uint32_t m = 0; m < I->n; m++) {
                int32_t ri = member_rank(g, (size_t)u, m);
                if (c.lr[ri] < 0 || c.rstamp[ri] == (uint32_t)u)
                    continue;
                c.rstamp[ri] = (uint32_t)u;
                cp_part_seg_t *S = &p->seg[seg_of(&c, ri, j)];
                p->rd[S->r1++] = (cp_part_read_t){.at = S->e1, .u = (uint32_t)u, .job = j, .rank_i = ri,
                                                  .mid = (size_t)u >= g->n_inst && ri == ev_rank(g, v)};
            }
        }
        int32_t ri = ev_rank(g, v);
        if (c.lr[ri] >= 0) {
            cp_part_seg_t *S = &p->seg[seg_of(&c, ri, ev_job(g, v))];
            p->ev[S->e1++] = v;
        }
    }
    free(c.lr);
    free(c.rstamp);
    free(pstamp);
    free(first);
    return MT_OK;
nomem:
    free(c.lr);
    free(c.rstamp);
    free(pstamp);
    free(first);
    cp_part_plan_free(p);
    return MT_ERR_NOMEM;
}

/* ---- the supersteps ---- */

mt_status_t cp_part_start(cp_part_t *x, const cp_graph_t *g, const cp_part_plan_t *p, const cp_scen_t *sc,
                          cp_rp_t *const *r, int n_lanes)
{
    memset(x, 0, sizeof *x);
    x->g = g;
    x->p = p;
    x->n_lanes = n_lanes;
    for (int l = 0; l < n_lanes; l++) {
        x->sc[l] = sc[l];
        x->r[l] = r[l];
    }
    size_t n = (size_t)n_lanes * p->n_seg;
    size_t nu = (size_t)n_lanes * (g->n_inst + g->n_hin);
    x->at = malloc((n ? n : 1) * sizeof *x->at);
    x->rat = malloc((n ? n : 1) * sizeof *x->rat);
    x->held = malloc((n ? n : 1) * sizeof *x->held);
    x->half = calloc(n ? n : 1, 1);
    x->lmax = malloc((nu ? nu : 1) * sizeof *x->lmax);
    x->lgot = calloc(nu ? nu : 1, sizeof *x->lgot);
    if (!x->at || !x->rat || !x->held || !x->half || !x->lmax || !x->lgot) {
        cp_part_free(x);
        return MT_ERR_NOMEM;
    }
    for (int l = 0; l < n_lanes; l++)
        for (size_t s = 0; s < p->n_seg; s++) {
            x->at[(size_t)l * p->n_seg + s] = p->seg[s].e0;
            x->rat[(size_t)l * p->n_seg + s] = p->seg[s].r0;
        }
    for (size_t i = 0; i < nu; i++)
        x->lmax[i] = INT64_MIN;
    return MT_OK;
}

void cp_part_free(cp_part_t *x)
{
    free(x->at);
    free(x->rat);
    free(x->held);
    free(x->half);
    free(x->lmax);
    free(x->lgot);
    free(x->out);
    memset(x, 0, sizeof *x);
}

/* Whether event v, a node's end, waits for a shared instance's last
 * arrival that has not come (in lane sc, r). "comm" never reads an
 * instance's members (its transfer alone). */
static bool end_blocked(const cp_graph_t *g, const cp_part_plan_t *p, const scen_t *sc, const rp_t *r, int64_t v)
{
    if ((int)(v >> 32) != 0)
        return false;
    int32_t i = g->hot[(int32_t)(v & 0xffffffff)].inst;
    return i >= 0 && !sc->comm_transfer && p->xi[i] && !r->idone[i];
}

/* Read d in lane l: its rank's members' latest arrival, by the sweep's
 * own rule (inst_last, hin_last), into the process's maximum; once every
 * rank here has read it, the process's contribution into x->out. */
static mt_status_t read_one(cp_part_t *x, int l, const cp_part_read_t *d)
{
    const cp_graph_t *g = x->g;
    const scen_t *sc = &x->sc[l];
    rp_t *r = x->r[l];
    int64_t v;
    if (d->u < g->n_inst) {
        if (sc->comm_transfer) /* never read in this lane */
            return MT_OK;
        v = inst_last(g, sc, r, (int32_t)d->u, d->job, d->rank_i);
    } else {
        v = hin_last(g, sc, r, (int32_t)(d->u - g->n_inst), d->job, d->rank_i);
    }
    size_t i = (size_t)l * (g->n_inst + g->n_hin) + d->u;
    if (v > x->lmax[i])
        x->lmax[i] = v;
    if (++x->lgot[i] < x->p->lneed[d->u])
        return MT_OK;
    if (x->p->need[d->u] == 1) { /* every member here: answered at once */
        cp_part_take(x, &(cp_part_msg_t){.u = d->u, .lane = (uint16_t)l, .v = x->lmax[i]}, 1);
        return MT_OK;
    }
    if (x->n_out == x->cap_out) {
        size_t cap = x->cap_out ? 2 * x->cap_out : 64;
        cp_part_msg_t *o = realloc(x->out, cap * sizeof *o);
        if (!o)
            return MT_ERR_NOMEM;
        x->out = o;
        x->cap_out = cap;
    }
    x->out[x->n_out++] = (cp_part_msg_t){.u = d->u, .lane = (uint16_t)l, .proc = (uint16_t)x->p->me,
                                         .need = x->p->need[d->u], .v = x->lmax[i]};
    return MT_OK;
}

mt_status_t cp_part_advance(cp_part_t *x, bool *done)
{
    const cp_graph_t *g = x->g;
    const cp_part_plan_t *p = x->p;
    x->n_out = 0;
    /* again while a stream moved: an instance whose members are all here
     * is answered as its last rank reads it, and may free a stream passed
     * over before */
    for (bool moved = true; moved;) {
        moved = false;
        *done = true;
        for (int l = 0; l < x->n_lanes; l++) {
            const scen_t *sc = &x->sc[l];
            rp_t *r = x->r[l];
            for (size_t s = 0; s < p->n_seg; s++) {
                size_t ls = (size_t)l * p->n_seg + s, *at = &x->at[ls], *ra = &x->rat[ls];
                const cp_part_seg_t *S = &p->seg[s];
                for (;;) {
                    for (; *ra < S->r1 && p->rd[*ra].at == *at && !p->rd[*ra].mid; (*ra)++)
                        if (read_one(x, l, &p->rd[*ra]) != MT_OK)
                            return MT_ERR_NOMEM;
                    if (*at == S->e1)
                        break;
                    int64_t v = p->ev[*at];
                    int32_t id = (int32_t)(v & 0xffffffff);
                    int32_t hi = (int)(v >> 32) == 1 ? g->syncs[id].hi : -1;
                    if (hi >= 0 && p->xh[hi]) {
                        /* a shared host collective's member returns: its
                         * own arrival first, then (the first return) the
                         * members' read, then its shift once the last
                         * arrival is known */
                        if (!x->half[ls]) {
                            x->held[ls] = sync_arrival(g, sc, r, &g->syncs[id]);
                            x->half[ls] = 1;
                            moved = true;
                        }
                        for (; *ra < S->r1 && p->rd[*ra].at == *at; (*ra)++)
                            if (read_one(x, l, &p->rd[*ra]) != MT_OK)
                                return MT_ERR_NOMEM;
                        if (!r->hidone[hi]) {
                            *done = false;
                            break;
                        }
                        sync_shift(g, sc, r, &g->ranks[g->syncs[id].rank_i], (size_t)id, x->held[ls]);
                        x->half[ls] = 0;
                    } else if (end_blocked(g, p, sc, r, v)) {
                        *done = false;
                        break;
                    } else {
                        event_of(g, sc, r, v);
                    }
                    (*at)++;
                    moved = true;
                }
            }
        }
    }
    return MT_OK;
}

void cp_part_take(cp_part_t *x, const cp_part_msg_t *ans, size_t n)
{
    const cp_graph_t *g = x->g;
    for (size_t k = 0; k < n; k++) {
        rp_t *r = x->r[ans[k].lane];
        uint32_t u = ans[k].u;
        if (u < g->n_inst) {
            r->ims[u] = ans[k].v;
            r->idone[u] = 1;
        } else {
            r->hims[u - g->n_inst] = ans[k].v;
            r->hidone[u - g->n_inst] = 1;
        }
    }
}

/* ---- the owners ---- */

mt_status_t cp_part_own_init(cp_part_own_t *o, size_t n_u, uint32_t me, uint32_t n_procs, int n_lanes)
{
    memset(o, 0, sizeof *o);
    o->me = me;
    o->n_procs = n_procs;
    o->n_lanes = n_lanes;
    o->n_slots = n_u / n_procs + 1;
    size_t n = o->n_slots * (size_t)n_lanes;
    o->max = malloc(n * sizeof *o->max);
    o->got = calloc(n, sizeof *o->got);
    o->head = malloc(n * sizeof *o->head);
    if (!o->max || !o->got || !o->head) {
        cp_part_own_free(o);
        return MT_ERR_NOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        o->max[i] = INT64_MIN;
        o->head[i] = -1;
    }
    return MT_OK;
}

void cp_part_own_free(cp_part_own_t *o)
{
    free(o->max);
    free(o->got);
    free(o->head);
    free(o->who);
    memset(o, 0, sizeof *o);
}

mt_status_t cp_part_own_take(cp_part_own_t *o, const cp_part_msg_t *in, size_t n, cp_part_msg_t **out, size_t *n_out,
                             size_t *cap)
{
    for (size_t k = 0; k < n; k++) {
        const cp_part_msg_t *m = &in[k];
        size_t i = (size_t)m->lane * o->n_slots + m->u / o->n_procs;
        if (o->n_who == o->cap_who) {
            size_t c = o->cap_who ? 2 * o->cap_who : 64;
            struct cp_part_who *w = realloc(o->who, c * sizeof *w);
            if (!w)
                return MT_ERR_NOMEM;
            o->who = w;
            o->cap_who = c;
        }
        o->who[o->n_who] = (struct cp_part_who){.next = o->head[i], .proc = m->proc};
        o->head[i] = (int32_t)o->n_who++;
        if (m->v > o->max[i])
            o->max[i] = m->v;
        if (++o->got[i] < m->need)
            continue;
        for (int32_t w = o->head[i]; w >= 0; w = o->who[w].next) {
            if (*n_out == *cap) {
                size_t c = *cap ? 2 * *cap : 64;
                cp_part_msg_t *a = realloc(*out, c * sizeof *a);
                if (!a)
                    return MT_ERR_NOMEM;
                *out = a;
                *cap = c;
            }
            (*out)[(*n_out)++] = (cp_part_msg_t){.u = m->u, .lane = m->lane, .proc = o->who[w].proc, .v = o->max[i]};
        }
    }
    return MT_OK;
}
