/* PyTorch Flight Recorder dumps (one file per rank, pickle or JSON) and the
 * hang post-mortem over them: which process group hung, at which
 * collective, who is to blame and how long the others waited. The
 * readers and the analysis are serial and never print; the program shares
 * the dumps among its processes with mt_fr_dump_pack_append /
 * mt_fr_dump_unpack. */
#ifndef MERGETRACE_FR_HANG_H
#define MERGETRACE_FR_HANG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mergetrace/buf.h"
#include "mergetrace/collectives.h"
#include "mergetrace/nccl_input.h"
#include "mergetrace/status.h"
#include "mergetrace/strtab.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { MT_FR_SCHEDULED = 0, MT_FR_STARTED = 1, MT_FR_COMPLETED = 2 };
#define MT_FR_NONE INT64_MIN /* a time never discovered */
#define MT_FR_TIME_MAX (INT64_C(1) << 62) /* times are in [0, 2^62) ns */

/* The longest names an entry keeps, in bytes (longer ones are cut there;
 * a name stops at its first NUL). */
#define MT_FR_PG_MAX 63    /* process_group name */
#define MT_FR_NAME_MAX 63  /* profiling_name */
#define MT_FR_DTYPE_MAX 23 /* first input dtype */

/* One entry (a collective or P2P operation) on the rank's own clock. The
 * names are ids into its dump's string table (mt_fr_str): a dump holds a
 * few distinct names over thousands of entries, and the entries of every
 * dump a process reads are most of its memory. */
typedef struct mt_fr_entry {
    uint64_t record_id;
    int64_t seq, p2p_seq;               /* collective_seq_id, p2p_seq_id */
    int64_t created, started, completed; /* ns, MT_FR_NONE when not discovered */
    uint64_t in_numel, out_numel;       /* sums over the inputs' / outputs' shapes */
    int32_t timeout_ms;                 /* [0, 10^9] */
    uint32_t pg;                        /* process_group name (id; MT_STR_NONE: "") */
    uint32_t name;                      /* profiling_name (id) */
    uint32_t dtype;                     /* first input dtype (id) */
    uint8_t state;                      /* MT_FR_* */
    bool is_p2p;
} mt_fr_entry_t;

/* One entry with its names as text: what the verdict keeps of an entry
 * beyond the dumps' lifetime (mt_fr_entry_op). */
typedef struct mt_fr_op {
    uint64_t record_id;
    int64_t seq, p2p_seq;
    int64_t created, started, completed;
    int64_t timeout_ms;
    uint64_t in_numel, out_numel;
    uint8_t state;
    bool is_p2p;
    char pg[MT_FR_PG_MAX + 1];
    char name[MT_FR_NAME_MAX + 1];
    char dtype[MT_FR_DTYPE_MAX + 1];
} mt_fr_op_t;

/* One group of pg_config. */
typedef struct mt_fr_pg {
    char name[64], desc[64];
    int *ranks; /* global ranks, parsed from "[0, 1]" */
    int nranks;
} mt_fr_pg_t;

/* One rank's dump. Owns its arrays and its string table; free with
 * mt_fr_dump_free. */
typedef struct mt_fr_dump {
    int rank;
    char version[16];
    mt_fr_entry_t *entries;
    size_t n;
    mt_strtab_t *strs;  /* the entries' names; NULL reads as every id "" */
    bool pgs_shared;    /* pgs[].ranks belong to another (a table of the groups
                         * of many dumps that must outlive this one):
                         * mt_fr_dump_free leaves them */
    mt_fr_pg_t *pgs;
    size_t npgs;
} mt_fr_dump_t;

/* The text of name id of d's entries (e->pg, e->name, e->dtype): borrowed
 * from d's string table, valid while d is and no name is added to it. */
static inline const char *mt_fr_str(const mt_fr_dump_t *d, uint32_t id)
{
    return mt_strtab_get(d->strs, id, NULL);
}

/* e (an entry of d) with its names as text into *out. */
void mt_fr_entry_op(const mt_fr_dump_t *d, const mt_fr_entry_t *e, mt_fr_op_t *out);

/* Read one dump (pickle, recognised by its first bytes, or JSON) from
 * data[0..len). path names it in errors. rank is stored as given (from the
 * file name or a map: the dumps do not carry it). Errors: those of the
 * unpickler (src/fr/fr_pickle.h; its MT_ERR_FORMAT, an unknown opcode or a
 * refused global, becomes MT_ERR_FR, with the byte offset) and the JSON
 * reader, MT_ERR_FR for a missing or wrongly-typed field (named, with the entry's index), a time outside
 * [0, 2^62) ns, a timeout_ms outside [0, 10^9], a negative sequence
 * number, or a pg_config rank of 4096 or more. */
mt_status_t mt_fr_dump_read(const uint8_t *data, size_t len, const char *path, int rank, mt_fr_dump_t *out,
                            mt_error_t *err);

/* What data[0..len) looks like: 1 a pickle of protocol 2 to 5 (its first
 * bytes: a Flight Recorder dump is the only pickle mergetrace reads), 2 a
 * JSON object whose first key is one a Flight Recorder dump starts with
 * (version, comm_lib_version, nccl_version, pg_config, pg_status, entries,
 * nccl_comm_state: PyTorch writes the keys in its own order or sorted),
 * 0 anything else. Looks at the first bytes only (leading whitespace and
 * a UTF-8 byte-order mark skipped); the readers check the rest. */
int mt_fr_probe(const uint8_t *data, size_t len);

/* The rank in a dump's file name, as PyTorch names them: <prefix><rank>
 * (comm_lib_trace_rank_3, nccl_trace_rank_3, node7-rank12, host-a.3): the
 * "rank"/"worker" word of mt_rank_from_filename, else the digits the base
 * name ends with (after a last extension of letters is dropped: rank_3.pkl,
 * rank_3.json). -1 when the name has none, or they make 4096 or more. */
int mt_fr_rank_from_name(const char *path);

/* Append d to out as plain bytes (for sending to another process);
 * mt_fr_dump_unpack reads it back. MT_OK or MT_ERR_NOMEM. */
mt_status_t mt_fr_dump_pack_append(const mt_fr_dump_t *d, mt_buf_t *out);

/* Read one packed dump at data[*pos..len) into *out (owning its arrays:
 * mt_fr_dump_free), advancing *pos. MT_ERR_FORMAT when the bytes are not
 * one whole packed dump, MT_ERR_NOMEM. */
mt_status_t mt_fr_dump_unpack(const uint8_t *data, size_t len, size_t *pos, mt_fr_dump_t *out);

/* Free what a dump owns (its groups' ranks unless pgs_shared). NULL does
 * nothing. */
void mt_fr_dump_free(mt_fr_dump_t *d);

/* The verdict. */
typedef enum mt_fr_kind {
    MT_FR_NO_HANG = 0,      /* every group agrees, nothing stuck */
    MT_FR_NEVER_ENQUEUED,   /* culprits never enqueued the collective */
    MT_FR_ORDER_MISMATCH,   /* culprits wait in each other's groups */
    MT_FR_SIZE_MISMATCH,    /* kind, size or dtype differ: culprits the minority */
    MT_FR_DESYNC,           /* a culprit's sequence went back (restarted) */
    MT_FR_NO_DUMP,          /* cannot decide: members without a dump */
    MT_FR_AMBIGUOUS         /* stuck, with no rank to blame */
} mt_fr_kind_t;

#define MT_FR_MAX_RANKS 4096

typedef struct mt_fr_hang {
    mt_fr_kind_t kind;
    char pg[64], pg_desc[64];   /* the group that hung */
    int64_t seq;                /* its first collective where ranks disagree */
    char name[64];              /* that collective's profiling_name */
    int culprits[16];
    int nculprits;
    int no_dump[16];            /* members without a dump (the first 16) */
    int nno_dump;
    int world;                  /* ranks seen in pg_config */
    int64_t *offset_ns;         /* [world]: rank clock - reference clock; MT_FR_NONE when unfitted */
    int64_t *wait_ns;           /* [world]: time stuck in the hung collective at the dump; -1 when not */
    int last_arrival;           /* the rank that started the hung collective last; -1 */
    bool slowdown;              /* the culprit arrived later and later before the hang */
    int fit_pairs;              /* completed instances the offsets were fitted on */
    int entered[16];            /* members that have the hung collective's entry (the first 16) */
    int nentered, entered_total;
    bool empty;                 /* no dump holds an entry: nothing to analyse */
    int stateless;              /* dumps that record no start or completion (gloo's recorder):
                                 * where their ranks are comes from the sequence numbers alone */
    int guessed_pgs;            /* groups no dump lists the ranks of: members are the ranks whose
                                 * dumps name the group */
    mt_fr_op_t culprit_last; /* the last entry (by record id) of culprit_last_rank; name "" if none */
    int culprit_last_rank;      /* the culprit who never enqueued it (culprits are sorted) */
    mt_fr_op_t hung_first, hung_culprit; /* size mismatch: the majority's and the culprit's entry */
    int64_t dump_ns;            /* the dump's time on the reference clock (the first watchdog's firing);
                                 * MT_FR_NONE when no fitted rank has a collective started and not completed */
    int ref_rank;               /* the reference clock's rank (the lowest with a dump); -1 with no dump */
    bool *has_dump;             /* [world] */
    mt_fr_op_t *last_done;   /* [world]: each rank's last completed entry (by record id); name "" if none */
    /* Point-to-point (sends and recvs: mt_fr_hang_analyse says how they
     * pair). p2p: the verdict is of one: pg, seq (its collective_seq_id as
     * recorded) and name are p2p_op's, the entry of p2p_rank (who waits in
     * it, or the first of a mismatched pair) with p2p_peer (global ranks);
     * p2p_peer_op is the peer's matching entry (a size mismatch; name ""
     * when the peer never enqueued one). */
    bool p2p;
    int p2p_rank, p2p_peer;
    mt_fr_op_t p2p_op, p2p_peer_op;
    /* The waiting chain when a send or recv is in it: chain[0] waits for
     * chain[1], which waits for chain[2] ...; the last is the rank that is
     * not waiting (never_enqueued), the rank of a mismatched send/recv
     * (size_mismatch), or the first rank met twice (order_mismatch: a
     * cycle). nchain ranks (0: none); past 16, chain[15] holds the last.
     * chain_op[i]: chain[i]'s first entry not completed (name "": none). */
    int chain[16];
    int nchain;
    mt_fr_op_t chain_op[16];
} mt_fr_hang_t;

/* Analyse the dumps (dumps[i].rank are distinct; n of them) for a hang.
 * Clocks: each rank's offset to the lowest rank with a dump, the median
 * over the collectives both completed of the difference of completion
 * times (a plain offset fit: the dumps hold a few thousand entries and
 * completions are simultaneous to a few us); a rank with none in common
 * with a fitted rank keeps MT_FR_NONE and no wait. The dump's time is
 * taken as the first watchdog's firing (it has every rank dump): the
 * earliest aligned start of a collective never completed + its timeout.
 *
 * Sends and recvs: NCCL runs the operations between two ranks of a
 * communicator in order, so the k-th send from a to b in a group meets b's
 * k-th recv from a. p2p_seq_id cannot pair them (PyTorch counts a rank's
 * point-to-point operations per group over every peer and both
 * directions), and entries evicted from the ring buffer leave no count from
 * the start: the entries not completed are paired instead, per group and
 * directed pair, in record order (those before them completed on both
 * ends). A rank is blocked in its first entry not completed (by record
 * id): a send or recv waits for its peer when the peer has no matching one
 * open (its "never enqueued"), and is a mismatch when the two differ in
 * elements or dtype; a collective waits for the lowest member without its
 * entry. When a send or recv is among these waits, the chain from a
 * waiting rank no one waits for (the longest, then the lowest rank) is
 * followed to its end: a rank not waiting is the culprit
 * (never_enqueued), a mismatched pair both culprits (size_mismatch: the
 * dumps cannot tell which side is wrong), a cycle its ranks
 * (order_mismatch), a peer without a dump no_dump (a send or recv whose
 * peer has none counts as waiting); the verdict is the last link's (a collective's as
 * without sends and recvs), waits are each waiting rank's in its first
 * entry not completed. Fills *h (free its arrays with mt_fr_hang_free). MT_ERR_NOMEM, or MT_ERR_FORMAT for dumps of different
 * jobs (a group's ranks differ between dumps). */
mt_status_t mt_fr_hang_analyse(const mt_fr_dump_t *dumps, size_t n, mt_fr_hang_t *h, mt_error_t *err);
void mt_fr_hang_free(mt_fr_hang_t *h);

/* The analysis at scale: the processes that read the dumps send process 0
 * what the analysis reads of them, not every entry, and the verdict is
 * the one mt_fr_hang_analyse gives on the whole dumps.
 *
 * 1. Each reading process: mt_fr_dump_last_done of each dump, sent to
 *    process 0 with the dump's groups as indexes into a table of the
 *    process's distinct groups, each sent once (every dump holds every
 *    group of the job); process 0's groups-only dumps share the table's
 *    ranks (pgs_shared).
 * 2. Process 0: mt_fr_keep_plan over those, sent to every process.
 * 3. Each reading process: mt_fr_ref_fit of each dump to the reference
 *    dump (the lowest rank's, shared), and mt_fr_dump_trim of it, sent to
 *    process 0, which puts the kept entries into the groups-only dumps
 *    and runs mt_fr_hang_analyse_fitted on them.
 * When a dump has no completed collective in common with the reference
 * (mt_fr_ref_fit false), its offset would be fitted through another
 * rank: then the whole dumps go to process 0 and mt_fr_hang_analyse runs
 * on them, as it does when mt_fr_hang_analyse_fitted finds dumps of
 * different jobs (for --force to leave one out). */

/* A group's name and a collective sequence number. */
typedef struct mt_fr_pg_seq {
    char pg[64];
    int64_t seq;
} mt_fr_pg_seq_t;

/* Per group in d's collective entries, the highest sequence number of a
 * completed one (0 when none completed): *out (malloc'd, the caller
 * frees; NULL when *n is 0), sorted by name. MT_OK or MT_ERR_NOMEM. */
mt_status_t mt_fr_dump_last_done(const mt_fr_dump_t *d, mt_fr_pg_seq_t **out, size_t *n);

/* Process 0: from each dump's groups (heads[i].pgs; heads[i].entries not
 * read, sorted by rank) and its last-done table (done[i][0..ndone[i])),
 * the lowest sequence number of each group (pg_config's, as the analysis
 * takes them) whose collective entries the analysis may read: 4 below the
 * lowest last-done of the group's members that have a dump (a member
 * without the group's entries counts 0). *keep (malloc'd, the caller
 * frees), sorted by name. MT_OK or MT_ERR_NOMEM. */
mt_status_t mt_fr_keep_plan(const mt_fr_dump_t *heads, size_t n, const mt_fr_pg_seq_t *const *done,
                            const size_t *ndone, mt_fr_pg_seq_t **keep, size_t *nkeep);

/* The entries of d the analysis reads, in d's order, into *out (owning its
 * entries; no groups; rank and version copied): the collective entries of
 * each group of keep[0..nkeep) (sorted by name) from its sequence number
 * on, every entry not completed (or started and not completed), and the last entry and the
 * last completed one by record id. MT_OK or MT_ERR_NOMEM. */
mt_status_t mt_fr_dump_trim(const mt_fr_dump_t *d, const mt_fr_pg_seq_t *keep, size_t nkeep, mt_fr_dump_t *out);

/* The reference clock's dump, indexed for fitting the others to it. */
typedef struct mt_fr_ref mt_fr_ref_t;

/* ref borrowed (must outlive the result). NULL when out of memory. */
mt_fr_ref_t *mt_fr_ref_new(const mt_fr_dump_t *ref);
void mt_fr_ref_free(mt_fr_ref_t *f);

/* d's offset to the reference clock as mt_fr_hang_analyse fits it (the
 * median over the collectives both completed of the difference of
 * completion times) into *off, the pairs it used added to *pairs; false
 * (nothing set) when they have no completed collective in common. */
bool mt_fr_ref_fit(const mt_fr_ref_t *f, const mt_fr_dump_t *d, int64_t *off, int *pairs);

/* mt_fr_hang_analyse with the clocks fitted already: off[i] is dumps[i]'s
 * offset to the reference (the lowest rank's dump, whose off is 0), every
 * one set, and fit_pairs the pairs they used; dumps[] may be trimmed
 * (mt_fr_dump_trim) with the groups of every dump. The same errors. */
mt_status_t mt_fr_hang_analyse_fitted(const mt_fr_dump_t *dumps, size_t n, const int64_t *off, int fit_pairs,
                                      mt_fr_hang_t *h, mt_error_t *err);

/* The terminal verdict (at most 8 lines, each ending in '\n') through
 * write. MT_OK or what write returned. */
mt_status_t mt_fr_hang_write_text(const mt_fr_hang_t *h, mt_write_fn write, void *ctx);

/* The dumps' entries as a Chrome trace (JSON object with "traceEvents",
 * for Perfetto and chrome://tracing) through write: one process per rank
 * (named "rank R (flight recorder)"), one thread per process group, one
 * complete event per entry from its start (its creation when it never
 * started) to its completion, or to the dump's time (h->dump_ns) when it
 * did not complete, on the reference clock (h->offset_ns; a rank without
 * a fit on its own clock), named "<profiling_name> #<seq>", with the
 * state as its category and in args, and a colour by state (cname:
 * completed "good", started "terrible", scheduled "grey"). An entry with
 * no time at all is left out. dumps[0..n) and h as mt_fr_hang_analyse
 * read and left them. MT_OK or what write returned. */
mt_status_t mt_fr_trace_json(const mt_fr_dump_t *dumps, size_t n, const mt_fr_hang_t *h, mt_write_fn write,
                             void *ctx);

/* mt_fr_trace_json in pieces, for writing the ranks where their dumps are:
 * the header, then each dump's part (first: the file's first rank; off_ns
 * its offset to the reference clock, 0 when unfitted; dump_ns as
 * h->dump_ns), then the footer; the pieces of the dumps by rank make the
 * same bytes. *events (may be NULL) gets the slices written. */
mt_status_t mt_fr_trace_header(mt_write_fn write, void *ctx);
mt_status_t mt_fr_trace_rank(const mt_fr_dump_t *d, bool first, int64_t off_ns, int64_t dump_ns, mt_write_fn write,
                             void *ctx, uint64_t *events);
mt_status_t mt_fr_trace_footer(mt_write_fn write, void *ctx);

/* ---- The dumps beside traces: their entries in the traces' merged trace ----
 *
 * A dump's times are the host's wall clock as PyTorch reads it (ns since
 * the epoch); a Kineto trace's are the same host's, through the
 * profiler's own conversion, and the merged trace puts each rank's trace
 * on the reference rank's clock (mt_clock_t). A dump is placed on its
 * rank's trace by the collectives both hold, by group and sequence
 * number: the dump discovers a completion when its watchdog polls, never
 * before the kernel's end, so the shift between the clocks is the lower
 * envelope of (completion discovered - kernel end) over the pairs (those
 * within MT_FR_PLACE_WINDOW_NS of their median: a pair from before a
 * restart, whose numbers repeat, is left aside). Without a pair (the
 * trace's window and the dump's last entries have no completed
 * collective in common, or the trace's collectives carry no sequence
 * numbers, as gloo's), a dump whose times lie within MT_FR_PLACE_SAME_NS
 * of its trace's is placed with shift 0 (both are the host's wall clock),
 * and one farther is left out: its clock is not the trace's. */

#define MT_FR_PLACE_WINDOW_NS INT64_C(1000000000)         /* 1 s */
#define MT_FR_PLACE_SAME_NS INT64_C(86400000000000)       /* 1 day */

/* One collective of a rank's trace that a dump's entry may pair with: a
 * kernel row with a sequence number (mt_cinst_t with MT_CI_SEQ, of
 * Kineto, not of an NCCL plugin file). 24 bytes: kept from the load to
 * the merged write for every trace a process loaded. */
typedef struct mt_fr_tcoll {
    int32_t rank;
    uint32_t pg_id;  /* the row's process group label (id into the rows' label table) */
    int64_t seq;
    int64_t end_ns;  /* the kernel's end, on the trace's own clock */
} mt_fr_tcoll_t;

/* The rows of rows[0..n) that pair with dumps, as tcolls appended to *out
 * (*n_out of them; realloc'd), sorted by rank, then sequence number.
 * MT_OK or MT_ERR_NOMEM (*out unchanged). Not collective. */
mt_status_t mt_fr_tcolls_take(const mt_cinst_t *rows, size_t n, mt_fr_tcoll_t **out, size_t *n_out);

/* How a dump is placed on its rank's trace. */
typedef struct mt_fr_place {
    bool placed;       /* false: left out (no pair and its times a day or more from the trace's) */
    bool aligned;      /* placed by pairs (else with shift 0) */
    int64_t shift_ns;  /* the dump's clock - the trace's own clock */
    int pairs;         /* the pairs the shift came from */
    int rejected;      /* pairs left aside (farther than MT_FR_PLACE_WINDOW_NS from the median) */
    int64_t lag_p50_ns; /* the median of (completion discovered - kernel end - shift) over the pairs */
    int64_t gap_ns;    /* not aligned: how far the dump's times lie from the trace's (0: they meet) */
} mt_fr_place_t;

/* d placed on its rank's trace: all[0..n_all) tcolls as
 * mt_fr_tcolls_take sorts them, of any ranks (those of d->rank are used;
 * their pg_id labels in labels, borrowed: a label is the group's name, or
 * "name (desc)"), [first_ns, last_ns] the trace's span on its own clock.
 * MT_OK or MT_ERR_NOMEM. Not collective. */
mt_status_t mt_fr_place_fit(const mt_fr_dump_t *d, const mt_fr_tcoll_t *all, size_t n_all, const mt_strtab_t *labels,
                            int64_t first_ns, int64_t last_ns, mt_fr_place_t *out);

/* d's entries as a part of the traces' merged trace, after its rank's
 * events (each event preceded by ",\n"): a process of the rank's own,
 * pid mt_merge_pid(rank, MT_MERGE_FR_SLOT), named "rank R Flight
 * Recorder", with a track per process group ("Flight Recorder: group
 * <name> (<desc>)") and the slices of mt_fr_trace_json, each time t
 * written as mt_clock_apply(clock, t - p->shift_ns) (clock NULL: the
 * identity); an entry not completed ends at end_ns (the dump's time on
 * the dump's own clock; MT_FR_NONE: at its start). Nothing when p is not
 * placed. *events (may be NULL) gets the events written, metadata
 * included. MT_OK or what write returned. */
mt_status_t mt_fr_trace_rank_merged(const mt_fr_dump_t *d, const mt_fr_place_t *p, const mt_clock_t *clock,
                                    int64_t end_ns, mt_write_fn write, void *ctx, uint64_t *events);

/* Dumps from the NCCL plugin's files (src/fr/fr_nccl.c says how each
 * field maps): out[i] for files[i], whose process has global rank
 * ranks[i] (below MT_FR_MAX_RANKS). Free each with mt_fr_dump_free.
 * MT_ERR_NOMEM, MT_ERR_LIMIT. */
mt_status_t mt_fr_from_nccl(const mt_nccl_file_t *const *files, const int32_t *ranks, size_t n,
                            mt_fr_dump_t *out, mt_error_t *err);

/* Lower-case name of a verdict ("never_enqueued", ...). */
const char *mt_fr_kind_name(mt_fr_kind_t k);

#ifdef __cplusplus
}
#endif
#endif /* MERGETRACE_FR_HANG_H */
