/* Command-line options of the mergetrace program. */
#ifndef MT_MPI_OPTIONS_H
#define MT_MPI_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mergetrace/gates.h"

/* Exit codes (documented in docs/guide.md, "Exit codes and errors", and --help). */
enum {
    MT_EXIT_OK = 0,
    MT_EXIT_ERROR = 1,     /* I/O error, out of memory, internal error */
    MT_EXIT_BAD_INPUT = 2, /* a trace is not valid JSON / not a trace / no rank / truncated with --strict; traces of
                            * different runs without --force */
    MT_EXIT_GATE = 3,      /* a --gate check failed (the report is still written) */
    MT_EXIT_HANG = 4,      /* Flight Recorder dumps show a hang (the report is still written) */
    /* a --baseline that is not a mergetrace report.json: MT_EXIT_BAD_INPUT */
    MT_EXIT_USAGE = 64,    /* bad command line */
};

/* The exit code for a status of the core: bad input, usage, or any other
 * error. */
int options_exit_code(mt_status_t st);

typedef struct options {
    char **inputs;          /* files and directories, borrowed from argv */
    size_t n_inputs;
    bool recursive;
    bool local;             /* --local: each process reads only its own PATHs; the job is their union */
    bool strict;
    bool force;             /* --force: merge traces that look like different runs (warned) */
    bool quiet;
    bool json;
    bool progress;          /* progress on stderr (default: when stderr is a terminal) */
    bool timings;           /* --timings: phase times and peak RSS on stderr and in timings.json */
    int jobs;               /* -j N: worker threads of a run without a launcher; 0: the CPUs; -1 (default): not given */
    const char *rank_map;
    const char *timeline_map; /* --timeline-map FILE */
    const char *out_dir;    /* -o DIR, default "mergetrace-out" */
    int color;              /* -1 auto, 0 never, 1 always */
    int ref_rank;           /* --ref-rank, -1 = lowest loaded */
    bool no_align;
    bool no_drift;
    bool no_merge;
    /* the PATHs are mergetrace's own merged trace(s): read back by rank, no
     * clock fit and no merged trace written (set by main, not an option) */
    bool merged_input;
#define MERGED_CLOCK_NOTE                                                                                              \
    "a merged trace written by mergetrace, read back by rank: its times were corrected onto one clock when it was "    \
    "written, so no clock is fitted (offsets and drifts 0; the residuals are those of the corrected clocks)"
    bool no_html;           /* --no-html: do not write report.html */
    bool merged_gzip;       /* --merged-format gzip (default) | json */
    bool gpu_only;
    /* --ranks LIST: ranks in the merged timeline (NULL = all) */
    int32_t *merge_ranks;
    size_t n_merge_ranks;
    const char *ranks_arg;  /* --ranks as given (borrowed from argv), for messages */
    const char *window_arg; /* --window as given, likewise */
    /* --window: seconds from the start (window_steps false) or ProfilerStep
     * numbers (true), inclusive; has_window false = everything */
    bool has_window, window_steps;
    double window_a, window_b;
    char *command_line;     /* argv joined, for the report */
    /* The options that every process of a launch must share (main.c): each
     * one given but -o, as "--name" or "--name=value" under its
     * long name, ordered by name (a repeated one in the order given), then
     * without --local the PATHs as given, each ended by a NUL; same_len
     * bytes in all. Owned (options_free). */
    char *same;
    size_t same_len;
    int64_t kernel_wait_ns; /* --kernel-wait-us (default 30 us) */
    bool project_ops;       /* --project-ops */
    int top_kernels;        /* --top-kernels (default 10) */
    int64_t mem_budget;     /* --memory-budget bytes; -1 (default): 90 % of the available memory; 0: none */
    /* pipeline */
    const char *pp_stages;  /* --pp-stages LIST (validated), NULL = none */
    int pp_blocks;          /* --pp N, 0 = none */
    const char *chunk_regex;/* --chunk REGEX, NULL = ProfilerStep#N */
    int warmup;             /* --warmup W (default 1) */
    char *what_if_pattern;  /* --what-if kernel:GLOB=F: the glob, NULL none */
    double what_if_factor;  /* ... and F */
    size_t n_stage;         /* --stage NAME=REGEX[@RANKS], repeatable */
    char **stage_name;      /* each malloc'd */
    char **stage_regex;     /* each malloc'd */
    int32_t **stage_ranks;  /* each malloc'd, sorted; NULL = every rank */
    size_t *stage_n_ranks;
    mt_gate_t *gates;       /* --gate EXPR, repeatable */
    size_t n_gates;
    const char *baseline;   /* --baseline DIR or FILE, borrowed from argv; NULL none */
    bool strict_gates;      /* --strict-gates */
    bool too_few_pass;      /* --too-few-passes */
    char *baseline_text;    /* process 0: the baseline's report.json (outputs_baseline_read) */
    size_t baseline_len;
    char baseline_file[4096]; /* its path */
    bool baseline_traces;   /* --baseline names a directory of traces (no report.json in it): analysed in this run */
    /* What the error lines of a job's loading and checks start with: "" for
     * the run's own PATHs, "--baseline: " while the baseline's traces are
     * analysed (mpi/main.c), so that a bad file is known as the baseline's */
    const char *job_tag;
} options_t;

/* Free what options_parse allocated. */
void options_free(options_t *o);

/* Parse "0-3,8,10-11" into a sorted, de-duplicated list. Returns 0 or -1
 * (with a message in msg). The list is malloc'd. */
int parse_rank_list(const char *s, int32_t **out, size_t *n, char *msg, size_t cap);

/* Parse argv. Returns -1 to continue, or an exit code to stop with (after
 * printing --help / --version to stdout or a usage error to stderr). Only
 * the process that prints (print == true) writes anything. */
int options_parse(int argc, char **argv, options_t *o, bool print);

/* Whether the ranks' times are on one clock for the analyses: aligned by
 * the fit, or a merged trace read back (corrected when it was written). */
static inline bool options_one_clock(const options_t *o)
{
    return !o->no_align || o->merged_input;
}

#endif
