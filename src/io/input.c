/* Plain or gzip input for the loader, read in chunks so memory stays bounded
 * by the chunk size and the largest single event, not by the file size. */
#define _POSIX_C_SOURCE 200809L
#include "mergetrace/input.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#ifdef MT_HAVE_ISAL
/* gzip inputs inflate through ISA-L where the build has it: 3x zlib's
 * speed on the benchmark's 11 MB gzip rank (0.045 vs 0.137 s for 157 MB of
 * JSON, one core of the project's 2-core VM), which matters twice per rank:
 * the analysis load and the merged write read every file. Without ISA-L,
 * zlib; tests/perf compares the two builds' tables. */
#include <isa-l/igzip_lib.h>
#endif

#define ZBUF (256u * 1024u)
/* gzip inputs smaller than this are inflated without the thread below. */
#define SMALL_GZIP (64u * 1024u)

/* gzip input is inflated by a second thread into a small ring of slots
 * while the loader parses, so that a gzip trace loads about as fast as it
 * inflates rather than at the sum of both times. */
#define N_SLOTS 4
#define SLOT_BYTES (1u << 20)

typedef struct slot {
    char *data;
    size_t n, pos;        /* bytes held, bytes handed out */
    bool full;            /* written by the producer, not yet consumed */
    bool last;            /* no data after this slot (end or error) */
    bool truncated;
    mt_status_t st;
    mt_error_t err;
} slot_t;

struct mt_input {
    int fd;                 /* -1 for memory input */
    const unsigned char *mem;
    size_t mem_len, mem_pos;
    bool gzip;
    bool z_live;            /* inflate state initialised */
    bool z_member_done;     /* last member ended; next bytes must start a new one */
    bool eof_raw;
#ifdef MT_HAVE_ISAL
    struct inflate_state *iz; /* ~100 KiB: on the heap */
    bool z_member_start;      /* the next bytes begin a member (its FLG not checked yet) */
#else
    z_stream z;
#endif
    unsigned char *zbuf;    /* compressed bytes read from the file */
    size_t zbuf_cap;        /* ZBUF, or less for a small input */
    uint64_t raw_bytes;
    uint64_t size;          /* file or buffer size, 0 if unknown */
    uint64_t isize;         /* gzip: the last member's ISIZE trailer field, 0 if unknown */
    unsigned char peek[2];
    size_t n_peek;          /* bytes of peek[] not yet handed out (plain files) */
    /* Inflate thread (gzip only). */
    bool threaded;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
    slot_t slots[N_SLOTS];
    unsigned head;          /* next slot the consumer reads */
    bool done;              /* the consumer saw the last slot */
};

static mt_status_t gz_read(mt_input_t *in, char *dst, size_t cap, size_t *n, bool *truncated, mt_error_t *err);

static void *inflate_main(void *arg)
{
    mt_input_t *in = arg;
    for (unsigned k = 0;; k = (k + 1) % N_SLOTS) {
        slot_t *s = &in->slots[k];
        pthread_mutex_lock(&in->mu);
        while (s->full && !in->stop)
            pthread_cond_wait(&in->cv, &in->mu);
        bool stop = in->stop;
        pthread_mutex_unlock(&in->mu);
        if (stop)
            return NULL;
        mt_error_clear(&s->err);
        s->truncated = false;
        s->st = gz_read(in, s->data, SLOT_BYTES, &s->n, &s->truncated, &s->err);
        s->pos = 0;
        s->last = s->st != MT_OK || s->n == 0;
        pthread_mutex_lock(&in->mu);
        s->full = true;
        pthread_cond_broadcast(&in->cv);
        pthread_mutex_unlock(&in->mu);
        if (s->last)
            return NULL;
    }
}

static bool start_thread(mt_input_t *in)
{
    for (int i = 0; i < N_SLOTS; i++) {
        in->slots[i].data = malloc(SLOT_BYTES);
        if (!in->slots[i].data)
            return false;
    }
    if (pthread_mutex_init(&in->mu, NULL))
        return false;
    if (pthread_cond_init(&in->cv, NULL)) {
        pthread_mutex_destroy(&in->mu);
        return false;
    }
    if (pthread_create(&in->thread, NULL, inflate_main, in)) {
        pthread_cond_destroy(&in->cv);
        pthread_mutex_destroy(&in->mu);
        return false;
    }
    in->threaded = true;
    return true;
}

/* Consumer side: copy from the ring. */
static mt_status_t ring_read(mt_input_t *in, char *dst, size_t cap, size_t *n, bool *truncated, mt_error_t *err)
{
    size_t k = 0;
    while (k < cap && !in->done) {
        slot_t *s = &in->slots[in->head];
        pthread_mutex_lock(&in->mu);
        while (!s->full)
            pthread_cond_wait(&in->cv, &in->mu);
        pthread_mutex_unlock(&in->mu);
        if (s->st != MT_OK) {
            if (err) {
                char path[sizeof err->path];
                memcpy(path, err->path, sizeof path);
                int rank = err->rank;
                *err = s->err;
                memcpy(err->path, path, sizeof path);
                err->rank = rank;
            }
            in->done = true;
            *n = k;
            return s->st;
        }
        size_t take = s->n - s->pos < cap - k ? s->n - s->pos : cap - k;
        memcpy(dst + k, s->data + s->pos, take);
        s->pos += take;
        k += take;
        if (s->truncated)
            *truncated = true;
        if (s->pos == s->n) {
            if (s->last) {
                in->done = true;
                break;
            }
            pthread_mutex_lock(&in->mu);
            s->full = false;
            pthread_cond_broadcast(&in->cv);
            pthread_mutex_unlock(&in->mu);
            in->head = (in->head + 1) % N_SLOTS;
        }
    }
    *n = k;
    return MT_OK;
}

/* Raw bytes from the file or memory. */
static mt_status_t raw_read(mt_input_t *in, unsigned char *dst, size_t cap, size_t *n, mt_error_t *err)
{
    if (in->fd < 0) {
        size_t k = in->mem_len - in->mem_pos;
        if (k > cap)
            k = cap;
        memcpy(dst, in->mem + in->mem_pos, k);
        in->mem_pos += k;
        *n = k;
        in->raw_bytes += k;
        return MT_OK;
    }
    for (;;) {
        ssize_t r = read(in->fd, dst, cap);
        if (r >= 0) {
            *n = (size_t)r;
            in->raw_bytes += (uint64_t)r;
            return MT_OK;
        }
        if (errno == EINTR)
            continue;
        if (err)
            err->sys_errno = errno;
        return mt_error_set(err, MT_ERR_IO, "read failed");
    }
}

mt_status_t mt_input_open(const char *path, const void *mem, size_t len, mt_input_t **out, mt_error_t *err)
{
    *out = NULL;
    mt_input_t *in = calloc(1, sizeof *in);
    if (!in)
        return mt_error_set(err, MT_ERR_NOMEM, "allocating the input");
    in->fd = -1;
    if (path) {
        in->fd = open(path, O_RDONLY | O_CLOEXEC);
        if (in->fd < 0) {
            if (err)
                err->sys_errno = errno;
            free(in);
            return mt_error_set(err, MT_ERR_IO, "cannot open");
        }
        struct stat sb;
        if (fstat(in->fd, &sb) == 0 && S_ISREG(sb.st_mode))
            in->size = (uint64_t)sb.st_size;
#ifdef POSIX_FADV_SEQUENTIAL
        (void)posix_fadvise(in->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
    } else {
        in->mem = mem;
        in->mem_len = len;
        in->size = len;
    }
    /* Sniff the gzip magic (1f 8b); the name says nothing. */
    size_t got = 0, n = 0;
    while (got < 2) {
        mt_status_t st = raw_read(in, in->peek + got, 2 - got, &n, err);
        if (st) {
            mt_input_close(in);
            return st;
        }
        if (!n)
            break;
        got += n;
    }
    in->n_peek = got;
    if (got == 2 && in->peek[0] == 0x1f && in->peek[1] == 0x8b) {
        in->gzip = true;
        /* A small input gets a small buffer and no thread: the buffers and
         * the thread would cost more than inflating it (thousands of small
         * rank files, and the fuzzer, which loads tiny inputs millions of
         * times). */
        bool small = in->size && in->size < SMALL_GZIP;
        in->zbuf_cap = small ? (size_t)in->size + 16 : ZBUF;
        in->zbuf = malloc(in->zbuf_cap);
        if (!in->zbuf) {
            mt_input_close(in);
            return mt_error_set(err, MT_ERR_NOMEM, "allocating the inflate buffer");
        }
#ifdef MT_HAVE_ISAL
        if (!(in->iz = malloc(sizeof *in->iz))) {
            mt_input_close(in);
            return mt_error_set(err, MT_ERR_NOMEM, "initialising inflate");
        }
        isal_inflate_init(in->iz);
        in->iz->crc_flag = ISAL_GZIP; /* gzip header and trailer (CRC-32, length) */
        in->z_member_start = true;
#else
        /* 16 + MAX_WBITS: gzip wrapper only. */
        if (inflateInit2(&in->z, 16 + MAX_WBITS) != Z_OK) {
            mt_input_close(in);
            return mt_error_set(err, MT_ERR_NOMEM, "initialising inflate");
        }
#endif
        in->z_live = true;
        /* The gzip trailer's ISIZE (last 4 bytes, little-endian) is the
         * uncompressed size mod 2^32 of the last member: for the usual
         * one-member file, the JSON's size, which sizes the event table. */
        const unsigned char *tail = NULL;
        unsigned char tb[4];
        if (in->fd >= 0 && in->size >= 18 && pread(in->fd, tb, 4, (off_t)(in->size - 4)) == 4)
            tail = tb;
        else if (in->mem && in->mem_len >= 18)
            tail = in->mem + in->mem_len - 4;
        if (tail)
            in->isize = (uint64_t)tail[0] | (uint64_t)tail[1] << 8 | (uint64_t)tail[2] << 16 | (uint64_t)tail[3] << 24;
        in->zbuf[0] = in->peek[0];
        in->zbuf[1] = in->peek[1];
#ifdef MT_HAVE_ISAL
        in->iz->next_in = in->zbuf;
        in->iz->avail_in = 2;
#else
        in->z.next_in = in->zbuf;
        in->z.avail_in = 2;
#endif
        in->n_peek = 0;
        /* Without a thread the input still works, only slower. */
        if (!small)
            (void)start_thread(in);
    }
    *out = in;
    return MT_OK;
}

/* The next piece of the compressed file into zbuf (both inflaters). */
static mt_status_t zbuf_refill(mt_input_t *in, size_t *k, mt_error_t *err)
{
    *k = 0;
    mt_status_t st = raw_read(in, in->zbuf, in->zbuf_cap, k, err);
    if (!st && !*k)
        in->eof_raw = true;
    return st;
}

/* Bytes after a member that do not start another one. */
static mt_status_t trailing_bytes(const mt_input_t *in, uint64_t avail_in, mt_error_t *err)
{
    if (err)
        err->offset = -1;
    return mt_error_set(err, MT_ERR_GZIP, "unexpected bytes after gzip member at compressed offset %llu",
                        (unsigned long long)(in->raw_bytes - avail_in));
}

#ifdef MT_HAVE_ISAL
static const char *isal_error_text(int r)
{
    switch (r) {
    case ISAL_INVALID_BLOCK: return "invalid deflate block";
    case ISAL_INVALID_SYMBOL: return "invalid deflate code";
    case ISAL_INVALID_LOOKBACK: return "invalid distance too far back";
    case ISAL_INVALID_WRAPPER: return "incorrect gzip header";
    case ISAL_UNSUPPORTED_METHOD: return "unknown compression method";
    case ISAL_INCORRECT_CHECKSUM: return "incorrect crc or length check";
    default: return "inflate failed";
    }
}

/* At least k bytes of input at s->next_in, unless the file ends first (the
 * rest moved to the front of the buffer, more read after it). */
static mt_status_t isal_fill(mt_input_t *in, struct inflate_state *s, uint32_t k, mt_error_t *err)
{
    if (s->avail_in >= k || in->eof_raw)
        return MT_OK;
    memmove(in->zbuf, s->next_in, s->avail_in);
    s->next_in = in->zbuf;
    while (s->avail_in < k && !in->eof_raw) {
        size_t got = 0;
        mt_status_t st = raw_read(in, in->zbuf + s->avail_in, in->zbuf_cap - s->avail_in, &got, err);
        if (st)
            return st;
        if (!got)
            in->eof_raw = true;
        s->avail_in += (uint32_t)got;
    }
    return MT_OK;
}

/* As the zlib version below, with one difference in the shape: igzip reads
 * input ahead into its bit buffer and may hold decoded bytes back when the
 * output is full, so a stream is taken as cut short only when a call with
 * no input left produced nothing and did not reach the trailer (the unit
 * tests' reads of every size never saw it hold bytes back; this does not
 * rely on it). */
static mt_status_t gz_read(mt_input_t *in, char *dst, size_t cap, size_t *n, bool *truncated, mt_error_t *err)
{
    struct inflate_state *s = in->iz;
    s->next_out = (uint8_t *)dst;
    s->avail_out = cap > UINT32_MAX ? UINT32_MAX : (uint32_t)cap;
    while (s->avail_out) {
        if (s->avail_in == 0 && !in->eof_raw) {
            size_t k;
            mt_status_t st = zbuf_refill(in, &k, err);
            if (st)
                return st;
            s->next_in = in->zbuf;
            s->avail_in = (uint32_t)k;
        }
        if (in->z_member_done) {
            if (s->avail_in == 0 && in->eof_raw)
                break; /* clean end after the last member */
            /* Another member must follow (concatenated gzip is valid). */
            if (s->next_in[0] != 0x1f)
                return trailing_bytes(in, s->avail_in, err);
            /* The reset keeps neither the cursors nor the wrapper flag. */
            uint8_t *ni = s->next_in, *no = s->next_out;
            uint32_t ai = s->avail_in, ao = s->avail_out;
            isal_inflate_reset(s);
            s->crc_flag = ISAL_GZIP;
            s->next_in = ni;
            s->avail_in = ai;
            s->next_out = no;
            s->avail_out = ao;
            in->z_member_done = false;
            in->z_member_start = true;
        }
        if (in->z_member_start) {
            /* igzip skips a header's reserved flag bits; RFC 1952 (and
             * zlib) reject a member that sets any. */
            mt_status_t st = isal_fill(in, s, 4, err);
            if (st)
                return st;
            if (s->avail_in >= 4 && (s->next_in[3] & 0xe0))
                return mt_error_set(err, MT_ERR_GZIP, "unknown header flags set at compressed offset %llu",
                                    (unsigned long long)(in->raw_bytes - s->avail_in + 3));
            in->z_member_start = false;
        }
        uint32_t in_before = s->avail_in, out_before = s->avail_out;
        int r = isal_inflate(s);
        if (r != ISAL_DECOMP_OK && r != ISAL_END_INPUT && r != ISAL_OUT_OVERFLOW)
            return mt_error_set(err, MT_ERR_GZIP, "%s at compressed offset %llu", isal_error_text(r),
                                (unsigned long long)(in->raw_bytes - s->avail_in));
        if (s->block_state == ISAL_BLOCK_FINISH) {
            in->z_member_done = true;
            continue;
        }
        if (s->avail_out == out_before && s->avail_in == in_before) {
            if (in_before == 0 && in->eof_raw) {
                /* The stream stopped before its trailer: a partial copy. */
                *truncated = true;
                break;
            }
            if (in_before) /* input and room, yet nothing moved: never seen; no endless loop */
                return mt_error_set(err, MT_ERR_GZIP, "inflate stalled at compressed offset %llu",
                                    (unsigned long long)(in->raw_bytes - s->avail_in));
        }
    }
    *n = cap - s->avail_out;
    return MT_OK;
}
#else
static mt_status_t gz_read(mt_input_t *in, char *dst, size_t cap, size_t *n, bool *truncated, mt_error_t *err)
{
    in->z.next_out = (unsigned char *)dst;
    in->z.avail_out = cap > UINT32_MAX ? UINT32_MAX : (uInt)cap;
    while (in->z.avail_out) {
        if (in->z.avail_in == 0 && !in->eof_raw) {
            size_t k;
            mt_status_t st = zbuf_refill(in, &k, err);
            if (st)
                return st;
            in->z.next_in = in->zbuf;
            in->z.avail_in = (uInt)k;
        }
        if (in->z_member_done) {
            if (in->z.avail_in == 0 && in->eof_raw)
                break; /* clean end after the last member */
            /* Another member must follow (concatenated gzip is valid). */
            if (in->z.next_in[0] != 0x1f)
                return trailing_bytes(in, in->z.avail_in, err);
            inflateReset(&in->z);
            in->z_member_done = false;
        }
        if (in->z.avail_in == 0 && in->eof_raw) {
            /* The stream stopped before its trailer: a partial copy. */
            *truncated = true;
            break;
        }
        int r = inflate(&in->z, Z_NO_FLUSH);
        if (r == Z_STREAM_END) {
            in->z_member_done = true;
            continue;
        }
        if (r == Z_BUF_ERROR)
            continue; /* needs more input; loop reads it */
        if (r != Z_OK) {
            return mt_error_set(err, MT_ERR_GZIP, "%s at compressed offset %llu",
                                in->z.msg ? in->z.msg : "inflate failed",
                                (unsigned long long)(in->raw_bytes - in->z.avail_in));
        }
    }
    *n = cap - in->z.avail_out;
    return MT_OK;
}

#endif

mt_status_t mt_input_read(mt_input_t *in, char *dst, size_t cap, size_t *n, bool *truncated, mt_error_t *err)
{
    *n = 0;
    if (in->threaded)
        return ring_read(in, dst, cap, n, truncated, err);
    if (in->gzip)
        return gz_read(in, dst, cap, n, truncated, err);
    size_t k = 0;
    while (in->n_peek && k < cap) {
        dst[k++] = (char)in->peek[0];
        in->peek[0] = in->peek[1];
        in->n_peek--;
    }
    /* Fill as much as asked: fewer, larger reads. */
    while (k < cap) {
        size_t r = 0;
        mt_status_t st = raw_read(in, (unsigned char *)dst + k, cap - k, &r, err);
        if (st)
            return st;
        if (!r)
            break;
        k += r;
    }
    *n = k;
    return MT_OK;
}

uint64_t mt_input_size_hint(const mt_input_t *in)
{
    if (!in->gzip)
        return in->size;
    /* ISIZE wraps above 4 GiB and covers only the last member: never below
     * the old guess of 8x the compressed bytes. Nor above what deflate can
     * expand to (at most 1032 bytes out per byte in): a forged trailer on a
     * tiny file would otherwise reserve gigabytes of table (the fuzzer's
     * inputs did, and ran at 30 executions a second under ASan). */
    uint64_t guess = in->size * 8, ceiling = in->size * 1032;
    uint64_t isize = in->isize < ceiling ? in->isize : ceiling;
    return isize > guess ? isize : guess;
}

bool mt_input_is_gzip(const mt_input_t *in)
{
    return in->gzip;
}

uint64_t mt_input_raw_bytes(const mt_input_t *in)
{
    return in->raw_bytes;
}

void mt_input_close(mt_input_t *in)
{
    if (!in)
        return;
    if (in->threaded) {
        pthread_mutex_lock(&in->mu);
        in->stop = true;
        pthread_cond_broadcast(&in->cv);
        pthread_mutex_unlock(&in->mu);
        pthread_join(in->thread, NULL);
        pthread_cond_destroy(&in->cv);
        pthread_mutex_destroy(&in->mu);
    }
    for (int i = 0; i < N_SLOTS; i++)
        free(in->slots[i].data);
#ifdef MT_HAVE_ISAL
    free(in->iz);
#else
    if (in->z_live)
        inflateEnd(&in->z);
#endif
    if (in->fd >= 0)
        close(in->fd);
    free(in->zbuf);
    free(in);
}

mt_status_t mt_input_check_file(const char *path, uint64_t max_bytes, const char *what, mt_error_t *err)
{
    struct stat sb;
    if (stat(path, &sb) != 0)
        return mt_error_set(err, MT_ERR_IO, "%s %s: %s", what, path, strerror(errno));
    if (!S_ISREG(sb.st_mode))
        return mt_error_set(err, MT_ERR_FORMAT, "%s %s: not a regular file", what, path);
    if ((uint64_t)sb.st_size > max_bytes)
        return mt_error_set(err, MT_ERR_LIMIT, "%s %s: %llu bytes, more than the %llu this file may have", what,
                            path, (unsigned long long)sb.st_size, (unsigned long long)max_bytes);
    return MT_OK;
}

mt_status_t mt_input_read_small(const char *path, uint64_t max_bytes, const char *what, char **text, size_t *len,
                                mt_error_t *err)
{
    *text = NULL;
    *len = 0;
    /* a regular file of a sane size before it is opened: a FIFO blocked
     * here, /dev/zero was an empty map */
    mt_status_t st = mt_input_check_file(path, max_bytes, what, err);
    if (st != MT_OK)
        return st;
    long n = -1;
    char *buf = NULL;
    FILE *f = fopen(path, "rb");
    if (f && fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
        buf = malloc((size_t)n + 1);
        if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n)
            n = -1;
    } else {
        n = -1;
    }
    if (f)
        fclose(f);
    if (n < 0) {
        free(buf);
        return mt_error_set(err, MT_ERR_IO, "%s: %s: cannot read the file", what, path);
    }
    buf[n] = '\0';
    *text = buf;
    *len = (size_t)n;
    return MT_OK;
}

mt_status_t mt_input_read_file(const char *path, char **buf, size_t *len, bool *truncated, mt_error_t *err)
{
    *buf = NULL;
    *len = 0;
    *truncated = false;
    mt_input_t *in = NULL;
    mt_status_t st = mt_input_open(path, NULL, 0, &in, err);
    if (st != MT_OK)
        return st;
    size_t cap = 1 << 20, n = 0;
    char *b = malloc(cap);
    while (b) {
        if (cap - n < (1 << 16)) {
            char *nb = realloc(b, cap * 2);
            if (!nb) {
                free(b);
                b = NULL;
                break;
            }
            b = nb;
            cap *= 2;
        }
        size_t got = 0;
        st = mt_input_read(in, b + n, cap - n, &got, truncated, err);
        if (st != MT_OK || got == 0)
            break;
        n += got;
    }
    mt_input_close(in);
    if (!b)
        return mt_error_set(err, MT_ERR_NOMEM, "reading %s", path);
    if (st != MT_OK) {
        free(b);
        return st;
    }
    *buf = b;
    *len = n;
    return MT_OK;
}

mt_status_t mt_input_read_head(const char *path, char *buf, size_t cap, size_t *len, mt_error_t *err)
{
    *len = 0;
    mt_input_t *in = NULL;
    mt_status_t st = mt_input_open(path, NULL, 0, &in, err);
    if (st != MT_OK)
        return st;
    bool truncated = false;
    while (st == MT_OK && *len < cap) {
        size_t got = 0;
        st = mt_input_read(in, buf + *len, cap - *len, &got, &truncated, err);
        if (got == 0)
            break;
        *len += got;
    }
    mt_input_close(in);
    return st;
}
