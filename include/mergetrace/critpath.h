/* Steps, the cross-rank dependency graph, its critical path, replay and
 * what-if projections: run on process 0 after clock alignment over every
 * rank's steps and graph summary (mt_rank_analysis_t "steps", "graph") and
 * the matched collective rows. Serial and plain data.
 *
 * Definitions (integer ns on the reference clock: every time of rank r goes
 * through mt_clock_apply with r's clock):
 *
 *  step          ProfilerStep#N of every rank that has it. Job step start
 *                = the earliest rank start (range start), job step end =
 *                the latest rank end (analysis.h "steps": max(range end,
 *                last end of the activities launched in it)); step time =
 *                end - start. Rank step duration = its own end - start.
 *  used steps    all but the first `warmup` steps (in step order); every
 *                step when there are no more than `warmup`. p50 / p90 / p99
 *                are nearest-rank percentiles (mt_stats), mean rounded
 *                down, over the used steps' times.
 *  spike         a used step whose time is above 1.5 x p50; labelled with
 *                the rank that ended last and the kind of work with the
 *                most time on its critical path.
 *  graph         nodes: every GPU activity of every rank (start s, end e)
 *                and every host synchronisation call. The start of an
 *                activity has up to three candidate predecessors: the end
 *                of the previous activity on its stream; its launch call's
 *                end + lambda (lambda = the rank's smallest start - launch
 *                end, >= 0); and, when neither explains the start within
 *                1 us, the latest end of an activity on another stream of
 *                the rank that started before it and ended no later than
 *                s + 1 us (an inferred event record / stream wait;
 *                timestamps rounded apart by a few ns). The candidate with the latest time (each
 *                taken as at most s) binds: the critical path follows it,
 *                and the measured s - that time is an idle or host segment
 *                of the path. A communication activity that is a member of
 *                a matched instance of two or more participants (collective
 *                or send/recv) ends at max(its own start, the instance's
 *                last arrival + T) with T = e - last arrival (its
 *                transfer); any other activity ends at s + (e - s). A host
 *                sync waits for the latest-ending activity of its rank that
 *                was launched before the sync started and ended before it
 *                returned; it is GPU-bound when that activity ended after
 *                the sync started, else CPU-bound (it lasts its measured
 *                duration). Every host time of the rank after a sync's end
 *                shifts with it (the host process waited), launch calls and
 *                step ranges included.
 *  replay        the graph evaluated in order of measured time (made a
 *                topological order of the edges where a few ns of
 *                rounding put a start before its predecessor's end), each step
 *                from its measured start, with only what the model can
 *                justify: measured durations of activities and host calls,
 *                and the dependencies. An activity starts at the latest of
 *                its stream predecessor's replayed end, its launch call's
 *                end + the rank's launch latency (the median start - launch
 *                end over its launch-bound activities: those bound by
 *                their launch, not by another stream), and its inferred
 *                stream-wait predecessor's end; a GPU-bound sync returns at
 *                the replayed end of what it waited for + the rank's sync
 *                lag (the median over its GPU-bound syncs). No edge carries
 *                its own measured slack, so time the graph cannot explain
 *                (a dependency the trace does not show, a launch slower
 *                than usual) shows as replay error, |replayed - measured| /
 *                measured step time, per step and as median and maximum
 *                over the used steps. Projections are refused (not
 *                printed) for steps whose replay error is above 5 %.
 *  critical path of a step: from the job step end backward along the
 *                binding edges to the job step start. Segments: compute
 *                and memory (activity durations), comm (the transfer of a
 *                matched instance, charged to the rank whose end it is, and
 *                the whole duration of an unmatched communication
 *                activity), host (CPU time: the time from a launch call's
 *                end to its activity, the host time before a launch back to
 *                the previous sync or the step start, a sync's lag), idle
 *                (stream gaps and inferred stream waits). The segments
 *                tile [start, end), so the path length is the step time.
 *  near-critical ranks of a step: ranks whose step end is within the slack
 *                (max(2 x the largest clock residual p99, 0.1 % of the step
 *                time)) of the job step end; the end rank is undecided when
 *                two or more are.
 *  imbalance     per kind (Scalasca's critical-path imbalance): the kind's
 *                time on the path minus the mean over ranks of the rank's
 *                own time of that kind in the same steps (compute, comm,
 *                memory, idle from the rank step breakdown; host has no
 *                per-rank counterpart and is left out).
 *  what-if       the replay with changed durations and the same edges:
 *                straggler   each compute / memory activity of the ranks in
 *                            `stragglers` scaled by median over ranks of
 *                            the name's mean duration / the rank's own
 *                            mean, when that is below 1;
 *                comm        every matched communication activity lasts
 *                            its instance's transfer (the shortest
 *                            participant duration) and waits for nobody;
 *                launch      launch edges dropped (the GPU never waits for
 *                            the host to launch), no activity of a rank
 *                            step before that step's start (on a pipeline
 *                            that start shifted with its rank's host, see
 *                            below), and the host
 *                            catches up: where an activity's launch (at
 *                            its shifted time + the launch latency) is
 *                            later than its start without it, the
 *                            difference is host time removed, and the
 *                            rank's later syncs and its step end move
 *                            earlier by the sum of these since the last
 *                            sync (a sync carries it on as its shift);
 *                stage       (pipelines) for each stage, the compute and
 *                            memory activities of its ranks 10 % shorter
 *                            (the request's stage_factor), replayed
 *                            as one run (shifts carry over from step to
 *                            step, so a stage that finishes a chunk sooner
 *                            starts the next sooner); the period is the
 *                            time between consecutive job step ends, and a
 *                            projected period = the measured one + (its
 *                            change in the scenario's run - its change in
 *                            the unchanged run); p50 over the used steps
 *                            whose predecessor is a step too;
 *                pattern     activities whose name matches the glob
 *                            (fnmatch) scaled by the factor; for a member
 *                            of a matched instance, its transfer T (it
 *                            still waits for the last arrival).
 *                A step's projected time is its measured time + (the
 *                scenario's replay - the unchanged replay), so the model's
 *                own error on the step cancels to first order. Each gives
 *                the p50 over used steps of the projected step times; a
 *                projection assumes the dependencies stay the same. On a
 *                pipeline (the request names 2 stages or more) every
 *                scenario is replayed as one run like "stage" (a chunk
 *                waits for the previous one, so a change to every chunk
 *                adds up over them), compared with the unchanged run (its
 *                step starts shifted with their ranks' host, like its
 *                ends), and also projects the period as "stage" does.
 *  root causes   (Scalasca's delay costs) each wait of a participant p of
 *                a matched instance I, a GPU collective or a host one
 *                (a gloo:* range; p's walk then starts on its host at its
 *                arrival) (w = last arrival - p's arrival) is
 *                charged to the late rank q (the last arrival) by comparing
 *                what q and p did since their previous synchronisation
 *                point. q's arrival is walked back along the binding edges
 *                (as the critical path) until the walk leaves the transfer
 *                of an instance (GPU or host) p took part in (w0 = that instance's last
 *                arrival) or reaches the job step start (w0); p's arrival
 *                is walked back to the same w0. Each walk tiles [w0, its
 *                arrival) with segments keyed by kind and name: compute and
 *                memory (activity time, by name), comm_transfer (a matched
 *                instance's transfer, or an unmatched communication
 *                activity, by name), comm_wait (a matched communication
 *                activity the walk could not follow to its last arrival, by
 *                name), host (host gaps: launch and sync lag, host time
 *                before a launch), idle (stream gaps, inferred stream
 *                waits). Where q's walk leaves a transfer for the instance's
 *                last arrival on another rank (q itself waited), it goes on
 *                on that rank: those segments are propagated (long-term)
 *                costs, charged to that rank; q's own are short-term. Per
 *                key, excess = q's time - p's time; the keys with a
 *                positive excess share min(w, their sum) in proportion,
 *                and within a key its segments in proportion of their time.
 *                Since both walks end at their arrivals and start at w0,
 *                the excesses sum to w: all of w is attributed unless the
 *                walks were cut (below) or p's arrival is before w0. What is
 *                not attributed is reported as such. Summed per (rank, kind,
 *                name) and per kind, and per (rank, annotation): each
 *                segment of an activity carries the activity's annotation
 *                (analysis.h "graph": the innermost user annotation
 *                holding its launch); host and idle segments and
 *                activities outside any annotation carry none. Limits: a
 *                walk stops after 65536
 *                segments (CP_RC_SEG; the rest of that window is left out of
 *                the comparison); q's walk for an instance is made once and
 *                stops at the first instance holding all of I's participants.
 *                Cost: per wait, the segments of the two walks.
 *
 * Cost: O(n log n) in the activities of all ranks, plus the root causes'
 * walks (see there). */
#ifndef MERGETRACE_CRITPATH_H
#define MERGETRACE_CRITPATH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mergetrace/analysis.h"
#include "mergetrace/collectives.h"
#include "mergetrace/comm.h"
#include "mergetrace/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Kinds of critical-path segments. */
typedef enum mt_cp_kind {
    MT_CP_COMPUTE = 0,
    MT_CP_COMM,
    MT_CP_MEMORY,
    MT_CP_HOST,
    MT_CP_IDLE,
    MT_CP_KIND_COUNT_
} mt_cp_kind_t;

/* "compute", "comm", "memory", "host", "idle". Never NULL. */
const char *mt_cp_kind_str(mt_cp_kind_t k);

/* Kinds of root causes of waiting (see "root causes" above). */
typedef enum mt_rc_kind {
    MT_RC_COMPUTE = 0,
    MT_RC_MEMORY,
    MT_RC_COMM_WAIT,
    MT_RC_COMM_TRANSFER,
    MT_RC_HOST,
    MT_RC_IDLE,
    MT_RC_KIND_COUNT_
} mt_rc_kind_t;

/* "compute", "memory", "comm_wait", "comm_transfer", "host", "idle". Never
 * NULL. */
const char *mt_rc_kind_str(mt_rc_kind_t k);

/* What-if scenarios. */
typedef enum mt_wi {
    MT_WI_STRAGGLER = 0,
    MT_WI_COMM,
    MT_WI_LAUNCH,
    MT_WI_PATTERN,
    MT_WI_COUNT_
} mt_wi_t;

/* "straggler_at_median", "comm_at_transfer", "no_launch_gaps", "pattern". */
const char *mt_wi_str(mt_wi_t w);

/* One rank in one step. */
typedef struct mt_cp_rank_step {
    int32_t rank;
    int32_t near_critical;     /* 1: within the slack of the job step end */
    int64_t start_ns, end_ns;  /* aligned */
    int64_t compute_ns, comm_ns, memory_ns, idle_ns; /* the rank's own breakdown of its window */
    int64_t path_ns;           /* its segments on the step's critical path */
} mt_cp_rank_step_t;

/* One step of the job. */
typedef struct mt_cp_step {
    int64_t step;
    int64_t start_ns, end_ns, time_ns; /* aligned job step */
    int64_t replay_ns;         /* replayed step time with measured durations */
    int64_t kind_ns[MT_CP_KIND_COUNT_]; /* the critical path by kind; sums to time_ns */
    int64_t whatif_ns[MT_WI_COUNT_]; /* projected step times; -1 not run */
    int32_t end_rank;          /* rank whose end is the job's */
    bool undecided;            /* another rank's end is within the slack */
    bool used;                 /* after the warm-up */
    bool spike;
    bool refused;              /* replay error > 5 %: no projection */
    uint32_t first, n;         /* its ranks: rank_steps[first .. first + n) */
} mt_cp_step_t;

/* A name (or host gap) and time, for the top lists. */
typedef struct mt_cp_name {
    int32_t rank;              /* -1: summed over ranks */
    uint32_t kind;             /* mt_cp_kind_t; in mt_critpath_t.causes mt_rc_kind_t */
    char *name;                /* owned; "" for host and idle segments */
    int64_t ns;
} mt_cp_name_t;

/* One what-if result over the used steps. */
typedef struct mt_cp_whatif {
    bool run;                  /* false: not applicable (no straggler, no pattern) */
    char label[96];            /* what was changed, e.g. "ranks 3 at the median speed" */
    int64_t p50_ns;            /* p50 of the projected step times of the used steps not refused */
    int64_t gain_ns;           /* measured p50 of the same steps - p50_ns */
    uint64_t steps;            /* steps projected */
    /* pipelines (the request's n_stages >= 2): replayed as one run, shifts
     * carried from step to step, and the period projected as for what-if
     * "stage" */
    bool carried;
    /* what-if "comm" on a pipeline: the period only, no step times (steps
     * 0, p50_ns and gain_ns 0, every step's whatif_ns -1). With no waiting
     * a receive no longer waits for its sender, so each stage runs at its
     * own pace and a chunk's work on the stages drifts apart: the step, its
     * earliest start to its latest end, then grows from step to step
     * (sample_traces/pp8 before: 6.9 to 14.5 ms over the used steps 11-21,
     * measured 7.6 to 7.9) and is no prediction; the period, the slowest
     * stage's own pace, is. */
    bool period_only;
    int64_t period_p50_ns;     /* p50 of the projected periods (mt_critpath_t.periods of them) */
    int64_t period_gain_ns;    /* mt_critpath_t.period_p50_ns - period_p50_ns */
    uint64_t matched;          /* what-if "pattern": the activities its glob matched (0: it changes nothing) */
    /* When the graph holds stream waits of communication kernels inferred
     * from the times (no event names them: a profile without cuda_sync
     * events): the step p50 (and a pipeline's period p50) again with every
     * such kernel's start pinned to its inferred predecessor's measured
     * end, the other binding the trace cannot rule out. ranged
     * (period_ranged) when the two differ by 0.5 % of the measured p50 or
     * more: the answer is the range between p50_ns and alt_p50_ns
     * (period_p50_ns and alt_period_p50_ns; docs/whatif.md "Ranges").
     * Worked out for every what-if without a pipeline; on a pipeline for
     * the straggler's, the pattern's and the better of "comm" and
     * "launch" by period. */
    bool ranged;
    int64_t alt_p50_ns;
    bool period_ranged;
    int64_t alt_period_p50_ns;
    uint64_t alt_waits;        /* the inferred waits pinned: communication kernels' (cp_run.c); 0 not tried */
} mt_cp_whatif_t;

/* What-if "stage" for one pipeline stage. */
typedef struct mt_cp_stage_wi {
    uint32_t stage;            /* index into the request's stages */
    int64_t p50_ns;            /* p50 of the projected periods */
    int64_t gain_ns;           /* the measured period p50 - p50_ns */
    bool ranged;               /* the best stage's other binding, as mt_cp_whatif_t.ranged */
    int64_t alt_p50_ns;
} mt_cp_stage_wi_t;

/* Per rank over the used steps. */
typedef struct mt_cp_rank {
    int32_t rank;
    uint32_t near_critical;    /* used steps where it was near-critical */
    uint32_t end_rank;         /* used steps whose end was its own */
    int64_t path_ns;           /* its segments on the critical paths */
    int64_t caused_ns;         /* root causes: wait charged to its segments (short and long term) */
} mt_cp_rank_t;

/* Where a rank sits in the job, for the ideal what-if: its worker (the
 * paper's data-parallel rank; a Kineto job without one: the rank itself)
 * and its pipeline stage (-1 unknown); for a Kineto job the request's
 * stages give both (mt_cp_request_t.coords). */
typedef struct mt_cp_coord {
    int32_t rank, worker, stage;
} mt_cp_coord_t;

/* One group's slowdown in the ideal what-if. */
typedef struct mt_cp_share {
    char name[64];             /* operation type; "" for workers and stages */
    int32_t id;                /* worker or stage; -1 for types */
    double s;                  /* mean step time with this group restored / ideal mean */
} mt_cp_share_t;

/* The ideal what-if of "Understanding Stragglers in Large Model Training
 * Using What-if Analysis" (OSDI 2025), on the same graph (docs/whatif.md):
 *  no-delay      the replay with measured durations and no gaps: each
 *                activity starts when its last predecessor of the same step
 *                ends (the step's start when it has none); a communication
 *                activity ends at its instance's last arrival + its own
 *                transfer (measured end - last arrival). A Kineto pipeline
 *                (two stages or more) is replayed as one run, shifts
 *                carried from step to step, as its what-ifs are.
 *  ideal         the same with every activity at its type's typical value
 *                over all ranks and used steps: computation at the mean
 *                duration (a Kineto job: the median over ranks of each
 *                rank's mean; with stages, the median over the stages of
 *                each stage's median rank; docs/whatif.md; a pipeline's
 *                activities outside the used steps too), communication at the
 *                median transfer (median duration when unmatched), a
 *                host pause (docs/whatif.md) without its lateness.
 *  S             mean no-delay step time / mean ideal step time, over the
 *                used steps not refused.
 *  S per group   the ideal with one group (operation type, worker, stage)
 *                at its measured values; types: the timeline's operation
 *                types with send and receive of a direction together
 *                ("forward-pp-comm"), or for Kineto jobs the classes
 *                (compute, comm, memory).
 *  M_S           (T_nodelay - T_rem) / (T_nodelay - T_ideal), T_rem the
 *                no-delay replay with the last stage at the ideal values:
 *                the share of the slowdown the last stage explains.
 *  M_W           the same for the worker on the stage with the largest
 *                min(S_worker, S_stage) (ties: the lowest rank).
 *  heat          per (worker, stage): min(S_worker, S_stage).
 *  bound         with more than MT_CP_IDEAL_WORKERS workers, S per worker
 *                (and heat, M_W) only for that many: those whose measured
 *                durations exceed the ideal ones the most, summed over the
 *                used steps (lowest id on ties), so that the what-if costs
 *                a bounded number of replays, not one per worker. */
#define MT_CP_IDEAL_WORKERS 16
typedef struct mt_cp_ideal {
    bool run;
    uint64_t steps;            /* steps in the means (periods when by_period) */
    int64_t nodelay_ns, ideal_ns; /* mean step times, or mean periods when by_period */
    bool by_period;            /* a pipeline replayed as one run: every S is a ratio of mean periods */
    double s;
    /* S again with the inferred stream waits of communication kernels
     * pinned (mt_cp_whatif_t.ranged): s_ranged when it differs from s by
     * 0.5 % of s or more, and S is then the range between s and alt_s */
    bool s_ranged;
    double alt_s;
    mt_cp_share_t *by_type, *by_worker, *by_stage; /* by_type: largest S first; the others by id */
    size_t n_type, n_worker, n_stage;
    size_t n_worker_all;       /* workers in the job; by_worker holds at most MT_CP_IDEAL_WORKERS of them */
    double *heat;              /* n_worker x n_stage, row = worker (by_worker order) */
    int32_t blamed_stage;      /* the stage with the largest S; -1 none */
    bool has_ms, has_mw;
    double ms, mw;
    int32_t ms_stage;          /* the last stage */
    int32_t mw_rank, mw_worker, mw_stage;
    int64_t ms_rem_ns, mw_rem_ns; /* T_rem of each */
} mt_cp_ideal_t;

/* One drawn segment of a step strip (report.html): [a, b) aligned ns. A
 * segment narrower than 1/MT_CP_STRIP_COLS of the step is merged with its
 * narrow neighbours (gaps narrower than that included) until the run is
 * that wide; kind is then the kind with most time in it. */
typedef struct mt_cp_seg {
    int64_t a, b;
    int64_t kind_ns[MT_CP_KIND_COUNT_]; /* time of each kind inside (gaps not counted) */
    int64_t name_ns;           /* duration of the named activity inside */
    char *name;                /* owned: the longest activity inside; NULL for host and idle */
    int32_t rank;
    uint32_t n;                /* activities (or path segments) merged */
    uint8_t kind;              /* mt_cp_kind_t */
} mt_cp_seg_t;

/* Bounds of a strip: rows shown and the width unit of the merging. */
#define MT_CP_STRIP_RANKS 24
#define MT_CP_STRIP_COLS 500

/* A per-step strip (report.html): the ranks of one step on the aligned
 * clock, each rank's GPU activities (where streams overlap, the activity
 * that started first; the rest of the row is idle) and the step's critical
 * path. Rows: at most MT_CP_STRIP_RANKS, ranks with most time on this
 * step's path first, then the near-critical ones, then the latest step
 * ends. At most 2 x MT_CP_STRIP_COLS + 1 segments per row and on the
 * path. */
typedef struct mt_cp_strip {
    size_t step;               /* index into mt_critpath_t.steps */
    const char *why;           /* static: "median" (the used step whose time is the p50), "slowest" */
    int32_t *ranks;            /* the rows, in order (owned) */
    size_t n_rows, n_ranks_all; /* rows shown; ranks in the step */
    mt_cp_seg_t *segs;         /* row i: segs[row_first[i] .. row_first[i + 1]) (owned) */
    size_t n_segs;
    size_t *row_first;         /* n_rows + 1 (owned) */
    mt_cp_seg_t *path;         /* the critical path in time order, tiling the step (owned) */
    size_t n_path;
} mt_cp_strip_t;

typedef struct mt_critpath {
    mt_cp_step_t *steps;       /* by step number */
    size_t n_steps;
    mt_cp_rank_step_t *rank_steps;
    size_t n_rank_steps;
    mt_cp_rank_t *ranks;       /* ascending */
    size_t n_ranks;
    int warmup;
    uint64_t used;             /* used steps */
    int64_t p50_ns, p90_ns, p99_ns, mean_ns, max_ns; /* used step times */
    double replay_err_median, replay_err_max; /* fractions, over the used steps */
    uint64_t refused;          /* used steps refused */
    int64_t slack_ns;          /* the largest slack used */
    int64_t kind_ns[MT_CP_KIND_COUNT_]; /* critical path by kind, summed over used steps */
    int64_t path_ns;           /* sum of the used step times (= sum of kind_ns) */
    /* ranks without a trace (issue 39 item 7): of kind_ns[MT_CP_COMM], the
     * time in collectives whose group has a member without one (waiting
     * for it or moving data: the trace cannot tell); the request's
     * n_absent. When more ranks are absent than traced (absent_ranks >
     * n_ranks) neither root causes nor the ideal what-if are worked out:
     * whom the traced ranks waited for is not in the traces */
    int64_t comm_absent_ns;
    uint64_t absent_ranks;
    int64_t imbalance_ns[MT_CP_KIND_COUNT_]; /* see "imbalance"; host is 0 */
    mt_cp_name_t *top;         /* names on the path, summed over ranks, most time first */
    size_t n_top;
    mt_cp_whatif_t whatif[MT_WI_COUNT_];
    /* root causes */
    int64_t wait_ns;           /* all waiting in matched instances of the used steps */
    int64_t attributed_ns;     /* short_ns + long_ns */
    int64_t short_ns, long_ns; /* short-term and propagated (long-term) */
    int64_t rc_kind_ns[MT_RC_KIND_COUNT_]; /* attributed wait per root-cause kind; sums to attributed_ns */
    mt_cp_name_t *causes;      /* (rank, kind, name) most first, at most 10; kind is mt_rc_kind_t,
                                * name "" for host and idle */
    size_t n_causes;
    mt_cp_name_t *by_annot;    /* (rank, annotation) most first, at most 10: name the annotation ("" none:
                                * host, idle and activities outside any), kind the mt_rc_kind_t with the
                                * most of its time */
    size_t n_by_annot;
    /* pipelines: what-if "stage" (see above), one per stage of the request */
    int64_t period_p50_ns;     /* measured: p50 of job step end - the previous step's end */
    uint64_t periods;          /* periods in it */
    mt_cp_stage_wi_t *stage_wi; /* n_stage_wi = the request's n_stages when run */
    size_t n_stage_wi;
    mt_cp_ideal_t ideal;       /* see mt_cp_ideal_t; run only when requested */
    mt_cp_strip_t strips[2];   /* the median and the slowest used step (one when they are the same step) */
    size_t n_strips;
    /* what the model inferred (docs/whatif.md "The dependency model") */
    uint64_t waits_inferred;   /* stream waits inferred from the times: no event of the trace names them */
    uint64_t waits_explicit;   /* stream waits the trace names (mt_rank_analysis_t.gdeps) */
    uint64_t waits_pinned;     /* the ranges' pinned waits: communication kernels' inferred ones (cp_run.c) */
    uint64_t waits_unresolved; /* cuda_sync stream-wait records that name no activity of the trace
                                * (mt_rank_analysis_t.swaits_unresolved): those waits are inferred */
    uint64_t host_colls;       /* host collective members (gloo:* ranges) */
    uint64_t pauses;           /* host pauses placed (late members: a sleep, a data loader) */
    int64_t pause_ns;          /* the lateness they hold, summed */
    /* check: the straggler what-if against the rest of the report. Failed
     * when the straggler what-if's first rank caused half the waiting or
     * more (root causes) and holds half the critical path or more, yet at
     * the median rank's speed the step p50 gains under 2 %: its delay is
     * in something the model does not change (its host's launch work, an
     * edge the trace does not show), and the what-if is no answer. */
    bool check_run, check_failed;
    int32_t check_rank;
    double check_caused, check_path, check_gain; /* fractions: of the waiting, of the path, of the step p50 */
} mt_critpath_t;

/* ---- Whole-job statistics as reductions (issue 43, design B steps 1
 * and 2: src/cross/cp_dist.c) ----
 *
 * The statistics of mt_critpath_run that read every rank's activities,
 * worked out by the processes that loaded the ranks instead of from
 * process 0's graph: the straggler what-if's factors (per (name, rank)
 * sums and counts of the compute and memory durations, reduced at the
 * name's owner process, name hash mod processes, which takes the median
 * over ranks) and the ideal what-if's typical values (per (name, rank)
 * sums and counts of the used steps' values at the same owners; a comm
 * name's median transfer found exactly by rounds of 2^16-bucket count
 * histograms summed over the processes, 16 bits of the value a round).
 * The same numbers as the graph's, bit for bit (sums of integer ns below
 * 2^53 are exact in any order). */

/* An activity that is a member of a matched instance, and its transfer. */
typedef struct mt_cp_member {
    int32_t rank;
    uint32_t index;            /* its activity: the rank's mt_rank_analysis_t.gacts[index] */
    int64_t transfer;          /* its aligned end - its instance's last arrival (may be < 0) */
} mt_cp_member_t;

/* What only process 0 knows when the reductions run (mt_cp_dist_reduce's
 * in): borrowed for the call. */
typedef struct mt_cp_dist_in {
    const int64_t *used_steps; /* the used job steps' numbers (mt_cp_step_t.used), ascending */
    size_t n_used;
    /* every instance member of the job, by (rank, index), with its
     * transfer: given (members), or made on demand by members_of (a
     * malloc'd list of *n into *m, which the reduction frees; MT_OK or
     * MT_ERR_NOMEM), called only when the instances' owners cannot work
     * the transfers out (mt_cp_dist_reduce); neither: none */
    const mt_cp_member_t *members;
    size_t n_members;
    mt_status_t (*members_of)(const void *ctx, mt_cp_member_t **m, size_t *n);
    const void *members_ctx;
    const struct mt_cp_request *rq; /* its stragglers, stages, coords and ideal; the rest unread */
} mt_cp_dist_in_t;

/* The members of the instances a process owns in a sharded match
 * (mt_align_result_t.owned), for mt_cp_dist_reduce: borrowed. */
typedef struct mt_cp_owned {
    const mt_owned_member_t *m;
    size_t n;
} mt_cp_owned_t;

/* The reduced statistics (opaque): read by mt_critpath_run. */
typedef struct mt_cp_dist mt_cp_dist_t;

/* Collective over comm (every process calls it; process 0 is the root):
 * in on process 0 (NULL on the others, which learn it from process 0);
 * own: this process's instances of a sharded match (NULL on every
 * process when the match was not sharded): their owners then work out
 * the members' transfers (the instance's last arrival from the members'
 * aligned starts, with the processes holding the members' ranks), and
 * process 0 sends none; without own, or when a rank's two rows name one
 * activity (whose row takes it is the graph's match order), process 0
 * sends each process its ranks' members (in->members or members_of);
 * an[0..n_an) the ranks this process loaded (any order; borrowed: their
 * GPU activities, steps and names are read; a rank that another process
 * also passes counts at the lowest such process other than 0, so process
 * 0 may pass every rank it holds once the analyses are gathered, and its
 * own are read), clocks[i] the clock of
 * ranks[i] (n_ranks; NULL: own clocks). *out on every process (free with
 * mt_cp_dist_free); only process 0's holds the statistics, each process's
 * the bytes it sent and received. MT_OK, MT_ERR_NOMEM or comm's error,
 * the same on every process (*out NULL on error). */
mt_status_t mt_cp_dist_reduce(const mt_comm_t *comm, const mt_cp_dist_in_t *in, const mt_cp_owned_t *own,
                              const mt_rank_analysis_t *const *an, size_t n_an, const mt_clock_t *clocks,
                              const int32_t *ranks, size_t n_ranks, mt_cp_dist_t **out);

/* Bytes this process sent and received in the reductions of d (payloads
 * of the collectives, over every process's share). 0 for NULL. */
uint64_t mt_cp_dist_sent(const mt_cp_dist_t *d);
uint64_t mt_cp_dist_received(const mt_cp_dist_t *d);

/* Free d. NULL does nothing. */
void mt_cp_dist_free(mt_cp_dist_t *d);

/* What to compute. */
typedef struct mt_cp_request {
    int warmup;                /* steps left out of the statistics */
    const int32_t *stragglers; /* ranks for the straggler what-if (borrowed); none: not run */
    size_t n_stragglers;
    const char *pattern;       /* glob over activity names for the pattern what-if; NULL none */
    double factor;             /* its duration factor (> 0) */
    /* pipeline stages for what-if "stage" (borrowed): stage s holds
     * stage_ranks[stage_first[s] .. stage_first[s + 1]); n_stages < 2: not run */
    const int32_t *stage_ranks;
    const size_t *stage_first;
    size_t n_stages;
    double stage_factor;       /* duration factor of the stage's activities; 0: 0.9 */
    bool ideal;                /* run the ideal what-if (mt_critpath_t.ideal) */
    /* per rank (borrowed); a rank not listed: worker = rank, stage -1. With
     * no coords but stages (above), stage s's k-th rank is worker k of
     * stage s; a rank in no stage: worker = rank, stage -1. */
    const mt_cp_coord_t *coords;
    size_t n_coords;
    /* ranks of the job without a trace (0: every rank is there): the comm
     * activities of instances with fewer members than their group are
     * counted in comm_absent_ns, and past as many as the traced ranks no
     * root causes and no ideal what-if (mt_critpath_t.absent_ranks) */
    size_t n_absent;
    /* Hooks that let the caller free inputs as soon as they are done
     * with, lowering the run's peak (process 0 of a big job: discover/job_cross.c);
     * each called once with hook_ctx, not when the run fails before it;
     * NULL: none. rows_done: from then on mt_critpath_run reads neither
     * rows nor m (called before the graph's tables are allocated). built:
     * the graph is built, before its replays; from then on it reads no
     * GPU activity of the analyses (gacts, gdeps, gstep). */
    void (*rows_done)(void *ctx);
    void (*built)(void *ctx);
    void *hook_ctx;
    /* The whole-job statistics by reductions (mt_cp_dist_reduce): when
     * not NULL, called once with hook_ctx once the graph is built (before
     * built), with what only the graph knows (the used steps; the
     * instance members' transfers on demand, mt_cp_dist_in_t.members_of,
     * when the instances' owners cannot work them out); it runs
     * mt_cp_dist_reduce as process 0 with the other processes and
     * returns *out, which mt_critpath_run
     * takes over: the straggler factors and the ideal what-if's typical
     * values then come from it, not from the graph. Its error is
     * mt_critpath_run's. NULL: from the graph (one process). */
    mt_status_t (*reduce)(void *ctx, const mt_cp_dist_in_t *in, mt_cp_dist_t **out);
} mt_cp_request_t;

/* Steps, critical path, replay, what-ifs and root causes of the job.
 * an[0..n_an) are the ranks' results (any order); clocks[i] is the clock
 * of ranks[i] (n_ranks; NULL: own clocks); rows and m the alignment's
 * gathered rows and match (may be NULL: no instance). Everything is
 * borrowed for the call (rq's hooks say what may go before it returns);
 * *out is owned by the caller (mt_critpath_free),
 * NULL when no rank has a step. MT_OK or MT_ERR_NOMEM. Not collective. */
mt_status_t mt_critpath_run(const mt_cp_request_t *rq, const mt_rank_analysis_t *const *an, size_t n_an,
                            const mt_clock_t *clocks, const int32_t *ranks, size_t n_ranks, const mt_crow_t *rows,
                            size_t n_rows, const mt_match_t *m, mt_critpath_t **out);

/* Free a result. NULL does nothing. */
void mt_critpath_free(mt_critpath_t *c);

/* What process 0 of the program needs for the cross-rank steps of a job
 * of n_ranks ranks with n_rows collective rows and n_acts GPU activities
 * (the analyses' gacts), in bytes beyond what it holds after loading its
 * own share: *without with the GPU activities left where they are and no
 * critical path (the gathered analyses, the rows, the match, the fit and
 * the cross-rank tables), *with for the whole run with the critical path.
 * A projection from measured runs (critpath.c says which), for deciding
 * before the gather whether the critical path fits a memory budget; not a
 * bound. */
void mt_critpath_memory(uint64_t n_ranks, uint64_t n_rows, uint64_t n_acts, uint64_t *without, uint64_t *with);

/* The line that says why the steps were left out (the program's warning
 * critical_path_skipped): need (mt_critpath_memory's *with) over budget,
 * both in bytes, for a job of n_acts GPU activities and n_rows rows; into
 * b (cap bytes, NUL-terminated, cut to fit). */
void mt_critpath_memory_note(char *b, size_t cap, uint64_t need, uint64_t budget, uint64_t n_acts, uint64_t n_rows);

#ifdef __cplusplus
}
#endif
#endif /* MERGETRACE_CRITPATH_H */
