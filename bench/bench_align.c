/* The alignment step under MPI (mt_align_job with the program's MPI comm
 * table): R ranks x K collectives of synthetic rows, the ranks dealt to the
 * processes round robin, for the match sharded across the processes (rows
 * with Seq and group size, as bench_cross makes them) or, with a third
 * argument "central", the same rows without a group size, which process 0
 * matches alone; then, on process 0, the cross-rank passes over the
 * gathered rows (mt_cross_analyze), as the program runs them. Prints, on
 * process 0: CPU and wall seconds of the step on process 0, the largest
 * CPU seconds of any process, the passes' CPU seconds, process 0's peak
 * RSS growth over its rows (through the passes) and the largest other
 * process's, and the worst clock error against the offsets injected. Used by scripts/bench; not a
 * test. Run: mpirun -n P bench_align RANKS K [central] */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mergetrace/mergetrace.h"
#include "bench_util.h"
#include "comm_mpi.h"
#include "procs.h"

static void rank_clock(size_t r, double *off, double *drift)
{
    uint64_t s = 0x9e3779b97f4a7c15u ^ (r * 0x2545F4914F6CDD1Dull + 1);
    *off = r ? (bench_uniform(&s) * 2 - 1) * 50e6 : 0;
    *drift = r ? (bench_uniform(&s) * 2 - 1) * 50 : 0;
}

int main(int argc, char **argv)
{
    procs_start(&argc, &argv, mt_launcher_mpi());
    MPI_Comm world = MPI_COMM_WORLD;
    mt_comm_t comm;
    comm_mpi_init(&comm, &world);
    bool central = argc == 4 && strcmp(argv[3], "central") == 0;
    if ((argc != 3 && !central) || atoi(argv[1]) < 2 || atoi(argv[2]) < 1) {
        if (comm.rank == 0)
            fprintf(stderr, "usage: mpirun -n P bench_align RANKS COLLECTIVES_PER_RANK [central]\n");
        procs_end();
        return 64;
    }
    size_t R = (size_t)atoi(argv[1]), K = (size_t)atoi(argv[2]), P = (size_t)comm.size, me = (size_t)comm.rank;
    size_t mine = R / P + (me < R % P), n = mine * K;
    double base_mb = bench_peak_mb();
    mt_cinst_t *rows = malloc((n ? n : 1) * sizeof *rows);
    int32_t *ranks = malloc(R * sizeof *ranks);
    mt_strtab_t *labels = mt_strtab_create();
    uint32_t pg_id = 0, dtype_id = 0;
    if (!rows || !ranks || !labels || mt_strtab_intern(labels, "0", 1, &pg_id) ||
        mt_strtab_intern(labels, "Float", 5, &dtype_id)) {
        fprintf(stderr, "bench_align: out of memory\n");
        MPI_Abort(world, 1);
    }
    for (size_t r = 0; r < R; r++)
        ranks[r] = (int32_t)r;
    const int64_t t0 = 1767189312000000000LL;
    size_t at = 0;
    for (size_t r = me; r < R; r += P) {
        double off, drift;
        rank_clock(r, &off, &drift);
        uint64_t s = 0x243F6A8885A308D3ull ^ (r + 1);
        for (size_t k = 0; k < K; k++) {
            mt_cinst_t *c = &rows[at++];
            double truth = (double)k * 1e6 + bench_uniform(&s) * 4e3; /* 1 ms apart, ends within 4 us */
            bench_row(c, r, k, R, t0, truth + off + drift * 1e-6 * truth, pg_id, dtype_id);
            if (central)
                c->group_size = -1;
        }
    }
    double rows_mb = bench_peak_mb();
    MPI_Barrier(world);
    double w0 = bench_seconds(CLOCK_MONOTONIC), c0 = bench_seconds(CLOCK_PROCESS_CPUTIME_ID);
    mt_clock_opts_t co = {.ref_rank = -1};
    mt_align_result_t res;
    mt_error_t err;
    mt_error_clear(&err);
    mt_status_t st = mt_align_job_owned(&comm, rows, n, labels, ranks, R, &co, &res, &err);
    double c1 = bench_seconds(CLOCK_PROCESS_CPUTIME_ID), w1 = bench_seconds(CLOCK_MONOTONIC);
    if (st != MT_OK) {
        fprintf(stderr, "bench_align: process %zu: %s %s\n", me, mt_status_str(st), err.msg);
        MPI_Abort(world, 1);
    }
    /* the fit's error at the middle of the run against the truth */
    double worst = 0, mid = (double)K / 2 * 1e6;
    for (size_t r = 0; r < R; r++) {
        double off, drift;
        rank_clock(r, &off, &drift);
        int64_t own = t0 + (int64_t)llround(mid + off + drift * 1e-6 * mid);
        double e = fabs((double)(mt_clock_apply(&res.clocks[r], own) - (t0 + (int64_t)mid)));
        if (e > worst)
            worst = e;
    }
    double align_mb = bench_peak_mb() - rows_mb, c2 = bench_seconds(CLOCK_PROCESS_CPUTIME_ID);
    mt_cross_t *x = NULL;
    if (me == 0 && (st = mt_cross_analyze(res.rows, res.n_rows, res.labels, res.m, res.clocks, ranks, R, &x))) {
        fprintf(stderr, "bench_align: cross-rank passes: %s\n", mt_status_str(st));
        MPI_Abort(world, 1);
    }
    double c3 = bench_seconds(CLOCK_PROCESS_CPUTIME_ID);
    mt_cross_free(x);
    double mine_v[2] = {c1 - c0, bench_peak_mb() - rows_mb}, most[2];
    double others[2] = {me ? c1 - c0 : 0, me ? bench_peak_mb() - rows_mb : 0}, most_other[2];
    MPI_Reduce(mine_v, most, 2, MPI_DOUBLE, MPI_MAX, 0, world);
    MPI_Reduce(others, most_other, 2, MPI_DOUBLE, MPI_MAX, 0, world);
    if (me == 0)
        printf("%6zu %6zu %10zu %3zu %-7s | p0 cpu %7.3f s (match %6.3f, fit %6.3f), wall %7.3f s, max cpu %7.3f s | "
               "passes %6.3f s | p0 rows %7.0f MB, growth %7.0f MB (%5.0f B/row; %5.0f after the step), others' max %7.0f MB | "
               "full %llu, "
               "worst %.2f us\n",
               R, K, R * K, P, res.match_procs > 1 ? "sharded" : "central", c1 - c0, res.match_cpu_s,
               res.fit_cpu_s, w1 - w0, most[0], c3 - c2, rows_mb - base_mb, mine_v[1],
               mine_v[1] * 1e6 / (double)(R * K), align_mb * 1e6 / (double)(R * K), most_other[1], (unsigned long long)res.match.full, worst / 1e3);
    mt_align_result_free(&res);
    free(ranks);
    mt_strtab_free(labels);
    procs_end();
    return 0;
}
