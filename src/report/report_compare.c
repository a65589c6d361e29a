/* compare.json (schema "mergetrace.compare/1"), the terminal section and
 * the report.html section of a comparison of two runs
 * (include/mergetrace/compare.h; the comparison itself: compare.c). */
#include <math.h>
#include <string.h>

#include "base/text.h"
#include "mergetrace/compare.h"

#define CMP_TOP 10 /* movers listed per kind */

/* A number or null (NAN, infinities). */
static void num(mt_out_t *o, double v)
{
    if (isfinite(v))
        mt_out_printf(o, "%.6g", v);
    else
        mt_out_puts(o, "null");
}

static void key_num(mt_out_t *o, const char *key, double v)
{
    mt_out_printf(o, ", \"%s\": ", key);
    num(o, v);
}

static bool step_where(const mt_compare_t *c, char *b, size_t cap);

static double rel(double a, double b)
{
    return a != 0 ? (b - a) / fabs(a) : NAN;
}

static void list_json(mt_out_t *o, const char *key, const mt_cmp_list_t *l, bool bw)
{
    mt_out_printf(o, ",\n \"%s\": {\"new\": %zu, \"vanished\": %zu, \"entries\": %zu, \"top\": [", key, l->n_new,
                  l->n_vanished, l->n);
    size_t shown = 0;
    for (size_t i = 0; i < l->n && shown < CMP_TOP; i++, shown++) {
        const mt_cmp_item_t *it = &l->v[i];
        mt_out_puts(o, shown ? ",\n  {\"name\": " : "\n  {\"name\": ");
        mt_out_str(o, it->name, 4096);
        mt_out_printf(o, ", \"status\": \"%s\"", it->in_a && it->in_b ? "both" : it->in_b ? "new" : "vanished");
        key_num(o, "a_us", it->in_a ? it->a : NAN);
        key_num(o, "b_us", it->in_b ? it->b : NAN);
        key_num(o, "delta_us", it->b - it->a);
        key_num(o, "rel", it->in_a && it->in_b ? rel(it->a, it->b) : NAN);
        key_num(o, "count_a", it->count_a);
        key_num(o, "count_b", it->count_b);
        if (bw) {
            key_num(o, "busbw_a_gbps", it->bw_a);
            key_num(o, "busbw_b_gbps", it->bw_b);
        }
        mt_out_puts(o, "}");
    }
    mt_out_puts(o, shown ? "\n ]}" : "]}");
}

mt_status_t mt_compare_json(const mt_compare_t *c, mt_write_fn w, void *ctx)
{
    mt_out_t o = {w, ctx, MT_OK};
    mt_out_puts(&o, "{\"schema\": \"mergetrace.compare/1\",\n \"baseline\": ");
    mt_out_str(&o, c->baseline, 4096);
    mt_out_printf(&o, ",\n \"method\": {\"test\": \"two-sided Mann-Whitney U\", \"alpha\": %.6g, \"min_effect\": %.6g},",
                  c->alpha, c->min_effect);
    mt_out_printf(&o, "\n \"world_size\": {\"a\": %lld, \"b\": %lld}, \"samples\": {\"a\": %lld, \"b\": %lld},",
                  (long long)c->world_a, (long long)c->world_b, (long long)c->steps_a, (long long)c->steps_b);
    mt_out_printf(&o, "\n \"pipeline\": {\"a\": %s, \"b\": %s},\n \"notes\": [", c->pipe_a ? "true" : "false",
                  c->pipe_b ? "true" : "false");
    for (size_t i = 0; i < c->n_notes; i++) {
        mt_out_puts(&o, i ? ", " : "");
        mt_out_str(&o, c->notes[i], 4096);
    }
    mt_out_puts(&o, "],\n \"metrics\": [");
    for (int i = 0; i < MT_CMP_METRIC_COUNT_; i++) {
        const mt_cmp_metric_t *m = &c->m[i];
        mt_out_printf(&o, "%s\n  {\"name\": \"%s\"", i ? "," : "", mt_cmp_metric_str((mt_cmp_id_t)i));
        key_num(&o, "a", m->has_a ? m->a : NAN);
        key_num(&o, "b", m->has_b ? m->b : NAN);
        key_num(&o, "delta", m->delta);
        key_num(&o, "rel", m->rel);
        mt_out_printf(&o, ", \"verdict\": \"%s\", \"samples\": \"%s\", \"n_a\": %zu, \"n_b\": %zu",
                      mt_cmp_verdict_str(m->verdict), m->samples ? m->samples : "", m->na, m->nb);
        if (m->verdict != MT_CMP_NA) {
            key_num(&o, "median_a", m->med_a);
            key_num(&o, "median_b", m->med_b);
            key_num(&o, "p", m->p);
            key_num(&o, "min_p", m->min_p);
            key_num(&o, "detectable", m->detectable); /* null: too few samples to tell */
            key_num(&o, "detectable_rel", m->med_a != 0 ? m->detectable / fabs(m->med_a) : NAN);
            mt_out_printf(&o, ", \"batched\": %s", m->batched ? "true" : "false");
        } else {
            mt_out_puts(&o, ", \"why\": ");
            mt_out_str(&o, m->why ? m->why : "", 200);
        }
        mt_out_puts(&o, "}");
    }
    mt_out_puts(&o, "\n ],\n \"steady\": {");
    for (int k = 0; k < 2; k++) {
        mt_out_printf(&o, "%s\"%s\": {\"steady\": %s", k ? ", " : "", k ? "b" : "a",
                      (k ? c->unsteady_b : c->unsteady_a) ? "false" : "true");
        key_num(&o, "trend_p", k ? c->trend_p_b : c->trend_p_a);
        key_num(&o, "half_rel", k ? c->trend_rel_b : c->trend_rel_a);
        mt_out_puts(&o, "}");
    }
    mt_out_puts(&o, "},\n \"explained\": {\"unit\": \"us per step, mean over ranks\"");
    key_num(&o, "a", c->total_a);
    key_num(&o, "b", c->total_b);
    key_num(&o, "delta", c->total_b - c->total_a);
    key_num(&o, "work_a", c->work_a);
    key_num(&o, "work_b", c->work_b);
    key_num(&o, "idle_share", c->idle_share);
    char where[160];
    mt_out_puts(&o, ", \"step_change\": ");
    if (step_where(c, where, sizeof where))
        mt_out_str(&o, where, sizeof where);
    else
        mt_out_puts(&o, "null");
    mt_out_puts(&o, ", \"parts\": [");
    for (int k = 0; k < MT_CMP_PART_COUNT_; k++) {
        mt_out_printf(&o, "%s{\"name\": \"%s\"", k ? ", " : "", mt_cmp_part_str(k));
        key_num(&o, "a", c->part_a[k]);
        key_num(&o, "b", c->part_b[k]);
        key_num(&o, "delta", c->part_b[k] - c->part_a[k]);
        mt_out_puts(&o, "}");
    }
    mt_out_printf(&o, "]},\n \"rank_most_changed\": ");
    if (c->rank_most >= 0)
        mt_out_printf(&o, "%d", (int)c->rank_most);
    else
        mt_out_puts(&o, "null");
    mt_out_puts(&o, ", \"rank_most_changed_compute\": ");
    if (c->rank_most_compute >= 0)
        mt_out_printf(&o, "%d", (int)c->rank_most_compute);
    else
        mt_out_puts(&o, "null");
    mt_out_puts(&o, ",\n \"ranks\": [");
    for (size_t i = 0; i < c->n_ranks; i++) {
        const mt_cmp_rank_t *r = &c->ranks[i];
        mt_out_printf(&o, "%s\n  {\"rank\": %d, \"in\": \"%s\"", i ? "," : "", (int)r->rank,
                      r->in_a && r->in_b ? "both" : r->in_a ? "baseline" : "this run");
        key_num(&o, "step_a_us", r->in_a ? r->step_a : NAN);
        key_num(&o, "step_b_us", r->in_b ? r->step_b : NAN);
        key_num(&o, "delta_us", r->in_a && r->in_b ? r->step_b - r->step_a : NAN);
        for (int k = 0; k < MT_CMP_PART_COUNT_; k++) {
            char kk[48];
            snprintf(kk, sizeof kk, "%s_delta_us", mt_cmp_part_str(k));
            key_num(&o, kk, r->in_a && r->in_b ? r->part_b[k] - r->part_a[k] : NAN);
        }
        mt_out_puts(&o, "}");
    }
    mt_out_puts(&o, c->n_ranks ? "\n ]" : "]");
    list_json(&o, "kernels", &c->kernels, false);
    list_json(&o, "collectives", &c->collectives, true);
    list_json(&o, "annotations", &c->annotations, false);
    mt_out_puts(&o, "\n}\n");
    return o.st;
}

/* Where a called step-time change lives, said next to the verdict (issue
 * 39: a host-bound step that got faster while the GPU work grew is no
 * speed-up of the work): "all of it host/idle time; GPU work +11.5 %".
 * false when the step verdict is no change or nothing is explained. */
static bool step_where(const mt_compare_t *c, char *b, size_t cap)
{
    const mt_cmp_metric_t *m = &c->m[MT_CMP_STEP_P50];
    if ((m->verdict != MT_CMP_FASTER && m->verdict != MT_CMP_SLOWER) || !c->n_ranks || !isfinite(c->idle_share) ||
        c->work_a <= 0)
        return false;
    double sh = c->idle_share, wr = (c->work_b - c->work_a) / c->work_a;
    char part[64];
    if (sh >= 0.95)
        snprintf(part, sizeof part, "all of it host/idle time");
    else if (sh >= 0.5)
        snprintf(part, sizeof part, "most of it (%.0f %%) host/idle time", 100 * sh);
    else if (sh > 0.05)
        snprintf(part, sizeof part, "%.0f %% of it host/idle time", 100 * sh);
    else
        snprintf(part, sizeof part, "in the GPU work");
    snprintf(b, cap, "%+.1f %%: %s; GPU work %+.1f %% per step", 100 * m->rel, part, 100 * wr);
    return true;
}

/* Microseconds as the rest of the outputs write times (mt_fmt_time: ns,
 * us, ms, s), with a sign when asked: "10.27 ms", "+63.9 us". */
static void fmt_us(char *b, size_t cap, double us, bool sign)
{
    char t[24]; /* "-9223372036.85 s" at most */
    mt_fmt_time(t, sizeof t, (int64_t)llround(us * 1e3));
    snprintf(b, cap, "%s%s", sign && us > 0 ? "+" : "", t);
}

/* A value of the metric table: a time (metrics named *_us) or a number. */
static void fmt_val(char *b, size_t cap, double v, bool has, bool us, bool sign)
{
    if (!has || !isfinite(v))
        snprintf(b, cap, "-");
    else if (us)
        fmt_us(b, cap, v, sign);
    else
        snprintf(b, cap, sign && v != 0 ? "%+.4g" : "%.4g", v);
}

static bool is_us(int id)
{
    const char *n = mt_cmp_metric_str((mt_cmp_id_t)id);
    size_t l = strlen(n);
    return l > 3 && !strcmp(n + l - 3, "_us");
}

mt_status_t mt_compare_text(const mt_compare_t *c, mt_write_fn w, void *ctx)
{
    mt_out_t o = {w, ctx, MT_OK};
    mt_out_printf(&o, "compared with %s (Mann-Whitney U, alpha %.3g, min effect %.3g %%):\n", c->baseline, c->alpha,
                  c->min_effect * 100);
    for (size_t i = 0; i < c->n_notes; i++)
        mt_out_printf(&o, "  note: %s\n", c->notes[i]);
    mt_out_printf(&o, "  %-20s %12s %12s %12s %8s  %s\n", "metric", "baseline", "this run", "delta", "rel", "verdict");
    for (int i = 0; i < MT_CMP_METRIC_COUNT_; i++) {
        const mt_cmp_metric_t *m = &c->m[i];
        if (!m->has_a && !m->has_b)
            continue;
        char a[32], b[32], d[32], r[32];
        fmt_val(a, sizeof a, m->a, m->has_a, is_us(i), false);
        fmt_val(b, sizeof b, m->b, m->has_b, is_us(i), false);
        fmt_val(d, sizeof d, m->delta, true, is_us(i), true);
        if (isfinite(m->rel))
            snprintf(r, sizeof r, "%+.1f%%", m->rel * 100);
        else
            snprintf(r, sizeof r, "-");
        char see[64] = "";
        if (m->verdict == MT_CMP_TOO_FEW)
            snprintf(see, sizeof see, " (%zu / %zu %s)", m->na, m->nb, m->samples ? m->samples : "");
        else if (m->verdict != MT_CMP_NA && m->med_a != 0 && isfinite(m->detectable))
            snprintf(see, sizeof see, " (sees %.2g %%)", 100 * m->detectable / fabs(m->med_a));
        mt_out_printf(&o, "  %-20s %12s %12s %12s %8s  %s%s\n", mt_cmp_metric_str((mt_cmp_id_t)i), a, b, d, r,
                      mt_cmp_verdict_str(m->verdict), see);
        char where[160];
        if (i == MT_CMP_STEP_P50 && step_where(c, where, sizeof where))
            mt_out_printf(&o, "    %s\n", where);
    }
    bool sees = false;
    for (int i = 0; i < MT_CMP_METRIC_COUNT_; i++)
        sees |= (c->m[i].has_a || c->m[i].has_b) && c->m[i].verdict != MT_CMP_NA && c->m[i].verdict != MT_CMP_TOO_FEW;
    if (sees)
        mt_out_puts(&o, "  (sees X %: the smallest change of the median the verdict could call)\n");
    if (c->n_ranks) {
        char ta[32], tb[32], td[32];
        fmt_us(ta, sizeof ta, c->total_a, false);
        fmt_us(tb, sizeof tb, c->total_b, false);
        fmt_us(td, sizeof td, c->total_b - c->total_a, true);
        mt_out_printf(&o, "  per-step GPU time %s -> %s (%s):", ta, tb, td);
        for (int k = 0; k < MT_CMP_PART_COUNT_; k++) {
            fmt_us(td, sizeof td, c->part_b[k] - c->part_a[k], true);
            mt_out_printf(&o, " %s %s", mt_cmp_part_str(k), td);
        }
        mt_out_puts(&o, "\n");
        if (c->rank_most >= 0)
            mt_out_printf(&o, "  rank that changed most: %d (per-step time), %d (its own compute)\n", (int)c->rank_most,
                          (int)c->rank_most_compute);
    }
    const struct {
        const char *what;
        const mt_cmp_list_t *l;
    } lists[] = {{"kernel", &c->kernels}, {"collective", &c->collectives}, {"annotation", &c->annotations}};
    for (size_t j = 0; j < 3; j++) {
        const mt_cmp_list_t *l = lists[j].l;
        /* kernels by cause (issue 39 papercut: 'ncclDevKernel_AllReduce
         * +12.09 ms' above the one rank's GEMMs that made the others wait):
         * of the 6 largest changes, the 3 first that are not communication,
         * then communication, whose time holds the waiting for other ranks */
        size_t pick[4], np = 0, top = l->n < 6 ? l->n : 6;
        for (int pass = 0; pass < (j == 0 ? 2 : 1); pass++)
            for (size_t i = 0, nc = 0; i < (j == 0 ? top : l->n) && np < 3 + (size_t)pass && nc < 1; i++) {
                const char *nm = l->v[i].name;
                size_t ln = strlen(nm);
                bool comm = j == 0 && ln >= 7 && !strcmp(nm + ln - 7, " [comm]");
                if (j != 0 || comm == (pass == 1)) {
                    pick[np++] = i;
                    nc += pass == 1; /* one communication row, last */
                }
            }
        for (size_t q = 0; q < np; q++) {
            const mt_cmp_item_t *it = &l->v[pick[q]];
            if (it->a == it->b && it->in_a && it->in_b)
                continue;
            /* kernels in both runs: calls per rank and time per call beside
             * the change (fewer calls at the same time each is no speed-up),
             * the name cut shorter to stay within 100 columns */
            bool calls = j == 0 && it->in_a && it->in_b && it->count_a > 0 && it->count_b > 0;
            char nm[61];
            snprintf(nm, calls ? 41 : sizeof nm, "%s", it->name);
            char dd[32];
            fmt_us(dd, sizeof dd, it->b - it->a, true);
            mt_out_printf(&o, "  %-10s %-*s %s%s", lists[j].what, calls ? 40 : 60, nm, dd,
                          it->in_a && it->in_b ? "" : it->in_b ? " (new)" : " (vanished)");
            if (calls) {
                char pa[32], pb[32];
                fmt_us(pa, sizeof pa, it->a / it->count_a, false);
                fmt_us(pb, sizeof pb, it->b / it->count_b, false);
                if (fabs(it->count_a - it->count_b) < 0.05)
                    mt_out_printf(&o, " (%.4g calls, %s -> %s)", it->count_b, pa, pb);
                else
                    mt_out_printf(&o, " (%.4g -> %.4g calls, %s -> %s)", it->count_a, it->count_b, pa, pb);
            }
            mt_out_puts(&o, "\n");
        }
    }
    return o.st;
}

static void h_val(mt_out_t *h, double v, bool has, bool us, bool sign)
{
    char b[32];
    fmt_val(b, sizeof b, v, has, us, sign);
    mt_out_puts(h, b);
}

mt_status_t mt_compare_html(const mt_compare_t *c, mt_write_fn w, void *ctx)
{
    mt_out_t o = {w, ctx, MT_OK};
    mt_out_t *h = &o;
    mt_out_puts(h, "<section id=\"compare\"><h2>Compared with the baseline</h2>\n<p>Baseline: <code>");
    mt_out_html(h, c->baseline, strlen(c->baseline));
    mt_out_printf(h, "</code>. Verdicts: two-sided Mann-Whitney U on the samples of both runs, alpha %.3g, "
                     "smallest change of the medians %.3g %%.</p>\n",
                  c->alpha, c->min_effect * 100);
    for (size_t i = 0; i < c->n_notes; i++) {
        mt_out_puts(h, "<p class=\"note\">");
        mt_out_html(h, c->notes[i], strlen(c->notes[i]));
        mt_out_puts(h, "</p>\n");
    }
    mt_out_puts(h, "<table><thead><tr><th>metric</th><th>baseline</th><th>this run</th><th>delta</th><th>rel</th>"
                   "<th>verdict</th><th>samples</th><th>p</th></tr></thead><tbody>\n");
    for (int i = 0; i < MT_CMP_METRIC_COUNT_; i++) {
        const mt_cmp_metric_t *m = &c->m[i];
        mt_out_printf(h, "<tr><td>%s</td><td>", mt_cmp_metric_str((mt_cmp_id_t)i));
        h_val(h, m->a, m->has_a, is_us(i), false);
        mt_out_puts(h, "</td><td>");
        h_val(h, m->b, m->has_b, is_us(i), false);
        mt_out_puts(h, "</td><td>");
        h_val(h, m->delta, true, is_us(i), true);
        mt_out_puts(h, "</td><td>");
        if (isfinite(m->rel))
            mt_out_printf(h, "%+.1f %%", m->rel * 100);
        else
            mt_out_puts(h, "-");
        mt_out_printf(h, "</td><td>%s", mt_cmp_verdict_str(m->verdict));
        if (m->verdict != MT_CMP_NA && m->verdict != MT_CMP_TOO_FEW && m->med_a != 0 && isfinite(m->detectable))
            mt_out_printf(h, " (sees %.2g %%)", 100 * m->detectable / fabs(m->med_a));
        char where[160];
        if (i == MT_CMP_STEP_P50 && step_where(c, where, sizeof where)) {
            mt_out_puts(h, "<br>");
            mt_out_html(h, where, strlen(where));
        }
        mt_out_printf(h, "</td><td>%zu / %zu %s</td><td>", m->na, m->nb, m->samples ? m->samples : "");
        if (m->verdict != MT_CMP_NA)
            mt_out_printf(h, "%.3g", m->p);
        else
            mt_out_puts(h, "-");
        mt_out_puts(h, "</td></tr>\n");
    }
    mt_out_puts(h, "</tbody></table>\n<h3>Per-step GPU time explained (us per step, mean over ranks)</h3>\n"
                   "<table><thead><tr><th>part</th><th>baseline</th><th>this run</th><th>delta</th></tr></thead><tbody>\n");
    for (int k = 0; k < MT_CMP_PART_COUNT_; k++)
        mt_out_printf(h, "<tr><td>%s</td><td>%.4g</td><td>%.4g</td><td>%+.4g</td></tr>\n", mt_cmp_part_str(k),
                      c->part_a[k], c->part_b[k], c->part_b[k] - c->part_a[k]);
    mt_out_printf(h, "<tr><td>total</td><td>%.4g</td><td>%.4g</td><td>%+.4g</td></tr>\n</tbody></table>\n",
                  c->total_a, c->total_b, c->total_b - c->total_a);
    const struct {
        const char *what;
        const mt_cmp_list_t *l;
    } lists[] = {{"Kernels", &c->kernels}, {"Collectives", &c->collectives}, {"Annotations (GPU time)", &c->annotations}};
    for (size_t j = 0; j < 3; j++) {
        const mt_cmp_list_t *l = lists[j].l;
        mt_out_printf(h, "<h3>%s: top movers (%zu new, %zu vanished)</h3>\n<table><thead><tr><th>name</th>"
                         "<th>baseline us</th><th>this run us</th><th>delta us</th></tr></thead><tbody>\n",
                      lists[j].what, l->n_new, l->n_vanished);
        for (size_t i = 0; i < l->n && i < CMP_TOP; i++) {
            const mt_cmp_item_t *it = &l->v[i];
            mt_out_puts(h, "<tr><td>");
            mt_out_html(h, it->name, strlen(it->name));
            mt_out_puts(h, "</td><td>");
            h_val(h, it->a, it->in_a, false, false);
            mt_out_puts(h, "</td><td>");
            h_val(h, it->b, it->in_b, false, false);
            mt_out_printf(h, "</td><td>%+.4g</td></tr>\n", it->b - it->a);
        }
        mt_out_puts(h, "</tbody></table>\n");
    }
    mt_out_puts(h, "</section>\n");
    return o.st;
}
