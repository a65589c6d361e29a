/* The cross-rank analyses, run on process 0 over every rank's collective
 * rows after matching and clock alignment: a collective table (time and
 * bandwidth per process group, collective, message size and dtype, like
 * nsys' nccl_sum with nccl-tests' bandwidth definitions), straggler
 * detection from arrival times on the aligned clock (checked against a
 * clock-free signal, the kernel durations), and wait vs transfer time per
 * rank. Serial and plain data.
 *
 * Definitions (times are integer ns; "duration" d of a row = end_ns -
 * start_ns on the rank's own clock, so durations need no clock fit; a row
 * is a communication kernel, or for gloo the gloo:* CPU range that ran the
 * collective (MT_CI_CPU), which the passes take alike):
 *
 *  instances     the groups of mt_match_t. MISMATCH instances (participants
 *                that disagree on what they ran) are left out of every
 *                section and counted in mismatched. An UNMATCHED row is an
 *                instance of one participant.
 *  transfer      of an instance: the shortest participant duration. The
 *                last rank to arrive does not wait, so its kernel is the
 *                data movement alone.
 *  span          of an instance: the longest participant duration. The
 *                first rank to arrive waits for everyone, so its kernel runs
 *                from the first arrival to the common end: the instance's
 *                corrected last end - first start, up to the end jitter,
 *                without depending on the clock fit.
 *  wait          of a participant: its duration - the instance's transfer.
 *  bytes         elements * the dtype's size. Elements: allgather
 *                out_nelems (the gathered buffer); every other kind
 *                in_nelems, else out_nelems when in_nelems is unknown
 *                (reducescatter: the full input buffer, as nccl-tests
 *                count it), taken from the lowest rank that has it. An
 *                unknown dtype or element count gives 0 bytes.
 *  dtype size    1: Byte Char Bool int8 uint8 Float8_*; 2: Half BFloat16
 *                Short; 4: Float Int UInt32 ComplexHalf; 8: Double Long
 *                UInt64 ComplexFloat; 16: ComplexDouble; and the NCCL
 *                spellings (f32, bf16, int8_t, ...). Case-insensitive.
 *  kind          of an instance: its participants' kind; a send matched
 *                with a recv is "sendrecv".
 *  algbw         bytes * count / transfer total, in GB/s (bytes per ns);
 *                unknown (null) when bytes or transfer are 0.
 *  busbw         sum over instances of bytes * f(kind, n) / transfer total,
 *                with nccl-tests' factors f: allreduce 2(n-1)/n;
 *                allgather, reducescatter, alltoall, gather, scatter
 *                (n-1)/n; broadcast, reduce, send, recv, sendrecv 1; other
 *                kinds unknown (null). n = the instance's expected group
 *                size (mt_match_t.expected; equal to the participants for
 *                FULL instances, larger for PARTIAL ones: the communicator
 *                still had n ranks).
 *  arrival       of a participant: mt_clock_apply(its clock, start_ns), on
 *                the reference clock. Only instances with >= 2
 *                participants (FULL or PARTIAL) take part in the straggler
 *                analysis.
 *  last          the participant with the latest arrival (ties: the lowest
 *                rank); none when all arrive at the same ns.
 *  lateness      arrival - the instance's median arrival (even counts: the
 *                mean of the two middle arrivals, rounded down).
 *  wait caused   by the last participant of an instance: the sum over the
 *                other participants of (its arrival - theirs). Only the
 *                last one causes wait; summed over ranks it equals the
 *                total time ranks spent waiting for the last arrival.
 *  waited        of a participant: last arrival - its arrival (what it
 *                waited, measured on the aligned clock).
 *  chance share  E = sum over the rank's instances of 1/participants: the
 *                expected number of last arrivals if arrival order were
 *                random.
 *  spread        S = the median (nearest rank) of |lateness| over every
 *                participant of every instance with >= 3 participants:
 *                the job's typical arrival scatter, to put a suspect's
 *                lateness in proportion (evidence only); none (-1) with
 *                only groups of two.
 *  suspect       rank r is a straggler suspect of the job when all of:
 *                 (0) last(r) >= 3 (one or two collectives are no pattern);
 *                 (1) last(r) >= min(2 E, n - (n - E) / 4), n = its
 *                     instances: at least twice its chance share (the cap
 *                     matters only for groups of two, where twice the
 *                     chance share is "always last": there it needs to be
 *                     last in 7 of 8);
 *                 (2) wait caused(r) > 20 % of all wait caused;
 *                or (0) and (1) among the instances of one kind of
 *                collective (one group and mt_coll_kind_t) alone, and
 *                wait caused(r) > 50 % of all wait caused: a rank that
 *                holds up one collective of each step while the step's
 *                others start together is last at only a share of all
 *                instances (a gloo job on one GPU, rank 2 late 15 ms at
 *                each all_reduce of four collectives a step: last at 13
 *                of 40, 97 % of the wait).
 *                 (4) with ProfilerSteps: the steps it led (caused the
 *                     most wait of the step) are more than chance allows
 *                     at the job-wide level 0.05: P(X >= led) < 0.05 /
 *                     ranks for X ~ Binomial(its steps, its mean
 *                     1 / participants). The collectives of one step are
 *                     not independent trials (late at its first bucket, a
 *                     rank is late at all of them), steps are; testing
 *                     every rank is corrected for (tests/gen
 *                     check_stragglers.py: straggler-free jobs).
 *                Consistency is the evidence: a straggler whose delay is
 *                no larger than the others' natural scatter is still last
 *                far more often than chance.
 *  clock-free    the same rule with arrival replaced by the kernel
 *                duration (a shorter kernel = a later arrival, because the
 *                kernels of one instance end together): "last" is the
 *                shortest kernel (ties: the lowest rank; none when all are
 *                equal), wait caused =
 *                the sum of (d_other - d_own). The two suspect sets are
 *                compared; when they differ the evidence says so (the
 *                clock fit, or the assumption that the participants end
 *                together, is then in doubt).
 *  step          of an instance: the smallest step >= 0 among its
 *                participants' rows (-1: not in a ProfilerStep). Step
 *                suspects: rules (0) (with 2 last arrivals), (1) and (2)
 *                over the step's instances, and (3) the wait r caused in the step is at least 1/4 of
 *                the mean wait caused per step (all steps' wait / number
 *                of steps). Within one step the collectives are not
 *                independent trials (one slow backward pass delays every
 *                bucket), so being last in all of them is weak evidence;
 *                (3) keeps the steps whose hold-up is small next to a
 *                typical step's from naming anyone. A suspect of the job
 *                by the kind rule is also a step suspect where it was last
 *                at least once and caused more than half the step's wait
 *                (and (3) holds): a step has one instance of each kind, so
 *                the kind rule cannot be applied within it.
 *  episode       a run of consecutive step numbers whose step suspects
 *                are the same non-empty set (an intermittent straggler:
 *                rank 2 slow in steps 250-260 only); episodes are ranked
 *                by the wait their suspects caused, so a long hold-up
 *                comes before one-step noise however late it happened.
 *  step time     the median over consecutive step numbers of the time
 *                between their first arrivals (aligned clock): what a
 *                step's wait compares with.
 *  wait units    wait is summed over the ranks that waited: rank-time
 *                (8 ranks waiting 1 ms each is 8 ms), so the wait of a
 *                job or a step can exceed its duration.
 *  percentiles   nearest rank, as mt_an_percentile (analysis.h).
 *
 * Cost: O(n log n) in the rows. */
#ifndef MERGETRACE_CROSSRANK_H
#define MERGETRACE_CROSSRANK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mergetrace/classify.h"
#include "mergetrace/collectives.h"
#include "mergetrace/buf.h"
#include "mergetrace/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One line of the collective table: every instance of one (process group,
 * kind, bytes, dtype). */
typedef struct mt_cross_coll {
    char pg[MT_CI_LABEL];      /* process group label of the lowest participating rank */
    char dtype[MT_CI_DTYPE];   /* "" unknown */
    uint8_t kind;              /* mt_coll_kind_t */
    int64_t bytes;             /* message bytes (see "bytes"); 0 unknown */
    uint64_t count;            /* instances */
    int32_t ranks;             /* the most participants of one instance */
    int64_t total_ns;          /* sum of the instances' spans */
    int64_t mean_ns;           /* total_ns / count, rounded down */
    int64_t transfer_ns;       /* sum of the instances' transfers, those with a member without a
                                * trace left out; -1 when every instance has one (unknown) */
    uint64_t absent;           /* instances whose group has a member without a trace: with any,
                                * algbw and busbw are unknown */
    double algbw_gbps;         /* < 0: unknown */
    double busbw_gbps;         /* < 0: unknown */
} mt_cross_coll_t;

/* One rank's straggler statistics over the whole job, and its wait vs
 * transfer over all its kernels. */
typedef struct mt_cross_rank {
    int32_t rank;
    bool has_clock;            /* a clock was given for it (else its own clock is used) */
    bool connected;            /* its clock is the reference or connected to it */
    uint64_t instances;        /* instances with >= 2 participants it took part in */
    uint64_t last;             /* ... where it arrived last */
    uint64_t chance_q24;       /* E (chance share of last arrivals) * 2^24 */
    int64_t lateness_sum_ns;   /* sum of its lateness */
    int64_t mean_lateness_ns;  /* lateness_sum_ns / instances, rounded toward zero */
    int64_t p99_lateness_ns;
    int64_t late_when_last_ns; /* sum of its lateness over the instances where it was last */
    int64_t late_last_median_ns; /* the median (nearest rank) of that lateness: a mean is pulled
                                  * down by the trivial collectives it happened to be last at */
    int64_t wait_caused_ns;
    int64_t waited_ns;
    int64_t duration_sum_ns;   /* of its kernels in those instances */
    int64_t mean_duration_ns;  /* duration_sum_ns / instances */
    /* clock-free */
    uint64_t shortest;         /* instances where its kernel was the shortest */
    int64_t cf_wait_caused_ns; /* sum over those instances of (d_other - d_own) */
    /* rule (1) within one kind: the (group, kind) where it was last the
     * most times while passing the rule there (kind_instances 0: none) */
    uint64_t kind_instances, kind_last, kind_chance_q24;
    uint8_t kind;              /* mt_coll_kind_t of that kind */
    /* wait vs transfer, over every kernel of the rank in a used instance
     * (single-row instances included: wait 0) */
    uint64_t kernels;
    int64_t kernel_wait_ns, kernel_transfer_ns;
    int64_t kernel_unknown_ns; /* in instances with a member without a trace: the shortest present
                                * member's time, wait or transfer (not in either above) */
    /* rule (4), set for the ranks that passed rules (0)-(2) or the kind rule */
    uint32_t steps_led, steps_in;  /* steps where it caused the most wait; steps it took part in */
    double steps_p;                /* P(leading that many by chance) */
} mt_cross_rank_t;

/* A rank and an amount, for the per-step top lists. */
typedef struct mt_cross_top {
    int32_t rank;
    uint32_t instances;        /* its instances in the step */
    uint32_t last;             /* ... where it arrived last */
    int64_t ns;                /* wait caused in the step */
} mt_cross_top_t;

#define MT_CROSS_TOP 3

/* One ProfilerStep. */
typedef struct mt_cross_step {
    int64_t step;
    uint64_t instances;        /* instances (>= 2 participants) of the step */
    int64_t wait_ns;           /* all wait caused in the step */
    uint32_t first_suspect;    /* suspects: step_suspects[first_suspect .. + n_suspects), ascending */
    uint32_t n_suspects;
    bool differs;              /* the suspect set is not the job's */
    uint32_t n_top;            /* entries of top[] used */
    mt_cross_top_t top[MT_CROSS_TOP]; /* most wait caused first (ties: lower rank), only ranks with wait > 0 */
    int64_t suspect_wait_ns;   /* wait caused in the step by its suspects */
    int64_t first_arrival_ns;  /* earliest aligned arrival at one of its instances */
} mt_cross_step_t;

/* A straggler episode: consecutive ProfilerSteps (numbers n, n + 1, ...)
 * with the same non-empty suspect set. */
typedef struct mt_cross_episode {
    int64_t first_step, last_step;
    uint32_t n_steps;
    uint32_t first_suspect;    /* the suspects: step_suspects[first_suspect .. + n_suspects) */
    uint32_t n_suspects;
    uint32_t pad_;
    int64_t wait_caused_ns;    /* wait its suspects caused over its steps */
    int64_t wait_ns;           /* all wait caused in its steps */
} mt_cross_episode_t;

/* Everything the cross-rank analyses found. Plain data: the struct owns
 * every array and string (free with mt_cross_free). */
typedef struct mt_cross {
    mt_cross_coll_t *colls;    /* by total_ns descending, then pg, kind, bytes, dtype */
    size_t n_colls;
    mt_cross_rank_t *ranks;    /* ascending; the ranks passed in and any rank that has rows */
    size_t n_ranks;
    uint64_t instances;        /* instances used by the straggler analysis (>= 2 participants) */
    uint64_t singles;          /* one-participant instances (collective table and wait only) */
    uint64_t mismatched;       /* instances left out */
    uint64_t absent_instances; /* instances whose group has a member without a trace (no row) */
    uint64_t cpu_members;      /* members that are CPU ranges (gloo, MT_CI_CPU) among those of the
                                * wait vs transfer split; the rest are kernels */
    int64_t wait_total_ns;     /* all wait caused (= all waited) */
    int64_t spread_ns;         /* S; -1 when no instance has >= 3 participants */
    int32_t *suspects;         /* ascending */
    size_t n_suspects;
    size_t n_dropped;          /* ranks that passed rules (0)-(2) but not rule (4) */
    int32_t *cf_suspects;      /* the clock-free rule's suspects, ascending */
    size_t n_cf_suspects;
    char **evidence;           /* NUL-terminated lines of at most 97 bytes */
    size_t n_evidence;
    mt_cross_step_t *steps;    /* ascending step; every step that has an instance */
    size_t n_steps;
    int32_t *step_suspects;
    size_t n_step_suspects;
    mt_cross_episode_t *episodes; /* by wait_caused_ns descending, then first_step */
    size_t n_episodes;
    int64_t step_time_ns;      /* median time between the first arrivals of consecutive steps; -1 unknown */
} mt_cross_t;

/* Analyse the gathered collective rows of every rank. rows[0..n_rows) and
 * m are the input of mt_clock_fit and its match, labels the table of the
 * rows' label ids (mt_align_result_t on process 0); clocks[i] is the correction of ranks[i] (both n_ranks long;
 * clocks may be NULL: every rank on its own clock). A row whose rank is
 * not in ranks[] keeps its own clock. Everything is borrowed for the call;
 * *out is owned by the caller (mt_cross_free), NULL on error. The result
 * does not depend on the order of the rows. Returns MT_OK or MT_ERR_NOMEM.
 * Not collective; O(n log n) in the rows. */
/* Name the ranks that have no trace (ascending, from the job's rank set)
 * in the straggler evidence when collectives lack members: an absent rank
 * may be the one the others waited for (its arrivals cannot be seen).
 * When more ranks are absent than traced, no straggler is named at all
 * (the job's, the steps' suspects and the episodes emptied, the evidence
 * replaced by one line saying so).
 * Nothing when none is absent. MT_OK or MT_ERR_NOMEM. Not collective. */
mt_status_t mt_cross_name_absent(mt_cross_t *x, const int64_t *absent, size_t n_absent);

mt_status_t mt_cross_analyze(const mt_crow_t *rows, size_t n_rows, const mt_strtab_t *labels, const mt_match_t *m,
                             const mt_clock_t *clocks, const int32_t *ranks, size_t n_ranks, mt_cross_t **out);

/* Free a result and everything it owns. NULL does nothing. */
void mt_cross_free(mt_cross_t *x);



/* The straggler statistics, suspects, evidence and steps. MT_OK or
 * MT_ERR_NOMEM. */
mt_status_t mt_cross_stragglers(const mt_crow_t *rows, const mt_match_t *m, const uint32_t *slot,
                                const mt_clock_t *const *clk, mt_cross_t *x);

#ifdef __cplusplus
}
#endif
#endif /* MERGETRACE_CROSSRANK_H */
