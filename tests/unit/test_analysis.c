/* The per-rank analyses: on a hand-written trace whose every expected
 * number is worked out by hand in the comments below, on generated traces
 * for percentiles and the top-kernel lists, on the sample jobs against the
 * generator's truth.json (to the ns), and the pack/unpack round trip and
 * report.json sections. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mergetrace/analysis.h"
#include "rank/passes.h"
#include "sample_truth.h"
#include "test_util.h"
#include "report/sections.h"

/* One rank, absolute integer us (so ns = us * 1000). CPU pid 10, threads 1
 * and 2; GPU device 0, streams 7 and 8 (compute), 20 (NCCL), 9 (copies).
 *
 * GPU activities (us), launched from tid 1 unless said:
 *   A gemm_a  s7  [100,200)  launch 90 (cudaLaunchKernel [90,94))
 *   E gemm_b  s8  [150,250)  launch 95 ([95,98))
 *   B gemm_a  s7  [260,300)  launch 250 ([250,252))
 *   C gemm_a  s7  [310,350)  launch 255 ([255,257))
 *   D gemm_b  s7  [400,500)  launch 258 (cuLaunchKernelEx [258,259))
 *   F nccl AR s20 [450,550)  launch 260 (cuLaunchKernelEx [260,261))
 *   G memcpy  s9  [520,560)  launch 262 (cudaMemcpyAsync: not a "Launch" call)
 *   H memset  s9  [600,610)  launch 270 on tid 2 (cudaMemsetAsync)
 * not busy: Stream Sync s7 [560,700), gpu_user_annotation nccl:all_reduce
 * s20 [449,551). One more cudaLaunchKernel [300,305) on tid 1 launches
 * nothing in the trace.
 *
 * temporal: span 100..610 = 510. compute = A u E [100,250) 150 + B 40 + C 40
 *   + D 100 = 330. comm total = F 100; overlapped = F n D = [450,500) 50;
 *   comm = 50. memory = G 40 + H 10 = 50 minus G n F [520,550) 30 = 20.
 *   busy = [100,250) 150 + [260,300) 40 + [310,350) 40 + [400,560) 160 +
 *   [600,610) 10 = 400; idle = 110 (= 510 - 330 - 50 - 20).
 * idle per stream (kernel wait < 30 us):
 *   s7: A..B gap 60, B launched at 250 > A's end 200: host wait 60;
 *       B..C gap 10, C launched 255 < 300: kernel wait 10;
 *       C..D gap 50 >= 30, D launched 258 < 350: other 50.
 *   s9: G..H gap 40, H launched 270 < 560, >= 30: other 40.
 *   s8, s20: one activity each, no gap. Rank: host 60, kernel 10, other 90.
 * projection (user_annotation ranges on pid 10; a launch counts for a range
 * of its process on any thread, "own" counts only the range's thread):
 *   ProfilerStep#1 tid 1 [80,256]: launches 90 95 250 255 -> A E B C
 *   ProfilerStep#2 tid 1 [257,400]: launches 258 260 262 (300 has no
 *     activity) -> D F G, and H's launch (270) on tid 2 -> H (not own).
 *   -> "ProfilerStep#*": count 2, cpu 176 + 143 = 319, gpu = |A..H| =
 *      [100,250) + [260,300) + [310,350) + [400,560) + [600,610) = 400,
 *      own = 400 - H 10 = 390, gpu_span = (350 - 100) + (610 - 400) = 460,
 *      gpu_pct 400 / 400 = 100.00.
 *   "## forward ##" tid 1 [85,100] (nested in step 1): A E, which run after
 *      the range ended: count 1, cpu 15, gpu [100,250) 150 (own the same),
 *      span 150, 37.50.
 *   "## memset ##" tid 2 [265,280]: H (tid 1's launches 258..262 are
 *      before it): count 1, cpu 15, gpu 10 (own 10), span 10, 2.50.
 *   with project_ops also cpu_op "aten::mm" tid 1 [254,256]: C: cpu 2, gpu 40.
 * kernels: compute gemm_b (D, E: 100, 100) total 200, mean 100, p50 100,
 *   p99 100; gemm_a (100, 40, 40 -> sorted 40 40 100) total 180, mean 60,
 *   p50 = v[ceil(1.5) - 1] = v[1] = 40, p99 = v[ceil(2.97) - 1] = v[2] = 100.
 *   comm: the NCCL kernel 100. memory: memcpy 40, memset 10.
 * launch: delays A 10, B 10, C 55, D 142, E 55, F 190, G 258, H 330; sorted
 *   10 10 55 55 142 190 258 330: p50 = v[3] = 55, p90 = v[ceil(7.2) - 1] =
 *   v[7] = 330, p99 = 330, max 330; 8 launched.
 *   launch busy on tid 1 ("Launch" calls joined across gaps < 30): [90,98)
 *   (gap 1), [250,261) (gaps 3, 1, 1), [300,305) (gap 39: separate). Idle
 *   gaps of the union: [250,260) ended by B (tid 1): 10; [300,310) ended by
 *   C (tid 1): [300,305) 5; [350,400) ended by D: 0; [560,600) ended by H
 *   (tid 2, only cudaMemsetAsync): 0. launch_bound = 15, 15 / 110 = 13.64 %. */
static const char t1_json[] =
    "{\"traceEvents\": [\n"
    "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#1\", \"pid\": 10, \"tid\": 1, \"ts\": 80, \"dur\": 176},\n"
    "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"## forward ##\", \"pid\": 10, \"tid\": 1, \"ts\": 85, \"dur\": 15},\n"
    "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 10, \"tid\": 1, \"ts\": 90, \"dur\": 4,"
    " \"args\": {\"correlation\": 1}},\n"
    "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 10, \"tid\": 1, \"ts\": 95, \"dur\": 3,"
    " \"args\": {\"correlation\": 5}},\n"
    "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 10, \"tid\": 1, \"ts\": 250, \"dur\": 2,"
    " \"args\": {\"correlation\": 2}},\n"
    "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 10, \"tid\": 1, \"ts\": 254, \"dur\": 2},\n"
    "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 10, \"tid\": 1, \"ts\": 255, \"dur\": 2,"
    " \"args\": {\"correlation\": 3}},\n"
    "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#2\", \"pid\": 10, \"tid\": 1, \"ts\": 257, \"dur\": 143},\n"
    "{\"ph\": \"X\", \"cat\": \"cuda_driver\", \"name\": \"cuLaunchKernelEx\", \"pid\": 10, \"tid\": 1, \"ts\": 258, \"dur\": 1,"
    " \"args\": {\"correlation\": 4}},\n"
    "{\"ph\": \"X\", \"cat\": \"cuda_driver\", \"name\": \"cuLaunchKernelEx\", \"pid\": 10, \"tid\": 1, \"ts\": 260, \"dur\": 1,"
    " \"args\": {\"correlation\": 6}},\n"
    "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaMemcpyAsync\", \"pid\": 10, \"tid\": 1, \"ts\": 262, \"dur\": 1,"
    " \"args\": {\"correlation\": 7}},\n"
    "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 10, \"tid\": 1, \"ts\": 300, \"dur\": 5,"
    " \"args\": {\"correlation\": 99}},\n"
    "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"## memset ##\", \"pid\": 10, \"tid\": 2, \"ts\": 265, \"dur\": 15},\n"
    "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaMemsetAsync\", \"pid\": 10, \"tid\": 2, \"ts\": 270, \"dur\": 2,"
    " \"args\": {\"correlation\": 8}},\n"
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm_a\", \"pid\": 0, \"tid\": 7, \"ts\": 100, \"dur\": 100,"
    " \"args\": {\"correlation\": 1}},\n"
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm_a\", \"pid\": 0, \"tid\": 7, \"ts\": 260, \"dur\": 40,"
    " \"args\": {\"correlation\": 2}},\n"
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm_a\", \"pid\": 0, \"tid\": 7, \"ts\": 310, \"dur\": 40,"
    " \"args\": {\"correlation\": 3}},\n"
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm_b\", \"pid\": 0, \"tid\": 7, \"ts\": 400, \"dur\": 100,"
    " \"args\": {\"correlation\": 4}},\n"
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm_b\", \"pid\": 0, \"tid\": 8, \"ts\": 150, \"dur\": 100,"
    " \"args\": {\"correlation\": 5}},\n"
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)\","
    " \"pid\": 0, \"tid\": 20, \"ts\": 450, \"dur\": 100, \"args\": {\"correlation\": 6}},\n"
    "{\"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"Memcpy HtoD (Pinned -> Device)\", \"pid\": 0, \"tid\": 9, \"ts\": 520,"
    " \"dur\": 40, \"args\": {\"correlation\": 7}},\n"
    "{\"ph\": \"X\", \"cat\": \"gpu_memset\", \"name\": \"Memset (Device)\", \"pid\": 0, \"tid\": 9, \"ts\": 600, \"dur\": 10,"
    " \"args\": {\"correlation\": 8}},\n"
    "{\"ph\": \"X\", \"cat\": \"cuda_sync\", \"name\": \"Stream Sync\", \"pid\": 0, \"tid\": 7, \"ts\": 560, \"dur\": 140},\n"
    "{\"ph\": \"X\", \"cat\": \"gpu_user_annotation\", \"name\": \"nccl:all_reduce\", \"pid\": 0, \"tid\": 20, \"ts\": 449,"
    " \"dur\": 102}\n"
    "]}\n";

#define US 1000 /* ns per us */

static mt_rank_analysis_t *analyze(const mt_trace_t *t, int32_t rank, const mt_analysis_opts_t *o)
{
    mt_rank_analysis_t *a = NULL;
    assert_int_equal(mt_analyze_rank(t, rank, o, &a), MT_OK);
    assert_non_null(a);
    return a;
}

static const mt_an_proj_t *find_proj(const mt_rank_analysis_t *a, const char *name)
{
    for (size_t i = 0; i < a->n_proj; i++)
        if (a->proj[i].name.len == strlen(name) && !memcmp(a->strings + a->proj[i].name.off, name, strlen(name)))
            return &a->proj[i];
    return NULL;
}

static const char *sname(const mt_rank_analysis_t *a, mt_an_str_t s)
{
    return a->strings + s.off;
}

static void check_t1(const mt_rank_analysis_t *a)
{
    assert_int_equal(a->gpu_activities, 8);
    assert_int_equal(a->gpu_first_ns, 100 * US);
    assert_int_equal(a->gpu_last_ns, 610 * US);
    assert_int_equal(a->span_ns, 510 * US);
    assert_int_equal(a->compute_ns, 330 * US);
    assert_int_equal(a->comm_total_ns, 100 * US);
    assert_int_equal(a->overlap_ns, 50 * US);
    assert_int_equal(a->comm_ns, 50 * US);
    assert_int_equal(a->memory_ns, 20 * US);
    assert_int_equal(a->busy_ns, 400 * US);
    assert_int_equal(a->idle_ns, 110 * US);

    assert_int_equal(a->host_wait_ns, 60 * US);
    assert_int_equal(a->kernel_wait_ns, 10 * US);
    assert_int_equal(a->other_ns, 90 * US);
    assert_int_equal(a->n_streams, 4);
    const int64_t sid[4] = {7, 8, 9, 20}, host[4] = {60, 0, 0, 0}, kern[4] = {10, 0, 0, 0}, oth[4] = {50, 0, 40, 0};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(a->streams[i].device, 0);
        assert_int_equal(a->streams[i].stream, sid[i]);
        assert_int_equal(a->streams[i].name.len, 0);
        assert_int_equal(a->streams[i].host_wait_ns, host[i] * US);
        assert_int_equal(a->streams[i].kernel_wait_ns, kern[i] * US);
        assert_int_equal(a->streams[i].other_ns, oth[i] * US);
    }

    assert_int_equal(a->launched, 8);
    assert_int_equal(a->delay_p50_ns, 55 * US);
    assert_int_equal(a->delay_p90_ns, 330 * US);
    assert_int_equal(a->delay_p99_ns, 330 * US);
    assert_int_equal(a->delay_max_ns, 330 * US);
    assert_int_equal(a->launch_bound_ns, 15 * US);

    assert_int_equal(a->n_kernels, 5);
    const char *kn[5] = {"gemm_b", "gemm_a", "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
                         "Memcpy HtoD (Pinned -> Device)", "Memset (Device)"};
    const uint32_t kc[5] = {MT_AN_COMPUTE, MT_AN_COMPUTE, MT_AN_COMM, MT_AN_MEMORY, MT_AN_MEMORY};
    const int64_t kcount[5] = {2, 3, 1, 1, 1}, ktot[5] = {200, 180, 100, 40, 10}, kmean[5] = {100, 60, 100, 40, 10},
                  kp50[5] = {100, 40, 100, 40, 10}, kp99[5] = {100, 100, 100, 40, 10};
    for (int i = 0; i < 5; i++) {
        const mt_an_kernel_t *k = &a->kernels[i];
        assert_string_equal(sname(a, k->name), kn[i]);
        assert_int_equal(k->cls, kc[i]);
        assert_int_equal(k->count, kcount[i]);
        assert_int_equal(k->total_ns, ktot[i] * US);
        assert_int_equal(k->mean_ns, kmean[i] * US);
        assert_int_equal(k->p50_ns, kp50[i] * US);
        assert_int_equal(k->p99_ns, kp99[i] * US);
        assert_int_equal(k->max_ns, (i == 1 ? 100 : kp99[i]) * US);
    }
}

static void test_hand_trace(void **state)
{
    (void)state;
    mt_trace_t *t = load_str(t1_json);
    mt_rank_analysis_t *a = analyze(t, 3, NULL);
    assert_int_equal(a->rank, 3);
    assert_int_equal(a->opt_kernel_wait_ns, 30 * US);
    check_t1(a);

    assert_int_equal(a->n_proj, 3);
    assert_string_equal(sname(a, a->proj[0].name), "ProfilerStep#*");
    assert_int_equal(a->proj[0].count, 2);
    assert_int_equal(a->proj[0].cpu_ns, 319 * US);
    assert_int_equal(a->proj[0].gpu_ns, 400 * US);
    assert_int_equal(a->proj[0].gpu_same_thread_ns, 390 * US);
    assert_int_equal(a->proj[0].gpu_span_ns, 460 * US);
    assert_string_equal(sname(a, a->proj[1].name), "## forward ##");
    assert_int_equal(a->proj[1].count, 1);
    assert_int_equal(a->proj[1].cpu_ns, 15 * US);
    assert_int_equal(a->proj[1].gpu_ns, 150 * US);
    assert_int_equal(a->proj[1].gpu_same_thread_ns, 150 * US);
    assert_int_equal(a->proj[1].gpu_span_ns, 150 * US);
    assert_string_equal(sname(a, a->proj[2].name), "## memset ##");
    assert_int_equal(a->proj[2].count, 1);
    assert_int_equal(a->proj[2].cpu_ns, 15 * US);
    assert_int_equal(a->proj[2].gpu_ns, 10 * US);
    assert_int_equal(a->proj[2].gpu_same_thread_ns, 10 * US);
    assert_int_equal(a->proj[2].gpu_span_ns, 10 * US);
    assert_null(find_proj(a, "aten::mm"));
    mt_rank_analysis_free(a);

    /* --project-ops adds aten::mm [254,256]: C, 40 us. */
    mt_analysis_opts_t o;
    mt_analysis_opts_init(&o);
    o.project_ops = true;
    a = analyze(t, 3, &o);
    check_t1(a);
    assert_int_equal(a->n_proj, 4);
    assert_string_equal(sname(a, a->proj[2].name), "aten::mm");
    assert_int_equal(a->proj[2].count, 1);
    assert_int_equal(a->proj[2].cpu_ns, 2 * US);
    assert_int_equal(a->proj[2].gpu_ns, 40 * US);
    assert_int_equal(a->proj[2].gpu_span_ns, 40 * US);
    mt_rank_analysis_free(a);

    /* A kernel-wait threshold of 60 us turns C..D (50) and G..H (40) into
     * kernel wait; the launch-busy join then also bridges 261..300 (39):
     * tid 1 busy [250,305), so gap [300,310) still gives 5 and [250,260)
     * 10: launch_bound unchanged at 15. */
    o.project_ops = false;
    o.kernel_wait_ns = 60 * US;
    a = analyze(t, 3, &o);
    assert_int_equal(a->host_wait_ns, 60 * US);
    assert_int_equal(a->kernel_wait_ns, 100 * US);
    assert_int_equal(a->other_ns, 0);
    assert_int_equal(a->launch_bound_ns, 15 * US);
    mt_rank_analysis_free(a);

    /* top_kernels 1: the first of each class only. */
    o.kernel_wait_ns = 30 * US;
    o.top_kernels = 1;
    a = analyze(t, 3, &o);
    assert_int_equal(a->n_kernels, 3);
    assert_string_equal(sname(a, a->kernels[0].name), "gemm_b");
    assert_int_equal(a->kernels[1].cls, MT_AN_COMM);
    assert_string_equal(sname(a, a->kernels[2].name), "Memcpy HtoD (Pinned -> Device)");
    mt_rank_analysis_free(a);
    mt_trace_free(t);
}

/* Append printf output to a growing string. */
static void app(char **s, size_t *len, size_t *cap, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

static void app(char **s, size_t *len, size_t *cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char tmp[1024];
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    assert_true(n > 0 && (size_t)n < sizeof tmp);
    if (*len + (size_t)n + 1 > *cap) {
        *cap = (*len + (size_t)n + 1) * 2;
        *s = realloc(*s, *cap);
        assert_non_null(*s);
    }
    memcpy(*s + *len, tmp, (size_t)n + 1);
    *len += (size_t)n;
}

/* Percentiles and top lists: "k_pct" runs 100 times with durations 1..100
 * us: total 5050, mean 50.5 us, p50 = v[ceil(50) - 1] = 50, p99 = v[98] =
 * 99, max 100. Eleven more compute kernels "k00".."k10" of 1 us each: with
 * top 10, k_pct then k00..k08 (ties by name), k09 and k10 dropped. A memcpy
 * whose name is 199 'a', then U+00E9 (bytes 199-200), then "tail": cut at
 * 200 bytes would split the character, so the record keeps the 199 'a'. */
static void test_kernels_percentiles(void **state)
{
    (void)state;
    char *s = NULL;
    size_t len = 0, cap = 0;
    app(&s, &len, &cap, "{\"traceEvents\": [\n");
    int64_t ts = 1000;
    for (int i = 100; i >= 1; i--) { /* file order must not matter */
        app(&s, &len, &cap, "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k_pct\", \"pid\": 0, \"tid\": 7, \"ts\": %lld,"
                            " \"dur\": %d},\n", (long long)ts, i);
        ts += 200;
    }
    for (int i = 0; i <= 10; i++) {
        app(&s, &len, &cap, "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k%02d\", \"pid\": 0, \"tid\": 7, \"ts\": %lld,"
                            " \"dur\": 1},\n", i, (long long)ts);
        ts += 200;
    }
    char longname[256];
    memset(longname, 'a', 199);
    memcpy(longname + 199, "\xc3\xa9tail", 7);
    app(&s, &len, &cap, "{\"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"%s\", \"pid\": 0, \"tid\": 9, \"ts\": %lld,"
                        " \"dur\": 3}\n]}\n", longname, (long long)ts);
    mt_trace_t *t = load_str(s);
    free(s);
    mt_rank_analysis_t *a = analyze(t, 0, NULL);
    assert_int_equal(a->n_kernels, 11);
    const mt_an_kernel_t *k = &a->kernels[0];
    assert_string_equal(sname(a, k->name), "k_pct");
    assert_int_equal(k->count, 100);
    assert_int_equal(k->total_ns, 5050 * US);
    assert_int_equal(k->mean_ns, 50500);
    assert_int_equal(k->p50_ns, 50 * US);
    assert_int_equal(k->p99_ns, 99 * US);
    assert_int_equal(k->max_ns, 100 * US);
    for (int i = 0; i < 9; i++) {
        char nm[8];
        snprintf(nm, sizeof nm, "k%02d", i);
        assert_string_equal(sname(a, a->kernels[1 + i].name), nm);
        assert_int_equal(a->kernels[1 + i].p99_ns, 1 * US);
    }
    k = &a->kernels[10];
    assert_int_equal(k->cls, MT_AN_MEMORY);
    assert_int_equal(k->name.len, 199);
    assert_int_equal(strspn(sname(a, k->name), "a"), 199);
    /* no launch calls: no delays, nothing launch-bound */
    assert_int_equal(a->launched, 0);
    assert_int_equal(a->delay_max_ns, 0);
    assert_int_equal(a->launch_bound_ns, 0);
    /* every gap on stream 7 is 200 - dur us >= 30 and unlinked: other */
    assert_int_equal(a->host_wait_ns, 0);
    assert_int_equal(a->kernel_wait_ns, 0);
    mt_rank_analysis_free(a);
    mt_trace_free(t);

    int64_t v[7] = {1, 2, 3, 4, 5, 6, 7};
    assert_int_equal(mt_stats_pct_sorted(v, 7, 50), 4); /* ceil(3.5) = 4th */
    assert_int_equal(mt_stats_pct_sorted(v, 7, 90), 7); /* ceil(6.3) = 7th */
    assert_int_equal(mt_stats_pct_sorted(v, 1, 99), 1);
    assert_int_equal(mt_stats_pct_sorted(v, 0, 50), 0);
}

/* gpu_span over many launches of one thread, where the projection reads
 * the minimum start and maximum end of whole blocks of launches from a
 * tree and the blocks at a range's ends launch by launch (blocks of 16).
 * 64 launches on pid 10 tid 1 at 1000 + 10k us (k = 0..63), launch k runs
 * kernel k at 100000 + 1000k us for 100 us, except kernel 7 at 50000
 * (the earliest), kernel 25 at 60000, kernel 40 ending at 240000 and
 * kernel 60 ending at 260000 (the latest). Ranges by the launches they
 * hold (their calls' starts in [ts, ts + dur]):
 *   "## all ##"   [995, 1695]:  0..63, 260000 - 50000 = 210000
 *   "## mid ##"   [1045, 1585]: 5..58, 240000 - 50000 = 190000 (7 in the
 *                 partial block at its start, 40 in a whole block)
 *   "## tail ##"  [1165, 1665]: 17..63, 260000 - 60000 = 200000
 *   "## short ##" [1405, 1445]: 41..44, 144100 - 141000 = 3100 */
static void test_projection_span_blocks(void **state)
{
    (void)state;
    char *s = NULL;
    size_t len = 0, cap = 0;
    app(&s, &len, &cap, "{\"traceEvents\": [\n");
    static const struct { const char *name; int ts, dur; } rg[] = {
        {"## all ##", 995, 700}, {"## mid ##", 1045, 540}, {"## tail ##", 1165, 500}, {"## short ##", 1405, 40}};
    for (size_t i = 0; i < sizeof rg / sizeof rg[0]; i++)
        app(&s, &len, &cap, "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"%s\", \"pid\": 10, \"tid\": 1,"
                            " \"ts\": %d, \"dur\": %d},\n", rg[i].name, rg[i].ts, rg[i].dur);
    for (int k = 0; k < 64; k++) {
        long long start = 100000 + 1000LL * k, dur = 100;
        if (k == 7)
            start = 50000;
        if (k == 25)
            start = 60000;
        if (k == 40)
            dur = 240000 - start;
        if (k == 60)
            dur = 260000 - start;
        app(&s, &len, &cap, "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 10,"
                            " \"tid\": 1, \"ts\": %d, \"dur\": 2, \"args\": {\"correlation\": %d}},\n", 1000 + 10 * k, k + 1);
        app(&s, &len, &cap, "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, \"ts\": %lld,"
                            " \"dur\": %lld, \"args\": {\"correlation\": %d}}%s\n", start, dur, k + 1, k < 63 ? "," : "");
    }
    app(&s, &len, &cap, "]}\n");
    mt_trace_t *t = load_str(s);
    free(s);
    mt_rank_analysis_t *a = analyze(t, 0, NULL);
    static const struct { const char *name; int64_t span_us; } want[] = {
        {"## all ##", 210000}, {"## mid ##", 190000}, {"## tail ##", 200000}, {"## short ##", 3100}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const mt_an_proj_t *p = find_proj(a, want[i].name);
        assert_non_null(p);
        assert_int_equal(p->gpu_span_ns, want[i].span_us * US);
    }
    mt_rank_analysis_free(a);
    mt_trace_free(t);
}

/* Two GPUs in one trace: device 0 [0,100), device 1 [50,150) on stream 7
 * each: the union across devices is 150, the span 150, idle 0; the streams
 * are kept apart (two streams, no gaps). A string stream id stays a name.
 * A trace without GPU activity gives zeros. */
static void test_two_gpus_and_empty(void **state)
{
    (void)state;
    mt_trace_t *t = load_str("{\"traceEvents\": ["
                             "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, \"ts\": 0, \"dur\": 100},"
                             "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 1, \"tid\": 7, \"ts\": 50, \"dur\": 100},"
                             "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 1, \"tid\": \"odd\", \"ts\": 60,"
                             " \"dur\": 10}]}");
    mt_rank_analysis_t *a = analyze(t, 0, NULL);
    assert_int_equal(a->span_ns, 150 * US);
    assert_int_equal(a->compute_ns, 150 * US);
    assert_int_equal(a->idle_ns, 0);
    assert_int_equal(a->n_streams, 3);
    assert_int_equal(a->streams[0].device, 0);
    assert_int_equal(a->streams[1].device, 1);
    assert_int_equal(a->streams[1].stream, 7);
    assert_int_equal(a->streams[2].name.len, 3);
    assert_string_equal(sname(a, a->streams[2].name), "odd");
    assert_int_equal(a->kernels[0].count, 3);
    mt_rank_analysis_free(a);
    mt_trace_free(t);

    t = load_str("{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#4\","
                 " \"pid\": 1, \"tid\": 1, \"ts\": 5, \"dur\": 10}]}");
    a = analyze(t, 2, NULL);
    assert_int_equal(a->gpu_activities, 0);
    assert_int_equal(a->span_ns, 0);
    assert_int_equal(a->n_streams, 0);
    assert_int_equal(a->n_kernels, 0);
    assert_int_equal(a->n_proj, 1);
    assert_int_equal(a->proj[0].gpu_ns, 0);
    assert_int_equal(a->proj[0].cpu_ns, 10 * US);
    mt_buf_t b = {0};
    const mt_rank_analysis_t *one[1] = {a};
    assert_int_equal(mt_report_rank_sections(one, 1, mt_buf_write, &b), MT_OK);
    assert_int_equal(mt_buf_append(&b, "", 1), MT_OK);
    assert_non_null(strstr(b.data, "\"idle_pct\": 0.00"));
    mt_buf_free(&b);
    mt_rank_analysis_free(a);
    mt_trace_free(t);
}

static void assert_same(const mt_rank_analysis_t *a, const mt_rank_analysis_t *b)
{
    void *pa, *pb;
    size_t la, lb;
    /* Packing is deterministic: equal bytes mean equal results. */
    assert_int_equal(mt_rank_analysis_pack(a, &pa, &la), MT_OK);
    assert_int_equal(mt_rank_analysis_pack(b, &pb, &lb), MT_OK);
    assert_int_equal(la, lb);
    assert_memory_equal(pa, pb, la);
    free(pa);
    free(pb);
}

static void test_pack_roundtrip(void **state)
{
    (void)state;
    mt_trace_t *t = load_str(t1_json);
    mt_rank_analysis_t *a = analyze(t, 5, NULL);
    mt_trace_free(t); /* the result must not need the trace */
    void *bytes;
    size_t len;
    assert_int_equal(mt_rank_analysis_pack(a, &bytes, &len), MT_OK);

    /* Two results back to back, as gatherv delivers them. */
    char *two = malloc(2 * len);
    memcpy(two, bytes, len);
    memcpy(two + len, bytes, len);
    mt_rank_analysis_t *u = NULL;
    size_t used = 0;
    assert_int_equal(mt_rank_analysis_unpack(two, 2 * len, &u, &used), MT_OK);
    assert_int_equal(used, len);
    assert_int_equal(u->rank, 5);
    check_t1(u);
    assert_int_equal(u->n_proj, 3);
    assert_string_equal(sname(u, u->proj[0].name), "ProfilerStep#*");
    assert_same(a, u);
    mt_rank_analysis_free(u);
    assert_int_equal(mt_rank_analysis_unpack(two + used, len, &u, &used), MT_OK);
    assert_same(a, u);
    mt_rank_analysis_free(u);

    /* Appended in place to a buffer that holds other bytes already, as the
     * program keeps a process's results: each reads back on its own. */
    mt_buf_t kept = {0};
    assert_int_equal(mt_buf_append(&kept, "xyz", 3), MT_OK);
    assert_int_equal(mt_rank_analysis_pack_append(a, &kept), MT_OK);
    assert_int_equal(mt_rank_analysis_pack_append(a, &kept), MT_OK);
    assert_int_equal(kept.len, 3 + 2 * len);
    for (size_t k = 0, off = 3; k < 2; k++, off += used) {
        assert_int_equal(mt_rank_analysis_unpack(kept.data + off, kept.len - off, &u, &used), MT_OK);
        assert_int_equal(used, len);
        assert_int_equal(u->rank, 5);
        check_t1(u);
        mt_rank_analysis_free(u);
    }
    mt_buf_free(&kept);

    /* Both at once, in order; a cut second one fails the whole, leaving
     * nothing to free; no bytes, no result. */
    mt_rank_analysis_t **all = NULL;
    size_t n_all = 9;
    assert_int_equal(mt_rank_analysis_unpack_all(two, 2 * len, &all, &n_all), MT_OK);
    assert_int_equal(n_all, 2);
    for (size_t k = 0; k < 2; k++) {
        assert_same(a, all[k]);
        mt_rank_analysis_free(all[k]);
    }
    free(all);
    assert_int_equal(mt_rank_analysis_unpack_all(two, 2 * len - 1, &all, &n_all), MT_ERR_FORMAT);
    assert_null(all);
    assert_int_equal(n_all, 0);
    assert_int_equal(mt_rank_analysis_unpack_all(two, 0, &all, &n_all), MT_OK);
    assert_int_equal(n_all, 0);
    free(all);

    /* Every truncation, and a few corruptions, are format errors. */
    for (size_t n = 0; n < len; n++) {
        u = (mt_rank_analysis_t *)1;
        assert_int_equal(mt_rank_analysis_unpack(bytes, n, &u, NULL), MT_ERR_FORMAT);
        assert_null(u);
    }
    memcpy(two, bytes, len);
    two[0] ^= 1;
    assert_int_equal(mt_rank_analysis_unpack(two, len, &u, NULL), MT_ERR_FORMAT);
    memcpy(two, bytes, len);
    uint64_t big = (uint64_t)len - 1; /* total length one short: the pool no longer fits */
    memcpy(two + 8, &big, 8);
    assert_int_equal(mt_rank_analysis_unpack(two, len, &u, NULL), MT_ERR_FORMAT);
    free(two);
    free(bytes);

    /* A name pointing outside the pool. */
    a->proj[1].name.off = (uint32_t)a->strings_len;
    assert_int_equal(mt_rank_analysis_pack(a, &bytes, &len), MT_OK);
    assert_int_equal(mt_rank_analysis_unpack(bytes, len, &u, NULL), MT_ERR_FORMAT);
    free(bytes);
    mt_rank_analysis_free(a);
    mt_rank_analysis_free(NULL);
}

/* The program's memory budget: the GPU activities taken out of packed
 * results in place read back as the results dropped of them before the
 * pack, each shorter by its activities' bytes (56 each); anything but
 * packed results is refused with the buffer untouched. */
static void test_packed_drop_gacts(void **state)
{
    (void)state;
    mt_trace_t *t = load_str(t1_json);
    mt_rank_analysis_t *a = analyze(t, 5, NULL);
    mt_trace_free(t);
    assert_true(a->n_gacts > 0);
    size_t n_acts = a->n_gacts;
    void *one;
    size_t len;
    assert_int_equal(mt_rank_analysis_pack(a, &one, &len), MT_OK);
    mt_buf_t b = {0};
    assert_int_equal(mt_rank_analysis_pack_append(a, &b), MT_OK);
    assert_int_equal(mt_rank_analysis_pack_append(a, &b), MT_OK);
    assert_int_equal(mt_rank_analysis_packed_drop_gacts(&b), MT_OK);
    assert_int_equal(b.len, 2 * (len - n_acts * 56));
    mt_rank_analysis_drop_gacts(a);
    for (size_t k = 0, off = 0, used = 0; k < 2; k++, off += used) {
        mt_rank_analysis_t *u = NULL;
        assert_int_equal(mt_rank_analysis_unpack(b.data + off, b.len - off, &u, &used), MT_OK);
        assert_int_equal(used, len - n_acts * 56);
        assert_int_equal(u->n_gacts, 0);
        check_t1(u);
        assert_same(a, u);
        mt_rank_analysis_free(u);
    }
    /* again: nothing left to take, nothing changes */
    size_t l2 = b.len;
    assert_int_equal(mt_rank_analysis_packed_drop_gacts(&b), MT_OK);
    assert_int_equal(b.len, l2);
    mt_buf_free(&b);
    /* a cut result, and a count past the end, leave the bytes as they were */
    for (size_t cut = 1; cut < len; cut += 97) {
        mt_buf_t c = {0};
        assert_int_equal(mt_buf_append(&c, one, len - cut), MT_OK);
        assert_int_equal(mt_rank_analysis_packed_drop_gacts(&c), MT_ERR_FORMAT);
        assert_int_equal(c.len, len - cut);
        assert_memory_equal(c.data, one, len - cut);
        mt_buf_free(&c);
    }
    mt_buf_t c = {0};
    assert_int_equal(mt_buf_append(&c, one, len), MT_OK);
    assert_int_equal(mt_buf_append(&c, "junk", 4), MT_OK);
    assert_int_equal(mt_rank_analysis_packed_drop_gacts(&c), MT_ERR_FORMAT);
    assert_int_equal(c.len, len + 4);
    assert_memory_equal(c.data, one, len);
    mt_buf_free(&c);
    free(one);
    mt_rank_analysis_free(a);
}

static void test_report_sections(void **state)
{
    (void)state;
    mt_trace_t *t = load_str(t1_json);
    mt_rank_analysis_t *a0 = analyze(t, 0, NULL), *a1 = analyze(t, 1, NULL);
    mt_trace_free(t);
    const mt_rank_analysis_t *all[2] = {a0, a1};
    mt_buf_t b = {0};
    assert_int_equal(mt_buf_append(&b, "{\"traceEvents\": [],\n ", 21), MT_OK);
    assert_int_equal(mt_report_rank_sections(all, 2, mt_buf_write, &b), MT_OK);
    assert_int_equal(mt_buf_append(&b, "\n}\n", 4), MT_OK); /* with the NUL */
    const char *s = b.data;
    /* Valid JSON: the loader skips the unknown top-level keys. */
    mt_error_t err;
    assert_int_equal(load_str_err(s, strlen(s), NULL, &err), MT_OK);
    const char *want[] = {
        "\"temporal\": [\n  {\"rank\": 0, \"span_us\": 510.000, \"compute_us\": 330.000, \"comm_us\": 50.000,"
        " \"memory_us\": 20.000, \"idle_us\": 110.000, \"compute_pct\": 64.71, \"comm_pct\": 9.80,"
        " \"memory_pct\": 3.92, \"idle_pct\": 21.57},\n  {\"rank\": 1,",
        "\"overlap\": [\n  {\"rank\": 0, \"comm_us\": 100.000, \"overlapped_us\": 50.000, \"overlap_pct\": 50.00}",
        /* host wait: stream 7 (it runs the gemms) waited 60 of the 510 us span */
        "\"idle\": [\n  {\"rank\": 0, \"host_wait_us\": 60.000, \"kernel_wait_us\": 10.000, \"other_us\": 90.000,"
        " \"host_wait_pct\": 11.76, \"streams\": [{\"device\": 0, \"stream\": 7, \"host_wait_us\": 60.000,"
        " \"kernel_wait_us\": 10.000, \"other_us\": 50.000, \"work\": true}, {\"device\": 0, \"stream\": 8,",
        "{\"rank\": 1, \"name\": \"ProfilerStep#*\", \"count\": 2, \"cpu_us\": 319.000, \"gpu_us\": 400.000,"
        " \"gpu_span_us\": 460.000, \"gpu_pct\": 100.00, \"gpu_same_thread_us\": 390.000}",
        "{\"rank\": 0, \"name\": \"## forward ##\", \"count\": 1, \"cpu_us\": 15.000, \"gpu_us\": 150.000,"
        " \"gpu_span_us\": 150.000, \"gpu_pct\": 37.50, \"gpu_same_thread_us\": 150.000}",
        /* summed over both ranks: gpu 800 of 800 busy, 780 on the ranges' own thread */
        "\"projection_total\": [\n  {\"name\": \"ProfilerStep#*\", \"count\": 4, \"cpu_us\": 638.000,"
        " \"gpu_us\": 800.000, \"gpu_pct\": 100.00, \"gpu_same_thread_us\": 780.000},\n"
        "  {\"name\": \"## forward ##\", \"count\": 2, \"cpu_us\": 30.000, \"gpu_us\": 300.000,"
        " \"gpu_pct\": 37.50, \"gpu_same_thread_us\": 300.000},\n  {\"name\": \"## memset ##\", \"count\": 2,"
        " \"cpu_us\": 30.000, \"gpu_us\": 20.000, \"gpu_pct\": 2.50, \"gpu_same_thread_us\": 20.000}\n ]",
        "{\"rank\": 0, \"class\": \"compute\", \"name\": \"gemm_a\", \"count\": 3, \"total_us\": 180.000,"
        " \"mean_us\": 60.000, \"p50_us\": 40.000, \"p99_us\": 100.000, \"max_us\": 100.000}",
        "\"class\": \"memory\", \"name\": \"Memset (Device)\"",
        "\"launch\": [\n  {\"rank\": 0, \"kernels_launched\": 8, \"delay_p50_us\": 55.000, \"delay_p90_us\": 330.000,"
        " \"delay_p99_us\": 330.000, \"delay_max_us\": 330.000, \"idle_us\": 110.000, \"launch_bound_us\": 15.000,"
        " \"launch_bound_pct\": 13.64}",
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        if (!strstr(s, want[i]))
            fail_msg("missing in report:\n%s\n--- report ---\n%s", want[i], s);
    mt_buf_free(&b);

    /* No ranks: empty lists, still valid JSON. */
    assert_int_equal(mt_buf_append(&b, "{\"traceEvents\": [], ", 20), MT_OK);
    assert_int_equal(mt_report_rank_sections(NULL, 0, mt_buf_write, &b), MT_OK);
    assert_int_equal(mt_buf_append(&b, "}", 2), MT_OK);
    assert_int_equal(load_str_err(b.data, strlen(b.data), NULL, &err), MT_OK);
    assert_non_null(strstr(b.data, "\"launch\": []"));
    mt_buf_free(&b);
    mt_rank_analysis_free(a0);
    mt_rank_analysis_free(a1);
}

/* ---- the sample jobs against truth.json ---- */

/* A plain, quadratic reference of the projection of one name on t, both
 * ways: *sum = sum over ranges of |union of the range's activities| (the
 * generator's truth), *uni = |union over all ranges| (ours). */
static void ref_projection(const mt_trace_t *t, const char *name, int any_thread, int64_t *sum, int64_t *uni)
{
    size_t cap = 0, n_all = 0;
    for (size_t i = 0; i < t->n_events; i++)
        cap += t->events[i].aux != 0;
    mt_interval_t *all = malloc((cap + 1) * sizeof *all), *one = malloc((cap + 1) * sizeof *one);
    *sum = 0;
    int step = !strcmp(name, "ProfilerStep#*");
    for (size_t r = 0; r < t->n_events; r++) {
        const mt_event_t *e = &t->events[r];
        if (e->ph != MT_PH_X || mt_cat_normal((mt_cat_t)e->cat) != MT_CAT_USER_ANNOTATION)
            continue;
        const char *nm = mt_event_name(t, e);
        if (step ? strncmp(nm, "ProfilerStep#", 13) != 0 : strcmp(nm, name) != 0)
            continue;
        size_t n_one = 0;
        for (size_t k = 0; k < t->n_events; k++) {
            const mt_event_t *g = &t->events[k];
            if (g->ph != MT_PH_X || !g->aux ||
                !(g->cls == MT_CLASS_COMPUTE || g->cls == MT_CLASS_COMM || g->cls == MT_CLASS_MEMCPY ||
                  g->cls == MT_CLASS_MEMSET))
                continue;
            const mt_event_t *l = &t->events[g->aux - 1];
            if (mt_event_pid(t, l) != mt_event_pid(t, e) || (!any_thread && mt_event_tid(t, l) != mt_event_tid(t, e)) || l->ts < e->ts || l->ts > e->ts + e->dur)
                continue;
            one[n_one++] = (mt_interval_t){g->ts, g->ts + g->dur};
            all[n_all++] = one[n_one - 1];
            if (n_all > cap) /* an activity in several ranges: compact */
                assert_int_equal(mt_iv_union(all, &n_all), MT_OK);
        }
        assert_int_equal(mt_iv_union(one, &n_one), MT_OK);
        *sum += mt_iv_measure(one, n_one);
    }
    assert_int_equal(mt_iv_union(all, &n_all), MT_OK);
    *uni = mt_iv_measure(all, n_all);
    free(all);
    free(one);
}

static void test_sample_truth(void **state)
{
    (void)state;
    size_t checked = 0, proj_checked = 0, differ = 0, backward_any = 0;
    for (size_t i = 0; i < sizeof st_ranks / sizeof *st_ranks; i++) {
        const st_rank_t *tr = &st_ranks[i];
        char path[1024];
        snprintf(path, sizeof path, "%s/%s/rank-%d.json", MT_SAMPLES_DIR, tr->set, tr->rank);
        mt_trace_t *t = NULL;
        mt_error_t err;
        if (mt_trace_load(path, NULL, &t, &err) != MT_OK) {
            char b[1200];
            fail_msg("%s", mt_error_format(&err, b, sizeof b));
        }
        mt_rank_analysis_t *a = analyze(t, tr->rank, NULL);
        /* The generator's definitions are ours: exact to the ns. */
        assert_int_equal(a->span_ns, tr->span_ns);
        assert_int_equal(a->compute_ns, tr->compute_ns);
        assert_int_equal(a->comm_ns, tr->comm_ns);
        assert_int_equal(a->comm_total_ns, tr->comm_total_ns);
        assert_int_equal(a->overlap_ns, tr->overlap_ns);
        assert_int_equal(a->memory_ns, tr->memory_ns);
        assert_int_equal(a->idle_ns, tr->idle_ns);
        assert_int_equal(a->compute_ns + a->comm_ns + a->memory_ns + a->idle_ns, a->span_ns);
        size_t n_names = 0;
        for (size_t k = 0; k < sizeof st_projs / sizeof *st_projs; k++) {
            const st_proj_t *p = &st_projs[k];
            if (strcmp(p->set, tr->set) || p->rank != tr->rank)
                continue;
            n_names++;
            const mt_an_proj_t *q = find_proj(a, p->name);
            if (!q)
                fail_msg("%s rank %d: no projection for %s", tr->set, tr->rank, p->name);
            assert_int_equal(q->count, p->count);
            assert_int_equal(q->cpu_ns, p->cpu_ns);
            /* The truth's gpu_ns sums each range's own union; ours is the
             * union over all the name's ranges, so an activity overlapping
             * one of another range counts once (pp8 runs step k+1's work
             * under step k's). The two agree whenever the ranges' activity
             * sets do not overlap in time, and ours is never larger. Both
             * are recomputed here by brute force: the sum must equal the
             * truth (checking the reference), the union must equal ours. */
            int64_t sum, uni;
            ref_projection(t, p->name, 0, &sum, &uni);
            assert_int_equal(sum, p->gpu_ns);
            assert_int_equal(q->gpu_same_thread_ns, uni);
            assert_true(q->gpu_same_thread_ns <= p->gpu_ns);
            /* The same for launches on any thread of the process (the
             * autograd thread's backward kernels count for "## backward ##"). */
            ref_projection(t, p->name, 1, &sum, &uni);
            assert_int_equal(sum, p->gpu_ns_any_thread);
            assert_int_equal(q->gpu_ns, uni);
            assert_true(q->gpu_ns <= p->gpu_ns_any_thread);
            differ += q->gpu_ns != p->gpu_ns_any_thread;
            backward_any += !strcmp(p->name, "## backward ##") && q->gpu_ns > 0;
            proj_checked++;
        }
        assert_int_equal(a->n_proj, n_names);
        /* Sanity of the rest against the counts the truth also gives. */
        assert_true(a->launched <= a->gpu_activities);
        assert_true(a->launch_bound_ns <= a->idle_ns);
        mt_rank_analysis_free(a);
        mt_trace_free(t);
        checked++;
    }
    assert_int_equal(checked, 20);
    /* Before the any-thread rule "## backward ##" had no GPU time in any sample job. */
    assert_true(backward_any >= 8);
    /* dp8 and dp4-old: the definitions coincide; pp8: they differ. */
    print_message("sample truth: %zu ranks, %zu projections (%zu where the truth's per-range sum exceeds the union)\n",
                  checked, proj_checked, differ);
}

/* The memory pass on a hand-written trace (absolute integer us). Steps
 * #1 [0,100) #2 [100,200) #3 [200,300) #4 [300,400) on tid 1; "## fwd ##"
 * [110,150), aten::mm [120,140) holding aten::empty [125,130), all tid 1;
 * one kernel on GPU 0. [memory] events of GPU 0 (type 1), in file order:
 *   [8]  ts  10  +100  alloc 1100 reserved 2048
 *   [9]  ts  50  -100  alloc 1000
 *   [10] ts 127  +500  alloc 1500 reserved 4096  addr 4660: the peak
 *   [11] ts 160  -490  alloc 1010
 *   [12] ts 250   +10  alloc 1020
 *   [13] ts 360   +10  alloc -5: negative, left out
 *   [14] ts 370   +10  no "Total Allocated": missing, left out
 *   [15] ts 380    +1  device 5: no GPU activity has pid 5 (its own device)
 *   [16] ts 350   +10  alloc 1030: before [15] on the same thread (order)
 * Device 0: 6 events; peak 1500 at 127 us, step 2, op aten::empty (the
 * innermost), annotation "## fwd ##", Bytes 500, reserved 4096 there and
 * its peak; end 1030. Steps: #1 1 alloc 1 free, end 1000, peak 1100; #2 1/1,
 * end 1010, peak 1500; #3 1/0 end 1020; #4 1/0 end 1030 (the left-out ones
 * do not count). Trend over #2..#4 (1010, 1020, 1030): +10 per step, grows
 * on every step (1000 < 1010 < 1020 < 1030). */
static const char mem_json[] =
    "{\"traceEvents\": ["
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, \"ts\": 120, \"dur\": 10},"
    "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#1\", \"pid\": 10, \"tid\": 1, \"ts\": 0, \"dur\": 100},"
    "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#2\", \"pid\": 10, \"tid\": 1, \"ts\": 100, \"dur\": 100},"
    "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#3\", \"pid\": 10, \"tid\": 1, \"ts\": 200, \"dur\": 100},"
    "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#4\", \"pid\": 10, \"tid\": 1, \"ts\": 300, \"dur\": 100},"
    "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"## fwd ##\", \"pid\": 10, \"tid\": 1, \"ts\": 110, \"dur\": 40},"
    "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 10, \"tid\": 1, \"ts\": 120, \"dur\": 20},"
    "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::empty\", \"pid\": 10, \"tid\": 1, \"ts\": 125, \"dur\": 5},"
#define MEM(ts, rest) "{\"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"s\": \"t\", \"name\": \"[memory]\", " \
                      "\"pid\": 10, \"tid\": 1, \"ts\": " #ts ", \"args\": {\"Device Type\": 1, " rest "}}"
    MEM(10, "\"Device Id\": 0, \"Bytes\": 100, \"Total Allocated\": 1100, \"Total Reserved\": 2048") ","
    MEM(50, "\"Device Id\": 0, \"Bytes\": -100, \"Total Allocated\": 1000, \"Total Reserved\": 2048") ","
    MEM(127, "\"Device Id\": 0, \"Addr\": 4660, \"Bytes\": 500, \"Total Allocated\": 1500, \"Total Reserved\": 4096") ","
    MEM(160, "\"Device Id\": 0, \"Bytes\": -490, \"Total Allocated\": 1010, \"Total Reserved\": 4096") ","
    MEM(250, "\"Device Id\": 0, \"Bytes\": 10, \"Total Allocated\": 1020, \"Total Reserved\": 4096") ","
    MEM(360, "\"Device Id\": 0, \"Bytes\": 10, \"Total Allocated\": -5, \"Total Reserved\": 4096") ","
    MEM(370, "\"Device Id\": 0, \"Bytes\": 10, \"Total Reserved\": 4096") ","
    MEM(380, "\"Device Id\": 5, \"Bytes\": 1, \"Total Allocated\": 1, \"Total Reserved\": 1") ","
    MEM(350, "\"Device Id\": 0, \"Bytes\": 10, \"Total Allocated\": 1030, \"Total Reserved\": 4096")
#undef MEM
    "]}";

static void check_mem(const mt_rank_analysis_t *a)
{
    assert_int_equal(a->n_mem_devs, 2);
    const mt_an_mem_dev_t *d = &a->mem_devs[0];
    assert_int_equal(d->device, 0);
    assert_int_equal(d->device_type, 1);
    assert_int_equal(d->flags, 0);
    assert_int_equal(d->events, 6);
    assert_int_equal(d->peak_alloc, 1500);
    assert_int_equal(d->peak_alloc_ns, 127 * US);
    assert_int_equal(d->peak_alloc_step, 2);
    assert_string_equal(sname(a, d->peak_op), "aten::empty");
    assert_string_equal(sname(a, d->peak_annotation), "## fwd ##");
    assert_int_equal(d->peak_alloc_bytes, 500);
    assert_int_equal(d->peak_alloc_addr, 4660);
    assert_int_equal(d->peak_alloc_reserved, 4096);
    assert_int_equal(d->peak_reserved, 4096);
    assert_int_equal(d->peak_reserved_ns, 127 * US);
    assert_int_equal(d->end_alloc, 1030);
    assert_int_equal(d->trend_bytes_per_step, 10);
    assert_int_equal(d->trend_steps, 3);
    assert_int_equal(d->grows_every_step, 1);
    assert_int_equal(d->n_steps, 4);
    static const int64_t end[4] = {1000, 1010, 1020, 1030}, peak[4] = {1100, 1500, 1020, 1030};
    static const uint64_t allocs[4] = {1, 1, 1, 1}, frees[4] = {1, 1, 0, 0};
    for (int k = 0; k < 4; k++) {
        const mt_an_mem_step_t *s = &a->mem_steps[d->first_step + k];
        assert_int_equal(s->step, k + 1);
        assert_int_equal(s->alloc_end, end[k]);
        assert_int_equal(s->peak_alloc, peak[k]);
        assert_int_equal(s->allocs, allocs[k]);
        assert_int_equal(s->frees, frees[k]);
    }
    assert_int_equal(d->n_points, 6); /* a small trace keeps every state */
    assert_int_equal(a->mem_points[d->first_point + 2].alloc, 1500);
    assert_int_equal(a->mem_devs[1].device, 5);
    assert_int_equal(a->mem_devs[1].peak_alloc, 1);
    static const int64_t first[MT_AN_MEM_ISSUE_COUNT_] = {13, 14, 16, 15};
    for (int k = 0; k < MT_AN_MEM_ISSUE_COUNT_; k++) {
        assert_int_equal(a->mem_issues[k].count, 1);
        assert_int_equal(a->mem_issues[k].event, first[k]);
    }
    assert_int_equal(a->mem_issues[MT_AN_MEM_NO_GPU].device, 5);
}

static void test_memory(void **state)
{
    (void)state;
    mt_trace_t *t = load_str(mem_json);
    assert_int_equal(t->n_mems, 9);
    mt_rank_analysis_t *a = analyze(t, 0, NULL);
    mt_trace_free(t);
    check_mem(a);
    void *bytes;
    size_t len;
    assert_int_equal(mt_rank_analysis_pack(a, &bytes, &len), MT_OK);
    mt_rank_analysis_t *u = NULL;
    assert_int_equal(mt_rank_analysis_unpack(bytes, len, &u, NULL), MT_OK);
    check_mem(u);
    /* a device index beyond the steps or points is a format error */
    mt_rank_analysis_t *bad = u;
    bad->mem_devs[0].n_points = 1000;
    void *b2;
    size_t l2;
    assert_int_equal(mt_rank_analysis_pack(bad, &b2, &l2), MT_OK);
    mt_rank_analysis_t *x = NULL;
    assert_int_equal(mt_rank_analysis_unpack(b2, l2, &x, NULL), MT_ERR_FORMAT);
    free(b2);
    free(bytes);
    mt_rank_analysis_free(u);
    mt_rank_analysis_free(a);

    /* no [memory] events: nothing, no issue */
    t = load_str(t1_json);
    a = analyze(t, 0, NULL);
    assert_int_equal(a->n_mem_devs, 0);
    for (int k = 0; k < MT_AN_MEM_ISSUE_COUNT_; k++)
        assert_int_equal(a->mem_issues[k].count, 0);
    mt_rank_analysis_free(a);
    mt_trace_free(t);
}

/* The graph's annotations (analysis.h "graph"), us. Process 10: tid 1
 * holds ProfilerStep#3 [90,400], "outer" [100,300], "inner" [150,200];
 * tid 3 "same_start" [150,180]; tid 2 "nccl:all_reduce" [245,255]; with
 * other_pid also process 11 "other pid" [100,400]. The file has the ranges
 * out of time order (same_start, inner, the step, outer, nccl). Kernels
 * k1..k6 are launched by tid 2 (the autograd thread: no range of its own)
 * at 120, 160, 190, 200, 250, 350 and run in the reverse order (k6 first),
 * so neither the ranges nor the launches come sorted; k7 has no launch
 * call and runs last. Innermost = the latest start holding the launch
 * (ends inclusive), then the shortest, on any thread of process 10,
 * ProfilerStep and nccl:* left out:
 *   k1 120: outer.  k2 160: inner and same_start start at 150, same_start
 *   is shorter.  k3 190: inner (same_start ended at 180).  k4 200: inner
 *   (its end, inclusive).  k5 250: outer (nccl:* left out).  k6 350: only
 *   the step: none.  k7: none. "other pid" never counts (another
 *   process). Table in file order: same_start, inner, outer (, other pid).
 * Without other_pid every range and launch is of one process (the radix
 * sort); with it, of two (qsort). */
static void annotations_case(bool other_pid)
{
    struct {
        const char *name;
        int tid, ts, dur;
    } rg[] = {{"same_start", 3, 150, 30},
              {"inner", 1, 150, 50},
              {"ProfilerStep#3", 1, 90, 310},
              {"outer", 1, 100, 200},
              {"nccl:all_reduce", 2, 245, 10}};
    const int launch[6] = {120, 160, 190, 200, 250, 350};
    char *js = malloc(8192);
    size_t n = (size_t)sprintf(js, "{\"traceEvents\": [\n");
    for (size_t i = 0; i < sizeof rg / sizeof rg[0]; i++)
        n += (size_t)sprintf(js + n,
                             "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"%s\", \"pid\": 10, \"tid\": %d,"
                             " \"ts\": %d, \"dur\": %d},\n",
                             rg[i].name, rg[i].tid, rg[i].ts, rg[i].dur);
    if (other_pid)
        n += (size_t)sprintf(js + n, "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"other pid\", \"pid\": 11,"
                                     " \"tid\": 1, \"ts\": 100, \"dur\": 300},\n");
    for (int k = 0; k < 6; k++)
        n += (size_t)sprintf(js + n,
                             "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 10,"
                             " \"tid\": 2, \"ts\": %d, \"dur\": 1, \"args\": {\"correlation\": %d}},\n"
                             "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k%d\", \"pid\": 0, \"tid\": 7, \"ts\": %d,"
                             " \"dur\": 10, \"args\": {\"correlation\": %d}},\n",
                             launch[k], k + 1, k + 1, 550 - 10 * k, k + 1);
    sprintf(js + n, "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k7\", \"pid\": 0, \"tid\": 7, \"ts\": 600,"
                    " \"dur\": 10}\n]}\n");
    mt_trace_t *t = load_str(js);
    free(js);
    mt_rank_analysis_t *a = analyze(t, 0, NULL);
    mt_trace_free(t);
    /* activities by start: k6 .. k1, k7 */
    const char *want[7] = {"", "outer", "inner", "inner", "same_start", "outer", ""};
    assert_int_equal(a->n_gacts, 7);
    assert_int_equal(a->n_annots, other_pid ? 4 : 3);
    assert_string_equal(sname(a, a->annots[0]), "same_start");
    assert_string_equal(sname(a, a->annots[2]), "outer");
    if (other_pid)
        assert_string_equal(sname(a, a->annots[3]), "other pid");
    for (int k = 0; k < 7; k++) {
        uint32_t id = a->gacts[k].annot;
        assert_true(id <= a->n_annots);
        assert_string_equal(id ? sname(a, a->annots[id - 1]) : "", want[k]);
    }
    /* packed and back; an index beyond the table is a format error */
    void *bytes;
    size_t len;
    mt_rank_analysis_t *u = NULL;
    assert_int_equal(mt_rank_analysis_pack(a, &bytes, &len), MT_OK);
    assert_int_equal(mt_rank_analysis_unpack(bytes, len, &u, NULL), MT_OK);
    assert_int_equal(u->n_annots, a->n_annots);
    assert_int_equal(u->gacts[1].annot, a->gacts[1].annot);
    mt_rank_analysis_free(u);
    free(bytes);
    a->gacts[6].annot = (uint32_t)a->n_annots + 1;
    assert_int_equal(mt_rank_analysis_pack(a, &bytes, &len), MT_OK);
    assert_int_equal(mt_rank_analysis_unpack(bytes, len, &u, NULL), MT_ERR_FORMAT);
    free(bytes);
    mt_rank_analysis_free(a);
}

static void test_annotations(void **state)
{
    (void)state;
    annotations_case(false);
    annotations_case(true);
}


/* The pass "waits" (analysis.h): cuda_sync stream-wait records as gdeps.
 * One rank, absolute us; runtime calls on pid 10 tid 1 by correlation:
 *   1 cudaLaunchKernel -> K1 s7 [20,120)
 *   2 cudaEventRecord (on s7: the last s7 launch before it is K1)
 *   3 cudaLaunchKernel -> K4 s8 [60,125)
 *   4 cudaLaunchKernel -> K3 s7 [120,220) (after the record: not waited for)
 *   5 cudaStreamWaitEvent: s20 waits on record 2 (Stream Wait Event, tid 20)
 *   6 cuLaunchKernelEx -> N1 s20 [130,200): the wait's consumer
 *   7 cudaStreamWaitEvent: record -1 (unresolved)
 *   8 cuLaunchKernelEx -> N2 s20 [210,260)
 *   9 cudaStreamWaitEvent: s20 on s8's record 9: no s20 launch after it
 *     (unresolved)
 *  10 an Event Sync (tid -1) naming record 2: a host wait, not counted
 *  11 cudaStreamWaitEvent: s7 waits on s20's record 12; 13 launches K5 on
 *     s7 [250,300): N2 (corr 8) ends at 260, after K5's start (unresolved)
 * gacts by start: K1 0, K4 1, K3 2, N1 3, N2 4, K5 5. N1's wait is K1
 * (the inference would take K4, which ends later, at 125, before N1's
 * start 130); every other activity's is left to the inference. */
static void test_stream_waits(void **state)
{
    (void)state;
#define RT(nm, ts, c) "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"" nm "\", \"pid\": 10, \"tid\": 1, " \
                      "\"ts\": " #ts ", \"dur\": 1, \"args\": {\"correlation\": " #c "}},\n"
#define KN(nm, st, ts, dur, c) "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"" nm "\", \"pid\": 0, \"tid\": " #st \
                               ", \"ts\": " #ts ", \"dur\": " #dur ", \"args\": {\"stream\": " #st ", \"correlation\": " \
                               #c "}},\n"
#define SW(nm, tid, ts, c, ws, rc) "{\"ph\": \"X\", \"cat\": \"cuda_sync\", \"name\": \"" nm "\", \"pid\": 0, " \
                                   "\"tid\": " #tid ", \"ts\": " #ts ", \"dur\": 0.01, \"args\": {\"cuda_sync_kind\": \"" \
                                   nm "\", \"wait_on_stream\": " #ws ", \"wait_on_cuda_event_record_corr_id\": " #rc \
                                   ", \"wait_on_cuda_event_id\": 5, \"stream\": " #tid ", \"correlation\": " #c "}},\n"
    static const char json[] = "{\"traceEvents\": [\n"
        RT("cudaLaunchKernel", 10, 1) RT("cudaEventRecord", 12, 2) RT("cudaLaunchKernel", 14, 3)
        RT("cudaLaunchKernel", 16, 4) RT("cudaStreamWaitEvent", 18, 5) SW("Stream Wait Event", 20, 18, 5, 7, 2)
        RT("cuLaunchKernelEx", 20, 6) RT("cudaStreamWaitEvent", 22, 7) SW("Stream Wait Event", 20, 22, 7, 7, -1)
        RT("cuLaunchKernelEx", 24, 8) RT("cudaStreamWaitEvent", 26, 9) SW("Stream Wait Event", 20, 26, 9, 8, 9)
        SW("Event Sync", -1, 27, 10, 7, 2) RT("cudaStreamWaitEvent", 28, 11) SW("Stream Wait Event", 7, 28, 11, 20, 12)
        RT("cudaLaunchKernel", 30, 13)
        KN("K1", 7, 20, 100, 1) KN("K4", 8, 60, 65, 3) KN("K3", 7, 120, 100, 4) KN("N1", 20, 130, 70, 6)
        KN("N2", 20, 210, 50, 8) KN("K5", 7, 250, 50, 13)
        "{\"ph\": \"i\", \"s\": \"g\", \"name\": \"end\", \"pid\": 10, \"tid\": 1, \"ts\": 400}\n]}\n";
#undef RT
#undef KN
#undef SW
    mt_trace_t *t = load_str(json);
    assert_int_equal(t->n_swaits, 5);
    mt_rank_analysis_t *a = analyze(t, 0, NULL);
    mt_trace_free(t);
    assert_int_equal(a->n_gacts, 6);
    static const char *order[] = {"K1", "K4", "K3", "N1", "N2", "K5"};
    for (size_t k = 0; k < 6; k++)
        assert_string_equal(sname(a, a->gacts[k].name), order[k]);
    assert_int_equal(a->swaits_named, 1);
    assert_int_equal(a->swaits_unresolved, 3);
    assert_non_null(a->gdeps);
    const int32_t want[12] = {-2, -1, -2, -1, -2, -1, 0, -1, -2, -1, -2, -1};
    assert_memory_equal(a->gdeps, want, sizeof want);

    /* packed with the result, and dropped with the activities */
    void *bytes;
    size_t len;
    assert_int_equal(mt_rank_analysis_pack(a, &bytes, &len), MT_OK);
    mt_rank_analysis_t *u = NULL;
    assert_int_equal(mt_rank_analysis_unpack(bytes, len, &u, NULL), MT_OK);
    assert_non_null(u->gdeps);
    assert_memory_equal(u->gdeps, want, sizeof want);
    assert_int_equal(u->swaits_named, 1);
    assert_int_equal(u->swaits_unresolved, 3);
    mt_rank_analysis_free(u);
    mt_buf_t b = {0};
    assert_int_equal(mt_buf_append(&b, bytes, len), MT_OK);
    assert_int_equal(mt_rank_analysis_packed_drop_gacts(&b), MT_OK);
    assert_int_equal(b.len, len - 6 * 56 - 12 * 4);
    assert_int_equal(mt_rank_analysis_unpack(b.data, b.len, &u, NULL), MT_OK);
    assert_int_equal(u->n_gacts, 0);
    assert_null(u->gdeps);
    mt_rank_analysis_drop_gacts(a);
    assert_same(a, u);
    mt_rank_analysis_free(u);
    mt_buf_free(&b);
    /* a pair count that is not the activities' is a format error */
    char *bad = malloc(len);
    memcpy(bad, bytes, len);
    size_t at = 0;
    for (size_t o = 16; o + 8 <= len; o++) { /* the count 12 right after the 6 activities */
        uint64_t v;
        memcpy(&v, bad + o, 8);
        if (v == 12 && o >= 6 * 56 + 8) {
            uint64_t g;
            memcpy(&g, bad + o - 6 * 56 - 8, 8);
            if (g == 6) {
                at = o;
                break;
            }
        }
    }
    assert_true(at > 0);
    uint64_t ten = 10;
    memcpy(bad + at, &ten, 8);
    assert_int_equal(mt_rank_analysis_unpack(bad, len, &u, NULL), MT_ERR_FORMAT);
    free(bad);
    free(bytes);
    mt_rank_analysis_free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hand_trace),          cmocka_unit_test(test_kernels_percentiles),
        cmocka_unit_test(test_two_gpus_and_empty),  cmocka_unit_test(test_pack_roundtrip),
        cmocka_unit_test(test_packed_drop_gacts),  cmocka_unit_test(test_stream_waits),
        cmocka_unit_test(test_projection_span_blocks),
        cmocka_unit_test(test_report_sections),     cmocka_unit_test(test_sample_truth),
        cmocka_unit_test(test_memory),              cmocka_unit_test(test_annotations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
