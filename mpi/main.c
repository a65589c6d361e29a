/* mergetrace: the program. Shares the trace files among MPI processes (or,
 * started without an MPI launcher, is one process that never initialises
 * MPI: procs.h), has
 * each process load its share with the serial core (one trace at a time,
 * keeping compact per-rank results), agrees on errors, aligns the clocks
 * from the collectives, writes the merged timeline through MPI-IO and
 * report.json, and prints the summary from process 0. This file is the
 * order of the phases; each phase lives in its own file:
 *
 *   load.c      the input list (src/discover/) and rank map shared, each process's share loaded,
 *               results gathered
 *   job.c       rank checks and the NCCL join (src/nccl/nccl_join.c), analyses gathered, clocks
 *               aligned, cross-rank steps
 *   outputs.c   output directory, merged trace, then process 0's outputs (src/discover/job_outputs.c:
 *               report.json / report.html, the summary on stdout), --timings
 *
 * Every phase returns an exit code that is the same on every process
 * (agreed with comm_mpi_agree, or decided by process 0 and broadcast from
 * it), so that no process waits in a collective call that another one
 * skipped. */
#define _POSIX_C_SOURCE 200809L /* PATH_MAX (outputs.h) */
#include <limits.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm_mpi.h"
#include "fr_run.h"
#include "mergetrace/heap.h"
#include "mergetrace/discover.h"
#include "job.h"
#include "load.h"
#include "merged_io.h"
#include "mergetrace/mergetrace.h"
#include "options.h"
#include "outputs.h"
#include "procs.h"
#include "timeline_run.h"
#include "timings.h"
#include "say.h"

/* Collective: the job of o's PATHs listed, loaded and checked, its
 * per-rank analyses gathered, its clocks aligned and, on process 0, its
 * cross-rank steps run (everything before the outputs). *L and *j are
 * zeroed first, so that what was filled can always be freed (mt_ingest_free,
 * mt_job_free, free(*all), and load_prepare's); *listed is set once the
 * inputs are listed and shared (load_prepare went on). Returns MT_EXIT_OK to go on,
 * or the exit code, the same on every process, after process 0 said why. */
static int job_run(MPI_Comm comm, const mt_comm_t *mc, const options_t *o, mt_discover_list_t *files, mt_rankmap_t **map,
                   mt_pp_markers_t **markers, mt_ingest_t *L, mt_ingest_result_t **all, size_t *n_all, job_t *j,
                   mt_timings_t *pt, bool *listed, mt_fr_job_t *fr)
{
    int me = mc->rank;
    memset(L, 0, sizeof *L);
    memset(j, 0, sizeof *j);
    int code = load_prepare(comm, o, files, map, markers);
    if (code < 0 && fr) /* Flight Recorder dumps: alone, the whole run (fr_run.c) */
        code = fr_stage(comm, mc, o, files, *map, fr);
    if (code >= 0)
        return code;
    *listed = true;
    /* ---- load this process's share, one trace at a time; check the job ---- */
    code = load_share(comm, mc, o, files, *map, *markers, L, all, n_all, pt);
    if (me == 0 && code == MT_EXIT_OK)
        code = job_check(o, files, *all, *n_all, j);
    procs_bcast(&code, 1, MPI_INT, 0, comm); /* process 0 decided */

    /* ---- process 0's memory budget; the per-rank analyses to process 0;
     * the clocks aligned ---- */
    if (code == MT_EXIT_OK)
        code = job_plan(comm, o, L, j);
    if (code == MT_EXIT_OK)
        code = job_gather_analyses(comm, mc, L, j, pt);
    if (code == MT_EXIT_OK) /* before the rows go to the alignment: the dumps' entries pair with them */
        code = fr_keep_tcolls(comm, L, fr);
    if (code == MT_EXIT_OK)
        code = job_align(comm, mc, o, L, j, pt);

    /* ---- cross-rank analyses, pipeline, gates and views on process 0 ---- */
    if (code == MT_EXIT_OK && me == 0) {
        code = job_cross(o, files, j, pt);
        mt_job_cp_stop(j); /* the others took part in its reductions (mt_job_cp_serve) */
    } else if (code == MT_EXIT_OK) {
        mt_job_cp_serve(j);
    }
    /* ---- the NCCL plugin's files of a job that hung: their verdict ---- */
    if (code == MT_EXIT_OK && me == 0 && fr)
        code = fr_from_nccl(o, files, &j->nccl, fr);
    procs_bcast(&code, 1, MPI_INT, 0, comm);
    j->fr = fr && fr->any ? fr : NULL; /* the dumps' verdict joins the outputs */
    return code;
}

/* Collective: --baseline names a directory of traces. Its job is analysed
 * here, before the run's own, with the run's options but for what only
 * concerns this run's outputs (no merged trace, no report.html pictures,
 * no gates), and its report.json is what the comparison reads
 * (outputs_baseline_job). Returns -1 to go on, or the exit code, the same
 * everywhere, after process 0 said why (naming the baseline's file). All
 * of the baseline's job is freed before the run's own is loaded. */
static int baseline_run(MPI_Comm comm, const mt_comm_t *mc, options_t *o)
{
    options_t ob = *o; /* a shallow copy: borrows everything, frees nothing */
    char *paths[1] = {strdup(o->baseline)};
    if (comm_mpi_agree(comm, paths[0] == NULL)) {
        if (mc->rank == 0)
            say("mergetrace: out of memory\n");
        free(paths[0]);
        return MT_EXIT_ERROR;
    }
    ob.inputs = paths;
    ob.n_inputs = 1;
    ob.no_merge = true;
    ob.no_html = true;
    ob.gates = NULL;
    ob.n_gates = 0;
    ob.baseline = NULL;
    ob.baseline_text = NULL;
    ob.baseline_traces = false;
    ob.job_tag = "--baseline: ";
    mt_discover_list_t files = {0};
    mt_rankmap_t *map = NULL;
    mt_pp_markers_t *markers = NULL;
    mt_ingest_t L;
    job_t job;
    mt_ingest_result_t *all = NULL;
    size_t n_all = 0;
    mt_timings_t pt = {0};
    bool listed = false;
    int code = job_run(comm, mc, &ob, &files, &map, &markers, &L, &all, &n_all, &job, &pt, &listed, NULL);
    if (code == MT_EXIT_OK && mc->rank == 0)
        code = outputs_baseline_job(o, &ob, &files, &job);
    procs_bcast(&code, 1, MPI_INT, 0, comm);
    mt_job_free(&job);
    free(all);
    mt_ingest_free(&L);
    mt_pp_markers_free(markers);
    mt_rankmap_free(map);
    mt_discover_free(&files);
    free(paths[0]);
    return code == MT_EXIT_OK ? -1 : code;
}

/* The options of one process for a message: its entries (options_t.same)
 * joined by spaces, at most cap - 1 bytes, "(none)" when it has none. */
static const char *same_text(const char *same, size_t len, char *buf, size_t cap)
{
    size_t w = 0;
    for (size_t i = 0; i < len && w + 1 < cap; i++)
        buf[w++] = same[i] || i + 1 == len ? same[i] : ' ';
    buf[w < cap ? w : cap - 1] = '\0';
    if (!len)
        snprintf(buf, cap, "(none)");
    return buf;
}

/* Collective, in a launch of several processes: whether every process has
 * process 0's options. Each one decides which collective calls a process
 * makes (--rank-map on process 1 alone waited forever for the map's
 * broadcast, --no-merge on process 0 alone for the merged write;
 * --merged-format json on process 1 alone ended in MPI_ERR_TRUNCATE), so
 * they must agree; only -o (process 0's is used) and, with --local, the
 * PATHs may differ (without it only process 0's are read). Returns -1 to
 * go on, or MT_EXIT_USAGE (MT_EXIT_ERROR out of memory) everywhere after
 * the lowest process whose options differ said which. */
static int same_options(MPI_Comm comm, const options_t *o, int me, int n_procs)
{
    void *got = o->same; /* process 0's own list (NULL: an empty one) */
    size_t len = o->same_len;
    if (comm_mpi_bcast_bytes(comm, true, &got, &len)) {
        if (me == 0)
            say("mergetrace: out of memory comparing the processes' options\n");
        return MT_EXIT_ERROR;
    }
    char *first = got;
    int differs = me != 0 && (len != o->same_len || (len && memcmp(first, o->same, len)));
    int cand = differs ? me : n_procs, lowest = n_procs;
    procs_allreduce(&cand, &lowest, 1, MPI_INT, MPI_MIN, comm);
    if (me == lowest) {
        char mine[600], theirs[600];
        say("mergetrace: process %d's options differ from process 0's: %s against %s (give every process "
                "the same options; only -o and, with --local, the PATHs may differ)\n",
                me, same_text(o->same, o->same_len, mine, sizeof mine), same_text(first, len, theirs, sizeof theirs));
    }
    if (me != 0)
        free(first);
    return lowest < n_procs ? MT_EXIT_USAGE : -1;
}

/* Collective: the run after the command line, on every process (MPI's,
 * or each worker thread): agreement on the options, then the job and its
 * outputs. o is this process's options (code: its options_parse result,
 * -1 to go on); argc0/argv0 the command line as given. Returns the exit
 * code, the same on every process. */
static int run(options_t *o, int code, int argc0, char **argv0, bool spoke, bool use_mpi)
{
    double t_start = procs_wtime();
    MPI_Comm world_comm = MPI_COMM_WORLD;
    int me, n_procs;
    procs_comm_rank(world_comm, &me);
    procs_comm_size(world_comm, &n_procs);
    mt_comm_t comm = *mt_comm_serial();
    if (use_mpi || procs_threads())
        comm_mpi_init(&comm, &world_comm);

    /* Process 0 speaks for a command line every process shares; agree,
     * so one that failed alone cannot leave the others waiting in a
     * collective call. A process of an MPMD launch has its own arguments
     * (--local A : --local B): when its own stopped the run (an error,
     * or --help / --version) with the code the run exits with, it says
     * why itself, parsing them again with printing on. One process
     * speaks, the first with that code, so a group of several processes
     * sharing a bad command line says it once, and process 0's --help
     * does not hide another's usage error (exit 64 with no message);
     * process 0, or one that printed on the first parse (the launcher
     * named no rank), has said it already. Before, process 0 said "out
     * of memory on another process" whatever the cause. */
    int agreed = comm_mpi_agree(world_comm, code);
    int mine = code >= 0 && code == agreed ? me : n_procs, first = n_procs;
    procs_allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, world_comm);
    if (first == me && me != 0 && !spoke) {
        options_t again;
        if (options_parse(argc0, argv0, &again, true) != code) /* the same arguments: memory alone differs */
            say("mergetrace: out of memory (reading the command line)\n");
        options_free(&again);
    }
    /* --help or --version on some processes of a launch, an analysis on
     * the others: that launch analyses nothing, which exit 0 would pass
     * off as a run that worked (a CI step, say): a usage error, said by
     * the process that printed the help or version */
    int lowest = code;
    procs_allreduce(&code, &lowest, 1, MPI_INT, MPI_MIN, world_comm);
    if (agreed == MT_EXIT_OK && lowest < 0) {
        if (first == me)
            say("mergetrace: process %d was given --help or --version and another process a job: nothing "
                    "analysed (give every process the same options)\n",
                    me);
        agreed = MT_EXIT_USAGE;
        code = MT_EXIT_USAGE;
    }
    if (agreed >= 0 && code < 0)
        code = agreed;
    if (code < 0 && n_procs > 1)
        code = same_options(world_comm, o, me, n_procs);
    if (code < 0 && o->baseline) { /* a bad baseline is said before the run's work */
        int bc[2] = {MT_EXIT_OK, 0};
        if (me == 0) {
            bc[0] = outputs_baseline_read(o);
            bc[1] = o->baseline_traces;
        }
        procs_bcast(bc, 2, MPI_INT, 0, world_comm);
        o->baseline_traces = bc[1] != 0;
        if (bc[0] != MT_EXIT_OK)
            code = bc[0];
    }
    if (code >= 0)
        return code;

    /* ---- an operation-level timeline: its own short path ---- */
    code = timeline_run(world_comm, o);
    if (code >= 0)
        return code;

    /* ---- a baseline of traces: its job analysed first, then freed ---- */
    if (o->baseline_traces)
        code = baseline_run(world_comm, &comm, o);
    if (code >= 0)
        return code;

    /* ---- mergetrace's own merged trace as the input: read back by rank
     * (inputs.c), on the clock it was corrected onto when written, so no
     * clock fit; writing it again would copy it (after the
     * baseline's job, which copies these options) ---- */
    int merged_in = me == 0 && !o->local && mt_discover_all_merged(o->inputs, o->n_inputs);
    procs_bcast(&merged_in, 1, MPI_INT, 0, world_comm);
    if (merged_in && (o->merge_ranks || o->has_window || o->gpu_only)) {
        /* the same decision on every process: merged_in was broadcast */
        if (me == 0)
            say("mergetrace: %s: selects what goes into the merged trace, and a merged trace read back "
                    "alone writes none\n",
                    o->merge_ranks ? "--ranks" : o->has_window ? "--window" : "--gpu-only");
        return MT_EXIT_USAGE;
    }
    if (merged_in)
        o->merged_input = o->no_align = o->no_merge = true;

    /* ---- the job: inputs, loading, checks, alignment, cross-rank steps ---- */
    mt_discover_list_t files = {0};
    mt_rankmap_t *map = NULL;
    mt_pp_markers_t *markers = NULL;
    mt_timings_t pt = {0};
    mt_ingest_t L;
    job_t job;
    mt_ingest_result_t *all = NULL;
    size_t n_all = 0;
    bool listed = false;
    mt_fr_job_t fr = {0};
    code = job_run(world_comm, &comm, o, &files, &map, &markers, &L, &all, &n_all, &job, &pt, &listed, &fr);
    if (!listed) {
        mt_fr_job_free(&fr);
        mt_pp_markers_free(markers);
        mt_rankmap_free(map);
        mt_discover_free(&files);
        return code;
    }

    /* ---- the merged timeline ---- */
    merged_out_t merged = {0};
    if (code == MT_EXIT_OK)
        code = outputs_prepare(world_comm, o, &files, &merged);
    if (code == MT_EXIT_OK && !o->no_merge)
        code = outputs_merged(world_comm, &comm, o, &files, &L, &job, &merged, &pt);

    /* ---- report.json, report.html and the summary ---- */
    double tr = procs_wtime();
    bool wrote_outputs = me == 0 && (code == MT_EXIT_OK || merged.failed);
    if (wrote_outputs)
        code = outputs_report(o, &files, &job, &merged, &pt, n_procs, code);
    pt.seconds[MT_TPH_REPORT] = procs_wtime() - tr;
    if (o->timings) /* collective; every process gets here whatever happened above */
        code = outputs_timings(world_comm, o, &files, &L, &job, &merged, &pt, t_start,
                               wrote_outputs && !merged.failed, code);
    procs_bcast(&code, 1, MPI_INT, 0, world_comm);
    /* A run that failed after renaming some of its outputs leaves the mark
     * for the next run, which removes the older outputs beside them. */
    if (me == 0 && (code == MT_EXIT_OK || code == MT_EXIT_GATE || code == MT_EXIT_HANG))
        mt_outdir_renamed_all();

    mt_fr_job_free(&fr);
    mt_job_free(&job);
    free(all);
    mt_ingest_free(&L);
    mt_pp_markers_free(markers);
    mt_rankmap_free(map);
    mt_discover_free(&files);
    return code;
}

/* What the worker threads of a run by hand share (procs_run_threads):
 * process 0 takes the options main parsed; each other one parses its own
 * from the same command line, as an MPI process would. */
typedef struct worker_args {
    options_t *o0;
    int code0;
    int argc;
    char **argv;
    bool spoke0;
} worker_args_t;

static int worker_main(void *arg, int rank)
{
    worker_args_t *w = arg;
    if (rank == 0)
        return run(w->o0, w->code0, w->argc, w->argv, w->spoke0, false);
    options_t o;
    int code = options_parse(w->argc, w->argv, &o, false);
    code = run(&o, code, w->argc, w->argv, false, false);
    options_free(&o);
    return code;
}

/* The worker threads of a run by hand: -j N (else MERGETRACE_JOBS=N; a
 * value that is not a number 0-4096 there is left aside), or the CPUs
 * this process may use, at most one per trace file and as many as memory holds at half the
 * largest trace's bytes each (a worker holds one trace at a time, and its
 * tables peak at about 0.5x the trace: docs/PERFORMANCE.md). The files
 * are listed here to count them (again by process 0 for the job: a
 * listing costs microseconds a file, and a job that fails to list runs on
 * one worker, which says why). 1 without listing for -j 1 or one CPU. */
static int pick_workers(const options_t *o)
{
    int asked = mt_launcher_jobs(o->jobs);
    if (asked == 1 || (asked == 0 && mt_launcher_cpus() < 2))
        return 1;
    mt_discover_list_t l = {0};
    char msg[1400];
    int n = 1;
    if (mt_discover_collect(o->inputs, o->n_inputs, o->recursive, &l, msg, sizeof msg) == 0 && l.n > 1) {
        uint64_t json = mt_discover_largest_json(&l);
        n = mt_launcher_workers(asked, l.n, json / 2, mt_heap_available());
    }
    mt_discover_free(&l);
    return n;
}

int main(int argc, char **argv)
{
    mt_heap_setup();
    /* Without an MPI launcher this is one process and MPI is never
     * initialised (procs.h). --help and --version do not initialise it
     * either, but for a launch of several processes: those of an MPMD
     * launch may have other arguments, and one that went on into MPI_Init
     * would wait there for this one forever (seen with Open MPI 4.1:
     * mpirun -n 1 mergetrace --help : -n 1 mergetrace DIR). */
    bool use_mpi = mt_launcher_mpi();
    int argc0 = argc; /* as given: a process whose command line failed alone says why from these (below) */
    char **argv0 = argv;
    bool spoke = mt_launcher_rank() == 0; /* every process when the launcher names no rank */
    options_t o;
    int code = options_parse(argc, argv, &o, spoke);
    if (code < 0 && !use_mpi && spoke && mt_launcher_env_size() > 1)
        say("mergetrace: warning: MERGETRACE_MPI=0 under a launcher of %d processes: each of them runs the "
                "whole job alone, into the same -o\n",
                mt_launcher_env_size());
    if ((code >= 0 && !use_mpi) || (code == MT_EXIT_OK && mt_launcher_size() == 1)) {
        options_free(&o);
        return code;
    }
    procs_start(&argc, &argv, use_mpi);
    int workers = use_mpi ? 1 : pick_workers(&o);
    if (workers > 1) {
        worker_args_t w = {.o0 = &o, .code0 = code, .argc = argc0, .argv = argv0, .spoke0 = spoke};
        int *codes = calloc((size_t)workers, sizeof *codes);
        if (codes && procs_run_threads(workers, worker_main, &w, codes) > 0)
            code = codes[0];
        else
            code = run(&o, code, argc0, argv0, spoke, false);
        free(codes);
    } else {
        code = run(&o, code, argc0, argv0, spoke, use_mpi);
    }
    options_free(&o);
    procs_end();
    return code;
}
