/* The one test for a profiler step's name: "ProfilerStep#N", N of 1 to 18
 * decimal digits (so that N fits an int64_t). Used where steps are found
 * (summary.c), chunked (rank/chunks.c), projected (rank/projection.c) and
 * left out of annotations (rank/steps.c). */
#ifndef MT_TRACE_STEPNAME_H
#define MT_TRACE_STEPNAME_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* N when s[0..len) is ProfilerStep#N, else -1. */
static inline int64_t mt_step_name_num(const char *s, size_t len)
{
    if (len <= 13 || len > 13 + 18 || memcmp(s, "ProfilerStep#", 13) != 0)
        return -1;
    int64_t v = 0;
    for (size_t k = 13; k < len; k++) {
        if ((unsigned)(s[k] - '0') > 9)
            return -1;
        v = v * 10 + (s[k] - '0');
    }
    return v;
}

#endif
