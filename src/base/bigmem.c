/* Huge-page hints for the big per-trace tables.
 *
 * Why: a table that glibc maps on its own (one bigger than the free top of
 * the program's heap reserve, base/heap.c: the tables of a trace of several
 * hundred MB) is new memory for every rank, and each of its 4 KiB
 * pages is faulted in once per rank; page faults are dear on virtual
 * machines. Marked MADV_HUGEPAGE, the kernel fills it 2 MiB at a time.
 * Measured before the heap reserve existed, when every table over 1 MiB was
 * mapped and the requests were rounded to whole 2 MiB mappings (8 x 157 MB,
 * -n 1 --no-merge, the project's 2-core VM): minor faults 246 k -> 131 k,
 * whole run 5.45 -> 3.9 s. The rounding went with the reserve: it cost
 * memory once most tables lived in the heap.
 *
 * The hint covers the whole pages around the block: for a block glibc
 * mapped on its own that is exactly its mapping (so the mapping is not
 * split and realloc can still mremap it); for a block inside the heap it
 * marks heap pages, which is harmless: the hint never changes contents.
 * Where the kernel or libc lacks it, the calls are plain
 * malloc/calloc/realloc. */
#define _DEFAULT_SOURCE
#include "base/bigmem.h"

#include <stdint.h>
#include <stdlib.h>
#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

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
    void *p = malloc(bytes);
    hint(p, bytes);
    return p;
}

void *mt_big_calloc(size_t n, size_t size)
{
    void *p = calloc(n, size);
    if (p && n)
        hint(p, n * size); /* calloc checked n * size */
    return p;
}

void *mt_big_realloc(void *p, size_t bytes)
{
    void *q = realloc(p, bytes);
    hint(q, bytes);
    return q;
}
