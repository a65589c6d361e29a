/* The loader on hand-written traces of every format generation, on chunk
 * boundaries everywhere, and on broken input. Expected numbers are written
 * out by hand from the JSON text in each test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mergetrace/input.h"
#include "mergetrace/merge.h"
#include "test_util.h"

/* 2024+ Kineto: relative 3-decimal ts, baseTimeNanoseconds AFTER
 * traceEvents (as in HTA-NCCL-2024), collective metadata on the kernel. */
static const char modern[] =
    "{\"schemaVersion\": 1,\n"
    " \"deviceProperties\": [{\"id\": 0, \"name\": \"NVIDIA B200\", \"totalGlobalMem\": 191000000000, \"numSms\": 148,"
    " \"computeMajor\": 10, \"computeMinor\": 0}],\n"
    " \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": 3, \"world_size\": 8, \"pg_count\": 2,"
    "  \"pg_config\": [{\"pg_name\": \"0\", \"pg_desc\": \"default_pg\", \"backend_config\": \"cuda:nccl\", \"pg_size\": 8,"
    " \"ranks\": [0, 1, 2, 3, 4, 5, 6, 7]},"
    " {\"pg_name\": \"3\", \"pg_desc\": \"tp\", \"pg_size\": 2, \"ranks\": \"[2, 3]\"}], \"nccl_version\": \"2.21.5\"},\n"
    " \"traceEvents\": [\n"
    "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"record_param_comms\", \"pid\": 6583, \"tid\": 6583,"
    " \"ts\": 1365627949735.404, \"dur\": 190.881, \"args\": {\"External id\": 4802, \"Collective name\": \"_allgather_base\","
    " \"dtype\": \"BFloat16\", \"In msg nelems\": 25136, \"Out msg nelems\": 201088, \"Group size\": 8,"
    " \"Process Group Name\": \"0\", \"Process Group Description\": \"default_pg\","
    " \"Process Group Ranks\": \"[0, 1, 2, 3, 4, 5, 6, 7]\", \"Rank\": 3, \"Global rank start\": 0,"
    " \"Global rank stride\": 1, \"Seq\": 17, \"Comms Id\": 10159970886766084423}},\n"
    "  {\"ph\": \"X\", \"cat\": \"cuda_driver\", \"name\": \"cuLaunchKernelEx\", \"pid\": 6583, \"tid\": 6583,"
    " \"ts\": 1365627949842.376, \"dur\": 20.094, \"args\": {\"External id\": 4802, \"cbid\": 652, \"correlation\": 15270}},\n"
    "  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)\","
    " \"pid\": 0, \"tid\": 7, \"ts\": 1365627949863.953, \"dur\": 21.953, \"args\": {\"External id\": 4802, \"device\": 0,"
    " \"stream\": 7, \"correlation\": 15270, \"grid\": [8, 1, 1], \"Collective name\": \"_allgather_base\","
    " \"In msg nelems\": 25136, \"Out msg nelems\": 201088, \"Group size\": 8, \"dtype\": \"BFloat16\","
    " \"Process Group Name\": \"0\", \"Process Group Ranks\": \"[0, 1, 2, 3, 4, 5, 6, 7]\","
    " \"Seq\": 17, \"Comms Id\": 10159970886766084423}},\n"
    "  {\"ph\": \"f\", \"id\": 15270, \"pid\": 0, \"tid\": 7, \"ts\": 1365627949863.953, \"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"},\n"
    "  {\"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"Memcpy HtoD (Pinned -> Device)\", \"pid\": 0, \"tid\": 7,"
    " \"ts\": 1365627949900.000, \"dur\": 1.5, \"args\": {\"correlation\": 15271, \"bytes\": 4096}},\n"
    "  {\"ph\": \"X\", \"cat\": \"cuda_sync\", \"name\": \"Stream Sync\", \"pid\": 0, \"tid\": 7,"
    " \"ts\": 1365627949950.001, \"dur\": 3.000, \"args\": {\"correlation\": 15272}},\n"
    "  {\"name\": \"process_labels\", \"ph\": \"M\", \"ts\": 0.000, \"pid\": 0, \"tid\": 0, \"args\": {\"labels\": \"GPU 0\"}},\n"
    "  {\"name\": \"process_sort_index\", \"ph\": \"M\", \"ts\": 0.000, \"pid\": 0, \"tid\": 0, \"args\": {\"sort_index\": 5000000}},\n"
    "  {\"ph\": \"X\", \"cat\": \"Trace\", \"ts\": 1365627949000.000, \"dur\": 2000.5, \"pid\": \"Spans\", \"tid\": \"PyTorch Profiler\","
    " \"name\": \"PyTorch Profiler (0)\", \"args\": {\"Op count\": 0}},\n"
    "  {\"name\": \"Record Window End\", \"ph\": \"i\", \"s\": \"g\", \"pid\": \"\", \"tid\": \"\", \"ts\": 1365627951000.123}\n"
    " ],\n"
    " \"traceName\": \"/tmp/x.json\", \"displayTimeUnit\": \"ms\", \"baseTimeNanoseconds\": 1767189312000000000}\n";

static void test_modern_trace(void **state)
{
    (void)state;
    mt_trace_t *t = load_str(modern);
    assert_int_equal(t->n_events, 10);
    assert_int_equal(t->info.rank, 3);
    assert_int_equal(t->info.world_size, 8);
    assert_true(t->info.has_base);
    assert_int_equal(t->info.ts_style, MT_TS_REL);
    assert_string_equal(mt_strtab_get(t->strings, t->info.backend, NULL), "nccl");
    assert_string_equal(mt_strtab_get(t->strings, t->info.nccl_version, NULL), "2.21.5");
    assert_int_equal(t->info.schema_version, 1);
    /* pg_config: ranks as a list and as a string */
    assert_int_equal(t->n_pgs, 2);
    assert_int_equal(t->pgs[0].n_ranks, 8);
    assert_int_equal(t->pgs[0].size, 8);
    assert_int_equal(t->pgs[1].n_ranks, 2);
    assert_int_equal(t->pg_rank_pool[t->pgs[1].rank_off + 1], 3);
    assert_string_equal(mt_strtab_get(t->strings, t->pgs[1].name, NULL), "3");
    assert_string_equal(mt_strtab_get(t->strings, t->pgs[1].desc, NULL), "tp");
    assert_int_equal(t->n_devices, 1);
    assert_int_equal(t->devices[0].num_sms, 148);
    assert_int_equal(t->devices[0].total_mem, 191000000000LL);

    /* abs = base + ts*1000, exactly */
    const mt_event_t *k = find_event(t, "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
    assert_non_null(k);
    assert_int_equal(k->ts, 1767189312000000000LL + 1365627949863953LL);
    assert_int_equal(k->dur, 21953);
    assert_int_equal(mt_event_pid(t, k), 0);
    assert_int_equal(mt_event_tid(t, k), 7);
    assert_int_equal(mt_event_corr(t, k), 15270);
    assert_int_equal(mt_event_ext(t, k), 4802);
    assert_int_equal(k->cls, MT_CLASS_COMM);
    assert_true(k->flags & MT_EV_COLL_OWN);
    const mt_coll_t *c = mt_event_coll(t, k);
    assert_non_null(c);
    assert_true(c->comms_id == 10159970886766084423ull);
    assert_int_equal(c->seq, 17);
    assert_int_equal(c->in_nelems, 25136);
    assert_int_equal(c->out_nelems, 201088);
    assert_int_equal(c->group_size, 8);
    assert_string_equal(mt_strtab_get(t->strings, c->name, NULL), "_allgather_base");
    assert_string_equal(mt_strtab_get(t->strings, c->dtype, NULL), "BFloat16");
    assert_string_equal(mt_strtab_get(t->strings, c->pg_ranks, NULL), "[0, 1, 2, 3, 4, 5, 6, 7]");
    /* linked to its launch */
    assert_int_not_equal(k->aux, 0);
    assert_string_equal(mt_event_name(t, &t->events[k->aux - 1]), "cuLaunchKernelEx");

    const mt_event_t *op = find_event(t, "record_param_comms");
    const mt_coll_t *oc = mt_event_coll(t, op);
    assert_int_equal(oc->rank, 3);
    assert_int_equal(oc->grank_stride, 1);
    assert_int_equal(op->cls, MT_CLASS_NONE);

    const mt_event_t *m = find_event(t, "Memcpy HtoD (Pinned -> Device)");
    assert_int_equal(m->cls, MT_CLASS_MEMCPY);
    assert_int_equal(m->dur, 1500);
    assert_int_equal(find_event(t, "Stream Sync")->cls, MT_CLASS_SYNC);

    /* string pids/tids */
    const mt_event_t *tr = find_event(t, "PyTorch Profiler (0)");
    assert_true(tr->flags & MT_EV_PID_STR);
    assert_string_equal(mt_strtab_get(t->strings, (uint32_t)mt_event_pid(t, tr), NULL), "Spans");
    const mt_event_t *rw = find_event(t, "Record Window End");
    assert_int_equal(rw->ph, MT_PH_I);
    assert_true(rw->flags & MT_EV_PID_STR);
    assert_int_equal(mt_event_pid(t, rw), MT_STR_NONE);

    /* metadata payloads */
    const mt_event_t *lab = find_event(t, "process_labels");
    assert_int_equal(lab->ph, MT_PH_M);
    assert_int_not_equal(lab->aux, 0);
    assert_string_equal(mt_strtab_get(t->strings, t->meta[lab->aux - 1].str, NULL), "GPU 0");
    assert_int_equal(t->meta[find_event(t, "process_sort_index")->aux - 1].value, 5000000);

    /* flows */
    const mt_event_t *f = find_event(t, "ac2g");
    assert_int_equal(f->ph, MT_PH_F);
    assert_int_equal(mt_event_corr(t, f), 15270);
    assert_int_equal(t->stats.by_ph[MT_PH_X], 6);
    assert_int_equal(t->stats.by_ph[MT_PH_M], 2);
    assert_int_equal(t->stats.by_cat[MT_CAT_NONE], 3);
    mt_trace_free(t);
}

/* 2021 TensorBoard-plugin era: capitalised categories, string tids,
 * lower-case "external id", flow cat "async", absolute integer us. */
static void test_legacy_2021(void **state)
{
    (void)state;
    const char *json =
        "{\"traceEvents\": [\n"
        "{\"ph\": \"X\", \"cat\": \"Operator\", \"name\": \"aten::conv2d\", \"pid\": 25738, \"tid\": \"25738\","
        " \"ts\": 1623143089861000, \"dur\": 120, \"args\": {\"Device\": 25738, \"External id\": 5}},\n"
        "{\"ph\": \"X\", \"cat\": \"Runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 25738, \"tid\": \"25738\","
        " \"ts\": 1623143089861010, \"dur\": 8, \"args\": {\"correlation\": 311, \"external id\": 5}},\n"
        "{\"ph\": \"X\", \"cat\": \"Kernel\", \"name\": \"volta_sgemm_128x64_nn\", \"pid\": 0, \"tid\": \"stream 7\","
        " \"ts\": 1623143089861030, \"dur\": 55, \"args\": {\"correlation\": 311, \"external id\": 5}},\n"
        "{\"ph\": \"X\", \"cat\": \"Memset\", \"name\": \"Memset (Device)\", \"pid\": 0, \"tid\": \"stream 7\","
        " \"ts\": 1623143089861090, \"dur\": 2, \"args\": {}},\n"
        "{\"ph\": \"s\", \"id\": 311, \"pid\": 25738, \"tid\": \"25738\", \"ts\": 1623143089861010, \"cat\": \"async\", \"name\": \"launch\"}\n"
        "]}";
    mt_trace_t *t = load_str(json);
    assert_int_equal(t->n_events, 5);
    assert_int_equal(t->info.ts_style, MT_TS_ABS_INT);
    assert_int_equal(t->info.rank, -1);
    assert_false(t->info.has_dist_info);
    const mt_event_t *k = find_event(t, "volta_sgemm_128x64_nn");
    assert_int_equal(k->cat, MT_CAT_LEGACY_KERNEL);
    assert_int_equal(k->cls, MT_CLASS_COMPUTE);
    assert_int_equal(mt_event_tid(t, k), 7); /* "stream 7" */
    assert_false(k->flags & MT_EV_TID_STR);
    assert_int_equal(k->ts, 1623143089861030000LL);
    assert_int_equal(mt_event_ext(t, k), 5);
    assert_string_equal(mt_event_name(t, &t->events[k->aux - 1]), "cudaLaunchKernel");
    assert_int_equal(mt_event_tid(t, find_event(t, "aten::conv2d")), 25738);
    assert_int_equal(find_event(t, "Memset (Device)")->cls, MT_CLASS_MEMSET);
    assert_int_equal(find_event(t, "launch")->cat, MT_CAT_LEGACY_ASYNC);
    assert_int_equal(mt_cat_normal(MT_CAT_LEGACY_ASYNC), MT_CAT_AC2G);
    mt_trace_free(t);
}

static void test_abs_frac_and_bare_array(void **state)
{
    (void)state;
    mt_trace_t *t = load_str("[{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,"
                             "\"ts\":1712195495519695.8,\"dur\":1.2},"
                             "{\"ph\":\"B\",\"name\":\"b\",\"pid\":1,\"tid\":1,\"ts\":1}]");
    assert_true(t->info.bare_array);
    assert_int_equal(t->n_events, 2);
    assert_int_equal(t->info.ts_style, MT_TS_ABS_FRAC);
    assert_int_equal(t->events[0].ts, 1712195495519695800LL);
    assert_int_equal(t->events[0].dur, 1200);
    assert_int_equal(t->events[1].ph, MT_PH_OTHER);
    assert_int_equal(t->stats.by_ph[MT_PH_OTHER], 1);
    mt_trace_free(t);
}

static void test_unknown_things_are_counted(void **state)
{
    (void)state;
    mt_trace_t *t = load_str("{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"my_new_cat\",\"name\":\"a\",\"ts\":1,\"dur\":1,"
                             "\"cname\":\"good\",\"pid\":1,\"tid\":1},"
                             "{\"ph\":\"C\",\"cat\":\"my_new_cat\",\"name\":\"ctr\",\"ts\":2,\"pid\":1,\"args\":{\"v\":3}},"
                             "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"b\",\"ts\":1,\"dur\":-5,\"pid\":1,\"tid\":1,"
                             "\"args\":{\"External id\":\"oops\",\"correlation\":99999999999999999999999}}],"
                             "\"somethingElse\":{\"x\":[1,2,{\"y\":null}]}}");
    assert_int_equal(t->n_events, 3);
    assert_int_equal(t->stats.by_cat[MT_CAT_OTHER], 2);
    assert_int_equal(t->n_other_cats, 1);
    assert_string_equal(mt_strtab_get(t->strings, t->other_cat_names[0], NULL), "my_new_cat");
    assert_int_equal(t->other_cat_counts[0], 2);
    assert_int_equal(t->stats.by_ph[MT_PH_C], 1);
    assert_int_equal(t->stats.unknown_fields, 1); /* cname */
    assert_int_equal(t->stats.unknown_top_keys, 1);
    assert_int_equal(t->stats.bad_values, 2);     /* a string External id, a correlation beyond uint64 */
    assert_int_equal(t->stats.neg_dur, 1);
    const mt_event_t *b = find_event(t, "b");
    assert_int_equal(b->dur, 0);
    assert_true(b->flags & MT_EV_NEG_DUR);
    assert_false(b->flags & (MT_EV_HAS_EXT | MT_EV_HAS_CORR));
    mt_trace_free(t);
}

static void test_strings_escapes_utf8(void **state)
{
    (void)state;
    /* escapes, a surrogate pair, raw UTF-8, and one invalid byte (0xff) */
    const char json[] = "{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"a\\\"b\\\\c\\n\\u00e9\\ud83d\\ude00\",\"ts\":0,\"pid\":1,\"tid\":1},"
                        "{\"ph\":\"X\",\"name\":\"caf\xc3\xa9\",\"ts\":0,\"pid\":1,\"tid\":1},"
                        "{\"ph\":\"X\",\"name\":\"bad\xff!\",\"ts\":0,\"pid\":1,\"tid\":1}]}";
    mt_trace_t *t = load_str(json);
    assert_string_equal(mt_event_name(t, &t->events[0]), "a\"b\\c\n\xc3\xa9\xf0\x9f\x98\x80");
    assert_string_equal(mt_event_name(t, &t->events[1]), "caf\xc3\xa9");
    assert_string_equal(mt_event_name(t, &t->events[2]), "bad\xef\xbf\xbd!");
    assert_int_equal(t->stats.bad_utf8, 1);
    mt_trace_free(t);
}

static void test_input_dims_for_old_nccl_ranges(void **state)
{
    (void)state;
    /* "args" before "name": key order is not fixed in re-serialised files */
    mt_trace_t *t = load_str("{\"traceEvents\":[{\"args\":{\"Input Dims\":[[394241]],\"Input type\":[\"float\"]},"
                             "\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"nccl:all_reduce\",\"ts\":1,\"dur\":5,"
                             "\"pid\":1,\"tid\":1},"
                             "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mm\",\"ts\":1,\"dur\":5,\"pid\":1,\"tid\":1,"
                             "\"args\":{\"Input Dims\":[[8,16],[16,4]]}}]}");
    const mt_coll_t *c = mt_event_coll(t, &t->events[0]);
    assert_non_null(c);
    assert_int_equal(c->in_nelems, 394241);
    assert_true(c->fields & MT_COLL_F_INPUT_DIMS);
    assert_string_equal(mt_strtab_get(t->strings, c->name, NULL), "all_reduce");
    assert_string_equal(mt_strtab_get(t->strings, c->dtype, NULL), "float");
    assert_null(mt_event_coll(t, &t->events[1])); /* not an nccl:* range */
    mt_trace_free(t);
}

/* "Process Group Ranks" values taken by memcmp against the last 8 distinct
 * lists (value_rank_list): twelve lists in turn (more than are remembered),
 * one a prefix of another, an escaped copy, one with a non-ASCII byte, one
 * not a string; every event gets its own list whatever the read chunk. */
static void test_rank_lists(void **state)
{
    (void)state;
    char lists[12][96];
    for (int k = 0; k < 10; k++)
        snprintf(lists[k], sizeof lists[k], "[%d, %d, %d, %d]", k, k + 1, k + 2, k + 3);
    snprintf(lists[10], sizeof lists[10], "[0, 1, 2, 3, 4]"); /* lists[0] + more */
    snprintf(lists[11], sizeof lists[11], "[0, 1, 2]");       /* a prefix of lists[0] */
    const int order[] = {0, 0, 1, 0, 10, 11, 0, 2, 3, 4, 5, 6, 7, 8, 9, 0, 10, 11, 1, 1, 9, 0};
    size_t n_ev = sizeof order / sizeof *order;
    mt_buf_t b = {0};
    char e[512];
    mt_buf_append(&b, "{\"traceEvents\":[", 16);
    for (size_t i = 0; i < n_ev + 3; i++) {
        const char *v = i < n_ev ? lists[order[i]] : NULL;
        char val[128];
        if (i == n_ev)
            snprintf(val, sizeof val, "\"\\u005b0, 1, 2, 3]\""); /* lists[0], escaped */
        else if (i == n_ev + 1)
            snprintf(val, sizeof val, "\"[0, 1, 2, 3]\xc3\xa9\"");
        else if (i == n_ev + 2)
            snprintf(val, sizeof val, "[0, 1, 2, 3]"); /* not a string: left out, counted */
        else
            snprintf(val, sizeof val, "\"%s\"", v);
        int w = snprintf(e, sizeof e,
                         "%s{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"record_param_comms\",\"ts\":%zu,\"dur\":1,"
                         "\"pid\":1,\"tid\":1,\"args\":{\"Collective name\":\"allreduce\",\"Process Group Ranks\":%s}}",
                         i ? "," : "", i, val);
        mt_buf_append(&b, e, (size_t)w);
    }
    mt_buf_append(&b, "]}", 2);
    const size_t chunks[] = {1, 7, 64, 1 << 20};
    for (size_t c = 0; c < sizeof chunks / sizeof *chunks; c++) {
        mt_load_opts_t o;
        mt_load_opts_init(&o);
        o.chunk_bytes = chunks[c];
        mt_trace_t *t = NULL;
        mt_error_t err;
        assert_int_equal(mt_trace_load_buffer(b.data, b.len, "lists.json", &o, &t, &err), MT_OK);
        assert_int_equal(t->n_events, n_ev + 3);
        for (size_t i = 0; i < n_ev + 2; i++) {
            const mt_coll_t *co = mt_event_coll(t, &t->events[i]);
            assert_non_null(co);
            assert_true(co->fields & MT_COLL_F_PG_RANKS);
            const char *want = i < n_ev ? lists[order[i]] : i == n_ev ? lists[0] : "[0, 1, 2, 3]\xc3\xa9";
            assert_string_equal(mt_strtab_get(t->strings, co->pg_ranks, NULL), want);
        }
        const mt_coll_t *co = mt_event_coll(t, &t->events[n_ev + 2]);
        assert_true(!co || !(co->fields & MT_COLL_F_PG_RANKS));
        assert_int_equal(t->stats.bad_values, 1);
        mt_trace_free(t);
    }
    mt_buf_free(&b);
}

/* Build a larger trace that exercises every kind of unit. */
static char *make_big(size_t n_events, size_t *len)
{
    size_t cap = n_events * 400 + 4096, n = 0;
    char *b = malloc(cap);
    n += (size_t)snprintf(b + n, cap - n, "{\"distributedInfo\": {\"rank\": 1, \"world_size\": 2,"
                          " \"pg_config\": [{\"pg_name\": \"0\", \"ranks\": [0, 1]}]},\n\"traceEvents\": [\n");
    for (size_t i = 0; i < n_events; i++) {
        const char *sep = i + 1 < n_events ? ",\n" : "\n";
        switch (i % 5) {
        case 0:
            n += (size_t)snprintf(b + n, cap - n,
                                  "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::op_%zu\", \"pid\": 10, \"tid\": 11,"
                                  " \"ts\": %zu.%03zu, \"dur\": 3.250, \"args\": {\"External id\": %zu, \"Input Dims\":"
                                  " [[1, 2], [3]], \"Concrete Inputs\": [\"\", \"x\\\"y\"]}}%s",
                                  i % 37, 1000 + i, i % 1000, i, sep);
            break;
        case 1:
            n += (size_t)snprintf(b + n, cap - n,
                                  "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 10,"
                                  " \"tid\": 11, \"ts\": %zu.500, \"dur\": 1.000, \"args\": {\"correlation\": %zu, \"cbid\": 211}}%s",
                                  1000 + i, i, sep);
            break;
        case 2:
            n += (size_t)snprintf(b + n, cap - n,
                                  "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"%s\", \"pid\": 0, \"tid\": %d,"
                                  " \"ts\": %zu.900, \"dur\": 2.125, \"args\": {\"correlation\": %zu, \"grid\": [1, 2, 3],"
                                  " \"Collective name\": \"allreduce\", \"Seq\": %zu, \"Process Group Name\": \"0\"}}%s",
                                  i % 2 ? "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
                                        : "sm90_xmma_gemm_\\u00e9",
                                  i % 2 ? 20 : 7, 1000 + i, i - 1, i, sep);
            break;
        case 3:
            if (i % 10 == 8) { /* a stream-wait record (enable_cuda_sync_events) */
                n += (size_t)snprintf(b + n, cap - n,
                                      "{\"ph\": \"X\", \"cat\": \"cuda_sync\", \"name\": \"Stream Wait Event\", \"pid\": 0,"
                                      " \"tid\": 20, \"ts\": %zu.500, \"dur\": 0.010, \"args\": {\"External id\": %zu,"
                                      " \"cuda_sync_kind\": \"Stream Wait Event\", \"wait_on_stream\": 7,"
                                      " \"wait_on_cuda_event_record_corr_id\": %zu, \"wait_on_cuda_event_id\": 77,"
                                      " \"stream\": 20, \"correlation\": %zu}}%s",
                                      1000 + i, i, i - 2, i, sep);
                break;
            }
            n += (size_t)snprintf(b + n, cap - n,
                                  "{\"ph\": \"s\", \"id\": %zu, \"pid\": 10, \"tid\": 11, \"ts\": %zu.500,"
                                  " \"cat\": \"ac2g\", \"name\": \"ac2g\"}%s",
                                  i, 1000 + i, sep);
            break;
        default:
            n += (size_t)snprintf(b + n, cap - n,
                                  "{\"name\": \"thread_name\", \"ph\": \"M\", \"ts\": 0, \"pid\": 10, \"tid\": %zu,"
                                  " \"args\": {\"name\": \"thread %zu\"}}%s",
                                  i, i, sep);
        }
    }
    n += (size_t)snprintf(b + n, cap - n, "],\n\"traceName\": \"x\", \"baseTimeNanoseconds\": 1767189312000000000}\n");
    *len = n;
    return b;
}

static void assert_same_trace(const mt_trace_t *a, const mt_trace_t *b)
{
    assert_int_equal(a->n_events, b->n_events);
    assert_memory_equal(a->events, b->events, a->n_events * sizeof *a->events);
    assert_int_equal(a->n_colls, b->n_colls);
    assert_memory_equal(a->colls, b->colls, a->n_colls * sizeof *a->colls);
    assert_int_equal(a->n_meta, b->n_meta);
    assert_memory_equal(a->meta, b->meta, a->n_meta * sizeof *a->meta);
    assert_int_equal(a->n_swaits, b->n_swaits);
    assert_memory_equal(a->swaits, b->swaits, a->n_swaits * sizeof *a->swaits);
    assert_int_equal(mt_strtab_count(a->strings), mt_strtab_count(b->strings));
    assert_int_equal(a->n_pgs, b->n_pgs);
    assert_int_equal(a->info.base_ns, b->info.base_ns);
    assert_int_equal(a->stats.bad_values, b->stats.bad_values);
    assert_int_equal(a->stats.unknown_fields, b->stats.unknown_fields);
}

/* Units cut at every possible place by tiny read chunks must give the
 * same table as one big read. */
static void test_chunk_boundaries(void **state)
{
    (void)state;
    size_t len;
    char *big = make_big(300, &len);
    mt_load_opts_t o;
    mt_load_opts_init(&o);
    o.chunk_bytes = 1 << 24;
    mt_trace_t *ref = NULL;
    mt_error_t err;
    assert_int_equal(mt_trace_load_buffer(big, len, "big.json", &o, &ref, &err), MT_OK);
    assert_int_equal(ref->n_events, 300);
    assert_int_equal(ref->info.rank, 1);
    assert_int_equal(ref->events[2].ts, 1767189312000000000LL + 1002900);
    assert_int_equal(ref->n_swaits, 30); /* events 8, 18, ..., 298 */
    assert_int_equal(ref->swaits[1].event, 19);
    assert_int_equal(ref->swaits[1].wait_stream, 7);
    assert_int_equal(ref->swaits[1].record_corr, 16);
    const size_t chunks[] = {1, 2, 3, 5, 7, 16, 17, 61, 64, 1000, 4093};
    for (size_t i = 0; i < sizeof chunks / sizeof chunks[0]; i++) {
        o.chunk_bytes = chunks[i];
        mt_trace_t *t = NULL;
        assert_int_equal(mt_trace_load_buffer(big, len, "big.json", &o, &t, &err), MT_OK);
        assert_same_trace(ref, t);
        mt_trace_free(t);
    }
    /* and gzip, with a small chunk */
    size_t zlen;
    unsigned char *z = gzip_bytes(big, len, &zlen);
    o.chunk_bytes = 13;
    mt_trace_t *t = NULL;
    assert_int_equal(mt_trace_load_buffer(z, zlen, "big.json.gz", &o, &t, &err), MT_OK);
    assert_same_trace(ref, t);
    assert_int_equal(t->stats.bytes_in, zlen);
    assert_int_equal(t->stats.bytes_json, len);
    mt_trace_free(t);
    free(z);
    mt_trace_free(ref);
    free(big);
}

/* The size guess that presizes the event table: the bytes for plain input;
 * for gzip the trailer's ISIZE when it exceeds 8x the compressed bytes
 * (JSON compresses 10-15x), up to 1032x (deflate's limit), from memory and
 * from a file. */
static void test_size_hint(void **state)
{
    (void)state;
    size_t len, zlen;
    char *big = make_big(400, &len);
    unsigned char *z = gzip_bytes(big, len, &zlen);
    assert_true(len > 8 * zlen); /* else the test proves nothing */
    mt_input_t *in = NULL;
    mt_error_t err;
    assert_int_equal(mt_input_open(NULL, big, len, &in, &err), MT_OK);
    assert_int_equal(mt_input_size_hint(in), len);
    mt_input_close(in);
    assert_int_equal(mt_input_open(NULL, z, zlen, &in, &err), MT_OK);
    assert_int_equal(mt_input_size_hint(in), len);
    mt_input_close(in);
    char path[512];
    snprintf(path, sizeof path, "%s/size_hint.json.gz", MT_TEST_TMP);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(z, 1, zlen, f), zlen);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(mt_input_open(path, NULL, 0, &in, &err), MT_OK);
    assert_int_equal(mt_input_size_hint(in), len);
    mt_input_close(in);
    /* two members: the last one's ISIZE (half) is below 8x: the old guess */
    size_t half = len / 2, z1, z2;
    unsigned char *a = gzip_bytes(big, half, &z1), *b = gzip_bytes(big + half, len - half, &z2);
    unsigned char *cat = malloc(z1 + z2);
    memcpy(cat, a, z1);
    memcpy(cat + z1, b, z2);
    assert_int_equal(mt_input_open(NULL, cat, z1 + z2, &in, &err), MT_OK);
    uint64_t want = (uint64_t)(len - half) > 8 * (uint64_t)(z1 + z2) ? len - half : 8 * (uint64_t)(z1 + z2);
    assert_int_equal(mt_input_size_hint(in), want);
    mt_input_close(in);
    /* a forged ISIZE (4 GiB - 1 on a 20-byte file, as a fuzzer writes it):
     * no more than deflate's 1032:1 can give */
    unsigned char forged[20] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 3, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff};
    assert_int_equal(mt_input_open(NULL, forged, sizeof forged, &in, &err), MT_OK);
    assert_int_equal(mt_input_size_hint(in), 1032 * sizeof forged);
    mt_input_close(in);
    free(cat);
    free(a);
    free(b);
    free(z);
    free(big);
}

/* Everything the byte source yields for mem[0, len), read cap bytes at a
 * time; the status of the last read. */
static mt_status_t read_all(const void *mem, size_t len, size_t cap, mt_buf_t *out, bool *truncated)
{
    mt_input_t *in = NULL;
    mt_error_t err;
    *truncated = false;
    out->len = 0;
    mt_status_t st = mt_input_open(NULL, mem, len, &in, &err);
    if (st)
        return st;
    size_t n;
    do {
        assert_int_equal(mt_buf_reserve(out, cap), MT_OK);
        st = mt_input_read(in, out->data + out->len, cap, &n, truncated, &err);
        out->len += n;
    } while (!st && n);
    mt_input_close(in);
    return st;
}

/* The inflater (ISA-L or zlib, whichever the build has) through every read
 * size: three members (one of them empty) inline (under 64 KiB of gzip)
 * and on the inflate thread (a bigger file), read 1, 7, 4096 and 1 MiB
 * bytes at a time; then every cut of the small stream gives a prefix of the
 * JSON and is flagged as cut (or fails as corrupt), never more bytes. */
static void test_gzip_reads(void **state)
{
    (void)state;
    for (int big_one = 0; big_one < 2; big_one++) {
        size_t len, z1, z2, z3;
        char *json = make_big(big_one ? 40000 : 1500, &len);
        size_t half = len / 2;
        unsigned char *a = gzip_bytes(json, half, &z1), *e = gzip_bytes(json, 0, &z2),
                      *b = gzip_bytes(json + half, len - half, &z3);
        size_t zlen = z1 + z2 + z3;
        assert_true(big_one ? zlen > 64 * 1024 : zlen < 64 * 1024);
        unsigned char *z = malloc(zlen);
        memcpy(z, a, z1);
        memcpy(z + z1, e, z2);
        memcpy(z + z1 + z2, b, z3);
        mt_buf_t out = {0};
        bool cut;
        size_t caps[] = {1, 7, 4096, (size_t)1 << 20};
        for (size_t c = 0; c < sizeof caps / sizeof *caps; c++) {
            if (big_one && caps[c] < 4096)
                continue; /* a million one-byte reads prove nothing more */
            assert_int_equal(read_all(z, zlen, caps[c], &out, &cut), MT_OK);
            assert_false(cut);
            assert_int_equal(out.len, len);
            assert_memory_equal(out.data, json, len);
        }
        if (!big_one) {
            for (size_t at = 2; at < zlen; at += 1 + at / 64) { /* under 2 bytes: no gzip magic, plain input */
                mt_status_t st = read_all(z, at, 4096, &out, &cut);
                assert_true(out.len <= len);
                assert_memory_equal(out.data, json, out.len);
                if (st == MT_OK) /* a cut after a complete member is a clean end */
                    assert_true(cut || at == z1 || at == z1 + z2);
                else
                    assert_int_equal(st, MT_ERR_GZIP);
            }
        }
        mt_buf_free(&out);
        free(z);
        free(a);
        free(e);
        free(b);
        free(json);
    }
}

/* Two gzip members concatenated are one valid gzip file. */
static void test_gzip_members(void **state)
{
    (void)state;
    size_t len;
    char *big = make_big(50, &len);
    size_t half = len / 2, z1, z2;
    unsigned char *a = gzip_bytes(big, half, &z1), *b = gzip_bytes(big + half, len - half, &z2);
    unsigned char *cat = malloc(z1 + z2);
    memcpy(cat, a, z1);
    memcpy(cat + z1, b, z2);
    mt_trace_t *t = NULL;
    mt_error_t err;
    assert_int_equal(mt_trace_load_buffer(cat, z1 + z2, "two.json.gz", NULL, &t, &err), MT_OK);
    assert_int_equal(t->n_events, 50);
    assert_false(t->stats.truncated);
    mt_trace_free(t);
    /* garbage after the last member */
    unsigned char *g = malloc(z1 + z2 + 3);
    memcpy(g, cat, z1 + z2);
    memcpy(g + z1 + z2, "xyz", 3);
    assert_int_equal(mt_trace_load_buffer(g, z1 + z2 + 3, "g.json.gz", NULL, &t, &err), MT_ERR_GZIP);
    /* a corrupt member: flip bytes in the middle of the deflate data */
    memcpy(g, cat, z1 + z2);
    for (size_t i = z1 / 2; i < z1 / 2 + 8; i++)
        g[i] ^= 0x5a;
    mt_status_t st = mt_trace_load_buffer(g, z1 + z2, "c.json.gz", NULL, &t, &err);
    assert_true(st == MT_ERR_GZIP || st == MT_ERR_SYNTAX);
    /* a reserved header flag bit (RFC 1952: must be zero), in the first
     * member and in the second: both inflaters stop there */
    for (int m = 0; m < 2; m++) {
        memcpy(g, cat, z1 + z2);
        g[(m ? z1 : 0) + 3] |= 0x20;
        assert_int_equal(mt_trace_load_buffer(g, z1 + z2, "f.json.gz", NULL, &t, &err), MT_ERR_GZIP);
        assert_non_null(strstr(err.msg, "header flags"));
    }
    free(a);
    free(b);
    free(cat);
    free(g);
    free(big);
}

/* A file cut anywhere loads the complete events before the cut and says
 * it was truncated; --strict makes that an error. */
static void test_truncation_everywhere(void **state)
{
    (void)state;
    size_t len;
    char *big = make_big(40, &len);
    mt_trace_t *full = load_str(big);
    /* event end offsets in the text, to know how many are complete at a cut */
    size_t ends[64], n_ends = 0;
    {
        const char *p = strstr(big, "\"traceEvents\": [") + 16;
        int depth = 0;
        bool in_str = false;
        for (; *p && n_ends < 40; p++) {
            if (in_str) {
                if (*p == '\\')
                    p++;
                else if (*p == '"')
                    in_str = false;
                continue;
            }
            if (*p == '"')
                in_str = true;
            else if (*p == '{')
                depth++;
            else if (*p == '}' && --depth == 0)
                ends[n_ends++] = (size_t)(p - big) + 1;
        }
    }
    assert_int_equal(n_ends, 40);
    size_t events_end = (size_t)(strstr(big, "],\n\"traceName\"") - big);
    mt_load_opts_t strict;
    mt_load_opts_init(&strict);
    strict.strict = true;
    for (size_t cut = 1; cut < len; cut += (cut < 400 ? 1 : 7)) {
        mt_trace_t *t = NULL;
        mt_error_t err;
        mt_status_t st = mt_trace_load_buffer(big, cut, "cut.json", NULL, &t, &err);
        if (cut <= events_end) {
            assert_int_equal(st, MT_OK);
            size_t expect = 0;
            while (expect < n_ends && ends[expect] <= cut)
                expect++;
            assert_int_equal(t->n_events, expect);
            assert_true(t->stats.truncated);
            /* The loaded events are the first ones of the full load (the base
             * comes after the events, so only ts differs). */
            for (size_t e = 0; e < t->n_events; e++) {
                assert_string_equal(mt_event_name(t, &t->events[e]), mt_event_name(full, &full->events[e]));
                assert_int_equal(t->events[e].dur, full->events[e].dur);
                assert_int_equal(t->events[e].ts + 1767189312000000000LL, full->events[e].ts);
            }
        } else {
            /* cut after the event array: only the trailer is lost */
            assert_int_equal(st, MT_OK);
            assert_int_equal(t->n_events, 40);
            assert_true(t->stats.truncated || cut >= len - 1);
        }
        mt_trace_free(t);
        st = mt_trace_load_buffer(big, cut, "cut.json", &strict, &t, &err);
        if (cut < len - 1) {
            assert_int_equal(st, MT_ERR_TRUNCATED);
            assert_null(t);
            assert_true(err.offset >= 0 && (size_t)err.offset <= cut);
        } else {
            mt_trace_free(t);
        }
    }
    /* gzip cut at many places: never a crash, always truncated or an error */
    size_t zlen;
    unsigned char *z = gzip_bytes(big, len, &zlen);
    for (size_t cut = 0; cut < zlen; cut += 3) {
        mt_trace_t *t = NULL;
        mt_error_t err;
        mt_status_t st = mt_trace_load_buffer(z, cut, "cut.json.gz", NULL, &t, &err);
        if (st == MT_OK) {
            assert_true(t->stats.truncated);
            assert_true(t->n_events <= 40);
        } else {
            assert_true(st == MT_ERR_FORMAT || st == MT_ERR_GZIP || st == MT_ERR_TRUNCATED);
        }
        if (cut >= 2 && cut <= 10) {
            /* inside the 10-byte gzip header: cut short, not "empty" */
            assert_int_equal(st, MT_ERR_TRUNCATED);
            assert_non_null(strstr(err.msg, "cut short before any JSON"));
        }
        mt_trace_free(t);
    }
    free(z);
    mt_trace_free(full);
    free(big);
}

typedef struct bad_case {
    const char *json;
    mt_status_t code;
    int64_t offset;   /* -1: do not check */
    const char *msg;  /* substring of the message, or NULL */
} bad_case_t;

static void test_malformed(void **state)
{
    (void)state;
    const bad_case_t cases[] = {
        {"", MT_ERR_FORMAT, -1, "empty file"},
        {"   \n ", MT_ERR_FORMAT, -1, "no JSON value"},
        {"{\"a\": 1}", MT_ERR_NOT_TRACE, -1, "traceEvents"},
        {"nope", MT_ERR_SYNTAX, 0, "'{' or '['"},
        {"{\"traceEvents\": [{\"ph\": \"X\" \"ts\": 1}]}", MT_ERR_SYNTAX, 28, "',' or '}'"},
        {"{\"traceEvents\": [{\"name\": \"a\\qb\"}]}", MT_ERR_SYNTAX, 29, NULL},
        {"{\"traceEvents\": [{\"name\": \"a\\u12g4\"}]}", MT_ERR_SYNTAX, -1, NULL},
        /* a \u with fewer than 4 hex digits before the closing quote: at
         * the backslash (the quote was read as the string's end) */
        {"{\"traceEvents\": [{\"name\": \"a\\u\"}]}", MT_ERR_SYNTAX, 28, NULL},
        {"{\"traceEvents\": [{\"name\": \"a\\u1\"}]}", MT_ERR_SYNTAX, 28, NULL},
        {"{\"traceEvents\": [{\"name\": \"a\\u12\"}]}", MT_ERR_SYNTAX, 28, NULL},
        {"{\"traceEvents\": [{\"name\": \"a\\u123\"}]}", MT_ERR_SYNTAX, 28, NULL},
        {"{\"traceEvents\": [{\"args\": {\"k\\u00\": 1}}]}", MT_ERR_SYNTAX, 29, NULL},
        {"{\"traceEvents\": [{\"name\": \"a\tb\"}]}", MT_ERR_SYNTAX, 28, "byte 0x09"},
        {"{\"traceEvents\": [{\"ts\": 1e400}]}", MT_ERR_RANGE, 24, "ts"},
        {"{\"traceEvents\": [{\"ts\": 9223372036854775.808}]}", MT_ERR_RANGE, 24, NULL},
        /* times that fit int64 but whose sums and differences would not
         * (issue 40 item 3): at the value */
        {"{\"traceEvents\": [{\"ts\": -9e15}]}", MT_ERR_RANGE, 24, "2^62"},
        {"{\"traceEvents\": [{\"ts\": 9000000000000000}]}", MT_ERR_RANGE, 24, "2^62"},
        {"{\"traceEvents\": [{\"ts\": 1, \"dur\": 9e15}]}", MT_ERR_RANGE, 34, "2^62"},
        {"{\"traceEvents\": [{\"ts\": 1.}]}", MT_ERR_SYNTAX, 24, NULL},
        {"{\"traceEvents\": [{\"ts\": 1}]} x", MT_ERR_SYNTAX, 29, "end of input"},
        {"{\"traceEvents\": [1, 2]}", MT_ERR_SYNTAX, 17, "trace event"},
        {"[0.51, 0.49]", MT_ERR_NOT_TRACE, -1, "array of values"},
        {"[\"a\", [1], {\"ph\": \"X\"}]", MT_ERR_NOT_TRACE, -1, "array of values"},
        {"[1, 2", MT_ERR_TRUNCATED, -1, "array of values"},
        {"[1, }", MT_ERR_SYNTAX, -1, NULL},
        {"{\"traceEvents\": {}}", MT_ERR_SYNTAX, 16, "traceEvents array"},
        {"{\"traceEvents\": [], \"traceEvents\": []}", MT_ERR_FORMAT, -1, "second"},
        {"{\"traceEvents\": [{\"args\": {\"x\": [1, 2}}]}", MT_ERR_SYNTAX, 37, "',' or ']'"},
        {"{\"traceEvents\": [{\"args\": {\"x\": tru}}]}", MT_ERR_SYNTAX, 32, NULL},
        {"{\"traceEvents\": [{\"ts\": 1, \"pid\": nul}]}", MT_ERR_SYNTAX, -1, NULL},
        {"{\"traceEvents\": [{\"ts\": 1}],\n\"baseTimeNanoseconds\": 9223372036854775807}", MT_ERR_RANGE, -1,
         "baseTimeNanoseconds"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const bad_case_t *c = &cases[i];
        mt_error_t err;
        mt_status_t st = load_str_err(c->json, strlen(c->json), NULL, &err);
        char b[1200];
        mt_error_format(&err, b, sizeof b);
        if (st != c->code)
            fail_msg("case %zu: got status %d (%s), want %d", i, st, b, c->code);
        if (c->offset >= 0 && err.offset != c->offset)
            fail_msg("case %zu: offset %lld, want %lld (%s)", i, (long long)err.offset, (long long)c->offset, b);
        if (c->msg && !strstr(b, c->msg))
            fail_msg("case %zu: message '%s' lacks '%s'", i, b, c->msg);
        assert_non_null(strstr(b, "bad.json"));
    }
}

/* "ts" and "dur" hold numbers: anything else is an error at the value's
 * byte and line:col (not an event placed at time 0, nor a string copied
 * into the merged trace); a complete event without "ts" is counted, its
 * kernels apart. Offsets and lines counted by hand from the text. */
static void test_time_fields_are_numbers(void **state)
{
    (void)state;
    const bad_case_t cases[] = {
        /* 0         1         2         3         4         5
         * 0123456789012345678901234567890123456789012345678901234 */
        {"{\"traceEvents\": [{\"ph\": \"X\", \"ts\": \"abc\", \"dur\": 1}]}", MT_ERR_FORMAT, 35,
         "expected a number for \"ts\" (microseconds), found '\"'"},
        {"{\"traceEvents\": [{\"ts\": null}]}", MT_ERR_FORMAT, 24, "found 'n'"},
        {"{\"traceEvents\": [{\"ts\": true}]}", MT_ERR_FORMAT, 24, "\"ts\""},
        {"{\"traceEvents\": [{\"ts\": [1]}]}", MT_ERR_FORMAT, 24, "found '['"},
        {"{\"traceEvents\": [{\"ts\": {\"us\": 1}}]}", MT_ERR_FORMAT, 24, NULL},
        {"{\"traceEvents\": [{\"ts\": 1, \"dur\": \"5\"}]}", MT_ERR_FORMAT, 34,
         "expected a number for \"dur\" (microseconds), found '\"'"},
        {"{\"traceEvents\": [{\"ts\": 1, \"dur\": null}]}", MT_ERR_FORMAT, 34, "\"dur\""},
        {"{\"traceEvents\": [{\"ts\": +5}]}", MT_ERR_FORMAT, 24, "found '+'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const bad_case_t *c = &cases[i];
        mt_error_t err;
        mt_status_t st = load_str_err(c->json, strlen(c->json), NULL, &err);
        char b[1200];
        mt_error_format(&err, b, sizeof b);
        if (st != c->code)
            fail_msg("case %zu: got status %d (%s), want %d", i, st, b, c->code);
        if (err.offset != c->offset)
            fail_msg("case %zu: offset %lld, want %lld (%s)", i, (long long)err.offset, (long long)c->offset, b);
        if (c->msg && !strstr(b, c->msg))
            fail_msg("case %zu: message '%s' lacks '%s'", i, b, c->msg);
        assert_non_null(strstr(b, "line 1:"));
    }
    /* On the second line: line 2, column counted from its first byte. */
    const char two[] = "{\"traceEvents\": [\n{\"ph\": \"X\", \"cat\": \"kernel\", \"ts\": \"abc\"}]}";
    mt_error_t err;
    assert_int_equal(load_str_err(two, sizeof two - 1, NULL, &err), MT_ERR_FORMAT);
    assert_int_equal(err.offset, 53);
    assert_int_equal(err.line, 2);
    assert_int_equal(err.col, 36);

    /* Without "ts": two kernels and a cpu_op counted (X only; M, i and
     * events with "ts" are not). */
    mt_trace_t *t = load_str("{\"traceEvents\":["
                             "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k1\",\"pid\":0,\"tid\":7,\"dur\":5},"
                             "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k2\",\"pid\":0,\"tid\":7,\"dur\":5},"
                             "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k3\",\"pid\":0,\"tid\":7,\"ts\":0,\"dur\":5},"
                             "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"op\",\"pid\":1,\"tid\":1,\"dur\":5},"
                             "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1,\"args\":{\"name\":\"x\"}},"
                             "{\"ph\":\"i\",\"name\":\"mark\",\"pid\":1,\"tid\":1}]}");
    assert_int_equal(t->n_events, 6);
    assert_int_equal(t->stats.no_ts, 3);
    assert_int_equal(t->stats.no_ts_kernels, 2);
    mt_trace_free(t);
}

/* A NUL byte inside the data is an error at its offset, with line:col. */
static void test_nul_and_line_col(void **state)
{
    (void)state;
    const char json[] = "{\"traceEvents\": [\n  {\"ph\": \"X\"},\n  {\"ph\": \0\"X\"}]}";
    mt_error_t err;
    mt_status_t st = load_str_err(json, sizeof json - 1, NULL, &err);
    assert_int_equal(st, MT_ERR_SYNTAX);
    assert_int_equal(err.offset, 42);
    assert_int_equal(err.line, 3);
    assert_int_equal(err.col, 10);
    char b[1200];
    assert_non_null(strstr(mt_error_format(&err, b, sizeof b), "(line 3:10)"));
}

/* Deep nesting in args: no recursion, so no stack overflow. */
static void test_deep_nesting(void **state)
{
    (void)state;
    const size_t depth = 200000;
    size_t cap = depth * 6 + 256, n = 0;
    char *b = malloc(cap);
    n += (size_t)sprintf(b, "{\"traceEvents\": [{\"ph\": \"X\", \"args\": {\"deep\": ");
    /* alternate objects {"k": and arrays [ , then close them in reverse */
    for (size_t i = 0; i < depth; i++) {
        if (i % 2) {
            b[n++] = '[';
        } else {
            memcpy(b + n, "{\"k\":", 5);
            n += 5;
        }
    }
    for (size_t i = depth; i-- > 0;)
        b[n++] = i % 2 ? ']' : '}';
    n += (size_t)sprintf(b + n, "}}]}");
    mt_trace_t *t = NULL;
    mt_error_t err;
    assert_int_equal(mt_trace_load_buffer(b, n, "deep.json", NULL, &t, &err), MT_OK);
    assert_int_equal(t->n_events, 1);
    mt_trace_free(t);
    /* unbalanced: an error or a truncation, never a crash */
    mt_status_t st = mt_trace_load_buffer(b, n - 10, "deep.json", NULL, &t, &err);
    if (st == MT_OK) {
        assert_true(t->stats.truncated);
        mt_trace_free(t);
    }
    free(b);
}

/* A huge single string (larger than the read chunk) grows the buffer. */
static void test_huge_string(void **state)
{
    (void)state;
    const size_t big = 9u << 20;
    char *b = malloc(big + 200);
    size_t n = (size_t)sprintf(b, "{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"");
    memset(b + n, 'a', big);
    n += big;
    n += (size_t)sprintf(b + n, "\", \"ts\": 5}]}");
    mt_trace_t *t = NULL;
    mt_error_t err;
    assert_int_equal(mt_trace_load_buffer(b, n, "huge.json", NULL, &t, &err), MT_OK);
    size_t len;
    mt_strtab_get(t->strings, t->events[0].name, &len);
    assert_int_equal(len, big);
    assert_int_equal(t->events[0].ts, 5000);
    mt_trace_free(t);
    free(b);
}

typedef struct spans_ctx {
    int n;
    char got[8][160];
} spans_ctx_t;

static mt_status_t collect_spans(void *ctx, const mt_trace_t *t, const mt_event_t *ev, const mt_raw_event_t *raw,
                                 mt_error_t *err)
{
    (void)t;
    (void)ev;
    (void)err;
    spans_ctx_t *c = ctx;
    if (c->n >= 8)
        return MT_OK;
    snprintf(c->got[c->n++], sizeof c->got[0], "%.*s|%.*s|%.*s|%.*s|%.*s|%.*s", (int)raw->len, raw->text,
             (int)raw->ts_len, raw->text + raw->ts_off, (int)raw->dur_len, raw->text + raw->dur_off,
             (int)raw->pid_len, raw->text + raw->pid_off, (int)raw->tid_len, raw->text + raw->tid_off,
             (int)raw->id_len, raw->text + raw->id_off);
    return c->n == 3 ? MT_ERR_LIMIT : MT_OK;
}

/* The per-event callback sees each event's text and the value spans of
 * ts/dur/pid/tid/id, whatever the key order; it can stop the load. */
static void test_event_callback(void **state)
{
    (void)state;
    const char json[] = "{\"traceEvents\": [{\"ph\": \"X\", \"ts\": 12.500, \"dur\": 3, \"pid\": 7, \"tid\": \"stream 9\"},"
                        " {\"args\": {\"ts\": 99}, \"id\": 41, \"pid\": \"Spans\", \"ts\": 1e3, \"ph\": \"s\"},"
                        " {\"ph\": \"i\"}, {\"ph\": \"i\"}]}";
    spans_ctx_t c = {0};
    mt_load_opts_t o;
    mt_load_opts_init(&o);
    o.on_event = collect_spans;
    o.on_event_ctx = &c;
    o.no_store = true;
    mt_trace_t *t = NULL;
    mt_error_t err;
    assert_int_equal(mt_trace_load_buffer(json, sizeof json - 1, "cb.json", &o, &t, &err), MT_ERR_LIMIT);
    assert_int_equal(c.n, 3);
    assert_string_equal(c.got[0], "{\"ph\": \"X\", \"ts\": 12.500, \"dur\": 3, \"pid\": 7, \"tid\": \"stream 9\"}"
                                   "|12.500|3|7|\"stream 9\"|");
    assert_string_equal(c.got[1], "{\"args\": {\"ts\": 99}, \"id\": 41, \"pid\": \"Spans\", \"ts\": 1e3, \"ph\": \"s\"}"
                                   "|1e3||\"Spans\"||41");
    assert_string_equal(c.got[2], "{\"ph\": \"i\"}|||||");
    assert_int_equal(err.offset, 153); /* the event where the callback said stop */
    /* without stopping, nothing is stored but everything is counted */
    c.n = 0;
    o.on_event = NULL;
    assert_int_equal(mt_trace_load_buffer(json, sizeof json - 1, "cb.json", &o, &t, &err), MT_OK);
    assert_int_equal(t->n_events, 0);
    assert_int_equal(t->stats.by_ph[MT_PH_I], 2);
    mt_trace_free(t);
}

typedef struct wide_ctx {
    int n;
    int64_t pid[4];
    uint64_t corr[4];
} wide_ctx_t;

static mt_status_t collect_wide(void *ctx, const mt_trace_t *t, const mt_event_t *ev, const mt_raw_event_t *raw,
                                mt_error_t *err)
{
    (void)raw;
    (void)err;
    wide_ctx_t *c = ctx;
    if (c->n < 4) {
        c->pid[c->n] = mt_event_pid(t, ev);
        c->corr[c->n++] = mt_event_corr(t, ev);
    }
    return MT_OK;
}

/* Ids at the edges of the 32-bit event fields (mt_event_t: pids and tids
 * in [-2^30, 2^31), correlation and External ids below 0xC0000000; the
 * rest in the side table) come back whole, link by their full value, and
 * with no_store the callback sees them whole while no slot is kept. */
static void test_wide_ids(void **state)
{
    (void)state;
    const char json[] =
        "{\"traceEvents\": ["
        "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":2147483648,\"tid\":-1073741825,"
        "\"ts\":1,\"dur\":5,\"args\":{\"correlation\":5000000007,\"External id\":18446744073709551615}},"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":-1073741824,\"tid\":2147483647,"
        "\"ts\":10,\"dur\":5,\"args\":{\"correlation\":5000000007,\"External id\":3221225471}},"
        "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":-9223372036854775807,"
        "\"tid\":9223372036854775807,\"ts\":20,\"dur\":5,\"args\":{\"correlation\":3221225472,\"External id\":0}},"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,"
        "\"ts\":30,\"dur\":5,\"args\":{\"correlation\":3221225472}}]}";
    mt_trace_t *t = NULL;
    mt_error_t err;
    assert_int_equal(mt_trace_load_buffer(json, sizeof json - 1, "wide.json", NULL, &t, &err), MT_OK);
    assert_int_equal(t->n_events, 4);
    const mt_event_t *e = t->events;
    assert_true(mt_event_pid(t, &e[0]) == 2147483648LL);
    assert_true(mt_event_tid(t, &e[0]) == -1073741825LL);
    assert_true(mt_event_corr(t, &e[0]) == 5000000007ULL);
    assert_true(mt_event_ext(t, &e[0]) == UINT64_MAX);
    assert_true(mt_event_pid(t, &e[1]) == -1073741824LL); /* the edges that still fit */
    assert_true(mt_event_tid(t, &e[1]) == 2147483647LL);
    assert_true(mt_event_corr(t, &e[1]) == 5000000007ULL);
    assert_true(mt_event_ext(t, &e[1]) == 3221225471ULL);
    assert_true(mt_event_pid(t, &e[2]) == -9223372036854775807LL);
    assert_true(mt_event_tid(t, &e[2]) == 9223372036854775807LL);
    assert_true(mt_event_corr(t, &e[2]) == 3221225472ULL);
    assert_true(mt_event_ext(t, &e[2]) == 0);
    assert_true(mt_event_corr(t, &e[3]) == 3221225472ULL);
    /* 9 values did not fit: e0's four, e1's correlation, e2's pid, tid and correlation, e3's correlation */
    assert_int_equal(t->n_wide, 9);
    assert_int_equal(e[1].aux, 1); /* each kernel linked to its launch by the full correlation */
    assert_int_equal(e[3].aux, 3);
    assert_int_equal(t->link.launched, 2);
    mt_trace_free(t);

    wide_ctx_t c = {0};
    mt_load_opts_t o;
    mt_load_opts_init(&o);
    o.on_event = collect_wide;
    o.on_event_ctx = &c;
    o.no_store = true;
    assert_int_equal(mt_trace_load_buffer(json, sizeof json - 1, "wide.json", &o, &t, &err), MT_OK);
    assert_int_equal(c.n, 4);
    assert_true(c.pid[0] == 2147483648LL && c.corr[0] == 5000000007ULL);
    assert_true(c.pid[2] == -9223372036854775807LL && c.corr[2] == 3221225472ULL);
    assert_true(c.pid[3] == 0 && c.corr[3] == 3221225472ULL);
    assert_int_equal(t->n_events, 0);
    assert_int_equal(t->n_wide, 0);
    mt_trace_free(t);
}

/* skim_args: args are checked but not read (the merged write's pass 2). */
static void test_skim_args(void **state)
{
    (void)state;
    const char json[] = "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"record_param_comms\","
                        " \"ts\": 5, \"dur\": 2, \"pid\": 1, \"tid\": 1, \"args\": {\"Collective name\": \"allreduce\","
                        " \"In msg nelems\": 4, \"External id\": 9, \"x\": [1, {\"y\": \"\\u00e9\"}]}},"
                        " {\"ph\": \"M\", \"name\": \"process_labels\", \"pid\": 0, \"args\": {\"labels\": \"GPU 0\"}}]}";
    mt_load_opts_t o;
    mt_load_opts_init(&o);
    mt_trace_t *full = NULL, *t = NULL;
    mt_error_t err;
    assert_int_equal(mt_trace_load_buffer(json, sizeof json - 1, "a.json", &o, &full, &err), MT_OK);
    assert_int_equal(full->n_colls, 1); /* read: a collective record and the label */
    assert_int_not_equal(full->meta[0].str, 0);
    o.skim_args = true;
    assert_int_equal(mt_trace_load_buffer(json, sizeof json - 1, "a.json", &o, &t, &err), MT_OK);
    assert_int_equal(t->n_events, full->n_events);
    assert_int_equal(t->n_colls, 0);
    assert_int_equal(t->meta[0].str, 0);
    /* the top-level fields as written: ts 5 us, dur 2 us */
    assert_int_equal(t->events[0].ts, 5000);
    assert_int_equal(t->events[0].dur, 2000);
    assert_int_equal(t->events[1].ph, MT_PH_M);
    for (size_t i = 0; i < t->n_events; i++) {
        assert_int_equal(t->events[i].ts, full->events[i].ts);
        assert_int_equal(t->events[i].dur, full->events[i].dur);
        assert_int_equal(t->events[i].ph, full->events[i].ph);
    }
    mt_trace_free(t);
    mt_trace_free(full);
    /* still validated: a broken value inside args is the same syntax error */
    const char bad[] = "{\"traceEvents\": [{\"ph\": \"X\", \"args\": {\"a\": tru}}]}";
    assert_int_equal(mt_trace_load_buffer(bad, sizeof bad - 1, "b.json", &o, &t, &err), MT_ERR_SYNTAX);
    assert_int_equal(err.offset, strstr(bad, "tru") - bad); /* at the broken value */
}

static void test_missing_file(void **state)
{
    (void)state;
    mt_trace_t *t = NULL;
    mt_error_t err;
    assert_int_equal(mt_trace_load("/nonexistent/dir/rank-3.json", NULL, &t, &err), MT_ERR_IO);
    assert_null(t);
    char b[1200];
    mt_error_format(&err, b, sizeof b);
    assert_non_null(strstr(b, "/nonexistent/dir/rank-3.json"));
    assert_non_null(strstr(b, "No such file"));
}

/* One rank of a merged trace (tests/data/own: merged.json.gz was written
 * by mergetrace from rank-0.json and rank-1.json, which hold pids 0 (the
 * GPU) and 10 (the CPU process)): "<file>#rank1" is rank 1's events only,
 * with the pids of rank-1.json back; a rank the file lacks is an error. */
static void test_merged_part(void **state)
{
    (void)state;
    const char *file = MT_SAMPLES_DIR "/../tests/data/own/merged.json.gz";
    char part[1024];
    size_t need = mt_merged_part_path(part, sizeof part, file, 1);
    assert_true(need < sizeof part);
    assert_string_equal(part + need - 6, "#rank1");
    size_t fl = 0;
    assert_int_equal(mt_merged_part_parse(part, &fl), 1);
    assert_int_equal(fl, strlen(file));
    assert_int_equal(mt_merged_part_parse(MT_SAMPLES_DIR "/../tests/data/own/merged.json.gz#rankx", &fl), -1);
    assert_int_equal(mt_merged_part_parse(MT_SAMPLES_DIR "/../tests/data/own/nothere.json#rank1", &fl), -1);
    assert_int_equal(mt_merged_part_parse(file, &fl), -1);

    int32_t *ranks = NULL;
    size_t nr = 0;
    mt_error_t err;
    assert_int_equal(mt_merged_ranks(file, &ranks, &nr, &err), MT_OK);
    assert_int_equal(nr, 2);
    assert_int_equal(ranks[0], 0);
    assert_int_equal(ranks[1], 1);
    free(ranks);

    mt_trace_t *m = NULL, *o = NULL;
    assert_int_equal(mt_trace_load(part, NULL, &m, &err), MT_OK);
    assert_int_equal(mt_trace_load(MT_SAMPLES_DIR "/../tests/data/own/rank-1.json", NULL, &o, &err), MT_OK);
    assert_int_equal(m->info.rank, 1);
    /* every non-metadata event of rank 1, with its own pid; the merge adds
     * process metadata (name, labels, sort index), so M events differ */
    size_t nm = 0, no = 0;
    for (size_t i = 0; i < m->n_events; i++)
        if (m->events[i].ph != MT_PH_M) {
            assert_true(mt_event_pid(m, &m->events[i]) == 0 || mt_event_pid(m, &m->events[i]) == 10);
            nm++;
        }
    for (size_t i = 0; i < o->n_events; i++)
        no += o->events[i].ph != MT_PH_M;
    assert_int_equal(nm, no);
    for (size_t i = 0, j = 0; i < m->n_events && j < o->n_events;) {
        if (m->events[i].ph == MT_PH_M) {
            i++;
            continue;
        }
        if (o->events[j].ph == MT_PH_M) {
            j++;
            continue;
        }
        assert_int_equal(mt_event_pid(m, &m->events[i]), mt_event_pid(o, &o->events[j]));
        assert_int_equal(m->events[i].cls, o->events[j].cls);
        i++, j++;
    }
    mt_trace_free(m);
    mt_trace_free(o);

    mt_load_opts_t lo;
    mt_load_opts_init(&lo);
    mt_merged_part_path(part, sizeof part, file, 5);
    assert_int_equal(mt_trace_load(part, &lo, &m, &err), MT_ERR_NOT_TRACE);
    assert_null(m);
    /* the rank's last pid slot (28671) holds its Flight Recorder entries,
     * never read back as its trace */
    assert_non_null(strstr(err.msg, "no event of rank 5 in this merged trace (pids 24576..28670)"));
    assert_non_null(strstr(err.path, "#rank5"));
}

/* ---- the scanners' fast paths (src/trace/loader.c: blank runs, digit
 * runs, key literals, strings). This file is built twice: test_loader
 * against the core as shipped (SSE2 on x86-64) and test_loader_portable
 * against the core built with MT_PORTABLE_SCAN (the byte loops), so both
 * paths must give the values worked out here from the text each test
 * writes. Inputs are shifted by 0..33 bytes so that every token crosses
 * 16- and 32-byte boundaries of the loader's buffer (which starts at the
 * file's first byte), and loaded in chunks of 1, 7 and 64 bytes, so that
 * every token is also cut by the end of the buffered data. */

static mt_status_t load_n(const char *json, size_t len, size_t chunk, mt_trace_t **t, mt_error_t *err)
{
    mt_load_opts_t o;
    mt_load_opts_init(&o);
    o.chunk_bytes = chunk;
    *t = NULL;
    return mt_trace_load_buffer(json, len, "scan.json", &o, t, err);
}

/* The value of the decimal digits s[0..n) and, for fractions, nf more
 * digits f[0..nf), times 1000 (us -> ns) rounded half up, as __int128;
 * independent of the loader's arithmetic. */
static __int128 us_to_ns(const char *s, size_t n, const char *f, size_t nf)
{
    __int128 v = 0, den = 1;
    for (size_t i = 0; i < n; i++)
        v = v * 10 + (s[i] - '0');
    for (size_t i = 0; i < nf; i++) {
        v = v * 10 + (f[i] - '0');
        den *= 10;
    }
    v *= 1000;
    return (v + den / 2) / den;
}

static __int128 digits_value(const char *s, size_t n)
{
    __int128 v = 0;
    for (size_t i = 0; i < n; i++)
        v = v * 10 + (s[i] - '0');
    return v;
}

static void test_scan_numbers(void **state)
{
    (void)state;
    /* Generic digits, and INT64_MAX's own (9223372036854775807): its first
     * 16 digits are the largest integral microseconds that fit in ns. */
    static const char *const ints[] = {"1234567890123456789012", "9223372036854775807999"};
    static const char *const fracs[] = {"8075", "0005", "8079"};
    char doc[512];
    for (size_t shift = 0; shift < 34; shift++) {
        for (size_t a = 0; a < 2; a++) {
            for (size_t n = 1; n <= 20; n++) {
                for (size_t fi = 0; fi < 3; fi++) {
                    for (size_t nf = 0; nf <= 4; nf++) {
                        if (fi && !nf)
                            continue;
                        char num[64];
                        snprintf(num, sizeof num, "%.*s%s%.*s", (int)n, ints[a], nf ? "." : "", (int)nf, fracs[fi]);
                        int len = snprintf(doc, sizeof doc,
                                           "{\"traceEvents\": [%*s{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\","
                                           " \"pid\": %.*s, \"tid\": 7, \"ts\": %s, \"dur\": %s, \"args\": {\"queued\": %.*s,"
                                           " \"External id\": %.*s, \"grid\": [%.*s, 1, 1]}}]}",
                                           (int)shift, "", (int)n, ints[a], num, num, (int)n, ints[a], (int)n,
                                           ints[a], (int)n, ints[a]);
                        const size_t chunk = shift == 0 ? 7 : 1 << 20;
                        mt_trace_t *t;
                        mt_error_t err;
                        mt_status_t st = load_n(doc, (size_t)len, chunk, &t, &err);
                        __int128 ns = us_to_ns(ints[a], n, fracs[fi], nf);
                        if (ns > INT64_MAX || 2 * ns > MT_TIME_LIMIT_NS) {
                            /* ts (and dur) in ns past int64, or ts + dur past
                             * MT_TIME_LIMIT_NS: an error, never a wrapped time */
                            assert_int_equal(st, MT_ERR_RANGE);
                            mt_trace_free(t);
                            continue;
                        }
                        assert_int_equal(st, MT_OK);
                        assert_int_equal(t->n_events, 1);
                        const mt_event_t *e = &t->events[0];
                        assert_true(e->ts == (int64_t)ns);
                        assert_true(e->dur == (int64_t)ns);
                        __int128 v = digits_value(ints[a], n);
                        uint64_t bad = 0;
                        if (v <= INT64_MAX) {
                            assert_true(mt_event_pid(t, e) == (int64_t)v);
                        } else {
                            assert_true(mt_event_pid(t, e) == 0); /* not an id we can use: counted */
                            bad++;
                        }
                        if (v <= UINT64_MAX) {
                            assert_true(e->flags & MT_EV_HAS_EXT);
                            assert_true(mt_event_ext(t, e) == (uint64_t)v);
                        } else {
                            assert_false(e->flags & MT_EV_HAS_EXT);
                            bad++;
                        }
                        assert_int_equal(t->stats.bad_values, bad);
                        assert_int_equal(t->stats.unknown_fields, 0);
                        mt_trace_free(t);
                    }
                }
            }
        }
    }
}

/* Blank runs of every length up to 40 (spaces, newlines, tabs, CRs
 * mixed, or a newline and spaces) between all tokens of an event. With
 * blanks before a colon the key literals do not match, and the general key
 * reader takes the key. */
static void test_scan_blanks(void **state)
{
    (void)state;
    static const char *const tok[] = {
        "{", "\"ph\"", ":", "\"X\"", ",", "\"cat\"", ":", "\"kernel\"", ",", "\"name\"", ":", "\"k1\"", ",",
        "\"pid\"", ":", "3", ",", "\"tid\"", ":", "\"stream 7\"", ",", "\"ts\"", ":", "10.5", ",", "\"dur\"",
        ":", "2", ",", "\"s\"", ":", "\"t\"", ",", "\"bp\"", ":", "\"e\"", ",", "\"cname\"", ":", "\"x\"", ",", "\"args\"", ":", "{",
        "\"device\"", ":", "0", ",", "\"grid\"", ":", "[", "8", ",", "1", "]", ",", "\"correlation\"", ":",
        "77", ",", "\"External id\"", ":", "5", "}", "}"};
    static const char blanks[] = " \n\t\r  \n    ";
    for (size_t run = 0; run <= 81; run++) {
        /* runs 0-40: blanks mixed; 41-81: a line break and 0-40 spaces
         * (Kineto's indents, which have a path of their own) */
        char ws[64];
        size_t len = run <= 40 ? run : run - 40;
        for (size_t i = 0; i < len; i++)
            ws[i] = run <= 40 ? blanks[(i * 7 + run) % (sizeof blanks - 1)] : i ? ' ' : '\n';
        ws[len] = '\0';
        char doc[4096];
        size_t n = (size_t)snprintf(doc, sizeof doc, "%.*s[", (int)(run % 17), "                 ");
        for (size_t i = 0; i < sizeof tok / sizeof *tok; i++)
            n += (size_t)snprintf(doc + n, sizeof doc - n, "%s%s", ws, tok[i]);
        n += (size_t)snprintf(doc + n, sizeof doc - n, "%s]%s", ws, ws);
        const size_t chunks[] = {1, 64, 1 << 20};
        for (size_t c = 0; c < 3; c++) {
            mt_trace_t *t;
            mt_error_t err;
            assert_int_equal(load_n(doc, n, chunks[c], &t, &err), MT_OK);
            assert_int_equal(t->n_events, 1);
            const mt_event_t *e = &t->events[0];
            assert_int_equal(e->ph, MT_PH_X);
            assert_int_equal(e->cat, MT_CAT_KERNEL);
            assert_string_equal(mt_event_name(t, e), "k1");
            assert_int_equal(mt_event_pid(t, e), 3);
            assert_int_equal(mt_event_tid(t, e), 7);
            assert_int_equal(e->ts, 10500);
            assert_int_equal(e->dur, 2000);
            assert_int_equal(mt_event_corr(t, e), 77);
            assert_int_equal(mt_event_ext(t, e), 5);
            assert_int_equal(t->stats.unknown_fields, 1); /* "cname"; "s" and "bp" are known and passed over */
            assert_int_equal(t->stats.bad_values, 0);
            mt_trace_free(t);
        }
    }
}

/* Escapes at every offset: a string's escapes cross 16- and 32-byte
 * boundaries, in read values (name, Collective name), in a passed-over
 * value, and in keys (an escaped key is another key, as it always was:
 * keys are compared as written). */
static void test_scan_strings(void **state)
{
    (void)state;
    static const char pad[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefghij";
    for (size_t k = 0; k < 70; k++) {
        char doc[2048];
        /* name: pad[0..k) then \" y \u00e9 \\ z \ud83d\ude00 */
        size_t n = (size_t)snprintf(
            doc, sizeof doc,
            "[{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"%.*s\\\"y\\u00e9\\\\z\\ud83d\\ude00\",\"pid\":1,\"tid\":1,"
            "\"ts\":1,\"dur\":1,\"p\\u0068\":\"i\",\"pidx\":9,\"ph\" :\"X\",\"args\":{\"Call stack\":\"%.*s\\\"q\\n\","
            "\"External idx\":3,\"blocks per SM\":2,\"block\":[1],\"Collective name\":\"%.*s\\t\\/\"}}]",
            (int)k, pad, (int)k, pad, (int)k, pad);
        char want_name[256], want_coll[256];
        snprintf(want_name, sizeof want_name, "%.*s\"y\xc3\xa9\\z\xf0\x9f\x98\x80", (int)k, pad);
        snprintf(want_coll, sizeof want_coll, "%.*s\t/", (int)k, pad);
        const size_t chunks[] = {1, 7, 1 << 20};
        for (size_t c = 0; c < 3; c++) {
            mt_trace_t *t;
            mt_error_t err;
            assert_int_equal(load_n(doc, n, chunks[c], &t, &err), MT_OK);
            assert_int_equal(t->n_events, 1);
            const mt_event_t *e = &t->events[0];
            assert_string_equal(mt_event_name(t, e), want_name);
            assert_int_equal(e->ph, MT_PH_X);
            assert_int_equal(mt_event_pid(t, e), 1);
            assert_false(e->flags & MT_EV_HAS_EXT);
            const mt_coll_t *co = mt_event_coll(t, e);
            assert_non_null(co);
            assert_string_equal(mt_strtab_get(t->strings, co->name, NULL), want_coll);
            assert_int_equal(t->stats.unknown_fields, 2); /* "p\u0068" and "pidx" */
            assert_int_equal(t->stats.bad_utf8, 0);
            mt_trace_free(t);
        }
        /* A bad escape in a passed-over value, and a control byte in a key:
         * errors where they stand, at every offset. */
        static const char *const bad[] = {"\\x", "\x01"};
        for (size_t b = 0; b < 2; b++) {
            n = (size_t)snprintf(doc, sizeof doc,
                                 b ? "[{\"ph\":\"X\",\"args\":{\"%.*s%s\":1}}]"
                                   : "[{\"ph\":\"X\",\"args\":{\"cbid\":\"%.*s%s\"}}]",
                                 (int)k, pad, bad[b]);
            const size_t at = (size_t)(strstr(doc, bad[b]) - doc) + (b ? 0 : 1);
            for (size_t c = 0; c < 3; c++) {
                mt_trace_t *t;
                mt_error_t err;
                assert_int_equal(load_n(doc, n, chunks[c], &t, &err), MT_ERR_SYNTAX);
                assert_int_equal(err.offset, (int64_t)at);
                mt_trace_free(t);
            }
        }
    }
}

/* Names that agree in their length and first and last 8 bytes but not in
 * between (the loader's name cache keys on those), one after the other:
 * each event keeps its own name. */
static void test_scan_names(void **state)
{
    (void)state;
    char doc[8192];
    for (size_t len = 1; len <= 40; len++) {
        char want[4][64];
        for (size_t i = 0; i < 4; i++) {
            for (size_t j = 0; j < len; j++)
                want[i][j] = (char)('a' + j % 26);
            want[i][len] = '\0';
            want[i][len / 2] = (char)('0' + i % 2); /* events 0, 2 and 1, 3 share a name */
        }
        size_t n = (size_t)snprintf(doc, sizeof doc, "[");
        for (size_t i = 0; i < 4; i++) {
            n += (size_t)snprintf(doc + n, sizeof doc - n, "%s{\"ph\": \"X\", \"name\": \"%s\", \"cat\": \"%s\"}",
                                  i ? ", " : "", want[i], want[3 - i]);
        }
        n += (size_t)snprintf(doc + n, sizeof doc - n, "]");
        mt_trace_t *t;
        mt_error_t err;
        assert_int_equal(load_n(doc, n, 1 << 20, &t, &err), MT_OK);
        assert_int_equal(t->n_events, 4);
        for (size_t i = 0; i < 4; i++)
            assert_string_equal(mt_event_name(t, &t->events[i]), want[i]);
        assert_true(t->events[0].name == t->events[2].name);
        assert_true(t->events[0].name != t->events[1].name);
        assert_int_equal(t->n_other_cats, 2);
        mt_trace_free(t);
    }
}

/* A side file read whole (mt_input_read_small): tests/data/own/rank-0.json
 * is 1,084 bytes and starts with '{'; too large for a limit of 1,000; a
 * directory is not a regular file; a missing path cannot be stat'ed. */
static void test_read_small(void **state)
{
    (void)state;
    const char *own = MT_SAMPLES_DIR "/../tests/data/own";
    char path[1024];
    snprintf(path, sizeof path, "%s/rank-0.json", own);
    char *text = NULL;
    size_t len = 0;
    mt_error_t err;
    mt_error_clear(&err);
    assert_int_equal(mt_input_read_small(path, 4096, "--rank-map", &text, &len, &err), MT_OK);
    assert_int_equal(len, 1084);
    assert_int_equal(text[0], '{');
    assert_int_equal(text[len], '\0');
    free(text);
    assert_int_equal(mt_input_read_small(path, 1000, "--rank-map", &text, &len, &err), MT_ERR_LIMIT);
    assert_null(text);
    assert_non_null(strstr(err.msg, "--rank-map"));
    assert_non_null(strstr(err.msg, "1084 bytes"));
    assert_int_equal(mt_input_read_small(own, 4096, "--rank-map", &text, &len, &err), MT_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "not a regular file"));
    snprintf(path, sizeof path, "%s/no-such-map.txt", own);
    assert_int_equal(mt_input_read_small(path, 4096, "--rank-map", &text, &len, &err), MT_ERR_IO);
    assert_null(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_modern_trace),
        cmocka_unit_test(test_legacy_2021),
        cmocka_unit_test(test_abs_frac_and_bare_array),
        cmocka_unit_test(test_unknown_things_are_counted),
        cmocka_unit_test(test_strings_escapes_utf8),
        cmocka_unit_test(test_input_dims_for_old_nccl_ranges),
        cmocka_unit_test(test_chunk_boundaries),
        cmocka_unit_test(test_rank_lists),
        cmocka_unit_test(test_gzip_members),
        cmocka_unit_test(test_gzip_reads),
        cmocka_unit_test(test_skim_args),
        cmocka_unit_test(test_size_hint),
        cmocka_unit_test(test_truncation_everywhere),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_time_fields_are_numbers),
        cmocka_unit_test(test_nul_and_line_col),
        cmocka_unit_test(test_deep_nesting),
        cmocka_unit_test(test_huge_string),
        cmocka_unit_test(test_event_callback),
        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_merged_part),
        cmocka_unit_test(test_scan_numbers),
        cmocka_unit_test(test_scan_blanks),
        cmocka_unit_test(test_scan_strings),
        cmocka_unit_test(test_wide_ids),
        cmocka_unit_test(test_scan_names),
        cmocka_unit_test(test_read_small),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
