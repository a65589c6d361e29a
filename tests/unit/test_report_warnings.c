/* The run's warnings (mt_report_warnings) from a hand-built report and
 * facts, without MPI: each condition gives its code and line, in the
 * terminal's order, and a clean job gives none. */
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

static const mt_warning_t *find(const mt_warnings_t *w, const char *code)
{
    for (size_t i = 0; i < w->n; i++)
        if (!strcmp(w->v[i].code, code))
            return &w->v[i];
    return NULL;
}

static size_t index_of(const mt_warnings_t *w, const char *code)
{
    for (size_t i = 0; i < w->n; i++)
        if (!strcmp(w->v[i].code, code))
            return i;
    fail_msg("no warning %s", code);
    return 0;
}

/* Two connected ranks with communication kernels, every one linked, on
 * the epoch, ranks from the traces: nothing to say. */
static void test_clean(void **state)
{
    (void)state;
    mt_trace_summary_t s[2] = {0};
    for (int i = 0; i < 2; i++) {
        s[i].events = 10;
        s[i].first_ns = 1700000000000000000LL;
        s[i].by_class[MT_CLASS_COMM] = 4;
        s[i].link.comm_with_coll = 4;
        s[i].world_size = 2;
    }
    const mt_trace_summary_t *sums[2] = {&s[0], &s[1]};
    mt_report_input_t in[2] = {{.rank = 0, .path = "d/r0.json", .rank_source = "distributedInfo", .summary = &s[0]},
                               {.rank = 1, .path = "d/r1.json", .rank_source = "distributedInfo", .summary = &s[1]}};
    mt_clock_t cl[2] = {{.rank = 0, .reference = true, .connected = true}, {.rank = 1, .connected = true}};
    mt_match_stats_t m = {.full = 4, .rows = 8};
    mt_report_t r = {.world_size = 2, .inputs = in, .n_inputs = 2, .aligned = true, .clocks = cl, .n_clocks = 2,
                     .match = &m};
    mt_report_warn_facts_t f = {.sums = sums};
    mt_warnings_t w = {0};
    assert_int_equal(mt_report_warnings(&r, &f, &w), MT_OK);
    assert_int_equal(w.n, 0);
    mt_warnings_free(&w);
}

/* Every job-level condition at once, and per-rank ones on rank 1. */
static void test_conditions(void **state)
{
    (void)state;
    mt_trace_summary_t s[2] = {0};
    s[0].events = 10;
    s[0].first_ns = 1700000000000000000LL;
    s[1].events = 10;
    s[1].first_ns = 5000; /* not on the epoch */
    s[1].truncated = true;
    s[1].truncated_at = 4096;
    s[1].world_size = 1; /* rank 1 is not below it */
    s[1].neg_dur = 2;
    const mt_trace_summary_t *sums[2] = {&s[0], &s[1]};
    mt_report_input_t in[2] = {{.rank = 0, .path = "d/r0.json", .rank_source = "distributedInfo"},
                               {.rank = 1, .path = "d/trace_1.json", .rank_source = "file name"}};
    mt_clock_t cl[2] = {{.rank = 0, .reference = true, .connected = true}, {.rank = 1, .violations = 3}};
    mt_match_stats_t m = {.partial = 2, .mismatched = 1, .rows = 0};
    int64_t missing[3] = {2, 3, 4};
    mt_report_skip_t sk[4] = {
        {.path = "d/notes.json", .reason = "no traceEvents", .kind = MT_REPORT_SKIP_NOT_TRACE},
        {.path = "d/x_1_0.json", .reason = "another communicator", .kind = MT_REPORT_SKIP_LEFT_OUT},
        {.path = "d/report.json", .reason = "a report.json written by mergetrace", .kind = MT_REPORT_SKIP_INPUT},
        {.path = "d/loop", .reason = "a link", .kind = MT_REPORT_SKIP_INPUT, .first = "d/sub"}};
    mt_report_t r = {.world_size = 5, .inputs = in, .n_inputs = 2, .missing = missing, .n_missing = 3,
                     .missing_count = 3, .skipped = sk, .n_skipped = 4, .aligned = false, .clocks = cl,
                     .n_clocks = 2, .match = &m};
    mt_trust_t tr = {.mixed = MT_TRUST_WORLD_SIZE, .a = 0, .b = 1, .why = "world sizes 2 and 4"};
    mt_report_warn_facts_t f = {.sums = sums,
                                .world_disagree = true,
                                .critpath_skipped = "the critical path was left out",
                                .trust = &tr,
                                .merge_failed = true};
    mt_warnings_t w = {0};
    assert_int_equal(mt_report_warnings(&r, &f, &w), MT_OK);
    assert_string_equal(find(&w, "missing_ranks")->text, "3 of 5 ranks have no trace: 2 3 4");
    assert_string_equal(find(&w, "skipped_file")->text, "skipped d/notes.json: not a trace (no traceEvents)");
    assert_string_equal(find(&w, "left_out_file")->text, "left out d/x_1_0.json: another communicator");
    assert_string_equal(find(&w, "skipped_input")->text, "skipped d/report.json: a report.json written by mergetrace");
    assert_string_equal(find(&w, "link_not_followed")->text, "did not follow d/loop: a link to d/sub, read already");
    assert_string_equal(find(&w, "world_size_disagree")->text,
                        "the traces disagree on world_size; using the largest, 5");
    assert_non_null(find(&w, "no_comm_kernels"));
    assert_string_equal(find(&w, "not_connected")->text,
                        "rank 1 shares no matched collective with rank 0: its clock is left uncorrected");
    assert_int_equal(find(&w, "not_connected")->rank, 1);
    assert_non_null(strstr(find(&w, "clock_violations")->text, "rank 1: 3 collectives end before"));
    assert_non_null(strstr(find(&w, "truncated")->text, "rank 1: d/trace_1.json is truncated at byte 4096: 10 events"));
    assert_string_equal(find(&w, "not_epoch")->text, "rank 1: trace_1.json: timestamps are not on the Unix epoch "
                                                     "(baseTimeNanoseconds was probably in the lost tail)");
    assert_non_null(find(&w, "rank_outside_world"));
    assert_string_equal(find(&w, "negative_duration")->text, "rank 1: 2 events had a negative duration (taken as 0)");
    assert_string_equal(find(&w, "rank_from_file_name")->text,
                        "rank 1: trace_1.json has no distributedInfo.rank; rank taken from the file name");
    assert_string_equal(find(&w, "critical_path_skipped")->text, "the critical path was left out");
    assert_non_null(strstr(find(&w, mt_trust_code_str(MT_TRUST_WORLD_SIZE))->text,
                           "r0.json and trace_1.json are not of one run: world sizes 2 and 4"));
    assert_non_null(find(&w, "no_align"));
    assert_non_null(strstr(find(&w, "partial_collectives")->text, "2 collective instances lack"));
    assert_non_null(strstr(find(&w, "mismatched_collectives")->text, "1 collective instances disagree"));
    assert_non_null(find(&w, "merge_failed"));
    assert_null(find(&w, "rank_default"));
    assert_null(find(&w, "poor_clock_fit"));
    /* the terminal's order: job, files, ranks, then the fit and the merge */
    assert_true(index_of(&w, "missing_ranks") < index_of(&w, "skipped_file"));
    assert_true(index_of(&w, "skipped_file") < index_of(&w, "left_out_file"));
    assert_true(index_of(&w, "world_size_disagree") < index_of(&w, "not_connected"));
    assert_true(index_of(&w, "rank_from_file_name") < index_of(&w, "critical_path_skipped"));
    assert_true(index_of(&w, "no_align") < index_of(&w, "merge_failed"));
    for (size_t i = 0; i < w.n; i++) /* one line each */
        assert_null(strchr(w.v[i].text, '\n'));
    mt_warnings_free(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_clean),
        cmocka_unit_test(test_conditions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
