/* Sorting helpers shared by the passes: a stable LSD radix sort of 64-bit
 * keys carrying 32-bit values, a stable order by several 64-bit fields
 * built on it, an in-place permutation, a k-way merge of sorted sources,
 * lower bounds in sorted tables, and the plain qsort comparators. */
#ifndef MT_BASE_SORT_H
#define MT_BASE_SORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mergetrace/status.h"

/* Sort keys[0..n) ascending, carrying vals[] along; stable, so sorting by
 * the least significant field first and the most significant last sorts by
 * several fields. An LSD radix sort over the bits in which the keys
 * differ, 8 or 11 at a time: O(n) per pass. MT_OK or MT_ERR_NOMEM (arrays
 * unchanged then). */
mt_status_t mt_sort_u64(uint64_t *keys, uint32_t *vals, size_t n);

/* The order of items 0..n-1 by n_cols unsigned 64-bit fields, cols[0]
 * the most significant (cols[f][i]: field f of item i), equal items in
 * index order: perm[0..n) receives the item indices in that order, what a
 * stable sort of the items by a comparator of these fields in turn gives.
 * n_cols <= MT_SORT_MAX_COLS, n < 2^32; cols are only read. The bits in
 * which a field's values differ, fields end to end, make one key of as
 * many bits: a field that never changes costs nothing, and a key that fits
 * 64 bits is one mt_sort_u64 (more: one per 64-bit word, lowest first).
 * MT_OK or MT_ERR_NOMEM (perm undefined then); more columns, or n of
 * 2^32 or more, are a caller's error (asserted; MT_ERR_LIMIT). */
#define MT_SORT_MAX_COLS 8
mt_status_t mt_sort_fields(const uint64_t *const *cols, size_t n_cols, size_t n, uint32_t *perm);

/* As mt_sort_fields, and the runs of items equal in the first n_lead
 * fields (n_lead <= n_cols): starts[0..n/64] (n/64 + 1 words, written
 * whole) gets bit p set where position p of the order begins a run
 * (position 0 always). Read off the sorted key where those fields lie in
 * its last word, without going back to the items (a cache miss each in a
 * big table); else from the columns, only those that vary. */
mt_status_t mt_sort_fields_runs(const uint64_t *const *cols, size_t n_cols, size_t n, uint32_t *perm, size_t n_lead,
                                uint64_t *starts);

/* Lower bounds: the first of n items, `stride` bytes apart from base and
 * ascending by a key at each item's start (an unsigned 64-bit, signed
 * 64-bit or signed 32-bit integer, read unaligned), whose key is not below
 * key; n when none. One binary search for the tables that the passes keep
 * sorted by a hash, a rank or a step. */
size_t mt_lower_bound_u64(const void *base, size_t n, size_t stride, uint64_t key);
size_t mt_lower_bound_i64(const void *base, size_t n, size_t stride, int64_t key);
size_t mt_lower_bound_i32(const void *base, size_t n, size_t stride, int32_t key);

/* Reorder base[0..n) (elements of `size` bytes, at most 128) in place so
 * that element k becomes the old base[perm[k]]; perm must be a
 * permutation of 0..n-1 and is left as the identity. */
void mt_sort_permute(void *base, size_t size, uint32_t *perm, size_t n);

/* A k-way merge of sorted sources (a loser tree): each source shows its
 * head, a (key, tie) pair; the least pair wins (equal pairs: the lower
 * source). The caller reads the winner (mt_kmerge_top), then hands that
 * source's next head (mt_kmerge_next): about log2(k) comparisons an item
 * and no copy of the items, where sorting their concatenation needs a key
 * array, a permutation and the sort's own scratch. Plain data: the caller
 * may read key[] and tie[] of the top source. */
typedef struct mt_kmerge {
    size_t k;
    uint32_t *node;      /* node[0]: the winner; node[1..k): the losers of the matches */
    uint64_t *key, *tie; /* per source: its head; both MT_KMERGE_END: exhausted */
} mt_kmerge_t;

#define MT_KMERGE_END UINT64_MAX

/* k >= 1 sources (k == 0 is a caller's error: asserted), every one
 * exhausted until set: key[s], tie[s] of each source with items, then
 * mt_kmerge_start. MT_OK or MT_ERR_NOMEM (m empty). Free with
 * mt_kmerge_free (also after a failed init). */
mt_status_t mt_kmerge_init(mt_kmerge_t *m, size_t k);
/* Play the first tournament over the heads set. */
void mt_kmerge_start(mt_kmerge_t *m);
void mt_kmerge_free(mt_kmerge_t *m);

static inline bool mt_kmerge_less(const mt_kmerge_t *m, uint32_t a, uint32_t b)
{
    if (m->key[a] != m->key[b])
        return m->key[a] < m->key[b];
    return m->tie[a] != m->tie[b] ? m->tie[a] < m->tie[b] : a < b;
}

/* The source holding the least head; its key is MT_KMERGE_END and tie
 * MT_KMERGE_END when every source is exhausted. */
static inline uint32_t mt_kmerge_top(const mt_kmerge_t *m)
{
    return m->node[0];
}

/* The top source's next head (MT_KMERGE_END twice: it is exhausted), and
 * the matches on its way to the root played again. */
static inline void mt_kmerge_next(mt_kmerge_t *m, uint64_t key, uint64_t tie)
{
    /* the winner's head kept in registers, the arrays through locals (a
     * store to node[] would otherwise reload them each level) */
    uint32_t *node = m->node;
    uint64_t *keys = m->key, *ties = m->tie;
    uint32_t w = node[0];
    keys[w] = key;
    ties[w] = tie;
    for (size_t i = (w + m->k) >> 1; i; i >>= 1) {
        uint32_t l = node[i];
        uint64_t kl = keys[l];
        if (kl < key || (kl == key && (ties[l] < tie || (ties[l] == tie && l < w)))) {
            node[i] = w;
            w = l;
            key = kl;
            tie = ties[l];
        }
    }
    node[0] = w;
}

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
