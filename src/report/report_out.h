/* Internal to src/: a small writer over an mt_write_fn that keeps the first
 * error, for the report writers (report.json sections and terminal text). */
#ifndef MERGETRACE_REPORT_OUT_H
#define MERGETRACE_REPORT_OUT_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "mergetrace/report.h"

typedef struct mt_out {
    mt_write_fn w;
    void *ctx;
    mt_status_t st; /* the first error; later writes do nothing */
} mt_out_t;

static inline void mt_out_put(mt_out_t *o, const char *s, size_t n)
{
    if (o->st == MT_OK && n)
        o->st = o->w(o->ctx, s, n);
}

static inline void mt_out_puts(mt_out_t *o, const char *s)
{
    mt_out_put(o, s, strlen(s));
}

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static inline void mt_out_printf(mt_out_t *o, const char *fmt, ...)
{
    char b[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b, sizeof b, fmt, ap);
    va_end(ap);
    if (n > 0)
        mt_out_put(o, b, (size_t)n < sizeof b ? (size_t)n : sizeof b - 1);
}

/* A JSON string of at most cap bytes of s (stops at a NUL). */
static inline void mt_out_str(mt_out_t *o, const char *s, size_t cap)
{
    size_t n = 0;
    while (n < cap && s[n])
        n++;
    if (o->st == MT_OK)
        o->st = mt_json_string(s, n, o->w, o->ctx);
}

/* Microseconds with exactly 3 decimals from integer ns (no key). */
static inline void mt_out_us(mt_out_t *o, int64_t ns)
{
    uint64_t m = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
    mt_out_printf(o, "%s%llu.%03llu", ns < 0 ? "-" : "", (unsigned long long)(m / 1000),
                  (unsigned long long)(m % 1000));
}

#endif
