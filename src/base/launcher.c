/* How this process was started and what it may use (mergetrace/launcher.h):
 * the MPI launchers' variables, the CPUs of its affinity mask, the worker
 * count for a run by hand. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "mergetrace/launcher.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool has(const char *name)
{
    const char *v = getenv(name);
    return v && *v;
}

bool mt_launcher_mpi(void)
{
    const char *force = getenv("MERGETRACE_MPI");
    if (force && *force)
        return strcmp(force, "0") != 0;
    /* What the launchers set in every process they start (checked against
     * Open MPI 4.1's mpirun here; the others from their documentation). A
     * Slurm batch script has SLURM_PROCID but is no job step of its own;
     * srun gives both. */
    return has("OMPI_COMM_WORLD_SIZE") || has("PMIX_RANK") || has("PMI_RANK") || has("PMI_SIZE") ||
           has("PMI_FD") || has("PMI_PORT") || (has("SLURM_PROCID") && has("SLURM_STEP_ID")) ||
           has("PALS_RANKID") || has("ALPS_APP_PE");
}

/* The first of names set (and not empty), as a number; 0 when none is. */
static int first_set(const char *const *names, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const char *v = getenv(names[i]);
        if (v && *v)
            return atoi(v);
    }
    return 0;
}

int mt_launcher_rank(void)
{
    static const char *const names[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID",
                                        "PALS_RANKID", "ALPS_APP_PE"};
    return first_set(names, sizeof names / sizeof *names);
}

int mt_launcher_size(void)
{
    return mt_launcher_mpi() ? mt_launcher_env_size() : 1;
}

int mt_launcher_env_size(void)
{
    static const char *const names[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS"};
    return first_set(names, sizeof names / sizeof *names);
}

int mt_launcher_cpus(void)
{
#if defined(__linux__) && defined(CPU_COUNT)
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
#endif
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    return online > 0 ? (int)online : 1;
}

int mt_launcher_jobs(int jobs)
{
    if (jobs >= 0)
        return jobs;
    const char *env = getenv("MERGETRACE_JOBS");
    char *e = NULL;
    long v = env && *env ? strtol(env, &e, 10) : 0;
    return e && !*e && v >= 0 && v <= 4096 ? (int)v : 0;
}

int mt_launcher_workers(int asked, size_t n_files, uint64_t need_each, uint64_t mem_available)
{
    uint64_t n = asked > 0 ? (uint64_t)asked : (uint64_t)mt_launcher_cpus();
    if (n > n_files)
        n = n_files;
    /* One worker is what a run takes today; the others only where memory
     * holds them beside it. */
    if (need_each && mem_available) {
        uint64_t fit = mem_available / need_each;
        if (n > fit)
            n = fit;
    }
    return n < 1 ? 1 : n > 4096 ? 4096 : (int)n;
}
