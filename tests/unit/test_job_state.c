/* The job after loading (mergetrace/job_state.h) without MPI: a job of
 * two traces (ranks 0 and 1 of a world of 4), a file left out while
 * loading and a clock fitted to rank 1 laid out by hand; its report
 * (inputs, ranks missing, files left out, reference rank, the options'
 * part) and its warnings (ranks missing, the critical path left out over
 * the memory budget) checked against those hand-made facts; the rank
 * checks (mt_job_check) on results laid out the same way; two traces
 * days apart on one clock (mt_job_trust); the steps after the alignment
 * (mt_job_cross) stopped by the one-run check or run to the gates; the
 * program's lines for what they found (mt_job_check_text,
 * mt_job_cross_text); process 0's memory plan (mt_job_plan_set); what
 * --timings reads of the job (mt_job_timings);
 * the job's outputs (mt_job_outputs, _baseline). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "mergetrace/mergetrace.h"
#include "test_util.h"

static mt_ingest_result_t res_of(int32_t index, int64_t rank, bool skipped)
{
    mt_ingest_result_t r;
    memset(&r, 0, sizeof r);
    r.index = index;
    r.rank = rank;
    r.skipped = skipped;
    r.status = skipped ? MT_ERR_NOT_TRACE : MT_OK;
    r.sum.world_size = 4;
    r.sum.events = 10 + (uint64_t)index;
    return r;
}

static void test_report_and_warnings(void **state)
{
    (void)state;
    mt_discover_file_t f[3] = {
        {.path = "a/rank0.json", .bytes = 100, .part = -1},
        {.path = "a/rank1.json", .bytes = 200, .part = -1},
        {.path = "a/notes.json", .bytes = 7, .part = -1},
    };
    mt_discover_list_t l = {.files = f, .n = 3, .cap = 3};
    mt_ingest_result_t res[3] = {res_of(0, 0, false), res_of(1, 1, false), res_of(2, 0, true)};
    mt_clock_t clocks[2] = {{.rank = 0}, {.rank = 1, .reference = true}};
    int64_t *missing = malloc(2 * sizeof *missing);
    assert_non_null(missing);
    missing[0] = 2;
    missing[1] = 3;
    mt_job_t j = {.res = res,
                  .n = 2,
                  .skipped = res + 2,
                  .n_skipped = 1,
                  .world = 4,
                  .missing = missing,
                  .n_missing = 2,
                  .n_absent = 2};
    j.al.clocks = malloc(sizeof clocks);
    assert_non_null(j.al.clocks);
    memcpy(j.al.clocks, clocks, sizeof clocks);
    j.al.n_clocks = 2;
    j.plan = (mt_job_plan_t){.acts = 1000, .rows = 10, .steps = 3, .with = 4u << 30, .budget = 1u << 30,
                             .skipped = true};
    snprintf(j.pipe_note, sizeof j.pipe_note, "no pipeline");

    mt_gate_t gate = {0};
    mt_job_report_opts_t ro = {.aligned = true, .clock_note = "a note", .gates = &gate, .n_gates = 1};
    mt_report_input_t *ri = NULL;
    mt_report_skip_t *rs = NULL;
    mt_report_t rep;
    assert_int_equal(mt_job_report(&l, &j, &ro, &ri, &rs, &rep), MT_OK);
    assert_string_equal(rep.version, MERGETRACE_VERSION);
    assert_int_equal(rep.world_size, 4);
    assert_int_equal(rep.n_inputs, 2);
    assert_int_equal(rep.inputs[0].rank, 0);
    assert_string_equal(rep.inputs[0].path, "a/rank0.json");
    assert_int_equal(rep.inputs[1].rank, 1);
    assert_string_equal(rep.inputs[1].path, "a/rank1.json");
    assert_int_equal(rep.n_missing, 2);
    assert_int_equal(rep.missing[1], 3);
    assert_int_equal(rep.missing_count, 2);
    assert_int_equal(rep.n_skipped, 1);
    assert_string_equal(rep.skipped[0].path, "a/notes.json");
    assert_int_equal(rep.reference_rank, 1); /* the clock marked reference */
    assert_true(rep.aligned);
    assert_string_equal(rep.clock_note, "a note");
    assert_ptr_equal(rep.gates, &gate);
    assert_int_equal(rep.n_gates, 1);
    assert_string_equal(rep.pipeline_note, "no pipeline");
    assert_ptr_equal(rep.clocks, j.al.clocks);
    assert_null(rep.nccl);

    mt_warnings_t w = {0};
    assert_int_equal(mt_job_warnings(&j, &rep, false, &w), MT_OK);
    char note[512];
    mt_critpath_memory_note(note, sizeof note, j.plan.with, j.plan.budget, j.plan.acts, j.plan.rows);
    bool saw_missing = false, saw_cp = false;
    for (size_t i = 0; i < w.n; i++) {
        if (!strcmp(w.v[i].code, "missing_ranks")) {
            saw_missing = true;
            assert_non_null(strstr(w.v[i].text, "2 of 4 ranks have no trace"));
        }
        if (!strcmp(w.v[i].code, "critical_path_skipped")) {
            saw_cp = true;
            assert_string_equal(w.v[i].text, note);
        }
    }
    assert_true(saw_missing);
    assert_true(saw_cp);
    mt_warnings_free(&w);
    /* within the budget: no such warning */
    j.plan.skipped = false;
    assert_int_equal(mt_job_warnings(&j, &rep, false, &w), MT_OK);
    for (size_t i = 0; i < w.n; i++)
        assert_string_not_equal(w.v[i].code, "critical_path_skipped");
    mt_warnings_free(&w);

    free(ri);
    free(rs);
    j.res = NULL; /* borrowed */
    mt_job_free(&j);
    assert_null(j.missing);
    assert_null(j.al.clocks);
}

/* The rank checks on results as two processes' gather leaves them (out
 * of order, a skipped file among them). */
static void test_check(void **state)
{
    (void)state;
    mt_discover_file_t f[4] = {{.path = "r1.json", .part = -1},
                               {.path = "notes.json", .part = -1},
                               {.path = "r0.json", .part = -1},
                               {.path = "r3.json", .part = -1}};
    mt_discover_list_t l = {.files = f, .n = 4, .cap = 4};
    mt_ingest_result_t res[4] = {res_of(3, 3, false), res_of(1, -1, true), res_of(0, 1, false), res_of(2, 0, false)};
    for (int i = 0; i < 4; i++) {
        res[i].n_gacts = 100u << i;
        res[i].n_rows = 10u << i;
        res[i].n_steps = 1u << i;
    }
    res[0].sum.world_size = 6; /* the traces disagree: the largest is the world */
    mt_job_t j;
    const mt_ingest_result_t *which = NULL;
    assert_int_equal(mt_job_check(&l, res, 4, &j, &which), MT_JOB_GOOD);
    assert_int_equal(j.n, 3);
    assert_int_equal(j.n_skipped, 1);
    assert_int_equal(j.skipped[0].index, 1);
    assert_int_equal(j.res[0].rank, 0);
    assert_int_equal(j.res[1].rank, 1);
    assert_int_equal(j.res[2].rank, 3);
    /* GPU activities, rows and steps of the three traces (not the skipped
     * file): 100 + 400 + 800, 10 + 40 + 80, 1 + 4 + 8 */
    assert_int_equal(j.plan.acts, 1300);
    assert_int_equal(j.plan.rows, 130);
    assert_int_equal(j.plan.steps, 13);
    assert_int_equal(j.world, 6);
    assert_true(j.world_disagree);
    assert_int_equal(j.n_absent, 3); /* ranks 2, 4 and 5 */
    assert_int_equal(j.n_missing, 3);
    assert_int_equal(j.missing[0], 2);
    assert_int_equal(j.missing[2], 5);
    j.res = NULL;
    mt_job_free(&j);

    /* a rank twice: the later of the two */
    mt_ingest_result_t two[3] = {res_of(0, 1, false), res_of(2, 0, false), res_of(3, 1, false)};
    assert_int_equal(mt_job_check(&l, two, 3, &j, &which), MT_JOB_TWICE);
    assert_int_equal(which->index, 3);
    assert_int_equal(which[-1].index, 0);
    /* the program's line: both files, and with --local their processes */
    char msg[600];
    f[0].owner = 0;
    f[3].owner = 2;
    assert_int_equal(mt_job_check_text(MT_JOB_TWICE, &l, &j, which, 3, false, "", msg, sizeof msg), MT_ERR_FORMAT);
    assert_string_equal(msg, "rank 1 appears twice: r1.json and r3.json (use --rank-map to say which is which)");
    assert_int_equal(mt_job_check_text(MT_JOB_TWICE, &l, &j, which, 3, true, "--baseline: ", msg, sizeof msg),
                     MT_ERR_FORMAT);
    assert_string_equal(msg, "--baseline: rank 1 appears twice: r1.json on process 0 and r3.json on process 2 "
                             "(--local: give each trace to one process; --rank-map says which is which)");
    mt_job_free(&j);
    /* a trace that named no rank beside another */
    mt_ingest_result_t un[2] = {res_of(0, 1, false), res_of(2, 0, false)};
    un[1].rank_tentative = 1;
    assert_int_equal(mt_job_check(&l, un, 2, &j, &which), MT_JOB_UNRANKED);
    assert_ptr_equal(which, &un[0]); /* sorted: rank 0 first */
    snprintf(un[0].message, sizeof un[0].message, "r0.json: no rank");
    assert_int_equal(mt_job_check_text(MT_JOB_UNRANKED, &l, &j, which, 2, false, "", msg, sizeof msg), MT_ERR_FORMAT);
    assert_string_equal(msg, "r0.json: no rank");
    mt_job_free(&j);
    /* alone it is rank 0 */
    mt_ingest_result_t one[1] = {res_of(2, 0, false)};
    one[0].rank_tentative = 1;
    assert_int_equal(mt_job_check(&l, one, 1, &j, &which), MT_JOB_GOOD);
    assert_int_equal(j.world, 4);
    assert_int_equal(mt_job_check_text(MT_JOB_GOOD, &l, &j, which, 1, false, "", msg, sizeof msg), MT_OK);
    assert_string_equal(msg, "");
    mt_job_free(&j);
    /* nothing but a skipped file */
    mt_ingest_result_t none[1] = {res_of(1, -1, true)};
    assert_int_equal(mt_job_check(&l, none, 1, &j, &which), MT_JOB_NO_TRACE);
    assert_int_equal(j.n_skipped, 1);
    snprintf(none[0].message, sizeof none[0].message, "no traceEvents");
    assert_int_equal(mt_job_check_text(MT_JOB_NO_TRACE, &l, &j, which, 1, false, "", msg, sizeof msg),
                     MT_ERR_FORMAT);
    assert_string_equal(msg, "no trace among the 1 JSON file found (notes.json: no traceEvents)");
    mt_job_free(&j);
    /* nothing at all; out of memory; the empty job says nothing */
    assert_int_equal(mt_job_check(&l, none, 0, &j, &which), MT_JOB_NO_TRACE);
    assert_int_equal(mt_job_check_text(MT_JOB_NO_TRACE, &l, &j, which, 0, false, "--baseline: ", msg, sizeof msg),
                     MT_ERR_FORMAT);
    assert_string_equal(msg, "--baseline: no trace found");
    assert_int_equal(mt_job_check_text(MT_JOB_NOMEM, &l, &j, which, 0, false, "--baseline: ", msg, sizeof msg),
                     MT_ERR_NOMEM);
    assert_string_equal(msg, "out of memory");
    assert_int_equal(mt_job_check_text(MT_JOB_EMPTY, &l, &j, which, 0, false, "", msg, sizeof msg), MT_ERR_IO);
    assert_string_equal(msg, "");
    mt_job_free(&j);
}

/* Two traces 2^51 ns (26 days) apart on one clock: far, with both named;
 * then 1 ms apart: not. */
static void test_trust(void **state)
{
    (void)state;
    mt_ingest_result_t res[2] = {res_of(0, 0, false), res_of(1, 1, false)};
    res[0].sum.world_size = res[1].sum.world_size = 2;
    res[0].sum.first_ns = 1000;
    res[0].sum.last_ns = 2000;
    res[1].sum.first_ns = ((int64_t)1 << 51) + 1000;
    res[1].sum.last_ns = res[1].sum.first_ns + 1000;
    mt_clock_t clocks[2] = {{.rank = 0, .reference = true}, {.rank = 1}};
    mt_job_t j = {.res = res, .n = 2};
    j.al.clocks = clocks;
    j.al.n_clocks = 2;
    bool far = false, checked = false;
    size_t a = 9, b = 9;
    double apart = 0;
    assert_int_equal(mt_job_trust(&j, true, &far, &a, &b, &apart, &checked), MT_OK);
    assert_true(checked);
    assert_true(far);
    assert_int_equal(a, 0);
    assert_int_equal(b, 1);
    assert_true(apart == (double)((int64_t)1 << 51));
    res[1].sum.first_ns = 1000000;
    res[1].sum.last_ns = 2000000;
    assert_int_equal(mt_job_trust(&j, true, &far, &a, &b, &apart, &checked), MT_OK);
    assert_false(far);
    assert_false(j.trust.mixed);
}

/* Process 0's steps after the alignment (mt_job_cross) on two traces laid
 * out by hand: 2^51 ns apart on one clock, the one-run check stops them at
 * MT_JOB_STEP_FAR naming both, before any analysis; world sizes 2 and 4,
 * MT_JOB_STEP_MIXED naming the two (and with --force the steps after run);
 * 1 ms apart and of one world, every step runs to the end: the cross-rank
 * table exists, no pipeline, no ProfilerStep so no critical path, and the
 * gates are evaluated: "alignment_p99_us <= 1" measured on rank 1's clock
 * (fitted on 10 rows, residual p99 500 ns: 0.5 us) passes, "pipeline_overlap_score >= 0" is not measured
 * (no pipeline) and fails. */
static void test_cross(void **state)
{
    (void)state;
    mt_ingest_result_t res[2] = {res_of(0, 0, false), res_of(1, 1, false)};
    res[0].sum.world_size = res[1].sum.world_size = 2;
    res[0].sum.first_ns = 1000;
    res[0].sum.last_ns = 2000;
    res[1].sum.first_ns = ((int64_t)1 << 51) + 1000;
    res[1].sum.last_ns = res[1].sum.first_ns + 1000;
    mt_clock_t clocks[2] = {{.rank = 0, .reference = true}, {.rank = 1, .matched = 10, .residual_p99_ns = 500}};
    int32_t ranks[2] = {0, 1};
    mt_rank_analysis_t *an[1] = {NULL}; /* no analysis, but an array (mt_critpath_run copies it) */
    mt_job_t j = {.res = res, .n = 2, .ranks = ranks, .n_ranks = 2, .an = an};
    j.al.clocks = clocks;
    j.al.n_clocks = 2;
    mt_job_cross_opts_t o = {.aligned = true, .html = true, .pp.warmup = 1};
    mt_timings_t t = {0};
    mt_job_cross_fail_t f;
    assert_int_equal(mt_job_cross(&o, &j, &t, &f), MT_ERR_FORMAT);
    assert_int_equal(f.step, MT_JOB_STEP_FAR);
    assert_int_equal(f.a, 0);
    assert_int_equal(f.b, 1);
    assert_true(f.apart_ns == (double)((int64_t)1 << 51));
    assert_null(j.cross);
    /* the program's line: 2^51 ns is 26 days */
    mt_discover_file_t files[2] = {{.path = "a.json", .part = -1}, {.path = "b.json", .part = -1}};
    mt_discover_list_t l = {.files = files, .n = 2, .cap = 2};
    char msg[600];
    assert_int_equal(mt_job_cross_text(MT_ERR_FORMAT, &f, &l, &j, false, "", msg, sizeof msg), MT_ERR_FORMAT);
    assert_string_equal(msg, "a.json and b.json start 26 days apart on the corrected clock (a trace without its "
                             "absolute time base?): they cannot be analysed together");
    assert_int_equal(mt_job_cross_text(MT_ERR_FORMAT, &f, &l, &j, true, "--baseline: ", msg, sizeof msg),
                     MT_ERR_FORMAT);
    assert_non_null(strstr(msg, "--baseline: a.json and b.json start 26 days apart on the same (--no-align) clock"));

    res[1].sum.first_ns = 1000000;
    res[1].sum.last_ns = 2000000;
    res[1].sum.world_size = 4;
    assert_int_equal(mt_job_cross(&o, &j, &t, &f), MT_ERR_FORMAT);
    assert_int_equal(f.step, MT_JOB_STEP_MIXED);
    assert_int_equal(f.a, 0);
    assert_int_equal(f.b, 1);
    assert_string_equal(j.trust.why, "world sizes 2 and 4");
    assert_null(j.cross);
    assert_int_equal(mt_job_cross_text(MT_ERR_FORMAT, &f, &l, &j, false, "", msg, sizeof msg), MT_ERR_FORMAT);
    assert_string_equal(msg, "a.json and b.json are not of one run: world sizes 2 and 4 (--force merges them anyway)");
    /* the other steps: the step's name and the status; no tag for out of
     * memory and report.html's views */
    mt_job_cross_fail_t other = {.step = MT_JOB_STEP_CRITPATH};
    assert_int_equal(mt_job_cross_text(MT_ERR_NOMEM, &other, &l, &j, false, "--baseline: ", msg, sizeof msg),
                     MT_ERR_NOMEM);
    assert_string_equal(msg, "--baseline: critical path: out of memory");
    other.step = MT_JOB_STEP_VIEWS;
    assert_int_equal(mt_job_cross_text(MT_ERR_LIMIT, &other, &l, &j, false, "--baseline: ", msg, sizeof msg),
                     MT_ERR_LIMIT);
    assert_string_equal(msg, "report.html views: input exceeds a limit");
    other.step = MT_JOB_STEP_TRUST;
    assert_int_equal(mt_job_cross_text(MT_ERR_RANGE, &other, &l, &j, false, "", msg, sizeof msg), MT_ERR_FORMAT);
    other.step = MT_JOB_STEP_TRUST_NOMEM;
    assert_int_equal(mt_job_cross_text(MT_OK, &other, &l, &j, false, "x: ", msg, sizeof msg), MT_ERR_NOMEM);
    assert_string_equal(msg, "out of memory");
    other.step = MT_JOB_STEP_NONE;
    assert_int_equal(mt_job_cross_text(MT_OK, &other, &l, &j, false, "", msg, sizeof msg), MT_OK);
    assert_string_equal(msg, "");
    o.force = true;
    assert_int_equal(mt_job_cross(&o, &j, &t, &f), MT_OK);
    assert_int_equal(f.step, MT_JOB_STEP_NONE);
    assert_non_null(j.cross);
    mt_cross_free(j.cross);
    j.cross = NULL;
    mt_report_views_free(j.views);
    j.views = NULL;
    mt_mem_cross_free(j.memory);
    j.memory = NULL;

    res[1].sum.world_size = 2;
    o.force = false;
    mt_gate_t g[2];
    assert_int_equal(mt_gate_parse("alignment_p99_us <= 1", &g[0], NULL), MT_OK);
    assert_int_equal(mt_gate_parse("pipeline_overlap_score >= 0", &g[1], NULL), MT_OK);
    o.gates = g;
    o.n_gates = 2;
    assert_int_equal(mt_job_cross(&o, &j, &t, &f), MT_OK);
    assert_int_equal(f.step, MT_JOB_STEP_NONE);
    assert_false(j.trust.mixed);
    assert_non_null(j.cross);
    assert_non_null(j.views);
    assert_null(j.pipe);
    assert_null(j.cp);
    assert_int_equal(j.gates_failed, 1);
    assert_true(g[0].measured && g[0].pass);
    assert_true(g[0].value == 0.5);
    assert_true(!g[1].measured && !g[1].pass);
    assert_true(t.seconds[MT_TPH_CROSS_RANK] >= t.critpath && t.critpath >= 0);
    mt_cross_free(j.cross);
    mt_report_views_free(j.views);
    mt_mem_cross_free(j.memory);
    mt_pipeline_free(j.pipe);
}

/* The lines a run says (mt_outdir_note_fn): kept, joined by '\n'. */
static void note_keep(void *ctx, const char *line)
{
    mt_buf_t *b = ctx;
    assert_int_equal(mt_buf_append(b, line, strlen(line)), MT_OK);
    assert_int_equal(mt_buf_append(b, "\n", 1), MT_OK);
}

/* Process 0's memory plan (mt_job_plan_set) for dp8's job: 8 ranks, 192
 * collective rows and 864 GPU activities, which grow process 0 by
 * 169,472 bytes without the critical path and 328,832 with it (the
 * numbers `mergetrace --timings sample_traces/dp8` printed before the plan
 * moved into the core); the budget worked out by hand: nine tenths of
 * what is available (integer bytes) when none is given, the one given,
 * none for 0; left out only over a budget, and only with steps. */
static void test_plan(void **state)
{
    (void)state;
    mt_job_t j;
    memset(&j, 0, sizeof j);
    j.n = 8;
    j.plan = (mt_job_plan_t){.acts = 864, .rows = 192, .steps = 4};
    assert_false(mt_job_plan_set(&j, -1, 8871936, 1000000));
    assert_int_equal(j.plan.rss, 8871936);
    assert_int_equal(j.plan.without, 169472);
    assert_int_equal(j.plan.with, 328832);
    assert_int_equal(j.plan.budget, 900000);
    assert_false(j.plan.skipped);
    /* 300,001 available: 30,000 tenths, 270,000 of budget, under 328,832 */
    assert_true(mt_job_plan_set(&j, -1, 1, 300001));
    assert_int_equal(j.plan.budget, 270000);
    assert_false(j.plan.skipped); /* the program's to set */
    assert_false(mt_job_plan_set(&j, 328832, 1, 0)); /* at the budget: not over it */
    assert_int_equal(j.plan.budget, 328832);
    assert_true(mt_job_plan_set(&j, 328831, 1, 0));
    assert_false(mt_job_plan_set(&j, 0, 1, 1)); /* --memory-budget none */
    assert_int_equal(j.plan.budget, 0);
    j.plan.steps = 0; /* no steps: no critical path to leave out */
    assert_false(mt_job_plan_set(&j, 1, 1, 0));
    assert_int_equal(j.plan.budget, 1);
}

/* What --timings reads of a job (mt_job_timings): two traces of 1000 and
 * 2500 JSON bytes with 40 and 60 events, six files owned by processes
 * 2, 0, 1, 2, none (-1) and 3 (not below n_procs 3), so process 0 counts
 * 1, 1 and 2 files; the load's, alignment's and plan's numbers copied as
 * laid out; the program's own measures left as they were; on another
 * process no job size and no files. */
static void test_timings(void **state)
{
    (void)state;
    mt_ingest_result_t res[2] = {res_of(0, 0, false), res_of(1, 1, false)};
    res[0].sum.bytes_json = 1000;
    res[0].sum.events = 40;
    res[1].sum.bytes_json = 2500;
    res[1].sum.events = 60;
    mt_job_t j;
    memset(&j, 0, sizeof j);
    j.res = res;
    j.n = 2;
    j.al.match_s = 0.25;
    j.al.fit_s = 0.125;
    j.al.match_cpu_s = 0.5;
    j.al.fit_cpu_s = 0.0625;
    j.al.match_procs = 3;
    j.plan = (mt_job_plan_t){.acts = 864, .rows = 192, .steps = 4, .rss = 8000000, .without = 169472,
                             .with = 328832, .budget = 1000000000, .skipped = true};
    mt_ingest_t L;
    memset(&L, 0, sizeof L);
    L.parse_s = 1.5;
    L.passes_s = 0.75;
    L.largest = 2500;
    mt_discover_file_t f[6] = {{.owner = 2}, {.owner = 0}, {.owner = 1}, {.owner = 2}, {.owner = -1}, {.owner = 3}};
    mt_discover_list_t files = {.files = f, .n = 6};

    mt_timings_t t = {.helpers = 1, .seconds[MT_TPH_LOAD] = 9, .load_cpu = 8, .critpath = 7};
    uint64_t *per = mt_job_timings(&j, &L, &files, 0, 3, &t);
    assert_non_null(per);
    assert_ptr_equal(t.files, per);
    assert_int_equal(per[0], 1);
    assert_int_equal(per[1], 1);
    assert_int_equal(per[2], 2);
    assert_int_equal(t.n_procs, 3);
    assert_int_equal(t.ranks, 2);
    assert_int_equal(t.json_bytes, 3500);
    assert_int_equal(t.events, 100);
    assert_int_equal(t.largest, 2500);
    assert_true(t.seconds[MT_TPH_PARSE] == 1.5 && t.seconds[MT_TPH_RANK_PASSES] == 0.75);
    assert_true(t.seconds[MT_TPH_MATCH] == 0.25 && t.seconds[MT_TPH_CLOCK_FIT] == 0.125);
    assert_true(t.match_cpu == 0.5 && t.clock_fit_cpu == 0.0625);
    assert_int_equal(t.match_procs, 3);
    assert_int_equal(t.plan_rss, 8000000);
    assert_int_equal(t.plan_without, 169472);
    assert_int_equal(t.plan_with, 328832);
    assert_int_equal(t.plan_budget, 1000000000);
    assert_int_equal(t.plan_acts, 864);
    assert_int_equal(t.plan_rows, 192);
    assert_true(t.plan_skipped);
    /* the program's own */
    assert_int_equal(t.helpers, 1);
    assert_true(t.seconds[MT_TPH_LOAD] == 9 && t.load_cpu == 8 && t.critpath == 7);
    free(per);

    /* another process: its load's numbers, but the job's size is process 0's */
    mt_timings_t u = {.ranks = 77};
    assert_null(mt_job_timings(&j, &L, &files, 1, 3, &u));
    assert_null(u.files);
    assert_int_equal(u.ranks, 77);
    assert_int_equal(u.json_bytes, 0);
    assert_true(u.seconds[MT_TPH_PARSE] == 1.5);
    assert_int_equal(u.largest, 2500);
}

/* The outputs of a job laid out by hand (2 traces of a world of 4, a
 * gate that failed, not measured): report.json written and the summary
 * into the stream, the failed gate said even with -q and --json, with
 * --json the stream the bytes of the file; a failed merged trace writes
 * nothing; the baseline's report.json in memory equal to its file, its
 * warning said as the baseline's; compared with it, compare.json
 * written; a baseline that is not JSON is bad input, said. */
static void test_outputs(void **state)
{
    (void)state;
    char dir[512], path[700];
    snprintf(dir, sizeof dir, "%s/job_outputs", MT_TEST_TMP);
    mkdir(dir, 0777);
    const char *names[] = {"report.json", "report.html", "compare.json", "baseline/report.json"};
    for (size_t i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        remove(path);
    }
    mt_discover_file_t f[2] = {{.path = "a/rank0.json", .bytes = 100, .part = -1},
                               {.path = "a/rank1.json", .bytes = 200, .part = -1}};
    mt_discover_list_t l = {.files = f, .n = 2, .cap = 2};
    mt_ingest_result_t res[2] = {res_of(0, 0, false), res_of(1, 1, false)};
    mt_clock_t clocks[2] = {{.rank = 0, .reference = true}, {.rank = 1}};
    int64_t missing[2] = {2, 3};
    mt_job_t j = {.res = res, .n = 2, .world = 4, .missing = missing, .n_missing = 2, .n_absent = 2};
    j.al.clocks = clocks;
    j.al.n_clocks = 2;
    mt_gate_t gate;
    assert_int_equal(mt_gate_parse("idle_pct <= 5", &gate, NULL), MT_OK);
    gate.measured = false;
    gate.pass = false;
    gate.why = "no analysis";
    mt_job_out_opts_t o = {.out_dir = dir,
                           .report = {.aligned = true, .gates = &gate, .n_gates = 1},
                           .command_line = "mergetrace a",
                           .gates = &gate,
                           .n_gates = 1,
                           .text = {.n_procs = 1, .out_dir = dir}};
    mt_job_out_merged_t m = {.path = NULL};
    mt_buf_t out = {0}, said = {0};
    assert_int_equal(mt_job_outputs(&o, &l, &j, &m, mt_buf_write, &out, note_keep, &said), MT_OK);
    assert_int_equal(said.len, strlen("gate failed: idle_pct <= 5 (not measured: no analysis)\n"));
    assert_memory_equal(said.data, "gate failed: idle_pct <= 5 (not measured: no analysis)\n", said.len);
    size_t len = 0;
    snprintf(path, sizeof path, "%s/report.json", dir);
    char *file = read_file(path, &len);
    assert_non_null(file);
    assert_non_null(strstr(file, "\"world_size\": 4"));
    assert_int_equal(out.len > 0, 1);
    assert_int_equal(mt_buf_append(&out, "", 1), MT_OK);
    char wrote[700];
    snprintf(wrote, sizeof wrote, "wrote %s/report.json", dir);
    assert_non_null(strstr((const char *)out.data, wrote));
    snprintf(path, sizeof path, "%s/report.html", dir);
    assert_int_equal(access(path, F_OK), -1); /* not asked for */

    /* --json: the stream is the file's bytes; -q as well: the gate alone */
    out.len = said.len = 0;
    o.json = true;
    o.quiet = true;
    assert_int_equal(mt_job_outputs(&o, &l, &j, &m, mt_buf_write, &out, note_keep, &said), MT_OK);
    assert_int_equal(out.len, len);
    assert_memory_equal(out.data, file, len);
    assert_memory_equal(said.data, "gate failed:", 12);
    free(file);

    /* a failed merged trace: nothing written, the summary still goes out */
    snprintf(path, sizeof path, "%s/report.json", dir);
    remove(path);
    out.len = said.len = 0;
    o.json = o.quiet = false;
    m.failed = true;
    assert_int_equal(mt_job_outputs(&o, &l, &j, &m, mt_buf_write, &out, note_keep, &said), MT_OK);
    assert_int_equal(access(path, F_OK), -1);
    assert_true(out.len > 0);
    m.failed = false;

    /* the baseline's report: in memory as on disk, its warning said */
    mt_buf_t base = {0};
    said.len = 0;
    assert_int_equal(mt_job_outputs_baseline(&o.report, &l, &j, dir, false, &base, note_keep, &said), MT_OK);
    snprintf(path, sizeof path, "%s/baseline/report.json", dir);
    file = read_file(path, &len);
    assert_non_null(file);
    assert_int_equal(len, base.len);
    assert_memory_equal(file, base.data, len);
    free(file);
    assert_int_equal(mt_buf_append(&said, "", 1), MT_OK);
    assert_non_null(strstr((const char *)said.data, "--baseline: warning: 2 of 4 ranks have no trace"));
    said.len = 0;
    mt_buf_free(&base); /* set, not appended to */
    assert_int_equal(mt_job_outputs_baseline(&o.report, &l, &j, dir, true, &base, note_keep, &said), MT_OK);
    assert_int_equal(said.len, 0); /* quiet */

    /* compared with it: compare.json beside report.json */
    o.baseline_text = (const char *)base.data;
    o.baseline_len = base.len;
    o.baseline_file = path;
    o.outputs.compare = true; /* else compare.json is another run's, removed */
    out.len = said.len = 0;
    assert_int_equal(mt_job_outputs(&o, &l, &j, &m, mt_buf_write, &out, note_keep, &said), MT_OK);
    snprintf(path, sizeof path, "%s/compare.json", dir);
    assert_int_equal(access(path, F_OK), 0);
    /* a baseline that is not JSON: bad input, said; nothing written */
    remove(path);
    o.baseline_text = "not json";
    o.baseline_len = 8;
    out.len = said.len = 0;
    assert_int_equal(mt_job_outputs(&o, &l, &j, &m, mt_buf_write, &out, note_keep, &said), MT_ERR_FORMAT);
    assert_memory_equal(said.data, "comparing with the baseline: ", 29);
    assert_int_equal(access(path, F_OK), -1);
    mt_buf_free(&base);
    mt_buf_free(&out);
    mt_buf_free(&said);
    free(j.nccl_rep);
    mt_outdir_renamed_all(); /* the program's, once every output is in place */
}

/* A warning of the baseline longer than any stack line (a skipped file
 * whose path is 1,500 bytes): said whole, "--baseline: warning: skipped
 * PATH: not a trace (WHY)", as the program said it before the outputs
 * moved into the core (cut at 1,200 bytes there: the path's end and the
 * reason lost). */
static void test_baseline_long_warning(void **state)
{
    (void)state;
    char dir[512];
    snprintf(dir, sizeof dir, "%s/job_outputs_long", MT_TEST_TMP);
    mkdir(dir, 0777);
    char lpath[1600];
    memset(lpath, 'd', 1500);
    memcpy(lpath + 1500, "/notes.json", sizeof "/notes.json");
    mt_discover_file_t f[3] = {{.path = "a/rank0.json", .bytes = 100, .part = -1},
                               {.path = "a/rank1.json", .bytes = 200, .part = -1},
                               {.path = lpath, .bytes = 7, .part = -1}};
    mt_discover_list_t l = {.files = f, .n = 3, .cap = 3};
    mt_ingest_result_t res[3] = {res_of(0, 0, false), res_of(1, 1, false), res_of(2, 0, true)};
    res[0].sum.world_size = res[1].sum.world_size = 2;
    snprintf(res[2].message, sizeof res[2].message, "no traceEvents");
    mt_clock_t clocks[2] = {{.rank = 0, .reference = true}, {.rank = 1}};
    mt_job_t j = {.res = res, .n = 2, .skipped = res + 2, .n_skipped = 1, .world = 2};
    j.al.clocks = clocks;
    j.al.n_clocks = 2;
    mt_job_report_opts_t ro = {.aligned = true};
    mt_buf_t base = {0}, said = {0};
    assert_int_equal(mt_job_outputs_baseline(&ro, &l, &j, dir, false, &base, note_keep, &said), MT_OK);
    assert_int_equal(mt_buf_append(&said, "", 1), MT_OK);
    char want[1700];
    snprintf(want, sizeof want, "--baseline: warning: skipped %s: not a trace (no traceEvents)\n", lpath);
    assert_non_null(strstr((const char *)said.data, want)); /* the job's other warnings beside it */
    mt_buf_free(&base);
    mt_buf_free(&said);
    free(j.nccl_rep);
    mt_outdir_renamed_all();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_report_and_warnings),
        cmocka_unit_test(test_check),
        cmocka_unit_test(test_trust),
        cmocka_unit_test(test_cross),
        cmocka_unit_test(test_plan),
        cmocka_unit_test(test_timings),
        cmocka_unit_test(test_outputs),
        cmocka_unit_test(test_baseline_long_warning),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
