/* report.html's "Ideal what-if" section: the straggler slowdown S of the
 * ideal what-if (critpath.h mt_cp_ideal_t) with its per-worker / per-stage
 * heat map, min(S_worker, S_stage) per cell, as an HTML table with the
 * values printed in the cells and a colour legend (no script, no external
 * resource). */
#include "report/sections.h"

#include "base/text.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The cell colour of a slowdown: white at 1 (no slowdown), orange (#D55E00)
 * above 1, blue (#0072B2) below, the colour-blind-safe pair the lateness
 * map uses; full strength at span, the largest |S - 1| shown (one scale
 * for both sides, so a tiny speed-up is a faint blue). *dark: the text on
 * it should be white. */
static void s_colour(char *b, size_t cap, double v, double span, bool *dark)
{
    double t = span > 0 ? fabs(v - 1) / span : 0;
    int r0 = 0xD5, g0 = 0x5E, b0 = 0x00;
    if (v < 1) {
        r0 = 0x00;
        g0 = 0x72;
        b0 = 0xB2;
    }
    if (!(t >= 0)) /* NaN */
        t = 0;
    if (t > 1)
        t = 1;
    snprintf(b, cap, "#%02X%02X%02X", (int)lround(255 + (r0 - 255) * t), (int)lround(255 + (g0 - 255) * t),
             (int)lround(255 + (b0 - 255) * t));
    *dark = t > 0.6;
}

/* One coloured cell showing v; title names it (hover text). */
static void cell(mt_out_t *h, double v, double span, const char *title)
{
    char col[16];
    bool dark;
    s_colour(col, sizeof col, v, span, &dark);
    mt_out_printf(h, "<td class=\"n\" style=\"background:%s;color:%s;min-width:4.5em\" title=\"%s: %.4f\">%.4f</td>",
                  col, dark ? "#fff" : "#1a1a1a", title, v, v);
}

mt_status_t mt_report_html_whatif(const mt_cp_ideal_t *I, mt_write_fn write, void *ctx)
{
    mt_out_t h = {write, ctx, MT_OK};
    if (!I || !I->run)
        return MT_OK;
    mt_out_puts(&h, "<section id=\"whatif\"><h2>Ideal what-if</h2>\n");
    char a[32], b[32];
    mt_fmt_time(a, sizeof a, I->nodelay_ns);
    mt_fmt_time(b, sizeof b, I->ideal_ns);
    mt_out_printf(&h,
                  "<p>Straggler slowdown <strong>S = %.4f</strong>: the mean %s replayed with the measured "
                  "durations and no gaps (%s) over the mean with every operation at its type's typical value (%s), "
                  "%llu %s. S of a group is the ideal replay with only that group at its measured durations, over "
                  "the ideal mean (&gt; 1: the group slows the job).</p>\n",
                  I->s, I->by_period ? "period (a pipeline's time between consecutive steps' ends)" : "step time", a, b,
                  (unsigned long long)I->steps, I->by_period ? "periods" : "steps");
    if (I->s_ranged) /* the terminal's "range: S" line (critpath.h) */
        mt_out_printf(&h,
                      "<p class=\"range\">S rests on stream waits of communication kernels that no event of the "
                      "trace names (inferred from the times): with each pinned to its predecessor's measured end "
                      "S is %.4f, so S lies between %.4f and %.4f (docs/whatif.md, \"Ranges\"; record with "
                      "<code>enable_cuda_sync_events</code> to settle it).</p>\n",
                      I->alt_s, fmin(I->s, I->alt_s), fmax(I->s, I->alt_s));
    /* the range of the colour scale: every S shown */
    double lo = 1, hi = 1;
    for (size_t k = 0; k < I->n_worker; k++) {
        lo = fmin(lo, I->by_worker[k].s);
        hi = fmax(hi, I->by_worker[k].s);
    }
    for (size_t k = 0; k < I->n_stage; k++) {
        lo = fmin(lo, I->by_stage[k].s);
        hi = fmax(hi, I->by_stage[k].s);
    }
    double span = fmax(hi - 1, 1 - lo);
    if (I->n_stage && I->heat) {
        mt_out_puts(&h, "<h3>Heat map: min(S<sub>worker</sub>, S<sub>stage</sub>) per worker and stage</h3>\n"
                        "<table class=\"whatif-heat\"><thead><tr><th>worker \\ stage</th>");
        for (size_t s = 0; s < I->n_stage; s++)
            mt_out_printf(&h, "<th class=\"n\">stage %d</th>", I->by_stage[s].id);
        mt_out_puts(&h, "<th class=\"n\">S<sub>worker</sub></th></tr></thead>\n<tbody>");
        for (size_t w = 0; w < I->n_worker; w++) {
            mt_out_printf(&h, "<tr><th>worker %d</th>", I->by_worker[w].id);
            char t[64];
            for (size_t s = 0; s < I->n_stage; s++) {
                snprintf(t, sizeof t, "worker %d, stage %d", I->by_worker[w].id, I->by_stage[s].id);
                cell(&h, I->heat[w * I->n_stage + s], span, t);
            }
            snprintf(t, sizeof t, "worker %d", I->by_worker[w].id);
            cell(&h, I->by_worker[w].s, span, t);
            mt_out_puts(&h, "</tr>\n");
        }
        mt_out_puts(&h, "</tbody><tfoot><tr><th>S<sub>stage</sub></th>");
        for (size_t s = 0; s < I->n_stage; s++) {
            char t[32];
            snprintf(t, sizeof t, "stage %d", I->by_stage[s].id);
            cell(&h, I->by_stage[s].s, span, t);
        }
        mt_out_puts(&h, "<td></td></tr></tfoot></table>\n");
    } else if (I->n_worker) {
        mt_out_puts(&h, "<h3>S per worker (stages not known: no heat map)</h3>\n"
                        "<table class=\"whatif-heat\"><thead><tr><th>worker</th>");
        for (size_t w = 0; w < I->n_worker; w++)
            mt_out_printf(&h, "<th class=\"n\">%d</th>", I->by_worker[w].id);
        mt_out_puts(&h, "</tr></thead>\n<tbody><tr><th>S<sub>worker</sub></th>");
        for (size_t w = 0; w < I->n_worker; w++) {
            char t[32];
            snprintf(t, sizeof t, "worker %d", I->by_worker[w].id);
            cell(&h, I->by_worker[w].s, span, t);
        }
        mt_out_puts(&h, "</tr></tbody></table>\n");
    }
    /* the legend: the scale's two ends and 1 */
    char cl[16], ch[16];
    bool dl, dh;
    s_colour(cl, sizeof cl, lo, span, &dl);
    s_colour(ch, sizeof ch, hi, span, &dh);
    mt_out_printf(&h,
                  "<p class=\"note\">Colour: <span style=\"background:%s;color:%s;padding:0 .4em\">%.4f</span> "
                  "(the smallest S, blue: faster than ideal) &ndash; <span style=\"background:#FFFFFF;border:1px solid #ccc;"
                  "padding:0 .4em\">1.0000</span> (no slowdown) &ndash; <span style=\"background:%s;color:%s;"
                  "padding:0 .4em\">%.4f</span> (the largest S, orange). %s</p>\n",
                  cl, dl ? "#fff" : "#1a1a1a", lo, ch, dh ? "#fff" : "#1a1a1a", hi,
                  I->n_stage ? "A worker is a data-parallel rank (its place within its stage); a cell is the smaller "
                               "of its row's and its column's S."
                             : "A worker is a rank.");
    mt_out_puts(&h, "<ul>");
    if (I->blamed_stage >= 0)
        mt_out_printf(&h, "<li>Blamed stage (the largest S<sub>stage</sub>): <strong>stage %d</strong></li>",
                      I->blamed_stage);
    if (I->has_ms) {
        mt_fmt_time(a, sizeof a, I->ms_rem_ns);
        mt_out_printf(&h,
                      "<li>M<sub>S</sub> = %.4f: the share of the slowdown removed when the last stage (%d) runs at "
                      "the ideal values (mean step %s)</li>",
                      I->ms, I->ms_stage, a);
    }
    if (I->has_mw) {
        mt_fmt_time(a, sizeof a, I->mw_rem_ns);
        if (I->mw_stage >= 0)
            mt_out_printf(&h,
                          "<li>M<sub>W</sub> = %.4f: the same for rank %d (worker %d, stage %d; the largest "
                          "min(S<sub>worker</sub>, S<sub>stage</sub>)), mean step %s</li>",
                          I->mw, I->mw_rank, I->mw_worker, I->mw_stage, a);
        else
            mt_out_printf(&h,
                          "<li>M<sub>W</sub> = %.4f: the same for rank %d (the largest S<sub>worker</sub>), "
                          "mean step %s</li>",
                          I->mw, I->mw_rank, a);
    }
    if (I->n_type) {
        mt_out_puts(&h, "<li>S per operation type:");
        for (size_t k = 0; k < I->n_type; k++) {
            mt_out_puts(&h, k ? ", " : " ");
            mt_out_html(&h, I->by_type[k].name, strlen(I->by_type[k].name));
            mt_out_printf(&h, " %.4f", I->by_type[k].s);
        }
        mt_out_puts(&h, "</li>");
    }
    mt_out_puts(&h, "</ul></section>\n");
    return h.st;
}
