/* The string pool of a rank's analysis (names of kernels, annotations,
 * steps): every pass appends to it, so it lives apart from the driver
 * (analysis.c), which calls the passes. */
#include "rank/passes.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

mt_status_t mt_an_string_add(mt_rank_analysis_t *a, const char *s, size_t len, mt_an_str_t *out)
{
    size_t need = a->strings_len + len + 1;
    if (len > UINT32_MAX || need > UINT32_MAX)
        return MT_ERR_LIMIT;
    if (need > a->strings_cap) {
        size_t cap = a->strings_cap ? a->strings_cap : 64;
        while (cap < need)
            cap *= 2;
        char *g = realloc(a->strings, cap);
        if (!g)
            return MT_ERR_NOMEM;
        a->strings = g;
        a->strings_cap = cap;
    }
    if (len)
        memcpy(a->strings + a->strings_len, s, len);
    a->strings[a->strings_len + len] = '\0';
    out->off = (uint32_t)a->strings_len;
    out->len = (uint32_t)len;
    a->strings_len = need;
    return MT_OK;
}
