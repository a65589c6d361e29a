/* The partitioned replay checked against the one-process sweeps
 * (cp_part_check.h): the probe, the virtual processes with their own
 * graphs, their rounds and their bytes. */
#include "cp_part_check.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/stats.h"
#include "cross/cp_part.h"

cp_part_stats_t cp_part_stats;

static void fail(const char *fmt, ...)
{
    if (!cp_part_stats.failures++) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(cp_part_stats.first, sizeof cp_part_stats.first, fmt, ap);
        va_end(ap);
    }
}

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p) {
        fprintf(stderr, "cp_part_check: out of memory\n");
        abort();
    }
    return p;
}

/* The rank_i of member q of instance u (g->inst below g->n_inst, then
 * g->hin). */
static int32_t mrank(const cp_graph_t *g, size_t u, uint32_t q)
{
    if (u < g->n_inst)
        return g->nodes[g->imem[g->inst[u].m0 + q]].rank_i;
    return g->syncs[g->hmem[g->hin[u - g->n_inst].m0 + q]].rank_i;
}

/* The design's round estimates for a layout: the most instances shared
 * between processes that one rank meets in one job step, and in the run. */
static void estimates(const cp_graph_t *g, const uint32_t *proc_of, uint64_t *step, uint64_t *run)
{
    size_t NR = g->n_ranks, NU = g->n_inst + g->n_hin;
    int32_t nj = 0;
    for (size_t i = 0; i < g->n_rs; i++)
        if (g->rs[i].job + 1 > nj)
            nj = g->rs[i].job + 1;
    size_t W = (size_t)nj + 1; /* job -1 first */
    uint64_t *per = xcalloc(NR * W, sizeof *per), *all = xcalloc(NR, sizeof *all);
    int32_t *seen = xcalloc(NR, sizeof *seen);
    for (size_t r = 0; r < NR; r++)
        seen[r] = -1;
    for (size_t u = 0; u < NU; u++) {
        const cp_inst_t *I = u < g->n_inst ? &g->inst[u] : &g->hin[u - g->n_inst];
        bool shared = false;
        for (uint32_t m = 1; m < I->n && !shared; m++) {
            shared = proc_of[mrank(g, u, 0)] != proc_of[mrank(g, u, m)];
        }
        if (!shared)
            continue;
        for (uint32_t m = 0; m < I->n; m++) {
            int32_t ri, job;
            if (u < g->n_inst) {
                ri = g->nodes[g->imem[I->m0 + m]].rank_i;
                job = g->nodes[g->imem[I->m0 + m]].job;
            } else {
                ri = g->syncs[g->hmem[I->m0 + m]].rank_i;
                job = g->syncs[g->hmem[I->m0 + m]].job;
            }
            if (seen[ri] == (int32_t)u) /* a rank twice in one instance: once */
                continue;
            seen[ri] = (int32_t)u;
            per[(size_t)ri * W + (size_t)(job + 1)]++;
            all[ri]++;
        }
    }
    *step = *run = 0;
    for (size_t r = 0; r < NR; r++) {
        for (size_t j = 0; j < W; j++)
            if (per[r * W + j] > *step)
                *step = per[r * W + j];
        if (all[r] > *run)
            *run = all[r];
    }
    free(per);
    free(all);
    free(seen);
}

/* The rounds the supersteps must take at least: the longest chain of
 * shared instances in the replay order, an instance one round after the
 * latest one any of its member ranks read before it in its stream (an
 * instance of one process alone costs no round; comm: lanes that read no
 * instance but host collectives). */
static uint64_t chain(const cp_graph_t *g, const uint32_t *proc_of, bool carry, bool comm)
{
    size_t NR = g->n_ranks, NU = g->n_inst + g->n_hin;
    int32_t nj = 0;
    for (size_t i = 0; i < g->n_rs; i++)
        if (g->rs[i].job + 1 > nj)
            nj = g->rs[i].job + 1;
    size_t W = carry ? 1 : (size_t)nj + 1;
    uint64_t *lv = xcalloc(NR * W, sizeof *lv), best = 0;
    uint8_t *seen = xcalloc(NU, 1);
    for (size_t k = 0; k < g->n_ev; k++) {
        int64_t v = g->ev[k];
        int type = (int)(v >> 32);
        int32_t id = (int32_t)(v & 0xffffffff);
        long u = type == 0                              ? g->hot[id].inst
                 : type == 1 && g->syncs[id].hi >= 0 ? (long)g->n_inst + g->syncs[id].hi
                                                     : -1;
        if (u < 0 || seen[u] || (comm && (size_t)u < g->n_inst))
            continue;
        seen[u] = 1;
        int32_t job = type == 0 ? g->hot[id].job : g->syncs[id].job;
        size_t w = carry ? 0 : (size_t)(job + 1);
        const cp_inst_t *I = (size_t)u < g->n_inst ? &g->inst[u] : &g->hin[(size_t)u - g->n_inst];
        uint64_t m = 0;
        bool shared = false;
        for (uint32_t q = 0; q < I->n; q++) {
            int32_t ri = mrank(g, (size_t)u, q);
            shared = shared || proc_of[ri] != proc_of[mrank(g, (size_t)u, 0)];
            if (lv[(size_t)ri * W + w] > m)
                m = lv[(size_t)ri * W + w];
        }
        m += shared;
        for (uint32_t q = 0; q < I->n; q++) {
            lv[(size_t)mrank(g, (size_t)u, q) * W + w] = m;
        }
        if (m > best)
            best = m;
    }
    free(lv);
    free(seen);
    return best;
}

/* Append msgs to box (grown). */
static void box_add(cp_part_msg_t **box, size_t *n, size_t *cap, const cp_part_msg_t *m, size_t k)
{
    if (*n + k > *cap) {
        *cap = 2 * (*n + k) + 64;
        *box = realloc(*box, *cap * sizeof **box);
        if (!*box) {
            fprintf(stderr, "cp_part_check: out of memory\n");
            abort();
        }
    }
    memcpy(*box + *n, m, k * sizeof *m);
    *n += k;
}

#define MAXP 3

/* One process's graph (cp_part_cut) and the scenarios' per-node and
 * per-rank arrays cut to it. */
typedef struct share {
    cp_graph_t g;
    cp_part_inst_t *ui;
    int32_t *rank_of;     /* its rank_i -> the whole graph's */
    bool built;           /* g is cp_part_build's (else cp_part_cut's) */
    double *factor[CP_PART_LANES];
    uint8_t *late[CP_PART_LANES];
} share_t;

/* The bytes of a lane's replay arrays over g (cp_rp_alloc's). */
static uint64_t rp_bytes(const cp_graph_t *g)
{
    return g->n_nodes * (2 * sizeof(int64_t) + 1) + g->n_syncs * 2 * sizeof(int64_t) +
           (g->n_inst + g->n_hin) * (sizeof(int64_t) + 1) + g->n_rs * 3 * sizeof(int64_t);
}

/* Node k of the whole graph's rank ri in share S (ri's local index li). */
static size_t lnode(const cp_graph_t *g, const share_t *S, int32_t li, size_t id)
{
    return id - g->ranks[S->rank_of[li]].node0 + S->g.ranks[li].node0;
}

/* ---- a process's graph built from its ranks' analyses (cp_part_build) ---- */

static int i64_cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The ranks' analyses as cp_graph_build read them, their activities
 * copied (cp_built_probe): the program drops them once the graph is
 * built, and each process's graph is built from them again here. */
static struct kept {
    const mt_rank_analysis_t *orig;
    mt_rank_analysis_t copy;
} *kept;
static size_t n_kept;

static void kept_free(void)
{
    for (size_t i = 0; i < n_kept; i++) {
        free(kept[i].copy.gacts);
        free(kept[i].copy.gdeps);
        free(kept[i].copy.gstep);
    }
    free(kept);
    kept = NULL;
    n_kept = 0;
}

static void *dup_of(const void *p, size_t n)
{
    if (!p)
        return NULL;
    void *q = xcalloc(1, n);
    memcpy(q, p, n);
    return q;
}

static void keep(const cp_graph_t *g)
{
    kept_free();
    kept = xcalloc(g->n_ranks, sizeof *kept);
    for (size_t i = 0; i < g->n_ranks; i++) {
        const mt_rank_analysis_t *a = g->ranks[i].an;
        kept[i].orig = a;
        kept[i].copy = *a;
        kept[i].copy.gacts = dup_of(a->gacts, a->n_gacts * sizeof *a->gacts);
        kept[i].copy.gdeps = dup_of(a->gdeps, 2 * a->n_gacts * sizeof *a->gdeps);
        kept[i].copy.gstep = dup_of(a->gstep, a->n_gacts * sizeof *a->gstep);
    }
    n_kept = g->n_ranks;
}

/* Rank_i i's analysis of g with its activities (the copy kept). */
static const mt_rank_analysis_t *an_of(const cp_graph_t *g, size_t i)
{
    const mt_rank_analysis_t *a = g->ranks[i].an;
    if (i < n_kept && kept[i].orig == a)
        return &kept[i].copy;
    for (size_t k = 0; k < n_kept; k++)
        if (kept[k].orig == a)
            return &kept[k].copy;
    return a;
}

/* The inputs of process me's graph, worked out here from the whole job's
 * graph g: the stand-in for what the other processes would send; the
 * job-wide ones from the members' own values, as the owners would. */
typedef struct inputs {
    cp_part_in_t in;
    int64_t *steps, *step_gap;
    cp_part_xinst_t *xi;
    cp_part_xmem_t *mem, *absent;
    cp_part_xsync_t *xs;
    const mt_rank_analysis_t **an; /* its ranks' analyses, and the clocks of those that have one */
    mt_clock_t *clk;
    int32_t *ranks;
    size_t n_an, n_clk;
} inputs_t;

static void inputs_free(inputs_t *X)
{
    free(X->steps);
    free(X->step_gap);
    free(X->xi);
    free(X->mem);
    free(X->absent);
    free(X->xs);
    free(X->an);
    free(X->clk);
    free(X->ranks);
}

static void inputs_of(const cp_graph_t *g, const uint32_t *proc_of, uint32_t P, uint32_t me, inputs_t *X)
{
    size_t NR = g->n_ranks, NU = g->n_inst + g->n_hin;
    memset(X, 0, sizeof *X);
    int32_t *lr = xcalloc(NR, sizeof *lr);
    size_t nl = 0;
    for (size_t i = 0; i < NR; i++)
        lr[i] = proc_of[i] == me ? (int32_t)nl++ : -1;
    /* its ranks' analyses and clocks */
    X->an = xcalloc(nl, sizeof *X->an);
    X->clk = xcalloc(nl, sizeof *X->clk);
    X->ranks = xcalloc(nl, sizeof *X->ranks);
    for (size_t i = 0; i < NR; i++) {
        if (lr[i] < 0)
            continue;
        X->an[X->n_an++] = an_of(g, i);
        if (g->ranks[i].clk) {
            X->clk[X->n_clk] = *g->ranks[i].clk;
            X->ranks[X->n_clk++] = g->ranks[i].rank;
        }
    }
    /* the job steps' numbers: every rank step's, sorted, each once (an
     * allgather in a run) */
    X->steps = xcalloc(g->n_rs, sizeof *X->steps);
    for (size_t i = 0; i < g->n_rs; i++)
        X->steps[i] = g->rs[i].step;
    qsort(X->steps, g->n_rs, sizeof *X->steps, i64_cmp);
    size_t nj = 0;
    for (size_t i = 0; i < g->n_rs; i++)
        if (!nj || X->steps[nj - 1] != X->steps[i])
            X->steps[nj++] = X->steps[i];
    X->in.steps = X->steps;
    X->in.n_steps = nj;
    /* per step number, the median over the job's rank steps of their first
     * launch's time after their start (those after it; 2 or more) */
    X->step_gap = xcalloc(nj, sizeof *X->step_gap);
    {
        int64_t *first = xcalloc(g->n_rs, sizeof *first), *gv = xcalloc(g->n_rs, sizeof *gv);
        for (size_t i = 0; i < g->n_rs; i++)
            first[i] = INT64_MAX;
        for (size_t k = 0; k < g->n_nodes; k++) {
            const cp_node_t *n = &g->nodes[k];
            if (n->rstep >= 0 && n->L != INT64_MIN && n->L < first[n->rstep])
                first[n->rstep] = n->L;
        }
        for (size_t j = 0; j < nj; j++) {
            size_t k = 0;
            for (size_t i = 0; i < g->n_rs; i++)
                if (g->rs[i].step == X->steps[j] && first[i] != INT64_MAX && first[i] > g->rs[i].start)
                    gv[k++] = first[i] - g->rs[i].start;
            X->step_gap[j] = k >= 2 ? mt_stats_median_i64(gv, k) : INT64_MIN;
        }
        free(first);
        free(gv);
    }
    X->in.step_gap = X->step_gap;
    /* what each instance's owner works out from its members' own values
     * (each member's process sends them): the last arrival, a maximum of
     * the aligned starts (the first member at it in the match's order
     * its node); the transfer, a minimum of the durations; the first end
     * in the job's order, a minimum of the members' end keys (time, then
     * event type, rank, node or sync within the rank: the order's own
     * ties), the time a node's end or the last arrival when later
     * (cp_end_key), a host collective member's sync's end */
    int64_t *ms = xcalloc(NU, sizeof *ms), *tr = xcalloc(NU, sizeof *tr), *md = xcalloc(NU, sizeof *md);
    int64_t *tmp = xcalloc(g->n_imem + g->n_hmem, sizeof *tmp);
    int32_t *lastm = xcalloc(NU, sizeof *lastm);
    uint8_t *ftype = xcalloc(NU, 1);
    int64_t *fkey = xcalloc(NU, sizeof *fkey);
    int32_t *frank = xcalloc(NU, sizeof *frank), *fjob = xcalloc(NU, sizeof *fjob);
    uint32_t *fk = xcalloc(NU, sizeof *fk);
    memset(ftype, CP_PART_NO_END, NU);
    for (size_t u = 0; u < NU; u++) {
        bool node = u < g->n_inst;
        const cp_inst_t *I = node ? &g->inst[u] : &g->hin[u - g->n_inst];
        ms[u] = INT64_MIN;
        tr[u] = INT64_MAX;
        lastm[u] = -1;
        for (uint32_t q = 0; q < I->n; q++) {
            int32_t id = node ? g->imem[I->m0 + q] : g->hmem[I->m0 + q];
            int64_t st = node ? g->nodes[id].s : g->syncs[id].s, en = node ? g->nodes[id].e : g->syncs[id].e;
            if (st > ms[u]) {
                ms[u] = st;
                lastm[u] = id;
            }
            if (en - st < tr[u])
                tr[u] = en - st;
            /* the pauses' median: of the starts; a host collective's, of
             * its members' gaps since they were last together */
            int64_t anchor;
            tmp[q] = node ? st : cp_host_gap(g, &g->ranks[g->syncs[id].rank_i], (size_t)id - g->ranks[g->syncs[id].rank_i].sync0, &anchor);
        }
        md[u] = I->n ? mt_stats_median_i64(tmp, I->n) : 0;
        for (uint32_t q = 0; q < I->n; q++) {
            int32_t id = node ? g->imem[I->m0 + q] : g->hmem[I->m0 + q];
            int32_t ri = node ? g->nodes[id].rank_i : g->syncs[id].rank_i;
            const cp_rank_t *R = &g->ranks[ri];
            int64_t t = node ? (g->nodes[id].e > ms[u] ? g->nodes[id].e : ms[u]) : g->syncs[id].e;
            uint32_t k = (uint32_t)((size_t)id - (node ? R->node0 : R->sync0));
            uint8_t ty = node ? 0 : 1;
            if (ftype[u] != CP_PART_NO_END &&
                (t > fkey[u] || (t == fkey[u] && (R->rank > frank[u] || (R->rank == frank[u] && k > fk[u])))))
                continue;
            ftype[u] = ty;
            fkey[u] = t;
            frank[u] = R->rank;
            fk[u] = k;
            fjob[u] = node ? g->nodes[id].job : g->syncs[id].job;
        }
    }
    /* each sync's place among its rank's before the pauses (the pauses
     * are worked out on the process: cp_pauses_place) */
    uint32_t *pre = xcalloc(g->n_syncs, sizeof *pre);
    for (size_t i = 0; i < NR; i++)
        for (size_t k = 0, n = 0; k < g->ranks[i].n_syncs; k++) {
            pre[g->ranks[i].sync0 + k] = (uint32_t)n;
            n += g->syncs[g->ranks[i].sync0 + k].hi != -2;
        }
    /* the instances it touches, in the job's order, with its members
     * (step 2's holders know them) and which processes hold the others */
    X->xi = xcalloc(NU, sizeof *X->xi);
    X->mem = xcalloc(g->n_imem + g->n_hmem, sizeof *X->mem);
    int32_t *hlu = xcalloc(g->n_hin, sizeof *hlu);
    uint8_t *pseen = xcalloc(P, 1);
    size_t nh = 0;
    for (size_t u = 0; u < NU; u++) {
        bool node = u < g->n_inst;
        const cp_inst_t *I = node ? &g->inst[u] : &g->hin[u - g->n_inst];
        uint32_t here = 0, need = 0;
        int32_t last = -1;
        memset(pseen, 0, P);
        size_t m0 = X->in.n_mem;
        for (uint32_t q = 0; q < I->n; q++) {
            int32_t id = node ? g->imem[I->m0 + q] : g->hmem[I->m0 + q];
            int32_t ri = node ? g->nodes[id].rank_i : g->syncs[id].rank_i;
            if (!pseen[proc_of[ri]]) {
                pseen[proc_of[ri]] = 1;
                need++;
            }
            if (lr[ri] < 0)
                continue;
            const cp_rank_t *R = &g->ranks[ri];
            if (id == lastm[u])
                last = (int32_t)here;
            X->mem[m0 + here++] =
                (cp_part_xmem_t){.li = lr[ri], .k = node ? (uint32_t)((size_t)id - R->node0) : pre[id]};
        }
        if (!here)
            continue;
        if (!node)
            hlu[u - g->n_inst] = (int32_t)nh++;
        X->in.n_mem += here;
        X->xi[X->in.n_xi++] = (cp_part_xinst_t){.maxstart = ms[u], .transfer = tr[u], .med = md[u], .fkey = fkey[u],
                                                .frank = frank[u], .fk = fk[u], .fjob = fjob[u], .u = (uint32_t)u,
                                                .need = need, .last = last, .n = here, .host = !node,
                                                .ftype = ftype[u], .absent = I->absent};
    }
    X->in.xi = X->xi;
    X->in.mem = X->mem;
    /* its ranks' host collective members */
    size_t nx = 0, na = 0;
    for (size_t i = 0; i < NR; i++)
        if (lr[i] >= 0) {
            for (size_t k = 0; k < g->ranks[i].n_syncs; k++)
                nx += g->syncs[g->ranks[i].sync0 + k].hi >= 0;
            for (size_t k = 0; k < g->ranks[i].n_nodes; k++)
                na += g->nodes[g->ranks[i].node0 + k].absent;
        }
    X->xs = xcalloc(nx, sizeof *X->xs);
    X->absent = xcalloc(na, sizeof *X->absent);
    for (size_t i = 0; i < NR; i++) {
        if (lr[i] < 0)
            continue;
        const cp_rank_t *R = &g->ranks[i];
        for (size_t k = 0; k < R->n_syncs; k++) {
            const cp_sync_t *y = &g->syncs[R->sync0 + k];
            if (y->hi < 0)
                continue;
            X->xs[X->in.n_xs++] = (cp_part_xsync_t){.s = y->s, .e = y->e, .li = lr[i], .at = pre[R->sync0 + k],
                                                    .hi = hlu[y->hi],
                                                    .rstep = y->rstep >= 0 ? y->rstep - (int32_t)R->rs0 : -1};
        }
        for (size_t k = 0; k < R->n_nodes; k++)
            if (g->nodes[R->node0 + k].absent)
                X->absent[X->in.n_absent++] = (cp_part_xmem_t){.li = lr[i], .k = (uint32_t)k};
    }
    X->in.xs = X->xs;
    X->in.absent = X->absent;
    X->in.explicit_deps = g->explicit_deps;
    X->in.topo = g->explicit_deps && !g->n_syncs;
    free(lr);
    free(pre);
    free(ms);
    free(tr);
    free(md);
    free(tmp);
    free(lastm);
    free(ftype);
    free(fkey);
    free(frank);
    free(fjob);
    free(fk);
    free(hlu);
    free(pseen);
}

#define SAME(x, ...)                                                                                                   \
    do {                                                                                                               \
        cp_part_stats.build_values++;                                                                                  \
        if (!(x)) {                                                                                                    \
            fail(__VA_ARGS__);                                                                                         \
            return false;                                                                                              \
        }                                                                                                              \
    } while (0)

/* The built graph a (cp_part_build) against the cut one b (cp_part_cut),
 * field for field; false (and a failure) at the first difference. */
static bool same_graph(const cp_graph_t *a, const cp_part_inst_t *ua, const cp_graph_t *b, const cp_part_inst_t *ub,
                       uint32_t P, uint32_t me, bool topo)
{
    SAME(a->n_nodes == b->n_nodes && a->n_syncs == b->n_syncs && a->n_rs == b->n_rs && a->n_ranks == b->n_ranks &&
             a->n_inst == b->n_inst && a->n_hin == b->n_hin && a->n_imem == b->n_imem && a->n_hmem == b->n_hmem &&
             a->n_ev == b->n_ev && a->n_jnext == b->n_jnext,
         "built graph (P %u, process %u): counts differ from the cut's (nodes %zu/%zu syncs %zu/%zu rank steps "
         "%zu/%zu instances %zu/%zu host %zu/%zu events %zu/%zu)",
         P, me, a->n_nodes, b->n_nodes, a->n_syncs, b->n_syncs, a->n_rs, b->n_rs, a->n_inst, b->n_inst, a->n_hin,
         b->n_hin, a->n_ev, b->n_ev);
    SAME(a->explicit_deps == b->explicit_deps && a->topo_cycle == b->topo_cycle && a->order_cycle == b->order_cycle,
         "built graph (P %u, process %u): order flags differ", P, me);
    for (size_t i = 0; i < a->n_ranks; i++) {
        const cp_rank_t *x = &a->ranks[i], *y = &b->ranks[i];
        SAME(x->an->steps == y->an->steps && x->rank == y->rank && x->node0 == y->node0 && x->n_nodes == y->n_nodes &&
                 x->sync0 == y->sync0 && x->n_syncs == y->n_syncs && x->rs0 == y->rs0 && x->lambda == y->lambda &&
                 x->lat == y->lat && x->sync_lag == y->sync_lag && x->by_start == y->by_start &&
                 x->end_late == y->end_late && x->waits_named == y->waits_named && !x->clk == !y->clk &&
                 (!x->clk || !memcmp(x->clk, y->clk, sizeof *x->clk)),
             "built graph (P %u, process %u): rank %zu differs", P, me, i);
    }
    for (size_t i = 0; i < a->n_nodes; i++) {
        const cp_node_t *x = &a->nodes[i], *y = &b->nodes[i];
        SAME(x->s == y->s && x->e == y->e && x->L == y->L && x->name == y->name && x->name_len == y->name_len &&
                 x->rank_i == y->rank_i && x->pstream == y->pstream && x->px == y->px && x->px2 == y->px2 &&
                 x->inst == y->inst && x->rstep == y->rstep && x->job == y->job && x->lsync == y->lsync &&
                 x->cls == y->cls && x->bind == y->bind && x->absent == y->absent && x->xnamed == y->xnamed,
             "built graph (P %u, process %u): node %zu differs (inst %d/%d job %d/%d lsync %d/%d px %d/%d)", P, me,
             i, x->inst, y->inst, x->job, y->job, x->lsync, y->lsync, x->px, y->px);
    }
    for (size_t i = 0; i < a->n_syncs; i++) {
        const cp_sync_t *x = &a->syncs[i], *y = &b->syncs[i];
        SAME(x->s == y->s && x->e == y->e && x->late == y->late && x->w == y->w && x->hi == y->hi &&
                 x->rank_i == y->rank_i && x->rstep == y->rstep && x->job == y->job && x->sb == y->sb &&
                 x->bar == y->bar && x->jnext == y->jnext,
             "built graph (P %u, process %u): sync %zu differs (hi %d/%d late %lld/%lld sb %d/%d)", P, me, i, x->hi,
             y->hi, (long long)x->late, (long long)y->late, x->sb, y->sb);
    }
    for (size_t i = 0; i < a->n_rs; i++) {
        const cp_rs_t *x = &a->rs[i], *y = &b->rs[i];
        SAME(x->rank_i == y->rank_i && x->last == y->last && x->step == y->step && x->start == y->start &&
                 x->cpu_end == y->cpu_end && x->end == y->end && x->job == y->job && x->sb_start == y->sb_start &&
                 x->sb_end == y->sb_end && x->src == y->src,
             "built graph (P %u, process %u): rank step %zu differs (job %d/%d)", P, me, i, x->job, y->job);
    }
    for (size_t i = 0; i < a->n_inst + a->n_hin; i++) {
        const cp_inst_t *x = i < a->n_inst ? &a->inst[i] : &a->hin[i - a->n_inst];
        const cp_inst_t *y = i < b->n_inst ? &b->inst[i] : &b->hin[i - b->n_inst];
        SAME(x->maxstart == y->maxstart && x->transfer == y->transfer && x->last == y->last && x->n == y->n &&
                 x->absent == y->absent && x->m0 == y->m0,
             "built graph (P %u, process %u): instance %zu differs", P, me, i);
    }
    SAME(!memcmp(a->imem, b->imem, a->n_imem * sizeof *a->imem) &&
             !memcmp(a->hmem, b->hmem, a->n_hmem * sizeof *a->hmem),
         "built graph (P %u, process %u): instance members differ", P, me);
    /* a topological order (topo) is the process's own, not the job's cut
     * (cp_part_build): the same events, each node's record the same */
    for (size_t k = 0; !topo && k < a->n_ev; k++)
        SAME(a->ev[k] == b->ev[k], "built graph (P %u, process %u): replay order differs at event %zu", P, me, k);
    if (topo) {
        size_t na[3] = {0, 0, 0}, nb[3] = {0, 0, 0};
        for (size_t k = 0; k < a->n_ev; k++) {
            na[(a->ev[k] >> 32) % 3]++;
            nb[(b->ev[k] >> 32) % 3]++;
        }
        SAME(na[0] == nb[0] && na[1] == nb[1] && na[2] == nb[2],
             "built graph (P %u, process %u): the orders' events differ", P, me);
    }
    for (size_t n = 0; n < a->n_nodes; n++) {
        size_t i = topo ? (size_t)a->pos[n] : n, j = topo ? (size_t)b->pos[n] : n;
        const cp_hot_t *x = &a->hot[i], *y = &b->hot[j];
        SAME(x->s == y->s && x->dt == y->dt && x->llat == y->llat && x->pred[0] == y->pred[0] &&
                 x->pred[1] == y->pred[1] && x->pred[2] == y->pred[2] && x->job == y->job && x->lsync == y->lsync &&
                 x->inst == y->inst && x->id == y->id && x->rstep == y->rstep && x->rank_i == y->rank_i &&
                 x->flags == y->flags && x->sflags == y->sflags && (topo || a->pos[n] == b->pos[n]) &&
                 a->e0[n] == b->e0[n],
             "built graph (P %u, process %u): hot record %zu differs", P, me, i);
    }
    for (size_t i = 0; i < a->n_inst + a->n_hin; i++) {
        const cp_part_inst_t *p = &ua[i], *q = &ub[i];
        SAME(p->u == q->u && p->need == q->need && (topo || p->first == q->first) && p->job == q->job &&
                 (topo || p->at_rank == q->at_rank),
             "built graph (P %u, process %u): instance %zu (job-wide %u) read point differs (first %u/%u job %d/%d "
             "at_rank %d/%d)",
             P, me, i, q->u, p->first, q->first, p->job, q->job, p->at_rank, q->at_rank);
    }
    return true;
}
#undef SAME

/* One layout: the ranks on P processes (blocked: in P runs of ranks, else
 * dealt in turn), lanes sc[lanes[..]] of the sweep r, each process
 * replaying the graph of its own ranks (cp_part_cut). */
static void one_layout(const cp_graph_t *g, const cp_scen_t *sc, const cp_rp_t *r, const int *lanes, int nl, uint32_t P,
                       bool blocked)
{
    size_t NR = g->n_ranks;
    bool carry = sc[lanes[0]].carry;
    uint32_t *proc_of = xcalloc(NR, sizeof *proc_of);
    for (size_t i = 0; i < NR; i++)
        proc_of[i] = blocked ? (uint32_t)(i * P / NR) : (uint32_t)(i % P);
    share_t sh[MAXP];
    cp_part_plan_t plan[MAXP];
    cp_part_t part[MAXP];
    cp_part_own_t own[MAXP];
    cp_rp_t rp[MAXP][CP_PART_LANES];
    memset(rp, 0, sizeof rp);
    memset(sh, 0, sizeof sh);
    size_t whole = cp_part_graph_bytes(g), most = 0;
    cp_part_stats.rp_whole = rp_bytes(g);
    for (uint32_t q = 0; q < P; q++) {
        share_t *S = &sh[q];
        if (cp_part_cut(g, proc_of, P, q, &S->g, &S->ui, &S->rank_of) != MT_OK)
            abort();
        /* the same graph built from its ranks' analyses and the job-wide
         * inputs: equal to the cut one field for field, and replayed in
         * its place */
        inputs_t X;
        inputs_of(g, proc_of, P, q, &X);
        cp_graph_t bg;
        cp_part_inst_t *bui;
        mt_status_t bs = cp_part_build(X.an, X.n_an, X.clk, X.ranks, X.n_clk, &X.in, &bg, &bui);
        if (bs == MT_ERR_NOMEM)
            abort();
        if (bs != MT_OK) {
            fail("P %u, process %u: cp_part_build: status %d", P, q, (int)bs);
        } else {
            cp_part_stats.in_job[P - 2][blocked][q] =
                X.in.n_steps * (sizeof *X.in.steps + sizeof *X.in.step_gap) + X.in.n_xi * sizeof *X.in.xi;
            cp_part_stats.in_own[P - 2][blocked][q] = X.in.n_mem * sizeof *X.in.mem +
                                                      X.in.n_xs * sizeof *X.in.xs +
                                                      X.in.n_absent * sizeof *X.in.absent;
            cp_part_stats.in_steps = X.in.n_steps;
            if (same_graph(&bg, bui, &S->g, S->ui, P, q, X.in.topo)) {
                cp_part_cut_free(&S->g);
                free(S->ui);
                S->g = bg;
                S->ui = bui;
                S->built = true;
                cp_part_stats.graphs_built++;
            } else {
                cp_graph_free(&bg);
                free(bui);
            }
        }
        inputs_free(&X);
        if (cp_part_plan(&S->g, S->ui, P, q, carry, &plan[q]) != MT_OK)
            abort();
        const cp_graph_t *lg = &S->g;
        size_t b = cp_part_graph_bytes(lg) + (lg->n_inst + lg->n_hin) * sizeof *S->ui;
        if (b > most)
            most = b;
        cp_part_stats.bytes[P - 2][blocked][q] = b;
        cp_part_stats.rp_bytes[P - 2][blocked][q] = rp_bytes(lg);
        cp_scen_t scl[CP_PART_LANES];
        cp_rp_t *rl[CP_PART_LANES];
        for (int li = 0; li < nl; li++) {
            const cp_rp_t *R = &r[lanes[li]];
            const cp_scen_t *W = &sc[lanes[li]];
            scl[li] = *W;
            /* a scenario's per-node factors and per-rank marks, at the
             * process's nodes and ranks */
            if (W->factor) {
                S->factor[li] = xcalloc(lg->n_nodes, sizeof *S->factor[li]);
                for (size_t i = 0; i < lg->n_ranks; i++)
                    for (size_t k = 0; k < lg->ranks[i].n_nodes; k++)
                        S->factor[li][lg->ranks[i].node0 + k] = W->factor[g->ranks[S->rank_of[i]].node0 + k];
                scl[li].factor = S->factor[li];
            }
            if (W->late) {
                S->late[li] = xcalloc(lg->n_ranks, 1);
                for (size_t i = 0; i < lg->n_ranks; i++)
                    S->late[li][i] = W->late[S->rank_of[i]];
                scl[li].late = S->late[li];
            }
            if (cp_rp_alloc(lg, &rp[q][li]))
                abort();
            cp_rp_init(lg, &scl[li], &rp[q][li]);
            /* a second pass: its edge's shifts come from the first (a reduction
             * per job step, not part of this exchange) */
            if (R->cd_on)
                for (size_t i = 0; i < lg->n_ranks; i++)
                    for (size_t k = 0; k < lg->ranks[i].n_syncs; k++)
                        rp[q][li].cd[lg->ranks[i].sync0 + k] = R->cd[g->ranks[S->rank_of[i]].sync0 + k];
            rp[q][li].cd_on = R->cd_on;
            rl[li] = &rp[q][li];
        }
        if (cp_part_start(&part[q], lg, &plan[q], scl, rl, nl) != MT_OK ||
            cp_part_own_init(&own[q], g->n_inst + g->n_hin, q, P, nl) != MT_OK)
            abort();
        const cp_part_plan_t *pl = &plan[q];
        size_t nu = lg->n_inst + lg->n_hin;
        cp_part_stats.eng_bytes[P - 2][blocked][q] =
            pl->n_ev * sizeof *pl->ev + pl->n_rd * sizeof *pl->rd + pl->n_seg * sizeof *pl->seg +
            nu * (1 + sizeof *pl->lneed) + pl->n_seg * (2 * sizeof(size_t) + sizeof(int64_t) + 1) +
            nu * (sizeof(int64_t) + sizeof(uint32_t));
    }
    /* a process's graph against the whole job's: the largest share's */
    if (whole) {
        double f = (double)most / (double)whole;
        uint32_t k = P - 2;
        if (f > cp_part_stats.share_max[k]) {
            cp_part_stats.share_max[k] = f;
            cp_part_stats.bytes_whole = whole;
            cp_part_stats.bytes_most[k] = most;
        }
    }
    cp_part_msg_t *in[MAXP] = {0}, *ans[MAXP] = {0}, *got = NULL;
    size_t n_in[MAXP], cap_in[MAXP] = {0}, n_ans[MAXP], cap_ans[MAXP] = {0}, n_got = 0, cap_got = 0;
    uint64_t rounds = 0, msgs = 0;
    for (;;) {
        bool all = true;
        size_t sent = 0;
        for (uint32_t q = 0; q < P; q++) {
            bool done;
            if (cp_part_advance(&part[q], &done) != MT_OK)
                abort();
            all = all && done;
            n_in[q] = n_ans[q] = 0;
        }
        for (uint32_t q = 0; q < P; q++) {
            for (size_t k = 0; k < part[q].n_out; k++) {
                uint32_t o = cp_part_owner(part[q].out[k].u, P);
                box_add(&in[o], &n_in[o], &cap_in[o], &part[q].out[k], 1);
            }
            sent += part[q].n_out;
        }
        if (!sent) {
            if (!all)
                fail("supersteps stopped: no message and not done (P %u%s)", P, blocked ? " blocked" : "");
            break;
        }
        rounds++;
        msgs += sent;
        for (uint32_t o = 0; o < P; o++) {
            n_got = 0;
            if (cp_part_own_take(&own[o], in[o], n_in[o], &got, &n_got, &cap_got) != MT_OK)
                abort();
            for (size_t k = 0; k < n_got; k++)
                box_add(&ans[got[k].proc], &n_ans[got[k].proc], &cap_ans[got[k].proc], &got[k], 1);
            msgs += n_got;
        }
        for (uint32_t q = 0; q < P; q++)
            cp_part_take(&part[q], ans[q], n_ans[q]);
        if (rounds > g->n_ev + 1) {
            fail("supersteps do not end");
            break;
        }
    }
    /* the processes' graphs together hold the whole graph's nodes, syncs,
     * rank steps, events and instance members, each once */
    size_t sn = 0, ss = 0, sr = 0, se = 0, sm = 0, wm = g->n_imem + g->n_hmem;
    for (uint32_t q = 0; q < P; q++) {
        sn += sh[q].g.n_nodes;
        ss += sh[q].g.n_syncs;
        sr += sh[q].g.n_rs;
        se += sh[q].g.n_ev;
        sm += sh[q].g.n_imem + sh[q].g.n_hmem;
    }
    if (sn != g->n_nodes || ss != g->n_syncs || sr != g->n_rs || se != g->n_ev || sm != wm)
        fail("P %u: the processes' graphs hold %zu nodes, %zu syncs, %zu rank steps, %zu events, %zu members; the "
             "whole %zu, %zu, %zu, %zu, %zu",
             P, sn, ss, sr, se, sm, g->n_nodes, g->n_syncs, g->n_rs, g->n_ev, wm);
    /* every value against the one-process sweep's, to the bit: each
     * process's, mapped back to the whole graph's nodes, syncs, rank
     * steps and instances */
    int32_t *li_of = xcalloc(NR, sizeof *li_of);
    for (uint32_t q = 0; q < P; q++)
        for (size_t i = 0; i < sh[q].g.n_ranks; i++)
            li_of[sh[q].rank_of[i]] = (int32_t)i;
    for (int li = 0; li < nl; li++) {
        const cp_rp_t *R = &r[lanes[li]];
        for (size_t i = 0; i < g->n_nodes; i++) {
            int32_t ri = g->nodes[i].rank_i;
            const share_t *S = &sh[proc_of[ri]];
            const cp_rp_t *A = &rp[proc_of[ri]][li];
            size_t k = lnode(g, S, li_of[ri], i);
            cp_part_stats.values += 2;
            if (A->sdone[k] != R->sdone[i] || (R->sdone[i] && A->s[k] != R->s[i]) || A->e[k] != R->e[i])
                fail("lane %d (P %u%s, carry %d): node %zu of rank_i %d: start %lld end %lld, the sweep's %lld %lld",
                     lanes[li], P, blocked ? " blocked" : "", (int)carry, i, ri, (long long)A->s[k],
                     (long long)A->e[k], (long long)R->s[i], (long long)R->e[i]);
        }
        for (size_t j = 0; j < g->n_syncs; j++) {
            int32_t ri = g->syncs[j].rank_i;
            const share_t *S = &sh[proc_of[ri]];
            const cp_rp_t *A = &rp[proc_of[ri]][li];
            size_t k = j - g->ranks[ri].sync0 + S->g.ranks[li_of[ri]].sync0;
            cp_part_stats.values++;
            if (A->sd[k] != R->sd[j])
                fail("lane %d (P %u): sync %zu: shift %lld, the sweep's %lld", lanes[li], P, j, (long long)A->sd[k],
                     (long long)R->sd[j]);
        }
        for (size_t i = 0; i < g->n_rs; i++) {
            int32_t ri = g->rs[i].rank_i;
            const share_t *S = &sh[proc_of[ri]];
            const cp_rp_t *A = &rp[proc_of[ri]][li];
            size_t k = i - g->ranks[ri].rs0 + S->g.ranks[li_of[ri]].rs0;
            cp_part_stats.values += 2;
            if (A->rend[k] != R->rend[i] || A->hc[k] != R->hc[i])
                fail("lane %d (P %u): rank step %zu: end %lld, the sweep's %lld", lanes[li], P, i,
                     (long long)A->rend[k], (long long)R->rend[i]);
        }
        /* each process's instances (every member's process has its
         * instance): the last arrival the sweep read */
        for (uint32_t q = 0; q < P; q++) {
            const share_t *S = &sh[q];
            const cp_rp_t *A = &rp[q][li];
            for (size_t x = 0; x < S->g.n_inst + S->g.n_hin; x++) {
                size_t u = S->ui[x].u;
                bool node = u < g->n_inst;
                size_t i = node ? u : u - g->n_inst, l = node ? x : x - S->g.n_inst;
                if (node != (x < S->g.n_inst))
                    fail("P %u: instance %zu of process %u is %zu of the job's", P, x, q, u);
                if (!(node ? R->idone[i] : R->hidone[i]))
                    continue;
                bool ok = node ? A->idone[l] && A->ims[l] == R->ims[i] : A->hidone[l] && A->hims[l] == R->hims[i];
                cp_part_stats.values++;
                if (!ok)
                    fail("lane %d (P %u): %s %zu: last arrival %lld, the sweep's %lld", lanes[li], P,
                         node ? "instance" : "host collective", i, (long long)(node ? A->ims[l] : A->hims[l]),
                         (long long)(node ? R->ims[i] : R->hims[i]));
            }
        }
    }
    free(li_of);
    cp_part_stats.sweeps += (uint64_t)nl;
    for (int li = 0; li < nl; li++)
        cp_part_stats.second += r[lanes[li]].cd_on != 0;
    int k = carry ? 1 : 0;
    /* one round a link of the longest chain: no round lost waiting */
    bool comm = true; /* lanes side by side: the longest of theirs */
    for (int li = 0; li < nl; li++)
        comm = comm && sc[lanes[li]].comm_transfer;
    uint64_t least = chain(g, proc_of, carry, comm);
    if (rounds != least)
        fail("P %u%s, carry %d: %llu rounds, the longest chain of shared instances %llu", P, blocked ? " blocked" : "",
             (int)carry, (unsigned long long)rounds, (unsigned long long)least);
    if (rounds >= cp_part_stats.rounds_max[k]) {
        cp_part_stats.rounds_max[k] = rounds;
        estimates(g, proc_of, &cp_part_stats.est_step[k], &cp_part_stats.est_run[k]);
        cp_part_stats.chain[k] = least;
        cp_part_stats.msgs_max[k] = msgs;
    }
    for (uint32_t q = 0; q < P; q++) {
        for (int li = 0; li < nl; li++) {
            cp_rp_free(&rp[q][li]);
            free(sh[q].factor[li]);
            free(sh[q].late[li]);
        }
        cp_part_free(&part[q]);
        cp_part_own_free(&own[q]);
        cp_part_plan_free(&plan[q]);
        if (sh[q].built)
            cp_graph_free(&sh[q].g);
        else
            cp_part_cut_free(&sh[q].g);
        free(sh[q].ui);
        free(sh[q].rank_of);
        free(in[q]);
        free(ans[q]);
    }
    free(got);
    free(proc_of);
}

static void probe(const cp_graph_t *g, const cp_scen_t *sc, const cp_rp_t *r, const bool *on, int n)
{
    int lanes[CP_PART_LANES], nl = 0;
    for (int l = 0; l < n; l++)
        if (on[l])
            lanes[nl++] = l;
    if (!nl || g->order_cycle || g->topo_cycle) /* a replay order with a cycle reads measured ends: not checked */
        return;
    for (uint32_t P = 2; P <= MAXP; P++) {
        one_layout(g, sc, r, lanes, nl, P, false);
        one_layout(g, sc, r, lanes, nl, P, true);
    }
}

void cp_part_check_install(void)
{
    cp_replay_probe = probe;
    cp_built_probe = keep;
}

void cp_part_check_remove(void)
{
    cp_replay_probe = NULL;
    cp_built_probe = NULL;
    kept_free();
}

void cp_part_check_print(FILE *f, const char *tag)
{
    const cp_part_stats_t *s = &cp_part_stats;
    fprintf(f,
            "cp_part_check %s: %llu lane replays in supersteps (%llu second passes), %llu values, %llu failures; "
            "rounds: steps apart "
            "at most %llu (estimate: the most shared instances a rank meets in a step %llu, in the run %llu; %llu "
            "messages; the longest chain of shared instances %llu), carried at most %llu (estimates %llu, %llu; %llu "
            "messages; chain %llu)\n",
            tag, (unsigned long long)s->sweeps, (unsigned long long)s->second, (unsigned long long)s->values, (unsigned long long)s->failures,
            (unsigned long long)s->rounds_max[0], (unsigned long long)s->est_step[0],
            (unsigned long long)s->est_run[0], (unsigned long long)s->msgs_max[0], (unsigned long long)s->chain[0],
            (unsigned long long)s->rounds_max[1], (unsigned long long)s->est_step[1],
            (unsigned long long)s->est_run[1], (unsigned long long)s->msgs_max[1], (unsigned long long)s->chain[1]);
    fprintf(f,
            "cp_part_check %s: a process's graph at most %.3f of the whole job's %llu bytes at 2 processes "
            "(%llu), %.3f at 3 (%llu)\n",
            tag, s->share_max[0], (unsigned long long)s->bytes_whole, (unsigned long long)s->bytes_most[0],
            s->share_max[1], (unsigned long long)s->bytes_most[1]);
    for (int p = 0; p < 2; p++)
        for (int b = 0; b < 2; b++) {
            fprintf(f, "cp_part_check %s: %d processes, ranks %s: graph bytes", tag, p + 2, b ? "in blocks" : "in turn");
            for (int q = 0; q < p + 2; q++)
                fprintf(f, " %llu (%.3f)", (unsigned long long)s->bytes[p][b][q],
                        s->bytes_whole ? (double)s->bytes[p][b][q] / (double)s->bytes_whole : 0.0);
            fprintf(f, ", replay arrays a lane");
            for (int q = 0; q < p + 2; q++)
                fprintf(f, " %llu", (unsigned long long)s->rp_bytes[p][b][q]);
            fprintf(f, " (whole: %llu), plan and supersteps' state (a lane)", (unsigned long long)s->rp_whole);
            for (int q = 0; q < p + 2; q++)
                fprintf(f, " %llu", (unsigned long long)s->eng_bytes[p][b][q]);
            fprintf(f, "\n");
        }
    fprintf(f,
            "cp_part_check %s: %llu process graphs built from their ranks' analyses (cp_part_build), equal to the "
            "cut ones (%llu values compared) and replayed in their place\n",
            tag, (unsigned long long)s->graphs_built, (unsigned long long)s->build_values);
    for (int p = 0; p < 2; p++)
        for (int b = 0; b < 2; b++) {
            fprintf(f, "cp_part_check %s: %d processes, ranks %s: inputs, job-wide (%llu job steps x 16 B + the "
                       "instances touched x 64 B) / own lists (members x 8 B, host members x 32 B, absent x 8 B)",
                    tag, p + 2, b ? "in blocks" : "in turn", (unsigned long long)s->in_steps);
            for (int q = 0; q < p + 2; q++)
                fprintf(f, " %llu / %llu", (unsigned long long)s->in_job[p][b][q],
                        (unsigned long long)s->in_own[p][b][q]);
            fprintf(f, "\n");
        }
    if (s->failures)
        fprintf(f, "cp_part_check %s: first failure: %s\n", tag, s->first);
}
