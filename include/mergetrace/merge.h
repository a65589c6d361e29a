/* The merged timeline: every rank's events copied through byte for byte,
 * with only the time stamps (clock-corrected), pids (made unique across
 * ranks) and flow ids (kept from joining across ranks) rewritten, into one
 * Chrome-trace JSON that Perfetto and chrome://tracing open. Serial: the
 * program decides how the pieces reach a file (mpi/merged_io.c). */
#ifndef MERGETRACE_MERGE_H
#define MERGETRACE_MERGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mergetrace/analysis.h"
#include "mergetrace/buf.h"
#include "mergetrace/collectives.h"
#include "mergetrace/loader.h"
#include "mergetrace/status.h"
#include "mergetrace/summary.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Pids per rank in the merged trace: MT_MERGE_PIDS_PER_RANK and
 * mt_merge_pid in loader.h, which reads one rank of a merged trace back. */
/* The largest rank mt_merge_rank accepts: its pids still fit a signed
 * 32-bit integer (what trace viewers store) and its flow ids stay below
 * 2^53 (what JavaScript viewers represent exactly). */
#define MT_MERGE_MAX_RANK 524286

typedef struct mt_merge_opts {
    bool gpu_only;            /* only GPU pids' events (and their metadata) */
    /* Corrected absolute ns, inclusive; both 0 = everything. Events (not M)
     * whose [ts, ts + dur] does not meet [start, end] are dropped; the ones
     * that overlap it are kept whole. Events without "ts" are kept. */
    int64_t window_start_ns, window_end_ns;
} mt_merge_opts_t;

/* One rank a process writes into the merged trace (the program's
 * merged writer, mpi/merged_io.c; chosen by mt_ingest_merged_inputs).
 * path borrowed; clock used only when has_clock (else the identity). */
typedef struct mt_merged_input {
    const char *path;
    int32_t rank;
    mt_clock_t clock;
    bool has_clock;
    struct mt_merge_facts *facts; /* what the load learned for the first pass (mt_merge_facts_t), or NULL (borrowed) */
    const void *item;         /* another format's own data of this rank (borrowed; the program's) */
    /* more of this rank written after its events (the rank's Flight
     * Recorder entries), with after_item (borrowed); NULL: nothing.
     * *events: the events it wrote. */
    mt_status_t (*after)(const void *after_item, mt_write_fn write, void *ctx, uint64_t *events);
    const void *after_item;
} mt_merged_input_t;

/* Write every event of one rank's trace file (plain JSON or gzip) as merged
 * events, each preceded by ",\n" (the caller has written a header whose
 * last thing is an event: mt_merge_header). Reads the file twice: pass 1
 * learns the time base and the pids, pass 2 writes. Per event:
 *  - "ts" becomes the absolute time (+ baseTimeNanoseconds when the file
 *    has it) corrected with clock, in microseconds with exactly 3 decimals;
 *    "dur" becomes corrected(ts + dur) - corrected(ts). A "ts"/"dur" that
 *    is not a number, or absent, is left as it is.
 *  - "pid" becomes mt_merge_pid(rank, slot); slots number the rank's pids
 *    that have at least one non-M event: GPU pids first (by device index,
 *    from a "GPU n" process label, else the pid), then numeric CPU pids
 *    ascending, then string pids in order of first appearance. An event
 *    without "pid" is taken as pid 0 and gets a "pid" key.
 *  - a flow "id" that is a number becomes rank * 2^32 + (id mod 2^32); a
 *    string id "x" becomes "r<rank>:x". "tid" and everything else is kept
 *    byte for byte.
 *  - the file's process_name / process_labels / process_sort_index M events
 *    are dropped; for each slot new ones come first: process_name
 *    "rank R GPU D" / "rank R CPU" (with process_labels "pid P") /
 *    "rank R <string pid>", process_sort_index = the merged pid, all with
 *    the "ts" of the rank's first (corrected) event. Every M
 *    event of a pid that has only M events (Kineto lists all GPUs of a node)
 *    is dropped. Other M events (thread_name, ...) are kept.
 * A GPU pid is one with a GPU activity (kernel, memcpy, memset, sync,
 * gpu_user_annotation) or a "GPU n" process label.
 * clock: the rank's correction (mt_clock_apply); NULL = identity. Borrowed.
 * opts: NULL = everything. n_written (may be NULL) gets the events written,
 * added M events included. A truncated input is merged up to its last
 * complete event.
 * Errors: the loader's (MT_ERR_IO, MT_ERR_SYNTAX, ..., with file and
 * position in err); MT_ERR_LIMIT when the rank has more than
 * MT_MERGE_PIDS_PER_RANK pids or rank is outside [0, MT_MERGE_MAX_RANK];
 * MT_ERR_RANGE when a corrected time does not fit int64 ns; MT_ERR_USAGE
 * for a window whose end precedes its start; whatever write returned.
 * On error part of the output may have been written. Not collective. */
mt_status_t mt_merge_rank(const char *path, int32_t rank, const mt_clock_t *clock, const mt_merge_opts_t *opts,
                          mt_write_fn write, void *ctx, uint64_t *n_written, mt_error_t *err);

/* What the merged write's first pass learns of a rank's file (its pids,
 * which are GPUs, the earliest "ts", the time base), collected instead
 * while the file is loaded for the analyses: the merged write then parses
 * the file once more, not twice. Opaque; not thread-safe. */
typedef struct mt_merge_facts mt_merge_facts_t;

/* A new, empty collector (*out NULL on MT_ERR_NOMEM). */
mt_status_t mt_merge_facts_new(mt_merge_facts_t **out);

/* An mt_event_fn (loader.h) for mt_load_opts_t.on_event with the facts as
 * its context. It never fails the load: a collector that runs out of memory
 * marks itself unusable, and mt_merge_rank_with then reads the file twice
 * as mt_merge_rank does. */
mt_status_t mt_merge_facts_event(void *facts, const mt_trace_t *t, const mt_event_t *ev, const mt_raw_event_t *raw,
                                 mt_error_t *err);

/* After the load returned MT_OK: take the time base from t. A collector
 * never finished is not used. */
void mt_merge_facts_finish(mt_merge_facts_t *f, const mt_trace_t *t);

/* free(NULL)-like. */
void mt_merge_facts_free(mt_merge_facts_t *f);

/* The rank's memory series (a->mem_devs and mem_points, copied) for the
 * merged write: after the rank's process metadata, before its events, one
 * counter track per device,
 * "C" events named "memory GPU <d>" (on the rank's GPU process of that
 * device, else its CPU process) or "memory CPU" (on its CPU process), args
 * {"allocated": bytes, "reserved": bytes} (reserved left out when
 * unknown), ts corrected like the events; points outside --window, and
 * CPU tracks with --gpu-only, are left out. The series are the analysis's
 * downsampled ones (at most MT_AN_MEM_POINTS per device, peaks kept), so
 * the track adds little to the file. Without this call (or without facts)
 * no counters are written. MT_OK or MT_ERR_NOMEM (nothing kept then). */
mt_status_t mt_merge_facts_memory(mt_merge_facts_t *f, const mt_rank_analysis_t *a);

/* mt_merge_rank with the first pass's facts collected at load time (facts
 * may be NULL: then exactly mt_merge_rank). The output is byte for byte
 * the same. The facts are only read: they serve any number of writes of
 * the same file; free them after the last. */
mt_status_t mt_merge_rank_with(const char *path, int32_t rank, const mt_clock_t *clock, const mt_merge_opts_t *opts,
                               mt_merge_facts_t *facts, mt_write_fn write, void *ctx, uint64_t *n_written,
                               mt_error_t *err);

/* The opening of the merged file: the object, the "traceEvents" array and
 * one metadata event naming the merged trace (process_name of pid 0, which
 * no rank uses). Returns MT_OK or what write returned. */
mt_status_t mt_merge_header(mt_write_fn write, void *ctx);

/* Whether head, the first len uncompressed bytes of a file (256 are
 * enough), is one of mergetrace's own outputs: the merged trace (it opens
 * with mt_merge_header's event, in every version; its otherData.generator
 * at the end names mergetrace too), report.json or timings.json. Returns
 * what it is, as a phrase ("a merged trace written by mergetrace"; static),
 * or NULL. */
const char *mt_merge_sniff_output(const char *head, size_t len);

/* Whether what (mt_merge_sniff_output's answer, may be NULL) is the merged
 * trace: the one output that is read back (by rank, loader.h). */
bool mt_merge_sniff_merged(const char *what);

/* The end: the array's close, "displayTimeUnit" and "otherData":
 * {"generator": "mergetrace <version>", "ranks": [ranks...]} (in the order
 * given; ranks borrowed, may be NULL when n_ranks is 0). Returns MT_OK or
 * what write returned. */
mt_status_t mt_merge_footer(const int32_t *ranks, size_t n_ranks, mt_write_fn write, void *ctx);

/* What the merged trace may select (src/merge/select.c): one entry of
 * the job, a rank's trace or an NCCL plugin file, with its clock onto the
 * reference and its span on its own clock. */
typedef struct mt_select_rank {
    int64_t rank;
    const mt_clock_t *clock; /* borrowed; onto the reference */
    uint64_t events;         /* 0: no span */
    int64_t first_ns, last_ns;
    bool nccl;               /* an NCCL plugin file: not in the merged trace */
} mt_select_rank_t;

/* --window's text: "A:B" (seconds from the job's start, 0 <= A <= B) or
 * "#A:#B" (ProfilerStep numbers, integers; *steps set) into *a and *b.
 * 0, or -1 with what was expected in msg (cap bytes). */
int mt_select_window_parse(const char *s, bool *steps, double *a, double *b, char *msg, size_t cap);

/* --window as corrected ns [*a, *b]: lo..hi seconds from the job's start
 * (the earliest corrected first event of r[0..n), 0 when none has
 * events), or, by_steps, the corrected span of the ProfilerSteps numbered
 * lo..hi of steps[0..n_steps) (each on the clock of the last entry of r
 * with its rank; the identity for a step of no entry's rank). false when
 * by_steps and no step is in lo..hi. */
bool mt_select_window(const mt_select_rank_t *r, size_t n, bool by_steps, double lo, double hi,
                      const mt_step_t *steps, size_t n_steps, int64_t *a, int64_t *b);

typedef enum mt_select_empty {
    MT_SELECT_SOME = 0,  /* the selection has something, or nothing to say it against */
    MT_SELECT_NO_RANK,   /* --ranks names no rank of the job */
    MT_SELECT_NO_TIME,   /* the window is outside every trace's span */
} mt_select_empty_t;

/* Whether a --ranks (want[0..n_want), want NULL: every rank) and a window
 * in corrected ns (win[0..1], NULL: none) select nothing of the job's
 * traces r[0..n) (NCCL files left out). MT_SELECT_NO_RANK with the job's
 * ranks (sorted as given) as ranges in ranks ("0-7", "0-3, 5, 8-9", cut
 * with "..." to fit cap) and their count in *n_ranks; MT_SELECT_NO_TIME
 * with the job's corrected span in *span_ns. MT_SELECT_SOME also when the
 * job has no trace or out of memory. */
mt_select_empty_t mt_select_check(const mt_select_rank_t *r, size_t n, const int32_t *want, size_t n_want,
                                  const int64_t *win, char *ranks, size_t cap, size_t *n_ranks, int64_t *span_ns);

/* The selection the options asked for (--ranks as given in ranks_arg,
 * want[0..n_want); --window as given in window_arg, by_steps when it
 * names ProfilerSteps, win its corrected ns or NULL) checked as
 * mt_select_check does: true when it selects nothing of the job, with the
 * line the program says in msg ("--ranks 9: selects no rank of this
 * job; its traces are of ranks 0-3", "--window 5:6: selects nothing; the
 * job spans 0 to 0.036000 s from its start"), else false. */
bool mt_select_check_text(const mt_select_rank_t *r, size_t n, const int32_t *want, size_t n_want, const int64_t *win,
                          const char *ranks_arg, const char *window_arg, bool by_steps, char *msg, size_t cap);

#ifdef __cplusplus
}
#endif
#endif /* MERGETRACE_MERGE_H */
