/* Pipeline-parallel analysis: per chunk of work flowing through the stages,
 * each stage's busy GPU time, the period between chunks leaving the last
 * stage, and how much of the stages' work was hidden by running at once
 * (OverlapScore). Two halves:
 *
 *  per rank  (mergetrace/chunks.h: the markers and the chunks pass, run by
 *            mt_analyze_rank on the loading process): the marker ranges of
 *            the trace (ProfilerStep#N by default, a --chunk regex, or a
 *            --stage annotation regex) and, for each, the GPU work launched
 *            inside it, on the rank's own clock;
 *  job       (mt_pipeline_analyze, on process 0 after alignment): stages,
 *            chunks matched across stages, corrected times, the numbers.
 *
 * Definitions (ns; a chunk's "work" of one marker range on one rank):
 *  work       the GPU activities (kernels, memcpy, memset) whose launch call
 *             started inside the range, both ends inclusive; for the default
 *             ProfilerStep#N marker the launch may be on any thread of the
 *             range's process (backward runs on the autograd thread), for a
 *             regex marker it must be on the range's own thread (as in the
 *             GPU projection). Point-to-point kernels (send, recv, SendRecv
 *             without an all_to_all collective record) are not work: waiting
 *             for the neighbouring stage is not work. Collectives within a
 *             stage (tensor parallel allreduce) are work.
 *  busy       |U(work)|; first / last = first start / last end of the work.
 *  stage_s_k  busy of the leader (lowest rank) of stage s on chunk k, scaled
 *             by the leader's clock rate (1 + drift); stage_max_s_k = the
 *             largest over the stage's ranks.
 *  emit_k     corrected last end of the last stage leader's work on chunk k.
 *  period_k   emit_k - emit_(k-1), for consecutive matched chunks.
 *  hidden_k   sum_s stage_s_k - period_k.
 *  score_k    clamp(hidden_k / (sum_s stage_s_k - max_s stage_s_k), 0, 1); 0
 *             when the denominator is 0 (one stage).
 *  latency_k  emit_k - corrected first start of the first stage leader's
 *             work on chunk k: how long the chunk took through the whole
 *             pipeline. It compares clocks of different ranks, so it is the
 *             number alignment changes most (the raw-clock value is kept).
 *  summary    over the chunks after the first `warmup` (those with a period):
 *             period p50/p90/p99 (nearest rank) and mean (rounded down);
 *             stage busy p50 and mean; OverlapScore = clamp(sum hidden /
 *             sum (sum_s stage - max_s stage), 0, 1); the critical stage =
 *             largest mean busy (lowest index on ties); bubble_s = (sum period
 *             - sum stage_s) / sum period * 100, at least 0; spikes = chunks
 *             whose period is at least the p99 and above the p50, largest
 *             first (at most MT_PP_SPIKES).
 * Chunks are matched across stages by the number after the marker's last '#'
 * (ProfilerStep#12 -> 12) when every leader's ranges carry one, else by
 * order. */
#ifndef MERGETRACE_PIPELINE_H
#define MERGETRACE_PIPELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mergetrace/buf.h"
#include "mergetrace/chunks.h"
#include "mergetrace/collectives.h"
#include "mergetrace/status.h"

#ifdef __cplusplus
extern "C" {
#endif

struct mt_rank_analysis;

/* ---- stages -------------------------------------------------------------- */

typedef enum mt_pp_source {
    MT_PP_FROM_FLAG = 0,    /* --pp-stages */
    MT_PP_FROM_BLOCKS,      /* --pp N */
    MT_PP_FROM_P2P,         /* inferred from point-to-point traffic */
    MT_PP_FROM_ANNOTATIONS, /* --stage NAME=REGEX[@RANKS] */
    MT_PP_FROM_P2P_ENDS     /* inferred from send/recv kernels that name no peer, paired by their ends */
} mt_pp_source_t;

/* Text of a source: "flag", "blocks", "p2p", "annotations", "p2p-ends". */
const char *mt_pp_source_str(mt_pp_source_t s);

/* Stages in pipeline order: stage s holds ranks[first[s] .. first[s+1]),
 * ascending; its leader is the lowest. marker[s] is the marker its chunks
 * come from (0 for rank stages). name[s] is "stage<s>" or the --stage NAME. */
typedef struct mt_pp_stages {
    size_t n;
    size_t *first;          /* n + 1 */
    int32_t *ranks;
    uint32_t *marker;
    char (*name)[32];
    mt_pp_source_t source;
} mt_pp_stages_t;

void mt_pp_stages_free(mt_pp_stages_t *s);

/* Parse --pp-stages "0-3,4-7" (stages separated by ',', each a rank, a
 * range A-B, or ranks joined by '+': "0+2,1+3"). A rank may appear once.
 * MT_OK, MT_ERR_NOMEM, or MT_ERR_USAGE with the reason in err->msg. */
mt_status_t mt_pp_stages_parse(const char *text, mt_pp_stages_t *out, mt_error_t *err);

/* Parse a rank set "4-7", "0", "0,2,4-5" into a sorted, duplicate-free
 * array (*ranks malloc'd). MT_OK, MT_ERR_NOMEM or MT_ERR_USAGE. */
mt_status_t mt_pp_ranks_parse(const char *text, int32_t **ranks, size_t *n, mt_error_t *err);

/* --pp N: n_stages contiguous blocks of the ranks present (sorted
 * ranks[0..n_ranks)); n_ranks must be a multiple of n_stages. MT_OK,
 * MT_ERR_NOMEM, or MT_ERR_USAGE (err->msg). */
mt_status_t mt_pp_stages_blocks(const int32_t *ranks, size_t n_ranks, int n_stages, mt_pp_stages_t *out,
                                mt_error_t *err);

/* Infer stages from the point-to-point rows (kind send / recv with a peer)
 * of every rank: each pair of ranks that exchanged data gets one direction,
 * the one more of its transfers went (on a tie, the direction of its
 * earliest transfer by corrected kernel start: a chunk's activations go
 * forward before its gradients come back); ranks are then layered by the
 * longest forward path reaching them, and each layer is a stage. Ranks
 * without point-to-point traffic are in no stage. clocks[0..n_clocks) (may
 * be NULL) correct the kernel starts. *out->n is 0 when fewer than two
 * stages come out (no pipeline). MT_OK or MT_ERR_NOMEM. */
mt_status_t mt_pp_stages_infer(const mt_crow_t *rows, size_t n_rows, const mt_clock_t *clocks, size_t n_clocks,
                               mt_pp_stages_t *out);

/* Infer stages from the send / recv rows that name no peer (peer < 0; a
 * trace without collective metadata, before PyTorch 2.2), paired by their
 * ends: a transfer's send and receive kernels end together, so each send's
 * candidates are the other ranks with a receive ending within 20 us plus
 * both ranks' clock residual p99 of it (the 8 nearest ranks), and each
 * receive's the same way. A pair of ranks named by fewer than a quarter of
 * the median pair's kernels met by chance and is left out; each kernel
 * then names its nearest candidate of a kept pair as its peer, and those
 * rows are layered as mt_pp_stages_infer does (source MT_PP_FROM_P2P_ENDS). The stages are refused (out->n 0, why[0..cap) says
 * why) when every such row is on one rank, when the rows do not say which
 * way data went (SendRecv kernels, or only sends or only receives),
 * when fewer than half of the sends or of the receives end with one on
 * another rank, when the pairs make no chain of two or more stages (a
 * cycle), or when more than 10 % of the paired kernels end together with
 * kernels of more than one other stage, or of their own (the ends do not
 * settle the order). On success why gets a line saying where the stages
 * came from. No blind row: out->n 0 and why untouched. clocks[0..n_clocks)
 * (may be NULL: raw times) correct the ends. MT_OK or MT_ERR_NOMEM. */
mt_status_t mt_pp_stages_infer_ends(const mt_crow_t *rows, size_t n_rows, const mt_clock_t *clocks, size_t n_clocks,
                                    mt_pp_stages_t *out, char *why, size_t cap);

/* Stages from the command line (src/cross/stages.c). */

/* What the command line asks of the pipeline analysis; everything borrowed.
 * --stage NAME=REGEX[@RANKS] stages come first (stage i's chunks from marker
 * i + 1, see mt_pp_markers_compile), then --pp-stages, then --pp; with none
 * of them the stages are inferred from the point-to-point rows. */
typedef struct mt_pp_request {
    size_t n_stage;                     /* --stage options, in the order given */
    const char *const *stage_name;      /* n_stage names (cut to 31 bytes) */
    const int32_t *const *stage_ranks;  /* n_stage sorted rank sets; NULL, or an entry NULL: every loaded rank */
    const size_t *stage_n_ranks;
    const char *pp_stages;              /* --pp-stages LIST, NULL = none */
    int pp_blocks;                      /* --pp N, 0 = none */
    int warmup;                         /* --warmup */
} mt_pp_request_t;

/* --stage stages: stage s is names[s] with the ranks ranks_of_stage[s][0 ..
 * n_ranks_of_stage[s]) (sorted), or every loaded rank ranks[0..n_ranks)
 * (sorted) where ranks_of_stage or its entry is NULL; marker s + 1, source
 * MT_PP_FROM_ANNOTATIONS. Names and ranks copied. n_stage 0 gives no stage.
 * MT_OK or MT_ERR_NOMEM (*out empty). */
mt_status_t mt_pp_stages_annotations(const char *const *names, const int32_t *const *ranks_of_stage,
                                     const size_t *n_ranks_of_stage, size_t n_stage, const int32_t *ranks,
                                     size_t n_ranks, mt_pp_stages_t *out);

/* Every stage must be led by a loaded rank (ranks[0..n_ranks), sorted):
 * a stage's leading ranks that were not loaded are dropped from it, so its
 * lowest loaded rank leads (ranks after that one stay, loaded or not).
 * note[0..cap) gets a line for the report for each stage changed (the last
 * one stays) or for a stage none of whose ranks was loaded; untouched
 * otherwise. Returns false when such a stage was found (then there is no
 * pipeline: *s is left half-changed, for mt_pp_stages_free), true else. */
bool mt_pp_stages_lead_loaded(mt_pp_stages_t *s, const int32_t *ranks, size_t n_ranks, char *note, size_t cap);

/* The stages to measure: from rq (--stage over --pp-stages over --pp; a note
 * when --stage overrides one of the others), else inferred from the
 * point-to-point rows rows[0..n_rows) with clocks[0..n_clocks) (see
 * mt_pp_stages_infer), each led by a loaded rank (mt_pp_stages_lead_loaded).
 * out->n is 0 when there is no pipeline: fewer than two stages (one --stage
 * is enough), a --pp N that does not divide the loaded ranks, or a stage
 * without a loaded rank. note[0..cap) gets a line for the report when
 * something was overridden or left out (--stage beside --pp-stages or --pp,
 * a --pp N that does not fit, a stage led by another rank or without a
 * loaded rank; the last line written stays), else is untouched. MT_OK,
 * MT_ERR_NOMEM, or MT_ERR_USAGE for a --pp-stages list that does not parse
 * (*out empty on errors). Not collective. */
mt_status_t mt_pp_stages_choose(const mt_pp_request_t *rq, const int32_t *ranks, size_t n_ranks,
                                const mt_crow_t *rows, size_t n_rows, const mt_clock_t *clocks, size_t n_clocks,
                                mt_pp_stages_t *out, char *note, size_t cap);

/* ---- the job ------------------------------------------------------------- */

#define MT_PP_SPIKES 5

typedef struct mt_pp_stage_sum {
    int64_t busy_p50_ns, busy_mean_ns;
    int64_t max_p50_ns, max_mean_ns; /* of stage_max (the slowest rank of the stage) */
    double bubble_pct;
} mt_pp_stage_sum_t;

/* The numbers of one pass over the chunks with one set of clocks. */
typedef struct mt_pp_summary {
    size_t used;            /* chunks after the warm-up that have a period */
    int64_t period_p50_ns, period_p90_ns, period_p99_ns, period_mean_ns;
    int64_t latency_p50_ns, latency_p99_ns;
    double overlap_score;   /* < 0 when used == 0 */
    int64_t hidden_ns, hideable_ns; /* sums of its numerator and denominator */
} mt_pp_summary_t;

typedef struct mt_pipeline {
    mt_pp_stages_t stages;  /* owned */
    int warmup;
    size_t n_chunks;        /* chunks matched on every stage */
    size_t unmatched;       /* marker ranges of the leaders left without a partner on another stage */
    bool by_key;            /* chunks matched by their #N (else by order) */
    /* per chunk c (0..n_chunks), in pipeline order */
    int64_t *key;           /* #N, or the ordinal when !by_key */
    int64_t *emit_ns;       /* corrected */
    int64_t *period_ns;     /* -1 for the first chunk */
    int64_t *hidden_ns;     /* meaningful when period_ns >= 0 */
    double *score;          /* -1 when no period */
    int64_t *latency_ns;    /* corrected */
    int64_t *latency_raw_ns;/* on the ranks' own clocks */
    int64_t *stage_ns;      /* [c * n + s] */
    int64_t *stage_max_ns;  /* [c * n + s] */
    /* summary */
    mt_pp_summary_t sum;    /* aligned clocks */
    mt_pp_summary_t raw;    /* the same on the ranks' own clocks */
    mt_pp_stage_sum_t *stage_sum; /* n */
    int critical_stage;     /* -1 when used == 0 */
    size_t n_spikes;
    size_t spikes[MT_PP_SPIKES]; /* chunk indices */
} mt_pipeline_t;

typedef struct mt_pp_opts {
    int warmup;             /* --warmup, default 1 */
} mt_pp_opts_t;

/* Measure the pipeline of `stages` (taken over: *stages is emptied) from the
 * gathered per-rank results an[0..n_an) (sorted by rank; their chunks) and
 * the clocks clocks[0..n_clocks) (by rank; NULL = own clocks). A stage
 * whose leader has no result makes the chunk count 0 (the pipeline is then
 * reported without chunks). *out owned by the caller (mt_pipeline_free).
 * MT_OK or MT_ERR_NOMEM. Not collective; O(c log c) in the chunks. */
mt_status_t mt_pipeline_analyze(mt_pp_stages_t *stages, const mt_pp_opts_t *o,
                                const struct mt_rank_analysis *const *an, size_t n_an, const mt_clock_t *clocks,
                                size_t n_clocks, mt_pipeline_t **out);
void mt_pipeline_free(mt_pipeline_t *p);

/* The job's pipeline step: the stages of mt_pp_stages_choose measured by
 * mt_pipeline_analyze over an[0..n_an) and the clocks. *out stays NULL when
 * there is no pipeline, and also when the stages were inferred from the
 * traffic but no chunk was matched on every stage leader (note says so: no
 * empty section). note[0..cap) as for mt_pp_stages_choose; untouched when
 * there is nothing to say. *out owned by the caller (mt_pipeline_free).
 * MT_OK, MT_ERR_NOMEM or MT_ERR_USAGE. Not collective. */
mt_status_t mt_pp_run(const mt_pp_request_t *rq, const int32_t *ranks, size_t n_ranks, const mt_crow_t *rows,
                      size_t n_rows, const mt_clock_t *clocks, size_t n_clocks,
                      const struct mt_rank_analysis *const *an, size_t n_an, mt_pipeline_t **out, char *note,
                      size_t cap);

/* The one-line verdict ("period 4.31 ms ~ stage0 (4.22 ms); OverlapScore
 * 0.98 -- overlapped") into buf (always NUL-terminated). */
void mt_pipeline_verdict(const mt_pipeline_t *p, char *buf, size_t cap);


#ifdef __cplusplus
}
#endif
#endif /* MERGETRACE_PIPELINE_H */
