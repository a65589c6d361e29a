/* The job-wide alignment step: gather every rank's collective rows and
 * label tables on process 0, map the label ids onto one job-wide table,
 * match and fit there (n log n in the rows), broadcast the clocks.
 * Collective through mt_comm_t; serial under mt_comm_serial(). */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mergetrace/collectives.h"
#include "mergetrace/comm.h"

static double seconds(clockid_t which)
{
    struct timespec ts;
    clock_gettime(which, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void mt_align_result_free(mt_align_result_t *res)
{
    if (!res)
        return;
    free(res->clocks);
    free(res->rows);
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
static mt_status_t labels_unpack(const unsigned char *blk, size_t blk_len, mt_cinst_t *rows, size_t n_rows,
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
            mt_cinst_t *r = &rows[row];
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
     * process waiting in the rows' gather. */
    void *blk = NULL, *blks = NULL;
    size_t blk_len = 0, blks_len = 0;
    int64_t packed = labels_pack(labels, n_rows, &blk, &blk_len);
    mt_status_t st = comm->allreduce_max(comm->ctx, &packed, 1);
    if (st == MT_OK && packed != MT_OK)
        st = (mt_status_t)packed;
    if (st == MT_OK)
        st = comm->gatherv(comm->ctx, blk, blk_len, &blks, &blks_len, 0);
    free(blk);
    void *all = NULL;
    size_t all_len = 0;
    if (st == MT_OK)
        st = comm->gatherv(comm->ctx, rows, n_rows * sizeof *rows, &all, &all_len, 0);
    free(owned);
    if (st) {
        free(blks);
        free(all);
        return st;
    }
    res->clocks = calloc(n_ranks ? n_ranks : 1, sizeof *res->clocks);
    res->n_clocks = n_ranks;
    int64_t status = res->clocks ? MT_OK : MT_ERR_NOMEM;
    if (comm->rank == 0 && status == MT_OK) {
        res->n_rows = all_len / sizeof *rows;
        status = labels_unpack(blks, blks_len, all, res->n_rows, &res->labels, err);
    }
    free(blks);
    if (comm->rank == 0 && status == MT_OK) {
        /* wall and CPU time: on a busy machine the CPU time is the steadier */
        double t0 = seconds(CLOCK_MONOTONIC), c0 = seconds(CLOCK_PROCESS_CPUTIME_ID);
        status = mt_match(all, res->n_rows, &res->m, &res->match);
        double t1 = seconds(CLOCK_MONOTONIC), c1 = seconds(CLOCK_PROCESS_CPUTIME_ID);
        if (status == MT_OK) {
            rows_compact(res, all);
            all = NULL;
        }
        if (status == MT_OK)
            status = mt_clock_fit(res->rows, res->n_rows, res->m, ranks, n_ranks, opts, res->clocks);
        res->match_s = t1 - t0;
        res->fit_s = seconds(CLOCK_MONOTONIC) - t1;
        res->match_cpu_s = c1 - c0;
        res->fit_cpu_s = seconds(CLOCK_PROCESS_CPUTIME_ID) - c1;
    }
    free(all);
    /* Everyone learns the root's status before anyone waits on a bcast. */
    if ((st = comm->allreduce_max(comm->ctx, &status, 1)))
        status = st;
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
