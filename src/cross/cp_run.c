/* mt_critpath_run: job steps from the rank steps, the replay of the graph
 * (critpath.c builds it; its replay order here, cp_replay.c replays it)
 * under each scenario, the critical path of each step (cp_walk.c walks
 * it), the statistics, what-if projections and root causes of waiting
 * (include/mergetrace/critpath.h). */
#define _POSIX_C_SOURCE 200809L /* strndup */
#include "base/bigmem.h"
#include "base/hash.h"
#include "base/sort.h"
#include "base/stats.h"
#include "cross/cp_dist.h"
#include "cross/cp_run_int.h"

#include <assert.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the replay order (once per graph, before the replays) ---- */

/* Node i into g->hot[at] (job fields set), and its measured end into
 * g->e0. */
CP_INLINE void hot_fill(cp_graph_t *g, size_t i, size_t at)
{
    const cp_node_t *n = &g->nodes[i];
    cp_hot_t *h = &g->hot[at];
    *h = (cp_hot_t){.s = n->s, .dt = n->inst >= 0 ? cp_node_T(g, n) : n->e - n->s, .pred = {n->pstream, n->px, n->px2},
                    .job = n->job, .lsync = n->lsync, .inst = n->inst, .id = (int32_t)i, .rstep = n->rstep,
                    .rank_i = n->rank_i};
    /* a predecessor of the step before on the rank moves with the edge
     * when the rank step's start follows that step's last sync (the host
     * waited for its GPU: cp_sync_t.jnext): else the first kernel of the
     * step stays at its predecessor's measured end while its launch moves
     * with the sync (CP_H_PREV) */
    int32_t sj = -1, sb = n->rstep >= 0 ? g->rs[n->rstep].sb_start : -1;
    if (sb >= 0) {
        /* and shift_of's tests of it for the replays (cp_event_int.h
         * shift_at), done once here */
        const cp_sync_t *y = &g->syncs[sb];
        if (y->jnext == n->job) {
            sj = y->job;
            if (n->job >= 0)
                h->sflags |= CP_S_NEXT << 2;
        }
        if (y->job == n->job)
            h->sflags |= CP_S_SAME << 2;
    }
    for (int q = 0; q < 3; q++) {
        const cp_node_t *p = h->pred[q] >= 0 ? &g->nodes[h->pred[q]] : NULL;
        if (p && p->job == n->job)
            h->flags |= (uint8_t)(1u << q);
        else if (p && sj >= 0 && p->job == sj && p->rank_i == n->rank_i)
            h->flags |= (uint8_t)(CP_H_PREV << q);
    }
    /* a communication kernel's wait for another stream that no event
     * names (NCCL's stream told to wait for the gradient's kernel): the
     * edge whose other binding the ranges try */
    if (n->px >= 0 && n->bind == CP_B_X && n->cls == MT_AN_COMM && !n->xnamed)
        h->flags |= CP_H_PXINF;
    if (n->L != INT64_MIN) {
        h->flags |= CP_H_LAUNCH;
        h->llat = n->L + g->ranks[n->rank_i].lat;
        /* the same of its launch sync (read only with a launch) */
        if (n->lsync >= 0) {
            const cp_sync_t *y = &g->syncs[n->lsync];
            h->sflags |= (uint8_t)((y->job == n->job ? CP_S_SAME : 0) |
                                   (n->job >= 0 && y->jnext == n->job ? CP_S_NEXT : 0));
        }
    }
    g->e0[i] = n->e;
}

static int hot_alloc(cp_graph_t *g)
{
    size_t N = g->n_nodes ? g->n_nodes : 1;
    g->hot = mt_big_malloc(N * sizeof *g->hot);
    g->pos = mt_big_malloc(N * sizeof *g->pos);
    g->e0 = mt_big_malloc(N * sizeof *g->e0);
    return g->hot && g->pos && g->e0 ? 0 : -1;
}

/* g->hot, g->pos and g->e0 from g->nodes (job fields set) and g->ev in
 * topological order (topo_order), whose node events then hold indices
 * into hot; 0, or -1 out of memory. (In time order cp_order_build fills them
 * as it merges.) */
static int cp_hot_build(cp_graph_t *g)
{
    if (hot_alloc(g))
        return -1;
    size_t k = 0;
    for (size_t j = 0; j < g->n_ev; j++)
        if ((int)(g->ev[j] >> 32) == 2)
            g->pos[g->ev[j] & 0xffffffff] = (int32_t)k++;
    assert(k == g->n_nodes);
    for (size_t i = 0; i < g->n_nodes; i++)
        hot_fill(g, i, (size_t)g->pos[i]);
    for (size_t j = 0; j < g->n_ev; j++) {
        int type = (int)(g->ev[j] >> 32);
        if (type != 1)
            g->ev[j] = ((int64_t)type << 32) | (int64_t)g->pos[g->ev[j] & 0xffffffff];
    }
    return 0;
}

/* The replay order of a graph with explicit dependencies (and no host
 * syncs): Kahn's topological order over the events start(n) (after the
 * ends of its predecessors), end(n) (after start(n) and, for an instance
 * member, the starts of every member: through one event per instance).
 * Explicit dependencies need not agree with the measured order (a receive
 * posted before the compute it follows has ended), so time order would
 * not do. Returns 1 when the dependencies hold a cycle (the caller falls
 * back to time order), -1 out of memory. */
static int topo_order(cp_graph_t *g)
{
    size_t N = g->n_nodes, NI = g->n_inst, NE = 2 * N + NI;
    uint32_t *indeg = calloc(NE ? NE : 1, sizeof *indeg);
    size_t *off = calloc(NE + 1, sizeof *off);
    uint32_t *adj = NULL, *q = NULL;
    int ret = -1;
    if (!indeg || !off)
        goto out;
    /* edges: end(p) -> start(n); start(n) -> end(n); start(m) -> inst(I) -> end(x) */
#define EDGES(ADD)                                                                  \
    for (size_t i = 0; i < N; i++) {                                                \
        const cp_node_t *x = &g->nodes[i];                                          \
        if (x->pstream >= 0)                                                        \
            ADD(N + (size_t)x->pstream, i);                                         \
        if (x->px >= 0)                                                             \
            ADD(N + (size_t)x->px, i);                                              \
        if (x->px2 >= 0)                                                            \
            ADD(N + (size_t)x->px2, i);                                             \
        ADD(i, N + i);                                                              \
        if (x->inst >= 0) {                                                         \
            ADD(i, 2 * N + (size_t)x->inst);                                        \
            ADD(2 * N + (size_t)x->inst, N + i);                                    \
        }                                                                           \
    }
#define COUNT(a, b) (off[(a) + 1]++, indeg[(b)]++)
    EDGES(COUNT)
    for (size_t i = 0; i < NE; i++)
        off[i + 1] += off[i];
    adj = mt_big_malloc((off[NE] ? off[NE] : 1) * sizeof *adj);
    q = mt_big_malloc((NE ? NE : 1) * sizeof *q);
    size_t *fill = malloc((NE ? NE : 1) * sizeof *fill);
    if (!adj || !q || !fill) {
        free(fill);
        goto out;
    }
    memcpy(fill, off, NE * sizeof *fill);
#define PUT(a, b) (adj[fill[(a)]++] = (uint32_t)(b))
    EDGES(PUT)
#undef PUT
#undef COUNT
#undef EDGES
    free(fill);
    size_t head = 0, tail = 0, k = 0;
    for (size_t i = 0; i < NE; i++)
        if (!indeg[i])
            q[tail++] = (uint32_t)i;
    while (head < tail) {
        size_t v = q[head++];
        if (v < N)
            g->ev[k++] = ((int64_t)2 << 32) | (int64_t)v;
        else if (v < 2 * N)
            g->ev[k++] = (int64_t)(v - N);
        for (size_t e = off[v]; e < off[v + 1]; e++)
            if (!--indeg[adj[e]])
                q[tail++] = adj[e];
    }
    g->n_ev = k;
    ret = k == 2 * N ? 0 : 1;
out:
    free(indeg);
    free(off);
    free(adj);
    free(q);
    return ret;
}


/* ---- the replay order kept to the graph's edges ----
 *
 * The time order of cp_order_build reads a predecessor's replayed end when
 * its measured end is no later than the successor's measured start. Real
 * traces break that by a few ns to a microsecond (timestamps rounded to
 * 1 us, a kernel that begins as the one before it on its stream is still
 * ending): the successor's start was then replayed before its
 * predecessor's end, from the predecessor's *measured* end, so a what-if
 * that moved the predecessor did not move the successor, nor anything
 * after it (issue 38: "rank 5 at the median rank's speed" gained 1.5 us
 * of 1.66 ms, rank 3's step end pinned by its last copy's start). Here
 * the order is made a topological one, as close to the time order as the
 * edges allow: an event whose dependency has not come yet waits for it
 * and follows it at once. Dependencies: a start after its predecessors'
 * ends (every step's: a run that carries shifts reads them all) and after
 * the sync its launch follows; an end after its start and, for an
 * instance member, after every member's start; a sync after the end of
 * what it waited for and after the sync before it. */

/* Event indices: start of hot[k] k, end of hot[k] N + k, sync j 2N + j,
 * instance i (all its members started) 2N + S + i. */
typedef struct ord_fix {
    const cp_graph_t *g;
    size_t N, S;
    uint8_t *done;
    int32_t *head, *next; /* per event: the first event waiting for it; the next waiter */
    uint32_t *started;    /* per instance: members started */
    int64_t *ev;          /* the order, rewritten (o->w never passes the read: a copy is read) */
    size_t w;
    int32_t *stack;
    size_t top;
} ord_fix_t;

/* The first dependency of event e not yet emitted, or -1. */
CP_INLINE int32_t ord_blocker(const ord_fix_t *o, int32_t e)
{
    const cp_graph_t *g = o->g;
    size_t N = o->N;
    if ((size_t)e < N) {
        const cp_hot_t *h = &g->hot[e];
        for (int q = 0; q < 3; q++) {
            int32_t p = h->pred[q];
            if (p >= 0 && !o->done[N + (size_t)g->pos[p]])
                return (int32_t)(N + (size_t)g->pos[p]);
        }
        if ((h->flags & CP_H_LAUNCH) && h->lsync >= 0 && !o->done[2 * N + (size_t)h->lsync])
            return (int32_t)(2 * N + (size_t)h->lsync);
        return -1;
    }
    if ((size_t)e < 2 * N) {
        size_t k = (size_t)e - N;
        if (!o->done[k])
            return (int32_t)k;
        int32_t i = g->hot[k].inst;
        if (i >= 0 && !o->done[2 * N + o->S + (size_t)i])
            return (int32_t)(2 * N + o->S + (size_t)i);
        return -1;
    }
    if ((size_t)e >= 2 * N + o->S) /* an instance: emitted when its last member starts */
        return -1;
    const cp_sync_t *y = &g->syncs[(size_t)e - 2 * N];
    if (y->sb >= 0 && (size_t)y->sb != (size_t)e - 2 * N && !o->done[2 * N + (size_t)y->sb])
        return (int32_t)(2 * N + (size_t)y->sb);
    if (y->w >= 0 && !o->done[N + (size_t)g->pos[y->w]])
        return (int32_t)(N + (size_t)g->pos[y->w]);
    if (y->hi >= 0) { /* a host collective: after every member's sync before it */
        const cp_inst_t *I = &g->hin[y->hi];
        for (uint32_t q = 0; q < I->n; q++) {
            int32_t b = g->syncs[g->hmem[I->m0 + q]].sb;
            if (b >= 0 && b != g->hmem[I->m0 + q] && !o->done[2 * N + (size_t)b])
                return (int32_t)(2 * N + (size_t)b);
        }
    }
    return -1;
}

/* Emit e if nothing holds it (else it waits for its blocker), then every
 * waiter this frees, depth first through o->stack. */
static void ord_try(ord_fix_t *o, int32_t e0)
{
    size_t N = o->N, S = o->S;
    o->stack[o->top++] = e0;
    while (o->top) {
        int32_t e = o->stack[--o->top];
        if (o->done[e])
            continue;
        int32_t b = ord_blocker(o, e);
        if (b >= 0) {
            o->next[e] = o->head[b];
            o->head[b] = e;
            continue;
        }
        o->done[e] = 1;
        if ((size_t)e < 2 * N + S) { /* a real event (not an instance's) */
            int type = (size_t)e < N ? 2 : (size_t)e < 2 * N ? 0 : 1;
            int64_t id = type == 2 ? e : type == 0 ? e - (int64_t)N : e - (int64_t)(2 * N);
            o->ev[o->w++] = ((int64_t)type << 32) | id;
        }
        if ((size_t)e < N && o->g->hot[e].inst >= 0) {
            int32_t i = o->g->hot[e].inst;
            if (++o->started[i] == o->g->inst[i].n)
                o->stack[o->top++] = (int32_t)(2 * N + S + (size_t)i);
        }
        for (int32_t x = o->head[e]; x >= 0; x = o->next[x])
            o->stack[o->top++] = x;
        o->head[e] = -1;
    }
}

/* g->ev (time order, node events by hot index) made topological as above.
 * 0; 1 when the edges hold a cycle (a collective matched across ranks in
 * an order that contradicts a stream's: g->ev is left in time order, the
 * replay reads a measured end there as before); -1 out of memory. Fast
 * path: nothing is allocated but the done flags when the time order
 * already respects every edge. */
static int order_fix(cp_graph_t *g)
{
    size_t N = g->n_nodes, S = g->n_syncs, NI = g->n_inst, E = 2 * N + S + NI;
    ord_fix_t o = {.g = g, .N = N, .S = S};
    if (E > INT32_MAX)
        return 0;
    o.done = calloc(E ? E : 1, 1);
    if (!o.done)
        return -1;
    /* a first pass: does the time order already hold? */
    uint32_t *cnt = calloc(NI ? NI : 1, sizeof *cnt);
    if (!cnt) {
        free(o.done);
        return -1;
    }
    o.started = cnt;
    bool ok = true;
    for (size_t j = 0; j < g->n_ev && ok; j++) {
        int64_t v = g->ev[j];
        int type = (int)(v >> 32);
        size_t id = (size_t)(v & 0xffffffff);
        int32_t e = (int32_t)(type == 2 ? id : type == 0 ? N + id : 2 * N + id);
        if (ord_blocker(&o, e) >= 0) {
            ok = false;
            break;
        }
        o.done[e] = 1;
        if (type == 2 && g->hot[id].inst >= 0 && ++cnt[g->hot[id].inst] == g->inst[g->hot[id].inst].n)
            o.done[2 * N + S + (size_t)g->hot[id].inst] = 1;
    }
    if (ok) {
        free(o.done);
        free(cnt);
        return 0;
    }
    memset(o.done, 0, E);
    memset(cnt, 0, (NI ? NI : 1) * sizeof *cnt);
    o.head = malloc(E * sizeof *o.head);
    o.next = malloc(E * sizeof *o.next);
    o.stack = malloc(E * sizeof *o.stack);
    int64_t *copy = malloc((g->n_ev ? g->n_ev : 1) * sizeof *copy);
    int ret = -1;
    if (!o.head || !o.next || !o.stack || !copy)
        goto out;
    memset(o.head, 0xff, E * sizeof *o.head);
    memcpy(copy, g->ev, g->n_ev * sizeof *copy);
    o.ev = g->ev;
    for (size_t j = 0; j < g->n_ev; j++) {
        int64_t v = copy[j];
        int type = (int)(v >> 32);
        size_t id = (size_t)(v & 0xffffffff);
        ord_try(&o, (int32_t)(type == 2 ? id : type == 0 ? N + id : 2 * N + id));
    }
    if (o.w != g->n_ev) { /* a cycle: events never freed */
        memcpy(g->ev, copy, g->n_ev * sizeof *copy);
        ret = 1;
    } else {
        ret = 0;
    }
out:
    free(o.done);
    free(cnt);
    free(o.head);
    free(o.next);
    free(o.stack);
    free(copy);
    return ret;
}

/* One sorted source of cp_order_build's merge: a rank's node ends, syncs or
 * node starts, items at..end of ord (NULL: the ids themselves). */
typedef struct bo_src {
    const int32_t *ord;
    size_t at, end;
    int type;
} bo_src_t;

/* The head (key, tie) of x; tie = type << 32 | id orders equal times as
 * the replay needs them: ends, syncs, starts, each by id. */
CP_INLINE void bo_head(const cp_graph_t *g, const bo_src_t *x, uint64_t *key, uint64_t *tie)
{
    size_t id = x->ord ? (size_t)x->ord[x->at] : x->at;
    int64_t t = x->type == 0 ? cp_end_key(g, &g->nodes[id]) : x->type == 1 ? g->syncs[id].e : g->nodes[id].s;
    *key = mt_sort_key_i64(t);
    *tie = (uint64_t)x->type << 32 | id;
}

/* The replay order: node ends (key cp_end_key), sync ends, node starts; by
 * key, in that type order at equal keys, each type by id; and, with it,
 * g->hot, g->pos and g->e0 (cp_hot_build), the node events holding
 * indices into hot. Job fields must be set. topo (the job's ranks name
 * their dependencies and no rank has a sync): topo_order and
 * cp_hot_build. 0, or -1 out of memory.
 *
 * Fast path: each rank's ends, syncs and starts are each already sorted
 * (syncs by end, nodes by end in by_end; a rank's nodes nearly always
 * come by start), so the order is a merge of 3 sources per rank (a loser
 * tree: about log2(3 x ranks) comparisons an event), not a radix sort of
 * 2 x nodes + syncs 64-bit keys; the same order, since (key, type, id) is
 * a total order. Besides the order itself (8 bytes an event) it touches no
 * new memory but a start order for ranks whose nodes do not come by start
 * (4 bytes a node), where the sort took 24 bytes an event of keys, a
 * permutation and the sort's scratch, each fresh pages (clear_page was a
 * third of the section's time on 8 x 157 MB). The hot records are written
 * as the start events come, in order: no second pass over the events. */
int cp_order_build(cp_graph_t *g, bool topo)
{
    size_t N = g->n_nodes, S = g->n_syncs, n = 2 * N + S;
    g->ev = mt_big_malloc((n ? n : 1) * sizeof *g->ev);
    if (!g->ev)
        return -1;
    if (topo) {
        int t = topo_order(g);
        if (t < 0)
            return -1;
        if (t == 0)
            return cp_hot_build(g);
        g->topo_cycle = true; /* time order below */
    }
    if (hot_alloc(g))
        return -1;
    int ret = -1;
    size_t nmax = 0;
    for (size_t i = 0; i < g->n_ranks; i++)
        if (g->ranks[i].n_nodes > nmax)
            nmax = g->ranks[i].n_nodes;
    int32_t *so = NULL; /* start orders of the ranks whose nodes do not come by start */
    uint64_t *key = NULL;
    uint32_t *val = NULL;
    bo_src_t *src = malloc((3 * g->n_ranks + 1) * sizeof *src);
    mt_kmerge_t m = {0};
    if (!src)
        goto out;
    size_t k = 0;
    for (size_t i = 0; i < g->n_ranks; i++) {
        const cp_rank_t *R = &g->ranks[i];
        if (!R->n_nodes && !R->n_syncs)
            continue;
        bool by_start = R->by_start;
        if ((R->end_late || !by_start) &&
            ((!key && !(key = mt_big_malloc((nmax ? nmax : 1) * sizeof *key))) ||
             (!val && !(val = mt_big_malloc((nmax ? nmax : 1) * sizeof *val)))))
            goto out;
        /* by_end (by end, then id: cp_graph_build) is the
         * end events' order unless an instance's last arrival comes after
         * a member's end (clock error: rare) */
        if (R->end_late && cp_rank_order(g, R, CP_BY_END_KEY, g->by_end, key, val))
            goto out;
        if (!by_start) {
            if (!so && !(so = mt_big_malloc((N ? N : 1) * sizeof *so)))
                goto out;
            if (cp_rank_order(g, R, CP_BY_START, so, key, val))
                goto out;
        }
        /* only sources with items: each leaf is a level of the tree in
         * the end (256 ranks without syncs: 512 leaves, not 768) */
        if (R->n_nodes)
            src[k++] = (bo_src_t){.ord = g->by_end, .at = R->node0, .end = R->node0 + R->n_nodes, .type = 0};
        if (R->n_syncs)
            src[k++] = (bo_src_t){.at = R->sync0, .end = R->sync0 + R->n_syncs, .type = 1};
        if (R->n_nodes)
            src[k++] = (bo_src_t){.ord = by_start ? NULL : so, .at = R->node0, .end = R->node0 + R->n_nodes, .type = 2};
    }
    free(key);
    free(val);
    key = NULL;
    val = NULL;
    if (!k) { /* no rank has a node or a sync: nothing to order */
        g->n_ev = 0;
        ret = 0;
        goto out;
    }
    if (mt_kmerge_init(&m, k) != MT_OK)
        goto out;
    for (size_t q = 0; q < k; q++)
        bo_head(g, &src[q], &m.key[q], &m.tie[q]);
    mt_kmerge_start(&m);
    size_t nh = 0; /* start events so far: the next hot index */
#ifndef NDEBUG
    uint64_t pk = 0, pt = 0; /* the last event's (key, tie): every source must be sorted */
#endif
    for (size_t j = 0; j < n; j++) {
        uint32_t q = mt_kmerge_top(&m);
        bo_src_t *x = &src[q];
        uint64_t tie = m.tie[q];
        int type = (int)(tie >> 32);
        size_t id = (size_t)(tie & 0xffffffff);
        assert(m.key[q] != MT_KMERGE_END || tie != MT_KMERGE_END);
#ifndef NDEBUG
        /* a source out of order would pop an end before its start and
         * index pos[] before it is written */
        assert(j == 0 || m.key[q] > pk || (m.key[q] == pk && tie > pt));
        pk = m.key[q];
        pt = tie;
#endif
        if (type == 1) {
            g->ev[j] = ((int64_t)1 << 32) | (int64_t)id;
        } else {
            /* a node's end comes after its start unless both are at one
             * time (s == end_key: the end first); such an end's event
             * waits in pos for the start to give it its hot index */
            const cp_node_t *nd = &g->nodes[id];
            bool end_first = type == 0 ? m.key[q] == mt_sort_key_i64(nd->s) : cp_end_key(g, nd) == nd->s;
            if (type == 0) {
                if (end_first)
                    g->pos[id] = (int32_t)j;
                else
                    g->ev[j] = g->pos[id];
            } else {
                if (end_first)
                    g->ev[g->pos[id]] = (int64_t)nh;
                g->pos[id] = (int32_t)nh;
                hot_fill(g, id, nh);
                g->ev[j] = ((int64_t)2 << 32) | (int64_t)nh++;
            }
        }
        uint64_t nk = MT_KMERGE_END, nt = MT_KMERGE_END;
        if (++x->at < x->end)
            bo_head(g, x, &nk, &nt);
        mt_kmerge_next(&m, nk, nt);
    }
    assert(nh == N);
    g->n_ev = n;
    ret = order_fix(g);
    if (ret > 0) {
        g->order_cycle = true;
        ret = 0;
    }
out:
    free(so);
    free(key);
    free(val);
    free(src);
    mt_kmerge_free(&m);
    return ret;
}

void (*cp_built_probe)(const cp_graph_t *g);

/* ---- the job fields (once per graph, the job steps numbered) ---- */

void cp_job_fields(cp_graph_t *g)
{
    /* the rank steps' latest syncs before their starts and host ends (the
     * nodes' and syncs' below, with their job steps): each replay reads a
     * shift by index, with no search */
    for (size_t i = 0; i < g->n_rs; i++) {
        cp_rs_t *x = &g->rs[i];
        x->sb_start = (int32_t)sync_before(g, &g->ranks[x->rank_i], x->start);
        x->sb_end = (int32_t)sync_before(g, &g->ranks[x->rank_i], x->cpu_end);
    }
    /* each node's job step and the latest sync before its launch end, in
     * one pass over the nodes (72 bytes each, the graph's largest array);
     * likewise the syncs (a sync's start is usually after the sync
     * before it) */
    long guess = -1;
    for (size_t i = 0; i < g->n_nodes; i++) {
        cp_node_t *n = &g->nodes[i];
        n->job = n->rstep >= 0 ? g->rs[n->rstep].job : -1;
        n->lsync = -1;
        if (n->L != INT64_MIN) {
            n->lsync = (int32_t)(guess = sync_near(g, &g->ranks[n->rank_i], n->L, guess));
            if (g->n_hin)
                n->lsync = (int32_t)host_cover(g, &g->ranks[n->rank_i], n->L, n->lsync, -1);
        }
    }
    for (size_t i = 0; i < g->n_syncs; i++) {
        cp_sync_t *y = &g->syncs[i];
        y->job = y->rstep >= 0 ? g->rs[y->rstep].job : -1;
        /* a rank's syncs are in end order (critpath.c place_pauses) */
        y->bar = y->hi >= 0 ? (int32_t)i
                 : i > 0 && g->syncs[i - 1].rank_i == y->rank_i ? g->syncs[i - 1].bar
                                                                 : -1;
        y->sb = (int32_t)sync_near(g, &g->ranks[y->rank_i], y->s, (long)i - 1);
        if (g->n_hin)
            y->sb = (int32_t)host_cover(g, &g->ranks[y->rank_i], y->s, y->sb, (long)i);
        y->jnext = -1;
    }
    /* the edge from a rank step's last sync to the rank's next step
     * (docs/whatif.md, "host sync -> next step"): where the host waited
     * there for its GPU's queue (the activity it waited for started after
     * the call: its end set by the GPU) and started the next step within
     * CP_NEXT_GAP of it, that start follows the sync: a replay moves it,
     * and what the rank does after it, by how far the sync moved against
     * the other ranks (edge_fill). A slow GPU's host that waits for it at
     * the step's end (the gradients' allreduce, then the optimizer) starts
     * each next step late, and a what-if that speeds it must start it
     * earlier. */
    for (size_t i = 0; i < g->n_rs; i++) {
        const cp_rs_t *x = &g->rs[i];
        if (x->sb_start < 0)
            continue;
        cp_sync_t *y = &g->syncs[x->sb_start];
        if (y->job >= 0 && y->job != x->job && y->hi == -1 && y->w >= 0 && g->nodes[y->w].s > y->s &&
            x->start - y->e <= CP_NEXT_GAP) {
            y->jnext = x->job;
            g->n_jnext++;
        }
    }
}

/* ---- helpers ---- */

/* name aggregation: (hash, node) */
typedef struct nh {
    uint64_t h;
    int32_t node;
    int32_t rank_i;
} nh_t;

/* Sort v[0..k), which holds nodes in increasing order, by (hash, rank,
 * node): a stable radix sort by hash keeps the nodes (and so their ranks,
 * the nodes being rank by rank) in order within a hash (a qsort with a
 * comparator cost more than the hashes). 0, or -1 out of memory. */
static int nh_sort(nh_t *v, size_t k)
{
    uint64_t *key = mt_big_malloc((k ? k : 1) * sizeof *key);
    uint32_t *perm = mt_big_malloc((k ? k : 1) * sizeof *perm);
    int bad = !key || !perm;
    for (size_t i = 0; !bad && i < k; i++) {
        key[i] = v[i].h;
        perm[i] = (uint32_t)i;
    }
    bad = bad || mt_sort_u64(key, perm, k) != MT_OK;
    if (!bad)
        mt_sort_permute(v, sizeof *v, perm, k);
    free(key);
    free(perm);
    return bad ? -1 : 0;
}

#define CP_TOP 10

/* The straggler what-if's factors: see critpath.h "what-if". */
static int straggler_factors(const cp_graph_t *g, const mt_cp_request_t *rq, double *f, nh_t *nh, size_t *n_nh)
{
    if (g->dist) { /* reduced over the processes (cp_dist.c): the same numbers */
        cp_name_memo_t *memo = calloc(CP_NAME_MEMO, sizeof *memo);
        if (!memo)
            return -1;
        for (size_t i = 0; i < g->n_nodes; i++) {
            const cp_node_t *n = &g->nodes[i];
            f[i] = n->cls == MT_AN_COMM ? 1.0 : cp_dist_factor(g->dist, cp_name_hash(memo, n), g->ranks[n->rank_i].rank);
        }
        free(memo);
        *n_nh = 0;
        return 0;
    }
    int32_t *stage_of = NULL; /* per rank_i: its pipeline stage, -1 */
    if (rq->n_stages >= 2 && rq->stage_ranks && rq->stage_first) {
        if (!(stage_of = malloc((g->n_ranks ? g->n_ranks : 1) * sizeof *stage_of)))
            return -1;
        for (size_t i = 0; i < g->n_ranks; i++) {
            stage_of[i] = -1;
            for (size_t q = 0; q < rq->n_stages; q++)
                for (size_t k = rq->stage_first[q]; k < rq->stage_first[q + 1]; k++)
                    if (rq->stage_ranks[k] == g->ranks[i].rank)
                        stage_of[i] = (int32_t)q;
        }
    }
    size_t k = 0;
    cp_name_memo_t *memo = calloc(CP_NAME_MEMO, sizeof *memo);
    if (!memo) {
        free(stage_of);
        return -1;
    }
    for (size_t i = 0; i < g->n_nodes; i++) {
        const cp_node_t *n = &g->nodes[i];
        f[i] = 1.0;
        if (n->cls == MT_AN_COMM)
            continue;
        nh[k++] = (nh_t){cp_name_hash(memo, n), (int32_t)i, n->rank_i};
    }
    free(memo);
    if (nh_sort(nh, k)) {
        free(stage_of);
        return -1;
    }
    *n_nh = k;
    double *means = malloc((g->n_ranks ? g->n_ranks : 1) * sizeof *means);
    int32_t *rk = malloc((g->n_ranks ? g->n_ranks : 1) * sizeof *rk);
    if (!means || !rk) {
        free(means);
        free(rk);
        free(stage_of);
        return -1;
    }
    for (size_t a = 0; a < k;) {
        size_t b = a;
        while (b < k && nh[b].h == nh[a].h)
            b++;
        /* per rank mean over [a, b) */
        size_t nr = 0;
        for (size_t x = a; x < b;) {
            size_t y = x;
            double sum = 0;
            while (y < b && nh[y].rank_i == nh[x].rank_i) {
                const cp_node_t *n = &g->nodes[nh[y].node];
                sum += (double)(n->e - n->s);
                y++;
            }
            means[nr] = sum / (double)(y - x);
            rk[nr++] = nh[x].rank_i;
            x = y;
        }
        double *tmp = malloc(nr * sizeof *tmp);
        if (!tmp) {
            free(means);
            free(rk);
            free(stage_of);
            return -1;
        }
        memcpy(tmp, means, nr * sizeof *tmp);
        double med = mt_stats_median_f64(tmp, nr);
        for (size_t q = 0; q < nr; q++) {
            int strag = 0;
            for (size_t s = 0; s < rq->n_stragglers; s++)
                strag |= g->ranks[rk[q]].rank == rq->stragglers[s];
            if (!strag || nr < 2)
                continue;
            /* in a pipeline, the median rank of its own stage: stages do
             * different work under the same kernel names (a slow rank of a
             * light stage was below the job's median and kept its speed) */
            double mq = med;
            if (stage_of && stage_of[rk[q]] >= 0) {
                /* the stage's ranks that are not named: with two ranks a
                 * stage the median of both is the mean of the straggler
                 * and its peer, and half the slowdown stayed (issue 38,
                 * 1F1B of 4 stages x 2: +6.12 % against the twin) */
                size_t ns = 0, nall = 0;
                for (size_t x = 0; x < nr; x++) {
                    if (stage_of[rk[x]] != stage_of[rk[q]])
                        continue;
                    nall++;
                    int named = 0;
                    for (size_t s = 0; s < rq->n_stragglers; s++)
                        named |= g->ranks[rk[x]].rank == rq->stragglers[s];
                    if (!named)
                        tmp[ns++] = means[x];
                }
                if (ns >= 1) {
                    mq = mt_stats_median_f64(tmp, ns);
                } else if (nall >= 2) { /* every rank of the stage named: all of them */
                    for (size_t x = 0; x < nr; x++)
                        if (stage_of[rk[x]] == stage_of[rk[q]])
                            tmp[ns++] = means[x];
                    mq = mt_stats_median_f64(tmp, ns);
                }
            }
            if (!(means[q] > mq))
                continue;
            double fac = mq / means[q];
            for (size_t x = a; x < b; x++)
                if (nh[x].rank_i == rk[q])
                    f[nh[x].node] = fac;
        }
        free(tmp);
        a = b;
    }
    free(means);
    free(rk);
    free(stage_of);
    return 0;
}

/* ---- the driver ---- */

/* The p50 of the projected periods of a scenario replayed as one run (its
 * job step ends in r->jend): each the measured period + (its change in the
 * scenario's run - its change in the unchanged run, b_end); v is scratch
 * of c->n_steps. */
static int64_t carried_period(const mt_critpath_t *c, const rp_t *r, const int64_t *b_end, int64_t *v)
{
    size_t n = 0;
    for (size_t j = 1; j < c->n_steps; j++)
        if (cp_step_has_period(c, j))
            v[n++] = c->steps[j].end_ns - c->steps[j - 1].end_ns + (r->jend[j] - r->jend[j - 1]) -
                     (b_end[j] - b_end[j - 1]);
    return mt_stats_pct_i64(v, n, 50);
}

/* The ranges (mt_cp_whatif_t.ranged, docs/whatif.md "Ranges"): the
 * what-ifs again with the inferred stream waits of communication kernels
 * pinned (cp_scen_t.pin_inferred), each change projected on the measured
 * steps and periods against the unchanged run pinned the same way. */
typedef struct alt {
    int64_t *base;  /* per job step: the pinned unchanged replay's step times */
    int64_t *bend;  /* pipelines: its job step ends */
    uint64_t waits; /* the pinned waits: communication kernels bound by an inferred one (CP_H_PXINF) */
} alt_t;

/* x's other binding from the pinned replay of its scenario (times; r
 * swept, for a pipeline's periods); per and tmp scratch of c->n_steps. */
static void alt_set(const mt_critpath_t *c, const alt_t *a, const int64_t *times, const rp_t *r, int64_t *per,
                    int64_t *tmp, mt_cp_whatif_t *x)
{
    x->alt_waits = a->waits;
    size_t n = 0;
    for (size_t j = 0; j < c->n_steps && !x->period_only && x->steps; j++) {
        const mt_cp_step_t *s = &c->steps[j];
        if (s->refused || !s->used)
            continue;
        int64_t v = s->time_ns + (times[j] - a->base[j]);
        tmp[n++] = v > 0 ? v : 0;
    }
    if (n) {
        x->alt_p50_ns = mt_stats_pct_i64(tmp, n, 50);
        int64_t d = x->alt_p50_ns - x->p50_ns;
        x->ranged = (double)(d < 0 ? -d : d) >= 0.005 * (double)(x->p50_ns + x->gain_ns);
    }
    if (x->carried) {
        x->alt_period_p50_ns = carried_period(c, r, a->bend, per);
        int64_t d = x->alt_period_p50_ns - x->period_p50_ns;
        x->period_ranged = (double)(d < 0 ? -d : d) >= 0.005 * (double)c->period_p50_ns;
    }
}

/* Pipeline stage q's what-if factors into fac: its ranks' activities
 * other than communication at f. */
static void stage_factors(const cp_graph_t *g, const mt_cp_request_t *rq, size_t q, double f, double *fac)
{
    for (size_t i = 0; i < g->n_nodes; i++) {
        int32_t rk = g->ranks[g->nodes[i].rank_i].rank;
        int in = 0;
        for (size_t k = rq->stage_first[q]; k < rq->stage_first[q + 1] && !in; k++)
            in = rq->stage_ranks[k] == rk;
        fac[i] = in && g->nodes[i].cls != MT_AN_COMM ? f : 1.0;
    }
}

/* What-if "pattern"'s factors into fac (--what-if kernel:GLOB=F); the
 * activities its glob matched. */
static uint64_t pattern_factors(const cp_graph_t *g, const mt_cp_request_t *rq, double *fac)
{
    uint64_t hits = 0;
    for (size_t i = 0; i < g->n_nodes; i++) {
        char buf[MT_AN_NAME_MAX + 1];
        const cp_node_t *n = &g->nodes[i];
        memcpy(buf, n->name, n->name_len);
        buf[n->name_len] = '\0';
        bool hit = fnmatch(rq->pattern, buf, 0) == 0;
        fac[i] = hit ? rq->factor : 1.0;
        hits += hit;
    }
    return hits;
}

/* A lane of cp_replay3: its per-node arrays (starts, ends, 17 bytes a
 * node) only for cp_replay_probe: the sweep keeps its lanes in rows of
 * its own, and the lanes' arrays beside them would add to process 0's
 * peak. 0, or -1 out of memory. */
static int lane_alloc(const cp_graph_t *g, rp_t *r)
{
    return cp_replay_probe ? cp_rp_alloc(g, r) : cp_rp_alloc_lean(g, r);
}

/* The ranges without a pipeline (alt_t), after the what-ifs: the unchanged
 * run, the straggler's what-if and the better of "comm" and "launch"
 * pinned in one sweep of lanes beside each other (cp_replay3), the
 * pattern's in one replay more. "comm" and "launch" only speed things up,
 * and a pinned edge can only hold an activity back, so their pinned gain
 * is at most their own: one that gains under the 0.5 % a range needs is
 * not replayed again (fast path: on a job without a straggler this is one
 * sweep of two lanes, or none). fac, nh, r, rw[0..2] and the at[1..3]
 * arrays are scratch (at[0] = alt->base); per and tmp as for alt_set. */
static mt_status_t alt_lanes(const cp_graph_t *g, const mt_cp_request_t *rq, mt_critpath_t *c, double *fac, nh_t *nh,
                             const uint8_t *late, alt_t *alt, int64_t **at, rp_t *r, rp_t *rw, int64_t *per,
                             int64_t *tmp)
{
    int k = -1; /* the better of "comm" and "launch", when a range may show */
    for (int wi = MT_WI_COMM; wi <= MT_WI_LAUNCH; wi++) {
        const mt_cp_whatif_t *x = &c->whatif[wi];
        if (x->run && x->steps && (double)x->gain_ns >= 0.005 * (double)(x->p50_ns + x->gain_ns) &&
            (k < 0 || x->gain_ns > c->whatif[k].gain_ns))
            k = wi;
    }
    bool strag = c->whatif[MT_WI_STRAGGLER].run && c->whatif[MT_WI_STRAGGLER].steps;
    bool comm = k == MT_WI_COMM, launch = k == MT_WI_LAUNCH;
    size_t nn = 0;
    if (k >= 0 || strag) {
        at[0] = alt->base;
        for (int l = 1; l < 4; l++)
            if (!(at[l] = malloc(c->n_steps * sizeof *at[l])))
                return MT_ERR_NOMEM;
        if ((comm && lane_alloc(g, &rw[0])) || (launch && lane_alloc(g, &rw[1])) || (strag && lane_alloc(g, &rw[2])))
            return MT_ERR_NOMEM;
        /* the straggler's factors again: the pattern's took fac over */
        if (strag && straggler_factors(g, rq, fac, nh, &nn))
            return MT_ERR_NOMEM;
        /* r's per-node arrays given back while the sweep's rows live
         * (cp_replay3 needs them for the probe only), taken again after */
        if (!cp_replay_probe) {
            free(r->s);
            free(r->e);
            free(r->sdone);
            r->s = r->e = NULL;
            r->sdone = NULL;
        }
        rp_t lanes[4] = {*r, rw[0], rw[1], rw[2]};
        int rc = cp_replay3(g, lanes, comm, launch, strag ? fac : NULL, strag ? late : NULL, true, c, at);
        *r = lanes[0];
        rc = rc || cp_rp_alloc_nodes(g, r);
        for (int l = 0; l < 3; l++) {
            cp_rp_free(&rw[l]);
            rw[l] = (rp_t){0};
        }
        if (rc)
            return MT_ERR_NOMEM;
        if (k >= 0)
            alt_set(c, alt, at[comm ? 1 : 2], r, per, tmp, &c->whatif[k]);
        if (strag)
            alt_set(c, alt, at[3], r, per, tmp, &c->whatif[MT_WI_STRAGGLER]);
    }
    if (c->whatif[MT_WI_PATTERN].run && c->whatif[MT_WI_PATTERN].steps) {
        mt_cp_whatif_t *x = &c->whatif[MT_WI_PATTERN];
        scen_t b = {.pin_inferred = 1}, w = {.pin_inferred = 1, .factor = fac};
        if (!at[1] && !(at[1] = malloc(c->n_steps * sizeof *at[1])))
            return MT_ERR_NOMEM;
        if (k < 0 && !strag) /* the unchanged run pinned: not swept above */
            cp_replay(g, &b, r, c, alt->base);
        pattern_factors(g, rq, fac);
        cp_replay(g, &w, r, c, at[1]);
        alt_set(c, alt, at[1], r, per, tmp, x);
    }
    return MT_OK;
}

/* mt_cp_dist_in_t.members_of: the graph's instance members by (rank,
 * index), with their transfers (the nodes are rank by rank). */
static mt_status_t dist_members(const void *ctx, mt_cp_member_t **out, size_t *n_out)
{
    const cp_graph_t *g = ctx;
    size_t nm = 0;
    for (size_t i = 0; i < g->n_nodes; i++)
        nm += g->nodes[i].inst >= 0;
    mt_cp_member_t *m = malloc((nm ? nm : 1) * sizeof *m);
    if (!m)
        return MT_ERR_NOMEM;
    nm = 0;
    for (size_t r = 0; r < g->n_ranks; r++) {
        const cp_rank_t *R = &g->ranks[r];
        for (size_t k = 0; k < R->n_nodes; k++) {
            const cp_node_t *n = &g->nodes[R->node0 + k];
            if (n->inst >= 0)
                m[nm++] = (mt_cp_member_t){R->rank, (uint32_t)k, cp_node_T(g, n)};
        }
    }
    *out = m;
    *n_out = nm;
    return MT_OK;
}

/* The whole-job statistics by reductions (mt_cp_request_t.reduce): what
 * only the graph knows yet handed to the hook, which runs them with the
 * other processes (cp_dist.c); the members only on demand (the instances'
 * owners work them out when the match was sharded). MT_OK or the hook's
 * error. */
static mt_status_t dist_run(const cp_graph_t *g, const mt_cp_request_t *rq, mt_cp_dist_t **out)
{
    /* the job steps: one per step number, in order (as mt_critpath_run
     * lays them out); used as there */
    size_t ns = 0;
    int64_t *steps = malloc((g->n_rs ? g->n_rs : 1) * sizeof *steps);
    uint64_t *key = malloc((g->n_rs ? g->n_rs : 1) * sizeof *key);
    uint32_t *perm = malloc((g->n_rs ? g->n_rs : 1) * sizeof *perm);
    /* by the radix sort (fast path: qsort's comparator calls were 13.8 M
     * instructions on 8 x 157 MB, 42,304 rank steps) */
    bool bad = !steps || !key || !perm;
    for (size_t i = 0; !bad && i < g->n_rs; i++) {
        key[i] = mt_sort_key_i64(g->rs[i].step);
        perm[i] = (uint32_t)i;
    }
    bad = bad || mt_sort_u64(key, perm, g->n_rs) != MT_OK;
    for (size_t i = 0; !bad && i < g->n_rs; i++)
        if (!ns || steps[ns - 1] != g->rs[perm[i]].step)
            steps[ns++] = g->rs[perm[i]].step;
    free(key);
    free(perm);
    if (bad) {
        free(steps);
        return MT_ERR_NOMEM;
    }
    size_t u0 = ns <= (size_t)(rq->warmup > 0 ? rq->warmup : 0) ? 0 : (size_t)(rq->warmup > 0 ? rq->warmup : 0);
    mt_cp_dist_in_t in = {.used_steps = steps + u0, .n_used = ns - u0, .members_of = dist_members, .members_ctx = g,
                          .rq = rq};
    mt_status_t st = rq->reduce(rq->hook_ctx, &in, out);
    free(steps);
    return st;
}

mt_status_t mt_critpath_run(const mt_cp_request_t *rq, const mt_rank_analysis_t *const *an, size_t n_an,
                            const mt_clock_t *clocks, const int32_t *ranks, size_t n_ranks, const mt_crow_t *rows,
                            size_t n_rows, const mt_match_t *m, mt_critpath_t **out)
{
    *out = NULL;
    cp_graph_t g;
    mt_status_t st = cp_graph_build(an, n_an, clocks, ranks, n_ranks, rows, n_rows, m, rq->n_absent > 0, true,
                                    rq->rows_done, rq->hook_ctx, &g);
    if (st != MT_OK)
        return st;
    mt_cp_dist_t *dist = NULL;
    if (rq->reduce && g.n_rs && (rq->n_stragglers || rq->ideal) && (st = dist_run(&g, rq, &dist)) != MT_OK) {
        cp_graph_free(&g);
        return st;
    }
    g.dist = dist;
    if (cp_built_probe)
        cp_built_probe(&g);
    if (rq->built)
        rq->built(rq->hook_ctx);
    if (!g.n_rs) {
        cp_graph_free(&g);
        return MT_OK;
    }
    st = MT_ERR_NOMEM;
    rp_t r = {0}, rw[3] = {{0}, {0}, {0}};
    int64_t *wt[3] = {NULL, NULL, NULL};
    alt_t alt = {0};                          /* the ranges' pinned unchanged run */
    int64_t *at[4] = {NULL, NULL, NULL, NULL}; /* without a pipeline: the pinned lanes of cp_replay3 */
    mt_critpath_t *c = calloc(1, sizeof *c);
    int64_t *times = NULL, *meas = NULL, *tmp = NULL, *node_ns = NULL;
    int32_t *rs_at = NULL;
    int64_t *b_end = NULL, *b_time = NULL, *per = NULL; /* pipelines: the unchanged run, periods */
    double *fac = NULL, *err = NULL;
    nh_t *nh = NULL;
    uint8_t *late = NULL; /* per rank: 1 a straggler (cp_scen_t.late), 2 with a slow host (below) */
    if (!c)
        goto out;
    if (!(late = calloc(g.n_ranks ? g.n_ranks : 1, 1)))
        goto out;
    for (size_t i = 0; i < g.n_ranks; i++)
        for (size_t q = 0; q < rq->n_stragglers; q++)
            late[i] |= g.ranks[i].rank == rq->stragglers[q];
    c->warmup = rq->warmup;
    /* ---- job steps ---- */
    g.js = malloc(g.n_rs * sizeof *g.js);
    c->rank_steps = calloc(g.n_rs, sizeof *c->rank_steps);
    c->steps = calloc(g.n_rs, sizeof *c->steps);
    c->ranks = calloc(g.n_ranks ? g.n_ranks : 1, sizeof *c->ranks);
    if (!g.js || !c->rank_steps || !c->steps || !c->ranks)
        goto out;
    {
        /* (step, rank, start): rank steps are rank by rank, each by start,
         * so a stable sort by step is enough */
        uint64_t *key = malloc(g.n_rs * sizeof *key);
        uint32_t *perm = malloc(g.n_rs * sizeof *perm);
        int bad = !key || !perm;
        for (size_t i = 0; !bad && i < g.n_rs; i++) {
            key[i] = mt_sort_key_i64(g.rs[i].step);
            perm[i] = (uint32_t)i;
        }
        bad = bad || mt_sort_u64(key, perm, g.n_rs) != MT_OK;
        for (size_t i = 0; !bad && i < g.n_rs; i++)
            g.js[i] = (int32_t)perm[i];
        free(key);
        free(perm);
        if (bad)
            goto out;
    }
    int64_t residual = 0;
    for (size_t i = 0; i < g.n_ranks; i++) {
        c->ranks[i].rank = g.ranks[i].rank;
        if (g.ranks[i].clk && g.ranks[i].clk->residual_p99_ns > residual)
            residual = (int64_t)g.ranks[i].clk->residual_p99_ns;
    }
    c->n_ranks = g.n_ranks;
    size_t w = 0; /* rank steps kept: one per (step, rank) */
    for (size_t a = 0; a < g.n_rs;) {
        size_t b = a;
        while (b < g.n_rs && g.rs[g.js[b]].step == g.rs[g.js[a]].step)
            b++;
        mt_cp_step_t *s = &c->steps[c->n_steps];
        s->step = g.rs[g.js[a]].step;
        s->first = (uint32_t)w;
        s->start_ns = INT64_MAX;
        s->end_ns = INT64_MIN;
        for (size_t k = a; k < b; k++) {
            if (k > a && g.rs[g.js[k]].rank_i == g.rs[g.js[k - 1]].rank_i)
                continue; /* a step number seen twice on a rank: the first */
            const cp_rs_t *x = &g.rs[g.js[k]];
            g.js[w] = g.js[k];
            mt_cp_rank_step_t *y = &c->rank_steps[w++];
            y->rank = g.ranks[x->rank_i].rank;
            y->start_ns = x->start;
            y->end_ns = x->end;
            y->compute_ns = x->src->compute_ns;
            y->comm_ns = x->src->comm_ns;
            y->memory_ns = x->src->memory_ns;
            y->idle_ns = x->src->idle_ns;
            if (x->start < s->start_ns)
                s->start_ns = x->start;
            if (x->end > s->end_ns) {
                s->end_ns = x->end;
                s->end_rank = y->rank;
            }
        }
        s->n = (uint32_t)(w - s->first);
        s->time_ns = s->end_ns - s->start_ns;
        for (uint32_t k = s->first; k < s->first + s->n; k++)
            g.rs[g.js[k]].job = (int32_t)c->n_steps;
        c->n_steps++;
        a = b;
    }
    c->n_rank_steps = w;
    cp_job_fields(&g);
    /* the replay order and the hot records need the job fields; the
     * replay's arrays are allocated after them (no page of theirs is
     * touched before the first replay) */
    if (cp_order_build(&g, g.explicit_deps && !g.n_syncs))
        goto out;
    free(g.by_end); /* read by nothing after the order: its pages freed before the replay's */
    g.by_end = NULL;
    if (cp_rp_alloc_lean(&g, &r)) /* its per-node arrays: after cp_replay3's rows (lane_alloc) */
        goto out;
    for (size_t j = 0; j < c->n_steps; j++)
        c->steps[j].used = (int)j >= rq->warmup || c->n_steps <= (size_t)(rq->warmup > 0 ? rq->warmup : 0);
    /* ---- near-critical ranks ---- */
    for (size_t j = 0; j < c->n_steps; j++) {
        mt_cp_step_t *s = &c->steps[j];
        int64_t slack = 2 * residual;
        if (s->time_ns / 1000 > slack)
            slack = s->time_ns / 1000;
        if (slack > c->slack_ns)
            c->slack_ns = slack;
        uint32_t near = 0;
        for (uint32_t k = s->first; k < s->first + s->n; k++) {
            mt_cp_rank_step_t *y = &c->rank_steps[k];
            y->near_critical = y->end_ns >= s->end_ns - slack;
            near += (uint32_t)y->near_critical;
            if (s->used) { /* c->ranks is g.ranks' order: no search (it made this O(steps x ranks^2)) */
                mt_cp_rank_t *cr = &c->ranks[g.rs[g.js[k]].rank_i];
                cr->near_critical += (uint32_t)y->near_critical;
                cr->end_rank += y->rank == s->end_rank;
            }
        }
        s->undecided = near > 1;
    }
    /* ---- replay with the measured durations ---- */
    times = malloc(c->n_steps * sizeof *times);
    meas = malloc(c->n_steps * sizeof *meas);
    tmp = malloc(c->n_steps * sizeof *tmp);
    err = malloc(c->n_steps * sizeof *err);
    fac = mt_big_malloc((g.n_nodes ? g.n_nodes : 1) * sizeof *fac);
    nh = mt_big_malloc((g.n_nodes ? g.n_nodes : 1) * sizeof *nh);
    if (!times || !meas || !tmp || !err || !fac || !nh)
        goto out;
    /* A pipeline (two stages or more) is replayed as one run with shifts
     * carried from step to step: chunk k of a stage waits for chunk k - 1,
     * so a change that speeds every chunk shows only when the chunks see
     * each other's replayed times (docs/whatif.md "Pipelines"). Every
     * scenario is then compared with the unchanged run (b_time, b_end),
     * and also projects the period. Without one, the what-ifs "comm"
     * and "launch" are replayed beside the measured one (cp_replay3),
     * their step times kept for the what-ifs below (wt). */
    /* A straggler whose own host is slow (its GPU idles waiting for its
     * launches, past each step's first: that gap is a late start, a pause)
     * by 2 % of the used steps' time or more over the median rank: the
     * straggler what-if drops its launch gaps (late bit 2), and so does
     * the ideal what-if wherever it makes that rank ideal. Only for a
     * named straggler: over every rank the measure is noisy on real jobs
     * (on the DLRM set it named ranks 1, 3, 4 and 5, not rank 7, the
     * straggler, and moved M_W from rank 7 to rank 4). */
    if (rq->n_stragglers && g.n_ranks >= 2) {
        double *li = calloc(g.n_ranks, sizeof *li), *tmpv = malloc(g.n_ranks * sizeof *tmpv);
        if (!li || !tmpv) {
            free(li);
            free(tmpv);
            goto out;
        }
        int32_t prev_rs = -1;
        for (size_t i = 0; i < g.n_nodes; i++) {
            const cp_node_t *n = &g.nodes[i];
            bool first = n->rstep != prev_rs;
            prev_rs = n->rstep;
            if (first || n->bind != CP_B_LAUNCH || n->job < 0 || !c->steps[n->job].used)
                continue;
            int64_t r0 = n->pstream >= 0 ? g.nodes[n->pstream].e : INT64_MIN;
            if (n->px >= 0 && g.nodes[n->px].e > r0)
                r0 = g.nodes[n->px].e;
            if (r0 != INT64_MIN && n->s > r0)
                li[n->rank_i] += (double)(n->s - r0);
        }
        memcpy(tmpv, li, g.n_ranks * sizeof *tmpv);
        double med = mt_stats_median_f64(tmpv, g.n_ranks), run = 0;
        for (size_t j = 0; j < c->n_steps; j++)
            run += c->steps[j].used ? (double)c->steps[j].time_ns : 0;
        for (size_t i = 0; i < g.n_ranks; i++)
            if ((late[i] & 1) && li[i] - med >= 0.02 * run)
                late[i] |= 2;
        free(li);
        free(tmpv);
    }
    bool pipe = rq->n_stages >= 2 && rq->stage_ranks && rq->stage_first && c->n_steps >= 2;
    if (pipe) {
        scen_t sc0 = {0};
        if (cp_rp_alloc_nodes(&g, &r))
            goto out;
        cp_replay(&g, &sc0, &r, c, times);
        if (cp_edge_base(&g, c, &r))
            goto out;
    } else {
        bool comm = g.n_inst > 0, strag = rq->n_stragglers > 0;
        /* the straggler what-if's factors (below) now: its replay is a
         * fourth lane (fast path: one pass over the graph less when the
         * job has a straggler) */
        size_t nn = 0;
        if (strag && straggler_factors(&g, rq, fac, nh, &nn))
            goto out;
        wt[0] = malloc(c->n_steps * sizeof *wt[0]);
        wt[1] = malloc(c->n_steps * sizeof *wt[1]);
        wt[2] = strag ? malloc(c->n_steps * sizeof *wt[2]) : NULL;
        if (!wt[0] || !wt[1] || (strag && !wt[2]) || (comm && lane_alloc(&g, &rw[0])) || lane_alloc(&g, &rw[1]) ||
            (strag && lane_alloc(&g, &rw[2])) || (cp_replay_probe && cp_rp_alloc_nodes(&g, &r)))
            goto out;
        rp_t lanes[4] = {r, rw[0], rw[1], rw[2]};
        int rc = cp_replay3(&g, lanes, comm, true, strag ? fac : NULL, strag ? late : NULL, false, c,
                            (int64_t *const[4]){times, wt[0], wt[1], wt[2]});
        r = lanes[0];
        if (rc || cp_edge_base(&g, c, &r))
            goto out;
        /* done with: freed before the paths' arrays come (with the probe,
         * the "launch" lane's ends taken over as node_ns) */
        if ((node_ns = rw[1].e)) {
            rw[1].e = NULL;
            memset(node_ns, 0, (g.n_nodes ? g.n_nodes : 1) * sizeof *node_ns);
        }
        cp_rp_free(&rw[0]);
        cp_rp_free(&rw[1]);
        cp_rp_free(&rw[2]);
        rw[0] = rw[1] = rw[2] = (rp_t){0};
        if (cp_rp_alloc_nodes(&g, &r)) /* the replays after these */
            goto out;
    }
    if (!node_ns && !(node_ns = calloc(g.n_nodes ? g.n_nodes : 1, sizeof *node_ns)))
        goto out;
    size_t ne = 0;
    for (size_t j = 0; j < c->n_steps; j++) {
        mt_cp_step_t *s = &c->steps[j];
        s->replay_ns = times[j];
        int64_t d = times[j] - s->time_ns;
        double e = s->time_ns > 0 ? (double)(d < 0 ? -d : d) / (double)s->time_ns : 0.0;
        s->refused = e > 0.05;
        if (s->used) {
            err[ne++] = e;
            c->refused += s->refused;
        }
    }
    if (ne) {
        qsort(err, ne, sizeof *err, mt_cmp_dbl);
        c->replay_err_median = err[(ne - 1) / 2];
        c->replay_err_max = err[ne - 1];
    }
    /* ---- critical paths ---- */
    rs_at = malloc((g.n_ranks ? g.n_ranks : 1) * sizeof *rs_at);
    if (!rs_at)
        goto out;
    memset(rs_at, 0xff, (g.n_ranks ? g.n_ranks : 1) * sizeof *rs_at);
    for (size_t j = 0; j < c->n_steps; j++) {
        mt_cp_step_t *s = &c->steps[j];
        /* a step holds one rank step per rank (rank_steps[k].rank is its rank's) */
        for (uint32_t k = s->first; k < s->first + s->n; k++)
            rs_at[g.rs[g.js[k]].rank_i] = (int32_t)k;
        walk_t wk = {.g = &g, .c = c, .s = s, .t0 = s->start_ns, .cur = s->end_ns, .node_ns = node_ns, .rs_at = rs_at};
        bool walked = cp_walk_step(&wk, j, false);
        for (uint32_t k = s->first; k < s->first + s->n; k++)
            rs_at[g.rs[g.js[k]].rank_i] = -1;
        if (!walked)
            continue;
        if (!s->used)
            continue;
        for (int k = 0; k < MT_CP_KIND_COUNT_; k++)
            c->kind_ns[k] += s->kind_ns[k];
        c->comm_absent_ns += wk.absent_ns;
        c->path_ns += s->time_ns;
        for (uint32_t k = s->first; k < s->first + s->n; k++)
            c->ranks[g.rs[g.js[k]].rank_i].path_ns += c->rank_steps[k].path_ns;
    }
    /* ---- statistics of the used steps ---- */
    size_t nu = 0;
    for (size_t j = 0; j < c->n_steps; j++)
        if (c->steps[j].used)
            tmp[nu++] = c->steps[j].time_ns;
    c->used = nu;
    if (nu) {
        qsort(tmp, nu, sizeof *tmp, mt_cmp_i64);
        c->p50_ns = mt_stats_pct_sorted(tmp, nu, 50);
        c->p90_ns = mt_stats_pct_sorted(tmp, nu, 90);
        c->p99_ns = mt_stats_pct_sorted(tmp, nu, 99);
        c->max_ns = tmp[nu - 1];
        int64_t sum = 0;
        for (size_t k = 0; k < nu; k++)
            sum += tmp[k];
        c->mean_ns = sum / (int64_t)nu;
    }
    for (size_t j = 0; j < c->n_steps; j++)
        c->steps[j].spike = c->steps[j].used && c->steps[j].time_ns * 2 > 3 * c->p50_ns && nu >= 3;
    /* ---- imbalance: the path's time of a kind minus the ranks' mean ---- */
    for (int k = 0; k < MT_CP_KIND_COUNT_; k++) {
        if (k == MT_CP_HOST)
            continue;
        int64_t own = 0;
        for (size_t j = 0; j < c->n_steps; j++) {
            const mt_cp_step_t *s = &c->steps[j];
            if (!s->used || !s->n)
                continue;
            int64_t sum = 0;
            for (uint32_t q = s->first; q < s->first + s->n; q++) {
                const mt_cp_rank_step_t *y = &c->rank_steps[q];
                sum += k == MT_CP_COMPUTE ? y->compute_ns
                       : k == MT_CP_COMM  ? y->comm_ns
                       : k == MT_CP_MEMORY ? y->memory_ns
                                           : y->idle_ns;
            }
            own += sum / s->n;
        }
        c->imbalance_ns[k] = c->kind_ns[k] - own;
    }
    /* comm on the path that may be waiting for ranks without a trace */
    c->absent_ranks = rq->n_absent;
    if (c->comm_absent_ns > c->kind_ns[MT_CP_COMM])
        c->comm_absent_ns = c->kind_ns[MT_CP_COMM];
    /* ---- top names on the path ---- */
    {
        size_t k = 0;
        cp_name_memo_t *memo = calloc(CP_NAME_MEMO, sizeof *memo);
        if (!memo)
            goto out;
        for (size_t i = 0; i < g.n_nodes; i++)
            if (node_ns[i] > 0)
                nh[k++] = (nh_t){cp_name_hash(memo, &g.nodes[i]), (int32_t)i, 0};
        free(memo);
        if (nh_sort(nh, k))
            goto out;
        size_t ng = 0;
        for (size_t a = 0; a < k;) {
            size_t b = a;
            while (b < k && nh[b].h == nh[a].h)
                b++;
            ng++;
            a = b;
        }
        c->top = calloc(ng ? ng : 1, sizeof *c->top);
        if (!c->top)
            goto out;
        for (size_t a = 0; a < k;) {
            size_t b = a;
            int64_t sum = 0;
            while (b < k && nh[b].h == nh[a].h)
                sum += node_ns[nh[b++].node];
            const cp_node_t *n = &g.nodes[nh[a].node];
            mt_cp_name_t *t = &c->top[c->n_top];
            *t = (mt_cp_name_t){.rank = -1, .kind = (uint32_t)cp_node_kind(n), .ns = sum};
            if (!(t->name = strndup(n->name, n->name_len)))
                goto out;
            c->n_top++;
            a = b;
        }
        qsort(c->top, c->n_top, sizeof *c->top, cp_name_ns_cmp);
        for (size_t i = CP_TOP; i < c->n_top; i++)
            free(c->top[i].name);
        if (c->n_top > CP_TOP)
            c->n_top = CP_TOP;
    }
    /* ---- what-ifs (pipelines: see above) ---- */
    if (pipe) {
        b_end = malloc(c->n_steps * sizeof *b_end);
        b_time = malloc(c->n_steps * sizeof *b_time);
        per = malloc(c->n_steps * sizeof *per);
        c->stage_wi = calloc(rq->n_stages, sizeof *c->stage_wi);
        if (!b_end || !b_time || !per || !c->stage_wi)
            goto out;
        scen_t base = {.carry = 1};
        cp_replay(&g, &base, &r, c, b_time);
        memcpy(b_end, r.jend, c->n_steps * sizeof *b_end);
        size_t np = 0; /* the measured periods */
        for (size_t j = 1; j < c->n_steps; j++)
            if (cp_step_has_period(c, j))
                per[np++] = c->steps[j].end_ns - c->steps[j - 1].end_ns;
        c->periods = np;
        c->period_p50_ns = mt_stats_pct_i64(per, np, 50);
    }
    /* ---- the ranges' other binding (alt_t): the unchanged run pinned,
     * and without a pipeline the what-ifs "comm", "launch" and the
     * straggler's beside it in one sweep, as the measured one was; only
     * for a graph with communication kernels whose stream wait no event
     * names ---- */
    for (size_t k = 0; k < g.n_nodes; k++)
        alt.waits += (g.hot[k].flags & CP_H_PXINF) != 0;
    c->waits_pinned = alt.waits; /* the ideal what-if's S range too (cp_ideal_run) */
    if (alt.waits) {
        if (!(alt.base = malloc(c->n_steps * sizeof *alt.base)))
            goto out;
        if (pipe) {
            scen_t b = {.carry = 1, .pin_inferred = 1};
            if (!(alt.bend = malloc(c->n_steps * sizeof *alt.bend)))
                goto out;
            cp_replay(&g, &b, &r, c, alt.base);
            memcpy(alt.bend, r.jend, c->n_steps * sizeof *alt.bend);
        }
    }
    for (int wi = 0; wi < MT_WI_COUNT_; wi++) {
        mt_cp_whatif_t *x = &c->whatif[wi];
        scen_t sc = {.carry = pipe};
        for (size_t j = 0; j < c->n_steps; j++)
            c->steps[j].whatif_ns[wi] = -1;
        if (wi == MT_WI_STRAGGLER) {
            if (!rq->n_stragglers)
                continue;
            size_t nn = 0; /* without a pipeline: replayed beside the measured one */
            if (pipe && straggler_factors(&g, rq, fac, nh, &nn))
                goto out;
            sc.factor = fac;
            sc.late = late;
            int len = snprintf(x->label, sizeof x->label, "rank%s", rq->n_stragglers > 1 ? "s" : "");
            for (size_t i = 0; i < rq->n_stragglers && len > 0 && (size_t)len < sizeof x->label - 24; i++)
                len += snprintf(x->label + len, sizeof x->label - (size_t)len, " %d", rq->stragglers[i]);
            snprintf(x->label + len, sizeof x->label - (size_t)len, " at the median rank's speed");
        } else if (wi == MT_WI_COMM) {
            if (!g.n_inst)
                continue;
            sc.comm_transfer = 1;
            snprintf(x->label, sizeof x->label, "communication at its transfer time, no waiting");
        } else if (wi == MT_WI_LAUNCH) {
            sc.drop_launch = 1;
            snprintf(x->label, sizeof x->label, "no host launch gaps");
        } else {
            if (!rq->pattern)
                continue;
            x->matched = pattern_factors(&g, rq, fac);
            sc.factor = fac;
            snprintf(x->label, sizeof x->label, "kernels %.60s x %.3g", rq->pattern, rq->factor);
        }
        if (!pipe && wi != MT_WI_PATTERN) /* replayed with the measured one */
            memcpy(times, wt[wi == MT_WI_COMM ? 0 : wi == MT_WI_LAUNCH ? 1 : 2], c->n_steps * sizeof *times);
        else
            cp_replay(&g, &sc, &r, c, times);
        size_t n1 = 0;
        x->period_only = pipe && wi == MT_WI_COMM; /* critpath.h: its step times are no prediction */
        for (size_t j = 0; j < c->n_steps && !x->period_only; j++) {
            mt_cp_step_t *s = &c->steps[j];
            if (s->refused)
                continue;
            /* the change the model predicts, on the measured time: the
             * model's own error on the step cancels to first order */
            int64_t v = s->time_ns + (times[j] - (pipe ? b_time[j] : s->replay_ns));
            s->whatif_ns[wi] = v > 0 ? v : 0;
            if (s->used) {
                tmp[n1] = s->whatif_ns[wi];
                meas[n1++] = s->time_ns;
            }
        }
        x->run = true;
        x->steps = n1;
        if (n1) {
            x->p50_ns = mt_stats_pct_i64(tmp, n1, 50);
            x->gain_ns = mt_stats_pct_i64(meas, n1, 50) - x->p50_ns;
        }
        if (pipe && c->periods) {
            x->carried = true;
            x->period_p50_ns = carried_period(c, &r, b_end, per);
            x->period_gain_ns = c->period_p50_ns - x->period_p50_ns;
        }
        if (alt.waits && pipe && (wi == MT_WI_STRAGGLER || wi == MT_WI_PATTERN)) {
            scen_t pw = sc;
            pw.pin_inferred = 1;
            cp_replay(&g, &pw, &r, c, times);
            alt_set(c, &alt, times, &r, per, tmp, x);
        }
    }
    if (alt.waits && !pipe && (st = alt_lanes(&g, rq, c, fac, nh, late, &alt, at, &r, rw, per, tmp)) != MT_OK)
        goto out;
    st = MT_ERR_NOMEM;
    if (alt.waits && pipe) {
        /* of "comm" and "launch", the one the terminal may name best (by
         * its period): one pinned run, not two */
        int k = -1;
        for (int wi = MT_WI_COMM; wi <= MT_WI_LAUNCH; wi++)
            if (c->whatif[wi].run && c->whatif[wi].carried &&
                (k < 0 || c->whatif[wi].period_gain_ns > c->whatif[k].period_gain_ns))
                k = wi;
        if (k >= 0) {
            scen_t pw = {.carry = 1, .pin_inferred = 1, .comm_transfer = k == MT_WI_COMM,
                         .drop_launch = k == MT_WI_LAUNCH};
            cp_replay(&g, &pw, &r, c, times);
            alt_set(c, &alt, times, &r, per, tmp, &c->whatif[k]);
        }
    }
    /* ---- what-if "stage": one run per stage, shifts carried over ---- */
    if (pipe) {
        double f = rq->stage_factor > 0 ? rq->stage_factor : 0.9;
        for (size_t q = 0; c->periods && q < rq->n_stages; q++) {
            stage_factors(&g, rq, q, f, fac);
            scen_t sc = {.factor = fac, .carry = 1};
            cp_replay(&g, &sc, &r, c, times);
            mt_cp_stage_wi_t *x = &c->stage_wi[c->n_stage_wi++];
            x->stage = (uint32_t)q;
            x->p50_ns = carried_period(c, &r, b_end, per);
            x->gain_ns = c->period_p50_ns - x->p50_ns;
        }
        if (alt.waits && c->n_stage_wi) {
            /* the best stage's other binding (the one the terminal names) */
            size_t bs = 0;
            for (size_t i = 1; i < c->n_stage_wi; i++)
                if (c->stage_wi[i].gain_ns > c->stage_wi[bs].gain_ns)
                    bs = i;
            mt_cp_stage_wi_t *x = &c->stage_wi[bs];
            stage_factors(&g, rq, x->stage, f, fac);
            scen_t sc = {.factor = fac, .carry = 1, .pin_inferred = 1};
            cp_replay(&g, &sc, &r, c, times);
            x->alt_p50_ns = carried_period(c, &r, alt.bend, per);
            int64_t d = x->alt_p50_ns - x->p50_ns;
            x->ranged = (double)(d < 0 ? -d : d) >= 0.005 * (double)c->period_p50_ns;
        }
    }
    /* The replays' and the paths' arrays are done with: freed before the
     * root causes and the ideal what-if allocate theirs, so that those
     * reuse the memory (a fresh page costs more than the work done on
     * it) and the peak holds one set, not both. */
    cp_rp_free(&r);
    r = (rp_t){0};
    free(node_ns);
    free(fac);
    free(nh);
    node_ns = NULL;
    fac = NULL;
    nh = NULL;
    /* ---- the strips of report.html: the median and the slowest step ---- */
    {
        size_t pick[2];
        const char *why[2];
        size_t n_pick = cp_strips_pick(c, pick, why);
        mt_status_t sst = MT_OK;
        for (size_t i = 0; i < n_pick && sst == MT_OK; i++) {
            cp_pseg_t *ps = NULL;
            size_t np = 0;
            sst = cp_path_of(&g, c, pick[i], &ps, &np) ? MT_ERR_NOMEM : cp_strip_add(&g, c, pick[i], why[i], ps, np);
            free(ps);
        }
        if ((st = sst) != MT_OK)
            goto out;
    }
    /* ---- root causes and the ideal what-if: not when most of the job has
     * no trace (issue 39 item 7: one rank of eight alone was told its
     * waiting's causes and a straggler slowdown; whom it waited for is
     * in the traces that are not there) ---- */
    bool told = rq->n_absent <= n_an;
    if (told && (st = cp_root_causes(&g, c)) != MT_OK)
        goto out;
    if (told && rq->ideal && (st = cp_ideal_run(&g, rq, late, c)) != MT_OK)
        goto out;
    /* ---- what the model inferred, and the check (critpath.h) ---- */
    c->waits_inferred = g.waits_inferred;
    c->waits_explicit = g.waits_explicit;
    c->waits_unresolved = g.waits_unresolved;
    c->host_colls = g.n_hmem;
    c->pauses = g.pauses;
    c->pause_ns = g.pause_ns;
    {
        const mt_cp_whatif_t *x = &c->whatif[MT_WI_STRAGGLER];
        if (x->run && x->steps && rq->n_stragglers && c->wait_ns > 0 && c->path_ns > 0 && c->p50_ns > 0) {
            for (size_t i = 0; i < c->n_ranks; i++) {
                if (c->ranks[i].rank != rq->stragglers[0])
                    continue;
                c->check_run = true;
                c->check_rank = c->ranks[i].rank;
                c->check_caused = (double)c->ranks[i].caused_ns / (double)c->wait_ns;
                c->check_path = (double)c->ranks[i].path_ns / (double)c->path_ns;
                c->check_gain = (double)x->gain_ns / (double)c->p50_ns;
                c->check_failed = c->check_caused >= 0.5 && c->check_path >= 0.5 && c->check_gain < 0.02;
            }
        }
    }
    st = MT_OK;
out:
    cp_rp_free(&r);
    cp_rp_free(&rw[0]);
    cp_rp_free(&rw[1]);
    cp_rp_free(&rw[2]);
    free(wt[0]);
    free(wt[1]);
    free(wt[2]);
    free(alt.base);
    free(alt.bend);
    for (int l = 1; l < 4; l++)
        free(at[l]);
    free(times);
    free(meas);
    free(tmp);
    free(b_end);
    free(b_time);
    free(per);
    free(err);
    free(late);
    free(node_ns);
    free(rs_at);
    free(fac);
    free(nh);
    cp_graph_free(&g);
    mt_cp_dist_free(dist);
    if (st != MT_OK) {
        mt_critpath_free(c);
        return st;
    }
    *out = c;
    return MT_OK;
}
