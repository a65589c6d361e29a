/* Byte output: the write callback every writer of the core emits through,
 * and a growable byte buffer that is one such destination. */
#ifndef MERGETRACE_BUF_H
#define MERGETRACE_BUF_H

#include <stddef.h>
#include <string.h>

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


/* Make room for len more bytes after data + len (cap grows, len does not),
 * for writers that fill the buffer in place. MT_OK, or MT_ERR_NOMEM with
 * the buffer unchanged. */
mt_status_t mt_buf_reserve(mt_buf_t *b, size_t len);

/* Append len bytes. MT_OK, or MT_ERR_NOMEM with the buffer unchanged. In
 * line because the merged-trace writer appends several short pieces per
 * event: as a call into another file it cost 2.5% of a run's instructions
 * (callgrind, 2 x 10 MB job). */
static inline mt_status_t mt_buf_append(mt_buf_t *b, const void *data, size_t len)
{
    if (len > b->cap - b->len && mt_buf_reserve(b, len))
        return MT_ERR_NOMEM;
    if (len)
        memcpy(b->data + b->len, data, len);
    b->len += len;
    return MT_OK;
}

/* Free the bytes and reset to empty. NULL does nothing. */
void mt_buf_free(mt_buf_t *b);

/* An mt_write_fn that appends to the mt_buf_t passed as ctx. */
mt_status_t mt_buf_write(void *ctx, const void *data, size_t len);

/* An mt_write_fn onto the stdio stream passed as ctx (a FILE *, e.g.
 * stdout): MT_ERR_IO when fwrite writes less than len. */
mt_status_t mt_file_write(void *ctx, const void *data, size_t len);

/* Growth of arrays by doubling, the one helper for it: make *arr (capacity
 * *cap elements of `size` bytes) hold at least `need` elements; the
 * capacity doubles, from `first` when it is 0, until it does. Nothing
 * happens when it already does. MT_OK, or MT_ERR_NOMEM with *arr and *cap
 * unchanged (also when the byte count would overflow). realloc'd: free
 * with free(). */
mt_status_t mt_grow(void **arr, size_t *cap, size_t need, size_t size, size_t first);

/* The same for a typed pointer lvalue: MT_GROW(p, cap, n + 1, 64). The test
 * is in line so that the common case (room left) costs one compare. */
#define MT_GROW(arr, cap, need, first)                                                             \
    ((need) <= (cap) ? MT_OK : mt_grow((void **)&(arr), &(cap), (need), sizeof *(arr), (first)))

#ifdef __cplusplus
}
#endif
#endif
