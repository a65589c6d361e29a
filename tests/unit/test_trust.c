/* mt_trust_check and mt_trust_annotate (issue 19, item 1): each rule of
 * include/mergetrace/trust.h on hand-built traces, clocks and rows, just
 * past its limit and just inside it, and the legitimate cases that must
 * not be refused (a poor but plausible fit: HTA's down-sampled 2 of 128
 * set has residual p99 350 us from 4 matches; one rank with odd sizes; a
 * connected rank days off). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/hash.h"
#include "mergetrace/trust.h"
#include "test_util.h"

static const int64_t T0 = 1767189312000000000LL;
#define US 1000LL

/* n connected ranks 0..n-1 with good fits, rank 0 the reference */
static void clocks_good(mt_clock_t *c, size_t n)
{
    for (size_t i = 0; i < n; i++)
        c[i] = (mt_clock_t){.rank = (int32_t)i, .reference = i == 0, .connected = true, .matched = 20,
                            .drift_significant = i != 0, .drift_ppm = i ? 12.5 : 0, .drift_fit_ppm = i ? 12.5 : 0,
                            .residual_p50_ns = 800, .residual_p99_ns = 2000};
}

static void traces_of(mt_trust_trace_t *t, size_t n, int64_t world)
{
    for (size_t i = 0; i < n; i++)
        t[i] = (mt_trust_trace_t){.rank = (int32_t)i, .world_size = world, .first_ns = T0, .last_ns = T0 + 30000 * US};
}

static void test_same_run(void **state)
{
    (void)state;
    mt_clock_t c[4];
    mt_trust_trace_t t[4];
    clocks_good(c, 4);
    traces_of(t, 4, 4);
    t[2].world_size = -1; /* unknown is no evidence */
    mt_trust_t r;
    assert_int_equal(mt_trust_check(t, c, 4, NULL, 0, NULL, true, &r), MT_OK);
    assert_int_equal(r.mixed, MT_TRUST_SAME_RUN);
    assert_false(r.poor_fit);
    assert_true(r.fit_error_ns == 2000);
    assert_string_equal(mt_trust_code_str(r.mixed), "");
}

/* the HTA pair: rank 3 of an 8-rank job, rank 1 of a 2-rank job */
static void test_world_size(void **state)
{
    (void)state;
    mt_clock_t c[2];
    mt_trust_trace_t t[2];
    clocks_good(c, 2);
    traces_of(t, 2, 8);
    t[1].world_size = 2;
    mt_trust_t r;
    assert_int_equal(mt_trust_check(t, c, 2, NULL, 0, NULL, true, &r), MT_OK);
    assert_int_equal(r.mixed, MT_TRUST_WORLD_SIZE);
    assert_int_equal(r.a, 0);
    assert_int_equal(r.b, 1);
    assert_string_equal(r.why, "world sizes 8 and 2");
    assert_string_equal(mt_trust_code_str(r.mixed), "mixed_world_size");
}

static void test_drift(void **state)
{
    (void)state;
    mt_clock_t c[3];
    mt_trust_trace_t t[3];
    clocks_good(c, 3);
    traces_of(t, 3, 3);
    mt_trust_t r;
    /* 2000 ppm: two NTP clocks at opposite extremes, or the generator's
     * --max-drift-ppm 1000 on two nodes; still one run */
    c[2].drift_ppm = c[2].drift_fit_ppm = -2000;
    assert_int_equal(mt_trust_check(t, c, 3, NULL, 0, NULL, true, &r), MT_OK);
    assert_int_equal(r.mixed, MT_TRUST_SAME_RUN);
    /* the 13,080 ppm */
    c[2].drift_ppm = c[2].drift_fit_ppm = 13080;
    assert_int_equal(mt_trust_check(t, c, 3, NULL, 0, NULL, true, &r), MT_OK);
    assert_int_equal(r.mixed, MT_TRUST_DRIFT);
    assert_int_equal(r.a, 0);
    assert_int_equal(r.b, 2);
    assert_string_equal(r.why, "rank 2's clock drifts 13080 ppm from rank 0's (real clocks: tens)");
    /* a slope that was not significant is no evidence */
    c[2].drift_significant = false;
    c[2].drift_ppm = 0;
    assert_int_equal(mt_trust_check(t, c, 3, NULL, 0, NULL, true, &r), MT_OK);
    assert_int_equal(r.mixed, MT_TRUST_SAME_RUN);
    /* nor is anything with --no-align */
    c[2].drift_significant = true;
    c[2].drift_ppm = 13080;
    assert_int_equal(mt_trust_check(t, c, 3, NULL, 0, NULL, false, &r), MT_OK);
    assert_int_equal(r.mixed, MT_TRUST_SAME_RUN);
}

static void test_residual(void **state)
{
    (void)state;
    mt_clock_t c[2];
    mt_trust_trace_t t[2];
    clocks_good(c, 2);
    traces_of(t, 2, -1);
    mt_trust_t r;
    /* HTA's sampled 2 of 128: p50 98.5 us, p99 349.8 us from 4: a warning */
    c[0].residual_p50_ns = c[1].residual_p50_ns = 98500;
    c[0].residual_p99_ns = c[1].residual_p99_ns = 349800;
    c[1].matched = 4;
    assert_int_equal(mt_trust_check(t, c, 2, NULL, 0, NULL, true, &r), MT_OK);
    assert_int_equal(r.mixed, MT_TRUST_SAME_RUN);
    assert_true(r.poor_fit);
    assert_int_equal(r.worst, 1); /* the fitted rank, not the reference, on a tie */
    assert_true(r.fit_error_ns == 349800);
    assert_int_equal(r.worst_matched, 4);
    /* the trace_diff pair: residuals of 15-25 ms */
    c[1].residual_p50_ns = 15157100;
    c[1].residual_p99_ns = 25542000;
    assert_int_equal(mt_trust_check(t, c, 2, NULL, 0, NULL, true, &r), MT_OK);
    assert_int_equal(r.mixed, MT_TRUST_RESIDUAL);
    assert_int_equal(r.b, 1);
    assert_string_equal(r.why, "rank 1's collectives end 15.16 ms from the others' (median after the fit; real: "
                               "microseconds)");
    /* from 3 matches it is only a poor fit */
    c[1].matched = 3;
    assert_int_equal(mt_trust_check(t, c, 2, NULL, 0, NULL, true, &r), MT_OK);
    assert_int_equal(r.mixed, MT_TRUST_SAME_RUN);
    assert_true(r.poor_fit);
}

static mt_cinst_t row(int32_t rank, int64_t end, uint64_t comms_id, int64_t nelems, const char *pg)
{
    mt_cinst_t r;
    memset(&r, 0, sizeof r);
    r.rank = rank;
    r.start_ns = end - 100 * US;
    r.end_ns = end;
    r.launch_ns = -1;
    r.step = -1;
    r.seq = -1;
    r.in_nelems = r.out_nelems = nelems;
    r.group_size = 4;
    r.peer = -1;
    r.kind = MT_COLLK_ALLREDUCE;
    r.comms_id = comms_id;
    r.flags = MT_CI_COMMS_ID | MT_CI_PG;
    r.pg_id = tu_label(pg);
    r.group = mt_hash64(pg, strlen(pg), 1);
    r.sig = mt_hash64(&r.in_nelems, sizeof r.in_nelems, r.kind);
    return r;
}

/* 4 ranks, 8 allreduces; in `odd` of them the ranks in `who` ran another size */
static size_t sizes_job(mt_cinst_t *rows, int odd, const bool who[4])
{
    size_t n = 0;
    for (int i = 0; i < 8; i++)
        for (int32_t r = 0; r < 4; r++)
            rows[n++] = row(r, T0 + i * 1000 * US, 100 + (uint64_t)i, i < odd && who[r] ? 2048 : 1024, "0");
    return n;
}

static void test_sizes(void **state)
{
    (void)state;
    mt_cinst_t rows[32];
    mt_clock_t c[4];
    mt_trust_trace_t t[4];
    traces_of(t, 4, 4);
    mt_trust_t r;
    mt_match_t *m = NULL;
    mt_match_stats_t ms;
    /* ranks 2 and 3 against 0 and 1 in 4 of 8 (50 %), fit p99 150 us */
    const bool two[4] = {false, false, true, true};
    size_t n = sizes_job(rows, 4, two);
    assert_int_equal(mt_match(rows, n, &m, &ms), MT_OK);
    assert_int_equal(ms.mismatched, 4);
    clocks_good(c, 4);
    for (int i = 0; i < 4; i++)
        c[i].residual_p99_ns = 150000;
    assert_int_equal(mt_trust_check(t, c, 4, tu_crows(rows, n), n, m, true, &r), MT_OK);
    assert_int_equal(r.mixed, MT_TRUST_SIZES);
    assert_int_equal(r.a, 0);
    assert_int_equal(r.b, 2); /* the minority's lowest rank; 4 of its 8 */
    assert_string_equal(r.why, "rank 2 disagrees on sizes at 4 of 8 collectives, ends by 150.0 us (p99)");
    /* the same with a good fit: one run whose sizes differ (a warning elsewhere) */
    for (int i = 0; i < 4; i++)
        c[i].residual_p99_ns = 90000;
    assert_int_equal(mt_trust_check(t, c, 4, tu_crows(rows, n), n, m, true, &r), MT_OK);
    assert_int_equal(r.mixed, MT_TRUST_SAME_RUN);
    /* 3 of 8 instances is under 4: no pattern */
    mt_match_free(m);
    n = sizes_job(rows, 3, two);
    assert_int_equal(mt_match(rows, n, &m, NULL), MT_OK);
    for (int i = 0; i < 4; i++)
        c[i].residual_p99_ns = 150000;
    assert_int_equal(mt_trust_check(t, c, 4, tu_crows(rows, n), n, m, true, &r), MT_OK);
    assert_int_equal(r.mixed, MT_TRUST_SAME_RUN);
    mt_match_free(m);
    /* one rank alone with odd sizes, even in every instance, poor fit: one run */
    const bool one[4] = {false, false, true, false};
    n = sizes_job(rows, 8, one);
    assert_int_equal(mt_match(rows, n, &m, NULL), MT_OK);
    assert_int_equal(mt_trust_check(t, c, 4, tu_crows(rows, n), n, m, true, &r), MT_OK);
    assert_int_equal(r.mixed, MT_TRUST_SAME_RUN);
    assert_true(r.poor_fit);
    mt_match_free(m);
}

/* ranks 0-1 and 2-3 ran the group "0" each on their own (different Comms
 * Ids): the fit leaves them in two clock groups */
static void test_shared_group(void **state)
{
    (void)state;
    mt_cinst_t rows[16];
    size_t n = 0;
    for (int i = 0; i < 4; i++)
        for (int32_t r = 0; r < 4; r++)
            rows[n++] = row(r, T0 + i * 1000 * US, (r < 2 ? 100 : 900) + (uint64_t)i, 1024, "0");
    mt_match_t *m = NULL;
    assert_int_equal(mt_match(rows, n, &m, NULL), MT_OK);
    mt_clock_t c[4];
    clocks_good(c, 4);
    c[2].connected = c[3].connected = false;
    c[2].group = c[3].group = 1;
    mt_trust_trace_t t[4];
    traces_of(t, 4, 4);
    mt_trust_t r;
    assert_int_equal(mt_trust_check(t, c, 4, tu_crows(rows, n), n, m, true, &r), MT_OK);
    assert_int_equal(r.mixed, MT_TRUST_SHARED_GROUP);
    assert_int_equal(r.a, 1);
    assert_int_equal(r.b, 2);
    assert_string_equal(r.why, "ranks 1 and 2 share a process group but none of its collectives");
    /* a single unconnected rank is not a second run (a rank outside the window) */
    c[2].connected = true;
    c[2].group = 0;
    assert_int_equal(mt_trust_check(t, c, 4, tu_crows(rows, n), n, m, true, &r), MT_OK);
    assert_int_equal(r.mixed, MT_TRUST_SAME_RUN);
    mt_match_free(m);
}

static void test_window(void **state)
{
    (void)state;
    mt_clock_t c[2];
    mt_trust_trace_t t[2];
    clocks_good(c, 2);
    traces_of(t, 2, -1);
    mt_trust_t r;
    const int64_t day = 86400LL * 1000000000LL;
    /* connected and 8.5 days off: the fit corrects it */
    t[1].first_ns += day * 17 / 2;
    t[1].last_ns += day * 17 / 2;
    assert_int_equal(mt_trust_check(t, c, 2, NULL, 0, NULL, true, &r), MT_OK);
    assert_int_equal(r.mixed, MT_TRUST_SAME_RUN);
    /* nothing in common and 8.5 days apart */
    c[1].connected = false;
    c[1].group = 1;
    c[1].matched = 0;
    assert_int_equal(mt_trust_check(t, c, 2, NULL, 0, NULL, true, &r), MT_OK);
    assert_int_equal(r.mixed, MT_TRUST_WINDOW);
    assert_string_equal(r.why, "recorded 8.5 days apart, with no collective in common");
    /* 3 hours apart (unsynchronised nodes in the robust test) */
    t[1].first_ns = T0 + 3 * 3600 * 1000000000LL;
    t[1].last_ns = t[1].first_ns + 30000 * US;
    assert_int_equal(mt_trust_check(t, c, 2, NULL, 0, NULL, true, &r), MT_OK);
    assert_int_equal(r.mixed, MT_TRUST_SAME_RUN);
}

static void test_annotate(void **state)
{
    (void)state;
    mt_cross_t *x = calloc(1, sizeof *x);
    assert_non_null(x);
    mt_cross_rank_t rk[2] = {{.rank = 0},
                             {.rank = 1, .last = 4, .late_when_last_ns = 4 * 500 * US, .late_last_median_ns = 500 * US}};
    int32_t sus[1] = {1};
    x->ranks = rk;
    x->n_ranks = 2;
    x->suspects = sus;
    x->n_suspects = 1;
    mt_trust_t t = {.poor_fit = true, .fit_error_ns = 349800, .worst_matched = 4};
    assert_int_equal(mt_trust_annotate(x, &t, true, false), MT_OK);
    assert_int_equal(x->n_evidence, 3);
    assert_string_equal(x->evidence[0], "clock fit error up to 349.8 us (residual p99 of 4 matched): arrivals may be "
                                        "off by as much");
    assert_string_equal(x->evidence[1], "rank 1: 500.0 us late when last, above the fit's error: the verdict holds");
    assert_string_equal(x->evidence[2], "wait per participant and collective may be off by up to 349.8 us (the fit's "
                                        "error)");
    /* lateness within the error: the verdict could change */
    rk[1].late_when_last_ns = 4 * 200 * US;
    rk[1].late_last_median_ns = 200 * US;
    t.mixed = MT_TRUST_DRIFT;
    snprintf(t.why, sizeof t.why, "rank 2's clock drifts 13080 ppm from rank 0's (real clocks: tens)");
    assert_int_equal(mt_trust_annotate(x, &t, true, true), MT_OK);
    assert_string_equal(x->evidence[3], "different runs (--force): rank 2's clock drifts 13080 ppm from rank 0's "
                                        "(real clocks: tens)");
    assert_string_equal(x->evidence[5], "rank 1: 200.0 us late when last, within the fit's error: the verdict could "
                                        "change");
    /* --no-align: said, whatever the fit */
    size_t before = x->n_evidence;
    assert_int_equal(mt_trust_annotate(x, &(mt_trust_t){0}, false, false), MT_OK);
    assert_int_equal(x->n_evidence, before + 1);
    assert_string_equal(x->evidence[before], "--no-align: arrivals compared on the ranks' raw clocks; only the kernel "
                                             "durations hold");
    for (size_t i = 0; i < x->n_evidence; i++) {
        assert_true(strlen(x->evidence[i]) <= 97);
        free(x->evidence[i]);
    }
    free(x->evidence);
    free(x);
}

/* Windows days apart on the corrected clock: 2^50 ns is 13.03 days;
 * one trace 14 days after another (less its clock's 1-day offset: 13) is
 * too far only when the offset does not bring it back under; NCCL files
 * and traces without events are no windows. */
static void test_apart(void **state)
{
    (void)state;
    const int64_t day = 86400 * INT64_C(1000000000);
    mt_trust_trace_t t[4] = {
        {.rank = 0, .first_ns = 0, .last_ns = 10},
        {.rank = 1, .first_ns = 14 * day, .last_ns = 14 * day + 10},
        {.rank = 2, .first_ns = 40 * day, .last_ns = 40 * day, .nccl = true},
        {.rank = 3, .first_ns = 0, .last_ns = -1},
    };
    mt_clock_t c[4] = {{.rank = 0}, {.rank = 1}, {.rank = 2}, {.rank = 3, .offset_ns = -90.0 * day}};
    size_t a = 9, b = 9;
    double apart = 0;
    assert_true(mt_trust_apart(t, 4, c, 4, &a, &b, &apart));
    assert_int_equal(a, 0);
    assert_int_equal(b, 1);
    assert_true(apart == (double)(14 * day));
    c[1].offset_ns = -1.0 * day; /* 13 days: under 2^50 ns */
    assert_false(mt_trust_apart(t, 4, c, 4, &a, &b, &apart));
    assert_true(mt_trust_apart(t, 4, c, 1, &a, &b, &apart)); /* no clock for rank 1: its own start */
    assert_false(mt_trust_apart(t, 1, c, 4, &a, &b, &apart));
}

/* The world from the traces alone, worked out by hand: the largest size
 * named, at least the highest rank + 1, the absent ranks listed in order
 * and, past MT_TRUST_MISSING_LISTED, only counted. */
static void test_world(void **state)
{
    (void)state;
    mt_trust_world_t w;
    const int64_t r134[] = {1, 3, 4}, s88n[] = {8, 8, -1}, s840[] = {8, 4, 0};
    mt_trust_world(r134, s88n, 3, &w);
    assert_int_equal(w.world, 8);
    assert_false(w.disagree);
    assert_int_equal(w.n_absent, 5);
    assert_int_equal(w.n_missing, 5);
    const int64_t want[] = {0, 2, 5, 6, 7};
    assert_memory_equal(w.missing, want, sizeof want);
    free(w.missing);
    mt_trust_world(r134, s840, 3, &w);
    assert_int_equal(w.world, 8);
    assert_true(w.disagree);
    free(w.missing);
    const int64_t r02[] = {0, 2}, none[] = {-1, 0};
    mt_trust_world(r02, none, 2, &w); /* no size named: the highest rank's */
    assert_int_equal(w.world, 3);
    assert_int_equal(w.n_missing, 1);
    assert_int_equal(w.missing[0], 1);
    free(w.missing);
    const int64_t r01[] = {0, 1}, s22[] = {2, 2};
    mt_trust_world(r01, s22, 2, &w);
    assert_int_equal(w.n_absent, 0);
    assert_null(w.missing);
    const int64_t r0[] = {0}, huge[] = {(int64_t)1 << 31};
    mt_trust_world(r0, huge, 1, &w);
    assert_int_equal(w.n_absent, ((int64_t)1 << 31) - 1);
    assert_int_equal(w.n_missing, MT_TRUST_MISSING_LISTED);
    assert_int_equal(w.missing[0], 1);
    assert_int_equal(w.missing[MT_TRUST_MISSING_LISTED - 1], (int64_t)MT_TRUST_MISSING_LISTED);
    free(w.missing);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_world),       cmocka_unit_test(test_apart),       cmocka_unit_test(test_same_run),    cmocka_unit_test(test_world_size), cmocka_unit_test(test_drift),
        cmocka_unit_test(test_residual),    cmocka_unit_test(test_sizes),      cmocka_unit_test(test_shared_group),
        cmocka_unit_test(test_window),      cmocka_unit_test(test_annotate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
