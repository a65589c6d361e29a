/* Operation-level multi-rank timelines: one Chrome-trace file that holds
 * the operations of every rank of a job on one clock (clocks already
 * aligned), as training frameworks and straggler studies write them.
 *
 * Layout read (docs/FORMATS.md, "Operation-level timelines"): the layout of
 * the artifact of "Understanding Stragglers in Large Model Training Using
 * What-if Analysis" (OSDI 2025): a JSON array of events; one pid per
 * data-parallel rank; thread_name metadata "PP rank p, TP rank t, <track>"
 * (track compute, pp-comm, tp-comm, dp-comm or misc); complete ("X")
 * events named by their operation type (forward-compute, backward-send,
 * grads-reduce-scatter, ...) with args step, model_chunk, mb_id and seq_id.
 * A --timeline-map file (mt_timeline_map_parse) renames tracks and
 * operation types of other layouts onto these.
 *
 * Ranks: global rank = (stage * dp_size + dp) * tp_size + tp (Megatron's
 * order: tensor-parallel fastest, then data-parallel, then pipeline). */
#ifndef MERGETRACE_TIMELINE_H
#define MERGETRACE_TIMELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mergetrace/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Tracks of a rank. */
typedef enum mt_tl_track {
    MT_TL_COMPUTE = 0,
    MT_TL_PP_COMM,
    MT_TL_TP_COMM,
    MT_TL_DP_COMM,
    MT_TL_MISC,
    MT_TL_TRACK_COUNT_
} mt_tl_track_t;

/* "compute", "pp-comm", "tp-comm", "dp-comm", "misc". Never NULL. */
const char *mt_tl_track_str(mt_tl_track_t k);

/* One operation. Times in ns as in the file. */
typedef struct mt_tl_op {
    int64_t start_ns, end_ns;
    int64_t step;              /* args.step */
    int32_t rank;              /* index into mt_timeline_t.ranks */
    int32_t chunk, mb, seq;    /* args.model_chunk, mb_id, seq_id; -1 when absent */
    uint16_t type;             /* index into mt_timeline_t.types */
    uint8_t track;             /* mt_tl_track_t */
    uint8_t pad_;
} mt_tl_op_t;

/* One rank (worker) of the job. */
typedef struct mt_tl_rank {
    int32_t rank;              /* global rank (see above) */
    int32_t dp, stage, tp;
} mt_tl_rank_t;

typedef struct mt_timeline {
    mt_tl_op_t *ops;           /* by (rank, start, end) */
    size_t n_ops;
    mt_tl_rank_t *ranks;       /* by global rank */
    size_t n_ranks;
    char **types;              /* operation type names, owned */
    size_t n_types;
    int32_t dp_size, pp_size, tp_size;
    uint64_t skipped;          /* events that are not operations (metadata, instants, other phases) */
} mt_timeline_t;

/* A mapping for other layouts (see docs/FORMATS.md "--timeline-map"):
 * lines "track <regex> <track>" (a thread name matching the POSIX extended
 * regex is that track; its first three sub-matches, when present, are the
 * pp, tp and dp ranks, else "PP rank p", "TP rank t" and the pid give them),
 * "type <name> <operation type>" (an event name renamed) and "arg <key>
 * <step|mb_id|seq_id|model_chunk>" (another args key read). '#' starts a
 * comment. Opaque: parse with mt_timeline_map_parse, free with
 * mt_timeline_map_free. */
typedef struct mt_timeline_map mt_timeline_map_t;

/* Parse the mapping text (path names it in messages). MT_OK, MT_ERR_NOMEM,
 * or MT_ERR_FORMAT with err naming the line and what was expected. */
mt_status_t mt_timeline_map_parse(const char *text, size_t len, const char *path, mt_timeline_map_t **out,
                                  mt_error_t *err);
void mt_timeline_map_free(mt_timeline_map_t *m);

/* Load a timeline file (plain JSON or gzip). map may be NULL (the
 * artifact's layout). *out is owned by the caller (mt_timeline_free).
 * Errors: the loader's (syntax, I/O, gzip), MT_ERR_FORMAT naming the byte
 * offset and line:col of an operation without args.step, or on a thread
 * without a usable name, or a file with no operation. Not collective. */
mt_status_t mt_timeline_load(const char *path, const mt_timeline_map_t *map, mt_timeline_t **out,
                             mt_error_t *err);

/* True when buf (the first bytes of a file, plain JSON) looks like an
 * operation-level timeline: a JSON array whose first event has "args"
 * with a "step". */
bool mt_timeline_probe(const char *buf, size_t len);

/* mt_timeline_probe on the first 64 KiB of the file at path (inflated when
 * gzip); false for anything but a regular file that reads. */
bool mt_timeline_probe_file(const char *path);

/* Free a timeline. NULL does nothing. */
void mt_timeline_free(mt_timeline_t *t);

#ifdef __cplusplus
}
#endif
#endif /* MERGETRACE_TIMELINE_H */
