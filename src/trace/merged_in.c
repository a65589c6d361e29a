/* mergetrace's own merged trace read back (loader.h): the list of ranks it
 * holds (the "<file>#rank<R>" names of its ranks are src/trace/rank.c's).
 * The loader keeps only the named rank's pids (src/trace/loader.c,
 * parser_t.part_rank). */
#define _POSIX_C_SOURCE 200809L
#include "mergetrace/loader.h"
#include "base/sort.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mergetrace/buf.h"

typedef struct rank_scan {
    int32_t *v;
    size_t n, cap;
    int32_t last;
    mt_status_t st;
} rank_scan_t;

static mt_status_t scan_event(void *ctx, const mt_trace_t *t, const mt_event_t *ev, const mt_raw_event_t *raw,
                              mt_error_t *err)
{
    rank_scan_t *s = ctx;
    const int64_t pid = mt_event_pid(t, ev);
    if (ev->ph == MT_PH_M || !raw->pid_len || (ev->flags & MT_EV_PID_STR) || pid < MT_MERGE_PIDS_PER_RANK ||
        pid / MT_MERGE_PIDS_PER_RANK - 1 > INT32_MAX)
        return MT_OK;
    int32_t r = (int32_t)(pid / MT_MERGE_PIDS_PER_RANK - 1);
    if (s->n && r == s->last) /* a rank's events come together: one entry per run */
        return MT_OK;
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i] == r)
            return mt_error_set(err, MT_ERR_FORMAT,
                                "rank %d's events are not together (as mergetrace writes a merged trace, and as "
                                "reading one rank of it needs)",
                                (int)r);
    if (MT_GROW(s->v, s->cap, s->n + 1, 64))
        return MT_ERR_NOMEM;
    s->v[s->n++] = s->last = r;
    return MT_OK;
}

mt_status_t mt_merged_ranks(const char *path, int32_t **ranks, size_t *n, mt_error_t *err)
{
    *ranks = NULL;
    *n = 0;
    rank_scan_t s = {0};
    mt_load_opts_t lo;
    mt_load_opts_init(&lo);
    lo.no_store = true;
    lo.no_classify = true;
    lo.no_link = true;
    lo.skim_args = true; /* only the pids are needed */
    lo.on_event = scan_event;
    lo.on_event_ctx = &s;
    mt_trace_t *t = NULL;
    mt_status_t st = mt_trace_load(path, &lo, &t, err);
    mt_trace_free(t);
    if (st != MT_OK) {
        free(s.v);
        return st;
    }
    if (s.n)
        qsort(s.v, s.n, sizeof *s.v, mt_cmp_i32);
    *ranks = s.v;
    *n = s.n;
    return MT_OK;
}
