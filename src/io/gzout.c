/* gzip members from whole buffers, through ISA-L or libdeflate. Why two:
 * deflating was the largest single cost of writing the merged trace. On 300
 * MB of the benchmark job's merged JSON in 1 MiB members (one core of the
 * project's 2-core VM, best of 2): libdeflate level 1 542 MB/s -> 9.5% of
 * the size, ISA-L level 1 1,484 MB/s -> 9.9%, level 2 1,505 MB/s -> 9.7%,
 * level 3 468 MB/s -> 10.1%. ISA-L level 2 is 2.8x faster for 2% more bytes;
 * libdeflate stays for builds without ISA-L (it is not packaged for every
 * architecture).
 * Both give the same bytes for the same input on every call, in every run
 * (a checksum of the merged trace, or a build cache, can rely on it); for
 * igzip that takes the one-byte dictionary of isal_member below. */
#include "mergetrace/gzout.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <libdeflate.h>
#ifdef MT_HAVE_ISAL
#include <isa-l/igzip_lib.h>
#endif

#define LIBDEFLATE_LEVEL 1
#define ISAL_LEVEL 2
/* The furthest back a deflate match reaches (RFC 1951). */
#define DEFLATE_WINDOW ((size_t)32768)

struct mt_gz {
    mt_gz_engine_t engine;
    struct libdeflate_compressor *ld;
#ifdef MT_HAVE_ISAL
    struct isal_zstream *zs; /* ~80 KiB: on the heap, not in the caller's frame */
    uint8_t *level_buf;
#endif
};

bool mt_gz_available(mt_gz_engine_t e)
{
    switch (e) {
    case MT_GZ_AUTO:
    case MT_GZ_LIBDEFLATE: return true;
    case MT_GZ_ISAL:
#ifdef MT_HAVE_ISAL
        return true;
#else
        return false;
#endif
    }
    return false;
}

const char *mt_gz_engine_name(mt_gz_engine_t e)
{
    switch (e) {
    case MT_GZ_LIBDEFLATE: return "libdeflate";
    case MT_GZ_ISAL: return "isa-l";
    case MT_GZ_AUTO: break;
    }
    return "auto";
}

mt_status_t mt_gz_new(mt_gz_engine_t e, mt_gz_t **out)
{
    *out = NULL;
    if (!mt_gz_available(e))
        return MT_ERR_USAGE;
    if (e == MT_GZ_AUTO)
        e = mt_gz_available(MT_GZ_ISAL) ? MT_GZ_ISAL : MT_GZ_LIBDEFLATE;
    mt_gz_t *z = calloc(1, sizeof *z);
    if (!z)
        return MT_ERR_NOMEM;
    z->engine = e;
    if (e == MT_GZ_LIBDEFLATE) {
        if (!(z->ld = libdeflate_alloc_compressor(LIBDEFLATE_LEVEL)))
            goto nomem;
    }
#ifdef MT_HAVE_ISAL
    if (e == MT_GZ_ISAL) {
        if (!(z->zs = malloc(sizeof *z->zs)) || !(z->level_buf = malloc(ISAL_DEF_LVL2_DEFAULT)))
            goto nomem;
    }
#endif
    *out = z;
    return MT_OK;
nomem:
    mt_gz_free(z);
    return MT_ERR_NOMEM;
}

mt_gz_engine_t mt_gz_engine(const mt_gz_t *z)
{
    return z->engine;
}

#ifdef MT_HAVE_ISAL
/* One member with igzip, written in place after out->len; out->len moves
 * only when the member is complete. igzip has no bound function: the first
 * guess of room (a quarter of the input) fits trace JSON, which deflates to
 * about a tenth; anything less compressible gets more room until the
 * stream ends.
 * Why the dictionary: igzip's level 1-2 body (igzip_icf_body_h1_gr_bt.asm,
 * .write_first_byte; ISA-L 2.30, the same in 2.32) takes
 * the hash slot of the stream's third byte from a register that still
 * holds the isal_zstream pointer (`shr tmp2, 16` with no load of the data
 * into tmp2). Where that byte's position lands in the hash table, and so a
 * few matches, then depend on bits 16-47 of z->zs's address, which differ
 * from run to run (ASLR, heap layout, which thread allocated first): the
 * 110-byte header member came out 110 or 107 bytes (a 4- or a 5-byte
 * match, static or dynamic block) for 0.4 % of addresses, a 4 KiB member
 * for 1 in 16,000; all valid, but the merged trace was not the same bytes
 * from run to run. That path is taken only by a stream with no history;
 * a preset dictionary gives it history. The one byte 0xFF, which never
 * occurs in UTF-8: a match that reached back into it would start with
 * 0xFF, so with no 0xFF among the piece's first 32 KiB (deflate's
 * distances go no further back) nothing refers to it and the member
 * inflates without it as any gzip member does. A piece with 0xFF there
 * goes through libdeflate instead (the same bytes every time too). Cost:
 * none measurable (1,100 MB/s either way on a 163 MB merged trace in
 * 1 MiB members; scanning the whole piece instead of its first 32 KiB
 * would have cost 8 %; docs/PERFORMANCE.md). */
static mt_status_t isal_member(mt_gz_t *z, const void *in, size_t n, mt_buf_t *out)
{
    static uint8_t no_utf8 = 0xFF; /* igzip only reads it */
    struct isal_zstream *s = z->zs;
    isal_deflate_init(s);
    s->level = ISAL_LEVEL;
    s->level_buf = z->level_buf;
    s->level_buf_size = ISAL_DEF_LVL2_DEFAULT;
    s->gzip_flag = IGZIP_GZIP;
    s->end_of_stream = 1;
    s->flush = NO_FLUSH;
    if (isal_deflate_set_dict(s, &no_utf8, 1) != COMP_OK)
        return MT_ERR_GZIP;
    s->next_in = (uint8_t *)(uintptr_t)in; /* igzip's field is not const; it only reads */
    s->avail_in = (uint32_t)n;
    size_t room = n / 4 + 1024;
    for (;;) {
        if (mt_buf_reserve(out, s->total_out + room))
            return MT_ERR_NOMEM;
        size_t at = out->len + s->total_out, avail = out->cap - at;
        s->next_out = (uint8_t *)out->data + at;
        s->avail_out = avail > UINT32_MAX ? UINT32_MAX : (uint32_t)avail;
        uint32_t before_in = s->avail_in, before_out = s->total_out;
        if (isal_deflate(s) != COMP_OK)
            return MT_ERR_GZIP;
        if (s->internal_state.state == ZSTATE_END)
            break;
        if (s->avail_in == before_in && s->total_out == before_out && s->avail_out)
            return MT_ERR_GZIP; /* no progress with room left: should not happen */
        room *= 2;
    }
    out->len += s->total_out;
    return MT_OK;
}
#endif

mt_status_t mt_gz_member(mt_gz_t *z, const void *in, size_t n, mt_buf_t *out)
{
    if (n > MT_GZ_MAX_MEMBER)
        return MT_ERR_LIMIT;
#ifdef MT_HAVE_ISAL
    if (z->engine == MT_GZ_ISAL && (!n || !memchr(in, 0xFF, n < DEFLATE_WINDOW ? n : DEFLATE_WINDOW)))
        return isal_member(z, in, n, out);
    /* 0xFF (not UTF-8) within reach of isal_member's dictionary:
     * libdeflate, made on first need */
    if (!z->ld && !(z->ld = libdeflate_alloc_compressor(LIBDEFLATE_LEVEL)))
        return MT_ERR_NOMEM;
#endif
    if (mt_buf_reserve(out, libdeflate_gzip_compress_bound(z->ld, n)))
        return MT_ERR_NOMEM;
    size_t got = libdeflate_gzip_compress(z->ld, in, n, out->data + out->len, out->cap - out->len);
    if (!got)
        return MT_ERR_GZIP; /* cannot happen with the bound's room */
    out->len += got;
    return MT_OK;
}

void mt_gz_free(mt_gz_t *z)
{
    if (!z)
        return;
    libdeflate_free_compressor(z->ld);
#ifdef MT_HAVE_ISAL
    free(z->zs);
    free(z->level_buf);
#endif
    free(z);
}

/* ------------------------------------------------------------ the pipe */

#define PIPE_SLOTS 3

typedef struct pipe_slot {
    char *data;
    size_t len;
    mt_buf_t *out;
} pipe_slot_t;

struct mt_gz_pipe {
    mt_gz_t *z;
    size_t max_piece;
    pipe_slot_t slot[PIPE_SLOTS];
    /* Guarded by mu: the queue is slot[head], slot[head + 1], ... (mod
     * PIPE_SLOTS), `count` of them; the thread works on slot[head] while it
     * is still counted, so the caller never refills a slot in use. */
    size_t head, count;
    bool stop;
    mt_status_t st;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
};

static void *pipe_main(void *arg)
{
    mt_gz_pipe_t *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->count && !p->stop)
            pthread_cond_wait(&p->cv, &p->mu);
        if (!p->count)
            break; /* stopped with nothing queued */
        pipe_slot_t *sl = &p->slot[p->head];
        bool failed = p->st != MT_OK;
        pthread_mutex_unlock(&p->mu);
        mt_status_t st = failed ? MT_OK : mt_gz_member(p->z, sl->data, sl->len, sl->out);
        pthread_mutex_lock(&p->mu);
        if (st && !p->st)
            p->st = st;
        p->head = (p->head + 1) % PIPE_SLOTS;
        p->count--;
        pthread_cond_broadcast(&p->cv);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

mt_status_t mt_gz_pipe_new(mt_gz_engine_t e, size_t max_piece, mt_gz_pipe_t **out)
{
    *out = NULL;
    if (!max_piece || max_piece > MT_GZ_MAX_MEMBER)
        return MT_ERR_USAGE;
    mt_gz_pipe_t *p = calloc(1, sizeof *p);
    if (!p)
        return MT_ERR_NOMEM;
    mt_status_t st = mt_gz_new(e, &p->z);
    if (st) {
        free(p);
        return st;
    }
    p->max_piece = max_piece;
    st = MT_ERR_NOMEM;
    for (int i = 0; i < PIPE_SLOTS; i++)
        if (!(p->slot[i].data = malloc(max_piece)))
            goto fail;
    if (pthread_mutex_init(&p->mu, NULL))
        goto fail;
    if (pthread_cond_init(&p->cv, NULL)) {
        pthread_mutex_destroy(&p->mu);
        goto fail;
    }
    if (pthread_create(&p->thread, NULL, pipe_main, p)) {
        pthread_cond_destroy(&p->cv);
        pthread_mutex_destroy(&p->mu);
        st = MT_ERR_IO;
        goto fail;
    }
    *out = p;
    return MT_OK;
fail:
    for (int i = 0; i < PIPE_SLOTS; i++)
        free(p->slot[i].data);
    mt_gz_free(p->z);
    free(p);
    return st;
}

mt_status_t mt_gz_pipe_member(mt_gz_pipe_t *p, const void *in, size_t n, mt_buf_t *out)
{
    if (n > p->max_piece)
        return MT_ERR_LIMIT;
    pthread_mutex_lock(&p->mu);
    while (p->count == PIPE_SLOTS)
        pthread_cond_wait(&p->cv, &p->mu);
    mt_status_t st = p->st;
    pipe_slot_t *sl = &p->slot[(p->head + p->count) % PIPE_SLOTS];
    pthread_mutex_unlock(&p->mu);
    if (st)
        return st;
    /* The slot is not queued yet: the thread does not look at it. */
    if (n)
        memcpy(sl->data, in, n);
    sl->len = n;
    sl->out = out;
    pthread_mutex_lock(&p->mu);
    p->count++;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    return MT_OK;
}

mt_status_t mt_gz_pipe_finish(mt_gz_pipe_t *p)
{
    pthread_mutex_lock(&p->mu);
    while (p->count)
        pthread_cond_wait(&p->cv, &p->mu);
    mt_status_t st = p->st;
    pthread_mutex_unlock(&p->mu);
    return st;
}

void mt_gz_pipe_free(mt_gz_pipe_t *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->thread, NULL);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    for (int i = 0; i < PIPE_SLOTS; i++)
        free(p->slot[i].data);
    mt_gz_free(p->z);
    free(p);
}

/* ------------------------------------------------------------ the sink */

static mt_status_t sink_member(mt_gz_sink_t *s, const void *p, size_t n)
{
    return s->pipe ? mt_gz_pipe_member(s->pipe, p, n, s->out) : mt_gz_member(s->gz, p, n, s->out);
}

static mt_status_t sink_compress(mt_gz_sink_t *s)
{
    if (!s->len)
        return MT_OK;
    mt_status_t st = sink_member(s, s->stage, s->len);
    s->len = 0;
    return st;
}

mt_status_t mt_gz_sink_write(void *ctx, const void *data, size_t len)
{
    mt_gz_sink_t *s = ctx;
    const char *p = data;
    /* With nothing staged, a piece of a whole chunk or more is compressed
     * where it lies (the merge writer hands over ~1 MiB at a time): no copy
     * into the stage. Such members hold up to 2 chunks. */
    while (!s->len && len >= MT_GZ_SINK_CHUNK) {
        size_t k = len < 2 * MT_GZ_SINK_CHUNK ? len : MT_GZ_SINK_CHUNK;
        mt_status_t st = sink_member(s, p, k);
        if (st)
            return st;
        p += k;
        len -= k;
    }
    while (len) {
        size_t k = MT_GZ_SINK_CHUNK - s->len < len ? MT_GZ_SINK_CHUNK - s->len : len;
        memcpy(s->stage + s->len, p, k);
        s->len += k;
        p += k;
        len -= k;
        if (s->len == MT_GZ_SINK_CHUNK) {
            mt_status_t st = sink_compress(s);
            if (st)
                return st;
        }
    }
    return MT_OK;
}

mt_status_t mt_gz_sink_open(mt_gz_sink_t *s, mt_buf_t *out, mt_gz_pipe_t *pipe)
{
    memset(s, 0, sizeof *s);
    s->out = out;
    s->pipe = pipe;
    s->stage = malloc(MT_GZ_SINK_CHUNK);
    if (!s->stage || (!pipe && mt_gz_new(MT_GZ_AUTO, &s->gz))) {
        free(s->stage);
        s->stage = NULL;
        return MT_ERR_NOMEM;
    }
    return MT_OK;
}

mt_status_t mt_gz_sink_close(mt_gz_sink_t *s, bool ok)
{
    mt_status_t st = ok ? sink_compress(s) : MT_OK;
    if (s->pipe) {
        mt_status_t pst = mt_gz_pipe_finish(s->pipe);
        if (!st)
            st = pst;
    }
    mt_gz_free(s->gz);
    free(s->stage);
    s->gz = NULL;
    s->stage = NULL;
    return st;
}
