/* A job on process 0 after loading: its traces' results by rank, the
 * ranks missing, its NCCL files, the alignment, and what the cross-rank,
 * pipeline, critical-path and gate steps computed; the report.json and
 * the warnings built from it. The program (mpi/job.c) fills it step by
 * step, process 0's steps after the alignment through mt_job_cross;
 * serial (but for the critical path's reductions over mt_comm_t), never
 * printing. */
#ifndef MERGETRACE_JOB_STATE_H
#define MERGETRACE_JOB_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mergetrace/analysis.h"
#include "mergetrace/collectives.h"
#include "mergetrace/comm.h"
#include "mergetrace/crossrank.h"
#include "mergetrace/critpath.h"
#include "mergetrace/discover.h"
#include "mergetrace/fr_share.h"
#include "mergetrace/gates.h"
#include "mergetrace/ingest.h"
#include "mergetrace/memory.h"
#include "mergetrace/nccl_join.h"
#include "mergetrace/pipeline.h"
#include "mergetrace/report.h"
#include "mergetrace/report_html.h"
#include "mergetrace/report_timings.h"
#include "mergetrace/trust.h"
#include "mergetrace/warnings.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Process 0's memory plan for the cross-rank steps (mpi/job.c job_plan),
 * for the run and for --timings. */
typedef struct mt_job_plan {
    uint64_t acts, rows;     /* the job's GPU activities and collective rows (counted at the check) */
    uint64_t steps;          /* and ProfilerSteps: none, no critical path to leave out */
    uint64_t rss;            /* process 0's resident set at the plan */
    uint64_t without, with;  /* mt_critpath_memory */
    uint64_t budget;         /* bytes; 0: none */
    bool skipped;            /* the critical path left out */
} mt_job_plan_t;

/* Process 0's view of the job after loading, and what the steps after it
 * computed. Start zeroed; free with mt_job_free. */
typedef struct mt_job {
    mt_ingest_result_t *res;      /* traces sorted by rank, then the skipped files (borrowed: the gathered results) */
    size_t n;                     /* traces */
    mt_ingest_result_t *skipped;
    size_t n_skipped;
    int64_t world;
    bool world_disagree;
    int64_t *missing;             /* the first MT_TRUST_MISSING_LISTED absent ranks (mt_trust_world) */
    size_t n_missing;
    int64_t n_absent;             /* every rank below world with no trace */
    mt_nccl_job_t nccl;           /* the NCCL plugin files, by rank */
    mt_report_nccl_t *nccl_rep;   /* nccl.n entries for report.json (mt_report_nccl_files); NULL: not yet */
    const mt_fr_job_t *fr;        /* Flight Recorder dumps beside the traces; NULL: none (borrowed) */
    /* every process: the loaded ranks, sorted, and the alignment (clocks
     * everywhere; rows and the match on process 0 only) */
    int32_t *ranks;
    uint64_t n_ranks;
    mt_align_result_t al;
    /* process 0 */
    mt_rank_analysis_t **an; /* n slots: the n_an results first, by rank (ranks with NCCL data only have none) */
    size_t n_an;
    mt_cross_t *cross;
    mt_pipeline_t *pipe;     /* NULL: no pipeline section */
    mt_critpath_t *cp;       /* steps and critical path; NULL: no ProfilerStep */
    mt_mem_cross_t *memory;  /* NULL: no memory events in any trace */
    char pipe_note[512];     /* a line for the report about the pipeline, "" none */
    mt_report_views_t *views;
    size_t gates_failed;
    mt_trust_t trust;        /* do the traces belong to one run; how good is the fit */
    mt_job_plan_t plan;      /* every process: plan.skipped; the rest on process 0 */
    /* every process: the analyses of its ranks for the critical path's
     * whole-job statistics (mt_cp_dist_reduce): process 0 passes every one
     * of an (borrowed), the others their own, unpacked (owned); none when
     * the critical path is left out */
    mt_rank_analysis_t **mine;
    size_t n_mine;
    bool mine_owned;
    const mt_comm_t *mc;     /* the processes the reductions run over */
} mt_job_t;

/* What mt_job_check found wrong with the job. */
typedef enum mt_job_bad {
    MT_JOB_GOOD = 0,
    MT_JOB_NO_TRACE,  /* no trace among the results (j->skipped[0] is one file and why) */
    MT_JOB_UNRANKED,  /* a trace that named no rank among several (*which; its message says why) */
    MT_JOB_TWICE,     /* two traces of one rank: which[-1] and *which */
    MT_JOB_EMPTY,     /* no trace left once NCCL files joined theirs */
    MT_JOB_NOMEM,
} mt_job_bad_t;

/* Process 0: the gathered results res[0..n_res) ordered (traces by rank,
 * then the skipped files in input order: mt_ingest_sort), NCCL files
 * joined to their rank's trace (mt_ingest_nccl_join, paths from l), the
 * rank set checked (a trace without a rank, a rank twice) and the world
 * worked out (mt_trust_world: its size, whether the traces disagree on
 * it, the ranks missing), into *j (zeroed first; res borrowed, must
 * outlive j), with the GPU activities, rows and steps of every file loaded
 * counted into j->plan. MT_JOB_GOOD, or what is wrong (*which, for
 * MT_JOB_UNRANKED and MT_JOB_TWICE, points into res). */
mt_job_bad_t mt_job_check(const mt_discover_list_t *l, mt_ingest_result_t *res, size_t n_res, mt_job_t *j,
                          const mt_ingest_result_t **which);

/* The line the program says for what mt_job_check found (bad, *which
 * its which), after "mergetrace: ", starting with tag ("--baseline: "
 * while the baseline's job is checked, else ""); local: --local (a rank
 * twice names the processes). The status whose exit code applies:
 * MT_OK for MT_JOB_GOOD (msg ""), MT_ERR_FORMAT for a job that is bad
 * input, MT_ERR_NOMEM ("out of memory"); for MT_JOB_EMPTY, which
 * cannot happen (a trace an NCCL file joins stays), MT_ERR_IO with msg
 * "" (exit 1 without a word, as before). */
mt_status_t mt_job_check_text(mt_job_bad_t bad, const mt_discover_list_t *l, const mt_job_t *j,
                              const mt_ingest_result_t *which, size_t n_res, bool local, const char *tag, char *msg,
                              size_t cap);

/* Process 0, after the alignment: j->trust (mt_trust_check: do the traces
 * belong to one run, how good is the fit; aligned: one clock for the job)
 * and whether two traces start days apart on the clock (mt_trust_apart:
 * *far, with the two traces' indexes in j->res in *a and *b and how far
 * apart in *apart_ns). MT_OK, or the check's status (*checked true), or
 * MT_ERR_NOMEM before it (*checked false). */
mt_status_t mt_job_trust(mt_job_t *j, bool aligned, bool *far, size_t *a, size_t *b, double *apart_ns,
                         bool *checked);

/* Process 0's memory plan for the cross-rank steps into j->plan (its
 * GPU activities, rows and steps counted by mt_job_check): rss, the
 * resident set now (the program's measure, after giving its free heap
 * back); mt_critpath_memory's growth without and with the critical path
 * for j->n ranks; the budget, mem_budget bytes when above 0 (--memory-budget),
 * none when 0, and when below 0 (not given) nine tenths of available, the
 * bytes the machine has now (a tenth kept for the outputs and for the
 * projection's error: docs/PERFORMANCE.md "Process 0's memory budget").
 * Returns whether the critical path is to be left out: the job has steps,
 * there is a budget, and the growth with it is over the budget. Sets no
 * j->plan.skipped: every process learns it from the program. */
bool mt_job_plan_set(mt_job_t *j, int64_t mem_budget, uint64_t rss, uint64_t available);

/* --timings (mergetrace/report_timings.h): what the job and this
 * process's load know, into *t before the program's reductions: n_procs;
 * the loader's and the per-rank passes' seconds and the largest trace
 * loaded here (L); the match's and the clock fit's seconds, their CPU
 * seconds and how many processes matched (j->al); the memory plan
 * (j->plan: process 0's); on process 0 (me == 0) the job's ranks, their
 * JSON bytes and events (j's traces), and the input files each of the
 * n_procs processes was given (files' owners), in the array returned,
 * which t->files borrows (the caller frees it; NULL elsewhere, or out of
 * memory: t->files NULL, "not known"). The program's own measures (the
 * phases' wall times, the load's CPU seconds, the helper threads, the
 * cross-rank steps' from mt_job_cross) are left as they are. */
uint64_t *mt_job_timings(const mt_job_t *j, const mt_ingest_t *L, const mt_discover_list_t *files, int me,
                         int n_procs, mt_timings_t *t);

/* What of the run's options process 0's steps after the alignment read
 * (mt_job_cross). Borrowed: must outlive the call. */
typedef struct mt_job_cross_opts {
    bool aligned;                 /* one clock for the job (not --no-align) */
    bool force;                   /* --force: traces of different runs analysed anyway */
    bool html;                    /* report.html's pictures built (not --no-html) */
    mt_pp_request_t pp;           /* the pipeline's options; pp.warmup also the critical path's */
    const char *what_if_pattern;  /* --what-if kernel:GLOB=F; NULL none */
    double what_if_factor;
    mt_gate_t *gates;             /* --gate, evaluated in place */
    size_t n_gates;
    /* the program's heap policy (never the core's): the free heap handed
     * back once the critical path is done with an input, and the peak
     * resident set; NULL: none */
    void (*heap_give_back)(void);
    uint64_t (*heap_peak)(void);
} mt_job_cross_opts_t;

/* The step of mt_job_cross that failed, for the program's message. */
typedef enum mt_job_step {
    MT_JOB_STEP_NONE = 0,
    MT_JOB_STEP_TRUST_NOMEM, /* out of memory before the one-run check */
    MT_JOB_STEP_TRUST,       /* the one-run check (mt_trust_check) failed */
    MT_JOB_STEP_FAR,         /* two traces, j->res[a] and [b], start apart_ns apart on the clock */
    MT_JOB_STEP_MIXED,       /* j->res[a] and [b] are not of one run (j->trust.why), no --force */
    MT_JOB_STEP_CROSS,       /* the cross-rank analyses */
    MT_JOB_STEP_PIPELINE,
    MT_JOB_STEP_MEMORY,      /* memory across ranks */
    MT_JOB_STEP_VIEWS,       /* report.html's pictures */
    MT_JOB_STEP_CRITPATH,    /* steps, critical path, what-ifs */
} mt_job_step_t;

/* Which step failed, and for MT_JOB_STEP_FAR and _MIXED the two traces
 * (indexes into j->res) and how far apart. */
typedef struct mt_job_cross_fail {
    mt_job_step_t step;
    size_t a, b;
    double apart_ns;
} mt_job_cross_fail_t;

/* Process 0, after the alignment; collective with mt_job_cp_serve on the
 * other processes over j->mc (the critical path's whole-job reductions;
 * end them with mt_job_cp_stop whatever this returns). Whether the traces
 * are of one run (mt_job_trust: days apart, or of different runs without
 * o->force, are MT_ERR_FORMAT), the cross-rank analyses, the pipeline
 * (mt_pp_run), memory across ranks, report.html's views (o->html), the
 * critical path (not when j->plan.skipped; it frees j->al's rows and
 * match and the analyses' GPU activities once used) and the gates
 * (o->gates evaluated in place, j->gates_failed), into *j. Its times for
 * --timings into *t: seconds[MT_TPH_CROSS_RANK] and cross_rank_cpu (the
 * one-run check, the cross-rank analyses, the pipeline and the critical
 * path), critpath and critpath_cpu (the critical path alone) and
 * critpath_rss_growth (the peak resident set's growth during it, 0
 * without o->heap_peak); the rest of *t untouched.
 * MT_OK, or the failed step's status with *f saying which. */
mt_status_t mt_job_cross(const mt_job_cross_opts_t *o, mt_job_t *j, mt_timings_t *t, mt_job_cross_fail_t *f);

/* The line the program says for mt_job_cross's failure st at f (after
 * "mergetrace: ", starting with tag but for "out of memory" and
 * report.html's views; paths from l; no_align: --no-align, the clock
 * two traces are days apart on). The status whose exit code applies:
 * MT_OK for MT_JOB_STEP_NONE (msg ""), MT_ERR_FORMAT for traces that do
 * not go together, MT_ERR_NOMEM, else st. */
mt_status_t mt_job_cross_text(mt_status_t st, const mt_job_cross_fail_t *f, const mt_discover_list_t *l,
                              const mt_job_t *j, bool no_align, const char *tag, char *msg, size_t cap);

/* Collective, the processes other than 0 while process 0 is in
 * mt_job_cross: each critical-path reduction taken part in (with j->mine)
 * until mt_job_cp_stop; then j->mine freed where owned. */
void mt_job_cp_serve(mt_job_t *j);

/* Process 0, after mt_job_cross: the others' mt_job_cp_serve returns. */
void mt_job_cp_stop(mt_job_t *j);

/* Frees what the steps put in *j (not res, borrowed) and zeroes it. */
void mt_job_free(mt_job_t *j);

/* What of the run's options the report carries. */
typedef struct mt_job_report_opts {
    bool aligned;               /* one clock for the job (not --no-align, or a merged trace read back) */
    const char *clock_note;     /* why no clock was fitted; NULL: none */
    const mt_gate_t *gates;     /* evaluated; borrowed */
    size_t n_gates;
} mt_job_report_opts_t;

/* The report of job j in *rep, without the merged trace, the warnings and
 * the comparison (its NCCL files: j->nccl_rep as it is). *ri and *rs (malloc'd: the caller frees them, also on
 * failure) are the arrays rep's inputs and skipped files point into;
 * everything else is borrowed from j, files and ro. MT_OK or
 * MT_ERR_NOMEM. */
mt_status_t mt_job_report(const mt_discover_list_t *files, const mt_job_t *j, const mt_job_report_opts_t *ro,
                          mt_report_input_t **ri, mt_report_skip_t **rs, mt_report_t *rep);

/* Every warning of job j into *w (mt_report_warnings over rep, j's
 * report; merge_failed: the merged trace was not written). MT_OK or
 * MT_ERR_NOMEM (also in w->st). */
mt_status_t mt_job_warnings(const mt_job_t *j, const mt_report_t *rep, bool merge_failed, mt_warnings_t *w);

#ifdef __cplusplus
}
#endif
#endif
