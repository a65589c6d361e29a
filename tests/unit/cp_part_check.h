/* The partitioned replay (src/cross/cp_part.c) checked against every
 * one-process sweep of mt_critpath_run (cp_replay_probe): each sweep's
 * ranks split over 2 and 3 virtual processes, interleaved and in blocks,
 * each replaying the graph of its own ranks (cp_part_cut) in supersteps
 * with the messages moved here between them, and every node's replayed
 * start and end, sync shift, rank step end and instance last arrival
 * compared, mapped back to the whole graph, to the bit, with the sweep's;
 * each process's graph, replay arrays and plan measured in bytes; each
 * process's graph also built from its ranks' analyses and job-wide inputs
 * (cp_part_build), checked equal to the cut one field for field and
 * replayed in its place. Used by
 * test_cp_part.c and by the program built with it (mergetrace_partcheck,
 * tests/CMakeLists.txt). */
#ifndef MT_TEST_CP_PART_CHECK_H
#define MT_TEST_CP_PART_CHECK_H

#include <stdint.h>
#include <stdio.h>

typedef struct cp_part_stats {
    uint64_t sweeps;        /* lanes x layouts replayed in supersteps */
    uint64_t failures;      /* values unequal, or supersteps that stopped moving */
    uint64_t values;        /* values compared */
    uint64_t second;        /* of the lane replays, second passes (the edge to the next step: cd_on) */
    /* [0]: steps apart (each job step its own stream), [1]: carried (a pipeline) */
    uint64_t rounds_max[2]; /* the most rounds one replay took */
    uint64_t est_step[2];   /* the design's estimate at that replay: the most shared instances
                             * one rank meets in one job step */
    uint64_t est_run[2];    /* ... in the whole run (the carried chain's bound) */
    uint64_t msgs_max[2];   /* messages (contributions and answers) of that replay */
    uint64_t chain[2];      /* ... and its longest chain of shared instances (the least rounds) */
    double share_max[2];    /* at 2 and 3 processes: the largest process's graph (cp_part_cut, with
                             * its instances' cp_part_inst_t) over the whole job's (cp_part_graph_bytes) */
    uint64_t bytes_most[2]; /* ... its bytes */
    uint64_t bytes_whole;   /* ... and the whole graph's */
    uint64_t bytes[2][2][3]; /* the last graph's, by processes (2, 3), layout (in turn, in blocks)
                              * and process: each process's graph */
    uint64_t rp_bytes[2][2][3]; /* ... its replay arrays a lane (cp_rp_alloc's) */
    uint64_t rp_whole;      /* ... and the whole graph's */
    uint64_t eng_bytes[2][2][3]; /* ... its plan and a lane's supersteps state (cp_part_plan_t,
                              * cp_part_t) */
    uint64_t graphs_built;  /* process graphs built by cp_part_build equal to cp_part_cut's */
    uint64_t build_values;  /* ... fields compared */
    uint64_t in_job[2][2][3]; /* the last graph's inputs, as bytes above: job-wide (the job steps'
                              * numbers, the instances touched: cp_part_xinst_t) */
    uint64_t in_own[2][2][3]; /* ... the process's own lists (members, extra syncs, absent nodes) */
    uint64_t in_steps;      /* ... its job steps */
    char first[512];        /* the first failure */
} cp_part_stats_t;

extern cp_part_stats_t cp_part_stats;

/* Check every sweep from now on (sets cp_replay_probe). */
void cp_part_check_install(void);

/* No more checks (clears cp_replay_probe). */
void cp_part_check_remove(void);

/* The statistics so far, one line, on f. */
void cp_part_check_print(FILE *f, const char *tag);

#endif
