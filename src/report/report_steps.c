/* report.json "steps" section and the terminal lines of the step times,
 * critical path, replay, what-if projections and root causes
 * (include/mergetrace/critpath.h; keys in docs/report-schema.md). */
#include <stdio.h>
#include <string.h>

#include "mergetrace/critpath.h"
#include "mergetrace/report.h"
#include "mergetrace/version.h"
#include "base/text.h"
#include "report/sections.h"

/* ", \"key\": " and ns in microseconds, put together here rather than
 * through a format string: the per-step rows write seven for each rank and
 * step (17,920 on a 256-rank job of 10 steps), and parsing the format was
 * three quarters of this section's instructions. */
static void us(mt_out_t *o, const char *key, int64_t ns)
{
    char b[96];
    size_t k = strlen(key);
    if (k > sizeof b - 40) { /* never: the keys are this file's literals */
        mt_out_printf(o, ", \"%s\": ", key);
        mt_out_us(o, ns);
        return;
    }
    memcpy(b, ", \"", 3);
    memcpy(b + 3, key, k);
    memcpy(b + 3 + k, "\": ", 3);
    size_t n = k + 6;
    n += mt_fmt_us(ns, b + n);
    mt_out_put(o, b, n);
}

static const char *tf(bool v)
{
    return v ? "true" : "false";
}

/* Once per step too: no format string (us()). */
static void kinds(mt_out_t *o, const char *key, const int64_t *k)
{
    mt_out_puts(o, ", \"");
    mt_out_puts(o, key);
    mt_out_puts(o, "\": {");
    for (int i = 0; i < MT_CP_KIND_COUNT_; i++) {
        mt_out_puts(o, i ? ", \"" : "\"");
        mt_out_puts(o, mt_cp_kind_str((mt_cp_kind_t)i));
        mt_out_puts(o, "\": ");
        mt_out_us(o, k[i]);
    }
    mt_out_puts(o, "}");
}

/* rc: the kinds are root-cause kinds (mt_rc_kind_t). */
static void names(mt_out_t *o, const char *key, const mt_cp_name_t *v, size_t n, bool rc)
{
    mt_out_printf(o, ", \"%s\": [", key);
    for (size_t i = 0; i < n; i++) {
        mt_out_printf(o, "%s\n    {\"name\": ", i ? "," : "");
        mt_out_str(o, v[i].name, strlen(v[i].name) + 1);
        mt_out_printf(o, ", \"kind\": \"%s\"",
                      rc ? mt_rc_kind_str((mt_rc_kind_t)v[i].kind) : mt_cp_kind_str((mt_cp_kind_t)v[i].kind));
        if (v[i].rank >= 0)
            mt_out_printf(o, ", \"rank\": %d", v[i].rank);
        us(o, "us", v[i].ns);
        mt_out_puts(o, "}");
    }
    mt_out_puts(o, "]");
}

static void shares(mt_out_t *o, const char *key, const char *idk, const mt_cp_share_t *v, size_t n)
{
    mt_out_printf(o, ", \"%s\": [", key);
    for (size_t i = 0; i < n; i++) {
        if (idk) {
            mt_out_printf(o, "%s{\"%s\": %d", i ? ", " : "", idk, v[i].id);
        } else {
            mt_out_printf(o, "%s{\"type\": ", i ? ", " : "");
            mt_out_str(o, v[i].name, strlen(v[i].name));
        }
        mt_out_printf(o, ", \"s\": %.4f}", v[i].s);
    }
    mt_out_puts(o, "]");
}

void mt_report_name_cut(char *b, size_t cap, const char *s, int w)
{
    size_t n = mt_fmt_cell(b, cap, s, strlen(s), w);
    while (n && b[n - 1] == ' ')
        n--;
    b[n < cap ? n : cap - 1] = '\0';
}

/* "ideal": the ideal what-if (critpath.h mt_cp_ideal_t). */
/* One "range:" line: a what-if's projection (p50) and its other binding
 * (alt, mt_cp_whatif_t.ranged) of what ("step" or "period"); the first
 * line says what the two ends mean, the later ones refer to it. */
static void range_line(mt_out_t *o, const char *label, const char *what, int64_t p50, int64_t alt, uint64_t waits,
                       int later)
{
    char a[32], b[32], d[32];
    mt_fmt_time(a, sizeof a, p50 < alt ? p50 : alt);
    mt_fmt_time(b, sizeof b, p50 < alt ? alt : p50);
    mt_fmt_time(d, sizeof d, p50);
    if (later)
        mt_out_printf(o, "range: %s -> %s p50 %s to %s (%s with the inferred waits followed, as above)\n", label,
                      what, a, b, d);
    else
        mt_out_printf(o,
                      "range: %s -> %s p50 %s to %s (%s if the communication kernels waited for the kernels "
                      "their %llu stream waits are inferred from, the far end if each waited for something the "
                      "trace does not show; no event read names these waits)\n",
                      label, what, a, b, d, (unsigned long long)waits);
}

static void ideal_json(mt_out_t *o, const mt_cp_ideal_t *I)
{
    mt_out_printf(o, ",\n  \"ideal\": {\"steps\": %llu", (unsigned long long)I->steps);
    mt_out_printf(o, ", \"of\": \"%s\"", I->by_period ? "period" : "step");
    us(o, "no_delay_mean_us", I->nodelay_ns);
    us(o, "ideal_mean_us", I->ideal_ns);
    mt_out_printf(o, ", \"s\": %.4f", I->s);
    if (I->s_ranged) /* the other binding of the inferred stream waits (critpath.h) */
        mt_out_printf(o, ", \"alt_s\": %.4f", I->alt_s);
    shares(o, "by_type", NULL, I->by_type, I->n_type);
    shares(o, "by_worker", "worker", I->by_worker, I->n_worker);
    if (I->n_worker_all > I->n_worker) /* cut to MT_CP_IDEAL_WORKERS (critpath.h "bound") */
        mt_out_printf(o, ", \"workers\": %zu", I->n_worker_all);
    shares(o, "by_stage", "stage", I->by_stage, I->n_stage);
    if (I->blamed_stage >= 0)
        mt_out_printf(o, ", \"blamed_stage\": %d", I->blamed_stage);
    if (I->has_ms) {
        mt_out_printf(o, ", \"m_s\": {\"stage\": %d, \"value\": %.4f", I->ms_stage, I->ms);
        us(o, "removed_mean_us", I->ms_rem_ns);
        mt_out_puts(o, "}");
    }
    if (I->has_mw) {
        mt_out_printf(o, ", \"m_w\": {\"rank\": %d, \"worker\": %d, \"stage\": %d, \"value\": %.4f", I->mw_rank,
                      I->mw_worker, I->mw_stage, I->mw);
        us(o, "removed_mean_us", I->mw_rem_ns);
        mt_out_puts(o, "}");
    }
    if (I->n_stage) {
        mt_out_puts(o, ", \"heat\": [");
        for (size_t a = 0; a < I->n_worker; a++) {
            mt_out_puts(o, a ? ", [" : "[");
            for (size_t b = 0; b < I->n_stage; b++)
                mt_out_printf(o, "%s%.4f", b ? ", " : "", I->heat[a * I->n_stage + b]);
            mt_out_puts(o, "]");
        }
        mt_out_puts(o, "]");
    }
    mt_out_puts(o, "}");
}

mt_status_t mt_report_steps_json(const mt_critpath_t *c, mt_write_fn w, void *ctx)
{
    mt_out_t o = {w, ctx, MT_OK};
    mt_out_printf(&o, "\"steps\": {\"warmup\": %d, \"used\": %llu", c->warmup, (unsigned long long)c->used);
    us(&o, "p50_us", c->p50_ns);
    us(&o, "p90_us", c->p90_ns);
    us(&o, "p99_us", c->p99_ns);
    us(&o, "mean_us", c->mean_ns);
    us(&o, "max_us", c->max_ns);
    mt_out_printf(&o, ", \"replay_error_pct\": {\"median\": %.3f, \"max\": %.3f}, \"refused\": %llu",
                  100.0 * c->replay_err_median, 100.0 * c->replay_err_max, (unsigned long long)c->refused);
    us(&o, "slack_us", c->slack_ns);
    mt_out_puts(&o, ",\n  \"critical_path\": {");
    mt_out_puts(&o, "\"length_us\": ");
    mt_out_us(&o, c->path_ns);
    kinds(&o, "by_kind_us", c->kind_ns);
    mt_out_printf(&o, ", \"comm_pct\": %.2f", c->path_ns > 0 ? 100.0 * (double)c->kind_ns[MT_CP_COMM] / (double)c->path_ns : 0.0);
    us(&o, "comm_absent_us", c->comm_absent_ns);
    mt_out_printf(&o, ", \"ranks_without_trace\": %llu", (unsigned long long)c->absent_ranks);
    kinds(&o, "imbalance_us", c->imbalance_ns);
    mt_out_puts(&o, ", \"ranks\": [");
    for (size_t i = 0; i < c->n_ranks; i++) {
        const mt_cp_rank_t *r = &c->ranks[i];
        mt_out_printf(&o, "%s\n    {\"rank\": %d", i ? "," : "", r->rank);
        us(&o, "path_us", r->path_ns);
        mt_out_printf(&o, ", \"path_pct\": %.2f, \"near_critical_steps\": %u, \"end_steps\": %u",
                      c->path_ns > 0 ? 100.0 * (double)r->path_ns / (double)c->path_ns : 0.0, r->near_critical,
                      r->end_rank);
        us(&o, "wait_caused_us", r->caused_ns);
        mt_out_puts(&o, "}");
    }
    mt_out_puts(&o, "]");
    names(&o, "top", c->top, c->n_top, false);
    mt_out_puts(&o, "},\n  \"what_if\": [");
    int first = 1;
    for (int k = 0; k < MT_WI_COUNT_; k++) {
        const mt_cp_whatif_t *x = &c->whatif[k];
        if (!x->run)
            continue;
        mt_out_printf(&o, "%s\n    {\"scenario\": \"%s\", \"change\": ", first ? "" : ",", mt_wi_str((mt_wi_t)k));
        mt_out_str(&o, x->label, sizeof x->label);
        mt_out_printf(&o, ", \"steps\": %llu", (unsigned long long)x->steps);
        if (x->period_only) {
            mt_out_puts(&o, ", \"step_projection\": false");
        } else {
            us(&o, "p50_us", x->p50_ns);
            us(&o, "gain_us", x->gain_ns);
        }
        if (k == MT_WI_PATTERN)
            mt_out_printf(&o, ", \"matched\": %llu", (unsigned long long)x->matched);
        if (x->ranged) /* the other binding of the inferred stream waits (critpath.h) */
            us(&o, "alt_p50_us", x->alt_p50_ns);
        if (x->carried) { /* a pipeline: replayed as one run */
            us(&o, "period_p50_us", x->period_p50_ns);
            us(&o, "period_gain_us", x->period_gain_ns);
            if (x->period_ranged)
                us(&o, "alt_period_p50_us", x->alt_period_p50_ns);
        }
        mt_out_puts(&o, "}");
        first = 0;
    }
    mt_out_puts(&o, "]");
    mt_out_printf(&o, ",\n  \"model\": {\"waits_inferred\": %llu, \"waits_explicit\": %llu, \"host_collectives\": %llu, "
                      "\"pauses\": %llu",
                  (unsigned long long)c->waits_inferred, (unsigned long long)c->waits_explicit,
                  (unsigned long long)c->host_colls, (unsigned long long)c->pauses);
    us(&o, "pause_us", c->pause_ns);
    if (c->waits_unresolved) /* only traces with cuda_sync stream-wait records have any */
        mt_out_printf(&o, ", \"waits_unresolved\": %llu", (unsigned long long)c->waits_unresolved);
    mt_out_puts(&o, "}");
    if (c->check_run)
        mt_out_printf(&o,
                      ",\n  \"check\": {\"rank\": %d, \"caused_pct\": %.2f, \"path_pct\": %.2f, \"gain_pct\": %.2f, "
                      "\"failed\": %s}",
                      c->check_rank, 100.0 * c->check_caused, 100.0 * c->check_path, 100.0 * c->check_gain,
                      c->check_failed ? "true" : "false");
    if (c->n_stage_wi) {
        mt_out_printf(&o, ",\n  \"period_what_if\": {\"periods\": %llu", (unsigned long long)c->periods);
        us(&o, "period_p50_us", c->period_p50_ns);
        mt_out_puts(&o, ", \"stages\": [");
        for (size_t i = 0; i < c->n_stage_wi; i++) {
            const mt_cp_stage_wi_t *x = &c->stage_wi[i];
            mt_out_printf(&o, "%s\n    {\"stage\": %u", i ? "," : "", x->stage);
            us(&o, "p50_us", x->p50_ns);
            us(&o, "gain_us", x->gain_ns);
            if (x->ranged)
                us(&o, "alt_p50_us", x->alt_p50_ns);
            mt_out_puts(&o, "}");
        }
        mt_out_puts(&o, "]}");
    }
    if (c->absent_ranks > c->n_ranks) { /* not worked out (critpath.h absent_ranks) */
        mt_out_puts(&o, ",\n  \"root_causes\": null");
        goto ideal;
    }
    mt_out_puts(&o, ",\n  \"root_causes\": {");
    mt_out_puts(&o, "\"wait_us\": ");
    mt_out_us(&o, c->wait_ns);
    us(&o, "attributed_us", c->attributed_ns);
    us(&o, "short_term_us", c->short_ns);
    us(&o, "long_term_us", c->long_ns);
    us(&o, "unattributed_us", c->wait_ns - c->attributed_ns);
    mt_out_printf(&o, ", \"attributed_pct\": %.2f",
                  c->wait_ns > 0 ? 100.0 * (double)c->attributed_ns / (double)c->wait_ns : 0.0);
    mt_out_puts(&o, ", \"by_kind_us\": {");
    for (int k = 0; k < MT_RC_KIND_COUNT_; k++) {
        mt_out_printf(&o, "%s\"%s\": ", k ? ", " : "", mt_rc_kind_str((mt_rc_kind_t)k));
        mt_out_us(&o, c->rc_kind_ns[k]);
    }
    mt_out_puts(&o, "}");
    names(&o, "causes", c->causes, c->n_causes, true);
    mt_out_puts(&o, ", \"by_annotation\": [");
    for (size_t i = 0; i < c->n_by_annot; i++) {
        const mt_cp_name_t *x = &c->by_annot[i];
        mt_out_printf(&o, "%s\n    {\"rank\": %d, \"annotation\": ", i ? "," : "", x->rank);
        mt_out_str(&o, x->name, strlen(x->name));
        mt_out_printf(&o, ", \"kind\": \"%s\"", mt_rc_kind_str((mt_rc_kind_t)x->kind));
        us(&o, "us", x->ns);
        mt_out_printf(&o, ", \"pct\": %.2f}", c->wait_ns > 0 ? 100.0 * (double)x->ns / (double)c->wait_ns : 0.0);
    }
    mt_out_puts(&o, "]}");
ideal:
    if (c->ideal.run)
        ideal_json(&o, &c->ideal);
    mt_out_puts(&o, ",\n  \"per_step\": [");
    for (size_t j = 0; j < c->n_steps; j++) {
        const mt_cp_step_t *s = &c->steps[j];
        /* no format string in a step's row (us()): a long job has thousands */
        mt_out_puts(&o, j ? ",\n    {\"step\": " : "\n    {\"step\": ");
        mt_out_i64(&o, s->step);
        mt_out_puts(&o, ", \"used\": ");
        mt_out_puts(&o, tf(s->used));
        us(&o, "start_us", s->start_ns);
        us(&o, "time_us", s->time_ns);
        us(&o, "replay_us", s->replay_ns);
        mt_out_puts(&o, ", \"end_rank\": ");
        mt_out_i64(&o, s->end_rank);
        mt_out_puts(&o, ", \"undecided\": ");
        mt_out_puts(&o, tf(s->undecided));
        mt_out_puts(&o, ", \"spike\": ");
        mt_out_puts(&o, tf(s->spike));
        mt_out_puts(&o, ", \"refused\": ");
        mt_out_puts(&o, tf(s->refused));
        if (s->spike) {
            int best = 0;
            for (int k = 1; k < MT_CP_KIND_COUNT_; k++)
                if (s->kind_ns[k] > s->kind_ns[best])
                    best = k;
            mt_out_printf(&o, ", \"spike_kind\": \"%s\"", mt_cp_kind_str((mt_cp_kind_t)best));
        }
        kinds(&o, "path_us", s->kind_ns);
        mt_out_puts(&o, ", \"what_if_us\": {");
        int f2 = 1;
        for (int k = 0; k < MT_WI_COUNT_; k++)
            if (s->whatif_ns[k] >= 0) {
                mt_out_puts(&o, f2 ? "\"" : ", \"");
                mt_out_puts(&o, mt_wi_str((mt_wi_t)k));
                mt_out_puts(&o, "\": ");
                mt_out_us(&o, s->whatif_ns[k]);
                f2 = 0;
            }
        mt_out_puts(&o, "}, \"ranks\": [");
        for (uint32_t k = s->first; k < s->first + s->n; k++) { /* a row per rank: no format string (us()) */
            const mt_cp_rank_step_t *y = &c->rank_steps[k];
            mt_out_puts(&o, k > s->first ? ", {\"rank\": " : "{\"rank\": ");
            mt_out_i64(&o, y->rank);
            us(&o, "duration_us", y->end_ns - y->start_ns);
            us(&o, "compute_us", y->compute_ns);
            us(&o, "comm_us", y->comm_ns);
            us(&o, "memory_us", y->memory_ns);
            us(&o, "idle_us", y->idle_ns);
            us(&o, "path_us", y->path_ns);
            mt_out_puts(&o, y->near_critical ? ", \"near_critical\": true}" : ", \"near_critical\": false}");
        }
        mt_out_puts(&o, "]}");
    }
    mt_out_puts(&o, "]}");
    return o.st;
}

mt_status_t mt_report_steps_text(const mt_critpath_t *c, mt_write_fn w, void *ctx)
{
    mt_out_t o = {w, ctx, MT_OK};
    char a[32], b[32], d[32];
    mt_fmt_time(a, sizeof a, c->p50_ns);
    mt_fmt_time(b, sizeof b, c->p99_ns);
    mt_fmt_time(d, sizeof d, c->mean_ns);
    /* At most six lines (seven for a pipeline): the rest is in report.json
     * and report.html. */
    mt_out_printf(&o, "steps: %llu after %d warm-up, step time p50 %s  p99 %s  mean %s", (unsigned long long)c->used,
                  c->warmup, a, b, d);
    if (c->used && c->path_ns) {
        mt_out_printf(&o, "; replayed within %.2f %% (median), %.2f %% (worst)", 100.0 * c->replay_err_median,
                      100.0 * c->replay_err_max);
        if (c->refused)
            mt_out_printf(&o, ", %llu step%s above 5 %% not projected", (unsigned long long)c->refused,
                          c->refused == 1 ? "" : "s");
    }
    mt_out_puts(&o, "\n");
    if (!c->path_ns)
        return o.st;
    int best = 0;
    for (int k = 1; k < MT_CP_KIND_COUNT_; k++)
        if (c->kind_ns[k] > c->kind_ns[best])
            best = k;
    int32_t top_rank = -1;
    int64_t top_ns = -1;
    for (size_t i = 0; i < c->n_ranks; i++)
        if (c->ranks[i].path_ns > top_ns) {
            top_ns = c->ranks[i].path_ns;
            top_rank = c->ranks[i].rank;
        }
    mt_out_printf(&o, "critical path: %s %.0f %% (rank %d %.0f %% of it); communication on the critical path: %.1f %%\n",
                  mt_cp_kind_str((mt_cp_kind_t)best), 100.0 * (double)c->kind_ns[best] / (double)c->path_ns, top_rank,
                  100.0 * (double)top_ns / (double)c->path_ns,
                  100.0 * (double)c->kind_ns[MT_CP_COMM] / (double)c->path_ns);
    if (c->comm_absent_ns > 0)
        mt_out_printf(&o,
                      "  %.1f %% in collectives missing %llu of %llu ranks' traces: waiting for them or moving "
                      "data, cannot tell\n",
                      100.0 * (double)c->comm_absent_ns / (double)c->path_ns, (unsigned long long)c->absent_ranks,
                      (unsigned long long)(c->absent_ranks + c->n_ranks));
    int bw = -1; /* the best by step time */
    for (int k = 0; k < MT_WI_COUNT_; k++)
        if (c->whatif[k].run && c->whatif[k].steps && (bw < 0 || c->whatif[k].gain_ns > c->whatif[bw].gain_ns))
            bw = k;
    /* bn, the one the line names: on a pipeline the best by its period, the
     * pace of the job ("comm" too, which projects the period alone; ties
     * stay with the best by step time). None when every used step is
     * refused (bw < 0): the replay is no prediction then, as report.html's
     * rows say. */
    int bn = bw;
    for (int k = 0; bw >= 0 && c->whatif[bw].carried && k < MT_WI_COUNT_; k++)
        if (c->whatif[k].run && c->whatif[k].carried && c->whatif[k].period_gain_ns > c->whatif[bn].period_gain_ns)
            bn = k;
    if (bw >= 0 && c->whatif[bw].carried) {
        const mt_cp_whatif_t *x = &c->whatif[bn];
        mt_fmt_time(a, sizeof a, x->period_p50_ns);
        mt_fmt_time(b, sizeof b, x->period_gain_ns);
        mt_fmt_time(d, sizeof d, x->p50_ns);
        if (x->period_only) /* its step times are no prediction (critpath.h) */
            mt_out_printf(&o, "best what-if: %s -> period p50 %s (%s faster), if the dependencies stay the same\n",
                          x->label, a, b);
        else
            mt_out_printf(&o,
                          "best what-if: %s -> period p50 %s (%s faster; step p50 %s), if the dependencies stay "
                          "the same\n",
                          x->label, a, b, d);
    } else if (bw >= 0) {
        mt_fmt_time(a, sizeof a, c->whatif[bw].p50_ns);
        mt_fmt_time(b, sizeof b, c->whatif[bw].gain_ns);
        mt_out_printf(&o, "best what-if: %s -> step p50 %s (%s faster), if the dependencies stay the same\n",
                      c->whatif[bw].label, a, b);
    }
    {
        /* --what-if kernel:GLOB=F: its own line (it was in report.json alone) */
        const mt_cp_whatif_t *x = &c->whatif[MT_WI_PATTERN];
        if (x->run && !x->matched) {
            mt_out_printf(&o, "what-if %s: matched no activity, nothing changes\n", x->label);
        } else if (bw == MT_WI_PATTERN) {
            /* the best what-if line above says it */
        } else if (x->run && x->carried && x->steps == 0) {
            mt_fmt_time(a, sizeof a, x->period_p50_ns);
            mt_fmt_time(b, sizeof b, x->period_gain_ns);
            mt_out_printf(&o, "what-if %s (%llu activities) -> period p50 %s (%s faster)\n", x->label,
                          (unsigned long long)x->matched, a, b);
        } else if (x->run && x->steps) {
            mt_fmt_time(a, sizeof a, x->p50_ns);
            mt_fmt_time(b, sizeof b, x->gain_ns);
            mt_out_printf(&o, "what-if %s (%llu activities) -> step p50 %s (%s faster)\n", x->label,
                          (unsigned long long)x->matched, a, b);
        }
    }
    int said = 0; /* range lines */
    {
        /* answers that rest on edges no event names: both bindings, for the
         * straggler's what-if, the best one, the pattern's and the best
         * stage's (the others are in report.json) */
        const int order[3] = {MT_WI_STRAGGLER, bn, MT_WI_PATTERN};
        for (int i = 0; i < 3; i++) {
            int k = order[i];
            if (k < 0 || (i == 1 && k == MT_WI_STRAGGLER) || (i == 2 && k == order[1]))
                continue;
            const mt_cp_whatif_t *x = &c->whatif[k];
            if (!x->run || !(x->carried ? x->period_ranged : x->ranged))
                continue;
            range_line(&o, x->label, x->carried ? "period" : "step", x->carried ? x->period_p50_ns : x->p50_ns,
                       x->carried ? x->alt_period_p50_ns : x->alt_p50_ns, x->alt_waits, said++);
        }
    }
    if (c->check_failed) {
        const mt_cp_whatif_t *x = &c->whatif[MT_WI_STRAGGLER];
        mt_fmt_time(a, sizeof a, x->gain_ns);
        mt_out_printf(&o,
                      "check: rank %d caused %.0f %% of the waiting and holds %.0f %% of the critical path, yet at "
                      "the median rank's speed it gains %s (%.1f %%): its delay is in what the model does not "
                      "change (its host's own work, an edge the trace does not show); no answer\n",
                      c->check_rank, 100.0 * c->check_caused, 100.0 * c->check_path, a, 100.0 * c->check_gain);
    }
    if (c->pauses || c->host_colls || c->waits_explicit || c->waits_unresolved) {
        mt_fmt_time(a, sizeof a, c->pause_ns);
        mt_out_printf(&o, "model: inferred from timing: %llu host pause%s of late ranks (%s), %llu gloo collective "
                          "member%s on the host; %llu stream wait%s (%llu read from the trace",
                      (unsigned long long)c->pauses, c->pauses == 1 ? "" : "s", a, (unsigned long long)c->host_colls,
                      c->host_colls == 1 ? "" : "s", (unsigned long long)c->waits_inferred,
                      c->waits_inferred == 1 ? "" : "s", (unsigned long long)c->waits_explicit);
        if (c->waits_unresolved)
            mt_out_printf(&o, "; %llu cuda_sync wait record%s name%s no kernel", (unsigned long long)c->waits_unresolved,
                          c->waits_unresolved == 1 ? "" : "s", c->waits_unresolved == 1 ? "s" : "");
        mt_out_puts(&o, ")\n");
    } else if (c->waits_inferred) {
        /* which signal the traces lacked (issue 38 item 3) */
        mt_out_printf(&o, "model: %llu stream wait%s inferred from timing, none read from the trace\n",
                      (unsigned long long)c->waits_inferred, c->waits_inferred == 1 ? "" : "s");
    }
    if (c->n_stage_wi) {
        size_t bs = 0;
        for (size_t i = 1; i < c->n_stage_wi; i++)
            if (c->stage_wi[i].gain_ns > c->stage_wi[bs].gain_ns)
                bs = i;
        mt_fmt_time(a, sizeof a, c->stage_wi[bs].p50_ns);
        mt_fmt_time(b, sizeof b, c->stage_wi[bs].gain_ns);
        mt_fmt_time(d, sizeof d, c->period_p50_ns);
        mt_out_printf(&o, "pipeline what-if: stage %u 10 %% faster -> period p50 %s (now %s; %s faster), the best stage\n",
                      c->stage_wi[bs].stage, a, d, b);
        if (c->stage_wi[bs].ranged) {
            char lab[48];
            snprintf(lab, sizeof lab, "stage %u 10 %% faster", c->stage_wi[bs].stage);
            range_line(&o, lab, "period", c->stage_wi[bs].p50_ns, c->stage_wi[bs].alt_p50_ns, c->waits_pinned,
                       said++);
        }
    }
    const mt_cp_ideal_t *I = &c->ideal;
    if (c->absent_ranks > c->n_ranks)
        mt_out_printf(&o, "straggler slowdown and waiting's causes: not told, %llu of %llu ranks have no trace\n",
                      (unsigned long long)c->absent_ranks, (unsigned long long)(c->absent_ranks + c->n_ranks));
    if (I->run) {
        mt_fmt_time(a, sizeof a, I->nodelay_ns);
        mt_fmt_time(b, sizeof b, I->ideal_ns);
        mt_out_printf(&o, "straggler slowdown S %.3f (no-delay mean %s%s, ideal %s)", I->s,
                      I->by_period ? "period " : "", a, b);
        if (I->blamed_stage >= 0)
            mt_out_printf(&o, "; blamed stage %d", I->blamed_stage);
        if (I->has_ms)
            mt_out_printf(&o, "; M_S %.3f", I->ms);
        if (I->has_mw)
            mt_out_printf(&o, "; M_W %.3f (rank %d)", I->mw, I->mw_rank);
        mt_out_puts(&o, "; by type:");
        for (size_t k = 0; k < I->n_type && k < 3; k++) {
            char cut[160];
            mt_report_name_cut(cut, sizeof cut, I->by_type[k].name, 32);
            mt_out_printf(&o, " %s %.3f%s", cut, I->by_type[k].s, k + 1 < I->n_type && k < 2 ? "," : "");
        }
        /* what the letters mean (issue 39 papercut), critpath.h mt_cp_ideal_t */
        mt_out_printf(&o, "\n  S: mean %s without gaps / with every activity at its typical length (1 = no "
                          "straggling)\n",
                      I->by_period ? "period (time between consecutive steps' ends)" : "step time");
        if (I->has_ms || I->has_mw)
            mt_out_puts(&o, "  M_S, M_W: the share of that slowdown the last stage, the worst worker explains "
                            "(docs/whatif.md)\n");
        if (I->s_ranged)
            mt_out_printf(&o, "range: S %.3f to %.3f (%.3f with the communication kernels' inferred stream waits "
                              "followed, the other end with each pinned to its kernel's measured end)\n",
                          I->s < I->alt_s ? I->s : I->alt_s, I->s < I->alt_s ? I->alt_s : I->s, I->s);
        /* No straggler named (arrival order cannot confirm one: a
         * pipeline's pairs, a lateness passed on by others), yet one rank
         * explains most of a real slowdown: its M_W replay is the what-if
         * (issue 38: 1F1B and TP twins, within 0.08 % of the twin) */
        if (!c->whatif[MT_WI_STRAGGLER].run && I->has_mw && I->mw >= 0.5 && I->s >= 1.02 &&
            I->mw_rem_ns < I->nodelay_ns) {
            mt_fmt_time(a, sizeof a, I->mw_rem_ns);
            mt_fmt_time(b, sizeof b, I->nodelay_ns - I->mw_rem_ns);
            mt_out_printf(&o,
                          "likely straggler: rank %d explains %.0f %% of that slowdown (M_W), though the arrival "
                          "order names no straggler; with its activities at their typical lengths and its host "
                          "never late -> mean %s %s (%s faster)\n",
                          I->mw_rank, 100.0 * (I->mw > 1 ? 1 : I->mw), I->by_period ? "period" : "step time", a, b);
        }
    }
    if (c->n_causes && c->wait_ns > 0) {
        /* One line: the first annotation that has a name when it explains a
         * tenth of the waiting or more (time outside any annotation, mostly
         * host gaps, is the top cause's own words), then the top cause. */
        size_t ka = 0;
        while (ka < c->n_by_annot && !c->by_annot[ka].name[0])
            ka++;
        char cut[200];
        mt_fmt_time(b, sizeof b, c->wait_ns);
        bool annot = ka < c->n_by_annot && c->by_annot[ka].ns * 10 >= c->wait_ns;
        if (annot) {
            const mt_cp_name_t *x = &c->by_annot[ka];
            mt_fmt_time(a, sizeof a, x->ns);
            mt_report_name_cut(cut, sizeof cut, x->name, 40);
            mt_out_printf(&o, "waiting caused by: rank %d %s (%s) %s of %s waited (%.0f %%); top cause", x->rank, cut,
                          mt_rc_kind_str((mt_rc_kind_t)x->kind), a, b, 100.0 * (double)x->ns / (double)c->wait_ns);
        } else {
            mt_out_puts(&o, "waiting caused by:");
        }
        const char *nm = c->causes[0].name[0]                 ? c->causes[0].name
                         : c->causes[0].kind == MT_RC_HOST ? "host gaps"
                                                            : "idle time";
        mt_report_name_cut(cut, sizeof cut, nm, 40);
        mt_fmt_time(a, sizeof a, c->causes[0].ns);
        if (annot)
            mt_out_printf(&o, " rank %d %s %s (%.0f %%)", c->causes[0].rank, cut, a,
                          100.0 * (double)c->causes[0].ns / (double)c->wait_ns);
        else
            mt_out_printf(&o, " rank %d %s %s of %s waited (%.0f %%)", c->causes[0].rank, cut, a, b,
                          100.0 * (double)c->causes[0].ns / (double)c->wait_ns);
        mt_out_printf(&o, "; %.0f %% attributed\n", 100.0 * (double)c->attributed_ns / (double)c->wait_ns);
    }
    return o.st;
}

mt_status_t mt_report_timeline_json(const char *path, const mt_timeline_t *tl, const mt_tl_job_t *j,
                                    const mt_critpath_t *c, mt_write_fn w, void *ctx)
{
    mt_out_t o = {w, ctx, MT_OK};
    mt_out_printf(&o, "{\"version\": \"%s\", \"input\": {\"path\": ", MERGETRACE_VERSION);
    mt_out_str(&o, path, strlen(path));
    mt_out_printf(&o, ", \"format\": \"operation-level timeline\", \"operations\": %zu, \"other_events\": %llu"
                      ", \"dp_size\": %d, \"pp_size\": %d, \"tp_size\": %d, \"types\": [",
                  tl->n_ops, (unsigned long long)tl->skipped, tl->dp_size, tl->pp_size, tl->tp_size);
    for (size_t i = 0; i < tl->n_types; i++) {
        mt_out_puts(&o, i ? ", " : "");
        mt_out_str(&o, tl->types[i], strlen(tl->types[i]));
    }
    mt_out_puts(&o, "], \"ranks\": [");
    for (size_t i = 0; i < tl->n_ranks; i++)
        mt_out_printf(&o, "%s{\"rank\": %d, \"dp\": %d, \"stage\": %d, \"tp\": %d}", i ? ", " : "", tl->ranks[i].rank,
                      tl->ranks[i].dp, tl->ranks[i].stage, tl->ranks[i].tp);
    mt_out_printf(&o, "]},\n\"clock\": {\"fit\": false, \"reason\": \"one file on one clock: the timeline's times "
                      "are used as they are\"},\n\"matching\": {\"p2p_pairs\": %llu, \"collectives\": %llu, "
                      "\"dependencies_dropped\": %llu},\n",
                  (unsigned long long)j->p2p_pairs, (unsigned long long)j->collectives,
                  (unsigned long long)j->dropped_deps);
    if (o.st == MT_OK && c)
        o.st = mt_report_steps_json(c, w, ctx);
    else
        mt_out_puts(&o, "\"steps\": null");
    mt_out_puts(&o, "\n}\n");
    return o.st;
}

mt_status_t mt_report_timeline_text(const char *path, const mt_timeline_t *tl, const mt_tl_job_t *j,
                                    const mt_critpath_t *c, const char *out_dir, bool html, mt_write_fn w, void *ctx)
{
    mt_out_t o = {w, ctx, MT_OK};
    mt_out_printf(&o,
                  "%s: operation-level timeline, %zu ranks (DP %d x PP %d x TP %d), %zu operations, "
                  "%llu send/recv pairs, %llu collectives; no clock fit (one clock)\n",
                  path, tl->n_ranks, tl->dp_size, tl->pp_size, tl->tp_size, tl->n_ops,
                  (unsigned long long)j->p2p_pairs, (unsigned long long)j->collectives);
    if (o.st == MT_OK && c)
        o.st = mt_report_steps_text(c, w, ctx);
    if (html)
        mt_out_printf(&o, "wrote %s/report.json and %s/report.html\n", out_dir, out_dir);
    else
        mt_out_printf(&o, "wrote %s/report.json\n", out_dir);
    return o.st;
}
