/* How well a rank's two views of its collectives agree: NCCL's GPU times
 * (plugin kernel channels) against Kineto's kernel times, both on the
 * corrected clock. Pairs are mutual nearest neighbours by start within a
 * collective kind. */
#include <stdlib.h>
#include <string.h>

#include "base/stats.h"
#include "base/sort.h"
#include "mergetrace/classify.h"
#include "mergetrace/nccl_input.h"

typedef struct ev {
    int64_t start, end;
    uint8_t kind;
} ev_t;

/* Send, Recv and SendRecv kernels are one kind here: Kineto names P2P
 * kernels SendRecv, NCCL names its tasks Send or Recv. */
static uint8_t kind_class(uint8_t k)
{
    return k == MT_COLLK_SEND || k == MT_COLLK_RECV ? (uint8_t)MT_COLLK_SENDRECV : k;
}

static int ev_cmp(const void *a, const void *b)
{
    const ev_t *x = a, *y = b;
    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return (x->end > y->end) - (x->end < y->end);
}

static int row_rank_cmp(const void *a, const void *b)
{
    const mt_crow_t *p = *(const mt_crow_t *const *)a, *q = *(const mt_crow_t *const *)b;
    return (p->rank > q->rank) - (p->rank < q->rank);
}

/* Index of the element of v[b..e) (sorted by start) whose start is nearest
 * to t; ties go to the earlier one. b < e. */
static size_t nearest(const ev_t *v, size_t b, size_t e, int64_t t)
{
    size_t lo = b, hi = e;
    while (lo < hi) {
        size_t m = lo + (hi - lo) / 2;
        if (v[m].start < t)
            lo = m + 1;
        else
            hi = m;
    }
    if (lo == e)
        return e - 1;
    if (lo == b)
        return b;
    /* |t - v[lo-1]| <= |v[lo] - t|: the earlier one */
    return (uint64_t)(t - v[lo - 1].start) <= (uint64_t)(v[lo].start - t) ? lo - 1 : lo;
}

static uint64_t absdiff(int64_t a, int64_t b)
{
    return a >= b ? (uint64_t)a - (uint64_t)b : (uint64_t)b - (uint64_t)a;
}

/* One rank: nv NCCL events and kv Kineto events (both sorted by kind,
 * start); fills a. ds, de, sd: scratch of min(nn, kn) entries. */
static void agree_rank(const ev_t *nv, size_t nn, const ev_t *kv, size_t kn, int64_t *ds, int64_t *de,
                       int64_t *sd, mt_nccl_agree_t *a)
{
    size_t np = 0;
    size_t kb = 0;
    for (size_t i = 0; i < nn;) {
        size_t ie = i;
        while (ie < nn && nv[ie].kind == nv[i].kind)
            ie++;
        while (kb < kn && kv[kb].kind < nv[i].kind)
            kb++;
        size_t ke = kb;
        while (ke < kn && kv[ke].kind == nv[i].kind)
            ke++;
        for (size_t x = i; kb < ke && x < ie; x++) {
            size_t y = nearest(kv, kb, ke, nv[x].start);
            if (nearest(nv, i, ie, kv[y].start) != x)
                continue; /* not mutual */
            ds[np] = (int64_t)absdiff(nv[x].start, kv[y].start);
            de[np] = (int64_t)absdiff(nv[x].end, kv[y].end);
            sd[np] = nv[x].start - kv[y].start;
            np++;
        }
        i = ie;
        kb = ke;
    }
    a->pairs = np;
    if (!np)
        return;
    qsort(ds, np, sizeof *ds, mt_cmp_i64);
    qsort(de, np, sizeof *de, mt_cmp_i64);
    qsort(sd, np, sizeof *sd, mt_cmp_i64);
    a->start_p50_ns = mt_stats_pct_sorted(ds, np, 50);
    a->start_p99_ns = mt_stats_pct_sorted(ds, np, 99);
    a->end_p50_ns = mt_stats_pct_sorted(de, np, 50);
    a->end_p99_ns = mt_stats_pct_sorted(de, np, 99);
    a->start_median_ns = mt_stats_pct_sorted(sd, np, 50);
}

mt_status_t mt_nccl_agree(const mt_crow_t *rows, size_t n_rows, const mt_clock_t *clocks, size_t n_clocks,
                          mt_nccl_agree_t **out, size_t *n_out)
{
    *out = NULL;
    *n_out = 0;
    if (!n_rows)
        return MT_OK;
    const mt_crow_t **by = malloc(n_rows * sizeof *by);
    ev_t *nv = malloc(n_rows * sizeof *nv), *kv = malloc(n_rows * sizeof *kv);
    int64_t *scratch = malloc(3 * n_rows * sizeof *scratch);
    mt_nccl_agree_t *res = NULL;
    size_t n_res = 0;
    mt_status_t st = MT_OK;
    if (!by || !nv || !kv || !scratch) {
        st = MT_ERR_NOMEM;
        goto out;
    }
    for (size_t i = 0; i < n_rows; i++)
        by[i] = &rows[i];
    qsort(by, n_rows, sizeof *by, row_rank_cmp);
    for (size_t i = 0; i < n_rows;) {
        size_t e = i;
        while (e < n_rows && by[e]->rank == by[i]->rank)
            e++;
        int32_t rank = by[i]->rank;
        const mt_clock_t *c = NULL;
        for (size_t k = 0; k < n_clocks && !c; k++)
            if (clocks[k].rank == rank)
                c = &clocks[k];
        size_t nn = 0, kn = 0;
        for (size_t r = i; r < e; r++) {
            const mt_crow_t *x = by[r];
            ev_t v = {.start = c ? mt_clock_apply(c, x->start_ns) : x->start_ns,
                      .end = c ? mt_clock_apply(c, x->end_ns) : x->end_ns,
                      .kind = kind_class(x->kind)};
            if (x->flags & MT_CI_NCCL)
                nv[nn++] = v;
            else
                kv[kn++] = v;
        }
        i = e;
        if (!nn || !kn)
            continue;
        mt_nccl_agree_t *g = realloc(res, (n_res + 1) * sizeof *g);
        if (!g) {
            st = MT_ERR_NOMEM;
            goto out;
        }
        res = g;
        mt_nccl_agree_t *a = &res[n_res++];
        memset(a, 0, sizeof *a);
        a->rank = rank;
        a->nccl_rows = nn;
        a->kineto_rows = kn;
        qsort(nv, nn, sizeof *nv, ev_cmp);
        qsort(kv, kn, sizeof *kv, ev_cmp);
        agree_rank(nv, nn, kv, kn, scratch, scratch + n_rows, scratch + 2 * n_rows, a);
    }
out:
    free(by);
    free(nv);
    free(kv);
    free(scratch);
    if (st != MT_OK) {
        free(res);
        return st;
    }
    *out = res;
    *n_out = n_res;
    return MT_OK;
}
