/* An operation-level timeline as the job model of the critical path and
 * its what-ifs: activities, explicit dependencies, instances and workers
 * (include/mergetrace/tljob.h has the rules). */
#include "mergetrace/tljob.h"
#include "base/bigmem.h"
#include "mergetrace/buf.h"
#include "rank/passes.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* What an operation type is, from its name. */
enum {
    K_OTHER = 0,
    K_FWD,      /* forward-compute */
    K_BWD,      /* backward-compute */
    K_SEND,     /* <dir>-send */
    K_RECV,     /* <dir>-recv */
    K_AG,       /* params-all-gather */
    K_RS,       /* grads-reduce-scatter */
    K_SEP,      /* separate-grads-all-reduce */
    K_LN,       /* layernorm-grads-all-reduce */
    K_EMB,      /* embedding-grads-all-reduce */
    K_CLIP,     /* optimizer-clip-main-grad */
    K_OPT,      /* optimizer */
    K_GC,       /* gc */
};

typedef struct tinfo {
    uint8_t kind, dir; /* dir: 0 forward, 1 backward (send/recv) */
    uint8_t comm;      /* communication (its ideal is the median transfer) */
} tinfo_t;

static int ends_with(const char *s, const char *t)
{
    size_t a = strlen(s), b = strlen(t);
    return a >= b && memcmp(s + a - b, t, b) == 0;
}

static tinfo_t type_info(const char *s, int track)
{
    tinfo_t x = {K_OTHER, 0, track != MT_TL_COMPUTE && track != MT_TL_MISC};
    int fwd = strncmp(s, "forward", 7) == 0, bwd = strncmp(s, "backward", 8) == 0;
    if (!strcmp(s, "forward-compute"))
        x = (tinfo_t){K_FWD, 0, 0};
    else if (!strcmp(s, "backward-compute"))
        x = (tinfo_t){K_BWD, 1, 0};
    else if ((fwd || bwd) && ends_with(s, "-send"))
        x = (tinfo_t){K_SEND, (uint8_t)bwd, 1};
    else if ((fwd || bwd) && ends_with(s, "-recv"))
        x = (tinfo_t){K_RECV, (uint8_t)bwd, 1};
    else if (!strcmp(s, "params-all-gather"))
        x = (tinfo_t){K_AG, 0, 1};
    else if (!strcmp(s, "grads-reduce-scatter"))
        x = (tinfo_t){K_RS, 0, 1};
    else if (!strcmp(s, "separate-grads-all-reduce"))
        x = (tinfo_t){K_SEP, 0, 1};
    else if (!strcmp(s, "layernorm-grads-all-reduce"))
        x = (tinfo_t){K_LN, 0, 1};
    else if (!strcmp(s, "embedding-grads-all-reduce"))
        x = (tinfo_t){K_EMB, 0, 1};
    else if (!strcmp(s, "optimizer-clip-main-grad"))
        x = (tinfo_t){K_CLIP, 0, 1};
    else if (!strcmp(s, "optimizer"))
        x = (tinfo_t){K_OPT, 0, 0};
    else if (!strcmp(s, "gc"))
        x = (tinfo_t){K_GC, 0, 0};
    return x;
}

void mt_tl_job_free(mt_tl_job_t *j)
{
    if (!j)
        return;
    for (size_t i = 0; i < j->n_an; i++)
        mt_rank_analysis_free(j->an[i]);
    free(j->an);
    free(j->rows);
    mt_match_free(j->match);
    free(j->coords);
    free(j);
}

/* An instance key of one communication operation. */
typedef struct ikey {
    uint64_t k1, k2;
    uint32_t op;  /* index into the timeline's ops */
    uint32_t pad_;
} ikey_t;

static int ikey_cmp(const void *pa, const void *pb)
{
    const ikey_t *a = pa, *b = pb;
    if (a->k1 != b->k1)
        return a->k1 < b->k1 ? -1 : 1;
    if (a->k2 != b->k2)
        return a->k2 < b->k2 ? -1 : 1;
    return (a->op > b->op) - (a->op < b->op);
}

static uint64_t pack3(int64_t a, int64_t b, int64_t c)
{
    return ((uint64_t)(a & 0x1fffff) << 42) | ((uint64_t)(b & 0x1fffff) << 21) | (uint64_t)(c & 0x1fffff);
}

/* Order of (rank, step, start) over the ops (already by rank, start). */
typedef struct ord {
    int64_t step, start;
    int32_t rank;
    uint32_t op;
} ord_t;

static int ord_cmp(const void *pa, const void *pb)
{
    const ord_t *a = pa, *b = pb;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    if (a->step != b->step)
        return a->step < b->step ? -1 : 1;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    return (a->op > b->op) - (a->op < b->op);
}

typedef struct bld {
    const mt_timeline_t *tl;
    const tinfo_t *ti;
    int32_t *dep;     /* 2 per op: op indices (global), -1 */
    int32_t *valid_k; /* per send/recv op: its index among the valid ones of its type, -1 */
    uint64_t dropped;
} bld_t;

static void add_dep(bld_t *b, uint32_t op, int64_t pred)
{
    if (pred < 0 || pred == op)
        return;
    int32_t *d = &b->dep[2 * (size_t)op];
    if (d[0] == pred || d[1] == pred)
        return;
    if (d[0] < 0)
        d[0] = (int32_t)pred;
    else if (d[1] < 0)
        d[1] = (int32_t)pred;
    else
        b->dropped++;
}

#define TL_EPS_NS 50000 /* 50 us: the tolerance of the valid-send/recv tests */

/* The dependencies of one (rank, step): its ops g[0..n) by start. */
static int step_deps(bld_t *b, const ord_t *g, size_t n)
{
    const mt_tl_op_t *ops = b->tl->ops;
    uint32_t *comp[2] = {NULL, NULL}, *all = NULL;
    size_t nc[2] = {0, 0}, na = 0;
    comp[0] = malloc((n + 1) * sizeof *comp[0]);
    comp[1] = malloc((n + 1) * sizeof *comp[1]);
    all = malloc((n + 1) * sizeof *all);
    if (!comp[0] || !comp[1] || !all) {
        free(comp[0]);
        free(comp[1]);
        free(all);
        return -1;
    }
    int64_t last_end = INT64_MIN;
    int64_t last_compute = -1;
    for (size_t i = 0; i < n; i++) {
        uint32_t o = g[i].op;
        uint8_t k = b->ti[ops[o].type].kind;
        if (k == K_FWD || k == K_BWD) {
            comp[k == K_BWD][nc[k == K_BWD]++] = o;
            all[na++] = o;
            if (ops[o].end_ns > last_end) {
                last_end = ops[o].end_ns;
                last_compute = o;
            }
        }
    }
    /* sends and receives: valid ones and their computes */
    for (int d = 0; d < 2; d++) {
        if (!nc[d])
            continue;
        int64_t last_st = ops[comp[d][nc[d] - 1]].start_ns, first_ed = INT64_MAX;
        for (size_t i = 0; i < nc[d]; i++)
            if (ops[comp[d][i]].end_ns < first_ed)
                first_ed = ops[comp[d][i]].end_ns;
        for (int sr = 0; sr < 2; sr++) {
            uint8_t want = sr ? K_RECV : K_SEND;
            size_t cnt = 0;
            for (size_t i = 0; i < n; i++) {
                const mt_tl_op_t *x = &ops[g[i].op];
                const tinfo_t *t = &b->ti[x->type];
                if (t->kind != want || t->dir != d)
                    continue;
                if (sr ? x->start_ns <= last_st + TL_EPS_NS : x->end_ns >= first_ed - TL_EPS_NS)
                    cnt++;
            }
            size_t shift = sr && cnt + 1 == nc[d] ? 1 : 0, k = 0;
            for (size_t i = 0; i < n; i++) {
                uint32_t o = g[i].op;
                const mt_tl_op_t *x = &ops[o];
                const tinfo_t *t = &b->ti[x->type];
                if (t->kind != want || t->dir != d)
                    continue;
                if (!(sr ? x->start_ns <= last_st + TL_EPS_NS : x->end_ns >= first_ed - TL_EPS_NS))
                    continue;
                b->valid_k[o] = (int32_t)k;
                size_t ci = k + shift;
                if (ci < nc[d]) {
                    if (sr) {
                        add_dep(b, comp[d][ci], o);
                        if (ci > 0)
                            add_dep(b, o, comp[d][ci - 1]);
                    } else {
                        add_dep(b, o, comp[d][ci]);
                    }
                }
                k++;
            }
        }
    }
    /* the first backward send and receive: after the second forward
     * compute before the first backward compute */
    size_t fb = 0;
    while (fb < na && b->ti[ops[all[fb]].type].kind != K_BWD)
        fb++;
    if (fb < na && fb >= 2 && b->ti[ops[all[fb - 2]].type].kind == K_FWD) {
        for (size_t i = 0; i < n; i++) {
            const mt_tl_op_t *x = &ops[g[i].op];
            const tinfo_t *t = &b->ti[x->type];
            if ((t->kind == K_SEND || t->kind == K_RECV) && t->dir == 1 && x->seq == 0)
                add_dep(b, g[i].op, all[fb - 2]);
        }
    }
    /* the last params-all-gather of a chunk before the chunk's first forward compute */
    for (size_t i = n; i-- > 0;) {
        const mt_tl_op_t *x = &ops[g[i].op];
        if (b->ti[x->type].kind != K_AG)
            continue;
        int seen = 0;
        for (size_t j = i + 1; j < n && !seen; j++) {
            const mt_tl_op_t *y = &ops[g[j].op];
            seen = b->ti[y->type].kind == K_AG && y->chunk == x->chunk && y->seq > x->seq;
        }
        for (size_t j = 0; j < n && !seen; j++) {
            const mt_tl_op_t *y = &ops[g[j].op];
            if (b->ti[y->type].kind == K_AG && y->chunk == x->chunk && y->seq > x->seq)
                seen = 1;
        }
        if (seen)
            continue;
        for (size_t c = 0; c < nc[0]; c++)
            if (ops[comp[0][c]].chunk == x->chunk) {
                add_dep(b, comp[0][c], g[i].op);
                break;
            }
    }
    /* after the last compute: the chain gc, layernorm, embedding,
     * reduce-scatters, separate, clip, optimizer (each in seq order) */
    static const uint8_t chain[] = {K_GC, K_LN, K_EMB, K_RS, K_SEP, K_CLIP, K_OPT};
    int64_t prev = last_compute;
    for (size_t c = 0; c < sizeof chain; c++) {
        int64_t last = -1;
        for (int32_t seq = -1, more = 1; more; seq++) {
            more = 0;
            for (size_t i = 0; i < n; i++) {
                const mt_tl_op_t *x = &ops[g[i].op];
                if (b->ti[x->type].kind != chain[c])
                    continue;
                if (x->seq > seq)
                    more = 1;
                if (x->seq != seq)
                    continue;
                /* reduce-scatters already follow each other on their stream */
                if (chain[c] != K_RS || last < 0)
                    add_dep(b, g[i].op, last >= 0 ? last : prev);
                last = g[i].op;
            }
            if (seq > 1000000)
                break;
        }
        if (last >= 0)
            prev = last;
    }
    free(comp[0]);
    free(comp[1]);
    free(all);
    return 0;
}

mt_status_t mt_tl_job_build(const mt_timeline_t *tl, mt_tl_job_t **out)
{
    *out = NULL;
    if (tl->n_ops >= INT32_MAX)
        return MT_ERR_LIMIT;
    mt_status_t st = MT_ERR_NOMEM;
    mt_tl_job_t *j = calloc(1, sizeof *j);
    tinfo_t *ti = calloc(tl->n_types ? tl->n_types : 1, sizeof *ti);
    ord_t *ord = mt_big_malloc((tl->n_ops ? tl->n_ops : 1) * sizeof *ord);
    ikey_t *keys = mt_big_malloc((tl->n_ops ? tl->n_ops : 1) * sizeof *keys);
    bld_t b = {.tl = tl, .ti = ti};
    b.dep = mt_big_malloc((tl->n_ops ? tl->n_ops : 1) * 2 * sizeof *b.dep);
    b.valid_k = mt_big_malloc((tl->n_ops ? tl->n_ops : 1) * sizeof *b.valid_k);
    size_t *first = calloc(tl->n_ranks + 1, sizeof *first);
    int32_t *gact_of = mt_big_malloc((tl->n_ops ? tl->n_ops : 1) * sizeof *gact_of);
    if (!j || !ti || !ord || !keys || !b.dep || !b.valid_k || !first || !gact_of)
        goto out;
    /* a type's kind from its name and the track of its first operation */
    uint8_t *seen = calloc(tl->n_types ? tl->n_types : 1, 1);
    if (!seen)
        goto out;
    for (size_t i = 0; i < tl->n_ops; i++)
        if (!seen[tl->ops[i].type]) {
            seen[tl->ops[i].type] = 1;
            ti[tl->ops[i].type] = type_info(tl->types[tl->ops[i].type], tl->ops[i].track);
        }
    free(seen);
    for (size_t i = 0; i < tl->n_ops; i++) {
        const mt_tl_op_t *x = &tl->ops[i];
        ord[i] = (ord_t){x->step, x->start_ns, x->rank, (uint32_t)i};
        b.dep[2 * i] = b.dep[2 * i + 1] = -1;
        b.valid_k[i] = -1;
        first[x->rank + 1]++;
    }
    for (size_t r = 0; r < tl->n_ranks; r++)
        first[r + 1] += first[r];
    qsort(ord, tl->n_ops, sizeof *ord, ord_cmp);
    for (size_t a = 0; a < tl->n_ops;) {
        size_t e = a;
        while (e < tl->n_ops && ord[e].rank == ord[a].rank && ord[e].step == ord[a].step)
            e++;
        if (step_deps(&b, ord + a, e - a))
            goto out;
        a = e;
    }
    j->dropped_deps = b.dropped;
    /* ranks: activities (ops of a rank are consecutive, by start), steps */
    j->an = calloc(tl->n_ranks ? tl->n_ranks : 1, sizeof *j->an);
    j->coords = calloc(tl->n_ranks ? tl->n_ranks : 1, sizeof *j->coords);
    if (!j->an || !j->coords)
        goto out;
    for (size_t r = 0; r < tl->n_ranks; r++) {
        mt_rank_analysis_t *a = calloc(1, sizeof *a);
        if (!a)
            goto out;
        j->an[j->n_an++] = a;
        a->rank = tl->ranks[r].rank;
        j->coords[r] = (mt_cp_coord_t){tl->ranks[r].rank, tl->ranks[r].dp, tl->ranks[r].stage};
        size_t n = first[r + 1] - first[r];
        a->gacts = mt_big_malloc((n ? n : 1) * sizeof *a->gacts);
        a->gdeps = mt_big_malloc((n ? n : 1) * 2 * sizeof *a->gdeps);
        a->gstep = mt_big_malloc((n ? n : 1) * sizeof *a->gstep);
        if (!a->gacts || !a->gdeps || !a->gstep)
            goto out;
        mt_an_str_t *tname = calloc(tl->n_types ? tl->n_types : 1, sizeof *tname);
        uint32_t pp_stream[64];
        size_t n_pp = 0;
        if (!tname)
            goto out;
        for (size_t k = 0; k < n; k++) {
            size_t i = first[r] + k;
            const mt_tl_op_t *x = &tl->ops[i];
            gact_of[i] = (int32_t)k;
            if (!tname[x->type].len) {
                const char *s = tl->types[x->type];
                if (mt_an_string_add(a, s, mt_an_name_cut(s, strlen(s), MT_AN_NAME_MAX), &tname[x->type])) {
                    free(tname);
                    goto out;
                }
            }
            /* streams: compute 0, dp-comm 1, tp-comm 2, misc 3, each pp-comm type its own */
            uint32_t stream = x->track == MT_TL_COMPUTE ? 0
                              : x->track == MT_TL_DP_COMM ? 1
                              : x->track == MT_TL_TP_COMM ? 2
                              : x->track == MT_TL_MISC    ? 3
                                                          : 4;
            if (stream == 4) {
                size_t q = 0;
                while (q < n_pp && pp_stream[q] != x->type)
                    q++;
                if (q == n_pp && n_pp < 64)
                    pp_stream[n_pp++] = x->type;
                stream = 4 + (uint32_t)(q < 64 ? q : 63);
            }
            a->gacts[k] = (mt_an_gact_t){.start_ns = x->start_ns,
                                         .end_ns = x->end_ns,
                                         .launch_ns = -1,
                                         .launch_end_ns = -1,
                                         .name = tname[x->type],
                                         .stream = stream,
                                         .cls = ti[x->type].comm ? MT_AN_COMM : MT_AN_COMPUTE};
        }
        free(tname);
        a->n_gacts = n;
        /* steps of the rank, by start: ops are by start, so a step's first op gives it */
        size_t ns = 0, cap = 0;
        for (size_t k = 0; k < n; k++) {
            const mt_tl_op_t *x = &tl->ops[first[r] + k];
            size_t q = ns;
            while (q > 0 && a->steps[q - 1].step != x->step)
                q--;
            if (q == 0) {
                if (MT_GROW(a->steps, cap, ns + 1, 16))
                    goto out;
                a->steps[ns] = (mt_an_step_t){.step = x->step,
                                              .cpu_start_ns = x->start_ns,
                                              .cpu_end_ns = x->start_ns, /* no host time in a timeline */
                                              .end_ns = x->end_ns};
                q = ns++;
            } else {
                q--;
            }
            mt_an_step_t *s = &a->steps[q];
            if (x->end_ns > s->end_ns)
                s->end_ns = x->end_ns;
            if (x->track == MT_TL_COMPUTE)
                s->compute_ns += x->end_ns - x->start_ns;
            a->gstep[k] = (int32_t)q;
        }
        for (size_t q = 0; q < ns; q++) {
            mt_an_step_t *s = &a->steps[q];
            int64_t w = s->end_ns - s->cpu_start_ns;
            if (s->compute_ns > w)
                s->compute_ns = w;
            s->idle_ns = w - s->compute_ns;
        }
        a->n_steps = ns;
    }
    /* explicit dependencies as indices within the rank */
    for (size_t i = 0; i < tl->n_ops; i++) {
        mt_rank_analysis_t *a = j->an[tl->ops[i].rank];
        int32_t k = gact_of[i];
        for (int q = 0; q < 2; q++) {
            int32_t d = b.dep[2 * i + (size_t)q];
            a->gdeps[2 * (size_t)k + (size_t)q] = d >= 0 && tl->ops[d].rank == tl->ops[i].rank ? gact_of[d] : -1;
        }
    }
    /* instances */
    size_t nk = 0;
    for (size_t i = 0; i < tl->n_ops; i++) {
        const mt_tl_op_t *x = &tl->ops[i];
        const tinfo_t *t = &ti[x->type];
        const mt_tl_rank_t *R = &tl->ranks[x->rank];
        if (!t->comm)
            continue;
        uint64_t k1 = ((uint64_t)t->kind << 56) | ((uint64_t)x->type << 40) | ((uint64_t)x->step & 0xffffffffffull);
        uint64_t k2;
        if (t->kind == K_SEND || t->kind == K_RECV) {
            if (b.valid_k[i] < 0)
                continue;
            /* forward: stage s sends to s + 1; backward: to s - 1 */
            int32_t sender = t->kind == K_SEND ? R->stage : t->dir == 0 ? R->stage - 1 : R->stage + 1;
            k1 = ((uint64_t)(16 + t->dir) << 56) | ((uint64_t)x->step & 0xffffffffffull);
            k2 = pack3(R->dp * 4096 + R->tp, b.valid_k[i], sender);
        } else if (t->kind == K_CLIP) {
            k2 = pack3(0, 0, x->seq);
        } else if (t->kind == K_EMB) {
            k2 = pack3(R->dp, R->tp, x->seq);
        } else if (x->track == MT_TL_TP_COMM || t->kind == K_LN) {
            k2 = pack3(R->dp, R->stage, x->seq);
        } else {
            k2 = pack3(R->stage, R->tp, x->seq);
        }
        keys[nk++] = (ikey_t){k1, k2, (uint32_t)i, 0};
    }
    qsort(keys, nk, sizeof *keys, ikey_cmp);
    j->rows = calloc(nk ? nk : 1, sizeof *j->rows);
    j->match = calloc(1, sizeof *j->match);
    if (!j->rows || !j->match)
        goto out;
    size_t ng = 0;
    for (size_t a = 0; a < nk;) {
        size_t e = a;
        while (e < nk && keys[e].k1 == keys[a].k1 && keys[e].k2 == keys[a].k2)
            e++;
        ng += e - a >= 2;
        a = e;
    }
    j->match->first = malloc((ng + 1) * sizeof *j->match->first);
    j->match->members = malloc((nk ? nk : 1) * sizeof *j->match->members);
    j->match->key = calloc(ng ? ng : 1, 1);
    j->match->status = calloc(ng ? ng : 1, 1);
    j->match->expected = calloc(ng ? ng : 1, sizeof *j->match->expected);
    if (!j->match->first || !j->match->members || !j->match->key || !j->match->status || !j->match->expected)
        goto out;
    for (size_t a = 0; a < nk;) {
        size_t e = a;
        while (e < nk && keys[e].k1 == keys[a].k1 && keys[e].k2 == keys[a].k2)
            e++;
        if (e - a >= 2) {
            size_t ii = j->match->n_inst++;
            j->match->first[ii] = (uint32_t)j->n_rows;
            j->match->expected[ii] = (int32_t)(e - a);
            if ((keys[a].k1 >> 56) >= 16)
                j->p2p_pairs++;
            else
                j->collectives++;
            for (size_t q = a; q < e; q++) {
                const mt_tl_op_t *x = &tl->ops[keys[q].op];
                mt_cinst_t *row = &j->rows[j->n_rows];
                memset(row, 0, sizeof *row);
                row->start_ns = x->start_ns;
                row->end_ns = x->end_ns;
                row->launch_ns = -1;
                row->step = x->step;
                row->seq = x->seq;
                row->peer = -1;
                row->rank = tl->ranks[x->rank].rank;
                j->match->members[j->n_rows] = (uint32_t)j->n_rows;
                j->n_rows++;
            }
        }
        a = e;
    }
    j->match->first[j->match->n_inst] = (uint32_t)j->n_rows;
    *out = j;
    j = NULL;
    st = MT_OK;
out:
    mt_tl_job_free(j);
    free(ti);
    free(ord);
    free(keys);
    free(b.dep);
    free(b.valid_k);
    free(first);
    free(gact_of);
    return st;
}

mt_status_t mt_tl_job_critpath(const mt_tl_job_t *j, mt_critpath_t **out)
{
    mt_cp_request_t rq = {.warmup = 0, .ideal = true, .coords = j->coords, .n_coords = j->n_an};
    /* the job model's rows as the critical path reads them (mt_crow_t) */
    mt_crow_t *crows = malloc((j->n_rows ? j->n_rows : 1) * sizeof *crows);
    if (!crows)
        return MT_ERR_NOMEM;
    for (size_t i = 0; i < j->n_rows; i++)
        crows[i] = mt_crow_of(&j->rows[i]);
    mt_status_t st = mt_critpath_run(&rq, (const mt_rank_analysis_t *const *)j->an, j->n_an, NULL, NULL, 0, crows,
                                     j->n_rows, j->match, out);
    free(crows);
    return st;
}
