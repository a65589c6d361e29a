/* report.html writer: one self-contained page, one static function per
 * section (see include/mergetrace/report_html.h). */
#include "mergetrace/report_html.h"
#include "base/sort.h"
#include "mergetrace/compare.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/stats.h"
#include "base/text.h"
#include "cross/passes.h"
#include "report/sections.h"
#include "mergetrace/analysis.h"
#include "mergetrace/classify.h"
#include "mergetrace/crossrank.h"

/* Okabe-Ito colours (safe for the common colour-vision deficiencies); each
 * series also has its own pattern or marker shape and a label. */
#define C_BLUE "#0072B2"
#define C_VERMILLION "#D55E00"
#define C_GREEN "#009E73"
#define C_ORANGE "#E69F00"
#define C_SKY "#56B4E9"
#define C_PURPLE "#CC79A7"
#define C_IDLE "#E4E4E4"

static void escn(mt_out_t *h, const char *s, size_t n)
{
    mt_out_html(h, s, n);
}

static void esc(mt_out_t *h, const char *s)
{
    if (s)
        escn(h, s, strlen(s));
}

/* A fixed-size label field (NUL-terminated or full). */
static void esc_field(mt_out_t *h, const char *s, size_t cap)
{
    size_t n = 0;
    while (n < cap && s[n])
        n++;
    escn(h, s, n);
}

/* At most max bytes of s[0..n) without splitting a UTF-8 sequence, and
 * "..." when cut; for labels inside pictures (the full text goes in a
 * <title> or a table). */
static void esc_cut(mt_out_t *h, const char *s, size_t n, size_t max)
{
    if (n <= max) {
        escn(h, s, n);
        return;
    }
    size_t k = max;
    while (k > 0 && ((unsigned char)s[k] & 0xc0) == 0x80)
        k--;
    escn(h, s, k);
    mt_out_puts(h, "\xe2\x80\xa6"); /* U+2026 */
}

/* ---- numbers ---------------------------------------------------------- */

/* ns / unit with `dec` decimals, rounded half away from zero, exactly. */
static void fmt_fixed(char *b, size_t cap, int64_t ns, int64_t unit, int dec)
{
    int64_t p10 = 1;
    for (int i = 0; i < dec; i++)
        p10 *= 10;
    uint64_t div = (uint64_t)(unit / p10);
    uint64_t m = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
    uint64_t q = m / div + (m % div >= (div + 1) / 2);
    if (dec)
        snprintf(b, cap, "%s%llu.%0*llu", ns < 0 && q ? "-" : "", (unsigned long long)(q / (uint64_t)p10), dec,
                 (unsigned long long)(q % (uint64_t)p10));
    else
        snprintf(b, cap, "%s%llu", ns < 0 && q ? "-" : "", (unsigned long long)q);
}

typedef struct num {
    char s[48];
} num_t;

static num_t ms3(int64_t ns)
{
    num_t n;
    fmt_fixed(n.s, sizeof n.s, ns, 1000000, 3);
    return n;
}

static num_t us1(int64_t ns)
{
    num_t n;
    fmt_fixed(n.s, sizeof n.s, ns, 1000, 1);
    return n;
}

static num_t us0(int64_t ns)
{
    num_t n;
    fmt_fixed(n.s, sizeof n.s, ns, 1000, 0);
    return n;
}

static double pct(double a, double b)
{
    return b > 0 ? a / b * 100.0 : 0.0;
}

static num_t pct1(double a, double b)
{
    num_t n;
    snprintf(n.s, sizeof n.s, "%.1f", pct(a, b));
    return n;
}

static num_t bytes_h(uint64_t v)
{
    num_t n;
    mt_fmt_bytes(n.s, sizeof n.s, v > INT64_MAX ? INT64_MAX : (int64_t)v);
    return n;
}

/* A round tick step for about n ticks over span. */
static double nice_step(double span, int n)
{
    if (!(span > 0) || !isfinite(span))
        return 1;
    double raw = span / n, p = pow(10, floor(log10(raw))), f = raw / p;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * p;
}

/* Tick label: %g with the noise of repeated additions removed. */
static num_t tick(double v, double step)
{
    num_t n;
    if (fabs(v) < step * 1e-6)
        v = 0;
    snprintf(n.s, sizeof n.s, "%.6g", v);
    return n;
}

/* An x axis from value lo to hi drawn over [x0, x0 + w] at y, with ticks,
 * grid lines up to y_top and a title below. */
static void x_axis(mt_out_t *h, double x0, double w, double y, double y_top, double lo, double hi, const char *title)
{
    if (!(hi > lo))
        hi = lo + 1;
    double st = nice_step(hi - lo, w < 250 ? 3 : 5);
    mt_out_printf(h, "<g class=\"axis\"><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>", x0, y, x0 + w,
         y);
    int k = 0; /* bounded: st is at least a fifth of the span */
    for (double v = ceil(lo / st - 1e-9) * st; v <= hi + st * 1e-9 && k < 40; v += st, k++) {
        double x = x0 + (v - lo) / (hi - lo) * w;
        mt_out_printf(h,
             "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
             "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>"
             "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>",
             x, y_top, x, y, x, y, x, y + 4, x, y + 16, tick(v, st).s);
    }
    mt_out_printf(h, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" class=\"at\">%s</text></g>", x0 + w / 2, y + 32,
         title);
}

/* A legend entry: a swatch (fill may be a url(#pattern)) and a label. */
static double legend(mt_out_t *h, double x, double y, const char *fill, const char *label)
{
    mt_out_printf(h,
         "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"14\" fill=\"%s\" stroke=\"#333\" stroke-width=\"0.5\"/>"
         "<text x=\"%.1f\" y=\"%.1f\">%s</text>",
         x, y - 11, fill, x + 18, y, label);
    return x + 32 + 7.2 * (double)strlen(label);
}

static void svg_open(mt_out_t *h, double w, double hgt, const char *label)
{
    mt_out_printf(h,
         "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
         "role=\"img\" aria-label=\"%s\">",
         w, hgt, w, hgt, label);
}

/* ---- the page --------------------------------------------------------- */

static const char css[] =
    ":root{color-scheme:light}\n"
    "body{font-family:system-ui,-apple-system,\"Segoe UI\",\"DejaVu Sans\",Arial,sans-serif;color:#1a1a1a;"
    "background:#fff;margin:0 auto;max-width:1240px;padding:0 16px 48px;line-height:1.4}\n"
    "h1{font-size:1.6em;margin:.6em 0 .2em}\n"
    "h2{font-size:1.3em;border-bottom:2px solid #333;padding-bottom:2px;margin-top:1.8em}\n"
    "h3{font-size:1.05em;margin:1.2em 0 .3em}\n"
    "nav{position:sticky;top:0;background:#fff;border-bottom:1px solid #ccc;padding:6px 0;z-index:1}\n"
    "nav a{margin-right:1.2em;color:#0b4f8a}\n"
    "table{border-collapse:collapse;font-size:13px;margin:.4em 0}\n"
    "th,td{border:1px solid #c8c8c8;padding:2px 7px;text-align:left;vertical-align:top}\n"
    "th{background:#eee}\n"
    "td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}\n"
    "td.name{max-width:760px;overflow-wrap:anywhere}\n"
    ".js th[data-sort]{cursor:pointer}\n"
    ".js th[data-sort]::after{content:\" \\2195\";color:#888}\n"
    "svg{display:block;max-width:100%;height:auto;font-size:12px;margin:.4em 0}\n"
    "svg text{fill:#1a1a1a}\n"
    "svg .at{font-weight:600}\n"
    "svg .cell{font-size:11px}\n"
    "pre.cmd{white-space:pre-wrap;overflow-wrap:anywhere;background:#f5f5f5;border:1px solid #ddd;padding:6px}\n"
    ".note{color:#555;font-size:13px}\n"
    ".bar{display:inline-block;height:9px;background:" C_BLUE ";margin-right:6px;vertical-align:middle}\n"
    ".ev li{font-family:ui-monospace,\"DejaVu Sans Mono\",monospace;font-size:13px}\n"
    "figure{margin:0;break-inside:avoid}\n"
    "section,header{scroll-margin-top:40px}\n"
    ".defs{position:absolute;width:0;height:0;overflow:hidden}\n"
    "@media print{nav{display:none}body{max-width:none;padding:0}h2{break-after:avoid}"
    "section{break-before:auto}.js th[data-sort]::after{content:none}"
    "*{-webkit-print-color-adjust:exact;print-color-adjust:exact}}\n";

/* Table sorting: click a header with data-sort. Cells sort on data-v when
 * they have it (numbers), else on their text. Nothing else depends on it;
 * the class "js" it sets on <html> shows the sort arrows (and tells the
 * browser test that the script ran to its end). */
static const char script[] =
    "(function(){\n"
    "function key(c){var v=c.getAttribute('data-v');return v===null?c.textContent:parseFloat(v);}\n"
    "var hs=document.querySelectorAll('th[data-sort]');\n"
    "for(var k=0;k<hs.length;k++){hs[k].addEventListener('click',function(ev){\n"
    " var th=ev.currentTarget,t=th.closest('table'),b=t.tBodies[0],i=th.cellIndex;\n"
    " var d=th.getAttribute('data-dir')==='d'?'a':'d';th.setAttribute('data-dir',d);\n"
    " var rs=Array.prototype.slice.call(b.rows);\n"
    " rs.sort(function(x,y){var p=key(x.cells[i]),q=key(y.cells[i]);\n"
    "  var c=(typeof p==='number'&&typeof q==='number')?p-q:String(p).localeCompare(String(q));\n"
    "  return d==='a'?c:-c;});\n"
    " for(var j=0;j<rs.length;j++)b.appendChild(rs[j]);});}\n"
    "document.documentElement.className='js';\n"
    "})();\n";

/* Patterns shared by every picture of the page. */
static void defs(mt_out_t *h)
{
    mt_out_puts(h, "<svg class=\"defs\" xmlns=\"http://www.w3.org/2000/svg\" aria-hidden=\"true\"><defs>"
             "<pattern id=\"p-comm\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\">"
             "<rect width=\"6\" height=\"6\" fill=\"" C_VERMILLION "\"/>"
             "<path d=\"M-1,1 l2,-2 M0,6 l6,-6 M5,7 l2,-2\" stroke=\"#fff\" stroke-width=\"1.3\"/></pattern>"
             "<pattern id=\"p-mem\" width=\"5\" height=\"5\" patternUnits=\"userSpaceOnUse\">"
             "<rect width=\"5\" height=\"5\" fill=\"" C_GREEN "\"/>"
             "<circle cx=\"2.5\" cy=\"2.5\" r=\"1.1\" fill=\"#fff\"/></pattern>"
             "<pattern id=\"p-idle\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\">"
             "<rect width=\"6\" height=\"6\" fill=\"" C_IDLE "\"/>"
             "<path d=\"M0,3 h6\" stroke=\"#b0b0b0\" stroke-width=\"1\"/></pattern>"
             "<pattern id=\"p-gpu\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\">"
             "<rect width=\"6\" height=\"6\" fill=\"" C_BLUE "\"/>"
             "<path d=\"M-1,5 l2,2 M0,0 l6,6 M5,-1 l2,2\" stroke=\"#fff\" stroke-width=\"1.2\"/></pattern>"
             "<pattern id=\"p-p99\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\">"
             "<rect width=\"6\" height=\"6\" fill=\"" C_PURPLE "\"/>"
             "<path d=\"M-1,1 l2,-2 M0,6 l6,-6 M5,7 l2,-2\" stroke=\"#fff\" stroke-width=\"1.2\"/></pattern>"
             "<linearGradient id=\"g-late\" x1=\"0\" x2=\"1\" y1=\"0\" y2=\"0\">"
             "<stop offset=\"0\" stop-color=\"" C_BLUE "\"/><stop offset=\"0.5\" stop-color=\"#fff\"/>"
             "<stop offset=\"1\" stop-color=\"" C_VERMILLION "\"/></linearGradient>"
             "</defs></svg>\n");
}

/* ---- header: inputs and command line ------------------------------------ */

static void section_header(mt_out_t *h, const mt_report_t *r, const mt_html_opts_t *o)
{
    mt_out_puts(h, "<header id=\"inputs\"><h1>mergetrace report</h1>\n<p>");
    mt_out_printf(h, "mergetrace ");
    esc(h, r->version);
    uint64_t bytes = 0, events = 0;
    for (size_t i = 0; i < r->n_inputs; i++) {
        bytes += r->inputs[i].bytes;
        events += r->inputs[i].events;
    }
    mt_out_printf(h, " &middot; world size %lld &middot; %zu rank%s loaded (%zu file%s, %s, %llu events)",
         (long long)r->world_size, r->n_inputs, r->n_inputs == 1 ? "" : "s", r->n_inputs,
         r->n_inputs == 1 ? "" : "s", bytes_h(bytes).s, (unsigned long long)events);
    int64_t absent = r->missing_count > (int64_t)r->n_missing ? r->missing_count : (int64_t)r->n_missing;
    if (absent) {
        mt_out_printf(h, " &middot; <strong>%lld missing rank%s:", (long long)absent, absent == 1 ? "" : "s");
        for (size_t i = 0; i < r->n_missing && i < 64; i++)
            mt_out_printf(h, " %lld", (long long)r->missing[i]);
        mt_out_printf(h, "%s</strong>", absent > 64 ? " &hellip;" : "");
    }
    mt_out_puts(h, "</p>\n");
    if (o && o->command_line) {
        mt_out_puts(h, "<p class=\"note\">Command line:</p><pre class=\"cmd\">");
        esc(h, o->command_line);
        mt_out_puts(h, "</pre>\n");
    }
    if (r->match) {
        const mt_match_stats_t *m = r->match;
        mt_out_printf(h, "<p>Collectives: %llu kernels", (unsigned long long)(m->rows - m->cpu_rows));
        if (m->cpu_rows) /* gloo: CPU ranges, no kernel */
            mt_out_printf(h, " and %llu gloo CPU ranges", (unsigned long long)m->cpu_rows);
        mt_out_printf(h,
             " matched into %llu full, %llu partial, %llu unmatched and %llu "
             "mismatched instances.",
             (unsigned long long)m->full, (unsigned long long)m->partial,
             (unsigned long long)m->unmatched, (unsigned long long)m->mismatched);
        if (r->merged) {
            mt_out_puts(h, " Merged trace: <code>");
            esc(h, r->merged);
            mt_out_printf(h, "</code> (%llu events).", (unsigned long long)r->merged_events);
        }
        mt_out_puts(h, "</p>\n");
    }
    mt_out_puts(h, "<table class=\"inputs\"><thead><tr><th class=\"n\">rank</th><th>file</th><th class=\"n\">size</th>"
             "<th class=\"n\">JSON bytes</th><th class=\"n\">events</th><th>rank from</th><th>note</th></tr>"
             "</thead><tbody>\n");
    for (size_t i = 0; i < r->n_inputs; i++) {
        const mt_report_input_t *in = &r->inputs[i];
        mt_out_printf(h, "<tr><td class=\"n\">%d</td><td class=\"name\">", in->rank);
        esc(h, in->path);
        mt_out_printf(h, "</td><td class=\"n\">%s</td><td class=\"n\">%llu</td><td class=\"n\">%llu</td><td>",
             bytes_h(in->bytes).s, (unsigned long long)in->json_bytes, (unsigned long long)in->events);
        esc(h, in->rank_source);
        mt_out_puts(h, "</td><td>");
        if (in->truncated)
            mt_out_printf(h, "truncated at byte %llu", (unsigned long long)in->truncated_at);
        mt_out_puts(h, "</td></tr>\n");
    }
    mt_out_puts(h, "</tbody></table>\n");
    if (r->n_skipped) {
        mt_out_puts(h, "<p>Skipped (not traces):</p><ul>");
        for (size_t i = 0; i < r->n_skipped; i++) {
            mt_out_puts(h, "<li><code>");
            esc(h, r->skipped[i].path);
            mt_out_puts(h, "</code>: ");
            esc(h, r->skipped[i].reason);
            mt_out_puts(h, "</li>");
        }
        mt_out_puts(h, "</ul>\n");
    }
    mt_out_puts(h, "</header>\n");
}

/* ---- per-rank GPU time ------------------------------------------------ */

static void bar_seg(mt_out_t *h, double x, double y, double w, double bh, const char *fill, int32_t rank,
                    const char *what, int64_t ns, int64_t span)
{
    if (w <= 0)
        return;
    mt_out_printf(h,
         "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\">"
         "<title>rank %d %s: %s ms (%s%%)</title></rect>",
         x, y, w, bh, fill, rank, what, ms3(ns).s, pct1((double)ns, (double)span).s);
}

static void section_gpu_time(mt_out_t *h, const mt_report_t *r)
{
    mt_out_puts(h, "<section id=\"gpu-time\"><h2>GPU time per rank</h2>\n");
    if (!r->analyses || !r->n_analyses) {
        mt_out_puts(h, "<p class=\"note\">No per-rank analysis in this report.</p></section>\n");
        return;
    }
    mt_out_puts(h, "<p class=\"note\">Share of each rank's GPU span (first to last GPU activity, on its own clock): "
             "compute kernels; communication not hidden behind compute; memory copies and sets not hidden "
             "behind either; idle. Overlap: the share of communication time that runs under compute.</p>\n");
    size_t n = r->n_analyses;
    double rh = n > 32 ? 14 : 22, bh = rh - 6, top = 52, lx = 70, bw = 640, ox = 790, ow = 160;
    double H = top + rh * (double)n + 44, W = 1000;
    mt_out_puts(h, "<figure>");
    svg_open(h, W, H, "stacked bars of compute, communication, memory and idle time per rank, and overlap");
    double x = lx;
    x = legend(h, x, 16, C_BLUE, "compute");
    x = legend(h, x, 16, "url(#p-comm)", "communication");
    x = legend(h, x, 16, "url(#p-mem)", "memory");
    x = legend(h, x, 16, "url(#p-idle)", "idle");
    (void)legend(h, ox, 16, C_ORANGE, "overlap");
    mt_out_printf(h, "<text x=\"%.1f\" y=\"40\" class=\"at\">share of the GPU span</text>", lx);
    mt_out_printf(h, "<text x=\"%.1f\" y=\"40\" class=\"at\">comm under compute</text>", ox);
    double ay = top + rh * (double)n + 2;
    x_axis(h, lx, bw, ay, top - 4, 0, 100, "% of span");
    x_axis(h, ox, ow, ay, top - 4, 0, 100, "% of comm time");
    for (size_t i = 0; i < n; i++) {
        const mt_rank_analysis_t *a = r->analyses[i];
        double y = top + rh * (double)i;
        if (!a)
            continue;
        mt_out_printf(h, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">rank %d</text>", lx - 6, y + bh - 2, a->rank);
        if (a->span_ns <= 0) {
            mt_out_printf(h, "<text x=\"%.1f\" y=\"%.1f\" class=\"note\">no GPU activity</text>", lx + 4, y + bh - 2);
            continue;
        }
        double s = (double)a->span_ns, cx = lx;
        const int64_t part[4] = {a->compute_ns, a->comm_ns, a->memory_ns, a->idle_ns};
        const char *fill[4] = {C_BLUE, "url(#p-comm)", "url(#p-mem)", "url(#p-idle)"};
        const char *what[4] = {"compute", "communication", "memory", "idle"};
        for (int k = 0; k < 4; k++) {
            double w = (double)part[k] / s * bw;
            bar_seg(h, cx, y, w, bh, fill[k], a->rank, what[k], part[k], a->span_ns);
            cx += w > 0 ? w : 0;
        }
        double op = pct((double)a->overlap_ns, (double)a->comm_total_ns);
        mt_out_printf(h, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"" C_ORANGE "\">"
                "<title>rank %d overlap %.1f%%</title></rect>",
             ox, y, op / 100 * ow, bh, a->rank, op);
        mt_out_printf(h, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#999\" "
                "stroke-width=\"0.5\"/>",
             ox, y, ow, bh);
        mt_out_printf(h, "<text x=\"%.1f\" y=\"%.1f\">%.1f%%</text>", ox + ow + 6, y + bh - 2, op);
    }
    mt_out_puts(h, "</svg></figure>\n");

    mt_out_puts(h, "<table class=\"sortable\"><thead><tr><th class=\"n\" data-sort>rank</th>"
             "<th class=\"n\" data-sort>span ms</th><th class=\"n\" data-sort>compute %</th>"
             "<th class=\"n\" data-sort>comm %</th><th class=\"n\" data-sort>memory %</th>"
             "<th class=\"n\" data-sort>idle %</th><th class=\"n\" data-sort>overlap %</th>"
             "<th class=\"n\" data-sort>comm total ms</th><th class=\"n\" data-sort>host wait %</th>"
             "</tr></thead><tbody>\n");
    for (size_t i = 0; i < n; i++) {
        const mt_rank_analysis_t *a = r->analyses[i];
        if (!a)
            continue;
        double s = (double)a->span_ns;
        num_t c = pct1((double)a->compute_ns, s), m = pct1((double)a->comm_ns, s),
              y = pct1((double)a->memory_ns, s), d = pct1((double)a->idle_ns, s),
              ov = pct1((double)a->overlap_ns, (double)a->comm_total_ns);
        mt_out_printf(h,
             "<tr><td class=\"n\" data-v=\"%d\">%d</td><td class=\"n\" data-v=\"%lld\">%s</td>"
             "<td class=\"n\" data-v=\"%s\">%s</td><td class=\"n\" data-v=\"%s\">%s</td>"
             "<td class=\"n\" data-v=\"%s\">%s</td><td class=\"n\" data-v=\"%s\">%s</td>"
             "<td class=\"n\" data-v=\"%s\">%s</td>",
             a->rank, a->rank, (long long)a->span_ns, ms3(a->span_ns).s, c.s, c.s, m.s, m.s, y.s, y.s, d.s, d.s,
             ov.s, ov.s);
        /* the terminal's host wait (mt_an_host_wait), not the sum over streams */
        num_t hw = pct1((double)mt_an_host_wait(a), s);
        mt_out_printf(h, "<td class=\"n\" data-v=\"%lld\">%s</td><td class=\"n\" data-v=\"%s\">%s</td></tr>\n",
             (long long)a->comm_total_ns, ms3(a->comm_total_ns).s, hw.s, hw.s);
    }
    mt_out_puts(h, "</tbody></table></section>\n");
}

/* ---- stragglers -------------------------------------------------------- */

/* The colour of lateness v on a blue - white - vermillion scale with
 * |v| = max at the ends. */
static void late_colour(char *b, size_t cap, int64_t v, int64_t max, bool *dark)
{
    double t = max > 0 ? fabs((double)v) / (double)max : 0;
    if (t > 1)
        t = 1;
    int r0, g0, b0;
    if (v >= 0) {
        r0 = 0xD5;
        g0 = 0x5E;
        b0 = 0x00;
    } else {
        r0 = 0x00;
        g0 = 0x72;
        b0 = 0xB2;
    }
    int rr = (int)lround(255 + (r0 - 255) * t), gg = (int)lround(255 + (g0 - 255) * t),
        bb = (int)lround(255 + (b0 - 255) * t);
    snprintf(b, cap, "#%02X%02X%02X", rr, gg, bb);
    *dark = t > 0.6;
}

static bool step_suspect(const mt_cross_t *x, int64_t step, int32_t rank)
{
    if (!x)
        return false;
    for (size_t s = 0; s < x->n_steps; s++)
        if (x->steps[s].step == step) {
            const mt_cross_step_t *sp = &x->steps[s];
            for (uint32_t k = 0; k < sp->n_suspects; k++)
                if (x->step_suspects[sp->first_suspect + k] == rank)
                    return true;
        }
    return false;
}

static void rank_list(mt_out_t *h, const int32_t *v, size_t n)
{
    if (!n)
        mt_out_puts(h, "none");
    for (size_t i = 0; i < n; i++)
        mt_out_printf(h, "%s%d", i ? ", " : "", v[i]);
}

#define MAX_HEAT_RANKS 128

typedef struct heat_key {
    int64_t late; /* the rank's latest cell */
    size_t index;
} heat_key_t;

static int heat_key_cmp(const void *x, const void *y)
{
    const heat_key_t *a = x, *b = y;
    if (a->late != b->late)
        return a->late < b->late ? 1 : -1;
    return (a->index > b->index) - (a->index < b->index);
}

static int size_cmp(const void *x, const void *y)
{
    size_t a = *(const size_t *)x, b = *(const size_t *)y;
    return (a > b) - (a < b);
}

static void heat_map(mt_out_t *h, const mt_report_t *r)
{
    const mt_report_views_t *v = r->views;
    size_t nr = v->n_grid_ranks, ns = v->n_grid_steps;
    /* the colour scale ends at the 98th percentile of |lateness|, so that
     * one extreme step (a warm-up) does not wash out the rest; cells beyond
     * it get the full colour and keep their number */
    size_t cells = nr * ns;
    int64_t *abs_v = malloc((cells ? cells : 1) * sizeof *abs_v);
    if (!abs_v) {
        h->st = h->st == MT_OK ? MT_ERR_NOMEM : h->st;
        return;
    }
    size_t na = 0;
    int64_t top_abs = 0;
    for (size_t c = 0; c < nr * ns; c++)
        if (v->grid_ns[c] != MT_VIEW_NONE) {
            abs_v[na] = v->grid_ns[c] < 0 ? -v->grid_ns[c] : v->grid_ns[c];
            top_abs = abs_v[na] > top_abs ? abs_v[na] : top_abs;
            na++;
        }
    qsort(abs_v, na, sizeof *abs_v, mt_cmp_i64);
    int64_t max = na ? abs_v[(na * 98 + 99) / 100 - 1] : 0;
    free(abs_v);
    if (max <= 0)
        max = top_abs > 0 ? top_abs : 1;
    const char *beyond = top_abs > max ? " or more" : "";
    /* many ranks: the MAX_HEAT_RANKS with the latest cells, by rank */
    size_t *show = malloc((nr ? nr : 1) * sizeof *show), nshow = 0;
    heat_key_t *key = malloc((nr ? nr : 1) * sizeof *key);
    if (!show || !key) {
        free(show);
        free(key);
        h->st = h->st == MT_OK ? MT_ERR_NOMEM : h->st;
        return;
    }
    for (size_t i = 0; i < nr; i++) {
        key[i] = (heat_key_t){INT64_MIN, i};
        for (size_t s = 0; s < ns; s++)
            if (v->grid_ns[i * ns + s] != MT_VIEW_NONE && v->grid_ns[i * ns + s] > key[i].late)
                key[i].late = v->grid_ns[i * ns + s];
    }
    if (nr > MAX_HEAT_RANKS)
        qsort(key, nr, sizeof *key, heat_key_cmp);
    for (size_t i = 0; i < nr && i < MAX_HEAT_RANKS; i++)
        show[nshow++] = key[i].index;
    qsort(show, nshow, sizeof *show, size_cmp);
    free(key);
    double lx = 70, top = 70, cw = 880.0 / (double)ns, ch = nshow > 40 ? 12 : 22;
    cw = cw > 72 ? 72 : cw < 12 ? 12 : cw;
    bool text = cw >= 40 && ch >= 18;
    double W = lx + cw * (double)ns + 110, H = top + ch * (double)nshow + 20;
    if (W < 620)
        W = 620;
    mt_out_puts(h, "<figure>");
    svg_open(h, W, H, "heat map of mean lateness per rank and ProfilerStep");
    /* colour scale */
    mt_out_printf(h, "<rect x=\"%.1f\" y=\"6\" width=\"200\" height=\"12\" fill=\"url(#g-late)\" stroke=\"#333\" "
            "stroke-width=\"0.5\"/>",
         lx);
    mt_out_printf(h, "<text x=\"%.1f\" y=\"31\" text-anchor=\"middle\">-%s us%s (early)</text>", lx, us0(max).s, beyond);
    mt_out_printf(h, "<text x=\"%.1f\" y=\"31\" text-anchor=\"middle\">0</text>", lx + 100);
    mt_out_printf(h, "<text x=\"%.1f\" y=\"31\" text-anchor=\"middle\">+%s us%s (late)</text>", lx + 200, us0(max).s,
         beyond);
    mt_out_printf(h, "<rect x=\"%.1f\" y=\"6\" width=\"14\" height=\"12\" fill=\"#fff\" stroke=\"#000\" stroke-width=\"2.5\"/>"
            "<text x=\"%.1f\" y=\"16\">outlined: suspect of the step</text>",
         lx + 290, lx + 310);
    mt_out_printf(h, "<text x=\"%.1f\" y=\"%.1f\" class=\"at\">ProfilerStep</text>", lx, top - 22);
    mt_out_printf(h, "<text x=\"%.1f\" y=\"%.1f\" class=\"at\" text-anchor=\"end\">rank</text>", lx - 8, top - 6);
    /* the terminal's lateness figure beside each row (issue 39 item 8) */
    mt_out_printf(h, "<text x=\"%.1f\" y=\"%.1f\" class=\"at\">when last</text>", lx + cw * (double)ns + 8, top - 6);
    for (size_t s = 0; s < ns; s++)
        if (cw >= 24 || s % (size_t)ceil(24 / cw) == 0)
            mt_out_printf(h, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%lld</text>", lx + cw * ((double)s + 0.5),
                 top - 6, (long long)v->grid_steps[s]);
    for (size_t q = 0; q < nshow; q++) {
        size_t i = show[q];
        double y = top + ch * (double)q;
        if (ch >= 18 || q % 2 == 0)
            mt_out_printf(h, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%d</text>", lx - 8, y + ch / 2 + 4,
                 v->grid_ranks[i]);
        const mt_cross_rank_t *kr = r->cross ? mt_cross_rank_find(r->cross, v->grid_ranks[i]) : NULL;
        if ((ch >= 18 || q % 2 == 0) && kr && kr->last)
            mt_out_printf(h, "<text x=\"%.1f\" y=\"%.1f\">+%s ms</text>", lx + cw * (double)ns + 8, y + ch / 2 + 4,
                 ms3(kr->late_last_median_ns).s);
        for (size_t s = 0; s < ns; s++) {
            int64_t val = v->grid_ns[i * ns + s];
            double x = lx + cw * (double)s;
            if (val == MT_VIEW_NONE) {
                mt_out_printf(h, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#f6f6f6\" stroke=\"#fff\">"
                        "<title>rank %d step %lld: no collective</title></rect>",
                     x, y, cw, ch, v->grid_ranks[i], (long long)v->grid_steps[s]);
                continue;
            }
            char col[16];
            bool dark;
            late_colour(col, sizeof col, val, max, &dark);
            bool sus = step_suspect(r->cross, v->grid_steps[s], v->grid_ranks[i]);
            mt_out_printf(h, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\" stroke=\"#fff\">"
                    "<title>rank %d step %lld: mean lateness %s%s us%s</title></rect>",
                 x, y, cw, ch, col, v->grid_ranks[i], (long long)v->grid_steps[s], val > 0 ? "+" : "", us1(val).s,
                 sus ? " (suspect of the step)" : "");
            num_t t = us0(val);
            if (text)
                mt_out_printf(h, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" class=\"cell\"%s>%s%s</text>",
                     x + cw / 2, y + ch - 7, dark ? " style=\"fill:#fff\"" : "", val > 0 && strcmp(t.s, "0") ? "+" : "",
                     t.s);
        }
    }
    /* the suspects' outlines last, so no neighbour covers them */
    for (size_t q = 0; r->cross && q < nshow; q++)
        for (size_t s = 0; s < ns; s++)
            if (v->grid_ns[show[q] * ns + s] != MT_VIEW_NONE &&
                step_suspect(r->cross, v->grid_steps[s], v->grid_ranks[show[q]]))
                mt_out_printf(h, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#000\" "
                        "stroke-width=\"2.5\" pointer-events=\"none\"/>",
                     lx + cw * (double)s + 1.25, top + ch * (double)q + 1.25, cw - 2.5, ch - 2.5);
    mt_out_puts(h, "</svg></figure>\n");
    mt_out_printf(h, "<p class=\"note\">Each cell: the rank's mean lateness in the step, in microseconds: its arrival at each "
            "collective (kernel start on the aligned clock) minus the median arrival of the participants, "
            "averaged over the step's collectives. When last: the rank's median lateness over the collectives "
            "where it arrived last, the terminal's figure (a mean over a step is pulled down by its trivial "
            "collectives).");
    if (v->n_steps_total > ns)
        mt_out_printf(h, " Steps %lld-%lld of %zu are shown: the %zu consecutive steps with the most waiting.",
                      (long long)v->grid_steps[0], (long long)v->grid_steps[ns - 1], v->n_steps_total, ns);
    if (nshow < nr)
        mt_out_printf(h, " The %zu of %zu ranks with the latest cells are shown (report.json has every rank).", nshow, nr);
    free(show);
    mt_out_puts(h, "</p>\n");
}

static void section_stragglers(mt_out_t *h, const mt_report_t *r)
{
    mt_out_puts(h, "<section id=\"stragglers\"><h2>Stragglers</h2>\n");
    const mt_cross_t *x = r->cross;
    if (r->views && r->views->n_grid_steps && r->views->n_grid_ranks)
        heat_map(h, r);
    else
        mt_out_puts(h, "<p class=\"note\">No collective inside a ProfilerStep: no heat map.</p>\n");
    if (!x) {
        mt_out_puts(h, "<p class=\"note\">No cross-rank analysis in this report.</p></section>\n");
        return;
    }
    mt_out_printf(h, "<h3>Suspects</h3><p>Over %llu collectives of two or more ranks (%s ms waited in all): suspects on the "
            "aligned clock: <strong>",
         (unsigned long long)x->instances, ms3(x->wait_total_ns).s);
    rank_list(h, x->suspects, x->n_suspects);
    const char *shortest = x->cpu_members ? "shortest collective" : "shortest kernel"; /* gloo: CPU ranges */
    mt_out_printf(h, "</strong>; by the clock-free check (%s): <strong>", shortest);
    rank_list(h, x->cf_suspects, x->n_cf_suspects);
    mt_out_puts(h, "</strong>.</p>\n");
    if (x->n_evidence) {
        mt_out_puts(h, "<ul class=\"ev\">");
        for (size_t i = 0; i < x->n_evidence; i++) {
            mt_out_puts(h, "<li>");
            esc(h, x->evidence[i]);
            mt_out_puts(h, "</li>");
        }
        mt_out_puts(h, "</ul>\n");
    }
    bool any = false;
    for (size_t s = 0; s < x->n_steps; s++) {
        const mt_cross_step_t *sp = &x->steps[s];
        if (!sp->differs)
            continue;
        if (!any)
            mt_out_puts(h, "<p>Steps whose suspects differ from the job's:</p><ul>");
        any = true;
        mt_out_printf(h, "<li>step %lld: ", (long long)sp->step);
        if (sp->n_suspects) {
            mt_out_puts(h, "suspects ");
            rank_list(h, x->step_suspects + sp->first_suspect, sp->n_suspects);
        } else {
            mt_out_puts(h, "no suspect");
        }
        mt_out_printf(h, " (%s ms of wait in the step", ms3(sp->wait_ns).s);
        if (sp->n_top)
            mt_out_printf(h, "; most caused by rank %d: %s ms, last at %u of %u", sp->top[0].rank, ms3(sp->top[0].ns).s,
                 sp->top[0].last, sp->top[0].instances);
        mt_out_puts(h, ")</li>");
    }
    if (any)
        mt_out_puts(h, "</ul>\n");
    mt_out_printf(h, "<table class=\"sortable\"><thead><tr><th class=\"n\" data-sort>rank</th>"
             "<th class=\"n\" data-sort>collectives</th><th class=\"n\" data-sort>last</th>"
             "<th class=\"n\" data-sort>last by chance</th><th class=\"n\" data-sort>wait caused ms</th>"
             "<th class=\"n\" data-sort>waited ms</th><th class=\"n\" data-sort>lateness when last ms</th>"
             "<th class=\"n\" data-sort>mean lateness us</th>"
             "<th class=\"n\" data-sort>p99 lateness us</th><th class=\"n\" data-sort>%s</th>"
             "</tr></thead><tbody>\n", shortest);
    for (size_t i = 0; i < x->n_ranks; i++) {
        const mt_cross_rank_t *k = &x->ranks[i];
        double chance = (double)k->chance_q24 / (double)(1u << 24);
        mt_out_printf(h,
             "<tr><td class=\"n\" data-v=\"%d\">%d</td><td class=\"n\" data-v=\"%llu\">%llu</td>"
             "<td class=\"n\" data-v=\"%llu\">%llu</td><td class=\"n\" data-v=\"%.2f\">%.2f</td>",
             k->rank, k->rank, (unsigned long long)k->instances, (unsigned long long)k->instances,
             (unsigned long long)k->last, (unsigned long long)k->last, chance, chance);
        mt_out_printf(h, "<td class=\"n\" data-v=\"%lld\">%s</td><td class=\"n\" data-v=\"%lld\">%s</td>",
             (long long)k->wait_caused_ns, ms3(k->wait_caused_ns).s, (long long)k->waited_ns, ms3(k->waited_ns).s);
        if (k->last) /* the terminal's figure (stragglers.c: the median when last) */
            mt_out_printf(h, "<td class=\"n\" data-v=\"%lld\">%s</td>", (long long)k->late_last_median_ns,
                 ms3(k->late_last_median_ns).s);
        else
            mt_out_puts(h, "<td class=\"n\" data-v=\"\">-</td>");
        mt_out_printf(h,
             "<td class=\"n\" data-v=\"%lld\">%s</td><td class=\"n\" data-v=\"%lld\">%s</td>"
             "<td class=\"n\" data-v=\"%llu\">%llu</td></tr>\n",
             (long long)k->mean_lateness_ns, us1(k->mean_lateness_ns).s, (long long)k->p99_lateness_ns,
             us1(k->p99_lateness_ns).s, (unsigned long long)k->shortest, (unsigned long long)k->shortest);
    }
    mt_out_puts(h, "</tbody></table></section>\n");
}

/* ---- collectives --------------------------------------------------------- */

#define MAX_COLL_ROWS 500

static void section_collectives(mt_out_t *h, const mt_report_t *r)
{
    mt_out_puts(h, "<section id=\"collectives\"><h2>Collectives</h2>\n");
    const mt_cross_t *x = r->cross;
    if (!x || !x->n_colls) {
        mt_out_puts(h, "<p class=\"note\">No collective instances.</p></section>\n");
        return;
    }
    mt_out_printf(h, "<p class=\"note\">Every instance of one process group, collective, message size and dtype, by total "
            "time (the sum of the instances' spans, first arrival to common end). Transfer: the shortest "
            "participant's kernel. Bandwidths as nccl-tests defines them. %llu one-rank and %llu mismatched "
            "instances.</p>\n",
         (unsigned long long)x->singles, (unsigned long long)x->mismatched);
    int64_t top = x->colls[0].total_ns > 0 ? x->colls[0].total_ns : 1;
    mt_out_puts(h, "<table class=\"sortable\"><thead><tr><th data-sort>process group</th><th data-sort>collective</th>"
             "<th class=\"n\" data-sort>bytes</th><th data-sort>dtype</th><th class=\"n\" data-sort>count</th>"
             "<th class=\"n\" data-sort>ranks</th><th class=\"n\" data-sort>total ms</th>"
             "<th class=\"n\" data-sort>mean us</th><th class=\"n\" data-sort>transfer ms</th>"
             "<th class=\"n\" data-sort>algbw GB/s</th><th class=\"n\" data-sort>busbw GB/s</th>"
             "</tr></thead><tbody>\n");
    size_t n = x->n_colls < MAX_COLL_ROWS ? x->n_colls : MAX_COLL_ROWS;
    for (size_t i = 0; i < n; i++) {
        const mt_cross_coll_t *c = &x->colls[i];
        mt_out_puts(h, "<tr><td class=\"name\">");
        esc_field(h, c->pg, sizeof c->pg);
        mt_out_puts(h, "</td><td>");
        esc(h, mt_coll_kind_str((mt_coll_kind_t)c->kind));
        mt_out_printf(h, "</td><td class=\"n\" data-v=\"%lld\">%s</td><td>", (long long)c->bytes,
             c->bytes > 0 ? bytes_h((uint64_t)c->bytes).s : "?");
        esc_field(h, c->dtype, sizeof c->dtype);
        mt_out_printf(h,
             "</td><td class=\"n\" data-v=\"%llu\">%llu</td><td class=\"n\" data-v=\"%d\">%d</td>"
             "<td class=\"n\" data-v=\"%lld\"><span class=\"bar\" style=\"width:%.0fpx\"></span>%s</td>"
             "<td class=\"n\" data-v=\"%lld\">%s</td><td class=\"n\" data-v=\"%lld\">%s</td>",
             (unsigned long long)c->count, (unsigned long long)c->count, c->ranks, c->ranks, (long long)c->total_ns,
             60.0 * (double)c->total_ns / (double)top, ms3(c->total_ns).s, (long long)c->mean_ns, us1(c->mean_ns).s,
             (long long)c->transfer_ns, ms3(c->transfer_ns).s);
        if (c->algbw_gbps >= 0)
            mt_out_printf(h, "<td class=\"n\" data-v=\"%.3f\">%.2f</td>", c->algbw_gbps, c->algbw_gbps);
        else
            mt_out_puts(h, "<td class=\"n\" data-v=\"-1\">?</td>");
        if (c->busbw_gbps >= 0)
            mt_out_printf(h, "<td class=\"n\" data-v=\"%.3f\">%.2f</td></tr>\n", c->busbw_gbps, c->busbw_gbps);
        else
            mt_out_puts(h, "<td class=\"n\" data-v=\"-1\">?</td></tr>\n");
    }
    mt_out_puts(h, "</tbody></table>\n");
    if (x->n_colls > n)
        mt_out_printf(h, "<p class=\"note\">The first %zu of %zu lines are shown; report.json has them all.</p>\n", n,
             x->n_colls);
    mt_out_puts(h, "</section>\n");
}

/* ---- GPU projection ------------------------------------------------------ */

typedef struct pname {
    const char *s;
    uint32_t len;
    uint64_t count;
    int64_t cpu_ns, gpu_ns;
} pname_t;

static int pname_by_name(const void *x, const void *y)
{
    const pname_t *a = x, *b = y;
    size_t n = a->len < b->len ? a->len : b->len;
    int c = memcmp(a->s, b->s, n);
    return c ? c : (a->len > b->len) - (a->len < b->len);
}

static int pname_by_gpu(const void *x, const void *y)
{
    const pname_t *a = x, *b = y;
    if (a->gpu_ns != b->gpu_ns)
        return a->gpu_ns < b->gpu_ns ? 1 : -1;
    return pname_by_name(x, y);
}

#define MAX_PROJ_BARS 20

static void section_projection(mt_out_t *h, const mt_report_t *r)
{
    mt_out_puts(h, "<section id=\"projection\"><h2>GPU projection by annotation</h2>\n");
    size_t total = 0;
    for (size_t i = 0; r->analyses && i < r->n_analyses; i++)
        total += r->analyses[i] ? r->analyses[i]->n_proj : 0;
    if (!total) {
        mt_out_puts(h, "<p class=\"note\">No annotation ranges with GPU work.</p></section>\n");
        return;
    }
    pname_t *p = malloc(total * sizeof *p);
    if (!p) {
        h->st = h->st == MT_OK ? MT_ERR_NOMEM : h->st;
        return;
    }
    size_t n = 0;
    int64_t busy = 0;
    for (size_t i = 0; i < r->n_analyses; i++) {
        const mt_rank_analysis_t *a = r->analyses[i];
        if (!a)
            continue;
        busy += a->busy_ns;
        for (size_t k = 0; k < a->n_proj; k++)
            p[n++] = (pname_t){a->strings + a->proj[k].name.off, a->proj[k].name.len, a->proj[k].count,
                               a->proj[k].cpu_ns, a->proj[k].gpu_ns};
    }
    qsort(p, n, sizeof *p, pname_by_name);
    size_t u = 0;
    for (size_t i = 0; i < n; i++) {
        if (u && !pname_by_name(&p[u - 1], &p[i])) {
            p[u - 1].count += p[i].count;
            p[u - 1].cpu_ns += p[i].cpu_ns;
            p[u - 1].gpu_ns += p[i].gpu_ns;
        } else {
            p[u++] = p[i];
        }
    }
    qsort(p, u, sizeof *p, pname_by_gpu);
    size_t nb = u < MAX_PROJ_BARS ? u : MAX_PROJ_BARS;
    int64_t max = 1;
    for (size_t i = 0; i < nb; i++) {
        max = p[i].cpu_ns > max ? p[i].cpu_ns : max;
        max = p[i].gpu_ns > max ? p[i].gpu_ns : max;
    }
    mt_out_puts(h, "<p class=\"note\">Per annotation name, summed over ranks: CPU time inside the ranges, and GPU time "
             "of the work launched while they were open, on any thread of their process (the backward pass is "
             "launched from the autograd thread while the main thread sits in <code>## backward ##</code>); the "
             "union of its intervals, however long after the range it ran. GPU % is of all ranks' busy GPU "
             "time.</p>\n");
    double lx = 340, bw = 540, top = 40, rh = 34, W = 1000, H = top + rh * (double)nb + 44;
    double xmax = (double)max / 1e6;
    double st = nice_step(xmax, 5), hi = ceil(xmax / st - 1e-9) * st;
    mt_out_puts(h, "<figure>");
    svg_open(h, W, H, "CPU time and GPU time per annotation");
    double lxx = legend(h, lx, 16, C_ORANGE, "CPU time in the ranges");
    (void)legend(h, lxx, 16, "url(#p-gpu)", "GPU time of their kernels");
    x_axis(h, lx, bw, top + rh * (double)nb + 2, top - 2, 0, hi, "ms (summed over ranks)");
    for (size_t i = 0; i < nb; i++) {
        double y = top + rh * (double)i;
        mt_out_puts(h, "<g><title>");
        escn(h, p[i].s, p[i].len);
        mt_out_printf(h, ": %llu ranges, CPU %s ms, GPU %s ms</title>", (unsigned long long)p[i].count, ms3(p[i].cpu_ns).s,
             ms3(p[i].gpu_ns).s);
        mt_out_printf(h, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">", lx - 8, y + 19);
        esc_cut(h, p[i].s, p[i].len, 46);
        mt_out_puts(h, "</text>");
        double wc = (double)p[i].cpu_ns / 1e6 / hi * bw, wg = (double)p[i].gpu_ns / 1e6 / hi * bw;
        mt_out_printf(h, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.2f\" height=\"12\" fill=\"" C_ORANGE "\"/>", lx, y + 3, wc);
        mt_out_printf(h, "<text x=\"%.1f\" y=\"%.1f\">CPU %s ms</text>", lx + wc + 4, y + 13, ms3(p[i].cpu_ns).s);
        mt_out_printf(h, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.2f\" height=\"12\" fill=\"url(#p-gpu)\"/>", lx, y + 16, wg);
        mt_out_printf(h, "<text x=\"%.1f\" y=\"%.1f\">GPU %s ms</text></g>", lx + wg + 4, y + 26, ms3(p[i].gpu_ns).s);
    }
    mt_out_puts(h, "</svg></figure>\n");
    mt_out_puts(h, "<table class=\"sortable\"><thead><tr><th data-sort>annotation</th><th class=\"n\" data-sort>ranges</th>"
             "<th class=\"n\" data-sort>CPU ms</th><th class=\"n\" data-sort>GPU ms</th>"
             "<th class=\"n\" data-sort>GPU %</th></tr></thead><tbody>\n");
    size_t nt = u < 200 ? u : 200;
    for (size_t i = 0; i < nt; i++) {
        mt_out_puts(h, "<tr><td class=\"name\">");
        escn(h, p[i].s, p[i].len);
        num_t g = pct1((double)p[i].gpu_ns, (double)busy);
        mt_out_printf(h,
             "</td><td class=\"n\" data-v=\"%llu\">%llu</td><td class=\"n\" data-v=\"%lld\">%s</td>"
             "<td class=\"n\" data-v=\"%lld\">%s</td><td class=\"n\" data-v=\"%s\">%s</td></tr>\n",
             (unsigned long long)p[i].count, (unsigned long long)p[i].count, (long long)p[i].cpu_ns,
             ms3(p[i].cpu_ns).s, (long long)p[i].gpu_ns, ms3(p[i].gpu_ns).s, g.s, g.s);
    }
    mt_out_puts(h, "</tbody></table>\n");
    if (u > nt)
        mt_out_printf(h, "<p class=\"note\">The first %zu of %zu annotation names are listed.</p>\n", nt, u);
    mt_out_puts(h, "</section>\n");
    free(p);
}

/* ---- top kernels ----------------------------------------------------------- */

typedef struct kname {
    uint32_t cls;
    const char *s;
    uint32_t len;
    uint32_t ranks;
    uint64_t count;
    int64_t total_ns, max_ns;
} kname_t;

static int kname_by_name(const void *x, const void *y)
{
    const kname_t *a = x, *b = y;
    if (a->cls != b->cls)
        return a->cls < b->cls ? -1 : 1;
    size_t n = a->len < b->len ? a->len : b->len;
    int c = memcmp(a->s, b->s, n);
    return c ? c : (a->len > b->len) - (a->len < b->len);
}

static int kname_by_total(const void *x, const void *y)
{
    const kname_t *a = x, *b = y;
    if (a->cls != b->cls)
        return a->cls < b->cls ? -1 : 1;
    if (a->total_ns != b->total_ns)
        return a->total_ns < b->total_ns ? 1 : -1;
    return kname_by_name(x, y);
}

#define MAX_KERNELS_PER_CLASS 10

static void section_kernels(mt_out_t *h, const mt_report_t *r)
{
    mt_out_puts(h, "<section id=\"kernels\"><h2>Top kernels</h2>\n");
    size_t total = 0;
    for (size_t i = 0; r->analyses && i < r->n_analyses; i++)
        total += r->analyses[i] ? r->analyses[i]->n_kernels : 0;
    if (!total) {
        mt_out_puts(h, "<p class=\"note\">No kernel lists in this report.</p></section>\n");
        return;
    }
    kname_t *k = malloc(total * sizeof *k);
    if (!k) {
        h->st = h->st == MT_OK ? MT_ERR_NOMEM : h->st;
        return;
    }
    size_t n = 0;
    for (size_t i = 0; i < r->n_analyses; i++) {
        const mt_rank_analysis_t *a = r->analyses[i];
        for (size_t j = 0; a && j < a->n_kernels; j++) {
            const mt_an_kernel_t *q = &a->kernels[j];
            k[n++] = (kname_t){q->cls, a->strings + q->name.off, q->name.len, 1, q->count, q->total_ns, q->max_ns};
        }
    }
    qsort(k, n, sizeof *k, kname_by_name);
    size_t u = 0;
    for (size_t i = 0; i < n; i++) {
        if (u && !kname_by_name(&k[u - 1], &k[i])) {
            k[u - 1].ranks++;
            k[u - 1].count += k[i].count;
            k[u - 1].total_ns += k[i].total_ns;
            k[u - 1].max_ns = k[i].max_ns > k[u - 1].max_ns ? k[i].max_ns : k[u - 1].max_ns;
        } else {
            k[u++] = k[i];
        }
    }
    qsort(k, u, sizeof *k, kname_by_total);
    mt_out_puts(h, "<p class=\"note\">The kernels each rank listed among its top ones, summed over the ranks that "
             "listed them, by class and total time (the first 10 per class).</p>\n");
    mt_out_puts(h, "<table class=\"sortable\"><thead><tr><th data-sort>class</th><th data-sort>kernel</th>"
             "<th class=\"n\" data-sort>ranks</th><th class=\"n\" data-sort>count</th>"
             "<th class=\"n\" data-sort>total ms</th><th class=\"n\" data-sort>mean us</th>"
             "<th class=\"n\" data-sort>max us</th></tr></thead><tbody>\n");
    size_t shown = 0;
    for (size_t i = 0; i < u; i++) {
        shown = i && k[i].cls == k[i - 1].cls ? shown + 1 : 0;
        if (shown >= MAX_KERNELS_PER_CLASS)
            continue;
        int64_t mean = k[i].count ? k[i].total_ns / (int64_t)k[i].count : 0;
        mt_out_printf(h, "<tr><td>%s</td><td class=\"name\">", mt_an_class_str((mt_an_class_t)k[i].cls));
        escn(h, k[i].s, k[i].len);
        mt_out_printf(h,
             "</td><td class=\"n\" data-v=\"%u\">%u</td><td class=\"n\" data-v=\"%llu\">%llu</td>"
             "<td class=\"n\" data-v=\"%lld\">%s</td><td class=\"n\" data-v=\"%lld\">%s</td>"
             "<td class=\"n\" data-v=\"%lld\">%s</td></tr>\n",
             k[i].ranks, k[i].ranks, (unsigned long long)k[i].count, (unsigned long long)k[i].count,
             (long long)k[i].total_ns, ms3(k[i].total_ns).s, (long long)mean, us1(mean).s, (long long)k[i].max_ns,
             us1(k[i].max_ns).s);
    }
    mt_out_puts(h, "</tbody></table></section>\n");
    free(k);
}

/* ---- clock alignment ----------------------------------------------------- */

/* Median (upper middle) of v[0..n), n >= 1; v is not changed. */
static int64_t median(const int64_t *v, size_t n, int64_t *tmp)
{
    memcpy(tmp, v, n * sizeof *v);
    return mt_stats_kth_i64(tmp, n, n / 2);
}

#define MAX_SAMPLE_RANKS 64

/* One panel of dots: end - median end per rank. */
static void dots(mt_out_t *h, const mt_report_sample_t *sp, const int64_t *end, size_t nr, double x0, double w,
                 double top, double rh, const char *title, bool square, int64_t *tmp)
{
    int64_t med = median(end, sp->n, tmp);
    int64_t amax = 0;
    for (size_t i = 0; i < nr; i++) {
        int64_t d = end[i] - med;
        d = d < 0 ? -d : d;
        amax = d > amax ? d : amax;
    }
    double unit = amax >= 2000000000 ? 1e9 : amax >= 2000000 ? 1e6 : 1e3;
    const char *un = unit == 1e9 ? "s" : unit == 1e6 ? "ms" : "us";
    double span = (double)amax / unit;
    if (span <= 0)
        span = 1;
    double st = nice_step(2 * span, 6), hi = ceil(span / st - 1e-9) * st, lo = -hi;
    double ay = top + rh * (double)nr + 2;
    char at[64];
    snprintf(at, sizeof at, "end - median end (%s)", un);
    x_axis(h, x0, w, ay, top, lo, hi, at);
    mt_out_printf(h, "<text x=\"%.1f\" y=\"%.1f\" class=\"at\" text-anchor=\"middle\">%s</text>", x0 + w / 2, top - 8, title);
    double zx = x0 + (0 - lo) / (hi - lo) * w;
    mt_out_printf(h, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\" stroke-dasharray=\"3,3\"/>", zx,
         top, zx, ay);
    for (size_t i = 0; i < nr; i++) {
        double y = top + rh * ((double)i + 0.5);
        double x = x0 + ((double)(end[i] - med) / unit - lo) / (hi - lo) * w;
        mt_out_printf(h, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>", x0, y, x0 + w, y);
        if (square)
            mt_out_printf(h, "<rect x=\"%.1f\" y=\"%.1f\" width=\"8\" height=\"8\" fill=\"" C_BLUE "\">", x - 4, y - 4);
        else
            mt_out_printf(h, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4.5\" fill=\"" C_VERMILLION "\">", x, y);
        mt_out_printf(h, "<title>rank %d: %s%s us from the median end</title>%s", sp->ranks[i], end[i] - med > 0 ? "+" : "",
             us1(end[i] - med).s, square ? "</rect>" : "</circle>");
    }
}

static void samples(mt_out_t *h, const mt_report_t *r)
{
    const mt_report_views_t *v = r->views;
    if (!v || !v->n_samples) {
        mt_out_puts(h, "<p class=\"note\">No full collective instance to show.</p>\n");
        return;
    }
    mt_out_puts(h, "<h3>End times of a few collectives, before and after correction</h3>\n"
             "<p class=\"note\">The kernels of one collective end together, so after a good correction every "
             "rank's end sits on the median. Left: each rank's own clock (circles); right: the aligned clock "
             "(squares). Note the different scales.</p>\n");
    size_t maxn = 1;
    for (size_t s = 0; s < v->n_samples; s++)
        maxn = v->samples[s].n > maxn ? v->samples[s].n : maxn;
    int64_t *tmp = malloc(maxn * sizeof *tmp);
    if (!tmp) {
        h->st = h->st == MT_OK ? MT_ERR_NOMEM : h->st;
        return;
    }
    for (size_t s = 0; s < v->n_samples; s++) {
        const mt_report_sample_t *sp = &v->samples[s];
        size_t nr = sp->n < MAX_SAMPLE_RANKS ? sp->n : MAX_SAMPLE_RANKS;
        double rh = nr > 24 ? 9 : 16, top = 48, lx = 70, pw = 400, H = top + rh * (double)nr + 44;
        mt_out_puts(h, "<figure>");
        svg_open(h, 1000, H, "end times of one collective across ranks before and after clock correction");
        mt_out_printf(h, "<text x=\"4\" y=\"16\" class=\"at\">");
        esc(h, mt_coll_kind_str((mt_coll_kind_t)sp->kind));
        mt_out_puts(h, " on process group ");
        esc_field(h, sp->pg, sizeof sp->pg);
        if (sp->step >= 0)
            mt_out_printf(h, ", ProfilerStep %lld", (long long)sp->step);
        mt_out_printf(h, ", %zu ranks%s</text>", sp->n, nr < sp->n ? " (the first 64 shown)" : "");
        for (size_t i = 0; i < nr; i++)
            if (rh >= 12 || i % 2 == 0)
                mt_out_printf(h, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">rank %d</text>", lx - 6,
                     top + rh * ((double)i + 0.5) + 4, sp->ranks[i]);
        dots(h, sp, sp->raw_end_ns, nr, lx, pw, top, rh, "before: own clocks", false, tmp);
        dots(h, sp, sp->end_ns, nr, lx + pw + 90, pw, top, rh, "after: aligned clock", true, tmp);
        mt_out_puts(h, "</svg></figure>\n");
    }
    free(tmp);
}

static void section_clocks(mt_out_t *h, const mt_report_t *r)
{
    mt_out_puts(h, "<section id=\"clocks\"><h2>Clock alignment</h2>\n");
    if (!r->n_clocks) {
        mt_out_puts(h, "<p class=\"note\">No clocks.</p></section>\n");
        return;
    }
    mt_out_printf(h, "<p>%s onto rank %d: corrected(t) = t + offset + drift &times; (t &minus; anchor). Residual: "
            "|corrected end &minus; median end of the other participants| over the instances kept.</p>\n",
         r->aligned ? "Aligned" : "Not aligned (--no-align): residuals of the raw clocks", r->reference_rank);
    /* offsets and residuals per rank */
    size_t n = r->n_clocks;
    double rh = n > 32 ? 12 : 20, bh = rh - 6, top = 52, lx = 70, pw = 380, rx = 560;
    double H = top + rh * (double)n + 44;
    double omax = 0, rmax = 0;
    for (size_t i = 0; i < n; i++) {
        double o = fabs(r->clocks[i].offset_ns) / 1e6;
        omax = o > omax ? o : omax;
        double p = r->clocks[i].residual_p99_ns / 1e3;
        rmax = isfinite(p) && p > rmax ? p : rmax;
    }
    if (!(omax > 0))
        omax = 1;
    if (!(rmax > 0))
        rmax = 1;
    double ost = nice_step(2 * omax, 6), ohi = ceil(omax / ost - 1e-9) * ost;
    double rst = nice_step(rmax, 5), rhi = ceil(rmax / rst - 1e-9) * rst;
    mt_out_puts(h, "<figure>");
    svg_open(h, 1000, H, "clock offset and residuals per rank");
    mt_out_printf(h, "<text x=\"%.1f\" y=\"16\" class=\"at\">offset</text>", lx);
    double lgx = legend(h, rx, 16, C_GREEN, "residual p50");
    (void)legend(h, lgx, 16, "url(#p-p99)", "residual p99");
    double zx = lx + pw / 2, ay = top + rh * (double)n + 2;
    x_axis(h, lx, pw, ay, top - 4, -ohi, ohi, "offset (ms)");
    x_axis(h, rx, pw, ay, top - 4, 0, rhi, "residual (us)");
    for (size_t i = 0; i < n; i++) {
        const mt_clock_t *c = &r->clocks[i];
        double y = top + rh * (double)i;
        mt_out_printf(h, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">rank %d</text>", lx - 6, y + bh - 1, c->rank);
        double o = c->offset_ns / 1e6, w = o / ohi * (pw / 2);
        mt_out_printf(h, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"" C_SKY "\" stroke=\"#333\" "
                "stroke-width=\"0.5\"><title>rank %d offset %.6f ms</title></rect>",
             w < 0 ? zx + w : zx, y, fabs(w), bh, c->rank, o);
        double p50 = c->residual_p50_ns / 1e3, p99 = c->residual_p99_ns / 1e3;
        p50 = isfinite(p50) ? p50 : 0;
        p99 = isfinite(p99) ? p99 : 0;
        mt_out_printf(h, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"url(#p-p99)\">"
                "<title>rank %d residual p99 %.1f us</title></rect>",
             rx, y, p99 / rhi * pw, bh, c->rank, p99);
        mt_out_printf(h, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"" C_GREEN "\">"
                "<title>rank %d residual p50 %.1f us</title></rect>",
             rx, y + bh * 0.25, p50 / rhi * pw, bh * 0.5, c->rank, p50);
        if (c->reference)
            mt_out_printf(h, "<text x=\"%.1f\" y=\"%.1f\">reference</text>", zx + 4, y + bh - 1);
        else if (!c->connected)
            mt_out_printf(h, "<text x=\"%.1f\" y=\"%.1f\">not connected</text>", zx + 4, y + bh - 1);
    }
    mt_out_printf(h, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>", zx, top - 4, zx, ay);
    mt_out_puts(h, "</svg></figure>\n");

    mt_out_puts(h, "<table class=\"sortable\"><thead><tr><th class=\"n\" data-sort>rank</th>"
             "<th class=\"n\" data-sort>offset ms</th><th class=\"n\" data-sort>drift ppm</th>"
             "<th class=\"n\" data-sort>matched</th><th class=\"n\" data-sort>rejected</th>"
             "<th class=\"n\" data-sort>residual p50 us</th><th class=\"n\" data-sort>residual p99 us</th>"
             "<th class=\"n\" data-sort>violations</th><th data-sort>note</th></tr></thead><tbody>\n");
    for (size_t i = 0; i < n; i++) {
        const mt_clock_t *c = &r->clocks[i];
        char dtext[24];
        double off = isfinite(c->offset_ns) ? c->offset_ns : 0, dr = isfinite(c->drift_ppm) ? c->drift_ppm : 0;
        double p50 = isfinite(c->residual_p50_ns) ? c->residual_p50_ns : 0,
               p99 = isfinite(c->residual_p99_ns) ? c->residual_p99_ns : 0;
        int64_t oi = (int64_t)llround(off);
        mt_out_printf(h,
             "<tr><td class=\"n\" data-v=\"%d\">%d</td><td class=\"n\" data-v=\"%lld\">%s</td>"
             "<td class=\"n\" data-v=\"%.6f\">%s</td><td class=\"n\" data-v=\"%llu\">%llu</td>"
             "<td class=\"n\" data-v=\"%llu\">%llu</td>",
             c->rank, c->rank, (long long)oi, ms3(oi).s, dr, mt_clock_drift_text(c, dtext, sizeof dtext),
             (unsigned long long)c->matched,
             (unsigned long long)c->matched, (unsigned long long)c->rejected, (unsigned long long)c->rejected);
        mt_out_printf(h,
             "<td class=\"n\" data-v=\"%.0f\">%s</td><td class=\"n\" data-v=\"%.0f\">%s</td>"
             "<td class=\"n\" data-v=\"%llu\">%llu</td><td>%s</td></tr>\n",
             p50, us1((int64_t)llround(p50)).s, p99, us1((int64_t)llround(p99)).s, (unsigned long long)c->violations,
             (unsigned long long)c->violations,
             c->reference ? "reference" : c->connected ? "" : "not connected: left uncorrected");
    }
    mt_out_puts(h, "</tbody></table>\n");
    samples(h, r);
    mt_out_puts(h, "</section>\n");
}

/* ---- the document --------------------------------------------------------- */

/* ---- pipeline -------------------------------------------------------- */

/* One series of the chunk chart: a polyline and a marker shape per point. */
static void series(mt_out_t *h, const int64_t *v, size_t stride, size_t off, size_t n, double x0, double w, double y0,
                   double ht, double hi_ms, const char *colour, int shape, const char *what, const int64_t *key)
{
    mt_out_puts(h, "<polyline fill=\"none\" stroke-width=\"1.5\" stroke=\"");
    mt_out_puts(h, colour);
    mt_out_puts(h, "\" points=\"");
    for (size_t c = 0; c < n; c++) {
        int64_t x = v[c * stride + off];
        if (x < 0)
            continue;
        mt_out_printf(h, "%.1f,%.1f ", x0 + (n > 1 ? (double)c / (double)(n - 1) : 0.5) * w,
             y0 - (double)x / 1e6 / hi_ms * ht);
    }
    mt_out_puts(h, "\"/>");
    for (size_t c = 0; c < n; c++) {
        int64_t x = v[c * stride + off];
        if (x < 0)
            continue;
        double px = x0 + (n > 1 ? (double)c / (double)(n - 1) : 0.5) * w, py = y0 - (double)x / 1e6 / hi_ms * ht;
        if (shape == 0)
            mt_out_printf(h, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\">", px, py, colour);
        else if (shape == 1)
            mt_out_printf(h, "<rect x=\"%.1f\" y=\"%.1f\" width=\"7\" height=\"7\" fill=\"%s\">", px - 3.5, py - 3.5,
                 colour);
        else
            mt_out_printf(h, "<path d=\"M%.1f %.1fl4 7h-8z\" fill=\"%s\">", px, py - 4.5, colour);
        mt_out_printf(h, "<title>chunk %lld: ", (long long)key[c]);
        esc(h, what);
        mt_out_printf(h, " %s ms</title>%s", ms3(x).s, shape == 0 ? "</circle>" : shape == 1 ? "</rect>" : "</path>");
    }
}

static void section_pipeline(mt_out_t *h, const mt_report_t *r)
{
    const mt_pipeline_t *p = r->pipeline;
    if (!p && !r->pipeline_note)
        return;
    mt_out_puts(h, "<section id=\"pipeline\"><h2>Pipeline</h2>\n");
    if (r->pipeline_note) {
        mt_out_puts(h, "<p class=\"note\">");
        esc(h, r->pipeline_note);
        mt_out_puts(h, "</p>\n");
    }
    if (!p) {
        mt_out_puts(h, "</section>\n");
        return;
    }
    const mt_pp_stages_t *g = &p->stages;
    size_t S = g->n, C = p->n_chunks;
    static const char *const src[] = {"--pp-stages", "--pp blocks", "point-to-point traffic", "--stage annotations"};
    mt_out_printf(h, "<p>%zu stages from %s; %zu chunks matched by %s, %zu measured after %d warm-up.</p>\n", S,
         src[g->source <= MT_PP_FROM_ANNOTATIONS ? g->source : 0], C, p->by_key ? "#number" : "order", p->sum.used,
         p->warmup);
    char v[256];
    mt_pipeline_verdict(p, v, sizeof v);
    mt_out_puts(h, "<p class=\"verdict\"><strong>");
    esc(h, v);
    mt_out_puts(h, "</strong></p>\n");
    if (p->sum.used) {
        mt_out_puts(h, "<table><thead><tr><th></th><th class=\"n\">OverlapScore</th><th class=\"n\">period p50 ms</th>"
                 "<th class=\"n\">p90 ms</th><th class=\"n\">p99 ms</th><th class=\"n\">mean ms</th>"
                 "<th class=\"n\">latency p50 ms</th><th class=\"n\">latency p99 ms</th></tr></thead><tbody>\n");
        const mt_pp_summary_t *sm[2] = {&p->sum, &p->raw};
        const char *lab[2] = {"aligned clocks", "ranks' own clocks"};
        for (int i = 0; i < 2; i++)
            mt_out_printf(h,
                 "<tr><td>%s</td><td class=\"n\">%.3f</td><td class=\"n\">%s</td><td class=\"n\">%s</td>"
                 "<td class=\"n\">%s</td><td class=\"n\">%s</td><td class=\"n\">%s</td><td class=\"n\">%s</td>"
                 "</tr>\n",
                 lab[i], sm[i]->overlap_score, ms3(sm[i]->period_p50_ns).s, ms3(sm[i]->period_p90_ns).s,
                 ms3(sm[i]->period_p99_ns).s, ms3(sm[i]->period_mean_ns).s, ms3(sm[i]->latency_p50_ns).s,
                 ms3(sm[i]->latency_p99_ns).s);
        mt_out_puts(h, "</tbody></table>\n");
    }
    /* Stages. */
    mt_out_puts(h, "<table><thead><tr><th>stage</th><th>ranks</th><th class=\"n\">leader</th>"
             "<th class=\"n\">busy p50 ms</th><th class=\"n\">busy mean ms</th>"
             "<th class=\"n\">slowest rank mean ms</th><th class=\"n\">bubble %</th><th></th></tr></thead><tbody>\n");
    for (size_t s = 0; s < S; s++) {
        mt_out_puts(h, "<tr><td>");
        esc_field(h, g->name[s], sizeof g->name[s]);
        mt_out_puts(h, "</td><td>");
        size_t nr = g->first[s + 1] - g->first[s];
        rank_list(h, g->ranks + g->first[s], nr);
        mt_out_printf(h, "</td><td class=\"n\">%d</td>", (int)g->ranks[g->first[s]]);
        if (p->sum.used) {
            const mt_pp_stage_sum_t *q = &p->stage_sum[s];
            mt_out_printf(h, "<td class=\"n\">%s</td><td class=\"n\">%s</td><td class=\"n\">%s</td><td class=\"n\">%.1f</td>",
                 ms3(q->busy_p50_ns).s, ms3(q->busy_mean_ns).s, ms3(q->max_mean_ns).s, q->bubble_pct);
        } else {
            mt_out_puts(h, "<td></td><td></td><td></td><td></td>");
        }
        mt_out_printf(h, "<td>%s</td></tr>\n", (int)s == p->critical_stage ? "critical" : "");
    }
    mt_out_puts(h, "</tbody></table>\n");
    if (!C) {
        mt_out_puts(h, "</section>\n");
        return;
    }
    /* Per-chunk chart: period and each stage's busy time. */
    size_t n = C > 2000 ? 2000 : C;
    int64_t hi = 0;
    for (size_t c = 0; c < n; c++) {
        if (p->period_ns[c] > hi)
            hi = p->period_ns[c];
        for (size_t s = 0; s < S; s++)
            if (p->stage_ns[c * S + s] > hi)
                hi = p->stage_ns[c * S + s];
    }
    double hi_ms = (double)hi / 1e6;
    double st = nice_step(hi_ms > 0 ? hi_ms : 1, 5);
    hi_ms = ceil((hi_ms > 0 ? hi_ms : 1) / st - 1e-9) * st;
    double x0 = 70, w = 860, top = 50, ht = 240, y0 = top + ht, W = 1000, H = y0 + 50;
    mt_out_puts(h, "<figure>");
    svg_open(h, W, H, "period and stage busy time per chunk");
    const char *col[] = {C_BLUE, C_GREEN, C_PURPLE, C_SKY, C_ORANGE};
    double lx = x0;
    lx = legend(h, lx, 16, C_VERMILLION, "period");
    for (size_t s = 0; s < S && s < 8; s++) {
        char lab[48];
        snprintf(lab, sizeof lab, "%.31s busy", g->name[s]);
        /* the legend text is escaped: names come from the command line */
        mt_out_printf(h, "<rect x=\"%.1f\" y=\"5\" width=\"14\" height=\"14\" fill=\"%s\" stroke=\"#333\" "
                "stroke-width=\"0.5\"/><text x=\"%.1f\" y=\"16\">",
             lx, col[s % 5], lx + 18);
        esc(h, lab);
        mt_out_puts(h, "</text>");
        lx += 32 + 7.2 * (double)strlen(lab);
    }
    /* y axis */
    mt_out_printf(h, "<g class=\"axis\"><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>", x0, top,
         x0, y0);
    int k = 0;
    for (double t = 0; t <= hi_ms + st * 1e-9 && k < 40; t += st, k++) {
        double y = y0 - t / hi_ms * ht;
        mt_out_printf(h,
             "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
             "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>",
             x0, y, x0 + w, y, x0 - 6, y + 4, tick(t, st).s);
    }
    mt_out_printf(h, "<text x=\"14\" y=\"%.1f\" class=\"at\" transform=\"rotate(-90 14 %.1f)\" "
            "text-anchor=\"middle\">ms</text></g>",
         top + ht / 2, top + ht / 2);
    /* warm-up shading */
    if (p->warmup > 0 && n > 1) {
        double wx = x0 + ((double)((size_t)p->warmup < n ? (size_t)p->warmup : n) - 0.5) / (double)(n - 1) * w;
        mt_out_printf(h, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#f2f2f2\">"
                "<title>warm-up: left out of the summary</title></rect>",
             x0, top, wx - x0 > 0 ? wx - x0 : 0, ht);
    }
    series(h, p->period_ns, 1, 0, n, x0, w, y0, ht, hi_ms, C_VERMILLION, 0, "period", p->key);
    for (size_t s = 0; s < S && s < 8; s++) {
        char lab[48];
        snprintf(lab, sizeof lab, "%.31s busy", g->name[s]);
        series(h, p->stage_ns, S, s, n, x0, w, y0, ht, hi_ms, col[s % 5], 1 + (int)(s % 2), lab, p->key);
    }
    mt_out_printf(h, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>", x0, y0, x0 + w, y0);
    mt_out_printf(h, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">chunk %lld</text>", x0, y0 + 16,
         (long long)p->key[0]);
    mt_out_printf(h, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">chunk %lld</text>", x0 + w, y0 + 16,
         (long long)p->key[n - 1]);
    mt_out_printf(h, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" class=\"at\">chunks in pipeline order%s</text>",
         x0 + w / 2, y0 + 34, n < C ? " (first 2000)" : "");
    mt_out_puts(h, "</svg></figure>\n");
    /* Per-chunk table. */
    mt_out_puts(h, "<table class=\"sortable\"><thead><tr><th class=\"n\" data-sort>chunk</th>"
             "<th class=\"n\" data-sort>period ms</th>");
    for (size_t s = 0; s < S; s++) {
        mt_out_puts(h, "<th class=\"n\" data-sort>");
        esc_field(h, g->name[s], sizeof g->name[s]);
        mt_out_puts(h, " ms</th>");
    }
    mt_out_puts(h, "<th class=\"n\" data-sort>hidden ms</th><th class=\"n\" data-sort>OverlapScore</th>"
             "<th class=\"n\" data-sort>latency ms</th></tr></thead><tbody>\n");
    size_t rows = C > 500 ? 500 : C;
    for (size_t c = 0; c < rows; c++) {
        mt_out_printf(h, "<tr><td class=\"n\" data-v=\"%lld\">%lld%s</td>", (long long)p->key[c], (long long)p->key[c],
             c < (size_t)(p->warmup > 0 ? p->warmup : 0) ? " (warm-up)" : "");
        if (p->period_ns[c] < 0)
            mt_out_puts(h, "<td class=\"n\" data-v=\"-1\"></td>");
        else
            mt_out_printf(h, "<td class=\"n\" data-v=\"%lld\">%s</td>", (long long)p->period_ns[c], ms3(p->period_ns[c]).s);
        for (size_t s = 0; s < S; s++)
            mt_out_printf(h, "<td class=\"n\" data-v=\"%lld\">%s</td>", (long long)p->stage_ns[c * S + s],
                 ms3(p->stage_ns[c * S + s]).s);
        if (p->period_ns[c] < 0)
            mt_out_puts(h, "<td class=\"n\" data-v=\"0\"></td><td class=\"n\" data-v=\"-1\"></td>");
        else
            mt_out_printf(h, "<td class=\"n\" data-v=\"%lld\">%s</td><td class=\"n\" data-v=\"%.4f\">%.3f</td>",
                 (long long)p->hidden_ns[c], ms3(p->hidden_ns[c]).s, p->score[c], p->score[c]);
        mt_out_printf(h, "<td class=\"n\" data-v=\"%lld\">%s</td></tr>\n", (long long)p->latency_ns[c],
             ms3(p->latency_ns[c]).s);
    }
    mt_out_puts(h, "</tbody></table>\n");
    if (rows < C)
        mt_out_printf(h, "<p class=\"note\">The first 500 of %zu chunks; report.json has them all.</p>\n", C);
    mt_out_puts(h, "</section>\n");
}

/* Memory: allocated (solid) and reserved (dashed) over the aligned clock,
 * one colour per rank (the 8 ranks with the highest peaks), each rank's
 * peak marked; the per-rank peak table. The series are the memory pass's
 * downsampled ones (peaks kept). */
static void section_memory(mt_out_t *h, const mt_report_t *r)
{
    const mt_mem_cross_t *m = r->memory;
    if (!m || !m->n_peaks)
        return;
    mt_out_puts(h, "<section id=\"memory\"><h2>Memory</h2>\n");
    const mt_mem_peak_t *top = &m->peaks[m->top];
    mt_out_printf(h, "<p>Highest peak: rank %d, %s allocated; max / median of the %zu ranks' peaks %.2f (%s memory).</p>\n",
                  top->rank, bytes_h((uint64_t)top->peak).s, m->n_peaks, m->max_over_median, m->gpu ? "GPU" : "CPU");
    /* the ranks drawn: highest peaks first, at most 8 */
    size_t pick[8], np = 0;
    for (size_t k = 0; k < m->n_peaks; k++) {
        size_t at = np < 8 ? np++ : 8;
        while (at > 0 && m->peaks[k].peak > m->peaks[pick[at - 1]].peak) {
            if (at < 8)
                pick[at] = pick[at - 1];
            at--;
        }
        if (at < 8)
            pick[at] = k;
    }
    int64_t t_lo = INT64_MAX, t_hi = INT64_MIN, y_hi = 1;
    for (size_t q = 0; q < np; q++) {
        const mt_rank_analysis_t *a = r->analyses[m->peaks[pick[q]].an];
        const mt_an_mem_dev_t *d = &a->mem_devs[m->peaks[pick[q]].dev];
        for (uint32_t i = 0; i < d->n_points; i++) {
            const mt_an_mem_point_t *pt = &a->mem_points[d->first_point + i];
            int64_t t = mt_report_aligned(r->clocks, r->n_clocks, a->rank, pt->ns);
            t_lo = t < t_lo ? t : t_lo;
            t_hi = t > t_hi ? t : t_hi;
            y_hi = pt->alloc > y_hi ? pt->alloc : y_hi;
            y_hi = pt->reserved > y_hi ? pt->reserved : y_hi;
        }
    }
    if (t_lo <= t_hi) {
        const char *col[] = {C_BLUE, C_VERMILLION, C_GREEN, C_ORANGE, C_SKY, C_PURPLE, "#000000", "#999933"};
        double gib = (double)y_hi / (1024.0 * 1024 * 1024), st = nice_step(gib, 5);
        double hi = ceil(gib / st - 1e-9) * st, span_ms = (double)(t_hi - t_lo) / 1e6;
        double x0 = 70, w = 860, tp = 50, ht = 240, y0 = tp + ht;
        mt_out_puts(h, "<figure>");
        svg_open(h, 1000, y0 + 50, "allocated and reserved memory over time per rank");
        double lx = x0;
        for (size_t q = 0; q < np; q++) {
            char lab[32];
            snprintf(lab, sizeof lab, "rank %d", m->peaks[pick[q]].rank);
            lx = legend(h, lx, 16, col[q], lab);
        }
        mt_out_printf(h, "<text x=\"%.1f\" y=\"16\">solid: allocated, dashed: reserved</text>", lx);
        mt_out_printf(h, "<g class=\"axis\"><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>", x0,
                      tp, x0, y0);
        int k = 0;
        for (double v = 0; v <= hi + st * 1e-9 && k < 40; v += st, k++) {
            double y = y0 - v / hi * ht;
            mt_out_printf(h, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                             "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>",
                          x0, y, x0 + w, y, x0 - 6, y + 4, tick(v, st).s);
        }
        mt_out_printf(h, "<text x=\"14\" y=\"%.1f\" class=\"at\" transform=\"rotate(-90 14 %.1f)\" "
                         "text-anchor=\"middle\">GiB</text></g>",
                      tp + ht / 2, tp + ht / 2);
        x_axis(h, x0, w, y0, tp, 0, span_ms > 0 ? span_ms : 1, "ms from the first point (aligned clocks)");
        for (size_t q = np; q-- > 0;) {
            const mt_rank_analysis_t *a = r->analyses[m->peaks[pick[q]].an];
            const mt_an_mem_dev_t *d = &a->mem_devs[m->peaks[pick[q]].dev];
            for (int res = 1; res >= 0; res--) {
                if (res && (d->flags & MT_AN_MEM_NO_RESERVED))
                    continue;
                mt_out_printf(h, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\"%s points=\"", col[q],
                              res ? " stroke-dasharray=\"5 3\"" : "");
                for (uint32_t i = 0; i < d->n_points; i++) {
                    const mt_an_mem_point_t *pt = &a->mem_points[d->first_point + i];
                    int64_t t = mt_report_aligned(r->clocks, r->n_clocks, a->rank, pt->ns);
                    double v = (double)(res ? pt->reserved : pt->alloc) / (1024.0 * 1024 * 1024);
                    mt_out_printf(h, "%.1f,%.1f ", x0 + (double)(t - t_lo) / 1e6 / (span_ms > 0 ? span_ms : 1) * w,
                                  y0 - v / hi * ht);
                }
                mt_out_puts(h, "\"/>");
            }
            int64_t t = mt_report_aligned(r->clocks, r->n_clocks, a->rank, d->peak_alloc_ns);
            mt_out_printf(h, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\" stroke=\"#333\"><title>rank %d peak %s",
                          x0 + (double)(t - t_lo) / 1e6 / (span_ms > 0 ? span_ms : 1) * w,
                          y0 - (double)d->peak_alloc / (1024.0 * 1024 * 1024) / hi * ht, col[q], a->rank,
                          bytes_h((uint64_t)d->peak_alloc).s);
            if (d->peak_op.len) {
                mt_out_puts(h, " in ");
                esc_cut(h, a->strings + d->peak_op.off, d->peak_op.len, 80);
            }
            mt_out_puts(h, "</title></circle>");
        }
        mt_out_puts(h, "</svg></figure>\n");
    }
    mt_out_puts(h, "<table><thead><tr><th class=\"n\">rank</th><th>device</th><th class=\"n\">peak allocated</th>"
                   "<th class=\"n\">step</th><th>op at the peak</th><th>annotation</th><th class=\"n\">allocation</th>"
                   "<th class=\"n\">reserved - allocated</th><th class=\"n\">peak reserved</th>"
                   "<th class=\"n\">trend per step</th><th>stage</th></tr></thead><tbody>\n");
    for (size_t i = 0; i < r->n_analyses; i++) {
        const mt_rank_analysis_t *a = r->analyses[i];
        for (size_t k = 0; k < a->n_mem_devs; k++) {
            const mt_an_mem_dev_t *d = &a->mem_devs[k];
            const char *stage = NULL;
            for (size_t q = 0; q < m->n_peaks; q++)
                if (m->peaks[q].an == i && m->peaks[q].dev == k && m->peaks[q].stage >= 0)
                    stage = m->stages[m->peaks[q].stage].name;
            mt_out_printf(h, "<tr><td class=\"n\">%d</td><td>%s %lld</td><td class=\"n\">%s</td><td class=\"n\">", a->rank,
                          d->device_type == 0 ? "CPU" : "GPU", (long long)d->device, bytes_h((uint64_t)d->peak_alloc).s);
            if (d->peak_alloc_step >= 0)
                mt_out_printf(h, "%lld", (long long)d->peak_alloc_step);
            mt_out_puts(h, "</td><td>");
            if (d->peak_op.len)
                esc_cut(h, a->strings + d->peak_op.off, d->peak_op.len, 80);
            mt_out_puts(h, "</td><td>");
            if (d->peak_annotation.len)
                esc_cut(h, a->strings + d->peak_annotation.off, d->peak_annotation.len, 80);
            mt_out_printf(h, "</td><td class=\"n\">%s</td><td class=\"n\">",
                          bytes_h((uint64_t)(d->peak_alloc_bytes > 0 ? d->peak_alloc_bytes : 0)).s);
            if (d->peak_alloc_reserved >= d->peak_alloc)
                mt_out_puts(h, bytes_h((uint64_t)(d->peak_alloc_reserved - d->peak_alloc)).s);
            mt_out_puts(h, "</td><td class=\"n\">");
            if (d->peak_reserved >= 0)
                mt_out_puts(h, bytes_h((uint64_t)d->peak_reserved).s);
            mt_out_puts(h, "</td><td class=\"n\">");
            if (d->trend_steps >= 2)
                mt_out_printf(h, "%s%s%s", d->trend_bytes_per_step < 0 ? "-" : "+",
                              bytes_h((uint64_t)(d->trend_bytes_per_step < 0 ? -d->trend_bytes_per_step
                                                                             : d->trend_bytes_per_step)).s,
                              d->grows_every_step ? " (grows every step)" : "");
            mt_out_puts(h, "</td><td>");
            if (stage)
                esc_field(h, stage, 32);
            mt_out_puts(h, "</td></tr>\n");
        }
    }
    mt_out_puts(h, "</tbody></table>\n</section>\n");
}

static void section_gates(mt_out_t *h, const mt_report_t *r)
{
    if (!r->n_gates)
        return;
    size_t passed = 0;
    for (size_t i = 0; i < r->n_gates; i++)
        passed += r->gates[i].pass;
    mt_out_printf(h, "<section id=\"gates\"><h2>Gates</h2>\n<p>%zu of %zu passed.</p>\n", passed, r->n_gates);
    mt_out_puts(h, "<table><thead><tr><th>gate</th><th class=\"n\">value</th><th>result</th></tr></thead><tbody>\n");
    for (size_t i = 0; i < r->n_gates; i++) {
        const mt_gate_t *q = &r->gates[i];
        mt_out_puts(h, "<tr><td><code>");
        esc_field(h, q->expr, sizeof q->expr);
        mt_out_puts(h, "</code></td><td class=\"n\">");
        if (q->measured)
            mt_out_printf(h, "%.6g", q->value);
        else
            mt_out_puts(h, "not measured");
        mt_out_printf(h, "</td><td><strong>%s</strong>", q->pass ? "pass" : "FAIL");
        if (!q->measured && q->why) {
            mt_out_puts(h, " (");
            esc(h, q->why);
            mt_out_puts(h, ")");
        }
        mt_out_puts(h, "</td></tr>\n");
    }
    mt_out_puts(h, "</tbody></table></section>\n");
}

static mt_status_t report_html(const mt_report_t *r, const mt_html_opts_t *o, mt_write_fn write, void *ctx)
{
    mt_out_t h = {write, ctx, MT_OK};
    mt_out_puts(&h, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
              "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
              "<title>mergetrace report</title>\n<style>\n");
    mt_out_puts(&h, css);
    mt_out_puts(&h, "</style></head>\n<body>\n");
    defs(&h);
    mt_out_puts(&h, "<nav><a href=\"#inputs\">Inputs</a><a href=\"#gpu-time\">GPU time</a>"
              "<a href=\"#stragglers\">Stragglers</a><a href=\"#collectives\">Collectives</a>"
              "<a href=\"#projection\">Projection</a><a href=\"#kernels\">Kernels</a>"
              "<a href=\"#clocks\">Clocks</a>");
    if (r->pipeline || r->pipeline_note)
        mt_out_puts(&h, "<a href=\"#pipeline\">Pipeline</a>");
    const mt_warning_t *cp_skipped = NULL; /* over process 0's memory budget: said where the section would be */
    for (size_t i = 0; r->warnings && i < r->warnings->n; i++)
        if (!strcmp(r->warnings->v[i].code, "critical_path_skipped"))
            cp_skipped = &r->warnings->v[i];
    if (r->critpath || cp_skipped)
        mt_out_puts(&h, "<a href=\"#steps\">Steps</a>");
    if (r->memory && r->memory->n_peaks)
        mt_out_puts(&h, "<a href=\"#memory\">Memory</a>");
    if (r->critpath && r->critpath->ideal.run)
        mt_out_puts(&h, "<a href=\"#whatif\">What-if</a>");
    if (r->n_gates)
        mt_out_puts(&h, "<a href=\"#gates\">Gates</a>");
    if (r->compare)
        mt_out_puts(&h, "<a href=\"#compare\">Compare</a>");
    if (r->hang)
        mt_out_puts(&h, "<a href=\"#hang\">Hang</a>");
    mt_out_puts(&h, "</nav>\n");
    section_header(&h, r, o);
    if (r->hang && h.st == MT_OK)
        h.st = mt_report_hang_html(r->hang, r->hang_placed, write, ctx);
    if (r->compare && h.st == MT_OK)
        h.st = mt_compare_html(r->compare, write, ctx);
    section_gpu_time(&h, r);
    section_stragglers(&h, r);
    section_collectives(&h, r);
    section_projection(&h, r);
    section_kernels(&h, r);
    section_clocks(&h, r);
    section_pipeline(&h, r);
    if (r->critpath && h.st == MT_OK)
        h.st = mt_report_steps_html(r->critpath, write, ctx);
    if (!r->critpath && cp_skipped) {
        mt_out_puts(&h, "<section id=\"steps\"><h2>Steps and critical path</h2>\n<p class=\"note\">");
        esc(&h, cp_skipped->text);
        mt_out_puts(&h, ".</p></section>\n");
    }
    section_memory(&h, r);
    if (r->critpath && h.st == MT_OK)
        h.st = mt_report_html_whatif(&r->critpath->ideal, write, ctx);
    section_gates(&h, r);
    mt_out_puts(&h, "<script>\n");
    mt_out_puts(&h, script);
    mt_out_puts(&h, "</script>\n</body></html>\n");
    return h.st;
}

mt_status_t mt_report_html(const mt_report_t *r, const mt_html_opts_t *o, mt_write_fn write, void *ctx)
{
    /* buffered: the page is written a few bytes at a time (text.h) */
    mt_outbuf_t *b = malloc(sizeof *b);
    if (!b)
        return MT_ERR_NOMEM;
    *b = (mt_outbuf_t){.w = write, .ctx = ctx};
    mt_status_t st = report_html(r, o, mt_outbuf_write, b);
    if (st == MT_OK) /* after an error the sink has failed already */
        st = mt_outbuf_flush(b);
    free(b);
    return st;
}
