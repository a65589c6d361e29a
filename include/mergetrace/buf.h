/* Byte output: the write callback every writer of the core emits through,
 * and a growable byte buffer that is one such destination. */
#ifndef MERGETRACE_BUF_H
#define MERGETRACE_BUF_H

#include <stddef.h>

#include "mergetrace/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where output bytes go (the merged trace, report.json, report.html, the
 * terminal text). Called with pieces of the output in order; data is
 * borrowed for the call only. Return MT_OK to go on; anything else stops
 * the writer, which returns that status. */
typedef mt_status_t (*mt_write_fn)(void *ctx, const void *data, size_t len);

/* A growable byte buffer: plain data, zero-initialise it ({0}) to start.
 * data is owned by the buffer (free with mt_buf_free) and is not
 * NUL-terminated. */
typedef struct mt_buf {
    char *data;
    size_t len, cap;
} mt_buf_t;

/* Append len bytes. MT_OK, or MT_ERR_NOMEM with the buffer unchanged. */
mt_status_t mt_buf_append(mt_buf_t *b, const void *data, size_t len);

/* Make room for len more bytes after data + len (cap grows, len does not),
 * for writers that fill the buffer in place. MT_OK, or MT_ERR_NOMEM with
 * the buffer unchanged. */
mt_status_t mt_buf_reserve(mt_buf_t *b, size_t len);

/* Free the bytes and reset to empty. NULL does nothing. */
void mt_buf_free(mt_buf_t *b);

/* An mt_write_fn that appends to the mt_buf_t passed as ctx. */
mt_status_t mt_buf_write(void *ctx, const void *data, size_t len);

#ifdef __cplusplus
}
#endif
#endif
