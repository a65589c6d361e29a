/* What the bench programs share: seconds on a clock, the peak resident
 * set, and seeded uniform numbers (xorshift64), so each is written once. */
#ifndef MT_BENCH_UTIL_H
#define MT_BENCH_UTIL_H

#include <stdint.h>
#include <sys/resource.h>
#include <time.h>

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

#endif
