/* One Flight Recorder dump (pickle or JSON) -> mt_fr_dump_t, through the
 * JSON cursor (base/jdoc.c) for both encodings, entries built as read; what a file is
 * (mt_fr_probe), the rank in its name, and a dump packed into bytes and
 * back for the trip between processes. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/jdoc.h"
#include "base/errpos.h"
#include "fr/fr.h"
#include "fr/fr_pickle.h"
#include "mergetrace/buf.h"
#include "mergetrace/rank.h"

static mt_status_t bad(mt_error_t *err, const char *path, const char *what, long idx)
{
    if (idx >= 0)
        mt_error_set(err, MT_ERR_FORMAT, "entry %ld: %s", idx, what);
    else
        mt_error_set(err, MT_ERR_FORMAT, "%s", what);
    mt_errpos_set(err, path, -1, -1, -1);
    return MT_ERR_FORMAT;
}

static void copy_str(const mt_jdoc_t *d, uint32_t i, char *dst, size_t cap)
{
    size_t n = 0;
    const char *s = i ? mt_jdoc_str(d, i, &n) : NULL;
    if (!s)
        s = "", n = 0;
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, s, n);
    dst[n] = 0;
}


/* Sum over the list of shapes at the root of d of each shape's product. */
static uint64_t numel(const mt_jdoc_t *d)
{
    uint64_t sum = 0;
    for (uint32_t s = mt_jdoc_first(d, 0); s; s = mt_jdoc_next(d, s)) {
        uint64_t p = 1, x;
        for (uint32_t k = mt_jdoc_first(d, s); k; k = mt_jdoc_next(d, k))
            p *= mt_jdoc_u64(d, k, &x) ? x : 0;
        sum += p;
    }
    return sum;
}

static void copy_bytes(const char *s, size_t n, char *dst, size_t cap)
{
    if (!s)
        n = 0;
    if (n >= cap)
        n = cap - 1;
    if (n)
        memcpy(dst, s, n);
    dst[n] = 0;
}

_Static_assert(sizeof(mt_fr_entry_t) <= 88, "an entry is held for every entry of every dump read");

mt_status_t mt_fr_intern(mt_fr_dump_t *d, const char *s, size_t n, size_t cap, uint32_t *id)
{
    if (!s)
        n = 0;
    if (n >= cap)
        n = cap - 1;
    const char *z = n ? memchr(s, 0, n) : NULL;
    if (z)
        n = (size_t)(z - s);
    if (!n) {
        *id = MT_STR_NONE;
        return MT_OK;
    }
    if (!d->strs && !(d->strs = mt_strtab_create()))
        return MT_ERR_NOMEM;
    return mt_strtab_intern(d->strs, s, n, id);
}

/* The string at node i of doc (none: "") interned as copy_str would cut it. */
static mt_status_t intern_str(mt_fr_dump_t *o, const mt_jdoc_t *doc, uint32_t i, size_t cap, uint32_t *id)
{
    size_t n = 0;
    const char *s = i ? mt_jdoc_str(doc, i, &n) : NULL;
    return mt_fr_intern(o, s, s ? n : 0, cap, id);
}

/* The ranks in s[0..n) (up to a NUL), every run of digits one. */
static mt_status_t parse_ranks(const char *s, size_t n, mt_fr_pg_t *pg)
{
    int cap = 0;
    const char *end = s + n;
    for (const char *c = s; c < end && *c;) {
        if (*c >= '0' && *c <= '9') {
            long v = 0;
            for (; c < end && *c >= '0' && *c <= '9'; c++)
                if ((v = v * 10 + (*c - '0')) >= MT_FR_MAX_RANKS)
                    return MT_ERR_RANGE;
            if (v >= MT_FR_MAX_RANKS || pg->nranks >= MT_FR_MAX_RANKS)
                return MT_ERR_RANGE;
            if (pg->nranks == cap) {
                cap = cap ? 2 * cap : 8;
                int *r = realloc(pg->ranks, (size_t)cap * sizeof *r);
                if (!r)
                    return MT_ERR_NOMEM;
                pg->ranks = r;
            }
            pg->ranks[pg->nranks++] = (int)v;
        } else
            c++;
    }
    return MT_OK;
}

/* pg_config, an object at the root of d, into o->pgs. */
static mt_status_t read_pgs(const mt_jdoc_t *d, const char *path, mt_fr_dump_t *o, mt_error_t *err)
{
    const mt_jnode_t *cn = mt_jdoc_node(d, 0);
    o->pgs = calloc(cn->len ? cn->len : 1, sizeof *o->pgs);
    if (!o->pgs)
        return MT_ERR_NOMEM;
    for (uint32_t g = mt_jdoc_first(d, 0); g; g = mt_jdoc_next(d, g)) {
        mt_fr_pg_t *pg = &o->pgs[o->npgs++];
        uint32_t nm = mt_jdoc_get(d, g, "name");
        if (nm)
            copy_str(d, nm, pg->name, sizeof pg->name);
        else
            snprintf(pg->name, sizeof pg->name, "%s", mt_jdoc_key(d, g));
        copy_str(d, mt_jdoc_get(d, g, "desc"), pg->desc, sizeof pg->desc);
        size_t rn = 0;
        const char *rs = mt_jdoc_str(d, mt_jdoc_get(d, g, "ranks"), &rn);
        if (!rs)
            return bad(err, path, "pg_config: expected a string \"ranks\"", -1);
        mt_status_t st = parse_ranks(rs, rn, pg);
        if (st == MT_ERR_RANGE)
            return bad(err, path, "pg_config: a rank of 4096 or more, or more than 4096 ranks", -1);
        if (st)
            return st;
    }
    return MT_OK;
}

/* The members of an entry the reader takes. */
enum {
    K_RECORD_ID,
    K_SEQ,
    K_P2P_SEQ,
    K_CREATED,
    K_STARTED,
    K_COMPLETED,
    K_TIMEOUT,
    K_STATE,
    K_IS_P2P,
    K_PG,
    K_NAME,
    K_DTYPES,
    K_IN_SIZES,
    K_OUT_SIZES,
    K_COUNT
};

/* The member named k[0..n) as one of K_*, or -1: by its length, then
 * compared with the names of that length (constant lengths: the compiler
 * compares words; the 7 members read past share lengths with them). */
static int entry_key(const char *k, size_t n)
{
#define IS(lit) (!memcmp(k, lit, sizeof lit - 1))
    switch (n) {
    case 5: return IS("state") ? K_STATE : -1;
    case 6: return IS("is_p2p") ? K_IS_P2P : -1;
    case 9: return IS("record_id") ? K_RECORD_ID : -1;
    case 10: return IS("p2p_seq_id") ? K_P2P_SEQ : IS("timeout_ms") ? K_TIMEOUT : -1;
    case 11: return IS("input_sizes") ? K_IN_SIZES : -1;
    case 12: return IS("input_dtypes") ? K_DTYPES : IS("output_sizes") ? K_OUT_SIZES : -1;
    case 13: return IS("process_group") ? K_PG : -1;
    case 14: return IS("profiling_name") ? K_NAME : -1;
    case 15: return IS("time_created_ns") ? K_CREATED : -1;
    case 17: return IS("collective_seq_id") ? K_SEQ : -1;
    case 26: return IS("time_discovered_started_ns") ? K_STARTED : -1;
    case 28: return IS("time_discovered_completed_ns") ? K_COMPLETED : -1;
    default: return -1;
    }
#undef IS
}

/* *x empty, its padding included: the readings are compared byte for byte
 * (test_fr_pickle, the fuzz target), and a compound literal need not set
 * padding (clang 14's did not: the fast paths' entries differed from the
 * cursor's in their last 6 bytes). */
static void entry_init(mt_fr_entry_t *x)
{
    memset(x, 0, sizeof *x);
    x->created = x->started = x->completed = MT_FR_NONE;
}

/* A time: null or 0 (the JSON encoding's "not discovered") is none;
 * *ok false when it is neither null nor an integer. */
static mt_status_t get_time(mt_jcur_t *c, int64_t *v, bool *ok)
{
    mt_jtype_t t;
    mt_status_t st = mt_jcur_peek(c, &t);
    if (st != MT_OK)
        return st;
    *ok = true;
    if (t == MT_J_NULL) {
        *v = MT_FR_NONE;
        return mt_jcur_skip(c);
    }
    st = mt_jcur_i64(c, v, ok);
    if (*ok && *v == 0)
        *v = MT_FR_NONE;
    return st;
}

/* One entry (the cursor at its value) into *x: the first of each member
 * counts (as a lookup by name would find it), the rest are read past.
 * MT_ERR_FORMAT (said) when a member is missing or of the wrong type. */
static mt_status_t read_entry(mt_jcur_t *c, const char *path, long idx, mt_fr_dump_t *o, mt_fr_entry_t *x,
                              mt_error_t *err)
{
    mt_jtype_t t;
    mt_status_t st = mt_jcur_peek(c, &t);
    if (st != MT_OK)
        return st;
    if (t != MT_J_OBJ)
        return bad(err, path, "expected an object", idx);
    if ((st = mt_jcur_enter(c, MT_J_OBJ)) != MT_OK)
        return st;
    entry_init(x);
    bool seen[K_COUNT] = {false}, rid_ok = false, seq_ok = false, times_ok = true, state = false, pg_ok = false;
    int64_t timeout = 0;
    for (;;) {
        bool more, ok;
        const char *k, *s;
        size_t kn, sn;
        const mt_jdoc_t *d;
        if ((st = mt_jcur_next(c, &more, &k, &kn)) != MT_OK)
            return st;
        if (!more)
            break;
        int key = entry_key(k, kn);
        if (key < 0 || seen[key]) {
            if ((st = mt_jcur_skip(c)) != MT_OK)
                return st;
            continue;
        }
        seen[key] = true;
        switch (key) {
        case K_RECORD_ID: st = mt_jcur_u64(c, &x->record_id, &rid_ok); break;
        case K_SEQ: st = mt_jcur_i64(c, &x->seq, &seq_ok); break;
        case K_P2P_SEQ:
            if ((st = mt_jcur_i64(c, &x->p2p_seq, &ok)) == MT_OK && !ok)
                x->p2p_seq = 0;
            break;
        case K_CREATED:
        case K_STARTED:
        case K_COMPLETED:
            st = get_time(c, key == K_CREATED ? &x->created : key == K_STARTED ? &x->started : &x->completed, &ok);
            times_ok &= ok;
            break;
        case K_TIMEOUT:
            if ((st = mt_jcur_i64(c, &timeout, &ok)) == MT_OK && !ok)
                timeout = 0;
            break;
        case K_STATE:
            if ((st = mt_jcur_str(c, &s, &sn)) == MT_OK && s) {
                state = true;
                x->state = sn == 9 && !memcmp(s, "completed", 9) ? MT_FR_COMPLETED
                           : sn == 7 && !memcmp(s, "started", 7) ? MT_FR_STARTED
                                                                 : MT_FR_SCHEDULED;
            }
            break;
        case K_IS_P2P:
            if ((st = mt_jcur_peek(c, &t)) == MT_OK)
                x->is_p2p = t == MT_J_TRUE;
            if (st == MT_OK)
                st = mt_jcur_skip(c);
            break;
        case K_NAME:
            if ((st = mt_jcur_str(c, &s, &sn)) == MT_OK)
                st = mt_fr_intern(o, s, sn, MT_FR_NAME_MAX + 1, &x->name);
            break;
        case K_PG:
        case K_DTYPES:
            if ((st = mt_jcur_value(c, &d)) != MT_OK)
                break;
            if (key == K_PG) {
                pg_ok = mt_jdoc_type(d, 0) == MT_J_ARR && mt_jdoc_str(d, mt_jdoc_first(d, 0), NULL);
                if (pg_ok)
                    st = intern_str(o, d, mt_jdoc_first(d, 0), MT_FR_PG_MAX + 1, &x->pg);
            } else
                st = intern_str(o, d, mt_jdoc_first(d, 0), MT_FR_DTYPE_MAX + 1, &x->dtype);
            break;
        case K_IN_SIZES:
        case K_OUT_SIZES:
            if ((st = mt_jcur_value(c, &d)) == MT_OK)
                *(key == K_IN_SIZES ? &x->in_numel : &x->out_numel) = numel(d);
            break;
        }
        if (st != MT_OK)
            return st;
    }
    /* the checks in the order the reader has always made them */
    if (!rid_ok)
        return bad(err, path, "expected an unsigned integer \"record_id\"", idx);
    if (!seq_ok)
        return bad(err, path, "expected an integer \"collective_seq_id\"", idx);
    if (!times_ok)
        return bad(err, path, "expected integer ns or null in the time_* fields", idx);
    /* bounds that keep every difference and sum of the analysis in int64 */
    if ((x->created != MT_FR_NONE && (x->created < 0 || x->created >= MT_FR_TIME_MAX)) ||
        (x->started != MT_FR_NONE && (x->started < 0 || x->started >= MT_FR_TIME_MAX)) ||
        (x->completed != MT_FR_NONE && (x->completed < 0 || x->completed >= MT_FR_TIME_MAX)))
        return bad(err, path, "a time_* value below 0 or 2^62 ns or more", idx);
    if (timeout < 0 || timeout > 1000000000)
        return bad(err, path, "timeout_ms below 0 or over 10^9", idx);
    x->timeout_ms = (int32_t)timeout;
    if (x->seq < 0)
        return bad(err, path, "a negative collective_seq_id", idx);
    if (!state)
        return bad(err, path, "expected a string \"state\"", idx);
    if (!pg_ok)
        return bad(err, path, "expected \"process_group\" as [name, desc]", idx);
    return MT_OK;
}

/* ---- the fast path: an entry straight from the text ---- */

/* The names the fast path interned last, per field (a dump holds a few
 * names over thousands of entries: one compare finds most of them, where
 * mt_fr_intern hashes the bytes and probes the table). s[k] points into
 * the dump's table, which moves when a name is added: then every s[k] is
 * looked up again. */
typedef struct recent {
    const char *s[8];
    uint32_t len[8], id[8];
    unsigned n, next;
} recent_t;

/* mt_fr_intern through r (one per field; all of them in rs[0..nrs) for the
 * refresh when the table grows). */
static mt_status_t intern_recent(mt_fr_dump_t *o, recent_t *r, recent_t *rs, size_t nrs, const char *s, size_t n,
                                 size_t cap, uint32_t *id)
{
    if (n < cap) /* else cut: through mt_fr_intern */
        for (unsigned k = 0; k < r->n; k++)
            if (r->len[k] == n && !memcmp(r->s[k], s, n)) { /* the cached name has no NUL: neither has s */
                *id = r->id[k];
                return MT_OK;
            }
    uint32_t before = o->strs ? mt_strtab_count(o->strs) : 0;
    mt_status_t st = mt_fr_intern(o, s, n, cap, id);
    if (st != MT_OK || *id == MT_STR_NONE)
        return st;
    if (mt_strtab_count(o->strs) != before) /* the table may have moved */
        for (size_t q = 0; q < nrs; q++)
            for (unsigned k = 0; k < rs[q].n; k++)
                rs[q].s[k] = mt_strtab_get(o->strs, rs[q].id[k], NULL);
    size_t len;
    const char *at = mt_strtab_get(o->strs, *id, &len);
    unsigned k = r->n < 8 ? r->n++ : r->next++ % 8;
    r->s[k] = at;
    r->len[k] = (uint32_t)len;
    r->id[k] = *id;
    return MT_OK;
}

/* An int64 of the plain form (mt_jscan_uint, at most INT64_MAX). */
static bool quick_i64(const char *s, size_t n, size_t *i, int64_t *v)
{
    uint64_t u;
    size_t k = *i;
    if (!mt_jscan_uint(s, n, &k, &u) || u > (uint64_t)INT64_MAX)
        return false;
    *v = (int64_t)u;
    *i = k;
    return true;
}

/* A time as get_time reads it: null or 0 is none. */
static bool quick_time(const char *s, size_t n, size_t *i, int64_t *v)
{
    if (*i + 4 <= n && !memcmp(s + *i, "null", 4)) {
        *v = MT_FR_NONE;
        *i += 4;
        return true;
    }
    if (!quick_i64(s, n, i, v))
        return false;
    if (*v == 0)
        *v = MT_FR_NONE;
    return true;
}

/* An array of plain strings (maybe empty): the first into *first (NULL when
 * empty). */
static bool quick_strs(const char *s, size_t n, size_t *i, const char **first, size_t *flen)
{
    size_t k = *i;
    *first = NULL;
    *flen = 0;
    if (k >= n || s[k] != '[')
        return false;
    k++;
    mt_jscan_ws(s, n, &k);
    if (k < n && s[k] == ']') {
        *i = k + 1;
        return true;
    }
    for (bool one = true;; one = false) {
        const char *x;
        size_t xl;
        if (!mt_jscan_str(s, n, &k, &x, &xl))
            return false;
        if (one)
            *first = x, *flen = xl;
        mt_jscan_ws(s, n, &k);
        if (k < n && s[k] == ']') {
            *i = k + 1;
            return true;
        }
        if (k >= n || s[k] != ',')
            return false;
        k++;
        mt_jscan_ws(s, n, &k);
    }
}

/* A list of shapes, each a list of plain integers, as numel() sums them. */
static bool quick_numel(const char *s, size_t n, size_t *i, uint64_t *sum)
{
    size_t k = *i;
    *sum = 0;
    if (k >= n || s[k] != '[')
        return false;
    k++;
    mt_jscan_ws(s, n, &k);
    if (k < n && s[k] == ']') {
        *i = k + 1;
        return true;
    }
    for (;;) {
        if (k >= n || s[k] != '[')
            return false;
        k++;
        mt_jscan_ws(s, n, &k);
        uint64_t p = 1, x;
        if (k < n && s[k] == ']')
            k++;
        else
            for (;;) {
                if (!mt_jscan_uint(s, n, &k, &x))
                    return false;
                p *= x;
                mt_jscan_ws(s, n, &k);
                if (k < n && s[k] == ']') {
                    k++;
                    break;
                }
                if (k >= n || s[k] != ',')
                    return false;
                k++;
                mt_jscan_ws(s, n, &k);
            }
        *sum += p;
        mt_jscan_ws(s, n, &k);
        if (k < n && s[k] == ']') {
            *i = k + 1;
            return true;
        }
        if (k >= n || s[k] != ',')
            return false;
        k++;
        mt_jscan_ws(s, n, &k);
    }
}

/* read_entry's fast path: the entry at s[*at] (s[0..n)) read straight from
 * the text, when every member read is of a plain form (base/jdoc.h,
 * mt_jscan_*) and the entry passes read_entry's checks: true with *x set
 * as read_entry sets it and *at past the entry. false otherwise, *at as it
 * was: read_entry reads it then and says what is wrong. The reading
 * through the cursor was most of a dump's cost (its calls per member,
 * containers read into a document to be skipped). */
static bool quick_entry(const char *s, size_t n, size_t *at, mt_fr_dump_t *o, recent_t *rec, mt_fr_entry_t *x,
                        mt_status_t *st)
{
    size_t i = *at;
    /* the names, interned once the entry is known to be read here (what
     * read_entry interns, in its order, when it reads the entry instead) */
    const char *nm = NULL, *pg = NULL, *dt = NULL;
    size_t nmn = 0, pgn = 0, dtn = 0;
    int64_t timeout = 0;
    if (i >= n || s[i] != '{')
        return false;
    i++;
    entry_init(x);
    unsigned seen = 0;
    mt_jscan_ws(s, n, &i);
    if (i < n && s[i] == '}')
        return false; /* no record_id */
    for (;;) {
        const char *k, *v;
        size_t kn, vn;
        if (!mt_jscan_str(s, n, &i, &k, &kn))
            return false;
        mt_jscan_ws(s, n, &i);
        if (i >= n || s[i] != ':')
            return false;
        i++;
        mt_jscan_ws(s, n, &i);
        int key = entry_key(k, kn);
        if (key >= 0 && (seen >> key & 1))
            key = -1; /* the first counts */
        if (key >= 0)
            seen |= 1u << key;
        bool ok = true;
        switch (key) {
        case K_RECORD_ID: ok = mt_jscan_uint(s, n, &i, &x->record_id); break;
        case K_SEQ: ok = quick_i64(s, n, &i, &x->seq); break;
        case K_P2P_SEQ: ok = quick_i64(s, n, &i, &x->p2p_seq); break;
        case K_CREATED: ok = quick_time(s, n, &i, &x->created); break;
        case K_STARTED: ok = quick_time(s, n, &i, &x->started); break;
        case K_COMPLETED: ok = quick_time(s, n, &i, &x->completed); break;
        case K_TIMEOUT: ok = quick_i64(s, n, &i, &timeout); break;
        case K_STATE:
            if ((ok = mt_jscan_str(s, n, &i, &v, &vn)))
                x->state = vn == 9 && !memcmp(v, "completed", 9) ? MT_FR_COMPLETED
                           : vn == 7 && !memcmp(v, "started", 7) ? MT_FR_STARTED
                                                                 : MT_FR_SCHEDULED;
            break;
        case K_IS_P2P:
            if (n - i >= 4 && !memcmp(s + i, "true", 4))
                x->is_p2p = true, i += 4;
            else if (n - i >= 5 && !memcmp(s + i, "false", 5))
                i += 5;
            else
                ok = false;
            break;
        case K_NAME:
            if ((ok = mt_jscan_str(s, n, &i, &v, &vn)))
                nm = v, nmn = vn;
            break;
        case K_PG:
            /* [name, desc]: read_entry takes any array whose first item is a string */
            if ((ok = quick_strs(s, n, &i, &v, &vn) && v))
                pg = v, pgn = vn;
            break;
        case K_DTYPES:
            if ((ok = quick_strs(s, n, &i, &v, &vn)))
                dt = v, dtn = vn;
            break;
        case K_IN_SIZES: ok = quick_numel(s, n, &i, &x->in_numel); break;
        case K_OUT_SIZES: ok = quick_numel(s, n, &i, &x->out_numel); break;
        default: ok = mt_jscan_skip(s, n, &i, 16); break;
        }
        if (!ok)
            return false;
        mt_jscan_ws(s, n, &i);
        if (i < n && s[i] == '}') {
            i++;
            break;
        }
        if (i >= n || s[i] != ',')
            return false;
        i++;
        mt_jscan_ws(s, n, &i);
    }
    /* read_entry's checks: a failing one is read_entry's to say */
    const unsigned need = 1u << K_RECORD_ID | 1u << K_SEQ | 1u << K_STATE | 1u << K_PG;
    if ((seen & need) != need)
        return false;
    if ((x->created != MT_FR_NONE && x->created >= MT_FR_TIME_MAX) ||
        (x->started != MT_FR_NONE && x->started >= MT_FR_TIME_MAX) ||
        (x->completed != MT_FR_NONE && x->completed >= MT_FR_TIME_MAX) || timeout > 1000000000)
        return false;
    x->timeout_ms = (int32_t)timeout;
    /* the order of the members in the text, as read_entry interns them */
    const char *str[3] = {nm, pg, dt};
    size_t len[3] = {nmn, pgn, dtn}, cap[3] = {MT_FR_NAME_MAX + 1, MT_FR_PG_MAX + 1, MT_FR_DTYPE_MAX + 1};
    uint32_t *id[3] = {&x->name, &x->pg, &x->dtype};
    int ord[3] = {0, 1, 2};
    for (int a = 1; a < 3; a++)
        for (int b = a; b > 0 && (str[ord[b]] && (!str[ord[b - 1]] || str[ord[b]] < str[ord[b - 1]])); b--) {
            int t = ord[b];
            ord[b] = ord[b - 1];
            ord[b - 1] = t;
        }
    for (int a = 0; a < 3; a++)
        if (str[ord[a]] &&
            (*st = intern_recent(o, &rec[ord[a]], rec, 3, str[ord[a]], len[ord[a]], cap[ord[a]], id[ord[a]])) != MT_OK)
            return false;
    *at = i;
    return true;
}

/* ---- the fast path of a pickle: the values as they are, no text ----
 * For a dump whose JSON text would be plain (mt_fr_pickle_plain), what
 * walk() reads from that text, read from the decoded values: the same
 * dump, names interned in the same order. Anything walk() would read
 * otherwise or refuse (a member of another type, a check that fails)
 * declines: the dump is then read through its text, which says what is
 * wrong. PyTorch's own encoding is pickle: this is the usual path. */

typedef struct pkr {
    const mt_fr_pickle_t *pk;
    mt_fr_dump_t *o;
    recent_t rec[3]; /* name, group, dtype */
    mt_status_t st;  /* MT_ERR_NOMEM when that declined */
    /* the key at each of an entry's first 32 members, as value id + 1 and
     * entry_key of it: PyTorch's pickler writes a key once and refers to
     * it after, so the next entry's key there is most often the same value */
    uint32_t kid[32];
    int8_t kclass[32];
} pkr_t;

static inline const mt_fr_pv_t *pk_item(const mt_fr_pickle_t *pk, const mt_fr_pv_t *c, size_t i)
{
    return &pk->vals[pk->items[c->v.c.at + i]];
}

static inline const char *pk_str(const mt_fr_pickle_t *pk, const mt_fr_pv_t *v)
{
    return (const char *)pk->data + v->v.c.at;
}

/* A time as get_time reads it (null or 0: none), within read_entry's bounds. */
static bool pk_time(const mt_fr_pv_t *v, int64_t *t)
{
    if (v->type == MT_PV_NONE) {
        *t = MT_FR_NONE;
        return true;
    }
    if (v->type != MT_PV_INT || v->v.i < 0 || v->v.i >= MT_FR_TIME_MAX)
        return false;
    *t = v->v.i ? v->v.i : MT_FR_NONE;
    return true;
}

/* numel() of a list of lists of unsigned ints. */
static bool pk_numel(const mt_fr_pickle_t *pk, const mt_fr_pv_t *v, uint64_t *sum)
{
    if (v->type != MT_PV_LIST)
        return false;
    *sum = 0;
    for (size_t i = 0; i < v->n; i++) {
        const mt_fr_pv_t *s = pk_item(pk, v, i);
        if (s->type != MT_PV_LIST)
            return false;
        uint64_t p = 1;
        for (size_t k = 0; k < s->n; k++) {
            const mt_fr_pv_t *x = pk_item(pk, s, k);
            if (x->type == MT_PV_INT && x->v.i >= 0)
                p *= (uint64_t)x->v.i;
            else if (x->type == MT_PV_UINT)
                p *= x->v.u;
            else
                return false;
        }
        *sum += p;
    }
    return true;
}

/* The string v interned through the recent names of field f. */
static bool pk_intern(pkr_t *r, int f, const mt_fr_pv_t *v, size_t cap, uint32_t *id)
{
    if (v->type != MT_PV_STR)
        return false;
    r->st = intern_recent(r->o, &r->rec[f], r->rec, 3, pk_str(r->pk, v), v->n, cap, id);
    return r->st == MT_OK;
}

/* read_entry of the dict e. */
static bool pk_entry(pkr_t *r, const mt_fr_pv_t *e, mt_fr_entry_t *x)
{
    const mt_fr_pickle_t *pk = r->pk;
    if (e->type != MT_PV_DICT)
        return false;
    entry_init(x);
    unsigned seen = 0;
    for (size_t i = 0; i + 1 < e->n; i += 2) {
        uint32_t kid = pk->items[e->v.c.at + i];
        const mt_fr_pv_t *v = pk_item(pk, e, i + 1);
        int key;
        if (i / 2 < 32 && r->kid[i / 2] == kid + 1)
            key = r->kclass[i / 2];
        else {
            const mt_fr_pv_t *k = &pk->vals[kid];
            key = entry_key(pk_str(pk, k), k->n);
            if (i / 2 < 32) {
                r->kid[i / 2] = kid + 1;
                r->kclass[i / 2] = (int8_t)key;
            }
        }
        if (key < 0 || (seen >> key & 1))
            continue; /* the first counts */
        seen |= 1u << key;
        bool ok = true;
        switch (key) {
        case K_RECORD_ID:
            if (v->type == MT_PV_INT && v->v.i >= 0)
                x->record_id = (uint64_t)v->v.i;
            else if (v->type == MT_PV_UINT)
                x->record_id = v->v.u;
            else
                ok = false;
            break;
        case K_SEQ:
            if ((ok = v->type == MT_PV_INT && v->v.i >= 0))
                x->seq = v->v.i;
            break;
        case K_P2P_SEQ:
            if ((ok = v->type == MT_PV_INT))
                x->p2p_seq = v->v.i;
            break;
        case K_CREATED: ok = pk_time(v, &x->created); break;
        case K_STARTED: ok = pk_time(v, &x->started); break;
        case K_COMPLETED: ok = pk_time(v, &x->completed); break;
        case K_TIMEOUT:
            if ((ok = v->type == MT_PV_INT && v->v.i >= 0 && v->v.i <= 1000000000))
                x->timeout_ms = (int32_t)v->v.i;
            break;
        case K_STATE:
            if ((ok = v->type == MT_PV_STR)) {
                const char *t = pk_str(pk, v);
                size_t tn = v->n;
                x->state = tn == 9 && !memcmp(t, "completed", 9) ? MT_FR_COMPLETED
                           : tn == 7 && !memcmp(t, "started", 7) ? MT_FR_STARTED
                                                                 : MT_FR_SCHEDULED;
            }
            break;
        case K_IS_P2P: x->is_p2p = v->type == MT_PV_TRUE; break;
        case K_NAME: ok = pk_intern(r, 0, v, MT_FR_NAME_MAX + 1, &x->name); break;
        case K_PG: ok = v->type == MT_PV_LIST && v->n && pk_intern(r, 1, pk_item(pk, v, 0), MT_FR_PG_MAX + 1, &x->pg); break;
        case K_DTYPES:
            if (v->type != MT_PV_LIST)
                ok = false;
            else if (v->n)
                ok = pk_intern(r, 2, pk_item(pk, v, 0), MT_FR_DTYPE_MAX + 1, &x->dtype);
            break;
        case K_IN_SIZES: ok = pk_numel(pk, v, &x->in_numel); break;
        case K_OUT_SIZES: ok = pk_numel(pk, v, &x->out_numel); break;
        }
        if (!ok)
            return false;
    }
    const unsigned need = 1u << K_RECORD_ID | 1u << K_SEQ | 1u << K_STATE | 1u << K_PG;
    return (seen & need) == need;
}

/* read_pgs of the dict c. */
static bool pk_pgs(pkr_t *r, const mt_fr_pv_t *c)
{
    const mt_fr_pickle_t *pk = r->pk;
    mt_fr_dump_t *o = r->o;
    size_t n = c->n / 2;
    if (!(o->pgs = calloc(n ? n : 1, sizeof *o->pgs))) {
        r->st = MT_ERR_NOMEM;
        return false;
    }
    for (size_t i = 0; i + 1 < c->n; i += 2) {
        const mt_fr_pv_t *k = pk_item(pk, c, i), *g = pk_item(pk, c, i + 1);
        mt_fr_pg_t *pg = &o->pgs[o->npgs++];
        if (g->type != MT_PV_DICT)
            return false;
        const mt_fr_pv_t *name = NULL, *desc = NULL, *ranks = NULL;
        for (size_t j = 0; j + 1 < g->n; j += 2) {
            const mt_fr_pv_t *gk = pk_item(pk, g, j), *gv = pk_item(pk, g, j + 1);
            const char *s = pk_str(pk, gk);
            const mt_fr_pv_t **slot = gk->n == 4 && !memcmp(s, "name", 4)    ? &name
                                      : gk->n == 4 && !memcmp(s, "desc", 4)  ? &desc
                                      : gk->n == 5 && !memcmp(s, "ranks", 5) ? &ranks
                                                                                 : NULL;
            if (slot && (*slot || gv->type != MT_PV_STR))
                return false; /* a name twice, or not a string: as the text says */
            if (slot)
                *slot = gv;
        }
        if (!ranks)
            return false;
        if (name)
            copy_bytes(pk_str(pk, name), name->n, pg->name, sizeof pg->name);
        else
            copy_bytes(pk_str(pk, k), k->n, pg->name, sizeof pg->name);
        if (desc)
            copy_bytes(pk_str(pk, desc), desc->n, pg->desc, sizeof pg->desc);
        mt_status_t st = parse_ranks(pk_str(pk, ranks), ranks->n, pg);
        if (st != MT_OK) {
            if (st == MT_ERR_NOMEM)
                r->st = st;
            return false;
        }
    }
    return true;
}

/* walk() of the root: true with *o read, false when it declines (r->st
 * MT_ERR_NOMEM when for want of memory). */
static bool pk_dump(pkr_t *r)
{
    const mt_fr_pickle_t *pk = r->pk;
    mt_fr_dump_t *o = r->o;
    const mt_fr_pv_t *root = &pk->vals[pk->root];
    if (root->type != MT_PV_DICT)
        return false;
    bool version = false, cfg = false, entries = false;
    for (size_t i = 0; i + 1 < root->n; i += 2) {
        const mt_fr_pv_t *k = pk_item(pk, root, i), *v = pk_item(pk, root, i + 1);
        const char *s = pk_str(pk, k);
        size_t kn = k->n;
        if (kn == 7 && !memcmp(s, "version", 7) && !version) {
            version = true;
            if (v->type != MT_PV_STR)
                return false;
            copy_bytes(pk_str(pk, v), v->n, o->version, sizeof o->version);
        } else if (kn == 9 && !memcmp(s, "pg_config", 9) && !cfg) {
            cfg = true;
            if (v->type == MT_PV_DICT && !pk_pgs(r, v))
                return false;
        } else if (kn == 7 && !memcmp(s, "entries", 7) && !entries) {
            entries = true;
            if (v->type != MT_PV_LIST)
                return false;
            if (v->n && !(o->entries = malloc(v->n * sizeof *o->entries))) {
                r->st = MT_ERR_NOMEM;
                return false;
            }
            for (size_t j = 0; j < v->n; j++, o->n++)
                if (!pk_entry(r, pk_item(pk, v, j), &o->entries[j]))
                    return false;
        }
    }
    return version; /* no "entries": nothing recorded (PyTorch leaves it out) */
}

/* The dump's text, streamed: the top object's members in the file's
 * order, each entry built as it is read (no document of the whole file:
 * at 2,000 entries a dump's node array was 30 MB, and building it half
 * of the reading). The first of a repeated member counts. */
/* src: the dump's own JSON text, for the byte offset of an entry's error;
 * NULL for a pickle's (its JSON is a translation: the entry's index says
 * where). */
/* quick: entries through quick_entry first. */
static mt_status_t walk(mt_jcur_t *c, const char *path, const char *src, bool quick, mt_fr_dump_t *o,
                        mt_error_t *err)
{
    mt_jtype_t t;
    mt_status_t st = mt_jcur_peek(c, &t);
    if (st != MT_OK)
        return st;
    if (t != MT_J_OBJ)
        return bad(err, path, "expected an object at the top", -1);
    if ((st = mt_jcur_enter(c, MT_J_OBJ)) != MT_OK)
        return st;
    bool version = false, cfg = false, entries = false;
    size_t cap = 0;
    recent_t rec[3]; /* name, group, dtype */
    memset(rec, 0, sizeof rec);
    for (;;) {
        bool more;
        const char *k, *s;
        size_t kn, sn;
        const mt_jdoc_t *d;
        if ((st = mt_jcur_next(c, &more, &k, &kn)) != MT_OK)
            return st;
        if (!more)
            break;
        if (kn == 7 && !memcmp(k, "version", 7) && !version) {
            version = true;
            if ((st = mt_jcur_str(c, &s, &sn)) != MT_OK)
                return st;
            if (!s)
                return bad(err, path, "expected a string \"version\"", -1);
            copy_bytes(s, sn, o->version, sizeof o->version);
        } else if (kn == 9 && !memcmp(k, "pg_config", 9) && !cfg) {
            cfg = true;
            if ((st = mt_jcur_value(c, &d)) != MT_OK)
                return st;
            if (mt_jdoc_type(d, 0) == MT_J_OBJ && (st = read_pgs(d, path, o, err)) != MT_OK)
                return st;
        } else if (kn == 7 && !memcmp(k, "entries", 7) && !entries) {
            entries = true;
            if ((st = mt_jcur_peek(c, &t)) != MT_OK)
                return st;
            if (t != MT_J_ARR)
                return bad(err, path, "expected an array \"entries\"", -1);
            if ((st = mt_jcur_enter(c, MT_J_ARR)) != MT_OK)
                return st;
            for (long idx = 0;; idx++) {
                if ((st = mt_jcur_next(c, &more, NULL, NULL)) != MT_OK)
                    return st;
                if (!more)
                    break;
                if (o->n == cap) {
                    cap = cap ? 2 * cap : 1024;
                    mt_fr_entry_t *e = realloc(o->entries, cap * sizeof *e);
                    if (!e)
                        return MT_ERR_NOMEM;
                    o->entries = e;
                }
                if (quick) {
                    size_t tlen, pos = mt_jcur_offset(c);
                    const char *text = mt_jcur_text(c, &tlen);
                    mt_jscan_ws(text, tlen, &pos);
                    if (quick_entry(text, tlen, &pos, o, rec, &o->entries[o->n], &st)) {
                        mt_jcur_seek(c, pos);
                        o->n++;
                        continue;
                    }
                    if (st != MT_OK)
                        return st;
                }
                size_t at = 0; /* the entry's first byte (peek reads past the blanks before it) */
                if (src && mt_jcur_peek(c, &t) == MT_OK)
                    at = mt_jcur_offset(c);
                if ((st = read_entry(c, path, idx, o, &o->entries[o->n], err)) != MT_OK) {
                    if (st == MT_ERR_FORMAT && src && err && err->offset < 0) /* the entry's own error */
                        mt_errpos_in(err, path, src, at);
                    return st;
                }
                o->n++;
            }
        } else if ((st = mt_jcur_skip(c)) != MT_OK)
            return st;
    }
    if ((st = mt_jcur_finish(c)) != MT_OK)
        return st;
    if (!version)
        return bad(err, path, "expected a string \"version\"", -1);
    /* no "entries": a recorder that recorded nothing (PyTorch 2.11's
     * generic one in an NCCL job writes only the header) */
    if (o->n < cap) { /* the dump is kept: give back the doubling's slack */
        mt_fr_entry_t *e = realloc(o->entries, (o->n ? o->n : 1) * sizeof *e);
        if (e)
            o->entries = e;
    }
    return MT_OK;
}

/* The groups as the analysis takes them, whatever pg_config held. Gloo's
 * recorder (PyTorch 2.11) lists no group there: one placeholder named ""
 * (with every rank on some ranks, none on others) that no entry names.
 * Such a "" is dropped; each group an entry names that pg_config lacks is
 * added with no ranks (members unknown: the analysis takes the ranks whose
 * dumps name it). MT_OK or MT_ERR_NOMEM. */
static mt_status_t settle_pgs(mt_fr_dump_t *o)
{
    uint32_t nid = o->strs ? mt_strtab_count(o->strs) : 1;
    bool *named = calloc(nid ? nid : 1, sizeof *named);
    if (!named)
        return MT_ERR_NOMEM;
    for (size_t i = 0; i < o->n; i++)
        if (o->entries[i].pg < nid)
            named[o->entries[i].pg] = true;
    size_t k = 0;
    for (size_t g = 0; g < o->npgs; g++) {
        if (!o->pgs[g].name[0] && !named[MT_STR_NONE]) {
            free(o->pgs[g].ranks);
            continue;
        }
        o->pgs[k++] = o->pgs[g];
    }
    o->npgs = k;
    size_t cap = k;
    for (uint32_t id = 0; id < nid; id++) {
        if (!named[id])
            continue;
        const char *name = mt_fr_str(o, id);
        bool have = false;
        for (size_t g = 0; g < k && !have; g++)
            have = !strncmp(o->pgs[g].name, name, sizeof o->pgs[g].name - 1);
        if (have)
            continue;
        if (MT_GROW(o->pgs, cap, o->npgs + 1, 4)) {
            free(named);
            return MT_ERR_NOMEM;
        }
        o->pgs[o->npgs] = (mt_fr_pg_t){0};
        copy_bytes(name, strlen(name), o->pgs[o->npgs].name, sizeof o->pgs[o->npgs].name);
        o->npgs++;
    }
    free(named);
    return MT_OK;
}

mt_status_t mt_fr_dump_read(const uint8_t *data, size_t len, const char *path, int rank, mt_fr_dump_t *out,
                            mt_error_t *err)
{
    return mt_fr_dump_read_with(data, len, path, rank, true, out, err);
}

mt_status_t mt_fr_dump_read_with(const uint8_t *data, size_t len, const char *path, int rank, bool quick,
                                 mt_fr_dump_t *out, mt_error_t *err)
{
    *out = (mt_fr_dump_t){.rank = rank};
    mt_buf_t text = {0};
    const char *json = (const char *)data;
    size_t jlen = len;
    mt_status_t st = MT_OK;
    bool pickled = mt_fr_pickle_sniff(data, len);
    if (pickled) {
        mt_fr_pickle_t pk;
        st = mt_fr_pickle_load(data, len, path, &pk, err);
        if (st == MT_OK && quick && mt_fr_pickle_plain(&pk)) {
            pkr_t r = {.pk = &pk, .o = out};
            bool done = pk_dump(&r);
            if (done || r.st != MT_OK) {
                mt_fr_pickle_free(&pk);
                if (done && (r.st = settle_pgs(out)) == MT_OK)
                    return MT_OK;
                mt_fr_dump_free(out);
                mt_error_set(err, r.st, "Flight Recorder dump: out of memory");
                if (err)
                    err->rank = rank;
                return r.st;
            }
            mt_fr_dump_free(out); /* declined: read through the text */
        }
        if (st == MT_OK)
            st = mt_fr_pickle_json(&pk, &text, err);
        mt_fr_pickle_free(&pk);
        if (st != MT_OK) {
            mt_buf_free(&text); /* empty, but it may hold what it grew to */
            if (err)
                err->rank = rank;
            if (st == MT_ERR_FORMAT && err)
                err->code = MT_ERR_FR;
            return st == MT_ERR_FORMAT ? MT_ERR_FR : st;
        }
        json = text.data;
        jlen = text.len;
    }
    mt_jcur_t *c = NULL;
    st = mt_jcur_new(json, jlen, 64, path, err, &c);
    if (st == MT_OK)
        st = walk(c, path, pickled ? NULL : json, quick, out, err);
    if (st == MT_OK)
        st = settle_pgs(out);
    if (st == MT_ERR_NOMEM && err && err->code == MT_OK)
        mt_error_set(err, MT_ERR_NOMEM, "Flight Recorder dump: out of memory");
    if (err && st != MT_OK)
        err->rank = rank;
    if (st == MT_ERR_FORMAT) { /* said as a dump's error, not a trace's */
        st = MT_ERR_FR;
        if (err)
            err->code = MT_ERR_FR;
    }
    mt_jcur_free(c);
    mt_buf_free(&text);
    if (st != MT_OK)
        mt_fr_dump_free(out);
    return st;
}

void mt_fr_dump_free(mt_fr_dump_t *d)
{
    if (!d)
        return;
    for (size_t i = 0; !d->pgs_shared && i < d->npgs; i++)
        free(d->pgs[i].ranks);
    free(d->pgs);
    free(d->entries);
    mt_strtab_free(d->strs);
    *d = (mt_fr_dump_t){.rank = d->rank};
}

int mt_fr_probe(const uint8_t *data, size_t len)
{
    if (mt_fr_pickle_sniff(data, len))
        return 1;
    size_t i = 0;
    if (len >= 3 && data[0] == 0xEF && data[1] == 0xBB && data[2] == 0xBF)
        i = 3;
    while (i < len && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r'))
        i++;
    if (i >= len || data[i++] != '{')
        return 0;
    while (i < len && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r'))
        i++;
    static const char *const keys[] = {"version",   "comm_lib_version", "nccl_version",   "pg_config",
                                       "pg_status", "entries",          "nccl_comm_state"};
    for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
        size_t n = strlen(keys[k]);
        if (i + n + 2 <= len && data[i] == '"' && !memcmp(data + i + 1, keys[k], n) && data[i + n + 1] == '"')
            return 2;
    }
    return 0;
}

int mt_fr_rank_from_name(const char *path)
{
    int64_t r = mt_rank_from_filename(path);
    if (r >= 0)
        return r < MT_FR_MAX_RANKS ? (int)r : -1;
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    size_t n = strlen(b);
    /* a last extension of letters (.pkl, .json) is not part of the rank */
    const char *dot = strrchr(b, '.');
    if (dot && dot[1]) {
        bool letters = true;
        for (const char *c = dot + 1; *c; c++)
            letters &= (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z');
        if (letters)
            n = (size_t)(dot - b);
    }
    size_t k = n;
    while (k > 0 && b[k - 1] >= '0' && b[k - 1] <= '9')
        k--;
    if (k == n || n - k > 4)
        return -1;
    int v = 0;
    for (size_t i = k; i < n; i++)
        v = v * 10 + (b[i] - '0');
    return v < MT_FR_MAX_RANKS ? v : -1;
}

void mt_fr_entry_op(const mt_fr_dump_t *d, const mt_fr_entry_t *e, mt_fr_op_t *out)
{
    *out = (mt_fr_op_t){.record_id = e->record_id, .seq = e->seq, .p2p_seq = e->p2p_seq, .created = e->created,
                        .started = e->started, .completed = e->completed, .timeout_ms = e->timeout_ms,
                        .in_numel = e->in_numel, .out_numel = e->out_numel, .state = e->state,
                        .is_p2p = e->is_p2p};
    /* the ids were cut to these lengths when interned */
    snprintf(out->pg, sizeof out->pg, "%s", mt_fr_str(d, e->pg));
    snprintf(out->name, sizeof out->name, "%s", mt_fr_str(d, e->name));
    snprintf(out->dtype, sizeof out->dtype, "%s", mt_fr_str(d, e->dtype));
}

mt_status_t mt_fr_strs_copy(const mt_fr_dump_t *src, mt_fr_dump_t *dst)
{
    mt_strtab_free(dst->strs);
    dst->strs = NULL;
    uint32_t n = src->strs ? mt_strtab_count(src->strs) : 0;
    for (uint32_t k = 1; k < n; k++) {
        size_t len;
        const char *s = mt_strtab_get(src->strs, k, &len);
        uint32_t id;
        if (mt_fr_intern(dst, s, len, len + 1, &id) != MT_OK) {
            mt_strtab_free(dst->strs);
            dst->strs = NULL;
            return MT_ERR_NOMEM;
        }
    }
    return MT_OK;
}

bool mt_fr_strs_equal(const mt_fr_dump_t *a, const mt_fr_dump_t *b)
{
    uint32_t n = a->strs ? mt_strtab_count(a->strs) : 1, m = b->strs ? mt_strtab_count(b->strs) : 1;
    if (n != m)
        return false;
    for (uint32_t k = 1; k < n; k++) {
        size_t x, y;
        const char *s = mt_strtab_get(a->strs, k, &x), *t = mt_strtab_get(b->strs, k, &y);
        if (x != y || memcmp(s, t, x))
            return false;
    }
    return true;
}

/* Packed layout: a header, the entries as they are in memory (the same
 * program on both ends), the string table's names after id 0 (length,
 * bytes), then each group's names, count and ranks. */
typedef struct pack_head {
    int32_t rank, pad;
    char version[16];
    uint64_t n, npgs, nstrs;
} pack_head_t;

mt_status_t mt_fr_dump_pack_append(const mt_fr_dump_t *d, mt_buf_t *out)
{
    uint32_t nstrs = d->strs ? mt_strtab_count(d->strs) : 0;
    pack_head_t hd = {.rank = d->rank, .n = d->n, .npgs = d->npgs, .nstrs = nstrs};
    memcpy(hd.version, d->version, sizeof hd.version);
    mt_status_t st = mt_buf_append(out, &hd, sizeof hd);
    if (st == MT_OK && d->n)
        st = mt_buf_append(out, d->entries, d->n * sizeof *d->entries);
    for (uint32_t k = 1; st == MT_OK && k < nstrs; k++) {
        size_t n;
        const char *s = mt_strtab_get(d->strs, k, &n);
        uint32_t n32 = (uint32_t)n; /* a name is at most MT_FR_NAME_MAX bytes */
        st = mt_buf_append(out, &n32, sizeof n32);
        if (st == MT_OK)
            st = mt_buf_append(out, s, n);
    }
    for (size_t g = 0; st == MT_OK && g < d->npgs; g++) {
        const mt_fr_pg_t *pg = &d->pgs[g];
        int32_t nr = pg->nranks;
        st = mt_buf_append(out, pg->name, sizeof pg->name);
        if (st == MT_OK)
            st = mt_buf_append(out, pg->desc, sizeof pg->desc);
        if (st == MT_OK)
            st = mt_buf_append(out, &nr, sizeof nr);
        if (st == MT_OK && nr)
            st = mt_buf_append(out, pg->ranks, (size_t)nr * sizeof *pg->ranks);
    }
    return st;
}

static bool take(const uint8_t *data, size_t len, size_t *pos, void *dst, size_t n)
{
    if (len - *pos < n)
        return false;
    memcpy(dst, data + *pos, n);
    *pos += n;
    return true;
}

mt_status_t mt_fr_dump_unpack(const uint8_t *data, size_t len, size_t *pos, mt_fr_dump_t *out)
{
    pack_head_t hd;
    *out = (mt_fr_dump_t){0};
    if (*pos > len || !take(data, len, pos, &hd, sizeof hd) || hd.n > (len - *pos) / sizeof(mt_fr_entry_t) ||
        hd.npgs > len - *pos)
        return MT_ERR_FORMAT;
    out->rank = hd.rank;
    memcpy(out->version, hd.version, sizeof out->version);
    out->version[sizeof out->version - 1] = 0;
    out->entries = malloc((hd.n ? hd.n : 1) * sizeof *out->entries);
    out->pgs = calloc(hd.npgs ? hd.npgs : 1, sizeof *out->pgs);
    if (!out->entries || !out->pgs) {
        mt_fr_dump_free(out);
        return MT_ERR_NOMEM;
    }
    take(data, len, pos, out->entries, hd.n * sizeof *out->entries);
    out->n = hd.n;
    if (hd.nstrs > UINT32_MAX || hd.nstrs > len - *pos) {
        mt_fr_dump_free(out);
        return MT_ERR_FORMAT;
    }
    for (uint64_t k = 1; k < hd.nstrs; k++) {
        uint32_t n, id;
        if (!take(data, len, pos, &n, sizeof n) || n > len - *pos) {
            mt_fr_dump_free(out);
            return MT_ERR_FORMAT;
        }
        mt_status_t st = mt_fr_intern(out, (const char *)data + *pos, n, (size_t)n + 1, &id);
        if (st != MT_OK || id != k) { /* each name once, in id order */
            mt_fr_dump_free(out);
            return st != MT_OK ? st : MT_ERR_FORMAT;
        }
        *pos += n;
    }
    for (size_t g = 0; g < hd.npgs; g++) {
        mt_fr_pg_t *pg = &out->pgs[g];
        int32_t nr;
        if (!take(data, len, pos, pg->name, sizeof pg->name) || !take(data, len, pos, pg->desc, sizeof pg->desc) ||
            !take(data, len, pos, &nr, sizeof nr) || nr < 0 || nr > MT_FR_MAX_RANKS ||
            (size_t)nr * sizeof(int) > len - *pos) {
            mt_fr_dump_free(out);
            return MT_ERR_FORMAT;
        }
        out->npgs = g + 1;
        pg->ranks = malloc((size_t)(nr ? nr : 1) * sizeof *pg->ranks);
        if (!pg->ranks) {
            mt_fr_dump_free(out);
            return MT_ERR_NOMEM;
        }
        take(data, len, pos, pg->ranks, (size_t)nr * sizeof *pg->ranks);
        pg->nranks = nr;
        pg->name[sizeof pg->name - 1] = pg->desc[sizeof pg->desc - 1] = 0;
    }
    return MT_OK;
}
