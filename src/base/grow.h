/* Growth of arrays by doubling: the one helper every growing table of the
 * core uses, with its overflow checks in one place. */
#ifndef MT_BASE_GROW_H
#define MT_BASE_GROW_H

#include <stddef.h>

#include "mergetrace/status.h"

/* Make *arr (capacity *cap elements of `size` bytes) hold at least `need`
 * elements: the capacity doubles, from `first` when it is 0, until it
 * does. Nothing happens when it already does. MT_OK, or MT_ERR_NOMEM with
 * *arr and *cap unchanged (also when the byte count would overflow).
 * mt_grow reallocates with realloc; mt_grow_big with mt_big_realloc, for
 * the tables that grow with a trace's events (base/bigmem.h). Both are
 * freed with free(). */
mt_status_t mt_grow(void **arr, size_t *cap, size_t need, size_t size, size_t first);
mt_status_t mt_grow_big(void **arr, size_t *cap, size_t need, size_t size, size_t first);

/* The same for a typed pointer lvalue: MT_GROW(p, cap, n + 1, 64). The test
 * is in line so that the common case (room left) costs one compare. */
#define MT_GROW(arr, cap, need, first)                                                             \
    ((need) <= (cap) ? MT_OK : mt_grow((void **)&(arr), &(cap), (need), sizeof *(arr), (first)))
#define MT_GROW_BIG(arr, cap, need, first)                                                         \
    ((need) <= (cap) ? MT_OK : mt_grow_big((void **)&(arr), &(cap), (need), sizeof *(arr), (first)))

#endif
