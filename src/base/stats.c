/* Order statistics (see stats.h). */
#include "base/stats.h"

#include <stdbool.h>

/* One body for both element types: a selection is the same code over
 * int64_t (percentiles of durations) and double (the clock fit). */
#define MT_KTH_BODY(T)                                                                             \
    size_t lo = 0, hi = n - 1;                                                                     \
    while (lo < hi) {                                                                              \
        T a = v[lo], b = v[lo + (hi - lo) / 2], c = v[hi];                                         \
        T pivot = a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));           \
        size_t i = lo, j = hi;                                                                     \
        while (i <= j) {                                                                           \
            while (v[i] < pivot)                                                                   \
                i++;                                                                               \
            while (v[j] > pivot)                                                                   \
                j--;                                                                               \
            if (i <= j) {                                                                          \
                T t = v[i];                                                                        \
                v[i] = v[j];                                                                       \
                v[j] = t;                                                                          \
                i++;                                                                               \
                if (j == 0)                                                                        \
                    break;                                                                         \
                j--;                                                                               \
            }                                                                                      \
        }                                                                                          \
        if (k <= j)                                                                                \
            hi = j;                                                                                \
        else if (k >= i)                                                                           \
            lo = i;                                                                                \
        else                                                                                       \
            return v[k];                                                                           \
    }                                                                                              \
    return v[k];

int64_t mt_stats_kth_i64(int64_t *v, size_t n, size_t k)
{
    MT_KTH_BODY(int64_t)
}

double mt_stats_kth_f64(double *v, size_t n, size_t k)
{
    MT_KTH_BODY(double)
}

double mt_stats_quantile_f64(double *v, size_t n, double q)
{
    if (!n)
        return 0;
    double pos = q * (double)(n - 1);
    size_t i = (size_t)pos;
    double f = pos - (double)i;
    double lo = mt_stats_kth_f64(v, n, i);
    if (i + 1 >= n)
        return lo;
    /* everything after position i is >= v[i]: the next one is their least */
    double hi = v[i + 1];
    for (size_t j = i + 2; j < n; j++)
        hi = v[j] < hi ? v[j] : hi;
    return lo * (1 - f) + hi * f;
}

/* The median by selection: the upper middle (k = n / 2) selected, and for
 * even n the lower middle, the largest of v[0 .. n/2) after it; MEAN of
 * lo and hi. */
#define MT_MEDIAN_BODY(T, KTH, MEAN)                                                               \
    if (!n)                                                                                        \
        return 0;                                                                                  \
    T hi = KTH(v, n, n / 2);                                                                       \
    if (n % 2)                                                                                     \
        return hi;                                                                                 \
    T lo = v[0];                                                                                   \
    for (size_t i = 1; i < n / 2; i++)                                                             \
        lo = v[i] > lo ? v[i] : lo;                                                                \
    return MEAN;

/* The median of many values, when a sample finds it: the clock fit takes
 * three or more medians of every rank's points (thousands) per refit, and
 * Hoare's partition mispredicts about every other comparison on such
 * data (a fifth of the fit's time at 1024 ranks x 3000). Two pivots from
 * an evenly spaced sample bracket the middle with near certainty; one
 * pass without branches moves the values between them to the front and
 * counts those below; the middle values are then selected from that part
 * (a fifth of v). The same order statistics, so the same result. Returns
 * false when the pivots missed; v then holds the same values reordered.
 * ns values sampled, pivots hw sample ranks either side of the middle:
 * 256 and 24 from 1024 values on, 64 and 12 (about a third of v left)
 * from 512 (bench_cross 4096 1000: fit 2.6 -> 2.25 s; at 320 values no
 * gain, so no sampling below 512). */
#define MEDIAN_SAMPLE 256
#define MEDIAN_SAMPLE_HALF_WIDTH 24 /* 3 standard deviations of the sample rank */
static bool median_sampled_f64(double *v, size_t n, size_t ns, size_t hw, double *out)
{
    double smp[MEDIAN_SAMPLE];
    size_t step = n / ns;
    for (size_t i = 0; i < ns; i++)
        smp[i] = v[i * step + step / 2];
    double lo_p = mt_stats_kth_f64(smp, ns, ns / 2 - hw);
    double hi_p = mt_stats_kth_f64(smp, ns, ns / 2 + hw);
    size_t below = 0, m = 0;
    for (size_t i = 0; i < n; i++) {
        /* v[m..i) are all outside [lo_p, hi_p], so swapping v[i] with v[m]
         * always is harmless when v[i] is outside too */
        double x = v[i];
        below += x < lo_p;
        v[i] = v[m];
        v[m] = x;
        m += !(x < lo_p) & !(x > hi_p);
    }
    size_t k = n / 2; /* the upper middle; for even n also k - 1 */
    if (below + (n % 2 ? 0 : 1) > k || k >= below + m)
        return false;
    double hi = mt_stats_kth_f64(v, m, k - below);
    if (n % 2) {
        *out = hi;
        return true;
    }
    double lo = v[0]; /* the largest before position k - below (>= 1) */
    for (size_t i = 1; i < k - below; i++)
        lo = v[i] > lo ? v[i] : lo;
    *out = 0.5 * (lo + hi);
    return true;
}

double mt_stats_median_f64(double *v, size_t n)
{
    double med;
    if (n >= 4 * MEDIAN_SAMPLE ? median_sampled_f64(v, n, MEDIAN_SAMPLE, MEDIAN_SAMPLE_HALF_WIDTH, &med)
        : n >= 512             ? median_sampled_f64(v, n, 64, 12, &med)
                               : false)
        return med;
    MT_MEDIAN_BODY(double, mt_stats_kth_f64, 0.5 * (lo + hi))
}

int64_t mt_stats_median_i64(int64_t *v, size_t n)
{
    MT_MEDIAN_BODY(int64_t, mt_stats_kth_i64, (lo + hi) / 2)
}

static size_t nearest_rank(size_t n, int p)
{
    if (p < 1)
        p = 1;
    if (p > 100)
        p = 100;
    return ((size_t)p * n + 99) / 100 - 1; /* ceil(p * n / 100) - 1 */
}

int64_t mt_stats_pct_sorted(const int64_t *v, size_t n, int p)
{
    return n ? v[nearest_rank(n, p)] : 0;
}

int64_t mt_stats_pct_i64(int64_t *v, size_t n, int p)
{
    return n ? mt_stats_kth_i64(v, n, nearest_rank(n, p)) : 0;
}
