/* The pipeline's stages from the command line (src/cross/stages.c): --stage
 * annotation stages, leaders moved to loaded ranks, which option wins, and
 * the job's pipeline step (mt_pp_run) on hand-built per-rank results. Every
 * expected value is worked out in the comments. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mergetrace/analysis.h"
#include "mergetrace/pipeline.h"
#include "test_util.h"

#define UNTOUCHED "untouched"

static void check_stages(const mt_pp_stages_t *s, size_t n, const size_t *first, const int32_t *ranks)
{
    assert_int_equal(s->n, n);
    for (size_t i = 0; i <= n; i++)
        assert_int_equal(s->first[i], first[i]);
    for (size_t i = 0; i < first[n]; i++)
        assert_int_equal(s->ranks[i], ranks[i]);
}

/* --stage embed=...@4-5 --stage body=... with ranks 0, 1, 3 loaded:
 *   embed: its own ranks 4, 5 (loaded or not: leaders are moved later),
 *   body: every loaded rank 0, 1, 3;
 *   first = {0, 2, 5}, markers 1 and 2 (0 is the chunk marker). */
static void test_annotations(void **state)
{
    (void)state;
    const int32_t loaded[] = {0, 1, 3};
    const int32_t embed[] = {4, 5};
    const char *names[] = {"embed", "body"};
    const int32_t *of[] = {embed, NULL};
    const size_t n_of[] = {2, 0};
    mt_pp_stages_t s;
    assert_int_equal(mt_pp_stages_annotations(names, of, n_of, 2, loaded, 3, &s), MT_OK);
    check_stages(&s, 2, (const size_t[]){0, 2, 5}, (const int32_t[]){4, 5, 0, 1, 3});
    assert_int_equal(s.source, MT_PP_FROM_ANNOTATIONS);
    assert_int_equal(s.marker[0], 1);
    assert_int_equal(s.marker[1], 2);
    assert_string_equal(s.name[0], "embed");
    assert_string_equal(s.name[1], "body");
    mt_pp_stages_free(&s);

    /* No rank sets at all: every stage has every loaded rank. A name is
     * cut to 31 bytes: "a_name_that_is_longer_than_31_bytes" keeps
     * "a_name_that_is_longer_than_31_b". */
    const char *long_name[] = {"a_name_that_is_longer_than_31_bytes"};
    assert_int_equal(mt_pp_stages_annotations(long_name, NULL, NULL, 1, loaded, 3, &s), MT_OK);
    check_stages(&s, 1, (const size_t[]){0, 3}, loaded);
    assert_string_equal(s.name[0], "a_name_that_is_longer_than_31_b");
    mt_pp_stages_free(&s);

    assert_int_equal(mt_pp_stages_annotations(NULL, NULL, NULL, 0, loaded, 3, &s), MT_OK);
    assert_int_equal(s.n, 0);
    mt_pp_stages_free(&s);
}

/* Stages given as blocks over ranks 0..7, some ranks not loaded. */
static void test_lead_loaded(void **state)
{
    (void)state;
    mt_pp_stages_t s;
    char note[256];
    mt_error_t err;
    mt_error_clear(&err);

    /* "0-1,2-3,4-5,6-7", rank 2 not loaded: stage1 {2, 3} loses its
     * leading rank 2 and is led by 3; the ranks after it move up one:
     * ranks {0, 1, 3, 4, 5, 6, 7}, first {0, 2, 3, 5, 7}; leaders 0, 3, 4, 6. */
    const int32_t no2[] = {0, 1, 3, 4, 5, 6, 7};
    assert_int_equal(mt_pp_stages_parse("0-1,2-3,4-5,6-7", &s, &err), MT_OK);
    strcpy(note, UNTOUCHED);
    assert_true(mt_pp_stages_lead_loaded(&s, no2, 7, note, sizeof note));
    check_stages(&s, 4, (const size_t[]){0, 2, 3, 5, 7}, no2);
    assert_string_equal(note, "1 rank of stage1 had no trace: the stage is led by rank 3");
    mt_pp_stages_free(&s);

    /* "0-3,4-7", rank 2 not loaded: 2 is not a leader, so nothing moves
     * (it stays in stage0 behind 0 and 1) and there is nothing to say. */
    assert_int_equal(mt_pp_stages_parse("0-3,4-7", &s, &err), MT_OK);
    strcpy(note, UNTOUCHED);
    assert_true(mt_pp_stages_lead_loaded(&s, no2, 7, note, sizeof note));
    check_stages(&s, 2, (const size_t[]){0, 4, 8}, (const int32_t[]){0, 1, 2, 3, 4, 5, 6, 7});
    assert_string_equal(note, UNTOUCHED);
    mt_pp_stages_free(&s);

    /* "0-3,4-7", ranks 0 and 1 not loaded: stage0 is {2, 3} led by 2,
     * first {0, 2, 6}; leaders 2 and 4. */
    const int32_t from2[] = {2, 3, 4, 5, 6, 7};
    assert_int_equal(mt_pp_stages_parse("0-3,4-7", &s, &err), MT_OK);
    assert_true(mt_pp_stages_lead_loaded(&s, from2, 6, note, sizeof note));
    check_stages(&s, 2, (const size_t[]){0, 2, 6}, from2);
    assert_string_equal(note, "2 ranks of stage0 had no trace: the stage is led by rank 2");
    mt_pp_stages_free(&s);

    /* "0-1,2-3" with 1 and 3 loaded: both stages move ({1}, {3}, first
     * {0, 1, 2}); the note is the last stage's. */
    const int32_t odd[] = {1, 3};
    assert_int_equal(mt_pp_stages_parse("0-1,2-3", &s, &err), MT_OK);
    assert_true(mt_pp_stages_lead_loaded(&s, odd, 2, note, sizeof note));
    check_stages(&s, 2, (const size_t[]){0, 1, 2}, odd);
    assert_string_equal(note, "1 rank of stage1 had no trace: the stage is led by rank 3");
    mt_pp_stages_free(&s);

    /* "0-1,2-3" with 0 and 1 loaded: stage1 has no loaded rank at all. */
    const int32_t low[] = {0, 1};
    assert_int_equal(mt_pp_stages_parse("0-1,2-3", &s, &err), MT_OK);
    assert_false(mt_pp_stages_lead_loaded(&s, low, 2, note, sizeof note));
    assert_string_equal(note, "no rank of stage1 was loaded: no pipeline section");
    mt_pp_stages_free(&s);
}

/* Which option wins, and when there is no pipeline. */
static void test_choose(void **state)
{
    (void)state;
    mt_pp_stages_t s;
    char note[256];
    const int32_t no2[] = {0, 1, 3, 4, 5, 6, 7};

    /* --stage beside --pp-stages: the one annotation stage (every loaded
     * rank, marker 1) is measured, and the note says --pp-stages lost. */
    const char *names[] = {"fwd"};
    mt_pp_request_t rq = {.n_stage = 1, .stage_name = names, .pp_stages = "0-3,4-7", .warmup = 1};
    strcpy(note, UNTOUCHED);
    assert_int_equal(mt_pp_stages_choose(&rq, no2, 7, NULL, 0, NULL, 0, &s, note, sizeof note), MT_OK);
    assert_int_equal(s.source, MT_PP_FROM_ANNOTATIONS);
    check_stages(&s, 1, (const size_t[]){0, 7}, no2);
    assert_string_equal(note, "both --stage and --pp-stages were given: the OverlapScore uses the --stage "
                              "annotation stages");
    mt_pp_stages_free(&s);

    /* --stage fwd=...@8-9 with ranks 0..7 loaded but 2: no leader. */
    const int32_t r89[] = {8, 9};
    const int32_t *of[] = {r89};
    const size_t n_of[] = {2};
    rq = (mt_pp_request_t){.n_stage = 1, .stage_name = names, .stage_ranks = of, .stage_n_ranks = n_of};
    assert_int_equal(mt_pp_stages_choose(&rq, no2, 7, NULL, 0, NULL, 0, &s, note, sizeof note), MT_OK);
    assert_int_equal(s.n, 0);
    assert_string_equal(note, "no rank of fwd was loaded: no pipeline section");

    /* --pp-stages over ranks 0..7 without rank 2: as in test_lead_loaded. */
    rq = (mt_pp_request_t){.pp_stages = "0-1,2-3,4-5,6-7", .pp_blocks = 2};
    assert_int_equal(mt_pp_stages_choose(&rq, no2, 7, NULL, 0, NULL, 0, &s, note, sizeof note), MT_OK);
    assert_int_equal(s.source, MT_PP_FROM_FLAG);
    check_stages(&s, 4, (const size_t[]){0, 2, 3, 5, 7}, no2);
    assert_string_equal(note, "1 rank of stage1 had no trace: the stage is led by rank 3");
    mt_pp_stages_free(&s);

    /* --pp 3 over the 7 loaded ranks does not divide: no pipeline, said. */
    rq = (mt_pp_request_t){.pp_blocks = 3};
    assert_int_equal(mt_pp_stages_choose(&rq, no2, 7, NULL, 0, NULL, 0, &s, note, sizeof note), MT_OK);
    assert_int_equal(s.n, 0);
    assert_string_equal(note, "--pp 3: needs 2 or more stages that divide the 7 ranks present into equal blocks: "
                              "no pipeline section");

    /* --pp 2 is over the loaded ranks, so leaders are always loaded: with
     * 0, 1, 3, 4, 5, 6, 7, 9 the blocks are {0, 1, 3, 4} and {5, 6, 7, 9}. */
    const int32_t eight[] = {0, 1, 3, 4, 5, 6, 7, 9};
    rq = (mt_pp_request_t){.pp_blocks = 2};
    strcpy(note, UNTOUCHED);
    assert_int_equal(mt_pp_stages_choose(&rq, eight, 8, NULL, 0, NULL, 0, &s, note, sizeof note), MT_OK);
    assert_int_equal(s.source, MT_PP_FROM_BLOCKS);
    check_stages(&s, 2, (const size_t[]){0, 4, 8}, eight);
    assert_string_equal(note, UNTOUCHED);
    mt_pp_stages_free(&s);

    /* A --pp-stages list that does not parse is an error (options.c checks
     * it first, so the program never gets here with one). */
    rq = (mt_pp_request_t){.pp_stages = "0-3"};
    assert_int_equal(mt_pp_stages_choose(&rq, no2, 7, NULL, 0, NULL, 0, &s, note, sizeof note), MT_ERR_USAGE);
    assert_null(s.ranks);

    /* Nothing asked and no point-to-point rows: no pipeline, nothing said. */
    rq = (mt_pp_request_t){0};
    strcpy(note, UNTOUCHED);
    assert_int_equal(mt_pp_stages_choose(&rq, no2, 7, NULL, 0, NULL, 0, &s, note, sizeof note), MT_OK);
    assert_int_equal(s.n, 0);
    assert_string_equal(note, UNTOUCHED);
}

static mt_rank_analysis_t *fake(int32_t rank, const mt_pp_chunk_t *c, size_t n)
{
    mt_rank_analysis_t *a = calloc(1, sizeof *a);
    assert_non_null(a);
    a->rank = rank;
    a->chunks = malloc(n * sizeof *c);
    assert_non_null(a->chunks);
    memcpy(a->chunks, c, n * sizeof *c);
    a->n_chunks = n;
    return a;
}

static mt_pp_chunk_t ch(int64_t key, uint32_t ord, int64_t busy, int64_t first, int64_t last)
{
    return (mt_pp_chunk_t){.key = key, .busy_ns = busy, .first_ns = first, .last_ns = last, .ordinal = ord, .acts = 1};
}

static mt_cinst_t p2p_row(int32_t rank, int kind, int64_t peer, int64_t start)
{
    mt_cinst_t r;
    memset(&r, 0, sizeof r);
    r.rank = rank;
    r.kind = (uint8_t)kind;
    r.peer = peer;
    r.start_ns = start;
    r.end_ns = start + 10;
    return r;
}

/* Nothing asked, and send/recv rows that name no peer (an old trace): rank
 * 0's 4 sends end within 1 us of rank 1's 4 receives, so the stages are
 * {0} -> {1} from their ends, and the note says so; with --pp-stages the
 * rows are not read and nothing is said. */
static void test_choose_blind(void **state)
{
    (void)state;
    mt_cinst_t rows[8];
    for (int k = 0; k < 4; k++) {
        rows[2 * k] = p2p_row(0, MT_COLLK_SEND, -1, 1000000 * (k + 1));
        rows[2 * k + 1] = p2p_row(1, MT_COLLK_RECV, -1, 1000000 * (k + 1) - 50);
        rows[2 * k + 1].end_ns += 1000;
    }
    const int32_t both[] = {0, 1};
    mt_pp_request_t rq = {0};
    mt_pp_stages_t s;
    char note[512];
    strcpy(note, UNTOUCHED);
    assert_int_equal(mt_pp_stages_choose(&rq, both, 2, tu_crows(rows, 8), 8, NULL, 0, &s, note, sizeof note), MT_OK);
    assert_int_equal(s.source, MT_PP_FROM_P2P_ENDS);
    check_stages(&s, 2, (const size_t[]){0, 1, 2}, both);
    assert_string_equal(note, "stages inferred from the ends of 8 send/recv kernels that name no peer (no collective "
                              "metadata): 4 of 4 sends and 4 of 4 receives end with one on another rank; --pp-stages "
                              "overrides");
    mt_pp_stages_free(&s);
    rq = (mt_pp_request_t){.pp_stages = "1,0"};
    strcpy(note, UNTOUCHED);
    assert_int_equal(mt_pp_stages_choose(&rq, both, 2, tu_crows(rows, 8), 8, NULL, 0, &s, note, sizeof note), MT_OK);
    assert_int_equal(s.source, MT_PP_FROM_FLAG);
    check_stages(&s, 2, (const size_t[]){0, 1, 2}, (const int32_t[]){1, 0});
    assert_string_equal(note, UNTOUCHED);
    mt_pp_stages_free(&s);
}

/* --pp-stages 0-1,2-3 with rank 0 not loaded: rank 1 leads stage0, rank 2
 * stage1. Chunks #1 and #2 (ns, own clocks):
 *   rank 1: busy 100, 100; work [0,100], [200,300]
 *   rank 2: busy 50, 50;   work [100,150], [300,350]
 *   rank 3: busy 60, 60;   work [100,160], [300,360]
 * emit = last end of stage1's leader = 150, 350; period(#2) = 200;
 * stage_max of stage1 = 60 (rank 3); latency(#2) = 350 - 200 = 150.
 * Left with rank 0 as its leader, stage0 would have no result: no chunk. */
static void test_run(void **state)
{
    (void)state;
    mt_pp_chunk_t c1[] = {ch(1, 0, 100, 0, 100), ch(2, 1, 100, 200, 300)};
    mt_pp_chunk_t c2[] = {ch(1, 0, 50, 100, 150), ch(2, 1, 50, 300, 350)};
    mt_pp_chunk_t c3[] = {ch(1, 0, 60, 100, 160), ch(2, 1, 60, 300, 360)};
    mt_rank_analysis_t *an[3] = {fake(1, c1, 2), fake(2, c2, 2), fake(3, c3, 2)};
    const int32_t loaded[] = {1, 2, 3};
    mt_pp_request_t rq = {.pp_stages = "0-1,2-3", .warmup = 1};
    mt_pipeline_t *p = NULL;
    char note[256] = UNTOUCHED;
    assert_int_equal(mt_pp_run(&rq, loaded, 3, NULL, 0, NULL, 0, (const mt_rank_analysis_t *const *)an, 3, &p, note,
                               sizeof note),
                     MT_OK);
    assert_non_null(p);
    assert_string_equal(note, "1 rank of stage0 had no trace: the stage is led by rank 1");
    check_stages(&p->stages, 2, (const size_t[]){0, 1, 3}, loaded);
    assert_int_equal(p->stages.source, MT_PP_FROM_FLAG);
    assert_int_equal(p->n_chunks, 2);
    assert_int_equal(p->emit_ns[0], 150);
    assert_int_equal(p->emit_ns[1], 350);
    assert_int_equal(p->period_ns[1], 200);
    assert_int_equal(p->stage_max_ns[1 * 2 + 1], 60);
    assert_int_equal(p->latency_ns[1], 150);
    mt_pipeline_free(p);

    /* Ranks 0 and 1 exchanged data (0 sends, 1 receives): two inferred
     * stages, but no chunk of rank 0: no pipeline, and a note instead. */
    mt_cinst_t rows[] = {p2p_row(0, MT_COLLK_SEND, 1, 100), p2p_row(1, MT_COLLK_RECV, 0, 100)};
    const int32_t both[] = {0, 1};
    rq = (mt_pp_request_t){.warmup = 1};
    strcpy(note, UNTOUCHED);
    assert_int_equal(mt_pp_run(&rq, both, 2, tu_crows(rows, 2), 2, NULL, 0, (const mt_rank_analysis_t *const *)an, 1, &p, note,
                               sizeof note),
                     MT_OK);
    assert_null(p);
    assert_string_equal(note, "point-to-point traffic suggests 2 stages, but no chunk marker (ProfilerStep#N, or "
                              "--chunk) is on every stage leader: no pipeline numbers");

    /* Stages from a flag keep their section even without chunks. */
    rq = (mt_pp_request_t){.pp_stages = "0,1", .warmup = 1};
    strcpy(note, UNTOUCHED);
    assert_int_equal(mt_pp_run(&rq, both, 2, NULL, 0, NULL, 0, NULL, 0, &p, note, sizeof note), MT_OK);
    assert_non_null(p);
    assert_int_equal(p->n_chunks, 0);
    assert_string_equal(note, UNTOUCHED);
    mt_pipeline_free(p);
    for (int i = 0; i < 3; i++)
        mt_rank_analysis_free(an[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_annotations),
        cmocka_unit_test(test_lead_loaded),
        cmocka_unit_test(test_choose),
        cmocka_unit_test(test_choose_blind),
        cmocka_unit_test(test_run),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
