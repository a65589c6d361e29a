/* Half-open time intervals: union, measure and overlap of sorted lists. */
#ifndef MT_BASE_INTERVAL_H
#define MT_BASE_INTERVAL_H

#include <stddef.h>
#include <stdint.h>

#include "mergetrace/status.h"

/* A half-open time interval [start, end) in ns. */
typedef struct mt_interval {
    int64_t start, end;
} mt_interval_t;

/* Sort iv[0..*n) by start and merge overlapping or touching intervals in
 * place, dropping empty ones; *n gets the new count. MT_OK or MT_ERR_NOMEM
 * (iv and *n unchanged then). */
mt_status_t mt_iv_union(mt_interval_t *iv, size_t *n);
/* Merge intervals already sorted by start in place (as mt_iv_union without
 * the sort); returns the new count. */
size_t mt_iv_merge_sorted(mt_interval_t *iv, size_t n);
/* The union of two sorted disjoint lists, a[0..na) and b[0..nb), into
 * out (room for na + nb), sorted and disjoint; returns its count. One merge
 * pass, no sort: the per-rank passes join the compute and comm unions. */
size_t mt_iv_union2(const mt_interval_t *a, size_t na, const mt_interval_t *b, size_t nb, mt_interval_t *out);
/* Total length of sorted disjoint intervals. */
int64_t mt_iv_measure(const mt_interval_t *iv, size_t n);
/* |a n b| of two sorted disjoint lists. */
int64_t mt_iv_overlap(const mt_interval_t *a, size_t na, const mt_interval_t *b, size_t nb);

/* The range holding t among n records of `size` bytes sorted by start
 * (int64 ns at byte offset start_off; end at end_off; usually disjoint):
 * among the last four starting at or before t, the latest whose end is not
 * before t; -1 none. *hint: the previous call's search position (the first
 * record starting after t), tried with the next one before a binary
 * search, since callers ask in nearly increasing t; it gets the new one,
 * unless it is SIZE_MAX (records not sorted by start: always the search).
 * The per-rank steps of an activity (rank/steps.c) and of the graph's
 * activities and syncs (cross/critpath.c). */
long mt_iv_find_hint(const void *base, size_t n, size_t size, size_t start_off, size_t end_off, int64_t t,
                     size_t *hint);

#endif
