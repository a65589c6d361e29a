/* Loading (load.h): process 0 lists the inputs and reads the rank map,
 * every process gets both and loads its share of the files one trace at a
 * time, keeping compact per-rank results (summary, collective rows,
 * ProfilerStep ranges, packed analyses, the merged write's first pass); a
 * process that fails tells the others at once, everyone agrees on failure,
 * and the per-file results are gathered on process 0. */
#define _DEFAULT_SOURCE /* strdup, st_mtim */
#include "load.h"
#include "say.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "comm_mpi.h"
#include "mergetrace/heap.h"
#include "procs.h"

/* Process 0 reads a small text file (the rank map) and broadcasts it, so
 * every process sees the same bytes. Collective. 0; 1 when it cannot be
 * read (missing, a read error, out of memory); 2 when it is not a regular
 * file or larger than MT_SIDE_FILE_MAX (msg says which). */
static int bcast_file(MPI_Comm comm, const char *path, char **text, size_t *len, char *msg, size_t cap, int me)
{
    int rc = 0;
    char *buf = NULL;
    size_t got = 0;
    if (me == 0) {
        mt_error_t err;
        mt_error_clear(&err);
        mt_status_t st = mt_input_read_small(path, MT_SIDE_FILE_MAX, "--rank-map", &buf, &got, &err);
        rc = st == MT_OK ? 0 : st == MT_ERR_IO ? 1 : 2; /* 2: not a regular file, or too large */
        if (st != MT_OK)
            snprintf(msg, cap, "%s", err.msg);
    }
    procs_bcast(&rc, 1, MPI_INT, 0, comm);
    void *b = buf;
    if (!rc && comm_mpi_bcast_bytes(comm, true, &b, &got)) {
        snprintf(msg, cap, "out of memory");
        rc = 1;
    }
    if (rc) {
        free(b); /* process 0's, or NULL */
        return rc;
    }
    *text = b;
    *len = got;
    return 0;
}

/* Broadcast the input list from process 0 (mt_discover_pack). Collective. */
static int bcast_inputs(MPI_Comm comm, mt_discover_list_t *l, int me)
{
    mt_buf_t b = {0};
    bool ok = me != 0 || mt_discover_pack(l, &b) == 0;
    void *data = b.data;
    size_t len = b.len;
    if (comm_mpi_bcast_bytes(comm, ok, &data, &len)) {
        mt_buf_free(&b);
        return 1;
    }
    int rc = 0;
    if (me != 0) {
        mt_discover_free(l);
        rc = mt_discover_unpack(data, len, l) != 0;
        free(data);
    }
    mt_buf_free(&b);
    return comm_mpi_agree(comm, rc);
}

/* --local, collective: every process expands its own PATHs, and process 0
 * gets the union, sorted by path (then process) as one process would list
 * it, each file owned by the process that listed it (one listed by several
 * processes of a node: by one of them, mt_discover_share_node). Returns 0, or
 * the exit code (the same everywhere) after the lowest failing process
 * said why. The records: mt_discover_local_pack. */
static int collect_local(MPI_Comm comm, const options_t *o, mt_discover_list_t *files, int me, int n_procs)
{
    mt_comm_t mc = *mt_comm_serial();
    if (procs_mpi() || procs_threads())
        comm_mpi_init(&mc, &comm);
    char msg[1400] = "";
    int rc = mt_discover_collect(o->inputs, o->n_inputs, o->recursive, files, msg, sizeof msg);
    mt_buf_t b = {0}, sb = {0};
    if (!rc && mt_discover_local_pack(files, me, &b, &sb)) {
        snprintf(msg, sizeof msg, "out of memory");
        rc = 1;
    }
    int cand = rc ? me : n_procs, first = n_procs;
    procs_allreduce(&cand, &first, 1, MPI_INT, MPI_MIN, comm);
    if (first < n_procs) {
        /* which process: with --local one path may be on every node */
        if (me == first && n_procs > 1)
            say("mergetrace: --local: process %d: %s\n", me, msg);
        else if (me == first)
            say("mergetrace: %s\n", msg);
        mt_buf_free(&b);
        mt_buf_free(&sb);
        return comm_mpi_agree(comm, rc) == 2 ? MT_EXIT_BAD_INPUT : MT_EXIT_ERROR;
    }
    void *all = NULL, *sall = NULL;
    size_t len = 0, slen = 0;
    int bad = mc.gatherv(mc.ctx, b.data, b.len, &all, &len, 0) != MT_OK;
    bad |= mc.gatherv(mc.ctx, sb.data, sb.len, &sall, &slen, 0) != MT_OK;
    mt_buf_free(&b);
    mt_buf_free(&sb);
    if (me != 0)
        mt_discover_free(files); /* the shared list comes from process 0 */
    if (me == 0 && !bad) /* process 0's own Flight Recorder dumps stay: it reads them all (fr_stage) */
        bad = mt_discover_local_union(all, len, sall, slen, n_procs, files) != 0;
    free(all);
    free(sall);
    if (comm_mpi_agree(comm, bad)) {
        if (me == 0)
            say("mergetrace: out of memory sharing the file list\n");
        return MT_EXIT_ERROR;
    }
    return 0;
}

/* A process that fails tells every other process at once (tag FAIL_TAG,
 * the failed file's index), so they stop loading within one read chunk
 * instead of finishing their share first; the agreement on status
 * afterwards is unchanged. A process stops only a file whose index is above
 * a failure it has heard of: every file below the lowest failed index is
 * always loaded to the end, so the error reported (the lowest index) is the
 * same from run to run, whichever process failed first. */
#define FAIL_TAG 9001

typedef struct fail_note {
    MPI_Comm comm;
    int me, n_procs;
    bool sent, seen;
    int payload;      /* the index of the file this process failed on */
    int received;     /* notes received so far */
    int lowest;       /* the lowest failed index heard of; INT_MAX: none */
    int current;      /* the index of the file being loaded */
    procs_req_t *reqs;
    double t0;        /* when the load began (the progress line's rate) */
} fail_note_t;

/* Receives the notes that have arrived; true when one names a file below
 * the one being loaded. */
static bool other_failed(void *ctx)
{
    fail_note_t *fn = ctx;
    while (fn->n_procs > 1 && fn->received < fn->n_procs - 1 &&
           procs_iprobe(PROCS_ANY_SOURCE, FAIL_TAG, fn->comm)) {
        int idx;
        procs_recv(&idx, 1, MPI_INT, PROCS_ANY_SOURCE, FAIL_TAG, fn->comm, NULL);
        fn->received++;
        fn->seen = true;
        if (idx < fn->lowest)
            fn->lowest = idx;
    }
    return fn->lowest < fn->current;
}

/* mt_ingest_share_cb_t.stop_before: index is the file to load next. */
static bool stop_before(void *ctx, int32_t index)
{
    fail_note_t *fn = ctx;
    fn->current = index;
    return other_failed(fn);
}

/* mt_ingest_share_cb_t.failed: this process failed on file index. */
static void tell_others(void *ctx, int32_t index)
{
    fail_note_t *fn = ctx;
    fn->payload = index;
    if (fn->sent || fn->n_procs < 2)
        return;
    fn->reqs = malloc((size_t)fn->n_procs * sizeof *fn->reqs);
    if (!fn->reqs)
        return; /* the status agreement still ends everyone, only later */
    for (int p = 0; p < fn->n_procs; p++)
        if (p == fn->me)
            procs_req_null(&fn->reqs[p]);
        else
            procs_isend(&fn->payload, 1, MPI_INT, p, FAIL_TAG, fn->comm, &fn->reqs[p]);
    fn->sent = true;
}

/* mt_ingest_share_cb_t.progress, process 0 with --progress: a line that
 * rewrites itself. */
static void progress(void *ctx, size_t done, size_t owned, uint64_t bytes)
{
    const fail_note_t *fn = ctx;
    double dt = procs_wtime() - fn->t0;
    fprintf(stderr, "\rmergetrace: process 0 loaded %zu/%zu files, %.1f MB/s   ", done, owned,
            dt > 0 ? bytes / 1e6 / dt : 0.0);
}

/* After the status agreement: complete our sends and receive exactly the
 * notes the other failed processes sent us, so none is left in flight. */
static void settle_notes(fail_note_t *fn)
{
    int sent = fn->sent, senders = 0;
    procs_allreduce(&sent, &senders, 1, MPI_INT, MPI_SUM, fn->comm);
    if (fn->sent) {
        procs_waitall(fn->n_procs, fn->reqs);
        senders--;
    }
    for (int i = fn->received; i < senders; i++) {
        int x;
        procs_recv(&x, 1, MPI_INT, PROCS_ANY_SOURCE, FAIL_TAG, fn->comm, NULL);
    }
    free(fn->reqs);
    fn->reqs = NULL;
}

int load_prepare(MPI_Comm comm, const options_t *o, mt_discover_list_t *files, mt_rankmap_t **map,
                 mt_pp_markers_t **markers)
{
    int me, n_procs;
    procs_comm_rank(comm, &me);
    procs_comm_size(comm, &n_procs);
    char msg[1400] = "";
    int rc = 0;
    /* --local changes who lists the files: every process or none. */
    int some = comm_mpi_agree(comm, o->local), not_all = comm_mpi_agree(comm, !o->local);
    if (some && not_all) {
        if (me == 0)
            say("mergetrace: --local: give it to every process or to none\n");
        return MT_EXIT_USAGE;
    }
    if (o->local) {
        rc = collect_local(comm, o, files, me, n_procs);
        if (rc)
            return rc;
    } else {
        if (me == 0)
            rc = mt_discover_collect(o->inputs, o->n_inputs, o->recursive, files, msg, sizeof msg);
        procs_bcast(&rc, 1, MPI_INT, 0, comm);
        if (rc) {
            if (me == 0)
                say("mergetrace: %s%s\n", o->job_tag, msg);
            return rc == 2 ? MT_EXIT_BAD_INPUT : MT_EXIT_ERROR;
        }
    }
    if (bcast_inputs(comm, files, me)) {
        if (me == 0)
            say("mergetrace: out of memory sharing the file list\n");
        return MT_EXIT_ERROR;
    }
    if (!o->local) /* --local: each file stays with the process that listed it */
        mt_discover_assign(files, n_procs);

    if (o->rank_map) {
        char *text = NULL;
        size_t len = 0;
        int bad = bcast_file(comm, o->rank_map, &text, &len, msg, sizeof msg, me);
        if (bad) {
            free(text);
            if (me == 0)
                say("mergetrace: %s\n", msg);
            return bad == 2 ? MT_EXIT_BAD_INPUT : MT_EXIT_ERROR;
        }
        /* every process parses the same bytes, but an allocation may fail
         * on one alone: agreed, said once (no process left waiting) */
        mt_error_t err;
        mt_status_t ps = mt_rankmap_parse(text, len, o->rank_map, map, &err);
        free(text);
        if (ps != MT_OK)
            mt_error_format(&err, msg, sizeof msg);
        int first = comm_mpi_first_failed(comm, ps != MT_OK);
        if (first >= 0) {
            if (me == first)
                say("mergetrace: %s\n", msg);
            int code = ps == MT_ERR_NOMEM ? MT_EXIT_ERROR : MT_EXIT_BAD_INPUT;
            return comm_mpi_agree(comm, ps != MT_OK ? code : 0);
        }
    }
    /* Every process compiles the same options: the same outcome everywhere. */
    mt_error_t err;
    mt_error_clear(&err);
    bool bad_markers = mt_pp_markers_compile(o->chunk_regex, (const char *const *)o->stage_regex, o->n_stage,
                                             (const int32_t *const *)o->stage_ranks, o->stage_n_ranks, markers,
                                             &err) != MT_OK;
    int first = comm_mpi_first_failed(comm, bad_markers); /* an allocation may fail on one process alone */
    if (first >= 0) {
        if (me == first)
            say("mergetrace: %s\n", err.msg[0] ? err.msg : "out of memory");
        return MT_EXIT_ERROR;
    }
    return -1;
}

int load_share(MPI_Comm comm, const mt_comm_t *mc, const options_t *o, const mt_discover_list_t *files,
               const mt_rankmap_t *map, const mt_pp_markers_t *markers, mt_ingest_t *L, mt_ingest_result_t **all,
               size_t *n_all, mt_timings_t *pt)
{
    int me = mc->rank, n_procs = mc->size;
    *all = NULL;
    *n_all = 0;
    mt_analysis_opts_t ao;
    mt_analysis_opts_init(&ao);
    ao.kernel_wait_ns = o->kernel_wait_ns;
    ao.project_ops = o->project_ops;
    ao.top_kernels = o->top_kernels;
    ao.markers = markers;
    bool ready = mt_ingest_init(L, files, me, &ao) == MT_OK;
    int local_status = ready ? MT_OK : MT_ERR_NOMEM;
    fail_note_t fn = {.comm = comm, .me = me, .n_procs = n_procs, .lowest = INT_MAX};
    mt_ingest_opts_t io = {.strict = o->strict, .merge = !o->no_merge, .only_file = files->n == 1, .map = map,
                           .should_stop = other_failed, .should_stop_ctx = &fn, .trace_freed = mt_heap_release};
    double t0 = procs_wtime(), c0 = timings_cpu();
    fn.t0 = t0;
    mt_ingest_share_cb_t cb = {.stop_before = stop_before,
                               .failed = tell_others,
                               .progress = o->progress && me == 0 ? progress : NULL,
                               .ctx = &fn};
    if (ready)
        local_status = mt_ingest_share(L, &io, files, me, &cb);
    if (o->progress && me == 0)
        fprintf(stderr, "\r%60s\r", "");

    /* Everyone learns whether anyone failed before going on (no hangs). */
    int all_fail = comm_mpi_agree(comm, local_status != MT_OK || fn.seen);
    settle_notes(&fn);

    /* Gather the per-file results on process 0. */
    void *all_bytes = NULL;
    size_t all_len = 0;
    if (mc->gatherv(mc->ctx, L->res, L->n_res * sizeof *L->res, &all_bytes, &all_len, 0) != MT_OK)
        all_fail = 1;
    double t_load = procs_wtime() - t0;
    procs_allreduce(MPI_IN_PLACE, &t_load, 1, MPI_DOUBLE, MPI_MAX, comm);
    pt->seconds[MT_TPH_LOAD] = t_load;
    pt->load_cpu = timings_cpu() - c0;
    *all = all_bytes;
    *n_all = all_len / sizeof **all;
    if (me != 0 || !all_fail)
        return MT_EXIT_OK;
    /* One message: the failed file with the lowest index. */
    char msg[PATH_MAX + 1400];
    mt_status_t st = mt_ingest_failure_text(*all, *n_all, files, o->local && n_procs > 1, o->job_tag, msg, sizeof msg);
    say("mergetrace: %s\n", msg);
    return options_exit_code(st);
}
