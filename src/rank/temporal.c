/* The temporal breakdown of a rank's GPU time (compute / comm / memory /
 * idle over its span) and the comm-compute overlap, from the per-class
 * unions of mt_an_input_t. */
#include "rank/passes.h"
#include "base/bigmem.h"

#include <stdlib.h>

mt_status_t mt_an_temporal(const mt_an_input_t *in, mt_rank_analysis_t *a)
{
    a->gpu_activities = in->n_acts;
    a->gpu_first_ns = a->gpu_last_ns = 0;
    if (in->n_acts) {
        /* acts are sorted by start; the last end can be anywhere. */
        a->gpu_first_ns = in->acts[0].start_ns;
        int64_t last = in->acts[0].end_ns;
        for (size_t i = 1; i < in->n_acts; i++)
            if (in->acts[i].end_ns > last)
                last = in->acts[i].end_ns;
        a->gpu_last_ns = last;
    }
    a->span_ns = a->gpu_last_ns - a->gpu_first_ns;
    a->busy_ns = mt_iv_measure(in->busy, in->n_busy);
    const mt_interval_t *cu = in->u[MT_AN_COMPUTE], *mu = in->u[MT_AN_COMM], *yu = in->u[MT_AN_MEMORY];
    size_t ncu = in->n_u[MT_AN_COMPUTE], nmu = in->n_u[MT_AN_COMM], nyu = in->n_u[MT_AN_MEMORY];
    a->compute_ns = mt_iv_measure(cu, ncu);
    a->comm_total_ns = mt_iv_measure(mu, nmu);
    a->overlap_ns = mt_iv_overlap(mu, nmu, cu, ncu);
    a->comm_ns = a->comm_total_ns - a->overlap_ns;
    /* memory minus (compute u comm): |Y n (C u M)| = |Y n C| + |Y n M| - |Y n C n M|,
     * and the last term needs C n M as a list; simpler to build C u M. */
    mt_interval_t *cm = mt_big_malloc((ncu + nmu ? ncu + nmu : 1) * sizeof *cm);
    if (!cm)
        return MT_ERR_NOMEM;
    size_t k = mt_iv_union2(cu, ncu, mu, nmu, cm);
    a->memory_ns = mt_iv_measure(yu, nyu) - mt_iv_overlap(yu, nyu, cm, k);
    free(cm);
    a->idle_ns = a->span_ns - a->busy_ns;
    return MT_OK;
}
