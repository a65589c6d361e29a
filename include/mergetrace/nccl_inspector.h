/* Reading NCCL Inspector logs (NVIDIA's inspector profiler plugin,
 * <host>-pid<pid>.log): one JSON object per line with "header" (the
 * communicator), "metadata" (host, pid, dump time) and "coll_perf" (one
 * collective: type, sequence number, size, execution time, bandwidths and,
 * in verbose mode, "event_trace_ts" with absolute host microseconds).
 * Serial; docs/FORMATS.md "NCCL Inspector logs". */
#ifndef MERGETRACE_NCCL_INSPECTOR_H
#define MERGETRACE_NCCL_INSPECTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mergetrace/collectives.h"
#include "mergetrace/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* coll_timing_source */
typedef enum mt_insp_timing {
    MT_INSP_TIMING_UNKNOWN = 0,
    MT_INSP_TIMING_KERNEL_GPU,     /* "kernel_gpu" */
    MT_INSP_TIMING_KERNEL_CPU,     /* "kernel_cpu" */
    MT_INSP_TIMING_COLL_CPU,       /* "collective_cpu" */
} mt_insp_timing_t;

/* One "coll_perf" record. The communicator id is what the Inspector
 * prints: "0x" and at most 14 hex digits, the leading digits of the
 * communicator hash written without zero padding. */
typedef struct mt_insp_coll {
    uint64_t comm;            /* the id's digits as a number */
    uint8_t comm_digits;      /* how many hex digits the id had (1..14) */
    uint8_t kind;             /* mt_coll_kind_t from coll */
    uint8_t timing;           /* mt_insp_timing_t */
    int32_t rank, nranks, nnodes; /* header: rank within the communicator */
    int64_t sn;               /* coll_sn */
    int64_t msg_bytes;        /* coll_msg_size_bytes */
    int64_t exec_ns;          /* coll_exec_time_us * 1000 */
    double algbw_gbs, busbw_gbs; /* NaN when written as "nan" */
    int64_t dump_ns;          /* metadata.dump_timestamp_us * 1000 */
    /* verbose only (-1 otherwise): earliest kernel_start_ts and latest
     * kernel_stop_ts of the kernel events, host clock, ns */
    int64_t start_ns, end_ns;
    uint32_t n_kernel_events;
    char coll[16];            /* truncated */
} mt_insp_coll_t;

/* One log. Owned by the caller: mt_insp_file_free(). */
typedef struct mt_insp_file {
    char host[64];
    int64_t pid;
    mt_insp_coll_t *colls;    /* in file order */
    size_t n_colls;
    uint64_t skipped_lines;   /* objects without "coll_perf" (other record kinds) */
    bool truncated;           /* the last line had no newline (ignored) */
} mt_insp_file_t;


/* Parse buf[0..len) as Inspector JSON lines; path names the input in
 * errors. Each line is strict JSON (nesting up to 8 levels; numbers may
 * have fractions; strings are kept up to 63 bytes). Keys other than the
 * ones above are skipped; a line without "header" is MT_ERR_FORMAT. A
 * last line without its newline is ignored and flagged. Errors carry the
 * byte offset and line:col: MT_ERR_SYNTAX, MT_ERR_FORMAT, MT_ERR_RANGE,
 * MT_ERR_LIMIT (a line over 1 MiB, deeper nesting), MT_ERR_NOMEM. *out is
 * set on MT_OK only. Not collective. */
mt_status_t mt_insp_parse(const char *buf, size_t len, const char *path, mt_insp_file_t **out, mt_error_t *err);

/* Read (plain or gzip) and parse. As mt_insp_parse, plus MT_ERR_IO and
 * MT_ERR_GZIP. */
mt_status_t mt_insp_load(const char *path, mt_insp_file_t **out, mt_error_t *err);

void mt_insp_file_free(mt_insp_file_t *f);

/* The process's rank in its largest communicator (the first such one in
 * the file) and that size; -1 (and 0) without records. */
int32_t mt_insp_world_rank(const mt_insp_file_t *f, int32_t *world_size);


/* Append one row per record with kernel times (verbose logs) as global
 * rank `rank` (labels: the communicator id and "byte", interned into
 * labels, borrowed), keyed by (communicator id, coll, coll_sn), the same on
 * every rank (MT_CI_COMMS_ID | MT_CI_SEQ | MT_CI_NCCL). Records without
 * times are counted in *no_times (may be NULL). Returns MT_OK or
 * MT_ERR_NOMEM (rows unchanged then). Not collective. */
mt_status_t mt_insp_cinst_extract(const mt_insp_file_t *f, int32_t rank, mt_strtab_t *labels, mt_cinst_t **rows,
                                  size_t *n, size_t *cap, uint64_t *no_times);

#ifdef __cplusplus
}
#endif
#endif /* MERGETRACE_NCCL_INSPECTOR_H */
