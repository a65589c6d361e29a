/* CI gates: parse "metric OP number", evaluate against the run's results
 * (include/mergetrace/gates.h). */
#include "mergetrace/gates.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/text.h"

static const char *const k_metric[MT_GATE_METRIC_COUNT_] = {
    "pipeline_overlap_score", "period_p99_us", "straggler_wait_pct", "idle_pct",
    "alignment_p99_us",       "step_p50_us",   "step_p99_us",        "period_p50_us"};

/* Older names still accepted, and the metric each means. "overlap" was the
 * first name of the OverlapScore, easily read as the terminal's
 * comm/compute overlap (a percentage). */
static const struct {
    const char *name;
    mt_gate_metric_t metric;
} k_alias[] = {{"overlap", MT_GATE_OVERLAP}};

/* The values a metric can take, so a threshold outside them (a percentage
 * given for a score, a negative time) is refused instead of silently
 * passing or failing forever. */
static const struct {
    double lo, hi;
    const char *what;
} k_range[MT_GATE_METRIC_COUNT_] = {
    {0, 1, "a score from 0 to 1"},
    {0, INFINITY, "microseconds, 0 or more"},
    {0, 100, "a percentage from 0 to 100"},
    {0, 100, "a percentage from 0 to 100"},
    {0, INFINITY, "microseconds, 0 or more"},
    {0, INFINITY, "microseconds, 0 or more"},
    {0, INFINITY, "microseconds, 0 or more"},
    {0, INFINITY, "microseconds, 0 or more"},
};
static const char *const k_op[] = {"<=", ">=", "<", ">", "=="};

const char *mt_gate_op_str(mt_gate_op_t op)
{
    return (unsigned)op < sizeof k_op / sizeof *k_op ? k_op[op] : "?";
}

const char *mt_gate_metric_str(mt_gate_metric_t m)
{
    return (unsigned)m < MT_GATE_METRIC_COUNT_ ? k_metric[m] : "?";
}

/* A finite number at p (strtod), or false. */
static bool number_at(const char *p, double *v, const char **end)
{
    while (*p == ' ')
        p++;
    errno = 0;
    char *e = NULL;
    *v = *p ? strtod(p, &e) : 0;
    *end = e ? e : p;
    return *p && *end != p && !errno && isfinite(*v);
}

static bool word_at(const char **p, const char *w)
{
    while (**p == ' ')
        (*p)++;
    size_t n = strlen(w);
    if (strncmp(*p, w, n))
        return false;
    *p += n;
    return true;
}

/* The right-hand side: NUM | [NUM*]baseline[*NUM][(+|-)NUM]. */
static bool parse_rhs(const char *p, mt_gate_t *g, const char **end)
{
    double v;
    const char *q = p;
    g->mul = 1;
    g->add = 0;
    if (word_at(&q, "baseline")) {
        g->relative = true;
        if (word_at(&q, "*")) {
            if (!number_at(q, &v, end))
                return false;
            g->mul = v;
            q = *end;
        }
    } else {
        if (!number_at(p, &v, end))
            return false;
        q = *end;
        const char *r = q;
        if (!word_at(&r, "*")) {
            g->threshold = v;
            return true;
        }
        if (!word_at(&r, "baseline"))
            return false;
        g->relative = true;
        g->mul = v;
        q = r;
    }
    const char *r = q;
    bool plus = word_at(&r, "+");
    if (plus || word_at(&r, "-")) {
        while (*r == ' ')
            r++;
        if (*r == '+' || *r == '-' || !number_at(r, &v, end))
            return false;
        g->add = plus ? v : -v;
        q = *end;
    }
    *end = q;
    return true;
}

mt_status_t mt_gate_parse(const char *text, mt_gate_t *g, mt_error_t *err)
{
    memset(g, 0, sizeof *g);
    snprintf(g->expr, sizeof g->expr, "%s", text);
    const char *p = text;
    while (*p == ' ')
        p++;
    size_t n = 0;
    while ((p[n] >= 'a' && p[n] <= 'z') || (p[n] >= '0' && p[n] <= '9') || p[n] == '_')
        n++;
    int m = -1;
    for (int i = 0; i < MT_GATE_METRIC_COUNT_; i++)
        if (strlen(k_metric[i]) == n && !memcmp(p, k_metric[i], n))
            m = i;
    for (size_t i = 0; m < 0 && i < sizeof k_alias / sizeof *k_alias; i++)
        if (strlen(k_alias[i].name) == n && !memcmp(p, k_alias[i].name, n))
            m = (int)k_alias[i].metric;
    if (m < 0) {
        mt_error_set(err, MT_ERR_USAGE,
                     "\"%s\": expected a metric first: pipeline_overlap_score, period_p99_us, straggler_wait_pct, "
                     "idle_pct, alignment_p99_us, step_p50_us, step_p99_us or period_p50_us",
                     text);
        return MT_ERR_USAGE;
    }
    p += n;
    while (*p == ' ')
        p++;
    int op = -1;
    for (int i = 0; i < 5 && op < 0; i++) /* two-character operators are tried first */
        if (!strncmp(p, k_op[i], strlen(k_op[i])))
            op = i;
    if (op < 0) {
        mt_error_set(err, MT_ERR_USAGE, "\"%s\": expected <=, >=, <, > or == after %.*s", text, (int)n, p - n);
        return MT_ERR_USAGE;
    }
    p += strlen(k_op[op]);
    while (*p == ' ')
        p++;
    const char *end = NULL;
    if (!parse_rhs(p, g, &end)) {
        mt_error_set(err, MT_ERR_USAGE, "\"%s\": expected a finite number or [NUM*]baseline[+-NUM] after %s", text,
                     k_op[op]);
        return MT_ERR_USAGE;
    }
    while (*end == ' ')
        end++;
    if (*end) {
        mt_error_set(err, MT_ERR_USAGE, "\"%s\": unexpected \"%s\" after the %s", text, end,
                     g->relative ? "baseline expression" : "number");
        return MT_ERR_USAGE;
    }
    double v = g->threshold;
    if (!g->relative && (v < k_range[m].lo || v > k_range[m].hi)) {
        mt_error_set(err, MT_ERR_USAGE, "\"%s\": %s is %s; %g is out of range%s", text, k_metric[m], k_range[m].what,
                     v, m == MT_GATE_OVERLAP && v > 1 && v <= 100 ? " (a percentage? write it as a fraction)" : "");
        return MT_ERR_USAGE;
    }
    g->metric = (mt_gate_metric_t)m;
    g->op = (mt_gate_op_t)op;
    return MT_OK;
}

/* The largest of some values, and whether there was any. */
typedef struct maxof {
    bool any;
    double mx;
} maxof_t;

static void maxof_add(maxof_t *m, double x)
{
    if (!m->any || x > m->mx)
        m->mx = x;
    m->any = true;
}

static bool maxof_get(const maxof_t *m, double scale, double *v, const char **why, const char *none)
{
    if (!m->any) {
        *why = none;
        return false;
    }
    *v = m->mx * scale;
    return true;
}

static bool measure(const mt_gate_inputs_t *in, mt_gate_metric_t m, double *v, const char **why)
{
    maxof_t mo = {false, 0};
    switch (m) {
    case MT_GATE_STEP_P50_US:
    case MT_GATE_STEP_P99_US:
        /* report.json's steps: a comparison is not needed to read them */
        if (!in->critpath || !in->critpath->used) {
            *why = "this run has no step times";
            return false;
        }
        *v = (double)(m == MT_GATE_STEP_P50_US ? in->critpath->p50_ns : in->critpath->p99_ns) / 1e3;
        return true;
    case MT_GATE_OVERLAP:
    case MT_GATE_PERIOD_P99_US:
    case MT_GATE_PERIOD_P50_US:
        if (!in->pipeline) {
            *why = "no pipeline in this job";
            return false;
        }
        if (!in->pipeline->sum.used) {
            *why = "no pipeline chunk after the warm-up";
            return false;
        }
        *v = m == MT_GATE_OVERLAP         ? in->pipeline->sum.overlap_score
             : m == MT_GATE_PERIOD_P50_US ? (double)in->pipeline->sum.period_p50_ns / 1e3
                                          : (double)in->pipeline->sum.period_p99_ns / 1e3;
        return true;
    case MT_GATE_STRAGGLER_WAIT_PCT:
        for (size_t i = 0; in->cross && i < in->cross->n_ranks; i++) {
            const mt_cross_rank_t *r = &in->cross->ranks[i];
            double d = (double)r->kernel_wait_ns + (double)r->kernel_transfer_ns;
            if (r->kernels && d > 0)
                maxof_add(&mo, (double)r->kernel_wait_ns * 100.0 / d);
        }
        return maxof_get(&mo, 1, v, why, "no collective kernels");
    case MT_GATE_IDLE_PCT:
        for (size_t i = 0; i < in->n_analyses; i++) {
            const mt_rank_analysis_t *a = in->analyses[i];
            if (a && a->span_ns > 0)
                maxof_add(&mo, (double)a->idle_ns * 100.0 / (double)a->span_ns);
        }
        return maxof_get(&mo, 1, v, why, "no GPU activity");
    case MT_GATE_ALIGNMENT_P99_US:
        for (size_t i = 0; in->aligned && i < in->n_clocks; i++)
            if (in->clocks[i].matched)
                maxof_add(&mo, in->clocks[i].residual_p99_ns);
        return maxof_get(&mo, 1e-3, v, why,
                         in->aligned ? "no rank's clock was fitted from collectives" : "clocks not aligned (--no-align)");
    default:
        *why = "unknown metric";
        return false;
    }
}

size_t mt_gates_eval(mt_gate_t *g, size_t n, const mt_gate_inputs_t *in)
{
    size_t failed = 0;
    for (size_t i = 0; i < n; i++) {
        g[i].why = NULL;
        g[i].value = 0;
        g[i].measured = measure(in, g[i].metric, &g[i].value, &g[i].why);
        if (g[i].relative && g[i].measured) { /* mt_compare_gates decides, once the baseline is known */
            g[i].measured = false;
            g[i].why = "relative to a baseline, and no --baseline was given";
        }
        double v = g[i].value, t = g[i].threshold;
        bool ok = false;
        if (g[i].measured) {
            switch (g[i].op) {
            case MT_GATE_LE: ok = v <= t; break;
            case MT_GATE_GE: ok = v >= t; break;
            case MT_GATE_LT: ok = v < t; break;
            case MT_GATE_GT: ok = v > t; break;
            case MT_GATE_EQ: ok = v == t; break;
            }
        }
        g[i].pass = ok;
        failed += !ok;
    }
    return failed;
}

const char *mt_gate_failure(const mt_gate_t *g, char *buf, size_t cap)
{
    if (g->pass)
        return NULL;
    if (g->measured && g->relative)
        snprintf(buf, cap, "gate failed: %s (value %.6g, baseline %.6g)", g->expr, g->value, g->baseline);
    else if (g->measured)
        snprintf(buf, cap, "gate failed: %s (value %.6g)", g->expr, g->value);
    else
        snprintf(buf, cap, "gate failed: %s (not measured: %s)", g->expr, g->why);
    return buf;
}
