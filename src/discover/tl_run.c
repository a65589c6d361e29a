/* An operation-level timeline analysed whole (mergetrace/tl_run.h): the
 * map and the timeline read, the job model and its critical path, the
 * two reports under temporaries renamed as a pair, the terminal lines. */
#define _POSIX_C_SOURCE 200809L
#include "mergetrace/tl_run.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mergetrace/critpath.h"
#include "mergetrace/input.h"
#include "mergetrace/outdir.h"
#include "mergetrace/report.h"
#include "mergetrace/report_html.h"
#include "mergetrace/timeline.h"
#include "mergetrace/tljob.h"
#include "mergetrace/version.h"

/* A sink's failure as the program reports it: out of memory, or I/O. */
static mt_status_t sink_status(mt_status_t st)
{
    return st == MT_OK || st == MT_ERR_NOMEM ? st : MT_ERR_IO;
}

/* --timeline-map read and parsed into *map. */
static mt_status_t read_map(const char *path, mt_timeline_map_t **map, char *msg, size_t cap)
{
    mt_error_t err;
    mt_error_clear(&err);
    mt_status_t st = mt_input_check_file(path, MT_SIDE_FILE_MAX, "--timeline-map", &err);
    if (st != MT_OK) { /* err.msg names the option and the file */
        snprintf(msg, cap, "%s", err.msg);
        return st;
    }
    char *text = NULL;
    size_t len = 0;
    bool trunc = false;
    st = mt_input_read_file(path, &text, &len, &trunc, &err);
    if (st == MT_OK)
        st = mt_timeline_map_parse(text, len, path, map, &err);
    free(text);
    if (st != MT_OK)
        mt_error_format(&err, msg, cap);
    return st;
}

/* report.json and (with html) report.html under temporaries, then renamed
 * one after the other under the renaming mark: a failure or a kill
 * leaves the last run's pair, never a new report.json beside an old
 * report.html. */
static mt_status_t write_reports(const mt_tl_run_opts_t *o, const mt_timeline_t *tl, const mt_tl_job_t *j,
                                 const mt_critpath_t *c, char *msg, size_t cap)
{
    if (mkdir(o->out_dir, 0777) != 0 && errno != EEXIST) {
        snprintf(msg, cap, "%s: cannot create the output directory (%s)", o->out_dir, strerror(errno));
        return MT_ERR_IO;
    }
    char rp[PATH_MAX], tmp[PATH_MAX + 48], hp[PATH_MAX], htmp[PATH_MAX + 48];
    snprintf(rp, sizeof rp, "%s/report.json", o->out_dir);
    snprintf(hp, sizeof hp, "%s/report.html", o->out_dir);
    htmp[0] = '\0';
    FILE *f = mt_outdir_tmp_create(rp, tmp, sizeof tmp);
    if (!f) {
        snprintf(msg, cap, "%s: %s", tmp, strerror(errno));
        return MT_ERR_IO;
    }
    mt_status_t st = mt_report_timeline_json(o->path, tl, j, c, mt_file_write, f);
    if (fclose(f) != 0 && st == MT_OK)
        st = MT_ERR_IO;
    const char *failed = st != MT_OK ? rp : NULL;
    /* report.html: the ideal what-if's section (S, the heat map) is what a
     * timeline has; the other sections say they are empty */
    if (!failed && o->html) {
        mt_report_t rep = {.version = MERGETRACE_VERSION, .world_size = (int64_t)tl->n_ranks, .aligned = true,
                           .reference_rank = -1, .critpath = c};
        FILE *h = mt_outdir_tmp_create(hp, htmp, sizeof htmp);
        st = h ? mt_report_html(&rep, NULL, mt_file_write, h) : MT_ERR_IO;
        if (h && fclose(h) != 0 && st == MT_OK)
            st = MT_ERR_IO;
        if (st != MT_OK)
            failed = hp;
    }
    if (!failed && mt_outdir_rename(tmp, rp))
        failed = rp;
    if (!failed && htmp[0] && mt_outdir_rename(htmp, hp))
        failed = hp;
    if (failed) {
        snprintf(msg, cap, "%s: cannot write", failed);
        remove(tmp);
        if (htmp[0])
            remove(htmp);
        return MT_ERR_IO;
    }
    mt_outdir_renamed_all();
    return MT_OK;
}

mt_status_t mt_tl_run(const mt_tl_run_opts_t *o, mt_write_fn write, void *ctx, char *msg, size_t cap)
{
    msg[0] = '\0';
    mt_timeline_map_t *map = NULL;
    mt_timeline_t *tl = NULL;
    mt_tl_job_t *j = NULL;
    mt_critpath_t *c = NULL;
    mt_status_t st = o->map_path ? read_map(o->map_path, &map, msg, cap) : MT_OK;
    if (st != MT_OK)
        return st;
    mt_error_t err;
    mt_error_clear(&err);
    st = mt_timeline_load(o->path, map, &tl, &err);
    if (st != MT_OK)
        mt_error_format(&err, msg, cap);
    else if ((st = mt_tl_job_build(tl, &j)) != MT_OK)
        snprintf(msg, cap, "%s: building the job model: %s", o->path, mt_status_str(st));
    else if ((st = mt_tl_job_critpath(j, &c)) != MT_OK)
        snprintf(msg, cap, "critical path: %s", mt_status_str(st));
    else if (o->json)
        st = sink_status(mt_report_timeline_json(o->path, tl, j, c, write, ctx));
    else if ((st = write_reports(o, tl, j, c, msg, cap)) == MT_OK && !o->quiet)
        st = sink_status(mt_report_timeline_text(o->path, tl, j, c, o->out_dir, o->html, write, ctx));
    mt_critpath_free(c);
    mt_tl_job_free(j);
    mt_timeline_free(tl);
    mt_timeline_map_free(map);
    return st;
}
