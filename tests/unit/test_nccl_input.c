/* Tests of the NCCL plugin JSON-lines reader (src/nccl_input.c): fields,
 * the join of kernel channels with their task in either order, the clock
 * offset bound, errors with positions, and two ranks' files matched and
 * aligned with the known offset between them. */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
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

#define GPU0 1000000000LL   /* rank-clock time of task k's start: GPU0 + k*100000 */
#define DELAY_START 2000    /* host sees a start stamp this much later (the minimum) */
#define DELAY_STOP 3500

static size_t add(char *buf, size_t cap, size_t n, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static size_t add(char *buf, size_t cap, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(buf + n, cap - n, fmt, ap);
    va_end(ap);
    assert_true(w > 0 && (size_t)w < cap - n);
    return n + (size_t)w;
}

static size_t kch(char *b, size_t cap, size_t n, int rank, uint64_t parent, int ch, int64_t gs,
                  int64_t ge, bool stopped)
{
    n = add(b, cap, n,
            "{\"type\":\"kch\",\"comm\":\"00000000000000aa\",\"rank\":%d,\"parent\":%llu,"
            "\"parent_type\":\"coll\",\"func\":\"AllReduce\",\"seq\":0,\"channel\":%d,"
            "\"gpu_start_ns\":%lld,\"gpu_start_seen_ns\":%lld,",
            rank, (unsigned long long)parent, ch, (long long)gs, (long long)(gs + DELAY_START + ch));
    if (stopped)
        n = add(b, cap, n, "\"gpu_stop_ns\":%lld,\"gpu_stop_seen_ns\":%lld,\"tid\":7}\n", (long long)ge,
                (long long)(ge + DELAY_STOP));
    else
        n = add(b, cap, n, "\"gpu_stop_ns\":null,\"gpu_stop_seen_ns\":null,\"tid\":7}\n");
    return n;
}

static size_t coll(char *b, size_t cap, size_t n, int rank, uint64_t id, const char *func, int seq,
                   int64_t host)
{
    return add(b, cap, n,
               "{\"type\":\"coll\",\"comm\":\"00000000000000aa\",\"rank\":%d,\"id\":%llu,\"func\":\"%s\","
               "\"seq\":%d,\"count\":%llu,\"datatype\":\"ncclBfloat16\",\"root\":-1,\"algo\":\"RING\","
               "\"proto\":\"LL128\",\"nChannels\":2,\"nWarps\":16,\"host_start_ns\":%lld,"
               "\"host_stop_ns\":%lld,\"tid\":5}\n",
               rank, (unsigned long long)id, func, seq, 1000ULL * id, (long long)host,
               (long long)(host + 700));
}

/* One rank's file. Its clocks (host and GPU) run `skew` ns ahead of rank
 * 0's. Every task k ends at the same true time on both ranks. Channels of
 * task 1 come before its line (another thread's buffer drained first). */
static char *rank_file(int rank, int64_t skew, bool array_value, size_t *len)
{
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap);
    assert_non_null(b);
    n = add(b, cap, n,
            "{\"type\":\"process\",\"format\":\"mergetrace-nccl\",\"version\":1,\"host\":\"node%d\","
            "\"pid\":%d,\"abi\":6,\"mask\":70}\n",
            rank, 100 + rank);
    n = add(b, cap, n, "{\"type\":\"clock\",\"realtime_ns\":5,\"monotonic_ns\":6}\n");
    n = add(b, cap, n,
            "{\"type\":\"init\",\"comm\":\"00000000000000aa\",\"name\":\"world\\\"\",\"rank\":%d,"
            "\"nranks\":2,\"nNodes\":2,\"realtime_ns\":1,\"monotonic_ns\":2,\"tid\":5}\n",
            rank);
    n = add(b, cap, n,
            "{\"type\":\"init\",\"comm\":\"00000000000000bb\",\"name\":\"solo\",\"rank\":0,"
            "\"nranks\":1,\"nNodes\":1,\"realtime_ns\":1,\"monotonic_ns\":2,\"tid\":5}\n");
    int64_t t1 = GPU0 + 100000 + skew; /* task 1's start on this rank's clocks */
    n = kch(b, cap, n, rank, 1, 0, t1, t1 + 40000, true);
    n = kch(b, cap, n, rank, 1, 1, t1 + 10, t1 + 50000, true);
    n = coll(b, cap, n, rank, 1, "AllReduce", 0, t1 - 9000);
    n = coll(b, cap, n, rank, 2, "AllGather", 0, t1 + 91000);
    n = coll(b, cap, n, rank, 3, "AllReduce", 1, t1 + 191000);
    n = add(b, cap, n,
            "{\"type\":\"p2p\",\"comm\":\"00000000000000aa\",\"rank\":%d,\"id\":4,\"func\":\"%s\","
            "\"count\":4096,\"datatype\":\"ncclInt8\",\"peer\":%d,\"nChannels\":1,"
            "\"host_start_ns\":%lld,\"host_stop_ns\":%lld,\"tid\":5}\n",
            rank, rank == 0 ? "Send" : "Recv", 1 - rank, (long long)(t1 + 291000),
            (long long)(t1 + 291500));
    n = add(b, cap, n,
            "{\"type\":\"p2p\",\"comm\":\"00000000000000bb\",\"rank\":0,\"id\":5,\"func\":\"Send\","
            "\"count\":1,\"datatype\":\"ncclInt8\",\"peer\":0,\"nChannels\":1,"
            "\"host_start_ns\":%lld,\"host_stop_ns\":%lld,\"tid\":5}\n",
            (long long)(t1 + 391000), (long long)(t1 + 391500));
    n = coll(b, cap, n, rank, 6, "Broadcast", 0, t1 + 491000); /* no channels */
    n = kch(b, cap, n, rank, 2, 0, t1 + 100000, t1 + 150000, true);
    n = kch(b, cap, n, rank, 3, 0, t1 + 200000, t1 + 250000, true);
    n = kch(b, cap, n, rank, 3, 1, t1 + 200005, 0, false); /* stop stamp never came */
    n = kch(b, cap, n, rank, 4, 0, t1 + 300000, t1 + 350000, true);
    n = kch(b, cap, n, rank, 5, 0, t1 + 400000, t1 + 450000, true);
    n = kch(b, cap, n, rank, 99, 0, t1 + 500000, t1 + 550000, true); /* parent not in the file */
    /* a type this reader does not know: skipped, unless its value is not
     * flat (arrays are not part of the format) */
    n = add(b, cap, n, "{\"type\":\"future\",\"x\":%s}\n", array_value ? "[1]" : "1");
    n = add(b, cap, n,
            "{\"type\":\"stats\",\"why\":\"exit\",\"dropped_ring_full\":2,\"dropped_no_ring\":0,"
            "\"dropped_pool_full\":1,\"unhandled_events\":0,\"unknown_handles\":0,\"threads\":2,"
            "\"open_events\":0}\n");
    n = add(b, cap, n, "{\"type\":\"coll\",\"comm\":\"00000000"); /* killed while writing */
    *len = n;
    return b;
}

static const mt_nccl_task_t *task(const mt_nccl_file_t *f, uint64_t id)
{
    for (size_t i = 0; i < f->n_tasks; i++)
        if (f->tasks[i].id == id)
            return &f->tasks[i];
    fail_msg("no task %llu", (unsigned long long)id);
    return NULL;
}

static void test_fields(void **state)
{
    (void)state;
    size_t len;
    char *text = rank_file(1, 5000, true, &len);
    mt_nccl_file_t *f = NULL;
    mt_error_t err;
    mt_error_clear(&err);
    assert_int_equal(mt_nccl_parse(text, len, "r1.jsonl", &f, &err), MT_ERR_SYNTAX);
    assert_null(f);
    free(text);
    text = rank_file(1, 5000, false, &len);
    assert_int_equal(mt_nccl_parse(text, len, "r1.jsonl", &f, &err), MT_OK);
    assert_string_equal(f->host, "node1");
    assert_int_equal(f->pid, 101);
    assert_int_equal(f->abi, 6);
    assert_int_equal(f->n_comms, 2);
    assert_int_equal(f->comms[0].hash, 0xaa);
    assert_string_equal(f->comms[0].name, "world\"");
    assert_int_equal(f->comms[0].rank, 1);
    assert_int_equal(f->comms[0].nranks, 2);
    assert_int_equal(f->comms[0].n_nodes, 2);
    assert_int_equal(f->comms[1].hash, 0xbb);
    int32_t ws = 0;
    assert_int_equal(mt_nccl_world_rank(f, &ws), 1);
    assert_int_equal(ws, 2);
    assert_int_equal(f->n_tasks, 6);
    int64_t t1 = GPU0 + 100000 + 5000;
    /* tasks sorted by host start: ids 1..6 in order */
    for (size_t i = 0; i < 6; i++)
        assert_int_equal(f->tasks[i].id, i + 1);
    const mt_nccl_task_t *a = task(f, 1);
    assert_string_equal(a->func, "AllReduce");
    assert_int_equal(a->kind, MT_COLLK_ALLREDUCE);
    assert_int_equal(a->seq, 0);
    assert_int_equal(a->count, 1000);
    assert_string_equal(a->datatype, "ncclBfloat16");
    assert_string_equal(a->algo, "RING");
    assert_string_equal(a->proto, "LL128");
    assert_int_equal(a->root_or_peer, -1);
    assert_int_equal(a->n_channels, 2);
    assert_int_equal(a->host_start_ns, t1 - 9000);
    assert_int_equal(a->host_stop_ns, t1 - 9000 + 700);
    assert_int_equal(a->gpu_start_ns, t1);          /* min of t1, t1 + 10 */
    assert_int_equal(a->gpu_stop_ns, t1 + 50000);   /* max of the two stops */
    assert_int_equal(a->n_kch, 2);
    assert_int_equal(a->n_kch_open, 0);
    const mt_nccl_task_t *c = task(f, 3);
    assert_int_equal(c->seq, 1);
    assert_int_equal(c->n_kch, 2);
    assert_int_equal(c->n_kch_open, 1);
    assert_int_equal(c->gpu_start_ns, t1 + 200000);
    assert_int_equal(c->gpu_stop_ns, t1 + 250000);
    const mt_nccl_task_t *p = task(f, 4);
    assert_true(p->is_p2p);
    assert_int_equal(p->kind, MT_COLLK_RECV);
    assert_int_equal(p->seq, -1);
    assert_int_equal(p->root_or_peer, 0);
    assert_int_equal(p->count, 4096);
    const mt_nccl_task_t *b6 = task(f, 6);
    assert_int_equal(b6->kind, MT_COLLK_BROADCAST);
    assert_int_equal(b6->gpu_start_ns, -1);
    assert_int_equal(b6->gpu_stop_ns, -1);
    assert_int_equal(f->orphan_kch, 1);
    assert_int_equal(f->skipped_lines, 1);
    assert_int_equal(f->dropped, 3);
    assert_true(f->truncated);
    assert_true(f->has_offset_bound);
    assert_int_equal(f->gpu_offset_bound_ns, DELAY_START); /* channel 0's start delay */
    mt_nccl_file_free(f);
    free(text);
}

static void expect_error(const char *text, mt_status_t code, int64_t offset, int64_t line,
                         int64_t col, const char *msg_part)
{
    mt_nccl_file_t *f = (mt_nccl_file_t *)1;
    mt_error_t err;
    mt_error_clear(&err);
    assert_int_equal(mt_nccl_parse(text, strlen(text), "x.jsonl", &f, &err), code);
    assert_null(f);
    assert_int_equal(err.code, code);
    assert_int_equal(err.offset, offset);
    assert_int_equal(err.line, line);
    assert_int_equal(err.col, col);
    assert_string_equal(err.path, "x.jsonl");
    if (!strstr(err.msg, msg_part))
        fail_msg("message '%s' lacks '%s'", err.msg, msg_part);
}

#define PROC "{\"type\":\"process\",\"format\":\"mergetrace-nccl\",\"version\":1,\"host\":\"h\",\"pid\":1,\"abi\":5,\"mask\":70}\n"

static void test_errors(void **state)
{
    (void)state;
    /* PROC is 95 bytes: line 2 starts at byte 95 */
    assert_int_equal(strlen(PROC), 95);
    expect_error(PROC "{\"type\":\"clock\",\"realtime_ns\":1.5,\"monotonic_ns\":2}\n", MT_ERR_SYNTAX,
                 95 + 31, 2, 32, "expected an integer");
    expect_error(PROC "{\"type\":\"init\",\"comm\":\"00000000000000aa\",\"name\":\"w\",\"rank\":0,"
                      "\"nNodes\":1,\"realtime_ns\":1,\"monotonic_ns\":2,\"tid\":5}\n",
                 MT_ERR_FORMAT, 95, 2, 1, "key \"nranks\" is missing");
    expect_error(PROC "{\"type\":\"init\",\"comm\":\"aa\",\"name\":\"w\",\"rank\":0,\"nranks\":2,"
                      "\"nNodes\":1,\"realtime_ns\":1,\"monotonic_ns\":2,\"tid\":5}\n",
                 MT_ERR_FORMAT, 95, 2, 1, "16 hex digits");
    expect_error("{\"type\":\"clock\",\"realtime_ns\":1,\"monotonic_ns\":2}\n", MT_ERR_FORMAT, 0, 1, 1,
                 "first line");
    expect_error(PROC "{\"type\":\"clock\",\"realtime_ns\":99999999999999999999,\"monotonic_ns\":2}\n",
                 MT_ERR_RANGE, 95 + 49, 2, 50, "64 bits");
    expect_error(PROC "{\"type\":\"clock\" ,\"realtime_ns\":1}\n", MT_ERR_SYNTAX, 95 + 15, 2, 16,
                 "expected ',' or '}'");
    expect_error(PROC "{\"type\" :\"clock\"}\n", MT_ERR_SYNTAX, 95 + 7, 2, 8, "expected ':'");
    expect_error(PROC "{\"type\":\"clock\",\"realtime_ns\":01,\"monotonic_ns\":2}\n", MT_ERR_SYNTAX,
                 95 + 30, 2, 31, "leading zero");
    expect_error(PROC PROC, MT_ERR_FORMAT, 95, 2, 1, "second");
    expect_error("", MT_ERR_FORMAT, 0, 0, 1, "no \"process\" line");
}

/* Two ranks: rank 1's clocks are 5000 ns ahead. Collectives match by
 * (communicator, func, seq) although AllReduce and AllGather share seq 0;
 * the P2P pair matches; the fit puts rank 1 at -5000 ns. */
/* "open" lines (a task's start, its kernel's first channel start) say how
 * far each task got: done, running (kernel started, no channel stopped),
 * enqueued (no kernel start), enqueuing (an open line and nothing more);
 * the file's last host time is its latest clock line or stamp. Lines in
 * the plugin's drain order: a channel's open line may come before its
 * task's. */
static void test_open_lines(void **state)
{
    (void)state;
    char b[8192];
    size_t n = add(b, sizeof b, 0, "%s", PROC);
    n = add(b, sizeof b, n,
            "{\"type\":\"init\",\"comm\":\"00000000000000aa\",\"name\":\"w\",\"rank\":1,\"nranks\":4,\"nNodes\":1,"
            "\"realtime_ns\":100,\"monotonic_ns\":5,\"tid\":7}\n");
    /* task 1: open, kernel open, coll line, a stopped channel: done */
    n = add(b, sizeof b, n,
            "{\"type\":\"open\",\"of\":\"coll\",\"comm\":\"00000000000000aa\",\"rank\":1,\"id\":1,\"func\":\"AllReduce\","
            "\"seq\":4,\"count\":8,\"datatype\":\"ncclFloat32\",\"host_start_ns\":1000,\"tid\":7}\n");
    n = add(b, sizeof b, n,
            "{\"type\":\"open\",\"of\":\"kch\",\"comm\":\"00000000000000aa\",\"rank\":1,\"parent\":1,\"parent_type\":\"coll\","
            "\"func\":\"AllReduce\",\"seq\":4,\"channel\":0,\"gpu_start_ns\":%lld,\"gpu_start_seen_ns\":%lld,\"tid\":7}\n",
            GPU0, GPU0 + DELAY_START);
    n = coll(b, sizeof b, n, 1, 1, "AllReduce", 4, 1000);
    n = kch(b, sizeof b, n, 1, 1, 0, GPU0, GPU0 + 500, true);
    /* task 2: the kernel's open line first, then the task's; no channel line */
    n = add(b, sizeof b, n,
            "{\"type\":\"open\",\"of\":\"kch\",\"comm\":\"00000000000000aa\",\"rank\":1,\"parent\":2,\"parent_type\":\"coll\","
            "\"func\":\"AllReduce\",\"seq\":5,\"channel\":1,\"gpu_start_ns\":%lld,\"gpu_start_seen_ns\":%lld,\"tid\":7}\n",
            GPU0 + 100000, GPU0 + 100000 + DELAY_START + 40);
    n = coll(b, sizeof b, n, 1, 2, "AllReduce", 5, 2000);
    /* task 3: enqueued, its kernel never seen to start */
    n = coll(b, sizeof b, n, 1, 3, "AllGather", 0, 3000);
    /* task 4: an open line alone (the enqueue never returned) */
    n = add(b, sizeof b, n,
            "{\"type\":\"open\",\"of\":\"p2p\",\"comm\":\"00000000000000aa\",\"rank\":1,\"id\":4,\"func\":\"Send\","
            "\"count\":64,\"datatype\":\"ncclInt8\",\"peer\":2,\"host_start_ns\":4000,\"tid\":7}\n");
    n = add(b, sizeof b, n, "{\"type\":\"clock\",\"realtime_ns\":%lld,\"monotonic_ns\":9}\n", GPU0 * 3);
    mt_nccl_file_t *f = NULL;
    mt_error_t err;
    assert_int_equal(mt_nccl_parse(b, n, "t.jsonl", &f, &err), MT_OK);
    assert_int_equal(f->n_tasks, 4);
    assert_int_equal(f->in_flight, 3);
    assert_int_equal(f->last_seen_ns, GPU0 * 3);
    assert_int_equal(f->skipped_lines, 0);
    const mt_nccl_task_t *t[5] = {0};
    for (size_t i = 0; i < f->n_tasks; i++)
        t[f->tasks[i].id] = &f->tasks[i];
    assert_int_equal(t[1]->state, MT_NCCL_TASK_DONE);
    assert_int_equal(t[1]->gpu_stop_ns, GPU0 + 500);
    assert_int_equal(t[1]->kernel_open_ns, GPU0);
    assert_int_equal(t[2]->state, MT_NCCL_TASK_RUNNING);
    assert_int_equal(t[2]->kernel_open_ns, GPU0 + 100000);
    assert_int_equal(t[2]->kernel_seen_ns, GPU0 + 100000 + DELAY_START + 40);
    assert_int_equal(t[2]->gpu_start_ns, -1); /* no channel line: no GPU times for matching */
    assert_int_equal(t[2]->seq, 5);
    assert_int_equal(t[3]->state, MT_NCCL_TASK_ENQUEUED);
    assert_int_equal(t[4]->state, MT_NCCL_TASK_ENQUEUING);
    assert_true(t[4]->is_p2p);
    assert_int_equal(t[4]->root_or_peer, 2);
    assert_int_equal(t[4]->host_start_ns, 4000);
    assert_int_equal(t[4]->host_stop_ns, -1);
    assert_string_equal(t[4]->func, "Send");
    /* the offset bound takes the open lines' stamps too */
    assert_true(f->has_offset_bound);
    assert_int_equal(f->gpu_offset_bound_ns, DELAY_START);
    mt_nccl_file_free(f);
    /* an open line of an unknown kind is an error at its line */
    n = add(b, sizeof b, 0, "%s", PROC);
    n = add(b, sizeof b, n, "{\"type\":\"open\",\"of\":\"group\",\"rank\":0}\n");
    assert_int_equal(mt_nccl_parse(b, n, "t.jsonl", &f, &err), MT_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "unknown kind"));
}

static void test_match_and_align(void **state)
{
    (void)state;
    mt_cinst_t *rows = NULL;
    size_t n = 0, cap = 0;
    uint64_t skipped = 0;
    for (int r = 0; r < 2; r++) {
        size_t len;
        char *text = rank_file(r, r ? 5000 : 0, false, &len);
        mt_nccl_file_t *f = NULL;
        mt_error_t err;
        assert_int_equal(mt_nccl_parse(text, len, "r.jsonl", &f, &err), MT_OK);
        assert_int_equal(mt_nccl_world_rank(f, NULL), r);
        size_t before = n;
        assert_int_equal(mt_nccl_cinst_extract(f, r, tu_labels(), &rows, &n, &cap, &skipped), MT_OK);
        /* tasks 1, 2, 3 and the P2P 4 of the world communicator */
        assert_int_equal(n - before, 4);
        const mt_cinst_t *a = &rows[before];
        int64_t t1 = GPU0 + 100000 + (r ? 5000 : 0);
        assert_int_equal(a->start_ns, t1 + DELAY_START);
        assert_int_equal(a->end_ns, t1 + 50000 + DELAY_START);
        assert_int_equal(a->launch_ns, t1 - 9000);
        assert_int_equal(a->rank, r);
        assert_int_equal(a->group_size, 2);
        assert_int_equal(a->seq, 0);
        assert_int_equal(a->in_nelems, 1000);
        assert_string_equal(mt_strtab_get(tu_labels(), a->dtype_id, NULL), "Bfloat16");
        assert_string_equal(mt_strtab_get(tu_labels(), a->pg_id, NULL), "world\"");
        assert_int_equal(a->ordinal, 0);
        assert_int_equal(rows[before + 3].ordinal, 3);
        assert_int_equal(rows[before + 3].peer, 1 - r);
        assert_true(rows[before + 3].flags & (r == 0 ? MT_CI_SEND : MT_CI_RECV));
        mt_nccl_file_free(f);
        free(text);
    }
    assert_int_equal(skipped, 2); /* the P2P task of the one-rank communicator, per rank */

    mt_match_t *m = NULL;
    mt_match_stats_t ms;
    assert_int_equal(mt_match(rows, n, &m, &ms), MT_OK);
    assert_int_equal(m->n_inst, 4);
    assert_int_equal(ms.full, 4);
    assert_int_equal(ms.by_key[MT_KEY_COMMS_ID], 3);
    assert_int_equal(ms.by_key[MT_KEY_P2P], 1);
    for (size_t i = 0; i < m->n_inst; i++) {
        assert_int_equal(m->first[i + 1] - m->first[i], 2);
        const mt_cinst_t *x = &rows[m->members[m->first[i]]], *y = &rows[m->members[m->first[i] + 1]];
        assert_int_equal(x->rank, 0);
        assert_int_equal(y->rank, 1);
        assert_int_equal(y->end_ns - x->end_ns, 5000); /* the same instance on both */
    }
    int32_t ranks[2] = {0, 1};
    mt_clock_t clk[2];
    mt_clock_opts_t co = {.ref_rank = 0, .no_drift = true};
    assert_int_equal(mt_clock_fit(tu_crows(rows, n), n, m, ranks, 2, &co, clk), MT_OK);
    assert_true(clk[0].reference);
    assert_true(clk[1].connected);
    assert_true(clk[1].offset_ns == -5000.0);
    mt_match_free(m);
    free(rows);
}

/* Sniffing by the first line, not the name. */
static void test_sniff(void **state)
{
    (void)state;
    const char *ok = "{\"type\":\"process\",\"format\":\"mergetrace-nccl\",\"version\":1}\n{";
    assert_true(mt_nccl_sniff(ok, strlen(ok)));
    assert_false(mt_nccl_sniff(ok, 20));                       /* cut before "format" */
    const char *other = "{\"type\":\"process\",\"format\":\"other\"}\n";
    assert_false(mt_nccl_sniff(other, strlen(other)));
    const char *kineto = "{\"traceEvents\":[]}";
    assert_false(mt_nccl_sniff(kineto, strlen(kineto)));
    assert_false(mt_nccl_sniff("", 0));
}

static mt_cinst_t arow(int32_t rank, bool nccl, uint8_t kind, int64_t s, int64_t e)
{
    mt_cinst_t r;
    memset(&r, 0, sizeof r);
    r.rank = rank;
    r.flags = nccl ? MT_CI_NCCL : 0;
    r.kind = kind;
    r.start_ns = s;
    r.end_ns = e;
    return r;
}

/* Agreement: mutual nearest pairs per kind, percentiles worked out by hand. */
static void test_agree(void **state)
{
    (void)state;
    mt_cinst_t rows[12];
    size_t n = 0;
    /* rank 1: Kineto allreduces at 1000, 2000, 3000; NCCL ones 10, 30 and
     * 70 ns later (ends 5, 5, 9 later) plus one at 9000 with no partner
     * nearer than the one at 3000 (which pairs with 3070: mutual). A Send
     * pairs with a SendRecv kernel (one kind). */
    rows[n++] = arow(1, false, MT_COLLK_ALLREDUCE, 1000, 1500);
    rows[n++] = arow(1, false, MT_COLLK_ALLREDUCE, 2000, 2500);
    rows[n++] = arow(1, false, MT_COLLK_ALLREDUCE, 3000, 3500);
    rows[n++] = arow(1, true, MT_COLLK_ALLREDUCE, 1010, 1505);
    rows[n++] = arow(1, true, MT_COLLK_ALLREDUCE, 2030, 2505);
    rows[n++] = arow(1, true, MT_COLLK_ALLREDUCE, 3070, 3509);
    rows[n++] = arow(1, true, MT_COLLK_ALLREDUCE, 9000, 9100);
    rows[n++] = arow(1, false, MT_COLLK_SENDRECV, 5000, 5100);
    rows[n++] = arow(1, true, MT_COLLK_SEND, 4990, 5101);
    /* rank 0: NCCL only; rank 2: Kineto only: no entries */
    rows[n++] = arow(0, true, MT_COLLK_ALLREDUCE, 1000, 1500);
    rows[n++] = arow(2, false, MT_COLLK_ALLREDUCE, 1000, 1500);
    /* rank 1's clock: +100 ns, applied to both sources alike */
    mt_clock_t clocks[1];
    memset(clocks, 0, sizeof clocks);
    clocks[0].rank = 1;
    clocks[0].offset_ns = 100;
    mt_nccl_agree_t *a = NULL;
    size_t na = 0;
    assert_int_equal(mt_nccl_agree(tu_crows(rows, n), n, clocks, 1, &a, &na), MT_OK);
    assert_int_equal(na, 1);
    assert_int_equal(a[0].rank, 1);
    assert_int_equal(a[0].nccl_rows, 5);
    assert_int_equal(a[0].kineto_rows, 4);
    assert_int_equal(a[0].pairs, 4);
    /* |start| differences 10, 30, 70, 10 -> sorted 10 10 30 70: p50 = 10
     * (2nd of 4), p99 = 70; ends 5, 5, 9, 1 -> 1 5 5 9: p50 5, p99 9;
     * signed starts -10 10 30 70: median (2nd) 10 */
    assert_int_equal(a[0].start_p50_ns, 10);
    assert_int_equal(a[0].start_p99_ns, 70);
    assert_int_equal(a[0].end_p50_ns, 5);
    assert_int_equal(a[0].end_p99_ns, 9);
    assert_int_equal(a[0].start_median_ns, 10);
    free(a);
    assert_int_equal(mt_nccl_agree(tu_crows(rows, 0), 0, NULL, 0, &a, &na), MT_OK);
    assert_null(a);
    assert_int_equal(na, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fields),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_open_lines),
        cmocka_unit_test(test_match_and_align),
        cmocka_unit_test(test_sniff),
        cmocka_unit_test(test_agree),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
