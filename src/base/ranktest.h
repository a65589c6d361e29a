/* Rank tests: the two-sample Mann-Whitney U test (Wilcoxon rank-sum): do
 * two sets of samples come from distributions of the same location? Used
 * by the run comparison (report/compare.c) on the per-step values of two
 * runs; and the Mann-Kendall trend test (are a run's steps steady?). */
#ifndef MT_BASE_RANKTEST_H
#define MT_BASE_RANKTEST_H

#include <stdbool.h>
#include <stddef.h>

typedef struct mt_mwu {
    double u;      /* U of the first sample: pairs (a_i, b_j) with a_i > b_j, ties counting 1/2 */
    double z;      /* normal score (0 for the exact test) */
    double p;      /* two-sided p-value, in [0, 1] */
    bool exact;    /* p from the exact distribution of U (no ties, both samples <= 20) */
} mt_mwu_t;

/* Two-sided Mann-Whitney U of a[0..na) against b[0..nb). Exact when there
 * are no ties and na, nb <= 20 (the permutation distribution of U counted
 * by recurrence, p = min(1, 2 P(U <= min(U, na nb - U)))); else the normal
 * approximation with the tie correction of the variance and a continuity
 * correction of 1/2. na or nb = 0 gives p = 1. Returns false only when
 * memory runs out. The inputs are not changed. */
bool mt_mwu_test(const double *a, size_t na, const double *b, size_t nb, mt_mwu_t *out);

/* The Mann-Kendall trend test of x[0..n) in time order: S = sum over i < j
 * of sign(x_j - x_i) (> 0: rising), two-sided p from the normal
 * approximation, Var S = n (n - 1) (2n + 5) / 18 (ties not corrected),
 * continuity correction 1. n < 3 gives S = 0, p = 1. */
void mt_mk_trend(const double *x, size_t n, double *s, double *p);

#endif
