/* Loading one process's share of the inputs: each file (or the parts of
 * an Nsight Systems export it owns) read one trace at a time into a
 * compact per-file result and this process's tables (collective rows,
 * ProfilerStep ranges, packed per-rank analyses, the merged write's first
 * pass); the trace is freed before the next. Serial: the program shares
 * the files out, stops early when another process failed (should_stop)
 * and gathers the results (plain data, sent as bytes). */
#ifndef MERGETRACE_INGEST_H
#define MERGETRACE_INGEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mergetrace/analysis.h"
#include "mergetrace/buf.h"
#include "mergetrace/collectives.h"
#include "mergetrace/discover.h"
#include "mergetrace/merge.h"
#include "mergetrace/nccl_join.h"
#include "mergetrace/rank.h"
#include "mergetrace/report.h"
#include "mergetrace/strtab.h"
#include "mergetrace/trust.h"
#include "mergetrace/summary.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What one process learned about one file. Plain data: sent to process 0
 * as bytes. */
typedef struct mt_ingest_result {
    int32_t index;          /* into the input list */
    int32_t status;         /* mt_status_t */
    int64_t rank;
    int32_t rank_source;    /* mt_rank_source_t */
    int32_t skipped;        /* found in a directory but not a trace: left out, reported */
    int32_t rank_tentative; /* named no rank, found in a directory: taken as 0 if it is the job's only
                             * trace (the program's check), else message holds the error */
    double load_s;
    mt_trace_summary_t sum;
    uint64_t n_gacts;       /* GPU activities of its analysis (the critical path's input), collective rows */
    uint64_t n_rows;
    uint64_t n_steps;       /* ProfilerSteps of its analysis */
    mt_nccl_info_t nccl;    /* an NCCL plugin file: nccl.is_nccl */
    char message[1024];     /* the formatted error (or the skip reason) */
} mt_ingest_result_t;

/* One process's compact state: results per file, collective rows and
 * ProfilerStep ranges of the ranks it loaded. Filled by mt_ingest_init,
 * freed by mt_ingest_free. */
typedef struct mt_ingest {
    mt_ingest_result_t *res; /* n_res of the n_owned files this process owns, in load order */
    size_t n_res, n_owned;
    mt_analysis_opts_t aopts; /* the per-rank passes' options (markers borrowed) */
    mt_buf_t analyses;      /* packed mt_rank_analysis_t of each loaded rank */
    mt_cinst_t *rows;
    size_t n_rows, cap_rows;
    mt_strtab_t *labels;    /* the rows' label ids refer to it */
    mt_step_t *steps;
    size_t n_steps, cap_steps;
    double parse_s, passes_s; /* --timings: time in the loader and in the per-rank passes */
    uint64_t largest;         /* JSON bytes of the largest trace loaded here */
    mt_nccl_xworld_t xw;      /* the job's communicator among NCCL example profiler files */
    mt_merge_facts_t **facts; /* per res[]: the merged write's first pass, done while loading (NULL: none) */
} mt_ingest_t;

/* How every file is loaded. Borrowed pointers must outlive the loads. */
typedef struct mt_ingest_opts {
    bool strict;             /* --strict */
    bool merge;              /* learn the merged write's facts in the same parse */
    bool only_file;          /* the job has this one input: it needs no rank */
    const mt_rankmap_t *map; /* --rank-map; NULL: none */
    /* Asked while reading: true stops the load (MT_ERR_CANCELLED). NULL: never. */
    bool (*should_stop)(void *ctx);
    void *should_stop_ctx;
    /* Called once per file after its trace is freed, with its JSON bytes
     * (the program's heap trim, mt_heap_release). NULL: nothing. */
    void (*trace_freed)(uint64_t json_bytes);
} mt_ingest_opts_t;

/* *L zeroed and ready for the files of files that process me owns:
 * results and facts for each, the label table, aopts (copied; its markers
 * borrowed), and the communicator of the job's NCCL example profiler
 * files (mt_nccl_example_world over every path). MT_OK or MT_ERR_NOMEM;
 * free with mt_ingest_free either way. */
mt_status_t mt_ingest_init(mt_ingest_t *L, const mt_discover_list_t *files, int me, const mt_analysis_opts_t *aopts);

/* Load file f (input number index) into the next result of L
 * (L->res[L->n_res++], returned) and L's tables, with its per-rank
 * analyses packed while the trace is in memory; the trace is freed before
 * returning. The result's status says how it went (MT_ERR_CANCELLED:
 * should_stop said so); skipped, with the reason in message, for a file
 * found in a directory that is no trace, an NCCL file that is none of
 * the job's, an NCCL example profiler file of another communicator. */
mt_ingest_result_t *mt_ingest_one(mt_ingest_t *L, const mt_ingest_opts_t *io, const mt_discover_file_t *f,
                                  int32_t index);

/* The n parts that process me owns among files->files[i..i+run) (one
 * Nsight Systems export, mt_discover_part_run): read in one pass per
 * table (mt_nsys_load_parts) rather than a pass per part, each then
 * handled as mt_ingest_one does. Appends to L->res the results of the
 * parts done, as far as the first failure (included) or should_stop. */
void mt_ingest_parts(mt_ingest_t *L, const mt_ingest_opts_t *io, const mt_discover_list_t *files, size_t i,
                     size_t run, size_t n, int me);

/* What mt_ingest_share tells its caller as it goes (the program's
 * messages between processes and its progress line). NULL: nothing. */
typedef struct mt_ingest_share_cb {
    /* before each of its files (input index): true stops the share there
     * (another process failed on a file below it) */
    bool (*stop_before)(void *ctx, int32_t index);
    /* this process's failure, once: the input index it failed on (the
     * last of a run of parts) */
    void (*failed)(void *ctx, int32_t index);
    /* after each file or run of parts that went well: results so far, the
     * files this process owns, the JSON bytes read */
    void (*progress)(void *ctx, size_t done, size_t owned, uint64_t bytes);
    void *ctx;
} mt_ingest_share_cb_t;

/* Every file of files that process me owns, in input order, into L: one
 * at a time (mt_ingest_one), or the parts of one Nsight Systems export it
 * owns at once (mt_ingest_parts); until the first failure (its result
 * kept; cb->failed told) or a stop (cb->stop_before, or results
 * MT_ERR_CANCELLED by io->should_stop, which are dropped: not this
 * process's fault). Returns the failure's status, or MT_OK. */
mt_status_t mt_ingest_share(mt_ingest_t *L, const mt_ingest_opts_t *io, const mt_discover_list_t *files, int me,
                            const mt_ingest_share_cb_t *cb);

/* Process 0, the results of every process gathered (res[0..n_res)):
 * the traces first, sorted by rank (then input index), then the files
 * left out (skipped) in input order. Returns the number of traces. */
size_t mt_ingest_sort(mt_ingest_result_t *res, size_t n_res);

/* Among the traces res[0..n) of a job of more than one: the one of the
 * lowest input index that named no rank and was taken as rank 0 while
 * loading (rank_tentative; its message says why that is an error); NULL
 * when none or n < 2 (a job's only trace is rank 0). */
const mt_ingest_result_t *mt_ingest_unranked(const mt_ingest_result_t *res, size_t n);

/* Process 0, after mt_ingest_sort: a rank's NCCL plugin file joins its
 * Kineto trace. Each NCCL file alone of its kind for its rank goes to *nj
 * (paths from l, borrowed); one that has exactly one Kineto trace of the
 * same rank beside it leaves res[], so res[] keeps one entry per rank
 * (the Kineto trace when there is one). Two files of one kind for a rank
 * stay, for the duplicate check. res[0..*n) stays sorted by rank (the
 * entries past it are stale copies); mt_nccl_job_decide is called with
 * the new *n. MT_OK or MT_ERR_NOMEM. */
mt_status_t mt_ingest_nccl_join(const mt_discover_list_t *l, mt_ingest_result_t *res, size_t *n, mt_nccl_job_t *nj);

/* What report.json lists of the inputs: *ri, one entry per trace of
 * res[0..n) (sorted by rank: mt_ingest_sort), and *rs (*n_rs entries),
 * the files left out while loading (skipped[0..n_skipped)) then those left
 * out before (files->skipped: own outputs, links not followed). Paths and
 * messages borrowed from files and the results; both arrays malloc'd,
 * the caller frees them whatever is returned. MT_OK or MT_ERR_NOMEM. */
mt_status_t mt_ingest_report_lists(const mt_discover_list_t *files, const mt_ingest_result_t *res, size_t n,
                                   const mt_ingest_result_t *skipped, size_t n_skipped, mt_report_input_t **ri,
                                   mt_report_skip_t **rs, size_t *n_rs);

/* Process 0: the per-rank analyses of every process, packed one after
 * another (bytes[0..len), mt_rank_analysis_pack_append), unpacked into
 * *an (n slots, calloc'd; the caller frees each slot and the array,
 * whatever is returned): each at its rank's position among res[0..n)
 * (a second one of a rank, or one of no rank there, dropped), then moved
 * to the front in rank order (*n_an of them). MT_OK when every rank but
 * the n_only ranks with NCCL data only has its analysis; MT_ERR_NOMEM;
 * the unpack's error, or MT_ERR_FORMAT (bytes that hold no analysis, a
 * rank without one). */
mt_status_t mt_ingest_analyses(const void *bytes, size_t len, const mt_ingest_result_t *res, size_t n, size_t n_only,
                               mt_rank_analysis_t ***an, size_t *n_an);

/* The traces res[0..n) as the checks after the fit see them, each
 * malloc'd, n entries (the caller frees; NULL out of memory):
 * mt_trust_check's (an NCCL file's communicator size is no world size, nor
 * is its span a trace's window), and the selection's (--ranks, --window;
 * clocks[i] is res[i]'s, borrowed). */
mt_trust_trace_t *mt_ingest_trust_traces(const mt_ingest_result_t *res, size_t n);
mt_select_rank_t *mt_ingest_select_ranks(const mt_ingest_result_t *res, size_t n, const mt_clock_t *clocks);

/* What this process writes into the merged trace: each trace it loaded
 * (L's results neither skipped, nor failed, nor an NCCL file: those are
 * not part of it), in L's order, of the ranks[0..n_ranks) only (--ranks;
 * NULL: every rank), with its path (borrowed from files), its rank, the
 * load's facts (borrowed from L) and the clock of its rank among
 * clocks[0..n_clocks) (the fitted ones, every process's copy; a rank with
 * none: has_clock false). *out malloc'd (the caller frees it), *n_out
 * entries. MT_OK, or MT_ERR_NOMEM (*out NULL, *n_out 0). */
mt_status_t mt_ingest_merged_inputs(const mt_ingest_t *L, const mt_discover_list_t *files, const int32_t *ranks,
                                    size_t n_ranks, const mt_clock_t *clocks, size_t n_clocks,
                                    mt_merged_input_t **out, size_t *n_out);

/* Process 0: the failed result of the lowest input index among
 * res[0..n) (the one the run reports), NULL when none failed. */
const mt_ingest_result_t *mt_ingest_first_failed(const mt_ingest_result_t *res, size_t n);

/* Process 0, when the load failed: the line the program says (after
 * "mergetrace: ", starting with tag) for the first failed result of
 * res[0..n) (mt_ingest_first_failed): its message, with "--local:
 * process P: " before it when local (a --local job of several processes:
 * the path may be on every node; P the file's owner in files). Returns
 * the result's status; MT_ERR_NOMEM ("out of memory", no tag) when none
 * failed (the failure was elsewhere: gathering the results). */
mt_status_t mt_ingest_failure_text(const mt_ingest_result_t *res, size_t n, const mt_discover_list_t *files, bool local,
                                   const char *tag, char *msg, size_t cap);

/* Free what mt_ingest_init and the loads put in L; zeroes it. */
void mt_ingest_free(mt_ingest_t *L);

#ifdef __cplusplus
}
#endif

#endif
