/* mergetrace: the program. Shares the trace files among MPI processes, has
 * each process load its share with the serial core (one trace at a time,
 * keeping compact per-rank results), agrees on errors, aligns the clocks
 * from the collectives, writes the merged timeline through MPI-IO and
 * report.json, and prints the summary from process 0. */
#define _DEFAULT_SOURCE /* realpath */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "comm_mpi.h"
#include "heap.h"
#include "inputs.h"
#include "merged_io.h"
#include "mergetrace/mergetrace.h"
#include "mergetrace/report.h"
#include "mergetrace/report_html.h"
#include "nccl_job.h"
#include "options.h"
#include "timings.h"

/* What one process learned about one file; sent to process 0 as bytes. */
typedef struct file_result {
    int32_t index;          /* into the input list */
    int32_t status;         /* mt_status_t */
    int64_t rank;
    int32_t rank_source;    /* mt_rank_source_t */
    int32_t skipped;        /* found in a directory but not a trace: left out, reported */
    double load_s;
    mt_trace_summary_t sum;
    nccl_info_t nccl;       /* an NCCL plugin file: nccl.is_nccl */
    char message[1024];     /* the formatted error (or the skip reason) */
} file_result_t;

static int exit_code_for(mt_status_t st)
{
    switch (st) {
    case MT_OK: return MT_EXIT_OK;
    case MT_ERR_SYNTAX:
    case MT_ERR_FORMAT:
    case MT_ERR_RANGE:
    case MT_ERR_TRUNCATED:
    case MT_ERR_GZIP:
    case MT_ERR_NO_RANK:
    case MT_ERR_LIMIT:
    case MT_ERR_NOT_TRACE:
    case MT_ERR_NSYS: return MT_EXIT_BAD_INPUT;
    case MT_ERR_USAGE: return MT_EXIT_USAGE;
    default: return MT_EXIT_ERROR;
    }
}

/* Process 0 reads a small text file (the rank map) and broadcasts it, so
 * every process sees the same bytes. Collective. */
static int bcast_file(const char *path, char **text, size_t *len, char *msg, size_t cap, int me)
{
    long n = -1;
    char *buf = NULL;
    if (me == 0) {
        FILE *f = fopen(path, "rb");
        if (f && fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
            buf = malloc((size_t)n + 1);
            if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n)
                n = -1;
        } else {
            n = -1;
        }
        if (f)
            fclose(f);
        if (n < 0)
            snprintf(msg, cap, "--rank-map: %s: cannot read the file", path);
    }
    MPI_Bcast(&n, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    if (n < 0) {
        free(buf);
        return 1;
    }
    if (me != 0)
        buf = malloc((size_t)n + 1);
    int ok = buf != NULL, all_ok;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (!all_ok) {
        free(buf);
        snprintf(msg, cap, "out of memory");
        return 1;
    }
    MPI_Bcast(buf, (int)n, MPI_CHAR, 0, MPI_COMM_WORLD);
    buf[n] = '\0';
    *text = buf;
    *len = (size_t)n;
    return 0;
}

/* Broadcast the input list from process 0 (paths, sizes, flags). Collective. */
static int bcast_inputs(input_list_t *l, int me)
{
    uint64_t n = l->n, bytes = 0;
    if (me == 0)
        for (size_t i = 0; i < l->n; i++)
            bytes += strlen(l->files[i].path) + 1;
    uint64_t hdr[2] = {n, bytes};
    MPI_Bcast(hdr, 2, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    n = hdr[0];
    bytes = hdr[1];
    char *names = malloc(bytes ? bytes : 1);
    uint64_t *sizes = malloc((n ? n : 1) * 2 * sizeof *sizes); /* sizes, then from_dir flags */
    if (me == 0 && names && sizes) {
        char *p = names;
        for (size_t i = 0; i < l->n; i++) {
            size_t k = strlen(l->files[i].path) + 1;
            memcpy(p, l->files[i].path, k);
            p += k;
            sizes[i] = l->files[i].bytes;
            sizes[n + i] = l->files[i].from_dir;
        }
    }
    int ok = names && sizes, all_ok;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (!all_ok) {
        free(names);
        free(sizes);
        return 1;
    }
    MPI_Bcast(names, (int)bytes, MPI_CHAR, 0, MPI_COMM_WORLD);
    MPI_Bcast(sizes, (int)(2 * n), MPI_UINT64_T, 0, MPI_COMM_WORLD);
    int rc = 0;
    if (me != 0) {
        memset(l, 0, sizeof *l);
        l->files = calloc(n ? n : 1, sizeof *l->files);
        rc = !l->files;
        const char *p = names;
        for (uint64_t i = 0; !rc && i < n; i++) {
            l->files[i].path = strdup(p);
            l->files[i].bytes = sizes[i];
            l->files[i].from_dir = sizes[n + i] != 0;
            if (!l->files[i].path)
                rc = 1;
            p += strlen(p) + 1;
            l->n = i + 1;
        }
    }
    free(names);
    free(sizes);
    int bad = rc, any_bad;
    MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    return any_bad;
}

/* This process's compact state: results per file, collective rows and
 * ProfilerStep ranges of the ranks it loaded. */
typedef struct local {
    file_result_t *res;
    size_t n_res;
    mt_analysis_opts_t aopts;
    mt_buf_t analyses;      /* packed mt_rank_analysis_t of each loaded rank */
    mt_cinst_t *rows;
    size_t n_rows, cap_rows;
    mt_step_t *steps;
    size_t n_steps, cap_steps;
    double parse_s, passes_s; /* --timings: time in the loader and in the per-rank passes */
    uint64_t largest;         /* JSON bytes of the largest trace loaded here */
    nccl_xworld_t xw;         /* the job's communicator among NCCL example profiler files */
    mt_merge_facts_t **facts; /* per res[]: the merged write's first pass, done while loading (NULL: none) */
} local_t;

/* A process that fails tells every other process at once (tag FAIL_TAG),
 * so they stop loading within one read chunk instead of finishing their
 * share first; the agreement on status afterwards is unchanged. */
#define FAIL_TAG 9001

typedef struct fail_note {
    int me, n_procs;
    bool sent, seen;
    int payload;
    MPI_Request *reqs;
} fail_note_t;

static bool other_failed(void *ctx)
{
    fail_note_t *fn = ctx;
    if (!fn->seen) {
        int flag = 0;
        MPI_Iprobe(MPI_ANY_SOURCE, FAIL_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        fn->seen = flag != 0;
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
            fn->reqs[p] = MPI_REQUEST_NULL;
        else
            MPI_Isend(&fn->payload, 1, MPI_INT, p, FAIL_TAG, MPI_COMM_WORLD, &fn->reqs[p]);
    fn->sent = true;
}

/* After the status agreement: complete our sends and receive exactly the
 * notes the other failed processes sent us, so none is left in flight. */
static void settle_notes(fail_note_t *fn)
{
    int sent = fn->sent, senders = 0;
    MPI_Allreduce(&sent, &senders, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (fn->sent) {
        MPI_Waitall(fn->n_procs, fn->reqs, MPI_STATUSES_IGNORE);
        senders--;
    }
    for (int i = 0; i < senders; i++) {
        int x;
        MPI_Recv(&x, 1, MPI_INT, MPI_ANY_SOURCE, FAIL_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    free(fn->reqs);
    fn->reqs = NULL;
}

static void load_one(const input_file_t *f, int32_t index, const options_t *o, const mt_rankmap_t *map,
                     bool only_file, fail_note_t *fn, local_t *L, file_result_t *r)
{
    memset(r, 0, sizeof *r);
    r->index = index;
    r->rank = -1;
    mt_load_opts_t lo;
    mt_load_opts_init(&lo);
    lo.strict = o->strict;
    lo.should_stop = other_failed;
    lo.should_stop_ctx = fn;
    lo.rank_hint = (int)mt_rankmap_lookup(map, f->path);
    if (lo.rank_hint < 0)
        lo.rank_hint = (int)mt_rank_from_filename(f->path);
    mt_error_t err;
    mt_trace_t *t = NULL;
    double t0 = MPI_Wtime();
    int kind = nccl_classify(f->path, f->from_dir, r->message, sizeof r->message);
    if (kind == NCCL_FILE_SKIP) {
        r->skipped = 1;
        return;
    }
    if (kind == NCCL_FILE_PLUGIN) {
        mt_rank_source_t src;
        mt_status_t st = nccl_load_file(f->path, map, only_file, &L->xw, &L->rows, &L->n_rows, &L->cap_rows,
                                        &r->rank, &src, &r->nccl, &err);
        if (st == MT_OK && r->nccl.left_out) {
            r->skipped = 1;
            r->load_s = MPI_Wtime() - t0;
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
        r->load_s = MPI_Wtime() - t0;
        r->status = (int32_t)st;
        if (st != MT_OK)
            mt_error_format(&err, r->message, sizeof r->message);
        return;
    }
    /* The merged write needs the file's pids and time base: learn them in
     * this parse rather than in one more of its own. */
    mt_merge_facts_t *facts = NULL;
    if (!o->no_merge && mt_merge_facts_new(&facts) == MT_OK) {
        lo.on_event = mt_merge_facts_event;
        lo.on_event_ctx = facts;
    }
    mt_status_t st = mt_trace_load(f->path, &lo, &t, &err);
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
        r->load_s = MPI_Wtime() - t0;
        return;
    }
    if (st == MT_OK) {
        mt_rank_source_t src;
        st = mt_rank_resolve(t, f->path, map, &r->rank, &src, &err);
        if (st == MT_ERR_NO_RANK && only_file) {
            /* One trace alone needs no rank to be analysed: call it 0. */
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
            st = mt_cinst_extract(t, (int32_t)r->rank, &L->rows, &L->n_rows, &L->cap_rows);
        if (st == MT_OK)
            st = mt_trace_steps(t, (int32_t)r->rank, &L->steps, &L->n_steps, &L->cap_steps);
        if (st == MT_OK) {
            /* The per-rank passes run here, while the trace is in memory;
             * only their compact result travels. */
            mt_rank_analysis_t *a = NULL;
            void *bytes = NULL;
            size_t len = 0;
            double tp = MPI_Wtime();
            L->parse_s += tp - t0;
            mt_analysis_opts_t ao = L->aopts;
            ao.rows = L->rows + rows_before; /* this rank's rows tell all_to_all from P2P kernels */
            ao.n_rows = L->n_rows - rows_before;
            st = mt_analyze_rank(t, (int32_t)r->rank, &ao, &a);
            if (st == MT_OK)
                st = mt_rank_analysis_pack(a, &bytes, &len);
            if (st == MT_OK)
                st = mt_buf_append(&L->analyses, bytes, len);
            free(bytes);
            mt_rank_analysis_free(a);
            L->passes_s += MPI_Wtime() - tp;
            if (r->sum.bytes_json > L->largest)
                L->largest = r->sum.bytes_json;
        }
        if (st == MT_ERR_NOMEM)
            mt_error_set(&err, st, "summarising the trace");
    }
    r->load_s = MPI_Wtime() - t0;
    r->status = (int32_t)st;
    if (st != MT_OK)
        mt_error_format(&err, r->message, sizeof r->message);
    mt_trace_free(t);
    heap_release();
}

static const char *short_path(const char *p)
{
    const char *b = strrchr(p, '/');
    return b ? b + 1 : p;
}

static int by_rank(const void *a, const void *b)
{
    const file_result_t *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return x->index - y->index;
}

static int by_index(const void *a, const void *b)
{
    const file_result_t *x = a, *y = b;
    return (x->index > y->index) - (x->index < y->index);
}

/* Process 0's view of the job after loading. */
typedef struct job {
    file_result_t *res;      /* traces sorted by rank, then the skipped files */
    size_t n;                /* traces */
    file_result_t *skipped;
    size_t n_skipped;
    int64_t world;
    bool world_disagree;
    int64_t *missing;
    size_t n_missing;
    nccl_job_t nccl;         /* the NCCL plugin files, by rank */
} job_t;

/* Process 0: a rank's NCCL plugin file joins its Kineto trace. Each NCCL
 * file is recorded in j->nccl; one that has a Kineto trace of the same rank
 * beside it leaves res[], so res[] keeps one entry per rank (the Kineto
 * trace when there is one). Two files of one kind for a rank stay, for the
 * duplicate check. res[0..*n) is sorted by rank. */
static int nccl_split(file_result_t *res, size_t *n, job_t *j)
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
                if (nccl_job_add(&j->nccl, (int32_t)res[i].rank, res[i].index, &res[i].nccl, nk > 0)) {
                    fprintf(stderr, "mergetrace: out of memory\n");
                    return 1;
                }
                for (size_t k = a; nk == 1 && k < b; k++)
                    if (!res[k].nccl.is_nccl)
                        nccl_job_kineto(&j->nccl, (int32_t)res[i].rank, res[k].sum.host_pid, res[k].sum.world_size);
                if (nk == 1)
                    continue; /* joins the rank's trace */
            }
            res[w++] = res[i];
        }
        a = b;
    }
    *n = w;
    nccl_job_decide(&j->nccl, w);
    return 0;
}

/* Process 0: order the results and check the rank set. Returns an exit
 * code (0 to go on). */
static int check_job(const input_list_t *l, file_result_t *res, size_t n_res, job_t *j)
{
    memset(j, 0, sizeof *j);
    size_t n = 0;
    for (size_t i = 0; i < n_res; i++)
        if (!res[i].skipped) {
            file_result_t tmp = res[n];
            res[n++] = res[i];
            res[i] = tmp;
        }
    j->res = res;
    j->n = n;
    j->skipped = res + n;
    j->n_skipped = n_res - n;
    /* in input order, whichever process loaded them */
    qsort(j->skipped, j->n_skipped, sizeof *j->skipped, by_index);
    if (!n) {
        fprintf(stderr, "mergetrace: no trace among the %zu JSON file%s found (%s: %s)\n", n_res, n_res == 1 ? "" : "s",
                l->files[j->skipped[0].index].path, j->skipped[0].message);
        return MT_EXIT_BAD_INPUT;
    }
    qsort(res, n, sizeof *res, by_rank);
    if (nccl_split(res, &n, j) || !n) /* n > 0: a trace that an NCCL file joins stays */
        return MT_EXIT_ERROR;
    j->n = n;
    for (size_t i = 1; i < n; i++)
        if (res[i].rank == res[i - 1].rank) {
            fprintf(stderr, "mergetrace: rank %lld appears twice: %s and %s (use --rank-map to say which is which)\n",
                    (long long)res[i].rank, l->files[res[i - 1].index].path, l->files[res[i].index].path);
            return MT_EXIT_BAD_INPUT;
        }
    int64_t world = -1;
    for (size_t i = 0; i < n; i++) {
        int64_t w = res[i].sum.world_size;
        if (w <= 0)
            continue;
        if (world >= 0 && w != world)
            j->world_disagree = true;
        if (w > world)
            world = w;
    }
    if (world < res[n - 1].rank + 1)
        world = res[n - 1].rank + 1;
    j->world = world;
    if (world <= (int64_t)1 << 24) {
        j->missing = malloc((size_t)world * sizeof *j->missing);
        size_t k = 0;
        for (int64_t r = 0; j->missing && r < world; r++) {
            while (k < n && res[k].rank < r)
                k++;
            if (k >= n || res[k].rank != r)
                j->missing[j->n_missing++] = r;
        }
    }
    return MT_EXIT_OK;
}

static mt_status_t file_write(void *ctx, const void *data, size_t len)
{
    return fwrite(data, 1, len, (FILE *)ctx) == len ? MT_OK : MT_ERR_IO;
}

/* Write report.json (html NULL) or report.html under a temporary name,
 * then rename. */
static int write_report(const char *dir, const mt_report_t *rep, const mt_html_opts_t *html, char *msg, size_t cap)
{
    char path[PATH_MAX], tmp[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/%s", dir, html ? "report.html" : "report.json");
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        snprintf(msg, cap, "%.900s: cannot create (%s)", tmp, strerror(errno));
        return 1;
    }
    mt_status_t st = html ? mt_report_html(rep, html, file_write, f) : mt_report_json(rep, file_write, f);
    if (fclose(f) != 0)
        st = MT_ERR_IO;
    if (st != MT_OK || rename(tmp, path) != 0) {
        snprintf(msg, cap, "%.900s: write failed (%s)", path, st == MT_ERR_NOMEM ? "out of memory" : strerror(errno));
        remove(tmp);
        return 1;
    }
    return 0;
}

static mt_status_t stdout_write(void *ctx, const void *data, size_t len)
{
    (void)ctx;
    return fwrite(data, 1, len, stdout) == len ? MT_OK : MT_ERR_IO;
}

/* The terminal summary (process 0). */
static double pct(int64_t part, int64_t whole)
{
    return whole > 0 ? 100.0 * (double)part / (double)whole : 0.0;
}

/* Per-rank GPU time and the heaviest annotations, at a glance. */
static void print_analyses(FILE *out, const char *B, const char *N, const job_t *j,
                           const mt_rank_analysis_t *const *an)
{
    if (!an || !an[0])
        return; /* none, or NCCL data only (results come first) */
    fprintf(out, "\n%sGPU time per rank%s (%% of the span from first to last GPU activity)\n", B, N);
    fprintf(out, "%s%5s %10s %8s %8s %8s %8s %9s %13s %11s%s\n", B, "rank", "span ms", "compute", "comm", "memory",
            "idle", "overlap", "host wait ms", "launch-bd", N);
    for (size_t i = 0; i < j->n; i++) {
        const mt_rank_analysis_t *a = an[i];
        if (!a)
            continue;
        /* host wait is summed over streams, so it can exceed the rank's idle time */
        fprintf(out, "%5d %10.3f %7.1f%% %7.1f%% %7.1f%% %7.1f%% %8.1f%% %13.3f %10.1f%%\n", a->rank, a->span_ns / 1e6,
                pct(a->compute_ns, a->span_ns), pct(a->comm_ns, a->span_ns), pct(a->memory_ns, a->span_ns),
                pct(a->idle_ns, a->span_ns), pct(a->overlap_ns, a->comm_total_ns), a->host_wait_ns / 1e6,
                pct(a->launch_bound_ns, a->idle_ns));
    }
    /* The heaviest annotations summed over ranks (GPU time they caused). */
    typedef struct tot {
        const char *name;
        uint64_t count;
        int64_t cpu, gpu;
    } tot_t;
    tot_t t[8];
    size_t nt = 0;
    int64_t busy = 0;
    for (size_t i = 0; i < j->n; i++)
        if (an[i])
            busy += an[i]->busy_ns;
    /* names of rank order's first result with the most GPU time; sum each over ranks */
    for (size_t i = 0; i < j->n && nt < 8; i++) {
        const mt_rank_analysis_t *a = an[i];
        for (size_t p = 0; a && p < a->n_proj && nt < 8; p++) {
            const char *nm = a->strings + a->proj[p].name.off;
            bool seen = false;
            for (size_t k = 0; k < nt; k++)
                seen |= !strcmp(t[k].name, nm);
            if (seen)
                continue;
            tot_t x = {nm, 0, 0, 0};
            for (size_t r = 0; r < j->n; r++)
                for (size_t q = 0; an[r] && q < an[r]->n_proj; q++)
                    if (!strcmp(an[r]->strings + an[r]->proj[q].name.off, nm)) {
                        x.count += an[r]->proj[q].count;
                        x.cpu += an[r]->proj[q].cpu_ns;
                        x.gpu += an[r]->proj[q].gpu_ns;
                    }
            t[nt++] = x;
        }
        break; /* the first rank's list names the candidates */
    }
    if (!nt)
        return;
    fprintf(out, "\n%sGPU projection%s (GPU work launched inside each annotation, all ranks)\n", B, N);
    fprintf(out, "%s%-40s %8s %12s %12s %8s%s\n", B, "annotation", "count", "CPU ms", "GPU ms", "GPU %", N);
    for (size_t k = 0; k < nt && k < 6; k++)
        fprintf(out, "%-40.40s %8llu %12.3f %12.3f %7.1f%%\n", t[k].name, (unsigned long long)t[k].count,
                t[k].cpu / 1e6, t[k].gpu / 1e6, pct(t[k].gpu, busy));
}

/* Ranks that share no collective with the reference's group cannot be
 * aligned with it; when they form groups of their own, the directory most
 * likely holds traces of more than one job. Say so, with the groups. */
static void warn_groups(FILE *out, const job_t *j, const mt_align_result_t *al, bool *head, const char *Y,
                        const char *N)
{
    int32_t n_groups = 0, multi = 0;
    for (size_t i = 0; i < al->n_clocks; i++)
        n_groups = al->clocks[i].group + 1 > n_groups ? al->clocks[i].group + 1 : n_groups;
    for (int32_t g = 0; g < n_groups; g++) {
        size_t k = 0;
        for (size_t i = 0; i < al->n_clocks; i++)
            k += al->clocks[i].group == g;
        multi += k >= 2;
    }
    if (multi < 2)
        return;
    if (!*head) {
        fprintf(out, "\n%swarnings%s\n", Y, N);
        *head = true;
    }
    fprintf(out, "  the ranks form %d groups that share no collective:", (int)n_groups);
    for (int32_t g = 0; g < n_groups; g++) {
        fprintf(out, "%s ranks", g ? " |" : "");
        size_t shown = 0;
        for (size_t i = 0; i < al->n_clocks && i < j->n; i++)
            if (al->clocks[i].group == g && shown++ < 8)
                fprintf(out, " %lld", (long long)j->res[i].rank);
        if (shown > 8)
            fprintf(out, " ...");
    }
    fprintf(out, "\n  they look like traces of different jobs%s: only group 0 (with the reference rank) is aligned\n",
            j->world_disagree ? " (their world sizes differ too)" : "");
}

static void print_summary(const options_t *o, const input_list_t *l, const job_t *j, const mt_align_result_t *al,
                          const mt_rank_analysis_t *const *an, const mt_cross_t *cross, const mt_pipeline_t *pipe,
                          const char *pipe_note, const mt_gate_t *gates, size_t n_gates, int n_procs, double t_load,
                          double t_align, double t_merge, const char *merged_path, uint64_t merged_events,
                          bool merge_failed)
{
    FILE *out = stdout;
    /* Under mpirun stdout is often a pseudo-terminal even when the user
     * pipes mpirun's output, so "auto" means no colour there. */
    bool under_mpirun = getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") || getenv("PMIX_RANK");
    bool color = o->color == 1 || (o->color < 0 && isatty(1) && !under_mpirun && !getenv("NO_COLOR"));
    const char *B = color ? "\033[1m" : "", *Y = color ? "\033[33m" : "", *N = color ? "\033[0m" : "";
    uint64_t json = 0, events = 0, kernels = 0;
    for (size_t i = 0; i < j->n; i++) {
        json += j->res[i].sum.bytes_json;
        events += j->res[i].sum.events;
        kernels += j->res[i].sum.by_class[MT_CLASS_COMM];
    }
    fprintf(out, "%smergetrace %s%s: %zu rank%s of world size %lld, %d process%s\n", B, MERGETRACE_VERSION, N, j->n,
            j->n == 1 ? "" : "s", (long long)j->world, n_procs, n_procs == 1 ? "" : "es");
    fprintf(out, "loaded %.1f MB of JSON, %llu events in %.3f s (%.0f MB/s); aligned in %.3f s", json / 1e6,
            (unsigned long long)events, t_load, t_load > 0 ? json / 1e6 / t_load : 0.0, t_align);
    if (merged_path)
        fprintf(out, "; merged trace in %.3f s", t_merge);
    fprintf(out, "\n\n");
    const mt_match_stats_t *m = &al->match;
    uint64_t inst = m->full + m->partial + m->unmatched + m->mismatched;
    fprintf(out, "collectives: %llu kernel%s -> %llu instance%s: %llu full, %llu partial, %llu unmatched, %llu mismatched\n",
            (unsigned long long)m->rows, m->rows == 1 ? "" : "s", (unsigned long long)inst, inst == 1 ? "" : "s",
            (unsigned long long)m->full,
            (unsigned long long)m->partial, (unsigned long long)m->unmatched, (unsigned long long)m->mismatched);
    static const char *const key_names[MT_KEY_COUNT_] = {"Comms Id", "group+Seq", "group+order", "stream+order", "P2P"};
    fprintf(out, "  matched by:");
    for (int k = 0; k < MT_KEY_COUNT_; k++)
        if (m->by_key[k])
            fprintf(out, " %s %llu", key_names[k], (unsigned long long)m->by_key[k]);
    fprintf(out, "%s\n\n", inst ? "" : " (none)");
    int32_t ref = -1;
    for (size_t i = 0; i < al->n_clocks; i++)
        if (al->clocks[i].reference)
            ref = al->clocks[i].rank;
    fprintf(out, "%sclock alignment%s onto rank %d%s\n", B, N, ref, o->no_align ? " (disabled: --no-align)" : "");
    fprintf(out, "%s%5s  %-26s %9s %11s %10s %8s %17s %5s%s\n", B, "rank", "file", "events", "offset ms", "drift ppm",
            "matched", "resid p50/p99 us", "viol", N);
    for (size_t i = 0; i < j->n; i++) {
        const file_result_t *r = &j->res[i];
        const mt_clock_t *c = &al->clocks[i];
        char resid[32], name[32];
        snprintf(resid, sizeof resid, "%.1f / %.1f", c->residual_p50_ns / 1e3, c->residual_p99_ns / 1e3);
        fprintf(out, "%5lld  %-26.26s %9llu %11.3f %10.3f %8llu %17s %5llu  %s\n", (long long)r->rank,
                inputs_label(l->files[r->index].path, 26, name, sizeof name), (unsigned long long)r->sum.events,
                c->offset_ns / 1e6, c->drift_ppm, (unsigned long long)c->matched, resid, (unsigned long long)c->violations,
                c->reference ? "ref" : c->connected ? "" : "NOT CONNECTED");
    }
    nccl_print(out, B, N, &j->nccl, l);
    print_analyses(out, B, N, j, an);
    if (cross) {
        fprintf(out, "\n");
        (void)mt_report_cross_text(cross, stdout_write, NULL);
    }
    if (pipe) {
        fprintf(out, "\n");
        (void)mt_report_pipeline_text(pipe, stdout_write, NULL);
    }
    if (pipe_note)
        fprintf(out, "%spipeline: %s\n", pipe ? "" : "\n", pipe_note);
    if (n_gates) {
        size_t passed = 0;
        for (size_t i = 0; i < n_gates; i++)
            passed += gates[i].pass;
        fprintf(out, "\n%sgates%s: %zu of %zu passed\n", B, N, passed, n_gates);
        for (size_t i = 0; i < n_gates; i++) {
            if (gates[i].measured)
                fprintf(out, "  %s %s (%.6g)\n", gates[i].pass ? "pass" : "FAIL", gates[i].expr, gates[i].value);
            else
                fprintf(out, "  FAIL %s (not measured: %s)\n", gates[i].expr, gates[i].why);
        }
    }
    /* Warnings: everything skipped or doubtful, so the numbers can be trusted. */
    bool head = false;
#define WARN(...)                                                      \
    do {                                                               \
        if (!head) {                                                   \
            fprintf(out, "\n%swarnings%s\n", Y, N);                    \
            head = true;                                               \
        }                                                              \
        fprintf(out, "  " __VA_ARGS__);                                \
    } while (0)
    if (j->n_missing) {
        WARN("%zu of %lld ranks have no trace:", j->n_missing, (long long)j->world);
        for (size_t i = 0; i < j->n_missing && i < 32; i++)
            fprintf(out, " %lld", (long long)j->missing[i]);
        fprintf(out, "%s\n", j->n_missing > 32 ? " ..." : "");
    }
    for (size_t i = 0; i < j->n_skipped; i++)
        if (j->skipped[i].nccl.left_out)
            WARN("left out %s: %s\n", l->files[j->skipped[i].index].path, j->skipped[i].message);
        else
            WARN("skipped %s: not a trace (%s)\n", l->files[j->skipped[i].index].path, j->skipped[i].message);
    if (j->world_disagree)
        WARN("the traces disagree on world_size; using the largest, %lld\n", (long long)j->world);
    if (kernels == 0 && nccl_job_rows(&j->nccl) == 0)
        WARN("no communication kernels in any trace: nothing to align the clocks with\n");
    nccl_warn(out, Y, N, &head, &j->nccl, l);
    for (size_t i = 0; i < j->n; i++) {
        const file_result_t *r = &j->res[i];
        const mt_trace_summary_t *s = &r->sum;
        const mt_clock_t *c = &al->clocks[i];
        const char *p = l->files[r->index].path;
        if (!c->connected)
            WARN("rank %lld shares no matched collective with rank %d: its clock is left uncorrected\n",
                 (long long)r->rank, ref);
        if (c->violations)
            WARN("rank %lld: %llu collectives end before their last participant started, beyond the residual "
                 "(clock fit doubtful)\n",
                 (long long)r->rank, (unsigned long long)c->violations);
        if (s->truncated)
            WARN("rank %lld: %s is truncated at byte %llu: %llu events loaded, the rest is lost (--strict makes "
                 "this an error)\n",
                 (long long)r->rank, p, (unsigned long long)s->truncated_at, (unsigned long long)s->events);
        if (s->events && s->first_ns < 100000000000000000LL && s->ts_style != MT_TS_REL)
            WARN("rank %lld: %s: timestamps are not on the Unix epoch%s\n", (long long)r->rank, short_path(p),
                 s->truncated ? " (baseTimeNanoseconds was probably in the lost tail)" : "");
        if (s->world_size > 0 && r->rank >= s->world_size)
            WARN("rank %lld: %s: rank is not below the trace's world_size %lld\n", (long long)r->rank, p,
                 (long long)s->world_size);
        if (s->other_cats)
            WARN("rank %lld: %llu events of unknown categories kept but not analysed\n", (long long)r->rank,
                 (unsigned long long)s->other_cats);
        if (s->bad_utf8)
            WARN("rank %lld: %llu strings held invalid UTF-8 (replaced by U+FFFD)\n", (long long)r->rank,
                 (unsigned long long)s->bad_utf8);
        if (s->neg_dur)
            WARN("rank %lld: %llu events had a negative duration (taken as 0)\n", (long long)r->rank,
                 (unsigned long long)s->neg_dur);
        if (s->by_class[MT_CLASS_COMM] > s->link.comm_with_coll)
            WARN("rank %lld: %llu communication kernels could not be tied to a collective\n", (long long)r->rank,
                 (unsigned long long)(s->by_class[MT_CLASS_COMM] - s->link.comm_with_coll));
        if (r->rank_source == MT_RANK_FROM_FILENAME)
            WARN("rank %lld: %s has no distributedInfo.rank; rank taken from the file name\n", (long long)r->rank,
                 short_path(p));
        if (r->rank_source == MT_RANK_FROM_DEFAULT)
            WARN("%s names no rank; as the only input it is taken as rank 0\n", short_path(p));
    }
    warn_groups(out, j, al, &head, Y, N);
    if (m->partial)
        WARN("%llu collective instances lack some participants (those ranks' traces miss the kernels: cut short, "
             "dropped events, or not the same job)\n",
             (unsigned long long)m->partial);
    if (m->mismatched)
        WARN("%llu collective instances disagree across ranks (collective or size): not used for alignment\n",
             (unsigned long long)m->mismatched);
    if (merge_failed)
        WARN("the merged trace was not written (see the error above)\n");
#undef WARN
    fprintf(out, "\nwrote %s/report.json", o->out_dir);
    if (merged_path)
        fprintf(out, " and %s (%llu events)", merged_path, (unsigned long long)merged_events);
    fprintf(out, "\n");
}

/* The window in corrected ns, from seconds after the job's start or from
 * ProfilerStep numbers. Process 0 only; returns false when the steps are
 * not in any trace. */
static bool compute_window(const options_t *o, const job_t *j, const mt_align_result_t *al, const mt_step_t *steps,
                           size_t n_steps, int64_t *a, int64_t *b)
{
    if (!o->window_steps) {
        int64_t start = INT64_MAX;
        for (size_t i = 0; i < j->n; i++)
            if (j->res[i].sum.events) {
                int64_t s = mt_clock_apply(&al->clocks[i], j->res[i].sum.first_ns);
                start = s < start ? s : start;
            }
        if (start == INT64_MAX)
            start = 0;
        *a = start + (int64_t)llround(o->window_a * 1e9);
        *b = start + (int64_t)llround(o->window_b * 1e9);
        return true;
    }
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (size_t i = 0; i < n_steps; i++) {
        const mt_step_t *s = &steps[i];
        if ((double)s->step < o->window_a || (double)s->step > o->window_b)
            continue;
        const mt_clock_t *c = NULL;
        for (size_t k = 0; k < j->n; k++)
            if (j->res[k].rank == s->rank)
                c = &al->clocks[k];
        int64_t x = mt_clock_apply(c, s->start_ns), y = mt_clock_apply(c, s->end_ns);
        lo = x < lo ? x : lo;
        hi = y > hi ? y : hi;
    }
    if (lo > hi)
        return false;
    *a = lo;
    *b = hi;
    return true;
}

static int make_dir(const char *d, char *msg, size_t cap)
{
    if (mkdir(d, 0777) == 0 || errno == EEXIST) {
        struct stat st;
        if (stat(d, &st) == 0 && S_ISDIR(st.st_mode))
            return 0;
        snprintf(msg, cap, "%.900s: exists and is not a directory", d);
        return 1;
    }
    snprintf(msg, cap, "%.900s: cannot create the output directory (%s)", d, strerror(errno));
    return 1;
}

/* The outputs must never overwrite an input. */
static int output_is_input(const char *out_path, const input_list_t *l)
{
    char a[PATH_MAX], b[PATH_MAX];
    if (!realpath(out_path, a))
        return 0; /* does not exist yet: cannot be an input */
    for (size_t i = 0; i < l->n; i++)
        if (realpath(l->files[i].path, b) && !strcmp(a, b))
            return 1;
    return 0;
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* The stages to measure, from the options or the point-to-point traffic,
 * then the pipeline numbers. *pipe stays NULL when there is no pipeline;
 * note gets a line for the report when something was left out. */
static mt_status_t run_pipeline(const options_t *o, const int32_t *ranks, size_t n_ranks, const mt_align_result_t *al,
                                const mt_rank_analysis_t *const *an, size_t n_an, mt_pipeline_t **pipe, char *note,
                                size_t cap)
{
    *pipe = NULL;
    mt_pp_stages_t st = {0};
    mt_status_t rc = MT_OK;
    char msg[256] = "";
    if (o->n_stage) {
        size_t total = 0;
        for (size_t s = 0; s < o->n_stage; s++)
            total += o->stage_ranks[s] ? o->stage_n_ranks[s] : n_ranks;
        st.first = calloc(o->n_stage + 1, sizeof *st.first);
        st.ranks = malloc((total ? total : 1) * sizeof *st.ranks);
        st.marker = calloc(o->n_stage, sizeof *st.marker);
        st.name = calloc(o->n_stage, sizeof *st.name);
        if (!st.first || !st.ranks || !st.marker || !st.name) {
            mt_pp_stages_free(&st);
            return MT_ERR_NOMEM;
        }
        st.n = o->n_stage;
        st.source = MT_PP_FROM_ANNOTATIONS;
        size_t b = 0;
        for (size_t s = 0; s < o->n_stage; s++) {
            st.first[s] = b;
            st.marker[s] = (uint32_t)(s + 1);
            snprintf(st.name[s], sizeof st.name[s], "%s", o->stage_name[s]);
            const int32_t *r = o->stage_ranks[s] ? o->stage_ranks[s] : ranks;
            size_t n = o->stage_ranks[s] ? o->stage_n_ranks[s] : n_ranks;
            memcpy(st.ranks + b, r, n * sizeof *r);
            b += n;
        }
        st.first[o->n_stage] = b;
        if (o->pp_stages || o->pp_blocks)
            snprintf(note, cap, "both --stage and %s were given: the OverlapScore uses the --stage annotation stages",
                     o->pp_stages ? "--pp-stages" : "--pp");
    } else if (o->pp_stages) {
        rc = mt_pp_stages_parse(o->pp_stages, &st, msg, sizeof msg);
    } else if (o->pp_blocks) {
        rc = mt_pp_stages_blocks(ranks, n_ranks, o->pp_blocks, &st, msg, sizeof msg);
        if (rc == MT_ERR_USAGE) {
            snprintf(note, cap, "%s: no pipeline section", msg);
            return MT_OK;
        }
    } else {
        rc = mt_pp_stages_infer(al->rows, al->n_rows, al->clocks, al->n_clocks, &st);
    }
    if (rc != MT_OK) {
        mt_pp_stages_free(&st);
        return rc;
    }
    if (st.n < 2 && !(st.n == 1 && st.source == MT_PP_FROM_ANNOTATIONS)) {
        mt_pp_stages_free(&st);
        return MT_OK; /* no pipeline */
    }
    /* Every stage's leader must be a loaded rank. */
    for (size_t s = 0; s < st.n; s++) {
        size_t k = st.first[s];
        while (k < st.first[s + 1] && !bsearch(&st.ranks[k], ranks, n_ranks, sizeof *ranks, cmp_i32))
            k++;
        if (k == st.first[s + 1]) {
            snprintf(note, cap, "no rank of %s was loaded: no pipeline section", st.name[s]);
            mt_pp_stages_free(&st);
            return MT_OK;
        }
        if (k > st.first[s]) {
            /* leading ranks that were not loaded: the lowest loaded rank leads */
            size_t miss = k - st.first[s];
            memmove(st.ranks + st.first[s], st.ranks + k, (st.first[s + 1] - k) * sizeof *st.ranks);
            size_t total = st.first[st.n];
            memmove(st.ranks + st.first[s + 1] - miss, st.ranks + st.first[s + 1],
                    (total - st.first[s + 1]) * sizeof *st.ranks);
            for (size_t t = s + 1; t <= st.n; t++)
                st.first[t] -= miss;
            snprintf(note, cap, "%zu rank%s of %s had no trace: the stage is led by rank %d", miss,
                     miss == 1 ? "" : "s", st.name[s], (int)st.ranks[st.first[s]]);
        }
    }
    mt_pp_opts_t po = {.warmup = o->warmup};
    mt_pp_source_t source = st.source;
    rc = mt_pipeline_analyze(&st, &po, an, n_an, al->clocks, al->n_clocks, pipe);
    mt_pp_stages_free(&st);
    if (rc == MT_OK && source == MT_PP_FROM_P2P && (*pipe)->n_chunks == 0) {
        /* Stages guessed from the traffic but nothing to measure them by:
         * say so in a line rather than print an empty section. */
        snprintf(note, cap,
                 "point-to-point traffic suggests %zu stages, but no chunk marker (ProfilerStep#N, or --chunk) is "
                 "on every stage leader: no pipeline numbers",
                 (*pipe)->stages.n);
        mt_pipeline_free(*pipe);
        *pipe = NULL;
    }
    return rc;
}

int main(int argc, char **argv)
{
    heap_setup();
    MPI_Init(&argc, &argv);
    double t_start = MPI_Wtime();
    MPI_Comm world_comm = MPI_COMM_WORLD;
    int me, n_procs;
    MPI_Comm_rank(world_comm, &me);
    MPI_Comm_size(world_comm, &n_procs);
    mt_comm_t comm;
    comm_mpi_init(&comm, &world_comm);

    options_t o;
    int code = options_parse(argc, argv, &o, me == 0);
    /* Every process parses the same arguments, but only process 0 speaks:
     * agree, so one that failed alone (out of memory) cannot leave the
     * others waiting in a collective call. */
    int agreed = code;
    MPI_Allreduce(&code, &agreed, 1, MPI_INT, MPI_MAX, world_comm);
    if (agreed >= 0 && code < 0) {
        if (me == 0)
            fprintf(stderr, "mergetrace: out of memory (reading the command line on another process)\n");
        code = agreed;
    }
    if (code >= 0) {
        options_free(&o);
        MPI_Finalize();
        return code;
    }

    char msg[1400] = "";
    input_list_t files = {0};
    int rc = 0;
    if (me == 0)
        rc = inputs_collect(o.inputs, o.n_inputs, o.recursive, &files, msg, sizeof msg);
    MPI_Bcast(&rc, 1, MPI_INT, 0, world_comm);
    if (rc) {
        if (me == 0)
            fprintf(stderr, "mergetrace: %s\n", msg);
        inputs_free(&files);
        options_free(&o);
        MPI_Finalize();
        return rc == 2 ? MT_EXIT_BAD_INPUT : MT_EXIT_ERROR;
    }
    if (bcast_inputs(&files, me)) {
        if (me == 0)
            fprintf(stderr, "mergetrace: out of memory sharing the file list\n");
        inputs_free(&files);
        options_free(&o);
        MPI_Finalize();
        return MT_EXIT_ERROR;
    }
    inputs_assign(&files, n_procs);

    mt_rankmap_t *map = NULL;
    if (o.rank_map) {
        char *text = NULL;
        size_t len = 0;
        int bad = bcast_file(o.rank_map, &text, &len, msg, sizeof msg, me);
        mt_error_t err;
        if (!bad && mt_rankmap_parse(text, len, o.rank_map, &map, &err) != MT_OK) {
            mt_error_format(&err, msg, sizeof msg);
            bad = 2;
        }
        free(text);
        if (bad) {
            if (me == 0)
                fprintf(stderr, "mergetrace: %s\n", msg);
            inputs_free(&files);
            options_free(&o);
            MPI_Finalize();
            return bad == 2 ? MT_EXIT_BAD_INPUT : MT_EXIT_ERROR;
        }
    }

    /* ---- load this process's share, one trace at a time ---- */
    local_t L = {0};
    mt_analysis_opts_init(&L.aopts);
    L.aopts.kernel_wait_ns = o.kernel_wait_ns;
    L.aopts.project_ops = o.project_ops;
    L.aopts.top_kernels = o.top_kernels;
    mt_pp_markers_t *markers = NULL;
    if (mt_pp_markers_compile(o.chunk_regex, (const char *const *)o.stage_regex, o.n_stage,
                              (const int32_t *const *)o.stage_ranks, o.stage_n_ranks, &markers, msg,
                              sizeof msg) != MT_OK) {
        if (me == 0)
            fprintf(stderr, "mergetrace: %s\n", msg[0] ? msg : "out of memory");
        mt_rankmap_free(map);
        inputs_free(&files);
        options_free(&o);
        MPI_Finalize();
        return MT_EXIT_ERROR;
    }
    L.aopts.markers = markers;
    nccl_example_world(&files, &L.xw);
    size_t mine = 0;
    for (size_t i = 0; i < files.n; i++)
        mine += files.files[i].owner == me;
    L.res = calloc(mine ? mine : 1, sizeof *L.res);
    L.facts = calloc(mine ? mine : 1, sizeof *L.facts);
    if (!L.facts) {
        free(L.res);
        L.res = NULL;
    }
    int local_status = L.res ? MT_OK : MT_ERR_NOMEM;
    double t0 = MPI_Wtime();
    uint64_t done_bytes = 0;
    fail_note_t fn = {.me = me, .n_procs = n_procs};
    for (size_t i = 0; L.res && i < files.n; i++) {
        if (files.files[i].owner != me)
            continue;
        if (other_failed(&fn))
            break; /* someone else failed: no point loading more */
        file_result_t *r = &L.res[L.n_res++];
        load_one(&files.files[i], (int32_t)i, &o, map, files.n == 1, &fn, &L, r);
        done_bytes += r->sum.bytes_json;
        if (r->status == MT_ERR_CANCELLED) {
            L.n_res--; /* not this file's fault: the real error comes from elsewhere */
            break;
        }
        if (r->status != MT_OK) {
            local_status = r->status;
            tell_others(&fn);
            break; /* the first error is the one reported */
        }
        if (o.progress && me == 0) {
            double dt = MPI_Wtime() - t0;
            fprintf(stderr, "\rmergetrace: process 0 loaded %zu/%zu files, %.1f MB/s   ", L.n_res, mine,
                    dt > 0 ? done_bytes / 1e6 / dt : 0.0);
        }
    }
    if (o.progress && me == 0)
        fprintf(stderr, "\r%60s\r", "");

    /* Everyone learns whether anyone failed before going on (no hangs). */
    int any_fail = local_status != MT_OK || fn.seen, all_fail;
    MPI_Allreduce(&any_fail, &all_fail, 1, MPI_INT, MPI_LOR, world_comm);
    settle_notes(&fn);

    /* Gather the per-file results on process 0. */
    void *all_bytes = NULL;
    size_t all_len = 0;
    if (comm.gatherv(comm.ctx, L.res, L.n_res * sizeof *L.res, &all_bytes, &all_len, 0) != MT_OK)
        all_fail = 1;
    double t_load = MPI_Wtime() - t0;
    MPI_Allreduce(MPI_IN_PLACE, &t_load, 1, MPI_DOUBLE, MPI_MAX, world_comm);

    job_t job = {0};
    code = MT_EXIT_OK;
    if (me == 0) {
        file_result_t *all = all_bytes;
        size_t n_all = all_len / sizeof *all;
        if (all_fail) {
            /* One message: the failed file with the lowest index. */
            const file_result_t *first = NULL;
            for (size_t i = 0; i < n_all; i++)
                if (all[i].status != MT_OK && (!first || all[i].index < first->index))
                    first = &all[i];
            if (first) {
                fprintf(stderr, "mergetrace: %s\n", first->message);
                code = exit_code_for((mt_status_t)first->status);
            } else {
                fprintf(stderr, "mergetrace: out of memory\n");
                code = MT_EXIT_ERROR;
            }
        } else {
            code = check_job(&files, all, n_all, &job);
        }
    }
    MPI_Bcast(&code, 1, MPI_INT, 0, world_comm);

    /* ---- the per-rank analyses, gathered on process 0 in rank order ---- */
    mt_rank_analysis_t **an = NULL;
    size_t n_an = 0;
    phase_times_t pt = {.load = t_load};
    if (code == MT_EXIT_OK) {
        double tg = MPI_Wtime();
        void *ab = NULL;
        size_t al_len = 0;
        mt_status_t gst = comm.gatherv(comm.ctx, L.analyses.data, L.analyses.len, &ab, &al_len, 0);
        int bad = gst != MT_OK;
        if (me == 0 && !bad) {
            an = calloc(job.n ? job.n : 1, sizeof *an);
            bad = !an;
            gst = an ? MT_OK : MT_ERR_NOMEM;
            for (size_t off = 0; !bad && off < al_len;) {
                mt_rank_analysis_t *a = NULL;
                size_t used = 0;
                gst = mt_rank_analysis_unpack((const char *)ab + off, al_len - off, &a, &used);
                if (gst != MT_OK || !used) {
                    bad = 1;
                    break;
                }
                off += used;
                /* place it at its rank's position in job.res */
                size_t k = 0;
                while (k < job.n && job.res[k].rank != a->rank)
                    k++;
                if (k < job.n && !an[k]) {
                    an[k] = a;
                    n_an++;
                } else {
                    mt_rank_analysis_free(a);
                }
            }
            if (!bad && n_an != job.n - job.nccl.n_only)
                bad = 1;
            /* ranks with NCCL data only have none: the results first, by rank */
            for (size_t k = 0, w = 0; !bad && k < job.n; k++)
                if (an[k]) {
                    mt_rank_analysis_t *x = an[k];
                    an[k] = NULL;
                    an[w++] = x;
                }
        }
        if (me == 0 && bad)
            fprintf(stderr, "mergetrace: gathering the per-rank analyses: %s\n",
                    gst == MT_ERR_NOMEM ? "out of memory" : "failed");
        free(ab);
        MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_LOR, world_comm);
        if (bad)
            code = MT_EXIT_ERROR;
        pt.gather = MPI_Wtime() - tg;
    }

    /* ---- align: every rank's collectives on process 0, clocks to all ---- */
    int32_t *ranks = NULL;
    uint64_t n_ranks = 0;
    mt_align_result_t al = {0};
    double t_align = 0, t_merge = 0;
    if (code == MT_EXIT_OK) {
        if (me == 0)
            n_ranks = job.n;
        MPI_Bcast(&n_ranks, 1, MPI_UINT64_T, 0, world_comm);
        ranks = malloc((n_ranks ? n_ranks : 1) * sizeof *ranks);
        if (me == 0 && ranks)
            for (size_t i = 0; i < job.n; i++)
                ranks[i] = (int32_t)job.res[i].rank;
        int ok = ranks != NULL;
        MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_LAND, world_comm);
        if (!ok) {
            code = MT_EXIT_ERROR;
            if (me == 0)
                fprintf(stderr, "mergetrace: out of memory\n");
        } else {
            MPI_Bcast(ranks, (int)n_ranks, MPI_INT32_T, 0, world_comm);
            double ta = MPI_Wtime();
            mt_clock_opts_t co = {.ref_rank = o.ref_rank, .no_drift = o.no_drift, .no_align = o.no_align};
            size_t n_use = L.n_rows; /* rows that align: one source per rank */
            mt_status_t st = nccl_rows_select(&comm, me == 0 ? &job.nccl : NULL, L.rows, L.n_rows, &n_use);
            if (st == MT_OK)
                st = mt_align_job(&comm, L.rows, n_use, ranks, (size_t)n_ranks, &co, &al);
            if (st == MT_OK)
                st = nccl_compare(&comm, L.rows + n_use, L.n_rows - n_use, &al, me == 0 ? &job.nccl : NULL);
            t_align = MPI_Wtime() - ta;
            if (st != MT_OK) {
                if (me == 0)
                    fprintf(stderr, "mergetrace: aligning the clocks: %s\n", mt_status_str(st));
                code = exit_code_for(st);
            }
        }
    }

    /* ---- cross-rank analyses on process 0, over the gathered rows ---- */
    mt_cross_t *cross = NULL;
    if (code == MT_EXIT_OK && me == 0) {
        double tc = MPI_Wtime(), cc = timings_cpu();
        mt_status_t st = mt_cross_analyze(al.rows, al.n_rows, al.m, al.clocks, ranks, (size_t)n_ranks, &cross);
        if (st != MT_OK) {
            fprintf(stderr, "mergetrace: cross-rank analysis: %s\n", mt_status_str(st));
            code = exit_code_for(st);
        }
        pt.cross_rank = MPI_Wtime() - tc;
        pt.cross_rank_cpu = timings_cpu() - cc;
    }
    /* ---- pipeline and gates on process 0 ---- */
    mt_pipeline_t *pipe = NULL;
    char pipe_note[512] = "";
    if (code == MT_EXIT_OK && me == 0) {
        double tq = MPI_Wtime(), cq = timings_cpu(); /* counted with the cross-rank phase */
        mt_status_t st = run_pipeline(&o, ranks, (size_t)n_ranks, &al, (const mt_rank_analysis_t *const *)an, n_an,
                                      &pipe, pipe_note, sizeof pipe_note);
        if (st != MT_OK) {
            fprintf(stderr, "mergetrace: pipeline analysis: %s\n", mt_status_str(st));
            code = exit_code_for(st);
        }
        pt.cross_rank += MPI_Wtime() - tq;
        pt.cross_rank_cpu += timings_cpu() - cq;
    }
    size_t gates_failed = 0;
    if (code == MT_EXIT_OK && me == 0 && o.n_gates) {
        mt_gate_inputs_t gi = {.pipeline = pipe,
                               .cross = cross,
                               .analyses = (const mt_rank_analysis_t *const *)an,
                               .n_analyses = n_an,
                               .clocks = al.clocks,
                               .n_clocks = al.n_clocks,
                               .aligned = !o.no_align};
        gates_failed = mt_gates_eval(o.gates, o.n_gates, &gi);
    }
    /* the pictures of report.html: sample instances and the lateness grid */
    mt_report_views_t *views = NULL;
    if (code == MT_EXIT_OK && me == 0 && !o.no_html) {
        mt_status_t st = mt_report_views_build(al.rows, al.n_rows, al.m, al.clocks, ranks, (size_t)n_ranks, 4, &views);
        if (st != MT_OK) {
            fprintf(stderr, "mergetrace: report.html views: %s\n", mt_status_str(st));
            code = exit_code_for(st);
        }
    }
    MPI_Bcast(&code, 1, MPI_INT, 0, world_comm);

    /* ---- the merged timeline ---- */
    char merged_path[PATH_MAX] = "";
    uint64_t merged_events = 0;
    bool merged_helper = false;
    bool merge_failed = false;
    if (code == MT_EXIT_OK) {
        int bad = 0;
        if (me == 0) {
            bad = make_dir(o.out_dir, msg, sizeof msg);
            snprintf(merged_path, sizeof merged_path, "%.4000s/%s", o.out_dir,
                     o.merged_gzip ? "merged.json.gz" : "merged.json");
            if (!bad && !o.no_merge && output_is_input(merged_path, &files)) {
                snprintf(msg, sizeof msg, "%.900s is one of the inputs: choose another -o", merged_path);
                bad = 1;
            }
            if (!bad && output_is_input(o.out_dir, &files)) {
                snprintf(msg, sizeof msg, "%.900s is one of the inputs", o.out_dir);
                bad = 1;
            }
            if (bad)
                fprintf(stderr, "mergetrace: %s\n", msg);
        }
        MPI_Bcast(&bad, 1, MPI_INT, 0, world_comm);
        if (bad)
            code = MT_EXIT_ERROR;
    }
    if (code == MT_EXIT_OK && !o.no_merge) {
        double tm = MPI_Wtime();
        mt_merge_opts_t mo = {.gpu_only = o.gpu_only};
        if (o.has_window) {
            /* The window needs every rank's steps on process 0. */
            void *sb = NULL;
            size_t sl = 0;
            int64_t win[3] = {0, 0, 1};
            mt_status_t st = comm.gatherv(comm.ctx, L.steps, L.n_steps * sizeof *L.steps, &sb, &sl, 0);
            if (me == 0 && st == MT_OK)
                win[2] = compute_window(&o, &job, &al, sb, sl / sizeof(mt_step_t), &win[0], &win[1]);
            free(sb);
            MPI_Bcast(win, 3, MPI_INT64_T, 0, world_comm);
            if (!win[2]) {
                if (me == 0)
                    fprintf(stderr, "mergetrace: --window: no ProfilerStep#%.0f..#%.0f in any trace\n", o.window_a,
                            o.window_b);
                code = MT_EXIT_USAGE;
            }
            mo.window_start_ns = win[0];
            mo.window_end_ns = win[1];
            if (mo.window_start_ns == 0 && mo.window_end_ns == 0)
                mo.window_end_ns = 1; /* an empty window, not "everything" */
        }
        if (code == MT_EXIT_OK) {
            MPI_Bcast(merged_path, (int)sizeof merged_path, MPI_CHAR, 0, world_comm);
            merged_input_t *mi = calloc(L.n_res ? L.n_res : 1, sizeof *mi);
            size_t n_mi = 0;
            for (size_t i = 0; mi && i < L.n_res; i++) {
                const file_result_t *r = &L.res[i];
                if (r->skipped || r->status != MT_OK || r->nccl.is_nccl)
                    continue; /* NCCL plugin files are not part of the merged trace (yet) */
                if (o.merge_ranks) {
                    bool want = false;
                    for (size_t k = 0; k < o.n_merge_ranks; k++)
                        want |= o.merge_ranks[k] == r->rank;
                    if (!want)
                        continue;
                }
                mi[n_mi].path = files.files[r->index].path;
                mi[n_mi].rank = (int32_t)r->rank;
                mi[n_mi].facts = L.facts[i];
                for (size_t k = 0; k < al.n_clocks; k++)
                    if (al.clocks[k].rank == r->rank) {
                        mi[n_mi].clock = al.clocks[k];
                        mi[n_mi].has_clock = true;
                    }
                n_mi++;
            }
            char mmsg[1024] = "";
            int mrc = merged_write(world_comm, merged_path, o.merged_gzip, mi, n_mi, &mo, &merged_events,
                                   &merged_helper, mmsg, sizeof mmsg);
            free(mi);
            if (mrc) {
                if (me == 0)
                    fprintf(stderr, "mergetrace: %s\n", mmsg[0] ? mmsg : "writing the merged trace failed");
                merge_failed = true;
                code = MT_EXIT_ERROR;
            }
            t_merge = MPI_Wtime() - tm;
        }
    }

    /* ---- report.json and the summary ---- */
    double tr = MPI_Wtime();
    bool wrote_outputs = me == 0 && (code == MT_EXIT_OK || merge_failed);
    if (me == 0 && (code == MT_EXIT_OK || merge_failed)) {
        mt_report_input_t *ri = calloc(job.n ? job.n : 1, sizeof *ri);
        mt_report_skip_t *rs = calloc(job.n_skipped ? job.n_skipped : 1, sizeof *rs);
        if (!ri || !rs) {
            if (!merge_failed) /* one message: the merge's error came first */
                fprintf(stderr, "mergetrace: out of memory\n");
            code = MT_EXIT_ERROR;
        } else {
            for (size_t i = 0; i < job.n; i++) {
                const file_result_t *r = &job.res[i];
                ri[i] = (mt_report_input_t){.rank = (int32_t)r->rank,
                                            .rank_source = mt_rank_source_str((mt_rank_source_t)r->rank_source),
                                            .path = files.files[r->index].path,
                                            .bytes = r->sum.bytes_in,
                                            .json_bytes = r->sum.bytes_json,
                                            .events = r->sum.events,
                                            .truncated = r->sum.truncated,
                                            .truncated_at = r->sum.truncated_at,
                                            .summary = r->nccl.is_nccl ? NULL : &r->sum,
                                            .nccl_only = r->nccl.is_nccl != 0};
            }
            for (size_t i = 0; i < job.n_skipped; i++)
                rs[i] = (mt_report_skip_t){files.files[job.skipped[i].index].path, job.skipped[i].message};
            int32_t ref = -1;
            for (size_t i = 0; i < al.n_clocks; i++)
                if (al.clocks[i].reference)
                    ref = al.clocks[i].rank;
            mt_report_t rep = {.version = MERGETRACE_VERSION,
                               .world_size = job.world,
                               .inputs = ri,
                               .n_inputs = job.n,
                               .missing = job.missing,
                               .n_missing = job.n_missing,
                               .skipped = rs,
                               .n_skipped = job.n_skipped,
                               .aligned = !o.no_align,
                               .reference_rank = ref,
                               .clocks = al.clocks,
                               .n_clocks = al.n_clocks,
                               .match = &al.match,
                               .merged = (!o.no_merge && !merge_failed) ? short_path(merged_path) : NULL,
                               .merged_events = merged_events,
                               .analyses = (const mt_rank_analysis_t *const *)an,
                               .n_analyses = n_an,
                               .cross = cross,
                               .pipeline = pipe,
                               .pipeline_note = pipe_note[0] ? pipe_note : NULL,
                               .gates = o.gates,
                               .n_gates = o.n_gates,
                               .views = views,
                               .nccl = job.nccl.rep,
                               .n_nccl = job.nccl.n,
                               .nccl_source = job.nccl.source};
            int rj = 0;
            if (nccl_job_report(&job.nccl, &files)) {
                fprintf(stderr, "mergetrace: out of memory\n");
                code = MT_EXIT_ERROR;
                rj = 1;
            }
            rep.nccl = job.nccl.rep;
            /* One message per run: after a failed merge (or report.json)
             * the reason has been said once already. */
            if (!rj && (rj = write_report(o.out_dir, &rep, NULL, msg, sizeof msg)) != 0) {
                if (!merge_failed)
                    fprintf(stderr, "mergetrace: %s\n", msg);
                code = MT_EXIT_ERROR;
            }
            mt_html_opts_t ho = {.command_line = o.command_line};
            if (!rj && !o.no_html && write_report(o.out_dir, &rep, &ho, msg, sizeof msg)) {
                if (!merge_failed)
                    fprintf(stderr, "mergetrace: %s\n", msg);
                code = MT_EXIT_ERROR;
            }
            if (o.json) {
                if (mt_report_json(&rep, stdout_write, NULL) != MT_OK)
                    code = MT_EXIT_ERROR;
            } else if (!o.quiet) {
                print_summary(&o, &files, &job, &al, (const mt_rank_analysis_t *const *)an, cross, pipe,
                              pipe_note[0] ? pipe_note : NULL, o.gates, o.n_gates, n_procs, t_load, t_align, t_merge,
                              (!o.no_merge && !merge_failed) ? merged_path : NULL, merged_events, merge_failed);
            }
            /* Failed gates are errors a CI log must show even with -q or --json. */
            for (size_t i = 0; i < o.n_gates; i++)
                if (!o.gates[i].pass) {
                    if (o.gates[i].measured)
                        fprintf(stderr, "mergetrace: gate failed: %s (value %.6g)\n", o.gates[i].expr,
                                o.gates[i].value);
                    else
                        fprintf(stderr, "mergetrace: gate failed: %s (not measured: %s)\n", o.gates[i].expr,
                                o.gates[i].why);
                }
            if (gates_failed && code == MT_EXIT_OK)
                code = MT_EXIT_GATE;
            if (fflush(stdout) || ferror(stdout)) {
                fprintf(stderr, "mergetrace: stdout: write error\n");
                code = MT_EXIT_ERROR;
            }
        }
        free(ri);
        free(rs);
    }
    pt.report = MPI_Wtime() - tr;
    if (o.timings) {
        /* Collective; every process gets here whatever happened above. */
        pt.parse = L.parse_s;
        pt.rank_passes = L.passes_s;
        pt.align = t_align;
        pt.match = al.match_s;
        pt.clock_fit = al.fit_s;
        pt.match_cpu = al.match_cpu_s;
        pt.clock_fit_cpu = al.fit_cpu_s;
        pt.merged_write = t_merge;
        pt.merged_helper = merged_helper;
        pt.total = MPI_Wtime() - t_start;
        job_size_t js = {.ranks = job.n, .largest_trace = L.largest};
        for (size_t i = 0; me == 0 && i < job.n; i++) {
            js.json_bytes += job.res[i].sum.bytes_json;
            js.events += job.res[i].sum.events;
        }
        if (timings_report(world_comm, &pt, &js, n_procs, wrote_outputs ? o.out_dir : NULL, msg, sizeof msg)) {
            fprintf(stderr, "mergetrace: %s\n", msg);
            if (code == MT_EXIT_OK)
                code = MT_EXIT_ERROR;
        }
    }
    MPI_Bcast(&code, 1, MPI_INT, 0, world_comm);

    mt_cross_free(cross);
    mt_report_views_free(views);
    mt_pipeline_free(pipe);
    mt_pp_markers_free(markers);
    mt_align_result_free(&al);
    free(ranks);
    free(job.missing);
    nccl_job_free(&job.nccl);
    free(all_bytes);
    for (size_t i = 0; L.facts && i < L.n_res; i++)
        mt_merge_facts_free(L.facts[i]);
    free(L.facts);
    free(L.res);
    free(L.rows);
    free(L.steps);
    mt_buf_free(&L.analyses);
    for (size_t i = 0; an && i < job.n; i++)
        mt_rank_analysis_free(an[i]);
    free(an);
    mt_rankmap_free(map);
    inputs_free(&files);
    options_free(&o);
    MPI_Finalize();
    return code;
}
