/* The per-rank pass "waits": the stream waits a Kineto trace names
 * (cuda_sync stream-wait records, enable_cuda_sync_events) as explicit
 * dependencies of the graph (mt_rank_analysis_t.gdeps; analysis.h
 * "waits"). */
#include "rank/passes.h"
#include "base/bigmem.h"

#include <stdlib.h>
#include <string.h>

/* An activity that has a correlation id, keyed by its stream. */
typedef struct wkey {
    uint64_t corr;
    uint32_t stream; /* mt_an_gact_t.stream */
    uint32_t act;    /* index into gacts */
} wkey_t;

static int wkey_cmp(const void *pa, const void *pb)
{
    const wkey_t *a = pa, *b = pb;
    if (a->stream != b->stream)
        return a->stream < b->stream ? -1 : 1;
    if (a->corr != b->corr)
        return a->corr < b->corr ? -1 : 1;
    return a->act < b->act ? -1 : a->act > b->act;
}

/* First index of v[0..n) whose (stream, corr) is above (s, c). */
static size_t wkey_upper(const wkey_t *v, size_t n, uint32_t s, uint64_t c)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid].stream < s || (v[mid].stream == s && v[mid].corr <= c))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* First index of v[0..n) whose (stream, corr) is at or above (s, c). */
static size_t wkey_lower(const wkey_t *v, size_t n, uint32_t s, uint64_t c)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid].stream < s || (v[mid].stream == s && v[mid].corr < c))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Is the cuda_sync event named a stream wait? Kineto writes "Stream Wait
 * Event" (its CUPTI synchronization type's name); "Wait on CUDA event" is
 * accepted as the same record under another name. */
static bool is_stream_wait(const mt_trace_t *t, const mt_event_t *e)
{
    size_t len;
    const char *nm = mt_strtab_get(t->strings, e->name, &len);
    if (!nm)
        return false;
    return (len == 17 && memcmp(nm, "Stream Wait Event", 17) == 0) ||
           (len == 18 && memcmp(nm, "Wait on CUDA event", 18) == 0);
}

/* The stream number (mt_an_gact_t.stream) of (device, stream) among the
 * numeric streams of the graph, -1 when no activity runs there. */
static int64_t stream_no(const int64_t *dev, const int64_t *str, size_t ns, int64_t d, int64_t s)
{
    for (size_t k = 0; k < ns; k++)
        if (dev[k] == d && str[k] == s)
            return (int64_t)k;
    return -1;
}

/* Add producer p to consumer c's two slots: a third keeps the two that end
 * latest (the latest end binds the start; an earlier one never can). */
static void add_dep(int32_t *gd, const mt_an_gact_t *ga, uint32_t c, uint32_t p)
{
    int32_t *s = &gd[2 * (size_t)c];
    if (s[0] == (int32_t)p || s[1] == (int32_t)p)
        return;
    if (s[0] == MT_AN_GDEP_INFER) {
        s[0] = (int32_t)p;
        s[1] = -1;
    } else if (s[1] < 0) {
        s[1] = (int32_t)p;
    } else {
        int q = ga[s[0]].end_ns <= ga[s[1]].end_ns ? 0 : 1; /* the earlier end */
        if (ga[p].end_ns > ga[s[q]].end_ns)
            s[q] = (int32_t)p;
    }
}

mt_status_t mt_an_waits(const mt_an_input_t *in, mt_rank_analysis_t *a)
{
    const mt_trace_t *t = in->t;
    if (!t->n_swaits || !a->n_gacts)
        return MT_OK;
    mt_status_t st = MT_ERR_NOMEM;
    size_t n = a->n_gacts, ns = 0, nk = 0;
    const mt_an_gact_t *ga = a->gacts;
    int64_t *dev = NULL, *str = NULL;
    wkey_t *key = NULL;
    int32_t *gd = NULL;
    for (size_t i = 0; i < n; i++)
        if (ga[i].stream + (size_t)1 > ns)
            ns = ga[i].stream + (size_t)1;
    dev = malloc(ns * sizeof *dev);
    str = malloc(ns * sizeof *str);
    key = mt_big_malloc(n * sizeof *key);
    if (!dev || !str || !key)
        goto out;
    /* each stream number's (device, stream); a string pid or tid gets no
     * match (INT64_MIN) */
    for (size_t k = 0; k < ns; k++)
        dev[k] = str[k] = INT64_MIN;
    for (size_t i = 0; i < n; i++) {
        const mt_gpu_act_t *x = &in->acts[i];
        const mt_event_t *e = &t->events[x->event];
        uint32_t s = ga[i].stream;
        if (dev[s] == INT64_MIN && str[s] == INT64_MIN && !x->flags) {
            dev[s] = x->device;
            str[s] = x->stream;
        }
        if (e->flags & MT_EV_HAS_CORR)
            key[nk++] = (wkey_t){.corr = mt_event_corr(t, e), .stream = s, .act = (uint32_t)i};
    }
    qsort(key, nk, sizeof *key, wkey_cmp);
    for (size_t w = 0; w < t->n_swaits; w++) {
        const mt_swait_t *r = &t->swaits[w];
        const mt_event_t *e = &t->events[r->event - 1];
        if (e->cat != MT_CAT_CUDA_SYNC || !is_stream_wait(t, e))
            continue; /* an Event Sync: the host waits, a host sync call says so */
        bool ok = r->record_corr >= 0 && r->wait_stream >= 0 && (e->flags & MT_EV_HAS_CORR) &&
                  !(e->flags & (MT_EV_PID_STR | MT_EV_TID_STR));
        int64_t dv = ok ? mt_event_pid(t, e) : 0;
        int64_t cs = ok ? stream_no(dev, str, ns, dv, mt_event_tid(t, e)) : -1;
        int64_t ps = ok ? stream_no(dev, str, ns, dv, r->wait_stream) : -1;
        size_t ci = SIZE_MAX, pi = SIZE_MAX;
        if (cs >= 0 && ps >= 0) {
            /* the consumer: launched on its stream after the wait call */
            size_t j = wkey_upper(key, nk, (uint32_t)cs, mt_event_corr(t, e));
            if (j < nk && key[j].stream == (uint32_t)cs)
                ci = key[j].act;
            /* the producer: launched on the event's stream before the record call */
            j = wkey_lower(key, nk, (uint32_t)ps, (uint64_t)r->record_corr);
            if (j > 0 && key[j - 1].stream == (uint32_t)ps)
                pi = key[j - 1].act;
        }
        /* 1 us: the rounding of two GPU timestamps (critpath.c's edge
         * tolerance); beyond it the ids name other launches */
        if (ci == SIZE_MAX || pi == SIZE_MAX || ci == pi || ga[pi].end_ns > ga[ci].start_ns + 1000) {
            a->swaits_unresolved++;
            continue;
        }
        if (!gd) {
            gd = mt_big_malloc(2 * n * sizeof *gd);
            if (!gd)
                goto out;
            for (size_t k = 0; k < 2 * n; k++)
                gd[k] = k % 2 ? -1 : MT_AN_GDEP_INFER;
        }
        add_dep(gd, ga, (uint32_t)ci, (uint32_t)pi);
        a->swaits_named++;
    }
    a->gdeps = gd;
    gd = NULL;
    st = MT_OK;
out:
    free(dev);
    free(str);
    free(key);
    free(gd);
    return st;
}
