/* Comparing two runs from their report.json (include/mergetrace/compare.h):
 * read both with the document reader, take each metric's job value and
 * samples, decide the verdicts with the Mann-Whitney U test, explain the
 * per-step time delta by components and ranks, and list the movers. */
#define _POSIX_C_SOURCE 200809L /* strdup */
#include "mergetrace/compare.h"
#include "base/sort.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errpos.h"
#include "base/jdoc.h"
#include "base/ranktest.h"
#include "base/stats.h"
#include "base/text.h"

#define CMP_MAX_DEPTH 64

static const char *const k_metric[MT_CMP_METRIC_COUNT_] = {
    "step_p50_us",     "step_p99_us",        "period_p50_us",      "period_p99_us",      "overlap",
    "exposed_comm_pct", "idle_pct",          "straggler_wait_pct", "comm_critical_pct",  "alignment_p99_us"};
/* +1: a larger value is better (the job is faster); -1: a smaller one */
static const int k_better[MT_CMP_METRIC_COUNT_] = {-1, -1, -1, -1, +1, -1, -1, -1, -1, -1};
/* a share of the span, in percent (see decide()) */
static const bool k_share[MT_CMP_METRIC_COUNT_] = {false, false, false, false, false,
                                                   true,  true,  false, false, false};
#define CMP_SHARE_FLOOR 0.5
static const char *const k_part[MT_CMP_PART_COUNT_] = {"compute", "exposed_comm", "memory", "idle"};

const char *mt_cmp_metric_str(mt_cmp_id_t m)
{
    return (unsigned)m < MT_CMP_METRIC_COUNT_ ? k_metric[m] : "?";
}

const char *mt_cmp_part_str(int part)
{
    return (unsigned)part < MT_CMP_PART_COUNT_ ? k_part[part] : "?";
}

const char *mt_cmp_verdict_str(mt_cmp_verdict_t v)
{
    switch (v) {
    case MT_CMP_NOISE: return "within noise";
    case MT_CMP_FASTER: return "faster";
    case MT_CMP_SLOWER: return "slower";
    case MT_CMP_TOO_FEW: return "too few samples to tell";
    default: return "n/a";
    }
}

/* ------------------------------------------------------------ one run */

typedef struct dvec {
    double *v;
    size_t n, cap;
} dvec_t;

static bool dvec_push(dvec_t *d, double x)
{
    if (MT_GROW(d->v, d->cap, d->n + 1, 64) != MT_OK)
        return false;
    d->v[d->n++] = x;
    return true;
}

/* What one report gives the comparison. */
typedef struct run {
    const mt_jdoc_t *d;
    bool has[MT_CMP_METRIC_COUNT_];
    double val[MT_CMP_METRIC_COUNT_];
    dvec_t smp[MT_CMP_METRIC_COUNT_];
    const char *kind[MT_CMP_METRIC_COUNT_];
    int64_t world;
    bool pipe;
    int64_t steps;
} run_t;

static void run_free(run_t *r)
{
    for (int i = 0; i < MT_CMP_METRIC_COUNT_; i++)
        free(r->smp[i].v);
}

static double num_or(const mt_jdoc_t *d, uint32_t obj, const char *key, double dflt)
{
    double v;
    return mt_jdoc_num(d, mt_jdoc_get(d, obj, key), &v) ? v : dflt;
}

static int64_t rank_of(const mt_jdoc_t *d, uint32_t obj)
{
    return (int64_t)num_or(d, obj, "rank", -1);
}

/* Nearest-rank percentile of doubles (sorts a copy). */
static double pct_of(const dvec_t *s, int p)
{
    double *c = malloc(s->n * sizeof *c);
    if (!c)
        return NAN;
    memcpy(c, s->v, s->n * sizeof *c);
    qsort(c, s->n, sizeof *c, mt_cmp_dbl);
    size_t k = ((size_t)p * s->n + 99) / 100;
    double v = c[k ? k - 1 : 0];
    free(c);
    return v;
}

/* Per-rank samples of `key` in array `arr`; the job value is their largest
 * (as the gates define it) or, with sum_key, 100 x sum key / sum sum_key. */
static bool rank_samples(run_t *r, mt_cmp_id_t m, const char *arr, const char *key, const char *num_key,
                         const char *den_key)
{
    const mt_jdoc_t *d = r->d;
    double mx = -INFINITY, num = 0, den = 0;
    for (uint32_t e = mt_jdoc_first(d, mt_jdoc_get(d, 0, arr)); e; e = mt_jdoc_next(d, e)) {
        double v;
        if (!mt_jdoc_num(d, mt_jdoc_get(d, e, key), &v))
            continue;
        if (!dvec_push(&r->smp[m], v))
            return false;
        mx = v > mx ? v : mx;
        if (num_key) {
            num += num_or(d, e, num_key, 0);
            den += num_or(d, e, den_key, 0);
        }
    }
    r->kind[m] = "ranks";
    if (r->smp[m].n) {
        r->has[m] = !num_key || den > 0;
        r->val[m] = num_key ? (den > 0 ? 100.0 * num / den : 0) : mx;
    }
    return true;
}

static bool step_samples(run_t *r, uint32_t steps);

/* Read what the comparison needs of one report. false: out of memory. */
static bool run_read(run_t *r)
{
    const mt_jdoc_t *d = r->d;
    r->world = (int64_t)num_or(d, 0, "world_size", 0);
    /* steps: the per-step job step times (report.json "steps", issue 20) */
    uint32_t steps = mt_jdoc_get(d, 0, "steps");
    for (uint32_t s = mt_jdoc_first(d, mt_jdoc_get(d, steps, "per_step")); s; s = mt_jdoc_next(d, s)) {
        double t, comm;
        if (mt_jdoc_type(d, mt_jdoc_get(d, s, "used")) == MT_J_FALSE)
            continue;
        if (!mt_jdoc_num(d, mt_jdoc_get(d, s, "time_us"), &t))
            continue;
        if (!dvec_push(&r->smp[MT_CMP_STEP_P50], t) || !dvec_push(&r->smp[MT_CMP_STEP_P99], t))
            return false;
        if (mt_jdoc_num(d, mt_jdoc_path(d, s, "path_us.comm"), &comm) && t > 0 &&
            !dvec_push(&r->smp[MT_CMP_COMM_CRITICAL_PCT], 100.0 * comm / t))
            return false;
    }
    r->kind[MT_CMP_STEP_P50] = r->kind[MT_CMP_STEP_P99] = r->kind[MT_CMP_COMM_CRITICAL_PCT] = "steps";
    if (r->smp[MT_CMP_STEP_P50].n) {
        r->has[MT_CMP_STEP_P50] = r->has[MT_CMP_STEP_P99] = true;
        r->val[MT_CMP_STEP_P50] = num_or(d, steps, "p50_us", pct_of(&r->smp[MT_CMP_STEP_P50], 50));
        r->val[MT_CMP_STEP_P99] = num_or(d, steps, "p99_us", pct_of(&r->smp[MT_CMP_STEP_P99], 99));
        r->steps = (int64_t)r->smp[MT_CMP_STEP_P50].n;
    }
    if (r->smp[MT_CMP_COMM_CRITICAL_PCT].n) {
        double comm = 0, tot = 0;
        for (uint32_t s = mt_jdoc_first(d, mt_jdoc_get(d, steps, "per_step")); s; s = mt_jdoc_next(d, s))
            if (mt_jdoc_type(d, mt_jdoc_get(d, s, "used")) != MT_J_FALSE) {
                comm += num_or(d, mt_jdoc_get(d, s, "path_us"), "comm", 0);
                tot += num_or(d, s, "time_us", 0);
            }
        r->has[MT_CMP_COMM_CRITICAL_PCT] = tot > 0;
        r->val[MT_CMP_COMM_CRITICAL_PCT] = tot > 0 ? 100.0 * comm / tot : 0;
    }
    /* pipeline: per-chunk periods and OverlapScores after the warm-up */
    uint32_t pp = mt_jdoc_get(d, 0, "pipeline");
    r->pipe = mt_jdoc_type(d, pp) == MT_J_OBJ && pp;
    r->kind[MT_CMP_PERIOD_P50] = r->kind[MT_CMP_PERIOD_P99] = r->kind[MT_CMP_OVERLAP] = "chunks";
    if (r->pipe) {
        double warm = num_or(d, pp, "warmup", 1);
        size_t k = 0;
        for (uint32_t c = mt_jdoc_first(d, mt_jdoc_get(d, pp, "per_chunk")); c; c = mt_jdoc_next(d, c), k++) {
            double v;
            if ((double)k < warm)
                continue;
            if (mt_jdoc_num(d, mt_jdoc_get(d, c, "period_us"), &v) &&
                (!dvec_push(&r->smp[MT_CMP_PERIOD_P50], v) || !dvec_push(&r->smp[MT_CMP_PERIOD_P99], v)))
                return false;
            if (mt_jdoc_num(d, mt_jdoc_get(d, c, "overlap_score"), &v) && !dvec_push(&r->smp[MT_CMP_OVERLAP], v))
                return false;
        }
        uint32_t per = mt_jdoc_get(d, pp, "period_us");
        double v;
        if ((r->has[MT_CMP_PERIOD_P50] = mt_jdoc_num(d, mt_jdoc_get(d, per, "p50"), &v)))
            r->val[MT_CMP_PERIOD_P50] = v;
        if ((r->has[MT_CMP_PERIOD_P99] = mt_jdoc_num(d, mt_jdoc_get(d, per, "p99"), &v)))
            r->val[MT_CMP_PERIOD_P99] = v;
        if ((r->has[MT_CMP_OVERLAP] = mt_jdoc_num(d, mt_jdoc_get(d, pp, "overlap_score"), &v)))
            r->val[MT_CMP_OVERLAP] = v;
        if (!r->steps)
            r->steps = (int64_t)r->smp[MT_CMP_PERIOD_P50].n;
    }
    /* per-rank metrics */
    if (!rank_samples(r, MT_CMP_EXPOSED_COMM_PCT, "temporal", "comm_pct", "comm_us", "span_us") ||
        !rank_samples(r, MT_CMP_IDLE_PCT, "temporal", "idle_pct", NULL, NULL) ||
        !rank_samples(r, MT_CMP_STRAGGLER_WAIT_PCT, "wait", "wait_pct", NULL, NULL))
        return false;
    /* alignment: fitted ranks only (as the gate) */
    dvec_t *al = &r->smp[MT_CMP_ALIGNMENT_P99];
    r->kind[MT_CMP_ALIGNMENT_P99] = "ranks";
    uint32_t clock = mt_jdoc_get(d, 0, "clock");
    if (mt_jdoc_type(d, mt_jdoc_get(d, clock, "aligned")) == MT_J_TRUE) {
        double mx = 0;
        for (uint32_t e = mt_jdoc_first(d, mt_jdoc_get(d, clock, "ranks")); e; e = mt_jdoc_next(d, e)) {
            double v;
            if (num_or(d, e, "matched", 0) <= 0 || !mt_jdoc_num(d, mt_jdoc_get(d, e, "residual_p99_us"), &v))
                continue;
            if (!dvec_push(al, v))
                return false;
            mx = v > mx ? v : mx;
        }
        r->has[MT_CMP_ALIGNMENT_P99] = al->n > 0;
        r->val[MT_CMP_ALIGNMENT_P99] = mx;
    }
    return step_samples(r, steps);
}

/* Idle and exposed communication per used step, pooled over the step's
 * ranks (100 x sum idle_us / sum duration_us of steps.per_step[].ranks[]):
 * the job values stay those of temporal[], only the verdict's samples
 * change. A job has a handful of ranks and they are not independent (they
 * wait for each other), so a test on per-rank values cannot reject with 2
 * or 3 ranks a side (issue 39); steps are many, pooling a step's ranks
 * takes their dependence out of the test, and batch() takes out the
 * steps' own (as for step times). Kept per rank when the report has no
 * per-step ranks (an older report.json, or no steps). */
static bool step_samples(run_t *r, uint32_t steps)
{
    const mt_jdoc_t *d = r->d;
    dvec_t idle = {0}, comm = {0};
    bool ok = true;
    for (uint32_t s = mt_jdoc_first(d, mt_jdoc_get(d, steps, "per_step")); ok && s; s = mt_jdoc_next(d, s)) {
        if (mt_jdoc_type(d, mt_jdoc_get(d, s, "used")) == MT_J_FALSE)
            continue;
        double dur = 0, id = 0, co = 0;
        for (uint32_t y = mt_jdoc_first(d, mt_jdoc_get(d, s, "ranks")); y; y = mt_jdoc_next(d, y)) {
            dur += num_or(d, y, "duration_us", 0);
            id += num_or(d, y, "idle_us", 0);
            co += num_or(d, y, "comm_us", 0);
        }
        if (dur > 0)
            ok = dvec_push(&idle, 100.0 * id / dur) && dvec_push(&comm, 100.0 * co / dur);
    }
    if (ok && idle.n >= 2 && r->has[MT_CMP_IDLE_PCT]) {
        free(r->smp[MT_CMP_IDLE_PCT].v);
        r->smp[MT_CMP_IDLE_PCT] = idle;
        r->kind[MT_CMP_IDLE_PCT] = "steps";
        idle = (dvec_t){0};
    }
    if (ok && comm.n >= 2 && r->has[MT_CMP_EXPOSED_COMM_PCT]) {
        free(r->smp[MT_CMP_EXPOSED_COMM_PCT].v);
        r->smp[MT_CMP_EXPOSED_COMM_PCT] = comm;
        r->kind[MT_CMP_EXPOSED_COMM_PCT] = "steps";
        comm = (dvec_t){0};
    }
    free(idle.v);
    free(comm.v);
    return ok;
}

/* ------------------------------------------------------------ verdicts */

static double median_of(const dvec_t *s)
{
    double *c = malloc(s->n * sizeof *c);
    if (!c)
        return NAN;
    memcpy(c, s->v, s->n * sizeof *c);
    double m = mt_stats_median_f64(c, s->n);
    free(c);
    return m;
}

/* Batch means: the mean of each run of CMP_BATCH consecutive samples (a
 * last, shorter run is dropped), for series in time order (steps, chunks)
 * of CMP_BATCH_MIN or more. Consecutive steps are not independent: a late
 * emit makes one period long and the next short (negative
 * autocorrelation), a slow phase makes several steps slow (positive);
 * means of consecutive blocks are much closer to independent, and the
 * test on them keeps its false-alarm rate and gains power
 * (docs/compare.md). Returns the number of values in *out (malloc'd; the
 * samples themselves, copied, below the minimum). */
#define CMP_BATCH 5
#define CMP_BATCH_MIN 20
static size_t batch(const dvec_t *s, bool series, double **out)
{
    size_t n = series && s->n >= CMP_BATCH_MIN ? s->n / CMP_BATCH : s->n;
    *out = malloc((n ? n : 1) * sizeof **out);
    if (!*out)
        return SIZE_MAX;
    if (n == s->n) {
        memcpy(*out, s->v, n * sizeof **out);
        return n;
    }
    for (size_t i = 0; i < n; i++) {
        double sum = 0;
        for (size_t k = 0; k < CMP_BATCH; k++)
            sum += s->v[i * CMP_BATCH + k];
        (*out)[i] = sum / CMP_BATCH;
    }
    return n;
}

/* The power of the test on these samples. B's samples are moved to A's
 * median and then shifted by x: the smallest |x| (up and down, the larger
 * of the two, at least floor_abs) at which the test gives p < alpha is what
 * the verdict could have seen. *min_p: p when the shifted samples lie wholly
 * apart, the smallest these counts give; when it is alpha or more no
 * change could be called (*det = INFINITY). false: out of memory. */
static bool detectable(const double *a, size_t na, const double *b, size_t nb, double alpha, double floor_abs,
                       double *min_p, double *det)
{
    *min_p = 1;
    *det = INFINITY;
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < na; i++) {
        lo = fmin(lo, a[i]);
        hi = fmax(hi, a[i]);
    }
    for (size_t i = 0; i < nb; i++) {
        lo = fmin(lo, b[i]);
        hi = fmax(hi, b[i]);
    }
    double *ca = malloc(na * sizeof *ca), *cb = malloc(nb * sizeof *cb), *sh = malloc(nb * sizeof *sh);
    bool ok = ca && cb && sh;
    if (ok) {
        memcpy(ca, a, na * sizeof *ca);
        memcpy(cb, b, nb * sizeof *cb);
        double ma = mt_stats_median_f64(ca, na), mb = mt_stats_median_f64(cb, nb);
        double span = hi - lo, far = 2 * span + fabs(ma) + 1; /* beyond every sample: wholly apart */
        mt_mwu_t t;
        double worst = 0;
        for (int dir = -1; ok && dir <= 1; dir += 2) {
            for (size_t i = 0; i < nb; i++)
                sh[i] = b[i] - mb + ma + dir * far;
            if (!(ok = mt_mwu_test(a, na, sh, nb, &t)))
                break;
            *min_p = fmin(*min_p, t.p);
            if (t.p >= alpha) {
                worst = INFINITY;
                continue;
            }
            double l = 0, h = far; /* p(l) >= alpha > p(h) */
            for (int it = 0; ok && it < 40 && h - l > 1e-9 * far; it++) {
                double x = (l + h) / 2;
                for (size_t i = 0; i < nb; i++)
                    sh[i] = b[i] - mb + ma + dir * x;
                ok = mt_mwu_test(a, na, sh, nb, &t);
                *(t.p < alpha ? &h : &l) = x;
            }
            worst = fmax(worst, h);
        }
        *det = fmax(worst, floor_abs);
    }
    free(ca);
    free(cb);
    free(sh);
    return ok;
}

static bool decide(mt_compare_t *c, const run_t *A, const run_t *B, mt_cmp_id_t id)
{
    mt_cmp_metric_t *m = &c->m[id];
    m->has_a = A->has[id];
    m->has_b = B->has[id];
    m->a = A->val[id];
    m->b = B->val[id];
    m->delta = m->has_a && m->has_b ? m->b - m->a : NAN;
    m->rel = m->has_a && m->has_b && m->a != 0 ? m->delta / fabs(m->a) : NAN;
    m->samples = A->kind[id] ? A->kind[id] : B->kind[id];
    m->na = A->smp[id].n;
    m->nb = B->smp[id].n;
    m->p = 1;
    m->min_p = 1;
    m->detectable = NAN;
    m->verdict = MT_CMP_NA;
    if (!m->has_a || !m->has_b) {
        m->why = !m->has_a && !m->has_b ? "in neither run" : !m->has_a ? "not in the baseline" : "not in this run";
        return true;
    }
    if (m->na < 2 || m->nb < 2) {
        m->why = "fewer than 2 samples in a run";
        return true;
    }
    if (A->kind[id] && B->kind[id] && strcmp(A->kind[id], B->kind[id])) {
        m->why = "the runs' samples are of different kinds (one report has no per-step ranks)";
        return true;
    }
    bool series = strcmp(m->samples, "ranks") != 0;
    double *ba = NULL, *bb = NULL;
    size_t nba = batch(&A->smp[id], series, &ba), nbb = batch(&B->smp[id], series, &bb);
    mt_mwu_t t;
    bool ok = nba != SIZE_MAX && nbb != SIZE_MAX && mt_mwu_test(ba, nba, bb, nbb, &t);
    m->batched = nba != m->na || nbb != m->nb;
    m->p = t.p;
    m->med_a = median_of(&A->smp[id]);
    m->med_b = median_of(&B->smp[id]);
    double floor_abs = c->min_effect * fabs(m->med_a);
    /* Shares of the span: per-step samples pooled over many ranks are so
     * precise that two runs of one program differ beyond them by a few
     * tenths of a point (64 generated ranks: idle 5.29 vs 5.32 %, exposed
     * comm 7.24 vs 6.95 %, p 0.02-0.03), a difference between runs the
     * samples of one run cannot show. Half a point of the span is the
     * smallest change called (tests/gen/check_verdicts.py). */
    if (k_share[id])
        floor_abs = fmax(floor_abs, CMP_SHARE_FLOOR);
    ok = ok && detectable(ba, nba, bb, nbb, c->alpha, floor_abs, &m->min_p, &m->detectable);
    free(ba);
    free(bb);
    if (!ok)
        return false;
    double diff = m->med_b - m->med_a;
    bool big = fabs(diff) >= floor_abs && diff != 0;
    if (m->min_p >= c->alpha)
        m->verdict = MT_CMP_TOO_FEW;
    else if (t.p < c->alpha && big)
        m->verdict = (diff > 0) == (k_better[id] > 0) ? MT_CMP_FASTER : MT_CMP_SLOWER;
    else
        m->verdict = MT_CMP_NOISE;
    return true;
}

/* ------------------------------------------------------------ movers */

typedef struct acc {
    mt_cmp_item_t *v;
    size_t n, cap;
} acc_t;

static mt_cmp_item_t *acc_find(acc_t *a, const char *name)
{
    for (size_t i = 0; i < a->n; i++)
        if (!strcmp(a->v[i].name, name))
            return &a->v[i];
    if (MT_GROW(a->v, a->cap, a->n + 1, 32) != MT_OK)
        return NULL;
    char *s = strdup(name);
    if (!s)
        return NULL;
    a->v[a->n] = (mt_cmp_item_t){.name = s, .bw_a = NAN, .bw_b = NAN};
    return &a->v[a->n++];
}

/* A kernel name without what does not make two kernels different:
 * template arguments (<...>, nested, also when the name was cut inside
 * them), the parameter list, hexadecimal addresses, a leading "void ".
 * "(anonymous namespace)" outside template arguments is kept. */
void mt_cmp_kernel_name(const char *in, char *out, size_t cap)
{
    size_t o = 0;
    int angle = 0;
    if (!strncmp(in, "void ", 5))
        in += 5;
    for (const char *p = in; *p && o + 1 < cap; p++) {
        if (*p == '<') {
            angle++;
            continue;
        }
        if (*p == '>') {
            angle -= angle > 0;
            continue;
        }
        if (angle)
            continue;
        if (*p == '(' && strncmp(p, "(anonymous namespace)", 21))
            break; /* the parameter list */
        if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
            const char *q = p + 2;
            while ((*q >= '0' && *q <= '9') || (*q >= 'a' && *q <= 'f') || (*q >= 'A' && *q <= 'F'))
                q++;
            if (q > p + 2) {
                for (const char *r = "0x?"; *r && o + 1 < cap; r++)
                    out[o++] = *r;
                p = q - 1;
                continue;
            }
        }
        out[o++] = *p;
    }
    while (o && out[o - 1] == ' ')
        o--;
    out[o] = 0;
}

static int cmp_item(const void *x, const void *y)
{
    const mt_cmp_item_t *a = x, *b = y;
    double da = fabs(a->b - a->a), db = fabs(b->b - b->a);
    if (da != db)
        return da < db ? 1 : -1;
    return strcmp(a->name, b->name);
}

static void list_finish(acc_t *a, mt_cmp_list_t *l)
{
    if (a->n > 1)
        qsort(a->v, a->n, sizeof *a->v, cmp_item);
    l->v = a->v;
    l->n = a->n;
    for (size_t i = 0; i < a->n; i++) {
        l->n_new += !a->v[i].in_a && a->v[i].in_b;
        l->n_vanished += a->v[i].in_a && !a->v[i].in_b;
    }
}

static size_t n_ranks_of(const mt_jdoc_t *d)
{
    size_t n = 0;
    for (uint32_t e = mt_jdoc_first(d, mt_jdoc_path(d, 0, "ranks.loaded")); e; e = mt_jdoc_next(d, e))
        n++;
    return n ? n : 1;
}

/* Kernels: total_us per normalised name summed over the ranks' top lists,
 * divided by the run's ranks. Collectives: total_us and busbw per (pg,
 * collective, bytes, dtype). Annotations: projection_total gpu_us. */
static bool movers(const run_t *r, bool is_b, acc_t *k, acc_t *c, acc_t *an)
{
    const mt_jdoc_t *d = r->d;
    double nr = (double)n_ranks_of(d);
    char name[512];
    for (uint32_t e = mt_jdoc_first(d, mt_jdoc_get(d, 0, "kernels")); e; e = mt_jdoc_next(d, e)) {
        const char *n = mt_jdoc_str(d, mt_jdoc_get(d, e, "name"), NULL);
        const char *cls = mt_jdoc_str(d, mt_jdoc_get(d, e, "class"), NULL);
        if (!n)
            continue;
        char nn[400];
        mt_cmp_kernel_name(n, nn, sizeof nn);
        snprintf(name, sizeof name, "%s [%s]", nn, cls ? cls : "?");
        mt_cmp_item_t *it = acc_find(k, name);
        if (!it)
            return false;
        *(is_b ? &it->in_b : &it->in_a) = true;
        *(is_b ? &it->b : &it->a) += num_or(d, e, "total_us", 0) / nr;
        *(is_b ? &it->count_b : &it->count_a) += num_or(d, e, "count", 0) / nr;
    }
    for (uint32_t e = mt_jdoc_first(d, mt_jdoc_get(d, 0, "collectives")); e; e = mt_jdoc_next(d, e)) {
        const char *pg = mt_jdoc_str(d, mt_jdoc_get(d, e, "pg"), NULL);
        const char *co = mt_jdoc_str(d, mt_jdoc_get(d, e, "collective"), NULL);
        const char *dt = mt_jdoc_str(d, mt_jdoc_get(d, e, "dtype"), NULL);
        snprintf(name, sizeof name, "%s pg %s %.0f B %s", co ? co : "?", pg ? pg : "?", num_or(d, e, "bytes", -1),
                 dt ? dt : "?");
        mt_cmp_item_t *it = acc_find(c, name);
        if (!it)
            return false;
        *(is_b ? &it->in_b : &it->in_a) = true;
        *(is_b ? &it->b : &it->a) += num_or(d, e, "total_us", 0);
        *(is_b ? &it->count_b : &it->count_a) += num_or(d, e, "count", 0);
        *(is_b ? &it->bw_b : &it->bw_a) = num_or(d, e, "busbw_gbps", NAN);
    }
    for (uint32_t e = mt_jdoc_first(d, mt_jdoc_get(d, 0, "projection_total")); e; e = mt_jdoc_next(d, e)) {
        const char *n = mt_jdoc_str(d, mt_jdoc_get(d, e, "name"), NULL);
        if (!n)
            continue;
        mt_cmp_item_t *it = acc_find(an, n);
        if (!it)
            return false;
        *(is_b ? &it->in_b : &it->in_a) = true;
        *(is_b ? &it->b : &it->a) += num_or(d, e, "gpu_us", 0);
        *(is_b ? &it->count_b : &it->count_a) += num_or(d, e, "count", 0);
    }
    return true;
}

/* ------------------------------------------------------------ the delta explained */

static mt_cmp_rank_t *rank_entry(mt_compare_t *c, int32_t rank, size_t *cap)
{
    for (size_t i = 0; i < c->n_ranks; i++)
        if (c->ranks[i].rank == rank)
            return &c->ranks[i];
    if (MT_GROW(c->ranks, *cap, c->n_ranks + 1, 16) != MT_OK)
        return NULL;
    c->ranks[c->n_ranks] = (mt_cmp_rank_t){.rank = rank};
    return &c->ranks[c->n_ranks++];
}

/* Each rank's GPU span per step (span_us / its ProfilerStep count) and its
 * temporal components per step: compute + exposed comm + memory + idle =
 * span exactly (include/mergetrace/analysis.h), so the components' deltas
 * add up to the step delta. */
static bool explain_run(mt_compare_t *c, const mt_jdoc_t *d, bool is_b, size_t *cap)
{
    for (uint32_t e = mt_jdoc_first(d, mt_jdoc_get(d, 0, "temporal")); e; e = mt_jdoc_next(d, e)) {
        int64_t rank = rank_of(d, e);
        if (rank < 0)
            continue;
        double steps = 0;
        for (uint32_t p = mt_jdoc_first(d, mt_jdoc_get(d, 0, "projection")); p; p = mt_jdoc_next(d, p)) {
            const char *n = mt_jdoc_str(d, mt_jdoc_get(d, p, "name"), NULL);
            if (n && rank_of(d, p) == rank && !strcmp(n, "ProfilerStep#*"))
                steps = num_or(d, p, "count", 0);
        }
        if (steps < 1)
            steps = 1;
        mt_cmp_rank_t *r = rank_entry(c, (int32_t)rank, cap);
        if (!r)
            return false;
        static const char *const keys[MT_CMP_PART_COUNT_] = {"compute_us", "comm_us", "memory_us", "idle_us"};
        double *part = is_b ? r->part_b : r->part_a, sum = 0;
        for (int k = 0; k < MT_CMP_PART_COUNT_; k++) {
            part[k] = num_or(d, e, keys[k], 0) / steps;
            sum += part[k];
        }
        *(is_b ? &r->in_b : &r->in_a) = true;
        /* the components as printed (3 decimals) tile the span; their sum is the step time */
        *(is_b ? &r->step_b : &r->step_a) = sum;
    }
    return true;
}

static int cmp_rank(const void *x, const void *y)
{
    const mt_cmp_rank_t *a = x, *b = y;
    return (a->rank > b->rank) - (a->rank < b->rank);
}

/* Whether a run's used step times are steady: the Mann-Kendall trend of
 * the steps in order, and the relative change of the median from the first
 * half to the second. A first profiled window often still holds the
 * process's warm-up (tests/data/real/ab: a1's steps rise from 9.6 to 11.1
 * ms, p 0.005; a2 and b p 0.35 and 0.88); a change measured against such a
 * baseline is partly the warm-up's. The flag needs p < 0.01 (steps are
 * not independent, a slow phase makes a few in a row slow). */
#define CMP_STEADY_MIN 8
static void steady(const dvec_t *s, double *p, double *rel, bool *unsteady)
{
    *p = 1;
    *rel = 0;
    *unsteady = false;
    if (s->n < CMP_STEADY_MIN)
        return;
    double S;
    mt_mk_trend(s->v, s->n, &S, p);
    dvec_t h1 = {s->v, s->n / 2, 0}, h2 = {s->v + s->n - s->n / 2, s->n / 2, 0};
    double m1 = median_of(&h1), m2 = median_of(&h2);
    *rel = m1 != 0 ? (m2 - m1) / fabs(m1) : 0;
    *unsteady = *p < 0.01;
}

static void explain_job(mt_compare_t *c)
{
    if (c->n_ranks > 1)
        qsort(c->ranks, c->n_ranks, sizeof *c->ranks, cmp_rank);
    size_t na = 0, nb = 0;
    double worst = -1, worst_c = -1;
    c->rank_most = c->rank_most_compute = -1;
    for (size_t i = 0; i < c->n_ranks; i++) {
        const mt_cmp_rank_t *r = &c->ranks[i];
        if (r->in_a) {
            na++;
            c->total_a += r->step_a;
            for (int k = 0; k < MT_CMP_PART_COUNT_; k++)
                c->part_a[k] += r->part_a[k];
        }
        if (r->in_b) {
            nb++;
            c->total_b += r->step_b;
            for (int k = 0; k < MT_CMP_PART_COUNT_; k++)
                c->part_b[k] += r->part_b[k];
        }
        if (r->in_a && r->in_b && fabs(r->step_b - r->step_a) > worst) {
            worst = fabs(r->step_b - r->step_a);
            c->rank_most = r->rank;
        }
        double dc = fabs(r->part_b[MT_CMP_PART_COMPUTE] - r->part_a[MT_CMP_PART_COMPUTE]);
        if (r->in_a && r->in_b && dc > worst_c) {
            worst_c = dc;
            c->rank_most_compute = r->rank;
        }
    }
    if (na) {
        c->total_a /= (double)na;
        for (int k = 0; k < MT_CMP_PART_COUNT_; k++)
            c->part_a[k] /= (double)na;
    }
    if (nb) {
        c->total_b /= (double)nb;
        for (int k = 0; k < MT_CMP_PART_COUNT_; k++)
            c->part_b[k] /= (double)nb;
    }
    c->work_a = c->total_a - c->part_a[MT_CMP_PART_IDLE];
    c->work_b = c->total_b - c->part_b[MT_CMP_PART_IDLE];
    double d = c->total_b - c->total_a;
    c->idle_share = d != 0 ? (c->part_b[MT_CMP_PART_IDLE] - c->part_a[MT_CMP_PART_IDLE]) / d : NAN;
}

/* ------------------------------------------------------------ entry */

static bool note(mt_compare_t *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static bool note(mt_compare_t *c, const char *fmt, ...)
{
    char b[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b, sizeof b, fmt, ap);
    va_end(ap);
    char **nn = realloc(c->notes, (c->n_notes + 1) * sizeof *nn);
    if (!nn)
        return false;
    c->notes = nn;
    if (!(nn[c->n_notes] = strdup(b)))
        return false;
    c->n_notes++;
    return true;
}

static mt_status_t load(const char *t, size_t n, const char *path, mt_jdoc_t **d, mt_error_t *err)
{
    mt_status_t st = mt_jdoc_parse(t, n, CMP_MAX_DEPTH, path, d, err);
    if (st != MT_OK)
        return st;
    const char *schema = mt_jdoc_str(*d, mt_jdoc_get(*d, 0, "schema"), NULL);
    if (mt_jdoc_type(*d, 0) != MT_J_OBJ || !schema || strcmp(schema, "mergetrace.report/1")) {
        mt_error_set(err, MT_ERR_NOT_REPORT, "expected \"schema\": \"mergetrace.report/1\"%s%s",
                     schema ? ", found " : "", schema ? schema : "");
        mt_errpos_set(err, path, -1, -1, -1);
        mt_jdoc_free(*d);
        *d = NULL;
        return MT_ERR_NOT_REPORT;
    }
    return MT_OK;
}

mt_status_t mt_compare_check(const char *text, size_t len, const char *path, mt_error_t *err)
{
    mt_jdoc_t *d = NULL;
    mt_status_t st = load(text, len, path, &d, err);
    mt_jdoc_free(d);
    return st;
}

mt_status_t mt_compare_reports(const char *a, size_t na, const char *a_path, const char *b, size_t nb,
                               const char *b_path, const mt_cmp_opts_t *opts, mt_compare_t **out,
                               mt_error_t *err)
{
    *out = NULL;
    mt_jdoc_t *da = NULL, *db = NULL;
    mt_status_t st = load(a, na, a_path, &da, err);
    if (st == MT_OK)
        st = load(b, nb, b_path, &db, err);
    mt_compare_t *c = NULL;
    run_t A = {.d = da}, B = {.d = db};
    acc_t k = {0}, co = {0}, an = {0};
    if (st != MT_OK)
        goto out;
    st = MT_ERR_NOMEM;
    if (!(c = calloc(1, sizeof *c)))
        goto out;
    c->alpha = opts && opts->alpha > 0 ? opts->alpha : 0.05;
    c->min_effect = opts && opts->min_effect >= 0 && opts->alpha > 0 ? opts->min_effect : 0.005;
    if (!(c->baseline = strdup(a_path ? a_path : "")))
        goto out;
    if (!run_read(&A) || !run_read(&B))
        goto out;
    for (int i = 0; i < MT_CMP_METRIC_COUNT_; i++)
        if (!decide(c, &A, &B, (mt_cmp_id_t)i))
            goto out;
    c->world_a = A.world;
    c->world_b = B.world;
    c->steps_a = A.steps;
    c->steps_b = B.steps;
    c->pipe_a = A.pipe;
    c->pipe_b = B.pipe;
    if (A.world != B.world &&
        !note(c, "world sizes differ (baseline %lld, this run %lld): job-level numbers compared, per rank only "
                 "the ranks in both",
              (long long)A.world, (long long)B.world))
        goto out;
    if (A.steps != B.steps &&
        !note(c, "step counts differ after the warm-up (baseline %lld, this run %lld): the verdicts compare the "
                 "two sets of samples",
              (long long)A.steps, (long long)B.steps))
        goto out;
    if (A.pipe != B.pipe && !note(c, "%s has a pipeline and %s not: pipeline numbers are n/a",
                                  A.pipe ? "the baseline" : "this run", A.pipe ? "this run" : "the baseline"))
        goto out;
    if (!c->m[MT_CMP_STEP_P50].has_a && !c->m[MT_CMP_STEP_P50].has_b &&
        !note(c, "no per-step times in either report (report.json \"steps\"): step metrics are n/a"))
        goto out;
    steady(&A.smp[MT_CMP_STEP_P50], &c->trend_p_a, &c->trend_rel_a, &c->unsteady_a);
    steady(&B.smp[MT_CMP_STEP_P50], &c->trend_p_b, &c->trend_rel_b, &c->unsteady_b);
    if (c->unsteady_a &&
        !note(c, "the baseline's steps are not steady (%+.1f %% first half to second, trend p %.2g): warm-up?",
              100 * c->trend_rel_a, c->trend_p_a))
        goto out;
    if (c->unsteady_b &&
        !note(c, "this run's steps are not steady (%+.1f %% first half to second, trend p %.2g)",
              100 * c->trend_rel_b, c->trend_p_b))
        goto out;
    size_t cap = 0;
    if (!explain_run(c, da, false, &cap) || !explain_run(c, db, true, &cap))
        goto out;
    explain_job(c);
    if (!movers(&A, false, &k, &co, &an) || !movers(&B, true, &k, &co, &an))
        goto out;
    list_finish(&k, &c->kernels);
    list_finish(&co, &c->collectives);
    list_finish(&an, &c->annotations);
    k = co = an = (acc_t){0};
    st = MT_OK;
out:
    for (size_t i = 0; i < k.n; i++)
        free(k.v[i].name);
    for (size_t i = 0; i < co.n; i++)
        free(co.v[i].name);
    for (size_t i = 0; i < an.n; i++)
        free(an.v[i].name);
    free(k.v);
    free(co.v);
    free(an.v);
    run_free(&A);
    run_free(&B);
    mt_jdoc_free(da);
    mt_jdoc_free(db);
    if (st != MT_OK) {
        if (st == MT_ERR_NOMEM)
            mt_error_set(err, MT_ERR_NOMEM, "comparing the runs");
        mt_compare_free(c);
        return st;
    }
    *out = c;
    return MT_OK;
}

static void list_free(mt_cmp_list_t *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i].name);
    free(l->v);
}

void mt_compare_free(mt_compare_t *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n_notes; i++)
        free(c->notes[i]);
    free(c->notes);
    free(c->ranks);
    list_free(&c->kernels);
    list_free(&c->collectives);
    list_free(&c->annotations);
    free(c->baseline);
    free(c);
}

/* ------------------------------------------------------------ gates */

size_t mt_compare_gates(const mt_compare_t *c, mt_gate_t *g, size_t n, bool strict, bool too_few_pass)
{
    static const struct {
        mt_gate_metric_t g;
        mt_cmp_id_t m;
    } map[] = {{MT_GATE_OVERLAP, MT_CMP_OVERLAP},
               {MT_GATE_PERIOD_P99_US, MT_CMP_PERIOD_P99},
               {MT_GATE_PERIOD_P50_US, MT_CMP_PERIOD_P50},
               {MT_GATE_STRAGGLER_WAIT_PCT, MT_CMP_STRAGGLER_WAIT_PCT},
               {MT_GATE_IDLE_PCT, MT_CMP_IDLE_PCT},
               {MT_GATE_ALIGNMENT_P99_US, MT_CMP_ALIGNMENT_P99},
               {MT_GATE_STEP_P50_US, MT_CMP_STEP_P50},
               {MT_GATE_STEP_P99_US, MT_CMP_STEP_P99}};
    size_t failed = 0;
    for (size_t i = 0; i < n; i++) {
        mt_gate_t *x = &g[i];
        const mt_cmp_metric_t *m = NULL;
        for (size_t j = 0; j < sizeof map / sizeof *map; j++)
            if (map[j].g == x->metric)
                m = &c->m[map[j].m];
        if (m && m->has_b && !x->measured) {
            x->measured = true;
            x->value = m->b;
            x->why = NULL;
        } else if (!x->measured && (x->metric == MT_GATE_STEP_P50_US || x->metric == MT_GATE_STEP_P99_US)) {
            /* mt_gates_eval's reason (no comparison) is not true here: this
             * run has none (no ProfilerStep after the warm-up, or the steps
             * section left out by the memory budget) */
            x->why = "this run has no step times";
        }
        if (x->relative) {
            x->has_baseline = m && m->has_a;
            if (!x->has_baseline || !m->has_b) {
                x->measured = false;
                x->why = !m || !m->has_b ? "this run has no value" : "the baseline has no value";
            } else {
                x->baseline = m->a;
                x->threshold = x->mul * m->a + x->add;
            }
        }
        bool ok = false;
        if (x->measured) {
            double v = x->value, t = x->threshold;
            switch (x->op) {
            case MT_GATE_LE: ok = v <= t; break;
            case MT_GATE_GE: ok = v >= t; break;
            case MT_GATE_LT: ok = v < t; break;
            case MT_GATE_GT: ok = v > t; break;
            case MT_GATE_EQ: ok = v == t; break;
            }
            x->noise_pass = false;
            x->too_few = x->relative && m->verdict == MT_CMP_TOO_FEW;
            if (!ok && x->relative && !strict && m->verdict == MT_CMP_NOISE)
                ok = x->noise_pass = true;
            /* a test that could not have rejected is no evidence of no
             * change: the gate fails as measured unless told otherwise */
            if (!ok && x->too_few && too_few_pass)
                ok = true;
        }
        x->pass = ok;
        failed += !ok;
    }
    return failed;
}
