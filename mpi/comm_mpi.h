/* The MPI implementation of the core's mt_comm_t. */
#ifndef MT_MPI_COMM_MPI_H
#define MT_MPI_COMM_MPI_H

#include <mpi.h>

#include "mergetrace/comm.h"

/* Fill *c for comm (which must outlive *c). */
void comm_mpi_init(mt_comm_t *c, MPI_Comm *comm);

#endif
