/* mergetrace status codes, the one message table, and the error record that
 * carries context (file, rank, byte offset, line:col) from where an error
 * happens to whoever reports it. */
#ifndef MERGETRACE_STATUS_H
#define MERGETRACE_STATUS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Every fallible function returns one of these. Values are only appended,
 * never renumbered: they reach report.json and exit-code tables. */
typedef enum mt_status {
    MT_OK = 0,
    MT_ERR_IO = 1,         /* open/read/write/rename failed (errno kept) */
    MT_ERR_NOMEM = 2,      /* an allocation failed */
    MT_ERR_SYNTAX = 3,     /* input is not valid JSON */
    MT_ERR_FORMAT = 4,     /* valid JSON, but not a trace we understand */
    MT_ERR_RANGE = 5,      /* a number does not fit the type it must have */
    MT_ERR_TRUNCATED = 6,  /* input ends early (strict mode only is this fatal) */
    MT_ERR_GZIP = 7,       /* corrupt gzip stream */
    MT_ERR_NO_RANK = 8,    /* rank cannot be determined for a file */
    MT_ERR_USAGE = 9,      /* bad option or argument */
    MT_ERR_LIMIT = 10,     /* an input exceeds a hard limit of the tool */
    MT_ERR_NOT_TRACE = 11, /* valid JSON without a traceEvents array */
    MT_ERR_CANCELLED = 12, /* stopped on request (another process failed) */
    MT_ERR_NSYS = 13,      /* an SQLite file that is not a usable Nsight Systems export */
    MT_ERR_NOT_REPORT = 14, /* JSON that is not a mergetrace report.json (a --baseline) */
    MT_ERR_FR = 15,        /* a PyTorch Flight Recorder dump that cannot be read (its pickle or its fields) */
    MT_STATUS_COUNT_
} mt_status_t;

/* Short fixed text for a status ("invalid JSON", ...). Never NULL. */
const char *mt_status_str(mt_status_t st);

/* Where and why an error happened. Plain data; fill with mt_error_set().
 * offset/line/col are -1 when unknown; rank is -1 when not yet known. */
typedef struct mt_error {
    mt_status_t code;
    int sys_errno;       /* errno for MT_ERR_IO, else 0 */
    int64_t offset;      /* byte offset in the (uncompressed) input */
    int64_t line, col;   /* 1-based, computed lazily; -1 if unknown */
    int rank;
    char path[512];
    char msg[512];       /* what was expected / what went wrong */
} mt_error_t;

/* Reset to "no error" (code MT_OK, positions -1). err may be NULL. */
void mt_error_clear(mt_error_t *err);

/* Record code + printf-style message (truncated to fit). Returns code so
 * callers can write `return mt_error_set(err, MT_ERR_X, "...")`. err may be
 * NULL, then only the code is returned. */
mt_status_t mt_error_set(mt_error_t *err, mt_status_t code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Format the one-line message users see:
 *   "<path>: rank R: byte O (line L:C): <status text>: <msg>"
 * leaving out the parts that are unknown. Writes at most cap bytes
 * including the NUL; returns buf. */
char *mt_error_format(const mt_error_t *err, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif
#endif /* MERGETRACE_STATUS_H */
