/* A job's Flight Recorder dumps shared among the processes that read them
 * (issue 41): the list of who reads which dump as bytes, each process's
 * share read and kept, what each sends process 0 for the analysis at
 * scale (mergetrace/fr_hang.h) and process 0's side of it, and the
 * verdict with --force's leaving out. Serial and never printing: the
 * program (mpi/fr_run.c) moves the bytes between processes and says what
 * went wrong. */
#ifndef MT_FR_SHARE_H
#define MT_FR_SHARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mergetrace/buf.h"
#include "mergetrace/fr_hang.h"
#include "mergetrace/nccl_input.h"
#include "mergetrace/status.h"

/* How a job's dumps were placed in the traces' merged trace: counts of
 * dumps (summed over the processes that placed them). */
typedef struct mt_fr_placed {
    int64_t aligned;      /* placed by the collectives they share with their trace */
    int64_t wall;         /* placed on their wall clock (shift 0): no collective in common */
    int64_t left_out;     /* left out: no collective in common and a day or more from their trace */
    int64_t no_trace;     /* of ranks without a trace among the inputs */
    int64_t pairs_min;    /* the fewest pairs an aligned dump was placed by (0: none aligned) */
    int64_t lag_max_ns;   /* the largest median lag of an aligned dump's discovered completions */
    int64_t gap_max_ns;   /* the largest gap of a dump left out or placed on its wall clock */
    bool written;         /* a merged trace of traces was written beside the dumps */
} mt_fr_placed_t;

/* The terminal's line of how the dumps were placed ("merged trace: Flight
 * Recorder entries of 3 dumps beside the traces (aligned by ..."), nothing
 * when no merged trace was written. MT_OK or what write returned. */
mt_status_t mt_fr_placed_write_text(const mt_fr_placed_t *p, mt_write_fn write, void *ctx);

/* Beside traces, what a process needs to place the dumps of the ranks it
 * merges (mt_fr_parts_build): all borrowed, the same on every process but
 * tcolls and labels. */
typedef struct mt_fr_parts_in {
    const void *plan;              /* the list of who reads which dump (mt_fr_job_t.plan) */
    size_t plan_len;
    const int32_t *kept;           /* the ranks whose dumps the analysis kept (--force leaves some out), sorted */
    size_t n_kept;
    const mt_fr_tcoll_t *tcolls;   /* this process's traces' collectives (mt_fr_job_t.tcolls) */
    size_t ntcolls;
    const mt_strtab_t *labels;     /* their pg_id labels */
    const int64_t *offset_ns;      /* the verdict's offsets by rank, world of them (MT_FR_NONE: not fitted) */
    int64_t world;
    int64_t dump_ns;               /* the verdict's dump time on the reference clock, MT_FR_NONE */
} mt_fr_parts_in_t;

/* A rank's trace in this process's part of the merged trace: its span on
 * its own clock (0, 0: unknown). */
typedef struct mt_fr_span {
    int32_t rank;
    int64_t first_ns, last_ns;
} mt_fr_span_t;

/* One rank's dump as a part of the traces' merged trace
 * (mt_fr_trace_rank_merged after the rank's events). */
typedef struct mt_fr_part {
    mt_fr_dump_t d;          /* read again from the plan (owned) */
    mt_fr_place_t p;         /* placed on its rank's trace (mt_fr_place_fit) */
    size_t input;            /* the index of its rank's span in mt_fr_parts_build's spans */
    int64_t end_ns;          /* the dump's time on the dump's own clock, MT_FR_NONE */
    const mt_clock_t *clock; /* the rank's correction: the caller's to set (borrowed; NULL: none) */
} mt_fr_part_t;

/* Not collective: for each of spans[0..n) (the ranks this process merges)
 * whose rank in->kept has and in->plan lists, its dump read again
 * (mt_fr_share_read_rank), placed on the span's trace (mt_fr_place_fit)
 * and its dump time put on its own clock, into *parts (*n_parts of them,
 * in spans' order; free with mt_fr_parts_free). MT_OK; or the first
 * failure's status with err (a read's: the file, the rank, the position;
 * or MT_ERR_NOMEM) and nothing in *parts. */
mt_status_t mt_fr_parts_build(const mt_fr_parts_in_t *in, const mt_fr_span_t *spans, size_t n, mt_fr_part_t **parts,
                              size_t *n_parts, mt_error_t *err);

/* Frees parts[0..n) (their dumps) and parts; NULL does nothing. */
void mt_fr_parts_free(mt_fr_part_t *parts, size_t n);

/* One process's parts counted for mt_fr_placed_t, as int64s the program
 * reduces over the processes: aligned, wall, left_out and parts summed,
 * pairs_min the minimum (INT64_MAX: none aligned), lag_max_ns and
 * gap_max_ns the maximum. */
typedef struct mt_fr_tally {
    int64_t aligned, wall, left_out, parts; /* MPI_SUM */
    int64_t pairs_min;                      /* MPI_MIN */
    int64_t lag_max_ns, gap_max_ns;         /* MPI_MAX */
} mt_fr_tally_t;

/* parts[0..n) (mt_fr_parts_build's) counted into *t. */
void mt_fr_parts_tally(const mt_fr_part_t *parts, size_t n, mt_fr_tally_t *t);

/* The job's counts from the tally reduced over every process: n_dumps
 * the dumps the analysis kept (those not in a part have no merged trace
 * of their rank), written whether the merged trace was written. */
void mt_fr_placed_from(const mt_fr_tally_t *t, int64_t n_dumps, bool written, mt_fr_placed_t *out);

/* The dumps of a job on process 0 and the verdict. */
typedef struct mt_fr_job {
    bool any;               /* the inputs hold dumps (every process) */
    bool hung;              /* the analysis found a hang (every process) */
    mt_fr_dump_t *dumps;    /* process 0: every dump read, by rank */
    size_t n;
    const char **paths;     /* process 0: dumps[i]'s file (borrowed from the input list) */
    uint64_t *bytes;        /* process 0: dumps[i]'s file size */
    uint64_t *counts;       /* process 0: dumps[i]'s entries in its file (dumps[i].n may hold only those
                             * the analysis read: mt_fr_dump_trim) */
    mt_fr_hang_t hang;      /* process 0, when any: the verdict */
    mt_fr_dump_t *tabs;     /* process 0: each process's distinct groups (dumps of groups alone), whose
                             * ranks dumps[i].pgs share (pgs_shared) */
    size_t ntabs;
    bool from_nccl;         /* the "dumps" were made from the NCCL plugin's files (mt_fr_job_from_nccl) */
    /* Beside traces, for the merged trace (mt_fr_trace_rank_merged): */
    mt_buf_t plan;          /* every process: the list of who reads which dump (mt_fr_share_put's) */
    mt_fr_tcoll_t *tcolls;  /* every process: the collectives of the traces it loaded (mt_fr_tcolls_take) */
    size_t ntcolls;
} mt_fr_job_t;

/* fr's arrays (dumps, paths, bytes, counts: zeroed) for n dumps; fr->n
 * stays. MT_OK or MT_ERR_NOMEM (what was allocated is kept for
 * mt_fr_job_free). */
mt_status_t mt_fr_job_alloc(mt_fr_job_t *fr, size_t n);

/* Frees what fr holds (dumps, the groups' tables, the verdict, the plan
 * and tcolls; not the borrowed paths) and zeroes it. */
void mt_fr_job_free(mt_fr_job_t *fr);

/* The index of rank's dump in fr->dumps (sorted by rank), or -1. */
long mt_fr_job_find(const mt_fr_job_t *fr, int32_t rank);

/* The list of who reads which dump, as bytes for a broadcast: per dump
 * int32 rank, int32 owner (the process that reads it), uint32 path
 * length, the path (no NUL). */
typedef struct mt_fr_share_rec {
    int32_t rank, owner;
    const char *path;   /* borrowed from the list; path_len bytes, not NUL-terminated */
    uint32_t path_len;
} mt_fr_share_rec_t;

/* One dump's record appended to out. MT_OK or MT_ERR_NOMEM. */
mt_status_t mt_fr_share_put(mt_buf_t *out, int32_t rank, int32_t owner, const char *path);

/* The record at *pos of list (len bytes) into *r, *pos past it; false at
 * the end (or a cut record). */
bool mt_fr_share_next(const void *list, size_t len, size_t *pos, mt_fr_share_rec_t *r);

/* The process that reads rank's dump in list, or -1 when none does. */
int mt_fr_share_owner(const void *list, size_t len, int32_t rank);

/* A dump a process read, kept for the summaries and the merged trace. */
typedef struct mt_fr_local {
    mt_fr_dump_t d;
    char *path;      /* owned */
    int64_t off;     /* its offset to the reference clock (the merged trace) */
    int64_t dump_ns; /* the dump's time (the verdict's dump_ns) */
} mt_fr_local_t;

/* The dumps of list that process me reads, read (mt_input_read_file, either
 * encoding: mt_fr_dump_read) into *mine (*n_mine of them; malloc'd, free
 * with mt_fr_locals_free), in the list's order. On the first that fails,
 * its index in the list goes to *bad_index, its status to *st and a
 * one-line message to msg (cap bytes: the file, the rank, the position),
 * and the rest of this process's share is not read. *bad_index must be
 * -1 on entry. */
void mt_fr_share_read(const void *list, size_t len, int me, mt_fr_local_t **mine, size_t *n_mine, long *bad_index,
                      char *msg, size_t cap, mt_status_t *st);

/* Whether rank is among ranks[0..n), sorted ascending (a job's kept
 * dumps' ranks). */
bool mt_fr_ranks_have(const int32_t *ranks, size_t n, int32_t rank);

/* The dump of rank in list (len bytes) read again, as mt_fr_share_read
 * reads each, into *d (free with mt_fr_dump_free): for the merged trace
 * beside traces, by the process that merges rank's trace. *found false
 * (d untouched) when list has no dump of rank. MT_OK, or the read's
 * status with err (the file, the rank, the position). */
mt_status_t mt_fr_share_read_rank(const void *list, size_t len, int32_t rank, mt_fr_dump_t *d, bool *found,
                                  mt_error_t *err);

/* l sorted by rank (n may be 0 with l NULL). */
void mt_fr_locals_sort(mt_fr_local_t *l, size_t n);

/* l[0..n) (a process's dumps alone, no trace) sorted by rank and put on
 * the analysis's clocks: each one's offset off[rank] (0 for a rank of
 * world or more, or MT_FR_NONE: unfitted), the dump's time dump_ns for
 * all (as the verdict's, broadcast). */
void mt_fr_locals_place(mt_fr_local_t *l, size_t n, const int64_t *off, int64_t world, int64_t dump_ns);

/* l[0..n), consecutive ranks placed by mt_fr_locals_place, as one piece
 * of the merged trace of the entries: each dump's part in turn
 * (mt_fr_trace_rank; first: the piece holds the file's first rank, which
 * opens it). *events: the entries written. MT_OK or the sink's error. */
mt_status_t mt_fr_locals_trace(const mt_fr_local_t *l, size_t n, bool first, mt_write_fn write, void *ctx,
                               uint64_t *events);

/* Frees l[0..n) and l. */
void mt_fr_locals_free(mt_fr_local_t *l, size_t n);

/* Step 1 of the analysis at scale, on a reading process: its dumps'
 * heads appended to out: their count (uint64), the table of its distinct
 * groups (a packed groups-only dump), then per dump its rank, version,
 * entry count, last-done table (mt_fr_dump_last_done) and the index of
 * each of its groups in the table. MT_OK or MT_ERR_NOMEM. */
mt_status_t mt_fr_heads_pack(const mt_fr_local_t *mine, size_t n_mine, mt_buf_t *out);

/* Step 2, process 0: every process's heads (all, len bytes: the parts of
 * mt_fr_heads_pack one after the other) into fr (allocated for n dumps:
 * groups-only dumps sorted by rank, sharing the ranks of fr->tabs; their
 * counts), and the keep plan (mt_fr_keep_plan) into *keep (malloc'd, the
 * caller frees). false when out of memory or the bytes are not whole
 * heads (fr then holds what it got, for mt_fr_job_free). */
bool mt_fr_heads_unpack(const uint8_t *all, size_t len, size_t n, mt_fr_job_t *fr, mt_fr_pg_seq_t **keep,
                        size_t *nkeep);

/* Step 3, on a reading process: each of its dumps fitted to the reference
 * dump (ref, rlen bytes: the packed dump of rank ref_rank, whose own
 * offset is 0) and trimmed to keep, appended to out as the packed trimmed
 * dump and its offset (int64); the pairs the fits used added to *pairs.
 * 0; 1 when a dump has no completed collective in common with the
 * reference (the whole dumps must go to process 0 instead); 2 out of
 * memory (or a reference that does not unpack). */
int mt_fr_fit_trim_pack(const mt_fr_local_t *mine, size_t n_mine, const uint8_t *ref, size_t rlen, int32_t ref_rank,
                        const mt_fr_pg_seq_t *keep, size_t nkeep, mt_buf_t *out, int *pairs);

/* Process 0, after mt_fr_heads_unpack: every process's trimmed dumps and
 * offsets (all, len bytes: the parts of mt_fr_fit_trim_pack) put into
 * fr's groups-only dumps, then the analysis with the fitted clocks
 * (mt_fr_hang_analyse_fitted, fit_pairs the sum of the pairs) into
 * fr->hang. MT_OK; MT_ERR_FORMAT (err says why) for dumps of different
 * jobs (the whole dumps must go to process 0 then, for --force);
 * MT_ERR_NOMEM when out of memory or the bytes are not what was sent. */
mt_status_t mt_fr_job_take_trimmed(mt_fr_job_t *fr, const uint8_t *all, size_t len, int fit_pairs, mt_error_t *err);

/* Process 0, the whole dumps instead: fr allocated for n dumps and the
 * packed dumps (all, len bytes: mt_fr_dump_pack_append's, in any order)
 * unpacked into it, sorted by rank, with their counts. MT_OK,
 * MT_ERR_NOMEM, or another status for bytes that are not packed dumps. */
mt_status_t mt_fr_job_unpack(mt_fr_job_t *fr, size_t n, const uint8_t *all, size_t len);

/* Called for each dump that --force leaves out: its file (fr->paths'),
 * its rank and why (valid during the call only). */
typedef void (*mt_fr_left_out_fn)(const void *ctx, const char *path, int rank, const char *why);

/* Process 0: the hang analysis of fr's whole dumps (mt_fr_hang_analyse)
 * into fr->hang. Dumps of different jobs: with force and two dumps or
 * more, the dump the analysis names is left out (left_out told, may be
 * NULL) and the analysis run again; else MT_ERR_FORMAT with err (its rank
 * and message) and *bad_path the dump's file ("?" when unknown). Any
 * other failure is MT_ERR_NOMEM. */
mt_status_t mt_fr_job_analyse(mt_fr_job_t *fr, bool force, mt_fr_left_out_fn left_out, const void *ctx, mt_error_t *err,
                              const char **bad_path);

/* Process 0: fr (allocated for n dumps, paths and bytes set) filled from
 * the NCCL plugin's files nf[0..n) of ranks[] (mt_fr_from_nccl) and
 * analysed; on MT_OK fr->n, counts, hang, and any, from_nccl and hung are
 * set. Else the status of the conversion or the analysis, with err. */
mt_status_t mt_fr_job_from_nccl(mt_fr_job_t *fr, const mt_nccl_file_t *const *nf, const int32_t *ranks, size_t n,
                                mt_error_t *err);

#endif
