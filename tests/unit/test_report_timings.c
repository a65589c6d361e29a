/* --timings' text and timings.json (report_timings.h) without MPI, from
 * numbers chosen by hand: the expected block and file are written out in
 * full below (each line as the program printed it before the writer moved
 * into the core). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "mergetrace/mergetrace.h"

static const uint64_t files[2] = {5, 3};
static const mt_timings_t run = {
    .n_procs = 2, .ranks = 8, .json_bytes = 157000000, .events = 1000000,
    .seconds = {1.5, 1.0, 0.25, 0.1, 0.2, 0.05, 0.01, 0.3, 0.4, 0.02, 2.5},
    .helpers = 1, .load_cpu = 1.2, .match_cpu = 0.04, .clock_fit_cpu = 0.009, .cross_rank_cpu = 0.28,
    .critpath_cpu = 0.1, .match_procs = 2, .critpath = 0.11, .critpath_rss_growth = 5000000,
    .plan_rss = 100000000, .plan_without = 10000000, .plan_with = 30000000, .plan_acts = 1000, .plan_rows = 200,
    .p0_peak = 120000000, .files = files, .peak = 130000000, .peak_who = 1, .largest = 20000000,
    .largest_on_peak = 19600000,
};

static void test_text(void **state)
{
    (void)state;
    mt_buf_t b = {0};
    assert_int_equal(mt_timings_text(&run, mt_buf_write, &b), MT_OK);
    assert_int_equal(mt_buf_append(&b, "", 1), MT_OK);
    assert_string_equal(b.data,
    "mergetrace: timings (2 processes, 8 ranks, 157.0 MB of JSON, 1000000 events)\n"
    "  load              1.500 s\n"
    "  parse             1.000 s  (max over processes)\n"
    "  rank_passes       0.250 s  (max over processes)\n"
    "  gather            0.100 s\n"
    "  align             0.200 s\n"
    "  match             0.050 s  (process 0)\n"
    "  clock_fit         0.010 s  (process 0)\n"
    "  cross_rank        0.300 s  (process 0)\n"
    "  merged_write      0.400 s  (deflated on a helper thread)\n"
    "  report            0.020 s  (process 0)\n"
    "  total             2.500 s\n"
    "  helper threads for the merged trace's deflate: 1 of 2 processes\n"
    "  CPU s on process 0: load 1.200, match 0.040, clock_fit 0.009, cross_rank 0.280 (critical path 0.100)\n"
    "  match         sharded: each of the 2 processes matched the rows whose key hashes to it\n"
    "  critical path     0.110 s on process 0 (in cross_rank), peak RSS raised by 5.0 MB\n"
    "  memory plan   process 0 at 100.0 MB after its load; projected +10.0 MB without the critical path, +30.0 MB with it (1000 GPU activities, 200 rows); no budget; process 0's peak over the run 120.0 MB\n"
    "  files         per process, from process 0: 5, 3\n"
    "  load rate         104.7 MB/s, 0.67 M events/s\n"
    "  peak RSS          130.0 MB on process 1 (6.63x its largest trace, 19.6 MB)\n");
    mt_buf_free(&b);

    /* one process, one rank, a budget that left the critical path out */
    mt_timings_t one = run;
    one.n_procs = 1;
    one.ranks = 1;
    one.helpers = 0;
    one.match_procs = 1;
    one.plan_budget = 25000000;
    one.plan_skipped = true;
    assert_int_equal(mt_timings_text(&one, mt_buf_write, &b), MT_OK);
    assert_int_equal(mt_buf_append(&b, "", 1), MT_OK);
    assert_non_null(strstr(b.data, "(1 process, 1 rank, "));
    assert_non_null(strstr(b.data, "  merged_write      0.400 s\n"));
    assert_non_null(strstr(b.data, "; budget 25.0 MB: critical path left out; "));
    assert_null(strstr(b.data, "helper threads"));
    assert_null(strstr(b.data, "sharded"));
    assert_null(strstr(b.data, "  files "));
    mt_buf_free(&b);
}

static void test_json(void **state)
{
    (void)state;
    mt_buf_t b = {0};
    assert_int_equal(mt_timings_json(&run, mt_buf_write, &b), MT_OK);
    assert_int_equal(mt_buf_append(&b, "", 1), MT_OK);
    assert_string_equal(b.data,
    "{\n  \"generator\": \"mergetrace " MERGETRACE_VERSION "\",\n"
    "  \"processes\": 2,\n  \"ranks\": 8,\n  \"json_bytes\": 157000000,\n  \"events\": 1000000,\n"
    "  \"seconds\": {\"load\": 1.500000, \"parse\": 1.000000, \"rank_passes\": 0.250000, \"gather\": 0.100000, "
    "\"align\": 0.200000, \"match\": 0.050000, \"clock_fit\": 0.010000, \"cross_rank\": 0.300000, "
    "\"merged_write\": 0.400000, \"report\": 0.020000, \"total\": 2.500000},\n"
    "  \"cpu_seconds\": {\"match\": 0.040000, \"clock_fit\": 0.009000, \"cross_rank\": 0.280000, \"load\": 1.200000, "
    "\"critical_path\": 0.100000},\n"
    "  \"critical_path\": {\"seconds\": 0.110000, \"peak_rss_growth_bytes\": 5000000},\n"
    "  \"memory_plan\": {\"rss_after_load_bytes\": 100000000, \"without_critical_path_bytes\": 10000000, "
    "\"with_critical_path_bytes\": 30000000, \"budget_bytes\": 0, \"gpu_activities\": 1000, \"rows\": 200, "
    "\"critical_path_left_out\": false, \"process0_peak_rss_bytes\": 120000000},\n"
    "  \"match_processes\": 2,\n  \"merged_deflate_threads\": 1,\n"
    "  \"files_per_process\": [5, 3],\n  \"peak_rss_bytes\": 130000000,\n  \"peak_rss_process\": 1,\n"
    "  \"largest_trace_bytes\": 20000000,\n  \"largest_trace_on_peak_process_bytes\": 19600000\n}\n");
    mt_buf_free(&b);
    /* the file is known as mergetrace's own output by its first bytes */
    assert_int_equal(mt_timings_json(&run, mt_buf_write, &b), MT_OK);
    assert_non_null(mt_merge_sniff_output(b.data, b.len));
    mt_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text),
        cmocka_unit_test(test_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
