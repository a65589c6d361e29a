/* Loading one process's share of the inputs (ingest.h): each file read
 * one trace at a time into a compact result, its collective rows,
 * ProfilerStep ranges, packed per-rank analyses and the merged write's
 * first pass, the trace freed before the next; an Nsight Systems
 * export's parts read in one pass. In discover/ because it uses every
 * stage before it (trace, align, nccl, rank, merge). */
#define _DEFAULT_SOURCE /* CLOCK_MONOTONIC */
#include "mergetrace/ingest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mergetrace/loader.h"
#include "mergetrace/nsys.h"
#include "base/clock.h"

static void freed(const mt_ingest_opts_t *io, const mt_discover_file_t *f, const mt_ingest_result_t *r)
{
    if (io->trace_freed)
        io->trace_freed(r->sum.bytes_json > f->bytes ? r->sum.bytes_json : f->bytes);
}

mt_status_t mt_ingest_init(mt_ingest_t *L, const mt_discover_list_t *files, int me, const mt_analysis_opts_t *aopts)
{
    memset(L, 0, sizeof *L);
    L->aopts = *aopts;
    const char **names = malloc((files->n ? files->n : 1) * sizeof *names);
    for (size_t i = 0; names && i < files->n; i++)
        names[i] = files->files[i].path;
    mt_nccl_example_world(names, names ? files->n : 0, &L->xw); /* none: every example file stands alone */
    free(names);
    for (size_t i = 0; i < files->n; i++)
        L->n_owned += files->files[i].owner == me;
    L->res = calloc(L->n_owned ? L->n_owned : 1, sizeof *L->res);
    L->facts = calloc(L->n_owned ? L->n_owned : 1, sizeof *L->facts);
    L->labels = mt_strtab_create();
    return L->res && L->facts && L->labels ? MT_OK : MT_ERR_NOMEM;
}

/* The load options of file f, and the merged write's facts to learn in
 * the same parse (*facts, NULL when not merging or out of memory). */
static void load_opts(const mt_discover_file_t *f, const mt_ingest_opts_t *io, mt_load_opts_t *lo,
                      mt_merge_facts_t **facts)
{
    mt_load_opts_init(lo);
    lo->strict = io->strict;
    lo->should_stop = io->should_stop;
    lo->should_stop_ctx = io->should_stop_ctx;
    lo->rank_hint = (int)mt_rankmap_lookup(io->map, f->path);
    if (lo->rank_hint < 0)
        lo->rank_hint = (int)mt_rank_from_filename(f->path);
    /* The merged write needs the file's pids and time base: learn them in
     * this parse rather than in one more of its own. */
    *facts = NULL;
    if (io->merge && mt_merge_facts_new(facts) == MT_OK) {
        lo->on_event = mt_merge_facts_event;
        lo->on_event_ctx = *facts;
    }
}

/* The results of trace t, the load of file f into *r (st: the load's
 * status, err its error; t0 when the load began), with the per-rank
 * analyses run while the trace is in memory and packed once it is freed;
 * t and, unless kept, facts are freed. */
static void trace_done(mt_ingest_t *L, const mt_ingest_opts_t *io, const mt_discover_file_t *f, mt_ingest_result_t *r,
                       mt_trace_t *t, mt_merge_facts_t *facts, mt_status_t st, const mt_error_t *errp, double t0)
{
    mt_error_t err = *errp;
    bool released = false; /* trace_freed called: once per rank */
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
        r->load_s = mt_clock_seconds(CLOCK_MONOTONIC) - t0;
        return;
    }
    if (st == MT_OK) {
        mt_rank_source_t src;
        st = mt_rank_resolve(t, f->path, io->map, &r->rank, &src, &err);
        if (st == MT_ERR_NO_RANK && (io->only_file || f->from_dir)) {
            /* One trace alone needs no rank to be analysed: call it 0. In
             * a directory other JSON files (a config, notes) may sit
             * beside it, and whether they are traces is known only once
             * every process has read its files: the program keeps the 0
             * when this is the job's only trace, and else ends the run
             * with the error kept here. */
            if (!io->only_file) {
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
            double tp = mt_clock_seconds(CLOCK_MONOTONIC);
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
            freed(io, f, r);
            released = true;
            /* the merged trace's counter tracks; a merged trace's part
             * carries them already, as events that pass through */
            if (st == MT_OK && L->facts[r - L->res] && f->kind != MT_DISCOVER_MERGED_PART)
                st = mt_merge_facts_memory(L->facts[r - L->res], a);
            if (st == MT_OK)
                st = mt_rank_analysis_pack_append(a, &L->analyses);
            mt_rank_analysis_free(a);
            L->passes_s += mt_clock_seconds(CLOCK_MONOTONIC) - tp;
            if (r->sum.bytes_json > L->largest)
                L->largest = r->sum.bytes_json;
        }
        if (st == MT_ERR_NOMEM)
            mt_error_set(&err, st, "summarising the trace");
    }
    r->load_s = mt_clock_seconds(CLOCK_MONOTONIC) - t0;
    r->status = (int32_t)st;
    if (st != MT_OK)
        mt_error_format(&err, r->message, sizeof r->message);
    mt_trace_free(t);
    if (!released)
        freed(io, f, r);
}

/* r zeroed as the result of input number index. */
static mt_ingest_result_t *next_result(mt_ingest_t *L, int32_t index)
{
    mt_ingest_result_t *r = &L->res[L->n_res++];
    memset(r, 0, sizeof *r);
    r->index = index;
    r->rank = -1;
    return r;
}

mt_ingest_result_t *mt_ingest_one(mt_ingest_t *L, const mt_ingest_opts_t *io, const mt_discover_file_t *f,
                                  int32_t index)
{
    mt_ingest_result_t *r = next_result(L, index);
    mt_error_t err;
    mt_trace_t *t = NULL;
    double t0 = mt_clock_seconds(CLOCK_MONOTONIC);
    int kind = mt_nccl_classify(f->path, f->from_dir, r->message, sizeof r->message);
    if (kind == MT_NCCL_FILE_SKIP) {
        r->skipped = 1;
        return r;
    }
    if (kind == MT_NCCL_FILE_PLUGIN) {
        mt_rank_source_t src;
        size_t rows0 = L->n_rows;
        mt_status_t st = mt_nccl_load_file(f->path, io->map, io->only_file, &L->xw, L->labels, &L->rows, &L->n_rows,
                                           &L->cap_rows, &r->rank, &src, &r->nccl, &err);
        r->n_rows = L->n_rows - rows0;
        if (st == MT_OK && r->nccl.left_out) {
            r->skipped = 1;
            r->load_s = mt_clock_seconds(CLOCK_MONOTONIC) - t0;
            snprintf(r->message, sizeof r->message,
                     "NCCL example profiler file of communicator %llu, not the job's %llu (%u files): its %llu "
                     "tasks are left out",
                     (unsigned long long)r->nccl.comm_hash, (unsigned long long)L->xw.hash, (unsigned)L->xw.files,
                     (unsigned long long)r->nccl.tasks);
            return r;
        }
        r->rank_source = (int32_t)src;
        r->sum.bytes_in = f->bytes;
        r->sum.world_size = r->nccl.comm_size;
        r->load_s = mt_clock_seconds(CLOCK_MONOTONIC) - t0;
        r->status = (int32_t)st;
        if (st != MT_OK)
            mt_error_format(&err, r->message, sizeof r->message);
        return r;
    }
    mt_load_opts_t lo;
    mt_merge_facts_t *facts;
    load_opts(f, io, &lo, &facts);
    mt_status_t st = mt_trace_load(f->path, &lo, &t, &err);
    trace_done(L, io, f, r, t, facts, st, &err, t0);
    return r;
}

static bool stop_asked(const mt_ingest_opts_t *io)
{
    return io->should_stop && io->should_stop(io->should_stop_ctx);
}

void mt_ingest_parts(mt_ingest_t *L, const mt_ingest_opts_t *io, const mt_discover_list_t *files, size_t i,
                     size_t run, size_t n, int me)
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
            const mt_ingest_result_t *r = mt_ingest_one(L, io, &files->files[j], (int32_t)j);
            if (r->status != MT_OK || stop_asked(io))
                break;
        }
        goto out;
    }
    double t0 = mt_clock_seconds(CLOCK_MONOTONIC);
    for (size_t j = i, k = 0; j < i + run; j++) {
        if (files->files[j].owner != me)
            continue;
        idx[k] = j;
        paths[k] = files->files[j].path;
        load_opts(&files->files[j], io, &lo[k], &facts[k]);
        k++;
    }
    mt_error_t err;
    size_t failed = 0;
    mt_status_t st = mt_nsys_load_parts(paths, n, lo, t, &failed, &err);
    /* The read's time, shared out among the parts. */
    double share = (mt_clock_seconds(CLOCK_MONOTONIC) - t0) / (double)n;
    for (size_t k = 0; k < n; k++) {
        if (st && k != failed)
            continue; /* the part the error belongs to reports it, as its own load would */
        mt_ingest_result_t *r = next_result(L, (int32_t)idx[k]);
        double t0k = mt_clock_seconds(CLOCK_MONOTONIC) - share;
        trace_done(L, io, &files->files[idx[k]], r, t[k], facts[k], st, &err, t0k);
        t[k] = NULL;
        facts[k] = NULL;
        if (st || r->status != MT_OK || stop_asked(io))
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

mt_status_t mt_ingest_share(mt_ingest_t *L, const mt_ingest_opts_t *io, const mt_discover_list_t *files, int me,
                            const mt_ingest_share_cb_t *cb)
{
    uint64_t bytes = 0;
    for (size_t i = 0; i < files->n; i++) {
        if (files->files[i].owner != me)
            continue;
        if (cb->stop_before && cb->stop_before(cb->ctx, (int32_t)i))
            break; /* a file below this one failed: no point loading more */
        size_t first = L->n_res, owned, run = mt_discover_part_run(files, i, me, &owned);
        if (owned > 1) {
            /* several processes of one Nsight Systems export: one read */
            mt_ingest_parts(L, io, files, i, run, owned, me);
            i += run - 1;
        } else {
            mt_ingest_one(L, io, &files->files[i], (int32_t)i);
        }
        for (size_t k = first; k < L->n_res; k++) {
            const mt_ingest_result_t *r = &L->res[k];
            bytes += r->sum.bytes_json;
            if (r->status == MT_ERR_CANCELLED) {
                L->n_res = k; /* not this file's fault: the real error comes from elsewhere */
                return MT_OK;
            }
            if (r->status != MT_OK) { /* the first error is the one reported */
                if (cb->failed)
                    cb->failed(cb->ctx, (int32_t)i);
                return r->status;
            }
        }
        if (cb->progress)
            cb->progress(cb->ctx, L->n_res, L->n_owned, bytes);
    }
    return MT_OK;
}

static int by_rank(const void *a, const void *b)
{
    const mt_ingest_result_t *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return x->index - y->index;
}

static int by_index(const void *a, const void *b)
{
    const mt_ingest_result_t *x = a, *y = b;
    return (x->index > y->index) - (x->index < y->index);
}

size_t mt_ingest_sort(mt_ingest_result_t *res, size_t n_res)
{
    size_t n = 0;
    for (size_t i = 0; i < n_res; i++)
        if (!res[i].skipped) {
            mt_ingest_result_t tmp = res[n];
            res[n++] = res[i];
            res[i] = tmp;
        }
    /* in input order, whichever process loaded them */
    qsort(res + n, n_res - n, sizeof *res, by_index);
    qsort(res, n, sizeof *res, by_rank);
    return n;
}

const mt_ingest_result_t *mt_ingest_unranked(const mt_ingest_result_t *res, size_t n)
{
    const mt_ingest_result_t *unranked = NULL;
    for (size_t i = 0; i < n && n > 1; i++)
        if (res[i].rank_tentative && (!unranked || res[i].index < unranked->index))
            unranked = &res[i];
    return unranked;
}

mt_status_t mt_ingest_nccl_join(const mt_discover_list_t *l, mt_ingest_result_t *res, size_t *n, mt_nccl_job_t *nj)
{
    size_t w = 0;
    for (size_t a = 0; a < *n;) {
        size_t b = a, nn = 0, nk = 0; /* this rank's NCCL files and traces */
        while (b < *n && res[b].rank == res[a].rank) {
            nn += res[b].nccl.is_nccl != 0;
            nk += !res[b].nccl.is_nccl;
            b++;
        }
        for (size_t i = a; i < b; i++) {
            if (res[i].nccl.is_nccl && nn == 1) {
                if (mt_nccl_job_add(nj, (int32_t)res[i].rank, res[i].index, l->files[res[i].index].path, &res[i].nccl,
                                    nk > 0) != MT_OK)
                    return MT_ERR_NOMEM;
                for (size_t k = a; nk == 1 && k < b; k++)
                    if (!res[k].nccl.is_nccl)
                        mt_nccl_job_kineto(nj, (int32_t)res[i].rank, res[k].sum.host_pid, res[k].sum.world_size);
                if (nk == 1)
                    continue; /* joins the rank's trace */
            }
            res[w++] = res[i];
        }
        a = b;
    }
    *n = w;
    mt_nccl_job_decide(nj, w);
    return MT_OK;
}

mt_status_t mt_ingest_report_lists(const mt_discover_list_t *files, const mt_ingest_result_t *res, size_t n,
                                   const mt_ingest_result_t *skipped, size_t n_skipped, mt_report_input_t **ri_out,
                                   mt_report_skip_t **rs_out, size_t *n_rs)
{
    mt_report_input_t *ri = calloc(n ? n : 1, sizeof *ri);
    *n_rs = n_skipped + files->n_skipped;
    mt_report_skip_t *rs = calloc(*n_rs ? *n_rs : 1, sizeof *rs);
    *ri_out = ri;
    *rs_out = rs;
    if (!ri || !rs)
        return MT_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) {
        const mt_ingest_result_t *r = &res[i];
        ri[i] = (mt_report_input_t){.rank = (int32_t)r->rank,
                                    .rank_source = mt_rank_source_str((mt_rank_source_t)r->rank_source),
                                    .path = files->files[r->index].path,
                                    .bytes = r->sum.bytes_in,
                                    .json_bytes = r->sum.bytes_json,
                                    .events = r->sum.events,
                                    .truncated = r->sum.truncated,
                                    .truncated_at = r->sum.truncated_at,
                                    .summary = r->nccl.is_nccl ? NULL : &r->sum,
                                    .nccl_only = r->nccl.is_nccl != 0};
    }
    for (size_t i = 0; i < n_skipped; i++)
        rs[i] = (mt_report_skip_t){.path = files->files[skipped[i].index].path,
                                   .reason = skipped[i].message,
                                   .kind = skipped[i].nccl.left_out ? MT_REPORT_SKIP_LEFT_OUT
                                                                    : MT_REPORT_SKIP_NOT_TRACE};
    for (size_t i = 0; i < files->n_skipped; i++) /* own outputs, links not followed */
        rs[n_skipped + i] = (mt_report_skip_t){.path = files->skipped[i].path,
                                               .reason = files->skipped[i].why,
                                               .kind = MT_REPORT_SKIP_INPUT,
                                               .first = files->skipped[i].first};
    return MT_OK;
}

mt_status_t mt_ingest_analyses(const void *bytes, size_t len, const mt_ingest_result_t *res, size_t n, size_t n_only,
                               mt_rank_analysis_t ***an_out, size_t *n_an)
{
    *n_an = 0;
    mt_rank_analysis_t **an = calloc(n ? n : 1, sizeof *an);
    *an_out = an;
    if (!an)
        return MT_ERR_NOMEM;
    for (size_t off = 0; off < len;) {
        mt_rank_analysis_t *a = NULL;
        size_t used = 0;
        mt_status_t st = mt_rank_analysis_unpack((const char *)bytes + off, len - off, &a, &used);
        if (st != MT_OK || !used)
            return st != MT_OK ? st : MT_ERR_FORMAT;
        off += used;
        /* place it at its rank's position in res */
        size_t k = 0;
        while (k < n && res[k].rank != a->rank)
            k++;
        if (k < n && !an[k]) {
            an[k] = a;
            (*n_an)++;
        } else {
            mt_rank_analysis_free(a);
        }
    }
    if (*n_an != n - n_only)
        return MT_ERR_FORMAT;
    /* ranks with NCCL data only have none: the results first, by rank */
    for (size_t k = 0, w = 0; k < n; k++)
        if (an[k]) {
            mt_rank_analysis_t *x = an[k];
            an[k] = NULL;
            an[w++] = x;
        }
    return MT_OK;
}

mt_trust_trace_t *mt_ingest_trust_traces(const mt_ingest_result_t *res, size_t n)
{
    mt_trust_trace_t *tt = calloc(n ? n : 1, sizeof *tt);
    for (size_t i = 0; tt && i < n; i++) {
        const mt_trace_summary_t *s = &res[i].sum;
        bool kineto = !res[i].nccl.is_nccl;
        tt[i] = (mt_trust_trace_t){.rank = (int32_t)res[i].rank,
                                   .world_size = kineto ? s->world_size : -1,
                                   .first_ns = s->events ? s->first_ns : 0,
                                   .last_ns = s->events ? s->last_ns : -1,
                                   .nccl = !kineto};
    }
    return tt;
}

mt_select_rank_t *mt_ingest_select_ranks(const mt_ingest_result_t *res, size_t n, const mt_clock_t *clocks)
{
    mt_select_rank_t *r = malloc((n ? n : 1) * sizeof *r);
    for (size_t i = 0; r && i < n; i++)
        r[i] = (mt_select_rank_t){.rank = res[i].rank, .clock = &clocks[i], .events = res[i].sum.events,
                                  .first_ns = res[i].sum.first_ns, .last_ns = res[i].sum.last_ns,
                                  .nccl = res[i].nccl.is_nccl != 0};
    return r;
}

const mt_ingest_result_t *mt_ingest_first_failed(const mt_ingest_result_t *res, size_t n)
{
    const mt_ingest_result_t *first = NULL;
    for (size_t i = 0; i < n; i++)
        if (res[i].status != MT_OK && (!first || res[i].index < first->index))
            first = &res[i];
    return first;
}

mt_status_t mt_ingest_failure_text(const mt_ingest_result_t *res, size_t n, const mt_discover_list_t *files, bool local,
                                   const char *tag, char *msg, size_t cap)
{
    const mt_ingest_result_t *first = mt_ingest_first_failed(res, n);
    if (!first) {
        snprintf(msg, cap, "out of memory");
        return MT_ERR_NOMEM;
    }
    if (local && first->index >= 0 && (size_t)first->index < files->n)
        snprintf(msg, cap, "%s--local: process %d: %s", tag, files->files[first->index].owner, first->message);
    else
        snprintf(msg, cap, "%s%s", tag, first->message);
    return (mt_status_t)first->status;
}

void mt_ingest_free(mt_ingest_t *L)
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

mt_status_t mt_ingest_merged_inputs(const mt_ingest_t *L, const mt_discover_list_t *files, const int32_t *ranks,
                                    size_t n_ranks, const mt_clock_t *clocks, size_t n_clocks,
                                    mt_merged_input_t **out, size_t *n_out)
{
    *n_out = 0;
    mt_merged_input_t *mi = *out = calloc(L->n_res ? L->n_res : 1, sizeof *mi);
    if (!mi)
        return MT_ERR_NOMEM;
    size_t n = 0;
    for (size_t i = 0; i < L->n_res; i++) {
        const mt_ingest_result_t *r = &L->res[i];
        if (r->skipped || r->status != MT_OK || r->nccl.is_nccl)
            continue; /* NCCL plugin files are not part of the merged trace (yet) */
        bool want = !ranks;
        for (size_t k = 0; !want && k < n_ranks; k++)
            want = ranks[k] == r->rank;
        if (!want)
            continue;
        mi[n].path = files->files[r->index].path;
        mi[n].rank = (int32_t)r->rank;
        mi[n].facts = L->facts[i];
        for (size_t k = 0; k < n_clocks; k++)
            if (clocks[k].rank == r->rank) {
                mi[n].clock = clocks[k];
                mi[n].has_clock = true;
            }
        n++;
    }
    *n_out = n;
    return MT_OK;
}
