/* Reading the JSON lines that libnccl-profiler-mergetrace.so writes (one
 * file per process, docs/FORMATS.md "NCCL plugin JSON lines"): tasks with
 * their kernel channels joined, and their rows for collective matching.
 * Serial. The program reads these files beside (or instead of) Kineto
 * traces; mt_nccl_agree compares the two sources of a rank. */
#ifndef MERGETRACE_NCCL_INPUT_H
#define MERGETRACE_NCCL_INPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mergetrace/collectives.h"
#include "mergetrace/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One communicator, from its "init" line. */
typedef struct mt_nccl_comm {
    uint64_t hash;
    int32_t rank, nranks, n_nodes;
    char name[48];            /* truncated */
} mt_nccl_comm_t;

/* How far a task got, from its lines: after a hang, what each process had
 * in flight ("open" lines, written when a task or its kernel starts). */
typedef enum mt_nccl_task_state {
    MT_NCCL_TASK_DONE = 0,      /* a channel stopped and none is open (or a reader that knows no more) */
    MT_NCCL_TASK_RUNNING,       /* its kernel started (an open or channel line); not every channel stopped */
    MT_NCCL_TASK_ENQUEUED,      /* its coll/p2p line, no sign its kernel started */
    MT_NCCL_TASK_ENQUEUING      /* an "open" line only: the host enqueue never returned */
} mt_nccl_task_state_t;

/* One collective or P2P task ("coll"/"p2p" line, or an "open" line alone) with the summary of its
 * kernel channels ("kch" lines whose parent is the task). GPU times are
 * the GPU's clock; host times CLOCK_REALTIME; all ns. */
typedef struct mt_nccl_task {
    uint64_t comm;            /* communicator hash */
    uint64_t id;              /* the plugin's id, unique in the file */
    int64_t seq;              /* NCCL's sequence number; -1 for P2P */
    int64_t count;            /* elements */
    int64_t host_start_ns, host_stop_ns;  /* host-side enqueue */
    int64_t gpu_start_ns;     /* earliest channel start; -1 without channels */
    int64_t gpu_stop_ns;      /* latest channel stop; -1 when none stopped */
    int32_t rank;             /* rank within the communicator */
    int32_t root_or_peer;     /* coll: root; p2p: peer (rank within the communicator) */
    uint32_t n_kch;           /* channel lines seen */
    uint32_t n_kch_open;      /* of them, without a stop stamp */
    int64_t kernel_open_ns;   /* GPU start of the kernel's first channel from an "open" line; -1 without */
    int64_t kernel_seen_ns;   /* host time the plugin saw that start; -1 without */
    uint8_t state;            /* mt_nccl_task_state_t: how far it got */
    uint8_t kind;             /* mt_coll_kind_t from func */
    uint8_t is_p2p;
    uint8_t n_channels;
    char func[16], datatype[16], algo[16], proto[16]; /* truncated */
} mt_nccl_task_t;

/* One plugin file. Owned by the caller: mt_nccl_file_free(). */
typedef struct mt_nccl_file {
    char host[64];
    int64_t pid;
    int32_t abi;              /* NCCL profiler interface version */
    mt_nccl_comm_t *comms;
    size_t n_comms;
    mt_nccl_task_t *tasks;    /* by host_start_ns, then id */
    size_t n_tasks;
    /* min over every channel stamp of (host time seen - GPU stamp): the
     * GPU-to-host offset of this process is at most this. */
    int64_t gpu_offset_bound_ns;
    bool has_offset_bound;
    uint64_t dropped;         /* sum of the drop counters of the last stats line */
    uint64_t orphan_kch;      /* channel lines whose task line is not in the file */
    uint64_t skipped_lines;   /* lines of a type this reader does not know */
    bool truncated;           /* the last line had no newline (ignored) */
    int64_t last_seen_ns;     /* the latest host time (CLOCK_REALTIME) in the file: when the process last wrote */
    uint64_t in_flight;       /* tasks not DONE at the end of the file */
    bool ended;               /* a "stats" line of the process's exit: it ended, not killed or hung */
} mt_nccl_file_t;

/* Parse buf[0..len) (the whole file's text) as plugin JSON lines; path
 * only names the input in errors. Errors: MT_ERR_SYNTAX (not a flat JSON
 * object; offset and line:col of the byte), MT_ERR_FORMAT (a key missing
 * or of the wrong type, first line not "process"), MT_ERR_RANGE,
 * MT_ERR_LIMIT (a line over 64 KiB), MT_ERR_NOMEM. A last line without
 * its newline (a killed process) is ignored and flagged. *out is set on
 * MT_OK only. Not collective. */
mt_status_t mt_nccl_parse(const char *buf, size_t len, const char *path, mt_nccl_file_t **out,
                          mt_error_t *err);

/* Read and parse a file (plain or gzip). As mt_nccl_parse, plus MT_ERR_IO
 * and MT_ERR_GZIP. */
mt_status_t mt_nccl_load(const char *path, mt_nccl_file_t **out, mt_error_t *err);

/* free(NULL)-like: f may be NULL. */
void mt_nccl_file_free(mt_nccl_file_t *f);

/* The process's rank in its largest communicator (the first such one
 * initialised) and that communicator's size; -1 (and 0) without any. */
int32_t mt_nccl_world_rank(const mt_nccl_file_t *f, int32_t *world_size);

/* Append one row per task that has GPU times, on the host clock
 * (GPU stamp + gpu_offset_bound_ns), to *rows, *n, *cap (realloc'd) as
 * global rank `rank`, their labels (communicator name, datatype) interned
 * into labels (borrowed). Collectives are keyed by (communicator hash, func,
 * seq), which is the same on every rank (MT_CI_COMMS_ID). P2P tasks of the
 * largest communicator become send/recv rows with the peer as a global
 * rank; P2P tasks of other communicators are left out (their peers' global
 * ranks are unknown) and counted in *skipped. Returns MT_OK or
 * MT_ERR_NOMEM (rows unchanged then). Not collective. */
mt_status_t mt_nccl_cinst_extract(const mt_nccl_file_t *f, int32_t rank, mt_strtab_t *labels, mt_cinst_t **rows,
                                  size_t *n, size_t *cap, uint64_t *skipped);


/* NCCL's example profiler plugin (ext-profiler/example in NCCL's sources)
 * writes at finalize, per process and communicator,
 * <NCCL_PROFILE_DUMP_FILE>_<commHash>_<rank>.json: a JSON array of
 * Chrome-trace "b"/"e" events, one per line, ending with "{}]"
 * (docs/FORMATS.md "NCCL example profiler traces"). mt_nccl_example_parse
 * reads it into an mt_nccl_file_t: a task per "COLL"/"P2P" begin event,
 * the GPU start/stop of the kernel channels ("GPU" events) it encloses,
 * one communicator per distinct CommHash with its Rank (its size and name
 * are not in the file: nranks 0, name ""). GPU times stay on the GPU's
 * clock (has_offset_bound false); host times are the file's "ts", ns
 * since the plugin started. Unquoted labels (datatypes, stream pointers)
 * and "nan" times are tolerated. A file that ends early (no closing ']')
 * keeps its complete events and is flagged truncated. Errors carry the
 * byte offset and line:col: MT_ERR_FORMAT (not an array; a task without
 * CommHash/Rank/SeqNum), MT_ERR_SYNTAX, MT_ERR_RANGE, MT_ERR_LIMIT,
 * MT_ERR_NOMEM. Not collective. */
mt_status_t mt_nccl_example_parse(const char *buf, size_t len, const char *path, mt_nccl_file_t **out,
                                  mt_error_t *err);

/* Read (plain or gzip) and parse. As mt_nccl_example_parse, plus
 * MT_ERR_IO and MT_ERR_GZIP. */
mt_status_t mt_nccl_example_load(const char *path, mt_nccl_file_t **out, mt_error_t *err);


/* The communicator hash and rank in a file name of the plugin's pattern,
 * ..._<hash>_<rank>.json or .json.gz, the hash in decimal (10 to 20
 * digits). False when the name does not fit. */
bool mt_nccl_example_name(const char *path, uint64_t *hash, int32_t *rank);

/* What an NCCL-side file is, by content. */
typedef enum mt_nccl_format {
    MT_NCCL_FMT_NONE = 0,
    MT_NCCL_FMT_PLUGIN,      /* libnccl-profiler-mergetrace.so's JSON lines (first bytes; src/nccl/probe.h) */
    MT_NCCL_FMT_INSPECTOR,   /* an NCCL Inspector log (first bytes) */
    MT_NCCL_FMT_EXAMPLE,     /* a trace of NCCL's example profiler plugin (mt_nccl_example_sniff) */
} mt_nccl_format_t;

/* Reads the first bytes of path (plain or gzip) and sniffs them. Errors:
 * MT_ERR_IO, MT_ERR_GZIP, MT_ERR_NOMEM (*fmt MT_NCCL_FMT_NONE then). Not
 * collective. */
mt_status_t mt_nccl_probe(const char *path, mt_nccl_format_t *fmt, mt_error_t *err);

/* How NCCL's GPU times and Kineto's kernel times of one rank agree once
 * both are on the corrected clock. Pairs are mutual nearest neighbours by
 * corrected start among rows of the same collective kind (Send, Recv and
 * SendRecv count as one kind), so a Kineto trace that covers a window of
 * the run pairs only inside that window. Differences are NCCL - Kineto. */
typedef struct mt_nccl_agree {
    int32_t rank;
    uint64_t nccl_rows, kineto_rows;   /* of this rank */
    uint64_t pairs;
    int64_t start_p50_ns, start_p99_ns;  /* |start difference|, nearest-rank percentiles; 0 without pairs */
    int64_t end_p50_ns, end_p99_ns;      /* |end difference| */
    int64_t start_median_ns;             /* signed median start difference (a constant shift shows here) */
} mt_nccl_agree_t;

/* For every rank that has both rows with MT_CI_NCCL and rows without it in
 * rows[0..n_rows) (any order), one mt_nccl_agree_t, by rank ascending, in
 * *out (malloc'd, caller frees; NULL with *n_out = 0 when no rank has
 * both). Times are corrected with the rank's entry of clocks[0..n_clocks)
 * (found by rank; identity when absent). Returns MT_OK or MT_ERR_NOMEM.
 * Not collective. */
mt_status_t mt_nccl_agree(const mt_crow_t *rows, size_t n_rows, const mt_clock_t *clocks, size_t n_clocks,
                          mt_nccl_agree_t **out, size_t *n_out);

#ifdef __cplusplus
}
#endif
#endif /* MERGETRACE_NCCL_INPUT_H */
