/* --timings: wall time per phase and peak memory, gathered over the MPI
 * processes and printed / written apart from report.json (which must stay
 * deterministic: the same bytes for any process count and any run). */
#ifndef MT_MPI_TIMINGS_H
#define MT_MPI_TIMINGS_H

#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>

#include "mergetrace/job_state.h"


/* Seconds of wall time. Phases that every process runs are reduced with a
 * max (the slowest process sets the pace); root-only phases are taken from
 * process 0. */
typedef struct phase_times {
    double load;         /* the load loop and the gather of results (all processes, max) */
    double parse;        /* per process: loading + summarising its traces (sum over its files) */
    double rank_passes;  /* per process: the per-rank analyses (sum over its files) */
    double gather;       /* gathering the per-rank analyses on process 0 */
    double align;        /* mt_align_job: gather rows, match, fit, broadcast */
    double match;        /* process 0: matching instances across ranks */
    double clock_fit;    /* process 0: the clock fit */
    double cross_rank;   /* process 0: collective table, stragglers, pipeline */
    double merged_write; /* the merged timeline (all processes, max) */
    int merged_helper;   /* this process deflated the merged trace on a helper thread (0/1; summed) */
    double report;       /* process 0: report.json and the terminal summary */
    double total;        /* from after MPI_Init to the end */
    /* process 0's CPU seconds in its own steps: steadier than wall time
     * when other work shares the cores */
    double match_cpu, clock_fit_cpu, cross_rank_cpu;
    int match_procs; /* processes that matched the rows (all of them: sharded) */
    double load_cpu;     /* process 0's CPU seconds in the load loop (its own traces) */
    /* process 0: mt_critpath_run (steps, critical path, what-ifs; counted in
     * cross_rank), wall and CPU seconds, and how much it raised the peak RSS */
    double critpath, critpath_cpu;
    uint64_t critpath_rss_growth;
    mt_job_plan_t plan;  /* process 0: the memory plan */
} phase_times_t;

/* What the job handled, for rates and the memory ratio. */
typedef struct job_size {
    uint64_t ranks, json_bytes, events;
    uint64_t largest_trace; /* JSON bytes of the largest single trace this process loaded */
    const uint64_t *files;  /* process 0: input files given to each process (n_procs); NULL: not known */
} job_size_t;

/* CPU seconds this process has used so far (all its threads). */
double timings_cpu(void);

/* Collective over comm: reduce the times, the peak RSS (max, and which
 * process) and the largest trace; process 0 prints a table on stderr and
 * writes DIR/timings.json (temporary name, then rename; not when dir is
 * NULL). Returns 0, or 1 on
 * process 0 when timings.json could not be written (msg says why). */
int timings_report(MPI_Comm comm, const phase_times_t *mine, const job_size_t *size, int n_procs, const char *dir,
                   char *msg, size_t cap);

#endif
