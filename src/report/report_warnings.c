/* The run's warnings (mt_report_warnings): what the terminal summary
 * lists under "warnings" and report.json writes as "warnings", from the
 * report's inputs, clocks, matching and analyses and a few facts of the
 * run (docs/report-schema.md lists the codes). */
#include "mergetrace/report.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *base(const char *p)
{
    const char *b = strrchr(p, '/');
    return b ? b + 1 : p;
}

static bool source_is(const mt_report_input_t *r, mt_rank_source_t src)
{
    return r->rank_source && !strcmp(r->rank_source, mt_rank_source_str(src));
}

/* A bounded one-line text built in pieces (cut when full). */
typedef struct line {
    char b[1024];
    size_t n;
} line_t;

static void line_add(line_t *t, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void line_add(line_t *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(t->b + t->n, sizeof t->b - t->n, fmt, ap);
    va_end(ap);
    if (k > 0)
        t->n = t->n + (size_t)k < sizeof t->b ? t->n + (size_t)k : sizeof t->b - 1;
}

/* Ranks that share no collective with the reference's group cannot be
 * aligned with it; when they form groups of their own, the directory most
 * likely holds traces of more than one job. Say so, with the groups. */
static void warn_groups(mt_warnings_t *w, const mt_report_t *r, bool world_disagree)
{
    int32_t n_groups = 0, multi = 0;
    const mt_clock_t *cl = r->clocks;
    for (size_t i = 0; i < r->n_clocks; i++)
        n_groups = cl[i].group + 1 > n_groups ? cl[i].group + 1 : n_groups;
    for (int32_t g = 0; g < n_groups; g++) {
        size_t k = 0;
        for (size_t i = 0; i < r->n_clocks; i++)
            k += cl[i].group == g;
        multi += k >= 2;
    }
    if (multi < 2)
        return;
    line_t t = {.n = 0};
    line_add(&t, "the ranks form %d groups that share no collective:", (int)n_groups);
    for (int32_t g = 0; g < n_groups; g++) {
        line_add(&t, "%s ranks", g ? " |" : "");
        size_t shown = 0;
        for (size_t i = 0; i < r->n_clocks && i < r->n_inputs; i++)
            if (cl[i].group == g && shown++ < 8)
                line_add(&t, " %lld", (long long)r->inputs[i].rank);
        if (shown > 8)
            line_add(&t, " ...");
    }
    mt_warnings_add(w, "clock_groups", -1, "%s", t.b);
    mt_warnings_add(w, "clock_groups", -1,
                    "they look like traces of different jobs%s: only group 0 (with the reference rank) is aligned",
                    world_disagree ? " (their world sizes differ too)" : "");
}

mt_status_t mt_report_warnings(const mt_report_t *rep, const mt_report_warn_facts_t *f, mt_warnings_t *w)
{
    static const mt_match_stats_t none;
    static const mt_trace_summary_t zero;
    const mt_match_stats_t *m = rep->match ? rep->match : &none;
    const mt_clock_t *clocks = rep->clocks;
    size_t n = rep->n_inputs < rep->n_clocks ? rep->n_inputs : rep->n_clocks;
    uint64_t kernels = 0;
    for (size_t i = 0; i < n; i++)
        kernels += f->sums && f->sums[i] ? f->sums[i]->by_class[MT_CLASS_COMM] : 0;
    int32_t ref = -1;
    for (size_t i = 0; i < rep->n_clocks; i++)
        if (clocks[i].reference)
            ref = clocks[i].rank;
#define WARN(code, rank, ...) mt_warnings_add(w, code, rank, __VA_ARGS__)
    if (rep->missing_count) {
        line_t t = {.n = 0};
        line_add(&t, "%lld of %lld ranks have no trace:", (long long)rep->missing_count, (long long)rep->world_size);
        for (size_t i = 0; i < rep->n_missing && i < 32; i++)
            line_add(&t, " %lld", (long long)rep->missing[i]);
        WARN("missing_ranks", -1, "%s%s", t.b, rep->missing_count > 32 ? " ..." : "");
    }
    for (size_t i = 0; i < rep->n_skipped; i++) {
        const mt_report_skip_t *k = &rep->skipped[i];
        if (k->kind == MT_REPORT_SKIP_LEFT_OUT)
            WARN("left_out_file", -1, "left out %s: %s\n", k->path, k->reason);
        else if (k->kind == MT_REPORT_SKIP_NOT_TRACE)
            WARN("skipped_file", -1, "skipped %s: not a trace (%s)\n", k->path, k->reason);
        else if (k->first)
            WARN("link_not_followed", -1, "did not follow %s: a link to %s, read already", k->path, k->first);
        else
            WARN("skipped_input", -1, "skipped %s: %s", k->path, k->reason);
    }
    if (f->world_disagree)
        WARN("world_size_disagree", -1, "the traces disagree on world_size; using the largest, %lld\n",
             (long long)rep->world_size);
    /* One rank has no clock to align: nothing to warn about. */
    if (kernels == 0 && m->cpu_rows == 0 && (!f->nccl || mt_nccl_job_rows(f->nccl) == 0) && rep->n_inputs > 1)
        WARN("no_comm_kernels", -1, "no communication kernels in any trace: nothing to align the clocks with\n");
    if (f->nccl)
        mt_nccl_job_warn(w, f->nccl);
    for (size_t i = 0; i < n; i++) {
        const mt_report_input_t *r = &rep->inputs[i];
        const mt_trace_summary_t *s = f->sums && f->sums[i] ? f->sums[i] : &zero;
        const mt_clock_t *c = &clocks[i];
        const char *p = r->path;
        if (!c->connected)
            WARN("not_connected", (int32_t)r->rank, "rank %lld shares no matched collective with rank %d: its clock is left uncorrected\n",
                 (long long)r->rank, ref);
        if (c->violations)
            WARN("clock_violations", (int32_t)r->rank, "rank %lld: %llu collectives end before their last participant started, beyond the residual "
                 "(clock fit doubtful)\n",
                 (long long)r->rank, (unsigned long long)c->violations);
        if (s->truncated)
            WARN("truncated", (int32_t)r->rank, "rank %lld: %s is truncated at byte %llu: %llu events loaded, the rest is lost (--strict makes "
                 "this an error)\n",
                 (long long)r->rank, p, (unsigned long long)s->truncated_at, (unsigned long long)s->events);
        if (s->events && s->first_ns < 100000000000000000LL && s->ts_style != MT_TS_REL)
            WARN("not_epoch", (int32_t)r->rank, "rank %lld: %s: timestamps are not on the Unix epoch%s\n", (long long)r->rank, base(p),
                 s->truncated ? " (baseTimeNanoseconds was probably in the lost tail)" : "");
        if (s->world_size > 0 && r->rank >= s->world_size)
            WARN("rank_outside_world", (int32_t)r->rank, "rank %lld: %s: rank is not below the trace's world_size %lld\n", (long long)r->rank, p,
                 (long long)s->world_size);
        if (s->other_cats)
            WARN("unknown_categories", (int32_t)r->rank, "rank %lld: %llu events of unknown categories kept but not analysed\n", (long long)r->rank,
                 (unsigned long long)s->other_cats);
        if (s->bad_utf8)
            WARN("bad_utf8", (int32_t)r->rank, "rank %lld: %llu strings held invalid UTF-8 (replaced by U+FFFD)\n", (long long)r->rank,
                 (unsigned long long)s->bad_utf8);
        if (s->neg_dur)
            WARN("negative_duration", (int32_t)r->rank, "rank %lld: %llu events had a negative duration (taken as 0)\n", (long long)r->rank,
                 (unsigned long long)s->neg_dur);
        for (size_t k = 0; rep->analyses && k < rep->n_analyses; k++) {
            /* the [memory] events that could not be used as they are */
            static const char *const what[MT_AN_MEM_ISSUE_COUNT_] = {
                "with a negative \"Total Allocated\" or \"Total Reserved\" (left out)",
                "without \"Total Allocated\" where the device's others have it (left out)",
                "earlier than the memory event before it on the same thread (taken in time order)",
                "of a GPU device id that no GPU activity of the trace has"};
            static const char *const code[MT_AN_MEM_ISSUE_COUNT_] = {"memory_negative", "memory_missing_total",
                                                                     "memory_out_of_order", "memory_no_gpu"};
            if (!rep->analyses[k] || rep->analyses[k]->rank != (int32_t)r->rank)
                continue;
            for (int q = 0; q < MT_AN_MEM_ISSUE_COUNT_; q++) {
                const mt_an_mem_issue_t *is = &rep->analyses[k]->mem_issues[q];
                if (is->count)
                    WARN(code[q], (int32_t)r->rank,
                         "rank %lld: %s: %llu [memory] event%s %s; first: traceEvents[%lld] (ts %s%lld.%03lld us, "
                         "device %lld)",
                         (long long)r->rank, p, (unsigned long long)is->count, is->count == 1 ? "" : "s", what[q],
                         (long long)is->event, is->ts_ns < 0 ? "-" : "", llabs(is->ts_ns / 1000),
                         llabs(is->ts_ns % 1000), (long long)is->device);
            }
        }
        if (s->no_ts_kernels)
            WARN("kernels_without_ts", (int32_t)r->rank,
                 "rank %lld: %llu kernel%s no \"ts\" (placed at time 0: this rank's GPU numbers are wrong)",
                 (long long)r->rank, (unsigned long long)s->no_ts_kernels, s->no_ts_kernels == 1 ? " has" : "s have");
        if (s->no_ts > s->no_ts_kernels)
            WARN("events_without_ts", (int32_t)r->rank, "rank %lld: %llu other complete event%s no \"ts\" (placed at time 0)",
                 (long long)r->rank, (unsigned long long)(s->no_ts - s->no_ts_kernels),
                 s->no_ts - s->no_ts_kernels == 1 ? " has" : "s have");
        if (s->by_class[MT_CLASS_COMM] > s->link.comm_with_coll)
            WARN("unlinked_comm_kernels", (int32_t)r->rank, "rank %lld: %llu communication kernels could not be tied to a collective\n", (long long)r->rank,
                 (unsigned long long)(s->by_class[MT_CLASS_COMM] - s->link.comm_with_coll));
        if (source_is(r, MT_RANK_FROM_FILENAME))
            WARN("rank_from_file_name", (int32_t)r->rank, "rank %lld: %s %s; rank taken from the file name\n", (long long)r->rank,
                 base(p), s->nsys ? "(an Nsight Systems export) names no rank" : "has no distributedInfo.rank");
        if (source_is(r, MT_RANK_FROM_DEFAULT))
            WARN("rank_default", (int32_t)r->rank, "%s names no rank; as the only trace it is taken as rank 0\n", base(p));
    }
    if (f->critpath_skipped)
        WARN("critical_path_skipped", -1, "%s", f->critpath_skipped);
    warn_groups(w, rep, f->world_disagree);
    /* one run?  how good is the fit? */
    static const mt_trust_t trusted;
    const mt_trust_t *tr = f->trust ? f->trust : &trusted;
    if (tr->mixed && tr->a < rep->n_inputs && tr->b < rep->n_inputs)
        WARN(mt_trust_code_str(tr->mixed), -1, "%s and %s are not of one run: %s; merged anyway (--force): the "
             "cross-rank results compare different runs",
             base(rep->inputs[tr->a].path), base(rep->inputs[tr->b].path),
             tr->why);
    if (tr->poor_fit && (size_t)tr->worst < rep->n_clocks) {
        char e[32];
        if (tr->fit_error_ns >= 1e6)
            snprintf(e, sizeof e, "%.2f ms", tr->fit_error_ns / 1e6);
        else
            snprintf(e, sizeof e, "%.1f us", tr->fit_error_ns / 1e3);
        WARN("poor_clock_fit", clocks[tr->worst].rank, "rank %d: the clock fit is poor (residual p99 %s from %llu "
             "collectives): arrivals and waits may be off by that much", clocks[tr->worst].rank, e,
             (unsigned long long)tr->worst_matched);
    }
    if (!rep->aligned && rep->n_inputs > 1)
        WARN("no_align", -1, "clocks not aligned (--no-align): stragglers and waits compare raw clocks");
    if (m->partial)
        WARN("partial_collectives", -1, "%llu collective instances lack some participants (those ranks' traces miss the kernels: cut short, "
             "dropped events, or not the same job)\n",
             (unsigned long long)m->partial);
    if (m->mismatched)
        WARN("mismatched_collectives", -1, "%llu collective instances disagree across ranks (collective or size): not used for alignment\n",
             (unsigned long long)m->mismatched);
    if (f->merge_failed)
        WARN("merge_failed", -1, "the merged trace was not written (see the error above)\n");
#undef WARN
    return w->st;
}

