/* Do the traces belong to one run, and how far can the clock fit be
 * trusted? Run on process 0 after matching and the clock fit, over every
 * rank's header facts, clocks and collective rows. Serial and plain data.
 *
 * Evidence that traces come from different runs (the first found is
 * reported, in this order; each names two traces):
 *
 *  world size     two traces give different distributedInfo.world_size:
 *                 every rank of one job reports the default group's size.
 *  shared group   ranks in two clock groups of two or more ranks each
 *                 (clock.ranks[].group) that both ran collectives of one
 *                 named process group (rows with MT_CI_PG and the same
 *                 group hash) yet share no instance: within one run the
 *                 group's collectives include all its members.
 *  drift          a fitted (significant) drift beyond MT_TRUST_MAX_DRIFT_PPM.
 *                 NTP slews a clock by at most 500 ppm and free-running
 *                 quartz is within about +-100 ppm, so two real clocks
 *                 differ by at most 1000 ppm; the limit is three times
 *                 that (the generator's own extreme, --max-drift-ppm 1000
 *                 on two nodes, gives up to 2000).
 *  residual       a rank's residual p50 above MT_TRUST_MAX_RESID_NS (1 ms)
 *                 from 4 or more instances: the kernels of one collective
 *                 end within microseconds of each other, so a fit whose
 *                 typical end disagrees by a millisecond is not a clock.
 *  sizes          a rank disagrees with the majority of the other
 *                 participants on kind, size or dtype (mt_crow_t.sig),
 *                 together with another participant that agrees with it,
 *                 at MT_TRUST_SIZES_PCT % or more of its instances (at
 *                 least 4), AND its fit is poor (residual p99 above
 *                 MT_TRUST_POOR_FIT_NS): two sides of two or more ranks
 *                 each, paired with each other's collectives. One rank
 *                 with odd sizes (the robust test), two ranks paired
 *                 wrongly (HTA's down-sampled 2 of 128: 6 of 10 disagree,
 *                 p99 350 us) or a noisy fit alone happen in one run.
 *  window         a rank that shares no instance with the reference's
 *                 group and whose trace window lies more than
 *                 MT_TRUST_MAX_GAP_NS (24 h) from the reference's: a
 *                 connected rank with a plausible fit may be hours off (its
 *                 clock is corrected), an unconnected one cannot be.
 *
 * Not evidence: Kineto's trace_id (each process draws its own), disjoint
 * raw windows of connected ranks (unsynchronised nodes), mismatched
 * instances with a good fit (the robust test "collectives mismatched").
 *
 * A poor fit that is still plausible (some connected rank's residual p99
 * above MT_TRUST_POOR_FIT_NS, 100 us) is a warning; the straggler section
 * then says how far the fit's error could move arrivals. */
#ifndef MERGETRACE_TRUST_H
#define MERGETRACE_TRUST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mergetrace/collectives.h"
#include "mergetrace/crossrank.h"
#include "mergetrace/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MT_TRUST_MAX_DRIFT_PPM 3000.0
#define MT_TRUST_MAX_RESID_NS 1e6
#define MT_TRUST_POOR_FIT_NS 1e5
#define MT_TRUST_SIZES_PCT 25
#define MT_TRUST_MAX_GAP_NS 86400000000000LL

/* What the core needs of one trace, in the order of the clocks. */
typedef struct mt_trust_trace {
    int32_t rank;
    int64_t world_size;        /* distributedInfo.world_size; <= 0 unknown */
    int64_t first_ns, last_ns; /* the trace's window on its own clock; last < first: unknown */
    bool nccl;                 /* an NCCL plugin file: no window of a trace (mt_trust_apart) */
} mt_trust_trace_t;

typedef enum mt_trust_code {
    MT_TRUST_SAME_RUN = 0,
    MT_TRUST_WORLD_SIZE,
    MT_TRUST_SHARED_GROUP,
    MT_TRUST_DRIFT,
    MT_TRUST_RESIDUAL,
    MT_TRUST_SIZES,
    MT_TRUST_WINDOW,
} mt_trust_code_t;

typedef struct mt_trust {
    mt_trust_code_t mixed;  /* MT_TRUST_SAME_RUN: no evidence of different runs */
    size_t a, b;            /* mixed: indices of two traces that do not belong together (a: the
                             * reference's side when there is one) */
    char why[160];          /* mixed: the evidence, e.g. "world sizes 8 and 2" */
    bool poor_fit;          /* some connected rank's residual p99 > MT_TRUST_POOR_FIT_NS */
    size_t worst;           /* the connected, fitted rank with the largest residual p99 (index) */
    double fit_error_ns;    /* its residual p99: how far a corrected arrival may be off; 0 none */
    uint64_t worst_matched; /* its instances in the fit */
} mt_trust_t;

/* Weigh the evidence above over n traces with their clocks (same order;
 * from mt_clock_fit), the rows and the match (may be NULL: no
 * collectives). aligned: false with --no-align (the fit's numbers are
 * then only residuals; the drift, residual and sizes rules are skipped).
 * Fills *out. MT_OK or MT_ERR_NOMEM. Not collective. */
mt_status_t mt_trust_check(const mt_trust_trace_t *traces, const mt_clock_t *clocks, size_t n,
                           const mt_crow_t *rows, size_t n_rows, const mt_match_t *m, bool aligned,
                           mt_trust_t *out);

/* The stable report code of a verdict: "mixed_world_size", "mixed_shared_group", "mixed_drift",
 * "mixed_residual", "mixed_sizes", "mixed_window"; "" for MT_TRUST_SAME_RUN. */
const char *mt_trust_code_str(mt_trust_code_t c);

/* Add what the straggler verdict cannot rest on to x's evidence lines
 * (they reach the terminal, report.json and report.html): with
 * aligned false, that arrivals were compared on raw clocks; with a poor
 * fit, how far its error could move arrivals and whether the suspects'
 * lateness exceeds it; with forced, that the traces are of different runs
 * (t->why). MT_OK or MT_ERR_NOMEM. */
mt_status_t mt_trust_annotate(mt_cross_t *x, const mt_trust_t *t, bool aligned, bool forced);

/* The job's world and its absent ranks, from the traces alone (before
 * any alignment; the program's rank checks). */
typedef struct mt_trust_world {
    int64_t world;     /* the largest world size a trace names, at least the highest rank + 1 */
    bool disagree;     /* two traces name different world sizes */
    int64_t n_absent;  /* every rank below world without a trace */
    int64_t *missing;  /* the first MT_TRUST_MISSING_LISTED of them, ascending (malloc'd, the caller
                        * frees; NULL when none, or out of memory: n_missing 0) */
    size_t n_missing;
} mt_trust_world_t;

/* Listed at most: a world_size of 2^31 in one trace must not cost
 * gigabytes or a loop over every rank (absent runs between traced ranks
 * are counted whole). */
#define MT_TRUST_MISSING_LISTED ((size_t)1 << 16)

/* Traces whose windows start days apart on the corrected clock (one
 * without its absolute time base beside others with one, under
 * --no-align): nothing can compare them, and the sums of their
 * differences would not fit int64 ns; not even --force goes on. Over
 * traces[0..n) with a known window, not NCCL files, each start moved by
 * its clock's offset (clocks[0..n_clocks), the same order; none past
 * n_clocks): true when the earliest and the latest are more than
 * MT_TRUST_APART_NS apart, with their indexes in *a and *b and the
 * distance in *apart_ns. Not collective. */
#define MT_TRUST_APART_NS ((double)((int64_t)1 << 50))
bool mt_trust_apart(const mt_trust_trace_t *traces, size_t n, const mt_clock_t *clocks, size_t n_clocks, size_t *a,
                    size_t *b, double *apart_ns);

/* The world of n >= 1 traces: ranks[0..n) ascending and distinct,
 * world_sizes[0..n) what each names (<= 0: none). Fills *w. Not
 * collective. */
void mt_trust_world(const int64_t *ranks, const int64_t *world_sizes, size_t n, mt_trust_world_t *w);

#ifdef __cplusplus
}
#endif
#endif
