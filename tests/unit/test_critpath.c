/* Steps, critical path, replay, what-ifs, root causes and the report.html
 * strip (mt_critpath_run, src/cross/critpath.c, cp_run.c and cp_strip.c) on two hand-built ranks of one step
 * (three in test_propagation; two stages of a pipeline in test_pipeline;
 * one or two small jobs each for the fallback paths at the end),
 * own clocks. Every expected value is worked
 * out in the comments, in us
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
    assert_int_equal(mt_critpath_run(rq, an, 2, NULL, NULL, 0, tu_crows(f->rows, 2), 2, &f->m, &c), MT_OK);
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
    /* Root causes: C0 waited 280 - 130 = 150 for rank 1. Rank 1's walk
     * back from C1's start 280 to the step start: bound by A1 (idle 0), A1
     * compute 250, launch 30 -> 20 host 10, host 20 -> 0; rank 0's from
     * C0's start 130: A0 compute 100, host 10 + 20. Excess: gemm 150, host
     * 0: all 150 charged to rank 1's gemm (compute), short term. */
    assert_int_equal(c->wait_ns, 150 * US);
    assert_int_equal(c->attributed_ns, 150 * US);
    assert_int_equal(c->short_ns, 150 * US);
    assert_int_equal(c->long_ns, 0);
    assert_int_equal(c->rc_kind_ns[MT_RC_COMPUTE], 150 * US);
    assert_int_equal(c->n_causes, 1);
    assert_int_equal(c->causes[0].rank, 1);
    assert_int_equal(c->causes[0].kind, MT_RC_COMPUTE);
    assert_string_equal(c->causes[0].name, "gemm");
    assert_int_equal(c->causes[0].ns, 150 * US);
    assert_int_equal(c->ranks[1].caused_ns, 150 * US);
    /* no annotations: all of it to rank 1's activities outside any */
    assert_int_equal(c->n_by_annot, 1);
    assert_int_equal(c->by_annot[0].rank, 1);
    assert_string_equal(c->by_annot[0].name, "");
    assert_int_equal(c->by_annot[0].kind, MT_RC_COMPUTE);
    assert_int_equal(c->by_annot[0].ns, 150 * US);
    mt_critpath_free(c);
}

/* test_path_and_replay's job with rank 0's activities given out of start
 * order (A0, B0, C0): the same graph under other node ids, so the same
 * hand-worked values hold. The replay order then needs rank 0's starts
 * sorted (they are not in node order), its ends merged from two streams
 * (node order is not end order: 130, 395, 330) and B0's then C0's stream
 * wait found by a search that goes back (345 then 130). */
static void test_node_order(void **state)
{
    (void)state;
    fixture_t f;
    build(&f);
    mt_an_gact_t t = f.g0[1]; /* rows[] already hold C0's times */
    f.g0[1] = f.g0[2];
    f.g0[2] = t;
    mt_cp_request_t rq = {.warmup = 0};
    mt_critpath_t *c = run(&f, &rq);
    assert_int_equal(c->n_steps, 1);
    const mt_cp_step_t *s = &c->steps[0];
    assert_int_equal(s->time_ns, 420 * US);
    assert_int_equal(s->replay_ns, 405 * US);
    assert_int_equal(s->kind_ns[MT_CP_COMPUTE], 300 * US);
    assert_int_equal(s->kind_ns[MT_CP_COMM], 50 * US);
    assert_int_equal(s->kind_ns[MT_CP_HOST], 55 * US);
    assert_int_equal(s->kind_ns[MT_CP_IDLE], 15 * US);
    assert_int_equal(c->ranks[0].path_ns, 140 * US);
    assert_int_equal(c->ranks[1].path_ns, 280 * US);
    assert_int_equal(c->wait_ns, 150 * US);
    assert_int_equal(c->attributed_ns, 150 * US);
    assert_int_equal(c->n_causes, 1);
    assert_int_equal(c->causes[0].rank, 1);
    assert_string_equal(c->causes[0].name, "gemm");
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
    /* no launch gaps: no launch edges, nothing before the rank's step
     * start (0), and the host catches up by what a launch would still
     * have delayed. A0 [0, 100]: its launch (20 + 10) would have held it
     * 30, so rank 0's host is 30 earlier from there; A1 [0, 250], the
     * same for rank 1. C0 arrives 100, C1 250: both end 250 + 50 = 300
     * (their launches, 50 - 30 + 10 = 30, hold nothing). B0 [300, 350];
     * sync starts 80 - 30 = 50, returns 350 + 5 = 355 (-45): rank 0 ends
     * 375. B1 [300, 350], sync 355 (-30): rank 1 ends 370. Replay 375:
     * projected 420 + 375 - 405 = 390, gain 30. */
    assert_int_equal(c->whatif[MT_WI_LAUNCH].p50_ns, 390 * US);
    assert_int_equal(c->whatif[MT_WI_LAUNCH].gain_ns, 30 * US);
    /* pattern opt x 0.5: B0 [330, 355], sync 360 (-40): rank 0 ends 380;
     * B1 [330, 355], sync 360 (-25): rank 1 ends 375. Replay 380:
     * projected 395, gain 25. */
    assert_int_equal(c->whatif[MT_WI_PATTERN].p50_ns, 395 * US);
    assert_int_equal(c->whatif[MT_WI_PATTERN].gain_ns, 25 * US);
    assert_int_equal(c->n_stage_wi, 0); /* no stages asked for */
    mt_critpath_free(c);
    /* pattern on the all-reduce x 2 scales its transfer, not its wait:
     * C0 and C1 end 280 + 100 = 380; B0 [380, 430], sync 435 (+35): rank
     * 0 ends 455; B1 [380, 430], sync 435 (+50): rank 1 ends 450. Replay
     * 455: projected 420 + 455 - 405 = 470, gain -50. */
    rq = (mt_cp_request_t){.warmup = 0, .pattern = "ar", .factor = 2.0};
    c = run(&f, &rq);
    assert_int_equal(c->whatif[MT_WI_PATTERN].p50_ns, 470 * US);
    assert_int_equal(c->whatif[MT_WI_PATTERN].gain_ns, -50 * US);
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

/* Propagation (long-term costs), three ranks of one step [0, 300], no
 * syncs, own clocks:
 *  rank 0 (A)  gemm  stream 0 launch [10, 20] GPU [30, 80]
 *              J0 ar stream 1 launch [40, 50] GPU [80, 260]   waits for B
 *              I0 ar stream 1 launch [60, 70] GPU [260, 290]  after J0
 *  rank 1 (B)  gemm  stream 0 launch [10, 20] GPU [30, 230]   (4x A's)
 *              J1 ar stream 1 launch [40, 50] GPU [230, 260]
 *  rank 2 (C)  gemm  stream 0 launch [10, 20] GPU [30, 80]
 *              I2 ar stream 1 launch [40, 50] GPU [80, 290]   waits for A
 * J = {J0, J1}: last arrival B at 230, A waited 150. I = {I0, I2}: last
 * arrival A at 260, C waited 180. Bindings: J0, J1 and I2 by the gemm on
 * the other stream (launch end + 10 is earlier), I0 by J0 (stream).
 *  J: B's walk from 230: gemm 200, host 30 -> 0; A's from 80: gemm 50,
 *     host 30. Excess gemm 150: B's gemm 150, short term.
 *  I: A's walk from 260: J0's transfer 260 -> 230 (A, comm_transfer ar
 *     30); J holds no C, so the walk goes on at J's last arrival, B: gemm
 *     230 -> 30 (B, 200), host 30. C's from 80: gemm 50, host 30.
 *     Excess: ar 30, gemm 150, host 0; 180 = the wait: A's ar 30 (short
 *     term) and B's gemm 150 (long term: A was late because it waited for
 *     B).
 * Totals: wait 330, short 180, long 150; B gemm 300, A ar 30.
 * By annotation (A: gemm "## forward ##", J0 "## backward ##", I0 none; B:
 * gemm "## forward ##", J1 none; C none): J charges B's gemm segments (B
 * forward 150); I charges A's J0 transfer (A backward 30) and B's gemm
 * (B forward 150): B "## forward ##" compute 300 (300 / 330 = 90.91 %), A
 * "## backward ##" comm_transfer 30; A's own gemm is never in excess.
 * The request's hooks do what the program does (mpi/job.c): rows_done
 * overwrites the rows and the match (all of it: first, members, status),
 * built frees the GPU activities, which are on the heap
 * (mt_rank_analysis_drop_gacts); each is called once, rows_done first.
 * The same values must come out of what the graph kept (the annotations
 * included), and ASan sees any read of the activities after the build. */
typedef struct dropped {
    mt_rank_analysis_t *a;
    size_t n_a;
    void *rows, *first, *members, *status;
    size_t rows_bytes, first_bytes, members_bytes, status_bytes;
    int rows_calls, built_calls;
} dropped_t;

static void drop_rows(void *ctx)
{
    dropped_t *d = ctx;
    assert_int_equal(d->built_calls, 0);
    memset(d->rows, 0xa5, d->rows_bytes);
    memset(d->first, 0xa5, d->first_bytes);
    memset(d->members, 0xa5, d->members_bytes);
    memset(d->status, 0xa5, d->status_bytes);
    d->rows_calls++;
}

static void drop_gacts(void *ctx)
{
    dropped_t *d = ctx;
    for (size_t r = 0; r < d->n_a; r++) {
        mt_rank_analysis_drop_gacts(&d->a[r]);
        assert_null(d->a[r].gacts);
        assert_int_equal(d->a[r].n_gacts, 0);
    }
    d->built_calls++;
}

static void test_propagation(void **state)
{
    (void)state;
    mt_an_gact_t g0[3] = {act(10, 20, 30, 80, GEMM, 0, MT_AN_COMPUTE), act(40, 50, 80, 260, AR, 1, MT_AN_COMM),
                          act(60, 70, 260, 290, AR, 1, MT_AN_COMM)};
    mt_an_gact_t g1[2] = {act(10, 20, 30, 230, GEMM, 0, MT_AN_COMPUTE), act(40, 50, 230, 260, AR, 1, MT_AN_COMM)};
    mt_an_gact_t g2[2] = {act(10, 20, 30, 80, GEMM, 0, MT_AN_COMPUTE), act(40, 50, 80, 290, AR, 1, MT_AN_COMM)};
    mt_an_gact_t *g[3] = {g0, g1, g2};
    size_t ng[3] = {3, 2, 2};
    static char apool[] = "gemm\0ar\0opt\0## forward ##\0## backward ##";
    mt_an_str_t ann[2] = {{12, 13}, {26, 14}}; /* forward, backward */
    g0[0].annot = 1;
    g0[1].annot = 2;
    g1[0].annot = 1;
    mt_an_step_t st[3];
    mt_rank_analysis_t a[3];
    memset(a, 0, sizeof a);
    for (int r = 0; r < 3; r++) {
        st[r] = (mt_an_step_t){.step = 3, .cpu_start_ns = 0, .cpu_end_ns = 300 * US, .end_ns = 300 * US};
        a[r].rank = r;
        a[r].gacts = malloc(ng[r] * sizeof *g[r]);
        assert_non_null(a[r].gacts);
        memcpy(a[r].gacts, g[r], ng[r] * sizeof *g[r]);
        a[r].n_gacts = ng[r];
        a[r].steps = &st[r];
        a[r].n_steps = 1;
        a[r].strings = apool;
        a[r].strings_len = sizeof apool;
        a[r].annots = ann;
        a[r].n_annots = r < 2 ? 2 : 0;
    }
    /* rows: J0, J1 (instance J), I0, I2 (instance I) */
    const mt_an_gact_t *rg[4] = {&g0[1], &g1[1], &g0[2], &g2[1]};
    const int32_t rr[4] = {0, 1, 0, 2};
    mt_cinst_t rows[4];
    memset(rows, 0, sizeof rows);
    for (int k = 0; k < 4; k++)
        rows[k] = (mt_cinst_t){.start_ns = rg[k]->start_ns, .end_ns = rg[k]->end_ns, .rank = rr[k], .step = 3};
    uint32_t first[3] = {0, 2, 4}, members[4] = {0, 1, 2, 3};
    uint8_t key[2] = {0}, status[2] = {MT_INST_FULL, MT_INST_FULL};
    int32_t expected[2] = {2, 2};
    mt_match_t m = {.n_inst = 2, .first = first, .members = members, .key = key, .status = status,
                    .expected = expected};
    const mt_rank_analysis_t *an[3] = {&a[2], &a[0], &a[1]};
    dropped_t d = {.a = a,
                   .n_a = 3,
                   .rows = rows,
                   .rows_bytes = sizeof rows,
                   .first = first,
                   .first_bytes = sizeof first,
                   .members = members,
                   .members_bytes = sizeof members,
                   .status = status,
                   .status_bytes = sizeof status};
    mt_cp_request_t rq = {.warmup = 0, .rows_done = drop_rows, .built = drop_gacts, .hook_ctx = &d};
    mt_critpath_t *c = NULL;
    assert_int_equal(mt_critpath_run(&rq, an, 3, NULL, NULL, 0, tu_crows(rows, 4), 4, &m, &c), MT_OK);
    assert_non_null(c);
    assert_int_equal(d.rows_calls, 1);
    assert_int_equal(d.built_calls, 1);
    assert_int_equal(c->wait_ns, 330 * US);
    assert_int_equal(c->attributed_ns, 330 * US);
    assert_int_equal(c->short_ns, 180 * US);
    assert_int_equal(c->long_ns, 150 * US);
    assert_int_equal(c->rc_kind_ns[MT_RC_COMPUTE], 300 * US);
    assert_int_equal(c->rc_kind_ns[MT_RC_COMM_TRANSFER], 30 * US);
    assert_int_equal(c->rc_kind_ns[MT_RC_HOST], 0);
    assert_int_equal(c->n_causes, 2);
    assert_int_equal(c->causes[0].rank, 1);
    assert_int_equal(c->causes[0].kind, MT_RC_COMPUTE);
    assert_string_equal(c->causes[0].name, "gemm");
    assert_int_equal(c->causes[0].ns, 300 * US);
    assert_int_equal(c->causes[1].rank, 0);
    assert_int_equal(c->causes[1].kind, MT_RC_COMM_TRANSFER);
    assert_string_equal(c->causes[1].name, "ar");
    assert_int_equal(c->causes[1].ns, 30 * US);
    assert_int_equal(c->n_ranks, 3);
    assert_int_equal(c->ranks[0].caused_ns, 30 * US);
    assert_int_equal(c->ranks[1].caused_ns, 300 * US);
    assert_int_equal(c->ranks[2].caused_ns, 0);
    assert_int_equal(c->n_by_annot, 2);
    assert_int_equal(c->by_annot[0].rank, 1);
    assert_string_equal(c->by_annot[0].name, "## forward ##");
    assert_int_equal(c->by_annot[0].kind, MT_RC_COMPUTE);
    assert_int_equal(c->by_annot[0].ns, 300 * US);
    assert_int_equal(c->by_annot[1].rank, 0);
    assert_string_equal(c->by_annot[1].name, "## backward ##");
    assert_int_equal(c->by_annot[1].kind, MT_RC_COMM_TRANSFER);
    assert_int_equal(c->by_annot[1].ns, 30 * US);
    assert_string_equal(mt_rc_kind_str(MT_RC_COMM_TRANSFER), "comm_transfer");
    assert_string_equal(mt_rc_kind_str(MT_RC_KIND_COUNT_), "unknown");
    mt_critpath_free(c);
}

/* Pipelines: every what-if replays the whole run. Two ranks, one stage
 * each, two steps (chunks), no syncs, no communication, own clocks:
 *  rank 0 (stage 0)  steps [0, 50], [50, 100]
 *    gemm  launch [0, 10]   GPU [20, 40]
 *    gemm  launch [50, 60]  GPU [70, 90]
 *  rank 1 (stage 1)  steps [0, 30], [30, 60]; its GPU queues
 *    opt   launch [0, 10]   GPU [20, 120]
 *    opt   launch [30, 40]  GPU [120, 220]  (after the first, on its stream)
 * Launch latency 10 on both. Job steps: 1 [0, 120] (time 120), 2 [30, 220]
 * (time 190); period 220 - 120 = 100. */
static void test_pipeline(void **state)
{
    (void)state;
    mt_an_gact_t g0[2] = {act(0, 10, 20, 40, GEMM, 0, MT_AN_COMPUTE), act(50, 60, 70, 90, GEMM, 0, MT_AN_COMPUTE)};
    mt_an_gact_t g1[2] = {act(0, 10, 20, 120, OPT, 0, MT_AN_COMPUTE), act(30, 40, 120, 220, OPT, 0, MT_AN_COMPUTE)};
    mt_an_step_t st0[2] = {{.step = 1, .cpu_start_ns = 0, .cpu_end_ns = 50 * US, .end_ns = 50 * US},
                           {.step = 2, .cpu_start_ns = 50 * US, .cpu_end_ns = 100 * US, .end_ns = 100 * US}};
    mt_an_step_t st1[2] = {{.step = 1, .cpu_start_ns = 0, .cpu_end_ns = 30 * US, .end_ns = 120 * US},
                           {.step = 2, .cpu_start_ns = 30 * US, .cpu_end_ns = 60 * US, .end_ns = 220 * US}};
    mt_rank_analysis_t a[2];
    memset(a, 0, sizeof a);
    mt_an_gact_t *g[2] = {g0, g1};
    mt_an_step_t *st[2] = {st0, st1};
    for (int r = 0; r < 2; r++) {
        a[r].rank = r;
        a[r].gacts = g[r];
        a[r].n_gacts = 2;
        a[r].steps = st[r];
        a[r].n_steps = 2;
        a[r].strings = pool;
        a[r].strings_len = sizeof pool;
    }
    const mt_rank_analysis_t *an[2] = {&a[0], &a[1]};
    const int32_t stage_ranks[2] = {0, 1};
    const size_t stage_first[3] = {0, 1, 2};
    mt_cp_request_t rq = {.warmup = 0, .pattern = "opt", .factor = 0.5};
    mt_critpath_t *c = NULL;
    /* Not a pipeline (no stages): each step from its measured start, the
     * other step at its measured times. opt x 0.5: step 1 [20, 70]: ends
     * max(50, 70) = 70, projected 70; step 2's opt after the first's
     * measured end, [120, 170]: ends max(100, 170) = 170, projected 140. */
    assert_int_equal(mt_critpath_run(&rq, an, 2, NULL, NULL, 0, NULL, 0, NULL, &c), MT_OK);
    assert_int_equal(c->n_steps, 2);
    assert_int_equal(c->steps[0].time_ns, 120 * US);
    assert_int_equal(c->steps[1].time_ns, 190 * US);
    assert_int_equal(c->steps[0].whatif_ns[MT_WI_PATTERN], 70 * US);
    assert_int_equal(c->steps[1].whatif_ns[MT_WI_PATTERN], 140 * US);
    assert_false(c->whatif[MT_WI_PATTERN].carried);
    assert_int_equal(c->n_stage_wi, 0);
    mt_critpath_free(c);
    /* A pipeline: one run. opt x 0.5: [20, 70], then [70, 120]; job step
     * ends 70 and max(100, 120) = 120: step times 70 and 120 - 30 = 90,
     * period 50 (the unchanged run replays the measured times exactly). */
    rq.stage_ranks = stage_ranks;
    rq.stage_first = stage_first;
    rq.n_stages = 2;
    c = NULL;
    assert_int_equal(mt_critpath_run(&rq, an, 2, NULL, NULL, 0, NULL, 0, NULL, &c), MT_OK);
    assert_int_equal(c->periods, 1);
    assert_int_equal(c->period_p50_ns, 100 * US);
    assert_int_equal(c->steps[0].whatif_ns[MT_WI_PATTERN], 70 * US);
    assert_int_equal(c->steps[1].whatif_ns[MT_WI_PATTERN], 90 * US);
    assert_true(c->whatif[MT_WI_PATTERN].carried);
    assert_int_equal(c->whatif[MT_WI_PATTERN].period_p50_ns, 50 * US);
    assert_int_equal(c->whatif[MT_WI_PATTERN].period_gain_ns, 50 * US);
    /* no launch gaps: nothing before its rank step's start. Rank 1's opt
     * [0, 100], then [100, 200]; rank 0's gemm [0, 20], [50, 70], each
     * launch holding 20, taken off the host: rank 0's steps end 30, 80.
     * Job steps end 100, 200: times 100, 170, period 100 (no gain). */
    assert_int_equal(c->steps[0].whatif_ns[MT_WI_LAUNCH], 100 * US);
    assert_int_equal(c->steps[1].whatif_ns[MT_WI_LAUNCH], 170 * US);
    assert_int_equal(c->whatif[MT_WI_LAUNCH].period_p50_ns, 100 * US);
    assert_int_equal(c->whatif[MT_WI_LAUNCH].period_gain_ns, 0);
    assert_false(c->whatif[MT_WI_COMM].run); /* no instance */
    /* stage 1 10 % faster: opt [20, 110], [110, 200]: period 90; stage 0
     * 10 % faster changes nothing that ends a step: 100 */
    assert_int_equal(c->n_stage_wi, 2);
    assert_int_equal(c->stage_wi[0].p50_ns, 100 * US);
    assert_int_equal(c->stage_wi[1].p50_ns, 90 * US);
    assert_int_equal(c->stage_wi[1].gain_ns, 10 * US);
    mt_critpath_free(c);
}

/* The straggler what-if on a pipeline scales a named straggler to the
 * median of its stage's other ranks. Stages {0, 1} and {2, 3}, one step,
 * no instance; every rank's gemm is [20, 60] but rank 3's [20, 100]
 * (twice as slow), its host ends at 30. Named rank 3: its gemm at rank 2's
 * 40 us, [20, 60]: the step 60 (it was 80 with the median of the stage's
 * two ranks, 60 us: half the slowdown kept; issue 38, 1F1B of 4 x 2). */
static void test_pipeline_straggler_stage(void **state)
{
    (void)state;
    mt_an_gact_t g[4][1];
    mt_an_step_t st[4][1];
    mt_rank_analysis_t a[4];
    const mt_rank_analysis_t *an[4];
    memset(a, 0, sizeof a);
    for (int r = 0; r < 4; r++) {
        g[r][0] = act(0, 10, 20, r == 3 ? 100 : 60, GEMM, 0, MT_AN_COMPUTE);
        st[r][0] = (mt_an_step_t){.step = 1, .cpu_start_ns = 0, .cpu_end_ns = 30 * US,
                                  .end_ns = (r == 3 ? 100 : 60) * US};
        a[r].rank = r;
        a[r].gacts = g[r];
        a[r].n_gacts = 1;
        a[r].steps = st[r];
        a[r].n_steps = 1;
        a[r].strings = pool;
        a[r].strings_len = sizeof pool;
        an[r] = &a[r];
    }
    const int32_t stage_ranks[4] = {0, 1, 2, 3}, strag[1] = {3};
    const size_t stage_first[3] = {0, 2, 4};
    mt_cp_request_t rq = {.warmup = 0, .stragglers = strag, .n_stragglers = 1, .stage_ranks = stage_ranks,
                          .stage_first = stage_first, .n_stages = 2};
    mt_critpath_t *c = NULL;
    assert_int_equal(mt_critpath_run(&rq, an, 4, NULL, NULL, 0, NULL, 0, NULL, &c), MT_OK);
    assert_non_null(c);
    assert_int_equal(c->n_steps, 1);
    assert_int_equal(c->steps[0].time_ns, 100 * US);
    assert_true(c->whatif[MT_WI_STRAGGLER].run);
    assert_int_equal(c->steps[0].whatif_ns[MT_WI_STRAGGLER], 60 * US);
    mt_critpath_free(c);
}

/* ---- fallback paths of the graph and the replay: one rank (rank 0),
 * one step (step 1, rank step [0, end]), no instances unless said ---- */

/* An activity without a launch (as a timeline's: launch -1). */
static mt_an_gact_t act_nl(int64_t s, int64_t e, mt_an_str_t name, uint32_t stream)
{
    mt_an_gact_t x = act(0, 0, s, e, name, stream, MT_AN_COMPUTE);
    x.launch_ns = x.launch_end_ns = -1;
    return x;
}

typedef struct one {
    mt_an_step_t st;
    mt_rank_analysis_t a;
} one_t;

static void one_build(one_t *o, mt_an_gact_t *g, size_t ng, mt_an_sync_t *s, size_t ns, int64_t cpu_start,
                      int64_t end)
{
    memset(o, 0, sizeof *o);
    o->st = (mt_an_step_t){.step = 1, .cpu_start_ns = cpu_start * US, .cpu_end_ns = end * US, .end_ns = end * US};
    o->a.rank = 0;
    o->a.gacts = g;
    o->a.n_gacts = ng;
    o->a.syncs = s;
    o->a.n_syncs = ns;
    o->a.steps = &o->st;
    o->a.n_steps = 1;
    o->a.strings = pool;
    o->a.strings_len = sizeof pool;
}

static mt_critpath_t *one_run(one_t *o)
{
    const mt_rank_analysis_t *an[1] = {&o->a};
    mt_cp_request_t rq = {.warmup = 0};
    mt_critpath_t *c = NULL;
    assert_int_equal(mt_critpath_run(&rq, an, 1, NULL, NULL, 0, NULL, 0, NULL, &c), MT_OK);
    assert_non_null(c);
    assert_int_equal(c->n_steps, 1);
    return c;
}

static int64_t path_len(const mt_cp_step_t *s)
{
    int64_t t = 0;
    for (int k = 0; k < MT_CP_KIND_COUNT_; k++)
        t += s->kind_ns[k];
    return t;
}

/* A zero-length activity (cp_run.c build_order: its end event, at its
 * start's time, comes before its start event). Rank 0, host [0, 100]:
 *    A gemm  stream 0  launch [10, 20]  GPU [30, 80]
 *    Z opt   stream 0  launch [30, 40]  GPU [80, 80]   (zero length)
 *    sync [50, 85] waits for Z (the latest end no later than 85 whose
 *    launch ended by 50): lag 85 - 80 = 5.
 * Events at 80: A's end, Z's end, Z's start (key, then type, then id).
 * Latency 10 (A, the one launch-bound activity). Replay: A [20 + 10 = 30,
 * 80], Z after A on its stream [80, 80], the sync 80 + 5 = 85 (as
 * measured), host end 100: replay 100, error 0. Path from 100: host 100
 * -> 85, sync lag 85 -> 80 (host), Z compute 0, bound by A (idle 0), A
 * compute 80 -> 30, launch 30 -> 20 (host), host 20 -> 0: compute 50,
 * host 15 + 5 + 10 + 20 = 50, length 100 = the step. */
static void test_zero_length(void **state)
{
    (void)state;
    mt_an_gact_t g[2] = {act(10, 20, 30, 80, GEMM, 0, MT_AN_COMPUTE), act(30, 40, 80, 80, OPT, 0, MT_AN_COMPUTE)};
    mt_an_sync_t s[1] = {{50 * US, 85 * US}};
    one_t o;
    one_build(&o, g, 2, s, 1, 0, 100);
    mt_critpath_t *c = one_run(&o);
    const mt_cp_step_t *t = &c->steps[0];
    assert_int_equal(t->time_ns, 100 * US);
    assert_int_equal(t->replay_ns, 100 * US);
    assert_true(c->replay_err_max == 0.0);
    assert_false(t->refused);
    assert_int_equal(t->kind_ns[MT_CP_COMPUTE], 50 * US);
    assert_int_equal(t->kind_ns[MT_CP_HOST], 50 * US);
    assert_int_equal(t->kind_ns[MT_CP_IDLE], 0);
    assert_int_equal(path_len(t), 100 * US);
    mt_critpath_free(c);
}

/* A member of an instance that ends before the instance's last arrival
 * (clock error: critpath.c end_late, cp_run.c build_order's re-sort of
 * the rank's end events by end_key). Two ranks, one all-reduce C:
 *  rank 0 (host [0, 420], sync [80, 400])
 *    A0 gemm  stream 0  launch [10, 20]  GPU [30, 130]
 *    C0 ar    stream 1  launch [40, 50]  GPU [130, 270]  ends 10 before C1 arrives
 *    B0 opt   stream 0  launch [60, 70]  GPU [130, 275]  after A0 on its stream
 *    D0 opt   stream 1  launch [70, 75]  GPU [270, 320]  after C0 on its stream
 *  rank 1 (host [0, 400], sync [80, 385]) as in test_path_and_replay:
 *    A1 [30, 280], C1 [280, 330], B1 [330, 380]
 * C: last arrival 280 (C1); C0's transfer 270 - 280 = -10, C1's 50.
 * Rank 0's end events by end_key (C0's is 280): A0 130, B0 275, C0 280,
 * D0 320, not their order by end (C0 270 before B0 275). C0 is bound by
 * A0 (the latest end on another stream by 130); rank 0's sync waits for
 * D0 (lag 400 - 320 = 80). Latency 10 on both ranks (A0, A1).
 * Replay: rank 0: A0 [30, 130], B0 [130, 275], C0 from 130 to max(280 -
 * 10, 130) = 270, D0 [270, 320], sync 320 + 80 = 400, host end 420;
 * rank 1 as measured (400). Step 420 (rank 0), replay 420, error 0.
 * Path from 420: host 420 -> 400, sync 400 -> 320 (host), D0 compute 320
 * -> 270, bound by C0 (idle 0); C0 ends before its last arrival, so the
 * walk cannot follow it there: C0 as comm 270 -> 130, bound by A0 (idle
 * 0), A0 compute 130 -> 30, launch 30 -> 20 (host), host 20 -> 0.
 * compute 50 + 100 = 150, comm 140, host 20 + 80 + 10 + 20 = 130, all on
 * rank 0: 420. */
/* The job of test_end_early, kept by the caller while its result lives
 * (the result borrows the analyses' names). */
typedef struct early {
    mt_an_gact_t g0[5], g1[3];
    mt_an_sync_t s0[1], s1[1];
    one_t o0, o1;
    mt_cinst_t rows[2];
    uint32_t first[2], members[2];
    uint8_t key[1], status[1];
    int32_t expected[1];
    mt_match_t m;
} early_t;

static mt_critpath_t *end_early_run(early_t *j, bool with_e0, const mt_cp_request_t *rq)
{
    memset(j, 0, sizeof *j);
    j->g0[0] = act(10, 20, 30, 130, GEMM, 0, MT_AN_COMPUTE);
    j->g0[1] = act(40, 50, 130, 270, AR, 1, MT_AN_COMM);
    j->g0[2] = act(60, 70, 130, 275, OPT, 0, MT_AN_COMPUTE);
    j->g0[3] = act(70, 75, 270, 320, OPT, 1, MT_AN_COMPUTE);
    j->g0[4] = act(76, 78, 275, 325, GEMM, 0, MT_AN_COMPUTE);
    j->g1[0] = act(10, 20, 30, 280, GEMM, 0, MT_AN_COMPUTE);
    j->g1[1] = act(40, 50, 280, 330, AR, 1, MT_AN_COMM);
    j->g1[2] = act(60, 70, 330, 380, OPT, 0, MT_AN_COMPUTE);
    j->s0[0] = (mt_an_sync_t){80 * US, 400 * US};
    j->s1[0] = (mt_an_sync_t){80 * US, 385 * US};
    one_build(&j->o0, j->g0, with_e0 ? 5 : 4, j->s0, 1, 0, 420);
    one_build(&j->o1, j->g1, 3, j->s1, 1, 0, 400);
    j->o1.a.rank = 1;
    j->rows[0] = (mt_cinst_t){.start_ns = 130 * US, .end_ns = 270 * US, .rank = 0, .step = 1};
    j->rows[1] = (mt_cinst_t){.start_ns = 280 * US, .end_ns = 330 * US, .rank = 1, .step = 1};
    j->first[1] = 2;
    j->members[1] = 1;
    j->status[0] = MT_INST_FULL;
    j->expected[0] = 2;
    j->m = (mt_match_t){.n_inst = 1, .first = j->first, .members = j->members, .key = j->key, .status = j->status,
                        .expected = j->expected};
    const mt_rank_analysis_t *an[2] = {&j->o0.a, &j->o1.a};
    mt_critpath_t *c = NULL;
    assert_int_equal(mt_critpath_run(rq, an, 2, NULL, NULL, 0, tu_crows(j->rows, 2), 2, &j->m, &c), MT_OK);
    assert_non_null(c);
    assert_int_equal(c->n_steps, 1);
    return c;
}

static void test_end_early(void **state)
{
    (void)state;
    mt_cp_request_t rq = {.warmup = 0};
    early_t j;
    mt_critpath_t *c = end_early_run(&j, false, &rq);
    const mt_cp_step_t *t = &c->steps[0];
    assert_int_equal(t->time_ns, 420 * US);
    assert_int_equal(t->end_rank, 0);
    assert_int_equal(t->replay_ns, 420 * US);
    assert_true(c->replay_err_max == 0.0);
    assert_int_equal(t->kind_ns[MT_CP_COMPUTE], 150 * US);
    assert_int_equal(t->kind_ns[MT_CP_COMM], 140 * US);
    assert_int_equal(t->kind_ns[MT_CP_HOST], 130 * US);
    assert_int_equal(t->kind_ns[MT_CP_IDLE], 0);
    assert_int_equal(c->ranks[0].path_ns, 420 * US);
    assert_int_equal(c->ranks[1].path_ns, 0);
    mt_critpath_free(c);
    /* The replay order seen from a what-if: rank 0 also has
     *    E0 gemm  stream 0  launch [76, 78]  GPU [275, 325]  after B0
     * and its sync now waits for E0 (lag 400 - 325 = 75); C0 is off the
     * path, the measured replay still exact (420). E0's start event (275)
     * comes after B0's end event (275) only if rank 0's ends are ordered
     * by end_key (by end, C0's 270 would hold B0's back behind its 280).
     * Pattern opt x 0.5: B0 [130, 202.5], E0 after it [202.5, 252.5],
     * sync 252.5 + 75 = 327.5 (-72.5): rank 0 ends 347.5; rank 1: B1
     * [330, 355], sync 360 (-25): ends 375. Replay 375: projected 420 +
     * 375 - 420 = 375, gain 45. (E0 reading B0's measured end 275 instead
     * would give 420, gain 0.) */
    rq = (mt_cp_request_t){.warmup = 0, .pattern = "opt", .factor = 0.5};
    c = end_early_run(&j, true, &rq);
    assert_int_equal(c->steps[0].replay_ns, 420 * US);
    assert_int_equal(c->whatif[MT_WI_PATTERN].p50_ns, 375 * US);
    assert_int_equal(c->whatif[MT_WI_PATTERN].gain_ns, 45 * US);
    mt_critpath_free(c);
}

/* Explicit dependencies (mt_rank_analysis_t.gdeps, as a timeline's job
 * gives) that hold a cycle: A waits for B and B for A. No syncs, no
 * launches; rank step [10, 90]:
 *    A gemm  stream 0  [10, 40]  gdeps {B}
 *    B opt   stream 1  [40, 90]  gdeps {A}
 * topo_order finds the cycle (cp_run.c build_order): the replay falls
 * back to time order, where a predecessor not replayed yet keeps its
 * measured end: A starts at B's measured end 90, [90, 120]; B after A,
 * [120, 170]. Replay 170 - 10 = 160 for a step of 80: error 100 %,
 * refused (no projection from it). The path from B's end 90: B compute
 * 90 -> 40, bound by A (idle 0), A compute 40 -> 10, the step's start,
 * where the walk ends (A's binding to B is never followed): compute 80 =
 * the step. */
static void test_dep_cycle(void **state)
{
    (void)state;
    mt_an_gact_t g[2] = {act_nl(10, 40, GEMM, 0), act_nl(40, 90, OPT, 1)};
    int32_t deps[4] = {1, -1, 0, -1}, gstep[2] = {0, 0};
    one_t o;
    one_build(&o, g, 2, NULL, 0, 10, 90);
    o.a.gdeps = deps;
    o.a.gstep = gstep;
    mt_critpath_t *c = one_run(&o);
    const mt_cp_step_t *t = &c->steps[0];
    assert_int_equal(t->time_ns, 80 * US);
    assert_int_equal(t->replay_ns, 160 * US);
    assert_true(t->refused);
    assert_int_equal(t->kind_ns[MT_CP_COMPUTE], 80 * US);
    assert_int_equal(path_len(t), 80 * US);
    mt_critpath_free(c);
}

/* ends_after's backward gallop (critpath.c): the latest end on another
 * stream no later than an activity's start, searched from the previous
 * activity's answer, which goes back when the activities are not given
 * in start order. Rank 0, no launches, no syncs, rank step [0, 250]; in
 * the order given:
 *    P   gemm  stream 0  [10, 20]
 *    F1..F5 opt streams 2..6, each [20, 190 + 10 k] (k = 1..5)
 *    Z   opt   stream 7  [240, 250]
 *    Q   gemm  stream 1  [20, 100]   (last, out of start order)
 * By end: P 20, Q 100, F1 200 .. F5 240, Z 250. Z's search (240) ends at
 * 7; Q's (20) from there goes back: 240, 230, 210 are after 20, so the
 * answer is in [0, 3): 1 (P, the one end <= 20). Each F and Q is bound by
 * P (ends 20), Z by F5 (ends 240), P by nothing (its start). Replay:
 * exactly as measured (Q [20, 100]): 250, error 0. (With Q bound to any
 * F instead, Q would replay from 200 on and end after 250.) Path from Z's
 * end 250: Z compute 10, F5 compute 240 -> 20, P compute 20 -> 10, idle
 * 10 -> 0: compute 240, idle 10. */
static void test_search_back(void **state)
{
    (void)state;
    mt_an_gact_t g[8];
    g[0] = act_nl(10, 20, GEMM, 0);
    for (int k = 1; k <= 5; k++)
        g[k] = act_nl(20, 190 + 10 * k, OPT, (uint32_t)(k + 1));
    g[6] = act_nl(240, 250, OPT, 7);
    g[7] = act_nl(20, 100, GEMM, 1);
    one_t o;
    one_build(&o, g, 8, NULL, 0, 0, 250);
    mt_critpath_t *c = one_run(&o);
    const mt_cp_step_t *t = &c->steps[0];
    assert_int_equal(t->time_ns, 250 * US);
    assert_int_equal(t->replay_ns, 250 * US);
    assert_true(c->replay_err_max == 0.0);
    assert_int_equal(t->kind_ns[MT_CP_COMPUTE], 240 * US);
    assert_int_equal(t->kind_ns[MT_CP_IDLE], 10 * US);
    assert_int_equal(path_len(t), 250 * US);
    mt_critpath_free(c);
}

/* A wait a Kineto trace names (analysis.h "waits": a cuda_sync Stream
 * Wait Event record, gdeps with MT_AN_GDEP_INFER for every other
 * activity) against the inference. Rank 0, no launches, no syncs, host
 * range [10, 65], rank step [10, 100]:
 *    K1 gemm  stream 0  [10, 50]
 *    K4 opt   stream 2  [20, 58]
 *    N  ar    stream 1  [60, 100]  (communication)
 * Inferred: N's start is bound by the latest end on another stream no
 * later than 61, K4's 58: replay N [58, 98], 88 for a step of 90 (the
 * host's end 65 is before it); one
 * wait inferred. Named N <- K1 (the record's event was recorded after
 * K1): N replays from K1's end, [50, 90], replay 80; one wait read from
 * the trace, none inferred (K1 and K4 start the step: bound by nothing). */
static void test_named_wait(void **state)
{
    (void)state;
    for (int named = 0; named < 2; named++) {
        mt_an_gact_t g[3] = {act_nl(10, 50, GEMM, 0), act_nl(20, 58, OPT, 2), act_nl(60, 100, AR, 1)};
        g[2].cls = MT_AN_COMM;
        int32_t deps[6] = {MT_AN_GDEP_INFER, -1, MT_AN_GDEP_INFER, -1, 0, -1};
        one_t o;
        one_build(&o, g, 3, NULL, 0, 10, 100);
        o.st.cpu_end_ns = 65 * US; /* the host's range [10, 65] ends before the GPU's work */
        if (named) {
            o.a.gdeps = deps;
            o.a.swaits_named = 1;
        }
        mt_critpath_t *c = one_run(&o);
        const mt_cp_step_t *t = &c->steps[0];
        assert_int_equal(t->time_ns, 90 * US);
        assert_int_equal(t->replay_ns, (named ? 80 : 88) * US);
        assert_int_equal(c->waits_explicit, named ? 1 : 0);
        assert_int_equal(c->waits_inferred, named ? 0 : 1);
        mt_critpath_free(c);
    }
}

/* The check (critpath.h "check"): the straggler what-if against the root
 * causes and the path. In the fixture rank 1's slow gemm is what the
 * what-if changes: it caused all the waiting and the what-if gains 75 of
 * 420 (17.9 %): the check runs and holds. Then rank 1 is late for another
 * reason, a host call of its own the model keeps as measured (a CPU-bound
 * sync [0, 155] before its launches; gemm 100 like rank 0's):
 *  rank 0 (host [0, 400], sync [80, 382])
 *    A0 gemm  stream 0  launch [10, 20]    GPU [30, 130]
 *    C0 ar    stream 1  launch [40, 50]    GPU [130, 327]  waits for C1 (277)
 *    B0 opt   stream 0  launch [60, 70]    GPU [327, 377]  after C0
 *  rank 1 (host [0, 400], syncs [0, 155] CPU-bound and [190, 382])
 *    A1 gemm  stream 0  launch [156, 157]  GPU [177, 277]
 *    C1 ar    stream 1  launch [170, 175]  GPU [277, 327]  after A1
 *    B1 opt   stream 0  launch [180, 185]  GPU [327, 377]  after C1
 * Rank 0 waits 147 at C0, all of it caused by rank 1; the path from 400
 * runs back through C's transfer to C1's arrival 277 and down rank 1's
 * A1, launch and sync to 0: 277 of 400 on rank 1 (69 %). Rank 1's first
 * launch ends 157 after its step's start, rank 0's 20: late by 68.5 over
 * the median, but its host is busy in the sync until 155 and a pause
 * needs a free stretch of 10 us: none; its gemm is at the median speed:
 * the what-if gains nothing, and the check fails. */
typedef struct late_job {
    mt_an_gact_t g0[3], g1[3];
    mt_an_sync_t s0[1], s1[2];
    mt_an_step_t st0[1], st1[1];
    mt_rank_analysis_t a0, a1;
    mt_cinst_t rows[2];
    uint32_t first[2], members[2];
    uint8_t key[1], status[1];
    int32_t expected[1];
    mt_match_t m;
} late_job_t;

static void test_check(void **state)
{
    (void)state;
    fixture_t f;
    build(&f);
    const int32_t strag[] = {1};
    mt_cp_request_t rq = {.warmup = 0, .stragglers = strag, .n_stragglers = 1};
    mt_critpath_t *c = run(&f, &rq);
    assert_true(c->check_run);
    assert_int_equal(c->check_rank, 1);
    assert_true(c->check_caused >= 0.5);
    assert_true(c->check_gain > 0.17 && c->check_gain < 0.18);
    assert_false(c->check_failed);
    mt_critpath_free(c);

    late_job_t j;
    memset(&j, 0, sizeof j);
    j.g0[0] = act(10, 20, 30, 130, GEMM, 0, MT_AN_COMPUTE);
    j.g0[1] = act(40, 50, 130, 327, AR, 1, MT_AN_COMM);
    j.g0[2] = act(60, 70, 327, 377, OPT, 0, MT_AN_COMPUTE);
    j.g1[0] = act(156, 157, 177, 277, GEMM, 0, MT_AN_COMPUTE);
    j.g1[1] = act(170, 175, 277, 327, AR, 1, MT_AN_COMM);
    j.g1[2] = act(180, 185, 327, 377, OPT, 0, MT_AN_COMPUTE);
    j.s0[0] = (mt_an_sync_t){80 * US, 382 * US};
    j.s1[0] = (mt_an_sync_t){0, 155 * US};
    j.s1[1] = (mt_an_sync_t){190 * US, 382 * US};
    j.st0[0] = (mt_an_step_t){.step = 7, .cpu_start_ns = 0, .cpu_end_ns = 400 * US, .end_ns = 400 * US};
    j.st1[0] = j.st0[0];
    mt_rank_analysis_t *a[2] = {&j.a0, &j.a1};
    mt_an_gact_t *g[2] = {j.g0, j.g1};
    mt_an_sync_t *sy[2] = {j.s0, j.s1};
    mt_an_step_t *st[2] = {j.st0, j.st1};
    for (int r = 0; r < 2; r++) {
        a[r]->rank = r;
        a[r]->gacts = g[r];
        a[r]->n_gacts = 3;
        a[r]->syncs = sy[r];
        a[r]->n_syncs = r ? 2 : 1;
        a[r]->steps = st[r];
        a[r]->n_steps = 1;
        a[r]->strings = pool;
        a[r]->strings_len = sizeof pool;
        j.rows[r] = (mt_cinst_t){.start_ns = g[r][1].start_ns, .end_ns = g[r][1].end_ns, .rank = r, .step = 7};
        j.members[r] = (uint32_t)r;
    }
    j.first[1] = 2;
    j.status[0] = MT_INST_FULL;
    j.expected[0] = 2;
    j.m = (mt_match_t){.n_inst = 1, .first = j.first, .members = j.members, .key = j.key, .status = j.status,
                       .expected = j.expected};
    const mt_rank_analysis_t *an[2] = {&j.a0, &j.a1};
    c = NULL;
    assert_int_equal(mt_critpath_run(&rq, an, 2, NULL, NULL, 0, tu_crows(j.rows, 2), 2, &j.m, &c), MT_OK);
    assert_non_null(c);
    assert_int_equal(c->steps[0].replay_ns, 400 * US);
    assert_int_equal(c->wait_ns, 147 * US);
    assert_true(c->check_run);
    assert_int_equal(c->check_rank, 1);
    assert_true(c->check_caused >= 0.99);
    assert_true(c->check_path > 0.69 && c->check_path < 0.70);
    assert_true(c->check_gain < 0.02);
    assert_true(c->check_failed);
    mt_critpath_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_path_and_replay),
        cmocka_unit_test(test_node_order),
        cmocka_unit_test(test_strip),
        cmocka_unit_test(test_what_ifs),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_propagation),
        cmocka_unit_test(test_pipeline),
        cmocka_unit_test(test_pipeline_straggler_stage),
        cmocka_unit_test(test_zero_length),
        cmocka_unit_test(test_end_early),
        cmocka_unit_test(test_dep_cycle),
        cmocka_unit_test(test_search_back), cmocka_unit_test(test_named_wait),
        cmocka_unit_test(test_check),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
