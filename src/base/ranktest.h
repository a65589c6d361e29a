/* The two-sample Mann-Whitney U test (Wilcoxon rank-sum): do two sets of
 * samples come from distributions of the same location? Used by the run
 * comparison (report/compare.c) on the per-step values of two runs. */
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

#endif
