/* Seconds of a clock as a double (base/clock.h). */
#define _POSIX_C_SOURCE 200809L
#include "base/clock.h"

double mt_clock_seconds(clockid_t id)
{
    struct timespec ts;
    if (clock_gettime(id, &ts) != 0)
        return 0;
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
