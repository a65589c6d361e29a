/* The hang analysis over Flight Recorder dumps: a clock offset per rank
 * from completed collectives, the first collective of each process group
 * where the ranks disagree, the sends and recvs paired per directed pair
 * and the chain of waiting ranks, and a verdict with its culprits. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include <stdio.h>
#include "base/stats.h"
#include "fr/fr.h"

typedef struct job {
    const mt_fr_dump_t *dumps;
    size_t n;
    int *of_rank; /* [world]: dump index, -1 none */
    int world;
    int64_t *off;
    uint32_t **ix; /* [n]: each dump's collective entries by (group, seq, position) */
    size_t *nix;
    const mt_fr_pg_t **named; /* each group name's first definition (by dump, then place), by name */
    size_t nnamed;
    uint32_t **open; /* [n]: each dump's entries not completed, by record id (index_open) */
    size_t *nopen;
    int **sorted; /* [nnamed]: each group's ranks sorted (a send's group ranks index them); NULL until asked */
    bool nomem;   /* an allocation of the send/recv analysis failed */
    bool *stateless;   /* [n]: the dump records no start or completion (gloo's recorder) */
    mt_fr_pg_t *guess; /* groups no pg_config lists ranks of: members taken from the dumps naming them */
    size_t nguess;
    size_t wc_g;  /* waits_for's last collective: its group (SIZE_MAX: none), seq, wait and rank */
    int64_t wc_seq;
    int wc_kind, wc_on;
} job_t;

typedef struct ixe {
    const mt_fr_entry_t *e;
} ixe_t;

/* By group id (one dump's: the same name, the same id), seq, position. */
static int cmp_ixe(const void *a, const void *b)
{
    const mt_fr_entry_t *x = ((const ixe_t *)a)->e, *y = ((const ixe_t *)b)->e;
    if (x->pg != y->pg)
        return (x->pg > y->pg) - (x->pg < y->pg);
    if (x->seq != y->seq)
        return (x->seq > y->seq) - (x->seq < y->seq);
    return (x > y) - (x < y); /* the first in the dump first: find() returns it */
}

/* The index of every dump (a lookup by group and sequence number is a
 * binary search: the analysis looks up every member's entry for every
 * collective it compares, thousands of ranks by thousands of entries).
 * false when out of memory. */
static bool index_dumps(job_t *j)
{
    j->ix = calloc(j->n ? j->n : 1, sizeof *j->ix);
    j->nix = calloc(j->n ? j->n : 1, sizeof *j->nix);
    if (!j->ix || !j->nix)
        return false;
    for (size_t i = 0; i < j->n; i++) {
        const mt_fr_dump_t *d = &j->dumps[i];
        ixe_t *t = malloc((d->n ? d->n : 1) * sizeof *t);
        j->ix[i] = malloc((d->n ? d->n : 1) * sizeof *j->ix[i]);
        if (!t || !j->ix[i]) {
            free(t);
            return false;
        }
        size_t k = 0;
        for (size_t e = 0; e < d->n; e++)
            if (!d->entries[e].is_p2p)
                t[k++].e = &d->entries[e];
        qsort(t, k, sizeof *t, cmp_ixe);
        for (size_t e = 0; e < k; e++)
            j->ix[i][e] = (uint32_t)(t[e].e - d->entries);
        j->nix[i] = k;
        free(t);
    }
    return true;
}

/* j->named: every dump's groups by name, each name's first definition
 * (dumps in order, then each dump's groups) kept: pg_named's lookup was a
 * scan of every dump's groups, ranks x groups for each of the ranks x
 * groups it is asked. false when out of memory. */
static bool name_groups(job_t *j)
{
    size_t k = 0;
    for (size_t i = 0; i < j->n; i++)
        k += j->dumps[i].npgs;
    j->named = malloc((k ? k : 1) * sizeof *j->named);
    const mt_fr_pg_t **tmp = malloc((k ? k : 1) * sizeof *tmp);
    if (!j->named || !tmp) {
        free(tmp);
        return false;
    }
    k = 0;
    for (size_t i = 0; i < j->n; i++)
        for (size_t g = 0; g < j->dumps[i].npgs; g++)
            j->named[k++] = &j->dumps[i].pgs[g];
    /* bottom-up merge sort by name: stable, so each name's definitions
     * stay in the order collected and the first is the first */
    for (size_t w = 1; w < k; w *= 2) {
        for (size_t lo = 0; lo < k; lo += 2 * w) {
            size_t mid = lo + w < k ? lo + w : k, hi = lo + 2 * w < k ? lo + 2 * w : k, a = lo, b = mid;
            for (size_t o = lo; o < hi; o++)
                tmp[o] = b >= hi || (a < mid && strcmp(j->named[a]->name, j->named[b]->name) <= 0) ? j->named[a++]
                                                                                                  : j->named[b++];
        }
        memcpy(j->named, tmp, k * sizeof *tmp);
    }
    free(tmp);
    size_t u = 0;
    for (size_t x = 0; x < k; x++)
        if (!u || strcmp(j->named[u - 1]->name, j->named[x]->name))
            j->named[u++] = j->named[x];
        else if (!j->named[u - 1]->nranks && j->named[x]->nranks)
            j->named[u - 1] = j->named[x]; /* the first that lists its ranks */
    j->nnamed = u;
    /* a group no dump lists the ranks of (gloo): its members are the ranks
     * whose dumps name it (an entry of it, or a listing) */
    size_t ng = 0;
    for (size_t x = 0; x < u; x++)
        ng += !j->named[x]->nranks;
    if (!ng)
        return true;
    if (!(j->guess = calloc(ng, sizeof *j->guess)))
        return false;
    for (size_t x = 0; x < u; x++) {
        if (j->named[x]->nranks)
            continue;
        mt_fr_pg_t *g = &j->guess[j->nguess++];
        *g = *j->named[x];
        if (!(g->ranks = malloc((j->n ? j->n : 1) * sizeof *g->ranks)))
            return false;
        for (size_t i = 0; i < j->n; i++)
            for (size_t q = 0; q < j->dumps[i].npgs; q++)
                if (!strcmp(j->dumps[i].pgs[q].name, g->name)) {
                    g->ranks[g->nranks++] = j->dumps[i].rank;
                    break;
                }
        for (int a = 1; a < g->nranks; a++) /* ascending, as pg_config lists them */
            for (int b = a; b > 0 && g->ranks[b - 1] > g->ranks[b]; b--) {
                int t = g->ranks[b];
                g->ranks[b] = g->ranks[b - 1];
                g->ranks[b - 1] = t;
            }
        j->named[x] = g;
    }
    return true;
}

static void job_free(job_t *j)
{
    for (size_t g = 0; g < j->nguess; g++)
        free(j->guess[g].ranks);
    free(j->guess);
    free(j->stateless);
    for (size_t i = 0; j->open && i < j->n; i++)
        free(j->open[i]);
    free(j->open);
    free(j->nopen);
    for (size_t g = 0; j->sorted && g < j->nnamed; g++)
        free(j->sorted[g]);
    free(j->sorted);
    free(j->named);
    for (size_t i = 0; j->ix && i < j->n; i++)
        free(j->ix[i]);
    free(j->ix);
    free(j->nix);
    free(j->of_rank);
}

/* The id of name in d's string table: false when no entry of d has it
 * (an entry's names are cut to their MT_FR_*_MAX as pg_config's are). */
static bool name_id(const mt_fr_dump_t *d, const char *name, uint32_t *id)
{
    if (!name[0]) {
        *id = MT_STR_NONE;
        return true;
    }
    return d->strs && mt_strtab_find(d->strs, name, strlen(name), id);
}

/* The lowest position of d's index (dump di of j) not below (pg, seq). */
static size_t lower(const job_t *j, size_t di, uint32_t pg, int64_t seq)
{
    const mt_fr_entry_t *en = j->dumps[di].entries;
    const uint32_t *ix = j->ix[di];
    size_t lo = 0, hi = j->nix[di];
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const mt_fr_entry_t *e = &en[ix[mid]];
        if (e->pg < pg || (e->pg == pg && e->seq < seq))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The first collective entry (in the dump's order) of group pg with
 * sequence number seq in dump d (one of j->dumps); NULL when none. */
static const mt_fr_entry_t *find(const job_t *j, const mt_fr_dump_t *d, const char *pg, int64_t seq)
{
    size_t di = (size_t)(d - j->dumps);
    uint32_t id;
    if (!name_id(d, pg, &id))
        return NULL;
    size_t lo = lower(j, di, id, seq);
    if (lo < j->nix[di]) {
        const mt_fr_entry_t *e = &d->entries[j->ix[di][lo]];
        if (e->seq == seq && e->pg == id)
            return e;
    }
    return NULL;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Median of completed(r) - completed(q) over the collectives both completed;
 * false when they share none. */
static bool pair_offset(const job_t *j, const mt_fr_dump_t *r, const mt_fr_dump_t *q, int64_t *off, int *pairs)
{
    int64_t *d = malloc((r->n ? r->n : 1) * sizeof *d);
    size_t k = 0;
    if (!d)
        return false;
    /* find() with each group's run of q's index looked up once (a few
     * groups; r's and q's ids of a name differ) */
    struct {
        uint32_t pg; /* r's id */
        size_t lo, hi;
    } run[8];
    size_t nrun = 0, qi = (size_t)(q - j->dumps);
    const uint32_t *ix = j->ix[qi];
    for (size_t i = 0; i < r->n; i++) {
        const mt_fr_entry_t *e = &r->entries[i];
        if (e->is_p2p || e->completed == MT_FR_NONE)
            continue;
        size_t g = 0;
        while (g < nrun && run[g].pg != e->pg)
            g++;
        if (g == nrun) { /* the group's run in q's index: [(pg, -inf), (pg + 1, -inf)) */
            uint32_t qpg;
            size_t lo = 0, end = 0;
            if (name_id(q, mt_fr_str(r, e->pg), &qpg)) {
                lo = lower(j, qi, qpg, INT64_MIN);
                end = qpg == UINT32_MAX ? j->nix[qi] : lower(j, qi, qpg + 1, INT64_MIN);
            }
            if (nrun == sizeof run / sizeof *run)
                g = nrun - 1; /* more groups than slots: the last slot reused */
            else
                nrun++;
            run[g].pg = e->pg;
            run[g].lo = lo;
            run[g].hi = end;
        }
        size_t lo = run[g].lo, hi = run[g].hi;
        while (lo < hi) { /* the lowest position not below seq in the run */
            size_t mid = lo + (hi - lo) / 2;
            if (q->entries[ix[mid]].seq < e->seq)
                lo = mid + 1;
            else
                hi = mid;
        }
        const mt_fr_entry_t *f = lo < run[g].hi && q->entries[ix[lo]].seq == e->seq ? &q->entries[ix[lo]] : NULL;
        if (f && f->completed != MT_FR_NONE && !strcmp(mt_fr_str(q, f->name), mt_fr_str(r, e->name)))
            d[k++] = e->completed - f->completed;
    }
    if (k) {
        *off = mt_stats_kth_i64(d, k, k / 2); /* d[k / 2] of the sorted differences */
        *pairs += (int)k;
    }
    free(d);
    return k > 0;
}

/* On the reference clock; a rank without a fit keeps its own. */
static int64_t aligned(const job_t *j, int rank, int64_t t)
{
    return t == MT_FR_NONE ? MT_FR_NONE : j->off[rank] == MT_FR_NONE ? t : t - j->off[rank];
}

static void add_rank(int *arr, int *n, int r)
{
    for (int i = 0; i < *n; i++)
        if (arr[i] == r)
            return;
    if (*n < 16)
        arr[(*n)++] = r;
}

/* The smallest collective sequence number above s that a member of pg
 * has; INT64_MAX when none. */
static int64_t next_seq(const job_t *j, const mt_fr_pg_t *pg, int64_t s)
{
    int64_t best = INT64_MAX;
    for (int m = 0; m < pg->nranks; m++) {
        int di = pg->ranks[m] < j->world ? j->of_rank[pg->ranks[m]] : -1;
        uint32_t id;
        if (di < 0 || !name_id(&j->dumps[di], pg->name, &id))
            continue;
        /* the index holds the collective entries by (group, seq) */
        size_t at = lower(j, (size_t)di, id, s == INT64_MAX ? s : s + 1);
        if (at < j->nix[di]) {
            const mt_fr_entry_t *e = &j->dumps[di].entries[j->ix[di][at]];
            if (e->pg == id && e->seq > s && e->seq < best)
                best = e->seq;
        }
    }
    return best;
}

/* Whether no member of pg with a dump records a start or completion:
 * then what a member has done is known only from the sequence numbers. */
static bool blind_group(const job_t *j, const mt_fr_pg_t *pg)
{
    bool any = false;
    for (int m = 0; m < pg->nranks; m++) {
        int di = pg->ranks[m] < j->world ? j->of_rank[pg->ranks[m]] : -1;
        if (di < 0)
            continue;
        if (!j->stateless[di])
            return false;
        any = true;
    }
    return any;
}

/* first_disagreement of a group whose dumps record no states: the first
 * sequence number above the lowest member's last, which some member has
 * (the one below it ran on every member: the others went past it); the
 * members that have it are stuck in it. When every member is at the same
 * last one, that one if they enqueued it differently, else 0 (nothing
 * tells whether it ended). */
static int64_t blind_disagreement(const job_t *j, const mt_fr_pg_t *pg, int *stuck)
{
    int64_t lo = INT64_MAX;
    for (int m = 0; m < pg->nranks; m++) {
        int di = pg->ranks[m] < j->world ? j->of_rank[pg->ranks[m]] : -1;
        if (di < 0)
            continue;
        int64_t last = 0;
        uint32_t id;
        size_t at = name_id(&j->dumps[di], pg->name, &id) ? lower(j, (size_t)di, id + 1, INT64_MIN) : 0;
        if (at > 0) { /* the index's last entry of the group, if any */
            const mt_fr_entry_t *e = &j->dumps[di].entries[j->ix[di][at - 1]];
            if (e->pg == id)
                last = e->seq;
        }
        lo = last < lo ? last : lo;
    }
    int64_t s = lo == INT64_MAX ? INT64_MAX : next_seq(j, pg, lo);
    if (s == INT64_MAX && lo > 0 && lo != INT64_MAX) {
        /* every member at the same last: a hang there shows only when
         * they enqueued it differently (kind, dtype, sizes) */
        const mt_fr_entry_t *first = NULL;
        const mt_fr_dump_t *fd = NULL;
        bool differ = false;
        for (int m = 0; m < pg->nranks && !differ; m++) {
            int di = pg->ranks[m] < j->world ? j->of_rank[pg->ranks[m]] : -1;
            const mt_fr_entry_t *e = di >= 0 ? find(j, &j->dumps[di], pg->name, lo) : NULL;
            if (!e)
                continue;
            if (!first) {
                first = e;
                fd = &j->dumps[di];
                continue;
            }
            differ = e->in_numel != first->in_numel || e->out_numel != first->out_numel ||
                     strcmp(mt_fr_str(&j->dumps[di], e->name), mt_fr_str(fd, first->name)) ||
                     strcmp(mt_fr_str(&j->dumps[di], e->dtype), mt_fr_str(fd, first->dtype));
        }
        s = differ ? lo : INT64_MAX;
    }
    if (s == INT64_MAX)
        return 0;
    for (int m = 0; m < pg->nranks; m++) {
        int di = pg->ranks[m] < j->world ? j->of_rank[pg->ranks[m]] : -1;
        if (di >= 0 && find(j, &j->dumps[di], pg->name, s))
            (*stuck)++;
    }
    return s;
}

/* The first sequence number of group pg where the members disagree or one
 * has not completed it; 0 when none. */
static int64_t first_disagreement(const job_t *j, const mt_fr_pg_t *pg, int *stuck)
{
    int64_t lo = INT64_MAX, hi = 0;
    *stuck = 0;
    if (blind_group(j, pg))
        return blind_disagreement(j, pg, stuck);
    for (int m = 0; m < pg->nranks; m++) {
        int di = pg->ranks[m] < j->world ? j->of_rank[pg->ranks[m]] : -1;
        if (di < 0)
            continue;
        int64_t last_done = 0, last = 0;
        const mt_fr_dump_t *d = &j->dumps[di];
        uint32_t id;
        bool has = name_id(d, pg->name, &id);
        for (size_t i = 0; has && i < d->n; i++)
            if (!d->entries[i].is_p2p && d->entries[i].pg == id) {
                if (d->entries[i].seq > last)
                    last = d->entries[i].seq;
                if (d->entries[i].state == MT_FR_COMPLETED && d->entries[i].seq > last_done)
                    last_done = d->entries[i].seq;
            }
        if (last_done < lo)
            lo = last_done;
        if (last > hi)
            hi = last;
    }
    /* only the numbers some member has: a hostile 2^62 is one step, not 2^62 */
    for (int64_t s = next_seq(j, pg, lo); s <= hi && lo != INT64_MAX; s = next_seq(j, pg, s)) {
        bool bad = false;
        for (int m = 0; m < pg->nranks; m++) {
            int di = pg->ranks[m] < j->world ? j->of_rank[pg->ranks[m]] : -1;
            if (di < 0)
                continue;
            /* a collective everyone present completed did run on every
             * member: one without its entry lost it (evicted from the ring
             * buffer, or a restart), which is no disagreement */
            const mt_fr_entry_t *e = find(j, &j->dumps[di], pg->name, s);
            if (e && e->state != MT_FR_COMPLETED)
                bad = true;
            if (e && e->state == MT_FR_STARTED)
                (*stuck)++;
        }
        if (bad)
            return s;
    }
    return 0;
}

/* The last entry of a dump, by record id. */
static const mt_fr_entry_t *last_entry(const mt_fr_dump_t *d)
{
    const mt_fr_entry_t *l = NULL;
    for (size_t i = 0; i < d->n; i++)
        if (!l || d->entries[i].record_id > l->record_id)
            l = &d->entries[i];
    return l;
}

/* The place in j->named of the group named name; SIZE_MAX if none. */
static size_t pg_index(const job_t *j, const char *name)
{
    size_t lo = 0, hi = j->nnamed;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(j->named[mid]->name, name);
        if (c == 0)
            return mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return SIZE_MAX;
}

/* The first definition of the group named name (j->named); NULL if none. */
static const mt_fr_pg_t *pg_named(const job_t *j, const char *name)
{
    size_t g = pg_index(j, name);
    return g == SIZE_MAX ? NULL : j->named[g];
}

static int64_t last_completed_seq(const mt_fr_dump_t *d, const char *pg)
{
    int64_t s = 0;
    uint32_t id;
    if (!name_id(d, pg, &id))
        return 0;
    for (size_t i = 0; i < d->n; i++)
        if (!d->entries[i].is_p2p && d->entries[i].state == MT_FR_COMPLETED && d->entries[i].pg == id &&
            d->entries[i].seq > s)
            s = d->entries[i].seq;
    return s;
}

/* A member's entry as the majority vote compares it: kind, sizes, dtype. */
typedef struct op_key {
    const char *name, *dtype;
    uint64_t in, out;
    int m; /* the member */
} op_key_t;

static int cmp_op_key(const void *a, const void *b)
{
    const op_key_t *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    if (!c)
        c = strcmp(x->dtype, y->dtype);
    if (!c)
        c = (x->in > y->in) - (x->in < y->in);
    if (!c)
        c = (x->out > y->out) - (x->out < y->out);
    return c;
}

static void verdict(job_t *j, const mt_fr_pg_t *pg, int64_t s, mt_fr_hang_t *h)
{
    snprintf(h->pg, sizeof h->pg, "%s", pg->name);
    snprintf(h->pg_desc, sizeof h->pg_desc, "%s", pg->desc);
    h->seq = s;
    const mt_fr_entry_t *present[MT_FR_MAX_RANKS];
    const mt_fr_dump_t *pd[MT_FR_MAX_RANKS]; /* present[m]'s dump */
    int absent[16], nabsent = 0, npresent = 0;
    for (int m = 0; m < pg->nranks; m++) {
        int r = pg->ranks[m], di = r < j->world ? j->of_rank[r] : -1;
        present[m] = NULL;
        if (di < 0) {
            add_rank(h->no_dump, &h->nno_dump, r);
            continue;
        }
        pd[m] = &j->dumps[di];
        present[m] = find(j, pd[m], pg->name, s);
        if (present[m]) {
            npresent++;
            add_rank(h->entered, &h->nentered, r);
            h->entered_total++;
            if (!h->name[0])
                snprintf(h->name, sizeof h->name, "%s", mt_fr_str(pd[m], present[m]->name));
        } else
            add_rank(absent, &nabsent, r);
    }
    /* the last to arrive among those who did */
    int64_t latest = INT64_MIN;
    for (int m = 0; m < pg->nranks; m++)
        if (present[m] && aligned(j, pg->ranks[m], present[m]->created) > latest) {
            latest = aligned(j, pg->ranks[m], present[m]->created);
            h->last_arrival = pg->ranks[m];
        }
    if (h->nno_dump) {
        h->kind = MT_FR_NO_DUMP;
        return;
    }
    /* kind, size, dtype: the ranks that differ from the majority. Each
     * member's agreement is the size of its run of equal keys (sorted:
     * every member against every other was members^2 compares, 16 M at
     * 4,096 ranks) */
    op_key_t key[MT_FR_MAX_RANKS]; /* 128 KB beside present[]: the default 8 MB stack of any thread */
    int agree[MT_FR_MAX_RANKS];
    int nk = 0;
    for (int m = 0; m < pg->nranks; m++)
        if (present[m])
            key[nk++] = (op_key_t){.name = mt_fr_str(pd[m], present[m]->name),
                                   .dtype = mt_fr_str(pd[m], present[m]->dtype), .in = present[m]->in_numel,
                                   .out = present[m]->out_numel, .m = m};
    qsort(key, (size_t)nk, sizeof *key, cmp_op_key);
    for (int a = 0, b; a < nk; a = b) {
        for (b = a + 1; b < nk && !cmp_op_key(&key[a], &key[b]); b++)
            ;
        for (int q = a; q < b; q++)
            agree[key[q].m] = b - a;
    }
    for (int m = 0; m < pg->nranks; m++) {
        if (!present[m])
            continue;
        if (2 * agree[m] < npresent || (2 * agree[m] == npresent && npresent == 2 && m > 0))
            add_rank(h->culprits, &h->nculprits, pg->ranks[m]);
    }
    if (h->nculprits) {
        h->kind = MT_FR_SIZE_MISMATCH;
        for (int m = 0; m < pg->nranks; m++)
            if (present[m] && pg->ranks[m] == h->culprits[0])
                mt_fr_entry_op(pd[m], present[m], &h->hung_culprit);
            else if (present[m] && !h->hung_first.name[0])
                mt_fr_entry_op(pd[m], present[m], &h->hung_first);
        return;
    }
    if (!nabsent) {
        h->kind = MT_FR_AMBIGUOUS;
        return;
    }
    h->kind = MT_FR_NEVER_ENQUEUED;
    for (int a = 0; a < nabsent; a++) {
        add_rank(h->culprits, &h->nculprits, absent[a]);
        const mt_fr_dump_t *d = &j->dumps[j->of_rank[absent[a]]];
        const mt_fr_entry_t *l = last_entry(d);
        if (!l)
            continue;
        const char *lpg = mt_fr_str(d, l->pg);
        const mt_fr_pg_t *other = pg_named(j, lpg);
        /* behind where the group's other members completed: a restart */
        for (int m = 0; other && m < other->nranks; m++) {
            int r = other->ranks[m], di = r < j->world ? j->of_rank[r] : -1;
            if (r != absent[a] && di >= 0 && l->seq < last_completed_seq(&j->dumps[di], lpg))
                h->kind = MT_FR_DESYNC;
        }
        /* a dump without states: its last entry is where the rank is */
        bool in_it = l->state == MT_FR_STARTED || j->stateless[j->of_rank[absent[a]]];
        if (h->kind == MT_FR_DESYNC || !in_it || !other || !strcmp(lpg, pg->name))
            continue;
        /* waiting in another group for a member that waits here */
        for (int m = 0; m < other->nranks; m++) {
            int r = other->ranks[m], di = r < j->world ? j->of_rank[r] : -1;
            if (r == absent[a] || di < 0 || find(j, &j->dumps[di], lpg, l->seq))
                continue;
            for (int k = 0; k < pg->nranks; k++)
                if (pg->ranks[k] == r && present[k]) {
                    h->kind = MT_FR_ORDER_MISMATCH;
                    add_rank(h->culprits, &h->nculprits, r);
                }
        }
    }
    const mt_fr_dump_t *cd = &j->dumps[j->of_rank[h->culprits[0]]];
    const mt_fr_entry_t *cl = last_entry(cd);
    if (cl)
        mt_fr_entry_op(cd, cl, &h->culprit_last);
    h->culprit_last_rank = h->culprits[0];
    for (int a = 1; a < h->nculprits; a++) /* ascending, for the reader */
        for (int b = a; b > 0 && h->culprits[b - 1] > h->culprits[b]; b--) {
            int t = h->culprits[b];
            h->culprits[b] = h->culprits[b - 1];
            h->culprits[b - 1] = t;
        }
    /* a slow-down: the one culprit later and later in this group's last
     * completed collectives (at least 3, each later than the one before,
     * the last 10 ms or more behind the median member) */
    if (h->nculprits != 1 || h->kind != MT_FR_NEVER_ENQUEUED)
        return;
    int c = h->culprits[0];
    int64_t prev = INT64_MIN;
    int rising = 0;
    for (int64_t q = s - 5 < 1 ? 1 : s - 5; q < s; q++) {
        int64_t t[MT_FR_MAX_RANKS], mine = MT_FR_NONE;
        size_t k = 0;
        for (int m = 0; m < pg->nranks; m++) {
            int r = pg->ranks[m];
            const mt_fr_entry_t *e = find(j, &j->dumps[j->of_rank[r]], pg->name, q);
            if (!e || e->created == MT_FR_NONE)
                continue;
            t[k++] = aligned(j, r, e->created);
            if (r == c)
                mine = t[k - 1];
        }
        if (mine == MT_FR_NONE || !k)
            continue;
        qsort(t, k, sizeof *t, cmp_i64);
        int64_t late = mine - t[(k - 1) / 2];
        rising = late > prev ? rising + 1 : 0;
        prev = late;
    }
    h->slowdown = rising >= 3 && prev >= 10000000;
}

/* ---- sends and recvs ---- */

static int cmp_record(const void *a, const void *b)
{
    const mt_fr_entry_t *x = ((const ixe_t *)a)->e, *y = ((const ixe_t *)b)->e;
    if (x->record_id != y->record_id)
        return (x->record_id > y->record_id) - (x->record_id < y->record_id);
    return (x > y) - (x < y);
}

/* j->open: each dump's entries not completed, by record id (the few in
 * flight when it was taken), and room for j->sorted. false when out of
 * memory. */
static bool index_open(job_t *j)
{
    j->open = calloc(j->n ? j->n : 1, sizeof *j->open);
    j->nopen = calloc(j->n ? j->n : 1, sizeof *j->nopen);
    j->sorted = calloc(j->nnamed ? j->nnamed : 1, sizeof *j->sorted);
    if (!j->open || !j->nopen || !j->sorted)
        return false;
    for (size_t i = 0; i < j->n; i++) {
        const mt_fr_dump_t *d = &j->dumps[i];
        size_t k = 0;
        if (j->stateless[i]) { /* no states: the rank is in its last entry, the rest ran */
            const mt_fr_entry_t *l = last_entry(d);
            if (!(j->open[i] = malloc(sizeof *j->open[i])))
                return false;
            j->open[i][0] = l ? (uint32_t)(l - d->entries) : 0;
            j->nopen[i] = l != NULL;
            continue;
        }
        for (size_t e = 0; e < d->n; e++)
            k += d->entries[e].state != MT_FR_COMPLETED;
        ixe_t *t = malloc((k ? k : 1) * sizeof *t);
        j->open[i] = malloc((k ? k : 1) * sizeof *j->open[i]);
        if (!t || !j->open[i]) {
            free(t);
            return false;
        }
        k = 0;
        for (size_t e = 0; e < d->n; e++)
            if (d->entries[e].state != MT_FR_COMPLETED)
                t[k++].e = &d->entries[e];
        qsort(t, k, sizeof *t, cmp_record);
        for (size_t e = 0; e < k; e++)
            j->open[i][e] = (uint32_t)(t[e].e - d->entries);
        j->nopen[i] = k;
        free(t);
    }
    return true;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* Group j->named[g]'s ranks in ascending order: a send's or recv's group
 * ranks are places in it (as PyTorch's fr_trace maps them). NULL when out
 * of memory (j->nomem set). */
static const int *sorted_ranks(job_t *j, size_t g)
{
    if (!j->sorted[g]) {
        const mt_fr_pg_t *pg = j->named[g];
        int *s = malloc((size_t)(pg->nranks ? pg->nranks : 1) * sizeof *s);
        if (!s) {
            j->nomem = true;
            return NULL;
        }
        if (pg->nranks) {
            memcpy(s, pg->ranks, (size_t)pg->nranks * sizeof *s);
            qsort(s, (size_t)pg->nranks, sizeof *s, cmp_int);
        }
        j->sorted[g] = s;
    }
    return j->sorted[g];
}

/* A send's or recv's ends from its profiling_name, "<backend>:send A->B"
 * (A sends to B) or "<backend>:recv A<-B" (A receives from B), A and B
 * group ranks. false for any other name. */
typedef struct p2p_ends {
    bool send;
    int me, peer;
} p2p_ends_t;

static bool group_rank(const char **p, int *out)
{
    long v = 0;
    const char *c = *p;
    if (!isdigit((unsigned char)*c))
        return false;
    for (; isdigit((unsigned char)*c); c++)
        if ((v = v * 10 + (*c - '0')) >= MT_FR_MAX_RANKS)
            return false;
    *out = (int)v;
    *p = c;
    return true;
}

static bool parse_p2p(const char *name, p2p_ends_t *p)
{
    const char *c = strchr(name, ':');
    c = c ? c + 1 : name;
    if (!strncmp(c, "send ", 5))
        p->send = true;
    else if (!strncmp(c, "recv ", 5))
        p->send = false;
    else
        return false;
    c += 5;
    if (!group_rank(&c, &p->me) || strncmp(c, p->send ? "->" : "<-", 2))
        return false;
    c += 2;
    return group_rank(&c, &p->peer) && !*c;
}

/* What a rank is blocked in: its first entry not completed, and whom that
 * waits for. */
enum { W_NONE, W_WAITS, W_MISMATCH, W_IN_IT, W_UNKNOWN };

typedef struct wait {
    uint8_t kind;            /* W_NONE: nothing open; W_WAITS: for rank on, which never enqueued its part;
                              * W_MISMATCH: a send/recv whose match on rank on differs; W_IN_IT: every
                              * party has it open; W_UNKNOWN: cannot tell (no dump, a name not understood) */
    bool p2p;                /* e is a send or recv */
    int on;                  /* the rank waited for; -1 */
    const mt_fr_entry_t *e;  /* the first entry not completed; NULL with W_NONE */
    const mt_fr_entry_t *pe; /* W_MISMATCH: on's matching entry */
    const mt_fr_pg_t *pg;    /* e's group; NULL when no dump defines it */
} wait_t;

static bool blocks(const wait_t *w)
{
    return w->kind == W_WAITS || w->kind == W_MISMATCH;
}

/* The open sends (send true) or recvs of dump di in group j->named[g]
 * with peer `peer`, in record order: the place of e among them (e NULL:
 * their number), or the k-th of them (e NULL, *at = k) in *at. */
static const mt_fr_entry_t *p2p_nth(job_t *j, size_t g, int di, bool send, int peer, const mt_fr_entry_t *e,
                                    size_t *at)
{
    const mt_fr_dump_t *d = &j->dumps[di];
    const mt_fr_pg_t *pg = j->named[g];
    const int *s = sorted_ranks(j, g);
    uint32_t id;
    size_t k = 0;
    if (!s || !name_id(d, pg->name, &id))
        return NULL;
    for (size_t i = 0; i < j->nopen[di]; i++) {
        const mt_fr_entry_t *x = &d->entries[j->open[di][i]];
        p2p_ends_t p;
        if (!x->is_p2p || x->pg != id || !parse_p2p(mt_fr_str(d, x->name), &p) || p.send != send ||
            p.peer >= pg->nranks || s[p.peer] != peer)
            continue;
        if (e ? x == e : k == *at) {
            *at = k;
            return x;
        }
        k++;
    }
    return NULL;
}

/* Rank r's (dump di) open send or recv e of group j->named[g] into *w:
 * its match on the peer is the peer's open entry of the other direction
 * with peer r at the same place (the operations between two ranks run in
 * order, and those before the open ones completed on both ends). */
static void p2p_wait(job_t *j, int r, int di, size_t g, const mt_fr_entry_t *e, wait_t *w)
{
    const mt_fr_dump_t *d = &j->dumps[di];
    const mt_fr_pg_t *pg = j->named[g];
    const int *s = sorted_ranks(j, g);
    p2p_ends_t p;
    *w = (wait_t){.kind = W_UNKNOWN, .on = -1, .e = e, .p2p = true, .pg = pg};
    if (!s || !parse_p2p(mt_fr_str(d, e->name), &p) || p.me >= pg->nranks || p.peer >= pg->nranks || s[p.me] != r ||
        s[p.peer] == r)
        return;
    int q = w->on = s[p.peer], qd = q < j->world ? j->of_rank[q] : -1;
    size_t at = 0;
    if (qd < 0 || !p2p_nth(j, g, di, p.send, q, e, &at))
        return;
    const mt_fr_entry_t *m = p2p_nth(j, g, qd, !p.send, r, NULL, &at);
    if (!m) {
        w->kind = W_WAITS;
        return;
    }
    /* the send's elements against the recv's (its output, else its
     * input), and their dtypes where both have one */
    const mt_fr_dump_t *qdump = &j->dumps[qd];
    const mt_fr_entry_t *snd = p.send ? e : m, *rcv = p.send ? m : e;
    const char *sdt = mt_fr_str(p.send ? d : qdump, snd->dtype), *rdt = mt_fr_str(p.send ? qdump : d, rcv->dtype);
    uint64_t rn = rcv->out_numel ? rcv->out_numel : rcv->in_numel;
    if (snd->in_numel != rn || (sdt[0] && rdt[0] && strcmp(sdt, rdt))) {
        w->kind = W_MISMATCH;
        w->pe = m;
    } else
        w->kind = W_IN_IT;
}

/* What rank r is blocked in, into *w; colls false: a collective is left
 * W_UNKNOWN (only sends and recvs looked at: the cheap first pass). */
static void waits_for(job_t *j, int r, bool colls, wait_t *w)
{
    *w = (wait_t){.kind = W_UNKNOWN, .on = -1};
    int di = j->of_rank[r];
    if (di < 0)
        return;
    if (!j->nopen[di]) {
        w->kind = W_NONE;
        return;
    }
    const mt_fr_dump_t *d = &j->dumps[di];
    const mt_fr_entry_t *e = &d->entries[j->open[di][0]];
    size_t g = pg_index(j, mt_fr_str(d, e->pg));
    w->e = e;
    w->p2p = e->is_p2p;
    if (g == SIZE_MAX)
        return;
    const mt_fr_pg_t *pg = w->pg = j->named[g];
    const int *s = sorted_ranks(j, g);
    if (!s)
        return;
    if (e->is_p2p) {
        /* a batch (batch_isend_irecv: one p2p_seq_id) waits as a whole:
         * its first send or recv that waits for its peer or mismatches,
         * else its first */
        p2p_wait(j, r, di, g, e, w);
        for (size_t k = 1; k < j->nopen[di] && !blocks(w); k++) {
            const mt_fr_entry_t *x = &d->entries[j->open[di][k]];
            wait_t o;
            if (!x->is_p2p || x->pg != e->pg || x->p2p_seq != e->p2p_seq)
                break;
            p2p_wait(j, r, di, g, x, &o);
            if (blocks(&o))
                *w = o;
        }
        return;
    }
    if (!colls)
        return;
    /* a collective: the lowest member without its entry, the same for
     * every member in it (kept for the next: thousands of ranks wait in
     * one collective, and each look is a scan of its members) */
    if (j->wc_g == g && j->wc_seq == e->seq) {
        w->kind = j->wc_kind;
        w->on = j->wc_on;
        return;
    }
    bool nodump = false;
    w->kind = W_IN_IT;
    for (int k = 0; k < pg->nranks; k++) {
        int q = s[k], qd = q < j->world ? j->of_rank[q] : -1;
        if (qd < 0)
            nodump = true;
        else if (!find(j, &j->dumps[qd], pg->name, e->seq)) {
            w->kind = W_WAITS;
            w->on = q;
            break;
        }
    }
    if (w->kind != W_WAITS && nodump)
        w->kind = W_UNKNOWN;
    j->wc_g = g;
    j->wc_seq = e->seq;
    j->wc_kind = w->kind;
    j->wc_on = w->on;
}

/* The waits followed from start into chain[] (room for every rank),
 * each rank once: its length; *loop the place of the rank the last one
 * waits for when that is already in it (a cycle), else -1. seen[r] ==
 * stamp marks the ranks in it. */
static int walk(const wait_t *w, int start, int *chain, int *seen, int stamp, int *loop)
{
    int n = 0, cur = start;
    *loop = -1;
    for (;;) {
        chain[n++] = cur;
        seen[cur] = stamp;
        if (w[cur].kind != W_WAITS)
            return n;
        int q = w[cur].on;
        if (seen[q] == stamp) {
            for (int i = 0; i < n; i++)
                if (chain[i] == q)
                    *loop = i;
            return n;
        }
        cur = q;
    }
}

/* w waits, or is a send or recv whose peer has no dump (who may be the
 * culprit: the verdict then says it cannot decide). */
static bool waiting(const job_t *j, const wait_t *w)
{
    return blocks(w) || (w->p2p && w->kind == W_UNKNOWN && w->on >= 0 && j->of_rank[w->on] < 0);
}

/* A send or recv among chain[0..n)'s waits. */
static bool p2p_link(const job_t *j, const wait_t *w, const int *chain, int n)
{
    for (int i = 0; i < n; i++)
        if (w[chain[i]].p2p && waiting(j, &w[chain[i]]))
            return true;
    return false;
}

static void sort_culprits(mt_fr_hang_t *h)
{
    qsort(h->culprits, (size_t)h->nculprits, sizeof *h->culprits, cmp_int);
}

/* The verdict from the waits when a send or recv is among them
 * (mt_fr_hang_analyse's contract says how); false, h untouched, when none
 * is. *w: [world] the waits, filled here. */
static bool p2p_verdict(job_t *j, wait_t *w, mt_fr_hang_t *h)
{
    int world = j->world;
    bool any = false;
    for (int r = 0; r < world; r++) {
        waits_for(j, r, false, &w[r]);
        any |= w[r].p2p && waiting(j, &w[r]);
    }
    if (!any || j->nomem)
        return false;
    j->wc_g = SIZE_MAX;
    for (int r = 0; r < world; r++)
        if (w[r].e && !w[r].p2p)
            waits_for(j, r, true, &w[r]);
    int *indeg = calloc((size_t)world, sizeof *indeg), *seen = malloc((size_t)world * sizeof *seen),
        *chain = malloc((size_t)world * sizeof *chain);
    if (!indeg || !seen || !chain) {
        free(indeg);
        free(seen);
        free(chain);
        j->nomem = true;
        return false;
    }
    for (int r = 0; r < world; r++) {
        seen[r] = -1;
        if (blocks(&w[r]) && w[r].on >= 0)
            indeg[w[r].on]++;
    }
    /* from a waiting rank no one waits for: the longest chain with a send
     * or recv in it, then the lowest rank; in a cycle alone, the lowest
     * rank waiting in a send or recv */
    int start = -1, best = 0, loop;
    for (int r = 0; r < world; r++) {
        if (!waiting(j, &w[r]) || indeg[r])
            continue;
        int n = walk(w, r, chain, seen, r, &loop);
        if (n > best && p2p_link(j, w, chain, n)) {
            best = n;
            start = r;
        }
    }
    for (int r = 0; r < world && start < 0; r++)
        if (w[r].p2p && waiting(j, &w[r]))
            start = r;
    int n = walk(w, start, chain, seen, world, &loop);
    int last = chain[n - 1], link = last;
    const wait_t *lw = &w[last];
    if (loop >= 0) {
        h->kind = MT_FR_ORDER_MISMATCH;
        link = chain[loop];
        for (int i = n - 1; i >= loop; i--) {
            add_rank(h->culprits, &h->nculprits, chain[i]);
            if (w[chain[i]].p2p)
                link = chain[i];
        }
    } else if (lw->kind == W_NONE && n >= 2) {
        h->kind = MT_FR_NEVER_ENQUEUED;
        link = chain[n - 2];
        add_rank(h->culprits, &h->nculprits, last);
    } else if (lw->kind == W_MISMATCH) {
        h->kind = MT_FR_SIZE_MISMATCH;
        add_rank(h->culprits, &h->nculprits, last);
        add_rank(h->culprits, &h->nculprits, lw->on);
    } else if (lw->kind == W_UNKNOWN && lw->on >= 0 && j->of_rank[lw->on] < 0) {
        h->kind = MT_FR_NO_DUMP;
        add_rank(h->no_dump, &h->nno_dump, lw->on);
    } else
        h->kind = MT_FR_AMBIGUOUS;
    const wait_t *kw = &w[link];
    if (h->kind == MT_FR_NEVER_ENQUEUED && !kw->p2p) {
        /* the last link is a collective: its verdict as without sends and
         * recvs (the culprits, their last entries, who arrived last) */
        h->nculprits = 0;
        verdict(j, kw->pg, kw->e->seq, h);
    } else if (kw->e) {
        const mt_fr_dump_t *ld = &j->dumps[j->of_rank[link]];
        snprintf(h->pg, sizeof h->pg, "%s", kw->pg ? kw->pg->name : mt_fr_str(ld, kw->e->pg));
        snprintf(h->pg_desc, sizeof h->pg_desc, "%s", kw->pg ? kw->pg->desc : "");
        snprintf(h->name, sizeof h->name, "%s", mt_fr_str(ld, kw->e->name));
        h->seq = kw->e->seq;
        h->p2p = kw->p2p;
        if (kw->p2p) {
            h->p2p_rank = link;
            h->p2p_peer = kw->on;
            mt_fr_entry_op(ld, kw->e, &h->p2p_op);
            if (kw->pe)
                mt_fr_entry_op(&j->dumps[j->of_rank[kw->on]], kw->pe, &h->p2p_peer_op);
        }
        if (h->kind == MT_FR_NEVER_ENQUEUED) {
            const mt_fr_dump_t *cd = &j->dumps[j->of_rank[last]];
            const mt_fr_entry_t *cl = last_entry(cd);
            if (cl)
                mt_fr_entry_op(cd, cl, &h->culprit_last);
            h->culprit_last_rank = last;
        } else if (h->kind == MT_FR_ORDER_MISMATCH) {
            /* the other end of the cycle: one in a collective when any */
            int other = kw->on;
            for (int i = loop; i < n; i++)
                if (!w[chain[i]].p2p)
                    other = chain[i];
            const mt_fr_dump_t *od = &j->dumps[j->of_rank[other]];
            if (w[other].e)
                mt_fr_entry_op(od, w[other].e, &h->culprit_last);
            h->culprit_last_rank = other;
        } else if (h->kind == MT_FR_SIZE_MISMATCH && kw->pe) {
            const mt_fr_dump_t *pd = &j->dumps[j->of_rank[kw->on]];
            bool send = h->p2p_op.name[0] && strstr(h->p2p_op.name, "send ");
            mt_fr_entry_op(send ? ld : pd, send ? kw->e : kw->pe, &h->hung_culprit);
            mt_fr_entry_op(send ? pd : ld, send ? kw->pe : kw->e, &h->hung_first);
        }
        sort_culprits(h);
    }
    h->nchain = n;
    for (int i = 0; i < n && i < 16; i++) {
        int r = i == 15 ? chain[n - 1] : chain[i];
        h->chain[i] = r;
        if (w[r].e)
            mt_fr_entry_op(&j->dumps[j->of_rank[r]], w[r].e, &h->chain_op[i]);
    }
    free(indeg);
    free(seen);
    free(chain);
    return true;
}

/* The analysis; off NULL: fit the clocks here, else off[i] is dumps[i]'s. */
static mt_status_t analyse(const mt_fr_dump_t *dumps, size_t n, const int64_t *fitted, int fit_pairs,
                           mt_fr_hang_t *h, mt_error_t *err)
{
    *h = (mt_fr_hang_t){.last_arrival = -1, .dump_ns = MT_FR_NONE, .ref_rank = -1, .p2p_rank = -1, .p2p_peer = -1};
    job_t j = {.dumps = dumps, .n = n};
    for (size_t i = 0; i < n; i++) {
        if (dumps[i].rank + 1 > j.world)
            j.world = dumps[i].rank + 1;
        for (size_t g = 0; g < dumps[i].npgs; g++)
            for (int k = 0; k < dumps[i].pgs[g].nranks; k++)
                if (dumps[i].pgs[g].ranks[k] + 1 > j.world)
                    j.world = dumps[i].pgs[g].ranks[k] + 1;
    }
    h->world = j.world;
    j.of_rank = malloc((size_t)(j.world ? j.world : 1) * sizeof *j.of_rank);
    h->offset_ns = malloc((size_t)(j.world ? j.world : 1) * sizeof *h->offset_ns);
    h->wait_ns = malloc((size_t)(j.world ? j.world : 1) * sizeof *h->wait_ns);
    h->has_dump = calloc((size_t)(j.world ? j.world : 1), sizeof *h->has_dump);
    h->last_done = calloc((size_t)(j.world ? j.world : 1), sizeof *h->last_done);
    j.stateless = calloc(n ? n : 1, sizeof *j.stateless);
    for (size_t i = 0; j.stateless && i < n; i++) {
        j.stateless[i] = dumps[i].n > 0;
        for (size_t k = 0; k < dumps[i].n && j.stateless[i]; k++) {
            const mt_fr_entry_t *e = &dumps[i].entries[k];
            j.stateless[i] = e->state == MT_FR_SCHEDULED && e->started == MT_FR_NONE && e->completed == MT_FR_NONE;
        }
        h->stateless += j.stateless[i];
    }
    h->empty = true; /* trimmed dumps keep each one's last entry: still none only when none */
    for (size_t i = 0; i < n; i++)
        h->empty &= !dumps[i].n;
    if (!j.of_rank || !h->offset_ns || !h->wait_ns || !h->has_dump || !h->last_done || !j.stateless ||
        !index_dumps(&j) || !name_groups(&j)) {
        job_free(&j);
        mt_fr_hang_free(h);
        return mt_error_set(err, MT_ERR_NOMEM, "Flight Recorder analysis: out of memory");
    }
    h->guessed_pgs = (int)j.nguess;
    j.off = h->offset_ns;
    for (int r = 0; r < j.world; r++) {
        j.of_rank[r] = -1;
        h->offset_ns[r] = MT_FR_NONE;
        h->wait_ns[r] = -1;
    }
    for (size_t i = 0; i < n; i++) {
        j.of_rank[dumps[i].rank] = (int)i;
        h->has_dump[dumps[i].rank] = true;
        const mt_fr_entry_t *l = NULL;
        for (size_t k = 0; k < dumps[i].n; k++)
            if (dumps[i].entries[k].state == MT_FR_COMPLETED && (!l || dumps[i].entries[k].record_id > l->record_id))
                l = &dumps[i].entries[k];
        if (l)
            mt_fr_entry_op(&dumps[i], l, &h->last_done[dumps[i].rank]);
    }
    /* one job: a group's name means the same ranks in every dump */
    for (size_t i = 0; i < n; i++)
        for (size_t g = 0; g < dumps[i].npgs; g++) {
            const mt_fr_pg_t *a = &dumps[i].pgs[g], *b = pg_named(&j, a->name);
            if (!a->nranks || b == a)
                continue; /* no ranks listed: taken from the dumps */
            if (b->nranks != a->nranks ||
                (a->nranks && memcmp(a->ranks, b->ranks, (size_t)a->nranks * sizeof *a->ranks))) { /* none: NULL */
                job_free(&j);
                mt_fr_hang_free(h);
                mt_error_set(err, MT_ERR_FORMAT,
                             "Flight Recorder dumps of different jobs: process group %s has other ranks here", a->name);
                err->rank = dumps[i].rank;
                return MT_ERR_FORMAT;
            }
        }
    /* offsets: the lowest rank is the reference; the others joined through
     * any rank already placed */
    int ref = -1;
    for (int r = 0; r < j.world && ref < 0; r++)
        if (j.of_rank[r] >= 0)
            ref = r;
    if (ref >= 0)
        h->offset_ns[ref] = 0;
    h->ref_rank = ref;
    if (fitted) {
        for (size_t i = 0; i < n; i++)
            h->offset_ns[dumps[i].rank] = fitted[i];
        h->fit_pairs = fit_pairs;
    }
    for (bool more = !fitted; more;) {
        more = false;
        for (int r = 0; r < j.world; r++) {
            if (j.of_rank[r] < 0 || h->offset_ns[r] != MT_FR_NONE)
                continue;
            for (int q = 0; q < j.world; q++) {
                int64_t o;
                if (q == r || j.of_rank[q] < 0 || h->offset_ns[q] == MT_FR_NONE ||
                    !pair_offset(&j, &dumps[j.of_rank[r]], &dumps[j.of_rank[q]], &o, &h->fit_pairs))
                    continue;
                h->offset_ns[r] = h->offset_ns[q] + o;
                more = true;
                break;
            }
        }
    }
    /* the dump's time: the first watchdog to fire (it has every rank
     * dump), among the ranks whose clock is fitted */
    int64_t t_dump = INT64_MAX;
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < dumps[i].n && h->offset_ns[dumps[i].rank] != MT_FR_NONE; k++) {
            const mt_fr_entry_t *e = &dumps[i].entries[k];
            if (e->started != MT_FR_NONE && e->completed == MT_FR_NONE) {
                int64_t t = aligned(&j, dumps[i].rank, e->started) + (int64_t)e->timeout_ms * 1000000;
                if (t < t_dump)
                    t_dump = t;
            }
        }
    if (t_dump != INT64_MAX)
        h->dump_ns = t_dump;
    /* the hung group: the one whose first disagreement has most ranks stuck */
    const mt_fr_pg_t *best = NULL;
    int64_t best_s = 0;
    int best_stuck = -1;
    for (size_t g = 0; g < j.nnamed; g++) { /* by name: the first at equal stuck */
        const mt_fr_pg_t *pg = j.named[g];
        int stuck;
        int64_t s = first_disagreement(&j, pg, &stuck);
        if (s && stuck > best_stuck) {
            best = pg;
            best_s = s;
            best_stuck = stuck;
        }
    }
    wait_t *w = malloc((size_t)(j.world ? j.world : 1) * sizeof *w);
    if (!w || !index_open(&j)) {
        free(w);
        job_free(&j);
        mt_fr_hang_free(h);
        return mt_error_set(err, MT_ERR_NOMEM, "Flight Recorder analysis: out of memory");
    }
    /* the verdict from the waits when a send or recv is among them, else
     * from the group with most ranks stuck */
    bool by_waits = p2p_verdict(&j, w, h);
    const mt_fr_pg_t *hung = NULL;
    int64_t hung_s = 0;
    if (by_waits && h->p2p) {
        for (int r = 0; r < j.world; r++) {
            const mt_fr_entry_t *e = w[r].e;
            if (e && e->started != MT_FR_NONE && t_dump != INT64_MAX && h->offset_ns[r] != MT_FR_NONE)
                h->wait_ns[r] = t_dump - aligned(&j, r, e->started);
        }
    } else if (by_waits) { /* the chain's last link is a collective */
        hung = pg_named(&j, h->pg);
        hung_s = h->seq;
    } else if (best) {
        verdict(&j, best, best_s, h);
        hung = best;
        hung_s = best_s;
    }
    for (int m = 0; hung && m < hung->nranks; m++) {
        int r = hung->ranks[m];
        const mt_fr_entry_t *e = j.of_rank[r] >= 0 ? find(&j, &dumps[j.of_rank[r]], hung->name, hung_s) : NULL;
        if (e && e->started != MT_FR_NONE && e->completed == MT_FR_NONE && t_dump != INT64_MAX &&
            h->offset_ns[r] != MT_FR_NONE)
            h->wait_ns[r] = t_dump - aligned(&j, r, e->started);
    }
    free(w);
    bool nomem = j.nomem;
    job_free(&j);
    if (nomem) {
        mt_fr_hang_free(h);
        return mt_error_set(err, MT_ERR_NOMEM, "Flight Recorder analysis: out of memory");
    }
    return MT_OK;
}

mt_status_t mt_fr_hang_analyse(const mt_fr_dump_t *dumps, size_t n, mt_fr_hang_t *h, mt_error_t *err)
{
    return analyse(dumps, n, NULL, 0, h, err);
}

mt_status_t mt_fr_hang_analyse_fitted(const mt_fr_dump_t *dumps, size_t n, const int64_t *off, int fit_pairs,
                                      mt_fr_hang_t *h, mt_error_t *err)
{
    return analyse(dumps, n, off, fit_pairs, h, err);
}

struct mt_fr_ref {
    job_t j;
};

mt_fr_ref_t *mt_fr_ref_new(const mt_fr_dump_t *ref)
{
    mt_fr_ref_t *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    f->j = (job_t){.dumps = ref, .n = 1};
    if (!index_dumps(&f->j)) {
        mt_fr_ref_free(f);
        return NULL;
    }
    return f;
}

void mt_fr_ref_free(mt_fr_ref_t *f)
{
    if (!f)
        return;
    job_free(&f->j);
    free(f);
}

bool mt_fr_ref_fit(const mt_fr_ref_t *f, const mt_fr_dump_t *d, int64_t *off, int *pairs)
{
    return pair_offset(&f->j, d, &f->j.dumps[0], off, pairs);
}

void mt_fr_hang_free(mt_fr_hang_t *h)
{
    if (!h)
        return;
    free(h->offset_ns);
    free(h->wait_ns);
    free(h->has_dump);
    free(h->last_done);
    h->offset_ns = h->wait_ns = NULL;
    h->has_dump = NULL;
    h->last_done = NULL;
}

const char *mt_fr_kind_name(mt_fr_kind_t k)
{
    static const char *const names[] = {"no_hang", "never_enqueued", "order_mismatch", "size_mismatch",
                                        "desync", "no_dump", "ambiguous"};
    return (unsigned)k < sizeof names / sizeof *names ? names[k] : "?";
}
