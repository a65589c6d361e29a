/* report.html: the report as one self-contained page (inline CSS and SVG,
 * no network, no fonts; a small inline script only sorts tables, the page
 * reads the same without it). Sections (each an element with a stable id):
 *   inputs       ranks, files, sizes, the command line, the version
 *   gpu-time     per-rank stacked bars compute / comm / memory / idle and
 *                overlap % (r->analyses)
 *   stragglers   heat map rank x ProfilerStep of mean lateness
 *                (r->views), suspects and their evidence (r->cross)
 *   collectives  the collective table by total time (r->cross)
 *   projection   CPU vs GPU time per annotation, summed over ranks
 *                (r->analyses)
 *   kernels      the ranks' top kernels per class, summed over ranks
 *   clocks       offset and residual per rank (r->clocks) and a few
 *                collectives' end times before and after correction
 *                (r->views)
 * A section whose data is absent says so instead of drawing. Every string
 * that comes from a trace, a file name or the command line is escaped
 * with mt_html_escape (src/base/text.h). The page is deterministic (no date, no timings). */
#ifndef MERGETRACE_REPORT_HTML_H
#define MERGETRACE_REPORT_HTML_H

#include <stddef.h>
#include <stdint.h>

#include "mergetrace/collectives.h"
#include "mergetrace/buf.h"
#include "mergetrace/report.h"
#include "mergetrace/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mt_html_opts {
    const char *command_line; /* argv joined by spaces, shown in the header; NULL = not shown */
} mt_html_opts_t;


/* Write report.html for r (the same data as report.json, plus r->views for
 * the pictures report.json does not hold). Everything is borrowed for the
 * call; o may be NULL. Returns MT_OK or the sink's error. */
mt_status_t mt_report_html(const mt_report_t *r, const mt_html_opts_t *o, mt_write_fn write, void *ctx);

/* ---- Views: the few extra numbers the pictures need ------------------- */

/* One collective instance's end times across its participants. */
typedef struct mt_report_sample {
    uint8_t kind;              /* mt_coll_kind_t */
    char pg[MT_CI_LABEL];      /* process group label of its lowest rank */
    int64_t step;              /* ProfilerStep, -1 none */
    size_t n;                  /* participants */
    int32_t *ranks;            /* n, ascending */
    int64_t *raw_end_ns;       /* n: kernel end on the rank's own clock */
    int64_t *end_ns;           /* n: the same after mt_clock_apply */
} mt_report_sample_t;

/* Cells of the lateness grid with no instance of that rank in that step. */
#define MT_VIEW_NONE INT64_MIN
/* The grid keeps at most this many steps (the first ones). */
#define MT_VIEW_MAX_STEPS 64

/* Plain data; owns every array (mt_report_views_free). */
typedef struct mt_report_views {
    mt_report_sample_t *samples;
    size_t n_samples;
    /* lateness (crossrank.h: arrival - the instance's median arrival) of
     * each rank in each ProfilerStep, averaged over the rank's instances
     * (>= 2 participants, not mismatched) of the step, rounded toward 0 */
    int32_t *grid_ranks;       /* ascending */
    size_t n_grid_ranks;
    int64_t *grid_steps;       /* ascending, at most MT_VIEW_MAX_STEPS consecutive ones: with more, the
                                * window with the most waiting (summed over its instances) */
    size_t n_grid_steps;
    size_t n_steps_total;      /* steps with an instance, before the cap */
    int64_t *grid_ns;          /* [rank index * n_grid_steps + step index], MT_VIEW_NONE = no instance */
} mt_report_views_t;

/* Build the views from the alignment's rows, label table and match
 * (mt_align_result_t on process 0) and the clocks of ranks[0..n_ranks) (clocks may be NULL:
 * own clocks). Samples: up to max_samples full instances with the most
 * participants, evenly spread over the job in corrected end order. Rows of
 * ranks not in ranks[] keep their own clock. Everything is borrowed; *out
 * is owned by the caller, NULL on error. Returns MT_OK or MT_ERR_NOMEM.
 * Not collective; O(n log n) in the rows. */
mt_status_t mt_report_views_build(const mt_crow_t *rows, size_t n_rows, const mt_strtab_t *labels,
                                  const mt_match_t *m, const mt_clock_t *clocks, const int32_t *ranks,
                                  size_t n_ranks, size_t max_samples, mt_report_views_t **out);

/* Free the views and everything they own. NULL does nothing. */
void mt_report_views_free(mt_report_views_t *v);

#ifdef __cplusplus
}
#endif
#endif /* MERGETRACE_REPORT_HTML_H */
