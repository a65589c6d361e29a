/* Allocation of the tables that grow with a trace's events (event table,
 * sort keys, link indexes, per-pass arrays): malloc/realloc plus a
 * transparent-huge-page hint. Free with free(). Internal to the core. */
#ifndef MT_BIGMEM_H
#define MT_BIGMEM_H

#include <stddef.h>

#include "mergetrace/status.h"

/* Below this a block gets no hint (one huge page). */
#define MT_BIGMEM_MIN ((size_t)2 << 20)

/* As malloc/calloc/realloc (NULL on failure, the old block kept by a failed
 * realloc); blocks of MT_BIGMEM_MIN bytes or more are marked for huge pages
 * before anything touches them. */
void *mt_big_malloc(size_t bytes);
void *mt_big_calloc(size_t n, size_t size);
void *mt_big_realloc(void *p, size_t bytes);

/* mt_grow (mergetrace/buf.h) through mt_big_realloc, for the tables that
 * grow with a trace's events. */
mt_status_t mt_grow_big(void **arr, size_t *cap, size_t need, size_t size, size_t first);
#define MT_GROW_BIG(arr, cap, need, first)                                                         \
    ((need) <= (cap) ? MT_OK : mt_grow_big((void **)&(arr), &(cap), (need), sizeof *(arr), (first)))

#endif
