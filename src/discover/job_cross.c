/* Process 0's steps after the alignment (mergetrace/job_state.h
 * mt_job_cross): one run?, the cross-rank analyses, the pipeline, memory
 * across ranks, report.html's pictures, the critical path with its
 * whole-job reductions, and the gates; which step failed is returned for
 * the program to say. */
#define _POSIX_C_SOURCE 200809L
#include "mergetrace/job_state.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "base/clock.h"

typedef struct cp_ctx {
    mt_job_t *j;
    const mt_job_cross_opts_t *o;
} cp_ctx_t;

static void give_back(const mt_job_cross_opts_t *o)
{
    if (o->heap_give_back)
        o->heap_give_back();
}

/* mt_critpath_run is done with an input (mt_cp_request_t's hooks): it
 * goes, and the heap's free pages with it, before the critical path
 * allocates its graph's tables (the gathered rows and the match) or its
 * replays' (the ranks' GPU activities): nothing after reads them.
 * Process 0 of the 4096-rank job of docs/PERFORMANCE.md "4096 x 320 with
 * traces": the rows are 168 MB, the activities 92 MB. */
static void cp_rows_done(void *ctx)
{
    cp_ctx_t *c = ctx;
    mt_job_t *j = c->j;
    free(j->al.rows);
    j->al.rows = NULL;
    j->al.n_rows = 0;
    mt_match_free(j->al.m);
    j->al.m = NULL;
    give_back(c->o);
}

/* The sharded match's instance members kept for the reductions: read by
 * nothing after them. */
static void owned_done(mt_job_t *j)
{
    free(j->al.owned);
    j->al.owned = NULL;
    j->al.n_owned = 0;
}

/* The instances this process owns in a sharded match, for the
 * reductions; NULL when process 0 matched alone (the same on every
 * process: match_procs is). */
static const mt_cp_owned_t *owned_of(const mt_job_t *j, mt_cp_owned_t *o)
{
    if (j->al.match_procs <= 1)
        return NULL;
    *o = (mt_cp_owned_t){j->al.owned, j->al.n_owned};
    return o;
}

static void cp_built(void *ctx)
{
    cp_ctx_t *c = ctx;
    owned_done(c->j);
    for (size_t i = 0; i < c->j->n_an; i++)
        mt_rank_analysis_drop_gacts(c->j->an[i]);
    give_back(c->o);
}

/* mt_cp_request_t.reduce on process 0: the other processes, waiting in
 * mt_job_cp_serve, are told to take part. */
static mt_status_t cp_reduce(void *ctx, const mt_cp_dist_in_t *in, mt_cp_dist_t **out)
{
    mt_job_t *j = ((cp_ctx_t *)ctx)->j;
    int go = 1;
    (void)j->mc->bcast(j->mc->ctx, &go, sizeof go, 0);
    mt_cp_owned_t o;
    return mt_cp_dist_reduce(j->mc, in, owned_of(j, &o), (const mt_rank_analysis_t *const *)j->mine, j->n_mine,
                             j->al.clocks, j->ranks, (size_t)j->n_ranks, out);
}

void mt_job_cp_serve(mt_job_t *j)
{
    for (;;) {
        int go = 0;
        (void)j->mc->bcast(j->mc->ctx, &go, sizeof go, 0);
        if (!go)
            break;
        /* process 0 reports a failure (mt_critpath_run returns it) */
        mt_cp_dist_t *d = NULL;
        mt_cp_owned_t o;
        (void)mt_cp_dist_reduce(j->mc, NULL, owned_of(j, &o), (const mt_rank_analysis_t *const *)j->mine, j->n_mine,
                                j->al.clocks, j->ranks, (size_t)j->n_ranks, &d);
        mt_cp_dist_free(d);
    }
    /* read by nothing after: freed before the outputs */
    owned_done(j);
    for (size_t i = 0; j->mine_owned && i < j->n_mine; i++)
        mt_rank_analysis_free(j->mine[i]);
    if (j->mine_owned)
        free(j->mine);
    j->mine = NULL;
    j->n_mine = 0;
}

void mt_job_cp_stop(mt_job_t *j)
{
    int go = 0;
    (void)j->mc->bcast(j->mc->ctx, &go, sizeof go, 0);
}

static mt_status_t trust(const mt_job_cross_opts_t *o, mt_job_t *j, mt_job_cross_fail_t *f)
{
    bool far, checked;
    mt_status_t st = mt_job_trust(j, o->aligned, &far, &f->a, &f->b, &f->apart_ns, &checked);
    if (st != MT_OK) {
        f->step = checked ? MT_JOB_STEP_TRUST : MT_JOB_STEP_TRUST_NOMEM;
        return st;
    }
    if (far) {
        f->step = MT_JOB_STEP_FAR;
        return MT_ERR_FORMAT;
    }
    if (j->trust.mixed && !o->force) {
        f->step = MT_JOB_STEP_MIXED;
        f->a = j->trust.a;
        f->b = j->trust.b;
        return MT_ERR_FORMAT;
    }
    return MT_OK;
}

mt_status_t mt_job_cross(const mt_job_cross_opts_t *o, mt_job_t *j, mt_timings_t *t, mt_job_cross_fail_t *f)
{
    const mt_align_result_t *al = &j->al;
    const mt_rank_analysis_t *const *an = (const mt_rank_analysis_t *const *)j->an;
    *f = (mt_job_cross_fail_t){.step = MT_JOB_STEP_NONE};
    /* ---- one run? ---- */
    double tc = mt_clock_seconds(CLOCK_MONOTONIC), cc = mt_clock_seconds(CLOCK_PROCESS_CPUTIME_ID);
    mt_status_t st = trust(o, j, f);
    if (st != MT_OK)
        return st;
    /* ---- cross-rank analyses, over the gathered rows ---- */
    st = mt_cross_analyze(al->rows, al->n_rows, al->labels, al->m, al->clocks, j->ranks, (size_t)j->n_ranks, &j->cross);
    if (st == MT_OK)
        st = mt_cross_name_absent(j->cross, j->missing, j->n_missing);
    if (st == MT_OK)
        st = mt_trust_annotate(j->cross, &j->trust, o->aligned, o->force);
    t->seconds[MT_TPH_CROSS_RANK] = mt_clock_seconds(CLOCK_MONOTONIC) - tc;
    t->cross_rank_cpu = mt_clock_seconds(CLOCK_PROCESS_CPUTIME_ID) - cc;
    if (st != MT_OK) {
        f->step = MT_JOB_STEP_CROSS;
        return st;
    }
    /* ---- pipeline and gates ---- */
    double tq = mt_clock_seconds(CLOCK_MONOTONIC), cq = mt_clock_seconds(CLOCK_PROCESS_CPUTIME_ID); /* counted with the cross-rank phase */
    st = mt_pp_run(&o->pp, j->ranks, (size_t)j->n_ranks, al->rows, al->n_rows, al->clocks, al->n_clocks, an, j->n_an,
                   &j->pipe, j->pipe_note, sizeof j->pipe_note);
    t->seconds[MT_TPH_CROSS_RANK] += mt_clock_seconds(CLOCK_MONOTONIC) - tq;
    t->cross_rank_cpu += mt_clock_seconds(CLOCK_PROCESS_CPUTIME_ID) - cq;
    if (st != MT_OK) {
        f->step = MT_JOB_STEP_PIPELINE;
        return st;
    }
    st = mt_cross_memory(an, j->n_an, j->pipe ? &j->pipe->stages : NULL, &j->memory);
    if (st != MT_OK) {
        f->step = MT_JOB_STEP_MEMORY;
        return st;
    }
    /* ---- the pictures of report.html: sample instances and the lateness
     * grid (before the critical path: it frees the rows once its graph is
     * built) ---- */
    if (o->html) {
        st = mt_report_views_build(al->rows, al->n_rows, al->labels, al->m, al->clocks, j->ranks, (size_t)j->n_ranks, 4,
                                   &j->views);
        if (st != MT_OK) {
            f->step = MT_JOB_STEP_VIEWS;
            return st;
        }
    }
    /* ---- steps, critical path, what-ifs (after the pipeline: its stages) ---- */
    double tp = mt_clock_seconds(CLOCK_MONOTONIC), cp = mt_clock_seconds(CLOCK_PROCESS_CPUTIME_ID);
    cp_ctx_t ctx = {.j = j, .o = o};
    mt_cp_request_t cpr = {.warmup = o->pp.warmup,
                           .stragglers = j->cross->suspects,
                           .n_stragglers = j->cross->n_suspects,
                           .pattern = o->what_if_pattern,
                           .factor = o->what_if_factor,
                           .ideal = true,
                           .n_absent = j->n_missing,
                           .rows_done = cp_rows_done,
                           .built = cp_built,
                           .hook_ctx = &ctx,
                           .reduce = cp_reduce};
    /* what-if "stage" (each pipeline stage 10 % faster) and the ideal
     * what-if's stages and workers; without a pipeline the ideal's workers
     * are the ranks and stages are unknown */
    if (j->pipe) {
        cpr.stage_ranks = j->pipe->stages.ranks;
        cpr.stage_first = j->pipe->stages.first;
        cpr.n_stages = j->pipe->stages.n;
    }
    uint64_t rss0 = o->heap_peak ? o->heap_peak() : 0;
    if (j->plan.skipped) /* over the memory budget (the plan): a warning says so */
        owned_done(j);
    else
        st = mt_critpath_run(&cpr, an, j->n_an, al->clocks, j->ranks, (size_t)j->n_ranks, al->rows, al->n_rows,
                             al->m, &j->cp);
    t->critpath = mt_clock_seconds(CLOCK_MONOTONIC) - tp;
    t->critpath_cpu = mt_clock_seconds(CLOCK_PROCESS_CPUTIME_ID) - cp;
    t->critpath_rss_growth = o->heap_peak ? o->heap_peak() - rss0 : 0;
    t->seconds[MT_TPH_CROSS_RANK] += t->critpath;
    t->cross_rank_cpu += t->critpath_cpu;
    if (st != MT_OK) {
        f->step = MT_JOB_STEP_CRITPATH;
        return st;
    }
    if (o->n_gates) {
        mt_gate_inputs_t gi = {.pipeline = j->pipe,
                               .cross = j->cross,
                               .analyses = an,
                               .n_analyses = j->n_an,
                               .clocks = al->clocks,
                               .n_clocks = al->n_clocks,
                               .aligned = o->aligned,
                               .critpath = j->cp};
        j->gates_failed = mt_gates_eval(o->gates, o->n_gates, &gi);
    }
    return MT_OK;
}

mt_status_t mt_job_cross_text(mt_status_t st, const mt_job_cross_fail_t *f, const mt_discover_list_t *l,
                              const mt_job_t *j, bool no_align, const char *tag, char *msg, size_t cap)
{
    msg[0] = '\0';
    const char *step = NULL;
    switch (f->step) {
    case MT_JOB_STEP_NONE:
        return MT_OK;
    case MT_JOB_STEP_TRUST_NOMEM:
        snprintf(msg, cap, "out of memory");
        return MT_ERR_NOMEM;
    case MT_JOB_STEP_TRUST:
        snprintf(msg, cap, "%schecking the traces belong together: %s", tag, mt_status_str(st));
        return st == MT_ERR_NOMEM ? MT_ERR_NOMEM : MT_ERR_FORMAT;
    case MT_JOB_STEP_FAR:
        snprintf(msg, cap,
                 "%s%s and %s start %.0f days apart on the %s clock (a trace without its absolute time base?): "
                 "they cannot be analysed together",
                 tag, l->files[j->res[f->a].index].path, l->files[j->res[f->b].index].path, f->apart_ns / 86400e9,
                 no_align ? "same (--no-align)" : "corrected");
        return MT_ERR_FORMAT;
    case MT_JOB_STEP_MIXED:
        snprintf(msg, cap, "%s%s and %s are not of one run: %s (--force merges them anyway)", tag,
                 l->files[j->res[f->a].index].path, l->files[j->res[f->b].index].path, j->trust.why);
        return MT_ERR_FORMAT;
    case MT_JOB_STEP_CROSS: step = "cross-rank analysis"; break;
    case MT_JOB_STEP_PIPELINE: step = "pipeline analysis"; break;
    case MT_JOB_STEP_MEMORY: step = "memory across ranks"; break;
    case MT_JOB_STEP_VIEWS: /* not the job's own: no tag */
        snprintf(msg, cap, "report.html views: %s", mt_status_str(st));
        return st;
    case MT_JOB_STEP_CRITPATH: step = "critical path"; break;
    }
    snprintf(msg, cap, "%s%s: %s", tag, step, mt_status_str(st));
    return st;
}
