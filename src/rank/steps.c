/* The per-rank steps (ProfilerStep windows with their GPU time breakdown)
 * and the compact graph summary the cross-rank critical path needs: every
 * GPU activity with its stream, class, launch call and name, and the host
 * synchronisation calls (analysis.h "steps", "graph"), and each
 * activity's annotation. */
#include "rank/passes.h"
#include "base/bigmem.h"
#include "base/interval.h"
#include "mergetrace/summary.h"
#include "trace/stepname.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* Prefix sums of a sorted disjoint interval list, for |U n [a, b)| in
 * O(log n). */
typedef struct ivsum {
    const mt_interval_t *iv;
    int64_t *pre; /* pre[i] = measure of iv[0..i) */
    size_t n;
} ivsum_t;

static int ivsum_init(ivsum_t *s, const mt_interval_t *iv, size_t n)
{
    s->iv = iv;
    s->n = n;
    s->pre = malloc((n + 1) * sizeof *s->pre);
    if (!s->pre)
        return -1;
    s->pre[0] = 0;
    for (size_t i = 0; i < n; i++)
        s->pre[i + 1] = s->pre[i] + (iv[i].end - iv[i].start);
    return 0;
}

/* Measure of the part of the intervals before t. */
static int64_t ivsum_before(const ivsum_t *s, int64_t t)
{
    size_t lo = 0, hi = s->n; /* first interval with end > t */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->iv[mid].end > t)
            hi = mid;
        else
            lo = mid + 1;
    }
    int64_t m = s->pre[lo];
    if (lo < s->n && s->iv[lo].start < t)
        m += t - s->iv[lo].start;
    return m;
}

static int64_t ivsum_in(const ivsum_t *s, int64_t a, int64_t b)
{
    return b > a ? ivsum_before(s, b) - ivsum_before(s, a) : 0;
}

static int step_cmp(const void *pa, const void *pb)
{
    const mt_step_t *a = pa, *b = pb;
    if (a->start_ns != b->start_ns)
        return a->start_ns < b->start_ns ? -1 : 1;
    return (a->end_ns > b->end_ns) - (a->end_ns < b->end_ns);
}

/* The step whose range holds t (mt_iv_find_hint): the activities come by
 * start, so the search is mostly skipped. */
static long find_step(const mt_step_t *s, size_t n, int64_t t, size_t *hint)
{
    return mt_iv_find_hint(s, n, sizeof *s, offsetof(mt_step_t, start_ns), offsetof(mt_step_t, end_ns), t, hint);
}

/* ---- annotations of the graph's activities (analysis.h "graph") ----
 * A sweep per process over its user_annotation ranges and its launches,
 * both by time, with a heap of the ranges opened so far ordered by latest
 * start, then earliest end: its top is the innermost open range. Queries
 * come in time order, so a top that ended before the current launch ended
 * before every later one too and is dropped for good. O((n + r) log r) for
 * n launches and r ranges. */

typedef struct arange {
    int64_t pid;
    int64_t ts, end;
    uint32_t pflag;      /* MT_EV_PID_STR of the range */
    uint32_t name;       /* strtab id */
} arange_t;

typedef struct aquery {
    int64_t pid, ts;
    uint32_t pflag;
    uint32_t act;        /* index into a->gacts */
} aquery_t;

static int arange_cmp(const void *pa, const void *pb)
{
    const arange_t *a = pa, *b = pb;
    if (a->pflag != b->pflag)
        return a->pflag < b->pflag ? -1 : 1;
    if (a->pid != b->pid)
        return a->pid < b->pid ? -1 : 1;
    return (a->ts > b->ts) - (a->ts < b->ts);
}

static int aquery_cmp(const void *pa, const void *pb)
{
    const aquery_t *a = pa, *b = pb;
    if (a->pflag != b->pflag)
        return a->pflag < b->pflag ? -1 : 1;
    if (a->pid != b->pid)
        return a->pid < b->pid ? -1 : 1;
    if (a->ts != b->ts)
        return a->ts < b->ts ? -1 : 1;
    return (a->act > b->act) - (a->act < b->act);
}

/* Heap order: x above y when x starts later, or as late and ends sooner. */
static int inner(const arange_t *x, const arange_t *y)
{
    return x->ts > y->ts || (x->ts == y->ts && x->end < y->end);
}

static void heap_push(const arange_t *r, uint32_t *h, size_t *n, uint32_t v)
{
    size_t i = (*n)++;
    while (i > 0 && inner(&r[v], &r[h[(i - 1) / 2]])) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = v;
}

static void heap_pop(const arange_t *r, uint32_t *h, size_t *n)
{
    uint32_t v = h[--*n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && inner(&r[h[c + 1]], &r[h[c]]))
            c++;
        if (!inner(&r[h[c]], &r[v]))
            break;
        h[i] = h[c];
        i = c;
    }
    if (*n)
        h[i] = v;
}

/* Order v[0..n) (elements of `size` bytes) by cmp: when all are of one
 * process (one_proc), by the keys the caller put in key[] (their times)
 * with the stable radix sort, since qsort's calls to cmp were most of this
 * pass's cost (2.1 of its 2.7 M instructions on a generated 8-rank job);
 * else with qsort. perm holds n entries. 0 or -1 out of memory. */
static int sort_by_time(void *v, size_t n, size_t size, bool one_proc, uint64_t *key, uint32_t *perm,
                        int (*cmp)(const void *, const void *))
{
    if (!one_proc) {
        qsort(v, n, size, cmp);
        return 0;
    }
    for (size_t i = 0; i < n; i++)
        perm[i] = (uint32_t)i;
    if (mt_sort_u64(key, perm, n))
        return -1;
    mt_sort_permute(v, size, perm, n);
    return 0;
}

/* Set a->gacts[*].annot and a->annots. */
static mt_status_t annotate(const mt_an_input_t *in, mt_rank_analysis_t *a)
{
    const mt_trace_t *t = in->t;
    uint32_t n_names = mt_strtab_count(t->strings);
    mt_status_t st = MT_ERR_NOMEM;
    size_t nr = 0, nq = 0, nh = 0, cap = 0;
    uint64_t *key = NULL;
    uint32_t *perm = NULL;
    arange_t *r = malloc((in->n_ranges ? in->n_ranges : 1) * sizeof *r);
    aquery_t *q = mt_big_malloc((in->n_acts ? in->n_acts : 1) * sizeof *q);
    uint32_t *h = malloc((in->n_ranges ? in->n_ranges : 1) * sizeof *h);
    uint32_t *id = calloc(n_names ? n_names : 1, sizeof *id); /* per strtab id: annot, 0 not yet, UINT32_MAX left out */
    if (!r || !q || !h || !id)
        goto out;
    for (size_t i = 0; i < in->n_ranges; i++) {
        const mt_event_t *e = &t->events[in->ranges[i]];
        if (mt_cat_normal((mt_cat_t)e->cat) != MT_CAT_USER_ANNOTATION || e->name >= n_names)
            continue;
        if (!id[e->name]) {
            size_t len;
            const char *nm = mt_strtab_get(t->strings, e->name, &len);
            /* the steps are the graph's unit already, and an nccl:*
             * range is the profiler's own wrapper of one collective, whose
             * kernel names it already: the phase around it says more */
            if (mt_step_name_num(nm, len) >= 0 || (len >= 5 && !memcmp(nm, "nccl:", 5))) {
                id[e->name] = UINT32_MAX;
            } else {
                mt_an_str_t s;
                if (MT_GROW(a->annots, cap, a->n_annots + 1, 16))
                    goto out;
                if ((st = mt_an_string_add(a, nm, mt_an_name_cut(nm, len, MT_AN_NAME_MAX), &s)) != MT_OK)
                    goto out;
                st = MT_ERR_NOMEM;
                a->annots[a->n_annots++] = s;
                id[e->name] = (uint32_t)a->n_annots;
            }
        }
        if (id[e->name] != UINT32_MAX)
            r[nr++] = (arange_t){mt_event_pid(t, e), e->ts, e->ts + e->dur, e->flags & MT_EV_PID_STR, e->name};
    }
    for (size_t i = 0; i < in->n_acts && nr; i++) {
        const mt_gpu_act_t *g = &in->acts[i];
        if (g->launch)
            q[nq++] = (aquery_t){mt_act_launch_pid(in, g), g->launch_ns, g->launch_flags & MT_EV_PID_STR, (uint32_t)i};
    }
    size_t nk = nr > nq ? nr : nq;
    key = malloc((nk ? nk : 1) * sizeof *key);
    perm = malloc((nk ? nk : 1) * sizeof *perm);
    if (!key || !perm)
        goto out;
    bool one = true; /* ranges and launches all of one process */
    for (size_t i = 0; i < nr; i++) {
        one = one && r[i].pid == r[0].pid && r[i].pflag == r[0].pflag;
        key[i] = mt_sort_key_i64(r[i].ts);
    }
    if (sort_by_time(r, nr, sizeof *r, one, key, perm, arange_cmp))
        goto out;
    for (size_t i = 0; i < nq; i++) {
        one = one && q[i].pid == r[0].pid && q[i].pflag == r[0].pflag;
        key[i] = mt_sort_key_i64(q[i].ts);
    }
    if (sort_by_time(q, nq, sizeof *q, one, key, perm, aquery_cmp))
        goto out;
    size_t j = 0;
    for (size_t i = 0; i < nq; i++) {
        if (i == 0 || q[i].pid != q[i - 1].pid || q[i].pflag != q[i - 1].pflag) {
            /* a new process: skip the ranges of those before it */
            nh = 0;
            while (j < nr && (r[j].pflag < q[i].pflag || (r[j].pflag == q[i].pflag && r[j].pid < q[i].pid)))
                j++;
        }
        while (j < nr && r[j].pflag == q[i].pflag && r[j].pid == q[i].pid && r[j].ts <= q[i].ts)
            heap_push(r, h, &nh, (uint32_t)j++);
        while (nh && r[h[0]].end < q[i].ts)
            heap_pop(r, h, &nh);
        if (nh)
            a->gacts[q[i].act].annot = id[r[h[0]].name];
    }
    st = MT_OK;
out:
    free(r);
    free(q);
    free(h);
    free(id);
    free(key);
    free(perm);
    return st;
}

typedef struct skey {
    int64_t device, stream;
    uint8_t flags;
} skey_t;

mt_status_t mt_an_steps(const mt_an_input_t *in, mt_rank_analysis_t *a)
{
    const mt_trace_t *t = in->t;
    mt_status_t st = MT_ERR_NOMEM;
    mt_step_t *rs = NULL;
    size_t nrs = 0, caprs = 0, capsy = 0, nkeys = 0, capkeys = 0;
    skey_t *keys = NULL;
    mt_an_str_t *names = NULL; /* per trace string id: its copy in a's pool, len+1 (0: not yet) */
    ivsum_t sc = {0}, scm = {0}, sall = {0};
    mt_interval_t *cm = NULL;
    uint32_t n_names = mt_strtab_count(t->strings);

    /* the ProfilerStep ranges from the input's user annotations, not a
     * read of every event (mt_trace_steps_of: the same list) */
    if (mt_trace_steps_of(t, in->ranges, in->n_ranges, a->rank, &rs, &nrs, &caprs) != MT_OK)
        goto out;
    if (nrs)
        qsort(rs, nrs, sizeof *rs, step_cmp);
    names = calloc(n_names ? n_names : 1, sizeof *names);
    if (!names)
        goto out;

    /* the graph's activities, in the shared input's order */
    a->gacts = mt_big_malloc((in->n_acts ? in->n_acts : 1) * sizeof *a->gacts);
    if (!a->gacts)
        goto out;
    int64_t *last_end = calloc(nrs ? nrs : 1, sizeof *last_end);
    if (!last_end)
        goto out;
    for (size_t i = 0; i < nrs; i++)
        last_end[i] = rs[i].end_ns;
    size_t hint = 0; /* rs is sorted by start (step_cmp) */
    for (size_t i = 0; i < in->n_acts; i++) {
        const mt_gpu_act_t *g = &in->acts[i];
        mt_an_gact_t *o = &a->gacts[i];
        o->start_ns = g->start_ns;
        o->end_ns = g->end_ns;
        o->launch_ns = o->launch_end_ns = -1;
        o->annot = o->pad_ = 0;
        if (g->launch) {
            const mt_event_t *l = &t->events[g->launch - 1];
            o->launch_ns = l->ts;
            o->launch_end_ns = l->ts + l->dur;
        }
        o->cls = g->cls == MT_CLASS_COMPUTE ? MT_AN_COMPUTE : g->cls == MT_CLASS_COMM ? MT_AN_COMM : MT_AN_MEMORY;
        /* streams numbered in order of first appearance; a rank has few */
        uint8_t fl = g->flags;
        size_t k = 0;
        while (k < nkeys && !(keys[k].device == g->device && keys[k].stream == g->stream && keys[k].flags == fl))
            k++;
        if (k == nkeys) {
            if (MT_GROW(keys, capkeys, nkeys + 1, 16)) {
                free(last_end);
                goto out;
            }
            keys[nkeys++] = (skey_t){g->device, g->stream, fl};
        }
        o->stream = (uint32_t)k;
        if (g->name < n_names) {
            if (!names[g->name].len) {
                size_t len;
                const char *nm = mt_strtab_get(t->strings, g->name, &len);
                mt_an_str_t s;
                if ((st = mt_an_string_add(a, nm, mt_an_name_cut(nm, len, MT_AN_NAME_MAX), &s)) != MT_OK) {
                    free(last_end);
                    goto out;
                }
                names[g->name] = (mt_an_str_t){s.off, s.len + 1};
                st = MT_ERR_NOMEM;
            }
            o->name = (mt_an_str_t){names[g->name].off, names[g->name].len - 1};
        } else {
            o->name = (mt_an_str_t){0, 0};
        }
        long k2 = find_step(rs, nrs, g->launch ? o->launch_ns : g->start_ns, &hint);
        if (k2 >= 0 && g->end_ns > last_end[k2])
            last_end[k2] = g->end_ns;
    }
    a->n_gacts = in->n_acts;
    if ((st = annotate(in, a)) != MT_OK) {
        free(last_end);
        goto out;
    }
    st = MT_ERR_NOMEM;

    /* host synchronisation calls: listed by the input's one pass over the
     * events (a second pass here was a fifth of this function) */
    for (size_t i = 0; i < in->n_sync_calls; i++) {
        const mt_event_t *e = &t->events[in->sync_calls[i]];
        if (MT_GROW(a->syncs, capsy, a->n_syncs + 1, 64)) {
            free(last_end);
            goto out;
        }
        a->syncs[a->n_syncs++] = (mt_an_sync_t){e->ts, e->ts + e->dur};
    }
    /* by start (the file is mostly in order already) */
    for (size_t i = 1; i < a->n_syncs; i++) {
        mt_an_sync_t v = a->syncs[i];
        size_t k = i;
        for (; k > 0 && a->syncs[k - 1].start_ns > v.start_ns; k--)
            a->syncs[k] = a->syncs[k - 1];
        a->syncs[k] = v;
    }

    /* the step windows and their breakdown */
    const mt_interval_t *cu = in->u[MT_AN_COMPUTE], *mu = in->u[MT_AN_COMM];
    size_t ncu = in->n_u[MT_AN_COMPUTE], nmu = in->n_u[MT_AN_COMM];
    cm = malloc((ncu + nmu ? ncu + nmu : 1) * sizeof *cm);
    if (!cm) {
        free(last_end);
        goto out;
    }
    size_t k = mt_iv_union2(cu, ncu, mu, nmu, cm);
    if (ivsum_init(&sc, cu, ncu) || ivsum_init(&scm, cm, k) || ivsum_init(&sall, in->busy, in->n_busy)) {
        free(last_end);
        goto out;
    }
    a->steps = malloc((nrs ? nrs : 1) * sizeof *a->steps);
    if (!a->steps) {
        free(last_end);
        goto out;
    }
    for (size_t i = 0; i < nrs; i++) {
        int64_t s0 = rs[i].start_ns, s1 = last_end[i];
        int64_t c = ivsum_in(&sc, s0, s1), ccm = ivsum_in(&scm, s0, s1), all = ivsum_in(&sall, s0, s1);
        a->steps[i] = (mt_an_step_t){.step = rs[i].step,
                                     .cpu_start_ns = s0,
                                     .cpu_end_ns = rs[i].end_ns,
                                     .end_ns = s1,
                                     .compute_ns = c,
                                     .comm_ns = ccm - c,
                                     .memory_ns = all - ccm,
                                     .idle_ns = (s1 - s0) - all};
    }
    a->n_steps = nrs;
    free(last_end);
    st = MT_OK;
out:
    free(rs);
    free(keys);
    free(names);
    free(sc.pre);
    free(scm.pre);
    free(sall.pre);
    free(cm);
    return st;
}
