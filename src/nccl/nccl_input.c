/* Reader of the NCCL plugin's JSON lines: one strict flat JSON object per
 * line, tasks joined with their kernel channels (which may come before or
 * after the task's own line), and the rows collective matching uses. */
#include "mergetrace/nccl_input.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mergetrace/input.h"
#include "nccl/nccl_file.h"
#include "mergetrace/classify.h"
#include "mergetrace/nccl_inspector.h"
#include "mergetrace/buf.h"
#include "base/hash.h"
#include "nccl/probe.h"
#include "base/errpos.h"
#include "base/numparse.h"

#define MAX_LINE (64 * 1024)
#define MAX_KEYS 40

/* ---- one line as a flat object ---- */

enum { V_STR, V_INT, V_NULL };

typedef struct val {
    const char *key;
    size_t key_len;
    int kind;
    bool neg;
    uint64_t mag;             /* |integer| */
    char str[64];             /* decoded, truncated */
} val_t;

typedef struct line {
    val_t v[MAX_KEYS];
    int n;
} line_t;

typedef struct pos {
    const char *path;
    const char *buf;          /* the whole text, for line:col */
    int64_t line_no;
    size_t line_off;          /* offset of the line's first byte */
    mt_error_t *err;
} pos_t;

static mt_status_t fail_at(const pos_t *ps, const char *p, mt_status_t code, const char *what)
{
    mt_error_set(ps->err, code, "%s", what);
    mt_errpos_set(ps->err, ps->path ? ps->path : "", (int64_t)(p - ps->buf), ps->line_no,
                  (int64_t)((size_t)(p - ps->buf) - ps->line_off) + 1);
    return code;
}

/* Copies src into dst[cap], cut to fit (names are labels, not keys). */
static void copy_trunc(char *dst, size_t cap, const char *src)
{
    size_t n = strlen(src);
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

/* Parses [p, end) as {"key":value,...} with string, integer or null values.
 * The plugin writes no spaces; we accept none either (our own format). */
static mt_status_t parse_line(const pos_t *ps, const char *p, const char *end, line_t *ln)
{
    ln->n = 0;
    if (p == end || *p != '{')
        return fail_at(ps, p, MT_ERR_SYNTAX, "expected '{' at the start of a line");
    p++;
    for (;;) {
        if (ln->n == MAX_KEYS)
            return fail_at(ps, p, MT_ERR_LIMIT, "more than 40 keys in one line");
        val_t *v = &ln->v[ln->n];
        if (p == end || *p != '"')
            return fail_at(ps, p, MT_ERR_SYNTAX, "expected '\"' (a key)");
        v->key = ++p;
        while (p < end && *p != '"' && *p != '\\' && (unsigned char)*p >= 0x20)
            p++;
        if (p == end || *p != '"')
            return fail_at(ps, p, MT_ERR_SYNTAX, "expected the end of a plain key");
        v->key_len = (size_t)(p - v->key);
        p++;
        if (p == end || *p != ':')
            return fail_at(ps, p, MT_ERR_SYNTAX, "expected ':'");
        p++;
        if (p < end && *p == '"') {
            p++;
            size_t m = 0;
            for (;;) {
                if (p == end)
                    return fail_at(ps, p, MT_ERR_SYNTAX, "unterminated string");
                unsigned c = (unsigned char)*p;
                if (c == '"')
                    break;
                if (c < 0x20)
                    return fail_at(ps, p, MT_ERR_SYNTAX, "control character in a string");
                if (c == '\\') {
                    if (end - p < 2)
                        return fail_at(ps, p, MT_ERR_SYNTAX, "unterminated escape");
                    char e = p[1];
                    p += 2;
                    switch (e) {
                    case '"': case '\\': case '/': c = (unsigned char)e; break;
                    case 'b': c = '\b'; break;
                    case 'f': c = '\f'; break;
                    case 'n': c = '\n'; break;
                    case 'r': c = '\r'; break;
                    case 't': c = '\t'; break;
                    case 'u': {
                        if (end - p < 4)
                            return fail_at(ps, p, MT_ERR_SYNTAX, "short \\u escape");
                        unsigned u = 0;
                        for (int i = 0; i < 4; i++) {
                            int h = mt_parse_hex_digit(p[i]);
                            if (h < 0)
                                return fail_at(ps, p + i, MT_ERR_SYNTAX, "bad \\u escape");
                            u = u * 16 + (unsigned)h;
                        }
                        p += 4;
                        /* the plugin escapes single bytes only; others
                         * become '?' in our truncated copy */
                        c = u < 0x100 ? u : '?';
                        break;
                    }
                    default:
                        return fail_at(ps, p - 1, MT_ERR_SYNTAX, "bad escape");
                    }
                } else {
                    p++;
                }
                if (m + 1 < sizeof v->str)
                    v->str[m++] = (char)c;
            }
            v->str[m] = '\0';
            p++;
            v->kind = V_STR;
        } else if (end - p >= 4 && memcmp(p, "null", 4) == 0) {
            p += 4;
            v->kind = V_NULL;
        } else {
            v->neg = p < end && *p == '-';
            if (v->neg)
                p++;
            if (p == end || *p < '0' || *p > '9')
                return fail_at(ps, p, MT_ERR_SYNTAX, "expected a string, an integer or null");
            if (*p == '0' && p + 1 < end && p[1] >= '0' && p[1] <= '9')
                return fail_at(ps, p, MT_ERR_SYNTAX, "leading zero");
            uint64_t mag = 0;
            for (; p < end && *p >= '0' && *p <= '9'; p++) {
                unsigned d = (unsigned)(*p - '0');
                if (mag > (UINT64_MAX - d) / 10)
                    return fail_at(ps, p, MT_ERR_RANGE, "integer beyond 64 bits");
                mag = mag * 10 + d;
            }
            if (p < end && (*p == '.' || *p == 'e' || *p == 'E'))
                return fail_at(ps, p, MT_ERR_SYNTAX, "expected an integer");
            v->mag = mag;
            v->kind = V_INT;
        }
        ln->n++;
        if (p < end && *p == ',') {
            p++;
            continue;
        }
        if (p == end || *p != '}')
            return fail_at(ps, p, MT_ERR_SYNTAX, "expected ',' or '}'");
        p++;
        if (p != end)
            return fail_at(ps, p, MT_ERR_SYNTAX, "text after the object");
        return MT_OK;
    }
}

static const val_t *find(const line_t *ln, const char *key)
{
    size_t n = strlen(key);
    for (int i = 0; i < ln->n; i++)
        if (ln->v[i].key_len == n && memcmp(ln->v[i].key, key, n) == 0)
            return &ln->v[i];
    return NULL;
}

/* Typed getters: a missing key or a wrong type is a format error naming
 * the key. */
typedef struct getter {
    const pos_t *ps;
    const char *line_start;
    const line_t *ln;
    const char *type;
    mt_status_t st;
} getter_t;

static const val_t *need(getter_t *g, const char *key, int kind, bool nullable)
{
    const val_t *v = find(g->ln, key);
    if (g->st != MT_OK)
        return NULL;
    if (v && (v->kind == kind || (nullable && v->kind == V_NULL)))
        return v;
    char msg[160];
    snprintf(msg, sizeof msg, "NCCL plugin line of type \"%s\": key \"%s\" %s", g->type, key,
             v ? "has the wrong type" : "is missing");
    g->st = fail_at(g->ps, g->line_start, MT_ERR_FORMAT, msg);
    return NULL;
}

static int64_t get_i64(getter_t *g, const char *key, int64_t if_null)
{
    const val_t *v = need(g, key, V_INT, if_null != INT64_MIN);
    if (!v)
        return 0;
    if (v->kind == V_NULL)
        return if_null;
    if (v->mag > (uint64_t)INT64_MAX + (v->neg ? 1u : 0u)) {
        g->st = fail_at(g->ps, g->line_start, MT_ERR_RANGE, "integer beyond int64");
        return 0;
    }
    return v->neg ? (int64_t)(0 - v->mag) : (int64_t)v->mag;
}

static uint64_t get_u64(getter_t *g, const char *key)
{
    const val_t *v = need(g, key, V_INT, false);
    if (!v)
        return 0;
    if (v->neg) {
        g->st = fail_at(g->ps, g->line_start, MT_ERR_RANGE, "negative value for an unsigned key");
        return 0;
    }
    return v->mag;
}

static int32_t get_i32(getter_t *g, const char *key)
{
    int64_t x = get_i64(g, key, INT64_MIN);
    if (g->st == MT_OK && (x < INT32_MIN || x > INT32_MAX))
        g->st = fail_at(g->ps, g->line_start, MT_ERR_RANGE, "integer beyond int32");
    return (int32_t)x;
}

static void get_str(getter_t *g, const char *key, char *dst, size_t cap)
{
    const val_t *v = need(g, key, V_STR, false);
    dst[0] = '\0';
    if (v)
        copy_trunc(dst, cap, v->str);
}

static uint64_t get_hex(getter_t *g, const char *key)
{
    const val_t *v = need(g, key, V_STR, false);
    if (!v)
        return 0;
    uint64_t h = 0;
    size_t n = strlen(v->str);
    for (size_t i = 0; i < n; i++) {
        int d = mt_parse_hex_digit(v->str[i]);
        if (d < 0 || n != 16) {
            g->st = fail_at(g->ps, g->line_start, MT_ERR_FORMAT, "comm is not 16 hex digits");
            return 0;
        }
        h = h << 4 | (uint64_t)d;
    }
    if (n != 16)
        g->st = fail_at(g->ps, g->line_start, MT_ERR_FORMAT, "comm is not 16 hex digits");
    return h;
}

/* ---- kernel channels, summarised per parent id ---- */

typedef struct chsum {
    uint64_t id;              /* 0: empty slot */
    int64_t start, stop;
    int64_t kopen, kseen;     /* an "open" line of its kernel: GPU start, host time seen; -1 */
    uint32_t n, open;
    bool task;                /* a coll/p2p line has this id */
} chsum_t;

typedef struct chmap {
    chsum_t *s;
    size_t cap, n;
} chmap_t;

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
}

static chsum_t *chmap_get(chmap_t *m, uint64_t id)
{
    if ((m->n + 1) * 2 > m->cap) { /* rehash into a table twice the size (not an array: no mt_grow) */
        size_t nc = m->cap ? m->cap * 2 : 1024;
        chsum_t *ns = calloc(nc, sizeof *ns);
        if (!ns)
            return NULL;
        for (size_t i = 0; i < m->cap; i++)
            if (m->s[i].id) {
                size_t j = mix(m->s[i].id) & (nc - 1);
                while (ns[j].id)
                    j = (j + 1) & (nc - 1);
                ns[j] = m->s[i];
            }
        free(m->s);
        m->s = ns;
        m->cap = nc;
    }
    size_t j = mix(id) & (m->cap - 1);
    while (m->s[j].id && m->s[j].id != id)
        j = (j + 1) & (m->cap - 1);
    if (!m->s[j].id) {
        m->s[j] = (chsum_t){.id = id, .start = -1, .stop = -1, .kopen = -1, .kseen = -1};
        m->n++;
    }
    return &m->s[j];
}

/* ---- the file ---- */

typedef struct builder {
    mt_nccl_file_t *f;
    size_t cap_comms, cap_tasks;
    chmap_t ch;
    mt_nccl_task_t *opens;    /* tasks of "open" lines; those without a coll/p2p line join the tasks at the end */
    size_t n_opens, cap_opens;
    bool saw_process, saw_kernels;
} builder_t;

static void seen_at(mt_nccl_file_t *f, int64_t t)
{
    if (t > f->last_seen_ns)
        f->last_seen_ns = t;
}

static void note_bound(mt_nccl_file_t *f, int64_t seen, int64_t gpu)
{
    int64_t d = seen - gpu;
    if (!f->has_offset_bound || d < f->gpu_offset_bound_ns)
        f->gpu_offset_bound_ns = d;
    f->has_offset_bound = true;
}

/* The fields a task's coll/p2p line and its open line share, into a zeroed *t. */
static void task_head(getter_t *g, mt_nccl_task_t *t, bool p2p)
{
    memset(t, 0, sizeof *t);
    t->is_p2p = p2p;
    t->comm = get_hex(g, "comm");
    t->rank = get_i32(g, "rank");
    t->id = get_u64(g, "id");
    get_str(g, "func", t->func, sizeof t->func);
    t->seq = p2p ? -1 : get_i64(g, "seq", INT64_MIN);
    t->count = get_i64(g, "count", INT64_MIN);
    get_str(g, "datatype", t->datatype, sizeof t->datatype);
}

static mt_status_t take_line(builder_t *b, const pos_t *ps, const char *p, const char *end)
{
    line_t ln;
    mt_status_t st = parse_line(ps, p, end, &ln);
    if (st != MT_OK)
        return st;
    char type[16];
    getter_t g = {.ps = ps, .line_start = p, .ln = &ln, .type = "?", .st = MT_OK};
    get_str(&g, "type", type, sizeof type);
    if (g.st != MT_OK)
        return g.st;
    g.type = type;
    mt_nccl_file_t *f = b->f;
    if (!b->saw_process) {
        if (strcmp(type, "process") != 0)
            return fail_at(ps, p, MT_ERR_FORMAT, "the first line is not a \"process\" line of the NCCL plugin");
        char fmt[32];
        get_str(&g, "format", fmt, sizeof fmt);
        if (g.st == MT_OK && strcmp(fmt, "mergetrace-nccl") != 0)
            return fail_at(ps, p, MT_ERR_FORMAT, "format is not \"mergetrace-nccl\"");
        if (get_i64(&g, "version", INT64_MIN) != 1 && g.st == MT_OK)
            return fail_at(ps, p, MT_ERR_FORMAT, "unsupported version (this reader knows 1)");
        get_str(&g, "host", f->host, sizeof f->host);
        f->pid = get_i64(&g, "pid", INT64_MIN);
        f->abi = get_i32(&g, "abi");
        b->saw_process = true;
        return g.st;
    }
    if (!strcmp(type, "init")) {
        if (MT_GROW(f->comms, b->cap_comms, f->n_comms + 1, 64))
            return MT_ERR_NOMEM;
        mt_nccl_comm_t *c = &f->comms[f->n_comms];
        memset(c, 0, sizeof *c);
        c->hash = get_hex(&g, "comm");
        get_str(&g, "name", c->name, sizeof c->name);
        c->rank = get_i32(&g, "rank");
        c->nranks = get_i32(&g, "nranks");
        c->n_nodes = get_i32(&g, "nNodes");
        if (g.st == MT_OK)
            f->n_comms++;
    } else if (!strcmp(type, "coll") || !strcmp(type, "p2p")) {
        bool p2p = type[0] == 'p';
        if (MT_GROW(f->tasks, b->cap_tasks, f->n_tasks + 1, 64))
            return MT_ERR_NOMEM;
        mt_nccl_task_t *t = &f->tasks[f->n_tasks];
        task_head(&g, t, p2p);
        t->root_or_peer = get_i32(&g, p2p ? "peer" : "root");
        if (!p2p) {
            get_str(&g, "algo", t->algo, sizeof t->algo);
            get_str(&g, "proto", t->proto, sizeof t->proto);
        }
        int32_t nch = get_i32(&g, "nChannels");
        t->n_channels = (uint8_t)(nch < 0 ? 0 : nch > 255 ? 255 : nch);
        t->host_start_ns = get_i64(&g, "host_start_ns", INT64_MIN);
        t->host_stop_ns = get_i64(&g, "host_stop_ns", INT64_MIN);
        t->kind = (uint8_t)mt_coll_kind_from_name(t->func, strlen(t->func));
        t->gpu_start_ns = t->gpu_stop_ns = -1;
        t->kernel_open_ns = t->kernel_seen_ns = -1;
        if (g.st == MT_OK && t->id == 0)
            return fail_at(ps, p, MT_ERR_FORMAT, "task id 0");
        if (g.st != MT_OK)
            return g.st;
        chsum_t *s = chmap_get(&b->ch, t->id);
        if (!s)
            return MT_ERR_NOMEM;
        s->task = true;
        seen_at(f, t->host_stop_ns);
        f->n_tasks++;
    } else if (!strcmp(type, "open")) {
        char of[8];
        get_str(&g, "of", of, sizeof of);
        if (g.st != MT_OK)
            return g.st;
        (void)get_i32(&g, "rank");
        if (!strcmp(of, "kch")) {
            uint64_t parent = get_u64(&g, "parent");
            int64_t gs = get_i64(&g, "gpu_start_ns", INT64_MIN);
            int64_t gss = get_i64(&g, "gpu_start_seen_ns", INT64_MIN);
            (void)get_hex(&g, "comm");
            if (g.st != MT_OK)
                return g.st;
            note_bound(f, gss, gs);
            seen_at(f, gss);
            b->saw_kernels = true;
            chsum_t *s = parent ? chmap_get(&b->ch, parent) : NULL;
            if (parent && !s)
                return MT_ERR_NOMEM;
            if (s && (s->kopen < 0 || gs < s->kopen)) {
                s->kopen = gs;
                s->kseen = gss;
            }
            return MT_OK;
        }
        bool p2p = !strcmp(of, "p2p");
        if (!p2p && strcmp(of, "coll") != 0)
            return fail_at(ps, p, MT_ERR_FORMAT, "an \"open\" line of an unknown kind (\"of\" is not coll, p2p or kch)");
        if (MT_GROW(b->opens, b->cap_opens, b->n_opens + 1, 64))
            return MT_ERR_NOMEM;
        mt_nccl_task_t *t = &b->opens[b->n_opens];
        task_head(&g, t, p2p);
        t->root_or_peer = p2p ? get_i32(&g, "peer") : -1;
        t->host_start_ns = get_i64(&g, "host_start_ns", INT64_MIN);
        t->host_stop_ns = t->gpu_start_ns = t->gpu_stop_ns = t->kernel_open_ns = t->kernel_seen_ns = -1;
        t->kind = (uint8_t)mt_coll_kind_from_name(t->func, strlen(t->func));
        t->state = MT_NCCL_TASK_ENQUEUING;
        if (g.st == MT_OK && t->id == 0)
            return fail_at(ps, p, MT_ERR_FORMAT, "task id 0");
        if (g.st == MT_OK) {
            seen_at(f, t->host_start_ns);
            b->n_opens++;
        }
    } else if (!strcmp(type, "kch")) {
        uint64_t parent = get_u64(&g, "parent");
        int64_t gs = get_i64(&g, "gpu_start_ns", INT64_MIN);
        int64_t gss = get_i64(&g, "gpu_start_seen_ns", INT64_MIN);
        int64_t ge = get_i64(&g, "gpu_stop_ns", -1);
        int64_t ges = get_i64(&g, "gpu_stop_seen_ns", -1);
        (void)get_hex(&g, "comm");
        if (g.st != MT_OK)
            return g.st;
        note_bound(f, gss, gs);
        seen_at(f, gss);
        if (ge >= 0 && ges >= 0) {
            note_bound(f, ges, ge);
            seen_at(f, ges);
        }
        b->saw_kernels = true;
        if (parent == 0) {
            f->orphan_kch++;
            return MT_OK;
        }
        chsum_t *s = chmap_get(&b->ch, parent);
        if (!s)
            return MT_ERR_NOMEM;
        if (s->start < 0 || gs < s->start)
            s->start = gs;
        if (ge >= 0 && ge > s->stop)
            s->stop = ge;
        s->n++;
        s->open += ge < 0;
    } else if (!strcmp(type, "stats")) {
        uint64_t d = get_u64(&g, "dropped_ring_full") + get_u64(&g, "dropped_no_ring") +
                     get_u64(&g, "dropped_pool_full");
        char why[16];
        get_str(&g, "why", why, sizeof why);
        if (g.st == MT_OK) {
            f->dropped = d;
            f->ended |= !strcmp(why, "exit");
        }
    } else if (!strcmp(type, "clock") || !strcmp(type, "process")) {
        /* clock pairs: only the last time is used (when the process last
         * wrote); a second process line cannot happen */
        if (type[0] == 'p')
            return fail_at(ps, p, MT_ERR_FORMAT, "a second \"process\" line");
        int64_t rt = get_i64(&g, "realtime_ns", INT64_MIN);
        if (g.st == MT_OK)
            seen_at(f, rt);
    } else {
        f->skipped_lines++;
    }
    return g.st;
}

static int task_cmp(const void *a, const void *b)
{
    const mt_nccl_task_t *x = a, *y = b;
    if (x->host_start_ns != y->host_start_ns)
        return x->host_start_ns < y->host_start_ns ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

/* Feeds the complete lines of buf[*done..len) to the builder; at_end: the
 * input ends at len. */
static mt_status_t feed(builder_t *b, pos_t *ps, const char *buf, size_t len, size_t *done,
                        bool at_end)
{
    size_t i = *done;
    while (i < len) {
        const char *nl = memchr(buf + i, '\n', len - i);
        if (!nl) {
            if (len - i > MAX_LINE)
                return fail_at(ps, buf + i, MT_ERR_LIMIT, "a line longer than 64 KiB");
            if (at_end)
                b->f->truncated = true;
            break;
        }
        size_t ll = (size_t)(nl - (buf + i));
        if (ll > MAX_LINE)
            return fail_at(ps, buf + i, MT_ERR_LIMIT, "a line longer than 64 KiB");
        ps->line_no++;
        ps->line_off = i;
        mt_status_t st = take_line(b, ps, buf + i, nl);
        if (st != MT_OK)
            return st;
        i += ll + 1;
    }
    *done = i;
    return MT_OK;
}

static mt_status_t finish(builder_t *b, const pos_t *ps, mt_nccl_file_t **out)
{
    mt_nccl_file_t *f = b->f;
    if (!b->saw_process)
        return fail_at(ps, ps->buf, MT_ERR_FORMAT, "no \"process\" line: not an NCCL plugin file");
    /* a task whose open line has no coll/p2p line: its enqueue never
     * returned (the process hung or died inside it) */
    for (size_t i = 0; i < b->n_opens; i++) {
        chsum_t *s = chmap_get(&b->ch, b->opens[i].id);
        if (!s)
            return MT_ERR_NOMEM;
        if (s->task)
            continue;
        if (MT_GROW(f->tasks, b->cap_tasks, f->n_tasks + 1, 64))
            return MT_ERR_NOMEM;
        f->tasks[f->n_tasks++] = b->opens[i];
        s->task = true;
    }
    size_t joined = 0;
    for (size_t i = 0; i < f->n_tasks; i++) {
        mt_nccl_task_t *t = &f->tasks[i];
        if (!b->ch.cap)
            break;
        size_t j = mix(t->id) & (b->ch.cap - 1);
        while (b->ch.s[j].id && b->ch.s[j].id != t->id)
            j = (j + 1) & (b->ch.cap - 1);
        if (b->ch.s[j].id == t->id) {
            const chsum_t *s = &b->ch.s[j];
            if (s->n) {
                t->gpu_start_ns = s->start;
                t->gpu_stop_ns = s->stop;
            }
            t->n_kch = s->n;
            t->n_kch_open = s->open;
            t->kernel_open_ns = s->kopen;
            t->kernel_seen_ns = s->kseen;
            joined += s->n;
        }
        bool started = t->n_kch || t->kernel_open_ns >= 0;
        if (t->n_kch && !t->n_kch_open && t->gpu_stop_ns >= 0)
            t->state = MT_NCCL_TASK_DONE;
        else if (started)
            t->state = MT_NCCL_TASK_RUNNING;
        else if (t->host_stop_ns >= 0)
            t->state = b->saw_kernels ? MT_NCCL_TASK_ENQUEUED : MT_NCCL_TASK_DONE; /* no channels recorded: no more to know */
        f->in_flight += t->state != MT_NCCL_TASK_DONE;
    }
    uint64_t all = 0;
    for (size_t j = 0; j < b->ch.cap; j++)
        all += b->ch.s[j].id ? b->ch.s[j].n : 0;
    f->orphan_kch += all - joined;
    if (f->n_tasks)
        qsort(f->tasks, f->n_tasks, sizeof *f->tasks, task_cmp);
    *out = f;
    b->f = NULL;
    return MT_OK;
}

mt_status_t mt_nccl_parse(const char *buf, size_t len, const char *path, mt_nccl_file_t **out,
                          mt_error_t *err)
{
    *out = NULL;
    builder_t b = {.f = calloc(1, sizeof *b.f)};
    if (!b.f)
        return mt_error_set(err, MT_ERR_NOMEM, "NCCL plugin file");
    pos_t ps = {.path = path, .buf = buf, .err = err};
    size_t done = 0;
    mt_status_t st = feed(&b, &ps, buf, len, &done, true);
    if (st == MT_OK)
        st = finish(&b, &ps, out);
    if (st == MT_ERR_NOMEM)
        mt_error_set(err, st, "NCCL plugin file");
    mt_nccl_file_free(b.f);
    free(b.ch.s);
    free(b.opens);
    return st;
}

mt_status_t mt_nccl_load(const char *path, mt_nccl_file_t **out, mt_error_t *err)
{
    return mt_nccl_load_with(path, mt_nccl_parse, out, err);
}

int32_t mt_nccl_world_rank(const mt_nccl_file_t *f, int32_t *world_size)
{
    int32_t best = -1, size = 0;
    for (size_t i = 0; i < f->n_comms; i++)
        if (f->comms[i].nranks > size) {
            size = f->comms[i].nranks;
            best = f->comms[i].rank;
        }
    if (world_size)
        *world_size = size;
    return best;
}

static const mt_nccl_comm_t *comm_of(const mt_nccl_file_t *f, uint64_t hash)
{
    for (size_t i = 0; i < f->n_comms; i++)
        if (f->comms[i].hash == hash)
            return &f->comms[i];
    return NULL;
}

mt_status_t mt_nccl_cinst_extract(const mt_nccl_file_t *f, int32_t rank, mt_strtab_t *labels, mt_cinst_t **rows,
                                  size_t *n, size_t *cap, uint64_t *skipped)
{
    int32_t world = 0;
    (void)mt_nccl_world_rank(f, &world);
    uint64_t world_hash = 0;
    for (size_t i = 0; i < f->n_comms; i++)
        if (f->comms[i].nranks == world) {
            world_hash = f->comms[i].hash;
            break;
        }
    int64_t off = f->has_offset_bound ? f->gpu_offset_bound_ns : 0;
    size_t first = *n;
    for (size_t i = 0; i < f->n_tasks; i++) {
        const mt_nccl_task_t *t = &f->tasks[i];
        if (t->gpu_start_ns < 0 || t->gpu_stop_ns < 0)
            continue; /* no GPU times: nothing to align on */
        const mt_nccl_comm_t *c = comm_of(f, t->comm);
        if (t->is_p2p && (!c || t->comm != world_hash)) {
            if (skipped)
                (*skipped)++;
            continue;
        }
        if (MT_GROW(*rows, *cap, *n + 1, 256)) {
            *n = first;
            return MT_ERR_NOMEM;
        }
        mt_cinst_t *r = &(*rows)[(*n)++];
        memset(r, 0, sizeof *r);
        r->start_ns = t->gpu_start_ns + off;
        r->end_ns = t->gpu_stop_ns + off;
        r->launch_ns = t->host_start_ns;
        r->step = -1;
        r->group = mt_hash64(&t->comm, sizeof t->comm, 0x6e63636c);
        r->in_nelems = r->out_nelems = -1;
        r->group_size = c ? c->nranks : -1;
        r->peer = -1;
        r->stream = -1;
        r->rank = rank;
        r->kind = t->kind;
        r->flags = MT_CI_PG | MT_CI_NCCL;
        r->seq = t->seq;
        if (t->is_p2p) {
            r->peer = t->root_or_peer;
            r->flags |= t->kind == MT_COLLK_RECV ? MT_CI_RECV : MT_CI_SEND;
            r->in_nelems = t->count;
        } else {
            /* NCCL counts per communicator and per collective type, so the
             * instance is (communicator, type, seq) on every rank. */
            uint64_t key[3] = {t->comm, t->kind, (uint64_t)t->seq};
            r->comms_id = mt_hash64(key, sizeof key, 0x6e63636c);
            r->flags |= MT_CI_COMMS_ID | MT_CI_SEQ;
            r->in_nelems = t->count;
        }
        char pg[MT_CI_LABEL], dtype[MT_CI_DTYPE];
        copy_trunc(pg, sizeof pg, c && c->name[0] ? c->name : "nccl");
        copy_trunc(dtype, sizeof dtype, strncmp(t->datatype, "nccl", 4) == 0 ? t->datatype + 4 : t->datatype);
        uint64_t sig[3] = {t->is_p2p ? (uint64_t)MT_COLLK_SENDRECV : t->kind, (uint64_t)t->count, 0};
        r->sig = mt_hash64(sig, sizeof sig, mt_hash64(dtype, strlen(dtype), 7));
        if (mt_strtab_intern(labels, pg, strlen(pg), &r->pg_id) != MT_OK ||
            mt_strtab_intern(labels, dtype, strlen(dtype), &r->dtype_id) != MT_OK) {
            *n = first;
            return MT_ERR_NOMEM;
        }
    }
    /* ordinals per group (one group per communicator: few), in task
     * start order */
    uint32_t *seen = calloc(f->n_comms + 1, sizeof *seen);
    if (!seen) {
        *n = first;
        return MT_ERR_NOMEM;
    }
    for (size_t i = first; i < *n; i++) {
        size_t g = 0;
        while (g < f->n_comms &&
               mt_hash64(&f->comms[g].hash, sizeof f->comms[g].hash, 0x6e63636c) != (*rows)[i].group)
            g++;
        (*rows)[i].ordinal = seen[g]++;
    }
    free(seen);
    return MT_OK;
}

bool mt_nccl_sniff(const char *buf, size_t len)
{
    static const char head[] = "{\"type\":\"process\",";
    static const char fmt[] = "\"format\":\"mergetrace-nccl\"";
    size_t hn = sizeof head - 1, fn = sizeof fmt - 1;
    if (len < hn || memcmp(buf, head, hn) != 0)
        return false;
    const char *nl = memchr(buf, '\n', len);
    size_t ll = nl ? (size_t)(nl - buf) : len;
    /* the plugin writes "format" right after "type" */
    return ll >= hn + fn && memcmp(buf + hn, fmt, fn) == 0;
}

