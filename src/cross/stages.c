/* Which stages the pipeline analysis measures (include/mergetrace/pipeline.h,
 * "Stages from the command line"): the --stage annotation stages, a
 * --pp-stages list, --pp blocks or the stages inferred from point-to-point
 * traffic, each led by a rank that was loaded; and the job's pipeline step
 * that measures them. */
#include "mergetrace/pipeline.h"
#include "base/sort.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

mt_status_t mt_pp_stages_annotations(const char *const *names, const int32_t *const *ranks_of_stage,
                                     const size_t *n_ranks_of_stage, size_t n_stage, const int32_t *ranks,
                                     size_t n_ranks, mt_pp_stages_t *out)
{
    memset(out, 0, sizeof *out);
    size_t total = 0;
    for (size_t s = 0; s < n_stage; s++)
        total += ranks_of_stage && ranks_of_stage[s] ? n_ranks_of_stage[s] : n_ranks;
    out->first = calloc(n_stage + 1, sizeof *out->first);
    out->ranks = malloc((total ? total : 1) * sizeof *out->ranks);
    out->marker = calloc(n_stage ? n_stage : 1, sizeof *out->marker);
    out->name = calloc(n_stage ? n_stage : 1, sizeof *out->name);
    if (!out->first || !out->ranks || !out->marker || !out->name) {
        mt_pp_stages_free(out);
        return MT_ERR_NOMEM;
    }
    out->n = n_stage;
    out->source = MT_PP_FROM_ANNOTATIONS;
    size_t b = 0;
    for (size_t s = 0; s < n_stage; s++) {
        out->first[s] = b;
        out->marker[s] = (uint32_t)(s + 1); /* marker 0 is the chunk marker */
        snprintf(out->name[s], sizeof out->name[s], "%s", names[s]);
        bool own = ranks_of_stage && ranks_of_stage[s];
        const int32_t *r = own ? ranks_of_stage[s] : ranks;
        size_t n = own ? n_ranks_of_stage[s] : n_ranks;
        if (n)
            memcpy(out->ranks + b, r, n * sizeof *r);
        b += n;
    }
    out->first[n_stage] = b;
    return MT_OK;
}

bool mt_pp_stages_lead_loaded(mt_pp_stages_t *s, const int32_t *ranks, size_t n_ranks, char *note, size_t cap)
{
    for (size_t i = 0; i < s->n; i++) {
        size_t k = s->first[i];
        while (k < s->first[i + 1] && !(n_ranks && bsearch(&s->ranks[k], ranks, n_ranks, sizeof *ranks, mt_cmp_i32)))
            k++;
        if (k == s->first[i + 1]) {
            snprintf(note, cap, "no rank of %s was loaded: no pipeline section", s->name[i]);
            return false;
        }
        if (k > s->first[i]) {
            /* Only the leading ranks go: the leader is what the chunks are
             * read from; the stage's other ranks only add to stage_max. */
            size_t miss = k - s->first[i];
            memmove(s->ranks + s->first[i], s->ranks + k, (s->first[i + 1] - k) * sizeof *s->ranks);
            size_t total = s->first[s->n];
            memmove(s->ranks + s->first[i + 1] - miss, s->ranks + s->first[i + 1],
                    (total - s->first[i + 1]) * sizeof *s->ranks);
            for (size_t t = i + 1; t <= s->n; t++)
                s->first[t] -= miss;
            snprintf(note, cap, "%zu rank%s of %s had no trace: the stage is led by rank %d", miss,
                     miss == 1 ? "" : "s", s->name[i], (int)s->ranks[s->first[i]]);
        }
    }
    return true;
}

mt_status_t mt_pp_stages_choose(const mt_pp_request_t *rq, const int32_t *ranks, size_t n_ranks,
                                const mt_crow_t *rows, size_t n_rows, const mt_clock_t *clocks, size_t n_clocks,
                                mt_pp_stages_t *out, char *note, size_t cap)
{
    memset(out, 0, sizeof *out);
    mt_status_t rc;
    mt_error_t err;
    mt_error_clear(&err);
    if (rq->n_stage) {
        rc = mt_pp_stages_annotations(rq->stage_name, rq->stage_ranks, rq->stage_n_ranks, rq->n_stage, ranks,
                                      n_ranks, out);
        if (rc == MT_OK && (rq->pp_stages || rq->pp_blocks))
            snprintf(note, cap, "both --stage and %s were given: the OverlapScore uses the --stage annotation stages",
                     rq->pp_stages ? "--pp-stages" : "--pp");
    } else if (rq->pp_stages) {
        rc = mt_pp_stages_parse(rq->pp_stages, out, &err);
    } else if (rq->pp_blocks) {
        rc = mt_pp_stages_blocks(ranks, n_ranks, rq->pp_blocks, out, &err);
        if (rc == MT_ERR_USAGE) {
            /* a block count that does not fit the ranks present: said, not fatal */
            snprintf(note, cap, "%s: no pipeline section", err.msg);
            return MT_OK;
        }
    } else {
        rc = mt_pp_stages_infer(rows, n_rows, clocks, n_clocks, out);
    }
    if (rc != MT_OK) {
        mt_pp_stages_free(out);
        return rc;
    }
    if (!rq->n_stage && !rq->pp_stages && !rq->pp_blocks && out->n < 2) {
        /* send/recv kernels whose peer no trace names (a trace without
         * collective metadata, before PyTorch 2.2): the stages from the
         * kernels' ends, or a line saying why they cannot be (issue 39
         * item 6) */
        mt_pp_stages_free(out);
        rc = mt_pp_stages_infer_ends(rows, n_rows, clocks, n_clocks, out, note, cap);
        if (rc != MT_OK)
            return rc;
    }
    /* One annotation stage is still a pipeline section (its chunks' work);
     * one rank stage is not. */
    if ((out->n < 2 && !(out->n == 1 && out->source == MT_PP_FROM_ANNOTATIONS)) ||
        !mt_pp_stages_lead_loaded(out, ranks, n_ranks, note, cap))
        mt_pp_stages_free(out);
    return MT_OK;
}

mt_status_t mt_pp_run(const mt_pp_request_t *rq, const int32_t *ranks, size_t n_ranks, const mt_crow_t *rows,
                      size_t n_rows, const mt_clock_t *clocks, size_t n_clocks,
                      const struct mt_rank_analysis *const *an, size_t n_an, mt_pipeline_t **out, char *note,
                      size_t cap)
{
    *out = NULL;
    mt_pp_stages_t st;
    mt_status_t rc = mt_pp_stages_choose(rq, ranks, n_ranks, rows, n_rows, clocks, n_clocks, &st, note, cap);
    if (rc != MT_OK || st.n == 0)
        return rc;
    mt_pp_opts_t po = {.warmup = rq->warmup};
    mt_pp_source_t source = st.source;
    rc = mt_pipeline_analyze(&st, &po, an, n_an, clocks, n_clocks, out);
    mt_pp_stages_free(&st);
    if (rc == MT_OK && (source == MT_PP_FROM_P2P || source == MT_PP_FROM_P2P_ENDS) && (*out)->n_chunks == 0) {
        /* Stages guessed from the traffic but nothing to measure them by:
         * say so in a line rather than print an empty section. */
        snprintf(note, cap,
                 "point-to-point traffic suggests %zu stages, but no chunk marker (ProfilerStep#N, or --chunk) is "
                 "on every stage leader: no pipeline numbers",
                 (*out)->stages.n);
        mt_pipeline_free(*out);
        *out = NULL;
    }
    return rc;
}
