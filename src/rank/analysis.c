/* The per-rank analysis driver: collects a trace's GPU activities once,
 * runs the passes (pass_*.c) over them, and packs / unpacks the result to
 * self-contained bytes for gathering between processes. */
#include "rank/passes.h"
#include "base/bigmem.h"

#include <assert.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

void mt_analysis_opts_init(mt_analysis_opts_t *o)
{
    *o = (mt_analysis_opts_t){.kernel_wait_ns = 30000, .project_ops = false, .top_kernels = 10};
}

const char *mt_an_class_str(mt_an_class_t c)
{
    switch (c) {
    case MT_AN_COMPUTE: return "compute";
    case MT_AN_COMM: return "comm";
    case MT_AN_MEMORY: return "memory";
    default: return "unknown";
    }
}

/* ---- the shared input ---- */

static int an_class(uint8_t cls)
{
    switch (cls) {
    case MT_CLASS_COMPUTE: return MT_AN_COMPUTE;
    case MT_CLASS_COMM: return MT_AN_COMM;
    case MT_CLASS_MEMCPY:
    case MT_CLASS_MEMSET: return MT_AN_MEMORY;
    default: return -1;
    }
}

void mt_an_input_free(mt_an_input_t *in)
{
    if (!in)
        return;
    free(in->acts);
    for (int c = 0; c < MT_AN_CLASS_COUNT_; c++)
        free(in->u[c]);
    free(in->busy);
    free(in->ranges);
    free(in->launch_calls);
    free(in->sync_calls);
    memset(in, 0, sizeof *in);
}

/* p (n elements of size bytes in use) cut to its length, the rest free
 * for the passes that follow; p itself when realloc says no. */
static void *shrink(void *p, size_t n, size_t size)
{
    void *q = realloc(p, (n ? n : 1) * size);
    return q ? q : p;
}

/* Append v to a growing uint32 array. -1 on allocation failure. */
static int push_u32(uint32_t **a, size_t *n, size_t *cap, uint32_t v)
{
    if (MT_GROW_BIG(*a, *cap, *n + 1, 1024))
        return -1;
    (*a)[(*n)++] = v;
    return 0;
}

static int has_launch(const char *s, size_t len)
{
    for (size_t i = 0; i + 6 <= len; i++)
        if (s[i] == 'L' && memcmp(s + i, "Launch", 6) == 0)
            return 1;
    return 0;
}

static int has_sync(const char *s, size_t len)
{
    for (size_t i = 0; i + 11 <= len; i++)
        if (s[i] == 'S' && memcmp(s + i, "Synchronize", 11) == 0)
            return 1;
    return 0;
}

/* The activity record of event i, its launch fields filled from aux. */
static mt_gpu_act_t act_of(const mt_trace_t *t, size_t i)
{
    const mt_event_t *e = &t->events[i];
    mt_gpu_act_t a = {.start_ns = e->ts,
                      .end_ns = e->ts + e->dur,
                      .device = mt_event_pid(t, e),
                      .stream = mt_event_tid(t, e),
                      .event = (uint32_t)i,
                      .name = e->name,
                      .cls = e->cls,
                      .flags = (uint8_t)(e->flags & (MT_EV_PID_STR | MT_EV_TID_STR))};
    /* aux is only trusted when it names an event that exists. */
    if (e->aux && e->aux <= t->n_events) {
        const mt_event_t *l = &t->events[e->aux - 1];
        a.launch = e->aux;
        a.launch_ns = l->ts;
        a.launch_flags = (uint8_t)(l->flags & (MT_EV_PID_STR | MT_EV_TID_STR));
    }
    return a;
}

mt_status_t mt_an_input_build(const mt_trace_t *t, const mt_analysis_opts_t *o, mt_an_input_t *in)
{
    memset(in, 0, sizeof *in);
    in->t = t;
    in->o = o;
    mt_status_t st = MT_ERR_NOMEM;
    mt_gpu_act_t *raw = NULL; /* activities in event order */
    uint32_t *perm = NULL;
    uint64_t *key = NULL;
    size_t n = 0, cap = 0, cap_r = 0, cap_l = 0, cap_s = 0, per[MT_AN_CLASS_COUNT_] = {0};
    uint32_t n_names = mt_strtab_count(t->strings);
    unsigned char *is_launch = calloc(n_names ? n_names : 1, 1); /* per name: 0 unknown, else 1 | 2 launch | 4 sync */
    if (!is_launch)
        goto fail;
    /* What each category is to us: 1 a range to project, 2 a runtime or
     * driver call (a launch call when its name says so). */
    unsigned char kind[MT_CAT_COUNT_] = {0};
    for (int c = 0; c < MT_CAT_COUNT_; c++) {
        mt_cat_t m = mt_cat_normal((mt_cat_t)c);
        kind[c] = m == MT_CAT_USER_ANNOTATION || (o->project_ops && m == MT_CAT_CPU_OP) ? 1
                  : m == MT_CAT_CUDA_RUNTIME || m == MT_CAT_CUDA_DRIVER              ? 2
                                                                                     : 0;
    }

    /* The one pass over the events that every pass shares. */
    for (size_t i = 0; i < t->n_events; i++) {
        const mt_event_t *e = &t->events[i];
        if (e->ph != MT_PH_X)
            continue;
        int c = an_class(e->cls);
        if (c >= 0) {
            if (MT_GROW_BIG(raw, cap, n + 1, 1024))
                goto fail;
            raw[n++] = act_of(t, i);
            per[c]++;
            continue;
        }
        unsigned char k = e->cat < MT_CAT_COUNT_ ? kind[e->cat] : 0;
        if (k == 1) {
            if (push_u32(&in->ranges, &in->n_ranges, &cap_r, (uint32_t)i))
                goto fail;
        } else if (k == 2 && e->name < n_names) {
            if (!is_launch[e->name]) {
                size_t len;
                const char *nm = mt_strtab_get(t->strings, e->name, &len);
                is_launch[e->name] = (unsigned char)(1 | (has_launch(nm, len) ? 2 : 0) | (has_sync(nm, len) ? 4 : 0));
            }
            if ((is_launch[e->name] & 2) && push_u32(&in->launch_calls, &in->n_launch_calls, &cap_l, (uint32_t)i))
                goto fail;
            if ((is_launch[e->name] & 4) && push_u32(&in->sync_calls, &in->n_sync_calls, &cap_s, (uint32_t)i))
                goto fail;
        }
    }

    key = mt_big_malloc((n ? n : 1) * sizeof *key);
    perm = mt_big_malloc((n ? n : 1) * sizeof *perm);
    in->busy = mt_big_malloc((n ? n : 1) * sizeof *in->busy);
    for (int c = 0; c < MT_AN_CLASS_COUNT_; c++)
        in->u[c] = mt_big_malloc((per[c] ? per[c] : 1) * sizeof *in->u[c]);
    if (!key || !perm || !in->busy || !in->u[0] || !in->u[1] || !in->u[2])
        goto fail;
    /* Activities by (start, end, event): a stable sort by start of the
     * event-ordered list is enough unless two activities start together
     * in the wrong end order; then sort by end first (both sorts stable). */
    for (int by_end = 0; by_end < 2; by_end++) {
        for (size_t i = 0; i < n; i++) {
            perm[i] = (uint32_t)i;
            key[i] = mt_sort_key_i64(by_end ? raw[i].end_ns : raw[i].start_ns);
        }
        if (by_end) {
            if (mt_sort_u64(key, perm, n))
                goto fail;
            for (size_t i = 0; i < n; i++)
                key[i] = mt_sort_key_i64(raw[perm[i]].start_ns);
        }
        if (mt_sort_u64(key, perm, n))
            goto fail;
        size_t k = 1;
        for (; k < n; k++) {
            const mt_gpu_act_t *x = &raw[perm[k - 1]], *y = &raw[perm[k]];
            if (x->start_ns == y->start_ns && x->end_ns > y->end_ns)
                break;
        }
        if (k >= n)
            break;
    }
    mt_sort_permute(raw, sizeof *raw, perm, n);
    in->acts = raw;
    raw = NULL;
    if (!in->acts && !(in->acts = malloc(sizeof *in->acts))) /* no activity: still a valid pointer */
        goto fail;
    for (size_t k = 0; k < n; k++) {
        /* In start order, every union below is a linear merge. */
        const mt_gpu_act_t *a = &in->acts[k];
        mt_interval_t v = {a->start_ns, a->end_ns};
        in->busy[k] = v;
        int c = an_class(a->cls);
        in->u[c][in->n_u[c]++] = v;
    }
    in->n_acts = n;
    in->n_busy = mt_iv_merge_sorted(in->busy, n);
    in->busy = shrink(in->busy, in->n_busy, sizeof *in->busy);
    for (int c = 0; c < MT_AN_CLASS_COUNT_; c++) {
        in->n_u[c] = mt_iv_merge_sorted(in->u[c], in->n_u[c]);
        in->u[c] = shrink(in->u[c], in->n_u[c], sizeof *in->u[c]);
    }
    st = MT_OK;
fail:
    free(is_launch);
    free(raw);
    free(perm);
    free(key);
    if (st != MT_OK)
        mt_an_input_free(in);
    return st;
}

/* ---- the result ---- */

void mt_rank_analysis_free(mt_rank_analysis_t *a)
{
    if (!a)
        return;
    free(a->streams);
    free(a->proj);
    free(a->kernels);
    free(a->chunks);
    free(a->steps);
    free(a->gacts);
    free(a->syncs);
    free(a->annots);
    free(a->mem_devs);
    free(a->mem_steps);
    free(a->mem_points);
    free(a->gdeps);
    free(a->gstep);
    free(a->strings);
    free(a);
}

void mt_rank_analysis_drop_gacts(mt_rank_analysis_t *a)
{
    if (!a)
        return;
    free(a->gacts);
    free(a->gdeps);
    free(a->gstep);
    a->gacts = NULL;
    a->gdeps = a->gstep = NULL;
    a->n_gacts = 0;
}

mt_status_t mt_analyze_rank(const mt_trace_t *t, int32_t rank, const mt_analysis_opts_t *o,
                            mt_rank_analysis_t **out)
{
    *out = NULL;
    mt_analysis_opts_t def;
    if (!o) {
        mt_analysis_opts_init(&def);
        o = &def;
    }
    mt_rank_analysis_t *a = calloc(1, sizeof *a);
    if (!a)
        return MT_ERR_NOMEM;
    a->rank = rank;
    a->opt_project_ops = o->project_ops;
    a->opt_kernel_wait_ns = o->kernel_wait_ns;
    mt_an_input_t in;
    mt_status_t st = mt_an_input_build(t, o, &in);
    if (st == MT_OK)
        st = mt_an_temporal(&in, a);
    if (st == MT_OK)
        st = mt_an_idle(&in, a);
    if (st == MT_OK)
        st = mt_an_projection(&in, a);
    if (st == MT_OK)
        st = mt_an_kernels(&in, a);
    if (st == MT_OK)
        st = mt_an_launch(&in, a);
    if (st == MT_OK)
        st = mt_an_chunks(&in, a);
    if (st == MT_OK)
        st = mt_an_steps(&in, a);
    if (st == MT_OK)
        st = mt_an_waits(&in, a);
    if (st == MT_OK)
        st = mt_an_memory(&in, a);
    mt_an_input_free(&in);
    if (st != MT_OK) {
        mt_rank_analysis_free(a);
        return st;
    }
    *out = a;
    return MT_OK;
}

/* ---- packing ----
 * Layout (native byte order): magic, format, total length (u64), the scalar
 * fields below in this order at their own sizes, then each array as a u64
 * count followed by its elements' bytes (the element structs have no
 * padding), then the string pool as a u64 length and its bytes. */

#define MT_AN_MAGIC 0x4e41544du /* "MTAN" */
#define MT_AN_FORMAT 6u /* 3: steps and graph (issue 20) or memory (issue 26); 4: both; 5: annotations;
                         * 6: the named stream waits (gdeps after gacts, swaits_*) */

#define MT_AN_SCALARS(X)                                                                                      \
    X(rank) X(opt_project_ops) X(opt_kernel_wait_ns) X(gpu_activities) X(gpu_first_ns) X(gpu_last_ns)       \
    X(span_ns) X(busy_ns) X(compute_ns) X(comm_ns) X(comm_total_ns) X(overlap_ns) X(memory_ns) X(idle_ns)   \
    X(host_wait_ns) X(kernel_wait_ns) X(other_ns) X(launched) X(delay_p50_ns) X(delay_p90_ns)               \
    X(delay_p99_ns) X(delay_max_ns) X(launch_bound_ns) X(swaits_named) X(swaits_unresolved)

static size_t packed_size(const mt_rank_analysis_t *a)
{
    size_t n = 4 + 4 + 8;
#define X(f) n += sizeof a->f;
    MT_AN_SCALARS(X)
#undef X
    n += 8 + a->n_streams * sizeof *a->streams;
    n += 8 + a->n_proj * sizeof *a->proj;
    n += 8 + a->n_kernels * sizeof *a->kernels;
    n += 8 + a->n_chunks * sizeof *a->chunks;
    n += 8 + a->n_steps * sizeof *a->steps;
    n += 8 + a->n_gacts * sizeof *a->gacts;
    n += 8 + (a->gdeps ? 2 * a->n_gacts * sizeof *a->gdeps : 0);
    n += 8 + a->n_syncs * sizeof *a->syncs;
    n += 8 + a->n_annots * sizeof *a->annots;
    n += 8 + a->n_mem_devs * sizeof *a->mem_devs;
    n += 8 + a->n_mem_steps * sizeof *a->mem_steps;
    n += 8 + a->n_mem_points * sizeof *a->mem_points;
    n += sizeof a->mem_issues;
    n += 8 + a->strings_len;
    return n;
}

static char *put(char *p, const void *v, size_t n)
{
    if (n)
        memcpy(p, v, n);
    return p + n;
}

static char *put_u64(char *p, uint64_t v)
{
    return put(p, &v, sizeof v);
}

/* Write a's packed bytes (total = packed_size(a) of them) at b. */
static void pack_to(const mt_rank_analysis_t *a, char *b, size_t total)
{
    char *p = b;
    uint32_t magic = MT_AN_MAGIC, format = MT_AN_FORMAT;
    p = put(p, &magic, 4);
    p = put(p, &format, 4);
    p = put_u64(p, total);
#define X(f) p = put(p, &a->f, sizeof a->f);
    MT_AN_SCALARS(X)
#undef X
    p = put_u64(p, a->n_streams);
    p = put(p, a->streams, a->n_streams * sizeof *a->streams);
    p = put_u64(p, a->n_proj);
    p = put(p, a->proj, a->n_proj * sizeof *a->proj);
    p = put_u64(p, a->n_kernels);
    p = put(p, a->kernels, a->n_kernels * sizeof *a->kernels);
    p = put_u64(p, a->n_chunks);
    p = put(p, a->chunks, a->n_chunks * sizeof *a->chunks);
    p = put_u64(p, a->n_steps);
    p = put(p, a->steps, a->n_steps * sizeof *a->steps);
    p = put_u64(p, a->n_gacts);
    p = put(p, a->gacts, a->n_gacts * sizeof *a->gacts);
    /* the named waits (none: 0), two per activity */
    p = put_u64(p, a->gdeps ? 2 * (uint64_t)a->n_gacts : 0);
    if (a->gdeps)
        p = put(p, a->gdeps, 2 * a->n_gacts * sizeof *a->gdeps);
    p = put_u64(p, a->n_syncs);
    p = put(p, a->syncs, a->n_syncs * sizeof *a->syncs);
    p = put_u64(p, a->n_annots);
    p = put(p, a->annots, a->n_annots * sizeof *a->annots);
    p = put_u64(p, a->n_mem_devs);
    p = put(p, a->mem_devs, a->n_mem_devs * sizeof *a->mem_devs);
    p = put_u64(p, a->n_mem_steps);
    p = put(p, a->mem_steps, a->n_mem_steps * sizeof *a->mem_steps);
    p = put_u64(p, a->n_mem_points);
    p = put(p, a->mem_points, a->n_mem_points * sizeof *a->mem_points);
    p = put(p, a->mem_issues, sizeof a->mem_issues);
    p = put_u64(p, a->strings_len);
    p = put(p, a->strings, a->strings_len);
    assert(p == b + total);
    (void)p;
}

mt_status_t mt_rank_analysis_pack(const mt_rank_analysis_t *a, void **bytes, size_t *len)
{
    *bytes = NULL;
    *len = 0;
    size_t total = packed_size(a);
    char *b = malloc(total);
    if (!b)
        return MT_ERR_NOMEM;
    pack_to(a, b, total);
    *bytes = b;
    *len = total;
    return MT_OK;
}

mt_status_t mt_rank_analysis_pack_append(const mt_rank_analysis_t *a, mt_buf_t *out)
{
    size_t total = packed_size(a);
    if (mt_buf_reserve(out, total))
        return MT_ERR_NOMEM;
    pack_to(a, out->data + out->len, total);
    out->len += total;
    return MT_OK;
}

/* The GPU activities out of every packed result in b, in place: each
 * result's activity count becomes 0, the bytes after its activities move
 * down and its total shrinks. Every count read is checked against the
 * result's total before anything moves, so bytes that are not packed
 * results leave b as it was. MT_OK or MT_ERR_FORMAT. */
mt_status_t mt_rank_analysis_packed_drop_gacts(mt_buf_t *b)
{
    /* the arrays packed before gacts, in pack_to's order */
    const mt_rank_analysis_t *z = NULL; /* for sizeof only */
    const size_t before[] = {sizeof *z->streams, sizeof *z->proj, sizeof *z->kernels, sizeof *z->chunks,
                             sizeof *z->steps};
    size_t scalars = 0;
#define X(f) scalars += sizeof z->f;
    MT_AN_SCALARS(X)
#undef X
    /* first pass: check; second: move */
    for (int move = 0; move < 2; move++) {
        size_t in = 0, out = 0;
        while (in < b->len) {
            uint32_t magic, format;
            uint64_t total, n;
            if (b->len - in < 16)
                return MT_ERR_FORMAT;
            memcpy(&magic, b->data + in, 4);
            memcpy(&format, b->data + in + 4, 4);
            memcpy(&total, b->data + in + 8, 8);
            if (magic != MT_AN_MAGIC || format != MT_AN_FORMAT || total < 16 || total > b->len - in)
                return MT_ERR_FORMAT;
            size_t o = 16 + scalars; /* within this result */
            for (size_t k = 0; k <= sizeof before / sizeof *before; k++) {
                if (o > total || total - o < 8)
                    return MT_ERR_FORMAT;
                memcpy(&n, b->data + in + o, 8);
                size_t sz = k < sizeof before / sizeof *before ? before[k] : sizeof *z->gacts;
                if (n > (total - o - 8) / sz)
                    return MT_ERR_FORMAT;
                o += 8;
                if (k < sizeof before / sizeof *before)
                    o += (size_t)n * sz;
            }
            /* o: the first activity; n of them; then the named waits
             * (their count, nd of them), which go with the activities */
            size_t ga = (size_t)n * sizeof *z->gacts;
            uint64_t nd;
            if (total - o - ga < 8)
                return MT_ERR_FORMAT;
            memcpy(&nd, b->data + in + o + ga, 8);
            if (nd > (total - o - ga - 8) / sizeof *z->gdeps)
                return MT_ERR_FORMAT;
            size_t gd = (size_t)nd * sizeof *z->gdeps;
            size_t cut = ga + gd, keep = (size_t)total - cut;
            if (move) {
                uint64_t zero = 0, t2 = keep;
                memmove(b->data + out, b->data + in, o);
                memcpy(b->data + out + 8, &t2, 8);
                memcpy(b->data + out + o - 8, &zero, 8);
                memcpy(b->data + out + o, &zero, 8);
                memmove(b->data + out + o + 8, b->data + in + o + ga + 8 + gd, (size_t)total - o - ga - 8 - gd);
            }
            in += (size_t)total;
            out += keep;
        }
        if (move)
            b->len = out;
    }
    return MT_OK;
}

/* A bounds-checked reader over the packed bytes. */
typedef struct rd {
    const char *p;
    size_t left;
    int bad;
} rd_t;

static void get(rd_t *r, void *v, size_t n)
{
    if (r->bad || n > r->left) {
        r->bad = 1;
        memset(v, 0, n);
        return;
    }
    if (n)
        memcpy(v, r->p, n);
    r->p += n;
    r->left -= n;
}

/* An array of count elements of size sz: count checked against what is
 * left before anything is allocated. */
static void *get_array(rd_t *r, size_t sz, size_t *count, int *nomem)
{
    uint64_t n = 0;
    get(r, &n, sizeof n);
    *count = 0;
    if (r->bad || n > r->left / sz) {
        r->bad = 1;
        return NULL;
    }
    if (!n)
        return NULL;
    void *v = mt_big_malloc((size_t)n * sz);
    if (!v) {
        *nomem = 1;
        return NULL;
    }
    get(r, v, (size_t)n * sz);
    *count = (size_t)n;
    return v;
}

static int str_ok(const mt_rank_analysis_t *a, mt_an_str_t s)
{
    if (!s.len)
        return 1;
    return (size_t)s.off + s.len < a->strings_len && a->strings[s.off + s.len] == '\0';
}

mt_status_t mt_rank_analysis_unpack(const void *bytes, size_t len, mt_rank_analysis_t **out, size_t *consumed)
{
    *out = NULL;
    if (consumed)
        *consumed = 0;
    rd_t r = {bytes, len, 0};
    uint32_t magic = 0, format = 0;
    uint64_t total = 0;
    get(&r, &magic, 4);
    get(&r, &format, 4);
    get(&r, &total, 8);
    if (r.bad || magic != MT_AN_MAGIC || format != MT_AN_FORMAT || total > len || total < 16)
        return MT_ERR_FORMAT;
    r.left = (size_t)total - 16; /* read nothing beyond this result */
    mt_rank_analysis_t *a = calloc(1, sizeof *a);
    if (!a)
        return MT_ERR_NOMEM;
#define X(f) get(&r, &a->f, sizeof a->f);
    MT_AN_SCALARS(X)
#undef X
    int nomem = 0;
    if (!r.bad)
        a->streams = get_array(&r, sizeof *a->streams, &a->n_streams, &nomem);
    if (!r.bad && !nomem)
        a->proj = get_array(&r, sizeof *a->proj, &a->n_proj, &nomem);
    if (!r.bad && !nomem)
        a->kernels = get_array(&r, sizeof *a->kernels, &a->n_kernels, &nomem);
    if (!r.bad && !nomem)
        a->chunks = get_array(&r, sizeof *a->chunks, &a->n_chunks, &nomem);
    if (!r.bad && !nomem)
        a->steps = get_array(&r, sizeof *a->steps, &a->n_steps, &nomem);
    if (!r.bad && !nomem)
        a->gacts = get_array(&r, sizeof *a->gacts, &a->n_gacts, &nomem);
    size_t n_gdeps = 0;
    if (!r.bad && !nomem)
        a->gdeps = get_array(&r, sizeof *a->gdeps, &n_gdeps, &nomem);
    if (!r.bad && !nomem)
        a->syncs = get_array(&r, sizeof *a->syncs, &a->n_syncs, &nomem);
    if (!r.bad && !nomem)
        a->annots = get_array(&r, sizeof *a->annots, &a->n_annots, &nomem);
    if (!r.bad && !nomem)
        a->mem_devs = get_array(&r, sizeof *a->mem_devs, &a->n_mem_devs, &nomem);
    if (!r.bad && !nomem)
        a->mem_steps = get_array(&r, sizeof *a->mem_steps, &a->n_mem_steps, &nomem);
    if (!r.bad && !nomem)
        a->mem_points = get_array(&r, sizeof *a->mem_points, &a->n_mem_points, &nomem);
    if (!r.bad && !nomem)
        get(&r, a->mem_issues, sizeof a->mem_issues);
    if (!r.bad && !nomem)
        a->strings = get_array(&r, 1, &a->strings_len, &nomem);
    a->strings_cap = a->strings_len;
    if (nomem) {
        mt_rank_analysis_free(a);
        return MT_ERR_NOMEM;
    }
    int ok = !r.bad && r.left == 0;
    for (size_t i = 0; ok && i < a->n_streams; i++)
        ok = str_ok(a, a->streams[i].name);
    for (size_t i = 0; ok && i < a->n_proj; i++)
        ok = str_ok(a, a->proj[i].name);
    for (size_t i = 0; ok && i < a->n_kernels; i++)
        ok = a->kernels[i].cls < MT_AN_CLASS_COUNT_ && str_ok(a, a->kernels[i].name);
    for (size_t i = 0; ok && i < a->n_gacts; i++)
        ok = a->gacts[i].cls < MT_AN_CLASS_COUNT_ && str_ok(a, a->gacts[i].name) &&
             a->gacts[i].annot <= a->n_annots;
    ok = ok && (n_gdeps == 0 || n_gdeps == 2 * a->n_gacts);
    for (size_t i = 0; ok && i < n_gdeps; i++)
        ok = a->gdeps[i] >= MT_AN_GDEP_INFER && (a->gdeps[i] < 0 || (size_t)a->gdeps[i] < a->n_gacts);
    for (size_t i = 0; ok && i < a->n_annots; i++)
        ok = str_ok(a, a->annots[i]);
    for (size_t i = 0; ok && i < a->n_mem_devs; i++) {
        const mt_an_mem_dev_t *d = &a->mem_devs[i];
        ok = str_ok(a, d->peak_op) && str_ok(a, d->peak_annotation) &&
             (size_t)d->first_step + d->n_steps <= a->n_mem_steps &&
             (size_t)d->first_point + d->n_points <= a->n_mem_points;
    }
    if (!ok) {
        mt_rank_analysis_free(a);
        return MT_ERR_FORMAT;
    }
    *out = a;
    if (consumed)
        *consumed = (size_t)total;
    return MT_OK;
}

mt_status_t mt_rank_analysis_unpack_all(const void *bytes, size_t len, mt_rank_analysis_t ***out, size_t *n)
{
    mt_rank_analysis_t **v = NULL;
    size_t k = 0, cap = 0;
    mt_status_t st = MT_OK;
    for (size_t off = 0; off < len && st == MT_OK;) {
        mt_rank_analysis_t *a = NULL;
        size_t used = 0;
        if (k == cap) {
            mt_rank_analysis_t **g = realloc(v, (cap = cap ? 2 * cap : 8) * sizeof *v);
            if (!g) {
                st = MT_ERR_NOMEM;
                break;
            }
            v = g;
        }
        st = mt_rank_analysis_unpack((const char *)bytes + off, len - off, &a, &used);
        if (st == MT_OK && !used) { /* cannot be: a result has a header */
            mt_rank_analysis_free(a);
            st = MT_ERR_FORMAT;
        }
        if (st == MT_OK)
            v[k++] = a;
        off += used;
    }
    if (st != MT_OK) {
        for (size_t i = 0; i < k; i++)
            mt_rank_analysis_free(v[i]);
        free(v);
        v = NULL;
        k = 0;
    }
    *out = v;
    *n = k;
    return st;
}
