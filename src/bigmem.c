/* Huge-page hints for the big per-trace tables.
 *
 * Why: every rank's tables are new memory (glibc maps blocks over 1 MiB
 * afresh and unmaps them on free, which keeps a process's peak flat over
 * its ranks; mpi/main.c), so each 4 KiB page of them is faulted in once per
 * rank. On the project's 2-core VM those faults were 19% of all samples of
 * a whole run (`perf record`, 8 x 157 MB, `-n 1 --no-merge`). With the
 * blocks marked MADV_HUGEPAGE the kernel fills them 2 MiB at a time
 * (246 k -> 67 k minor faults; load 4.7 -> 2.7 s on that run).
 *
 * The hint covers the whole pages around the block: for a block glibc
 * mapped on its own that is exactly its mapping (so the mapping is not
 * split and realloc can still mremap it); for a block inside the heap it
 * only marks neighbouring heap pages, which is harmless: the hint never
 * changes contents. Where the kernel or libc lacks it, the calls are plain
 * malloc/calloc/realloc. */
#define _DEFAULT_SOURCE
#include "bigmem.h"

#include <stdint.h>
#include <stdlib.h>
#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

/* Round a big request so that glibc's own mapping for it (the request plus
 * a 16-byte chunk header, in whole pages) is a whole number of huge pages:
 * Linux places such mappings on a huge-page boundary, so every page of the
 * block can be a huge one (without it the unaligned head and tail of each
 * block, half of a 4 MiB one, were still filled 4 KiB at a time). Other
 * allocators just get a slightly bigger request. */
#define HUGE_PAGE ((size_t)2 << 20)

static size_t round_big(size_t bytes)
{
    if (bytes < MT_BIGMEM_MIN || bytes > SIZE_MAX / 2)
        return bytes;
    return ((bytes + 32 + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1)) - 32;
}

static void hint(void *p, size_t bytes)
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (!p || bytes < MT_BIGMEM_MIN)
        return;
    uintptr_t pg = 4096;
    long s = sysconf(_SC_PAGESIZE);
    if (s > 0)
        pg = (uintptr_t)s;
    uintptr_t a = (uintptr_t)p & ~(pg - 1);
    uintptr_t e = ((uintptr_t)p + bytes + pg - 1) & ~(pg - 1);
    (void)madvise((void *)a, e - a, MADV_HUGEPAGE); /* a hint: failure changes nothing */
#else
    (void)p;
    (void)bytes;
#endif
}

void *mt_big_malloc(size_t bytes)
{
    bytes = round_big(bytes);
    void *p = malloc(bytes);
    hint(p, bytes);
    return p;
}

void *mt_big_calloc(size_t n, size_t size)
{
    if (n && size > SIZE_MAX / n)
        return NULL;
    size_t bytes = round_big(n * size);
    void *p = calloc(1, bytes ? bytes : 1);
    hint(p, bytes);
    return p;
}

void *mt_big_realloc(void *p, size_t bytes)
{
    bytes = round_big(bytes);
    void *q = realloc(p, bytes);
    hint(q, bytes);
    return q;
}
