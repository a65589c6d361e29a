/* The dumps' parts of the traces' merged trace on one process, beside
 * traces (mergetrace/fr_share.h): each merged rank's dump read again from
 * the plan and placed on its trace, and the tally of how they were placed
 * that the program reduces over the processes into mt_fr_placed_t.
 * mpi/fr_run.c broadcasts what this needs and reduces the tally. */
#include <stdlib.h>
#include <string.h>

#include "mergetrace/fr_share.h"

mt_status_t mt_fr_parts_build(const mt_fr_parts_in_t *in, const mt_fr_span_t *spans, size_t n, mt_fr_part_t **parts,
                              size_t *n_parts, mt_error_t *err)
{
    *parts = NULL;
    *n_parts = 0;
    mt_fr_part_t *p = calloc(n ? n : 1, sizeof *p);
    if (!p)
        return MT_ERR_NOMEM;
    size_t np = 0;
    mt_status_t st = MT_OK;
    for (size_t k = 0; k < n && st == MT_OK; k++) {
        int32_t r = spans[k].rank;
        if (!mt_fr_ranks_have(in->kept, in->n_kept, r))
            continue; /* no dump, or one --force left out */
        mt_fr_part_t *q = &p[np];
        bool found = false;
        st = mt_fr_share_read_rank(in->plan, in->plan_len, r, &q->d, &found, err);
        if (st != MT_OK || !found)
            continue;
        np++;
        st = mt_fr_place_fit(&q->d, in->tcolls, in->ntcolls, in->labels, spans[k].first_ns, spans[k].last_ns, &q->p);
        q->input = k;
        /* the dump's time on the dump's own clock: the verdict's is on the
         * reference rank's, and offset_ns[r] is this clock minus that one */
        q->end_ns = in->dump_ns != MT_FR_NONE && r < in->world && in->offset_ns[r] != MT_FR_NONE
                        ? in->dump_ns + in->offset_ns[r]
                        : MT_FR_NONE;
    }
    if (st != MT_OK) {
        mt_fr_parts_free(p, np);
        return st;
    }
    *parts = p;
    *n_parts = np;
    return MT_OK;
}

void mt_fr_parts_free(mt_fr_part_t *parts, size_t n)
{
    for (size_t i = 0; parts && i < n; i++)
        mt_fr_dump_free(&parts[i].d);
    free(parts);
}

void mt_fr_parts_tally(const mt_fr_part_t *parts, size_t n, mt_fr_tally_t *t)
{
    *t = (mt_fr_tally_t){.pairs_min = INT64_MAX};
    for (size_t i = 0; i < n; i++) {
        const mt_fr_place_t *p = &parts[i].p;
        t->parts++;
        if (p->aligned) {
            t->aligned++;
            t->pairs_min = p->pairs < t->pairs_min ? p->pairs : t->pairs_min;
            t->lag_max_ns = p->lag_p50_ns > t->lag_max_ns ? p->lag_p50_ns : t->lag_max_ns;
        } else if (p->placed) {
            t->wall++;
            t->gap_max_ns = p->gap_ns > t->gap_max_ns ? p->gap_ns : t->gap_max_ns;
        } else
            t->left_out++;
    }
}

void mt_fr_placed_from(const mt_fr_tally_t *t, int64_t n_dumps, bool written, mt_fr_placed_t *out)
{
    *out = (mt_fr_placed_t){.aligned = t->aligned,
                            .wall = t->wall,
                            .left_out = t->left_out,
                            .no_trace = n_dumps - t->parts,
                            .pairs_min = t->pairs_min == INT64_MAX ? 0 : t->pairs_min,
                            .lag_max_ns = t->lag_max_ns,
                            .gap_max_ns = t->gap_max_ns,
                            .written = written};
}
