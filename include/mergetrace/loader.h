/* The trace loader: one Kineto Chrome-trace file (plain JSON or gzip) in,
 * one mt_trace_t out, in a single streaming pass without a JSON DOM. */
#ifndef MERGETRACE_LOADER_H
#define MERGETRACE_LOADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mergetrace/status.h"
#include "mergetrace/trace.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where one event sits in the input, for writers that copy events through
 * (the merged timeline): the whole object and the value spans of the keys
 * they rewrite. Offsets are relative to text; a length of 0 means the key
 * was absent. Borrowed: valid during the callback only. */
typedef struct mt_raw_event {
    const char *text;
    size_t len;
    size_t ts_off, ts_len;
    size_t dur_off, dur_len;
    size_t pid_off, pid_len;
    size_t tid_off, tid_len;
    size_t id_off, id_len;
} mt_raw_event_t;

/* Called once per event, in file order, after the event is complete. ev->ts
 * is as written in the file, converted to ns but WITHOUT baseTimeNanoseconds
 * (that key may come later in the file); t->info.has_base tells only at the
 * end. Return MT_OK to go on; anything else stops the load with that status
 * (set a message in err). */
typedef mt_status_t (*mt_event_fn)(void *ctx, const mt_trace_t *t, const mt_event_t *ev, const mt_raw_event_t *raw,
                                   mt_error_t *err);

typedef struct mt_load_opts {
    bool strict;            /* a truncated input is an error (else: keep what loaded, stats.truncated) */
    bool no_classify;       /* skip mt_trace_classify() after parsing */
    bool no_link;           /* skip mt_trace_link() after parsing */
    size_t chunk_bytes;     /* read/inflate granularity; 0 = default (4 MiB) */
    int rank_hint;          /* rank used in error messages before the header is read; -1 if unknown */
    mt_event_fn on_event;   /* optional per-event callback (see mt_event_fn) */
    void *on_event_ctx;
    bool no_store;          /* keep no event table (the callback sees every event; counts are kept) */
    /* Validate each event's "args" object but do not read it: no collective
     * records, metadata values or ids from args (for a second pass over a
     * file whose args were read before: the merged write's). */
    bool skim_args;
    /* Asked before each read of the next chunk (every few MiB): returning
     * true stops the load with MT_ERR_CANCELLED. Lets a program stop work
     * promptly when another process has already failed. May be NULL. */
    bool (*should_stop)(void *ctx);
    void *should_stop_ctx;
} mt_load_opts_t;

#define MT_LOAD_CHUNK_DEFAULT (4u << 20) /* chunk_bytes 0 means this */

/* Defaults: not strict, classify + link on, 4 MiB chunks, rank_hint -1.
 * Inline: the loader, the Nsight reader and the merged-trace reader all
 * start from it, and a function in loader.c made them a circle. */
static inline void mt_load_opts_init(mt_load_opts_t *o)
{
    *o = (mt_load_opts_t){.chunk_bytes = MT_LOAD_CHUNK_DEFAULT, .rank_hint = -1};
}

/* Load the trace at path. gzip is recognised by its magic bytes, not by the
 * name. On success *out owns a new trace (free with mt_trace_free) and MT_OK
 * is returned; a truncated input still succeeds unless opts->strict, with
 * out->stats.truncated set. On failure *out is NULL and err (if non-NULL)
 * names the file, the byte offset, line:col and what was expected.
 * opts may be NULL for defaults. Not collective; thread-safe per call. */
mt_status_t mt_trace_load(const char *path, const mt_load_opts_t *opts,
                          mt_trace_t **out, mt_error_t *err);

/* Same, from memory (plain JSON or gzip bytes). buf is borrowed for the call
 * only. name is used in messages and stored as the trace path (may be NULL). */
mt_status_t mt_trace_load_buffer(const void *buf, size_t len, const char *name,
                                 const mt_load_opts_t *opts, mt_trace_t **out,
                                 mt_error_t *err);

/* ---- mergetrace's own merged trace, read back one rank at a time ------ */

/* Pids per rank in the merged trace (src/merge/merge.c): rank R's pids are
 * (R + 1) * MT_MERGE_PIDS_PER_RANK + slot, slot < MT_MERGE_PIDS_PER_RANK;
 * pid 0 is the file's own process_name. */
#define MT_MERGE_PIDS_PER_RANK 4096

/* The last slot of each rank is not a process of its trace: it holds the
 * rank's Flight Recorder entries when dumps are merged beside the traces
 * (mt_fr_trace_rank_merged), and reading a rank back leaves it out. */
#define MT_MERGE_FR_SLOT (MT_MERGE_PIDS_PER_RANK - 1)

/* The merged pid of slot `slot` of rank `rank`. */
static inline int64_t mt_merge_pid(int32_t rank, uint32_t slot)
{
    return ((int64_t)rank + 1) * MT_MERGE_PIDS_PER_RANK + (int64_t)slot;
}

/* The name of rank `rank` of the merged trace at path, "<path>#rank<R>",
 * which mt_trace_load reads as that rank's trace: the events of its pids
 * only (times as written: clock-corrected), their pids back to those of
 * the rank's own trace (from the merge's process metadata), with
 * info.rank = R (the merged trace keeps no header of its ranks); the file
 * is read up to the rank's last event (the events of a rank come
 * together, mt_merged_ranks). Like snprintf: writes at most cap
 * bytes (dst may be NULL with cap 0) and returns the length needed. */
size_t mt_merged_part_path(char *dst, size_t cap, const char *path, int32_t rank);

/* The rank of a "<file>#rank<R>" name whose <file> exists and whose whole
 * name is not a file itself; *file_len gets the length of <file>. -1 for
 * any other path. */
int32_t mt_merged_part_parse(const char *path, size_t *file_len);

/* The ranks of the merged trace at path, ascending: one pass over the file
 * (nothing stored but the ranks), the ranks that own a pid of a non-M
 * event. Each rank's events must come together, as the merge writes them
 * (a rank is read up to its last event only): MT_ERR_FORMAT (err names the
 * event) when one rank's events are split. *ranks (free()) may be NULL
 * when *n is 0. MT_OK; what the load returned (err says where);
 * MT_ERR_NOMEM. Not collective. */
mt_status_t mt_merged_ranks(const char *path, int32_t **ranks, size_t *n, mt_error_t *err);

#ifdef __cplusplus
}
#endif
#endif /* MERGETRACE_LOADER_H */
