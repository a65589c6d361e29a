/* The cross-rank driver: the job's ranks and their clocks, then the
 * cross-rank passes (collective table, stragglers) over the gathered rows.
 * Definitions in include/mergetrace/crossrank.h. */
#include <stdint.h>
#include <stdlib.h>

#include "base/bigmem.h"
#include "base/sort.h"
#include "cross/passes.h"
#include "mergetrace/crossrank.h"

void mt_cross_free(mt_cross_t *x)
{
    if (!x)
        return;
    free(x->colls);
    free(x->ranks);
    free(x->suspects);
    free(x->cf_suspects);
    for (size_t i = 0; i < x->n_evidence; i++)
        free(x->evidence[i]);
    free(x->evidence);
    free(x->steps);
    free(x->step_suspects);
    free(x->episodes);
    free(x);
}

static size_t slot_of(const mt_cross_t *x, int32_t rank)
{
    return (size_t)(mt_cross_rank_find(x, rank) - x->ranks);
}

mt_status_t mt_cross_analyze(const mt_crow_t *rows, size_t n_rows, const mt_strtab_t *labels, const mt_match_t *m,
                             const mt_clock_t *clocks, const int32_t *ranks, size_t n_ranks, mt_cross_t **out)
{
    *out = NULL;
    mt_status_t st = MT_ERR_NOMEM;
    mt_cross_t *x = calloc(1, sizeof *x);
    int32_t *all = mt_big_malloc((n_rows + n_ranks ? n_rows + n_ranks : 1) * sizeof *all);
    uint32_t *slot = mt_big_malloc((n_rows ? n_rows : 1) * sizeof *slot);
    const mt_clock_t **clk = NULL;
    if (!x || !all || !slot)
        goto done;
    /* every rank passed in or seen in the rows, once, ascending; rows of
     * ranks not passed in are rare, so only those are sorted in */
    size_t na = 0, nu = 0;
    for (size_t i = 0; i < n_ranks; i++)
        all[na++] = ranks[i];
    qsort(all, na, sizeof *all, mt_cmp_i32);
    for (size_t i = 0; i < na; i++)
        if (!nu || all[i] != all[nu - 1])
            all[nu++] = all[i];
    na = nu;
    for (size_t i = 0; i < n_rows; i++) {
        int32_t *hit = bsearch(&rows[i].rank, all, nu, sizeof *all, mt_cmp_i32);
        if (!hit && (na == nu || all[na - 1] != rows[i].rank))
            all[na++] = rows[i].rank;
    }
    if (na > nu) {
        qsort(all, na, sizeof *all, mt_cmp_i32);
        nu = 0;
        for (size_t i = 0; i < na; i++)
            if (!nu || all[i] != all[nu - 1])
                all[nu++] = all[i];
    }
    x->ranks = calloc(nu ? nu : 1, sizeof *x->ranks);
    clk = calloc(nu ? nu : 1, sizeof *clk);
    if (!x->ranks || !clk)
        goto done;
    x->n_ranks = nu;
    for (size_t i = 0; i < nu; i++)
        x->ranks[i].rank = all[i];
    for (size_t i = 0; clocks && i < n_ranks; i++) {
        size_t s = slot_of(x, ranks[i]);
        clk[s] = &clocks[i];
        x->ranks[s].has_clock = true;
        x->ranks[s].connected = clocks[i].reference || clocks[i].connected;
    }
    for (size_t i = 0; i < n_rows; i++)
        slot[i] = (uint32_t)slot_of(x, rows[i].rank);
    x->spread_ns = -1;
    if ((st = mt_cross_colltable(rows, labels, m, slot, x)) != MT_OK)
        goto done;
    st = mt_cross_stragglers(rows, m, slot, (const mt_clock_t *const *)clk, x);
done:
    free(all);
    free(slot);
    free(clk);
    if (st != MT_OK) {
        mt_cross_free(x);
        return st;
    }
    *out = x;
    return MT_OK;
}
