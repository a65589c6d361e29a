/* Nsight Systems SQLite exports: the small exports of tests/fuzz/corpus_nsys
 * (tests/nsys/make_nsys_seeds.py, numbers below from that script) and the
 * real ones in ../shared/corpus (counts from SQL queries run by hand with
 * sqlite3; tests/nsys/check_nsys.py checks the program against its own). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "mergetrace/mergetrace.h"
#include "test_util.h"

#define SEEDS MT_SAMPLES_DIR "/../tests/fuzz/corpus_nsys/"

static size_t count_class(const mt_trace_t *t, mt_class_t c)
{
    size_t n = 0;
    for (size_t i = 0; i < t->n_events; i++)
        n += t->events[i].cls == c;
    return n;
}

static void test_sniff(void **state)
{
    (void)state;
    assert_true(mt_nsys_sniff("SQLite format 3\0xxxx", 20));
    assert_false(mt_nsys_sniff("SQLite format 3", 15));
    assert_false(mt_nsys_sniff("{\"traceEvents\":[]}", 18));
    char b[64];
    assert_int_equal(mt_nsys_part_path(b, sizeof b, "a/b.sqlite", 144), strlen("a/b.sqlite#pid144"));
    assert_string_equal(b, "a/b.sqlite#pid144");
}

static void test_two_procs(void **state)
{
    (void)state;
    mt_nsys_proc_t *p = NULL;
    size_t n = 0;
    mt_error_t err;
    assert_int_equal(mt_nsys_procs(SEEDS "two_procs.sqlite", &p, &n, &err), MT_OK);
    assert_int_equal(n, 2);
    assert_int_equal(p[0].pid, 100);
    assert_int_equal(p[0].device, 0);
    assert_int_equal(p[1].pid, 101);
    assert_int_equal(p[1].kernels, 3);
    free(p);

    /* The whole file has two GPU processes: one must be named. */
    mt_trace_t *t = NULL;
    assert_int_equal(mt_trace_load(SEEDS "two_procs.sqlite", NULL, &t, &err), MT_ERR_NSYS);
    assert_null(t);
    assert_non_null(strstr(err.msg, "2 GPU processes"));

    assert_int_equal(mt_trace_load(SEEDS "two_procs.sqlite#pid101", NULL, &t, &err), MT_OK);
    assert_int_equal(t->info.rank, 1); /* NVTX "MPI Rank 1" */
    assert_true(t->info.has_base);
    assert_int_equal(t->info.base_ns, 1700000000000000000LL);
    assert_int_equal(count_cat(t, MT_CAT_KERNEL), 3);
    assert_int_equal(count_class(t, MT_CLASS_COMM), 1);
    assert_int_equal(count_cat(t, MT_CAT_CUDA_RUNTIME), 3);
    /* Two closed ranges (the open start/end range is left out). */
    assert_int_equal(count_cat(t, MT_CAT_USER_ANNOTATION), 2);
    assert_int_equal(t->link.launched, 3);
    const mt_event_t *k = find_event(t, "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
    assert_non_null(k);
    assert_int_equal(k->ts, 1700000000000000000LL + 1101);
    assert_int_equal(k->dur, 1150 - 1101);
    assert_int_equal(mt_event_pid(t, k), 1);
    assert_int_equal(mt_event_tid(t, k), 7);
    assert_non_null(find_event(t, "cudaLaunchKernel")); /* the _v7000 suffix dropped */
    const mt_event_t *r = find_event(t, "ncclAllReduce");
    assert_non_null(r);
    assert_int_equal(mt_event_pid(t, r), 101);
    assert_int_equal(mt_event_tid(t, r), 1);
    assert_int_equal(t->n_meta, 1);
    mt_trace_free(t);

    assert_int_equal(mt_trace_load(SEEDS "two_procs.sqlite#pid7", NULL, &t, &err), MT_ERR_NSYS);
    assert_non_null(strstr(err.msg, "no GPU process with pid 7"));
}

static void test_schema_2022(void **state)
{
    (void)state;
    mt_trace_t *t = NULL;
    mt_error_t err;
    assert_int_equal(mt_trace_load(SEEDS "schema_2022.sqlite#pid100", NULL, &t, &err), MT_OK);
    assert_int_equal(t->info.rank, 0);
    assert_int_equal(count_cat(t, MT_CAT_KERNEL), 3);
    assert_int_equal(count_class(t, MT_CLASS_COMM), 1);
    mt_trace_free(t);
}

/* The merged writer takes an export like a Kineto file: the events it
 * writes are the stored ones plus its own process metadata. */
static void test_merge(void **state)
{
    (void)state;
    mt_trace_t *t = NULL;
    mt_error_t err;
    assert_int_equal(mt_trace_load(SEEDS "two_procs.sqlite#pid100", NULL, &t, &err), MT_OK);
    mt_buf_t b = {0};
    uint64_t n = 0;
    assert_int_equal(mt_merge_rank(SEEDS "two_procs.sqlite#pid100", 0, NULL, NULL, mt_buf_write, &b, &n, &err), MT_OK);
    /* 2 pids (GPU 0, CPU 100): name + sort index each, labels for the CPU. */
    assert_int_equal(n, t->n_events + 5);
    assert_int_equal(mt_buf_append(&b, "", 1), MT_OK);
    assert_non_null(strstr(b.data, "\"ts\":1700000000000001.000,\"dur\":0.050"));
    assert_non_null(strstr(b.data, "\"name\":\"rank 0 GPU 0\""));
    mt_buf_free(&b);
    mt_trace_free(t);
}

/* One process whose StringIds ids are sparse (i * 1000003, up to 6 M):
 * names come through the cache by binary search, the same as dense ids
 * give; the file is one process without #pid, and with it. */
static void test_sparse_ids(void **state)
{
    (void)state;
    mt_nsys_proc_t *p = NULL;
    size_t n = 0;
    mt_error_t err;
    assert_int_equal(mt_nsys_procs(SEEDS "sparse_ids.sqlite", &p, &n, &err), MT_OK);
    assert_int_equal(n, 1);
    assert_int_equal(p[0].pid, 100);
    assert_int_equal(p[0].device, 0);
    assert_int_equal(p[0].kernels, 3);
    free(p);
    static const char *const paths[] = {SEEDS "sparse_ids.sqlite", SEEDS "sparse_ids.sqlite#pid100"};
    for (size_t i = 0; i < 2; i++) {
        mt_trace_t *t = NULL;
        assert_int_equal(mt_trace_load(paths[i], NULL, &t, &err), MT_OK);
        assert_int_equal(t->info.rank, 0); /* NVTX "MPI Rank 0" */
        assert_int_equal(count_cat(t, MT_CAT_KERNEL), 3);
        assert_int_equal(count_class(t, MT_CLASS_COMM), 1);
        assert_int_equal(count_cat(t, MT_CAT_CUDA_RUNTIME), 3);
        assert_int_equal(count_cat(t, MT_CAT_USER_ANNOTATION), 2);
        assert_non_null(
            find_event(t, "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"));
        assert_non_null(find_event(t, "gemm"));
        assert_non_null(find_event(t, "cudaLaunchKernel"));
        assert_non_null(find_event(t, "ncclAllReduce"));
        assert_int_equal(t->n_meta, 1);
        size_t len;
        const char *name = mt_strtab_get(t->strings, t->meta[0].str, &len);
        assert_int_equal(len, 4);
        assert_memory_equal(name, "main", 4);
        mt_trace_free(t);
    }
}

static void expect_error(const char *file, mt_status_t code, const char *text)
{
    mt_trace_t *t = NULL;
    mt_error_t err;
    char path[512];
    snprintf(path, sizeof path, "%s%s", SEEDS, file);
    mt_status_t st = mt_trace_load(path, NULL, &t, &err);
    if (st != code || !strstr(err.msg, text))
        fail_msg("%s: status %d, message '%s'", file, (int)st, err.msg);
    assert_null(t);
    size_t len;
    char *buf = read_file(path, &len);
    assert_non_null(buf);
    assert_int_equal(mt_trace_load_buffer(buf, len, file, NULL, &t, &err), code);
    free(buf);
}

static void test_errors(void **state)
{
    (void)state;
    expect_error("not_nsys.sqlite", MT_ERR_NSYS, "not an Nsight Systems export");
    expect_error("no_gpu.sqlite", MT_ERR_NSYS, "without GPU activity");
    expect_error("cut_1024.sqlite", MT_ERR_NSYS, "truncated or corrupt");
    expect_error("cut_3072.sqlite", MT_ERR_NSYS, "truncated or corrupt");
    expect_error("empty.sqlite", MT_ERR_FORMAT, "empty file");
}

/* The real exports. Counts: SELECT count(*), sum(end - start) FROM
 * CUPTI_ACTIVITY_KIND_KERNEL GROUP BY globalPid, and the NCCL kernels by
 * their StringIds name, run with the sqlite3 shell. */
static void test_corpus(void **state)
{
    (void)state;
    static const struct {
        const char *file;
        int64_t pid, rank;
        size_t kernels, comm;
        int64_t kernel_ns;
    } cases[] = {
        {"GindaChen__nsys-ai/tests/fixtures/mfu_2gpu_before.sqlite", 144, 0, 1993, 33, 270875926},
        {"GindaChen__nsys-ai/tests/fixtures/mfu_2gpu_before.sqlite", 145, 1, 2017, 33, 264324724},
        {"GindaChen__nsys-ai/tests/fixtures/h100_2gpu_1s.sqlite", 111, 0, 1721, 0, 22385163},
        {"GindaChen__nsys-ai/tests/fixtures/h100_2gpu_1s.sqlite", 112, 1, 1721, 0, 22444359},
        {"GindaChen__nsys-ai/tests/fixtures/mock.sqlite", -1, -1, 2, 0, 4129},
        {"hpcgroup__pipit/pipit/tests/data/saxpy-mpi-cuda_nsys_perlmutter0.sqlite", -1, 0, 5, 0, 88573480},
        {"brycelelbach__nsightful/tests/power_iteration__baseline.sqlite", -1, -1, 3689, 0, 1131742684},
    };
    if (access(MT_CORPUS_DIR "/GindaChen__nsys-ai/tests/fixtures/mock.sqlite", R_OK) != 0)
        skip();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[1024];
        int k = snprintf(path, sizeof path, "%s/%s", MT_CORPUS_DIR, cases[i].file);
        if (cases[i].pid >= 0)
            mt_nsys_part_path(path + k, sizeof path - (size_t)k, "", cases[i].pid);
        mt_trace_t *t = NULL;
        mt_error_t err;
        mt_status_t st = mt_trace_load(path, NULL, &t, &err);
        if (st != MT_OK)
            fail_msg("%s: %s", path, err.msg);
        int64_t ns = 0;
        for (size_t e = 0; e < t->n_events; e++)
            if (t->events[e].cat == MT_CAT_KERNEL)
                ns += t->events[e].dur;
        if (count_cat(t, MT_CAT_KERNEL) != cases[i].kernels || count_class(t, MT_CLASS_COMM) != cases[i].comm ||
            ns != cases[i].kernel_ns || t->info.rank != cases[i].rank)
            fail_msg("%s: kernels %zu comm %zu ns %lld rank %lld", path, count_cat(t, MT_CAT_KERNEL),
                     count_class(t, MT_CLASS_COMM), (long long)ns, (long long)t->info.rank);
        mt_trace_free(t);
    }
}

/* What on_event saw of one part. */
typedef struct seen {
    const mt_trace_t *t;
    size_t events;
    bool other; /* an event of another trace */
} seen_t;

static mt_status_t count_event(void *ctx, const mt_trace_t *t, const mt_event_t *e, const mt_raw_event_t *raw,
                               mt_error_t *err)
{
    (void)e, (void)raw, (void)err;
    seen_t *s = ctx;
    if (s->t && s->t != t)
        s->other = true;
    s->t = t;
    s->events++;
    return MT_OK;
}

/* Both processes of the two-process seed in one read, named in the
 * opposite order to the file's: each trace holds its own process's rows
 * (numbers from make_nsys_seeds.py), each callback saw only its trace. */
static void test_parts(void **state)
{
    (void)state;
    const char *paths[] = {SEEDS "two_procs.sqlite#pid101", SEEDS "two_procs.sqlite#pid100"};
    mt_load_opts_t lo[2];
    seen_t seen[2] = {{0}};
    for (int k = 0; k < 2; k++) {
        mt_load_opts_init(&lo[k]);
        lo[k].on_event = count_event;
        lo[k].on_event_ctx = &seen[k];
    }
    mt_trace_t *t[2];
    size_t failed = 9;
    mt_error_t err;
    assert_int_equal(mt_nsys_part_file(paths[0]), strlen(SEEDS "two_procs.sqlite"));
    assert_int_equal(mt_nsys_part_file(SEEDS "two_procs.sqlite"), 0);
    assert_int_equal(mt_nsys_load_parts(paths, 2, lo, t, &failed, &err), MT_OK);
    for (int k = 0; k < 2; k++) {
        int64_t pid = 101 - k, dev = 1 - k; /* process 100 ran on device 0 as "MPI Rank 0" */
        assert_string_equal(t[k]->path, paths[k]);
        assert_int_equal(t[k]->info.rank, dev);
        assert_int_equal(t[k]->info.base_ns, 1700000000000000000LL);
        assert_int_equal(count_cat(t[k], MT_CAT_KERNEL), 3);
        assert_int_equal(count_class(t[k], MT_CLASS_COMM), 1);
        assert_int_equal(count_cat(t[k], MT_CAT_CUDA_RUNTIME), 3);
        assert_int_equal(count_cat(t[k], MT_CAT_USER_ANNOTATION), 2);
        assert_int_equal(t[k]->n_meta, 1);
        assert_int_equal(t[k]->link.launched, 3);
        for (size_t i = 0; i < t[k]->n_events; i++) {
            const mt_event_t *e = &t[k]->events[i];
            assert_int_equal(mt_event_pid(t[k], e), e->cat == MT_CAT_KERNEL ? dev : pid);
        }
        const mt_event_t *first = find_event(t[k], "gemm");
        assert_non_null(first);
        assert_int_equal(first->ts, 1700000000000000000LL + 1000 + dev); /* the seed's start 1000 + 100 k + d */
        assert_int_equal(seen[k].events, t[k]->n_events);
        assert_ptr_equal(seen[k].t, t[k]);
        assert_false(seen[k].other);
        mt_trace_free(t[k]);
    }

    /* A part that is not there, or of another file: nothing loaded, the
     * error names that part. */
    const char *bad[] = {SEEDS "two_procs.sqlite#pid100", SEEDS "two_procs.sqlite#pid7"};
    assert_int_equal(mt_nsys_load_parts(bad, 2, lo, t, &failed, &err), MT_ERR_NSYS);
    assert_int_equal(failed, 1);
    assert_null(t[0]);
    assert_null(t[1]);
    assert_non_null(strstr(err.msg, "no GPU process with pid 7"));
    assert_string_equal(err.path, bad[1]);
    const char *mixed[] = {SEEDS "two_procs.sqlite#pid100", SEEDS "schema_2022.sqlite#pid100"};
    assert_int_equal(mt_nsys_load_parts(mixed, 2, lo, t, &failed, &err), MT_ERR_USAGE);
    assert_int_equal(failed, 1);
    const char *whole[] = {SEEDS "two_procs.sqlite"};
    assert_int_equal(mt_nsys_load_parts(whole, 1, lo, t, &failed, &err), MT_ERR_USAGE);
    const char *cut[] = {SEEDS "cut_3072.sqlite#pid100", SEEDS "cut_3072.sqlite#pid101"};
    assert_int_equal(mt_nsys_load_parts(cut, 2, lo, t, &failed, &err), MT_ERR_NSYS);
    assert_int_equal(failed, 0);
    assert_non_null(strstr(err.msg, "truncated or corrupt"));

    /* The real two-process export, both parts in one read: the counts of
     * test_corpus. */
    if (access(MT_CORPUS_DIR "/GindaChen__nsys-ai/tests/fixtures/mfu_2gpu_before.sqlite", R_OK) != 0)
        return;
    const char *mfu[] = {MT_CORPUS_DIR "/GindaChen__nsys-ai/tests/fixtures/mfu_2gpu_before.sqlite#pid144",
                         MT_CORPUS_DIR "/GindaChen__nsys-ai/tests/fixtures/mfu_2gpu_before.sqlite#pid145"};
    static const size_t kernels[] = {1993, 2017};
    static const int64_t kernel_ns[] = {270875926, 264324724};
    assert_int_equal(mt_nsys_load_parts(mfu, 2, lo, t, &failed, &err), MT_OK);
    for (int k = 0; k < 2; k++) {
        int64_t ns = 0;
        for (size_t e = 0; e < t[k]->n_events; e++)
            if (t[k]->events[e].cat == MT_CAT_KERNEL)
                ns += t[k]->events[e].dur;
        assert_int_equal(count_cat(t[k], MT_CAT_KERNEL), kernels[k]);
        assert_int_equal(count_class(t[k], MT_CLASS_COMM), 33);
        assert_int_equal(ns, kernel_ns[k]);
        assert_int_equal(t[k]->info.rank, k);
        mt_trace_free(t[k]);
    }
}

/* An index that a tool added (indexed.sqlite: the runtime table's
 * (globalTid, start), its calls on threads numbered against time) does not
 * reorder a part's rows: its calls come in the table's order, start 900,
 * 1000, 1100 on threads 4, 3, 2, alone and read with the other part. */
static void test_indexed(void **state)
{
    (void)state;
    const char *paths[] = {SEEDS "indexed.sqlite#pid100", SEEDS "indexed.sqlite#pid101"};
    mt_load_opts_t lo[2];
    mt_load_opts_init(&lo[0]);
    mt_load_opts_init(&lo[1]);
    mt_trace_t *t[2] = {NULL, NULL}, *alone = NULL;
    size_t failed;
    mt_error_t err;
    assert_int_equal(mt_trace_load(paths[0], NULL, &alone, &err), MT_OK);
    assert_int_equal(mt_nsys_load_parts(paths, 2, lo, t, &failed, &err), MT_OK);
    const mt_trace_t *check[] = {alone, t[0], t[1]};
    for (int c = 0; c < 3; c++) {
        int k = 0;
        for (size_t i = 0; i < check[c]->n_events; i++) {
            const mt_event_t *e = &check[c]->events[i];
            if (e->cat != MT_CAT_CUDA_RUNTIME)
                continue;
            assert_int_equal(e->ts, 1700000000000000000LL + 900 + 100 * k);
            assert_int_equal(mt_event_tid(check[c], e), 4 - k);
            k++;
        }
        assert_int_equal(k, 3);
    }
    mt_trace_free(alone);
    mt_trace_free(t[0]);
    mt_trace_free(t[1]);
}

int main(void)
{
    if (!mt_nsys_available()) {
        printf("SKIP: built without SQLite (MT_SQLITE=OFF or libsqlite3-dev missing)\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sniff),     cmocka_unit_test(test_two_procs), cmocka_unit_test(test_schema_2022),
        cmocka_unit_test(test_merge),     cmocka_unit_test(test_errors),    cmocka_unit_test(test_corpus),
        cmocka_unit_test(test_sparse_ids), cmocka_unit_test(test_parts),     cmocka_unit_test(test_indexed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
