/* Tests of the NCCL Inspector log reader (src/nccl_inspector.c): fields of
 * verbose and plain records, the truncated communicator id, "nan"
 * bandwidths, errors with positions, and two ranks' logs matched by
 * (id, coll, coll_sn) and aligned with the known offset between them. */
#include <math.h>
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
#include "mergetrace/nccl_inspector.h"
#include "nccl/probe.h"
#include "test_util.h"

#define T0_US 1752867229000000LL

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

/* One verbose record: kernels of channels 0 and 1 from start_us to
 * stop_us (channel 1 starts 3 us later, stops 2 us earlier). */
static size_t rec(char *b, size_t cap, size_t n, const char *id, int rank, int nranks, const char *coll, int sn,
                  int64_t start_us, int64_t stop_us)
{
    return add(b, cap, n,
               "{\"header\":{\"id\":\"%s\",\"rank\":%d,\"n_ranks\":%d,\"nnodes\":2},"
               "\"metadata\":{\"inspector_output_format_version\":\"v4.0\",\"git_rev\":\"\","
               "\"rec_mechanism\":\"nccl_profiler_interface\",\"dump_timestamp_us\":%lld,"
               "\"hostname\":\"node%d\",\"pid\":%d},"
               "\"coll_perf\":{\"coll\":\"%s\",\"coll_sn\":%d,\"coll_msg_size_bytes\":1048576,"
               "\"coll_exec_time_us\":%lld,\"coll_timing_source\":\"kernel_gpu\",\"coll_algobw_gbs\":12.500000,"
               "\"coll_busbw_gbs\":18.750000,\"event_trace_sn\":{\"coll_start_sn\":1,\"coll_stop_sn\":2,"
               "\"kernel_events\":[{\"channel_id\":0,\"kernel_start_sn\":3,\"kernel_stop_sn\":6,"
               "\"kernel_record_sn\":5}]},\"event_trace_ts\":{\"coll_start_ts\":%lld,\"coll_stop_ts\":%lld,"
               "\"kernel_events\":[{\"channel_id\":0,\"kernel_start_ts\":%lld,\"kernel_stop_ts\":%lld,"
               "\"kernel_record_ts\":%lld},{\"channel_id\":1,\"kernel_start_ts\":%lld,\"kernel_stop_ts\":%lld,"
               "\"kernel_record_ts\":%lld}]}}}\n",
               id, rank, nranks, (long long)(stop_us + 400), rank, 500 + rank, coll, sn,
               (long long)(stop_us - start_us), (long long)(start_us - 20), (long long)(start_us - 15),
               (long long)start_us, (long long)stop_us, (long long)stop_us, (long long)(start_us + 3),
               (long long)(stop_us - 2), (long long)(stop_us - 2));
}

/* Rank r's log; its host clock runs skew_us ahead of rank 0's. The same
 * instances end at the same true time on both ranks. */
static char *rank_log(int rank, int64_t skew_us, size_t *len)
{
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap);
    assert_non_null(b);
    const char *world = "0x7f8c496ae9f661", *pair = rank ? "0xabd" : "0xabc"; /* one-rank communicators */
    n = rec(b, cap, n, world, rank, 2, "AllReduce", 1, T0_US + skew_us + 100 + 7 * rank, T0_US + skew_us + 900);
    n = rec(b, cap, n, world, rank, 2, "AllGather", 1, T0_US + skew_us + 2000, T0_US + skew_us + 2500);
    n = rec(b, cap, n, pair, 0, 1, "AllReduce", 1, T0_US + skew_us + 3000, T0_US + skew_us + 3100);
    n = rec(b, cap, n, world, rank, 2, "AllReduce", 2, T0_US + skew_us + 4000, T0_US + skew_us + 4800);
    /* plain (not verbose): no times; a fractional exec time; "nan" bandwidth */
    n = add(b, cap, n,
            "{\"header\":{\"id\":\"%s\",\"rank\":%d,\"n_ranks\":2,\"nnodes\":2},\"metadata\":{\"dump_timestamp_us\":1,"
            "\"hostname\":\"node%d\",\"pid\":%d},\"coll_perf\":{\"coll\":\"Broadcast\",\"coll_sn\":1,"
            "\"coll_msg_size_bytes\":8,\"coll_exec_time_us\":12.3456,\"coll_timing_source\":\"collective_cpu\","
            "\"coll_algobw_gbs\":\"nan\",\"coll_busbw_gbs\":\"nan\"}}\n",
            world, rank, rank, 500 + rank);
    /* another record kind, skipped */
    n = add(b, cap, n, "{\"header\":{\"id\":\"%s\",\"rank\":%d,\"n_ranks\":2,\"nnodes\":2},\"p2p_perf\":{}}\n", world,
            rank);
    n = add(b, cap, n, "{\"header\":{\"id\":\"0x7f"); /* killed while writing */
    *len = n;
    return b;
}

static void test_fields(void **state)
{
    (void)state;
    size_t len;
    char *text = rank_log(1, 0, &len);
    assert_true(mt_insp_sniff(text, len));
    mt_insp_file_t *f = NULL;
    mt_error_t err;
    assert_int_equal(mt_insp_parse(text, len, "node1-pid501.log", &f, &err), MT_OK);
    assert_string_equal(f->host, "node1");
    assert_int_equal(f->pid, 501);
    assert_int_equal(f->n_colls, 5);
    assert_int_equal(f->skipped_lines, 1);
    assert_true(f->truncated);
    const mt_insp_coll_t *c = &f->colls[0];
    assert_int_equal(c->comm, 0x7f8c496ae9f661ULL);
    assert_int_equal(c->comm_digits, 14);
    assert_int_equal(c->rank, 1);
    assert_int_equal(c->nranks, 2);
    assert_int_equal(c->nnodes, 2);
    assert_int_equal(c->kind, MT_COLLK_ALLREDUCE);
    assert_string_equal(c->coll, "AllReduce");
    assert_int_equal(c->sn, 1);
    assert_int_equal(c->msg_bytes, 1048576);
    assert_int_equal(c->timing, MT_INSP_TIMING_KERNEL_GPU);
    assert_true(c->algbw_gbs == 12.5 && c->busbw_gbs == 18.75);
    /* channel 0 from T0+107 to T0+900 us, channel 1 from +110 to +898 */
    assert_int_equal(c->start_ns, (T0_US + 107) * 1000);
    assert_int_equal(c->end_ns, (T0_US + 900) * 1000);
    assert_int_equal(c->n_kernel_events, 2);
    assert_int_equal(c->exec_ns, (900 - 107) * 1000);
    assert_int_equal(c->dump_ns, (T0_US + 1300) * 1000);
    assert_int_equal(f->colls[2].comm, 0xabd);
    assert_int_equal(f->colls[2].comm_digits, 3);
    const mt_insp_coll_t *p = &f->colls[4];
    assert_int_equal(p->start_ns, -1);
    assert_int_equal(p->end_ns, -1);
    assert_int_equal(p->exec_ns, 12346); /* 12.3456 us, rounded to the ns */
    assert_int_equal(p->timing, MT_INSP_TIMING_COLL_CPU);
    assert_true(isnan(p->algbw_gbs) && isnan(p->busbw_gbs));
    int32_t size = 0;
    assert_int_equal(mt_insp_world_rank(f, &size), 1);
    assert_int_equal(size, 2);
    mt_insp_file_free(f);
    free(text);
    /* the plugin's own format and Kineto's are not Inspector logs */
    const char *plugin = "{\"type\":\"process\",\"format\":\"mergetrace-nccl\"}\n";
    assert_false(mt_insp_sniff(plugin, strlen(plugin)));
    assert_false(mt_insp_sniff("{\"traceEvents\":[]}", 18));
}

static void test_comm_is(void **state)
{
    (void)state;
    /* the id is the first 14 digits of the hash printed without padding */
    assert_true(mt_insp_comm_is(0x7f8c496ae9f661ULL, 14, 0x7f8c496ae9f66123ULL));
    assert_false(mt_insp_comm_is(0x7f8c496ae9f662ULL, 14, 0x7f8c496ae9f66123ULL));
    /* a hash with a leading zero digit prints 15 digits: the id is still 14 */
    assert_true(mt_insp_comm_is(0x12345678901234ULL, 14, 0x0123456789012345ULL));
    /* short hashes are printed whole */
    assert_true(mt_insp_comm_is(0xabc, 3, 0xabc));
    assert_false(mt_insp_comm_is(0xabc, 4, 0xabc));
}

static void expect_error(const char *text, mt_status_t code, int64_t off, int64_t line, int64_t col, const char *what)
{
    mt_insp_file_t *f = NULL;
    mt_error_t err;
    assert_int_equal(mt_insp_parse(text, strlen(text), "x.log", &f, &err), code);
    assert_null(f);
    assert_int_equal(err.offset, off);
    assert_int_equal(err.line, line);
    assert_int_equal(err.col, col);
    if (!strstr(err.msg, what))
        fail_msg("message \"%s\" lacks \"%s\"", err.msg, what);
}

static void test_errors(void **state)
{
    (void)state;
#define H "{\"header\":{\"id\":\"0x1\",\"rank\":0,\"n_ranks\":1,\"nnodes\":1}}\n" /* 56 bytes */
    assert_int_equal(strlen(H), 56);
    expect_error(H "{\"header\":{\"id\":\"0x1\",}}\n", MT_ERR_SYNTAX, 56 + 22, 2, 23, "expected '\"'");
    expect_error(H "{\"header\":{\"id\":\"0x1\"},\"coll_perf\":{\"coll_sn\":1.5}}\n", MT_ERR_FORMAT, 56 + 46, 2, 47,
                 "coll_sn");
    expect_error(H "{\"header\":{\"id\":\"zz\"}}\n", MT_ERR_FORMAT, 56 + 16, 2, 17, "hex");
    expect_error("{\"metadata\":{}}\n", MT_ERR_FORMAT, 0, 1, 1, "not an NCCL Inspector log");
    expect_error(H "{\"header\":{\"id\":\"0x1\"},\"x\":[[[[[[[[1]]]]]]]]}\n", MT_ERR_LIMIT, 56 + 34, 2, 35,
                 "deeper");
    expect_error(H "{\"header\":{\"id\":\"0x1\"}} x\n", MT_ERR_SYNTAX, 56 + 24, 2, 25, "text after");
    expect_error(H "{\"header\":{\"id\":\"0x1\",\"rank\":01}}\n", MT_ERR_SYNTAX, 56 + 29, 2, 30, "leading zero");
#undef H
}

/* Two ranks, rank 1's clock 5 ms ahead: instances match by (id, coll,
 * coll_sn) although AllReduce and AllGather share sn 1 and the one-rank
 * communicator reuses AllReduce sn 1; the fit puts rank 1 at -5 ms. */
static void test_match_and_align(void **state)
{
    (void)state;
    mt_cinst_t *rows = NULL;
    size_t n = 0, cap = 0;
    uint64_t no_times = 0;
    for (int r = 0; r < 2; r++) {
        size_t len;
        char *text = rank_log(r, r ? 5000 : 0, &len);
        mt_insp_file_t *f = NULL;
        mt_error_t err;
        assert_int_equal(mt_insp_parse(text, len, "r.log", &f, &err), MT_OK);
        size_t before = n;
        assert_int_equal(mt_insp_cinst_extract(f, r, tu_labels(), &rows, &n, &cap, &no_times), MT_OK);
        assert_int_equal(n - before, 4);
        const mt_cinst_t *a = &rows[before];
        assert_int_equal(a->rank, r);
        assert_int_equal(a->group_size, 2);
        assert_int_equal(a->seq, 1);
        assert_true(a->flags & MT_CI_NCCL);
        assert_int_equal(rows[before + 3].ordinal, 2); /* third of the world communicator */
        assert_int_equal(rows[before + 2].ordinal, 0); /* first of the one-rank one */
        mt_insp_file_free(f);
        free(text);
    }
    assert_int_equal(no_times, 2);
    mt_match_t *m = NULL;
    mt_match_stats_t ms;
    assert_int_equal(mt_match(rows, n, &m, &ms), MT_OK);
    assert_int_equal(ms.full, 3);      /* the instances of the 2-rank communicator */
    assert_int_equal(ms.unmatched, 2); /* one row each: the one-rank communicators */
    assert_int_equal(ms.by_key[MT_KEY_COMMS_ID], 5);
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
        cmocka_unit_test(test_comm_is),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_match_and_align),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
