/* report.json section and terminal lines of the pipeline analysis. */
#include <stdio.h>
#include <string.h>

#include "mergetrace/pipeline.h"
#include "mergetrace/report.h"
#include "base/text.h"
#include "report/sections.h"

/* `, "key": <us>` */
static void kus(mt_out_t *o, const char *key, int64_t ns)
{
    mt_out_printf(o, ", \"%s\": ", key);
    mt_out_us(o, ns);
}

static void score(mt_out_t *o, double s)
{
    if (s < 0)
        mt_out_puts(o, "null");
    else
        mt_out_printf(o, "%.4f", s);
}

static void summary_json(mt_out_t *o, const mt_pp_summary_t *s)
{
    mt_out_puts(o, "\"overlap_score\": ");
    score(o, s->used ? s->overlap_score : -1);
    if (!s->used) {
        mt_out_puts(o, ", \"period_us\": null, \"latency_us\": null");
        return;
    }
    mt_out_puts(o, ", \"period_us\": {\"p50\": ");
    mt_out_us(o, s->period_p50_ns);
    kus(o, "p90", s->period_p90_ns);
    kus(o, "p99", s->period_p99_ns);
    kus(o, "mean", s->period_mean_ns);
    mt_out_puts(o, "}, \"latency_us\": {\"p50\": ");
    mt_out_us(o, s->latency_p50_ns);
    kus(o, "p99", s->latency_p99_ns);
    mt_out_puts(o, "}");
}

mt_status_t mt_report_pipeline_json(const mt_pipeline_t *p, mt_write_fn w, void *ctx)
{
    mt_out_t o = {w, ctx, MT_OK};
    const mt_pp_stages_t *g = &p->stages;
    size_t S = g->n;
    mt_out_puts(&o, "\"pipeline\": {\"stages\": [");
    for (size_t s = 0; s < S; s++) {
        mt_out_puts(&o, s ? ", [" : "[");
        for (size_t r = g->first[s]; r < g->first[s + 1]; r++)
            mt_out_printf(&o, "%s%d", r > g->first[s] ? ", " : "", (int)g->ranks[r]);
        mt_out_puts(&o, "]");
    }
    mt_out_puts(&o, "], \"stage_names\": [");
    for (size_t s = 0; s < S; s++) {
        mt_out_puts(&o, s ? ", " : "");
        mt_out_str(&o, g->name[s], sizeof g->name[s]);
    }
    mt_out_printf(&o, "], \"stage_source\": \"%s\", \"chunks\": %zu, \"matched_by\": \"%s\", \"unmatched\": %zu, "
                      "\"warmup\": %d, \"used\": %zu, ",
                  mt_pp_source_str(g->source), p->n_chunks, p->by_key ? "number" : "order", p->unmatched,
                  p->warmup, p->sum.used);
    summary_json(&o, &p->sum);
    mt_out_puts(&o, ", \"stage_busy_us\": [");
    for (size_t s = 0; s < S && p->sum.used; s++) {
        const mt_pp_stage_sum_t *q = &p->stage_sum[s];
        mt_out_puts(&o, s ? ", {\"p50\": " : "{\"p50\": ");
        mt_out_us(&o, q->busy_p50_ns);
        kus(&o, "mean", q->busy_mean_ns);
        kus(&o, "max_p50", q->max_p50_ns);
        kus(&o, "max_mean", q->max_mean_ns);
        mt_out_puts(&o, "}");
    }
    mt_out_puts(&o, "], \"critical_stage\": ");
    if (p->critical_stage >= 0)
        mt_out_printf(&o, "%d", p->critical_stage);
    else
        mt_out_puts(&o, "null");
    mt_out_puts(&o, ", \"bubble_pct\": [");
    for (size_t s = 0; s < S && p->sum.used; s++)
        mt_out_printf(&o, "%s%.2f", s ? ", " : "", p->stage_sum[s].bubble_pct);
    mt_out_puts(&o, "], \"spikes\": [");
    for (size_t i = 0; i < p->n_spikes; i++) {
        mt_out_printf(&o, "%s{\"k\": %lld", i ? ", " : "", (long long)p->key[p->spikes[i]]);
        kus(&o, "period_us", p->period_ns[p->spikes[i]]);
        mt_out_puts(&o, "}");
    }
    char v[256];
    mt_pipeline_verdict(p, v, sizeof v);
    mt_out_puts(&o, "], \"verdict\": ");
    mt_out_str(&o, v, sizeof v);
    mt_out_puts(&o, ", \"raw_clock\": {");
    summary_json(&o, &p->raw);
    mt_out_puts(&o, "}, \"per_chunk\": [");
    for (size_t c = 0; c < p->n_chunks; c++) {
        mt_out_printf(&o, "%s\n  {\"k\": %lld, \"period_us\": ", c ? "," : "", (long long)p->key[c]);
        if (p->period_ns[c] < 0)
            mt_out_puts(&o, "null");
        else
            mt_out_us(&o, p->period_ns[c]);
        mt_out_puts(&o, ", \"stage_us\": [");
        for (size_t s = 0; s < S; s++) {
            mt_out_puts(&o, s ? ", " : "");
            mt_out_us(&o, p->stage_ns[c * S + s]);
        }
        mt_out_puts(&o, "], \"stage_max_us\": [");
        for (size_t s = 0; s < S; s++) {
            mt_out_puts(&o, s ? ", " : "");
            mt_out_us(&o, p->stage_max_ns[c * S + s]);
        }
        mt_out_puts(&o, "], \"hidden_us\": ");
        if (p->period_ns[c] < 0)
            mt_out_puts(&o, "null");
        else
            mt_out_us(&o, p->hidden_ns[c]);
        mt_out_puts(&o, ", \"overlap_score\": ");
        score(&o, p->score[c]);
        kus(&o, "latency_us", p->latency_ns[c]);
        kus(&o, "latency_raw_us", p->latency_raw_ns[c]);
        mt_out_puts(&o, "}");
    }
    mt_out_puts(&o, p->n_chunks ? "\n ]}" : "]}");
    return o.st;
}

/* "0-3", "0,2,5-7" */
static void rank_set(char *b, size_t cap, const int32_t *r, size_t n)
{
    size_t k = 0;
    b[0] = '\0';
    for (size_t i = 0; i < n && k + 24 < cap;) {
        size_t j = i;
        while (j + 1 < n && r[j + 1] == r[j] + 1)
            j++;
        if (j > i)
            k += (size_t)snprintf(b + k, cap - k, "%s%d-%d", i ? "," : "", (int)r[i], (int)r[j]);
        else
            k += (size_t)snprintf(b + k, cap - k, "%s%d", i ? "," : "", (int)r[i]);
        i = j + 1;
        if (i < n && k + 24 >= cap)
            snprintf(b + k, cap - k, ",...");
    }
}

static double ms(int64_t ns)
{
    return (double)ns / 1e6;
}

mt_status_t mt_report_pipeline_text(const mt_pipeline_t *p, mt_write_fn w, void *ctx)
{
    mt_out_t o = {w, ctx, MT_OK};
    const mt_pp_stages_t *g = &p->stages;
    size_t S = g->n;
    static const char *from[] = {"from --pp-stages", "from --pp blocks", "from point-to-point traffic",
                                 "from --stage annotations", "from the ends of send/recv kernels"};
    mt_out_printf(&o, "pipeline: %zu stages %s:", S, from[g->source <= MT_PP_FROM_P2P_ENDS ? g->source : 0]);
    for (size_t s = 0; s < S; s++) {
        char rs[64];
        rank_set(rs, sizeof rs, g->ranks + g->first[s], g->first[s + 1] - g->first[s]);
        mt_out_printf(&o, "%s %.31s [%s]", s ? " ->" : "", g->name[s], rs);
    }
    mt_out_printf(&o, "\n  %zu chunks matched by %s", p->n_chunks, p->by_key ? "#number" : "order");
    if (p->unmatched)
        mt_out_printf(&o, " (%zu marker ranges on a stage leader had no partner)", p->unmatched);
    mt_out_printf(&o, "; %zu measured after %d warm-up\n", p->sum.used, p->warmup);
    char v[256];
    mt_pipeline_verdict(p, v, sizeof v);
    mt_out_printf(&o, "  %s\n", v);
    if (!p->sum.used)
        return o.st;
    mt_out_printf(&o, "  period ms: p50 %.3f  p90 %.3f  p99 %.3f  mean %.3f    latency ms: p50 %.3f  p99 %.3f\n",
                  ms(p->sum.period_p50_ns), ms(p->sum.period_p90_ns), ms(p->sum.period_p99_ns),
                  ms(p->sum.period_mean_ns), ms(p->sum.latency_p50_ns), ms(p->sum.latency_p99_ns));
    mt_out_puts(&o, "  stage      leader  busy p50 ms  busy mean ms  slowest rank mean ms   bubble\n");
    for (size_t s = 0; s < S; s++) {
        const mt_pp_stage_sum_t *q = &p->stage_sum[s];
        mt_out_printf(&o, "  %-10.10s %6d %12.3f %13.3f %21.3f %7.1f%%%s\n", g->name[s], (int)g->ranks[g->first[s]],
                      ms(q->busy_p50_ns), ms(q->busy_mean_ns), ms(q->max_mean_ns), q->bubble_pct,
                      (int)s == p->critical_stage ? "  critical" : "");
    }
    if (p->n_spikes) {
        mt_out_puts(&o, "  period spikes:");
        for (size_t i = 0; i < p->n_spikes; i++)
            mt_out_printf(&o, " chunk %lld %.3f ms%s", (long long)p->key[p->spikes[i]], ms(p->period_ns[p->spikes[i]]),
                          i + 1 < p->n_spikes ? "," : "");
        mt_out_puts(&o, "\n");
    }
    if (p->raw.used && p->raw.latency_p50_ns != p->sum.latency_p50_ns)
        mt_out_printf(&o, "  on the ranks' own clocks the latency p50 would read %.3f ms (aligned %.3f ms)\n",
                      ms(p->raw.latency_p50_ns), ms(p->sum.latency_p50_ns));
    return o.st;
}
