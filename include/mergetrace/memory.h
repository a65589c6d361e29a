/* Memory across ranks: from every rank's memory pass (mt_rank_analysis_t
 * mem_devs), the rank with the highest peak, how uneven the peaks are
 * (max / median), and the peaks grouped by pipeline stage where the stages
 * are known. Runs on process 0 over the gathered per-rank results.
 *
 * Definitions: a rank's peak is the largest peak_alloc over its GPU
 * devices (device_type != 0); when no rank has GPU memory events, over its
 * CPU devices instead (basis "cpu"). Ranks without memory events of the
 * basis are left out. median: mt_stats_median_f64 of the ranks' peaks;
 * max_over_median = max / median (0 when the median is 0). Per stage: the
 * same over the stage's ranks that have a peak. */
#ifndef MERGETRACE_MEMORY_H
#define MERGETRACE_MEMORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mergetrace/analysis.h"
#include "mergetrace/pipeline.h"
#include "mergetrace/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One rank's peak. */
typedef struct mt_mem_peak {
    int32_t rank;
    int32_t stage;           /* index into mt_mem_cross_t.stages, -1 none */
    size_t an;               /* index of the rank's result in the analyses given */
    size_t dev;              /* index of the device in that result's mem_devs */
    int64_t peak;            /* bytes */
} mt_mem_peak_t;

typedef struct mt_mem_stage {
    char name[32];           /* the pipeline's stage name */
    size_t n_ranks;          /* ranks of the stage with a peak */
    int32_t top_rank;        /* -1 when n_ranks is 0 */
    int64_t max_peak;
    double median_peak;
} mt_mem_stage_t;

/* Plain data owned by the struct: free with mt_mem_cross_free. */
typedef struct mt_mem_cross {
    bool gpu;                /* the peaks are GPU memory (false: CPU memory, no GPU memory events anywhere) */
    mt_mem_peak_t *peaks;    /* by rank */
    size_t n_peaks;
    size_t top;              /* index in peaks of the highest (the lowest rank among equals) */
    double median_peak, max_over_median;
    mt_mem_stage_t *stages;  /* in pipeline order; NULL without stages */
    size_t n_stages;
} mt_mem_cross_t;

/* The summary over an[0..n) (borrowed; sorted by rank; entries may not be
 * NULL), with stages (borrowed, may be NULL). *out NULL when no rank has
 * memory events (MT_OK). MT_OK or MT_ERR_NOMEM. Not collective. */
mt_status_t mt_cross_memory(const mt_rank_analysis_t *const *an, size_t n, const mt_pp_stages_t *stages,
                            mt_mem_cross_t **out);

/* NULL does nothing. */
void mt_mem_cross_free(mt_mem_cross_t *m);

#ifdef __cplusplus
}
#endif
#endif
