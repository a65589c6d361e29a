/* Loading one process's share of the inputs without MPI (ingest.h): two
 * small traces of tests/data/own (rank, summary, rows, GPU activities,
 * the merged write's facts, the heap trim per file), a directory's JSON
 * that is no trace left out and its unranked trace taken as rank 0 for
 * now, the same trace named alone, the files of two NCCL example
 * profiler communicators (the smaller one's left out), a stop asked
 * for by another process; the gathered results ordered, the unranked
 * trace found, NCCL files joined to their rank's trace; what
 * report.json lists of the inputs, the files left out and the NCCL files;
 * the gathered analyses placed by rank; the traces as the trust checks
 * and the selection see them; what a process writes into the merged
 * trace. Numbers counted by hand in the fixtures. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mergetrace/mergetrace.h"
#include "test_util.h"

#define DATA MT_SAMPLES_DIR "/../tests/data"

static uint64_t freed_bytes[8];
static size_t n_freed;

static void on_freed(uint64_t json_bytes)
{
    if (n_freed < 8)
        freed_bytes[n_freed] = json_bytes;
    n_freed++;
}

/* A list of n paths, all owned by process 0. */
static void list_of(mt_discover_list_t *l, mt_discover_file_t *f, char **paths, size_t n, bool from_dir)
{
    memset(l, 0, sizeof *l);
    for (size_t i = 0; i < n; i++)
        f[i] = (mt_discover_file_t){.path = paths[i], .bytes = 1, .owner = 0, .from_dir = from_dir, .part = -1};
    l->files = f;
    l->n = n;
}

static void init(mt_ingest_t *L, const mt_discover_list_t *l)
{
    mt_analysis_opts_t ao;
    mt_analysis_opts_init(&ao);
    assert_int_equal(mt_ingest_init(L, l, 0, &ao), MT_OK);
}

static void test_traces(void **state)
{
    (void)state;
    char *paths[] = {DATA "/own/rank-0.json", DATA "/own/rank-1.json"};
    mt_discover_file_t f[2];
    mt_discover_list_t l;
    list_of(&l, f, paths, 2, false);
    mt_ingest_t L;
    init(&L, &l);
    assert_int_equal(L.n_owned, 2);
    n_freed = 0;
    mt_ingest_opts_t io = {.merge = true, .trace_freed = on_freed};
    for (int32_t i = 0; i < 2; i++) {
        const mt_ingest_result_t *r = mt_ingest_one(&L, &io, &f[i], i);
        assert_ptr_equal(r, &L.res[i]);
        assert_int_equal(r->status, MT_OK);
        assert_int_equal(r->index, i);
        assert_int_equal(r->rank, i); /* distributedInfo.rank */
        assert_int_equal(r->rank_source, MT_RANK_FROM_TRACE);
        assert_int_equal(r->skipped, 0);
        /* five X events: a CPU op, a launch, two kernels and a memcpy */
        assert_int_equal(r->sum.events, 5);
        assert_int_equal(r->sum.world_size, 2);
        assert_int_equal(r->sum.bytes_json, 1084);
        assert_int_equal(r->n_rows, 1);  /* the AllReduce kernel */
        assert_int_equal(r->n_gacts, 3); /* two kernels and the memcpy */
        assert_int_equal(r->n_steps, 0);
        assert_non_null(L.facts[i]);
    }
    assert_int_equal(L.n_res, 2);
    assert_int_equal(L.n_rows, 2);
    assert_int_equal(L.largest, 1084);
    assert_true(L.analyses.len > 0);
    assert_int_equal(n_freed, 2); /* once per file, the JSON bytes */
    assert_int_equal(freed_bytes[0], 1084);
    assert_int_equal(freed_bytes[1], 1084);
    mt_ingest_free(&L);
    assert_null(L.res);

    /* not merging: no facts */
    init(&L, &l);
    io.merge = false;
    mt_ingest_one(&L, &io, &f[0], 0);
    assert_null(L.facts[0]);
    mt_ingest_free(&L);
}

static void test_directory(void **state)
{
    (void)state;
    char *paths[] = {DATA "/norank-config/config.json", DATA "/norank-config/train.json"};
    mt_discover_file_t f[2];
    mt_discover_list_t l;
    list_of(&l, f, paths, 2, true);
    mt_ingest_t L;
    init(&L, &l);
    mt_ingest_opts_t io = {0};
    const mt_ingest_result_t *r = mt_ingest_one(&L, &io, &f[0], 0);
    assert_int_equal(r->status, MT_OK);
    assert_int_equal(r->skipped, 1);
    assert_string_equal(r->message, "valid JSON but no \"traceEvents\" array");
    r = mt_ingest_one(&L, &io, &f[1], 1);
    assert_int_equal(r->status, MT_OK);
    assert_int_equal(r->skipped, 0);
    assert_int_equal(r->rank, 0);
    assert_int_equal(r->rank_source, MT_RANK_FROM_DEFAULT);
    assert_int_equal(r->rank_tentative, 1); /* the program decides once every file is read */
    assert_true(strlen(r->message) > 0);
    mt_ingest_free(&L);

    /* the same trace named alone: rank 0, nothing tentative */
    list_of(&l, f, paths + 1, 1, false);
    init(&L, &l);
    io.only_file = true;
    r = mt_ingest_one(&L, &io, &f[0], 0);
    assert_int_equal(r->status, MT_OK);
    assert_int_equal(r->rank, 0);
    assert_int_equal(r->rank_source, MT_RANK_FROM_DEFAULT);
    assert_int_equal(r->rank_tentative, 0);
    assert_string_equal(r->message, "");
    mt_ingest_free(&L);

    /* named among others: no rank is an error */
    list_of(&l, f, paths + 1, 1, false);
    init(&L, &l);
    io.only_file = false;
    r = mt_ingest_one(&L, &io, &f[0], 0);
    assert_int_equal(r->status, MT_ERR_NO_RANK);
    assert_true(strstr(r->message, "train.json") != NULL);
    mt_ingest_free(&L);
}

static void test_nccl_example(void **state)
{
    (void)state;
    char *paths[] = {
        DATA "/nccl-example/nccl_profile_12715772615376301750_0.json",
        DATA "/nccl-example/nccl_profile_12715772615376301750_1.json",
        DATA "/nccl-example/nccl_profile_12715772615376301750_2.json",
        DATA "/nccl-example/nccl_profile_4432120985773260157_0.json",
        DATA "/nccl-example/nccl_profile_4432120985773260157_1.json",
    };
    mt_discover_file_t f[5];
    mt_discover_list_t l;
    list_of(&l, f, paths, 5, true);
    mt_ingest_t L;
    init(&L, &l);
    /* the job's communicator: the one with the most files */
    assert_true(L.xw.hash == 12715772615376301750ULL);
    assert_int_equal(L.xw.files, 3);
    mt_ingest_opts_t io = {0};
    for (int32_t i = 0; i < 5; i++) {
        const mt_ingest_result_t *r = mt_ingest_one(&L, &io, &f[i], i);
        assert_int_equal(r->status, MT_OK);
        if (i < 3) {
            assert_int_equal(r->skipped, 0);
            assert_int_equal(r->rank, i);
            assert_int_equal(r->rank_source, MT_RANK_FROM_NCCL);
            assert_int_equal(r->sum.world_size, 3);
        } else {
            assert_int_equal(r->skipped, 1);
            const char *want = "NCCL example profiler file of communicator 4432120985773260157, not the job's "
                               "12715772615376301750 (3 files): its ";
            assert_memory_equal(r->message, want, strlen(want));
        }
    }
    mt_ingest_free(&L);
}

/* A gathered result: a trace (or an NCCL file) of rank at input index. */
static mt_ingest_result_t res_of(int32_t index, int64_t rank, bool nccl, bool skipped)
{
    mt_ingest_result_t r;
    memset(&r, 0, sizeof r);
    r.index = index;
    r.rank = rank;
    r.skipped = skipped;
    r.nccl.is_nccl = nccl;
    r.sum.host_pid = 100 + rank;
    r.sum.world_size = 4;
    return r;
}

static void test_sort(void **state)
{
    (void)state;
    /* as two processes' results arrive: out of order, skipped among them */
    mt_ingest_result_t res[] = {
        res_of(5, 2, false, false), res_of(4, -1, false, true), res_of(0, 1, false, false),
        res_of(1, -1, false, true), res_of(3, 0, false, false), res_of(2, 1, false, false),
    };
    /* none failed; then two, the lower input index reported */
    assert_null(mt_ingest_first_failed(res, 6));
    res[0].status = MT_ERR_FORMAT; /* index 5 */
    res[4].status = MT_ERR_IO;     /* index 3 */
    assert_ptr_equal(mt_ingest_first_failed(res, 6), &res[4]);
    /* its line: the message, with the owner under --local */
    snprintf(res[4].message, sizeof res[4].message, "c.json: not JSON");
    mt_discover_file_t f[6] = {{.path = "a"}, {.path = "b"}, {.path = "x"}, {.path = "c.json", .owner = 3}};
    mt_discover_list_t l = {.files = f, .n = 6};
    char msg[1400];
    assert_int_equal(mt_ingest_failure_text(res, 6, &l, false, "", msg, sizeof msg), MT_ERR_IO);
    assert_string_equal(msg, "c.json: not JSON");
    assert_int_equal(mt_ingest_failure_text(res, 6, &l, true, "--baseline: ", msg, sizeof msg), MT_ERR_IO);
    assert_string_equal(msg, "--baseline: --local: process 3: c.json: not JSON");
    assert_int_equal(mt_ingest_failure_text(res, 3, &l, false, "--baseline: ", msg, sizeof msg), MT_ERR_FORMAT);
    assert_int_equal(mt_ingest_failure_text(res + 1, 2, &l, false, "", msg, sizeof msg), MT_ERR_NOMEM);
    assert_string_equal(msg, "out of memory");
    res[0].status = res[4].status = MT_OK;
    assert_int_equal(mt_ingest_sort(res, 6), 4);
    const int32_t want_index[] = {3, 0, 2, 5, 1, 4}; /* by rank then index; the skipped by index */
    const int64_t want_rank[] = {0, 1, 1, 2};
    for (size_t i = 0; i < 6; i++)
        assert_int_equal(res[i].index, want_index[i]);
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(res[i].rank, want_rank[i]);

    /* the unranked trace of the lowest index, only in a job of two or more */
    res[1].rank_tentative = 1; /* index 0 */
    res[3].rank_tentative = 1; /* index 5 */
    assert_ptr_equal(mt_ingest_unranked(res, 4), &res[1]);
    assert_null(mt_ingest_unranked(res + 3, 1));
    res[1].rank_tentative = 0;
    assert_ptr_equal(mt_ingest_unranked(res, 4), &res[3]);
}

static void test_nccl_join(void **state)
{
    (void)state;
    char *paths[] = {"k0", "n0", "n1", "k2", "n3a", "n3b"};
    mt_discover_file_t f[6];
    mt_discover_list_t l;
    list_of(&l, f, paths, 6, false);
    /* rank 0: a trace and its NCCL file (joined); rank 1: an NCCL file
     * alone (stays, NCCL only); rank 2: a trace; rank 3: two NCCL files
     * (both stay for the duplicate check, neither joins) */
    mt_ingest_result_t res[] = {
        res_of(0, 0, false, false), res_of(1, 0, true, false), res_of(2, 1, true, false),
        res_of(3, 2, false, false), res_of(4, 3, true, false), res_of(5, 3, true, false),
    };
    size_t n = 6;
    mt_nccl_job_t nj;
    memset(&nj, 0, sizeof nj);
    assert_int_equal(mt_ingest_nccl_join(&l, res, &n, &nj), MT_OK);
    assert_int_equal(n, 5);
    const int32_t want_index[] = {0, 2, 3, 4, 5};
    for (size_t i = 0; i < n; i++)
        assert_int_equal(res[i].index, want_index[i]);
    assert_int_equal(nj.n, 2); /* ranks 0 and 1: the only NCCL file of their rank */
    assert_int_equal(nj.n_only, 1); /* rank 1 */
    assert_string_equal(nj.source, "mixed");

    /* as report.json lists them */
    mt_report_nccl_t *rf = NULL;
    assert_int_equal(mt_report_nccl_files(&nj, &rf), MT_OK);
    assert_non_null(rf);
    assert_int_equal(rf[0].rank, 0);
    assert_string_equal(rf[0].path, "n0");
    assert_string_equal(rf[0].format, "plugin"); /* is_nccl 1 */
    assert_true(rf[0].with_kineto);
    assert_int_equal(rf[0].kineto_pid, 100); /* rank 0's trace's host pid */
    assert_false(rf[0].aligned_on_nccl);     /* mixed: the rank with a trace aligns on it */
    assert_int_equal(rf[1].rank, 1);
    assert_string_equal(rf[1].path, "n1");
    assert_false(rf[1].with_kineto);
    assert_true(rf[1].aligned_on_nccl);
    free(rf);
    mt_nccl_job_free(&nj);
    assert_int_equal(mt_report_nccl_files(&nj, &rf), MT_OK); /* none */
    assert_null(rf);
}

static void test_report_lists(void **state)
{
    (void)state;
    char *paths[] = {"t0", "conf.json", "t1", "nccl_x.json"};
    mt_discover_file_t f[4];
    mt_discover_list_t l;
    list_of(&l, f, paths, 4, true);
    char why[] = "a merged trace written by mergetrace", own[] = "merged.json.gz";
    mt_discover_skip_t sk = {.path = own, .why = why};
    l.skipped = &sk;
    l.n_skipped = 1;
    mt_ingest_result_t res[] = {
        res_of(2, 0, false, false), res_of(0, 1, true, false), /* traces by rank */
        res_of(1, -1, false, true), res_of(3, -1, false, true),  /* left out while loading */
    };
    res[0].sum.bytes_in = 10;
    res[0].sum.bytes_json = 20;
    res[0].sum.events = 5;
    res[0].rank_source = MT_RANK_FROM_FILENAME;
    snprintf(res[2].message, sizeof res[2].message, "not a trace");
    res[3].nccl.left_out = 1;
    mt_report_input_t *ri = NULL;
    mt_report_skip_t *rs = NULL;
    size_t n_rs = 0;
    assert_int_equal(mt_ingest_report_lists(&l, res, 2, res + 2, 2, &ri, &rs, &n_rs), MT_OK);
    assert_int_equal(ri[0].rank, 0);
    assert_string_equal(ri[0].path, "t1");
    assert_string_equal(ri[0].rank_source, mt_rank_source_str(MT_RANK_FROM_FILENAME));
    assert_int_equal(ri[0].bytes, 10);
    assert_int_equal(ri[0].json_bytes, 20);
    assert_int_equal(ri[0].events, 5);
    assert_ptr_equal(ri[0].summary, &res[0].sum);
    assert_false(ri[0].nccl_only);
    assert_string_equal(ri[1].path, "t0");
    assert_null(ri[1].summary); /* an NCCL file alone: no trace summary */
    assert_true(ri[1].nccl_only);
    assert_int_equal(n_rs, 3);
    assert_string_equal(rs[0].path, "conf.json");
    assert_string_equal(rs[0].reason, "not a trace");
    assert_int_equal(rs[0].kind, MT_REPORT_SKIP_NOT_TRACE);
    assert_string_equal(rs[1].path, "nccl_x.json");
    assert_int_equal(rs[1].kind, MT_REPORT_SKIP_LEFT_OUT);
    assert_string_equal(rs[2].path, "merged.json.gz");
    assert_string_equal(rs[2].reason, why);
    assert_int_equal(rs[2].kind, MT_REPORT_SKIP_INPUT);
    assert_null(rs[2].first);
    free(ri);
    free(rs);
}

/* The analyses of tests/data/own's two traces, packed while loading,
 * placed by rank on process 0. */
static void test_analyses(void **state)
{
    (void)state;
    char *paths[] = {DATA "/own/rank-1.json", DATA "/own/rank-0.json"};
    mt_discover_file_t f[2];
    mt_discover_list_t l;
    list_of(&l, f, paths, 2, false);
    mt_ingest_t L;
    init(&L, &l);
    mt_ingest_opts_t io = {0};
    mt_ingest_one(&L, &io, &f[0], 0); /* rank 1 packed first */
    mt_ingest_one(&L, &io, &f[1], 1);
    /* the job: ranks 0, 1 and 3, rank 3 with NCCL data only */
    mt_ingest_result_t res[] = {res_of(1, 0, false, false), res_of(0, 1, false, false), res_of(2, 3, true, false)};
    mt_rank_analysis_t **an = NULL;
    size_t n_an = 0;
    assert_int_equal(mt_ingest_analyses(L.analyses.data, L.analyses.len, res, 3, 1, &an, &n_an), MT_OK);
    assert_int_equal(n_an, 2);
    assert_int_equal(an[0]->rank, 0);
    assert_int_equal(an[1]->rank, 1);
    assert_null(an[2]);
    for (size_t i = 0; i < 3; i++)
        mt_rank_analysis_free(an[i]);
    free(an);

    /* every rank expected to have one: rank 3 has none */
    assert_int_equal(mt_ingest_analyses(L.analyses.data, L.analyses.len, res, 3, 0, &an, &n_an), MT_ERR_FORMAT);
    for (size_t i = 0; i < 3; i++)
        mt_rank_analysis_free(an[i]);
    free(an);

    /* the bytes twice: a rank's second analysis dropped */
    mt_buf_t twice = {0};
    assert_int_equal(mt_buf_append(&twice, L.analyses.data, L.analyses.len), MT_OK);
    assert_int_equal(mt_buf_append(&twice, L.analyses.data, L.analyses.len), MT_OK);
    assert_int_equal(mt_ingest_analyses(twice.data, twice.len, res, 3, 1, &an, &n_an), MT_OK);
    assert_int_equal(n_an, 2);
    for (size_t i = 0; i < 3; i++)
        mt_rank_analysis_free(an[i]);
    free(an);

    /* cut short */
    assert_int_not_equal(mt_ingest_analyses(L.analyses.data, L.analyses.len - 1, res, 3, 1, &an, &n_an), MT_OK);
    for (size_t i = 0; i < 3; i++)
        mt_rank_analysis_free(an[i]);
    free(an);
    mt_buf_free(&twice);
    mt_ingest_free(&L);
}

/* The traces as the trust checks and the selection see them. */
static void test_views(void **state)
{
    (void)state;
    mt_ingest_result_t res[] = {res_of(0, 0, false, false), res_of(1, 1, true, false), res_of(2, 2, false, false)};
    res[0].sum.events = 5;
    res[0].sum.first_ns = 100000;
    res[0].sum.last_ns = 172000;
    res[1].sum.events = 7; /* an NCCL file: its span is no trace's window */
    res[1].sum.first_ns = 1;
    res[1].sum.last_ns = 2;
    res[2].sum.events = 0; /* no events: no window */
    res[2].sum.first_ns = 9;
    res[2].sum.last_ns = 9;
    mt_trust_trace_t *tt = mt_ingest_trust_traces(res, 3);
    assert_non_null(tt);
    assert_int_equal(tt[0].rank, 0);
    assert_int_equal(tt[0].world_size, 4);
    assert_int_equal(tt[0].first_ns, 100000);
    assert_int_equal(tt[0].last_ns, 172000);
    assert_false(tt[0].nccl);
    assert_int_equal(tt[1].world_size, -1); /* a communicator's size is no world size */
    assert_true(tt[1].nccl);
    assert_int_equal(tt[2].first_ns, 0);
    assert_int_equal(tt[2].last_ns, -1);
    free(tt);
    mt_clock_t clocks[3];
    memset(clocks, 0, sizeof clocks);
    mt_select_rank_t *r = mt_ingest_select_ranks(res, 3, clocks);
    assert_non_null(r);
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(r[i].rank, (int64_t)i);
        assert_ptr_equal(r[i].clock, &clocks[i]);
        assert_int_equal(r[i].first_ns, res[i].sum.first_ns);
        assert_int_equal(r[i].last_ns, res[i].sum.last_ns);
    }
    assert_int_equal(r[0].events, 5);
    assert_false(r[0].nccl);
    assert_true(r[1].nccl);
    free(r);
}

static bool stop_now(void *ctx)
{
    (*(int *)ctx)++;
    return true;
}

static void test_stop(void **state)
{
    (void)state;
    char *paths[] = {DATA "/own/rank-0.json"};
    mt_discover_file_t f[1];
    mt_discover_list_t l;
    list_of(&l, f, paths, 1, false);
    mt_ingest_t L;
    init(&L, &l);
    int asked = 0;
    mt_ingest_opts_t io = {.should_stop = stop_now, .should_stop_ctx = &asked};
    const mt_ingest_result_t *r = mt_ingest_one(&L, &io, &f[0], 0);
    assert_int_equal(r->status, MT_ERR_CANCELLED);
    assert_true(asked > 0);
    assert_int_equal(L.n_rows, 0);
    mt_ingest_free(&L);
}

/* What mt_ingest_share told: each callback's calls. */
typedef struct share_log {
    int32_t before[8];
    int n_before;
    int32_t failed;
    int n_failed;
    size_t done[8];
    uint64_t bytes[8];
    int n_progress;
    int32_t stop_at; /* stop_before says stop at this index (-1: never) */
} share_log_t;

static bool log_before(void *ctx, int32_t index)
{
    share_log_t *g = ctx;
    g->before[g->n_before++] = index;
    return index == g->stop_at;
}

static void log_failed(void *ctx, int32_t index)
{
    share_log_t *g = ctx;
    g->failed = index;
    g->n_failed++;
}

static void log_progress(void *ctx, size_t done, size_t owned, uint64_t bytes)
{
    share_log_t *g = ctx;
    assert_int_equal(owned, 2);
    g->done[g->n_progress] = done;
    g->bytes[g->n_progress++] = bytes;
}

/* A process's share (mt_ingest_share): of four inputs it owns 0 and 2
 * (1 and 3 are another's), each loaded in turn (1084 JSON bytes each),
 * progress after each; a failing file (no rank among several) stops the
 * share there, told once with its index; stop_before stops before a
 * file. */
static void test_share(void **state)
{
    (void)state;
    char *paths[] = {DATA "/own/rank-0.json", DATA "/norank-config/train.json", DATA "/own/rank-1.json",
                     DATA "/norank-config/train.json"};
    mt_discover_file_t f[4];
    mt_discover_list_t l;
    list_of(&l, f, paths, 4, false);
    f[1].owner = f[3].owner = 1;
    mt_ingest_t L;
    init(&L, &l);
    share_log_t g = {.stop_at = -1};
    mt_ingest_share_cb_t cb = {.stop_before = log_before, .failed = log_failed, .progress = log_progress, .ctx = &g};
    mt_ingest_opts_t io = {0};
    assert_int_equal(mt_ingest_share(&L, &io, &l, 0, &cb), MT_OK);
    assert_int_equal(L.n_res, 2);
    assert_int_equal(L.res[0].index, 0);
    assert_int_equal(L.res[1].index, 2);
    assert_int_equal(g.n_before, 2);
    assert_int_equal(g.before[1], 2);
    assert_int_equal(g.n_failed, 0);
    assert_int_equal(g.n_progress, 2);
    assert_int_equal(g.done[1], 2);
    assert_int_equal(g.bytes[0], 1084);
    assert_int_equal(g.bytes[1], 2168);
    mt_ingest_free(&L);

    /* process 1: its first file fails, the second is never loaded */
    g = (share_log_t){.stop_at = -1};
    l.files[0].owner = l.files[2].owner = 1;
    l.files[1].owner = l.files[3].owner = 0;
    init(&L, &l);
    assert_int_equal(mt_ingest_share(&L, &io, &l, 0, &cb), MT_ERR_NO_RANK);
    assert_int_equal(L.n_res, 1);
    assert_int_equal(L.res[0].status, MT_ERR_NO_RANK);
    assert_int_equal(g.n_failed, 1);
    assert_int_equal(g.failed, 1);
    assert_int_equal(g.n_before, 1);
    assert_int_equal(g.n_progress, 0);
    mt_ingest_free(&L);

    /* another process failed below input 2: stop before it */
    g = (share_log_t){.stop_at = 2};
    l.files[0].owner = l.files[2].owner = 0;
    l.files[1].owner = l.files[3].owner = 1;
    init(&L, &l);
    assert_int_equal(mt_ingest_share(&L, &io, &l, 0, &cb), MT_OK);
    assert_int_equal(L.n_res, 1);
    assert_int_equal(g.n_before, 2);
    assert_int_equal(g.n_progress, 1);
    mt_ingest_free(&L);
}

/* What a process writes into the merged trace (mt_ingest_merged_inputs):
 * five results laid out by hand, of which a skipped file, a failed one
 * and an NCCL file are left out; the two traces (ranks 2 and 3) keep
 * their paths and facts, rank 2 the clock fitted for it, rank 3 none
 * (no clock of its rank); --ranks 3,7 keeps rank 3 alone, --ranks 0,1,5
 * (the left-out files' ranks) nothing. */
static void test_merged_inputs(void **state)
{
    (void)state;
    mt_ingest_result_t res[5];
    memset(res, 0, sizeof res);
    static const int64_t rank[5] = {2, 0, 1, 5, 3};
    for (int i = 0; i < 5; i++) {
        res[i].index = i;
        res[i].rank = rank[i];
    }
    res[1].skipped = true;
    res[2].status = MT_ERR_FORMAT;
    res[3].nccl.is_nccl = 1;
    char facts[5]; /* stand-ins: only the pointers travel */
    mt_merge_facts_t *fp[5];
    for (int i = 0; i < 5; i++)
        fp[i] = (mt_merge_facts_t *)(void *)&facts[i];
    mt_ingest_t L;
    memset(&L, 0, sizeof L);
    L.res = res;
    L.n_res = 5;
    L.facts = fp;
    mt_discover_file_t f[5] = {{.path = "a"}, {.path = "b"}, {.path = "c"}, {.path = "d"}, {.path = "e"}};
    mt_discover_list_t files = {.files = f, .n = 5};
    mt_clock_t clocks[2] = {{.rank = 0, .offset_ns = 5}, {.rank = 2, .offset_ns = -1250, .drift_ppm = 3}};

    mt_merged_input_t *mi = NULL;
    size_t n = 99;
    assert_int_equal(mt_ingest_merged_inputs(&L, &files, NULL, 0, clocks, 2, &mi, &n), MT_OK);
    assert_int_equal(n, 2);
    assert_string_equal(mi[0].path, "a");
    assert_int_equal(mi[0].rank, 2);
    assert_ptr_equal(mi[0].facts, fp[0]);
    assert_true(mi[0].has_clock);
    assert_int_equal(mi[0].clock.rank, 2);
    assert_true(mi[0].clock.offset_ns == -1250 && mi[0].clock.drift_ppm == 3);
    assert_string_equal(mi[1].path, "e");
    assert_int_equal(mi[1].rank, 3);
    assert_ptr_equal(mi[1].facts, fp[4]);
    assert_false(mi[1].has_clock);
    assert_null(mi[1].after);
    free(mi);

    static const int32_t some[2] = {3, 7};
    assert_int_equal(mt_ingest_merged_inputs(&L, &files, some, 2, clocks, 2, &mi, &n), MT_OK);
    assert_int_equal(n, 1);
    assert_string_equal(mi[0].path, "e");
    free(mi);

    static const int32_t left_out[3] = {0, 1, 5};
    assert_int_equal(mt_ingest_merged_inputs(&L, &files, left_out, 3, clocks, 2, &mi, &n), MT_OK);
    assert_int_equal(n, 0);
    free(mi);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_traces),
        cmocka_unit_test(test_directory),
        cmocka_unit_test(test_nccl_example),
        cmocka_unit_test(test_stop),
        cmocka_unit_test(test_share),
        cmocka_unit_test(test_sort),
        cmocka_unit_test(test_nccl_join),
        cmocka_unit_test(test_report_lists),
        cmocka_unit_test(test_analyses),
        cmocka_unit_test(test_views),
        cmocka_unit_test(test_merged_inputs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
