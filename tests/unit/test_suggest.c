/* A mistyped long option's likely meaning (mergetrace/suggest.h): edit
 * counts worked by hand, and the option picked from a help text of a few
 * lines (only words starting a line or after a space or a comma count). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "mergetrace/suggest.h"

static int edits(const char *a, const char *b)
{
    return mt_suggest_edits(a, strlen(a), b, strlen(b));
}

static void test_edits(void **state)
{
    (void)state;
    assert_int_equal(edits("baseline", "baseline"), 0);
    assert_int_equal(edits("basline", "baseline"), 1);  /* an insert */
    assert_int_equal(edits("baseliine", "baseline"), 1); /* a delete */
    assert_int_equal(edits("baseqine", "baseline"), 1); /* a replace */
    assert_int_equal(edits("bsaeline", "baseline"), 1); /* two neighbours swapped */
    assert_int_equal(edits("kitten", "sitting"), 3);
    assert_int_equal(edits("", "abc"), 3);
    assert_int_equal(edits("ab", "ba"), 1);
}

static const char help[] = "usage: prog [options] PATH...\n"
                           "  -o, --output DIR   where\n"
                           "  --baseline DIR     compare\n"
                           "  --base X           short\n"
                           "  -q,--quiet         hush\n"
                           "  see also x--quieter and --no\n";

static void test_option(void **state)
{
    (void)state;
    size_t len = 0;
    const char *p = mt_suggest_option("--basline", help, &len);
    assert_non_null(p);
    assert_int_equal(len, strlen("--baseline"));
    assert_memory_equal(p, "--baseline", len);
    /* one edit from --base and two from --baseline: the closer */
    p = mt_suggest_option("--bases", help, &len);
    assert_non_null(p);
    assert_int_equal(len, 6);
    assert_memory_equal(p, "--base", 6);
    /* after a comma counts; inside a word ("x--quieter") does not */
    p = mt_suggest_option("--quite", help, &len);
    assert_non_null(p);
    assert_memory_equal(p, "--quiet", len);
    assert_int_equal(len, 7);
    assert_null(mt_suggest_option("--quieterr", help, &len)); /* 3 from --quiet */
    assert_null(mt_suggest_option("--output", help, &len));   /* itself: no suggestion */
    assert_null(mt_suggest_option("--xyzzy", help, &len));
    assert_null(mt_suggest_option("-o", help, &len));         /* not a long option */
    assert_null(mt_suggest_option("--n", help, &len));        /* under 4 characters, dashes counted */
    p = mt_suggest_option("--n0", help, &len);                /* --no is 4 */
    assert_non_null(p);
    assert_int_equal(len, 4);
    assert_memory_equal(p, "--no", 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_edits),
        cmocka_unit_test(test_option),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
