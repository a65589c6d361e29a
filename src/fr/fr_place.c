/* A Flight Recorder dump placed on its rank's trace, for the merged trace
 * beside traces (issue 41): which of the trace's collectives pair with the
 * dump's completed entries, and the shift between the two clocks
 * (mergetrace/fr_hang.h says how it is fitted and what happens without a
 * pair). */
#include <stdlib.h>
#include <string.h>

#include "base/sort.h"
#include "base/stats.h"
#include "fr/fr.h"

static int cmp_tcoll(const void *a, const void *b)
{
    const mt_fr_tcoll_t *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    if (x->seq != y->seq)
        return x->seq < y->seq ? -1 : 1;
    return x->end_ns < y->end_ns ? -1 : x->end_ns > y->end_ns;
}

mt_status_t mt_fr_tcolls_take(const mt_cinst_t *rows, size_t n, mt_fr_tcoll_t **out, size_t *n_out)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += (rows[i].flags & MT_CI_SEQ) && !(rows[i].flags & (MT_CI_NCCL | MT_CI_CPU));
    if (!k)
        return MT_OK;
    mt_fr_tcoll_t *t = realloc(*out, (*n_out + k) * sizeof *t);
    if (!t)
        return MT_ERR_NOMEM;
    size_t w = *n_out;
    for (size_t i = 0; i < n; i++)
        if ((rows[i].flags & MT_CI_SEQ) && !(rows[i].flags & (MT_CI_NCCL | MT_CI_CPU)))
            t[w++] = (mt_fr_tcoll_t){
                .rank = rows[i].rank, .pg_id = rows[i].pg_id, .seq = rows[i].seq, .end_ns = rows[i].end_ns};
    qsort(t, w, sizeof *t, cmp_tcoll);
    *out = t;
    *n_out = w;
    return MT_OK;
}

/* A completed collective entry of the dump: its group and completion. */
typedef struct done {
    int64_t seq, completed;
    uint32_t pg;
} done_t;

static int cmp_done(const void *a, const void *b)
{
    const done_t *x = a, *y = b;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Whether a trace's group label (the group's name, or "name (desc)")
 * names the dump's group name. */
static bool same_group(const char *label, const char *name, size_t name_len)
{
    if (strncmp(label, name, name_len))
        return false;
    return label[name_len] == '\0' || (label[name_len] == ' ' && label[name_len + 1] == '(');
}

mt_status_t mt_fr_place_fit(const mt_fr_dump_t *d, const mt_fr_tcoll_t *all, size_t n_all, const mt_strtab_t *labels,
                            int64_t first_ns, int64_t last_ns, mt_fr_place_t *out)
{
    memset(out, 0, sizeof *out);
    /* the dump's rank's tcolls: all[] is sorted by rank */
    size_t first = mt_lower_bound_i32(all, n_all, sizeof *all, d->rank), n = 0;
    while (first + n < n_all && all[first + n].rank == d->rank)
        n++;
    const mt_fr_tcoll_t *tc = all + first;
    size_t nd = 0;
    int64_t lo = INT64_MAX, hi = INT64_MIN; /* the dump's times */
    for (size_t i = 0; i < d->n; i++) {
        const mt_fr_entry_t *e = &d->entries[i];
        const int64_t t3[3] = {e->created, e->started, e->completed};
        for (int k = 0; k < 3; k++)
            if (t3[k] != MT_FR_NONE) {
                lo = t3[k] < lo ? t3[k] : lo;
                hi = t3[k] > hi ? t3[k] : hi;
            }
        nd += !e->is_p2p && e->completed != MT_FR_NONE;
    }
    done_t *dn = malloc((nd ? nd : 1) * sizeof *dn);
    int64_t *diff = malloc((n ? n : 1) * sizeof *diff);
    if (!dn || !diff) {
        free(dn);
        free(diff);
        return MT_ERR_NOMEM;
    }
    nd = 0;
    for (size_t i = 0; i < d->n; i++) {
        const mt_fr_entry_t *e = &d->entries[i];
        if (!e->is_p2p && e->completed != MT_FR_NONE)
            dn[nd++] = (done_t){.seq = e->seq, .completed = e->completed, .pg = e->pg};
    }
    qsort(dn, nd, sizeof *dn, cmp_done);
    /* each trace collective against the dump's entries of its number */
    size_t np = 0;
    for (size_t i = 0; i < n; i++) {
        size_t a = 0, b = nd;
        while (a < b) {
            size_t mid = a + (b - a) / 2;
            if (dn[mid].seq < tc[i].seq)
                a = mid + 1;
            else
                b = mid;
        }
        const char *label = mt_strtab_get(labels, tc[i].pg_id, NULL);
        for (; a < nd && dn[a].seq == tc[i].seq; a++) {
            size_t len;
            const char *name = mt_strtab_get(d->strs, dn[a].pg, &len);
            if (len && same_group(label, name, len)) {
                diff[np++] = dn[a].completed - tc[i].end_ns;
                break;
            }
        }
    }
    if (np) {
        int64_t med = mt_stats_kth_i64(diff, np, np / 2);
        int64_t shift = INT64_MAX;
        size_t kept = 0;
        for (size_t i = 0; i < np; i++) {
            int64_t dv = diff[i] - med;
            if (dv > MT_FR_PLACE_WINDOW_NS || dv < -MT_FR_PLACE_WINDOW_NS)
                continue;
            diff[kept++] = diff[i];
            shift = diff[i] < shift ? diff[i] : shift;
        }
        for (size_t i = 0; i < kept; i++)
            diff[i] -= shift;
        out->placed = out->aligned = true;
        out->shift_ns = shift;
        out->pairs = (int)kept;
        out->rejected = (int)(np - kept);
        out->lag_p50_ns = mt_stats_kth_i64(diff, kept, kept / 2);
    } else if (lo <= hi) {
        /* no pair: both read the host's wall clock, unless they lie far apart */
        out->gap_ns = lo > last_ns ? lo - last_ns : hi < first_ns ? first_ns - hi : 0;
        out->placed = out->gap_ns < MT_FR_PLACE_SAME_NS;
    }
    free(dn);
    free(diff);
    return MT_OK;
}
