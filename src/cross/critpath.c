/* Steps on aligned clocks, the cross-rank dependency graph with its
 * critical path, replay, what-if projections and root causes of waiting
 * (definitions: include/mergetrace/critpath.h). Process 0, after the clock
 * fit, over every rank's steps and graph summary. */
#include "mergetrace/critpath.h"
#include "align/clockmap.h"
#include "base/bigmem.h"
#include "base/interval.h"
#include "base/sort.h"
#include "base/stats.h"
#include "base/text.h"
#include "cross/critpath_int.h"

#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

const char *mt_cp_kind_str(mt_cp_kind_t k)
{
    static const char *const s[] = {"compute", "comm", "memory", "host", "idle"};
    return (unsigned)k < MT_CP_KIND_COUNT_ ? s[k] : "unknown";
}

const char *mt_rc_kind_str(mt_rc_kind_t k)
{
    static const char *const s[] = {"compute", "memory", "comm_wait", "comm_transfer", "host", "idle"};
    return (unsigned)k < MT_RC_KIND_COUNT_ ? s[k] : "unknown";
}

const char *mt_wi_str(mt_wi_t w)
{
    static const char *const s[] = {"straggler_at_median", "comm_at_transfer", "no_launch_gaps", "pattern"};
    return (unsigned)w < MT_WI_COUNT_ ? s[w] : "unknown";
}

/* Process 0's growth over its resident set after its own load, by phase
 * (mt_critpath_memory): the gather of the analyses holds the packed and
 * the unpacked GPU activities at once (56 bytes each, twice); the match
 * and fit hold the activities beside the gathered rows, the match and the
 * fit's arrays (about 200 bytes per row: bench_cross at 16384 ranks x
 * 3,000 collectives peaked at 195 with the cross-rank tables); the
 * critical path frees the rows and the activities as it goes but holds
 * its graph, replays and lanes, about 220 bytes per activity and 40 per
 * row. Each rank's analysis, clock and tables: 16 KiB. Measured under
 * mpirun -n 2 on 2026-11-25 (process 0's peak less its resident set at
 * the plan, --timings "memory plan"; docs/PERFORMANCE.md "Process 0's
 * memory budget"): 11-13 % above the growth on the two jobs of 8 x 157
 * MB traces, 35 % on 256 ranks of 2 MB, up to 1.8x on jobs of many small
 * ones (the process's own share, freed as it is sent, is in the resident
 * set at the plan). Above rather than below: a
 * projection too low is a process killed for memory. */
#define CPM_RANK 16384
#define CPM_GATHER_ACT 112
#define CPM_ROW 200
#define CPM_HELD_ACT 56
#define CPM_CP_ACT 220
#define CPM_CP_ROW 40

void mt_critpath_memory(uint64_t n_ranks, uint64_t n_rows, uint64_t n_acts, uint64_t *without, uint64_t *with)
{
    uint64_t ranks = n_ranks * CPM_RANK;
    uint64_t gather = n_acts * CPM_GATHER_ACT, match = n_rows * CPM_ROW + n_acts * CPM_HELD_ACT,
             cp = n_acts * CPM_CP_ACT + n_rows * CPM_CP_ROW;
    *without = ranks + n_rows * CPM_ROW;
    uint64_t most = gather > match ? gather : match; /* the phases do not overlap: the largest */
    *with = ranks + (most > cp ? most : cp);
}

void mt_critpath_memory_note(char *b, size_t cap, uint64_t need, uint64_t budget, uint64_t n_acts, uint64_t n_rows)
{
    char n[32], q[32]; /* in the powers of 1024 of --memory-budget's SIZE */
    mt_fmt_bytes(n, sizeof n, need > INT64_MAX ? INT64_MAX : (int64_t)need);
    mt_fmt_bytes(q, sizeof q, budget > INT64_MAX ? INT64_MAX : (int64_t)budget);
    snprintf(b, cap,
             "steps, critical path and what-ifs left out: with them process 0 would need about %s more than after "
             "its load (%llu GPU activities, %llu collective rows), over its memory budget of %s (--memory-budget)",
             n, (unsigned long long)n_acts, (unsigned long long)n_rows, q);
}

void mt_critpath_free(mt_critpath_t *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n_top; i++)
        free(c->top[i].name);
    for (size_t i = 0; i < c->n_causes; i++)
        free(c->causes[i].name);
    free(c->top);
    free(c->causes);
    for (size_t i = 0; i < c->n_by_annot; i++)
        free(c->by_annot[i].name);
    free(c->by_annot);
    free(c->ideal.by_type);
    free(c->ideal.by_worker);
    free(c->ideal.by_stage);
    free(c->ideal.heat);
    free(c->steps);
    free(c->rank_steps);
    free(c->ranks);
    free(c->stage_wi);
    for (size_t i = 0; i < c->n_strips; i++) {
        mt_cp_strip_t *t = &c->strips[i];
        for (size_t k = 0; k < t->n_segs; k++)
            free(t->segs[k].name);
        for (size_t k = 0; k < t->n_path; k++)
            free(t->path[k].name);
        free(t->segs);
        free(t->path);
        free(t->ranks);
        free(t->row_first);
    }
    free(c);
}

/* ---- building the graph ---- */

static int an_rank_cmp(const void *pa, const void *pb)
{
    const mt_rank_analysis_t *a = *(const mt_rank_analysis_t *const *)pa, *b = *(const mt_rank_analysis_t *const *)pb;
    return (a->rank > b->rank) - (a->rank < b->rank);
}

/* What the instances read of a row: rank, raw start and end. */
typedef struct cp_mrow {
    int64_t start_ns, end_ns;
    int32_t rank;
    bool cpu;             /* a gloo:* CPU range (MT_CI_CPU): a host collective */
} cp_mrow_t;

/* The index of rank r in an[0..n) (ascending by rank), or -1. */
static long an_find(const mt_rank_analysis_t *const *an, size_t n, int32_t r)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (an[mid]->rank < r)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && an[lo]->rank == r ? (long)lo : -1;
}

/* Does instance ii (members mr[mf[ii] .. mf[ii + 1])) link as a host
 * collective: two or more gloo:* rows of ranks in the graph? */
static bool host_inst(const mt_rank_analysis_t *const *an, size_t n_an, const size_t *mf, const cp_mrow_t *mr,
                      size_t ii)
{
    size_t k = 0;
    for (size_t q = mf[ii]; q < mf[ii + 1]; q++)
        k += mr[q].cpu && an_find(an, n_an, mr[q].rank) >= 0;
    return k >= 2;
}

static int sync_end_cmp(const void *pa, const void *pb)
{
    const cp_sync_t *a = pa, *b = pb;
    return a->e < b->e ? -1 : a->e > b->e ? 1 : a->s < b->s ? -1 : a->s > b->s;
}

/* The first position j in be[0..n) (node ids by end) whose node ends
 * after t, searched from hint (any position) by galloping: a rank's nodes
 * come by start and its syncs by end, so t rises and the answer moves
 * forward, by a few places or, where few nodes ask, by many: O(log of the
 * distance) either way (a binary search per call was 10 % of the graph
 * build on an 8-rank job; a hint with a short scan still 140 instructions
 * a call on a 256-rank one). */
static size_t ends_after(const cp_graph_t *g, const int32_t *be, size_t n, int64_t t, size_t hint)
{
#define END_AT(j) (g->nodes[be[(j)]].e)
    size_t lo, hi;
    if (hint > n)
        hint = n;
    if (hint > 0 && END_AT(hint - 1) > t) { /* backward: the answer is at most hint - 1 */
        size_t b = hint - 1, step = 1;
        while (b >= step && END_AT(b - step) > t) {
            b -= step;
            step *= 2;
        }
        lo = b >= step ? b - step + 1 : 0;
        hi = b;
    } else { /* forward: at least hint */
        if (hint == n || END_AT(hint) > t)
            return hint;
        size_t a = hint, step = 1;
        while (a + step < n && END_AT(a + step) <= t) {
            a += step;
            step *= 2;
        }
        lo = a + 1;
        hi = a + step < n ? a + step : n;
    }
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (END_AT(mid) <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
#undef END_AT
}

int cp_rank_order(const cp_graph_t *g, const cp_rank_t *R, int by, int32_t *ord, uint64_t *key, uint32_t *val)
{
    int32_t *o = ord + R->node0;
    size_t n = R->n_nodes;
    for (size_t j = 0; j < n; j++) {
        const cp_node_t *x = &g->nodes[R->node0 + j];
        key[j] = mt_sort_key_i64(by == CP_BY_END ? x->e : by == CP_BY_END_KEY ? cp_end_key(g, x) : x->s);
        val[j] = (uint32_t)(R->node0 + j);
    }
    if (mt_sort_u64(key, val, n) != MT_OK)
        return -1;
    for (size_t j = 0; j < n; j++)
        o[j] = (int32_t)val[j];
    return 0;
}

/* R's by_end (node ids by end, equal ends by id) merged from its streams:
 * the activities of a stream run one after the other, so in node order
 * (by start) each stream comes by end too, and a merge of the rank's few
 * streams (mt_kmerge, one or two levels) costs less than a radix sort of
 * its ends (96 instructions a node on 8 x 157 MB, a fifth of the graph
 * build). A rank already by end in node order (the 256-rank job's) is
 * taken as it is. val: scratch of R->n_nodes. 0 done, 1 when some stream's ends
 * go back (the caller sorts), -1 out of memory. */
static int by_end_merge(cp_graph_t *g, const cp_rank_t *R, const mt_an_gact_t *ga, uint32_t *val)
{
    size_t n = R->n_nodes, ns = 0, k0 = 1;
    const cp_node_t *nd = g->nodes + R->node0;
    /* already by end in node order (one stream, or streams that take
     * turns): by_end is the node order */
    while (k0 < n && nd[k0 - 1].e <= nd[k0].e)
        k0++;
    if (k0 >= n) {
        for (size_t k = 0; k < n; k++)
            g->by_end[R->node0 + k] = (int32_t)(R->node0 + k);
        return 0;
    }
    for (size_t k = 0; k < n; k++)
        if (ga[k].stream + (size_t)1 > ns)
            ns = ga[k].stream + (size_t)1;
    size_t *at = calloc(2 * ns + 1, sizeof *at);
    mt_kmerge_t m = {0};
    int ret = -1;
    if (!at)
        return -1;
    size_t *end = at + ns;
    /* the nodes grouped by stream, each group in node order */
    for (size_t k = 0; k < n; k++)
        end[ga[k].stream + 1]++;
    for (size_t q = 0; q < ns; q++)
        end[q + 1] += end[q];
    for (size_t q = 0; q < ns; q++)
        at[q] = end[q];
    for (size_t k = 0; k < n; k++)
        val[at[ga[k].stream]++] = (uint32_t)(R->node0 + k);
    for (size_t q = 0; q < ns; q++)
        at[q] = end[q]; /* each stream's first */
    for (size_t j = 1; j < n; j++)
        if (ga[val[j] - R->node0].stream == ga[val[j - 1] - R->node0].stream &&
            g->nodes[val[j]].e < g->nodes[val[j - 1]].e) {
            ret = 1;
            goto out;
        }
    for (size_t q = 0; q < ns; q++)
        end[q] = end[q + 1];
    if (mt_kmerge_init(&m, ns) != MT_OK)
        goto out;
    for (size_t q = 0; q < ns; q++)
        if (at[q] < end[q]) {
            m.key[q] = mt_sort_key_i64(g->nodes[val[at[q]]].e);
            m.tie[q] = val[at[q]];
        }
    mt_kmerge_start(&m);
    for (size_t j = 0; j < n; j++) {
        uint32_t q = mt_kmerge_top(&m);
        g->by_end[R->node0 + j] = (int32_t)val[at[q]];
        uint64_t nk = MT_KMERGE_END, nt = MT_KMERGE_END;
        if (++at[q] < end[q]) {
            nk = mt_sort_key_i64(g->nodes[val[at[q]]].e);
            nt = val[at[q]];
        }
        mt_kmerge_next(&m, nk, nt);
    }
    ret = 0;
out:
    mt_kmerge_free(&m);
    free(at);
    return ret;
}

void cp_graph_free(cp_graph_t *g)
{
    if (!g)
        return;
    free(g->nodes);
    free(g->syncs);
    free(g->inst);
    free(g->imem);
    free(g->hin);
    free(g->hmem);
    free(g->by_end);
    free(g->ev);
    free(g->hot);
    free(g->pos);
    free(g->e0);
    free(g->cd0);
    free(g->annot);
    free(g->rs);
    free(g->js);
    free(g->ranks);
    memset(g, 0, sizeof *g);
}

/* Where a pause may go: rank rank_i's host stretch [a, b) before a
 * collective member that arrived late by `late` ns; sync: that member's
 * sync when it is a host collective's (it takes what the pause holds),
 * else -1. */
typedef struct pause_req {
    int64_t a, b, late;
    int32_t rank_i, rstep, sync;
} pause_req_t;

static int pause_req_cmp(const void *pa, const void *pb)
{
    const pause_req_t *x = pa, *y = pb;
    return x->rank_i != y->rank_i ? (x->rank_i < y->rank_i ? -1 : 1) : x->b < y->b ? -1 : x->b > y->b;
}

/* The host pauses (cp_sync_t.hi -2): a collective member's lateness
 * placed where its rank's host did nothing, the longest stretch of its
 * request's [a, b) with no launch and no sync: there a sleep, a data
 * loader or a pause held the rank (gloo4: rank 2's 15 ms sleep before
 * each all_reduce; the launches that follow it move with it in the
 * straggler what-if). A pause is a sync of its measured duration that the
 * straggler what-if and the ideal shorten by its late; a host collective
 * member keeps what the stretch could not hold. g->syncs is laid out anew
 * (each rank's by end), g->hmem and g->hin[].last follow. rq is sorted
 * here. 0, or -1 out of memory. */
enum { CP_PAUSE_WIN = 256 }; /* syncs of a window looked at, at most */

static int place_pauses(cp_graph_t *g, pause_req_t *rq, size_t np)
{
    size_t ns = g->n_syncs;
    if (!np)
        return 0;
    qsort(rq, np, sizeof *rq, pause_req_cmp);
    cp_sync_t *pz = malloc(np * sizeof *pz);
    int64_t *lv = NULL;
    cp_sync_t *out = malloc((ns + np) * sizeof *out);
    int32_t *remap = malloc((ns ? ns : 1) * sizeof *remap);
    uint64_t *key = malloc((ns + np) * sizeof *key);
    uint32_t *val = malloc((ns + np) * sizeof *val);
    uint32_t win[CP_PAUSE_WIN];
    int ret = -1;
    if (!pz || !out || !remap || !key || !val)
        goto done;
    size_t w = 0, p = 0, u0 = 0;
    for (size_t i = 0; i < g->n_ranks; i++) {
        cp_rank_t *R = &g->ranks[i];
        size_t p0 = p, nl = 0;
        for (; u0 < np && rq[u0].rank_i < (int32_t)i; u0++)
            ;
        for (; u0 < np && rq[u0].rank_i == (int32_t)i; u0++) {
            const pause_req_t *y = &rq[u0];
            if (!lv) {
                size_t nmax = 1;
                for (size_t q = 0; q < g->n_ranks; q++)
                    nmax = g->ranks[q].n_nodes > nmax ? g->ranks[q].n_nodes : nmax;
                if (!(lv = malloc(nmax * sizeof *lv)))
                    goto done;
            }
            if (!nl) { /* the rank's launch ends, sorted (nearly sorted already: a check first) */
                bool sorted = true;
                for (size_t q = 0; q < R->n_nodes; q++)
                    if (g->nodes[R->node0 + q].L != INT64_MIN) {
                        lv[nl] = g->nodes[R->node0 + q].L;
                        sorted = sorted && (!nl || lv[nl - 1] <= lv[nl]);
                        nl++;
                    }
                if (!sorted)
                    qsort(lv, nl, sizeof *lv, mt_cmp_i64);
                if (!nl)
                    lv[nl++] = INT64_MIN; /* no launch: one point before any window */
            }
            int64_t a0 = y->a, b0 = y->b;
            /* the rank's syncs that overlap the window: those ending in
             * it (one run, by end) and a few ending after it */
            size_t wl = cp_syncs_ended(g, R, a0), nw = 0, after = 0;
            for (size_t m = wl; m < R->n_syncs && nw < CP_PAUSE_WIN; m++) {
                const cp_sync_t *x = &g->syncs[R->sync0 + m];
                if (x->e > b0 && ++after > 8)
                    break;
                if ((int64_t)(R->sync0 + m) != y->sync && x->s < b0)
                    win[nw++] = (uint32_t)m;
            }
            /* the first launch at or after a0 */
            size_t lo = 0, hi = nl;
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (lv[mid] < a0)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            int64_t best_a = 0, best_b = 0, prev = a0;
            for (size_t q = lo;; q++) {
                int64_t t = q < nl && lv[q] < b0 ? lv[q] : b0;
                /* [prev, t) holds no launch: cut it by the syncs */
                int64_t ga = prev;
                while (ga < t) {
                    int64_t gb = t;
                    for (size_t v = 0; v < nw; v++) {
                        const cp_sync_t *x = &g->syncs[R->sync0 + win[v]];
                        if (x->e <= ga || x->s >= gb)
                            continue;
                        if (x->s <= ga) { /* covers the start: past it */
                            ga = x->e;
                            gb = ga;
                            break;
                        }
                        gb = x->s;
                    }
                    if (gb - ga > best_b - best_a) {
                        best_a = ga;
                        best_b = gb;
                    }
                    if (gb == ga)
                        continue;
                    ga = gb;
                    for (size_t v = 0; v < nw; v++) {
                        const cp_sync_t *x = &g->syncs[R->sync0 + win[v]];
                        if (x->s <= ga && x->e > ga)
                            ga = x->e;
                    }
                }
                if (t >= b0)
                    break;
                prev = t;
            }
            if (best_b - best_a < CP_PAUSE_MIN)
                continue;
            /* a stretch two windows share holds one pause, of the larger
             * lateness: a rank late at its step's start is also late at
             * its first collective, but against a pair's median (a
             * send/recv: the midpoint) only by half (issue 38: a late
             * host of a pipeline's stage 1 kept half its 1.5 ms) */
            size_t tq = p;
            for (size_t q = p0; q < p && tq == p; q++)
                if (pz[q].s < best_b && best_a < pz[q].e)
                    tq = q;
            if (tq < p) {
                int64_t len = pz[tq].e - pz[tq].s, more = (y->late < len ? y->late : len) - pz[tq].late;
                if (y->sync < 0 && more > 0) {
                    pz[tq].late += more;
                    g->pause_ns += more;
                }
                continue;
            }
            int64_t take = best_b - best_a < y->late ? best_b - best_a : y->late;
            pz[p++] = (cp_sync_t){.s = best_a, .e = best_b, .late = take, .w = -1, .hi = -2, .rank_i = (int32_t)i,
                                  .rstep = y->rstep, .job = -1};
            g->pauses++;
            g->pause_ns += take;
            if (y->sync >= 0)
                g->syncs[y->sync].late -= take;
        }
        /* the rank's syncs and pauses by end (stable: the syncs' order kept at equal ends) */
        size_t n = 0;
        for (size_t k = 0; k < R->n_syncs; k++) {
            key[n] = mt_sort_key_i64(g->syncs[R->sync0 + k].e);
            val[n++] = (uint32_t)k;
        }
        for (size_t q = p0; q < p; q++) {
            key[n] = mt_sort_key_i64(pz[q].e);
            val[n++] = (uint32_t)(R->n_syncs + (q - p0));
        }
        if (mt_sort_u64(key, val, n) != MT_OK)
            goto done;
        size_t s0 = w;
        for (size_t q = 0; q < n; q++) {
            if (val[q] < R->n_syncs) {
                remap[R->sync0 + val[q]] = (int32_t)w;
                out[w++] = g->syncs[R->sync0 + val[q]];
            } else {
                out[w++] = pz[p0 + (val[q] - R->n_syncs)];
            }
        }
        R->sync0 = s0;
        R->n_syncs = n;
    }
    for (size_t q = 0; q < g->n_hmem; q++)
        g->hmem[q] = remap[g->hmem[q]];
    for (size_t h = 0; h < g->n_hin; h++)
        if (g->hin[h].last >= 0)
            g->hin[h].last = remap[g->hin[h].last];
    free(g->syncs);
    g->syncs = out;
    g->n_syncs = w;
    out = NULL;
    ret = 0;
done:
    free(pz);
    free(lv);
    free(out);
    free(remap);
    free(key);
    free(val);
    return ret;
}

/* The least lateness worth a pause in rank step q: CP_PAUSE_MIN, or 1 %
 * of the rank step when that is more (the noise of a rank's host is not
 * a straggler's pause; fewer windows to search, too). */
static int64_t pause_min(const cp_graph_t *g, int32_t q)
{
    int64_t v = q >= 0 ? (g->rs[q].end - g->rs[q].start) / 100 : 0;
    return v > CP_PAUSE_MIN ? v : CP_PAUSE_MIN;
}

/* Pause requests (place_pauses) for the ranks whose first launch of a
 * step came later after their step's start than the median rank's (by
 * step number; md: the job's median, else the one over g's rank steps):
 * the window is [the rank step's start, its first launch). Appended to
 * *pr (*np of *cap). 0, or -1 out of memory. */
static int step_start_late(const cp_graph_t *g, const cp_pause_med_t *md, pause_req_t **pr, size_t *np,
                           size_t *cap)
{
    size_t n = g->n_rs;
    int64_t *first = malloc(n * sizeof *first);
    uint64_t *key = malloc(n * sizeof *key);
    uint32_t *val = malloc(n * sizeof *val);
    int64_t *gap = malloc(n * sizeof *gap);
    int ret = -1;
    if (!first || !key || !val || !gap)
        goto done;
    for (size_t i = 0; i < n; i++)
        first[i] = INT64_MAX;
    for (size_t k = 0; k < g->n_nodes; k++) {
        const cp_node_t *x = &g->nodes[k];
        if (x->rstep >= 0 && x->L != INT64_MIN && x->L < first[x->rstep])
            first[x->rstep] = x->L;
    }
    for (size_t i = 0; i < n; i++) {
        key[i] = mt_sort_key_i64(g->rs[i].step);
        val[i] = (uint32_t)i;
    }
    if (mt_sort_u64(key, val, n) != MT_OK)
        goto done;
    for (size_t a = 0; a < n;) {
        size_t b = a, k = 0;
        while (b < n && key[b] == key[a])
            b++;
        for (size_t q = a; q < b; q++) {
            const cp_rs_t *x = &g->rs[val[q]];
            if (first[val[q]] != INT64_MAX && first[val[q]] > x->start)
                gap[k++] = first[val[q]] - x->start;
        }
        int64_t med = INT64_MIN;
        if (md) { /* the job's, by step number */
            int64_t sn = g->rs[val[a]].step;
            size_t lo = mt_lower_bound_i64(md->steps, md->n_steps, sizeof *md->steps, sn);
            if (lo < md->n_steps && md->steps[lo] == sn)
                med = md->step_gap[lo];
        } else if (k >= 2) {
            med = mt_stats_median_i64(gap, k);
        }
        if (med != INT64_MIN) {
            for (size_t q = a; q < b; q++) {
                const cp_rs_t *x = &g->rs[val[q]];
                if (first[val[q]] == INT64_MAX || first[val[q]] - x->start - med < pause_min(g, (int32_t)val[q]))
                    continue;
                if (MT_GROW(*pr, *cap, *np + 1, 64))
                    goto done;
                (*pr)[(*np)++] = (pause_req_t){.a = x->start, .b = first[val[q]],
                                               .late = first[val[q]] - x->start - med, .rank_i = x->rank_i,
                                               .rstep = (int32_t)val[q], .sync = -1};
            }
        }
        a = b;
    }
    ret = 0;
done:
    free(first);
    free(key);
    free(val);
    free(gap);
    return ret;
}

/* The comm node of row r: the graph's rank of r (by rix when the ranks
 * are dense, else a search), then the first of its comm activities (cm,
 * by raw start) that starts and ends where r does and, when unlinked_only,
 * is in no instance yet; -1 none. */
static int32_t comm_node_of(const cp_graph_t *g, size_t n_an, const int32_t *rix, size_t n_rix, int32_t rmin,
                            int64_t *const *cm, const size_t *n_cm, const cp_mrow_t *r, bool unlinked_only)
{
    size_t lo = 0, hi = n_an; /* ranks ascending */
    if (rix) {
        int64_t q = (int64_t)r->rank - rmin;
        if (q < 0 || (uint64_t)q >= n_rix || rix[q] < 0)
            return -1;
        lo = (size_t)rix[q];
    } else {
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (g->ranks[mid].rank < r->rank)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo >= n_an || g->ranks[lo].rank != r->rank)
            return -1;
    }
    const cp_rank_t *R = &g->ranks[lo];
    const int64_t *cmr = cm[lo];
    /* the first comm activity starting at r's start */
    size_t clo = 0, chi = n_cm[lo];
    while (clo < chi) {
        size_t mid = clo + (chi - clo) / 2;
        if (cmr[2 * mid] < r->start_ns)
            clo = mid + 1;
        else
            chi = mid;
    }
    for (const int64_t *hit = cmr + 2 * clo; hit < cmr + 2 * n_cm[lo] && hit[0] == r->start_ns; hit += 2) {
        const mt_an_gact_t *x = &R->an->gacts[hit[1] - (int64_t)R->node0];
        if (x->end_ns == r->end_ns && (!unlinked_only || g->nodes[hit[1]].inst < 0))
            return (int32_t)hit[1];
    }
    return -1;
}

int64_t cp_host_gap(const cp_graph_t *g, const cp_rank_t *R, size_t k, int64_t *anchor)
{
    /* its time since the last point where the members were together: the
     * rank's latest host collective ending by its start, or its step's
     * start, whichever is later (a sync with the GPU between them is the
     * rank's own) */
    const cp_sync_t *y = &g->syncs[R->sync0 + k];
    int64_t a = y->rstep >= 0 ? g->rs[y->rstep].start : INT64_MIN;
    for (size_t q = k; q-- > 0;) {
        const cp_sync_t *p = &g->syncs[R->sync0 + q];
        if (p->hi >= 0 && p->e <= y->s) {
            if (p->e > a)
                a = p->e;
            break;
        }
    }
    if (a == INT64_MIN)
        a = y->s;
    *anchor = a;
    return y->s > a ? y->s - a : 0;
}

int cp_pauses_place(cp_graph_t *g, const cp_pause_med_t *md)
{
    size_t ns = g->n_syncs, np = 0, cap = 0;
    pause_req_t *pr = NULL;
    int64_t *anc = NULL, *gap = NULL, *mst = NULL, *prevl = NULL;
    int ret = -1;
    /* each host collective member's lateness (cp_sync_t.late: the part of
     * its time since the members were last together above the median
     * member's; a data loader, a pause, a sleep before the collective) */
    if (g->n_hin) {
        gap = malloc((ns ? ns : 1) * sizeof *gap);
        anc = malloc((ns ? ns : 1) * sizeof *anc);
        if (!gap || !anc)
            goto out;
        for (size_t i = 0; i < g->n_ranks; i++) {
            const cp_rank_t *R = &g->ranks[i];
            for (size_t k = 0; k < R->n_syncs; k++)
                if (g->syncs[R->sync0 + k].hi >= 0)
                    gap[R->sync0 + k] = cp_host_gap(g, R, k, &anc[R->sync0 + k]);
        }
        for (size_t h = 0; h < g->n_hin; h++) {
            const cp_inst_t *I = &g->hin[h];
            int64_t med;
            if (md) {
                med = md->hin[h];
            } else {
                int64_t *tmp = malloc((I->n ? I->n : 1) * sizeof *tmp);
                if (!tmp)
                    goto out;
                for (uint32_t q = 0; q < I->n; q++)
                    tmp[q] = gap[g->hmem[I->m0 + q]];
                med = mt_stats_median_i64(tmp, I->n);
                free(tmp);
            }
            for (uint32_t q = 0; q < I->n; q++) {
                cp_sync_t *y = &g->syncs[g->hmem[I->m0 + q]];
                int64_t x = gap[g->hmem[I->m0 + q]] - med;
                y->late = x > 0 ? x : 0;
            }
        }
    }
    /* pauses: where a late member's host waited (place_pauses) */
    for (size_t j = 0; j < g->n_syncs; j++) {
        const cp_sync_t *y = &g->syncs[j];
        if (y->hi < 0 || y->late < pause_min(g, y->rstep))
            continue;
        if (MT_GROW(pr, cap, np + 1, 64))
            goto out;
        pr[np++] = (pause_req_t){.a = anc[j], .b = y->s, .late = y->late, .rank_i = y->rank_i, .rstep = y->rstep,
                                 .sync = (int32_t)j};
    }
    /* a member of a GPU collective whose kernel waited for its launch
     * (launch-bound) and arrived after the median member: its host was
     * late since its rank step's start or its previous collective's
     * launch, whichever is later */
    size_t imax = 1;
    for (size_t ii = 0; ii < g->n_inst; ii++)
        imax = g->inst[ii].n > imax ? g->inst[ii].n : imax;
    mst = g->n_inst ? malloc(imax * sizeof *mst) : NULL;
    prevl = g->n_inst ? malloc((g->n_nodes ? g->n_nodes : 1) * sizeof *prevl) : NULL;
    if (g->n_inst && (!mst || !prevl))
        goto out;
    for (size_t i = 0; g->n_inst && i < g->n_ranks; i++) {
        const cp_rank_t *R = &g->ranks[i];
        int64_t last = INT64_MIN;
        for (size_t k = 0; k < R->n_nodes; k++) {
            const cp_node_t *n = &g->nodes[R->node0 + k];
            prevl[R->node0 + k] = last;
            if (n->inst >= 0 && n->L != INT64_MIN)
                last = n->L;
        }
    }
    for (size_t ii = 0; ii < g->n_inst; ii++) {
        const cp_inst_t *I = &g->inst[ii];
        int64_t med;
        if (md) {
            med = md->inst[ii];
        } else {
            for (uint32_t q = 0; q < I->n; q++)
                mst[q] = g->nodes[g->imem[I->m0 + q]].s;
            med = mt_stats_median_i64(mst, I->n);
        }
        for (uint32_t q = 0; q < I->n; q++) {
            int32_t id = g->imem[I->m0 + q];
            const cp_node_t *n = &g->nodes[id];
            if (n->bind != CP_B_LAUNCH || n->s - med < pause_min(g, n->rstep) || n->L == INT64_MIN)
                continue;
            int64_t a = n->rstep >= 0 ? g->rs[n->rstep].start : INT64_MIN;
            if (prevl[id] > a)
                a = prevl[id];
            if (a == INT64_MIN || a >= n->L)
                continue;
            if (MT_GROW(pr, cap, np + 1, 64))
                goto out;
            pr[np++] = (pause_req_t){.a = a, .b = n->L, .late = n->s - med, .rank_i = n->rank_i, .rstep = n->rstep,
                                     .sync = -1};
        }
    }
    /* a rank that began its step's work late (a data loader, a pause at
     * the step's start): its first launch after its step's start later
     * than the median rank's, by step */
    if (g->n_rs && step_start_late(g, md, &pr, &np, &cap) < 0)
        goto out;
    ret = place_pauses(g, pr, np);
out:
    free(pr);
    free(anc);
    free(gap);
    free(mst);
    free(prevl);
    return ret;
}

mt_status_t cp_graph_build(const mt_rank_analysis_t *const *an_in, size_t n_an, const mt_clock_t *clocks,
                           const int32_t *ranks, size_t n_ranks, const mt_crow_t *rows, size_t n_rows,
                           const mt_match_t *m, bool mark_absent, bool pauses, void (*rows_done)(void *ctx),
                           void *ctx, cp_graph_t *g)
{
    memset(g, 0, sizeof *g);
    mt_status_t st = MT_ERR_NOMEM;
    const mt_rank_analysis_t **an = malloc((n_an ? n_an : 1) * sizeof *an);
    int64_t *cmap = NULL; /* the nodes found for one instance */
    /* Scratch for every per-rank pass (the sort by end, the comm
     * activities' keys, the medians), sized for the largest rank and
     * reused: per-rank or per-graph temporaries were fresh pages each. */
    uint64_t *key = NULL;
    uint32_t *val = NULL;
    int64_t **cm = NULL;  /* per rank: (raw start, node) of its comm activities, by start */
    size_t *n_cm = NULL;
    int32_t *rix = NULL;  /* index into g->ranks by rank - rmin; -1 */
    size_t *mf = NULL;    /* the instances' members, below */
    size_t *nhc = NULL;   /* per rank: its host collectives' members; then how many are placed */
    cp_mrow_t *mr = NULL;
    cp_mrow_t *ar = NULL; /* GPU members of instances short of their group (mark_absent), singles too */
    size_t nar = 0;
    uint8_t *ishort = NULL; /* per instance: short of its group (mark_absent) */
    uint8_t *hshort = NULL; /* the same per host collective (cp_graph_t.hin) */
    if (!an)
        return st;
    if (n_an) /* an_in may be NULL when there is nothing */
        memcpy(an, an_in, n_an * sizeof *an);
    qsort(an, n_an, sizeof *an, an_rank_cmp);
    size_t nn = 0, ns = 0, nrs = 0, nmax = 1;
    for (size_t i = 0; i < n_an; i++) {
        nn += an[i]->n_gacts;
        ns += an[i]->n_syncs;
        nrs += an[i]->n_steps;
        nmax = an[i]->n_gacts > nmax ? an[i]->n_gacts : nmax;
        nmax = an[i]->n_syncs > nmax ? an[i]->n_syncs : nmax;
    }
    /* the replay order's 2 events a node and 1 a sync are indexed by int32 */
    if (2 * nn + ns >= INT32_MAX || nrs >= INT32_MAX) {
        free(an);
        return MT_ERR_LIMIT;
    }
    /* the members of the instances the graph links (not mismatched, 2 or
     * more members), in match order: mf[ii] .. mf[ii + 1] of mr for
     * instance ii, none for the others. All the build reads of the rows
     * and the match, taken first (24 bytes a member against 80 a row),
     * so that rows_done can free them before the graph's tables come:
     * process 0's peak held both (docs/PERFORMANCE.md "4096 x 320 with
     * traces") */
    size_t ni = m ? m->n_inst : 0;
    mf = malloc((ni + 1) * sizeof *mf);
    mr = mt_big_malloc((ni && m->first[ni] ? m->first[ni] : 1) * sizeof *mr);
    if (!mf || !mr)
        goto out;
    mf[0] = 0;
    if (mark_absent && ni && m->first[ni] && m->expected &&
        (!(ar = mt_big_malloc(m->first[ni] * sizeof *ar)) || !(ishort = calloc(ni, 1)) || !(hshort = calloc(ni, 1))))
        goto out;
    for (size_t ii = 0; ishort && ii < ni; ii++)
        if (m->status[ii] != MT_INST_MISMATCH && m->expected[ii] > 0 &&
            (uint32_t)m->expected[ii] > m->first[ii + 1] - m->first[ii] && (ishort[ii] = 1))
            for (uint32_t k = m->first[ii]; k < m->first[ii + 1]; k++)
                if ((size_t)m->members[k] < n_rows && !(rows[m->members[k]].flags & MT_CI_CPU)) {
                    const mt_crow_t *r = &rows[m->members[k]];
                    ar[nar++] = (cp_mrow_t){.start_ns = r->start_ns, .end_ns = r->end_ns, .rank = r->rank};
                }
    for (size_t ii = 0, w = 0; ii < ni; ii++) {
        if (m->status[ii] != MT_INST_MISMATCH && m->first[ii + 1] - m->first[ii] >= 2)
            for (uint32_t k = m->first[ii]; k < m->first[ii + 1]; k++)
                if ((size_t)m->members[k] < n_rows) {
                    const mt_crow_t *r = &rows[m->members[k]];
                    mr[w++] = (cp_mrow_t){.start_ns = r->start_ns, .end_ns = r->end_ns, .rank = r->rank,
                                          .cpu = (r->flags & MT_CI_CPU) != 0};
                }
        mf[ii + 1] = w;
    }
    rows = NULL;
    m = NULL;
    if (rows_done)
        rows_done(ctx);
    /* host collectives (gloo:* ranges): each member a sync of its rank */
    if (!(nhc = calloc(2 * (n_an ? n_an : 1), sizeof *nhc)))
        goto out;
    for (size_t ii = 0; ii < ni; ii++)
        if (host_inst(an, n_an, mf, mr, ii))
            for (size_t q = mf[ii]; q < mf[ii + 1]; q++) {
                long i = mr[q].cpu ? an_find(an, n_an, mr[q].rank) : -1;
                if (i >= 0) {
                    nhc[i]++;
                    ns++;
                }
            }
    if (2 * nn + ns >= INT32_MAX) {
        st = MT_ERR_LIMIT;
        goto out;
    }
    key = mt_big_malloc(nmax * sizeof *key);
    val = mt_big_malloc(nmax * sizeof *val);
    cm = calloc(n_an ? n_an : 1, sizeof *cm);
    n_cm = calloc(n_an ? n_an : 1, sizeof *n_cm);
    if (!key || !val || !cm || !n_cm)
        goto out;
    g->ranks = calloc(n_an ? n_an : 1, sizeof *g->ranks);
    g->nodes = mt_big_malloc((nn ? nn : 1) * sizeof *g->nodes);
    g->syncs = malloc((ns ? ns : 1) * sizeof *g->syncs);
    g->by_end = mt_big_malloc((nn ? nn : 1) * sizeof *g->by_end);
    g->rs = malloc((nrs ? nrs : 1) * sizeof *g->rs);
    if (!g->ranks || !g->nodes || !g->syncs || !g->by_end || !g->rs)
        goto out;
    g->n_ranks = n_an;
    g->n_nodes = nn;
    g->n_syncs = ns;
    /* nodes, syncs and rank steps, rank by rank */
    size_t b = 0, sb = 0, rb = 0;
    for (size_t i = 0; i < n_an; i++) {
        const mt_rank_analysis_t *a = an[i];
        cp_rank_t *R = &g->ranks[i];
        R->an = a;
        R->rank = a->rank;
        g->waits_unresolved += a->swaits_unresolved;
        R->clk = cp_clock_of(clocks, ranks, n_ranks, a->rank);
        /* the rank's correction inline (align/clockmap.h), not a call per time */
        const mt_clock_map_t map = mt_clock_map(R->clk);
        R->node0 = b;
        R->n_nodes = a->n_gacts;
        R->sync0 = sb;
        R->n_syncs = a->n_syncs + nhc[i];
        R->rs0 = rb;
        R->by_start = true;
        int64_t lambda = INT64_MAX;
        const size_t hint0 = cp_step_hint0(a);
        size_t hint = hint0;
        for (size_t k = 0; k < a->n_gacts; k++) {
            const mt_an_gact_t *x = &a->gacts[k];
            cp_node_t *n = &g->nodes[b + k];
            int32_t rstep;
            if (a->gstep)
                rstep = a->gstep[k] >= 0 && (size_t)a->gstep[k] < a->n_steps ? a->gstep[k] : -1;
            else
                rstep = (int32_t)cp_rank_step_of(a, x->launch_ns >= 0 ? x->launch_ns : x->start_ns, &hint);
            /* written once, whole (a memset first wrote each node twice) */
            *n = (cp_node_t){.s = mt_clock_map_apply(&map, x->start_ns),
                             .e = mt_clock_map_apply(&map, x->end_ns),
                             .L = x->launch_ns >= 0 ? mt_clock_map_apply(&map, x->launch_end_ns) : INT64_MIN,
                             .name = a->strings ? a->strings + x->name.off : "",
                             .name_len = x->name.len,
                             .rank_i = (int32_t)i,
                             .pstream = -1,
                             .px = -1,
                             .px2 = -1,
                             .inst = -1,
                             .rstep = rstep >= 0 ? rstep + (int32_t)rb : -1,
                             .job = -1,
                             .cls = (uint8_t)x->cls};
            if (n->e < n->s)
                n->e = n->s;
            if (n->L != INT64_MIN && n->s - n->L < lambda && n->s >= n->L)
                lambda = n->s - n->L;
            if (k && n->s < n[-1].s)
                R->by_start = false;
        }
        R->lambda = lambda == INT64_MAX ? 0 : lambda;
        hint = hint0;
        for (size_t k = 0; k < a->n_syncs; k++) {
            long q = cp_rank_step_of(a, a->syncs[k].start_ns, &hint);
            g->syncs[sb + k] = (cp_sync_t){.s = mt_clock_map_apply(&map, a->syncs[k].start_ns),
                                           .e = mt_clock_map_apply(&map, a->syncs[k].end_ns),
                                           .w = -1,
                                           .hi = -1,
                                           .rank_i = (int32_t)i,
                                           .rstep = q >= 0 ? (int32_t)(q + (long)rb) : -1,
                                           .job = -1};
        }
        for (size_t k = 0; k < a->n_steps; k++) {
            const mt_an_step_t *x = &a->steps[k];
            g->rs[rb + k] = (cp_rs_t){.rank_i = (int32_t)i,
                                      .step = x->step,
                                      .start = mt_clock_map_apply(&map, x->cpu_start_ns),
                                      .cpu_end = mt_clock_map_apply(&map, x->cpu_end_ns),
                                      .end = mt_clock_map_apply(&map, x->end_ns),
                                      .last = -1,
                                      .job = -1,
                                      .src = x};
        }
        b += a->n_gacts;
        sb += R->n_syncs;
        rb += a->n_steps;
    }
    g->n_rs = nrs;
    /* the host collectives' member syncs, after each rank's own */
    for (size_t ii = 0; ii < ni; ii++) {
        if (!host_inst(an, n_an, mf, mr, ii))
            continue;
        for (size_t q = mf[ii]; q < mf[ii + 1]; q++) {
            long i = mr[q].cpu ? an_find(an, n_an, mr[q].rank) : -1;
            if (i < 0)
                continue;
            const cp_rank_t *R = &g->ranks[i];
            const mt_clock_map_t map = mt_clock_map(R->clk);
            size_t hint = cp_step_hint0(an[i]);
            long rsq = cp_rank_step_of(an[i], mr[q].start_ns, &hint);
            g->syncs[R->sync0 + an[i]->n_syncs + nhc[n_an + i]++] =
                (cp_sync_t){.s = mt_clock_map_apply(&map, mr[q].start_ns),
                            .e = mt_clock_map_apply(&map, mr[q].end_ns),
                            .w = -1,
                            .hi = (int32_t)g->n_hin,
                            .rank_i = (int32_t)i,
                            .rstep = rsq >= 0 ? (int32_t)(rsq + (long)R->rs0) : -1,
                            .job = -1};
        }
        if (ishort)
            hshort[g->n_hin] = ishort[ii];
        g->n_hin++;
    }
    /* the activities' annotations, for the root causes: the caller may
     * free the activities once the graph is built (mt_cp_request_t.built) */
    size_t n_annots = 0;
    for (size_t i = 0; i < n_an; i++)
        n_annots += an[i]->n_annots;
    if (n_annots) {
        if (!(g->annot = mt_big_malloc((nn ? nn : 1) * sizeof *g->annot)))
            goto out;
        for (size_t i = 0; i < n_an; i++)
            for (size_t k = 0; k < an[i]->n_gacts; k++)
                g->annot[g->ranks[i].node0 + k] = an[i]->gacts[k].annot;
    }
    /* syncs by end within each rank (insertion: nearly sorted; a rank
     * with host collectives appended: qsort) */
    for (size_t i = 0; i < n_an; i++) {
        cp_sync_t *s = g->syncs + g->ranks[i].sync0;
        if (nhc[i]) {
            qsort(s, g->ranks[i].n_syncs, sizeof *s, sync_end_cmp);
            continue;
        }
        for (size_t k = 1; k < g->ranks[i].n_syncs; k++) {
            cp_sync_t v = s[k];
            size_t j = k;
            for (; j > 0 && s[j - 1].e > v.e; j--)
                s[j] = s[j - 1];
            s[j] = v;
        }
    }
    /* by_end per rank (by end, equal ends by id), and each rank step's
     * last-ending node */
    for (size_t i = 0; i < n_an; i++) {
        const cp_rank_t *R = &g->ranks[i];
        int t = by_end_merge(g, R, an[i]->gacts, val);
        if (t < 0)
            goto out;
        if (t == 0)
            continue;
        /* a stream whose activities overlap: the stable radix sort */
        if (cp_rank_order(g, R, CP_BY_END, g->by_end, key, val))
            goto out;
    }
    for (size_t k = 0; k < nn; k++) {
        cp_node_t *n = &g->nodes[k];
        if (n->rstep >= 0) {
            cp_rs_t *r = &g->rs[n->rstep];
            if (r->last < 0 || n->e > g->nodes[r->last].e)
                r->last = (int32_t)k;
        }
    }
    /* instances: comm nodes found by (rank, raw start, raw end, stream) of their rows */
    size_t cap_i = 0;
    for (size_t i = 0; i < n_an; i++) {
        const mt_rank_analysis_t *a = an[i];
        const cp_rank_t *R = &g->ranks[i];
        size_t nc = 0;
        for (size_t k = 0; k < a->n_gacts; k++)
            nc += a->gacts[k].cls == MT_AN_COMM;
        if (!(cm[i] = malloc((nc ? nc : 1) * 2 * sizeof **cm)))
            goto out;
        /* by start with the stable radix sort (equal starts stay in node
         * order, as glibc's merge-sorting qsort left them): a rank's
         * activities come nearly by start, and qsort's comparator calls
         * were 19 M instructions on a 256-rank job */
        nc = 0;
        for (size_t k = 0; k < a->n_gacts; k++)
            if (a->gacts[k].cls == MT_AN_COMM) {
                key[nc] = mt_sort_key_i64(a->gacts[k].start_ns);
                val[nc++] = (uint32_t)(R->node0 + k);
            }
        if (mt_sort_u64(key, val, nc) != MT_OK)
            goto out;
        for (size_t k = 0; k < nc; k++) {
            cm[i][2 * k] = (int64_t)(key[k] ^ (UINT64_C(1) << 63));
            cm[i][2 * k + 1] = val[k];
        }
        n_cm[i] = nc;
    }
    /* the graph's rank index by rank: a table when the ranks are dense (the
     * usual case), else the binary search below */
    size_t n_rix = 0;
    int32_t rmin = n_an ? g->ranks[0].rank : 0;
    if (n_an && (uint64_t)((int64_t)g->ranks[n_an - 1].rank - rmin) < 4 * (uint64_t)n_an + 64) {
        n_rix = (size_t)((int64_t)g->ranks[n_an - 1].rank - rmin) + 1;
        if (!(rix = malloc(n_rix * sizeof *rix)))
            goto out;
        for (size_t q = 0; q < n_rix; q++)
            rix[q] = -1;
        for (size_t i = n_an; i-- > 0;) /* the first of equal ranks, as the search finds */
            rix[g->ranks[i].rank - rmin] = (int32_t)i;
    }
    for (size_t q = 0; q < nar; q++) {
        int32_t nd = comm_node_of(g, n_an, rix, n_rix, rmin, cm, n_cm, &ar[q], false);
        if (nd >= 0)
            g->nodes[nd].absent = 1;
    }
    size_t cap_f = 0, cap_m = 0;
    for (size_t ii = 0; ii < ni; ii++) {
        if (mf[ii + 1] == mf[ii])
            continue;
        cp_inst_t I = {.maxstart = INT64_MIN, .last = -1, .transfer = INT64_MAX};
        size_t nfound = 0;
        for (size_t k = mf[ii]; k < mf[ii + 1]; k++) {
            int32_t nd = comm_node_of(g, n_an, rix, n_rix, rmin, cm, n_cm, &mr[k], true);
            if (nd < 0)
                continue;
            if (MT_GROW(cmap, cap_f, nfound + 1, 64))
                goto out;
            cmap[nfound++] = nd;
            g->nodes[nd].inst = (int32_t)g->n_inst; /* provisional: undone below when fewer than 2 */
            const cp_node_t *n = &g->nodes[nd];
            if (n->s > I.maxstart) {
                I.maxstart = n->s;
                I.last = nd;
            }
            if (n->e - n->s < I.transfer)
                I.transfer = n->e - n->s;
        }
        if (nfound < 2) {
            for (size_t q = 0; q < nfound; q++)
                g->nodes[cmap[q]].inst = -1;
            continue;
        }
        if (MT_GROW(g->inst, cap_i, g->n_inst + 1, 256) || MT_GROW(g->imem, cap_m, g->n_imem + nfound, 1024))
            goto out;
        for (size_t q = 0; q < nfound; q++)
            g->imem[g->n_imem + q] = (int32_t)cmap[q];
        I.m0 = g->n_imem;
        g->n_imem += nfound;
        I.n = (uint32_t)nfound;
        g->inst[g->n_inst++] = I;
    }
    /* a member ending before its instance's last arrival (clock error)
     * puts its end event after its place in by_end (cp_run.c cp_order_build) */
    for (size_t q = 0; q < g->n_imem; q++) {
        const cp_node_t *n = &g->nodes[g->imem[q]];
        if (cp_node_T(g, n) < 0)
            g->ranks[n->rank_i].end_late = true;
    }
    /* start bindings: stream predecessor, launch, inferred stream wait */
    for (size_t i = 0; i < n_an; i++) {
        cp_rank_t *R = &g->ranks[i];
        int32_t last_on[64];
        size_t nstreams = 0;
        int32_t *lastv = NULL;
        const mt_an_gact_t *ga = R->an->gacts; /* the streams (not kept in cp_node_t) */
        for (size_t k = 0; k < R->n_nodes; k++)
            if (ga[k].stream + 1 > nstreams)
                nstreams = ga[k].stream + 1;
        lastv = nstreams <= 64 ? last_on : malloc(nstreams * sizeof *lastv);
        if (!lastv)
            goto out;
        for (size_t k = 0; k < nstreams; k++)
            lastv[k] = -1;
        const int32_t *be = g->by_end + R->node0;
        size_t hint = 0;
        for (size_t k = 0; k < R->n_nodes; k++) {
            int32_t id = (int32_t)(R->node0 + k);
            cp_node_t *n = &g->nodes[id];
            n->pstream = lastv[ga[k].stream];
            lastv[ga[k].stream] = id;
            int64_t best = INT64_MIN;
            uint8_t bind = CP_B_NONE;
            if (n->pstream >= 0) {
                int64_t c = g->nodes[n->pstream].e;
                best = c < n->s ? c : n->s;
                bind = CP_B_STREAM;
            }
            if (n->L != INT64_MIN) {
                int64_t c = n->L + R->lambda;
                c = c < n->s ? c : n->s;
                if (c > best || bind == CP_B_NONE) {
                    best = c;
                    bind = CP_B_LAUNCH;
                }
            }
            const int32_t *gd = R->an->gdeps ? R->an->gdeps + 2 * k : NULL;
            if (gd && gd[0] == MT_AN_GDEP_INFER)
                gd = NULL; /* no event names this one's waits: inferred below */
            if (gd) {
                /* explicit predecessors: the latest end binds. A timeline
                 * names every activity's (replayed in topological order,
                 * labelled by name); a Kineto trace's cuda_sync records
                 * name some (analysis.h "waits") */
                if (!R->an->swaits_named)
                    g->explicit_deps = true;
                R->waits_named = true;
                n->xnamed = 1;
                for (int q = 0; q < 2; q++) {
                    int32_t d = gd[q];
                    if (d < 0 || (size_t)d >= R->n_nodes || (size_t)d == k)
                        continue;
                    int32_t p = (int32_t)(R->node0 + (size_t)d);
                    if (q == 0)
                        n->px = p;
                    else
                        n->px2 = p;
                    int64_t c = g->nodes[p].e < n->s ? g->nodes[p].e : n->s;
                    if (bind == CP_B_NONE || c > best) {
                        best = c;
                        bind = CP_B_X;
                        if (q == 1) { /* the binding one is px */
                            n->px2 = n->px;
                            n->px = p;
                        }
                    }
                }
            } else if (bind == CP_B_NONE || n->s - best > 1000) {
                /* the latest end on another stream of the rank, no later
                 * than s + CP_EDGE_TOL: a kernel that waited for an event
                 * recorded after X starts as X ends, but the two
                 * timestamps are rounded apart (by 1 ns on the slow-GPU
                 * case of issue 38, where a strict bound took the GEMM
                 * before X and the replay lost X's duration) */
                size_t lo = hint = ends_after(g, be, R->n_nodes, n->s + CP_EDGE_TOL, hint);
                for (size_t j = lo, tries = 0; j-- > 0 && tries < 32; tries++) {
                    const cp_node_t *x = &g->nodes[be[j]];
                    if (bind != CP_B_NONE && x->e <= best)
                        break;
                    if (ga[be[j] - (int32_t)R->node0].stream == ga[k].stream || be[j] == id || x->s >= n->s)
                        continue;
                    n->px = be[j];
                    best = x->e < n->s ? x->e : n->s;
                    bind = CP_B_X;
                    break;
                }
            }
            n->bind = bind;
            if (bind == CP_B_X) {
                if (n->xnamed)
                    g->waits_explicit++;
                else
                    g->waits_inferred++;
            }
        }
        if (lastv != last_on)
            free(lastv);
    }
    /* host collectives: their members (syncs), last arrival, shortest
     * duration (each member's lateness: cp_pauses_place) */
    if (g->n_hin) {
        g->hin = calloc(g->n_hin, sizeof *g->hin);
        g->hmem = malloc(((ns ? ns : 1)) * sizeof *g->hmem);
        if (!g->hin || !g->hmem)
            goto out;
        for (size_t j = 0; j < ns; j++)
            if (g->syncs[j].hi >= 0)
                g->hin[g->syncs[j].hi].n++;
        for (size_t h = 0, at = 0; h < g->n_hin; h++) {
            g->hin[h].m0 = at;
            at += g->hin[h].n;
            g->n_hmem = at;
            g->hin[h].n = 0;
            g->hin[h].maxstart = INT64_MIN;
            g->hin[h].transfer = INT64_MAX;
            g->hin[h].last = -1;
            g->hin[h].absent = hshort && hshort[h];
        }
        for (size_t i = 0; i < n_an; i++) {
            const cp_rank_t *R = &g->ranks[i];
            for (size_t k = 0; k < R->n_syncs; k++) {
                size_t j = R->sync0 + k;
                cp_sync_t *y = &g->syncs[j];
                if (y->hi < 0)
                    continue;
                cp_inst_t *I = &g->hin[y->hi];
                g->hmem[I->m0 + I->n++] = (int32_t)j;
                if (y->s > I->maxstart) {
                    I->maxstart = y->s;
                    I->last = (int32_t)j;
                }
                if (y->e - y->s < I->transfer)
                    I->transfer = y->e - y->s;
            }
        }
    }
    /* the host collective members' lateness and the pauses (medians over
     * the job's ranks: a process's own ranks get them from the job,
     * cp_part_build) */
    if (pauses && cp_pauses_place(g, NULL) < 0)
        goto out;
    /* the replay's per-rank latencies: what the model may carry instead of
     * each edge's measured slack (critpath.h "replay") */
    {
        int64_t *v = (int64_t *)key;
        for (size_t i = 0; i < n_an; i++) {
            cp_rank_t *R = &g->ranks[i];
            size_t nv = 0;
            for (size_t k = 0; k < R->n_nodes; k++) {
                const cp_node_t *n = &g->nodes[R->node0 + k];
                if (n->bind == CP_B_LAUNCH && n->px < 0 && n->s >= n->L)
                    v[nv++] = n->s - n->L;
            }
            R->lat = nv ? mt_stats_pct_i64(v, nv, 50) : R->lambda;
        }
    }
    /* syncs: what each waited for */
    for (size_t i = 0; i < n_an; i++) {
        cp_rank_t *R = &g->ranks[i];
        const int32_t *be = g->by_end + R->node0;
        size_t hint = 0;
        for (size_t k = 0; k < R->n_syncs; k++) {
            cp_sync_t *s = &g->syncs[R->sync0 + k];
            if (s->hi != -1) /* a host collective waits for its peers, a pause for nothing */
                continue;
            size_t lo = hint = ends_after(g, be, R->n_nodes, s->e, hint);
            for (size_t j = lo, tries = 0; j-- > 0 && tries < 64; tries++) {
                const cp_node_t *x = &g->nodes[be[j]];
                if (x->e < s->s)
                    break;
                if (x->L != INT64_MIN && x->L <= s->s) {
                    s->w = be[j];
                    break;
                }
            }
        }
        int64_t *v = (int64_t *)key;
        size_t nv = 0;
        for (size_t k = 0; k < R->n_syncs; k++) {
            const cp_sync_t *s = &g->syncs[R->sync0 + k];
            if (s->w >= 0 && g->nodes[s->w].e >= s->s)
                v[nv++] = s->e - g->nodes[s->w].e;
        }
        R->sync_lag = nv ? mt_stats_pct_i64(v, nv, 50) : 0;
    }
    st = MT_OK;
out:
    free(an);
    free(mf);
    free(mr);
    free(ar);
    free(ishort);
    free(hshort);
    free(cmap);
    free(key);
    free(val);
    for (size_t i = 0; cm && i < n_an; i++)
        free(cm[i]);
    free(cm);
    free(n_cm);
    free(rix);
    free(nhc);
    if (st != MT_OK)
        cp_graph_free(g);
    return st;
}
