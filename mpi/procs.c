/* The program's processes (procs.h): MPI under an MPI launcher, one
 * process without MPI otherwise, and the program's MPI calls with their
 * one-process meaning. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "procs.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static bool use_mpi;

static bool has(const char *name)
{
    const char *v = getenv(name);
    return v && *v;
}

bool procs_launched(void)
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

int procs_launcher_rank(void)
{
    static const char *const names[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID",
                                        "PALS_RANKID", "ALPS_APP_PE"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        const char *v = getenv(names[i]);
        if (v && *v)
            return atoi(v);
    }
    return 0;
}

int procs_launcher_size(void)
{
    return procs_launched() ? procs_launcher_env_size() : 1;
}

int procs_launcher_env_size(void)
{
    static const char *const names[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        const char *v = getenv(names[i]);
        if (v && *v)
            return atoi(v);
    }
    return 0;
}

void procs_start(int *argc, char ***argv, bool mpi)
{
    use_mpi = mpi;
    if (mpi) {
        /* The program never uses a shared file pointer, but Open MPI 4.1's
         * default one (sharedfp/lockedfile) is set up at every
         * MPI_File_open and overflows a fixed buffer with a path of about
         * 220 characters (*** buffer overflow detected ***, issue 40):
         * take the component that does nothing until used, unless the
         * user chose one (OMPI_MCA_* variables are read at MPI_Init; other
         * MPIs ignore it). */
        setenv("OMPI_MCA_sharedfp", "individual", 0);
        MPI_Init(argc, argv);
    }
}

void procs_end(void)
{
    if (use_mpi)
        MPI_Finalize();
}

bool procs_mpi(void)
{
    return use_mpi;
}

double procs_wtime(void)
{
    if (use_mpi)
        return MPI_Wtime();
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Bytes of count elements of a predefined type, for the one-process
 * copies. Handles compare without MPI_Init (constants or addresses). */
static size_t bytes_of(int count, MPI_Datatype t)
{
    size_t k = 0;
    if (t == MPI_CHAR || t == MPI_BYTE)
        k = 1;
    else if (t == MPI_INT || t == MPI_INT32_T)
        k = sizeof(int32_t);
    else if (t == MPI_LONG)
        k = sizeof(long);
    else if (t == MPI_INT64_T || t == MPI_UINT64_T)
        k = sizeof(int64_t);
    else if (t == MPI_UNSIGNED_LONG_LONG)
        k = sizeof(unsigned long long);
    else if (t == MPI_DOUBLE)
        k = sizeof(double);
    else if (t == MPI_LONG_INT)
        k = sizeof(struct { long v; int i; });
    assert(k && "procs: a type without its one-process size");
    return k * (size_t)(count > 0 ? count : 0);
}

static void copy(const void *send, void *recv, int count, MPI_Datatype t)
{
    if (send != MPI_IN_PLACE && send != recv && count > 0)
        memcpy(recv, send, bytes_of(count, t));
}

void procs_comm_rank(MPI_Comm c, int *rank)
{
    if (use_mpi)
        MPI_Comm_rank(c, rank);
    else
        *rank = 0;
}

void procs_comm_size(MPI_Comm c, int *size)
{
    if (use_mpi)
        MPI_Comm_size(c, size);
    else
        *size = 1;
}

void procs_bcast(void *buf, int count, MPI_Datatype t, int root, MPI_Comm c)
{
    if (use_mpi)
        MPI_Bcast(buf, count, t, root, c);
}

void procs_allreduce(const void *send, void *recv, int count, MPI_Datatype t, MPI_Op op, MPI_Comm c)
{
    if (use_mpi)
        MPI_Allreduce(send, recv, count, t, op, c);
    else
        copy(send, recv, count, t);
}

void procs_reduce(const void *send, void *recv, int count, MPI_Datatype t, MPI_Op op, int root, MPI_Comm c)
{
    if (use_mpi)
        MPI_Reduce(send, recv, count, t, op, root, c);
    else
        copy(send, recv, count, t);
}

void procs_exscan(const void *send, void *recv, int count, MPI_Datatype t, MPI_Op op, MPI_Comm c)
{
    if (use_mpi)
        MPI_Exscan(send, recv, count, t, op, c);
}

void procs_gather(const void *send, int scount, MPI_Datatype st, void *recv, int rcount, MPI_Datatype rt, int root,
                  MPI_Comm c)
{
    if (use_mpi)
        MPI_Gather(send, scount, st, recv, rcount, rt, root, c);
    else
        copy(send, recv, scount, st);
}

void procs_gatherv(const void *send, int scount, MPI_Datatype st, void *recv, const int *rcounts, const int *displs,
                   MPI_Datatype rt, int root, MPI_Comm c)
{
    if (use_mpi) {
        MPI_Gatherv(send, scount, st, recv, rcounts, displs, rt, root, c);
    } else {
        (void)rcounts;
        copy(send, (char *)recv + bytes_of(displs[0], rt), scount, st);
    }
}
