/* Seconds of a clock (CLOCK_MONOTONIC for walls, CLOCK_PROCESS_CPUTIME_ID
 * for CPU time) as a double, for the phase timings of the core's stages. */
#ifndef MT_BASE_CLOCK_H
#define MT_BASE_CLOCK_H

#include <time.h>

/* The clock's reading in seconds; 0 when it cannot be read. */
double mt_clock_seconds(clockid_t id);

#endif
