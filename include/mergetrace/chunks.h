/* Pipeline chunks, the per-rank half of the pipeline analysis: markers
 * (which CPU ranges delimit chunks of work) and, per marker range of a rank,
 * the GPU work launched inside it, on the rank's own clock. The job half
 * (stages, period, OverlapScore) and the definition of "work" are in
 * mergetrace/pipeline.h. */
#ifndef MERGETRACE_CHUNKS_H
#define MERGETRACE_CHUNKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mergetrace/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- markers: which CPU ranges delimit chunks ---------------------------- */

/* A compiled set of markers (opaque). Marker 0 is the chunk marker: the
 * --chunk regex, or ProfilerStep#N when none is given; markers 1.. are the
 * --stage annotation regexes, in the order given. */
typedef struct mt_pp_markers mt_pp_markers_t;

/* Compile the markers. chunk_regex may be NULL (ProfilerStep#N); stage
 * regexes[0..n_stage) are POSIX extended regexes matched anywhere in a
 * range's name (anchor with ^...$ to match whole names). ranks_of_stage[i]
 * (may be NULL, or an entry NULL) limits stage marker i + 1 to the sorted
 * ranks[0..n_ranks_of_stage[i]) so other ranks skip it; copied. Returns
 * MT_OK, MT_ERR_NOMEM, or MT_ERR_USAGE with the regex error in err->msg. *out
 * owned by the caller (mt_pp_markers_free). */
mt_status_t mt_pp_markers_compile(const char *chunk_regex, const char *const *stage_regexes, size_t n_stage,
                                  const int32_t *const *ranks_of_stage, const size_t *n_ranks_of_stage,
                                  mt_pp_markers_t **out, mt_error_t *err);
void mt_pp_markers_free(mt_pp_markers_t *m);
size_t mt_pp_markers_count(const mt_pp_markers_t *m);

/* One marker range of one rank and its work (see "work" above). Plain,
 * packed data of mt_rank_analysis_t. */
typedef struct mt_pp_chunk {
    int64_t key;            /* the number after the name's last '#', -1 none */
    int64_t cpu_start_ns, cpu_end_ns;
    int64_t busy_ns;        /* |U(work)| */
    int64_t first_ns, last_ns; /* first start, last end of the work; 0, 0 without work */
    int64_t p2p_ns;         /* |U(point-to-point kernels launched inside)|, left out of busy */
    uint32_t marker;        /* marker index */
    uint32_t ordinal;       /* 0-based position among this marker's ranges on the rank, by start */
    uint32_t acts;          /* activities of the work */
    uint32_t pad_;
} mt_pp_chunk_t;

_Static_assert(sizeof(mt_pp_chunk_t) == 72, "packed as bytes: no padding");

#ifdef __cplusplus
}
#endif
#endif
