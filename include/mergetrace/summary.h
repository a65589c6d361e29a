/* A fixed-size summary of one loaded trace: what the program prints per
 * rank before any cross-rank analysis, and what processes exchange. */
#ifndef MERGETRACE_SUMMARY_H
#define MERGETRACE_SUMMARY_H

#include <stdint.h>

#include "mergetrace/link.h"
#include "mergetrace/trace.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mt_trace_summary {
    uint64_t events;
    uint64_t bytes_in, bytes_json;
    uint64_t by_class[MT_CLASS_COUNT_];   /* GPU activities by class */
    uint64_t by_ph[MT_PH_COUNT_];
    uint64_t by_cat[MT_CAT_COUNT_];
    uint64_t other_cats;                  /* events with an unknown category */
    uint64_t collectives;                 /* collective metadata records */
    mt_link_stats_t link;
    int64_t first_ns, last_ns;            /* earliest start, latest end of any X event (ns) */
    int64_t gpu_first_ns, gpu_last_ns;    /* the same over GPU activities; 0 when none */
    int64_t rank, world_size;             /* from distributedInfo (-1 absent) */
    int32_t ts_style;                     /* mt_ts_style_t */
    int32_t truncated;                    /* 1 when the input ended early */
    uint64_t truncated_at;
    uint64_t unknown_fields, bad_values, bad_utf8, neg_dur;
    uint64_t no_ts, no_ts_kernels;        /* complete events (of them kernels) without "ts" */
    int64_t host_pid;                     /* the process: pid of the CUDA runtime calls, else of the CPU
                                           * ops; -1 when neither has a numeric pid */
    int64_t session_start_ns;             /* an Nsight Systems export's UTC session start (ns since the
                                           * epoch; the trace's times count from it); -1 otherwise */
    int32_t nsys;                         /* 1: the trace came from an Nsight Systems export */
    int32_t pad_;
} mt_trace_summary_t;

/* One ProfilerStep#N range of a rank (CPU side), for step windows. */
typedef struct mt_step {
    int64_t step, start_ns, end_ns;
    int32_t rank;
    int32_t pad_;
} mt_step_t;

/* Append the ProfilerStep#N user_annotation ranges of t (global rank
 * `rank`) to *steps (realloc'd; *cap is its capacity). MT_OK or
 * MT_ERR_NOMEM (unchanged then). */
mt_status_t mt_trace_steps(const mt_trace_t *t, int32_t rank, mt_step_t **steps, size_t *n, size_t *cap);

/* The same over the events t->events[idx[0 .. n_idx)] only, in that order
 * (idx borrowed): for a caller that has listed t's X user_annotation
 * events already (the per-rank analysis' shared input), and so need not
 * read every event again. The same steps as mt_trace_steps when idx holds
 * all of them in file order; other events in idx are passed over alike. */
mt_status_t mt_trace_steps_of(const mt_trace_t *t, const uint32_t *idx, size_t n_idx, int32_t rank,
                              mt_step_t **steps, size_t *n, size_t *cap);

/* Fill *s from t. Uses t's link statistics, linking first when the trace
 * was loaded without it (mt_trace_link is idempotent). Returns MT_OK or
 * MT_ERR_NOMEM. */
mt_status_t mt_trace_summarize(mt_trace_t *t, mt_trace_summary_t *s);

#ifdef __cplusplus
}
#endif
#endif
