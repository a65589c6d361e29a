/* The terminal summary on process 0 (terminal.h): what was loaded and
 * matched, the clock of every rank, NCCL data, per-rank GPU time, the
 * cross-rank and pipeline sections, the gates, and every warning. */
#define _POSIX_C_SOURCE 200809L /* gmtime_r */
#include "terminal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mergetrace/loader.h"
#include "procs.h"

mt_status_t terminal_write(void *ctx, const void *data, size_t len)
{
    (void)ctx;
    return fwrite(data, 1, len, stdout) == len ? MT_OK : MT_ERR_IO;
}

/* Nsight Systems exports: their time stamps are the session's UTC start plus
 * nsys's own clock, so the fitted offsets are how far aligning by UTC alone
 * would have been off. */
static void nsys_print(FILE *out, const job_t *j, const mt_align_result_t *al)
{
    size_t n = 0, i_max = 0;
    int64_t worst = 0, first = INT64_MAX, last = INT64_MIN;
    for (size_t i = 0; i < j->n; i++) {
        const mt_trace_summary_t *s = &j->res[i].sum;
        if (!s->nsys || j->res[i].nccl.is_nccl)
            continue;
        n++;
        if (s->session_start_ns >= 0) {
            first = s->session_start_ns < first ? s->session_start_ns : first;
            last = s->session_start_ns > last ? s->session_start_ns : last;
        }
        const mt_clock_t *c = &al->clocks[i];
        int64_t off = c->offset_ns < 0 ? -c->offset_ns : c->offset_ns;
        if (c->connected && !c->reference && off >= worst) {
            worst = off;
            i_max = i;
        }
    }
    if (!n)
        return;
    if (first != INT64_MAX && n == 1) {
        time_t sec = (time_t)(first / 1000000000);
        struct tm tm;
        char when[32] = "?";
        if (gmtime_r(&sec, &tm))
            strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
        fprintf(out, "Nsight Systems: 1 rank; its session started %s.%03lld UTC\n", when,
                (long long)(first / 1000000 % 1000));
    } else if (first == INT64_MAX)
        fprintf(out, "Nsight Systems: %zu rank%s; no session start times (an export of before 2021)\n", n,
                n == 1 ? "" : "s");
    else if (!worst)
        fprintf(out, "Nsight Systems: %zu rank%s; sessions started within %.3f ms of each other (UTC)\n", n,
                n == 1 ? "" : "s", (double)(last - first) / 1e6);
    else
        fprintf(out,
                "Nsight Systems: %zu rank%s; sessions started within %.3f ms of each other (UTC); aligning by UTC "
                "alone would have been off by up to %.3f ms (rank %lld)\n",
                n, n == 1 ? "" : "s", (double)(last - first) / 1e6, (double)worst / 1e6, (long long)j->res[i_max].rank);
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
void terminal_warnings(const options_t *o, const input_list_t *l, const job_t *j, bool merge_failed,
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
    if (kernels == 0 && m->cpu_rows == 0 && nccl_job_rows(&j->nccl) == 0 && j->n > 1)
        WARN("no_comm_kernels", -1, "no communication kernels in any trace: nothing to align the clocks with\n");
    nccl_warn(w, &j->nccl, l);
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
            WARN("not_epoch", (int32_t)r->rank, "rank %lld: %s: timestamps are not on the Unix epoch%s\n", (long long)r->rank, inputs_base(p),
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
                 inputs_base(p), s->nsys ? "(an Nsight Systems export) names no rank" : "has no distributedInfo.rank");
        if (r->rank_source == MT_RANK_FROM_DEFAULT)
            WARN("rank_default", (int32_t)r->rank, "%s names no rank; as the only trace it is taken as rank 0\n", inputs_base(p));
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
             inputs_base(l->files[j->res[tr->a].index].path), inputs_base(l->files[j->res[tr->b].index].path),
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

void terminal_warnings_print(FILE *out, const mt_warnings_t *w, const char *Y, const char *N)
{
    if (!w || !w->n)
        return;
    fprintf(out, "\n%swarnings%s\n", Y, N);
    for (size_t i = 0; i < w->n; i++) {
        char line[4096]; /* a file name in a warning is escaped: it cannot forge a line */
        mt_text_line(line, sizeof line, w->v[i].text, strlen(w->v[i].text));
        fprintf(out, "  %s\n", line);
    }
}

/* The JSON bytes of the job with each merged trace counted once (the most
 * any of its ranks read of it: a rank reads the file up to its part, so
 * summed over ranks the file counts once per rank); *parts: how many ranks
 * came from a merged trace. */
/* The bytes of the Nsight Systems exports (SQLite) the ranks came from,
 * each file once: the ranks of one export are its parts ("<file>#pid<N>"),
 * each of which counted the whole file (issue 39 papercut: 'loaded 4.9 MB
 * of JSON' for one 2.4 MB .sqlite of two GPUs). */
static uint64_t sqlite_once(const input_list_t *l, const job_t *j)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < j->n; i++) {
        if (!j->res[i].sum.nsys)
            continue;
        const char *p = l->files[j->res[i].index].path;
        size_t fl = mt_nsys_part_file(p);
        fl = fl ? fl : strlen(p);
        bool seen = false;
        for (size_t k = 0; k < i && !seen; k++) {
            const char *q = l->files[j->res[k].index].path;
            size_t ql = mt_nsys_part_file(q);
            seen = j->res[k].sum.nsys && (ql ? ql : strlen(q)) == fl && !strncmp(p, q, fl);
        }
        if (!seen)
            sum += j->res[i].sum.bytes_json;
    }
    return sum;
}

static uint64_t json_once(const input_list_t *l, const job_t *j, size_t *parts)
{
    uint64_t sum = 0;
    *parts = 0;
    size_t *flen = malloc((j->n ? j->n : 1) * sizeof *flen); /* <file>'s length in a part's path; 0: no part */
    for (size_t i = 0; i < j->n; i++) {
        size_t len = 0;
        if (j->res[i].sum.nsys) { /* sqlite_once */
            if (flen)
                flen[i] = 0;
            continue;
        }
        if (!flen || mt_merged_part_parse(l->files[j->res[i].index].path, &len) < 0)
            len = 0;
        if (flen)
            flen[i] = len;
        if (len)
            ++*parts;
        else
            sum += j->res[i].sum.bytes_json;
    }
    /* the first part of each file adds the most any part read of it; the
     * search stops at an earlier part of the same file, so one merged trace
     * costs one pass over the ranks */
    for (size_t i = 0; flen && i < j->n; i++) {
        if (!flen[i])
            continue;
        const char *p = l->files[j->res[i].index].path;
        bool seen = false;
        for (size_t k = 0; k < i && !seen; k++)
            seen = flen[k] == flen[i] && !strncmp(p, l->files[j->res[k].index].path, flen[i]);
        if (seen)
            continue;
        uint64_t most = j->res[i].sum.bytes_json;
        for (size_t k = i + 1; k < j->n; k++)
            if (flen[k] == flen[i] && !strncmp(p, l->files[j->res[k].index].path, flen[i]) &&
                j->res[k].sum.bytes_json > most)
                most = j->res[k].sum.bytes_json;
        sum += most;
    }
    free(flen);
    return sum;
}

/* Past this many ranks the clock table shows its extremes (terminal_summary). */
#define CLOCK_ROWS_MAX 32
#define CLOCK_ROWS_WORST 8

void terminal_summary(const options_t *o, const input_list_t *l, const job_t *j, const phase_times_t *pt, int n_procs,
                      const char *merged_path, uint64_t merged_events, const mt_warnings_t *w, const char *removed)
{
    const mt_align_result_t *al = &j->al;
    const mt_rank_analysis_t *const *an = (const mt_rank_analysis_t *const *)j->an;
    const mt_cross_t *cross = j->cross;
    const mt_pipeline_t *pipe = j->pipe;
    const char *pipe_note = j->pipe_note[0] ? j->pipe_note : NULL;
    const mt_gate_t *gates = o->gates;
    size_t n_gates = o->n_gates;
    double t_load = pt->load, t_align = pt->align, t_merge = pt->merged_write;
    FILE *out = stdout;
    /* Under mpirun stdout is often a pseudo-terminal even when the user
     * pipes mpirun's output, so "auto" means no colour there. */
    bool under_mpirun = procs_mpi();
    bool color = o->color == 1 || (o->color < 0 && isatty(1) && !under_mpirun && !getenv("NO_COLOR"));
    const char *B = color ? "\033[1m" : "", *Y = color ? "\033[33m" : "", *N = color ? "\033[0m" : "";
    uint64_t json = 0, events = 0, kernels = 0;
    for (size_t i = 0; i < j->n; i++) {
        json += j->res[i].sum.nsys ? 0 : j->res[i].sum.bytes_json;
        events += j->res[i].sum.events;
        kernels += j->res[i].sum.by_class[MT_CLASS_COMM];
    }
    /* a run by hand on worker threads (procs.h) says threads */
    fprintf(out, "%smergetrace %s%s: %zu rank%s of world size %lld, %d %s\n", B, MERGETRACE_VERSION, N, j->n,
            j->n == 1 ? "" : "s", (long long)j->world, n_procs,
            procs_threads() ? "worker threads" : n_procs == 1 ? "process" : "processes");
    size_t parts = 0;
    uint64_t once = json_once(l, j, &parts), sq = sqlite_once(l, j);
    char what[96]; /* what was read: JSON, Nsight Systems' SQLite, or both */
    if (sq && (once || parts))
        snprintf(what, sizeof what, "%.1f MB of JSON and %.1f MB of SQLite", once / 1e6, sq / 1e6);
    else if (sq)
        snprintf(what, sizeof what, "%.1f MB of SQLite", sq / 1e6);
    else
        snprintf(what, sizeof what, "%.1f MB of JSON", once / 1e6);
    if (parts) /* every rank of a merged trace read the file up to its part: that is the work, not the file's size */
        fprintf(out, "loaded %s, %llu events in %.3f s; a merged trace is parsed once per rank "
                     "(%zu part%s: %.1f MB parsed in all, %.0f MB/s); aligned in %.3f s",
                what, (unsigned long long)events, t_load, parts, parts == 1 ? "" : "s", json / 1e6,
                t_load > 0 ? json / 1e6 / t_load : 0.0, t_align);
    else
        fprintf(out, "loaded %s, %llu events in %.3f s (%.0f MB/s); aligned in %.3f s", what,
                (unsigned long long)events, t_load, t_load > 0 ? (json + sq) / 1e6 / t_load : 0.0, t_align);
    if (merged_path)
        fprintf(out, "; merged trace in %.3f s", t_merge);
    fprintf(out, "\n\n");
    const mt_match_stats_t *m = &al->match;
    uint64_t inst = m->full + m->partial + m->unmatched + m->mismatched;
    uint64_t nk = m->rows - m->cpu_rows;
    fprintf(out, "collectives: %llu kernel%s", (unsigned long long)nk, nk == 1 ? "" : "s");
    if (m->cpu_rows) /* gloo: CPU ranges, no kernel */
        fprintf(out, " + %llu gloo CPU range%s", (unsigned long long)m->cpu_rows, m->cpu_rows == 1 ? "" : "s");
    fprintf(out, " -> %llu instance%s: %llu full, %llu partial, %llu unmatched, %llu mismatched\n",
            (unsigned long long)inst, inst == 1 ? "" : "s",
            (unsigned long long)m->full,
            (unsigned long long)m->partial, (unsigned long long)m->unmatched, (unsigned long long)m->mismatched);
    static const char *const key_names[MT_KEY_COUNT_] = {"Comms Id", "group+Seq", "group+order", "stream+order", "P2P"};
    fprintf(out, "  matched by:");
    for (int k = 0; k < MT_KEY_COUNT_; k++)
        if (m->by_key[k])
            fprintf(out, " %s %llu", key_names[k], (unsigned long long)m->by_key[k]);
    fprintf(out, "%s\n\n", inst ? "" : " (none)");
    int32_t ref = -1;
    for (size_t i = 0; i < al->n_clocks; i++)
        if (al->clocks[i].reference)
            ref = al->clocks[i].rank;
    fprintf(out, "%sclock alignment%s onto rank %d%s\n", B, N, ref,
            o->merged_input ? " (none: a merged trace, on the one clock it was corrected onto when written)"
            : o->no_align   ? " (disabled: --no-align)"
                            : "");
    fprintf(out, "%s%5s  %-26s %9s %11s %13s %8s %17s %5s%s\n", B, "rank", "file", "events", "offset ms",
            "drift ppm", "matched", "resid p50/p99 us", "viol", N);
    /* many ranks (issue 39 papercut: 305 lines at 128 ranks): the reference,
     * every rank not connected, and the CLOCK_ROWS_WORST with the largest
     * residual p99 (the fits to doubt), in rank order; report.json has all */
    unsigned char *show = NULL;
    size_t shown = 0;
    if (j->n > CLOCK_ROWS_MAX && (show = calloc(j->n, 1))) {
        for (size_t i = 0; i < j->n; i++)
            show[i] = al->clocks[i].reference || !al->clocks[i].connected;
        for (int q = 0; q < CLOCK_ROWS_WORST; q++) {
            long best = -1;
            for (size_t i = 0; i < j->n; i++)
                if (!show[i] && (best < 0 || al->clocks[i].residual_p99_ns > al->clocks[best].residual_p99_ns))
                    best = (long)i;
            if (best >= 0)
                show[best] = 1;
        }
    }
    for (size_t i = 0; i < j->n; i++) {
        if (show && !show[i])
            continue;
        shown++;
        const file_result_t *r = &j->res[i];
        const mt_clock_t *c = &al->clocks[i];
        char resid[32], name[32], drift[24];
        snprintf(resid, sizeof resid, "%.1f / %.1f", c->residual_p50_ns / 1e3, c->residual_p99_ns / 1e3);
        char matched[24] = "-"; /* no fit (--no-align, a merged trace): no collective was matched to fit a clock */
        if (!o->no_align)
            snprintf(matched, sizeof matched, "%llu", (unsigned long long)c->matched);
        fprintf(out, "%5lld  %-26.26s %9llu %11.3f %13s %8s %17s %5llu  %s\n", (long long)r->rank,
                inputs_label(l->files[r->index].path, 26, name, sizeof name), (unsigned long long)r->sum.events,
                c->offset_ns / 1e6, mt_clock_drift_text(c, drift, sizeof drift), matched, resid,
                (unsigned long long)c->violations,
                c->reference ? "ref" : c->connected ? "" : "NOT CONNECTED");
    }
    if (show) {
        double lo = 0, hi = 0;
        for (size_t i = 0; i < j->n; i++) {
            double off = al->clocks[i].offset_ns / 1e6;
            lo = i == 0 || off < lo ? off : lo;
            hi = i == 0 || off > hi ? off : hi;
        }
        fprintf(out, "  ... %zu more ranks in report.json (shown: the reference, any not connected, the %d worst "
                     "residuals);\n  offsets of all %zu from %.3f to %.3f ms\n",
                j->n - shown, CLOCK_ROWS_WORST, j->n, lo, hi);
        free(show);
    }
    bool ns = false;
    for (size_t i = 0; i < j->n; i++)
        ns |= !al->clocks[i].drift_significant && al->clocks[i].drift_fit_ppm != 0;
    if (ns)
        fprintf(out, "  n.s.: the fitted drift is not significant (under 3 standard errors, or under 8 points over 1 ms)"
                     " and was not applied\n");
    nsys_print(out, j, al);
    nccl_print(out, B, N, &j->nccl, l);
    if (an && an[0]) { /* none, or NCCL data only (results come first) */
        fprintf(out, "\n");
        (void)mt_report_rank_text(an, j->n, terminal_write, NULL);
    }
    if (cross) {
        fprintf(out, "\n");
        if (j->trust.mixed) /* --force: every cross-rank section says what it compares */
            fprintf(out, "%scross-rank results below compare traces of different runs (--force)%s\n", Y, N);
        (void)mt_report_cross_text(cross, terminal_write, NULL);
    }
    if (j->cp) {
        fprintf(out, "\n");
        (void)mt_report_steps_text(j->cp, terminal_write, NULL);
    }
    if (pipe) {
        fprintf(out, "\n");
        if (j->trust.mixed)
            fprintf(out, "%sthe pipeline below mixes traces of different runs (--force)%s\n", Y, N);
        (void)mt_report_pipeline_text(pipe, terminal_write, NULL);
    }
    if (pipe_note)
        fprintf(out, "%spipeline: %s\n", pipe ? "" : "\n", pipe_note);
    if (j->memory && j->memory->n_peaks) {
        fprintf(out, "\n");
        (void)mt_report_memory_text(j->memory, an, j->n_an, terminal_write, NULL);
    }
    if (n_gates) {
        size_t passed = 0;
        for (size_t i = 0; i < n_gates; i++)
            passed += gates[i].pass;
        fprintf(out, "\n%sgates%s: %zu of %zu passed\n", B, N, passed, n_gates);
        for (size_t i = 0; i < n_gates; i++) {
            if (gates[i].measured)
                fprintf(out, "  %s %s (%.6g%s)\n", gates[i].pass ? "pass" : "FAIL", gates[i].expr, gates[i].value,
                        gates[i].too_few ? "; too few samples to tell" : "");
            else
                fprintf(out, "  FAIL %s (not measured: %s)\n", gates[i].expr, gates[i].why);
        }
    }
    terminal_warnings_print(out, w, Y, N);
    char dir[1024], merged[1024]; /* the user's names, escaped: they cannot forge a line */
    mt_text_line(dir, sizeof dir, o->out_dir, strlen(o->out_dir));
    fprintf(out, "\nwrote %s/report.json", dir);
    if (!o->no_html)
        fprintf(out, "%s%s/report.html", merged_path ? ", " : " and ", dir);
    if (merged_path) {
        mt_text_line(merged, sizeof merged, merged_path, strlen(merged_path));
        fprintf(out, " and %s (%llu events)", merged, (unsigned long long)merged_events);
    }
    fprintf(out, "\n");
    if (removed && removed[0])
        fprintf(out, "removed %s of an earlier run from %s (this run does not write %s)\n", removed, dir,
                strstr(removed, " and ") ? "them" : "it");
}

