/* Test-only fault injection, linked into mergetrace_faults (the program's
 * own sources built again with -Wl,--wrap=malloc,... ; never into the real
 * mergetrace). Calls from our code (the core and mpi/) to the allocator, to
 * MPI-IO writes and to rename() pass through here; calls made inside shared
 * libraries (Open MPI, zlib, libc) do not, so only our own error handling is
 * exercised. Driven by environment variables, read once at start-up:
 *
 *   MERGETRACE_FAULT_PROC=P          the MPI process that misbehaves (default 0)
 *   MERGETRACE_FAIL_ALLOC_AFTER=N    after N allocations, every one fails
 *   MERGETRACE_KILL_AFTER_ALLOC=N    SIGKILL at allocation N+1
 *   MERGETRACE_KILL_IN_WRITE=1       SIGKILL after the first MPI-IO write
 *   MERGETRACE_KILL_BEFORE_RENAME=1  SIGKILL instead of the first rename()
 *   MERGETRACE_KILL_AT_RENAME=N      SIGKILL instead of the Nth rename() (1: the first)
 *   MERGETRACE_FAULT_COUNT=1         print the allocation count at exit
 */
#include <mpi.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t k);
void *__real_realloc(void *p, size_t n);
int __real_rename(const char *a, const char *b);
int __real_MPI_File_write_at(MPI_File fh, MPI_Offset off, const void *buf, int count, MPI_Datatype t,
                             MPI_Status *st);
int __real_MPI_File_write_at_all(MPI_File fh, MPI_Offset off, const void *buf, int count, MPI_Datatype t,
                                 MPI_Status *st);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t k);
void *__wrap_realloc(void *p, size_t n);
int __wrap_rename(const char *a, const char *b);
int __wrap_MPI_File_write_at(MPI_File fh, MPI_Offset off, const void *buf, int count, MPI_Datatype t,
                             MPI_Status *st);
int __wrap_MPI_File_write_at_all(MPI_File fh, MPI_Offset off, const void *buf, int count, MPI_Datatype t,
                                 MPI_Status *st);

static bool me_;                 /* this process is the one that misbehaves */
static long long fail_after_ = -1, kill_after_ = -1, kill_rename_at_ = -1, renames_;
static bool kill_write_, kill_rename_;
static atomic_llong calls_;      /* the inflate thread allocates too */

static long long env_ll(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? atoll(v) : -1;
}

static void report_count(void)
{
    fprintf(stderr, "fault_inject: process %s: %lld allocations\n", getenv("OMPI_COMM_WORLD_RANK") ? getenv("OMPI_COMM_WORLD_RANK") : "0",
            (long long)atomic_load(&calls_));
}

__attribute__((constructor)) static void fault_init(void)
{
    const char *r = getenv("OMPI_COMM_WORLD_RANK");
    long long proc = env_ll("MERGETRACE_FAULT_PROC");
    me_ = (r ? atoll(r) : 0) == (proc < 0 ? 0 : proc);
    if (!me_)
        return;
    fail_after_ = env_ll("MERGETRACE_FAIL_ALLOC_AFTER");
    kill_after_ = env_ll("MERGETRACE_KILL_AFTER_ALLOC");
    kill_write_ = env_ll("MERGETRACE_KILL_IN_WRITE") > 0;
    kill_rename_ = env_ll("MERGETRACE_KILL_BEFORE_RENAME") > 0;
    kill_rename_at_ = env_ll("MERGETRACE_KILL_AT_RENAME");
    if (env_ll("MERGETRACE_FAULT_COUNT") > 0)
        atexit(report_count);
}

/* true: this allocation fails */
static bool next_alloc(void)
{
    if (!me_)
        return false;
    long long k = atomic_fetch_add(&calls_, 1);
    if (kill_after_ >= 0 && k >= kill_after_)
        raise(SIGKILL);
    return fail_after_ >= 0 && k >= fail_after_;
}

void *__wrap_malloc(size_t n)
{
    return next_alloc() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t k)
{
    return next_alloc() ? NULL : __real_calloc(n, k);
}

void *__wrap_realloc(void *p, size_t n)
{
    return next_alloc() ? NULL : __real_realloc(p, n);
}

int __wrap_rename(const char *a, const char *b)
{
    if (me_ && (kill_rename_ || ++renames_ == kill_rename_at_))
        raise(SIGKILL);
    return __real_rename(a, b);
}

int __wrap_MPI_File_write_at(MPI_File fh, MPI_Offset off, const void *buf, int count, MPI_Datatype t,
                             MPI_Status *st)
{
    int rc = __real_MPI_File_write_at(fh, off, buf, count, t, st);
    if (me_ && kill_write_)
        raise(SIGKILL);
    return rc;
}

int __wrap_MPI_File_write_at_all(MPI_File fh, MPI_Offset off, const void *buf, int count, MPI_Datatype t,
                                 MPI_Status *st)
{
    int rc = __real_MPI_File_write_at_all(fh, off, buf, count, t, st);
    if (me_ && kill_write_)
        raise(SIGKILL);
    return rc;
}
