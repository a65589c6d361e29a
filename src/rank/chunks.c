/* The per-rank half of the pipeline analysis: the marker ranges of a
 * trace (ProfilerStep#N, a --chunk regex, --stage regexes) and the GPU
 * work launched inside each, point-to-point kernels left out (see
 * include/mergetrace/pipeline.h for the definitions). Also the markers
 * themselves: compiled regexes with the ranks they apply to. */
#include "rank/passes.h"
#include "trace/stepname.h"

#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mergetrace/classify.h"
#include "mergetrace/strtab.h"
#include "mergetrace/buf.h"
#include "base/bigmem.h"

typedef struct marker {
    int is_step;          /* the default: ProfilerStep#N */
    regex_t re;
    int32_t *ranks;       /* NULL: every rank */
    size_t n_ranks;
} marker_t;

struct mt_pp_markers {
    marker_t *m;
    size_t n;
};

void mt_pp_markers_free(mt_pp_markers_t *ms)
{
    if (!ms)
        return;
    for (size_t i = 0; i < ms->n; i++) {
        if (!ms->m[i].is_step)
            regfree(&ms->m[i].re);
        free(ms->m[i].ranks);
    }
    free(ms->m);
    free(ms);
}

size_t mt_pp_markers_count(const mt_pp_markers_t *m)
{
    return m ? m->n : 0;
}

static mt_status_t compile_one(marker_t *mk, const char *re, mt_error_t *err)
{
    int rc = regcomp(&mk->re, re, REG_EXTENDED | REG_NOSUB);
    if (rc) {
        char e[128];
        regerror(rc, &mk->re, e, sizeof e);
        mt_error_set(err, MT_ERR_USAGE, "bad regular expression \"%s\": %s", re, e);
        return MT_ERR_USAGE;
    }
    return MT_OK;
}

mt_status_t mt_pp_markers_compile(const char *chunk_regex, const char *const *stage_regexes, size_t n_stage,
                                  const int32_t *const *ranks_of_stage, const size_t *n_ranks_of_stage,
                                  mt_pp_markers_t **out, mt_error_t *err)
{
    *out = NULL;
    mt_pp_markers_t *ms = calloc(1, sizeof *ms);
    if (!ms)
        return MT_ERR_NOMEM;
    ms->m = calloc(1 + n_stage, sizeof *ms->m);
    if (!ms->m) {
        free(ms);
        return MT_ERR_NOMEM;
    }
    mt_status_t st = MT_OK;
    ms->m[0].is_step = chunk_regex == NULL;
    if (chunk_regex)
        st = compile_one(&ms->m[0], chunk_regex, err);
    if (st == MT_OK)
        ms->n = 1;
    for (size_t i = 0; i < n_stage && st == MT_OK; i++) {
        marker_t *mk = &ms->m[1 + i];
        st = compile_one(mk, stage_regexes[i], err);
        if (st != MT_OK)
            break;
        ms->n++;
        if (ranks_of_stage && ranks_of_stage[i] && n_ranks_of_stage[i]) {
            mk->ranks = malloc(n_ranks_of_stage[i] * sizeof *mk->ranks);
            if (!mk->ranks) {
                st = MT_ERR_NOMEM;
                break;
            }
            memcpy(mk->ranks, ranks_of_stage[i], n_ranks_of_stage[i] * sizeof *mk->ranks);
            mk->n_ranks = n_ranks_of_stage[i];
        }
    }
    if (st != MT_OK) {
        mt_pp_markers_free(ms);
        return st;
    }
    *out = ms;
    return MT_OK;
}

static int marker_has_rank(const marker_t *mk, int32_t rank)
{
    if (!mk->ranks)
        return 1;
    size_t lo = 0, hi = mk->n_ranks;
    while (lo < hi) {
        size_t m = lo + (hi - lo) / 2;
        if (mk->ranks[m] == rank)
            return 1;
        if (mk->ranks[m] < rank)
            lo = m + 1;
        else
            hi = m;
    }
    return 0;
}

/* The number after the last '#' when only 1..18 digits follow it, else -1. */
static int64_t key_of(const char *s, size_t len)
{
    size_t h = len;
    while (h > 0 && s[h - 1] != '#')
        h--;
    if (!h || h == len || len - h > 18)
        return -1;
    int64_t v = 0;
    for (size_t k = h; k < len; k++) {
        if ((unsigned)(s[k] - '0') > 9)
            return -1;
        v = v * 10 + (s[k] - '0');
    }
    return v;
}

/* A launch: its thread, call start, and the activity (index into acts). */
typedef struct lrec {
    int64_t pid, tid, ts;
    uint32_t flags, act;
} lrec_t;

/* A P2P-or-not verdict of a collective row, keyed by its kernel. */
typedef struct rkey {
    int64_t start, end, stream;
    int p2p;
} rkey_t;

static int rkey_cmp(const void *pa, const void *pb)
{
    const rkey_t *a = pa, *b = pb;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    if (a->stream != b->stream)
        return a->stream < b->stream ? -1 : 1;
    return (a->end > b->end) - (a->end < b->end);
}

static int kind_is_p2p(int k)
{
    return k == MT_COLLK_SEND || k == MT_COLLK_RECV || k == MT_COLLK_SENDRECV;
}

/* Sort keys of a thread's pid and tid: a string pid or tid (a strtab id)
 * never equals a numeric one, so the flag goes into the key. */
static uint64_t pid_key(int64_t pid, uint32_t flags)
{
    return mt_sort_key_i64(pid) ^ ((uint64_t)(flags & MT_EV_PID_STR ? 1 : 0) << 62);
}

static uint64_t tid_key(int64_t tid, uint32_t flags)
{
    return mt_sort_key_i64(tid) ^ ((uint64_t)(flags & MT_EV_TID_STR ? 1 : 0) << 62);
}

/* Sort launches by (pid, [tid,] ts) with the stable radix sort;
 * by_thread = 0 groups a whole process's launches. */
static mt_status_t sort_launches(lrec_t *l, size_t n, int by_thread, uint64_t *key, uint32_t *perm)
{
    for (size_t i = 0; i < n; i++) {
        perm[i] = (uint32_t)i;
        key[i] = mt_sort_key_i64(l[i].ts);
    }
    if (mt_sort_u64(key, perm, n))
        return MT_ERR_NOMEM;
    if (by_thread) {
        for (size_t i = 0; i < n; i++)
            key[i] = tid_key(l[perm[i]].tid, l[perm[i]].flags);
        if (mt_sort_u64(key, perm, n))
            return MT_ERR_NOMEM;
    }
    for (size_t i = 0; i < n; i++)
        key[i] = pid_key(l[perm[i]].pid, l[perm[i]].flags);
    if (mt_sort_u64(key, perm, n))
        return MT_ERR_NOMEM;
    mt_sort_permute(l, sizeof *l, perm, n);
    return MT_OK;
}

/* Compare a launch's thread (or process) with a range's, in the order of
 * sort_launches. */
static int thread_cmp(const lrec_t *a, int64_t pid, int64_t tid, uint32_t flags, int by_thread)
{
    uint64_t x = pid_key(a->pid, a->flags), y = pid_key(pid, flags);
    if (x != y)
        return x < y ? -1 : 1;
    if (!by_thread)
        return 0;
    x = tid_key(a->tid, a->flags);
    y = tid_key(tid, flags);
    if (x != y)
        return x < y ? -1 : 1;
    return 0;
}

/* [*i, *j): the launches of the range's thread (or process) with call
 * start in [ts, end]. The order is (pid flag, pid, tid flag, tid, ts),
 * matching sort_launches. */
static void find_launches(const lrec_t *l, size_t n, int64_t pid, int64_t tid, uint32_t flags, int by_thread,
                          int64_t ts, int64_t end, size_t *i, size_t *j)
{
    size_t lo = 0, hi = n;
    while (lo < hi) { /* first launch not before (thread, ts) */
        size_t m = lo + (hi - lo) / 2;
        int c = thread_cmp(&l[m], pid, tid, flags, by_thread);
        if (c < 0 || (c == 0 && l[m].ts < ts))
            lo = m + 1;
        else
            hi = m;
    }
    *i = lo;
    hi = n;
    while (lo < hi) { /* first launch after (thread, end) */
        size_t m = lo + (hi - lo) / 2;
        int c = thread_cmp(&l[m], pid, tid, flags, by_thread);
        if (c < 0 || (c == 0 && l[m].ts <= end))
            lo = m + 1;
        else
            hi = m;
    }
    *j = lo;
}

static int chunk_cmp(const void *pa, const void *pb)
{
    const mt_pp_chunk_t *a = pa, *b = pb;
    if (a->marker != b->marker)
        return a->marker < b->marker ? -1 : 1;
    if (a->cpu_start_ns != b->cpu_start_ns)
        return a->cpu_start_ns < b->cpu_start_ns ? -1 : 1;
    return (a->cpu_end_ns > b->cpu_end_ns) - (a->cpu_end_ns < b->cpu_end_ns);
}

mt_status_t mt_an_chunks(const mt_an_input_t *in, mt_rank_analysis_t *a)
{
    a->chunks = NULL;
    a->n_chunks = 0;
    const mt_pp_markers_t *ms = in->o->markers;
    if (!ms || !ms->n || !in->n_ranges)
        return MT_OK;
    const mt_trace_t *t = in->t;
    size_t nm = ms->n, na = in->n_acts;
    uint32_t n_names = mt_strtab_count(t->strings);
    mt_status_t st = MT_ERR_NOMEM;
    unsigned char *match = NULL, *p2p_name = NULL, *is_p2p = NULL;
    lrec_t *lt = NULL, *lp = NULL;
    uint64_t *key = NULL;
    uint32_t *perm = NULL;
    rkey_t *rk = NULL;
    mt_interval_t *work = NULL, *p2p = NULL;
    char *nbuf = NULL;
    size_t nbuf_cap = 0, cap_c = 0, nrk = 0;

    int any = 0;
    for (size_t m = 0; m < nm; m++)
        any |= marker_has_rank(&ms->m[m], a->rank);
    if (!any)
        return MT_OK;

    /* Which activities are point-to-point: by the collective record of the
     * kernel when the rank has one (an all_to_all runs as SendRecv kernels
     * but is a collective), else by the kernel name. */
    is_p2p = mt_big_calloc(na ? na : 1, 1);
    p2p_name = calloc(n_names ? n_names : 1, 1); /* 0 unknown, 1 no, 2 yes */
    if (!is_p2p || !p2p_name)
        goto out;
    if (in->o->rows && in->o->n_rows) {
        rk = mt_big_malloc(in->o->n_rows * sizeof *rk);
        if (!rk)
            goto out;
        for (size_t i = 0; i < in->o->n_rows; i++) {
            const mt_cinst_t *r = &in->o->rows[i];
            if (r->rank == a->rank)
                rk[nrk++] = (rkey_t){r->start_ns, r->end_ns, r->stream, kind_is_p2p(r->kind)};
        }
        qsort(rk, nrk, sizeof *rk, rkey_cmp);
    }
    for (size_t i = 0; i < na; i++) {
        const mt_gpu_act_t *x = &in->acts[i];
        if (x->cls != MT_CLASS_COMM)
            continue;
        rkey_t q = {x->start_ns, x->end_ns, x->stream, 0};
        const rkey_t *hit = nrk ? bsearch(&q, rk, nrk, sizeof *rk, rkey_cmp) : NULL;
        if (hit) {
            is_p2p[i] = (unsigned char)hit->p2p;
            continue;
        }
        if (x->name < n_names) {
            if (!p2p_name[x->name]) {
                size_t len;
                const char *s = mt_strtab_get(t->strings, x->name, &len);
                mt_nccl_name_t dn;
                p2p_name[x->name] = (unsigned char)(mt_nccl_decode(s, len, &dn) && kind_is_p2p(dn.kind) ? 2 : 1);
            }
            is_p2p[i] = p2p_name[x->name] == 2;
        }
    }

    /* Launches, by thread and by process. */
    lt = mt_big_malloc((na ? na : 1) * sizeof *lt);
    lp = mt_big_malloc((na ? na : 1) * sizeof *lp);
    key = mt_big_malloc((na ? na : 1) * sizeof *key);
    perm = mt_big_malloc((na ? na : 1) * sizeof *perm);
    match = calloc((size_t)(n_names ? n_names : 1) * nm, 1); /* per name and marker: 0 unknown, 1 no, 2 yes */
    if (!lt || !lp || !key || !perm || !match)
        goto out;
    size_t nl = 0;
    for (size_t i = 0; i < na; i++) {
        const mt_gpu_act_t *x = &in->acts[i];
        if (x->launch)
            lt[nl++] = (lrec_t){mt_act_launch_pid(in, x), mt_act_launch_tid(in, x), x->launch_ns, x->launch_flags,
                                (uint32_t)i};
    }
    memcpy(lp, lt, nl * sizeof *lt);
    if (sort_launches(lt, nl, 1, key, perm) || sort_launches(lp, nl, 0, key, perm))
        goto out;

    size_t cap_w = 0, cap_p = 0;
    for (size_t k = 0; k < in->n_ranges; k++) {
        const mt_event_t *e = &t->events[in->ranges[k]];
        if (e->ph != MT_PH_X)
            continue;
        size_t len = 0;
        const char *s = NULL;
        for (size_t m = 0; m < nm; m++) {
            const marker_t *mk = &ms->m[m];
            if (!marker_has_rank(mk, a->rank))
                continue;
            unsigned char *c = e->name < n_names ? &match[(size_t)e->name * nm + m] : NULL;
            int yes;
            if (c && *c) {
                yes = *c == 2;
            } else {
                if (!s)
                    s = mt_strtab_get(t->strings, e->name, &len);
                if (mk->is_step) {
                    yes = mt_step_name_num(s, len) >= 0;
                } else {
                    if (len + 1 > nbuf_cap) {
                        char *b = realloc(nbuf, len + 1);
                        if (!b)
                            goto out;
                        nbuf = b;
                        nbuf_cap = len + 1;
                    }
                    memcpy(nbuf, s, len);
                    nbuf[len] = '\0';
                    yes = regexec(&mk->re, nbuf, 0, NULL, 0) == 0;
                }
                if (c)
                    *c = (unsigned char)(yes ? 2 : 1);
            }
            if (!yes)
                continue;
            if (!s)
                s = mt_strtab_get(t->strings, e->name, &len);
            /* The work of this range. */
            int by_thread = !mk->is_step;
            const lrec_t *l = by_thread ? lt : lp;
            size_t i, j;
            find_launches(l, nl, mt_event_pid(t, e), mt_event_tid(t, e), e->flags, by_thread, e->ts, e->ts + e->dur,
                          &i, &j);
            if (j - i > cap_w) {
                mt_interval_t *w = mt_big_realloc(work, (j - i) * sizeof *w);
                if (!w)
                    goto out;
                work = w;
                cap_w = j - i;
            }
            if (j - i > cap_p) {
                mt_interval_t *w = mt_big_realloc(p2p, (j - i) * sizeof *w);
                if (!w)
                    goto out;
                p2p = w;
                cap_p = j - i;
            }
            size_t nw = 0, np = 0;
            int64_t first = 0, last = 0;
            for (size_t x = i; x < j; x++) {
                const mt_gpu_act_t *g = &in->acts[l[x].act];
                if (is_p2p[l[x].act]) {
                    p2p[np++] = (mt_interval_t){g->start_ns, g->end_ns};
                    continue;
                }
                if (!nw || g->start_ns < first)
                    first = g->start_ns;
                if (!nw || g->end_ns > last)
                    last = g->end_ns;
                work[nw++] = (mt_interval_t){g->start_ns, g->end_ns};
            }
            uint32_t acts = (uint32_t)nw;
            if (mt_iv_union(work, &nw) || mt_iv_union(p2p, &np))
                goto out;
            if (MT_GROW(a->chunks, cap_c, a->n_chunks + 1, 64))
                goto out;
            a->chunks[a->n_chunks++] = (mt_pp_chunk_t){.key = key_of(s, len),
                                                       .cpu_start_ns = e->ts,
                                                       .cpu_end_ns = e->ts + e->dur,
                                                       .busy_ns = mt_iv_measure(work, nw),
                                                       .first_ns = first,
                                                       .last_ns = last,
                                                       .p2p_ns = mt_iv_measure(p2p, np),
                                                       .marker = (uint32_t)m,
                                                       .acts = acts};
        }
    }
    if (a->n_chunks > 1)
        qsort(a->chunks, a->n_chunks, sizeof *a->chunks, chunk_cmp);
    for (size_t c = 0; c < a->n_chunks; c++)
        a->chunks[c].ordinal = c && a->chunks[c - 1].marker == a->chunks[c].marker ? a->chunks[c - 1].ordinal + 1 : 0;
    st = MT_OK;
out:
    if (st != MT_OK) {
        free(a->chunks);
        a->chunks = NULL;
        a->n_chunks = 0;
    }
    free(match);
    free(p2p_name);
    free(is_p2p);
    free(lt);
    free(lp);
    free(key);
    free(perm);
    free(rk);
    free(work);
    free(p2p);
    free(nbuf);
    return st;
}
