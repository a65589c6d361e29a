/* The ideal what-if against the published results of "Understanding
 * Stragglers in Large Model Training Using What-if Analysis" (OSDI 2025):
 * its job ST (DP 2 x PP 4, last stage too long), from the artifact's
 * timeline (../shared/corpus/ByteDance-Seed__StragglerAnalysis). The
 * expected values are the artifact's own outputs, data/result-ST.json,
 * ms-ST.json and mw-ST.json. Also: the timeline reader's errors, the
 * --timeline-map parser, the job model's instances, and a 1200-rank
 * timeline that grows the ideal sweep's slot pool, and the program's
 * whole path for a timeline (mt_tl_run). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_util.h"

#include "mergetrace/buf.h"
#include "mergetrace/critpath.h"
#include "mergetrace/report_html.h"
#include "mergetrace/timeline.h"
#include "mergetrace/tljob.h"
#include "mergetrace/tl_run.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ST_DIR MT_CORPUS_DIR "/ByteDance-Seed__StragglerAnalysis/data"

/* The critical path of a timeline job with the ideal what-if, its
 * workers and stages from the job's coordinates. */
static mt_critpath_t *ideal_run(const mt_tl_job_t *j)
{
    mt_cp_request_t rq = {.ideal = true, .coords = j->coords, .n_coords = j->n_an};
    mt_critpath_t *c = NULL;
    assert_int_equal(mt_critpath_run(&rq, (const mt_rank_analysis_t *const *)j->an, j->n_an, NULL, NULL, 0,
                                     tu_crows(j->rows, j->n_rows), j->n_rows, j->match, &c),
                     MT_OK);
    return c;
}

static void near_rel(double got, double want, double tol, const char *what)
{
    double rel = fabs(got - want) / want;
    printf("  %-32s ours %.4f  paper %.4f  (%.2f %%)\n", what, got, want, 100 * rel);
    assert_true(rel <= tol);
}

static double share(const mt_cp_share_t *v, size_t n, const char *name, int32_t id)
{
    for (size_t i = 0; i < n; i++)
        if (name ? strcmp(v[i].name, name) == 0 : v[i].id == id)
            return v[i].s;
    fail_msg("no share %s %d", name ? name : "", id);
    return 0;
}

static mt_status_t buf_write(void *ctx, const void *data, size_t len)
{
    return mt_buf_append(ctx, data, len);
}

static void has(const char *page, const char *want)
{
    if (!strstr(page, want))
        fail_msg("report.html lacks %s", want);
}

/* report.html of ST: the "Ideal what-if" section's heat map, with the
 * paper's per-stage S (result-ST.json: stage 3 1.2323, the others below
 * 1) in the S_stage row and min(S_worker, S_stage) in the cells (DP rank
 * 1's S 1.1779 < stage 3's, so its stage-3 cell shows 1.1779). */
static void st_html(const mt_critpath_t *c)
{
    mt_report_t r = {.version = "0.1.0", .world_size = 8, .critpath = c};
    mt_buf_t b = {0};
    assert_int_equal(mt_report_html(&r, NULL, buf_write, &b), MT_OK);
    assert_int_equal(mt_buf_append(&b, "", 1), MT_OK);
    const char *p = (const char *)b.data;
    has(p, "<a href=\"#whatif\">What-if</a>");
    has(p, "<section id=\"whatif\"><h2>Ideal what-if</h2>");
    has(p, "<table class=\"whatif-heat\">");
    has(p, "<th class=\"n\">stage 3</th>");
    has(p, "title=\"stage 3: 1.2323\">1.2323</td>");
    has(p, "title=\"stage 0: 0.9980\">0.9980</td>");
    has(p, "title=\"stage 2: 0.9825\">0.9825</td>");
    has(p, "title=\"worker 1: 1.1779\">1.1779</td>");
    has(p, "title=\"worker 1, stage 3: 1.1779\">1.1779</td>");
    has(p, "title=\"worker 0, stage 1: 0.9831\">0.9831</td>");
    has(p, "<strong>stage 3</strong>");
    has(p, "M<sub>S</sub> = 1.2194");
    /* the largest S is orange at full strength, 1 would be white */
    has(p, "style=\"background:#D55E00;color:#fff;min-width:4.5em\" title=\"stage 3: 1.2323\"");
    mt_buf_free(&b);
}

static void test_st(void **state)
{
    (void)state;
    if (access(ST_DIR "/timeline-ST.json.gz", R_OK) != 0)
        skip();
    mt_error_t err;
    mt_error_clear(&err);
    mt_timeline_t *tl = NULL;
    assert_int_equal(mt_timeline_load(ST_DIR "/timeline-ST.json.gz", NULL, &tl, &err), MT_OK);
    /* 6866 events: 82 metadata, 6784 operations (Python's json on the file) */
    assert_int_equal(tl->n_ops, 6784);
    assert_int_equal(tl->skipped, 82);
    assert_int_equal(tl->n_ranks, 8);
    assert_int_equal(tl->dp_size, 2);
    assert_int_equal(tl->pp_size, 4);
    mt_tl_job_t *j = NULL;
    assert_int_equal(mt_tl_job_build(tl, &j), MT_OK);
    /* per step and DP rank: 3 forward and 3 backward pairs per stage
     * boundary x 3 boundaries = 24 pairs, x 2 DP ranks x 32 steps */
    assert_int_equal(j->p2p_pairs, 24 * 2 * 32);
    /* per step: params-all-gather and grads-reduce-scatter per stage (8),
     * clip (1), embedding per DP rank (2) */
    assert_int_equal(j->collectives, 11 * 32);
    assert_int_equal(j->dropped_deps, 0);
    mt_critpath_t *c = ideal_run(j);
    assert_non_null(c);
    assert_int_equal(c->n_steps, 32);
    /* The operation-level timeline has no host events: the gaps between
     * operations (data loading, Python) are not in the graph, so a replay
     * from the dependencies alone is shorter than the measured steps and
     * they are refused for projections from measured time. S does not use
     * the measurement (no delay vs ideal, both replays). */
    assert_true(c->replay_err_median > 0.05);
    const mt_cp_ideal_t *I = &c->ideal;
    assert_true(I->run);
    assert_int_equal(I->steps, 32);
    /* result-ST.json */
    near_rel(I->s, 1.1787021836556841, 0.02, "S (blocking_slowdown)");
    near_rel(share(I->by_stage, I->n_stage, NULL, 3), 1.2322559543157936, 0.03, "S stage 3");
    near_rel(share(I->by_stage, I->n_stage, NULL, 0), 0.9980450635272368, 0.03, "S stage 0");
    near_rel(share(I->by_stage, I->n_stage, NULL, 1), 0.9830562530894704, 0.03, "S stage 1");
    near_rel(share(I->by_stage, I->n_stage, NULL, 2), 0.9824931309511952, 0.03, "S stage 2");
    near_rel(share(I->by_worker, I->n_worker, NULL, 0), 1.1730828198099532, 0.03, "S DP rank 0");
    near_rel(share(I->by_worker, I->n_worker, NULL, 1), 1.1778704237064905, 0.03, "S DP rank 1");
    static const struct {
        const char *type;
        double s;
    } types[] = {
        {"forward-compute", 1.0874989663025318},
        {"backward-compute", 1.074156472437866},
        {"embedding-grads-all-reduce", 1.0095504024370303},
        {"grads-reduce-scatter", 1.00266695254219},
        {"optimizer-clip-main-grad", 1.0023506224771044},
        {"optimizer", 1.0014767395023902},
        {"params-all-gather", 1.0011307740825817},
        {"layernorm-grads-all-reduce", 1.0000026919173086},
        {"gc", 1.0},
        {"backward-pp-comm", 0.999992994223364},
        {"forward-pp-comm", 0.9998586213458615},
    };
    assert_int_equal(I->n_type, sizeof types / sizeof types[0]);
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++)
        near_rel(share(I->by_type, I->n_type, types[k].type, -1), types[k].s, 0.03, types[k].type);
    /* the stage the paper blames */
    assert_int_equal(I->blamed_stage, 3);
    /* ms-ST.json, mw-ST.json: within 0.05 absolute */
    printf("  M_S ours %.4f paper 1.2194; M_W ours %.4f paper 0.0314 (rank %d)\n", I->ms, I->mw, I->mw_rank);
    assert_true(I->has_ms && fabs(I->ms - 1.2193563788811714) <= 0.05);
    assert_true(I->has_mw && fabs(I->mw - 0.031404269124045224) <= 0.05);
    assert_int_equal(I->mw_stage, 3);
    assert_int_equal(I->mw_worker, 1);
    /* the means behind them: tori, tideal (ms-ST.json, seconds) */
    near_rel((double)I->nodelay_ns / 1e9, 2.172696813310722, 0.001, "no-delay mean step (tori)");
    near_rel((double)I->ideal_ns / 1e9, 1.843295824372035, 0.001, "ideal mean step (tideal)");
    st_html(c);
    mt_critpath_free(c);
    mt_tl_job_free(j);
    mt_timeline_free(tl);
}

/* A small timeline by hand: two DP ranks of one stage; one is slow. */
static const char two[] =
    "[{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":0,\"tid\":0,\"args\":{\"name\":\"PP rank 0, TP rank 0, compute\"}},\n"
    "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":0,\"tid\":1,\"args\":{\"name\":\"PP rank 0, TP rank 0, dp-comm\"}},\n"
    "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":2,\"args\":{\"name\":\"PP rank 0, TP rank 0, compute\"}},\n"
    "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":3,\"args\":{\"name\":\"PP rank 0, TP rank 0, dp-comm\"}},\n"
    "{\"name\":\"forward-compute\",\"ph\":\"X\",\"pid\":0,\"tid\":0,\"ts\":0,\"dur\":100,\"args\":{\"step\":1,\"seq_id\":0,\"mb_id\":0,\"model_chunk\":0}},\n"
    "{\"name\":\"forward-compute\",\"ph\":\"X\",\"pid\":1,\"tid\":2,\"ts\":0,\"dur\":300,\"args\":{\"step\":1,\"seq_id\":0,\"mb_id\":0,\"model_chunk\":0}},\n"
    "{\"name\":\"grads-reduce-scatter\",\"ph\":\"X\",\"pid\":0,\"tid\":1,\"ts\":100,\"dur\":210,\"args\":{\"step\":1,\"seq_id\":0}},\n"
    "{\"name\":\"grads-reduce-scatter\",\"ph\":\"X\",\"pid\":1,\"tid\":3,\"ts\":300,\"dur\":10,\"args\":{\"step\":1,\"seq_id\":0}},\n"
    "{\"name\":\"optimizer\",\"ph\":\"X\",\"pid\":0,\"tid\":0,\"ts\":310,\"dur\":50,\"args\":{\"step\":1,\"seq_id\":0}},\n"
    "{\"name\":\"optimizer\",\"ph\":\"X\",\"pid\":1,\"tid\":2,\"ts\":310,\"dur\":50,\"args\":{\"step\":1,\"seq_id\":0}}]\n";

static const char *write_tmp(const char *name, const char *text)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", MT_TEST_TMP, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

static void test_small(void **state)
{
    (void)state;
    mt_error_t err;
    mt_error_clear(&err);
    mt_timeline_t *tl = NULL;
    assert_int_equal(mt_timeline_load(write_tmp("tl_two.json", two), NULL, &tl, &err), MT_OK);
    assert_int_equal(tl->n_ops, 6);
    assert_int_equal(tl->dp_size, 2);
    mt_tl_job_t *j = NULL;
    assert_int_equal(mt_tl_job_build(tl, &j), MT_OK);
    assert_int_equal(j->collectives, 1);
    mt_critpath_t *c = ideal_run(j);
    const mt_cp_ideal_t *I = &c->ideal;
    /* measured (us): 300 + 10 + 50 = 360. Ideal: compute at the mean (200),
     * the reduce-scatter at the median transfer (10), optimizer 50: 260 */
    assert_int_equal(c->steps[0].time_ns, 360000);
    assert_int_equal(I->nodelay_ns, 360000);
    assert_int_equal(I->ideal_ns, 260000);
    /* worker 1 restored: 300 + 10 + 50; worker 0 restored: 200 + 10 + 50
     * (its 210 us reduce-scatter was waiting, its transfer is 10) */
    assert_int_equal((int64_t)(I->by_worker[1].s * 260 + 0.5), 360);
    assert_int_equal((int64_t)(I->by_worker[0].s * 260 + 0.5), 260);
    assert_int_equal(I->mw_rank, 1);
    mt_critpath_free(c);
    /* the program's call (mpi/timeline_run.c): the same hand-worked values */
    c = NULL;
    assert_int_equal(mt_tl_job_critpath(j, &c), MT_OK);
    assert_int_equal(c->steps[0].time_ns, 360000);
    assert_int_equal(c->ideal.ideal_ns, 260000);
    assert_int_equal(c->ideal.mw_rank, 1);
    /* its terminal summary (the program's with -o out): 2 ranks of one
     * stage, 6 operations, the reduce-scatter the one collective, no
     * send/recv; then the steps' lines as mt_report_steps_text writes them */
    mt_buf_t text = {0}, steps = {0};
    const char *path = write_tmp("tl_two.json", two);
    assert_int_equal(mt_report_timeline_text(path, tl, j, c, "out", true, mt_buf_write, &text), MT_OK);
    assert_int_equal(mt_report_steps_text(c, mt_buf_write, &steps), MT_OK);
    char head[600];
    snprintf(head, sizeof head,
             "%s: operation-level timeline, 2 ranks (DP 2 x PP 1 x TP 1), 6 operations, 0 send/recv pairs, "
             "1 collectives; no clock fit (one clock)\n",
             path);
    const char *tail = "wrote out/report.json and out/report.html\n";
    assert_int_equal(text.len, strlen(head) + steps.len + strlen(tail));
    assert_memory_equal(text.data, head, strlen(head));
    assert_memory_equal(text.data + strlen(head), steps.data, steps.len);
    assert_memory_equal(text.data + strlen(head) + steps.len, tail, strlen(tail));
    text.len = 0;
    assert_int_equal(mt_report_timeline_text(path, tl, j, NULL, "o", false, mt_buf_write, &text), MT_OK);
    assert_int_equal(text.len, strlen(head) + strlen("wrote o/report.json\n")); /* no steps, no report.html */
    assert_memory_equal(text.data + strlen(head), "wrote o/report.json\n", strlen("wrote o/report.json\n"));
    mt_buf_free(&text);
    mt_buf_free(&steps);
    mt_critpath_free(c);
    mt_tl_job_free(j);
    mt_timeline_free(tl);
}

/* More activities open at once than the ideal sweep's first pool of
 * slots (cp_ideal.c: 1024, doubled when full): 1200 DP ranks of one
 * stage, one forward-compute each, all from 0 (so all 1200 starts come
 * before any end); DP rank 0's takes 1300 us, the others' 100 us. No
 * dependency between ranks. Measured and no-delay step: 1300. Ideal:
 * every compute at the mean, (1300 + 1199 x 100) / 1200 = 101: step 101,
 * S = 1300 / 101. DP rank 0 restored: 1300 (S 1300 / 101); any other
 * restored: its 100 beside the others' 101: 101 (S 1). S per worker for
 * MT_CP_IDEAL_WORKERS (16) of the 1200: rank 0 (1200 us over its ideal),
 * then 1..15 (each 1 us under it: a tie, the lowest ids). */
#define WIDE_N 1200

static void test_wide(void **state)
{
    (void)state;
    mt_buf_t b = {0};
    char line[256];
    assert_int_equal(mt_buf_append(&b, "[", 1), MT_OK);
    for (int r = 0; r < WIDE_N; r++) {
        int n = snprintf(line, sizeof line,
                         "%s{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,"
                         "\"args\":{\"name\":\"PP rank 0, TP rank 0, compute\"}},\n"
                         "{\"name\":\"forward-compute\",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":0,\"dur\":%d,"
                         "\"args\":{\"step\":1,\"seq_id\":0,\"mb_id\":0,\"model_chunk\":0}}",
                         r ? "," : "", r, r, r, r, r ? 100 : 1300);
        assert_true(n > 0 && (size_t)n < sizeof line);
        assert_int_equal(mt_buf_append(&b, line, (size_t)n), MT_OK);
    }
    assert_int_equal(mt_buf_append(&b, "]\n", 3), MT_OK); /* with the NUL */
    mt_error_t err;
    mt_error_clear(&err);
    mt_timeline_t *tl = NULL;
    assert_int_equal(mt_timeline_load(write_tmp("tl_wide.json", (const char *)b.data), NULL, &tl, &err), MT_OK);
    mt_buf_free(&b);
    assert_int_equal(tl->n_ops, WIDE_N);
    assert_int_equal(tl->dp_size, WIDE_N);
    mt_tl_job_t *j = NULL;
    assert_int_equal(mt_tl_job_build(tl, &j), MT_OK);
    mt_critpath_t *c = ideal_run(j);
    const mt_cp_ideal_t *I = &c->ideal;
    assert_true(I->run);
    assert_int_equal(c->steps[0].time_ns, 1300000);
    assert_int_equal(I->nodelay_ns, 1300000);
    assert_int_equal(I->ideal_ns, 101000);
    assert_true(fabs(I->s - 1300.0 / 101) < 1e-9);
    assert_int_equal(I->n_worker_all, WIDE_N);
    assert_int_equal(I->n_worker, MT_CP_IDEAL_WORKERS);
    for (size_t k = 0; k < I->n_worker; k++) {
        assert_int_equal(I->by_worker[k].id, (int32_t)k);
        assert_true(fabs(I->by_worker[k].s - (k == 0 ? 1300.0 / 101 : 1.0)) < 1e-9);
    }
    assert_int_equal(I->mw_rank, 0);
    mt_critpath_free(c);
    mt_tl_job_free(j);
    mt_timeline_free(tl);
}

static void test_errors(void **state)
{
    (void)state;
    mt_error_t err;
    mt_timeline_t *tl = NULL;
    /* an operation without args.step: the loader names the event's byte */
    mt_error_clear(&err);
    const char *p = write_tmp("tl_nostep.json",
                              "[{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":0,\"tid\":0,\"args\":{\"name\":\"PP rank 0, TP rank 0, compute\"}},\n"
                              "{\"name\":\"forward-compute\",\"ph\":\"X\",\"pid\":0,\"tid\":0,\"ts\":0,\"dur\":1,\"args\":{\"seq_id\":0}}]");
    assert_int_equal(mt_timeline_load(p, NULL, &tl, &err), MT_ERR_FORMAT);
    assert_null(tl);
    assert_non_null(strstr(err.msg, "args.step"));
    assert_true(err.offset > 90);
    /* an operation on a thread without a name */
    mt_error_clear(&err);
    p = write_tmp("tl_noname.json", "[{\"name\":\"forward-compute\",\"ph\":\"X\",\"pid\":0,\"tid\":0,\"ts\":0,\"dur\":1,"
                                    "\"args\":{\"step\":1}}]");
    assert_int_equal(mt_timeline_load(p, NULL, &tl, &err), MT_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "thread_name"));
    /* the probe */
    assert_true(mt_timeline_probe(two, sizeof two - 1));
    assert_false(mt_timeline_probe("{\"traceEvents\":[]}", 18));
    /* the probe of a file: plain, gzip, a Kineto trace, a directory, none */
    assert_true(mt_timeline_probe_file(write_tmp("tl_probe.json", two)));
    size_t zl = 0;
    unsigned char *z = gzip_bytes(two, sizeof two - 1, &zl);
    char zp[600];
    snprintf(zp, sizeof zp, "%s/tl_probe.json.gz", MT_TEST_TMP);
    FILE *zf = fopen(zp, "wb");
    assert_non_null(zf);
    assert_int_equal(fwrite(z, 1, zl, zf), zl);
    fclose(zf);
    free(z);
    assert_true(mt_timeline_probe_file(zp));
    assert_false(mt_timeline_probe_file(write_tmp("tl_kineto.json", "{\"traceEvents\":[]}")));
    assert_false(mt_timeline_probe_file(MT_TEST_TMP));
    assert_false(mt_timeline_probe_file(MT_TEST_TMP "/tl_none.json"));
}

static void test_map(void **state)
{
    (void)state;
    mt_error_t err;
    mt_error_clear(&err);
    mt_timeline_map_t *m = NULL;
    const char *text = "# a framework's timer timeline\n"
                       "track ^stage ([0-9]+) dp ([0-9]+) gpu$ compute\n"
                       "type fwd forward-compute\n"
                       "arg iteration step\n";
    assert_int_equal(mt_timeline_map_parse(text, strlen(text), "m.txt", &m, &err), MT_OK);
    const char *tlx = "[{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":0,\"tid\":0,\"args\":{\"name\":\"stage 1 dp 0 gpu\"}},\n"
                      "{\"name\":\"fwd\",\"ph\":\"X\",\"pid\":0,\"tid\":0,\"ts\":0,\"dur\":5,\"args\":{\"iteration\":7}}]";
    mt_timeline_t *tl = NULL;
    assert_int_equal(mt_timeline_load(write_tmp("tl_map.json", tlx), m, &tl, &err), MT_OK);
    assert_int_equal(tl->n_ops, 1);
    assert_string_equal(tl->types[tl->ops[0].type], "forward-compute");
    assert_int_equal(tl->ops[0].step, 7);
    assert_int_equal(tl->ranks[0].stage, 1);
    assert_int_equal(tl->pp_size, 2);
    assert_int_equal(tl->ranks[0].rank, 1); /* (stage 1 * dp 1 + dp 0) * tp 1 */
    mt_timeline_free(tl);
    mt_timeline_map_free(m);
    /* a bad line: its line:col */
    mt_error_clear(&err);
    const char *bad = "type fwd forward-compute\ntrack x nowhere\n";
    assert_int_equal(mt_timeline_map_parse(bad, strlen(bad), "m.txt", &m, &err), MT_ERR_FORMAT);
    assert_int_equal(err.line, 2);
    assert_non_null(strstr(err.msg, "track <regex>"));
}

/* A sink that always fails, as a full disk would. */
static mt_status_t fail_write(void *ctx, const void *data, size_t len)
{
    (void)ctx;
    (void)data;
    (void)len;
    return MT_ERR_IO;
}

/* The program's whole path for a timeline (mt_tl_run): report.json the
 * bytes mt_report_timeline_json gives for the same job, report.html
 * beside it, the terminal lines those of mt_report_timeline_text; with
 * json only report.json into the sink; and the failures' lines. */
static void test_tl_run(void **state)
{
    (void)state;
    const char *path = write_tmp("tl_run.json", two);
    char dir[512], msg[1400], rp[600], hp[600];
    snprintf(dir, sizeof dir, "%s/tl_run_out", MT_TEST_TMP);
    snprintf(rp, sizeof rp, "%s/report.json", dir);
    snprintf(hp, sizeof hp, "%s/report.html", dir);
    remove(rp);
    remove(hp);
    /* the expected bytes, from the steps the program's path takes */
    mt_error_t err;
    mt_error_clear(&err);
    mt_timeline_t *tl = NULL;
    mt_tl_job_t *j = NULL;
    mt_critpath_t *c = NULL;
    assert_int_equal(mt_timeline_load(path, NULL, &tl, &err), MT_OK);
    assert_int_equal(mt_tl_job_build(tl, &j), MT_OK);
    assert_int_equal(mt_tl_job_critpath(j, &c), MT_OK);
    mt_buf_t want_json = {0}, want_text = {0}, got = {0};
    assert_int_equal(mt_report_timeline_json(path, tl, j, c, mt_buf_write, &want_json), MT_OK);
    assert_int_equal(mt_report_timeline_text(path, tl, j, c, dir, true, mt_buf_write, &want_text), MT_OK);
    mt_critpath_free(c);
    mt_tl_job_free(j);
    mt_timeline_free(tl);

    mt_tl_run_opts_t o = {.path = path, .out_dir = dir, .html = true};
    assert_int_equal(mt_tl_run(&o, mt_buf_write, &got, msg, sizeof msg), MT_OK);
    assert_string_equal(msg, "");
    size_t len = 0;
    char *file = read_file(rp, &len);
    assert_non_null(file);
    assert_int_equal(len, want_json.len);
    assert_memory_equal(file, want_json.data, len);
    free(file);
    file = read_file(hp, &len);
    assert_non_null(file);
    assert_non_null(strstr(file, "<html"));
    free(file);
    assert_int_equal(got.len, want_text.len);
    assert_memory_equal(got.data, want_text.data, got.len);

    /* --json: report.json into the sink, no file */
    got.len = 0;
    remove(rp);
    o.json = true;
    assert_int_equal(mt_tl_run(&o, mt_buf_write, &got, msg, sizeof msg), MT_OK);
    assert_int_equal(got.len, want_json.len);
    assert_memory_equal(got.data, want_json.data, got.len);
    assert_int_equal(access(rp, F_OK), -1);

    /* -q: the files, no lines */
    got.len = 0;
    o.json = false;
    o.quiet = true;
    assert_int_equal(mt_tl_run(&o, mt_buf_write, &got, msg, sizeof msg), MT_OK);
    assert_int_equal(got.len, 0);
    assert_int_equal(access(rp, F_OK), 0);

    /* a missing --timeline-map names the option and the file: I/O */
    char map[600];
    snprintf(map, sizeof map, "%s/no-such-map.json", MT_TEST_TMP);
    o.map_path = map;
    assert_int_equal(mt_tl_run(&o, mt_buf_write, &got, msg, sizeof msg), MT_ERR_IO);
    assert_non_null(strstr(msg, "--timeline-map"));
    assert_non_null(strstr(msg, "no-such-map.json"));
    o.map_path = NULL;

    /* an output directory under a file cannot be made */
    char bad[600];
    snprintf(bad, sizeof bad, "%s/report.json/sub", dir);
    o.out_dir = bad;
    assert_int_equal(mt_tl_run(&o, mt_buf_write, &got, msg, sizeof msg), MT_ERR_IO);
    char want[700];
    snprintf(want, sizeof want, "%s: cannot create the output directory (Not a directory)", bad);
    assert_string_equal(msg, want);

    /* a sink that fails: I/O, nothing to say (the program's stream check does) */
    o.out_dir = dir;
    o.quiet = false;
    assert_int_equal(mt_tl_run(&o, fail_write, NULL, msg, sizeof msg), MT_ERR_IO);
    assert_string_equal(msg, "");
    mt_buf_free(&want_json);
    mt_buf_free(&want_text);
    mt_buf_free(&got);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_st),
        cmocka_unit_test(test_small),
        cmocka_unit_test(test_tl_run),
        cmocka_unit_test(test_wide),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_map),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
