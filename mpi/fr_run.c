/* Flight Recorder dumps in the program: the MPI sequence and the messages.
 * Ranked and shared on process 0 (src/discover/fr_plan.c), read by their
 * processes, gathered packed on process 0 for the hang analysis (the
 * bytes on both sides: src/fr/fr_share.c; the whole dumps' analysis:
 * src/discover/fr_plan.c); alone, the whole run (the merged trace of the
 * entries, then the outputs: outputs_fr_alone); beside traces, a verdict
 * the job's outputs carry (outputs.c). */
#define _POSIX_C_SOURCE 200809L
#include "fr_run.h"

#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm_mpi.h"
#include "mergetrace/outdir.h"
#include "merged_io.h"
#include "outputs.h"
#include "procs.h"
#include "say.h"

/* Process 0: each dump's rank and owner, checked, as the list's bytes
 * (mt_discover_fr_plan). 0, or an exit code after saying why. */
static int plan(const options_t *o, mt_discover_list_t *files, const mt_rankmap_t *map, int n_procs, mt_buf_t *out)
{
    int rc = mt_discover_fr_plan(files, map, n_procs, o->job_tag, say_note, NULL, out);
    if (rc < 0)
        say("mergetrace: out of memory\n");
    return rc < 0 ? MT_EXIT_ERROR : rc ? MT_EXIT_BAD_INPUT : 0;
}

/* Collective: the analysis from what it reads of the dumps
 * (mergetrace/fr_hang.h, "The analysis at scale"). 0 with fr filled on
 * process 0; -1 when the whole dumps must go to process 0 instead (a dump
 * without a completed collective in common with the reference, or dumps
 * of different jobs); or an exit code (said). The same on every
 * process. */
static int summarise(MPI_Comm comm, const mt_comm_t *mc, const mt_discover_list_t *files, const mt_buf_t *list,
                     mt_fr_local_t *mine, size_t n_mine, mt_fr_job_t *fr)
{
    int me = mc->rank;
    /* 1. the heads */
    mt_buf_t b = {0};
    bool oom = mt_fr_heads_pack(mine, n_mine, &b) != MT_OK;
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
    int64_t hd[2] = {0, -1}; /* 0 go on, 1 every entry, 2 out of memory; ref */
    if (me == 0) {
        if (st != MT_OK || !mt_fr_heads_unpack(all, all_len, files->n_fr, fr, &keep, &nkeep))
            hd[0] = 2;
        else if (getenv("MERGETRACE_FR_ENTRIES")) /* tests: the whole dumps, for comparing */
            hd[0] = 1;
        if (!hd[0])
            mt_discover_fr_attach(files, list->data, list->len, fr);
        hd[1] = fr->n ? fr->dumps[0].rank : -1;
    }
    free(all);
    procs_bcast(hd, 2, MPI_INT64_T, 0, comm);
    if (hd[0]) {
        free(keep);
        if (me == 0)
            mt_fr_job_free(fr);
        if (hd[0] == 2 && me == 0)
            say("mergetrace: out of memory\n");
        return hd[0] == 2 ? MT_EXIT_ERROR : -1;
    }
    void *kb = keep;
    size_t klen = nkeep * sizeof *keep;
    if (comm_mpi_bcast_bytes(comm, me != 0 || keep || !nkeep, &kb, &klen)) {
        free(keep);
        if (me == 0) {
            mt_fr_job_free(fr);
            say("mergetrace: out of memory\n");
        }
        return MT_EXIT_ERROR;
    }
    keep = kb;
    nkeep = klen / sizeof *keep;
    /* the reference dump, from the process that read it */
    int owner = mt_fr_share_owner(list->data, list->len, (int32_t)hd[1]);
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
            mt_fr_job_free(fr);
            say("mergetrace: out of memory\n");
        }
        return MT_EXIT_ERROR;
    }
    mc->bcast(mc->ctx, b.data, rlen, owner);
    /* 3. each dump fitted to the reference and trimmed */
    mt_buf_t t = {0};
    int pairs = 0;
    int flag = mt_fr_fit_trim_pack(mine, n_mine, (const uint8_t *)b.data, rlen, (int32_t)hd[1], keep, nkeep, &t, &pairs);
    mt_buf_free(&b);
    free(keep);
    int64_t pv[2] = {flag, pairs}, pall[2] = {0, 0};
    procs_allreduce(pv, pall, 1, MPI_INT64_T, MPI_MAX, comm);
    procs_allreduce(pv + 1, pall + 1, 1, MPI_INT64_T, MPI_SUM, comm);
    if (pall[0]) {
        mt_buf_free(&t);
        if (me == 0) {
            mt_fr_job_free(fr);
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
    if (me == 0 && code)
        say("mergetrace: out of memory\n");
    if (me == 0 && !code) {
        mt_error_t err;
        mt_error_clear(&err);
        st = mt_fr_job_take_trimmed(fr, all, all_len, (int)pall[1], &err);
        if (st == MT_ERR_FORMAT) /* dumps of different jobs: said, or left out with --force, on every entry */
            code = -1;
        else if (st != MT_OK) {
            say("mergetrace: out of memory\n");
            code = MT_EXIT_ERROR;
        }
        if (code)
            mt_fr_job_free(fr);
    }
    free(all);
    procs_bcast(&code, 1, MPI_INT, 0, comm);
    return code;
}

/* Collective: every dump's entries to process 0 (packed), analysed there
 * as a whole. 0 or an exit code (said), the same on every process. */
static int gather_all(MPI_Comm comm, const mt_comm_t *mc, const options_t *o, const mt_discover_list_t *files,
                      const mt_buf_t *list, const mt_fr_local_t *mine, size_t n_mine, mt_fr_job_t *fr)
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
    if (mc->rank == 0 && code)
        say("mergetrace: out of memory\n");
    if (mc->rank == 0 && !code) {
        char msg[PATH_MAX + 1400];
        mt_status_t ast = mt_discover_fr_whole(files, list->data, list->len, all, all_len, o->force, o->quiet,
                                               o->job_tag, say_note, NULL, fr, msg, sizeof msg);
        if (ast != MT_OK)
            say("mergetrace: %s\n", msg);
        code = ast == MT_OK ? 0 : options_exit_code(ast);
    }
    free(all);
    procs_bcast(&code, 1, MPI_INT, 0, comm);
    return code;
}

/* Collective: the verdict's world, dump time (wd[0], wd[1]) and each
 * rank's offset to the reference clock (returned, wd[0] of them; malloc'd)
 * from process 0 to every process. NULL on every process after process 0
 * said "out of memory". */
static int64_t *bcast_offsets(MPI_Comm comm, const mt_fr_job_t *fr, int64_t wd[2])
{
    int me;
    procs_comm_rank(comm, &me);
    wd[1] = me == 0 ? fr->hang.dump_ns : MT_FR_NONE;
    procs_bcast(&wd[1], 1, MPI_INT64_T, 0, comm);
    /* process 0's copy: the others' is comm_mpi_bcast_bytes's */
    size_t len = me == 0 ? (size_t)fr->hang.world * sizeof(int64_t) : 0;
    void *off = me == 0 ? malloc(len ? len : 1) : NULL;
    if (off && len)
        memcpy(off, fr->hang.offset_ns, len);
    if (comm_mpi_bcast_bytes(comm, me != 0 || off, &off, &len)) {
        if (me == 0) {
            free(off);
            say("mergetrace: out of memory\n");
        }
        return NULL;
    }
    wd[0] = (int64_t)(len / sizeof(int64_t));
    return off;
}

/* This process's dumps, consecutive ranks (assign_blocks), as one input of
 * the merged writer. */
typedef struct block {
    const mt_fr_local_t *d; /* sorted by rank */
    size_t n;
} block_t;

static mt_status_t trace_block(const mt_merged_input_t *in, bool first, mt_write_fn write, void *ctx, uint64_t *events,
                               mt_error_t *err)
{
    (void)err;
    const block_t *b = in->item;
    return mt_fr_locals_trace(b->d, b->n, first, write, ctx, events);
}

/* Collective, dumps alone: the merged trace of the entries, each process
 * writing the dumps it read (merged_write_format) as one piece (they are
 * consecutive ranks: assign_blocks), on the clocks process 0's analysis
 * fitted. 0, or MT_EXIT_ERROR on every process after process
 * 0 said why. */
static int write_merged(MPI_Comm comm, const options_t *o, const char *path, const mt_fr_job_t *fr, mt_fr_local_t *mine,
                        size_t n_mine)
{
    int me;
    procs_comm_rank(comm, &me);
    int64_t wd[2];
    int64_t *off = bcast_offsets(comm, fr, wd);
    if (!off)
        return MT_EXIT_ERROR;
    mt_fr_locals_place(mine, n_mine, off, wd[0], wd[1]);
    /* one input: this process's block of ranks, named by its first */
    block_t blk = {.d = mine, .n = n_mine};
    mt_merged_input_t in = {.path = n_mine ? mine[0].path : NULL, .rank = n_mine ? mine[0].d.rank : 0, .item = &blk};
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

int fr_stage(MPI_Comm comm, const mt_comm_t *mc, const options_t *o, mt_discover_list_t *files,
             const mt_rankmap_t *map, mt_fr_job_t *fr)
{
    memset(fr, 0, sizeof *fr);
    int me = mc->rank;
    /* how many dumps and traces, and the plan, from process 0 */
    int64_t counts[3] = {0, 0, 0}; /* dumps, traces, -code of the plan */
    mt_buf_t list = {0};
    if (me == 0) {
        counts[0] = (int64_t)files->n_fr;
        counts[1] = (int64_t)files->n;
        if (files->n_fr) {
            int code = plan(o, files, map, o->local ? 1 : mc->size, &list); /* --local: the dumps are on process 0's disk */
            counts[2] = -code;
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
    void *lb = list.data;
    size_t llen = list.len;
    if (comm_mpi_bcast_bytes(comm, true, &lb, &llen)) {
        if (me == 0)
            say("mergetrace: out of memory\n");
        mt_buf_free(&list);
        return MT_EXIT_ERROR;
    }
    if (me != 0)
        list = (mt_buf_t){.data = lb, .len = llen, .cap = llen + 1};

    /* each process reads its share and keeps it; the lowest failing dump
     * says why */
    mt_fr_local_t *mine = NULL;
    size_t n_mine = 0;
    long bad = -1;
    char msg[1400] = "";
    mt_status_t st = MT_OK;
    mt_fr_share_read(list.data, list.len, me, &mine, &n_mine, &bad, msg, sizeof msg, &st);
    int mine_bad = bad >= 0 ? (int)bad : INT_MAX, lowest = INT_MAX;
    procs_allreduce(&mine_bad, &lowest, 1, MPI_INT, MPI_MIN, comm);
    if (lowest != INT_MAX) {
        if (mine_bad == lowest)
            say("mergetrace: %s%s\n", o->job_tag, msg);
        int code = mine_bad == lowest ? options_exit_code(st) : 0;
        mt_fr_locals_free(mine, n_mine);
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
    int hung = fr->hung;
    procs_bcast(&hung, 1, MPI_INT, 0, comm);
    fr->hung = hung != 0;
    if (code || counts[1]) { /* beside traces: the job's outputs carry the verdict */
        mt_fr_locals_free(mine, n_mine);
        /* the processes that merge the traces read the dumps again (not
         * with --local: a dump may be on process 0's disk alone) */
        if (!code && !o->no_merge && !o->local) {
            fr->plan = list;
            list = (mt_buf_t){0};
        }
        mt_buf_free(&list);
        return code ? code : -1;
    }
    mt_buf_free(&list);

    /* dumps alone: the whole run */
    merged_out_t m = {0};
    code = outputs_prepare(comm, o, files, &m);
    if (code == MT_EXIT_OK && !o->no_merge)
        code = write_merged(comm, o, m.path, fr, mine, n_mine);
    mt_fr_locals_free(mine, n_mine);
    if (code == MT_EXIT_OK && me == 0)
        code = outputs_fr_alone(o, fr, o->no_merge ? NULL : m.path);
    procs_bcast(&code, 1, MPI_INT, 0, comm);
    return code;
}

int fr_from_nccl(const options_t *o, const mt_discover_list_t *files, const mt_nccl_job_t *nj, mt_fr_job_t *fr)
{
    if (fr->any)
        return 0;
    char msg[PATH_MAX + 1400];
    mt_status_t st = mt_discover_fr_from_nccl(files, nj, o->job_tag, fr, msg, sizeof msg);
    if (st != MT_OK)
        say("mergetrace: %s\n", msg);
    return options_exit_code(st);
}

int fr_keep_tcolls(MPI_Comm comm, const mt_ingest_t *L, mt_fr_job_t *fr)
{
    if (!fr || !fr->plan.len) /* no dump to place in a merged trace (fr_stage kept no plan) */
        return MT_EXIT_OK;
    bool oom = mt_fr_tcolls_take(L->rows, L->n_rows, &fr->tcolls, &fr->ntcolls) != MT_OK;
    if (comm_mpi_agree(comm, oom)) {
        int me;
        procs_comm_rank(comm, &me);
        if (me == 0)
            say("mergetrace: out of memory\n");
        return MT_EXIT_ERROR;
    }
    return MT_EXIT_OK;
}

struct fr_merged {
    mt_fr_part_t *parts; /* mt_fr_parts_build's */
    size_t n;
};

/* mt_merged_input_t.after: a rank's dump after its events. */
static mt_status_t write_part(const void *item, mt_write_fn write, void *ctx, uint64_t *events)
{
    const mt_fr_part_t *p = item;
    return mt_fr_trace_rank_merged(&p->d, &p->p, p->clock, p->end_ns, write, ctx, events);
}

static void merged_free(fr_merged_t *m)
{
    if (!m)
        return;
    mt_fr_parts_free(m->parts, m->n);
    free(m);
}

/* Collective: the ranks whose dumps the analysis kept (--force leaves a
 * dump of another job out), sorted, from process 0 into *kept (malloc'd)
 * and *nk. 0, or 1 on every process after process 0 said "out of
 * memory". */
static int bcast_kept(MPI_Comm comm, const mt_fr_job_t *fr, int32_t **kept, size_t *nk)
{
    int me;
    procs_comm_rank(comm, &me);
    void *b = NULL;
    size_t len = 0;
    if (me == 0) {
        b = malloc((fr->n ? fr->n : 1) * sizeof **kept);
        for (size_t i = 0; b && i < fr->n; i++)
            ((int32_t *)b)[i] = fr->dumps[i].rank;
        len = fr->n * sizeof **kept;
    }
    if (comm_mpi_bcast_bytes(comm, me != 0 || b, &b, &len)) {
        if (me == 0) {
            free(b);
            say("mergetrace: out of memory\n");
        }
        return 1;
    }
    *kept = b;
    *nk = len / sizeof **kept;
    return 0;
}

int fr_merged_prepare(MPI_Comm comm, const options_t *o, const mt_fr_job_t *fr, const mt_ingest_t *L,
                      mt_merged_input_t *mi, size_t n_mi, fr_merged_t **out)
{
    *out = NULL;
    /* the plan: every process has it or none (dumps made from the NCCL
     * plugin's files have none, and their job is on process 0 alone) */
    if (!fr || !fr->plan.len || o->no_merge)
        return MT_EXIT_OK;
    int me;
    procs_comm_rank(comm, &me);
    int64_t wd[2];
    int64_t *off = bcast_offsets(comm, fr, wd);
    if (!off)
        return MT_EXIT_ERROR;
    int32_t *kept = NULL;
    size_t nk = 0;
    if (bcast_kept(comm, fr, &kept, &nk)) {
        free(off);
        return MT_EXIT_ERROR;
    }
    /* each merged rank's trace's span (L's results) */
    mt_fr_span_t *spans = malloc((n_mi ? n_mi : 1) * sizeof *spans);
    for (size_t k = 0; spans && k < n_mi; k++) {
        spans[k] = (mt_fr_span_t){.rank = mi[k].rank};
        for (size_t i = 0; i < L->n_res; i++)
            if (L->res[i].rank == mi[k].rank && !L->res[i].nccl.is_nccl && L->res[i].status == MT_OK) {
                spans[k].first_ns = L->res[i].sum.first_ns;
                spans[k].last_ns = L->res[i].sum.last_ns;
            }
    }
    const mt_fr_parts_in_t in = {.plan = fr->plan.data,
                                 .plan_len = fr->plan.len,
                                 .kept = kept,
                                 .n_kept = nk,
                                 .tcolls = fr->tcolls,
                                 .ntcolls = fr->ntcolls,
                                 .labels = L->labels,
                                 .offset_ns = off,
                                 .world = wd[0],
                                 .dump_ns = wd[1]};
    fr_merged_t *m = calloc(1, sizeof *m);
    mt_error_t err;
    mt_error_clear(&err);
    mt_status_t st = m && spans ? mt_fr_parts_build(&in, spans, n_mi, &m->parts, &m->n, &err) : MT_ERR_NOMEM;
    for (size_t i = 0; st == MT_OK && i < m->n; i++) {
        mt_merged_input_t *k = &mi[m->parts[i].input];
        m->parts[i].clock = k->has_clock ? &k->clock : NULL;
        k->after = write_part;
        k->after_item = &m->parts[i];
    }
    free(spans);
    free(off);
    free(kept);
    char msg[1400] = "";
    if (st == MT_ERR_NOMEM)
        snprintf(msg, sizeof msg, "out of memory");
    else if (st != MT_OK)
        mt_error_format(&err, msg, sizeof msg);
    /* the lowest failing process says why */
    int first = comm_mpi_first_failed(comm, st != MT_OK);
    if (first >= 0) {
        if (me == first)
            say("mergetrace: %s%s (reading it again for the merged trace)\n", o->job_tag, msg);
        int code = me == first ? options_exit_code(st) : 0;
        for (size_t k = 0; k < n_mi; k++)
            mi[k].after = NULL;
        merged_free(m);
        return comm_mpi_agree(comm, code);
    }
    *out = m;
    return MT_EXIT_OK;
}

void fr_merged_done(MPI_Comm comm, const mt_fr_job_t *fr, fr_merged_t *m, bool written, mt_fr_placed_t *placed)
{
    memset(placed, 0, sizeof *placed);
    if (!fr || !fr->plan.len) /* as fr_merged_prepare decides */
        return;
    /* the tally's fields by how they reduce, each run contiguous */
    _Static_assert(offsetof(mt_fr_tally_t, parts) == 3 * sizeof(int64_t) &&
                       offsetof(mt_fr_tally_t, gap_max_ns) == offsetof(mt_fr_tally_t, lag_max_ns) + sizeof(int64_t),
                   "mt_fr_tally_t's layout");
    mt_fr_tally_t t, all;
    mt_fr_parts_tally(m ? m->parts : NULL, m ? m->n : 0, &t);
    merged_free(m);
    procs_allreduce(&t.aligned, &all.aligned, 4, MPI_INT64_T, MPI_SUM, comm);
    procs_allreduce(&t.pairs_min, &all.pairs_min, 1, MPI_INT64_T, MPI_MIN, comm);
    procs_allreduce(&t.lag_max_ns, &all.lag_max_ns, 2, MPI_INT64_T, MPI_MAX, comm);
    int me;
    procs_comm_rank(comm, &me);
    if (me == 0)
        mt_fr_placed_from(&all, (int64_t)fr->n, written, placed);
}
