/* The terminal on process 0: the run's warnings, and the summary printed
 * on stdout at the end of a run (not with -q or --json). */
#ifndef MT_MPI_TERMINAL_H
#define MT_MPI_TERMINAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "mergetrace/discover.h"
#include "job.h"
#include "mergetrace/mergetrace.h"
#include "options.h"
#include "timings.h"

/* An mt_write_fn onto stdout (ctx unused); MT_ERR_IO when fwrite fails. */
mt_status_t terminal_write(void *ctx, const void *data, size_t len);

/* Process 0: every warning of the run appended to *w (codes in
 * docs/report-schema.md): what the terminal prints under "warnings" and
 * report.json lists. merge_failed: the merged trace was not written. */
void terminal_warnings(const options_t *o, const mt_discover_list_t *l, const job_t *j, bool merge_failed,
                       mt_warnings_t *w);

/* Process 0: the summary of the run on stdout (mt_report_text over rep,
 * the report.json of the run with its warnings), in colour as o->color
 * says (auto: a terminal, not under mpirun, no NO_COLOR). merged_path is
 * NULL when no merged trace was written. Times from pt (load, align,
 * merged_write). removed: the outputs of an earlier run removed from
 * o->out_dir ("a, b"; "" when none), said after what was written. */
void terminal_summary(const options_t *o, const job_t *j, const mt_report_t *rep, const phase_times_t *pt,
                      int n_procs, const char *merged_path, const char *removed);

#endif
