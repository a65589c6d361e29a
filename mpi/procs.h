/* The program's processes: MPI when an MPI launcher started this process,
 * otherwise one process that never initialises MPI (a run by hand starts
 * in milliseconds instead of the third of a second of an Open MPI
 * singleton). The program makes its MPI calls through the wrappers below:
 * with MPI they are the MPI call of the same name; without it the world is
 * one process, so each collective is a copy or nothing. */
#ifndef MT_MPI_PROCS_H
#define MT_MPI_PROCS_H

#include <mpi.h>
#include <stdbool.h>

/* Whether the environment says an MPI launcher started this process:
 * Open MPI's mpirun/prterun (OMPI_COMM_WORLD_SIZE), any PMIx launcher
 * (PMIX_RANK), PMI-1/PMI-2 launchers such as MPICH's and Intel MPI's Hydra
 * or srun --mpi=pmi2 (PMI_RANK, PMI_SIZE, PMI_FD, PMI_PORT), a Slurm job
 * step (SLURM_PROCID with SLURM_STEP_ID), Cray PALS (PALS_RANKID) and ALPS
 * (ALPS_APP_PE). MERGETRACE_MPI=1 forces MPI on (a launcher not in this
 * list, or an Open MPI singleton); MERGETRACE_MPI=0 forces it off. */
bool procs_launched(void);

/* This process's rank as the launcher's variables give it; 0 without a
 * launcher or when they name none. For printing --help once before MPI. */
int procs_launcher_rank(void);

/* The number of processes the launcher started (OMPI_COMM_WORLD_SIZE,
 * PMI_SIZE, SLURM_STEP_NUM_TASKS), 1 without a launcher, 0 when it says
 * none (PMIx alone). */
int procs_launcher_size(void);

/* The same from the launcher's variables alone, whatever MERGETRACE_MPI
 * says (0 when they name no size): for the warning of MERGETRACE_MPI=0
 * under a launcher of several processes. */
int procs_launcher_env_size(void);

/* Start: MPI_Init when use_mpi, else nothing. Once, first. */
void procs_start(int *argc, char ***argv, bool use_mpi);

/* End: MPI_Finalize when procs_start initialised MPI. */
void procs_end(void);

/* Whether MPI is in use (procs_start was told to). */
bool procs_mpi(void);

/* Seconds on a monotonic clock (MPI_Wtime with MPI). */
double procs_wtime(void);

/* The MPI calls of the program. Without MPI the world is this one process:
 * rank 0 of 1; bcast and exscan do nothing (the exscan result of process 0
 * is undefined in MPI too); allreduce, reduce, gather and gatherv copy
 * send to recv (unless MPI_IN_PLACE). Types: the predefined ones the
 * program uses (char, byte, int, long, int32/64, uint64, unsigned long
 * long, double, long_int). */
void procs_comm_rank(MPI_Comm c, int *rank);
void procs_comm_size(MPI_Comm c, int *size);
void procs_bcast(void *buf, int count, MPI_Datatype t, int root, MPI_Comm c);
void procs_allreduce(const void *send, void *recv, int count, MPI_Datatype t, MPI_Op op, MPI_Comm c);
void procs_reduce(const void *send, void *recv, int count, MPI_Datatype t, MPI_Op op, int root, MPI_Comm c);
void procs_exscan(const void *send, void *recv, int count, MPI_Datatype t, MPI_Op op, MPI_Comm c);
void procs_gather(const void *send, int scount, MPI_Datatype st, void *recv, int rcount, MPI_Datatype rt, int root,
                  MPI_Comm c);
void procs_gatherv(const void *send, int scount, MPI_Datatype st, void *recv, const int *rcounts, const int *displs,
                   MPI_Datatype rt, int root, MPI_Comm c);

#endif
