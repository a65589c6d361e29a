/* The MPI implementation of the core's mt_comm_t, and the program's one way
 * for every process to agree on a status. */
#ifndef MT_MPI_COMM_MPI_H
#define MT_MPI_COMM_MPI_H

#include <mpi.h>
#include <stdbool.h>

#include "mergetrace/comm.h"

/* Fill *c for comm (which must outlive *c). */
void comm_mpi_init(mt_comm_t *c, MPI_Comm *comm);

/* Collective over comm: every process gives its status (0 = fine, larger =
 * worse: a failure flag, or an exit code with -1 for "go on") and gets the
 * largest, the same everywhere, so that no process goes on into a
 * collective call that another one, having failed, never makes. */
int comm_mpi_agree(MPI_Comm comm, int status);

/* Collective over comm: the lowest process whose failed is true, or -1
 * when none: the one that says why, once (every process then returns the
 * same error). */
int comm_mpi_first_failed(MPI_Comm comm, bool failed);

#endif
