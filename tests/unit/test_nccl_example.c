/* Tests of the reader of NCCL example profiler traces (src/nccl_example.c):
 * texts written here the way the plugin prints them (one event per line,
 * "{}]" at the end, API events with unquoted datatypes and stream pointers
 * and zero "ts"), fields and GPU times checked against the numbers
 * written, the sniffer against a Kineto array, file names, a copy cut
 * short, errors with positions, and two ranks matched by (CommHash, func,
 * SeqNum) and aligned with the known offset between their GPU clocks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mergetrace/classify.h"
#include "mergetrace/collectives.h"
#include "mergetrace/nccl_input.h"
#include "nccl/probe.h"
#include "test_util.h"

#define HASH "12715772615376301750"
#define HASH_U 12715772615376301750ULL
#define G0 1765223116927674080LL /* a GPU globaltimer reading, ns */

static size_t add(char *buf, size_t cap, size_t n, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static size_t add(char *buf, size_t cap, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(buf + n, cap - n, fmt, ap);
    va_end(ap);
    assert_true(w > 0 && (size_t)w < cap - n);
    return n + (size_t)w;
}

/* One AllReduce as the plugin prints it inside its group and API events:
 * two kernel channels, the first from g_start to g_stop - 5000, the second
 * from g_start + 3000 to g_stop; host "ts" in us from ts_us. */
static size_t coll(char *b, size_t cap, size_t n, int rank, int seq, int64_t g_start, int64_t g_stop, double ts_us)
{
    n = add(b, cap, n,
            "{\"name\": \"Group API\", \"cat\": \"GROUP_API\", \"ph\": \"b\", \"id\": %d, \"pid\": 4242, \"tid\": 1, "
            "\"ts\": %f, \"args\": {\"groupApiId\": %d, \"groupDepth\": 1}},\n",
            seq, ts_us, seq);
    n = add(b, cap, n,
            "{\"name\": \"AllReduce\", \"cat\": \"COLL_API\", \"ph\": \"b\", \"id\": %d, \"pid\": 4242, \"tid\": 1, "
            "\"ts\": 0.000000, \"args\": {\"count\": 1048576, \"datatype\": ncclFloat32, \"root\": 0, "
            "\"GraphCaptured\": 0, \"Stream\": 0x55d0c0ffee00}},\n",
            seq);
    n = add(b, cap, n,
            "{\"name\": \"AllReduce\", \"cat\": \"COLL\", \"ph\": \"b\", \"id\": %d, \"pid\": 4242, \"tid\": 1, "
            "\"ts\": %f, \"args\": {\"SeqNum\": %d, \"CommHash\": " HASH ", \"Rank\": %d, \"Count\": 1048576, "
            "\"Datatype\": \"ncclFloat32\", \"Algorithm\": \"RING\", \"Protocol\": \"SIMPLE\", \"nChannels\": 2}},\n",
            seq, ts_us + 1.5, seq, rank);
    for (int ch = 0; ch < 2; ch++) {
        n = add(b, cap, n,
                "{\"name\": \"KernelCh\", \"cat\": \"GPU\", \"ph\": \"b\", \"id\": 0, \"pid\": 4242, \"tid\": 1, "
                "\"ts\": %f, \"args\": {\"Channel\": %d, \"StartGpuClk\": %lld, \"StopGpuClk\": %lld}},\n",
                ts_us + 9.25, ch, (long long)(ch ? g_start + 3000 : g_start),
                (long long)(ch ? g_stop : g_stop - 5000));
        if (ch == 0)
            n = add(b, cap, n,
                    "{\"name\": \"ScheduleSend\", \"cat\": \"PROXY\", \"ph\": \"b\", \"id\": 0, \"pid\": 4242, "
                    "\"tid\": 1, \"ts\": %f, \"args\": {\"Channel\": 0, \"Peer\": 1, \"Steps\": 8, \"ChunkSize\": "
                    "524288, \"transSize\": 0}},\n{\"name\": \"ScheduleSend\", \"cat\": \"PROXY\", \"ph\": \"e\", "
                    "\"id\": 0, \"pid\": 4242, \"tid\": 1, \"ts\": %f},\n",
                    ts_us + 3, ts_us + 4);
        n = add(b, cap, n,
                "{\"name\": \"KernelCh\", \"cat\": \"GPU\", \"ph\": \"e\", \"id\": 0, \"pid\": 4242, \"tid\": 1, "
                "\"ts\": %f},\n",
                ts_us + 400);
    }
    n = add(b, cap, n,
            "{\"name\": \"AllReduce\", \"cat\": \"COLL\", \"ph\": \"e\", \"id\": %d, \"pid\": 4242, \"tid\": 1, "
            "\"ts\": %f},\n",
            seq, ts_us + 401.125);
    n = add(b, cap, n,
            "{\"name\": \"AllReduce\", \"cat\": \"COLL_API\", \"ph\": \"e\", \"id\": %d, \"pid\": 4242, \"tid\": 1, "
            "\"ts\": %f},\n{\"name\": \"Group API\", \"cat\": \"GROUP_API\", \"ph\": \"e\", \"id\": %d, \"pid\": "
            "4242, \"tid\": 1, \"ts\": %f},\n",
            seq, ts_us + 2, seq, ts_us + 2.5);
    return n;
}

/* Rank r's file: AllReduce seq 0..2 (1 ms apart, GPU clock gpu_off ns
 * ahead of true time), a Broadcast without kernel channels, a Send to
 * rank 1 - r with one channel, "{}]". */
static char *rank_file(int r, int64_t gpu_off, size_t *len)
{
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap);
    assert_non_null(b);
    n = add(b, cap, n, "[\n");
    for (int k = 0; k < 3; k++)
        n = coll(b, cap, n, r, k, G0 + 1000000LL * k + gpu_off, G0 + 1000000LL * k + 400000 + gpu_off,
                 1467846.533691 + 1000.0 * k);
    n = add(b, cap, n,
            "{\"name\": \"Broadcast\", \"cat\": \"COLL\", \"ph\": \"b\", \"id\": 3, \"pid\": 4242, \"tid\": 1, "
            "\"ts\": 1470900.000000, \"args\": {\"SeqNum\": 0, \"CommHash\": " HASH ", \"Rank\": %d, \"Count\": 8, "
            "\"Datatype\": \"ncclInt8\", \"Algorithm\": \"RING\", \"Protocol\": \"LL\", \"nChannels\": 1}},\n"
            "{\"name\": \"Broadcast\", \"cat\": \"COLL\", \"ph\": \"e\", \"id\": 3, \"pid\": 4242, \"tid\": 1, "
            "\"ts\": 1470910.000000},\n",
            r);
    n = add(b, cap, n,
            "{\"name\": \"%s\", \"cat\": \"P2P_API\", \"ph\": \"b\", \"id\": 0, \"pid\": 4242, \"tid\": 1, \"ts\": "
            "0.000000, \"args\": {\"count\": 64, \"datatype\": ncclFloat32, \"GraphCaptured\": 0, \"Stream\": "
            "(nil)}},\n"
            "{\"name\": \"%s\", \"cat\": \"P2P\", \"ph\": \"b\", \"id\": 0, \"pid\": 4242, \"tid\": 1, \"ts\": "
            "1471000.000000, \"args\": {\"CommHash\": " HASH ", \"Rank\": %d, \"Peer\": %d, \"Count\": 64, "
            "\"Datatype\": \"ncclFloat32\", \"nChannels\": 1}},\n"
            "{\"name\": \"KernelCh\", \"cat\": \"GPU\", \"ph\": \"b\", \"id\": 0, \"pid\": 4242, \"tid\": 1, \"ts\": "
            "1471010.000000, \"args\": {\"Channel\": 0, \"StartGpuClk\": %lld, \"StopGpuClk\": %lld}},\n"
            "{\"name\": \"KernelCh\", \"cat\": \"GPU\", \"ph\": \"e\", \"id\": 0, \"pid\": 4242, \"tid\": 1, \"ts\": "
            "1471020.000000},\n"
            "{\"name\": \"%s\", \"cat\": \"P2P\", \"ph\": \"e\", \"id\": 0, \"pid\": 4242, \"tid\": 1, \"ts\": "
            "1471030.000000},\n",
            r ? "Recv" : "Send", r ? "Recv" : "Send", r, 1 - r, (long long)(G0 + 4000000 + gpu_off),
            (long long)(G0 + 4010000 + gpu_off), r ? "Recv" : "Send");
    n = add(b, cap, n, "{}]\n");
    *len = n;
    return b;
}

static void test_fields(void **state)
{
    (void)state;
    size_t len;
    char *text = rank_file(0, 0, &len);
    assert_true(mt_nccl_example_sniff(text, len));
    mt_nccl_file_t *f = NULL;
    mt_error_t err;
    assert_int_equal(mt_nccl_example_parse(text, len, "x.json", &f, &err), MT_OK);
    assert_int_equal(f->pid, 4242);
    assert_false(f->truncated);
    assert_int_equal(f->n_comms, 1);
    assert_true(f->comms[0].hash == HASH_U);
    assert_int_equal(f->comms[0].rank, 0);
    assert_int_equal(f->comms[0].nranks, 0); /* not in the file */
    assert_false(f->has_offset_bound);
    assert_int_equal(f->n_tasks, 5);
    assert_int_equal(f->orphan_kch, 0);
    assert_int_equal(f->skipped_lines, 0);
    /* by host start: the three AllReduce, the Broadcast, the Send */
    const mt_nccl_task_t *t = &f->tasks[1];
    assert_string_equal(t->func, "AllReduce");
    assert_int_equal(t->kind, MT_COLLK_ALLREDUCE);
    assert_int_equal(t->seq, 1);
    assert_int_equal(t->count, 1048576);
    assert_string_equal(t->datatype, "ncclFloat32");
    assert_string_equal(t->algo, "RING");
    assert_string_equal(t->proto, "SIMPLE");
    assert_int_equal(t->n_channels, 2);
    assert_int_equal(t->n_kch, 2);
    assert_int_equal(t->n_kch_open, 0);
    /* channel 0 starts first, channel 1 stops last */
    assert_true(t->gpu_start_ns == G0 + 1000000);
    assert_true(t->gpu_stop_ns == G0 + 1400000);
    /* exactly: (1467846.533691 + 1000 + 1.5) us = 1468848.033691 us = 1468848033.691 ns -> 1468848034 */
    assert_true(t->host_start_ns == 1468848034LL);
    assert_true(t->host_stop_ns == 1468848034LL - 1500 + 401125);
    const mt_nccl_task_t *bc = &f->tasks[3];
    assert_string_equal(bc->func, "Broadcast");
    assert_int_equal(bc->n_kch, 0);
    assert_true(bc->gpu_start_ns == -1 && bc->gpu_stop_ns == -1);
    const mt_nccl_task_t *s = &f->tasks[4];
    assert_true(s->is_p2p);
    assert_int_equal(s->kind, MT_COLLK_SEND);
    assert_int_equal(s->seq, -1);
    assert_int_equal(s->root_or_peer, 1);
    assert_true(s->gpu_start_ns == G0 + 4000000 && s->gpu_stop_ns == G0 + 4010000);
    mt_nccl_file_free(f);
    free(text);
}

static void test_sniff_and_names(void **state)
{
    (void)state;
    static const char kineto[] = "[{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, "
                                 "\"ts\": 1, \"dur\": 2}]";
    assert_false(mt_nccl_example_sniff(kineto, sizeof kineto - 1));
    static const char obj[] = "{\"traceEvents\": []}";
    assert_false(mt_nccl_example_sniff(obj, sizeof obj - 1));
    static const char proxy[] = "[\n{\"name\": \"Idle\", \"cat\": \"PROXY\", \"ph\": \"b\", \"id\": 0, \"pid\": 1, "
                                "\"tid\": 1, \"ts\": 0.5},\n";
    assert_true(mt_nccl_example_sniff(proxy, sizeof proxy - 1));
    /* cut inside the first event, after "ph" */
    assert_true(mt_nccl_example_sniff(proxy, 60));
    assert_false(mt_nccl_example_sniff(proxy, 30));
    uint64_t h = 0;
    int32_t r = -1;
    assert_true(mt_nccl_example_name("/a/b/nccl_profile_" HASH "_7.json", &h, &r));
    assert_true(h == HASH_U && r == 7);
    assert_true(mt_nccl_example_name("dump_" HASH "_12.json.gz", &h, &r));
    assert_int_equal(r, 12);
    assert_false(mt_nccl_example_name("rank_0_1.json", &h, &r));       /* 1 digit is no hash */
    assert_false(mt_nccl_example_name(HASH "_3.json", &h, &r));         /* nothing before the hash */
    assert_false(mt_nccl_example_name("x_" HASH "_3.jsonl", &h, &r));
    assert_false(mt_nccl_example_name("x_99999999999999999999_3.json", &h, &r)); /* beyond uint64 */
}

/* A copy cut at every byte parses to the complete events before the cut
 * (or fails cleanly inside the first bytes), never reads past it. */
static void test_truncated(void **state)
{
    (void)state;
    size_t len;
    char *text = rank_file(1, 0, &len);
    size_t prev_tasks = 0;
    for (size_t cut = 0; cut < len; cut++) {
        char *copy = malloc(cut ? cut : 1);
        assert_non_null(copy);
        memcpy(copy, text, cut);
        mt_nccl_file_t *f = NULL;
        mt_error_t err;
        mt_status_t st = mt_nccl_example_parse(copy, cut, "cut.json", &f, &err);
        if (cut == 0) {
            assert_int_equal(st, MT_ERR_FORMAT);
        } else {
            assert_int_equal(st, MT_OK);
            assert_true(f->truncated == (cut < len - 1)); /* only the final newline may go */
            assert_true(f->n_tasks >= prev_tasks);
            prev_tasks = f->n_tasks;
            mt_nccl_file_free(f);
        }
        free(copy);
    }
    assert_int_equal(prev_tasks, 5);
    free(text);
}

static void expect_error(const char *text, mt_status_t code, int64_t offset, int64_t line, int64_t col,
                         const char *words)
{
    mt_nccl_file_t *f = NULL;
    mt_error_t err;
    mt_status_t st = mt_nccl_example_parse(text, strlen(text), "e.json", &f, &err);
    if (st != code || err.offset != offset || err.line != line || err.col != col || !strstr(err.msg, words))
        fail_msg("%s: got %d at %lld (%lld:%lld) '%s'", text, st, (long long)err.offset, (long long)err.line,
                 (long long)err.col, err.msg);
    assert_null(f);
}

static void test_errors(void **state)
{
    (void)state;
#define E0 "[\n{\"name\": \"Idle\", \"cat\": \"PROXY\", \"ph\": \"b\", \"ts\": 1},\n" /* 56 bytes */
    expect_error("{\"traceEvents\": []}", MT_ERR_FORMAT, 0, 1, 1, "JSON array");
    expect_error(E0 "x\n]\n", MT_ERR_SYNTAX, 56, 3, 1, "event object");
    expect_error(E0 "{\"name\" \"x\"}]\n", MT_ERR_SYNTAX, 56 + 8, 3, 9, "':'");
    expect_error(E0 "{\"name\": \"x\" \"cat\": 1}]\n", MT_ERR_SYNTAX, 56 + 13, 3, 14, "',' or '}'");
    expect_error(E0 "{\"name\": \"AllReduce\", \"cat\": \"COLL\", \"ph\": \"b\", \"args\": {\"CommHash\": 1}}]\n",
                 MT_ERR_FORMAT, 56, 3, 1, "SeqNum");
    expect_error(E0 "{\"name\": \"Send\", \"cat\": \"P2P\", \"ph\": \"b\", \"args\": {\"CommHash\": -1, \"Rank\": 0}}]\n",
                 MT_ERR_FORMAT, 56 + 63, 3, 64, "CommHash");
    expect_error(E0 "{\"name\": \"Send\", \"cat\": \"P2P\", \"ph\": \"b\", \"args\": {\"CommHash\": 1, \"Rank\": 3000000000}}]\n",
                 MT_ERR_RANGE, 56, 3, 1, "Rank");
    expect_error(E0 "{}]\n{}\n", MT_ERR_SYNTAX, 56 + 4, 4, 1, "after the closing");
    expect_error(E0 "{\"a\": \"b\nc\"}]", MT_ERR_SYNTAX, 56 + 8, 3, 9, "end of line");
    /* nesting: skipped without recursion, up to 64 levels */
    size_t deep = 100000, cap = 64 + 8 * deep;
    char *d = malloc(cap);
    assert_non_null(d);
    size_t n = (size_t)snprintf(d, cap, "[\n{\"args\": {\"x\": ");
    for (size_t i = 0; i < deep; i++)
        n += (size_t)snprintf(d + n, cap - n, "{\"a\": ");
    n += (size_t)snprintf(d + n, cap - n, "1");
    for (size_t i = 0; i < deep; i++)
        d[n++] = '}';
    memcpy(d + n, "}}]\n", 5);
    mt_nccl_file_t *f = NULL;
    mt_error_t err;
    assert_int_equal(mt_nccl_example_parse(d, strlen(d), "deep.json", &f, &err), MT_ERR_LIMIT);
    assert_null(f);
    /* 40 levels are fine */
    n = (size_t)snprintf(d, cap, "[\n{\"args\": {\"x\": ");
    for (size_t i = 0; i < 40; i++)
        n += (size_t)snprintf(d + n, cap - n, "{\"a\": ");
    n += (size_t)snprintf(d + n, cap - n, "1");
    for (size_t i = 0; i < 40; i++)
        d[n++] = '}';
    memcpy(d + n, "}}]\n", 5);
    assert_int_equal(mt_nccl_example_parse(d, strlen(d), "deep.json", &f, &err), MT_OK);
    assert_int_equal(f->n_tasks, 0);
    mt_nccl_file_free(f);
    free(d);
#undef E0
}

/* Two ranks, rank 1's GPU clock 5 ms ahead: the AllReduce instances match
 * by (CommHash, func, SeqNum), the Send/Recv pair by peers, the untimed
 * Broadcast gives no row, and the fit puts rank 1 at -5 ms. */
static void test_match_and_align(void **state)
{
    (void)state;
    mt_cinst_t *rows = NULL;
    size_t n = 0, cap = 0;
    for (int r = 0; r < 2; r++) {
        size_t len;
        char *text = rank_file(r, r ? 5000000 : 0, &len);
        mt_nccl_file_t *f = NULL;
        mt_error_t err;
        assert_int_equal(mt_nccl_example_parse(text, len, "r.json", &f, &err), MT_OK);
        size_t before = n;
        uint64_t skipped = 0;
        assert_int_equal(mt_nccl_cinst_extract(f, r, tu_labels(), &rows, &n, &cap, &skipped), MT_OK);
        assert_int_equal(skipped, 0);
        assert_int_equal(n - before, 4); /* 3 AllReduce + the P2P; not the Broadcast */
        assert_true(rows[before].flags & MT_CI_NCCL);
        assert_true(rows[before].start_ns == G0 + (r ? 5000000 : 0)); /* the GPU clock as it is */
        assert_int_equal(rows[before + 3].peer, 1 - r);
        mt_nccl_file_free(f);
        free(text);
    }
    mt_match_t *m = NULL;
    mt_match_stats_t ms;
    assert_int_equal(mt_match(rows, n, &m, &ms), MT_OK);
    assert_int_equal(ms.by_key[MT_KEY_COMMS_ID], 3);
    assert_int_equal(ms.by_key[MT_KEY_P2P], 1);
    assert_int_equal(ms.unmatched, 0);
    int32_t ranks[2] = {0, 1};
    mt_clock_t clk[2];
    mt_clock_opts_t co = {.ref_rank = 0, .no_drift = true};
    assert_int_equal(mt_clock_fit(tu_crows(rows, n), n, m, ranks, 2, &co, clk), MT_OK);
    assert_true(clk[1].connected);
    assert_true(clk[1].offset_ns == -5000000.0);
    mt_match_free(m);
    free(rows);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fields),
        cmocka_unit_test(test_sniff_and_names),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_match_and_align),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
