/* Whether the traces belong to one run, and how far the clock fit can be
 * trusted (include/mergetrace/trust.h gives the rules and their limits). */
#include "mergetrace/trust.h"
#include "base/sort.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/text.h"

const char *mt_trust_code_str(mt_trust_code_t c)
{
    switch (c) {
    case MT_TRUST_WORLD_SIZE:
        return "mixed_world_size";
    case MT_TRUST_SHARED_GROUP:
        return "mixed_shared_group";
    case MT_TRUST_DRIFT:
        return "mixed_drift";
    case MT_TRUST_RESIDUAL:
        return "mixed_residual";
    case MT_TRUST_SIZES:
        return "mixed_sizes";
    case MT_TRUST_WINDOW:
        return "mixed_window";
    case MT_TRUST_SAME_RUN:
        break;
    }
    return "";
}

static void verdict(mt_trust_t *t, mt_trust_code_t c, size_t a, size_t b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

static void verdict(mt_trust_t *t, mt_trust_code_t c, size_t a, size_t b, const char *fmt, ...)
{
    t->mixed = c;
    t->a = a;
    t->b = b;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->why, sizeof t->why, fmt, ap);
    va_end(ap);
}

/* a slot (index into traces) per rank, by binary search over a sorted copy */
typedef struct rank_slot {
    int32_t rank;
    uint32_t slot;
} rank_slot_t;

static int rs_cmp(const void *x, const void *y)
{
    const rank_slot_t *a = x, *b = y;
    return (a->rank > b->rank) - (a->rank < b->rank);
}

static int64_t slot_of(const rank_slot_t *rs, size_t n, int32_t rank)
{
    rank_slot_t key = {rank, 0};
    const rank_slot_t *hit = bsearch(&key, rs, n, sizeof *rs, rs_cmp);
    return hit ? (int64_t)hit->slot : -1;
}

typedef struct pg_row {
    uint64_t group;
    int32_t clock_group;
    uint32_t slot;
} pg_row_t;

static int pg_cmp(const void *x, const void *y)
{
    const pg_row_t *a = x, *b = y;
    if (a->group != b->group)
        return a->group < b->group ? -1 : 1;
    if (a->clock_group != b->clock_group)
        return a->clock_group < b->clock_group ? -1 : 1;
    return (a->slot > b->slot) - (a->slot < b->slot);
}

/* Ranks of two clock groups of 2+ ranks that both ran one named process
 * group's collectives: the first such pair (lowest hash), or false. */
static mt_status_t shared_group(const mt_clock_t *clocks, size_t n, const rank_slot_t *rs, const mt_crow_t *rows,
                                size_t n_rows, size_t *a, size_t *b, bool *found)
{
    *found = false;
    int32_t n_groups = 0;
    for (size_t i = 0; i < n; i++)
        n_groups = clocks[i].group + 1 > n_groups ? clocks[i].group + 1 : n_groups;
    if (n_groups < 2)
        return MT_OK;
    size_t *size = calloc((size_t)n_groups, sizeof *size);
    pg_row_t *v = malloc((n_rows ? n_rows : 1) * sizeof *v);
    if (!size || !v) {
        free(size);
        free(v);
        return MT_ERR_NOMEM;
    }
    for (size_t i = 0; i < n; i++)
        if (clocks[i].group >= 0)
            size[clocks[i].group]++;
    size_t k = 0;
    for (size_t i = 0; i < n_rows; i++) {
        if (!(rows[i].flags & MT_CI_PG))
            continue;
        int64_t s = slot_of(rs, n, rows[i].rank);
        if (s < 0 || clocks[s].group < 0 || size[clocks[s].group] < 2)
            continue;
        v[k++] = (pg_row_t){rows[i].group, clocks[s].group, (uint32_t)s};
    }
    qsort(v, k, sizeof *v, pg_cmp);
    for (size_t i = 1; i < k && !*found; i++)
        if (v[i].group == v[i - 1].group && v[i].clock_group != v[i - 1].clock_group) {
            *a = v[i - 1].slot;
            *b = v[i].slot;
            *found = true;
        }
    free(size);
    free(v);
    return MT_OK;
}

/* Per slot: instances of 2+ participants it took part in, and those where
 * its signature differs from the majority's (ties: the lowest rank's)
 * while another participant shares its signature: a side of two or more
 * ranks that agree with each other against the rest, which one rank with
 * odd sizes, or two ranks paired wrongly, do not make. */
static mt_status_t disagreements(const rank_slot_t *rs, size_t n, const mt_crow_t *rows, const mt_match_t *m,
                                 uint64_t *inst, uint64_t *dis)
{
    size_t widest = 0;
    for (size_t i = 0; i < m->n_inst; i++) {
        size_t w = m->first[i + 1] - m->first[i];
        widest = w > widest ? w : widest;
    }
    uint64_t *sig = malloc((widest ? widest : 1) * sizeof *sig);
    if (!sig)
        return MT_ERR_NOMEM;
    for (size_t i = 0; i < m->n_inst; i++) {
        uint32_t f = m->first[i], e = m->first[i + 1];
        if (e - f < 2)
            continue;
        for (uint32_t p = f; p < e; p++) {
            int64_t s = slot_of(rs, n, rows[m->members[p]].rank);
            if (s >= 0)
                inst[s]++;
        }
        if (m->status[i] != MT_INST_MISMATCH)
            continue;
        size_t w = e - f;
        for (size_t p = 0; p < w; p++)
            sig[p] = rows[m->members[f + p]].sig;
        qsort(sig, w, sizeof *sig, mt_cmp_u64);
        uint64_t first = rows[m->members[f]].sig, mode = sig[0];
        size_t best = 0, first_count = 0;
        for (size_t p = 0; p < w;) {
            size_t q = p;
            while (q < w && sig[q] == sig[p])
                q++;
            if (q - p > best) {
                best = q - p;
                mode = sig[p];
            }
            if (sig[p] == first)
                first_count = q - p;
            p = q;
        }
        if (first_count == best)
            mode = first;
        for (uint32_t p = f; p < e; p++) {
            uint64_t own = rows[m->members[p]].sig;
            if (own == mode)
                continue;
            size_t lo = 0, hi = w; /* how many share it: sig[] is sorted */
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (sig[mid] < own)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            int64_t s = slot_of(rs, n, rows[m->members[p]].rank);
            if (s >= 0 && lo + 1 < w && sig[lo + 1] == own)
                dis[s]++;
        }
    }
    free(sig);
    return MT_OK;
}

mt_status_t mt_trust_check(const mt_trust_trace_t *tr, const mt_clock_t *clocks, size_t n, const mt_crow_t *rows,
                           size_t n_rows, const mt_match_t *m, bool aligned, mt_trust_t *out)
{
    memset(out, 0, sizeof *out);
    if (!n)
        return MT_OK;
    rank_slot_t *rs = malloc(n * sizeof *rs);
    uint64_t *inst = calloc(n, sizeof *inst), *dis = calloc(n, sizeof *dis);
    mt_status_t st = MT_ERR_NOMEM;
    if (!rs || !inst || !dis)
        goto done;
    for (size_t i = 0; i < n; i++)
        rs[i] = (rank_slot_t){clocks[i].rank, (uint32_t)i};
    qsort(rs, n, sizeof *rs, rs_cmp);
    size_t ref = 0;
    for (size_t i = 0; i < n; i++)
        if (clocks[i].reference)
            ref = i;

    /* how good the fit is, over the ranks it reached */
    for (size_t i = 0; i < n; i++) {
        const mt_clock_t *c = &clocks[i];
        if (!c->connected || !c->matched || !isfinite(c->residual_p99_ns))
            continue;
        if (c->residual_p99_ns > out->fit_error_ns ||
            (c->residual_p99_ns == out->fit_error_ns && clocks[out->worst].reference)) {
            out->fit_error_ns = c->residual_p99_ns;
            out->worst = i;
            out->worst_matched = c->matched;
        }
    }
    out->poor_fit = aligned && out->fit_error_ns > MT_TRUST_POOR_FIT_NS;
    if (m && aligned && (st = disagreements(rs, n, rows, m, inst, dis)) != MT_OK)
        goto done;
    st = MT_OK;

    /* world size */
    for (size_t i = 0, a = n; i < n; i++) {
        if (tr[i].world_size <= 0)
            continue;
        if (a == n) {
            a = i;
        } else if (tr[i].world_size != tr[a].world_size) {
            verdict(out, MT_TRUST_WORLD_SIZE, a, i, "world sizes %lld and %lld", (long long)tr[a].world_size,
                    (long long)tr[i].world_size);
            goto done;
        }
    }
    /* one named process group in two clock groups */
    size_t a, b;
    bool found;
    if (m && (st = shared_group(clocks, n, rs, rows, n_rows, &a, &b, &found)) != MT_OK)
        goto done;
    if (m && found) {
        verdict(out, MT_TRUST_SHARED_GROUP, a, b, "ranks %d and %d share a process group but none of its "
                "collectives", clocks[a].rank, clocks[b].rank);
        goto done;
    }
    if (aligned) {
        /* drift no pair of real clocks has */
        size_t w = n;
        for (size_t i = 0; i < n; i++) {
            const mt_clock_t *c = &clocks[i];
            if (c->connected && !c->reference && c->drift_significant && isfinite(c->drift_ppm) &&
                fabs(c->drift_ppm) > MT_TRUST_MAX_DRIFT_PPM && (w == n || fabs(c->drift_ppm) > fabs(clocks[w].drift_ppm)))
                w = i;
        }
        if (w < n) {
            verdict(out, MT_TRUST_DRIFT, ref, w, "rank %d's clock drifts %.0f ppm from rank %d's (real clocks: tens)",
                    clocks[w].rank, clocks[w].drift_ppm, clocks[ref].rank);
            goto done;
        }
        /* ends that do not line up under any clock */
        for (size_t i = 0; i < n; i++) {
            const mt_clock_t *c = &clocks[i];
            if (c->connected && !c->reference && c->matched >= 4 && c->residual_p50_ns > MT_TRUST_MAX_RESID_NS &&
                (w == n || c->residual_p50_ns > clocks[w].residual_p50_ns))
                w = i;
        }
        if (w < n) {
            char t[32];
            mt_fmt_time(t, sizeof t, (int64_t)llround(clocks[w].residual_p50_ns));
            verdict(out, MT_TRUST_RESIDUAL, ref, w, "rank %d's collectives end %s from the others' (median after the "
                    "fit; real: microseconds)", clocks[w].rank, t);
            goto done;
        }
        /* sizes that disagree, and a fit that does not hold */
        for (size_t i = 0; i < n; i++) {
            if (inst[i] < 4 || dis[i] < 4 || dis[i] * 100 < MT_TRUST_SIZES_PCT * inst[i] ||
                !(clocks[i].residual_p99_ns > MT_TRUST_POOR_FIT_NS))
                continue;
            if (w == n || dis[i] * inst[w] > dis[w] * inst[i])
                w = i;
        }
        if (w < n) {
            char t[32];
            mt_fmt_time(t, sizeof t, (int64_t)llround(clocks[w].residual_p99_ns));
            verdict(out, MT_TRUST_SIZES, w == ref ? (ref + 1) % n : ref, w,
                    "rank %d disagrees on sizes at %llu of %llu collectives, ends by %s (p99)",
                    clocks[w].rank, (unsigned long long)dis[w], (unsigned long long)inst[w], t);
            goto done;
        }
    }
    /* an unconnected trace recorded at another time */
    for (size_t i = 0; i < n; i++) {
        if (clocks[i].connected || clocks[i].group == clocks[ref].group || tr[i].last_ns < tr[i].first_ns ||
            tr[ref].last_ns < tr[ref].first_ns)
            continue;
        int64_t gap = tr[i].first_ns > tr[ref].last_ns ? tr[i].first_ns - tr[ref].last_ns
                      : tr[ref].first_ns > tr[i].last_ns ? tr[ref].first_ns - tr[i].last_ns
                                                          : 0;
        if (gap > MT_TRUST_MAX_GAP_NS) {
            verdict(out, MT_TRUST_WINDOW, ref, i, "recorded %.1f days apart, with no collective in common",
                    (double)gap / 86400e9);
            goto done;
        }
    }
done:
    free(rs);
    free(inst);
    free(dis);
    return st;
}

/* One evidence line of at most 97 bytes (as stragglers.c writes them). */
static mt_status_t add_line(mt_cross_t *x, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static mt_status_t add_line(mt_cross_t *x, const char *fmt, ...)
{
    char b[98];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(b, sizeof b, fmt, ap);
    va_end(ap);
    size_t len = k < 0 ? 0 : (size_t)k < sizeof b ? (size_t)k : sizeof b - 1;
    char **e = realloc(x->evidence, (x->n_evidence + 1) * sizeof *e);
    if (!e)
        return MT_ERR_NOMEM;
    x->evidence = e;
    char *s = malloc(len + 1);
    if (!s)
        return MT_ERR_NOMEM;
    memcpy(s, b, len);
    s[len] = '\0';
    e[x->n_evidence++] = s;
    return MT_OK;
}

mt_status_t mt_trust_annotate(mt_cross_t *x, const mt_trust_t *t, bool aligned, bool forced)
{
    mt_status_t st = MT_OK;
    if (forced && t->mixed && (st = add_line(x, "different runs (--force): %s", t->why)) != MT_OK)
        return st;
    if (!aligned)
        return add_line(x, "--no-align: arrivals compared on the ranks' raw clocks; only the kernel "
                           "durations hold");
    if (!t->poor_fit)
        return MT_OK;
    char e[32], l[32];
    mt_fmt_time(e, sizeof e, (int64_t)llround(t->fit_error_ns));
    if ((st = add_line(x, "clock fit error up to %s (residual p99 of %llu matched): arrivals may be off by as much",
                       e, (unsigned long long)t->worst_matched)) != MT_OK)
        return st;
    for (size_t i = 0; i < x->n_suspects; i++) {
        const mt_cross_rank_t *r = NULL;
        for (size_t k = 0; k < x->n_ranks && !r; k++)
            if (x->ranks[k].rank == x->suspects[i])
                r = &x->ranks[k];
        if (!r || !r->last)
            continue;
        int64_t late = r->late_last_median_ns; /* as the evidence line above it */
        mt_fmt_time(l, sizeof l, late);
        st = add_line(x, "rank %d: %s late when last, %s the fit's error: %s", r->rank, l,
                      (double)late > t->fit_error_ns ? "above" : "within",
                      (double)late > t->fit_error_ns ? "the verdict holds" : "the verdict could change");
        if (st != MT_OK)
            return st;
    }
    return add_line(x, "wait per participant and collective may be off by up to %s (the fit's error)", e);
}

void mt_trust_world(const int64_t *ranks, const int64_t *world_sizes, size_t n, mt_trust_world_t *w)
{
    *w = (mt_trust_world_t){.world = -1};
    for (size_t i = 0; i < n; i++) {
        int64_t s = world_sizes[i];
        if (s <= 0)
            continue;
        if (w->world >= 0 && s != w->world)
            w->disagree = true;
        if (s > w->world)
            w->world = s;
    }
    if (w->world < ranks[n - 1] + 1)
        w->world = ranks[n - 1] + 1;
    int64_t absent = w->world - (int64_t)n; /* ranks are distinct and below world */
    size_t listed = (uint64_t)absent < MT_TRUST_MISSING_LISTED ? (size_t)absent : MT_TRUST_MISSING_LISTED;
    w->n_absent = absent;
    w->missing = absent ? malloc(listed * sizeof *w->missing) : NULL;
    int64_t next = 0; /* the first rank not yet looked at */
    for (size_t k = 0; w->missing && next < w->world && w->n_missing < listed; k++) {
        int64_t upto = k < n ? ranks[k] : w->world; /* absent: [next, upto) */
        for (int64_t r = next; r < upto && w->n_missing < listed; r++)
            w->missing[w->n_missing++] = r;
        next = upto + 1;
    }
}

bool mt_trust_apart(const mt_trust_trace_t *traces, size_t n, const mt_clock_t *clocks, size_t n_clocks, size_t *a,
                    size_t *b, double *apart_ns)
{
    double lo = HUGE_VAL, hi = -HUGE_VAL;
    size_t ilo = 0, ihi = 0;
    for (size_t i = 0; i < n; i++) {
        const mt_trust_trace_t *t = &traces[i];
        if (t->last_ns < t->first_ns || t->nccl)
            continue;
        double v = (double)t->first_ns + (i < n_clocks ? clocks[i].offset_ns : 0.0);
        if (v < lo) {
            lo = v;
            ilo = i;
        }
        if (v > hi) {
            hi = v;
            ihi = i;
        }
    }
    if (!(hi - lo > MT_TRUST_APART_NS))
        return false;
    *a = ilo;
    *b = ihi;
    *apart_ns = hi - lo;
    return true;
}
