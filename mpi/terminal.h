/* The terminal summary that process 0 prints on stdout at the end of a run
 * (not with -q or --json). */
#ifndef MT_MPI_TERMINAL_H
#define MT_MPI_TERMINAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "inputs.h"
#include "job.h"
#include "mergetrace/mergetrace.h"
#include "options.h"
#include "timings.h"

/* An mt_write_fn onto stdout (ctx unused); MT_ERR_IO when fwrite fails. */
mt_status_t terminal_write(void *ctx, const void *data, size_t len);

/* Process 0: the summary of the run on stdout, in colour as o->color
 * says (auto: a terminal, not under mpirun, no NO_COLOR). merged_path is
 * NULL when no merged trace was written (merge_failed: because it failed,
 * which the warnings repeat). Times from pt (load, align, merged_write).
 * removed: the outputs of an earlier run removed from o->out_dir ("a, b";
 * "" when none), said after what was written. */
void terminal_summary(const options_t *o, const input_list_t *l, const job_t *j, const phase_times_t *pt, int n_procs,
                      const char *merged_path, uint64_t merged_events, bool merge_failed, const char *removed);

#endif
