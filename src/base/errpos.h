/* Where an error is in its input: the one place that fills an mt_error_t's
 * path, byte offset and line:col, for every reader of the core. */
#ifndef MT_BASE_ERRPOS_H
#define MT_BASE_ERRPOS_H

#include <stddef.h>
#include <stdint.h>

#include "mergetrace/status.h"

/* A position being counted: start it at {1, 1}. */
typedef struct mt_errpos {
    int64_t line, col; /* 1-based */
} mt_errpos_t;

/* Advance p over b[0..n): a '\n' starts a new line. Readers that stream
 * their input count chunk by chunk, and only after an error (the hot path
 * never tracks lines). */
void mt_errpos_count(mt_errpos_t *p, const char *b, size_t n);

/* Set err's path (when path is not NULL), byte offset and line:col. err may
 * be NULL. */
void mt_errpos_set(mt_error_t *err, const char *path, int64_t offset, int64_t line, int64_t col);

/* The same for byte `offset` of text that is all in memory: line:col are
 * counted from text[0]. */
void mt_errpos_in(mt_error_t *err, const char *path, const char *text, size_t offset);

#endif
