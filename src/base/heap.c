/* The program's memory policy (heap.h): a huge-page heap reserve and a
 * trim per rank (glibc on Linux; elsewhere the allocator's defaults), and
 * the memory the machine, its cgroup and the process hold. */
#define _DEFAULT_SOURCE
#include "mergetrace/heap.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <sys/resource.h>
#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

#include "base/cgroup.h"

/* Memory policy of the program (glibc; elsewhere the allocator's defaults).
 *
 * The heap is reserved once at start: HEAP_RESERVE bytes of address
 * space, marked for transparent huge pages, never trimmed by free();
 * each rank's memory goes back to the kernel with one malloc_trim once
 * its trace is freed (src/discover/ingest.c trace_done, mt_heap_release: since
 * 2026-11-25 before its result is packed, not after; ranks of small
 * traces share one trim, see TRIM_EVERY_BYTES), so a process's
 * peak stays one rank's, whatever number of ranks it holds (its tables;
 * the results it keeps until the gather do grow with its ranks, about
 * 6.6 MB per 157 MB rank: docs/PERFORMANCE.md). Why: the
 * loader and the passes allocate and free blocks by the thousand (sort
 * buffers per stream, link and pass scratch); with glibc's defaults the
 * heap top went back to the kernel after each and was faulted in again
 * 4 KiB at a time, and page faults are dear on virtual machines.
 * 8 x 157 MB, -n 2 --no-merge, the project's 2-core VM: load
 * 2.5 -> 1.3 s, per-rank passes 1.05 -> 0.35 s, whole run 3.4 -> 1.9 s,
 * peak RSS 100 -> 110 MB (-n 8: 105 MB). Without the per-rank trim the
 * run took 1.5 s but the peak grew with the ranks per process (154 MB
 * with 4, 128 MB with 1). Untouched reserve costs no memory.
 *
 * The reserve is marked for transparent huge pages: every block in it,
 * small ones included, is backed 2 MiB at a time, which costs some memory
 * (freed and partly used 2 MiB pages raise a rank's peak) and saves page
 * faults. Measured both ways on 2026-11-25 (one 157 MB rank by hand,
 * --no-merge --no-html): unmarked, 9 interleaved runs at load average 4.7,
 * peak RSS 84.8 -> 78.2 MiB, CPU within the noise; then, 15 interleaved
 * pairs on a quiet machine (load 0.3-0.7), medians, marked against
 * unmarked: load 0.275 against 0.304 s of CPU, user + sys 0.340 against
 * 0.370 s, minor faults 2.6 k against 10.1 k, peak RSS 80.9 against 76.9
 * MiB. Kept marked: 9 % of the load for 4 MiB (0.54x against 0.51x of
 * the trace, the 0.5x goal missed either way). Since the 48-byte events
 * and the 56-byte analysis input (2026-11-25 evening) the marked reserve
 * peaks at 0.47x median, 0.49x at most in 15 runs: the goal is met with
 * it, and the spread of about 5 MiB between runs is where its 2 MiB pages
 * fall. Under mpirun -n 2 with four
 * ranks per process no difference (the per-rank trim gives the reserve's
 * top back after the first rank anyway).
 *
 * Blocks of 1 MiB and more that do not fit in the reserve's free top are
 * mapped on their own and unmapped on free: a fixed mmap threshold, as
 * glibc would otherwise raise it each time such a block is freed and keep
 * every later trace's tables in the heap. */
#define HEAP_RESERVE ((size_t)256 << 20)

/* Extend the heap by HEAP_RESERVE in one step and mark the new part for
 * huge pages: one block bigger than the fresh heap's free top (but under
 * the mmap threshold), asked for with a big top pad. */
static void heap_reserve(void)
{
#if defined(__GLIBC__) && defined(__linux__) && defined(MADV_HUGEPAGE)
    mallopt(M_TOP_PAD, (int)HEAP_RESERVE);
    /* volatile: a malloc whose block nothing reads may be left out by the
     * compiler, and with it the reserve (gcc 12 did) */
    void *volatile p = malloc((size_t)768 << 10);
    char *end = sbrk(0);
    mallopt(M_TOP_PAD, 1 << 20);
    if (p && end != (char *)-1 && (char *)p < end && (size_t)(end - (char *)p) >= HEAP_RESERVE) {
        long pg = sysconf(_SC_PAGESIZE);
        uintptr_t m = (uintptr_t)(pg > 0 ? pg : 4096) - 1;
        uintptr_t a = ((uintptr_t)p + m) & ~m;
        (void)madvise((void *)a, (size_t)((uintptr_t)end - a), MADV_HUGEPAGE);
    }
    free(p);
#endif
}

void mt_heap_setup(void)
{
#if defined(__GLIBC__)
    mallopt(M_MMAP_THRESHOLD, 1 << 20);
    mallopt(M_TRIM_THRESHOLD, (int)(2 * HEAP_RESERVE));
    heap_reserve();
#endif
}

/* Ranks of traces smaller than TRIM_EVERY_BYTES share one trim, and a
 * trim keeps TRIM_KEEP bytes at the heap top. Why: a trim down to nothing
 * left the loader's next 4 MiB read buffer without room at the top, so it
 * was mapped on its own (over the mmap threshold) and every page of it
 * faulted in again by read() (perf: 74% of a run's page faults), for each
 * rank; a small trace does not pay that back. The 1024-rank scale job (4.4
 * MB per rank), 128 of its ranks in one process without MPI, user + sys
 * CPU s, minor faults, peak: a full trim per rank 0.27 + 0.38, 69 k, 26 MB;
 * every 64 MB 0.29 + 0.21, 46 k, 24 MB; per rank keeping 8 MiB 0.26 + 0.22,
 * 31 k, 25 MB; every 64 MB keeping 8 MiB 0.25 + 0.17, 4.5 k, 26 MB; all
 * 1024 ranks in one process: 2.90 + 3.71 s, 1.24 M faults, 159 MB against
 * 2.49 + 2.23 s, 0.55 M faults, 162 MB (report.json identical). A trace
 * of 64 MB or more is still trimmed after its rank. */
#define TRIM_EVERY_BYTES ((uint64_t)64 << 20)
#define TRIM_KEEP ((size_t)8 << 20)

/* Under a sanitizer the sanitizer's allocator serves malloc, and glibc's
 * arenas are never set up: malloc_trim from two worker threads at once
 * then set them up together and crashed (ASan, -j 2): nothing to give
 * back there. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define HEAP_TRIM 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define HEAP_TRIM 0
#endif
#endif
#ifndef HEAP_TRIM
#define HEAP_TRIM 1
#endif

void mt_heap_give_back(void)
{
#if defined(__GLIBC__) && HEAP_TRIM
    malloc_trim(TRIM_KEEP);
#endif
}

/* A rank is done: its memory back to the kernel. The trim also gives back
 * the reserve above the heap's live top; the part below keeps its mark, and
 * holds the next rank's tables as long as that rank needs no more memory
 * than the ranks before it (growth beyond is not marked: re-marking would
 * need the heap extended past blocks that malloc may serve from its free
 * lists instead). */
void mt_heap_release(uint64_t json_bytes)
{
#if defined(__GLIBC__)
    static _Thread_local uint64_t since; /* per worker thread, as per process (procs.h) */
    since += json_bytes;
    if (since >= TRIM_EVERY_BYTES) {
        mt_heap_give_back();
        since = 0;
    }
#else
    (void)json_bytes;
#endif
}

/* The number in file dir/name, or UINT64_MAX ("max", unreadable, or a
 * path too long for the buffer: a cut one names another file). */
static uint64_t read_u64(const char *dir, const char *name)
{
    char path[4300];
    int n = snprintf(path, sizeof path, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= sizeof path)
        return UINT64_MAX;
    FILE *f = fopen(path, "r");
    unsigned long long v;
    int ok = f && fscanf(f, "%llu", &v) == 1;
    if (f)
        fclose(f);
    return ok ? (uint64_t)v : UINT64_MAX;
}

uint64_t mt_heap_cgroup_room(const char *self_cgroup, const char *sysfs)
{
    char v1[4200];
    snprintf(v1, sizeof v1, "%s/memory", sysfs);
    FILE *f = fopen(self_cgroup, "r");
    char line[4096], dir[4200];
    const char *root = NULL, *lim = NULL, *use = NULL;
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *p = strchr(line, ':'), *q = p ? strchr(p + 1, ':') : NULL;
        if (!q)
            continue;
        if (!strncmp(line, "0::", 3)) { /* v2: used unless v1 has a memory controller */
            if (!root) {
                root = sysfs;
                lim = "memory.max";
                use = "memory.current";
                snprintf(dir, sizeof dir, "%s", q + 1);
            }
        } else if (strstr(p, ":memory:") == p || strstr(p, ",memory:") || strstr(p, ":memory,")) {
            root = v1;
            lim = "memory.limit_in_bytes";
            use = "memory.usage_in_bytes";
            snprintf(dir, sizeof dir, "%s", q + 1);
            break;
        }
    }
    if (f)
        fclose(f);
    uint64_t room = UINT64_MAX;
    for (size_t n = root ? strlen(dir) : 0; root;) {
        char at[4200 + 32];
        int w = snprintf(at, sizeof at, "%s%.*s", root, (int)n, dir);
        uint64_t l = w >= 0 && (size_t)w < sizeof at ? read_u64(at, lim) : UINT64_MAX;
        uint64_t u = w >= 0 && (size_t)w < sizeof at ? read_u64(at, use) : UINT64_MAX;
        if (l < ((uint64_t)1 << 60) && u != UINT64_MAX) /* v1 writes "no limit" as about 2^63 */
            room = l > u ? (l - u < room ? l - u : room) : 0;
        while (n > 0 && dir[n - 1] != '/') /* up one level */
            n--;
        if (n == 0)
            break;
        n--; /* the '/' itself; "" is the root */
    }
    return room;
}

/* Linux: /proc/meminfo's MemAvailable (the kernel's estimate of what can
 * be allocated without swapping, page cache it can drop included), or
 * less where the process's memory cgroup leaves less (a container's or
 * a batch job's limit, Slurm's for one, is not in MemAvailable);
 * elsewhere, or unreadable, 0: unknown. */
uint64_t mt_heap_available(void)
{
    uint64_t kib = 0;
#if defined(__linux__)
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    while (f && fgets(line, sizeof line, f)) {
        unsigned long long v;
        if (sscanf(line, "MemAvailable: %llu kB", &v) == 1) {
            kib = v;
            break;
        }
    }
    if (f)
        fclose(f);
    uint64_t room = mt_heap_cgroup_room("/proc/self/cgroup", "/sys/fs/cgroup");
    if (kib && room / 1024 < kib)
        return room;
#endif
    return kib * 1024;
}

/* Linux: this process's resident set now (/proc/self/statm); 0 elsewhere. */
uint64_t mt_heap_resident(void)
{
    uint64_t bytes = 0;
#if defined(__linux__)
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long long size, res;
    long page = sysconf(_SC_PAGESIZE);
    if (f && fscanf(f, "%llu %llu", &size, &res) == 2 && page > 0)
        bytes = (uint64_t)res * (uint64_t)page;
    if (f)
        fclose(f);
#endif
    return bytes;
}

uint64_t mt_heap_peak(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return 0;
    return (uint64_t)ru.ru_maxrss * 1024u; /* Linux reports KiB */
}
