/* The job after loading: process 0 checks the ranks and joins NCCL files to
 * their traces, gathers the per-rank analyses; every process takes part in
 * aligning the clocks; process 0 runs the cross-rank, pipeline and gate
 * steps and builds the pictures of report.html. */
#ifndef MT_MPI_JOB_H
#define MT_MPI_JOB_H

#include <mpi.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mergetrace/discover.h"
#include "load.h"
#include "mergetrace/mergetrace.h"
#include "options.h"
#include "timings.h"

/* Process 0's view of the job (mergetrace/job_state.h). */
typedef mt_job_t job_t;

/* Process 0: the gathered results checked into *j (mt_job_check, zeroed
 * first). Returns an exit code (MT_EXIT_OK to go on), after saying why
 * (mt_job_check_text, after o->job_tag). */
int job_check(const options_t *o, const mt_discover_list_t *l, mt_ingest_result_t *res, size_t n_res, job_t *j);

/* Collective, after job_check: process 0 projects its memory for the
 * cross-rank steps from the job's GPU activities, rows and ranks (counted
 * by job_check; mt_critpath_memory) and sets j->plan.skipped
 * everywhere when the run with the critical path would exceed the budget
 * (--memory-budget, else 90 % of what the machine has available now);
 * then every process takes the GPU
 * activities out of its packed analyses (they are the critical path's
 * input only), so they are neither sent nor held. MT_EXIT_OK or
 * MT_EXIT_ERROR (printed why), the same everywhere. */
int job_plan(MPI_Comm comm, const options_t *o, mt_ingest_t *L, job_t *j);

/* Collective: the packed per-rank analyses of every process (L->analyses)
 * gathered on process 0 into j->an; L->analyses is freed once sent (on
 * process 0 it would sit beside the unpacked copy); unless the critical
 * path is left out, the other processes keep theirs unpacked in j->mine
 * for its reductions (mt_job_cp_serve frees them). MT_EXIT_OK or
 * MT_EXIT_ERROR (process 0 printed why), the same everywhere; pt->seconds[MT_TPH_GATHER]. */
int job_gather_analyses(MPI_Comm comm, const mt_comm_t *mc, mt_ingest_t *L, job_t *j, mt_timings_t *pt);

/* Collective: the loaded ranks reach every process (j->ranks), the rows
 * that align each rank are chosen, the clocks fitted (j->al), and NCCL
 * rows compared with Kineto ones. L->rows are used up (freed, n_rows 0:
 * process 0 keeps the gathered copy in j->al). An exit code, the same
 * everywhere (process 0 printed why); pt->seconds[MT_TPH_ALIGN]. */
int job_align(MPI_Comm comm, const mt_comm_t *mc, const options_t *o, mt_ingest_t *L, job_t *j, mt_timings_t *pt);

/* Process 0: mt_job_cross (whether the traces belong to one run, the
 * cross-rank analyses, the pipeline, memory across ranks, report.html's
 * views, the critical path and the gates, into *j), its failure said
 * (traces of different runs are MT_EXIT_BAD_INPUT with one line naming
 * two of them, unless --force). An exit code; the cross-rank steps' and
 * the critical path's times into pt (mt_job_cross). Collective with
 * mt_job_cp_serve on the other processes; process 0 ends it with
 * mt_job_cp_stop. */
int job_cross(const options_t *o, const mt_discover_list_t *l, job_t *j, mt_timings_t *pt);

#endif
