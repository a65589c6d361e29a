/* A job on process 0 after loading (mergetrace/job_state.h): freed, its
 * check of its ranks and of its traces being of one run, report.json
 * built from it, its warnings, and what --timings reads of it. */
#include "mergetrace/job_state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mergetrace/version.h"

void mt_job_free(mt_job_t *j)
{
    mt_cross_free(j->cross);
    mt_report_views_free(j->views);
    mt_pipeline_free(j->pipe);
    mt_critpath_free(j->cp);
    mt_mem_cross_free(j->memory);
    mt_align_result_free(&j->al);
    free(j->ranks);
    free(j->missing);
    mt_nccl_job_free(&j->nccl);
    free(j->nccl_rep);
    for (size_t i = 0; j->mine_owned && i < j->n_mine; i++)
        mt_rank_analysis_free(j->mine[i]);
    if (j->mine_owned)
        free(j->mine);
    for (size_t i = 0; j->an && i < j->n; i++)
        mt_rank_analysis_free(j->an[i]);
    free(j->an);
    memset(j, 0, sizeof *j);
}

mt_job_bad_t mt_job_check(const mt_discover_list_t *l, mt_ingest_result_t *res, size_t n_res, mt_job_t *j,
                          const mt_ingest_result_t **which)
{
    memset(j, 0, sizeof *j);
    size_t n = mt_ingest_sort(res, n_res);
    j->res = res;
    j->n = n;
    j->skipped = res + n;
    j->n_skipped = n_res - n;
    if (!n)
        return MT_JOB_NO_TRACE;
    /* a trace that named no rank, taken as 0 while loading, is rank 0 only
     * as the job's one trace */
    if ((*which = mt_ingest_unranked(res, n)) != NULL)
        return MT_JOB_UNRANKED;
    /* for the memory plan, each loaded file once: the NCCL join below
     * folds a rank's NCCL file into its trace */
    for (size_t i = 0; i < n; i++) {
        j->plan.acts += res[i].n_gacts;
        j->plan.rows += res[i].n_rows;
        j->plan.steps += res[i].n_steps;
    }
    if (mt_ingest_nccl_join(l, res, &n, &j->nccl) != MT_OK)
        return MT_JOB_NOMEM;
    if (!n) /* n > 0: a trace that an NCCL file joins stays */
        return MT_JOB_EMPTY;
    j->n = n;
    for (size_t i = 1; i < n; i++)
        if (res[i].rank == res[i - 1].rank) {
            *which = &res[i];
            return MT_JOB_TWICE;
        }
    int64_t *rw = malloc(2 * n * sizeof *rw); /* ranks, then the world sizes the traces name */
    if (!rw)
        return MT_JOB_NOMEM;
    for (size_t i = 0; i < n; i++) {
        rw[i] = res[i].rank;
        rw[n + i] = res[i].sum.world_size;
    }
    mt_trust_world_t w;
    mt_trust_world(rw, rw + n, n, &w);
    free(rw);
    j->world = w.world;
    j->world_disagree = w.disagree;
    j->missing = w.missing;
    j->n_missing = w.n_missing;
    j->n_absent = w.n_absent;
    return MT_JOB_GOOD;
}

mt_status_t mt_job_check_text(mt_job_bad_t bad, const mt_discover_list_t *l, const mt_job_t *j,
                              const mt_ingest_result_t *which, size_t n_res, bool local, const char *tag, char *msg,
                              size_t cap)
{
    msg[0] = '\0';
    switch (bad) {
    case MT_JOB_GOOD:
        return MT_OK;
    case MT_JOB_NO_TRACE:
        if (!j->n_skipped) /* no file at all (--local: no process listed one) */
            snprintf(msg, cap, "%sno trace found", tag);
        else
            snprintf(msg, cap, "%sno trace among the %zu JSON file%s found (%s: %s)", tag, n_res,
                     n_res == 1 ? "" : "s", l->files[j->skipped[0].index].path, j->skipped[0].message);
        return MT_ERR_FORMAT;
    case MT_JOB_UNRANKED:
        snprintf(msg, cap, "%s%s", tag, which->message);
        return MT_ERR_FORMAT;
    case MT_JOB_TWICE: {
        const mt_discover_file_t *a = &l->files[which[-1].index], *b = &l->files[which->index];
        if (local) /* the two may have one path, on two nodes, or one trace given to two processes */
            snprintf(msg, cap,
                     "%srank %lld appears twice: %s on process %d and %s on process %d (--local: give each trace "
                     "to one process; --rank-map says which is which)",
                     tag, (long long)which->rank, a->path, a->owner, b->path, b->owner);
        else
            snprintf(msg, cap, "%srank %lld appears twice: %s and %s (use --rank-map to say which is which)", tag,
                     (long long)which->rank, a->path, b->path);
        return MT_ERR_FORMAT;
    }
    case MT_JOB_EMPTY:
        return MT_ERR_IO;
    case MT_JOB_NOMEM:
        break;
    }
    snprintf(msg, cap, "out of memory");
    return MT_ERR_NOMEM;
}

mt_status_t mt_job_trust(mt_job_t *j, bool aligned, bool *far, size_t *a, size_t *b, double *apart_ns,
                         bool *checked)
{
    const mt_align_result_t *al = &j->al;
    *far = *checked = false;
    mt_trust_trace_t *tt = mt_ingest_trust_traces(j->res, j->n);
    if (!tt)
        return MT_ERR_NOMEM;
    *checked = true;
    mt_status_t st = mt_trust_check(tt, al->clocks, j->n < al->n_clocks ? j->n : al->n_clocks, al->rows, al->n_rows,
                                     al->m, aligned, &j->trust);
    *a = *b = 0;
    *apart_ns = 0;
    *far = st == MT_OK && mt_trust_apart(tt, j->n, al->clocks, al->n_clocks, a, b, apart_ns);
    free(tt);
    return st;
}

mt_status_t mt_job_report(const mt_discover_list_t *files, const mt_job_t *j, const mt_job_report_opts_t *ro,
                          mt_report_input_t **ri, mt_report_skip_t **rs, mt_report_t *rep)
{
    size_t n_rs;
    if (mt_ingest_report_lists(files, j->res, j->n, j->skipped, j->n_skipped, ri, rs, &n_rs) != MT_OK)
        return MT_ERR_NOMEM;
    int32_t ref = -1;
    for (size_t i = 0; i < j->al.n_clocks; i++)
        if (j->al.clocks[i].reference)
            ref = j->al.clocks[i].rank;
    *rep = (mt_report_t){.version = MERGETRACE_VERSION,
                         .world_size = j->world,
                         .inputs = *ri,
                         .n_inputs = j->n,
                         .missing = j->missing,
                         .n_missing = j->n_missing,
                         .missing_count = j->n_absent,
                         .skipped = *rs,
                         .n_skipped = n_rs,
                         .aligned = ro->aligned,
                         .clock_note = ro->clock_note,
                         .reference_rank = ref,
                         .clocks = j->al.clocks,
                         .n_clocks = j->al.n_clocks,
                         .match = &j->al.match,
                         .analyses = (const mt_rank_analysis_t *const *)j->an,
                         .n_analyses = j->n_an,
                         .cross = j->cross,
                         .pipeline = j->pipe,
                         .critpath = j->cp,
                         .memory = j->memory,
                         .pipeline_note = j->pipe_note[0] ? j->pipe_note : NULL,
                         .gates = ro->gates,
                         .n_gates = ro->n_gates,
                         .views = j->views,
                         .nccl = j->nccl_rep,
                         .n_nccl = j->nccl.n,
                         .nccl_source = j->nccl.source};
    return MT_OK;
}

mt_status_t mt_job_warnings(const mt_job_t *j, const mt_report_t *rep, bool merge_failed, mt_warnings_t *w)
{
    const mt_trace_summary_t **sums = malloc((j->n ? j->n : 1) * sizeof *sums);
    if (!sums)
        return w->st = MT_ERR_NOMEM;
    for (size_t i = 0; i < j->n; i++)
        sums[i] = &j->res[i].sum;
    char note[512] = "";
    if (j->plan.skipped)
        mt_critpath_memory_note(note, sizeof note, j->plan.with, j->plan.budget, j->plan.acts, j->plan.rows);
    mt_report_warn_facts_t f = {.sums = sums,
                                .world_disagree = j->world_disagree,
                                .nccl = &j->nccl,
                                .critpath_skipped = j->plan.skipped ? note : NULL,
                                .trust = &j->trust,
                                .merge_failed = merge_failed};
    mt_status_t st = mt_report_warnings(rep, &f, w);
    free(sums);
    return st;
}

uint64_t *mt_job_timings(const mt_job_t *j, const mt_ingest_t *L, const mt_discover_list_t *files, int me,
                         int n_procs, mt_timings_t *t)
{
    t->n_procs = n_procs;
    t->seconds[MT_TPH_PARSE] = L->parse_s;
    t->seconds[MT_TPH_RANK_PASSES] = L->passes_s;
    t->largest = L->largest;
    t->seconds[MT_TPH_MATCH] = j->al.match_s;
    t->seconds[MT_TPH_CLOCK_FIT] = j->al.fit_s;
    t->match_cpu = j->al.match_cpu_s;
    t->clock_fit_cpu = j->al.fit_cpu_s;
    t->match_procs = j->al.match_procs;
    t->plan_rss = j->plan.rss;
    t->plan_without = j->plan.without;
    t->plan_with = j->plan.with;
    t->plan_budget = j->plan.budget;
    t->plan_acts = j->plan.acts;
    t->plan_rows = j->plan.rows;
    t->plan_skipped = j->plan.skipped;
    t->files = NULL;
    if (me != 0)
        return NULL; /* the job's size is process 0's to say */
    t->ranks = j->n;
    t->json_bytes = t->events = 0;
    for (size_t i = 0; i < j->n; i++) {
        t->json_bytes += j->res[i].sum.bytes_json;
        t->events += j->res[i].sum.events;
    }
    /* every process has the list with its owners: process 0 counts them */
    uint64_t *per = n_procs > 0 ? calloc((size_t)n_procs, sizeof *per) : NULL;
    for (size_t i = 0; per && i < files->n; i++)
        if (files->files[i].owner >= 0 && files->files[i].owner < n_procs)
            per[files->files[i].owner]++;
    t->files = per;
    return per;
}

bool mt_job_plan_set(mt_job_t *j, int64_t mem_budget, uint64_t rss, uint64_t available)
{
    mt_job_plan_t *p = &j->plan;
    p->rss = rss;
    mt_critpath_memory(j->n, p->rows, p->acts, &p->without, &p->with);
    p->budget = mem_budget > 0 ? (uint64_t)mem_budget : mem_budget < 0 ? available / 10 * 9 : 0;
    return p->steps > 0 && p->budget > 0 && p->with > p->budget;
}
