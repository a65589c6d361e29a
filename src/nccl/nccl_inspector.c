/* Reader of NCCL Inspector logs: one JSON object per line, nested a few
 * levels, walked once with a bounded depth; only the keys mergetrace uses
 * are kept. Rows for collective matching from verbose records. */
#include "mergetrace/nccl_inspector.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mergetrace/input.h"
#include "mergetrace/classify.h"
#include "mergetrace/buf.h"
#include "base/hash.h"
#include "nccl/probe.h"
#include "base/errpos.h"
#include "base/numparse.h"

#define MAX_LINE (1 << 20)
#define MAX_DEPTH 8

typedef struct ctx {
    const char *path, *buf;
    int64_t line_no;
    size_t line_off;
    mt_error_t *err;
    const char *p, *end;
    /* the path of keys to the current value */
    const char *key[MAX_DEPTH + 1];
    size_t key_len[MAX_DEPTH + 1];
    int depth;
    /* the record being read */
    mt_insp_coll_t c;
    bool has_header, has_perf, has_id;
    char host[64];
    int64_t pid;
    mt_status_t st;
} ctx_t;

static mt_status_t fail(ctx_t *x, const char *at, mt_status_t code, const char *what)
{
    if (x->st != MT_OK)
        return x->st;
    mt_error_set(x->err, code, "%s", what);
    mt_errpos_set(x->err, x->path ? x->path : "", (int64_t)(at - x->buf), x->line_no,
                  (int64_t)((size_t)(at - x->buf) - x->line_off) + 1);
    x->st = code;
    return code;
}

static bool at_path(const ctx_t *x, const char *const *want, int n)
{
    if (x->depth != n)
        return false;
    for (int i = 0; i < n; i++)
        if (strlen(want[i]) != x->key_len[i + 1] || memcmp(want[i], x->key[i + 1], x->key_len[i + 1]) != 0)
            return false;
    return true;
}

#define AT(...) at_path(x, (const char *const[]){__VA_ARGS__}, (int)(sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *)))

static void skip_ws(ctx_t *x)
{
    while (x->p < x->end && (*x->p == ' ' || *x->p == '\t' || *x->p == '\r'))
        x->p++;
}

/* A string at x->p (after the quote is checked); its first 63 decoded
 * bytes in out (escapes \uXXXX above 0x7f become '?'). */
static void parse_string(ctx_t *x, char out[64])
{
    const char *s = x->p++;
    size_t m = 0;
    for (;;) {
        if (x->p >= x->end) {
            fail(x, s, MT_ERR_SYNTAX, "unterminated string");
            return;
        }
        unsigned c = (unsigned char)*x->p;
        if (c == '"')
            break;
        if (c < 0x20) {
            fail(x, x->p, MT_ERR_SYNTAX, "control character in a string");
            return;
        }
        if (c == '\\') {
            if (x->end - x->p < 2) {
                fail(x, x->p, MT_ERR_SYNTAX, "unterminated escape");
                return;
            }
            char e = x->p[1];
            x->p += 2;
            switch (e) {
            case '"': case '\\': case '/': c = (unsigned char)e; break;
            case 'b': c = '\b'; break;
            case 'f': c = '\f'; break;
            case 'n': c = '\n'; break;
            case 'r': c = '\r'; break;
            case 't': c = '\t'; break;
            case 'u': {
                unsigned u = 0;
                for (int i = 0; i < 4; i++) {
                    int h = x->p + i < x->end ? mt_parse_hex_digit(x->p[i]) : -1;
                    if (h < 0) {
                        fail(x, x->p + i, MT_ERR_SYNTAX, "bad \\u escape");
                        return;
                    }
                    u = u * 16 + (unsigned)h;
                }
                x->p += 4;
                c = u < 0x80 ? u : '?';
                break;
            }
            default:
                fail(x, x->p - 1, MT_ERR_SYNTAX, "bad escape");
                return;
            }
        } else {
            x->p++;
        }
        if (m + 1 < 64)
            out[m++] = (char)c;
    }
    out[m] = '\0';
    x->p++;
}

typedef struct num {
    bool is_int, neg;
    uint64_t mag;          /* integer part (exact when it fits) */
    int64_t milli;         /* the value * 1000, rounded half away from zero, when no exponent; else from dbl */
    double dbl;
} num_t;

static void parse_number(ctx_t *x, num_t *n)
{
    const char *s = x->p;
    memset(n, 0, sizeof *n);
    n->neg = x->p < x->end && *x->p == '-';
    if (n->neg)
        x->p++;
    if (x->p >= x->end || *x->p < '0' || *x->p > '9') {
        fail(x, x->p, MT_ERR_SYNTAX, "expected a value");
        return;
    }
    if (*x->p == '0' && x->p + 1 < x->end && x->p[1] >= '0' && x->p[1] <= '9') {
        fail(x, x->p, MT_ERR_SYNTAX, "leading zero");
        return;
    }
    bool big = false;
    for (; x->p < x->end && *x->p >= '0' && *x->p <= '9'; x->p++) {
        unsigned d = (unsigned)(*x->p - '0');
        if (n->mag > (UINT64_MAX - d) / 10)
            big = true;
        else
            n->mag = n->mag * 10 + d;
    }
    int frac3 = 0, nf = 0, round_up = 0;
    n->is_int = true;
    if (x->p < x->end && *x->p == '.') {
        n->is_int = false;
        x->p++;
        if (x->p >= x->end || *x->p < '0' || *x->p > '9') {
            fail(x, x->p, MT_ERR_SYNTAX, "expected a digit after '.'");
            return;
        }
        for (; x->p < x->end && *x->p >= '0' && *x->p <= '9'; x->p++, nf++) {
            if (nf < 3)
                frac3 = frac3 * 10 + (*x->p - '0');
            else if (nf == 3)
                round_up = *x->p >= '5';
        }
        for (int i = nf; i < 3; i++)
            frac3 *= 10;
    }
    bool expo = false;
    if (x->p < x->end && (*x->p == 'e' || *x->p == 'E')) {
        expo = true;
        n->is_int = false;
        x->p++;
        if (x->p < x->end && (*x->p == '+' || *x->p == '-'))
            x->p++;
        if (x->p >= x->end || *x->p < '0' || *x->p > '9') {
            fail(x, x->p, MT_ERR_SYNTAX, "expected a digit in the exponent");
            return;
        }
        while (x->p < x->end && *x->p >= '0' && *x->p <= '9')
            x->p++;
    }
    char tmp[64];
    size_t len = (size_t)(x->p - s);
    if (len >= sizeof tmp)
        len = sizeof tmp - 1; /* only the double needs it: 63 digits are plenty */
    memcpy(tmp, s, len);
    tmp[len] = '\0';
    n->dbl = strtod(tmp, NULL);
    if (big)
        n->is_int = false;
    if (!expo && !big && n->mag <= (uint64_t)(INT64_MAX / 1000 - 1)) {
        int64_t v = (int64_t)n->mag * 1000 + frac3 + round_up;
        n->milli = n->neg ? -v : v;
    } else {
        double v = n->dbl * 1000.0;
        n->milli = fabs(v) < 9.2e18 ? (int64_t)llround(v) : (v < 0 ? INT64_MIN : INT64_MAX);
    }
}

static int64_t as_int(ctx_t *x, const num_t *n, const char *at, const char *key)
{
    if (!n->is_int || n->mag > (uint64_t)INT64_MAX) {
        char m[96];
        snprintf(m, sizeof m, "\"%s\": expected an integer", key);
        fail(x, at, n->is_int ? MT_ERR_RANGE : MT_ERR_FORMAT, m);
        return 0;
    }
    return n->neg ? -(int64_t)n->mag : (int64_t)n->mag;
}

static int32_t as_i32(ctx_t *x, const num_t *n, const char *at, const char *key)
{
    int64_t v = as_int(x, n, at, key);
    if (x->st == MT_OK && (v < INT32_MIN || v > INT32_MAX)) {
        char m[96];
        snprintf(m, sizeof m, "\"%s\": beyond int32", key);
        fail(x, at, MT_ERR_RANGE, m);
    }
    return (int32_t)v;
}

/* A scalar at the current path. */
static void take_string(ctx_t *x, const char *at, const char *s)
{
    if (AT("header", "id")) {
        const char *h = s;
        if (h[0] == '0' && (h[1] == 'x' || h[1] == 'X'))
            h += 2;
        size_t n = strlen(h);
        uint64_t v = 0;
        bool ok = n >= 1 && n <= 16;
        for (size_t i = 0; ok && i < n; i++) {
            int d = mt_parse_hex_digit(h[i]);
            ok = d >= 0;
            v = v << 4 | (uint64_t)(d < 0 ? 0 : d);
        }
        if (!ok) {
            fail(x, at, MT_ERR_FORMAT, "header.id: expected a hex communicator id (\"0x...\")");
            return;
        }
        x->c.comm = v;
        x->c.comm_digits = (uint8_t)n;
        x->has_id = true;
    } else if (AT("metadata", "hostname")) {
        snprintf(x->host, sizeof x->host, "%s", s);
    } else if (AT("coll_perf", "coll")) {
        size_t n = strlen(s) < sizeof x->c.coll ? strlen(s) : sizeof x->c.coll - 1;
        memcpy(x->c.coll, s, n); /* a label: cut to fit */
        x->c.coll[n] = '\0';
        x->c.kind = (uint8_t)mt_coll_kind_from_name(s, strlen(s));
    } else if (AT("coll_perf", "coll_timing_source")) {
        x->c.timing = !strcmp(s, "kernel_gpu")       ? MT_INSP_TIMING_KERNEL_GPU
                      : !strcmp(s, "kernel_cpu")     ? MT_INSP_TIMING_KERNEL_CPU
                      : !strcmp(s, "collective_cpu") ? MT_INSP_TIMING_COLL_CPU
                                                     : MT_INSP_TIMING_UNKNOWN;
    } else if (AT("coll_perf", "coll_algobw_gbs") || AT("coll_perf", "coll_busbw_gbs")) {
        /* the Inspector writes NaN as the string "nan" */
        double v = !strcmp(s, "nan") ? NAN : strtod(s, NULL);
        if (AT("coll_perf", "coll_algobw_gbs"))
            x->c.algbw_gbs = v;
        else
            x->c.busbw_gbs = v;
    }
}

static void take_number(ctx_t *x, const char *at, const num_t *n)
{
    if (AT("header", "rank"))
        x->c.rank = as_i32(x, n, at, "rank");
    else if (AT("header", "n_ranks"))
        x->c.nranks = as_i32(x, n, at, "n_ranks");
    else if (AT("header", "nnodes"))
        x->c.nnodes = as_i32(x, n, at, "nnodes");
    else if (AT("metadata", "pid"))
        x->pid = as_int(x, n, at, "pid");
    else if (AT("metadata", "dump_timestamp_us"))
        x->c.dump_ns = n->milli;
    else if (AT("coll_perf", "coll_sn"))
        x->c.sn = as_int(x, n, at, "coll_sn");
    else if (AT("coll_perf", "coll_msg_size_bytes"))
        x->c.msg_bytes = as_int(x, n, at, "coll_msg_size_bytes");
    else if (AT("coll_perf", "coll_exec_time_us"))
        x->c.exec_ns = n->milli;
    else if (AT("coll_perf", "coll_algobw_gbs"))
        x->c.algbw_gbs = n->dbl;
    else if (AT("coll_perf", "coll_busbw_gbs"))
        x->c.busbw_gbs = n->dbl;
    else if (AT("coll_perf", "event_trace_ts", "kernel_events", "[]", "kernel_start_ts")) {
        if (x->c.start_ns < 0 || n->milli < x->c.start_ns)
            x->c.start_ns = n->milli;
        x->c.n_kernel_events++;
    } else if (AT("coll_perf", "event_trace_ts", "kernel_events", "[]", "kernel_stop_ts")) {
        if (n->milli > x->c.end_ns)
            x->c.end_ns = n->milli;
    }
}

static void parse_value(ctx_t *x);

static void parse_container(ctx_t *x, char open)
{
    const char *at = x->p;
    if (x->depth == MAX_DEPTH) {
        fail(x, at, MT_ERR_LIMIT, "nesting deeper than 8 levels");
        return;
    }
    x->p++;
    x->depth++;
    x->key[x->depth] = "[]";
    x->key_len[x->depth] = 2;
    char close = open == '{' ? '}' : ']';
    skip_ws(x);
    if (x->p < x->end && *x->p == close) {
        x->p++;
        x->depth--;
        return;
    }
    for (;;) {
        skip_ws(x);
        if (open == '{') {
            if (x->p >= x->end || *x->p != '"') {
                fail(x, x->p, MT_ERR_SYNTAX, "expected '\"' (a key)");
                return;
            }
            const char *k = x->p + 1;
            char tmp[64];
            parse_string(x, tmp);
            if (x->st != MT_OK)
                return;
            /* keys we look for are plain: the raw span is enough */
            x->key[x->depth] = k;
            x->key_len[x->depth] = (size_t)(x->p - 1 - k);
            if (x->depth == 1 && x->key_len[1] == 6 && !memcmp(k, "header", 6))
                x->has_header = true;
            if (x->depth == 1 && x->key_len[1] == 9 && !memcmp(k, "coll_perf", 9))
                x->has_perf = true;
            skip_ws(x);
            if (x->p >= x->end || *x->p != ':') {
                fail(x, x->p, MT_ERR_SYNTAX, "expected ':'");
                return;
            }
            x->p++;
            skip_ws(x);
        }
        parse_value(x);
        if (x->st != MT_OK)
            return;
        skip_ws(x);
        if (x->p < x->end && *x->p == ',') {
            x->p++;
            continue;
        }
        if (x->p < x->end && *x->p == close) {
            x->p++;
            x->depth--;
            return;
        }
        fail(x, x->p, MT_ERR_SYNTAX, open == '{' ? "expected ',' or '}'" : "expected ',' or ']'");
        return;
    }
}

/* Recursion is bounded by MAX_DEPTH. */
static void parse_value(ctx_t *x)
{
    const char *at = x->p;
    if (x->p >= x->end) {
        fail(x, at, MT_ERR_SYNTAX, "expected a value");
        return;
    }
    char c = *x->p;
    if (c == '{' || c == '[') {
        parse_container(x, c);
    } else if (c == '"') {
        char s[64];
        parse_string(x, s);
        if (x->st == MT_OK)
            take_string(x, at, s);
    } else if (x->end - x->p >= 4 && (!memcmp(x->p, "true", 4) || !memcmp(x->p, "null", 4))) {
        x->p += 4;
    } else if (x->end - x->p >= 5 && !memcmp(x->p, "false", 5)) {
        x->p += 5;
    } else {
        num_t n;
        parse_number(x, &n);
        if (x->st == MT_OK)
            take_number(x, at, &n);
    }
}

void mt_insp_file_free(mt_insp_file_t *f)
{
    if (!f)
        return;
    free(f->colls);
    free(f);
}

mt_status_t mt_insp_parse(const char *buf, size_t len, const char *path, mt_insp_file_t **out, mt_error_t *err)
{
    *out = NULL;
    mt_insp_file_t *f = calloc(1, sizeof *f);
    if (!f)
        return mt_error_set(err, MT_ERR_NOMEM, "NCCL Inspector log");
    ctx_t x = {.path = path, .buf = buf, .err = err, .st = MT_OK, .pid = -1};
    size_t cap = 0;
    bool first = true;
    for (size_t i = 0; i < len && x.st == MT_OK;) {
        const char *nl = memchr(buf + i, '\n', len - i);
        size_t ll = nl ? (size_t)(nl - (buf + i)) : len - i;
        x.line_no++;
        x.line_off = i;
        if (ll > MAX_LINE) {
            fail(&x, buf + i, MT_ERR_LIMIT, "a line longer than 1 MiB");
            break;
        }
        if (!nl) {
            f->truncated = true; /* a killed process: the last line is not complete */
            break;
        }
        x.p = buf + i;
        x.end = nl;
        skip_ws(&x);
        if (x.p == x.end) {
            i += ll + 1;
            continue; /* blank line */
        }
        memset(&x.c, 0, sizeof x.c);
        x.c.start_ns = x.c.end_ns = -1;
        x.c.algbw_gbs = x.c.busbw_gbs = NAN;
        x.has_header = x.has_perf = x.has_id = false;
        x.depth = 0;
        if (*x.p != '{') {
            fail(&x, x.p, MT_ERR_SYNTAX, "expected '{' at the start of a line");
            break;
        }
        parse_value(&x);
        skip_ws(&x);
        if (x.st == MT_OK && x.p != x.end)
            fail(&x, x.p, MT_ERR_SYNTAX, "text after the object");
        if (x.st != MT_OK)
            break;
        if (!x.has_header || (x.has_perf && !x.has_id)) {
            fail(&x, buf + i, MT_ERR_FORMAT,
                 first ? "not an NCCL Inspector log (no \"header\" with an \"id\")" : "a record without \"header\".\"id\"");
            break;
        }
        first = false;
        if (!x.has_perf) {
            f->skipped_lines++;
        } else {
            if (MT_GROW(f->colls, cap, f->n_colls + 1, 256)) {
                x.st = mt_error_set(err, MT_ERR_NOMEM, "NCCL Inspector log");
                break;
            }
            f->colls[f->n_colls++] = x.c;
        }
        i += ll + 1;
    }
    if (x.st != MT_OK) {
        mt_insp_file_free(f);
        return x.st;
    }
    snprintf(f->host, sizeof f->host, "%s", x.host);
    f->pid = x.pid;
    *out = f;
    return MT_OK;
}

mt_status_t mt_insp_load(const char *path, mt_insp_file_t **out, mt_error_t *err)
{
    *out = NULL;
    /* Read it all: the byte offsets in errors then count from the start,
     * and the files are small next to a Kineto trace. */
    char *buf = NULL;
    size_t len = 0;
    bool truncated = false;
    mt_status_t st = mt_input_read_file(path, &buf, &len, &truncated, err);
    if (st == MT_OK)
        st = mt_insp_parse(buf, len, path, out, err);
    if (st == MT_OK && truncated)
        (*out)->truncated = true;
    free(buf);
    return st;
}

bool mt_insp_sniff(const char *buf, size_t len)
{
    static const char head[] = "{\"header\":{";
    size_t hn = sizeof head - 1;
    if (len < hn || memcmp(buf, head, hn) != 0)
        return false;
    const char *nl = memchr(buf, '\n', len);
    size_t ll = nl ? (size_t)(nl - buf) : len;
    /* "id" comes first in the header */
    return ll >= hn + 5 && memcmp(buf + hn, "\"id\":", 5) == 0;
}

int32_t mt_insp_world_rank(const mt_insp_file_t *f, int32_t *world_size)
{
    int32_t best = -1, size = 0;
    for (size_t i = 0; i < f->n_colls; i++)
        if (f->colls[i].nranks > size) {
            size = f->colls[i].nranks;
            best = f->colls[i].rank;
        }
    if (world_size)
        *world_size = size;
    return best;
}

bool mt_insp_comm_is(uint64_t comm, uint8_t digits, uint64_t hash)
{
    int n = 0; /* hex digits of hash without leading zeros */
    for (uint64_t h = hash; h; h >>= 4)
        n++;
    if (n == 0)
        n = 1;
    if (digits == 0 || digits > n)
        return false;
    return (hash >> (4 * (n - digits))) == comm;
}

mt_status_t mt_insp_cinst_extract(const mt_insp_file_t *f, int32_t rank, mt_strtab_t *labels, mt_cinst_t **rows,
                                  size_t *n, size_t *cap, uint64_t *no_times)
{
    size_t first = *n;
    for (size_t i = 0; i < f->n_colls; i++) {
        const mt_insp_coll_t *c = &f->colls[i];
        if (c->start_ns < 0 || c->end_ns < c->start_ns) {
            if (no_times)
                (*no_times)++;
            continue;
        }
        if (MT_GROW(*rows, *cap, *n + 1, 256)) {
            *n = first;
            return MT_ERR_NOMEM;
        }
        mt_cinst_t *r = &(*rows)[(*n)++];
        memset(r, 0, sizeof *r);
        r->start_ns = c->start_ns;
        r->end_ns = c->end_ns;
        r->launch_ns = -1;
        r->step = -1;
        uint64_t g[2] = {c->comm, c->comm_digits};
        r->group = mt_hash64(g, sizeof g, 0x696e7370);
        uint64_t key[4] = {c->comm, c->comm_digits, c->kind, (uint64_t)c->sn};
        r->comms_id = mt_hash64(key, sizeof key, 0x696e7370);
        r->seq = c->sn;
        /* the size as the Inspector reports it, in bytes (it gives no
         * element type) */
        r->in_nelems = r->out_nelems = c->msg_bytes > 0 ? c->msg_bytes : -1;
        r->group_size = c->nranks > 0 ? c->nranks : -1;
        r->peer = -1;
        r->stream = -1;
        r->rank = rank;
        r->kind = c->kind;
        r->flags = MT_CI_PG | MT_CI_COMMS_ID | MT_CI_SEQ | MT_CI_NCCL;
        char pg[MT_CI_LABEL];
        int w = snprintf(pg, sizeof pg, "0x%llx", (unsigned long long)c->comm);
        if (mt_strtab_intern(labels, pg, (size_t)w, &r->pg_id) != MT_OK ||
            (c->msg_bytes > 0 && mt_strtab_intern(labels, "byte", 4, &r->dtype_id) != MT_OK)) {
            *n = first;
            return MT_ERR_NOMEM;
        }
        uint64_t sig[2] = {c->kind, (uint64_t)c->msg_bytes};
        r->sig = mt_hash64(sig, sizeof sig, 0x696e7370);
    }
    /* ordinals per communicator, in file order (a process has few
     * communicators: a linear list of them) */
    uint64_t *gid = NULL;
    uint32_t *cnt = NULL;
    size_t ng = 0, gcap = 0;
    for (size_t i = first; i < *n; i++) {
        size_t g = 0;
        while (g < ng && gid[g] != (*rows)[i].group)
            g++;
        if (g == ng) {
            if (ng == gcap) {
                /* two arrays, one capacity */
                size_t ca = gcap, cb = gcap;
                if (MT_GROW(gid, ca, ng + 1, 8) || MT_GROW(cnt, cb, ca, 8)) {
                    free(gid);
                    free(cnt);
                    *n = first;
                    return MT_ERR_NOMEM;
                }
                gcap = ca;
            }
            gid[ng] = (*rows)[i].group;
            cnt[ng++] = 0;
        }
        (*rows)[i].ordinal = cnt[g]++;
    }
    free(gid);
    free(cnt);
    return MT_OK;
}
