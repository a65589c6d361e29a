/* Linking: GPU activity -> launch call (correlation), communication kernel ->
 * its collective (FORMAT.md 6.3), in that order of preference:
 *   1. metadata on the kernel itself (PyTorch >= 2.2);
 *   2. External id -> a record_param_comms cpu_op that carries metadata;
 *   3. the launch call's innermost enclosing nccl:* / record_param_comms /
 *      c10d:: range on the launching thread (unlinked kernels, pre-2.2);
 *   4. an enclosing gpu_user_annotation nccl:* on the kernel's own stream
 *      (ROCm kernels captured without their launch). */
#include "mergetrace/link.h"
#include "base/bigmem.h"

#include <stdlib.h>
#include <string.h>

/* ---- a small open-addressing map uint64 -> uint32 (value 0 = absent) ---- */
typedef struct u64map {
    uint64_t *keys;
    uint32_t *vals;
    size_t mask;
    size_t n;
} u64map_t;

static int map_init(u64map_t *m, size_t n)
{
    size_t cap = 16;
    while (cap < n * 2)
        cap *= 2;
    m->keys = mt_big_malloc(cap * sizeof *m->keys);
    m->vals = mt_big_calloc(cap, sizeof *m->vals);
    m->mask = cap - 1;
    m->n = 0;
    return m->keys && m->vals ? 0 : -1;
}

static void map_free(u64map_t *m)
{
    free(m->keys);
    free(m->vals);
    m->keys = NULL;
    m->vals = NULL;
}

static inline size_t map_slot(uint64_t k, size_t mask)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return (size_t)k & mask;
}

static void map_put_nogrow(u64map_t *m, uint64_t k, uint32_t v)
{
    for (size_t i = map_slot(k, m->mask);; i = (i + 1) & m->mask) {
        if (!m->vals[i]) {
            m->keys[i] = k;
            m->vals[i] = v;
            m->n++;
            return;
        }
        if (m->keys[i] == k)
            return;
    }
}

/* Insert unless present (the first event with a key wins). Grows at half
 * full, so the table is never full. -1 on allocation failure. */
static int map_put(u64map_t *m, uint64_t k, uint32_t v)
{
    if ((m->n + 1) * 2 > m->mask + 1) {
        u64map_t g = {0};
        if (map_init(&g, (m->mask + 1)))
            return -1;
        for (size_t i = 0; i <= m->mask; i++)
            if (m->vals[i])
                map_put_nogrow(&g, m->keys[i], m->vals[i]);
        map_free(m);
        *m = g;
    }
    map_put_nogrow(m, k, v);
    return 0;
}

static uint32_t map_get(const u64map_t *m, uint64_t k)
{
    for (size_t i = map_slot(k, m->mask);; i = (i + 1) & m->mask) {
        if (!m->vals[i])
            return 0;
        if (m->keys[i] == k)
            return m->vals[i];
    }
}

/* ---- ranges that can own a collective ---- */
typedef struct range {
    int64_t pid, tid, ts, end;
    uint32_t ev;  /* 0-based event index */
} range_t;

static int range_cmp(const void *a, const void *b)
{
    const range_t *x = a, *y = b;
    if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
    if (x->tid != y->tid) return x->tid < y->tid ? -1 : 1;
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    /* Same start: the longer (outer) range first, so walking backwards
     * meets the inner one first. */
    if (x->end != y->end) return x->end > y->end ? -1 : 1;
    return x->ev < y->ev ? -1 : (x->ev > y->ev);
}

static bool name_starts(const mt_trace_t *t, uint32_t name, const char *lit, size_t l)
{
    size_t n;
    const char *s = mt_strtab_get(t->strings, name, &n);
    return n >= l && memcmp(s, lit, l) == 0;
}

/* Per distinct name: 1 = "nccl:*", 2 = record_param_comms or c10d::*.
 * Names repeat, so this is computed once per name, not per event. */
static unsigned char *name_kinds(const mt_trace_t *t)
{
    uint32_t n = mt_strtab_count(t->strings);
    unsigned char *k = mt_big_calloc(n ? n : 1, 1);
    if (!k)
        return NULL;
    for (uint32_t id = 0; id < n; id++) {
        if (name_starts(t, id, "nccl:", 5))
            k[id] = 1;
        else if (name_starts(t, id, "record_param_comms", 18) || name_starts(t, id, "c10d::", 6))
            k[id] = 2;
    }
    return k;
}

static bool is_cpu_coll_range(const unsigned char *kinds, const mt_event_t *e)
{
    if (e->ph != MT_PH_X || !kinds[e->name])
        return false;
    mt_cat_t c = mt_cat_normal((mt_cat_t)e->cat);
    if (c == MT_CAT_USER_ANNOTATION)
        return kinds[e->name] == 1;
    if (c == MT_CAT_CPU_OP)
        return kinds[e->name] == 2;
    return false;
}

/* Does this collective record say what the collective is (not just a size)? */
static bool coll_named(const mt_coll_t *c)
{
    return c && (c->fields & MT_COLL_F_NAME) && !(c->fields & (MT_COLL_F_INPUT_DIMS | MT_COLL_F_FROM_RANGE | MT_COLL_F_GLOO)) &&
           c->name != MT_STR_NONE;
}

static mt_status_t add_coll(mt_trace_t *t, const mt_coll_t *c, uint32_t *idx1)
{
    if (MT_GROW_BIG(t->colls, t->cap_colls, t->n_colls + 1, 64))
        return MT_ERR_NOMEM;
    t->colls[t->n_colls++] = *c;
    *idx1 = (uint32_t)t->n_colls;
    return MT_OK;
}

/* The collective of range event ri: its own record, or one made from its
 * name ("nccl:all_reduce" -> "all_reduce"; c10d::allreduce_ -> "allreduce_"). */
static mt_status_t range_coll(mt_trace_t *t, uint32_t ri, uint32_t *idx1)
{
    mt_event_t *r = &t->events[ri];
    if (r->coll) {
        *idx1 = r->coll;
        return MT_OK;
    }
    size_t n;
    const char *s = mt_strtab_get(t->strings, r->name, &n);
    size_t skip = 0;
    if (n > 5 && memcmp(s, "nccl:", 5) == 0)
        skip = 5;
    else if (n > 6 && memcmp(s, "c10d::", 6) == 0)
        skip = 6;
    mt_coll_t c = {.seq = -1, .in_nelems = -1, .out_nelems = -1, .group_size = -1, .pg_id = -1,
                   .src_rank = -1, .dst_rank = -1, .rank = -1, .grank_start = -1, .grank_stride = -1,
                   .event = ri + 1, .fields = MT_COLL_F_FROM_RANGE};
    if (skip) {
        /* Copy the suffix first: interning may move the string arena. */
        char buf[128];
        size_t l = n - skip < sizeof buf ? n - skip : sizeof buf;
        memcpy(buf, s + skip, l);
        mt_status_t st = mt_strtab_intern(t->strings, buf, l, &c.name);
        if (st)
            return st;
        c.fields |= MT_COLL_F_NAME;
    }
    mt_status_t st = add_coll(t, &c, idx1);
    if (st)
        return st;
    t->events[ri].coll = *idx1;
    return MT_OK;
}

/* Innermost-first walk over ranges of (pid, tid) containing [ts, end]:
 * pick the first with a named (metadata) collective, else the innermost. */
static mt_status_t find_in_ranges(mt_trace_t *t, const range_t *rs, size_t n, int64_t pid, int64_t tid,
                                  int64_t ts, int64_t end, uint32_t *coll1)
{
    *coll1 = 0;
    /* Last range with key <= (pid, tid, ts). */
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const range_t *r = &rs[mid];
        bool le = r->pid < pid || (r->pid == pid && (r->tid < tid || (r->tid == tid && r->ts <= ts)));
        if (le)
            lo = mid + 1;
        else
            hi = mid;
    }
    uint32_t innermost = UINT32_MAX;
    int steps = 0;
    for (size_t i = lo; i-- > 0 && steps < 256; steps++) {
        const range_t *r = &rs[i];
        if (r->pid != pid || r->tid != tid)
            break;
        if (r->end < end)
            continue;
        if (innermost == UINT32_MAX)
            innermost = r->ev;
        const mt_event_t *e = &t->events[r->ev];
        if (e->coll && coll_named(&t->colls[e->coll - 1])) {
            *coll1 = e->coll;
            return MT_OK;
        }
    }
    if (innermost != UINT32_MAX)
        return range_coll(t, innermost, coll1);
    return MT_OK;
}

mt_status_t mt_trace_link(mt_trace_t *t, mt_link_stats_t *stats)
{
    mt_link_stats_t s = {0};
    mt_status_t st = MT_OK;
    size_t n_cr = 0, n_gr = 0, cap_cr = 64, cap_gr = 64;
    unsigned char *kinds = name_kinds(t);
    if (!kinds)
        return MT_ERR_NOMEM;
    /* One pass builds every index. The loader's category counts size the
     * launch table up front (it grows if they undercount). */
    const uint64_t *bc = t->stats.by_cat;
    size_t n_launch = bc[MT_CAT_CUDA_RUNTIME] + bc[MT_CAT_CUDA_DRIVER] + bc[MT_CAT_MTIA_RUNTIME] +
                      bc[MT_CAT_LEGACY_RUNTIME];
    u64map_t launch = {0}, ext = {0};
    range_t *cr = mt_big_malloc(cap_cr * sizeof *cr), *gr = mt_big_malloc(cap_gr * sizeof *gr);
    if (map_init(&launch, n_launch) || map_init(&ext, t->n_colls) || !cr || !gr) {
        st = MT_ERR_NOMEM;
        goto out;
    }
    for (size_t i = 0; i < t->n_events; i++) {
        const mt_event_t *e = &t->events[i];
        mt_cat_t c = mt_cat_normal((mt_cat_t)e->cat);
        int bad = 0;
        if ((c == MT_CAT_CUDA_RUNTIME || c == MT_CAT_CUDA_DRIVER || c == MT_CAT_MTIA_RUNTIME) &&
            (e->flags & MT_EV_HAS_CORR))
            bad |= map_put(&launch, mt_event_corr(t, e), (uint32_t)i + 1);
        if (c == MT_CAT_CPU_OP && e->coll && (e->flags & MT_EV_HAS_EXT) && coll_named(&t->colls[e->coll - 1]))
            bad |= map_put(&ext, mt_event_ext(t, e), (uint32_t)i + 1);
        range_t **arr = NULL;
        size_t *n = NULL, *cap = NULL;
        if (is_cpu_coll_range(kinds, e))
            arr = &cr, n = &n_cr, cap = &cap_cr;
        else if (e->cls == MT_CLASS_GPU_ANNOTATION && kinds[e->name] == 1)
            arr = &gr, n = &n_gr, cap = &cap_gr;
        if (arr) {
            if (*n == *cap) {
                range_t *g = mt_big_realloc(*arr, *cap * 2 * sizeof *g);
                if (!g) {
                    bad = 1;
                } else {
                    *arr = g;
                    *cap *= 2;
                }
            }
            if (*n < *cap)
                (*arr)[(*n)++] = (range_t){mt_event_pid(t, e), mt_event_tid(t, e), e->ts, e->ts + e->dur, (uint32_t)i};
        }
        if (bad) {
            st = MT_ERR_NOMEM;
            goto out;
        }
    }
    qsort(cr, n_cr, sizeof *cr, range_cmp);
    qsort(gr, n_gr, sizeof *gr, range_cmp);

    for (size_t i = 0; i < t->n_events; i++) {
        mt_event_t *e = &t->events[i];
        if (e->cls != MT_CLASS_COMPUTE && e->cls != MT_CLASS_COMM && e->cls != MT_CLASS_MEMCPY &&
            e->cls != MT_CLASS_MEMSET)
            continue;
        s.gpu_activities++;
        if (e->flags & MT_EV_HAS_CORR) {
            uint32_t l = map_get(&launch, mt_event_corr(t, e));
            if (l) {
                e->aux = l;
                s.launched++;
            }
        }
        if (e->cls != MT_CLASS_COMM)
            continue;
        s.comm_kernels++;
        if (e->coll && coll_named(&t->colls[e->coll - 1]) && (e->flags & MT_EV_COLL_OWN)) {
            s.by_own_meta++;
            s.comm_with_coll++;
            continue;
        }
        /* Kineto's fallback for unlinked kernels writes the correlation as
         * External id: such an id names no op, so do not look it up. */
        bool linked_ext =
            (e->flags & MT_EV_HAS_EXT) && !((e->flags & MT_EV_HAS_CORR) && mt_event_ext(t, e) == mt_event_corr(t, e));
        if (linked_ext) {
            uint32_t op = map_get(&ext, mt_event_ext(t, e));
            if (op) {
                e->coll = t->events[op - 1].coll;
                s.by_ext_id++;
                s.comm_with_coll++;
                continue;
            }
        }
        if (e->aux) {
            const mt_event_t *l = &t->events[e->aux - 1];
            uint32_t c1;
            if ((st = find_in_ranges(t, cr, n_cr, mt_event_pid(t, l), mt_event_tid(t, l), l->ts, l->ts + l->dur, &c1)))
                goto out;
            if (c1) {
                e = &t->events[i]; /* the event table does not move, but be plain about it */
                e->coll = c1;
                s.by_cpu_range++;
                s.comm_with_coll++;
                continue;
            }
        }
        {
            uint32_t c1;
            if ((st = find_in_ranges(t, gr, n_gr, mt_event_pid(t, e), mt_event_tid(t, e), e->ts, e->ts + e->dur, &c1)))
                goto out;
            if (c1) {
                e->coll = c1;
                s.by_gpu_range++;
                s.comm_with_coll++;
            }
        }
    }
out:
    free(kinds);
    map_free(&launch);
    map_free(&ext);
    free(cr);
    free(gr);
    if (st == MT_OK) {
        t->link = s;
        t->linked = true;
    }
    if (stats)
        *stats = s;
    return st;
}
