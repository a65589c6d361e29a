/* An operation-level timeline analysed whole (one file holding every
 * rank on one clock): read with its --timeline-map, the job model built,
 * the critical path and the ideal what-if run, report.json and
 * report.html written under temporaries renamed as a pair, and the
 * terminal lines or report.json into a sink. The program runs it on
 * process 0 (mpi/timeline_run.c); never prints. */
#ifndef MERGETRACE_TL_RUN_H
#define MERGETRACE_TL_RUN_H

#include <stdbool.h>
#include <stddef.h>

#include "mergetrace/buf.h"
#include "mergetrace/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mt_tl_run_opts {
    const char *path;     /* the timeline file */
    const char *map_path; /* --timeline-map FILE, NULL: none */
    const char *out_dir;  /* where report.json (and report.html) go; made when missing (one level) */
    bool json;            /* report.json into the sink alone, no file written */
    bool html;            /* report.html beside report.json */
    bool quiet;           /* no terminal lines */
} mt_tl_run_opts_t;

/* Run o: report.json into write/ctx with o->json, else the two files and
 * (unless quiet) the terminal lines into write/ctx. MT_OK, or the
 * failure's status with the line to say in msg ("" when the sink failed:
 * the program's check of its stream says that): the map's or the
 * timeline's error (their file and position), the job model or the
 * critical path, the output directory or a file that could not be
 * written (MT_ERR_IO; nothing of this run is left then, the last run's
 * pair stays). Writing into the sink fails as MT_ERR_IO or
 * MT_ERR_NOMEM. */
mt_status_t mt_tl_run(const mt_tl_run_opts_t *o, mt_write_fn write, void *ctx, char *msg, size_t cap);

#ifdef __cplusplus
}
#endif

#endif
