/* A rank's clock correction (mt_clock_apply, collectives.h) prepared for
 * many times: the clock's constants worked out once and the rounding
 * inline, where mt_clock_apply costs a call and an llround per time (the
 * critical path's graph build corrects five times for each GPU activity
 * and sync: 15 % of its instructions). mt_clock_apply is written with it,
 * so the two agree for every time. */
#ifndef MT_ALIGN_CLOCKMAP_H
#define MT_ALIGN_CLOCKMAP_H

#include <stdbool.h>
#include <stdint.h>

#include "mergetrace/collectives.h"

typedef struct mt_clock_map {
    double offset_ns;
    double slope;        /* drift_ppm * 1e-6: the product mt_clock_apply forms first */
    int64_t anchor_ns;
    int64_t fixed_ns;    /* fixed: the correction of every time */
    bool fixed;          /* slope 0 (no drift, or no clock): the offset rounded once */
} mt_clock_map_t;

/* The map of c; c NULL: the identity. c is copied from, not kept. */
mt_clock_map_t mt_clock_map(const mt_clock_t *c);

/* llround(d) for the d that mt_clock_round leaves to it. */
int64_t mt_clock_round_far(double d);

/* llround(d): half away from zero. Below 2^52 in magnitude the fraction
 * d - trunc(d) is exact, so comparing it with 0.5 rounds as llround does;
 * larger, infinite or NaN d go to llround itself. */
static inline int64_t mt_clock_round(double d)
{
    if (!(d > -0x1p52 && d < 0x1p52))
        return mt_clock_round_far(d);
    int64_t i = (int64_t)d;
    double f = d - (double)i;
    return i + (f >= 0.5) - (f <= -0.5);
}

/* mt_clock_apply(c, t) for the c of m, to the bit. */
static inline int64_t mt_clock_map_apply(const mt_clock_map_t *m, int64_t t)
{
    if (m->fixed)
        return t + m->fixed_ns;
    return t + mt_clock_round(m->offset_ns + m->slope * (double)(t - m->anchor_ns));
}

#endif
