/* The input list as bytes between processes (src/discover/wire.c) without
 * MPI: the broadcast list packed and unpacked field for field, and
 * --local's union of two simulated processes' records worked out by hand
 * (a file both list kept once with the less loaded one, parts, the skipped
 * paths each once with the links first), and bytes cut short refused. */
#define _DEFAULT_SOURCE
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

static char root[512];

static void put(const char *rel, size_t bytes)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", root, rel);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    for (size_t i = 0; i < bytes; i++)
        fputc('x', f);
    fclose(f);
}

static int setup(void **state)
{
    (void)state;
    return tu_tmpdir(root, sizeof root, "wire");
}

static int teardown(void **state)
{
    (void)state;
    return tu_tmpdir_remove(root);
}

/* Appends a file to l (path copied). */
static void add(mt_discover_list_t *l, const char *rel, uint64_t bytes, int owner, bool from_dir,
                mt_discover_kind_t kind, int64_t part)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", root, rel);
    assert_int_equal(MT_GROW(l->files, l->cap, l->n + 1, 4), MT_OK);
    l->files[l->n++] = (mt_discover_file_t){
        .path = strdup(p), .bytes = bytes, .owner = owner, .from_dir = from_dir, .kind = kind, .part = part};
}

static void test_pack(void **state)
{
    (void)state;
    mt_discover_list_t l = {0}, back;
    add(&l, "a.json", (uint64_t)1 << 40, 0, false, MT_DISCOVER_FILE, -1);
    add(&l, "m.json#rank5", 77, 2, true, MT_DISCOVER_MERGED_PART, 5);
    add(&l, "n.sqlite#pid123456789012", 3, 1, false, MT_DISCOVER_NSYS_PART, 123456789012);
    mt_buf_t b = {0};
    assert_int_equal(mt_discover_pack(&l, &b), 0);
    assert_int_equal(mt_discover_unpack(b.data, b.len, &back), 0);
    assert_int_equal(back.n, 3);
    for (size_t i = 0; i < 3; i++) {
        assert_string_equal(back.files[i].path, l.files[i].path);
        assert_true(back.files[i].bytes == l.files[i].bytes);
        assert_int_equal(back.files[i].owner, l.files[i].owner);
        assert_int_equal(back.files[i].from_dir, l.files[i].from_dir);
        assert_int_equal(back.files[i].kind, l.files[i].kind);
        assert_true(back.files[i].part == l.files[i].part);
    }
    mt_discover_free(&back);
    assert_int_equal(mt_discover_unpack(b.data, b.len - 1, &back), -1); /* the last path's NUL cut */
    mt_discover_free(&back);
    assert_int_equal(mt_discover_unpack(b.data, 10, &back), -1); /* inside the first head */
    mt_discover_free(&back);
    assert_int_equal(mt_discover_unpack(b.data, 0, &back), 0);
    assert_int_equal(back.n, 0);
    mt_discover_free(&back);
    mt_buf_free(&b);
    mt_discover_free(&l);
}

/* Two processes of one node: 0 lists a.json (100 bytes), b.json (50) and
 * m.json#rank3; 1 lists b.json (the same file) and c.json (10). b.json
 * goes to process 1, which has less to load (10 against 100 + m's share);
 * m's part keeps its kind and rank. Skipped: 0 left out report.json (its
 * own output) and a link l; 1 left out report.json again, merged.json and
 * a link k. */
static void test_local_union(void **state)
{
    (void)state;
    put("a.json", 100);
    put("b.json", 50);
    put("c.json", 10);
    put("m.json", 30);
    mt_discover_list_t p0 = {0}, p1 = {0}, u = {0};
    add(&p0, "a.json", 100, 0, true, MT_DISCOVER_FILE, -1);
    add(&p0, "b.json", 50, 0, true, MT_DISCOVER_FILE, -1);
    add(&p0, "m.json#rank3", 30, 0, false, MT_DISCOVER_MERGED_PART, 3);
    add(&p1, "b.json", 50, 0, true, MT_DISCOVER_FILE, -1);
    add(&p1, "c.json", 10, 0, false, MT_DISCOVER_FILE, -1);
    char rj[1024], mj[1024], l0[1024], k1[1024], sub[1024];
    snprintf(rj, sizeof rj, "%s/report.json", root);
    snprintf(mj, sizeof mj, "%s/merged.json", root);
    snprintf(l0, sizeof l0, "%s/l", root);
    snprintf(k1, sizeof k1, "%s/k", root);
    snprintf(sub, sizeof sub, "%s/sub", root);
    assert_int_equal(mt_discover_skip_add(&p0, rj, "a report written by mergetrace", NULL), 0);
    assert_int_equal(mt_discover_skip_add(&p0, l0, "a link to a directory read already", sub), 0);
    assert_int_equal(mt_discover_skip_add(&p1, mj, "a merged trace written by mergetrace", NULL), 0);
    assert_int_equal(mt_discover_skip_add(&p1, rj, "a report written by mergetrace", NULL), 0);
    assert_int_equal(mt_discover_skip_add(&p1, k1, "a link to a directory read already", sub), 0);

    mt_buf_t f = {0}, s = {0};
    assert_int_equal(mt_discover_local_pack(&p0, 0, &f, &s), 0);
    assert_int_equal(mt_discover_local_pack(&p1, 1, &f, &s), 0);
    /* in place of process 0's own list, whose Flight Recorder dump stays */
    add(&u, "own.json", 1, 0, false, MT_DISCOVER_FILE, -1);
    u.fr = calloc(1, sizeof *u.fr);
    assert_non_null(u.fr);
    u.fr[0] = (mt_discover_file_t){.path = strdup("dump_0"), .part = -1};
    u.n_fr = u.cap_fr = 1;
    assert_int_equal(mt_discover_local_union(f.data, f.len, s.data, s.len, 2, &u), 0);
    assert_int_equal(u.n_fr, 1);
    assert_string_equal(u.fr[0].path, "dump_0");
    assert_int_equal(u.n, 4);
    const char *want[4] = {"a.json", "b.json", "c.json", "m.json#rank3"};
    const int owner[4] = {0, 1, 1, 0};
    for (size_t i = 0; i < 4; i++) {
        char p[1024];
        snprintf(p, sizeof p, "%s/%s", root, want[i]);
        assert_string_equal(u.files[i].path, p);
        assert_int_equal(u.files[i].owner, owner[i]);
    }
    assert_int_equal(u.files[3].kind, MT_DISCOVER_MERGED_PART);
    assert_int_equal(u.files[3].part, 3);
    assert_int_equal(u.files[1].bytes, 50);
    assert_true(u.files[0].from_dir && u.files[1].from_dir && !u.files[2].from_dir);
    assert_int_equal(u.n_skipped, 4);
    assert_string_equal(u.skipped[0].path, l0); /* links first, in process order */
    assert_string_equal(u.skipped[0].first, sub);
    assert_string_equal(u.skipped[1].path, k1);
    assert_string_equal(u.skipped[2].path, mj); /* then own outputs by path, each once */
    assert_null(u.skipped[2].first);
    assert_string_equal(u.skipped[3].path, rj);
    assert_string_equal(u.skipped[3].why, "a report written by mergetrace");
    mt_discover_free(&u);

    assert_int_equal(mt_discover_local_union(f.data, f.len - 1, s.data, s.len, 2, &u), -1);
    mt_discover_free(&u);
    assert_int_equal(mt_discover_local_union(f.data, f.len, s.data, s.len - 1, 2, &u), -1);
    mt_discover_free(&u);
    mt_buf_free(&f);
    mt_buf_free(&s);
    mt_discover_free(&p0);
    mt_discover_free(&p1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_pack, setup, teardown),
        cmocka_unit_test_setup_teardown(test_local_union, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
