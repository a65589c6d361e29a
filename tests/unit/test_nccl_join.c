/* The NCCL join without MPI (nccl_join.h): which rows align each rank
 * (kineto / nccl / mixed), the checks of a join (pid, job size), the
 * warnings, the rows put in order on one process, the job's communicator
 * among example profiler file names, and what a file is. */
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

static size_t count_code(const mt_warnings_t *w, const char *code)
{
    size_t n = 0;
    for (size_t i = 0; i < w->n; i++)
        n += !strcmp(w->v[i].code, code);
    return n;
}

/* Every rank has a Kineto trace: Kineto rows align. All ranks NCCL only:
 * NCCL rows. Some of each: mixed, NCCL rows only where there is no trace. */
static void test_decide(void **state)
{
    (void)state;
    mt_nccl_info_t info = {.is_nccl = MT_NCCL_FMT_PLUGIN, .pid = 100, .comm_size = 4, .rows = 5};
    mt_nccl_job_t nj = {0};
    assert_int_equal(mt_nccl_job_add(&nj, 0, 3, "d/r0.jsonl", &info, true), MT_OK);
    assert_int_equal(mt_nccl_job_add(&nj, 1, 4, "d/r1.jsonl", &info, true), MT_OK);
    mt_nccl_job_decide(&nj, 2);
    assert_string_equal(nj.source, "kineto");
    assert_false(nj.r[0].aligned_on_nccl);
    assert_false(nj.r[1].aligned_on_nccl);
    assert_int_equal(mt_nccl_job_rows(&nj), 10);
    mt_nccl_job_free(&nj);
    assert_null(nj.r);

    assert_int_equal(mt_nccl_job_add(&nj, 0, 0, "a", &info, false), MT_OK);
    assert_int_equal(mt_nccl_job_add(&nj, 1, 1, "b", &info, false), MT_OK);
    mt_nccl_job_decide(&nj, 2);
    assert_string_equal(nj.source, "nccl");
    assert_true(nj.r[0].aligned_on_nccl && nj.r[1].aligned_on_nccl);
    mt_nccl_job_free(&nj);

    /* three loaded ranks: 0 has both, 1 NCCL only, 2 (not added) Kineto only */
    assert_int_equal(mt_nccl_job_add(&nj, 0, 0, "a", &info, true), MT_OK);
    assert_int_equal(mt_nccl_job_add(&nj, 1, 1, "b", &info, false), MT_OK);
    assert_int_equal(nj.n_only, 1);
    mt_nccl_job_decide(&nj, 3);
    assert_string_equal(nj.source, "mixed");
    assert_false(nj.r[0].aligned_on_nccl);
    assert_true(nj.r[1].aligned_on_nccl);
    mt_nccl_job_free(&nj);
}

/* A join by rank is checked against the Kineto trace's pid and world size;
 * each problem is one warning naming the file's base name. */
static void test_join_checks_and_warnings(void **state)
{
    (void)state;
    mt_nccl_info_t a = {.is_nccl = MT_NCCL_FMT_PLUGIN, .pid = 100, .comm_size = 4, .dropped = 7};
    mt_nccl_info_t b = {.is_nccl = MT_NCCL_FMT_PLUGIN, .pid = 200, .comm_size = 4, .truncated = 1};
    mt_nccl_job_t nj = {0};
    assert_int_equal(mt_nccl_job_add(&nj, 0, 0, "/deep/dir/rank0.jsonl", &a, true), MT_OK);
    assert_int_equal(mt_nccl_job_add(&nj, 1, 1, "/deep/dir/rank1.jsonl", &b, true), MT_OK);
    assert_int_equal(mt_nccl_job_add(&nj, 2, 2, "/deep/dir/rank2.jsonl", &b, false), MT_OK);
    mt_nccl_job_kineto(&nj, 0, 100, 4); /* the same process and size */
    mt_nccl_job_kineto(&nj, 1, 201, 8); /* another pid, another size */
    mt_nccl_job_decide(&nj, 4);         /* rank 3 has a Kineto trace only: mixed */
    assert_false(mt_nccl_rank_pid_differs(&nj.r[0]));
    assert_false(mt_nccl_rank_size_differs(&nj.r[0]));
    assert_true(mt_nccl_rank_pid_differs(&nj.r[1]));
    assert_true(mt_nccl_rank_size_differs(&nj.r[1]));
    assert_false(mt_nccl_rank_pid_differs(&nj.r[2])); /* no Kineto trace: nothing to differ from */
    mt_warnings_t w = {0};
    mt_nccl_job_warn(&w, &nj);
    assert_int_equal(w.st, MT_OK);
    assert_int_equal(count_code(&w, "nccl_mixed_sources"), 1);
    assert_int_equal(count_code(&w, "nccl_pid_differs"), 1);
    assert_int_equal(count_code(&w, "nccl_size_differs"), 1);
    assert_int_equal(count_code(&w, "nccl_only"), 1);
    assert_int_equal(count_code(&w, "nccl_dropped"), 1);
    assert_int_equal(count_code(&w, "nccl_truncated"), 2);
    for (size_t i = 0; i < w.n; i++)
        if (!strcmp(w.v[i].code, "nccl_pid_differs"))
            assert_string_equal(w.v[i].text, "rank 1: rank1.jsonl is of pid 200, its Kineto trace of pid 201: not "
                                             "the same process? (joined by rank)");
    mt_warnings_free(&w);
    mt_nccl_job_free(&nj);
}

/* One process: the rows of the ranks that align on NCCL, NCCL rows first
 * for those and Kineto rows for the others; the rest after, in order. */
static void test_rows_select(void **state)
{
    (void)state;
    mt_nccl_info_t info = {.is_nccl = MT_NCCL_FMT_PLUGIN};
    mt_nccl_job_t nj = {0};
    assert_int_equal(mt_nccl_job_add(&nj, 0, 0, "a", &info, true), MT_OK);  /* both: Kineto aligns (mixed) */
    assert_int_equal(mt_nccl_job_add(&nj, 1, 1, "b", &info, false), MT_OK); /* NCCL only */
    mt_nccl_job_decide(&nj, 3);
    assert_string_equal(nj.source, "mixed");
    mt_cinst_t rows[5] = {{.rank = 0, .flags = MT_CI_NCCL, .seq = 1}, {.rank = 0, .seq = 2},
                          {.rank = 1, .flags = MT_CI_NCCL, .seq = 3}, {.rank = 2, .seq = 4},
                          {.rank = 0, .flags = MT_CI_NCCL, .seq = 5}};
    size_t use = 0;
    assert_int_equal(mt_nccl_rows_select(mt_comm_serial(), &nj, rows, 5, &use), MT_OK);
    assert_int_equal(use, 3);
    const int64_t want[5] = {2, 3, 4, 1, 5};
    for (int i = 0; i < 5; i++)
        assert_int_equal(rows[i].seq, want[i]);
    mt_nccl_job_free(&nj);

    /* no NCCL file anywhere: every row aligns, in place */
    size_t use2 = 0;
    assert_int_equal(mt_nccl_rows_select(mt_comm_serial(), &nj, rows, 5, &use2), MT_OK);
    assert_int_equal(use2, 5);
    assert_int_equal(rows[0].seq, 2);
}

/* Example profiler names: the communicator with the most files is the
 * job's (ties: the smaller hash); other names do not count. */
static void test_example_world(void **state)
{
    (void)state;
    const char *names[] = {"p/prof_1234567890_0.json", "p/prof_1234567890_1.json", "p/prof_9999999999_0.json",
                           "p/prof_1234567890_2.json.gz", "p/rank0.json", "p/prof_5555555555_0.json"};
    mt_nccl_xworld_t w;
    mt_nccl_example_world(names, 6, &w);
    assert_int_equal(w.files, 3);
    assert_int_equal(w.hash, 1234567890ULL);
    assert_int_equal(w.n_hashes, 3);
    const char *tie[] = {"q_2222222222_0.json", "q_1111111111_0.json"};
    mt_nccl_example_world(tie, 2, &w);
    assert_int_equal(w.files, 1);
    assert_int_equal(w.hash, 1111111111ULL);
    mt_nccl_example_world(NULL, 0, &w);
    assert_int_equal(w.files, 0);
}

/* What a file is, by its first line: an NCCL plugin file; a *.jsonl found
 * in a directory that is none is left out (named on the command line, it
 * goes to the trace loader, which reports it). */
static void test_classify(void **state)
{
    (void)state;
    char p[600], q[600], why[256] = "";
    snprintf(p, sizeof p, "%s/nccl_join_plugin.jsonl", MT_TEST_TMP);
    snprintf(q, sizeof q, "%s/nccl_join_other.jsonl", MT_TEST_TMP);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs("{\"type\":\"process\",\"format\":\"mergetrace-nccl\",\"version\":1,\"host\":\"node0\",\"pid\":4000,"
          "\"abi\":6,\"mask\":70}\n", f);
    fclose(f);
    f = fopen(q, "w");
    assert_non_null(f);
    fputs("{\"not\":\"nccl\"}\n", f);
    fclose(f);
    assert_int_equal(mt_nccl_classify(q, true, why, sizeof why), MT_NCCL_FILE_SKIP);
    assert_non_null(strstr(why, "neither"));
    assert_int_equal(mt_nccl_classify(q, false, why, sizeof why), MT_NCCL_FILE_OTHER);
    int k = mt_nccl_classify(p, true, why, sizeof why);
    remove(p);
    remove(q);
    assert_int_equal(k, MT_NCCL_FILE_PLUGIN);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decide),
        cmocka_unit_test(test_join_checks_and_warnings),
        cmocka_unit_test(test_rows_select),
        cmocka_unit_test(test_example_world),
        cmocka_unit_test(test_classify),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
