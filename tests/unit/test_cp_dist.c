/* The critical path's whole-job statistics as reductions
 * (mt_cp_dist_reduce, src/cross/cp_dist.c) on 1, 2, 3 and 4 simulated
 * processes (threads behind unit/fake_comm.c), the ranks dealt unevenly
 * (one process with none): the straggler factors and the ideal what-if's
 * typical values must be the values worked out here by hand (two ranks)
 * or by a plain recomputation from the generator's activities (seven
 * ranks, clocks with offsets and a drift, a warm-up step, a rank with its
 * step number twice, a comm name whose transfers go below 0), the same on
 * every process count; and mt_critpath_run with the reductions
 * (mt_cp_request_t.reduce) must give the same what-ifs, to the bit, as
 * the one-process run over its graph, with and without pipeline stages. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/hash.h"
#include "cross/cp_dist.h"
#include "cross/critpath_int.h"
#include "fake_comm.h"
#include "mergetrace/critpath.h"
#include "test_util.h"

#define US 1000
#define R_MAX 8
#define S_MAX 8

/* names: offsets into the pool */
static char pool[] = "gemm\0layernorm\0Memcpy HtoD\0nccl:all_reduce\0nccl:send";
enum { N_GEMM, N_LN, N_CPY, N_AR, N_SEND, N_NAMES };
static const mt_an_str_t NAMES[N_NAMES] = {{0, 4}, {5, 9}, {15, 11}, {27, 15}, {43, 9}};
static const uint32_t CLS[N_NAMES] = {MT_AN_COMPUTE, MT_AN_COMPUTE, MT_AN_MEMORY, MT_AN_COMM, MT_AN_COMM};

static uint64_t name_hash(int k)
{
    return mt_hash64(pool + NAMES[k].off, NAMES[k].len, CP_NAME_SEED);
}

typedef struct job {
    int R, S;
    mt_an_gact_t g[R_MAX][S_MAX * N_NAMES];
    mt_an_step_t st[R_MAX][S_MAX + 1];
    mt_an_sync_t sy[R_MAX][S_MAX];
    mt_rank_analysis_t a[R_MAX];
    mt_cinst_t rows[R_MAX * S_MAX];
    uint32_t first[S_MAX + 1], members[R_MAX * S_MAX];
    uint8_t key[S_MAX], status[S_MAX];
    int32_t expected[S_MAX];
    mt_match_t m;
    mt_clock_t clk[R_MAX];
    int32_t ranks[R_MAX];
} job_t;

/* The two ranks of test_critpath.c's fixture, with a memcpy each: gemm
 * 100 / 250 us, ar transfers 50 / 50 (the last arrival 280), opt 50 / 50,
 * memcpy 20 / 30. */
static void job_small(job_t *j)
{
    memset(j, 0, sizeof *j);
    j->R = 2;
    j->S = 1;
    static const int64_t t[2][4][2] = {{{30, 130}, {130, 330}, {345, 395}, {400, 420}},
                                       {{30, 280}, {280, 330}, {330, 380}, {380, 410}}};
    static const int nm[4] = {N_GEMM, N_AR, N_LN, N_CPY};
    for (int r = 0; r < 2; r++) {
        for (int k = 0; k < 4; k++)
            j->g[r][k] = (mt_an_gact_t){.start_ns = t[r][k][0] * US, .end_ns = t[r][k][1] * US,
                                        .launch_ns = (10 + 10 * k) * US, .launch_end_ns = (20 + 10 * k) * US,
                                        .name = NAMES[nm[k]], .stream = k == 1, .cls = CLS[nm[k]]};
        j->st[r][0] = (mt_an_step_t){.step = 7, .cpu_start_ns = 0, .cpu_end_ns = 430 * US, .end_ns = 430 * US};
        mt_rank_analysis_t *a = &j->a[r];
        a->rank = r;
        a->gacts = j->g[r];
        a->n_gacts = 4;
        a->steps = j->st[r];
        a->n_steps = 1;
        a->strings = pool;
        a->strings_len = sizeof pool;
        j->rows[r] = (mt_cinst_t){.start_ns = j->g[r][1].start_ns, .end_ns = j->g[r][1].end_ns, .rank = r, .step = 7};
        j->members[r] = (uint32_t)r;
        j->ranks[r] = r;
        j->clk[r] = (mt_clock_t){.rank = r};
    }
    j->first[1] = 2;
    j->expected[0] = 2;
    j->m = (mt_match_t){.n_inst = 1, .first = j->first, .members = j->members, .key = j->key,
                        .status = j->status, .expected = j->expected};
}

/* R ranks x S steps (numbers 100 ..): per step gemm, layernorm, an
 * all-reduce matched over every rank, a memcpy and an unmatched send;
 * rank 3's gemm 1.3x slow; rank 5 has its last step's number a second
 * time (a step of nothing but a gemm: no job step takes it). Raw times;
 * clocks with offsets, rank 2 with a drift. */
static void job_gen(job_t *j, int R, int S, uint64_t seed)
{
    memset(j, 0, sizeof *j);
    j->R = R;
    j->S = S;
    uint64_t rs = seed;
    size_t nrow = 0;
    for (int k = 0; k < S; k++) {
        j->first[k] = (uint32_t)nrow;
        for (int r = 0; r < R; r++) {
            int64_t base = (int64_t)k * 20000 * US + r * US, t = base + 10 * US;
            mt_an_gact_t *g = &j->g[r][k * N_NAMES];
            for (int q = 0; q < N_NAMES; q++) {
                int64_t d = q == N_GEMM ? 1000 * US : q == N_LN ? 200 * US : q == N_CPY ? 50 * US : q == N_AR ? 300 * US
                                                                                                            : 70 * US;
                if (q == N_GEMM && r == 3)
                    d = d * 13 / 10;
                d += (int64_t)(tu_rand(&rs) % 40000);
                if (q == N_AR) /* the ends close together, rank 6's before the last arrival (rank 3's,
                                * after its slow gemm): a transfer below 0 */
                    d = base + (r == 6 ? 1500 : 2000) * US + (int64_t)(tu_rand(&rs) % 100000) - t;
                /* launched ahead, at the step's start: the GPU's chain binds */
                g[q] = (mt_an_gact_t){.start_ns = t, .end_ns = t + d, .launch_ns = base + (2 * q + 1) * US,
                                      .launch_end_ns = base + (2 * q + 2) * US, .name = NAMES[q], .stream = q == N_AR,
                                      .cls = CLS[q]};
                if (q == N_AR) {
                    j->rows[nrow] = (mt_cinst_t){.start_ns = t, .end_ns = t + d, .rank = r, .step = 100 + k};
                    j->members[nrow] = (uint32_t)nrow;
                    nrow++;
                }
                t += d + US;
            }
            /* the host waits for the send (launched before the sync: the sync
             * is GPU-bound, the step's end follows the GPU) */
            j->sy[r][k] = (mt_an_sync_t){g[N_SEND].launch_end_ns + US, t + 4 * US};
            j->st[r][k] = (mt_an_step_t){.step = 100 + k, .cpu_start_ns = base, .cpu_end_ns = t + 10 * US,
                                         .end_ns = t + 10 * US};
        }
        j->key[k] = 0;
        j->status[k] = MT_INST_FULL;
        j->expected[k] = R;
    }
    j->first[S] = (uint32_t)nrow;
    for (int r = 0; r < R; r++) {
        mt_rank_analysis_t *a = &j->a[r];
        a->rank = r;
        a->gacts = j->g[r];
        a->n_gacts = (size_t)S * N_NAMES;
        a->steps = j->st[r];
        a->n_steps = (size_t)S;
        a->syncs = j->sy[r];
        a->n_syncs = (size_t)S;
        a->strings = pool;
        a->strings_len = sizeof pool;
        j->ranks[r] = r;
        j->clk[r] = (mt_clock_t){.rank = r, .offset_ns = (double)(r * 777 - 1000), .anchor_ns = 0};
    }
    j->clk[2].drift_ppm = 3.5;
    /* rank 5: one more step of number 100 + S - 1 after its last */
    mt_rank_analysis_t *a = &j->a[5];
    int64_t t = j->st[5][S - 1].end_ns + 1000 * US;
    j->st[5][S] = (mt_an_step_t){.step = 100 + S - 1, .cpu_start_ns = t, .cpu_end_ns = t + 600 * US, .end_ns = t + 600 * US};
    a->n_steps++;
    j->g[5][a->n_gacts++] = (mt_an_gact_t){.start_ns = t + 10 * US, .end_ns = t + 500 * US, .launch_ns = t + 5 * US,
                                          .launch_end_ns = t + 6 * US, .name = NAMES[N_GEMM], .cls = MT_AN_COMPUTE};
    j->m = (mt_match_t){.n_inst = (size_t)S, .first = j->first, .members = j->members, .key = j->key,
                        .status = j->status, .expected = j->expected};
}

/* ---- what the reductions must give, worked out plainly ---- */

static int cmp_i64(const void *pa, const void *pb)
{
    int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
    return (a > b) - (a < b);
}

static int cmp_dbl(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

static int64_t med_i64(int64_t *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_i64);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double med_dbl(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_dbl);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

typedef struct truth {
    int64_t typ[N_NAMES];
    double fac[N_NAMES][R_MAX]; /* 1: none */
} truth_t;

/* The generated job's statistics with warm-up 1 (steps 101 .. used) and
 * rank 3 named, without stages. */
static void truth_of(const job_t *j, truth_t *t)
{
    int64_t s[R_MAX][S_MAX * N_NAMES + 1], e[R_MAX][S_MAX * N_NAMES + 1];
    for (int r = 0; r < j->R; r++)
        for (size_t k = 0; k < j->a[r].n_gacts; k++) {
            s[r][k] = mt_clock_apply(&j->clk[r], j->g[r][k].start_ns);
            e[r][k] = mt_clock_apply(&j->clk[r], j->g[r][k].end_ns);
            if (e[r][k] < s[r][k])
                e[r][k] = s[r][k];
        }
    for (int q = 0; q < N_NAMES; q++) {
        /* straggler: every activity of the name, per rank mean */
        double means[R_MAX];
        for (int r = 0; r < j->R; r++) {
            double sum = 0;
            int n = 0;
            for (size_t k = 0; k < j->a[r].n_gacts; k++)
                if (j->g[r][k].name.off == NAMES[q].off) {
                    sum += (double)(e[r][k] - s[r][k]);
                    n++;
                }
            means[r] = sum / n;
            t->fac[q][r] = 1.0;
        }
        double tmp[R_MAX];
        memcpy(tmp, means, sizeof tmp);
        double med = med_dbl(tmp, (size_t)j->R);
        if (CLS[q] != MT_AN_COMM && means[3] > med)
            t->fac[q][3] = med / means[3];
        /* typical: used steps are k >= 1 (the rank-5 extra step is none) */
        if (CLS[q] == MT_AN_COMM) {
            int64_t v[R_MAX * S_MAX];
            size_t n = 0;
            for (int k = 1; k < j->S; k++) {
                int64_t last = INT64_MIN;
                for (int r = 0; r < j->R; r++)
                    last = s[r][k * N_NAMES + N_AR] > last ? s[r][k * N_NAMES + N_AR] : last;
                for (int r = 0; r < j->R; r++) {
                    size_t i = (size_t)k * N_NAMES + (size_t)q;
                    int64_t x = q == N_AR ? e[r][i] - last : e[r][i] - s[r][i];
                    v[n++] = x > 0 ? x : 0;
                }
            }
            t->typ[q] = med_i64(v, n);
        } else {
            int64_t rm[R_MAX];
            for (int r = 0; r < j->R; r++) {
                int64_t sum = 0;
                for (int k = 1; k < j->S; k++)
                    sum += e[r][k * N_NAMES + q] - s[r][k * N_NAMES + q];
                rm[r] = (int64_t)((double)sum / (j->S - 1) + 0.5);
            }
            t->typ[q] = med_i64(rm, (size_t)j->R);
        }
    }
}

/* ---- the processes ---- */

typedef struct proc {
    const job_t *j;
    const mt_comm_t *comm;
    int e2e;                   /* 1: process 0 runs mt_critpath_run with the reduce hook */
    const mt_cp_request_t *rq;
    const mt_cp_dist_in_t *in; /* process 0, !e2e */
    const mt_rank_analysis_t *an[R_MAX];
    size_t n_an;
    mt_cp_dist_t *d;
    mt_critpath_t *c;
    mt_status_t st;
    uint64_t sent, recv;
    /* the instances this process owns (test_owners): by_own set */
    int by_own;
    mt_owned_member_t own[R_MAX * S_MAX];
    size_t n_own;
    int from_owners;           /* the hook's result said so (process 0, e2e) */
    int members_calls;         /* process 0's members_of called (e2e) */
} proc_t;

static const mt_cp_owned_t *own_of(const proc_t *p, mt_cp_owned_t *o)
{
    if (!p->by_own)
        return NULL;
    *o = (mt_cp_owned_t){p->own, p->n_own};
    return o;
}

/* The graph's members_of, counted (e2e: process 0 must not build the
 * members when the owners work the transfers out). */
static proc_t *counted;
static mt_status_t members_counted(const void *ctx, mt_cp_member_t **m, size_t *n);
static mt_status_t (*members_real)(const void *ctx, mt_cp_member_t **m, size_t *n);

static mt_status_t members_counted(const void *ctx, mt_cp_member_t **m, size_t *n)
{
    counted->members_calls++;
    return members_real(ctx, m, n);
}

static mt_status_t hook(void *ctx, const mt_cp_dist_in_t *in, mt_cp_dist_t **out)
{
    proc_t *p = ctx;
    mt_cp_owned_t o;
    mt_cp_dist_in_t w = *in;
    if (w.members_of) {
        counted = p;
        members_real = w.members_of;
        w.members_of = members_counted;
    }
    mt_status_t st = mt_cp_dist_reduce(p->comm, &w, own_of(p, &o), p->an, p->n_an, p->j->clk, p->j->ranks,
                                       (size_t)p->j->R, out);
    p->sent = mt_cp_dist_sent(*out);
    p->recv = mt_cp_dist_received(*out);
    p->from_owners = *out && (*out)->from_owners;
    return st;
}

static void proc_fn(const mt_comm_t *comm, void *arg)
{
    proc_t *p = arg;
    p->comm = comm;
    const job_t *j = p->j;
    if (p->e2e && comm->rank == 0) {
        mt_cp_request_t rq = *p->rq;
        rq.reduce = hook;
        rq.hook_ctx = p;
        const mt_rank_analysis_t *all[R_MAX];
        for (int r = 0; r < j->R; r++)
            all[r] = &j->a[r];
        size_t nr = j->first[j->m.n_inst];
        p->st = mt_critpath_run(&rq, all, (size_t)j->R, j->clk, j->ranks, (size_t)j->R, tu_crows(j->rows, nr), nr,
                                &j->m, &p->c);
        return;
    }
    mt_cp_owned_t o;
    p->st = mt_cp_dist_reduce(comm, comm->rank == 0 ? p->in : NULL, own_of(p, &o), p->an, p->n_an, j->clk, j->ranks, (size_t)j->R,
                              &p->d);
    p->sent = mt_cp_dist_sent(p->d);
    p->recv = mt_cp_dist_received(p->d);
}

/* Uneven shares: for P processes, rank r goes to deal[P - 1][r]; with
 * mt_critpath_run (e2e) process 0 passes every rank besides, as the
 * program does once the analyses are gathered (its own: those no other
 * process has). */
static const int deal[4][R_MAX] = {
    {0, 0, 0, 0, 0, 0, 0, 0},
    {0, 0, 0, 0, 0, 1, 1, 1},
    {1, 0, 1, 1, 1, 1, 2, 1},
    {0, 2, 2, 2, 0, 3, 3, 2}, /* process 1 holds no rank */
};

/* A sharded match's instances: instance k owned by process
 * inst_deal[P - 1][k % 8] (uneven; with 4, process 1 owns none, as it
 * holds no rank). */
static const int inst_deal[4][8] = {
    {0, 0, 0, 0, 0, 0, 0, 0},
    {1, 1, 0, 1, 1, 1, 0, 1},
    {2, 0, 2, 1, 2, 2, 0, 2},
    {3, 3, 0, 2, 3, 0, 3, 0},
};

/* Each process's owned members (mt_align_result_t.owned as shard_keep
 * makes it): the instances the graph links, in match order. */
static void own_fill(const job_t *j, int P, proc_t *ps)
{
    uint32_t ni[4] = {0, 0, 0, 0};
    for (size_t k = 0; k < j->m.n_inst; k++) {
        if (j->m.status[k] == MT_INST_MISMATCH || j->m.first[k + 1] - j->m.first[k] < 2)
            continue;
        int q = inst_deal[P - 1][k % 8];
        proc_t *p = &ps[q];
        for (uint32_t x = j->m.first[k]; x < j->m.first[k + 1]; x++) {
            const mt_cinst_t *r = &j->rows[j->m.members[x]];
            assert_true(p->n_own < R_MAX * S_MAX);
            p->own[p->n_own++] = (mt_owned_member_t){r->start_ns, r->end_ns, r->rank, ni[q]};
        }
        ni[q]++;
    }
}

/* Run P processes; d (process 0's result) or c (e2e) returned through ps;
 * by_own: the instances dealt to owners (inst_deal). */
static void run_procs_own(const job_t *j, int P, int e2e, int by_own, const mt_cp_request_t *rq,
                          const mt_cp_dist_in_t *in, proc_t *ps)
{
    void *args[4];
    for (int q = 0; q < P; q++) {
        ps[q] = (proc_t){.j = j, .e2e = e2e, .rq = rq, .in = in, .by_own = by_own};
        for (int r = j->R - 1; r >= 0; r--) /* any order: highest rank first */
            if (deal[P - 1][r] == q || (e2e && q == 0)) /* as the program: process 0 passes every rank */
                ps[q].an[ps[q].n_an++] = &j->a[r];
        args[q] = &ps[q];
    }
    if (by_own)
        own_fill(j, P, ps);
    fake_comm_report_t rep;
    assert_int_equal(fake_comm_run(P, proc_fn, args, NULL, &rep), MT_OK);
    if (rep.broken)
        fail_msg("collectives broken: %s", rep.why);
    for (int q = 0; q < P; q++)
        assert_int_equal(ps[q].st, MT_OK);
}

static void run_procs(const job_t *j, int P, int e2e, const mt_cp_request_t *rq, const mt_cp_dist_in_t *in,
                      proc_t *ps)
{
    run_procs_own(j, P, e2e, 0, rq, in, ps);
}

/* The graph's members and used steps, as mt_critpath_run hands them over:
 * worked out here from the generator (ar of every rank and step). */
typedef struct job_in {
    int64_t used[S_MAX];
    mt_cp_member_t mem[R_MAX * S_MAX];
    mt_cp_dist_in_t in;
} job_in_t;

static void in_of(const job_t *j, int warmup, const mt_cp_request_t *rq, job_in_t *x)
{
    size_t nu = 0, nm = 0;
    for (int k = warmup; k < j->S; k++)
        x->used[nu++] = 100 + k;
    for (int r = 0; r < j->R; r++)
        for (int k = 0; k < j->S; k++) {
            int64_t last = INT64_MIN;
            for (int q = 0; q < j->R; q++) {
                int64_t s = mt_clock_apply(&j->clk[q], j->g[q][k * N_NAMES + N_AR].start_ns);
                last = s > last ? s : last;
            }
            int64_t e = mt_clock_apply(&j->clk[r], j->g[r][k * N_NAMES + N_AR].end_ns);
            x->mem[nm++] = (mt_cp_member_t){r, (uint32_t)(k * N_NAMES + N_AR), e - last};
        }
    x->in = (mt_cp_dist_in_t){.used_steps = x->used, .n_used = nu, .members = x->mem, .n_members = nm, .rq = rq};
}

/* Two ranks by hand: gemm means 100 and 250 us, median 175: rank 1 named
 * gets 175 / 250 = 0.7, rank 0 nothing; layernorm 50 / 50 and memcpy 20 /
 * 30 (median 25, rank 1's 30 above it: 25 / 30). Typical values (one
 * used step): gemm median of the ranks' means (100 + 250) / 2 = 175,
 * layernorm 50, memcpy 25; the all-reduce's transfers 330 - 280 = 50 on
 * both ranks: 50. Process counts 1 and 2 (a rank each; both on process 1). */
static void test_small_by_hand(void **state)
{
    (void)state;
    job_t *j = malloc(sizeof *j);
    assert_non_null(j);
    job_small(j);
    int32_t strag[1] = {1};
    mt_cp_request_t rq = {.stragglers = strag, .n_stragglers = 1, .ideal = true};
    int64_t used[1] = {7};
    mt_cp_member_t mem[2] = {{0, 1, 50 * US}, {1, 1, 50 * US}};
    mt_cp_dist_in_t in = {.used_steps = used, .n_used = 1, .members = mem, .n_members = 2, .rq = &rq};
    for (int P = 1; P <= 2; P++) {
        proc_t ps[4];
        run_procs(j, P, 0, &rq, &in, ps);
        const mt_cp_dist_t *d = ps[0].d;
        int64_t v;
        assert_true(cp_dist_typical(d, name_hash(N_GEMM), &v));
        assert_int_equal(v, 175 * US);
        assert_true(cp_dist_typical(d, name_hash(N_LN), &v));
        assert_int_equal(v, 50 * US);
        assert_true(cp_dist_typical(d, name_hash(N_CPY), &v));
        assert_int_equal(v, 25 * US);
        assert_true(cp_dist_typical(d, name_hash(N_AR), &v));
        assert_int_equal(v, 50 * US);
        assert_false(cp_dist_typical(d, name_hash(N_SEND), &v));
        assert_int_equal(d->n_comm, 1);
        assert_true(cp_dist_factor(d, name_hash(N_GEMM), 1) == 0.7);
        assert_true(cp_dist_factor(d, name_hash(N_GEMM), 0) == 1.0);
        assert_true(cp_dist_factor(d, name_hash(N_LN), 1) == 1.0);
        assert_true(cp_dist_factor(d, name_hash(N_CPY), 1) == 25.0 / 30.0);
        assert_true(cp_dist_factor(d, name_hash(N_AR), 1) == 1.0); /* comm: never scaled */
        for (int q = 0; q < P; q++)
            mt_cp_dist_free(ps[q].d);
    }
    free(j);
}

/* The generated job against the plain recomputation, on 1 .. 4
 * processes. */
static void test_generated(void **state)
{
    (void)state;
    job_t *j = malloc(sizeof *j);
    assert_non_null(j);
    job_gen(j, 7, 6, 0x5eed);
    truth_t t;
    truth_of(j, &t);
    int32_t strag[1] = {3};
    mt_cp_request_t rq = {.warmup = 1, .stragglers = strag, .n_stragglers = 1, .ideal = true};
    job_in_t x;
    in_of(j, 1, &rq, &x);
    for (int P = 1; P <= 4; P++) {
        proc_t ps[4];
        run_procs(j, P, 0, &rq, &x.in, ps);
        const mt_cp_dist_t *d = ps[0].d;
        for (int q = 0; q < N_NAMES; q++) {
            int64_t v = -1;
            assert_true(cp_dist_typical(d, name_hash(q), &v));
            if (v != t.typ[q])
                fail_msg("P=%d name %d: typical %lld, expected %lld", P, q, (long long)v, (long long)t.typ[q]);
            for (int r = 0; r < j->R; r++)
                if (cp_dist_factor(d, name_hash(q), r) != t.fac[q][r])
                    fail_msg("P=%d name %d rank %d: factor %.17g, expected %.17g", P, q, r,
                             cp_dist_factor(d, name_hash(q), r), t.fac[q][r]);
        }
        assert_int_equal(d->n_typ, N_NAMES);
        assert_int_equal(d->n_comm, 2);
        assert_true(t.fac[N_GEMM][3] < 1.0); /* the job has a straggler factor to find */
        for (int q = 0; q < P; q++)
            mt_cp_dist_free(ps[q].d);
    }
    free(j);
}

static void same_critpath(const mt_critpath_t *a, const mt_critpath_t *b, int P)
{
    assert_int_equal(a->n_steps, b->n_steps);
    for (int w = 0; w < MT_WI_COUNT_; w++) {
        assert_int_equal(a->whatif[w].run, b->whatif[w].run);
        assert_int_equal(a->whatif[w].p50_ns, b->whatif[w].p50_ns);
        assert_int_equal(a->whatif[w].gain_ns, b->whatif[w].gain_ns);
        for (size_t k = 0; k < a->n_steps; k++)
            assert_int_equal(a->steps[k].whatif_ns[w], b->steps[k].whatif_ns[w]);
    }
    const mt_cp_ideal_t *x = &a->ideal, *y = &b->ideal;
    assert_true(x->run);
    if (x->nodelay_ns != y->nodelay_ns || x->ideal_ns != y->ideal_ns || x->s != y->s)
        fail_msg("P=%d ideal: %lld/%lld S %.17g against %lld/%lld S %.17g", P, (long long)y->nodelay_ns,
                 (long long)y->ideal_ns, y->s, (long long)x->nodelay_ns, (long long)x->ideal_ns, x->s);
    assert_int_equal(x->n_type, y->n_type);
    for (size_t k = 0; k < x->n_type; k++)
        assert_true(x->by_type[k].s == y->by_type[k].s);
    assert_int_equal(x->n_worker, y->n_worker);
    for (size_t k = 0; k < x->n_worker; k++)
        assert_true(x->by_worker[k].s == y->by_worker[k].s);
    assert_int_equal(x->n_stage, y->n_stage);
    for (size_t k = 0; k < x->n_stage; k++)
        assert_true(x->by_stage[k].s == y->by_stage[k].s);
    assert_int_equal(x->has_mw, y->has_mw);
    assert_true(x->mw == y->mw);
    assert_true(x->ms == y->ms);
}

/* mt_critpath_run with the reductions against the one-process run over
 * its graph: every what-if and the ideal what-if the same, on 1 .. 4
 * processes; without stages and with two (a pipeline: the carried replay,
 * the staged medians, the straggler's stage median). */
static void test_critpath_same(void **state)
{
    (void)state;
    job_t *j = malloc(sizeof *j);
    assert_non_null(j);
    job_gen(j, 7, 6, 0xbeef);
    int32_t strag[2] = {3, 5};
    int32_t sr[7] = {0, 1, 2, 3, 4, 5, 6};
    size_t sf[3] = {0, 4, 7};
    for (int staged = 0; staged < 2; staged++) {
        mt_cp_request_t rq = {.warmup = 1, .stragglers = strag, .n_stragglers = 2, .ideal = true,
                              .pattern = "gemm", .factor = 0.5};
        if (staged) {
            rq.stage_ranks = sr;
            rq.stage_first = sf;
            rq.n_stages = 2;
        }
        const mt_rank_analysis_t *all[R_MAX];
        for (int r = 0; r < j->R; r++)
            all[r] = &j->a[r];
        mt_critpath_t *c0 = NULL;
        assert_int_equal(mt_critpath_run(&rq, all, (size_t)j->R, j->clk, j->ranks, (size_t)j->R,
                                         tu_crows(j->rows, j->first[j->S]), j->first[j->S], &j->m, &c0),
                         MT_OK);
        assert_non_null(c0);
        assert_true(c0->whatif[MT_WI_STRAGGLER].run);
        for (int P = 1; P <= 4; P++) {
            proc_t ps[4];
            run_procs(j, P, 1, &rq, NULL, ps);
            assert_non_null(ps[0].c);
            same_critpath(c0, ps[0].c, P);
            mt_critpath_free(ps[0].c);
            for (int q = 1; q < P; q++)
                mt_cp_dist_free(ps[q].d);
        }
        mt_critpath_free(c0);
    }
    free(j);
}

/* Every instance of the match given two more rows: one of rank 9, which
 * no process loaded, a second after the others, and one of a loaded rank
 * that starts with its (later) send but ends 1 us after it. The graph
 * finds no activity for either, so neither is an arrival (an owner that
 * took one would move the instance's last arrival). */
static void job_add_absent_rows(job_t *j)
{
    mt_cinst_t rows[R_MAX * S_MAX];
    uint32_t first[S_MAX + 1];
    size_t n = 0;
    for (size_t k = 0; k < j->m.n_inst; k++) {
        first[k] = (uint32_t)n;
        for (uint32_t x = j->first[k]; x < j->first[k + 1]; x++)
            rows[n++] = j->rows[j->members[x]];
        rows[n] = rows[n - 1];
        rows[n].rank = 9;
        rows[n].start_ns += 1000000 * US;
        rows[n].end_ns += 1000000 * US;
        n++;
        /* and one of a loaded rank (its holder is asked) starting where
         * its send of the step starts, ending 1 us later */
        int32_t r = (int32_t)(k % (size_t)j->R);
        const mt_an_gact_t *snd = &j->g[r][k * N_NAMES + N_SEND];
        rows[n] = rows[first[k] + (size_t)r];
        rows[n].start_ns = snd->start_ns;
        rows[n].end_ns = snd->end_ns + US;
        n++;
    }
    first[j->m.n_inst] = (uint32_t)n;
    assert_true(n <= R_MAX * S_MAX);
    memcpy(j->rows, rows, n * sizeof *rows);
    memcpy(j->first, first, (j->m.n_inst + 1) * sizeof *first);
    for (size_t x = 0; x < n; x++)
        j->members[x] = (uint32_t)x;
}

/* One more instance, last in match order, whose two rows are those of
 * ranks 0 and 1 in instance k: the graph gives their activities to
 * instance k (the first in match order) and leaves this one unlinked;
 * the owners cannot know the order, so process 0 must send the members. */
static void job_add_twin(job_t *j, size_t k)
{
    size_t ni = j->m.n_inst, n = j->first[ni];
    assert_true(ni < S_MAX && n + 2 <= R_MAX * S_MAX);
    for (int q = 0; q < 2; q++) {
        j->rows[n + q] = j->rows[j->members[j->first[k] + q]];
        j->members[n + q] = (uint32_t)(n + q);
    }
    j->key[ni] = 0;
    j->status[ni] = MT_INST_FULL;
    j->expected[ni] = 2;
    j->first[ni + 1] = (uint32_t)(n + 2);
    j->m.n_inst = ni + 1;
}

/* The owners' transfers (no member list from process 0) against the plain
 * recomputation, on 1 .. 4 processes: each instance with a row of a rank
 * nobody loaded. */
static void test_owners_generated(void **state)
{
    (void)state;
    job_t *j = malloc(sizeof *j);
    assert_non_null(j);
    job_gen(j, 7, 6, 0x5eed);
    truth_t t;
    truth_of(j, &t);
    job_add_absent_rows(j);
    int32_t strag[1] = {3};
    mt_cp_request_t rq = {.warmup = 1, .stragglers = strag, .n_stragglers = 1, .ideal = true};
    int64_t used[5] = {101, 102, 103, 104, 105};
    mt_cp_dist_in_t in = {.used_steps = used, .n_used = 5, .rq = &rq}; /* no members: the owners' */
    for (int P = 1; P <= 4; P++) {
        proc_t ps[4];
        run_procs_own(j, P, 0, 1, &rq, &in, ps);
        const mt_cp_dist_t *d = ps[0].d;
        assert_true(d->from_owners);
        for (int q = 0; q < N_NAMES; q++) {
            int64_t v = -1;
            assert_true(cp_dist_typical(d, name_hash(q), &v));
            if (v != t.typ[q])
                fail_msg("P=%d name %d: typical %lld, expected %lld", P, q, (long long)v, (long long)t.typ[q]);
            for (int r = 0; r < j->R; r++)
                if (cp_dist_factor(d, name_hash(q), r) != t.fac[q][r])
                    fail_msg("P=%d name %d rank %d: factor %.17g, expected %.17g", P, q, r,
                             cp_dist_factor(d, name_hash(q), r), t.fac[q][r]);
        }
        for (int q = 0; q < P; q++)
            mt_cp_dist_free(ps[q].d);
    }
    free(j);
}

/* mt_critpath_run with the owners' transfers against the one-process run
 * over its graph, on 1 .. 4 processes: process 0 builds no member list;
 * and with two rows naming one activity (a twin instance), process 0's
 * list (members_of) once, the same numbers. */
static void test_owners_critpath(void **state)
{
    (void)state;
    job_t *j = malloc(sizeof *j);
    assert_non_null(j);
    job_gen(j, 7, 6, 0xbeef);
    job_add_absent_rows(j);
    int32_t strag[2] = {3, 5};
    for (int twin = 0; twin < 2; twin++) {
        if (twin)
            job_add_twin(j, 3);
        mt_cp_request_t rq = {.warmup = 1, .stragglers = strag, .n_stragglers = 2, .ideal = true,
                              .pattern = "gemm", .factor = 0.5};
        const mt_rank_analysis_t *all[R_MAX];
        for (int r = 0; r < j->R; r++)
            all[r] = &j->a[r];
        mt_critpath_t *c0 = NULL;
        assert_int_equal(mt_critpath_run(&rq, all, (size_t)j->R, j->clk, j->ranks, (size_t)j->R,
                                         tu_crows(j->rows, j->first[j->m.n_inst]), j->first[j->m.n_inst], &j->m,
                                         &c0),
                         MT_OK);
        assert_non_null(c0);
        for (int P = 1; P <= 4; P++) {
            proc_t ps[4];
            run_procs_own(j, P, 1, 1, &rq, NULL, ps);
            assert_non_null(ps[0].c);
            same_critpath(c0, ps[0].c, P);
            assert_int_equal(ps[0].from_owners, !twin);
            assert_int_equal(ps[0].members_calls, twin);
            mt_critpath_free(ps[0].c);
            for (int q = 1; q < P; q++) {
                assert_int_equal(ps[q].d->from_owners, !twin);
                mt_cp_dist_free(ps[q].d);
            }
        }
        mt_critpath_free(c0);
    }
    free(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_by_hand),
        cmocka_unit_test(test_generated),
        cmocka_unit_test(test_critpath_same),
        cmocka_unit_test(test_owners_generated),
        cmocka_unit_test(test_owners_critpath),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
