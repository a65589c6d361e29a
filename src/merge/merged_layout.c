/* The places of the ranks' parts in a merged trace written by several
 * processes (mergetrace/merged_layout.h). */
#include "mergetrace/merged_layout.h"

#include <stdlib.h>

#include "base/sort.h"

size_t mt_layout_rank_index(const int32_t *ranks, size_t n, int32_t rank)
{
    return mt_lower_bound_i32(ranks, n, sizeof *ranks, rank);
}

mt_status_t mt_layout_init(mt_layout_t *l, size_t n, uint64_t header_bytes)
{
    *l = (mt_layout_t){.n = n, .end = header_bytes};
    l->size1 = calloc(n ? n : 1, sizeof *l->size1);
    l->at = calloc(n ? n : 1, sizeof *l->at);
    if (!l->size1 || !l->at) {
        mt_layout_free(l);
        return MT_ERR_NOMEM;
    }
    return MT_OK;
}

void mt_layout_free(mt_layout_t *l)
{
    free(l->size1);
    free(l->at);
    l->size1 = l->at = NULL;
}

void mt_layout_round(mt_layout_t *l, uint64_t *round)
{
    for (size_t g = 0; g < l->n; g++)
        if (round[g]) {
            l->size1[g] = round[g];
            round[g] = 0;
        }
    while (l->placed < l->n && l->size1[l->placed]) {
        l->at[l->placed] = l->end;
        l->end += l->size1[l->placed] - 1;
        l->placed++;
    }
}

bool mt_layout_placed(const mt_layout_t *l, size_t g, uint64_t *off)
{
    if (g >= l->placed)
        return false;
    *off = l->at[g];
    return true;
}
