/* Unit tests of the base layer (src/base/): array growth, order
 * statistics, error positions, the number formatters and the radix sort,
 * each against values worked out by hand or a plain sort. */
#define _POSIX_C_SOURCE 200809L /* mkstemp */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/bigmem.h"
#include "base/errpos.h"
#include "base/interval.h"
#include "base/numparse.h"
#include "base/partpath.h"
#include "base/sort.h"
#include "base/stats.h"
#include "base/text.h"
#include "mergetrace/buf.h"
#include "test_util.h"

static void test_grow(void **state)
{
    (void)state;
    int *a = NULL;
    size_t cap = 0;
    assert_int_equal(MT_GROW(a, cap, 1, 4), MT_OK);
    assert_int_equal(cap, 4); /* from `first` */
    assert_int_equal(MT_GROW(a, cap, 4, 4), MT_OK);
    assert_int_equal(cap, 4); /* room already */
    assert_int_equal(MT_GROW(a, cap, 5, 4), MT_OK);
    assert_int_equal(cap, 8); /* doubled */
    assert_int_equal(MT_GROW(a, cap, 33, 4), MT_OK);
    assert_int_equal(cap, 64); /* doubled until it holds 33 */
    for (int i = 0; i < 64; i++)
        a[i] = i; /* all of it is ours (ASan) */
    /* a byte count that overflows: refused, nothing changed */
    int *keep = a;
    assert_int_equal(mt_grow((void **)&a, &cap, SIZE_MAX / 2, sizeof *a, 4), MT_ERR_NOMEM);
    assert_ptr_equal(a, keep);
    assert_int_equal(cap, 64);
    free(a);
    uint64_t *b = NULL;
    size_t cb = 0;
    assert_int_equal(MT_GROW_BIG(b, cb, 3, 0), MT_OK); /* first 0 counts as 1 */
    assert_int_equal(cb, 4);
    free(b);
}

static int cmp_i64(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

static int cmp_f64(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static void test_stats(void **state)
{
    (void)state;
    /* by hand */
    int64_t v[] = {5, 1, 4, 2, 3};
    assert_int_equal(mt_stats_kth_i64(v, 5, 0), 1);
    assert_int_equal(mt_stats_kth_i64(v, 5, 4), 5);
    int64_t s[] = {10, 20, 30, 40};
    assert_int_equal(mt_stats_pct_sorted(s, 4, 50), 20); /* ceil(2) - 1 = 1 */
    assert_int_equal(mt_stats_pct_sorted(s, 4, 51), 30);
    assert_int_equal(mt_stats_pct_sorted(s, 4, 99), 40);
    assert_int_equal(mt_stats_pct_sorted(s, 4, 0), 10);   /* clamped to 1 */
    assert_int_equal(mt_stats_pct_sorted(s, 4, 250), 40); /* clamped to 100 */
    assert_int_equal(mt_stats_pct_sorted(s, 0, 50), 0);
    /* interpolated quantiles, by hand: sorted 10 20 30 40; q = 0.5 sits at
     * 1.5 (20 and 30 halved), q = 0.99 at 2.97 (30 x 0.03 + 40 x 0.97) */
    double qv[] = {40, 10, 30, 20};
    assert_true(mt_stats_quantile_f64(qv, 4, 0.5) == 25.0);
    assert_float_equal(mt_stats_quantile_f64(qv, 4, 0.99), 39.7, 1e-9);
    assert_true(mt_stats_quantile_f64(qv, 4, 0) == 10.0);
    assert_true(mt_stats_quantile_f64(qv, 4, 1) == 40.0);
    assert_true(mt_stats_quantile_f64(qv, 1, 0.5) == qv[0]);
    assert_true(mt_stats_quantile_f64(qv, 0, 0.5) == 0.0);
    double d[] = {4, 1, 3, 2};
    assert_true(mt_stats_median_f64(d, 4) == 2.5);
    double e[] = {7, -1, 3};
    assert_true(mt_stats_median_f64(e, 3) == 3);
    int64_t m4[] = {4, 1, 3, 2}, m3[] = {7, -1, 3}, mn[] = {-3, -2}, m2[] = {9, 10};
    assert_int_equal(mt_stats_median_i64(m4, 4), 2);  /* (2 + 3) / 2 */
    assert_int_equal(mt_stats_median_i64(m3, 3), 3);
    assert_int_equal(mt_stats_median_i64(mn, 2), -2); /* -5 / 2, toward zero */
    assert_int_equal(mt_stats_median_i64(m2, 2), 9);
    assert_int_equal(mt_stats_median_i64(m2, 0), 0);
    /* against a plain sort, with many ties and sorted runs */
    uint64_t r = 88172645463325252ull;
    for (int round = 0; round < 200; round++) {
        size_t n = 1 + (size_t)(tu_rand(&r) % 300);
        int64_t *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
        double *fx = malloc(n * sizeof *fx), *fy = malloc(n * sizeof *fy);
        for (size_t i = 0; i < n; i++) {
            x[i] = round % 3 == 0 ? (int64_t)i : (int64_t)(tu_rand(&r) % 17) - 8;
            fx[i] = (double)x[i] * 0.5;
        }
        memcpy(y, x, n * sizeof *x);
        qsort(y, n, sizeof *y, cmp_i64);
        memcpy(fy, fx, n * sizeof *fx);
        qsort(fy, n, sizeof *fy, cmp_f64);
        size_t k = (size_t)(tu_rand(&r) % n);
        int p = 1 + (int)(tu_rand(&r) % 100);
        int64_t *t = malloc(n * sizeof *t);
        memcpy(t, x, n * sizeof *x);
        assert_int_equal(mt_stats_kth_i64(t, n, k), y[k]);
        for (size_t i = 0; i < k; i++)
            assert_true(t[i] <= t[k]); /* the partition the median relies on */
        memcpy(t, x, n * sizeof *x);
        assert_int_equal(mt_stats_pct_i64(t, n, p), mt_stats_pct_sorted(y, n, p));
        double want = n % 2 ? fy[n / 2] : 0.5 * (fy[n / 2 - 1] + fy[n / 2]);
        assert_true(mt_stats_median_f64(fx, n) == want);
        free(x), free(y), free(fx), free(fy), free(t);
    }
    /* the sampled fast paths (n >= 512, >= 1024) against a plain sort: spread,
     * heavily tied, sorted, and a sample that misses the middle (the
     * spaced sample positions hold the largest values) */
    for (int round = 0; round < 40; round++) {
        size_t n = 512 + (size_t)(tu_rand(&r) % 4500);
        double *fx = malloc(n * sizeof *fx), *fy = malloc(n * sizeof *fy);
        for (size_t i = 0; i < n; i++) {
            int shape = round % 4;
            fx[i] = shape == 0   ? (double)(tu_rand(&r) % 100000) - 50000
                    : shape == 1 ? (double)(tu_rand(&r) % 5)
                    : shape == 2 ? (double)i * 0.5
                                 : (double)(tu_rand(&r) % 1000);
        }
        if (round % 4 == 3) {
            size_t ns = n >= 1024 ? 256 : 64, step = n / ns;
            for (size_t i = 0; i < ns; i++)
                fx[i * step + step / 2] = 1e9 + (double)i;
        }
        memcpy(fy, fx, n * sizeof *fx);
        qsort(fy, n, sizeof *fy, cmp_f64);
        double want = n % 2 ? fy[n / 2] : 0.5 * (fy[n / 2 - 1] + fy[n / 2]);
        assert_true(mt_stats_median_f64(fx, n) == want);
        qsort(fx, n, sizeof *fx, cmp_f64); /* reordered, not changed */
        assert_memory_equal(fx, fy, n * sizeof *fx);
        free(fx), free(fy);
    }
}

static void test_union2(void **state)
{
    (void)state;
    /* by hand: [0,10) [20,30) u [5,12) [30,31) [40,50) = [0,12) [20,31) [40,50) */
    mt_interval_t a[] = {{0, 10}, {20, 30}}, b[] = {{5, 12}, {30, 31}, {40, 50}}, out[5];
    assert_int_equal(mt_iv_union2(a, 2, b, 3, out), 3);
    assert_true(out[0].start == 0 && out[0].end == 12);
    assert_true(out[1].start == 20 && out[1].end == 31);
    assert_true(out[2].start == 40 && out[2].end == 50);
    assert_int_equal(mt_iv_union2(a, 2, NULL, 0, out), 2);
    assert_int_equal(mt_iv_union2(NULL, 0, NULL, 0, out), 0);
}

/* mt_iv_find_hint by hand on [10,20) [20,30) [40,50) [45,46): the latest of
 * the last four starting at or before t whose end is not before t. */
static void test_find_hint(void **state)
{
    (void)state;
    const mt_interval_t r[] = {{10, 20}, {20, 30}, {40, 50}, {45, 46}};
    size_t S = offsetof(mt_interval_t, start), E = offsetof(mt_interval_t, end), h = 0;
    assert_int_equal(mt_iv_find_hint(r, 4, sizeof *r, S, E, 5, &h), -1); /* before all */
    assert_int_equal(h, 0);
    assert_int_equal(mt_iv_find_hint(r, 4, sizeof *r, S, E, 15, &h), 0);
    assert_int_equal(h, 1);                                               /* the next one */
    assert_int_equal(mt_iv_find_hint(r, 4, sizeof *r, S, E, 20, &h), 1);  /* [20,30) starts at 20 */
    assert_int_equal(mt_iv_find_hint(r, 4, sizeof *r, S, E, 35, &h), -1); /* in no range */
    assert_int_equal(mt_iv_find_hint(r, 4, sizeof *r, S, E, 47, &h), 2);  /* [45,46) ended: [40,50) */
    assert_int_equal(h, 4);
    h = 4; /* a stale hint: the binary search */
    assert_int_equal(mt_iv_find_hint(r, 4, sizeof *r, S, E, 12, &h), 0);
    assert_int_equal(h, 1);
    h = SIZE_MAX; /* not sorted: searched, the hint kept */
    assert_int_equal(mt_iv_find_hint(r, 4, sizeof *r, S, E, 25, &h), 1);
    assert_true(h == SIZE_MAX);
    assert_int_equal(mt_iv_find_hint(r, 0, sizeof *r, S, E, 25, &h), -1);
}

static void test_errpos(void **state)
{
    (void)state;
    const char *text = "ab\ncd\n\nxyz";
    mt_error_t err;
    mt_error_clear(&err);
    mt_errpos_in(&err, "f.json", text, 8); /* 'y' */
    assert_string_equal(err.path, "f.json");
    assert_int_equal(err.offset, 8);
    assert_int_equal(err.line, 4);
    assert_int_equal(err.col, 2);
    mt_errpos_in(&err, NULL, text, 0);
    assert_int_equal(err.line, 1);
    assert_int_equal(err.col, 1);
    assert_string_equal(err.path, "f.json"); /* NULL path: kept */
    /* counted in pieces as a streaming reader does: the same */
    for (size_t cut = 0; cut <= 8; cut++) {
        mt_errpos_t p = {1, 1};
        mt_errpos_count(&p, text, cut);
        mt_errpos_count(&p, text + cut, 8 - cut);
        assert_int_equal(p.line, 4);
        assert_int_equal(p.col, 2);
    }
    mt_errpos_set(NULL, "x", 1, 1, 1); /* no error to fill: nothing */
    /* the hex digit the three readers with \u escapes and hex ids share */
    assert_int_equal(mt_parse_hex_digit('0'), 0);
    assert_int_equal(mt_parse_hex_digit('9'), 9);
    assert_int_equal(mt_parse_hex_digit('a'), 10);
    assert_int_equal(mt_parse_hex_digit('F'), 15);
    assert_int_equal(mt_parse_hex_digit('g'), -1);
    assert_int_equal(mt_parse_hex_digit('/'), -1);
}

static void test_formatters(void **state)
{
    (void)state;
    char b[40];
    assert_int_equal(mt_fmt_us(0, b), 5);
    assert_string_equal(b, "0.000");
    mt_fmt_us(-1, b);
    assert_string_equal(b, "-0.001");
    mt_fmt_us(1234567, b);
    assert_string_equal(b, "1234.567");
    mt_fmt_us(INT64_MIN, b);
    assert_string_equal(b, "-9223372036854775.808");
    assert_int_equal(mt_fmt_i64(INT64_MIN, b), 20);
    assert_string_equal(b, "-9223372036854775808");
    mt_fmt_u64(UINT64_MAX, b);
    assert_string_equal(b, "18446744073709551615");
    /* against snprintf: every length of 1 to 20 digits, the powers of ten
     * and their neighbours, random values of every magnitude */
    uint64_t rng = 4242;
    for (int k = 0; k < 4000; k++) {
        uint64_t p10 = 1;
        for (int e = k % 20; e > 0; e--)
            p10 *= 10;
        uint64_t u = k < 60 ? p10 + (uint64_t)(k / 20) - 1 : tu_rand(&rng) >> (tu_rand(&rng) % 64);
        char w[48];
        snprintf(w, sizeof w, "%llu", (unsigned long long)u);
        assert_int_equal(mt_fmt_u64(u, b), strlen(w));
        assert_string_equal(b, w);
        int64_t i = (int64_t)u; /* wraps above INT64_MAX */
        if (k % 2 && i != INT64_MIN)
            i = -i;
        snprintf(w, sizeof w, "%lld", (long long)i);
        assert_int_equal(mt_fmt_i64(i, b), strlen(w));
        assert_string_equal(b, w);
        snprintf(w, sizeof w, "%s%lld.%03lld", i < 0 ? "-" : "", (long long)(i < 0 ? -(i / 1000) : i / 1000),
                 (long long)(i < 0 ? -(i % 1000) : i % 1000));
        assert_int_equal(mt_fmt_us(i, b), strlen(w));
        assert_string_equal(b, w);
    }
    mt_fmt_time(b, sizeof b, 850);
    assert_string_equal(b, "850 ns");
    mt_fmt_time(b, sizeof b, 12345);
    assert_string_equal(b, "12.3 us");
    mt_fmt_time(b, sizeof b, -4560000);
    assert_string_equal(b, "-4.56 ms");
    mt_fmt_time(b, sizeof b, 1230000000);
    assert_string_equal(b, "1.23 s");
    /* terminal cells: padded, or cut with an ellipsis (characters, not bytes) */
    char cb[4 * 14 + 1];
    assert_int_equal(mt_fmt_cell(cb, sizeof cb, "tp", 2, 5), 5);
    assert_string_equal(cb, "tp   ");
    const char *pg = "6 (PIPELINE_MODEL_PARALLEL_GROUP)";
    mt_fmt_cell(cb, sizeof cb, pg, strlen(pg), 14);
    assert_string_equal(cb, "6 (PIPELINE_M\xe2\x80\xa6");
    mt_fmt_cell(cb, sizeof cb, "signed char", 11, 8);
    assert_string_equal(cb, "signed \xe2\x80\xa6");
    mt_fmt_cell(cb, sizeof cb, "exactly8", 8, 8);
    assert_string_equal(cb, "exactly8");
    /* a 2-byte character counts as one column and is never split */
    mt_fmt_cell(cb, sizeof cb, "\xc3\xa9t\xc3\xa9s", 6, 5);
    assert_string_equal(cb, "\xc3\xa9t\xc3\xa9s ");
    mt_fmt_cell(cb, sizeof cb, "\xc3\xa9t\xc3\xa9s", 6, 3);
    assert_string_equal(cb, "\xc3\xa9t\xe2\x80\xa6");
    mt_fmt_cell(cb, sizeof cb, "a\tb", 3, 3);
    assert_string_equal(cb, "a?b");
    /* the writer: escaping and a line longer than its stack buffer */
    mt_buf_t out = {0};
    mt_out_t o = {mt_buf_write, &out, MT_OK};
    mt_out_str(&o, "a\"b\\c\n", 10);
    mt_out_puts(&o, " ");
    mt_out_html(&o, "<&'>", 4);
    char big[3000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    mt_out_printf(&o, "[%s]", big);
    mt_out_us(&o, 1500);
    assert_int_equal(o.st, MT_OK);
    const char *want = "\"a\\\"b\\\\c\\u000a\" &lt;&amp;&#39;&gt;[";
    assert_true(out.len == strlen(want) + 2999 + 1 + 5);
    assert_memory_equal(out.data, want, strlen(want));
    assert_memory_equal(out.data + out.len - 6, "]1.500", 6);
    mt_buf_free(&out);
}

/* Part paths worked by hand; a file whose own name ends in "#pid3" is that
 * file, not part 3 of another. */
static void test_partpath(void **state)
{
    (void)state;
    size_t n = 0;
    assert_int_equal(mt_part_split("/no/such/x.sqlite#pid144", "pid", &n), 144);
    assert_int_equal(n, strlen("/no/such/x.sqlite"));
    assert_int_equal(mt_part_split("/no/such/m.json.gz#rank0", "rank", &n), 0);
    assert_int_equal(n, strlen("/no/such/m.json.gz"));
    assert_int_equal(mt_part_split("/no/such/a#b#rank12", "rank", &n), 12); /* the last '#' */
    assert_int_equal(n, strlen("/no/such/a#b"));
    assert_int_equal(mt_part_split("/no/such/x#pid", "pid", &n), -1);    /* no digits */
    assert_int_equal(mt_part_split("/no/such/x#pid1a", "pid", &n), -1);  /* not all digits */
    assert_int_equal(mt_part_split("/no/such/x#rank1", "pid", &n), -1);  /* another tag */
    assert_int_equal(mt_part_split("/no/such/exp#1/r.json", "pid", &n), -1);
    assert_int_equal(mt_part_split("/no/such/x#pid9999999999", "pid", &n), -1); /* too large */
    assert_int_equal(mt_part_split(NULL, "pid", &n), -1);
    char tmp[] = "/tmp/mt_partpath_XXXXXX";
    int fd = mkstemp(tmp);
    assert_true(fd >= 0);
    close(fd);
    char named[64];
    snprintf(named, sizeof named, "%s#pid3", tmp);
    assert_int_equal(mt_part_split(named, "pid", &n), 3); /* no such file yet */
    assert_int_equal(rename(tmp, named), 0);
    assert_int_equal(mt_part_split(named, "pid", &n), -1); /* now a file of that very name */
    unlink(named);
}

/* mt_sort_u64 against a stable insertion sort of (key, value) pairs: the
 * digit plan depends on the bits in which the keys differ and on n, so
 * spans of 1 to 64 bits at several lengths, both sides of the 8/11-bit
 * switch (4096) and the insertion sort (32), with many equal keys for
 * stability. */
static void test_sort_u64(void **state)
{
    (void)state;
    uint64_t rng = 0x9e3779b97f4a7c15ull;
    static const size_t lens[] = {2, 31, 33, 200, 4095, 4096, 9000};
    static const int spans[] = {1, 3, 8, 9, 11, 12, 22, 23, 34, 45, 63, 64};
    for (size_t li = 0; li < sizeof lens / sizeof *lens; li++)
        for (size_t si = 0; si < sizeof spans / sizeof *spans; si++) {
            size_t n = lens[li];
            int span = spans[si];
            uint64_t *k = malloc(n * sizeof *k), *rk = malloc(n * sizeof *rk);
            uint32_t *v = malloc(n * sizeof *v), *rv = malloc(n * sizeof *rv);
            assert_non_null(k);
            assert_non_null(v);
            assert_non_null(rk);
            assert_non_null(rv);
            /* a common high part (a time key's epoch), a low part of span
             * bits shifted up 3 (low bits that never differ), 1 in 8 keys a
             * repeat of an earlier one */
            uint64_t base = tu_rand(&rng) & ~((span >= 61 ? ~0ull : ((1ull << (span + 3)) - 1)));
            for (size_t i = 0; i < n; i++) {
                uint64_t r = tu_rand(&rng);
                uint64_t low = span == 64 ? r : (r & ((1ull << span) - 1)) << (span >= 61 ? 0 : 3);
                k[i] = i && tu_rand(&rng) % 8 == 0 ? k[tu_rand(&rng) % i] : base | low;
                v[i] = (uint32_t)i;
            }
            for (size_t i = 0; i < n; i++) {
                size_t j = i;
                for (; j > 0 && rk[j - 1] > k[i]; j--) {
                    rk[j] = rk[j - 1];
                    rv[j] = rv[j - 1];
                }
                rk[j] = k[i];
                rv[j] = v[i];
            }
            assert_int_equal(mt_sort_u64(k, v, n), MT_OK);
            assert_memory_equal(k, rk, n * sizeof *k);
            assert_memory_equal(v, rv, n * sizeof *v);
            free(k);
            free(v);
            free(rk);
            free(rv);
        }
}

/* mt_sort_fields against qsort by the fields and then the index (the
 * stable order, worked out independently): 1 to 6 fields of 0 (constant)
 * to 64 varying bits, so keys of 0, 1, 2 and 3 words, a field cut across
 * two words, values repeated for ties, lengths on both sides of
 * mt_sort_u64's insertion sort and its 8/11-bit switch; and
 * mt_sort_fields_runs's run starts for every number of lead fields (read
 * off the key's last word or from the columns), against the sorted items'
 * fields. */
typedef struct sf_item {
    uint64_t f[6];
    uint32_t idx;
} sf_item_t;

static size_t sf_ncols;

static int sf_cmp(const void *pa, const void *pb)
{
    const sf_item_t *a = pa, *b = pb;
    for (size_t f = 0; f < sf_ncols; f++)
        if (a->f[f] != b->f[f])
            return a->f[f] < b->f[f] ? -1 : 1;
    return (a->idx > b->idx) - (a->idx < b->idx);
}

static void test_sort_fields(void **state)
{
    (void)state;
    uint64_t rng = 0x13198a2e03707344ull;
    static const size_t lens[] = {1, 2, 17, 31, 33, 500, 4100};
    /* varying bits per field, field 0 first; a plan per row */
    static const int plans[][6] = {
        {0, 0, 0, 0, 0, 0},   {5, 0, 0, 0, 0, 0},    {64, 0, 0, 0, 0, 0},   {3, 64, 12, 0, 10, 0},
        {3, 40, 30, 1, 0, 0}, {0, 64, 64, 64, 0, 0}, {2, 7, 7, 7, 7, 7},    {1, 63, 1, 0, 0, 0},
        {2, 65, 64, 0, 0, 0},
    };
    /* 65: two values 64 bits apart, the smaller one in 1 of 97 items, so
     * the runs of fields 0 and 1 often begin where field 0 alone changes */
    static const size_t ncols[] = {1, 1, 1, 5, 4, 4, 6, 3, 3};
    for (size_t li = 0; li < sizeof lens / sizeof *lens; li++)
        for (size_t pi = 0; pi < sizeof ncols / sizeof *ncols; pi++) {
            size_t n = lens[li], nc = ncols[pi];
            sf_item_t *it = malloc(n * sizeof *it);
            uint64_t *col[6];
            uint32_t *perm = malloc(n * sizeof *perm);
            assert_non_null(it);
            assert_non_null(perm);
            uint64_t fixed[6], mask[6];
            for (size_t f = 0; f < nc; f++) {
                col[f] = malloc(n * sizeof *col[f]);
                assert_non_null(col[f]);
                /* a fixed high part and lowest bit, span bits between */
                int span = plans[pi][f];
                fixed[f] = span >= 64 ? 0 : tu_rand(&rng) | 1;
                mask[f] = span >= 64 ? ~0ull : span == 63 ? ~1ull : ((1ull << span) - 1) << 1;
            }
            for (size_t i = 0; i < n; i++) {
                /* 1 in 8 items a copy of an earlier one, 1 in 4 fields a
                 * value of an earlier item */
                size_t whole = i && tu_rand(&rng) % 8 == 0 ? tu_rand(&rng) % i : SIZE_MAX;
                for (size_t f = 0; f < nc; f++) {
                    uint64_t v = (fixed[f] & ~mask[f]) | (tu_rand(&rng) & mask[f]);
                    if (plans[pi][f] == 65)
                        v = i % 97 == 3 ? 1 : UINT64_MAX - 1;
                    if (whole != SIZE_MAX)
                        v = col[f][whole];
                    else if (i && tu_rand(&rng) % 4 == 0)
                        v = col[f][tu_rand(&rng) % i];
                    col[f][i] = it[i].f[f] = v;
                }
                it[i].idx = (uint32_t)i;
            }
            sf_ncols = nc;
            qsort(it, n, sizeof *it, sf_cmp);
            assert_int_equal(mt_sort_fields((const uint64_t *const *)col, nc, n, perm), MT_OK);
            for (size_t i = 0; i < n; i++)
                assert_int_equal(perm[i], it[i].idx);
            /* the runs of the first 0 to nc fields, against the sorted items */
            uint64_t *starts = malloc((n / 64 + 1) * sizeof *starts);
            assert_non_null(starts);
            for (size_t lead = 0; lead <= nc; lead++) {
                memset(perm, 0xff, n * sizeof *perm);
                memset(starts, 0xff, (n / 64 + 1) * sizeof *starts);
                assert_int_equal(mt_sort_fields_runs((const uint64_t *const *)col, nc, n, perm, lead, starts), MT_OK);
                for (size_t i = 0; i < n; i++) {
                    assert_int_equal(perm[i], it[i].idx);
                    bool begins = i == 0;
                    for (size_t f = 0; f < lead && !begins; f++)
                        begins = it[i].f[f] != it[i - 1].f[f];
                    assert_int_equal(starts[i / 64] >> (i % 64) & 1, begins);
                }
                for (size_t i = n; i < (n / 64 + 1) * 64; i++)
                    assert_int_equal(starts[i / 64] >> (i % 64) & 1, 0);
            }
            free(starts);
            for (size_t f = 0; f < nc; f++)
                free(col[f]);
            free(it);
            free(perm);
        }
}

/* mt_kmerge against qsort of the sources' items put together: 1 to 70
 * sources (powers of two and not), some empty, items with equal keys in
 * one source and across sources (the tie decides, then the source), the
 * largest key (UINT64_MAX with a smaller tie) that must not read as an
 * exhausted source. */
typedef struct km_item {
    uint64_t key, tie;
    uint32_t src;
} km_item_t;

static int km_cmp(const void *pa, const void *pb)
{
    const km_item_t *a = pa, *b = pb;
    if (a->key != b->key)
        return a->key < b->key ? -1 : 1;
    if (a->tie != b->tie)
        return a->tie < b->tie ? -1 : 1;
    return (a->src > b->src) - (a->src < b->src);
}

/* The lower bounds against a linear scan: keys at an item's start, items
 * of 12 bytes (the 64-bit keys unaligned every other item), duplicates,
 * negative keys, keys below, between and above every item, n 0 and 1. */
static void test_lower_bound(void **state)
{
    (void)state;
    enum { N = 40, STRIDE = 12 };
    unsigned char buf[N * STRIDE];
    int64_t k64[N];
    int32_t k32[N];
    for (size_t i = 0; i < N; i++) {
        k64[i] = (int64_t)(i / 3) * 7 - 60; /* three of each, from -60 */
        k32[i] = (int32_t)k64[i];
    }
    for (size_t n = 0; n <= N; n++)
        for (int64_t key = -70; key <= 100; key++) {
            size_t want = 0;
            while (want < n && k64[want] < key)
                want++;
            for (size_t i = 0; i < n; i++)
                memcpy(buf + i * STRIDE, &k64[i], 8);
            assert_int_equal(mt_lower_bound_i64(buf, n, STRIDE, key), want);
            for (size_t i = 0; i < n; i++)
                memcpy(buf + i * STRIDE, &k32[i], 4);
            assert_int_equal(mt_lower_bound_i32(buf, n, STRIDE, (int32_t)key), want);
            /* unsigned: the keys shifted above 0 keep their order */
            for (size_t i = 0; i < n; i++) {
                uint64_t u = (uint64_t)(k64[i] + 100) << 40;
                memcpy(buf + i * STRIDE, &u, 8);
            }
            assert_int_equal(mt_lower_bound_u64(buf, n, STRIDE, (uint64_t)(key + 100) << 40), want);
        }
    uint64_t big[3] = {1, UINT64_MAX - 1, UINT64_MAX};
    assert_int_equal(mt_lower_bound_u64(big, 3, 8, UINT64_MAX), 2);
    assert_int_equal(mt_lower_bound_u64(big, 3, 8, 2), 1);
    assert_int_equal(mt_lower_bound_u64(big, 3, 8, 0), 0);
}

static void test_kmerge(void **state)
{
    (void)state;
    uint64_t rng = 0x243f6a8885a308d3ull;
    static const size_t ks[] = {1, 2, 3, 5, 8, 13, 64, 70};
    for (size_t ki = 0; ki < sizeof ks / sizeof *ks; ki++)
        for (int rep = 0; rep < 4; rep++) {
            size_t k = ks[ki];
            size_t *len = calloc(k, sizeof *len), *at = calloc(k, sizeof *at), *first = calloc(k + 1, sizeof *first);
            assert_non_null(len);
            assert_non_null(at);
            assert_non_null(first);
            for (size_t s = 0; s < k; s++)
                len[s] = tu_rand(&rng) % 4 == 0 ? 0 : tu_rand(&rng) % 50;
            for (size_t s = 0; s < k; s++)
                first[s + 1] = first[s] + len[s];
            size_t n = first[k];
            km_item_t *it = malloc((n ? n : 1) * sizeof *it), *ref = malloc((n ? n : 1) * sizeof *ref);
            assert_non_null(it);
            assert_non_null(ref);
            for (size_t s = 0; s < k; s++) {
                uint64_t key = tu_rand(&rng) % 8;
                for (size_t j = 0; j < len[s]; j++) {
                    key += tu_rand(&rng) % 3; /* repeats within the source */
                    uint64_t big = rep == 3 && j + 1 == len[s] ? UINT64_MAX : key;
                    it[first[s] + j] = (km_item_t){.key = big, .tie = tu_rand(&rng) % 2, .src = (uint32_t)s};
                }
                /* each source sorted by (key, tie) */
                qsort(it + first[s], len[s], sizeof *it, km_cmp);
            }
            memcpy(ref, it, n * sizeof *it);
            qsort(ref, n, sizeof *ref, km_cmp);
            mt_kmerge_t m;
            assert_int_equal(mt_kmerge_init(&m, k), MT_OK);
            for (size_t s = 0; s < k; s++)
                if (len[s]) {
                    m.key[s] = it[first[s]].key;
                    m.tie[s] = it[first[s]].tie;
                }
            mt_kmerge_start(&m);
            for (size_t q = 0; q < n; q++) {
                uint32_t s = mt_kmerge_top(&m);
                assert_true(s < k);
                assert_true(at[s] < len[s]);
                const km_item_t *x = &it[first[s] + at[s]];
                assert_true(m.key[s] == x->key && m.tie[s] == x->tie);
                assert_true(x->key == ref[q].key && x->tie == ref[q].tie && s == ref[q].src);
                if (++at[s] < len[s])
                    mt_kmerge_next(&m, it[first[s] + at[s]].key, it[first[s] + at[s]].tie);
                else
                    mt_kmerge_next(&m, MT_KMERGE_END, MT_KMERGE_END);
            }
            uint32_t s = mt_kmerge_top(&m);
            assert_true(m.key[s] == MT_KMERGE_END && m.tie[s] == MT_KMERGE_END);
            mt_kmerge_free(&m);
            free(it);
            free(ref);
            free(len);
            free(at);
            free(first);
        }
}

/* A sink that fails from the call where *ctx reaches 3. */
static mt_status_t failing_write(void *ctx, const void *data, size_t len)
{
    (void)data;
    (void)len;
    int *calls = ctx;
    return ++*calls >= 3 ? MT_ERR_IO : MT_OK;
}

/* mt_outbuf_t: pieces of 1 byte to twice its buffer pass on whole and in
 * order (against the same pieces appended directly), and a failing sink's
 * error comes back from the write that fills the buffer. */
static void test_outbuf(void **state)
{
    (void)state;
    uint64_t rng = 77;
    mt_buf_t want = {0}, got = {0};
    mt_outbuf_t *ob = malloc(sizeof *ob);
    assert_non_null(ob);
    *ob = (mt_outbuf_t){.w = mt_buf_write, .ctx = &got};
    char piece[40000];
    for (size_t i = 0; i < sizeof piece; i++)
        piece[i] = (char)('a' + i % 26);
    for (int k = 0; k < 400; k++) {
        size_t len = k % 50 == 7 ? 16384 + tu_rand(&rng) % 20000 : 1 + tu_rand(&rng) % 300;
        size_t off = tu_rand(&rng) % 26;
        assert_int_equal(mt_outbuf_write(ob, piece + off, len), MT_OK);
        assert_int_equal(mt_buf_write(&want, piece + off, len), MT_OK);
    }
    assert_true(got.len < want.len); /* some still held */
    assert_int_equal(mt_outbuf_flush(ob), MT_OK);
    assert_int_equal(got.len, want.len);
    assert_memory_equal(got.data, want.data, want.len);
    int calls = 2;
    *ob = (mt_outbuf_t){.w = failing_write, .ctx = &calls};
    mt_status_t st = MT_OK;
    for (int k = 0; k < 100 && st == MT_OK; k++)
        st = mt_outbuf_write(ob, piece, 1000);
    assert_int_equal(st, MT_ERR_IO);
    free(ob);
    mt_buf_free(&want);
    mt_buf_free(&got);
}

/* Every text reaches report.json and report.html as UTF-8 (issue 40 item
 * 5): valid sequences pass, each byte of an invalid one becomes U+FFFD
 * (EF BF BD), worked out by hand per case. */
static void test_utf8_out(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        size_t n;
        const char *json, *html;
    } c[] = {
        {"r\xff.json", 7, "\"r\xef\xbf\xbd.json\"", "r\xef\xbf\xbd.json"},
        {"\xc3\xa9", 2, "\"\xc3\xa9\"", "\xc3\xa9"},                                     /* é */
        {"\xf0\x9f\x98\x80", 4, "\"\xf0\x9f\x98\x80\"", "\xf0\x9f\x98\x80"},             /* U+1F600 */
        {"\xc0\xaf", 2, "\"\xef\xbf\xbd\xef\xbf\xbd\"", "\xef\xbf\xbd\xef\xbf\xbd"},     /* overlong '/' */
        {"\xed\xa0\x80", 3, "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"",
         "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},                                         /* surrogate */
        {"a\xe2\x82", 3, "\"a\xef\xbf\xbd\xef\xbf\xbd\"", "a\xef\xbf\xbd\xef\xbf\xbd"},   /* cut short */
        {"\"<\x01", 3, "\"\\\"<\\u0001\"", "&quot;&lt;\xef\xbf\xbd"},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        mt_buf_t j = {0}, h = {0};
        assert_int_equal(mt_json_string(c[i].in, c[i].n, mt_buf_write, &j), MT_OK);
        assert_int_equal(mt_html_escape(c[i].in, c[i].n, mt_buf_write, &h), MT_OK);
        if (j.len != strlen(c[i].json) || memcmp(j.data, c[i].json, j.len))
            fail_msg("case %zu: json %.*s", i, (int)j.len, (const char *)j.data);
        if (h.len != strlen(c[i].html) || memcmp(h.data, c[i].html, h.len))
            fail_msg("case %zu: html %.*s", i, (int)h.len, (const char *)h.data);
        mt_buf_free(&j);
        mt_buf_free(&h);
    }
    /* mt_json_plain_len (eight bytes at a time): the first byte to escape
     * or check, at every place of a 20-byte string; DEL passes */
    static const char stop[] = {'"', '\\', 0x00, 0x1f, (char)0x80, (char)0xff};
    for (size_t k = 0; k < 20; k++) {
        char t[20];
        memset(t, 'a', sizeof t);
        for (size_t x = 0; x < sizeof stop; x++) {
            t[k] = stop[x];
            assert_int_equal(mt_json_plain_len(t, sizeof t), k);
            /* and a second one after it changes nothing */
            if (k + 1 < sizeof t) {
                t[k + 1] = '"';
                assert_int_equal(mt_json_plain_len(t, sizeof t), k);
                t[k + 1] = 'a';
            }
            assert_int_equal(mt_json_plain_len(t, k), k);
        }
        t[k] = 0x7f;
        assert_int_equal(mt_json_plain_len(t, sizeof t), sizeof t);
        t[k] = ' ';
        assert_int_equal(mt_json_plain_len(t, sizeof t), sizeof t);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grow),
        cmocka_unit_test(test_partpath),
        cmocka_unit_test(test_stats),
        cmocka_unit_test(test_union2),
        cmocka_unit_test(test_find_hint),
        cmocka_unit_test(test_errpos),
        cmocka_unit_test(test_formatters),
        cmocka_unit_test(test_sort_u64),
        cmocka_unit_test(test_sort_fields),
        cmocka_unit_test(test_lower_bound),
        cmocka_unit_test(test_kmerge),
        cmocka_unit_test(test_outbuf),
        cmocka_unit_test(test_utf8_out),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
