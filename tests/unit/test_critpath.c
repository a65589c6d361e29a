/* Steps, critical path, replay, what-ifs, root causes and the report.html
 * strip (mt_critpath_run, src/cross/critpath.c, cp_run.c and cp_strip.c) on two hand-built ranks of one step,
 * own clocks. Every expected value is worked out in the comments, in us
 * (the data are in ns: us x 1000, so the 1 us "explained" threshold of the
 * graph means what it says).
 *
 *  rank 0 (host range [0, 420], sync [80, 400])
 *    A0 gemm  stream 0  launch [10, 20]  GPU [30, 130]
 *    C0 ar    stream 1  launch [40, 50]  GPU [130, 330]  waits for A0 (stream wait)
 *    B0 opt   stream 0  launch [60, 70]  GPU [345, 395]  waits for C0, then 15 us
 *                                                        that nothing explains
 *  rank 1 (host range [0, 400], sync [80, 385])
 *    A1 gemm  stream 0  launch [10, 20]  GPU [30, 280]   (2.5x rank 0's)
 *    C1 ar    stream 1  launch [40, 50]  GPU [280, 330]  waits for A1
 *    B1 opt   stream 0  launch [60, 70]  GPU [330, 380]  waits for C1
 *  C0 and C1 are one all-reduce: last arrival 280 (rank 1), T = 50 each.
 *
 * Launch latency per rank: the launch-bound activities are A0 / A1 only
 * (30 - 20 = 10); sync lag: rank 0 400 - 395 = 5, rank 1 385 - 380 = 5.
 * Job step: start 0, end max(420, 400) = 420 (rank 0), time 420. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mergetrace/analysis.h"
#include "mergetrace/critpath.h"
#include "test_util.h"

#define US 1000

static char pool[] = "gemm\0ar\0opt";
static const mt_an_str_t GEMM = {0, 4}, AR = {5, 2}, OPT = {8, 3};

static mt_an_gact_t act(int64_t ls, int64_t le, int64_t s, int64_t e, mt_an_str_t name, uint32_t stream, uint32_t cls)
{
    return (mt_an_gact_t){.start_ns = s * US,
                          .end_ns = e * US,
                          .launch_ns = ls * US,
                          .launch_end_ns = le * US,
                          .name = name,
                          .stream = stream,
                          .cls = cls};
}

typedef struct fixture {
    mt_an_gact_t g0[3], g1[3];
    mt_an_sync_t s0[1], s1[1];
    mt_an_step_t st0[1], st1[1];
    mt_rank_analysis_t a0, a1;
    mt_cinst_t rows[2];
    uint32_t first[2], members[2];
    uint8_t key[1], status[1];
    int32_t expected[1];
    mt_match_t m;
} fixture_t;

static void build(fixture_t *f)
{
    memset(f, 0, sizeof *f);
    f->g0[0] = act(10, 20, 30, 130, GEMM, 0, MT_AN_COMPUTE);
    f->g0[1] = act(40, 50, 130, 330, AR, 1, MT_AN_COMM);
    f->g0[2] = act(60, 70, 345, 395, OPT, 0, MT_AN_COMPUTE);
    f->g1[0] = act(10, 20, 30, 280, GEMM, 0, MT_AN_COMPUTE);
    f->g1[1] = act(40, 50, 280, 330, AR, 1, MT_AN_COMM);
    f->g1[2] = act(60, 70, 330, 380, OPT, 0, MT_AN_COMPUTE);
    f->s0[0] = (mt_an_sync_t){80 * US, 400 * US};
    f->s1[0] = (mt_an_sync_t){80 * US, 385 * US};
    /* own breakdowns: rank 0 compute 100 + 50, comm [130, 330] 200, idle
     * 420 - 350 = 70; rank 1 compute 250 + 50, comm 50, idle 400 - 350 = 50 */
    f->st0[0] = (mt_an_step_t){.step = 7, .cpu_start_ns = 0, .cpu_end_ns = 420 * US, .end_ns = 420 * US,
                               .compute_ns = 150 * US, .comm_ns = 200 * US, .idle_ns = 70 * US};
    f->st1[0] = (mt_an_step_t){.step = 7, .cpu_start_ns = 0, .cpu_end_ns = 400 * US, .end_ns = 400 * US,
                               .compute_ns = 300 * US, .comm_ns = 50 * US, .idle_ns = 50 * US};
    mt_rank_analysis_t *a[2] = {&f->a0, &f->a1};
    mt_an_gact_t *g[2] = {f->g0, f->g1};
    mt_an_sync_t *s[2] = {f->s0, f->s1};
    mt_an_step_t *st[2] = {f->st0, f->st1};
    for (int r = 0; r < 2; r++) {
        a[r]->rank = r;
        a[r]->gacts = g[r];
        a[r]->n_gacts = 3;
        a[r]->syncs = s[r];
        a[r]->n_syncs = 1;
        a[r]->steps = st[r];
        a[r]->n_steps = 1;
        a[r]->strings = pool;
        a[r]->strings_len = sizeof pool;
        f->rows[r] = (mt_cinst_t){.start_ns = g[r][1].start_ns, .end_ns = g[r][1].end_ns, .rank = r, .step = 7};
        f->members[r] = (uint32_t)r;
    }
    f->first[0] = 0;
    f->first[1] = 2;
    f->status[0] = MT_INST_FULL;
    f->expected[0] = 2;
    f->m = (mt_match_t){.n_inst = 1,
                        .first = f->first,
                        .members = f->members,
                        .key = f->key,
                        .status = f->status,
                        .expected = f->expected};
}

static mt_critpath_t *run(fixture_t *f, const mt_cp_request_t *rq)
{
    const mt_rank_analysis_t *an[2] = {&f->a1, &f->a0}; /* any order */
    mt_critpath_t *c = NULL;
    assert_int_equal(mt_critpath_run(rq, an, 2, NULL, NULL, 0, f->rows, 2, &f->m, &c), MT_OK);
    assert_non_null(c);
    return c;
}

/* The step, the replay and its error, the critical path. */
static void test_path_and_replay(void **state)
{
    (void)state;
    fixture_t f;
    build(&f);
    mt_cp_request_t rq = {.warmup = 0};
    mt_critpath_t *c = run(&f, &rq);
    assert_int_equal(c->n_steps, 1);
    const mt_cp_step_t *s = &c->steps[0];
    assert_int_equal(s->step, 7);
    assert_true(s->used);
    assert_int_equal(s->start_ns, 0);
    assert_int_equal(s->time_ns, 420 * US);
    assert_int_equal(s->end_rank, 0);
    /* near-critical: slack max(2 x 0, 420 us / 1000) = 0.42 us; rank 1 ends 20 us early */
    assert_false(s->undecided);
    assert_int_equal(c->p50_ns, 420 * US);
    /* Replay: B0 starts at max(A0 130, launch 70 + 10, C0 330) = 330, ends
     * 380; its sync returns at 380 + 5 = 385, 15 before the measured 400,
     * so rank 0's host range ends at 405; rank 1 replays exactly (400).
     * Replayed 405: error 15 / 420 = 3.571 %, under 5 %: not refused. */
    assert_int_equal(s->replay_ns, 405 * US);
    assert_false(s->refused);
    assert_true(c->replay_err_max > 0.03571 && c->replay_err_max < 0.03572);
    /* The path from rank 0's range end 420: host 420 -> 400 (after the
     * sync), sync lag 400 -> 395, B0 compute 395 -> 345, B0 bound by C0:
     * idle 345 -> 330, the all-reduce's transfer 330 -> 280 (comm), to the
     * last arrival C1 on rank 1: bound by A1 (280 -> 280), A1 compute 280
     * -> 30, launch 30 -> 20 (host), host 20 -> 0.
     * compute 50 + 250 = 300, comm 50, host 20 + 5 + 10 + 20 = 55, idle 15. */
    assert_int_equal(s->kind_ns[MT_CP_COMPUTE], 300 * US);
    assert_int_equal(s->kind_ns[MT_CP_COMM], 50 * US);
    assert_int_equal(s->kind_ns[MT_CP_HOST], 55 * US);
    assert_int_equal(s->kind_ns[MT_CP_IDLE], 15 * US);
    assert_int_equal(s->kind_ns[MT_CP_MEMORY], 0);
    /* by rank: 0 has 20 + 5 + 50 + 15 + 50 = 140, 1 has 250 + 10 + 20 = 280 */
    assert_int_equal(c->n_ranks, 2);
    assert_int_equal(c->ranks[0].path_ns, 140 * US);
    assert_int_equal(c->ranks[1].path_ns, 280 * US);
    /* imbalance: compute 300 - (150 + 300) / 2 = 75, comm 50 - 125 = -75,
     * idle 15 - 60 = -45 */
    assert_int_equal(c->imbalance_ns[MT_CP_COMPUTE], 75 * US);
    assert_int_equal(c->imbalance_ns[MT_CP_COMM], -75 * US);
    assert_int_equal(c->imbalance_ns[MT_CP_IDLE], -45 * US);
    /* Root causes: C0 waited 280 - 130 = 150 for rank 1; since the step
     * start rank 1 ran gemm for 250 where rank 0 took 100 (excess 150):
     * all 150 charged to rank 1's gemm, short term. */
    assert_int_equal(c->wait_ns, 150 * US);
    assert_int_equal(c->short_ns, 150 * US);
    assert_int_equal(c->long_ns, 0);
    assert_int_equal(c->n_causes, 1);
    assert_int_equal(c->causes[0].rank, 1);
    assert_string_equal(c->causes[0].name, "gemm");
    assert_int_equal(c->causes[0].ns, 150 * US);
    mt_critpath_free(c);
}

/* The report.html strip of the one used step (median and slowest at once):
 * the path of test_path_and_replay in time order, each segment on the rank
 * that holds it; rows by time on the path (rank 1: 280, rank 0: 140); each
 * row its own activities (all wider than 420 / 500 us: none merged). */
static void test_strip(void **state)
{
    (void)state;
    fixture_t f;
    build(&f);
    mt_cp_request_t rq = {.warmup = 0};
    mt_critpath_t *c = run(&f, &rq);
    assert_int_equal(c->n_strips, 1);
    const mt_cp_strip_t *t = &c->strips[0];
    assert_string_equal(t->why, "median");
    assert_int_equal(t->step, 0);
    assert_int_equal(t->n_rows, 2);
    assert_int_equal(t->n_ranks_all, 2);
    assert_int_equal(t->ranks[0], 1);
    assert_int_equal(t->ranks[1], 0);
    static const struct {
        int64_t a, b;
        int32_t rank;
        int kind;
        const char *name;
    } want[] = {{0, 20, 1, MT_CP_HOST, NULL},      {20, 30, 1, MT_CP_HOST, NULL},
                {30, 280, 1, MT_CP_COMPUTE, "gemm"}, {280, 330, 0, MT_CP_COMM, "ar"},
                {330, 345, 0, MT_CP_IDLE, NULL},    {345, 395, 0, MT_CP_COMPUTE, "opt"},
                {395, 400, 0, MT_CP_HOST, NULL},    {400, 420, 0, MT_CP_HOST, NULL}};
    assert_int_equal(t->n_path, sizeof want / sizeof want[0]);
    for (size_t i = 0; i < t->n_path; i++) {
        const mt_cp_seg_t *g = &t->path[i];
        assert_int_equal(g->a, want[i].a * US);
        assert_int_equal(g->b, want[i].b * US);
        assert_int_equal(g->rank, want[i].rank);
        assert_int_equal(g->kind, want[i].kind);
        assert_int_equal(g->n, 1);
        if (want[i].name)
            assert_string_equal(g->name, want[i].name);
        else
            assert_null(g->name);
    }
    /* rows: rank 1 A1 [30, 280], C1 [280, 330], B1 [330, 380]; rank 0 A0
     * [30, 130], C0 [130, 330], B0 [345, 395] */
    static const int64_t rows[2][3][2] = {{{30, 280}, {280, 330}, {330, 380}}, {{30, 130}, {130, 330}, {345, 395}}};
    for (size_t r = 0; r < 2; r++) {
        assert_int_equal(t->row_first[r + 1] - t->row_first[r], 3);
        for (size_t k = 0; k < 3; k++) {
            const mt_cp_seg_t *g = &t->segs[t->row_first[r] + k];
            assert_int_equal(g->a, rows[r][k][0] * US);
            assert_int_equal(g->b, rows[r][k][1] * US);
            assert_int_equal(g->kind, k == 1 ? MT_CP_COMM : MT_CP_COMPUTE);
        }
    }
    mt_critpath_free(c);
}

/* What-ifs: projected = measured 420 + (scenario replay - 405). */
static void test_what_ifs(void **state)
{
    (void)state;
    fixture_t f;
    build(&f);
    const int32_t strag[] = {1};
    mt_cp_request_t rq = {.warmup = 0, .stragglers = strag, .n_stragglers = 1, .pattern = "opt", .factor = 0.5};
    mt_critpath_t *c = run(&f, &rq);
    /* straggler: gemm at the median of the ranks' means (100 + 250) / 2 =
     * 175 on rank 1 (factor 0.7): A1 [30, 205], C1 arrives at 205, both
     * end 205 + 50 = 255; B0 [255, 305], sync 310 (-90): rank 0 ends 330;
     * B1 [255, 305], sync 310 (-75): rank 1 ends 325. Replay 330:
     * projected 420 + 330 - 405 = 345, gain 75. opt: equal means, kept. */
    assert_true(c->whatif[MT_WI_STRAGGLER].run);
    assert_int_equal(c->whatif[MT_WI_STRAGGLER].p50_ns, 345 * US);
    assert_int_equal(c->whatif[MT_WI_STRAGGLER].gain_ns, 75 * US);
    /* comm at its transfer (the shortest participant, 50), no waiting: C0
     * [130, 180], B0 [180, 230], sync 235: rank 0 ends 420 - 165 = 255;
     * rank 1 unchanged (400). Replay 400: projected 415, gain 5. */
    assert_int_equal(c->whatif[MT_WI_COMM].p50_ns, 415 * US);
    assert_int_equal(c->whatif[MT_WI_COMM].gain_ns, 5 * US);
    /* no launch edges: the only launch-bound activities (A0, A1) are the
     * first of their ranks and keep their measured starts: replay 405,
     * projected 420, gain 0. */
    assert_int_equal(c->whatif[MT_WI_LAUNCH].p50_ns, 420 * US);
    assert_int_equal(c->whatif[MT_WI_LAUNCH].gain_ns, 0);
    /* pattern opt x 0.5: B0 [330, 355], sync 360 (-40): rank 0 ends 380;
     * B1 [330, 355], sync 360 (-25): rank 1 ends 375. Replay 380:
     * projected 395, gain 25. */
    assert_int_equal(c->whatif[MT_WI_PATTERN].p50_ns, 395 * US);
    assert_int_equal(c->whatif[MT_WI_PATTERN].gain_ns, 25 * US);
    assert_int_equal(c->n_stage_wi, 0); /* no stages asked for */
    mt_critpath_free(c);
}

/* A step whose unexplained time is above 5 % is refused: B0 starts at 365
 * (35 us unexplained), sync [80, 420], host range end 440: replay 405
 * (as above), error 35 / 440 = 7.95 %: no projection. */
static void test_refused(void **state)
{
    (void)state;
    fixture_t f;
    build(&f);
    f.g0[2] = act(60, 70, 365, 415, OPT, 0, MT_AN_COMPUTE);
    f.s0[0] = (mt_an_sync_t){80 * US, 420 * US};
    f.st0[0].cpu_end_ns = f.st0[0].end_ns = 440 * US;
    mt_cp_request_t rq = {.warmup = 0};
    mt_critpath_t *c = run(&f, &rq);
    assert_int_equal(c->steps[0].time_ns, 440 * US);
    assert_int_equal(c->steps[0].replay_ns, 405 * US);
    assert_true(c->steps[0].refused);
    assert_int_equal(c->refused, 1);
    assert_int_equal(c->steps[0].whatif_ns[MT_WI_COMM], -1);
    assert_int_equal(c->whatif[MT_WI_COMM].steps, 0);
    mt_critpath_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_path_and_replay),
        cmocka_unit_test(test_strip),
        cmocka_unit_test(test_what_ifs),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
