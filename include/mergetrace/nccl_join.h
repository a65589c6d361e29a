/* NCCL's own records as inputs of a job (plugin files, Inspector logs,
 * example profiler traces): what a file is, loading one into collective
 * rows with its rank, joining it with its rank's Kineto trace, choosing
 * which rows align the clocks (collective over an mt_comm_t), comparing the
 * two sources, and the warnings about them. The readers themselves are
 * nccl_input.h and nccl_inspector.h. */
#ifndef MERGETRACE_NCCL_JOIN_H
#define MERGETRACE_NCCL_JOIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mergetrace/collectives.h"
#include "mergetrace/comm.h"
#include "mergetrace/nccl_input.h"
#include "mergetrace/rank.h"
#include "mergetrace/status.h"
#include "mergetrace/strtab.h"
#include "mergetrace/warnings.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a process learned about one NCCL file (plain bytes: it travels
 * between processes inside the program's per-file result). */
typedef struct mt_nccl_info {
    int32_t is_nccl;          /* 0: the file is not an NCCL file; else mt_nccl_format_t */
    int32_t comm_size;        /* nranks of the largest communicator */
    int32_t has_bound, truncated;
    int64_t pid, offset_bound_ns;
    uint64_t comms, tasks, rows, p2p_left_out, dropped, orphan, unknown_lines;
    uint64_t untimed;         /* Inspector records without kernel times (not verbose); example
                               * profiler tasks without kernel-channel GPU stamps */
    uint64_t comm_hash;       /* example profiler: the file's communicator */
    int32_t left_out;         /* example profiler: a communicator other than the job's largest */
    int32_t in_flight;        /* plugin file: tasks not done at its end when the process did not exit (capped) */
    char host[64];
} mt_nccl_info_t;

/* What path is, by its first line: MT_NCCL_FILE_PLUGIN (an NCCL plugin
 * file, an NCCL Inspector log or an example profiler trace),
 * MT_NCCL_FILE_SKIP (found in a directory, named *.jsonl, *.jsonl.gz, *.log
 * or *.log.gz, but none of them: left out, why says so in cap bytes), or
 * MT_NCCL_FILE_OTHER (for the trace loader, which also reports an
 * unreadable file). Not collective. */
enum { MT_NCCL_FILE_OTHER = 0, MT_NCCL_FILE_PLUGIN, MT_NCCL_FILE_SKIP };
int mt_nccl_classify(const char *path, bool from_dir, char *why, size_t cap);

/* NCCL's example profiler writes one file per process and communicator,
 * ..._<commHash>_<rank>.json. The job's communicator is the one with the
 * most such file names among the inputs (ties: the smaller hash); files of
 * the others are left out, so that every rank has one file. */
typedef struct mt_nccl_xworld {
    uint64_t hash;            /* valid when files > 0 */
    uint32_t files;           /* file names of that communicator */
    uint32_t n_hashes;        /* distinct communicators among the names */
} mt_nccl_xworld_t;

/* *w from the names paths[0..n) (borrowed): the same on every process that
 * has the same list. Out of memory leaves *w zeroed (every example file
 * then stands alone). */
void mt_nccl_example_world(const char *const *paths, size_t n, mt_nccl_xworld_t *w);

/* Load an NCCL plugin file, Inspector log or example profiler trace: its
 * rank (the map's entry, else its rank in its largest communicator, else 0
 * when it is the only input), its collective rows appended to
 * *rows, *n_rows, *cap_rows (flag MT_CI_NCCL; their labels interned into
 * labels), facts in *info (zeroed first). An example profiler file of
 * another communicator than xw's (xw may be NULL) returns MT_OK with
 * info->left_out set and no rows. Returns MT_OK or an error described in
 * err (MT_ERR_NO_RANK when no communicator gives the rank, MT_ERR_RANGE
 * for a rank past INT32_MAX - 1). Not collective. */
mt_status_t mt_nccl_load_file(const char *path, const mt_rankmap_t *map, bool only_file, const mt_nccl_xworld_t *xw,
                              mt_strtab_t *labels, mt_cinst_t **rows, size_t *n_rows, size_t *cap_rows, int64_t *rank,
                              mt_rank_source_t *src, mt_nccl_info_t *info, mt_error_t *err);

/* One rank's NCCL file in the job. */
typedef struct mt_nccl_rank {
    int32_t rank;
    int32_t file_index;       /* into the caller's input list */
    const char *path;         /* borrowed: must outlive the job */
    mt_nccl_info_t info;
    bool with_kineto;         /* the rank has a Kineto trace too */
    int64_t kineto_pid;       /* with_kineto: the trace's process (-1 unknown) */
    int64_t kineto_world;     /* with_kineto: its distributedInfo world size (-1 unknown) */
    bool aligned_on_nccl;     /* its NCCL rows align its clock */
    const mt_nccl_agree_t *agree; /* into agree[]; NULL: not compared */
} mt_nccl_rank_t;

/* The NCCL files of the job, by rank (the root's view). Start zeroed; free
 * with mt_nccl_job_free. */
typedef struct mt_nccl_job {
    mt_nccl_rank_t *r;
    size_t n;
    size_t n_only;            /* ranks with NCCL data and no Kineto trace */
    const char *source;       /* "kineto", "nccl" or "mixed" (static) after mt_nccl_job_decide */
    mt_nccl_agree_t *agree;
    size_t n_agree;
} mt_nccl_job_t;

/* Add rank's NCCL file (with_kineto: it joins a Kineto trace of the same
 * rank); path borrowed, info copied. MT_OK or MT_ERR_NOMEM (nj unchanged). */
mt_status_t mt_nccl_job_add(mt_nccl_job_t *nj, int32_t rank, int32_t file_index, const char *path,
                            const mt_nccl_info_t *info, bool with_kineto);

/* What the rank's Kineto trace says of its process, to check the join
 * (same pid, same job size). */
void mt_nccl_job_kineto(mt_nccl_job_t *nj, int32_t rank, int64_t pid, int64_t world);

/* After every file was added: which rows align each rank. Every rank has a
 * Kineto trace: Kineto rows (NCCL data only compared). Otherwise, when
 * every one of the n_loaded_ranks has NCCL data: NCCL rows for all, so
 * every rank's collectives share one key space. Otherwise ("mixed"):
 * Kineto rows where there is a trace, NCCL rows for the NCCL-only ranks. */
void mt_nccl_job_decide(mt_nccl_job_t *nj, size_t n_loaded_ranks);

/* Whether the join of r's two sources looks wrong: the Kineto trace is of
 * another process, or of another job size than the largest communicator. */
bool mt_nccl_rank_pid_differs(const mt_nccl_rank_t *r);
bool mt_nccl_rank_size_differs(const mt_nccl_rank_t *r);

/* Collective over comm: the root's decision (nj, root only; NULL
 * elsewhere) reaches every process, which reorders its rows[0..n_rows)
 * so that the ones that align come first (*n_use of them; the rest are
 * the other source of ranks that have both). Returns MT_OK or
 * MT_ERR_NOMEM, the same everywhere. */
mt_status_t mt_nccl_rows_select(const mt_comm_t *comm, const mt_nccl_job_t *nj, mt_cinst_t *rows, size_t n_rows,
                                size_t *n_use);

/* Collective over comm: the rows that did not align (rows[0..n)) are
 * gathered on the root and compared with the aligned ones of the same rank
 * (al->rows, root only) into nj->agree (root only; nj NULL elsewhere).
 * Labels are not compared: the gathered rows' label ids stay those of
 * their processes. MT_OK or an error of comm or MT_ERR_NOMEM. */
mt_status_t mt_nccl_compare(const mt_comm_t *comm, const mt_cinst_t *rows, size_t n, const mt_align_result_t *al,
                            mt_nccl_job_t *nj);

/* The rows of the job's NCCL files. */
uint64_t mt_nccl_job_rows(const mt_nccl_job_t *nj);

/* The warnings about the NCCL files appended to *w (codes nccl_* in
 * docs/report-schema.md), files named by their base names. */
void mt_nccl_job_warn(mt_warnings_t *w, const mt_nccl_job_t *nj);

/* Frees what nj holds and zeroes it; nothing when already empty. */
void mt_nccl_job_free(mt_nccl_job_t *nj);

#ifdef __cplusplus
}
#endif
#endif
