/* How this process was started and what it may use: whether an MPI
 * launcher started it (by the variables launchers set), its rank and the
 * job's size as they give them, the CPUs it may run on, and the worker
 * count for a run by hand. For programs (mpi/main.c, bench/); never
 * called by the core. Reads the environment only; never prints. */
#ifndef MERGETRACE_LAUNCHER_H
#define MERGETRACE_LAUNCHER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Whether the environment says an MPI launcher started this process:
 * Open MPI's mpirun/prterun (OMPI_COMM_WORLD_SIZE), any PMIx launcher
 * (PMIX_RANK), PMI-1/PMI-2 launchers such as MPICH's and Intel MPI's Hydra
 * or srun --mpi=pmi2 (PMI_RANK, PMI_SIZE, PMI_FD, PMI_PORT), a Slurm job
 * step (SLURM_PROCID with SLURM_STEP_ID), Cray PALS (PALS_RANKID) and ALPS
 * (ALPS_APP_PE). MERGETRACE_MPI=1 forces MPI on (a launcher not in this
 * list, or an Open MPI singleton); MERGETRACE_MPI=0 forces it off. */
bool mt_launcher_mpi(void);

/* This process's rank as the launcher's variables give it; 0 without a
 * launcher or when they name none. For printing --help once before MPI. */
int mt_launcher_rank(void);

/* The number of processes the launcher started (OMPI_COMM_WORLD_SIZE,
 * PMI_SIZE, SLURM_STEP_NUM_TASKS), 1 without a launcher (mt_launcher_mpi
 * false), 0 when it says none (PMIx alone). */
int mt_launcher_size(void);

/* The same from the launcher's variables alone, whatever MERGETRACE_MPI
 * says (0 when they name no size): for the warning of MERGETRACE_MPI=0
 * under a launcher of several processes. */
int mt_launcher_env_size(void);

/* The CPUs this process may run on (sched_getaffinity), at least 1. */
int mt_launcher_cpus(void);

/* The worker count for a run by hand (worker threads as processes):
 * asked (-j N; 0: mt_launcher_cpus()), at most n_files (a worker without a
 * file would idle), and at most what mem_available (bytes, 0 unknown)
 * holds at need_each bytes per worker (0 unknown); at least 1, at most
 * 4096. */
int mt_launcher_workers(int asked, size_t n_files, uint64_t need_each, uint64_t mem_available);

/* The worker count asked for: jobs (-j N) when >= 0, else MERGETRACE_JOBS=N
 * from the environment (a value that is not a whole number from 0 to 4096
 * is left aside), else 0 (one per CPU: mt_launcher_workers). */
int mt_launcher_jobs(int jobs);

#ifdef __cplusplus
}
#endif
#endif
