/* Pipeline analysis: the per-rank chunk pass on a hand-written trace, the
 * job numbers on hand-built per-rank results with a skewed clock (every
 * expected value worked out in the comments), stage parsing and inference
 * from point-to-point rows, and the gates. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mergetrace/analysis.h"
#include "mergetrace/gates.h"
#include "mergetrace/pipeline.h"
#include "mergetrace/report.h"
#include "test_util.h"
#include "report/sections.h"

#define US 1000

/* pid 10; threads 1 (main) and 2 (autograd); absolute integer us.
 *   ProfilerStep#3 tid 1 [0,99]    ProfilerStep#4 tid 1 [100,199]
 *   fwd            tid 1 [10,40]   fwd#7          tid 1 [105,115]
 * launches -> activities:
 *   L1 tid 1 @10  gemm s7 [50,80)
 *   L2 tid 2 @20  gemm s7 [70,120)           (autograd thread)
 *   L3 tid 1 @30  nccl SendRecv s20 [60,150)  (point-to-point)
 *   L4 tid 1 @110 gemm s7 [150,170)
 *   L5 tid 1 @120 nccl AllReduce s21 [160,200)
 * ProfilerStep#3 (any thread of pid 10): L1 L2 work, L3 P2P: busy |[50,120)|
 *   = 70, first 50, last 120, p2p 90, acts 2.
 * ProfilerStep#4: L4 L5: [150,200) = 50, first 150, last 200, p2p 0.
 * "^fwd" (own thread only): fwd [10,40] -> L1 (L2 is on tid 2), L3 P2P:
 *   busy 30, first 50, last 80, p2p 90, key -1, ordinal 0;
 *   fwd#7 [105,115] -> L4: busy 20, first 150, last 170, key 7, ordinal 1. */
static const char chunk_json[] =
    "{\"traceEvents\": [\n"
    "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#3\", \"pid\": 10, \"tid\": 1, \"ts\": 0, \"dur\": 99},\n"
    "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#4\", \"pid\": 10, \"tid\": 1, \"ts\": 100, \"dur\": 99},\n"
    "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"fwd\", \"pid\": 10, \"tid\": 1, \"ts\": 10, \"dur\": 30},\n"
    "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"fwd#7\", \"pid\": 10, \"tid\": 1, \"ts\": 105, \"dur\": 10},\n"
    "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 10, \"tid\": 1, \"ts\": 10, \"dur\": 1,"
    " \"args\": {\"correlation\": 1}},\n"
    "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 10, \"tid\": 2, \"ts\": 20, \"dur\": 1,"
    " \"args\": {\"correlation\": 2}},\n"
    "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 10, \"tid\": 1, \"ts\": 30, \"dur\": 1,"
    " \"args\": {\"correlation\": 3}},\n"
    "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 10, \"tid\": 1, \"ts\": 110, \"dur\": 1,"
    " \"args\": {\"correlation\": 4}},\n"
    "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 10, \"tid\": 1, \"ts\": 120, \"dur\": 1,"
    " \"args\": {\"correlation\": 5}},\n"
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm\", \"pid\": 0, \"tid\": 7, \"ts\": 50, \"dur\": 30,"
    " \"args\": {\"correlation\": 1}},\n"
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm\", \"pid\": 0, \"tid\": 7, \"ts\": 70, \"dur\": 50,"
    " \"args\": {\"correlation\": 2}},\n"
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)\","
    " \"pid\": 0, \"tid\": 20, \"ts\": 60, \"dur\": 90, \"args\": {\"correlation\": 3}},\n"
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm\", \"pid\": 0, \"tid\": 7, \"ts\": 150, \"dur\": 20,"
    " \"args\": {\"correlation\": 4}},\n"
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)\","
    " \"pid\": 0, \"tid\": 21, \"ts\": 160, \"dur\": 40, \"args\": {\"correlation\": 5}}\n"
    "]}\n";

static void check_chunk(const mt_pp_chunk_t *c, uint32_t marker, uint32_t ordinal, int64_t key, int64_t busy,
                        int64_t first, int64_t last, int64_t p2p, uint32_t acts)
{
    assert_int_equal(c->marker, marker);
    assert_int_equal(c->ordinal, ordinal);
    assert_int_equal(c->key, key);
    assert_int_equal(c->busy_ns, busy * US);
    assert_int_equal(c->first_ns, first * US);
    assert_int_equal(c->last_ns, last * US);
    assert_int_equal(c->p2p_ns, p2p * US);
    assert_int_equal(c->acts, acts);
}

static void test_chunk_pass(void **state)
{
    (void)state;
    mt_trace_t *t = load_str(chunk_json);
    const char *re[] = {"^fwd"};
    mt_pp_markers_t *mk = NULL;
    mt_error_t err;
    mt_error_clear(&err);
    assert_int_equal(mt_pp_markers_compile(NULL, re, 1, NULL, NULL, &mk, &err), MT_OK);
    assert_int_equal(mt_pp_markers_count(mk), 2);
    mt_analysis_opts_t o;
    mt_analysis_opts_init(&o);
    o.markers = mk;
    mt_rank_analysis_t *a = NULL;
    assert_int_equal(mt_analyze_rank(t, 0, &o, &a), MT_OK);
    assert_int_equal(a->n_chunks, 4);
    check_chunk(&a->chunks[0], 0, 0, 3, 70, 50, 120, 90, 2);
    check_chunk(&a->chunks[1], 0, 1, 4, 50, 150, 200, 0, 2);
    check_chunk(&a->chunks[2], 1, 0, -1, 30, 50, 80, 90, 1);
    check_chunk(&a->chunks[3], 1, 1, 7, 20, 150, 170, 0, 1);

    /* The chunks survive packing. */
    void *bytes = NULL;
    size_t len = 0;
    assert_int_equal(mt_rank_analysis_pack(a, &bytes, &len), MT_OK);
    mt_rank_analysis_t *b = NULL;
    assert_int_equal(mt_rank_analysis_unpack(bytes, len, &b, NULL), MT_OK);
    assert_int_equal(b->n_chunks, 4);
    assert_memory_equal(a->chunks, b->chunks, 4 * sizeof *a->chunks);
    free(bytes);
    mt_rank_analysis_free(b);
    mt_rank_analysis_free(a);

    /* A collective record saying the SendRecv kernel is an all_to_all makes
     * it work: ProfilerStep#3 busy |[50,150)| = 100, no P2P. */
    mt_cinst_t row;
    memset(&row, 0, sizeof row);
    row.rank = 0;
    row.start_ns = 60 * US;
    row.end_ns = 150 * US;
    row.stream = 20;
    row.kind = MT_COLLK_ALLTOALL;
    o.rows = &row;
    o.n_rows = 1;
    assert_int_equal(mt_analyze_rank(t, 0, &o, &a), MT_OK);
    check_chunk(&a->chunks[0], 0, 0, 3, 100, 50, 150, 0, 3);
    mt_rank_analysis_free(a);

    /* A stage marker limited to other ranks is skipped on this one. */
    mt_pp_markers_free(mk);
    int32_t only[] = {4, 5};
    const int32_t *rs[] = {only};
    size_t nrs[] = {2};
    assert_int_equal(mt_pp_markers_compile("^fwd", re, 1, rs, nrs, &mk, &err), MT_OK);
    o.markers = mk;
    o.rows = NULL;
    o.n_rows = 0;
    assert_int_equal(mt_analyze_rank(t, 0, &o, &a), MT_OK);
    assert_int_equal(a->n_chunks, 2); /* --chunk ^fwd on every rank; the stage marker not on rank 0 */
    check_chunk(&a->chunks[0], 0, 0, -1, 30, 50, 80, 90, 1);
    mt_rank_analysis_free(a);
    mt_pp_markers_free(mk);

    assert_int_equal(mt_pp_markers_compile("(", NULL, 0, NULL, NULL, &mk, &err), MT_ERR_USAGE);
    assert_null(mk);
    assert_non_null(strstr(err.msg, "bad regular expression"));
    mt_trace_free(t);
}

/* A per-rank result holding only chunks. */
static mt_rank_analysis_t *fake(int32_t rank, const mt_pp_chunk_t *c, size_t n)
{
    mt_rank_analysis_t *a = calloc(1, sizeof *a);
    assert_non_null(a);
    a->rank = rank;
    a->chunks = malloc(n * sizeof *c);
    assert_non_null(a->chunks);
    memcpy(a->chunks, c, n * sizeof *c);
    a->n_chunks = n;
    return a;
}

static mt_pp_chunk_t ch(int64_t key, uint32_t ord, int64_t busy, int64_t first, int64_t last)
{
    return (mt_pp_chunk_t){.key = key, .busy_ns = busy, .first_ns = first, .last_ns = last, .ordinal = ord, .acts = 1};
}

/* Stage 0 = ranks 0 (leader) and 1; stage 1 = rank 2, whose clock reads
 * 1 ms ahead (corrected = raw - 1e6). Chunks 5, 6, 7 (ns):
 *   rank 0: busy 400 420 380, work [1000,1500] [1500,2000] [2000,2500]
 *   rank 1: busy 450 410 500
 *   rank 2: busy 300 350 330, last (raw) 1001800 1002300 1002900
 * emit = 1800 2300 2900; period(6) = 500, period(7) = 600.
 * chunk 6: sum 770, max 420, den 350, hidden 270, score 0.771428...
 * chunk 7: sum 710, max 380, den 330, hidden 110, score 0.333...
 * summary (warm-up 1: chunks 6, 7): period p50 500, p90 600, p99 600,
 *   mean round(550) = 550 (half up of 550.0); OverlapScore 380 / 680;
 *   stage 0 busy p50 380, mean round(400) = 400; stage 1 p50 330, mean 340;
 *   stage 0 slowest rank: 420, 500 -> p50 420, mean 460; bubble stage 0
 *   (1100 - 800) / 1100 = 27.27 %, stage 1 (1100 - 680) / 1100 = 38.18 %;
 *   critical stage 0; spikes: chunk 7 (600 >= p99 and > p50).
 * latency = emit - corrected first of stage 0's leader: 800, 800, 900 ->
 *   p50 800, p99 900 over chunks 6, 7; raw (no correction): 1000800,
 *   1000900 -> p50 1000800. Raw periods are the same (one rank's clock). */
static void test_pipeline_hand(void **state)
{
    (void)state;
    mt_pp_chunk_t c0[] = {ch(5, 0, 400, 1000, 1500), ch(6, 1, 420, 1500, 2000), ch(7, 2, 380, 2000, 2500)};
    mt_pp_chunk_t c1[] = {ch(5, 0, 450, 1000, 1600), ch(6, 1, 410, 1500, 2000), ch(7, 2, 500, 2000, 2500)};
    mt_pp_chunk_t c2[] = {ch(5, 0, 300, 1001400, 1001800), ch(6, 1, 350, 1001900, 1002300),
                          ch(7, 2, 330, 1002400, 1002900)};
    mt_rank_analysis_t *an[3] = {fake(0, c0, 3), fake(1, c1, 3), fake(2, c2, 3)};
    mt_clock_t clk[3];
    memset(clk, 0, sizeof clk);
    for (int i = 0; i < 3; i++)
        clk[i].rank = i;
    clk[2].offset_ns = -1e6;
    mt_pp_stages_t st;
    mt_error_t err;
    mt_error_clear(&err);
    assert_int_equal(mt_pp_stages_parse("0-1,2", &st, &err), MT_OK);
    mt_pp_opts_t po = {.warmup = 1};
    mt_pipeline_t *p = NULL;
    assert_int_equal(mt_pipeline_analyze(&st, &po, (const mt_rank_analysis_t *const *)an, 3, clk, 3, &p), MT_OK);
    assert_int_equal(st.n, 0); /* taken over */
    assert_int_equal(p->n_chunks, 3);
    assert_true(p->by_key);
    assert_int_equal(p->unmatched, 0);
    assert_int_equal(p->emit_ns[0], 1800);
    assert_int_equal(p->emit_ns[2], 2900);
    assert_int_equal(p->period_ns[0], -1);
    assert_int_equal(p->period_ns[1], 500);
    assert_int_equal(p->period_ns[2], 600);
    assert_int_equal(p->hidden_ns[1], 270);
    assert_int_equal(p->hidden_ns[2], 110);
    assert_true(fabs(p->score[1] - 270.0 / 350.0) < 1e-12);
    assert_true(fabs(p->score[2] - 110.0 / 330.0) < 1e-12);
    assert_int_equal(p->stage_max_ns[2 * 2 + 0], 500);
    assert_int_equal(p->sum.used, 2);
    assert_int_equal(p->sum.period_p50_ns, 500);
    assert_int_equal(p->sum.period_p90_ns, 600);
    assert_int_equal(p->sum.period_p99_ns, 600);
    assert_int_equal(p->sum.period_mean_ns, 550);
    assert_true(fabs(p->sum.overlap_score - 380.0 / 680.0) < 1e-12);
    assert_int_equal(p->stage_sum[0].busy_p50_ns, 380);
    assert_int_equal(p->stage_sum[0].busy_mean_ns, 400);
    assert_int_equal(p->stage_sum[1].busy_p50_ns, 330);
    assert_int_equal(p->stage_sum[1].busy_mean_ns, 340);
    assert_int_equal(p->stage_sum[0].max_p50_ns, 420);
    assert_int_equal(p->stage_sum[0].max_mean_ns, 460);
    assert_true(fabs(p->stage_sum[0].bubble_pct - 300.0 * 100 / 1100) < 1e-9);
    assert_true(fabs(p->stage_sum[1].bubble_pct - 420.0 * 100 / 1100) < 1e-9);
    assert_int_equal(p->critical_stage, 0);
    assert_int_equal(p->n_spikes, 1);
    assert_int_equal(p->key[p->spikes[0]], 7);
    assert_int_equal(p->latency_ns[1], 800);
    assert_int_equal(p->sum.latency_p50_ns, 800);
    assert_int_equal(p->sum.latency_p99_ns, 900);
    assert_int_equal(p->raw.latency_p50_ns, 1000800);
    assert_int_equal(p->raw.period_p50_ns, 500);
    char v[256];
    mt_pipeline_verdict(p, v, sizeof v);
    assert_string_equal(v, "period 0.00 ms between stage0 (0.00 ms) and the sum of the stages; OverlapScore 0.56 -- "
                           "partly overlapped");

    /* report.json section: valid numbers where the hand values say. */
    mt_buf_t b = {0};
    assert_int_equal(mt_report_pipeline_json(p, mt_buf_write, &b), MT_OK);
    assert_int_equal(mt_buf_write(&b, "", 1), MT_OK);
    const char *j = (const char *)b.data;
    assert_non_null(strstr(j, "\"stages\": [[0, 1], [2]]"));
    assert_non_null(strstr(j, "\"overlap_score\": 0.5588"));
    assert_non_null(strstr(j, "\"period_us\": {\"p50\": 0.500, \"p90\": 0.600, \"p99\": 0.600, \"mean\": 0.550}"));
    assert_non_null(strstr(j, "\"latency_raw_us\": 1000.800"));
    mt_buf_free(&b);
    mt_pipeline_free(p);

    /* Without a #N on stage 1's leader, chunks pair by order; with one
     * fewer chunk there, two pair and one range is left over. */
    an[2]->chunks[0].key = -1;
    an[2]->n_chunks = 2;
    assert_int_equal(mt_pp_stages_parse("0-1,2", &st, &err), MT_OK);
    assert_int_equal(mt_pipeline_analyze(&st, &po, (const mt_rank_analysis_t *const *)an, 3, clk, 3, &p), MT_OK);
    assert_false(p->by_key);
    assert_int_equal(p->n_chunks, 2);
    assert_int_equal(p->unmatched, 1);
    assert_int_equal(p->period_ns[1], 500);
    mt_pipeline_free(p);
    for (int i = 0; i < 3; i++)
        mt_rank_analysis_free(an[i]);
}

static void test_stage_parsing(void **state)
{
    (void)state;
    mt_pp_stages_t s;
    mt_error_t err;
    mt_error_clear(&err);
    assert_int_equal(mt_pp_stages_parse("0-3,4-7", &s, &err), MT_OK);
    assert_int_equal(s.n, 2);
    assert_int_equal(s.first[1], 4);
    assert_int_equal(s.ranks[4], 4);
    assert_string_equal(s.name[1], "stage1");
    mt_pp_stages_free(&s);
    assert_int_equal(mt_pp_stages_parse("2+0,3+1", &s, &err), MT_OK);
    assert_int_equal(s.ranks[0], 0); /* sorted within a stage: the leader first */
    assert_int_equal(s.ranks[1], 2);
    assert_int_equal(s.ranks[2], 1);
    mt_pp_stages_free(&s);
    static const char *bad[] = {"0-3", "", "0-3,3-4", "a,b", "3-1,4", "0,,1", "0-3;4-7", "99999999999,1"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        mt_error_clear(&err);
        assert_int_equal(mt_pp_stages_parse(bad[i], &s, &err), MT_ERR_USAGE);
        assert_true(err.msg[0] != '\0');
        assert_null(s.ranks);
    }
    int32_t *r = NULL;
    size_t n = 0;
    assert_int_equal(mt_pp_ranks_parse("5,0-2,1", &r, &n, &err), MT_OK);
    assert_int_equal(n, 4);
    assert_int_equal(r[0], 0);
    assert_int_equal(r[3], 5);
    free(r);
    int32_t ranks[] = {0, 1, 2, 3, 4, 5};
    assert_int_equal(mt_pp_stages_blocks(ranks, 6, 3, &s, &err), MT_OK);
    assert_int_equal(s.n, 3);
    assert_int_equal(s.first[2], 4);
    mt_pp_stages_free(&s);
    assert_int_equal(mt_pp_stages_blocks(ranks, 6, 4, &s, &err), MT_ERR_USAGE);
}

static mt_cinst_t p2p_row(int32_t rank, int kind, int64_t peer, int64_t start)
{
    mt_cinst_t r;
    memset(&r, 0, sizeof r);
    r.rank = rank;
    r.kind = (uint8_t)kind;
    r.peer = peer;
    r.start_ns = start;
    r.end_ns = start + 10;
    return r;
}

/* Ranks 0,1 -> 2,3 -> 4,5 forward (sends and matching recvs) and as many
 * backward transfers later: the tie goes to the earliest transfer, so the
 * forward direction wins. Rank 6 sends nothing: in no stage. */
static void test_stage_inference(void **state)
{
    (void)state;
    mt_cinst_t rows[24];
    size_t n = 0;
    for (int i = 0; i < 2; i++) {
        rows[n++] = p2p_row(i, MT_COLLK_SEND, i + 2, 100);
        rows[n++] = p2p_row(i + 2, MT_COLLK_RECV, i, 100);
        rows[n++] = p2p_row(i + 2, MT_COLLK_SEND, i + 4, 200);
        rows[n++] = p2p_row(i + 4, MT_COLLK_RECV, i + 2, 200);
        /* backward, later */
        rows[n++] = p2p_row(i + 4, MT_COLLK_SEND, i + 2, 300);
        rows[n++] = p2p_row(i + 2, MT_COLLK_RECV, i + 4, 300);
        rows[n++] = p2p_row(i + 2, MT_COLLK_SEND, i, 400);
        rows[n++] = p2p_row(i, MT_COLLK_RECV, i + 2, 400);
    }
    rows[n++] = p2p_row(6, MT_COLLK_ALLREDUCE, -1, 50);
    mt_pp_stages_t s;
    assert_int_equal(mt_pp_stages_infer(tu_crows(rows, n), n, NULL, 0, &s), MT_OK);
    assert_int_equal(s.n, 3);
    assert_int_equal(s.source, MT_PP_FROM_P2P);
    int32_t want[] = {0, 1, 2, 3, 4, 5};
    assert_memory_equal(s.ranks, want, sizeof want);
    assert_int_equal(s.first[1], 2);
    assert_int_equal(s.first[2], 4);
    mt_pp_stages_free(&s);
    /* One more 4 -> 2 and 5 -> 3 transfer each turns pairs (2, 4) and
     * (3, 5) around (3 transfers against 2): 4 and 5 then feed 2 and 3 like
     * 0 and 1 do, so the layers are {0, 1, 4, 5} and {2, 3}. */
    rows[n++] = p2p_row(4, MT_COLLK_SEND, 2, 500);
    rows[n++] = p2p_row(5, MT_COLLK_SEND, 3, 500);
    assert_int_equal(mt_pp_stages_infer(tu_crows(rows, n), n, NULL, 0, &s), MT_OK);
    assert_int_equal(s.n, 2);
    int32_t want2[] = {0, 1, 4, 5, 2, 3};
    assert_memory_equal(s.ranks, want2, sizeof want2);
    mt_pp_stages_free(&s);
    /* A ring 0 -> 1 -> 2 -> 0 has no stage order. */
    mt_cinst_t ring[] = {p2p_row(0, MT_COLLK_SEND, 1, 1), p2p_row(1, MT_COLLK_SEND, 2, 2),
                         p2p_row(2, MT_COLLK_SEND, 0, 3)};
    assert_int_equal(mt_pp_stages_infer(tu_crows(ring, 3), 3, NULL, 0, &s), MT_OK);
    assert_int_equal(s.n, 0);
    /* No P2P at all: no pipeline. */
    assert_int_equal(mt_pp_stages_infer(tu_crows(rows + 16, 1), 1, NULL, 0, &s), MT_OK);
    assert_int_equal(s.n, 0);
}

static mt_cinst_t blind_row(int32_t rank, int kind, int64_t end)
{
    mt_cinst_t r = p2p_row(rank, kind, -1, end - 300);
    r.end_ns = end;
    return r;
}

/* Send/recv kernels that name no peer (old traces), paired by their ends. */
static void test_stage_inference_ends(void **state)
{
    (void)state;
    char why[512];
    mt_pp_stages_t s;
    /* 2 stages of 2 ranks, 6 chunks 4 ms apart: ranks 0 and 1 send, 2 and
     * 3 receive; the four ends of chunk k within 3 us of 4 ms * k. Every
     * kernel's candidates are the other stage's two ranks (all within the
     * 20 us window), so every pair (0,2) (0,3) (1,2) (1,3) gets 12 votes,
     * the median: stages {0,1} -> {2,3}. */
    mt_cinst_t rows[64];
    size_t n = 0;
    for (int k = 0; k < 6; k++) {
        int64_t t = 1000000 + 4000000 * (int64_t)k;
        rows[n++] = blind_row(0, MT_COLLK_SEND, t);
        rows[n++] = blind_row(1, MT_COLLK_SEND, t + 3000);
        rows[n++] = blind_row(2, MT_COLLK_RECV, t + 1000);
        rows[n++] = blind_row(3, MT_COLLK_RECV, t + 2000);
    }
    rows[n++] = p2p_row(0, MT_COLLK_ALLREDUCE, -1, 50);
    strcpy(why, "untouched");
    assert_int_equal(mt_pp_stages_infer_ends(tu_crows(rows, n), n, NULL, 0, &s, why, sizeof why), MT_OK);
    assert_int_equal(s.n, 2);
    assert_int_equal(s.source, MT_PP_FROM_P2P_ENDS);
    assert_string_equal(mt_pp_source_str(s.source), "p2p-ends");
    int32_t want[] = {0, 1, 2, 3};
    assert_memory_equal(s.ranks, want, sizeof want);
    assert_int_equal(s.first[1], 2);
    assert_string_equal(why, "stages inferred from the ends of 24 send/recv kernels that name no peer (no collective "
                             "metadata): 12 of 12 sends and 12 of 12 receives end with one on another rank; "
                             "--pp-stages overrides");
    mt_pp_stages_free(&s);

    /* The receivers' clocks 5 ms ahead: on raw times no end meets another;
     * the clocks that take the 5 ms off (and a residual p99 of 2 us, which
     * widens the window to 24 us) bring back the same stages. */
    for (size_t i = 0; i < n; i++)
        if (rows[i].rank >= 2)
            rows[i].end_ns += 5000000;
    assert_int_equal(mt_pp_stages_infer_ends(tu_crows(rows, n), n, NULL, 0, &s, why, sizeof why), MT_OK);
    assert_int_equal(s.n, 0);
    assert_string_equal(why, "24 send/recv kernels name no peer (no collective metadata), and only 0 of 12 sends and 0 "
                             "of 12 receives end together with one on another rank (within 20 us after alignment; a "
                             "transfer's two kernels end together, so the clocks of their ranks may be off: their "
                             "pairs could not be told before alignment, and their collectives were matched by stream "
                             "order alone): pipeline stages cannot be inferred; --pp-stages names them");
    mt_clock_t clk[4];
    memset(clk, 0, sizeof clk);
    for (int r = 0; r < 4; r++) {
        clk[r].rank = r;
        clk[r].connected = true;
        clk[r].offset_ns = r >= 2 ? -5000000 : 0;
        clk[r].residual_p99_ns = 2000;
    }
    assert_int_equal(mt_pp_stages_infer_ends(tu_crows(rows, n), n, clk, 4, &s, why, sizeof why), MT_OK);
    assert_int_equal(s.n, 2);
    assert_memory_equal(s.ranks, want, sizeof want);
    mt_pp_stages_free(&s);

    /* A chain 0 -> 1 -> 2 of one rank each, 8 chunks: the 0 -> 1 transfer
     * ends at 4 ms * k, the 1 -> 2 one 2 ms later. Once (chunk 3) a 1 -> 2
     * transfer ends 10 us after a 0 -> 1 one: the send on 0 and the receive
     * on 2 then have two candidates, and pair (0,2) 2 votes against the
     * median 16 (under a quarter): chance, left out; 3 stages. */
    n = 0;
    for (int k = 0; k < 8; k++) {
        int64_t t = 1000000 + 4000000 * (int64_t)k;
        int64_t u = k == 3 ? t + 10000 : t + 2000000;
        rows[n++] = blind_row(0, MT_COLLK_SEND, t);
        rows[n++] = blind_row(1, MT_COLLK_RECV, t + 1000);
        rows[n++] = blind_row(1, MT_COLLK_SEND, u);
        rows[n++] = blind_row(2, MT_COLLK_RECV, u);
    }
    assert_int_equal(mt_pp_stages_infer_ends(tu_crows(rows, n), n, NULL, 0, &s, why, sizeof why), MT_OK);
    assert_int_equal(s.n, 3);
    int32_t chain[] = {0, 1, 2};
    assert_memory_equal(s.ranks, chain, sizeof chain);
    mt_pp_stages_free(&s);

    /* The same at every chunk: each 0 -> 1 transfer ends with a 1 -> 2 one.
     * Votes (0,1) (0,2) (1,2) 16 each; the layers 0, 1, 2 come out, but
     * the send on 0 and the receive on 2 (16 of the 32 paired kernels)
     * end with kernels of two stages: the data may have gone 0 -> 2, the
     * order is not settled, refused. */
    for (size_t i = 0; i < n; i++)
        if (rows[i].rank == 2 || (rows[i].rank == 1 && rows[i].kind == MT_COLLK_SEND))
            rows[i].end_ns = 1000000 + 4000000 * (int64_t)(i / 4) + 10000;
    assert_int_equal(mt_pp_stages_infer_ends(tu_crows(rows, n), n, NULL, 0, &s, why, sizeof why), MT_OK);
    assert_int_equal(s.n, 0);
    assert_string_equal(why, "32 send/recv kernels name no peer (no collective metadata); 16 of the 32 kernels their "
                             "ends pair end together with kernels of more than one other stage, so which way the data "
                             "went is not settled: pipeline stages cannot be inferred; --pp-stages names them");

    /* Ends that meet in a ring 0 -> 1 -> 2 -> 0: no order. */
    n = 0;
    for (int k = 0; k < 4; k++) {
        int64_t t = 1000000 + 6000000 * (int64_t)k;
        for (int r = 0; r < 3; r++) {
            rows[n++] = blind_row(r, MT_COLLK_SEND, t + 2000000 * r);
            rows[n++] = blind_row((r + 1) % 3, MT_COLLK_RECV, t + 2000000 * r);
        }
    }
    assert_int_equal(mt_pp_stages_infer_ends(tu_crows(rows, n), n, NULL, 0, &s, why, sizeof why), MT_OK);
    assert_int_equal(s.n, 0);
    assert_non_null(strstr(why, "make no chain of stages"));

    /* SendRecv kernels (no send / recv record): no direction. */
    n = 0;
    for (int k = 0; k < 4; k++) {
        rows[n++] = blind_row(0, MT_COLLK_SENDRECV, 1000000 * (k + 1));
        rows[n++] = blind_row(1, MT_COLLK_SENDRECV, 1000000 * (k + 1));
    }
    assert_int_equal(mt_pp_stages_infer_ends(tu_crows(rows, n), n, NULL, 0, &s, why, sizeof why), MT_OK);
    assert_int_equal(s.n, 0);
    assert_string_equal(why, "8 send/recv kernels name no peer (no collective metadata) and their records do not say "
                             "which way the data went (send or recv): pipeline stages cannot be inferred; "
                             "--pp-stages names them");
    /* All on one rank (a trace run alone). */
    assert_int_equal(mt_pp_stages_infer_ends(tu_crows(rows, 1), 1, NULL, 0, &s, why, sizeof why), MT_OK);
    assert_int_equal(s.n, 0);
    assert_string_equal(why, "1 send/recv kernels name no peer (no collective metadata), all on rank 0 (no other "
                             "rank's trace has any): pipeline stages cannot be inferred; --pp-stages names them");
    /* No blind row: nothing said. */
    strcpy(why, "untouched");
    rows[0] = p2p_row(0, MT_COLLK_SEND, 1, 100);
    assert_int_equal(mt_pp_stages_infer_ends(tu_crows(rows, 1), 1, NULL, 0, &s, why, sizeof why), MT_OK);
    assert_int_equal(s.n, 0);
    assert_string_equal(why, "untouched");
}

/* The line a failed gate is said with (mt_gate_failure): a passed gate
 * has none; the three forms, numbers as %.6g. */
static void test_gate_failure(void **state)
{
    (void)state;
    mt_gate_t g;
    mt_error_t err;
    mt_error_clear(&err);
    char line[300];
    assert_int_equal(mt_gate_parse("idle_pct<10", &g, &err), MT_OK);
    g.measured = true;
    g.value = 12.3456789;
    g.pass = true;
    assert_null(mt_gate_failure(&g, line, sizeof line));
    g.pass = false;
    assert_ptr_equal(mt_gate_failure(&g, line, sizeof line), line);
    assert_string_equal(line, "gate failed: idle_pct<10 (value 12.3457)");
    g.measured = false;
    g.why = "no GPU activity";
    assert_string_equal(mt_gate_failure(&g, line, sizeof line), "gate failed: idle_pct<10 (not measured: no GPU activity)");
    assert_int_equal(mt_gate_parse("step_p50_us<=1.05*baseline", &g, &err), MT_OK);
    g.measured = true;
    g.value = 1100;
    g.has_baseline = true;
    g.baseline = 1000;
    g.pass = false;
    assert_string_equal(mt_gate_failure(&g, line, sizeof line),
                        "gate failed: step_p50_us<=1.05*baseline (value 1100, baseline 1000)");
    assert_string_equal(mt_gate_failure(&g, line, 20), "gate failed: step_p"); /* cut to fit */
}

static void test_gates(void **state)
{
    (void)state;
    mt_gate_t g[6];
    mt_error_t err;
    mt_error_clear(&err);
    assert_int_equal(mt_gate_parse("overlap>=0.30", &g[0], &err), MT_OK);
    assert_int_equal(g[0].metric, MT_GATE_OVERLAP);
    assert_int_equal(g[0].op, MT_GATE_GE);
    assert_true(g[0].threshold == 0.30);
    assert_int_equal(mt_gate_parse(" period_p99_us <= 5000 ", &g[1], &err), MT_OK);
    assert_int_equal(g[1].op, MT_GATE_LE);
    assert_int_equal(mt_gate_parse("idle_pct<10", &g[2], &err), MT_OK);
    assert_int_equal(g[2].op, MT_GATE_LT);
    assert_int_equal(mt_gate_parse("alignment_p99_us<=2", &g[3], &err), MT_OK);
    assert_int_equal(mt_gate_parse("straggler_wait_pct<=50", &g[4], &err), MT_OK);
    assert_int_equal(mt_gate_parse("idle_pct==25", &g[5], &err), MT_OK);
    /* The OverlapScore's own name; "overlap" above is its old alias. */
    mt_gate_t y;
    assert_int_equal(mt_gate_parse("pipeline_overlap_score>=1", &y, &err), MT_OK);
    assert_int_equal(y.metric, MT_GATE_OVERLAP);
    assert_string_equal(mt_gate_metric_str(y.metric), "pipeline_overlap_score");
    assert_int_equal(mt_gate_parse("straggler_wait_pct<=100", &y, &err), MT_OK);
    assert_int_equal(mt_gate_parse("idle_pct>=0", &y, &err), MT_OK);
    static const char *bad[] = {"overlap", "overlap=>1", "speed>=1", "overlap>=", "overlap>=1x", "overlap>=nan",
                                ">=1", "overlap>=1e999",
                                /* out of range: a percentage for the 0..1 score, a share above 100 %, a
                                 * negative time */
                                "overlap>=30", "pipeline_overlap_score>=1.01", "pipeline_overlap_score>-0.1",
                                "idle_pct<=101", "straggler_wait_pct<-1", "period_p99_us<=-5",
                                "alignment_p99_us<-0.001"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        mt_gate_t x;
        assert_int_equal(mt_gate_parse(bad[i], &x, &err), MT_ERR_USAGE);
    }
    assert_int_equal(mt_gate_parse("overlap>=30", &y, &err), MT_ERR_USAGE);
    assert_string_equal(err.msg, "\"overlap>=30\": pipeline_overlap_score is a score from 0 to 1; 30 is out of "
                                 "range (a percentage? write it as a fraction)");
    /* Values: a pipeline with OverlapScore 0.5 and period p99 4000 ns;
     * ranks idle 10 of 40 (25 %) and 5 of 50 (10 %): idle_pct = 25; clocks
     * p99 1500 and 3000 ns, the second fitted: 3 us (and a rank with no
     * matched instance does not count); wait 1 of 4 and 3 of 4 -> 75 %. */
    mt_pipeline_t p;
    memset(&p, 0, sizeof p);
    p.sum.used = 3;
    p.sum.overlap_score = 0.5;
    p.sum.period_p99_ns = 4000;
    mt_rank_analysis_t a0 = {.span_ns = 40, .idle_ns = 10}, a1 = {.span_ns = 50, .idle_ns = 5};
    const mt_rank_analysis_t *an[] = {&a0, &a1};
    mt_clock_t clk[3];
    memset(clk, 0, sizeof clk);
    clk[0].matched = 4;
    clk[0].residual_p99_ns = 1500;
    clk[1].matched = 4;
    clk[1].residual_p99_ns = 3000;
    clk[2].residual_p99_ns = 9e9;
    mt_cross_rank_t cr[2];
    memset(cr, 0, sizeof cr);
    cr[0].kernels = 2;
    cr[0].kernel_wait_ns = 1;
    cr[0].kernel_transfer_ns = 3;
    cr[1].kernels = 2;
    cr[1].kernel_wait_ns = 3;
    cr[1].kernel_transfer_ns = 1;
    mt_cross_t x;
    memset(&x, 0, sizeof x);
    x.ranks = cr;
    x.n_ranks = 2;
    mt_gate_inputs_t in = {.pipeline = &p, .cross = &x, .analyses = an, .n_analyses = 2, .clocks = clk,
                           .n_clocks = 3, .aligned = true};
    /* overlap 0.5 >= 0.3 pass; period 4 us <= 5000 pass; idle 25 < 10 fail;
     * alignment 3 <= 2 fail; wait 75 <= 50 fail; idle == 25 pass. */
    assert_int_equal(mt_gates_eval(g, 6, &in), 3);
    assert_true(g[0].pass && g[1].pass && !g[2].pass && !g[3].pass && !g[4].pass && g[5].pass);
    assert_true(g[1].value == 4.0);
    assert_true(g[3].value == 3.0);
    assert_true(g[4].value == 75.0);
    /* Nothing to measure: every gate fails, with a reason. */
    mt_gate_inputs_t none = {0};
    assert_int_equal(mt_gates_eval(g, 6, &none), 6);
    assert_false(g[0].measured);
    assert_string_equal(g[0].why, "no pipeline in this job");
    mt_buf_t b = {0};
    assert_int_equal(mt_report_gates_json(g, 1, mt_buf_write, &b), MT_OK);
    assert_int_equal(mt_buf_write(&b, "", 1), MT_OK);
    assert_string_equal((const char *)b.data,
                        "\"gates\": [\n  {\"expr\": \"overlap>=0.30\", \"metric\": \"pipeline_overlap_score\", \"op\": \">=\", "
                        "\"threshold\": 0.29999999999999999, \"value\": null, \"pass\": false, \"why\": \"no pipeline "
                        "in this job\"}\n ]");
    mt_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chunk_pass),      cmocka_unit_test(test_pipeline_hand),
        cmocka_unit_test(test_stage_parsing),   cmocka_unit_test(test_stage_inference),
        cmocka_unit_test(test_stage_inference_ends),
        cmocka_unit_test(test_gates),
        cmocka_unit_test(test_gate_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
