/* One Flight Recorder dump (pickle or JSON) -> mt_fr_dump_t, through the
 * JSON document reader (base/jdoc.c) for both encodings; what a file is
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

/* A time: null or 0 (the JSON encoding's "not discovered") is none. */
static bool get_time(const mt_jdoc_t *d, uint32_t obj, const char *key, int64_t *v)
{
    uint32_t i = mt_jdoc_get(d, obj, key);
    if (!i || mt_jdoc_type(d, i) == MT_J_NULL) {
        *v = MT_FR_NONE;
        return true;
    }
    if (!mt_jdoc_i64(d, i, v))
        return false;
    if (*v == 0)
        *v = MT_FR_NONE;
    return true;
}

/* Sum over a list of shapes of each shape's product. */
static uint64_t numel(const mt_jdoc_t *d, uint32_t list)
{
    uint64_t sum = 0;
    for (uint32_t s = list ? mt_jdoc_first(d, list) : 0; s; s = mt_jdoc_next(d, s)) {
        uint64_t p = 1, x;
        for (uint32_t k = mt_jdoc_first(d, s); k; k = mt_jdoc_next(d, k))
            p *= mt_jdoc_u64(d, k, &x) ? x : 0;
        sum += p;
    }
    return sum;
}

static mt_status_t parse_ranks(const char *s, mt_fr_pg_t *pg)
{
    int cap = 0;
    for (const char *c = s; *c;) {
        if (*c >= '0' && *c <= '9') {
            long v = 0;
            for (; *c >= '0' && *c <= '9'; c++)
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

static mt_status_t walk(const mt_jdoc_t *d, const char *path, mt_fr_dump_t *o, mt_error_t *err)
{
    if (mt_jdoc_type(d, 0) != MT_J_OBJ)
        return bad(err, path, "expected an object at the top", -1);
    uint32_t v = mt_jdoc_get(d, 0, "version");
    if (!v || !mt_jdoc_str(d, v, NULL))
        return bad(err, path, "expected a string \"version\"", -1);
    copy_str(d, v, o->version, sizeof o->version);
    uint32_t cfg = mt_jdoc_get(d, 0, "pg_config");
    if (cfg && mt_jdoc_type(d, cfg) == MT_J_OBJ) {
        const mt_jnode_t *cn = mt_jdoc_node(d, cfg);
        o->pgs = calloc(cn->len ? cn->len : 1, sizeof *o->pgs);
        if (!o->pgs)
            return MT_ERR_NOMEM;
        for (uint32_t g = mt_jdoc_first(d, cfg); g; g = mt_jdoc_next(d, g)) {
            mt_fr_pg_t *pg = &o->pgs[o->npgs++];
            uint32_t nm = mt_jdoc_get(d, g, "name");
            if (nm)
                copy_str(d, nm, pg->name, sizeof pg->name);
            else
                snprintf(pg->name, sizeof pg->name, "%s", mt_jdoc_key(d, g));
            copy_str(d, mt_jdoc_get(d, g, "desc"), pg->desc, sizeof pg->desc);
            const char *rs = mt_jdoc_str(d, mt_jdoc_get(d, g, "ranks"), NULL);
            if (!rs)
                return bad(err, path, "pg_config: expected a string \"ranks\"", -1);
            mt_status_t st = parse_ranks(rs, pg);
            if (st == MT_ERR_RANGE)
                return bad(err, path, "pg_config: a rank of 4096 or more, or more than 4096 ranks", -1);
            if (st)
                return st;
        }
    }
    uint32_t es = mt_jdoc_get(d, 0, "entries");
    if (!es || mt_jdoc_type(d, es) != MT_J_ARR)
        return bad(err, path, "expected an array \"entries\"", -1);
    size_t n = mt_jdoc_node(d, es)->len;
    o->entries = calloc(n ? n : 1, sizeof *o->entries);
    if (!o->entries)
        return MT_ERR_NOMEM;
    long idx = 0;
    for (uint32_t e = mt_jdoc_first(d, es); e; e = mt_jdoc_next(d, e), idx++) {
        mt_fr_entry_t *x = &o->entries[o->n];
        if (mt_jdoc_type(d, e) != MT_J_OBJ)
            return bad(err, path, "expected an object", idx);
        if (!mt_jdoc_u64(d, mt_jdoc_get(d, e, "record_id"), &x->record_id))
            return bad(err, path, "expected an unsigned integer \"record_id\"", idx);
        if (!mt_jdoc_i64(d, mt_jdoc_get(d, e, "collective_seq_id"), &x->seq))
            return bad(err, path, "expected an integer \"collective_seq_id\"", idx);
        if (!mt_jdoc_i64(d, mt_jdoc_get(d, e, "p2p_seq_id"), &x->p2p_seq))
            x->p2p_seq = 0;
        if (!get_time(d, e, "time_created_ns", &x->created) || !get_time(d, e, "time_discovered_started_ns", &x->started) ||
            !get_time(d, e, "time_discovered_completed_ns", &x->completed))
            return bad(err, path, "expected integer ns or null in the time_* fields", idx);
        if (!mt_jdoc_i64(d, mt_jdoc_get(d, e, "timeout_ms"), &x->timeout_ms))
            x->timeout_ms = 0;
        /* bounds that keep every difference and sum of the analysis in int64 */
        if ((x->created != MT_FR_NONE && (x->created < 0 || x->created >= MT_FR_TIME_MAX)) ||
            (x->started != MT_FR_NONE && (x->started < 0 || x->started >= MT_FR_TIME_MAX)) ||
            (x->completed != MT_FR_NONE && (x->completed < 0 || x->completed >= MT_FR_TIME_MAX)))
            return bad(err, path, "a time_* value below 0 or 2^62 ns or more", idx);
        if (x->timeout_ms < 0 || x->timeout_ms > 1000000000)
            return bad(err, path, "timeout_ms below 0 or over 10^9", idx);
        if (x->seq < 0)
            return bad(err, path, "a negative collective_seq_id", idx);
        const char *st = mt_jdoc_str(d, mt_jdoc_get(d, e, "state"), NULL);
        if (!st)
            return bad(err, path, "expected a string \"state\"", idx);
        x->state = !strcmp(st, "completed") ? MT_FR_COMPLETED : !strcmp(st, "started") ? MT_FR_STARTED : MT_FR_SCHEDULED;
        x->is_p2p = mt_jdoc_type(d, mt_jdoc_get(d, e, "is_p2p")) == MT_J_TRUE;
        uint32_t pg = mt_jdoc_get(d, e, "process_group");
        if (!pg || mt_jdoc_type(d, pg) != MT_J_ARR || !mt_jdoc_str(d, mt_jdoc_first(d, pg), NULL))
            return bad(err, path, "expected \"process_group\" as [name, desc]", idx);
        copy_str(d, mt_jdoc_first(d, pg), x->pg, sizeof x->pg);
        copy_str(d, mt_jdoc_get(d, e, "profiling_name"), x->name, sizeof x->name);
        uint32_t dt = mt_jdoc_get(d, e, "input_dtypes");
        copy_str(d, dt ? mt_jdoc_first(d, dt) : 0, x->dtype, sizeof x->dtype);
        x->in_numel = numel(d, mt_jdoc_get(d, e, "input_sizes"));
        x->out_numel = numel(d, mt_jdoc_get(d, e, "output_sizes"));
        o->n++;
    }
    return MT_OK;
}

mt_status_t mt_fr_dump_read(const uint8_t *data, size_t len, const char *path, int rank, mt_fr_dump_t *out,
                            mt_error_t *err)
{
    *out = (mt_fr_dump_t){.rank = rank};
    mt_buf_t text = {0};
    const char *json = (const char *)data;
    size_t jlen = len;
    mt_status_t st = MT_OK;
    if (mt_fr_pickle_sniff(data, len)) {
        if ((st = mt_fr_pickle_to_json(data, len, path, &text, err)) != MT_OK) {
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
    mt_jdoc_t *d = NULL;
    st = mt_jdoc_parse(json, jlen, 64, path, &d, err);
    if (st == MT_OK)
        st = walk(d, path, out, err);
    if (st == MT_ERR_NOMEM && err && err->code == MT_OK)
        mt_error_set(err, MT_ERR_NOMEM, "Flight Recorder dump: out of memory");
    if (err && st != MT_OK)
        err->rank = rank;
    if (st == MT_ERR_FORMAT) { /* said as a dump's error, not a trace's */
        st = MT_ERR_FR;
        if (err)
            err->code = MT_ERR_FR;
    }
    mt_jdoc_free(d);
    mt_buf_free(&text);
    if (st != MT_OK)
        mt_fr_dump_free(out);
    return st;
}

void mt_fr_dump_free(mt_fr_dump_t *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->npgs; i++)
        free(d->pgs[i].ranks);
    free(d->pgs);
    free(d->entries);
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

/* Packed layout: a header, the entries as they are in memory (the same
 * program on both ends), then each group's names, count and ranks. */
typedef struct pack_head {
    int32_t rank, pad;
    char version[16];
    uint64_t n, npgs;
} pack_head_t;

mt_status_t mt_fr_dump_pack_append(const mt_fr_dump_t *d, mt_buf_t *out)
{
    pack_head_t hd = {.rank = d->rank, .n = d->n, .npgs = d->npgs};
    memcpy(hd.version, d->version, sizeof hd.version);
    mt_status_t st = mt_buf_append(out, &hd, sizeof hd);
    if (st == MT_OK && d->n)
        st = mt_buf_append(out, d->entries, d->n * sizeof *d->entries);
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
