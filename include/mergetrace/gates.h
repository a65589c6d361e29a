/* CI gates: "--gate pipeline_overlap_score>=0.30" and the like, checked
 * against what the run measured, so a CI job can fail on a regression (exit
 * code 3).
 *
 * Metrics (the value a gate compares; a threshold outside its range is a
 * usage error):
 *  pipeline_overlap_score  the pipeline OverlapScore, 0..1 ("overlap" is
 *                      accepted as its old name; it is not the terminal's
 *                      comm/compute overlap, a percentage)
 *  period_p99_us       the pipeline period p99, us (>= 0)
 *  straggler_wait_pct  the largest share, over the ranks, of collective
 *                      kernel time spent waiting for the last participant:
 *                      wait / (wait + transfer) * 100 (report.json "wait")
 *  idle_pct            the largest GPU idle share over the ranks:
 *                      idle / span * 100 (report.json "temporal")
 *  alignment_p99_us    the largest p99 clock residual over the ranks, us
 *  step_p50_us, step_p99_us, period_p50_us
 *                      step time p50 / p99 (measured only in a comparison,
 *                      include/mergetrace/compare.h) and the pipeline
 *                      period p50
 * Percentages are 0..100, times >= 0 (for a number; a relative
 * threshold is checked once the baseline is known).
 * Operators: <=, >=, <, >, ==. The right-hand side is a number, or relative
 * to the baseline run of --baseline: "baseline", "1.05*baseline",
 * "baseline-0.05", "0.9*baseline+100" (mt_compare_gates sets it). A gate whose metric the run could not
 * measure (no pipeline, no collectives, no GPU activity) fails: a CI gate
 * that silently passes on missing data would hide a broken job. */
#ifndef MERGETRACE_GATES_H
#define MERGETRACE_GATES_H

#include <stdbool.h>
#include <stddef.h>

#include "mergetrace/analysis.h"
#include "mergetrace/collectives.h"
#include "mergetrace/critpath.h"
#include "mergetrace/crossrank.h"
#include "mergetrace/buf.h"
#include "mergetrace/pipeline.h"
#include "mergetrace/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mt_gate_metric {
    MT_GATE_OVERLAP = 0,
    MT_GATE_PERIOD_P99_US,
    MT_GATE_STRAGGLER_WAIT_PCT,
    MT_GATE_IDLE_PCT,
    MT_GATE_ALIGNMENT_P99_US,
    MT_GATE_STEP_P50_US,
    MT_GATE_STEP_P99_US,
    MT_GATE_PERIOD_P50_US,
    MT_GATE_METRIC_COUNT_
} mt_gate_metric_t;

typedef enum mt_gate_op { MT_GATE_LE = 0, MT_GATE_GE, MT_GATE_LT, MT_GATE_GT, MT_GATE_EQ } mt_gate_op_t;

typedef struct mt_gate {
    char expr[96];          /* the expression as given (cut to fit) */
    mt_gate_metric_t metric;
    mt_gate_op_t op;
    double threshold;       /* relative: mul x baseline + add, once the baseline is known */
    bool relative;          /* the threshold names "baseline" */
    double mul, add;
    bool has_baseline;      /* relative: the baseline run had the metric */
    double baseline;
    bool noise_pass;        /* relative: passed because the change is within noise */
    bool too_few;           /* relative: the metric's samples are too few to tell */
    bool measured;          /* mt_gates_eval found a value */
    double value;
    bool pass;
    const char *why;        /* when not measured: a static reason */
} mt_gate_t;

/* Parse "metric OP number" or "metric OP [NUM*]baseline[(+|-)NUM]"
 * (spaces allowed around the operator). MT_OK, or
 * MT_ERR_USAGE with what was expected in err->msg (err may be NULL): an
 * unknown metric or operator, no finite number, or a number outside the
 * metric's range. */
mt_status_t mt_gate_parse(const char *text, mt_gate_t *g, mt_error_t *err);

/* Name of a metric ("pipeline_overlap_score", ...; never an old alias). */
const char *mt_gate_metric_str(mt_gate_metric_t m);
/* "<=", ">=", "<", ">" or "==". */
const char *mt_gate_op_str(mt_gate_op_t op);

/* What the gates look at; any pointer may be NULL (not measured). */
typedef struct mt_gate_inputs {
    const mt_pipeline_t *pipeline;
    const mt_cross_t *cross;
    const mt_rank_analysis_t *const *analyses;
    size_t n_analyses;
    const mt_clock_t *clocks;
    size_t n_clocks;
    bool aligned;
    const mt_critpath_t *critpath; /* the steps (step_p50_us, step_p99_us: report.json steps); NULL none */
} mt_gate_inputs_t;

/* Fill measured, value, pass and why of g[0..n). Returns how many failed. */
size_t mt_gates_eval(mt_gate_t *g, size_t n, const mt_gate_inputs_t *in);

/* A failed gate as the line the program says (even with -q or --json: a
 * CI log must show it): "gate failed: EXPR (value V, baseline B)" for a
 * relative one, "gate failed: EXPR (value V)", or "gate failed: EXPR (not
 * measured: WHY)"; V and B as %.6g. In buf (cap bytes); NULL when g
 * passed. */
const char *mt_gate_failure(const mt_gate_t *g, char *buf, size_t cap);


#ifdef __cplusplus
}
#endif
#endif
