/* Reader of the Chrome-trace files that NCCL's example profiler plugin
 * (ext-profiler/example in NCCL's sources) writes at finalize, one per
 * process and communicator: a JSON array of "b"/"e" events, one per line,
 * closed by "{}]". Collective and P2P tasks ("cat" COLL / P2P) enclose
 * their kernel channels ("cat" GPU, whose "b" event carries the channel's
 * GPU start and stop stamps); API, group, proxy and network events are
 * read past. The text is not always JSON: some versions print datatypes
 * and stream pointers unquoted, and API events may have a zero "ts", so
 * values are taken as bare tokens where a string is expected. The result
 * is the same mt_nccl_file_t as the mergetrace plugin's reader gives, with
 * GPU times on the GPU's own clock (there is no host anchor to move them
 * to: "ts" counts microseconds from the plugin's start on CLOCK_MONOTONIC).
 * docs/FORMATS.md "NCCL example profiler traces". */
#include "mergetrace/nccl_input.h"
#include "base/numparse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl/nccl_file.h"
#include "mergetrace/classify.h"
#include "mergetrace/loader.h"
#include "mergetrace/buf.h"
#include "nccl/probe.h"
#include "base/errpos.h"

#define MAX_DEPTH 4

typedef enum cat {
    CAT_NONE = 0,
    CAT_COLL,
    CAT_P2P,
    CAT_GPU,
    CAT_KNOWN,   /* an event kind of the plugin that carries nothing used here */
    CAT_UNKNOWN,
} cat_t;

/* One event as read: the fields mergetrace uses. Strings point into the
 * buffer (not terminated). */
typedef struct ev {
    const char *at;               /* the '{' */
    cat_t cat;
    char ph;
    const char *name;
    size_t name_len;
    bool has_pid, has_ts, has_seq, has_comm, has_rank, has_count, has_peer, has_gstart, has_gstop, has_nch;
    int64_t pid, ts_ns, seq, rank, count, peer, nch;
    uint64_t comm, gstart, gstop;
    const char *dtype, *algo, *proto;
    size_t dtype_len, algo_len, proto_len;
    bool empty;                   /* {} */
} ev_t;

typedef struct ctx {
    const char *path, *buf, *p, *end;
    mt_error_t *err;
    mt_status_t st;
} ctx_t;

static mt_status_t fail(ctx_t *x, const char *at, mt_status_t code, const char *what)
{
    if (x->st != MT_OK)
        return x->st;
    mt_error_set(x->err, code, "%s", what);
    mt_errpos_in(x->err, x->path ? x->path : "", x->buf, (size_t)(at - x->buf));
    x->st = code;
    return code;
}

static void skip_ws(ctx_t *x)
{
    while (x->p < x->end && (*x->p == ' ' || *x->p == '\t' || *x->p == '\r' || *x->p == '\n'))
        x->p++;
}

static bool is(const char *s, size_t n, const char *lit)
{
    return strlen(lit) == n && memcmp(s, lit, n) == 0;
}

static cat_t cat_of(const char *s, size_t n)
{
    if (is(s, n, "COLL"))
        return CAT_COLL;
    if (is(s, n, "P2P"))
        return CAT_P2P;
    if (is(s, n, "GPU"))
        return CAT_GPU;
    static const char *const known[] = {"GROUP_API", "COLL_API", "P2P_API", "KERNEL_LAUNCH", "GROUP",  "PROXY",
                                        "NET",       "NET_IB",   "NET_SOCK", "CE_COLL",      "CE_SYNC", "CE_BATCH"};
    for (size_t i = 0; i < sizeof known / sizeof *known; i++)
        if (is(s, n, known[i]))
            return CAT_KNOWN;
    return CAT_UNKNOWN;
}

/* A string's content: x->p at the opening quote; on return past the
 * closing one. Escapes are kept as written (only names and labels are
 * strings here). */
static mt_status_t read_string(ctx_t *x, const char **s, size_t *n)
{
    const char *q = ++x->p;
    while (q < x->end && *q != '"') {
        if (*q == '\\')
            q++;
        else if (*q == '\n')
            return fail(x, q, MT_ERR_SYNTAX, "end of line inside a string");
        q++;
    }
    if (q >= x->end)
        return fail(x, x->p - 1, MT_ERR_TRUNCATED, "the file ends inside a string");
    *s = x->p;
    *n = (size_t)(q - x->p);
    x->p = q + 1;
    return MT_OK;
}

/* A value written without quotes: a number, or one of the plugin's
 * unquoted labels (ncclFloat32, 0x7f..., (nil), nan). Up to the next ',',
 * '}', ']' or end of line; trailing blanks dropped. */
static mt_status_t read_bare(ctx_t *x, const char **s, size_t *n)
{
    const char *q = x->p;
    while (q < x->end && *q != ',' && *q != '}' && *q != ']' && *q != '\n' && *q != '"' && *q != '{' && *q != '[')
        q++;
    const char *e = q;
    while (e > x->p && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
        e--;
    if (e == x->p) {
        if (q >= x->end)
            return fail(x, x->p, MT_ERR_TRUNCATED, "the file ends where a value was expected");
        return fail(x, x->p, MT_ERR_SYNTAX, "expected a value");
    }
    *s = x->p;
    *n = (size_t)(e - x->p);
    x->p = q;
    return MT_OK;
}

/* Skip a bracketed value (not written by the plugin, tolerated). */
static mt_status_t skip_nested(ctx_t *x)
{
    int depth = 0;
    const char *start = x->p;
    while (x->p < x->end) {
        char c = *x->p;
        if (c == '"') {
            const char *s;
            size_t n;
            if (read_string(x, &s, &n) != MT_OK)
                return x->st;
            continue;
        }
        x->p++;
        if (c == '[' || c == '{') {
            if (++depth > 64)
                return fail(x, x->p - 1, MT_ERR_LIMIT, "values nested more than 64 levels");
        } else if ((c == ']' || c == '}') && --depth == 0) {
            return MT_OK;
        }
    }
    return fail(x, start, MT_ERR_TRUNCATED, "the file ends inside a value");
}

static mt_status_t num_i64(ctx_t *x, const char *s, size_t n, const char *key, int64_t *v)
{
    if (mt_parse_int64(s, n, v) == MT_OK)
        return MT_OK;
    char m[96];
    snprintf(m, sizeof m, "\"%s\" is not an integer", key);
    return fail(x, s, MT_ERR_FORMAT, m);
}

static mt_status_t num_u64(ctx_t *x, const char *s, size_t n, const char *key, uint64_t *v)
{
    if (mt_parse_uint64(s, n, v) == MT_OK)
        return MT_OK;
    char m[96];
    snprintf(m, sizeof m, "\"%s\" is not an unsigned integer", key);
    return fail(x, s, MT_ERR_FORMAT, m);
}

/* Take one key's value into e. depth 0: the event; 1: its "args". */
static mt_status_t take(ctx_t *x, ev_t *e, int depth, const char *k, size_t kn, const char *v, size_t vn, bool quoted)
{
    if (depth == 0) {
        if (is(k, kn, "name")) {
            e->name = v;
            e->name_len = vn;
        } else if (is(k, kn, "cat")) {
            e->cat = cat_of(v, vn);
        } else if (is(k, kn, "ph")) {
            e->ph = vn == 1 ? v[0] : '?';
        } else if (is(k, kn, "pid") && !quoted) {
            e->has_pid = mt_parse_int64(v, vn, &e->pid) == MT_OK;
        } else if (is(k, kn, "ts") && !quoted) {
            /* "nan" or garbage: the event has no host time (not used to align) */
            e->has_ts = mt_parse_us_to_ns(v, vn, &e->ts_ns) == MT_OK;
        }
        return MT_OK;
    }
    if (depth != 1)
        return MT_OK;
    if (is(k, kn, "SeqNum")) {
        e->has_seq = true;
        return num_i64(x, v, vn, "SeqNum", &e->seq);
    }
    if (is(k, kn, "CommHash")) {
        e->has_comm = true;
        return num_u64(x, v, vn, "CommHash", &e->comm);
    }
    if (is(k, kn, "Rank")) {
        e->has_rank = true;
        return num_i64(x, v, vn, "Rank", &e->rank);
    }
    if (is(k, kn, "Count")) {
        e->has_count = mt_parse_int64(v, vn, &e->count) == MT_OK;
    } else if (is(k, kn, "Peer")) {
        e->has_peer = mt_parse_int64(v, vn, &e->peer) == MT_OK;
    } else if (is(k, kn, "nChannels")) {
        e->has_nch = mt_parse_int64(v, vn, &e->nch) == MT_OK;
    } else if (is(k, kn, "StartGpuClk")) {
        e->has_gstart = true;
        return num_u64(x, v, vn, "StartGpuClk", &e->gstart);
    } else if (is(k, kn, "StopGpuClk")) {
        e->has_gstop = true;
        return num_u64(x, v, vn, "StopGpuClk", &e->gstop);
    } else if (is(k, kn, "Datatype")) {
        e->dtype = v;
        e->dtype_len = vn;
    } else if (is(k, kn, "Algorithm")) {
        e->algo = v;
        e->algo_len = vn;
    } else if (is(k, kn, "Protocol")) {
        e->proto = v;
        e->proto_len = vn;
    }
    return MT_OK;
}

/* An object: x->p at '{'. depth 0 is the event; is_args: this object is
 * the event's "args". Deeper objects than MAX_DEPTH are skipped without
 * recursion. */
static mt_status_t read_object(ctx_t *x, ev_t *e, int depth, bool is_args)
{
    const char *open = x->p++;
    skip_ws(x);
    if (x->p < x->end && *x->p == '}') {
        x->p++;
        if (depth == 0)
            e->empty = true;
        return MT_OK;
    }
    for (;;) {
        skip_ws(x);
        if (x->p >= x->end)
            return fail(x, open, MT_ERR_TRUNCATED, "the file ends inside an event");
        if (*x->p != '"')
            return fail(x, x->p, MT_ERR_SYNTAX, "expected a key in quotes");
        const char *k, *v;
        size_t kn, vn;
        if (read_string(x, &k, &kn) != MT_OK)
            return x->st;
        skip_ws(x);
        if (x->p >= x->end)
            return fail(x, open, MT_ERR_TRUNCATED, "the file ends inside an event");
        if (*x->p != ':')
            return fail(x, x->p, MT_ERR_SYNTAX, "expected ':' after a key");
        x->p++;
        skip_ws(x);
        if (x->p >= x->end)
            return fail(x, open, MT_ERR_TRUNCATED, "the file ends inside an event");
        if (*x->p == '{') {
            if (depth + 1 >= MAX_DEPTH) {
                if (skip_nested(x) != MT_OK)
                    return x->st;
            } else if (read_object(x, e, depth + 1, depth == 0 && is(k, kn, "args")) != MT_OK) {
                return x->st;
            }
        } else if (*x->p == '[') {
            if (skip_nested(x) != MT_OK)
                return x->st;
        } else {
            bool quoted = *x->p == '"';
            if ((quoted ? read_string(x, &v, &vn) : read_bare(x, &v, &vn)) != MT_OK)
                return x->st;
            if (take(x, e, depth == 0 ? 0 : is_args ? 1 : 2, k, kn, v, vn, quoted) != MT_OK)
                return x->st;
        }
        skip_ws(x);
        if (x->p >= x->end)
            return fail(x, open, MT_ERR_TRUNCATED, "the file ends inside an event");
        if (*x->p == ',') {
            x->p++;
            continue;
        }
        if (*x->p == '}') {
            x->p++;
            return MT_OK;
        }
        return fail(x, x->p, MT_ERR_SYNTAX, "expected ',' or '}'");
    }
}

static void copy_label(char *dst, size_t cap, const char *s, size_t n)
{
    if (!s)
        n = 0;
    if (n >= cap)
        n = cap - 1;
    if (n)
        memcpy(dst, s, n);
    dst[n] = '\0';
}

typedef struct grow {
    mt_nccl_file_t *f;
    size_t cap_tasks, cap_comms;
} grow_t;

static mt_status_t add_comm(grow_t *g, uint64_t hash, int32_t rank)
{
    mt_nccl_file_t *f = g->f;
    for (size_t i = 0; i < f->n_comms; i++)
        if (f->comms[i].hash == hash)
            return MT_OK;
    if (MT_GROW(f->comms, g->cap_comms, f->n_comms + 1, 4))
        return MT_ERR_NOMEM;
    /* The file names neither the communicator's size nor its name. */
    f->comms[f->n_comms++] = (mt_nccl_comm_t){.hash = hash, .rank = rank};
    return MT_OK;
}

static int by_start(const void *a, const void *b)
{
    const mt_nccl_task_t *x = a, *y = b;
    if (x->host_start_ns != y->host_start_ns)
        return x->host_start_ns < y->host_start_ns ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

/* A task that has ended: its channels give the GPU times. */
static void close_task(mt_nccl_task_t *t)
{
    if (t->gpu_start_ns >= 0 && t->gpu_stop_ns >= 0 && t->gpu_stop_ns < t->gpu_start_ns)
        t->gpu_stop_ns = -1; /* stamps that contradict each other */
    if (t->gpu_start_ns < 0)
        t->gpu_stop_ns = -1;
}

mt_status_t mt_nccl_example_parse(const char *buf, size_t len, const char *path, mt_nccl_file_t **out,
                                  mt_error_t *err)
{
    *out = NULL;
    mt_error_clear(err);
    ctx_t x = {.path = path, .buf = buf, .p = buf, .end = buf + len, .err = err};
    grow_t g = {.f = calloc(1, sizeof(mt_nccl_file_t))};
    if (!g.f)
        return mt_error_set(err, MT_ERR_NOMEM, "%s: out of memory", path);
    mt_nccl_file_t *f = g.f;
    f->pid = -1;
    skip_ws(&x);
    if (x.p >= x.end || *x.p != '[') {
        fail(&x, x.p, MT_ERR_FORMAT, "expected '[' (an NCCL example profiler trace is a JSON array)");
        mt_nccl_file_free(f);
        return x.st;
    }
    x.p++;
    mt_nccl_task_t *open = NULL; /* the task whose channels are being read */
    bool closed = false;
    while (x.st == MT_OK) {
        while (x.p < x.end && (*x.p == ' ' || *x.p == '\t' || *x.p == '\r' || *x.p == '\n' || *x.p == ','))
            x.p++;
        if (x.p >= x.end)
            break;
        if (*x.p == ']') {
            x.p++;
            closed = true;
            break;
        }
        if (*x.p != '{') {
            fail(&x, x.p, MT_ERR_SYNTAX, "expected an event object or ']'");
            break;
        }
        ev_t e = {.at = x.p};
        if (read_object(&x, &e, 0, false) != MT_OK)
            break;
        if (e.empty)
            continue;
        if (e.has_pid && f->pid < 0)
            f->pid = e.pid;
        if (e.cat == CAT_UNKNOWN || e.cat == CAT_NONE) {
            f->skipped_lines++;
            continue;
        }
        if (e.cat == CAT_GPU) {
            if (e.ph != 'b')
                continue;
            if (!open) {
                f->orphan_kch++;
                continue;
            }
            open->n_kch++;
            if (e.has_gstart && e.gstart > 0 && e.gstart <= (uint64_t)INT64_MAX) {
                if (open->gpu_start_ns < 0 || (int64_t)e.gstart < open->gpu_start_ns)
                    open->gpu_start_ns = (int64_t)e.gstart;
            }
            if (e.has_gstop && e.gstop > 0 && e.gstop <= (uint64_t)INT64_MAX) {
                if ((int64_t)e.gstop > open->gpu_stop_ns)
                    open->gpu_stop_ns = (int64_t)e.gstop;
            } else {
                open->n_kch_open++;
            }
            continue;
        }
        if (e.cat != CAT_COLL && e.cat != CAT_P2P)
            continue;
        bool p2p = e.cat == CAT_P2P;
        if (e.ph == 'e') {
            if (open && open->is_p2p == p2p) {
                open->host_stop_ns = e.has_ts ? e.ts_ns : -1;
                close_task(open);
                open = NULL;
            }
            continue;
        }
        if (e.ph != 'b')
            continue;
        if (!e.has_comm || !e.has_rank || (!p2p && !e.has_seq)) {
            fail(&x, e.at, MT_ERR_FORMAT,
                 p2p ? "a P2P event without \"CommHash\" and \"Rank\" in its args"
                     : "a COLL event without \"SeqNum\", \"CommHash\" and \"Rank\" in its args");
            break;
        }
        if (e.rank < 0 || e.rank > INT32_MAX - 1) {
            fail(&x, e.at, MT_ERR_RANGE, "\"Rank\" out of range");
            break;
        }
        if (open)
            close_task(open); /* its "e" never came */
        if (f->n_tasks == g.cap_tasks) {
            if (MT_GROW(f->tasks, g.cap_tasks, f->n_tasks + 1, 64)) {
                mt_error_set(err, MT_ERR_NOMEM, "%s: out of memory", path);
                x.st = MT_ERR_NOMEM;
                break;
            }
            open = NULL; /* it pointed into the old array */
        }
        if (add_comm(&g, e.comm, (int32_t)e.rank) != MT_OK) {
            mt_error_set(err, MT_ERR_NOMEM, "%s: out of memory", path);
            x.st = MT_ERR_NOMEM;
            break;
        }
        mt_nccl_task_t *t = &f->tasks[f->n_tasks];
        memset(t, 0, sizeof *t);
        t->comm = e.comm;
        t->id = f->n_tasks++;
        t->seq = p2p ? -1 : e.seq;
        t->count = e.has_count ? e.count : -1;
        t->host_start_ns = e.has_ts ? e.ts_ns : -1;
        t->host_stop_ns = -1;
        t->gpu_start_ns = t->gpu_stop_ns = -1;
        t->rank = (int32_t)e.rank;
        t->root_or_peer = p2p && e.has_peer && e.peer >= 0 && e.peer <= INT32_MAX ? (int32_t)e.peer : -1;
        t->is_p2p = p2p;
        t->n_channels = e.has_nch && e.nch > 0 ? (uint8_t)(e.nch > 255 ? 255 : e.nch) : 0;
        copy_label(t->func, sizeof t->func, e.name, e.name_len);
        copy_label(t->datatype, sizeof t->datatype, e.dtype, e.dtype_len);
        copy_label(t->algo, sizeof t->algo, e.algo, e.algo_len);
        copy_label(t->proto, sizeof t->proto, e.proto, e.proto_len);
        t->kind = (uint8_t)mt_coll_kind_from_name(t->func, strlen(t->func));
        open = t;
    }
    if (open)
        close_task(open);
    if (x.st == MT_ERR_TRUNCATED || (x.st == MT_OK && !closed)) {
        /* a copy cut short: the complete events count, the rest is flagged */
        x.st = MT_OK;
        mt_error_clear(err);
        f->truncated = true;
    }
    if (x.st == MT_OK && closed) {
        skip_ws(&x);
        if (x.p < x.end)
            fail(&x, x.p, MT_ERR_SYNTAX, "text after the closing ']'");
    }
    if (x.st != MT_OK) {
        mt_nccl_file_free(f);
        return x.st;
    }
    if (f->n_tasks > 1)
        qsort(f->tasks, f->n_tasks, sizeof *f->tasks, by_start);
    *out = f;
    return MT_OK;
}

mt_status_t mt_nccl_example_load(const char *path, mt_nccl_file_t **out, mt_error_t *err)
{
    return mt_nccl_load_with(path, mt_nccl_example_parse, out, err);
}

bool mt_nccl_example_sniff(const char *buf, size_t len)
{
    const char *p = buf, *end = buf + len;
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
        p++;
    if (p == end || *p++ != '[')
        return false;
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
        p++;
    if (p == end || *p != '{')
        return false;
    /* the first event: "cat" one of the plugin's and "ph" "b" */
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    if (!eol)
        eol = end;
    size_t n = (size_t)(eol - p);
    static const char ck[] = "\"cat\": \"", pk[] = "\"ph\": \"b\"";
    const char *c = NULL;
    for (const char *q = p; q + sizeof ck - 1 <= eol; q++)
        if (memcmp(q, ck, sizeof ck - 1) == 0) {
            c = q + sizeof ck - 1;
            break;
        }
    if (!c)
        return false;
    const char *ce = memchr(c, '"', (size_t)(eol - c));
    if (!ce)
        return false;
    cat_t cat = cat_of(c, (size_t)(ce - c));
    if (cat == CAT_UNKNOWN || cat == CAT_NONE)
        return false;
    for (const char *q = p; q + sizeof pk - 1 <= p + n; q++)
        if (memcmp(q, pk, sizeof pk - 1) == 0)
            return true;
    return false;
}

bool mt_nccl_example_name(const char *path, uint64_t *hash, int32_t *rank)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    size_t n = strlen(b);
    if (n > 3 && memcmp(b + n - 3, ".gz", 3) == 0)
        n -= 3;
    if (n < 5 || memcmp(b + n - 5, ".json", 5) != 0)
        return false;
    n -= 5;
    /* ..._<hash>_<rank> */
    size_t r = n;
    while (r > 0 && b[r - 1] >= '0' && b[r - 1] <= '9')
        r--;
    if (r == n || n - r > 9 || r == 0 || b[r - 1] != '_')
        return false;
    size_t h = r - 1;
    while (h > 0 && b[h - 1] >= '0' && b[h - 1] <= '9')
        h--;
    /* a 64-bit hash printed in decimal: at least 10 digits, at most 20 */
    if (r - 1 - h < 10 || r - 1 - h > 20 || h == 0 || b[h - 1] != '_')
        return false;
    uint64_t hv;
    int64_t rv;
    if (mt_parse_uint64(b + h, r - 1 - h, &hv) != MT_OK || mt_parse_int64(b + r, n - r, &rv) != MT_OK)
        return false;
    *hash = hv;
    *rank = (int32_t)rv;
    return true;
}
