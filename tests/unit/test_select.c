/* The merged trace's selection without MPI (merge.h, mt_select_*): the
 * --window in corrected ns from seconds after the job's start and from
 * ProfilerStep numbers, and a --ranks or --window that selects nothing,
 * against values worked out by hand from the offsets below. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "mergetrace/mergetrace.h"

/* rank 0: +1000 ns onto the reference, events 5000..40000 (6000..41000);
 * rank 1: -2000 ns, 7000..30000 (5000..28000); rank 2: no events; an NCCL
 * file of rank 7 (never selected). */
static const mt_clock_t clk[4] = {{.rank = 0, .offset_ns = 1000},
                                  {.rank = 1, .offset_ns = -2000},
                                  {.rank = 2, .offset_ns = 0},
                                  {.rank = 7, .offset_ns = 0}};
static const mt_select_rank_t job[4] = {
    {.rank = 0, .clock = &clk[0], .events = 10, .first_ns = 5000, .last_ns = 40000},
    {.rank = 1, .clock = &clk[1], .events = 10, .first_ns = 7000, .last_ns = 30000},
    {.rank = 2, .clock = &clk[2]},
    {.rank = 7, .clock = &clk[3], .events = 3, .first_ns = 1, .last_ns = 100000000, .nccl = true},
};

static void test_window_seconds(void **state)
{
    (void)state;
    int64_t a = 0, b = 0;
    /* the start is the NCCL file's first event at 1 ns: it has a span too */
    assert_true(mt_select_window(job, 4, false, 0.5e-6, 1e-6, NULL, 0, &a, &b));
    assert_int_equal(a, 501);
    assert_int_equal(b, 1001);
    assert_true(mt_select_window(job, 3, false, 0.5e-6, 1e-6, NULL, 0, &a, &b));
    assert_int_equal(a, 5500); /* rank 1's 7000 - 2000 */
    assert_int_equal(b, 6000);
    assert_true(mt_select_window(job + 2, 1, false, 1, 2, NULL, 0, &a, &b)); /* no events: from 0 */
    assert_int_equal(a, 1000000000);
    assert_int_equal(b, 2000000000);
}

static void test_window_steps(void **state)
{
    (void)state;
    const mt_step_t steps[] = {
        {.step = 3, .start_ns = 10000, .end_ns = 20000, .rank = 0},
        {.step = 3, .start_ns = 11000, .end_ns = 19000, .rank = 1},
        {.step = 4, .start_ns = 20000, .end_ns = 30000, .rank = 0},
        {.step = 5, .start_ns = 50000, .end_ns = 60000, .rank = 9}, /* no trace of rank 9: its own clock */
    };
    int64_t a = 0, b = 0;
    assert_true(mt_select_window(job, 4, true, 3, 3, steps, 4, &a, &b));
    assert_int_equal(a, 9000);  /* rank 1: 11000 - 2000 */
    assert_int_equal(b, 21000); /* rank 0: 20000 + 1000 */
    assert_true(mt_select_window(job, 4, true, 3, 4, steps, 4, &a, &b));
    assert_int_equal(a, 9000);
    assert_int_equal(b, 31000);
    assert_true(mt_select_window(job, 4, true, 5, 5, steps, 4, &a, &b));
    assert_int_equal(a, 50000);
    assert_int_equal(b, 60000);
    assert_false(mt_select_window(job, 4, true, 6, 9, steps, 4, &a, &b));
}

/* --window's text: seconds, ProfilerStep numbers, and each way it can be
 * wrong, with the message that says what was expected. */
static void test_window_parse(void **state)
{
    (void)state;
    bool steps = true;
    double a = -1, b = -1;
    char msg[128] = "";
    assert_int_equal(mt_select_window_parse("1.5:2.25", &steps, &a, &b, msg, sizeof msg), 0);
    assert_false(steps);
    assert_true(a == 1.5 && b == 2.25);
    assert_int_equal(mt_select_window_parse("0:0", &steps, &a, &b, msg, sizeof msg), 0);
    assert_true(a == 0 && b == 0);
    assert_int_equal(mt_select_window_parse("#3:#7", &steps, &a, &b, msg, sizeof msg), 0);
    assert_true(steps);
    assert_true(a == 3 && b == 7);
    static const struct {
        const char *in, *want;
    } bad[] = {
        {"3", "expected START:END (seconds) or #A:#B (ProfilerStep numbers)"},
        {"x:2", "expected a number before ':'"},
        {"1x:2", "expected a number before ':'"},
        {"1:", "expected a number after ':'"},
        {"1:2s", "expected a number after ':'"},
        {"2:1", "expected 0 <= START <= END"},
        {"-1:1", "expected 0 <= START <= END"},
        {"#3:7", "expected #A:#B (ProfilerStep numbers)"},
        {"#3.5:#7", "ProfilerStep numbers are integers"},
        {"1:inf", "expected a number after ':'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        msg[0] = '\0';
        assert_int_equal(mt_select_window_parse(bad[i].in, &steps, &a, &b, msg, sizeof msg), -1);
        assert_string_equal(msg, bad[i].want);
    }
}

static void test_check(void **state)
{
    (void)state;
    char list[64];
    size_t n = 0;
    int64_t span = 0;
    const int32_t want5[] = {5}, want1[] = {1}, want7[] = {7};
    assert_int_equal(mt_select_check(job, 4, NULL, 0, NULL, list, sizeof list, &n, &span), MT_SELECT_SOME);
    assert_int_equal(mt_select_check(job, 4, want1, 1, NULL, list, sizeof list, &n, &span), MT_SELECT_SOME);
    assert_int_equal(mt_select_check(job, 4, want5, 1, NULL, list, sizeof list, &n, &span), MT_SELECT_NO_RANK);
    assert_string_equal(list, "0-2");
    assert_int_equal(n, 3);
    /* the NCCL file's rank is no rank of the merged trace */
    assert_int_equal(mt_select_check(job, 4, want7, 1, NULL, list, sizeof list, &n, &span), MT_SELECT_NO_RANK);

    /* ranks 0-3, 5, 8-9 as ranges, and cut to fit */
    mt_select_rank_t many[7];
    const int64_t rk[7] = {0, 1, 2, 3, 5, 8, 9};
    for (size_t i = 0; i < 7; i++)
        many[i] = (mt_select_rank_t){.rank = rk[i]};
    assert_int_equal(mt_select_check(many, 7, want7, 1, NULL, list, sizeof list, &n, &span), MT_SELECT_NO_RANK);
    assert_string_equal(list, "0-3, 5, 8-9");
    assert_int_equal(n, 7);
    assert_int_equal(mt_select_check(many, 7, want7, 1, NULL, list, 8, &n, &span), MT_SELECT_NO_RANK);
    assert_string_equal(list, "0-3,..."); /* "0-3, 5" cut at cap - 4 */

    /* the traces span 5000..41000 corrected (the NCCL file left out) */
    const int64_t before[2] = {0, 4999}, after[2] = {41001, 50000}, touching[2] = {41000, 50000};
    assert_int_equal(mt_select_check(job, 4, NULL, 0, before, list, sizeof list, &n, &span), MT_SELECT_NO_TIME);
    assert_int_equal(span, 36000);
    assert_int_equal(mt_select_check(job, 4, NULL, 0, after, list, sizeof list, &n, &span), MT_SELECT_NO_TIME);
    assert_int_equal(mt_select_check(job, 4, NULL, 0, touching, list, sizeof list, &n, &span), MT_SELECT_SOME);
    assert_int_equal(mt_select_check(job + 3, 1, want5, 1, before, list, sizeof list, &n, &span), MT_SELECT_SOME);

    /* the program's lines: what the job has, by the options as given */
    char msg[400];
    assert_true(mt_select_check_text(job, 4, want5, 1, NULL, "5", NULL, false, msg, sizeof msg));
    assert_string_equal(msg, "--ranks 5: selects no rank of this job; its traces are of ranks 0-2");
    assert_true(mt_select_check_text(job, 4, NULL, 0, before, NULL, "0:0.000004999", false, msg, sizeof msg));
    assert_string_equal(msg, "--window 0:0.000004999: selects nothing; the job spans 0 to 0.000036 s from its start");
    assert_true(mt_select_check_text(job, 4, NULL, 0, before, NULL, "#7:#8", true, msg, sizeof msg));
    assert_string_equal(msg, "--window #7:#8: selects nothing");
    assert_false(mt_select_check_text(job, 4, want1, 1, touching, "1", "x", false, msg, sizeof msg));
    assert_string_equal(msg, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_window_seconds),
        cmocka_unit_test(test_window_steps),
        cmocka_unit_test(test_window_parse),
        cmocka_unit_test(test_check),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
