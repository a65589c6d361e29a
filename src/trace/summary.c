/* Per-trace summary numbers (counts, time range, link coverage). */
#include "mergetrace/summary.h"
#include "mergetrace/buf.h"
#include "trace/stepname.h"

#include <stdlib.h>
#include <string.h>

/* mt_trace_steps over every event (all) or over t->events[idx[0 .. n_idx)]. */
static mt_status_t steps_scan(const mt_trace_t *t, bool all, const uint32_t *idx, size_t n_idx, int32_t rank,
                              mt_step_t **steps, size_t *n, size_t *cap)
{
    size_t first = *n;
    /* the categories that are user annotations, by table: a call of
     * mt_cat_normal per event was two thirds of this scan, which runs over
     * every event of a rank three times (memory, collectives, the loader) */
    bool ua[MT_CAT_COUNT_];
    for (int c = 0; c < MT_CAT_COUNT_; c++)
        ua[c] = mt_cat_normal((mt_cat_t)c) == MT_CAT_USER_ANNOTATION;
    const mt_event_t *ev = t->events;
    size_t ne = all ? t->n_events : n_idx;
    for (size_t i = 0; i < ne; i++) {
        const mt_event_t *e = &ev[all ? i : idx[i]];
        /* mt_cat_normal keeps a category past the table as it is: never a user annotation */
        if (e->ph != MT_PH_X || e->cat >= MT_CAT_COUNT_ || !ua[e->cat])
            continue;
        size_t len;
        const char *nm = mt_strtab_get(t->strings, e->name, &len);
        int64_t v = mt_step_name_num(nm, len);
        if (v < 0)
            continue;
        if (MT_GROW(*steps, *cap, *n + 1, 64)) {
            *n = first;
            return MT_ERR_NOMEM;
        }
        (*steps)[(*n)++] = (mt_step_t){.step = v, .start_ns = e->ts, .end_ns = e->ts + e->dur, .rank = rank};
    }
    return MT_OK;
}

mt_status_t mt_trace_steps(const mt_trace_t *t, int32_t rank, mt_step_t **steps, size_t *n, size_t *cap)
{
    return steps_scan(t, true, NULL, 0, rank, steps, n, cap);
}

mt_status_t mt_trace_steps_of(const mt_trace_t *t, const uint32_t *idx, size_t n_idx, int32_t rank,
                              mt_step_t **steps, size_t *n, size_t *cap)
{
    return steps_scan(t, false, idx, n_idx, rank, steps, n, cap);
}

mt_status_t mt_trace_summarize(mt_trace_t *t, mt_trace_summary_t *s)
{
    memset(s, 0, sizeof *s);
    s->events = t->n_events;
    s->bytes_in = t->stats.bytes_in;
    s->bytes_json = t->stats.bytes_json;
    memcpy(s->by_ph, t->stats.by_ph, sizeof s->by_ph);
    memcpy(s->by_cat, t->stats.by_cat, sizeof s->by_cat);
    for (size_t i = 0; i < t->n_other_cats; i++)
        s->other_cats += t->other_cat_counts[i];
    s->collectives = t->n_colls;
    s->rank = t->info.rank;
    s->world_size = t->info.world_size;
    s->ts_style = (int32_t)t->info.ts_style;
    s->truncated = t->stats.truncated;
    s->truncated_at = t->stats.truncated_at;
    s->unknown_fields = t->stats.unknown_fields;
    s->bad_values = t->stats.bad_values;
    s->bad_utf8 = t->stats.bad_utf8;
    s->neg_dur = t->stats.neg_dur;
    s->no_ts = t->stats.no_ts;
    s->no_ts_kernels = t->stats.no_ts_kernels;
    bool any = false, gany = false;
    int64_t rt_pid = -1, op_pid = -1;
    for (size_t i = 0; i < t->n_events; i++) {
        const mt_event_t *e = &t->events[i];
        s->by_class[e->cls]++;
        if (!(e->flags & MT_EV_PID_STR) && mt_event_pid(t, e) > 0) {
            if (rt_pid < 0 && e->cat == MT_CAT_CUDA_RUNTIME)
                rt_pid = mt_event_pid(t, e);
            else if (op_pid < 0 && e->cat == MT_CAT_CPU_OP)
                op_pid = mt_event_pid(t, e);
        }
        if (e->ph != MT_PH_X)
            continue;
        int64_t end = e->ts + e->dur;
        if (!any || e->ts < s->first_ns)
            s->first_ns = e->ts;
        if (!any || end > s->last_ns)
            s->last_ns = end;
        any = true;
        if (e->cls == MT_CLASS_COMPUTE || e->cls == MT_CLASS_COMM || e->cls == MT_CLASS_MEMCPY ||
            e->cls == MT_CLASS_MEMSET) {
            if (!gany || e->ts < s->gpu_first_ns)
                s->gpu_first_ns = e->ts;
            if (!gany || end > s->gpu_last_ns)
                s->gpu_last_ns = end;
            gany = true;
        }
    }
    s->host_pid = rt_pid >= 0 ? rt_pid : op_pid;
    s->nsys = t->info.nsys;
    s->session_start_ns = t->info.nsys && t->info.has_base ? t->info.base_ns : -1;
    /* The loader linked already; link only a trace that was not. */
    if (t->linked) {
        s->link = t->link;
        return MT_OK;
    }
    return mt_trace_link(t, &s->link);
}
