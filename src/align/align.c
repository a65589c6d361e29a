/* The job-wide alignment step: gather every rank's collective rows on
 * process 0, match and fit there (n log n in the rows), broadcast the
 * clocks. Collective through mt_comm_t; serial under mt_comm_serial(). */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mergetrace/collectives.h"
#include "mergetrace/comm.h"

static double seconds(clockid_t which)
{
    struct timespec ts;
    clock_gettime(which, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void mt_align_result_free(mt_align_result_t *res)
{
    if (!res)
        return;
    free(res->clocks);
    free(res->rows);
    mt_match_free(res->m);
    memset(res, 0, sizeof *res);
}

/* owned: rows are freed as soon as they are gathered (on every process,
 * whatever happens), so process 0 does not hold its own share beside the
 * gathered copy while it matches and fits. */
static mt_status_t align_job(const mt_comm_t *comm, const mt_cinst_t *rows, mt_cinst_t *owned, size_t n_rows,
                             const int32_t *ranks, size_t n_ranks, const mt_clock_opts_t *opts,
                             mt_align_result_t *res)
{
    memset(res, 0, sizeof *res);
    void *all = NULL;
    size_t all_len = 0;
    mt_status_t st = comm->gatherv(comm->ctx, rows, n_rows * sizeof *rows, &all, &all_len, 0);
    free(owned);
    if (st)
        return st;
    res->clocks = calloc(n_ranks ? n_ranks : 1, sizeof *res->clocks);
    res->n_clocks = n_ranks;
    int64_t status = res->clocks ? MT_OK : MT_ERR_NOMEM;
    if (comm->rank == 0 && status == MT_OK) {
        res->rows = all;
        res->n_rows = all_len / sizeof *rows;
        all = NULL;
        /* wall and CPU time: on a busy machine the CPU time is the steadier */
        double t0 = seconds(CLOCK_MONOTONIC), c0 = seconds(CLOCK_PROCESS_CPUTIME_ID);
        status = mt_match(res->rows, res->n_rows, &res->m, &res->match);
        double t1 = seconds(CLOCK_MONOTONIC), c1 = seconds(CLOCK_PROCESS_CPUTIME_ID);
        if (status == MT_OK)
            status = mt_clock_fit(res->rows, res->n_rows, res->m, ranks, n_ranks, opts, res->clocks);
        res->match_s = t1 - t0;
        res->fit_s = seconds(CLOCK_MONOTONIC) - t1;
        res->match_cpu_s = c1 - c0;
        res->fit_cpu_s = seconds(CLOCK_PROCESS_CPUTIME_ID) - c1;
    }
    free(all);
    /* Everyone learns the root's status before anyone waits on a bcast. */
    if ((st = comm->allreduce_max(comm->ctx, &status, 1)))
        status = st;
    if (status != MT_OK) {
        mt_align_result_free(res);
        return (mt_status_t)status;
    }
    if ((st = comm->bcast(comm->ctx, res->clocks, n_ranks * sizeof *res->clocks, 0)) ||
        (st = comm->bcast(comm->ctx, &res->match, sizeof res->match, 0))) {
        mt_align_result_free(res);
        return st;
    }
    return MT_OK;
}

mt_status_t mt_align_job(const mt_comm_t *comm, const mt_cinst_t *rows, size_t n_rows, const int32_t *ranks,
                         size_t n_ranks, const mt_clock_opts_t *opts, mt_align_result_t *res)
{
    return align_job(comm, rows, NULL, n_rows, ranks, n_ranks, opts, res);
}

mt_status_t mt_align_job_owned(const mt_comm_t *comm, mt_cinst_t *rows, size_t n_rows, const int32_t *ranks,
                               size_t n_ranks, const mt_clock_opts_t *opts, mt_align_result_t *res)
{
    return align_job(comm, rows, rows, n_rows, ranks, n_ranks, opts, res);
}
