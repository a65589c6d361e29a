/* The critical path's whole-job statistics as reductions over the
 * processes (critpath.h mt_cp_dist_reduce; docs/ARCHITECTURE.md "Design
 * B", step 1): each process reads the ranks it loaded and sends per
 * (name, rank) sums and counts to the name's owner process, which works
 * out the straggler what-if's factors and the ideal what-if's typical
 * values; a comm name's median transfer comes from rounds of 2^16-bucket
 * count histograms summed over the processes. Process 0 gets the tables.
 *
 * Exchanges, in order: process 0's facts (the used steps, the stragglers,
 * the stages) broadcast; each process's rank list gathered on process 0,
 * which tells every process which holds each rank; the instance members'
 * transfers: with a sharded match, worked out by the instances' owners
 * with the holders of the members' ranks (step 2: the rows out, 24 bytes
 * a member, found or not back, 1 byte, the instance's last arrival back, 8
 * bytes), else process 0 sends each process its ranks' members (16 bytes
 * each); the (name, rank) records (48 bytes) to the names' owners; the
 * comm names gathered and broadcast; the histogram rounds; the owners'
 * results gathered on process 0. */
#include "cross/cp_dist.h"

#include <stdlib.h>
#include <string.h>

#include "align/clockmap.h"
#include "base/hash.h"
#include "base/sort.h"
#include "base/stats.h"
#include "cross/critpath_int.h"

/* Buckets of one histogram round: 16 bits of the value. */
#define HIST_BITS 16
#define HIST_N (1u << HIST_BITS)

/* One (name, rank): what its owner needs of the rank's activities of the
 * name. 48 bytes on the wire. */
typedef struct rec {
    uint64_t h;
    int32_t rank;
    uint8_t cls;          /* the class of its first activity (by index) in a used step */
    uint8_t pad_[3];
    int64_t s_sum;        /* compute and memory durations, every step (the straggler factors) */
    uint64_t s_cnt;
    int64_t i_sum;        /* values in used steps (the typical values) */
    uint64_t i_cnt;
} rec_t;
_Static_assert(sizeof(rec_t) == 48, "rec_t: 48 bytes a (name, rank) on the wire");

/* A comm name and how many values its median is over. */
typedef struct comm_name {
    uint64_t h;
    uint64_t n;
} comm_name_t;

/* A local value in a used step: the name's hash and the value. */
typedef struct hv {
    uint64_t h;
    int64_t v;
} hv_t;

/* Process 0's facts, as every process reads them after the broadcast. */
typedef struct facts {
    int64_t *used;        /* ascending */
    size_t n_used;
    int32_t *strag;       /* ascending */
    size_t n_strag;
    int32_t *st_rank;     /* (rank, stage) by rank, the last listing of a rank kept */
    int32_t *st_stage;
    size_t n_st;
    uint64_t n_stages;    /* the request's */
    bool lists;           /* the request gave stage lists */
    bool coords;          /* a timeline (rq->n_coords): typical values are means */
    bool want_strag, want_ideal;
} facts_t;

/* The communicator and what went through it. */
typedef struct xch {
    const mt_comm_t *c;
    uint64_t sent, recv;
} xch_t;

/* Collective: every process learns whether one failed (bad). MT_OK,
 * MT_ERR_NOMEM when some process failed, or comm's error. */
static mt_status_t agree(xch_t *x, bool bad)
{
    int64_t v = bad;
    mt_status_t st = x->c->allreduce_max(x->c->ctx, &v, 1);
    x->sent += 8;
    x->recv += 8;
    return st != MT_OK ? st : v ? MT_ERR_NOMEM : MT_OK;
}

static mt_status_t x_bcast(xch_t *x, void *buf, size_t len)
{
    if (x->c->rank == 0)
        x->sent += len * (size_t)(x->c->size - 1);
    else
        x->recv += len;
    return x->c->bcast(x->c->ctx, buf, len, 0);
}

static mt_status_t x_gatherv(xch_t *x, const void *send, size_t len, void **recv, size_t *recv_len)
{
    mt_status_t st = x->c->gatherv(x->c->ctx, send, len, recv, recv_len, 0);
    if (x->c->rank != 0)
        x->sent += len;
    else if (st == MT_OK)
        x->recv += *recv_len - len;
    return st;
}

static mt_status_t x_alltoallv(xch_t *x, const void *send, const size_t *send_lens, void **recv, size_t *recv_lens)
{
    mt_status_t st = x->c->alltoallv(x->c->ctx, send, send_lens, recv, recv_lens);
    for (int q = 0; q < x->c->size; q++)
        if (q != x->c->rank) {
            x->sent += send_lens[q];
            x->recv += st == MT_OK ? recv_lens[q] : 0;
        }
    return st;
}

/* Collective: v[0..n) summed element-wise over the processes, in place
 * (n the same everywhere): each process sums one block of the vector
 * (one alltoallv), then every process gets every block (another). The
 * table has no sum of its own; this moves 2 (P - 1) / P of v each way. */
static mt_status_t sum_u32(xch_t *x, uint32_t *v, size_t n)
{
    const int P = x->c->size, me = x->c->rank;
    if (P == 1)
        return MT_OK;
    size_t *lens = malloc(2 * (size_t)P * sizeof *lens);
    mt_status_t st = agree(x, !lens);
    if (st != MT_OK) {
        free(lens);
        return st;
    }
    size_t *rl = lens + P;
#define BLK(q) ((size_t)(q) * n / (size_t)P)
    for (int q = 0; q < P; q++)
        lens[q] = (BLK(q + 1) - BLK(q)) * sizeof *v;
    void *got = NULL;
    st = x_alltoallv(x, v, lens, &got, rl);
    if (st == MT_OK) {
        /* my block, once from each process, in process order */
        size_t m = BLK(me + 1) - BLK(me);
        const uint32_t *g = got;
        uint32_t *mine = v + BLK(me);
        memset(mine, 0, m * sizeof *mine);
        for (int q = 0; q < P; q++)
            for (size_t i = 0; i < m; i++)
                mine[i] += g[(size_t)q * m + i];
        free(got);
        got = NULL;
        /* the same block to everyone: a send buffer of P copies */
        uint32_t *rep = malloc((m ? m : 1) * (size_t)P * sizeof *rep);
        st = agree(x, !rep);
        if (st == MT_OK) {
            for (int q = 0; q < P; q++) {
                memcpy(rep + (size_t)q * m, mine, m * sizeof *rep);
                lens[q] = m * sizeof *rep;
            }
            st = x_alltoallv(x, rep, lens, &got, rl);
        }
        free(rep);
        if (st == MT_OK) /* every block, in process order: the vector */
            memcpy(v, got, n * sizeof *v);
    }
#undef BLK
    free(got);
    free(lens);
    return st;
}

/* ---- a byte writer and reader for the broadcast facts ---- */

typedef struct wbuf {
    unsigned char *p;
    size_t len, cap;
    bool bad;
} wbuf_t;

static void put(wbuf_t *b, const void *src, size_t len)
{
    if (b->bad || !len)
        return;
    if (b->len + len > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + len)
            cap *= 2;
        unsigned char *q = realloc(b->p, cap);
        if (!q) {
            b->bad = true;
            return;
        }
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->len, src, len);
    b->len += len;
}

static void put_u64(wbuf_t *b, uint64_t v)
{
    put(b, &v, sizeof v);
}

typedef struct rbuf {
    const unsigned char *p;
    size_t len, at;
} rbuf_t;

static const void *take(rbuf_t *b, size_t len)
{
    if (b->len - b->at < len)
        return NULL;
    const void *q = b->p + b->at;
    b->at += len;
    return q;
}

static bool take_u64(rbuf_t *b, uint64_t *v)
{
    const void *q = take(b, sizeof *v);
    if (q)
        memcpy(v, q, sizeof *v);
    return q != NULL;
}

static int cmp_i32(const void *pa, const void *pb)
{
    int32_t a = *(const int32_t *)pa, b = *(const int32_t *)pb;
    return (a > b) - (a < b);
}

/* Process 0: in as bytes. */
static void facts_pack(const mt_cp_dist_in_t *in, wbuf_t *b)
{
    const mt_cp_request_t *rq = in->rq;
    put_u64(b, in->n_used);
    put(b, in->used_steps, in->n_used * sizeof *in->used_steps);
    put_u64(b, rq->n_stragglers);
    put(b, rq->stragglers, rq->n_stragglers * sizeof *rq->stragglers);
    bool lists = rq->stage_ranks && rq->stage_first;
    put_u64(b, rq->n_stages);
    put_u64(b, lists);
    if (lists) {
        /* (rank, stage) in listing order: the reader keeps a rank's last */
        put_u64(b, rq->stage_first[rq->n_stages]);
        for (size_t s = 0; s < rq->n_stages; s++)
            for (size_t q = rq->stage_first[s]; q < rq->stage_first[s + 1]; q++) {
                int32_t rs[2] = {rq->stage_ranks[q], (int32_t)s};
                put(b, rs, sizeof rs);
            }
    }
    put_u64(b, rq->n_coords > 0);
    put_u64(b, rq->n_stragglers > 0);
    put_u64(b, rq->ideal);
}

static void facts_free(facts_t *f)
{
    free(f->used);
    free(f->strag);
    free(f->st_rank);
    free(f->st_stage);
    memset(f, 0, sizeof *f);
}

typedef struct st_pair {
    int32_t rank, stage;
    uint32_t seq;
} st_pair_t;

static int st_pair_cmp(const void *pa, const void *pb)
{
    const st_pair_t *a = pa, *b = pb;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    return (a->seq > b->seq) - (a->seq < b->seq);
}

/* Every process: the facts from their bytes. 0, or -1 (out of memory,
 * bytes short). */
static int facts_read(const void *bytes, size_t len, facts_t *f)
{
    memset(f, 0, sizeof *f);
    rbuf_t b = {bytes, len, 0};
    uint64_t n, v;
    const void *q;
    if (!take_u64(&b, &n) || !(q = take(&b, n * sizeof *f->used)) || !(f->used = malloc((n ? n : 1) * sizeof *f->used)))
        return -1;
    memcpy(f->used, q, n * sizeof *f->used);
    f->n_used = n;
    if (!take_u64(&b, &n) || !(q = take(&b, n * sizeof *f->strag)) ||
        !(f->strag = malloc((n ? n : 1) * sizeof *f->strag)))
        return -1;
    memcpy(f->strag, q, n * sizeof *f->strag);
    f->n_strag = n;
    qsort(f->strag, f->n_strag, sizeof *f->strag, cmp_i32);
    if (!take_u64(&b, &f->n_stages) || !take_u64(&b, &v))
        return -1;
    f->lists = v != 0;
    if (f->lists) {
        if (!take_u64(&b, &n) || !(q = take(&b, n * 2 * sizeof(int32_t))))
            return -1;
        st_pair_t *pr = malloc((n ? n : 1) * sizeof *pr);
        f->st_rank = malloc((n ? n : 1) * sizeof *f->st_rank);
        f->st_stage = malloc((n ? n : 1) * sizeof *f->st_stage);
        if (!pr || !f->st_rank || !f->st_stage) {
            free(pr);
            return -1;
        }
        for (size_t k = 0; k < n; k++) {
            int32_t rs[2];
            memcpy(rs, (const char *)q + k * sizeof rs, sizeof rs);
            pr[k] = (st_pair_t){rs[0], rs[1], (uint32_t)k};
        }
        qsort(pr, n, sizeof *pr, st_pair_cmp);
        for (size_t k = 0; k < n; k++) {
            if (k + 1 < n && pr[k + 1].rank == pr[k].rank)
                continue; /* a later listing of the rank wins (as the graph's loops over the stages) */
            f->st_rank[f->n_st] = pr[k].rank;
            f->st_stage[f->n_st++] = pr[k].stage;
        }
        free(pr);
    }
    if (!take_u64(&b, &v))
        return -1;
    f->coords = v != 0;
    if (!take_u64(&b, &v))
        return -1;
    f->want_strag = v != 0;
    if (!take_u64(&b, &v))
        return -1;
    f->want_ideal = v != 0;
    return 0;
}

/* The stage of rank r (the request's lists), -1 none. */
static int32_t stage_of(const facts_t *f, int32_t r)
{
    size_t lo = mt_lower_bound_i32(f->st_rank, f->n_st, sizeof *f->st_rank, r);
    return lo < f->n_st && f->st_rank[lo] == r ? f->st_stage[lo] : -1;
}

static bool named(const facts_t *f, int32_t r)
{
    return bsearch(&r, f->strag, f->n_strag, sizeof *f->strag, cmp_i32) != NULL;
}

static bool step_used(const facts_t *f, int64_t step)
{
    size_t lo = mt_lower_bound_i64(f->used, f->n_used, sizeof *f->used, step);
    return lo < f->n_used && f->used[lo] == step;
}

static int an_cmp(const void *pa, const void *pb)
{
    const mt_rank_analysis_t *a = *(const mt_rank_analysis_t *const *)pa, *b = *(const mt_rank_analysis_t *const *)pb;
    return (a->rank > b->rank) - (a->rank < b->rank);
}

/* ---- the local pass: this process's ranks ---- */

typedef struct local {
    rec_t *recs;          /* then sorted by owner */
    size_t n_recs, cap_recs;
    hv_t *vals;           /* values in used steps, for the comm medians */
    size_t n_vals, cap_vals;
} local_t;

/* A name's place in a rank's string pool and its number on the rank (the
 * names in the order they come; scratch_t.nh, its hash). */
typedef struct name_memo {
    uint32_t off, len;
    uint32_t id;
    bool set;
} name_memo_t;

/* Scratch for one rank, sized for the largest. */
typedef struct scratch {
    name_memo_t memo[CP_NAME_MEMO]; /* cleared for each rank (its own pool), probed linearly */
    uint32_t mslot[CP_NAME_MEMO / 2]; /* the memo's slots set, to clear those alone */
    uint32_t n_mslot;
    uint64_t nh[CP_NAME_MEMO / 2];  /* by a name's number: its hash, then (sorted) by its key */
    uint32_t nperm[CP_NAME_MEMO / 2], nkey[CP_NAME_MEMO / 2];
    uint64_t *key;
    uint32_t *perm;
    int64_t *dur, *val;
    uint8_t *flag;        /* bit 0 in a used step; bits 1..: the class */
    uint64_t *skey;       /* the rank's steps: by number, to find each number's first */
    uint32_t *sperm;
    uint8_t *sok;
} scratch_t;

static int grow(void **arr, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 1024;
    while (c < need)
        c *= 2;
    void *p = realloc(*arr, c * size);
    if (!p)
        return -1;
    *arr = p;
    *cap = c;
    return 0;
}

/* Rank a's (name, rank) records and its used values into L; m[0..nm) its
 * instance members by index. 0, or -1 out of memory. */
static int local_rank(const facts_t *f, const mt_rank_analysis_t *a, const mt_clock_t *clk, const mt_cp_member_t *m,
                      size_t nm, scratch_t *x, local_t *L)
{
    const mt_clock_map_t map = mt_clock_map(clk);
    /* the last rank's slots cleared (a few: the whole memo is 16 KiB a rank) */
    for (uint32_t i = 0; i < x->n_mslot; i++)
        x->memo[x->mslot[i]] = (name_memo_t){0};
    x->n_mslot = 0;
    /* the rank steps that count: the first of each step number on the
     * rank (the graph's job steps keep that one) in a used step */
    for (size_t k = 0; k < a->n_steps; k++) {
        x->skey[k] = mt_sort_key_i64(a->steps[k].step);
        x->sperm[k] = (uint32_t)k;
    }
    if (mt_sort_u64(x->skey, x->sperm, a->n_steps) != MT_OK)
        return -1;
    for (size_t k = 0; k < a->n_steps; k++) {
        uint32_t i = x->sperm[k];
        x->sok[i] = (k == 0 || x->skey[k] != x->skey[k - 1]) && step_used(f, a->steps[i].step);
    }
    size_t hint = cp_step_hint0(a), mi = 0;
    /* the activities by their name's number on the rank (few: a name
     * repeats as the same offset into the rank's pool), each number's hash
     * found once; the numbers become keys in the hashes' order below, so
     * that the sort by key is by hash in one or two passes over the
     * activities where the hashes took six. A rank with more names than
     * the table holds keys its activities by the hashes themselves. */
    uint32_t n_names = 0;
    bool by_num = true;
    for (size_t k = 0; k < a->n_gacts; k++) {
        const mt_an_gact_t *g = &a->gacts[k];
        int64_t s = mt_clock_map_apply(&map, g->start_ns), e = mt_clock_map_apply(&map, g->end_ns);
        if (e < s)
            e = s;
        long rstep;
        if (a->gstep)
            rstep = a->gstep[k] >= 0 && (size_t)a->gstep[k] < a->n_steps ? a->gstep[k] : -1;
        else
            rstep = cp_rank_step_of(a, g->launch_ns >= 0 ? g->launch_ns : g->start_ns, &hint);
        while (mi < nm && m[mi].index < k)
            mi++;
        int64_t v = e - s;
        if (mi < nm && m[mi].index == k) /* an instance member: its transfer */
            v = m[mi].transfer > 0 ? m[mi].transfer : 0;
        const char *name = a->strings ? a->strings + g->name.off : "";
        if (by_num) {
            size_t slot = (g->name.off * 2654435761u >> 7) & (CP_NAME_MEMO - 1);
            while (x->memo[slot].set && (x->memo[slot].off != g->name.off || x->memo[slot].len != g->name.len))
                slot = (slot + 1) & (CP_NAME_MEMO - 1);
            name_memo_t *nm_ = &x->memo[slot];
            if (!nm_->set && n_names == CP_NAME_MEMO / 2) { /* full: by hash from here on */
                for (size_t j = 0; j < k; j++)
                    x->key[j] = x->nh[x->key[j]];
                by_num = false;
            } else {
                if (!nm_->set) {
                    *nm_ = (name_memo_t){g->name.off, g->name.len, n_names, true};
                    x->mslot[x->n_mslot++] = (uint32_t)slot;
                    x->nh[n_names++] = mt_hash64(name, g->name.len, CP_NAME_SEED);
                }
                x->key[k] = nm_->id;
            }
        }
        if (!by_num)
            x->key[k] = mt_hash64(name, g->name.len, CP_NAME_SEED);
        x->perm[k] = (uint32_t)k;
        x->dur[k] = e - s;
        x->val[k] = v;
        x->flag[k] = (uint8_t)((rstep >= 0 && x->sok[rstep]) | (g->cls << 1));
    }
    if (by_num) {
        /* a number's key: its hash's place among the rank's distinct
         * hashes (two places in the pool may hold one name); nh then holds
         * the hashes by key */
        for (uint32_t i = 0; i < n_names; i++)
            x->nperm[i] = i;
        if (mt_sort_u64(x->nh, x->nperm, n_names) != MT_OK)
            return -1;
        uint32_t nk = 0;
        for (uint32_t i = 0; i < n_names; i++) {
            if (i && x->nh[i] != x->nh[i - 1])
                x->nh[++nk] = x->nh[i];
            x->nkey[x->nperm[i]] = nk;
        }
        for (size_t k = 0; k < a->n_gacts; k++)
            x->key[k] = x->nkey[x->key[k]];
    }
    /* by (hash, index): the radix sort is stable */
    if (mt_sort_u64(x->key, x->perm, a->n_gacts) != MT_OK)
        return -1;
    for (size_t p = 0; p < a->n_gacts;) {
        size_t q = p;
        rec_t r = {.h = by_num ? x->nh[x->key[p]] : x->key[p], .rank = a->rank};
        bool seen = false;
        for (; q < a->n_gacts && x->key[q] == x->key[p]; q++) {
            uint32_t k = x->perm[q];
            uint8_t cls = x->flag[k] >> 1;
            if (cls != MT_AN_COMM) {
                r.s_sum += x->dur[k];
                r.s_cnt++;
            }
            if (!(x->flag[k] & 1) || !f->want_ideal)
                continue;
            if (!seen)
                r.cls = cls;
            seen = true;
            r.i_sum += x->val[k];
            r.i_cnt++;
            if (grow((void **)&L->vals, &L->cap_vals, L->n_vals + 1, sizeof *L->vals))
                return -1;
            L->vals[L->n_vals++] = (hv_t){r.h, x->val[k]};
        }
        if (!f->want_strag)
            r.s_sum = 0, r.s_cnt = 0;
        if (r.s_cnt || r.i_cnt) {
            if (grow((void **)&L->recs, &L->cap_recs, L->n_recs + 1, sizeof *L->recs))
                return -1;
            L->recs[L->n_recs++] = r;
        }
        p = q;
    }
    return 0;
}

static int rec_cmp(const void *pa, const void *pb)
{
    const rec_t *a = pa, *b = pb;
    if (a->h != b->h)
        return a->h < b->h ? -1 : 1;
    return (a->rank > b->rank) - (a->rank < b->rank);
}

static int owner_of(uint64_t h, int P)
{
    return (int)(h % (uint64_t)P);
}

/* ---- the owners ---- */

typedef struct owned {
    cp_dist_typ_t *typ;
    size_t n_typ;
    cp_dist_fac_t *fac;
    size_t n_fac, cap_fac;
    comm_name_t *comm;
    size_t n_comm;
} owned_t;

/* The owner's results from its records r[0..n) (sorted by (h, rank)).
 * 0, or -1 out of memory. */
static int owner_work(const facts_t *f, const rec_t *r, size_t n, owned_t *o)
{
    size_t nmax = 1, nh = 0;
    for (size_t a = 0; a < n;) {
        size_t b = a;
        while (b < n && r[b].h == r[a].h)
            b++;
        nmax = b - a > nmax ? b - a : nmax;
        nh++;
        a = b;
    }
    double *means = malloc(nmax * sizeof *means), *tmp = malloc(nmax * sizeof *tmp);
    int64_t *iv = malloc(nmax * sizeof *iv);
    int32_t *ist = malloc(nmax * sizeof *ist);
    const size_t nst = f->coords ? 0 : (size_t)f->n_stages;
    int64_t *sc = malloc((nmax + 2 * nst + 1) * sizeof *sc);
    o->typ = malloc(nh * sizeof *o->typ + 1);
    o->comm = malloc(nh * sizeof *o->comm + 1);
    int ret = -1;
    if (!means || !tmp || !iv || !ist || !sc || !o->typ || !o->comm)
        goto out;
    const bool staged = f->n_stages >= 2 && f->lists; /* the straggler what-if's stages */
    for (size_t a = 0; a < n;) {
        size_t b = a;
        while (b < n && r[b].h == r[a].h)
            b++;
        /* straggler factors: the median over ranks of each rank's mean
         * (cp_run.c straggler_factors) */
        size_t nr = 0;
        for (size_t k = a; k < b; k++)
            if (r[k].s_cnt)
                means[nr++] = (double)r[k].s_sum / (double)r[k].s_cnt;
        bool any = false;
        for (size_t k = a; k < b && nr >= 2; k++)
            any |= r[k].s_cnt && named(f, r[k].rank);
        if (any) {
            memcpy(tmp, means, nr * sizeof *tmp);
            double med = mt_stats_median_f64(tmp, nr);
            for (size_t k = a, qi = 0; k < b; k++) {
                if (!r[k].s_cnt)
                    continue;
                size_t q = qi++;
                if (!named(f, r[k].rank))
                    continue;
                double mq = med;
                int32_t sq = staged ? stage_of(f, r[k].rank) : -1;
                if (sq >= 0) {
                    /* the stage's ranks not named; all of them when every
                     * one is (cp_run.c says why) */
                    size_t ns = 0, nall = 0;
                    for (size_t x = a, xi = 0; x < b; x++) {
                        if (!r[x].s_cnt)
                            continue;
                        size_t xq = xi++;
                        if (stage_of(f, r[x].rank) != sq)
                            continue;
                        nall++;
                        if (!named(f, r[x].rank))
                            tmp[ns++] = means[xq];
                    }
                    if (ns >= 1) {
                        mq = mt_stats_median_f64(tmp, ns);
                    } else if (nall >= 2) {
                        for (size_t x = a, xi = 0; x < b; x++) {
                            if (!r[x].s_cnt)
                                continue;
                            size_t xq = xi++;
                            if (stage_of(f, r[x].rank) == sq)
                                tmp[ns++] = means[xq];
                        }
                        mq = mt_stats_median_f64(tmp, ns);
                    }
                }
                if (!(means[q] > mq))
                    continue;
                if (grow((void **)&o->fac, &o->cap_fac, o->n_fac + 1, sizeof *o->fac))
                    goto out;
                o->fac[o->n_fac++] = (cp_dist_fac_t){.h = r[a].h, .rank = r[k].rank, .f = mq / means[q]};
            }
        }
        /* typical values (cp_ideal.c): the class of the name's first
         * activity in a used step, by (rank, index) */
        size_t first = b;
        uint64_t cnt = 0;
        int64_t sum = 0;
        for (size_t k = a; k < b; k++)
            if (r[k].i_cnt) {
                first = first < b ? first : k;
                cnt += r[k].i_cnt;
                sum += r[k].i_sum;
            }
        if (first < b) {
            if (r[first].cls == MT_AN_COMM) {
                o->comm[o->n_comm++] = (comm_name_t){r[a].h, cnt};
            } else if (f->coords) {
                /* a timeline: the mean (integer sums below 2^53 are exact
                 * as doubles, so this is the graph's sum in node order) */
                o->typ[o->n_typ++] = (cp_dist_typ_t){r[a].h, (int64_t)((double)sum / (double)cnt + 0.5)};
            } else {
                /* a Kineto job: the (staged) median over ranks of each rank's mean */
                size_t ni = 0;
                for (size_t k = a; k < b; k++)
                    if (r[k].i_cnt) {
                        iv[ni] = (int64_t)((double)r[k].i_sum / (double)r[k].i_cnt + 0.5);
                        ist[ni++] = f->lists ? stage_of(f, r[k].rank) : -1;
                    }
                o->typ[o->n_typ++] = (cp_dist_typ_t){r[a].h, cp_staged_median(iv, ist, ni, nst, sc)};
            }
        }
        a = b;
    }
    ret = 0;
out:
    free(means);
    free(tmp);
    free(iv);
    free(ist);
    free(sc);
    return ret;
}

/* ---- the comm names' medians ---- */

/* One order statistic being found: the k-th smallest (0-based) of a comm
 * name's values; pre, the bits of it above the current round's. */
typedef struct target {
    size_t name;          /* index into the comm names */
    uint64_t k, pre;
    int hist;             /* this round's histogram, -1 */
} target_t;

/* Collective: each comm name's median over every process's values
 * (v[0..nv), by h: this process's values of those names) into med[]
 * (every process). The k-th value is found 16 bits a round from the top:
 * per target a histogram of the next 16 bits among the values that share
 * the bits found so far, summed over the processes; the bucket where the
 * count passes k gives those bits. The lower and upper middle of an even
 * count share a histogram while their bits agree. */
static mt_status_t comm_medians(xch_t *x, const comm_name_t *cn, size_t nc, const hv_t *v, size_t nv, int64_t *med,
                                unsigned *rounds)
{
    int64_t top = 0;
    for (size_t i = 0; i < nv; i++)
        top = v[i].v > top ? v[i].v : top;
    mt_status_t st = x->c->allreduce_max(x->c->ctx, &top, 1);
    x->sent += 8;
    x->recv += 8;
    if (st != MT_OK)
        return st;
    unsigned bits = 0;
    while (bits < 64 && ((uint64_t)top >> bits))
        bits++;
    unsigned R = bits ? (bits + HIST_BITS - 1) / HIST_BITS : 1;
    *rounds = R;
    size_t *lo = malloc((nc ? nc : 1) * sizeof *lo);
    target_t *t = malloc(2 * (nc ? nc : 1) * sizeof *t);
    uint32_t *hist = malloc(2 * (nc ? nc : 1) * (size_t)HIST_N * sizeof *hist);
    st = agree(x, !lo || !t || !hist);
    if (st != MT_OK)
        goto out;
    size_t nt = 0;
    for (size_t c = 0; c < nc; c++) {
        lo[c] = mt_lower_bound_u64(v, nv, sizeof *v, cn[c].h);
        t[nt++] = (target_t){c, cn[c].n / 2, 0, -1};
        if (cn[c].n % 2 == 0)
            t[nt++] = (target_t){c, cn[c].n / 2 - 1, 0, -1};
    }
    for (unsigned r = 0; r < R; r++) {
        unsigned sh = HIST_BITS * (R - 1 - r);
        /* the histograms of this round: one per distinct (name, pre) */
        int nh = 0;
        for (size_t i = 0; i < nt; i++) {
            t[i].hist = -1;
            if (i > 0 && t[i - 1].name == t[i].name && t[i - 1].pre == t[i].pre)
                t[i].hist = t[i - 1].hist;
            else
                t[i].hist = nh++;
        }
        memset(hist, 0, (size_t)nh * HIST_N * sizeof *hist);
        for (size_t i = 0; i < nt; i++) {
            if (i > 0 && t[i].hist == t[i - 1].hist)
                continue;
            uint32_t *hh = hist + (size_t)t[i].hist * HIST_N;
            uint64_t h = cn[t[i].name].h;
            for (size_t j = lo[t[i].name]; j < nv && v[j].h == h; j++) {
                uint64_t u = (uint64_t)v[j].v;
                /* the bits above this round's must be those found */
                if (sh + HIST_BITS < 64 && (u >> (sh + HIST_BITS)) != t[i].pre)
                    continue;
                hh[(u >> sh) & (HIST_N - 1)]++;
            }
        }
        if ((st = sum_u32(x, hist, (size_t)nh * HIST_N)) != MT_OK)
            goto out;
        for (size_t i = 0; i < nt; i++) {
            const uint32_t *hh = hist + (size_t)t[i].hist * HIST_N;
            uint64_t below = 0;
            uint32_t bk = 0;
            for (; bk < HIST_N - 1 && below + hh[bk] <= t[i].k; bk++)
                below += hh[bk];
            t[i].k -= below;
            t[i].pre = (t[i].pre << HIST_BITS) | bk;
        }
    }
    for (size_t i = 0; i < nt; i++) {
        size_t c = t[i].name;
        int64_t hi = (int64_t)t[i].pre;
        if (cn[c].n % 2) {
            med[c] = hi;
        } else { /* as mt_stats_median_i64: (lo + hi) / 2 */
            int64_t lov = (int64_t)t[i + 1].pre;
            med[c] = (lov + hi) / 2;
            i++;
        }
    }
out:
    free(lo);
    free(t);
    free(hist);
    return st;
}

static int hv_cmp(const void *pa, const void *pb)
{
    const hv_t *a = pa, *b = pb;
    return (a->h > b->h) - (a->h < b->h);
}

/* Keep of v[0..n) the values of the names in cn[0..nc) (ascending by h,
 * as comm_cmp sorts them), by h, equal hashes in their order (comm_medians
 * does not depend on it: it counts a name's values); returns how many are
 * kept. Each value's place in cn is its key: a stable radix sort
 * (mt_sort_u64) of those few bits, and the values permuted after, where
 * qsort by h took log2(n) of comparator calls (half of the critical path's
 * reduction on the 256-rank job). qsort and a merge when the memory for
 * that is missing. */
static size_t hv_keep(hv_t *v, size_t n, const comm_name_t *cn, size_t nc)
{
    if (!n)
        return 0;
    uint64_t *key = n <= UINT32_MAX ? malloc(n * sizeof *key) : NULL;
    uint32_t *perm = key ? malloc(n * sizeof *perm) : NULL;
    size_t w = 0;
    if (perm) {
        size_t lo = nc;
        uint64_t last = 0;
        for (size_t i = 0; i < n; i++) {
            /* a rank's values come by name: one search a run of a hash */
            if (i == 0 || v[i].h != last)
                lo = mt_lower_bound_u64(cn, nc, sizeof *cn, last = v[i].h);
            if (lo < nc && cn[lo].h == v[i].h) {
                key[w] = lo;
                perm[w] = (uint32_t)w;
                v[w++] = v[i];
            }
        }
        if (mt_sort_u64(key, perm, w) == MT_OK) {
            mt_sort_permute(v, sizeof *v, perm, w);
            free(key);
            free(perm);
            return w;
        }
        /* v[0..w) kept, in their order: sorted by h below, as the rest */
        n = w;
    }
    free(key);
    free(perm);
    qsort(v, n, sizeof *v, hv_cmp);
    w = 0;
    for (size_t i = 0, c = 0; i < n; i++) {
        while (c < nc && cn[c].h < v[i].h)
            c++;
        if (c < nc && cn[c].h == v[i].h)
            v[w++] = v[i];
    }
    return w;
}

static int typ_cmp(const void *pa, const void *pb)
{
    const cp_dist_typ_t *a = pa, *b = pb;
    return (a->h > b->h) - (a->h < b->h);
}

static int fac_cmp(const void *pa, const void *pb)
{
    const cp_dist_fac_t *a = pa, *b = pb;
    if (a->h != b->h)
        return a->h < b->h ? -1 : 1;
    return (a->rank > b->rank) - (a->rank < b->rank);
}

static int comm_cmp(const void *pa, const void *pb)
{
    const comm_name_t *a = pa, *b = pb;
    return (a->h > b->h) - (a->h < b->h);
}

/* ---- who holds each rank, and the instance members ---- */

/* A rank and the process that holds it. */
typedef struct rp {
    int32_t rank;
    int32_t proc;
} rp_t;

static int rp_cmp(const void *pa, const void *pb)
{
    const rp_t *a = pa, *b = pb;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    /* process 0 after the others */
    unsigned x = (unsigned)a->proc - 1u, y = (unsigned)b->proc - 1u;
    return (x > y) - (x < y);
}

/* Process 0: which process holds each rank, from pr[0..) the processes'
 * ranks (cnt[q] of process q's, in process order): the first process to
 * list it but process 0, which holds every rank's analysis once gathered
 * (the program passes them all: its own are those no other process has);
 * process 0 when only it lists the rank. Into *out (by rank, one a rank).
 * 0, or -1 out of memory. */
static int holders_of(const int32_t *pr, const uint64_t *cnt, int P, rp_t **out, size_t *n_out)
{
    size_t n = 0;
    for (int q = 0; q < P; q++)
        n += cnt[q];
    rp_t *v = malloc((n ? n : 1) * sizeof *v);
    if (!v)
        return -1;
    for (int q = 0, i = 0; q < P; q++)
        for (uint64_t k = 0; k < cnt[q]; k++, i++)
            v[i] = (rp_t){pr[i], q};
    qsort(v, n, sizeof *v, rp_cmp);
    size_t w = 0;
    for (size_t i = 0; i < n; i++)
        if (!w || v[w - 1].rank != v[i].rank)
            v[w++] = v[i];
    *out = v;
    *n_out = w;
    return 0;
}

/* mt_lower_bound_i32 of rank r in v[0..n) (ascending ranks, each the
 * first field of its item): r's place first tried as if the ranks ran
 * from v[0]'s without a gap, the common case (fast path: a binary search
 * per member row was 11.5 M instructions of the reduction on the 256-rank
 * job); the same answer, since only the first of equal ranks is taken. */
static inline size_t rank_lb(const void *v, size_t n, size_t stride, int32_t r)
{
    const unsigned char *b = v;
    int32_t r0, a, p = INT32_MIN;
    if (n) {
        memcpy(&r0, b, sizeof r0);
        int64_t q = (int64_t)r - r0;
        if (q >= 0 && (uint64_t)q < n) {
            memcpy(&a, b + (size_t)q * stride, sizeof a);
            if (q > 0)
                memcpy(&p, b + (size_t)(q - 1) * stride, sizeof p);
            if (a == r && p < r)
                return (size_t)q;
        }
    }
    return mt_lower_bound_i32(v, n, stride, r);
}

/* The process holding rank r (h[0..n) by rank), -1 none. */
static int holder(const rp_t *h, size_t n, int32_t r)
{
    size_t lo = rank_lb(h, n, sizeof *h, r);
    return lo < n && h[lo].rank == r ? h[lo].proc : -1;
}

/* Collective: process 0's members (in->members, else in->members_of, else
 * none) sent to the processes holding their ranks, 16 bytes each; this
 * process's into *out (by rank, index; malloc'd by the exchange). */
static mt_status_t members_from0(xch_t *x, const mt_cp_dist_in_t *in, const rp_t *h, size_t nh,
                                 mt_cp_member_t **out, size_t *n_out)
{
    const int P = x->c->size;
    *out = NULL;
    *n_out = 0;
    size_t *lens = calloc(2 * (size_t)P, sizeof *lens), *at = NULL;
    mt_cp_member_t *made = NULL, *blk = NULL;
    const mt_cp_member_t *m = NULL;
    size_t nm = 0;
    bool bad = !lens;
    if (!bad && x->c->rank == 0) {
        if (in->members) {
            m = in->members;
            nm = in->n_members;
        } else if (in->members_of) {
            bad = in->members_of(in->members_ctx, &made, &nm) != MT_OK;
            m = made;
        }
        /* by holder, in their order (by rank, index): a counting sort
         * into one buffer (process 0 holds the job's members once more,
         * not twice) */
        at = bad ? NULL : calloc((size_t)P + 1, sizeof *at);
        blk = at ? malloc((nm ? nm : 1) * sizeof *blk) : NULL;
        bad = bad || !blk;
        /* the members come by rank: one look-up a rank, not a member */
        int32_t last_r = 0;
        int last_q = -1;
        bool have = false;
        for (size_t i = 0; !bad && i < nm; i++) {
            if (!have || m[i].rank != last_r) {
                last_r = m[i].rank;
                last_q = holder(h, nh, last_r);
                have = true;
            }
            if (last_q >= 0)
                at[last_q + 1]++;
        }
        for (int q = 0; !bad && q < P; q++) {
            lens[q] = at[q + 1] * sizeof *blk;
            at[q + 1] += at[q];
        }
        have = false;
        for (size_t i = 0; !bad && i < nm; i++) {
            if (!have || m[i].rank != last_r) {
                last_r = m[i].rank;
                last_q = holder(h, nh, last_r);
                have = true;
            }
            if (last_q >= 0)
                blk[at[last_q]++] = m[i];
        }
        free(made);
        free(at);
    }
    mt_status_t st = agree(x, bad);
    void *rb = NULL;
    if (st == MT_OK)
        st = x_alltoallv(x, blk ? (const void *)blk : (const void *)"", lens, &rb, lens + P);
    free(blk);
    if (st == MT_OK) {
        *out = rb;
        *n_out = lens[P] / sizeof **out; /* process 0's block: the only sender */
        rb = NULL;
    }
    free(rb);
    free(lens);
    return st;
}

/* The clock maps by rank (the first of ranks[] to name a rank, as
 * cp_clock_of; a rank not there: the identity), sorted once: cp_clock_of
 * scans ranks[] at every call. */
typedef struct clk_tab {
    rp_t *v;              /* (rank, index into clocks) by rank, one a rank */
    mt_clock_map_t *map;  /* by v */
    size_t n;
    mt_clock_map_t none;
} clk_tab_t;

static int ri_cmp(const void *pa, const void *pb)
{
    const rp_t *a = pa, *b = pb;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    return (a->proc > b->proc) - (a->proc < b->proc);
}

static int clk_tab_make(clk_tab_t *t, const mt_clock_t *clocks, const int32_t *ranks, size_t n)
{
    memset(t, 0, sizeof *t);
    t->none = mt_clock_map(NULL);
    n = clocks ? n : 0;
    t->v = malloc((n ? n : 1) * sizeof *t->v);
    t->map = malloc((n ? n : 1) * sizeof *t->map);
    if (!t->v || !t->map)
        return -1;
    for (size_t i = 0; i < n; i++)
        t->v[i] = (rp_t){ranks[i], (int32_t)i};
    qsort(t->v, n, sizeof *t->v, ri_cmp);
    for (size_t i = 0; i < n; i++) {
        if (t->n && t->v[t->n - 1].rank == t->v[i].rank)
            continue;
        t->v[t->n] = t->v[i];
        t->map[t->n] = mt_clock_map(&clocks[t->v[i].proc]);
        t->n++;
    }
    return 0;
}

static const mt_clock_map_t *clk_tab_of(const clk_tab_t *t, int32_t r)
{
    size_t lo = rank_lb(t->v, t->n, sizeof *t->v, r);
    return lo < t->n && t->v[lo].rank == r ? &t->map[lo] : &t->none;
}

static void clk_tab_free(clk_tab_t *t)
{
    free(t->v);
    free(t->map);
    memset(t, 0, sizeof *t);
}

/* Holder: the rows that came, c[0..n) (each an instance member's row as
 * its owner sent it), by the analysis of their rank (an[0..n_an) by rank,
 * ranks[k] an[k]'s rank; a rank's first analysis, as the graph's rank
 * index finds): g->ord[g->first[k] .. g->first[k + 1]) the rows of an[k]
 * in the order they came; g->first[n_an] .. n those of no analysis here
 * (none in the program: every row goes to its rank's holder). A counting
 * sort: no comparator call a row. */
typedef struct claims {
    uint32_t *ord;
    size_t *first;        /* n_an + 2 */
} claims_t;

static int claims_group(const mt_owned_member_t *c, size_t n, const int32_t *ranks, size_t n_an, claims_t *g)
{
    g->ord = malloc((n ? n : 1) * sizeof *g->ord);
    g->first = calloc(n_an + 2, sizeof *g->first);
    uint32_t *slot = malloc((n ? n : 1) * sizeof *slot);
    if (!g->ord || !g->first || !slot) {
        free(slot);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        size_t k = rank_lb(ranks, n_an, sizeof *ranks, c[i].rank);
        slot[i] = (uint32_t)(k < n_an && ranks[k] == c[i].rank ? k : n_an);
        g->first[slot[i] + 1]++;
    }
    for (size_t k = 0; k <= n_an; k++)
        g->first[k + 1] += g->first[k];
    size_t *at = malloc((n_an + 1) * sizeof *at);
    if (!at) {
        free(slot);
        return -1;
    }
    memcpy(at, g->first, (n_an + 1) * sizeof *at);
    for (size_t i = 0; i < n; i++)
        g->ord[at[slot[i]]++] = (uint32_t)i;
    free(at);
    free(slot);
    return 0;
}

/* Holder: each row c[i] resolved to its activity, idx[i]: the first comm
 * activity of its rank (by start, then index, as the graph's build looks)
 * that starts and ends where the row does, UINT32_MAX none. *amb when two
 * rows name one (rank, start, end) (or, past 32 rows of one rank that
 * start together, may: the graph's order would decide, so the caller takes
 * process 0's list). 0, or -1 out of memory. */
static int claims_resolve(const mt_owned_member_t *c, size_t n, const claims_t *g, const mt_rank_analysis_t *const *an,
                          size_t n_an, uint32_t *idx, bool *amb)
{
    size_t gmax = 1, cmax = 1;
    for (size_t k = 0; k < n_an; k++) {
        gmax = an[k]->n_gacts > gmax ? an[k]->n_gacts : gmax;
        cmax = g->first[k + 1] - g->first[k] > cmax ? g->first[k + 1] - g->first[k] : cmax;
    }
    uint64_t *key = malloc(gmax * sizeof *key), *ckey = malloc(cmax * sizeof *ckey);
    uint32_t *perm = malloc(gmax * sizeof *perm), *cval = malloc(cmax * sizeof *cval);
    int ret = -1;
    if (!key || !perm || !ckey || !cval)
        goto out;
    for (size_t i = g->first[n_an]; i < n; i++)
        idx[g->ord[i]] = UINT32_MAX;
    for (size_t k = 0; k < n_an; k++) {
        size_t m = g->first[k + 1] - g->first[k];
        if (!m)
            continue;
        const mt_rank_analysis_t *a = an[k];
        size_t nc = 0;
        for (size_t q = 0; q < a->n_gacts; q++)
            if (a->gacts[q].cls == MT_AN_COMM) {
                key[nc] = mt_sort_key_i64(a->gacts[q].start_ns);
                perm[nc++] = (uint32_t)q;
            }
        /* the activities and the rows by start (stable: equal starts by
         * index, and in the order they came) */
        for (size_t j = 0; j < m; j++) {
            cval[j] = g->ord[g->first[k] + j];
            ckey[j] = mt_sort_key_i64(c[cval[j]].start_ns);
        }
        if (mt_sort_u64(key, perm, nc) != MT_OK || mt_sort_u64(ckey, cval, m) != MT_OK)
            goto out;
        for (size_t j = 0, lo = 0; j < m; j++) {
            const mt_owned_member_t *r = &c[cval[j]];
            /* rows starting together: none may end with this one */
            for (size_t b = j; b-- > 0 && ckey[b] == ckey[j];)
                if (j - b > 32 || c[cval[b]].end_ns == r->end_ns) {
                    *amb = true;
                    break;
                }
            while (lo < nc && key[lo] < ckey[j]) /* both by start: one walk */
                lo++;
            idx[cval[j]] = UINT32_MAX;
            for (size_t q = lo; q < nc && key[q] == ckey[j]; q++)
                if (a->gacts[perm[q]].end_ns == r->end_ns) {
                    idx[cval[j]] = perm[q];
                    break;
                }
        }
    }
    ret = 0;
out:
    free(key);
    free(perm);
    free(ckey);
    free(cval);
    return ret;
}

/* Collective: the members' transfers worked out by the instances' owners
 * (own: this process's) with the processes holding the members' ranks
 * (h[0..nh)). Each member's row goes to its rank's holder (24 bytes),
 * which finds its activity as the graph's build does and answers whether
 * it has one (a byte); the owner takes, per instance, the last aligned
 * start of the members found and, with 2 found or more (the graph links
 * no fewer), sends it back for each (8 bytes); the holder's members are
 * then (rank, index, the activity's aligned end - that): *out, by (rank,
 * index), malloc'd. *amb (on every process) when some activity was named
 * by two rows: the graph gives it to the first instance in the job's
 * match order, which no owner knows; *out is then NULL. */
static mt_status_t owned_members(xch_t *x, const mt_cp_owned_t *own, const rp_t *h, size_t nh,
                                 const mt_rank_analysis_t *const *an, const int32_t *ranks, size_t n_an,
                                 const clk_tab_t *ct, mt_cp_member_t **out, size_t *n_out, bool *amb)
{
    const int P = x->c->size;
    *out = NULL;
    *n_out = 0;
    *amb = false;
    size_t no = own->n;
    size_t *lens = calloc(4 * (size_t)P + 1, sizeof *lens), *at = lens ? lens + 4 * P : NULL;
    int32_t *dest = malloc((no ? no : 1) * sizeof *dest);
    mt_owned_member_t *sb = malloc((no ? no : 1) * sizeof *sb);
    void *rb = NULL, *ab = NULL;
    mt_owned_member_t *c = NULL;
    claims_t g = {0};
    uint64_t *key = NULL;
    uint32_t *idx = NULL, *val = NULL;
    uint8_t *found = NULL;
    int64_t *back = NULL;
    mt_cp_member_t *m = NULL;
    size_t nc = 0;
    mt_status_t st = agree(x, !lens || !dest || !sb);
    if (st != MT_OK)
        goto out;
    /* ---- the rows to their ranks' holders, in own's order ---- */
    size_t *off = calloc((size_t)P + 1, sizeof *off);
    st = agree(x, !off);
    if (st != MT_OK) {
        free(off); /* another process's failed: this one's is here */
        goto out;
    }
    for (size_t k = 0; k < no; k++) {
        dest[k] = holder(h, nh, own->m[k].rank);
        if (dest[k] >= 0)
            off[dest[k] + 1]++;
    }
    for (int q = 0; q < P; q++) {
        lens[q] = off[q + 1] * sizeof *sb;
        off[q + 1] += off[q];
    }
    *at = off[P]; /* how many were sent */
    for (size_t k = 0; k < no; k++)
        if (dest[k] >= 0) {
            size_t w = off[dest[k]]++;
            sb[w] = own->m[k];
            dest[k] = (int32_t)w; /* from here: its place in the send buffer */
        }
    free(off);
    st = x_alltoallv(x, sb, lens, &rb, lens + P);
    free(sb);
    sb = NULL;
    if (st != MT_OK)
        goto out;
    /* ---- the holder: each row's activity ---- */
    for (int q = 0; q < P; q++)
        nc += lens[P + q] / sizeof(mt_owned_member_t);
    c = rb;
    rb = NULL;
    idx = malloc((nc ? nc : 1) * sizeof *idx);
    found = malloc(nc ? nc : 1);
    bool bad = !idx || !found || nc > UINT32_MAX || claims_group(c, nc, ranks, n_an, &g) != 0;
    bool am = false;
    bad = bad || claims_resolve(c, nc, &g, an, n_an, idx, &am) != 0;
    for (size_t i = 0; !bad && i < nc; i++)
        found[i] = idx[i] != UINT32_MAX;
    int64_t flags[2] = {bad, am};
    st = x->c->allreduce_max(x->c->ctx, flags, 2);
    x->sent += 16;
    x->recv += 16;
    if (st == MT_OK && flags[0])
        st = MT_ERR_NOMEM;
    if (st != MT_OK)
        goto out;
    if (flags[1]) {
        *amb = true;
        goto out;
    }
    /* ---- the answers back to the owners, in the order the rows came ---- */
    for (int q = 0; q < P; q++)
        lens[2 * P + q] = lens[P + q] / sizeof(mt_owned_member_t);
    st = x_alltoallv(x, found, lens + 2 * P, &ab, lens + 3 * P);
    if (st != MT_OK)
        goto out;
    /* ---- the owner: each instance's last arrival, back to the holders ---- */
    back = malloc((*at ? *at : 1) * sizeof *back);
    st = agree(x, !back);
    if (st != MT_OK)
        goto out;
    const uint8_t *got = ab;
    for (size_t a = 0; a < no;) {
        size_t b = a;
        while (b < no && own->m[b].inst == own->m[a].inst)
            b++;
        int64_t last = INT64_MIN;
        size_t nf = 0;
        for (size_t k = a; k < b; k++)
            if (dest[k] >= 0 && got[dest[k]]) {
                int64_t s = mt_clock_map_apply(clk_tab_of(ct, own->m[k].rank), own->m[k].start_ns);
                last = s > last ? s : last;
                nf++;
            }
        for (size_t k = a; k < b; k++)
            if (dest[k] >= 0)
                back[dest[k]] = nf >= 2 && got[dest[k]] ? last : INT64_MIN;
        a = b;
    }
    free(ab);
    ab = NULL;
    for (int q = 0; q < P; q++)
        lens[q] = lens[q] / sizeof(mt_owned_member_t) * sizeof *back;
    st = x_alltoallv(x, back, lens, &ab, lens + P);
    if (st != MT_OK)
        goto out;
    /* ---- the holder: its members' transfers, by (rank, index): rank
     * by rank, each rank's by index (the radix sort) ---- */
    size_t nm = 0, cmax = 1;
    for (size_t k = 0; k < n_an; k++)
        cmax = g.first[k + 1] - g.first[k] > cmax ? g.first[k + 1] - g.first[k] : cmax;
    m = malloc((nc ? nc : 1) * sizeof *m);
    key = malloc(cmax * sizeof *key);
    val = malloc(cmax * sizeof *val);
    st = agree(x, !m || !key || !val);
    if (st != MT_OK)
        goto out;
    for (size_t k = 0; k < n_an; k++) {
        const mt_rank_analysis_t *a = an[k];
        const mt_clock_map_t *map = clk_tab_of(ct, a->rank);
        size_t nk = 0;
        for (size_t j = g.first[k]; j < g.first[k + 1]; j++) {
            uint32_t i = g.ord[j];
            int64_t last;
            memcpy(&last, (const unsigned char *)ab + (size_t)i * sizeof last, sizeof last);
            if (last == INT64_MIN || idx[i] == UINT32_MAX)
                continue;
            const mt_an_gact_t *ga = &a->gacts[idx[i]];
            int64_t s = mt_clock_map_apply(map, ga->start_ns), e = mt_clock_map_apply(map, ga->end_ns);
            key[nk] = idx[i];
            val[nk] = (uint32_t)nk;
            m[nm + nk++] = (mt_cp_member_t){a->rank, idx[i], (e < s ? s : e) - last};
        }
        if (mt_sort_u64(key, val, nk) != MT_OK) {
            st = MT_ERR_NOMEM; /* every process: the agreement below */
            break;
        }
        mt_sort_permute(m + nm, sizeof *m, val, nk); /* val: each place's member, by index */
        nm += nk;
    }
    if ((st = agree(x, st != MT_OK)) != MT_OK)
        goto out;
    *out = m;
    *n_out = nm;
    m = NULL;
out:
    free(lens);
    free(dest);
    free(sb);
    free(rb);
    free(ab);
    free(c);
    free(g.ord);
    free(g.first);
    free(key);
    free(val);
    free(idx);
    free(found);
    free(back);
    free(m);
    return st;
}

mt_status_t mt_cp_dist_reduce(const mt_comm_t *comm, const mt_cp_dist_in_t *in, const mt_cp_owned_t *own,
                              const mt_rank_analysis_t *const *an_in, size_t n_an, const mt_clock_t *clocks,
                              const int32_t *ranks, size_t n_ranks, mt_cp_dist_t **out)
{
    *out = NULL;
    xch_t x = {comm, 0, 0};
    const int P = comm->size, me = comm->rank;
    facts_t f = {0};
    wbuf_t hb = {0};
    local_t L = {0};
    scratch_t sx = {0};
    owned_t o = {0};
    clk_tab_t ct = {0};
    mt_cp_dist_t *d = calloc(1, sizeof *d);
    const mt_rank_analysis_t **an = malloc((n_an ? n_an : 1) * sizeof *an);
    int32_t *mine = malloc((n_an ? n_an : 1) * sizeof *mine);
    size_t *lens = malloc(2 * (size_t)P * sizeof *lens);
    void *rb = NULL, *rb2 = NULL;
    size_t rlen = 0, rlen2 = 0;
    uint64_t *cnt = NULL;
    comm_name_t *cn = NULL;
    int64_t *med = NULL;
    rp_t *hold = NULL;
    mt_cp_member_t *mem = NULL;
    size_t nmem = 0;
    uint64_t hlen = 0, ncn = 0, nhold = 0;
    bool bad = false;
    /* ---- process 0's facts ---- */
    if (me == 0)
        facts_pack(in, &hb);
    hlen = hb.len;
    mt_status_t st = agree(&x, !d || !an || !mine || !lens || hb.bad || clk_tab_make(&ct, clocks, ranks, n_ranks));
    if (st == MT_OK)
        st = x_bcast(&x, &hlen, sizeof hlen);
    if (st == MT_OK && me != 0 && !(hb.p = malloc(hlen ? hlen : 1)))
        hlen = UINT64_MAX;
    if (st == MT_OK)
        st = agree(&x, hlen == UINT64_MAX);
    if (st == MT_OK)
        st = x_bcast(&x, hb.p, hlen);
    if (st == MT_OK)
        st = agree(&x, facts_read(hb.p, hlen, &f) != 0);
    if (st != MT_OK)
        goto out;
    /* ---- the ranks here, and which process holds each (every process
     * learns it: 8 bytes a rank) ---- */
    if (n_an) {
        memcpy(an, an_in, n_an * sizeof *an);
        qsort(an, n_an, sizeof *an, an_cmp);
    }
    for (size_t i = 0; i < n_an; i++)
        mine[i] = an[i]->rank;
    uint64_t nmine = n_an;
    if ((st = x_gatherv(&x, &nmine, sizeof nmine, (void **)&cnt, &rlen)) != MT_OK)
        goto out;
    if ((st = x_gatherv(&x, mine, n_an * sizeof *mine, &rb, &rlen)) != MT_OK)
        goto out;
    if (me == 0) {
        size_t nh = 0;
        bad = holders_of(rb, cnt, P, &hold, &nh) != 0;
        nhold = nh;
    }
    free(rb);
    rb = NULL;
    if ((st = agree(&x, bad)) != MT_OK || (st = x_bcast(&x, &nhold, sizeof nhold)) != MT_OK)
        goto out;
    if (me != 0 && !(hold = malloc((nhold ? nhold : 1) * sizeof *hold)))
        bad = true;
    if ((st = agree(&x, bad)) != MT_OK || (st = x_bcast(&x, hold, nhold * sizeof *hold)) != MT_OK)
        goto out;
    /* ---- the instance members and their transfers: from the instances'
     * owners (a sharded match on every process), else from process 0 ---- */
    int64_t no_own = own == NULL;
    if ((st = comm->allreduce_max(comm->ctx, &no_own, 1)) != MT_OK)
        goto out;
    x.sent += 8;
    x.recv += 8;
    bool amb = false;
    bool any = f.want_strag || f.want_ideal;
    if (any && !no_own && (st = owned_members(&x, own, hold, nhold, an, mine, n_an, &ct, &mem, &nmem, &amb)) != MT_OK)
        goto out;
    if (any && (no_own || amb) && (st = members_from0(&x, in, hold, nhold, &mem, &nmem)) != MT_OK)
        goto out;
    d->from_owners = any && !no_own && !amb;
    /* ---- the local pass ---- */
    size_t gmax = 1, smax = 1;
    for (size_t i = 0; i < n_an; i++) {
        gmax = an[i]->n_gacts > gmax ? an[i]->n_gacts : gmax;
        smax = an[i]->n_steps > smax ? an[i]->n_steps : smax;
    }
    if (!bad && any) {
        sx.key = malloc(gmax * sizeof *sx.key);
        sx.perm = malloc(gmax * sizeof *sx.perm);
        sx.dur = malloc(gmax * sizeof *sx.dur);
        sx.val = malloc(gmax * sizeof *sx.val);
        sx.flag = malloc(gmax);
        sx.skey = malloc(smax * sizeof *sx.skey);
        sx.sperm = malloc(smax * sizeof *sx.sperm);
        sx.sok = malloc(smax);
        bad = !sx.key || !sx.perm || !sx.dur || !sx.val || !sx.flag || !sx.skey || !sx.sperm || !sx.sok;
    }
    for (size_t i = 0, mi = 0; !bad && any && i < n_an; i++) {
        const mt_rank_analysis_t *a = an[i];
        bool left = holder(hold, nhold, a->rank) != me; /* a rank counts at its holder */
        while (mi < nmem && mem[mi].rank < a->rank)
            mi++;
        size_t m0 = mi;
        while (mi < nmem && mem[mi].rank == a->rank)
            mi++;
        if (left)
            continue;
        bad = local_rank(&f, a, cp_clock_of(clocks, ranks, n_ranks, a->rank), mem + m0, mi - m0, &sx, &L) != 0;
    }
    free(sx.key);
    free(sx.perm);
    free(sx.dur);
    free(sx.val);
    free(sx.flag);
    free(sx.skey);
    free(sx.sperm);
    free(sx.sok);
    memset(&sx, 0, sizeof sx);
    free(mem);
    mem = NULL;
    nmem = 0;
    /* the records by owner (a counting sort), for the alltoallv */
    rec_t *byo = bad ? NULL : malloc((L.n_recs ? L.n_recs : 1) * sizeof *byo);
    bad = bad || !byo;
    if (!bad) {
        for (int q = 0; q < P; q++)
            lens[q] = 0;
        for (size_t i = 0; i < L.n_recs; i++)
            lens[owner_of(L.recs[i].h, P)]++;
        size_t *at = lens + P;
        for (size_t q = 0, s = 0; q < (size_t)P; q++) {
            at[q] = s;
            s += lens[q];
        }
        for (size_t i = 0; i < L.n_recs; i++)
            byo[at[owner_of(L.recs[i].h, P)]++] = L.recs[i];
        for (int q = 0; q < P; q++)
            lens[q] *= sizeof *byo;
    }
    free(L.recs);
    L.recs = NULL;
    if ((st = agree(&x, bad)) != MT_OK) {
        free(byo);
        goto out;
    }
    st = x_alltoallv(&x, byo, lens, &rb, lens + P);
    free(byo);
    if (st != MT_OK)
        goto out;
    /* ---- the owner's work ---- */
    size_t nrec = 0;
    for (int q = 0; q < P; q++)
        nrec += lens[P + q] / sizeof(rec_t);
    qsort(rb, nrec, sizeof(rec_t), rec_cmp);
    bad = owner_work(&f, rb, nrec, &o) != 0;
    free(rb);
    rb = NULL;
    if ((st = agree(&x, bad)) != MT_OK)
        goto out;
    /* ---- the comm names: known to every process ---- */
    if ((st = x_gatherv(&x, o.comm, o.n_comm * sizeof *o.comm, &rb, &rlen)) != MT_OK)
        goto out;
    if (me == 0) {
        ncn = rlen / sizeof *cn;
        cn = rb;
        rb = NULL;
        qsort(cn, ncn, sizeof *cn, comm_cmp);
    }
    if ((st = x_bcast(&x, &ncn, sizeof ncn)) != MT_OK)
        goto out;
    if (me != 0 && !(cn = malloc((ncn ? ncn : 1) * sizeof *cn)))
        bad = true;
    med = malloc((ncn ? ncn : 1) * sizeof *med);
    if ((st = agree(&x, bad || !med)) != MT_OK)
        goto out;
    if ((st = x_bcast(&x, cn, ncn * sizeof *cn)) != MT_OK)
        goto out;
    if (ncn) {
        /* this process's values of those names, by name */
        L.n_vals = hv_keep(L.vals, L.n_vals, cn, ncn);
        if ((st = comm_medians(&x, cn, ncn, L.vals, L.n_vals, med, &d->rounds)) != MT_OK)
            goto out;
    }
    free(L.vals);
    L.vals = NULL;
    /* ---- the owners' results to process 0 ---- */
    if ((st = x_gatherv(&x, o.typ, o.n_typ * sizeof *o.typ, &rb, &rlen)) != MT_OK)
        goto out;
    if ((st = x_gatherv(&x, o.fac ? (const void *)o.fac : (const void *)"", o.n_fac * sizeof *o.fac, &rb2, &rlen2)) != MT_OK)
        goto out;
    if (me == 0) {
        size_t nt = rlen / sizeof *d->typ;
        d->typ = malloc((nt + ncn) * sizeof *d->typ + 1);
        if (d->typ) {
            memcpy(d->typ, rb, rlen);
            for (size_t c = 0; c < ncn; c++)
                d->typ[nt + c] = (cp_dist_typ_t){cn[c].h, med[c]};
            d->n_typ = nt + ncn;
            d->n_comm = ncn;
            qsort(d->typ, d->n_typ, sizeof *d->typ, typ_cmp);
        }
        d->fac = rb2;
        rb2 = NULL;
        d->n_fac = rlen2 / sizeof *d->fac;
        qsort(d->fac, d->n_fac, sizeof *d->fac, fac_cmp);
        bad = !d->typ;
    }
    st = agree(&x, bad);
out:
    facts_free(&f);
    free(hb.p);
    free(hold);
    free(mem);
    clk_tab_free(&ct);
    free(L.recs);
    free(L.vals);
    free(o.typ);
    free(o.fac);
    free(o.comm);
    free(an);
    free(mine);
    free(lens);
    free(rb);
    free(rb2);
    free(cnt);
    free(cn);
    free(med);
    if (st != MT_OK) {
        mt_cp_dist_free(d);
        return st;
    }
    d->sent = x.sent;
    d->received = x.recv;
    *out = d;
    return MT_OK;
}

bool cp_dist_typical(const mt_cp_dist_t *d, uint64_t h, int64_t *v)
{
    size_t lo = mt_lower_bound_u64(d->typ, d->n_typ, sizeof *d->typ, h);
    if (lo < d->n_typ && d->typ[lo].h == h) {
        *v = d->typ[lo].v;
        return true;
    }
    return false;
}

double cp_dist_factor(const mt_cp_dist_t *d, uint64_t h, int32_t rank)
{
    cp_dist_fac_t key = {.h = h, .rank = rank};
    const cp_dist_fac_t *x = d->n_fac ? bsearch(&key, d->fac, d->n_fac, sizeof *d->fac, fac_cmp) : NULL;
    return x ? x->f : 1.0;
}

uint64_t mt_cp_dist_sent(const mt_cp_dist_t *d)
{
    return d ? d->sent : 0;
}

uint64_t mt_cp_dist_received(const mt_cp_dist_t *d)
{
    return d ? d->received : 0;
}

void mt_cp_dist_free(mt_cp_dist_t *d)
{
    if (!d)
        return;
    free(d->typ);
    free(d->fac);
    free(d);
}

/* ---- shared with cp_ideal.c ---- */

/* The typical value of a Kineto job's kernel name from its ranks' means
 * v[0..n), rank k of stage st[k] (-1 unknown, else below nst): the median
 * over the ranks, or, with two stages or more, the median over the
 * stages of each stage's median rank. A pipeline's stages may do
 * different work under one kernel name; over all ranks at once the median
 * is then a value between two stages' values, and one slow GPU of a stage
 * becomes that middle value (issue 38: on a 2-stage pipeline whose stage
 * 1 GEMMs are shorter, rank 5 x 1.25 raised the ideal GEMM of every rank,
 * S 0.989 against a step-time ratio of 1.091). Over stages the slow rank
 * moves only its own stage's median, not at all with three ranks or more
 * a stage. sc holds n + 2 nst + 1 values of scratch; v is reordered. */
int64_t cp_staged_median(int64_t *v, const int32_t *st, size_t n, size_t nst, int64_t *sc)
{
    bool known = nst >= 2, two = false; /* every rank's stage known; two of them or more */
    for (size_t k = 0; k < n && known; k++) {
        known = st[k] >= 0 && (size_t)st[k] < nst;
        two |= st[k] != st[0];
    }
    if (!known || !two)
        return mt_stats_median_i64(v, n);
    /* by stage: a counting sort (stages are indices below nst) */
    int64_t *by = sc, *at = sc + n, *sm = sc + n + nst + 1;
    memset(at, 0, (nst + 1) * sizeof *at);
    for (size_t k = 0; k < n; k++)
        at[st[k] + 1]++;
    for (size_t q = 0; q < nst; q++)
        at[q + 1] += at[q];
    for (size_t k = 0; k < n; k++)
        by[at[st[k]]++] = v[k];
    size_t ns = 0, lo = 0;
    for (size_t q = 0; q < nst; q++) { /* at[q]: the end of stage q's values now */
        size_t hi = (size_t)at[q];
        if (hi > lo)
            sm[ns++] = mt_stats_median_i64(by + lo, hi - lo);
        lo = hi;
    }
    return mt_stats_median_i64(sm, ns);
}
