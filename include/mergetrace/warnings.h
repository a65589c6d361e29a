/* The run's warnings: one list that the terminal summary prints and
 * report.json writes as "warnings" (docs/report-schema.md lists the codes),
 * so --json and -q lose none of them. Plain data. */
#ifndef MERGETRACE_WARNINGS_H
#define MERGETRACE_WARNINGS_H

#include <stddef.h>
#include <stdint.h>

#include "mergetrace/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mt_warning {
    const char *code; /* stable, snake_case (a string literal: borrowed for the program's life) */
    int32_t rank;     /* the rank it is about, -1 the job */
    char *text;       /* one line, no newline (owned by the list) */
} mt_warning_t;

typedef struct mt_warnings {
    mt_warning_t *v;
    size_t n, cap;
    mt_status_t st;   /* MT_ERR_NOMEM once an add failed (that warning is lost) */
} mt_warnings_t;

/* Append a warning; text from fmt (printf), one trailing newline dropped.
 * code must outlive the list. On failure w->st becomes MT_ERR_NOMEM. */
void mt_warnings_add(mt_warnings_t *w, const char *code, int32_t rank, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* Free the texts and the array; the list is empty afterwards. NULL: nothing. */
void mt_warnings_free(mt_warnings_t *w);

/* s[0..n) made safe for one line of a terminal into dst (cap >= 1 bytes,
 * always NUL-terminated, cut at a whole escape): control characters (C0,
 * DEL and the C1 range U+0080-U+009F) and each byte of an invalid UTF-8
 * sequence become visible escapes (\n, \r, \t, \xHH, \u00HH), so a file
 * named "a\nmergetrace: all good" cannot forge a second line or move the
 * cursor. Other bytes pass through. Returns the length written. */
size_t mt_text_line(char *dst, size_t cap, const char *s, size_t n);

#ifdef __cplusplus
}
#endif
#endif
