/* libnccl-profiler-mergetrace.so: an NCCL profiler plugin that records, per
 * process, every collective and point-to-point task with its host enqueue
 * times and every kernel channel with its GPU start/stop stamps, as JSON
 * lines (docs/FORMATS.md, "NCCL plugin JSON lines").
 *
 * Callbacks come from application threads and NCCL's proxy threads and must
 * never block: startEvent/stopEvent/recordEventState use only atomics and
 * clock_gettime. Event handles are slots of one preallocated pool; a
 * finished event becomes a fixed-size record in the calling thread's own
 * ring (single producer, single consumer); so does each task's start and
 * its kernel's first channel start ("open" lines), so that after a hang the
 * file holds what was in flight. A writer thread (and finalize,
 * and the library destructor at exit) drains the rings to the file. A full
 * ring or an exhausted pool drops the record and counts it; the counts go
 * into the file. init and finalize may take a mutex and do I/O. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "nccl_abi.h"

#define MT_EXPORT __attribute__((visibility("default")))

/* The event types the plugin records; other mask bits are dropped. */
#define MT_SUPPORTED_MASK (MT_NCCL_EV_COLL | MT_NCCL_EV_P2P | MT_NCCL_EV_KERNEL_CH)
#define MT_MAX_RINGS 1024
#define MT_STR 24          /* func, datatype, algo, proto: NCCL's names are shorter */
#define MT_NAME 128        /* communicator names are cut to 127 bytes */
#define MT_FORMAT_VERSION 1

/* ---- records: what a ring holds ---- */

/* REC_OPEN: a task's start (of = REC_COLL / REC_P2P) or its kernel's first
 * channel start (of = REC_KCH), pushed when it happens: after a hang the
 * file says what each process had in flight, which finished events alone
 * cannot (a kernel that never ends is never pushed). */
enum rec_kind { REC_INIT = 1, REC_COLL, REC_P2P, REC_KCH, REC_OPEN };

typedef struct rec {
    uint8_t kind;
    uint8_t n_channels, n_warps, channel;
    uint8_t has_gpu_stop;     /* kch: KernelChStop arrived */
    uint8_t parent_kind;      /* kch: REC_COLL, REC_P2P, or 0 when unknown */
    uint8_t of;               /* open: REC_COLL, REC_P2P or REC_KCH */
    uint8_t kch_opened;       /* coll/p2p slot: a channel's open record was pushed (atomic builtins) */
    int32_t rank;             /* descriptor rank (init: rank from init) */
    int32_t a, b;             /* root / peer; init: nranks, nNodes */
    uint64_t comm;
    uint64_t id;              /* coll/p2p: own id; kch: the parent's id */
    uint64_t seq;             /* coll, and kch of a coll */
    uint64_t count;
    int64_t t[4];             /* see format_rec() */
    union {
        char s[4][MT_STR];    /* func, datatype, algo, proto */
        char name[MT_NAME];
    } u;
} rec_t;
_Static_assert(sizeof(rec_t) <= 256, "records stay small");

/* One thread's ring. head is written by the owner thread only, tail by the
 * drainer only (under g_io_lock). */
typedef struct ring {
    _Atomic uint64_t head;
    _Atomic uint64_t tail;
    _Atomic uint64_t dropped;
    uint64_t cap;
    long tid;
    rec_t recs[];
} ring_t;

/* ---- event handles: pool slots ---- */

enum { SLOT_FREE = 0, SLOT_LIVE = 1, SLOT_DONE = 2 };

typedef struct slot {
    _Atomic uint32_t state;
    rec_t rec;
} slot_t;

/* Per-communicator context; never freed (a late callback may still name
 * it), kept on a list for the end-of-process statistics. */
typedef struct comm_ctx {
    uint64_t hash;
    int rank, nranks, n_nodes;
    bool finalized;
    struct comm_ctx *next;
} comm_ctx_t;

/* ---- configuration (read once, at the first init) ---- */

static struct {
    char dir[PATH_MAX];
    int mask;
    uint64_t ring_cap;
    uint64_t pool_size;
    long flush_ms;
    long clock_ms;
} g_cfg;

static pthread_mutex_t g_init_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t g_io_lock = PTHREAD_MUTEX_INITIALIZER;
static bool g_ready;             /* under g_init_lock */
static int g_abi;                /* interface version of the first init */
static int g_live_comms;         /* under g_init_lock */
static comm_ctx_t *g_comms;      /* under g_init_lock */

static slot_t *g_pool;
static _Atomic uint64_t g_pool_cursor;
static _Atomic uint64_t g_next_id = 1;

static _Atomic(ring_t *) g_rings[MT_MAX_RINGS];
static _Atomic int g_nrings;
static _Thread_local ring_t *tl_ring;
static _Thread_local bool tl_no_ring;

/* Counters reported in the "stats" lines. */
static _Atomic uint64_t g_drop_pool, g_drop_no_ring, g_unhandled, g_bad_handle;
/* Unhandled events by type: index = the type's bit (0-14), 15 = any other
 * value. Real NCCL sends types the activation mask did not ask for
 * (NCCL 2.28.9 on an H200: four per ncclGroupEnd of a send/recv pair). */
#define MT_TYPE_SLOTS 16
static _Atomic uint64_t g_unhandled_type[MT_TYPE_SLOTS];
static const char *const k_type_name[MT_TYPE_SLOTS] = {
    "Group", "Coll", "P2p", "ProxyOp", "ProxyStep", "ProxyCtrl", "KernelCh", "NetPlugin",
    "GroupApi", "CollApi", "P2pApi", "KernelLaunch", "CeColl", "CeSync", "CeBatch", "other"};

/* Output (under g_io_lock). */
static FILE *g_out;
static char g_tmp_path[PATH_MAX + 64], g_final_path[PATH_MAX + 64];
static bool g_renamed, g_write_failed;
static pid_t g_owner_pid;        /* a forked child must not touch our file */
static int64_t g_last_clock_ns;

/* The writer thread. */
static pthread_t g_writer;
static bool g_writer_running;
static pthread_mutex_t g_writer_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_writer_cond = PTHREAD_COND_INITIALIZER;
static bool g_writer_stop;

static int64_t now_ns(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void copy_str(char *dst, size_t cap, const char *src)
{
    size_t n = 0;
    if (src)
        while (n + 1 < cap && src[n])
            n++;
    if (n)
        memcpy(dst, src, n);
    dst[n] = '\0';
}

/* ---- environment ---- */

/* Decimal or 0x-hex non-negative integer that fits max; false otherwise. */
static bool parse_uint(const char *s, uint64_t max, uint64_t *out)
{
    if (!s || !*s)
        return false;
    int base = 10;
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        base = 16;
        s += 2;
        if (!*s)
            return false;
    }
    uint64_t v = 0;
    for (; *s; s++) {
        int d;
        if (*s >= '0' && *s <= '9')
            d = *s - '0';
        else if (base == 16 && *s >= 'a' && *s <= 'f')
            d = *s - 'a' + 10;
        else if (base == 16 && *s >= 'A' && *s <= 'F')
            d = *s - 'A' + 10;
        else
            return false;
        if (v > (max - (uint64_t)d) / (uint64_t)base)
            return false;
        v = v * (uint64_t)base + (uint64_t)d;
    }
    *out = v;
    return true;
}

/* Reads one numeric variable; on a bad value names it in *bad. */
static bool env_uint(const char *name, uint64_t dflt, uint64_t min, uint64_t max,
                     uint64_t *out, const char **bad)
{
    const char *s = getenv(name);
    if (!s || !*s) {
        *out = dflt;
        return true;
    }
    if (!parse_uint(s, max, out) || *out < min) {
        *bad = name;
        return false;
    }
    return true;
}

static bool read_config(const char **bad)
{
    const char *dir = getenv("MERGETRACE_NCCL_DIR");
    if (!dir || !*dir)
        dir = "./nccl-trace";
    if (strlen(dir) >= sizeof g_cfg.dir) {
        *bad = "MERGETRACE_NCCL_DIR";
        return false;
    }
    strcpy(g_cfg.dir, dir);
    uint64_t v;
    if (!env_uint("MERGETRACE_NCCL_MASK", MT_NCCL_EV_COLL | MT_NCCL_EV_P2P | MT_NCCL_EV_KERNEL_CH,
                  0, INT32_MAX, &v, bad))
        return false;
    g_cfg.mask = (int)v & MT_SUPPORTED_MASK;
    if (!env_uint("MERGETRACE_NCCL_RING", 8192, 4, (uint64_t)1 << 24, &g_cfg.ring_cap, bad))
        return false;
    if (!env_uint("MERGETRACE_NCCL_POOL", 8192, 4, (uint64_t)1 << 24, &g_cfg.pool_size, bad))
        return false;
    if (!env_uint("MERGETRACE_NCCL_FLUSH_MS", 100, 0, 3600000, &v, bad))
        return false;
    g_cfg.flush_ms = (long)v;
    if (!env_uint("MERGETRACE_NCCL_CLOCK_MS", 1000, 0, 3600000, &v, bad))
        return false;
    g_cfg.clock_ms = (long)v;
    return true;
}

/* ---- rings ---- */

static ring_t *my_ring(void)
{
    if (tl_ring)
        return tl_ring;
    if (tl_no_ring)
        return NULL;
    int idx = atomic_fetch_add_explicit(&g_nrings, 1, memory_order_relaxed);
    ring_t *r = NULL;
    if (idx < MT_MAX_RINGS)
        r = calloc(1, sizeof *r + g_cfg.ring_cap * sizeof(rec_t));
    if (!r) {
        tl_no_ring = true;
        return NULL;
    }
    r->cap = g_cfg.ring_cap;
    r->tid = (long)syscall(SYS_gettid);
    atomic_store_explicit(&g_rings[idx], r, memory_order_release);
    tl_ring = r;
    return r;
}

/* Appends a copy of *rec to this thread's ring; a full ring (or no ring)
 * counts the drop. Never waits. */
static void push(const rec_t *rec)
{
    ring_t *r = my_ring();
    if (!r) {
        atomic_fetch_add_explicit(&g_drop_no_ring, 1, memory_order_relaxed);
        return;
    }
    uint64_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
    uint64_t t = atomic_load_explicit(&r->tail, memory_order_acquire);
    if (h - t >= r->cap) {
        atomic_fetch_add_explicit(&r->dropped, 1, memory_order_relaxed);
        return;
    }
    r->recs[h % r->cap] = *rec;
    atomic_store_explicit(&r->head, h + 1, memory_order_release);
}

/* ---- pool ---- */

static slot_t *slot_get(void)
{
    /* Round robin: a finished slot is reused only after pool_size newer
     * events, so a kernel channel that starts after its collective stopped
     * still finds the collective's fields in place. */
    for (int tries = 0; tries < 64; tries++) {
        uint64_t i = atomic_fetch_add_explicit(&g_pool_cursor, 1, memory_order_relaxed);
        slot_t *s = &g_pool[i % g_cfg.pool_size];
        uint32_t st = atomic_load_explicit(&s->state, memory_order_relaxed);
        if (st != SLOT_LIVE &&
            atomic_compare_exchange_strong_explicit(&s->state, &st, SLOT_LIVE,
                                                    memory_order_acquire, memory_order_relaxed))
            return s;
    }
    atomic_fetch_add_explicit(&g_drop_pool, 1, memory_order_relaxed);
    return NULL;
}

/* A handle NCCL gives back is one of our slots, or it is ignored. */
static slot_t *slot_of(const void *h)
{
    if (!h || !g_pool)
        return NULL;
    uintptr_t p = (uintptr_t)h, base = (uintptr_t)g_pool;
    if (p < base || p >= base + g_cfg.pool_size * sizeof(slot_t) || (p - base) % sizeof(slot_t))
        return NULL;
    return &g_pool[(p - base) / sizeof(slot_t)];
}

/* ---- callbacks ---- */

typedef struct task_in {
    int type;
    const void *parent;
    int rank;
    const mt_nccl_coll_t *coll;
    const mt_nccl_p2p_t *p2p;
    const mt_nccl_kernel_ch_t *kch;
} task_in_t;

static int start_common(void *context, void **handle, const task_in_t *in)
{
    *handle = NULL;
    const comm_ctx_t *ctx = context;
    if (!ctx)
        return MT_NCCL_SUCCESS;
    if (in->type != MT_NCCL_EV_COLL && in->type != MT_NCCL_EV_P2P &&
        in->type != MT_NCCL_EV_KERNEL_CH) {
        atomic_fetch_add_explicit(&g_unhandled, 1, memory_order_relaxed);
        unsigned t = (unsigned)in->type, bit = MT_TYPE_SLOTS - 1;
        if (t && !(t & (t - 1)) && __builtin_ctz(t) < MT_TYPE_SLOTS - 1)
            bit = (unsigned)__builtin_ctz(t);
        atomic_fetch_add_explicit(&g_unhandled_type[bit], 1, memory_order_relaxed);
        return MT_NCCL_SUCCESS;
    }
    slot_t *s = slot_get();
    if (!s)
        return MT_NCCL_SUCCESS;
    rec_t *r = &s->rec;
    memset(r, 0, sizeof *r);
    r->comm = ctx->hash;
    r->rank = in->rank;
    if (in->type == MT_NCCL_EV_COLL) {
        const mt_nccl_coll_t *c = in->coll;
        r->kind = REC_COLL;
        r->id = atomic_fetch_add_explicit(&g_next_id, 1, memory_order_relaxed);
        r->seq = c->seq_number;
        r->count = c->count;
        r->a = c->root;
        r->n_channels = c->n_channels;
        r->n_warps = c->n_warps;
        copy_str(r->u.s[0], MT_STR, c->func);
        copy_str(r->u.s[1], MT_STR, c->datatype);
        copy_str(r->u.s[2], MT_STR, c->algo);
        copy_str(r->u.s[3], MT_STR, c->proto);
        r->t[0] = now_ns(CLOCK_REALTIME);
    } else if (in->type == MT_NCCL_EV_P2P) {
        const mt_nccl_p2p_t *p = in->p2p;
        r->kind = REC_P2P;
        r->id = atomic_fetch_add_explicit(&g_next_id, 1, memory_order_relaxed);
        r->count = p->count;
        r->a = p->peer;
        r->n_channels = p->n_channels;
        copy_str(r->u.s[0], MT_STR, p->func);
        copy_str(r->u.s[1], MT_STR, p->datatype);
        r->t[0] = now_ns(CLOCK_REALTIME);
    }
    if (r->kind == REC_COLL || r->kind == REC_P2P) {
        rec_t o = *r;
        o.of = r->kind;
        o.kind = REC_OPEN;
        push(&o);
    } else {
        r->kind = REC_KCH;
        r->channel = in->kch->channel_id;
        r->t[0] = (int64_t)in->kch->gpu_start;
        r->t[2] = now_ns(CLOCK_REALTIME);
        /* The parent's identity never changes after its start, so reading
         * it here is safe even when the parent has already stopped. */
        slot_t *ps = slot_of(in->parent);
        if (ps && (ps->rec.kind == REC_COLL || ps->rec.kind == REC_P2P)) {
            r->parent_kind = ps->rec.kind;
            r->id = ps->rec.id;
            r->seq = ps->rec.seq;
            memcpy(r->u.s[0], ps->rec.u.s[0], MT_STR);
            /* the task's first channel to start says its kernel runs: one
             * open record per task, not per channel */
            if (!__atomic_exchange_n(&ps->rec.kch_opened, 1, __ATOMIC_RELAXED)) {
                rec_t o = *r;
                o.of = REC_KCH;
                o.kind = REC_OPEN;
                push(&o);
            }
        }
    }
    *handle = s;
    return MT_NCCL_SUCCESS;
}

static int start_v5(void *context, void **handle, mt_nccl_descr_v5_t *d)
{
    if (!handle)
        return MT_NCCL_SUCCESS;
    *handle = NULL;
    if (!d)
        return MT_NCCL_SUCCESS;
    task_in_t in = {.type = (int)(d->type > INT32_MAX ? 0 : d->type), .parent = d->parent_obj,
                    .rank = d->rank, .coll = &d->as.coll.c, .p2p = &d->as.p2p.p,
                    .kch = &d->as.kernel_ch};
    return start_common(context, handle, &in);
}

static int start_v4(void *context, void **handle, mt_nccl_descr_v4_t *d)
{
    if (!handle)
        return MT_NCCL_SUCCESS;
    *handle = NULL;
    if (!d)
        return MT_NCCL_SUCCESS;
    task_in_t in = {.type = d->type, .parent = d->parent_obj, .rank = d->rank,
                    .coll = &d->as.coll, .p2p = &d->as.p2p, .kch = &d->as.kernel_ch};
    return start_common(context, handle, &in);
}

static int stop_event(void *handle)
{
    slot_t *s = slot_of(handle);
    if (!s) {
        if (handle)
            atomic_fetch_add_explicit(&g_bad_handle, 1, memory_order_relaxed);
        return MT_NCCL_SUCCESS;
    }
    if (atomic_load_explicit(&s->state, memory_order_relaxed) != SLOT_LIVE)
        return MT_NCCL_SUCCESS; /* stopped twice */
    rec_t *r = &s->rec;
    if (r->kind == REC_COLL || r->kind == REC_P2P)
        r->t[1] = now_ns(CLOCK_REALTIME);
    push(r);
    atomic_store_explicit(&s->state, SLOT_DONE, memory_order_release);
    return MT_NCCL_SUCCESS;
}

static int record_state(void *handle, int state, mt_nccl_state_args_t *args)
{
    slot_t *s = slot_of(handle);
    if (!s || state != MT_NCCL_STATE_KERNEL_CH_STOP || !args)
        return MT_NCCL_SUCCESS;
    if (atomic_load_explicit(&s->state, memory_order_relaxed) != SLOT_LIVE ||
        s->rec.kind != REC_KCH)
        return MT_NCCL_SUCCESS;
    s->rec.t[1] = (int64_t)args->kernel_ch_gpu_stop;
    s->rec.t[3] = now_ns(CLOCK_REALTIME);
    s->rec.has_gpu_stop = 1;
    return MT_NCCL_SUCCESS;
}

/* ---- output ---- */

/* Length of the valid UTF-8 sequence at p (1-4), or 0 if it is not one
 * (overlong forms and surrogates included). */
static int utf8_len(const unsigned char *p)
{
    unsigned c = p[0];
    int n;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF)
        n = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0)
            lo = 0xA0;
        if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0)
            lo = 0x90;
        if (c == 0xF4)
            hi = 0x8F;
    } else
        return 0;
    if (p[1] < lo || p[1] > hi)
        return 0;
    for (int i = 2; i < n; i++)
        if (p[i] < 0x80 || p[i] > 0xBF)
            return 0;
    return n;
}

/* Writes s as a JSON string: valid UTF-8 is kept, a byte that is not
 * part of one is written as \u00XX (its value), so every line stays
 * strict JSON. */
static void put_json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        int n;
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(f, "\\u%04x", *p);
        else if (*p < 0x80)
            fputc(*p, f);
        else if ((n = utf8_len(p)) > 0) {
            fwrite(p, 1, (size_t)n, f);
            p += n;
            continue;
        } else
            fprintf(f, "\\u%04x", *p);
        p++;
    }
    fputc('"', f);
}

static void format_rec(FILE *f, const rec_t *r, long tid)
{
    switch (r->kind) {
    case REC_INIT:
        fprintf(f, "{\"type\":\"init\",\"comm\":\"%016" PRIx64 "\",\"name\":", r->comm);
        put_json_str(f, r->u.name);
        fprintf(f,
                ",\"rank\":%d,\"nranks\":%d,\"nNodes\":%d,\"realtime_ns\":%" PRId64
                ",\"monotonic_ns\":%" PRId64 ",\"tid\":%ld}\n",
                r->rank, r->a, r->b, r->t[0], r->t[1], tid);
        break;
    case REC_COLL:
        fprintf(f, "{\"type\":\"coll\",\"comm\":\"%016" PRIx64 "\",\"rank\":%d,\"id\":%" PRIu64
                   ",\"func\":", r->comm, r->rank, r->id);
        put_json_str(f, r->u.s[0]);
        fprintf(f, ",\"seq\":%" PRIu64 ",\"count\":%" PRIu64 ",\"datatype\":", r->seq, r->count);
        put_json_str(f, r->u.s[1]);
        fprintf(f, ",\"root\":%d,\"algo\":", r->a);
        put_json_str(f, r->u.s[2]);
        fputs(",\"proto\":", f);
        put_json_str(f, r->u.s[3]);
        fprintf(f,
                ",\"nChannels\":%u,\"nWarps\":%u,\"host_start_ns\":%" PRId64
                ",\"host_stop_ns\":%" PRId64 ",\"tid\":%ld}\n",
                r->n_channels, r->n_warps, r->t[0], r->t[1], tid);
        break;
    case REC_P2P:
        fprintf(f, "{\"type\":\"p2p\",\"comm\":\"%016" PRIx64 "\",\"rank\":%d,\"id\":%" PRIu64
                   ",\"func\":", r->comm, r->rank, r->id);
        put_json_str(f, r->u.s[0]);
        fprintf(f, ",\"count\":%" PRIu64 ",\"datatype\":", r->count);
        put_json_str(f, r->u.s[1]);
        fprintf(f,
                ",\"peer\":%d,\"nChannels\":%u,\"host_start_ns\":%" PRId64
                ",\"host_stop_ns\":%" PRId64 ",\"tid\":%ld}\n",
                r->a, r->n_channels, r->t[0], r->t[1], tid);
        break;
    case REC_KCH:
        fprintf(f, "{\"type\":\"kch\",\"comm\":\"%016" PRIx64 "\",\"rank\":%d,\"parent\":%" PRIu64
                   ",\"parent_type\":",
                r->comm, r->rank, r->id);
        if (r->parent_kind == REC_COLL) {
            fputs("\"coll\",\"func\":", f);
            put_json_str(f, r->u.s[0]);
            fprintf(f, ",\"seq\":%" PRIu64, r->seq);
        } else if (r->parent_kind == REC_P2P) {
            fputs("\"p2p\",\"func\":", f);
            put_json_str(f, r->u.s[0]);
        } else {
            fputs("null", f);
        }
        fprintf(f, ",\"channel\":%u,\"gpu_start_ns\":%" PRId64 ",\"gpu_start_seen_ns\":%" PRId64,
                r->channel, r->t[0], r->t[2]);
        if (r->has_gpu_stop)
            fprintf(f, ",\"gpu_stop_ns\":%" PRId64 ",\"gpu_stop_seen_ns\":%" PRId64, r->t[1], r->t[3]);
        else
            fputs(",\"gpu_stop_ns\":null,\"gpu_stop_seen_ns\":null", f);
        fprintf(f, ",\"tid\":%ld}\n", tid);
        break;
    case REC_OPEN:
        fprintf(f, "{\"type\":\"open\",\"of\":\"%s\",\"comm\":\"%016" PRIx64 "\",\"rank\":%d,",
                r->of == REC_COLL ? "coll" : r->of == REC_P2P ? "p2p" : "kch", r->comm, r->rank);
        if (r->of == REC_KCH)
            fprintf(f, "\"parent\":%" PRIu64 ",\"parent_type\":\"%s\",\"func\":", r->id,
                    r->parent_kind == REC_COLL ? "coll" : "p2p");
        else
            fprintf(f, "\"id\":%" PRIu64 ",\"func\":", r->id);
        put_json_str(f, r->u.s[0]);
        if (r->of == REC_COLL || (r->of == REC_KCH && r->parent_kind == REC_COLL))
            fprintf(f, ",\"seq\":%" PRIu64, r->seq);
        if (r->of == REC_KCH) {
            fprintf(f, ",\"channel\":%u,\"gpu_start_ns\":%" PRId64 ",\"gpu_start_seen_ns\":%" PRId64, r->channel,
                    r->t[0], r->t[2]);
        } else {
            fprintf(f, ",\"count\":%" PRIu64 ",\"datatype\":", r->count);
            put_json_str(f, r->u.s[1]);
            if (r->of == REC_P2P)
                fprintf(f, ",\"peer\":%d", r->a);
            fprintf(f, ",\"host_start_ns\":%" PRId64, r->t[0]);
        }
        fprintf(f, ",\"tid\":%ld}\n", tid);
        break;
    default:
        break;
    }
}

static void put_clock(FILE *f)
{
    int64_t rt = now_ns(CLOCK_REALTIME), mono = now_ns(CLOCK_MONOTONIC);
    fprintf(f, "{\"type\":\"clock\",\"realtime_ns\":%" PRId64 ",\"monotonic_ns\":%" PRId64 "}\n",
            rt, mono);
    g_last_clock_ns = mono;
}

/* Counts live slots (events started and not stopped). */
static uint64_t count_live(void)
{
    uint64_t n = 0;
    for (uint64_t i = 0; g_pool && i < g_cfg.pool_size; i++)
        n += atomic_load_explicit(&g_pool[i].state, memory_order_relaxed) == SLOT_LIVE;
    return n;
}

/* Drains every ring to the file and writes a stats line; at_end also
 * counts events still open and renames the file into place. Caller holds
 * g_io_lock. */
static void drain_locked(const char *why, bool at_end)
{
    if (!g_out || getpid() != g_owner_pid)
        return;
    uint64_t ring_drops = 0, records = 0;
    int n = atomic_load_explicit(&g_nrings, memory_order_acquire);
    if (n > MT_MAX_RINGS)
        n = MT_MAX_RINGS;
    for (int i = 0; i < n; i++) {
        ring_t *r = atomic_load_explicit(&g_rings[i], memory_order_acquire);
        if (!r)
            continue; /* being created */
        uint64_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
        uint64_t h = atomic_load_explicit(&r->head, memory_order_acquire);
        for (; t < h; t++) {
            format_rec(g_out, &r->recs[t % r->cap], r->tid);
            records++;
        }
        atomic_store_explicit(&r->tail, t, memory_order_release);
        ring_drops += atomic_load_explicit(&r->dropped, memory_order_relaxed);
    }
    int64_t mono = now_ns(CLOCK_MONOTONIC);
    bool clock_due = g_cfg.clock_ms > 0 && mono - g_last_clock_ns >= g_cfg.clock_ms * 1000000LL;
    bool at_finalize = strcmp(why, "finalize") == 0;
    if (clock_due || at_end || at_finalize)
        put_clock(g_out);
    if (records || clock_due || at_end || at_finalize) {
        fprintf(g_out,
                "{\"type\":\"stats\",\"why\":\"%s\",\"dropped_ring_full\":%" PRIu64
                ",\"dropped_no_ring\":%" PRIu64 ",\"dropped_pool_full\":%" PRIu64
                ",\"unhandled_events\":%" PRIu64 ",\"unknown_handles\":%" PRIu64
                ",\"threads\":%d",
                why, ring_drops, atomic_load(&g_drop_no_ring), atomic_load(&g_drop_pool),
                atomic_load(&g_unhandled), atomic_load(&g_bad_handle), n);
        for (int i = 0; i < MT_TYPE_SLOTS; i++) {
            uint64_t c = atomic_load(&g_unhandled_type[i]);
            if (c)
                fprintf(g_out, ",\"unhandled_%s\":%" PRIu64, k_type_name[i], c);
        }
        if (at_end)
            fprintf(g_out, ",\"open_events\":%" PRIu64, count_live());
        fputs("}\n", g_out);
    }
    if (fflush(g_out) != 0)
        g_write_failed = true;
    if (at_end && !g_renamed && !g_write_failed) {
        /* The fd stays open: later records (a communicator created after
         * this point) are appended to the renamed file. */
        if (rename(g_tmp_path, g_final_path) == 0)
            g_renamed = true;
    }
}

static void *writer_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&g_writer_lock);
    while (!g_writer_stop) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += g_cfg.flush_ms / 1000;
        until.tv_nsec += (g_cfg.flush_ms % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&g_writer_cond, &g_writer_lock, &until);
        if (g_writer_stop)
            break;
        pthread_mutex_unlock(&g_writer_lock);
        pthread_mutex_lock(&g_io_lock);
        drain_locked("periodic", false);
        pthread_mutex_unlock(&g_io_lock);
        pthread_mutex_lock(&g_writer_lock);
    }
    pthread_mutex_unlock(&g_writer_lock);
    return NULL;
}

static bool make_dirs(const char *dir)
{
    char buf[PATH_MAX];
    size_t n = strlen(dir);
    if (n >= sizeof buf)
        return false;
    memcpy(buf, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] == '/' || buf[i] == '\0') {
            char c = buf[i];
            buf[i] = '\0';
            if (mkdir(buf, 0777) != 0 && errno != EEXIST)
                return false;
            buf[i] = c;
        }
    }
    struct stat st;
    return stat(dir, &st) == 0 && S_ISDIR(st.st_mode);
}

/* First init of the process: configuration, pool, output file, writer.
 * Caller holds g_init_lock. Returns an NCCL status; *why says what failed. */
static int start_process(const char **why)
{
    const char *bad = NULL;
    if (!read_config(&bad)) {
        *why = bad;
        return MT_NCCL_INVALID_USAGE;
    }
    g_pool = calloc(g_cfg.pool_size, sizeof *g_pool);
    if (!g_pool) {
        *why = "out of memory for the event pool";
        return MT_NCCL_SYSTEM_ERROR;
    }
    char host[256] = "unknown-host";
    gethostname(host, sizeof host - 1);
    host[sizeof host - 1] = '\0';
    for (char *p = host; *p; p++)
        if (*p == '/')
            *p = '_';
    g_owner_pid = getpid();
    long pid = (long)g_owner_pid;
    int nf = snprintf(g_final_path, sizeof g_final_path, "%s/%s-pid%ld.jsonl", g_cfg.dir, host, pid);
    int nt = snprintf(g_tmp_path, sizeof g_tmp_path, "%s/.%s-pid%ld.jsonl.tmp", g_cfg.dir, host, pid);
    if (nf < 0 || nt < 0 || (size_t)nf >= sizeof g_final_path || (size_t)nt >= sizeof g_tmp_path) {
        *why = "MERGETRACE_NCCL_DIR is too long";
        goto fail;
    }
    if (!make_dirs(g_cfg.dir)) {
        *why = "MERGETRACE_NCCL_DIR cannot be created";
        goto fail;
    }
    int fd = open(g_tmp_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0 || !(g_out = fdopen(fd, "w"))) {
        if (fd >= 0)
            close(fd);
        *why = "cannot create the output file in MERGETRACE_NCCL_DIR";
        goto fail;
    }
    fprintf(g_out, "{\"type\":\"process\",\"format\":\"mergetrace-nccl\",\"version\":%d,\"host\":",
            MT_FORMAT_VERSION);
    put_json_str(g_out, host);
    fprintf(g_out, ",\"pid\":%ld,\"abi\":%d,\"mask\":%d}\n", pid, g_abi, g_cfg.mask);
    put_clock(g_out);
    fflush(g_out);
    if (g_cfg.flush_ms > 0) {
        /* The writer takes no signals meant for the application. */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        if (pthread_create(&g_writer, NULL, writer_main, NULL) == 0) {
            g_writer_running = true;
            pthread_setname_np(g_writer, "mt-nccl-writer");
        }
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    return MT_NCCL_SUCCESS;
fail:
    free(g_pool);
    g_pool = NULL;
    return MT_NCCL_SYSTEM_ERROR;
}

static int init_common(int abi, void **context, uint64_t comm_hash, int *mask,
                       const char *name, int n_nodes, int nranks, int rank,
                       mt_nccl_logger_t logfn)
{
    if (!context || !mask)
        return MT_NCCL_INVALID_USAGE;
    *context = NULL;
    pthread_mutex_lock(&g_init_lock);
    if (!g_ready) {
        g_abi = abi;
        const char *why = NULL;
        int st = start_process(&why);
        if (st != MT_NCCL_SUCCESS) {
            pthread_mutex_unlock(&g_init_lock);
            if (logfn)
                logfn(2 /* WARN */, ~0UL, __FILE__, __LINE__,
                      "mergetrace profiler disabled: %s", why ? why : "?");
            return st;
        }
        g_ready = true;
    }
    comm_ctx_t *ctx = calloc(1, sizeof *ctx);
    if (!ctx) {
        pthread_mutex_unlock(&g_init_lock);
        return MT_NCCL_SYSTEM_ERROR;
    }
    ctx->hash = comm_hash;
    ctx->rank = rank;
    ctx->nranks = nranks;
    ctx->n_nodes = n_nodes;
    ctx->next = g_comms;
    g_comms = ctx;
    g_live_comms++;
    pthread_mutex_unlock(&g_init_lock);

    rec_t r = {.kind = REC_INIT, .rank = rank, .a = nranks, .b = n_nodes, .comm = comm_hash};
    copy_str(r.u.name, MT_NAME, name);
    r.t[0] = now_ns(CLOCK_REALTIME);
    r.t[1] = now_ns(CLOCK_MONOTONIC);
    push(&r);
    *mask = g_cfg.mask;
    *context = ctx;
    return MT_NCCL_SUCCESS;
}

static int init_v5(void **context, uint64_t comm_id, int *mask, const char *name, int n_nodes,
                   int nranks, int rank, mt_nccl_logger_t logfn)
{
    return init_common(5, context, comm_id, mask, name, n_nodes, nranks, rank, logfn);
}

static int init_v6(void **context, uint64_t comm_id, int *mask, const char *name, int n_nodes,
                   int nranks, int rank, mt_nccl_logger_t logfn)
{
    return init_common(6, context, comm_id, mask, name, n_nodes, nranks, rank, logfn);
}

static int init_v4(void **context, int *mask, const char *name, uint64_t comm_hash, int n_nodes,
                   int nranks, int rank, mt_nccl_logger_t logfn)
{
    return init_common(4, context, comm_hash, mask, name, n_nodes, nranks, rank, logfn);
}

static int finalize(void *context)
{
    comm_ctx_t *ctx = context;
    if (!ctx)
        return MT_NCCL_SUCCESS;
    pthread_mutex_lock(&g_init_lock);
    bool last = false;
    if (!ctx->finalized) {
        ctx->finalized = true;
        last = --g_live_comms == 0;
    }
    pthread_mutex_unlock(&g_init_lock);
    pthread_mutex_lock(&g_io_lock);
    drain_locked("finalize", last);
    pthread_mutex_unlock(&g_io_lock);
    return MT_NCCL_SUCCESS;
}

/* At exit (or dlclose): stop the writer, drain what is left, put the file
 * in place. Memory is not freed: another thread may still call in. */
__attribute__((destructor)) static void at_exit_flush(void)
{
    /* A child forked from the job (a data-loader worker) has no writer
     * thread and shares our file descriptor: leave both alone. */
    if (g_out && getpid() != g_owner_pid)
        return;
    if (g_writer_running) {
        pthread_mutex_lock(&g_writer_lock);
        g_writer_stop = true;
        pthread_cond_signal(&g_writer_cond);
        pthread_mutex_unlock(&g_writer_lock);
        pthread_join(g_writer, NULL);
        g_writer_running = false;
    }
    pthread_mutex_lock(&g_io_lock);
    drain_locked("exit", true);
    if (g_out) {
        fclose(g_out);
        g_out = NULL;
    }
    pthread_mutex_unlock(&g_io_lock);
}

/* ---- the exported tables (the only exported symbols) ---- */

MT_EXPORT mt_nccl_profiler_v5_t ncclProfiler_v6 = {
    .name = "mergetrace",
    .init = init_v6,
    .start_event = start_v5,
    .stop_event = stop_event,
    .record_event_state = record_state,
    .finalize = finalize,
};

MT_EXPORT mt_nccl_profiler_v5_t ncclProfiler_v5 = {
    .name = "mergetrace",
    .init = init_v5,
    .start_event = start_v5,
    .stop_event = stop_event,
    .record_event_state = record_state,
    .finalize = finalize,
};

MT_EXPORT mt_nccl_profiler_v4_t ncclProfiler_v4 = {
    .name = "mergetrace",
    .init = init_v4,
    .start_event = start_v4,
    .stop_event = stop_event,
    .record_event_state = record_state,
    .finalize = finalize,
};
