/* The terminal summary (mt_report_text): what was loaded and matched, the
 * clock of every rank, Nsight Systems sessions, NCCL files, then the
 * per-rank, cross-rank, steps, pipeline and memory text sections, the
 * gates, every warning and what was written. Written into a sink: the
 * program decides where it goes. */
#define _POSIX_C_SOURCE 200809L /* gmtime_r */
#include "mergetrace/report.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/text.h"
#include "mergetrace/loader.h"
#include "mergetrace/nsys.h"
#include "mergetrace/version.h"

/* Past this many ranks the clock table shows its extremes. */
#define CLOCK_ROWS_MAX 32
#define CLOCK_ROWS_WORST 8

/* A file's base name in at most width bytes for a table column: names that
 * are longer keep their start and their end (where ranks are numbered)
 * around a '~'. Control characters are escaped first: the label is a
 * terminal cell. Returns buf. */
static const char *label(const char *path, size_t width, char *buf, size_t cap)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    char shown[512];
    size_t n = mt_text_line(shown, sizeof shown, b, strlen(b));
    if (width >= cap)
        width = cap - 1;
    if (n <= width || width < 12) {
        snprintf(buf, cap, "%.*s", (int)width, shown);
        return buf;
    }
    size_t head = 10, tail = width - head - 1;
    snprintf(buf, cap, "%.*s~%s", (int)head, shown, shown + n - tail);
    return buf;
}

static bool is_nsys(const mt_report_input_t *in)
{
    return in->summary && in->summary->nsys && !in->nccl_only;
}

/* Nsight Systems exports: their time stamps are the session's UTC start plus
 * nsys's own clock, so the fitted offsets are how far aligning by UTC alone
 * would have been off. */
static void nsys_lines(mt_out_t *out, const mt_report_t *r)
{
    size_t n = 0, i_max = 0;
    int64_t worst = 0, first = INT64_MAX, last = INT64_MIN;
    for (size_t i = 0; i < r->n_inputs && i < r->n_clocks; i++) {
        const mt_report_input_t *in = &r->inputs[i];
        if (!is_nsys(in))
            continue;
        n++;
        int64_t start = in->summary->session_start_ns;
        if (start >= 0) {
            first = start < first ? start : first;
            last = start > last ? start : last;
        }
        const mt_clock_t *c = &r->clocks[i];
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
        mt_out_printf(out, "Nsight Systems: 1 rank; its session started %s.%03lld UTC\n", when,
                      (long long)(first / 1000000 % 1000));
    } else if (first == INT64_MAX)
        mt_out_printf(out, "Nsight Systems: %zu rank%s; no session start times (an export of before 2021)\n", n,
                      n == 1 ? "" : "s");
    else if (!worst)
        mt_out_printf(out, "Nsight Systems: %zu rank%s; sessions started within %.3f ms of each other (UTC)\n", n,
                      n == 1 ? "" : "s", (double)(last - first) / 1e6);
    else
        mt_out_printf(out,
                      "Nsight Systems: %zu rank%s; sessions started within %.3f ms of each other (UTC); aligning by "
                      "UTC alone would have been off by up to %.3f ms (rank %lld)\n",
                      n, n == 1 ? "" : "s", (double)(last - first) / 1e6, (double)worst / 1e6,
                      (long long)r->inputs[i_max].rank);
}

/* The NCCL files' table: which rows aligned each rank and how NCCL's GPU
 * times agree with Kineto's kernels. */
static void nccl_lines(mt_out_t *out, const mt_report_t *r, const char *B, const char *N)
{
    if (!r->n_nccl || !r->nccl)
        return;
    const char *ns = r->nccl_source ? r->nccl_source : "kineto";
    const char *src = !strcmp(ns, "mixed") ? "Kineto rows where a rank has a trace, else NCCL"
                      : !strcmp(ns, "nccl") ? "NCCL rows"
                                            : "Kineto rows";
    mt_out_printf(out,
                  "\n%sNCCL files%s (plugin, Inspector or example profiler; clocks aligned on %s; agreement: |NCCL "
                  "GPU - Kineto kernel| after alignment)\n",
                  B, N, src);
    mt_out_printf(out, "%s%5s  %-26s %7s %7s %-8s %7s %17s %17s%s\n", B, "rank", "file", "tasks", "rows", "aligns",
                  "pairs", "start p50/p99 us", "end p50/p99 us", N);
    for (size_t i = 0; i < r->n_nccl; i++) {
        const mt_report_nccl_t *x = &r->nccl[i];
        char s[32] = "-", e[32] = "-", p[24] = "-";
        if (x->agree) {
            snprintf(p, sizeof p, "%llu", (unsigned long long)x->agree->pairs);
            if (x->agree->pairs) {
                snprintf(s, sizeof s, "%.1f / %.1f", x->agree->start_p50_ns / 1e3, x->agree->start_p99_ns / 1e3);
                snprintf(e, sizeof e, "%.1f / %.1f", x->agree->end_p50_ns / 1e3, x->agree->end_p99_ns / 1e3);
            }
        }
        char name[32];
        mt_out_printf(out, "%5d  %-26.26s %7llu %7llu %-8s %7s %17s %17s%s\n", x->rank,
                      label(x->path, 26, name, sizeof name), (unsigned long long)x->tasks,
                      (unsigned long long)x->rows, x->aligned_on_nccl ? "nccl" : "kineto", p, s, e,
                      x->with_kineto ? "" : "  NCCL only");
    }
}

/* The bytes of the Nsight Systems exports (SQLite) the ranks came from,
 * each file once: the ranks of one export are its parts ("<file>#pid<N>"),
 * each of which counted the whole file (issue 39 papercut: 'loaded 4.9 MB
 * of JSON' for one 2.4 MB .sqlite of two GPUs). */
static uint64_t sqlite_once(const mt_report_t *r)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < r->n_inputs; i++) {
        if (!is_nsys(&r->inputs[i]))
            continue;
        const char *p = r->inputs[i].path;
        size_t fl = mt_nsys_part_file(p);
        fl = fl ? fl : strlen(p);
        bool seen = false;
        for (size_t k = 0; k < i && !seen; k++) {
            const char *q = r->inputs[k].path;
            size_t ql = mt_nsys_part_file(q);
            seen = is_nsys(&r->inputs[k]) && (ql ? ql : strlen(q)) == fl && !strncmp(p, q, fl);
        }
        if (!seen)
            sum += r->inputs[i].json_bytes;
    }
    return sum;
}

/* The JSON bytes of the job with each merged trace counted once (the most
 * any of its ranks read of it: a rank reads the file up to its part, so
 * summed over ranks the file counts once per rank); *parts: how many ranks
 * came from a merged trace. */
static uint64_t json_once(const mt_report_t *r, size_t *parts)
{
    uint64_t sum = 0;
    size_t n = r->n_inputs;
    *parts = 0;
    size_t *flen = malloc((n ? n : 1) * sizeof *flen); /* <file>'s length in a part's path; 0: no part */
    for (size_t i = 0; i < n; i++) {
        size_t len = 0;
        if (is_nsys(&r->inputs[i])) { /* sqlite_once */
            if (flen)
                flen[i] = 0;
            continue;
        }
        if (!flen || mt_merged_part_parse(r->inputs[i].path, &len) < 0)
            len = 0;
        if (flen)
            flen[i] = len;
        if (len)
            ++*parts;
        else
            sum += r->inputs[i].json_bytes;
    }
    /* the first part of each file adds the most any part read of it; the
     * search stops at an earlier part of the same file, so one merged trace
     * costs one pass over the ranks */
    for (size_t i = 0; flen && i < n; i++) {
        if (!flen[i])
            continue;
        const char *p = r->inputs[i].path;
        bool seen = false;
        for (size_t k = 0; k < i && !seen; k++)
            seen = flen[k] == flen[i] && !strncmp(p, r->inputs[k].path, flen[i]);
        if (seen)
            continue;
        uint64_t most = r->inputs[i].json_bytes;
        for (size_t k = i + 1; k < n; k++)
            if (flen[k] == flen[i] && !strncmp(p, r->inputs[k].path, flen[i]) && r->inputs[k].json_bytes > most)
                most = r->inputs[k].json_bytes;
        sum += most;
    }
    free(flen);
    return sum;
}

/* The first lines: the job, what was read and how fast, what matched. */
static void head_lines(mt_out_t *out, const mt_report_t *r, const mt_report_text_opts_t *t, const char *B,
                       const char *N)
{
    uint64_t json = 0, events = 0;
    for (size_t i = 0; i < r->n_inputs; i++) {
        json += is_nsys(&r->inputs[i]) ? 0 : r->inputs[i].json_bytes;
        events += r->inputs[i].events;
    }
    size_t n = r->n_inputs;
    mt_out_printf(out, "%smergetrace %s%s: %zu rank%s of world size %lld, %d %s\n", B,
                  r->version ? r->version : MERGETRACE_VERSION, N, n, n == 1 ? "" : "s", (long long)r->world_size,
                  t->n_procs, t->threads ? "worker threads" : t->n_procs == 1 ? "process" : "processes");
    size_t parts = 0;
    uint64_t once = json_once(r, &parts), sq = sqlite_once(r);
    char what[96]; /* what was read: JSON, Nsight Systems' SQLite, or both */
    if (sq && (once || parts))
        snprintf(what, sizeof what, "%.1f MB of JSON and %.1f MB of SQLite", once / 1e6, sq / 1e6);
    else if (sq)
        snprintf(what, sizeof what, "%.1f MB of SQLite", sq / 1e6);
    else
        snprintf(what, sizeof what, "%.1f MB of JSON", once / 1e6);
    double t_load = t->load_s;
    if (parts) /* every rank of a merged trace read the file up to its part: that is the work, not the file's size */
        mt_out_printf(out,
                      "loaded %s, %llu events in %.3f s; a merged trace is parsed once per rank "
                      "(%zu part%s: %.1f MB parsed in all, %.0f MB/s); aligned in %.3f s",
                      what, (unsigned long long)events, t_load, parts, parts == 1 ? "" : "s", json / 1e6,
                      t_load > 0 ? json / 1e6 / t_load : 0.0, t->align_s);
    else
        mt_out_printf(out, "loaded %s, %llu events in %.3f s (%.0f MB/s); aligned in %.3f s", what,
                      (unsigned long long)events, t_load, t_load > 0 ? (json + sq) / 1e6 / t_load : 0.0, t->align_s);
    if (t->merged_path)
        mt_out_printf(out, "; merged trace in %.3f s", t->merge_s);
    mt_out_puts(out, "\n\n");
    static const mt_match_stats_t none;
    const mt_match_stats_t *m = r->match ? r->match : &none;
    uint64_t inst = m->full + m->partial + m->unmatched + m->mismatched;
    uint64_t nk = m->rows - m->cpu_rows;
    mt_out_printf(out, "collectives: %llu kernel%s", (unsigned long long)nk, nk == 1 ? "" : "s");
    if (m->cpu_rows) /* gloo: CPU ranges, no kernel */
        mt_out_printf(out, " + %llu gloo CPU range%s", (unsigned long long)m->cpu_rows, m->cpu_rows == 1 ? "" : "s");
    mt_out_printf(out, " -> %llu instance%s: %llu full, %llu partial, %llu unmatched, %llu mismatched\n",
                  (unsigned long long)inst, inst == 1 ? "" : "s", (unsigned long long)m->full,
                  (unsigned long long)m->partial, (unsigned long long)m->unmatched, (unsigned long long)m->mismatched);
    static const char *const key_names[MT_KEY_COUNT_] = {"Comms Id", "group+Seq", "group+order", "stream+order", "P2P"};
    mt_out_puts(out, "  matched by:");
    for (int k = 0; k < MT_KEY_COUNT_; k++)
        if (m->by_key[k])
            mt_out_printf(out, " %s %llu", key_names[k], (unsigned long long)m->by_key[k]);
    mt_out_printf(out, "%s\n\n", inst ? "" : " (none)");
}

/* The clock of every rank (many ranks: the reference, every rank not
 * connected and the CLOCK_ROWS_WORST largest residuals; report.json has
 * all), and the n.s. note on drift. */
static void clock_lines(mt_out_t *out, const mt_report_t *r, const char *B, const char *N)
{
    bool merged_input = r->clock_note != NULL;
    bool no_align = !r->aligned || merged_input; /* a merged trace read back fits no clock */
    size_t n = r->n_inputs < r->n_clocks ? r->n_inputs : r->n_clocks;
    const mt_clock_t *cl = r->clocks;
    mt_out_printf(out, "%sclock alignment%s onto rank %d%s\n", B, N, r->reference_rank,
                  merged_input ? " (none: a merged trace, on the one clock it was corrected onto when written)"
                  : no_align   ? " (disabled: --no-align)"
                               : "");
    mt_out_printf(out, "%s%5s  %-26s %9s %11s %13s %8s %17s %5s%s\n", B, "rank", "file", "events", "offset ms",
                  "drift ppm", "matched", "resid p50/p99 us", "viol", N);
    /* many ranks (issue 39 papercut: 305 lines at 128 ranks) */
    unsigned char *show = NULL;
    size_t shown = 0;
    if (n > CLOCK_ROWS_MAX && (show = calloc(n, 1))) {
        for (size_t i = 0; i < n; i++)
            show[i] = cl[i].reference || !cl[i].connected;
        for (int q = 0; q < CLOCK_ROWS_WORST; q++) {
            long best = -1;
            for (size_t i = 0; i < n; i++)
                if (!show[i] && (best < 0 || cl[i].residual_p99_ns > cl[best].residual_p99_ns))
                    best = (long)i;
            if (best >= 0)
                show[best] = 1;
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (show && !show[i])
            continue;
        shown++;
        const mt_report_input_t *in = &r->inputs[i];
        const mt_clock_t *c = &cl[i];
        char resid[32], name[32], drift[24];
        snprintf(resid, sizeof resid, "%.1f / %.1f", c->residual_p50_ns / 1e3, c->residual_p99_ns / 1e3);
        char matched[24] = "-"; /* no fit (--no-align, a merged trace): no collective was matched to fit a clock */
        if (!no_align)
            snprintf(matched, sizeof matched, "%llu", (unsigned long long)c->matched);
        mt_out_printf(out, "%5lld  %-26.26s %9llu %11.3f %13s %8s %17s %5llu  %s\n", (long long)in->rank,
                      label(in->path, 26, name, sizeof name), (unsigned long long)in->events, c->offset_ns / 1e6,
                      mt_clock_drift_text(c, drift, sizeof drift), matched, resid, (unsigned long long)c->violations,
                      c->reference ? "ref" : c->connected ? "" : "NOT CONNECTED");
    }
    if (show) {
        double lo = 0, hi = 0;
        for (size_t i = 0; i < n; i++) {
            double off = cl[i].offset_ns / 1e6;
            lo = i == 0 || off < lo ? off : lo;
            hi = i == 0 || off > hi ? off : hi;
        }
        mt_out_printf(out,
                      "  ... %zu more ranks in report.json (shown: the reference, any not connected, the %d worst "
                      "residuals);\n  offsets of all %zu from %.3f to %.3f ms\n",
                      n - shown, CLOCK_ROWS_WORST, n, lo, hi);
        free(show);
    }
    bool ns = false;
    for (size_t i = 0; i < n; i++)
        ns |= !cl[i].drift_significant && cl[i].drift_fit_ppm != 0;
    if (ns)
        mt_out_puts(out, "  n.s.: the fitted drift is not significant (under 3 standard errors, or under 8 points "
                         "over 1 ms) and was not applied\n");
}

/* A section writer of this folder into out (nothing after an error). */
#define SECTION(call)                                                                                              \
    do {                                                                                                           \
        if (out.st == MT_OK)                                                                                       \
            out.st = (call);                                                                                       \
    } while (0)

/* The "warnings" head and one indented line per warning; nothing when w
 * is empty. */
static mt_status_t warnings_text(const mt_warnings_t *w, bool color, mt_write_fn write, void *ctx)
{
    mt_out_t out = {.w = write, .ctx = ctx, .st = MT_OK};
    if (!w || !w->n)
        return MT_OK;
    mt_out_printf(&out, "\n%swarnings%s\n", color ? "\033[33m" : "", color ? "\033[0m" : "");
    for (size_t i = 0; i < w->n; i++) {
        char line[4096]; /* a file name in a warning is escaped: it cannot forge a line */
        mt_text_line(line, sizeof line, w->v[i].text, strlen(w->v[i].text));
        mt_out_printf(&out, "  %s\n", line);
    }
    return out.st;
}

mt_status_t mt_report_text(const mt_report_t *r, const mt_report_text_opts_t *t, mt_write_fn write, void *ctx)
{
    mt_out_t out = {.w = write, .ctx = ctx, .st = MT_OK};
    const char *B = t->color ? "\033[1m" : "", *Y = t->color ? "\033[33m" : "", *N = t->color ? "\033[0m" : "";
    /* a section left out for memory is the first thing said (issue 43: a
     * last resort, never a silent one at the bottom of a long report) */
    for (size_t i = 0; r->warnings && i < r->warnings->n; i++)
        if (!strcmp(r->warnings->v[i].code, "critical_path_skipped"))
            mt_out_printf(&out, "%s%s%s\n", Y, r->warnings->v[i].text, N);
    head_lines(&out, r, t, B, N);
    clock_lines(&out, r, B, N);
    nsys_lines(&out, r);
    nccl_lines(&out, r, B, N);
    const mt_rank_analysis_t *const *an = r->analyses;
    if (an && r->n_analyses && an[0]) { /* none, or NCCL data only (results come first) */
        mt_out_puts(&out, "\n");
        SECTION(mt_report_rank_text(an, r->n_analyses, write, ctx));
    }
    if (r->cross) {
        mt_out_puts(&out, "\n");
        if (t->mixed_runs) /* --force: every cross-rank section says what it compares */
            mt_out_printf(&out, "%scross-rank results below compare traces of different runs (--force)%s\n", Y, N);
        SECTION(mt_report_cross_text(r->cross, write, ctx));
    }
    if (r->critpath) {
        mt_out_puts(&out, "\n");
        SECTION(mt_report_steps_text(r->critpath, write, ctx));
    }
    if (r->pipeline) {
        mt_out_puts(&out, "\n");
        if (t->mixed_runs)
            mt_out_printf(&out, "%sthe pipeline below mixes traces of different runs (--force)%s\n", Y, N);
        SECTION(mt_report_pipeline_text(r->pipeline, write, ctx));
    }
    if (r->pipeline_note && r->pipeline_note[0])
        mt_out_printf(&out, "%spipeline: %s\n", r->pipeline ? "" : "\n", r->pipeline_note);
    if (r->memory && r->memory->n_peaks) {
        mt_out_puts(&out, "\n");
        SECTION(mt_report_memory_text(r->memory, an, r->n_analyses, write, ctx));
    }
    if (r->n_gates) {
        size_t passed = 0;
        for (size_t i = 0; i < r->n_gates; i++)
            passed += r->gates[i].pass;
        mt_out_printf(&out, "\n%sgates%s: %zu of %zu passed\n", B, N, passed, r->n_gates);
        for (size_t i = 0; i < r->n_gates; i++) {
            const mt_gate_t *g = &r->gates[i];
            if (g->measured)
                mt_out_printf(&out, "  %s %s (%.6g%s)\n", g->pass ? "pass" : "FAIL", g->expr, g->value,
                              g->too_few ? "; too few samples to tell" : "");
            else
                mt_out_printf(&out, "  FAIL %s (not measured: %s)\n", g->expr, g->why);
        }
    }
    SECTION(warnings_text(r->warnings, t->color, write, ctx));
    char dir[1024], merged[1024]; /* the user's names, escaped: they cannot forge a line */
    const char *od = t->out_dir ? t->out_dir : ".";
    mt_text_line(dir, sizeof dir, od, strlen(od));
    mt_out_printf(&out, "\nwrote %s/report.json", dir);
    if (t->html)
        mt_out_printf(&out, "%s%s/report.html", t->merged_path ? ", " : " and ", dir);
    if (t->merged_path) {
        mt_text_line(merged, sizeof merged, t->merged_path, strlen(t->merged_path));
        mt_out_printf(&out, " and %s (%llu events)", merged, (unsigned long long)r->merged_events);
    }
    mt_out_puts(&out, "\n");
    if (t->removed && t->removed[0])
        mt_out_printf(&out, "removed %s of an earlier run from %s (this run does not write %s)\n", t->removed, dir,
                      strstr(t->removed, " and ") ? "them" : "it");
    return out.st;
}
