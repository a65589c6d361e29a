/* The trace loader: a single streaming pass over the JSON bytes that builds
 * the compact per-rank model (mt_trace_t) without a DOM.
 *
 * Shape of the hot path (why it looks like this):
 * - Input arrives in chunks (read() or inflate) into one buffer that always
 *   has MT_PAD zero bytes after the valid data. Every scanner stops at a
 *   byte < 0x20, so the NUL sentinel ends any scan without a bounds check in
 *   the inner loops; only the slow path asks "was that the end?".
 * - Parsing is restartable at "units": one trace event, or one top-level
 *   member. A unit that runs past the buffered bytes returns NEED_MORE; the
 *   driver keeps the unit's bytes, reads more and parses the unit again from
 *   its start. Units are small, so the rare re-parse costs nothing, and
 *   memory is bounded by the chunk size plus the largest unit.
 * - Strings and blank runs are scanned 16 bytes at a time (SSE2, part of
 *   every x86-64 CPU, so chosen when compiling; byte loops elsewhere and in
 *   the MT_PORTABLE_SCAN build, which test_loader_portable and perf_paths
 *   compare); names are interned on the raw bytes when they hold no escape,
 *   through a small cache of the names seen (json_scan.c's intern_cached).
 * - The keys Kineto writes are matched whole, quotes and colon included,
 *   as constants chosen by their first letter (ev_key_fast, arg_key_fast);
 *   other keys are read as strings and dispatched by length, then memcmp.
 * - Plain digits (ids, Kineto's "ts"/"dur") are converted in the scan that
 *   finds them; the rest exactly from their decimal text (numparse.c).
 *
 * Three files: the JSON scanner (json_scan.h, json_scan.c), the event
 * builder (loader_event.c: one trace event and its args), and this one,
 * the driver: the top-level members (the header values), the units, the
 * refills, and the public entry points. */
#define _POSIX_C_SOURCE 200809L
#include "mergetrace/loader.h"
#include "trace/json_scan.h"
#include "trace/loader_event.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mergetrace/buf.h"
#include "mergetrace/input.h"
#include "mergetrace/link.h"
#include "mergetrace/nsys.h"
#include "base/bigmem.h"
#include "base/errpos.h"
#include "base/numparse.h"

/* ------------------------------------------------------- header values */

/* A list of ints given as a JSON array or as a string "[0, 1, 2]". */
static int parse_rank_list(parser_t *ps, const char *p, mt_pg_t *pg, const char **out)
{
    mt_trace_t *t = ps->t;
    pg->rank_off = (uint32_t)t->n_pg_rank_pool;
    pg->n_ranks = 0;
    const char *s, *e;
    if (*p == '"') {
        strtok_t tok = {0};
        int r = parse_string(ps, p, &tok, out);
        if (r)
            return r;
        s = tok.s;
        e = tok.s + tok.len;
    } else if (*p == '[') {
        s = p;
        int r = mt_json_skip_value(ps, p, out);
        if (r)
            return r;
        e = *out;
    } else {
        t->stats.bad_values++;
        return mt_json_skip_value(ps, p, out);
    }
    for (const char *q = s; q < e;) {
        if ((unsigned)(*q - '0') <= 9 || *q == '-') {
            const char *n0 = q;
            q++;
            while (q < e && (unsigned)(*q - '0') <= 9)
                q++;
            int64_t v;
            if (mt_parse_int64(n0, (size_t)(q - n0), &v) != MT_OK) {
                t->stats.bad_values++;
                continue;
            }
            if (MT_GROW_BIG(t->pg_rank_pool, t->cap_pg_rank_pool, t->n_pg_rank_pool + 1, 64))
                return mt_json_fail_code(ps, p, MT_ERR_NOMEM, "process group table");
            t->pg_rank_pool[t->n_pg_rank_pool++] = v;
            pg->n_ranks++;
        } else {
            q++;
        }
    }
    return MT_OK;
}

static int parse_pg_config(parser_t *ps, const char *p, const char **out)
{
    mt_trace_t *t = ps->t;
    if (*p != '[') {
        t->stats.bad_values++;
        return mt_json_skip_value(ps, p, out);
    }
    p = skip_ws(p + 1);
    if (*p == ']') {
        *out = p + 1;
        return MT_OK;
    }
    for (;;) {
        int r;
        if (*p != '{') {
            t->stats.bad_values++;
            if ((r = mt_json_skip_value(ps, p, &p)))
                return r;
        } else {
            mt_pg_t pg = {.size = -1};
            bool empty = false, more = false, ok = false;
            if ((r = obj_begin(ps, p, &p, &empty)))
                return r;
            more = !empty;
            while (more) {
                strtok_t k = {0};
                if ((r = obj_key(ps, p, &k, &p)))
                    return r;
                if (KEY_IS(k, "pg_name"))
                    r = mt_json_value_str_or_num(ps, p, &pg.name, &ok, &p);
                else if (KEY_IS(k, "pg_desc"))
                    r = mt_json_value_str(ps, p, &pg.desc, &ok, &p);
                else if (KEY_IS(k, "backend_config"))
                    r = mt_json_value_str(ps, p, &pg.backend, &ok, &p);
                else if (KEY_IS(k, "pg_size"))
                    r = value_int64(ps, p, &pg.size, &ok, &p, "pg_size");
                else if (KEY_IS(k, "ranks"))
                    r = parse_rank_list(ps, p, &pg, &p);
                else
                    r = mt_json_skip_value(ps, p, &p);
                if (r)
                    return r;
                if ((r = obj_next(ps, p, &more, &p)))
                    return r;
            }
            if (MT_GROW_BIG(t->pgs, t->cap_pgs, t->n_pgs + 1, 64))
                return mt_json_fail_code(ps, p, MT_ERR_NOMEM, "process group table");
            t->pgs[t->n_pgs++] = pg;
        }
        p = skip_ws(p);
        if (*p == ',') {
            p = skip_ws(p + 1);
            continue;
        }
        if (*p == ']') {
            *out = p + 1;
            return MT_OK;
        }
        return mt_json_fail(ps, p, "',' or ']'");
    }
}

static int parse_dist_info(parser_t *ps, const char *p, const char **out)
{
    mt_trace_t *t = ps->t;
    bool empty = false, more = false, ok = false;
    int r;
    if (*p != '{') {
        t->stats.bad_values++;
        return mt_json_skip_value(ps, p, out);
    }
    if ((r = obj_begin(ps, p, &p, &empty)))
        return r;
    t->info.has_dist_info = true;
    more = !empty;
    while (more) {
        strtok_t k = {0};
        if ((r = obj_key(ps, p, &k, &p)))
            return r;
        if (KEY_IS(k, "rank") || KEY_IS(k, "world_size")) {
            /* These decide where the trace goes in the job: a value we
             * cannot use is an error here, never a silent fall-back to the
             * file name. */
            bool is_rank = KEY_IS(k, "rank");
            int64_t *dst = is_rank ? &t->info.rank : &t->info.world_size;
            const char *at = p;
            r = value_int64(ps, p, dst, &ok, &p, is_rank ? "rank" : "world_size");
            if (!r && (!ok || *dst < (is_rank ? 0 : 1) || *dst > INT32_MAX - 1)) {
                *dst = -1;
                return mt_json_fail_code(ps, at, MT_ERR_RANGE,
                                 is_rank ? "distributedInfo.rank: expected an integer from 0 to 2147483646"
                                         : "distributedInfo.world_size: expected an integer from 1 to 2147483646");
            }
        } else if (KEY_IS(k, "backend")) {
            r = mt_json_value_str(ps, p, &t->info.backend, &ok, &p);
        } else if (KEY_IS(k, "nccl_version")) {
            r = mt_json_value_str_or_num(ps, p, &t->info.nccl_version, &ok, &p);
        } else if (KEY_IS(k, "pg_config")) {
            r = parse_pg_config(ps, p, &p);
        } else {
            r = mt_json_skip_value(ps, p, &p);
        }
        if (r)
            return r;
        if ((r = obj_next(ps, p, &more, &p)))
            return r;
    }
    *out = p;
    return MT_OK;
}

static int parse_devices(parser_t *ps, const char *p, const char **out)
{
    mt_trace_t *t = ps->t;
    int r;
    if (*p != '[') {
        t->stats.bad_values++;
        return mt_json_skip_value(ps, p, out);
    }
    p = skip_ws(p + 1);
    if (*p == ']') {
        *out = p + 1;
        return MT_OK;
    }
    for (;;) {
        if (*p == '{') {
            mt_device_t d = {.id = -1, .total_mem = -1, .num_sms = -1, .compute_major = -1, .compute_minor = -1};
            bool empty = false, more = false, ok = false;
            if ((r = obj_begin(ps, p, &p, &empty)))
                return r;
            more = !empty;
            while (more) {
                strtok_t k = {0};
                if ((r = obj_key(ps, p, &k, &p)))
                    return r;
                if (KEY_IS(k, "id"))
                    r = value_int64(ps, p, &d.id, &ok, &p, "id");
                else if (KEY_IS(k, "name"))
                    r = mt_json_value_str(ps, p, &d.name, &ok, &p);
                else if (KEY_IS(k, "totalGlobalMem"))
                    r = value_int64(ps, p, &d.total_mem, &ok, &p, "totalGlobalMem");
                else if (KEY_IS(k, "numSms"))
                    r = value_int64(ps, p, &d.num_sms, &ok, &p, "numSms");
                else if (KEY_IS(k, "computeMajor"))
                    r = value_int64(ps, p, &d.compute_major, &ok, &p, "computeMajor");
                else if (KEY_IS(k, "computeMinor"))
                    r = value_int64(ps, p, &d.compute_minor, &ok, &p, "computeMinor");
                else
                    r = mt_json_skip_value(ps, p, &p);
                if (r)
                    return r;
                if ((r = obj_next(ps, p, &more, &p)))
                    return r;
            }
            if (MT_GROW_BIG(t->devices, t->cap_devices, t->n_devices + 1, 64))
                return mt_json_fail_code(ps, p, MT_ERR_NOMEM, "device table");
            t->devices[t->n_devices++] = d;
        } else {
            t->stats.bad_values++;
            if ((r = mt_json_skip_value(ps, p, &p)))
                return r;
        }
        p = skip_ws(p);
        if (*p == ',') {
            p = skip_ws(p + 1);
            continue;
        }
        if (*p == ']') {
            *out = p + 1;
            return MT_OK;
        }
        return mt_json_fail(ps, p, "',' or ']'");
    }
}

/* One top-level member, p at its key. Sets *events_next when the member is
 * "traceEvents" (then p is left just after its '['). */
static int parse_member(parser_t *ps, const char *p, bool *events_next, const char **out)
{
    mt_trace_t *t = ps->t;
    strtok_t k = {0};
    bool ok;
    int r = obj_key(ps, p, &k, &p);
    if (r)
        return r;
    *events_next = false;
    if (KEY_IS(k, "traceEvents")) {
        if (*p != '[')
            return mt_json_fail(ps, p, "'[' (the traceEvents array)");
        if (ps->saw_events)
            return mt_json_fail_code(ps, p, MT_ERR_FORMAT, "a second \"traceEvents\" array");
        *events_next = true;
        *out = p + 1;
        return MT_OK;
    }
    if (KEY_IS(k, "baseTimeNanoseconds")) {
        int64_t v;
        r = value_int64(ps, p, &v, &ok, &p, "baseTimeNanoseconds");
        if (!r && ok) {
            t->info.base_ns = v;
            t->info.has_base = true;
        }
    } else if (KEY_IS(k, "distributedInfo")) {
        r = parse_dist_info(ps, p, &p);
    } else if (KEY_IS(k, "deviceProperties")) {
        r = parse_devices(ps, p, &p);
    } else if (KEY_IS(k, "traceName")) {
        r = mt_json_value_str(ps, p, &t->info.trace_name, &ok, &p);
    } else if (KEY_IS(k, "schemaVersion")) {
        r = value_int64(ps, p, &t->info.schema_version, &ok, &p, "schemaVersion");
    } else {
        t->stats.unknown_top_keys++;
        r = mt_json_skip_value(ps, p, &p);
    }
    if (r)
        return r;
    *out = p;
    return MT_OK;
}

/* ------------------------------------------------------------- driver */

/* Sizes of the side tables at a unit start, to undo a partial unit. */
typedef struct mark {
    size_t n_colls, n_meta, n_mems, n_pgs, n_pool, n_devices;
    /* not t->n_swaits: an event parsed again from its start finds its
     * record (swait_arg: the last one names n_events + 1) and reuses it */
    mt_trace_info_t info;
    uint64_t unknown_fields, unknown_top_keys, bad_values, bad_utf8;
} mark_t;

/* Events touch only the event-level tables and counters; header members
 * can touch everything, so only they pay for a copy of the header info. */
static void mark_take(const mt_trace_t *t, mark_t *m, bool header)
{
    m->n_colls = t->n_colls;
    m->n_meta = t->n_meta;
    m->n_mems = t->n_mems;
    m->n_pgs = t->n_pgs;
    m->n_pool = t->n_pg_rank_pool;
    m->n_devices = t->n_devices;
    if (header)
        m->info = t->info;
    m->unknown_fields = t->stats.unknown_fields;
    m->unknown_top_keys = t->stats.unknown_top_keys;
    m->bad_values = t->stats.bad_values;
    m->bad_utf8 = t->stats.bad_utf8;
}

static void mark_restore(mt_trace_t *t, const mark_t *m, bool header)
{
    t->n_colls = m->n_colls;
    t->n_meta = m->n_meta;
    t->n_mems = m->n_mems;
    t->n_pgs = m->n_pgs;
    t->n_pg_rank_pool = m->n_pool;
    t->n_devices = m->n_devices;
    if (header)
        t->info = m->info;
    t->stats.unknown_fields = m->unknown_fields;
    t->stats.unknown_top_keys = m->unknown_top_keys;
    t->stats.bad_values = m->bad_values;
    t->stats.bad_utf8 = m->bad_utf8;
}

/* Parse one unit at p according to the state. */
static int step(parser_t *ps, const char *p, const char **out)
{
    int r;
    bool events_next;
    p = skip_ws(p);
    switch (ps->state) {
    case ST_START:
        /* A UTF-8 byte order mark is tolerated. */
        if ((unsigned char)p[0] == 0xef && (unsigned char)p[1] == 0xbb && (unsigned char)p[2] == 0xbf)
            p = skip_ws(p + 3);
        if (*p == '{') {
            ps->state = ST_OBJ_FIRST;
        } else if (*p == '[') {
            ps->t->info.bare_array = true;
            ps->saw_events = true;
            ps->state = ST_EV_FIRST;
        } else {
            return mt_json_fail(ps, p, "'{' or '[' at the start of a trace");
        }
        *out = p + 1;
        return MT_OK;
    case ST_OBJ_FIRST:
    case ST_OBJ_NEXT:
        if (*p == '}') {
            ps->state = ST_END;
            *out = p + 1;
            return MT_OK;
        }
        if (ps->state == ST_OBJ_NEXT) {
            if (*p != ',')
                return mt_json_fail(ps, p, "',' or '}'");
            p = skip_ws(p + 1);
        }
        if ((r = parse_member(ps, p, &events_next, out)))
            return r;
        if (events_next) {
            ps->saw_events = true;
            ps->state = ST_EV_FIRST;
        } else {
            ps->state = ST_OBJ_NEXT;
        }
        return MT_OK;
    case ST_EV_FIRST:
    case ST_EV_NEXT:
        if (*p == ']') {
            ps->state = ps->t->info.bare_array ? ST_END : ST_OBJ_NEXT;
            *out = p + 1;
            return MT_OK;
        }
        if (ps->state == ST_EV_NEXT) {
            if (*p != ',')
                return mt_json_fail(ps, p, "',' or ']'");
            p = skip_ws(p + 1);
        }
        if (ps->t->info.bare_array && ps->state == ST_EV_FIRST && *p != '{' && *p != '\0')
            ps->values = true; /* [0.51, 0.49]: a file of values beside the traces, checked as JSON */
        if ((r = ps->values ? mt_json_skip_value(ps, p, out) : mt_loader_parse_event(ps, p, out)))
            return r;
        ps->state = ST_EV_NEXT;
        return MT_OK;
    case ST_END:
        if (p >= data_end(ps))
            return NEED_MORE;
        return mt_json_fail(ps, p, "end of input after the top-level value");
    case ST_DONE:
        break;
    }
    return MT_OK;
}

/* Make room and read more input after keeping buf[keep..len). */
static mt_status_t refill(parser_t *ps, size_t keep)
{
    if (ps->opts->should_stop && ps->opts->should_stop(ps->opts->should_stop_ctx))
        return mt_error_set(ps->err, MT_ERR_CANCELLED, "stopped: another process failed");
    size_t live = ps->len - keep;
    if (keep) {
        memmove(ps->buf, ps->buf + keep, live);
        ps->base_off += keep;
        ps->len = live;
    }
    size_t chunk = ps->opts->chunk_bytes ? ps->opts->chunk_bytes : MT_LOAD_CHUNK_DEFAULT;
    if (ps->cap - ps->len < (chunk / 2 ? chunk / 2 : 1)) {
        /* One unit is bigger than what is free: grow. Not mt_grow: the
         * buffer keeps MT_PAD zero bytes beyond its capacity. */
        size_t nc = ps->cap * 2;
        while (nc - ps->len < chunk)
            nc *= 2;
        char *b = realloc(ps->buf, nc + MT_PAD);
        if (!b)
            return mt_error_set(ps->err, MT_ERR_NOMEM, "growing the read buffer to %zu bytes", nc);
        ps->buf = b;
        ps->cap = nc;
    }
    size_t n;
    bool trunc = false;
    mt_status_t st = mt_input_read(ps->in, ps->buf + ps->len, ps->cap - ps->len, &n, &trunc, ps->err);
    if (st) {
        if (ps->err && ps->err->offset < 0 && st != MT_ERR_GZIP)
            ps->err->offset = (int64_t)(ps->base_off + ps->len);
        return st;
    }
    if (trunc)
        ps->gz_truncated = true;
    if (!n)
        ps->eof = true;
    ps->len += n;
    memset(ps->buf + ps->len, 0, MT_PAD);
    return MT_OK;
}

static mt_status_t run(parser_t *ps)
{
    size_t unit = 0; /* start of the current unit in buf */
    mark_t mk;
    mt_status_t st = refill(ps, 0);
    if (st)
        return st;
    if (ps->len == 0 && ps->gz_truncated) {
        if (ps->err)
            ps->err->offset = 0;
        return mt_error_set(ps->err, MT_ERR_TRUNCATED, "the gzip stream is cut short before any JSON");
    }
    if (ps->len == 0)
        return mt_error_set(ps->err, MT_ERR_FORMAT, "empty file");
    while (ps->state != ST_DONE) {
        if (ps->state == ST_END) {
            const char *p = skip_ws(ps->buf + unit);
            if (p >= data_end(ps)) {
                if (ps->eof)
                    break;
                st = refill(ps, ps->len);
                if (st)
                    return st;
                unit = 0;
                continue;
            }
        }
        const char *out = NULL;
        size_t n_ev = ps->t->n_events;
        bool header = ps->state != ST_EV_FIRST && ps->state != ST_EV_NEXT;
        mark_take(ps->t, &mk, header);
        int r = step(ps, ps->buf + unit, &out);
        if (r == MT_OK) {
            unit = (size_t)(out - ps->buf);
            if (ps->part_done)
                return MT_OK; /* one rank of a merged trace, read to its last event */
            continue;
        }
        ps->t->n_events = n_ev;
        mark_restore(ps->t, &mk, header);
        if (r != NEED_MORE)
            return (mt_status_t)r;
        if (ps->eof) {
            if (ps->state == ST_START)
                return mt_error_set(ps->err, MT_ERR_FORMAT, "no JSON value in the file");
            /* The input ends inside a unit: a partial copy or a killed job. */
            ps->t->stats.truncated = true;
            ps->t->stats.truncated_at = ps->base_off + unit;
            break;
        }
        st = refill(ps, unit);
        if (st)
            return st;
        unit = 0;
    }
    if (ps->gz_truncated && !ps->t->stats.truncated) {
        ps->t->stats.truncated = true;
        ps->t->stats.truncated_at = ps->base_off + ps->len;
    }
    return MT_OK;
}

/* Count lines up to offset by reading the input again: errors are rare, so
 * the hot path never tracks line numbers. */
static void locate(const char *path, const void *mem, size_t len, int64_t offset, mt_error_t *err)
{
    mt_input_t *in;
    if (offset < 0 || mt_input_open(path, mem, len, &in, NULL) != MT_OK)
        return;
    char *b = malloc(1 << 16);
    int64_t pos = 0;
    mt_errpos_t p = {1, 1};
    bool trunc = false;
    while (b && pos < offset) {
        size_t n;
        if (mt_input_read(in, b, 1 << 16, &n, &trunc, NULL) != MT_OK || !n)
            break;
        size_t use = (uint64_t)(offset - pos) < n ? (size_t)(offset - pos) : n;
        mt_errpos_count(&p, b, use);
        pos += (int64_t)use;
    }
    if (pos == offset)
        mt_errpos_set(err, NULL, offset, p.line, p.col);
    free(b);
    mt_input_close(in);
}

static mt_status_t finish(mt_trace_t *t, parser_t *ps)
{
    mt_trace_info_t *in = &t->info;
    if (in->has_base) {
        in->ts_style = MT_TS_REL;
        /* Relative ts + base: shift once, now that the base is known (it may
         * come after traceEvents). */
        for (size_t i = 0; i < t->n_events; i++) {
            int64_t v;
            if (__builtin_add_overflow(t->events[i].ts, in->base_ns, &v) || v >= MT_TIME_LIMIT_NS ||
                v <= -MT_TIME_LIMIT_NS || v + t->events[i].dur >= MT_TIME_LIMIT_NS)
                return mt_error_set(ps->err, MT_ERR_RANGE,
                                    "event %zu: ts + baseTimeNanoseconds out of range (more than 2^62 ns from 0)", i);
            t->events[i].ts = v;
        }
    } else {
        in->ts_style = ps->saw_fraction ? MT_TS_ABS_FRAC : (t->n_events ? MT_TS_ABS_INT : MT_TS_UNKNOWN);
    }
    return MT_OK;
}

/* part_rank >= 0: only that rank of a merged trace (parser_t.part_rank). */
static mt_status_t load(const char *path, const void *mem, size_t len, const char *name,
                        const mt_load_opts_t *opts, int32_t part_rank, mt_trace_t **out, mt_error_t *err)
{
    mt_load_opts_t defaults;
    if (!opts) {
        mt_load_opts_init(&defaults);
        opts = &defaults;
    }
    *out = NULL;
    mt_error_t local;
    if (!err)
        err = &local;
    mt_error_clear(err);
    err->rank = opts->rank_hint;
    if (name)
        snprintf(err->path, sizeof err->path, "%s", name);

    mt_trace_t *t = calloc(1, sizeof *t);
    parser_t ps = {.t = t, .err = err, .opts = opts, .part_rank = part_rank};
    if (part_rank >= 0) {
        ps.pid_lo = mt_merge_pid(part_rank, 0);
        ps.pid_hi = mt_merge_pid(part_rank, MT_MERGE_FR_SLOT); /* its Flight Recorder entries are not read back */
    }
    mt_status_t st = MT_ERR_NOMEM;
    if (!t)
        goto fail;
    if (part_rank >= 0) {
        if (!(ps.part_pid = malloc(MT_MERGE_PIDS_PER_RANK * sizeof *ps.part_pid)) ||
            !(ps.part_pid_str = calloc(MT_MERGE_PIDS_PER_RANK, sizeof *ps.part_pid_str)))
            goto fail;
        for (size_t i = 0; i < MT_MERGE_PIDS_PER_RANK; i++)
            ps.part_pid[i] = INT64_MIN;
    }
    t->info.rank = t->info.world_size = t->info.schema_version = -1;
    t->strings = mt_strtab_create();
    if (name && !(t->path = strdup(name)))
        goto fail;
    size_t chunk = opts->chunk_bytes ? opts->chunk_bytes : MT_LOAD_CHUNK_DEFAULT;
    ps.cap = chunk;
    ps.buf = malloc(ps.cap + MT_PAD);
    if (!t->strings || !ps.buf) {
        mt_error_set(err, MT_ERR_NOMEM, "allocating the loader");
        goto fail;
    }
    st = mt_input_open(path, mem, len, &ps.in, err);
    if (st)
        goto fail;
    /* Size the event table from the input size (Kineto spends 150-300
     * bytes per event): no copying regrowth on the way. Pages are only
     * touched as events arrive, so an overestimate costs address space. */
    if (!opts->no_store) {
        uint64_t guess = mt_input_size_hint(ps.in) / 160 + 64;
        if (guess > ((uint64_t)1 << 32))
            guess = (uint64_t)1 << 32;
        t->events = mt_big_malloc((size_t)guess * sizeof *t->events);
        if (t->events)
            t->cap_events = (size_t)guess;
    }
    ps.classify = !opts->no_classify;
    st = run(&ps);
    if (st == MT_OK && ps.t->stats.truncated && opts->strict) {
        err->offset = (int64_t)ps.t->stats.truncated_at;
        st = mt_error_set(err, MT_ERR_TRUNCATED,
                          "input ends inside the trace (%zu events before the cut; without --strict they are kept)",
                          t->n_events);
    }
    if (st == MT_OK && !ps.saw_events && !t->stats.truncated) {
        st = mt_error_set(err, MT_ERR_NOT_TRACE, "valid JSON, but no \"traceEvents\" array");
    }
    if (st == MT_OK && ps.values)
        st = t->stats.truncated
                 ? mt_error_set(err, MT_ERR_TRUNCATED, "input ends inside an array of values (not a trace)")
                 : mt_error_set(err, MT_ERR_NOT_TRACE, "valid JSON, but an array of values, not of trace events");
    if (st == MT_OK && part_rank >= 0 && !ps.part_kept && !t->stats.truncated)
        st = mt_error_set(err, MT_ERR_NOT_TRACE, "no event of rank %d in this merged trace (pids %lld..%lld)",
                          (int)part_rank, (long long)ps.pid_lo, (long long)ps.pid_hi - 1);
    if (st == MT_OK && part_rank >= 0 && t->info.rank < 0)
        t->info.rank = part_rank; /* the merged trace keeps no header of its ranks: the pids say it */
    if (st == MT_OK)
        st = finish(t, &ps);
    if (st == MT_OK) {
        t->stats.bytes_in = mt_input_raw_bytes(ps.in);
        t->stats.bytes_json = ps.base_off + ps.len;
    }
    mt_input_close(ps.in);
    ps.in = NULL;
    /* The parser's buffers go before the link, whose indexes then reuse
     * their memory (the read buffer alone is MT_LOAD_CHUNK_DEFAULT bytes). */
    free(ps.buf);
    free(ps.scratch);
    free(ps.stack);
    free(ps.name_cls);
    ps.buf = ps.scratch = NULL;
    ps.stack = NULL;
    ps.name_cls = NULL;
    /* (classification already happened event by event) */
    if (st == MT_OK && !opts->no_classify && !opts->no_link)
        st = mt_trace_link(t, NULL);
    if (st)
        goto fail;
    if (t->info.rank >= 0 && t->info.rank <= INT32_MAX)
        err->rank = (int)t->info.rank;
    free(ps.part_pid); /* the parser's other buffers went before the link */
    free(ps.part_pid_str);
    *out = t;
    return MT_OK;

fail:
    if (st == MT_ERR_SYNTAX || st == MT_ERR_RANGE || st == MT_ERR_FORMAT)
        locate(path, mem, len, err->offset, err);
    if (t && t->info.rank >= 0 && t->info.rank <= INT32_MAX)
        err->rank = (int)t->info.rank;
    if (err->code == MT_OK)
        mt_error_set(err, st, "%s", "");
    mt_input_close(ps.in);
    free(ps.buf);
    free(ps.scratch);
    free(ps.stack);
    free(ps.name_cls);
    free(ps.part_pid);
    free(ps.part_pid_str);
    mt_trace_free(t);
    return st;
}

/* An Nsight Systems export (SQLite's first bytes), or one process of one
 * ("<file>#pid<N>", which is no file of its own): src/trace/nsys.c reads it. */
static bool nsys_input(const char *path)
{
    FILE *f = path ? fopen(path, "rb") : NULL;
    if (!f) {
        const char *h = path ? strrchr(path, '#') : NULL;
        return h && strncmp(h, "#pid", 4) == 0;
    }
    unsigned char head[16];
    size_t n = fread(head, 1, sizeof head, f);
    fclose(f);
    return mt_nsys_sniff(head, n);
}

mt_status_t mt_trace_load(const char *path, const mt_load_opts_t *opts, mt_trace_t **out, mt_error_t *err)
{
    if (nsys_input(path))
        return mt_nsys_load(path, opts, out, err);
    size_t plen;
    int32_t part = mt_merged_part_parse(path, &plen);
    if (part >= 0) {
        char *file = malloc(plen + 1);
        if (!file) {
            *out = NULL;
            return mt_error_set(err, MT_ERR_NOMEM, "path");
        }
        memcpy(file, path, plen);
        file[plen] = '\0';
        mt_status_t st = load(file, NULL, 0, path, opts, part, out, err);
        free(file);
        return st;
    }
    return load(path, NULL, 0, path, opts, -1, out, err);
}

mt_status_t mt_trace_load_buffer(const void *buf, size_t len, const char *name, const mt_load_opts_t *opts,
                                 mt_trace_t **out, mt_error_t *err)
{
    if (mt_nsys_sniff(buf, len))
        return mt_nsys_load_buffer(buf, len, name, opts, out, err);
    return load(NULL, buf ? buf : "", len, name, opts, -1, out, err);
}
