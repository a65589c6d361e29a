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
    free(p->mine);
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

mt_status_t cp_part_plan(const cp_graph_t *g, const uint32_t *proc_of, uint32_t n_procs, uint32_t me, bool carry,
                         cp_part_plan_t *p)
{
    memset(p, 0, sizeof *p);
    p->me = me;
    p->n_procs = n_procs;
    size_t NU = g->n_inst + g->n_hin, NR = g->n_ranks;
    int32_t n_jobs = 0;
    for (size_t k = 0; k < g->n_ev; k++) {
        int32_t j = ev_job(g, g->ev[k]);
        if (j + 1 > n_jobs)
            n_jobs = j + 1;
    }
    /* streams: job -1 first, then each job step; or one */
    p->n_seg = carry ? 1 : (size_t)n_jobs + 1;
    uint32_t *need = calloc(NU ? NU : 1, sizeof *need), *stamp = malloc((n_procs ? n_procs : 1) * sizeof *stamp);
    size_t *first = malloc((NU ? NU : 1) * sizeof *first); /* per instance: its first end in g->ev */
    size_t *cnt = calloc(p->n_seg, sizeof *cnt), *rcnt = calloc(p->n_seg, sizeof *rcnt);
    uint8_t *here = calloc(NU ? NU : 1, 1); /* per instance: members on this process */
    p->seg = calloc(p->n_seg, sizeof *p->seg);
    p->xi = calloc(g->n_inst ? g->n_inst : 1, 1);
    p->xh = calloc(g->n_hin ? g->n_hin : 1, 1);
    p->mine = calloc(NR ? NR : 1, 1);
    if (!need || !stamp || !first || !cnt || !rcnt || !here || !p->seg || !p->xi || !p->xh || !p->mine)
        goto nomem;
    for (size_t i = 0; i < NR; i++)
        p->mine[i] = proc_of[i] == me;
    /* per instance: how many processes hold members, and whether this one */
    for (uint32_t q = 0; q < n_procs; q++)
        stamp[q] = UINT32_MAX;
    for (size_t u = 0; u < NU; u++) {
        const cp_inst_t *I = u < g->n_inst ? &g->inst[u] : &g->hin[u - g->n_inst];
        for (uint32_t m = 0; m < I->n; m++) {
            int32_t ri = u < g->n_inst ? g->nodes[g->imem[I->m0 + m]].rank_i : g->syncs[g->hmem[I->m0 + m]].rank_i;
            uint32_t q = proc_of[ri];
            if (stamp[q] != (uint32_t)u) {
                stamp[q] = (uint32_t)u;
                need[u]++;
            }
            here[u] |= q == me;
        }
        bool x = need[u] > 1 && here[u];
        if (u < g->n_inst)
            p->xi[u] = x;
        else
            p->xh[u - g->n_inst] = x;
        first[u] = SIZE_MAX;
    }
    /* the events of this process by stream; each shared instance's first
     * end, where the one-process sweep reads it */
    for (size_t k = 0; k < g->n_ev; k++) {
        int64_t v = g->ev[k];
        long u = ev_reads(g, v);
        if (u >= 0 && first[u] == SIZE_MAX)
            first[u] = k;
        if (p->mine[ev_rank(g, v)])
            cnt[carry ? 0 : (size_t)(ev_job(g, v) + 1)]++;
    }
    for (size_t u = 0; u < NU; u++) {
        if (need[u] > 1 && here[u] && first[u] != SIZE_MAX) {
            int32_t j = ev_job(g, g->ev[first[u]]);
            rcnt[carry ? 0 : (size_t)(j + 1)]++;
        }
    }
    size_t e = 0, rr = 0;
    for (size_t s = 0; s < p->n_seg; s++) {
        p->seg[s] = (cp_part_seg_t){.e0 = e, .e1 = e, .r0 = rr, .r1 = rr};
        e += cnt[s];
        rr += rcnt[s];
    }
    p->n_ev = e;
    p->n_rd = rr;
    p->ev = malloc((e ? e : 1) * sizeof *p->ev);
    p->rd = malloc((rr ? rr : 1) * sizeof *p->rd);
    if (!p->ev || !p->rd)
        goto nomem;
    for (size_t k = 0; k < g->n_ev; k++) {
        int64_t v = g->ev[k];
        long u = ev_reads(g, v);
        if (u >= 0 && first[u] == k && need[u] > 1 && here[u]) {
            /* read before this process's next event of the stream of the
             * first end's job step: its events before the first end done */
            int32_t j = ev_job(g, v);
            cp_part_seg_t *S = &p->seg[carry ? 0 : (size_t)(j + 1)];
            p->rd[S->r1++] = (cp_part_read_t){.at = S->e1, .u = (uint32_t)u, .need = need[u], .job = j};
        }
        if (p->mine[ev_rank(g, v)]) {
            cp_part_seg_t *S = &p->seg[carry ? 0 : (size_t)(ev_job(g, v) + 1)];
            p->ev[S->e1++] = v;
        }
    }
    free(here);
    free(need);
    free(stamp);
    free(first);
    free(cnt);
    free(rcnt);
    return MT_OK;
nomem:
    free(here);
    free(need);
    free(stamp);
    free(first);
    free(cnt);
    free(rcnt);
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
    x->at = malloc((n ? n : 1) * sizeof *x->at);
    x->rat = malloc((n ? n : 1) * sizeof *x->rat);
    if (!x->at || !x->rat) {
        cp_part_free(x);
        return MT_ERR_NOMEM;
    }
    for (int l = 0; l < n_lanes; l++)
        for (size_t s = 0; s < p->n_seg; s++) {
            x->at[(size_t)l * p->n_seg + s] = p->seg[s].e0;
            x->rat[(size_t)l * p->n_seg + s] = p->seg[s].r0;
        }
    return MT_OK;
}

void cp_part_free(cp_part_t *x)
{
    free(x->at);
    free(x->rat);
    free(x->out);
    memset(x, 0, sizeof *x);
}

/* Whether event v waits for a shared instance's last arrival that has not
 * come (in lane sc, r). "comm" never reads an instance's members (its
 * transfer alone), only host collectives'. */
static bool blocked(const cp_graph_t *g, const cp_part_plan_t *p, const scen_t *sc, const rp_t *r, int64_t v)
{
    int type = (int)(v >> 32);
    int32_t id = (int32_t)(v & 0xffffffff);
    if (type == 0) {
        int32_t i = g->hot[id].inst;
        return i >= 0 && !sc->comm_transfer && p->xi[i] && !r->idone[i];
    }
    if (type == 1) {
        int32_t hi = g->syncs[id].hi;
        return hi >= 0 && p->xh[hi] && !r->hidone[hi];
    }
    return false;
}

/* Read d in lane l: this process's members' latest arrival, by the
 * sweep's own rule (inst_last, hin_last) over its ranks, into x->out. */
static mt_status_t read_one(cp_part_t *x, int l, const cp_part_read_t *d)
{
    const cp_graph_t *g = x->g;
    const scen_t *sc = &x->sc[l];
    rp_t *r = x->r[l];
    int64_t v;
    if (d->u < g->n_inst) {
        if (sc->comm_transfer) /* never read in this lane */
            return MT_OK;
        v = inst_last(g, sc, r, (int32_t)d->u, d->job, x->p->mine);
    } else {
        v = hin_last(g, sc, r, (int32_t)(d->u - g->n_inst), d->job, x->p->mine);
    }
    if (x->n_out == x->cap_out) {
        size_t cap = x->cap_out ? 2 * x->cap_out : 64;
        cp_part_msg_t *o = realloc(x->out, cap * sizeof *o);
        if (!o)
            return MT_ERR_NOMEM;
        x->out = o;
        x->cap_out = cap;
    }
    x->out[x->n_out++] = (cp_part_msg_t){.u = d->u, .lane = (uint16_t)l, .proc = (uint16_t)x->p->me, .need = d->need,
                                         .v = v};
    return MT_OK;
}

mt_status_t cp_part_advance(cp_part_t *x, bool *done)
{
    const cp_graph_t *g = x->g;
    const cp_part_plan_t *p = x->p;
    x->n_out = 0;
    *done = true;
    for (int l = 0; l < x->n_lanes; l++) {
        const scen_t *sc = &x->sc[l];
        rp_t *r = x->r[l];
        for (size_t s = 0; s < p->n_seg; s++) {
            size_t *at = &x->at[(size_t)l * p->n_seg + s], *ra = &x->rat[(size_t)l * p->n_seg + s];
            const cp_part_seg_t *S = &p->seg[s];
            for (;;) {
                for (; *ra < S->r1 && p->rd[*ra].at == *at; (*ra)++)
                    if (read_one(x, l, &p->rd[*ra]) != MT_OK)
                        return MT_ERR_NOMEM;
                if (*at == S->e1)
                    break;
                int64_t v = p->ev[*at];
                if (blocked(g, p, sc, r, v)) {
                    *done = false;
                    break;
                }
                event_of(g, sc, r, v);
                (*at)++;
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
