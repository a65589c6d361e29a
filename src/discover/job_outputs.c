/* The outputs of a job on process 0 (mergetrace/job_outputs.h): the
 * report built, compared with the baseline, written and renamed, the
 * stale outputs removed, the summary and the hang analysis into the
 * program's stream, the lines to say through a note callback. */
#define _POSIX_C_SOURCE 200809L
#include "mergetrace/job_outputs.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/text.h"
#include "mergetrace/compare.h"
#include "mergetrace/discover.h"
#include "mergetrace/fr_hang.h"
#include "mergetrace/report_html.h"

/* What write_report renders: report.json, or report.html with html. */
typedef struct report_out {
    const mt_report_t *rep;
    const mt_html_opts_t *html;
} report_out_t;

static mt_status_t render_report(const void *arg, mt_write_fn write, void *ctx)
{
    const report_out_t *r = arg;
    return r->html ? mt_report_html(r->rep, r->html, write, ctx) : mt_report_json(r->rep, write, ctx);
}

static mt_status_t render_compare(const void *arg, mt_write_fn write, void *ctx)
{
    return mt_compare_json(arg, write, ctx);
}

/* report.json (html NULL) or report.html as out_dir/name
 * (mt_outdir_write). text, when not NULL, is report.json already
 * rendered. */
static int write_report(const char *out_dir, const char *name, const mt_report_t *rep, const mt_html_opts_t *html,
                        const mt_buf_t *text, char *msg, size_t cap)
{
    report_out_t r = {.rep = rep, .html = html};
    return text ? mt_outdir_write(out_dir, name, mt_outdir_bytes, text, MT_OUTDIR_SAY_NOMEM, msg, cap)
                : mt_outdir_write(out_dir, name, render_report, &r, MT_OUTDIR_SAY_NOMEM, msg, cap);
}

/* j->nccl_rep filled for report.json from j->nccl (paths borrowed from the
 * input list), once. */
static mt_status_t nccl_report(mt_job_t *j)
{
    return j->nccl_rep ? MT_OK : mt_report_nccl_files(&j->nccl, &j->nccl_rep);
}

/* The report of j with its warnings and NCCL files: rep, *ri, *rs as
 * mt_job_report's (the caller frees *ri and *rs, also on failure), *warn
 * (mt_warnings_free). MT_OK or MT_ERR_NOMEM; *built: rep is a report
 * (mt_job_report went well, the rest may not have). */
static mt_status_t report_of(const mt_job_report_opts_t *ro, const mt_discover_list_t *files, mt_job_t *j,
                             bool merge_failed, const char *merged_path, uint64_t events, mt_report_input_t **ri,
                             mt_report_skip_t **rs, mt_report_t *rep, mt_warnings_t *warn, bool *built)
{
    *built = mt_job_report(files, j, ro, ri, rs, rep) == MT_OK;
    if (!*built)
        return MT_ERR_NOMEM;
    rep->merged = merged_path && !merge_failed ? mt_discover_base(merged_path) : NULL;
    rep->merged_events = events;
    mt_job_warnings(j, rep, merge_failed, warn);
    rep->warnings = warn;
    mt_status_t st = warn->st != MT_OK ? MT_ERR_NOMEM : nccl_report(j);
    rep->nccl = j->nccl_rep;
    return st;
}

/* The comparison with the baseline: this run's report.json rendered in
 * memory (into *buf) and read back beside the baseline's, the gates
 * evaluated again against it. NULL, with *st and the line said, on
 * failure. */
static mt_compare_t *compare_run(const mt_job_out_opts_t *o, const mt_report_t *rep, mt_job_t *j, mt_buf_t *buf,
                                 mt_status_t *st, mt_outdir_note_fn note, void *nctx)
{
    mt_compare_t *c = NULL;
    mt_error_t err;
    mt_error_clear(&err);
    mt_status_t cst = mt_report_json(rep, mt_buf_write, buf);
    if (cst == MT_OK)
        cst = mt_compare_reports(o->baseline_text, o->baseline_len, o->baseline_file, (const char *)buf->data,
                                 buf->len, "report.json", NULL, &c, &err);
    if (cst != MT_OK) {
        char line[1200], said[1300];
        snprintf(said, sizeof said, "comparing with the baseline: %s", mt_error_format(&err, line, sizeof line));
        note(nctx, said);
        *st = cst == MT_ERR_NOMEM ? MT_ERR_NOMEM : MT_ERR_FORMAT;
        return NULL;
    }
    if (o->n_gates)
        j->gates_failed = mt_compare_gates(c, o->gates, o->n_gates, o->strict_gates, o->too_few_pass);
    return c;
}

/* The verdict of Flight Recorder dumps beside the traces (or of the NCCL
 * plugin's files of a job that hung), after the summary; placed: how they
 * went into the merged trace (NULL: not). */
static void fr_text(const mt_fr_job_t *fr, const mt_fr_placed_t *placed, mt_write_fn out, void *ctx)
{
    mt_out_t t = {.w = out, .ctx = ctx};
    if (fr->from_nccl)
        mt_out_printf(&t, "\nNCCL plugin files with collectives in flight at their end (%zu file%s): hang analysis\n",
                      fr->n, fr->n == 1 ? "" : "s");
    else
        mt_out_printf(&t, "\nflight recorder (%zu dump%s):\n", fr->n, fr->n == 1 ? "" : "s");
    mt_fr_hang_write_text(&fr->hang, out, ctx);
    if (placed)
        mt_fr_placed_write_text(placed, out, ctx);
}

mt_status_t mt_job_outputs(const mt_job_out_opts_t *o, const mt_discover_list_t *files, mt_job_t *j,
                           const mt_job_out_merged_t *m, mt_write_fn out, void *out_ctx, mt_outdir_note_fn note,
                           void *nctx)
{
    char msg[1400] = "";
    bool merge_failed = m->failed;
    const char *merged_path = o->outputs.merge && m->path && m->path[0] ? m->path : NULL;
    mt_report_input_t *ri = NULL;
    mt_report_skip_t *rs = NULL;
    mt_report_t rep;
    mt_warnings_t warn = {0};
    bool built;
    mt_status_t st = report_of(&o->report, files, j, merge_failed, merged_path, m->events, &ri, &rs, &rep, &warn,
                               &built);
    if (!built) {
        if (!merge_failed) /* one message: the merge's error came first */
            note(nctx, "out of memory");
        free(ri);
        free(rs);
        return MT_ERR_NOMEM;
    }
    bool rj = st != MT_OK; /* report.json cannot be written */
    if (rj)
        note(nctx, "out of memory");
    rep.hang = j->fr && j->fr->any ? &j->fr->hang : NULL;
    rep.hang_placed = m->fr;
    /* A run whose merged trace failed writes none of its outputs: the
     * directory keeps the last run's, whole (its merged trace was left as
     * it was); the summary still goes to the stream. */
    bool write = !merge_failed;
    mt_compare_t *cmp = NULL;
    mt_buf_t text = {0}; /* report.json as compared; written as it is unless gates changed it */
    if (!rj && o->baseline_text) {
        cmp = compare_run(o, &rep, j, &text, &st, note, nctx);
        rj = cmp == NULL;
        rep.compare = cmp;
        if (cmp && write && mt_outdir_write(o->out_dir, "compare.json", render_compare, cmp, 0, msg, sizeof msg)) {
            note(nctx, msg);
            st = MT_ERR_IO;
        }
    }
    /* The gates' verdicts are in report.json and the comparison may have
     * changed them (relative gates): render it again only then. */
    if (!rj && write &&
        (rj = write_report(o->out_dir, "report.json", &rep, NULL, cmp && !o->n_gates ? &text : NULL, msg,
                           sizeof msg)) != 0) {
        note(nctx, msg);
        st = MT_ERR_IO;
    }
    mt_html_opts_t ho = {.command_line = o->command_line};
    mt_buf_free(&text);
    if (!rj && write && o->outputs.html && write_report(o->out_dir, "report.html", &rep, &ho, NULL, msg, sizeof msg)) {
        note(nctx, msg);
        st = MT_ERR_IO;
    }
    /* The outputs of an earlier run this one does not write, so that the
     * directory never holds two jobs' files; never an input. */
    char removed[128] = "";
    if (!rj && write) {
        mt_outdir_name_t owned[MT_OUTDIR_N_NAMES];
        size_t n = mt_outdir_owned(&o->outputs, merge_failed, owned);
        mt_outdir_remove_stale(o->out_dir, owned, n, files, o->baseline_file, removed, sizeof removed, note, nctx);
    }
    if (o->json) {
        if (mt_report_json(&rep, out, out_ctx) != MT_OK)
            st = MT_ERR_IO;
        if (removed[0] && !o->quiet) {
            char line[PATH_MAX + 300];
            snprintf(line, sizeof line, "removed %s of an earlier run from %s (this run does not write %s)", removed,
                     o->out_dir, strstr(removed, " and ") ? "them" : "it");
            note(nctx, line);
        }
    } else if (!o->quiet) {
        mt_report_text_opts_t t = o->text;
        t.merged_path = merge_failed ? NULL : merged_path;
        t.removed = removed;
        t.mixed_runs = j->trust.mixed != 0;
        (void)mt_report_text(&rep, &t, out, out_ctx); /* a write error: the program's check of its stream */
        if (cmp)
            mt_compare_text(cmp, out, out_ctx);
    }
    if (j->fr && j->fr->any && !o->quiet && !o->json)
        fr_text(j->fr, m->fr, out, out_ctx);
    mt_compare_free(cmp);
    /* Failed gates are errors a CI log must show even with -q or --json. */
    for (size_t i = 0; i < o->n_gates; i++) {
        char line[300];
        if (mt_gate_failure(&o->gates[i], line, sizeof line))
            note(nctx, line);
    }
    mt_warnings_free(&warn);
    free(ri);
    free(rs);
    return st;
}

mt_status_t mt_job_outputs_baseline(const mt_job_report_opts_t *ro, const mt_discover_list_t *files, mt_job_t *j,
                                    const char *out_dir, bool quiet, mt_buf_t *text, mt_outdir_note_fn note,
                                    void *nctx)
{
    char msg[1400] = "", dir[PATH_MAX];
    mt_report_input_t *ri = NULL;
    mt_report_skip_t *rs = NULL;
    mt_report_t rep;
    mt_warnings_t warn = {0};
    bool built;
    *text = (mt_buf_t){0};
    mt_status_t st = report_of(ro, files, j, false, NULL, 0, &ri, &rs, &rep, &warn, &built);
    /* in memory for the comparison, and on disk for a later --baseline */
    if (st == MT_OK)
        st = mt_report_json(&rep, mt_buf_write, text) == MT_OK ? MT_OK : MT_ERR_NOMEM;
    if (st != MT_OK)
        snprintf(msg, sizeof msg, "--baseline: out of memory");
    snprintf(dir, sizeof dir, "%.4000s/baseline", out_dir);
    if (st == MT_OK && (mt_outdir_make(dir, msg, sizeof msg) ||
                        write_report(out_dir, "baseline/report.json", &rep, NULL, text, msg, sizeof msg)))
        st = MT_ERR_IO;
    if (st != MT_OK) {
        note(nctx, msg);
        mt_buf_free(text);
    } else {
        /* the run's own warnings are in its summary; the baseline has none */
        for (size_t i = 0; !quiet && i < warn.n; i++) {
            /* whole, however long (a warning may name two paths) */
            static const char tag[] = "--baseline: warning: ";
            size_t cap = sizeof tag + strlen(warn.v[i].text);
            char small[1200], *line = cap <= sizeof small ? small : malloc(cap);
            if (!line) { /* out of memory: the line cut short beats no line */
                line = small;
                cap = sizeof small;
            }
            snprintf(line, cap, "%s%s", tag, warn.v[i].text);
            note(nctx, line);
            if (line != small)
                free(line);
        }
    }
    mt_warnings_free(&warn);
    free(ri);
    free(rs);
    return st;
}

mt_status_t mt_job_outputs_fr_alone(const mt_job_out_opts_t *o, const mt_fr_job_t *fr, const char *merged_path,
                                    mt_write_fn out, void *out_ctx, char *msg, size_t cap)
{
    msg[0] = '\0';
    mt_report_t rep;
    if (mt_report_fr_alone(fr, merged_path ? mt_discover_base(merged_path) : NULL, &rep) != MT_OK) {
        snprintf(msg, cap, "out of memory");
        return MT_ERR_NOMEM;
    }
    uint64_t entries = rep.merged_events;
    mt_status_t st = MT_OK;
    mt_buf_t b = {0};
    if (mt_report_json(&rep, mt_buf_write, &b) != MT_OK ||
        mt_outdir_write(o->out_dir, "report.json", mt_outdir_bytes, &b, MT_OUTDIR_NAME_PATH, msg, cap))
        st = MT_ERR_IO;
    if (st == MT_OK && o->json && out(out_ctx, b.data, b.len) != MT_OK)
        st = MT_ERR_IO;
    b.len = 0;
    mt_html_opts_t ho = {.command_line = o->command_line};
    if (st == MT_OK && o->outputs.html &&
        (mt_report_html(&rep, &ho, mt_buf_write, &b) != MT_OK ||
         mt_outdir_write(o->out_dir, "report.html", mt_outdir_bytes, &b, MT_OUTDIR_NAME_PATH, msg, cap)))
        st = MT_ERR_IO;
    mt_buf_free(&b);
    if (st != MT_OK && !msg[0])
        snprintf(msg, cap, "out of memory");
    if (st == MT_OK && !o->json && !o->quiet) {
        mt_out_t t = {.w = out, .ctx = out_ctx};
        mt_out_printf(&t, "mergetrace: %zu Flight Recorder dump%s, %llu entries\n", fr->n, fr->n == 1 ? "" : "s",
                      (unsigned long long)entries);
        if (mt_fr_hang_write_text(&fr->hang, out, out_ctx) != MT_OK)
            st = MT_ERR_IO; /* msg "": the program's check of its stream says it */
        mt_out_printf(&t, "\nwrote %s/report.json", o->out_dir);
        if (o->outputs.html)
            mt_out_printf(&t, "%s%s/report.html", merged_path ? ", " : " and ", o->out_dir);
        if (merged_path)
            mt_out_printf(&t, " and %s (%llu entries)", merged_path, (unsigned long long)entries);
        mt_out_printf(&t, "\n");
    }
    if (st == MT_OK)
        mt_outdir_renamed_all();
    mt_report_fr_free(&rep);
    return st;
}
