/* Unit tests of the Flight Recorder unpickler (src/fr/fr_pickle.c) on
 * pickles assembled by hand, opcode by opcode, with the JSON text and the
 * error offsets worked out from the bytes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
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
                           .completed = MT_FR_NONE, .state = MT_FR_SCHEDULED, .pg = "0", .name = "nccl:all_reduce"},
                          {.record_id = 1, .seq = 8, .state = MT_FR_COMPLETED, .pg = "1", .name = "x"}};
    int r0[] = {0, 1, 2}, r1[] = {3};
    mt_fr_pg_t pg[2] = {{.name = "0", .desc = "default_pg", .ranks = r0, .nranks = 3},
                        {.name = "1", .desc = "tp", .ranks = r1, .nranks = 1}};
    mt_fr_dump_t d = {.rank = 3, .version = "2.10", .entries = e, .n = 2, .pgs = pg, .npgs = 2}, back;
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
    }
    mt_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_values), cmocka_unit_test(test_errors),
                                       cmocka_unit_test(test_probe_and_names), cmocka_unit_test(test_pack)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
