/* What the bench programs share: seconds on a clock, the peak resident
 * set, seeded uniform numbers (xorshift64) and the synthetic collective
 * row of bench_cross and bench_align, so each is written once. */
#ifndef MT_BENCH_UTIL_H
#define MT_BENCH_UTIL_H

#include <math.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "mergetrace/classify.h"
#include "mergetrace/collectives.h"

static inline double bench_seconds(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* This process's peak resident set so far, MB (Linux reports KiB). */
static inline double bench_peak_mb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss / 1024.0;
}

/* [0, 1) from the xorshift64 state *s (never 0). */
static inline double bench_uniform(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return (double)(*s >> 11) / 9007199254740992.0;
}

/* Collective k of rank r in a job of R ranks, as a data-parallel job's
 * allreduces look after mt_cinst_extract: one world process group (group
 * hash and size R), Seq = k, 8 collectives per ProfilerStep, the kernel
 * ending at t0 + own_end_ns on the rank's own clock. */
static inline void bench_row(mt_cinst_t *c, size_t r, size_t k, size_t R, int64_t t0, double own_end_ns,
                             uint32_t pg_id, uint32_t dtype_id)
{
    memset(c, 0, sizeof *c);
    c->end_ns = t0 + (int64_t)llround(own_end_ns);
    c->start_ns = c->end_ns - 200000;
    c->launch_ns = c->start_ns - 50000;
    c->step = (int64_t)(k / 8);
    c->seq = (int64_t)k;
    c->group = 0x5eed0000u + 1;
    c->sig = 0xabc0000u + (k % 4);
    c->in_nelems = c->out_nelems = 1 << 20;
    c->group_size = (int64_t)R;
    c->peer = -1;
    c->stream = 7;
    c->rank = (int32_t)r;
    c->ordinal = (uint32_t)k;
    c->step_ordinal = (uint32_t)(k % 8);
    c->flags = MT_CI_SEQ | MT_CI_PG | MT_CI_STEP;
    c->kind = MT_COLLK_ALLREDUCE;
    c->pg_id = pg_id;
    c->dtype_id = dtype_id;
}

#endif
