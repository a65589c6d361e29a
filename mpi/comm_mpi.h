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

/* Collective over comm: process 0's *len bytes at *buf to every process.
 * ok: this process's status before it (process 0: whether it has the
 * bytes). On the others *buf becomes a new allocation holding them and a
 * NUL after them (text stays a string; the caller frees it) and *len
 * process 0's length. Returns 0, or 1 on every process when one was not
 * ok or could not allocate: then *buf is NULL on the others and process
 * 0's is untouched. */
int comm_mpi_bcast_bytes(MPI_Comm comm, bool ok, void **buf, size_t *len);

/* Collective over comm: the lowest process whose failed is true, or -1
 * when none: the one that says why, once (every process then returns the
 * same error). */
int comm_mpi_first_failed(MPI_Comm comm, bool failed);

#endif
