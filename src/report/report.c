/* report.json writer. */
#include "mergetrace/report.h"

#include "base/text.h"
#include "report/sections.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void str(mt_out_t *j, const char *s)
{
    if (j->st == MT_OK)
        j->st = mt_json_string(s ? s : "", s ? strlen(s) : 0, j->w, j->ctx);
}

/* A double number of ns as us with 3 decimals (JSON has no NaN/Inf). */
static void us_d(mt_out_t *j, double ns)
{
    if (!isfinite(ns))
        ns = 0;
    mt_out_us(j, (int64_t)llround(ns));
}

/* "nccl": the plugin files, which rows aligned each rank, and how NCCL's
 * GPU times agree with Kineto's kernels. */
static void nccl_section(mt_out_t *j, const mt_report_t *r)
{
    mt_out_printf(j, " \"nccl\": {\"alignment_source\": ");
    str(j, r->nccl_source);
    mt_out_printf(j, ", \"files\": [");
    for (size_t i = 0; i < r->n_nccl; i++) {
        const mt_report_nccl_t *f = &r->nccl[i];
        mt_out_printf(j, "%s\n  {\"rank\": %d, \"path\": ", i ? "," : "", f->rank);
        str(j, f->path);
        mt_out_printf(j, ", \"format\": ");
        str(j, f->format);
        mt_out_printf(j, ", \"host\": ");
        str(j, f->host);
        mt_out_printf(j, ", \"pid\": %lld, \"comm_size\": %d, \"communicators\": %llu, \"tasks\": %llu, \"rows\": %llu,"
                " \"p2p_left_out\": %llu, \"untimed\": %llu, \"dropped\": %llu, \"orphan_channels\": %llu,"
                " \"unknown_lines\": %llu,"
                " \"truncated\": %s, \"gpu_offset_bound_us\": ",
             (long long)f->pid, f->comm_size, (unsigned long long)f->comms, (unsigned long long)f->tasks,
             (unsigned long long)f->rows, (unsigned long long)f->p2p_left_out, (unsigned long long)f->untimed,
             (unsigned long long)f->dropped,
             (unsigned long long)f->orphan_channels, (unsigned long long)f->unknown_lines,
             f->truncated ? "true" : "false");
        if (f->has_offset_bound)
            mt_out_us(j, f->gpu_offset_bound_ns);
        else
            mt_out_printf(j, "null");
        mt_out_printf(j, ", \"with_kineto\": %s, \"kineto_pid\": ", f->with_kineto ? "true" : "false");
        if (f->with_kineto && f->kineto_pid > 0)
            mt_out_printf(j, "%lld", (long long)f->kineto_pid);
        else
            mt_out_printf(j, "null");
        mt_out_printf(j, ", \"join_pid_differs\": %s, \"join_size_differs\": %s, \"aligned_on\": \"%s\",\n   \"agreement\": ",
                      f->pid_differs ? "true" : "false", f->size_differs ? "true" : "false",
                      f->aligned_on_nccl ? "nccl" : "kineto");
        const mt_nccl_agree_t *a = f->agree;
        if (!a) {
            mt_out_printf(j, "null}");
            continue;
        }
        mt_out_printf(j, "{\"nccl_rows\": %llu, \"kineto_rows\": %llu, \"pairs\": %llu, \"start_p50_us\": ",
                      (unsigned long long)a->nccl_rows, (unsigned long long)a->kineto_rows, (unsigned long long)a->pairs);
        mt_out_us(j, a->start_p50_ns);
        mt_out_printf(j, ", \"start_p99_us\": ");
        mt_out_us(j, a->start_p99_ns);
        mt_out_printf(j, ", \"end_p50_us\": ");
        mt_out_us(j, a->end_p50_ns);
        mt_out_printf(j, ", \"end_p99_us\": ");
        mt_out_us(j, a->end_p99_ns);
        mt_out_printf(j, ", \"start_median_us\": ");
        mt_out_us(j, a->start_median_ns);
        mt_out_printf(j, "}}");
    }
    mt_out_printf(j, "\n ]},\n");
}

static mt_status_t report_json(const mt_report_t *r, mt_write_fn write, void *ctx)
{
    mt_out_t j = {write, ctx, MT_OK};
    mt_out_printf(&j, "{\n \"schema\": \"mergetrace.report/1\",\n \"generator\": ");
    char gen[64];
    snprintf(gen, sizeof gen, "mergetrace %s", r->version ? r->version : "");
    str(&j, gen);
    mt_out_printf(&j, ",\n \"world_size\": %lld,\n \"ranks\": {\"loaded\": [", (long long)r->world_size);
    for (size_t i = 0; i < r->n_inputs; i++)
        mt_out_printf(&j, "%s%d", i ? ", " : "", r->inputs[i].rank);
    mt_out_printf(&j, "], \"missing\": [");
    for (size_t i = 0; i < r->n_missing; i++)
        mt_out_printf(&j, "%s%lld", i ? ", " : "", (long long)r->missing[i]);
    mt_out_printf(&j, "], \"missing_count\": %lld},\n \"inputs\": [",
                  (long long)(r->missing_count > (int64_t)r->n_missing ? r->missing_count : (int64_t)r->n_missing));
    for (size_t i = 0; i < r->n_inputs; i++) {
        const mt_report_input_t *in = &r->inputs[i];
        mt_out_printf(&j, "%s\n  {\"rank\": %d, \"path\": ", i ? "," : "", in->rank);
        str(&j, in->path);
        mt_out_printf(&j, ", \"rank_source\": ");
        str(&j, in->rank_source);
        mt_out_printf(&j, ", \"bytes\": %llu, \"json_bytes\": %llu, \"events\": %llu, \"truncated\": %s",
                      (unsigned long long)in->bytes, (unsigned long long)in->json_bytes, (unsigned long long)in->events,
                      in->truncated ? "true" : "false");
        if (in->truncated)
            mt_out_printf(&j, ", \"truncated_at\": %llu", (unsigned long long)in->truncated_at);
        if (in->nccl_only)
            mt_out_printf(&j, ", \"nccl_only\": true");
        if (in->summary && in->summary->nsys) {
            mt_out_printf(&j, ", \"format\": \"nsys\", \"session_start_utc_ns\": ");
            if (in->summary->session_start_ns >= 0)
                mt_out_printf(&j, "%lld", (long long)in->summary->session_start_ns);
            else
                mt_out_puts(&j, "null");
        }
        const mt_trace_summary_t *s = in->summary;
        if (s) {
            mt_out_printf(&j, ",\n   \"counts\": {\"kernels_compute\": %llu, \"kernels_comm\": %llu, \"comm_with_collective\": %llu,"
                     " \"memcpy\": %llu, \"memset\": %llu, \"sync\": %llu, \"gpu_activities\": %llu, \"gpu_launched\": %llu,",
                 (unsigned long long)s->by_class[MT_CLASS_COMPUTE], (unsigned long long)s->by_class[MT_CLASS_COMM],
                 (unsigned long long)s->link.comm_with_coll, (unsigned long long)s->by_class[MT_CLASS_MEMCPY],
                 (unsigned long long)s->by_class[MT_CLASS_MEMSET], (unsigned long long)s->by_class[MT_CLASS_SYNC],
                 (unsigned long long)s->link.gpu_activities, (unsigned long long)s->link.launched);
            mt_out_printf(&j, " \"ph\": {");
            const char *sep = "";
            for (int ph = 0; ph < MT_PH_COUNT_; ph++)
                if (s->by_ph[ph]) {
                    mt_out_printf(&j, "%s\"%s\": %llu", sep, mt_phase_str((mt_phase_t)ph), (unsigned long long)s->by_ph[ph]);
                    sep = ", ";
                }
            mt_out_printf(&j, "}, \"cat\": {");
            sep = "";
            for (int c = 0; c < MT_CAT_COUNT_; c++)
                if (s->by_cat[c]) {
                    mt_out_printf(&j, "%s\"%s\": %llu", sep, mt_cat_str((mt_cat_t)c), (unsigned long long)s->by_cat[c]);
                    sep = ", ";
                }
            mt_out_printf(&j, "}}");
        }
        mt_out_printf(&j, "}");
    }
    mt_out_printf(&j, "\n ],\n \"skipped\": [");
    for (size_t i = 0; i < r->n_skipped; i++) {
        mt_out_printf(&j, "%s{\"path\": ", i ? ", " : "");
        str(&j, r->skipped[i].path);
        mt_out_printf(&j, ", \"reason\": ");
        str(&j, r->skipped[i].reason);
        mt_out_printf(&j, "}");
    }
    mt_out_printf(&j, "],\n \"warnings\": [");
    for (size_t i = 0; r->warnings && i < r->warnings->n; i++) {
        const mt_warning_t *w = &r->warnings->v[i];
        mt_out_printf(&j, "%s\n  {\"code\": ", i ? "," : "");
        str(&j, w->code);
        if (w->rank >= 0)
            mt_out_printf(&j, ", \"rank\": %d", w->rank);
        else
            mt_out_printf(&j, ", \"rank\": null");
        mt_out_printf(&j, ", \"message\": ");
        str(&j, w->text);
        mt_out_printf(&j, "}");
    }
    mt_out_printf(&j, "%s],\n \"clock\": {\"aligned\": %s, \"reference_rank\": %d, \"formula\": ",
                  r->warnings && r->warnings->n ? "\n " : "", r->aligned ? "true" : "false", r->reference_rank);
    str(&j, "corrected(t) = t + offset_us + drift_ppm * 1e-6 * (t - anchor_us), t in us since the Unix epoch");
    if (r->clock_note) {
        mt_out_printf(&j, ", \"fit\": false, \"reason\": ");
        str(&j, r->clock_note);
    }
    mt_out_printf(&j, ", \"ranks\": [");
    for (size_t i = 0; i < r->n_clocks; i++) {
        const mt_clock_t *c = &r->clocks[i];
        mt_out_printf(&j, "%s\n  {\"rank\": %d, \"offset_us\": ", i ? "," : "", c->rank);
        us_d(&j, c->offset_ns);
        mt_out_printf(&j, ", \"drift_ppm\": %.6f, \"drift_fit_ppm\": %.6f, \"drift_significant\": %s, \"anchor_us\": ",
                      isfinite(c->drift_ppm) ? c->drift_ppm : 0.0, isfinite(c->drift_fit_ppm) ? c->drift_fit_ppm : 0.0,
                      c->drift_significant ? "true" : "false");
        mt_out_us(&j, c->anchor_ns);
        mt_out_printf(&j, ", \"matched\": %llu, \"rejected\": %llu, \"residual_p50_us\": ", (unsigned long long)c->matched,
                      (unsigned long long)c->rejected);
        us_d(&j, c->residual_p50_ns);
        mt_out_printf(&j, ", \"residual_p99_us\": ");
        us_d(&j, c->residual_p99_ns);
        mt_out_printf(&j, ", \"violations\": %llu, \"connected\": %s, \"reference\": %s, \"group\": %d}",
                      (unsigned long long)c->violations, c->connected ? "true" : "false", c->reference ? "true" : "false",
                      c->group);
    }
    mt_out_printf(&j, "\n ]},\n");
    const mt_match_stats_t *m = r->match;
    mt_match_stats_t zero = {0};
    if (!m)
        m = &zero;
    /* cpu_rows only when there are any: reports of kernel-only jobs stay as they were */
    mt_out_printf(&j, " \"matching\": {\"rows\": %llu, ", (unsigned long long)m->rows);
    if (m->cpu_rows)
        mt_out_printf(&j, "\"cpu_rows\": %llu, ", (unsigned long long)m->cpu_rows);
    mt_out_printf(&j,
                  "\"full\": %llu, \"partial\": %llu, \"unmatched\": %llu, \"mismatched\": %llu,"
                  " \"by_key\": {\"comms_id\": %llu, \"pg_seq\": %llu, \"pg_ordinal\": %llu, \"stream_ordinal\": %llu,"
                  " \"p2p\": %llu}},\n",
                  (unsigned long long)m->full, (unsigned long long)m->partial,
                  (unsigned long long)m->unmatched, (unsigned long long)m->mismatched,
                  (unsigned long long)m->by_key[MT_KEY_COMMS_ID], (unsigned long long)m->by_key[MT_KEY_PG_SEQ],
                  (unsigned long long)m->by_key[MT_KEY_PG_ORDINAL], (unsigned long long)m->by_key[MT_KEY_STREAM_ORDINAL],
                  (unsigned long long)m->by_key[MT_KEY_P2P]);
    if (r->n_nccl)
        nccl_section(&j, r);
    if (r->analyses && r->n_analyses) {
        mt_out_printf(&j, " ");
        if (j.st == MT_OK)
            j.st = mt_report_rank_sections(r->analyses, r->n_analyses, write, ctx);
        mt_out_printf(&j, ",\n");
    }
    if (r->cross) {
        mt_out_printf(&j, " ");
        if (j.st == MT_OK)
            j.st = mt_report_cross_sections(r->cross, write, ctx);
        mt_out_printf(&j, ",\n");
    }
    if (r->critpath) {
        mt_out_printf(&j, " ");
        if (j.st == MT_OK)
            j.st = mt_report_steps_json(r->critpath, write, ctx);
        mt_out_printf(&j, ",\n");
    }
    if (r->pipeline) {
        mt_out_printf(&j, " ");
        if (j.st == MT_OK)
            j.st = mt_report_pipeline_json(r->pipeline, write, ctx);
        mt_out_printf(&j, ",\n");
    }
    if (r->memory && r->analyses) {
        mt_out_printf(&j, " ");
        if (j.st == MT_OK)
            j.st = mt_report_memory_json(r, write, ctx);
        mt_out_printf(&j, ",\n");
    }
    if (r->hang) {
        mt_out_printf(&j, " ");
        if (j.st == MT_OK)
            j.st = mt_report_hang_json(r->hang, r->hang_placed, write, ctx);
        mt_out_printf(&j, ",\n");
    }
    if (r->pipeline_note) {
        mt_out_printf(&j, " \"pipeline_note\": ");
        str(&j, r->pipeline_note);
        mt_out_printf(&j, ",\n");
    }
    if (r->n_gates) {
        mt_out_printf(&j, " ");
        if (j.st == MT_OK)
            j.st = mt_report_gates_json(r->gates, r->n_gates, write, ctx);
        mt_out_printf(&j, ",\n");
    }
    mt_out_printf(&j, " \"merged\": ");
    if (r->merged) {
        mt_out_printf(&j, "{\"path\": ");
        str(&j, r->merged);
        mt_out_printf(&j, ", \"events\": %llu}", (unsigned long long)r->merged_events);
    } else {
        mt_out_printf(&j, "null");
    }
    mt_out_printf(&j, "\n}\n");
    return j.st;
}

mt_status_t mt_report_nccl_files(const mt_nccl_job_t *nj, mt_report_nccl_t **out)
{
    *out = NULL;
    if (!nj->n)
        return MT_OK;
    mt_report_nccl_t *f = calloc(nj->n, sizeof *f);
    if (!f)
        return MT_ERR_NOMEM;
    for (size_t i = 0; i < nj->n; i++) {
        const mt_nccl_rank_t *r = &nj->r[i];
        f[i] = (mt_report_nccl_t){.rank = r->rank,
                                  .path = r->path,
                                  .format = r->info.is_nccl == MT_NCCL_FMT_INSPECTOR ? "inspector"
                                            : r->info.is_nccl == MT_NCCL_FMT_EXAMPLE ? "example"
                                                                                     : "plugin",
                                  .untimed = r->info.untimed,
                                  .host = r->info.host,
                                  .pid = r->info.pid,
                                  .comm_size = r->info.comm_size,
                                  .comms = r->info.comms,
                                  .tasks = r->info.tasks,
                                  .rows = r->info.rows,
                                  .p2p_left_out = r->info.p2p_left_out,
                                  .dropped = r->info.dropped,
                                  .orphan_channels = r->info.orphan,
                                  .pid_differs = mt_nccl_rank_pid_differs(r),
                                  .size_differs = mt_nccl_rank_size_differs(r),
                                  .kineto_pid = r->kineto_pid,
                                  .unknown_lines = r->info.unknown_lines,
                                  .truncated = r->info.truncated != 0,
                                  .has_offset_bound = r->info.has_bound != 0,
                                  .gpu_offset_bound_ns = r->info.offset_bound_ns,
                                  .with_kineto = r->with_kineto,
                                  .aligned_on_nccl = r->aligned_on_nccl,
                                  .agree = r->agree};
    }
    *out = f;
    return MT_OK;
}

mt_status_t mt_report_json(const mt_report_t *r, mt_write_fn write, void *ctx)
{
    /* buffered: the report is written a few bytes at a time (text.h) */
    mt_outbuf_t *b = malloc(sizeof *b);
    if (!b)
        return MT_ERR_NOMEM;
    *b = (mt_outbuf_t){.w = write, .ctx = ctx};
    mt_status_t st = report_json(r, mt_outbuf_write, b);
    if (st == MT_OK) /* after an error the sink has failed already */
        st = mt_outbuf_flush(b);
    free(b);
    return st;
}
