/* Rank from distributedInfo, rank map, and file names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "test_util.h"

static void test_from_filename(void **state)
{
    (void)state;
    assert_int_equal(mt_rank_from_filename("/x/worker3_step_12.1694128201557.pt.trace.json"), 3);
    assert_int_equal(mt_rank_from_filename("rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"), 34);
    assert_int_equal(mt_rank_from_filename("traces/rank_7.json"), 7);
    assert_int_equal(mt_rank_from_filename("RANK12.json"), 12);
    assert_int_equal(mt_rank_from_filename("run_rank0/worker5.json"), 5); /* base name only */
    assert_int_equal(mt_rank_from_filename("job_rank1_worker2.json"), 2);  /* the last one wins */
    assert_int_equal(mt_rank_from_filename("train.json"), -1);
    assert_int_equal(mt_rank_from_filename("ranking.json"), -1);
    assert_int_equal(mt_rank_from_filename("rank-.json"), -1);
    assert_int_equal(mt_rank_from_filename("rank99999999999999.json"), -1); /* too large */
}

static void test_rankmap(void **state)
{
    (void)state;
    const char text[] = "# ranks\n\n/data/a b.json 3\r\ntrain.json\t12\n  other.json   0  \n";
    mt_rankmap_t *m = NULL;
    mt_error_t err;
    assert_int_equal(mt_rankmap_parse(text, sizeof text - 1, "map.txt", &m, &err), MT_OK);
    assert_int_equal(mt_rankmap_lookup(m, "/data/a b.json"), 3);
    assert_int_equal(mt_rankmap_lookup(m, "/elsewhere/train.json"), 12); /* by base name */
    assert_int_equal(mt_rankmap_lookup(m, "other.json"), 0);
    assert_int_equal(mt_rankmap_lookup(m, "missing.json"), -1);
    mt_rankmap_free(m);
    const char bad[] = "a.json 1\nb.json x\n";
    assert_int_equal(mt_rankmap_parse(bad, sizeof bad - 1, "map.txt", &m, &err), MT_ERR_FORMAT);
    assert_null(m);
    assert_int_equal(err.line, 2);
    char b[1200];
    assert_non_null(strstr(mt_error_format(&err, b, sizeof b), "map.txt"));
    assert_non_null(strstr(b, "line 2"));
    const char norank[] = "12\n";
    assert_int_equal(mt_rankmap_parse(norank, 3, "m", &m, &err), MT_ERR_FORMAT);
    mt_rankmap_free(NULL);
}

static void test_resolve_order(void **state)
{
    (void)state;
    mt_trace_t *t = load_str("{\"distributedInfo\": {\"rank\": 5}, \"traceEvents\": []}");
    int64_t r;
    mt_rank_source_t src;
    mt_error_t err;
    assert_int_equal(mt_rank_resolve(t, "worker2.json", NULL, &r, &src, &err), MT_OK);
    assert_int_equal(r, 5);
    assert_int_equal(src, MT_RANK_FROM_TRACE);
    mt_rankmap_t *m = NULL;
    assert_int_equal(mt_rankmap_parse("worker2.json 9\n", 15, "m", &m, &err), MT_OK);
    assert_int_equal(mt_rank_resolve(t, "worker2.json", m, &r, &src, &err), MT_OK);
    assert_int_equal(r, 9);
    assert_int_equal(src, MT_RANK_FROM_MAP);
    mt_trace_free(t);
    t = load_str("{\"traceEvents\": []}");
    assert_int_equal(mt_rank_resolve(t, "worker2.json", NULL, &r, &src, &err), MT_OK);
    assert_int_equal(r, 2);
    assert_int_equal(src, MT_RANK_FROM_FILENAME);
    assert_int_equal(mt_rank_resolve(t, "/a/train.json", NULL, &r, &src, &err), MT_ERR_NO_RANK);
    char b[1200];
    mt_error_format(&err, b, sizeof b);
    assert_non_null(strstr(b, "/a/train.json"));
    assert_non_null(strstr(b, "--rank-map"));
    mt_trace_free(t);
    mt_rankmap_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_from_filename),
        cmocka_unit_test(test_rankmap),
        cmocka_unit_test(test_resolve_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
