/* The walk back along the critical path of a job step (its statistics,
 * or its segments recorded for the strips) and the root causes of waiting,
 * whose walks share it; cp_run.c calls them (internal to src/cross/,
 * cp_run_int.h). */
#define _POSIX_C_SOURCE 200809L /* strndup */
#include "base/bigmem.h"
#include "base/hash.h"
#include "base/sort.h"
#include "cross/cp_run_int.h"

#include <stdlib.h>
#include <string.h>

/* ---- the critical path of one step ---- */

enum { CP_K_COMM_WAIT = MT_CP_KIND_COUNT_ };

/* What a walk does with each segment: the path's statistics (WK_PATH),
 * or one of the sinks: cp_path_of's record (sink_rec), the root causes'
 * late rank (sink_q; cross_q after the transfer of an instance, before
 * the walk moves to its last arrival, nonzero stopping the walk there)
 * and waiting rank (sink_p). A sink gets each segment with kind
 * CP_K_COMM_WAIT for a matched communication activity the walk could
 * not follow to its last arrival. The mode is a constant in each
 * compiled walk (walk_core), so each sink is inlined into its own copy
 * (it was called through a pointer at each segment). */
enum { WK_PATH, WK_REC, WK_Q, WK_P };

CP_INLINE void sink_q(walk_t *w, int32_t rank_i, int kind, int64_t d, int32_t node);
CP_INLINE void sink_p(walk_t *w, int32_t rank_i, int kind, int64_t d, int32_t node);
CP_INLINE int cross_q(walk_t *w, int32_t inst, bool host);

/* cp_path_of's recording: the segments as they come (backward). */
typedef struct rec {
    cp_pseg_t *v;
    size_t n, cap;
    bool fail;
} rec_t;

CP_INLINE void sink_rec(walk_t *w, int32_t rank_i, int kind, int64_t d, int32_t node)
{
    rec_t *x = w->ctx;
    if (MT_GROW(x->v, x->cap, x->n + 1, 64)) {
        x->fail = true;
        return;
    }
    /* seg() has moved w->cur to the segment's start already */
    x->v[x->n++] = (cp_pseg_t){w->cur, w->cur + d, rank_i, node, kind == CP_K_COMM_WAIT ? MT_CP_COMM : kind};
}

/* One segment of the walk back to a: w->cur moves to it. Inlined into
 * walk_core, each call with its kind a constant (a call per segment was a
 * fifth of the root causes' walks). */
CP_INLINE void seg(walk_t *w, int mode, int rank_i, int kind, int64_t a, int32_t node)
{
    if (a > w->cur)
        a = w->cur;
    if (a < w->t0)
        a = w->t0;
    int64_t d = w->cur - a;
    w->cur = a;
    if (d <= 0)
        return;
    if (mode == WK_REC) {
        sink_rec(w, rank_i, kind, d, node);
        return;
    }
    if (mode == WK_Q) {
        sink_q(w, rank_i, kind, d, node);
        return;
    }
    if (mode == WK_P) {
        sink_p(w, rank_i, kind, d, node);
        return;
    }
    if (kind == CP_K_COMM_WAIT)
        kind = MT_CP_COMM;
    w->s->kind_ns[kind] += d;
    /* by index, not a search of the step's rank steps: that made each
     * segment O(ranks) (a 256-rank job's paths have thousands) */
    if (w->rs_at[rank_i] >= 0)
        w->c->rank_steps[w->rs_at[rank_i]].path_ns += d;
    if (node >= 0 && w->s->used)
        w->node_ns[node] += d;
    if (node >= 0 && w->g->nodes[node].absent)
        w->absent_ns += d;
}

/* Walk back from w->cur: on rank_i's host (node < 0), from the end of a
 * node, or from its start (at_start); each segment as mode says (WK_*,
 * a constant in each copy: walk_path and the root causes' walks). */
CP_INLINE void walk_core(walk_t *w, int mode, int32_t rank_i, int32_t node, bool at_start)
{
    const cp_graph_t *g = w->g;
    enum { AT_HOST, AT_END, AT_START, AT_SYNC } where = node < 0 ? AT_HOST : at_start ? AT_START : AT_END;
    int32_t id = node;
    size_t j = 0;
    /* the sync AT_HOST finds when it is known already: the latest sync
     * before a launch end (cp_node_t.lsync) or a sync's start
     * (cp_sync_t.sb), worked out before the walks; -2: search */
    long known = -2;
    size_t guard = 2 * g->n_nodes + 2 * g->n_syncs + 16;
    while (w->cur > w->t0 && !w->stop && guard--) {
        if (where == AT_HOST) {
            long q = known != -2 ? known : sync_before(g, &g->ranks[rank_i], w->cur);
            known = -2;
            if (q >= 0 && g->syncs[q].e > w->cur) { /* host work inside a host collective (host_cover) */
                j = (size_t)q;
                where = AT_SYNC;
                continue;
            }
            if (q < 0 || g->syncs[q].e <= w->t0) {
                seg(w, mode, rank_i, MT_CP_HOST, w->t0, -1);
                break;
            }
            seg(w, mode, rank_i, MT_CP_HOST, g->syncs[q].e, -1);
            j = (size_t)q;
            where = AT_SYNC;
        } else if (where == AT_SYNC) {
            const cp_sync_t *s = &g->syncs[j];
            if (s->hi >= 0) {
                /* a host collective: its transfer, then the host of the
                 * member that arrived last, from its arrival back (the
                 * ranks that waited for it are not on the path) */
                const cp_inst_t *I = &g->hin[s->hi];
                const int64_t cur0 = w->cur;
                if (I->last >= 0 && I->maxstart > s->s && I->maxstart <= w->cur) {
                    seg(w, mode, rank_i, MT_CP_COMM, I->maxstart, -1);
                    /* a synchronisation point of the root causes (as a
                     * GPU instance's transfer) */
                    if (mode == WK_Q && cross_q(w, s->hi, true)) {
                        w->stop = true;
                        break;
                    }
                    rank_i = g->syncs[I->last].rank_i;
                    if (w->cur == g->syncs[I->last].s)
                        known = g->syncs[I->last].sb;
                } else {
                    seg(w, mode, rank_i, MT_CP_COMM, s->s, -1);
                    if (w->cur == s->s)
                        known = s->sb;
                }
                if (mode == WK_PATH && I->absent)
                    w->absent_ns += cur0 - w->cur;
                where = AT_HOST;
            } else if (s->w >= 0 && g->nodes[s->w].e >= s->s) {
                seg(w, mode, rank_i, MT_CP_HOST, g->nodes[s->w].e, -1);
                id = s->w;
                where = AT_END;
            } else {
                seg(w, mode, rank_i, MT_CP_HOST, s->s, -1);
                if (w->cur == s->s)
                    known = s->sb;
                where = AT_HOST;
            }
        } else if (where == AT_END) {
            const cp_node_t *n = &g->nodes[id];
            rank_i = n->rank_i;
            if (n->inst >= 0 && g->inst[n->inst].maxstart <= w->cur) {
                const cp_inst_t *I = &g->inst[n->inst];
                seg(w, mode, rank_i, MT_CP_COMM, I->maxstart, id);
                if (mode == WK_Q && cross_q(w, n->inst, false)) {
                    w->stop = true;
                    break;
                }
                id = I->last;
                rank_i = g->nodes[id].rank_i;
            } else {
                seg(w, mode, rank_i, n->inst >= 0 && n->cls == MT_AN_COMM ? CP_K_COMM_WAIT : cp_node_kind(n), n->s, id);
            }
            where = AT_START;
        } else {
            const cp_node_t *n = &g->nodes[id];
            rank_i = n->rank_i;
            if (n->bind == CP_B_STREAM) {
                seg(w, mode, rank_i, MT_CP_IDLE, g->nodes[n->pstream].e, -1);
                id = n->pstream;
                where = AT_END;
            } else if (n->bind == CP_B_X) {
                seg(w, mode, rank_i, MT_CP_IDLE, g->nodes[n->px].e, -1);
                id = n->px;
                where = AT_END;
            } else if (n->bind == CP_B_LAUNCH) {
                seg(w, mode, rank_i, MT_CP_HOST, n->L, -1);
                if (w->cur == n->L)
                    known = n->lsync;
                where = AT_HOST;
            } else {
                seg(w, mode, rank_i, MT_CP_IDLE, w->t0, -1);
                break;
            }
        }
    }
    if (w->cur > w->t0 && !w->stop) /* the guard ran out: a cycle through zero-length segments */
        seg(w, mode, rank_i, MT_CP_IDLE, w->t0, -1);
}

/* The path's statistics (WK_PATH) and cp_path_of's record (WK_REC). */
static void walk_path(walk_t *w, int32_t rank_i, int32_t node, bool at_start)
{
    walk_core(w, WK_PATH, rank_i, node, at_start);
}

static void walk_rec(walk_t *w, int32_t rank_i, int32_t node, bool at_start)
{
    walk_core(w, WK_REC, rank_i, node, at_start);
}

/* Walk the critical path of job step j from the rank step that ends it,
 * recorded (rec) or counted; false when that rank step is not found. */
bool cp_walk_step(walk_t *w, size_t j, bool rec)
{
    const cp_graph_t *g = w->g;
    const mt_critpath_t *c = w->c;
    const mt_cp_step_t *s = &c->steps[j];
    const cp_rs_t *x = NULL;
    for (uint32_t k = s->first; k < s->first + s->n; k++)
        if (c->rank_steps[k].rank == s->end_rank)
            x = &g->rs[g->js[k]];
    if (!x)
        return false;
    int32_t node = x->last >= 0 && g->nodes[x->last].e >= x->cpu_end ? x->last : -1;
    if (rec)
        walk_rec(w, x->rank_i, node, false);
    else
        walk_path(w, x->rank_i, node, false);
    return true;
}

int cp_path_of(const cp_graph_t *g, mt_critpath_t *c, size_t j, cp_pseg_t **out, size_t *n)
{
    mt_cp_step_t *s = &c->steps[j];
    rec_t x = {0};
    walk_t wk = {.g = g, .c = c, .s = s, .t0 = s->start_ns, .cur = s->end_ns, .ctx = &x};
    cp_walk_step(&wk, j, true);
    if (x.fail) {
        free(x.v);
        return -1;
    }
    for (size_t a = 0, b = x.n; a + 1 < b; a++, b--) { /* the walk goes backward */
        cp_pseg_t t = x.v[a];
        x.v[a] = x.v[b - 1];
        x.v[b - 1] = t;
    }
    *out = x.v;
    *n = x.n;
    return 0;
}

/* ---- names ---- */

int cp_name_ns_cmp(const void *pa, const void *pb)
{
    const mt_cp_name_t *a = pa, *b = pb;
    if (a->ns != b->ns)
        return a->ns > b->ns ? -1 : 1;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    if (a->kind != b->kind)
        return a->kind < b->kind ? -1 : 1;
    return strcmp(a->name, b->name);
}

#define CP_CAUSES 10

/* Free the names of v[0..n) and v. */
static void names_free(mt_cp_name_t *v, size_t n)
{
    for (size_t j = 0; j < n; j++)
        free(v[j].name);
    free(v);
}

/* Sort v[0..n) most first, free the names past the first CP_CAUSES and
 * return how many are kept. */
static size_t names_keep_top(mt_cp_name_t *v, size_t n)
{
    qsort(v, n, sizeof *v, cp_name_ns_cmp);
    for (size_t k = CP_CAUSES; k < n; k++)
        free(v[k].name);
    return n < CP_CAUSES ? n : CP_CAUSES;
}

/* ---- root causes ---- */

/* Segments of one walk at most (critpath.h "root causes": Limits). */
#define CP_RC_SEG 65536

/* A cause key: kind and name (borrowed from a rank's result). */
typedef struct rc_key {
    const char *name;
    uint32_t len;
    uint32_t kind;        /* mt_rc_kind_t */
} rc_key_t;

/* One segment of the late rank's walk, with what charging it to each
 * waiting rank reads worked out once (rc_charge: an instance has up to
 * ranks - 1 waiters, each charged from the same segments). */
typedef struct rc_seg {
    int32_t key, rank_i;
    int64_t d;
    double fq;            /* d / the late rank's sum of its key (set with those sums) */
    size_t ann;           /* its (rank, annotation)'s index in rc_t.ann */
    uint32_t kind;        /* its key's mt_rc_kind_t */
    int32_t cause;        /* its (key, rank)'s index in rc_t.cs once charged, -1 */
} rc_seg_t;

/* Wait charged to one annotation of one rank, by kind. */
typedef struct rc_ann {
    int64_t ns;
    int64_t kind_ns[MT_RC_KIND_COUNT_];
} rc_ann_t;

/* Where the late rank's walk left the transfer of an instance. */
typedef struct rc_cross {
    size_t pos;           /* segments before it */
    int32_t inst;         /* in g->inst, or in g->hin when host */
    bool host;            /* a host collective */
    int64_t t;            /* its last arrival (clipped to the step start) */
} rc_cross_t;

/* A (key, rank) charged: the causes before sorting. */
typedef struct rc_cause {
    int32_t key, rank_i;
    int64_t ns;
} rc_cause_t;

enum { RC_KEY_HOST = 0, RC_KEY_IDLE = 1 };

/* A hash index over the entries of an array its owner keeps (the keys
 * and the causes below): open addressing with linear probing; a slot
 * holds an entry's index, -1 empty; cap a power of two, at least twice
 * the entries. */
typedef struct itab {
    int32_t *slot;
    size_t cap;
} itab_t;

static int itab_init(itab_t *t, size_t cap)
{
    t->cap = cap;
    t->slot = malloc(cap * sizeof *t->slot);
    if (!t->slot)
        return -1;
    memset(t->slot, 0xff, cap * sizeof *t->slot);
    return 0;
}

static void itab_put(int32_t *slot, size_t cap, uint64_t h, int32_t e)
{
    size_t i = h & (cap - 1);
    while (slot[i] >= 0)
        i = (i + 1) & (cap - 1);
    slot[i] = e;
}

/* Find-or-insert: the entry of hash h that same(ctx, e) accepts; when
 * there is none, n (the caller then stores entry n and counts it), with
 * the table doubled first when n + 1 entries need it (entries 0..n-1
 * placed again by hash(ctx, e)). -1 out of memory, the table unchanged.
 * Inline, so that each caller's same and hash are direct calls. */
static inline int32_t itab_get(itab_t *t, uint64_t h, size_t n, bool (*same)(const void *ctx, int32_t e),
                               uint64_t (*hash)(const void *ctx, int32_t e), const void *ctx)
{
    for (size_t i = h & (t->cap - 1); t->slot[i] >= 0; i = (i + 1) & (t->cap - 1))
        if (same(ctx, t->slot[i]))
            return t->slot[i];
    if (2 * (n + 1) > t->cap) {
        size_t cap = 2 * t->cap;
        int32_t *v = malloc(cap * sizeof *v);
        if (!v)
            return -1;
        memset(v, 0xff, cap * sizeof *v);
        for (size_t k = 0; k < n; k++)
            itab_put(v, cap, hash(ctx, (int32_t)k), (int32_t)k);
        free(t->slot);
        t->slot = v;
        t->cap = cap;
    }
    itab_put(t->slot, t->cap, h, (int32_t)n);
    return (int32_t)n;
}

typedef struct rc {
    const cp_graph_t *g;
    rc_key_t *keys;
    size_t n_keys, cap_keys;
    itab_t ktab;          /* over keys */
    int32_t *nkey, *wkey; /* per node: its key; comm_wait key of a matched comm node, -1 */
    int32_t *mr;          /* per instance member (imem order): member ranks, sorted within each instance */
    int32_t *hmr;         /* the same per host collective member (hmem order) */
    rc_seg_t *segs;       /* the late rank's walk */
    size_t n_segs, cap_segs;
    rc_cross_t *cross;
    size_t n_cross, cap_cross;
    const cp_inst_t *inst; /* the instance whose waits are charged (GPU or host) */
    int64_t *accq, *accp; /* per key: the late rank's and the waiting rank's time */
    int32_t *touched;     /* keys with time in accq: touched[0 .. n_tq); in accp: touched[n_keys ..][0 .. n_tp) */
    uint8_t *mark;        /* per key: bit 0 in the first list, bit 1 in the second */
    size_t n_tq, n_tp;
    uint32_t q_stamp;     /* accq holds segs[0 .. q_npos) of walk q_stamp (0: nothing) */
    size_t q_npos;
    size_t n_walk;        /* segments of the current walk */
    rc_cause_t *cs;
    size_t n_cs, cap_cs;
    itab_t ctab;          /* over cs */
    rc_ann_t *ann;        /* per rank and annotation: ann[aoff[rank_i] + annot] */
    size_t *aoff;
    /* Per rank, against the late rank's walk of x->inst (its number in
     * stamp): in_at == stamp when the rank is a member of x->inst (n_irank
     * of them); fc_at == stamp when fc holds the first crossing (index in
     * cross) whose instance holds the rank, the crossings before fc_next
     * scanned. Stamps, not clearing: a 256-rank job walks once per
     * collective. */
    uint32_t *in_at, *fc_at;
    int32_t *fc;
    uint32_t stamp;
    size_t n_irank, fc_next;
    int err;
} rc_t;

static uint64_t key_hash(const char *name, uint32_t len, uint32_t kind)
{
    return mt_hash64(name, len, 0x9e3779b97f4a7c15ULL * (kind + 1));
}

/* A key looked up in x's keys (key_of's itab_get context). */
typedef struct key_probe {
    const rc_key_t *keys;
    rc_key_t k;
} key_probe_t;

static bool key_same(const void *ctx, int32_t e)
{
    const key_probe_t *p = ctx;
    const rc_key_t *k = &p->keys[e];
    return k->kind == p->k.kind && k->len == p->k.len &&
           (k->name == p->k.name || !memcmp(k->name, p->k.name, k->len));
}

static uint64_t key_rehash(const void *ctx, int32_t e)
{
    const rc_key_t *k = &((const key_probe_t *)ctx)->keys[e];
    return key_hash(k->name, k->len, k->kind);
}

/* The key of (kind, name), added when new; -1 out of memory. */
static int32_t key_of(rc_t *x, uint32_t kind, const char *name, uint32_t len)
{
    if (MT_GROW(x->keys, x->cap_keys, x->n_keys + 1, 64))
        return -1;
    key_probe_t p = {x->keys, {name, len, kind}};
    int32_t e = itab_get(&x->ktab, key_hash(name, len, kind), x->n_keys, key_same, key_rehash, &p);
    if (e >= 0 && (size_t)e == x->n_keys)
        x->keys[x->n_keys++] = p.k;
    return e;
}

static uint64_t cause_hash(int32_t key, int32_t rank_i)
{
    return ((uint64_t)(uint32_t)key * 0x9e3779b97f4a7c15ULL) ^ ((uint64_t)(uint32_t)rank_i * 0xc2b2ae3d27d4eb4fULL);
}

/* A cause looked up in x's causes (charge's itab_get context). */
typedef struct cause_probe {
    const rc_cause_t *cs;
    int32_t key, rank_i;
} cause_probe_t;

static bool cause_same(const void *ctx, int32_t e)
{
    const cause_probe_t *p = ctx;
    return p->cs[e].key == p->key && p->cs[e].rank_i == p->rank_i;
}

static uint64_t cause_rehash(const void *ctx, int32_t e)
{
    const rc_cause_t *c = &((const cause_probe_t *)ctx)->cs[e];
    return cause_hash(c->key, c->rank_i);
}

/* The index in x->cs of (key, rank_i), added with 0 ns when new; -1 out
 * of memory. */
static int32_t cause_of(rc_t *x, int32_t key, int32_t rank_i)
{
    if (MT_GROW(x->cs, x->cap_cs, x->n_cs + 1, 64))
        return -1;
    cause_probe_t p = {x->cs, key, rank_i};
    int32_t e = itab_get(&x->ctab, cause_hash(key, rank_i), x->n_cs, cause_same, cause_rehash, &p);
    if (e >= 0 && (size_t)e == x->n_cs)
        x->cs[x->n_cs++] = (rc_cause_t){key, rank_i, 0};
    return e;
}

static int32_t seg_key(const rc_t *x, int kind, int32_t node)
{
    if (kind == MT_CP_HOST)
        return RC_KEY_HOST;
    if (node < 0 || kind == MT_CP_IDLE)
        return RC_KEY_IDLE;
    if (kind == CP_K_COMM_WAIT && x->wkey[node] >= 0)
        return x->wkey[node];
    return x->nkey[node];
}

/* The late rank's walk: its segments kept in order. */
CP_INLINE void sink_q(walk_t *w, int32_t rank_i, int kind, int64_t d, int32_t node)
{
    rc_t *x = w->ctx;
    if (MT_GROW(x->segs, x->cap_segs, x->n_segs + 1, 256)) {
        x->err = 1;
        w->stop = true;
        return;
    }
    uint32_t an = 0;
    if (node >= 0 && x->g->annot && x->g->nodes[node].rank_i == rank_i)
        an = x->g->annot[node];
    int32_t key = seg_key(x, kind, node);
    x->segs[x->n_segs++] = (rc_seg_t){.key = key, .rank_i = rank_i, .d = d, .ann = x->aoff[rank_i] + an,
                                      .kind = x->keys[key].kind, .cause = -1};
    if (++x->n_walk >= CP_RC_SEG)
        w->stop = true;
}

/* The late rank's walk left instance K's transfer (host: a host
 * collective, g->hin): a synchronisation point for the waiting ranks in
 * K; the walk ends when K holds them all. */
CP_INLINE int cross_q(walk_t *w, int32_t inst, bool host)
{
    rc_t *x = w->ctx;
    if (MT_GROW(x->cross, x->cap_cross, x->n_cross + 1, 16)) {
        x->err = 1;
        return 1;
    }
    x->cross[x->n_cross++] = (rc_cross_t){x->n_segs, inst, host, w->cur};
    const cp_inst_t *K = host ? &x->g->hin[inst] : &x->g->inst[inst];
    if (K->n < x->inst->n)
        return 0;
    /* K holds every rank of x->inst when it holds n_irank distinct ones
     * marked in in_at: one pass over K (its member ranks sorted), not a
     * search of K per member of x->inst */
    const int32_t *v = (host ? x->hmr : x->mr) + K->m0;
    size_t have = 0;
    for (uint32_t m = 0; m < K->n; m++)
        have += (m == 0 || v[m] != v[m - 1]) && x->in_at[v[m]] == x->stamp;
    return have == x->n_irank;
}

/* The first crossing of the late rank's walk whose instance holds rank_i
 * (an index in x->cross), or -1. The crossings are scanned once per walk,
 * each marking its ranks, as far as the waiters need: an instance's
 * waiters share them (a search per waiter and crossing cost more than
 * the walks on a 256-rank job). */
static int32_t first_cross(rc_t *x, int32_t rank_i)
{
    while (x->fc_at[rank_i] != x->stamp && x->fc_next < x->n_cross) {
        const rc_cross_t *y = &x->cross[x->fc_next];
        const cp_inst_t *K = y->host ? &x->g->hin[y->inst] : &x->g->inst[y->inst];
        const int32_t *v = (y->host ? x->hmr : x->mr) + K->m0;
        for (uint32_t m = 0; m < K->n; m++) {
            int32_t r = v[m];
            if (x->fc_at[r] != x->stamp) {
                x->fc_at[r] = x->stamp;
                x->fc[r] = (int32_t)x->fc_next;
            }
        }
        x->fc_next++;
    }
    return x->fc_at[rank_i] == x->stamp ? x->fc[rank_i] : -1;
}

/* Note key in the list of bit (1: accq's, 2: accp's). */
CP_INLINE void touch(rc_t *x, int32_t key, uint8_t bit)
{
    if (!(x->mark[key] & bit)) {
        x->mark[key] |= bit;
        if (bit == 1)
            x->touched[x->n_tq++] = key;
        else
            x->touched[x->n_keys + x->n_tp++] = key;
    }
}

/* The waiting rank's walk: summed per key. */
CP_INLINE void sink_p(walk_t *w, int32_t rank_i, int kind, int64_t d, int32_t node)
{
    (void)rank_i;
    rc_t *x = w->ctx;
    int32_t key = seg_key(x, kind, node);
    touch(x, key, 2);
    x->accp[key] += d;
    if (++x->n_walk >= CP_RC_SEG)
        w->stop = true;
}

/* The root causes' walks (see WK_Q, WK_P). */
static void walk_q(walk_t *w, int32_t rank_i, int32_t node)
{
    walk_core(w, WK_Q, rank_i, node, true);
}

static void walk_p(walk_t *w, int32_t rank_i, int32_t node)
{
    walk_core(w, WK_P, rank_i, node, true);
}

static void rc_free(rc_t *x)
{
    free(x->keys);
    free(x->ktab.slot);
    free(x->nkey);
    free(x->wkey);
    free(x->mr);
    free(x->hmr);
    free(x->segs);
    free(x->cross);
    free(x->accq);
    free(x->accp);
    free(x->touched);
    free(x->mark);
    free(x->cs);
    free(x->ctab.slot);
    free(x->ann);
    free(x->aoff);
    free(x->in_at);
    free(x->fc_at);
    free(x->fc);
}

/* Sort each instance's member ranks mr[I.m0 .. I.m0 + I.n) of inst[0 .. n). */
static void member_ranks_sort(int32_t *mr, const cp_inst_t *inst, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int32_t *v = mr + inst[i].m0;
        uint32_t k = 1;
        while (k < inst[i].n && v[k - 1] <= v[k])
            k++;
        if (k < inst[i].n) /* members usually come in rank order already */
            qsort(v, inst[i].n, sizeof *v, mt_cmp_i32);
    }
}

/* Keys of every node and the sorted member ranks of every instance (GPU
 * and host). */
static int rc_init(const cp_graph_t *g, rc_t *x)
{
    size_t nn = g->n_nodes ? g->n_nodes : 1;
    x->g = g;
    x->nkey = mt_big_malloc(nn * sizeof *x->nkey);
    x->wkey = mt_big_malloc(nn * sizeof *x->wkey);
    x->mr = malloc((g->n_imem ? g->n_imem : 1) * sizeof *x->mr);
    if (itab_init(&x->ktab, 64) || itab_init(&x->ctab, 64) || !x->nkey || !x->wkey || !x->mr)
        return -1;
    if (key_of(x, MT_RC_HOST, "", 0) != RC_KEY_HOST || key_of(x, MT_RC_IDLE, "", 0) != RC_KEY_IDLE)
        return -1;
    /* A rank's nodes borrow their names from its string pool, so a name
     * repeats as the same pointer: a small cache by pointer spares most
     * hashes of the bytes (they were 3/4 of the root causes' cost on a
     * 256-rank job). */
    enum { NC = 256 };
    struct {
        const char *name;
        uint32_t len, cls;
        int32_t key, wkey; /* wkey -1: not looked up yet */
    } nc[NC];
    memset(nc, 0, sizeof nc);
    for (size_t k = 0; k < g->n_nodes; k++) {
        const cp_node_t *n = &g->nodes[k];
        size_t h = (size_t)(((uintptr_t)n->name >> 3) * 0x9e3779b97f4a7c15ULL >> 56) % NC;
        if (!(nc[h].name == n->name && n->name && nc[h].len == n->name_len && nc[h].cls == n->cls)) {
            uint32_t kind = n->cls == MT_AN_COMPUTE ? MT_RC_COMPUTE
                            : n->cls == MT_AN_COMM  ? MT_RC_COMM_TRANSFER
                                                    : MT_RC_MEMORY;
            int32_t key = key_of(x, kind, n->name, n->name_len);
            if (key < 0)
                return -1;
            nc[h].name = n->name;
            nc[h].len = n->name_len;
            nc[h].cls = n->cls;
            nc[h].key = key;
            nc[h].wkey = -1;
        }
        x->nkey[k] = nc[h].key;
        x->wkey[k] = -1;
        if (n->inst >= 0 && n->cls == MT_AN_COMM) {
            if (nc[h].wkey < 0 && (nc[h].wkey = key_of(x, MT_RC_COMM_WAIT, n->name, n->name_len)) < 0)
                return -1;
            x->wkey[k] = nc[h].wkey;
        }
    }
    for (size_t i = 0; i < g->n_imem; i++)
        x->mr[i] = g->nodes[g->imem[i]].rank_i;
    member_ranks_sort(x->mr, g->inst, g->n_inst);
    x->hmr = malloc((g->n_hmem ? g->n_hmem : 1) * sizeof *x->hmr);
    if (!x->hmr)
        return -1;
    for (size_t i = 0; i < g->n_hmem; i++)
        x->hmr[i] = g->syncs[g->hmem[i]].rank_i;
    member_ranks_sort(x->hmr, g->hin, g->n_hin);
    /* per rank: its annotations and "none" */
    x->aoff = malloc((g->n_ranks + 1) * sizeof *x->aoff);
    if (!x->aoff)
        return -1;
    x->aoff[0] = 0;
    for (size_t r = 0; r < g->n_ranks; r++)
        x->aoff[r + 1] = x->aoff[r] + g->ranks[r].an->n_annots + 1;
    x->ann = calloc(x->aoff[g->n_ranks] ? x->aoff[g->n_ranks] : 1, sizeof *x->ann);
    x->accq = calloc(x->n_keys, sizeof *x->accq);
    x->accp = calloc(x->n_keys, sizeof *x->accp);
    x->touched = malloc(2 * x->n_keys * sizeof *x->touched);
    x->mark = calloc(x->n_keys, 1);
    size_t nr = g->n_ranks ? g->n_ranks : 1;
    x->in_at = calloc(nr, sizeof *x->in_at);
    x->fc_at = calloc(nr, sizeof *x->fc_at);
    x->fc = malloc(nr * sizeof *x->fc);
    return x->ann && x->accq && x->accp && x->touched && x->mark && x->in_at && x->fc_at && x->fc ? 0 : -1;
}

/* Charge the wait of one participant (critpath.h "root causes"): the late
 * rank's segments segs[0 .. npos) against the waiting rank's walk, whose
 * sums are in accp. */
static int rc_charge(rc_t *x, mt_critpath_t *c, int32_t q_rank_i, size_t npos, int64_t wait)
{
    /* The late rank's sums depend only on its walk and npos: kept from the
     * previous waiter when they are the same (an instance's waiters
     * usually share their first crossing) */
    if (x->q_stamp != x->stamp || x->q_npos != npos) {
        for (size_t i = 0; i < x->n_tq; i++) {
            x->accq[x->touched[i]] = 0;
            x->mark[x->touched[i]] &= (uint8_t)~1u;
        }
        x->n_tq = 0;
        for (size_t i = 0; i < npos; i++) {
            touch(x, x->segs[i].key, 1);
            x->accq[x->segs[i].key] += x->segs[i].d;
        }
        for (size_t i = 0; i < npos; i++)
            x->segs[i].fq = (double)x->segs[i].d / (double)x->accq[x->segs[i].key];
        x->q_stamp = x->stamp;
        x->q_npos = npos;
    }
    /* a key of the waiting rank alone has accq 0: it adds nothing */
    int64_t pos = 0;
    for (size_t i = 0; i < x->n_tq; i++) {
        int32_t k = x->touched[i];
        if (x->accq[k] > x->accp[k])
            pos += x->accq[k] - x->accp[k];
    }
    int64_t att = pos < wait ? pos : wait;
    double cum = 0.0; /* rounded as a running sum: the charges add up to att */
    int64_t given = 0;
    for (size_t i = 0; i < npos && att > 0; i++) {
        rc_seg_t *sg = &x->segs[i];
        int64_t ex = x->accq[sg->key] - x->accp[sg->key];
        if (ex <= 0)
            continue;
        cum += (double)att * ((double)ex / (double)pos) * sg->fq;
        int64_t to = (int64_t)(cum + 0.5);
        if (to > att)
            to = att;
        int64_t v = to - given;
        if (v <= 0)
            continue;
        given = to;
        if (sg->cause < 0 && (sg->cause = cause_of(x, sg->key, sg->rank_i)) < 0)
            return -1;
        x->cs[sg->cause].ns += v;
        c->rc_kind_ns[sg->kind] += v;
        rc_ann_t *an = &x->ann[sg->ann];
        an->ns += v;
        an->kind_ns[sg->kind] += v;
        c->attributed_ns += v;
        if (sg->rank_i == q_rank_i)
            c->short_ns += v;
        else
            c->long_ns += v;
        c->ranks[sg->rank_i].caused_ns += v;
    }
    for (size_t i = 0; i < x->n_tp; i++) {
        int32_t k = x->touched[x->n_keys + i];
        x->accp[k] = 0;
        x->mark[k] &= (uint8_t)~2u;
    }
    x->n_tp = 0;
    return 0;
}

/* The top (rank, annotation) causes into c->by_annot: kind is the kind
 * with the most of its time (the lowest on ties). */
static int annot_causes(const cp_graph_t *g, const rc_t *x, mt_critpath_t *c)
{
    size_t n = 0;
    for (size_t i = 0; i < x->aoff[g->n_ranks]; i++)
        n += x->ann[i].ns > 0;
    mt_cp_name_t *v = calloc(n ? n : 1, sizeof *v);
    if (!v)
        return -1;
    size_t nv = 0;
    for (size_t r = 0; r < g->n_ranks; r++) {
        const mt_rank_analysis_t *a = g->ranks[r].an;
        for (size_t k = 0; k <= a->n_annots; k++) {
            const rc_ann_t *e = &x->ann[x->aoff[r] + k];
            if (e->ns <= 0)
                continue;
            uint32_t best = 0;
            for (uint32_t q = 1; q < MT_RC_KIND_COUNT_; q++)
                if (e->kind_ns[q] > e->kind_ns[best])
                    best = q;
            mt_an_str_t nm = k ? a->annots[k - 1] : (mt_an_str_t){0, 0};
            v[nv] = (mt_cp_name_t){.rank = g->ranks[r].rank, .kind = best, .ns = e->ns};
            if (!(v[nv].name = strndup(nm.len ? a->strings + nm.off : "", nm.len))) {
                names_free(v, nv);
                return -1;
            }
            nv++;
        }
    }
    c->by_annot = v;
    c->n_by_annot = names_keep_top(v, nv);
    return 0;
}

/* Charge the waits of the members of instance I (host: a host
 * collective, its members syncs; else a GPU one, its members nodes) to
 * their causes. 0, or -1 out of memory. Not forced inline: one copy keeps
 * walk_p and rc_charge inlined into it (two forced copies called them:
 * mt_critpath_run 1.2 % more instructions on the 256-rank job of
 * scripts/bench, against 0.17 % so). */
static int rc_inst(const cp_graph_t *g, mt_critpath_t *c, rc_t *x, const cp_inst_t *I, bool host)
{
    const int32_t *mem = host ? g->hmem : g->imem;
    /* a member's arrival, rank and rank step */
#define RC_S(id) (host ? g->syncs[id].s : g->nodes[id].s)
#define RC_RANK(id) (host ? g->syncs[id].rank_i : g->nodes[id].rank_i)
#define RC_RSTEP(id) (host ? g->syncs[id].rstep : g->nodes[id].rstep)
    if (I->last < 0)
        return 0;
    const int32_t q = I->last, q_rank = RC_RANK(q), q_rstep = RC_RSTEP(q);
    if (q_rstep < 0 || g->rs[q_rstep].job < 0 || !c->steps[g->rs[q_rstep].job].used)
        return 0;
    int64_t t0 = c->steps[g->rs[q_rstep].job].start_ns;
    bool walked = false;
    int64_t qend = t0;
    for (uint32_t k = 0; k < I->n; k++) {
        int32_t pid = mem[I->m0 + k];
        const int64_t ps = RC_S(pid);
        const int32_t p_rank = RC_RANK(pid);
        int64_t wait = I->maxstart - ps;
        if (pid == q || wait <= 0 || p_rank == q_rank)
            continue;
        c->wait_ns += wait;
        if (!walked) {
            /* the late rank's walk, once per instance */
            x->n_segs = x->n_cross = x->n_walk = x->fc_next = x->n_irank = 0;
            x->inst = I;
            x->stamp++;
            const int32_t *mr = (host ? x->hmr : x->mr) + I->m0;
            for (uint32_t m = 0; m < I->n; m++) {
                x->n_irank += x->in_at[mr[m]] != x->stamp;
                x->in_at[mr[m]] = x->stamp;
            }
            walk_t wq = {.g = g, .c = c, .t0 = t0, .cur = RC_S(q), .ctx = x};
            /* a host arrival is walked back on its host (node -1) */
            walk_q(&wq, q_rank, host ? -1 : q);
            if (x->err)
                return -1;
            qend = wq.cur;
            walked = true;
        }
        /* the previous synchronisation point: the first instance on
         * the late rank's walk that p took part in */
        size_t npos = x->n_segs;
        int64_t w0 = qend;
        int32_t y = first_cross(x, p_rank);
        if (y >= 0) {
            npos = x->cross[y].pos;
            w0 = x->cross[y].t;
        }
        x->n_walk = 0;
        walk_t wp = {.g = g, .c = c, .t0 = w0, .cur = ps, .ctx = x};
        walk_p(&wp, p_rank, host ? -1 : pid);
        if (rc_charge(x, c, q_rank, npos, wait))
            return -1;
    }
#undef RC_S
#undef RC_RANK
#undef RC_RSTEP
    return 0;
}

mt_status_t cp_root_causes(const cp_graph_t *g, mt_critpath_t *c)
{
    rc_t x = {0};
    mt_status_t st = MT_ERR_NOMEM;
    if (rc_init(g, &x))
        goto out;
    for (size_t ii = 0; ii < g->n_inst; ii++) {
        const cp_inst_t *I = &g->inst[ii];
        if (ii + 1 < g->n_inst) {
            /* the next instance's members (each in another rank's part of
             * the nodes) and the 8 nodes before each, where their waiting
             * ranks' walks go back first, and those nodes' keys, fetched
             * while this one's walks
             * run: each first read of a member, and of most nodes its walk
             * reached, was a cache miss on a big job */
            const cp_inst_t *J = &g->inst[ii + 1];
            for (uint32_t k = 0; k < J->n; k++) {
                int32_t m = g->imem[J->m0 + k];
                const char *a = (const char *)&g->nodes[m > 8 ? m - 8 : 0], *b = (const char *)&g->nodes[m + 1];
                for (; a < b; a += 64)
                    __builtin_prefetch(a);
                __builtin_prefetch(&x.nkey[m > 8 ? m - 8 : 0]); /* their keys (seg_key) */
            }
        }
        if (rc_inst(g, c, &x, I, false))
            goto out;
    }
    /* host collectives (gloo): a member blocked in its range until the
     * last arrival waited as a GPU instance's member does; the walks start
     * on the hosts, at the arrivals */
    for (size_t ii = 0; ii < g->n_hin; ii++) {
        if (rc_inst(g, c, &x, &g->hin[ii], true))
            goto out;
    }
    /* the top causes */
    mt_cp_name_t *top = calloc(x.n_cs ? x.n_cs : 1, sizeof *top);
    if (!top)
        goto out;
    size_t nt = 0;
    for (size_t i = 0; i < x.n_cs; i++) {
        const rc_key_t *k = &x.keys[x.cs[i].key];
        top[nt] = (mt_cp_name_t){.rank = g->ranks[x.cs[i].rank_i].rank, .kind = k->kind, .ns = x.cs[i].ns};
        if (!(top[nt].name = strndup(k->name, k->len))) {
            names_free(top, nt);
            goto out;
        }
        nt++;
    }
    c->causes = top;
    c->n_causes = names_keep_top(top, nt);
    if (annot_causes(g, &x, c))
        goto out;
    st = MT_OK;
out:
    rc_free(&x);
    return st;
}
