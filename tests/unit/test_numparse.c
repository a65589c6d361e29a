/* Exact number parsing: us text -> ns, int64, uint64 (no double on the way). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "mergetrace/loader.h"
#include "base/numparse.h"

static int64_t ns(const char *s)
{
    int64_t v = 0;
    mt_status_t st = mt_parse_us_to_ns(s, strlen(s), &v);
    if (st != MT_OK)
        fail_msg("'%s' did not parse (status %d)", s, st);
    return v;
}

static mt_status_t ns_st(const char *s)
{
    int64_t v;
    return mt_parse_us_to_ns(s, strlen(s), &v);
}

static void test_us_to_ns_kineto_forms(void **state)
{
    (void)state;
    /* absolute integer us (pre-2024) */
    assert_int_equal(ns("1694128201435418"), 1694128201435418000LL);
    /* relative us with 3 decimals (2024+): every ns digit survives */
    assert_int_equal(ns("1365627949863.953"), 1365627949863953LL);
    assert_int_equal(ns("21.953"), 21953);
    assert_int_equal(ns("0.001"), 1);
    assert_int_equal(ns("7889237999999.999"), 7889237999999999LL);
    /* absolute double with a fraction (NS-2024): 1712195495519695.8 us */
    assert_int_equal(ns("1712195495519695.8"), 1712195495519695800LL);
    /* a double formatted with more digits than a double can hold */
    assert_int_equal(ns("1712195495519695.81234"), 1712195495519695812LL);
    /* integer-valued floats */
    assert_int_equal(ns("30669.0"), 30669000);
    assert_int_equal(ns("0"), 0);
    assert_int_equal(ns("-0"), 0);
}

static void test_us_to_ns_rounding(void **state)
{
    (void)state;
    /* below 1 ns: ties away from zero */
    assert_int_equal(ns("0.0005"), 1);
    assert_int_equal(ns("0.0004999"), 0);
    assert_int_equal(ns("1.2345"), 1235);
    assert_int_equal(ns("1.2344999999"), 1234);
    assert_int_equal(ns("-1.2345"), -1235);
    assert_int_equal(ns("-0.0004"), 0);
    /* 20+ significant digits */
    assert_int_equal(ns("1.00000000000000000000001"), 1000);
    assert_int_equal(ns("123456789012345.6785"), 123456789012345679LL);
}

static void test_us_to_ns_exponents_negatives(void **state)
{
    (void)state;
    assert_int_equal(ns("1e3"), 1000000);
    assert_int_equal(ns("1.5E-3"), 2); /* 1.5 ns -> 2 */
    assert_int_equal(ns("2.5e+2"), 250000);
    assert_int_equal(ns("1694128201.435418e6"), 1694128201435418000LL);
    assert_int_equal(ns("-12.5"), -12500);
    assert_int_equal(ns("-1694128201435418"), -1694128201435418000LL);
    assert_int_equal(ns("1e-30"), 0);
    assert_int_equal(ns("0e999999999"), 0);
}

static void test_us_to_ns_limits(void **state)
{
    (void)state;
    /* INT64_MAX ns = 9223372036854775.807 us */
    assert_int_equal(ns("9223372036854775.807"), INT64_MAX);
    assert_int_equal(ns_st("9223372036854775.808"), MT_ERR_RANGE);
    assert_int_equal(ns("-9223372036854775.808"), INT64_MIN);
    assert_int_equal(ns_st("-9223372036854775.809"), MT_ERR_RANGE);
    assert_int_equal(ns_st("1e400"), MT_ERR_RANGE);
    assert_int_equal(ns_st("99999999999999999999999"), MT_ERR_RANGE);
    /* not numbers */
    assert_int_equal(ns_st(""), MT_ERR_SYNTAX);
    assert_int_equal(ns_st("-"), MT_ERR_SYNTAX);
    assert_int_equal(ns_st("1."), MT_ERR_SYNTAX);
    assert_int_equal(ns_st(".5"), MT_ERR_SYNTAX);
    assert_int_equal(ns_st("1e"), MT_ERR_SYNTAX);
    assert_int_equal(ns_st("1e+"), MT_ERR_SYNTAX);
    assert_int_equal(ns_st("1.2.3"), MT_ERR_SYNTAX);
    assert_int_equal(ns_st("12a"), MT_ERR_SYNTAX);
    assert_int_equal(ns_st("+1"), MT_ERR_SYNTAX);
}

static void test_int64_uint64(void **state)
{
    (void)state;
    int64_t v;
    uint64_t u;
    assert_int_equal(mt_parse_int64("9223372036854775807", 19, &v), MT_OK);
    assert_int_equal(v, INT64_MAX);
    assert_int_equal(mt_parse_int64("9223372036854775808", 19, &v), MT_ERR_RANGE);
    assert_int_equal(mt_parse_int64("-9223372036854775808", 20, &v), MT_OK);
    assert_int_equal(v, INT64_MIN);
    assert_int_equal(mt_parse_int64("1.5", 3, &v), MT_ERR_RANGE); /* not an integer */
    assert_int_equal(mt_parse_int64("4.0", 3, &v), MT_OK);
    assert_int_equal(v, 4);
    assert_int_equal(mt_parse_int64("1e3", 3, &v), MT_OK);
    assert_int_equal(v, 1000);
    /* Comms Id beyond INT64_MAX (HTA large_integer_trace) */
    assert_int_equal(mt_parse_uint64("10159970886766084423", 20, &u), MT_OK);
    assert_true(u == 10159970886766084423ull);
    assert_int_equal(mt_parse_uint64("18446744073709551615", 20, &u), MT_OK);
    assert_true(u == UINT64_MAX);
    assert_int_equal(mt_parse_uint64("18446744073709551616", 20, &u), MT_ERR_RANGE);
    assert_int_equal(mt_parse_uint64("-1", 2, &u), MT_ERR_RANGE);
    assert_int_equal(mt_parse_uint64("-0", 2, &u), MT_OK);
    assert_int_equal(mt_parse_uint64("x", 1, &u), MT_ERR_SYNTAX);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_us_to_ns_kineto_forms),
        cmocka_unit_test(test_us_to_ns_rounding),
        cmocka_unit_test(test_us_to_ns_exponents_negatives),
        cmocka_unit_test(test_us_to_ns_limits),
        cmocka_unit_test(test_int64_uint64),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
