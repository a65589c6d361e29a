/* --timings as text and as timings.json (src/report/report_timings.c):
 * the phase times, CPU seconds, memory plan and peak memory of a run,
 * which the program measures and reduces over its processes. Kept apart
 * from report.json, which must be the same bytes for any process count. */
#ifndef MERGETRACE_REPORT_TIMINGS_H
#define MERGETRACE_REPORT_TIMINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mergetrace/buf.h"
#include "mergetrace/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The phases, in the order of mt_timings_t.seconds. */
typedef enum mt_timings_phase {
    MT_TPH_LOAD, MT_TPH_PARSE, MT_TPH_RANK_PASSES, MT_TPH_GATHER, MT_TPH_ALIGN, MT_TPH_MATCH, MT_TPH_CLOCK_FIT,
    MT_TPH_CROSS_RANK, MT_TPH_MERGED_WRITE, MT_TPH_REPORT, MT_TPH_TOTAL, MT_TPH_COUNT_
} mt_timings_phase_t;

/* Whether a phase is measured on process 0 only (its value comes from
 * there; the others are the max over the processes). */
bool mt_timings_root_only(mt_timings_phase_t p);

/* A run's numbers, as process 0 holds them after the reductions. */
typedef struct mt_timings {
    int n_procs;
    uint64_t ranks, json_bytes, events;
    double seconds[MT_TPH_COUNT_];
    int helpers;                 /* processes that deflated the merged trace on a helper thread */
    double load_cpu, match_cpu, clock_fit_cpu, cross_rank_cpu, critpath_cpu; /* process 0's CPU seconds */
    int match_procs;             /* processes that matched the rows */
    double critpath;             /* process 0's critical path, wall seconds */
    uint64_t critpath_rss_growth;
    /* process 0's memory plan */
    uint64_t plan_rss, plan_without, plan_with, plan_budget, plan_acts, plan_rows;
    bool plan_skipped;
    uint64_t p0_peak;            /* process 0's peak RSS over the run */
    const uint64_t *files;       /* input files given to each process (n_procs; borrowed); NULL: not known */
    long peak;                   /* the highest peak RSS, and its process */
    int peak_who;
    uint64_t largest, largest_on_peak; /* JSON bytes of the largest trace, of the peak process's largest */
} mt_timings_t;

/* The --timings block for stderr, lines ending in '\n', the first
 * "mergetrace: timings (...)". MT_OK or what write returned. */
mt_status_t mt_timings_text(const mt_timings_t *t, mt_write_fn write, void *ctx);

/* timings.json, the generator first (mt_merge_sniff_output knows the file
 * by it). MT_OK or what write returned. */
mt_status_t mt_timings_json(const mt_timings_t *t, mt_write_fn write, void *ctx);

#ifdef __cplusplus
}
#endif
#endif
