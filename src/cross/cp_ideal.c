/* The ideal what-if (include/mergetrace/critpath.h, mt_cp_ideal_t): the
 * replay of the critical-path graph with no gaps and every activity at its
 * type's typical value, then one group (operation type, worker, stage) at
 * a time restored to its measured values; S, S per group, M_S and M_W.
 * Method of "Understanding Stragglers in Large Model Training Using
 * What-if Analysis" (OSDI 2025); what differs from its artifact:
 * docs/whatif.md. */
#include "base/hash.h"
#include "base/sort.h"
#include "base/stats.h"
#include "cross/critpath_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct coord {
    int32_t worker, stage, rank;
} coord_t;

typedef struct ctx {
    const coord_t *co;   /* per rank_i */
    const cp_graph_t *g;
    cp_rp_t *r;
    mt_critpath_t *c;
    const int64_t *job_start;
    int64_t *times;
    int64_t *dur;        /* the scenario's durations */
    const int64_t *actual, *ideal;
    const uint16_t *lab; /* per node: its index in the type labels, LAB_NONE */
} ctx_t;

#define LAB_CAP 257 /* a Kineto graph has 3 classes; a timeline a dozen types */
#define LAB_NONE UINT16_MAX

/* Mean step time of the used steps under durations x->dur (nodelay); *n
 * gets their count. Steps refused for other projections count too: S is the
 * ratio of two replays of the same graph (no delay vs ideal), as in the
 * paper, not a projection from a measured time, so the replay's error
 * against the measurement does not enter it. */
static double mean_time(ctx_t *x, uint64_t *n)
{
    cp_scen_t sc = {.dur = x->dur, .nodelay = 1, .job_start = x->job_start};
    cp_replay(x->g, &sc, x->r, x->c, x->times);
    double sum = 0;
    uint64_t k = 0;
    for (size_t j = 0; j < x->c->n_steps; j++)
        if (x->c->steps[j].used) {
            sum += (double)x->times[j];
            k++;
        }
    if (n)
        *n = k;
    return k ? sum / (double)k : 0.0;
}

/* Ideal everywhere except where pick(node) (actual there). */
static double mean_with(ctx_t *x, int (*pick)(const ctx_t *, size_t, const void *), const void *arg, int invert)
{
    for (size_t i = 0; i < x->g->n_nodes; i++) {
        int p = pick(x, i, arg);
        x->dur[i] = (invert ? !p : p) ? x->actual[i] : x->ideal[i];
    }
    return mean_time(x, NULL);
}

/* The decomposition label of a node: send and receive of a direction
 * together for timelines; the class for Kineto graphs. */
static void label_of(const cp_graph_t *g, const cp_node_t *n, char *buf, size_t cap)
{
    if (!g->explicit_deps) {
        const char *s = mt_an_class_str((mt_an_class_t)n->cls);
        size_t len = strlen(s) < cap - 1 ? strlen(s) : cap - 1;
        memcpy(buf, s, len);
        buf[len] = '\0';
        return;
    }
    size_t len = n->name_len < cap - 1 ? n->name_len : cap - 1;
    if (len > 5 && (memcmp(n->name + len - 5, "-send", 5) == 0 || memcmp(n->name + len - 5, "-recv", 5) == 0) &&
        len - 5 + 9 < cap) {
        memcpy(buf, n->name, len - 5);
        memcpy(buf + len - 5, "-pp-comm", 9);
        return;
    }
    memcpy(buf, n->name, len);
    buf[len] = '\0';
}


/* The label is found once per node (cp_ideal_run), not once per node and
 * type: that made the by-type replays cost more than the replays. */
static int pick_label(const ctx_t *x, size_t i, const void *arg)
{
    return x->lab[i] == *(const uint16_t *)arg;
}

static const coord_t *node_coord(const ctx_t *x, size_t i)
{
    return &x->co[x->g->nodes[i].rank_i];
}

static int pick_worker(const ctx_t *x, size_t i, const void *arg)
{
    return node_coord(x, i)->worker == *(const int32_t *)arg;
}

static int pick_stage(const ctx_t *x, size_t i, const void *arg)
{
    return node_coord(x, i)->stage == *(const int32_t *)arg;
}

static int pick_rank(const ctx_t *x, size_t i, const void *arg)
{
    return node_coord(x, i)->rank == *(const int32_t *)arg;
}

static int share_cmp(const void *pa, const void *pb)
{
    const mt_cp_share_t *a = pa, *b = pb;
    if (a->s != b->s)
        return a->s > b->s ? -1 : 1;
    return strcmp(a->name, b->name);
}

/* Distinct values of v[0..n) into *out (sorted); their count. */
static size_t distinct(int32_t *v, size_t n)
{
    qsort(v, n, sizeof *v, mt_cmp_i32);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!k || v[k - 1] != v[i])
            v[k++] = v[i];
    return k;
}

mt_status_t cp_ideal_run(const cp_graph_t *g, const mt_cp_request_t *rq, cp_rp_t *r, mt_critpath_t *c)
{
    mt_cp_ideal_t *I = &c->ideal;
    memset(I, 0, sizeof *I);
    I->blamed_stage = I->ms_stage = I->mw_rank = I->mw_worker = I->mw_stage = -1;
    size_t N = g->n_nodes, NR = g->n_ranks;
    mt_status_t st = MT_ERR_NOMEM;
    int64_t *job_start = malloc((c->n_steps ? c->n_steps : 1) * sizeof *job_start);
    int64_t *times = malloc((c->n_steps ? c->n_steps : 1) * sizeof *times);
    int64_t *dur = malloc((N ? N : 1) * sizeof *dur);
    int64_t *actual = malloc((N ? N : 1) * sizeof *actual);
    int64_t *ideal = malloc((N ? N : 1) * sizeof *ideal);
    int64_t *vals = malloc((N ? N : 1) * sizeof *vals);
    uint64_t *hk = malloc((N ? N : 1) * sizeof *hk); /* name hashes of the used steps' nodes */
    uint32_t *kn = malloc((N ? N : 1) * sizeof *kn); /* ... and the nodes */
    coord_t *co = malloc((NR ? NR : 1) * sizeof *co);
    int32_t *ws = malloc((NR ? NR : 1) * sizeof *ws), *ss = malloc((NR ? NR : 1) * sizeof *ss);
    char (*labels)[64] = NULL;
    uint16_t *lab = NULL;
    if (!job_start || !times || !dur || !actual || !ideal || !vals || !hk || !kn || !co || !ws || !ss)
        goto out;
    for (size_t j = 0; j < c->n_steps; j++)
        job_start[j] = c->steps[j].start_ns;
    for (size_t k = 0; k < NR; k++) {
        co[k] = (coord_t){g->ranks[k].rank, -1, g->ranks[k].rank};
        for (size_t q = 0; q < rq->n_coords; q++)
            if (rq->coords[q].rank == g->ranks[k].rank)
                co[k] = (coord_t){rq->coords[q].worker, rq->coords[q].stage, g->ranks[k].rank};
        if (rq->n_coords || !rq->stage_ranks || !rq->stage_first)
            continue;
        /* A Kineto job: the pipeline pass's stages; the worker is the
         * rank's place in its stage's ranks (listed ascending), the
         * data-parallel index when stages are blocks of DP x TP ranks. */
        for (size_t s = 0; s < rq->n_stages; s++)
            for (size_t q = rq->stage_first[s]; q < rq->stage_first[s + 1]; q++)
                if (rq->stage_ranks[q] == g->ranks[k].rank)
                    co[k] = (coord_t){(int32_t)(q - rq->stage_first[s]), (int32_t)s, g->ranks[k].rank};
    }
    /* measured values and the typical value of each name; the names of a
     * rank point into its string pool, so a direct-mapped memo of pointer
     * -> hash spares hashing the same long kernel name again and again */
    struct {
        const char *p;
        uint32_t len;
        uint64_t h;
    } memo[1024];
    memset(memo, 0, sizeof memo);
    size_t nk = 0;
    for (size_t i = 0; i < N; i++) {
        const cp_node_t *n = &g->nodes[i];
        actual[i] = n->inst >= 0 ? (n->T > 0 ? n->T : 0) : n->e - n->s;
        ideal[i] = actual[i];
        if (n->job >= 0 && c->steps[n->job].used) {
            size_t slot = ((uintptr_t)n->name >> 3) & 1023;
            if (memo[slot].p != n->name || memo[slot].len != n->name_len) {
                memo[slot].p = n->name;
                memo[slot].len = n->name_len;
                memo[slot].h = mt_hash64(n->name, n->name_len, 0x9e3779b97f4a7c15ull);
            }
            hk[nk] = memo[slot].h;
            kn[nk++] = (uint32_t)i;
        }
    }
    /* by (hash, node): the radix sort is stable and the nodes come in order
     * (qsort with a comparator cost 10 % of the what-if on 256 ranks) */
    if (mt_sort_u64(hk, kn, nk) != MT_OK)
        goto out;
    for (size_t a = 0; a < nk;) {
        size_t b = a;
        while (b < nk && hk[b] == hk[a])
            b++;
        const cp_node_t *n0 = &g->nodes[kn[a]];
        int64_t typical;
        if (n0->cls == MT_AN_COMM) {
            /* the median transfer (the mean of the two middle values) */
            for (size_t k = a; k < b; k++)
                vals[k - a] = actual[kn[k]];
            qsort(vals, b - a, sizeof *vals, mt_cmp_i64);
            size_t m = b - a;
            typical = m % 2 ? vals[m / 2] : (vals[m / 2 - 1] + vals[m / 2]) / 2;
        } else {
            double sum = 0;
            for (size_t k = a; k < b; k++)
                sum += (double)actual[kn[k]];
            typical = (int64_t)(sum / (double)(b - a) + 0.5);
        }
        for (size_t k = a; k < b; k++)
            ideal[kn[k]] = typical;
        a = b;
    }
    /* every node of the same name outside the used steps too */
    ctx_t x = {co, g, r, c, job_start, times, dur, actual, ideal, NULL};
    memcpy(dur, actual, N * sizeof *dur);
    double t_nd = mean_time(&x, &I->steps);
    memcpy(dur, ideal, N * sizeof *dur);
    double t_id = mean_time(&x, NULL);
    if (!I->steps || t_id <= 0) {
        st = MT_OK;
        goto out;
    }
    I->run = true;
    I->nodelay_ns = (int64_t)(t_nd + 0.5);
    I->ideal_ns = (int64_t)(t_id + 0.5);
    I->s = t_nd / t_id;
    /* by type */
    labels = malloc(LAB_CAP * sizeof *labels);
    lab = malloc((N ? N : 1) * sizeof *lab);
    if (!labels || !lab)
        goto out;
    x.lab = lab;
    size_t nl = 0;
    for (size_t i = 0; i < N; i++) {
        char buf[64];
        label_of(g, &g->nodes[i], buf, sizeof buf);
        size_t k = 0;
        while (k < nl && strcmp(labels[k], buf))
            k++;
        if (k == nl && nl < LAB_CAP)
            memcpy(labels[nl++], buf, sizeof buf);
        lab[i] = k < nl ? (uint16_t)k : LAB_NONE;
    }
    I->by_type = calloc(nl ? nl : 1, sizeof *I->by_type);
    if (!I->by_type)
        goto out;
    for (size_t k = 0; k < nl; k++) {
        mt_cp_share_t *s = &I->by_type[I->n_type++];
        snprintf(s->name, sizeof s->name, "%s", labels[k]);
        s->id = -1;
        uint16_t id = (uint16_t)k;
        s->s = mean_with(&x, pick_label, &id, 0) / t_id;
    }
    qsort(I->by_type, I->n_type, sizeof *I->by_type, share_cmp);
    /* by worker and by stage */
    for (size_t k = 0; k < NR; k++) {
        ws[k] = co[k].worker;
        ss[k] = co[k].stage;
    }
    size_t nw = distinct(ws, NR), ns = distinct(ss, NR);
    if (ns && ss[0] < 0) { /* stage unknown */
        memmove(ss, ss + 1, (ns - 1) * sizeof *ss);
        ns--;
    }
    I->n_worker_all = nw;
    if (nw > MT_CP_IDEAL_WORKERS) {
        /* One replay per worker made the what-if O(workers x activities):
         * 256 ranks of a Kineto job took 7x the load. Replayed: the workers
         * whose measured durations exceed the ideal ones the most (summed
         * over the used steps), the only ones whose S can be large. */
        double *ex = calloc(nw, sizeof *ex);
        if (!ex)
            goto out;
        for (size_t i = 0; i < N; i++) {
            const cp_node_t *n = &g->nodes[i];
            if (n->job < 0 || !c->steps[n->job].used || actual[i] <= ideal[i])
                continue;
            int32_t w = co[n->rank_i].worker;
            size_t lo = 0, hi = nw;
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (ws[mid] < w)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            ex[lo] += (double)(actual[i] - ideal[i]);
        }
        for (size_t k = 0; k < MT_CP_IDEAL_WORKERS; k++) { /* selection: the largest first, lowest id on ties */
            size_t b = k;
            for (size_t q = k + 1; q < nw; q++)
                if (ex[q] > ex[b] || (ex[q] == ex[b] && ws[q] < ws[b]))
                    b = q;
            double te = ex[k];
            int32_t tw = ws[k];
            ex[k] = ex[b];
            ws[k] = ws[b];
            ex[b] = te;
            ws[b] = tw;
        }
        free(ex);
        nw = MT_CP_IDEAL_WORKERS;
        qsort(ws, nw, sizeof *ws, mt_cmp_i32);
    }
    I->by_worker = calloc(nw ? nw : 1, sizeof *I->by_worker);
    I->by_stage = calloc(ns ? ns : 1, sizeof *I->by_stage);
    I->heat = calloc((nw ? nw : 1) * (ns ? ns : 1), sizeof *I->heat);
    if (!I->by_worker || !I->by_stage || !I->heat)
        goto out;
    for (size_t k = 0; k < nw; k++) {
        I->by_worker[k] = (mt_cp_share_t){.id = ws[k], .s = mean_with(&x, pick_worker, &ws[k], 0) / t_id};
        I->n_worker++;
    }
    double best = -1;
    for (size_t k = 0; k < ns; k++) {
        I->by_stage[k] = (mt_cp_share_t){.id = ss[k], .s = mean_with(&x, pick_stage, &ss[k], 0) / t_id};
        I->n_stage++;
        if (I->by_stage[k].s > best) {
            best = I->by_stage[k].s;
            I->blamed_stage = ss[k];
        }
    }
    for (size_t a = 0; a < nw; a++)
        for (size_t b = 0; b < ns; b++) {
            double u = I->by_worker[a].s, v = I->by_stage[b].s;
            I->heat[a * ns + b] = u < v ? u : v;
        }
    /* M_S: the last stage at the ideal values in the no-delay replay */
    if (ns && t_nd > t_id) {
        int32_t last = ss[ns - 1];
        double trem = mean_with(&x, pick_stage, &last, 1);
        I->has_ms = true;
        I->ms_stage = last;
        I->ms_rem_ns = (int64_t)(trem + 0.5);
        I->ms = (t_nd - trem) / (t_nd - t_id);
    }
    /* M_W: the rank with the largest min(S_worker, S_stage), lowest rank on ties */
    if (t_nd > t_id && nw) {
        int32_t pick = -1;
        double hv = -1;
        for (size_t k = 0; k < NR; k++) {
            double u = 0, v = 1e300;
            for (size_t a = 0; a < nw; a++)
                if (I->by_worker[a].id == co[k].worker)
                    u = I->by_worker[a].s;
            for (size_t b = 0; b < ns; b++)
                if (I->by_stage[b].id == co[k].stage)
                    v = I->by_stage[b].s;
            double h = u < v ? u : v;
            if (h > hv || (h == hv && co[k].rank < pick)) {
                hv = h;
                pick = co[k].rank;
                I->mw_worker = co[k].worker;
                I->mw_stage = co[k].stage;
            }
        }
        double trem = mean_with(&x, pick_rank, &pick, 1);
        I->has_mw = true;
        I->mw_rank = pick;
        I->mw_rem_ns = (int64_t)(trem + 0.5);
        I->mw = (t_nd - trem) / (t_nd - t_id);
    }
    st = MT_OK;
out:
    free(job_start);
    free(times);
    free(dur);
    free(actual);
    free(ideal);
    free(vals);
    free(hk);
    free(kn);
    free(co);
    free(ws);
    free(ss);
    free(labels);
    free(lab);
    return st;
}
