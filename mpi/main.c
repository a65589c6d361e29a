/* mergetrace: the program. Shares the trace files among MPI processes, has
 * each process load its share with the serial core, agrees on errors, and
 * prints the per-rank summary from process 0. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "inputs.h"
#include "mergetrace/mergetrace.h"
#include "options.h"

/* What one process learned about one file; sent to process 0 as bytes. */
typedef struct file_result {
    int32_t index;          /* into the input list */
    int32_t status;         /* mt_status_t */
    int64_t rank;
    int32_t rank_source;    /* mt_rank_source_t */
    int32_t skipped;        /* found in a directory but not a trace: left out, reported */
    double load_s;
    mt_trace_summary_t sum;
    char message[1024];     /* the formatted error, when status != MT_OK */
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
    case MT_ERR_NOT_TRACE: return MT_EXIT_BAD_INPUT;
    case MT_ERR_USAGE: return MT_EXIT_USAGE;
    default: return MT_EXIT_ERROR;
    }
}

/* Process 0 reads small text files (the rank map) and broadcasts them, so
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

/* Broadcast the input list from process 0 (paths and sizes). Collective. */
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

static void load_one(const input_file_t *f, int32_t index, const options_t *o, const mt_rankmap_t *map,
                     bool only_file, file_result_t *r)
{
    memset(r, 0, sizeof *r);
    r->index = index;
    r->rank = -1;
    mt_load_opts_t lo;
    mt_load_opts_init(&lo);
    lo.strict = o->strict;
    lo.rank_hint = (int)mt_rankmap_lookup(map, f->path);
    if (lo.rank_hint < 0)
        lo.rank_hint = (int)mt_rank_from_filename(f->path);
    mt_error_t err;
    mt_trace_t *t = NULL;
    double t0 = MPI_Wtime();
    mt_status_t st = mt_trace_load(f->path, &lo, &t, &err);
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
        if (st == MT_OK)
            st = mt_trace_summarize(t, &r->sum);
        if (st == MT_ERR_NOMEM)
            mt_error_set(&err, st, "summarising the trace");
    }
    r->load_s = MPI_Wtime() - t0;
    r->status = (int32_t)st;
    if (st != MT_OK)
        mt_error_format(&err, r->message, sizeof r->message);
    mt_trace_free(t);
}

static const char *ts_style_str(int s)
{
    switch (s) {
    case MT_TS_ABS_INT: return "abs-int";
    case MT_TS_ABS_FRAC: return "abs-frac";
    case MT_TS_REL: return "relative";
    default: return "-";
    }
}

static const char *short_path(const char *p)
{
    const char *b = strrchr(p, '/');
    return b ? b + 1 : p;
}

static void json_str(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(out, "\\%c", c);
        else if (c < 0x20)
            fprintf(out, "\\u%04x", c);
        else
            fputc(c, out);
    }
    fputc('"', out);
}

static int by_rank(const void *a, const void *b)
{
    const file_result_t *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return x->index - y->index;
}

/* Process 0: check the rank set and print the report. Returns the exit code. */
static int report(const options_t *o, const input_list_t *l, file_result_t *res, size_t n_res, int n_procs,
                  double wall_s)
{
    /* Skipped files (not traces) go to the end, in file order. */
    size_t n = 0;
    for (size_t i = 0; i < n_res; i++)
        if (!res[i].skipped) {
            file_result_t tmp = res[n];
            res[n++] = res[i];
            res[i] = tmp;
        }
    file_result_t *skipped = res + n;
    size_t n_skipped = n_res - n;
    if (!n) {
        fprintf(stderr, "mergetrace: no trace among the %zu JSON file%s found (%s: %s)\n", n_res, n_res == 1 ? "" : "s",
                l->files[skipped[0].index].path, skipped[0].message);
        return MT_EXIT_BAD_INPUT;
    }
    qsort(res, n, sizeof *res, by_rank);
    /* Duplicate ranks: an error naming both files. */
    for (size_t i = 1; i < n; i++)
        if (res[i].rank == res[i - 1].rank) {
            fprintf(stderr, "mergetrace: rank %lld appears twice: %s and %s (use --rank-map to say which is which)\n",
                    (long long)res[i].rank, l->files[res[i - 1].index].path, l->files[res[i].index].path);
            return MT_EXIT_BAD_INPUT;
        }
    int64_t world = -1;
    bool world_disagree = false;
    for (size_t i = 0; i < n; i++) {
        int64_t w = res[i].sum.world_size;
        if (w <= 0)
            continue;
        if (world < 0)
            world = w;
        else if (w != world)
            world_disagree = true;
        if (w > world)
            world = w;
    }
    if (world < 0)
        world = n ? res[n - 1].rank + 1 : 0;
    uint64_t bytes = 0, json = 0, events = 0;
    for (size_t i = 0; i < n; i++) {
        bytes += res[i].sum.bytes_in;
        json += res[i].sum.bytes_json;
        events += res[i].sum.events;
    }
    /* Missing ranks: listed, a warning. */
    size_t n_missing = 0;
    int64_t *missing = NULL;
    if (world > 0 && world <= (int64_t)1 << 24) {
        missing = malloc((size_t)world * sizeof *missing);
        size_t j = 0;
        for (int64_t r = 0; missing && r < world; r++) {
            while (j < n && res[j].rank < r)
                j++;
            if (j >= n || res[j].rank != r)
                missing[n_missing++] = r;
        }
    }
    FILE *out = stdout;
    if (o->json) {
        fprintf(out, "{\"schema\": \"mergetrace.load/1\", \"world_size\": %lld, \"processes\": %d,\n",
                (long long)world, n_procs);
        fprintf(out, " \"ranks\": {\"loaded\": [");
        for (size_t i = 0; i < n; i++)
            fprintf(out, "%s%lld", i ? ", " : "", (long long)res[i].rank);
        fprintf(out, "], \"missing\": [");
        for (size_t i = 0; i < n_missing; i++)
            fprintf(out, "%s%lld", i ? ", " : "", (long long)missing[i]);
        fprintf(out, "]},\n \"inputs\": [\n");
        for (size_t i = 0; i < n; i++) {
            const file_result_t *r = &res[i];
            const mt_trace_summary_t *s = &r->sum;
            fprintf(out, "  {\"rank\": %lld, \"rank_source\": ", (long long)r->rank);
            json_str(out, mt_rank_source_str((mt_rank_source_t)r->rank_source));
            fprintf(out, ", \"path\": ");
            json_str(out, l->files[r->index].path);
            fprintf(out,
                    ", \"bytes\": %llu, \"json_bytes\": %llu, \"events\": %llu, \"ts_style\": \"%s\""
                    ", \"kernels_compute\": %llu, \"kernels_comm\": %llu, \"comm_with_collective\": %llu"
                    ", \"memcpy\": %llu, \"memset\": %llu, \"sync\": %llu, \"gpu_launched\": %llu"
                    ", \"gpu_activities\": %llu, \"first_ns\": %lld, \"last_ns\": %lld, \"truncated\": %s"
                    ", \"load_s\": %.6f%s,\n",
                    (unsigned long long)s->bytes_in, (unsigned long long)s->bytes_json,
                    (unsigned long long)s->events, ts_style_str(s->ts_style),
                    (unsigned long long)s->by_class[MT_CLASS_COMPUTE], (unsigned long long)s->by_class[MT_CLASS_COMM],
                    (unsigned long long)s->link.comm_with_coll, (unsigned long long)s->by_class[MT_CLASS_MEMCPY],
                    (unsigned long long)s->by_class[MT_CLASS_MEMSET], (unsigned long long)s->by_class[MT_CLASS_SYNC],
                    (unsigned long long)s->link.launched, (unsigned long long)s->link.gpu_activities,
                    (long long)s->first_ns, (long long)s->last_ns, s->truncated ? "true" : "false", r->load_s,
                    "");
            /* Events by phase and by category, as spelled in the file. */
            fprintf(out, "   \"ph\": {");
            const char *sep = "";
            for (int ph = 0; ph < MT_PH_COUNT_; ph++)
                if (s->by_ph[ph]) {
                    fprintf(out, "%s\"%s\": %llu", sep, mt_phase_str((mt_phase_t)ph), (unsigned long long)s->by_ph[ph]);
                    sep = ", ";
                }
            fprintf(out, "}, \"cat\": {");
            sep = "";
            for (int c = 0; c < MT_CAT_COUNT_; c++)
                if (s->by_cat[c]) {
                    fprintf(out, "%s\"%s\": %llu", sep, mt_cat_str((mt_cat_t)c), (unsigned long long)s->by_cat[c]);
                    sep = ", ";
                }
            fprintf(out, "}}%s\n", i + 1 < n ? "," : "");
        }
        fprintf(out, " ],\n \"skipped\": [");
        for (size_t i = 0; i < n_skipped; i++) {
            fprintf(out, "%s{\"path\": ", i ? ", " : "");
            json_str(out, l->files[skipped[i].index].path);
            fprintf(out, ", \"reason\": ");
            json_str(out, skipped[i].message);
            fprintf(out, "}");
        }
        fprintf(out, "],\n \"load_wall_s\": %.6f}\n", wall_s);
    } else if (!o->quiet) {
        /* Under mpirun stdout is often a pseudo-terminal even when the
         * user pipes mpirun's output, so "auto" means no colour there. */
        bool under_mpirun = getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") || getenv("PMIX_RANK");
        bool color = o->color == 1 || (o->color < 0 && isatty(1) && !under_mpirun && !getenv("NO_COLOR"));
        const char *B = color ? "\033[1m" : "", *Y = color ? "\033[33m" : "", *N = color ? "\033[0m" : "";
        fprintf(out, "%smergetrace %s%s: %zu trace%s, world size %lld, %d process%s\n", B, MERGETRACE_VERSION, N, n,
                n == 1 ? "" : "s", (long long)world, n_procs, n_procs == 1 ? "" : "es");
        fprintf(out, "loaded %.1f MB of JSON (%.1f MB on disk), %llu events in %.3f s (%.0f MB/s)\n\n", json / 1e6,
                bytes / 1e6, (unsigned long long)events, wall_s, wall_s > 0 ? json / 1e6 / wall_s : 0.0);
        fprintf(out, "%s%5s  %-28s %8s %9s %8s %6s %9s %7s %10s  %-8s%s\n", B, "rank", "file", "MB", "events",
                "compute", "comm", "comm+coll", "memcpy", "span ms", "ts", N);
        for (size_t i = 0; i < n; i++) {
            const file_result_t *r = &res[i];
            const mt_trace_summary_t *s = &r->sum;
            char cc[32];
            snprintf(cc, sizeof cc, "%llu/%llu", (unsigned long long)s->link.comm_with_coll,
                     (unsigned long long)s->by_class[MT_CLASS_COMM]);
            const char *name = short_path(l->files[r->index].path);
            fprintf(out, "%5lld  %-28.28s %8.2f %9llu %8llu %6llu %9s %7llu %10.3f  %-8s\n", (long long)r->rank, name,
                    s->bytes_json / 1e6, (unsigned long long)s->events,
                    (unsigned long long)s->by_class[MT_CLASS_COMPUTE], (unsigned long long)s->by_class[MT_CLASS_COMM],
                    cc, (unsigned long long)(s->by_class[MT_CLASS_MEMCPY] + s->by_class[MT_CLASS_MEMSET]),
                    (s->last_ns - s->first_ns) / 1e6, ts_style_str(s->ts_style));
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
        if (n_missing) {
            WARN("%zu of %lld ranks have no trace:", n_missing, (long long)world);
            for (size_t i = 0; i < n_missing && i < 32; i++)
                fprintf(out, " %lld", (long long)missing[i]);
            fprintf(out, "%s\n", n_missing > 32 ? " ..." : "");
        }
        for (size_t i = 0; i < n_skipped; i++)
            WARN("skipped %s: not a trace (%s)\n", l->files[skipped[i].index].path, skipped[i].message);
        if (world_disagree)
            WARN("the traces disagree on world_size; using the largest, %lld\n", (long long)world);
        for (size_t i = 0; i < n; i++) {
            const file_result_t *r = &res[i];
            const mt_trace_summary_t *s = &r->sum;
            const char *p = l->files[r->index].path;
            if (s->truncated)
                WARN("rank %lld: %s is truncated at byte %llu: %llu events loaded, the rest is lost (--strict makes "
                     "this an error)\n",
                     (long long)r->rank, p, (unsigned long long)s->truncated_at, (unsigned long long)s->events);
            if (s->events && s->first_ns < 100000000000000000LL && s->ts_style != MT_TS_REL)
                WARN("rank %lld: %s: timestamps are not on the Unix epoch%s; they cannot be compared with other "
                     "ranks until aligned\n",
                     (long long)r->rank, short_path(p),
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
                WARN("rank %lld: %s has no distributedInfo.rank; rank taken from the file name\n",
                     (long long)r->rank, short_path(p));
            if (r->rank_source == MT_RANK_FROM_DEFAULT)
                WARN("%s names no rank; as the only input it is taken as rank 0\n", short_path(p));
        }
#undef WARN
    }
    free(missing);
    if (fflush(out) || ferror(out)) {
        fprintf(stderr, "mergetrace: stdout: write error\n");
        return MT_EXIT_ERROR;
    }
    return MT_EXIT_OK;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, n_procs;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n_procs);

    options_t o;
    int code = options_parse(argc, argv, &o, me == 0);
    if (code >= 0) {
        free(o.inputs);
        MPI_Finalize();
        return code;
    }

    char msg[1200] = "";
    input_list_t files = {0};
    int rc = 0;
    if (me == 0)
        rc = inputs_collect(o.inputs, o.n_inputs, o.recursive, &files, msg, sizeof msg);
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rc) {
        if (me == 0)
            fprintf(stderr, "mergetrace: %s\n", msg);
        inputs_free(&files);
        free(o.inputs);
        MPI_Finalize();
        return rc == 2 ? MT_EXIT_BAD_INPUT : MT_EXIT_ERROR;
    }
    if (bcast_inputs(&files, me)) {
        if (me == 0)
            fprintf(stderr, "mergetrace: out of memory sharing the file list\n");
        inputs_free(&files);
        free(o.inputs);
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
            free(o.inputs);
            MPI_Finalize();
            return bad == 2 ? MT_EXIT_BAD_INPUT : MT_EXIT_ERROR;
        }
    }

    /* Load this process's share, one trace at a time: only the compact
     * summary of each is kept, so memory follows the largest trace. */
    size_t mine = 0;
    for (size_t i = 0; i < files.n; i++)
        mine += files.files[i].owner == me;
    file_result_t *res = calloc(mine ? mine : 1, sizeof *res);
    int local_status = res ? MT_OK : MT_ERR_NOMEM;
    double t0 = MPI_Wtime();
    size_t k = 0;
    uint64_t done_bytes = 0;
    for (size_t i = 0; res && i < files.n; i++) {
        if (files.files[i].owner != me)
            continue;
        load_one(&files.files[i], (int32_t)i, &o, map, files.n == 1, &res[k]);
        done_bytes += res[k].sum.bytes_json;
        if (res[k].status != MT_OK) {
            local_status = res[k].status;
            k++;
            break; /* the first error is the one reported */
        }
        k++;
        if (o.progress && me == 0) {
            double dt = MPI_Wtime() - t0;
            fprintf(stderr, "\rmergetrace: process 0 loaded %zu/%zu files, %.1f MB/s   ", k, mine,
                    dt > 0 ? done_bytes / 1e6 / dt : 0.0);
        }
    }
    if (o.progress && me == 0)
        fprintf(stderr, "\r%60s\r", "");

    /* Everyone learns whether anyone failed before going on (no hangs). */
    int any_fail = local_status != MT_OK, all_fail;
    MPI_Allreduce(&any_fail, &all_fail, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);

    /* Gather the results on process 0. */
    int my_bytes = (int)(k * sizeof(file_result_t));
    int *counts = NULL, *displs = NULL;
    file_result_t *all = NULL;
    if (me == 0) {
        counts = calloc((size_t)n_procs, sizeof *counts);
        displs = calloc((size_t)n_procs, sizeof *displs);
    }
    MPI_Gather(&my_bytes, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (me == 0) {
        long total = 0;
        for (int p = 0; p < n_procs; p++) {
            displs[p] = (int)total;
            total += counts[p];
        }
        all = malloc(total ? (size_t)total : 1);
    }
    MPI_Gatherv(res, my_bytes, MPI_BYTE, all, counts, displs, MPI_BYTE, 0, MPI_COMM_WORLD);
    double wall = MPI_Wtime() - t0;
    double max_wall;
    MPI_Reduce(&wall, &max_wall, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);

    code = MT_EXIT_OK;
    if (me == 0) {
        size_t n_all = 0;
        for (int p = 0; p < n_procs; p++)
            n_all += (size_t)counts[p] / sizeof(file_result_t);
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
            code = report(&o, &files, all, n_all, n_procs, max_wall);
        }
    }
    MPI_Bcast(&code, 1, MPI_INT, 0, MPI_COMM_WORLD);

    free(all);
    free(counts);
    free(displs);
    free(res);
    mt_rankmap_free(map);
    inputs_free(&files);
    free(o.inputs);
    MPI_Finalize();
    return code;
}
