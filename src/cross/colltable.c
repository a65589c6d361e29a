/* The collective table across ranks: time, transfer and bandwidth per
 * (process group, collective, message bytes, dtype), and every rank's wait
 * vs transfer time; definitions in include/mergetrace/crossrank.h. */
#include <stdlib.h>
#include <string.h>

#include "mergetrace/crossrank.h"
#include "cross/passes.h"
#include "base/bigmem.h"

typedef struct dsize {
    const char *name;
    int size;
} dsize_t;

/* PyTorch's names (c10 ScalarType) and NCCL's spellings. Labels are cut
 * to 11 bytes by mt_cinst_extract, so long names are matched by prefix
 * below. */
static const dsize_t dsizes[] = {
    {"byte", 1},      {"char", 1},      {"bool", 1},      {"int8", 1},       {"uint8", 1},    {"int8_t", 1},
    {"uint8_t", 1},   {"i8", 1},        {"u8", 1},        {"qint8", 1},      {"quint8", 1},   {"f8e4m3", 1},
    {"f8e5m2", 1},    {"half", 2},      {"bfloat16", 2},  {"bf16", 2},       {"f16", 2},      {"float16", 2},
    {"short", 2},     {"int16", 2},     {"uint16", 2},    {"__nv_bfloat16", 2}, {"float", 4}, {"f32", 4},
    {"float32", 4},   {"int", 4},       {"int32", 4},     {"uint32", 4},     {"int32_t", 4},  {"uint32_t", 4},
    {"i32", 4},       {"u32", 4},       {"qint32", 4},    {"complexhalf", 4}, {"double", 8},  {"f64", 8},
    {"float64", 8},   {"long", 8},      {"int64", 8},     {"uint64", 8},     {"int64_t", 8},  {"uint64_t", 8},
    {"i64", 8},       {"u64", 8},
};

static int lower(int c)
{
    return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

/* Case-insensitive: does s start with p (whole: and end there)? */
static bool ci_match(const char *s, const char *p, bool whole)
{
    for (; *p; s++, p++)
        if (lower((unsigned char)*s) != lower((unsigned char)*p))
            return false;
    return !whole || *s == '\0';
}

int mt_cross_dtype_size(const char *dtype)
{
    if (!dtype || !*dtype)
        return 0;
    for (size_t i = 0; i < sizeof dsizes / sizeof dsizes[0]; i++)
        if (ci_match(dtype, dsizes[i].name, true))
            return dsizes[i].size;
    /* cut labels: Float8_e4m3fn..., ComplexFloat, ComplexDouble */
    if (ci_match(dtype, "float8", false))
        return 1;
    if (ci_match(dtype, "complexfloa", false))
        return 8;
    if (ci_match(dtype, "complexdoub", false))
        return 16;
    /* C type names as some traces write the dtype (issue 39: "long int"
     * printed its size as "?"), sizes of LP64 Linux; cut to 11 bytes */
    static const dsize_t ctypes[] = {{"long int", 8},    {"long long", 8},   {"unsigned lo", 8}, {"unsigned in", 4},
                                     {"unsigned sh", 2}, {"short int", 2},   {"signed char", 1}, {"unsigned ch", 1},
                                     {"c10::Half", 2},   {"c10::BFloat", 2}};
    for (size_t i = 0; i < sizeof ctypes / sizeof ctypes[0]; i++)
        if (ci_match(dtype, ctypes[i].name, false))
            return ctypes[i].size;
    return 0;
}

double mt_cross_busbw_factor(mt_coll_kind_t kind, int64_t n)
{
    if (n < 1)
        n = 1;
    double f = (double)(n - 1) / (double)n;
    switch (kind) {
    case MT_COLLK_ALLREDUCE: return 2 * f;
    case MT_COLLK_ALLGATHER:
    case MT_COLLK_REDUCESCATTER:
    case MT_COLLK_ALLTOALL:
    case MT_COLLK_GATHER:
    case MT_COLLK_SCATTER: return f;
    case MT_COLLK_BROADCAST:
    case MT_COLLK_REDUCE:
    case MT_COLLK_SEND:
    case MT_COLLK_RECV:
    case MT_COLLK_SENDRECV: return 1;
    default: return -1;
    }
}

static bool is_p2p_kind(int k)
{
    return k == MT_COLLK_SEND || k == MT_COLLK_RECV || k == MT_COLLK_SENDRECV;
}

/* One instance reduced to what the table needs. */
typedef struct crec {
    const char *pg, *dtype;  /* borrowed from the label table */
    int64_t bytes;
    int64_t span, transfer;
    int64_t n;               /* expected group size */
    int32_t parts;           /* participants */
    uint8_t kind;
    bool absent;             /* a member of its group has no row (no trace) */
} crec_t;

static int crec_key_cmp(const crec_t *a, const crec_t *b)
{
    int c = strncmp(a->pg, b->pg, MT_CI_LABEL);
    if (c)
        return c;
    if (a->kind != b->kind)
        return a->kind < b->kind ? -1 : 1;
    if (a->bytes != b->bytes)
        return a->bytes < b->bytes ? -1 : 1;
    return strncmp(a->dtype, b->dtype, MT_CI_DTYPE);
}

/* A total order, so that floating sums over a key run in one order
 * whatever the order of the rows was. */
static int crec_cmp(const void *x, const void *y)
{
    const crec_t *a = x, *b = y;
    int c = crec_key_cmp(a, b);
    if (c)
        return c;
    if (a->n != b->n)
        return a->n < b->n ? -1 : 1;
    if (a->span != b->span)
        return a->span < b->span ? -1 : 1;
    if (a->transfer != b->transfer)
        return a->transfer < b->transfer ? -1 : 1;
    return (a->parts > b->parts) - (a->parts < b->parts);
}

static int coll_cmp(const void *x, const void *y)
{
    const mt_cross_coll_t *a = x, *b = y;
    if (a->total_ns != b->total_ns)
        return a->total_ns > b->total_ns ? -1 : 1;
    int c = strncmp(a->pg, b->pg, sizeof a->pg);
    if (c)
        return c;
    if (a->kind != b->kind)
        return a->kind < b->kind ? -1 : 1;
    if (a->bytes != b->bytes)
        return a->bytes < b->bytes ? -1 : 1;
    return strncmp(a->dtype, b->dtype, sizeof a->dtype);
}

static int64_t dur(const mt_crow_t *r)
{
    return r->end_ns > r->start_ns ? r->end_ns - r->start_ns : 0;
}

static int64_t elements(const mt_crow_t *r, int kind)
{
    if (kind == MT_COLLK_ALLGATHER)
        return r->out_nelems;
    return r->in_nelems >= 0 ? r->in_nelems : r->out_nelems;
}

static void copy_label(char *dst, size_t cap, const char *src, size_t src_cap)
{
    size_t n = 0;
    while (n < src_cap && src[n])
        n++;
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

mt_status_t mt_cross_colltable(const mt_crow_t *rows, const mt_strtab_t *labels, const mt_match_t *m,
                               const uint32_t *slot, mt_cross_t *x)
{
    size_t ni = m ? m->n_inst : 0;
    crec_t *rec = mt_big_malloc((ni ? ni : 1) * sizeof *rec);
    if (!rec)
        return MT_ERR_NOMEM;
    size_t nr = 0;
    for (size_t i = 0; i < ni; i++) {
        uint32_t f = m->first[i], e = m->first[i + 1];
        if (m->status[i] == MT_INST_MISMATCH) {
            x->mismatched++;
            continue;
        }
        if (e - f == 1)
            x->singles++;
        const mt_crow_t *r0 = &rows[m->members[f]];
        int kind = r0->kind;
        int64_t lo = INT64_MAX, hi = 0;
        for (uint32_t p = f; p < e; p++) {
            const mt_crow_t *r = &rows[m->members[p]];
            int64_t d = dur(r);
            lo = d < lo ? d : lo;
            hi = d > hi ? d : hi;
            if (r->kind != kind)
                kind = is_p2p_kind(kind) && is_p2p_kind(r->kind) ? MT_COLLK_SENDRECV : kind;
        }
        /* the element count and dtype of the lowest rank that has them */
        int64_t el = -1;
        const char *dt = "";
        for (uint32_t p = f; p < e && (el < 0 || !*dt); p++) {
            const mt_crow_t *r = &rows[m->members[p]];
            if (el < 0)
                el = elements(r, kind);
            if (!*dt)
                dt = mt_strtab_get(labels, r->dtype_id, NULL);
        }
        int sz = mt_cross_dtype_size(dt);
        int64_t bytes = el > 0 && sz > 0 && el <= INT64_MAX / 16 ? el * sz : 0;
        int64_t n = m->expected[i] > (int32_t)(e - f) ? m->expected[i] : (int64_t)(e - f);
        const char *pg = mt_strtab_get(labels, r0->pg_id, NULL);
        /* a member without a trace (issue 39): the shortest present kernel
         * is not the transfer (the absent one may have arrived last and
         * the shortest present one waited for it), so transfer and
         * bandwidth are unknown; what each waited beyond the shortest is
         * waiting, the shortest's own time is wait or transfer, unknown */
        /* partial instances only: a lone member's group size is often a
         * guess, and a one-rank run is another matter (issue 39 item 7) */
        bool absent = m->status[i] == MT_INST_PARTIAL && n > (int64_t)(e - f);
        x->absent_instances += absent;
        rec[nr++] = (crec_t){pg, dt, bytes, hi, lo, n, (int32_t)(e - f), (uint8_t)kind, absent};
        for (uint32_t p = f; p < e; p++) {
            const mt_crow_t *r = &rows[m->members[p]];
            mt_cross_rank_t *k = &x->ranks[slot[m->members[p]]];
            k->kernels++;
            x->cpu_members += (r->flags & MT_CI_CPU) != 0;
            *(absent ? &k->kernel_unknown_ns : &k->kernel_transfer_ns) += lo;
            k->kernel_wait_ns += dur(r) - lo;
        }
    }
    qsort(rec, nr, sizeof *rec, crec_cmp);
    size_t nk = 0;
    for (size_t i = 0; i < nr; i++)
        nk += i == 0 || crec_key_cmp(&rec[i - 1], &rec[i]) != 0;
    x->colls = calloc(nk ? nk : 1, sizeof *x->colls);
    if (!x->colls) {
        free(rec);
        return MT_ERR_NOMEM;
    }
    for (size_t i = 0; i < nr;) {
        size_t j = i;
        mt_cross_coll_t *c = &x->colls[x->n_colls++];
        copy_label(c->pg, sizeof c->pg, rec[i].pg, MT_CI_LABEL);
        copy_label(c->dtype, sizeof c->dtype, rec[i].dtype, sizeof c->dtype);
        c->kind = rec[i].kind;
        c->bytes = rec[i].bytes;
        double bus = 0;
        bool bus_known = true;
        for (; j < nr && crec_key_cmp(&rec[i], &rec[j]) == 0; j++) {
            c->count++;
            c->total_ns += rec[j].span;
            c->absent += rec[j].absent;
            c->transfer_ns += rec[j].absent ? 0 : rec[j].transfer;
            c->ranks = rec[j].parts > c->ranks ? rec[j].parts : c->ranks;
            double f = mt_cross_busbw_factor((mt_coll_kind_t)rec[j].kind, rec[j].n);
            if (f < 0)
                bus_known = false;
            bus += (double)rec[j].bytes * f;
        }
        c->mean_ns = c->total_ns / (int64_t)c->count;
        c->algbw_gbps = c->busbw_gbps = -1;
        if (c->absent == c->count)
            c->transfer_ns = -1;
        if (c->bytes > 0 && c->transfer_ns > 0 && !c->absent) {
            /* bytes per ns = GB/s (10^9 bytes per second, as nccl-tests) */
            c->algbw_gbps = (double)c->bytes * (double)c->count / (double)c->transfer_ns;
            if (bus_known)
                c->busbw_gbps = bus / (double)c->transfer_ns;
        }
        i = j;
    }
    free(rec);
    qsort(x->colls, x->n_colls, sizeof *x->colls, coll_cmp);
    return MT_OK;
}
