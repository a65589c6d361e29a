/* Unit tests of the Flight Recorder unpickler (src/fr/fr_pickle.c) on
 * pickles assembled by hand, opcode by opcode, with the JSON text and the
 * error offsets worked out from the bytes; and of the dump reader's fast
 * paths (src/fr/fr_dump.c): JSON entries against their reading through
 * the cursor, pickles read from their values against their reading
 * through their JSON text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "base/jdoc.h"
#include "fr/fr.h"
#include "fr/fr_pickle.h"

/* Decode; on success compare the text with want, on error the status,
 * the byte offset and a part of the message. */
static void check(const char *bytes, size_t len, mt_status_t want_st, const char *want, int64_t want_off)
{
    mt_buf_t out = {0};
    mt_error_t err;
    mt_error_clear(&err);
    mt_status_t st = mt_fr_pickle_to_json((const uint8_t *)bytes, len, "d.pkl", &out, &err);
    if (st != want_st || (st && err.offset != want_off))
        print_message("%.40s: status %d offset %lld: %s\n", want, (int)st, (long long)err.offset, err.msg);
    assert_int_equal(st, want_st);
    if (st == MT_OK) {
        assert_int_equal(out.len, strlen(want));
        assert_memory_equal(out.data, want, out.len);
    } else {
        assert_int_equal(out.len, 0);
        assert_int_equal(err.offset, want_off);
        assert_string_equal(err.path, "d.pkl");
        assert_non_null(strstr(err.msg, want));
    }
    mt_buf_free(&out);
}

#define CHECK(lit, st, want, off) check(lit, sizeof lit - 1, st, want, off)

static void test_values(void **state)
{
    (void)state;
    /* {"a": [1, -1, 300]} with SETITEMS, APPENDS, BININT1/J/BININT2 */
    CHECK("\x80\x02}q\x00(X\x01\x00\x00\x00" "a](K\x01J\xff\xff\xff\xffM\x2c\x01" "eu.", MT_OK, "{\"a\":[1,-1,300]}", 0);
    /* LONG1: 2^64 - 1 as 9 bytes (sign byte 0), 2^63, -2^63, 0 (no bytes) */
    CHECK("\x80\x02(\x8a\x09\xff\xff\xff\xff\xff\xff\xff\xff\x00\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x80\x00"
          "\x8a\x08\x00\x00\x00\x00\x00\x00\x00\x80\x8a\x00t.",
          MT_OK, "[18446744073709551615,9223372036854775808,-9223372036854775808,0]", 0);
    /* BINFLOAT 1.5 (big-endian), 2.0 stays a float, MARK + TUPLE and TUPLE1, None/True/False */
    CHECK("\x80\x04(G\x3f\xf8\x00\x00\x00\x00\x00\x00G\x40\x00\x00\x00\x00\x00\x00\x00N\x88\x89t\x85.", MT_OK,
          "[[1.5,2.0,null,true,false]]", 0);
    /* memo: MEMOIZE'd list referenced twice with BINGET; SHORT_BINUNICODE escaped by mt_json_string */
    CHECK("\x80\x04\x95\x10\x00\x00\x00\x00\x00\x00\x00]\x94\x8c\x02\"\n\x94\x86h\x00\x86.", MT_OK,
          "[[[],\"\\\"\\u000a\"],[]]", 0);
    /* an int key becomes its text; torch.jit._pickle's list builder returns its list */
    CHECK("\x80\x02}K\x07" "ctorch.jit._pickle\nbuild_intlist\n](K\x01K\x02" "e\x85Rs.", MT_OK, "{\"7\":[1,2]}", 0);
}

static void test_errors(void **state)
{
    (void)state;
    CHECK("\x80\x02]K", MT_ERR_TRUNCATED, "inside an operand", 3);
    CHECK("\x80\x02]", MT_ERR_TRUNCATED, "before STOP", 3);
    CHECK("\x80\x02X\x05\x00\x00\x00" "ab.", MT_ERR_TRUNCATED, "inside a string", 2);
    CHECK("\x80\x02]\x8f.", MT_ERR_FORMAT, "unknown opcode 0x8f", 3);
    CHECK("\x80\x02" "cos\nsystem\n.", MT_ERR_FORMAT, "refused global os.system", 2);
    CHECK("\x80\x04\x8c\x02os\x8c\x06system\x93.", MT_ERR_FORMAT, "refused global os.system", 14);
    CHECK("\x80\x02]]R.", MT_ERR_FORMAT, "refused REDUCE", 4);
    CHECK("\x80\x01].", MT_ERR_FORMAT, "PROTO 2 to 5", 0);
    CHECK("\x80\x02\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x01.", MT_ERR_RANGE, "wider than 64", 2);
    CHECK("\x80\x02].N", MT_ERR_FORMAT, "bytes after STOP", 4);
    CHECK("\x80\x02" "e.", MT_ERR_FORMAT, "no MARK", 2);
    CHECK("\x80\x02" "a.", MT_ERR_FORMAT, "underflow", 2);
    CHECK("\x80\x02h\x03.", MT_ERR_FORMAT, "never stored", 2);
    CHECK("\x80\x02}]]s.", MT_ERR_FORMAT, "neither a string nor an int", 6);
    /* a list that contains itself: the depth limit, not a loop */
    CHECK("\x80\x02]q\x00h\x00" "a.", MT_ERR_LIMIT, "deeper than 64", 8); /* at STOP: found when written */
}

/* What a file is, by its first bytes, and the rank in a dump's name. */
static void test_probe_and_names(void **state)
{
    (void)state;
    assert_int_equal(mt_fr_probe((const uint8_t *)"\x80\x04\x95", 3), 1);
    assert_int_equal(mt_fr_probe((const uint8_t *)"\x80\x01]", 3), 0); /* protocol 1: not a dump */
    assert_int_equal(mt_fr_probe((const uint8_t *)"{\"version\": \"2.10\"", 19), 2);
    assert_int_equal(mt_fr_probe((const uint8_t *)"\xEF\xBB\xBF \n{ \"comm_lib_version\":", 31), 2);
    assert_int_equal(mt_fr_probe((const uint8_t *)"{\"entries\": []}", 15), 2);
    assert_int_equal(mt_fr_probe((const uint8_t *)"{\"traceEvents\": []}", 19), 0); /* a Kineto trace */
    assert_int_equal(mt_fr_probe((const uint8_t *)"{\"versions\": 1}", 15), 0);
    assert_int_equal(mt_fr_probe((const uint8_t *)"[{\"version\": 1}]", 16), 0);
    assert_int_equal(mt_fr_rank_from_name("/tmp/comm_lib_trace_rank_3"), 3);
    assert_int_equal(mt_fr_rank_from_name("nccl_trace_rank_12"), 12);
    assert_int_equal(mt_fr_rank_from_name("d/gpu-node12_7"), 7);
    assert_int_equal(mt_fr_rank_from_name("host-a.3"), 3);
    assert_int_equal(mt_fr_rank_from_name("rank_5.pkl"), 5);
    assert_int_equal(mt_fr_rank_from_name("dump_9.json"), 9);
    assert_int_equal(mt_fr_rank_from_name("alpha"), -1);
    assert_int_equal(mt_fr_rank_from_name("node_40960"), -1); /* 5 digits: not a rank */
    assert_int_equal(mt_fr_rank_from_name("rank_4096"), -1);  /* MT_FR_MAX_RANKS */
}

/* A dump packed and unpacked is the same dump; a cut packing is refused. */
static void test_pack(void **state)
{
    (void)state;
    mt_fr_entry_t e[2] = {{.record_id = UINT64_MAX, .seq = 7, .created = 5, .started = MT_FR_NONE,
                           .completed = MT_FR_NONE, .state = MT_FR_SCHEDULED},
                          {.record_id = 1, .seq = 8, .state = MT_FR_COMPLETED}};
    int r0[] = {0, 1, 2}, r1[] = {3};
    mt_fr_pg_t pg[2] = {{.name = "0", .desc = "default_pg", .ranks = r0, .nranks = 3},
                        {.name = "1", .desc = "tp", .ranks = r1, .nranks = 1}};
    mt_fr_dump_t d = {.rank = 3, .version = "2.10", .entries = e, .n = 2, .pgs = pg, .npgs = 2}, back;
    /* the names through the dump's table: the first entry's name is the
     * second's group's, one id */
    assert_int_equal(mt_fr_intern(&d, "0", 1, MT_FR_PG_MAX + 1, &e[0].pg), MT_OK);
    assert_int_equal(mt_fr_intern(&d, "nccl:all_reduce", 15, MT_FR_NAME_MAX + 1, &e[0].name), MT_OK);
    assert_int_equal(mt_fr_intern(&d, "x", 1, MT_FR_PG_MAX + 1, &e[1].pg), MT_OK);
    assert_int_equal(mt_fr_intern(&d, "x\0y", 3, MT_FR_NAME_MAX + 1, &e[1].name), MT_OK); /* cut at the NUL */
    assert_int_equal(e[1].name, e[1].pg);
    assert_int_equal(mt_strtab_count(d.strs), 4);
    mt_buf_t b = {0};
    assert_int_equal(mt_fr_dump_pack_append(&d, &b), MT_OK);
    assert_int_equal(mt_fr_dump_pack_append(&d, &b), MT_OK);
    size_t pos = 0;
    for (int k = 0; k < 2; k++) {
        assert_int_equal(mt_fr_dump_unpack((const uint8_t *)b.data, b.len, &pos, &back), MT_OK);
        assert_int_equal(back.rank, 3);
        assert_string_equal(back.version, "2.10");
        assert_int_equal(back.n, 2);
        assert_memory_equal(back.entries, e, sizeof e);
        assert_true(mt_fr_strs_equal(&back, &d));
        assert_string_equal(mt_fr_str(&back, back.entries[0].name), "nccl:all_reduce");
        assert_string_equal(mt_fr_str(&back, back.entries[1].pg), "x");
        assert_int_equal(back.npgs, 2);
        assert_string_equal(back.pgs[0].desc, "default_pg");
        assert_int_equal(back.pgs[0].nranks, 3);
        assert_int_equal(back.pgs[0].ranks[2], 2);
        assert_int_equal(back.pgs[1].ranks[0], 3);
        mt_fr_dump_free(&back);
    }
    assert_int_equal(pos, b.len);
    for (size_t cut = 0; cut < b.len / 2; cut++) { /* every cut of the first dump */
        pos = 0;
        assert_int_equal(mt_fr_dump_unpack((const uint8_t *)b.data, cut, &pos, &back), MT_ERR_FORMAT);
        assert_null(back.entries);
        assert_null(back.strs);
    }
    mt_buf_free(&b);
    mt_strtab_free(d.strs);
}


/* One JSON dump read with the entries' fast path and without: the same
 * status, error (message, offset) and entries. Returns the status; *d
 * (when MT_OK) is the fast path's dump, for the caller to free. */
static mt_status_t read_both(const char *entries, mt_fr_dump_t *d, mt_error_t *err)
{
    char text[4096];
    int n = snprintf(text, sizeof text,
                     "{\"version\": \"2.10\", \"pg_config\": {\"0\": {\"name\": \"0\", \"desc\": \"default_pg\", "
                     "\"ranks\": \"[0, 1]\"}}, \"entries\": [%s]}",
                     entries);
    assert_true(n > 0 && (size_t)n < sizeof text);
    mt_fr_dump_t slow;
    mt_error_t e2;
    mt_error_clear(err);
    mt_error_clear(&e2);
    mt_status_t st = mt_fr_dump_read_with((const uint8_t *)text, (size_t)n, "d.json", 1, true, d, err);
    mt_status_t st2 = mt_fr_dump_read_with((const uint8_t *)text, (size_t)n, "d.json", 1, false, &slow, &e2);
    if (st != st2 || strcmp(err->msg, e2.msg))
        print_message("%s\nquick %d: %s\ncursor %d: %s\n", entries, (int)st, err->msg, (int)st2, e2.msg);
    assert_int_equal(st, st2);
    assert_string_equal(err->msg, e2.msg);
    assert_int_equal(err->offset, e2.offset);
    if (st == MT_OK) {
        assert_int_equal(d->n, slow.n);
        for (size_t i = 0; i < d->n; i++)
            assert_memory_equal(&d->entries[i], &slow.entries[i], sizeof *d->entries);
        assert_true(mt_fr_strs_equal(d, &slow));
        mt_fr_dump_free(&slow);
    }
    return st;
}

#define E0 "\"record_id\": 7, \"collective_seq_id\": 3, \"state\": \"started\", \"process_group\": [\"0\", \"default_pg\"]"

/* forms the JSON fast path leaves to the cursor, read the same */
static const char *const ok[] = {
    "{" E0 ", \"recor\\u0064_id\": 9}",                       /* an escaped name: a repeat of record_id */
    "{\"record_id\": 18446744073709551615, \"collective_seq_id\": 3, \"state\": \"x\", \"process_group\": [\"0\"]}",
    "{" E0 ", \"p2p_seq_id\": -2, \"timeout_ms\": \"x\"}",     /* a negative and a wrong type: 0 */
    "{" E0 ", \"time_created_ns\": null, \"time_discovered_started_ns\": 0}",
    "{" E0 ", \"record_id\": 8, \"state\": 3}",               /* repeats: the first counts */
    "{" E0 ", \"input_sizes\": [5, [2, 2]], \"output_sizes\": {\"a\": [3]}}",
    "{" E0 ", \"input_sizes\": [[2, -1, 1.5]], \"output_sizes\": 7}",
    "{" E0 ", \"input_dtypes\": []}",
    "{" E0 ", \"input_dtypes\": {\"a\": \"Float\"}}",
    "{" E0 ", \"input_dtypes\": [1, \"Float\"]}",
    "{" E0 ", \"profiling_name\": \"nccl:\\u00e9 \\\"x\\\"\"}",
    "{" E0 ", \"profiling_name\": \"n\xc3\xa9\"}",
    "{" E0 ", \"profiling_name\": \"a very long profiling name of more than sixty-three bytes, cut to fit\"}",
    "{" E0 ", \"is_p2p\": 1}",
    "{" E0 ", \"x\": [[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]}", /* deeper than the fast path goes */
    "{" E0 ", \"x\": [1e5, -0.5, 0, -0, 1E+2, \"\", {}, []]}",
    "\t{ \"record_id\"\r\n:7 ,\"collective_seq_id\" :3,\"state\":\"completed\",\"process_group\":[ \"0\" , \"d\" ] } ",
    "{\"process_group\": [\"0\", 1], \"state\": \"scheduled\", \"collective_seq_id\": 0, \"record_id\": 0}",
};

/* and the errors, said by the cursor's reading */
static const char *const bad[] = {
    "{\"collective_seq_id\": 3, \"state\": \"started\", \"process_group\": [\"0\"]}",
    "{" E0 ", \"time_created_ns\": 4611686018427387904}",       /* 2^62 */
    "{" E0 ", \"timeout_ms\": 1000000001}",
    "{\"record_id\": 7, \"collective_seq_id\": 1.5, \"state\": \"started\", \"process_group\": [\"0\"]}",
    "{\"record_id\": 7, \"collective_seq_id\": -3, \"state\": \"started\", \"process_group\": [\"0\"]}",
    "{\"record_id\": 7, \"collective_seq_id\": 3, \"state\": \"started\", \"process_group\": []}",
    "{\"record_id\": 7, \"collective_seq_id\": 3, \"state\": \"started\", \"process_group\": [1, \"0\"]}",
    "{\"record_id\": 7, \"collective_seq_id\": 3, \"state\": null, \"process_group\": [\"0\"]}",
    "{" E0 ", \"time_created_ns\": -5}",
    "{" E0 ", \"time_created_ns\": \"5\"}",
    "{" E0 ", \"record_id\": 01}",
    "{\"record_id\": 01, \"collective_seq_id\": 3, \"state\": \"started\", \"process_group\": [\"0\"]}",
    "{" E0 ", \"is_p2p\": trueX}",
    "{" E0 ", \"x\": [1.]}",
    "{" E0 ", \"x\": -}",
    "{" E0 ", \"x\": \"a\x01\"}",
    "{" E0 ", \"x\": [1,]}",
    "{" E0 " \"x\": 1}",
    "{" E0 ",}",
    "{}",
    "[]",
    "{" E0,
};

/* The fast path gives what the cursor gives on every form, the plain ones
 * it takes and those it leaves to the cursor (escapes, wide or signed
 * numbers, other types, bad syntax, deep nesting, repeated members). */
static void test_quick(void **state)
{
    (void)state;
    mt_fr_dump_t d;
    mt_error_t err;
    /* the plain form, with the values worked out by hand */
    assert_int_equal(read_both("{\"record_id\": 18446744073709551, \"pg_id\": 0, \"process_group\": [\"0\", \"default_pg\"], "
                               "\"collective_seq_id\": 9223372036854775807, \"p2p_seq_id\": 4, \"op_id\": 1, "
                               "\"profiling_name\": \"nccl:all_reduce\", \"time_created_ns\": 1767189312000000000, "
                               "\"time_discovered_started_ns\": 1767189312000100000, \"time_discovered_completed_ns\": 0, "
                               "\"duration_ms\": null, \"state\": \"started\", \"retired\": false, \"timeout_ms\": 600000, "
                               "\"is_p2p\": true, \"input_sizes\": [[2, 3], [4], []], \"input_dtypes\": [\"Float\", \"Int\"], "
                               "\"output_sizes\": [[1024]], \"output_dtypes\": [\"Float\"], \"thread_id\": 139900000000000, "
                               "\"thread_name\": \"pt_nccl_watchdg\", \"frames\": [{\"name\": \"f\", \"line\": -1.5e3}]}",
                               &d, &err),
                     MT_OK);
    assert_int_equal(d.n, 1);
    const mt_fr_entry_t *e = &d.entries[0];
    assert_true(e->record_id == UINT64_C(18446744073709551));
    assert_true(e->seq == INT64_MAX);
    assert_int_equal(e->p2p_seq, 4);
    assert_true(e->created == INT64_C(1767189312000000000));
    assert_true(e->started == INT64_C(1767189312000100000));
    assert_true(e->completed == MT_FR_NONE);
    assert_int_equal(e->timeout_ms, 600000);
    assert_int_equal(e->in_numel, 2 * 3 + 4 + 1);
    assert_int_equal(e->out_numel, 1024);
    assert_int_equal(e->state, MT_FR_STARTED);
    assert_true(e->is_p2p);
    assert_string_equal(mt_fr_str(&d, e->pg), "0");
    assert_string_equal(mt_fr_str(&d, e->name), "nccl:all_reduce");
    assert_string_equal(mt_fr_str(&d, e->dtype), "Float");
    /* the entry as the analysis keeps it: the names in 3 ids, ~90 bytes
     * (232 with them as arrays) */
    assert_true(sizeof(mt_fr_entry_t) <= 88);
    mt_fr_op_t op;
    mt_fr_entry_op(&d, e, &op);
    assert_string_equal(op.name, "nccl:all_reduce");
    assert_int_equal(op.timeout_ms, 600000);
    assert_true(op.created == INT64_C(1767189312000000000));
    mt_fr_dump_free(&d);
    /* forms the fast path leaves to the cursor, read the same */
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        mt_status_t st = read_both(ok[i], &d, &err);
        if (st != MT_OK)
            print_message("refused: %s: %s\n", ok[i], err.msg);
        assert_int_equal(st, MT_OK);
        if (strstr(ok[i], "sixty-three")) /* cut at MT_FR_NAME_MAX bytes, as the arrays cut it */
            assert_string_equal(mt_fr_str(&d, d.entries[0].name),
                                "a very long profiling name of more than sixty-three bytes, cut ");
        mt_fr_dump_free(&d);
    }
    /* and the errors */
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        mt_status_t st = read_both(bad[i], &d, &err);
        if (st == MT_OK)
            print_message("accepted: %s\n", bad[i]);
        assert_int_not_equal(st, MT_OK);
    }
}

/* ---- JSON documents pickled as PyTorch's pickler writes them ---- */

/* The writer: protocol 2, every container and new string stored in the
 * memo (BINPUT), a string seen before got back (BINGET), as PyTorch's
 * pickler memoizes strings; with torch true, a list of ints goes through
 * torch.jit._pickle.build_intlist (REDUCE of a 1-tuple), as it writes
 * List[int]. */
typedef struct pw {
    mt_buf_t b;
    const mt_jdoc_t *d;
    bool torch;
    const char *strs[256];
    size_t lens[256], nstrs;
    uint32_t at[256]; /* their memo slots */
    uint32_t memo;
} pw_t;

static void put(pw_t *w, const void *p, size_t n)
{
    assert_int_equal(mt_buf_append(&w->b, p, n), MT_OK);
}

static void put_op(pw_t *w, uint8_t op)
{
    put(w, &op, 1);
}

static void put_memo(pw_t *w)
{
    uint32_t k = w->memo++;
    if (k < 256) {
        uint8_t b[2] = {'q', (uint8_t)k};
        put(w, b, 2);
    } else {
        uint8_t b[5] = {'r', (uint8_t)k, (uint8_t)(k >> 8), (uint8_t)(k >> 16), (uint8_t)(k >> 24)};
        put(w, b, 5);
    }
}

static void put_str(pw_t *w, const char *s, size_t n)
{
    for (size_t i = 0; i < w->nstrs; i++)
        if (w->lens[i] == n && !memcmp(w->strs[i], s, n)) {
            uint32_t k = w->at[i];
            uint8_t b[5] = {'j', (uint8_t)k, (uint8_t)(k >> 8), (uint8_t)(k >> 16), (uint8_t)(k >> 24)};
            if (k < 256)
                put(w, (uint8_t[]){'h', (uint8_t)k}, 2);
            else
                put(w, b, 5);
            return;
        }
    uint8_t b[5] = {'X', (uint8_t)n, (uint8_t)(n >> 8), (uint8_t)(n >> 16), (uint8_t)(n >> 24)};
    put(w, b, 5);
    put(w, s, n);
    assert_true(w->nstrs < 256);
    w->at[w->nstrs] = w->memo;
    w->strs[w->nstrs] = s;
    w->lens[w->nstrs++] = n;
    put_memo(w);
}

static void put_int(pw_t *w, int64_t v)
{
    if (v >= 0 && v < 256) {
        uint8_t b[2] = {'K', (uint8_t)v};
        put(w, b, 2);
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
        uint32_t u = (uint32_t)(int32_t)v;
        uint8_t b[5] = {'J', (uint8_t)u, (uint8_t)(u >> 8), (uint8_t)(u >> 16), (uint8_t)(u >> 24)};
        put(w, b, 5);
    } else {
        uint8_t b[10] = {0x8a, 8};
        for (int i = 0; i < 8; i++)
            b[2 + i] = (uint8_t)((uint64_t)v >> (8 * i));
        put(w, b, 10);
    }
}

static void put_value(pw_t *w, uint32_t i);

static void put_items(pw_t *w, uint32_t i, bool obj)
{
    put_op(w, '(');
    for (uint32_t c = mt_jdoc_first(w->d, i); c; c = mt_jdoc_next(w->d, c)) {
        if (obj) {
            const char *k = mt_jdoc_key(w->d, c);
            put_str(w, k, strlen(k));
        }
        put_value(w, c);
    }
    put_op(w, obj ? 'u' : 'e');
}

static void put_value(pw_t *w, uint32_t i)
{
    const mt_jdoc_t *d = w->d;
    int64_t v;
    uint64_t u;
    double f;
    size_t n;
    const char *s;
    switch (mt_jdoc_type(d, i)) {
    case MT_J_NULL: put_op(w, 'N'); break;
    case MT_J_TRUE: put_op(w, 0x88); break;
    case MT_J_FALSE: put_op(w, 0x89); break;
    case MT_J_STR:
        s = mt_jdoc_str(d, i, &n);
        put_str(w, s, n);
        break;
    case MT_J_NUM:
        if (mt_jdoc_i64(d, i, &v))
            put_int(w, v);
        else if (mt_jdoc_u64(d, i, &u)) { /* 2^63 and over: LONG1 of 9 bytes, the sign byte 0 */
            uint8_t b[11] = {0x8a, 9};
            for (int k = 0; k < 8; k++)
                b[2 + k] = (uint8_t)(u >> (8 * k));
            put(w, b, 11);
        } else {
            assert_true(mt_jdoc_num(d, i, &f));
            uint64_t bits;
            memcpy(&bits, &f, 8);
            uint8_t b[9] = {'G'};
            for (int k = 0; k < 8; k++)
                b[1 + k] = (uint8_t)(bits >> (56 - 8 * k));
            put(w, b, 9);
        }
        break;
    case MT_J_ARR: {
        bool ints = w->torch && mt_jdoc_first(d, i);
        for (uint32_t c = mt_jdoc_first(d, i); c && ints; c = mt_jdoc_next(d, c))
            ints = mt_jdoc_i64(d, c, &v);
        if (ints) {
            static const char g[] = "ctorch.jit._pickle\nbuild_intlist\n";
            put(w, g, sizeof g - 1);
        }
        put_op(w, ']');
        put_memo(w);
        put_items(w, i, false);
        if (ints) {
            put_op(w, 0x85); /* TUPLE1 */
            put_op(w, 'R');
        }
        break;
    }
    case MT_J_OBJ:
        put_op(w, '}');
        put_memo(w);
        put_items(w, i, true);
        break;
    default: fail();
    }
}

/* The dump of one entry as read_both writes it, pickled into *out (false
 * when the text is not JSON). */
static bool pickle_dump(const char *entries, bool torch, mt_buf_t *out, char *text, size_t cap)
{
    int n = snprintf(text, cap,
                     "{\"version\": \"2.10\", \"pg_config\": {\"0\": {\"name\": \"0\", \"desc\": \"default_pg\", "
                     "\"ranks\": \"[0, 1]\"}}, \"entries\": [%s]}",
                     entries);
    assert_true(n > 0 && (size_t)n < cap);
    mt_jdoc_t *d = NULL;
    mt_error_t err;
    mt_error_clear(&err);
    if (mt_jdoc_parse(text, (size_t)n, 64, "d.json", &d, &err) != MT_OK)
        return false;
    pw_t w = {.d = d, .torch = torch};
    put(&w, "\x80\x02", 2);
    put_value(&w, 0);
    put_op(&w, '.');
    mt_jdoc_free(d);
    *out = w.b;
    return true;
}

/* A pickled dump read the fast way (from its values) and through its JSON
 * text: the same status, error and entries; *plain what
 * mt_fr_pickle_plain said of it. */
static mt_status_t read_pickle_both(const uint8_t *b, size_t len, mt_fr_dump_t *d, mt_error_t *err, bool *plain)
{
    mt_fr_pickle_t t;
    mt_error_t e0;
    mt_error_clear(&e0);
    *plain = false;
    if (mt_fr_pickle_load(b, len, "d.pkl", &t, &e0) == MT_OK)
        *plain = mt_fr_pickle_plain(&t);
    mt_fr_pickle_free(&t);
    mt_fr_dump_t slow;
    mt_error_t e2;
    mt_error_clear(err);
    mt_error_clear(&e2);
    mt_status_t st = mt_fr_dump_read_with(b, len, "d.pkl", 1, true, d, err);
    mt_status_t st2 = mt_fr_dump_read_with(b, len, "d.pkl", 1, false, &slow, &e2);
    if (st != st2 || strcmp(err->msg, e2.msg))
        print_message("values %d: %s\ntext %d: %s\n", (int)st, err->msg, (int)st2, e2.msg);
    assert_int_equal(st, st2);
    assert_string_equal(err->msg, e2.msg);
    assert_int_equal(err->offset, e2.offset);
    if (st == MT_OK) {
        assert_int_equal(d->n, slow.n);
        for (size_t i = 0; i < d->n; i++)
            assert_memory_equal(&d->entries[i], &slow.entries[i], sizeof *d->entries);
        assert_true(mt_fr_strs_equal(d, &slow));
        assert_int_equal(d->npgs, slow.npgs);
        for (size_t g = 0; g < d->npgs; g++) {
            assert_string_equal(d->pgs[g].name, slow.pgs[g].name);
            assert_string_equal(d->pgs[g].desc, slow.pgs[g].desc);
            assert_int_equal(d->pgs[g].nranks, slow.pgs[g].nranks);
            assert_memory_equal(d->pgs[g].ranks, slow.pgs[g].ranks, (size_t)d->pgs[g].nranks * sizeof(int));
        }
        assert_string_equal(d->version, slow.version);
        mt_fr_dump_free(&slow);
    }
    return st;
}

/* Every entry of test_quick pickled (Python's way and PyTorch's, its int
 * lists through build_intlist): read from its values as through its text,
 * and as the JSON dump reads; the plain ones from their values, the others
 * (a string JSON escapes) through the text. */
static void test_pickled(void **state)
{
    (void)state;
    char text[4096];
    mt_fr_dump_t d, dj;
    mt_error_t err;
    bool plain;
    const char *all[sizeof ok / sizeof *ok + sizeof bad / sizeof *bad];
    size_t n = 0;
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++)
        all[n++] = ok[i];
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        all[n++] = bad[i];
    int read = 0, fast = 0;
    for (size_t i = 0; i < n; i++)
        for (int torch = 0; torch < 2; torch++) {
            mt_buf_t pk = {0};
            if (!pickle_dump(all[i], torch, &pk, text, sizeof text))
                continue; /* not JSON: nothing to pickle */
            mt_status_t st = read_pickle_both((const uint8_t *)pk.data, pk.len, &d, &err, &plain);
            mt_error_t ej;
            mt_error_clear(&ej);
            mt_status_t sj = mt_fr_dump_read_with((const uint8_t *)text, strlen(text), "d.json", 1, false, &dj, &ej);
            if ((st == MT_OK) != (sj == MT_OK))
                print_message("%s: pickled %d (%s), JSON %d (%s)\n", all[i], (int)st, err.msg, (int)sj, ej.msg);
            assert_int_equal(st == MT_OK, sj == MT_OK);
            /* an e-acute (escaped or not) JSON escapes again */
            bool escaped = strstr(all[i], "\\u00e9") || strstr(all[i], "\xc3\xa9");
            if (plain == escaped)
                print_message("%s: plain %d\n", all[i], plain);
            assert_int_equal(plain, !escaped);
            if (st == MT_OK) {
                assert_int_equal(d.n, dj.n);
                for (size_t k = 0; k < d.n; k++)
                    assert_memory_equal(&d.entries[k], &dj.entries[k], sizeof *d.entries);
                assert_true(mt_fr_strs_equal(&d, &dj));
                mt_fr_dump_free(&d);
                mt_fr_dump_free(&dj);
                read++;
                fast += plain;
            }
            mt_buf_free(&pk);
        }
    assert_true(read >= 30 && fast >= 20); /* most were read, most from their values */
    /* the first of test_quick's entries, read from its values: the values
     * worked out by hand */
    mt_buf_t pk = {0};
    assert_true(pickle_dump(
        "{\"record_id\": 18446744073709551615, \"pg_id\": 0, \"process_group\": [\"0\", \"default_pg\"], "
        "\"collective_seq_id\": 9223372036854775807, \"p2p_seq_id\": -4, \"profiling_name\": \"nccl:all_reduce\", "
        "\"time_created_ns\": 1767189312000000000, \"time_discovered_started_ns\": null, "
        "\"time_discovered_completed_ns\": 0, \"duration_ms\": 1.5, \"state\": \"completed\", \"timeout_ms\": 600000, "
        "\"is_p2p\": true, \"input_sizes\": [[2, 3], [4], []], \"input_dtypes\": [\"Float\"], "
        "\"output_sizes\": [[1024]], \"frames\": [{\"name\": \"f\", \"line\": 7}]}",
        true, &pk, text, sizeof text));
    assert_int_equal(read_pickle_both((const uint8_t *)pk.data, pk.len, &d, &err, &plain), MT_OK);
    assert_true(plain);
    assert_int_equal(d.n, 1);
    const mt_fr_entry_t *e = &d.entries[0];
    assert_true(e->record_id == UINT64_MAX);
    assert_true(e->seq == INT64_MAX);
    assert_int_equal(e->p2p_seq, -4);
    assert_true(e->created == INT64_C(1767189312000000000));
    assert_true(e->started == MT_FR_NONE && e->completed == MT_FR_NONE);
    assert_int_equal(e->timeout_ms, 600000);
    assert_int_equal(e->in_numel, 2 * 3 + 4 + 1);
    assert_int_equal(e->out_numel, 1024);
    assert_int_equal(e->state, MT_FR_COMPLETED);
    assert_true(e->is_p2p);
    assert_string_equal(mt_fr_str(&d, e->pg), "0");
    assert_string_equal(mt_fr_str(&d, e->name), "nccl:all_reduce");
    assert_string_equal(mt_fr_str(&d, e->dtype), "Float");
    assert_int_equal(d.npgs, 1);
    assert_int_equal(d.pgs[0].nranks, 2);
    assert_string_equal(d.pgs[0].desc, "default_pg");
    assert_string_equal(d.version, "2.10");
    mt_fr_dump_free(&d);
    mt_buf_free(&pk);
}

/* Shapes a pickle can have and JSON cannot, left to the text (plain says
 * no) and read the same: a list held twice (BINGET of a container), a
 * list with itself in it, an int key, a tuple of a REDUCE used again, a
 * string JSON escapes, nesting deeper than 32. */
static void test_pickled_shapes(void **state)
{
    (void)state;
    /* {"version": "2.10", "entries": [], "x": <X>} with <X> the case */
#define HEAD "\x80\x02}q\x00(X\x07\x00\x00\x00versionq\x01X\x04\x00\x00\x00" "2.10q\x02X\x07\x00\x00\x00" "entriesq\x03]q\x04X\x01\x00\x00\x00xq\x05"
    static const struct {
        const char *bytes;
        size_t len;
        bool plain;
    } cases[] = {
#define C(lit, plain) {lit, sizeof lit - 1, plain}
        C(HEAD "]q\x06K\x01" "a" "u.", true),                          /* [1] */
        C(HEAD "]q\x06K\x01" "a" "h\x06\x86" "u.", false),             /* ([1], [1]): one list twice */
        C(HEAD "]q\x06h\x06" "a" "u.", false),                         /* a list in itself: too deep */
        C(HEAD "}q\x06K\x07K\x01s" "u.", false),                       /* {7: 1} */
        C(HEAD "ctorch.jit._pickle\nbuild_intlist\n](K\x01" "e\x85q\x07R" "u.", true),      /* build_intlist([1]) */
        C(HEAD "ctorch.jit._pickle\nbuild_intlist\n](K\x01" "e\x85q\x07R" "h\x07\x86" "u.", false), /* and its tuple */
        C(HEAD "X\x02\x00\x00\x00\xc3\xa9" "u.", false),               /* a string JSON escapes */
        /* 32 and 33 lists deep under the root: 32 levels below it, and one more */
        C(HEAD "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]" "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" "u.", true),
        C(HEAD "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]" "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" "u.", false),
#undef C
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        mt_fr_dump_t d;
        mt_error_t err;
        bool plain;
        mt_status_t st = read_pickle_both((const uint8_t *)cases[i].bytes, cases[i].len, &d, &err, &plain);
        bool cycle = i == 2; /* said by the writing of the text */
        if ((st != MT_OK) != cycle || plain != cases[i].plain)
            print_message("case %zu: status %d (%s), plain %d\n", i, (int)st, err.msg, plain);
        assert_int_equal(plain, cases[i].plain);
        if (cycle) {
            assert_int_equal(st, MT_ERR_LIMIT);
            assert_non_null(strstr(err.msg, "nested deeper than 64"));
            continue;
        }
        assert_int_equal(st, MT_OK);
        assert_int_equal(d.n, 0);
        mt_fr_dump_free(&d);
    }
#undef HEAD
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_values), cmocka_unit_test(test_errors),
                                       cmocka_unit_test(test_probe_and_names), cmocka_unit_test(test_pack),
                                       cmocka_unit_test(test_quick), cmocka_unit_test(test_pickled),
                                       cmocka_unit_test(test_pickled_shapes)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
