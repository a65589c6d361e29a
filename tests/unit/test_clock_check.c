/* The clock fit's consensus, checked against its definition. This test is
 * built with its own copy of src/clock.c compiled with MT_CLOCK_SELFCHECK:
 * every consensus the fit takes (from the sorted per-instance sets it keeps
 * up to date as ranks are refit) is also computed directly, as the median of
 * the first 64 fitted other members in member order, and the two must be the
 * same double. The job is wide enough for every case of the sets: instances
 * of 150 ranks (the rank itself inside or outside the first 65 fitted),
 * of 70, and of 8, ranks that become fitted one after the other, a rank
 * that is not loaded, and rejected outliers. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mergetrace/classify.h"
#include "mergetrace/collectives.h"
#include "test_util.h"
#include "base/hash.h"

extern size_t mt_clock_selfcheck_calls, mt_clock_selfcheck_bad;

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static double urand(void) { return tu_unit(&rng_state); }

typedef struct tclock {
    double off_ns, drift_ppm;
} tclock_t;

static const int64_t T0 = 1767189312000000000LL;

static int64_t local_of(const tclock_t *c, int64_t t)
{
    return t + (int64_t)llround(c->off_ns + c->drift_ppm * 1e-6 * (double)(t - T0));
}

#define N_RANKS 150

typedef struct job {
    mt_cinst_t *rows;
    size_t n, cap;
    tclock_t clk[N_RANKS];
} job_t;

static void add_row(job_t *j, int32_t rank, int64_t t_end, uint64_t comms_id, const char *pg, uint32_t ordinal)
{
    if (j->n == j->cap) {
        j->cap = j->cap ? 2 * j->cap : 4096;
        j->rows = realloc(j->rows, j->cap * sizeof *j->rows);
        assert_non_null(j->rows);
    }
    int64_t e = t_end + (int64_t)(urand() * 2000); /* 2 us of jitter */
    if (urand() < 0.02)
        e += 3000000; /* a mis-stamped kernel: must be rejected */
    int64_t s = t_end - 40000 - (int64_t)(urand() * 300000);
    mt_cinst_t *r = &j->rows[j->n++];
    memset(r, 0, sizeof *r);
    r->rank = rank;
    r->start_ns = local_of(&j->clk[rank], s);
    r->end_ns = local_of(&j->clk[rank], e);
    r->launch_ns = -1;
    r->step = -1;
    r->seq = -1;
    r->in_nelems = r->out_nelems = 4096;
    r->group_size = -1;
    r->peer = -1;
    r->kind = MT_COLLK_ALLREDUCE;
    r->ordinal = ordinal;
    r->comms_id = comms_id;
    r->flags |= MT_CI_COMMS_ID | MT_CI_PG;
    r->pg_id = tu_label(pg);
    r->group = mt_hash64(pg, strlen(pg), 1);
    r->sig = mt_hash64(&r->in_nelems, sizeof r->in_nelems, r->kind);
}

static void test_consensus_matches_definition(void **state)
{
    (void)state;
    job_t j = {0};
    for (int r = 0; r < N_RANKS; r++)
        j.clk[r] = (tclock_t){(urand() - 0.5) * 10e6, (urand() - 0.5) * 40};
    int64_t t = T0;
    for (uint32_t i = 0; i < 40; i++) {
        /* the world, then the first 70 ranks, then groups of 8 */
        t += 5000000 + (int64_t)(urand() * 1e6);
        for (int r = 0; r < N_RANKS; r++)
            add_row(&j, r, t, 1000 + i, "world", i);
        t += 5000000 + (int64_t)(urand() * 1e6);
        for (int r = 0; r < 70; r++)
            add_row(&j, r, t, 5000 + i, "half", i);
        if (i < 20) {
            t += 5000000;
            for (int g = 0; g < N_RANKS / 8; g++) {
                char pg[16];
                snprintf(pg, sizeof pg, "oct%d", g);
                for (int r = 8 * g; r < 8 * g + 8; r++)
                    add_row(&j, r, t + g * 1000, 9000 + (uint64_t)g * 100 + i, pg, i);
            }
        }
    }
    mt_match_t *m = NULL;
    mt_match_stats_t ms;
    assert_int_equal(mt_match(j.rows, j.n, &m, &ms), MT_OK);
    assert_int_equal(ms.full, 40 + 40 + 20 * (N_RANKS / 8));

    /* Rank 149 is not loaded: its rows are in the instances but have no
     * slot. Ranks in reverse order, so slot order is not rank order. */
    int32_t ranks[N_RANKS - 1];
    for (int r = 0; r < N_RANKS - 1; r++)
        ranks[r] = N_RANKS - 2 - r;
    mt_clock_t fit[N_RANKS - 1];
    mt_clock_opts_t o = {.ref_rank = -1};
    mt_clock_selfcheck_calls = mt_clock_selfcheck_bad = 0;
    assert_int_equal(mt_clock_fit(tu_crows(j.rows, j.n), j.n, m, ranks, N_RANKS - 1, &o, fit), MT_OK);
    if (mt_clock_selfcheck_bad)
        fail_msg("%zu of %zu consensus values differ from the definition", mt_clock_selfcheck_bad,
                 mt_clock_selfcheck_calls);
    /* every membership at least twice (first fit, a sweep, the residuals) */
    assert_true(mt_clock_selfcheck_calls > 2 * j.n);

    /* and the fit itself: every rank aligned to rank 0 within a few us */
    const tclock_t *ref = &j.clk[0];
    for (int s = 0; s < N_RANKS - 1; s++) {
        int32_t r = fit[s].rank;
        assert_true(fit[s].connected);
        for (int k = 0; k <= 10; k++) {
            int64_t tt = T0 + (t - T0) / 10 * k;
            double e = fabs((double)(mt_clock_apply(&fit[s], local_of(&j.clk[r], tt)) - local_of(ref, tt)));
            if (e > 5000)
                fail_msg("rank %d at point %d: off by %.0f ns", (int)r, k, e);
        }
    }

    /* The same with the reference in the middle and no drift fitted. */
    o.ref_rank = 75;
    o.no_drift = true;
    mt_clock_selfcheck_calls = mt_clock_selfcheck_bad = 0;
    assert_int_equal(mt_clock_fit(tu_crows(j.rows, j.n), j.n, m, ranks, N_RANKS - 1, &o, fit), MT_OK);
    assert_int_equal(mt_clock_selfcheck_bad, 0);
    assert_true(mt_clock_selfcheck_calls > 2 * j.n);
    mt_match_free(m);
    free(j.rows);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_consensus_matches_definition),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
