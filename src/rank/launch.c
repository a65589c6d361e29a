/* Launch behaviour: the delay from each launch call to its GPU activity,
 * and how much of the GPU's idle time the launching CPU thread spent
 * launching (launch-bound idle time: the GPU starved by launch overhead). */
#include "rank/passes.h"
#include "base/bigmem.h"

#include <stdlib.h>
#include <string.h>

/* A stretch of time a CPU thread spent in (or between close) launch calls. */
typedef struct wrec {
    int64_t pid, tid;
    int64_t start, end;
    uint32_t flags; /* MT_EV_PID_STR | MT_EV_TID_STR */
    uint32_t pad_;
} wrec_t;

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

/* First index of w whose (thread, end) is > ((pid, f, tid), t). */
static size_t first_after(const wrec_t *w, size_t n, int64_t pid, uint32_t f, int64_t tid, int64_t t)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t m = lo + (hi - lo) / 2;
        int c = key_cmp(w[m].pid, w[m].flags, w[m].tid, pid, f, tid);
        if (c < 0 || (c == 0 && w[m].end <= t))
            lo = m + 1;
        else
            hi = m;
    }
    return lo;
}

mt_status_t mt_an_launch(const mt_an_input_t *in, mt_rank_analysis_t *a)
{
    const mt_trace_t *t = in->t;
    const int64_t kw = in->o->kernel_wait_ns;
    a->launched = 0;
    a->delay_p50_ns = a->delay_p90_ns = a->delay_p99_ns = a->delay_max_ns = 0;
    a->launch_bound_ns = 0;
    mt_status_t st = MT_ERR_NOMEM;
    size_t nmax = in->n_acts > in->n_launch_calls ? in->n_acts : in->n_launch_calls;
    uint64_t *key = mt_big_malloc((nmax ? nmax : 1) * sizeof *key);
    uint32_t *perm = mt_big_malloc((nmax ? nmax : 1) * sizeof *perm);
    wrec_t *w = NULL, *wt = NULL;
    if (!key || !perm)
        goto out;

    /* Delays, sorted as keys. */
    size_t nd = 0;
    for (size_t i = 0; i < in->n_acts; i++)
        if (in->acts[i].launch) {
            perm[nd] = (uint32_t)i;
            key[nd++] = mt_sort_key_i64(in->acts[i].start_ns - in->acts[i].launch_ns);
        }
    if (mt_sort_u64(key, perm, nd))
        goto out;
    int64_t *d = (int64_t *)key; /* back to values, in place */
    for (size_t i = 0; i < nd; i++)
        d[i] = (int64_t)(key[i] ^ (UINT64_C(1) << 63));
    a->launched = nd;
    a->delay_p50_ns = mt_stats_pct_sorted(d, nd, 50);
    a->delay_p90_ns = mt_stats_pct_sorted(d, nd, 90);
    a->delay_p99_ns = mt_stats_pct_sorted(d, nd, 99);
    a->delay_max_ns = nd ? d[nd - 1] : 0;
    st = MT_OK;
    if (in->n_busy < 2 || !nd)
        goto out; /* no idle gap, or none that a launched activity ends */

    /* Launch calls by (pid, flags, tid, start), then joined per thread
     * across gaps shorter than kernel_wait_ns. */
    st = MT_ERR_NOMEM;
    size_t nw = in->n_launch_calls;
    wt = mt_big_malloc((nw ? nw : 1) * sizeof *wt);
    if (!wt)
        goto out;
    for (size_t i = 0; i < nw; i++) {
        const mt_event_t *e = &t->events[in->launch_calls[i]];
        wt[i] = (wrec_t){.pid = mt_event_pid(t, e), .tid = mt_event_tid(t, e), .start = e->ts, .end = e->ts + e->dur,
                         .flags = e->flags & (MT_EV_PID_STR | MT_EV_TID_STR)};
        perm[i] = (uint32_t)i;
        key[i] = mt_sort_key_i64(e->ts);
    }
    if (mt_sort_u64(key, perm, nw))
        goto out;
    for (size_t i = 0; i < nw; i++)
        key[i] = mt_sort_key_i64(wt[perm[i]].tid);
    if (mt_sort_u64(key, perm, nw))
        goto out;
    for (size_t i = 0; i < nw; i++)
        key[i] = wt[perm[i]].flags;
    if (mt_sort_u64(key, perm, nw))
        goto out;
    for (size_t i = 0; i < nw; i++)
        key[i] = mt_sort_key_i64(wt[perm[i]].pid);
    if (mt_sort_u64(key, perm, nw))
        goto out;
    st = MT_OK;
    mt_sort_permute(wt, sizeof *wt, perm, nw);
    w = wt; /* joined in place: the write index never passes the read index */
    wt = NULL;
    size_t k = 0;
    for (size_t i = 0; i < nw; i++) {
        const wrec_t x = w[i];
        if (k && key_cmp(x.pid, x.flags, x.tid, w[k - 1].pid, w[k - 1].flags, w[k - 1].tid) == 0 &&
            x.start - w[k - 1].end < kw) {
            if (x.end > w[k - 1].end)
                w[k - 1].end = x.end;
        } else {
            w[k++] = x;
        }
    }
    nw = k;

    /* Each idle gap [busy[g].end, busy[g + 1].start) and the activity that
     * ends it: the first linked one starting there. */
    size_t p = 0;
    for (size_t gi = 0; gi + 1 < in->n_busy; gi++) {
        int64_t g0 = in->busy[gi].end, g1 = in->busy[gi + 1].start;
        while (p < in->n_acts && in->acts[p].start_ns < g1)
            p++;
        const mt_gpu_act_t *x = NULL;
        for (size_t q = p; q < in->n_acts && in->acts[q].start_ns == g1; q++)
            if (in->acts[q].launch && in->acts[q].end_ns > g1) {
                x = &in->acts[q];
                break;
            }
        if (!x)
            continue;
        const int64_t pid = mt_act_launch_pid(in, x), tid = mt_act_launch_tid(in, x);
        const uint32_t f = x->launch_flags;
        for (size_t q = first_after(w, nw, pid, f, tid, g0);
             q < nw && key_cmp(w[q].pid, w[q].flags, w[q].tid, pid, f, tid) == 0 && w[q].start < g1; q++) {
            int64_t s = w[q].start > g0 ? w[q].start : g0;
            int64_t e = w[q].end < g1 ? w[q].end : g1;
            if (e > s)
                a->launch_bound_ns += e - s;
        }
    }
out:
    free(key);
    free(perm);
    free(w);
    free(wt);
    return st;
}
