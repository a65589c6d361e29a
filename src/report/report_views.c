/* The views of report.html: sample instances' end times before and after
 * clock correction, and the rank x step lateness grid. */
#include <stdlib.h>
#include <string.h>

#include "mergetrace/report_html.h"
#include "base/sort.h"

typedef struct cand {
    int64_t key; /* corrected end of the lowest rank */
    size_t inst;
} cand_t;

static int cand_cmp(const void *x, const void *y)
{
    const cand_t *a = x, *b = y;
    if (a->key != b->key)
        return (a->key > b->key) - (a->key < b->key);
    return (a->inst > b->inst) - (a->inst < b->inst);
}

void mt_report_views_free(mt_report_views_t *v)
{
    if (!v)
        return;
    for (size_t i = 0; i < v->n_samples; i++) {
        free(v->samples[i].ranks);
        free(v->samples[i].raw_end_ns);
        free(v->samples[i].end_ns);
    }
    free(v->samples);
    free(v->grid_ranks);
    free(v->grid_steps);
    free(v->grid_ns);
    free(v);
}

/* Index of rank in the sorted list, or SIZE_MAX. */
static size_t find_i32(const int32_t *v, size_t n, int32_t x)
{
    const int32_t *hit = bsearch(&x, v, n, sizeof *v, mt_cmp_i32);
    return hit ? (size_t)(hit - v) : SIZE_MAX;
}

static const mt_clock_t *clock_of(const int32_t *ranks, const mt_clock_t *clocks, size_t n_ranks, int32_t rank)
{
    for (size_t i = 0; clocks && i < n_ranks; i++)
        if (ranks[i] == rank)
            return &clocks[i];
    return NULL;
}

static int64_t corrected(const mt_clock_t *c, int64_t t)
{
    return c ? mt_clock_apply(c, t) : t;
}

static bool usable(const mt_match_t *m, size_t i)
{
    return m->first[i + 1] - m->first[i] >= 2 &&
           (m->status[i] == MT_INST_FULL || m->status[i] == MT_INST_PARTIAL);
}

mt_status_t mt_report_views_build(const mt_crow_t *rows, size_t n_rows, const mt_strtab_t *labels,
                                  const mt_match_t *m, const mt_clock_t *clocks, const int32_t *ranks, size_t n_ranks,
                                  size_t max_samples, mt_report_views_t **out)
{
    (void)n_rows;
    *out = NULL;
    mt_report_views_t *v = calloc(1, sizeof *v);
    size_t ni = m ? m->n_inst : 0;
    size_t maxk = 1;
    for (size_t i = 0; i < ni; i++)
        if (m->first[i + 1] - m->first[i] > maxk)
            maxk = m->first[i + 1] - m->first[i];
    /* clk[k]: the clock of ranks in sorted order (grid_ranks) */
    int64_t *arr = malloc(maxk * sizeof *arr), *steps = malloc((ni ? ni : 1) * sizeof *steps);
    const mt_clock_t **clk = NULL;
    int64_t *sum = NULL;
    uint64_t *cnt = NULL;
    cand_t *cand = NULL;
    if (!v || !arr || !steps)
        goto fail;

    /* the grid's ranks: those passed in, sorted, unique (rows of other
     * ranks are left out of the grid) */
    v->grid_ranks = malloc((n_ranks ? n_ranks : 1) * sizeof *v->grid_ranks);
    clk = calloc(n_ranks ? n_ranks : 1, sizeof *clk);
    if (!v->grid_ranks || !clk)
        goto fail;
    memcpy(v->grid_ranks, ranks, n_ranks * sizeof *ranks);
    qsort(v->grid_ranks, n_ranks, sizeof *v->grid_ranks, mt_cmp_i32);
    for (size_t i = 0; i < n_ranks; i++)
        if (!v->n_grid_ranks || v->grid_ranks[i] != v->grid_ranks[v->n_grid_ranks - 1])
            v->grid_ranks[v->n_grid_ranks++] = v->grid_ranks[i];
    for (size_t i = 0; i < v->n_grid_ranks; i++)
        clk[i] = clock_of(ranks, clocks, n_ranks, v->grid_ranks[i]);

    /* the step of each usable instance: the smallest step >= 0 among its
     * participants (as the straggler analysis counts it) */
    size_t ns = 0;
    for (size_t i = 0; i < ni; i++) {
        if (!usable(m, i))
            continue;
        int64_t step = -1;
        for (uint32_t p = m->first[i]; p < m->first[i + 1]; p++) {
            int64_t s = rows[m->members[p]].step;
            if (s >= 0 && (step < 0 || s < step))
                step = s;
        }
        if (step >= 0)
            steps[ns++] = step;
    }
    qsort(steps, ns, sizeof *steps, mt_cmp_i64);
    size_t nu = 0;
    for (size_t i = 0; i < ns; i++)
        if (!nu || steps[i] != steps[nu - 1])
            steps[nu++] = steps[i];
    v->n_steps_total = nu;
    v->n_grid_steps = nu < MT_VIEW_MAX_STEPS ? nu : MT_VIEW_MAX_STEPS;
    /* More steps than the grid holds: show the MT_VIEW_MAX_STEPS
     * consecutive ones with the most waiting (sum over instances of last
     * arrival - each arrival), so an intermittent straggler late in a long
     * job is in view; the earliest such window on ties. */
    size_t w0 = 0;
    if (nu > v->n_grid_steps) {
        int64_t *wsum = calloc(nu, sizeof *wsum);
        if (!wsum)
            goto fail;
        for (size_t i = 0; i < ni; i++) {
            if (!usable(m, i))
                continue;
            uint32_t f = m->first[i], k = m->first[i + 1] - f;
            int64_t step = -1, amax = INT64_MIN, wait = 0;
            for (uint32_t p = 0; p < k; p++) {
                const mt_crow_t *r = &rows[m->members[f + p]];
                size_t g = find_i32(v->grid_ranks, v->n_grid_ranks, r->rank);
                arr[p] = corrected(g == SIZE_MAX ? NULL : clk[g], r->start_ns);
                amax = arr[p] > amax ? arr[p] : amax;
                if (r->step >= 0 && (step < 0 || r->step < step))
                    step = r->step;
            }
            int64_t *si = step >= 0 ? bsearch(&step, steps, nu, sizeof step, mt_cmp_i64) : NULL;
            for (uint32_t p = 0; p < k; p++) /* differences: epoch ns times k would overflow */
                wait += amax - arr[p];
            if (si)
                wsum[si - steps] += wait;
        }
        int64_t cur = 0, best = -1;
        for (size_t i = 0; i < nu; i++) {
            cur += wsum[i];
            if (i >= v->n_grid_steps)
                cur -= wsum[i - v->n_grid_steps];
            if (i + 1 >= v->n_grid_steps && cur > best) {
                best = cur;
                w0 = i + 1 - v->n_grid_steps;
            }
        }
        free(wsum);
    }
    v->grid_steps = malloc((v->n_grid_steps ? v->n_grid_steps : 1) * sizeof *v->grid_steps);
    size_t cells = v->n_grid_ranks * v->n_grid_steps;
    v->grid_ns = malloc((cells ? cells : 1) * sizeof *v->grid_ns);
    sum = calloc(cells ? cells : 1, sizeof *sum);
    cnt = calloc(cells ? cells : 1, sizeof *cnt);
    if (!v->grid_steps || !v->grid_ns || !sum || !cnt)
        goto fail;
    memcpy(v->grid_steps, steps + w0, v->n_grid_steps * sizeof *steps);

    /* lateness per participant, summed per (rank, step) */
    size_t ncand = 0;
    cand = malloc((ni ? ni : 1) * sizeof *cand);
    if (!cand)
        goto fail;
    for (size_t i = 0; i < ni; i++) {
        uint32_t f = m->first[i], k = m->first[i + 1] - f;
        if (k == maxk && m->status[i] == MT_INST_FULL && k >= 2) {
            const mt_crow_t *r0 = &rows[m->members[f]];
            size_t g = find_i32(v->grid_ranks, v->n_grid_ranks, r0->rank);
            cand[ncand++] = (cand_t){corrected(g == SIZE_MAX ? NULL : clk[g], r0->end_ns), i};
        }
        if (!usable(m, i))
            continue;
        int64_t step = -1;
        for (uint32_t p = 0; p < k; p++) {
            const mt_crow_t *r = &rows[m->members[f + p]];
            size_t g = find_i32(v->grid_ranks, v->n_grid_ranks, r->rank);
            arr[p] = corrected(g == SIZE_MAX ? NULL : clk[g], r->start_ns);
            if (r->step >= 0 && (step < 0 || r->step < step))
                step = r->step;
        }
        int64_t *si = step >= 0 ? bsearch(&step, v->grid_steps, v->n_grid_steps, sizeof step, mt_cmp_i64) : NULL;
        if (!si)
            continue;
        size_t sc = (size_t)(si - v->grid_steps);
        /* the median arrival: the middle one, or the mean of the two
         * middle ones rounded down (as crossrank.h defines it) */
        int64_t srt[64], *sv = k <= 64 ? srt : malloc(k * sizeof *sv);
        if (!sv)
            goto fail;
        memcpy(sv, arr, k * sizeof *sv);
        qsort(sv, k, sizeof *sv, mt_cmp_i64);
        int64_t hi = sv[k / 2], lo = k % 2 ? hi : sv[k / 2 - 1];
        int64_t med = lo + (hi - lo) / 2;
        if (sv != srt)
            free(sv);
        for (uint32_t p = 0; p < k; p++) {
            size_t g = find_i32(v->grid_ranks, v->n_grid_ranks, rows[m->members[f + p]].rank);
            if (g == SIZE_MAX)
                continue;
            sum[g * v->n_grid_steps + sc] += arr[p] - med;
            cnt[g * v->n_grid_steps + sc]++;
        }
    }
    for (size_t c = 0; c < cells; c++)
        v->grid_ns[c] = cnt[c] ? sum[c] / (int64_t)cnt[c] : MT_VIEW_NONE;

    /* samples: evenly spread over the candidates in corrected end order */
    qsort(cand, ncand, sizeof *cand, cand_cmp);
    size_t want = max_samples < ncand ? max_samples : ncand;
    v->samples = calloc(want ? want : 1, sizeof *v->samples);
    if (!v->samples)
        goto fail;
    for (size_t s = 0; s < want; s++) {
        size_t c = want == 1 ? 0 : s * (ncand - 1) / (want - 1);
        size_t i = cand[c].inst;
        uint32_t f = m->first[i], k = m->first[i + 1] - f;
        mt_report_sample_t *sp = &v->samples[v->n_samples++];
        const mt_crow_t *r0 = &rows[m->members[f]];
        sp->kind = r0->kind;
        size_t pl;
        const char *pg = mt_strtab_get(labels, r0->pg_id, &pl);
        pl = pl < sizeof sp->pg ? pl : sizeof sp->pg - 1;
        memcpy(sp->pg, pg, pl);
        sp->pg[pl] = '\0';
        sp->step = -1;
        sp->n = k;
        sp->ranks = malloc(k * sizeof *sp->ranks);
        sp->raw_end_ns = malloc(k * sizeof *sp->raw_end_ns);
        sp->end_ns = malloc(k * sizeof *sp->end_ns);
        if (!sp->ranks || !sp->raw_end_ns || !sp->end_ns)
            goto fail;
        /* members are by rank within an instance */
        for (uint32_t p = 0; p < k; p++) {
            const mt_crow_t *r = &rows[m->members[f + p]];
            size_t g = find_i32(v->grid_ranks, v->n_grid_ranks, r->rank);
            sp->ranks[p] = r->rank;
            sp->raw_end_ns[p] = r->end_ns;
            sp->end_ns[p] = corrected(g == SIZE_MAX ? NULL : clk[g], r->end_ns);
            if (r->step >= 0 && (sp->step < 0 || r->step < sp->step))
                sp->step = r->step;
        }
    }
    free(arr);
    free(steps);
    free(clk);
    free(sum);
    free(cnt);
    free(cand);
    *out = v;
    return MT_OK;
fail:
    free(arr);
    free(steps);
    free(clk);
    free(sum);
    free(cnt);
    free(cand);
    mt_report_views_free(v);
    return MT_ERR_NOMEM;
}
