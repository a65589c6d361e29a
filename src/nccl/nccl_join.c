/* NCCL's own records in a job (nccl_join.h): what a file is, loading it
 * with its rank, the join with Kineto traces by rank, which rows align each
 * rank, the comparison of the two sources, and the warnings. The reading
 * is nccl_input.c, nccl_inspector.c and nccl_example.c; the comparison's
 * numbers nccl_agree.c. */
#include "mergetrace/nccl_join.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mergetrace/nccl_inspector.h"

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static bool ends_with(const char *s, const char *suf)
{
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && strcmp(s + n - m, suf) == 0;
}

int mt_nccl_classify(const char *path, bool from_dir, char *why, size_t cap)
{
    mt_nccl_format_t fmt = MT_NCCL_FMT_NONE;
    mt_error_t err;
    if (mt_nccl_probe(path, &fmt, &err) == MT_OK && fmt != MT_NCCL_FMT_NONE)
        return MT_NCCL_FILE_PLUGIN;
    if (from_dir && (ends_with(path, ".jsonl") || ends_with(path, ".jsonl.gz") || ends_with(path, ".log") ||
                     ends_with(path, ".log.gz"))) {
        snprintf(why, cap, "the first line is neither the NCCL plugin's \"process\" line nor an NCCL Inspector "
                           "record");
        return MT_NCCL_FILE_SKIP;
    }
    return MT_NCCL_FILE_OTHER;
}

/* The rank of a file: --rank-map, else from its communicators, else 0 for
 * the only input. */
static mt_status_t pick_rank(const char *path, const mt_rankmap_t *map, bool only_file, int32_t from_comm,
                             int64_t *rank, mt_rank_source_t *src, mt_error_t *err)
{
    int64_t mapped = mt_rankmap_lookup(map, path);
    mt_status_t st = MT_OK;
    if (mapped >= 0) {
        *rank = mapped;
        *src = MT_RANK_FROM_MAP;
    } else if (from_comm >= 0) {
        *rank = from_comm;
        *src = MT_RANK_FROM_NCCL;
    } else if (only_file) {
        *rank = 0;
        *src = MT_RANK_FROM_DEFAULT;
    } else {
        st = mt_error_set(err, MT_ERR_NO_RANK, "no communicator gives the rank of this NCCL file (use --rank-map)");
        snprintf(err->path, sizeof err->path, "%s", path);
    }
    if (st == MT_OK && *rank > INT32_MAX - 1) {
        st = mt_error_set(err, MT_ERR_RANGE, "rank %lld is too large", (long long)*rank);
        snprintf(err->path, sizeof err->path, "%s", path);
    }
    return st;
}

static mt_status_t load_inspector(const char *path, const mt_rankmap_t *map, bool only_file, mt_strtab_t *labels,
                                  mt_cinst_t **rows, size_t *n_rows, size_t *cap_rows, int64_t *rank,
                                  mt_rank_source_t *src, mt_nccl_info_t *info, mt_error_t *err)
{
    info->is_nccl = MT_NCCL_FMT_INSPECTOR;
    mt_insp_file_t *f = NULL;
    mt_status_t st = mt_insp_load(path, &f, err);
    if (st != MT_OK)
        return st;
    int32_t size = 0, r = mt_insp_world_rank(f, &size);
    st = pick_rank(path, map, only_file, r, rank, src, err);
    size_t before = *n_rows;
    if (st == MT_OK) {
        st = mt_insp_cinst_extract(f, (int32_t)*rank, labels, rows, n_rows, cap_rows, &info->untimed);
        if (st != MT_OK)
            mt_error_set(err, st, "%s: NCCL Inspector rows", path);
    }
    if (st == MT_OK) {
        info->comm_size = size;
        info->truncated = f->truncated;
        info->pid = f->pid;
        /* communicators: distinct ids */
        for (size_t i = 0; i < f->n_colls; i++) {
            size_t k = 0;
            while (k < i && (f->colls[k].comm != f->colls[i].comm || f->colls[k].comm_digits != f->colls[i].comm_digits))
                k++;
            info->comms += k == i;
            if (info->comms > 64)
                break; /* a label, not a count that matters: keep it cheap */
        }
        info->tasks = f->n_colls;
        info->rows = *n_rows - before;
        info->unknown_lines = f->skipped_lines;
        snprintf(info->host, sizeof info->host, "%s", f->host);
    }
    mt_insp_file_free(f);
    return st;
}

void mt_nccl_example_world(const char *const *paths, size_t n_paths, mt_nccl_xworld_t *w)
{
    memset(w, 0, sizeof *w);
    uint64_t *h = malloc((n_paths ? n_paths : 1) * sizeof *h);
    if (!h)
        return; /* then every example file stands alone: still correct, only less helpful */
    size_t n = 0;
    for (size_t i = 0; i < n_paths; i++) {
        int32_t r;
        if (mt_nccl_example_name(paths[i], &h[n], &r))
            n++;
    }
    qsort(h, n, sizeof *h, cmp_u64);
    for (size_t a = 0; a < n;) {
        size_t b = a;
        while (b < n && h[b] == h[a])
            b++;
        w->n_hashes++;
        if (b - a > w->files) { /* ascending: the first of equal counts is the smaller hash */
            w->files = (uint32_t)(b - a);
            w->hash = h[a];
        }
        a = b;
    }
    free(h);
}

static mt_status_t load_example(const char *path, const mt_rankmap_t *map, bool only_file, const mt_nccl_xworld_t *xw,
                                mt_strtab_t *labels, mt_cinst_t **rows, size_t *n_rows, size_t *cap_rows,
                                int64_t *rank, mt_rank_source_t *src, mt_nccl_info_t *info, mt_error_t *err)
{
    info->is_nccl = MT_NCCL_FMT_EXAMPLE;
    mt_nccl_file_t *f = NULL;
    mt_status_t st = mt_nccl_example_load(path, &f, err);
    if (st != MT_OK)
        return st;
    /* the file's communicator and rank in it: content first, else its name */
    uint64_t hash = 0;
    int32_t r = -1;
    bool known = false;
    if (f->n_comms) {
        hash = f->comms[0].hash;
        r = f->comms[0].rank;
        known = true;
    } else {
        known = mt_nccl_example_name(path, &hash, &r);
    }
    info->comm_hash = hash;
    if (known && xw && xw->files && xw->n_hashes > 1 && hash != xw->hash && mt_rankmap_lookup(map, path) < 0) {
        info->left_out = 1;
        info->tasks = f->n_tasks;
        mt_nccl_file_free(f);
        return MT_OK;
    }
    /* The file does not say how many ranks the communicator has: the
     * number of its files among the inputs does, when it is the job's. */
    int32_t size = known && xw && xw->files && hash == xw->hash ? (int32_t)xw->files : 0;
    if (size && known && r >= size)
        size = r + 1; /* some of its files are not among the inputs */
    for (size_t i = 0; i < f->n_comms; i++) {
        f->comms[i].nranks = size;
        /* a label for reports, as Inspector ids are shown */
        snprintf(f->comms[i].name, sizeof f->comms[i].name, "0x%llx", (unsigned long long)f->comms[i].hash);
    }
    st = pick_rank(path, map, only_file, known ? r : -1, rank, src, err);
    size_t before = *n_rows;
    if (st == MT_OK) {
        st = mt_nccl_cinst_extract(f, (int32_t)*rank, labels, rows, n_rows, cap_rows, &info->p2p_left_out);
        if (st != MT_OK)
            mt_error_set(err, st, "%s: NCCL example profiler rows", path);
    }
    if (st == MT_OK) {
        for (size_t i = 0; i < f->n_tasks; i++)
            info->untimed += f->tasks[i].gpu_start_ns < 0 || f->tasks[i].gpu_stop_ns < 0;
        info->comm_size = size;
        info->truncated = f->truncated;
        info->pid = f->pid;
        info->comms = f->n_comms;
        info->tasks = f->n_tasks;
        info->rows = *n_rows - before;
        info->orphan = f->orphan_kch;
        info->unknown_lines = f->skipped_lines;
    }
    mt_nccl_file_free(f);
    return st;
}

mt_status_t mt_nccl_load_file(const char *path, const mt_rankmap_t *map, bool only_file, const mt_nccl_xworld_t *xw,
                           mt_strtab_t *labels, mt_cinst_t **rows, size_t *n_rows, size_t *cap_rows, int64_t *rank,
                           mt_rank_source_t *src, mt_nccl_info_t *info, mt_error_t *err)
{
    memset(info, 0, sizeof *info);
    mt_error_clear(err);
    info->is_nccl = MT_NCCL_FMT_PLUGIN;
    *rank = -1;
    *src = MT_RANK_FROM_NONE;
    mt_nccl_format_t fmt = MT_NCCL_FMT_NONE;
    if (mt_nccl_probe(path, &fmt, err) == MT_OK && fmt == MT_NCCL_FMT_INSPECTOR)
        return load_inspector(path, map, only_file, labels, rows, n_rows, cap_rows, rank, src, info, err);
    if (fmt == MT_NCCL_FMT_EXAMPLE)
        return load_example(path, map, only_file, xw, labels, rows, n_rows, cap_rows, rank, src, info, err);
    mt_error_clear(err);
    mt_nccl_file_t *f = NULL;
    mt_status_t st = mt_nccl_load(path, &f, err);
    if (st != MT_OK)
        return st;
    int32_t size = 0, r = mt_nccl_world_rank(f, &size);
    st = pick_rank(path, map, only_file, r, rank, src, err);
    size_t before = *n_rows;
    if (st == MT_OK) {
        st = mt_nccl_cinst_extract(f, (int32_t)*rank, labels, rows, n_rows, cap_rows, &info->p2p_left_out);
        if (st != MT_OK)
            mt_error_set(err, st, "%s: NCCL collective rows", path);
    }
    if (st == MT_OK) {
        info->comm_size = size;
        info->has_bound = f->has_offset_bound;
        info->offset_bound_ns = f->gpu_offset_bound_ns;
        info->truncated = f->truncated;
        info->pid = f->pid;
        info->comms = f->n_comms;
        info->tasks = f->n_tasks;
        info->rows = *n_rows - before;
        info->dropped = f->dropped;
        info->orphan = f->orphan_kch;
        info->unknown_lines = f->skipped_lines;
        /* in flight when the file ended without its process's closing
         * line (killed, or hung when the files were taken): what a hang
         * analysis reads; a clean end's leftovers (a dropped record) are
         * not a hang */
        info->in_flight = f->ended ? 0 : f->in_flight > INT32_MAX ? INT32_MAX : (int32_t)f->in_flight;
        snprintf(info->host, sizeof info->host, "%s", f->host);
    }
    mt_nccl_file_free(f);
    return st;
}

mt_status_t mt_nccl_job_add(mt_nccl_job_t *nj, int32_t rank, int32_t file_index, const char *path,
                            const mt_nccl_info_t *info, bool with_kineto)
{
    mt_nccl_rank_t *r = realloc(nj->r, (nj->n + 1) * sizeof *r);
    if (!r)
        return MT_ERR_NOMEM;
    nj->r = r;
    nj->r[nj->n++] = (mt_nccl_rank_t){.rank = rank, .file_index = file_index, .path = path, .info = *info, .with_kineto = with_kineto,
                                   .kineto_pid = -1, .kineto_world = -1};
    nj->n_only += !with_kineto;
    return MT_OK;
}

void mt_nccl_job_kineto(mt_nccl_job_t *nj, int32_t rank, int64_t pid, int64_t world)
{
    for (size_t i = 0; i < nj->n; i++)
        if (nj->r[i].rank == rank) {
            nj->r[i].kineto_pid = pid;
            nj->r[i].kineto_world = world;
        }
}

/* The join of a rank's two sources, by rank, checked: a different process
 * or job size says the files are not of the same process. */
bool mt_nccl_rank_pid_differs(const mt_nccl_rank_t *r)
{
    return r->with_kineto && r->kineto_pid > 0 && r->info.pid > 0 && r->kineto_pid != r->info.pid;
}

bool mt_nccl_rank_size_differs(const mt_nccl_rank_t *r)
{
    return r->with_kineto && r->kineto_world > 0 && r->info.comm_size > 0 && r->kineto_world != r->info.comm_size;
}

void mt_nccl_job_decide(mt_nccl_job_t *nj, size_t n_loaded_ranks)
{
    if (!nj->n_only)
        nj->source = "kineto";
    else if (nj->n == n_loaded_ranks)
        nj->source = "nccl";
    else
        nj->source = "mixed";
    for (size_t i = 0; i < nj->n; i++)
        nj->r[i].aligned_on_nccl = nj->source[0] == 'n' || !nj->r[i].with_kineto;
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

mt_status_t mt_nccl_rows_select(const mt_comm_t *comm, const mt_nccl_job_t *nj, mt_cinst_t *rows, size_t n_rows,
                             size_t *n_use)
{
    *n_use = n_rows;
    /* how many ranks align on NCCL rows, and whether any file is NCCL */
    int64_t hdr[2] = {0, 0};
    if (comm->rank == 0 && nj) {
        for (size_t i = 0; i < nj->n; i++)
            hdr[0] += nj->r[i].aligned_on_nccl;
        hdr[1] = (int64_t)nj->n;
    }
    mt_status_t st = comm->bcast(comm->ctx, hdr, sizeof hdr, 0);
    if (st != MT_OK || hdr[1] == 0)
        return st; /* no NCCL file anywhere: every row aligns */
    size_t k = (size_t)hdr[0];
    int32_t *on = malloc((k ? k : 1) * sizeof *on);
    mt_cinst_t *tmp = malloc((n_rows ? n_rows : 1) * sizeof *tmp);
    int64_t bad = !on || !tmp;
    if (!bad && comm->rank == 0) {
        size_t w = 0;
        for (size_t i = 0; i < nj->n; i++)
            if (nj->r[i].aligned_on_nccl)
                on[w++] = nj->r[i].rank;
        qsort(on, k, sizeof *on, cmp_i32);
    }
    st = comm->allreduce_max(comm->ctx, &bad, 1);
    if (st == MT_OK && bad)
        st = MT_ERR_NOMEM;
    if (st == MT_OK)
        st = comm->bcast(comm->ctx, on, k * sizeof *on, 0);
    if (st == MT_OK) {
        /* stable: the aligning rows first, in their order, then the rest */
        size_t w = 0;
        for (int pass = 0; pass < 2; pass++)
            for (size_t i = 0; i < n_rows; i++) {
                bool nccl_row = (rows[i].flags & MT_CI_NCCL) != 0;
                bool nccl_rank = k && bsearch(&rows[i].rank, on, k, sizeof *on, cmp_i32);
                if ((nccl_row == nccl_rank) == (pass == 0))
                    tmp[w++] = rows[i];
                if (pass == 0 && i + 1 == n_rows)
                    *n_use = w;
            }
        if (n_rows)
            memcpy(rows, tmp, n_rows * sizeof *rows);
    }
    free(on);
    free(tmp);
    return st;
}

mt_status_t mt_nccl_compare(const mt_comm_t *comm, const mt_cinst_t *rows, size_t n, const mt_align_result_t *al,
                         mt_nccl_job_t *nj)
{
    void *got = NULL;
    size_t len = 0;
    mt_status_t st = comm->gatherv(comm->ctx, rows, n * sizeof *rows, &got, &len, 0);
    if (st != MT_OK || comm->rank != 0 || !nj) {
        free(got);
        return st;
    }
    size_t m = len / sizeof(mt_cinst_t);
    mt_crow_t *all = malloc((al->n_rows + m ? al->n_rows + m : 1) * sizeof *all);
    if (!all) {
        free(got);
        return MT_ERR_NOMEM;
    }
    /* only the aligned rows of ranks that have the other source too */
    size_t w = 0;
    for (size_t i = 0; i < al->n_rows; i++)
        for (size_t k = 0; k < nj->n; k++)
            if (nj->r[k].rank == al->rows[i].rank && nj->r[k].with_kineto) {
                all[w++] = al->rows[i];
                break;
            }
    if (m) /* the other source's rows, compact as al->rows are */
        memcpy(all + w, mt_crow_compact(got, m), m * sizeof *all);
    free(got);
    /* The gathered rows' label ids are their processes' own: mt_nccl_agree
     * reads no labels, so they are left as they are. */
    st = mt_nccl_agree(all, w + m, al->clocks, al->n_clocks, &nj->agree, &nj->n_agree);
    free(all);
    for (size_t k = 0; st == MT_OK && k < nj->n; k++)
        for (size_t a = 0; a < nj->n_agree; a++)
            if (nj->agree[a].rank == nj->r[k].rank)
                nj->r[k].agree = &nj->agree[a];
    return st;
}

uint64_t mt_nccl_job_rows(const mt_nccl_job_t *nj)
{
    uint64_t n = 0;
    for (size_t i = 0; i < nj->n; i++)
        n += nj->r[i].info.rows;
    return n;
}

static const char *base(const char *p)
{
    const char *b = strrchr(p, '/');
    return b ? b + 1 : p;
}

void mt_nccl_job_warn(mt_warnings_t *w, const mt_nccl_job_t *nj)
{
#define NWARN(code, rank, ...) mt_warnings_add(w, code, rank, __VA_ARGS__)
    if (nj->n && !strcmp(nj->source, "mixed"))
        NWARN("nccl_mixed_sources", -1, "some ranks have only a Kineto trace and some only NCCL data: their collectives have different keys, "
              "so the two groups may not be aligned with each other\n");
    for (size_t i = 0; i < nj->n; i++) {
        const mt_nccl_rank_t *r = &nj->r[i];
        const char *p = base(r->path);
        if (mt_nccl_rank_pid_differs(r))
            NWARN("nccl_pid_differs", r->rank, "rank %d: %s is of pid %lld, its Kineto trace of pid %lld: not the same process? (joined by rank)\n",
                  r->rank, p, (long long)r->info.pid, (long long)r->kineto_pid);
        if (mt_nccl_rank_size_differs(r))
            NWARN("nccl_size_differs", r->rank, "rank %d: %s: the largest communicator has %d ranks, the Kineto trace's world %lld (joined by "
                  "rank)\n",
                  r->rank, p, r->info.comm_size, (long long)r->kineto_world);
        if (!r->with_kineto)
            NWARN("nccl_only", r->rank, "rank %d has NCCL data only (%s): collectives, clock and stragglers, no per-rank GPU analyses\n",
                  r->rank, p);
        if (r->info.dropped)
            NWARN("nccl_dropped", r->rank, "rank %d: %s: the plugin dropped %llu events (buffers full)\n", r->rank, p,
                  (unsigned long long)r->info.dropped);
        if (r->info.truncated && r->info.is_nccl == MT_NCCL_FMT_EXAMPLE)
            NWARN("nccl_truncated", r->rank, "rank %d: %s: the file ends before its closing ']' (copied while written?); its complete events "
                  "were used\n",
                  r->rank, p);
        else if (r->info.truncated)
            NWARN("nccl_truncated", r->rank, "rank %d: %s: the last line is incomplete (process killed?) and was ignored\n", r->rank, p);
        if (r->info.orphan)
            NWARN("nccl_orphan_channels", r->rank, "rank %d: %s: %llu kernel channel %s\n", r->rank, p, (unsigned long long)r->info.orphan,
                  r->info.is_nccl == MT_NCCL_FMT_EXAMPLE ? "events are outside any COLL/P2P task"
                                                         : "lines have no task line");
        if (r->info.p2p_left_out)
            NWARN("nccl_p2p_left_out", r->rank, "rank %d: %s: %llu P2P tasks of communicators other than the largest were left out (peer's global "
                  "rank unknown)\n",
                  r->rank, p, (unsigned long long)r->info.p2p_left_out);
        if (r->info.untimed && r->info.is_nccl == MT_NCCL_FMT_EXAMPLE)
            NWARN("nccl_untimed", r->rank, "rank %d: %s: %llu tasks have no kernel-channel GPU times (NCCL_PROFILE_EVENT_MASK needs the "
                  "KernelCh bit, 64)\n",
                  r->rank, p, (unsigned long long)r->info.untimed);
        else if (r->info.untimed)
            NWARN("nccl_untimed", r->rank, "rank %d: %s: %llu Inspector records have no kernel times (verbose logs have them: "
                  "NCCL_INSPECTOR_DUMP_VERBOSE=1)\n",
                  r->rank, p, (unsigned long long)r->info.untimed);
        if (r->info.tasks && !r->info.rows && !r->info.untimed)
            NWARN("nccl_no_gpu_times", r->rank, "rank %d: %s: no task has GPU times (NCCL sends kernel-channel events only "
                  "for work its proxy thread follows: none for send/recv to self, as NCCL 2.28.9 showed; or was the KernelCh "
                  "bit off in MERGETRACE_NCCL_MASK?)\n", r->rank,
                  p);
    }
#undef NWARN
}

void mt_nccl_job_free(mt_nccl_job_t *nj)
{
    free(nj->r);
    free(nj->agree);
    memset(nj, 0, sizeof *nj);
}
