/* Clock alignment from collective end times. A blocking collective ends at
 * (almost) the same true moment on every participant, so for every matched
 * instance each rank's corrected end should equal the others'. Each rank
 * gets corrected(t) = t + offset + drift * (t - anchor), fitted against the
 * consensus (median) of the other participants' corrected ends, rank by
 * rank in breadth-first order from the reference and then a few sweeps over
 * all, with outliers (mismatched or coalesced instances) rejected by a
 * median-absolute-deviation test. The reference rank keeps its own clock. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mergetrace/collectives.h"
#include "align/clockmap.h"
#include "base/sort.h"
#include "base/bigmem.h"
#include "base/stats.h"

#define SWEEPS 12
#define MIN_TOL_NS 2000.0     /* never reject within 2 us of the fit */
#define MIN_DRIFT_POINTS 8
#define MIN_DRIFT_SPAN_NS 1e6 /* need 1 ms of spread to fit a drift */
#define CAUSAL_TOL_NS 2000.0

int64_t mt_clock_round_far(double d)
{
    return (int64_t)llround(d);
}

mt_clock_map_t mt_clock_map(const mt_clock_t *c)
{
    if (!c)
        return (mt_clock_map_t){.fixed = true};
    mt_clock_map_t m = {.offset_ns = c->offset_ns, .slope = c->drift_ppm * 1e-6, .anchor_ns = c->anchor_ns};
    /* slope 0: offset + 0 * x is the offset for every finite x (a -0 offset
     * becomes +0, which rounds alike) */
    if (m.slope == 0) {
        m.fixed = true;
        m.fixed_ns = mt_clock_round(m.offset_ns);
    }
    return m;
}

int64_t mt_clock_apply(const mt_clock_t *c, int64_t t)
{
    mt_clock_map_t m = mt_clock_map(c);
    return mt_clock_map_apply(&m, t);
}

const char *mt_clock_drift_text(const mt_clock_t *c, char *buf, size_t cap)
{
    double d = isfinite(c->drift_ppm) ? c->drift_ppm : 0, f = isfinite(c->drift_fit_ppm) ? c->drift_fit_ppm : 0;
    if (c->drift_significant && d != 0)
        snprintf(buf, cap, fabs(d) >= 0.001 ? "%.3f" : "%.3g", d);
    else if (f != 0)
        snprintf(buf, cap, "%.3g n.s.", f);
    else if (!c->reference && c->connected && c->matched)
        snprintf(buf, cap, "-");
    else
        snprintf(buf, cap, "%.3f", d);
    return buf;
}

/* Per rank: which instance memberships it has, with the row's raw end: the
 * rows are wide (mt_crow_t, 80 bytes) and a fit reads only this field, so
 * a copy here keeps each rank's walk sequential instead of one cache miss
 * per point (42% of the fit's samples went to that load). */
typedef struct member {
    int64_t end_ns;
    uint32_t inst;
    uint32_t row;
    uint32_t pos;   /* index into m->members */
} member_t;

/* The consensus of an instance for a rank is the median of the corrected
 * ends of its first CONS_CAP fitted members other than that rank, in member
 * order. That set is always S minus one value, where S is the instance's
 * first CONS_CAP + 1 fitted members (all of them when there are fewer):
 * minus the rank itself when it is in S, else minus the last member of S
 * when S is full, else nothing. So each instance keeps S's values sorted
 * (in `set`, at the instance's member offset), a refit rank moves its value
 * in the sorted order (at most 65 entries), and a query is one binary
 * search (for the value left out) and two loads, instead of a selection
 * over up to 64 values: at 256 ranks the selections were most of the fit's
 * time. Instances go dirty, rebuilt on the next query, when a rank becomes
 * fitted for the first time. The set stops at 65 members whatever the
 * instance's width, so a fit pass stays linear in the rows.
 *
 * The sets are packed, min(width, 65) slots per instance (`off`), not one
 * slot per member: a rank's walk over its instances then stays within a
 * few MB instead of striding over 8 bytes per row of the job (392 MB at
 * 16384 ranks x 3000), and `last_row` saves the member-list load that
 * finds the value a full S leaves out. */
#define CONS_CAP 64
typedef struct cons_set {
    uint32_t off;      /* S's values are set[off .. off + n) */
    uint32_t end;      /* member position after S's last member */
    uint32_t last_row; /* row of S's last member (when S is full) */
    uint8_t n;         /* values in S (<= CONS_CAP + 1) */
    /* Where S's last member's value sits in the sorted values, NO_DROP
     * when not known. Every rank outside a full S (all but 65 of them)
     * leaves out that same value, so between two changes of S the search
     * is done once instead of once per rank. */
    uint8_t drop_last;
    bool dirty;
} cons_set_t;
#define NO_DROP 0xff

typedef struct ctx {
    const mt_match_t *m;
    size_t n_ranks;
    mt_clock_t *out;
    int32_t *rank_slot;       /* global rank -> slot in ranks[] (or -1), over [0, max_rank] */
    int32_t max_rank;
    member_t *mem;            /* memberships grouped by slot */
    size_t *mem_first;        /* n_ranks + 1 */
    bool *usable;             /* per instance */
    bool *fitted;             /* per slot: has a correction to trust */
    /* Per member position (bit p of m->members[p]): its rank is loaded and
     * fitted. A rebuild looks for the first 65 fitted members; while fewer
     * than 65 ranks are fitted (the first pass) that is a walk over all of
     * the instance's members, and testing a bit word by word instead of
     * two dependent loads per member was a quarter of the fit's time at
     * 1024 ranks x 3000. */
    uint64_t *fit_bits;
    /* Per row: its rank's slot (-1 when not loaded) and its end on the
     * rank's current correction. Every consensus reads the corrected ends
     * of up to 64 others; caching them makes that a load instead of a
     * clock application, and a rank's rows are refreshed when it is refit. */
    int32_t *row_slot;
    int64_t *row_end;
    cons_set_t *cs;           /* per instance */
    int64_t *set;             /* S's sorted values, instance i's at cs[i].off */
    double *xs, *ys, *tmp;    /* scratch, sized to the largest rank */
    bool *keep;
} ctx_t;

static int32_t slot_of(const ctx_t *c, int32_t rank)
{
    return rank >= 0 && rank <= c->max_rank ? c->rank_slot[rank] : -1;
}

/* Slot s is fitted from now on: set its members' bits in fit_bits. */
static void mark_fitted(ctx_t *c, size_t s)
{
    c->fitted[s] = true;
    for (size_t k = c->mem_first[s]; k < c->mem_first[s + 1]; k++)
        c->fit_bits[c->mem[k].pos / 64] |= 1ull << (c->mem[k].pos % 64);
}

static void set_rebuild(const ctx_t *c, uint32_t inst)
{
    cons_set_t *cs = &c->cs[inst];
    int64_t *v = c->set + cs->off;
    uint32_t p = c->m->first[inst], e = c->m->first[inst + 1];
    size_t k = 0;
    while (p < e && k < CONS_CAP + 1) {
        /* the next fitted member at or after p, 64 positions at a time */
        uint64_t w = c->fit_bits[p / 64] >> (p % 64);
        if (!w) {
            p = (p / 64 + 1) * 64;
            continue;
        }
        p += (uint32_t)__builtin_ctzll(w);
        if (p >= e)
            break;
        uint32_t row = c->m->members[p++];
        cs->last_row = row;
        /* insertion into the sorted prefix: k <= 65 */
        int64_t x = c->row_end[row];
        size_t j = k++;
        for (; j > 0 && v[j - 1] > x; j--)
            v[j] = v[j - 1];
        v[j] = x;
    }
    cs->end = p < e ? p : e;
    cs->drop_last = NO_DROP;
    cs->n = (uint8_t)k;
    cs->dirty = false;
}

#if defined(MT_CLOCK_SELFCHECK)
/* Test builds only (tests/unit/test_clock_check.c compiles this file with
 * MT_CLOCK_SELFCHECK): every consensus is also taken from its definition,
 * the median of the first CONS_CAP fitted others in member order, and the
 * two must agree exactly. */
size_t mt_clock_selfcheck_calls, mt_clock_selfcheck_bad;

static void consensus_check(const ctx_t *c, uint32_t inst, int32_t self_slot, int64_t base, bool any, double got)
{
    double v[CONS_CAP];
    size_t k = 0;
    for (uint32_t p = c->m->first[inst]; p < c->m->first[inst + 1] && k < CONS_CAP; p++) {
        uint32_t row = c->m->members[p];
        int32_t s = c->row_slot[row];
        if (s >= 0 && s != self_slot && c->fitted[s])
            v[k++] = (double)(c->row_end[row] - base);
    }
    mt_clock_selfcheck_calls++;
    if ((k > 0) != any || (k && mt_stats_median_f64(v, k) != got))
        mt_clock_selfcheck_bad++;
}
#endif

/* First index in v[0..n) whose value is >= x. Without a branch on the
 * comparison (a conditional move): the values are a rank's offsets
 * against the others', so the branch was a coin toss, and its
 * mispredictions were a fifth of the fit's time at 1024 ranks x 3000. */
static size_t lower_bound(const int64_t *v, size_t n, int64_t x)
{
    const int64_t *base = v;
    while (n > 1) {
        size_t h = n / 2;
        base += (size_t)(base[h - 1] < x) * h; /* gcc made a branch of ?: */
        n -= h;
    }
    return (size_t)(base - v) + (n && *base < x);
}

/* The consensus end of instance i without rank `self` (see cons_set_t),
 * returned relative to `base` (ns). Absolute ns since the epoch (~1.8e18)
 * do not fit a double's 53 bits, so every difference is taken in int64
 * first; the two middle values are whole ns far below 2^53 apart, so the
 * result is exactly the median of the same values as doubles. Returns false
 * when there are none. */
static bool consensus(ctx_t *c, const member_t *mb, int32_t self_slot, int64_t base, double *out)
{
    uint32_t inst = mb->inst;
    cons_set_t *cs = &c->cs[inst];
    if (cs->dirty)
        set_rebuild(c, inst);
    const int64_t *v = c->set + cs->off;
    size_t n = cs->n, drop = n; /* index of the value left out; n = none */
    if (c->fitted[self_slot] && mb->pos < cs->end)
        drop = lower_bound(v, n, c->row_end[mb->row]);
    else if (n == CONS_CAP + 1) {
        if (cs->drop_last == NO_DROP)
            cs->drop_last = (uint8_t)lower_bound(v, n, c->row_end[cs->last_row]);
        drop = cs->drop_last;
    }
    size_t k = n - (drop < n);
    bool any = k > 0;
    if (any) {
        /* the i-th smallest of S without v[drop] */
#define AT(i) ((i) < drop ? v[(i)] : v[(i) + 1])
        double hi = (double)(AT(k / 2) - base);
        *out = k % 2 ? hi : 0.5 * ((double)(AT(k / 2 - 1) - base) + hi);
#undef AT
    }
#if defined(MT_CLOCK_SELFCHECK)
    consensus_check(c, inst, self_slot, base, any, *out);
#endif
    return any;
}

/* The least-squares slope of the kept points and its standard error; 0 and
 * INFINITY when fewer than 3 points or no spread in x. */
static double ls_slope(const double *x, const double *y, const bool *keep, size_t n, double *se)
{
    double sx = 0, sy = 0;
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (keep[i]) {
            sx += x[i];
            sy += y[i];
            m++;
        }
    *se = INFINITY;
    if (m < 3)
        return 0;
    double mx = sx / (double)m, my = sy / (double)m, sxx = 0, sxy = 0;
    for (size_t i = 0; i < n; i++)
        if (keep[i]) {
            sxx += (x[i] - mx) * (x[i] - mx);
            sxy += (x[i] - mx) * (y[i] - my);
        }
    if (!(sxx > 0))
        return 0;
    double b = sxy / sxx, a = my - b * mx, rss = 0;
    for (size_t i = 0; i < n; i++)
        if (keep[i]) {
            double r = y[i] - (a + b * x[i]);
            rss += r * r;
        }
    *se = sqrt(rss / (double)(m - 2) / sxx);
    return b;
}

/* Robust straight-line fit y = a + b x: least squares, then drop points
 * beyond max(5 * 1.4826 * MAD, MIN_TOL_NS) of the fit and refit, 3 times.
 * *b_fit is the least-squares slope of the kept points even when the fit
 * does not use it (*b = 0: too few points, too short a span, or not 3
 * standard errors from 0), so the report can show what was left out. */
static void robust_fit(ctx_t *c, size_t n, bool fit_drift, double *a, double *b, double *b_fit, size_t *used)
{
    double *x = c->xs, *y = c->ys;
    bool *keep = c->keep;
    for (size_t i = 0; i < n; i++)
        keep[i] = true;
    double xmin = INFINITY, xmax = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        xmin = x[i] < xmin ? x[i] : xmin;
        xmax = x[i] > xmax ? x[i] : xmax;
    }
    bool drift = fit_drift && n >= MIN_DRIFT_POINTS && xmax - xmin >= MIN_DRIFT_SPAN_NS;
    /* Start from the median offset: least squares on raw data would let one
     * wild point steer the first rejection. */
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        c->tmp[k++] = y[i];
    *a = mt_stats_median_f64(c->tmp, k);
    *b = 0;
    for (int round = 0; round < 4; round++) {
        /* residuals and their MAD */
        k = 0;
        for (size_t i = 0; i < n; i++)
            c->tmp[k++] = fabs(y[i] - (*a + *b * x[i]));
        double mad = mt_stats_median_f64(c->tmp, k);
        double tol = 5 * 1.4826 * mad;
        if (tol < MIN_TOL_NS)
            tol = MIN_TOL_NS;
        size_t m = 0;
        bool changed = false;
        for (size_t i = 0; i < n; i++) {
            bool kp = fabs(y[i] - (*a + *b * x[i])) <= tol;
            changed |= kp != keep[i];
            keep[i] = kp;
            m += kp;
        }
        if (!m) {
            for (size_t i = 0; i < n; i++)
                keep[i] = true;
            m = n;
        }
        /* From the second round on (a, b) is the fit over the previous
         * round's points; the same points again give the same fit and the
         * same residuals, so the remaining rounds could change nothing.
         * (A fallback to all points counts as changed: not stopping is
         * always safe.) */
        if (round > 0 && !changed)
            break;
        if (drift && m >= MIN_DRIFT_POINTS) {
            double sx = 0, sy = 0;
            for (size_t i = 0; i < n; i++)
                if (keep[i]) {
                    sx += x[i];
                    sy += y[i];
                }
            double mx = sx / (double)m, my = sy / (double)m, sxx = 0, sxy = 0;
            for (size_t i = 0; i < n; i++)
                if (keep[i]) {
                    sxx += (x[i] - mx) * (x[i] - mx);
                    sxy += (x[i] - mx) * (y[i] - my);
                }
            *b = sxx > 0 ? sxy / sxx : 0;
            *a = my - *b * mx;
            /* Keep the slope only when the data can tell it: over a short
             * trace, microseconds of jitter look like tens of ppm. Drop it
             * unless it exceeds 3 standard errors. */
            double rss = 0;
            for (size_t i = 0; i < n; i++)
                if (keep[i]) {
                    double r = y[i] - (*a + *b * x[i]);
                    rss += r * r;
                }
            double se = m > 2 && sxx > 0 ? sqrt(rss / (double)(m - 2) / sxx) : INFINITY;
            if (!(fabs(*b) > 3 * se)) {
                k = 0;
                for (size_t i = 0; i < n; i++)
                    if (keep[i])
                        c->tmp[k++] = y[i];
                *a = mt_stats_median_f64(c->tmp, k);
                *b = 0;
            }
        } else {
            k = 0;
            for (size_t i = 0; i < n; i++)
                if (keep[i])
                    c->tmp[k++] = y[i];
            *a = mt_stats_median_f64(c->tmp, k);
            *b = 0;
        }
    }
    size_t u = 0;
    for (size_t i = 0; i < n; i++)
        u += keep[i];
    *used = u;
    double se;
    *b_fit = *b != 0 ? *b : fit_drift ? ls_slope(x, y, keep, n, &se) : 0;
}

/* Refresh the cached corrected ends of slot s's rows and move them in the
 * sorted sets they belong to; `was_fitted`: s had a correction before this
 * one (else s may just have joined sets: they are rebuilt when next read). */
static void refresh_rows(ctx_t *c, size_t s, bool was_fitted)
{
    mt_clock_map_t cm = mt_clock_map(&c->out[s]); /* the correction's constants once, not per row */
    for (size_t k = c->mem_first[s]; k < c->mem_first[s + 1]; k++) {
        const member_t *mb = &c->mem[k];
        int64_t old = c->row_end[mb->row];
        int64_t x = mt_clock_map_apply(&cm, mb->end_ns);
        c->row_end[mb->row] = x;
        cons_set_t *cs = &c->cs[mb->inst];
        if (cs->dirty || mb->pos >= cs->end)
            continue;
        if (!was_fitted) {
            cs->dirty = true;
            continue;
        }
        if (old == x)
            continue;
        int64_t *v = c->set + cs->off;
        cs->drop_last = NO_DROP;
        size_t j = lower_bound(v, cs->n, old);
        /* slide the entries between the old and the new place by one */
        if (x > old)
            for (; j + 1 < cs->n && v[j + 1] < x; j++)
                v[j] = v[j + 1];
        else
            for (; j > 0 && v[j - 1] > x; j--)
                v[j] = v[j - 1];
        v[j] = x;
    }
}

static void refresh_all(ctx_t *c)
{
    for (size_t s = 0; s < c->n_ranks; s++)
        refresh_rows(c, s, false);
    for (size_t i = 0; i < c->m->n_inst; i++)
        c->cs[i].dirty = true;
}

/* Fit slot s against the current corrections of everyone else. Returns the
 * number of points. */
static size_t fit_rank(ctx_t *c, size_t s, const mt_clock_opts_t *o)
{
    size_t n = 0;
    mt_clock_t *ck = &c->out[s];
    for (size_t k = c->mem_first[s]; k < c->mem_first[s + 1]; k++) {
        const member_t *mb = &c->mem[k];
        double delta; /* consensus end - this rank's raw end */
        if (!c->usable[mb->inst] || !consensus(c, mb, (int32_t)s, mb->end_ns, &delta))
            continue;
        c->xs[n] = (double)(mb->end_ns - ck->anchor_ns);
        c->ys[n] = delta;
        n++;
    }
    if (!n)
        return 0;
    double a, b, b_fit;
    size_t used;
    robust_fit(c, n, !o->no_drift, &a, &b, &b_fit, &used);
    ck->offset_ns = a;
    ck->drift_ppm = b * 1e6;
    ck->drift_fit_ppm = b_fit * 1e6;
    ck->drift_significant = b != 0;
    ck->matched = used;
    ck->rejected = n - used;
    bool was_fitted = c->fitted[s];
    if (!was_fitted)
        mark_fitted(c, s);
    refresh_rows(c, s, was_fitted);
    return n;
}

mt_status_t mt_clock_fit(const mt_crow_t *rows, size_t n_rows, const mt_match_t *m, const int32_t *ranks,
                         size_t n_ranks, const mt_clock_opts_t *opts, mt_clock_t *out)
{
    mt_clock_opts_t defaults = {.ref_rank = -1};
    if (!opts)
        opts = &defaults;
    ctx_t c = {.m = m, .n_ranks = n_ranks, .out = out, .max_rank = -1};
    mt_status_t rc = MT_ERR_NOMEM;
    for (size_t i = 0; i < n_ranks; i++)
        c.max_rank = ranks[i] > c.max_rank ? ranks[i] : c.max_rank;
    c.rank_slot = malloc(((size_t)c.max_rank + 2) * sizeof *c.rank_slot);
    c.mem_first = calloc(n_ranks + 1, sizeof *c.mem_first);
    c.usable = calloc(m->n_inst + 1, sizeof *c.usable);
    c.fitted = calloc(n_ranks + 1, sizeof *c.fitted);
    size_t *fill = calloc(n_ranks + 1, sizeof *fill);
    int32_t *queue = malloc((n_ranks + 1) * sizeof *queue);
    bool *seen = calloc(n_ranks + 1, sizeof *seen);
    bool *inst_seen = calloc(m->n_inst + 1, sizeof *inst_seen);
    c.row_slot = mt_big_malloc((n_rows ? n_rows : 1) * sizeof *c.row_slot);
    c.row_end = mt_big_malloc((n_rows ? n_rows : 1) * sizeof *c.row_end);
    c.cs = mt_big_calloc(m->n_inst + 1, sizeof *c.cs);
    c.fit_bits = mt_big_calloc((size_t)m->first[m->n_inst] / 64 + 1, sizeof *c.fit_bits);
    if (!c.rank_slot || !c.mem_first || !c.usable || !c.fitted || !fill || !queue || !seen || !inst_seen || !c.row_slot ||
        !c.row_end || !c.cs || !c.fit_bits)
        goto done;
    for (int32_t r = 0; r <= c.max_rank; r++)
        c.rank_slot[r] = -1;
    for (size_t i = 0; i < n_ranks; i++)
        if (ranks[i] >= 0)
            c.rank_slot[ranks[i]] = (int32_t)i;
    for (size_t i = 0; i < n_rows; i++)
        c.row_slot[i] = slot_of(&c, rows[i].rank);

    /* Usable instances: matched (fully or partly), at least two members. */
    size_t n_set = 0;
    for (size_t i = 0; i < m->n_inst; i++) {
        uint32_t w = m->first[i + 1] - m->first[i];
        c.usable[i] = (m->status[i] == MT_INST_FULL || m->status[i] == MT_INST_PARTIAL) && w >= 2;
        c.cs[i].off = (uint32_t)n_set; /* <= m->first[i]: fits */
        if (c.usable[i])
            n_set += w < CONS_CAP + 1 ? w : CONS_CAP + 1;
    }
    c.set = mt_big_malloc((n_set ? n_set : 1) * sizeof *c.set);
    if (!c.set)
        goto done;
    for (size_t i = 0; i < m->n_inst; i++) {
        if (!c.usable[i])
            continue;
        for (uint32_t p = m->first[i]; p < m->first[i + 1]; p++) {
            int32_t s = c.row_slot[m->members[p]];
            if (s >= 0)
                c.mem_first[s + 1]++;
        }
    }
    for (size_t s = 0; s < n_ranks; s++)
        c.mem_first[s + 1] += c.mem_first[s];
    size_t total = c.mem_first[n_ranks], biggest = 0;
    for (size_t s = 0; s < n_ranks; s++)
        if (c.mem_first[s + 1] - c.mem_first[s] > biggest)
            biggest = c.mem_first[s + 1] - c.mem_first[s];
    c.mem = mt_big_malloc((total ? total : 1) * sizeof *c.mem);
    c.xs = mt_big_malloc((biggest + 1) * sizeof *c.xs);
    c.ys = mt_big_malloc((biggest + 1) * sizeof *c.ys);
    c.tmp = mt_big_malloc((biggest + 1) * sizeof *c.tmp);
    c.keep = mt_big_malloc((biggest + 1) * sizeof *c.keep);
    if (!c.mem || !c.xs || !c.ys || !c.tmp || !c.keep)
        goto done;
    for (size_t i = 0; i < m->n_inst; i++) {
        if (!c.usable[i])
            continue;
        for (uint32_t p = m->first[i]; p < m->first[i + 1]; p++) {
            uint32_t row = m->members[p];
            int32_t s = c.row_slot[row];
            if (s >= 0)
                c.mem[c.mem_first[s] + fill[s]++] = (member_t){rows[row].end_ns, (uint32_t)i, row, p};
        }
    }

    /* Identity to start; anchors at the median of each rank's instance ends.
     * The reference: --ref-rank when it is loaded, else the lowest rank. */
    int32_t ref_slot = -1, lowest = -1;
    for (size_t s = 0; s < n_ranks; s++) {
        mt_clock_t *ck = &out[s];
        memset(ck, 0, sizeof *ck);
        ck->rank = ranks[s];
        size_t k = 0;
        int64_t *ends = (int64_t *)(void *)c.xs; /* same size as doubles */
        for (size_t j = c.mem_first[s]; j < c.mem_first[s + 1]; j++)
            ends[k++] = c.mem[j].end_ns;
        if (k) {
            qsort(ends, k, sizeof *ends, mt_cmp_i64);
            ck->anchor_ns = ends[k / 2];
        }
        if (opts->ref_rank >= 0 && ranks[s] == opts->ref_rank)
            ref_slot = (int32_t)s;
        if (lowest < 0 || ranks[s] < ranks[lowest])
            lowest = (int32_t)s;
    }
    if (ref_slot < 0)
        ref_slot = lowest;
    if (ref_slot < 0) {
        rc = MT_OK; /* no ranks */
        goto done;
    }
    refresh_all(&c); /* identity corrections */
    out[ref_slot].reference = true;
    out[ref_slot].connected = true;
    mark_fitted(&c, (size_t)ref_slot);

    /* Breadth-first over ranks that share instances, from the reference.
     * An instance's members are all queued the first time it is reached,
     * so it is walked once: W members once, not once per member (W^2 per
     * instance: 82% of the fit's time on 4096 ranks x 320 collectives,
     * bench_cross). */
    size_t qh = 0, qt = 0;
    queue[qt++] = ref_slot;
    seen[ref_slot] = true;
    while (qh < qt) {
        int32_t s = queue[qh++];
        for (size_t j = c.mem_first[s]; j < c.mem_first[s + 1]; j++) {
            uint32_t inst = c.mem[j].inst;
            if (inst_seen[inst])
                continue;
            inst_seen[inst] = true;
            for (uint32_t p = m->first[inst]; p < m->first[inst + 1]; p++) {
                int32_t o = c.row_slot[m->members[p]];
                if (o >= 0 && !seen[o]) {
                    seen[o] = true;
                    queue[qt++] = o;
                }
            }
        }
    }
    if (!opts->no_align) {
        /* First pass in BFS order: each rank sees fitted neighbours. */
        for (size_t q = 1; q < qt; q++)
            fit_rank(&c, (size_t)queue[q], opts);
        /* Sweeps: every rank against everyone's latest correction, until
         * nothing moves by a nanosecond (or SWEEPS). */
        for (int sweep = 0; sweep < SWEEPS; sweep++) {
            double moved = 0;
            for (size_t q = 1; q < qt; q++) {
                mt_clock_t before = out[queue[q]];
                fit_rank(&c, (size_t)queue[q], opts);
                const mt_clock_t *after = &out[queue[q]];
                /* the change, measured over a second around the anchor */
                double d = fabs(after->offset_ns - before.offset_ns) +
                           fabs(after->drift_ppm - before.drift_ppm) * 1e3;
                moved = d > moved ? d : moved;
            }
            if (moved < 1.0)
                break;
        }
    }
    for (size_t q = 0; q < qt; q++)
        out[queue[q]].connected = true;
    /* The other components, for the report: traces that share nothing with
     * the reference's group are not aligned, and the user must hear why. */
    for (size_t s = 0; s < n_ranks; s++)
        out[s].group = seen[s] ? 0 : -1;
    int32_t groups = 1;
    for (size_t s0 = 0; s0 < n_ranks; s0++) {
        if (out[s0].group >= 0)
            continue;
        size_t h = 0, t = 0;
        queue[t++] = (int32_t)s0;
        out[s0].group = groups;
        while (h < t) {
            int32_t s = queue[h++];
            for (size_t j = c.mem_first[s]; j < c.mem_first[s + 1]; j++) {
                uint32_t inst = c.mem[j].inst;
                for (uint32_t p = m->first[inst]; p < m->first[inst + 1]; p++) {
                    int32_t o = c.row_slot[m->members[p]];
                    if (o >= 0 && out[o].group < 0) {
                        out[o].group = groups;
                        queue[t++] = o;
                    }
                }
            }
        }
        groups++;
    }
    for (size_t s = 0; s < n_ranks; s++)
        if (!seen[s]) {
            out[s].offset_ns = 0;
            out[s].drift_ppm = out[s].drift_fit_ppm = 0;
            out[s].drift_significant = false;
        }
    for (size_t s = 0; s < n_ranks; s++)
        if (seen[s] && !c.fitted[s])
            mark_fitted(&c, s); /* --no-align: only the reference was fitted */
    /* Quantise to what report.json prints (offset in whole ns, drift in
     * micro-ppm), so anyone applying the reported numbers gets exactly the
     * timestamps of the merged trace. */
    for (size_t s = 0; s < n_ranks; s++) {
        out[s].offset_ns = (double)llround(out[s].offset_ns);
        out[s].drift_ppm = (double)llround(out[s].drift_ppm * 1e6) / 1e6;
        out[s].drift_fit_ppm = (double)llround(out[s].drift_fit_ppm * 1e6) / 1e6;
    }
    if (opts->no_align)
        for (size_t s = 0; s < n_ranks; s++) {
            out[s].offset_ns = out[s].drift_ppm = out[s].drift_fit_ppm = 0;
            out[s].drift_significant = false;
        }
    refresh_all(&c); /* the final, quantised corrections */

    /* Residuals against the consensus of the others, and causality: nobody
     * ends an instance before the last participant started it. */
    for (size_t s = 0; s < n_ranks; s++) {
        size_t k = 0;
        for (size_t j = c.mem_first[s]; j < c.mem_first[s + 1]; j++) {
            double delta;
            int64_t mine = c.row_end[c.mem[j].row]; /* refreshed with the final corrections */
            if (!consensus(&c, &c.mem[j], (int32_t)s, mine, &delta))
                continue;
            c.tmp[k++] = fabs(delta);
        }
        /* Over the points the fit kept (the same rejection rule), so a few
         * rejected outliers do not pose as the residual; they are counted
         * in `rejected`. */
        double mad = mt_stats_quantile_f64(c.tmp, k, 0.5), tol = 5 * 1.4826 * mad;
        if (tol < MIN_TOL_NS)
            tol = MIN_TOL_NS;
        size_t kept = 0; /* the values <= tol, moved to the front */
        for (size_t j = 0; j < k; j++)
            if (c.tmp[j] <= tol) {
                double t = c.tmp[kept];
                c.tmp[kept++] = c.tmp[j];
                c.tmp[j] = t;
            }
        out[s].residual_p50_ns = mt_stats_quantile_f64(c.tmp, kept, 0.5);
        out[s].residual_p99_ns = mt_stats_quantile_f64(c.tmp, kept, 0.99);
        if (!out[s].matched && !out[s].reference)
            out[s].matched = 0;
        if (out[s].reference)
            out[s].matched = c.mem_first[s + 1] - c.mem_first[s];
    }
    for (size_t i = 0; i < m->n_inst; i++) {
        if (!c.usable[i])
            continue;
        int64_t last_start = INT64_MIN;
        for (uint32_t p = m->first[i]; p < m->first[i + 1]; p++) {
            const mt_crow_t *r = &rows[m->members[p]];
            int32_t s = c.row_slot[m->members[p]];
            if (s < 0 || !seen[s])
                continue;
            int64_t st = mt_clock_apply(&out[s], r->start_ns);
            last_start = st > last_start ? st : last_start;
        }
        for (uint32_t p = m->first[i]; p < m->first[i + 1]; p++) {
            const mt_crow_t *r = &rows[m->members[p]];
            int32_t s = c.row_slot[m->members[p]];
            if (s < 0 || !seen[s])
                continue;
            int64_t tol = (int64_t)llround(CAUSAL_TOL_NS + out[s].residual_p99_ns);
            if (mt_clock_apply(&out[s], r->end_ns) + tol < last_start)
                out[s].violations++;
        }
    }
    rc = MT_OK;
done:
    free(c.row_slot);
    free(c.row_end);
    free(c.cs);
    free(c.fit_bits);
    free(c.set);
    free(c.rank_slot);
    free(c.mem_first);
    free(c.usable);
    free(c.fitted);
    free(c.mem);
    free(c.xs);
    free(c.ys);
    free(c.tmp);
    free(c.keep);
    free(fill);
    free(queue);
    free(seen);
    free(inst_seen);
    return rc;
}
