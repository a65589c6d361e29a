/* Unit tests of the Flight Recorder unpickler (src/fr/fr_pickle.c) on
 * pickles assembled by hand, opcode by opcode, with the JSON text and the
 * error offsets worked out from the bytes; and of the JSON dump reader's
 * fast path (src/fr/fr_dump.c) against its reading through the cursor. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

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
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        mt_status_t st = read_both(bad[i], &d, &err);
        if (st == MT_OK)
            print_message("accepted: %s\n", bad[i]);
        assert_int_not_equal(st, MT_OK);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_values), cmocka_unit_test(test_errors),
                                       cmocka_unit_test(test_probe_and_names), cmocka_unit_test(test_pack),
                                       cmocka_unit_test(test_quick)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
