/* NCCL plugin files as inputs of the program: loading one on its process,
 * joining it with its rank's Kineto trace, choosing which rows align the
 * clocks, comparing the two sources, and what the summary says about them. */
#ifndef MT_MPI_NCCL_JOB_H
#define MT_MPI_NCCL_JOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "inputs.h"
#include "mergetrace/mergetrace.h"
#include "mergetrace/report.h"

/* What a process learned about one NCCL plugin file (plain bytes: it
 * travels inside the per-file result to process 0). */
typedef struct nccl_info {
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
} nccl_info_t;

/* What path is, by its first line: NCCL_FILE_PLUGIN (an NCCL plugin file
 * or an NCCL Inspector log), NCCL_FILE_SKIP (found in a directory, named
 * *.jsonl, *.jsonl.gz or *.log, but neither: left out, why says so), or
 * NCCL_FILE_OTHER (for the trace loader, which also reports an unreadable
 * file). */
enum { NCCL_FILE_OTHER = 0, NCCL_FILE_PLUGIN, NCCL_FILE_SKIP };
int nccl_classify(const char *path, bool from_dir, char *why, size_t cap);

/* NCCL's example profiler writes one file per process and communicator,
 * ..._<commHash>_<rank>.json. The job's communicator is the one with the
 * most such file names among the inputs (ties: the smaller hash); files of
 * the others are left out, so that every rank has one file. Computed the
 * same on every process from the shared input list. */
typedef struct nccl_xworld {
    uint64_t hash;            /* valid when files > 0 */
    uint32_t files;           /* file names of that communicator */
    uint32_t n_hashes;        /* distinct communicators among the names */
} nccl_xworld_t;
void nccl_example_world(const input_list_t *l, nccl_xworld_t *w);

/* Load an NCCL plugin file, Inspector log or example profiler trace: its rank (the --rank-map
 * entry, else its rank in its largest communicator, else 0 when it is the
 * only input), its collective rows appended to *rows (flag MT_CI_NCCL; their
 * labels interned into labels),
 * facts in *info. An example profiler file of another communicator than
 * xw's returns MT_OK with info->left_out set and no rows. Returns MT_OK or
 * an error described in err (MT_ERR_NO_RANK when no communicator gives the
 * rank). Not collective. */
mt_status_t nccl_load_file(const char *path, const mt_rankmap_t *map, bool only_file, const nccl_xworld_t *xw,
                           mt_strtab_t *labels, mt_cinst_t **rows, size_t *n_rows, size_t *cap_rows, int64_t *rank,
                           mt_rank_source_t *src, nccl_info_t *info, mt_error_t *err);

/* Process 0's view of the NCCL files of the job, by rank. */
typedef struct nccl_rank {
    int32_t rank;
    int32_t file_index;       /* into the input list */
    nccl_info_t info;
    bool with_kineto;         /* the rank has a Kineto trace too */
    int64_t kineto_pid;       /* with_kineto: the trace's process (-1 unknown) */
    int64_t kineto_world;     /* with_kineto: its distributedInfo world size (-1 unknown) */
    bool aligned_on_nccl;     /* its NCCL rows align its clock */
    const mt_nccl_agree_t *agree;
} nccl_rank_t;

typedef struct nccl_job {
    nccl_rank_t *r;
    size_t n;
    size_t n_only;            /* ranks with NCCL data and no Kineto trace */
    const char *source;       /* "kineto", "nccl" or "mixed" */
    mt_nccl_agree_t *agree;
    size_t n_agree;
    mt_report_nccl_t *rep;    /* for report.json */
} nccl_job_t;

/* Process 0: add rank's NCCL file (with_kineto: it joins a Kineto trace of
 * the same rank). Returns non-zero when out of memory. */
int nccl_job_add(nccl_job_t *nj, int32_t rank, int32_t file_index, const nccl_info_t *info, bool with_kineto);

/* Process 0: what the rank's Kineto trace says of its process, to check
 * the join (same pid, same job size). */
void nccl_job_kineto(nccl_job_t *nj, int32_t rank, int64_t pid, int64_t world);

/* Process 0, after every file was added: which rows align each rank.
 * Every rank has a Kineto trace: Kineto rows (NCCL data only compared).
 * Otherwise, when every rank has NCCL data: NCCL rows for all, so every
 * rank's collectives share one key space. Otherwise ("mixed"): Kineto rows
 * where there is a trace, NCCL rows for the NCCL-only ranks. */
void nccl_job_decide(nccl_job_t *nj, size_t n_loaded_ranks);

/* Collective over comm: process 0's decision reaches every process, which
 * reorders its rows so that the ones that align come first (*n_use of
 * them; the rest are the other source of ranks that have both). Returns
 * MT_OK or MT_ERR_NOMEM, the same everywhere. */
mt_status_t nccl_rows_select(const mt_comm_t *comm, const nccl_job_t *nj, mt_cinst_t *rows, size_t n_rows,
                             size_t *n_use);

/* Collective over comm: the rows that did not align (rows[0..n)) are
 * gathered on process 0 and compared with the aligned ones of the same
 * rank (al->rows, root only). Results in nj (root only). Labels are not
 * compared: the gathered rows' label ids stay those of their processes. */
mt_status_t nccl_compare(const mt_comm_t *comm, const mt_cinst_t *rows, size_t n, const mt_align_result_t *al,
                         nccl_job_t *nj);

/* Process 0: nj->rep filled for report.json (paths from l).
 * Returns non-zero when out of memory. */
int nccl_job_report(nccl_job_t *nj, const input_list_t *l);

/* The rows of NCCL files in the job (the summary's "nothing to align" check). */
uint64_t nccl_job_rows(const nccl_job_t *nj);

/* The terminal summary's NCCL warnings (appended to *w; the table is
 * mt_report_text's, from nj->rep). */
void nccl_warn(mt_warnings_t *w, const nccl_job_t *nj, const input_list_t *l);

void nccl_job_free(nccl_job_t *nj);

#endif
