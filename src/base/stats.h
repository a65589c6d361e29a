/* Order statistics: k-th smallest by selection, medians and nearest-rank
 * percentiles. The one implementation of each for the whole core. */
#ifndef MT_BASE_STATS_H
#define MT_BASE_STATS_H

#include <stddef.h>
#include <stdint.h>

/* The k-th smallest (0-based, k < n) of v[0..n), which is reordered: every
 * element before position k is <= v[k] and every one after it >= v[k]
 * afterwards. Hoare's selection with a median-of-three pivot, O(n) on
 * average: the clock fit takes many medians of every rank's points, and
 * sorting each time made it the slowest step of a run. */
int64_t mt_stats_kth_i64(int64_t *v, size_t n, size_t k);
double mt_stats_kth_f64(double *v, size_t n, size_t k);

/* Quantile q (0..1) of v[0..n) (reorders v), interpolated between the
 * order statistics i and i + 1 around q * (n - 1); 0 when n = 0. By
 * selection, not a sort: the same two values, so the same result as
 * interpolating in the sorted values (sorting every rank's residuals was
 * 7% of the clock fit at 1024 ranks x 3000). */
double mt_stats_quantile_f64(double *v, size_t n, double q);

/* Median of v[0..n) (reorders v): the mean of the two middle values when n
 * is even; 0 when n = 0. */
double mt_stats_median_f64(double *v, size_t n);
/* The same for integers: the two middle values' mean rounded toward zero
 * ((lo + hi) / 2). */
int64_t mt_stats_median_i64(int64_t *v, size_t n);

/* Nearest-rank percentile p (1..100; clamped) of v[0..n): the value at
 * position ceil(p * n / 100) - 1 of the sorted values; 0 when n = 0.
 * _sorted reads v as sorted already; _i64 selects it (reorders v). */
int64_t mt_stats_pct_sorted(const int64_t *v, size_t n, int p);
int64_t mt_stats_pct_i64(int64_t *v, size_t n, int p);

/* a + b, held at INT64_MAX / INT64_MIN instead of overflowing: sums of
 * time differences over a job whose clocks were not aligned (--no-align
 * over ranks with and without an absolute base) can pass int64; their
 * numbers mean nothing then, but the run must not be undefined. */
static inline int64_t mt_add_sat(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_add_overflow(a, b, &r))
        return b > 0 ? INT64_MAX : INT64_MIN;
    return r;
}

#endif
