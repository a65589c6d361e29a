/* The replay of one process's ranks in supersteps (src/cross/cp_part.c)
 * against the one-process sweeps, to the bit (cp_part_check.c: every sweep
 * mt_critpath_run makes, its ranks on 2 and 3 virtual processes dealt in
 * turn and in blocks): the OSDI artifact's job ST (DP 2 x PP 4 from its
 * timeline, ../shared/corpus/ByteDance-Seed__StragglerAnalysis) replayed
 * steps apart and, as a 4-stage pipeline, carried (its chunks wait for one
 * another: the rounds chain), with a straggler named (the fourth lane).
 * The program built with the same check runs on the generated, real and
 * slow-GPU jobs (tests/CMakeLists.txt, cp_part_jobs). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cp_part_check.h"
#include "test_util.h"

#include "mergetrace/collectives.h"
#include "mergetrace/critpath.h"
#include "mergetrace/timeline.h"
#include "mergetrace/tljob.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ST_PATH MT_CORPUS_DIR "/ByteDance-Seed__StragglerAnalysis/data/timeline-ST.json.gz"

static mt_tl_job_t *st_job(mt_timeline_t **tl)
{
    mt_error_t err;
    mt_error_clear(&err);
    assert_int_equal(mt_timeline_load(ST_PATH, NULL, tl, &err), MT_OK);
    mt_tl_job_t *j = NULL;
    assert_int_equal(mt_tl_job_build(*tl, &j), MT_OK);
    return j;
}

static mt_critpath_t *run(const mt_tl_job_t *j, const mt_cp_request_t *rq)
{
    mt_crow_t *crows = malloc((j->n_rows ? j->n_rows : 1) * sizeof *crows);
    assert_non_null(crows);
    for (size_t i = 0; i < j->n_rows; i++)
        crows[i] = mt_crow_of(&j->rows[i]);
    mt_critpath_t *c = NULL;
    assert_int_equal(mt_critpath_run(rq, (const mt_rank_analysis_t *const *)j->an, j->n_an, NULL, NULL, 0, crows,
                                     j->n_rows, j->match, &c),
                     MT_OK);
    free(crows);
    return c;
}

/* Steps apart: the measured replay with "comm", "launch" and the
 * straggler's lanes beside it (cp_replay3), and the ideal what-if's
 * pinned runs. */
static void test_st_steps(void **state)
{
    (void)state;
    if (access(ST_PATH, R_OK) != 0)
        skip();
    mt_timeline_t *tl = NULL;
    mt_tl_job_t *j = st_job(&tl);
    memset(&cp_part_stats, 0, sizeof cp_part_stats);
    cp_part_check_install();
    static const int32_t strag[1] = {7};
    mt_cp_request_t rq = {.stragglers = strag, .n_stragglers = 1};
    mt_critpath_t *c = run(j, &rq);
    cp_part_check_remove();
    cp_part_check_print(stdout, "ST steps apart");
    assert_int_equal(cp_part_stats.failures, 0);
    /* 4 lanes x 4 layouts at least, every value compared */
    assert_true(cp_part_stats.sweeps >= 16);
    assert_true(cp_part_stats.values > 100000);
    /* the rounds (each replay's equal to its longest chain of shared
     * instances, cp_part_check.c): a step's chain (ST's 24 sends and
     * receives a step between stages; 19 a rank at most), far below one
     * per instance of the run */
    printf("  rounds %llu, the design's estimate %llu\n", (unsigned long long)cp_part_stats.rounds_max[0],
           (unsigned long long)cp_part_stats.est_step[0]);
    assert_true(cp_part_stats.rounds_max[0] >= cp_part_stats.est_step[0]);
    assert_true(cp_part_stats.rounds_max[0] < 2 * cp_part_stats.est_step[0]);
    /* each process replays the graph of its own ranks (cp_part_cut): at
     * 2 processes about half the whole job's (its instances held on
     * both), at 3 at most the 3 largest of the 8 ranks' share */
    assert_true(cp_part_stats.share_max[0] > 0.45 && cp_part_stats.share_max[0] < 0.6);
    assert_true(cp_part_stats.share_max[1] < 0.5);
    /* and each process's graph built again from its own ranks' analyses
     * and the job-wide inputs (cp_part_build): equal to the cut one and
     * replayed in its place, on every process of every layout (10 a
     * sweep: 2 + 2 + 3 + 3) */
    assert_true(cp_part_stats.graphs_built >= 10 && cp_part_stats.graphs_built % 10 == 0);
    assert_true(cp_part_stats.build_values > 50000);
    mt_critpath_free(c);
    mt_tl_job_free(j);
    mt_timeline_free(tl);
}

/* Carried: the 4 stages (ranks by stage, j->coords) as a pipeline: every
 * replay one run whose shifts carry from step to step, the rounds the
 * carried chain. */
static void test_st_carried(void **state)
{
    (void)state;
    if (access(ST_PATH, R_OK) != 0)
        skip();
    mt_timeline_t *tl = NULL;
    mt_tl_job_t *j = st_job(&tl);
    int32_t ranks[8];
    size_t first[5] = {0}, n = 0;
    for (int s = 0; s < 4; s++) {
        for (size_t r = 0; r < j->n_an; r++)
            if (j->coords[r].stage == s)
                ranks[n++] = j->coords[r].rank;
        first[s + 1] = n;
    }
    assert_int_equal(n, 8);
    memset(&cp_part_stats, 0, sizeof cp_part_stats);
    cp_part_check_install();
    mt_cp_request_t rq = {.stage_ranks = ranks, .stage_first = first, .n_stages = 4};
    mt_critpath_t *c = run(j, &rq);
    cp_part_check_remove();
    cp_part_check_print(stdout, "ST carried");
    assert_int_equal(cp_part_stats.failures, 0);
    assert_true(cp_part_stats.sweeps >= 4);
    /* carried: the chain crosses the steps (32 of them), about the most
     * shared instances one rank meets in the run */
    printf("  rounds %llu, the design's estimate %llu\n", (unsigned long long)cp_part_stats.rounds_max[1],
           (unsigned long long)cp_part_stats.est_run[1]);
    assert_true(cp_part_stats.rounds_max[1] >= cp_part_stats.est_run[1]);
    assert_true(cp_part_stats.rounds_max[1] < 2 * cp_part_stats.est_run[1]);
    assert_true(cp_part_stats.rounds_max[1] > 16 * cp_part_stats.rounds_max[0]);
    assert_true(cp_part_stats.graphs_built >= 10 && cp_part_stats.graphs_built % 10 == 0);
    mt_critpath_free(c);
    mt_tl_job_free(j);
    mt_timeline_free(tl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_st_steps),
        cmocka_unit_test(test_st_carried),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
