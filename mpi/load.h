/* Loading: the input list and the rank map shared by every process, each
 * process's share of the files loaded one trace at a time into compact
 * per-rank results, a failure noticed by the others at once, and the
 * per-file results gathered on process 0. */
#ifndef MT_MPI_LOAD_H
#define MT_MPI_LOAD_H

#include <mpi.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mergetrace/discover.h"
#include "mergetrace/mergetrace.h"
#include "options.h"
#include "timings.h"

/* What one process learned about one file; sent to process 0 as bytes. */
typedef struct file_result {
    int32_t index;          /* into the input list */
    int32_t status;         /* mt_status_t */
    int64_t rank;
    int32_t rank_source;    /* mt_rank_source_t */
    int32_t skipped;        /* found in a directory but not a trace: left out, reported */
    int32_t rank_tentative; /* named no rank, found in a directory: taken as 0 if it is the job's only
                             * trace (job_check), else message holds the error */
    double load_s;
    mt_trace_summary_t sum;
    uint64_t n_gacts;       /* GPU activities of its analysis (the critical path's input), collective rows */
    uint64_t n_rows;
    uint64_t n_steps;       /* ProfilerSteps of its analysis */
    mt_nccl_info_t nccl;       /* an NCCL plugin file: nccl.is_nccl */
    char message[1024];     /* the formatted error (or the skip reason) */
} file_result_t;

/* This process's compact state: results per file, collective rows and
 * ProfilerStep ranges of the ranks it loaded. */
typedef struct local {
    file_result_t *res;
    size_t n_res;
    mt_analysis_opts_t aopts;
    mt_buf_t analyses;      /* packed mt_rank_analysis_t of each loaded rank */
    mt_cinst_t *rows;
    size_t n_rows, cap_rows;
    mt_strtab_t *labels;    /* the rows' label ids refer to it */
    mt_step_t *steps;
    size_t n_steps, cap_steps;
    double parse_s, passes_s; /* --timings: time in the loader and in the per-rank passes */
    uint64_t largest;         /* JSON bytes of the largest trace loaded here */
    mt_nccl_xworld_t xw;         /* the job's communicator among NCCL example profiler files */
    mt_merge_facts_t **facts; /* per res[]: the merged write's first pass, done while loading (NULL: none) */
} local_t;

/* Collective over comm: process 0 expands the PATHs of o, every process
 * gets the list (*files) and its share of it; the --rank-map file is read
 * by process 0 and parsed everywhere (*map, NULL without one); the chunk
 * and --stage markers are compiled (*markers). Returns -1 to go on, or the
 * exit code, the same on every process, after process 0 printed why. What
 * was filled is the caller's to free (mt_discover_free, mt_rankmap_free,
 * mt_pp_markers_free), whatever is returned. */
int load_prepare(MPI_Comm comm, const options_t *o, mt_discover_list_t *files, mt_rankmap_t **map,
                 mt_pp_markers_t **markers);

/* Collective: this process loads its share of files into *L (zeroed
 * first; markers must outlive it), every process learns whether any
 * failed, and the per-file results of every process are gathered on
 * process 0 (*all, *n_all: malloc'd, the caller frees; NULL, 0 elsewhere).
 * pt->load gets the time of it all (max over processes). Returns, on
 * process 0, the exit code of the failure of the lowest file index (after
 * printing its message) or MT_EXIT_OK; MT_EXIT_OK elsewhere. */
int load_share(MPI_Comm comm, const mt_comm_t *mc, const options_t *o, const mt_discover_list_t *files,
               const mt_rankmap_t *map, const mt_pp_markers_t *markers, local_t *L, file_result_t **all,
               size_t *n_all, phase_times_t *pt);

/* Free what load_share filled in L. */
void load_free(local_t *L);

#endif
