/* The outputs of a run (outputs.h): the output directory made and checked
 * against the inputs (src/discover/outdir.c), the --window in corrected
 * time, the merged trace through mpi/merged_io.c, then on process 0 the
 * reports, the summary and the lines to say (src/discover/job_outputs.c)
 * with the exit code they make, and --timings. */
#define _POSIX_C_SOURCE 200809L
#include "outputs.h"
#include "say.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm_mpi.h"
#include "fr_run.h"
#include "merged_io.h"
#include "procs.h"

int outputs_baseline_read(options_t *o)
{
    char msg[PATH_MAX + 1400];
    mt_buf_t buf = {0};
    const char *conflict = o->local ? "--local" : o->timeline_map ? "--timeline-map" : NULL;
    int rc = mt_discover_baseline_plan(o->baseline, o->out_dir, conflict, o->baseline_file, sizeof o->baseline_file,
                                       &o->baseline_traces, &buf, msg, sizeof msg);
    if (rc) {
        mt_buf_free(&buf);
        say("mergetrace: %s\n", msg);
        return rc == 1 ? MT_EXIT_ERROR : rc == 2 ? MT_EXIT_BAD_INPUT : MT_EXIT_USAGE;
    }
    o->baseline_text = (char *)buf.data; /* NULL for traces: nothing read */
    o->baseline_len = buf.len;
    return MT_EXIT_OK;
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
        char msg[1400];
        snprintf(m->path, sizeof m->path, "%.4000s/%s", o->out_dir, mt_outdir_merged_name(o->merged_gzip));
        mt_outdir_outputs_t w = outputs_of(o);
        bad = mt_outdir_prepare(o->out_dir, &w, files, o->baseline ? o->baseline_file : NULL, o->quiet, say_note,
                                NULL, msg, sizeof msg);
        if (bad)
            say("mergetrace: %s\n", msg);
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
    char small[1400], *msg;
    size_t cap;
    if (!(msg = say_buf(&cap, o->ranks_arg, o->window_arg, NULL))) {
        msg = small;
        cap = sizeof small;
    }
    msg[0] = '\0';
    bool empty = mt_select_check_text(r, r ? j->n : 0, o->merge_ranks, o->n_merge_ranks, win, o->ranks_arg,
                                      o->window_arg, o->window_steps, msg, cap);
    if (empty && msg[0])
        say("mergetrace: %s\n", msg);
    if (msg != small)
        free(msg);
    return empty;
}

int outputs_merged(MPI_Comm comm, const mt_comm_t *mc, const options_t *o, const mt_discover_list_t *files,
                   const mt_ingest_t *L, const job_t *j, merged_out_t *m, mt_timings_t *pt)
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
    mt_merged_input_t *mi;
    size_t n_mi;
    if (comm_mpi_agree(comm, mt_ingest_merged_inputs(L, files, o->merge_ranks, o->n_merge_ranks, j->al.clocks,
                                                     j->al.n_clocks, &mi, &n_mi) != MT_OK)) {
        free(mi);
        if (me == 0)
            say("mergetrace: out of memory\n");
        m->failed = true;
        return MT_EXIT_ERROR;
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
    pt->seconds[MT_TPH_MERGED_WRITE] = procs_wtime() - tm;
    if (mrc) {
        if (me == 0)
            say("mergetrace: %s\n", mmsg[0] ? mmsg : "writing the merged trace failed");
        m->failed = true;
        return MT_EXIT_ERROR;
    }
    return MT_EXIT_OK;
}

/* What report.json says of o (mt_job_report). */
static mt_job_report_opts_t report_opts(const options_t *o)
{
    return (mt_job_report_opts_t){.aligned = options_one_clock(o),
                                  .clock_note = o->merged_input ? MERGED_CLOCK_NOTE : NULL,
                                  .gates = o->gates,
                                  .n_gates = o->n_gates};
}

int outputs_baseline_job(options_t *o, const options_t *ob, const mt_discover_list_t *files, job_t *j)
{
    mt_job_report_opts_t ro = report_opts(ob);
    mt_buf_t text;
    if (mt_job_outputs_baseline(&ro, files, j, o->out_dir, o->quiet, &text, say_note, NULL) != MT_OK)
        return MT_EXIT_ERROR;
    free(o->baseline_text);
    o->baseline_text = (char *)text.data;
    o->baseline_len = text.len;
    return MT_EXIT_OK;
}

/* What of o the outputs read (mt_job_outputs), the summary's facts with
 * them: in colour as o->color says (auto: a terminal, not under mpirun,
 * no NO_COLOR). */
static mt_job_out_opts_t out_opts(const options_t *o, const mt_timings_t *pt, int n_procs)
{
    /* Under mpirun stdout is often a pseudo-terminal even when the user
     * pipes mpirun's output, so "auto" means no colour there. */
    bool color = o->color == 1 || (o->color < 0 && isatty(1) && !procs_mpi() && !getenv("NO_COLOR"));
    return (mt_job_out_opts_t){.out_dir = o->out_dir,
                               .report = report_opts(o),
                               .outputs = outputs_of(o),
                               .command_line = o->command_line,
                               .json = o->json,
                               .quiet = o->quiet,
                               .baseline_text = o->baseline_text,
                               .baseline_len = o->baseline_len,
                               .baseline_file = o->baseline ? o->baseline_file : NULL,
                               .gates = o->gates,
                               .n_gates = o->n_gates,
                               .strict_gates = o->strict_gates,
                               .too_few_pass = o->too_few_pass,
                               .text = {.color = color,
                                        .n_procs = n_procs,
                                        .threads = procs_threads(),
                                        .load_s = pt ? pt->seconds[MT_TPH_LOAD] : 0,
                                        .align_s = pt ? pt->seconds[MT_TPH_ALIGN] : 0,
                                        .merge_s = pt ? pt->seconds[MT_TPH_MERGED_WRITE] : 0,
                                        .out_dir = o->out_dir,
                                        .html = !o->no_html}};
}

/* stdout checked for a write error: code, or MT_EXIT_ERROR (said). */
static int stdout_checked(int code)
{
    if (fflush(stdout) || ferror(stdout)) {
        say("mergetrace: stdout: write error\n");
        code = MT_EXIT_ERROR;
    }
    return code;
}

int outputs_report(const options_t *o, const mt_discover_list_t *files, job_t *j, const merged_out_t *m,
                   const mt_timings_t *pt, int n_procs, int code)
{
    mt_job_out_opts_t oo = out_opts(o, pt, n_procs);
    mt_job_out_merged_t mo = {.path = m->path, .failed = m->failed, .events = m->events, .fr = &m->fr};
    mt_status_t st = mt_job_outputs(&oo, files, j, &mo, mt_file_write, stdout, say_note, NULL);
    if (st != MT_OK)
        code = options_exit_code(st);
    if (j->fr && j->fr->hung && code == MT_EXIT_OK) /* a hang outranks a gate */
        code = MT_EXIT_HANG;
    if (j->gates_failed && code == MT_EXIT_OK)
        code = MT_EXIT_GATE;
    return stdout_checked(code);
}

int outputs_fr_alone(const options_t *o, const mt_fr_job_t *fr, const char *merged_path)
{
    mt_job_out_opts_t oo = out_opts(o, NULL, 1);
    char msg[1400];
    mt_status_t st = mt_job_outputs_fr_alone(&oo, fr, merged_path, mt_file_write, stdout, msg, sizeof msg);
    if (msg[0])
        say("mergetrace: %s\n", msg);
    return stdout_checked(st != MT_OK ? options_exit_code(st) : fr->hung ? MT_EXIT_HANG : MT_EXIT_OK);
}

int outputs_timings(MPI_Comm comm, const options_t *o, const mt_discover_list_t *files, const mt_ingest_t *L, const job_t *j,
                    const merged_out_t *m, mt_timings_t *pt, double t_start, bool wrote_outputs, int code)
{
    int me, n_procs;
    procs_comm_rank(comm, &me);
    procs_comm_size(comm, &n_procs);
    uint64_t *per = mt_job_timings(j, L, files, me, n_procs, pt);
    pt->helpers = m->helper;
    pt->seconds[MT_TPH_TOTAL] = procs_wtime() - t_start;
    char msg[1400] = "";
    if (timings_report(comm, pt, wrote_outputs ? o->out_dir : NULL, msg, sizeof msg)) {
        say("mergetrace: %s\n", msg);
        if (code == MT_EXIT_OK)
            code = MT_EXIT_ERROR;
    }
    pt->files = NULL;
    free(per);
    return code;
}
