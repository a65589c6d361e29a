/* Flight Recorder dumps shared among processes (mergetrace/fr_share.h):
 * the list of who reads which dump, a process's share read, the bytes of
 * the analysis at scale on both sides, and process 0's verdict with
 * --force's leaving out. mpi/fr_run.c moves the bytes and says the
 * messages. */
#define _POSIX_C_SOURCE 200809L /* strndup */
#include "mergetrace/fr_share.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sort.h"
#include "mergetrace/input.h"
#include "mergetrace/strtab.h"

mt_status_t mt_fr_job_alloc(mt_fr_job_t *fr, size_t n)
{
    fr->dumps = calloc(n ? n : 1, sizeof *fr->dumps);
    fr->paths = calloc(n ? n : 1, sizeof *fr->paths);
    fr->bytes = calloc(n ? n : 1, sizeof *fr->bytes);
    fr->counts = calloc(n ? n : 1, sizeof *fr->counts);
    return fr->dumps && fr->paths && fr->bytes && fr->counts ? MT_OK : MT_ERR_NOMEM;
}

void mt_fr_job_free(mt_fr_job_t *fr)
{
    for (size_t i = 0; i < fr->n; i++)
        mt_fr_dump_free(&fr->dumps[i]);
    for (size_t i = 0; i < fr->ntabs; i++) /* after the dumps that share their ranks */
        mt_fr_dump_free(&fr->tabs[i]);
    free(fr->tabs);
    free(fr->dumps);
    free(fr->paths);
    free(fr->bytes);
    free(fr->counts);
    mt_fr_hang_free(&fr->hang);
    mt_buf_free(&fr->plan);
    free(fr->tcolls);
    memset(fr, 0, sizeof *fr);
}

long mt_fr_job_find(const mt_fr_job_t *fr, int32_t rank)
{
    size_t lo = 0, hi = fr->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (fr->dumps[mid].rank < rank)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < fr->n && fr->dumps[lo].rank == rank ? (long)lo : -1;
}

mt_status_t mt_fr_share_put(mt_buf_t *out, int32_t rank, int32_t owner, const char *path)
{
    uint32_t len = (uint32_t)strlen(path);
    int32_t head[2] = {rank, owner};
    if (mt_buf_append(out, head, sizeof head) || mt_buf_append(out, &len, sizeof len) ||
        mt_buf_append(out, path, len))
        return MT_ERR_NOMEM;
    return MT_OK;
}

bool mt_fr_share_next(const void *list, size_t len, size_t *pos, mt_fr_share_rec_t *r)
{
    if (*pos > len || len - *pos < 12)
        return false;
    const uint8_t *at = (const uint8_t *)list + *pos;
    memcpy(&r->rank, at, sizeof r->rank);
    memcpy(&r->owner, at + 4, sizeof r->owner);
    memcpy(&r->path_len, at + 8, sizeof r->path_len);
    r->path = (const char *)at + 12;
    *pos += 12 + (size_t)r->path_len;
    return true;
}

int mt_fr_share_owner(const void *list, size_t len, int32_t rank)
{
    int owner = -1;
    mt_fr_share_rec_t r;
    for (size_t pos = 0; mt_fr_share_next(list, len, &pos, &r);)
        if (r.rank == rank)
            owner = r.owner;
    return owner;
}

/* The dump at path, of rank, read into *d (either encoding). */
static mt_status_t read_one(const char *path, int32_t rank, mt_fr_dump_t *d, mt_error_t *err)
{
    char *data = NULL;
    size_t dlen = 0;
    bool trunc = false;
    mt_status_t s = mt_input_read_file(path, &data, &dlen, &trunc, err);
    if (s == MT_OK)
        s = mt_fr_dump_read((const uint8_t *)data, dlen, path, rank, d, err);
    free(data);
    return s;
}

mt_status_t mt_fr_share_read_rank(const void *list, size_t len, int32_t rank, mt_fr_dump_t *d, bool *found,
                                  mt_error_t *err)
{
    size_t pos = 0;
    mt_fr_share_rec_t rec;
    *found = false;
    while (mt_fr_share_next(list, len, &pos, &rec)) {
        if (rec.rank != rank)
            continue;
        char *path = strndup(rec.path, rec.path_len);
        mt_status_t s = path ? read_one(path, rank, d, err) : MT_ERR_NOMEM;
        free(path);
        *found = s == MT_OK;
        return s;
    }
    return MT_OK;
}

void mt_fr_share_read(const void *list, size_t len, int me, mt_fr_local_t **mine, size_t *n_mine, long *bad_index,
                      char *msg, size_t cap, mt_status_t *st)
{
    size_t pos = 0, cap_mine = 0;
    mt_fr_share_rec_t rec;
    *mine = NULL;
    *n_mine = 0;
    for (long i = 0; mt_fr_share_next(list, len, &pos, &rec); i++) {
        if (rec.owner != me || *bad_index >= 0)
            continue;
        char *path = strndup(rec.path, rec.path_len);
        mt_error_t err;
        mt_error_clear(&err);
        mt_fr_dump_t d;
        mt_status_t s = !path ? MT_ERR_NOMEM : read_one(path, rec.rank, &d, &err);
        if (s == MT_OK && *n_mine == cap_mine) {
            cap_mine = cap_mine ? 2 * cap_mine : 16;
            mt_fr_local_t *m = realloc(*mine, cap_mine * sizeof *m);
            if (!m) {
                mt_fr_dump_free(&d);
                s = MT_ERR_NOMEM;
            } else
                *mine = m;
        }
        if (s == MT_OK) {
            (*mine)[(*n_mine)++] = (mt_fr_local_t){.d = d, .path = path};
            path = NULL;
        }
        if (s != MT_OK) {
            *bad_index = i;
            *st = s;
            if (s == MT_ERR_NOMEM)
                snprintf(msg, cap, "out of memory reading %s", path ? path : "a Flight Recorder dump");
            else {
                if (err.rank < 0)
                    err.rank = rec.rank;
                mt_error_format(&err, msg, cap);
            }
        }
        free(path);
    }
}

static int local_by_rank(const void *a, const void *b)
{
    return ((const mt_fr_local_t *)a)->d.rank - ((const mt_fr_local_t *)b)->d.rank;
}

void mt_fr_locals_sort(mt_fr_local_t *l, size_t n)
{
    if (n) /* a process without a dump: l may be NULL, which qsort may not take */
        qsort(l, n, sizeof *l, local_by_rank);
}

void mt_fr_locals_place(mt_fr_local_t *l, size_t n, const int64_t *off, int64_t world, int64_t dump_ns)
{
    mt_fr_locals_sort(l, n);
    for (size_t i = 0; i < n; i++) {
        int r = l[i].d.rank;
        l[i].off = r < world && off[r] != MT_FR_NONE ? off[r] : 0;
        l[i].dump_ns = dump_ns;
    }
}

mt_status_t mt_fr_locals_trace(const mt_fr_local_t *l, size_t n, bool first, mt_write_fn write, void *ctx,
                               uint64_t *events)
{
    mt_status_t st = MT_OK;
    *events = 0;
    for (size_t i = 0; i < n && st == MT_OK; i++) {
        uint64_t k = 0;
        st = mt_fr_trace_rank(&l[i].d, first && i == 0, l[i].off, l[i].dump_ns, write, ctx, &k);
        *events += k;
    }
    return st;
}

void mt_fr_locals_free(mt_fr_local_t *l, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        mt_fr_dump_free(&l[i].d);
        free(l[i].path);
    }
    free(l);
}

/* A dump's head as sent: then its last-done table (ndone) and the index
 * of each of its groups (npgs, uint32) in its process's table. */
typedef struct head_rec {
    int32_t rank, pad;
    char version[16];
    uint64_t count, ndone, npgs;
} head_rec_t;

mt_status_t mt_fr_heads_pack(const mt_fr_local_t *mine, size_t n_mine, mt_buf_t *out)
{
    /* this process's distinct groups once (a table: every dump holds every
     * group of the job, the default one with all its ranks: 16 KB a dump
     * at 4,096 ranks), then each dump's head with the indexes of its
     * groups in the table */
    mt_buf_t recs = {0}, key = {0};
    mt_strtab_t *keys = mt_strtab_create(); /* a group's name, desc and ranks -> 1 + its index in tab */
    mt_fr_dump_t tab = {0};
    size_t tcap = 0;
    bool oom = !keys;
    for (size_t i = 0; i < n_mine && !oom; i++) {
        const mt_fr_dump_t *d = &mine[i].d;
        mt_fr_pg_seq_t *done = NULL;
        size_t nd = 0;
        oom = mt_fr_dump_last_done(d, &done, &nd) != MT_OK;
        head_rec_t r = {.rank = d->rank, .count = d->n, .ndone = nd, .npgs = d->npgs};
        memcpy(r.version, d->version, sizeof r.version);
        oom = oom || mt_buf_append(&recs, &r, sizeof r) != MT_OK ||
              (nd && mt_buf_append(&recs, done, nd * sizeof *done) != MT_OK);
        free(done);
        for (size_t g = 0; !oom && g < d->npgs; g++) {
            const mt_fr_pg_t *pg = &d->pgs[g];
            uint32_t id;
            key.len = 0;
            oom = mt_buf_append(&key, pg->name, strnlen(pg->name, sizeof pg->name - 1) + 1) != MT_OK ||
                  mt_buf_append(&key, pg->desc, strnlen(pg->desc, sizeof pg->desc - 1) + 1) != MT_OK ||
                  (pg->nranks && mt_buf_append(&key, pg->ranks, (size_t)pg->nranks * sizeof *pg->ranks) != MT_OK) ||
                  mt_strtab_intern(keys, key.data, key.len, &id) != MT_OK;
            if (!oom && id - 1 == tab.npgs) { /* a new group: into the table */
                mt_fr_pg_t c = *pg;
                c.ranks = malloc((size_t)(pg->nranks ? pg->nranks : 1) * sizeof *c.ranks);
                oom = !c.ranks || MT_GROW(tab.pgs, tcap, tab.npgs + 1, 16);
                if (oom)
                    free(c.ranks);
                else {
                    if (pg->nranks) /* none: ranks may be NULL (a group the entries named) */
                        memcpy(c.ranks, pg->ranks, (size_t)pg->nranks * sizeof *c.ranks);
                    tab.pgs[tab.npgs++] = c;
                }
            }
            uint32_t ix = id - 1;
            oom = oom || mt_buf_append(&recs, &ix, sizeof ix) != MT_OK;
        }
    }
    uint64_t nmine = n_mine;
    oom = oom || mt_buf_append(out, &nmine, sizeof nmine) != MT_OK || mt_fr_dump_pack_append(&tab, out) != MT_OK ||
          (recs.len && mt_buf_append(out, recs.data, recs.len) != MT_OK);
    mt_buf_free(&recs);
    mt_buf_free(&key);
    mt_strtab_free(keys);
    mt_fr_dump_free(&tab);
    return oom ? MT_ERR_NOMEM : MT_OK;
}

/* A dump's head on process 0: its groups (no entries), its entry count,
 * its last-done table. */
typedef struct head {
    mt_fr_dump_t d;
    uint64_t count;
    mt_fr_pg_seq_t *done;
    size_t ndone;
} head_t;

static int head_by_rank(const void *a, const void *b)
{
    return ((const head_t *)a)->d.rank - ((const head_t *)b)->d.rank;
}

/* The most processes' parts len bytes of heads can hold (each at least
 * its count and a packed table's header): a bound for fr->tabs. */
static size_t max_parts(size_t len)
{
    return len / 16 + 1;
}

bool mt_fr_heads_unpack(const uint8_t *all, size_t len, size_t n, mt_fr_job_t *fr, mt_fr_pg_seq_t **keep,
                        size_t *nkeep)
{
    size_t k = 0, at = 0;
    head_t *h = calloc(n ? n : 1, sizeof *h);
    bool ok = h && mt_fr_job_alloc(fr, n) == MT_OK && (fr->tabs = calloc(max_parts(len), sizeof *fr->tabs));
    size_t tcap = ok ? max_parts(len) : 0;
    /* each process's part: its dumps' count, its groups' table, then per
     * dump its head (mt_fr_heads_pack says the layout) */
    while (ok && at < len && k < n) {
        uint64_t nd;
        if (len - at < sizeof nd || fr->ntabs == tcap) {
            ok = false;
            break;
        }
        memcpy(&nd, all + at, sizeof nd);
        at += sizeof nd;
        if (mt_fr_dump_unpack(all, len, &at, &fr->tabs[fr->ntabs]) != MT_OK) {
            ok = false;
            break;
        }
        const mt_fr_dump_t *tab = &fr->tabs[fr->ntabs++];
        for (uint64_t q = 0; ok && q < nd; q++) {
            head_rec_t r;
            if (k == n || len - at < sizeof r) {
                ok = false;
                break;
            }
            memcpy(&r, all + at, sizeof r);
            at += sizeof r;
            mt_fr_dump_t *d = &h[k].d;
            h[k].count = r.count;
            k++;
            *d = (mt_fr_dump_t){.rank = r.rank, .pgs_shared = true};
            memcpy(d->version, r.version, sizeof d->version);
            d->version[sizeof d->version - 1] = 0;
            if (r.ndone > (len - at) / sizeof(mt_fr_pg_seq_t) ||
                !(h[k - 1].done = malloc((r.ndone ? r.ndone : 1) * sizeof(mt_fr_pg_seq_t)))) {
                ok = false;
                break;
            }
            memcpy(h[k - 1].done, all + at, r.ndone * sizeof(mt_fr_pg_seq_t));
            h[k - 1].ndone = r.ndone;
            at += r.ndone * sizeof(mt_fr_pg_seq_t);
            if (r.npgs > (len - at) / sizeof(uint32_t) || !(d->pgs = malloc((r.npgs ? r.npgs : 1) * sizeof *d->pgs))) {
                ok = false;
                break;
            }
            for (uint64_t g = 0; g < r.npgs; g++) {
                uint32_t id;
                memcpy(&id, all + at, sizeof id);
                at += sizeof id;
                if (id >= tab->npgs) {
                    ok = false;
                    break;
                }
                d->pgs[d->npgs++] = tab->pgs[id]; /* the ranks shared with the table */
            }
        }
    }
    const mt_fr_pg_seq_t **done = calloc(k ? k : 1, sizeof *done);
    size_t *ndone = calloc(k ? k : 1, sizeof *ndone);
    ok = ok && done && ndone;
    if (ok) {
        qsort(h, k, sizeof *h, head_by_rank);
        for (size_t i = 0; i < k; i++) {
            fr->dumps[i] = h[i].d;
            h[i].d = (mt_fr_dump_t){0};
            fr->counts[i] = h[i].count;
            done[i] = h[i].done;
            ndone[i] = h[i].ndone;
        }
        fr->n = k;
        ok = mt_fr_keep_plan(fr->dumps, fr->n, done, ndone, keep, nkeep) == MT_OK;
    }
    for (size_t i = 0; h && i < k; i++) {
        mt_fr_dump_free(&h[i].d);
        free(h[i].done);
    }
    free(h);
    free(done);
    free(ndone);
    return ok;
}

int mt_fr_fit_trim_pack(const mt_fr_local_t *mine, size_t n_mine, const uint8_t *ref, size_t rlen, int32_t ref_rank,
                        const mt_fr_pg_seq_t *keep, size_t nkeep, mt_buf_t *out, int *pairs)
{
    mt_fr_dump_t rd = {0};
    size_t at = 0;
    mt_fr_ref_t *fit = NULL;
    int flag = 0;
    if (mt_fr_dump_unpack(ref, rlen, &at, &rd) != MT_OK || !(fit = mt_fr_ref_new(&rd)))
        flag = 2;
    for (size_t i = 0; i < n_mine && !flag; i++) {
        int64_t off = 0;
        if (mine[i].d.rank != ref_rank && !mt_fr_ref_fit(fit, &mine[i].d, &off, pairs)) {
            flag = 1;
            break;
        }
        mt_fr_dump_t d;
        if (mt_fr_dump_trim(&mine[i].d, keep, nkeep, &d) != MT_OK) {
            flag = 2;
            break;
        }
        if (mt_fr_dump_pack_append(&d, out) != MT_OK || mt_buf_append(out, &off, sizeof off) != MT_OK)
            flag = 2;
        mt_fr_dump_free(&d);
    }
    mt_fr_ref_free(fit);
    mt_fr_dump_free(&rd);
    return flag;
}

static int by_rank(const void *a, const void *b)
{
    return ((const mt_fr_dump_t *)a)->rank - ((const mt_fr_dump_t *)b)->rank;
}

mt_status_t mt_fr_job_take_trimmed(mt_fr_job_t *fr, const uint8_t *all, size_t len, int fit_pairs, mt_error_t *err)
{
    int64_t *off = calloc(fr->n ? fr->n : 1, sizeof *off);
    bool ok = off != NULL;
    for (size_t at = 0; ok && at < len;) {
        mt_fr_dump_t d;
        int64_t o;
        if (mt_fr_dump_unpack(all, len, &at, &d) != MT_OK) {
            ok = false;
            break;
        }
        if (len - at < sizeof o) {
            mt_fr_dump_free(&d);
            ok = false;
            break;
        }
        memcpy(&o, all + at, sizeof o);
        at += sizeof o;
        mt_fr_dump_t *x = bsearch(&d, fr->dumps, fr->n, sizeof *fr->dumps, by_rank);
        if (!x) {
            mt_fr_dump_free(&d);
            ok = false;
            break;
        }
        free(x->entries);
        mt_strtab_free(x->strs);
        x->entries = d.entries;
        x->n = d.n;
        x->strs = d.strs;
        d.entries = NULL;
        d.strs = NULL;
        off[x - fr->dumps] = o;
        mt_fr_dump_free(&d);
    }
    mt_status_t st = ok ? mt_fr_hang_analyse_fitted(fr->dumps, fr->n, off, fit_pairs, &fr->hang, err) : MT_ERR_NOMEM;
    free(off);
    return st == MT_OK || st == MT_ERR_FORMAT ? st : MT_ERR_NOMEM;
}

mt_status_t mt_fr_job_unpack(mt_fr_job_t *fr, size_t n, const uint8_t *all, size_t len)
{
    if (mt_fr_job_alloc(fr, n) != MT_OK)
        return MT_ERR_NOMEM;
    size_t at = 0;
    while (at < len && fr->n < n) {
        mt_status_t st = mt_fr_dump_unpack(all, len, &at, &fr->dumps[fr->n]);
        if (st != MT_OK)
            return st;
        fr->n++;
    }
    qsort(fr->dumps, fr->n, sizeof *fr->dumps, by_rank);
    for (size_t i = 0; i < fr->n; i++)
        fr->counts[i] = fr->dumps[i].n;
    return MT_OK;
}

mt_status_t mt_fr_job_analyse(mt_fr_job_t *fr, bool force, mt_fr_left_out_fn left_out, const void *ctx, mt_error_t *err,
                              const char **bad_path)
{
    for (;;) {
        mt_error_clear(err);
        mt_status_t st = mt_fr_hang_analyse(fr->dumps, fr->n, &fr->hang, err);
        if (st == MT_OK)
            return MT_OK;
        if (st != MT_ERR_FORMAT)
            return MT_ERR_NOMEM;
        size_t bad = 0;
        while (bad < fr->n && fr->dumps[bad].rank != err->rank)
            bad++;
        const char *path = bad < fr->n ? fr->paths[bad] : "?";
        if (!force || fr->n < 2) {
            *bad_path = path;
            return MT_ERR_FORMAT;
        }
        if (left_out)
            left_out(ctx, path, err->rank, err->msg);
        mt_fr_dump_free(&fr->dumps[bad]);
        memmove(&fr->dumps[bad], &fr->dumps[bad + 1], (fr->n - bad - 1) * sizeof *fr->dumps);
        memmove(&fr->paths[bad], &fr->paths[bad + 1], (fr->n - bad - 1) * sizeof *fr->paths);
        memmove(&fr->bytes[bad], &fr->bytes[bad + 1], (fr->n - bad - 1) * sizeof *fr->bytes);
        memmove(&fr->counts[bad], &fr->counts[bad + 1], (fr->n - bad - 1) * sizeof *fr->counts);
        fr->n--;
    }
}

mt_status_t mt_fr_job_from_nccl(mt_fr_job_t *fr, const mt_nccl_file_t *const *nf, const int32_t *ranks, size_t n,
                                mt_error_t *err)
{
    mt_status_t st = mt_fr_from_nccl(nf, ranks, n, fr->dumps, err);
    if (st == MT_OK) {
        fr->n = n;
        for (size_t i = 0; i < n; i++)
            fr->counts[i] = fr->dumps[i].n;
        st = mt_fr_hang_analyse(fr->dumps, fr->n, &fr->hang, err);
    }
    if (st == MT_OK) {
        fr->any = fr->from_nccl = true;
        fr->hung = fr->hang.kind != MT_FR_NO_HANG;
    }
    return st;
}

bool mt_fr_ranks_have(const int32_t *ranks, size_t n, int32_t rank)
{
    size_t i = mt_lower_bound_i32(ranks, n, sizeof *ranks, rank);
    return i < n && ranks[i] == rank;
}
