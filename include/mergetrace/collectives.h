/* The per-rank collective table (one row per communication kernel), the
 * matching of one collective instance across its participants, and the
 * clock fit computed from the matched instances' end times. All serial and
 * plain data: the program gathers the rows of every rank (no pointers; the
 * two labels are ids into a label table that travels with them, see
 * mt_align_job) and calls these. */
#ifndef MERGETRACE_COLLECTIVES_H
#define MERGETRACE_COLLECTIVES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mergetrace/status.h"
#include "mergetrace/strtab.h"
#include "mergetrace/trace.h"

#ifdef __cplusplus
extern "C" {
#endif

/* mt_cinst_t.flags */
enum {
    MT_CI_COMMS_ID = 1u << 0,  /* comms_id is set ("Comms Id") */
    MT_CI_SEQ = 1u << 1,       /* seq is set ("Seq") */
    MT_CI_PG = 1u << 2,        /* group came from process-group metadata (name or ranks) */
    MT_CI_STREAM = 1u << 3,    /* no group metadata: group is the NCCL stream */
    MT_CI_SEND = 1u << 4,      /* P2P send to peer */
    MT_CI_RECV = 1u << 5,      /* P2P receive from peer */
    MT_CI_NO_COLL = 1u << 6,   /* a communication kernel with no collective found */
    MT_CI_STEP = 1u << 7,      /* step is set (launched inside ProfilerStep#N) */
    MT_CI_NCCL = 1u << 8,      /* from an NCCL plugin file (mt_nccl_cinst_extract), not a Kineto kernel */
    MT_CI_CPU = 1u << 9,       /* from a gloo:* CPU range, not a kernel: start_ns / end_ns are the range's on
                                * the gloo worker thread, stream is that thread's tid (mt_cinst_extract) */
};

/* Label sizes, with the NUL: every process group name PyTorch and Megatron
 * write ("5 (PIPELINE_MODEL_PARALLEL_GROUP)") and every dtype name
 * ("Float8_e5m2fnuz") fits; a longer one (a long "Process Group Ranks" list)
 * is cut to fit and ends in "…" (mt_cinst_extract). */
#define MT_CI_LABEL 64
#define MT_CI_DTYPE 16

/* One collective instance as one rank saw it: one communication kernel
 * (or, for gloo, the CPU range of the collective: MT_CI_CPU).
 * Times are this rank's own clock, ns since the epoch. 128 bytes: a job of
 * thousands of ranks sends every row to process 0, so the two labels are
 * 4-byte ids into a label table (mt_strtab_t) beside the rows, not text. */
typedef struct mt_cinst {
    int64_t start_ns, end_ns;   /* the kernel (MT_CI_CPU: the gloo:* range) */
    int64_t launch_ns;          /* start of its launch call, -1 when not linked */
    int64_t step;               /* N of the ProfilerStep#N that contains the launch (or kernel), -1 */
    uint64_t comms_id;          /* "Comms Id" */
    int64_t seq;                /* "Seq", -1 */
    uint64_t group;             /* hash of the group identity (see mt_cinst_extract) */
    uint64_t sig;               /* hash of kind + sizes + dtype: equal across participants of one instance */
    int64_t in_nelems, out_nelems; /* -1 unknown */
    int64_t group_size;         /* -1 unknown */
    int64_t peer;               /* P2P: the peer's global rank, else -1 */
    int64_t stream;             /* GPU stream (tid) */
    int32_t rank;               /* global rank of the trace */
    uint32_t ordinal;           /* position among this rank's instances of the same group, in kernel order */
    uint32_t step_ordinal;      /* position within (group, step), when MT_CI_STEP */
    uint16_t flags;             /* MT_CI_* */
    uint8_t kind;               /* mt_coll_kind_t: from the collective name, else the kernel name */
    uint8_t pad_;
    uint32_t pg_id;             /* label table id: process group label for reports ("0", "tp", "stream 84";
                                 * at most MT_CI_LABEL - 1 bytes) */
    uint32_t dtype_id;          /* label table id: "Float", "BFloat16", ...; MT_STR_NONE ("") unknown (at most
                                 * MT_CI_DTYPE - 1 bytes) */
} mt_cinst_t;

_Static_assert(sizeof(mt_cinst_t) == 128, "mt_cinst_t: 128 bytes a row, gathered on process 0");

/* A collective row as the passes after the match read it (the clock fit,
 * mt_cross_analyze, mt_trust_check, the pipeline and critical-path passes,
 * the report views): mt_cinst_t without the keys only the match reads
 * (comms_id, seq, group_size, stream, ordinal, step_ordinal) and without
 * launch_ns, which no pass after the match reads. The fields kept have the
 * names, types and meanings of mt_cinst_t's. 80 bytes against 128: process
 * 0 keeps every rank's rows from the match to the end of the run
 * (docs/PERFORMANCE.md). */
typedef struct mt_crow {
    int64_t start_ns, end_ns;
    int64_t step;
    uint64_t group;
    uint64_t sig;               /* read by mt_trust_check on mismatched instances */
    int64_t in_nelems, out_nelems;
    int64_t peer;
    int32_t rank;
    uint16_t flags;
    uint8_t kind;
    uint8_t pad_;
    uint32_t pg_id;
    uint32_t dtype_id;
} mt_crow_t;

_Static_assert(sizeof(mt_crow_t) == 80, "mt_crow_t: 80 bytes a row, kept on process 0 after the match");

/* The compact row of r. */
mt_crow_t mt_crow_of(const mt_cinst_t *r);

/* Turn rows[0..n) into n compact rows in the same memory, front to back
 * (row i's compact slot ends before row i + 1's source begins, and each
 * row is copied out before its slot is written), and return them: the
 * same address as rows, to be read as mt_crow_t from now on (rows must not
 * be read as mt_cinst_t again; the caller may realloc the block down to
 * n * sizeof(mt_crow_t) and frees it as before). NULL rows with n 0 returns
 * NULL. Not collective. */
mt_crow_t *mt_crow_compact(mt_cinst_t *rows, size_t n);

/* Append the collective instances of trace t (global rank `rank`) to
 * *rows / *n (realloc'd; *cap is the capacity), their labels interned into
 * labels (borrowed; the rows' ids refer to it). Rows are in kernel start
 * order. Group identity, best first: "Process Group Name", else
 * "Process Group Ranks", else "Process Group ID", else the NCCL stream.
 * Every gloo:* CPU range (a collective of the gloo backend, which runs no
 * kernel; MT_COLL_F_GLOO) is a row too, flagged MT_CI_CPU, timed by the
 * range: its group is the trace's one process group with a gloo backend in
 * distributedInfo.pg_config (labelled like a kernel row of that group), or
 * "gloo" when there are several or none (group size then the groups'
 * common pg_size, else unknown); no sequence number (gloo ranges carry
 * none), so they match by group + order.
 * Returns MT_OK or MT_ERR_NOMEM (rows unchanged then; labels may have
 * grown). Not collective. */
mt_status_t mt_cinst_extract(const mt_trace_t *t, int32_t rank, mt_strtab_t *labels, mt_cinst_t **rows, size_t *n,
                             size_t *cap);

/* Which key matched an instance (FORMAT.md 7.1). */
typedef enum mt_match_key {
    MT_KEY_COMMS_ID = 0,
    MT_KEY_PG_SEQ,
    MT_KEY_PG_ORDINAL,     /* process group + ordinal (anchored) */
    MT_KEY_STREAM_ORDINAL, /* no metadata: NCCL stream paired by kernel sequence + ordinal */
    MT_KEY_P2P,            /* send/recv pair */
    MT_KEY_COUNT_
} mt_match_key_t;

/* The matching result: instances as groups of row indices. */
typedef struct mt_match {
    size_t n_inst;
    uint32_t *first;      /* n_inst + 1 offsets into members */
    uint32_t *members;    /* row indices, by rank within an instance */
    uint8_t *key;         /* mt_match_key_t per instance */
    uint8_t *status;      /* MT_INST_* per instance */
    int32_t *expected;    /* participants expected (group size), per instance */
} mt_match_t;

enum {
    MT_INST_FULL = 0,       /* every expected participant present */
    MT_INST_PARTIAL = 1,    /* some missing (rank not loaded or outside its window) */
    MT_INST_UNMATCHED = 2,  /* a single row: nobody else has it */
    MT_INST_MISMATCH = 3,   /* participants disagree on collective or size */
};

typedef struct mt_match_stats {
    uint64_t full, partial, unmatched, mismatched;
    uint64_t by_key[MT_KEY_COUNT_];
    uint64_t rows;
    uint64_t cpu_rows;     /* of rows, gloo CPU ranges (MT_CI_CPU) */
} mt_match_stats_t;

/* Match rows (the tables of all ranks, concatenated) across ranks. The
 * result refers to rows by index; rows are not changed. The expected
 * participants of an instance are its "Group size", 2 for P2P, else the
 * number of ranks that have rows of that group. Sorting dominates: O(n log n)
 * plus a bounded shift search per (rank, group) for ordinal keys. *out is
 * owned by the caller (mt_match_free). Not collective. MT_ERR_LIMIT for
 * more than UINT32_MAX rows (members are 32-bit row indices). */
mt_status_t mt_match(const mt_cinst_t *rows, size_t n, mt_match_t **out, mt_match_stats_t *stats);

void mt_match_free(mt_match_t *m);

/* One rank's clock correction onto the reference rank's clock:
 *   corrected(t) = t + offset + drift * (t - anchor)
 * (offset in ns, drift as a fraction: ppm * 1e-6). */
typedef struct mt_clock {
    int32_t rank;
    bool reference;
    bool connected;          /* reached from the reference through shared instances */
    double offset_ns;        /* whole ns after mt_clock_fit */
    double drift_ppm;        /* a multiple of 1e-6 ppm after mt_clock_fit; 0 when the drift is not
                              * significant (drift_significant false) */
    double drift_fit_ppm;    /* the least-squares slope of the kept points, applied or not (equal to
                              * drift_ppm when significant; 0 with fewer than 3 points, no spread in
                              * time, --no-drift, --no-align, or not connected) */
    bool drift_significant;  /* the slope was applied: at least 8 points over 1 ms or more, and more
                              * than 3 standard errors from 0 */
    int64_t anchor_ns;       /* a time in this rank's own clock (median of its instance ends) */
    uint64_t matched;        /* instances used for the fit */
    uint64_t rejected;       /* instances left out as outliers */
    double residual_p50_ns, residual_p99_ns; /* |corrected end - consensus end| after the fit */
    uint64_t violations;     /* instances this rank ends before the last participant started (beyond tolerance) */
    int32_t group;           /* ranks that share matched instances, directly or through others, have the same
                              * group: 0 is the reference's, then numbered in rank order; a rank that shares
                              * nothing is a group of its own. Two groups of several ranks each usually mean
                              * traces of different jobs. */
} mt_clock_t;

typedef struct mt_clock_opts {
    int32_t ref_rank;        /* -1: the lowest rank present */
    bool no_drift;           /* fit offsets only */
    bool no_align;           /* identity corrections (still reports residuals) */
} mt_clock_opts_t;

/* Fit a correction for every rank in ranks[0..n_ranks) from the matched
 * instances (full and partial ones; mismatched are not used). out must hold
 * n_ranks entries, in the same order as ranks. Robust: instances whose end
 * disagrees with the consensus by far more than the typical residual are
 * dropped and the fit repeated. Ranks not connected to the reference get an
 * identity correction and connected = false. Not collective. */
mt_status_t mt_clock_fit(const mt_crow_t *rows, size_t n_rows, const mt_match_t *m, const int32_t *ranks,
                         size_t n_ranks, const mt_clock_opts_t *opts, mt_clock_t *out);

/* The corrected time of t (ns, the rank's own clock), rounded to 1 ns. */
int64_t mt_clock_apply(const mt_clock_t *c, int64_t t);

/* The drift of c as reports show it, into buf (cap bytes, 16 are enough),
 * returned: the applied drift ("52.003"; 3 significant digits below 0.001
 * ppm), or the fitted slope marked as not applied ("0.412 n.s."), or "-"
 * for a connected rank with too few points to fit one, "0.000" for the
 * reference and unconnected ranks. */
const char *mt_clock_drift_text(const mt_clock_t *c, char *buf, size_t cap);

/* A member of an instance a process matched in a sharded match, kept
 * for the critical path's reductions (mt_align_result_t.owned,
 * mt_cp_dist_reduce): its row's rank and raw kernel times. 24 bytes. */
typedef struct mt_owned_member {
    int64_t start_ns, end_ns;
    int32_t rank;
    uint32_t inst;              /* its instance: a number among this process's, ascending */
} mt_owned_member_t;

/* The job-wide alignment, as the program runs it. */
typedef struct mt_align_result {
    mt_clock_t *clocks;        /* one per rank, in the order of ranks[] */
    size_t n_clocks;
    mt_match_stats_t match;
    /* On the root only (NULL elsewhere): every rank's rows, compact once
     * matched (mt_crow_compact), the job-wide label table their ids refer
     * to, and the match, for the passes that need them. Owned by the
     * result. */
    mt_crow_t *rows;
    size_t n_rows;
    mt_strtab_t *labels;
    mt_match_t *m;
    /* On the root: wall and CPU seconds spent matching and fitting (for
     * --timings; never part of report.json). 0 elsewhere. */
    double match_s, fit_s, match_cpu_s, fit_cpu_s;
    /* The processes that matched the rows: 1 (process 0 alone), or every
     * process of the job when the match was sharded (on every process). */
    int match_procs;
    /* Sharded (match_procs > 1), on every process: the members of the
     * instances this process matched that the critical path links (not
     * MT_INST_MISMATCH, 2 members or more), instance by instance in the
     * match's order; NULL and 0 otherwise. Owned by the result; the
     * program frees it once the critical path's reductions are done. */
    mt_owned_member_t *owned;
    size_t n_owned;
} mt_align_result_t;

struct mt_comm;

/* Collective over comm. Every process passes the rows of the ranks it
 * loaded, the label table their ids refer to (borrowed, read only), and the
 * list of all loaded ranks (the same list everywhere). Process 0 gathers
 * the rows and every process's labels (each distinct label once per
 * process), maps the ids onto one job-wide table (res->labels), matches the
 * rows and fits the clocks; the clocks and match counts are broadcast, so
 * every process returns the same status and the same clocks. A row whose
 * label id is not in its process's table, or a label table that does not
 * parse, is MT_ERR_FORMAT, with the process and row in err (process 0;
 * err may be NULL); a job of more than UINT32_MAX rows is MT_ERR_LIMIT on
 * every process. res is owned by the caller (mt_align_result_free). */
mt_status_t mt_align_job(const struct mt_comm *comm, const mt_cinst_t *rows, size_t n_rows,
                         const mt_strtab_t *labels, const int32_t *ranks, size_t n_ranks,
                         const mt_clock_opts_t *opts, mt_align_result_t *res, mt_error_t *err);

/* As mt_align_job, but takes over rows (malloc'd; NULL with n_rows 0):
 * they are freed on every process right after the gather, whatever is
 * returned. Process 0 then holds one copy of its rows, the gathered one,
 * while it matches and fits. Collective, as mt_align_job. */
mt_status_t mt_align_job_owned(const struct mt_comm *comm, mt_cinst_t *rows, size_t n_rows,
                               const mt_strtab_t *labels, const int32_t *ranks, size_t n_ranks,
                               const mt_clock_opts_t *opts, mt_align_result_t *res, mt_error_t *err);

void mt_align_result_free(mt_align_result_t *res);


#ifdef __cplusplus
}
#endif
#endif /* MERGETRACE_COLLECTIVES_H */
