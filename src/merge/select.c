/* What the merged trace selects (merge.h, mt_select_*): --window in
 * corrected time, from seconds after the job's start or from ProfilerStep
 * numbers, and a --ranks or --window that selects nothing of the job told
 * apart with what there is, for the program to say. */
#include "mergetrace/merge.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool mt_select_window(const mt_select_rank_t *r, size_t n, bool by_steps, double lo, double hi,
                      const mt_step_t *steps, size_t n_steps, int64_t *a, int64_t *b)
{
    if (!by_steps) {
        int64_t start = INT64_MAX;
        for (size_t i = 0; i < n; i++)
            if (r[i].events) {
                int64_t s = mt_clock_apply(r[i].clock, r[i].first_ns);
                start = s < start ? s : start;
            }
        if (start == INT64_MAX)
            start = 0;
        *a = start + (int64_t)llround(lo * 1e9);
        *b = start + (int64_t)llround(hi * 1e9);
        return true;
    }
    int64_t first = INT64_MAX, last = INT64_MIN;
    for (size_t i = 0; i < n_steps; i++) {
        const mt_step_t *s = &steps[i];
        if ((double)s->step < lo || (double)s->step > hi)
            continue;
        const mt_clock_t *c = NULL; /* none: the identity */
        for (size_t k = 0; k < n; k++)
            if (r[k].rank == s->rank)
                c = r[k].clock;
        int64_t x = mt_clock_apply(c, s->start_ns), y = mt_clock_apply(c, s->end_ns);
        first = x < first ? x : first;
        last = y > last ? y : last;
    }
    if (first > last)
        return false;
    *a = first;
    *b = last;
    return true;
}

/* "0-7", "0-3, 5, 8-9": the sorted ranks r[0..n) as ranges, cut with
 * "..." to fit cap. */
static void rank_ranges(char *b, size_t cap, const int64_t *r, size_t n)
{
    size_t w = 0;
    b[0] = '\0';
    for (size_t i = 0; i < n && w + 1 < cap; i++) {
        size_t k = i;
        while (k + 1 < n && r[k + 1] == r[k] + 1)
            k++;
        int len = k > i ? snprintf(b + w, cap - w, "%s%lld-%lld", i ? ", " : "", (long long)r[i], (long long)r[k])
                        : snprintf(b + w, cap - w, "%s%lld", i ? ", " : "", (long long)r[i]);
        if (len < 0 || (size_t)len >= cap - w) {
            snprintf(b + (cap > 4 ? cap - 4 : 0), cap > 4 ? 4 : cap, "...");
            return;
        }
        w += (size_t)len;
        i = k;
    }
}

mt_select_empty_t mt_select_check(const mt_select_rank_t *r, size_t n, const int32_t *want, size_t n_want,
                                  const int64_t *win, char *ranks, size_t cap, size_t *n_ranks, int64_t *span_ns)
{
    int64_t *have = malloc((n ? n : 1) * sizeof *have);
    size_t nh = 0;
    bool hit = want == NULL;
    int64_t first = INT64_MAX, last = INT64_MIN;
    for (size_t i = 0; have && i < n; i++) {
        if (r[i].nccl)
            continue; /* NCCL plugin files are not part of the merged trace */
        have[nh++] = r[i].rank;
        for (size_t k = 0; k < n_want; k++)
            hit |= want[k] == r[i].rank;
        if (r[i].events) {
            int64_t a = mt_clock_apply(r[i].clock, r[i].first_ns);
            int64_t b = mt_clock_apply(r[i].clock, r[i].last_ns);
            first = a < first ? a : first;
            last = b > last ? b : last;
        }
    }
    mt_select_empty_t e = MT_SELECT_SOME; /* no trace: nothing to say it against, the merged trace says it */
    if (have && nh && !hit) {
        rank_ranges(ranks, cap, have, nh);
        *n_ranks = nh;
        e = MT_SELECT_NO_RANK;
    } else if (have && nh && win && first <= last && (win[0] > last || win[1] < first)) {
        *span_ns = last - first;
        e = MT_SELECT_NO_TIME;
    }
    free(have);
    return e;
}

int mt_select_window_parse(const char *s, bool *steps, double *a, double *b, char *msg, size_t cap)
{
    const char *colon = strchr(s, ':');
    if (!colon) {
        snprintf(msg, cap, "expected START:END (seconds) or #A:#B (ProfilerStep numbers)");
        return -1;
    }
    *steps = s[0] == '#';
    char *e;
    const char *p = s + *steps;
    errno = 0;
    *a = strtod(p, &e);
    if (e == p || e != colon || errno || !isfinite(*a)) {
        snprintf(msg, cap, "expected a number before ':'");
        return -1;
    }
    p = colon + 1;
    if (*steps) {
        if (*p != '#') {
            snprintf(msg, cap, "expected #A:#B (ProfilerStep numbers)");
            return -1;
        }
        p++;
    }
    *b = strtod(p, &e);
    if (e == p || *e || errno || !isfinite(*b)) {
        snprintf(msg, cap, "expected a number after ':'");
        return -1;
    }
    if (*b < *a || *a < 0) {
        snprintf(msg, cap, "expected 0 <= START <= END");
        return -1;
    }
    if (*steps && (*a != floor(*a) || *b != floor(*b))) {
        snprintf(msg, cap, "ProfilerStep numbers are integers");
        return -1;
    }
    return 0;
}

bool mt_select_check_text(const mt_select_rank_t *r, size_t n, const int32_t *want, size_t n_want, const int64_t *win,
                          const char *ranks_arg, const char *window_arg, bool by_steps, char *msg, size_t cap)
{
    char list[256];
    size_t nr = 0;
    int64_t span = 0;
    mt_select_empty_t e = mt_select_check(r, n, want, n_want, win, list, sizeof list, &nr, &span);
    msg[0] = '\0';
    if (e == MT_SELECT_NO_RANK)
        snprintf(msg, cap, "--ranks %s: selects no rank of this job; its traces are of rank%s %s", ranks_arg,
                 nr > 1 ? "s" : "", list);
    else if (e == MT_SELECT_NO_TIME && by_steps)
        snprintf(msg, cap, "--window %s: selects nothing", window_arg);
    else if (e == MT_SELECT_NO_TIME)
        snprintf(msg, cap, "--window %s: selects nothing; the job spans 0 to %.6f s from its start", window_arg,
                 (double)span / 1e9);
    return e != MT_SELECT_SOME;
}
