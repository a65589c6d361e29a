/* The job after loading (job.h): the rank checks and the NCCL join on
 * process 0 (decided by src/discover/job_state.c, said here), the
 * per-rank analyses gathered there, the clock alignment on every process,
 * then process 0's cross-rank, pipeline, critical-path, gate and
 * report.html view steps (run by src/discover/job_cross.c, said here). */
#define _POSIX_C_SOURCE 200809L /* PATH_MAX */
#include "job.h"
#include "say.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm_mpi.h"
#include "mergetrace/heap.h"
#include "procs.h"

int job_check(const options_t *o, const mt_discover_list_t *l, mt_ingest_result_t *res, size_t n_res, job_t *j)
{
    const mt_ingest_result_t *r = NULL;
    mt_job_bad_t bad = mt_job_check(l, res, n_res, j, &r);
    char msg[2 * PATH_MAX + 1400];
    mt_status_t st = mt_job_check_text(bad, l, j, r, n_res, o->local, o->job_tag, msg, sizeof msg);
    if (msg[0])
        say("mergetrace: %s\n", msg);
    return options_exit_code(st);
}

int job_plan(MPI_Comm comm, const options_t *o, mt_ingest_t *L, job_t *j)
{
    int me;
    procs_comm_rank(comm, &me);
    int skip = 0;
    /* the load's free heap back first (mt_heap_release trims once per 64 MB
     * of traces, and keeps 8 MiB), so that the resident set measured below
     * is what process 0 holds, and the gather starts from it */
    mt_heap_give_back();
    if (me == 0)
        skip = mt_job_plan_set(j, o->mem_budget, mt_heap_resident(), mt_heap_available());
    procs_bcast(&skip, 1, MPI_INT, 0, comm);
    j->plan.skipped = skip != 0;
    int bad = skip && mt_rank_analysis_packed_drop_gacts(&L->analyses) != MT_OK;
    if (comm_mpi_agree(comm, bad)) {
        if (me == 0)
            say("mergetrace: taking the GPU activities out of the per-rank analyses failed\n");
        return MT_EXIT_ERROR;
    }
    return MT_EXIT_OK;
}

int job_gather_analyses(MPI_Comm comm, const mt_comm_t *mc, mt_ingest_t *L, job_t *j, mt_timings_t *pt)
{
    double tg = procs_wtime();
    void *ab = NULL;
    size_t al_len = 0;
    mt_status_t gst = mc->gatherv(mc->ctx, L->analyses.data, L->analyses.len, &ab, &al_len, 0);
    int bad = gst != MT_OK;
    j->mc = mc;
    /* the critical path's whole-job statistics are worked out where the
     * ranks were loaded (mt_job_cp_serve): the other processes keep theirs */
    if (mc->rank != 0 && !bad && !j->plan.skipped) {
        j->mine_owned = true;
        bad = mt_rank_analysis_unpack_all(L->analyses.data, L->analyses.len, &j->mine, &j->n_mine) != MT_OK;
    }
    mt_buf_free(&L->analyses);
    if (mc->rank == 0 && !bad) {
        gst = mt_ingest_analyses(ab, al_len, j->res, j->n, j->nccl.n_only, &j->an, &j->n_an);
        bad = gst != MT_OK;
        j->mine = j->an; /* every rank: its own are those no other process passes (mt_cp_dist_reduce) */
        j->n_mine = j->plan.skipped ? 0 : j->n_an;
    }
    free(ab);
    int any = comm_mpi_agree(comm, bad);
    /* another process's failure is its unpack's: out of memory */
    if (mc->rank == 0 && any)
        say("mergetrace: gathering the per-rank analyses: %s\n",
                bad && gst != MT_ERR_NOMEM ? "failed" : "out of memory");
    bad = any;
    pt->seconds[MT_TPH_GATHER] = procs_wtime() - tg;
    return bad ? MT_EXIT_ERROR : MT_EXIT_OK;
}

int job_align(MPI_Comm comm, const mt_comm_t *mc, const options_t *o, mt_ingest_t *L, job_t *j, mt_timings_t *pt)
{
    int me = mc->rank;
    int32_t *ranks = me == 0 ? malloc((j->n ? j->n : 1) * sizeof *ranks) : NULL;
    for (size_t i = 0; ranks && i < j->n; i++)
        ranks[i] = (int32_t)j->res[i].rank;
    void *rb = ranks;
    size_t bytes = ranks ? j->n * sizeof *ranks : 0;
    int bad = comm_mpi_bcast_bytes(comm, me != 0 || ranks != NULL, &rb, &bytes);
    j->ranks = rb; /* mt_job_free's */
    j->n_ranks = bad ? 0 : bytes / sizeof *j->ranks;
    if (bad) {
        if (me == 0)
            say("mergetrace: out of memory\n");
        return MT_EXIT_ERROR;
    }
    double ta = procs_wtime();
    mt_clock_opts_t co = {.ref_rank = o->ref_rank, .no_drift = o->no_drift, .no_align = o->no_align};
    size_t n_use = L->n_rows; /* rows that align: one source per rank */
    mt_error_t aerr;
    mt_error_clear(&aerr);
    mt_status_t st = mt_nccl_rows_select(mc, me == 0 ? &j->nccl : NULL, L->rows, L->n_rows, &n_use);
    /* The rows that align go to mt_align_job_owned, which frees them once
     * gathered: process 0 keeps one copy of its own share, not two (at -n 2
     * half the job's rows, 100 bytes per job row). The rest (a rank's
     * second source, compared below) moves to a block of its own first. */
    size_t n_rest = st == MT_OK ? L->n_rows - n_use : 0;
    mt_cinst_t *rest = n_rest ? malloc(n_rest * sizeof *rest) : NULL;
    if (comm_mpi_agree(comm, st == MT_OK && n_rest && !rest))
        st = MT_ERR_NOMEM;
    if (st == MT_OK) {
        if (n_rest)
            memcpy(rest, L->rows + n_use, n_rest * sizeof *rest);
        mt_cinst_t *mine = L->rows;
        L->rows = NULL;
        L->n_rows = L->cap_rows = 0;
        st = mt_align_job_owned(mc, mine, n_use, L->labels, j->ranks, (size_t)j->n_ranks, &co, &j->al, &aerr);
    }
    if (st == MT_OK)
        st = mt_nccl_compare(mc, rest, n_rest, &j->al, me == 0 ? &j->nccl : NULL);
    free(rest);
    pt->seconds[MT_TPH_ALIGN] = procs_wtime() - ta;
    if (st != MT_OK) {
        if (me == 0 && aerr.code != MT_OK)
            say("mergetrace: %saligning the clocks: %s: %s\n", o->job_tag, mt_status_str(st), aerr.msg);
        else if (me == 0)
            say("mergetrace: %saligning the clocks: %s\n", o->job_tag, mt_status_str(st));
        return options_exit_code(st);
    }
    return MT_EXIT_OK;
}

int job_cross(const options_t *o, const mt_discover_list_t *l, job_t *j, mt_timings_t *pt)
{
    mt_job_cross_opts_t co = {.aligned = options_one_clock(o),
                              .force = o->force,
                              .html = !o->no_html,
                              .pp = {.n_stage = o->n_stage,
                                     .stage_name = (const char *const *)o->stage_name,
                                     .stage_ranks = (const int32_t *const *)o->stage_ranks,
                                     .stage_n_ranks = o->stage_n_ranks,
                                     .pp_stages = o->pp_stages,
                                     .pp_blocks = o->pp_blocks,
                                     .warmup = o->warmup},
                              .what_if_pattern = o->what_if_pattern,
                              .what_if_factor = o->what_if_factor,
                              .gates = o->gates,
                              .n_gates = o->n_gates,
                              .heap_give_back = mt_heap_give_back,
                              .heap_peak = mt_heap_peak};
    mt_job_cross_fail_t f;
    mt_status_t st = mt_job_cross(&co, j, pt, &f);
    char msg[2 * PATH_MAX + 1400];
    st = mt_job_cross_text(st, &f, l, j, o->no_align, o->job_tag, msg, sizeof msg);
    if (msg[0])
        say("mergetrace: %s\n", msg);
    return options_exit_code(st);
}
