/* gzip output in whole members: each buffer handed over becomes one complete
 * gzip member (header, deflate data, CRC-32 and length) appended to an
 * mt_buf_t. Concatenated members are one valid gzip file (RFC 1952), which
 * zlib, zcat, Python and Perfetto read as one stream. Two engines: ISA-L's
 * igzip (when the build found it) and libdeflate (always there). Serial,
 * but for mt_gz_pipe_t: the same on a thread of its own. */
#ifndef MERGETRACE_GZOUT_H
#define MERGETRACE_GZOUT_H

#include <stdbool.h>
#include <stddef.h>

#include "mergetrace/buf.h"
#include "mergetrace/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mt_gz_engine {
    MT_GZ_AUTO = 0,       /* the fastest built in: ISA-L, else libdeflate */
    MT_GZ_LIBDEFLATE = 1, /* libdeflate, level 1 */
    MT_GZ_ISAL = 2        /* ISA-L igzip, level 2 (only when built with it) */
} mt_gz_engine_t;

/* The largest buffer mt_gz_member takes (ISA-L counts bytes in 32 bits). */
#define MT_GZ_MAX_MEMBER ((size_t)1 << 30)

typedef struct mt_gz mt_gz_t;

/* Whether this build has the engine (MT_GZ_AUTO and MT_GZ_LIBDEFLATE: always). */
bool mt_gz_available(mt_gz_engine_t e);

/* A compressor with its working memory (a few hundred KiB). *out is NULL on
 * error: MT_ERR_USAGE for an engine this build does not have, MT_ERR_NOMEM. */
mt_status_t mt_gz_new(mt_gz_engine_t e, mt_gz_t **out);

/* The engine a compressor uses (never MT_GZ_AUTO) and its name
 * ("isa-l" or "libdeflate"; static text). */
mt_gz_engine_t mt_gz_engine(const mt_gz_t *z);
const char *mt_gz_engine_name(mt_gz_engine_t e);

/* Compress in[0, n) into one gzip member appended to out (in is borrowed;
 * n may be 0: an empty member). MT_OK; MT_ERR_NOMEM with out unchanged;
 * MT_ERR_LIMIT when n > MT_GZ_MAX_MEMBER; MT_ERR_GZIP if the engine failed
 * (out unchanged). The same input gives the same bytes on every call and in
 * every run, whatever the compressor's address (igzip needs care for that:
 * src/io/gzout.c); a piece holding the byte 0xFF (never in UTF-8) in its
 * first 32 KiB goes through libdeflate even on an ISA-L compressor. */
mt_status_t mt_gz_member(mt_gz_t *z, const void *in, size_t n, mt_buf_t *out);

/* free(NULL)-like. */
void mt_gz_free(mt_gz_t *z);

/* A compressor on a thread of its own, for a caller with a core to spare:
 * the caller hands over pieces (copied into one of a few slots; the call
 * waits while all are taken) and goes on producing the next while the
 * thread makes each piece, in order, one gzip member appended to the
 * mt_buf_t given with it, as mt_gz_member would: the same members, byte
 * for byte. The buffers given
 * must not be touched by the caller until mt_gz_pipe_finish has returned.
 * Memory: the compressor and 3 slots of max_piece bytes. */
typedef struct mt_gz_pipe mt_gz_pipe_t;

/* *out is NULL on error: MT_ERR_USAGE (engine not built in; max_piece 0 or
 * over MT_GZ_MAX_MEMBER), MT_ERR_NOMEM, MT_ERR_IO (no thread). */
mt_status_t mt_gz_pipe_new(mt_gz_engine_t e, size_t max_piece, mt_gz_pipe_t **out);

/* Queue in[0, n) as one member for out. MT_ERR_LIMIT when n > max_piece;
 * otherwise the first error of the thread so far (MT_OK if none): after an
 * error, later pieces are dropped. */
mt_status_t mt_gz_pipe_member(mt_gz_pipe_t *p, const void *in, size_t n, mt_buf_t *out);

/* Wait until every queued piece is in its buffer; the first error, if any
 * (the pipe then stays failed). */
mt_status_t mt_gz_pipe_finish(mt_gz_pipe_t *p);

/* The pieces still queued are compressed first (their buffers must still be
 * valid), then the thread stops; free(NULL)-like. */
void mt_gz_pipe_free(mt_gz_pipe_t *p);

/* A sink of gzip members (the merged trace's): bytes written through
 * mt_gz_sink_write are staged in pieces of MT_GZ_SINK_CHUNK (a write of a
 * whole chunk or more with nothing staged is taken where it lies, in
 * members of up to 2 chunks) and each piece becomes one gzip member
 * appended to out, compressed here or on a pipe's thread (the same
 * members). Why members of 1 MiB rather than one zlib stream: on the
 * merged JSON of the 8 x 157 MB benchmark job (200 MB of it, one core of
 * the project's 2-core VM, best of 3) zlib level 3 streamed 261 MB/s ->
 * 18.2 MB, libdeflate level 1 in 1 MiB members 578 MB/s -> 19.0 MB (256
 * KiB members 586 MB/s -> 19.8 MB; 4 MiB 596 MB/s -> 18.8 MB); ISA-L in
 * 1 MiB members is faster again. One chunk of staging. Plain data owned
 * by the caller; out and the pipe borrowed until mt_gz_sink_close. */
#define MT_GZ_SINK_CHUNK ((size_t)1 << 20)
typedef struct mt_gz_sink {
    mt_gz_t *gz;        /* compressing here, or */
    mt_gz_pipe_t *pipe; /* on the pipe's thread */
    mt_buf_t *out;
    char *stage;        /* MT_GZ_SINK_CHUNK bytes */
    size_t len;         /* staged so far */
} mt_gz_sink_t;

/* pipe: NULL to compress on this thread (MT_GZ_AUTO), else the pipe to
 * hand members to (its max_piece at least 2 chunks). MT_OK or
 * MT_ERR_NOMEM (nothing to close). */
mt_status_t mt_gz_sink_open(mt_gz_sink_t *s, mt_buf_t *out, mt_gz_pipe_t *pipe);

/* An mt_write_fn over the mt_gz_sink_t passed as ctx. */
mt_status_t mt_gz_sink_write(void *ctx, const void *data, size_t len);

/* Compress what is staged (when ok), wait for the pipe's thread to finish
 * it all (always: out must not change after this), free the compressor.
 * The first error. */
mt_status_t mt_gz_sink_close(mt_gz_sink_t *s, bool ok);

#ifdef __cplusplus
}
#endif
#endif /* MERGETRACE_GZOUT_H */
