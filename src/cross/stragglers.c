/* Stragglers across ranks: who arrives last at the collectives, on the
 * aligned clock, and how much waiting that causes; checked against the
 * clock-free signal (the straggler's kernels are the shortest, because it
 * waits least) and broken down per ProfilerStep. Definitions in
 * include/mergetrace/crossrank.h. */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mergetrace/analysis.h"
#include "mergetrace/classify.h"
#include "mergetrace/crossrank.h"
#include "align/clockmap.h"
#include "cross/passes.h"
#include "base/bigmem.h"
#include "base/sort.h"
#include "base/stats.h"
#include "base/text.h"

#define Q24 (UINT64_C(1) << 24)
#define WAIT_SHARE 0.20     /* rule (2): more than 20 % of the wait caused */
#define STEP_SHARE 0.25     /* rule (3): at least 1/4 of the mean wait of a step */
#define KIND_SHARE 0.50     /* rule (1) within one kind of collective: more than half the wait */
#define MIN_LAST_JOB 3      /* rule (0): last arrivals needed to name a rank of the job */
#define MIN_LAST_STEP 2     /* ... of a step */
#define STEP_ALPHA 0.05     /* rule (4): the job-wide false-alarm rate of the step count */

/* One participant of one instance that lies in a ProfilerStep. */
typedef struct srec {
    int64_t step;
    uint32_t slot;
    uint8_t last;      /* 1 when it arrived last */
    uint8_t shortest;  /* 1 when its kernel was the shortest (clock-free) */
    int64_t cf_wait;   /* clock-free wait caused (when shortest) */
    uint16_t head;     /* 1 for one participant of each instance: counts instances */
    uint64_t chance;   /* Q24 / participants */
    int64_t wait;      /* wait caused (when last) */
    int64_t arrival;   /* aligned */
} srec_t;

/* Rule (1) of crossrank.h: last (or shortest) `last` times of n instances
 * is at least min(2 x chance, n - (n - chance) / 4), with chance the
 * rank's chance share * 2^24. */
static bool beats_chance(uint64_t n, uint64_t last, uint64_t chance)
{
    uint64_t nq = n * Q24;
    uint64_t t1 = 2 * chance, t2 = nq - (nq - (chance < nq ? chance : nq)) / 4;
    return last * Q24 >= (t1 < t2 ? t1 : t2);
}

/* Rules (0) to (2) of crossrank.h over one scope: n instances of the
 * rank, its last arrivals (at least min_last), its chance share * 2^24, the
 * wait it caused, all wait caused in the scope. Integer sums are exact, so
 * the result does not depend on the order of the rows. */
static bool is_suspect(uint64_t n, uint64_t last, uint64_t min_last, uint64_t chance, int64_t wait,
                       int64_t wait_total)
{
    if (!n || last < min_last || !last || wait <= 0)
        return false;
    if (!beats_chance(n, last, chance))
        return false;
    return (double)wait > WAIT_SHARE * (double)wait_total;
}

/* P(X >= k) for X ~ Binomial(n, p). */
static double binom_tail(uint64_t n, uint64_t k, double p)
{
    if (k == 0)
        return 1;
    if (k > n || p <= 0)
        return 0;
    if (p >= 1)
        return 1;
    double t = 0, N = (double)n;
    for (uint64_t j = k; j <= n; j++) {
        double J = (double)j;
        t += exp(lgamma(N + 1) - lgamma(J + 1) - lgamma(N - J + 1) + J * log(p) + (N - J) * log1p(-p));
    }
    return t < 1 ? t : 1;
}

/* Rule (4) of crossrank.h: the steps a rank led (caused the most wait of
 * the step) against chance, in independent units. The collectives of one
 * step are not independent trials (a rank late at its first bucket is late
 * at all four), so 8 last arrivals in 32 is 2 of 8 steps; steps are much
 * closer to independent. Every rank is tested, so the level is
 * STEP_ALPHA / ranks (Bonferroni): at most STEP_ALPHA of straggler-free
 * jobs name anyone. Keeps in sus[0..n_sus) those that pass, returns how
 * many; arrivals: the aligned-clock suspects (their steps_* are set). */
static size_t step_rule(mt_cross_t *x, int32_t *sus, size_t n_sus, const uint32_t *led, const uint32_t *in_steps,
                        const double *p_sum, bool arrivals)
{
    size_t tested = 0, keep = 0;
    for (size_t i = 0; i < x->n_ranks; i++)
        tested += in_steps[i] > 0;
    for (size_t s = 0; s < n_sus; s++) {
        size_t i = (size_t)(mt_cross_rank_find(x, sus[s]) - x->ranks);
        mt_cross_rank_t *k = &x->ranks[i];
        double p = in_steps[i] ? p_sum[i] / in_steps[i] : 1, tail = binom_tail(in_steps[i], led[i], p);
        double level = STEP_ALPHA / (double)(tested ? tested : 1);
        /* too few steps for even a rank that led them all: the rule cannot
         * tell, the suspect stands on rules (0)-(2) (evidence says so) */
        bool can_tell = binom_tail(in_steps[i], in_steps[i], p) < level;
        if (arrivals) {
            k->steps_led = led[i];
            k->steps_in = in_steps[i];
            k->steps_p = can_tell ? tail : -1;
        }
        if (tail < level || !can_tell)
            sus[keep++] = sus[s];
        else if (arrivals)
            x->n_dropped++;
    }
    return keep;
}

/* A last arrival's rank slot and lateness. */
typedef struct lslot {
    uint32_t slot;
    int64_t late;
} lslot_t;

static int lslot_cmp(const void *pa, const void *pb)
{
    const lslot_t *a = pa, *b = pb;
    if (a->slot != b->slot)
        return a->slot < b->slot ? -1 : 1;
    return (a->late > b->late) - (a->late < b->late);
}

/* One collective of one kind: its group and kind, to number the kinds. */
typedef struct kind_key {
    uint64_t group;
    uint32_t kind;
} kind_key_t;

static int kind_cmp(const void *a, const void *b)
{
    const kind_key_t *x = a, *y = b;
    if (x->group != y->group)
        return x->group < y->group ? -1 : 1;
    return (x->kind > y->kind) - (x->kind < y->kind);
}

/* Rule (1) within one kind of collective (crossrank.h): for each rank slot,
 * whether it was last (and, apart, shortest) at least 3 times and more
 * often than chance allows (beats_chance) among the instances of one
 * (group, kind). A rank that holds up one collective of a step while the
 * step's others start together is last at a quarter of the instances of a
 * four-collective step and fails rule (1) over all of them (the gloo job of
 * tests/data/real: rank 2 late 15 ms at each all_reduce, last at 13 of
 * 40). by_last / by_short get 1 where the rank passes. */
static mt_status_t kind_rule(const mt_crow_t *rows, const mt_match_t *m, const uint32_t *slot,
                             const int32_t *inst_last, const int32_t *inst_short, mt_cross_t *x,
                             uint64_t *key, uint32_t *val, uint8_t *by_last, uint8_t *by_short)
{
    size_t ni = m->n_inst, nk = 0, nm = 0;
    for (size_t i = 0; i < ni; i++)
        if (inst_last[i] != -2) {
            nk++;
            nm += m->first[i + 1] - m->first[i];
        }
    if (!nk)
        return MT_OK;
    mt_status_t st = MT_ERR_NOMEM;
    kind_key_t *kk = malloc(nk * sizeof *kk);
    if (!kk)
        goto out;
    nk = 0;
    for (size_t i = 0; i < ni; i++)
        if (inst_last[i] != -2) {
            const mt_crow_t *r = &rows[m->members[m->first[i]]];
            kk[nk++] = (kind_key_t){r->group, r->kind};
        }
    qsort(kk, nk, sizeof *kk, kind_cmp);
    size_t nu = 0;
    for (size_t i = 0; i < nk; i++)
        if (!nu || kind_cmp(&kk[nu - 1], &kk[i]))
            kk[nu++] = kk[i];
    /* per member: key (slot, kind number), value chance * 2^24 with the
     * last and shortest flags in the two top bits (chance <= 2^23) */
    nm = 0;
    for (size_t i = 0; i < ni; i++) {
        if (inst_last[i] == -2)
            continue;
        uint32_t f = m->first[i], k = m->first[i + 1] - f;
        const mt_crow_t *r0 = &rows[m->members[f]];
        kind_key_t want = {r0->group, r0->kind};
        const kind_key_t *hit = bsearch(&want, kk, nu, sizeof *kk, kind_cmp);
        uint64_t kn = (uint64_t)(hit - kk);
        for (uint32_t p = 0; p < k; p++) {
            key[nm] = (uint64_t)slot[m->members[f + p]] << 32 | kn;
            val[nm++] = (uint32_t)(Q24 / k) | (inst_last[i] == (int32_t)p ? 1u << 31 : 0) |
                        (inst_short[i] == (int32_t)p ? 1u << 30 : 0);
        }
    }
    if ((st = mt_sort_u64(key, val, nm)) != MT_OK)
        goto out;
    for (size_t a = 0, b; a < nm; a = b) {
        uint64_t n = 0, last = 0, shortest = 0, chance = 0;
        for (b = a; b < nm && key[b] == key[a]; b++) {
            n++;
            last += val[b] >> 31;
            shortest += (val[b] >> 30) & 1;
            chance += val[b] & ((1u << 30) - 1);
        }
        size_t s = (size_t)(key[a] >> 32);
        if (s >= x->n_ranks)
            continue;
        mt_cross_rank_t *rk = &x->ranks[s];
        if (last >= MIN_LAST_JOB && beats_chance(n, last, chance)) {
            by_last[s] = 1;
            if (last > rk->kind_last) {
                rk->kind_instances = n;
                rk->kind_last = last;
                rk->kind_chance_q24 = chance;
                rk->kind = (uint8_t)kk[key[a] & UINT32_MAX].kind;
            }
        }
        if (shortest >= MIN_LAST_JOB && beats_chance(n, shortest, chance))
            by_short[s] = 1;
    }
    st = MT_OK;
out:
    free(kk);
    return st;
}

/* ---- evidence text ---- */

static double pct(double a, double b)
{
    return b > 0 ? 100.0 * a / b : 0.0;
}

/* "[1, 2, 3]" in at most cap - 1 bytes (cap >= 8), cut with ", ...". */
static void fmt_ranks(char *b, size_t cap, const int32_t *r, size_t n)
{
    size_t w = 0;
    b[w++] = '[';
    for (size_t i = 0; i < n; i++) {
        char t[16];
        int k = snprintf(t, sizeof t, "%s%d", i ? ", " : "", r[i]);
        /* room for this one, and for ", ...]" after it unless it is the last */
        if (w + (size_t)k + (i + 1 < n ? 6 : 1) >= cap) {
            const char *more = i ? ", ..." : "...";
            memcpy(b + w, more, strlen(more));
            w += strlen(more);
            break;
        }
        memcpy(b + w, t, (size_t)k);
        w += (size_t)k;
    }
    b[w++] = ']';
    b[w] = '\0';
}

static mt_status_t add_line(mt_cross_t *x, size_t *cap, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static mt_status_t add_line(mt_cross_t *x, size_t *cap, const char *fmt, ...)
{
    char b[98]; /* every line below is written to fit; longer ones are cut */
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b, sizeof b, fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    size_t len = (size_t)n < sizeof b ? (size_t)n : sizeof b - 1;
    if (MT_GROW(x->evidence, *cap, x->n_evidence + 1, 8))
        return MT_ERR_NOMEM;
    char *s = malloc(len + 1);
    if (!s)
        return MT_ERR_NOMEM;
    memcpy(s, b, len);
    s[len] = '\0';
    x->evidence[x->n_evidence++] = s;
    return MT_OK;
}

static bool same_set(const int32_t *a, size_t na, const int32_t *b, size_t nb)
{
    return na == nb && (na == 0 || memcmp(a, b, na * sizeof *a) == 0);
}

static mt_status_t evidence(mt_cross_t *x)
{
    size_t cap = 0;
    mt_status_t st = MT_OK;
    char t1[32], t2[32];
    if (!x->instances)
        return add_line(x, &cap, "no collective with 2 or more participants: no arrivals to compare");
    /* the median over ranks of their mean kernel duration */
    int64_t *md = malloc(x->n_ranks * sizeof *md);
    if (!md)
        return MT_ERR_NOMEM;
    size_t nmd = 0;
    for (size_t i = 0; i < x->n_ranks; i++)
        if (x->ranks[i].instances)
            md[nmd++] = x->ranks[i].mean_duration_ns;
    qsort(md, nmd, sizeof *md, mt_cmp_i64);
    int64_t med_dur = mt_stats_pct_sorted(md, nmd, 50);
    free(md);

    for (size_t s = 0; s < x->n_suspects && st == MT_OK; s++) {
        const mt_cross_rank_t *k = mt_cross_rank_find(x, x->suspects[s]);
        double chance = (double)k->chance_q24 / (double)Q24;
        st = add_line(x, &cap, "rank %d: last to arrive at %llu of %llu collectives (%.1f%%; %.1f%% by chance)",
                      k->rank, (unsigned long long)k->last, (unsigned long long)k->instances,
                      pct((double)k->last, (double)k->instances), pct(chance, (double)k->instances));
        if (st == MT_OK && k->kind_instances &&
            !beats_chance(k->instances, k->last, k->chance_q24))
            st = add_line(x, &cap, "rank %d: last at %llu of its %llu %s collectives of one group (%.1f%% by chance)", k->rank,
                          (unsigned long long)k->kind_last, (unsigned long long)k->kind_instances,
                          mt_coll_kind_str((mt_coll_kind_t)k->kind),
                          pct((double)k->kind_chance_q24 / (double)Q24, (double)k->kind_instances));
        if (st == MT_OK && k->steps_in && k->steps_p >= 0)
            st = add_line(x, &cap, "rank %d: held up %u of %u steps the most (p %.2g by chance)", k->rank,
                          k->steps_led, k->steps_in, k->steps_p);
        else if (st == MT_OK && k->steps_in)
            st = add_line(x, &cap, "rank %d: %u steps are too few to confirm it by steps (held up %u the most)",
                          k->rank, k->steps_in, k->steps_led);
        mt_fmt_time(t1, sizeof t1, k->wait_caused_ns);
        mt_fmt_time(t2, sizeof t2, x->wait_total_ns);
        if (st == MT_OK)
            st = add_line(x, &cap, "rank %d: caused %s of the %s of waiting, summed over the ranks (%.0f%%)", k->rank, t1, t2,
                          pct((double)k->wait_caused_ns, (double)x->wait_total_ns));
        if (st == MT_OK && x->spread_ns > 0) {
            int64_t ml = k->late_last_median_ns;
            mt_fmt_time(t1, sizeof t1, ml);
            mt_fmt_time(t2, sizeof t2, x->spread_ns);
            st = add_line(x, &cap, "rank %d: %s behind the median arrival when last (median of %llu; %.1fx the usual %s)",
                          k->rank, t1, (unsigned long long)k->last, (double)ml / (double)x->spread_ns, t2);
        }
        mt_fmt_time(t1, sizeof t1, k->mean_duration_ns);
        mt_fmt_time(t2, sizeof t2, med_dur);
        if (st == MT_OK)
            st = add_line(x, &cap, "rank %d: shortest %s at %llu of %llu; mean %s vs median rank %s", k->rank,
                          x->cpu_members ? "collective" : "kernel",
                          (unsigned long long)k->shortest, (unsigned long long)k->instances, t1, t2);
    }
    if (st == MT_OK && !x->n_suspects) {
        st = add_line(x, &cap, "no straggler: no rank is last clearly more often than chance with most of the wait");
        for (size_t i = 0; i < x->n_ranks && st == MT_OK; i++)
            if (x->ranks[i].steps_in && x->ranks[i].steps_p >= 0 && x->n_dropped)
                st = add_line(x, &cap, "rank %d: last often, but held up only %u of %u steps the most (p %.2g by "
                              "chance, %.2g needed)", x->ranks[i].rank, x->ranks[i].steps_led, x->ranks[i].steps_in,
                              x->ranks[i].steps_p, STEP_ALPHA / (double)x->n_ranks);
        const mt_cross_rank_t *top = NULL;
        for (size_t i = 0; i < x->n_ranks; i++)
            if (x->ranks[i].wait_caused_ns > 0 && (!top || x->ranks[i].wait_caused_ns > top->wait_caused_ns))
                top = &x->ranks[i];
        if (top && st == MT_OK) {
            mt_fmt_time(t1, sizeof t1, top->wait_caused_ns);
            mt_fmt_time(t2, sizeof t2, x->wait_total_ns);
            st = add_line(x, &cap, "most wait caused: rank %d, %s of %s (%.0f%%), last at %llu of %llu", top->rank, t1,
                          t2, pct((double)top->wait_caused_ns, (double)x->wait_total_ns),
                          (unsigned long long)top->last, (unsigned long long)top->instances);
        }
    }
    if (st == MT_OK && !same_set(x->suspects, x->n_suspects, x->cf_suspects, x->n_cf_suspects)) {
        char a[24], b[24];
        fmt_ranks(a, sizeof a, x->suspects, x->n_suspects);
        fmt_ranks(b, sizeof b, x->cf_suspects, x->n_cf_suspects);
        st = add_line(x, &cap, "signals disagree: arrivals name %s, kernel durations %s", a, b);
        size_t shown = 0;
        for (size_t i = 0; i < x->n_ranks && st == MT_OK; i++)
            if (x->ranks[i].has_clock && !x->ranks[i].connected && x->ranks[i].instances && shown++ < 3)
                st = add_line(x, &cap, "rank %d's clock is not aligned (nothing links it to the reference rank)",
                              x->ranks[i].rank);
        if (st == MT_OK && !shown)
            st = add_line(x, &cap, "check the clock fit (clock.ranks[].residual_p99_us) and whether these "
                                   "collectives end together");
    }
    return st;
}

/* ---- episodes and step time ---- */

static int ep_cmp(const void *pa, const void *pb)
{
    const mt_cross_episode_t *a = pa, *b = pb;
    if (a->wait_caused_ns != b->wait_caused_ns)
        return a->wait_caused_ns > b->wait_caused_ns ? -1 : 1;
    return (a->first_step > b->first_step) - (a->first_step < b->first_step);
}

/* Runs of consecutive steps with one suspect set, ranked by the wait their
 * suspects caused (crossrank.h "episode"); the step time. */
static mt_status_t episodes(mt_cross_t *x)
{
    x->step_time_ns = -1;
    x->episodes = malloc((x->n_steps ? x->n_steps : 1) * sizeof *x->episodes);
    int64_t *gap = malloc((x->n_steps ? x->n_steps : 1) * sizeof *gap);
    if (!x->episodes || !gap) {
        free(gap);
        return MT_ERR_NOMEM;
    }
    size_t ng = 0;
    for (size_t i = 0; i < x->n_steps; i++) {
        const mt_cross_step_t *s = &x->steps[i];
        if (i && s->step == s[-1].step + 1 && s->first_arrival_ns > s[-1].first_arrival_ns)
            gap[ng++] = s->first_arrival_ns - s[-1].first_arrival_ns;
        if (!s->n_suspects)
            continue;
        mt_cross_episode_t *e = x->n_episodes ? &x->episodes[x->n_episodes - 1] : NULL;
        if (e && s->step == e->last_step + 1 &&
            same_set(x->step_suspects + e->first_suspect, e->n_suspects, x->step_suspects + s->first_suspect,
                     s->n_suspects)) {
            e->last_step = s->step;
            e->n_steps++;
            e->wait_caused_ns = mt_add_sat(e->wait_caused_ns, s->suspect_wait_ns);
            e->wait_ns = mt_add_sat(e->wait_ns, s->wait_ns);
        } else {
            x->episodes[x->n_episodes++] = (mt_cross_episode_t){.first_step = s->step,
                                                                .last_step = s->step,
                                                                .n_steps = 1,
                                                                .first_suspect = s->first_suspect,
                                                                .n_suspects = s->n_suspects,
                                                                .wait_caused_ns = s->suspect_wait_ns,
                                                                .wait_ns = s->wait_ns};
        }
    }
    qsort(x->episodes, x->n_episodes, sizeof *x->episodes, ep_cmp);
    if (ng) {
        qsort(gap, ng, sizeof *gap, mt_cmp_i64);
        x->step_time_ns = mt_stats_pct_sorted(gap, ng, 50);
    }
    free(gap);
    return MT_OK;
}

/* ---- the pass ---- */

mt_status_t mt_cross_stragglers(const mt_crow_t *rows, const mt_match_t *m, const uint32_t *slot,
                                const mt_clock_t *const *clk, mt_cross_t *x)
{
    size_t ni = m ? m->n_inst : 0, nmem = ni ? m->first[ni] : 0, maxk = 1;
    for (size_t i = 0; i < ni; i++)
        if (m->first[i + 1] - m->first[i] > maxk)
            maxk = m->first[i + 1] - m->first[i];
    mt_status_t st = MT_ERR_NOMEM;
    int32_t *ilast = NULL, *ishort = NULL;
    lslot_t *lastl = mt_big_malloc((ni ? ni : 1) * sizeof *lastl);
    size_t nlast = 0;
    uint32_t *led = NULL, *cf_led = NULL, *in_steps = NULL;
    double *p_sum = NULL;
    uint8_t *kind_last = NULL, *kind_short = NULL;
    int64_t *arr = mt_big_malloc(maxk * sizeof *arr), *arrs = mt_big_malloc(maxk * sizeof *arrs);
    int64_t *d = mt_big_malloc(maxk * sizeof *d);
    int64_t *lv = mt_big_malloc((nmem ? nmem : 1) * sizeof *lv);
    int64_t *dev = mt_big_malloc((nmem ? nmem : 1) * sizeof *dev);
    srec_t *sr = mt_big_malloc((nmem ? nmem : 1) * sizeof *sr);
    uint64_t *skey = mt_big_malloc((nmem ? nmem : 1) * sizeof *skey);
    uint32_t *sidx = mt_big_malloc((nmem ? nmem : 1) * sizeof *sidx);
    size_t *loff = calloc(x->n_ranks + 1, sizeof *loff);
    size_t *lpos = calloc(x->n_ranks + 1, sizeof *lpos);
    /* each rank's correction prepared once (mt_clock_apply works the
     * clock's constants out again for every time: 7 % of the passes and
     * the fit at 1024 ranks x 3,000 went to it) */
    mt_clock_map_t *cmap = malloc((x->n_ranks ? x->n_ranks : 1) * sizeof *cmap);
    if (!arr || !arrs || !d || !lv || !dev || !sr || !skey || !sidx || !loff || !lpos || !cmap || !lastl)
        goto done;
    for (size_t i = 0; i < x->n_ranks; i++)
        cmap[i] = mt_clock_map(clk[i]);
    size_t ndev = 0, nsr = 0;
    /* The lateness grouped by rank (for each rank's p99) is written in
     * place: each rank's count of counted memberships first, so no
     * (rank, lateness) pair per member is kept for a counting sort after
     * (12 bytes a member, 0.6 GB of process 0's peak at 16k ranks x 3,000). */
    for (size_t i = 0; i < ni; i++) {
        uint32_t f = m->first[i], e = m->first[i + 1];
        if (e - f < 2 || (m->status[i] != MT_INST_FULL && m->status[i] != MT_INST_PARTIAL))
            continue;
        for (uint32_t p = f; p < e; p++)
            loff[slot[m->members[p]] + 1]++;
    }
    for (size_t i = 0; i < x->n_ranks; i++) {
        loff[i + 1] += loff[i];
        lpos[i] = loff[i];
    }
    int64_t cf_wait_total = 0;
    /* per instance: the member that arrived last, that was shortest (-1:
     * none), -2 when the instance is not counted */
    ilast = mt_big_malloc((ni ? ni : 1) * sizeof *ilast);
    ishort = mt_big_malloc((ni ? ni : 1) * sizeof *ishort);
    kind_last = calloc(x->n_ranks ? x->n_ranks : 1, 1);
    kind_short = calloc(x->n_ranks ? x->n_ranks : 1, 1);
    if (!ilast || !ishort || !kind_last || !kind_short)
        goto done;
    for (size_t i = 0; i < ni; i++) {
        uint32_t f = m->first[i], e = m->first[i + 1], k = e - f;
        ilast[i] = ishort[i] = -2;
        if (k < 2 || (m->status[i] != MT_INST_FULL && m->status[i] != MT_INST_PARTIAL))
            continue;
        x->instances++;
        int64_t step = -1;
        size_t il = 0, is = 0; /* the last to arrive, the shortest kernel (lowest rank on ties) */
        int64_t amin = INT64_MAX, dmax = INT64_MIN;
        for (uint32_t p = 0; p < k; p++) {
            const mt_crow_t *r = &rows[m->members[f + p]];
            arr[p] = mt_clock_map_apply(&cmap[slot[m->members[f + p]]], r->start_ns);
            d[p] = r->end_ns > r->start_ns ? r->end_ns - r->start_ns : 0;
            arrs[p] = arr[p];
            if (arr[p] > arr[il])
                il = p;
            if (d[p] < d[is])
                is = p;
            amin = arr[p] < amin ? arr[p] : amin;
            dmax = d[p] > dmax ? d[p] : dmax;
            if (r->step >= 0 && (step < 0 || r->step < step))
                step = r->step;
        }
        /* members are by rank, so "first maximum" is the lowest rank on
         * ties. The median: the middle one, or the mean of the two middle
         * ones (the upper by selection, the lower the largest below it). */
        int64_t hi = mt_stats_kth_i64(arrs, k, k / 2), lo = hi;
        if (k % 2 == 0) {
            lo = arrs[0];
            for (uint32_t p = 1; p < k / 2; p++)
                lo = arrs[p] > lo ? arrs[p] : lo;
        }
        int64_t med = lo + (hi - lo) / 2;
        /* everyone at the same moment: nobody is last (or shortest) */
        size_t last_p = arr[il] > amin ? il : SIZE_MAX, short_p = d[is] < dmax ? is : SIZE_MAX;
        ilast[i] = last_p == SIZE_MAX ? -1 : (int32_t)last_p;
        ishort[i] = short_p == SIZE_MAX ? -1 : (int32_t)short_p;
        int64_t caused = 0, cf_caused = 0;
        for (uint32_t p = 0; p < k; p++) {
            caused = mt_add_sat(caused, arr[il] - arr[p]);
            cf_caused = mt_add_sat(cf_caused, d[p] - d[is]);
        }
        x->wait_total_ns = mt_add_sat(x->wait_total_ns, caused);
        cf_wait_total = mt_add_sat(cf_wait_total, cf_caused);
        uint64_t chance = Q24 / k;
        for (uint32_t p = 0; p < k; p++) {
            uint32_t s = slot[m->members[f + p]];
            mt_cross_rank_t *rk = &x->ranks[s];
            int64_t late = arr[p] - med;
            rk->instances++;
            rk->chance_q24 += chance;
            rk->lateness_sum_ns = mt_add_sat(rk->lateness_sum_ns, late);
            rk->waited_ns = mt_add_sat(rk->waited_ns, arr[il] - arr[p]);
            rk->duration_sum_ns = mt_add_sat(rk->duration_sum_ns, d[p]);
            lv[lpos[s]++] = late;
            if (k >= 3)
                dev[ndev++] = late < 0 ? -late : late;
            if (p == last_p) {
                rk->last++;
                rk->wait_caused_ns = mt_add_sat(rk->wait_caused_ns, caused);
                rk->late_when_last_ns = mt_add_sat(rk->late_when_last_ns, late);
                lastl[nlast++] = (lslot_t){s, late};
            }
            if (p == short_p) {
                rk->shortest++;
                rk->cf_wait_caused_ns = mt_add_sat(rk->cf_wait_caused_ns, cf_caused);
            }
            if (step >= 0)
                sr[nsr++] = (srec_t){step, s, p == last_p, p == short_p, p == short_p ? cf_caused : 0, p == 0,
                                     chance, p == last_p ? caused : 0, arr[p]};
        }
    }

    /* each rank's median lateness when last (issue 39: "11.35 ms behind
     * when last" was a mean with three trivial collectives; at each of its
     * 10 all_reduces gloo4's rank 2 is 14.71 ms late) */
    if (nlast > 1)
        qsort(lastl, nlast, sizeof *lastl, lslot_cmp);
    for (size_t a = 0; a < nlast;) {
        size_t b = a;
        while (b < nlast && lastl[b].slot == lastl[a].slot)
            b++;
        x->ranks[lastl[a].slot].late_last_median_ns = lastl[a + (b - a - 1) / 2].late;
        a = b;
    }

    /* per-rank means and p99, the job's spread */
    for (size_t i = 0, o = 0; i < x->n_ranks; i++) {
        mt_cross_rank_t *rk = &x->ranks[i];
        if (rk->instances) {
            rk->p99_lateness_ns = mt_stats_pct_i64(lv + o, rk->instances, 99);
            rk->mean_lateness_ns = rk->lateness_sum_ns / (int64_t)rk->instances;
            rk->mean_duration_ns = rk->duration_sum_ns / (int64_t)rk->instances;
        }
        o += rk->instances;
    }
    x->spread_ns = ndev ? mt_stats_pct_i64(dev, ndev, 50) : -1;
    /* read by nothing below: freed before the per-step sorts (16 bytes a
     * member, about 21 MB of process 0's peak at 4096 ranks x 320) */
    free(lv);
    free(dev);
    free(lpos);
    lv = dev = NULL;
    lpos = NULL;

    /* the job's suspects, on the aligned clock and clock-free */
    x->suspects = malloc((x->n_ranks ? x->n_ranks : 1) * sizeof *x->suspects);
    x->cf_suspects = malloc((x->n_ranks ? x->n_ranks : 1) * sizeof *x->cf_suspects);
    if (!x->suspects || !x->cf_suspects)
        goto done;
    /* skey and sidx (one entry per member) are free until the per-step
     * sorts below: kind_rule's keys and values */
    if (ni && kind_rule(rows, m, slot, ilast, ishort, x, skey, sidx, kind_last, kind_short) != MT_OK)
        goto done;
    free(ilast);
    free(ishort);
    ilast = ishort = NULL;
    for (size_t i = 0; i < x->n_ranks; i++) {
        const mt_cross_rank_t *rk = &x->ranks[i];
        /* kind_last[i] stays 1 only for a suspect by the kind rule: the
         * steps below use it */
        kind_last[i] = kind_last[i] && (double)rk->wait_caused_ns > KIND_SHARE * (double)x->wait_total_ns;
        if (is_suspect(rk->instances, rk->last, MIN_LAST_JOB, rk->chance_q24, rk->wait_caused_ns, x->wait_total_ns) ||
            kind_last[i])
            x->suspects[x->n_suspects++] = rk->rank;
        if (is_suspect(rk->instances, rk->shortest, MIN_LAST_JOB, rk->chance_q24, rk->cf_wait_caused_ns,
                       cf_wait_total) ||
            (kind_short[i] && (double)rk->cf_wait_caused_ns > KIND_SHARE * (double)cf_wait_total))
            x->cf_suspects[x->n_cf_suspects++] = rk->rank;
    }

    /* per step: the records by (step, rank), two stable radix sorts (the
     * sums over a group are exact integers: their order does not matter) */
    for (size_t i = 0; i < nsr; i++) {
        skey[i] = sr[i].slot;
        sidx[i] = (uint32_t)i;
    }
    if (mt_sort_u64(skey, sidx, nsr) != MT_OK)
        goto done;
    for (size_t i = 0; i < nsr; i++)
        skey[i] = mt_sort_key_i64(sr[sidx[i]].step);
    if (mt_sort_u64(skey, sidx, nsr) != MT_OK)
        goto done;
    /* sr into that order (sr[j] = old sr[sidx[j]]) in place, one cycle of
     * the permutation at a time, each place set to itself in sidx once
     * filled (a permuted copy was 40 bytes a member more at the peak) */
    for (size_t i = 0; i < nsr; i++) {
        if (sidx[i] == i)
            continue;
        srec_t v = sr[i];
        size_t j = i;
        while (sidx[j] != i) {
            size_t k = sidx[j];
            sr[j] = sr[k];
            sidx[j] = (uint32_t)j;
            j = k;
        }
        sr[j] = v;
        sidx[j] = (uint32_t)j;
    }
    size_t nsteps = 0;
    int64_t steps_wait = 0; /* all wait caused in the steps */
    for (size_t i = 0; i < nsr; i++) {
        nsteps += i == 0 || sr[i].step != sr[i - 1].step;
        steps_wait = mt_add_sat(steps_wait, sr[i].wait);
    }
    x->steps = calloc(nsteps ? nsteps : 1, sizeof *x->steps);
    x->step_suspects = mt_big_malloc((nsr ? nsr : 1) * sizeof *x->step_suspects);
    led = calloc(x->n_ranks ? x->n_ranks : 1, sizeof *led);
    cf_led = calloc(x->n_ranks ? x->n_ranks : 1, sizeof *cf_led);
    in_steps = calloc(x->n_ranks ? x->n_ranks : 1, sizeof *in_steps);
    p_sum = calloc(x->n_ranks ? x->n_ranks : 1, sizeof *p_sum);
    if (!x->steps || !x->step_suspects || !led || !cf_led || !in_steps || !p_sum)
        goto done;
    for (size_t i = 0; i < nsr;) {
        size_t j = i;
        mt_cross_step_t *sp = &x->steps[x->n_steps++];
        sp->step = sr[i].step;
        sp->first_arrival_ns = sr[i].arrival;
        for (; j < nsr && sr[j].step == sp->step; j++) {
            sp->instances += sr[j].head;
            sp->wait_ns = mt_add_sat(sp->wait_ns, sr[j].wait);
            if (sr[j].arrival < sp->first_arrival_ns)
                sp->first_arrival_ns = sr[j].arrival;
        }
        sp->first_suspect = (uint32_t)x->n_step_suspects;
        for (size_t a = i; a < j;) {
            size_t b = a;
            uint64_t n = 0, last = 0, chance = 0;
            int64_t wait = 0;
            for (; b < j && sr[b].slot == sr[a].slot; b++) {
                n++;
                last += sr[b].last;
                chance += sr[b].chance;
                wait = mt_add_sat(wait, sr[b].wait);
            }
            int32_t rank = x->ranks[sr[a].slot].rank;
            /* rule (3): leave out steps whose hold-up is small next to a
             * typical step's */
            /* a suspect of the job by the kind rule holds a step up when it
             * was last there and caused more than half its wait: a step has
             * one instance of each kind, so the rule cannot be applied
             * within it */
            bool by_kind = kind_last[sr[a].slot] && last >= 1 &&
                           (double)wait > KIND_SHARE * (double)sp->wait_ns;
            if ((by_kind || is_suspect(n, last, MIN_LAST_STEP, chance, wait, sp->wait_ns)) &&
                (double)wait * (double)nsteps >= STEP_SHARE * (double)steps_wait) {
                x->step_suspects[x->n_step_suspects++] = rank;
                sp->suspect_wait_ns = mt_add_sat(sp->suspect_wait_ns, wait);
            }
            if (wait > 0) {
                /* keep the top MT_CROSS_TOP by wait, ties to the lower rank
                 * (slots ascend with rank, so an equal later one loses) */
                mt_cross_top_t t = {rank, (uint32_t)n, (uint32_t)last, wait};
                uint32_t q = sp->n_top < MT_CROSS_TOP ? sp->n_top++ : MT_CROSS_TOP;
                while (q > 0 && sp->top[q - 1].ns < t.ns) {
                    if (q < MT_CROSS_TOP)
                        sp->top[q] = sp->top[q - 1];
                    q--;
                }
                if (q < MT_CROSS_TOP)
                    sp->top[q] = t;
            }
            a = b;
        }
        sp->n_suspects = (uint32_t)(x->n_step_suspects - sp->first_suspect);
        /* rule (4): who led the step (the most wait caused), and each
         * rank's chance of leading it (its mean 1 / participants) */
        for (size_t a = i; a < j;) {
            size_t b = a;
            double ch = 0;
            uint64_t n = 0;
            for (; b < j && sr[b].slot == sr[a].slot; b++, n++)
                ch += (double)sr[b].chance / (double)Q24;
            in_steps[sr[a].slot]++;
            p_sum[sr[a].slot] += ch / (double)n;
            a = b;
        }
        if (sp->n_top && sp->top[0].ns > 0) {
            const mt_cross_rank_t *k = mt_cross_rank_find(x, sp->top[0].rank);
            led[k - x->ranks]++;
        }
        /* clock-free: the rank that caused the most clock-free wait (ties: none) */
        size_t best = SIZE_MAX;
        int64_t bn = 0;
        bool tie = false;
        for (size_t a = i; a < j;) {
            size_t b = a;
            int64_t n = 0;
            for (; b < j && sr[b].slot == sr[a].slot; b++)
                n = mt_add_sat(n, sr[b].cf_wait);
            if (n > bn) {
                bn = n;
                best = sr[a].slot;
                tie = false;
            } else if (n == bn && n) {
                tie = true;
            }
            a = b;
        }
        if (best != SIZE_MAX && !tie)
            cf_led[best]++;
        i = j;
    }
    if (x->n_steps) {
        x->n_suspects = step_rule(x, x->suspects, x->n_suspects, led, in_steps, p_sum, true);
        x->n_cf_suspects = step_rule(x, x->cf_suspects, x->n_cf_suspects, cf_led, in_steps, p_sum, false);
    }
    for (size_t s = 0; s < x->n_steps; s++) {
        mt_cross_step_t *sp = &x->steps[s];
        sp->differs = !same_set(x->step_suspects + sp->first_suspect, sp->n_suspects, x->suspects, x->n_suspects);
    }
    st = episodes(x);
    if (st == MT_OK)
        st = evidence(x);
done:
    free(lastl);
    free(led);
    free(cf_led);
    free(in_steps);
    free(p_sum);
    free(ilast);
    free(ishort);
    free(kind_last);
    free(kind_short);
    free(arr);
    free(arrs);
    free(d);
    free(lv);
    free(lpos);
    free(cmap);
    free(skey);
    free(sidx);
    free(loff);
    free(dev);
    free(sr);
    return st;
}

mt_status_t mt_cross_name_absent(mt_cross_t *x, const int64_t *absent, size_t n_absent)
{
    size_t present = 0;
    for (size_t i = 0; i < x->n_ranks; i++)
        present += x->ranks[i].instances > 0;
    if (n_absent > present && x->instances) {
        /* most of the job is not there (issue 39 item 7: 2 of 128 ranks
         * named "suspect 1"): who the traced ranks waited for cannot be
         * told, so no straggler is named and the evidence says why */
        for (size_t i = 0; i < x->n_evidence; i++)
            free(x->evidence[i]);
        x->n_evidence = 0;
        x->n_suspects = x->n_cf_suspects = 0;
        /* nor per step or episode: the same traces, the same unknown */
        for (size_t s = 0; s < x->n_steps; s++) {
            x->steps[s].n_suspects = 0;
            x->steps[s].differs = false;
        }
        x->n_episodes = 0;
        size_t cap = x->n_evidence;
        return add_line(x, &cap, "%zu of %zu ranks have no trace: no straggler is named among the %zu traced",
                        n_absent, n_absent + present, present);
    }
    if (!n_absent || !x->absent_instances)
        return MT_OK;
    char r[40];
    int o = 0;
    for (size_t i = 0; i < n_absent && o < 30; i++)
        o += snprintf(r + o, sizeof r - (size_t)o, "%s%lld", i ? ", " : "", (long long)absent[i]);
    if (n_absent > 1 && o >= 30)
        snprintf(r + 27, sizeof r - 27, "...");
    size_t cap = x->n_evidence;
    return add_line(x, &cap, "rank%s %s: no trace, in %llu collectives' groups: possibly the straggler", n_absent > 1 ? "s" : "",
                    r, (unsigned long long)x->absent_instances);
}
