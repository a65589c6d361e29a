/* The job half of the pipeline analysis (include/mergetrace/pipeline.h):
 * stages from a flag, from rank blocks or from the point-to-point traffic,
 * chunks matched across the stage leaders, corrected emit times, period,
 * hidden time and OverlapScore per chunk and over the run. */
#include "mergetrace/pipeline.h"
#include "base/sort.h"
#include "base/stats.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mergetrace/analysis.h"
#include "mergetrace/classify.h"
#include "mergetrace/buf.h"

const char *mt_pp_source_str(mt_pp_source_t s)
{
    switch (s) {
    case MT_PP_FROM_FLAG: return "flag";
    case MT_PP_FROM_BLOCKS: return "blocks";
    case MT_PP_FROM_P2P: return "p2p";
    case MT_PP_FROM_ANNOTATIONS: return "annotations";
    case MT_PP_FROM_P2P_ENDS: return "p2p-ends";
    }
    return "flag";
}

void mt_pp_stages_free(mt_pp_stages_t *s)
{
    if (!s)
        return;
    free(s->first);
    free(s->ranks);
    free(s->marker);
    free(s->name);
    memset(s, 0, sizeof *s);
}

/* Allocate n stages with room for nr ranks; names "stage<s>", markers 0. */
static mt_status_t stages_alloc(mt_pp_stages_t *s, size_t n, size_t nr)
{
    memset(s, 0, sizeof *s);
    s->first = calloc(n + 1, sizeof *s->first);
    s->ranks = malloc((nr ? nr : 1) * sizeof *s->ranks);
    s->marker = calloc(n ? n : 1, sizeof *s->marker);
    s->name = calloc(n ? n : 1, sizeof *s->name);
    if (!s->first || !s->ranks || !s->marker || !s->name) {
        mt_pp_stages_free(s);
        return MT_ERR_NOMEM;
    }
    s->n = n;
    for (size_t i = 0; i < n; i++)
        snprintf(s->name[i], sizeof s->name[i], "stage%zu", i);
    return MT_OK;
}

/* A rank number at *p (0 .. INT32_MAX - 1); advances *p. */
static int parse_rank(const char **p, int32_t *out)
{
    const char *s = *p;
    if (*s < '0' || *s > '9')
        return 0;
    long long v = 0;
    while (*s >= '0' && *s <= '9') {
        v = v * 10 + (*s - '0');
        if (v >= INT32_MAX)
            return 0;
        s++;
    }
    *out = (int32_t)v;
    *p = s;
    return 1;
}

/* Append the ranks of an item "A" or "A-B" at *p to r[]. */
static mt_status_t parse_item(const char **p, int32_t **r, size_t *n, size_t *cap, mt_error_t *err,
                              const char *text)
{
    int32_t a, b;
    if (!parse_rank(p, &a)) {
        mt_error_set(err, MT_ERR_USAGE, "\"%s\": expected a rank number at offset %td", text, *p - text);
        return MT_ERR_USAGE;
    }
    b = a;
    if (**p == '-') {
        (*p)++;
        if (!parse_rank(p, &b) || b < a) {
            mt_error_set(err, MT_ERR_USAGE, "\"%s\": expected a range A-B with B >= A at offset %td", text, *p - text);
            return MT_ERR_USAGE;
        }
    }
    if ((uint64_t)b - (uint64_t)a + *n >= (1u << 20)) {
        mt_error_set(err, MT_ERR_USAGE, "\"%s\": more than 1048576 ranks listed", text);
        return MT_ERR_USAGE;
    }
    for (int64_t x = a; x <= b; x++) {
        if (MT_GROW(*r, *cap, *n + 1, 16))
            return MT_ERR_NOMEM;
        (*r)[(*n)++] = (int32_t)x;
    }
    return MT_OK;
}

/* Ranks in groups: items ("A" or "A-B") joined by `join` within a group,
 * groups separated by `split` (0: one group). r[] gets every rank in order,
 * ends[g] the end of group g in r[]. */
static mt_status_t parse_groups(const char *text, char join, char split, int32_t **r, size_t *n, size_t **ends,
                                size_t *ns, mt_error_t *err)
{
    size_t rc = 0, sc = 0;
    const char *p = text;
    *r = NULL;
    *ends = NULL;
    *n = *ns = 0;
    for (;;) {
        mt_status_t st = parse_item(&p, r, n, &rc, err, text);
        if (st != MT_OK)
            return st;
        if (*p && *p == join) {
            p++;
            continue;
        }
        if (MT_GROW(*ends, sc, *ns + 1, 8))
            return MT_ERR_NOMEM;
        (*ends)[(*ns)++] = *n;
        if (*p && *p == split) {
            p++;
            continue;
        }
        if (*p) {
            mt_error_set(err, MT_ERR_USAGE, "\"%s\": unexpected '%c' at offset %td", text, *p, p - text);
            return MT_ERR_USAGE;
        }
        return MT_OK;
    }
}

mt_status_t mt_pp_ranks_parse(const char *text, int32_t **ranks, size_t *n, mt_error_t *err)
{
    size_t *ends = NULL, ns = 0;
    mt_status_t st = parse_groups(text, ',', 0, ranks, n, &ends, &ns, err);
    free(ends);
    if (st != MT_OK) {
        free(*ranks);
        *ranks = NULL;
        *n = 0;
        return st;
    }
    qsort(*ranks, *n, sizeof **ranks, mt_cmp_i32);
    size_t k = 0;
    for (size_t i = 0; i < *n; i++)
        if (!k || (*ranks)[k - 1] != (*ranks)[i])
            (*ranks)[k++] = (*ranks)[i];
    *n = k;
    return MT_OK;
}

mt_status_t mt_pp_stages_parse(const char *text, mt_pp_stages_t *out, mt_error_t *err)
{
    memset(out, 0, sizeof *out);
    int32_t *r = NULL;
    size_t n = 0, ns = 0;
    size_t *ends = NULL;
    mt_status_t st = parse_groups(text, '+', ',', &r, &n, &ends, &ns, err);
    if (st == MT_OK && ns < 2) {
        mt_error_set(err, MT_ERR_USAGE, "\"%s\": a pipeline needs at least 2 stages (separate them with ',')", text);
        st = MT_ERR_USAGE;
    }
    if (st == MT_OK) {
        int32_t *sorted = malloc(n * sizeof *sorted);
        if (!sorted) {
            st = MT_ERR_NOMEM;
        } else {
            memcpy(sorted, r, n * sizeof *r);
            qsort(sorted, n, sizeof *sorted, mt_cmp_i32);
            for (size_t i = 1; i < n && st == MT_OK; i++)
                if (sorted[i] == sorted[i - 1]) {
                    mt_error_set(err, MT_ERR_USAGE, "\"%s\": rank %d is in more than one place", text, (int)sorted[i]);
                    st = MT_ERR_USAGE;
                }
            free(sorted);
        }
    }
    if (st == MT_OK)
        st = stages_alloc(out, ns, n);
    if (st == MT_OK) {
        out->source = MT_PP_FROM_FLAG;
        size_t b = 0;
        for (size_t s = 0; s < ns; s++) {
            out->first[s] = b;
            memcpy(out->ranks + b, r + b, (ends[s] - b) * sizeof *r);
            qsort(out->ranks + b, ends[s] - b, sizeof *r, mt_cmp_i32);
            b = ends[s];
        }
        out->first[ns] = n;
    }
    free(r);
    free(ends);
    return st;
}

mt_status_t mt_pp_stages_blocks(const int32_t *ranks, size_t n_ranks, int n_stages, mt_pp_stages_t *out,
                                mt_error_t *err)
{
    memset(out, 0, sizeof *out);
    if (n_stages < 2 || (size_t)n_stages > n_ranks || n_ranks % (size_t)n_stages) {
        mt_error_set(err, MT_ERR_USAGE,
                     "--pp %d: needs 2 or more stages that divide the %zu ranks present into equal blocks", n_stages,
                     n_ranks);
        return MT_ERR_USAGE;
    }
    mt_status_t st = stages_alloc(out, (size_t)n_stages, n_ranks);
    if (st != MT_OK)
        return st;
    out->source = MT_PP_FROM_BLOCKS;
    memcpy(out->ranks, ranks, n_ranks * sizeof *ranks);
    qsort(out->ranks, n_ranks, sizeof *ranks, mt_cmp_i32);
    size_t per = n_ranks / (size_t)n_stages;
    for (size_t s = 0; s <= (size_t)n_stages; s++)
        out->first[s] = s * per;
    return MT_OK;
}

/* ---- clocks by rank ---- */

typedef struct clk_ix {
    int32_t rank;
    uint32_t i;
} clk_ix_t;

static int clk_ix_cmp(const void *a, const void *b)
{
    const clk_ix_t *x = a, *y = b;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

static const mt_clock_t *clock_of(const clk_ix_t *ix, size_t n, const mt_clock_t *clocks, int32_t rank)
{
    clk_ix_t q = {rank, 0};
    const clk_ix_t *h = n ? bsearch(&q, ix, n, sizeof *ix, clk_ix_cmp) : NULL;
    return h ? &clocks[h->i] : NULL;
}

static clk_ix_t *clock_index(const mt_clock_t *clocks, size_t n)
{
    clk_ix_t *ix = malloc((n ? n : 1) * sizeof *ix);
    if (!ix)
        return NULL;
    for (size_t i = 0; i < n; i++)
        ix[i] = (clk_ix_t){clocks[i].rank, (uint32_t)i};
    qsort(ix, n, sizeof *ix, clk_ix_cmp);
    return ix;
}

/* ---- inference from point-to-point rows ---- */

typedef struct edge {
    int32_t lo, hi;
    int32_t fwd;            /* 1: lo -> hi, 0: hi -> lo */
    int32_t pad_;
    int64_t t;              /* corrected kernel start */
} edge_t;

static int edge_cmp(const void *pa, const void *pb)
{
    const edge_t *a = pa, *b = pb;
    if (a->lo != b->lo)
        return a->lo < b->lo ? -1 : 1;
    if (a->hi != b->hi)
        return a->hi < b->hi ? -1 : 1;
    return (a->t > b->t) - (a->t < b->t);
}

mt_status_t mt_pp_stages_infer(const mt_crow_t *rows, size_t n_rows, const mt_clock_t *clocks, size_t n_clocks,
                               mt_pp_stages_t *out)
{
    memset(out, 0, sizeof *out);
    mt_status_t st = MT_ERR_NOMEM;
    clk_ix_t *ix = clocks ? clock_index(clocks, n_clocks) : NULL;
    edge_t *e = malloc((n_rows ? n_rows : 1) * sizeof *e);
    int32_t *node = NULL, *level = NULL, *from = NULL, *to = NULL;
    if ((clocks && !ix) || !e)
        goto out;
    size_t ne = 0;
    for (size_t i = 0; i < n_rows; i++) {
        const mt_crow_t *r = &rows[i];
        if (r->peer < 0 || r->peer > INT32_MAX || r->peer == r->rank)
            continue;
        int32_t src, dst;
        if (r->kind == MT_COLLK_SEND) {
            src = r->rank;
            dst = (int32_t)r->peer;
        } else if (r->kind == MT_COLLK_RECV) {
            src = (int32_t)r->peer;
            dst = r->rank;
        } else {
            continue;
        }
        const mt_clock_t *c = ix ? clock_of(ix, n_clocks, clocks, r->rank) : NULL;
        e[ne++] = (edge_t){.lo = src < dst ? src : dst,
                           .hi = src < dst ? dst : src,
                           .fwd = src < dst,
                           .t = mt_clock_apply(c, r->start_ns)};
    }
    qsort(e, ne, sizeof *e, edge_cmp);
    /* One direction per pair. */
    size_t np = 0;
    from = malloc((ne ? ne : 1) * sizeof *from);
    to = malloc((ne ? ne : 1) * sizeof *to);
    node = malloc((ne ? 2 * ne : 1) * sizeof *node);
    if (!from || !to || !node)
        goto out;
    size_t nn = 0;
    for (size_t i = 0; i < ne;) {
        size_t j = i;
        int64_t f = 0, b = 0;
        for (; j < ne && e[j].lo == e[i].lo && e[j].hi == e[i].hi; j++)
            if (e[j].fwd)
                f++;
            else
                b++;
        int fwd = f != b ? f > b : e[i].fwd; /* e[i] is the pair's earliest */
        from[np] = fwd ? e[i].lo : e[i].hi;
        to[np] = fwd ? e[i].hi : e[i].lo;
        np++;
        node[nn++] = e[i].lo;
        node[nn++] = e[i].hi;
        i = j;
    }
    qsort(node, nn, sizeof *node, mt_cmp_i32);
    size_t k = 0;
    for (size_t i = 0; i < nn; i++)
        if (!k || node[k - 1] != node[i])
            node[k++] = node[i];
    nn = k;
    level = calloc(nn ? nn : 1, sizeof *level);
    if (!level)
        goto out;
    /* Longest path from a source: relax until nothing moves; more than nn
     * rounds means a cycle (an interleaved schedule sending back to the
     * first stage): no stage order can be read off then. */
    int moved = 1;
    size_t rounds = 0;
    while (moved && rounds <= nn) {
        moved = 0;
        rounds++;
        for (size_t i = 0; i < np; i++) {
            int32_t *u = bsearch(&from[i], node, nn, sizeof *node, mt_cmp_i32);
            int32_t *v = bsearch(&to[i], node, nn, sizeof *node, mt_cmp_i32);
            if (level[v - node] < level[u - node] + 1) {
                level[v - node] = level[u - node] + 1;
                moved = 1;
            }
        }
    }
    st = MT_OK;
    if (moved || !nn)
        goto out; /* no pipeline */
    int32_t top = 0;
    for (size_t i = 0; i < nn; i++)
        if (level[i] > top)
            top = level[i];
    if (top < 1)
        goto out;
    st = stages_alloc(out, (size_t)top + 1, nn);
    if (st != MT_OK)
        goto out;
    out->source = MT_PP_FROM_P2P;
    size_t b = 0;
    for (int32_t l = 0; l <= top; l++) {
        out->first[l] = b;
        for (size_t i = 0; i < nn; i++)
            if (level[i] == l)
                out->ranks[b++] = node[i];
    }
    out->first[top + 1] = b;
    /* A level left empty (a longest path skipping it) would be a stage with
     * no rank: drop such levels. */
    size_t w = 0;
    for (size_t s = 0; s < out->n; s++)
        if (out->first[s + 1] > out->first[s])
            out->first[w++] = out->first[s];
    out->first[w] = b;
    out->n = w;
    if (w < 2)
        mt_pp_stages_free(out);
out:
    free(ix);
    free(e);
    free(from);
    free(to);
    free(node);
    free(level);
    return st;
}

/* ---- inference from send/recv kernels that name no peer ---- */

/* A trace without collective metadata (before PyTorch 2.2) says a kernel
 * sent or received (its nccl:send / nccl:recv record) but not to whom. A
 * transfer's two kernels end together (each returns when the transfer is
 * done), so after alignment a send's partner is a receive on another rank
 * that ends within the alignment error of it. Which of a stage's ranks a
 * kernel went to does not matter to the stages: a send's candidates are
 * every rank with such a receive (the BLIND_NEAR nearest), and the pairs of
 * ranks that recur are the edges mt_pp_stages_infer layers. */
#define BLIND_TOL_NS 20000      /* the window's floor; each rank's residual p99 is added */
#define BLIND_NEAR 8            /* candidate ranks kept per kernel, nearest first */
#define BLIND_WEAK_DIV 4        /* a pair seen in fewer than 1/4 of the median pair's kernels is chance */
#define BLIND_MIN_PAIRED_PCT 50 /* of the sends, and of the receives, that must find a partner */
#define BLIND_MAX_SPLIT_PCT 10  /* of the paired kernels whose candidates may disagree with the stages */

typedef struct blind {
    int64_t end;    /* corrected */
    int32_t rank;
    uint32_t row;
} blind_t;

static int blind_cmp(const void *pa, const void *pb)
{
    const blind_t *a = pa, *b = pb;
    if (a->end != b->end)
        return a->end < b->end ? -1 : 1;
    return (a->rank > b->rank) - (a->rank < b->rank);
}

typedef struct vote {
    int32_t lo, hi;
    int64_t n;      /* kernels of either rank that named the other */
} vote_t;

static int vote_cmp(const void *pa, const void *pb)
{
    const vote_t *a = pa, *b = pb;
    if (a->lo != b->lo)
        return a->lo < b->lo ? -1 : 1;
    return (a->hi > b->hi) - (a->hi < b->hi);
}

static double blind_err(const clk_ix_t *ix, size_t n, const mt_clock_t *clocks, int32_t rank)
{
    const mt_clock_t *c = ix ? clock_of(ix, n, clocks, rank) : NULL;
    return c && c->residual_p99_ns > 0 ? c->residual_p99_ns : 0;
}

/* The candidates of kernel x among the other side's kernels o[0..no)
 * (sorted by end): the BLIND_NEAR nearest ranks other than x's (in no
 * order), each with a kernel ending within the window, and in dist[] how
 * near their nearest kernel ends. Returns how many. */
static size_t blind_near(const blind_t *x, const blind_t *o, size_t no, const double *err_x, double err_max,
                         const clk_ix_t *ix, size_t n_clocks, const mt_clock_t *clocks, int32_t *cand, int64_t *dist)
{
    int64_t w = (int64_t)(BLIND_TOL_NS + *err_x + err_max) + 1;
    size_t lo = 0, hi = no;
    while (lo < hi) { /* first kernel ending at x->end - w or later */
        size_t mid = lo + (hi - lo) / 2;
        if (o[mid].end < x->end - w)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t nc = 0;
    for (size_t k = lo; k < no && o[k].end <= x->end + w; k++) {
        if (o[k].rank == x->rank)
            continue;
        int64_t d = o[k].end > x->end ? o[k].end - x->end : x->end - o[k].end;
        if ((double)d > BLIND_TOL_NS + *err_x + blind_err(ix, n_clocks, clocks, o[k].rank))
            continue;
        size_t q = 0;
        while (q < nc && cand[q] != o[k].rank)
            q++;
        if (q < nc) {
            if (d < dist[q])
                dist[q] = d;
            continue;
        }
        if (nc < BLIND_NEAR) {
            cand[nc] = o[k].rank;
            dist[nc++] = d;
            continue;
        }
        size_t far = 0; /* full: replace the farthest when this one is nearer */
        for (size_t t = 1; t < nc; t++)
            if (dist[t] > dist[far])
                far = t;
        if (d < dist[far]) {
            cand[far] = o[k].rank;
            dist[far] = d;
        }
    }
    return nc;
}

static const vote_t *vote_of(const vote_t *v, size_t nv, int32_t a, int32_t b)
{
    vote_t q = {.lo = a < b ? a : b, .hi = a < b ? b : a};
    return nv ? bsearch(&q, v, nv, sizeof *v, vote_cmp) : NULL;
}

/* The stage of rank r: by[] holds (rank, stage) pairs sorted by rank (the
 * clk_ix_t layout, stage in i); -1 for a rank in no stage. */
static long stage_of(const clk_ix_t *by, size_t n, int32_t r)
{
    clk_ix_t q = {r, 0};
    const clk_ix_t *h = n ? bsearch(&q, by, n, sizeof *by, clk_ix_cmp) : NULL;
    return h ? (long)h->i : -1;
}

mt_status_t mt_pp_stages_infer_ends(const mt_crow_t *rows, size_t n_rows, const mt_clock_t *clocks, size_t n_clocks,
                                    mt_pp_stages_t *out, char *why, size_t cap)
{
    memset(out, 0, sizeof *out);
    size_t n_send = 0, n_recv = 0, n_both = 0;
    int32_t one = -1; /* the rank of every blind row, or -2 when they are on several */
    for (size_t i = 0; i < n_rows; i++) {
        const mt_crow_t *r = &rows[i];
        if (r->peer >= 0 || (r->flags & MT_CI_CPU) ||
            (r->kind != MT_COLLK_SEND && r->kind != MT_COLLK_RECV && r->kind != MT_COLLK_SENDRECV))
            continue;
        n_send += r->kind == MT_COLLK_SEND;
        n_recv += r->kind == MT_COLLK_RECV;
        n_both += r->kind == MT_COLLK_SENDRECV;
        one = one == -1 || one == r->rank ? r->rank : -2;
    }
    size_t blind = n_send + n_recv + n_both;
    if (!blind)
        return MT_OK;
    const char *head = "send/recv kernels name no peer (no collective metadata)";
    const char *tail = "pipeline stages cannot be inferred; --pp-stages names them";
    if (one >= 0) {
        snprintf(why, cap, "%zu %s, all on rank %d (no other rank's trace has any): %s", blind, head, (int)one, tail);
        return MT_OK;
    }
    if (!n_send || !n_recv) {
        snprintf(why, cap, "%zu %s and %s: %s", blind, head,
                 n_both ? "their records do not say which way the data went (send or recv)"
                        : "none was seen at the other end",
                 tail);
        return MT_OK;
    }
    mt_status_t st = MT_ERR_NOMEM;
    clk_ix_t *ix = clocks ? clock_index(clocks, n_clocks) : NULL;
    blind_t *b = malloc((n_send + n_recv) * sizeof *b);
    double *err = malloc((n_send + n_recv) * sizeof *err);
    int32_t *cand = malloc((n_send + n_recv) * BLIND_NEAR * sizeof *cand);
    int64_t *dist = malloc((n_send + n_recv) * BLIND_NEAR * sizeof *dist);
    uint8_t *nc = calloc(n_send + n_recv, 1);
    vote_t *v = NULL;
    mt_crow_t *syn = NULL;
    clk_ix_t *by = NULL;
    if ((clocks && !ix) || !b || !err || !cand || !dist || !nc)
        goto out;
    /* sends in b[0..n_send), receives after them, each part by end */
    size_t ks = 0, kr = n_send;
    for (size_t i = 0; i < n_rows; i++) {
        const mt_crow_t *r = &rows[i];
        if (r->peer >= 0 || (r->flags & MT_CI_CPU) || (r->kind != MT_COLLK_SEND && r->kind != MT_COLLK_RECV))
            continue;
        const mt_clock_t *c = ix ? clock_of(ix, n_clocks, clocks, r->rank) : NULL;
        blind_t x = {.end = mt_clock_apply(c, r->end_ns), .rank = r->rank, .row = (uint32_t)i};
        b[r->kind == MT_COLLK_SEND ? ks++ : kr++] = x;
    }
    qsort(b, n_send, sizeof *b, blind_cmp);
    qsort(b + n_send, n_recv, sizeof *b, blind_cmp);
    double err_max = 0;
    for (size_t k = 0; k < n_send + n_recv; k++) {
        err[k] = blind_err(ix, n_clocks, clocks, b[k].rank);
        if (err[k] > err_max)
            err_max = err[k];
    }
    size_t paired_s = 0, paired_r = 0, nvote = 0;
    for (size_t k = 0; k < n_send + n_recv; k++) {
        bool snd = k < n_send;
        nc[k] = (uint8_t)blind_near(&b[k], snd ? b + n_send : b, snd ? n_recv : n_send, &err[k], err_max, ix,
                                    n_clocks, clocks, cand + k * BLIND_NEAR, dist + k * BLIND_NEAR);
        paired_s += snd && nc[k];
        paired_r += !snd && nc[k];
        nvote += nc[k];
    }
    if (paired_s * 100 < n_send * BLIND_MIN_PAIRED_PCT || paired_r * 100 < n_recv * BLIND_MIN_PAIRED_PCT) {
        snprintf(why, cap,
                 "%zu %s, and only %zu of %zu sends and %zu of %zu receives end together with one on another rank "
                 "(within %.0f us after alignment; a transfer's two kernels end together, so the clocks of their "
                 "ranks may be off: their pairs could not be told before alignment, and their collectives were "
                 "matched by stream order alone): %s",
                 blind, head, paired_s, n_send, paired_r, n_recv, (BLIND_TOL_NS + 2 * err_max) / 1000, tail);
        st = MT_OK;
        goto out;
    }
    /* votes per pair of ranks; pairs seen rarely are ends that met by chance */
    v = malloc((nvote ? nvote : 1) * sizeof *v);
    if (!v)
        goto out;
    size_t nv = 0;
    for (size_t k = 0; k < n_send + n_recv; k++)
        for (size_t q = 0; q < nc[k]; q++) {
            int32_t a = b[k].rank, o = cand[k * BLIND_NEAR + q];
            v[nv++] = (vote_t){.lo = a < o ? a : o, .hi = a < o ? o : a, .n = 1};
        }
    qsort(v, nv, sizeof *v, vote_cmp);
    size_t w = 0;
    for (size_t k = 0; k < nv; k++)
        if (w && v[w - 1].lo == v[k].lo && v[w - 1].hi == v[k].hi)
            v[w - 1].n++;
        else
            v[w++] = v[k];
    nv = w;
    int64_t *cnt = malloc((nv ? nv : 1) * sizeof *cnt);
    if (!cnt)
        goto out;
    for (size_t k = 0; k < nv; k++)
        cnt[k] = v[k].n;
    int64_t med = mt_stats_median_i64(cnt, nv);
    free(cnt);
    /* each paired kernel as a row naming its nearest kept candidate: the
     * stages then come out as they do from rows that name their peers (a
     * stage's every rank is in them through its own kernels) */
    syn = malloc((n_send + n_recv) * sizeof *syn);
    if (!syn)
        goto out;
    size_t ns = 0;
    for (size_t k = 0; k < n_send + n_recv; k++) {
        long best = -1;
        for (size_t q = 0; q < nc[k]; q++) {
            size_t at = k * BLIND_NEAR + q;
            if (vote_of(v, nv, b[k].rank, cand[at])->n * BLIND_WEAK_DIV >= med &&
                (best < 0 || dist[at] < dist[best] || (dist[at] == dist[best] && cand[at] < cand[best])))
                best = (long)at;
        }
        if (best < 0)
            continue;
        syn[ns] = rows[b[k].row];
        syn[ns++].peer = cand[best];
    }
    st = mt_pp_stages_infer(syn, ns, clocks, n_clocks, out);
    if (st != MT_OK)
        goto out;
    if (out->n < 2) {
        snprintf(why, cap,
                 "%zu %s; their ends pair %zu sends with receives on other ranks, but the pairs make no chain of "
                 "stages (a cycle, as in an interleaved schedule): %s",
                 blind, head, paired_s, tail);
        goto out;
    }
    /* every paired kernel's candidates in one stage, not its own: else the
     * ends could belong to another stage's transfer, and the order is a guess */
    size_t nby = out->first[out->n];
    by = malloc((nby ? nby : 1) * sizeof *by);
    if (!by) {
        mt_pp_stages_free(out);
        st = MT_ERR_NOMEM;
        goto out;
    }
    for (size_t i = 0; i < out->n; i++)
        for (size_t k = out->first[i]; k < out->first[i + 1]; k++)
            by[k] = (clk_ix_t){out->ranks[k], (uint32_t)i};
    qsort(by, nby, sizeof *by, clk_ix_cmp);
    size_t split = 0, paired = 0;
    for (size_t k = 0; k < n_send + n_recv; k++) {
        if (!nc[k])
            continue;
        paired++;
        long own = stage_of(by, nby, b[k].rank), first = -2;
        bool bad = own < 0, kept = false;
        for (size_t q = 0; q < nc[k] && !bad; q++) {
            int32_t o = cand[k * BLIND_NEAR + q];
            if (vote_of(v, nv, b[k].rank, o)->n * BLIND_WEAK_DIV < med)
                continue; /* left out above */
            long sq = stage_of(by, nby, o);
            bad = sq < 0 || sq == own || (first != -2 && sq != first);
            first = sq;
            kept = true;
        }
        paired -= !kept && !bad;
        split += bad;
    }
    if (split * 100 > paired * BLIND_MAX_SPLIT_PCT) {
        snprintf(why, cap,
                 "%zu %s; %zu of the %zu kernels their ends pair end together with kernels of more than one other "
                 "stage, so which way the data went is not settled: %s",
                 blind, head, split, paired, tail);
        mt_pp_stages_free(out);
        goto out;
    }
    out->source = MT_PP_FROM_P2P_ENDS;
    snprintf(why, cap,
             "stages inferred from the ends of %zu send/recv kernels that name no peer (no collective metadata): "
             "%zu of %zu sends and %zu of %zu receives end with one on another rank; --pp-stages overrides",
             blind, paired_s, n_send, paired_r, n_recv);
out:
    free(ix);
    free(b);
    free(err);
    free(cand);
    free(dist);
    free(nc);
    free(v);
    free(syn);
    free(by);
    return st;
}

/* ---- the job ---- */

void mt_pipeline_free(mt_pipeline_t *p)
{
    if (!p)
        return;
    mt_pp_stages_free(&p->stages);
    free(p->key);
    free(p->emit_ns);
    free(p->period_ns);
    free(p->hidden_ns);
    free(p->score);
    free(p->latency_ns);
    free(p->latency_raw_ns);
    free(p->stage_ns);
    free(p->stage_max_ns);
    free(p->stage_sum);
    free(p);
}

static const mt_rank_analysis_t *analysis_of(const mt_rank_analysis_t *const *an, size_t n, int32_t rank)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t m = lo + (hi - lo) / 2;
        if (an[m]->rank == rank)
            return an[m];
        if (an[m]->rank < rank)
            lo = m + 1;
        else
            hi = m;
    }
    return NULL;
}

/* The chunks of one marker in a result: [*b, *e) of a->chunks (sorted by
 * marker, then start). */
static void marker_span(const mt_rank_analysis_t *a, uint32_t marker, size_t *b, size_t *e)
{
    size_t i = 0;
    *b = *e = 0;
    if (!a)
        return;
    while (i < a->n_chunks && a->chunks[i].marker < marker)
        i++;
    *b = i;
    while (i < a->n_chunks && a->chunks[i].marker == marker)
        i++;
    *e = i;
}

/* A key index of one rank's chunks of one marker: (key, position) sorted,
 * so finding chunk #N costs O(log c) instead of a scan. */
typedef struct kidx {
    int64_t key;
    size_t i;   /* index into a->chunks */
} kidx_t;

static int kidx_cmp(const void *pa, const void *pb)
{
    const kidx_t *x = pa, *y = pb;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

/* The index of a->chunks[b, e) (never NULL on success, even when empty). */
static kidx_t *kidx_build(const mt_rank_analysis_t *a, size_t b, size_t e)
{
    kidx_t *k = malloc((e > b ? e - b : 1) * sizeof *k);
    if (!k)
        return NULL;
    for (size_t i = b; i < e; i++)
        k[i - b] = (kidx_t){a->chunks[i].key, i};
    if (e - b > 1)
        qsort(k, e - b, sizeof *k, kidx_cmp);
    return k;
}

/* The chunk with key k (by_key: the earliest when a key repeats) or with
 * ordinal k among a->chunks[b, e), or NULL. */
static const mt_pp_chunk_t *chunk_find(const mt_rank_analysis_t *a, size_t b, size_t e, const kidx_t *ix, int by_key,
                                       int64_t k)
{
    if (!by_key)
        return k >= 0 && (size_t)k < e - b ? &a->chunks[b + (size_t)k] : NULL;
    size_t lo = 0, hi = e - b;
    while (lo < hi) {
        size_t m = lo + (hi - lo) / 2;
        if (ix[m].key < k)
            lo = m + 1;
        else
            hi = m;
    }
    return lo < e - b && ix[lo].key == k ? &a->chunks[ix[lo].i] : NULL;
}

/* Round-half-up mean of v[0..n) (as the generator's truth rounds). */
static int64_t mean_i64(const int64_t *v, size_t n)
{
    if (!n)
        return 0;
    int64_t s = 0;
    for (size_t i = 0; i < n; i++)
        s += v[i];
    int64_t q = 2 * s + (int64_t)n, d = 2 * (int64_t)n;
    int64_t r = q / d;
    return (q % d && q < 0) ? r - 1 : r; /* floor */
}

static int64_t scaled(const mt_clock_t *c, int64_t ns)
{
    if (!c || c->drift_ppm == 0.0)
        return ns;
    return (int64_t)llround((double)ns * (1.0 + c->drift_ppm * 1e-6));
}

/* Emit, period, hidden, score and latency of every chunk with one set of
 * clocks (ix NULL: own clocks), and the summary over chunks >= warmup. */
static mt_status_t measure(mt_pipeline_t *p, const mt_pp_chunk_t *const *lead_first, const mt_pp_chunk_t *const *lead_last,
                           const mt_clock_t *c_first, const mt_clock_t *c_last, int64_t *emit, int64_t *latency,
                           int64_t *period, int64_t *hidden, double *score, mt_pp_summary_t *sum)
{
    size_t S = p->stages.n, C = p->n_chunks;
    for (size_t c = 0; c < C; c++) {
        const mt_pp_chunk_t *f = lead_first[c], *l = lead_last[c];
        int64_t end = l->acts ? l->last_ns : l->cpu_end_ns;
        int64_t start = f->acts ? f->first_ns : f->cpu_start_ns;
        emit[c] = mt_clock_apply(c_last, end);
        latency[c] = emit[c] - mt_clock_apply(c_first, start);
        int64_t tot = 0, mx = 0;
        for (size_t s = 0; s < S; s++) {
            int64_t v = p->stage_ns[c * S + s];
            tot += v;
            if (v > mx)
                mx = v;
        }
        if (c == 0) {
            period[c] = -1;
            hidden[c] = 0;
            score[c] = -1;
            continue;
        }
        period[c] = emit[c] - emit[c - 1];
        hidden[c] = tot - period[c];
        int64_t den = tot - mx;
        double sc = den > 0 ? (double)hidden[c] / (double)den : 0.0;
        score[c] = sc < 0 ? 0 : sc > 1 ? 1 : sc;
    }
    memset(sum, 0, sizeof *sum);
    sum->overlap_score = -1;
    size_t from = (size_t)(p->warmup > 0 ? p->warmup : 0);
    if (from < 1)
        from = 1; /* the first chunk has no period */
    if (C <= from)
        return MT_OK;
    size_t n = C - from;
    int64_t *v = malloc(n * sizeof *v), *lat = malloc(n * sizeof *lat);
    if (!v || !lat) {
        free(v);
        free(lat);
        return MT_ERR_NOMEM;
    }
    int64_t hid = 0, den = 0;
    for (size_t c = from; c < C; c++) {
        v[c - from] = period[c];
        lat[c - from] = latency[c];
        int64_t tot = 0, mx = 0;
        for (size_t s = 0; s < S; s++) {
            int64_t x = p->stage_ns[c * S + s];
            tot += x;
            if (x > mx)
                mx = x;
        }
        hid += hidden[c];
        den += tot - mx;
    }
    sum->used = n;
    sum->period_mean_ns = mean_i64(v, n);
    qsort(v, n, sizeof *v, mt_cmp_i64);
    qsort(lat, n, sizeof *lat, mt_cmp_i64);
    sum->period_p50_ns = mt_stats_pct_sorted(v, n, 50);
    sum->period_p90_ns = mt_stats_pct_sorted(v, n, 90);
    sum->period_p99_ns = mt_stats_pct_sorted(v, n, 99);
    sum->latency_p50_ns = mt_stats_pct_sorted(lat, n, 50);
    sum->latency_p99_ns = mt_stats_pct_sorted(lat, n, 99);
    sum->hidden_ns = hid;
    sum->hideable_ns = den;
    double sc = den > 0 ? (double)hid / (double)den : 0.0;
    sum->overlap_score = sc < 0 ? 0 : sc > 1 ? 1 : sc;
    free(v);
    free(lat);
    return MT_OK;
}

mt_status_t mt_pipeline_analyze(mt_pp_stages_t *stages, const mt_pp_opts_t *o, const mt_rank_analysis_t *const *an,
                                size_t n_an, const mt_clock_t *clocks, size_t n_clocks, mt_pipeline_t **out)
{
    *out = NULL;
    mt_pipeline_t *p = calloc(1, sizeof *p);
    if (!p)
        return MT_ERR_NOMEM;
    p->stages = *stages;
    memset(stages, 0, sizeof *stages);
    p->warmup = o ? o->warmup : 1;
    p->critical_stage = -1;
    p->sum.overlap_score = p->raw.overlap_score = -1;
    mt_status_t st = MT_ERR_NOMEM;
    size_t S = p->stages.n;
    clk_ix_t *ix = clocks ? clock_index(clocks, n_clocks) : NULL;
    const mt_rank_analysis_t **lead = calloc(S ? S : 1, sizeof *lead);
    size_t *lb = calloc(S ? S : 1, sizeof *lb), *le = calloc(S ? S : 1, sizeof *le);
    kidx_t **lix = calloc(S ? S : 1, sizeof *lix);
    int64_t *keys = NULL, *tmp = NULL, *raw_emit = NULL, *raw_period = NULL, *raw_hidden = NULL;
    double *raw_score = NULL;
    const mt_pp_chunk_t **cf = NULL, **cl = NULL;
    p->stage_sum = calloc(S ? S : 1, sizeof *p->stage_sum);
    if ((clocks && !ix) || !lead || !lb || !le || !lix || !p->stage_sum)
        goto out;

    /* The leaders' chunk lists, and whether they all carry #N keys (each
     * key once on a leader). */
    int by_key = 1;
    size_t min_count = SIZE_MAX, total = 0;
    for (size_t s = 0; s < S; s++) {
        int32_t leader = p->stages.ranks[p->stages.first[s]];
        lead[s] = analysis_of(an, n_an, leader);
        marker_span(lead[s], p->stages.marker[s], &lb[s], &le[s]);
        size_t cnt = le[s] - lb[s];
        total += cnt;
        if (cnt < min_count)
            min_count = cnt;
        lix[s] = lead[s] ? kidx_build(lead[s], lb[s], le[s]) : calloc(1, sizeof **lix);
        if (!lix[s])
            goto out;
        for (size_t i = 0; i < cnt && by_key; i++)
            if (lix[s][i].key < 0 || (i && lix[s][i].key == lix[s][i - 1].key))
                by_key = 0;
    }
    if (!S || min_count == 0 || min_count == SIZE_MAX) {
        p->unmatched = total;
        st = MT_OK;
        goto out;
    }
    /* The chunks every stage has. */
    size_t C = 0;
    keys = malloc(min_count * sizeof *keys);
    tmp = malloc((total ? total : 1) * sizeof *tmp);
    if (!keys || !tmp)
        goto out;
    if (by_key) {
        size_t n0 = le[0] - lb[0];
        for (size_t i = 0; i < n0; i++)
            tmp[i] = lead[0]->chunks[lb[0] + i].key;
        qsort(tmp, n0, sizeof *tmp, mt_cmp_i64);
        for (size_t i = 0; i < n0; i++) {
            int all = 1;
            for (size_t s = 1; s < S && all; s++)
                all = chunk_find(lead[s], lb[s], le[s], lix[s], 1, tmp[i]) != NULL;
            if (all && C < min_count)
                keys[C++] = tmp[i];
        }
    } else {
        for (size_t i = 0; i < min_count; i++)
            keys[C++] = (int64_t)i;
    }
    p->by_key = by_key;
    p->n_chunks = C;
    p->unmatched = total - C * S;
    p->key = malloc((C ? C : 1) * sizeof *p->key);
    p->emit_ns = malloc((C ? C : 1) * sizeof *p->emit_ns);
    p->period_ns = malloc((C ? C : 1) * sizeof *p->period_ns);
    p->hidden_ns = malloc((C ? C : 1) * sizeof *p->hidden_ns);
    p->score = malloc((C ? C : 1) * sizeof *p->score);
    p->latency_ns = malloc((C ? C : 1) * sizeof *p->latency_ns);
    p->latency_raw_ns = malloc((C ? C : 1) * sizeof *p->latency_raw_ns);
    p->stage_ns = malloc((C && S ? C * S : 1) * sizeof *p->stage_ns);
    p->stage_max_ns = malloc((C && S ? C * S : 1) * sizeof *p->stage_max_ns);
    raw_emit = malloc((C ? C : 1) * sizeof *raw_emit);
    raw_period = malloc((C ? C : 1) * sizeof *raw_period);
    raw_hidden = malloc((C ? C : 1) * sizeof *raw_hidden);
    raw_score = malloc((C ? C : 1) * sizeof *raw_score);
    cf = malloc((C ? C : 1) * sizeof *cf);
    cl = malloc((C ? C : 1) * sizeof *cl);
    if (!p->key || !p->emit_ns || !p->period_ns || !p->hidden_ns || !p->score || !p->latency_ns ||
        !p->latency_raw_ns || !p->stage_ns || !p->stage_max_ns || !raw_emit || !raw_period || !raw_hidden ||
        !raw_score || !cf || !cl)
        goto out;
    memcpy(p->key, keys, C * sizeof *keys);

    /* Stage busy per chunk: the leader's, and the largest of the stage. */
    for (size_t s = 0; s < S; s++) {
        int32_t leader = p->stages.ranks[p->stages.first[s]];
        const mt_clock_t *lc = ix ? clock_of(ix, n_clocks, clocks, leader) : NULL;
        for (size_t c = 0; c < C; c++) {
            const mt_pp_chunk_t *ch = chunk_find(lead[s], lb[s], le[s], lix[s], by_key, keys[c]);
            p->stage_ns[c * S + s] = p->stage_max_ns[c * S + s] = scaled(lc, ch->busy_ns);
            if (s == 0)
                cf[c] = ch;
            if (s == S - 1)
                cl[c] = ch;
        }
        for (size_t r = p->stages.first[s] + 1; r < p->stages.first[s + 1]; r++) {
            const mt_rank_analysis_t *a = analysis_of(an, n_an, p->stages.ranks[r]);
            if (!a)
                continue;
            size_t b, e;
            marker_span(a, p->stages.marker[s], &b, &e);
            kidx_t *rx = kidx_build(a, b, e);
            if (!rx)
                goto out;
            const mt_clock_t *xc = ix ? clock_of(ix, n_clocks, clocks, p->stages.ranks[r]) : NULL;
            for (size_t c = 0; c < C; c++) {
                const mt_pp_chunk_t *x = chunk_find(a, b, e, rx, by_key, keys[c]);
                int64_t w = x ? scaled(xc, x->busy_ns) : 0;
                if (x && w > p->stage_max_ns[c * S + s])
                    p->stage_max_ns[c * S + s] = w;
            }
            free(rx);
        }
    }
    int32_t r_first = p->stages.ranks[p->stages.first[0]], r_last = p->stages.ranks[p->stages.first[S - 1]];
    const mt_clock_t *c_first = ix ? clock_of(ix, n_clocks, clocks, r_first) : NULL;
    const mt_clock_t *c_last = ix ? clock_of(ix, n_clocks, clocks, r_last) : NULL;
    st = measure(p, cf, cl, NULL, NULL, raw_emit, p->latency_raw_ns, raw_period, raw_hidden, raw_score, &p->raw);
    if (st == MT_OK)
        st = measure(p, cf, cl, c_first, c_last, p->emit_ns, p->latency_ns, p->period_ns, p->hidden_ns, p->score,
                     &p->sum);
    if (st != MT_OK)
        goto out;
    st = MT_ERR_NOMEM;

    /* Per stage: busy p50 / mean, of the slowest rank too, bubble. */
    size_t from = (size_t)(p->warmup > 0 ? p->warmup : 0);
    if (from < 1)
        from = 1;
    if (C > from) {
        size_t n = C - from;
        int64_t *v = malloc(n * sizeof *v);
        if (!v)
            goto out;
        int64_t per_sum = 0;
        for (size_t c = from; c < C; c++)
            per_sum += p->period_ns[c];
        int64_t best = INT64_MIN;
        for (size_t s = 0; s < S; s++) {
            mt_pp_stage_sum_t *q = &p->stage_sum[s];
            int64_t busy_sum = 0;
            for (size_t c = from; c < C; c++) {
                v[c - from] = p->stage_ns[c * S + s];
                busy_sum += v[c - from];
            }
            q->busy_mean_ns = mean_i64(v, n);
            qsort(v, n, sizeof *v, mt_cmp_i64);
            q->busy_p50_ns = mt_stats_pct_sorted(v, n, 50);
            for (size_t c = from; c < C; c++)
                v[c - from] = p->stage_max_ns[c * S + s];
            q->max_mean_ns = mean_i64(v, n);
            qsort(v, n, sizeof *v, mt_cmp_i64);
            q->max_p50_ns = mt_stats_pct_sorted(v, n, 50);
            double b = per_sum > 0 ? (double)(per_sum - busy_sum) * 100.0 / (double)per_sum : 0.0;
            q->bubble_pct = b > 0 ? b : 0;
            if (q->busy_mean_ns > best) {
                best = q->busy_mean_ns;
                p->critical_stage = (int)s;
            }
        }
        /* Spikes: periods at or above the p99 and above the p50, largest
         * first (earlier chunk first on ties). */
        for (size_t c = from; c < C; c++) {
            int64_t x = p->period_ns[c];
            if (x < p->sum.period_p99_ns || x <= p->sum.period_p50_ns)
                continue;
            size_t k = p->n_spikes;
            while (k > 0 && p->period_ns[p->spikes[k - 1]] < x) {
                if (k < MT_PP_SPIKES)
                    p->spikes[k] = p->spikes[k - 1];
                k--;
            }
            if (k < MT_PP_SPIKES)
                p->spikes[k] = c;
            if (p->n_spikes < MT_PP_SPIKES)
                p->n_spikes++;
        }
        free(v);
    }
    st = MT_OK;
out:
    free(ix);
    free(lead);
    free(lb);
    free(le);
    for (size_t s = 0; lix && s < S; s++)
        free(lix[s]);
    free(lix);
    free(keys);
    free(tmp);
    free(raw_emit);
    free(raw_period);
    free(raw_hidden);
    free(raw_score);
    free(cf);
    free(cl);
    if (st != MT_OK) {
        mt_pipeline_free(p);
        return st;
    }
    *out = p;
    return MT_OK;
}

/* ---- text ---- */

static void ms_str(char *b, size_t cap, int64_t ns)
{
    snprintf(b, cap, "%.2f ms", (double)ns / 1e6);
}

void mt_pipeline_verdict(const mt_pipeline_t *p, char *buf, size_t cap)
{
    if (!cap)
        return;
    if (!p || p->sum.used == 0 || p->critical_stage < 0) {
        snprintf(buf, cap, "no chunk after the warm-up was seen on every stage: no period");
        return;
    }
    char per[32], st[32];
    ms_str(per, sizeof per, p->sum.period_p50_ns);
    const mt_pp_stage_sum_t *c = &p->stage_sum[p->critical_stage];
    ms_str(st, sizeof st, c->busy_p50_ns);
    double s = p->sum.overlap_score;
    if (s >= 0.8) {
        snprintf(buf, cap, "period %s ~ %s (%s); OverlapScore %.2f -- overlapped", per,
                 p->stages.name[p->critical_stage], st, s);
    } else if (s <= 0.2) {
        size_t n = 0;
        char names[160] = "";
        for (size_t i = 0; i < p->stages.n && n + 40 < sizeof names; i++)
            n += (size_t)snprintf(names + n, sizeof names - n, "%s%s", i ? " + " : "", p->stages.name[i]);
        snprintf(buf, cap, "period %s ~ %s; OverlapScore %.2f -- serialized", per, names, s);
    } else {
        snprintf(buf, cap, "period %s between %s (%s) and the sum of the stages; OverlapScore %.2f -- partly overlapped",
                 per, p->stages.name[p->critical_stage], st, s);
    }
}
