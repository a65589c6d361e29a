/* Operation-level multi-rank timelines (include/mergetrace/timeline.h):
 * the trace loader reads the Chrome trace; its per-event callback takes the
 * operations and their args (step, microbatch, sequence id, model chunk),
 * which the event table does not keep; thread names give each operation
 * its rank and track. Also the --timeline-map parser. */
#define _POSIX_C_SOURCE 200809L /* strndup */
#include "mergetrace/timeline.h"
#include "base/errpos.h"
#include "base/numparse.h"
#include "mergetrace/buf.h"
#include "mergetrace/input.h"
#include "mergetrace/loader.h"

#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const char *mt_tl_track_str(mt_tl_track_t k)
{
    static const char *const s[] = {"compute", "pp-comm", "tp-comm", "dp-comm", "misc"};
    return (unsigned)k < MT_TL_TRACK_COUNT_ ? s[k] : "unknown";
}

/* ---- the mapping file ---- */

enum { ARG_STEP = 0, ARG_MB, ARG_SEQ, ARG_CHUNK, ARG_COUNT_ };
static const char *const arg_names[ARG_COUNT_] = {"step", "mb_id", "seq_id", "model_chunk"};

typedef struct map_track {
    regex_t re;
    int track;
} map_track_t;

typedef struct map_type {
    char *from, *to;
} map_type_t;

struct mt_timeline_map {
    map_track_t *tracks;
    size_t n_tracks, cap_tracks;
    map_type_t *types;
    size_t n_types, cap_types;
    char *args[ARG_COUNT_]; /* another key for each field; NULL: the default name only */
};

void mt_timeline_map_free(mt_timeline_map_t *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n_tracks; i++)
        regfree(&m->tracks[i].re);
    for (size_t i = 0; i < m->n_types; i++) {
        free(m->types[i].from);
        free(m->types[i].to);
    }
    for (int i = 0; i < ARG_COUNT_; i++)
        free(m->args[i]);
    free(m->tracks);
    free(m->types);
    free(m);
}

/* The next whitespace-separated word of [*p, e); the last word of a line
 * (rest != 0) runs to the end of the line, trailing blanks cut. */
static int word(const char **p, const char *e, const char **w, size_t *n, int rest)
{
    const char *q = *p;
    while (q < e && (*q == ' ' || *q == '\t'))
        q++;
    if (q >= e)
        return -1;
    const char *s = q;
    if (rest) {
        q = e;
        while (q > s && (q[-1] == ' ' || q[-1] == '\t' || q[-1] == '\r'))
            q--;
    } else {
        while (q < e && *q != ' ' && *q != '\t')
            q++;
    }
    *w = s;
    *n = (size_t)(q - s);
    *p = q;
    return *n ? 0 : -1;
}

static mt_status_t map_fail(mt_error_t *err, const char *path, const char *text, const char *at, const char *what)
{
    mt_error_set(err, MT_ERR_FORMAT, "%s", what);
    mt_errpos_in(err, path, text, (size_t)(at - text));
    return MT_ERR_FORMAT;
}

mt_status_t mt_timeline_map_parse(const char *text, size_t len, const char *path, mt_timeline_map_t **out,
                                  mt_error_t *err)
{
    *out = NULL;
    mt_timeline_map_t *m = calloc(1, sizeof *m);
    if (!m)
        return mt_error_set(err, MT_ERR_NOMEM, "timeline map");
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol)
            eol = end;
        const char *hash = memchr(p, '#', (size_t)(eol - p));
        const char *e = hash ? hash : eol, *q = p, *w;
        size_t n;
        mt_status_t st = MT_OK;
        if (word(&q, e, &w, &n, 0) == 0) {
            const char *w2, *w3;
            size_t n2, n3;
            if (n == 5 && memcmp(w, "track", 5) == 0) {
                /* the regex may hold blanks: the track is the last word */
                const char *t = e;
                while (t > q && (t[-1] == ' ' || t[-1] == '\t' || t[-1] == '\r'))
                    t--;
                const char *te = t;
                while (t > q && t[-1] != ' ' && t[-1] != '\t')
                    t--;
                int track = -1;
                for (int k = 0; k < MT_TL_TRACK_COUNT_; k++)
                    if (strlen(mt_tl_track_str((mt_tl_track_t)k)) == (size_t)(te - t) &&
                        memcmp(t, mt_tl_track_str((mt_tl_track_t)k), (size_t)(te - t)) == 0)
                        track = k;
                const char *r0 = q;
                while (r0 < t && (*r0 == ' ' || *r0 == '\t'))
                    r0++;
                const char *r1 = t;
                while (r1 > r0 && (r1[-1] == ' ' || r1[-1] == '\t'))
                    r1--;
                if (track < 0 || r1 <= r0) {
                    st = map_fail(err, path, text, p,
                                  "expected \"track <regex> <compute|pp-comm|tp-comm|dp-comm|misc>\"");
                } else if (MT_GROW(m->tracks, m->cap_tracks, m->n_tracks + 1, 4)) {
                    st = mt_error_set(err, MT_ERR_NOMEM, "timeline map");
                } else {
                    char *re = strndup(r0, (size_t)(r1 - r0));
                    if (!re) {
                        st = mt_error_set(err, MT_ERR_NOMEM, "timeline map");
                    } else if (regcomp(&m->tracks[m->n_tracks].re, re, REG_EXTENDED)) {
                        st = map_fail(err, path, text, r0, "a POSIX extended regular expression");
                    } else {
                        m->tracks[m->n_tracks++].track = track;
                    }
                    free(re);
                }
            } else if (n == 4 && memcmp(w, "type", 4) == 0) {
                if (word(&q, e, &w2, &n2, 0) || word(&q, e, &w3, &n3, 1)) {
                    st = map_fail(err, path, text, p, "expected \"type <event name> <operation type>\"");
                } else if (MT_GROW(m->types, m->cap_types, m->n_types + 1, 8)) {
                    st = mt_error_set(err, MT_ERR_NOMEM, "timeline map");
                } else {
                    map_type_t *x = &m->types[m->n_types];
                    x->from = strndup(w2, n2);
                    x->to = strndup(w3, n3);
                    m->n_types++;
                    if (!x->from || !x->to)
                        st = mt_error_set(err, MT_ERR_NOMEM, "timeline map");
                }
            } else if (n == 3 && memcmp(w, "arg", 3) == 0) {
                int k = -1;
                if (word(&q, e, &w2, &n2, 0) == 0 && word(&q, e, &w3, &n3, 1) == 0)
                    for (int a = 0; a < ARG_COUNT_; a++)
                        if (strlen(arg_names[a]) == n3 && memcmp(w3, arg_names[a], n3) == 0)
                            k = a;
                if (k < 0) {
                    st = map_fail(err, path, text, p, "expected \"arg <key> <step|mb_id|seq_id|model_chunk>\"");
                } else {
                    free(m->args[k]);
                    if (!(m->args[k] = strndup(w2, n2)))
                        st = mt_error_set(err, MT_ERR_NOMEM, "timeline map");
                }
            } else {
                st = map_fail(err, path, text, w, "\"track\", \"type\", \"arg\" or a '#' comment");
            }
        }
        if (st != MT_OK) {
            mt_timeline_map_free(m);
            return st;
        }
        p = eol + (eol < end);
    }
    *out = m;
    return MT_OK;
}

/* ---- loading ---- */

/* An operation as read, before its thread is known. */
typedef struct raw_op {
    int64_t ts, dur, pid, tid, a[ARG_COUNT_];
    uint32_t name;
    uint32_t pad_;
} raw_op_t;

typedef struct ctx {
    const mt_timeline_map_t *map;
    raw_op_t *ops;
    size_t n, cap;
    uint64_t other;
    const char *path;
} ctx_t;

/* The integer value of key k of the args object in the event text, or
 * -1 when absent. Only the object's first level is read; nested values
 * and strings are skipped. */
static void read_args(const char *s, size_t len, const mt_timeline_map_t *map, int64_t *a)
{
    for (int k = 0; k < ARG_COUNT_; k++)
        a[k] = INT64_MIN;
    const char *e = s + len, *p = s;
    /* find the "args" key at the event's first level */
    int depth = 0;
    const char *obj = NULL;
    while (p < e && !obj) {
        char c = *p;
        if (c == '"') {
            const char *k0 = ++p;
            while (p < e && *p != '"')
                p += *p == '\\' ? 2 : 1;
            size_t kl = (size_t)(p - k0);
            p++;
            if (depth == 1 && kl == 4 && memcmp(k0, "args", 4) == 0) {
                while (p < e && (*p == ' ' || *p == ':' || *p == '\t' || *p == '\n' || *p == '\r'))
                    p++;
                if (p < e && *p == '{')
                    obj = p;
            }
            continue;
        }
        depth += (c == '{' || c == '[') - (c == '}' || c == ']');
        p++;
    }
    if (!obj)
        return;
    p = obj + 1;
    depth = 1;
    while (p < e && depth > 0) {
        char c = *p;
        if (c == '"') {
            const char *k0 = ++p;
            while (p < e && *p != '"')
                p += *p == '\\' ? 2 : 1;
            size_t kl = (size_t)(p - k0);
            p++;
            const char *v = p;
            while (v < e && (*v == ' ' || *v == '\t' || *v == '\n' || *v == '\r'))
                v++;
            if (depth != 1 || v >= e || *v != ':')
                continue;
            v++;
            while (v < e && (*v == ' ' || *v == '\t' || *v == '\n' || *v == '\r'))
                v++;
            for (int k = 0; k < ARG_COUNT_; k++) {
                const char *want = arg_names[k];
                int hit = strlen(want) == kl && memcmp(k0, want, kl) == 0;
                if (!hit && map && map->args[k])
                    hit = strlen(map->args[k]) == kl && memcmp(k0, map->args[k], kl) == 0;
                if (!hit)
                    continue;
                const char *n0 = v;
                if (n0 < e && *n0 == '-')
                    n0++;
                const char *n1 = n0;
                while (n1 < e && (unsigned)(*n1 - '0') <= 9)
                    n1++;
                int64_t x;
                if (n1 > n0 && mt_parse_int64(v, (size_t)(n1 - v), &x) == MT_OK)
                    a[k] = x;
            }
            p = v;
            continue;
        }
        depth += (c == '{' || c == '[') - (c == '}' || c == ']');
        p++;
    }
}

static mt_status_t on_event(void *vc, const mt_trace_t *t, const mt_event_t *ev, const mt_raw_event_t *raw,
                            mt_error_t *err)
{
    (void)t;
    ctx_t *c = vc;
    if (ev->ph != MT_PH_X) {
        c->other++;
        return MT_OK;
    }
    if (MT_GROW(c->ops, c->cap, c->n + 1, 4096))
        return mt_error_set(err, MT_ERR_NOMEM, "timeline operations");
    raw_op_t *o = &c->ops[c->n++];
    *o = (raw_op_t){
        .ts = ev->ts, .dur = ev->dur, .pid = mt_event_pid(t, ev), .tid = mt_event_tid(t, ev), .name = ev->name};
    read_args(raw->text, raw->len, c->map, o->a);
    if (o->a[ARG_STEP] == INT64_MIN)
        return mt_error_set(err, MT_ERR_FORMAT, "an operation without an integer args.step (operation-level timeline)");
    return MT_OK;
}

/* A thread: (pid, tid) -> rank coordinates and track. */
typedef struct thr {
    int64_t pid, tid;
    int32_t dp, pp, tp, track; /* track -1: not a usable name */
} thr_t;

static int thr_cmp(const void *pa, const void *pb)
{
    const thr_t *a = pa, *b = pb;
    if (a->pid != b->pid)
        return a->pid < b->pid ? -1 : 1;
    return (a->tid > b->tid) - (a->tid < b->tid);
}

/* The integer after "<key> " in s, or -1. */
static int32_t after(const char *s, size_t n, const char *key)
{
    size_t kl = strlen(key);
    for (size_t i = 0; i + kl < n; i++)
        if (memcmp(s + i, key, kl) == 0) {
            int64_t v = 0;
            size_t j = i + kl;
            if (j >= n || (unsigned)(s[j] - '0') > 9)
                return -1;
            while (j < n && (unsigned)(s[j] - '0') <= 9 && v < 1000000000)
                v = v * 10 + (s[j++] - '0');
            return (int32_t)v;
        }
    return -1;
}

static void thread_of(const mt_timeline_map_t *map, const char *s, size_t n, thr_t *th)
{
    th->track = -1;
    th->pp = after(s, n, "PP rank ");
    th->tp = after(s, n, "TP rank ");
    char buf[256];
    size_t bl = n < sizeof buf - 1 ? n : sizeof buf - 1;
    memcpy(buf, s, bl);
    buf[bl] = '\0';
    for (size_t i = 0; map && i < map->n_tracks; i++) {
        regmatch_t mm[4];
        if (regexec(&map->tracks[i].re, buf, 4, mm, 0) != 0)
            continue;
        th->track = map->tracks[i].track;
        int32_t *dst[3] = {&th->pp, &th->tp, &th->dp};
        for (int k = 1; k < 4; k++)
            if (mm[k].rm_so >= 0) {
                int64_t v;
                if (mt_parse_int64(buf + mm[k].rm_so, (size_t)(mm[k].rm_eo - mm[k].rm_so), &v) == MT_OK && v >= 0 &&
                    v < 1000000)
                    *dst[k - 1] = (int32_t)v;
            }
        return;
    }
    /* the artifact's layout: the track is the text after the last ", " */
    size_t k = n;
    while (k > 0 && s[k - 1] != ' ')
        k--;
    for (int t = 0; t < MT_TL_TRACK_COUNT_; t++) {
        const char *w = mt_tl_track_str((mt_tl_track_t)t);
        if (strlen(w) == n - k && memcmp(s + k, w, n - k) == 0)
            th->track = t;
    }
}

static int op_cmp(const void *pa, const void *pb)
{
    const mt_tl_op_t *a = pa, *b = pb;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    if (a->start_ns != b->start_ns)
        return a->start_ns < b->start_ns ? -1 : 1;
    return (a->end_ns > b->end_ns) - (a->end_ns < b->end_ns);
}

void mt_timeline_free(mt_timeline_t *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n_types; i++)
        free(t->types[i]);
    free(t->types);
    free(t->ops);
    free(t->ranks);
    free(t);
}

static const char *find(const char *s, size_t n, const char *w)
{
    size_t wl = strlen(w);
    for (size_t i = 0; i + wl <= n; i++)
        if (s[i] == w[0] && memcmp(s + i, w, wl) == 0)
            return s + i;
    return NULL;
}

bool mt_timeline_probe(const char *buf, size_t len)
{
    size_t i = 0;
    while (i < len && (buf[i] == ' ' || buf[i] == '\n' || buf[i] == '\r' || buf[i] == '\t'))
        i++;
    if (i >= len || buf[i] != '[')
        return false;
    const char *a = find(buf + i, len - i, "\"args\"");
    return a && find(a, len - (size_t)(a - buf), "\"step\"") != NULL;
}

static mt_status_t at_op(mt_error_t *err, const char *path, const raw_op_t *o, const char *what)
{
    mt_error_set(err, MT_ERR_FORMAT, "%s: the operation at ts %lld ns (pid %lld, tid %lld)", what, (long long)o->ts,
                 (long long)o->pid, (long long)o->tid);
    mt_errpos_set(err, path, -1, -1, -1);
    return MT_ERR_FORMAT;
}

mt_status_t mt_timeline_load(const char *path, const mt_timeline_map_t *map, mt_timeline_t **out, mt_error_t *err)
{
    *out = NULL;
    ctx_t c = {.map = map, .path = path};
    mt_load_opts_t lo;
    mt_load_opts_init(&lo);
    lo.no_classify = lo.no_link = true;
    lo.on_event = on_event;
    lo.on_event_ctx = &c;
    mt_trace_t *t = NULL;
    thr_t *th = NULL;
    mt_timeline_t *tl = NULL;
    uint32_t *type_of = NULL;
    mt_status_t st = mt_trace_load(path, &lo, &t, err);
    if (st != MT_OK)
        goto out;
    st = MT_ERR_NOMEM;
    /* thread names and data-parallel ranks from the metadata */
    size_t nth = 0, capth = 0;
    uint32_t tn_id = 0, pn_id = 0;
    int has_tn = mt_strtab_find(t->strings, "thread_name", 11, &tn_id);
    int has_pn = mt_strtab_find(t->strings, "process_name", 12, &pn_id);
    for (size_t i = 0; i < t->n_meta; i++) {
        const mt_meta_t *m = &t->meta[i];
        const mt_event_t *e = &t->events[m->event - 1];
        if (!m->str || !has_tn || e->name != tn_id)
            continue;
        size_t n;
        const char *s = mt_strtab_get(t->strings, m->str, &n);
        if (MT_GROW(th, capth, nth + 1, 64))
            goto out;
        thr_t *x = &th[nth++];
        *x = (thr_t){.pid = mt_event_pid(t, e), .tid = mt_event_tid(t, e), .dp = -1};
        thread_of(map, s, n, x);
    }
    for (size_t i = 0; i < t->n_meta && has_pn; i++) {
        const mt_meta_t *m = &t->meta[i];
        const mt_event_t *e = &t->events[m->event - 1];
        if (!m->str || e->name != pn_id)
            continue;
        size_t n;
        const char *s = mt_strtab_get(t->strings, m->str, &n);
        int32_t d = after(s, n, "DP rank [");
        if (d < 0)
            d = after(s, n, "DP rank ");
        for (size_t k = 0; k < nth && d >= 0; k++)
            if (th[k].pid == mt_event_pid(t, e) && th[k].dp < 0)
                th[k].dp = d;
    }
    for (size_t k = 0; k < nth; k++) {
        if (th[k].dp < 0)
            th[k].dp = th[k].pid >= 0 && th[k].pid < 1000000 ? (int32_t)th[k].pid : 0;
        if (th[k].tp < 0)
            th[k].tp = 0;
        if (th[k].pp < 0)
            th[k].pp = 0;
    }
    if (nth)
        qsort(th, nth, sizeof *th, thr_cmp);
    if (!c.n) {
        st = mt_error_set(err, MT_ERR_FORMAT, "an operation-level timeline with no operation (\"X\" events)");
        mt_errpos_set(err, path, -1, -1, -1);
        goto out;
    }
    tl = calloc(1, sizeof *tl);
    if (!tl)
        goto out;
    tl->skipped = c.other;
    /* sizes from the threads that hold operations */
    int32_t mdp = 0, mpp = 0, mtp = 0;
    for (size_t i = 0; i < c.n; i++) {
        thr_t key = {.pid = c.ops[i].pid, .tid = c.ops[i].tid};
        thr_t *x = nth ? bsearch(&key, th, nth, sizeof *th, thr_cmp) : NULL;
        if (!x || x->track < 0) {
            st = at_op(err, path, &c.ops[i],
                       x ? "an operation on a thread whose name gives no track (compute, pp-comm, tp-comm, dp-comm, "
                           "misc; see --timeline-map)"
                         : "an operation on a thread without a thread_name (\"PP rank p, TP rank t, <track>\")");
            goto out;
        }
        if (x->dp > mdp)
            mdp = x->dp;
        if (x->pp > mpp)
            mpp = x->pp;
        if (x->tp > mtp)
            mtp = x->tp;
    }
    tl->dp_size = mdp + 1;
    tl->pp_size = mpp + 1;
    tl->tp_size = mtp + 1;
    size_t world = (size_t)tl->dp_size * (size_t)tl->pp_size * (size_t)tl->tp_size;
    if (world > (1u << 20)) {
        st = mt_error_set(err, MT_ERR_LIMIT, "an operation-level timeline of %zu ranks (at most 2^20)", world);
        goto out;
    }
    int32_t *idx = malloc(world * sizeof *idx);
    if (!idx)
        goto out;
    for (size_t r = 0; r < world; r++)
        idx[r] = -1;
    tl->ranks = malloc(world * sizeof *tl->ranks);
    tl->ops = malloc(c.n * sizeof *tl->ops);
    uint32_t n_names = mt_strtab_count(t->strings);
    type_of = calloc(n_names ? n_names : 1, sizeof *type_of); /* strtab id -> type + 1 */
    if (!tl->ranks || !tl->ops || !type_of) {
        free(idx);
        goto out;
    }
    for (size_t i = 0; i < c.n; i++) {
        const raw_op_t *o = &c.ops[i];
        thr_t key = {.pid = o->pid, .tid = o->tid};
        const thr_t *x = bsearch(&key, th, nth, sizeof *th, thr_cmp);
        size_t g = ((size_t)x->pp * (size_t)tl->dp_size + (size_t)x->dp) * (size_t)tl->tp_size + (size_t)x->tp;
        if (idx[g] < 0) {
            idx[g] = 0; /* numbered below, in rank order */
            tl->ranks[tl->n_ranks++] = (mt_tl_rank_t){(int32_t)g, x->dp, x->pp, x->tp};
        }
        if (o->name >= n_names) {
            free(idx);
            st = at_op(err, path, o, "an operation without a name");
            goto out;
        }
        if (!type_of[o->name]) {
            size_t n;
            const char *s = mt_strtab_get(t->strings, o->name, &n);
            for (size_t k = 0; map && k < map->n_types; k++)
                if (strlen(map->types[k].from) == n && memcmp(map->types[k].from, s, n) == 0) {
                    s = map->types[k].to;
                    n = strlen(s);
                    break;
                }
            size_t k = 0;
            while (k < tl->n_types && !(strlen(tl->types[k]) == n && memcmp(tl->types[k], s, n) == 0))
                k++;
            if (k == tl->n_types) {
                if (k >= UINT16_MAX) {
                    free(idx);
                    st = at_op(err, path, o, "more than 65535 operation types");
                    goto out;
                }
                char **nt = realloc(tl->types, (k + 1) * sizeof *nt);
                if (!nt) {
                    free(idx);
                    goto out;
                }
                tl->types = nt;
                if (!(tl->types[k] = strndup(s, n))) {
                    free(idx);
                    goto out;
                }
                tl->n_types++;
            }
            type_of[o->name] = (uint32_t)k + 1;
        }
        tl->ops[i] = (mt_tl_op_t){.start_ns = o->ts,
                                  .end_ns = o->ts + o->dur,
                                  .step = o->a[ARG_STEP],
                                  .rank = (int32_t)g, /* global for now */
                                  .chunk = o->a[ARG_CHUNK] == INT64_MIN ? -1 : (int32_t)o->a[ARG_CHUNK],
                                  .mb = o->a[ARG_MB] == INT64_MIN ? -1 : (int32_t)o->a[ARG_MB],
                                  .seq = o->a[ARG_SEQ] == INT64_MIN ? -1 : (int32_t)o->a[ARG_SEQ],
                                  .type = (uint16_t)(type_of[o->name] - 1),
                                  .track = (uint8_t)x->track};
    }
    tl->n_ops = c.n;
    /* ranks ascending, ops by (rank index, start) */
    int32_t k = 0;
    for (size_t g = 0; g < world; g++)
        if (idx[g] >= 0)
            idx[g] = k++;
    for (size_t r = 0; r < tl->n_ranks; r++) {
        mt_tl_rank_t v = tl->ranks[r];
        size_t j = r;
        for (; j > 0 && tl->ranks[j - 1].rank > v.rank; j--)
            tl->ranks[j] = tl->ranks[j - 1];
        tl->ranks[j] = v;
    }
    for (size_t i = 0; i < tl->n_ops; i++)
        tl->ops[i].rank = idx[tl->ops[i].rank];
    free(idx);
    qsort(tl->ops, tl->n_ops, sizeof *tl->ops, op_cmp);
    *out = tl;
    tl = NULL;
    st = MT_OK;
out:
    if (st == MT_ERR_NOMEM && err && err->code == MT_OK)
        mt_error_set(err, MT_ERR_NOMEM, "operation-level timeline");
    mt_timeline_free(tl);
    free(type_of);
    free(th);
    free(c.ops);
    mt_trace_free(t);
    return st;
}

bool mt_timeline_probe_file(const char *path)
{
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode))
        return false;
    mt_input_t *in = NULL;
    mt_error_t err;
    mt_error_clear(&err);
    if (mt_input_open(path, NULL, 0, &in, &err) != MT_OK)
        return false;
    char *buf = malloc(65536);
    size_t n = 0;
    bool yes = false;
    if (buf) {
        while (n < 65536) {
            size_t got = 0;
            bool trunc = false;
            if (mt_input_read(in, buf + n, 65536 - n, &got, &trunc, &err) != MT_OK || !got)
                break;
            n += got;
        }
        yes = mt_timeline_probe(buf, n);
    }
    free(buf);
    mt_input_close(in);
    return yes;
}
