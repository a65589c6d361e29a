/* The replay of one process's ranks in supersteps (cp_part.h): the
 * graph of its ranks alone (cut from the whole job's, or built from its
 * ranks' analyses and the job-wide inputs), its events and the points where it reads the
 * instances it shares with other processes, the supersteps themselves
 * with the one-process sweep's per-event rules (cp_event_int.h), and the
 * instances' owners. */
#include "cross/cp_part.h"
#include "base/sort.h"
#include "cross/cp_event_int.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* ---- the events and members of a graph (the whole job's or a process's) ---- */

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

/* The instance whose last arrival event v reads (g->inst below
 * g->n_inst, then g->hin), or -1: a node's end of an instance member, a
 * host collective member's return. */
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

/* Instance u of g (numbered as ev_reads's). */
static const cp_inst_t *inst_at(const cp_graph_t *g, size_t u)
{
    return u < g->n_inst ? &g->inst[u] : &g->hin[u - g->n_inst];
}

/* The rank_i of member m of instance u. */
static int32_t member_rank(const cp_graph_t *g, size_t u, uint32_t m)
{
    if (u < g->n_inst)
        return g->nodes[g->imem[g->inst[u].m0 + m]].rank_i;
    return g->syncs[g->hmem[g->hin[u - g->n_inst].m0 + m]].rank_i;
}

/* The job steps of g's events, rank steps and the reads ui[0..n_u): one
 * past the largest. */
static int32_t n_jobs_of(const cp_graph_t *g, const cp_part_inst_t *ui, size_t n_u)
{
    int32_t n = 0;
    for (size_t i = 0; i < g->n_rs; i++)
        if (g->rs[i].job + 1 > n)
            n = g->rs[i].job + 1;
    for (size_t k = 0; k < g->n_ev; k++)
        if (ev_job(g, g->ev[k]) + 1 > n)
            n = ev_job(g, g->ev[k]) + 1;
    for (size_t u = 0; u < n_u; u++)
        if (ui[u].job + 1 > n)
            n = ui[u].job + 1;
    return n;
}

/* ---- a process's graph, cut from the whole job's ---- */

void cp_part_cut_free(cp_graph_t *lg)
{
    free(lg->nodes);
    free(lg->ranks);
    free(lg->syncs);
    free(lg->inst);
    free(lg->hin);
    free(lg->imem);
    free(lg->hmem);
    free(lg->rs);
    free(lg->ev);
    free(lg->hot);
    free(lg->pos);
    free(lg->e0);
    memset(lg, 0, sizeof *lg);
}

size_t cp_part_graph_bytes(const cp_graph_t *g)
{
    size_t b = g->n_nodes * sizeof *g->nodes + g->n_syncs * sizeof *g->syncs + g->n_rs * sizeof *g->rs +
               g->n_ranks * sizeof *g->ranks + (g->n_inst + g->n_hin) * sizeof *g->inst +
               (g->n_imem + g->n_hmem) * sizeof *g->imem + g->n_ev * sizeof *g->ev;
    if (g->hot)
        b += g->n_nodes * (sizeof *g->hot + sizeof *g->pos + sizeof *g->e0);
    return b;
}

/* Where a rank's k-th node, sync and rank step of g go in lg: the same
 * k from the local rank's first (both graphs hold a rank's together). */
typedef struct cut_ctx {
    const cp_graph_t *g;
    cp_graph_t *lg;
    const int32_t *lr;    /* per rank_i of g: its rank_i in lg, -1 */
    const int32_t *lu;    /* per instance of g (ev_reads's numbering): its index in lg's inst or hin, -1 */
} cut_ctx_t;

static int32_t cut_node(const cut_ctx_t *c, int32_t id)
{
    if (id < 0)
        return id;
    int32_t ri = c->g->nodes[id].rank_i;
    return (int32_t)((size_t)id - c->g->ranks[ri].node0 + c->lg->ranks[c->lr[ri]].node0);
}

/* sync id of g's rank ri (syncs name their rank's only) */
static int32_t cut_sync(const cut_ctx_t *c, int32_t ri, int32_t id)
{
    if (id < 0)
        return id;
    return (int32_t)((size_t)id - c->g->ranks[ri].sync0 + c->lg->ranks[c->lr[ri]].sync0);
}

static int32_t cut_rs(const cut_ctx_t *c, int32_t ri, int32_t id)
{
    if (id < 0)
        return id;
    return (int32_t)((size_t)id - c->g->ranks[ri].rs0 + c->lg->ranks[c->lr[ri]].rs0);
}

mt_status_t cp_part_cut(const cp_graph_t *g, const uint32_t *proc_of, uint32_t n_procs, uint32_t me, cp_graph_t *lg,
                        cp_part_inst_t **uip, int32_t **rank_ofp)
{
    memset(lg, 0, sizeof *lg);
    *uip = NULL;
    *rank_ofp = NULL;
    size_t NR = g->n_ranks, NU = g->n_inst + g->n_hin;
    int32_t *lr = malloc((NR ? NR : 1) * sizeof *lr);
    int32_t *lu = malloc((NU ? NU : 1) * sizeof *lu);
    uint32_t *pstamp = malloc((n_procs ? n_procs : 1) * sizeof *pstamp);
    size_t *nrs = NULL;
    cp_part_inst_t *ui = NULL;
    int32_t *rank_of = NULL;
    if (!lr || !lu || !pstamp)
        goto nomem;
    /* its ranks, each with its nodes, syncs and rank steps */
    size_t nl = 0;
    for (size_t i = 0; i < NR; i++)
        lr[i] = proc_of[i] == me ? (int32_t)nl++ : -1;
    lg->n_ranks = nl;
    lg->ranks = calloc(nl ? nl : 1, sizeof *lg->ranks);
    rank_of = malloc((nl ? nl : 1) * sizeof *rank_of);
    nrs = calloc(nl ? nl : 1, sizeof *nrs);
    if (!lg->ranks || !rank_of || !nrs)
        goto nomem;
    for (size_t i = 0; i < g->n_rs; i++)
        if (lr[g->rs[i].rank_i] >= 0)
            nrs[lr[g->rs[i].rank_i]]++;
    for (size_t i = 0; i < NR; i++) {
        if (lr[i] < 0)
            continue;
        cp_rank_t *L = &lg->ranks[lr[i]];
        rank_of[lr[i]] = (int32_t)i;
        *L = g->ranks[i];
        L->node0 = lg->n_nodes;
        L->sync0 = lg->n_syncs;
        L->rs0 = lg->n_rs;
        lg->n_nodes += L->n_nodes;
        lg->n_syncs += L->n_syncs;
        lg->n_rs += nrs[lr[i]];
    }
    /* the instances it holds members of, with those members; which
     * processes hold the others (the match's owner knows: step 2) */
    size_t ni = 0, nh = 0;
    for (uint32_t q = 0; q < n_procs; q++)
        pstamp[q] = UINT32_MAX;
    for (size_t u = 0; u < NU; u++) {
        const cp_inst_t *I = inst_at(g, u);
        uint32_t here = 0;
        for (uint32_t m = 0; m < I->n; m++)
            here += lr[member_rank(g, u, m)] >= 0;
        lu[u] = -1;
        if (!here)
            continue;
        if (u < g->n_inst) {
            lu[u] = (int32_t)ni++;
            lg->n_imem += here;
        } else {
            lu[u] = (int32_t)nh++;
            lg->n_hmem += here;
        }
    }
    lg->n_inst = ni;
    lg->n_hin = nh;
    lg->nodes = malloc((lg->n_nodes ? lg->n_nodes : 1) * sizeof *lg->nodes);
    lg->syncs = malloc((lg->n_syncs ? lg->n_syncs : 1) * sizeof *lg->syncs);
    lg->rs = malloc((lg->n_rs ? lg->n_rs : 1) * sizeof *lg->rs);
    lg->inst = malloc((ni ? ni : 1) * sizeof *lg->inst);
    lg->hin = malloc((nh ? nh : 1) * sizeof *lg->hin);
    lg->imem = malloc((lg->n_imem ? lg->n_imem : 1) * sizeof *lg->imem);
    lg->hmem = malloc((lg->n_hmem ? lg->n_hmem : 1) * sizeof *lg->hmem);
    lg->hot = malloc((lg->n_nodes ? lg->n_nodes : 1) * sizeof *lg->hot);
    lg->pos = malloc((lg->n_nodes ? lg->n_nodes : 1) * sizeof *lg->pos);
    lg->e0 = malloc((lg->n_nodes ? lg->n_nodes : 1) * sizeof *lg->e0);
    ui = malloc((ni + nh ? ni + nh : 1) * sizeof *ui);
    if (!lg->nodes || !lg->syncs || !lg->rs || !lg->inst || !lg->hin || !lg->imem || !lg->hmem || !lg->hot ||
        !lg->pos || !lg->e0 || !ui)
        goto nomem;
    cut_ctx_t c = {.g = g, .lg = lg, .lr = lr, .lu = lu};
    for (size_t i = 0; i < NR; i++) {
        if (lr[i] < 0)
            continue;
        int32_t ri = (int32_t)i;
        const cp_rank_t *R = &g->ranks[i], *L = &lg->ranks[lr[i]];
        for (size_t k = 0; k < R->n_nodes; k++) {
            cp_node_t n = g->nodes[R->node0 + k];
            n.rank_i = lr[i];
            n.pstream = cut_node(&c, n.pstream); /* a rank's predecessors are its own (critpath.c) */
            n.px = cut_node(&c, n.px);
            n.px2 = cut_node(&c, n.px2);
            n.inst = n.inst >= 0 ? lu[n.inst] : -1;
            n.rstep = cut_rs(&c, ri, n.rstep);
            n.lsync = cut_sync(&c, ri, n.lsync);
            lg->nodes[L->node0 + k] = n;
        }
        for (size_t k = 0; k < R->n_syncs; k++) {
            cp_sync_t y = g->syncs[R->sync0 + k];
            y.w = cut_node(&c, y.w);
            y.hi = y.hi >= 0 ? lu[g->n_inst + (size_t)y.hi] : y.hi;
            y.rank_i = lr[i];
            y.rstep = cut_rs(&c, ri, y.rstep);
            y.sb = cut_sync(&c, ri, y.sb);
            y.bar = cut_sync(&c, ri, y.bar);
            lg->syncs[L->sync0 + k] = y;
            lg->n_jnext += y.jnext >= 0;
        }
        for (size_t k = 0; k < nrs[lr[i]]; k++) {
            cp_rs_t x = g->rs[R->rs0 + k];
            x.rank_i = lr[i];
            x.last = cut_node(&c, x.last);
            x.sb_start = cut_sync(&c, ri, x.sb_start);
            x.sb_end = cut_sync(&c, ri, x.sb_end);
            lg->rs[L->rs0 + k] = x;
        }
    }
    /* the instances: last arrival and transfer job-wide (step 2's
     * owners send them), its members only; the processes holding them */
    size_t mi = 0, mh = 0;
    for (size_t u = 0; u < NU; u++) {
        if (lu[u] < 0)
            continue;
        const cp_inst_t *I = inst_at(g, u);
        bool node = u < g->n_inst;
        cp_inst_t J = *I;
        J.m0 = node ? mi : mh;
        J.n = 0;
        J.last = -1;
        uint32_t nq = 0;
        for (uint32_t m = 0; m < I->n; m++) {
            int32_t ri = member_rank(g, u, m), id = node ? g->imem[I->m0 + m] : g->hmem[I->m0 + m];
            if (pstamp[proc_of[ri]] != (uint32_t)u) {
                pstamp[proc_of[ri]] = (uint32_t)u;
                nq++;
            }
            if (lr[ri] < 0)
                continue;
            if (node)
                lg->imem[mi++] = cut_node(&c, id);
            else
                lg->hmem[mh++] = cut_sync(&c, ri, id);
            J.n++;
        }
        if (node && I->last >= 0 && lr[g->nodes[I->last].rank_i] >= 0)
            J.last = cut_node(&c, I->last);
        else if (!node && I->last >= 0 && lr[g->syncs[I->last].rank_i] >= 0)
            J.last = cut_sync(&c, g->syncs[I->last].rank_i, I->last);
        size_t k = node ? (size_t)lu[u] : ni + (size_t)lu[u];
        if (node)
            lg->inst[lu[u]] = J;
        else
            lg->hin[lu[u]] = J;
        ui[k] = (cp_part_inst_t){.u = (uint32_t)u, .need = nq, .first = UINT32_MAX, .job = -1, .at_rank = -1};
    }
    /* its events in the job's replay order, and where each instance's
     * first end falls among them (the owner would tell: the end's place
     * in the order, docs/ARCHITECTURE.md step 3) */
    size_t nh_at = 0;
    for (size_t k = 0; k < g->n_ev; k++) {
        int64_t v = g->ev[k];
        if ((int)(v >> 32) == 2 && lr[ev_rank(g, v)] >= 0)
            lg->pos[cut_node(&c, g->hot[v & 0xffffffff].id)] = (int32_t)nh_at++;
        lg->n_ev += lr[ev_rank(g, v)] >= 0;
    }
    lg->ev = malloc((lg->n_ev ? lg->n_ev : 1) * sizeof *lg->ev);
    if (!lg->ev)
        goto nomem;
    size_t e = 0;
    for (size_t k = 0; k < g->n_ev; k++) {
        int64_t v = g->ev[k];
        int type = (int)(v >> 32);
        int32_t id = (int32_t)(v & 0xffffffff), ri = ev_rank(g, v);
        long u = ev_reads(g, v);
        if (u >= 0 && lu[u] >= 0) {
            cp_part_inst_t *w = &ui[(size_t)u < g->n_inst ? (size_t)lu[u] : ni + (size_t)lu[u]];
            if (w->first == UINT32_MAX) {
                w->first = (uint32_t)e;
                w->job = ev_job(g, v);
                w->at_rank = lr[ri];
            }
        }
        if (lr[ri] < 0)
            continue;
        if (type == 1) {
            lg->ev[e++] = ((int64_t)1 << 32) | (int64_t)cut_sync(&c, ri, id);
            continue;
        }
        int32_t nid = cut_node(&c, g->hot[id].id), at = lg->pos[nid];
        lg->ev[e++] = ((int64_t)type << 32) | (int64_t)at;
        if (type != 2)
            continue;
        cp_hot_t h = g->hot[id];
        for (int q = 0; q < 3; q++)
            h.pred[q] = cut_node(&c, h.pred[q]);
        h.lsync = cut_sync(&c, ri, h.lsync);
        h.inst = h.inst >= 0 ? lu[h.inst] : -1;
        h.id = nid;
        h.rstep = cut_rs(&c, ri, h.rstep);
        h.rank_i = lr[ri];
        lg->hot[at] = h;
        lg->e0[nid] = g->e0[g->hot[id].id];
    }
    lg->explicit_deps = g->explicit_deps;
    lg->topo_cycle = g->topo_cycle;
    lg->order_cycle = g->order_cycle;
    free(lr);
    free(lu);
    free(pstamp);
    free(nrs);
    *uip = ui;
    *rank_ofp = rank_of;
    return MT_OK;
nomem:
    free(lr);
    free(lu);
    free(pstamp);
    free(nrs);
    free(ui);
    free(rank_of);
    cp_part_cut_free(lg);
    return MT_ERR_NOMEM;
}

/* ---- a process's graph, built from its own ranks' analyses ---- */

/* The order key of an event of g (after cp_order_build: node events hold
 * hot indices) against an instance's first end: (time, type, rank,
 * node or sync within the rank), as build_order's merge orders the job's
 * events (equal times: by type, then by id, and the job's ids go rank by
 * rank in rank order). */
typedef struct ord_key {
    uint64_t t;
    uint32_t type;
    int32_t rank;
    uint32_t k;
} ord_key_t;

static ord_key_t ev_key(const cp_graph_t *g, int64_t v)
{
    int type = (int)(v >> 32);
    int32_t id = (int32_t)(v & 0xffffffff);
    if (type == 1) {
        const cp_rank_t *R = &g->ranks[g->syncs[id].rank_i];
        return (ord_key_t){mt_sort_key_i64(g->syncs[id].e), 1, R->rank, (uint32_t)((size_t)id - R->sync0)};
    }
    int32_t nid = g->hot[id].id;
    const cp_node_t *n = &g->nodes[nid];
    const cp_rank_t *R = &g->ranks[n->rank_i];
    return (ord_key_t){mt_sort_key_i64(type == 0 ? cp_end_key(g, n) : n->s), (uint32_t)type, R->rank,
                       (uint32_t)((size_t)nid - R->node0)};
}

static int ord_key_cmp(const ord_key_t *a, const ord_key_t *b)
{
    if (a->t != b->t)
        return a->t < b->t ? -1 : 1;
    if (a->type != b->type)
        return a->type < b->type ? -1 : 1;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    return (a->k > b->k) - (a->k < b->k);
}

/* The first-end keys of the instances, sorted (qsort's context) */
typedef struct first_ref {
    ord_key_t key;
    uint32_t x;
} first_ref_t;

static int first_ref_cmp(const void *pa, const void *pb)
{
    const first_ref_t *a = pa, *b = pb;
    int c = ord_key_cmp(&a->key, &b->key);
    return c ? c : (a->x > b->x) - (a->x < b->x);
}

/* The index of rank r among g's ranks (ascending by rank), or -1. */
static int32_t rank_index(const cp_graph_t *g, int32_t r)
{
    size_t lo =
        mt_lower_bound_i32((const char *)g->ranks + offsetof(cp_rank_t, rank), g->n_ranks, sizeof *g->ranks, r);
    return lo < g->n_ranks && g->ranks[lo].rank == r ? (int32_t)lo : -1;
}

/* lg's syncs with the extra ones (in->xs) at their places, rank by rank;
 * host collective members' hi as given. MT_OK, MT_ERR_NOMEM or
 * MT_ERR_RANGE. */
static mt_status_t build_syncs(cp_graph_t *lg, const cp_part_in_t *in)
{
    size_t ns = lg->n_syncs + in->n_xs;
    cp_sync_t *out = malloc((ns ? ns : 1) * sizeof *out);
    if (!out)
        return MT_ERR_NOMEM;
    size_t w = 0, x = 0;
    for (size_t i = 0; i < lg->n_ranks; i++) {
        cp_rank_t *R = &lg->ranks[i];
        size_t b = R->sync0, nb = R->n_syncs, x1 = x;
        while (x1 < in->n_xs && in->xs[x1].li == (int32_t)i)
            x1++;
        size_t n = nb + (x1 - x), s0 = w;
        for (size_t k = 0, q = 0; k < n; k++) {
            if (x < x1 && in->xs[x].at == k) {
                const cp_part_xsync_t *y = &in->xs[x++]; /* its rank step checked by the caller */
                out[w++] = (cp_sync_t){.s = y->s, .e = y->e, .w = -1, .hi = y->hi,
                                       .rank_i = (int32_t)i, .rstep = y->rstep >= 0 ? (int32_t)R->rs0 + y->rstep : -1,
                                       .job = -1, .sb = -1, .bar = -1, .jnext = -1};
            } else {
                if (q == nb)
                    goto range;
                out[w++] = lg->syncs[b + q++];
            }
        }
        if (x != x1)
            goto range;
        R->sync0 = s0;
        R->n_syncs = n;
    }
    if (x != in->n_xs)
        goto range;
    free(lg->syncs);
    lg->syncs = out;
    lg->n_syncs = w;
    return MT_OK;
range:
    free(out);
    return MT_ERR_RANGE;
}

mt_status_t cp_part_build(const mt_rank_analysis_t *const *an, size_t n_an, const mt_clock_t *clocks,
                          const int32_t *ranks, size_t n_ranks, const cp_part_in_t *in, cp_graph_t *lg,
                          cp_part_inst_t **uip)
{
    *uip = NULL;
    /* the ranks' own: nodes, their analyses' syncs, rank steps, the
     * start bindings and latencies (no instance, no pause) */
    mt_status_t st =
        cp_graph_build(an, n_an, clocks, ranks, n_ranks, NULL, 0, NULL, false, false, NULL, NULL, lg);
    if (st != MT_OK)
        return st;
    size_t NX = in->n_xi;
    cp_part_inst_t *ui = malloc((NX ? NX : 1) * sizeof *ui);
    first_ref_t *fr = malloc((NX ? NX : 1) * sizeof *fr);
    uint32_t *seen = NULL;
    int64_t *med = NULL;
    st = MT_ERR_NOMEM;
    if (!ui || !fr)
        goto out;
    st = MT_ERR_RANGE;
    /* its ranks' host collective members and pauses, at their places */
    for (size_t q = 0; q < in->n_xs; q++)
        if (in->xs[q].li < 0 || (size_t)in->xs[q].li >= lg->n_ranks ||
            (q && (in->xs[q].li < in->xs[q - 1].li ||
                   (in->xs[q].li == in->xs[q - 1].li && in->xs[q].at <= in->xs[q - 1].at))))
            goto out;
    size_t nhx = 0;
    for (size_t x = 0; x < NX; x++)
        nhx += in->xi[x].host;
    for (size_t q = 0; q < in->n_xs; q++) {
        const cp_part_xsync_t *y = &in->xs[q];
        if (y->hi < 0 || (size_t)y->hi >= nhx)
            goto out;
        size_t nrs = ((size_t)y->li + 1 < lg->n_ranks ? lg->ranks[y->li + 1].rs0 : lg->n_rs) - lg->ranks[y->li].rs0;
        if (y->rstep >= 0 && (size_t)y->rstep >= nrs)
            goto out;
    }
    if ((st = build_syncs(lg, in)) != MT_OK)
        goto out;
    st = MT_ERR_NOMEM;
    /* the instances and host collectives it touches, with its members */
    size_t ni = 0, nh = 0, ngm = 0, nhm = 0, m = 0;
    for (size_t x = 0; x < NX; x++) {
        if (in->xi[x].host) {
            nh++;
            nhm += in->xi[x].n;
        } else {
            if (nh) /* the instances first */
                goto range;
            ni++;
            ngm += in->xi[x].n;
        }
    }
    if (ngm + nhm != in->n_mem)
        goto range;
    lg->inst = malloc((ni ? ni : 1) * sizeof *lg->inst);
    lg->hin = malloc((nh ? nh : 1) * sizeof *lg->hin);
    lg->imem = malloc((ngm ? ngm : 1) * sizeof *lg->imem);
    lg->hmem = malloc((nhm ? nhm : 1) * sizeof *lg->hmem);
    if (!lg->inst || !lg->hin || !lg->imem || !lg->hmem)
        goto out;
    lg->n_inst = ni;
    lg->n_hin = nh;
    for (size_t x = 0; x < NX; x++) {
        const cp_part_xinst_t *X = &in->xi[x];
        bool host = X->host;
        cp_inst_t I = {.maxstart = X->maxstart, .transfer = X->transfer, .last = -1, .n = X->n,
                       .absent = X->absent, .m0 = host ? lg->n_hmem : lg->n_imem};
        if (X->last >= 0 && (uint32_t)X->last >= X->n)
            goto range;
        for (uint32_t q = 0; q < X->n; q++, m++) {
            const cp_part_xmem_t *M = &in->mem[m];
            if (M->li < 0 || (size_t)M->li >= lg->n_ranks)
                goto range;
            const cp_rank_t *R = &lg->ranks[M->li];
            if (M->k >= (host ? R->n_syncs : R->n_nodes))
                goto range;
            int32_t id = (int32_t)((host ? R->sync0 : R->node0) + M->k);
            if (host) {
                lg->hmem[lg->n_hmem++] = id;
            } else {
                lg->imem[lg->n_imem++] = id;
                lg->nodes[id].inst = (int32_t)x;
            }
            if ((int32_t)q == X->last)
                I.last = id;
        }
        if (host)
            lg->hin[x - ni] = I;
        else
            lg->inst[x] = I;
    }
    /* a member ending before its instance's last arrival (clock error):
     * its end event is not at its place in by_end (critpath.c) */
    for (size_t q = 0; q < lg->n_imem; q++) {
        const cp_node_t *n = &lg->nodes[lg->imem[q]];
        if (cp_node_T(lg, n) < 0)
            lg->ranks[n->rank_i].end_late = true;
    }
    for (size_t q = 0; q < in->n_absent; q++) {
        const cp_part_xmem_t *M = &in->absent[q];
        if (M->li < 0 || (size_t)M->li >= lg->n_ranks || M->k >= lg->ranks[M->li].n_nodes)
            goto range;
        lg->nodes[lg->ranks[M->li].node0 + M->k].absent = 1;
    }
    /* the host collective members' lateness and the pauses, from the
     * job's medians */
    if (!(med = malloc((NX ? NX : 1) * sizeof *med)))
        goto out;
    for (size_t x = 0; x < NX; x++)
        med[x] = in->xi[x].med;
    cp_pause_med_t md = {.inst = med, .hin = med + ni, .steps = in->steps, .step_gap = in->step_gap,
                         .n_steps = in->n_steps};
    if (cp_pauses_place(lg, &md) < 0)
        goto out;
    /* the job steps: a rank step's the index of its step number, the
     * first of a number on its rank only (mt_critpath_run's rule) */
    if (!(seen = malloc((in->n_steps ? in->n_steps : 1) * sizeof *seen)))
        goto out;
    for (size_t j = 0; j < in->n_steps; j++)
        seen[j] = UINT32_MAX;
    for (size_t i = 0; i < lg->n_rs; i++) {
        cp_rs_t *x = &lg->rs[i];
        size_t lo = mt_lower_bound_i64(in->steps, in->n_steps, sizeof *in->steps, x->step);
        if (lo == in->n_steps || in->steps[lo] != x->step)
            goto range;
        x->job = seen[lo] == (uint32_t)x->rank_i ? -1 : (int32_t)lo;
        seen[lo] = (uint32_t)x->rank_i;
    }
    /* the rank steps' last-ending nodes are the build's; the job fields
     * and the replay order as the whole job's */
    cp_job_fields(lg);
    lg->explicit_deps = in->explicit_deps;
    /* a job in topological order (a queue's over the whole job's edges)
     * is replayed here in time order made topological: a queue over this
     * process's edges alone could put, within a rank, the end of one
     * shared instance before a member's start of another that the first
     * waits for through other processes (the supersteps stall) */
    if (cp_order_build(lg, false))
        goto out;
    free(lg->by_end);
    lg->by_end = NULL;
    /* what it knows of each instance: where its first end falls among its
     * events (the events before that end's key) */
    size_t nf = 0;
    for (size_t x = 0; x < NX; x++) {
        const cp_part_xinst_t *X = &in->xi[x];
        ui[x] = (cp_part_inst_t){.u = X->u, .need = X->need, .first = UINT32_MAX, .job = -1, .at_rank = -1};
        if (X->ftype == CP_PART_NO_END)
            continue;
        ui[x].job = X->fjob;
        ui[x].at_rank = rank_index(lg, X->frank);
        fr[nf++] = (first_ref_t){.key = {mt_sort_key_i64(X->fkey), X->ftype, X->frank, X->fk}, .x = (uint32_t)x};
    }
    if (in->topo) {
        /* not the job's order: the first end here (every member here
         * started before it) */
        for (size_t e = 0; e < lg->n_ev; e++) {
            long u = ev_reads(lg, lg->ev[e]);
            if (u >= 0 && ui[u].first == UINT32_MAX && in->xi[u].ftype != CP_PART_NO_END)
                ui[u].first = (uint32_t)e;
        }
        nf = 0;
    }
    qsort(fr, nf, sizeof *fr, first_ref_cmp);
    size_t f = 0;
    for (size_t e = 0; e <= lg->n_ev && f < nf; e++) {
        ord_key_t k = e < lg->n_ev ? ev_key(lg, lg->ev[e]) : (ord_key_t){UINT64_MAX, UINT32_MAX, INT32_MAX, UINT32_MAX};
        for (; f < nf && (e == lg->n_ev || ord_key_cmp(&fr[f].key, &k) <= 0); f++)
            ui[fr[f].x].first = (uint32_t)e;
    }
    free(fr);
    free(seen);
    free(med);
    *uip = ui;
    return MT_OK;
range:
    st = MT_ERR_RANGE;
out:
    free(ui);
    free(fr);
    free(seen);
    free(med);
    cp_graph_free(lg);
    return st;
}

/* ---- the plan ---- */

void cp_part_plan_free(cp_part_plan_t *p)
{
    free(p->ev);
    free(p->rd);
    free(p->seg);
    free(p->xi);
    free(p->xh);
    free(p->lneed);
    memset(p, 0, sizeof *p);
}

/* What cp_part_plan works with. */
typedef struct plan_ctx {
    bool carry;
    size_t n_jseg;        /* streams a rank: job steps + 1, or 1 carried */
} plan_ctx_t;

/* The stream of rank_i ri in job step j. */
static size_t seg_of(const plan_ctx_t *c, int32_t ri, int32_t j)
{
    return (size_t)ri * c->n_jseg + (c->carry ? 0 : (size_t)(j + 1));
}

/* qsort: by key */
static int key_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

mt_status_t cp_part_plan(const cp_graph_t *g, const cp_part_inst_t *ui, uint32_t n_procs, uint32_t me, bool carry,
                         cp_part_plan_t *p)
{
    memset(p, 0, sizeof *p);
    /* the messages carry the sending process in 16 bits and the reads'
     * sort keys a first end's place in 31: past them, refused, not wrapped */
    if (n_procs > (uint32_t)UINT16_MAX + 1 || g->n_ev >= (size_t)1 << 31)
        return MT_ERR_RANGE;
    p->ui = ui;
    p->me = me;
    p->n_procs = n_procs;
    size_t NU = g->n_inst + g->n_hin, NR = g->n_ranks;
    plan_ctx_t c = {.carry = carry, .n_jseg = carry ? 1 : (size_t)n_jobs_of(g, ui, NU) + 1};
    uint32_t *rstamp = malloc((NR ? NR : 1) * sizeof *rstamp);
    uint64_t *ord = malloc((NU ? NU : 1) * sizeof *ord); /* the shared instances by (first end, mid) */
    size_t n_ord = 0;
    p->lneed = calloc(NU ? NU : 1, sizeof *p->lneed);
    p->xi = calloc(g->n_inst ? g->n_inst : 1, 1);
    p->xh = calloc(g->n_hin ? g->n_hin : 1, 1);
    p->n_seg = NR * c.n_jseg;
    p->seg = calloc(p->n_seg ? p->n_seg : 1, sizeof *p->seg);
    if (!rstamp || !ord || !p->lneed || !p->xi || !p->xh || !p->seg)
        goto nomem;
    for (size_t i = 0; i < NR; i++)
        rstamp[i] = UINT32_MAX;
    /* per instance: its ranks here; read by the supersteps when it has
     * members on another process, or on two of this process's ranks
     * (each rank a stream of its own) */
    for (size_t u = 0; u < NU; u++) {
        const cp_inst_t *I = inst_at(g, u);
        for (uint32_t m = 0; m < I->n; m++) {
            int32_t ri = member_rank(g, u, m);
            if (rstamp[ri] != (uint32_t)u) {
                rstamp[ri] = (uint32_t)u;
                p->lneed[u]++;
            }
        }
        bool x = (ui[u].need > 1 && p->lneed[u]) || p->lneed[u] > 1;
        if (u < g->n_inst)
            p->xi[u] = x;
        else
            p->xh[u - g->n_inst] = x;
        if (x && ui[u].first != UINT32_MAX) {
            /* a host collective member's return here reads within it,
             * after any read that comes before that event */
            bool mid = u >= g->n_inst && ui[u].at_rank >= 0;
            ord[n_ord++] = (uint64_t)ui[u].first << 33 | (uint64_t)mid << 32 | u;
        }
    }
    qsort(ord, n_ord, sizeof *ord, key_cmp);
    /* its events by stream, its reads by stream: counted, then placed */
    for (size_t k = 0; k < g->n_ev; k++)
        p->seg[seg_of(&c, ev_rank(g, g->ev[k]), ev_job(g, g->ev[k]))].e1++;
    for (size_t i = 0; i < NR; i++)
        rstamp[i] = UINT32_MAX;
    for (size_t o = 0; o < n_ord; o++) {
        size_t u = (size_t)(ord[o] & 0xffffffff);
        const cp_inst_t *I = inst_at(g, u);
        for (uint32_t m = 0; m < I->n; m++) {
            int32_t ri = member_rank(g, u, m);
            if (rstamp[ri] != (uint32_t)u) {
                rstamp[ri] = (uint32_t)u;
                p->seg[seg_of(&c, ri, ui[u].job)].r1++;
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
        rstamp[i] = UINT32_MAX;
    size_t o = 0;
    for (size_t k = 0; k <= g->n_ev; k++) {
        /* each of its member ranks reads an instance before its next
         * event in the stream of the first end's job step: its events
         * before the first end (in the job's order) done */
        for (; o < n_ord && (ord[o] >> 33) == k; o++) {
            size_t u = (size_t)(ord[o] & 0xffffffff);
            const cp_inst_t *I = inst_at(g, u);
            for (uint32_t m = 0; m < I->n; m++) {
                int32_t ri = member_rank(g, u, m);
                if (rstamp[ri] == (uint32_t)u)
                    continue;
                rstamp[ri] = (uint32_t)u;
                cp_part_seg_t *S = &p->seg[seg_of(&c, ri, ui[u].job)];
                p->rd[S->r1++] = (cp_part_read_t){.at = S->e1, .u = (uint32_t)u, .job = ui[u].job, .rank_i = ri,
                                                  .mid = u >= g->n_inst && ri == ui[u].at_rank};
            }
        }
        if (k == g->n_ev)
            break;
        int64_t v = g->ev[k];
        cp_part_seg_t *S = &p->seg[seg_of(&c, ev_rank(g, v), ev_job(g, v))];
        p->ev[S->e1++] = v;
    }
    free(rstamp);
    free(ord);
    return MT_OK;
nomem:
    free(rstamp);
    free(ord);
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
    const cp_part_inst_t *w = &x->p->ui[d->u];
    if (w->need == 1) { /* every member here: answered at once */
        cp_part_take(x, &(cp_part_msg_t){.u = w->u, .lu = d->u, .lane = (uint16_t)l, .v = x->lmax[i]}, 1);
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
    x->out[x->n_out++] = (cp_part_msg_t){.u = w->u, .lu = d->u, .lane = (uint16_t)l, .proc = (uint16_t)x->p->me,
                                         .need = w->need, .v = x->lmax[i]};
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
        uint32_t u = ans[k].lu;
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
        o->who[o->n_who] = (struct cp_part_who){.next = o->head[i], .proc = m->proc, .lu = m->lu};
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
            (*out)[(*n_out)++] = (cp_part_msg_t){.u = m->u, .lu = o->who[w].lu, .lane = m->lane,
                                                      .proc = o->who[w].proc, .v = o->max[i]};
        }
    }
    return MT_OK;
}
