/* Radix sort, sort by fields, permutation, k-way merge and lower bounds (see sort.h). */
#include "base/sort.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "base/bigmem.h"

mt_status_t mt_sort_u64(uint64_t *keys, uint32_t *vals, size_t n)
{
    size_t i0 = 1;
    while (i0 < n && keys[i0 - 1] <= keys[i0])
        i0++;
    if (i0 >= n)
        return MT_OK; /* already sorted: common for time keys of one thread */
    if (n < 32) { /* insertion sort: stable */
        for (size_t i = 1; i < n; i++) {
            uint64_t k = keys[i];
            uint32_t v = vals[i];
            size_t j = i;
            for (; j > 0 && keys[j - 1] > k; j--) {
                keys[j] = keys[j - 1];
                vals[j] = vals[j - 1];
            }
            keys[j] = k;
            vals[j] = v;
        }
        return MT_OK;
    }
    /* Passes only over the bits in which some keys differ (time keys of one
     * run differ in their low 30-45 bits), in digits of up to 11 bits for
     * long arrays: 3-5 passes where whole bytes took 4-6, and one
     * histogram per pass. Short arrays use bytes, whose counters are
     * cheaper to clear than their keys are to sort. Any digit plan gives
     * the same order: each pass is stable. */
    uint64_t k0 = keys[0], diff = 0;
    for (size_t i = 1; i < n; i++)
        diff |= keys[i] ^ k0;
    int lo = __builtin_ctzll(diff), nb = 64 - __builtin_clzll(diff) - lo; /* diff != 0: not sorted */
    int wmax = n >= 4096 ? 11 : 8;
    int passes = (nb + wmax - 1) / wmax, w = (nb + passes - 1) / passes;
    size_t nbk = (size_t)1 << w;
    uint64_t dmask = nbk - 1;
    uint64_t *tk = mt_big_malloc(n * sizeof *tk);
    uint32_t *tv = mt_big_malloc(n * sizeof *tv);
    size_t *cnt = calloc((size_t)passes * nbk, sizeof *cnt);
    if (!tk || !tv || !cnt) {
        free(tk);
        free(tv);
        free(cnt);
        return MT_ERR_NOMEM;
    }
    /* every pass's histogram in one read */
    for (size_t i = 0; i < n; i++) {
        uint64_t k = keys[i] >> lo;
        for (int d = 0; d < passes; d++)
            cnt[(size_t)d * nbk + ((k >> (w * d)) & dmask)]++;
    }
    uint64_t *sk = keys, *dk = tk;
    uint32_t *sv = vals, *dv = tv;
    for (int d = 0; d < passes; d++) {
        size_t *c = cnt + (size_t)d * nbk;
        int sh = lo + w * d;
        size_t sum = 0;
        for (size_t b = 0; b < nbk; b++) {
            size_t x = c[b];
            c[b] = sum;
            sum += x;
        }
        for (size_t i = 0; i < n; i++) {
            size_t at = c[(sk[i] >> sh) & dmask]++;
            dk[at] = sk[i];
            dv[at] = sv[i];
        }
        uint64_t *xk = sk;
        sk = dk;
        dk = xk;
        uint32_t *xv = sv;
        sv = dv;
        dv = xv;
    }
    if (sk != keys) {
        memcpy(keys, sk, n * sizeof *keys);
        memcpy(vals, sv, n * sizeof *vals);
    }
    free(cnt);
    free(tk);
    free(tv);
    return MT_OK;
}

/* One piece of a key word: bits of one field, shifted into place. */
typedef struct field_piece {
    const uint64_t *col;
    int shr, shl;
    uint64_t mask;
} field_piece_t;

mt_status_t mt_sort_fields(const uint64_t *const *cols, size_t n_cols, size_t n, uint32_t *perm)
{
    return mt_sort_fields_runs(cols, n_cols, n, perm, 0, NULL);
}

mt_status_t mt_sort_fields_runs(const uint64_t *const *cols, size_t n_cols, size_t n, uint32_t *perm, size_t n_lead,
                                uint64_t *starts)
{
    assert(n_cols <= MT_SORT_MAX_COLS && n_lead <= n_cols);
    assert(n <= UINT32_MAX);
    if (n_cols > MT_SORT_MAX_COLS || n_lead > n_cols || n > UINT32_MAX)
        return MT_ERR_LIMIT; /* a caller's error: asserted above */
    for (size_t i = 0; i < n; i++)
        perm[i] = (uint32_t)i;
    if (starts) {
        memset(starts, 0, (n / 64 + 1) * sizeof *starts);
        starts[0] = 1;
    }
    if (n < 2)
        return MT_OK;
    /* Field f's values differ only in bits [lo, lo + w): above and below
     * they are all the same, so those bits alone order them. */
    int lo[MT_SORT_MAX_COLS], w[MT_SORT_MAX_COLS], total = 0, tail = 0;
    for (size_t f = 0; f < n_cols; f++) {
        const uint64_t *c = cols[f];
        uint64_t c0 = c[0], diff = 0;
        for (size_t i = 1; i < n; i++)
            diff |= c[i] ^ c0;
        lo[f] = diff ? __builtin_ctzll(diff) : 0;
        w[f] = diff ? 64 - __builtin_clzll(diff) - lo[f] : 0;
        total += w[f];
        tail += f >= n_lead ? w[f] : 0; /* the bits below the lead fields' */
    }
    if (!total)
        return MT_OK; /* all items equal: index order, one run */
    uint64_t *key = mt_big_malloc(n * sizeof *key);
    if (!key)
        return MT_ERR_NOMEM;
    /* The key: the last field's bits lowest. Word j holds its bits
     * [64j, 64j + 64), the pieces of the fields that overlap them; the
     * words are sorted lowest first, each stably, as digits are. */
    int words = (total + 63) / 64;
    for (int word = 0; word < words; word++) {
        field_piece_t pc[MT_SORT_MAX_COLS];
        int np = 0, ws = word * 64, off = 0;
        for (size_t f = n_cols; f-- > 0; off += w[f]) {
            int s = off > ws ? off : ws, e = off + w[f] < ws + 64 ? off + w[f] : ws + 64;
            if (s >= e)
                continue;
            int len = e - s;
            pc[np++] = (field_piece_t){cols[f], lo[f] + (s - off), s - ws,
                                       len == 64 ? UINT64_MAX : (UINT64_C(1) << len) - 1};
        }
        for (size_t i = 0; i < n; i++) {
            uint32_t it = perm[i];
            uint64_t k = 0;
            for (int p = 0; p < np; p++)
                k |= ((pc[p].col[it] >> pc[p].shr) & pc[p].mask) << pc[p].shl;
            key[i] = k;
        }
        if (mt_sort_u64(key, perm, n) != MT_OK) {
            free(key);
            return MT_ERR_NOMEM;
        }
    }
    /* Runs: none to mark where the lead fields never change (one run). */
    if (starts && total > tail && tail >= (words - 1) * 64) {
        /* the lead fields are the last word's bits from sh up */
        int sh = tail - (words - 1) * 64;
        for (size_t i = 1; i < n; i++)
            starts[i / 64] |= (uint64_t)((key[i] >> sh) != (key[i - 1] >> sh)) << (i % 64);
    } else if (starts && total > tail) {
        const uint64_t *vary[MT_SORT_MAX_COLS];
        size_t nv = 0;
        for (size_t f = 0; f < n_lead; f++)
            if (w[f])
                vary[nv++] = cols[f];
        for (size_t i = 1; i < n; i++) {
            uint32_t x = perm[i], y = perm[i - 1];
            bool same = true;
            for (size_t v = 0; v < nv && same; v++)
                same = vary[v][x] == vary[v][y];
            starts[i / 64] |= (uint64_t)!same << (i % 64);
        }
    }
    free(key);
    return MT_OK;
}

mt_status_t mt_kmerge_init(mt_kmerge_t *m, size_t k)
{
    /* node[k..3k): the winners while mt_kmerge_start plays (leaves at k + s) */
    assert(k >= 1); /* the contract: a merge of no source is a caller's error */
    m->k = k;
    m->node = malloc((k ? 3 * k : 1) * sizeof *m->node);
    m->key = malloc((k ? k : 1) * sizeof *m->key);
    m->tie = malloc((k ? k : 1) * sizeof *m->tie);
    if (!k || !m->node || !m->key || !m->tie) {
        mt_kmerge_free(m);
        return MT_ERR_NOMEM;
    }
    for (size_t s = 0; s < k; s++)
        m->key[s] = m->tie[s] = MT_KMERGE_END;
    return MT_OK;
}

void mt_kmerge_start(mt_kmerge_t *m)
{
    size_t k = m->k;
    uint32_t *win = m->node + k; /* win[i]: the winner at tree node i (leaves k..2k) */
    for (size_t s = 0; s < k; s++)
        win[k + s] = (uint32_t)s;
    for (size_t i = k; i-- > 1;) {
        uint32_t a = win[2 * i], b = win[2 * i + 1];
        bool bw = mt_kmerge_less(m, b, a);
        win[i] = bw ? b : a;
        m->node[i] = bw ? a : b;
    }
    m->node[0] = win[1];
}

void mt_kmerge_free(mt_kmerge_t *m)
{
    free(m->node);
    free(m->key);
    free(m->tie);
    m->node = NULL;
    m->key = m->tie = NULL;
    m->k = 0;
}

void mt_sort_permute(void *base, size_t size, uint32_t *perm, size_t n)
{
    char *b = base;
    unsigned char first[128];
    assert(size <= sizeof first);
    if (size > sizeof first)
        return;
    /* Cycle by cycle; a used perm entry becomes its own index. */
    for (size_t i = 0; i < n; i++) {
        if (perm[i] == i)
            continue;
        memcpy(first, b + i * size, size);
        size_t j = i;
        while (perm[j] != i) {
            size_t nx = perm[j];
            memcpy(b + j * size, b + nx * size, size);
            perm[j] = (uint32_t)j;
            j = nx;
        }
        memcpy(b + j * size, first, size);
        perm[j] = (uint32_t)j;
    }
}


int mt_cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

int mt_cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int mt_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

int mt_cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One body for the three key types: the keys read with memcpy (an item's
 * key need not be aligned for its type). */
#define LOWER_BOUND(T)                                                                                                 \
    const unsigned char *b = base;                                                                                     \
    size_t lo = 0, hi = n;                                                                                             \
    while (lo < hi) {                                                                                                  \
        size_t mid = lo + (hi - lo) / 2;                                                                               \
        T v;                                                                                                           \
        memcpy(&v, b + mid * stride, sizeof v);                                                                        \
        if (v < key)                                                                                                   \
            lo = mid + 1;                                                                                              \
        else                                                                                                           \
            hi = mid;                                                                                                  \
    }                                                                                                                  \
    return lo;

size_t mt_lower_bound_u64(const void *base, size_t n, size_t stride, uint64_t key)
{
    LOWER_BOUND(uint64_t)
}

size_t mt_lower_bound_i64(const void *base, size_t n, size_t stride, int64_t key)
{
    LOWER_BOUND(int64_t)
}

size_t mt_lower_bound_i32(const void *base, size_t n, size_t stride, int32_t key)
{
    LOWER_BOUND(int32_t)
}
#undef LOWER_BOUND
