/* The outputs of a job on process 0, after the merged trace: report.json
 * (compared with a --baseline, its gates evaluated again against it) and
 * report.html written into the output directory under temporaries and
 * renamed, the outputs of an earlier run that this one does not write
 * removed, then report.json or the terminal summary with the hang
 * analysis into the program's stream, and the lines to say on stderr
 * through a note callback; the baseline's own report.json; the report of
 * Flight Recorder dumps alone. Never prints: the program passes its
 * stream (stdout) and says the notes. */
#ifndef MERGETRACE_JOB_OUTPUTS_H
#define MERGETRACE_JOB_OUTPUTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mergetrace/buf.h"
#include "mergetrace/fr_share.h"
#include "mergetrace/gates.h"
#include "mergetrace/job_state.h"
#include "mergetrace/outdir.h"
#include "mergetrace/report.h"
#include "mergetrace/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What of the run's options the outputs read. Borrowed. */
typedef struct mt_job_out_opts {
    const char *out_dir;
    mt_job_report_opts_t report;    /* what report.json says of the run's options */
    mt_outdir_outputs_t outputs;    /* what this run writes (merge, html, ...): the rest is removed */
    const char *command_line;       /* report.html's */
    bool json;                      /* report.json into the stream instead of the summary */
    bool quiet;                     /* -q: neither (the failed gates are still said) */
    /* --baseline: its report.json's text (NULL: no comparison) and path;
     * the gates evaluated again against it (relative ones) */
    const char *baseline_text;
    size_t baseline_len;
    const char *baseline_file;
    mt_gate_t *gates;
    size_t n_gates;
    bool strict_gates, too_few_pass;
    /* the summary's facts from the program (colour, processes, times,
     * out_dir, html); merged_path, removed and mixed_runs are filled here */
    mt_report_text_opts_t text;
} mt_job_out_opts_t;

/* The merged trace as it was written. */
typedef struct mt_job_out_merged {
    const char *path;          /* its path ("" or NULL when none was to be written) */
    bool failed;               /* its write failed: nothing of this run is written */
    uint64_t events;
    const mt_fr_placed_t *fr;  /* how Flight Recorder dumps were placed in it */
} mt_job_out_merged_t;

/* Process 0: the outputs of job j (its files, its merged trace m) as the
 * type's comment says. After a failed merged trace nothing is written
 * (the directory keeps the last run's outputs, whole) but the summary
 * still goes to the stream. j->gates_failed counts again after a
 * comparison; j->nccl_rep is filled. Each failure's line goes to note
 * once ("out of memory", a file that could not be written, the
 * comparison's error; one message per run: after a failed merge, whose
 * error was said, report.json's failure is not), then the failed gates'
 * lines (mt_gate_failure), even with quiet or json. Returns MT_OK, or the
 * last failure's status: MT_ERR_FORMAT (the baseline cannot be compared),
 * MT_ERR_NOMEM, MT_ERR_IO (a file or the stream). */
mt_status_t mt_job_outputs(const mt_job_out_opts_t *o, const mt_discover_list_t *files, mt_job_t *j,
                           const mt_job_out_merged_t *m, mt_write_fn out, void *out_ctx, mt_outdir_note_fn note,
                           void *note_ctx);

/* Process 0, after the baseline's traces were analysed into j (its files,
 * ro its options' part): the baseline's report.json, built as a run's own
 * (no merged trace, no gates), into *text (set, not appended to; the
 * caller frees it with mt_buf_free) and written to out_dir/baseline/report.json (made when
 * missing; temporary name then renamed) for a later --baseline; its
 * warnings (a truncated trace, skipped files, missing ranks) to note as
 * "--baseline: warning: ..." unless quiet. MT_OK, or MT_ERR_NOMEM /
 * MT_ERR_IO after note said why (*text empty). */
mt_status_t mt_job_outputs_baseline(const mt_job_report_opts_t *ro, const mt_discover_list_t *files, mt_job_t *j,
                                    const char *out_dir, bool quiet, mt_buf_t *text, mt_outdir_note_fn note,
                                    void *note_ctx);

/* Process 0, Flight Recorder dumps alone (no trace), after the merged
 * trace of their entries (merged_path, NULL when not written):
 * report.json and (html) report.html into o->out_dir, report.json into
 * the stream with o->json, else (unless quiet) the count of dumps and
 * entries, the hang analysis and what was written; the outputs' renaming
 * mark removed once all is done. MT_OK, or MT_ERR_NOMEM / MT_ERR_IO with
 * the line to say in msg ("" when the summary's writing failed). */
mt_status_t mt_job_outputs_fr_alone(const mt_job_out_opts_t *o, const mt_fr_job_t *fr, const char *merged_path,
                                    mt_write_fn out, void *out_ctx, char *msg, size_t cap);

#ifdef __cplusplus
}
#endif

#endif
