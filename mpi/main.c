/* mergetrace: the program. Shares the trace files among MPI processes (or,
 * started without an MPI launcher, is one process that never initialises
 * MPI: procs.h), has
 * each process load its share with the serial core (one trace at a time,
 * keeping compact per-rank results), agrees on errors, aligns the clocks
 * from the collectives, writes the merged timeline through MPI-IO and
 * report.json, and prints the summary from process 0. This file is the
 * order of the phases; each phase lives in its own file:
 *
 *   load.c      the input list and rank map shared, each process's share loaded, results gathered
 *   job.c       rank checks and the NCCL join, analyses gathered, clocks aligned, cross-rank steps
 *   outputs.c   output directory, merged trace, report.json / report.html, --timings
 *   terminal.c  the summary on stdout
 *
 * Every phase returns an exit code that is the same on every process
 * (agreed with comm_mpi_agree, or decided by process 0 and broadcast from
 * it), so that no process waits in a collective call that another one
 * skipped. */
#define _POSIX_C_SOURCE 200809L /* PATH_MAX (outputs.h) */
#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "comm_mpi.h"
#include "heap.h"
#include "inputs.h"
#include "job.h"
#include "load.h"
#include "mergetrace/mergetrace.h"
#include "options.h"
#include "outputs.h"
#include "procs.h"
#include "timeline_run.h"
#include "timings.h"

int main(int argc, char **argv)
{
    heap_setup();
    /* Without an MPI launcher this is one process and MPI is never
     * initialised (procs.h). --help and --version do not initialise it
     * either, but for a launch of several processes: those of an MPMD
     * launch may have other arguments, and one that went on into MPI_Init
     * would wait there for this one forever (seen with Open MPI 4.1:
     * mpirun -n 1 mergetrace --help : -n 1 mergetrace DIR). */
    bool use_mpi = procs_launched();
    options_t o;
    int code = options_parse(argc, argv, &o, procs_launcher_rank() == 0);
    if ((code >= 0 && !use_mpi) || (code == MT_EXIT_OK && procs_launcher_size() == 1)) {
        options_free(&o);
        return code;
    }
    procs_start(&argc, &argv, use_mpi);
    double t_start = procs_wtime();
    MPI_Comm world_comm = MPI_COMM_WORLD;
    int me, n_procs;
    procs_comm_rank(world_comm, &me);
    procs_comm_size(world_comm, &n_procs);
    mt_comm_t comm = *mt_comm_serial();
    if (use_mpi)
        comm_mpi_init(&comm, &world_comm);

    /* Every process parses the same arguments, but only process 0 speaks:
     * agree, so one that failed alone (out of memory) cannot leave the
     * others waiting in a collective call. */
    int agreed = comm_mpi_agree(world_comm, code);
    if (agreed >= 0 && code < 0) {
        if (me == 0 && agreed != MT_EXIT_OK) /* MT_EXIT_OK: --help or --version on another process */
            fprintf(stderr, "mergetrace: out of memory (reading the command line on another process)\n");
        code = agreed;
    }
    if (code < 0 && o.baseline) { /* a bad baseline is said before the run's work */
        int bc = me == 0 ? outputs_baseline_read(&o) : MT_EXIT_OK;
        procs_bcast(&bc, 1, MPI_INT, 0, world_comm);
        if (bc != MT_EXIT_OK)
            code = bc;
    }
    if (code >= 0) {
        options_free(&o);
        procs_end();
        return code;
    }

    /* ---- an operation-level timeline: its own short path ---- */
    code = timeline_run(world_comm, &o);
    if (code >= 0) {
        options_free(&o);
        procs_end();
        return code;
    }

    /* ---- the inputs and the rank map, the same on every process ---- */
    input_list_t files = {0};
    mt_rankmap_t *map = NULL;
    mt_pp_markers_t *markers = NULL;
    code = load_prepare(world_comm, &o, &files, &map, &markers);
    if (code >= 0) {
        mt_pp_markers_free(markers);
        mt_rankmap_free(map);
        inputs_free(&files);
        options_free(&o);
        procs_end();
        return code;
    }

    /* ---- load this process's share, one trace at a time; check the job ---- */
    phase_times_t pt = {0};
    local_t L;
    file_result_t *all = NULL;
    size_t n_all = 0;
    code = load_share(world_comm, &comm, &o, &files, map, markers, &L, &all, &n_all, &pt);
    job_t job = {0};
    if (me == 0 && code == MT_EXIT_OK)
        code = job_check(&files, all, n_all, &job);
    procs_bcast(&code, 1, MPI_INT, 0, world_comm); /* process 0 decided */

    /* ---- the per-rank analyses to process 0; the clocks aligned ---- */
    if (code == MT_EXIT_OK)
        code = job_gather_analyses(world_comm, &comm, &L, &job, &pt);
    if (code == MT_EXIT_OK)
        code = job_align(world_comm, &comm, &o, &L, &job, &pt);

    /* ---- cross-rank analyses, pipeline, gates and views on process 0 ---- */
    if (code == MT_EXIT_OK && me == 0)
        code = job_cross(&o, &files, &job, &pt);
    procs_bcast(&code, 1, MPI_INT, 0, world_comm);

    /* ---- the merged timeline ---- */
    merged_out_t merged = {0};
    if (code == MT_EXIT_OK)
        code = outputs_prepare(world_comm, &o, &files, &merged);
    if (code == MT_EXIT_OK && !o.no_merge)
        code = outputs_merged(world_comm, &comm, &o, &files, &L, &job, &merged, &pt);

    /* ---- report.json, report.html and the summary ---- */
    double tr = procs_wtime();
    bool wrote_outputs = me == 0 && (code == MT_EXIT_OK || merged.failed);
    if (wrote_outputs)
        code = outputs_report(&o, &files, &job, &merged, &pt, n_procs, code);
    pt.report = procs_wtime() - tr;
    if (o.timings) /* collective; every process gets here whatever happened above */
        code = outputs_timings(world_comm, &o, &L, &job, &merged, &pt, t_start, wrote_outputs, code);
    procs_bcast(&code, 1, MPI_INT, 0, world_comm);

    job_free(&job);
    free(all);
    load_free(&L);
    mt_pp_markers_free(markers);
    mt_rankmap_free(map);
    inputs_free(&files);
    options_free(&o);
    procs_end();
    return code;
}
