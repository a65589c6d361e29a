/* Memory in the reports: the report.json "memory" section (per rank and
 * device: peaks, what was running, steps, trend, issues; the cross-rank
 * summary) and the terminal's few lines. */
#include "mergetrace/report.h"
#include "base/text.h"
#include "report/sections.h"

#include <stdio.h>
#include <string.h>

int64_t mt_report_aligned(const mt_clock_t *clocks, size_t n, int32_t rank, int64_t ns)
{
    for (size_t i = 0; clocks && i < n; i++)
        if (clocks[i].rank == rank)
            return mt_clock_apply(&clocks[i], ns);
    return ns;
}

static void str_or_null(mt_out_t *o, const mt_rank_analysis_t *a, mt_an_str_t s)
{
    if (!s.len) {
        mt_out_puts(o, "null");
        return;
    }
    if (o->st == MT_OK)
        o->st = mt_json_string(a->strings + s.off, s.len, o->w, o->ctx);
}

static void int_or_null(mt_out_t *o, const char *key, int64_t v, bool known)
{
    if (known)
        mt_out_printf(o, ", \"%s\": %lld", key, (long long)v);
    else
        mt_out_printf(o, ", \"%s\": null", key);
}

static void time_or_null(mt_out_t *o, const char *key, const mt_report_t *r, int32_t rank, int64_t ns, bool known)
{
    mt_out_printf(o, ", \"%s\": ", key);
    if (known)
        mt_out_us(o, mt_report_aligned(r->clocks, r->n_clocks, rank, ns));
    else
        mt_out_puts(o, "null");
}

static const char *dev_type(int32_t t)
{
    return t == 0 ? "cpu" : t == 1 ? "gpu" : "other";
}

static void device_json(mt_out_t *o, const mt_report_t *r, const mt_rank_analysis_t *a, const mt_an_mem_dev_t *d)
{
    bool res = !(d->flags & MT_AN_MEM_NO_RESERVED);
    mt_out_printf(o, "\n    {\"device\": %lld, \"device_type\": \"%s\", \"events\": %llu, \"reconstructed\": %s",
                  (long long)d->device, dev_type(d->device_type), (unsigned long long)d->events,
                  (d->flags & MT_AN_MEM_RECONSTRUCTED) ? "true" : "false");
    mt_out_printf(o, ", \"peak_allocated\": %lld", (long long)d->peak_alloc);
    time_or_null(o, "peak_allocated_us", r, a->rank, d->peak_alloc_ns, true);
    int_or_null(o, "peak_allocated_step", d->peak_alloc_step, d->peak_alloc_step >= 0);
    mt_out_puts(o, ", \"peak_op\": ");
    str_or_null(o, a, d->peak_op);
    mt_out_puts(o, ", \"peak_annotation\": ");
    str_or_null(o, a, d->peak_annotation);
    mt_out_printf(o, ", \"peak_allocation_bytes\": %lld", (long long)d->peak_alloc_bytes);
    if (d->peak_alloc_addr) /* 0: the trace gave no "Addr" */
        mt_out_printf(o, ", \"peak_allocation_addr\": %llu", (unsigned long long)d->peak_alloc_addr);
    else
        mt_out_puts(o, ", \"peak_allocation_addr\": null");
    int_or_null(o, "reserved_at_peak", d->peak_alloc_reserved, d->peak_alloc_reserved >= 0);
    /* a CPU device reports reserved 0: no caching allocator, nothing unused */
    int_or_null(o, "unused_reserved_at_peak", d->peak_alloc_reserved - d->peak_alloc,
                d->peak_alloc_reserved >= 0 && d->peak_alloc_reserved >= d->peak_alloc);
    int_or_null(o, "peak_reserved", d->peak_reserved, res);
    time_or_null(o, "peak_reserved_us", r, a->rank, d->peak_reserved_ns, res);
    int_or_null(o, "peak_reserved_step", d->peak_reserved_step, res && d->peak_reserved_step >= 0);
    mt_out_printf(o, ", \"end_allocated\": %lld", (long long)d->end_alloc);
    int_or_null(o, "end_reserved", d->end_reserved, d->end_reserved >= 0);
    int_or_null(o, "trend_bytes_per_step", d->trend_bytes_per_step, d->trend_steps >= 2);
    mt_out_printf(o, ", \"trend_steps\": %u, \"grows_every_step\": %s, \"steps\": [", d->trend_steps,
                  d->grows_every_step ? "true" : "false");
    for (uint32_t k = 0; k < d->n_steps; k++) {
        const mt_an_mem_step_t *s = &a->mem_steps[d->first_step + k];
        mt_out_printf(o, "%s\n      {\"step\": %lld", k ? "," : "", (long long)s->step);
        int_or_null(o, "allocated_end", s->alloc_end, s->alloc_end >= 0);
        int_or_null(o, "reserved_end", s->reserved_end, s->reserved_end >= 0);
        int_or_null(o, "peak_allocated", s->peak_alloc, s->peak_alloc >= 0);
        mt_out_printf(o, ", \"allocs\": %llu, \"frees\": %llu, \"bytes_allocated\": %lld, \"bytes_freed\": %lld}",
                      (unsigned long long)s->allocs, (unsigned long long)s->frees, (long long)s->bytes_alloc,
                      (long long)s->bytes_freed);
    }
    mt_out_printf(o, "%s], \"series_points\": %u}", d->n_steps ? "\n     " : "", d->n_points);
}

static const char *const issue_key[MT_AN_MEM_ISSUE_COUNT_] = {"negative_total", "missing_total", "out_of_order",
                                                              "device_without_gpu_events"};

mt_status_t mt_report_memory_json(const mt_report_t *r, mt_write_fn w, void *ctx)
{
    mt_out_t o = {w, ctx, MT_OK};
    const mt_mem_cross_t *m = r->memory;
    mt_out_puts(&o, "\"memory\": {\"ranks\": [");
    int first = 1;
    for (size_t i = 0; i < r->n_analyses; i++) {
        const mt_rank_analysis_t *a = r->analyses[i];
        bool issues = false;
        for (int k = 0; k < MT_AN_MEM_ISSUE_COUNT_; k++)
            issues |= a->mem_issues[k].count > 0;
        if (!a->n_mem_devs && !issues)
            continue;
        mt_out_printf(&o, "%s\n  {\"rank\": %d, \"devices\": [", first ? "" : ",", a->rank);
        first = 0;
        for (size_t d = 0; d < a->n_mem_devs; d++) {
            if (d)
                mt_out_puts(&o, ",");
            device_json(&o, r, a, &a->mem_devs[d]);
        }
        mt_out_printf(&o, "%s], \"issues\": {", a->n_mem_devs ? "\n   " : "");
        int fi = 1;
        for (int k = 0; k < MT_AN_MEM_ISSUE_COUNT_; k++) {
            const mt_an_mem_issue_t *is = &a->mem_issues[k];
            if (!is->count)
                continue;
            mt_out_printf(&o, "%s\"%s\": {\"count\": %llu, \"first_event\": %lld, \"first_ts_us\": ", fi ? "" : ", ",
                          issue_key[k], (unsigned long long)is->count, (long long)is->event);
            mt_out_us(&o, is->ts_ns);
            mt_out_printf(&o, ", \"device\": %lld}", (long long)is->device);
            fi = 0;
        }
        mt_out_puts(&o, "}}");
    }
    mt_out_printf(&o, "%s],\n  \"summary\": {\"basis\": \"%s\", \"ranks\": %zu", first ? "" : "\n ",
                  m->gpu ? "gpu" : "cpu", m->n_peaks);
    if (m->n_peaks) {
        const mt_mem_peak_t *t = &m->peaks[m->top];
        const mt_rank_analysis_t *a = r->analyses[t->an];
        mt_out_printf(&o, ", \"top_rank\": %d, \"top_device\": %lld, \"max_peak\": %lld, \"median_peak\": %.1f",
                      t->rank, (long long)a->mem_devs[t->dev].device, (long long)t->peak, m->median_peak);
        mt_out_printf(&o, ", \"max_over_median\": %.3f", m->max_over_median);
    }
    mt_out_puts(&o, ", \"peaks\": [");
    for (size_t k = 0; k < m->n_peaks; k++) {
        const mt_mem_peak_t *p = &m->peaks[k];
        mt_out_printf(&o, "%s{\"rank\": %d, \"device\": %lld, \"peak\": %lld, \"stage\": ", k ? ", " : "", p->rank,
                      (long long)r->analyses[p->an]->mem_devs[p->dev].device, (long long)p->peak);
        if (p->stage >= 0)
            mt_out_str(&o, m->stages[p->stage].name, sizeof m->stages[p->stage].name);
        else
            mt_out_puts(&o, "null");
        mt_out_puts(&o, "}");
    }
    mt_out_puts(&o, "], \"stages\": [");
    for (size_t s = 0; s < m->n_stages; s++) {
        const mt_mem_stage_t *g = &m->stages[s];
        mt_out_printf(&o, "%s{\"stage\": ", s ? ", " : "");
        mt_out_str(&o, g->name, sizeof g->name);
        mt_out_printf(&o, ", \"ranks\": %zu", g->n_ranks);
        int_or_null(&o, "top_rank", g->top_rank, g->top_rank >= 0);
        int_or_null(&o, "max_peak", g->max_peak, g->n_ranks > 0);
        if (g->n_ranks)
            mt_out_printf(&o, ", \"median_peak\": %.1f}", g->median_peak);
        else
            mt_out_puts(&o, ", \"median_peak\": null}");
    }
    mt_out_puts(&o, "]}}");
    return o.st;
}

/* Bytes for people: "512 B", "12.0 KiB", "3.50 GiB". */
static void dev_name(char *b, size_t cap, const mt_an_mem_dev_t *d)
{
    if (d->device_type == 0)
        snprintf(b, cap, "CPU");
    else
        snprintf(b, cap, "GPU %lld", (long long)d->device);
}

mt_status_t mt_report_memory_text(const mt_mem_cross_t *m, const mt_rank_analysis_t *const *an, size_t n,
                                  mt_write_fn w, void *ctx)
{
    mt_out_t o = {w, ctx, MT_OK};
    if (!m || !m->n_peaks)
        return MT_OK;
    const mt_mem_peak_t *t = &m->peaks[m->top];
    const mt_rank_analysis_t *a = an[t->an];
    const mt_an_mem_dev_t *d = &a->mem_devs[t->dev];
    char pk[32], dn[32], un[32];
    mt_fmt_bytes(pk, sizeof pk, d->peak_alloc);
    dev_name(dn, sizeof dn, d);
    mt_out_printf(&o, "memory: peak allocated %s on rank %d %s", pk, a->rank, dn);
    if (d->peak_alloc_step >= 0)
        mt_out_printf(&o, ", step %lld", (long long)d->peak_alloc_step);
    if (d->peak_op.len)
        mt_out_printf(&o, ", in %.40s", a->strings + d->peak_op.off);
    mt_out_printf(&o, "; max/median %.2f over %zu rank%s\n", m->max_over_median, m->n_peaks, m->n_peaks == 1 ? "" : "s");
    if (d->peak_alloc_reserved >= 0 && d->peak_alloc_reserved >= d->peak_alloc) {
        mt_fmt_bytes(un, sizeof un, d->peak_alloc_reserved - d->peak_alloc);
        mt_out_printf(&o, "  reserved but unused at that peak: %s", un);
    } else {
        mt_out_printf(&o, "  reserved memory %s", d->device_type == 0 ? "not kept for the CPU"
                                                                       : "unknown (no totals in the trace)");
    }
    for (size_t s = 0; s < m->n_stages && s < 4; s++)
        if (m->stages[s].n_ranks) {
            mt_fmt_bytes(pk, sizeof pk, m->stages[s].max_peak);
            mt_out_printf(&o, "%s%.16s %s", s ? ", " : "; by stage: ", m->stages[s].name, pk);
        }
    mt_out_puts(&o, "\n");
    /* devices that grow on every step: the first named, the rest counted */
    size_t shown = 0, more = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < an[i]->n_mem_devs; k++) {
            const mt_an_mem_dev_t *g = &an[i]->mem_devs[k];
            if (!g->grows_every_step)
                continue;
            if (shown == 1) {
                more++;
                continue;
            }
            mt_fmt_bytes(pk, sizeof pk, g->trend_bytes_per_step);
            dev_name(dn, sizeof dn, g);
            mt_out_printf(&o, "  rank %d %s: allocated at step end grows on every step after warm-up, %s%s per step "
                              "(%u steps)\n",
                          an[i]->rank, dn, g->trend_bytes_per_step >= 0 ? "+" : "", pk, g->trend_steps);
            shown++;
        }
    if (more)
        mt_out_printf(&o, "  ... and %zu more device%s growing on every step\n", more, more == 1 ? "" : "s");
    return o.st;
}
