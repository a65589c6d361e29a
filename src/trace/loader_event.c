/* The loader's event builder (trace/loader_event.h): one trace event's
 * members and its "args" read over the JSON scanner (trace/json_scan.h)
 * into the compact model, keys matched whole by their first letter
 * (ev_key_fast, arg_key_fast); the driver is loader.c. */
#define _POSIX_C_SOURCE 200809L
#include "trace/loader_event.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mergetrace/buf.h"
#include "mergetrace/classify.h"
#include "base/bigmem.h"
#include "base/numparse.h"

/* --------------------------------------------------------------- args */

typedef struct ev_extra {
    bool coll_init;          /* coll holds its defaults (set on first use: most events have none) */
    mt_coll_t coll;          /* collective fields found in args */
    uint32_t meta_str;       /* args.name / args.labels */
    int64_t meta_value;      /* args.sort_index */
    bool has_meta;
    const char *dims;        /* "Input Dims" value span (buffer stays valid for the unit) */
    size_t dims_len;
    uint32_t input_type;     /* first "Input type" string */
    mt_mem_t mem;            /* [memory] args; only mem.fields is set before the first one */
    int64_t pid, tid;        /* the event's ids at full width until it is committed */
    uint64_t corr, ext;      /* (mt_event_set_ids narrows them) */
} ev_extra_t;

/* Product of the first inner list of an "Input Dims" value, e.g.
 * [[394241]] -> 394241, [[8, 16], []] -> 128. -1 when not of that shape. */
static int64_t dims_nelems(const char *s, size_t n)
{
    const char *p = s, *e = s + n;
    while (p < e && *p != '[')
        p++;
    p++;
    while (p < e && (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r'))
        p++;
    if (p >= e || *p != '[')
        return -1;
    p++;
    int64_t prod = 1;
    bool any = false;
    while (p < e && *p != ']') {
        if ((unsigned)(*p - '0') <= 9) {
            int64_t v = 0;
            while (p < e && (unsigned)(*p - '0') <= 9) {
                if (v > INT64_MAX / 10)
                    return -1;
                v = v * 10 + (*p++ - '0');
            }
            if (v && prod > INT64_MAX / v)
                return -1;
            prod *= v;
            any = true;
        } else {
            p++;
        }
    }
    return any ? prod : -1;
}

static const mt_coll_t coll_defaults = {.seq = -1, .in_nelems = -1, .out_nelems = -1, .group_size = -1,
                                        .pg_id = -1, .src_rank = -1, .dst_rank = -1, .rank = -1,
                                        .grank_start = -1, .grank_stride = -1};

static inline mt_coll_t *xcoll(ev_extra_t *x)
{
    if (!x->coll_init) {
        x->coll = coll_defaults;
        x->coll_init = true;
    }
    return &x->coll;
}

/* The args keys the loader reads. */
enum arg_key {
    AK_NONE,
    AK_OTHER,
    AK_SEQ, AK_NAME, AK_RANK, AK_ADDR,
    AK_DTYPE, AK_BYTES, AK_LABELS, AK_COMMS_ID,
    AK_SRC_RANK, AK_DST_RANK, AK_DEVICE_ID, AK_GROUP_SIZE,
    AK_SORT_INDEX, AK_INPUT_DIMS, AK_INPUT_TYPE, AK_EXTERNAL_ID,
    AK_CORRELATION, AK_DEVICE_TYPE, AK_IN_MSG_NELEMS, AK_IN_SPLIT_SIZE,
    AK_OUT_MSG_NELEMS, AK_OUT_SPLIT_SIZE, AK_TOTAL_RESERVED, AK_COLLECTIVE_NAME,
    AK_TOTAL_ALLOCATED, AK_PROCESS_GROUP_ID, AK_GLOBAL_RANK_START, AK_PROCESS_GROUP_NAME,
    AK_GLOBAL_RANK_STRIDE, AK_PROCESS_GROUP_RANKS, AK_PROCESS_GROUP_DESCRIPTION,
    AK_WAIT_ON_STREAM, AK_WAIT_RECORD_CORR,
};

/* An args key token to its id (raw bytes, as before: an escaped spelling
 * is another key). */
static int arg_key_of(const strtok_t *k)
{
    switch (k->len) {
    case 3:
        if (memcmp(k->s, "Seq", 3) == 0)
            return AK_SEQ;
        return AK_OTHER;
    case 4:
        if (memcmp(k->s, "name", 4) == 0)
            return AK_NAME;
        if (memcmp(k->s, "Rank", 4) == 0)
            return AK_RANK;
        if (memcmp(k->s, "Addr", 4) == 0)
            return AK_ADDR;
        return AK_OTHER;
    case 5:
        if (memcmp(k->s, "dtype", 5) == 0)
            return AK_DTYPE;
        if (memcmp(k->s, "Bytes", 5) == 0)
            return AK_BYTES;
        return AK_OTHER;
    case 6:
        if (memcmp(k->s, "labels", 6) == 0)
            return AK_LABELS;
        return AK_OTHER;
    case 8:
        if (memcmp(k->s, "Comms Id", 8) == 0)
            return AK_COMMS_ID;
        if (memcmp(k->s, "Src Rank", 8) == 0)
            return AK_SRC_RANK;
        if (memcmp(k->s, "Dst Rank", 8) == 0)
            return AK_DST_RANK;
        return AK_OTHER;
    case 9:
        if (memcmp(k->s, "Device Id", 9) == 0)
            return AK_DEVICE_ID;
        return AK_OTHER;
    case 10:
        if (memcmp(k->s, "Group size", 10) == 0)
            return AK_GROUP_SIZE;
        if (memcmp(k->s, "sort_index", 10) == 0)
            return AK_SORT_INDEX;
        if (memcmp(k->s, "Input Dims", 10) == 0)
            return AK_INPUT_DIMS;
        if (memcmp(k->s, "Input type", 10) == 0)
            return AK_INPUT_TYPE;
        return AK_OTHER;
    case 11:
        if (memcmp(k->s, "External id", 11) == 0)
            return AK_EXTERNAL_ID;
        if (memcmp(k->s, "external id", 11) == 0)
            return AK_EXTERNAL_ID;
        if (memcmp(k->s, "correlation", 11) == 0)
            return AK_CORRELATION;
        if (memcmp(k->s, "Device Type", 11) == 0)
            return AK_DEVICE_TYPE;
        return AK_OTHER;
    case 13:
        if (memcmp(k->s, "In msg nelems", 13) == 0)
            return AK_IN_MSG_NELEMS;
        if (memcmp(k->s, "In split size", 13) == 0)
            return AK_IN_SPLIT_SIZE;
        return AK_OTHER;
    case 14:
        if (memcmp(k->s, "Out msg nelems", 14) == 0)
            return AK_OUT_MSG_NELEMS;
        if (memcmp(k->s, "Out split size", 14) == 0)
            return AK_OUT_SPLIT_SIZE;
        if (memcmp(k->s, "Total Reserved", 14) == 0)
            return AK_TOTAL_RESERVED;
        if (memcmp(k->s, "wait_on_stream", 14) == 0)
            return AK_WAIT_ON_STREAM;
        return AK_OTHER;
    case 15:
        if (memcmp(k->s, "Collective name", 15) == 0)
            return AK_COLLECTIVE_NAME;
        if (memcmp(k->s, "Total Allocated", 15) == 0)
            return AK_TOTAL_ALLOCATED;
        return AK_OTHER;
    case 16:
        if (memcmp(k->s, "Process Group ID", 16) == 0)
            return AK_PROCESS_GROUP_ID;
        return AK_OTHER;
    case 17:
        if (memcmp(k->s, "Global rank start", 17) == 0)
            return AK_GLOBAL_RANK_START;
        return AK_OTHER;
    case 18:
        if (memcmp(k->s, "Process Group Name", 18) == 0)
            return AK_PROCESS_GROUP_NAME;
        if (memcmp(k->s, "Global rank stride", 18) == 0)
            return AK_GLOBAL_RANK_STRIDE;
        return AK_OTHER;
    case 19:
        if (memcmp(k->s, "Process Group Ranks", 19) == 0)
            return AK_PROCESS_GROUP_RANKS;
        return AK_OTHER;
    case 25:
        if (memcmp(k->s, "Process Group Description", 25) == 0)
            return AK_PROCESS_GROUP_DESCRIPTION;
        return AK_OTHER;
    case 33:
        if (memcmp(k->s, "wait_on_cuda_event_record_corr_id", 33) == 0)
            return AK_WAIT_RECORD_CORR;
        return AK_OTHER;
    default:
        return AK_OTHER;
    }
}

/* Why: as ev_key_fast, for the keys Kineto writes in args. Those the
 * loader reads, and the frequent ones it passes over (AK_OTHER: a kernel's
 * "queued", "device", "stream", "grid", ...; a CPU op's "Ev Idx", "Call
 * stack", ...), are compared whole with their quotes and colon; any other
 * key, or blanks before the colon, returns AK_NONE and obj_key reads it. */
static inline int arg_key_fast(const char *p, const char **out)
{
#define AK_AT(lit, id)                                                              \
    if (memcmp(p, "\"" lit "\":", sizeof(lit) + 2) == 0) {                             \
        /* the slow path's table agrees (checked in debug builds) */                \
        assert(arg_key_of(&(strtok_t){lit, sizeof(lit) - 1, false}) == (id));       \
        *out = skip_ws(p + sizeof(lit) + 2);                                        \
        return id;                                                                  \
    }
    switch (p[1]) {
    case 'E':
        AK_AT("External id", AK_EXTERNAL_ID)
        AK_AT("Ev Idx", AK_OTHER)
        break;
    case 'c':
        AK_AT("correlation", AK_CORRELATION)
        AK_AT("cbid", AK_OTHER)
        AK_AT("context", AK_OTHER)
        AK_AT("cuda_sync_kind", AK_OTHER)
        break;
    case 'd':
        AK_AT("device", AK_OTHER)
        AK_AT("dtype", AK_DTYPE)
        AK_AT("direction", AK_OTHER)
        break;
    case 's':
        AK_AT("stream", AK_OTHER)
        AK_AT("shared memory", AK_OTHER)
        AK_AT("sort_index", AK_SORT_INDEX)
        AK_AT("size", AK_OTHER)
        AK_AT("sqid", AK_OTHER)
        break;
    case 'q':
        AK_AT("queued", AK_OTHER)
        break;
    case 'r':
        AK_AT("registers per thread", AK_OTHER)
        AK_AT("row", AK_OTHER)
        break;
    case 'g':
        AK_AT("grid", AK_OTHER)
        break;
    case 'b':
        AK_AT("block", AK_OTHER)
        AK_AT("blocks per SM", AK_OTHER)
        AK_AT("bytes", AK_OTHER)
        break;
    case 'w':
        AK_AT("warps per SM", AK_OTHER)
        AK_AT("wait_on_stream", AK_WAIT_ON_STREAM)
        AK_AT("wait_on_cuda_event_record_corr_id", AK_WAIT_RECORD_CORR)
        AK_AT("wait_on_cuda_event_id", AK_OTHER)
        break;
    case 'e':
        AK_AT("est. achieved occupancy %", AK_OTHER)
        AK_AT("external id", AK_EXTERNAL_ID)
        break;
    case 'I':
        AK_AT("Input Dims", AK_INPUT_DIMS)
        AK_AT("Input type", AK_INPUT_TYPE)
        AK_AT("In msg nelems", AK_IN_MSG_NELEMS)
        AK_AT("In split size", AK_IN_SPLIT_SIZE)
        break;
    case 'O':
        AK_AT("Out msg nelems", AK_OUT_MSG_NELEMS)
        AK_AT("Out split size", AK_OUT_SPLIT_SIZE)
        AK_AT("Op count", AK_OTHER)
        break;
    case 'C':
        AK_AT("Collective name", AK_COLLECTIVE_NAME)
        AK_AT("Comms Id", AK_COMMS_ID)
        AK_AT("Call stack", AK_OTHER)
        AK_AT("Concrete Inputs", AK_OTHER)
        break;
    case 'G':
        AK_AT("Group size", AK_GROUP_SIZE)
        AK_AT("Global rank start", AK_GLOBAL_RANK_START)
        AK_AT("Global rank stride", AK_GLOBAL_RANK_STRIDE)
        break;
    case 'P':
        AK_AT("Process Group Name", AK_PROCESS_GROUP_NAME)
        AK_AT("Process Group Description", AK_PROCESS_GROUP_DESCRIPTION)
        AK_AT("Process Group Ranks", AK_PROCESS_GROUP_RANKS)
        AK_AT("Process Group ID", AK_PROCESS_GROUP_ID)
        AK_AT("Profiler Event Index", AK_OTHER)
        AK_AT("Python parent id", AK_OTHER)
        AK_AT("Python id", AK_OTHER)
        break;
    case 'S':
        AK_AT("Seq", AK_SEQ)
        AK_AT("Sequence number", AK_OTHER)
        AK_AT("Src Rank", AK_SRC_RANK)
        break;
    case 'R':
        AK_AT("Rank", AK_RANK)
        AK_AT("Record function id", AK_OTHER)
        break;
    case 'F':
        AK_AT("Fwd thread id", AK_OTHER)
        break;
    case 'T':
        AK_AT("Trace name", AK_OTHER)
        AK_AT("Trace iteration", AK_OTHER)
        AK_AT("Total Allocated", AK_TOTAL_ALLOCATED)
        AK_AT("Total Reserved", AK_TOTAL_RESERVED)
        break;
    case 'M':
        AK_AT("Module Hierarchy", AK_OTHER)
        break;
    case 'D':
        AK_AT("Device Type", AK_DEVICE_TYPE)
        AK_AT("Device Id", AK_DEVICE_ID)
        AK_AT("Dst Rank", AK_DST_RANK)
        break;
    case 'A':
        AK_AT("Addr", AK_ADDR)
        break;
    case 'B':
        AK_AT("Bytes", AK_BYTES)
        break;
    case 'm':
        AK_AT("memory bandwidth (GB/s)", AK_OTHER)
        break;
    case 'n':
        AK_AT("name", AK_NAME)
        break;
    case 'l':
        AK_AT("labels", AK_LABELS)
        break;
    case 'p':
        AK_AT("packet_ptr", AK_OTHER)
        break;
    case 'k':
        AK_AT("k_work_ptr", AK_OTHER)
        break;
    default:
        break;
    }
#undef AK_AT
    return AK_NONE;
}

/* A stream-wait arg of a cuda_sync event (enable_cuda_sync_events), at
 * its value: kept in the record of the event being parsed (the last of
 * t->swaits when it names event n_events + 1, else a new one), written
 * here so that events without these args pay nothing, not even a flag.
 * mt_loader_parse_event takes the record back when the event is not kept; the
 * analysis reads only cuda_sync events' records. */
static __attribute__((noinline, cold)) int swait_arg(parser_t *ps, const char *p, int key, const char **out)
{
    mt_trace_t *t = ps->t;
    int64_t v = -1;
    bool ok = false;
    int r = value_int64(ps, p, &v, &ok, out, key == AK_WAIT_ON_STREAM ? "wait_on_stream"
                                                                     : "wait_on_cuda_event_record_corr_id");
    if (r || !ok)
        return r;
    uint32_t ev = (uint32_t)t->n_events + 1;
    if (!t->n_swaits || t->swaits[t->n_swaits - 1].event != ev) {
        if (MT_GROW(t->swaits, t->cap_swaits, t->n_swaits + 1, 64))
            return mt_json_fail_code(ps, p, MT_ERR_NOMEM, "stream wait table");
        t->swaits[t->n_swaits++] = (mt_swait_t){.wait_stream = -1, .record_corr = -1, .event = ev};
    }
    mt_swait_t *w = &t->swaits[t->n_swaits - 1];
    if (key == AK_WAIT_ON_STREAM)
        w->wait_stream = v;
    else
        w->record_corr = v;
    return MT_OK;
}

/* The stream-wait record of the event being parsed (swait_arg), if any,
 * taken back: the event is not kept. */
static __attribute__((noinline, cold)) void swait_drop(mt_trace_t *t)
{
    if (t->n_swaits && t->swaits[t->n_swaits - 1].event == (uint32_t)t->n_events + 1)
        t->n_swaits--;
}

/* p at '{' of "args". */
static int parse_args(parser_t *ps, const char *p, mt_event_t *ev, ev_extra_t *x, const char **out)
{
    bool empty = false, more = true, ok = false;
    int r = obj_begin(ps, p, &p, &empty);
    if (r)
        return r;
    if (empty) {
        *out = p;
        return MT_OK;
    }
    while (more) {
        int key = arg_key_fast(p, &p);
        if (key == AK_NONE) {
            strtok_t k = {0};
            if ((r = obj_key(ps, p, &k, &p)))
                return r;
            key = arg_key_of(&k);
        }
        r = -2; /* "not handled" */
        switch (key) {
        case AK_SEQ: {
            r = value_int64(ps, p, &xcoll(x)->seq, &ok, &p, "Seq");
            if (ok) xcoll(x)->fields |= MT_COLL_F_SEQ;
            break;
        }
        case AK_NAME: {
            r = mt_json_value_str(ps, p, &x->meta_str, &ok, &p);
            if (ok) x->has_meta = true;
            break;
        }
        case AK_RANK: {
            r = value_int64(ps, p, &xcoll(x)->rank, &ok, &p, "Rank");
            if (ok) xcoll(x)->fields |= MT_COLL_F_RANK;
            break;
        }
        case AK_ADDR: {
            r = value_uint64(ps, p, &x->mem.addr, &ok, &p, "Addr");
            if (ok) x->mem.fields |= MT_MEM_F_ADDR;
            break;
        }
        case AK_DTYPE: {
            r = mt_json_value_str(ps, p, &xcoll(x)->dtype, &ok, &p);
            if (ok) xcoll(x)->fields |= MT_COLL_F_DTYPE;
            break;
        }
        case AK_BYTES: {
            r = value_int64(ps, p, &x->mem.bytes, &ok, &p, "Bytes");
            if (ok) x->mem.fields |= MT_MEM_F_BYTES;
            break;
        }
        case AK_LABELS: {
            r = mt_json_value_str(ps, p, &x->meta_str, &ok, &p);
            if (ok) x->has_meta = true;
            break;
        }
        case AK_COMMS_ID: {
            r = value_uint64(ps, p, &xcoll(x)->comms_id, &ok, &p, "Comms Id");
            if (ok) xcoll(x)->fields |= MT_COLL_F_COMMS_ID;
            break;
        }
        case AK_SRC_RANK: {
            r = value_int64(ps, p, &xcoll(x)->src_rank, &ok, &p, "Src Rank");
            if (ok) xcoll(x)->fields |= MT_COLL_F_SRC_RANK;
            break;
        }
        case AK_DST_RANK: {
            r = value_int64(ps, p, &xcoll(x)->dst_rank, &ok, &p, "Dst Rank");
            if (ok) xcoll(x)->fields |= MT_COLL_F_DST_RANK;
            break;
        }
        case AK_DEVICE_ID: {
            r = value_int64(ps, p, &x->mem.device_id, &ok, &p, "Device Id");
            if (ok) x->mem.fields |= MT_MEM_F_DEV_ID;
            break;
        }
        case AK_GROUP_SIZE: {
            r = value_int64(ps, p, &xcoll(x)->group_size, &ok, &p, "Group size");
            if (ok) xcoll(x)->fields |= MT_COLL_F_GROUP_SIZE;
            break;
        }
        case AK_SORT_INDEX: {
            r = value_int64(ps, p, &x->meta_value, &ok, &p, "sort_index");
            if (ok) x->has_meta = true;
            break;
        }
        case AK_INPUT_DIMS: {
            const char *v0 = p;
            r = mt_json_skip_value(ps, p, &p);
            if (!r) {
                x->dims = v0;
                x->dims_len = (size_t)(p - v0);
            }
            break;
        }
        case AK_INPUT_TYPE: {
            /* Keep the first string of the list: the dtype of input 0. */
            const char *v0 = p;
            r = mt_json_skip_value(ps, p, &p);
            if (!r && *v0 == '[') {
                const char *q = skip_ws(v0 + 1);
                strtok_t s = {0};
                const char *dummy;
                if (*q == '"' && parse_string(ps, q, &s, &dummy) == MT_OK)
                    r = mt_json_intern(ps, &s, &x->input_type);
            }
            break;
        }
        case AK_EXTERNAL_ID: {
            r = value_uint64(ps, p, &x->ext, &ok, &p, "External id");
            if (ok) ev->flags |= MT_EV_HAS_EXT;
            break;
        }
        case AK_CORRELATION: {
            r = value_uint64(ps, p, &x->corr, &ok, &p, "correlation");
            if (ok) ev->flags |= MT_EV_HAS_CORR;
            break;
        }
        case AK_DEVICE_TYPE: {
            int64_t v = 0;
            r = value_int64(ps, p, &v, &ok, &p, "Device Type");
            if (ok && v >= INT32_MIN && v <= INT32_MAX) {
                x->mem.device_type = (int32_t)v;
                x->mem.fields |= MT_MEM_F_DEV_TYPE;
            }
            break;
        }
        case AK_IN_MSG_NELEMS: {
            r = value_int64(ps, p, &xcoll(x)->in_nelems, &ok, &p, "In msg nelems");
            if (ok) xcoll(x)->fields |= MT_COLL_F_IN_NELEMS;
            break;
        }
        case AK_IN_SPLIT_SIZE: {
            r = mt_json_value_str(ps, p, &xcoll(x)->in_split, &ok, &p);
            if (ok) xcoll(x)->fields |= MT_COLL_F_SPLITS;
            break;
        }
        case AK_OUT_MSG_NELEMS: {
            r = value_int64(ps, p, &xcoll(x)->out_nelems, &ok, &p, "Out msg nelems");
            if (ok) xcoll(x)->fields |= MT_COLL_F_OUT_NELEMS;
            break;
        }
        case AK_OUT_SPLIT_SIZE: {
            r = mt_json_value_str(ps, p, &xcoll(x)->out_split, &ok, &p);
            if (ok) xcoll(x)->fields |= MT_COLL_F_SPLITS;
            break;
        }
        case AK_TOTAL_RESERVED: {
            r = value_int64(ps, p, &x->mem.total_reserved, &ok, &p, "Total Reserved");
            if (ok) x->mem.fields |= MT_MEM_F_RESERVED;
            break;
        }
        case AK_COLLECTIVE_NAME: {
            r = mt_json_value_str(ps, p, &xcoll(x)->name, &ok, &p);
            if (ok) xcoll(x)->fields |= MT_COLL_F_NAME;
            break;
        }
        case AK_TOTAL_ALLOCATED: {
            r = value_int64(ps, p, &x->mem.total_allocated, &ok, &p, "Total Allocated");
            if (ok) x->mem.fields |= MT_MEM_F_ALLOC;
            break;
        }
        case AK_PROCESS_GROUP_ID: {
            r = value_int64(ps, p, &xcoll(x)->pg_id, &ok, &p, "Process Group ID");
            if (ok) xcoll(x)->fields |= MT_COLL_F_PG_ID;
            break;
        }
        case AK_GLOBAL_RANK_START: {
            r = value_int64(ps, p, &xcoll(x)->grank_start, &ok, &p, "Global rank start");
            if (ok) xcoll(x)->fields |= MT_COLL_F_GRANK_START;
            break;
        }
        case AK_PROCESS_GROUP_NAME: {
            r = mt_json_value_str_or_num(ps, p, &xcoll(x)->pg_name, &ok, &p);
            if (ok) xcoll(x)->fields |= MT_COLL_F_PG_NAME;
            break;
        }
        case AK_GLOBAL_RANK_STRIDE: {
            r = value_int64(ps, p, &xcoll(x)->grank_stride, &ok, &p, "Global rank stride");
            if (ok) xcoll(x)->fields |= MT_COLL_F_GRANK_STRIDE;
            break;
        }
        case AK_PROCESS_GROUP_RANKS: {
            r = mt_json_value_rank_list(ps, p, &xcoll(x)->pg_ranks, &ok, &p);
            if (ok) xcoll(x)->fields |= MT_COLL_F_PG_RANKS;
            break;
        }
        case AK_PROCESS_GROUP_DESCRIPTION: {
            r = mt_json_value_str(ps, p, &xcoll(x)->pg_desc, &ok, &p);
            if (ok) xcoll(x)->fields |= MT_COLL_F_PG_DESC;
            break;
        }
        case AK_WAIT_ON_STREAM:
        case AK_WAIT_RECORD_CORR:
            r = swait_arg(ps, p, key, &p);
            break;
        default:
            break;
        }
        if (r == -2)
            r = skip_fast(ps, p, &p);
        if (r)
            return r;
        if ((r = obj_next(ps, p, &more, &p)))
            return r;
    }
    *out = p;
    return MT_OK;
}

/* ------------------------------------------------------------- events */

static mt_phase_t phase_of(const strtok_t *t)
{
    if (t->len != 1)
        return MT_PH_OTHER;
    switch (t->s[0]) {
    case 'X': return MT_PH_X;
    case 'i': case 'I': return MT_PH_I;
    case 's': return MT_PH_S;
    case 'f': return MT_PH_F;
    case 't': return MT_PH_T;
    case 'M': return MT_PH_M;
    case 'C': return MT_PH_C;
    default: return MT_PH_OTHER;
    }
}

/* "stream 7" -> 7 (legacy GPU tids); a plain numeric string -> its value. */
static bool numeric_id_string(const strtok_t *t, int64_t *v)
{
    const char *s = t->s;
    size_t n = t->len;
    if (n > 7 && memcmp(s, "stream ", 7) == 0) {
        s += 7;
        n -= 7;
    }
    if (!n || n > 18)
        return false;
    int64_t x = 0;
    size_t i = 0;
    bool neg = s[0] == '-';
    if (neg)
        i = 1;
    if (i == n)
        return false;
    for (; i < n; i++) {
        if ((unsigned)(s[i] - '0') > 9)
            return false;
        x = x * 10 + (s[i] - '0');
    }
    *v = neg ? -x : x;
    return true;
}

/* pid / tid: a number, or a string (numeric strings become numbers). */
__attribute__((noinline)) static int parse_id_field_slow(parser_t *ps, const char *p, int64_t *v, bool *is_str,
                                                          const char **out, const char *what)
{
    *is_str = false;
    if (*p == '"') {
        strtok_t tok = {0};
        int r = parse_string(ps, p, &tok, out);
        if (r)
            return r;
        if (!tok.esc && numeric_id_string(&tok, v))
            return MT_OK;
        uint32_t id;
        r = mt_json_intern(ps, &tok, &id);
        if (r)
            return r;
        *v = id;
        *is_str = true;
        return MT_OK;
    }
    bool ok;
    int r = value_int64(ps, p, v, &ok, out, what);
    if (!r && !ok)
        *v = 0;
    return r;
}

/* Most pids and tids are plain digits: those without a call. */
static inline int parse_id_field(parser_t *ps, const char *p, int64_t *v, bool *is_str, const char **out,
                                 const char *what)
{
    uint64_t u;
    const char *e = fast_digits(ps, p, &u);
    if (e) {
        *is_str = false;
        *v = (int64_t)u;
        *out = e;
        return MT_OK;
    }
    return parse_id_field_slow(ps, p, v, is_str, out, what);
}

static int add_other_cat(parser_t *ps, uint32_t name, const char *p)
{
    mt_trace_t *t = ps->t;
    for (size_t i = 0; i < t->n_other_cats; i++)
        if (t->other_cat_names[i] == name) {
            t->other_cat_counts[i]++;
            return MT_OK;
        }
    if (t->n_other_cats == t->cap_other_cats) {
        /* two arrays, one capacity: grow the names, then the counts to the same */
        size_t cn = t->cap_other_cats, cc = t->cap_other_cats;
        if (MT_GROW(t->other_cat_names, cn, t->n_other_cats + 1, 8) ||
            MT_GROW(t->other_cat_counts, cc, cn, 8))
            return mt_json_fail_code(ps, p, MT_ERR_NOMEM, "category table");
        t->cap_other_cats = cn;
    }
    t->other_cat_names[t->n_other_cats] = name;
    t->other_cat_counts[t->n_other_cats++] = 1;
    return MT_OK;
}

/* The class of one event, as mt_trace_classify would set it; done here so
 * the table is not walked again. Kernel names are decoded once per name. */
static int classify_event(parser_t *ps, mt_event_t *ev, const char *at)
{
    switch (mt_cat_normal((mt_cat_t)ev->cat)) {
    case MT_CAT_KERNEL: {
        if (ev->name >= ps->cap_name_cls) {
            size_t nc = ps->cap_name_cls ? ps->cap_name_cls : 1024;
            while (nc <= ev->name)
                nc *= 2;
            unsigned char *a = realloc(ps->name_cls, nc);
            if (!a)
                return mt_json_fail_code(ps, at, MT_ERR_NOMEM, "class cache");
            memset(a + ps->cap_name_cls, 0, nc - ps->cap_name_cls);
            ps->name_cls = a;
            ps->cap_name_cls = nc;
        }
        unsigned char *c = &ps->name_cls[ev->name];
        if (!*c) {
            size_t len;
            const char *nm = mt_strtab_get(ps->t->strings, ev->name, &len);
            *c = mt_nccl_decode(nm, len, NULL) ? 2 : 1;
        }
        const mt_coll_t *co = ev->coll ? &ps->t->colls[ev->coll - 1] : NULL;
        bool meta = co && (co->fields & (MT_COLL_F_NAME | MT_COLL_F_PG_NAME | MT_COLL_F_COMMS_ID));
        ev->cls = (uint8_t)(*c == 2 || meta ? MT_CLASS_COMM : MT_CLASS_COMPUTE);
        break;
    }
    case MT_CAT_GPU_MEMCPY: ev->cls = MT_CLASS_MEMCPY; break;
    case MT_CAT_GPU_MEMSET: ev->cls = MT_CLASS_MEMSET; break;
    case MT_CAT_CUDA_SYNC: ev->cls = MT_CLASS_SYNC; break;
    case MT_CAT_GPU_USER_ANNOTATION: ev->cls = MT_CLASS_GPU_ANNOTATION; break;
    default: break;
    }
    return MT_OK;
}

/* The merge's process metadata of one slot (src/merge/merge.c
 * write_process_meta): process_name "rank R GPU d" gives the GPU's pid d,
 * process_labels "pid N" a CPU process's own pid N, and any other name
 * "rank R X" but "rank R CPU" the string pid X ("(empty pid)": "") of a
 * trace's "Spans" or "Traces" process. MT_OK or MT_ERR_NOMEM. */
static mt_status_t part_meta(parser_t *ps, const mt_event_t *ev, uint32_t value, size_t slot)
{
    size_t nl, vl;
    const char *nm = mt_strtab_get(ps->t->strings, ev->name, &nl);
    const char *v = mt_strtab_get(ps->t->strings, value, &vl);
    if (!nm || !v)
        return MT_OK;
    const char *num = NULL;
    size_t skip = 0;
    if (nl == 12 && memcmp(nm, "process_name", 12) == 0) {
        char pre[40];
        int k = snprintf(pre, sizeof pre, "rank %d ", (int)ps->part_rank);
        if (k <= 0 || vl <= (size_t)k || memcmp(v, pre, (size_t)k) != 0)
            return MT_OK;
        const char *x = v + k;
        size_t xl = vl - (size_t)k;
        if (xl > 4 && memcmp(x, "GPU ", 4) == 0) {
            num = v, skip = (size_t)k + 4;
        } else if (!(xl == 3 && memcmp(x, "CPU", 3) == 0)) {
            if (xl == 11 && memcmp(x, "(empty pid)", 11) == 0)
                xl = 0;
            uint32_t sid;
            if (mt_strtab_intern(ps->t->strings, x, xl, &sid) != MT_OK)
                return MT_ERR_NOMEM;
            ps->part_pid[slot] = sid;
            ps->part_pid_str[slot] = true;
            return MT_OK;
        }
    } else if (nl == 14 && memcmp(nm, "process_labels", 14) == 0 && vl > 4 && memcmp(v, "pid ", 4) == 0) {
        num = v, skip = 4;
    }
    int64_t n;
    if (num && mt_parse_int64(num + skip, vl - skip, &n) == MT_OK) {
        ps->part_pid[slot] = n;
        ps->part_pid_str[slot] = false;
    }
    return MT_OK;
}

/* The keys of an event that the loader reads or knows. */
enum ev_key { EK_NONE, EK_OTHER, EK_PH, EK_TS, EK_ID, EK_CAT, EK_PID, EK_TID, EK_DUR, EK_NAME, EK_ARGS, EK_S, EK_BP };

/* A key token (raw bytes, as the old length-then-memcmp dispatch compared
 * them: an escaped spelling is another key). */
static int ev_key_of(const strtok_t *k)
{
    switch (k->len) {
    case 1:
        return k->s[0] == 's' ? EK_S : EK_OTHER;
    case 2:
        if (k->s[0] == 'p' && k->s[1] == 'h')
            return EK_PH;
        if (k->s[0] == 't' && k->s[1] == 's')
            return EK_TS;
        if (k->s[0] == 'i' && k->s[1] == 'd')
            return EK_ID;
        if (k->s[0] == 'b' && k->s[1] == 'p')
            return EK_BP;
        return EK_OTHER;
    case 3:
        if (memcmp(k->s, "cat", 3) == 0)
            return EK_CAT;
        if (memcmp(k->s, "pid", 3) == 0)
            return EK_PID;
        if (memcmp(k->s, "tid", 3) == 0)
            return EK_TID;
        if (memcmp(k->s, "dur", 3) == 0)
            return EK_DUR;
        return EK_OTHER;
    case 4:
        if (memcmp(k->s, "name", 4) == 0)
            return EK_NAME;
        if (memcmp(k->s, "args", 4) == 0)
            return EK_ARGS;
        return EK_OTHER;
    default:
        return EK_OTHER;
    }
}

/* Why: every event spells the same few keys, and finding a key's closing
 * quote with the vector scan, then its colon, is a chain of dependent
 * loads (perf put a fifth of mt_loader_parse_event's samples on the load after the
 * scan). Here the key, its quotes and its colon are compared with the
 * bytes at p as one constant of 5 to 7 bytes, chosen by the key's first
 * letter, and p moves on by a length known in advance. p at the opening
 * quote; on a match *out is after the colon and any blanks, else EK_NONE
 * and obj_key reads the key (any other key, blanks before the colon). */
static inline int ev_key_fast(const char *p, const char **out)
{
#define EK_AT(lit, id)                                                              \
    if (memcmp(p, lit, sizeof(lit) - 1) == 0) {                                     \
        /* the slow path's table agrees (checked in debug builds) */                \
        assert(ev_key_of(&(strtok_t){lit + 1, sizeof(lit) - 4, false}) == (id));    \
        *out = skip_ws(p + sizeof(lit) - 1);                                        \
        return id;                                                                  \
    }
    switch (p[1]) {
    case 'p': EK_AT("\"ph\":", EK_PH) EK_AT("\"pid\":", EK_PID) break;
    case 't': EK_AT("\"tid\":", EK_TID) EK_AT("\"ts\":", EK_TS) break;
    case 'c': EK_AT("\"cat\":", EK_CAT) break;
    case 'n': EK_AT("\"name\":", EK_NAME) break;
    case 'd': EK_AT("\"dur\":", EK_DUR) break;
    case 'a': EK_AT("\"args\":", EK_ARGS) break;
    case 'i': EK_AT("\"id\":", EK_ID) break;
    case 'b': EK_AT("\"bp\":", EK_BP) break;
    case 's': EK_AT("\"s\":", EK_S) break;
    default: break;
    }
#undef EK_AT
    return EK_NONE;
}

/* One element of traceEvents, p at its first byte. */
int mt_loader_parse_event(parser_t *ps, const char *p, const char **out)
{
    mt_trace_t *t = ps->t;
    const char *start = p;
    if (*p != '{') {
        if (*p == '\0' && p >= data_end(ps))
            return NEED_MORE;
        return mt_json_fail(ps, p, "'{' (a trace event)");
    }
    mt_event_t ev = {.ph = MT_PH_NONE, .cat = MT_CAT_NONE};
    /* Value spans of the keys a pass-through writer rewrites. */
    const char *sp_ts = NULL, *sp_ts_e = NULL, *sp_dur = NULL, *sp_dur_e = NULL, *sp_pid = NULL, *sp_pid_e = NULL;
    const char *sp_tid = NULL, *sp_tid_e = NULL, *sp_id = NULL, *sp_id_e = NULL;
    ev_extra_t x;
    x.coll_init = false;
    x.coll.fields = 0;
    x.meta_str = 0;
    x.meta_value = 0;
    x.has_meta = false;
    x.dims = NULL;
    x.dims_len = 0;
    x.input_type = 0;
    x.mem.fields = 0;
    x.pid = x.tid = 0;
    x.corr = x.ext = 0;
    uint32_t other_cat = 0;
    bool has_other_cat = false;
    bool empty = false, more = true, ok = false, is_str = false, has_ts = false;
    int r = obj_begin(ps, p, &p, &empty);
    if (r)
        return r;
    more = !empty;
    while (more) {
        strtok_t k = {0};
        int key = ev_key_fast(p, &p);
        if (key == EK_NONE) {
            if ((r = obj_key(ps, p, &k, &p)))
                return r;
            key = ev_key_of(&k);
        }
        r = -2;
        const char *v0 = p;
        switch (key) {
        case EK_PH: {
            strtok_t v = {0};
            if (p[0] == '"' && p[2] == '"' && (unsigned char)p[1] >= 0x20 && p[1] != '"' && p[1] != '\\') {
                /* "X": one plain byte between quotes, which is what
                 * parse_string would find, without the scan. */
                v.s = p + 1;
                v.len = 1;
                ev.ph = (uint8_t)phase_of(&v);
                p += 3;
                r = MT_OK;
            } else if (*p == '"') {
                r = parse_string(ps, p, &v, &p);
                if (!r)
                    ev.ph = (uint8_t)phase_of(&v);
            }
            break;
        }
        case EK_TS: {
            strtok_t v = {0};
            const char *e = fast_us(ps, p, &ev.ts, &ps->saw_fraction);
            has_ts = true;
            if (e) {
                p = e;
                r = MT_OK;
            } else if (*p != '-' && (unsigned)(*p - '0') > 9) {
                /* not a number: an error where it stands, never an event at 0 */
                return mt_json_fail_as(ps, p, MT_ERR_FORMAT, "a number for \"ts\" (microseconds)");
            } else if ((r = number_tok(ps, p, &v, &p)) == MT_OK) {
                mt_status_t st = mt_parse_us_to_ns(v.s, v.len, &ev.ts);
                if (st)
                    return mt_json_num_error(ps, v.s, st, "\"ts\"");
                if (memchr(v.s, '.', v.len))
                    ps->saw_fraction = true;
            }
            break;
        }
        case EK_ID:
            if (*p == '"') {
                strtok_t v = {0};
                if ((r = parse_string(ps, p, &v, &p)) == MT_OK) {
                    int64_t nv;
                    if (!v.esc && numeric_id_string(&v, &nv)) {
                        x.corr = (uint64_t)nv;
                    } else {
                        uint32_t id;
                        if ((r = mt_json_intern(ps, &v, &id)))
                            return r;
                        x.corr = id;
                        ev.flags |= MT_EV_ID_STR;
                    }
                    ev.flags |= MT_EV_HAS_CORR;
                }
            } else {
                r = value_uint64(ps, p, &x.corr, &ok, &p, "\"id\"");
                if (!r && ok)
                    ev.flags |= MT_EV_HAS_CORR;
            }
            break;
        case EK_CAT: {
            strtok_t v = {0};
            if (*p == '"' && (r = parse_string(ps, p, &v, &p)) == MT_OK) {
                ev.cat = (uint8_t)mt_cat_lookup(v.s, v.len);
                if (ev.cat == MT_CAT_OTHER) {
                    if ((r = mt_json_intern(ps, &v, &other_cat)))
                        return r;
                    has_other_cat = true;
                }
            }
            break;
        }
        case EK_PID:
            r = parse_id_field(ps, p, &x.pid, &is_str, &p, "\"pid\"");
            if (!r && is_str)
                ev.flags |= MT_EV_PID_STR;
            break;
        case EK_TID:
            r = parse_id_field(ps, p, &x.tid, &is_str, &p, "\"tid\"");
            if (!r && is_str)
                ev.flags |= MT_EV_TID_STR;
            break;
        case EK_DUR: {
            strtok_t v = {0};
            const char *e = fast_us(ps, p, &ev.dur, &(bool){false});
            if (e) {
                p = e;
                ev.flags |= MT_EV_HAS_DUR;
                r = MT_OK;
            } else if (*p != '-' && (unsigned)(*p - '0') > 9) {
                return mt_json_fail_as(ps, p, MT_ERR_FORMAT, "a number for \"dur\" (microseconds)");
            } else if ((r = number_tok(ps, p, &v, &p)) == MT_OK) {
                mt_status_t st = mt_parse_us_to_ns(v.s, v.len, &ev.dur);
                if (st)
                    return mt_json_num_error(ps, v.s, st, "\"dur\"");
                ev.flags |= MT_EV_HAS_DUR;
                if (ev.dur < 0) {
                    ev.dur = 0;
                    ev.flags |= MT_EV_NEG_DUR;
                }
            }
            break;
        }
        case EK_NAME: {
            strtok_t v = {0};
            if (*p == '"' && (r = parse_string(ps, p, &v, &p)) == MT_OK)
                r = mt_json_intern(ps, &v, &ev.name);
            break;
        }
        case EK_ARGS:
            if (ps->opts->skim_args && ps->part_rank < 0) /* a part reads its process metadata's args */
                r = mt_json_skip_value(ps, p, &p);
            else if (*p == '{')
                r = parse_args(ps, p, &ev, &x, &p);
            break;
        default:
            break;
        }
        if (r == -2) {
            /* An unknown key, or a known key with a value of another type. */
            if (key != EK_S && key != EK_BP)
                t->stats.unknown_fields++;
            r = skip_fast(ps, p, &p);
        }
        if (r)
            return r;
        switch (key) {
        case EK_TS: sp_ts = v0, sp_ts_e = p; break;
        case EK_ID: sp_id = v0, sp_id_e = p; break;
        case EK_PID: sp_pid = v0, sp_pid_e = p; break;
        case EK_TID: sp_tid = v0, sp_tid_e = p; break;
        case EK_DUR: sp_dur = v0, sp_dur_e = p; break;
        default: break;
        }
        if ((r = obj_next(ps, p, &more, &p)))
            return r;
    }

    /* One rank of a merged trace: another rank's event (or the header's
     * pid 0) is passed over before anything of it is committed; the rank's
     * pids get back the values of its own trace, as the merge's process
     * metadata (written first) names them, because the analyses take a
     * GPU's device from its pid. */
    if (ps->part_rank >= 0) {
        if (!sp_pid || (ev.flags & MT_EV_PID_STR) || x.pid < ps->pid_lo || x.pid >= ps->pid_hi) {
            /* The merge writes each rank's events together (one
             * mt_merge_rank call each; mt_merged_ranks refuses a file
             * where they are not): another rank's event after ours ends
             * them, and the rest of the file need not be read. */
            if (ps->part_kept && sp_pid && !(ev.flags & MT_EV_PID_STR) && x.pid >= MT_MERGE_PIDS_PER_RANK)
                ps->part_done = true;
            swait_drop(t);
            *out = p;
            return MT_OK;
        }
        ps->part_kept++;
        size_t slot = (size_t)(x.pid - ps->pid_lo);
        if (ev.ph == MT_PH_M && x.has_meta && x.meta_str && part_meta(ps, &ev, x.meta_str, slot) != MT_OK)
            return mt_json_fail_code(ps, start, MT_ERR_NOMEM, "string table");
        if (ps->part_pid[slot] != INT64_MIN) {
            x.pid = ps->part_pid[slot];
            if (ps->part_pid_str[slot])
                ev.flags |= MT_EV_PID_STR;
        }
    }
    /* The event is complete: commit it and its side records. Its ids
     * narrowed to the table's 32-bit fields (wide ones to t->wide; with
     * no_store, where no event is kept, the slots are taken back once the
     * callback has seen it). */
    mt_status_t ist = mt_event_set_ids(t, &ev, x.pid, x.tid, x.corr, x.ext);
    if (ist != MT_OK)
        return mt_json_fail_code(ps, start, ist,
                         ist == MT_ERR_NOMEM ? "event id table" : "more than 2^30 ids wider than 32 bits");
    if (MT_GROW_BIG(t->events, t->cap_events, t->n_events + 1, 64))
        return mt_json_fail_code(ps, start, MT_ERR_NOMEM, "event table");
    size_t idx = t->n_events;
    if (x.coll.fields) {
        if (MT_GROW_BIG(t->colls, t->cap_colls, t->n_colls + 1, 64))
            return mt_json_fail_code(ps, start, MT_ERR_NOMEM, "collective table");
        x.coll.event = (uint32_t)idx + 1;
        t->colls[t->n_colls++] = x.coll;
        ev.coll = (uint32_t)t->n_colls;
        ev.flags |= MT_EV_COLL_OWN;
    } else if (x.dims || (ps->has_gloo && ev.ph == MT_PH_X)) {
        /* Pre-2.2 traces: the message size of an nccl:* range comes from
         * its "Input Dims" (FORMAT.md 6.2). A gloo:* range on the CPU (the
         * gloo worker thread running the collective; docs/FORMATS.md "gloo
         * collectives") gets a record too, with or without "Input Dims"
         * (a barrier has none): it is the only trace of a gloo collective. */
        size_t nlen;
        const char *nm = mt_strtab_get(t->strings, ev.name, &nlen);
        size_t skip = x.dims && nlen > 5 && memcmp(nm, "nccl:", 5) == 0 ? 5 : 0;
        bool gloo = !skip && ps->has_gloo && ev.ph == MT_PH_X && nlen > 5 && memcmp(nm, "gloo:", 5) == 0 &&
                    (ev.cat == MT_CAT_USER_ANNOTATION || ev.cat == MT_CAT_CPU_OP || ev.cat == MT_CAT_LEGACY_OPERATOR);
        if (skip || gloo) {
            skip = 5;
            mt_coll_t c = *xcoll(&x);
            c.in_nelems = x.dims ? dims_nelems(x.dims, x.dims_len) : -1;
            c.fields = (x.dims ? MT_COLL_F_INPUT_DIMS : 0) | (gloo ? MT_COLL_F_GLOO : 0) |
                       (c.in_nelems >= 0 ? MT_COLL_F_IN_NELEMS : 0);
            uint32_t cn;
            mt_status_t st = mt_strtab_intern(t->strings, nm + skip, nlen - skip, &cn);
            if (st)
                return mt_json_fail_code(ps, start, st, "interning a string");
            c.name = cn;
            c.fields |= MT_COLL_F_NAME;
            if (x.input_type) {
                c.dtype = x.input_type;
                c.fields |= MT_COLL_F_DTYPE;
            }
            if (MT_GROW_BIG(t->colls, t->cap_colls, t->n_colls + 1, 64))
                return mt_json_fail_code(ps, start, MT_ERR_NOMEM, "collective table");
            c.event = (uint32_t)idx + 1;
            t->colls[t->n_colls++] = c;
            ev.coll = (uint32_t)t->n_colls;
            ev.flags |= MT_EV_COLL_OWN;
        }
    }
    if (x.mem.fields && ev.ph == MT_PH_I) {
        /* A [memory] event (only instants carry these args): its record. */
        if (MT_GROW_BIG(t->mems, t->cap_mems, t->n_mems + 1, 256))
            return mt_json_fail_code(ps, start, MT_ERR_NOMEM, "memory event table");
        mt_mem_t *m = &t->mems[t->n_mems++];
        *m = x.mem;
        if (!(m->fields & MT_MEM_F_ALLOC))
            m->total_allocated = 0;
        if (!(m->fields & MT_MEM_F_RESERVED))
            m->total_reserved = 0;
        if (!(m->fields & MT_MEM_F_BYTES))
            m->bytes = 0;
        if (!(m->fields & MT_MEM_F_DEV_ID))
            m->device_id = -1;
        if (!(m->fields & MT_MEM_F_DEV_TYPE))
            m->device_type = 0;
        if (!(m->fields & MT_MEM_F_ADDR))
            m->addr = 0;
        m->event = (uint32_t)idx + 1;
        m->pad_ = 0;
    }
    if (ev.ph == MT_PH_M) {
        if (MT_GROW_BIG(t->meta, t->cap_meta, t->n_meta + 1, 64))
            return mt_json_fail_code(ps, start, MT_ERR_NOMEM, "metadata table");
        t->meta[t->n_meta++] = (mt_meta_t){.event = (uint32_t)idx + 1, .str = x.meta_str,
                                           .value = x.meta_value};
        ev.aux = (uint32_t)t->n_meta;
    }
    if (has_other_cat && (r = add_other_cat(ps, other_cat, start)))
        return r;
    if (ps->classify && ev.ph == MT_PH_X && (r = classify_event(ps, &ev, start)))
        return r;
    /* every later sum or difference of two times must fit int64 ns */
    if (__builtin_expect(ev.ts >= MT_TIME_LIMIT_NS || ev.ts <= -MT_TIME_LIMIT_NS, 0))
        return mt_json_fail_code(ps, sp_ts ? sp_ts : start, MT_ERR_RANGE,
                         "\"ts\" more than 2^62 ns (146 years) from 0");
    if (__builtin_expect(ev.dur >= MT_TIME_LIMIT_NS || ev.ts + ev.dur >= MT_TIME_LIMIT_NS, 0))
        return mt_json_fail_code(ps, sp_dur ? sp_dur : start, MT_ERR_RANGE,
                         "\"ts\" + \"dur\" more than 2^62 ns (146 years) from 0");
    if (ev.flags & MT_EV_NEG_DUR)
        t->stats.neg_dur++;
    if (__builtin_expect(!has_ts, 0) && ev.ph == MT_PH_X) {
        t->stats.no_ts++;
        t->stats.no_ts_kernels += ev.cat == MT_CAT_KERNEL;
    }
    t->stats.by_ph[ev.ph]++;
    t->stats.by_cat[ev.cat]++;
    if (!ps->opts->no_store)
        t->events[t->n_events++] = ev;
    if (ps->opts->on_event) {
        mt_raw_event_t raw = {.text = start, .len = (size_t)(p - start)};
#define SPAN(a, b, off, len)                                  \
    if (a) {                                                  \
        raw.off = (size_t)(a - start);                        \
        raw.len = (size_t)(b - a);                            \
    }
        SPAN(sp_ts, sp_ts_e, ts_off, ts_len)
        SPAN(sp_dur, sp_dur_e, dur_off, dur_len)
        SPAN(sp_pid, sp_pid_e, pid_off, pid_len)
        SPAN(sp_tid, sp_tid_e, tid_off, tid_len)
        SPAN(sp_id, sp_id_e, id_off, id_len)
#undef SPAN
        mt_status_t cst = ps->opts->on_event(ps->opts->on_event_ctx, t, &ev, &raw, ps->err);
        if (cst != MT_OK) {
            ps->fail_at = start;
            if (ps->err && ps->err->offset < 0)
                ps->err->offset = (int64_t)(ps->base_off + (uint64_t)(start - ps->buf));
            return (int)cst;
        }
    }
    /* (with no_store every record names event 1: swait_arg keeps one,
     * rewritten by each event that has these args; nobody reads it) */
    if (ps->opts->no_store)
        t->n_wide = 0;
    *out = p;
    return MT_OK;
}

