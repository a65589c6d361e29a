/* report.json sections and terminal lines of the cross-rank analyses:
 * the collective table, stragglers (per job and per ProfilerStep), wait vs
 * transfer per rank. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "mergetrace/crossrank.h"
#include "mergetrace/report.h"
#include "base/text.h"
#include "report/sections.h"

/* `, "key": <us>` with exactly 3 decimals from integer ns. */
static void us(mt_out_t *o, const char *key, int64_t ns)
{
    mt_out_printf(o, ", \"%s\": ", key);
    mt_out_us(o, ns);
}

/* `, "key": <num / den * 100>` with 2 decimals; 0 when den is not positive. */
static void pct(mt_out_t *o, const char *key, double num, double den)
{
    mt_out_printf(o, ", \"%s\": %.2f", key, den > 0 ? 100.0 * num / den : 0.0);
}

static void gbps(mt_out_t *o, const char *key, double v)
{
    if (v < 0)
        mt_out_printf(o, ", \"%s\": null", key);
    else
        mt_out_printf(o, ", \"%s\": %.3f", key, v);
}

static void rank_list(mt_out_t *o, const int32_t *r, size_t n)
{
    mt_out_put(o, "[", 1);
    for (size_t i = 0; i < n; i++)
        mt_out_printf(o, "%s%d", i ? ", " : "", r[i]);
    mt_out_put(o, "]", 1);
}

mt_status_t mt_report_cross_sections(const mt_cross_t *x, mt_write_fn w, void *ctx)
{
    mt_out_t o = {w, ctx, MT_OK};

    mt_out_puts(&o, "\"collectives\": [");
    for (size_t i = 0; i < x->n_colls; i++) {
        const mt_cross_coll_t *c = &x->colls[i];
        mt_out_printf(&o, "%s\n  {\"pg\": ", i ? "," : "");
        mt_out_str(&o, c->pg, sizeof c->pg);
        mt_out_printf(&o, ", \"collective\": \"%s\", \"bytes\": %lld, \"dtype\": ", mt_coll_kind_str((mt_coll_kind_t)c->kind),
                      (long long)c->bytes);
        mt_out_str(&o, c->dtype, sizeof c->dtype);
        mt_out_printf(&o, ", \"count\": %llu, \"ranks\": %d", (unsigned long long)c->count, c->ranks);
        us(&o, "total_us", c->total_ns);
        us(&o, "mean_us", c->mean_ns);
        if (c->transfer_ns >= 0)
            us(&o, "transfer_us", c->transfer_ns);
        else
            mt_out_puts(&o, ", \"transfer_us\": null");
        mt_out_printf(&o, ", \"absent_members\": %llu", (unsigned long long)c->absent);
        gbps(&o, "algbw_gbps", c->algbw_gbps);
        gbps(&o, "busbw_gbps", c->busbw_gbps);
        mt_out_puts(&o, "}");
    }
    mt_out_puts(&o, x->n_colls ? "\n ]" : "]");

    mt_out_printf(&o, ",\n \"stragglers\": {\"collectives\": %llu", (unsigned long long)x->instances);
    us(&o, "wait_us", x->wait_total_ns);
    if (x->spread_ns >= 0)
        us(&o, "spread_us", x->spread_ns);
    else
        mt_out_puts(&o, ", \"spread_us\": null");
    mt_out_puts(&o, ", \"ranks\": [");
    for (size_t i = 0; i < x->n_ranks; i++) {
        const mt_cross_rank_t *k = &x->ranks[i];
        double n = (double)k->instances;
        mt_out_printf(&o, "%s\n  {\"rank\": %d, \"instances\": %llu, \"last_arrivals\": %llu", i ? "," : "", k->rank,
                      (unsigned long long)k->instances, (unsigned long long)k->last);
        pct(&o, "last_arrival_pct", (double)k->last, n);
        pct(&o, "chance_pct", (double)k->chance_q24 / (double)(UINT64_C(1) << 24), n);
        us(&o, "mean_lateness_us", k->mean_lateness_ns);
        us(&o, "p99_lateness_us", k->p99_lateness_ns);
        if (k->last) /* the terminal's "behind the median arrival when last" */
            us(&o, "lateness_when_last_us", k->late_last_median_ns);
        else
            mt_out_puts(&o, ", \"lateness_when_last_us\": null");
        us(&o, "wait_caused_us", k->wait_caused_ns);
        us(&o, "waited_us", k->waited_ns);
        us(&o, "mean_duration_us", k->mean_duration_ns);
        pct(&o, "shortest_kernel_pct", (double)k->shortest, n);
        mt_out_puts(&o, "}");
    }
    mt_out_puts(&o, x->n_ranks ? "\n ]" : "]");
    mt_out_puts(&o, ",\n \"suspects\": ");
    rank_list(&o, x->suspects, x->n_suspects);
    mt_out_puts(&o, ", \"suspects_clock_free\": ");
    rank_list(&o, x->cf_suspects, x->n_cf_suspects);
    mt_out_puts(&o, ",\n \"evidence\": [");
    for (size_t i = 0; i < x->n_evidence; i++) {
        mt_out_puts(&o, i ? ",\n  " : "\n  ");
        mt_out_str(&o, x->evidence[i], strlen(x->evidence[i]));
    }
    mt_out_puts(&o, x->n_evidence ? "\n ]" : "]");
    mt_out_puts(&o, ",\n \"by_step\": [");
    for (size_t i = 0; i < x->n_steps; i++) {
        const mt_cross_step_t *s = &x->steps[i];
        mt_out_printf(&o, "%s\n  {\"step\": %lld, \"instances\": %llu", i ? "," : "", (long long)s->step,
                      (unsigned long long)s->instances);
        us(&o, "wait_us", s->wait_ns);
        mt_out_puts(&o, ", \"suspects\": ");
        rank_list(&o, x->step_suspects + s->first_suspect, s->n_suspects);
        mt_out_printf(&o, ", \"differs\": %s, \"wait_caused_us\": [", s->differs ? "true" : "false");
        for (uint32_t t = 0; t < s->n_top; t++) {
            mt_out_printf(&o, "%s{\"rank\": %d", t ? ", " : "", s->top[t].rank);
            us(&o, "us", s->top[t].ns);
            mt_out_printf(&o, ", \"last\": %u, \"instances\": %u}", s->top[t].last, s->top[t].instances);
        }
        mt_out_puts(&o, "]}");
    }
    mt_out_puts(&o, x->n_steps ? "\n ]" : "]");
    mt_out_puts(&o, ",\n \"step_time_us\": ");
    if (x->step_time_ns >= 0)
        mt_out_us(&o, x->step_time_ns);
    else
        mt_out_puts(&o, "null");
    mt_out_puts(&o, ",\n \"episodes\": [");
    for (size_t i = 0; i < x->n_episodes; i++) {
        const mt_cross_episode_t *e = &x->episodes[i];
        mt_out_printf(&o, "%s\n  {\"first_step\": %lld, \"last_step\": %lld, \"steps\": %u, \"suspects\": ",
                      i ? "," : "", (long long)e->first_step, (long long)e->last_step, e->n_steps);
        rank_list(&o, x->step_suspects + e->first_suspect, e->n_suspects);
        us(&o, "wait_caused_us", e->wait_caused_ns);
        us(&o, "wait_caused_per_step_us", e->wait_caused_ns / (int64_t)e->n_steps);
        us(&o, "wait_us", e->wait_ns);
        mt_out_puts(&o, "}");
    }
    mt_out_puts(&o, x->n_episodes ? "\n ]}" : "]}");

    mt_out_puts(&o, ",\n \"wait\": [");
    for (size_t i = 0; i < x->n_ranks; i++) {
        const mt_cross_rank_t *k = &x->ranks[i];
        mt_out_printf(&o, "%s\n  {\"rank\": %d, \"kernels\": %llu", i ? "," : "", k->rank, (unsigned long long)k->kernels);
        us(&o, "wait_us", k->kernel_wait_ns);
        us(&o, "transfer_us", k->kernel_transfer_ns);
        if (k->kernel_unknown_ns)
            us(&o, "unknown_us", k->kernel_unknown_ns);
        pct(&o, "wait_pct", (double)k->kernel_wait_ns, (double)k->kernel_wait_ns + (double)k->kernel_transfer_ns);
        mt_out_puts(&o, "}");
    }
    mt_out_puts(&o, x->n_ranks ? "\n ]" : "]");
    return o.st;
}

/* ---- terminal text ---- */

#define TOP_COLLS 5
#define TOP_STEPS 5

/* A label cut to w bytes (without splitting a UTF-8 sequence) and padded. */

static void ranks_text(char *b, size_t cap, const int32_t *r, size_t n)
{
    size_t w = 0;
    b[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        char t[16];
        int k = snprintf(t, sizeof t, "%s%d", i ? ", " : "", r[i]);
        if (w + (size_t)k + 6 >= cap) {
            snprintf(b + w, cap - w, ", ...");
            return;
        }
        memcpy(b + w, t, (size_t)k + 1);
        w += (size_t)k;
    }
}

mt_status_t mt_report_cross_text(const mt_cross_t *x, mt_write_fn w, void *ctx)
{
    mt_out_t o = {w, ctx, MT_OK};
    char a[64], b[64], c[64];

    uint64_t inst = 0;
    for (size_t i = 0; i < x->n_colls; i++)
        inst += x->colls[i].count;
    if (!inst && !x->mismatched) {
        mt_out_puts(&o, "collectives: none\n");
        return o.st;
    }
    mt_out_printf(&o, "collectives: %llu instance%s by group, kind, size and dtype in %llu line%s", (unsigned long long)inst,
                  inst == 1 ? "" : "s", (unsigned long long)x->n_colls, x->n_colls == 1 ? "" : "s");
    if (x->mismatched)
        mt_out_printf(&o, " (%llu mismatched left out)", (unsigned long long)x->mismatched);
    mt_out_puts(&o, "\n");
    if (x->n_colls) {
        mt_out_printf(&o, "  %-14s %-13s %10s %-8s %7s %5s %10s %11s %10s\n", "pg", "collective", "bytes", "dtype", "count",
                      "ranks", "total ms", "transfer ms", "busbw GB/s");
        for (size_t i = 0; i < x->n_colls && i < TOP_COLLS; i++) {
            const mt_cross_coll_t *k = &x->colls[i];
            char pg[4 * 14 + 1], dt[4 * 8 + 1], bw[24];
            mt_fmt_cell(pg, sizeof pg, k->pg, sizeof k->pg, 14);
            mt_fmt_cell(dt, sizeof dt, k->dtype[0] ? k->dtype : "?", sizeof k->dtype, 8);
            if (k->bytes > 0)
                mt_fmt_bytes(a, sizeof a, k->bytes);
            else
                snprintf(a, sizeof a, "?");
            if (k->busbw_gbps >= 0)
                snprintf(bw, sizeof bw, "%10.2f", k->busbw_gbps);
            else
                snprintf(bw, sizeof bw, "%10s", "-");
            char tr[24];
            if (k->transfer_ns >= 0)
                snprintf(tr, sizeof tr, "%11.3f", (double)k->transfer_ns / 1e6);
            else
                snprintf(tr, sizeof tr, "%11s", "?");
            mt_out_printf(&o, "  %s %-13s %10s %s %7llu %5d %10.3f %s %s\n", pg, mt_coll_kind_str((mt_coll_kind_t)k->kind),
                          a, dt, (unsigned long long)k->count, k->ranks, (double)k->total_ns / 1e6, tr, bw);
        }
        if (x->n_colls > TOP_COLLS)
            mt_out_printf(&o, "  ... %llu more in report.json\n", (unsigned long long)(x->n_colls - TOP_COLLS));
    }

    /* wait is rank-time (summed over the ranks that waited), so it is put
     * next to the step time, per step and per rank */
    size_t nr = 0;
    for (size_t i = 0; i < x->n_ranks; i++)
        nr += x->ranks[i].instances > 0;
    mt_fmt_time(a, sizeof a, x->wait_total_ns);
    if (x->n_suspects) {
        ranks_text(b, 26, x->suspects, x->n_suspects);
        mt_out_printf(&o, "stragglers: suspect%s %s; %llu collectives of 2+ ranks, %s of waiting summed over %zu ranks\n",
                      x->n_suspects > 1 ? "s" : "", b, (unsigned long long)x->instances, a, nr);
    } else {
        /* the whole-job wording where it fits the 100 columns */
        char l[160];
        int n = snprintf(l, sizeof l, "stragglers: none over the whole job; %llu collectives of 2+ ranks, %s of waiting summed "
                         "over %zu ranks", (unsigned long long)x->instances, a, nr);
        if (n > 100)
            snprintf(l, sizeof l, "stragglers: none; %llu collectives of 2+ ranks, %s of waiting summed over %zu ranks",
                     (unsigned long long)x->instances, a, nr);
        mt_out_printf(&o, "%s\n", l);
    }
    if (x->n_steps && nr) {
        int64_t sw = 0;
        for (size_t i = 0; i < x->n_steps; i++)
            sw += x->steps[i].wait_ns;
        mt_fmt_time(a, sizeof a, sw / (int64_t)x->n_steps);
        mt_fmt_time(b, sizeof b, sw / (int64_t)x->n_steps / (int64_t)nr);
        mt_out_printf(&o, "  per step: %s of waiting over all ranks, %s per rank", a, b);
        if (x->step_time_ns > 0) {
            mt_fmt_time(c, sizeof c, x->step_time_ns);
            /* the period between steps' first arrivals, gaps included: not
             * the steps line's step time (ProfilerStep durations), so named
             * apart (issue 39 papercut: 'a step takes 850.66 ms' beside
             * step p50 631.45 ms) */
            mt_out_printf(&o, "; steps start %s apart", c);
        }
        mt_out_puts(&o, "\n");
    }
    for (size_t i = 0; i < x->n_evidence; i++)
        mt_out_printf(&o, "  %s\n", x->evidence[i]);

    if (x->n_episodes) {
        mt_out_printf(&o, "straggler episodes (runs of steps with the same suspect), most waiting caused first:\n");
        size_t shown = 0;
        for (size_t i = 0; i < x->n_episodes && shown < TOP_STEPS; i++, shown++) {
            const mt_cross_episode_t *e = &x->episodes[i];
            ranks_text(b, 20, x->step_suspects + e->first_suspect, e->n_suspects);
            mt_fmt_time(a, sizeof a, e->wait_caused_ns / (int64_t)e->n_steps);
            if (e->n_steps > 1) {
                mt_fmt_time(c, sizeof c, e->wait_caused_ns);
                mt_out_printf(&o, "  steps %lld-%lld: rank%s %s%s %s of wait per step (%s over %u steps)\n",
                              (long long)e->first_step, (long long)e->last_step, e->n_suspects > 1 ? "s" : "", b,
                              e->n_suspects > 1 ? ";" : ",", a, c, e->n_steps);
            } else {
                mt_out_printf(&o, "  step %lld: rank%s %s%s %s of wait\n", (long long)e->first_step,
                              e->n_suspects > 1 ? "s" : "", b, e->n_suspects > 1 ? ";" : ",", a);
            }
        }
        if (x->n_episodes > shown)
            mt_out_printf(&o, "  ... %llu more in report.json\n", (unsigned long long)(x->n_episodes - shown));
    }

    /* who spends the largest and smallest share of its collective time waiting */
    const mt_cross_rank_t *hi = NULL, *lo = NULL;
    double hs = 0, ls = 0, tw = 0, tt = 0;
    uint64_t members = 0;
    for (size_t i = 0; i < x->n_ranks; i++) {
        const mt_cross_rank_t *k = &x->ranks[i];
        members += k->kernels;
        double tot = (double)k->kernel_wait_ns + (double)k->kernel_transfer_ns;
        if (tot <= 0)
            continue;
        double sh = 100.0 * (double)k->kernel_wait_ns / tot;
        tw += (double)k->kernel_wait_ns;
        tt += tot;
        if (!hi || sh > hs) {
            hi = k;
            hs = sh;
        }
        if (!lo || sh < ls) {
            lo = k;
            ls = sh;
        }
    }
    if (hi && tw <= 0)
        mt_out_puts(&o, "wait: no rank waits at its collectives\n");
    else if (hi)
        mt_out_printf(&o, "wait: %.1f%% of %s is waiting; most: rank %d (%.1f%%), least: rank %d (%.1f%%)\n",
                      100.0 * tw / tt,
                      !x->cpu_members ? "comm kernel time"
                      : x->cpu_members == members ? "collective time (gloo CPU ranges)"
                                                        : "collective time (kernels and gloo CPU ranges)",
                      hi->rank, hs, lo->rank, ls);
    return o.st;
}
