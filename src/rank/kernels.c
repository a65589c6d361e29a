/* Top kernels per class (compute, comm, memory) by total GPU time, with
 * count, mean and nearest-rank percentiles of their durations. */
#include "rank/passes.h"
#include "base/bigmem.h"

#include <stdlib.h>
#include <string.h>

typedef struct kcand {
    mt_an_kernel_t k;  /* name not yet set */
    const char *nm;    /* borrowed from the trace's strtab */
    size_t nm_len;
} kcand_t;

static uint32_t an_cls(uint8_t cls)
{
    return cls == MT_CLASS_COMPUTE ? MT_AN_COMPUTE : cls == MT_CLASS_COMM ? MT_AN_COMM : MT_AN_MEMORY;
}

/* Fields of activity i of in->acts. */
#define DUR(i) (in->acts[i].end_ns - in->acts[i].start_ns)
#define NAME(i) (in->acts[i].name)
#define CLS(i) an_cls(in->acts[i].cls)

static int name_cmp(const char *a, size_t na, const char *b, size_t nb)
{
    int c = memcmp(a, b, na < nb ? na : nb);
    if (c)
        return c;
    return (na > nb) - (na < nb);
}

/* By class, then total descending, then name bytes. */
static int kcand_cmp(const void *pa, const void *pb)
{
    const kcand_t *a = pa, *b = pb;
    if (a->k.cls != b->k.cls)
        return a->k.cls < b->k.cls ? -1 : 1;
    if (a->k.total_ns != b->k.total_ns)
        return a->k.total_ns > b->k.total_ns ? -1 : 1;
    return name_cmp(a->nm, a->nm_len, b->nm, b->nm_len);
}

mt_status_t mt_an_kernels(const mt_an_input_t *in, mt_rank_analysis_t *a)
{
    const size_t n = in->n_acts;
    a->n_kernels = 0;
    int top = in->o->top_kernels;
    if (!n || top <= 0)
        return MT_OK;
    uint64_t *key = mt_big_malloc(n * sizeof *key);
    uint32_t *r = mt_big_malloc(n * sizeof *r);
    kcand_t *c = NULL;
    mt_status_t st = MT_ERR_NOMEM;
    if (!key || !r)
        goto out;
    /* Activities by (class, name, duration): stable sorts, least
     * significant field first. */
    for (size_t i = 0; i < n; i++) {
        r[i] = (uint32_t)i;
        key[i] = mt_sort_key_i64(DUR(r[i]));
    }
    if (mt_sort_u64(key, r, n))
        goto out;
    for (size_t i = 0; i < n; i++)
        key[i] = in->acts[r[i]].name;
    if (mt_sort_u64(key, r, n))
        goto out;
    for (size_t i = 0; i < n; i++)
        key[i] = CLS(r[i]);
    if (mt_sort_u64(key, r, n))
        goto out;
    size_t nc = 1;
    for (size_t i = 1; i < n; i++)
        nc += CLS(r[i]) != CLS(r[i - 1]) || NAME(r[i]) != NAME(r[i - 1]);
    c = malloc(nc * sizeof *c);
    if (!c)
        goto out;
    nc = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && CLS(r[j]) == CLS(r[i]) && NAME(r[j]) == NAME(r[i]))
            j++;
        size_t cnt = j - i;
        int64_t total = 0;
        for (size_t k = i; k < j; k++)
            total += DUR(r[k]);
        /* The run is sorted by duration: percentiles index it directly. */
        int64_t p50 = DUR(r[i + ((50 * cnt + 99) / 100) - 1]);
        int64_t p99 = DUR(r[i + ((99 * cnt + 99) / 100) - 1]);
        kcand_t *k = &c[nc++];
        k->k = (mt_an_kernel_t){.cls = CLS(r[i]),
                                .count = cnt,
                                .total_ns = total,
                                .mean_ns = (int64_t)((2 * total + (int64_t)cnt) / (2 * (int64_t)cnt)),
                                .p50_ns = p50,
                                .p99_ns = p99,
                                .max_ns = DUR(r[j - 1])};
        k->nm = mt_strtab_get(in->t->strings, NAME(r[i]), &k->nm_len);
        i = j;
    }
    qsort(c, nc, sizeof *c, kcand_cmp);
    size_t keep = 0;
    for (size_t i = 0, in_cls = 0; i < nc; i++) {
        in_cls = (i && c[i].k.cls == c[i - 1].k.cls) ? in_cls + 1 : 0;
        keep += in_cls < (size_t)top;
    }
    a->kernels = calloc(keep ? keep : 1, sizeof *a->kernels);
    if (!a->kernels)
        goto out;
    st = MT_OK;
    for (size_t i = 0, in_cls = 0; i < nc && st == MT_OK; i++) {
        in_cls = (i && c[i].k.cls == c[i - 1].k.cls) ? in_cls + 1 : 0;
        if (in_cls >= (size_t)top)
            continue;
        mt_an_kernel_t *k = &a->kernels[a->n_kernels++];
        *k = c[i].k;
        st = mt_an_string_add(a, c[i].nm, mt_an_name_cut(c[i].nm, c[i].nm_len, MT_AN_NAME_MAX), &k->name);
    }
out:
    free(key);
    free(r);
    free(c);
    return st;
}
