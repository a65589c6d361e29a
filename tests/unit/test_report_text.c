/* The terminal summary (mt_report_text) from hand-built reports, without
 * MPI: sizes counted once per merged trace, rates, the clock table and its
 * cut past 32 ranks, the NCCL table, gates, escaped warnings and names,
 * colour, and a failing sink. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mergetrace/mergetrace.h"
#include "mergetrace/report.h"
#include "test_util.h"

/* The summary of r as a NUL-terminated string (caller frees). */
static char *text_of(const mt_report_t *r, const mt_report_text_opts_t *t)
{
    mt_buf_t b = {0};
    assert_int_equal(mt_report_text(r, t, mt_buf_write, &b), MT_OK);
    assert_int_equal(mt_buf_append(&b, "", 1), MT_OK);
    return b.data;
}

/* Whether text holds line as a whole line. */
static bool has_line(const char *text, const char *line)
{
    size_t n = strlen(line);
    for (const char *p = text; (p = strstr(p, line)) != NULL; p++)
        if ((p == text || p[-1] == '\n') && p[n] == '\n')
            return true;
    return false;
}

static void expect_line(const char *text, const char *line)
{
    if (!has_line(text, line)) {
        print_error("missing line:\n[%s]\nin:\n%s\n", line, text);
        fail();
    }
}

/* Two ranks, every section of the head: 1.5 + 0.5 MB of JSON read in
 * 0.5 s is 4 MB/s; rank 1's 1,234,567 ns offset shows as 1.235 ms; its
 * 33-byte file name keeps 10 bytes, '~' and its last 15 in 26 columns. */
static void test_two_ranks(void **state)
{
    (void)state;
    mt_trace_summary_t s0 = {0}, s1 = {0};
    mt_report_input_t in[2] = {
        {.rank = 0, .path = "/d/rank0.json", .json_bytes = 1500000, .events = 100, .summary = &s0},
        {.rank = 1, .path = "/d/rank1_with_a_long_name_trace.json", .json_bytes = 500000, .events = 200,
         .summary = &s1}};
    mt_clock_t cl[2] = {
        {.rank = 0, .reference = true, .connected = true, .matched = 4},
        {.rank = 1, .connected = true, .offset_ns = 1234567, .drift_ppm = 2.5, .drift_fit_ppm = 2.5,
         .drift_significant = true, .matched = 4, .residual_p50_ns = 1500, .residual_p99_ns = 3000}};
    mt_match_stats_t m = {.full = 3, .partial = 1, .rows = 8};
    m.by_key[MT_KEY_COMMS_ID] = 4;
    mt_gate_t g[2] = {{.expr = "straggler_max_ms < 5", .measured = true, .value = 1.25, .pass = true},
                      {.expr = "pipeline_overlap_score > 0.5", .why = "no pipeline"}};
    mt_warnings_t w = {0};
    mt_warnings_add(&w, "skipped_file", -1, "skipped %s: not a trace", "/d/bad\nname.json");
    assert_int_equal(w.st, MT_OK);
    mt_report_t r = {.version = "9.9.9",
                     .world_size = 2,
                     .inputs = in,
                     .n_inputs = 2,
                     .aligned = true,
                     .reference_rank = 0,
                     .clocks = cl,
                     .n_clocks = 2,
                     .match = &m,
                     .merged_events = 300,
                     .pipeline_note = "no stages",
                     .gates = g,
                     .n_gates = 2,
                     .warnings = &w};
    mt_report_text_opts_t t = {.n_procs = 2,
                               .load_s = 0.5,
                               .align_s = 0.25,
                               .merge_s = 0.125,
                               .out_dir = "out",
                               .html = true,
                               .merged_path = "out/merged.json.gz",
                               .removed = "timings.json"};
    char *s = text_of(&r, &t);
    expect_line(s, "mergetrace 9.9.9: 2 ranks of world size 2, 2 processes");
    expect_line(s, "loaded 2.0 MB of JSON, 300 events in 0.500 s (4 MB/s); aligned in 0.250 s; merged trace in 0.125 s");
    expect_line(s, "collectives: 8 kernels -> 4 instances: 3 full, 1 partial, 0 unmatched, 0 mismatched");
    expect_line(s, "  matched by: Comms Id 4");
    expect_line(s, "clock alignment onto rank 0");
    expect_line(s, "    0  rank0.json                       100       0.000         0.000        4         0.0 / 0.0     0  ref");
    expect_line(s, "    1  rank1_with~name_trace.json       200       1.235         2.500        4         1.5 / 3.0     0  ");
    expect_line(s, "pipeline: no stages");
    expect_line(s, "gates: 1 of 2 passed");
    expect_line(s, "  pass straggler_max_ms < 5 (1.25)");
    expect_line(s, "  FAIL pipeline_overlap_score > 0.5 (not measured: no pipeline)");
    expect_line(s, "warnings");
    expect_line(s, "  skipped /d/bad\\nname.json: not a trace"); /* the newline cannot forge a line */
    expect_line(s, "wrote out/report.json, out/report.html and out/merged.json.gz (300 events)");
    expect_line(s, "removed timings.json of an earlier run from out (this run does not write it)");
    assert_null(strstr(s, "\033[")); /* no colour asked */
    assert_null(strstr(s, "NCCL files"));
    assert_null(strstr(s, "Nsight Systems"));
    free(s);

    /* --no-align, no html, no merged trace; colour */
    r.aligned = false;
    t = (mt_report_text_opts_t){.n_procs = 1, .threads = false, .out_dir = "o", .color = true};
    s = text_of(&r, &t);
    assert_memory_equal(s, "\033[1mmergetrace 9.9.9\033[0m: 2 ranks of world size 2, 1 process\n", 61);
    expect_line(s, "loaded 2.0 MB of JSON, 300 events in 0.000 s (0 MB/s); aligned in 0.000 s");
    expect_line(s, "\033[1mclock alignment\033[0m onto rank 0 (disabled: --no-align)");
    /* no fit: the matched column says so */
    expect_line(s, "    1  rank1_with~name_trace.json       200       1.235         2.500        -         1.5 / 3.0     0  ");
    expect_line(s, "\033[33mwarnings\033[0m");
    expect_line(s, "wrote o/report.json");
    free(s);

    /* a merged trace read back: its clock note, and worker threads */
    r.aligned = true;
    r.clock_note = "read back";
    t = (mt_report_text_opts_t){.n_procs = 3, .threads = true, .out_dir = "o"};
    s = text_of(&r, &t);
    expect_line(s, "mergetrace 9.9.9: 2 ranks of world size 2, 3 worker threads");
    expect_line(s, "clock alignment onto rank 0 (none: a merged trace, on the one clock it was corrected onto when written)");
    free(s);
    mt_warnings_free(&w);
}

/* 40 ranks: the reference (rank 0), the one not connected (rank 5) and the
 * 8 largest residual p99s (ranks 32..39, p99 = rank us) are shown: 10 rows,
 * 30 more in report.json; offsets (rank - 5) ms run from -5 to 34 ms. */
static void test_many_ranks(void **state)
{
    (void)state;
    enum { N = 40 };
    mt_report_input_t in[N];
    mt_clock_t cl[N];
    char paths[N][32];
    for (int i = 0; i < N; i++) {
        snprintf(paths[i], sizeof paths[i], "r%02d.json", i);
        in[i] = (mt_report_input_t){.rank = i, .path = paths[i], .json_bytes = 1000, .events = 10};
        cl[i] = (mt_clock_t){.rank = i, .reference = i == 0, .connected = i != 5, .offset_ns = (i - 5) * 1e6,
                             .residual_p99_ns = i * 1000.0, .matched = 1};
    }
    mt_match_stats_t m = {0};
    mt_report_t r = {.version = "v", .world_size = N, .inputs = in, .n_inputs = N, .aligned = true,
                     .clocks = cl, .n_clocks = N, .match = &m};
    mt_report_text_opts_t t = {.n_procs = 1, .out_dir = "o"};
    char *s = text_of(&r, &t);
    expect_line(s, "  matched by: (none)");
    int rows = 0;
    for (int i = 0; i < N; i++) {
        char name[32];
        snprintf(name, sizeof name, "  r%02d.json ", i);
        bool shown = strstr(s, name) != NULL;
        rows += shown;
        assert_int_equal(shown, i == 0 || i == 5 || i >= 32);
    }
    assert_int_equal(rows, 10);
    assert_non_null(strstr(s, "NOT CONNECTED"));
    expect_line(s, "  ... 30 more ranks in report.json (shown: the reference, any not connected, the 8 worst residuals);");
    expect_line(s, "  offsets of all 40 from -5.000 to 34.000 ms");
    free(s);
}

/* Two ranks read from one merged trace ("<file>#rank<R>") and one plain
 * trace: the merged file counts once, with the most any part read (3.0 MB),
 * beside the plain 0.5 MB; parsed in all 4.5 MB in 1.5 s is 3 MB/s. */
static void test_merged_parts(void **state)
{
    (void)state;
    char file[512], p0[600], p1[600];
    snprintf(file, sizeof file, "%s/report_text_merged.json", MT_TEST_TMP);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fputs("{}", f);
    fclose(f);
    snprintf(p0, sizeof p0, "%s#rank0", file);
    snprintf(p1, sizeof p1, "%s#rank1", file);
    mt_report_input_t in[3] = {{.rank = 0, .path = p0, .json_bytes = 1000000, .events = 5},
                               {.rank = 1, .path = p1, .json_bytes = 3000000, .events = 6},
                               {.rank = 2, .path = "plain.json", .json_bytes = 500000, .events = 7}};
    mt_clock_t cl[3] = {{.rank = 0, .reference = true, .connected = true}, {.rank = 1, .connected = true},
                        {.rank = 2, .connected = true}};
    mt_match_stats_t m = {0};
    mt_report_t r = {.version = "v", .world_size = 3, .inputs = in, .n_inputs = 3, .aligned = true,
                     .clocks = cl, .n_clocks = 3, .match = &m};
    mt_report_text_opts_t t = {.n_procs = 1, .load_s = 1.5, .out_dir = "o"};
    char *s = text_of(&r, &t);
    expect_line(s, "loaded 3.5 MB of JSON, 18 events in 1.500 s; a merged trace is parsed once per rank (2 parts: "
                   "4.5 MB parsed in all, 3 MB/s); aligned in 0.000 s");
    free(s);
    remove(file);
}

/* The NCCL table: the source of the aligning rows, the agreement of the
 * rank that has both, and the rank with NCCL data only. */
static void test_nccl(void **state)
{
    (void)state;
    mt_report_input_t in[2] = {{.rank = 0, .path = "k0.json", .events = 1},
                               {.rank = 1, .path = "nccl1.jsonl", .events = 2, .nccl_only = true}};
    mt_clock_t cl[2] = {{.rank = 0, .reference = true, .connected = true}, {.rank = 1, .connected = true}};
    mt_nccl_agree_t ag = {.rank = 0, .pairs = 12, .start_p50_ns = 1500, .start_p99_ns = 2500, .end_p50_ns = 500,
                          .end_p99_ns = 4000};
    mt_report_nccl_t nc[2] = {
        {.rank = 0, .path = "/x/nccl0.jsonl", .tasks = 20, .rows = 18, .with_kineto = true, .agree = &ag},
        {.rank = 1, .path = "/x/nccl1.jsonl", .tasks = 7, .rows = 7, .aligned_on_nccl = true}};
    mt_match_stats_t m = {0};
    mt_report_t r = {.version = "v", .world_size = 2, .inputs = in, .n_inputs = 2, .aligned = true,
                     .clocks = cl, .n_clocks = 2, .match = &m, .nccl = nc, .n_nccl = 2, .nccl_source = "mixed"};
    mt_report_text_opts_t t = {.n_procs = 1, .out_dir = "o"};
    char *s = text_of(&r, &t);
    expect_line(s, "NCCL files (plugin, Inspector or example profiler; clocks aligned on Kineto rows where a rank has "
                   "a trace, else NCCL; agreement: |NCCL GPU - Kineto kernel| after alignment)");
    expect_line(s, "    0  nccl0.jsonl                     20      18 kineto        12         1.5 / 2.5         0.5 / 4.0");
    expect_line(s, "    1  nccl1.jsonl                      7       7 nccl           -                 -                 -  NCCL only");
    free(s);
}

static mt_status_t failing_sink(void *ctx, const void *data, size_t len)
{
    (void)data;
    (void)len;
    ++*(int *)ctx;
    return MT_ERR_IO;
}

/* The sink's first error is returned, and nothing is written after it. */
static void test_sink_error(void **state)
{
    (void)state;
    mt_match_stats_t m = {0};
    mt_report_t r = {.version = "v", .match = &m};
    mt_report_text_opts_t t = {.n_procs = 1, .out_dir = "o"};
    int calls = 0;
    assert_int_equal(mt_report_text(&r, &t, failing_sink, &calls), MT_ERR_IO);
    assert_int_equal(calls, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_ranks),
        cmocka_unit_test(test_many_ranks),
        cmocka_unit_test(test_merged_parts),
        cmocka_unit_test(test_nccl),
        cmocka_unit_test(test_sink_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
