/* The memory pass: per device of a rank, the allocator's peaks from the
 * [memory] instant events, what was running at the peak, allocated at the
 * end of each ProfilerStep and its trend, and a downsampled series for the
 * report's chart and the merged trace's counter track (definitions:
 * "memory" in include/mergetrace/analysis.h). */
#include "rank/passes.h"
#include "base/bigmem.h"
#include "mergetrace/summary.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One usable state of a device: the allocator after one event. */
typedef struct state {
    int64_t ns, alloc, reserved;
    uint32_t mem; /* index into t->mems */
    uint32_t pad_;
} state_t;

typedef struct dev {
    int64_t id;
    int32_t type;
    uint64_t with_alloc; /* events that carry "Total Allocated" */
    state_t *st;
    size_t n, cap;
} dev_t_;

static void issue(mt_rank_analysis_t *a, mt_an_mem_issue_kind_t k, const mt_trace_t *t, const mt_mem_t *m)
{
    mt_an_mem_issue_t *is = &a->mem_issues[k];
    if (!is->count++) {
        is->event = (int64_t)m->event - 1;
        is->ts_ns = t->events[m->event - 1].ts;
        is->device = m->device_id;
    }
}

/* Memory events whose ts goes back on their own thread (file order). */
typedef struct thr {
    int64_t pid, tid;
    uint32_t mem;
} thr_t;

static int thr_cmp(const void *pa, const void *pb)
{
    const thr_t *x = pa, *y = pb;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    return (x->mem > y->mem) - (x->mem < y->mem);
}

static mt_status_t check_order(const mt_trace_t *t, mt_rank_analysis_t *a)
{
    thr_t *v = mt_big_malloc(t->n_mems * sizeof *v);
    if (!v)
        return MT_ERR_NOMEM;
    for (size_t i = 0; i < t->n_mems; i++) {
        const mt_event_t *e = &t->events[t->mems[i].event - 1];
        v[i] = (thr_t){mt_event_pid(t, e), mt_event_tid(t, e), (uint32_t)i};
    }
    qsort(v, t->n_mems, sizeof *v, thr_cmp);
    /* the first in file order of the events that go back, for the message */
    uint32_t first = UINT32_MAX;
    uint64_t count = 0;
    for (size_t i = 1; i < t->n_mems; i++)
        if (v[i].pid == v[i - 1].pid && v[i].tid == v[i - 1].tid &&
            t->events[t->mems[v[i].mem].event - 1].ts < t->events[t->mems[v[i - 1].mem].event - 1].ts) {
            count++;
            if (v[i].mem < first)
                first = v[i].mem;
        }
    if (count) {
        issue(a, MT_AN_MEM_ORDER, t, &t->mems[first]);
        a->mem_issues[MT_AN_MEM_ORDER].count = count;
    }
    free(v);
    return MT_OK;
}

/* The innermost X event of normal category `cat` holding ts on (pid, tid)
 * (any tid when any_tid): latest start, then shortest. Its name, or 0. */
static uint32_t innermost(const mt_trace_t *t, mt_cat_t cat, int64_t pid, int64_t tid, bool any_tid, int64_t ts)
{
    const mt_event_t *best = NULL;
    for (size_t i = 0; i < t->n_events; i++) {
        const mt_event_t *e = &t->events[i];
        if (e->ph != MT_PH_X || e->ts > ts || e->ts + e->dur < ts || mt_event_pid(t, e) != pid ||
            (!any_tid && mt_event_tid(t, e) != tid) || mt_cat_normal((mt_cat_t)e->cat) != cat)
            continue;
        if (!best || e->ts > best->ts || (e->ts == best->ts && e->dur < best->dur))
            best = e;
    }
    return best ? best->name : 0;
}

static mt_status_t name_of(const mt_trace_t *t, uint32_t id, mt_rank_analysis_t *a, mt_an_str_t *out)
{
    *out = (mt_an_str_t){0, 0};
    if (!id)
        return MT_OK;
    size_t len;
    const char *s = mt_strtab_get(t->strings, id, &len);
    if (len > MT_AN_NAME_MAX) {
        len = MT_AN_NAME_MAX;
        /* never split a UTF-8 sequence: while the first byte cut off
         * continues one, cut before that sequence's lead byte */
        while (len && ((unsigned char)s[len] & 0xC0) == 0x80)
            len--;
    }
    return mt_an_string_add(a, s, len, out);
}

/* The ProfilerStep holding ts (start <= ts < end, latest start), or -1. */
static int64_t step_at(const mt_step_t *s, size_t n, int64_t ts)
{
    int64_t best = -1, best_start = 0;
    for (size_t i = 0; i < n; i++)
        if (s[i].start_ns <= ts && ts < s[i].end_ns && (best < 0 || s[i].start_ns >= best_start)) {
            best = s[i].step;
            best_start = s[i].start_ns;
        }
    return best;
}

/* First state with ns >= x (lower) or > x (upper). */
static size_t bound(const state_t *st, size_t n, int64_t x, bool upper)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (upper ? st[mid].ns <= x : st[mid].ns < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int step_cmp(const void *pa, const void *pb)
{
    const mt_step_t *x = pa, *y = pb;
    if (x->start_ns != y->start_ns)
        return x->start_ns < y->start_ns ? -1 : 1;
    return (x->step > y->step) - (x->step < y->step);
}

/* Indices of the series points of states st[0..n): all of them when at
 * most `budget` (>= 4), else per bucket the largest and smallest allocated
 * and the largest reserved, and the last state. Ascending, unique; returns
 * the count. */
static size_t downsample(const state_t *st, size_t n, uint32_t *keep, size_t budget)
{
    if (n <= budget) {
        for (size_t i = 0; i < n; i++)
            keep[i] = (uint32_t)i;
        return n;
    }
    size_t buckets = (budget - 1) / 3, k = 0;
    for (size_t b = 0; b < buckets; b++) {
        size_t lo = n * b / buckets, hi = n * (b + 1) / buckets;
        size_t mx = lo, mn = lo, rx = lo;
        for (size_t i = lo; i < hi; i++) {
            if (st[i].alloc > st[mx].alloc)
                mx = i;
            if (st[i].alloc < st[mn].alloc)
                mn = i;
            if (st[i].reserved > st[rx].reserved)
                rx = i;
        }
        size_t v[3] = {mx, mn, rx};
        /* three values in ascending order, duplicates once */
        for (int x = 0; x < 3; x++)
            for (int y = x + 1; y < 3; y++)
                if (v[y] < v[x]) {
                    size_t tmp = v[x];
                    v[x] = v[y];
                    v[y] = tmp;
                }
        for (int x = 0; x < 3; x++)
            if (!k || keep[k - 1] != v[x])
                keep[k++] = (uint32_t)v[x];
    }
    if (keep[k - 1] != n - 1)
        keep[k++] = (uint32_t)(n - 1);
    return k;
}

/* Everything of one device: peaks, steps, trend, series. */
static mt_status_t device_result(const mt_an_input_t *in, mt_rank_analysis_t *a, const dev_t_ *d,
                                 const mt_step_t *steps, size_t n_steps, size_t *cap_steps, mt_an_mem_dev_t *r)
{
    const mt_trace_t *t = in->t;
    const state_t *st = d->st;
    size_t n = d->n;
    memset(r, 0, sizeof *r);
    r->device = d->id;
    r->device_type = d->type;
    r->events = n;
    r->flags = d->with_alloc ? 0 : MT_AN_MEM_RECONSTRUCTED;
    r->peak_reserved = r->peak_reserved_ns = r->peak_reserved_step = -1;
    r->peak_alloc_step = -1;
    bool any_res = false;
    size_t pa = 0, pr = 0;
    for (size_t i = 0; i < n; i++) {
        if (st[i].alloc > st[pa].alloc)
            pa = i;
        if (st[i].reserved >= 0 && (!any_res || st[i].reserved > st[pr].reserved)) {
            pr = i;
            any_res = true;
        }
    }
    if (!any_res)
        r->flags |= MT_AN_MEM_NO_RESERVED;
    const mt_mem_t *pm = &t->mems[st[pa].mem];
    const mt_event_t *pe = &t->events[pm->event - 1];
    r->peak_alloc = st[pa].alloc;
    r->peak_alloc_ns = st[pa].ns;
    r->peak_alloc_step = step_at(steps, n_steps, st[pa].ns);
    r->peak_alloc_reserved = st[pa].reserved;
    r->peak_alloc_bytes = pm->bytes;
    r->peak_alloc_addr = pm->addr;
    const int64_t pid = mt_event_pid(t, pe), tid = mt_event_tid(t, pe);
    mt_status_t s = name_of(t, innermost(t, MT_CAT_CPU_OP, pid, tid, false, pe->ts), a, &r->peak_op);
    if (s)
        return s;
    uint32_t ann = innermost(t, MT_CAT_USER_ANNOTATION, pid, tid, false, pe->ts);
    if (!ann)
        ann = innermost(t, MT_CAT_USER_ANNOTATION, pid, tid, true, pe->ts);
    if ((s = name_of(t, ann, a, &r->peak_annotation)))
        return s;
    if (any_res) {
        r->peak_reserved = st[pr].reserved;
        r->peak_reserved_ns = st[pr].ns;
        r->peak_reserved_step = step_at(steps, n_steps, st[pr].ns);
    }
    r->end_alloc = st[n - 1].alloc;
    r->end_reserved = st[n - 1].reserved;

    /* steps */
    if (n_steps && MT_GROW(a->mem_steps, *cap_steps, a->n_mem_steps + n_steps, 16))
        return MT_ERR_NOMEM;
    r->first_step = (uint32_t)a->n_mem_steps;
    r->n_steps = (uint32_t)n_steps;
    for (size_t k = 0; k < n_steps; k++) {
        mt_an_mem_step_t *m = &a->mem_steps[a->n_mem_steps++];
        *m = (mt_an_mem_step_t){.step = steps[k].step, .start_ns = steps[k].start_ns, .end_ns = steps[k].end_ns,
                                .alloc_end = -1, .reserved_end = -1, .peak_alloc = -1};
        size_t lo = bound(st, n, steps[k].start_ns, false), hi = bound(st, n, steps[k].end_ns, false);
        for (size_t i = lo; i < hi; i++) {
            int64_t b = t->mems[st[i].mem].bytes;
            if (b > 0) {
                m->allocs++;
                m->bytes_alloc += b;
            } else if (b < 0) {
                m->frees++;
                m->bytes_freed -= b;
            }
            if (st[i].alloc > m->peak_alloc)
                m->peak_alloc = st[i].alloc;
        }
        size_t e = bound(st, n, steps[k].end_ns, true);
        if (e) {
            m->alloc_end = st[e - 1].alloc;
            m->reserved_end = st[e - 1].reserved;
        }
    }
    /* trend over the steps after the first (warm-up) */
    const mt_an_mem_step_t *ms = a->mem_steps + r->first_step;
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    uint32_t m_used = 0;
    bool grows = true;
    int64_t prev = -1;
    for (size_t k = 0; k < n_steps; k++) {
        if (ms[k].alloc_end < 0)
            continue;
        if (k >= 1) {
            double x = (double)k, y = (double)ms[k].alloc_end;
            sx += x, sy += y, sxx += x * x, sxy += x * y;
            m_used++;
            if (prev < 0 || ms[k].alloc_end <= prev)
                grows = false;
        }
        prev = ms[k].alloc_end;
    }
    r->trend_steps = m_used;
    if (m_used >= 2) {
        double den = (double)m_used * sxx - sx * sx;
        double slope = den != 0 ? ((double)m_used * sxy - sx * sy) / den : 0;
        r->trend_bytes_per_step = (int64_t)llround(slope);
        r->grows_every_step = grows;
    }
    (void)in;
    return MT_OK;
}

mt_status_t mt_an_memory(const mt_an_input_t *in, mt_rank_analysis_t *a)
{
    const mt_trace_t *t = in->t;
    for (int k = 0; k < MT_AN_MEM_ISSUE_COUNT_; k++)
        a->mem_issues[k] = (mt_an_mem_issue_t){0, -1, 0, 0};
    if (!t->n_mems)
        return MT_OK; /* the common case costs nothing */
    mt_status_t st = MT_ERR_NOMEM;
    dev_t_ *devs = NULL;
    size_t n_devs = 0, cap_devs = 0;
    uint64_t *key = NULL;
    uint32_t *perm = NULL, *keep = NULL;
    mt_step_t *steps = NULL;
    size_t n_steps = 0, cap_steps = 0, cap_dev_out = 0, cap_pts = 0, cap_steps_out = 0;
    if ((st = check_order(t, a)))
        goto out;
    st = MT_ERR_NOMEM;
    /* (ts, file order): a stable radix sort by ts */
    key = mt_big_malloc(t->n_mems * sizeof *key);
    perm = mt_big_malloc(t->n_mems * sizeof *perm);
    if (!key || !perm)
        goto out;
    for (size_t i = 0; i < t->n_mems; i++) {
        key[i] = mt_sort_key_i64(t->events[t->mems[i].event - 1].ts);
        perm[i] = (uint32_t)i;
    }
    if (mt_sort_u64(key, perm, t->n_mems))
        goto out;
    /* devices, and which of them carry totals */
    for (size_t i = 0; i < t->n_mems; i++) {
        const mt_mem_t *m = &t->mems[i];
        size_t d = 0;
        while (d < n_devs && (devs[d].id != m->device_id || devs[d].type != m->device_type))
            d++;
        if (d == n_devs) {
            if (MT_GROW(devs, cap_devs, n_devs + 1, 4))
                goto out;
            devs[n_devs++] = (dev_t_){.id = m->device_id, .type = m->device_type};
        }
        devs[d].with_alloc += (m->fields & MT_MEM_F_ALLOC) != 0;
    }
    /* devices by (type, id) */
    for (size_t x = 1; x < n_devs; x++)
        for (size_t y = x; y > 0 && (devs[y].type < devs[y - 1].type ||
                                     (devs[y].type == devs[y - 1].type && devs[y].id < devs[y - 1].id));
             y--) {
            dev_t_ tmp = devs[y];
            devs[y] = devs[y - 1];
            devs[y - 1] = tmp;
        }
    /* the states, in time order */
    for (size_t k = 0; k < t->n_mems; k++) {
        const mt_mem_t *m = &t->mems[perm[k]];
        size_t d = 0;
        while (devs[d].id != m->device_id || devs[d].type != m->device_type)
            d++;
        dev_t_ *dv = &devs[d];
        int64_t alloc, res = (m->fields & MT_MEM_F_RESERVED) ? m->total_reserved : -1;
        if (dv->with_alloc) {
            if (!(m->fields & MT_MEM_F_ALLOC)) {
                issue(a, MT_AN_MEM_MISSING, t, m);
                continue;
            }
            alloc = m->total_allocated;
        } else {
            /* no totals on this device: the running sum of Bytes */
            int64_t prev = dv->n ? dv->st[dv->n - 1].alloc : 0;
            alloc = prev + m->bytes;
        }
        if ((dv->with_alloc && alloc < 0) || ((m->fields & MT_MEM_F_RESERVED) && res < 0)) {
            issue(a, MT_AN_MEM_NEGATIVE, t, m);
            continue;
        }
        if (MT_GROW_BIG(dv->st, dv->cap, dv->n + 1, 256))
            goto out;
        dv->st[dv->n++] = (state_t){.ns = t->events[m->event - 1].ts, .alloc = alloc, .reserved = res,
                                    .mem = perm[k]};
    }
    /* a GPU device id that no GPU activity has: every event of it counts */
    for (size_t d = 0; d < n_devs; d++) {
        if (devs[d].type == 0)
            continue;
        bool seen = false;
        for (size_t i = 0; i < in->n_acts && !seen; i++)
            seen = !(in->acts[i].flags & MT_EV_PID_STR) && in->acts[i].device == devs[d].id;
        for (size_t k = 0; !seen && k < t->n_mems; k++)
            if (t->mems[k].device_id == devs[d].id && t->mems[k].device_type == devs[d].type)
                issue(a, MT_AN_MEM_NO_GPU, t, &t->mems[k]);
    }
    if (mt_trace_steps_of(t, in->ranges, in->n_ranges, a->rank, &steps, &n_steps, &cap_steps)) /* no read of every event */
        goto out;
    if (n_steps > 1)
        qsort(steps, n_steps, sizeof *steps, step_cmp);
    keep = malloc(MT_AN_MEM_POINTS * sizeof *keep);
    if (!keep)
        goto out;
    /* Points per device: the merged trace writes each as a counter event
     * of about MT_AN_MEM_POINT_BYTES, and all of them together should add
     * at most 2 % to the rank's share of it; at least 16 so that a small
     * trace still draws its shape (peaks are kept whatever the budget). */
    size_t used = 0;
    for (size_t d = 0; d < n_devs; d++)
        used += devs[d].n > 0;
    size_t budget = (size_t)(t->stats.bytes_json / 50 / MT_AN_MEM_POINT_BYTES / (used ? used : 1));
    budget = budget < 16 ? 16 : budget > MT_AN_MEM_POINTS ? MT_AN_MEM_POINTS : budget;
    for (size_t d = 0; d < n_devs; d++) {
        dev_t_ *dv = &devs[d];
        if (!dv->n)
            continue;
        if (MT_GROW(a->mem_devs, cap_dev_out, a->n_mem_devs + 1, 4))
            goto out;
        mt_an_mem_dev_t *r = &a->mem_devs[a->n_mem_devs];
        if ((st = device_result(in, a, dv, steps, n_steps, &cap_steps_out, r)))
            goto out;
        st = MT_ERR_NOMEM;
        size_t kn = downsample(dv->st, dv->n, keep, budget);
        if (MT_GROW(a->mem_points, cap_pts, a->n_mem_points + kn, 64))
            goto out;
        r->first_point = (uint32_t)a->n_mem_points;
        r->n_points = (uint32_t)kn;
        for (size_t i = 0; i < kn; i++) {
            const state_t *s = &dv->st[keep[i]];
            a->mem_points[a->n_mem_points++] = (mt_an_mem_point_t){s->ns, s->alloc, s->reserved};
        }
        a->n_mem_devs++;
    }
    st = MT_OK;
out:
    for (size_t d = 0; d < n_devs; d++)
        free(devs[d].st);
    free(devs);
    free(key);
    free(perm);
    free(keep);
    free(steps);
    return st;
}
