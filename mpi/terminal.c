/* The terminal on process 0 (terminal.h): every warning of the run, and
 * the summary (written by the core's mt_report_text) on stdout. */
#define _POSIX_C_SOURCE 200809L
#include "terminal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "procs.h"

mt_status_t terminal_write(void *ctx, const void *data, size_t len)
{
    (void)ctx;
    return fwrite(data, 1, len, stdout) == len ? MT_OK : MT_ERR_IO;
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
static void warn_groups(mt_warnings_t *w, const job_t *j, const mt_align_result_t *al)
{
    int32_t n_groups = 0, multi = 0;
    for (size_t i = 0; i < al->n_clocks; i++)
        n_groups = al->clocks[i].group + 1 > n_groups ? al->clocks[i].group + 1 : n_groups;
    for (int32_t g = 0; g < n_groups; g++) {
        size_t k = 0;
        for (size_t i = 0; i < al->n_clocks; i++)
            k += al->clocks[i].group == g;
        multi += k >= 2;
    }
    if (multi < 2)
        return;
    line_t t = {.n = 0};
    line_add(&t, "the ranks form %d groups that share no collective:", (int)n_groups);
    for (int32_t g = 0; g < n_groups; g++) {
        line_add(&t, "%s ranks", g ? " |" : "");
        size_t shown = 0;
        for (size_t i = 0; i < al->n_clocks && i < j->n; i++)
            if (al->clocks[i].group == g && shown++ < 8)
                line_add(&t, " %lld", (long long)j->res[i].rank);
        if (shown > 8)
            line_add(&t, " ...");
    }
    mt_warnings_add(w, "clock_groups", -1, "%s", t.b);
    mt_warnings_add(w, "clock_groups", -1,
                    "they look like traces of different jobs%s: only group 0 (with the reference rank) is aligned",
                    j->world_disagree ? " (their world sizes differ too)" : "");
}

/* Process 0: every warning of the run into *w, in the order the terminal
 * prints them. */
void terminal_warnings(const options_t *o, const mt_discover_list_t *l, const job_t *j, bool merge_failed,
                       mt_warnings_t *w)
{
    const mt_align_result_t *al = &j->al;
    const mt_match_stats_t *m = &al->match;
    uint64_t kernels = 0;
    for (size_t i = 0; i < j->n; i++)
        kernels += j->res[i].sum.by_class[MT_CLASS_COMM];
    int32_t ref = -1;
    for (size_t i = 0; i < al->n_clocks; i++)
        if (al->clocks[i].reference)
            ref = al->clocks[i].rank;
#define WARN(code, rank, ...) mt_warnings_add(w, code, rank, __VA_ARGS__)
    if (j->n_absent) {
        line_t t = {.n = 0};
        line_add(&t, "%lld of %lld ranks have no trace:", (long long)j->n_absent, (long long)j->world);
        for (size_t i = 0; i < j->n_missing && i < 32; i++)
            line_add(&t, " %lld", (long long)j->missing[i]);
        WARN("missing_ranks", -1, "%s%s", t.b, j->n_absent > 32 ? " ..." : "");
    }
    for (size_t i = 0; i < j->n_skipped; i++)
        if (j->skipped[i].nccl.left_out)
            WARN("left_out_file", -1, "left out %s: %s\n", l->files[j->skipped[i].index].path, j->skipped[i].message);
        else
            WARN("skipped_file", -1, "skipped %s: not a trace (%s)\n", l->files[j->skipped[i].index].path, j->skipped[i].message);
    for (size_t i = 0; i < l->n_skipped; i++)
        if (l->skipped[i].first)
            WARN("link_not_followed", -1, "did not follow %s: a link to %s, read already", l->skipped[i].path,
                 l->skipped[i].first);
        else
            WARN("skipped_input", -1, "skipped %s: %s", l->skipped[i].path, l->skipped[i].why);
    if (j->world_disagree)
        WARN("world_size_disagree", -1, "the traces disagree on world_size; using the largest, %lld\n", (long long)j->world);
    /* One rank has no clock to align: nothing to warn about. */
    if (kernels == 0 && m->cpu_rows == 0 && mt_nccl_job_rows(&j->nccl) == 0 && j->n > 1)
        WARN("no_comm_kernels", -1, "no communication kernels in any trace: nothing to align the clocks with\n");
    mt_nccl_job_warn(w, &j->nccl);
    for (size_t i = 0; i < j->n; i++) {
        const file_result_t *r = &j->res[i];
        const mt_trace_summary_t *s = &r->sum;
        const mt_clock_t *c = &al->clocks[i];
        const char *p = l->files[r->index].path;
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
            WARN("not_epoch", (int32_t)r->rank, "rank %lld: %s: timestamps are not on the Unix epoch%s\n", (long long)r->rank, mt_discover_base(p),
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
        for (size_t k = 0; j->an && k < j->n_an; k++) {
            /* the [memory] events that could not be used as they are */
            static const char *const what[MT_AN_MEM_ISSUE_COUNT_] = {
                "with a negative \"Total Allocated\" or \"Total Reserved\" (left out)",
                "without \"Total Allocated\" where the device's others have it (left out)",
                "earlier than the memory event before it on the same thread (taken in time order)",
                "of a GPU device id that no GPU activity of the trace has"};
            static const char *const code[MT_AN_MEM_ISSUE_COUNT_] = {"memory_negative", "memory_missing_total",
                                                                     "memory_out_of_order", "memory_no_gpu"};
            if (j->an[k]->rank != (int32_t)r->rank)
                continue;
            for (int q = 0; q < MT_AN_MEM_ISSUE_COUNT_; q++) {
                const mt_an_mem_issue_t *is = &j->an[k]->mem_issues[q];
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
        if (r->rank_source == MT_RANK_FROM_FILENAME)
            WARN("rank_from_file_name", (int32_t)r->rank, "rank %lld: %s %s; rank taken from the file name\n", (long long)r->rank,
                 mt_discover_base(p), s->nsys ? "(an Nsight Systems export) names no rank" : "has no distributedInfo.rank");
        if (r->rank_source == MT_RANK_FROM_DEFAULT)
            WARN("rank_default", (int32_t)r->rank, "%s names no rank; as the only trace it is taken as rank 0\n", mt_discover_base(p));
    }
    if (j->plan.skipped) {
        char note[512];
        mt_critpath_memory_note(note, sizeof note, j->plan.with, j->plan.budget, j->plan.acts, j->plan.rows);
        WARN("critical_path_skipped", -1, "%s", note);
    }
    warn_groups(w, j, al);
    /* one run?  how good is the fit? */
    const mt_trust_t *tr = &j->trust;
    if (tr->mixed)
        WARN(mt_trust_code_str(tr->mixed), -1, "%s and %s are not of one run: %s; merged anyway (--force): the "
             "cross-rank results compare different runs",
             mt_discover_base(l->files[j->res[tr->a].index].path), mt_discover_base(l->files[j->res[tr->b].index].path),
             tr->why);
    if (tr->poor_fit) {
        char e[32];
        if (tr->fit_error_ns >= 1e6)
            snprintf(e, sizeof e, "%.2f ms", tr->fit_error_ns / 1e6);
        else
            snprintf(e, sizeof e, "%.1f us", tr->fit_error_ns / 1e3);
        WARN("poor_clock_fit", al->clocks[tr->worst].rank, "rank %d: the clock fit is poor (residual p99 %s from %llu "
             "collectives): arrivals and waits may be off by that much", al->clocks[tr->worst].rank, e,
             (unsigned long long)tr->worst_matched);
    }
    if (o->no_align && !o->merged_input && j->n > 1)
        WARN("no_align", -1, "clocks not aligned (--no-align): stragglers and waits compare raw clocks");
    if (m->partial)
        WARN("partial_collectives", -1, "%llu collective instances lack some participants (those ranks' traces miss the kernels: cut short, "
             "dropped events, or not the same job)\n",
             (unsigned long long)m->partial);
    if (m->mismatched)
        WARN("mismatched_collectives", -1, "%llu collective instances disagree across ranks (collective or size): not used for alignment\n",
             (unsigned long long)m->mismatched);
    if (merge_failed)
        WARN("merge_failed", -1, "the merged trace was not written (see the error above)\n");
#undef WARN
}

void terminal_summary(const options_t *o, const job_t *j, const mt_report_t *rep, const phase_times_t *pt,
                      int n_procs, const char *merged_path, const char *removed)
{
    /* Under mpirun stdout is often a pseudo-terminal even when the user
     * pipes mpirun's output, so "auto" means no colour there. */
    bool color = o->color == 1 || (o->color < 0 && isatty(1) && !procs_mpi() && !getenv("NO_COLOR"));
    mt_report_text_opts_t t = {.color = color,
                               .n_procs = n_procs,
                               .threads = procs_threads(),
                               .load_s = pt->load,
                               .align_s = pt->align,
                               .merge_s = pt->merged_write,
                               .out_dir = o->out_dir,
                               .html = !o->no_html,
                               .merged_path = merged_path,
                               .removed = removed,
                               .mixed_runs = j->trust.mixed != 0};
    (void)mt_report_text(rep, &t, terminal_write, NULL); /* a write error: outputs_report's check of stdout */
}
