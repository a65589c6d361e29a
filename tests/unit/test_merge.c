/* The merged-timeline writer on a hand-written two-rank job: every expected
 * time stamp, pid and flow id below is computed by hand from the JSON text
 * and the clocks (corrected(t) = t + llround(offset + drift_ppm * 1e-6 *
 * (t - anchor))). The merged bytes are loaded back with the strict loader,
 * which also proves they are valid JSON. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mergetrace/merge.h"
#include "base/text.h"
#include "test_util.h"

/* Rank 0: PyTorch 2.4+ style, relative 3-decimal ts, baseTimeNanoseconds
 * AFTER traceEvents; string pids "Spans" and ""; a numeric and a string
 * flow id; args with escaped quotes and unicode escapes; pid 1 has only
 * metadata (Kineto lists every GPU of the node). */
static const char rank0_json[] =
    "{\"schemaVersion\": 1,\n"
    " \"traceEvents\": [\n"
    "  {\"ph\": \"X\", \"cat\": \"Trace\", \"name\": \"PyTorch Profiler (0)\", \"pid\": \"Spans\","
    " \"tid\": \"PyTorch Profiler\", \"ts\": 990.000, \"dur\": 300.000, \"args\": {\"Op count\": 0}},\n"
    "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 6583, \"tid\": 6583, \"ts\": 1000.000,"
    " \"dur\": 10.500, \"args\": {\"External id\": 1, \"note\": \"say \\\"hi\\\" \\u00e9\\u2603 \\\\ end\"}},\n"
    "  {\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 6583, \"tid\": 6583,"
    " \"ts\": 1002.250, \"dur\": 3.125, \"args\": {\"correlation\": 7, \"External id\": 1}},\n"
    "  {\"ph\": \"s\", \"id\": 7, \"pid\": 6583, \"tid\": 6583, \"ts\": 1002.250, \"cat\": \"ac2g\", \"name\": \"ac2g\"},\n"
    "  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm_kernel\", \"pid\": 0, \"tid\": 7, \"ts\": 1005.000,"
    " \"dur\": 20.000, \"args\": {\"correlation\": 7, \"External id\": 1, \"device\": 0}},\n"
    "  {\"ph\": \"f\", \"id\": 7, \"pid\": 0, \"tid\": 7, \"ts\": 1005.000, \"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"},\n"
    "  {\"ph\": \"s\", \"id\": \"fb\\\"1\", \"pid\": 6583, \"tid\": 6583, \"ts\": 1000.000, \"cat\": \"fwdbwd\","
    " \"name\": \"fwdbwd\"},\n"
    "  {\"ph\": \"X\", \"cat\": \"overhead\", \"name\": \"Activity Buffer Request\", \"pid\": -1, \"tid\": 0,"
    " \"ts\": 995.000, \"dur\": 1.000},\n"
    "  {\"ph\": \"i\", \"name\": \"Record Window End\", \"s\": \"g\", \"pid\": \"\", \"tid\": \"\", \"ts\": 1200.000},\n"
    "  {\"name\": \"process_name\", \"ph\": \"M\", \"ts\": 0.000, \"pid\": 6583, \"tid\": 0, \"args\": {\"name\": \"python3\"}},\n"
    "  {\"name\": \"process_labels\", \"ph\": \"M\", \"ts\": 0.000, \"pid\": 6583, \"tid\": 0, \"args\": {\"labels\": \"CPU\"}},\n"
    "  {\"name\": \"process_labels\", \"ph\": \"M\", \"ts\": 0.000, \"pid\": 0, \"tid\": 0, \"args\": {\"labels\": \"GPU 0\"}},\n"
    "  {\"name\": \"process_sort_index\", \"ph\": \"M\", \"ts\": 0.000, \"pid\": 0, \"tid\": 0,"
    " \"args\": {\"sort_index\": 5000000}},\n"
    "  {\"name\": \"thread_name\", \"ph\": \"M\", \"ts\": 0.000, \"pid\": 0, \"tid\": 7, \"args\": {\"name\": \"stream 7 \"}},\n"
    "  {\"name\": \"thread_name\", \"ph\": \"M\", \"ts\": 0.000, \"pid\": 6583, \"tid\": 6583,"
    " \"args\": {\"name\": \"thread 6583 (python3)\"}},\n"
    "  {\"name\": \"process_labels\", \"ph\": \"M\", \"ts\": 0.000, \"pid\": 1, \"tid\": 0, \"args\": {\"labels\": \"GPU 1\"}},\n"
    "  {\"name\": \"thread_name\", \"ph\": \"M\", \"ts\": 0.000, \"pid\": 1, \"tid\": 9, \"args\": {\"name\": \"stream 9 \"}}\n"
    " ],\n"
    " \"traceName\": \"/tmp/r0.json\", \"displayTimeUnit\": \"ms\", \"baseTimeNanoseconds\": 1767189312000000000}\n";
#define R0_EVENTS 17
#define B0 1767189312000000000LL

/* Rank 1: before PyTorch 2.4, absolute integer us, no base; a flow id
 * beyond 2^32. */
static const char rank1_json[] =
    "{\"traceEvents\": [\n"
    "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"c10d::allreduce_\", \"pid\": 59811, \"tid\": 59811,"
    " \"ts\": 1694128201435418, \"dur\": 100, \"args\": {\"External id\": 3}},\n"
    "  {\"ph\": \"s\", \"id\": 8589934597, \"pid\": 59811, \"tid\": 59811, \"ts\": 1694128201435420, \"cat\": \"ac2g\","
    " \"name\": \"ac2g\"},\n"
    "  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long,"
    " ncclWork*)\", \"pid\": 0, \"tid\": 84, \"ts\": 1694128201435500, \"dur\": 50, \"args\": {\"correlation\": 8589934597,"
    " \"device\": 0}},\n"
    "  {\"ph\": \"f\", \"id\": 8589934597, \"pid\": 0, \"tid\": 84, \"ts\": 1694128201435500, \"cat\": \"ac2g\","
    " \"name\": \"ac2g\", \"bp\": \"e\"},\n"
    "  {\"ph\": \"s\", \"id\": \"x\", \"pid\": 59811, \"tid\": 59811, \"ts\": 1694128201435418, \"cat\": \"fwdbwd\","
    " \"name\": \"fwdbwd\"},\n"
    "  {\"ph\": \"X\", \"cat\": \"Trace\", \"name\": \"PyTorch Profiler (0)\", \"pid\": \"Traces\", \"tid\": \"PyTorch Profiler\","
    " \"ts\": 1694128201435000, \"dur\": 1000},\n"
    "  {\"name\": \"process_name\", \"ph\": \"M\", \"ts\": 1694128201435000, \"pid\": 59811, \"tid\": 0,"
    " \"args\": {\"name\": \"python3\"}},\n"
    "  {\"name\": \"process_labels\", \"ph\": \"M\", \"ts\": 1694128201435000, \"pid\": 0, \"tid\": 0,"
    " \"args\": {\"labels\": \"GPU 0\"}},\n"
    "  {\"name\": \"thread_name\", \"ph\": \"M\", \"ts\": 1694128201435000, \"pid\": 0, \"tid\": 84,"
    " \"args\": {\"name\": \"stream 84 \"}}\n"
    " ],\n"
    " \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": 1, \"world_size\": 2}}\n";
#define R1_EVENTS 9
#define A1 1694128201435000000LL

/* +1.234567 ms; and -2.5 us with 20 ppm of drift anchored at A1. */
static const mt_clock_t clock0 = {.rank = 0, .offset_ns = 1234567.0};
static const mt_clock_t clock1 = {.rank = 1, .offset_ns = -2500.0, .drift_ppm = 20.0, .anchor_ns = A1};

static char *tmp_file(const char *name, const void *data, size_t len)
{
    static char paths[8][512];
    static int k;
    char *p = paths[k++ % 8];
    snprintf(p, 512, "%s/merge_%s", MT_TEST_TMP, name);
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
    return p;
}

static void merge_ok(const char *path, int32_t rank, const mt_clock_t *clk, const mt_merge_opts_t *o, mt_buf_t *b,
                     uint64_t *n)
{
    mt_error_t err;
    size_t before = b->len;
    mt_status_t st = mt_merge_rank(path, rank, clk, o, mt_buf_write, b, n, &err);
    if (st != MT_OK) {
        char m[1200];
        fail_msg("merge failed: %s", mt_error_format(&err, m, sizeof m));
    }
    /* The same bytes when the first pass's facts come from a load for the
     * analyses (the program's path). */
    mt_merge_facts_t *facts = NULL;
    assert_int_equal(mt_merge_facts_new(&facts), MT_OK);
    mt_load_opts_t lo;
    mt_load_opts_init(&lo);
    lo.rank_hint = rank;
    lo.on_event = mt_merge_facts_event;
    lo.on_event_ctx = facts;
    mt_trace_t *t = NULL;
    assert_int_equal(mt_trace_load(path, &lo, &t, &err), MT_OK);
    mt_merge_facts_finish(facts, t);
    mt_trace_free(t);
    for (int use = 0; use < 2; use++) { /* the plain output merges twice: the facts serve both */
        mt_buf_t again = {0};
        uint64_t n2 = 0;
        assert_int_equal(mt_merge_rank_with(path, rank, clk, o, facts, mt_buf_write, &again, &n2, &err), MT_OK);
        assert_int_equal(again.len, b->len - before);
        assert_memory_equal(again.data, b->data + before, again.len);
        if (n)
            assert_int_equal(n2, *n);
        mt_buf_free(&again);
    }
    mt_merge_facts_free(facts);
}

/* Load the merged bytes with the strict loader. */
static mt_trace_t *load_merged(const mt_buf_t *b)
{
    mt_trace_t *t = NULL;
    mt_error_t err;
    mt_load_opts_t o;
    mt_load_opts_init(&o);
    o.strict = true;
    mt_status_t st = mt_trace_load_buffer(b->data, b->len, "merged.json", &o, &t, &err);
    if (st != MT_OK) {
        char m[1200];
        fprintf(stderr, "%.*s\n", (int)b->len, b->data);
        fail_msg("merged output does not load: %s", mt_error_format(&err, m, sizeof m));
    }
    return t;
}

/* header + ranks + footer into b */
static void merge_job(mt_buf_t *b, const mt_merge_opts_t *o, uint64_t *n0, uint64_t *n1)
{
    const char *p0 = tmp_file("rank-0.json", rank0_json, sizeof rank0_json - 1);
    const char *p1 = tmp_file("rank-1.json", rank1_json, sizeof rank1_json - 1);
    assert_int_equal(mt_merge_header(mt_buf_write, b), MT_OK);
    merge_ok(p0, 0, &clock0, o, b, n0);
    merge_ok(p1, 1, &clock1, o, b, n1);
    const int32_t ranks[2] = {0, 1};
    assert_int_equal(mt_merge_footer(ranks, 2, mt_buf_write, b), MT_OK);
}

static const mt_event_t *find(const mt_trace_t *t, const char *name, mt_phase_t ph, int64_t pid)
{
    const mt_event_t *hit = NULL;
    for (size_t i = 0; i < t->n_events; i++) {
        const mt_event_t *e = &t->events[i];
        if (e->ph == ph && mt_event_pid(t, e) == pid && !strcmp(mt_event_name(t, e), name)) {
            assert_null(hit); /* unique */
            hit = e;
        }
    }
    if (!hit)
        fail_msg("no %s event \"%s\" on pid %lld", mt_phase_str(ph), name, (long long)pid);
    return hit;
}

static void expect_x(const mt_trace_t *t, const char *name, int64_t pid, int64_t ts, int64_t dur)
{
    const mt_event_t *e = find(t, name, MT_PH_X, pid);
    assert_int_equal(e->ts, ts);
    assert_int_equal(e->dur, dur);
}

/* The M payload string of the process_* event of pid, or NULL. */
static const char *meta_of(const mt_trace_t *t, const char *name, int64_t pid, int64_t *value)
{
    const char *s = NULL;
    for (size_t i = 0; i < t->n_events; i++) {
        const mt_event_t *e = &t->events[i];
        if (e->ph == MT_PH_M && mt_event_pid(t, e) == pid && !(e->flags & MT_EV_PID_STR) && !strcmp(mt_event_name(t, e), name)) {
            assert_null(s); /* one per pid */
            const mt_meta_t *m = &t->meta[e->aux - 1];
            s = mt_strtab_get(t->strings, m->str, NULL);
            if (value)
                *value = m->value;
        }
    }
    return s;
}

static size_t count_ph(const mt_trace_t *t, mt_phase_t ph)
{
    size_t n = 0;
    for (size_t i = 0; i < t->n_events; i++)
        n += t->events[i].ph == ph;
    return n;
}

static void test_two_rank_job(void **state)
{
    (void)state;
    mt_buf_t b = {0};
    uint64_t n0 = 0, n1 = 0;
    merge_job(&b, NULL, &n0, &n1);
    mt_trace_t *t = load_merged(&b);

    /* rank 0: 17 events - 5 process_* - 1 thread_name of the metadata-only
     * pid 1, + 2 (GPU 0) + 3 (pid -1) + 3 (pid 6583) + 2 ("Spans") + 2 ("")
     * new ones; rank 1: 9 - 2 + 2 (GPU 0) + 3 (pid 59811) + 2 ("Traces"). */
    assert_int_equal(n0, R0_EVENTS - 6 + 12);
    assert_int_equal(n1, R1_EVENTS - 2 + 7);
    assert_int_equal(t->n_events, 1 + n0 + n1);

    /* pids: (rank + 1) * 4096 + slot; slots: GPUs, numeric CPU pids
     * ascending, string pids in order of appearance. */
    const int64_t gpu0 = 4096, ovh = 4097, cpu0 = 4098, spans = 4099, empty = 4100;
    const int64_t gpu1 = 8192, cpu1 = 8193, traces = 8194;

    /* rank 0: B0 + ts + 1234567, no drift: durations unchanged */
    expect_x(t, "PyTorch Profiler (0)", spans, B0 + 990000 + 1234567, 300000);
    expect_x(t, "aten::mm", cpu0, B0 + 1000000 + 1234567, 10500);
    expect_x(t, "cudaLaunchKernel", cpu0, B0 + 1002250 + 1234567, 3125);
    expect_x(t, "gemm_kernel", gpu0, B0 + 1005000 + 1234567, 20000);
    expect_x(t, "Activity Buffer Request", ovh, B0 + 995000 + 1234567, 1000);
    assert_int_equal(find(t, "Record Window End", MT_PH_I, empty)->ts, B0 + 1200000 + 1234567);
    assert_int_equal(find(t, "thread_name", MT_PH_M, gpu0)->ts, B0 + 1234567);

    /* rank 1: t + llround(-2500 + 20e-6 * (t - A1)):
     *   A1+418000 -> -2491.64 -> -2492   A1+518000 -> -2489.64 -> -2490
     *   A1+420000 -> -2491.6  -> -2492   A1+500000 -> -2490
     *   A1+550000 -> -2489               A1 -> -2500, A1+1000000 -> -2480 */
    expect_x(t, "c10d::allreduce_", cpu1, A1 + 418000 - 2492, (518000 - 2490) - (418000 - 2492));
    expect_x(t, "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", gpu1,
             A1 + 500000 - 2490, 50001);
    expect_x(t, "PyTorch Profiler (0)", traces, A1 - 2500, 1000020);
    assert_int_equal(find(t, "thread_name", MT_PH_M, gpu1)->ts, A1 - 2500);

    /* flows: numeric ids rank * 2^32 + (id mod 2^32), string ids "r<rank>:" */
    const mt_event_t *s0 = find(t, "ac2g", MT_PH_S, cpu0), *f0 = find(t, "ac2g", MT_PH_F, gpu0);
    assert_int_equal(mt_event_corr(t, s0), 7);
    assert_int_equal(mt_event_corr(t, f0), 7);
    assert_int_equal(s0->ts, B0 + 1002250 + 1234567);
    const mt_event_t *s1 = find(t, "ac2g", MT_PH_S, cpu1), *f1 = find(t, "ac2g", MT_PH_F, gpu1);
    assert_int_equal(mt_event_corr(t, s1), 4294967296ULL + 5);
    assert_int_equal(mt_event_corr(t, f1), 4294967296ULL + 5);
    assert_int_equal(s1->ts, A1 + 420000 - 2492);
    assert_int_equal(f1->ts, A1 + 500000 - 2490);
    const mt_event_t *fb0 = find(t, "fwdbwd", MT_PH_S, cpu0), *fb1 = find(t, "fwdbwd", MT_PH_S, cpu1);
    assert_true(fb0->flags & MT_EV_ID_STR);
    assert_string_equal(mt_strtab_get(t->strings, (uint32_t)mt_event_corr(t, fb0), NULL), "r0:fb\"1");
    assert_string_equal(mt_strtab_get(t->strings, (uint32_t)mt_event_corr(t, fb1), NULL), "r1:x");
    assert_int_equal(fb1->ts, A1 + 418000 - 2492);

    /* everything else byte for byte: args, "s", "bp", tids */
    const char *text = b.data;
    size_t len = b.len;
    char *z = malloc(len + 1);
    memcpy(z, text, len);
    z[len] = '\0';
    assert_non_null(strstr(z, "\"args\": {\"External id\": 1, \"note\": \"say \\\"hi\\\" \\u00e9\\u2603 \\\\ end\"}}"));
    assert_non_null(strstr(z, "{\"ph\": \"f\", \"id\": 4294967301, \"pid\": 8192, \"tid\": 84, \"ts\": 1694128201435497.510,"
                              " \"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"}"));
    assert_non_null(strstr(z, "{\"ph\": \"s\", \"id\": \"r0:fb\\\"1\", \"pid\": 4098, \"tid\": 6583, "
                              "\"ts\": 1767189312002234.567, \"cat\": \"fwdbwd\", \"name\": \"fwdbwd\"}"));
    assert_non_null(strstr(z, "\"pid\": 4100, \"tid\": \"\", \"ts\": 1767189312002434.567}"));
    assert_non_null(strstr(z, "\"args\": {\"correlation\": 8589934597, \"device\": 0}}"));
    assert_non_null(strstr(z, "\"otherData\":{\"generator\":\"mergetrace " MERGETRACE_VERSION "\",\"ranks\":[0,1]}"));
    assert_null(strstr(z, "{\"name\": \"python3\"}")); /* the original process names are gone */
    assert_null(strstr(z, "stream 9 "));   /* and so is the metadata-only pid */
    free(z);

    /* the new process metadata */
    int64_t v = 0;
    assert_string_equal(meta_of(t, "process_name", 0, NULL), "mergetrace merged timeline");
    assert_string_equal(meta_of(t, "process_name", gpu0, NULL), "rank 0 GPU 0");
    assert_string_equal(meta_of(t, "process_name", ovh, NULL), "rank 0 CPU");
    assert_string_equal(meta_of(t, "process_labels", ovh, NULL), "pid -1");
    assert_string_equal(meta_of(t, "process_name", cpu0, NULL), "rank 0 CPU");
    assert_string_equal(meta_of(t, "process_labels", cpu0, NULL), "pid 6583");
    assert_string_equal(meta_of(t, "process_name", spans, NULL), "rank 0 Spans");
    assert_string_equal(meta_of(t, "process_name", empty, NULL), "rank 0 (empty pid)");
    assert_string_equal(meta_of(t, "process_name", gpu1, NULL), "rank 1 GPU 0");
    assert_string_equal(meta_of(t, "process_name", cpu1, NULL), "rank 1 CPU");
    assert_string_equal(meta_of(t, "process_labels", cpu1, NULL), "pid 59811");
    assert_string_equal(meta_of(t, "process_name", traces, NULL), "rank 1 Traces");
    assert_null(meta_of(t, "process_labels", gpu0, NULL));
    assert_null(meta_of(t, "process_name", 4101, NULL));
    const int64_t all[] = {gpu0, ovh, cpu0, spans, empty, gpu1, cpu1, traces};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        assert_non_null(meta_of(t, "process_sort_index", all[i], &v));
        assert_int_equal(v, all[i]);
    }
    assert_string_equal(meta_of(t, "thread_name", gpu1, NULL), "stream 84 ");
    /* the new metadata sits at the rank's first event (the Trace spans) */
    assert_int_equal(find(t, "process_name", MT_PH_M, empty)->ts, B0 + 990000 + 1234567);
    assert_int_equal(find(t, "process_sort_index", MT_PH_M, cpu1)->ts, A1 - 2500);
    /* no event keeps an original pid */
    for (size_t i = 0; i < t->n_events; i++) {
        const mt_event_t *e = &t->events[i];
        assert_false(e->flags & MT_EV_PID_STR);
        if (mt_event_pid(t, e) != 0)
            assert_true((mt_event_pid(t, e) >= 4096 && mt_event_pid(t, e) <= 4100) || (mt_event_pid(t, e) >= 8192 && mt_event_pid(t, e) <= 8194));
    }
    assert_int_equal(count_ph(t, MT_PH_M), 1 + 12 + 2 + 7 + 1);
    mt_trace_free(t);
    mt_buf_free(&b);
}

static void test_gpu_only_and_window(void **state)
{
    (void)state;
    mt_buf_t b = {0};
    uint64_t n0 = 0, n1 = 0;
    mt_merge_opts_t o = {.gpu_only = true};
    merge_job(&b, &o, &n0, &n1);
    mt_trace_t *t = load_merged(&b);
    /* per rank: the kernel, the ac2g "f", the stream's thread_name, and the
     * GPU's process_name + process_sort_index */
    assert_int_equal(n0, 5);
    assert_int_equal(n1, 5);
    assert_int_equal(t->n_events, 11);
    expect_x(t, "gemm_kernel", 4096, B0 + 1005000 + 1234567, 20000);
    assert_string_equal(meta_of(t, "process_name", 8192, NULL), "rank 1 GPU 0");
    mt_trace_free(t);
    mt_buf_free(&b);

    /* Window [B0+2230000, B0+2236000] on rank 0 (corrected times): kept
     * are the Trace span (overlaps), aten::mm (starts inside), the fwdbwd
     * "s" (at B0+2234567) and the overhead event, which ends exactly at
     * B0+2230567 inside; the launch (B0+2236817), kernel, flows and the
     * window end lie after. M events stay. */
    mt_buf_t w = {0};
    const char *p0 = tmp_file("rank-0w.json", rank0_json, sizeof rank0_json - 1);
    o = (mt_merge_opts_t){.window_start_ns = B0 + 2230000, .window_end_ns = B0 + 2236000};
    assert_int_equal(mt_merge_header(mt_buf_write, &w), MT_OK);
    merge_ok(p0, 0, &clock0, &o, &w, &n0);
    assert_int_equal(mt_merge_footer(NULL, 0, mt_buf_write, &w), MT_OK);
    t = load_merged(&w);
    assert_int_equal(n0, 4 + 2 + 12);
    assert_int_equal(t->n_events, 1 + n0);
    expect_x(t, "Activity Buffer Request", 4097, B0 + 995000 + 1234567, 1000);
    expect_x(t, "aten::mm", 4098, B0 + 1000000 + 1234567, 10500);
    assert_null(find_event(t, "cudaLaunchKernel"));
    assert_null(find_event(t, "gemm_kernel"));
    mt_trace_free(t);

    /* a window ending one ns before the overhead event starts drops it */
    mt_buf_free(&w);
    o.window_start_ns = B0 + 1000;
    o.window_end_ns = B0 + 995000 + 1234567 - 1;
    merge_ok(p0, 0, &clock0, &o, &w, &n0);
    assert_int_equal(n0, 1 + 2 + 12); /* only the Trace span */
    mt_buf_free(&w);

    /* an empty window is a usage error */
    mt_error_t err;
    o.window_start_ns = 10;
    o.window_end_ns = 5;
    assert_int_equal(mt_merge_rank(p0, 0, NULL, &o, mt_buf_write, &w, NULL, &err), MT_ERR_USAGE);
    mt_buf_free(&w);
}

/* gzip input, and the identity clock. */
static void test_gzip_and_identity(void **state)
{
    (void)state;
    const char *plain = tmp_file("rank-0p.json", rank0_json, sizeof rank0_json - 1);
    size_t gl = 0;
    unsigned char *gz = gzip_bytes(rank0_json, sizeof rank0_json - 1, &gl);
    assert_non_null(gz);
    const char *zipped = tmp_file("rank-0.json.gz", gz, gl);
    free(gz);
    mt_buf_t a = {0}, b = {0};
    uint64_t na = 0, nb = 0;
    merge_ok(plain, 0, &clock0, NULL, &a, &na);
    merge_ok(zipped, 0, &clock0, NULL, &b, &nb);
    assert_int_equal(na, nb);
    assert_int_equal(a.len, b.len);
    assert_memory_equal(a.data, b.data, a.len);
    mt_buf_free(&a);
    mt_buf_free(&b);

    /* identity: the absolute time itself, in us with 3 decimals */
    assert_int_equal(mt_merge_header(mt_buf_write, &a), MT_OK);
    merge_ok(plain, 0, NULL, NULL, &a, &na);
    assert_int_equal(mt_merge_footer(NULL, 0, mt_buf_write, &a), MT_OK);
    mt_trace_t *t = load_merged(&a);
    expect_x(t, "gemm_kernel", 4096, B0 + 1005000, 20000);
    char *z = malloc(a.len + 1);
    memcpy(z, a.data, a.len);
    z[a.len] = '\0';
    assert_non_null(strstr(z, "\"ts\": 1767189312001005.000, \"dur\": 20.000,"));
    free(z);
    mt_trace_free(t);
    mt_buf_free(&a);
}

/* Odd events: no pid (taken as pid 0, which gets a "pid" key), ids that are
 * negative or fractions, a "ts" that is not a number, a negative
 * correction, an event with no keys. */
static void test_odd_events(void **state)
{
    (void)state;
    static const char json[] =
        "[{\"name\": \"nopid\", \"ph\": \"i\", \"ts\": 1},\n"
        " { },\n"
        " {\"name\": \"neg\", \"ph\": \"s\", \"id\": -1, \"pid\": 5, \"tid\": 1, \"ts\": 2},\n"
        " {\"name\": \"frac\", \"ph\": \"s\", \"id\": 1.5, \"pid\": 5, \"tid\": 1, \"ts\": 2},\n"
        " {\"name\": \"big\", \"ph\": \"f\", \"id\": 18446744073709551615, \"pid\": 5, \"tid\": 1, \"ts\": 2}]";
    const char *p = tmp_file("odd.json", json, sizeof json - 1);
    mt_clock_t back = {.offset_ns = -3000.0}; /* times before 0 */
    mt_buf_t b = {0};
    uint64_t n = 0;
    assert_int_equal(mt_merge_header(mt_buf_write, &b), MT_OK);
    merge_ok(p, 3, &back, NULL, &b, &n);
    assert_int_equal(mt_merge_footer(NULL, 0, mt_buf_write, &b), MT_OK);
    mt_trace_t *t = load_merged(&b);
    /* pid 0 (slot 0) and pid 5 (slot 1): 3 + 3 metadata, 5 events */
    assert_int_equal(n, 11);
    char *z = malloc(b.len + 1);
    memcpy(z, b.data, b.len);
    z[b.len] = '\0';
    assert_non_null(strstr(z, "{\"pid\":16384,\"name\": \"nopid\", \"ph\": \"i\", \"ts\": -2.000}"));
    assert_non_null(strstr(z, "{\"pid\":16384 }"));
    /* (3 << 32) + (2^32 - 1), from -1 and from 2^64 - 1 */
    assert_non_null(strstr(z, "\"neg\", \"ph\": \"s\", \"id\": 17179869183, \"pid\": 16385, \"tid\": 1, \"ts\": -1.000}"));
    assert_non_null(strstr(z, "\"big\", \"ph\": \"f\", \"id\": 17179869183, \"pid\": 16385, \"tid\": 1, \"ts\": -1.000}"));
    assert_non_null(strstr(z, "\"frac\", \"ph\": \"s\", \"id\": \"r3:1.5\", \"pid\": 16385,"));
    free(z);
    assert_int_equal(find(t, "nopid", MT_PH_I, 16384)->ts, -2000);
    mt_trace_free(t);
    mt_buf_free(&b);
}

static void test_format_us(void **state)
{
    (void)state;
    char b[24];
    static const struct {
        int64_t ns;
        const char *s;
    } cases[] = {
        {0, "0.000"},
        {1, "0.001"},
        {-1, "-0.001"},
        {-1500, "-1.500"},
        {999, "0.999"},
        {1000, "1.000"},
        {1767189312002234567LL, "1767189312002234.567"},
        {INT64_MAX, "9223372036854775.807"},
        {INT64_MIN, "-9223372036854775.808"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        assert_int_equal(mt_fmt_us(cases[i].ns, b), strlen(cases[i].s));
        assert_string_equal(b, cases[i].s);
    }
}

static bool buf_has(const mt_buf_t *b, const char *s)
{
    size_t n = strlen(s);
    for (size_t i = 0; i + n <= b->len; i++)
        if (!memcmp(b->data + i, s, n))
            return true;
    return false;
}

/* mt_buf_reserve makes room without changing len; append fills it. */
static void test_buf_reserve(void **state)
{
    (void)state;
    mt_buf_t b = {0};
    assert_int_equal(mt_buf_append(&b, "abc", 3), MT_OK);
    assert_int_equal(mt_buf_reserve(&b, 1000), MT_OK);
    assert_int_equal(b.len, 3);
    assert_true(b.cap - b.len >= 1000);
    char *before = b.data;
    size_t cap = b.cap;
    memset(b.data + b.len, 'x', 1000); /* the room is writable */
    assert_int_equal(mt_buf_reserve(&b, cap - 3), MT_OK); /* fits: no move */
    assert_ptr_equal(b.data, before);
    assert_int_equal(mt_buf_reserve(&b, (size_t)-1), MT_ERR_NOMEM);
    assert_int_equal(b.len, 3);
    assert_memory_equal(b.data, "abc", 3);
    mt_buf_free(&b);
}

/* Bytes that are not UTF-8 inside a string become U+FFFD in the merged
 * trace and valid UTF-8 passes unchanged, wherever they fall relative to the
 * eight-byte steps of the scan: names padded by 0..15 ASCII bytes. */
static void test_utf8_repair(void **state)
{
    (void)state;
    for (int pad = 0; pad < 16; pad++) {
        char name[64];
        memset(name, 'a', (size_t)pad);
        /* a stray continuation byte, a valid e-acute, a cut 3-byte lead, 0xFF */
        strcpy(name + pad, "\x80x\xC3\xA9y\xE2\x82z\xFF");
        char json[256];
        int len = snprintf(json, sizeof json, "[{\"name\": \"%s\", \"ph\": \"i\", \"ts\": 1, \"pid\": 1, \"tid\": 1}]",
                           name);
        const char *p = tmp_file("utf8.json", json, (size_t)len);
        mt_buf_t b = {0};
        merge_ok(p, 0, NULL, NULL, &b, NULL);
        char want[64];
        memset(want, 'a', (size_t)pad);
        /* E2 82 then 'z': the lead and the continuation each replaced */
        strcpy(want + pad, "\xEF\xBF\xBDx\xC3\xA9y\xEF\xBF\xBD\xEF\xBF\xBDz\xEF\xBF\xBD\"");
        assert_true(buf_has(&b, want));
        mt_buf_free(&b);
    }
}

static mt_status_t fail_write(void *ctx, const void *data, size_t len)
{
    (void)data;
    (void)len;
    int *calls = ctx;
    return ++*calls >= 1 ? MT_ERR_IO : MT_OK;
}

/* A trace with n numeric pids, one X event each. */
static void many_pids(mt_buf_t *j, int n)
{
    assert_int_equal(mt_buf_append(j, "{\"traceEvents\": [", 17), MT_OK);
    for (int i = 0; i < n; i++) {
        char e[96];
        int k = snprintf(e, sizeof e, "%s{\"ph\": \"X\", \"name\": \"a\", \"ts\": 1, \"dur\": 1, \"pid\": %d, \"tid\": 1}",
                         i ? ",\n" : "", i);
        assert_int_equal(mt_buf_append(j, e, (size_t)k), MT_OK);
    }
    assert_int_equal(mt_buf_append(j, "]}", 2), MT_OK);
}

static void test_errors(void **state)
{
    (void)state;
    mt_error_t err;
    mt_buf_t b = {0};
    char m[1200];
    /* missing file */
    assert_int_equal(mt_merge_rank(MT_TEST_TMP "/merge_missing.json", 2, NULL, NULL, mt_buf_write, &b, NULL, &err),
                     MT_ERR_IO);
    assert_non_null(strstr(mt_error_format(&err, m, sizeof m), "merge_missing.json"));
    /* bad JSON: the loader's position */
    static const char bad[] = "{\"traceEvents\": [{\"ph\": \"X\", \"ts\": 1,}]}";
    const char *pb = tmp_file("bad.json", bad, sizeof bad - 1);
    assert_int_equal(mt_merge_rank(pb, 2, NULL, NULL, mt_buf_write, &b, NULL, &err), MT_ERR_SYNTAX);
    assert_int_equal(err.offset, 37);
    mt_buf_free(&b);
    /* a "ts" that is not a number: an error at its byte, never copied through */
    static const char strts[] = "{\"traceEvents\": [{\"ph\": \"X\", \"ts\": \"soon\", \"dur\": 1}]}";
    const char *ps = tmp_file("strts.json", strts, sizeof strts - 1);
    assert_int_equal(mt_merge_rank(ps, 2, NULL, NULL, mt_buf_write, &b, NULL, &err), MT_ERR_FORMAT);
    assert_int_equal(err.offset, 35);
    mt_buf_free(&b);
    /* rank out of range */
    const char *p0 = tmp_file("rank-0e.json", rank0_json, sizeof rank0_json - 1);
    assert_int_equal(mt_merge_rank(p0, -1, NULL, NULL, mt_buf_write, &b, NULL, &err), MT_ERR_LIMIT);
    assert_int_equal(mt_merge_rank(p0, MT_MERGE_MAX_RANK + 1, NULL, NULL, mt_buf_write, &b, NULL, &err), MT_ERR_LIMIT);
    assert_int_equal(b.len, 0);
    /* the write callback's failure is returned, without an input position */
    int calls = 0;
    assert_int_equal(mt_merge_rank(p0, 0, NULL, NULL, fail_write, &calls, NULL, &err), MT_ERR_IO);
    assert_int_equal(calls, 1);
    assert_int_equal(err.offset, -1);
    calls = 0;
    assert_int_equal(mt_merge_header(fail_write, &calls), MT_ERR_IO);

    /* more than 4095 pids in one rank (the last slot is the rank's
     * Flight Recorder entries', MT_MERGE_FR_SLOT) */
    mt_buf_t j = {0};
    many_pids(&j, MT_MERGE_FR_SLOT + 1);
    const char *pm = tmp_file("many.json", j.data, j.len);
    assert_int_equal(mt_merge_rank(pm, 0, NULL, NULL, mt_buf_write, &b, NULL, &err), MT_ERR_LIMIT);
    assert_non_null(strstr(mt_error_format(&err, m, sizeof m), "4096 distinct pids"));
    assert_int_equal(b.len, 0);
    mt_buf_free(&j);
    /* exactly 4095 is fine: the last one gets slot 4094 */
    many_pids(&j, MT_MERGE_FR_SLOT);
    pm = tmp_file("many.json", j.data, j.len);
    uint64_t n = 0;
    merge_ok(pm, 0, NULL, NULL, &b, &n);
    assert_int_equal(n, 4095 * 4);
    assert_true(buf_has(&b, "\"pid\": 8190, \"tid\": 1}"));
    mt_buf_free(&j);
    mt_buf_free(&b);
    mt_buf_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_rank_job),     cmocka_unit_test(test_gpu_only_and_window),
        cmocka_unit_test(test_gzip_and_identity), cmocka_unit_test(test_odd_events),
        cmocka_unit_test(test_format_us),         cmocka_unit_test(test_errors),
        cmocka_unit_test(test_utf8_repair),        cmocka_unit_test(test_buf_reserve),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
