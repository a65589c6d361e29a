/* Flight Recorder dumps in the program: ranked and shared on process 0,
 * read by their processes, gathered packed on process 0 for the hang
 * analysis; alone, the whole run (outputs and the verdict); beside traces,
 * a verdict the job's outputs carry (outputs.c). */
#define _POSIX_C_SOURCE 200809L
#include "fr_run.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm_mpi.h"
#include "merged_io.h"
#include "outputs.h"
#include "procs.h"
#include "say.h"

static mt_status_t file_write(void *ctx, const void *data, size_t len)
{
    return fwrite(data, 1, len, (FILE *)ctx) == len ? MT_OK : MT_ERR_IO;
}

static mt_status_t out_write(void *ctx, const void *data, size_t len)
{
    (void)ctx;
    return fwrite(data, 1, len, stdout) == len ? MT_OK : MT_ERR_IO;
}

/* Process 0: each dump's rank (map, else file name) and owner, checked;
 * the list as bytes for the broadcast: per dump int32 rank, int32 owner,
 * uint32 path length, the path. 0, or an exit code after saying why. */
static int plan(const options_t *o, mt_discover_list_t *files, const mt_rankmap_t *map, int n_procs, mt_buf_t *out)
{
    size_t n = files->n_fr;
    int32_t *rank = malloc((n ? n : 1) * sizeof *rank);
    if (!rank) {
        say("mergetrace: out of memory\n");
        return MT_EXIT_ERROR;
    }
    int code = 0;
    for (size_t i = 0; i < n && !code; i++) {
        const char *p = files->fr[i].path;
        int64_t r = map ? mt_rankmap_lookup(map, p) : -1;
        if (r < 0)
            r = mt_fr_rank_from_name(p);
        if (r < 0 || r >= MT_FR_MAX_RANKS) {
            say("mergetrace: %s%s: a Flight Recorder dump with no rank in its file name (PyTorch names them "
                "<prefix><rank>, e.g. comm_lib_trace_rank_3): give --rank-map FILE\n",
                o->job_tag, p);
            code = MT_EXIT_BAD_INPUT;
            break;
        }
        rank[i] = (int32_t)r;
        for (size_t k = 0; k < i; k++)
            if (rank[k] == rank[i]) {
                say("mergetrace: %s%s and %s: two Flight Recorder dumps of rank %d\n", o->job_tag,
                        files->fr[k].path, p, rank[i]);
                code = MT_EXIT_BAD_INPUT;
            }
    }
    if (!code) {
        mt_discover_list_t tmp = {.files = files->fr, .n = n};
        mt_discover_assign(&tmp, n_procs);
    }
    for (size_t i = 0; i < n && !code; i++) {
        uint32_t len = (uint32_t)strlen(files->fr[i].path);
        int32_t head[2] = {rank[i], files->fr[i].owner};
        if (mt_buf_append(out, head, sizeof head) || mt_buf_append(out, &len, sizeof len) ||
            mt_buf_append(out, files->fr[i].path, len)) {
            say("mergetrace: out of memory\n");
            code = MT_EXIT_ERROR;
        }
    }
    free(rank);
    return code;
}

/* This process's dumps read and packed into *packed; on the first that
 * fails, *bad_index and msg/st say which and why (the others are still
 * packed: every process goes on to the agreement). */
static void read_share(const uint8_t *list, size_t len, int me, mt_buf_t *packed, long *bad_index, char *msg,
                       size_t cap, mt_status_t *st)
{
    size_t pos = 0;
    for (long i = 0; pos + 12 <= len; i++) {
        int32_t head[2];
        uint32_t pl;
        memcpy(head, list + pos, sizeof head);
        memcpy(&pl, list + pos + 8, sizeof pl);
        char *path = strndup((const char *)list + pos + 12, pl);
        pos += 12 + pl;
        if (head[1] != me || *bad_index >= 0) {
            free(path);
            continue;
        }
        char *data = NULL;
        size_t dlen = 0;
        bool trunc = false;
        mt_error_t err;
        mt_error_clear(&err);
        mt_fr_dump_t d;
        mt_status_t s = !path ? MT_ERR_NOMEM : mt_input_read_file(path, &data, &dlen, &trunc, &err);
        if (s == MT_OK)
            s = mt_fr_dump_read((const uint8_t *)data, dlen, path, head[0], &d, &err);
        if (s == MT_OK) {
            s = mt_fr_dump_pack_append(&d, packed);
            mt_fr_dump_free(&d);
        }
        if (s != MT_OK) {
            *bad_index = i;
            *st = s;
            if (s == MT_ERR_NOMEM)
                snprintf(msg, cap, "out of memory reading %s", path ? path : "a Flight Recorder dump");
            else {
                if (err.rank < 0)
                    err.rank = head[0];
                mt_error_format(&err, msg, cap);
            }
        }
        free(data);
        free(path);
    }
}

static int by_rank(const void *a, const void *b)
{
    return ((const mt_fr_dump_t *)a)->rank - ((const mt_fr_dump_t *)b)->rank;
}

/* Process 0: the gathered bytes unpacked into fr->dumps (by rank) with
 * their paths, then analysed; with --force a dump of another job is left
 * out (warned) and the analysis run again. 0 or an exit code (said). */
static int analyse(const options_t *o, const mt_discover_list_t *files, const mt_buf_t *list, const uint8_t *all, size_t len,
                   fr_job_t *fr)
{
    size_t n = files->n_fr;
    fr->dumps = calloc(n ? n : 1, sizeof *fr->dumps);
    fr->paths = calloc(n ? n : 1, sizeof *fr->paths);
    fr->bytes = calloc(n ? n : 1, sizeof *fr->bytes);
    if (!fr->dumps || !fr->paths || !fr->bytes) {
        say("mergetrace: out of memory\n");
        return MT_EXIT_ERROR;
    }
    size_t at = 0;
    while (at < len && fr->n < n) {
        mt_status_t st = mt_fr_dump_unpack(all, len, &at, &fr->dumps[fr->n]);
        if (st != MT_OK) {
            say("mergetrace: %s\n", st == MT_ERR_NOMEM ? "out of memory" : "internal error: a packed dump");
            return MT_EXIT_ERROR;
        }
        fr->n++;
    }
    qsort(fr->dumps, fr->n, sizeof *fr->dumps, by_rank);
    /* the path of each rank: the plan gave every file a distinct rank, and
     * the file's rank is the one it was read with */
    size_t pos = 0;
    for (size_t k = 0; k < n && pos + 12 <= list->len; k++) {
        int32_t r;
        uint32_t pl;
        memcpy(&r, list->data + pos, sizeof r);
        memcpy(&pl, list->data + pos + 8, sizeof pl);
        pos += 12 + pl;
        for (size_t i = 0; i < fr->n; i++)
            if (fr->dumps[i].rank == r) {
                fr->paths[i] = files->fr[k].path;
                fr->bytes[i] = files->fr[k].bytes;
            }
    }
    for (;;) {
        mt_error_t err;
        mt_error_clear(&err);
        mt_status_t st = mt_fr_hang_analyse(fr->dumps, fr->n, &fr->hang, &err);
        if (st == MT_OK)
            return 0;
        if (st != MT_ERR_FORMAT) {
            say("mergetrace: out of memory\n");
            return MT_EXIT_ERROR;
        }
        size_t bad = 0;
        while (bad < fr->n && fr->dumps[bad].rank != err.rank)
            bad++;
        const char *path = bad < fr->n ? fr->paths[bad] : "?";
        if (!o->force || fr->n < 2) {
            say("mergetrace: %s%s: rank %d: %s (--force leaves such a dump out)\n", o->job_tag, path,
                    err.rank, err.msg);
            return MT_EXIT_BAD_INPUT;
        }
        if (!o->quiet)
            say("mergetrace: warning: %s: rank %d: %s: left out (--force)\n", path, err.rank, err.msg);
        mt_fr_dump_free(&fr->dumps[bad]);
        memmove(&fr->dumps[bad], &fr->dumps[bad + 1], (fr->n - bad - 1) * sizeof *fr->dumps);
        memmove(&fr->paths[bad], &fr->paths[bad + 1], (fr->n - bad - 1) * sizeof *fr->paths);
        memmove(&fr->bytes[bad], &fr->bytes[bad + 1], (fr->n - bad - 1) * sizeof *fr->bytes);
        fr->n--;
    }
}

/* Write path from buf (gzip-compressed when gz) under a temporary name,
 * then rename (said first in the renaming mark). 0, or 1 with msg. */
static int write_file(const char *dir, const char *path, const mt_buf_t *buf, bool gz, char *msg, size_t cap)
{
    char tmp[PATH_MAX + 32];
    mt_buf_t z = {0};
    const mt_buf_t *b = buf;
    mt_status_t st = MT_OK;
    if (gz) {
        mt_gz_t *g = NULL;
        st = mt_gz_new(MT_GZ_AUTO, &g);
        for (size_t at = 0; st == MT_OK && at < buf->len; at += MT_GZ_MAX_MEMBER)
            st = mt_gz_member(g, buf->data + at, buf->len - at < MT_GZ_MAX_MEMBER ? buf->len - at : MT_GZ_MAX_MEMBER,
                              &z);
        mt_gz_free(g);
        b = &z;
    }
    FILE *f = st == MT_OK ? merged_io_tmp_create(path, tmp, sizeof tmp) : NULL;
    if (!f) {
        snprintf(msg, cap, "%.900s: cannot create (%s)", path, st == MT_OK ? strerror(errno) : "out of memory");
        mt_buf_free(&z);
        return 1;
    }
    st = file_write(f, b->data, b->len);
    if (fclose(f) != 0)
        st = MT_ERR_IO;
    mt_buf_free(&z);
    const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    if (st != MT_OK || merged_io_renaming(dir, name, tmp) || rename(tmp, path) != 0) {
        snprintf(msg, cap, "%.900s: write failed (%s)", path, strerror(errno));
        remove(tmp);
        return 1;
    }
    return 0;
}

/* Process 0, dumps alone: report.json, report.html and the merged trace
 * of the entries; the verdict or report.json on stdout. An exit code. */
static int outputs_alone(const options_t *o, const fr_job_t *fr, const char *merged_path)
{
    char msg[1400] = "";
    mt_report_input_t *ri = calloc(fr->n ? fr->n : 1, sizeof *ri);
    int64_t *missing = calloc((size_t)(fr->hang.world ? fr->hang.world : 1), sizeof *missing);
    if (!ri || !missing) {
        free(ri);
        free(missing);
        say("mergetrace: out of memory\n");
        return MT_EXIT_ERROR;
    }
    uint64_t entries = 0;
    for (size_t i = 0; i < fr->n; i++) {
        ri[i] = (mt_report_input_t){.rank = fr->dumps[i].rank,
                                    .rank_source = "file name",
                                    .path = fr->paths[i],
                                    .bytes = fr->bytes[i],
                                    .events = fr->dumps[i].n};
        entries += fr->dumps[i].n;
    }
    size_t n_missing = 0;
    for (int r = 0; r < fr->hang.world; r++)
        if (!fr->hang.has_dump[r])
            missing[n_missing++] = r;
    mt_report_t rep = {.version = MERGETRACE_VERSION,
                       .world_size = fr->hang.world,
                       .inputs = ri,
                       .n_inputs = fr->n,
                       .missing = missing,
                       .n_missing = n_missing,
                       .reference_rank = fr->hang.ref_rank,
                       .merged = merged_path ? strrchr(merged_path, '/') + 1 : NULL,
                       .merged_events = entries,
                       .hang = &fr->hang};
    int code = fr->hung ? MT_EXIT_HANG : MT_EXIT_OK;
    mt_buf_t b = {0};
    char path[PATH_MAX];
    if (merged_path) {
        if (mt_fr_trace_json(fr->dumps, fr->n, &fr->hang, mt_buf_write, &b) != MT_OK ||
            write_file(o->out_dir, merged_path, &b, o->merged_gzip, msg, sizeof msg))
            code = MT_EXIT_ERROR;
        b.len = 0;
    }
    if (code != MT_EXIT_ERROR) {
        snprintf(path, sizeof path, "%.4000s/report.json", o->out_dir);
        if (mt_report_json(&rep, mt_buf_write, &b) != MT_OK || write_file(o->out_dir, path, &b, false, msg, sizeof msg))
            code = MT_EXIT_ERROR;
    }
    if (code != MT_EXIT_ERROR && o->json && fwrite(b.data, 1, b.len, stdout) != b.len)
        code = MT_EXIT_ERROR;
    b.len = 0;
    mt_html_opts_t ho = {.command_line = o->command_line};
    if (code != MT_EXIT_ERROR && !o->no_html) {
        snprintf(path, sizeof path, "%.4000s/report.html", o->out_dir);
        if (mt_report_html(&rep, &ho, mt_buf_write, &b) != MT_OK || write_file(o->out_dir, path, &b, false, msg, sizeof msg))
            code = MT_EXIT_ERROR;
    }
    mt_buf_free(&b);
    if (code == MT_EXIT_ERROR)
        say("mergetrace: %s\n", msg[0] ? msg : "out of memory");
    else {
        if (!o->json && !o->quiet) {
            printf("mergetrace: %zu Flight Recorder dump%s, %llu entries\n", fr->n, fr->n == 1 ? "" : "s",
                   (unsigned long long)entries);
            if (mt_fr_hang_write_text(&fr->hang, out_write, NULL) != MT_OK)
                code = MT_EXIT_ERROR;
            printf("\nwrote %s/report.json", o->out_dir);
            if (!o->no_html)
                printf("%s%s/report.html", merged_path ? ", " : " and ", o->out_dir);
            if (merged_path)
                printf(" and %s (%llu entries)", merged_path, (unsigned long long)entries);
            printf("\n");
        }
        if (code != MT_EXIT_ERROR)
            merged_io_renamed_all();
    }
    if (fflush(stdout) || ferror(stdout)) {
        say("mergetrace: stdout: write error\n");
        code = MT_EXIT_ERROR;
    }
    free(ri);
    free(missing);
    return code;
}

int fr_stage(MPI_Comm comm, const mt_comm_t *mc, const options_t *o, mt_discover_list_t *files,
             const mt_rankmap_t *map, fr_job_t *fr)
{
    memset(fr, 0, sizeof *fr);
    int me = mc->rank;
    /* how many dumps and traces, and the plan, from process 0 */
    int64_t counts[3] = {0, 0, 0}; /* dumps, traces, plan bytes or -code */
    mt_buf_t list = {0};
    if (me == 0) {
        counts[0] = (int64_t)files->n_fr;
        counts[1] = (int64_t)files->n;
        if (files->n_fr) {
            int code = plan(o, files, map, mc->size, &list);
            counts[2] = code ? -code : (int64_t)list.len;
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
    if (me != 0 && mt_buf_reserve(&list, (size_t)counts[2] + 1) != MT_OK)
        counts[2] = -1;
    if (comm_mpi_agree(comm, counts[2] < 0)) {
        if (me == 0)
            say("mergetrace: out of memory\n");
        mt_buf_free(&list);
        return MT_EXIT_ERROR;
    }
    if (mc->bcast(mc->ctx, list.data, (size_t)counts[2], 0) != MT_OK) {
        mt_buf_free(&list);
        return MT_EXIT_ERROR;
    }
    list.len = (size_t)counts[2];

    /* each process reads its share; the lowest failing dump says why */
    mt_buf_t packed = {0};
    long bad = -1;
    char msg[1400] = "";
    mt_status_t st = MT_OK;
    read_share((const uint8_t *)list.data, list.len, me, &packed, &bad, msg, sizeof msg, &st);
    int mine = bad >= 0 ? (int)bad : INT_MAX, lowest = INT_MAX;
    procs_allreduce(&mine, &lowest, 1, MPI_INT, MPI_MIN, comm);
    if (lowest != INT_MAX) {
        if (mine == lowest)
            say("mergetrace: %s%s\n", o->job_tag, msg);
        int code = mine == lowest ? options_exit_code(st) : 0;
        mt_buf_free(&packed);
        mt_buf_free(&list);
        return comm_mpi_agree(comm, code);
    }
    void *all = NULL;
    size_t all_len = 0;
    st = mc->gatherv(mc->ctx, packed.data, packed.len, &all, &all_len, 0);
    mt_buf_free(&packed);
    int code = st == MT_OK ? 0 : MT_EXIT_ERROR;
    if (me == 0 && !code) {
        code = analyse(o, files, &list, all, all_len, fr);
        fr->hung = !code && fr->hang.kind != MT_FR_NO_HANG;
    }
    free(all);
    mt_buf_free(&list);
    int hung = fr->hung;
    procs_bcast(&code, 1, MPI_INT, 0, comm);
    procs_bcast(&hung, 1, MPI_INT, 0, comm);
    fr->hung = hung != 0;
    if (code)
        return code;
    if (counts[1]) /* beside traces: the job's outputs carry the verdict */
        return -1;

    /* dumps alone: the whole run */
    merged_out_t m = {0};
    code = outputs_prepare(comm, o, files, &m);
    if (code == MT_EXIT_OK && me == 0)
        code = outputs_alone(o, fr, o->no_merge ? NULL : m.path);
    procs_bcast(&code, 1, MPI_INT, 0, comm);
    return code;
}

int fr_from_nccl(const options_t *o, const mt_discover_list_t *files, const mt_nccl_job_t *nj, fr_job_t *fr)
{
    bool any = false;
    size_t n = 0;
    for (size_t i = 0; i < nj->n; i++) {
        any |= nj->r[i].info.in_flight > 0;
        n += nj->r[i].info.is_nccl == MT_NCCL_FMT_PLUGIN && !nj->r[i].info.left_out;
    }
    if (fr->any || !any)
        return 0;
    mt_nccl_file_t **nf = calloc(n, sizeof *nf);
    int32_t *ranks = calloc(n, sizeof *ranks);
    fr->dumps = calloc(n, sizeof *fr->dumps);
    fr->paths = calloc(n, sizeof *fr->paths);
    fr->bytes = calloc(n, sizeof *fr->bytes);
    int code = nf && ranks && fr->dumps && fr->paths && fr->bytes ? 0 : MT_EXIT_ERROR;
    if (code)
        say("mergetrace: out of memory\n");
    size_t k = 0;
    for (size_t i = 0; !code && i < nj->n; i++) {
        const mt_nccl_rank_t *r = &nj->r[i];
        if (r->info.is_nccl != MT_NCCL_FMT_PLUGIN || r->info.left_out)
            continue;
        const mt_discover_file_t *in = &files->files[r->file_index];
        mt_error_t err;
        mt_error_clear(&err);
        mt_status_t st = mt_nccl_load(in->path, &nf[k], &err);
        if (st != MT_OK) {
            say("mergetrace: %s%s: rank %d: read again for the hang analysis: %s\n", o->job_tag, in->path, (int)r->rank,
                err.msg[0] ? err.msg : mt_status_str(st));
            code = options_exit_code(st);
            break;
        }
        ranks[k] = r->rank;
        fr->paths[k] = in->path;
        fr->bytes[k] = in->bytes;
        k++;
    }
    if (!code) {
        mt_error_t err;
        mt_error_clear(&err);
        mt_status_t st = mt_fr_from_nccl((const mt_nccl_file_t *const *)nf, ranks, k, fr->dumps, &err);
        if (st == MT_OK) {
            fr->n = k;
            st = mt_fr_hang_analyse(fr->dumps, fr->n, &fr->hang, &err);
        }
        if (st != MT_OK) {
            say("mergetrace: %sthe hang analysis of the NCCL plugin's files: %s\n", o->job_tag,
                err.msg[0] ? err.msg : mt_status_str(st));
            code = st == MT_ERR_NOMEM ? MT_EXIT_ERROR : options_exit_code(st);
        }
    }
    for (size_t i = 0; i < k; i++)
        mt_nccl_file_free(nf[i]);
    free(nf);
    free(ranks);
    if (code) {
        fr_free(fr);
        return code;
    }
    fr->any = fr->from_nccl = true;
    fr->hung = fr->hang.kind != MT_FR_NO_HANG;
    return 0;
}

void fr_print(const options_t *o, const fr_job_t *fr)
{
    if (!fr->any || o->quiet || o->json)
        return;
    if (fr->from_nccl)
        printf("\nNCCL plugin files with collectives in flight at their end (%zu file%s): hang analysis\n", fr->n,
               fr->n == 1 ? "" : "s");
    else
        printf("\nflight recorder (%zu dump%s):\n", fr->n, fr->n == 1 ? "" : "s");
    mt_fr_hang_write_text(&fr->hang, out_write, NULL);
}

void fr_free(fr_job_t *fr)
{
    for (size_t i = 0; i < fr->n; i++)
        mt_fr_dump_free(&fr->dumps[i]);
    free(fr->dumps);
    free(fr->paths);
    free(fr->bytes);
    mt_fr_hang_free(&fr->hang);
    memset(fr, 0, sizeof *fr);
}
