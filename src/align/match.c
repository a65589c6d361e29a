/* Matching one collective instance across its participants (FORMAT.md 7.1),
 * best key first: Comms Id; (process group, Seq); P2P pairs by direction and
 * order; (process group, ordinal); and for traces without metadata the NCCL
 * stream, paired across ranks by kernel sequence, with its ordinal, but for
 * send/recv kernels that name no peer, paired by their ends. Ordinals
 * are anchored: profiling windows start at different collectives on
 * different ranks, so each rank's sequence is shifted onto a reference
 * sequence where kinds, sizes and ProfilerStep numbers agree. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "mergetrace/classify.h"
#include "mergetrace/collectives.h"
#include "align/shard.h"
#include "base/bigmem.h"
#include "base/hash.h"
#include "base/sort.h"
#include "base/stats.h"

#define MAX_SHIFT 32
#define SHIFT_WINDOW 512

/* The match key of row i lives in columns, an array per field: the tier,
 * a, b and c, then the rank, most significant first. An instance is a run
 * of equal (tier, a, b, c); ordering by the rank and then the row
 * (mt_sort_fields keeps equal items in row order) gives its members in
 * rank order. Sorting them afterwards, one instance at a time,
 * cost W^2 for a W-rank collective; a qsort of 40-byte keys cost 90% of
 * the match (glibc's merge sort, 1.4 s of 3 M rows). */
enum { COL_TIER, COL_A, COL_B, COL_C, COL_RANK, N_COLS };

static bool is_p2p(const mt_cinst_t *r)
{
    return (r->flags & (MT_CI_SEND | MT_CI_RECV)) && r->peer >= 0;
}

static uint64_t pair_key(const mt_cinst_t *r)
{
    uint64_t lo = (uint64_t)(uint32_t)(r->rank < r->peer ? r->rank : r->peer);
    uint64_t hi = (uint64_t)(uint32_t)(r->rank < r->peer ? r->peer : r->rank);
    return lo << 32 | hi;
}

/* ---- ordinal sequences per (group, rank) ---- */

typedef struct seqent {
    uint64_t group;  /* matching group (after stream pairing) */
    int32_t rank;
    uint32_t ordinal;
    uint32_t row;
} seqent_t;

/* se[0..n) by (group, rank, ordinal), or by (rank, group, ordinal) when
 * by_rank; equal entries keep their order, as in the stable qsort (glibc's
 * merge sort) this replaced: the ordinals and P2P counts depend on it. col:
 * three scratch columns of n, perm: n scratch. */
static mt_status_t sort_seq(seqent_t *se, size_t n, bool by_rank, uint64_t *const *col, uint32_t *perm)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t rk = mt_sort_key_i64(se[i].rank);
        col[0][i] = by_rank ? rk : se[i].group;
        col[1][i] = by_rank ? se[i].group : rk;
        col[2][i] = se[i].ordinal;
    }
    mt_status_t rc = mt_sort_fields((const uint64_t *const *)col, 3, n, perm);
    if (rc == MT_OK)
        mt_sort_permute(se, sizeof *se, perm, n);
    return rc;
}

/* What best_shift compares of the row at each position of the sorted se[]:
 * its signature, and its ProfilerStep where it has one. Copied next to
 * each other once per sort, because best_shift reads every row about 65
 * times, and the rows themselves (128 bytes, in no useful order) missed
 * the cache each time. */
typedef struct hints {
    uint64_t *sig;
    uint64_t *step;
    uint64_t *has_step; /* 0 or 1 */
} hints_t;

static void hints_fill(hints_t h, const mt_cinst_t *rows, const seqent_t *se, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        const mt_cinst_t *r = &rows[se[k].row];
        h.sig[k] = r->sig;
        h.step[k] = (uint64_t)r->step;
        h.has_step[k] = (r->flags & MT_CI_STEP) != 0;
    }
}

/* Positions x and y may be one instance: same signature, and the same step
 * where both have one. */
static bool same_instance_hint(const hints_t *h, size_t x, size_t y)
{
    if (h->sig[x] != h->sig[y])
        return false;
    if (h->has_step[x] && h->has_step[y] && h->step[x] != h->step[y])
        return false;
    return true;
}

/* Best shift s so that position seq + i lines up with ref + i + s; score =
 * matches. */
static int best_shift(const hints_t *h, size_t seq, size_t n, size_t ref, size_t nref, int *score_out)
{
    int best = 0, best_score = -1;
    size_t lim = n < SHIFT_WINDOW ? n : SHIFT_WINDOW;
    for (int s = -MAX_SHIFT; s <= MAX_SHIFT; s++) {
        int score = 0;
        for (size_t i = 0; i < lim; i++) {
            long j = (long)i + s;
            if (j < 0 || (size_t)j >= nref)
                continue;
            score += same_instance_hint(h, seq + i, ref + (size_t)j);
        }
        int as = s < 0 ? -s : s, ab = best < 0 ? -best : best;
        if (score > best_score || (score == best_score && as < ab)) {
            best = s;
            best_score = score;
        }
    }
    if (score_out)
        *score_out = best_score;
    return best;
}

/* Traces without group metadata: NCCL streams are numbered differently on
 * every rank. Pair each rank's streams with the reference rank's streams by
 * how well their kernel sequences agree, and give paired streams one group.
 * col: N_COLS scratch columns of n, perm: n scratch. */
static mt_status_t pair_streams(const mt_cinst_t *rows, seqent_t *se, size_t n, uint64_t *const *col,
                                uint32_t *perm)
{
    if (!n)
        return MT_OK;
    mt_status_t rc = sort_seq(se, n, true, col, perm);
    if (rc != MT_OK)
        return rc;
    hints_t h = {col[3], col[4], col[0]}; /* col[0..3): the sort's scratch, free again */
    hints_fill(h, rows, se, n);
    /* The reference: the rank with the most rows. */
    int32_t ref = se[0].rank;
    size_t best_cnt = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && se[j].rank == se[i].rank)
            j++;
        if (j - i > best_cnt) {
            best_cnt = j - i;
            ref = se[i].rank;
        }
        i = j;
    }
    /* The reference rank's groups: [start, end) ranges in se. */
    size_t rs = 0;
    while (rs < n && se[rs].rank != ref)
        rs++;
    size_t re = rs;
    while (re < n && se[re].rank == ref)
        re++;
    size_t n_ref_groups = 0;
    size_t ref_gs[64], ref_ge[64];
    for (size_t i = rs; i < re && n_ref_groups < 64;) {
        size_t j = i;
        while (j < re && se[j].group == se[i].group)
            j++;
        ref_gs[n_ref_groups] = i;
        ref_ge[n_ref_groups++] = j;
        i = j;
    }
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && se[j].rank == se[i].rank)
            j++;
        if (se[i].rank != ref) {
            bool taken[64] = {false};
            for (size_t a = i; a < j;) {
                size_t b = a;
                while (b < j && se[b].group == se[a].group)
                    b++;
                int best_g = -1;
                double best_q = -1;
                for (size_t g = 0; g < n_ref_groups; g++) {
                    if (taken[g])
                        continue;
                    int sc;
                    best_shift(&h, a, b - a, ref_gs[g], ref_ge[g] - ref_gs[g], &sc);
                    size_t m = b - a < ref_ge[g] - ref_gs[g] ? b - a : ref_ge[g] - ref_gs[g];
                    if (m > SHIFT_WINDOW)
                        m = SHIFT_WINDOW;
                    double q = m ? (double)sc / (double)m : 0;
                    if (q > best_q) {
                        best_q = q;
                        best_g = (int)g;
                    }
                }
                if (best_g >= 0 && best_q > 0) {
                    taken[best_g] = true;
                    uint64_t ng = se[ref_gs[best_g]].group;
                    for (size_t k = a; k < b; k++)
                        se[k].group = ng;
                }
                a = b;
            }
        }
        i = j;
    }
    return MT_OK;
}

/* Anchored ordinals: for each group, shift every rank's sequence onto the
 * rank with the longest one. anch[row] receives ordinal + shift (biased to
 * stay non-negative). col: N_COLS scratch columns of n, perm: n scratch. */
static mt_status_t anchor_ordinals(const mt_cinst_t *rows, seqent_t *se, size_t n, uint64_t *anch, uint64_t *grp,
                                   uint64_t *const *col, uint32_t *perm)
{
    mt_status_t rc = sort_seq(se, n, false, col, perm);
    if (rc != MT_OK)
        return rc;
    hints_t h = {col[3], col[4], col[0]}; /* col[0..3): the sort's scratch, free again */
    hints_fill(h, rows, se, n);
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && se[j].group == se[i].group)
            j++;
        /* ranks of this group: find the longest sequence */
        size_t ref_s = i, ref_e = i, best = 0;
        for (size_t a = i; a < j;) {
            size_t b = a;
            while (b < j && se[b].rank == se[a].rank)
                b++;
            if (b - a > best) {
                best = b - a;
                ref_s = a;
                ref_e = b;
            }
            a = b;
        }
        for (size_t a = i; a < j;) {
            size_t b = a;
            while (b < j && se[b].rank == se[a].rank)
                b++;
            int s = a == ref_s ? 0 : best_shift(&h, a, b - a, ref_s, ref_e - ref_s, NULL);
            for (size_t k = a; k < b; k++) {
                anch[se[k].row] = (uint64_t)((int64_t)(k - a) + s + MAX_SHIFT);
                grp[se[k].row] = se[k].group;
            }
            a = b;
        }
        i = j;
    }
    return MT_OK;
}

/* Traces without metadata (issue 39 item 6): pair_streams folds every
 * rank's NCCL stream into one group when the job has several communicators
 * whose kernels look alike (a pipeline's stages, each with its own
 * tensor-parallel allreduce), and the fit then reads the lag between
 * stages as clock offsets. The members of one instance end together (an
 * NCCL kernel returns when its collective completes), so between two ranks
 * of one communicator the difference of their end times is their clocks'
 * offset, steady from instance to instance (drift and jitter aside);
 * between ranks of different communicators it moves with each one's own
 * work. Each stream group is split into clusters of ranks that keep the
 * difference steady against the cluster's first rank: the median change
 * between consecutive shared ordinals at most SPLIT_STEADY_NS, over at
 * least SPLIT_MIN_SHARED of them (fewer: cannot tell, the first cluster).
 * A split that leaves a rank alone, or makes more than SPLIT_MAX clusters,
 * is not made: the group stays whole, as before; nor are the splits when
 * they cut the ranks into more connected parts than there were (traces of
 * two runs, each steady within itself: folded, the trust check refuses
 * them as not of one run; split, nothing would tie their clocks; a
 * pipeline's stages stay tied by their send/recv). se[0..n) is sorted by
 * (group, rank, ordinal) (anchor_ordinals); only rows of stream groups
 * (in_stream) are split; grp[] is rewritten. scratch: SHIFT_WINDOW. */
#define SPLIT_STEADY_NS 50000
#define SPLIT_MIN_SHARED 4
#define SPLIT_MAX 16
#define SPLIT_FLOOR_NS 10000
#define SPLIT_RATIO 8

/* Over the ordinals a and b share (the first SHIFT_WINDOW): the median
 * |change| of end(a) - end(b) from one to the next when level is false,
 * else the median |end(a) - end(b) - expect|; -1 when they share fewer
 * than SPLIT_MIN_SHARED. */
static int64_t end_diff(const mt_cinst_t *rows, const seqent_t *se, const uint64_t *anch, size_t a0, size_t a1,
                        size_t b0, size_t b1, int64_t *scratch, bool level, int64_t expect)
{
    size_t nv = 0, x = a0, y = b0;
    int64_t prev = 0;
    bool have = false;
    while (x < a1 && y < b1 && nv < SHIFT_WINDOW) {
        uint64_t ka = anch[se[x].row], kb = anch[se[y].row];
        if (ka < kb) {
            x++;
        } else if (kb < ka) {
            y++;
        } else {
            /* differences of ends: each under 2^62 ns (the loader's bound) */
            int64_t d = rows[se[x].row].end_ns - rows[se[y].row].end_ns;
            if (level)
                scratch[nv++] = d > expect ? d - expect : expect - d;
            else if (have)
                scratch[nv++] = d > prev ? d - prev : prev - d;
            prev = d;
            have = true;
            x++;
            y++;
        }
    }
    return nv + !level >= SPLIT_MIN_SHARED ? mt_stats_median_i64(scratch, nv) : -1;
}

/* The clock offsets the blind pairs give (blind_pair): a union-find over
 * the ranks with blind rows, pot[x] = clock(x) - clock(up[x]); ranks
 * sorted, for a rank's index. */
typedef struct ptie {
    int32_t *rank;
    size_t n;
    uint32_t *up, *size;
    int64_t *pot;
} ptie_t;

static void ptie_free(ptie_t *t)
{
    free(t->rank);
    free(t->up);
    free(t->size);
    free(t->pot);
    memset(t, 0, sizeof *t);
}

/* The root of rank index x, and in *pot clock(x) - clock(root); the
 * path compressed on the way (union by size keeps it under 64 long). */
static uint32_t ptie_find(ptie_t *t, uint32_t x, int64_t *pot)
{
    uint32_t path[64], np = 0, r = x;
    while (t->up[r] != r) {
        assert(np < 64);
        path[np++] = r;
        r = t->up[r];
    }
    int64_t acc = 0;
    for (uint32_t k = np; k-- > 0;) { /* nearest the root first */
        acc += t->pot[path[k]];
        t->pot[path[k]] = acc;
        t->up[path[k]] = r;
    }
    *pot = np ? t->pot[x] : 0;
    return r;
}

static long ptie_index(const ptie_t *t, int32_t rank)
{
    const int32_t *at = t->n ? bsearch(&rank, t->rank, t->n, sizeof *t->rank, mt_cmp_i32) : NULL;
    return at ? (long)(at - t->rank) : -1;
}

/* clock(b) - clock(a) = d */
static void ptie_union(ptie_t *t, int32_t a, int32_t b, int64_t d)
{
    long ia = ptie_index(t, a), ib = ptie_index(t, b);
    if (ia < 0 || ib < 0)
        return;
    int64_t pa, pb;
    uint32_t ra = ptie_find(t, (uint32_t)ia, &pa), rb = ptie_find(t, (uint32_t)ib, &pb);
    if (ra == rb)
        return;
    /* clock(rb) - clock(ra) = d - pb + pa */
    int64_t w = d - pb + pa;
    if (t->size[ra] < t->size[rb]) {
        t->up[ra] = rb;
        t->pot[ra] = -w;
        t->size[rb] += t->size[ra];
    } else {
        t->up[rb] = ra;
        t->pot[rb] = w;
        t->size[ra] += t->size[rb];
    }
}

/* Ranks rs[0..nr] (their [rs[r], rs[r + 1]) of se) into clusters of at
 * most SPLIT_MAX, each rank into the first whose lead's difference keeps
 * within steady; cl[r] its cluster, *least the steadiest difference of a
 * rank that joined a cluster (-1 none). A rank whose clock the blind
 * pairs tie to a member's (cid[r], of k ties, pot[r] its clock against
 * the tie's root; UINT32_MAX none) joins only when their ends, so
 * corrected, meet within SPLIT_STEADY_NS: the stages of a pipeline that
 * run in lockstep keep steady differences too, one stage's time apart.
 * rep: SPLIT_MAX * k scratch. False when the clusters are more than
 * SPLIT_MAX or one is a lone rank. */
static bool cluster_ranks(const mt_cinst_t *rows, const seqent_t *se, const uint64_t *anch, const size_t *rs,
                          size_t nr, int64_t steady, int64_t *scratch, const uint32_t *cid, const int64_t *pot,
                          size_t k, uint32_t *rep, uint32_t *cl, size_t *n_cl, int64_t *least)
{
    size_t lead[SPLIT_MAX], size[SPLIT_MAX] = {0}, nc = 0;
    *least = -1;
    for (size_t r = 0; r < nr; r++) {
        size_t c = 0;
        for (; c < nc; c++) {
            int64_t ch = end_diff(rows, se, anch, rs[lead[c]], rs[lead[c] + 1], rs[r], rs[r + 1], scratch, false, 0);
            if (!(ch < 0 ? c == 0 : ch <= steady))
                continue;
            uint32_t x = cid[r] != UINT32_MAX ? rep[c * k + cid[r]] : UINT32_MAX;
            if (x != UINT32_MAX) {
                int64_t lv = end_diff(rows, se, anch, rs[x], rs[x + 1], rs[r], rs[r + 1], scratch, true, pot[x] - pot[r]);
                if (lv > SPLIT_STEADY_NS)
                    continue;
            }
            if (ch >= 0 && (*least < 0 || ch < *least))
                *least = ch;
            break;
        }
        if (c == nc) {
            if (nc == SPLIT_MAX)
                return false;
            for (size_t q = 0; q < k; q++)
                rep[c * k + q] = UINT32_MAX;
            lead[nc++] = r;
        }
        if (cid[r] != UINT32_MAX && rep[c * k + cid[r]] == UINT32_MAX)
            rep[c * k + cid[r]] = (uint32_t)r;
        cl[r] = (uint32_t)c;
        size[c]++;
    }
    for (size_t c = 0; c < nc; c++)
        if (size[c] < 2)
            return false;
    *n_cl = nc;
    return true;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static void split_stream_groups(const mt_cinst_t *rows, const seqent_t *se, size_t n, const uint8_t *in_stream,
                                const uint64_t *anch, uint64_t *grp, int64_t *scratch, ptie_t *tie)
{
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && se[j].group == se[i].group)
            j++;
        if (!in_stream[se[i].row]) {
            i = j;
            continue;
        }
        /* the group's ranks: [rs[r], rs[r + 1]) of se */
        size_t nr = 0;
        for (size_t k = i; k < j; k++)
            nr += k == i || se[k].rank != se[k - 1].rank;
        size_t *rs = nr > 2 ? malloc((nr + 1) * sizeof *rs) : NULL;
        uint32_t *cl = nr > 2 ? malloc(2 * nr * sizeof *cl) : NULL;
        uint32_t *cid = nr > 2 ? malloc(2 * nr * sizeof *cid) : NULL; /* and the roots after it */
        int64_t *pot = nr > 2 ? malloc(nr * sizeof *pot) : NULL;
        uint32_t *rep = nr > 2 ? malloc(SPLIT_MAX * nr * sizeof *rep) : NULL;
        size_t nc = 0, nk = 0;
        bool keep = rs && cl && cid && pot && rep; /* no memory for the split: the group stays whole */
        if (keep) {
            size_t r = 0;
            for (size_t k = i; k < j; k++)
                if (k == i || se[k].rank != se[k - 1].rank)
                    rs[r++] = k;
            rs[nr] = j;
            /* each rank's tie (the root of its blind pairs), numbered 0..nk */
            uint32_t *root = cid + nr;
            for (r = 0; r < nr; r++) {
                long x = ptie_index(tie, se[rs[r]].rank);
                root[r] = x < 0 ? UINT32_MAX : ptie_find(tie, (uint32_t)x, &pot[r]);
                cid[r] = root[r];
            }
            qsort(root, nr, sizeof *root, cmp_u32);
            for (r = 0; r < nr; r++)
                if (root[r] != UINT32_MAX && (!nk || root[nk - 1] != root[r]))
                    root[nk++] = root[r];
            for (r = 0; r < nr; r++)
                if (cid[r] != UINT32_MAX)
                    cid[r] = (uint32_t)((const uint32_t *)bsearch(&cid[r], root, nk, sizeof *root, cmp_u32) - root);
        }
        int64_t least = -1;
        keep = keep &&
               cluster_ranks(rows, se, anch, rs, nr, SPLIT_STEADY_NS, scratch, cid, pot, nk, rep, cl, &nc, &least);
        /* Stages of equal work run in lockstep: their difference moves by
         * a few tens of us, inside SPLIT_STEADY_NS, while a communicator's
         * own ranks keep theirs within a few us. Again with the bound
         * SPLIT_RATIO times the steadiest difference seen (at least
         * SPLIT_FLOOR_NS), kept when it still makes no lone rank. */
        int64_t tight = least < 0 ? SPLIT_STEADY_NS : least * SPLIT_RATIO;
        tight = tight < SPLIT_FLOOR_NS ? SPLIT_FLOOR_NS : tight;
        size_t nc2 = 0;
        if (keep && tight < SPLIT_STEADY_NS &&
            cluster_ranks(rows, se, anch, rs, nr, tight, scratch, cid, pot, nk, rep, cl + nr, &nc2, &least) &&
            nc2 > nc) {
            memcpy(cl, cl + nr, nr * sizeof *cl);
            nc = nc2;
        }
        if (keep && nc > 1)
            for (size_t r = 0; r < nr; r++) {
                if (!cl[r])
                    continue; /* the first cluster keeps the group's id */
                uint64_t k2[2] = {se[i].group, cl[r]};
                uint64_t g = mt_hash64(k2, sizeof k2, UINT64_C(0x5eed5b117));
                for (size_t k = rs[r]; k < rs[r + 1]; k++)
                    grp[se[k].row] = g;
            }
        free(rs);
        free(cl);
        free(cid);
        free(pot);
        free(rep);
        i = j;
    }
}

static uint32_t uf_find(uint32_t *up, uint32_t x)
{
    while (up[x] != x)
        x = up[x] = up[up[x]];
    return x;
}

/* How many connected parts the ranks of se[0..n) make when each grp[]
 * value ties its ranks; -1 out of memory. se[] in runs of one group (by
 * group and rank from anchor_ordinals, then blind_pair's two-entry runs). */
static long rank_parts(const seqent_t *se, size_t n, const uint64_t *grp)
{
    int32_t *rk = malloc((n ? n : 1) * sizeof *rk);
    uint32_t *up = malloc((n ? n : 1) * sizeof *up);
    if (!rk || !up) {
        free(rk);
        free(up);
        return -1;
    }
    for (size_t k = 0; k < n; k++)
        rk[k] = se[k].rank;
    qsort(rk, n, sizeof *rk, mt_cmp_i32);
    size_t nr = 0;
    for (size_t k = 0; k < n; k++)
        if (!nr || rk[k] != rk[nr - 1])
            rk[nr++] = rk[k];
    for (size_t k = 0; k < nr; k++)
        up[k] = (uint32_t)k;
    /* within one se group, a grp value's first rank (at most SPLIT_MAX + 1 values) */
    uint64_t gv[SPLIT_MAX + 1];
    uint32_t gf[SPLIT_MAX + 1];
    size_t ng = 0;
    for (size_t k = 0; k < n; k++) {
        if (k == 0 || se[k].group != se[k - 1].group)
            ng = 0;
        const int32_t *at = bsearch(&se[k].rank, rk, nr, sizeof *rk, mt_cmp_i32);
        uint32_t x = (uint32_t)(at - rk);
        size_t q = 0;
        while (q < ng && gv[q] != grp[se[k].row])
            q++;
        if (q == ng) {
            if (ng == SPLIT_MAX + 1)
                continue;
            gv[ng] = grp[se[k].row];
            gf[ng++] = x;
            continue;
        }
        uint32_t a = uf_find(up, gf[q]), b = uf_find(up, x);
        if (a != b)
            up[a] = b;
    }
    long parts = 0;
    for (size_t k = 0; k < nr; k++)
        parts += uf_find(up, (uint32_t)k) == k;
    free(rk);
    free(up);
    return parts;
}

/* ---- send/recv kernels that name no peer (issue 39 item 6) ----
 * A trace without collective metadata says a kernel sent or received (its
 * nccl:send / nccl:recv record) but not to whom, and one stream of a
 * pipeline's middle stage carries both its receives from the stage before
 * and its sends to the stage after: the k-th such kernel on one rank's
 * stream is not the k-th on another's, and matching them by stream order
 * fitted clocks on ends whole chunks apart ('not of one run', or clocks
 * off by milliseconds). A transfer's two kernels end together (each
 * returns when the transfer is done), so between a rank a that sends and
 * a rank b that receives, end(recv) - end(send) is the clocks' offset for
 * every pair that is one transfer, and anything else for the rest: the
 * offsets of all (send, receive) pairs of a and b (of one ProfilerStep,
 * where both have one) pile up at the clocks' offset. a's sends and b's
 * receives are paired there when that peak is clear: BLIND_WIN_NS wide
 * (else BLIND_NARROW_NS), holding at least BLIND_MIN_PAIRS and half the
 * smaller side, and at least twice any other peak a window or more away.
 * Rank pairs are taken strongest peak first, each kernel into one pair
 * only; a kernel left over (or of a rank pair past BLIND_BUDGET (send,
 * receive) pairs looked at over the job) is an instance of its own
 * (unmatched): no clock is fitted on a pair the ends do not settle. The
 * clocks' offsets of the pairs made tie their ranks (ptie_t) for the
 * stream groups' split. Ranks whose transfers run in lockstep
 * (the ranks of one tensor-parallel stage) pair across as well; the
 * offset is the same, which is all the clock fit reads. */
#define BLIND_WIN_NS 20000
#define BLIND_NARROW_NS 5000
#define BLIND_MIN_PAIRS 4
#define BLIND_MAX_DIFFS ((size_t)1 << 22) /* a pair of ranks with more (send, receive) pairs is not tried */
#define BLIND_BUDGET ((uint64_t)1 << 30)   /* past this many pairs over all rank pairs, the rest are not tried */

typedef struct bend {
    int32_t rank;
    int32_t recv; /* 0 send, 1 receive */
    int64_t end;
    int64_t step; /* -1 none */
    uint32_t row;
    uint32_t used;
} bend_t;

static bool is_blind(const mt_cinst_t *r)
{
    return (r->flags & MT_CI_STREAM) && !(r->flags & (MT_CI_COMMS_ID | MT_CI_SEQ | MT_CI_CPU | MT_CI_NCCL)) &&
           r->peer < 0 && (r->kind == MT_COLLK_SEND || r->kind == MT_COLLK_RECV);
}

static int bend_cmp(const void *pa, const void *pb)
{
    const bend_t *a = pa, *b = pb;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    if (a->recv != b->recv)
        return a->recv < b->recv ? -1 : 1;
    if (a->end != b->end)
        return a->end < b->end ? -1 : 1;
    return (a->row > b->row) - (a->row < b->row);
}

static bool step_ok(const bend_t *a, const bend_t *b)
{
    return a->step < 0 || b->step < 0 || a->step == b->step;
}

typedef struct bpeak {
    size_t s0, s1, r0, r1; /* the sends [s0, s1) of one rank, the receives [r0, r1) of another, in be[] */
    int64_t off;           /* end(recv) - end(send) at the peak */
    int64_t win;           /* the window that made it clear */
    size_t count;
} bpeak_t;

static int bpeak_cmp(const void *pa, const void *pb)
{
    const bpeak_t *a = pa, *b = pb;
    if (a->count != b->count)
        return a->count > b->count ? -1 : 1;
    if (a->s0 != b->s0)
        return a->s0 < b->s0 ? -1 : 1;
    return (a->r0 > b->r0) - (a->r0 < b->r0);
}

/* The peak of the offsets of sends be[s0, s1) against receives be[r0, r1):
 * true with p filled when it is clear (see above); d: BLIND_MAX_DIFFS
 * scratch. */
static bool blind_peak(const bend_t *be, size_t s0, size_t s1, size_t r0, size_t r1, int64_t *d, bpeak_t *p)
{
    size_t nd = 0;
    for (size_t s = s0; s < s1; s++)
        for (size_t r = r0; r < r1; r++) {
            if (!step_ok(&be[s], &be[r]))
                continue;
            if (nd == BLIND_MAX_DIFFS)
                return false;
            d[nd++] = be[r].end - be[s].end; /* ends under 2^62 ns (the loader's bound) */
        }
    size_t small = s1 - s0 < r1 - r0 ? s1 - s0 : r1 - r0;
    if (nd < BLIND_MIN_PAIRS)
        return false;
    qsort(d, nd, sizeof *d, mt_cmp_i64);
    /* the widest window first; a regular schedule (microbatches of equal
     * work) puts other peaks one microbatch off nearly as high in it, and
     * only a narrower window, where the transfers' own ends still meet
     * and the shifted ones' jitter no longer does, tells them apart */
    static const int64_t width[] = {BLIND_WIN_NS, BLIND_NARROW_NS};
    for (size_t w = 0; w < sizeof width / sizeof *width; w++) {
        int64_t win = width[w];
        size_t best = 0, bi = 0, bj = 0;
        for (size_t i = 0, j = 0; i < nd; i++) {
            while (j < nd && d[j] - d[i] <= win)
                j++;
            if (j - i > best) {
                best = j - i;
                bi = i;
                bj = j;
            }
        }
        /* the strongest window that does not overlap the peak's neighbourhood */
        size_t second = 0;
        for (size_t i = 0, j = 0; i < nd; i++) {
            while (j < nd && d[j] - d[i] <= win)
                j++;
            if (d[i] + win < d[bi] - win || d[i] > d[bj - 1] + win)
                second = j - i > second ? j - i : second;
        }
        if (best < BLIND_MIN_PAIRS || best * 2 < small)
            return false; /* a narrower window holds no more */
        if (second * 2 <= best) {
            *p = (bpeak_t){s0, s1, r0, r1, d[bi + (bj - bi) / 2], win, best};
            return true;
        }
    }
    return false;
}

/* The pairing above over the blind rows: grp[] and anch[] of each blind
 * row set to its pair's key (a group per pair of ranks, the pair's number
 * in it) or to a group of its own; the pairs appended to se[*ns..) as
 * entries of their group (two each, for rank_parts). */
static mt_status_t blind_pair(const mt_cinst_t *rows, size_t n, size_t n_blind, uint64_t *grp, uint64_t *anch,
                              seqent_t *se, size_t *ns, ptie_t *tie)
{
    bend_t *be = malloc((n_blind ? n_blind : 1) * sizeof *be);
    size_t *seg = malloc((n_blind + 1) * sizeof *seg);
    int64_t *d = NULL;
    bpeak_t *pk = NULL;
    mt_status_t rc = MT_ERR_NOMEM;
    if (!be || !seg)
        goto out;
    size_t nb = 0;
    for (size_t i = 0; i < n && nb < n_blind; i++)
        if (is_blind(&rows[i]))
            be[nb++] = (bend_t){rows[i].rank, rows[i].kind == MT_COLLK_RECV, rows[i].end_ns,
                                (rows[i].flags & MT_CI_STEP) ? rows[i].step : -1, (uint32_t)i, 0};
    qsort(be, nb, sizeof *be, bend_cmp);
    tie->rank = malloc((nb ? nb : 1) * sizeof *tie->rank);
    tie->up = malloc((nb ? nb : 1) * sizeof *tie->up);
    tie->size = malloc((nb ? nb : 1) * sizeof *tie->size);
    tie->pot = malloc((nb ? nb : 1) * sizeof *tie->pot);
    if (!tie->rank || !tie->up || !tie->size || !tie->pot)
        goto out;
    for (size_t i = 0; i < nb; i++) /* be[] is by rank first */
        if (i == 0 || be[i].rank != be[i - 1].rank) {
            tie->rank[tie->n] = be[i].rank;
            tie->up[tie->n] = (uint32_t)tie->n;
            tie->size[tie->n] = 1;
            tie->pot[tie->n++] = 0;
        }
    size_t nseg = 0; /* runs of one (rank, direction): seg[k] .. seg[k + 1] */
    for (size_t i = 0; i < nb; i++)
        if (i == 0 || be[i].rank != be[i - 1].rank || be[i].recv != be[i - 1].recv)
            seg[nseg++] = i;
    seg[nseg] = nb;
    size_t npk = 0;
    for (size_t a = 0; a < nseg; a++)
        for (size_t b = 0; b < nseg; b++)
            npk += !be[seg[a]].recv && be[seg[b]].recv && be[seg[a]].rank != be[seg[b]].rank;
    size_t most = 0; /* the most (send, receive) pairs of two ranks, for the scratch */
    for (size_t a = 0; a < nseg; a++)
        for (size_t b = 0; b < nseg; b++)
            if (!be[seg[a]].recv && be[seg[b]].recv && be[seg[a]].rank != be[seg[b]].rank) {
                size_t x = seg[a + 1] - seg[a], y = seg[b + 1] - seg[b];
                size_t xy = x > BLIND_MAX_DIFFS / y ? BLIND_MAX_DIFFS : x * y;
                most = xy > most ? xy : most;
            }
    pk = malloc((npk ? npk : 1) * sizeof *pk);
    d = npk ? malloc((most ? most : 1) * sizeof *d) : NULL;
    if (!pk || (npk && !d))
        goto out;
    npk = 0;
    uint64_t spent = 0; /* (send, receive) pairs looked at, against BLIND_BUDGET */
    for (size_t a = 0; a < nseg; a++)
        for (size_t b = 0; b < nseg; b++)
            if (!be[seg[a]].recv && be[seg[b]].recv && be[seg[a]].rank != be[seg[b]].rank &&
                spent < BLIND_BUDGET) {
                spent += (uint64_t)(seg[a + 1] - seg[a]) * (seg[b + 1] - seg[b]);
                npk += blind_peak(be, seg[a], seg[a + 1], seg[b], seg[b + 1], d, &pk[npk]);
            }
    qsort(pk, npk, sizeof *pk, bpeak_cmp);
    for (size_t i = 0; i < nb; i++) { /* a group of its own until paired */
        uint64_t k2[2] = {UINT64_C(0xb11d), be[i].row};
        grp[be[i].row] = mt_hash64(k2, sizeof k2, UINT64_C(0x5eed5b117));
        anch[be[i].row] = 0;
    }
    for (size_t p = 0; p < npk; p++) {
        const bpeak_t *q = &pk[p];
        uint64_t k3[3] = {UINT64_C(0xb11d2), (uint64_t)(uint32_t)be[q->s0].rank, (uint64_t)(uint32_t)be[q->r0].rank};
        uint64_t g = mt_hash64(k3, sizeof k3, UINT64_C(0x5eed5b117));
        uint64_t k = 0;
        size_t r = q->r0;
        for (size_t s = q->s0; s < q->s1; s++) {
            if (be[s].used)
                continue;
            int64_t want = be[s].end + q->off;
            while (r < q->r1 && be[r].end < want - q->win)
                r++;
            size_t pick = SIZE_MAX;
            for (size_t x = r; x < q->r1 && be[x].end <= want + q->win; x++) {
                if (be[x].used || !step_ok(&be[s], &be[x]))
                    continue;
                int64_t dx = be[x].end > want ? be[x].end - want : want - be[x].end;
                int64_t dp = pick == SIZE_MAX ? INT64_MAX : be[pick].end > want ? be[pick].end - want : want - be[pick].end;
                if (dx < dp)
                    pick = x;
            }
            if (pick == SIZE_MAX)
                continue;
            be[s].used = be[pick].used = 1;
            grp[be[s].row] = grp[be[pick].row] = g;
            anch[be[s].row] = anch[be[pick].row] = k++;
            se[(*ns)++] = (seqent_t){g, be[s].rank, 0, be[s].row};
            se[(*ns)++] = (seqent_t){g, be[pick].rank, 0, be[pick].row};
        }
        if (k >= BLIND_MIN_PAIRS) /* the two clocks are q->off apart */
            ptie_union(tie, be[q->s0].rank, be[q->r0].rank, q->off);
    }
    rc = MT_OK;
out:
    free(be);
    free(seg);
    free(d);
    free(pk);
    return rc;
}

void mt_match_free(mt_match_t *m)
{
    if (!m)
        return;
    free(m->first);
    free(m->members);
    free(m->key);
    free(m->status);
    free(m->expected);
    free(m);
}

/* Ranks per group, for the expected size of groups without "Group size":
 * each group's number of distinct ranks, by group. */
typedef struct gcount {
    uint64_t group;
    int32_t ranks;
} gcount_t;

/* The table of every row's group, built by the first instance that needs
 * it (none does where every row has its group size). The group of a row of
 * an ordinal or P2P key is grp[] (its matching group; 0 for P2P). Counted
 * once per group: counting an instance's group among the rows sorted by
 * (group, rank), instance after instance, cost the rows of the group for
 * every instance (quadratic in a job of one stream group). */
static mt_status_t group_ranks(const mt_cinst_t *rows, size_t n, const uint64_t *grp, uint64_t *const *col,
                               gcount_t **out, size_t *n_out)
{
    *out = NULL;
    *n_out = 0;
    uint64_t *g = mt_big_malloc((n ? n : 1) * sizeof *g);
    uint32_t *perm = mt_big_malloc((n ? n : 1) * sizeof *perm);
    gcount_t *gc = NULL;
    mt_status_t rc = MT_ERR_NOMEM;
    if (g && perm) {
        for (size_t i = 0; i < n; i++)
            g[i] = col[COL_TIER][i] >= MT_KEY_PG_ORDINAL ? grp[i] : rows[i].group;
        const uint64_t *by[2] = {g, col[COL_RANK]};
        rc = mt_sort_fields(by, 2, n, perm);
    }
    size_t ng = 0;
    for (size_t i = 0; rc == MT_OK && i < n; i++)
        ng += i == 0 || g[perm[i]] != g[perm[i - 1]];
    if (rc == MT_OK && !(gc = malloc((ng ? ng : 1) * sizeof *gc)))
        rc = MT_ERR_NOMEM;
    if (rc == MT_OK) {
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
            uint32_t x = perm[i], y = i ? perm[i - 1] : 0;
            if (i == 0 || g[x] != g[y])
                gc[k++] = (gcount_t){g[x], 1};
            else
                gc[k - 1].ranks += col[COL_RANK][x] != col[COL_RANK][y];
        }
        *out = gc;
        *n_out = ng;
    }
    free(g);
    free(perm);
    return rc;
}

static int32_t ranks_in_group(const gcount_t *gc, size_t n, uint64_t group)
{
    size_t lo = mt_lower_bound_u64(gc, n, sizeof *gc, group);
    return lo < n && gc[lo].group == group ? gc[lo].ranks : 0;
}

/* Row r's match key: k[0] its tier (mt_match_key_t), k[1..3] the fields
 * a, b, c; the tier from the row's own flags, best first. p2p_ord, grp and
 * anch are what the match worked out for the row from other rows (its
 * P2P count, its group and anchored ordinal), read only by the tiers that
 * need them; mt_match_shard_of passes 0 and uses only the other tiers. */
static inline void row_key(const mt_cinst_t *r, uint64_t p2p_ord, uint64_t grp, uint64_t anch, uint64_t k[4])
{
    k[1] = k[2] = k[3] = 0;
    if (r->flags & MT_CI_COMMS_ID) {
        k[0] = MT_KEY_COMMS_ID;
        k[1] = r->comms_id;
    } else if ((r->flags & MT_CI_SEQ) && (r->flags & MT_CI_PG)) {
        k[0] = MT_KEY_PG_SEQ;
        k[1] = r->group;
        k[2] = (uint64_t)r->seq;
        k[3] = is_p2p(r) ? pair_key(r) : 0;
    } else if (is_p2p(r)) {
        k[0] = MT_KEY_P2P;
        k[1] = pair_key(r);
        k[2] = (uint64_t)(uint32_t)((r->flags & MT_CI_SEND) ? r->rank : r->peer); /* the sender */
        k[3] = p2p_ord;
    } else {
        k[0] = r->flags & MT_CI_PG ? MT_KEY_PG_ORDINAL : MT_KEY_STREAM_ORDINAL;
        k[1] = grp;
        k[2] = anch;
    }
}

/* mt_match; keys: NULL, or *keys gets each instance's (a, b, c) key
 * fields, three per instance (mt_big_malloc'd). */
static mt_status_t match_rows(const mt_cinst_t *rows, size_t n, mt_match_t **out, mt_match_stats_t *stats,
                              uint64_t **keys)
{
    *out = NULL;
    if (keys)
        *keys = NULL;
    if (n > UINT32_MAX)
        return MT_ERR_LIMIT; /* members are 32-bit row indices */
    uint64_t *ikey = NULL;
    mt_match_stats_t st = {.rows = n};
    for (size_t i = 0; i < n; i++)
        st.cpu_rows += (rows[i].flags & MT_CI_CPU) != 0;
    mt_status_t rc = MT_ERR_NOMEM;
    uint64_t *col[N_COLS] = {NULL};
    for (int c = 0; c < N_COLS; c++)
        col[c] = mt_big_malloc((n ? n : 1) * sizeof *col[c]);
    uint64_t *anch = mt_big_calloc(n ? n : 1, sizeof *anch);
    uint64_t *grp = mt_big_calloc(n ? n : 1, sizeof *grp);
    seqent_t *se = mt_big_malloc((n ? n : 1) * sizeof *se);
    uint32_t *p2p_ord = mt_big_calloc(n ? n : 1, sizeof *p2p_ord);
    gcount_t *gr = NULL;
    ptie_t tie = {0}; /* the clocks the blind pairs tie (blind_pair) */
    size_t n_gr = 0;
    uint64_t *start = NULL;
    uint8_t *cls = NULL;
    mt_match_t *m = calloc(1, sizeof *m);
    if (!anch || !grp || !se || !p2p_ord || !m)
        goto done;
    for (int c = 0; c < N_COLS; c++)
        if (!col[c])
            goto done;
    /* the result's members: the rows in key order, and scratch before */
    m->members = mt_big_malloc((n ? n : 1) * sizeof *m->members);
    if (!m->members)
        goto done;

    /* Which of the sequences below each row joins (a row may join two),
     * in one pass over the rows: each further pass over 128-byte rows
     * cost about as much as building all the keys. */
    enum { IN_STREAM = 1, IN_PG_ORDINAL = 2, IN_P2P_COUNT = 4 };
    cls = mt_big_malloc(n ? n : 1);
    if (!cls)
        goto done;
    size_t in_cls[8] = {0}, n_blind = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t f = rows[i].flags;
        bool p2p = is_p2p(&rows[i]), blind = is_blind(&rows[i]);
        uint8_t b = 0;
        n_blind += blind; /* paired by their ends, not by stream order (blind_pair) */
        if ((f & MT_CI_STREAM) && !(f & MT_CI_COMMS_ID) && !p2p && !blind)
            b |= IN_STREAM;
        if ((f & MT_CI_PG) && !(f & (MT_CI_COMMS_ID | MT_CI_SEQ)) && !p2p)
            b |= IN_PG_ORDINAL;
        if (p2p && !(f & (MT_CI_COMMS_ID | MT_CI_SEQ)))
            b |= IN_P2P_COUNT;
        cls[i] = b;
        in_cls[b]++;
    }
    size_t n_stream = 0, n_pg = 0, n_p2p = 0;
    for (int b = 0; b < 8; b++) {
        n_stream += b & IN_STREAM ? in_cls[b] : 0;
        n_pg += b & IN_PG_ORDINAL ? in_cls[b] : 0;
        n_p2p += b & IN_P2P_COUNT ? in_cls[b] : 0;
    }

    /* Ordinal keys need anchoring; stream groups need pairing first. The
     * key columns are the sorts' scratch until the keys are built. */
    size_t ns = 0;
    for (size_t i = 0; n_stream && i < n; i++)
        if (cls[i] & IN_STREAM)
            se[ns++] = (seqent_t){rows[i].group, rows[i].rank, rows[i].ordinal, (uint32_t)i};
    if ((rc = pair_streams(rows, se, ns, col, m->members)) != MT_OK)
        goto done;
    size_t np = ns;
    for (size_t i = 0; n_pg && i < n; i++)
        if (cls[i] & IN_PG_ORDINAL)
            se[np++] = (seqent_t){rows[i].group, rows[i].rank, rows[i].ordinal, (uint32_t)i};
    if ((rc = anchor_ordinals(rows, se, np, anch, grp, col, m->members)) != MT_OK)
        goto done;
    size_t nbp = np; /* se[np..nbp): the blind pairs, which tie their ranks as groups do */
    if (n_blind && (rc = blind_pair(rows, n, n_blind, grp, anch, se, &nbp, &tie)) != MT_OK)
        goto done;
    if (ns > 2) {
        /* the stream groups split by their ends (split_stream_groups) */
        uint8_t *in_stream = mt_big_calloc(n, 1);
        int64_t *scratch = malloc(SHIFT_WINDOW * sizeof *scratch);
        if (in_stream && scratch) {
            for (size_t k = 0; k < n; k++)
                in_stream[k] = (cls[k] & IN_STREAM) != 0;
            long before = rank_parts(se, nbp, grp);
            split_stream_groups(rows, se, np, in_stream, anch, grp, scratch, &tie);
            long after = rank_parts(se, nbp, grp);
            if (before < 0 || after < 0) {
                free(scratch);
                scratch = NULL;
            } else if (after > before) { /* undone: anchor_ordinals' groups */
                for (size_t k = 0; k < np; k++)
                    grp[se[k].row] = se[k].group;
            }
        }
        free(in_stream);
        free(scratch);
        if (!in_stream || !scratch) {
            rc = MT_ERR_NOMEM;
            goto done;
        }
    }

    /* P2P without ids: the k-th send from s to d is the k-th receive at d
     * from s. Count per (rank, peer, direction) in kernel order. */
    {
        size_t n2 = 0;
        for (size_t i = 0; n_p2p && i < n; i++)
            if (cls[i] & IN_P2P_COUNT)
                se[n2++] = (seqent_t){(uint64_t)rows[i].peer << 1 | ((rows[i].flags & MT_CI_SEND) != 0), rows[i].rank,
                                      rows[i].ordinal, (uint32_t)i};
        if ((rc = sort_seq(se, n2, true, col, m->members)) != MT_OK)
            goto done;
        for (size_t i = 0; i < n2;) {
            size_t j = i;
            while (j < n2 && se[j].rank == se[i].rank && se[j].group == se[i].group)
                j++;
            for (size_t k = i; k < j; k++)
                p2p_ord[se[k].row] = (uint32_t)(k - i);
            i = j;
        }
    }
    free(se);
    se = NULL;
    free(cls);
    cls = NULL;

    for (size_t i = 0; i < n; i++) {
        const mt_cinst_t *r = &rows[i];
        uint64_t k[4];
        row_key(r, p2p_ord[i], grp[i], anch[i], k);
        col[COL_TIER][i] = k[0];
        col[COL_A][i] = k[1];
        col[COL_B][i] = k[2];
        col[COL_C][i] = k[3];
        col[COL_RANK][i] = mt_sort_key_i64(r->rank);
    }
    free(p2p_ord);
    p2p_ord = NULL;
    /* Instances are runs of equal keys (the columns before the rank): their
     * starts, a bit each, read off the sorted key. */
    rc = MT_ERR_NOMEM;
    start = malloc((n / 64 + 1) * sizeof *start);
    if (!start)
        goto done;
    if ((rc = mt_sort_fields_runs((const uint64_t *const *)col, N_COLS, n, m->members, COL_RANK, start)) != MT_OK)
        goto done;
    rc = MT_ERR_NOMEM;
    const uint32_t *mem = m->members;
    size_t n_inst = 0;
    for (size_t w = 0; n && w <= n / 64; w++)
        n_inst += (size_t)__builtin_popcountll(start[w]);
    m->n_inst = n_inst;
    m->first = mt_big_malloc((n_inst + 1) * sizeof *m->first);
    m->key = mt_big_malloc((n_inst ? n_inst : 1) * sizeof *m->key);
    m->status = mt_big_malloc((n_inst ? n_inst : 1) * sizeof *m->status);
    m->expected = mt_big_malloc((n_inst ? n_inst : 1) * sizeof *m->expected);
    if (!m->first || !m->key || !m->status || !m->expected)
        goto done;
    if (keys && !(ikey = mt_big_malloc((n_inst ? n_inst : 1) * 3 * sizeof *ikey)))
        goto done;
    size_t inst = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && !(start[j / 64] >> (j % 64) & 1))
            j++;
        m->first[inst] = (uint32_t)i; /* members[i..j): in rank order already */
        const mt_cinst_t *r0 = &rows[mem[i]];
        uint8_t tier = (uint8_t)col[COL_TIER][mem[i]];
        int32_t expected;
        if (is_p2p(r0))
            expected = 2;
        else if (r0->group_size > 0)
            expected = (int32_t)r0->group_size;
        else {
            if (!gr && group_ranks(rows, n, grp, col, &gr, &n_gr) != MT_OK)
                goto done;
            expected = ranks_in_group(gr, n_gr, tier >= MT_KEY_PG_ORDINAL ? col[COL_A][mem[i]] : r0->group);
        }
        size_t cnt = j - i;
        bool dup = false, differ = false;
        for (size_t k = i + 1; k < j; k++) {
            const mt_cinst_t *a = &rows[mem[k - 1]], *b = &rows[mem[k]];
            dup |= a->rank == b->rank;
            differ |= b->sig != r0->sig;
        }
        uint8_t status;
        if (cnt == 1)
            status = MT_INST_UNMATCHED;
        else if (dup || differ || (int32_t)cnt > expected)
            status = MT_INST_MISMATCH;
        else if ((int32_t)cnt == expected)
            status = MT_INST_FULL;
        else
            status = MT_INST_PARTIAL;
        m->key[inst] = tier;
        if (ikey) {
            ikey[3 * inst] = col[COL_A][mem[i]];
            ikey[3 * inst + 1] = col[COL_B][mem[i]];
            ikey[3 * inst + 2] = col[COL_C][mem[i]];
        }
        m->status[inst] = status;
        m->expected[inst] = expected;
        st.by_key[tier]++;
        switch (status) {
        case MT_INST_FULL: st.full++; break;
        case MT_INST_PARTIAL: st.partial++; break;
        case MT_INST_UNMATCHED: st.unmatched++; break;
        default: st.mismatched++; break;
        }
        inst++;
        i = j;
    }
    m->first[inst] = (uint32_t)n;
    *out = m;
    m = NULL;
    if (keys) {
        *keys = ikey;
        ikey = NULL;
    }
    rc = MT_OK;
done:
    ptie_free(&tie);
    mt_match_free(m);
    free(ikey);
    for (int c = 0; c < N_COLS; c++)
        free(col[c]);
    free(anch);
    free(grp);
    free(se);
    free(p2p_ord);
    free(gr);
    free(start);
    free(cls);
    if (stats)
        *stats = st;
    return rc;
}

mt_status_t mt_match(const mt_cinst_t *rows, size_t n, mt_match_t **out, mt_match_stats_t *stats)
{
    return match_rows(rows, n, out, stats, NULL);
}

mt_status_t mt_match_keyed(const mt_cinst_t *rows, size_t n, mt_match_t **out, mt_match_stats_t *stats,
                           uint64_t **keys)
{
    return match_rows(rows, n, out, stats, keys);
}

/* Rows whose key is their own (row_key without the match's other rows)
 * and that expect participants without counting the group's ranks. A P2P
 * row without ids is placed by its pair alone: its key's last field counts
 * the pair's earlier rows, all of which then meet on one process. */
int mt_match_shard_of(const mt_cinst_t *r, int size)
{
    if (!is_p2p(r) && r->group_size <= 0)
        return -1; /* expected: the ranks with rows of the group, job-wide */
    uint64_t k[4];
    row_key(r, 0, 0, 0, k);
    if (k[0] == MT_KEY_PG_ORDINAL || k[0] == MT_KEY_STREAM_ORDINAL)
        return -1; /* ordinal keys: anchored against other ranks' sequences */
    if (k[0] == MT_KEY_P2P)
        k[2] = k[3] = 0;
    if (size <= 1)
        return 0;
    return (int)(mt_hash64(k, sizeof k, 0x5a4d) % (uint64_t)size);
}
