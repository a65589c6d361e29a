/* mt_align_job with several processes, without MPI: the fake mt_comm_t of
 * fake_comm.c runs one thread per simulated process. The collective rows of
 * a 9-rank job whose clocks the test sets are split over 3, 4 and 10
 * processes (one with no rank at all, ranks out of order); every process
 * must return the same clocks and match counts, the clocks must be the ones
 * the test set, and the result that of a serial run. A failure injected in
 * any of the job's collectives, on any process, must come back as that
 * status everywhere, without a hang. Each case runs with mt_align_job and
 * with mt_align_job_owned (rows handed over and freed after the gather):
 * the same results, nothing leaked or freed twice (under ASan). The fake
 * itself is checked first. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "fake_comm.h"
#include "base/hash.h"
#include "mergetrace/classify.h"
#include "mergetrace/collectives.h"
#include "test_util.h"
#include "test_util.h"

/* ---- the fake itself ---- */

#define XP 5        /* processes */
#define XROUNDS 300 /* rounds of gatherv + bcast + allreduce_max + alltoallv */

typedef struct xarg {
    int rank;
    unsigned bad;    /* exchanges that gave the wrong bytes */
    char first[160]; /* the first of them */
    mt_status_t st;
} xarg_t;

static void xbad(xarg_t *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void xbad(xarg_t *a, const char *fmt, ...)
{
    if (!a->bad++) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(a->first, sizeof a->first, fmt, ap);
        va_end(ap);
    }
}

static unsigned char xbyte(int rank, int round, size_t i)
{
    return (unsigned char)(rank * 41 + round * 7 + (int)i);
}

/* Lengths 0..12 bytes, a different root every round, negative values in
 * the allreduce: what every process receives is worked out here from the
 * definitions in comm.h, not from the fake. */
static void xchg_proc(const mt_comm_t *comm, void *arg)
{
    xarg_t *a = arg;
    a->rank = comm->rank;
    for (int round = 0; round < XROUNDS; round++) {
        int root = round % comm->size;
        unsigned char send[16];
        size_t len = (size_t)(comm->rank * 7 + round) % 13;
        for (size_t i = 0; i < len; i++)
            send[i] = xbyte(comm->rank, round, i);
        void *recv = (void *)1;
        size_t recv_len = 99;
        if ((a->st = comm->gatherv(comm->ctx, len ? send : NULL, len, &recv, &recv_len, root)))
            return;
        if (comm->rank == root) {
            size_t off = 0;
            const unsigned char *b = recv;
            for (int p = 0; p < comm->size; p++) {
                size_t plen = (size_t)(p * 7 + round) % 13;
                for (size_t i = 0; i < plen; i++)
                    if (off + i >= recv_len || b[off + i] != xbyte(p, round, i))
                        xbad(a, "round %d: gathered byte %zu of process %d", round, i, p);
                off += plen;
            }
            if (off != recv_len)
                xbad(a, "round %d: gathered %zu bytes, want %zu", round, recv_len, off);
            free(recv);
        } else if (recv || recv_len) {
            xbad(a, "round %d: a non-root got %p/%zu from gatherv", round, recv, recv_len);
        }

        int broot = (round + 1) % comm->size;
        unsigned char buf[24];
        memset(buf, comm->rank == broot ? 0xA0 + round % 16 : comm->rank, sizeof buf);
        if ((a->st = comm->bcast(comm->ctx, buf, sizeof buf, broot)))
            return;
        for (size_t i = 0; i < sizeof buf; i++)
            if (buf[i] != 0xA0 + round % 16)
                xbad(a, "round %d: bcast byte %zu is %d", round, i, buf[i]);

        /* element 0: max at the last process; 1: at process round % size;
         * 2: all negative, max at process 0 */
        int64_t v[3] = {comm->rank, comm->rank == root ? 1000 + round : -5, -1000 - comm->rank};
        if ((a->st = comm->allreduce_max(comm->ctx, v, 3)))
            return;
        if (v[0] != comm->size - 1 || v[1] != 1000 + round || v[2] != -1000)
            xbad(a, "round %d: allreduce_max gave %lld %lld %lld", round, (long long)v[0], (long long)v[1],
                 (long long)v[2]);

        /* alltoallv: process p sends (p * 5 + q * 3 + round) % 7 bytes to
         * q, byte i of them xbyte(p, round * 16 + q, i) */
        unsigned char out[XP * 8];
        size_t lens[XP], got[XP], o = 0;
        for (int q = 0; q < comm->size; q++) {
            lens[q] = (size_t)(comm->rank * 5 + q * 3 + round) % 7;
            for (size_t i = 0; i < lens[q]; i++)
                out[o++] = xbyte(comm->rank, round * 16 + q, i);
        }
        void *in = NULL;
        if ((a->st = comm->alltoallv(comm->ctx, out, lens, &in, got)))
            return;
        const unsigned char *b = in;
        size_t off = 0;
        for (int p = 0; p < comm->size; p++) {
            size_t plen = (size_t)(p * 5 + comm->rank * 3 + round) % 7;
            if (got[p] != plen)
                xbad(a, "round %d: alltoallv says %zu bytes from process %d, want %zu", round, got[p], p, plen);
            for (size_t i = 0; i < plen && got[p] == plen; i++)
                if (b[off + i] != xbyte(p, round * 16 + comm->rank, i))
                    xbad(a, "round %d: alltoallv byte %zu from process %d", round, i, p);
            off += plen;
        }
        free(in);
    }
}

static void test_fake_exchanges(void **state)
{
    (void)state;
    xarg_t a[XP];
    void *args[XP];
    memset(a, 0, sizeof a);
    for (int p = 0; p < XP; p++)
        args[p] = &a[p];
    fake_comm_report_t rep;
    assert_int_equal(fake_comm_run(XP, xchg_proc, args, NULL, &rep), MT_OK);
    if (rep.broken)
        fail_msg("fake comm broken: %s", rep.why);
    assert_int_equal(rep.completed, 4 * XROUNDS);
    for (int p = 0; p < XP; p++) {
        assert_int_equal(a[p].rank, p);
        assert_int_equal(a[p].st, MT_OK);
        if (a[p].bad)
            fail_msg("process %d: %u wrong exchanges, first: %s", p, a[p].bad, a[p].first);
    }
}

/* Processes that do not keep to the collectives: the fake must say so and
 * let everyone go (MT_ERR_CANCELLED) instead of hanging. */
typedef enum misstep { MS_RETURN, MS_OTHER_OP, MS_LATE } misstep_t;

typedef struct marg {
    misstep_t how;
    int odd;          /* the process that misbehaves */
    mt_status_t st;
} marg_t;

static void misstep_proc(const mt_comm_t *comm, void *arg)
{
    marg_t *a = arg;
    void *recv = NULL;
    size_t recv_len = 0;
    int64_t v = comm->rank;
    char buf[8] = {0};
    if (comm->rank == a->odd) {
        if (a->how == MS_RETURN)
            return;
        if (a->how == MS_OTHER_OP) {
            a->st = comm->bcast(comm->ctx, buf, sizeof buf, 0);
            return;
        }
        struct timespec nap = {0, 300 * 1000000L}; /* past the 50 ms timeout */
        nanosleep(&nap, NULL);
        a->st = comm->allreduce_max(comm->ctx, &v, 1);
        return;
    }
    if (a->how == MS_LATE)
        a->st = comm->allreduce_max(comm->ctx, &v, 1);
    else
        a->st = comm->gatherv(comm->ctx, &v, sizeof v, &recv, &recv_len, 0);
    free(recv);
}

static void check_misstep(misstep_t how, const char *why)
{
    marg_t a[4];
    void *args[4];
    for (int p = 0; p < 4; p++) {
        a[p] = (marg_t){.how = how, .odd = 2, .st = MT_OK};
        args[p] = &a[p];
    }
    fake_comm_opts_t o = {.timeout_ms = how == MS_LATE ? 50 : 0};
    fake_comm_report_t rep;
    assert_int_equal(fake_comm_run(4, misstep_proc, args, &o, &rep), MT_OK);
    assert_true(rep.broken);
    if (!strstr(rep.why, why))
        fail_msg("broken because \"%s\", want \"%s\"", rep.why, why);
    assert_int_equal(rep.completed, 0);
    for (int p = 0; p < 4; p++)
        if (p != 2 || how != MS_RETURN)
            assert_int_equal(a[p].st, MT_ERR_CANCELLED);
}

static void test_fake_reports_hangs(void **state)
{
    (void)state;
    /* "while 3 of 4 wait in gatherv", or "process 1 called gatherv after
     * process 2 returned" when process 2 is quicker than the others */
    check_misstep(MS_RETURN, "process 2 returned");
    check_misstep(MS_OTHER_OP, "mismatched collectives");
    check_misstep(MS_LATE, "waited 50 ms in allreduce_max");
}

/* ---- the job ---- */

/* A rank's true clock: local(t) = t + off + drift_ppm * 1e-6 * (t - T0). */
typedef struct tclock {
    double off_ns, drift_ppm;
} tclock_t;

static const int64_t T0 = 1767189312000000000LL + 7200LL * 1000000000LL;

static int64_t local_of(const tclock_t *c, int64_t t)
{
    return t + (int64_t)llround(c->off_ns + c->drift_ppm * 1e-6 * (double)(t - T0));
}

#define N_RANKS 9
#define N_WORLD 200  /* allreduces of all ranks, one every ~15 ms: 3 s */
#define WILD_RANK 5  /* every 50th of its world ends mis-stamped by 3 ms */

typedef struct job {
    tclock_t clk[N_RANKS];
    mt_cinst_t *rows[N_RANKS]; /* each rank's rows, in kernel order */
    size_t n[N_RANKS], cap[N_RANKS];
    size_t n_pair;             /* instances of the pair groups */
    int64_t t_end;
} job_t;

static void add_row(job_t *j, int32_t rank, int64_t start, int64_t end, uint64_t comms_id, const char *pg,
                    uint32_t ordinal)
{
    if (j->n[rank] == j->cap[rank]) {
        j->cap[rank] = j->cap[rank] ? 2 * j->cap[rank] : 256;
        j->rows[rank] = realloc(j->rows[rank], j->cap[rank] * sizeof *j->rows[rank]);
        assert_non_null(j->rows[rank]);
    }
    mt_cinst_t *r = &j->rows[rank][j->n[rank]++];
    memset(r, 0, sizeof *r);
    r->rank = rank;
    r->start_ns = local_of(&j->clk[rank], start);
    r->end_ns = local_of(&j->clk[rank], end);
    r->launch_ns = -1;
    r->step = -1;
    r->seq = -1;
    r->in_nelems = r->out_nelems = 2048;
    r->group_size = -1;
    r->peer = -1;
    r->kind = MT_COLLK_ALLREDUCE;
    r->ordinal = ordinal;
    if (comms_id) {
        r->comms_id = comms_id;
        r->flags |= MT_CI_COMMS_ID;
    }
    r->pg_id = tu_label(pg);
    r->group = mt_hash64(pg, strlen(pg), 1);
    r->flags |= MT_CI_PG;
    r->sig = mt_hash64(&r->in_nelems, sizeof r->in_nelems, r->kind);
}

/* Nine ranks on clocks tens of ms and tens of ppm apart (ranks 0-1 and 6-7
 * share a node's clock up to 700 ns). World allreduces matched by Comms Id;
 * every 4th round the pairs (0,1) (2,3) (4,5) (6,7) reduce among
 * themselves, with no id (process group + ordinal). Kernel ends of one
 * instance are the same true time plus, with jitter, 0-2 us each; starts
 * are spread by waiting. With jitter, rank 5 has 4 mis-stamped ends. */
static void make_job(job_t *j, bool jitter, uint64_t seed)
{
    memset(j, 0, sizeof *j);
    uint64_t rng = seed;
    for (int r = 0; r < N_RANKS; r++)
        j->clk[r] = (tclock_t){(tu_unit(&rng) - 0.5) * 80e6, (tu_unit(&rng) - 0.5) * 80};
    j->clk[1] = (tclock_t){j->clk[0].off_ns + 700, j->clk[0].drift_ppm};
    j->clk[7] = (tclock_t){j->clk[6].off_ns - 350, j->clk[6].drift_ppm};
    int64_t t = T0;
    for (uint32_t i = 0; i < N_WORLD; i++) {
        t += 12000000 + (int64_t)(tu_unit(&rng) * 6e6);
        for (int32_t r = 0; r < N_RANKS; r++) {
            int64_t e = t + (jitter ? (int64_t)(tu_unit(&rng) * 2000) : 0);
            if (jitter && r == WILD_RANK && i % 50 == 17)
                e += 3000000;
            add_row(j, r, t - 30000 - (int64_t)(tu_unit(&rng) * 500000), e, 1000 + i, "world", i);
        }
        if (i % 4 == 0) {
            int64_t tp = t + 2000000;
            for (int32_t r = 0; r < 8; r++) {
                char pg[8];
                snprintf(pg, sizeof pg, "pair%d", r / 2);
                int64_t e = tp + (jitter ? (int64_t)(tu_unit(&rng) * 2000) : 0);
                add_row(j, r, tp - 20000 - (int64_t)(tu_unit(&rng) * 200000), e, 0, pg, i / 4);
            }
            j->n_pair += 4;
        }
    }
    j->t_end = t;
}

static void free_job(job_t *j)
{
    for (int r = 0; r < N_RANKS; r++)
        free(j->rows[r]);
}

/* The rows of `ranks` (in that order), concatenated: what one process
 * passes, or what the root must have gathered. Caller frees. */
static mt_cinst_t *rows_of(const job_t *j, const int32_t *ranks, size_t n_ranks, size_t *n)
{
    *n = 0;
    for (size_t k = 0; k < n_ranks; k++)
        *n += j->n[ranks[k]];
    mt_cinst_t *rows = malloc((*n ? *n : 1) * sizeof *rows);
    assert_non_null(rows);
    size_t at = 0;
    for (size_t k = 0; k < n_ranks; k++) {
        memcpy(rows + at, j->rows[ranks[k]], j->n[ranks[k]] * sizeof *rows);
        at += j->n[ranks[k]];
    }
    return rows;
}

/* The ranks each simulated process loaded: -1 ends a process's list. */
typedef struct split {
    const char *name;
    int nproc;
    int32_t ranks[16][N_RANKS + 1];
} split_t;

static const split_t SPLITS[] = {
    {"3 processes, the middle one empty", 3, {{0, 1, 2, 3, -1}, {-1}, {4, 5, 6, 7, 8, -1}}},
    {"4 processes, the root empty, ranks out of order", 4, {{-1}, {7, 2, -1}, {0, 1, 3, 4, 5, -1}, {6, 8, -1}}},
    {"10 processes, one rank each in reverse, the last empty",
     10,
     {{8, -1}, {7, -1}, {6, -1}, {5, -1}, {4, -1}, {3, -1}, {2, -1}, {1, -1}, {0, -1}, {-1}}},
};

static size_t split_ranks(const split_t *s, int p, const int32_t **ranks)
{
    *ranks = s->ranks[p];
    size_t n = 0;
    while (s->ranks[p][n] >= 0)
        n++;
    return n;
}

typedef struct aarg {
    const mt_cinst_t *rows;
    size_t n_rows;
    mt_strtab_t *labels;  /* the process's own label table: its rows' ids refer to it */
    const int32_t *ranks;
    size_t n_ranks;
    const mt_clock_opts_t *opts;
    bool owned; /* through mt_align_job_owned, on a malloc'd copy of rows */
    mt_status_t st;
    mt_error_t err;
    mt_align_result_t res;
} aarg_t;

static void align_proc(const mt_comm_t *comm, void *arg)
{
    aarg_t *a = arg;
    if (!a->owned) {
        a->st = mt_align_job(comm, a->rows, a->n_rows, a->labels, a->ranks, a->n_ranks, a->opts, &a->res, &a->err);
        return;
    }
    /* the copy is the function's to free (ASan's leak check and its
     * use-after-free check watch that it is freed once, after the gather) */
    mt_cinst_t *copy = a->n_rows ? malloc(a->n_rows * sizeof *copy) : NULL;
    if (a->n_rows && !copy)
        abort();
    if (a->n_rows)
        memcpy(copy, a->rows, a->n_rows * sizeof *copy);
    a->st = mt_align_job_owned(comm, copy, a->n_rows, a->labels, a->ranks, a->n_ranks, a->opts, &a->res, &a->err);
}

/* Process p's own label table for rows[0..n) (ids of tu_labels()): a
 * label of its own first ("process p"), then the rows' labels from the
 * last row back, so the ids differ from process to process and from
 * tu_labels(); the rows' ids are rewritten to it. */
static mt_strtab_t *own_labels(int p, mt_cinst_t *rows, size_t n)
{
    mt_strtab_t *t = mt_strtab_create();
    assert_non_null(t);
    char own[32];
    uint32_t id;
    snprintf(own, sizeof own, "process %d", p);
    assert_int_equal(mt_strtab_intern(t, own, strlen(own), &id), MT_OK);
    for (size_t i = n; i-- > 0;) {
        size_t l;
        const char *s = mt_strtab_get(tu_labels(), rows[i].pg_id, &l);
        assert_int_equal(mt_strtab_intern(t, s, l, &rows[i].pg_id), MT_OK);
        s = mt_strtab_get(tu_labels(), rows[i].dtype_id, &l);
        assert_int_equal(mt_strtab_intern(t, s, l, &rows[i].dtype_id), MT_OK);
    }
    return t;
}

/* Run mt_align_job (mt_align_job_owned when owned) on s->nproc simulated
 * processes; a[p] gets process p's status and result, rows[p] its rows
 * and a[p].labels their table (the caller frees all three). */
static void run_split(const job_t *j, const split_t *s, const mt_clock_opts_t *opts, bool owned,
                      const fake_comm_fault_t *fault, aarg_t *a, mt_cinst_t **rows, fake_comm_report_t *rep)
{
    static const int32_t all_ranks[N_RANKS] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
    void *args[16];
    for (int p = 0; p < s->nproc; p++) {
        const int32_t *mine;
        size_t k = split_ranks(s, p, &mine);
        memset(&a[p], 0, sizeof a[p]);
        rows[p] = rows_of(j, mine, k, &a[p].n_rows);
        a[p].labels = own_labels(p, rows[p], a[p].n_rows);
        a[p].rows = a[p].n_rows ? rows[p] : NULL; /* a process with no rank passes nothing */
        a[p].ranks = all_ranks;
        a[p].n_ranks = N_RANKS;
        a[p].opts = opts;
        a[p].owned = owned;
        a[p].st = (mt_status_t)-1;
        args[p] = &a[p];
    }
    fake_comm_opts_t fo = {.fault = fault};
    assert_int_equal(fake_comm_run(s->nproc, align_proc, args, &fo, rep), MT_OK);
}

/* Every field, doubles compared exactly: all processes must hold the bytes
 * the root computed, and a serial run must compute the same numbers. */
static void check_same_clock(const mt_clock_t *x, const mt_clock_t *y, const char *what, int slot)
{
    if (x->rank != y->rank || x->reference != y->reference || x->connected != y->connected ||
        x->offset_ns != y->offset_ns || x->drift_ppm != y->drift_ppm || x->anchor_ns != y->anchor_ns ||
        x->matched != y->matched || x->rejected != y->rejected || x->residual_p50_ns != y->residual_p50_ns ||
        x->residual_p99_ns != y->residual_p99_ns || x->violations != y->violations || x->group != y->group)
        fail_msg("%s: clock %d differs: rank %d/%d offset %.1f/%.1f ns drift %.6f/%.6f ppm anchor %lld/%lld "
                 "matched %llu/%llu rejected %llu/%llu p99 %.1f/%.1f",
                 what, slot, (int)x->rank, (int)y->rank, x->offset_ns, y->offset_ns, x->drift_ppm, y->drift_ppm,
                 (long long)x->anchor_ns, (long long)y->anchor_ns, (unsigned long long)x->matched,
                 (unsigned long long)y->matched, (unsigned long long)x->rejected, (unsigned long long)y->rejected,
                 x->residual_p99_ns, y->residual_p99_ns);
}

/* The largest |corrected(local_r(t)) - local_ref(t)| over 101 points of the
 * job's span, in ns: how far rank r's correction is from the truth. */
static double truth_error(const job_t *j, const mt_clock_t *c, int ref)
{
    double worst = 0;
    for (int k = 0; k <= 100; k++) {
        int64_t t = T0 + (j->t_end - T0) / 100 * k;
        double e = fabs((double)(mt_clock_apply(c, local_of(&j->clk[c->rank], t)) - local_of(&j->clk[ref], t)));
        if (e > worst)
            worst = e;
    }
    return worst;
}

static double check_align(const job_t *j, bool jitter, const split_t *s, const mt_clock_opts_t *opts, bool owned,
                          double tol_ns)
{
    aarg_t a[16];
    mt_cinst_t *rows[16];
    fake_comm_report_t rep;
    run_split(j, s, opts, owned, NULL, a, rows, &rep);
    if (rep.broken)
        fail_msg("%s: fake comm broken: %s", s->name, rep.why);
    assert_int_equal(rep.per_op[FAKE_COMM_ALLTOALLV], 0); /* ordinal keys: matched on the root */
    for (int p = 0; p < s->nproc; p++)
        if (a[p].st != MT_OK)
            fail_msg("%s: process %d returned %s", s->name, p, mt_status_str(a[p].st));

    /* the root holds every row, in process order; the others none */
    const mt_align_result_t *root = &a[0].res;
    size_t n_all = 0;
    for (int p = 0; p < s->nproc; p++)
        n_all += a[p].n_rows;
    assert_int_equal(root->n_rows, n_all);
    assert_non_null(root->m);
    /* ... with every label id mapped onto the root's one table: the same
     * text as in the process's own table */
    assert_non_null(root->labels);
    for (size_t at = 0, p = 0; p < (size_t)s->nproc; at += a[p].n_rows, p++)
        for (size_t i = 0; i < a[p].n_rows; i++) {
            /* compact once matched: the fields mt_crow_t keeps */
            mt_crow_t got = root->rows[at + i], want = mt_crow_of(&rows[p][i]);
            assert_string_equal(mt_strtab_get(root->labels, got.pg_id, NULL),
                                mt_strtab_get(a[p].labels, want.pg_id, NULL));
            assert_string_equal(mt_strtab_get(root->labels, got.dtype_id, NULL),
                                mt_strtab_get(a[p].labels, want.dtype_id, NULL));
            got.pg_id = want.pg_id;
            got.dtype_id = want.dtype_id;
            if (memcmp(&got, &want, sizeof got))
                fail_msg("%s: the root's row %zu from process %zu is not process %zu's row", s->name, i, p, p);
        }
    for (int p = 1; p < s->nproc; p++) {
        assert_null(a[p].res.rows);
        assert_null(a[p].res.labels);
        assert_null(a[p].res.m);
        assert_int_equal(a[p].res.n_rows, 0);
    }

    /* every process: the root's clocks and match counts */
    char what[160];
    for (int p = 1; p < s->nproc; p++) {
        snprintf(what, sizeof what, "%s: process %d vs the root", s->name, p);
        assert_int_equal(a[p].res.n_clocks, N_RANKS);
        for (int k = 0; k < N_RANKS; k++)
            check_same_clock(&a[p].res.clocks[k], &root->clocks[k], what, k);
        if (memcmp(&a[p].res.match, &root->match, sizeof root->match))
            fail_msg("%s: match counts differ", what);
    }

    /* the independent check: the matching and the clocks the test set */
    assert_int_equal(root->match.rows, n_all);
    assert_int_equal(root->match.full, N_WORLD + j->n_pair);
    assert_int_equal(root->match.by_key[MT_KEY_COMMS_ID], N_WORLD);
    assert_int_equal(root->match.by_key[MT_KEY_PG_ORDINAL], j->n_pair);
    assert_int_equal(root->match.partial + root->match.unmatched + root->match.mismatched, 0);
    int ref = opts->ref_rank >= 0 ? opts->ref_rank : 0;
    double worst = 0;
    for (int k = 0; k < N_RANKS; k++) {
        const mt_clock_t *c = &root->clocks[k];
        assert_int_equal(c->rank, k);
        assert_true(c->connected);
        assert_int_equal(c->reference, k == ref);
        assert_int_equal(c->group, 0);
        assert_int_equal(c->violations, 0);
        assert_int_equal(c->rejected, jitter && k == WILD_RANK ? N_WORLD / 50 : 0);
        double e = truth_error(j, c, ref);
        if (e > tol_ns)
            fail_msg("%s: rank %d is %.0f ns from its true clock (tolerance %.0f ns; offset %.1f ns, drift %.6f ppm)",
                     s->name, k, e, tol_ns, c->offset_ns, c->drift_ppm);
        if (e > worst)
            worst = e;
    }

    /* regression: a serial run over the same rows in rank order */
    static const int32_t all_ranks[N_RANKS] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
    size_t n_serial;
    mt_cinst_t *serial_rows = rows_of(j, all_ranks, N_RANKS, &n_serial);
    mt_align_result_t ser;
    assert_int_equal(
        mt_align_job(mt_comm_serial(), serial_rows, n_serial, tu_labels(), all_ranks, N_RANKS, opts, &ser, NULL),
        MT_OK);
    snprintf(what, sizeof what, "%s: serial vs the root", s->name);
    for (int k = 0; k < N_RANKS; k++)
        check_same_clock(&ser.clocks[k], &root->clocks[k], what, k);
    if (memcmp(&ser.match, &root->match, sizeof ser.match))
        fail_msg("%s: match counts differ", what);
    mt_align_result_free(&ser);
    free(serial_rows);

    for (int p = 0; p < s->nproc; p++) {
        mt_align_result_free(&a[p].res);
        mt_strtab_free(a[p].labels);
        free(rows[p]);
    }
    return worst;
}

/* Tolerances. Without jitter every instance's ends are the same true time
 * and the fit can be exact but for rounding: the test's local clocks round
 * to whole ns (0.5 ns on each of the two ranks compared, in the data and at
 * the check), the fitted offset is whole ns, the drift a multiple of 1e-6
 * ppm (3e-6 ns over the 3 s span), mt_clock_apply rounds to 1 ns. Seen:
 * 1 ns; allowed: 2 ns, so any real error in the fit fails. With 0-2 us of
 * uniform jitter on every end, a rank's correction comes from the medians
 * of 200-250 differences of such ends, which scatter by about
 * 2 us / sqrt(200) = 0.14 us; seen: at most 274 ns at the span's ends;
 * allowed: 1 us, half the jitter's width (test_collectives and
 * test_clock_check allow 5 us, more than the jitter itself). */
#define TOL_EXACT_NS 2.0
#define TOL_JITTER_NS 1000.0

static void test_align_split(void **state)
{
    (void)state;
    static const mt_clock_opts_t by_lowest = {.ref_rank = -1}, by_rank4 = {.ref_rank = 4};
    for (int jitter = 0; jitter <= 1; jitter++) {
        job_t j;
        make_job(&j, jitter, jitter ? 0x2545F4914F6CDD1Dull : 0x9E3779B97F4A7C15ull);
        for (size_t s = 0; s < sizeof SPLITS / sizeof *SPLITS; s++)
            for (int o = 0; o < 4; o++) {
                double w = check_align(&j, jitter, &SPLITS[s], o & 1 ? &by_rank4 : &by_lowest, o >= 2,
                                       jitter ? TOL_JITTER_NS : TOL_EXACT_NS);
                print_message("%s, %s, reference %s%s: worst %.1f ns from the true clocks\n", SPLITS[s].name,
                              jitter ? "0-2 us jitter" : "no jitter", o & 1 ? "rank 4" : "lowest",
                              o >= 2 ? ", rows handed over" : "", w);
            }
        free_job(&j);
    }
}

/* ---- the sharded match ---- */

/* A row of the sharded job: every key one the row holds alone. */
static mt_cinst_t *shard_row(job_t *j, int32_t rank, int64_t t, const char *pg, int64_t group_size, int64_t nelems)
{
    add_row(j, rank, t - 40000, t + (rank % 3) * 500, 0, pg, 0);
    mt_cinst_t *r = &j->rows[rank][j->n[rank] - 1];
    r->group_size = group_size;
    r->in_nelems = r->out_nelems = nelems;
    r->sig = mt_hash64(&r->in_nelems, sizeof r->in_nelems, r->kind);
    return r;
}

static mt_cinst_t *shard_p2p(job_t *j, int32_t rank, int32_t peer, bool send, int64_t t, const char *pg)
{
    mt_cinst_t *r = shard_row(j, rank, t, pg, -1, 512);
    r->kind = send ? MT_COLLK_SEND : MT_COLLK_RECV;
    r->flags |= send ? MT_CI_SEND : MT_CI_RECV;
    r->peer = peer;
    r->sig = mt_hash64(&r->in_nelems, sizeof r->in_nelems, MT_COLLK_SEND);
    return r;
}

/* What the job below holds, counted as it is made. */
typedef struct shard_truth {
    uint64_t full, partial, unmatched, mismatched, by_key[MT_KEY_COUNT_];
} shard_truth_t;

#define SHARD_ROUNDS 60

/* Nine ranks, every row matchable where its key hashes to: world
 * allreduces by Comms Id (group size 9; round 7 without rank 3: partial;
 * round 11 with rank 6's size different: a mismatch); tensor-parallel
 * allreduces of {0-3} and {4-7} by group + Seq (group size 4; round 13 of
 * the second group has rank 5 alone: unmatched); sends without ids from
 * each even rank to the next every third round and back the round after;
 * and every fifth round a send 1 -> 2 by group + Seq. */
static void make_shard_job(job_t *j, uint64_t seed, shard_truth_t *tr)
{
    memset(j, 0, sizeof *j);
    memset(tr, 0, sizeof *tr);
    uint64_t rng = seed;
    for (int r = 0; r < N_RANKS; r++)
        j->clk[r] = (tclock_t){(tu_unit(&rng) - 0.5) * 80e6, (tu_unit(&rng) - 0.5) * 80};
    int64_t t = T0;
    for (int64_t i = 0; i < SHARD_ROUNDS; i++) {
        t += 10000000 + (int64_t)(tu_unit(&rng) * 4e6);
        for (int32_t r = 0; r < N_RANKS; r++) {
            if (i == 7 && r == 3)
                continue;
            mt_cinst_t *x = shard_row(j, r, t, "world", N_RANKS, i == 11 && r == 6 ? 4096 : 2048);
            x->comms_id = 7000 + (uint64_t)i;
            x->flags |= MT_CI_COMMS_ID;
        }
        tr->by_key[MT_KEY_COMMS_ID]++;
        if (i == 7)
            tr->partial++;
        else if (i == 11)
            tr->mismatched++;
        else
            tr->full++;
        for (int32_t r = 0; r < 8; r++) {
            if (i == 13 && r >= 4 && r != 5)
                continue;
            mt_cinst_t *x = shard_row(j, r, t + 2000000, r < 4 ? "tp0" : "tp1", 4, 1024);
            x->seq = 100 + i;
            x->flags |= MT_CI_SEQ;
        }
        tr->by_key[MT_KEY_PG_SEQ] += 2;
        tr->full += i == 13 ? 1 : 2;
        tr->unmatched += i == 13;
        if (i % 3 != 2) {
            bool fwd = i % 3 == 0;
            for (int32_t r = 0; r < 8; r += 2) {
                int32_t from = fwd ? r : r + 1, to = fwd ? r + 1 : r;
                shard_p2p(j, from, to, true, t + 4000000, "pp");
                shard_p2p(j, to, from, false, t + 4000000, "pp");
                tr->by_key[MT_KEY_P2P]++;
                tr->full++;
            }
        }
        if (i % 5 == 0) {
            mt_cinst_t *x = shard_p2p(j, 1, 2, true, t + 6000000, "pp12");
            x->seq = i / 5;
            x->flags |= MT_CI_SEQ;
            x = shard_p2p(j, 2, 1, false, t + 6000000, "pp12");
            x->seq = i / 5;
            x->flags |= MT_CI_SEQ;
            tr->by_key[MT_KEY_PG_SEQ]++;
            tr->full++;
        }
    }
    j->t_end = t;
}

static const split_t SHARD_SPLITS[] = {
    {"2 processes", 2, {{0, 1, 2, 3, -1}, {4, 5, 6, 7, 8, -1}}},
    {"3 processes, the middle one empty, ranks out of order", 3, {{5, 1, -1}, {-1}, {0, 2, 3, 4, 8, 6, 7, -1}}},
    {"9 processes, one rank each in reverse", 9,
     {{8, -1}, {7, -1}, {6, -1}, {5, -1}, {4, -1}, {3, -1}, {2, -1}, {1, -1}, {0, -1}}},
    {"5 processes, the root empty", 5, {{-1}, {3, 8, -1}, {0, -1}, {1, 2, 4, 5, -1}, {6, 7, -1}}},
};

/* The match of every row (the independent check: the counts the job was
 * made with) and the same instances, members and verdicts as one process
 * matching all the rows finds (what keeps every report the same); the
 * rows went through alltoallv: the match was sharded. */
static void test_align_sharded(void **state)
{
    (void)state;
    static const mt_clock_opts_t opts = {.ref_rank = -1};
    static const int32_t all_ranks[N_RANKS] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
    job_t j;
    shard_truth_t tr;
    make_shard_job(&j, 0x6A09E667F3BCC908ull, &tr);
    for (size_t s = 0; s < sizeof SHARD_SPLITS / sizeof *SHARD_SPLITS; s++) {
        const split_t *sp = &SHARD_SPLITS[s];
        aarg_t a[16];
        mt_cinst_t *rows[16];
        fake_comm_report_t rep;
        run_split(&j, sp, &opts, s % 2, NULL, a, rows, &rep);
        if (rep.broken)
            fail_msg("%s: fake comm broken: %s", sp->name, rep.why);
        assert_int_equal(rep.per_op[FAKE_COMM_ALLTOALLV], 2);
        for (int p = 0; p < sp->nproc; p++)
            if (a[p].st != MT_OK)
                fail_msg("%s: process %d returned %s", sp->name, p, mt_status_str(a[p].st));
        const mt_align_result_t *root = &a[0].res;
        const mt_match_stats_t *ms = &root->match;
        if (ms->full != tr.full || ms->partial != tr.partial || ms->unmatched != tr.unmatched ||
            ms->mismatched != tr.mismatched)
            fail_msg("%s: full %llu partial %llu unmatched %llu mismatched %llu, want %llu %llu %llu %llu", sp->name,
                     (unsigned long long)ms->full, (unsigned long long)ms->partial,
                     (unsigned long long)ms->unmatched, (unsigned long long)ms->mismatched,
                     (unsigned long long)tr.full, (unsigned long long)tr.partial, (unsigned long long)tr.unmatched,
                     (unsigned long long)tr.mismatched);
        for (int k = 0; k < MT_KEY_COUNT_; k++)
            if (ms->by_key[k] != tr.by_key[k])
                fail_msg("%s: %llu instances by key %d, want %llu", sp->name, (unsigned long long)ms->by_key[k], k,
                         (unsigned long long)tr.by_key[k]);
        assert_int_equal(ms->rows, root->n_rows);
        /* the root holds every row, compact, in process order, each label
         * id mapped onto its one table */
        for (size_t at = 0, p = 0; p < (size_t)sp->nproc; at += a[p].n_rows, p++)
            for (size_t i = 0; i < a[p].n_rows; i++) {
                mt_crow_t got = root->rows[at + i], want = mt_crow_of(&rows[p][i]);
                assert_string_equal(mt_strtab_get(root->labels, got.pg_id, NULL),
                                    mt_strtab_get(a[p].labels, want.pg_id, NULL));
                got.pg_id = want.pg_id;
                got.dtype_id = want.dtype_id;
                if (memcmp(&got, &want, sizeof got))
                    fail_msg("%s: the root's row %zu from process %zu is not that process's row", sp->name, i, p);
            }
        /* every instance's members are of one kind and one rank each */
        const mt_match_t *m = root->m;
        for (size_t i = 0; i < m->n_inst; i++)
            for (uint32_t k = m->first[i] + 1; k < m->first[i + 1]; k++)
                assert_true(root->rows[m->members[k - 1]].rank < root->rows[m->members[k]].rank);

        /* one process matching the rows in the root's gathered order */
        mt_cinst_t *gathered = malloc((root->n_rows ? root->n_rows : 1) * sizeof *gathered);
        assert_non_null(gathered);
        size_t at = 0;
        for (int p = 0; p < sp->nproc; p++) {
            memcpy(gathered + at, rows[p], a[p].n_rows * sizeof *gathered);
            at += a[p].n_rows;
        }
        assert_int_equal(at, root->n_rows);
        mt_match_t *one;
        mt_match_stats_t one_ms;
        assert_int_equal(mt_match(gathered, root->n_rows, &one, &one_ms), MT_OK);
        free(gathered);
        if (memcmp(&one_ms, ms, sizeof one_ms))
            fail_msg("%s: the counts differ from one process's match", sp->name);
        assert_int_equal(one->n_inst, m->n_inst);
        for (size_t i = 0; i < m->n_inst; i++)
            if (one->first[i] != m->first[i] || one->key[i] != m->key[i] || one->status[i] != m->status[i] ||
                one->expected[i] != m->expected[i])
                fail_msg("%s: instance %zu differs from one process's match", sp->name, i);
        for (size_t k = 0; k < root->n_rows; k++)
            if (one->members[k] != m->members[k])
                fail_msg("%s: member %zu is row %u, one process's match says %u", sp->name, k, m->members[k],
                         one->members[k]);
        /* the members each process keeps for the critical path's
         * reductions (mt_align_result_t.owned): every instance of the
         * match the graph links (not mismatched, 2 rows or more) once, on
         * one process, whole; none of the others */
        uint32_t *inst_of = malloc((root->n_rows ? root->n_rows : 1) * sizeof *inst_of);
        uint8_t *seen = calloc(m->n_inst ? m->n_inst : 1, 1);
        assert_true(inst_of && seen);
        size_t n_linked = 0;
        for (size_t i = 0; i < one->n_inst; i++) {
            bool linked = one->status[i] != MT_INST_MISMATCH && one->first[i + 1] - one->first[i] >= 2;
            n_linked += linked ? one->first[i + 1] - one->first[i] : 0;
            for (uint32_t k = one->first[i]; k < one->first[i + 1]; k++)
                inst_of[one->members[k]] = linked ? (uint32_t)i : UINT32_MAX;
        }
        size_t n_owned = 0;
        for (int p = 0; p < sp->nproc; p++) {
            const mt_align_result_t *r = &a[p].res;
            n_owned += r->n_owned;
            for (size_t b = 0; b < r->n_owned;) {
                size_t e = b;
                uint32_t inst = UINT32_MAX;
                for (; e < r->n_owned && r->owned[e].inst == r->owned[b].inst; e++) {
                    const mt_owned_member_t *o = &r->owned[e];
                    size_t row = 0; /* the root's row of it: (rank, start, end) is one row here */
                    while (row < root->n_rows && (root->rows[row].rank != o->rank ||
                                                  root->rows[row].start_ns != o->start_ns ||
                                                  root->rows[row].end_ns != o->end_ns))
                        row++;
                    assert_true(row < root->n_rows);
                    if (e == b)
                        inst = inst_of[row];
                    if (inst == UINT32_MAX || inst_of[row] != inst)
                        fail_msg("%s: process %d keeps row %zu with instance %u's members", sp->name, p, row, inst);
                }
                assert_int_equal(e - b, one->first[inst + 1] - one->first[inst]);
                assert_false(seen[inst]);
                seen[inst] = 1;
                assert_true(b == 0 || r->owned[b].inst == r->owned[b - 1].inst + 1);
                b = e;
            }
        }
        assert_int_equal(n_owned, n_linked);
        assert_true(tr.mismatched > 0 && n_linked > 0);
        free(inst_of);
        free(seen);
        mt_match_free(one);

        /* the clocks: those of a serial run, on every process */
        size_t n_serial;
        mt_cinst_t *serial_rows = rows_of(&j, all_ranks, N_RANKS, &n_serial);
        mt_align_result_t ser;
        assert_int_equal(mt_align_job(mt_comm_serial(), serial_rows, n_serial, tu_labels(), all_ranks, N_RANKS,
                                      &opts, &ser, NULL),
                         MT_OK);
        char what[160];
        for (int p = 0; p < sp->nproc; p++) {
            snprintf(what, sizeof what, "%s: process %d vs serial", sp->name, p);
            for (int k = 0; k < N_RANKS; k++)
                check_same_clock(&a[p].res.clocks[k], &ser.clocks[k], what, k);
            if (memcmp(&a[p].res.match, &ser.match, sizeof ser.match))
                fail_msg("%s: match counts differ", what);
        }
        /* and the fit found the clocks the job was made with */
        for (int k = 0; k < N_RANKS; k++) {
            assert_true(root->clocks[k].connected);
            double e = truth_error(&j, &root->clocks[k], 0);
            if (e > 3000.0)
                fail_msg("%s: rank %d is %.0f ns from its true clock", sp->name, k, e);
        }
        mt_align_result_free(&ser);
        free(serial_rows);
        for (int p = 0; p < sp->nproc; p++) {
            mt_align_result_free(&a[p].res);
            mt_strtab_free(a[p].labels);
            free(rows[p]);
        }
    }
    free_job(&j);
}

/* A failure in each of mt_align_job's collectives, on the root or another
 * process: every process returns that status with an empty result. */
static void test_align_fault(void **state)
{
    (void)state;
    static const fake_comm_fault_t faults[] = {
        {2, FAKE_COMM_GATHERV, 0, MT_ERR_IO},      {0, FAKE_COMM_GATHERV, 0, MT_ERR_NOMEM},
        {3, FAKE_COMM_ALLREDUCE_MAX, 0, MT_ERR_LIMIT}, {0, FAKE_COMM_ALLREDUCE_MAX, 0, MT_ERR_RANGE},
        {1, FAKE_COMM_BCAST, 0, MT_ERR_IO},        {0, FAKE_COMM_BCAST, 1, MT_ERR_FORMAT},
        {3, FAKE_COMM_BCAST, 1, MT_ERR_NOMEM},     {1, FAKE_COMM_GATHERV, 1, MT_ERR_IO},
        {0, FAKE_COMM_GATHERV, 1, MT_ERR_NOMEM},
    };
    static const mt_clock_opts_t opts = {.ref_rank = -1};
    job_t j;
    make_job(&j, true, 0x2545F4914F6CDD1Dull);
    const split_t *s = &SPLITS[1];
    for (size_t f = 0; f < 2 * (sizeof faults / sizeof *faults); f++) {
        aarg_t a[16];
        mt_cinst_t *rows[16];
        fake_comm_report_t rep;
        bool owned = f % 2; /* each fault with mt_align_job, then with mt_align_job_owned */
        run_split(&j, s, &opts, owned, &faults[f / 2], a, rows, &rep);
        if (rep.broken)
            fail_msg("%s call %u failing on process %d: fake comm broken: %s", fake_comm_op_name(faults[f / 2].op),
                     faults[f / 2].call, faults[f / 2].proc, rep.why);
        assert_true(rep.fault_fired);
        mt_align_result_t empty;
        memset(&empty, 0, sizeof empty);
        for (int p = 0; p < s->nproc; p++) {
            if (a[p].st != faults[f / 2].status)
                fail_msg("%s call %u failing on process %d: process %d returned %s, want %s",
                         fake_comm_op_name(faults[f / 2].op), faults[f / 2].call, faults[f / 2].proc, p,
                         mt_status_str(a[p].st), mt_status_str(faults[f / 2].status));
            if (memcmp(&a[p].res, &empty, sizeof empty))
                fail_msg("process %d kept a result after %s failed", p, fake_comm_op_name(faults[f / 2].op));
            mt_align_result_free(&a[p].res);
            mt_strtab_free(a[p].labels);
            free(rows[p]);
        }
    }
    free_job(&j);
}

/* A failure in each collective of the sharded match (the counts' gather
 * and broadcast, both exchanges, the statuses, the instances' gather) and
 * of the rows' gather after it: every process returns that status with an
 * empty result. */
static void test_align_sharded_fault(void **state)
{
    (void)state;
    static const fake_comm_fault_t faults[] = {
        {2, FAKE_COMM_GATHERV, 1, MT_ERR_IO},       {0, FAKE_COMM_BCAST, 0, MT_ERR_NOMEM},
        {1, FAKE_COMM_ALLTOALLV, 0, MT_ERR_IO},     {0, FAKE_COMM_ALLTOALLV, 1, MT_ERR_NOMEM},
        {4, FAKE_COMM_ALLREDUCE_MAX, 3, MT_ERR_LIMIT}, {0, FAKE_COMM_GATHERV, 2, MT_ERR_NOMEM},
        {3, FAKE_COMM_ALLREDUCE_MAX, 4, MT_ERR_IO}, {0, FAKE_COMM_GATHERV, 3, MT_ERR_NOMEM},
    };
    static const mt_clock_opts_t opts = {.ref_rank = -1};
    job_t j;
    shard_truth_t tr;
    make_shard_job(&j, 0x6A09E667F3BCC908ull, &tr);
    const split_t *s = &SHARD_SPLITS[3];
    for (size_t f = 0; f < 2 * (sizeof faults / sizeof *faults); f++) {
        const fake_comm_fault_t *ft = &faults[f / 2];
        aarg_t a[16];
        mt_cinst_t *rows[16];
        fake_comm_report_t rep;
        run_split(&j, s, &opts, f % 2, ft, a, rows, &rep);
        if (rep.broken)
            fail_msg("%s call %u failing on process %d: fake comm broken: %s", fake_comm_op_name(ft->op), ft->call,
                     ft->proc, rep.why);
        assert_true(rep.fault_fired);
        mt_align_result_t empty;
        memset(&empty, 0, sizeof empty);
        for (int p = 0; p < s->nproc; p++) {
            if (a[p].st != ft->status)
                fail_msg("%s call %u failing on process %d: process %d returned %s, want %s",
                         fake_comm_op_name(ft->op), ft->call, ft->proc, p, mt_status_str(a[p].st),
                         mt_status_str(ft->status));
            if (memcmp(&a[p].res, &empty, sizeof empty))
                fail_msg("process %d kept a result after %s call %u failed", p, fake_comm_op_name(ft->op), ft->call);
            mt_align_result_free(&a[p].res);
            mt_strtab_free(a[p].labels);
            free(rows[p]);
        }
    }
    free_job(&j);
}

/* A label id that is not in its process's table (a peer's bad row): every
 * process returns MT_ERR_FORMAT with an empty result, and process 0's err
 * names the process, the row and the id. */
static void test_align_bad_label(void **state)
{
    (void)state;
    static const mt_clock_opts_t opts = {.ref_rank = -1};
    job_t j;
    make_job(&j, false, 0x9E3779B97F4A7C15ull);
    const split_t *s = &SPLITS[1];
    static const int32_t all_ranks[N_RANKS] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
    for (int which = 0; which < 2; which++) { /* the group label, then the dtype */
        aarg_t a[16];
        mt_cinst_t *rows[16];
        void *args[16];
        for (int p = 0; p < s->nproc; p++) {
            const int32_t *mine;
            size_t k = split_ranks(s, p, &mine);
            memset(&a[p], 0, sizeof a[p]);
            rows[p] = rows_of(&j, mine, k, &a[p].n_rows);
            a[p].labels = own_labels(p, rows[p], a[p].n_rows);
            a[p].rows = a[p].n_rows ? rows[p] : NULL;
            a[p].ranks = all_ranks;
            a[p].n_ranks = N_RANKS;
            a[p].opts = &opts;
            a[p].owned = which == 1;
            args[p] = &a[p];
        }
        assert_true(a[2].n_rows > 3);
        uint32_t bad = mt_strtab_count(a[2].labels); /* one past the last id */
        if (which == 0)
            rows[2][3].pg_id = bad;
        else
            rows[2][3].dtype_id = bad;
        fake_comm_report_t rep;
        fake_comm_opts_t fo = {0};
        assert_int_equal(fake_comm_run(s->nproc, align_proc, args, &fo, &rep), MT_OK);
        assert_false(rep.broken);
        mt_align_result_t empty;
        memset(&empty, 0, sizeof empty);
        char want[96];
        snprintf(want, sizeof want, "process 2: row 3 (rank %d): label id %u out of range", (int)rows[2][3].rank,
                 (unsigned)bad);
        if (!strstr(a[0].err.msg, want))
            fail_msg("process 0's error \"%s\" does not say \"%s\"", a[0].err.msg, want);
        for (int p = 0; p < s->nproc; p++) {
            assert_int_equal(a[p].st, MT_ERR_FORMAT);
            if (memcmp(&a[p].res, &empty, sizeof empty))
                fail_msg("process %d kept a result after a bad label id", p);
            mt_strtab_free(a[p].labels);
            free(rows[p]);
        }
    }
    free_job(&j);
}

/* A one-process comm whose first gatherv (the label blocks) returns the
 * bytes a test wrote instead of what was sent, as a peer's broken block
 * would arrive; the rest as mt_comm_serial(). */
typedef struct forged {
    const void *blk;
    size_t len;
    int calls;
} forged_t;

static mt_status_t forged_gatherv(void *ctx, const void *send, size_t len, void **recv, size_t *recv_len, int root)
{
    forged_t *f = ctx;
    if (f->calls++ == 0) {
        send = f->blk;
        len = f->len;
    }
    return mt_comm_serial()->gatherv(NULL, send, len, recv, recv_len, root);
}

static mt_status_t forged_bcast(void *ctx, void *buf, size_t len, int root)
{
    (void)ctx;
    return mt_comm_serial()->bcast(NULL, buf, len, root);
}

static mt_status_t forged_allreduce(void *ctx, int64_t *v, size_t n)
{
    (void)ctx;
    return mt_comm_serial()->allreduce_max(NULL, v, n);
}

/* Label blocks that do not parse (align.c's layout: a uint64 row count,
 * a uint32 label count with id 0, 4 bytes of padding, then per label a
 * uint32 length and its bytes): MT_ERR_FORMAT with what was wrong, never
 * a read past the block. Two rows are gathered, both with labels 0 and 1. */
static void test_align_bad_block(void **state)
{
    (void)state;
    mt_cinst_t rows[2];
    memset(rows, 0, sizeof rows);
    for (int i = 0; i < 2; i++) {
        rows[i].rank = i;
        rows[i].pg_id = 1;
        rows[i].end_ns = rows[i].start_ns = 1000 * (i + 1);
    }
    static const int32_t ranks[2] = {0, 1};
    static const mt_clock_opts_t opts = {.ref_rank = -1};
    typedef struct bad {
        uint64_t n_rows;
        uint32_t n_labels, pad, len;
        char text[4];
        size_t bytes; /* of the block: 16 header, 4 + 1 for the label, zeros after */
        const char *want;
    } bad_t;
    static const bad_t cases[] = {
        {2, 2, 0, 1, "w", 12, "label table header cut at byte 0 of 12"},
        {2, 3, 0, 1, "w", 24, "label 2 runs past its table (byte 21)"}, /* 3 bytes where its length goes */
        {2, 2, 0, 9, "w", 21, "label 1 runs past its table (byte 16)"},
        {2, 0xffffffffu, 0, 1, "w", 21, "4294967295 labels in 5 bytes"},
        {1, 2, 0, 1, "w", 21, "label tables account for 1 of the 2 gathered rows"},
        {3, 2, 0, 1, "w", 21, "says 3 rows and 2 labels"},
        {2, 1, 0, 1, "w", 16, "process 0: row 0 (rank 0): label id 1 out of range (the process sent 1 labels)"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        unsigned char blk[32] = {0};
        memcpy(blk, &cases[c].n_rows, 8);
        memcpy(blk + 8, &cases[c].n_labels, 4);
        memcpy(blk + 12, &cases[c].pad, 4);
        memcpy(blk + 16, &cases[c].len, 4);
        memcpy(blk + 20, cases[c].text, 1);
        forged_t f = {blk, cases[c].bytes, 0};
        mt_comm_t comm = {.ctx = &f, .rank = 0, .size = 1, .gatherv = forged_gatherv, .bcast = forged_bcast,
                          .allreduce_max = forged_allreduce};
        mt_align_result_t res;
        mt_error_t err;
        mt_error_clear(&err);
        assert_int_equal(mt_align_job(&comm, rows, 2, tu_labels(), ranks, 2, &opts, &res, &err), MT_ERR_FORMAT);
        if (!strstr(err.msg, cases[c].want))
            fail_msg("case %zu: error \"%s\" does not say \"%s\"", c, err.msg, cases[c].want);
        assert_null(res.rows);
        assert_null(res.labels);
    }
    /* and the same block whole: accepted, label 1 is "w" in the job table */
    unsigned char blk[21];
    const bad_t ok = {2, 2, 0, 1, "w", 21, ""};
    memcpy(blk, &ok.n_rows, 8);
    memcpy(blk + 8, &ok.n_labels, 4);
    memcpy(blk + 12, &ok.pad, 4);
    memcpy(blk + 16, &ok.len, 4);
    memcpy(blk + 20, ok.text, 1);
    forged_t f = {blk, sizeof blk, 0};
    mt_comm_t comm = {.ctx = &f, .rank = 0, .size = 1, .gatherv = forged_gatherv, .bcast = forged_bcast,
                      .allreduce_max = forged_allreduce};
    mt_align_result_t res;
    assert_int_equal(mt_align_job(&comm, rows, 2, tu_labels(), ranks, 2, &opts, &res, NULL), MT_OK);
    assert_int_equal(res.n_rows, 2);
    assert_string_equal(mt_strtab_get(res.labels, res.rows[0].pg_id, NULL), "w");
    assert_string_equal(mt_strtab_get(res.labels, res.rows[1].pg_id, NULL), "w");
    mt_align_result_free(&res);
}

static void watchdog(int sig)
{
    (void)sig;
    static const char msg[] = "test_align_job: no result after 120 s: a hang\n";
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
    _exit(1);
}

int main(void)
{
    /* The fake turns a hang in the collectives into a report; this is for
     * one anywhere else (or in the fake). */
    signal(SIGALRM, watchdog);
    alarm(120);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fake_exchanges),
        cmocka_unit_test(test_fake_reports_hangs),
        cmocka_unit_test(test_align_split),
        cmocka_unit_test(test_align_sharded),
        cmocka_unit_test(test_align_fault),
        cmocka_unit_test(test_align_sharded_fault),
        cmocka_unit_test(test_align_bad_label),
        cmocka_unit_test(test_align_bad_block),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
