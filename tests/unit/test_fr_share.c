/* Flight Recorder dumps shared among processes, without MPI
 * (mergetrace/fr_share.h, mt_discover_fr_plan): the plan's ranks, owners
 * and errors against hand-worked values, each simulated process's share
 * read, and the analysis at scale (heads, keep plan, fitted and trimmed
 * dumps) giving the verdict of the one-shot analysis of the whole dumps
 * and the scenario's truth (tests/data/fr-skip: rank 3 never enqueued the
 * default group's all_reduce #7); the report of dumps alone
 * (mt_report_fr_alone); the NCCL plugin's files of a job that hung made
 * into dumps (mt_discover_fr_from_nccl); a dump placed on its rank's
 * trace (mt_fr_place_fit) against hand-worked shifts. */
#define _POSIX_C_SOURCE 200809L /* strdup */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "fr/fr.h"
#include "mergetrace/mergetrace.h"
#include "test_util.h"

#define SKIP_DIR MT_SOURCE_DIR "/tests/data/fr-skip/comm_lib_trace_rank_"

/* The list's dumps in the order given (ranks by file name). */
static void list_of(mt_discover_list_t *l, const int *ranks, size_t n)
{
    memset(l, 0, sizeof *l);
    l->fr = calloc(n, sizeof *l->fr);
    assert_non_null(l->fr);
    for (size_t i = 0; i < n; i++) {
        char p[512];
        snprintf(p, sizeof p, "%s%d", SKIP_DIR, ranks[i]);
        struct stat sb;
        assert_int_equal(stat(p, &sb), 0);
        l->fr[i] = (mt_discover_file_t){.path = strdup(p), .bytes = (uint64_t)sb.st_size, .part = -1};
    }
    l->n_fr = l->cap_fr = n;
}

/* The lines the plan tells (mt_discover_fr_plan's note): counted, the
 * last one kept. */
typedef struct bad_log {
    int calls;
    char line[2048];
} bad_log_t;

static void bad_note(void *ctx, const char *line)
{
    bad_log_t *b = ctx;
    b->calls++;
    snprintf(b->line, sizeof b->line, "%s", line);
}

/* Two processes: files of 3651, 3693, 3260 and 3082 bytes (ranks 0..3),
 * +1 each, 13,690 in all; a dump goes to floor(2 * (bytes before it in
 * rank order + half its own) / 13,690): ranks 0 and 1 to process 0
 * (1,826 and 5,499), 2 and 3 to process 1 (8,976 and 12,148), whatever
 * the list's order. */
static void test_plan(void **state)
{
    (void)state;
    static const int order[] = {2, 0, 3, 1};
    mt_discover_list_t l;
    list_of(&l, order, 4);
    mt_buf_t b = {0};
    bad_log_t bad = {0};
    assert_int_equal(mt_discover_fr_plan(&l, NULL, 2, "", bad_note, &bad, &b), 0);
    assert_int_equal(bad.calls, 0);
    static const int want_owner[] = {1, 0, 1, 0};
    size_t pos = 0;
    mt_fr_share_rec_t r;
    for (size_t i = 0; i < 4; i++) {
        assert_true(mt_fr_share_next(b.data, b.len, &pos, &r));
        assert_int_equal(r.rank, order[i]);
        assert_int_equal(r.owner, want_owner[i]);
        assert_int_equal(l.fr[i].owner, want_owner[i]);
        assert_int_equal(r.path_len, strlen(l.fr[i].path));
        assert_memory_equal(r.path, l.fr[i].path, r.path_len);
    }
    assert_false(mt_fr_share_next(b.data, b.len, &pos, &r));
    assert_int_equal(pos, b.len);
    assert_int_equal(mt_fr_share_owner(b.data, b.len, 3), 1);
    assert_int_equal(mt_fr_share_owner(b.data, b.len, 0), 0);
    assert_int_equal(mt_fr_share_owner(b.data, b.len, 7), -1);

    /* one process: every dump its own */
    b.len = 0;
    assert_int_equal(mt_discover_fr_plan(&l, NULL, 1, "", bad_note, &bad, &b), 0);
    pos = 0;
    while (mt_fr_share_next(b.data, b.len, &pos, &r))
        assert_int_equal(r.owner, 0);

    /* a dump twice (two names of rank 2): told with the earlier one, nothing listed */
    free(l.fr[1].path);
    l.fr[1].path = strdup(MT_SOURCE_DIR "/tests/data/fr-trunc/comm_lib_trace_rank_2");
    b.len = 0;
    assert_int_equal(mt_discover_fr_plan(&l, NULL, 2, "", bad_note, &bad, &b), 1);
    assert_int_equal(bad.calls, 1);
    char want[2048];
    snprintf(want, sizeof want, "%s and %s: two Flight Recorder dumps of rank 2", l.fr[0].path, l.fr[1].path);
    assert_string_equal(bad.line, want);
    assert_int_equal(b.len, 0);

    /* no rank in the name */
    free(l.fr[3].path);
    l.fr[3].path = strdup(MT_SOURCE_DIR "/tests/data/fr-skip/README.md");
    free(l.fr[1].path);
    l.fr[1].path = strdup(SKIP_DIR "0");
    bad = (bad_log_t){0};
    assert_int_equal(mt_discover_fr_plan(&l, NULL, 2, "--baseline: ", bad_note, &bad, &b), 1);
    assert_int_equal(bad.calls, 1);
    snprintf(want, sizeof want,
             "--baseline: %s: a Flight Recorder dump with no rank in its file name (PyTorch names them "
             "<prefix><rank>, e.g. comm_lib_trace_rank_3): give --rank-map FILE",
             l.fr[3].path);
    assert_string_equal(bad.line, want);
    mt_buf_free(&b);
    mt_discover_free(&l);
}

/* The verdict of the scenario (tests/data/fr-skip/README.md). */
static void check_truth(const mt_fr_hang_t *h)
{
    assert_int_equal(h->kind, MT_FR_NEVER_ENQUEUED);
    assert_int_equal(h->nculprits, 1);
    assert_int_equal(h->culprits[0], 3);
    assert_int_equal(h->seq, 7);
    assert_string_equal(h->pg_desc, "default_pg");
    assert_int_equal(h->world, 4);
    assert_int_equal(h->ref_rank, 0);
}

/* The verdicts of the same dumps read two ways agree field by field. */
static void same_verdict(const mt_fr_hang_t *a, const mt_fr_hang_t *b)
{
    assert_int_equal(a->kind, b->kind);
    assert_string_equal(a->pg, b->pg);
    assert_int_equal(a->seq, b->seq);
    assert_string_equal(a->name, b->name);
    assert_int_equal(a->nculprits, b->nculprits);
    assert_memory_equal(a->culprits, b->culprits, sizeof a->culprits);
    assert_int_equal(a->world, b->world);
    assert_int_equal(a->fit_pairs, b->fit_pairs);
    assert_int_equal(a->dump_ns, b->dump_ns);
    assert_int_equal(a->last_arrival, b->last_arrival);
    assert_memory_equal(a->offset_ns, b->offset_ns, (size_t)a->world * sizeof *a->offset_ns);
    assert_memory_equal(a->wait_ns, b->wait_ns, (size_t)a->world * sizeof *a->wait_ns);
}

/* Two simulated processes: each reads its share; the heads, the keep plan
 * and the trimmed dumps pass through bytes as the program sends them. */
static void test_at_scale(void **state)
{
    (void)state;
    static const int order[] = {3, 1, 0, 2};
    mt_discover_list_t l;
    list_of(&l, order, 4);
    mt_buf_t list = {0};
    bad_log_t bad = {0};
    assert_int_equal(mt_discover_fr_plan(&l, NULL, 2, "", bad_note, &bad, &list), 0);
    mt_fr_local_t *mine[2];
    size_t n_mine[2];
    for (int p = 0; p < 2; p++) {
        long bad_index = -1;
        char msg[256] = "";
        mt_status_t st = MT_OK;
        mt_fr_share_read(list.data, list.len, p, &mine[p], &n_mine[p], &bad_index, msg, sizeof msg, &st);
        assert_int_equal(bad_index, -1);
        assert_int_equal(n_mine[p], 2);
        mt_fr_locals_sort(mine[p], n_mine[p]);
        assert_int_equal(mine[p][0].d.rank, 2 * p);
        assert_int_equal(mine[p][1].d.rank, 2 * p + 1);
    }

    /* the one-shot analysis of the whole dumps: the truth */
    mt_fr_job_t whole = {0};
    mt_buf_t packed = {0};
    for (int p = 1; p >= 0; p--) /* any order */
        for (size_t i = 0; i < n_mine[p]; i++)
            assert_int_equal(mt_fr_dump_pack_append(&mine[p][i].d, &packed), MT_OK);
    assert_int_equal(mt_fr_job_unpack(&whole, 4, (const uint8_t *)packed.data, packed.len), MT_OK);
    assert_int_equal(whole.n, 4);
    for (int r = 0; r < 4; r++) {
        assert_int_equal(whole.dumps[r].rank, r);
        assert_int_equal(whole.counts[r], whole.dumps[r].n);
        assert_int_equal(mt_fr_job_find(&whole, r), r);
    }
    assert_int_equal(mt_fr_job_find(&whole, 4), -1);
    mt_discover_fr_attach(&l, list.data, list.len, &whole);
    for (size_t i = 0; i < 4; i++) {
        assert_string_equal(whole.paths[order[i]], l.fr[i].path);
        assert_int_equal(whole.bytes[order[i]], l.fr[i].bytes);
    }
    mt_error_t err;
    const char *bad_path = NULL;
    assert_int_equal(mt_fr_job_analyse(&whole, false, NULL, NULL, &err, &bad_path), MT_OK);
    check_truth(&whole.hang);
    /* the same through the program's call: unpacked, attached, analysed */
    mt_fr_job_t w2 = {0};
    char wmsg[600];
    assert_int_equal(mt_discover_fr_whole(&l, list.data, list.len, (const uint8_t *)packed.data, packed.len, false,
                                          false, "", NULL, NULL, &w2, wmsg, sizeof wmsg),
                     MT_OK);
    assert_string_equal(wmsg, "");
    same_verdict(&w2.hang, &whole.hang);
    for (size_t i = 0; i < 4; i++)
        assert_string_equal(w2.paths[order[i]], l.fr[i].path);
    mt_fr_job_free(&w2);
    w2 = (mt_fr_job_t){0};
    assert_int_equal(mt_discover_fr_whole(&l, list.data, list.len, (const uint8_t *)packed.data, packed.len - 3, false,
                                          false, "", NULL, NULL, &w2, wmsg, sizeof wmsg),
                     MT_ERR_NOMEM);
    assert_string_equal(wmsg, "internal error: a packed dump");
    mt_fr_job_free(&w2);

    /* process 1's dumps (ranks 2 and 3) on the verdict's clocks, as one
     * piece of the merged trace of the entries: each rank's part as
     * mt_fr_trace_rank writes it, one after the other, and their entries */
    mt_fr_locals_place(mine[1], n_mine[1], whole.hang.offset_ns, whole.hang.world, whole.hang.dump_ns);
    mt_buf_t piece = {0}, want = {0};
    uint64_t ev = 0, k = 0, want_ev = 0;
    for (size_t i = 0; i < 2; i++) {
        int r = mine[1][i].d.rank;
        int64_t o = whole.hang.offset_ns[r] != MT_FR_NONE ? whole.hang.offset_ns[r] : 0;
        assert_int_equal(mine[1][i].off, o);
        assert_int_equal(mine[1][i].dump_ns, whole.hang.dump_ns);
        assert_int_equal(mt_fr_trace_rank(&mine[1][i].d, false, o, whole.hang.dump_ns, mt_buf_write, &want, &k), MT_OK);
        want_ev += k;
    }
    assert_int_equal(mt_fr_locals_trace(mine[1], 2, false, mt_buf_write, &piece, &ev), MT_OK);
    assert_int_equal(ev, whole.counts[2] + whole.counts[3]);
    assert_int_equal(ev, want_ev);
    assert_int_equal(piece.len, want.len);
    assert_memory_equal(piece.data, want.data, want.len);
    /* a world of 3 (rank 3 beyond it): offset 0 */
    mt_fr_locals_place(mine[1], n_mine[1], whole.hang.offset_ns, 3, 7);
    assert_int_equal(mine[1][1].d.rank, 3);
    assert_int_equal(mine[1][1].off, 0);
    assert_int_equal(mine[1][1].dump_ns, 7);
    mt_buf_free(&piece);
    mt_buf_free(&want);

    /* the report of the dumps alone: 55 entries in all (the program's
     * "4 Flight Recorder dumps, 55 entries" on fr-skip) */
    mt_report_t rep;
    assert_int_equal(mt_report_fr_alone(&whole, "merged.json.gz", &rep), MT_OK);
    assert_int_equal(rep.n_inputs, 4);
    assert_int_equal(rep.world_size, 4);
    assert_int_equal(rep.n_missing, 0);
    assert_int_equal(rep.reference_rank, 0);
    assert_int_equal(rep.merged_events, 55);
    assert_string_equal(rep.merged, "merged.json.gz");
    assert_ptr_equal(rep.hang, &whole.hang);
    for (int r = 0; r < 4; r++) {
        assert_int_equal(rep.inputs[r].rank, r);
        assert_string_equal(rep.inputs[r].rank_source, "file name");
        assert_ptr_equal(rep.inputs[r].path, whole.paths[r]);
        assert_int_equal(rep.inputs[r].bytes, whole.bytes[r]);
        assert_int_equal(rep.inputs[r].events, whole.counts[r]);
    }
    mt_report_fr_free(&rep);
    assert_null(rep.inputs);
    /* without rank 2's dump: rank 2 is missing from the world of 4 */
    mt_buf_t three = {0};
    for (int r = 0; r < 4; r++)
        if (r != 2)
            assert_int_equal(mt_fr_dump_pack_append(&whole.dumps[r], &three), MT_OK);
    mt_fr_job_t j3 = {0};
    assert_int_equal(mt_fr_job_unpack(&j3, 3, (const uint8_t *)three.data, three.len), MT_OK);
    assert_int_equal(mt_fr_job_analyse(&j3, false, NULL, NULL, &err, &bad_path), MT_OK);
    assert_int_equal(mt_report_fr_alone(&j3, NULL, &rep), MT_OK);
    assert_int_equal(rep.n_inputs, 3);
    assert_int_equal(rep.n_missing, 1);
    assert_int_equal(rep.missing[0], 2);
    assert_null(rep.merged);
    assert_int_equal(rep.merged_events, whole.counts[0] + whole.counts[1] + whole.counts[3]);
    mt_report_fr_free(&rep);
    mt_fr_job_free(&j3);
    mt_buf_free(&three);

    /* 1. heads from each process, gathered */
    mt_buf_t all = {0};
    for (int p = 0; p < 2; p++)
        assert_int_equal(mt_fr_heads_pack(mine[p], n_mine[p], &all), MT_OK);
    /* 2. process 0: the heads and the keep plan */
    mt_fr_job_t fr = {0};
    mt_fr_pg_seq_t *keep = NULL;
    size_t nkeep = 0;
    assert_true(mt_fr_heads_unpack((const uint8_t *)all.data, all.len, 4, &fr, &keep, &nkeep));
    assert_int_equal(fr.n, 4);
    assert_int_equal(fr.ntabs, 2);
    for (int r = 0; r < 4; r++) {
        assert_int_equal(fr.dumps[r].rank, r);
        assert_int_equal(fr.dumps[r].n, 0); /* heads only */
        assert_int_equal(fr.counts[r], whole.counts[r]);
        assert_int_equal(fr.dumps[r].npgs, whole.dumps[r].npgs);
    }
    assert_true(nkeep > 0);
    /* 3. the reference (rank 0, process 0's) to every process; each fits
     * and trims its own */
    mt_buf_t ref = {0}, trimmed = {0};
    assert_int_equal(mt_fr_dump_pack_append(&mine[0][0].d, &ref), MT_OK);
    int pairs = 0;
    for (int p = 0; p < 2; p++)
        assert_int_equal(mt_fr_fit_trim_pack(mine[p], n_mine[p], (const uint8_t *)ref.data, ref.len, 0, keep, nkeep,
                                             &trimmed, &pairs),
                         0);
    assert_int_equal(pairs, whole.hang.fit_pairs);
    mt_error_clear(&err);
    assert_int_equal(mt_fr_job_take_trimmed(&fr, (const uint8_t *)trimmed.data, trimmed.len, pairs, &err), MT_OK);
    for (int r = 0; r < 4; r++)
        assert_true(fr.dumps[r].n <= fr.counts[r]);
    check_truth(&fr.hang);
    same_verdict(&fr.hang, &whole.hang);

    /* a cut part is no verdict */
    mt_fr_job_t cut = {0};
    mt_fr_pg_seq_t *keep2 = NULL;
    size_t nkeep2 = 0;
    assert_false(mt_fr_heads_unpack((const uint8_t *)all.data, all.len - 5, 4, &cut, &keep2, &nkeep2));
    mt_fr_job_free(&cut);
    free(keep2);

    free(keep);
    mt_buf_free(&all);
    mt_buf_free(&ref);
    mt_buf_free(&trimmed);
    mt_buf_free(&packed);
    mt_fr_job_free(&fr);
    mt_fr_job_free(&whole);
    for (int p = 0; p < 2; p++)
        mt_fr_locals_free(mine[p], n_mine[p]);
    mt_buf_free(&list);
    mt_discover_free(&l);
}

/* A dump that cannot be read: its index in the list and the message; the
 * process's other dumps are not read. */
static void test_read_error(void **state)
{
    (void)state;
    mt_buf_t list = {0};
    assert_int_equal(mt_fr_share_put(&list, 0, 0, SKIP_DIR "0"), MT_OK);
    assert_int_equal(mt_fr_share_put(&list, 2, 1, MT_SOURCE_DIR "/tests/data/fr-trunc/comm_lib_trace_rank_2"), MT_OK);
    assert_int_equal(mt_fr_share_put(&list, 3, 1, SKIP_DIR "3"), MT_OK);
    mt_fr_local_t *mine = NULL;
    size_t n = 9;
    long bad = -1;
    char msg[512] = "";
    mt_status_t st = MT_OK;
    mt_fr_share_read(list.data, list.len, 1, &mine, &n, &bad, msg, sizeof msg, &st);
    assert_int_equal(bad, 1);
    assert_int_not_equal(st, MT_OK);
    assert_int_equal(n, 0);
    assert_non_null(strstr(msg, "fr-trunc/comm_lib_trace_rank_2"));
    assert_non_null(strstr(msg, "rank 2"));
    mt_fr_locals_free(mine, n);
    /* process 0's share reads */
    bad = -1;
    mt_fr_share_read(list.data, list.len, 0, &mine, &n, &bad, msg, sizeof msg, &st);
    assert_int_equal(bad, -1);
    assert_int_equal(n, 1);
    assert_int_equal(mine[0].d.rank, 0);
    assert_string_equal(mine[0].path, SKIP_DIR "0");
    mt_fr_locals_free(mine, n);
    mt_buf_free(&list);
}

/* An NCCL plugin file of rank r of a two-rank communicator: AllReduce #0
 * and #1 done on both; rank 0 also started AllReduce #2, whose kernel
 * never stopped (the process was killed there: no exit line). */
static void plugin_file(const char *path, int r)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "{\"type\":\"process\",\"format\":\"mergetrace-nccl\",\"version\":1,\"host\":\"h\",\"pid\":%d,"
               "\"abi\":6,\"mask\":70}\n", 10 + r);
    fprintf(f, "{\"type\":\"clock\",\"realtime_ns\":1767189312000000000,\"monotonic_ns\":1000}\n");
    fprintf(f, "{\"type\":\"init\",\"comm\":\"00000000000000aa\",\"name\":\"world\",\"rank\":%d,\"nranks\":2,"
               "\"nNodes\":1,\"realtime_ns\":1767189312000000000,\"monotonic_ns\":1,\"tid\":10}\n", r);
    for (int k = 0; k < (r == 0 ? 3 : 2); k++) {
        long long host = 1767189312001000000LL + 1000000LL * k, gpu = 67189312001000000LL + 1000000LL * k;
        fprintf(f, "{\"type\":\"coll\",\"comm\":\"00000000000000aa\",\"rank\":%d,\"id\":%d,\"func\":\"AllReduce\","
                   "\"seq\":%d,\"count\":1024,\"datatype\":\"ncclFloat32\",\"root\":-1,\"algo\":\"RING\","
                   "\"proto\":\"LL128\",\"nChannels\":1,\"nWarps\":16,\"host_start_ns\":%lld,\"host_stop_ns\":%lld,"
                   "\"tid\":10}\n", r, k + 1, k, host, host + 4000);
        if (k < 2)
            fprintf(f, "{\"type\":\"kch\",\"comm\":\"00000000000000aa\",\"rank\":%d,\"parent\":%d,"
                       "\"parent_type\":\"coll\",\"func\":\"AllReduce\",\"seq\":%d,\"channel\":0,\"gpu_start_ns\":%lld,"
                       "\"gpu_start_seen_ns\":%lld,\"gpu_stop_ns\":%lld,\"gpu_stop_seen_ns\":%lld,\"tid\":11}\n",
                    r, k + 1, k, gpu, host + 17000, gpu + 300000, host + 319000);
        else
            fprintf(f, "{\"type\":\"open\",\"of\":\"kch\",\"comm\":\"00000000000000aa\",\"rank\":%d,\"parent\":%d,"
                       "\"parent_type\":\"coll\",\"func\":\"AllReduce\",\"seq\":%d,\"channel\":0,\"gpu_start_ns\":%lld,"
                       "\"gpu_start_seen_ns\":%lld,\"tid\":11}\n", r, k + 1, k, gpu, host + 17000);
    }
    fclose(f);
}

/* The NCCL plugin's files of a job that hung made into dumps and analysed
 * (mt_discover_fr_from_nccl): rank 1 never enqueued the AllReduce rank 0
 * is stuck in; nothing without a task in flight; a file gone, said with
 * its path and rank. */
static void test_from_nccl(void **state)
{
    (void)state;
    char dir[512], p0[600], p1[600];
    assert_int_equal(tu_tmpdir(dir, sizeof dir, "fr_nccl"), 0);
    snprintf(p0, sizeof p0, "%s/h-pid10.jsonl", dir);
    snprintf(p1, sizeof p1, "%s/h-pid11.jsonl", dir);
    plugin_file(p0, 0);
    plugin_file(p1, 1);
    mt_discover_file_t files[2] = {{.path = p0, .bytes = 100, .part = -1}, {.path = p1, .bytes = 200, .part = -1}};
    mt_discover_list_t l = {.files = files, .n = 2, .cap = 2};
    mt_nccl_rank_t r[2] = {{.rank = 0, .file_index = 0, .path = p0, .info = {.is_nccl = MT_NCCL_FMT_PLUGIN}},
                           {.rank = 1, .file_index = 1, .path = p1, .info = {.is_nccl = MT_NCCL_FMT_PLUGIN}}};
    mt_nccl_job_t nj = {.r = r, .n = 2};
    mt_fr_job_t fr;
    char msg[1400];
    /* no task in flight: nothing to do */
    assert_int_equal(mt_discover_fr_from_nccl(&l, &nj, "", &fr, msg, sizeof msg), MT_OK);
    assert_false(fr.any);
    assert_int_equal(fr.n, 0);
    /* rank 0's file ends inside AllReduce #2 */
    r[0].info.in_flight = 1;
    assert_int_equal(mt_discover_fr_from_nccl(&l, &nj, "", &fr, msg, sizeof msg), MT_OK);
    assert_true(fr.any && fr.from_nccl && fr.hung);
    assert_int_equal(fr.n, 2);
    assert_ptr_equal(fr.paths[0], p0);
    assert_ptr_equal(fr.paths[1], p1);
    assert_int_equal(fr.bytes[1], 200);
    assert_int_equal(fr.counts[0], 3); /* one entry per collective task */
    assert_int_equal(fr.counts[1], 2);
    assert_int_equal(fr.hang.kind, MT_FR_NEVER_ENQUEUED);
    assert_int_equal(fr.hang.nculprits, 1);
    assert_int_equal(fr.hang.culprits[0], 1);
    mt_fr_job_free(&fr);
    /* a file gone since: its path and rank, nothing kept */
    remove(p1);
    assert_int_not_equal(mt_discover_fr_from_nccl(&l, &nj, "", &fr, msg, sizeof msg), MT_OK);
    char want[1400];
    snprintf(want, sizeof want, "%s: rank 1: read again for the hang analysis: ", p1);
    assert_memory_equal(msg, want, strlen(want));
    assert_null(fr.dumps);
    assert_int_equal(mt_discover_fr_from_nccl(&l, &nj, "--baseline: ", &fr, msg, sizeof msg), MT_ERR_IO);
    snprintf(want, sizeof want, "--baseline: %s: rank 1: ", p1);
    assert_memory_equal(msg, want, strlen(want));
    assert_int_equal(tu_tmpdir_remove(dir), 0);
}

/* A dump of rank 1 with group "0"'s collectives seq 1..n completed at
 * done[i] (created and started 1 ms before), and seq n + 1 started at
 * done[n - 1] + 1 ms, not completed. */
static void place_dump(mt_fr_dump_t *d, const int64_t *done, size_t n)
{
    memset(d, 0, sizeof *d);
    d->rank = 1;
    d->entries = calloc(n + 1, sizeof *d->entries);
    assert_non_null(d->entries);
    uint32_t pg, name;
    assert_int_equal(mt_fr_intern(d, "0", 1, 64, &pg), MT_OK);
    assert_int_equal(mt_fr_intern(d, "nccl:all_reduce", 15, 64, &name), MT_OK);
    for (size_t i = 0; i <= n; i++) {
        int64_t end = i < n ? done[i] : MT_FR_NONE, start = i < n ? done[i] - 1000000 : done[n - 1] + 1000000;
        d->entries[i] = (mt_fr_entry_t){.record_id = i, .seq = (int64_t)i + 1, .created = start, .started = start,
                                        .completed = end, .pg = pg, .name = name,
                                        .state = i < n ? MT_FR_COMPLETED : MT_FR_STARTED};
    }
    d->n = n + 1;
}

static void test_place(void **state)
{
    (void)state;
    const int64_t T = INT64_C(1767189312000000000);
    /* completions discovered 1010 + {40, 0, 190, 20} ns after the kernels'
     * ends: shift 1010 (the least), lag median 40 (of 0, 20, 40, 190) */
    const int64_t end[4] = {T, T + 5000000, T + 9000000, T + 13000000};
    const int64_t done[4] = {end[0] + 1050, end[1] + 1010, end[2] + 1200, end[3] + 1030};
    mt_fr_dump_t d;
    place_dump(&d, done, 4);
    mt_strtab_t *labels = mt_strtab_create();
    assert_non_null(labels);
    uint32_t g0, g1;
    assert_int_equal(mt_strtab_intern(labels, "0 (default_pg)", 14, &g0), MT_OK);
    assert_int_equal(mt_strtab_intern(labels, "1 (tp)", 6, &g1), MT_OK);
    /* the trace: seq 1..4 of group 0; seq 2 of group 1 (another group:
     * no pair); seq 3 once more, 5 s earlier (before a restart: its pair
     * lies 5 s from the median, left aside); ranks 0 and 2's collectives of
     * the same numbers, 3 ms and 7 us off, must not pair with rank 1's dump */
    mt_cinst_t rows[8] = {
        {.rank = 2, .seq = 1, .end_ns = end[0] - 7000, .pg_id = g0, .flags = MT_CI_SEQ},
        {.rank = 0, .seq = 2, .end_ns = end[1] - 3000000, .pg_id = g0, .flags = MT_CI_SEQ},
        {.rank = 1, .seq = 1, .end_ns = end[0], .pg_id = g0, .flags = MT_CI_SEQ},
        {.rank = 1, .seq = 2, .end_ns = end[1], .pg_id = g0, .flags = MT_CI_SEQ},
        {.rank = 1, .seq = 2, .end_ns = end[1] - 777, .pg_id = g1, .flags = MT_CI_SEQ},
        {.rank = 1, .seq = 3, .end_ns = end[2] - 5000000000, .pg_id = g0, .flags = MT_CI_SEQ},
        {.rank = 1, .seq = 3, .end_ns = end[2], .pg_id = g0, .flags = MT_CI_SEQ},
        {.rank = 1, .seq = 4, .end_ns = end[3], .pg_id = g0, .flags = MT_CI_SEQ},
    };
    mt_fr_tcoll_t *tc = NULL;
    size_t ntc = 0;
    assert_int_equal(mt_fr_tcolls_take(rows, 8, &tc, &ntc), MT_OK);
    assert_int_equal(ntc, 8);
    mt_fr_place_t p;
    assert_int_equal(mt_fr_place_fit(&d, tc, ntc, labels, end[0] - 1000000, end[3], &p), MT_OK);
    assert_true(p.placed && p.aligned);
    assert_int_equal(p.shift_ns, 1010);
    assert_int_equal(p.pairs, 4);
    assert_int_equal(p.rejected, 1);
    assert_int_equal(p.lag_p50_ns, 40);

    /* the merged part: the slices at t - 1010 through the clock (+ 2 us) */
    mt_clock_t clk = {.rank = 1, .offset_ns = 2000, .anchor_ns = end[0]};
    mt_buf_t b = {0};
    uint64_t ev = 0;
    assert_int_equal(mt_fr_trace_rank_merged(&d, &p, &clk, done[3] + INT64_C(600000000000), mt_buf_write, &b, &ev), MT_OK);
    assert_int_equal(ev, 5 + 3); /* 5 slices, process name and sort index, a track of "(group not in pg_config)" */
    assert_int_equal(mt_buf_append(&b, "", 1), MT_OK);
    /* pid (1 + 1) * 4096 + 4095 = 12287; the first slice starts at
     * done[0] - 1 ms - 1010 + 2000 ns */
    char want[160];
    snprintf(want, sizeof want, "{\"ph\":\"X\",\"pid\":12287,\"tid\":0,\"ts\":%lld.%03lld,\"dur\":1000.000,",
             (long long)((done[0] - 1000000 - 1010 + 2000) / 1000), (long long)((done[0] - 1000000 - 1010 + 2000) % 1000));
    assert_non_null(strstr(b.data, want));
    assert_non_null(strstr(b.data, "\"name\":\"rank 1 Flight Recorder\""));
    /* the stuck one ends at the dump's time: 600 s - 1 ms after its start */
    assert_non_null(strstr(b.data, "\"dur\":599999000.000,\"name\":\"nccl:all_reduce #5\""));
    mt_buf_free(&b);

    /* no pair: on the wall clock within a day of the trace, else left out */
    assert_int_equal(mt_fr_place_fit(&d, NULL, 0, labels, end[0] - 3000000000, end[0] - 2000000000, &p), MT_OK);
    assert_true(p.placed && !p.aligned);
    assert_int_equal(p.shift_ns, 0);
    assert_int_equal(p.gap_ns, done[0] - 1000000 - (end[0] - 2000000000));
    assert_int_equal(mt_fr_place_fit(&d, NULL, 0, labels, end[0] - 3 * MT_FR_PLACE_SAME_NS, end[0] - 2 * MT_FR_PLACE_SAME_NS, &p),
                     MT_OK);
    assert_false(p.placed);
    b = (mt_buf_t){0};
    assert_int_equal(mt_fr_trace_rank_merged(&d, &p, NULL, MT_FR_NONE, mt_buf_write, &b, &ev), MT_OK);
    assert_int_equal(b.len, 0);
    assert_int_equal(ev, 0);
    free(tc);
    mt_strtab_free(labels);
    mt_fr_dump_free(&d);

    /* the terminal's line for the counts of a job's placed dumps */
    mt_fr_placed_t pl = {.aligned = 3, .wall = 1, .left_out = 2, .no_trace = 1, .pairs_min = 12,
                         .lag_max_ns = 135000, .gap_max_ns = 2000000000, .written = true};
    b = (mt_buf_t){0};
    assert_int_equal(mt_fr_placed_write_text(&pl, mt_buf_write, &b), MT_OK);
    assert_int_equal(mt_buf_append(&b, "", 1), MT_OK);
    assert_string_equal(b.data,
                        "merged trace: Flight Recorder entries of 3 dumps beside the traces (aligned by 12+ "
                        "collectives each; completions discovered 0.135 ms after the kernels' end at the median, at "
                        "most); 1 dump with no collective in common with its trace placed on its wall clock, "
                        "unaligned (shift 0; at most 2.000 s from the trace); 2 left out (no collective in common, "
                        "and a day or more from their trace: not their clock); 1 dump of a rank not in the merged trace, "
                        "left out\n");
    mt_buf_free(&b);
    pl.written = false; /* no merged trace: no line */
    b = (mt_buf_t){0};
    assert_int_equal(mt_fr_placed_write_text(&pl, mt_buf_write, &b), MT_OK);
    assert_int_equal(b.len, 0);
}

/* The parts of the merged trace on one process (mt_fr_parts_build): the
 * merged ranks 0, 1, 3 and 5 of the skip scenario's dumps, 3 left out by
 * the analysis (--force), 5 without a dump; rank 0's trace holds its
 * dump's completed collectives ended 5000 ns before their completions,
 * every other one 300 ns earlier still (shift 5000, median lag 300), rank
 * 1's trace ends 2 s before its dump's first time (on its wall clock, gap
 * 2 s); then the tally, and the job's counts with another process's
 * tally of rank 2's dump left out. */
static void test_parts(void **state)
{
    (void)state;
    mt_buf_t list = {0};
    for (int r = 0; r < 4; r++) {
        char path[512];
        snprintf(path, sizeof path, SKIP_DIR "%d", r);
        assert_int_equal(mt_fr_share_put(&list, r, r % 2, path), MT_OK);
    }
    mt_error_t err;
    mt_error_clear(&err);
    mt_fr_dump_t d0, d1;
    bool found = false;
    assert_int_equal(mt_fr_share_read_rank(list.data, list.len, 0, &d0, &found, &err), MT_OK);
    assert_true(found);
    assert_int_equal(mt_fr_share_read_rank(list.data, list.len, 1, &d1, &found, &err), MT_OK);
    assert_true(found);
    /* rank 0's trace: its dump's completed collectives */
    mt_strtab_t *labels = mt_strtab_create();
    assert_non_null(labels);
    mt_cinst_t *rows = calloc(d0.n, sizeof *rows);
    assert_non_null(rows);
    size_t nr = 0;
    for (size_t i = 0; i < d0.n; i++) {
        const mt_fr_entry_t *e = &d0.entries[i];
        if (e->is_p2p || e->completed == MT_FR_NONE)
            continue;
        size_t len;
        const char *name = mt_strtab_get(d0.strs, e->pg, &len);
        uint32_t id;
        assert_int_equal(mt_strtab_intern(labels, name, len, &id), MT_OK);
        rows[nr] = (mt_cinst_t){.rank = 0, .seq = e->seq, .end_ns = e->completed - 5000 - (nr % 2 ? 0 : 300),
                                .pg_id = id, .flags = MT_CI_SEQ};
        nr++;
    }
    assert_true(nr >= 2);
    mt_fr_tcoll_t *tc = NULL;
    size_t ntc = 0;
    assert_int_equal(mt_fr_tcolls_take(rows, nr, &tc, &ntc), MT_OK);
    /* rank 1's first time */
    int64_t lo1 = INT64_MAX;
    for (size_t i = 0; i < d1.n; i++) {
        const int64_t t3[3] = {d1.entries[i].created, d1.entries[i].started, d1.entries[i].completed};
        for (int k = 0; k < 3; k++)
            if (t3[k] != MT_FR_NONE && t3[k] < lo1)
                lo1 = t3[k];
    }
    const int64_t D = INT64_C(1767189312000000000);
    const int64_t off[2] = {100, MT_FR_NONE};
    const int32_t kept[3] = {0, 1, 2};
    mt_fr_parts_in_t in = {.plan = list.data, .plan_len = list.len, .kept = kept, .n_kept = 3, .tcolls = tc,
                           .ntcolls = ntc, .labels = labels, .offset_ns = off, .world = 2, .dump_ns = D};
    const mt_fr_span_t spans[4] = {{.rank = 0, .first_ns = rows[0].end_ns - 1000, .last_ns = rows[nr - 1].end_ns},
                                   {.rank = 1, .first_ns = lo1 - 10000000000, .last_ns = lo1 - 2000000000},
                                   {.rank = 3, .first_ns = 1, .last_ns = 2},
                                   {.rank = 5, .first_ns = 1, .last_ns = 2}};
    mt_fr_part_t *parts = NULL;
    size_t np = 9;
    assert_int_equal(mt_fr_parts_build(&in, spans, 4, &parts, &np, &err), MT_OK);
    assert_int_equal(np, 2);
    assert_int_equal(parts[0].d.rank, 0);
    assert_int_equal(parts[0].input, 0);
    assert_true(parts[0].p.aligned);
    assert_int_equal(parts[0].p.shift_ns, 5000);
    assert_int_equal(parts[0].p.pairs, (int)nr);
    assert_int_equal(parts[0].p.lag_p50_ns, 300);
    assert_int_equal(parts[0].end_ns, D + 100); /* the reference's time plus rank 0's offset */
    assert_int_equal(parts[1].d.rank, 1);
    assert_int_equal(parts[1].input, 1);
    assert_true(parts[1].p.placed && !parts[1].p.aligned);
    assert_int_equal(parts[1].p.gap_ns, 2000000000);
    assert_int_equal(parts[1].end_ns, MT_FR_NONE); /* no offset: not fitted */
    assert_int_equal(parts[1].d.n, d1.n);

    mt_fr_tally_t t;
    mt_fr_parts_tally(parts, np, &t);
    assert_int_equal(t.aligned, 1);
    assert_int_equal(t.wall, 1);
    assert_int_equal(t.left_out, 0);
    assert_int_equal(t.parts, 2);
    assert_int_equal(t.pairs_min, (int64_t)nr);
    assert_int_equal(t.lag_max_ns, 300);
    assert_int_equal(t.gap_max_ns, 2000000000);
    /* another process: rank 2's dump, its trace two days before it (left out) */
    const mt_fr_span_t s2 = {.rank = 2, .first_ns = 1, .last_ns = 2};
    mt_fr_part_t *p2 = NULL;
    size_t n2 = 0;
    assert_int_equal(mt_fr_parts_build(&in, &s2, 1, &p2, &n2, &err), MT_OK);
    assert_int_equal(n2, 1);
    assert_false(p2[0].p.placed);
    mt_fr_tally_t t2;
    mt_fr_parts_tally(p2, n2, &t2);
    assert_int_equal(t2.pairs_min, INT64_MAX); /* none aligned */
    /* reduced as the program does: sums, min, max */
    mt_fr_tally_t all = {.aligned = t.aligned + t2.aligned,
                         .wall = t.wall + t2.wall,
                         .left_out = t.left_out + t2.left_out,
                         .parts = t.parts + t2.parts,
                         .pairs_min = t.pairs_min < t2.pairs_min ? t.pairs_min : t2.pairs_min,
                         .lag_max_ns = t.lag_max_ns > t2.lag_max_ns ? t.lag_max_ns : t2.lag_max_ns,
                         .gap_max_ns = t.gap_max_ns > t2.gap_max_ns ? t.gap_max_ns : t2.gap_max_ns};
    mt_fr_placed_t pl;
    mt_fr_placed_from(&all, 4, true, &pl); /* 4 dumps kept: rank 3's has no trace merged */
    assert_int_equal(pl.aligned, 1);
    assert_int_equal(pl.wall, 1);
    assert_int_equal(pl.left_out, 1);
    assert_int_equal(pl.no_trace, 1);
    assert_int_equal(pl.pairs_min, (int64_t)nr);
    assert_int_equal(pl.lag_max_ns, 300);
    assert_int_equal(pl.gap_max_ns, 2000000000);
    assert_true(pl.written);
    mt_fr_placed_from(&t2, 1, false, &pl);
    assert_int_equal(pl.pairs_min, 0); /* none aligned: 0 */

    /* a dump that cannot be read again: its status and nothing kept */
    mt_buf_t bad = {0};
    assert_int_equal(mt_fr_share_put(&bad, 0, 0, SKIP_DIR "0"), MT_OK);
    assert_int_equal(mt_fr_share_put(&bad, 2, 0, MT_SOURCE_DIR "/tests/data/fr-trunc/comm_lib_trace_rank_2"), MT_OK);
    in.plan = bad.data;
    in.plan_len = bad.len;
    mt_fr_part_t *p3 = (mt_fr_part_t *)&bad;
    size_t n3 = 9;
    mt_error_clear(&err);
    const mt_fr_span_t s02[2] = {{.rank = 0}, {.rank = 2}};
    assert_int_not_equal(mt_fr_parts_build(&in, s02, 2, &p3, &n3, &err), MT_OK);
    assert_null(p3);
    assert_int_equal(n3, 0);
    assert_int_equal(err.rank, 2);

    mt_buf_free(&bad);
    mt_fr_parts_free(p2, n2);
    mt_fr_parts_free(parts, np);
    mt_fr_parts_free(NULL, 0);
    free(tc);
    free(rows);
    mt_strtab_free(labels);
    mt_fr_dump_free(&d0);
    mt_fr_dump_free(&d1);
    mt_buf_free(&list);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plan),
        cmocka_unit_test(test_at_scale),
        cmocka_unit_test(test_read_error),
        cmocka_unit_test(test_from_nccl),
        cmocka_unit_test(test_place),
        cmocka_unit_test(test_parts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
