/* The per-rank collective table: one self-contained row per communication
 * kernel, and per gloo:* CPU range (gloo runs no kernel), with what matching
 * and alignment need (times, group, sequence, sizes, ProfilerStep), and no
 * pointer into the trace. */
#include "mergetrace/collectives.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mergetrace/classify.h"
#include "mergetrace/summary.h"
#include "mergetrace/buf.h"
#include "base/bigmem.h"
#include "base/hash.h"

static uint64_t hash_str(const char *tag, const char *s, size_t n)
{
    return mt_hash64(s, n, mt_hash64(tag, strlen(tag), 0));
}

/* s[0..n) into dst, or, when it does not fit, as much as fits whole
 * (UTF-8 sequences are not split) and "…", so a cut label says so. */
static void label(char *dst, size_t cap, const char *s, size_t n)
{
    if (n < cap) {
        memcpy(dst, s, n);
        dst[n] = '\0';
        return;
    }
    n = cap - 4;
    while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
        n--;
    memcpy(dst, s, n);
    memcpy(dst + n, "\xe2\x80\xa6", 4); /* U+2026 and the NUL */
}

static int step_cmp(const void *a, const void *b)
{
    const mt_step_t *x = a, *y = b;
    return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns;
}

static int row_cmp_start(const void *a, const void *b)
{
    const mt_cinst_t *x = a, *y = b;
    if (x->start_ns != y->start_ns)
        return x->start_ns < y->start_ns ? -1 : 1;
    if (x->stream != y->stream)
        return x->stream < y->stream ? -1 : 1;
    return x->end_ns < y->end_ns ? -1 : x->end_ns > y->end_ns;
}

/* "name (desc)", or "name" without a description: the label of a process
 * group, from a record's args or from distributedInfo.pg_config. */
static void pg_label(const mt_trace_t *t, uint32_t name, bool has_desc, uint32_t desc, char *pg)
{
    size_t l;
    const char *s = mt_strtab_get(t->strings, name, &l);
    if (has_desc) {
        size_t dl;
        const char *d = mt_strtab_get(t->strings, desc, &dl);
        char b[2 * MT_CI_LABEL + 8];
        int w = snprintf(b, sizeof b, "%.*s (%.*s)", (int)(l < MT_CI_LABEL ? l : MT_CI_LABEL), s,
                         (int)(dl < MT_CI_LABEL ? dl : MT_CI_LABEL), d);
        label(pg, MT_CI_LABEL, b, w > 0 ? (size_t)w : 0);
    } else {
        label(pg, MT_CI_LABEL, s, l);
    }
}

/* The group of the trace's gloo:* CPU ranges. A range does not say which
 * process group ran it, so it is the one group of pg_config whose backend
 * is gloo ("cpu:gloo,cuda:gloo", "gloo"); with several (or none) all of
 * them are one group "gloo", whose size is their common pg_size when they
 * agree. The hash is "gloo:" + the name, never equal to a kernel row's
 * group: a group with gloo for CPU tensors and NCCL for CUDA ones has both
 * kinds of rows, and only kernel rows carry Seq. */
typedef struct gloo_pg {
    uint64_t group;
    int64_t size;
    char label[MT_CI_LABEL];
} gloo_pg_t;

static void gloo_group(const mt_trace_t *t, gloo_pg_t *g)
{
    size_t n = 0, one = 0;
    int64_t size = -2; /* -2: no group seen yet, -1: sizes differ */
    for (size_t i = 0; i < t->n_pgs; i++) {
        size_t l;
        const char *b = mt_strtab_get(t->strings, t->pgs[i].backend, &l);
        bool gloo = false;
        for (size_t k = 0; k + 4 <= l && !gloo; k++)
            gloo = memcmp(b + k, "gloo", 4) == 0;
        if (!gloo)
            continue;
        if (n++ == 0)
            one = i;
        int64_t sz = t->pgs[i].size > 0 ? t->pgs[i].size : -1;
        size = size == -2 ? sz : size == sz ? size : -1;
    }
    g->size = size > 0 ? size : -1;
    if (n == 1) {
        size_t l;
        const char *s = mt_strtab_get(t->strings, t->pgs[one].name, &l);
        g->group = hash_str("gloo:", s, l);
        pg_label(t, t->pgs[one].name, t->pgs[one].desc != MT_STR_NONE, t->pgs[one].desc, g->label);
    } else {
        g->group = hash_str("gloo", "", 0);
        label(g->label, sizeof g->label, "gloo", 4);
    }
}

/* Is e a gloo:* CPU range with its record (trace/loader.c) that makes a
 * row? Point-to-point ranges do not: they name no peer, and a send/recv
 * seen by only some ranks of the group would shift the order by which
 * the group's collectives match. */
static bool is_gloo_range(const mt_trace_t *t, const mt_event_t *e)
{
    if (e->ph != MT_PH_X || e->cls != MT_CLASS_NONE || !e->coll || !(t->colls[e->coll - 1].fields & MT_COLL_F_GLOO))
        return false;
    size_t l;
    const char *s = mt_strtab_get(t->strings, t->colls[e->coll - 1].name, &l);
    mt_coll_kind_t k = mt_coll_kind_from_name(s, l);
    return k != MT_COLLK_SEND && k != MT_COLLK_RECV && k != MT_COLLK_SENDRECV;
}

/* The step whose range contains t: the latest-starting one that does. */
static int64_t find_step(const mt_step_t *s, size_t n, int64_t t)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (s[mid].start_ns <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo; i-- > 0;) {
        if (s[i].end_ns >= t)
            return s[i].step;
        if (lo - i > 8)
            break;
    }
    return -1;
}

/* Sizes that must agree across the participants of one instance. all_to_all
 * splits differ per rank, and a P2P pair sees send and receive sides, so
 * those sign with their kind and dtype only. */
static uint64_t signature(mt_coll_kind_t kind, const mt_cinst_t *r, const char *dtype)
{
    int64_t v[4] = {kind, -1, -1, 0};
    if (kind != MT_COLLK_ALLTOALL && kind != MT_COLLK_SEND && kind != MT_COLLK_RECV && kind != MT_COLLK_SENDRECV) {
        v[1] = r->in_nelems;
        v[2] = r->out_nelems;
    }
    if (kind == MT_COLLK_SEND || kind == MT_COLLK_RECV)
        v[0] = MT_COLLK_SENDRECV;
    return mt_hash64(v, sizeof v, mt_hash64(dtype, strlen(dtype), 7));
}

mt_status_t mt_cinst_extract(const mt_trace_t *t, int32_t rank, mt_strtab_t *labels, mt_cinst_t **rows, size_t *n,
                             size_t *cap)
{
    /* ProfilerStep#N ranges on the CPU side, by start. */
    size_t n_steps = 0, cap_steps = 0;
    mt_step_t *steps = NULL;
    if (mt_trace_steps(t, rank, &steps, &n_steps, &cap_steps) != MT_OK) {
        free(steps);
        return MT_ERR_NOMEM;
    }
    if (n_steps)
        qsort(steps, n_steps, sizeof *steps, step_cmp);

    size_t first = *n;
    gloo_pg_t gpg = {0};
    bool gpg_done = false;
    uint32_t ranks_id = UINT32_MAX; /* the last "Process Group Ranks" string hashed, and its hash */
    uint64_t ranks_hash = 0;
    for (size_t i = 0; i < t->n_events; i++) {
        const mt_event_t *e = &t->events[i];
        /* A gloo collective runs no kernel: its only record is the gloo:*
         * range of the worker thread that runs it, a blocking call there
         * whether the caller waits or not (async_op), so its end is the
         * collective's end on this rank as a kernel's is; the caller's
         * c10d::* op only queues the work and ends before it. */
        bool cpu = is_gloo_range(t, e);
        if (!cpu && (e->cls != MT_CLASS_COMM || e->ph != MT_PH_X))
            continue;
        if (cpu && !gpg_done) {
            gloo_group(t, &gpg);
            gpg_done = true;
        }
        if (MT_GROW_BIG(*rows, *cap, *n + 1, 256)) {
            free(steps);
            *n = first;
            return MT_ERR_NOMEM;
        }
        mt_cinst_t *r = &(*rows)[*n];
        memset(r, 0, sizeof *r);
        char pg[MT_CI_LABEL] = "", dtype[MT_CI_DTYPE] = ""; /* the labels, interned once the row is done */
        r->rank = rank;
        r->start_ns = e->ts;
        r->end_ns = e->ts + e->dur;
        r->stream = mt_event_tid(t, e);
        r->launch_ns = !cpu && e->aux ? t->events[e->aux - 1].ts : -1;
        r->seq = r->in_nelems = r->out_nelems = r->group_size = r->peer = -1;
        r->step = find_step(steps, n_steps, r->launch_ns >= 0 ? r->launch_ns : r->start_ns);
        if (r->step >= 0)
            r->flags |= MT_CI_STEP;

        const mt_coll_t *c = mt_event_coll(t, e);
        mt_coll_kind_t kind = MT_COLLK_UNKNOWN;
        if (c && (c->fields & MT_COLL_F_NAME)) {
            size_t l;
            const char *s = mt_strtab_get(t->strings, c->name, &l);
            kind = mt_coll_kind_from_name(s, l);
        }
        if (kind == MT_COLLK_UNKNOWN) {
            size_t l;
            const char *s = mt_strtab_get(t->strings, e->name, &l);
            mt_nccl_name_t d;
            if (mt_nccl_decode(s, l, &d))
                kind = d.kind;
        }
        if (!c)
            r->flags |= MT_CI_NO_COLL;
        if (c) {
            if (c->fields & MT_COLL_F_COMMS_ID) {
                r->comms_id = c->comms_id;
                r->flags |= MT_CI_COMMS_ID;
            }
            if (c->fields & MT_COLL_F_SEQ) {
                r->seq = c->seq;
                r->flags |= MT_CI_SEQ;
            }
            if (c->fields & MT_COLL_F_IN_NELEMS)
                r->in_nelems = c->in_nelems;
            if (c->fields & MT_COLL_F_OUT_NELEMS)
                r->out_nelems = c->out_nelems;
            if (c->fields & MT_COLL_F_GROUP_SIZE)
                r->group_size = c->group_size;
            if (c->fields & MT_COLL_F_DTYPE) {
                size_t l;
                const char *s = mt_strtab_get(t->strings, c->dtype, &l);
                label(dtype, sizeof dtype, s, l);
            }
            /* P2P: PyTorch puts the peer's global rank in "Dst Rank" on
             * send and "Src Rank" on recv. */
            if (kind == MT_COLLK_SEND && (c->fields & MT_COLL_F_DST_RANK)) {
                r->peer = c->dst_rank;
                r->flags |= MT_CI_SEND;
            } else if (kind == MT_COLLK_RECV && (c->fields & MT_COLL_F_SRC_RANK)) {
                r->peer = c->src_rank;
                r->flags |= MT_CI_RECV;
            }
            size_t l;
            if (cpu) {
                r->group = gpg.group;
                r->group_size = gpg.size;
                r->flags |= MT_CI_PG | MT_CI_CPU;
                memcpy(pg, gpg.label, sizeof pg);
            } else if (c->fields & MT_COLL_F_PG_NAME) {
                const char *s = mt_strtab_get(t->strings, c->pg_name, &l);
                r->group = hash_str("pg:", s, l);
                r->flags |= MT_CI_PG;
                pg_label(t, c->pg_name, (c->fields & MT_COLL_F_PG_DESC) != 0, c->pg_desc, pg);
            } else if (c->fields & MT_COLL_F_PG_RANKS) {
                const char *s = mt_strtab_get(t->strings, c->pg_ranks, &l);
                /* Thousands of ranks in a list, the same list on most rows:
                 * hashed once per run of equal ids. */
                if (c->pg_ranks != ranks_id) {
                    ranks_id = c->pg_ranks;
                    ranks_hash = hash_str("ranks:", s, l);
                }
                r->group = ranks_hash;
                r->flags |= MT_CI_PG;
                label(pg, sizeof pg, s, l);
            } else if (c->fields & MT_COLL_F_PG_ID) {
                char b[32];
                int w = snprintf(b, sizeof b, "%lld", (long long)c->pg_id);
                r->group = hash_str("pgid:", b, (size_t)w);
                r->flags |= MT_CI_PG;
                label(pg, sizeof pg, b, (size_t)w);
            }
        }
        if (!(r->flags & MT_CI_PG)) {
            char b[32];
            int w = snprintf(b, sizeof b, "stream %lld", (long long)mt_event_tid(t, e));
            r->group = hash_str("stream:", b, (size_t)w);
            r->flags |= MT_CI_STREAM;
            label(pg, sizeof pg, b, (size_t)w);
        }
        /* gloo's all_gather range gives its input only ("Input Dims"); the
         * gathered output, what the collective table counts, is group size
         * times that on every rank */
        if (cpu && kind == MT_COLLK_ALLGATHER && r->in_nelems > 0 && r->group_size > 0 &&
            r->in_nelems <= INT64_MAX / r->group_size)
            r->out_nelems = r->in_nelems * r->group_size;
        r->kind = (uint8_t)kind;
        r->sig = signature(kind, r, dtype);
        /* up to the first NUL, as the fixed char fields the ids replace
         * held and printed them */
        if (mt_strtab_intern(labels, pg, strlen(pg), &r->pg_id) != MT_OK ||
            mt_strtab_intern(labels, dtype, strlen(dtype), &r->dtype_id) != MT_OK) {
            free(steps);
            *n = first;
            return MT_ERR_NOMEM;
        }
        (*n)++;
    }
    free(steps);

    /* Kernel order, then ordinals per group and per (group, step). */
    size_t cnt = *n - first;
    if (!cnt)
        return MT_OK;
    mt_cinst_t *base = *rows + first;
    qsort(base, cnt, sizeof *base, row_cmp_start);
    /* A rank has few communicators: a small table of counters per group. */
    {
        typedef struct gcount {
            uint64_t group;
            int64_t step;
            uint32_t n, n_step;
        } gcount_t;
        gcount_t *g = NULL;
        size_t ng = 0, capg = 0;
        for (size_t i = 0; i < cnt; i++) {
            mt_cinst_t *r = &base[i];
            size_t j = 0;
            for (; j < ng && g[j].group != r->group; j++)
                ;
            if (j == ng) {
                if (MT_GROW(g, capg, ng + 1, 16)) {
                    free(g);
                    *n = first;
                    return MT_ERR_NOMEM;
                }
                g[ng++] = (gcount_t){r->group, INT64_MIN, 0, 0};
            }
            r->ordinal = g[j].n++;
            if (g[j].step != r->step) {
                g[j].step = r->step;
                g[j].n_step = 0;
            }
            r->step_ordinal = g[j].n_step++;
        }
        free(g);
    }
    return MT_OK;
}

mt_crow_t mt_crow_of(const mt_cinst_t *r)
{
    return (mt_crow_t){.start_ns = r->start_ns,
                       .end_ns = r->end_ns,
                       .step = r->step,
                       .group = r->group,
                       .sig = r->sig,
                       .in_nelems = r->in_nelems,
                       .out_nelems = r->out_nelems,
                       .peer = r->peer,
                       .rank = r->rank,
                       .flags = r->flags,
                       .kind = r->kind,
                       .pg_id = r->pg_id,
                       .dtype_id = r->dtype_id};
}

mt_crow_t *mt_crow_compact(mt_cinst_t *rows, size_t n)
{
    /* Compact row i lies in bytes [80 i, 80 i + 80), which end at or before
     * 128 (i + 1), where row i + 1 begins, so front to back no row is
     * written over before it is read; only row i's own bytes overlap its
     * slot (i < 2), hence the copy out first. memcpy both ways: the block
     * changes type under one pointer. */
    unsigned char *b = (unsigned char *)rows;
    for (size_t i = 0; i < n; i++) {
        mt_cinst_t r;
        memcpy(&r, b + i * sizeof r, sizeof r);
        mt_crow_t c = mt_crow_of(&r);
        memcpy(b + i * sizeof c, &c, sizeof c);
    }
    return (mt_crow_t *)(void *)rows;
}
