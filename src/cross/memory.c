/* Memory across ranks (include/mergetrace/memory.h): the highest peak, max
 * over median, and the peaks per pipeline stage. */
#include "mergetrace/memory.h"
#include "base/stats.h"

#include <stdlib.h>
#include <string.h>

void mt_mem_cross_free(mt_mem_cross_t *m)
{
    if (!m)
        return;
    free(m->peaks);
    free(m->stages);
    free(m);
}

/* max / median of the peaks of the given ones (indices into p). */
static double median_of(const mt_mem_peak_t *p, const size_t *idx, size_t k, double *tmp)
{
    for (size_t i = 0; i < k; i++)
        tmp[i] = (double)p[idx[i]].peak;
    return mt_stats_median_f64(tmp, k);
}

mt_status_t mt_cross_memory(const mt_rank_analysis_t *const *an, size_t n, const mt_pp_stages_t *stages,
                            mt_mem_cross_t **out)
{
    *out = NULL;
    bool any = false, gpu = false;
    for (size_t i = 0; i < n; i++)
        for (size_t d = 0; d < an[i]->n_mem_devs; d++) {
            any = true;
            gpu |= an[i]->mem_devs[d].device_type != 0;
        }
    if (!any)
        return MT_OK;
    mt_mem_cross_t *m = calloc(1, sizeof *m);
    size_t *idx = malloc((n ? n : 1) * sizeof *idx);
    double *tmp = malloc((n ? n : 1) * sizeof *tmp);
    if (!m || !idx || !tmp || !(m->peaks = calloc(n, sizeof *m->peaks)))
        goto nomem;
    m->gpu = gpu;
    for (size_t i = 0; i < n; i++) {
        const mt_rank_analysis_t *a = an[i];
        size_t best = SIZE_MAX;
        for (size_t d = 0; d < a->n_mem_devs; d++) {
            if ((a->mem_devs[d].device_type != 0) != gpu)
                continue;
            if (best == SIZE_MAX || a->mem_devs[d].peak_alloc > a->mem_devs[best].peak_alloc)
                best = d;
        }
        if (best == SIZE_MAX)
            continue;
        m->peaks[m->n_peaks++] =
            (mt_mem_peak_t){.rank = a->rank, .stage = -1, .an = i, .dev = best, .peak = a->mem_devs[best].peak_alloc};
    }
    for (size_t k = 0; k < m->n_peaks; k++) {
        if (m->peaks[k].peak > m->peaks[m->top].peak)
            m->top = k;
        idx[k] = k;
    }
    m->median_peak = median_of(m->peaks, idx, m->n_peaks, tmp);
    m->max_over_median = m->median_peak > 0 ? (double)m->peaks[m->top].peak / m->median_peak : 0;
    if (stages && stages->n) {
        if (!(m->stages = calloc(stages->n, sizeof *m->stages)))
            goto nomem;
        m->n_stages = stages->n;
        for (size_t s = 0; s < stages->n; s++) {
            mt_mem_stage_t *g = &m->stages[s];
            memcpy(g->name, stages->name[s], sizeof g->name);
            g->name[sizeof g->name - 1] = '\0';
            g->top_rank = -1;
            size_t k = 0;
            for (size_t q = 0; q < m->n_peaks; q++)
                for (size_t x = stages->first[s]; x < stages->first[s + 1]; x++)
                    if (stages->ranks[x] == m->peaks[q].rank) {
                        m->peaks[q].stage = (int32_t)s;
                        idx[k++] = q;
                        if (g->top_rank < 0 || m->peaks[q].peak > g->max_peak) {
                            g->top_rank = m->peaks[q].rank;
                            g->max_peak = m->peaks[q].peak;
                        }
                    }
            g->n_ranks = k;
            g->median_peak = median_of(m->peaks, idx, k, tmp);
        }
    }
    free(idx);
    free(tmp);
    *out = m;
    return MT_OK;
nomem:
    free(idx);
    free(tmp);
    mt_mem_cross_free(m);
    return MT_ERR_NOMEM;
}
