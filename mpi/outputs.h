/* The outputs of a run: the output directory, the merged trace written by
 * every process (mpi/merged_io.c), report.json and report.html with the
 * summary on process 0 (src/discover/job_outputs.c, with the exit code
 * they make here), and --timings. */
#ifndef MT_MPI_OUTPUTS_H
#define MT_MPI_OUTPUTS_H

#include <limits.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>

#include "mergetrace/discover.h"
#include "job.h"
#include "load.h"
#include "mergetrace/mergetrace.h"
#include "options.h"
#include "timings.h"

/* The merged trace: where, and how its write went. */
typedef struct merged_out {
    char path[PATH_MAX];     /* DIR/merged.json.gz or DIR/merged.json ("" until outputs_prepare) */
    uint64_t events;
    bool helper;             /* this process deflated on a helper thread */
    bool failed;             /* the write failed (said on stderr); the report is still written */
    mt_fr_placed_t fr;       /* process 0: how Flight Recorder dumps beside the traces were placed in it */
} merged_out_t;

/* Collective: process 0 creates the output directory o->out_dir, names the
 * merged trace in m->path, and checks that neither is one of the inputs.
 * MT_EXIT_OK or MT_EXIT_ERROR (process 0 printed why), the same
 * everywhere. */
int outputs_prepare(MPI_Comm comm, const options_t *o, const mt_discover_list_t *files, merged_out_t *m);

/* Collective: the --window turned into corrected times (from every rank's
 * ProfilerStep ranges when it names steps), then every process writes the
 * ranks it loaded (L) into the merged trace m->path with the clocks of
 * j->al. MT_EXIT_OK, MT_EXIT_USAGE (the window's steps are in no trace) or
 * MT_EXIT_ERROR (m->failed), the same everywhere; process 0 printed why.
 * pt->seconds[MT_TPH_MERGED_WRITE]. */
int outputs_merged(MPI_Comm comm, const mt_comm_t *mc, const options_t *o, const mt_discover_list_t *files,
                   const mt_ingest_t *L, const job_t *j, merged_out_t *m, mt_timings_t *pt);

/* Process 0, before the run's work: read --baseline (a directory's
 * report.json, or the file) into o->baseline_text and check that it is a
 * mergetrace report. A directory without report.json is one of traces:
 * o->baseline_traces is set (and o->baseline_file names
 * DIR/baseline/report.json of -o) and nothing is read; mpi/main.c analyses
 * it. An exit code: MT_EXIT_OK, MT_EXIT_BAD_INPUT (missing, not JSON, not a
 * report: one line on stderr), MT_EXIT_USAGE (a directory of traces with
 * --local or --timeline-map) or MT_EXIT_ERROR. */
int outputs_baseline_read(options_t *o);

/* Process 0, after the baseline's traces were analysed into j (with the
 * options ob, its files): the baseline's report.json, built as a run's own
 * (no merged trace, no gates), kept in o->baseline_text for the comparison
 * and written to o->baseline_file (DIR/baseline/report.json, temporary name
 * then renamed) for a later --baseline; its warnings (a truncated trace,
 * skipped files, missing ranks) also on stderr unless -q. MT_EXIT_OK or
 * MT_EXIT_ERROR (one line on stderr). */
int outputs_baseline_job(options_t *o, const options_t *ob, const mt_discover_list_t *files, job_t *j);

/* Process 0, when the run got this far (code MT_EXIT_OK, or a failed merged
 * write): the job's outputs (mt_job_outputs: report.json and report.html,
 * then report.json or the summary on stdout, none with -q; the lines on
 * stderr, the failed gates' among them), and stdout checked for write
 * errors. Returns the run's exit code from code: MT_EXIT_HANG when the
 * dumps show a hang, else MT_EXIT_GATE when a gate failed, MT_EXIT_ERROR
 * on an error (said, once). */
int outputs_report(const options_t *o, const mt_discover_list_t *files, job_t *j, const merged_out_t *m,
                   const mt_timings_t *pt, int n_procs, int code);

/* Process 0, Flight Recorder dumps alone, after the merged trace of their
 * entries (merged_path; NULL when not written): their outputs
 * (mt_job_outputs_fr_alone) and stdout checked. MT_EXIT_HANG when the
 * dumps show a hang, MT_EXIT_OK, or MT_EXIT_ERROR (said). */
int outputs_fr_alone(const options_t *o, const mt_fr_job_t *fr, const char *merged_path);

/* Collective, with --timings only: the phase times of every process (pt,
 * completed by mt_job_timings from j, L and files, then from m and
 * t_start, the MPI_Wtime of the start)
 * reduced and printed on stderr by process 0, and written into
 * timings.json beside the outputs when wrote_outputs. Returns code, or
 * MT_EXIT_ERROR when timings.json could not be written on a run that had
 * succeeded. */
int outputs_timings(MPI_Comm comm, const options_t *o, const mt_discover_list_t *files, const mt_ingest_t *L, const job_t *j,
                    const merged_out_t *m,
                    mt_timings_t *pt, double t_start, bool wrote_outputs, int code);

#endif
