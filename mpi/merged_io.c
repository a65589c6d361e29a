/* The merged timeline to one file through MPI-IO (plain POSIX writes in a
 * run without MPI: one process, or each worker thread through its own
 * descriptor, procs.h). The ranks go into the file in rank order whatever
 * process merges each. Plain JSON: every process measures its ranks
 * (serialised one at a time), a table of every rank's size (summed over
 * the processes) gives each rank's offset, and each process writes its
 * ranks there. gzip: the ranks go out in rounds, one compressed rank (a
 * run of gzip members) per process per round, each written once the sizes
 * of the ranks before it are known (gzip_rounds). The file is renamed into
 * place only when every process succeeded. Collective throughout: every
 * step that can fail on one process is followed by an agreement
 * (allreduce), so a failure anywhere makes every process return the same
 * status, never hang. */
#define _GNU_SOURCE /* pwrite, O_NOFOLLOW */
#include "merged_io.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm_mpi.h"
#include "procs.h"
#include "mergetrace/gzout.h"
#include "mergetrace/mergetrace.h"

/* Plain output is handed to MPI-IO in pieces of about this size. */
#define PIECE_BYTES ((size_t)4 << 20)
/* The most one MPI_File_write_at moves (its count is an int). */
#define MAX_CALL_BYTES ((size_t)1 << 30)

typedef struct job {
    MPI_Comm comm;
    int me, n_procs;
    int st;          /* this process's first failure (mt_status_t), 0 = fine */
    char msg[1024];  /* its message; after job_agree, the agreed one */
    const merged_format_t *fmt; /* NULL: the traces' merged timeline (mt_merge_*) */
    int32_t first_rank;         /* the file's first rank */
} job_t;

static void job_fail(job_t *j, int st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Record this process's first failure and its message. */
static void job_fail(job_t *j, int st, const char *fmt, ...)
{
    if (j->st)
        return;
    j->st = st ? st : MT_ERR_IO;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(j->msg, sizeof j->msg, fmt, ap);
    va_end(ap);
}

static void job_fail_mt(job_t *j, const mt_error_t *err)
{
    char b[1200];
    job_fail(j, err->code, "%s", mt_error_format(err, b, sizeof b));
}

/* "<path>: <what>: <MPI's text for code>" (only under MPI) */
static void job_fail_mpi(job_t *j, int code, const char *what, const char *path)
{
    char s[MPI_MAX_ERROR_STRING + 1];
    int n = 0;
    if (MPI_Error_string(code, s, &n) != MPI_SUCCESS || n < 0 || n > MPI_MAX_ERROR_STRING)
        n = 0;
    s[n] = '\0';
    job_fail(j, MT_ERR_IO, "%s: %s: %s", path, what, s);
}

/* Collective: the failure of the lowest failing process, the same on every
 * process (its message copied into everyone's msg), or 0. */
static int job_agree(job_t *j)
{
    int cand = j->st ? j->me : j->n_procs, root;
    procs_allreduce(&cand, &root, 1, MPI_INT, MPI_MIN, j->comm);
    if (root == j->n_procs)
        return 0;
    int st = j->st;
    procs_bcast(&st, 1, MPI_INT, root, j->comm);
    procs_bcast(j->msg, (int)sizeof j->msg, MPI_CHAR, root, j->comm);
    j->st = st;
    return st;
}

/* ------------------------------------------------------------ the file */

/* How this process writes the temporary file: MPI-IO (under MPI, the
 * directory shared), a plain file descriptor (without MPI: one process;
 * or process 0 of a --local job whose output directory the others do not
 * see, which writes their parts too), or by sending its parts to process
 * 0 (the others of such a job). */
enum { OUT_MPI, OUT_POSIX, OUT_SEND };

/* Tags of the parts sent to process 0: a header {offset, length} (length
 * UINT64_MAX: this process has sent all it had for now), then the bytes. */
#define TAG_PART_HEAD 9101
#define TAG_PART_DATA 9102

typedef struct out_file {
    int mode;
    bool serve;   /* process 0 of a sent-parts write: writes what the others send */
    MPI_File fh;
    int fd;
    char *piece;  /* serve: one received piece, PIECE_BYTES */
} out_file_t;

/* --local, collective: whether every process sees the file process 0
 * creates at name (the temporary name, unique to this run; it stays, as
 * the file to write). *created: process 0 created it. Failures in j.
 * MERGETRACE_SEND_PARTS=1 says no (to test the sent parts on one machine). */
static bool out_dir_shared(job_t *j, const char *name, const char *out_path, bool *created)
{
    int ok = 1;
    if (j->me == 0) {
        int fd = open(name, O_CREAT | O_WRONLY | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        ok = fd >= 0;
        if (!ok)
            job_fail(j, MT_ERR_IO, "%s: creating %.500s: %s", out_path, name, strerror(errno));
        else
            close(fd);
    }
    procs_bcast(&ok, 1, MPI_INT, 0, j->comm);
    *created = ok;
    const char *force = getenv("MERGETRACE_SEND_PARTS");
    int seen = ok && (j->me == 0 || access(name, F_OK) == 0) && !(force && !strcmp(force, "1")), all = 0;
    procs_allreduce(&seen, &all, 1, MPI_INT, MPI_MIN, j->comm);
    return all != 0;
}

/* Collective: open name for writing on every process; send: the others'
 * parts go to process 0 (see OUT_SEND); exists: out_dir_shared created it.
 * Returns how many processes opened it; failures recorded in j. */
static int out_open(job_t *j, out_file_t *f, const char *name, const char *out_path, bool send, bool exists)
{
    f->mode = !procs_mpi() ? OUT_POSIX : !send ? OUT_MPI : j->me == 0 ? OUT_POSIX : OUT_SEND;
    f->serve = send && j->me == 0;
    f->fh = MPI_FILE_NULL;
    f->fd = -1;
    f->piece = NULL;
    char what[600];
    snprintf(what, sizeof what, "creating %.500s", name);
    int ok = 1;
    if (f->mode == OUT_POSIX) {
        /* Worker threads (procs.h) each write through their own
         * descriptor: process 0 creates the file, the others open it once
         * it is there. */
        bool threads = procs_threads() > 0;
        int made = 1;
        if (threads && !exists) {
            if (j->me == 0) {
                f->fd = open(name, O_CREAT | O_WRONLY | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
                made = f->fd >= 0;
            }
            procs_bcast(&made, 1, MPI_INT, 0, j->comm);
            if (j->me != 0 && made)
                f->fd = open(name, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
        } else {
            f->fd = open(name, exists ? O_WRONLY | O_NOFOLLOW | O_CLOEXEC : O_CREAT | O_WRONLY | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        }
        if (f->fd < 0 && (j->me == 0 || made))
            job_fail(j, MT_ERR_IO, "%s: %s: %s", out_path, what, strerror(errno));
        else if (f->fd < 0)
            job_fail(j, MT_ERR_IO, "%s: %s: process 0 could not", out_path, what);
        ok = f->fd >= 0;
        if (ok && f->serve && !(f->piece = malloc(PIECE_BYTES))) {
            job_fail(j, MT_ERR_NOMEM, "out of memory");
            close(f->fd);
            f->fd = -1;
            ok = 0;
        }
    } else if (f->mode == OUT_MPI) {
        int amode = MPI_MODE_WRONLY | (exists ? 0 : MPI_MODE_CREATE | MPI_MODE_EXCL);
        int orc = MPI_File_open(j->comm, name, amode, MPI_INFO_NULL, &f->fh);
        if (orc != MPI_SUCCESS)
            job_fail_mpi(j, orc, what, out_path);
        else
            MPI_File_set_errhandler(f->fh, MPI_ERRORS_RETURN);
        ok = orc == MPI_SUCCESS;
    }
    if (!procs_mpi() && !procs_threads())
        return ok;
    int n_ok = 0;
    procs_allreduce(&ok, &n_ok, 1, MPI_INT, MPI_SUM, j->comm);
    return n_ok;
}

static bool pwrite_all(job_t *j, int fd, uint64_t off, const char *data, size_t len, const char *path)
{
    for (size_t done = 0; done < len;) {
        ssize_t w = pwrite(fd, data + done, len - done, (off_t)(off + done));
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w < 0)
                job_fail(j, MT_ERR_IO, "%s: writing: %s", path, strerror(errno));
            else
                job_fail(j, MT_ERR_IO, "%s: short write (%zu of %zu bytes; disk full?)", path, done, len);
            return false;
        }
        done += (size_t)w;
    }
    return true;
}

/* Write len bytes (at most MAX_CALL_BYTES) at off, independently (OUT_SEND:
 * to process 0, which writes them in out_drain). Returns whether all went;
 * a failure is recorded in j with its reason. */
static bool out_write_at(job_t *j, out_file_t *f, uint64_t off, const void *data, size_t len, const char *path)
{
    if (f->mode == OUT_POSIX)
        return pwrite_all(j, f->fd, off, data, len, path);
    if (f->mode == OUT_SEND) {
        for (size_t done = 0; done < len;) {
            size_t k = len - done < PIECE_BYTES ? len - done : PIECE_BYTES;
            uint64_t head[2] = {off + done, k};
            procs_send(head, 2, MPI_UINT64_T, 0, TAG_PART_HEAD, j->comm);
            procs_send((const char *)data + done, (int)k, MPI_BYTE, 0, TAG_PART_DATA, j->comm);
            done += k;
        }
        return true;
    }
    MPI_Status ms;
    int rc = MPI_File_write_at(f->fh, (MPI_Offset)off, data, (int)len, MPI_BYTE, &ms);
    int got = 0;
    if (rc == MPI_SUCCESS)
        MPI_Get_count(&ms, MPI_BYTE, &got);
    if (rc != MPI_SUCCESS)
        job_fail_mpi(j, rc, "writing", path);
    else if ((size_t)got != len)
        job_fail(j, MT_ERR_IO, "%s: short write (%d of %zu bytes; disk full?)", path, got, len);
    return rc == MPI_SUCCESS && (size_t)got == len;
}

/* Collective when parts are sent: every other process says it has sent
 * all it had; process 0 writes each piece as it comes (after its own
 * writes; after a failure it goes on receiving, so no sender waits
 * forever). Nothing otherwise. */
static void out_drain(job_t *j, out_file_t *f, const char *path)
{
    if (f->mode == OUT_SEND) {
        uint64_t head[2] = {0, UINT64_MAX};
        procs_send(head, 2, MPI_UINT64_T, 0, TAG_PART_HEAD, j->comm);
        return;
    }
    if (!f->serve)
        return;
    for (int left = j->n_procs - 1; left > 0;) {
        uint64_t head[2];
        int from = 0;
        procs_recv(head, 2, MPI_UINT64_T, PROCS_ANY_SOURCE, TAG_PART_HEAD, j->comm, &from);
        if (head[1] == UINT64_MAX) {
            left--;
            continue;
        }
        /* A sender's pieces arrive in order (MPI does not overtake between
         * two processes), so its data message is the next one. */
        procs_recv(f->piece, (int)head[1], MPI_BYTE, from, TAG_PART_DATA, j->comm, NULL);
        if (!j->st)
            pwrite_all(j, f->fd, head[0], f->piece, (size_t)head[1], path);
    }
}

/* Collective under MPI-IO (MPI_File_close): close what out_open opened. */
static void out_close(job_t *j, out_file_t *f, const char *path)
{
    if (f->mode == OUT_MPI) {
        int crc = MPI_File_close(&f->fh);
        if (crc != MPI_SUCCESS)
            job_fail_mpi(j, crc, "closing", path);
        return;
    }
    if (f->fd >= 0 && close(f->fd) != 0)
        job_fail(j, MT_ERR_IO, "%s: closing: %s", path, strerror(errno));
    f->fd = -1;
    free(f->piece);
    f->piece = NULL;
}

/* ------------------------------------------------------------ sinks */

static mt_status_t count_write(void *ctx, const void *data, size_t len)
{
    (void)data;
    *(uint64_t *)ctx += len;
    return MT_OK;
}

/* plain: staged into ~4 MiB pieces, each written at its offset. */
typedef struct fsink {
    job_t *j;
    out_file_t *f;
    const char *path;   /* for messages */
    uint64_t off;       /* where the staged bytes go */
    mt_buf_t buf;
} fsink_t;

static mt_status_t fsink_flush(fsink_t *s)
{
    if (!s->buf.len)
        return MT_OK;
    if (!out_write_at(s->j, s->f, s->off, s->buf.data, s->buf.len, s->path))
        return MT_ERR_IO;
    s->off += s->buf.len;
    s->buf.len = 0;
    return MT_OK;
}

static mt_status_t fsink_write(void *ctx, const void *data, size_t len)
{
    fsink_t *s = ctx;
    mt_status_t st = mt_buf_append(&s->buf, data, len);
    if (!st && s->buf.len >= PIECE_BYTES)
        st = fsink_flush(s);
    return st;
}

/* ------------------------------------------------------------ helpers */

static int input_cmp(const void *a, const void *b)
{
    const mt_merged_input_t *x = *(const mt_merged_input_t *const *)a, *y = *(const mt_merged_input_t *const *)b;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

static int i32_cmp(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return x < y ? -1 : x > y;
}

/* Collective: process 0 tells everyone whether it could allocate. */
static bool root_ok(job_t *j, bool ok)
{
    int v = ok;
    procs_bcast(&v, 1, MPI_INT, 0, j->comm);
    if (!v)
        job_fail(j, MT_ERR_NOMEM, "out of memory");
    return v;
}

/* Collective: every rank, ascending, on process 0 (*out NULL elsewhere). */
static void gather_ranks(job_t *j, const mt_merged_input_t *const *in, size_t n, int32_t **out, size_t *n_out)
{
    *out = NULL;
    *n_out = 0;
    int32_t *mine = malloc((n ? n : 1) * sizeof *mine);
    int cnt = mine ? (int)n : 0;
    if (!mine)
        job_fail(j, MT_ERR_NOMEM, "out of memory");
    for (int i = 0; i < cnt; i++)
        mine[i] = in[i]->rank;
    int *counts = NULL, *displs = NULL;
    int32_t *all = NULL;
    long total = 0;
    if (j->me == 0) {
        counts = calloc((size_t)j->n_procs, sizeof *counts);
        displs = calloc((size_t)j->n_procs, sizeof *displs);
    }
    if (root_ok(j, j->me != 0 || (counts && displs))) {
        procs_gather(&cnt, 1, MPI_INT, counts, 1, MPI_INT, 0, j->comm);
        if (j->me == 0) {
            for (int p = 0; p < j->n_procs; p++) {
                displs[p] = (int)total;
                total += counts[p];
            }
            all = malloc((size_t)(total ? total : 1) * sizeof *all);
        }
        if (root_ok(j, j->me != 0 || all))
            procs_gatherv(mine ? mine : (int32_t[1]){0}, cnt, MPI_INT32_T, all, counts, displs, MPI_INT32_T, 0,
                        j->comm);
    }
    if (j->me == 0 && all) {
        qsort(all, (size_t)total, sizeof *all, i32_cmp);
        *out = all;
        *n_out = (size_t)total;
    }
    free(mine);
    free(counts);
    free(displs);
}

/* A temporary name beside out_path (mt_outdir_tmp_name), the same on
 * every process. */
static char *temp_name(job_t *j, const char *out_path)
{
    void *name = NULL;
    size_t len = 0, cap = strlen(out_path) + 64;
    if (j->me == 0 && (name = malloc(cap)) != NULL && !mt_outdir_tmp_name(out_path, 0, name, cap))
        len = strlen(name);
    if (comm_mpi_bcast_bytes(j->comm, j->me != 0 || len, &name, &len)) {
        free(name);
        job_fail(j, MT_ERR_NOMEM, "out of memory");
        return NULL;
    }
    return name;
}

/* ------------------------------------------------------------ the write */

/* Serialise one rank into write/ctx; failures recorded in j. */
static uint64_t merge_one(job_t *j, const mt_merged_input_t *in, const mt_merge_opts_t *opts, mt_write_fn write,
                          void *ctx)
{
    mt_error_t err;
    mt_error_clear(&err);
    uint64_t n = 0;
    mt_status_t st = j->fmt ? j->fmt->rank(in, in->rank == j->first_rank, write, ctx, &n, &err)
                            : mt_merge_rank_with(in->path, in->rank, in->has_clock ? &in->clock : NULL, opts,
                                                 in->facts, write, ctx, &n, &err);
    if (st == MT_OK && !j->fmt && in->after) {
        uint64_t k = 0;
        st = in->after(in->after_item, write, ctx, &k);
        n += k;
    }
    if (st) {
        if (err.code == MT_OK)
            mt_error_set(&err, st, "%s: %s", in->path, mt_status_str(st));
        job_fail_mt(j, &err);
    }
    return n;
}

static mt_status_t put_header(const job_t *j, mt_write_fn write, void *ctx)
{
    return j->fmt ? j->fmt->header(write, ctx) : mt_merge_header(write, ctx);
}

static mt_status_t put_footer(const job_t *j, const int32_t *ranks, size_t n, mt_write_fn write, void *ctx)
{
    return j->fmt ? j->fmt->footer(write, ctx) : mt_merge_footer(ranks, n, write, ctx);
}

/* Write part at off (independent writes of at most MAX_CALL_BYTES each).
 * Each process's part is one contiguous range that no other process
 * touches, so nothing is gained from a collective write, whose two-phase
 * buffering moved the bytes between processes first. */
static void write_part(job_t *j, out_file_t *f, uint64_t off, const char *data, size_t len, const char *path)
{
    for (size_t done = 0; done < len && !j->st;) {
        size_t k = len - done > MAX_CALL_BYTES ? MAX_CALL_BYTES : len - done;
        out_write_at(j, f, off + done, data + done, k, path);
        done += k;
    }
}

/* Whether this process has a core to spare for a helper thread: it may run
 * on two CPUs or more, and the node has at least two per mergetrace process
 * on it. mpirun binds each of up to two processes to one core by default
 * (then: no), and oversubscribed runs have fewer cores than processes.
 * Collective (the node-local communicator). */
static bool spare_core(job_t *j)
{
    int on_node = procs_node_size(j->comm); /* MPI's processes or the worker threads on this machine */
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    return mt_launcher_cpus() >= 2 && online >= 2L * on_node;
}

/* Collective: v[0..n) summed over the processes into every process's v,
 * in pieces that fit an int count. Each entry set by one process alone
 * (the others' 0): a gather of a table to everyone. */
static void sum_lengths(job_t *j, uint64_t *v, size_t n)
{
    for (size_t done = 0; done < n;) {
        size_t k = n - done < (size_t)INT_MAX ? n - done : (size_t)INT_MAX;
        procs_allreduce(MPI_IN_PLACE, v + done, (int)k, MPI_UINT64_T, MPI_SUM, j->comm);
        done += k;
    }
}

/* A compressed rank waiting for the ranks before it to be compressed. */
typedef struct held {
    size_t g;       /* its index in the job's sorted ranks */
    mt_buf_t buf;
} held_t;

/* gzip, collective: in round r every process compresses its r-th rank into
 * gzip members (process 0 first the header's, written at 0), the round's
 * compressed sizes are summed into a table of every rank's (by its index
 * in the sorted ranks), and each rank whose predecessors' sizes are all
 * known is written at its offset and freed: the file holds the ranks in
 * rank order whatever the number of processes (byte for byte the same
 * file with 1, 2 or N), a process holding only the ranks it compressed
 * ahead of a lower rank of another (one or two when ranks are spread over
 * the processes evenly; the offsets: mergetrace/merged_layout.h).
 * ranks[0..n_ranks) every rank, sorted. *end gets the bytes written:
 * where the footer goes. */
static void gzip_rounds(job_t *j, out_file_t *fh, const mt_merged_input_t *const *in, size_t n, const int32_t *ranks,
                        size_t n_ranks, const mt_merge_opts_t *opts, uint64_t *events, unsigned long long *end,
                        bool *helper, const char *path)
{
    unsigned long long mine = n, rounds = 0, base = 0;
    procs_allreduce(&mine, &rounds, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, j->comm);
    /* size + 1 of this round's ranks by index, 0 for the others (each
     * process sets its own rank's, and a sum over the processes gathers
     * them) */
    uint64_t *round = calloc(n_ranks ? n_ranks : 1, sizeof *round);
    held_t *held = calloc(n ? n : 1, sizeof *held);
    size_t n_held = 0;
    mt_layout_t lay = {0};
    *end = 0;
    if (comm_mpi_agree(j->comm, !round || !held)) {
        job_fail(j, MT_ERR_NOMEM, "out of memory");
        free(round);
        free(held);
        return;
    }
    /* Deflating is a third of writing a rank; with a core to spare it runs
     * on a thread of its own while this one parses and formats the next
     * piece (the same members; 2 ranks x 157 MB, -n 1 --bind-to none on
     * the 2-core VM: merged write 0.65-0.69 -> 0.49-0.53 s). */
    mt_gz_pipe_t *pipe = NULL;
    if (spare_core(j) && mt_gz_pipe_new(MT_GZ_AUTO, 2 * MT_GZ_SINK_CHUNK, &pipe))
        pipe = NULL; /* no thread: compress here */
    *helper = pipe != NULL;
    mt_gz_sink_t z;
    if (j->me == 0) { /* the header */
        mt_buf_t hb = {0};
        mt_status_t st = mt_gz_sink_open(&z, &hb, pipe);
        if (!st)
            st = put_header(j, mt_gz_sink_write, &z);
        mt_status_t cst = mt_gz_sink_close(&z, st == MT_OK);
        if (st || cst)
            job_fail(j, st ? st : cst, "compressing the merged trace: %s", mt_status_str(st ? st : cst));
        else
            write_part(j, fh, 0, hb.data, hb.len, path);
        base = hb.len;
        mt_buf_free(&hb);
    }
    procs_bcast(&base, 1, MPI_UNSIGNED_LONG_LONG, 0, j->comm);
    if (comm_mpi_agree(j->comm, mt_layout_init(&lay, n_ranks, base) != MT_OK))
        job_fail(j, MT_ERR_NOMEM, "out of memory");
    for (unsigned long long r = 0; r < rounds && !job_agree(j); r++) {
        if (r < n) {
            held_t *h = &held[n_held++];
            h->g = mt_layout_rank_index(ranks, n_ranks, in[r]->rank);
            mt_status_t st = mt_gz_sink_open(&z, &h->buf, pipe);
            if (st) {
                job_fail(j, st, "compressing the merged trace: %s", mt_status_str(st));
            } else {
                *events += merge_one(j, in[r], opts, mt_gz_sink_write, &z);
                mt_status_t cst = mt_gz_sink_close(&z, !j->st);
                if (cst)
                    job_fail(j, cst, "compressing the merged trace: %s", mt_status_str(cst));
            }
            round[h->g] = h->buf.len + 1;
        }
        if (job_agree(j))
            break;
        sum_lengths(j, round, n_ranks);
        mt_layout_round(&lay, round);
        /* the held ranks now placed: written at their offsets */
        for (size_t i = 0; i < n_held;) {
            held_t *h = &held[i];
            uint64_t off;
            if (!mt_layout_placed(&lay, h->g, &off)) {
                i++;
                continue;
            }
            write_part(j, fh, off, h->buf.data, h->buf.len, path);
            mt_buf_free(&h->buf);
            *h = held[--n_held];
            held[n_held] = (held_t){0}; /* its buffer is h's now */
        }
        out_drain(j, fh, path);
    }
    /* every rank was compressed and placed unless something failed */
    assert(j->st || lay.placed == n_ranks);
    *end = lay.end;
    for (size_t i = 0; i < n_held; i++)
        mt_buf_free(&held[i].buf);
    free(held);
    mt_layout_free(&lay);
    free(round);
    mt_gz_pipe_free(pipe);
}

static int write_job(const merged_format_t *fmt, MPI_Comm comm, const char *out_path, bool gzip, bool local,
                     const mt_merged_input_t *mine, size_t n_mine, const mt_merge_opts_t *opts, uint64_t *events_written,
                     bool *helper, char *msg, size_t msg_cap)
{
    bool used_helper = false;
    job_t j = {.comm = comm, .fmt = fmt};
    procs_comm_rank(comm, &j.me);
    procs_comm_size(comm, &j.n_procs);
    if (msg_cap)
        msg[0] = '\0';
    if (events_written)
        *events_written = 0;

    /* This process's ranks in rank order. */
    const mt_merged_input_t **in = malloc((n_mine ? n_mine : 1) * sizeof *in);
    if (!in) {
        job_fail(&j, MT_ERR_NOMEM, "out of memory");
        n_mine = 0;
    }
    for (size_t i = 0; i < n_mine; i++)
        in[i] = &mine[i];
    if (in)
        qsort(in, n_mine, sizeof *in, input_cmp);

    /* Every rank, sorted, on every process: the file holds them in this
     * order whatever process merges each. */
    int32_t *ranks = NULL;
    size_t n_ranks = 0;
    gather_ranks(&j, in, n_mine, &ranks, &n_ranks);
    void *rb = ranks;
    size_t bytes = n_ranks * sizeof *ranks;
    if (comm_mpi_bcast_bytes(comm, j.me != 0 || ranks != NULL, &rb, &bytes)) {
        job_fail(&j, MT_ERR_NOMEM, "out of memory");
    } else {
        ranks = rb;
        n_ranks = bytes / sizeof *ranks;
        j.first_rank = n_ranks ? ranks[0] : -1;
    }
    char *tmp = temp_name(&j, out_path);
    /* --local: the output directory may be on process 0's disk alone. */
    bool send = false, exists = false;
    if (local && procs_mpi() && job_agree(&j) == 0)
        send = !out_dir_shared(&j, tmp, out_path, &exists);

    /* Part 1: measure this process's part (plain), and the footer. */
    mt_buf_t footer = {0};
    uint64_t *sizes = calloc(n_mine ? n_mine : 1, sizeof *sizes);
    uint64_t events = 0, header_bytes = 0;
    if (!sizes)
        job_fail(&j, MT_ERR_NOMEM, "out of memory");
    if (!j.st && gzip) {
        if (j.me == 0 && !j.st) {
            mt_gz_sink_t z;
            mt_status_t st = mt_gz_sink_open(&z, &footer, NULL);
            if (!st)
                st = put_footer(&j, ranks, n_ranks, mt_gz_sink_write, &z);
            mt_status_t cst = mt_gz_sink_close(&z, st == MT_OK);
            if (st || cst)
                job_fail(&j, st ? st : cst, "compressing the merged trace: %s", mt_status_str(st ? st : cst));
        }
    } else if (!j.st) {
        if (j.me == 0) {
            put_header(&j, count_write, &header_bytes);
            if (put_footer(&j, ranks, n_ranks, mt_buf_write, &footer))
                job_fail(&j, MT_ERR_NOMEM, "out of memory");
        }
        for (size_t i = 0; i < n_mine && !j.st; i++) {
            merge_one(&j, in[i], opts, count_write, &sizes[i]);
        }
    }
    int rc = job_agree(&j);

    /* Offsets (plain): every rank's size summed into one table (each set
     * by its own process), then each rank at the header's size plus the
     * sizes of the ranks before it, in rank order: one round of
     * mergetrace/merged_layout.h. */
    unsigned long long total = 0;
    mt_layout_t lay = {0};
    if (!rc && !gzip) {
        uint64_t hb = header_bytes;
        procs_bcast(&hb, 1, MPI_UINT64_T, 0, comm);
        uint64_t *round = calloc(n_ranks ? n_ranks : 1, sizeof *round);
        if (comm_mpi_agree(comm, round == NULL || mt_layout_init(&lay, n_ranks, hb) != MT_OK)) {
            job_fail(&j, MT_ERR_NOMEM, "out of memory");
            rc = job_agree(&j);
        } else {
            for (size_t i = 0; i < n_mine; i++)
                round[mt_layout_rank_index(ranks, n_ranks, in[i]->rank)] = sizes[i] + 1;
            sum_lengths(&j, round, n_ranks);
            mt_layout_round(&lay, round);
            total = lay.end;
        }
        free(round);
    }

    /* Part 2: open the temporary file and write. */
    out_file_t fh = {.fh = MPI_FILE_NULL, .fd = -1};
    bool opened = false, created = exists;
    if (!rc) {
        int n_ok = out_open(&j, &fh, tmp, out_path, send, exists);
        /* Close only what everyone opened: closing is collective. Should
         * only some have opened it, their handles are left open (a leak
         * rather than a hang) and process 0 removes the file. */
        opened = n_ok == j.n_procs;
        created = created || n_ok > 0;
        rc = job_agree(&j);
    }
    if (!rc) {
        if (gzip) {
            gzip_rounds(&j, &fh, in, n_mine, ranks, n_ranks, opts, &events, &total, &used_helper, out_path);
        } else {
            fsink_t fs = {.j = &j, .f = &fh, .path = out_path, .off = 0};
            if (j.me == 0 && put_header(&j, fsink_write, &fs))
                job_fail(&j, MT_ERR_NOMEM, "out of memory");
            if (!j.st)
                fsink_flush(&fs);
            for (size_t i = 0; i < n_mine && !j.st; i++) {
                uint64_t at = 0;
                mt_layout_placed(&lay, mt_layout_rank_index(ranks, n_ranks, in[i]->rank), &at);
                fs.off = at;
                events += merge_one(&j, in[i], opts, fsink_write, &fs);
                if (!j.st && fs.off + fs.buf.len - at != sizes[i])
                    job_fail(&j, MT_ERR_IO, "%s: the file changed while it was merged", in[i]->path);
                if (!j.st)
                    fsink_flush(&fs);
            }
            out_drain(&j, &fh, out_path);
            mt_buf_free(&fs.buf);
        }
        /* The footer after everything: process 0, independently. */
        if (j.me == 0 && !j.st && footer.len)
            out_write_at(&j, &fh, total, footer.data, footer.len, out_path);
    }
    if (opened)
        out_close(&j, &fh, out_path);
    rc = job_agree(&j);

    /* Part 3: rename into place, or clean up. */
    if (!rc && j.me == 0 && mt_outdir_rename(tmp, out_path))
        job_fail(&j, MT_ERR_IO, "%s: cannot rename %s to it: %s", out_path, tmp, strerror(errno));
    if (created && j.me == 0 && (rc || j.st))
        unlink(tmp);
    if (!rc)
        rc = job_agree(&j);

    /* the header's process_name event (process 0's) is written too */
    unsigned long long ev = events + (j.me == 0 && !j.fmt), all_ev = 0;
    procs_allreduce(&ev, &all_ev, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, comm);
    if (!rc && events_written)
        *events_written = all_ev;
    if (helper)
        *helper = used_helper;
    if (rc && msg_cap)
        snprintf(msg, msg_cap, "%s", j.msg);

    free(in);
    free(ranks);
    mt_layout_free(&lay);
    free(tmp);
    free(sizes);
    mt_buf_free(&footer);
    return rc;
}

int merged_write(MPI_Comm comm, const char *out_path, bool gzip, bool local, const mt_merged_input_t *mine,
                 size_t n_mine, const mt_merge_opts_t *opts, uint64_t *events_written, bool *helper, char *msg, size_t msg_cap)
{
    return write_job(NULL, comm, out_path, gzip, local, mine, n_mine, opts, events_written, helper, msg, msg_cap);
}

int merged_write_format(const merged_format_t *fmt, MPI_Comm comm, const char *out_path, bool gzip, bool local,
                        const mt_merged_input_t *mine, size_t n_mine, uint64_t *events_written, char *msg, size_t msg_cap)
{
    return write_job(fmt, comm, out_path, gzip, local, mine, n_mine, NULL, events_written, NULL, msg, msg_cap);
}
