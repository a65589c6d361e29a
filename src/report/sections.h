/* The report.json sections, each written from its stage's results and
 * assembled by mt_report_json (report.c): internal to src/report/ and the
 * unit tests. */
#ifndef MT_REPORT_SECTIONS_H
#define MT_REPORT_SECTIONS_H

#include "mergetrace/report.h"

/* The report.json sections of the per-rank analyses, given every rank's
 * result sorted by rank (a[0..n), borrowed). Writes
 *   "temporal": [...], "overlap": [...], "idle": [...], "projection": [...],
 *   "projection_total": [...], "kernels": [...], "launch": [...]
 * with no leading or trailing comma, so the caller places them inside its
 * object. Times are microseconds with 3 decimals (exact from integer ns),
 * percentages have 2 decimals. projection_total sums count, cpu and gpu of
 * each name over the ranks; its gpu_pct is of the summed busy time of all
 * ranks. Returns MT_OK, MT_ERR_NOMEM, or what w returned. */
mt_status_t mt_report_rank_sections(const mt_rank_analysis_t *const *a, size_t n, mt_write_fn w, void *ctx);

/* The report.json sections (docs/report-schema.md):
 *   "collectives": [...], "stragglers": {...}, "wait": [...]
 * with no leading or trailing comma, so the caller places them inside its
 * object. Times are microseconds with 3 decimals (exact from integer ns),
 * percentages 2 decimals, bandwidths GB/s with 3 decimals or null. x is
 * borrowed. Returns MT_OK or what w returned. */
mt_status_t mt_report_cross_sections(const mt_cross_t *x, mt_write_fn w, void *ctx);

/* report.json: writes `"steps": {...}` (no comma around; docs/report-schema.md). */
mt_status_t mt_report_steps_json(const mt_critpath_t *c, mt_write_fn w, void *ctx);

/* report.html: the `<section id="steps">` of the step strips (the median
 * and the slowest used step: ranks x aligned time, the critical path
 * outlined) and the what-if table; c borrowed, NULL writes a note. MT_OK or
 * what w returned. */
mt_status_t mt_report_steps_html(const mt_critpath_t *c, mt_write_fn w, void *ctx);

/* report.json: writes `"hang": {...}` (no comma around) from the Flight
 * Recorder analysis h and, when placed (NULL: none) says a merged trace of
 * traces was written, how the dumps were placed in it ("merged_trace")
 * (docs/report-schema.md, "hang"). MT_OK or what w returned. */
mt_status_t mt_report_hang_json(const mt_fr_hang_t *h, const struct mt_fr_placed *placed, mt_write_fn w, void *ctx);

/* report.html: the `<section id="hang">` (the terminal verdict, the
 * terminal's line of how the dumps were placed in the merged trace when
 * placed (NULL: none) says one was written, and a table by rank: dump,
 * clock offset, wait, last completed collective). MT_OK, MT_ERR_NOMEM or
 * what w returned. */
mt_status_t mt_report_hang_html(const mt_fr_hang_t *h, const struct mt_fr_placed *placed, mt_write_fn w, void *ctx);

/* A name for a line of text: at most w characters (mt_fmt_cell), "…" where
 * cut, no padding; b NUL-terminated. */
void mt_report_name_cut(char *b, size_t cap, const char *s, int w);

/* report.json: writes `"pipeline": {...}` (no comma around). */
mt_status_t mt_report_pipeline_json(const mt_pipeline_t *p, mt_write_fn w, void *ctx);

/* report.json: `"gates": [{"expr", "metric", "op", "threshold", "value",
 * "pass"}]` (no comma around); value null when not measured, with "why". */
mt_status_t mt_report_gates_json(const mt_gate_t *g, size_t n, mt_write_fn w, void *ctx);

/* report.json: writes `"memory": {...}` (no comma around) from
 * r->memory, r->analyses and r->clocks (docs/report-schema.md, "memory").
 * MT_OK or what w returned. */
mt_status_t mt_report_memory_json(const mt_report_t *r, mt_write_fn w, void *ctx);

/* report.html: the "Ideal what-if" section (src/report/html_whatif.c): S,
 * the per-worker / per-stage heat map of min(S_worker, S_stage) with its
 * values and a colour legend, the blamed stage, M_S, M_W and S per type.
 * Writes nothing when I is NULL or did not run. I is borrowed. MT_OK or
 * what write returned. */
mt_status_t mt_report_html_whatif(const mt_cp_ideal_t *I, mt_write_fn write, void *ctx);

/* The corrected time of ns on rank's clock: clocks[0..n) searched by rank;
 * ns unchanged when the rank has none (or clocks is NULL). */
int64_t mt_report_aligned(const mt_clock_t *clocks, size_t n, int32_t rank, int64_t ns);

#endif
