/* A byte source that yields the uncompressed JSON of a trace from a
 * file or a memory buffer, inflating gzip (any number of members) on the fly. */
#ifndef MERGETRACE_INPUT_H
#define MERGETRACE_INPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mergetrace/status.h"

typedef struct mt_input mt_input_t;

/* Open path (or mem/len when path is NULL; mem is borrowed until close).
 * err gets the path and errno on failure. */
mt_status_t mt_input_open(const char *path, const void *mem, size_t len,
                          mt_input_t **out, mt_error_t *err);

/* Read up to cap uncompressed bytes into dst; *n = 0 means end of input.
 * A gzip stream that ends before its trailer sets *truncated and returns
 * the bytes it could inflate (then 0). Corrupt data: MT_ERR_GZIP. */
mt_status_t mt_input_read(mt_input_t *in, char *dst, size_t cap, size_t *n,
                          bool *truncated, mt_error_t *err);

bool mt_input_is_gzip(const mt_input_t *in);
/* A guess of the uncompressed size, for sizing tables: the file or buffer
 * size; for gzip the larger of 8 times that and the trailer's ISIZE (exact
 * for one member under 4 GiB), ISIZE taken at most as 1032 times the size
 * (deflate's limit; a forged trailer reserves no more). 0 when unknown. */
uint64_t mt_input_size_hint(const mt_input_t *in);
uint64_t mt_input_raw_bytes(const mt_input_t *in); /* bytes taken from the file */
void mt_input_close(mt_input_t *in);

/* Is path a regular file of at most max_bytes, checked before it is
 * opened (a FIFO blocks the open, /dev/zero reads until memory runs out)?
 * what names the file in the message ("--rank-map"). MT_OK; MT_ERR_IO
 * when it cannot be stat'ed (missing, a dangling link); MT_ERR_FORMAT when
 * it is not a regular file, MT_ERR_LIMIT when larger than max_bytes;
 * err->msg names the option and the path. */
mt_status_t mt_input_check_file(const char *path, uint64_t max_bytes, const char *what, mt_error_t *err);

/* A small side file (the rank map) read whole after mt_input_check_file:
 * *text (malloc'd, NUL-terminated, the caller frees; NULL on error) and
 * *len. mt_input_check_file's status and message; MT_ERR_IO "<what>:
 * <path>: cannot read the file" when it cannot be read (out of memory
 * too). */
mt_status_t mt_input_read_small(const char *path, uint64_t max_bytes, const char *what, char **text, size_t *len,
                                mt_error_t *err);

/* The largest side file an option names (--baseline's report.json,
 * --rank-map, --timeline-map): 1 GiB. */
#define MT_SIDE_FILE_MAX (UINT64_C(1) << 30)

/* Read a whole file (plain or gzip) into *buf (malloc'd, owned by the
 * caller; *len bytes). *truncated is set when a gzip stream ends early.
 * For the small side inputs (NCCL files), whose error offsets then count
 * from the start. MT_OK, or the open/read error in err (*buf NULL). */
mt_status_t mt_input_read_file(const char *path, char **buf, size_t *len, bool *truncated, mt_error_t *err);

/* The first at most cap uncompressed bytes of a file (plain or gzip) into
 * buf, for recognising what a file is; *len bytes were read (fewer at the
 * end of the file or of a truncated gzip stream). MT_OK, or the open/read
 * error in err. */
mt_status_t mt_input_read_head(const char *path, char *buf, size_t cap, size_t *len, mt_error_t *err);

#endif
