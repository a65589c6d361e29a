/* Comparing two runs: a baseline A (an earlier report.json) and the run B,
 * job-level numbers with a noise-aware verdict, the step-time delta
 * explained by components, per-rank deltas, and top movers among kernels,
 * collectives and annotations. Written as compare.json (schema
 * "mergetrace.compare/1", docs/compare.md), a terminal section and a
 * report.html section. Serial; plain data.
 *
 * Verdict of a metric: from its samples in both runs (steps after the
 * warm-up, pipeline chunks after the warm-up, or ranks; see docs/compare.md)
 * a two-sided Mann-Whitney U test (base/ranktest.h). The change is beyond
 * noise when p < alpha AND |median(B) - median(A)| >= min_effect x
 * |median(A)|; it is then "faster" or "slower" by the direction that makes
 * the job faster (lower times, idle, wait, residual; higher OverlapScore),
 * else "within noise". A metric with fewer than 2 samples in either run has
 * the verdict "n/a"; one whose samples are too few for any change to reach
 * p < alpha (2 ranks against 2: the smallest p is 1/3) has "too few
 * samples to tell", never "within noise". Each tested metric states the
 * smallest change of its median it could have called (detectable). */
#ifndef MERGETRACE_COMPARE_H
#define MERGETRACE_COMPARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mergetrace/buf.h"
#include "mergetrace/gates.h"
#include "mergetrace/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mt_cmp_id {
    MT_CMP_STEP_P50 = 0,
    MT_CMP_STEP_P99,
    MT_CMP_PERIOD_P50,
    MT_CMP_PERIOD_P99,
    MT_CMP_OVERLAP,
    MT_CMP_EXPOSED_COMM_PCT,
    MT_CMP_IDLE_PCT,
    MT_CMP_STRAGGLER_WAIT_PCT,
    MT_CMP_COMM_CRITICAL_PCT,
    MT_CMP_ALIGNMENT_P99,
    MT_CMP_METRIC_COUNT_
} mt_cmp_id_t;

typedef enum mt_cmp_verdict {
    MT_CMP_NA = 0,
    MT_CMP_NOISE,
    MT_CMP_FASTER,
    MT_CMP_SLOWER,
    MT_CMP_TOO_FEW /* no change could have reached p < alpha with these samples */
} mt_cmp_verdict_t;

/* "n/a", "within noise", "faster", "slower", "too few samples to tell". */
const char *mt_cmp_verdict_str(mt_cmp_verdict_t v);
/* The metric's name as in compare.json and in gates ("step_p50_us", ...). */
const char *mt_cmp_metric_str(mt_cmp_id_t m);

typedef struct mt_cmp_metric {
    bool has_a, has_b;        /* the run reports the value */
    double a, b;              /* the job-level values */
    double delta, rel;        /* b - a; (b - a) / |a| (NAN when a = 0 or either is missing) */
    size_t na, nb;            /* samples of the verdict */
    double med_a, med_b;      /* their medians */
    double p;                 /* two-sided p-value; 1 when n/a */
    bool batched;             /* tested on means of blocks of 5 consecutive samples */
    double min_p;             /* the smallest p these sample counts can give (samples apart) */
    double detectable;        /* the smallest shift of B's samples the test calls, in the
                                 metric's unit (the larger of up and down, at least min_effect
                                 x |median A|); INFINITY when too few, NAN when n/a */
    mt_cmp_verdict_t verdict;
    const char *samples;      /* "steps", "chunks", "ranks" (static); idle and exposed comm
                                 are per step (pooled over the step's ranks) when the
                                 report has steps.per_step[].ranks[] */
    const char *why;          /* n/a: why (static); else NULL */
} mt_cmp_metric_t;

/* A named entry in both runs (kernel, collective, annotation). */
typedef struct mt_cmp_item {
    char *name;               /* owned */
    bool in_a, in_b;
    double a, b;              /* time, us (per rank: mean over the run's ranks) */
    double bw_a, bw_b;        /* collectives: bus bandwidth GB/s (NAN unknown) */
    double count_a, count_b;
} mt_cmp_item_t;

typedef struct mt_cmp_list {
    mt_cmp_item_t *v;         /* by |b - a| descending; new and vanished entries too */
    size_t n;
    size_t n_new, n_vanished;
} mt_cmp_list_t;

/* Components of the per-step GPU time (see docs/compare.md "The delta
 * explained"): compute, exposed communication, memory, idle. */
enum { MT_CMP_PART_COMPUTE = 0, MT_CMP_PART_COMM, MT_CMP_PART_MEMORY, MT_CMP_PART_IDLE, MT_CMP_PART_COUNT_ };
const char *mt_cmp_part_str(int part);

typedef struct mt_cmp_rank {
    int32_t rank;
    bool in_a, in_b;
    double step_a, step_b;                 /* per-step GPU span, us */
    double part_a[MT_CMP_PART_COUNT_], part_b[MT_CMP_PART_COUNT_];
} mt_cmp_rank_t;

typedef struct mt_compare {
    mt_cmp_metric_t m[MT_CMP_METRIC_COUNT_];
    double alpha, min_effect;
    int64_t world_a, world_b;
    int64_t steps_a, steps_b;              /* used step samples (or chunks) */
    bool pipe_a, pipe_b;
    char **notes;                          /* runs that do not line up, said in words (owned) */
    size_t n_notes;
    /* the delta explained: mean over the ranks of both runs */
    double total_a, total_b;
    double part_a[MT_CMP_PART_COUNT_], part_b[MT_CMP_PART_COUNT_];
    mt_cmp_rank_t *ranks;                  /* ranks of either run, ascending */
    size_t n_ranks;
    int32_t rank_most;                     /* rank whose per-step time changed most; -1 none */
    int32_t rank_most_compute;             /* rank whose own compute per step changed most; -1 none */
    /* where a step-time change lives: work = compute + exposed comm +
     * memory per step (mean over ranks); idle_share = idle delta / per-step
     * GPU time delta (host gaps and waiting; NAN when that delta is 0) */
    double work_a, work_b, idle_share;
    /* steady steps: the Mann-Kendall trend of each run's used step times in
     * order (p 1 with fewer than CMP_STEADY_MIN), the relative change of the
     * median from the first half to the second; unsteady when p < 0.01 */
    double trend_p_a, trend_p_b, trend_rel_a, trend_rel_b;
    bool unsteady_a, unsteady_b;
    mt_cmp_list_t kernels, collectives, annotations;
    char *baseline;                        /* what A is (a path), owned */
} mt_compare_t;

/* Parameters of the verdict. */
typedef struct mt_cmp_opts {
    double alpha;             /* significance level (default 0.05) */
    double min_effect;        /* smallest relative change of the medians called a change (default 0.005) */
} mt_cmp_opts_t;

/* Compare report.json texts a (baseline) and b (this run), each named by
 * its path for errors. NULL opts: the defaults. Returns MT_OK with *out
 * (free with mt_compare_free), MT_ERR_SYNTAX (not JSON; err has line:col),
 * MT_ERR_NOT_REPORT (JSON, but not a mergetrace report.json: no
 * "schema": "mergetrace.report/1"), MT_ERR_LIMIT (nested deeper than 64),
 * MT_ERR_NOMEM. The texts are only read during the call. */
mt_status_t mt_compare_reports(const char *a, size_t na, const char *a_path, const char *b, size_t nb,
                               const char *b_path, const mt_cmp_opts_t *opts, mt_compare_t **out,
                               mt_error_t *err);

void mt_compare_free(mt_compare_t *c);

/* Check that text[0..len) is a mergetrace report.json that a comparison
 * can read, before the run's work: MT_OK, or the errors of
 * mt_compare_reports with err filled (path names the input). */
mt_status_t mt_compare_check(const char *text, size_t len, const char *path, mt_error_t *err);

/* A kernel name without what does not make two kernels different: template
 * arguments (nested, also when the name was cut inside them), the
 * parameter list, hexadecimal addresses (as "0x?") and a leading "void ";
 * "(anonymous namespace)" outside template arguments is kept. Writes at
 * most cap bytes including the NUL into out. */
void mt_cmp_kernel_name(const char *in, char *out, size_t cap);

/* compare.json to the sink. MT_OK or the sink's error. */
mt_status_t mt_compare_json(const mt_compare_t *c, mt_write_fn w, void *ctx);
/* The terminal section (plain text, fits 100 columns). */
mt_status_t mt_compare_text(const mt_compare_t *c, mt_write_fn w, void *ctx);
/* The report.html section (<section id="compare">...). */
mt_status_t mt_compare_html(const mt_compare_t *c, mt_write_fn w, void *ctx);

/* Gates relative to the baseline ("period_p99_us<=1.05*baseline"): for
 * every gate whose metric the comparison has, its value becomes B's value
 * and, for a relative gate, its threshold mul x A + add. A relative gate
 * whose metric is "within noise" passes unless strict. A relative gate
 * that fails while its metric has "too few samples to tell" fails (the
 * test could not have seen a change) unless too_few_pass. A relative gate
 * without a baseline value fails (not measured). Returns how many gates
 * fail after this. */
size_t mt_compare_gates(const mt_compare_t *c, mt_gate_t *g, size_t n, bool strict, bool too_few_pass);

#ifdef __cplusplus
}
#endif
#endif
