/* String interning: ids are stable, equal strings share one id. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "mergetrace/strtab.h"

static void test_intern_basic(void **state)
{
    (void)state;
    mt_strtab_t *st = mt_strtab_create();
    assert_non_null(st);
    uint32_t a, b, c, e;
    assert_int_equal(mt_strtab_intern(st, "aten::mm", 8, &a), MT_OK);
    assert_int_equal(mt_strtab_intern(st, "aten::add_", 10, &b), MT_OK);
    assert_int_equal(mt_strtab_intern(st, "aten::mm", 8, &c), MT_OK);
    assert_int_equal(mt_strtab_intern(st, "", 0, &e), MT_OK);
    assert_int_equal(a, c);
    assert_int_not_equal(a, b);
    assert_int_equal(e, MT_STR_NONE);
    size_t len;
    assert_string_equal(mt_strtab_get(st, a, &len), "aten::mm");
    assert_int_equal(len, 8);
    assert_string_equal(mt_strtab_get(st, 999999, NULL), "");
    /* embedded NUL: a different string from its prefix */
    uint32_t z1, z2;
    assert_int_equal(mt_strtab_intern(st, "a\0b", 3, &z1), MT_OK);
    assert_int_equal(mt_strtab_intern(st, "a", 1, &z2), MT_OK);
    assert_int_not_equal(z1, z2);
    uint32_t f;
    assert_true(mt_strtab_find(st, "aten::add_", 10, &f));
    assert_int_equal(f, b);
    assert_false(mt_strtab_find(st, "nope", 4, &f));
    mt_strtab_free(st);
    mt_strtab_free(NULL);
}

static void test_intern_many(void **state)
{
    (void)state;
    mt_strtab_t *st = mt_strtab_create();
    char buf[64];
    enum { N = 200000 };
    for (int i = 0; i < N; i++) {
        int n = snprintf(buf, sizeof buf, "kernel_%d_(float*, int)", i);
        uint32_t id;
        assert_int_equal(mt_strtab_intern(st, buf, (size_t)n, &id), MT_OK);
        assert_int_equal(id, (uint32_t)i + 1);
    }
    assert_int_equal(mt_strtab_count(st), N + 1);
    for (int i = 0; i < N; i += 997) {
        int n = snprintf(buf, sizeof buf, "kernel_%d_(float*, int)", i);
        uint32_t id;
        assert_int_equal(mt_strtab_intern(st, buf, (size_t)n, &id), MT_OK);
        assert_int_equal(id, (uint32_t)i + 1);
        assert_string_equal(mt_strtab_get(st, id, NULL), buf);
    }
    mt_strtab_free(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_intern_basic),
        cmocka_unit_test(test_intern_many),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
