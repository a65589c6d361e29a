/* Loading (load.h): process 0 lists the inputs and reads the rank map,
 * every process gets both and loads its share of the files one trace at a
 * time, keeping compact per-rank results (summary, collective rows,
 * ProfilerStep ranges, packed analyses, the merged write's first pass); a
 * process that fails tells the others at once, everyone agrees on failure,
 * and the per-file results are gathered on process 0. */
#define _DEFAULT_SOURCE /* strdup, st_mtim */
#include "load.h"
#include "say.h"

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
    long n = -1;
    char *buf = NULL;
    if (me == 0) {
        mt_error_t err;
        mt_error_clear(&err);
        /* a regular file of a sane size before it is opened: a FIFO blocked
         * here, /dev/zero was an empty map */
        mt_status_t cs = mt_input_check_file(path, MT_SIDE_FILE_MAX, "--rank-map", &err);
        bool okf = cs == MT_OK;
        FILE *f = okf ? fopen(path, "rb") : NULL;
        if (f && fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
            buf = malloc((size_t)n + 1);
            if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n)
                n = -1;
        } else {
            n = -1;
        }
        if (f)
            fclose(f);
        if (n < 0 && !okf) {
            snprintf(msg, cap, "%s", err.msg);
            if (cs != MT_ERR_IO)
                n = -2; /* not a regular file, or too large: invalid input */
        }
        else if (n < 0)
            snprintf(msg, cap, "--rank-map: %s: cannot read the file", path);
    }
    procs_bcast(&n, 1, MPI_LONG, 0, comm);
    if (n < 0) {
        free(buf);
        return n == -2 ? 2 : 1;
    }
    if (me != 0)
        buf = malloc((size_t)n + 1);
    if (comm_mpi_agree(comm, buf == NULL)) {
        free(buf);
        snprintf(msg, cap, "out of memory");
        return 1;
    }
    procs_bcast(buf, (int)n, MPI_CHAR, 0, comm);
    buf[n] = '\0';
    *text = buf;
    *len = (size_t)n;
    return 0;
}

/* Broadcast the input list from process 0 (mt_discover_pack). Collective. */
static int bcast_inputs(MPI_Comm comm, mt_discover_list_t *l, int me)
{
    mt_buf_t b = {0};
    int rc = me == 0 && (mt_discover_pack(l, &b) || mt_buf_reserve(&b, 1)); /* reserve: data never NULL */
    uint64_t len = b.len;
    procs_bcast(&len, 1, MPI_UINT64_T, 0, comm);
    if (me != 0 && !(b.data = malloc(len ? len : 1)))
        rc = 1;
    if (comm_mpi_agree(comm, rc)) {
        mt_buf_free(&b);
        return 1;
    }
    procs_bcast(b.data, (int)len, MPI_CHAR, 0, comm);
    if (me != 0) {
        mt_discover_free(l);
        rc = mt_discover_unpack(b.data, len, l) != 0;
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
    if (me == 0 && !bad) {
        mt_discover_free(files);
        bad = mt_discover_local_union(all, len, sall, slen, n_procs, files) != 0;
    }
    free(all);
    free(sall);
    if (comm_mpi_agree(comm, bad)) {
        if (me == 0)
            say("mergetrace: out of memory sharing the file list\n");
        return MT_EXIT_ERROR;
    }
    return 0;
}

/* A process that fails tells every other process at once (tag FAIL_TAG),
 * so they stop loading within one read chunk instead of finishing their
 * share first; the agreement on status afterwards is unchanged. */
#define FAIL_TAG 9001

typedef struct fail_note {
    MPI_Comm comm;
    int me, n_procs;
    bool sent, seen;
    int payload;
    procs_req_t *reqs;
} fail_note_t;

static bool other_failed(void *ctx)
{
    fail_note_t *fn = ctx;
    if (!fn->seen && fn->n_procs > 1) {
        fn->seen = procs_iprobe(PROCS_ANY_SOURCE, FAIL_TAG, fn->comm);
    }
    return fn->seen;
}

static void tell_others(fail_note_t *fn)
{
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
    for (int i = 0; i < senders; i++) {
        int x;
        procs_recv(&x, 1, MPI_INT, PROCS_ANY_SOURCE, FAIL_TAG, fn->comm, NULL);
    }
    free(fn->reqs);
    fn->reqs = NULL;
}

/* The load options of file f, and the merged write's facts to learn in
 * the same parse (*facts, NULL when not merging or out of memory). */
static void load_opts(const mt_discover_file_t *f, const options_t *o, const mt_rankmap_t *map, fail_note_t *fn,
                      mt_load_opts_t *lo, mt_merge_facts_t **facts)
{
    mt_load_opts_init(lo);
    lo->strict = o->strict;
    lo->should_stop = other_failed;
    lo->should_stop_ctx = fn;
    lo->rank_hint = (int)mt_rankmap_lookup(map, f->path);
    if (lo->rank_hint < 0)
        lo->rank_hint = (int)mt_rank_from_filename(f->path);
    /* The merged write needs the file's pids and time base: learn them in
     * this parse rather than in one more of its own. */
    *facts = NULL;
    if (!o->no_merge && mt_merge_facts_new(facts) == MT_OK) {
        lo->on_event = mt_merge_facts_event;
        lo->on_event_ctx = *facts;
    }
}

static void trace_done(const mt_discover_file_t *f, const mt_rankmap_t *map, bool only_file, local_t *L, file_result_t *r,
                       mt_trace_t *t, mt_merge_facts_t *facts, mt_status_t st, mt_error_t *err, double t0);

/* Load file f (input number index) into *r and this process's tables in
 * L, with its per-rank analyses packed while the trace is in memory; the
 * trace is freed before returning. Stops early (MT_ERR_CANCELLED) when
 * another process said it failed. */
static void load_one(const mt_discover_file_t *f, int32_t index, const options_t *o, const mt_rankmap_t *map,
                     bool only_file, fail_note_t *fn, local_t *L, file_result_t *r)
{
    memset(r, 0, sizeof *r);
    r->index = index;
    r->rank = -1;
    mt_error_t err;
    mt_trace_t *t = NULL;
    double t0 = procs_wtime();
    int kind = mt_nccl_classify(f->path, f->from_dir, r->message, sizeof r->message);
    if (kind == MT_NCCL_FILE_SKIP) {
        r->skipped = 1;
        return;
    }
    if (kind == MT_NCCL_FILE_PLUGIN) {
        mt_rank_source_t src;
        size_t rows0 = L->n_rows;
        mt_status_t st = mt_nccl_load_file(f->path, map, only_file, &L->xw, L->labels, &L->rows, &L->n_rows, &L->cap_rows,
                                        &r->rank, &src, &r->nccl, &err);
        r->n_rows = L->n_rows - rows0;
        if (st == MT_OK && r->nccl.left_out) {
            r->skipped = 1;
            r->load_s = procs_wtime() - t0;
            snprintf(r->message, sizeof r->message,
                     "NCCL example profiler file of communicator %llu, not the job's %llu (%u files): its %llu "
                     "tasks are left out",
                     (unsigned long long)r->nccl.comm_hash, (unsigned long long)L->xw.hash, (unsigned)L->xw.files,
                     (unsigned long long)r->nccl.tasks);
            return;
        }
        r->rank_source = (int32_t)src;
        r->sum.bytes_in = f->bytes;
        r->sum.world_size = r->nccl.comm_size;
        r->load_s = procs_wtime() - t0;
        r->status = (int32_t)st;
        if (st != MT_OK)
            mt_error_format(&err, r->message, sizeof r->message);
        return;
    }
    mt_load_opts_t lo;
    mt_merge_facts_t *facts;
    load_opts(f, o, map, fn, &lo, &facts);
    mt_status_t st = mt_trace_load(f->path, &lo, &t, &err);
    trace_done(f, map, only_file, L, r, t, facts, st, &err, t0);
}

/* The n parts of one Nsight Systems export that this process owns among
 * files[i..i+run): read in one pass per table (mt_nsys_load_parts) rather
 * than a pass per part, each trace then summarised and analysed as
 * load_one does and freed. All n traces are in memory after the read.
 * Appends to L->res the results of the parts done, as far as the first
 * failure (included) or another process's failure. */
static void load_parts(const mt_discover_list_t *files, size_t i, size_t run, size_t n, int me, const options_t *o,
                       const mt_rankmap_t *map, fail_note_t *fn, local_t *L)
{
    const char **paths = calloc(n, sizeof *paths);
    mt_load_opts_t *lo = calloc(n, sizeof *lo);
    mt_merge_facts_t **facts = calloc(n, sizeof *facts);
    mt_trace_t **t = calloc(n, sizeof *t);
    size_t *idx = calloc(n, sizeof *idx);
    if (!paths || !lo || !facts || !t || !idx) {
        /* no room for the arrays: a load per part, as for other inputs */
        for (size_t j = i; j < i + run; j++) {
            if (files->files[j].owner != me)
                continue;
            file_result_t *r = &L->res[L->n_res++];
            load_one(&files->files[j], (int32_t)j, o, map, files->n == 1, fn, L, r);
            if (r->status != MT_OK || other_failed(fn))
                break;
        }
        goto out;
    }
    double t0 = procs_wtime();
    for (size_t j = i, k = 0; j < i + run; j++) {
        if (files->files[j].owner != me)
            continue;
        idx[k] = j;
        paths[k] = files->files[j].path;
        load_opts(&files->files[j], o, map, fn, &lo[k], &facts[k]);
        k++;
    }
    mt_error_t err;
    size_t failed = 0;
    mt_status_t st = mt_nsys_load_parts(paths, n, lo, t, &failed, &err);
    /* The read's time, shared out among the parts. */
    double share = (procs_wtime() - t0) / (double)n;
    for (size_t k = 0; k < n; k++) {
        if (st && k != failed)
            continue; /* the part the error belongs to reports it, as its own load would */
        file_result_t *r = &L->res[L->n_res++];
        memset(r, 0, sizeof *r);
        r->index = (int32_t)idx[k];
        r->rank = -1;
        trace_done(&files->files[idx[k]], map, files->n == 1, L, r, t[k], facts[k], st, &err,
                   procs_wtime() - share);
        t[k] = NULL;
        facts[k] = NULL;
        if (st || r->status != MT_OK || other_failed(fn))
            break;
    }
    for (size_t k = 0; k < n; k++) {
        mt_trace_free(t[k]);
        mt_merge_facts_free(facts[k]);
    }
out:
    free(paths);
    free(lo);
    free(facts);
    free(t);
    free(idx);
}

/* The results of trace t, the load of file f into *r (st: the load's
 * status, err its error; t0 when the load began), with the per-rank
 * analyses run while the trace is in memory and packed once it is freed;
 * t and, unless kept, facts are freed. */
static void trace_done(const mt_discover_file_t *f, const mt_rankmap_t *map, bool only_file, local_t *L, file_result_t *r,
                       mt_trace_t *t, mt_merge_facts_t *facts, mt_status_t st, mt_error_t *errp, double t0)
{
    mt_error_t err = *errp;
    bool released = false; /* mt_heap_release done: once per rank */
    if (st == MT_OK && facts) {
        mt_merge_facts_finish(facts, t);
        L->facts[r - L->res] = facts;
    } else {
        mt_merge_facts_free(facts);
    }
    if (st == MT_ERR_NOT_TRACE && f->from_dir) {
        /* Other JSON beside the traces (a config, a truth file): leave it
         * out and say so, rather than fail the run. */
        r->skipped = 1;
        snprintf(r->message, sizeof r->message, "valid JSON but no \"traceEvents\" array");
        r->load_s = procs_wtime() - t0;
        return;
    }
    if (st == MT_OK) {
        mt_rank_source_t src;
        st = mt_rank_resolve(t, f->path, map, &r->rank, &src, &err);
        if (st == MT_ERR_NO_RANK && (only_file || f->from_dir)) {
            /* One trace alone needs no rank to be analysed: call it 0. In
             * a directory other JSON files (a config, notes) may sit
             * beside it, and whether they are traces is known only once
             * every process has read its files: job_check keeps the 0
             * when this is the job's only trace, and else ends the run
             * with the error kept here. */
            if (!only_file) {
                r->rank_tentative = 1;
                mt_error_format(&err, r->message, sizeof r->message);
            }
            r->rank = 0;
            src = MT_RANK_FROM_DEFAULT;
            st = MT_OK;
        }
        r->rank_source = (int32_t)src;
        if (st == MT_OK && r->rank > INT32_MAX - 1) {
            st = mt_error_set(&err, MT_ERR_RANGE, "rank %lld is too large", (long long)r->rank);
        }
        if (st == MT_OK)
            st = mt_trace_summarize(t, &r->sum);
        size_t rows_before = L->n_rows;
        if (st == MT_OK)
            st = mt_cinst_extract(t, (int32_t)r->rank, L->labels, &L->rows, &L->n_rows, &L->cap_rows);
        if (st == MT_OK)
            st = mt_trace_steps(t, (int32_t)r->rank, &L->steps, &L->n_steps, &L->cap_steps);
        if (st == MT_OK) {
            /* The per-rank passes run here, while the trace is in memory;
             * only their compact result travels. */
            mt_rank_analysis_t *a = NULL;
            double tp = procs_wtime();
            L->parse_s += tp - t0;
            mt_analysis_opts_t ao = L->aopts;
            ao.rows = L->rows + rows_before; /* this rank's rows tell all_to_all from P2P kernels */
            ao.n_rows = L->n_rows - rows_before;
            st = mt_analyze_rank(t, (int32_t)r->rank, &ao, &a);
            r->n_rows = ao.n_rows;
            r->n_gacts = a ? a->n_gacts : 0;
            r->n_steps = a ? a->n_steps : 0;
            /* The result is plain data: the trace and its memory go before
             * the result is packed, so the pack, which writes to new
             * memory, is not the rank's memory peak (it was, by the size
             * of the packed result: 6.6 MB for a 157 MB trace). */
            mt_trace_free(t);
            t = NULL;
            mt_heap_release(r->sum.bytes_json > f->bytes ? r->sum.bytes_json : f->bytes);
            released = true;
            if (st == MT_OK && L->facts[r - L->res])
                st = mt_merge_facts_memory(L->facts[r - L->res], a); /* the merged trace's counter tracks */
            if (st == MT_OK)
                st = mt_rank_analysis_pack_append(a, &L->analyses);
            mt_rank_analysis_free(a);
            L->passes_s += procs_wtime() - tp;
            if (r->sum.bytes_json > L->largest)
                L->largest = r->sum.bytes_json;
        }
        if (st == MT_ERR_NOMEM)
            mt_error_set(&err, st, "summarising the trace");
    }
    r->load_s = procs_wtime() - t0;
    r->status = (int32_t)st;
    if (st != MT_OK)
        mt_error_format(&err, r->message, sizeof r->message);
    mt_trace_free(t);
    if (!released)
        mt_heap_release(r->sum.bytes_json > f->bytes ? r->sum.bytes_json : f->bytes);
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
               const mt_rankmap_t *map, const mt_pp_markers_t *markers, local_t *L, file_result_t **all,
               size_t *n_all, phase_times_t *pt)
{
    int me = mc->rank, n_procs = mc->size;
    memset(L, 0, sizeof *L);
    *all = NULL;
    *n_all = 0;
    mt_analysis_opts_init(&L->aopts);
    L->aopts.kernel_wait_ns = o->kernel_wait_ns;
    L->aopts.project_ops = o->project_ops;
    L->aopts.top_kernels = o->top_kernels;
    L->aopts.markers = markers;
    const char **names = malloc((files->n ? files->n : 1) * sizeof *names);
    for (size_t i = 0; names && i < files->n; i++)
        names[i] = files->files[i].path;
    mt_nccl_example_world(names, names ? files->n : 0, &L->xw); /* none: every example file stands alone */
    free(names);
    size_t mine = 0;
    for (size_t i = 0; i < files->n; i++)
        mine += files->files[i].owner == me;
    L->res = calloc(mine ? mine : 1, sizeof *L->res);
    L->facts = calloc(mine ? mine : 1, sizeof *L->facts);
    L->labels = mt_strtab_create();
    if (!L->facts || !L->labels) {
        free(L->res);
        L->res = NULL;
    }
    int local_status = L->res ? MT_OK : MT_ERR_NOMEM;
    double t0 = procs_wtime(), c0 = timings_cpu();
    uint64_t done_bytes = 0;
    fail_note_t fn = {.comm = comm, .me = me, .n_procs = n_procs};
    for (size_t i = 0; L->res && i < files->n; i++) {
        if (files->files[i].owner != me)
            continue;
        if (other_failed(&fn))
            break; /* someone else failed: no point loading more */
        size_t first = L->n_res, owned, run = mt_discover_part_run(files, i, me, &owned);
        if (owned > 1) {
            /* several processes of one Nsight Systems export: one read */
            load_parts(files, i, run, owned, me, o, map, &fn, L);
            i += run - 1;
        } else {
            load_one(&files->files[i], (int32_t)i, o, map, files->n == 1, &fn, L, &L->res[L->n_res++]);
        }
        bool stop = false;
        for (size_t k = first; k < L->n_res && !stop; k++) {
            const file_result_t *r = &L->res[k];
            done_bytes += r->sum.bytes_json;
            if (r->status == MT_ERR_CANCELLED) {
                L->n_res = k; /* not this file's fault: the real error comes from elsewhere */
                stop = true;
            } else if (r->status != MT_OK) {
                local_status = r->status;
                tell_others(&fn);
                stop = true; /* the first error is the one reported */
            }
        }
        if (stop)
            break;
        if (o->progress && me == 0) {
            double dt = procs_wtime() - t0;
            fprintf(stderr, "\rmergetrace: process 0 loaded %zu/%zu files, %.1f MB/s   ", L->n_res, mine,
                    dt > 0 ? done_bytes / 1e6 / dt : 0.0);
        }
    }
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
    pt->load = t_load;
    pt->load_cpu = timings_cpu() - c0;
    *all = all_bytes;
    *n_all = all_len / sizeof **all;
    if (me != 0 || !all_fail)
        return MT_EXIT_OK;
    /* One message: the failed file with the lowest index. */
    const file_result_t *first = NULL;
    for (size_t i = 0; i < *n_all; i++)
        if ((*all)[i].status != MT_OK && (!first || (*all)[i].index < first->index))
            first = &(*all)[i];
    if (first) {
        /* --local: the path may be on every node; the process says which */
        if (o->local && n_procs > 1 && first->index >= 0 && (size_t)first->index < files->n)
            say("mergetrace: %s--local: process %d: %s\n", o->job_tag,
                    files->files[first->index].owner, first->message);
        else
            say("mergetrace: %s%s\n", o->job_tag, first->message);
        return options_exit_code((mt_status_t)first->status);
    }
    say("mergetrace: out of memory\n");
    return MT_EXIT_ERROR;
}

void load_free(local_t *L)
{
    for (size_t i = 0; L->facts && i < L->n_res; i++)
        mt_merge_facts_free(L->facts[i]);
    free(L->facts);
    free(L->res);
    free(L->rows);
    mt_strtab_free(L->labels);
    free(L->steps);
    mt_buf_free(&L->analyses);
    memset(L, 0, sizeof *L);
}
