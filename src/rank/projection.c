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

/* A range's launches: indices [i, j) into the sorted launches, for one
 * name group. 32-bit: launches are activities, at most one per event. */
typedef struct seg {
    uint32_t group;
    uint32_t i, j;
} seg_t;

typedef struct group {
    uint32_t name;       /* strtab id; UINT32_MAX = "ProfilerStep#*" */
    uint32_t cut;        /* 1: nm is a name without its per-call fields (per_call_len) */
    uint64_t count;
    int64_t cpu, gpu, span;
    int64_t gpu_same;    /* gpu counting the ranges' own thread's launches only */
    const char *nm;      /* borrowed name bytes */
    size_t nm_len;
} group_t;

static const char k_step[] = "ProfilerStep#*";

/* The length of an annotation's name without the per-call fields that
 * PyTorch's emit_nvtx appends (Nsight exports: "aten::mul, seq = 46174,
 * op_id = 993406", "flash_attn::_flash_attn_forward, op_id = 12, sizes =
 * [...]"): each call was a row of its own, count 1, in the projection
 * table and the A/B movers (issue 39 papercut). The calls of one name are
 * one group, as ProfilerStep#N are. len when there are none. */
static size_t per_call_len(const char *nm, size_t len)
{
    static const char *const field[] = {", seq = ", ", op_id = ", ", sizes = ", ", input_op_ids = "};
    size_t cut = len;
    for (size_t f = 0; f < sizeof field / sizeof *field; f++) {
        size_t fl = strlen(field[f]);
        for (size_t i = 1; i + fl <= cut; i++)
            if (nm[i] == ',' && !memcmp(nm + i, field[f], fl)) {
                cut = i;
                break;
            }
    }
    return cut;
}

/* A CPU thread as the attribution rules see it: (pid, flags, tid), with
 * tid 0 and only the pid flag under the process rule. */
typedef struct thr {
    int64_t pid, tid;
    uint32_t flags;
} thr_t;

static int thr_cmp(const thr_t *a, const thr_t *b)
{
    if (a->pid != b->pid)
        return a->pid < b->pid ? -1 : 1;
    if (a->flags != b->flags)
        return a->flags < b->flags ? -1 : 1;
    if (a->tid != b->tid)
        return a->tid < b->tid ? -1 : 1;
    return 0;
}

static thr_t launch_thr(const mt_an_input_t *in, const mt_gpu_act_t *x, int by_thread, uint32_t fmask)
{
    return (thr_t){.pid = mt_act_launch_pid(in, x), .tid = by_thread ? mt_act_launch_tid(in, x) : 0,
                   .flags = x->launch_flags & fmask};
}

/* The launches of one CPU thread: sorted launches [begin, end). */
typedef struct tblock {
    thr_t thr;
    size_t begin, end;
} tblock_t;

/* The block of thread r, or NULL. Blocks are sorted by thread. */
static const tblock_t *find_block(const tblock_t *b, size_t n, const thr_t *r)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t m = lo + (hi - lo) / 2;
        int c = thr_cmp(&b[m].thr, r);
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

/* Min of gs and max of ge over any index range of the sorted launches
 * (activity acts[ord[x]] for launch x): a bottom-up segment tree (2m
 * entries) over blocks of SPAN_BLOCK launches, the partial blocks at a
 * range's ends read from the activities, so a range's gpu_span costs
 * O(log n + SPAN_BLOCK) however many launches it holds. Blocks rather
 * than single launches keep the tree at 2 bytes per launch instead of 32
 * (it lives at the per-rank passes' memory peak). */
#define SPAN_BLOCK 16

typedef struct span_tree {
    const mt_gpu_act_t *acts;
    const uint32_t *ord;
    size_t m;            /* leaves: blocks of SPAN_BLOCK launches */
    int64_t *mn, *mx;
} span_tree_t;

static void span_scan(const span_tree_t *st, size_t i, size_t j, int64_t *mn, int64_t *mx)
{
    for (; i < j; i++) {
        const mt_gpu_act_t *x = &st->acts[st->ord[i]];
        if (x->start_ns < *mn)
            *mn = x->start_ns;
        if (x->end_ns > *mx)
            *mx = x->end_ns;
    }
}

static int span_tree_build(span_tree_t *st, const mt_gpu_act_t *acts, const uint32_t *ord, size_t n)
{
    st->acts = acts;
    st->ord = ord;
    st->m = n / SPAN_BLOCK; /* whole blocks; a last partial block is always scanned */
    size_t m = st->m;
    st->mn = malloc(2 * (m ? m : 1) * sizeof *st->mn);
    st->mx = malloc(2 * (m ? m : 1) * sizeof *st->mx);
    if (!st->mn || !st->mx)
        return -1;
    for (size_t b = 0; b < m; b++) {
        int64_t mn = INT64_MAX, mx = INT64_MIN;
        span_scan(st, b * SPAN_BLOCK, (b + 1) * SPAN_BLOCK, &mn, &mx);
        st->mn[m + b] = mn;
        st->mx[m + b] = mx;
    }
    for (size_t i = m; i-- > 1;) {
        st->mn[i] = st->mn[2 * i] < st->mn[2 * i + 1] ? st->mn[2 * i] : st->mn[2 * i + 1];
        st->mx[i] = st->mx[2 * i] > st->mx[2 * i + 1] ? st->mx[2 * i] : st->mx[2 * i + 1];
    }
    return 0;
}

/* max(ge) - min(gs) over launches [i, j), j > i. */
static int64_t span_tree_query(const span_tree_t *st, size_t i, size_t j)
{
    int64_t mn = INT64_MAX, mx = INT64_MIN;
    size_t bi = (i + SPAN_BLOCK - 1) / SPAN_BLOCK, bj = j / SPAN_BLOCK; /* whole blocks [bi, bj) */
    if (bj > st->m)
        bj = st->m;
    if (bi >= bj) {
        span_scan(st, i, j, &mn, &mx);
        return mx - mn;
    }
    span_scan(st, i, bi * SPAN_BLOCK, &mn, &mx);
    span_scan(st, bj * SPAN_BLOCK, j, &mn, &mx);
    for (size_t lo = bi + st->m, hi = bj + st->m; lo < hi; lo /= 2, hi /= 2) {
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
 * of its process (pid) on any thread. The ranges are in->ranges, range k of
 * group rg[k]. Writes g[].gpu_same (by_thread) or g[].gpu and g[].span. key
 * and perm hold max(n_ranges, n_acts) entries.
 *
 * Memory: this runs at the per-rank passes' peak, so the launches are
 * kept as activity indices (ord, 4 bytes) and launch times (8 bytes)
 * rather than copies of their fields; the rest is read from in->acts. */
static mt_status_t attribute(const mt_an_input_t *in, const uint32_t *rg, group_t *g, int by_thread, uint64_t *key,
                             uint32_t *perm)
{
    mt_status_t st = MT_ERR_NOMEM;
    const mt_gpu_act_t *acts = in->acts;
    const mt_event_t *ev = in->t->events;
    const size_t nr = in->n_ranges;
    uint32_t *ord = NULL;
    int64_t *lts = NULL;
    tblock_t *blk = NULL;
    seg_t *sg = NULL;
    mt_interval_t *buf = NULL;
    span_tree_t tree = {0};
    size_t nl = 0, nsg = 0;
    const uint32_t fmask = by_thread ? (MT_EV_PID_STR | MT_EV_TID_STR) : MT_EV_PID_STR;

    ord = malloc((in->n_acts ? in->n_acts : 1) * sizeof *ord);
    if (!ord)
        goto out;
    for (size_t i = 0; i < in->n_acts; i++)
        if (acts[i].launch)
            ord[nl++] = (uint32_t)i;
    /* Launches by (pid, flags, tid, ts): stable sorts, least significant
     * field first. Launches with equal (thread, ts) always fall in the same
     * ranges, so their order among themselves changes no result. */
    for (size_t i = 0; i < nl; i++) {
        perm[i] = (uint32_t)i;
        key[i] = mt_sort_key_i64(acts[ord[i]].launch_ns);
    }
    if (mt_sort_u64(key, perm, nl))
        goto out;
    for (size_t i = 0; i < nl; i++)
        key[i] = mt_sort_key_i64(by_thread ? mt_act_launch_tid(in, &acts[ord[perm[i]]]) : 0);
    if (mt_sort_u64(key, perm, nl))
        goto out;
    for (size_t i = 0; i < nl; i++)
        key[i] = acts[ord[perm[i]]].launch_flags & fmask;
    if (mt_sort_u64(key, perm, nl))
        goto out;
    for (size_t i = 0; i < nl; i++)
        key[i] = mt_sort_key_i64(mt_act_launch_pid(in, &acts[ord[perm[i]]]));
    if (mt_sort_u64(key, perm, nl))
        goto out;
    mt_sort_permute(ord, sizeof *ord, perm, nl);
    lts = malloc((nl ? nl : 1) * sizeof *lts);
    if (!lts)
        goto out;
    size_t nb = 0;
    thr_t prev = {0};
    for (size_t i = 0; i < nl; i++) {
        lts[i] = acts[ord[i]].launch_ns;
        thr_t a = launch_thr(in, &acts[ord[i]], by_thread, fmask);
        nb += !i || thr_cmp(&a, &prev) != 0;
        prev = a;
    }
    blk = malloc((nb ? nb : 1) * sizeof *blk);
    if (!blk || span_tree_build(&tree, acts, ord, nl))
        goto out;
    nb = 0;
    for (size_t i = 0; i < nl; i++) {
        thr_t a = launch_thr(in, &acts[ord[i]], by_thread, fmask);
        if (!i || thr_cmp(&a, &blk[nb - 1].thr) != 0)
            blk[nb++] = (tblock_t){.thr = a, .begin = i};
        blk[nb - 1].end = i + 1;
    }
    sg = malloc((nr ? nr : 1) * sizeof *sg);
    if (!sg)
        goto out;
    for (size_t k = 0; k < nr; k++) {
        /* Launches on the range's thread whose call started in [ts, end],
         * both inclusive. */
        const mt_event_t *e = &ev[in->ranges[k]];
        const thr_t rk = {.pid = mt_event_pid(in->t, e), .tid = by_thread ? mt_event_tid(in->t, e) : 0,
                          .flags = e->flags & fmask};
        const tblock_t *b = find_block(blk, nb, &rk);
        if (!b)
            continue;
        size_t i = ts_bound(lts, b->begin, b->end, e->ts, 0);
        size_t j = ts_bound(lts, i, b->end, e->ts + e->dur, 1);
        if (j <= i)
            continue;
        if (!by_thread)
            g[rg[k]].span += span_tree_query(&tree, i, j);
        sg[nsg++] = (seg_t){.group = rg[k], .i = (uint32_t)i, .j = (uint32_t)j};
    }
    /* Segments by (group, i). */
    for (size_t k = 0; k < nsg; k++) {
        perm[k] = (uint32_t)k;
        key[k] = sg[k].i;
    }
    if (mt_sort_u64(key, perm, nsg))
        goto out;
    for (size_t k = 0; k < nsg; k++)
        key[k] = sg[perm[k]].group;
    if (mt_sort_u64(key, perm, nsg))
        goto out;
    mt_sort_permute(sg, sizeof *sg, perm, nsg);

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
                buf[m++] = (mt_interval_t){acts[ord[x]].start_ns, acts[ord[x]].end_ns};
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
    free(ord);
    free(lts);
    free(blk);
    free(sg);
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
    group_t *g = NULL;
    uint32_t *gid = NULL, *perm = NULL, *rg = NULL;
    uint64_t *key = NULL;
    size_t ng = 0, cap_g = 0;
    size_t nmax = nr > in->n_acts ? nr : in->n_acts;

    uint32_t n_names = mt_strtab_count(t->strings);
    rg = malloc(nr * sizeof *rg);
    gid = malloc((n_names ? n_names : 1) * sizeof *gid);
    key = mt_big_malloc(nmax * sizeof *key);
    perm = mt_big_malloc(nmax * sizeof *perm);
    if (!rg || !gid || !key || !perm)
        goto out;
    memset(gid, 0xff, (n_names ? n_names : 1) * sizeof *gid);
    uint32_t step_group = UINT32_MAX;
    for (size_t k = 0; k < nr; k++) {
        const mt_event_t *e = &t->events[in->ranges[k]];
        uint32_t gi = e->name < n_names ? gid[e->name] : UINT32_MAX;
        if (gi == UINT32_MAX) {
            if (MT_GROW(g, cap_g, ng + 1, 64)) /* a group per name met, grown as met */
                goto out;
            size_t len, cut;
            const char *nm = mt_strtab_get(t->strings, e->name, &len);
            if (mt_step_name_num(nm, len) >= 0) {
                if (step_group == UINT32_MAX) {
                    step_group = (uint32_t)ng;
                    g[ng++] = (group_t){.name = UINT32_MAX, .nm = k_step, .nm_len = sizeof k_step - 1};
                }
                gi = step_group;
            } else if ((cut = per_call_len(nm, len)) < len) {
                /* the group of its name without the per-call fields: few
                 * names, many calls (gid remembers each call's id) */
                gi = 0;
                while (gi < ng && !(g[gi].cut && g[gi].nm_len == cut && !memcmp(g[gi].nm, nm, cut)))
                    gi++;
                if (gi == ng)
                    g[ng++] = (group_t){.name = e->name, .cut = 1, .nm = nm, .nm_len = cut};
            } else {
                gi = (uint32_t)ng;
                g[ng++] = (group_t){.name = e->name, .nm = nm, .nm_len = len};
            }
            if (e->name < n_names)
                gid[e->name] = gi;
        }
        g[gi].count++;
        g[gi].cpu += e->dur;
        rg[k] = gi;
    }

    if ((st = attribute(in, rg, g, 1, key, perm)) != MT_OK || (st = attribute(in, rg, g, 0, key, perm)) != MT_OK)
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
    free(rg);
    free(g);
    free(gid);
    free(perm);
    free(key);
    return st;
}
