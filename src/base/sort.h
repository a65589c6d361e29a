/* Sorting helpers shared by the passes: a stable LSD radix sort of 64-bit
 * keys carrying 32-bit values, an in-place permutation, and the plain
 * qsort comparators. */
#ifndef MT_BASE_SORT_H
#define MT_BASE_SORT_H

#include <stddef.h>
#include <stdint.h>

#include "mergetrace/status.h"

/* Sort keys[0..n) ascending, carrying vals[] along; stable, so sorting by
 * the least significant field first and the most significant last sorts by
 * several fields. An LSD radix sort over the bits in which the keys
 * differ, 8 or 11 at a time: O(n) per pass. MT_OK or MT_ERR_NOMEM (arrays
 * unchanged then). */
mt_status_t mt_sort_u64(uint64_t *keys, uint32_t *vals, size_t n);

/* Reorder base[0..n) (elements of `size` bytes, at most 128) in place so
 * that element k becomes the old base[perm[k]]; perm must be a
 * permutation of 0..n-1 and is left as the identity. */
void mt_sort_permute(void *base, size_t size, uint32_t *perm, size_t n);

/* A signed value as a key that sorts in the same order. */
static inline uint64_t mt_sort_key_i64(int64_t x)
{
    return (uint64_t)x ^ (UINT64_C(1) << 63);
}

/* qsort comparators, ascending (doubles: NaN compares equal to anything). */
int mt_cmp_i32(const void *a, const void *b);
int mt_cmp_i64(const void *a, const void *b);
int mt_cmp_u64(const void *a, const void *b);
int mt_cmp_dbl(const void *a, const void *b);

#endif
