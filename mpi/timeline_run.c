/* An operation-level timeline through the program (timeline_run.h):
 * recognised by its first bytes (a JSON array whose first event has
 * args.step) or named by --timeline-map; read and analysed on process 0. */
#define _POSIX_C_SOURCE 200809L
#include "timeline_run.h"
#include "say.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mergetrace/mergetrace.h"
#include "merged_io.h"
#include "procs.h"

static void print_err(const mt_error_t *err)
{
    char line[1400];
    mt_error_format(err, line, sizeof line);
    say("mergetrace: %s\n", line);
}

/* Process 0's work; the exit code. */
static int run0(const options_t *o)
{
    const char *path = o->inputs[0];
    mt_error_t err;
    mt_error_clear(&err);
    mt_timeline_map_t *map = NULL;
    mt_timeline_t *tl = NULL;
    mt_tl_job_t *j = NULL;
    mt_critpath_t *c = NULL;
    int code = MT_EXIT_ERROR;
    if (o->timeline_map) {
        char *text = NULL;
        size_t len = 0;
        bool trunc = false;
        mt_status_t st = mt_input_check_file(o->timeline_map, MT_SIDE_FILE_MAX, "--timeline-map", &err);
        if (st != MT_OK) { /* err.msg names the option and the file */
            say("mergetrace: %s\n", err.msg);
            return st == MT_ERR_IO ? MT_EXIT_ERROR : MT_EXIT_BAD_INPUT;
        }
        st = mt_input_read_file(o->timeline_map, &text, &len, &trunc, &err);
        if (st == MT_OK)
            st = mt_timeline_map_parse(text, len, o->timeline_map, &map, &err);
        free(text);
        if (st != MT_OK) {
            print_err(&err);
            return options_exit_code(st);
        }
    }
    mt_status_t st = mt_timeline_load(path, map, &tl, &err);
    if (st != MT_OK) {
        print_err(&err);
        code = options_exit_code(st);
        goto out;
    }
    if ((st = mt_tl_job_build(tl, &j)) != MT_OK) {
        say("mergetrace: %s: building the job model: %s\n", path, mt_status_str(st));
        code = options_exit_code(st);
        goto out;
    }
    st = mt_tl_job_critpath(j, &c);
    if (st != MT_OK) {
        say("mergetrace: critical path: %s\n", mt_status_str(st));
        code = options_exit_code(st);
        goto out;
    }
    if (o->json) {
        st = mt_report_timeline_json(path, tl, j, c, mt_file_write, stdout);
    } else {
        if (mkdir(o->out_dir, 0777) != 0 && errno != EEXIST) {
            say("mergetrace: %s: cannot create the output directory (%s)\n", o->out_dir, strerror(errno));
            goto out;
        }
        /* both outputs under temporary names first, then renamed one after
         * the other under the renaming mark: a failure or a kill leaves the
         * last run's pair, never a new report.json beside an old report.html */
        char rp[PATH_MAX], tmp[PATH_MAX + 48], hp[PATH_MAX], htmp[PATH_MAX + 48];
        snprintf(rp, sizeof rp, "%s/report.json", o->out_dir);
        snprintf(hp, sizeof hp, "%s/report.html", o->out_dir);
        htmp[0] = '\0';
        FILE *f = mt_outdir_tmp_create(rp, tmp, sizeof tmp);
        if (!f) {
            say("mergetrace: %s: %s\n", tmp, strerror(errno));
            goto out;
        }
        st = mt_report_timeline_json(path, tl, j, c, mt_file_write, f);
        if (fclose(f) != 0 && st == MT_OK)
            st = MT_ERR_IO;
        const char *failed = st != MT_OK ? rp : NULL;
        /* report.html: the ideal what-if's section (S, the heat map) is
         * what a timeline has; the other sections say they are empty */
        if (!failed && !o->no_html) {
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
            say("mergetrace: %s: cannot write\n", failed);
            remove(tmp);
            if (htmp[0])
                remove(htmp);
            st = MT_ERR_IO;
            goto out;
        }
        mt_outdir_renamed_all();
        if (!o->quiet)
            st = mt_report_timeline_text(path, tl, j, c, o->out_dir, !o->no_html, mt_file_write, stdout);
    }
    code = st == MT_OK && fflush(stdout) == 0 ? MT_EXIT_OK : MT_EXIT_ERROR;
out:
    mt_critpath_free(c);
    mt_tl_job_free(j);
    mt_timeline_free(tl);
    mt_timeline_map_free(map);
    return code;
}

int timeline_run(MPI_Comm comm, const options_t *o)
{
    int me;
    procs_comm_rank(comm, &me);
    int mode = 0; /* 0: not a timeline; 1: one; 2: --timeline-map with other than one file */
    if (me == 0) {
        if (o->timeline_map)
            mode = o->n_inputs == 1 ? 1 : 2;
        else if (o->n_inputs == 1 && mt_timeline_probe_file(o->inputs[0]))
            mode = 1;
    }
    procs_bcast(&mode, 1, MPI_INT, 0, comm);
    if (!mode)
        return -1;
    int code = MT_EXIT_USAGE;
    if (me == 0) {
        if (mode == 2)
            say("mergetrace: --timeline-map: expected exactly one timeline file\n");
        else
            code = run0(o);
    }
    procs_bcast(&code, 1, MPI_INT, 0, comm);
    return code;
}
