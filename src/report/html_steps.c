/* report.html "steps" section: a strip per chosen step (ranks x aligned
 * time, activities by kind, the critical path highlighted), the what-if
 * table and the root causes of waiting, from the critical-path results
 * (include/mergetrace/critpath.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mergetrace/critpath.h"
#include "base/sort.h"
#include "base/text.h"
#include "report/sections.h"

/* The page's Okabe-Ito colours and patterns (report_html.c defs()). */
static const char *const kind_fill[MT_CP_KIND_COUNT_] = {"#0072B2", "url(#p-comm)", "url(#p-mem)", "#E69F00",
                                                         "url(#p-idle)"};

#define LABEL_W 78.0
#define PLOT_W 1000.0
#define ROW_H 14.0
#define ROW_GAP 3.0
#define TITLE_CHARS 200 /* names in hover titles; thousands of them may be drawn */

static void us_str(char *b, int64_t ns)
{
    b[mt_fmt_us(ns, b)] = '\0';
}

/* The status cell's note of a range (critpath.h mt_cp_whatif_t.ranged):
 * the other end, or "" when the answer is one number. */
static void range_note(char *b, size_t cap, bool ranged, int64_t alt_ns)
{
    char v[32];
    us_str(v, alt_ns);
    if (ranged)
        snprintf(b, cap, "; %s us with the inferred communication waits pinned: a range", v);
    else
        b[0] = '\0';
}

/* A hover title: "<who> <kind> <time>", the merged count and the named activity. */
static void seg_title(mt_out_t *o, const char *who, const mt_cp_seg_t *s)
{
    char t[32], nt[32], cut[4 * TITLE_CHARS + 8];
    mt_fmt_time(t, sizeof t, s->b - s->a);
    mt_out_printf(o, "<title>%s%srank %d %s %s", who, *who ? " " : "", s->rank, mt_cp_kind_str((mt_cp_kind_t)s->kind), t);
    if (s->n > 1) {
        mt_out_printf(o, " (%u merged:", s->n);
        for (int k = 0; k < MT_CP_KIND_COUNT_; k++)
            if (s->kind_ns[k]) {
                mt_fmt_time(nt, sizeof nt, s->kind_ns[k]);
                mt_out_printf(o, " %s %s", mt_cp_kind_str((mt_cp_kind_t)k), nt);
            }
        mt_out_puts(o, ")");
    }
    if (s->name) {
        mt_report_name_cut(cut, sizeof cut, s->name, TITLE_CHARS);
        mt_fmt_time(nt, sizeof nt, s->name_ns);
        mt_out_puts(o, ": ");
        mt_out_html(o, cut, strlen(cut));
        if (s->n > 1)
            mt_out_printf(o, " (%s)", nt);
    }
    mt_out_puts(o, "</title>");
}

static double xs(const mt_cp_step_t *st, int64_t t)
{
    return LABEL_W + PLOT_W * (double)(t - st->start_ns) / (double)(st->time_ns > 0 ? st->time_ns : 1);
}

static void strip(mt_out_t *o, const mt_critpath_t *c, const mt_cp_strip_t *t)
{
    const mt_cp_step_t *st = &c->steps[t->step];
    char tm[32], a[32], b[32];
    mt_fmt_time(tm, sizeof tm, st->time_ns);
    us_str(a, st->time_ns);
    mt_out_printf(o, "<figure class=\"strip\" data-step=\"%lld\" data-why=\"%s\" data-time-us=\"%s\">\n",
                  (long long)st->step, t->why, a);
    mt_out_printf(o, "<h3>Step %lld, the %s step: %s, ended by rank %d%s</h3>\n", (long long)st->step, t->why, tm,
                  st->end_rank, st->undecided ? " (undecided: another rank ended within the slack)" : "");
    double hgt = (double)(t->n_rows + 1) * (ROW_H + ROW_GAP) + 34.0;
    double w = LABEL_W + PLOT_W + 10.0;
    char label[96];
    snprintf(label, sizeof label, "step %lld: ranks over time, critical path outlined", (long long)st->step);
    mt_out_printf(o,
                  "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f "
                  "%.0f\" role=\"img\" aria-label=\"%s\">",
                  w, hgt, w, hgt, label);
    /* lane 0: the critical path by kind */
    double y = 4.0;
    mt_out_printf(o, "<text x=\"0\" y=\"%.1f\" class=\"at\">path</text>", y + ROW_H - 3);
    for (size_t i = 0; i < t->n_path; i++) {
        const mt_cp_seg_t *s = &t->path[i];
        us_str(a, s->a - st->start_ns);
        us_str(b, s->b - st->start_ns);
        double x0 = xs(st, s->a), x1 = xs(st, s->b);
        mt_out_printf(o,
                      "<rect class=\"cp\" data-rank=\"%d\" data-kind=\"%s\" data-a-us=\"%s\" data-b-us=\"%s\" "
                      "x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\">",
                      s->rank, mt_cp_kind_str((mt_cp_kind_t)s->kind), a, b, x0, y, x1 - x0, ROW_H,
                      kind_fill[s->kind]);
        seg_title(o, "critical path:", s);
        mt_out_puts(o, "</rect>");
    }
    /* one row per rank: idle background, activities, the path outlined */
    for (size_t r = 0; r < t->n_rows; r++) {
        y += ROW_H + ROW_GAP;
        int32_t rank = t->ranks[r];
        mt_out_printf(o, "<g class=\"row\" data-rank=\"%d\"><text x=\"0\" y=\"%.1f\">rank %d%s</text>", rank,
                      y + ROW_H - 3, rank, rank == st->end_rank ? " \xe2\x97\x80" : "");
        mt_out_printf(o, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"url(#p-idle)\"/>",
                      LABEL_W, y, PLOT_W, ROW_H);
        for (size_t i = t->row_first[r]; i < t->row_first[r + 1]; i++) {
            const mt_cp_seg_t *s = &t->segs[i];
            double x0 = xs(st, s->a), x1 = xs(st, s->b);
            mt_out_printf(o, "<rect class=\"act\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\">",
                          x0, y, x1 - x0, ROW_H, kind_fill[s->kind]);
            seg_title(o, "", s);
            mt_out_puts(o, "</rect>");
        }
        for (size_t i = 0; i < t->n_path; i++) {
            const mt_cp_seg_t *s = &t->path[i];
            if (s->rank != rank)
                continue;
            double x0 = xs(st, s->a), x1 = xs(st, s->b);
            mt_out_printf(o,
                          "<rect class=\"hl\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"none\" "
                          "stroke=\"#000\" stroke-width=\"2\" pointer-events=\"none\"/>",
                          x0, y - 1, x1 - x0, ROW_H + 2);
        }
        mt_out_puts(o, "</g>");
    }
    /* time axis: ms since the step start, five ticks */
    y += ROW_H + ROW_GAP + 2;
    mt_out_printf(o, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>", LABEL_W,
                  LABEL_W + PLOT_W, y, y);
    for (int k = 0; k <= 4; k++) {
        int64_t at = st->time_ns * k / 4;
        mt_fmt_time(tm, sizeof tm, at);
        double x = LABEL_W + PLOT_W * k / 4.0;
        mt_out_printf(o,
                      "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>"
                      "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\">%s</text>",
                      x, x, y, y + 4, x, y + 16, k == 0 ? "start" : k == 4 ? "end" : "middle", tm);
    }
    mt_out_puts(o, "</svg>\n");
    /* what the picture leaves out */
    mt_out_printf(o,
                  "<p class=\"note\">%zu of %zu ranks shown (most time on this step's critical path first, then "
                  "near-critical, then the latest step end; at most %d). Where streams overlap, the activity that "
                  "started first is drawn. Segments narrower than 1/%d of the step are merged with their narrow "
                  "neighbours (hover for what they hold). Black outline: the critical path on that rank; "
                  "\xe2\x97\x80 the rank whose end is the step's end.</p>\n",
                  t->n_rows, t->n_ranks_all, MT_CP_STRIP_RANKS, MT_CP_STRIP_COLS);
    mt_out_printf(o, "<table class=\"cpk\" data-step=\"%lld\"><thead><tr><th>on the critical path</th>",
                  (long long)st->step);
    for (int k = 0; k < MT_CP_KIND_COUNT_; k++)
        mt_out_printf(o, "<th class=\"n\">%s (us)</th>", mt_cp_kind_str((mt_cp_kind_t)k));
    us_str(a, st->replay_ns);
    mt_out_printf(o, "<th class=\"n\">replayed (us)</th></tr></thead><tbody><tr><td>step %lld</td>",
                  (long long)st->step);
    for (int k = 0; k < MT_CP_KIND_COUNT_; k++) {
        us_str(b, st->kind_ns[k]);
        mt_out_printf(o, "<td class=\"n\" data-kind=\"%s\">%s</td>", mt_cp_kind_str((mt_cp_kind_t)k), b);
    }
    mt_out_printf(o, "<td class=\"n\">%s</td></tr></tbody></table>\n</figure>\n", a);
}

/* Why a scenario did not run (critpath.h "what-if"). */
static const char *not_run(int k)
{
    switch (k) {
    case MT_WI_STRAGGLER:
        return "not run: the straggler analysis named no suspect";
    case MT_WI_COMM:
        return "not run: no matched communication instance";
    case MT_WI_PATTERN:
        return "not run: no --what-if kernel:GLOB=F given";
    default:
        return "not run";
    }
}

static void whatif_table(mt_out_t *o, const mt_critpath_t *c)
{
    /* the replay error of the steps a projection uses (used, not refused) */
    double *err = malloc((c->n_steps ? c->n_steps : 1) * sizeof *err);
    size_t ne = 0;
    for (size_t j = 0; err && j < c->n_steps; j++) {
        const mt_cp_step_t *s = &c->steps[j];
        if (s->used && !s->refused && s->time_ns > 0) {
            int64_t d = s->replay_ns - s->time_ns;
            err[ne++] = (double)(d < 0 ? -d : d) / (double)s->time_ns;
        }
    }
    if (err)
        qsort(err, ne, sizeof *err, mt_cmp_dbl);
    char e_med[32] = "", e_max[32] = "";
    if (ne) {
        snprintf(e_med, sizeof e_med, "%.3f", 100.0 * err[(ne - 1) / 2]);
        snprintf(e_max, sizeof e_max, "%.3f", 100.0 * err[ne - 1]);
    }
    free(err);
    mt_out_puts(o, "<h3>What-if projections</h3>\n<p class=\"note\">Each projection replays the dependency graph "
                   "with changed durations and the same edges; a step's projected time = its measured time + the "
                   "scenario's replay - the unchanged replay. Measured and projected: p50 over the used steps "
                   "projected. Replay error: |replayed - measured| / measured over those steps. A projection "
                   "assumes the dependencies stay the same.</p>\n");
    mt_out_puts(o, "<table class=\"whatif\"><thead><tr><th data-sort>scenario</th><th>change</th>"
                   "<th class=\"n\" data-sort>steps</th><th class=\"n\" data-sort>measured p50 (us)</th>"
                   "<th class=\"n\" data-sort>projected p50 (us)</th><th class=\"n\" data-sort>gain (us)</th>"
                   "<th class=\"n\" data-sort>gain %</th><th class=\"n\">replay error median / max %</th>"
                   "<th>status</th></tr></thead><tbody>\n");
    char m[32], p[32], g[32];
    for (int k = 0; k < MT_WI_COUNT_; k++) {
        const mt_cp_whatif_t *x = &c->whatif[k];
        mt_out_printf(o, "<tr data-scenario=\"%s\"><td>%s</td><td>", mt_wi_str((mt_wi_t)k), mt_wi_str((mt_wi_t)k));
        if (!x->run) {
            mt_out_printf(o, "</td><td class=\"n\"></td><td class=\"n\"></td><td class=\"n\"></td><td class=\"n\">"
                             "</td><td class=\"n\"></td><td class=\"n\"></td><td>%s</td></tr>\n",
                          not_run(k));
            continue;
        }
        mt_out_html(o, x->label, strlen(x->label)); /* snprintf: NUL-terminated */
        if (x->period_only && c->used > c->refused) { /* all refused: refused, as the others */
            mt_out_printf(o, "</td><td class=\"n\">0</td><td class=\"n\"></td><td class=\"n\"></td><td class=\"n\">"
                             "</td><td class=\"n\"></td><td class=\"n\"></td><td>step time not projected on a "
                             "pipeline: without waiting the stages drift apart (%s)</td></tr>\n",
                          c->periods ? "read the period" : "and no period: no used step follows another");
        } else if (!x->steps) {
            mt_out_printf(o, "</td><td class=\"n\">0</td><td class=\"n\"></td><td class=\"n\"></td><td class=\"n\">"
                             "</td><td class=\"n\"></td><td class=\"n\"></td><td>refused: every used step's replay "
                             "error is above 5 %%</td></tr>\n");
            continue;
        } else {
            int64_t meas = x->p50_ns + x->gain_ns;
            us_str(m, meas);
            us_str(p, x->p50_ns);
            us_str(g, x->gain_ns);
            mt_out_printf(o,
                          "</td><td class=\"n\">%llu</td><td class=\"n\">%s</td><td class=\"n\">%s</td><td "
                          "class=\"n\">%s</td><td class=\"n\">%.2f</td><td class=\"n\">%s / %s</td><td>projected",
                          (unsigned long long)x->steps, m, p, g,
                          meas > 0 ? 100.0 * (double)x->gain_ns / (double)meas : 0.0, e_med, e_max);
            char rg[96];
            range_note(rg, sizeof rg, x->ranged, x->alt_p50_ns);
            mt_out_puts(o, rg);
            if (c->refused)
                mt_out_printf(o, "; %llu used step%s refused (replay error above 5 %%)",
                              (unsigned long long)c->refused, c->refused == 1 ? "" : "s");
            mt_out_puts(o, "</td></tr>\n");
        }
        if (x->carried) { /* a pipeline: the period, the pace the terminal picks the best by */
            char rg[96];
            range_note(rg, sizeof rg, x->period_ranged, x->alt_period_p50_ns);
            us_str(m, c->period_p50_ns);
            us_str(p, x->period_p50_ns);
            us_str(g, x->period_gain_ns);
            mt_out_printf(o,
                          "<tr data-scenario=\"%s:period\"><td>%s</td><td>the same (period)</td><td class=\"n\">"
                          "%llu</td><td class=\"n\">%s</td><td class=\"n\">%s</td><td class=\"n\">%s</td><td "
                          "class=\"n\">%.2f</td><td class=\"n\">%s / %s</td><td>projected period%s</td></tr>\n",
                          mt_wi_str((mt_wi_t)k), mt_wi_str((mt_wi_t)k), (unsigned long long)c->periods, m, p, g,
                          c->period_p50_ns > 0 ? 100.0 * (double)x->period_gain_ns / (double)c->period_p50_ns : 0.0,
                          e_med, e_max, rg);
        }
    }
    for (size_t i = 0; i < c->n_stage_wi; i++) {
        const mt_cp_stage_wi_t *x = &c->stage_wi[i];
        char rg[96];
        range_note(rg, sizeof rg, x->ranged, x->alt_p50_ns);
        us_str(m, c->period_p50_ns);
        us_str(p, x->p50_ns);
        us_str(g, x->gain_ns);
        mt_out_printf(o,
                      "<tr data-scenario=\"stage\" data-stage=\"%u\"><td>stage</td><td>stage %u 10 %% faster "
                      "(period)</td><td class=\"n\">%llu</td><td class=\"n\">%s</td><td class=\"n\">%s</td><td "
                      "class=\"n\">%s</td><td class=\"n\">%.2f</td><td class=\"n\">%s / %s</td><td>projected period"
                      "%s</td></tr>\n",
                      x->stage, x->stage, (unsigned long long)c->periods, m, p, g,
                      c->period_p50_ns > 0 ? 100.0 * (double)x->gain_ns / (double)c->period_p50_ns : 0.0, e_med,
                      e_max, rg);
    }
    mt_out_puts(o, "</tbody></table>\n");
    if (c->refused) {
        mt_out_printf(o, "<p class=\"refused\">Refused (replay error above 5 %%, no projection):");
        size_t shown = 0;
        for (size_t j = 0; j < c->n_steps && shown < 32; j++) {
            const mt_cp_step_t *s = &c->steps[j];
            if (!s->used || !s->refused)
                continue;
            int64_t d = s->replay_ns - s->time_ns;
            mt_out_printf(o, "%s step %lld (%.2f %%)", shown ? "," : "", (long long)s->step,
                          s->time_ns > 0 ? 100.0 * (double)(d < 0 ? -d : d) / (double)s->time_ns : 0.0);
            shown++;
        }
        mt_out_printf(o, "%s.</p>\n", c->refused > shown ? ", &hellip;" : "");
    }
}

static double pct_of(int64_t ns, int64_t of)
{
    return of > 0 ? 100.0 * (double)ns / (double)of : 0.0;
}

/* Root causes of waiting (critpath.h "root causes"; report.json
 * steps.root_causes): the totals, the attributed time by kind, and the
 * causes by activity and by annotation, most first. Names are trace text:
 * escaped, never cut (the tables are where the full text is). */
static void root_causes(mt_out_t *o, const mt_critpath_t *c)
{
    char w[32], at[32], u[32];
    mt_out_puts(o, "<h3>Root causes of waiting</h3>\n");
    if (c->wait_ns <= 0) {
        mt_out_puts(o, "<p class=\"note\">No waiting in the matched collectives of the used steps.</p>\n");
        return;
    }
    mt_fmt_time(w, sizeof w, c->wait_ns);
    mt_fmt_time(at, sizeof at, c->attributed_ns);
    mt_out_printf(o,
                  "<p class=\"rc\">Of the %s waited in the matched collectives of the used steps, %s (%.2f %%) "
                  "is attributed: %.2f %% of it short-term (the late rank's own work since the previous "
                  "synchronisation), %.2f %% long-term (the work of the rank it waited for in turn, and so on).</p>\n",
                  w, at, pct_of(c->attributed_ns, c->wait_ns), pct_of(c->short_ns, c->attributed_ns),
                  pct_of(c->long_ns, c->attributed_ns));
    /* by kind: bars scaled to the largest kind */
    int64_t kmax = 0;
    for (int k = 0; k < MT_RC_KIND_COUNT_; k++)
        kmax = c->rc_kind_ns[k] > kmax ? c->rc_kind_ns[k] : kmax;
    mt_out_puts(o, "<table class=\"rckind\"><thead><tr><th>attributed to</th><th class=\"n\">us</th>"
                   "<th class=\"n\">% of attributed</th></tr></thead><tbody>\n");
    for (int k = 0; k < MT_RC_KIND_COUNT_; k++) {
        us_str(u, c->rc_kind_ns[k]);
        mt_out_printf(o,
                      "<tr data-kind=\"%s\"><td>%s</td><td class=\"n\"><span class=\"bar\" style=\"width:%.0fpx\">"
                      "</span>%s</td><td class=\"n\">%.2f</td></tr>\n",
                      mt_rc_kind_str((mt_rc_kind_t)k), mt_rc_kind_str((mt_rc_kind_t)k),
                      kmax > 0 ? 160.0 * (double)c->rc_kind_ns[k] / (double)kmax : 0.0, u,
                      pct_of(c->rc_kind_ns[k], c->attributed_ns));
    }
    mt_out_puts(o, "</tbody></table>\n");
    mt_out_puts(o, "<table class=\"sortable rc-causes\"><thead><tr><th class=\"n\" data-sort>rank</th>"
                   "<th data-sort>kind</th><th data-sort>activity</th><th class=\"n\" data-sort>us</th>"
                   "<th class=\"n\" data-sort>% of wait</th></tr></thead><tbody>\n");
    for (size_t i = 0; i < c->n_causes; i++) {
        const mt_cp_name_t *x = &c->causes[i];
        us_str(u, x->ns);
        mt_out_printf(o, "<tr><td class=\"n\" data-v=\"%d\">%d</td><td>%s</td><td class=\"name\">", x->rank, x->rank,
                      mt_rc_kind_str((mt_rc_kind_t)x->kind));
        mt_out_html(o, x->name, strlen(x->name));
        mt_out_printf(o, "</td><td class=\"n\" data-v=\"%lld\">%s</td><td class=\"n\">%.2f</td></tr>\n",
                      (long long)x->ns, u, pct_of(x->ns, c->wait_ns));
    }
    mt_out_puts(o, "</tbody></table>\n");
    mt_out_puts(o, "<table class=\"sortable rc-annot\"><thead><tr><th class=\"n\" data-sort>rank</th>"
                   "<th data-sort>annotation</th><th data-sort>kind (most)</th><th class=\"n\" data-sort>us</th>"
                   "<th class=\"n\" data-sort>% of wait</th></tr></thead><tbody>\n");
    for (size_t i = 0; i < c->n_by_annot; i++) {
        const mt_cp_name_t *x = &c->by_annot[i];
        us_str(u, x->ns);
        mt_out_printf(o, "<tr><td class=\"n\" data-v=\"%d\">%d</td><td class=\"name\">", x->rank, x->rank);
        mt_out_html(o, x->name, strlen(x->name));
        mt_out_printf(o, "</td><td>%s</td><td class=\"n\" data-v=\"%lld\">%s</td><td class=\"n\">%.2f</td></tr>\n",
                      mt_rc_kind_str((mt_rc_kind_t)x->kind), (long long)x->ns, u, pct_of(x->ns, c->wait_ns));
    }
    mt_out_puts(o, "</tbody></table>\n");
    mt_out_puts(o,
                  "<p class=\"note\">Each wait of a collective is charged to the work that made its last arrival "
                  "late (Scalasca's delay costs); the 10 largest causes by activity and by annotation, most first. "
                  "An empty activity is host or idle time; an empty annotation, time outside any user "
                  "annotation (ProfilerStep and nccl:* ranges are not counted as annotations).</p>\n");
}

mt_status_t mt_report_steps_html(const mt_critpath_t *c, mt_write_fn w, void *ctx)
{
    mt_out_t o = {w, ctx, MT_OK};
    mt_out_puts(&o, "<section id=\"steps\"><h2>Steps and critical path</h2>\n");
    if (!c) {
        mt_out_puts(&o, "<p class=\"note\">No ProfilerStep ranges in these traces.</p></section>\n");
        return o.st;
    }
    char a[32], b[32], d[32];
    mt_fmt_time(a, sizeof a, c->p50_ns);
    mt_fmt_time(b, sizeof b, c->p99_ns);
    mt_fmt_time(d, sizeof d, c->max_ns);
    mt_out_printf(&o,
                  "<p>%llu steps used after %d warm-up: step time p50 %s, p99 %s, max %s. The dependency graph "
                  "replays the used steps within %.2f %% (median), %.2f %% (worst).</p>\n",
                  (unsigned long long)c->used, c->warmup, a, b, d, 100.0 * c->replay_err_median,
                  100.0 * c->replay_err_max);
    if (c->n_strips)
        mt_out_printf(&o, "<p class=\"note\">Strips of the median step (the used step whose time is the p50)%s: "
                          "time on the aligned clock from the step start. Legend: "
                          "<svg width=\"430\" height=\"16\" style=\"display:inline;margin:0;vertical-align:middle\" "
                          "aria-hidden=\"true\">",
                      c->n_strips > 1 ? " and the slowest" : " (also the slowest)");
    for (int k = 0; c->n_strips && k < MT_CP_KIND_COUNT_; k++)
        mt_out_printf(&o, "<rect x=\"%d\" y=\"3\" width=\"12\" height=\"11\" fill=\"%s\" stroke=\"#666\"/>"
                          "<text x=\"%d\" y=\"13\">%s</text>",
                      k * 86, kind_fill[k], k * 86 + 16, mt_cp_kind_str((mt_cp_kind_t)k));
    if (c->n_strips)
        mt_out_puts(&o, "</svg></p>\n");
    for (size_t i = 0; i < c->n_strips; i++)
        strip(&o, c, &c->strips[i]);
    whatif_table(&o, c);
    root_causes(&o, c);
    mt_out_puts(&o, "</section>\n");
    return o.st;
}
