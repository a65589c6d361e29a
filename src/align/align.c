/* The job-wide alignment step: gather every rank's collective rows and
 * label tables on process 0, map the label ids onto one job-wide table,
 * match and fit there (n log n in the rows), broadcast the clocks.
 * With several processes and rows whose match keys are their own, the
 * match is sharded: each process matches the rows whose key hashes to it
 * and process 0 only puts the instances in order. Collective through
 * mt_comm_t; serial under mt_comm_serial(). */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mergetrace/collectives.h"
#include "mergetrace/comm.h"
#include "align/shard.h"
#include "base/bigmem.h"
#include "base/clock.h"
#include "base/sort.h"

void mt_align_result_free(mt_align_result_t *res)
{
    if (!res)
        return;
    free(res->clocks);
    free(res->rows);
    free(res->owned);
    mt_strtab_free(res->labels);
    mt_match_free(res->m);
    memset(res, 0, sizeof *res);
}

/* A process's label block, as gathered: its row count, its label count
 * (id 0, "", included) and then labels 1..count-1, each a 4-byte length and
 * its bytes. Every integer little or big as the host has it: the processes
 * of one job run one build on one kind of machine. */
typedef struct lblk_head {
    uint64_t n_rows;
    uint32_t n_labels;
    uint32_t pad_;
} lblk_head_t;

/* This process's block into *out (malloc'd). MT_OK or MT_ERR_NOMEM. */
static mt_status_t labels_pack(const mt_strtab_t *labels, size_t n_rows, void **out, size_t *out_len)
{
    uint32_t n = labels ? mt_strtab_count(labels) : 1;
    size_t len = sizeof(lblk_head_t);
    for (uint32_t id = 1; id < n; id++) {
        size_t l;
        mt_strtab_get(labels, id, &l);
        len += 4 + l;
    }
    unsigned char *b = malloc(len);
    if (!b)
        return MT_ERR_NOMEM;
    lblk_head_t h = {.n_rows = n_rows, .n_labels = n};
    memcpy(b, &h, sizeof h);
    size_t o = sizeof h;
    for (uint32_t id = 1; id < n; id++) {
        size_t l;
        const char *s = mt_strtab_get(labels, id, &l);
        uint32_t l32 = (uint32_t)l;
        memcpy(b + o, &l32, 4);
        memcpy(b + o + 4, s, l);
        o += 4 + l;
    }
    *out = b;
    *out_len = len;
    return MT_OK;
}

/* Process 0: the gathered blocks (blk, in process order) onto one job table
 * *job, and the rows' ids (rows, concatenated in the same order) rewritten
 * to it. Every row id is checked against its process's label count and
 * every length against the block, so a peer's bad block is an error here,
 * never a read outside it. MT_OK, MT_ERR_NOMEM or MT_ERR_FORMAT (err set). */
static mt_status_t labels_unpack(const unsigned char *blk, size_t blk_len, mt_crow_t *rows, size_t n_rows,
                                 mt_strtab_t **job, mt_error_t *err)
{
    mt_strtab_t *t = mt_strtab_create();
    uint32_t *map = NULL;
    size_t cap_map = 0;
    if (!t)
        return MT_ERR_NOMEM;
    mt_status_t st = MT_OK;
    size_t o = 0, row = 0;
    for (int proc = 0; o < blk_len && st == MT_OK; proc++) {
        lblk_head_t h;
        if (blk_len - o < sizeof h) {
            st = mt_error_set(err, MT_ERR_FORMAT, "process %d: label table header cut at byte %zu of %zu", proc, o,
                              blk_len);
            break;
        }
        memcpy(&h, blk + o, sizeof h);
        o += sizeof h;
        /* every label past id 0 takes at least its 4-byte length: a count
         * the block cannot hold is refused before the map is allocated */
        if (h.n_labels == 0 || h.n_labels - 1 > (blk_len - o) / 4 || h.n_rows > n_rows - row) {
            st = mt_error_set(err, MT_ERR_FORMAT,
                              "process %d: label table says %" PRIu64 " rows and %" PRIu32
                              " labels in %zu bytes; %zu rows are left and id 0 is always there",
                              proc, h.n_rows, h.n_labels, blk_len - o, n_rows - row);
            break;
        }
        if (h.n_labels > cap_map) {
            free(map);
            cap_map = h.n_labels;
            if (!(map = malloc(cap_map * sizeof *map))) {
                st = MT_ERR_NOMEM;
                break;
            }
        }
        map[0] = MT_STR_NONE;
        for (uint32_t id = 1; id < h.n_labels && st == MT_OK; id++) {
            uint32_t l;
            if (blk_len - o < 4 || (memcpy(&l, blk + o, 4), blk_len - o - 4 < l)) {
                st = mt_error_set(err, MT_ERR_FORMAT, "process %d: label %" PRIu32 " runs past its table (byte %zu)",
                                  proc, id, o);
                break;
            }
            st = mt_strtab_intern(t, (const char *)blk + o + 4, l, &map[id]);
            o += 4 + (size_t)l;
        }
        for (uint64_t i = 0; i < h.n_rows && st == MT_OK; i++, row++) {
            mt_crow_t *r = &rows[row];
            if (r->pg_id >= h.n_labels || r->dtype_id >= h.n_labels) {
                st = mt_error_set(err, MT_ERR_FORMAT,
                                  "process %d: row %" PRIu64 " (rank %" PRId32 "): label id %" PRIu32
                                  " out of range (the process sent %" PRIu32 " labels)",
                                  proc, i, r->rank, r->pg_id >= h.n_labels ? r->pg_id : r->dtype_id, h.n_labels);
                break;
            }
            r->pg_id = map[r->pg_id];
            r->dtype_id = map[r->dtype_id];
        }
    }
    if (st == MT_OK && row != n_rows)
        st = mt_error_set(err, MT_ERR_FORMAT, "label tables account for %zu of the %zu gathered rows", row, n_rows);
    free(map);
    if (st != MT_OK) {
        mt_strtab_free(t);
        return st;
    }
    *job = t;
    return MT_OK;
}

/* Every process's status, agreed: the worst of them (or the collective's
 * own failure), the same on every process, before the next collective. */
static mt_status_t agree(const mt_comm_t *comm, int64_t status)
{
    mt_status_t st = comm->allreduce_max(comm->ctx, &status, 1);
    return st != MT_OK ? st : (mt_status_t)status;
}

/* ---- the sharded match ---- */

/* One instance as a process sends it to process 0: its key, counts and
 * verdict; its members follow all the headers, as global row indices. */
typedef struct shard_inst {
    uint64_t a, b, c;
    uint32_t n_members;
    int32_t expected;
    uint8_t tier, status;
    uint8_t pad_[6];
} shard_inst_t;

typedef struct shard_head {
    uint64_t n_inst, n_members;
    mt_match_stats_t stats;
} shard_head_t;

/* The rows this process sends to each process, in their order (a
 * counting sort by destination: the order of a process's rows is kept, so
 * each shard sees every source's rows in the order one match would), and
 * their global indices (first: the index of this process's row 0). */
static mt_status_t shard_send(const mt_comm_t *comm, const mt_cinst_t *rows, size_t n, uint64_t first,
                              mt_cinst_t **out_rows, uint32_t **out_gidx, size_t *lens_rows, size_t *lens_gidx)
{
    int P = comm->size;
    size_t *at = calloc((size_t)P + 1, sizeof *at);
    int *dest = mt_big_malloc((n ? n : 1) * sizeof *dest);
    mt_cinst_t *sr = mt_big_malloc((n ? n : 1) * sizeof *sr);
    uint32_t *sg = mt_big_malloc((n ? n : 1) * sizeof *sg);
    if (!at || !dest || !sr || !sg) {
        free(at);
        free(dest);
        free(sr);
        free(sg);
        return MT_ERR_NOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        dest[i] = mt_match_shard_of(&rows[i], P);
        at[dest[i] + 1]++;
    }
    for (int q = 0; q < P; q++) {
        lens_rows[q] = at[q + 1] * sizeof *sr;
        lens_gidx[q] = at[q + 1] * sizeof *sg;
        at[q + 1] += at[q];
    }
    for (size_t i = 0; i < n; i++) {
        size_t k = at[dest[i]]++;
        sr[k] = rows[i];
        sg[k] = (uint32_t)(first + i);
    }
    free(at);
    free(dest);
    *out_rows = sr;
    *out_gidx = sg;
    return MT_OK;
}

/* This shard's match as sent to process 0: head, instances, members. */
static mt_status_t shard_pack(const mt_match_t *m, const mt_match_stats_t *stats, const uint64_t *keys,
                              const uint32_t *gidx, size_t n_rows, void **out, size_t *out_len)
{
    size_t len = sizeof(shard_head_t) + m->n_inst * sizeof(shard_inst_t) + n_rows * sizeof(uint32_t);
    unsigned char *b = mt_big_malloc(len);
    if (!b)
        return MT_ERR_NOMEM;
    shard_head_t h = {.n_inst = m->n_inst, .n_members = n_rows, .stats = *stats};
    memcpy(b, &h, sizeof h);
    shard_inst_t *si = (shard_inst_t *)(b + sizeof h);
    for (size_t i = 0; i < m->n_inst; i++)
        si[i] = (shard_inst_t){.a = keys[3 * i], .b = keys[3 * i + 1], .c = keys[3 * i + 2],
                               .n_members = m->first[i + 1] - m->first[i], .expected = m->expected[i],
                               .tier = m->key[i], .status = m->status[i]};
    uint32_t *mem = (uint32_t *)(si + m->n_inst);
    for (size_t k = 0; k < n_rows; k++)
        mem[k] = gidx[m->members[k]];
    *out = b;
    *out_len = len;
    return MT_OK;
}

/* Process 0: the shards' blocks (in process order) into one match of the
 * job's n rows, instances in (tier, a, b, c) order as one match of every
 * row orders them; members are global row indices, checked. */
static mt_status_t shard_merge(const unsigned char *blk, size_t len, size_t n, mt_match_t **out,
                               mt_match_stats_t *stats, mt_error_t *err)
{
    /* first pass: the counts, every block's bounds checked */
    size_t n_inst = 0, n_mem = 0, o = 0;
    mt_match_stats_t st = {0};
    for (int proc = 0; o < len; proc++) {
        shard_head_t h;
        if (len - o < sizeof h)
            return mt_error_set(err, MT_ERR_FORMAT, "process %d: match block cut at byte %zu of %zu", proc, o, len);
        memcpy(&h, blk + o, sizeof h);
        if (h.n_inst > (len - o - sizeof h) / sizeof(shard_inst_t) ||
            h.n_members > (len - o - sizeof h - h.n_inst * sizeof(shard_inst_t)) / 4)
            return mt_error_set(err, MT_ERR_FORMAT,
                                "process %d: match block says %" PRIu64 " instances of %" PRIu64
                                " rows in %zu bytes",
                                proc, h.n_inst, h.n_members, len - o);
        n_inst += h.n_inst;
        n_mem += h.n_members;
        st.full += h.stats.full;
        st.partial += h.stats.partial;
        st.unmatched += h.stats.unmatched;
        st.mismatched += h.stats.mismatched;
        for (int k = 0; k < MT_KEY_COUNT_; k++)
            st.by_key[k] += h.stats.by_key[k];
        st.rows += h.stats.rows;
        st.cpu_rows += h.stats.cpu_rows;
        o += sizeof h + h.n_inst * sizeof(shard_inst_t) + h.n_members * 4;
    }
    if (n_mem != n)
        return mt_error_set(err, MT_ERR_FORMAT, "the processes matched %zu of the %zu gathered rows", n_mem, n);
    mt_status_t rc = MT_ERR_NOMEM;
    /* Where each instance and its members are in blk, read by memcpy: a
     * block of an odd number of members leaves the next block's instances
     * 4 bytes off their alignment. */
    const unsigned char **src = mt_big_malloc((n_inst ? n_inst : 1) * sizeof *src);
    const unsigned char **msrc = mt_big_malloc((n_inst ? n_inst : 1) * sizeof *msrc);
    uint64_t *col[4] = {NULL};
    uint32_t *perm = mt_big_malloc((n_inst ? n_inst : 1) * sizeof *perm);
    mt_match_t *m = calloc(1, sizeof *m);
    for (int c = 0; c < 4; c++)
        col[c] = mt_big_malloc((n_inst ? n_inst : 1) * sizeof *col[c]);
    if (!src || !msrc || !perm || !m || !col[0] || !col[1] || !col[2] || !col[3])
        goto done;
    m->first = mt_big_malloc((n_inst + 1) * sizeof *m->first);
    m->members = mt_big_malloc((n ? n : 1) * sizeof *m->members);
    m->key = mt_big_malloc((n_inst ? n_inst : 1) * sizeof *m->key);
    m->status = mt_big_malloc((n_inst ? n_inst : 1) * sizeof *m->status);
    m->expected = mt_big_malloc((n_inst ? n_inst : 1) * sizeof *m->expected);
    if (!m->first || !m->members || !m->key || !m->status || !m->expected)
        goto done;
    size_t i = 0;
    for (o = 0; o < len;) {
        shard_head_t h;
        memcpy(&h, blk + o, sizeof h);
        const unsigned char *si = blk + o + sizeof h;
        const unsigned char *mem = si + h.n_inst * sizeof(shard_inst_t);
        size_t used = 0;
        for (size_t k = 0; k < h.n_inst; k++, i++) {
            shard_inst_t x;
            memcpy(&x, si + k * sizeof x, sizeof x);
            if (x.n_members > h.n_members - used) {
                rc = mt_error_set(err, MT_ERR_FORMAT, "a match block's instances hold more rows than it sent");
                goto done;
            }
            src[i] = si + k * sizeof x;
            msrc[i] = mem + used * sizeof(uint32_t);
            used += x.n_members;
            col[0][i] = x.tier;
            col[1][i] = x.a;
            col[2][i] = x.b;
            col[3][i] = x.c;
        }
        if (used != h.n_members) {
            rc = mt_error_set(err, MT_ERR_FORMAT, "a match block's instances hold fewer rows than it sent");
            goto done;
        }
        o += sizeof h + h.n_inst * sizeof(shard_inst_t) + h.n_members * 4;
    }
    if ((rc = mt_sort_fields((const uint64_t *const *)col, 4, n_inst, perm)) != MT_OK)
        goto done;
    size_t f = 0;
    for (size_t k = 0; k < n_inst; k++) {
        shard_inst_t si;
        memcpy(&si, src[perm[k]], sizeof si);
        m->first[k] = (uint32_t)f;
        m->key[k] = si.tier;
        m->status[k] = si.status;
        m->expected[k] = si.expected;
        for (uint32_t j = 0; j < si.n_members; j++) {
            uint32_t g;
            memcpy(&g, msrc[perm[k]] + j * sizeof g, sizeof g);
            if (g >= n || f >= n) {
                rc = mt_error_set(err, MT_ERR_FORMAT, "a match block names row %" PRIu32 " of %zu", g, n);
                goto done;
            }
            m->members[f++] = g;
        }
    }
    m->first[n_inst] = (uint32_t)f;
    m->n_inst = n_inst;
    *out = m;
    m = NULL;
    *stats = st;
    rc = MT_OK;
done:
    mt_match_free(m);
    free(src);
    free(msrc);
    free(perm);
    for (int c = 0; c < 4; c++)
        free(col[c]);
    return rc;
}

/* The members this shard keeps for the critical path's reductions
 * (mt_align_result_t.owned): those of the instances the graph links (not
 * mismatched, 2 members or more), in the match's order. MT_OK or
 * MT_ERR_NOMEM. */
static mt_status_t shard_keep(const mt_match_t *m, const mt_cinst_t *rows, mt_owned_member_t **out, size_t *n_out)
{
    size_t n = 0;
    for (size_t i = 0; i < m->n_inst; i++)
        if (m->status[i] != MT_INST_MISMATCH && m->first[i + 1] - m->first[i] >= 2)
            n += m->first[i + 1] - m->first[i];
    mt_owned_member_t *o = mt_big_malloc((n ? n : 1) * sizeof *o);
    if (!o)
        return MT_ERR_NOMEM;
    size_t w = 0;
    uint32_t ni = 0;
    for (size_t i = 0; i < m->n_inst; i++) {
        if (m->status[i] == MT_INST_MISMATCH || m->first[i + 1] - m->first[i] < 2)
            continue;
        for (uint32_t k = m->first[i]; k < m->first[i + 1]; k++) {
            const mt_cinst_t *r = &rows[m->members[k]];
            o[w++] = (mt_owned_member_t){.start_ns = r->start_ns, .end_ns = r->end_ns, .rank = r->rank, .inst = ni};
        }
        ni++;
    }
    *out = o;
    *n_out = n;
    return MT_OK;
}

/* A job of more collective rows than the match's 32-bit row indices hold
 * (4,294,967,295: at 80 bytes a row, 344 GB of rows on process 0). */
static mt_status_t rows_limit(uint64_t n_job, mt_error_t *err)
{
    return mt_error_set(err, MT_ERR_LIMIT, "%llu collective rows in the job; the match holds at most %llu",
                        (unsigned long long)n_job, (unsigned long long)UINT32_MAX);
}

/* Every process: send each row to the process that matches it, match what
 * arrives, send the instances to process 0, which merges them into *out
 * (process 0 only); the members each process keeps (shard_keep) into
 * res->owned. Collective; every process returns the same status. */
static mt_status_t shard_match(const mt_comm_t *comm, const mt_cinst_t *rows, size_t n_rows, mt_match_t **out,
                               mt_match_stats_t *stats, mt_align_result_t *res, mt_error_t *err)
{
    *out = NULL;
    int P = comm->size;
    /* this process's first global row: the counts of the processes before */
    uint64_t mine = n_rows, *counts = calloc((size_t)P, sizeof *counts);
    void *cnt = NULL;
    size_t cnt_len = 0;
    mt_status_t st = agree(comm, counts ? MT_OK : MT_ERR_NOMEM);
    if (st == MT_OK)
        st = comm->gatherv(comm->ctx, &mine, sizeof mine, &cnt, &cnt_len, 0);
    if (st == MT_OK && comm->rank == 0)
        memcpy(counts, cnt, (size_t)P * sizeof *counts);
    free(cnt);
    if (st == MT_OK)
        st = comm->bcast(comm->ctx, counts, (size_t)P * sizeof *counts, 0);
    if (st != MT_OK) {
        free(counts);
        return st;
    }
    uint64_t first = 0, n_job = 0;
    for (int p = 0; p < P; p++) {
        first += p < comm->rank ? counts[p] : 0;
        n_job += counts[p];
    }
    free(counts);
    if (n_job > UINT32_MAX) /* every process knows n_job: the same answer everywhere, no agreement needed */
        return rows_limit(n_job, err);

    size_t *lens = calloc(4 * (size_t)P, sizeof *lens);
    mt_cinst_t *sr = NULL;
    uint32_t *sg = NULL;
    st = agree(comm, lens ? shard_send(comm, rows, n_rows, first, &sr, &sg, lens, lens + P) : MT_ERR_NOMEM);
    void *rrows = NULL, *rgidx = NULL;
    if (st == MT_OK)
        st = comm->alltoallv(comm->ctx, sr, lens, &rrows, lens + 2 * P);
    free(sr);
    if (st == MT_OK)
        st = comm->alltoallv(comm->ctx, sg, lens + P, &rgidx, lens + 3 * P);
    free(sg);
    size_t n_mine = 0;
    for (int p = 0; lens && p < P; p++)
        n_mine += lens[2 * P + p] / sizeof(mt_cinst_t);
    free(lens);
    if (st != MT_OK) {
        free(rrows);
        free(rgidx);
        return st;
    }

    mt_match_t *m = NULL;
    mt_match_stats_t ms;
    uint64_t *keys = NULL;
    void *blk = NULL;
    size_t blk_len = 0;
    mt_status_t status = mt_match_keyed(rrows, n_mine, &m, &ms, &keys);
    if (status == MT_OK)
        status = shard_keep(m, rrows, &res->owned, &res->n_owned);
    free(rrows);
    if (status == MT_OK)
        status = shard_pack(m, &ms, keys, rgidx, n_mine, &blk, &blk_len);
    mt_match_free(m);
    free(keys);
    free(rgidx);
    st = agree(comm, status);
    void *all = NULL;
    size_t all_len = 0;
    if (st == MT_OK)
        st = comm->gatherv(comm->ctx, blk, blk_len, &all, &all_len, 0);
    free(blk);
    if (st != MT_OK)
        return st;
    if (comm->rank == 0)
        st = shard_merge(all, all_len, n_job, out, stats, err);
    free(all);
    return st; /* agreed on by the caller */
}

/* Process 0, once matched: its rows become res->rows, compact in place
 * (mt_crow_compact: 80 bytes a row of 128, the keys only the match reads
 * dropped) and the block shrunk, for the fit and every pass after it.
 * Takes over wide. */
static void rows_compact(mt_align_result_t *res, mt_cinst_t *wide)
{
    res->rows = mt_crow_compact(wide, res->n_rows);
    mt_crow_t *shrunk = res->n_rows ? realloc(res->rows, res->n_rows * sizeof *shrunk) : NULL;
    if (shrunk) /* else the block stays as large as it was, still valid */
        res->rows = shrunk;
}

/* owned: rows are freed as soon as they are gathered (on every process,
 * whatever happens), so process 0 does not hold its own share beside the
 * gathered copy while it matches and fits. */
static mt_status_t align_job(const mt_comm_t *comm, const mt_cinst_t *rows, mt_cinst_t *owned, size_t n_rows,
                             const mt_strtab_t *labels, const int32_t *ranks, size_t n_ranks,
                             const mt_clock_opts_t *opts, mt_align_result_t *res, mt_error_t *err)
{
    memset(res, 0, sizeof *res);
    /* The label blocks first (small: each distinct label once per
     * process), agreed on before the rows move, so a failed pack leaves no
     * process waiting in the rows' gather; and whether every row of the
     * job can be matched where its key hashes to. */
    void *blk = NULL, *blks = NULL;
    size_t blk_len = 0, blks_len = 0;
    int64_t both[2] = {labels_pack(labels, n_rows, &blk, &blk_len), 0};
    for (size_t i = 0; comm->size > 1 && i < n_rows && !both[1]; i++)
        both[1] = mt_match_shard_of(&rows[i], 1) < 0;
    mt_status_t st = comm->allreduce_max(comm->ctx, both, 2);
    if (st == MT_OK && both[0] != MT_OK)
        st = (mt_status_t)both[0];
    bool sharded = comm->size > 1 && !both[1];
    if (st == MT_OK)
        st = comm->gatherv(comm->ctx, blk, blk_len, &blks, &blks_len, 0);
    free(blk);
    /* Sharded, before the rows are gathered: process 0 then holds its
     * share of the match's scratch, not the whole job's. */
    double t0 = mt_clock_seconds(CLOCK_MONOTONIC), c0 = mt_clock_seconds(CLOCK_PROCESS_CPUTIME_ID);
    if (st == MT_OK && sharded) {
        int64_t status = shard_match(comm, rows, n_rows, &res->m, &res->match, res, err);
        st = agree(comm, status);
    }
    double t1 = mt_clock_seconds(CLOCK_MONOTONIC), c1 = mt_clock_seconds(CLOCK_PROCESS_CPUTIME_ID);
    /* Sharded, the rows travel compact (mt_crow_compact: 80 bytes of 128;
     * in place when handed over); one match on process 0 needs them whole. */
    const void *send = rows;
    size_t send_len = n_rows * sizeof *rows;
    mt_crow_t *copy = NULL;
    if (st == MT_OK && sharded) {
        int64_t status = MT_OK;
        if (owned)
            send = mt_crow_compact(owned, n_rows);
        else if (n_rows && !(send = copy = malloc(n_rows * sizeof *copy)))
            status = MT_ERR_NOMEM;
        for (size_t i = 0; copy && i < n_rows; i++)
            copy[i] = mt_crow_of(&rows[i]);
        send_len = n_rows * sizeof(mt_crow_t);
        st = agree(comm, status);
    }
    void *all = NULL;
    size_t all_len = 0;
    if (st == MT_OK)
        st = comm->gatherv(comm->ctx, send, send_len, &all, &all_len, 0);
    free(owned);
    free(copy);
    if (st) {
        free(blks);
        free(all);
        mt_align_result_free(res); /* a sharded match's result on the root */
        return st;
    }
    res->clocks = calloc(n_ranks ? n_ranks : 1, sizeof *res->clocks);
    res->n_clocks = n_ranks;
    int64_t status = res->clocks ? MT_OK : MT_ERR_NOMEM;
    if (comm->rank == 0 && status == MT_OK) {
        /* wall and CPU time: on a busy machine the CPU time is the steadier */
        double t2 = mt_clock_seconds(CLOCK_MONOTONIC), c2 = mt_clock_seconds(CLOCK_PROCESS_CPUTIME_ID);
        if (sharded) {
            res->rows = all;
            res->n_rows = all_len / sizeof *res->rows;
        } else {
            res->n_rows = all_len / sizeof *rows;
            status = res->n_rows > UINT32_MAX ? rows_limit(res->n_rows, err)
                                              : mt_match(all, res->n_rows, &res->m, &res->match);
            if (status == MT_OK)
                rows_compact(res, all);
            else
                free(all);
        }
        all = NULL;
        double t3 = mt_clock_seconds(CLOCK_MONOTONIC), c3 = mt_clock_seconds(CLOCK_PROCESS_CPUTIME_ID);
        if (status == MT_OK)
            status = labels_unpack(blks, blks_len, res->rows, res->n_rows, &res->labels, err);
        double t4 = mt_clock_seconds(CLOCK_MONOTONIC), c4 = mt_clock_seconds(CLOCK_PROCESS_CPUTIME_ID);
        if (status == MT_OK)
            status = mt_clock_fit(res->rows, res->n_rows, res->m, ranks, n_ranks, opts, res->clocks);
        res->match_s = (t1 - t0) + (t3 - t2);
        res->fit_s = mt_clock_seconds(CLOCK_MONOTONIC) - t4;
        res->match_cpu_s = (c1 - c0) + (c3 - c2);
        res->fit_cpu_s = mt_clock_seconds(CLOCK_PROCESS_CPUTIME_ID) - c4;
    }
    free(blks);
    free(all);
    /* Everyone learns the root's status before anyone waits on a bcast. */
    if ((st = comm->allreduce_max(comm->ctx, &status, 1)))
        status = st;
    res->match_procs = sharded ? comm->size : 1;
    if (status != MT_OK) {
        mt_align_result_free(res);
        return (mt_status_t)status;
    }
    if ((st = comm->bcast(comm->ctx, res->clocks, n_ranks * sizeof *res->clocks, 0)) ||
        (st = comm->bcast(comm->ctx, &res->match, sizeof res->match, 0))) {
        mt_align_result_free(res);
        return st;
    }
    return MT_OK;
}

mt_status_t mt_align_job(const mt_comm_t *comm, const mt_cinst_t *rows, size_t n_rows, const mt_strtab_t *labels,
                         const int32_t *ranks, size_t n_ranks, const mt_clock_opts_t *opts, mt_align_result_t *res,
                         mt_error_t *err)
{
    return align_job(comm, rows, NULL, n_rows, labels, ranks, n_ranks, opts, res, err);
}

mt_status_t mt_align_job_owned(const mt_comm_t *comm, mt_cinst_t *rows, size_t n_rows, const mt_strtab_t *labels,
                               const int32_t *ranks, size_t n_ranks, const mt_clock_opts_t *opts,
                               mt_align_result_t *res, mt_error_t *err)
{
    return align_job(comm, rows, rows, n_rows, labels, ranks, n_ranks, opts, res, err);
}
