/* The Mann-Whitney U and Mann-Kendall tests (see ranktest.h). */
#include "base/ranktest.h"

#include <math.h>
#include <stdlib.h>

typedef struct tagged {
    double v;
    int from_a;
} tagged_t;

static int cmp_tagged(const void *x, const void *y)
{
    double a = ((const tagged_t *)x)->v, b = ((const tagged_t *)y)->v;
    return (a > b) - (a < b);
}

/* P(U <= u) for samples of sizes m, n without ties: the number of orderings
 * with U = k follows c(m, n, k) = c(m - 1, n, k - n) + c(m, n - 1, k)
 * (the largest value is from the first sample, or from the second), over
 * C(m + n, m) equally likely orderings. */
static double exact_cdf(size_t m, size_t n, size_t u)
{
    size_t umax = m * n;
    /* c[i][k] for the current n; rolled over n */
    double *prev = calloc((m + 1) * (umax + 1), sizeof *prev);
    double *cur = calloc((m + 1) * (umax + 1), sizeof *cur);
    if (!prev || !cur) {
        free(prev);
        free(cur);
        return -1;
    }
#define C(t, i, k) (t)[(i) * (umax + 1) + (k)]
    for (size_t i = 0; i <= m; i++)
        C(prev, i, 0) = 1; /* n = 0: one ordering, U = 0 */
    for (size_t j = 1; j <= n; j++) {
        for (size_t i = 0; i <= m; i++)
            for (size_t k = 0; k <= umax; k++) {
                double x = C(prev, i, k); /* the largest is from b: c(i, j - 1, k) */
                if (i > 0 && k >= j)
                    x += C(cur, i - 1, k - j); /* from a: it beats all j of b */
                C(cur, i, k) = x;
            }
        double *t = prev;
        prev = cur;
        cur = t;
    }
    double below = 0, total = 0;
    for (size_t k = 0; k <= umax; k++) {
        total += C(prev, m, k);
        if (k <= u)
            below += C(prev, m, k);
    }
#undef C
    free(prev);
    free(cur);
    return below / total;
}

bool mt_mwu_test(const double *a, size_t na, const double *b, size_t nb, mt_mwu_t *out)
{
    *out = (mt_mwu_t){.u = 0, .z = 0, .p = 1, .exact = false};
    if (na == 0 || nb == 0)
        return true;
    size_t n = na + nb;
    tagged_t *t = malloc(n * sizeof *t);
    if (!t)
        return false;
    for (size_t i = 0; i < na; i++)
        t[i] = (tagged_t){a[i], 1};
    for (size_t i = 0; i < nb; i++)
        t[na + i] = (tagged_t){b[i], 0};
    qsort(t, n, sizeof *t, cmp_tagged);
    /* rank sum of a with mid-ranks for ties; sum of t^3 - t over tie groups */
    double ra = 0, ties = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && t[j].v == t[i].v)
            j++;
        double mid = (double)(i + 1 + j) / 2.0; /* ranks i+1 .. j */
        for (size_t k = i; k < j; k++)
            if (t[k].from_a)
                ra += mid;
        double g = (double)(j - i);
        ties += g * g * g - g;
        i = j;
    }
    free(t);
    double m1 = (double)na, m2 = (double)nb, N = (double)n;
    double u = ra - m1 * (m1 + 1) / 2;
    out->u = u;
    double mu = m1 * m2 / 2;
    if (ties == 0 && na <= 20 && nb <= 20) {
        double lo = u < m1 * m2 - u ? u : m1 * m2 - u;
        double c = exact_cdf(na, nb, (size_t)lo);
        if (c < 0)
            return false;
        out->p = fmin(1.0, 2 * c);
        out->exact = true;
        return true;
    }
    double var = m1 * m2 / 12 * ((N + 1) - ties / (N * (N - 1)));
    if (var <= 0) { /* every value equal */
        out->p = 1;
        return true;
    }
    double d = fabs(u - mu) - 0.5;
    if (d < 0)
        d = 0;
    double z = d / sqrt(var);
    out->z = u >= mu ? z : -z;
    out->p = fmin(1.0, erfc(z / sqrt(2.0)));
    return true;
}

void mt_mk_trend(const double *x, size_t n, double *s, double *p)
{
    double S = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            S += (x[j] > x[i]) - (x[j] < x[i]);
    *s = S;
    *p = 1;
    if (n < 3 || S == 0)
        return;
    double N = (double)n, var = N * (N - 1) * (2 * N + 5) / 18;
    double z = (fabs(S) - 1) / sqrt(var);
    *p = fmin(1.0, erfc(z / sqrt(2.0)));
}
