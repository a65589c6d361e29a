/* The outputs of a run (outputs.h): the output directory checked against
 * the inputs, the --window in corrected time, the merged trace through
 * mpi/merged_io.c, report.json and report.html under temporary names then
 * renamed, the summary or report.json on stdout, the failed gates, and
 * --timings. */
#define _DEFAULT_SOURCE /* realpath */
#define _POSIX_C_SOURCE 200809L
#include "outputs.h"
#include "say.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fr_run.h"
#include "merged_io.h"
#include "procs.h"

/* What write_report renders: report.json, or report.html with html. */
typedef struct report_out {
    const mt_report_t *rep;
    const mt_html_opts_t *html;
} report_out_t;

static mt_status_t render_report(const void *arg, mt_write_fn write, void *ctx)
{
    const report_out_t *r = arg;
    return r->html ? mt_report_html(r->rep, r->html, write, ctx) : mt_report_json(r->rep, write, ctx);
}

static mt_status_t render_compare(const void *arg, mt_write_fn write, void *ctx)
{
    return mt_compare_json(arg, write, ctx);
}

/* Write report.json (html NULL) or report.html as out_dir/name
 * (mt_outdir_write). text, when not NULL, is report.json already
 * rendered. */
static int write_report(const char *out_dir, const char *name, const mt_report_t *rep, const mt_html_opts_t *html,
                        const mt_buf_t *text, char *msg, size_t cap)
{
    report_out_t r = {.rep = rep, .html = html};
    return text ? mt_outdir_write(out_dir, name, mt_outdir_bytes, text, MT_OUTDIR_SAY_NOMEM, msg, cap)
                : mt_outdir_write(out_dir, name, render_report, &r, MT_OUTDIR_SAY_NOMEM, msg, cap);
}

int outputs_baseline_read(options_t *o)
{
    char msg[PATH_MAX + 1400];
    mt_discover_baseline_t kind;
    mt_buf_t buf = {0};
    int rc = mt_discover_baseline_read(o->baseline, o->baseline_file, sizeof o->baseline_file, &kind, &buf, msg,
                                       sizeof msg);
    if (rc) {
        mt_buf_free(&buf);
        say("mergetrace: %s\n", msg);
        return rc == 1 ? MT_EXIT_ERROR : MT_EXIT_BAD_INPUT;
    }
    if (kind != MT_DISCOVER_BASELINE_REPORT) {
        /* traces, analysed in this run (mpi/main.c); their report goes to
         * baseline/report.json of -o */
        mt_buf_free(&buf);
        if (o->local || o->timeline_map) {
            say("mergetrace: --baseline %s: %s as the baseline does not go with %s\n", o->baseline,
                kind == MT_DISCOVER_BASELINE_TRACE_DIR ? "a directory of traces" : "a trace",
                o->local ? "--local" : "--timeline-map");
            return MT_EXIT_USAGE;
        }
        snprintf(o->baseline_file, sizeof o->baseline_file, "%.4000s/baseline/report.json", o->out_dir);
        o->baseline_traces = true;
        return MT_EXIT_OK;
    }
    o->baseline_text = (char *)buf.data;
    o->baseline_len = buf.len;
    return MT_EXIT_OK;
}

/* The comparison with the baseline: this run's report.json rendered in
 * memory (into *buf) and read back beside the baseline's, the gates
 * re-evaluated against it. NULL and *code set on failure. */
static mt_compare_t *compare_run(const options_t *o, const mt_report_t *rep, job_t *j, mt_buf_t *buf, int *code)
{
    mt_compare_t *c = NULL;
    mt_error_t err;
    mt_error_clear(&err);
    mt_status_t st = mt_report_json(rep, mt_buf_write, buf);
    if (st == MT_OK)
        st = mt_compare_reports(o->baseline_text, o->baseline_len, o->baseline_file, (const char *)buf->data,
                                buf->len, "report.json", NULL, &c, &err);
    if (st != MT_OK) {
        char line[1200];
        say("mergetrace: comparing with the baseline: %s\n", mt_error_format(&err, line, sizeof line));
        *code = st == MT_ERR_NOMEM ? MT_EXIT_ERROR : MT_EXIT_BAD_INPUT;
        return NULL;
    }
    if (o->n_gates)
        j->gates_failed = mt_compare_gates(c, o->gates, o->n_gates, o->strict_gates, o->too_few_pass);
    return c;
}

/* An mt_outdir_note_fn: the line on stderr. */
static void note_say(void *ctx, const char *line)
{
    (void)ctx;
    say("mergetrace: %s\n", line);
}

/* The outputs o writes (mt_outdir_written, mt_outdir_owned). */
static mt_outdir_outputs_t outputs_of(const options_t *o)
{
    return (mt_outdir_outputs_t){.merge = !o->no_merge,
                                 .merged_gzip = o->merged_gzip,
                                 .html = !o->no_html,
                                 .timings = o->timings,
                                 .compare = o->baseline != NULL,
                                 .baseline_report = o->baseline_traces};
}

int outputs_prepare(MPI_Comm comm, const options_t *o, const mt_discover_list_t *files, merged_out_t *m)
{
    int me, bad = 0;
    procs_comm_rank(comm, &me);
    if (me == 0) {
        char msg[1400] = "";
        bad = mt_outdir_make(o->out_dir, msg, sizeof msg);
        snprintf(m->path, sizeof m->path, "%.4000s/%s", o->out_dir, mt_outdir_merged_name(o->merged_gzip));
        /* the merged trace and every other name this run writes, before
         * anything is written (a trace copied in as DIR/report.json was
         * loaded, then replaced) */
        mt_outdir_name_t names[MT_OUTDIR_N_NAMES];
        mt_outdir_outputs_t w = outputs_of(o);
        size_t n_names = mt_outdir_written(&w, names);
        if (!bad)
            bad = mt_outdir_check_inputs(o->out_dir, names, n_names, files, msg, sizeof msg);
        if (bad)
            say("mergetrace: %s\n", msg);
        else {
            mt_outdir_repair(o->out_dir, files, o->baseline_traces, o->baseline ? o->baseline_file : NULL, o->quiet,
                             note_say, NULL);
            size_t n = mt_outdir_remove_dead_temps(o->out_dir);
            if (n && !o->quiet)
                say("mergetrace: removed %zu temporary file%s of an earlier run that was stopped, from %s\n", n,
                    n == 1 ? "" : "s", o->out_dir);
        }
    }
    procs_bcast(&bad, 1, MPI_INT, 0, comm);
    return bad ? MT_EXIT_ERROR : MT_EXIT_OK;
}

/* Process 0: a --ranks or --window that selects nothing of the job is an
 * error that says what there is (the ranks with a trace, the job's span),
 * rather than an empty merged trace. win: the window in corrected ns (NULL
 * without one). Returns true when the selection is empty (printed). */
static bool selection_empty(const options_t *o, const job_t *j, const mt_select_rank_t *r, const int64_t *win)
{
    char list[256];
    size_t n = 0;
    int64_t span = 0;
    mt_select_empty_t e = mt_select_check(r, r ? j->n : 0, o->merge_ranks, o->n_merge_ranks, win, list, sizeof list,
                                          &n, &span);
    if (e == MT_SELECT_NO_RANK)
        say("mergetrace: --ranks %s: selects no rank of this job; its traces are of rank%s %s\n", o->ranks_arg,
            n > 1 ? "s" : "", list);
    else if (e == MT_SELECT_NO_TIME && o->window_steps)
        say("mergetrace: --window %s: selects nothing\n", o->window_arg);
    else if (e == MT_SELECT_NO_TIME)
        say("mergetrace: --window %s: selects nothing; the job spans 0 to %.6f s from its start\n", o->window_arg,
            (double)span / 1e9);
    return e != MT_SELECT_SOME;
}

int outputs_merged(MPI_Comm comm, const mt_comm_t *mc, const options_t *o, const mt_discover_list_t *files,
                   const mt_ingest_t *L, const job_t *j, merged_out_t *m, phase_times_t *pt)
{
    int me = mc->rank;
    double tm = procs_wtime();
    mt_merge_opts_t mo = {.gpu_only = o->gpu_only};
    if (o->has_window) {
        /* The window needs every rank's steps on process 0. */
        void *sb = NULL;
        size_t sl = 0;
        int64_t win[3] = {0, 0, 1};
        mt_status_t st = mc->gatherv(mc->ctx, L->steps, L->n_steps * sizeof *L->steps, &sb, &sl, 0);
        if (me == 0 && st == MT_OK) {
            mt_select_rank_t *r = mt_ingest_select_ranks(j->res, j->n, j->al.clocks);
            win[2] = mt_select_window(r, r ? j->n : 0, o->window_steps, o->window_a, o->window_b, sb,
                                      sl / sizeof(mt_step_t), &win[0], &win[1]);
            if (win[2] && selection_empty(o, j, r, win))
                win[2] = 2;
            free(r);
        }
        free(sb);
        procs_bcast(win, 3, MPI_INT64_T, 0, comm);
        if (win[2] == 2)
            return MT_EXIT_ERROR; /* the selection is empty: process 0 said what there is */
        if (!win[2]) {
            if (me == 0)
                say("mergetrace: --window: no ProfilerStep#%.0f..#%.0f in any trace\n", o->window_a,
                        o->window_b);
            return MT_EXIT_ERROR; /* a selection that selects nothing: 1, as --help and docs/guide.md say */
        }
        mo.window_start_ns = win[0];
        mo.window_end_ns = win[1];
        if (mo.window_start_ns == 0 && mo.window_end_ns == 0)
            mo.window_end_ns = 1; /* an empty window, not "everything" */
    } else if (o->merge_ranks) {
        mt_select_rank_t *r = me == 0 ? mt_ingest_select_ranks(j->res, j->n, j->al.clocks) : NULL;
        int empty = me == 0 && selection_empty(o, j, r, NULL);
        free(r);
        procs_bcast(&empty, 1, MPI_INT, 0, comm);
        if (empty)
            return MT_EXIT_ERROR;
    }
    procs_bcast(m->path, (int)sizeof m->path, MPI_CHAR, 0, comm);
    merged_input_t *mi = calloc(L->n_res ? L->n_res : 1, sizeof *mi);
    size_t n_mi = 0;
    for (size_t i = 0; mi && i < L->n_res; i++) {
        const mt_ingest_result_t *r = &L->res[i];
        if (r->skipped || r->status != MT_OK || r->nccl.is_nccl)
            continue; /* NCCL plugin files are not part of the merged trace (yet) */
        if (o->merge_ranks) {
            bool want = false;
            for (size_t k = 0; k < o->n_merge_ranks; k++)
                want |= o->merge_ranks[k] == r->rank;
            if (!want)
                continue;
        }
        mi[n_mi].path = files->files[r->index].path;
        mi[n_mi].rank = (int32_t)r->rank;
        mi[n_mi].facts = L->facts[i];
        for (size_t k = 0; k < j->al.n_clocks; k++)
            if (j->al.clocks[k].rank == r->rank) {
                mi[n_mi].clock = j->al.clocks[k];
                mi[n_mi].has_clock = true;
            }
        n_mi++;
    }
    /* the Flight Recorder dumps' entries after their ranks' events */
    fr_merged_t *frm = NULL;
    int fcode = fr_merged_prepare(comm, o, j->fr, L, mi, n_mi, &frm);
    if (fcode != MT_EXIT_OK) {
        free(mi);
        m->failed = true;
        return fcode;
    }
    char mmsg[1024] = "";
    int mrc = merged_write(comm, m->path, o->merged_gzip, o->local, mi, n_mi, &mo, &m->events, &m->helper, mmsg, sizeof mmsg);
    fr_merged_done(comm, j->fr, frm, mrc == 0, &m->fr);
    free(mi);
    pt->merged_write = procs_wtime() - tm;
    if (mrc) {
        if (me == 0)
            say("mergetrace: %s\n", mmsg[0] ? mmsg : "writing the merged trace failed");
        m->failed = true;
        return MT_EXIT_ERROR;
    }
    return MT_EXIT_OK;
}

/* The names of the outputs a run may write into DIR. A run removes those
 * it did not write this time (--no-html, --no-merge, the other
 * --merged-format, no --timings, no --baseline, no directory of traces as
 * the baseline), so that DIR never holds two jobs' files;
 * never an input, never another name. Process 0, after the reports were
 * written. Appends the removed names to removed ("a, b"); a file that
 * cannot be removed is said on stderr. */
static void remove_stale(const options_t *o, const mt_discover_list_t *files, const merged_out_t *m, char *removed,
                         size_t cap)
{
    mt_outdir_name_t owned[MT_OUTDIR_N_NAMES];
    mt_outdir_outputs_t w = outputs_of(o);
    size_t n = mt_outdir_owned(&w, m->failed, owned);
    mt_outdir_remove_stale(o->out_dir, owned, n, files, o->baseline ? o->baseline_file : NULL, removed, cap, note_say,
                           NULL);
}

/* j->nccl_rep filled for report.json from j->nccl (paths borrowed from the
 * input list), once. Non-zero when out of memory. */
static int nccl_report(job_t *j)
{
    return !j->nccl_rep && mt_report_nccl_files(&j->nccl, &j->nccl_rep) != MT_OK;
}

/* The report of job j (the run's, or the baseline's) in *rep
 * (mt_job_report with o's part). 1 when out of memory. */
static int report_build(const options_t *o, const mt_discover_list_t *files, const job_t *j, mt_report_input_t **ri,
                        mt_report_skip_t **rs, mt_report_t *rep)
{
    mt_job_report_opts_t ro = {.aligned = options_one_clock(o),
                               .clock_note = o->merged_input ? MERGED_CLOCK_NOTE : NULL,
                               .gates = o->gates,
                               .n_gates = o->n_gates};
    return mt_job_report(files, j, &ro, ri, rs, rep) != MT_OK;
}

/* Process 0: the summary of the run on stdout (mt_report_text over rep,
 * with its warnings), in colour as o->color says (auto: a terminal, not
 * under mpirun, no NO_COLOR). merged_path: NULL when no merged trace was
 * written. removed: the outputs of an earlier run removed ("" none). */
static void summary_print(const options_t *o, const job_t *j, const mt_report_t *rep, const phase_times_t *pt,
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
    (void)mt_report_text(rep, &t, mt_file_write, stdout); /* a write error: the check of stdout after it */
}

int outputs_baseline_job(options_t *o, const options_t *ob, const mt_discover_list_t *files, job_t *j)
{
    char msg[1400] = "", dir[PATH_MAX];
    mt_report_input_t *ri;
    mt_report_skip_t *rs;
    mt_report_t rep;
    mt_warnings_t warn = {0};
    mt_buf_t buf = {0};
    int code = MT_EXIT_OK;
    if (report_build(ob, files, j, &ri, &rs, &rep)) {
        code = MT_EXIT_ERROR;
    } else {
        mt_job_warnings(j, &rep, false, &warn);
        rep.warnings = &warn;
        if (warn.st != MT_OK || nccl_report(j))
            code = MT_EXIT_ERROR;
        rep.nccl = j->nccl_rep;
    }
    /* In memory for the comparison, and on disk for a later --baseline. */
    if (code == MT_EXIT_OK && mt_report_json(&rep, mt_buf_write, &buf) != MT_OK)
        code = MT_EXIT_ERROR;
    if (code != MT_EXIT_OK)
        snprintf(msg, sizeof msg, "--baseline: out of memory");
    snprintf(dir, sizeof dir, "%.4000s/baseline", o->out_dir);
    if (code == MT_EXIT_OK && (mt_outdir_make(dir, msg, sizeof msg) || write_report(o->out_dir, "baseline/report.json", &rep, NULL, &buf, msg, sizeof msg)))
        code = MT_EXIT_ERROR;
    if (code != MT_EXIT_OK) {
        say("mergetrace: %s\n", msg);
        mt_buf_free(&buf);
    } else {
        free(o->baseline_text);
        o->baseline_text = (char *)buf.data;
        o->baseline_len = buf.len;
        /* The run's own warnings are in its summary; the baseline has none. */
        for (size_t i = 0; !o->quiet && i < warn.n; i++)
            say("mergetrace: --baseline: warning: %s\n", warn.v[i].text);
    }
    mt_warnings_free(&warn);
    free(ri);
    free(rs);
    return code;
}

int outputs_report(const options_t *o, const mt_discover_list_t *files, job_t *j, const merged_out_t *m,
                   const phase_times_t *pt, int n_procs, int code)
{
    char msg[1400] = "";
    bool merge_failed = m->failed;
    const char *merged_path = m->path;
    mt_report_input_t *ri;
    mt_report_skip_t *rs;
    mt_report_t rep;
    if (report_build(o, files, j, &ri, &rs, &rep)) {
        if (!merge_failed) /* one message: the merge's error came first */
            say("mergetrace: out of memory\n");
        free(ri);
        free(rs);
        return MT_EXIT_ERROR;
    }
    rep.merged = (!o->no_merge && !merge_failed) ? mt_discover_base(merged_path) : NULL;
    rep.merged_events = m->events;
    mt_warnings_t warn = {0};
    mt_job_warnings(j, &rep, merge_failed, &warn);
    rep.warnings = &warn;
    int rj = 0;
    if (warn.st != MT_OK || nccl_report(j)) {
        say("mergetrace: out of memory\n");
        code = MT_EXIT_ERROR;
        rj = 1;
    }
    rep.nccl = j->nccl_rep;
    rep.hang = j->fr && j->fr->any ? &j->fr->hang : NULL;
    rep.hang_placed = &m->fr; /* the merged trace was written before (outputs_merged) */
    /* A run whose merged trace failed writes none of its outputs: the
     * directory keeps the last run's, whole (its merged trace was left as
     * it was); the summary still goes to the terminal. */
    bool write = !merge_failed;
    mt_compare_t *cmp = NULL;
    mt_buf_t text = {0}; /* report.json as compared; written as it is unless gates changed it */
    if (!rj && o->baseline_text) {
        cmp = compare_run(o, &rep, j, &text, &code);
        rj = cmp == NULL;
        rep.compare = cmp;
        if (cmp && write && mt_outdir_write(o->out_dir, "compare.json", render_compare, cmp, 0, msg, sizeof msg)) {
            say("mergetrace: %s\n", msg);
            code = MT_EXIT_ERROR;
        }
    }
    /* One message per run: after a failed merge (or report.json)
     * the reason has been said once already. */
    /* The gates' verdicts are in report.json and the comparison may have
     * changed them (relative gates): render it again only then. */
    if (!rj && write &&
        (rj = write_report(o->out_dir, "report.json", &rep, NULL, cmp && !o->n_gates ? &text : NULL, msg, sizeof msg)) != 0) {
        if (!merge_failed)
            say("mergetrace: %s\n", msg);
        code = MT_EXIT_ERROR;
    }
    mt_html_opts_t ho = {.command_line = o->command_line};
    mt_buf_free(&text);
    if (!rj && write && !o->no_html && write_report(o->out_dir, "report.html", &rep, &ho, NULL, msg, sizeof msg)) {
        if (!merge_failed)
            say("mergetrace: %s\n", msg);
        code = MT_EXIT_ERROR;
    }
    char removed[128] = "";
    if (!rj && write)
        remove_stale(o, files, m, removed, sizeof removed);
    if (o->json) {
        if (mt_report_json(&rep, mt_file_write, stdout) != MT_OK)
            code = MT_EXIT_ERROR;
        if (removed[0] && !o->quiet)
            say("mergetrace: removed %s of an earlier run from %s (this run does not write %s)\n",
                    removed, o->out_dir, strstr(removed, " and ") ? "them" : "it");
    } else if (!o->quiet) {
        summary_print(o, j, &rep, pt, n_procs, (!o->no_merge && !merge_failed) ? merged_path : NULL, removed);
        if (cmp)
            mt_compare_text(cmp, mt_file_write, stdout);
    }
    if (j->fr)
        fr_print(o, j->fr, &m->fr);
    mt_compare_free(cmp);
    /* Failed gates are errors a CI log must show even with -q or --json. */
    for (size_t i = 0; i < o->n_gates; i++) {
        char line[300];
        if (mt_gate_failure(&o->gates[i], line, sizeof line))
            say("mergetrace: %s\n", line);
    }
    if (j->fr && j->fr->hung && code == MT_EXIT_OK) /* a hang outranks a gate */
        code = MT_EXIT_HANG;
    if (j->gates_failed && code == MT_EXIT_OK)
        code = MT_EXIT_GATE;
    if (fflush(stdout) || ferror(stdout)) {
        say("mergetrace: stdout: write error\n");
        code = MT_EXIT_ERROR;
    }
    mt_warnings_free(&warn);
    free(ri);
    free(rs);
    return code;
}

int outputs_timings(MPI_Comm comm, const options_t *o, const mt_discover_list_t *files, const mt_ingest_t *L, const job_t *j,
                    const merged_out_t *m, phase_times_t *pt, double t_start, bool wrote_outputs, int code)
{
    int me, n_procs;
    procs_comm_rank(comm, &me);
    procs_comm_size(comm, &n_procs);
    pt->parse = L->parse_s;
    pt->rank_passes = L->passes_s;
    pt->match = j->al.match_s;
    pt->clock_fit = j->al.fit_s;
    pt->match_cpu = j->al.match_cpu_s;
    pt->match_procs = j->al.match_procs;
    pt->clock_fit_cpu = j->al.fit_cpu_s;
    pt->merged_helper = m->helper;
    pt->total = procs_wtime() - t_start;
    job_size_t js = {.ranks = j->n, .largest_trace = L->largest};
    for (size_t i = 0; me == 0 && i < j->n; i++) {
        js.json_bytes += j->res[i].sum.bytes_json;
        js.events += j->res[i].sum.events;
    }
    /* the share of the files: every process has the list with its owners */
    uint64_t *per = me == 0 ? calloc((size_t)n_procs, sizeof *per) : NULL;
    for (size_t i = 0; per && i < files->n; i++)
        if (files->files[i].owner >= 0 && files->files[i].owner < n_procs)
            per[files->files[i].owner]++;
    js.files = per;
    char msg[1400] = "";
    if (timings_report(comm, pt, &js, n_procs, wrote_outputs ? o->out_dir : NULL, msg, sizeof msg)) {
        say("mergetrace: %s\n", msg);
        if (code == MT_EXIT_OK)
            code = MT_EXIT_ERROR;
    }
    free(per);
    return code;
}
