/* The status message table and the error record helpers. */
#include "mergetrace/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const status_text[MT_STATUS_COUNT_] = {
    [MT_OK] = "ok",
    [MT_ERR_IO] = "I/O error",
    [MT_ERR_NOMEM] = "out of memory",
    [MT_ERR_SYNTAX] = "invalid JSON",
    [MT_ERR_FORMAT] = "not a Kineto trace",
    [MT_ERR_RANGE] = "number out of range",
    [MT_ERR_TRUNCATED] = "truncated input",
    [MT_ERR_GZIP] = "corrupt gzip data",
    [MT_ERR_NO_RANK] = "unknown rank",
    [MT_ERR_USAGE] = "usage error",
    [MT_ERR_LIMIT] = "input exceeds a limit",
    [MT_ERR_NOT_TRACE] = "not a trace",
    [MT_ERR_CANCELLED] = "cancelled",
    [MT_ERR_NSYS] = "not a usable Nsight Systems export",
    [MT_ERR_NOT_REPORT] = "not a mergetrace report",
    [MT_ERR_FR] = "not a usable Flight Recorder dump",
};

const char *mt_status_str(mt_status_t st)
{
    if ((unsigned)st >= MT_STATUS_COUNT_ || !status_text[st])
        return "unknown error";
    return status_text[st];
}

void mt_error_clear(mt_error_t *err)
{
    if (!err)
        return;
    memset(err, 0, sizeof *err);
    err->code = MT_OK;
    err->offset = err->line = err->col = -1;
    err->rank = -1;
}

mt_status_t mt_error_set(mt_error_t *err, mt_status_t code, const char *fmt, ...)
{
    if (!err)
        return code;
    err->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return code;
}

/* Append to buf[*n..cap), keeping it NUL-terminated and truncating. */
static void append(char *buf, size_t cap, size_t *n, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

static void append(char *buf, size_t cap, size_t *n, const char *fmt, ...)
{
    if (*n + 1 >= cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(buf + *n, cap - *n, fmt, ap);
    va_end(ap);
    if (w > 0)
        *n = (size_t)w < cap - *n ? *n + (size_t)w : cap - 1;
}

char *mt_error_format(const mt_error_t *err, char *buf, size_t cap)
{
    if (!cap)
        return buf;
    size_t n = 0;
    buf[0] = '\0';
    if (err->path[0])
        append(buf, cap, &n, "%s: ", err->path);
    if (err->rank >= 0)
        append(buf, cap, &n, "rank %d: ", err->rank);
    if (err->offset >= 0) {
        append(buf, cap, &n, "byte %lld", (long long)err->offset);
        if (err->line > 0)
            append(buf, cap, &n, " (line %lld:%lld)", (long long)err->line, (long long)err->col);
        append(buf, cap, &n, ": ");
    }
    append(buf, cap, &n, "%s", mt_status_str(err->code));
    if (err->msg[0])
        append(buf, cap, &n, ": %s", err->msg);
    if (err->code == MT_ERR_IO && err->sys_errno)
        append(buf, cap, &n, " (%s)", strerror(err->sys_errno));
    return buf;
}
