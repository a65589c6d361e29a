/* The program's path for an operation-level timeline (one file holding
 * every rank on one clock): process 0 reads it, builds the job model, runs
 * the critical path and the ideal what-if, writes report.json and the
 * terminal lines; no clock fit, no merged trace. */
#ifndef MT_MPI_TIMELINE_RUN_H
#define MT_MPI_TIMELINE_RUN_H

#include <mpi.h>

#include "options.h"

/* Collective over comm. Returns -1 when the inputs are not one timeline
 * (the ordinary path goes on), else the exit code, the same on every
 * process. */
int timeline_run(MPI_Comm comm, const options_t *o);

#endif
