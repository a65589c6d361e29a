/* Cross-rank benchmark: process 0's steps (match, clock fit, cross-rank
 * passes) on synthetic collective rows of R ranks x K collectives, without
 * traces, for job sizes whose JSON would not fit on this machine (4096
 * ranks with full rank lists is about 68 GB). Prints CPU seconds per step,
 * ns per n log2 n, the growth of peak RSS and the worst clock error against
 * the offsets it injected. Used by scripts/bench (scale); not a test.
 *
 * Rows as a data-parallel job's allreduces look after mt_cinst_extract:
 * one world process group (group hash and size), Seq = the collective's
 * number, 8 collectives per ProfilerStep, every rank's end within a few us
 * of the others' in true time, each rank's clock offset by up to +-50 ms
 * and drifting by up to +-50 ppm. With a third argument "stream", rows as
 * traces without collective metadata give them (older PyTorch, NCCL
 * kernels alone): no process group, Seq or group size, the NCCL stream a
 * different number on different ranks; the match pairs the streams and
 * anchors the ordinals (FORMAT.md 7.1). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mergetrace/mergetrace.h"
#include "bench_util.h"

static double cpu(void)
{
    return bench_seconds(CLOCK_PROCESS_CPUTIME_ID);
}

static uint64_t rng = 0x9e3779b97f4a7c15u;
static double uniform(void) /* [0, 1) */
{
    return bench_uniform(&rng);
}

int main(int argc, char **argv)
{
    bool stream = argc == 4 && strcmp(argv[3], "stream") == 0;
    if ((argc != 3 && !stream) || atoi(argv[1]) < 2 || atoi(argv[2]) < 1) {
        fprintf(stderr, "usage: bench_cross RANKS COLLECTIVES_PER_RANK [stream]\n");
        return 64;
    }
    size_t R = (size_t)atoi(argv[1]), K = (size_t)atoi(argv[2]), n = R * K;
    double base_mb = bench_peak_mb();
    mt_cinst_t *rows = malloc(n * sizeof *rows);
    int32_t *ranks = malloc(R * sizeof *ranks);
    double *off = malloc(R * sizeof *off), *drift = malloc(R * sizeof *drift);
    mt_clock_t *clocks = calloc(R, sizeof *clocks);
    mt_strtab_t *labels = mt_strtab_create(); /* the rows' two labels, as mt_cinst_extract interns them */
    uint32_t pg_id = 0, dtype_id = 0;
    if (!rows || !ranks || !off || !drift || !clocks || !labels || mt_strtab_intern(labels, "0", 1, &pg_id) ||
        mt_strtab_intern(labels, "Float", 5, &dtype_id)) {
        fprintf(stderr, "bench_cross: out of memory\n");
        return 1;
    }
    for (size_t r = 0; r < R; r++) {
        ranks[r] = (int32_t)r;
        off[r] = r ? (uniform() * 2 - 1) * 50e6 : 0;   /* ns */
        drift[r] = r ? (uniform() * 2 - 1) * 50 : 0;   /* ppm */
    }
    const int64_t t0 = 1767189312000000000LL;
    for (size_t r = 0; r < R; r++)
        for (size_t k = 0; k < K; k++) {
            mt_cinst_t *c = &rows[r * K + k];
            double truth = (double)k * 1e6 + uniform() * 4e3; /* 1 ms apart, ends within 4 us */
            bench_row(c, r, k, R, t0, truth + off[r] + drift[r] * 1e-6 * truth, pg_id, dtype_id);
            if (stream) {
                c->seq = c->group_size = -1;
                c->stream = 7 + (int64_t)(r % 3);
                c->group = 0x57ea0000u + (uint64_t)c->stream; /* as a hash of "stream N" */
                c->flags = MT_CI_STREAM | MT_CI_STEP;
            }
        }
    double rows_mb = bench_peak_mb();
    mt_match_t *m = NULL;
    mt_match_stats_t ms;
    double c0 = cpu();
    mt_status_t st = mt_match(rows, n, &m, &ms);
    /* as mt_align_job: once matched, the rows compact in place and the
     * block shrunk (counted in the match's column) */
    mt_crow_t *crows = mt_crow_compact(rows, n), *shrunk = realloc(crows, n * sizeof *crows);
    if (shrunk)
        crows = shrunk;
    rows = NULL;
    double c1 = cpu();
    mt_clock_opts_t co = {.ref_rank = -1};
    if (st == MT_OK)
        st = mt_clock_fit(crows, n, m, ranks, R, &co, clocks);
    double c2 = cpu();
    mt_cross_t *x = NULL;
    if (st == MT_OK)
        st = mt_cross_analyze(crows, n, labels, m, clocks, ranks, R, &x);
    double c3 = cpu();
    if (st != MT_OK) {
        fprintf(stderr, "bench_cross: %s\n", mt_status_str(st));
        return 1;
    }
    /* The fit's error at the middle of the run, against the truth: rank
     * r's corrected time of a true instant should be that instant on rank
     * 0's clock (offset 0, no drift). */
    double worst = 0, mid = (double)K / 2 * 1e6;
    for (size_t r = 0; r < R; r++) {
        int64_t own = t0 + (int64_t)llround(mid + off[r] + drift[r] * 1e-6 * mid);
        double e = fabs((double)(mt_clock_apply(&clocks[r], own) - (t0 + (int64_t)mid)));
        if (e > worst)
            worst = e;
    }
    double nl = (double)n * log2((double)n), sum = c3 - c0;
    printf("%6zu %6zu %10zu | %8.3f %8.3f %8.3f %8.3f %8.1f | %8.0f %8.0f %9.0f | %8llu %8.2f\n", R, K, n, c1 - c0,
           c2 - c1, c3 - c2, sum, sum / nl * 1e9, rows_mb - base_mb, bench_peak_mb() - base_mb,
           (bench_peak_mb() - base_mb) * 1e6 / (double)n, (unsigned long long)ms.full, worst / 1e3);
    mt_cross_free(x);
    mt_match_free(m);
    free(crows);
    free(ranks);
    free(off);
    free(drift);
    free(clocks);
    mt_strtab_free(labels);
    return 0;
}
