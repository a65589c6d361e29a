/* An operation-level timeline (timeline.h) as the job model of the
 * cross-rank critical path and its what-ifs (critpath.h): one
 * mt_rank_analysis_t per rank with its operations as graph activities and
 * the dependencies of the paper's model made explicit, the communication
 * instances as matched collective rows, and each rank's worker (DP rank)
 * and stage. The clocks are the file's (no fit).
 *
 * Dependencies, per rank and step (docs/whatif.md): each stream in start
 * order (compute track; each send/recv type of pp-comm; dp-comm, tp-comm,
 * misc); the k-th valid receive of a direction before the matching
 * compute, after the compute before it; the matching compute before the
 * k-th valid send; the first backward send/recv after the second forward
 * compute before the first backward compute; the last params-all-gather of
 * a model chunk before its first forward compute; the last compute before
 * gc, then gc, layernorm-grads-all-reduce, embedding-grads-all-reduce,
 * grads-reduce-scatter (by seq_id), separate-grads-all-reduce,
 * optimizer-clip-main-grad and optimizer in that order.
 * Instances: send/recv pairs by (step, direction, k-th valid, sender
 * stage) within a DP rank; params-all-gather, grads-reduce-scatter,
 * separate-grads-all-reduce and other dp-comm types by (step, type,
 * seq_id) across DP ranks of a stage; optimizer-clip-main-grad by (step,
 * seq_id) across all ranks; embedding-grads-all-reduce by (step, seq_id)
 * across the first and last stage of a DP rank; tp-comm types across the
 * TP ranks of a (DP rank, stage). */
#ifndef MERGETRACE_TLJOB_H
#define MERGETRACE_TLJOB_H

#include <stddef.h>
#include <stdint.h>

#include "mergetrace/analysis.h"
#include "mergetrace/collectives.h"
#include "mergetrace/critpath.h"
#include "mergetrace/status.h"
#include "mergetrace/timeline.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mt_tl_job {
    mt_rank_analysis_t **an;   /* per rank (timeline order), owned */
    size_t n_an;
    mt_cinst_t *rows;          /* the members of every instance */
    size_t n_rows;
    mt_match_t *match;         /* instances of two or more members */
    mt_cp_coord_t *coords;     /* per rank: worker = DP rank, stage */
    uint64_t p2p_pairs, collectives; /* instances by kind */
    uint64_t dropped_deps;     /* dependencies beyond two per operation (not modelled) */
} mt_tl_job_t;

/* Build the job model of tl (borrowed for the call). *out owned by the
 * caller (mt_tl_job_free). MT_OK, MT_ERR_NOMEM or MT_ERR_LIMIT (2^31
 * operations). Not collective. */
mt_status_t mt_tl_job_build(const mt_timeline_t *tl, mt_tl_job_t **out);

/* The critical path of j (borrowed for the call) with the ideal what-if,
 * its workers and stages from j->coords, no warm-up step left out. *out
 * owned by the caller (mt_critpath_free). What mt_critpath_run returns.
 * Not collective. */
mt_status_t mt_tl_job_critpath(const mt_tl_job_t *j, mt_critpath_t **out);

/* NULL does nothing. */
void mt_tl_job_free(mt_tl_job_t *j);

#ifdef __cplusplus
}
#endif
#endif /* MERGETRACE_TLJOB_H */
