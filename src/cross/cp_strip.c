/* The per-step strips of report.html (critpath.h mt_cp_strip_t): for the
 * median and the slowest used step, the GPU activities of the ranks most
 * involved and the step's critical path, merged to a bounded number of
 * segments so that a job of thousands of ranks and kernels still draws in
 * a few thousand rectangles. */
#define _POSIX_C_SOURCE 200809L /* strndup */
#include "cross/critpath_int.h"
#include "mergetrace/buf.h"

#include <stdlib.h>
#include <string.h>

/* Segments appended in time order; narrow ones merged (critpath.h mt_cp_seg_t). */
typedef struct merger {
    mt_cp_seg_t *v;
    size_t n, cap;
    int64_t minw;
    bool open;            /* the last segment is a narrow run still growing */
    int64_t run_max;      /* its longest piece (whose rank it takes) */
    const cp_graph_t *g;
} merger_t;

static int set_name(const cp_graph_t *g, mt_cp_seg_t *s, int32_t node, int64_t d)
{
    if (node < 0 || d <= s->name_ns)
        return 0;
    const cp_node_t *n = &g->nodes[node];
    char *nm = strndup(n->name, n->name_len);
    if (!nm)
        return -1;
    free(s->name);
    s->name = nm;
    s->name_ns = d;
    return 0;
}

static int mg_add(merger_t *m, int64_t a, int64_t b, int kind, int32_t node, int32_t rank)
{
    int64_t d = b - a;
    bool narrow = d < m->minw;
    if (narrow && m->open && m->n && a - m->v[m->n - 1].b < m->minw) {
        mt_cp_seg_t *L = &m->v[m->n - 1];
        L->b = b;
        L->kind_ns[kind] += d;
        L->n++;
        if (d > m->run_max) {
            m->run_max = d;
            L->rank = rank;
        }
        int best = 0;
        for (int k = 1; k < MT_CP_KIND_COUNT_; k++)
            if (L->kind_ns[k] > L->kind_ns[best])
                best = k;
        L->kind = (uint8_t)best;
        m->open = L->b - L->a < m->minw;
        return set_name(m->g, L, node, d);
    }
    if (MT_GROW(m->v, m->cap, m->n + 1, 64))
        return -1;
    mt_cp_seg_t *s = &m->v[m->n++];
    *s = (mt_cp_seg_t){.a = a, .b = b, .rank = rank, .n = 1, .kind = (uint8_t)kind};
    s->kind_ns[kind] = d;
    m->open = narrow;
    m->run_max = d;
    return set_name(m->g, s, node, d);
}

/* A row candidate; rows are ordered by most time on this step's path,
 * near-critical, latest end, then rank. */
typedef struct row {
    int64_t path_ns, end_ns;
    int32_t near, rank;
} row_t;

static int row_cmp(const void *pa, const void *pb)
{
    const row_t *x = pa, *y = pb;
    if (x->path_ns != y->path_ns)
        return x->path_ns > y->path_ns ? -1 : 1;
    if (x->near != y->near)
        return x->near > y->near ? -1 : 1;
    if (x->end_ns != y->end_ns)
        return x->end_ns > y->end_ns ? -1 : 1;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

static int32_t rank_index(const cp_graph_t *g, int32_t rank)
{
    size_t lo = 0, hi = g->n_ranks; /* g->ranks ascending */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (g->ranks[mid].rank < rank)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < g->n_ranks && g->ranks[lo].rank == rank ? (int32_t)lo : -1;
}

static mt_status_t build(const cp_graph_t *g, mt_critpath_t *c, size_t j, mt_cp_strip_t *t, const cp_pseg_t *ps,
                         size_t np)
{
    const mt_cp_step_t *s = &c->steps[j];
    t->step = j;
    t->n_ranks_all = s->n;
    int64_t minw = s->time_ns / MT_CP_STRIP_COLS;
    merger_t m = {.minw = minw > 0 ? minw : 1, .g = g};
    /* the critical path */
    for (size_t i = 0; i < np; i++)
        if (mg_add(&m, ps[i].a, ps[i].b, ps[i].kind, ps[i].node, g->ranks[ps[i].rank_i].rank))
            goto nomem;
    t->path = m.v;
    t->n_path = m.n;
    m = (merger_t){.minw = m.minw, .g = g};
    /* the rows */
    row_t *idx = malloc((s->n ? s->n : 1) * sizeof *idx);
    if (!idx)
        return MT_ERR_NOMEM;
    for (uint32_t k = 0; k < s->n; k++) {
        const mt_cp_rank_step_t *y = &c->rank_steps[s->first + k];
        idx[k] = (row_t){y->path_ns, y->end_ns, y->near_critical, y->rank};
    }
    qsort(idx, s->n, sizeof *idx, row_cmp);
    t->n_rows = s->n < MT_CP_STRIP_RANKS ? s->n : MT_CP_STRIP_RANKS;
    t->ranks = malloc((t->n_rows ? t->n_rows : 1) * sizeof *t->ranks);
    t->row_first = calloc(t->n_rows + 1, sizeof *t->row_first);
    if (!t->ranks || !t->row_first) {
        free(idx);
        return MT_ERR_NOMEM;
    }
    for (size_t i = 0; i < t->n_rows; i++) {
        int32_t rank = idx[i].rank;
        t->ranks[i] = rank;
        t->row_first[i] = m.n;
        m.open = false; /* no run across rows */
        int32_t ri = rank_index(g, rank);
        if (ri < 0)
            continue;
        const cp_rank_t *R = &g->ranks[ri];
        /* activities by start: where streams overlap, the one that started first */
        int64_t cur = s->start_ns;
        for (size_t q = R->node0; q < R->node0 + R->n_nodes; q++) {
            const cp_node_t *n = &g->nodes[q];
            if (n->job != (int32_t)j)
                continue;
            int64_t a = n->s > cur ? n->s : cur, b = n->e < s->end_ns ? n->e : s->end_ns;
            if (b <= a)
                continue;
            if (mg_add(&m, a, b, cp_node_kind(n), (int32_t)q, rank)) {
                free(idx);
                goto nomem;
            }
            cur = b;
        }
    }
    free(idx);
    t->row_first[t->n_rows] = m.n;
    t->segs = m.v;
    t->n_segs = m.n;
    return MT_OK;
nomem:
    for (size_t i = 0; i < m.n; i++)
        free(m.v[i].name);
    free(m.v);
    return MT_ERR_NOMEM;
}

size_t cp_strips_pick(const mt_critpath_t *c, size_t pick[2], const char *why[2])
{
    if (!c->used)
        return 0;
    size_t med = SIZE_MAX, slow = SIZE_MAX, n = 0;
    for (size_t j = 0; j < c->n_steps; j++) {
        const mt_cp_step_t *s = &c->steps[j];
        if (!s->used)
            continue;
        if (med == SIZE_MAX && s->time_ns == c->p50_ns)
            med = j;
        if (slow == SIZE_MAX && s->time_ns == c->max_ns)
            slow = j;
    }
    if (med != SIZE_MAX) {
        pick[n] = med;
        why[n++] = "median";
    }
    if (slow != SIZE_MAX && slow != med) {
        pick[n] = slow;
        why[n++] = "slowest";
    }
    return n;
}

mt_status_t cp_strip_add(const cp_graph_t *g, mt_critpath_t *c, size_t j, const char *why, const cp_pseg_t *ps,
                         size_t np)
{
    mt_cp_strip_t *t = &c->strips[c->n_strips++];
    t->why = why;
    return build(g, c, j, t, ps, np);
}
