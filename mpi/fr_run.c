/* Flight Recorder dumps in the program: ranked and shared on process 0,
 * read by their processes, gathered packed on process 0 for the hang
 * analysis; alone, the whole run (outputs and the verdict); beside traces,
 * a verdict the job's outputs carry (outputs.c). */
#define _POSIX_C_SOURCE 200809L
#include "fr_run.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm_mpi.h"
#include "mergetrace/outdir.h"
#include "merged_io.h"
#include "outputs.h"
#include "procs.h"
#include "say.h"

static mt_status_t file_write(void *ctx, const void *data, size_t len)
{
    return fwrite(data, 1, len, (FILE *)ctx) == len ? MT_OK : MT_ERR_IO;
}

static mt_status_t out_write(void *ctx, const void *data, size_t len)
{
    (void)ctx;
    return fwrite(data, 1, len, stdout) == len ? MT_OK : MT_ERR_IO;
}

/* Each dump's owner: the processes take consecutive ranks, in blocks of
 * about equal bytes. The merged trace holds the dumps in rank order, so
 * each process's dumps are then one piece of it, written in one go (its
 * writer's rounds, one rank per process each, with a collective between
 * them, were most of the write at -n 2 with thousands of dumps). */
static void assign_blocks(mt_discover_file_t *f, const int32_t *rank, size_t n, int n_procs)
{
    size_t *order = malloc((n ? n : 1) * sizeof *order);
    uint64_t total = 0, before = 0;
    for (size_t i = 0; i < n; i++)
        total += f[i].bytes + 1;
    if (!order) { /* blocks of equal counts in the list's order */
        for (size_t i = 0; i < n; i++)
            f[i].owner = (int)(i * (size_t)n_procs / n);
        return;
    }
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    /* by rank (distinct): a shell sort, no comparator context needed */
    for (size_t gap = n / 2; gap > 0; gap /= 2)
        for (size_t i = gap; i < n; i++)
            for (size_t j = i; j >= gap && rank[order[j - gap]] > rank[order[j]]; j -= gap) {
                size_t t = order[j];
                order[j] = order[j - gap];
                order[j - gap] = t;
            }
    for (size_t k = 0; k < n; k++) {
        mt_discover_file_t *x = &f[order[k]];
        uint64_t mid = before + (x->bytes + 1) / 2;
        int p = (int)(mid * (uint64_t)n_procs / total);
        x->owner = p < n_procs ? p : n_procs - 1;
        before += x->bytes + 1;
    }
    free(order);
}

/* Process 0: each dump's rank (map, else file name) and owner, checked;
 * the list as bytes for the broadcast: per dump int32 rank, int32 owner,
 * uint32 path length, the path. 0, or an exit code after saying why. */
static int plan(const options_t *o, mt_discover_list_t *files, const mt_rankmap_t *map, int n_procs, mt_buf_t *out)
{
    size_t n = files->n_fr;
    int32_t *rank = malloc((n ? n : 1) * sizeof *rank);
    if (!rank) {
        say("mergetrace: out of memory\n");
        return MT_EXIT_ERROR;
    }
    int code = 0;
    for (size_t i = 0; i < n && !code; i++) {
        const char *p = files->fr[i].path;
        int64_t r = map ? mt_rankmap_lookup(map, p) : -1;
        if (r < 0)
            r = mt_fr_rank_from_name(p);
        if (r < 0 || r >= MT_FR_MAX_RANKS) {
            say("mergetrace: %s%s: a Flight Recorder dump with no rank in its file name (PyTorch names them "
                "<prefix><rank>, e.g. comm_lib_trace_rank_3): give --rank-map FILE\n",
                o->job_tag, p);
            code = MT_EXIT_BAD_INPUT;
            break;
        }
        rank[i] = (int32_t)r;
        for (size_t k = 0; k < i; k++)
            if (rank[k] == rank[i]) {
                say("mergetrace: %s%s and %s: two Flight Recorder dumps of rank %d\n", o->job_tag,
                        files->fr[k].path, p, rank[i]);
                code = MT_EXIT_BAD_INPUT;
            }
    }
    if (!code)
        assign_blocks(files->fr, rank, n, n_procs);
    for (size_t i = 0; i < n && !code; i++) {
        uint32_t len = (uint32_t)strlen(files->fr[i].path);
        int32_t head[2] = {rank[i], files->fr[i].owner};
        if (mt_buf_append(out, head, sizeof head) || mt_buf_append(out, &len, sizeof len) ||
            mt_buf_append(out, files->fr[i].path, len)) {
            say("mergetrace: out of memory\n");
            code = MT_EXIT_ERROR;
        }
    }
    free(rank);
    return code;
}

/* A dump this process read, kept for the summaries and the merged trace. */
typedef struct local_dump {
    mt_fr_dump_t d;
    char *path;
    int64_t off;     /* its offset to the reference clock (the merged trace) */
    int64_t dump_ns; /* the dump's time (h->dump_ns) */
} local_dump_t;

static void locals_free(local_dump_t *l, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        mt_fr_dump_free(&l[i].d);
        free(l[i].path);
    }
    free(l);
}

/* This process's dumps read into *mine (*n_mine of them); on the first
 * that fails, *bad_index and msg/st say which and why (every process goes
 * on to the agreement). */
static void read_share(const uint8_t *list, size_t len, int me, local_dump_t **mine, size_t *n_mine,
                       long *bad_index, char *msg, size_t cap, mt_status_t *st)
{
    size_t pos = 0, cap_mine = 0;
    *mine = NULL;
    *n_mine = 0;
    for (long i = 0; pos + 12 <= len; i++) {
        int32_t head[2];
        uint32_t pl;
        memcpy(head, list + pos, sizeof head);
        memcpy(&pl, list + pos + 8, sizeof pl);
        const char *at = (const char *)list + pos + 12;
        pos += 12 + pl;
        if (head[1] != me || *bad_index >= 0)
            continue;
        char *path = strndup(at, pl);
        char *data = NULL;
        size_t dlen = 0;
        bool trunc = false;
        mt_error_t err;
        mt_error_clear(&err);
        mt_fr_dump_t d;
        mt_status_t s = !path ? MT_ERR_NOMEM : mt_input_read_file(path, &data, &dlen, &trunc, &err);
        if (s == MT_OK)
            s = mt_fr_dump_read((const uint8_t *)data, dlen, path, head[0], &d, &err);
        free(data);
        if (s == MT_OK && *n_mine == cap_mine) {
            cap_mine = cap_mine ? 2 * cap_mine : 16;
            local_dump_t *m = realloc(*mine, cap_mine * sizeof *m);
            if (!m) {
                mt_fr_dump_free(&d);
                s = MT_ERR_NOMEM;
            } else
                *mine = m;
        }
        if (s == MT_OK) {
            (*mine)[(*n_mine)++] = (local_dump_t){.d = d, .path = path};
            path = NULL;
        }
        if (s != MT_OK) {
            *bad_index = i;
            *st = s;
            if (s == MT_ERR_NOMEM)
                snprintf(msg, cap, "out of memory reading %s", path ? path : "a Flight Recorder dump");
            else {
                if (err.rank < 0)
                    err.rank = head[0];
                mt_error_format(&err, msg, cap);
            }
        }
        free(path);
    }
}

static int by_rank(const void *a, const void *b)
{
    return ((const mt_fr_dump_t *)a)->rank - ((const mt_fr_dump_t *)b)->rank;
}

/* Process 0: the path and size of each dump's file (fr->dumps sorted by
 * rank). The plan gave every file a distinct rank, and the file's rank is
 * the one it was read with. */
static void attach_paths(const mt_discover_list_t *files, const mt_buf_t *list, fr_job_t *fr)
{
    size_t pos = 0;
    for (size_t k = 0; k < files->n_fr && pos + 12 <= list->len; k++) {
        int32_t r;
        uint32_t pl;
        memcpy(&r, list->data + pos, sizeof r);
        memcpy(&pl, list->data + pos + 8, sizeof pl);
        pos += 12 + pl;
        size_t lo = 0, hi = fr->n;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (fr->dumps[mid].rank < r)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < fr->n && fr->dumps[lo].rank == r) {
            fr->paths[lo] = files->fr[k].path;
            fr->bytes[lo] = files->fr[k].bytes;
        }
    }
}

/* Process 0: fr's arrays for n dumps. false (said) when out of memory. */
static bool fr_alloc(fr_job_t *fr, size_t n)
{
    fr->dumps = calloc(n ? n : 1, sizeof *fr->dumps);
    fr->paths = calloc(n ? n : 1, sizeof *fr->paths);
    fr->bytes = calloc(n ? n : 1, sizeof *fr->bytes);
    fr->counts = calloc(n ? n : 1, sizeof *fr->counts);
    if (!fr->dumps || !fr->paths || !fr->bytes || !fr->counts) {
        say("mergetrace: out of memory\n");
        return false;
    }
    return true;
}

/* Process 0: the gathered bytes unpacked into fr->dumps (by rank) with
 * their paths, then analysed; with --force a dump of another job is left
 * out (warned) and the analysis run again. 0 or an exit code (said). */
static int analyse(const options_t *o, const mt_discover_list_t *files, const mt_buf_t *list, const uint8_t *all, size_t len,
                   fr_job_t *fr)
{
    size_t n = files->n_fr;
    if (!fr_alloc(fr, n))
        return MT_EXIT_ERROR;
    size_t at = 0;
    while (at < len && fr->n < n) {
        mt_status_t st = mt_fr_dump_unpack(all, len, &at, &fr->dumps[fr->n]);
        if (st != MT_OK) {
            say("mergetrace: %s\n", st == MT_ERR_NOMEM ? "out of memory" : "internal error: a packed dump");
            return MT_EXIT_ERROR;
        }
        fr->n++;
    }
    qsort(fr->dumps, fr->n, sizeof *fr->dumps, by_rank);
    for (size_t i = 0; i < fr->n; i++)
        fr->counts[i] = fr->dumps[i].n;
    attach_paths(files, list, fr);
    for (;;) {
        mt_error_t err;
        mt_error_clear(&err);
        mt_status_t st = mt_fr_hang_analyse(fr->dumps, fr->n, &fr->hang, &err);
        if (st == MT_OK)
            return 0;
        if (st != MT_ERR_FORMAT) {
            say("mergetrace: out of memory\n");
            return MT_EXIT_ERROR;
        }
        size_t bad = 0;
        while (bad < fr->n && fr->dumps[bad].rank != err.rank)
            bad++;
        const char *path = bad < fr->n ? fr->paths[bad] : "?";
        if (!o->force || fr->n < 2) {
            say("mergetrace: %s%s: rank %d: %s (--force leaves such a dump out)\n", o->job_tag, path,
                    err.rank, err.msg);
            return MT_EXIT_BAD_INPUT;
        }
        if (!o->quiet)
            say("mergetrace: warning: %s: rank %d: %s: left out (--force)\n", path, err.rank, err.msg);
        mt_fr_dump_free(&fr->dumps[bad]);
        memmove(&fr->dumps[bad], &fr->dumps[bad + 1], (fr->n - bad - 1) * sizeof *fr->dumps);
        memmove(&fr->paths[bad], &fr->paths[bad + 1], (fr->n - bad - 1) * sizeof *fr->paths);
        memmove(&fr->bytes[bad], &fr->bytes[bad + 1], (fr->n - bad - 1) * sizeof *fr->bytes);
        memmove(&fr->counts[bad], &fr->counts[bad + 1], (fr->n - bad - 1) * sizeof *fr->counts);
        fr->n--;
    }
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

/* A dump's head as sent: then its last-done table (ndone) and the index
 * of each of its groups (npgs, uint32) in its process's table. */
typedef struct head_rec {
    int32_t rank, pad;
    char version[16];
    uint64_t count, ndone, npgs;
} head_rec_t;

/* The most processes' parts len bytes of heads can hold (each at least
 * its count and a packed table's header): a bound for fr->tabs. */
static size_t max_parts(size_t len)
{
    return len / 16 + 1;
}

/* Process 0: the gathered heads into fr (dumps without entries, counts)
 * and the keep plan into *keep. false when out of memory or the bytes are
 * not whole heads. */
static bool heads_plan(const mt_discover_list_t *files, const mt_buf_t *list, const uint8_t *all, size_t len, fr_job_t *fr,
                       mt_fr_pg_seq_t **keep, size_t *nkeep)
{
    size_t n = files->n_fr, k = 0, at = 0;
    head_t *h = calloc(n ? n : 1, sizeof *h);
    bool ok = h && fr_alloc(fr, n) && (fr->tabs = calloc(max_parts(len), sizeof *fr->tabs));
    size_t tcap = ok ? max_parts(len) : 0;
    /* each process's part: its dumps' count, its groups' table, then per
     * dump its head (summarise says the layout) */
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
        attach_paths(files, list, fr);
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

/* Collective: the analysis from what it reads of the dumps
 * (mergetrace/fr_hang.h, "The analysis at scale"). 0 with fr filled on
 * process 0; -1 when the whole dumps must go to process 0 instead (a dump
 * without a completed collective in common with the reference, or dumps
 * of different jobs); or an exit code (said). The same on every
 * process. */
static int summarise(MPI_Comm comm, const mt_comm_t *mc, const mt_discover_list_t *files, const mt_buf_t *list,
                     local_dump_t *mine, size_t n_mine, fr_job_t *fr)
{
    int me = mc->rank;
    /* 1. the heads: this process's distinct groups once (a table: every
     * dump holds every group of the job, the default one with all its
     * ranks: 16 KB a dump at 4,096 ranks), then each dump's head with the
     * indexes of its groups in the table */
    mt_buf_t b = {0}, recs = {0}, key = {0};
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
                    memcpy(c.ranks, pg->ranks, (size_t)pg->nranks * sizeof *c.ranks);
                    tab.pgs[tab.npgs++] = c;
                }
            }
            uint32_t ix = id - 1;
            oom = oom || mt_buf_append(&recs, &ix, sizeof ix) != MT_OK;
        }
    }
    uint64_t nmine = n_mine;
    oom = oom || mt_buf_append(&b, &nmine, sizeof nmine) != MT_OK || mt_fr_dump_pack_append(&tab, &b) != MT_OK ||
          (recs.len && mt_buf_append(&b, recs.data, recs.len) != MT_OK);
    mt_buf_free(&recs);
    mt_buf_free(&key);
    mt_strtab_free(keys);
    mt_fr_dump_free(&tab);
    if (comm_mpi_agree(comm, oom)) {
        mt_buf_free(&b);
        if (me == 0)
            say("mergetrace: out of memory\n");
        return MT_EXIT_ERROR;
    }
    void *all = NULL;
    size_t all_len = 0;
    mt_status_t st = mc->gatherv(mc->ctx, b.data, b.len, &all, &all_len, 0);
    mt_buf_free(&b);
    /* 2. the plan, and the reference: the lowest rank with a dump */
    mt_fr_pg_seq_t *keep = NULL;
    size_t nkeep = 0;
    int64_t hd[3] = {0, -1, 0}; /* 0 go on, 1 every entry, 2 out of memory; ref; nkeep */
    if (me == 0) {
        if (st != MT_OK || !heads_plan(files, list, all, all_len, fr, &keep, &nkeep))
            hd[0] = 2;
        else if (getenv("MERGETRACE_FR_ENTRIES")) /* tests: the whole dumps, for comparing */
            hd[0] = 1;
        hd[1] = fr->n ? fr->dumps[0].rank : -1;
        hd[2] = (int64_t)nkeep;
    }
    free(all);
    procs_bcast(hd, 3, MPI_INT64_T, 0, comm);
    if (hd[0]) {
        free(keep);
        if (me == 0)
            fr_free(fr);
        if (hd[0] == 2 && me == 0)
            say("mergetrace: out of memory\n");
        return hd[0] == 2 ? MT_EXIT_ERROR : -1;
    }
    nkeep = (size_t)hd[2];
    if (me != 0 && !(keep = malloc((nkeep ? nkeep : 1) * sizeof *keep)))
        oom = true;
    if (comm_mpi_agree(comm, oom)) {
        free(keep);
        if (me == 0) {
            fr_free(fr);
            say("mergetrace: out of memory\n");
        }
        return MT_EXIT_ERROR;
    }
    mc->bcast(mc->ctx, keep, nkeep * sizeof *keep, 0);
    /* the reference dump, from the process that read it */
    int owner = -1;
    for (size_t pos = 0; pos + 12 <= list->len;) {
        int32_t h2[2];
        uint32_t pl;
        memcpy(h2, list->data + pos, sizeof h2);
        memcpy(&pl, list->data + pos + 8, sizeof pl);
        pos += 12 + pl;
        if (h2[0] == hd[1])
            owner = h2[1];
    }
    uint64_t rlen = 0;
    if (me == owner) {
        for (size_t i = 0; i < n_mine; i++)
            if (mine[i].d.rank == hd[1])
                oom = mt_fr_dump_pack_append(&mine[i].d, &b) != MT_OK;
        rlen = oom ? UINT64_MAX : b.len;
    }
    procs_bcast(&rlen, 1, MPI_UINT64_T, owner, comm);
    if (rlen == UINT64_MAX || (me != owner && mt_buf_reserve(&b, rlen + 1) != MT_OK))
        oom = true;
    if (comm_mpi_agree(comm, oom)) {
        free(keep);
        mt_buf_free(&b);
        if (me == 0) {
            fr_free(fr);
            say("mergetrace: out of memory\n");
        }
        return MT_EXIT_ERROR;
    }
    mc->bcast(mc->ctx, b.data, rlen, owner);
    /* 3. each dump fitted to the reference and trimmed */
    mt_fr_dump_t ref = {0};
    size_t at = 0;
    mt_fr_ref_t *fit = NULL;
    mt_buf_t t = {0};
    int flag = 0; /* 1 a dump without a fit, 2 out of memory */
    if (mt_fr_dump_unpack((const uint8_t *)b.data, rlen, &at, &ref) != MT_OK || !(fit = mt_fr_ref_new(&ref)))
        flag = 2;
    mt_buf_free(&b);
    int pairs = 0;
    for (size_t i = 0; i < n_mine && !flag; i++) {
        int64_t off = 0;
        if (mine[i].d.rank != hd[1] && !mt_fr_ref_fit(fit, &mine[i].d, &off, &pairs)) {
            flag = 1;
            break;
        }
        mt_fr_dump_t d;
        if (mt_fr_dump_trim(&mine[i].d, keep, nkeep, &d) != MT_OK) {
            flag = 2;
            break;
        }
        if (mt_fr_dump_pack_append(&d, &t) != MT_OK || mt_buf_append(&t, &off, sizeof off) != MT_OK)
            flag = 2;
        mt_fr_dump_free(&d);
    }
    mt_fr_ref_free(fit);
    mt_fr_dump_free(&ref);
    free(keep);
    int64_t pv[2] = {flag, pairs}, pall[2] = {0, 0};
    procs_allreduce(pv, pall, 1, MPI_INT64_T, MPI_MAX, comm);
    procs_allreduce(pv + 1, pall + 1, 1, MPI_INT64_T, MPI_SUM, comm);
    if (pall[0]) {
        mt_buf_free(&t);
        if (me == 0) {
            fr_free(fr);
            if (pall[0] == 2)
                say("mergetrace: out of memory\n");
        }
        return pall[0] == 2 ? MT_EXIT_ERROR : -1;
    }
    all = NULL;
    all_len = 0;
    st = mc->gatherv(mc->ctx, t.data, t.len, &all, &all_len, 0);
    mt_buf_free(&t);
    int code = st == MT_OK ? 0 : MT_EXIT_ERROR;
    if (me == 0 && !code) {
        int64_t *off = calloc(fr->n ? fr->n : 1, sizeof *off);
        code = off ? 0 : MT_EXIT_ERROR;
        for (at = 0; !code && at < all_len;) {
            mt_fr_dump_t d;
            int64_t o;
            if (mt_fr_dump_unpack(all, all_len, &at, &d) != MT_OK || all_len - at < sizeof o) {
                code = MT_EXIT_ERROR;
                break;
            }
            memcpy(&o, (const uint8_t *)all + at, sizeof o);
            at += sizeof o;
            mt_fr_dump_t *x = bsearch(&d, fr->dumps, fr->n, sizeof *fr->dumps, by_rank);
            if (!x) {
                mt_fr_dump_free(&d);
                code = MT_EXIT_ERROR;
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
        mt_error_t err;
        mt_error_clear(&err);
        st = code ? MT_ERR_NOMEM : mt_fr_hang_analyse_fitted(fr->dumps, fr->n, off, (int)pall[1], &fr->hang, &err);
        free(off);
        if (st == MT_ERR_FORMAT) /* dumps of different jobs: said, or left out with --force, on every entry */
            code = -1;
        else if (st != MT_OK) {
            say("mergetrace: out of memory\n");
            code = MT_EXIT_ERROR;
        }
        if (code)
            fr_free(fr);
    }
    free(all);
    procs_bcast(&code, 1, MPI_INT, 0, comm);
    return code;
}

/* Collective: every dump's entries to process 0 (packed), analysed there
 * as a whole. 0 or an exit code (said), the same on every process. */
static int gather_all(MPI_Comm comm, const mt_comm_t *mc, const options_t *o, const mt_discover_list_t *files,
                      const mt_buf_t *list, const local_dump_t *mine, size_t n_mine, fr_job_t *fr)
{
    mt_buf_t packed = {0};
    bool oom = false;
    for (size_t i = 0; i < n_mine && !oom; i++)
        oom = mt_fr_dump_pack_append(&mine[i].d, &packed) != MT_OK;
    if (comm_mpi_agree(comm, oom)) {
        mt_buf_free(&packed);
        if (mc->rank == 0)
            say("mergetrace: out of memory\n");
        return MT_EXIT_ERROR;
    }
    void *all = NULL;
    size_t all_len = 0;
    mt_status_t st = mc->gatherv(mc->ctx, packed.data, packed.len, &all, &all_len, 0);
    mt_buf_free(&packed);
    int code = st == MT_OK ? 0 : MT_EXIT_ERROR;
    if (mc->rank == 0 && !code)
        code = analyse(o, files, list, all, all_len, fr);
    free(all);
    procs_bcast(&code, 1, MPI_INT, 0, comm);
    return code;
}

/* This process's dumps, consecutive ranks (assign_blocks), as one input of
 * the merged writer. */
typedef struct block {
    const local_dump_t *d; /* sorted by rank */
    size_t n;
} block_t;

static int local_by_rank(const void *a, const void *b)
{
    return ((const local_dump_t *)a)->d.rank - ((const local_dump_t *)b)->d.rank;
}

static mt_status_t trace_block(const merged_input_t *in, bool first, mt_write_fn write, void *ctx, uint64_t *events,
                               mt_error_t *err)
{
    (void)err;
    const block_t *b = in->item;
    mt_status_t st = MT_OK;
    *events = 0;
    for (size_t i = 0; i < b->n && st == MT_OK; i++) {
        uint64_t k = 0;
        st = mt_fr_trace_rank(&b->d[i].d, first && i == 0, b->d[i].off, b->d[i].dump_ns, write, ctx, &k);
        *events += k;
    }
    return st;
}

/* Collective, dumps alone: the merged trace of the entries, each process
 * writing the dumps it read (merged_write_format) as one piece (they are
 * consecutive ranks: assign_blocks), on the clocks process 0's analysis
 * fitted. 0, or MT_EXIT_ERROR on every process after process
 * 0 said why. */
static int write_merged(MPI_Comm comm, const options_t *o, const char *path, const fr_job_t *fr, local_dump_t *mine,
                        size_t n_mine)
{
    int me;
    procs_comm_rank(comm, &me);
    int64_t wd[2] = {me == 0 ? fr->hang.world : 0, me == 0 ? fr->hang.dump_ns : MT_FR_NONE};
    procs_bcast(wd, 2, MPI_INT64_T, 0, comm);
    int64_t *off = malloc((size_t)(wd[0] ? wd[0] : 1) * sizeof *off);
    if (comm_mpi_agree(comm, !off)) {
        free(off);
        if (me == 0)
            say("mergetrace: out of memory\n");
        return MT_EXIT_ERROR;
    }
    if (me == 0 && wd[0])
        memcpy(off, fr->hang.offset_ns, (size_t)wd[0] * sizeof *off);
    procs_bcast(off, (int)wd[0], MPI_INT64_T, 0, comm);
    if (n_mine) /* a process without a dump: mine may be NULL, which qsort may not take */
        qsort(mine, n_mine, sizeof *mine, local_by_rank);
    for (size_t i = 0; i < n_mine; i++) {
        int r = mine[i].d.rank;
        mine[i].off = r < wd[0] && off[r] != MT_FR_NONE ? off[r] : 0;
        mine[i].dump_ns = wd[1];
    }
    /* one input: this process's block of ranks, named by its first */
    block_t blk = {.d = mine, .n = n_mine};
    merged_input_t in = {.path = n_mine ? mine[0].path : NULL, .rank = n_mine ? mine[0].d.rank : 0, .item = &blk};
    static const merged_format_t fmt = {
        .header = mt_fr_trace_header, .rank = trace_block, .footer = mt_fr_trace_footer};
    char msg[1400] = "";
    int rc = merged_write_format(&fmt, comm, path, o->merged_gzip, o->local, &in, n_mine ? 1 : 0, NULL, msg,
                                 sizeof msg);
    if (rc && me == 0)
        say("mergetrace: %s\n", msg[0] ? msg : "the merged trace: write failed");
    free(off);
    return rc ? MT_EXIT_ERROR : 0;
}

/* Write path from buf (gzip-compressed when gz) under a temporary name,
 * then rename (said first in the renaming mark). 0, or 1 with msg. */
static int write_file(const char *dir, const char *path, const mt_buf_t *buf, bool gz, char *msg, size_t cap)
{
    char tmp[PATH_MAX + 32];
    mt_buf_t z = {0};
    const mt_buf_t *b = buf;
    mt_status_t st = MT_OK;
    if (gz) {
        mt_gz_t *g = NULL;
        st = mt_gz_new(MT_GZ_AUTO, &g);
        for (size_t at = 0; st == MT_OK && at < buf->len; at += MT_GZ_MAX_MEMBER)
            st = mt_gz_member(g, buf->data + at, buf->len - at < MT_GZ_MAX_MEMBER ? buf->len - at : MT_GZ_MAX_MEMBER,
                              &z);
        mt_gz_free(g);
        b = &z;
    }
    FILE *f = st == MT_OK ? mt_outdir_tmp_create(path, tmp, sizeof tmp) : NULL;
    if (!f) {
        snprintf(msg, cap, "%.900s: cannot create (%s)", path, st == MT_OK ? strerror(errno) : "out of memory");
        mt_buf_free(&z);
        return 1;
    }
    st = file_write(f, b->data, b->len);
    if (fclose(f) != 0)
        st = MT_ERR_IO;
    mt_buf_free(&z);
    const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    if (st != MT_OK || mt_outdir_renaming(dir, name, tmp) || rename(tmp, path) != 0) {
        snprintf(msg, cap, "%.900s: write failed (%s)", path, strerror(errno));
        remove(tmp);
        return 1;
    }
    return 0;
}

/* Process 0, dumps alone, after the merged trace of the entries
 * (write_merged; merged_path its name, NULL when not written):
 * report.json, report.html; the verdict or report.json on stdout. An exit
 * code. */
static int outputs_alone(const options_t *o, const fr_job_t *fr, const char *merged_path)
{
    char msg[1400] = "";
    mt_report_input_t *ri = calloc(fr->n ? fr->n : 1, sizeof *ri);
    int64_t *missing = calloc((size_t)(fr->hang.world ? fr->hang.world : 1), sizeof *missing);
    if (!ri || !missing) {
        free(ri);
        free(missing);
        say("mergetrace: out of memory\n");
        return MT_EXIT_ERROR;
    }
    uint64_t entries = 0;
    for (size_t i = 0; i < fr->n; i++) {
        ri[i] = (mt_report_input_t){.rank = fr->dumps[i].rank,
                                    .rank_source = "file name",
                                    .path = fr->paths[i],
                                    .bytes = fr->bytes[i],
                                    .events = fr->counts[i]};
        entries += fr->counts[i];
    }
    size_t n_missing = 0;
    for (int r = 0; r < fr->hang.world; r++)
        if (!fr->hang.has_dump[r])
            missing[n_missing++] = r;
    mt_report_t rep = {.version = MERGETRACE_VERSION,
                       .world_size = fr->hang.world,
                       .inputs = ri,
                       .n_inputs = fr->n,
                       .missing = missing,
                       .n_missing = n_missing,
                       .reference_rank = fr->hang.ref_rank,
                       .merged = merged_path ? strrchr(merged_path, '/') + 1 : NULL,
                       .merged_events = entries,
                       .hang = &fr->hang};
    int code = fr->hung ? MT_EXIT_HANG : MT_EXIT_OK;
    mt_buf_t b = {0};
    char path[PATH_MAX];
    {
        snprintf(path, sizeof path, "%.4000s/report.json", o->out_dir);
        if (mt_report_json(&rep, mt_buf_write, &b) != MT_OK || write_file(o->out_dir, path, &b, false, msg, sizeof msg))
            code = MT_EXIT_ERROR;
    }
    if (code != MT_EXIT_ERROR && o->json && fwrite(b.data, 1, b.len, stdout) != b.len)
        code = MT_EXIT_ERROR;
    b.len = 0;
    mt_html_opts_t ho = {.command_line = o->command_line};
    if (code != MT_EXIT_ERROR && !o->no_html) {
        snprintf(path, sizeof path, "%.4000s/report.html", o->out_dir);
        if (mt_report_html(&rep, &ho, mt_buf_write, &b) != MT_OK || write_file(o->out_dir, path, &b, false, msg, sizeof msg))
            code = MT_EXIT_ERROR;
    }
    mt_buf_free(&b);
    if (code == MT_EXIT_ERROR)
        say("mergetrace: %s\n", msg[0] ? msg : "out of memory");
    else {
        if (!o->json && !o->quiet) {
            printf("mergetrace: %zu Flight Recorder dump%s, %llu entries\n", fr->n, fr->n == 1 ? "" : "s",
                   (unsigned long long)entries);
            if (mt_fr_hang_write_text(&fr->hang, out_write, NULL) != MT_OK)
                code = MT_EXIT_ERROR;
            printf("\nwrote %s/report.json", o->out_dir);
            if (!o->no_html)
                printf("%s%s/report.html", merged_path ? ", " : " and ", o->out_dir);
            if (merged_path)
                printf(" and %s (%llu entries)", merged_path, (unsigned long long)entries);
            printf("\n");
        }
        if (code != MT_EXIT_ERROR)
            mt_outdir_renamed_all();
    }
    if (fflush(stdout) || ferror(stdout)) {
        say("mergetrace: stdout: write error\n");
        code = MT_EXIT_ERROR;
    }
    free(ri);
    free(missing);
    return code;
}

int fr_stage(MPI_Comm comm, const mt_comm_t *mc, const options_t *o, mt_discover_list_t *files,
             const mt_rankmap_t *map, fr_job_t *fr)
{
    memset(fr, 0, sizeof *fr);
    int me = mc->rank;
    /* how many dumps and traces, and the plan, from process 0 */
    int64_t counts[3] = {0, 0, 0}; /* dumps, traces, plan bytes or -code */
    mt_buf_t list = {0};
    if (me == 0) {
        counts[0] = (int64_t)files->n_fr;
        counts[1] = (int64_t)files->n;
        if (files->n_fr) {
            int code = plan(o, files, map, mc->size, &list);
            counts[2] = code ? -code : (int64_t)list.len;
        }
    }
    procs_bcast(counts, 3, MPI_INT64_T, 0, comm);
    if (!counts[0]) {
        mt_buf_free(&list);
        return -1;
    }
    fr->any = true;
    if (counts[2] < 0) {
        mt_buf_free(&list);
        return (int)-counts[2];
    }
    if (me != 0 && mt_buf_reserve(&list, (size_t)counts[2] + 1) != MT_OK)
        counts[2] = -1;
    if (comm_mpi_agree(comm, counts[2] < 0)) {
        if (me == 0)
            say("mergetrace: out of memory\n");
        mt_buf_free(&list);
        return MT_EXIT_ERROR;
    }
    if (mc->bcast(mc->ctx, list.data, (size_t)counts[2], 0) != MT_OK) {
        mt_buf_free(&list);
        return MT_EXIT_ERROR;
    }
    list.len = (size_t)counts[2];

    /* each process reads its share and keeps it; the lowest failing dump
     * says why */
    local_dump_t *mine = NULL;
    size_t n_mine = 0;
    long bad = -1;
    char msg[1400] = "";
    mt_status_t st = MT_OK;
    read_share((const uint8_t *)list.data, list.len, me, &mine, &n_mine, &bad, msg, sizeof msg, &st);
    int mine_bad = bad >= 0 ? (int)bad : INT_MAX, lowest = INT_MAX;
    procs_allreduce(&mine_bad, &lowest, 1, MPI_INT, MPI_MIN, comm);
    if (lowest != INT_MAX) {
        if (mine_bad == lowest)
            say("mergetrace: %s%s\n", o->job_tag, msg);
        int code = mine_bad == lowest ? options_exit_code(st) : 0;
        locals_free(mine, n_mine);
        mt_buf_free(&list);
        return comm_mpi_agree(comm, code);
    }
    /* process 0 gets what the analysis reads, or every entry */
    int code = summarise(comm, mc, files, &list, mine, n_mine, fr);
    if (code < 0)
        code = gather_all(comm, mc, o, files, &list, mine, n_mine, fr);
    if (me == 0 && !code)
        fr->hung = fr->hang.kind != MT_FR_NO_HANG;
    fr->any = true;
    mt_buf_free(&list);
    int hung = fr->hung;
    procs_bcast(&hung, 1, MPI_INT, 0, comm);
    fr->hung = hung != 0;
    if (code || counts[1]) { /* beside traces: the job's outputs carry the verdict */
        locals_free(mine, n_mine);
        return code ? code : -1;
    }

    /* dumps alone: the whole run */
    merged_out_t m = {0};
    code = outputs_prepare(comm, o, files, &m);
    if (code == MT_EXIT_OK && !o->no_merge)
        code = write_merged(comm, o, m.path, fr, mine, n_mine);
    locals_free(mine, n_mine);
    if (code == MT_EXIT_OK && me == 0)
        code = outputs_alone(o, fr, o->no_merge ? NULL : m.path);
    procs_bcast(&code, 1, MPI_INT, 0, comm);
    return code;
}

int fr_from_nccl(const options_t *o, const mt_discover_list_t *files, const mt_nccl_job_t *nj, fr_job_t *fr)
{
    bool any = false;
    size_t n = 0;
    for (size_t i = 0; i < nj->n; i++) {
        any |= nj->r[i].info.in_flight > 0;
        n += nj->r[i].info.is_nccl == MT_NCCL_FMT_PLUGIN && !nj->r[i].info.left_out;
    }
    if (fr->any || !any)
        return 0;
    mt_nccl_file_t **nf = calloc(n, sizeof *nf);
    int32_t *ranks = calloc(n, sizeof *ranks);
    fr->dumps = calloc(n, sizeof *fr->dumps);
    fr->paths = calloc(n, sizeof *fr->paths);
    fr->bytes = calloc(n, sizeof *fr->bytes);
    fr->counts = calloc(n, sizeof *fr->counts);
    int code = nf && ranks && fr->dumps && fr->paths && fr->bytes && fr->counts ? 0 : MT_EXIT_ERROR;
    if (code)
        say("mergetrace: out of memory\n");
    size_t k = 0;
    for (size_t i = 0; !code && i < nj->n; i++) {
        const mt_nccl_rank_t *r = &nj->r[i];
        if (r->info.is_nccl != MT_NCCL_FMT_PLUGIN || r->info.left_out)
            continue;
        const mt_discover_file_t *in = &files->files[r->file_index];
        mt_error_t err;
        mt_error_clear(&err);
        mt_status_t st = mt_nccl_load(in->path, &nf[k], &err);
        if (st != MT_OK) {
            say("mergetrace: %s%s: rank %d: read again for the hang analysis: %s\n", o->job_tag, in->path, (int)r->rank,
                err.msg[0] ? err.msg : mt_status_str(st));
            code = options_exit_code(st);
            break;
        }
        ranks[k] = r->rank;
        fr->paths[k] = in->path;
        fr->bytes[k] = in->bytes;
        k++;
    }
    if (!code) {
        mt_error_t err;
        mt_error_clear(&err);
        mt_status_t st = mt_fr_from_nccl((const mt_nccl_file_t *const *)nf, ranks, k, fr->dumps, &err);
        if (st == MT_OK) {
            fr->n = k;
            for (size_t i = 0; i < k; i++)
                fr->counts[i] = fr->dumps[i].n;
            st = mt_fr_hang_analyse(fr->dumps, fr->n, &fr->hang, &err);
        }
        if (st != MT_OK) {
            say("mergetrace: %sthe hang analysis of the NCCL plugin's files: %s\n", o->job_tag,
                err.msg[0] ? err.msg : mt_status_str(st));
            code = st == MT_ERR_NOMEM ? MT_EXIT_ERROR : options_exit_code(st);
        }
    }
    for (size_t i = 0; i < k; i++)
        mt_nccl_file_free(nf[i]);
    free(nf);
    free(ranks);
    if (code) {
        fr_free(fr);
        return code;
    }
    fr->any = fr->from_nccl = true;
    fr->hung = fr->hang.kind != MT_FR_NO_HANG;
    return 0;
}

void fr_print(const options_t *o, const fr_job_t *fr)
{
    if (!fr->any || o->quiet || o->json)
        return;
    if (fr->from_nccl)
        printf("\nNCCL plugin files with collectives in flight at their end (%zu file%s): hang analysis\n", fr->n,
               fr->n == 1 ? "" : "s");
    else
        printf("\nflight recorder (%zu dump%s):\n", fr->n, fr->n == 1 ? "" : "s");
    mt_fr_hang_write_text(&fr->hang, out_write, NULL);
}

void fr_free(fr_job_t *fr)
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
    memset(fr, 0, sizeof *fr);
}
