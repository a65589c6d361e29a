/* Interval lists (see interval.h). */
#include "base/interval.h"

#include <stdlib.h>
#include <string.h>

#include "base/bigmem.h"
#include "base/sort.h"

size_t mt_iv_merge_sorted(mt_interval_t *iv, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (iv[i].end <= iv[i].start)
            continue;
        if (k && iv[i].start <= iv[k - 1].end) {
            if (iv[i].end > iv[k - 1].end)
                iv[k - 1].end = iv[i].end;
        } else {
            iv[k++] = iv[i];
        }
    }
    return k;
}

mt_status_t mt_iv_union(mt_interval_t *iv, size_t *n)
{
    size_t m = *n;
    if (!m)
        return MT_OK; /* iv may be NULL then */
    uint64_t *key = mt_big_malloc((m ? m : 1) * sizeof *key);
    uint32_t *perm = mt_big_malloc((m ? m : 1) * sizeof *perm);
    mt_interval_t *tmp = mt_big_malloc((m ? m : 1) * sizeof *tmp);
    mt_status_t st = key && perm && tmp ? MT_OK : MT_ERR_NOMEM;
    for (size_t i = 0; st == MT_OK && i < m; i++) {
        perm[i] = (uint32_t)i;
        key[i] = mt_sort_key_i64(iv[i].start);
    }
    if (st == MT_OK)
        st = mt_sort_u64(key, perm, m);
    if (st == MT_OK) {
        for (size_t i = 0; i < m; i++)
            tmp[i] = iv[perm[i]];
        memcpy(iv, tmp, m * sizeof *iv);
        *n = mt_iv_merge_sorted(iv, m);
    }
    free(key);
    free(perm);
    free(tmp);
    return st;
}

int64_t mt_iv_measure(const mt_interval_t *iv, size_t n)
{
    int64_t m = 0;
    for (size_t i = 0; i < n; i++)
        m += iv[i].end - iv[i].start;
    return m;
}

int64_t mt_iv_overlap(const mt_interval_t *a, size_t na, const mt_interval_t *b, size_t nb)
{
    int64_t m = 0;
    size_t i = 0, j = 0;
    while (i < na && j < nb) {
        int64_t s = a[i].start > b[j].start ? a[i].start : b[j].start;
        int64_t e = a[i].end < b[j].end ? a[i].end : b[j].end;
        if (e > s)
            m += e - s;
        if (a[i].end < b[j].end)
            i++;
        else
            j++;
    }
    return m;
}

size_t mt_iv_union2(const mt_interval_t *a, size_t na, const mt_interval_t *b, size_t nb, mt_interval_t *out)
{
    size_t i = 0, j = 0, k = 0;
    while (i < na || j < nb) {
        mt_interval_t v = (j >= nb || (i < na && a[i].start <= b[j].start)) ? a[i++] : b[j++];
        if (k && v.start <= out[k - 1].end) {
            if (v.end > out[k - 1].end)
                out[k - 1].end = v.end;
        } else {
            out[k++] = v;
        }
    }
    return k;
}

static int64_t field_at(const void *base, size_t i, size_t size, size_t off)
{
    int64_t v;
    memcpy(&v, (const char *)base + i * size + off, sizeof v);
    return v;
}

long mt_iv_find_hint(const void *base, size_t n, size_t size, size_t start_off, size_t end_off, int64_t t,
                     size_t *hint)
{
#define START(i) field_at(base, (i), size, start_off)
    size_t lo = *hint;
    if (lo <= n && (lo == 0 || START(lo - 1) <= t) && (lo == n || START(lo) > t)) {
        /* the hint */
    } else if (lo < n && START(lo) <= t && (lo + 1 == n || START(lo + 1) > t)) {
        lo++;
    } else {
        size_t hi = n;
        lo = 0;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (START(mid) <= t)
                lo = mid + 1;
            else
                hi = mid;
        }
    }
#undef START
    if (*hint != SIZE_MAX)
        *hint = lo;
    for (size_t k = lo; k-- > 0 && lo - k <= 4;)
        if (field_at(base, k, size, end_off) >= t)
            return (long)k;
    return -1;
}
