/* report.json (schema "mergetrace.report/1"): what the run found, written
 * through a sink so the core never touches stdout. Keys are documented in
 * docs/report-schema.md. The output is deterministic: it does not depend
 * on how many processes ran or how long they took. */
#ifndef MERGETRACE_REPORT_H
#define MERGETRACE_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mergetrace/timeline.h"
#include "mergetrace/tljob.h"
#include "mergetrace/analysis.h"
#include "mergetrace/collectives.h"
#include "mergetrace/crossrank.h"
#include "mergetrace/critpath.h"
#include "mergetrace/gates.h"
#include "mergetrace/memory.h"
#include "mergetrace/buf.h"
#include "mergetrace/nccl_input.h"
#include "mergetrace/nccl_join.h"
#include "mergetrace/rank.h"
#include "mergetrace/trust.h"
#include "mergetrace/fr_hang.h"
#include "mergetrace/fr_share.h"
#include "mergetrace/pipeline.h"
#include "mergetrace/status.h"
#include "mergetrace/summary.h"
#include "mergetrace/warnings.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mt_report_input {
    int32_t rank;
    const char *rank_source;  /* "distributedInfo", "rank-map", "file name", "default" */
    const char *path;
    uint64_t bytes;           /* on disk */
    uint64_t json_bytes;
    uint64_t events;
    bool truncated;
    uint64_t truncated_at;
    const mt_trace_summary_t *summary; /* counts per phase, category, GPU class; may be NULL */
    bool nccl_only;           /* the rank has an NCCL plugin file and no Kineto trace (path is that file) */
} mt_report_input_t;

struct mt_report_views;

/* One NCCL plugin file of the job (report.json "nccl"). */
typedef struct mt_report_nccl {
    int32_t rank;
    const char *path;
    const char *format;       /* "plugin" (libnccl-profiler-mergetrace.so), "inspector" (NCCL Inspector log) or "example" (NCCL example profiler trace) */
    uint64_t untimed;         /* Inspector records without kernel times (no rows) */
    const char *host;
    int64_t pid;
    int32_t comm_size;        /* nranks of the largest communicator, which gave the rank */
    uint64_t comms, tasks, rows;
    uint64_t p2p_left_out;    /* P2P tasks of other communicators (peer's global rank unknown) */
    uint64_t dropped, orphan_channels, unknown_lines;
    bool truncated;
    bool has_offset_bound;
    int64_t gpu_offset_bound_ns;
    bool with_kineto;         /* the rank has a Kineto trace too */
    bool pid_differs;         /* with_kineto: the trace's process id is not pid */
    bool size_differs;        /* with_kineto: the trace's world size is not comm_size */
    int64_t kineto_pid;       /* with_kineto: the trace's process id, -1 unknown */
    bool aligned_on_nccl;     /* its NCCL rows, not Kineto's, went into matching and the clock fit */
    const mt_nccl_agree_t *agree; /* NULL: no comparison (no Kineto trace, or no rows on one side) */
} mt_report_nccl_t;

/* Why a file was left out (the warnings' codes; report.json lists them
 * alike). */
typedef enum mt_report_skip_kind {
    MT_REPORT_SKIP_NOT_TRACE = 0, /* loaded, and not a trace ("skipped_file") */
    MT_REPORT_SKIP_LEFT_OUT,      /* an NCCL example profiler file of another communicator ("left_out_file") */
    MT_REPORT_SKIP_INPUT,         /* left out before loading: one of mergetrace's own outputs, or a link not
                                   * followed (first set) ("skipped_input", "link_not_followed") */
} mt_report_skip_kind_t;

typedef struct mt_report_skip {
    const char *path;
    const char *reason;
    mt_report_skip_kind_t kind;
    const char *first;        /* a link not followed: the path by which its directory was read; else NULL */
} mt_report_skip_t;

/* Everything report.json says. All pointers are borrowed for the call. */
typedef struct mt_report {
    const char *version;
    int64_t world_size;
    const mt_report_input_t *inputs;   /* sorted by rank */
    size_t n_inputs;
    const int64_t *missing;            /* ranks below world_size with no trace (the first 65,536 of them) */
    size_t n_missing;
    int64_t missing_count;             /* all of them */
    const mt_report_skip_t *skipped;
    size_t n_skipped;
    bool aligned;                      /* false with --no-align */
    const char *clock_note;            /* why no clock was fitted (a merged trace read back); NULL: none */
    int32_t reference_rank;
    const mt_clock_t *clocks;          /* one per input, same order */
    size_t n_clocks;
    const mt_match_stats_t *match;
    const char *merged;                /* merged trace file name, NULL when not written */
    uint64_t merged_events;
    const mt_rank_analysis_t *const *analyses; /* per-rank passes, sorted by rank; NULL = none */
    size_t n_analyses;
    const mt_cross_t *cross;           /* cross-rank passes; NULL = none */
    const struct mt_report_views *views; /* pictures of report.html (report_html.h); NULL = none */
    const mt_pipeline_t *pipeline;     /* NULL = no pipeline (the key is left out) */
    const mt_critpath_t *critpath;     /* steps, critical path, what-ifs; NULL = no step (the key is left out) */
    const mt_mem_cross_t *memory;      /* memory across ranks (mt_cross_memory); NULL = no memory events (key left out) */
    const char *pipeline_note;         /* why there is no pipeline section, or which stages it used; may be NULL */
    const mt_gate_t *gates;            /* evaluated (mt_gates_eval) */
    size_t n_gates;
    const mt_report_nccl_t *nccl;      /* NCCL plugin files by rank; none: the key is left out */
    size_t n_nccl;
    const char *nccl_source;           /* "kineto", "nccl" or "mixed": which rows aligned the clocks */
    const mt_warnings_t *warnings;     /* every warning of the run, in the terminal's order; NULL = none */
    const struct mt_compare *compare;  /* --baseline: the comparison (report.html only); NULL = none */
    const mt_fr_hang_t *hang;          /* Flight Recorder dumps' post-mortem; NULL = no dump (key left out) */
    const struct mt_fr_placed *hang_placed; /* how the dumps beside traces were placed in the merged trace
                                             * (mergetrace/fr_share.h); NULL, or not written: key left out */
} mt_report_t;

/* What the run's warnings need beyond the report. All borrowed. */
typedef struct mt_report_warn_facts {
    const mt_trace_summary_t *const *sums; /* per input of the report, NCCL-only ranks' too (their world size
                                            * is their communicator's); NULL, or NULL entries: nothing known */
    bool world_disagree;                   /* the traces disagree on the world size (the report's is the largest) */
    const mt_nccl_job_t *nccl;             /* the job's NCCL files; NULL: none */
    const char *critpath_skipped;          /* why the critical path was left out (mt_critpath_memory_note); NULL */
    const mt_trust_t *trust;               /* one run? how good is the fit? NULL: nothing to say */
    bool merge_failed;                     /* the merged trace was not written */
} mt_report_warn_facts_t;

/* The job's NCCL files as report.json lists them: *out, nj->n entries
 * (malloc'd, the caller frees; NULL when nj has none), in nj's order;
 * paths and the comparisons borrowed from nj, which must outlive them.
 * MT_OK or MT_ERR_NOMEM (*out NULL). */
mt_status_t mt_report_nccl_files(const mt_nccl_job_t *nj, mt_report_nccl_t **out);

/* The report of Flight Recorder dumps alone (no trace) into *rep (zeroed
 * first): one input per dump of fr (rank source "file name", its file,
 * size and entry count), the ranks of the verdict's world without a dump
 * as missing, the reference rank, merged (the merged trace's file name;
 * NULL when none was written) with every entry counted, and the verdict.
 * rep->inputs and rep->missing are malloc'd (free with mt_report_fr_free);
 * the rest borrowed from fr, which must outlive rep. MT_OK or
 * MT_ERR_NOMEM (nothing to free). */
mt_status_t mt_report_fr_alone(const mt_fr_job_t *fr, const char *merged, mt_report_t *rep);
void mt_report_fr_free(mt_report_t *rep);

/* Every warning of the run appended to *w, in the order the terminal
 * prints them (codes in docs/report-schema.md): missing ranks, files left
 * out, the world size, nothing to align with, the NCCL files', per rank
 * (clock, truncation, time base, world, categories, UTF-8, durations,
 * memory events, time stamps, unlinked kernels, where the rank came from),
 * the critical path left out, clock groups, trust, --no-align, partial and
 * mismatched collectives, a failed merge. Returns w->st (MT_ERR_NOMEM when
 * a warning could not be added). */
mt_status_t mt_report_warnings(const mt_report_t *r, const mt_report_warn_facts_t *f, mt_warnings_t *w);

/* ---- terminal text of the cross-rank and pipeline results ---- */

/* A few lines of plain text for the terminal (each at most 100 columns):
 * the top collectives, the straggler suspects with their evidence, the
 * steps whose suspects differ, the ranks that wait most. Returns MT_OK or
 * what w returned. */
mt_status_t mt_report_cross_text(const mt_cross_t *x, mt_write_fn w, void *ctx);

/* At most six lines for the terminal (each at most about 100 columns):
 * step time p50 / p99, what gates the step and communication on the
 * critical path, the best what-if with the replay error, the ideal
 * what-if (S, blamed stage, M_S, M_W; S by type and by stage or the worst
 * rank) when it ran, the first root cause of waiting. Returns MT_OK or what w returned. */
mt_status_t mt_report_steps_text(const mt_critpath_t *c, mt_write_fn w, void *ctx);

/* The per-rank GPU time table and the heaviest annotations' GPU projection,
 * for the terminal (plain text, fits 100 columns; long names cut with "…").
 * a[0..n) is every rank's result sorted by rank, borrowed; NULL entries
 * (ranks without a Kineto trace) are skipped; nothing when all are NULL.
 * Returns MT_OK or what w returned. */
mt_status_t mt_report_rank_text(const mt_rank_analysis_t *const *a, size_t n, mt_write_fn w, void *ctx);

/* The terminal section (plain text, fits 100 columns). */
mt_status_t mt_report_pipeline_text(const mt_pipeline_t *p, mt_write_fn w, void *ctx);

/* The memory section for the terminal, at most 4 lines of plain text
 * (100 columns): the highest peak and where, max / median, per stage, and
 * the devices whose allocated memory grows on every step. an[0..n) are the
 * results m was computed from (borrowed). Writes nothing when m is NULL.
 * MT_OK or what w returned. */
mt_status_t mt_report_memory_text(const mt_mem_cross_t *m, const mt_rank_analysis_t *const *an, size_t n,
                                  mt_write_fn w, void *ctx);
/* What the terminal summary says beyond report.json: how the run went and
 * where its outputs are. All pointers borrowed for the call. */
typedef struct mt_report_text_opts {
    bool color;               /* bold headings, yellow cautions (ANSI) */
    int n_procs;              /* processes (or worker threads) that ran */
    bool threads;             /* worker threads of a run by hand, not processes */
    double load_s, align_s, merge_s; /* wall seconds of loading, alignment, the merged trace */
    const char *out_dir;      /* the output directory as the user named it */
    bool html;                /* report.html was written */
    const char *merged_path;  /* the merged trace's path; NULL: not written */
    const char *removed;      /* outputs of an earlier run removed ("a and b"); NULL or "": none */
    bool mixed_runs;          /* --force over traces of different runs: the cross-rank sections say so */
} mt_report_text_opts_t;

/* The terminal summary of the run: the job and what was loaded (r->inputs,
 * each merged trace and Nsight Systems export counted once), the matching,
 * the clock table (past 32 ranks: the reference, the ranks not connected
 * and the 8 largest residuals), Nsight Systems sessions, the NCCL files,
 * the per-rank, cross-rank, steps, pipeline and memory text sections, the
 * gates, r->warnings and what was written. Plain text (ANSI colour when
 * t->color). Returns MT_OK, or the sink's first error. */
mt_status_t mt_report_text(const mt_report_t *r, const mt_report_text_opts_t *t, mt_write_fn w, void *ctx);

/* report.json of an operation-level timeline (docs/report-schema.md,
 * "Operation-level timelines"): version, input (path, counts, sizes,
 * operation types, ranks), clock (no fit, and why), matching (instances),
 * steps (the "steps" section, with "ideal"; null when c is NULL). All
 * borrowed. Returns MT_OK or the sink's error. */
mt_status_t mt_report_timeline_json(const char *path, const mt_timeline_t *tl, const mt_tl_job_t *j,
                                    const mt_critpath_t *c, mt_write_fn w, void *ctx);

/* The terminal summary of an operation-level timeline: what it is (ranks,
 * parallel sizes, operations, send/recv pairs, collectives; no clock fit),
 * the steps' lines (mt_report_steps_text, when c), and what was written
 * (out_dir/report.json, and out_dir/report.html when html). All borrowed.
 * Returns MT_OK or the sink's first error. */
mt_status_t mt_report_timeline_text(const char *path, const mt_timeline_t *tl, const mt_tl_job_t *j,
                                    const mt_critpath_t *c, const char *out_dir, bool html, mt_write_fn w, void *ctx);

/* Write report.json to the sink. Returns MT_OK or the sink's error. */
mt_status_t mt_report_json(const mt_report_t *r, mt_write_fn write, void *ctx);

#ifdef __cplusplus
}
#endif
#endif
