/* The cross-rank passes behind mt_cross_analyze: internal to the core (the
 * public side is include/mergetrace/crossrank.h). */
#ifndef MT_CROSS_PASSES_H
#define MT_CROSS_PASSES_H

#include <stddef.h>
#include <stdint.h>

#include "mergetrace/crossrank.h"

/* ---- The passes ---------------------------------------------------------
 * mt_cross_analyze (mergetrace/crossrank.h) is all the program needs;
 * these are internal to src/cross/ and the unit tests. slot[row] is the
 * index in x->ranks of the row's rank; clk[slot] its clock (NULL: its own
 * clock). */

/* The collective table (colls, singles, mismatched) and every rank's
 * kernels / kernel_wait_ns / kernel_transfer_ns. MT_OK or MT_ERR_NOMEM. */
mt_status_t mt_cross_colltable(const mt_crow_t *rows, const mt_strtab_t *labels, const mt_match_t *m,
                               const uint32_t *slot, mt_cross_t *x);

/* ---- collective table helpers ---- */

/* Size in bytes of one element of a dtype label ("Float", "bf16", ...,
 * see "dtype size"), 0 when unknown. */
int mt_cross_dtype_size(const char *dtype);

/* nccl-tests' bus bandwidth factor of kind for a communicator of n ranks
 * (see "busbw"); -1 when the kind has none. */
double mt_cross_busbw_factor(mt_coll_kind_t kind, int64_t n);

/* The entry of x->ranks (sorted by rank) for rank, NULL when absent.
 * Inline: cross.c and the passes it drives (stragglers.c) both look ranks
 * up, and a function in cross.c made them a circle. */
static inline const mt_cross_rank_t *mt_cross_rank_find(const mt_cross_t *x, int32_t rank)
{
    size_t lo = 0, hi = x->n_ranks;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (x->ranks[mid].rank < rank)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < x->n_ranks && x->ranks[lo].rank == rank ? &x->ranks[lo] : NULL;
}

#endif
