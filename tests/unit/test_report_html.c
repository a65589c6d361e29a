/* report.html: escaping, sections, numbers and hostile names in a
 * hand-built report; the views (lateness grid, before/after samples) from
 * hand-built rows. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mergetrace/mergetrace.h"
#include "base/text.h"
#include "rank/passes.h"
#include "mergetrace/report_html.h"
#include "report/sections.h"
#include "test_util.h"

static char *escape_str(const char *s, size_t len)
{
    mt_buf_t b = {0};
    assert_int_equal(mt_html_escape(s, len, mt_buf_write, &b), MT_OK);
    assert_int_equal(mt_buf_append(&b, "", 1), MT_OK);
    return b.data;
}

static void test_escape(void **state)
{
    (void)state;
    char *e = escape_str("a&b<c>d\"e'f", 11);
    assert_string_equal(e, "a&amp;b&lt;c&gt;d&quot;e&#39;f");
    free(e);
    e = escape_str("<script>alert(1)</script>", 25);
    assert_string_equal(e, "&lt;script&gt;alert(1)&lt;/script&gt;");
    free(e);
    e = escape_str("&amp;", 5);
    assert_string_equal(e, "&amp;amp;");
    free(e);
    /* UTF-8 passes through; tab, LF, CR stay; NUL and other controls become U+FFFD */
    e = escape_str("\xc3\xa9\t\n\r", 5);
    assert_string_equal(e, "\xc3\xa9\t\n\r");
    free(e);
    e = escape_str("a\0b\x01" "c\x7f", 6);
    assert_string_equal(e, "a\xef\xbf\xbd" "b\xef\xbf\xbd" "c\xef\xbf\xbd");
    free(e);
    e = escape_str("", 0);
    assert_string_equal(e, "");
    free(e);
    e = escape_str("plain text", 10);
    assert_string_equal(e, "plain text");
    free(e);
}

static mt_status_t failing_sink(void *ctx, const void *data, size_t len)
{
    (void)data;
    (void)len;
    int *calls = ctx;
    return ++*calls >= 3 ? MT_ERR_IO : MT_OK;
}

static void test_escape_sink_error(void **state)
{
    (void)state;
    int calls = 0;
    assert_int_equal(mt_html_escape("a<b<c<d", 7, failing_sink, &calls), MT_ERR_IO);
    /* the page goes to the sink through a buffer (mt_outbuf_t): this one in
     * a single write, whose error comes back */
    mt_report_t r = {.version = "0"};
    calls = 2;
    assert_int_equal(mt_report_html(&r, NULL, failing_sink, &calls), MT_ERR_IO);
    calls = 2;
    assert_int_equal(mt_report_json(&r, failing_sink, &calls), MT_ERR_IO);
}

/* ---- a hand-built report ---------------------------------------------- */

#define H_SCRIPT "<script>alert(1)</script>"
#define H_IMG "\"><img src=x onerror=alert(1)>"
#define H_PG "<b>&amp;</b>"

static void set_str(mt_rank_analysis_t *a, mt_an_str_t *s, const char *text)
{
    size_t n = strlen(text);
    s->off = (uint32_t)a->strings_len;
    s->len = (uint32_t)n;
    memcpy(a->strings + a->strings_len, text, n + 1);
    a->strings_len += n + 1;
}

typedef struct fixture {
    mt_rank_analysis_t an[2];
    const mt_rank_analysis_t *anp[2];
    char pool[2][256];
    mt_an_proj_t proj[2];
    mt_an_kernel_t kern[2];
    mt_report_input_t in[2];
    mt_clock_t clk[2];
    mt_match_stats_t match;
    mt_cross_t cross;
    mt_cross_coll_t coll;
    mt_cross_rank_t xr[2];
    mt_cross_step_t step;
    int32_t suspects[1], step_suspects[1];
    char *evidence[1];
    char ev0[128];
    mt_report_views_t views;
    int32_t grid_ranks[2];
    int64_t grid_steps[1], grid_ns[2];
    mt_report_sample_t sample;
    int32_t s_ranks[2];
    int64_t s_raw[2], s_end[2];
    mt_report_t r;
} fixture_t;

static void build(fixture_t *f)
{
    memset(f, 0, sizeof *f);
    for (int i = 0; i < 2; i++) {
        mt_rank_analysis_t *a = &f->an[i];
        a->rank = i;
        a->strings = f->pool[i];
        a->span_ns = 1000000;
        a->compute_ns = 600000;
        a->comm_ns = 250000;
        a->memory_ns = 50000;
        a->idle_ns = 100000;
        a->busy_ns = 900000;
        a->comm_total_ns = 400000;
        a->overlap_ns = 150000; /* 37.5 % */
        a->proj = &f->proj[i];
        a->n_proj = 1;
        set_str(a, &f->proj[i].name, H_IMG);
        f->proj[i].count = 4;
        f->proj[i].cpu_ns = i ? 1000000 : 2000000; /* 3.000 ms together */
        f->proj[i].gpu_ns = i ? 500000 : 1500000;  /* 2.000 ms together */
        a->kernels = &f->kern[i];
        a->n_kernels = 1;
        f->kern[i].cls = MT_AN_COMPUTE;
        set_str(a, &f->kern[i].name, H_SCRIPT);
        f->kern[i].count = 3;
        f->kern[i].total_ns = 450000; /* 0.900 ms together, mean 150.0 us */
        f->kern[i].max_ns = i ? 170000 : 160000;
        f->anp[i] = a;
        f->in[i] = (mt_report_input_t){.rank = i, .rank_source = "distributedInfo",
                                       .path = "/tmp/" H_SCRIPT "/rank.json", .bytes = 1536,
                                       .json_bytes = 1536, .events = 100};
        f->clk[i] = (mt_clock_t){.rank = i, .reference = i == 0, .connected = true, .matched = 24,
                                 .residual_p50_ns = 400, .residual_p99_ns = 1100};
    }
    f->clk[1].offset_ns = -7356000.0; /* -7.356 ms */
    f->match = (mt_match_stats_t){.full = 24, .rows = 48};

    memcpy(f->coll.pg, H_PG, sizeof H_PG);
    strcpy(f->coll.dtype, "Float");
    f->coll.kind = MT_COLLK_ALLREDUCE;
    f->coll.bytes = 6 * 1024 * 1024;
    f->coll.count = 18;
    f->coll.ranks = 2;
    f->coll.total_ns = 11500000;
    f->coll.mean_ns = 638888;
    f->coll.transfer_ns = 2355000;
    f->coll.algbw_gbps = 48.09;
    f->coll.busbw_gbps = 84.16;
    f->cross.colls = &f->coll;
    f->cross.n_colls = 1;
    f->xr[0] = (mt_cross_rank_t){.rank = 0, .instances = 24, .chance_q24 = 12u << 24};
    f->xr[1] = (mt_cross_rank_t){.rank = 1, .instances = 24, .last = 19, .chance_q24 = 12u << 24,
                                 .wait_caused_ns = 40641000};
    f->cross.ranks = f->xr;
    f->cross.n_ranks = 2;
    f->cross.instances = 24;
    f->suspects[0] = 1;
    f->cross.suspects = f->suspects;
    f->cross.n_suspects = 1;
    strcpy(f->ev0, "rank 1: " H_SCRIPT " & \"x\"");
    f->evidence[0] = f->ev0;
    f->cross.evidence = f->evidence;
    f->cross.n_evidence = 1;
    f->step = (mt_cross_step_t){.step = 7, .instances = 4, .first_suspect = 0, .n_suspects = 1};
    f->step_suspects[0] = 1;
    f->cross.steps = &f->step;
    f->cross.n_steps = 1;
    f->cross.step_suspects = f->step_suspects;
    f->cross.n_step_suspects = 1;

    f->grid_ranks[0] = 0;
    f->grid_ranks[1] = 1;
    f->grid_steps[0] = 7;
    f->grid_ns[0] = -12345;  /* -12.3 us */
    f->grid_ns[1] = 293400;  /* +293.4 us */
    f->views.grid_ranks = f->grid_ranks;
    f->views.n_grid_ranks = 2;
    f->views.grid_steps = f->grid_steps;
    f->views.n_grid_steps = 1;
    f->views.n_steps_total = 1;
    f->views.grid_ns = f->grid_ns;
    f->s_ranks[0] = 0;
    f->s_ranks[1] = 1;
    f->s_raw[0] = 1000;
    f->s_raw[1] = 7357000;
    f->s_end[0] = 1000;
    f->s_end[1] = 1200;
    f->sample = (mt_report_sample_t){.kind = MT_COLLK_ALLREDUCE, .pg = "0", .step = 7, .n = 2,
                                     .ranks = f->s_ranks, .raw_end_ns = f->s_raw, .end_ns = f->s_end};
    f->views.samples = &f->sample;
    f->views.n_samples = 1;

    f->r = (mt_report_t){.version = "0.1.0", .world_size = 2, .inputs = f->in, .n_inputs = 2, .aligned = true,
                         .reference_rank = 0, .clocks = f->clk, .n_clocks = 2, .match = &f->match,
                         .analyses = f->anp, .n_analyses = 2, .cross = &f->cross, .views = &f->views};
}

static char *render(const mt_report_t *r, const mt_html_opts_t *o)
{
    mt_buf_t b = {0};
    assert_int_equal(mt_report_html(r, o, mt_buf_write, &b), MT_OK);
    assert_int_equal(mt_buf_append(&b, "", 1), MT_OK);
    return b.data;
}

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

static void has(const char *page, const char *needle)
{
    if (!strstr(page, needle))
        fail_msg("report.html lacks \"%s\"", needle);
}

static void test_report(void **state)
{
    (void)state;
    fixture_t *f = malloc(sizeof *f);
    assert_non_null(f);
    build(f);
    mt_html_opts_t o = {.command_line = "mergetrace -o '" H_IMG "' ./traces"};
    char *p = render(&f->r, &o);

    /* nothing from the hostile names became markup */
    assert_null(strstr(p, "<script>alert"));
    assert_null(strstr(p, "<img"));
    assert_null(strstr(p, "<b>"));
    assert_int_equal(count(p, "<script"), 1); /* the page's own sorting script */
    assert_int_equal(count(p, "onerror=alert(1)&gt;"), count(p, "onerror"));
    /* ... and they are there as text */
    has(p, "&lt;script&gt;alert(1)&lt;/script&gt;");
    has(p, "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;");
    has(p, "<td class=\"name\">&lt;b&gt;&amp;amp;&lt;/b&gt;</td>");
    has(p, "<li>rank 1: &lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;x&quot;</li>");
    has(p, "<pre class=\"cmd\">mergetrace -o &#39;&quot;&gt;&lt;img src=x onerror=alert(1)&gt;&#39; ./traces</pre>");
    has(p, "<td class=\"name\">/tmp/&lt;script&gt;alert(1)&lt;/script&gt;/rank.json</td>");

    /* every section */
    const char *ids[] = {"inputs", "gpu-time", "stragglers", "collectives", "projection", "kernels", "clocks"};
    for (size_t i = 0; i < sizeof ids / sizeof *ids; i++) {
        char want[64];
        snprintf(want, sizeof want, "id=\"%s\"", ids[i]);
        has(p, want);
    }
    has(p, "<h2>GPU time per rank</h2>");
    has(p, "<h2>Stragglers</h2>");
    has(p, "<h2>Collectives</h2>");
    has(p, "<h2>GPU projection by annotation</h2>");
    has(p, "<h2>Top kernels</h2>");
    has(p, "<h2>Clock alignment</h2>");

    /* the numbers put in, formatted */
    has(p, "2 ranks loaded (2 files, 3.00 KiB, 200 events)");
    has(p, "<td class=\"n\">1.50 KiB</td>");
    has(p, "<td class=\"n\" data-v=\"60.0\">60.0</td><td class=\"n\" data-v=\"25.0\">25.0</td>"
           "<td class=\"n\" data-v=\"5.0\">5.0</td><td class=\"n\" data-v=\"10.0\">10.0</td>"
           "<td class=\"n\" data-v=\"37.5\">37.5</td>");
    has(p, ">37.5%</text>");
    has(p, "<title>rank 0 compute: 0.600 ms (60.0%)</title>");
    has(p, "<title>rank 1 step 7: mean lateness +293.4 us (suspect of the step)</title>");
    has(p, "<title>rank 0 step 7: mean lateness -12.3 us</title>");
    /* one outline: rank 1 is the step's suspect (second row of 22 px from y 70) */
    assert_int_equal(count(p, "pointer-events=\"none\""), 1);
    has(p, "<rect x=\"71.2\" y=\"93.2\" width=\"69.5\" height=\"19.5\" fill=\"none\" stroke=\"#000\"");
    has(p, ">+293</text>");
    has(p, "suspects on the aligned clock: <strong>1</strong>");
    has(p, "<td class=\"n\" data-v=\"11500000\"><span class=\"bar\" style=\"width:60px\"></span>11.500</td>");
    has(p, "<td class=\"n\" data-v=\"638888\">638.9</td>");
    has(p, ">84.16</td>");
    has(p, "6.00 MiB");
    /* projection summed over ranks: CPU 3.000 ms, GPU 2.000 ms of 1.800 ms busy... */
    has(p, "<td class=\"n\" data-v=\"8\">8</td><td class=\"n\" data-v=\"3000000\">3.000</td>"
           "<td class=\"n\" data-v=\"2000000\">2.000</td><td class=\"n\" data-v=\"111.1\">111.1</td>");
    /* kernels summed: 2 ranks, 6 launches, 0.900 ms, mean 150.0 us, max 170.0 us */
    has(p, "<td class=\"n\" data-v=\"2\">2</td><td class=\"n\" data-v=\"6\">6</td>"
           "<td class=\"n\" data-v=\"900000\">0.900</td><td class=\"n\" data-v=\"150000\">150.0</td>"
           "<td class=\"n\" data-v=\"170000\">170.0</td>");
    has(p, "<td class=\"n\" data-v=\"-7356000\">-7.356</td>");
    has(p, "<td class=\"n\" data-v=\"400\">0.4</td><td class=\"n\" data-v=\"1100\">1.1</td>");
    /* the sample: the median of two ends is the upper one */
    has(p, "<title>rank 0: -7356.0 us from the median end</title>");
    has(p, "<title>rank 1: 0.0 us from the median end</title>");
    has(p, "<title>rank 0: -0.2 us from the median end</title>");
    has(p, "allreduce on process group 0, ProfilerStep 7, 2 ranks");
    /* deterministic */
    char *again = render(&f->r, &o);
    assert_string_equal(p, again);
    free(again);
    free(p);
    free(f);
}

static void test_report_empty(void **state)
{
    (void)state;
    mt_report_t r = {.version = "0.1.0", .world_size = 1};
    char *p = render(&r, NULL);
    has(p, "No per-rank analysis in this report.");
    has(p, "No collective inside a ProfilerStep: no heat map.");
    has(p, "No cross-rank analysis in this report.");
    has(p, "No collective instances.");
    has(p, "No annotation ranges with GPU work.");
    has(p, "No kernel lists in this report.");
    has(p, "No clocks.");
    has(p, "</html>\n");
    assert_null(strstr(p, "<pre class=\"cmd\">"));
    free(p);
}

/* The steps section's root causes from a hand-built result: 1 ms waited,
 * 0.9 ms attributed (0.6 short-term, 0.3 long-term), causes and
 * annotations whose names are markup. */
static void test_root_causes(void **state)
{
    (void)state;
    mt_cp_name_t causes[2] = {{3, MT_RC_COMPUTE, "<script>alert(1)</script>", 600000},
                              {1, MT_RC_HOST, "", 300000}};
    mt_cp_name_t annot[1] = {{3, MT_RC_COMPUTE, "\"><img src=x onerror=alert(1)>", 900000}};
    mt_critpath_t *c = calloc(1, sizeof *c);
    assert_non_null(c);
    c->wait_ns = 1000000;
    c->attributed_ns = 900000;
    c->short_ns = 600000;
    c->long_ns = 300000;
    c->rc_kind_ns[MT_RC_COMPUTE] = 600000;
    c->rc_kind_ns[MT_RC_HOST] = 300000;
    c->causes = causes;
    c->n_causes = 2;
    c->by_annot = annot;
    c->n_by_annot = 1;
    mt_buf_t b = {0};
    assert_int_equal(mt_report_steps_html(c, mt_buf_write, &b), MT_OK);
    assert_int_equal(mt_buf_append(&b, "", 1), MT_OK);
    const char *p = b.data;
    /* 90 % attributed; of it 2/3 short-term, 1/3 long-term */
    has(p, "(90.00 %) is attributed: 66.67 % of it short-term");
    has(p, "33.33 % long-term");
    /* by kind: compute 2/3 of the attributed time, host 1/3, memory none */
    has(p, "<tr data-kind=\"compute\"><td>compute</td><td class=\"n\"><span class=\"bar\" style=\"width:160px\">"
           "</span>600.000</td><td class=\"n\">66.67</td></tr>");
    has(p, "<tr data-kind=\"host\"><td>host</td><td class=\"n\"><span class=\"bar\" style=\"width:80px\">"
           "</span>300.000</td><td class=\"n\">33.33</td></tr>");
    has(p, "<span class=\"bar\" style=\"width:0px\"></span>0.000</td><td class=\"n\">0.00</td>");
    /* causes: 60 % and 30 % of the wait; the names as text */
    has(p, "<tr><td class=\"n\" data-v=\"3\">3</td><td>compute</td><td class=\"name\">&lt;script&gt;alert(1)"
           "&lt;/script&gt;</td><td class=\"n\" data-v=\"600000\">600.000</td><td class=\"n\">60.00</td></tr>");
    has(p, "<tr><td class=\"n\" data-v=\"1\">1</td><td>host</td><td class=\"name\"></td><td class=\"n\" "
           "data-v=\"300000\">300.000</td><td class=\"n\">30.00</td></tr>");
    has(p, "<td class=\"name\">&quot;&gt;&lt;img src=x onerror=alert(1)&gt;</td><td>compute</td><td class=\"n\" "
           "data-v=\"900000\">900.000</td><td class=\"n\">90.00</td>");
    assert_null(strstr(p, "<script"));
    assert_null(strstr(p, "<img"));
    free(b.data);
    /* no waiting: a note, no tables */
    c->wait_ns = 0;
    b = (mt_buf_t){0};
    assert_int_equal(mt_report_steps_html(c, mt_buf_write, &b), MT_OK);
    assert_int_equal(mt_buf_append(&b, "", 1), MT_OK);
    has(b.data, "No waiting in the matched collectives of the used steps.");
    assert_null(strstr(b.data, "rc-causes"));
    free(b.data);
    free(c);
}

/* What-ifs on a pipeline from a hand-built result (4 used steps, period
 * p50 4 ms measured): the terminal's best what-if and report.html's rows.
 * "comm" projects the period alone. Straggler, comm and launch all gain
 * 500 us of period: the tie goes to the best by step time (launch, 2 ms
 * against 1 ms), not to the first; comm at 600 us wins with no step p50.
 * Every used step refused: no best what-if, and comm's row is refused
 * like the others', with no period row. */
static void test_pipeline_whatif(void **state)
{
    (void)state;
    mt_critpath_t *c = calloc(1, sizeof *c);
    assert_non_null(c);
    c->used = 4;
    c->path_ns = 40000000;
    c->kind_ns[MT_CP_COMPUTE] = 40000000;
    c->periods = 3;
    c->period_p50_ns = 4000000;
    mt_cp_whatif_t *s = &c->whatif[MT_WI_STRAGGLER], *m = &c->whatif[MT_WI_COMM], *l = &c->whatif[MT_WI_LAUNCH];
    *s = (mt_cp_whatif_t){.run = true, .carried = true, .steps = 4, .p50_ns = 9000000, .gain_ns = 1000000,
                          .period_p50_ns = 3500000, .period_gain_ns = 500000};
    *m = (mt_cp_whatif_t){.run = true, .carried = true, .period_only = true, .period_p50_ns = 3500000,
                          .period_gain_ns = 500000};
    *l = (mt_cp_whatif_t){.run = true, .carried = true, .steps = 4, .p50_ns = 8000000, .gain_ns = 2000000,
                          .period_p50_ns = 3500000, .period_gain_ns = 500000};
    snprintf(s->label, sizeof s->label, "rank 1 at the median rank's speed");
    snprintf(m->label, sizeof m->label, "communication at its transfer time, no waiting");
    snprintf(l->label, sizeof l->label, "no host launch gaps");
    mt_buf_t b = {0};
    assert_int_equal(mt_report_steps_text(c, mt_buf_write, &b), MT_OK);
    assert_int_equal(mt_buf_append(&b, "", 1), MT_OK);
    has(b.data, "best what-if: no host launch gaps -> period p50 3.50 ms (500.0 us faster; step p50 8.00 ms), if");
    free(b.data);
    m->period_p50_ns = 3400000;
    m->period_gain_ns = 600000;
    b = (mt_buf_t){0};
    assert_int_equal(mt_report_steps_text(c, mt_buf_write, &b), MT_OK);
    assert_int_equal(mt_buf_append(&b, "", 1), MT_OK);
    has(b.data, "best what-if: communication at its transfer time, no waiting -> period p50 3.40 ms (600.0 us "
                "faster), if the dependencies stay the same\n");
    free(b.data);
    b = (mt_buf_t){0};
    assert_int_equal(mt_report_steps_html(c, mt_buf_write, &b), MT_OK);
    assert_int_equal(mt_buf_append(&b, "", 1), MT_OK);
    /* comm's row: its 9 cells, then its period row; 9 cells in each */
    has(b.data, "<tr data-scenario=\"comm_at_transfer\"><td>comm_at_transfer</td><td>communication at its "
                "transfer time, no waiting</td><td class=\"n\">0</td><td class=\"n\"></td><td class=\"n\"></td>"
                "<td class=\"n\"></td><td class=\"n\"></td><td class=\"n\"></td><td>step time not projected on "
                "a pipeline: without waiting the stages drift apart (read the period)</td></tr>\n"
                "<tr data-scenario=\"comm_at_transfer:period\"><td>comm_at_transfer</td><td>the same (period)</td>"
                "<td class=\"n\">3</td><td class=\"n\">4000.000</td><td class=\"n\">3400.000</td><td class=\"n\">"
                "600.000</td><td class=\"n\">15.00</td>");
    free(b.data);
    /* every used step refused */
    c->refused = 4;
    s->steps = l->steps = 0;
    s->p50_ns = s->gain_ns = l->p50_ns = l->gain_ns = 0;
    b = (mt_buf_t){0};
    assert_int_equal(mt_report_steps_text(c, mt_buf_write, &b), MT_OK);
    assert_int_equal(mt_buf_append(&b, "", 1), MT_OK);
    assert_null(strstr(b.data, "best what-if"));
    free(b.data);
    b = (mt_buf_t){0};
    assert_int_equal(mt_report_steps_html(c, mt_buf_write, &b), MT_OK);
    assert_int_equal(mt_buf_append(&b, "", 1), MT_OK);
    has(b.data, "<tr data-scenario=\"comm_at_transfer\"><td>comm_at_transfer</td><td>communication at its "
                "transfer time, no waiting</td><td class=\"n\">0</td><td class=\"n\"></td><td class=\"n\"></td>"
                "<td class=\"n\"></td><td class=\"n\"></td><td class=\"n\"></td><td>refused: every used step's "
                "replay error is above 5 %</td></tr>\n");
    assert_null(strstr(b.data, "data-scenario=\"comm_at_transfer:period\""));
    assert_null(strstr(b.data, "step time not projected"));
    free(b.data);
    free(c);
}

/* The pipeline and gates sections: a hand-built two-stage pipeline of
 * three chunks (the first a warm-up) whose stage names and note carry
 * markup, and one gate of each outcome. */
static void test_pipeline_section(void **state)
{
    (void)state;
    int64_t key[3] = {7, 8, 9}, emit[3] = {1000000, 3000000, 5500000}, period[3] = {-1, 2000000, 2500000};
    int64_t hidden[3] = {0, 1000000, 500000}, lat[3] = {4000000, 4100000, 4200000};
    int64_t stage[6] = {2000000, 1000000, 2000000, 1000000, 2000000, 1000000};
    double score[3] = {-1, 1.0, 0.5};
    size_t first[3] = {0, 1, 2};
    int32_t ranks[2] = {0, 1};
    uint32_t marker[2] = {1, 2};
    char names[2][32] = {"<b>enc</b>", "dec&co"};
    mt_pp_stage_sum_t ss[2] = {{.busy_p50_ns = 2000000, .busy_mean_ns = 2000000, .max_mean_ns = 2000000},
                               {.busy_p50_ns = 1000000, .busy_mean_ns = 1000000, .max_mean_ns = 1000000,
                                .bubble_pct = 55.5}};
    mt_pipeline_t p = {.stages = {.n = 2, .first = first, .ranks = ranks, .marker = marker, .name = names,
                                  .source = MT_PP_FROM_ANNOTATIONS},
                       .warmup = 1, .n_chunks = 3, .by_key = true, .key = key, .emit_ns = emit,
                       .period_ns = period, .hidden_ns = hidden, .score = score, .latency_ns = lat,
                       .latency_raw_ns = lat, .stage_ns = stage, .stage_max_ns = stage, .stage_sum = ss,
                       .critical_stage = 0};
    p.sum = (mt_pp_summary_t){.used = 2, .period_p50_ns = 2000000, .period_p90_ns = 2500000,
                              .period_p99_ns = 2500000, .period_mean_ns = 2250000, .overlap_score = 0.75};
    p.raw = p.sum;
    mt_gate_t g[2];
    mt_error_t err;
    mt_error_clear(&err);
    assert_int_equal(mt_gate_parse("overlap>=0.5", &g[0], &err), MT_OK);
    assert_int_equal(mt_gate_parse("idle_pct<=1", &g[1], &err), MT_OK);
    g[0].measured = true, g[0].value = 0.75, g[0].pass = true;
    g[1].measured = false, g[1].pass = false, g[1].why = "no GPU <activity>";
    mt_report_t r = {.version = "0", .world_size = 2, .pipeline = &p, .pipeline_note = "note <i>x</i>",
                     .gates = g, .n_gates = 2};
    char *h = render(&r, NULL);
    has(h, "<section id=\"pipeline\">");
    has(h, "<a href=\"#pipeline\">Pipeline</a>");
    has(h, "note &lt;i&gt;x&lt;/i&gt;");
    has(h, "&lt;b&gt;enc&lt;/b&gt;");
    has(h, "dec&amp;co ms</th>");
    assert_null(strstr(h, "<b>enc"));
    has(h, "2 stages from --stage annotations; 3 chunks matched by #number, 2 measured after 1 warm-up.");
    /* the verdict: 0.75 is partly overlapped, the critical stage is "<b>enc</b>" (escaped) */
    has(h, "OverlapScore 0.75 -- partly overlapped");
    has(h, "7 (warm-up)");
    has(h, "<td class=\"n\" data-v=\"2500000\">2.500</td>"); /* chunk 9's period */
    has(h, "<td class=\"n\" data-v=\"0.5000\">0.500</td>");  /* chunk 9's score */
    has(h, "<td class=\"n\">55.5</td>");                       /* stage 1's bubble */
    has(h, "<section id=\"gates\"><h2>Gates</h2>\n<p>1 of 2 passed.</p>");
    has(h, "<code>overlap&gt;=0.5</code></td><td class=\"n\">0.75</td><td><strong>pass</strong>");
    has(h, "not measured</td><td><strong>FAIL</strong> (no GPU &lt;activity&gt;)");
    free(h);
}

/* More ranks than the heat map draws: the 128 with the latest cells. */
static void test_heat_cap(void **state)
{
    (void)state;
    enum { N = 130 };
    int32_t ranks[N];
    int64_t steps[1] = {3}, ns[N];
    for (int i = 0; i < N; i++) {
        ranks[i] = i;
        ns[i] = (int64_t)(i ^ 1) * 1000; /* ranks 1 and 0 have the two earliest cells */
    }
    mt_report_views_t v = {.grid_ranks = ranks, .n_grid_ranks = N, .grid_steps = steps, .n_grid_steps = 1,
                           .n_steps_total = 1, .grid_ns = ns};
    mt_report_t r = {.version = "0.1.0", .world_size = N, .views = &v};
    char *p = render(&r, NULL);
    assert_null(strstr(p, "<title>rank 0 step 3:"));
    assert_null(strstr(p, "<title>rank 1 step 3:"));
    has(p, "<title>rank 2 step 3: mean lateness +3.0 us</title>");
    has(p, "<title>rank 129 step 3: mean lateness +128.0 us</title>");
    has(p, "The 128 of 130 ranks with the latest cells are shown");
    /* drawn by rank: rank 2's row comes before rank 3's, which is later */
    assert_true(strstr(p, "<title>rank 2 step 3:") < strstr(p, "<title>rank 3 step 3:"));
    free(p);
}

/* ---- views ------------------------------------------------------------- */

static void test_views(void **state)
{
    (void)state;
    /* one instance of three ranks in step 5 and one of two (ranks 0, 2) in
     * step 6; rank 1's clock is 10 ns behind */
    mt_cinst_t rows[5];
    memset(rows, 0, sizeof rows);
    const int32_t rk[5] = {0, 1, 2, 0, 2};
    const int64_t start[5] = {100, 150, 400, 2000, 2300}, end[5] = {1000, 990, 1000, 3000, 3000};
    for (int i = 0; i < 5; i++) {
        rows[i].rank = rk[i];
        rows[i].start_ns = start[i];
        rows[i].end_ns = end[i];
        rows[i].step = i < 3 ? 5 : 6;
        rows[i].kind = MT_COLLK_ALLREDUCE;
        rows[i].pg_id = tu_label(H_PG);
    }
    uint32_t first[3] = {0, 3, 5}, members[5] = {0, 1, 2, 3, 4};
    uint8_t key[2] = {MT_KEY_PG_SEQ, MT_KEY_PG_SEQ}, status[2] = {MT_INST_FULL, MT_INST_PARTIAL};
    int32_t expected[2] = {3, 3};
    mt_match_t m = {.n_inst = 2, .first = first, .members = members, .key = key, .status = status,
                    .expected = expected};
    const int32_t ranks[3] = {2, 0, 1}; /* any order */
    mt_clock_t clocks[3] = {{.rank = 2, .connected = true}, {.rank = 0, .reference = true, .connected = true},
                            {.rank = 1, .connected = true, .offset_ns = 10}};
    mt_report_views_t *v = NULL;
    assert_int_equal(mt_report_views_build(tu_crows(rows, 5), 5, tu_labels(), &m, clocks, ranks, 3, 4, &v), MT_OK);
    assert_non_null(v);
    assert_int_equal(v->n_grid_ranks, 3);
    assert_int_equal(v->grid_ranks[0], 0);
    assert_int_equal(v->grid_ranks[2], 2);
    assert_int_equal(v->n_grid_steps, 2);
    assert_int_equal(v->n_steps_total, 2);
    assert_int_equal(v->grid_steps[0], 5);
    assert_int_equal(v->grid_steps[1], 6);
    /* step 5: arrivals 100, 160, 400, median 160: lateness -60, 0, 240 */
    assert_int_equal(v->grid_ns[0 * 2 + 0], -60);
    assert_int_equal(v->grid_ns[1 * 2 + 0], 0);
    assert_int_equal(v->grid_ns[2 * 2 + 0], 240);
    /* step 6: arrivals 2000, 2300, median their mean 2150; rank 1 absent */
    assert_int_equal(v->grid_ns[0 * 2 + 1], -150);
    assert_true(v->grid_ns[1 * 2 + 1] == MT_VIEW_NONE);
    assert_int_equal(v->grid_ns[2 * 2 + 1], 150);
    /* the one full instance with the most participants */
    assert_int_equal(v->n_samples, 1);
    const mt_report_sample_t *s = &v->samples[0];
    assert_int_equal(s->n, 3);
    assert_int_equal(s->step, 5);
    assert_int_equal(s->kind, MT_COLLK_ALLREDUCE);
    assert_string_equal(s->pg, H_PG);
    assert_int_equal(s->ranks[1], 1);
    assert_int_equal(s->raw_end_ns[1], 990);
    assert_int_equal(s->end_ns[1], 1000);
    assert_int_equal(s->end_ns[0], 1000);
    mt_report_views_free(v);
    mt_report_views_free(NULL);

    /* 200 steps of one two-rank instance each: rank 1 arrives 10 ns late,
     * except 1000 ns late in steps 150-159. The grid holds 64 steps: the
     * window with the most waiting (sum 10 * 54 + 1000 * 10 = 10540 ns) is
     * every window that covers steps 150-159, the earliest 96-159. */
    {
        enum { NS = 200 };
        mt_cinst_t *rr = calloc(2 * NS, sizeof *rr);
        uint32_t *fi = calloc(NS + 1, sizeof *fi), *me = calloc(2 * NS, sizeof *me);
        uint8_t *ke = calloc(NS, 1), *stt = calloc(NS, 1);
        int32_t *ex = calloc(NS, sizeof *ex);
        assert_non_null(rr);
        for (int i = 0; i < NS; i++) {
            for (int p = 0; p < 2; p++) {
                mt_cinst_t *r = &rr[2 * i + p];
                r->rank = p;
                r->step = i;
                r->start_ns = (int64_t)i * 100000 + (p ? (i >= 150 && i < 160 ? 1000 : 10) : 0);
                r->end_ns = (int64_t)i * 100000 + 5000;
                me[2 * i + p] = (uint32_t)(2 * i + p);
            }
            fi[i + 1] = (uint32_t)(2 * i + 2);
            ke[i] = MT_KEY_PG_SEQ;
            stt[i] = MT_INST_FULL;
            ex[i] = 2;
        }
        mt_match_t mm = {.n_inst = NS, .first = fi, .members = me, .key = ke, .status = stt, .expected = ex};
        const int32_t r2[2] = {0, 1};
        assert_int_equal(mt_report_views_build(tu_crows(rr, 2 * NS), 2 * NS, tu_labels(), &mm, NULL, r2, 2, 4, &v), MT_OK);
        assert_int_equal(v->n_steps_total, NS);
        assert_int_equal(v->n_grid_steps, MT_VIEW_MAX_STEPS);
        assert_int_equal(v->grid_steps[0], 96);
        assert_int_equal(v->grid_steps[MT_VIEW_MAX_STEPS - 1], 159);
        mt_report_views_free(v);
        free(rr);
        free(fi);
        free(me);
        free(ke);
        free(stt);
        free(ex);
    }

    /* no match: empty views */
    assert_int_equal(mt_report_views_build(NULL, 0, tu_labels(), NULL, NULL, ranks, 3, 4, &v), MT_OK);
    assert_int_equal(v->n_samples, 0);
    assert_int_equal(v->n_grid_steps, 0);
    mt_report_views_free(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escape),         cmocka_unit_test(test_escape_sink_error),
        cmocka_unit_test(test_report),         cmocka_unit_test(test_report_empty),
        cmocka_unit_test(test_views),         cmocka_unit_test(test_heat_cap),
        cmocka_unit_test(test_pipeline_section), cmocka_unit_test(test_root_causes),
        cmocka_unit_test(test_pipeline_whatif),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
