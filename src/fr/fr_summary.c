/* What the hang analysis reads of a Flight Recorder dump, for sending
 * process 0 that instead of every entry: each group's last completed
 * collective, the plan of which sequence numbers to keep, and a dump
 * trimmed to them (mergetrace/fr_hang.h says why the verdict stays the
 * same). */
#include <stdlib.h>
#include <string.h>

#include "fr/fr.h"

static int cmp_pg_seq(const void *a, const void *b)
{
    return strcmp(((const mt_fr_pg_seq_t *)a)->pg, ((const mt_fr_pg_seq_t *)b)->pg);
}

static const mt_fr_pg_seq_t *lookup(const mt_fr_pg_seq_t *t, size_t n, const char *pg)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(t[mid].pg, pg);
        if (c == 0)
            return &t[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

mt_status_t mt_fr_dump_last_done(const mt_fr_dump_t *d, mt_fr_pg_seq_t **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    size_t cap = 0;
    mt_fr_pg_seq_t *t = NULL;
    /* each group id's row of t, found once (one dump's ids: equal ids,
     * equal names); SIZE_MAX: not yet */
    uint32_t nid = d->strs ? mt_strtab_count(d->strs) : 1;
    size_t *row = malloc(nid * sizeof *row);
    if (!row)
        return MT_ERR_NOMEM;
    for (uint32_t id = 0; id < nid; id++)
        row[id] = SIZE_MAX;
    for (size_t i = 0; i < d->n; i++) {
        const mt_fr_entry_t *e = &d->entries[i];
        if (e->is_p2p)
            continue;
        uint32_t pid = e->pg < nid ? e->pg : MT_STR_NONE; /* an id past the table reads "" */
        size_t at = row[pid];
        if (at == SIZE_MAX) {
            const char *name = mt_fr_str(d, pid);
            for (at = 0; at < *n && strcmp(t[at].pg, name); at++)
                ;
            if (at == *n) {
                if (*n == cap) {
                    cap = cap ? 2 * cap : 8;
                    mt_fr_pg_seq_t *g = realloc(t, cap * sizeof *g);
                    if (!g) {
                        free(t);
                        free(row);
                        *n = 0;
                        return MT_ERR_NOMEM;
                    }
                    t = g;
                }
                memset(t[at].pg, 0, sizeof t[at].pg);
                memcpy(t[at].pg, name, strlen(name)); /* at most MT_FR_PG_MAX bytes */
                t[at].seq = 0;
                (*n)++;
            }
            row[pid] = at;
        }
        if (e->state == MT_FR_COMPLETED && e->seq > t[at].seq)
            t[at].seq = e->seq;
    }
    free(row);
    if (*n)
        qsort(t, *n, sizeof *t, cmp_pg_seq);
    *out = t;
    return MT_OK;
}

mt_status_t mt_fr_keep_plan(const mt_fr_dump_t *heads, size_t n, const mt_fr_pg_seq_t *const *done,
                            const size_t *ndone, mt_fr_pg_seq_t **keep, size_t *nkeep)
{
    *keep = NULL;
    *nkeep = 0;
    /* the dump index of each rank, for the members' lookups */
    int world = 0;
    for (size_t i = 0; i < n; i++)
        if (heads[i].rank + 1 > world)
            world = heads[i].rank + 1;
    int *of_rank = malloc((size_t)(world ? world : 1) * sizeof *of_rank);
    size_t cap = 0;
    for (size_t i = 0; i < n; i++)
        cap += heads[i].npgs;
    mt_fr_pg_seq_t *t = malloc((cap ? cap : 1) * sizeof *t);
    /* the names seen, by id in order of first sight (the check of each
     * group against every name seen before was dumps x groups x names) */
    mt_strtab_t *seen = mt_strtab_create();
    if (!of_rank || !t || !seen) {
        free(of_rank);
        free(t);
        mt_strtab_free(seen);
        return MT_ERR_NOMEM;
    }
    for (int r = 0; r < world; r++)
        of_rank[r] = -1;
    for (size_t i = 0; i < n; i++)
        of_rank[heads[i].rank] = (int)i;
    size_t k = 0;
    bool seen_empty = false;
    /* each group as the analysis takes it: its first definition, by rank */
    for (size_t i = 0; i < n; i++)
        for (size_t g = 0; g < heads[i].npgs; g++) {
            const mt_fr_pg_t *pg = &heads[i].pgs[g];
            uint32_t id, before = mt_strtab_count(seen);
            if (mt_strtab_intern(seen, pg->name, strlen(pg->name), &id) != MT_OK) {
                free(of_rank);
                free(t);
                mt_strtab_free(seen);
                return MT_ERR_NOMEM;
            }
            if (!pg->name[0] ? seen_empty : id < before)
                continue; /* seen in an earlier dump ("" is id 0, there from the start) */
            seen_empty |= !pg->name[0];
            int64_t lo = INT64_MAX;
            /* no ranks listed (gloo): the members are the dumps that name
             * it, as the analysis takes them (any dump: a superset keeps
             * more, never less) */
            for (size_t q = 0; !pg->nranks && q < n; q++)
                for (size_t x = 0; x < heads[q].npgs; x++)
                    if (!strcmp(heads[q].pgs[x].name, pg->name)) {
                        const mt_fr_pg_seq_t *y = lookup(done[q], ndone[q], pg->name);
                        int64_t s = y ? y->seq : 0;
                        lo = s < lo ? s : lo;
                        break;
                    }
            for (int m = 0; m < pg->nranks; m++) {
                int di = pg->ranks[m] < world ? of_rank[pg->ranks[m]] : -1;
                if (di < 0)
                    continue;
                const mt_fr_pg_seq_t *x = lookup(done[di], ndone[di], pg->name);
                int64_t s = x ? x->seq : 0;
                if (s < lo)
                    lo = s;
            }
            memcpy(t[k].pg, pg->name, sizeof t[k].pg);
            /* the slow-down looks 5 back from the first disagreement,
             * which is above lo */
            t[k].seq = lo == INT64_MAX ? INT64_MAX : lo - 4;
            k++;
        }
    free(of_rank);
    mt_strtab_free(seen);
    if (k)
        qsort(t, k, sizeof *t, cmp_pg_seq);
    *keep = t;
    *nkeep = k;
    return MT_OK;
}

mt_status_t mt_fr_dump_trim(const mt_fr_dump_t *d, const mt_fr_pg_seq_t *keep, size_t nkeep, mt_fr_dump_t *out)
{
    *out = (mt_fr_dump_t){.rank = d->rank};
    memcpy(out->version, d->version, sizeof out->version);
    /* the last entry and the last completed one, by record id: the first
     * of the highest, as the analysis picks them */
    size_t last = SIZE_MAX, last_done = SIZE_MAX;
    for (size_t i = 0; i < d->n; i++) {
        uint64_t id = d->entries[i].record_id;
        if (last == SIZE_MAX || id > d->entries[last].record_id)
            last = i;
        if (d->entries[i].state == MT_FR_COMPLETED && (last_done == SIZE_MAX || id > d->entries[last_done].record_id))
            last_done = i;
    }
    bool *take = calloc(d->n ? d->n : 1, sizeof *take);
    if (!take)
        return MT_ERR_NOMEM;
    /* each group id's first sequence number kept, looked up once (the
     * entries of a few groups interleave) */
    uint32_t nid = d->strs ? mt_strtab_count(d->strs) : 1;
    int64_t *from = malloc(nid * sizeof *from);
    if (!from) {
        free(take);
        return MT_ERR_NOMEM;
    }
    for (uint32_t id = 0; id < nid; id++) {
        const mt_fr_pg_seq_t *x = lookup(keep, nkeep, mt_fr_str(d, id));
        from[id] = x ? x->seq : INT64_MAX;
    }
    size_t k = 0;
    for (size_t i = 0; i < d->n; i++) {
        const mt_fr_entry_t *e = &d->entries[i];
        if (!e->is_p2p) {
            /* an id past the table reads "" */
            int64_t f = e->pg < nid ? from[e->pg] : from[MT_STR_NONE];
            take[i] = e->seq >= f;
        }
        /* every entry not completed: the sends and recvs are paired by
         * them, and a rank's first one is what it is blocked in */
        take[i] |= e->state != MT_FR_COMPLETED || (e->started != MT_FR_NONE && e->completed == MT_FR_NONE) ||
                   i == last || i == last_done;
        k += take[i];
    }
    free(from);
    out->entries = malloc((k ? k : 1) * sizeof *out->entries);
    if (!out->entries || mt_fr_strs_copy(d, out) != MT_OK) {
        free(take);
        mt_fr_dump_free(out);
        return MT_ERR_NOMEM;
    }
    for (size_t i = 0; i < d->n; i++)
        if (take[i])
            out->entries[out->n++] = d->entries[i];
    free(take);
    return MT_OK;
}
