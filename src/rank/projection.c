/* GPU projection of CPU ranges: for each user_annotation (and, on request,
 * cpu_op) name, the GPU time of the activities launched inside its ranges
 * on any thread of its process, and on its own thread alone (definitions in
 * include/mergetrace/analysis.h). Per rule, launches are sorted by (thread
 * or process, time) and each range finds its own by binary search, so the
 * cost is O(n log n) plus, per name, sorting the activities its ranges hold
 * (each once per name). */
#include "rank/passes.h"
#include "trace/stepname.h"
#include "base/bigmem.h"

#include <stdlib.h>
#include <string.h>

/* One launch of a GPU activity, on its CPU thread. */
typedef struct lrec {
    int64_t pid, tid;
    int64_t ts;          /* launch call start */
    int64_t gs, ge;      /* the activity */
    uint32_t flags;      /* MT_EV_PID_STR | MT_EV_TID_STR of the launch call */
    uint32_t pad_;
} lrec_t;

/* One CPU range. */
typedef struct rrec {
    int64_t pid, tid;
    int64_t ts, end;
    uint32_t flags;
    uint32_t group;      /* index into the name groups */
} rrec_t;

/* A range's launches: lrec indices [i, j), for one name group. */
typedef struct seg {
    uint32_t group;
    uint32_t pad_;
    size_t i, j;
} seg_t;

typedef struct group {
    uint32_t name;       /* strtab id; UINT32_MAX = "ProfilerStep#*" */
    uint32_t pad_;
    uint64_t count;
    int64_t cpu, gpu, span;
    int64_t gpu_same;    /* gpu counting the ranges' own thread's launches only */
    const char *nm;      /* borrowed name bytes */
    size_t nm_len;
} group_t;

static const char k_step[] = "ProfilerStep#*";

static int key_cmp(int64_t pa, uint32_t fa, int64_t ta, int64_t pb, uint32_t fb, int64_t tb)
{
    if (pa != pb)
        return pa < pb ? -1 : 1;
    if (fa != fb)
        return fa < fb ? -1 : 1;
    if (ta != tb)
        return ta < tb ? -1 : 1;
    return 0;
}

/* The launches of one CPU thread: l[begin, end). */
typedef struct tblock {
    int64_t pid, tid;
    uint32_t flags;
    uint32_t pad_;
    size_t begin, end;
} tblock_t;

/* The block of r's thread, or NULL. Blocks are sorted by thread. */
static const tblock_t *find_block(const tblock_t *b, size_t n, const rrec_t *r)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t m = lo + (hi - lo) / 2;
        int c = key_cmp(b[m].pid, b[m].flags, b[m].tid, r->pid, r->flags, r->tid);
        if (!c)
            return &b[m];
        if (c < 0)
            lo = m + 1;
        else
            hi = m;
    }
    return NULL;
}

/* First index in ts[lo, hi) with ts >= t (after = 0) or ts > t (after = 1). */
static size_t ts_bound(const int64_t *ts, size_t lo, size_t hi, int64_t t, int after)
{
    while (lo < hi) {
        size_t m = lo + (hi - lo) / 2;
        if (ts[m] < t || (after && ts[m] == t))
            lo = m + 1;
        else
            hi = m;
    }
    return lo;
}

static int group_cmp(const void *pa, const void *pb)
{
    const group_t *a = pa, *b = pb;
    if (a->gpu != b->gpu)
        return a->gpu > b->gpu ? -1 : 1;
    size_t n = a->nm_len < b->nm_len ? a->nm_len : b->nm_len;
    int c = memcmp(a->nm, b->nm, n);
    if (c)
        return c;
    return (a->nm_len > b->nm_len) - (a->nm_len < b->nm_len);
}

/* Min of gs and max of ge over any index range of the launches: a
 * bottom-up segment tree (2n entries), so a range's gpu_span costs
 * O(log n) however many launches it holds. */
typedef struct span_tree {
    size_t n;
    int64_t *mn, *mx;
} span_tree_t;

static int span_tree_build(span_tree_t *st, const lrec_t *l, size_t n)
{
    st->n = n;
    st->mn = mt_big_malloc(2 * (n ? n : 1) * sizeof *st->mn);
    st->mx = mt_big_malloc(2 * (n ? n : 1) * sizeof *st->mx);
    if (!st->mn || !st->mx)
        return -1;
    for (size_t i = 0; i < n; i++) {
        st->mn[n + i] = l[i].gs;
        st->mx[n + i] = l[i].ge;
    }
    for (size_t i = n; i-- > 1;) {
        st->mn[i] = st->mn[2 * i] < st->mn[2 * i + 1] ? st->mn[2 * i] : st->mn[2 * i + 1];
        st->mx[i] = st->mx[2 * i] > st->mx[2 * i + 1] ? st->mx[2 * i] : st->mx[2 * i + 1];
    }
    return 0;
}

/* max(ge) - min(gs) over [i, j), j > i. */
static int64_t span_tree_query(const span_tree_t *st, size_t i, size_t j)
{
    int64_t mn = INT64_MAX, mx = INT64_MIN;
    for (size_t lo = i + st->n, hi = j + st->n; lo < hi; lo /= 2, hi /= 2) {
        if (lo & 1) {
            if (st->mn[lo] < mn)
                mn = st->mn[lo];
            if (st->mx[lo] > mx)
                mx = st->mx[lo];
            lo++;
        }
        if (hi & 1) {
            hi--;
            if (st->mn[hi] < mn)
                mn = st->mn[hi];
            if (st->mx[hi] > mx)
                mx = st->mx[hi];
        }
    }
    return mx - mn;
}

/* Measures of every group under one attribution rule: by_thread 1 counts a
 * launch for the ranges of its own (pid, tid), by_thread 0 for the ranges
 * of its process (pid) on any thread. Writes g[].gpu_same (by_thread) or
 * g[].gpu and g[].span. key and perm hold max(nr, n_acts) entries. */
static mt_status_t attribute(const mt_an_input_t *in, const rrec_t *r, size_t nr, group_t *g, int by_thread,
                             uint64_t *key, uint32_t *perm)
{
    mt_status_t st = MT_ERR_NOMEM;
    lrec_t *l = NULL, *lt = NULL;
    int64_t *lts = NULL;
    tblock_t *blk = NULL;
    seg_t *sg = NULL, *sgt = NULL;
    mt_interval_t *buf = NULL;
    span_tree_t tree = {0};
    size_t nl = 0, nsg = 0;
    const uint32_t fmask = by_thread ? (MT_EV_PID_STR | MT_EV_TID_STR) : MT_EV_PID_STR;

    lt = mt_big_malloc((in->n_acts ? in->n_acts : 1) * sizeof *lt);
    lts = mt_big_malloc((in->n_acts ? in->n_acts : 1) * sizeof *lts);
    if (!lt || !lts)
        goto out;
    for (size_t i = 0; i < in->n_acts; i++) {
        const mt_gpu_act_t *x = &in->acts[i];
        if (x->launch)
            lt[nl++] = (lrec_t){.pid = x->launch_pid,
                                .tid = by_thread ? x->launch_tid : 0,
                                .ts = x->launch_ns,
                                .gs = x->start_ns,
                                .ge = x->end_ns,
                                .flags = x->launch_flags & fmask};
    }
    /* Launches by (pid, flags, tid, ts): stable sorts, least significant
     * field first. Launches with equal (thread, ts) always fall in the same
     * ranges, so their order among themselves changes no result. */
    for (size_t i = 0; i < nl; i++) {
        perm[i] = (uint32_t)i;
        key[i] = mt_sort_key_i64(lt[i].ts);
    }
    if (mt_sort_u64(key, perm, nl))
        goto out;
    for (size_t i = 0; i < nl; i++)
        key[i] = mt_sort_key_i64(lt[perm[i]].tid);
    if (mt_sort_u64(key, perm, nl))
        goto out;
    for (size_t i = 0; i < nl; i++)
        key[i] = lt[perm[i]].flags;
    if (mt_sort_u64(key, perm, nl))
        goto out;
    for (size_t i = 0; i < nl; i++)
        key[i] = mt_sort_key_i64(lt[perm[i]].pid);
    if (mt_sort_u64(key, perm, nl))
        goto out;
    mt_sort_permute(lt, sizeof *lt, perm, nl);
    l = lt;
    lt = NULL;
    size_t nb = 0;
    for (size_t i = 0; i < nl; i++) {
        lts[i] = l[i].ts;
        nb += !i || key_cmp(l[i].pid, l[i].flags, l[i].tid, l[i - 1].pid, l[i - 1].flags, l[i - 1].tid) != 0;
    }
    blk = mt_big_malloc((nb ? nb : 1) * sizeof *blk);
    if (!blk || span_tree_build(&tree, l, nl))
        goto out;
    nb = 0;
    for (size_t i = 0; i < nl; i++) {
        if (!i || key_cmp(l[i].pid, l[i].flags, l[i].tid, l[i - 1].pid, l[i - 1].flags, l[i - 1].tid) != 0)
            blk[nb++] = (tblock_t){.pid = l[i].pid, .tid = l[i].tid, .flags = l[i].flags, .begin = i};
        blk[nb - 1].end = i + 1;
    }
    sgt = mt_big_malloc(nr * sizeof *sgt);
    if (!sgt)
        goto out;
    for (size_t k = 0; k < nr; k++) {
        /* Launches on the range's thread whose call started in [ts, end],
         * both inclusive. */
        const rrec_t rk = {.pid = r[k].pid, .tid = by_thread ? r[k].tid : 0, .flags = r[k].flags & fmask};
        const tblock_t *b = find_block(blk, nb, &rk);
        if (!b)
            continue;
        size_t i = ts_bound(lts, b->begin, b->end, r[k].ts, 0);
        size_t j = ts_bound(lts, i, b->end, r[k].end, 1);
        if (j <= i)
            continue;
        if (!by_thread)
            g[r[k].group].span += span_tree_query(&tree, i, j);
        sgt[nsg++] = (seg_t){.group = r[k].group, .i = i, .j = j};
    }
    /* Segments by (group, i). */
    for (size_t k = 0; k < nsg; k++) {
        perm[k] = (uint32_t)k;
        key[k] = sgt[k].i;
    }
    if (mt_sort_u64(key, perm, nsg))
        goto out;
    for (size_t k = 0; k < nsg; k++)
        key[k] = sgt[perm[k]].group;
    if (mt_sort_u64(key, perm, nsg))
        goto out;
    mt_sort_permute(sgt, sizeof *sgt, perm, nsg);
    sg = sgt;
    sgt = NULL;

    /* Per group: the union of its launch index segments is the set of its
     * activities (each once), whose intervals are then unioned in time. */
    size_t cap = 0;
    for (size_t s = 0; s < nsg;) {
        uint32_t grp = sg[s].group;
        size_t m = 0;
        while (s < nsg && sg[s].group == grp) {
            size_t i = sg[s].i, j = sg[s].j;
            for (s++; s < nsg && sg[s].group == grp && sg[s].i <= j; s++)
                if (sg[s].j > j)
                    j = sg[s].j;
            if (m + (j - i) > cap) {
                size_t nc = cap ? cap : 256;
                while (nc < m + (j - i))
                    nc *= 2;
                mt_interval_t *b = mt_big_realloc(buf, nc * sizeof *b);
                if (!b)
                    goto out;
                buf = b;
                cap = nc;
            }
            for (size_t x = i; x < j; x++)
                buf[m++] = (mt_interval_t){l[x].gs, l[x].ge};
        }
        if (mt_iv_union(buf, &m))
            goto out;
        if (by_thread)
            g[grp].gpu_same = mt_iv_measure(buf, m);
        else
            g[grp].gpu = mt_iv_measure(buf, m);
    }

    st = MT_OK;
out:
    free(l);
    free(lt);
    free(lts);
    free(blk);
    free(sg);
    free(sgt);
    free(buf);
    free(tree.mn);
    free(tree.mx);
    return st;
}

mt_status_t mt_an_projection(const mt_an_input_t *in, mt_rank_analysis_t *a)
{
    const mt_trace_t *t = in->t;
    a->n_proj = 0;
    const size_t nr = in->n_ranges;
    if (!nr)
        return MT_OK;
    mt_status_t st = MT_ERR_NOMEM;
    rrec_t *r = NULL;
    group_t *g = NULL;
    uint32_t *gid = NULL, *perm = NULL;
    uint64_t *key = NULL;
    size_t ng = 0;
    size_t nmax = nr > in->n_acts ? nr : in->n_acts;

    uint32_t n_names = mt_strtab_count(t->strings);
    r = mt_big_malloc(nr * sizeof *r);
    gid = malloc((n_names ? n_names : 1) * sizeof *gid);
    g = mt_big_malloc(nr * sizeof *g); /* at most one group per range */
    key = mt_big_malloc(nmax * sizeof *key);
    perm = mt_big_malloc(nmax * sizeof *perm);
    if (!r || !gid || !g || !key || !perm)
        goto out;
    memset(gid, 0xff, (n_names ? n_names : 1) * sizeof *gid);
    uint32_t step_group = UINT32_MAX;
    for (size_t k = 0; k < nr; k++) {
        const mt_event_t *e = &t->events[in->ranges[k]];
        uint32_t gi = e->name < n_names ? gid[e->name] : UINT32_MAX;
        if (gi == UINT32_MAX) {
            size_t len;
            const char *nm = mt_strtab_get(t->strings, e->name, &len);
            if (mt_step_name_num(nm, len) >= 0) {
                if (step_group == UINT32_MAX) {
                    step_group = (uint32_t)ng;
                    g[ng++] = (group_t){.name = UINT32_MAX, .nm = k_step, .nm_len = sizeof k_step - 1};
                }
                gi = step_group;
            } else {
                gi = (uint32_t)ng;
                g[ng++] = (group_t){.name = e->name, .nm = nm, .nm_len = len};
            }
            if (e->name < n_names)
                gid[e->name] = gi;
        }
        g[gi].count++;
        g[gi].cpu += e->dur;
        r[k] = (rrec_t){e->pid, e->tid, e->ts, e->ts + e->dur, e->flags & (MT_EV_PID_STR | MT_EV_TID_STR), gi};
    }

    if ((st = attribute(in, r, nr, g, 1, key, perm)) != MT_OK ||
        (st = attribute(in, r, nr, g, 0, key, perm)) != MT_OK)
        goto out;
    st = MT_ERR_NOMEM;
    qsort(g, ng, sizeof *g, group_cmp);
    a->proj = calloc(ng ? ng : 1, sizeof *a->proj);
    if (!a->proj)
        goto out;
    st = MT_OK;
    for (size_t k = 0; k < ng && st == MT_OK; k++) {
        mt_an_proj_t *p = &a->proj[a->n_proj++];
        *p = (mt_an_proj_t){.count = g[k].count,
                            .cpu_ns = g[k].cpu,
                            .gpu_ns = g[k].gpu,
                            .gpu_span_ns = g[k].span,
                            .gpu_same_thread_ns = g[k].gpu_same};
        st = mt_an_string_add(a, g[k].nm, g[k].nm_len, &p->name);
    }
out:
    free(r);
    free(g);
    free(gid);
    free(perm);
    free(key);
    return st;
}
