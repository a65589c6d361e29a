/* --timings: wall time per phase and peak memory, gathered over the MPI
 * processes and printed / written apart from report.json (which must stay
 * deterministic: the same bytes for any process count and any run). The
 * numbers are mt_timings_t's (mergetrace/report_timings.h): each process
 * fills its own as the phases run, and the reduction here makes process
 * 0's. */
#ifndef MT_MPI_TIMINGS_H
#define MT_MPI_TIMINGS_H

#include <mpi.h>
#include <stddef.h>

#include "mergetrace/report_timings.h"

/* CPU seconds this process has used so far (all its threads). */
double timings_cpu(void);

/* Collective over comm: mine is this process's numbers (seconds per
 * phase, helpers 0/1, largest: the largest trace it loaded; process 0's
 * also the rest). The seconds are reduced with a max (the slowest process
 * sets the pace) but for the phases only process 0 runs
 * (mt_timings_root_only), the helpers summed, the peak RSS (max, and which
 * process) and the largest trace reduced; process 0 prints the block on
 * stderr and writes DIR/timings.json (temporary name, then rename; not
 * when dir is NULL). Returns 0, or 1 on process 0 when timings.json could
 * not be written (msg says why). */
int timings_report(MPI_Comm comm, const mt_timings_t *mine, const char *dir, char *msg, size_t cap);

#endif
