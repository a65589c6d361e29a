/* The Flight Recorder dumps of the input list planned for reading
 * (mergetrace/discover.h): each one's rank and reading process, the
 * list of them as bytes (mergetrace/fr_share.h), process 0's dumps
 * given back their files and, whole, analysed there, and the dumps made
 * of the NCCL plugin's files of a job that hung. */
#define _POSIX_C_SOURCE 200809L /* PATH_MAX */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mergetrace/discover.h"
#include "mergetrace/fr_share.h"
#include "mergetrace/rank.h"

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

int mt_discover_fr_plan(mt_discover_list_t *l, const mt_rankmap_t *map, int n_procs, const char *tag,
                        void (*note)(void *ctx, const char *line), void *ctx, mt_buf_t *out)
{
    char line[2 * PATH_MAX + 256];
    size_t n = l->n_fr;
    int32_t *rank = malloc((n ? n : 1) * sizeof *rank);
    if (!rank)
        return -1;
    int code = 0;
    for (size_t i = 0; i < n && !code; i++) {
        const char *p = l->fr[i].path;
        int64_t r = map ? mt_rankmap_lookup(map, p) : -1;
        if (r < 0)
            r = mt_fr_rank_from_name(p);
        if (r < 0 || r >= MT_FR_MAX_RANKS) {
            snprintf(line, sizeof line,
                     "%s%s: a Flight Recorder dump with no rank in its file name (PyTorch names them "
                     "<prefix><rank>, e.g. comm_lib_trace_rank_3): give --rank-map FILE",
                     tag, p);
            note(ctx, line);
            code = 1;
            break;
        }
        rank[i] = (int32_t)r;
        for (size_t k = 0; k < i; k++) /* each earlier dump of the rank told */
            if (rank[k] == rank[i]) {
                snprintf(line, sizeof line, "%s%s and %s: two Flight Recorder dumps of rank %d", tag, l->fr[k].path,
                         p, (int)rank[i]);
                note(ctx, line);
                code = 1;
            }
    }
    if (!code)
        assign_blocks(l->fr, rank, n, n_procs);
    for (size_t i = 0; i < n && !code; i++)
        if (mt_fr_share_put(out, rank[i], l->fr[i].owner, l->fr[i].path) != MT_OK)
            code = -1;
    free(rank);
    return code;
}

void mt_discover_fr_attach(const mt_discover_list_t *l, const void *list, size_t len, mt_fr_job_t *fr)
{
    /* the plan gave every file a distinct rank, and the file's rank is the
     * one it was read with */
    size_t pos = 0;
    mt_fr_share_rec_t r;
    for (size_t k = 0; k < l->n_fr && mt_fr_share_next(list, len, &pos, &r); k++) {
        long at = mt_fr_job_find(fr, r.rank);
        if (at >= 0) {
            fr->paths[at] = l->fr[k].path;
            fr->bytes[at] = l->fr[k].bytes;
        }
    }
}

/* What mt_discover_fr_whole's left_out says through. */
typedef struct left_out_note {
    void (*note)(void *ctx, const char *line);
    void *ctx;
} left_out_note_t;

/* A dump --force leaves out (mt_fr_left_out_fn), said. */
static void left_out(const void *ctx, const char *path, int rank, const char *why)
{
    const left_out_note_t *n = ctx;
    char line[PATH_MAX + 1200];
    snprintf(line, sizeof line, "warning: %s: rank %d: %s: left out (--force)", path, rank, why);
    n->note(n->ctx, line);
}

mt_status_t mt_discover_fr_whole(const mt_discover_list_t *l, const void *list, size_t llen, const uint8_t *all,
                                 size_t len, bool force, bool quiet, const char *tag,
                                 void (*note)(void *ctx, const char *line), void *ctx, mt_fr_job_t *fr, char *msg,
                                 size_t cap)
{
    mt_status_t st = mt_fr_job_unpack(fr, l->n_fr, all, len);
    if (st != MT_OK) {
        snprintf(msg, cap, "%s", st == MT_ERR_NOMEM ? "out of memory" : "internal error: a packed dump");
        return MT_ERR_NOMEM;
    }
    mt_discover_fr_attach(l, list, llen, fr);
    mt_error_t err;
    const char *path = "?";
    left_out_note_t lo = {.note = note, .ctx = ctx};
    st = mt_fr_job_analyse(fr, force, note && !quiet ? left_out : NULL, &lo, &err, &path);
    if (st == MT_ERR_FORMAT) {
        snprintf(msg, cap, "%s%s: rank %d: %s (--force leaves such a dump out)", tag, path, err.rank, err.msg);
        return st;
    }
    if (st != MT_OK) {
        snprintf(msg, cap, "out of memory");
        return MT_ERR_NOMEM;
    }
    msg[0] = '\0';
    return MT_OK;
}

mt_status_t mt_discover_fr_from_nccl(const mt_discover_list_t *l, const mt_nccl_job_t *nj, const char *tag,
                                     mt_fr_job_t *fr, char *msg, size_t cap)
{
    memset(fr, 0, sizeof *fr);
    mt_error_t err;
    mt_error_clear(&err);
    snprintf(msg, cap, "out of memory");
    bool any = false;
    size_t n = 0;
    for (size_t i = 0; i < nj->n; i++) {
        any |= nj->r[i].info.in_flight > 0;
        n += nj->r[i].info.is_nccl == MT_NCCL_FMT_PLUGIN && !nj->r[i].info.left_out;
    }
    if (!any) {
        msg[0] = '\0';
        return MT_OK;
    }
    mt_nccl_file_t **nf = calloc(n ? n : 1, sizeof *nf);
    int32_t *ranks = calloc(n ? n : 1, sizeof *ranks);
    mt_status_t st = mt_fr_job_alloc(fr, n) == MT_OK && nf && ranks ? MT_OK : MT_ERR_NOMEM;
    size_t k = 0;
    for (size_t i = 0; st == MT_OK && i < nj->n; i++) {
        const mt_nccl_rank_t *r = &nj->r[i];
        if (r->info.is_nccl != MT_NCCL_FMT_PLUGIN || r->info.left_out)
            continue;
        const mt_discover_file_t *in = &l->files[r->file_index];
        mt_error_clear(&err);
        st = mt_nccl_load(in->path, &nf[k], &err);
        if (st != MT_OK) {
            snprintf(msg, cap, "%s%s: rank %d: read again for the hang analysis: %s", tag, in->path, r->rank,
                     err.msg[0] ? err.msg : mt_status_str(st));
            break;
        }
        ranks[k] = r->rank;
        fr->paths[k] = in->path;
        fr->bytes[k] = in->bytes;
        k++;
    }
    if (st == MT_OK) {
        mt_error_clear(&err);
        st = mt_fr_job_from_nccl(fr, (const mt_nccl_file_t *const *)nf, ranks, k, &err);
        if (st != MT_OK)
            snprintf(msg, cap, "%sthe hang analysis of the NCCL plugin's files: %s", tag,
                     err.msg[0] ? err.msg : mt_status_str(st));
    }
    for (size_t i = 0; i < k; i++)
        mt_nccl_file_free(nf[i]);
    free(nf);
    free(ranks);
    if (st != MT_OK)
        mt_fr_job_free(fr);
    else
        msg[0] = '\0';
    return st;
}
