/* The per-rank passes and their shared input: internal to the core (the
 * public side is include/mergetrace/analysis.h). */
#ifndef MT_RANK_PASSES_H
#define MT_RANK_PASSES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/interval.h"
#include "base/sort.h"
#include "base/stats.h"
#include "mergetrace/analysis.h"

/* ---- The pass interface ------------------------------------------------
 * mt_analyze_rank (mergetrace/analysis.h) is all the program needs. The
 * passes and their shared input are internal to the core: declared here for
 * src/rank/, the unit tests and later analyses; each pass fills its part of
 * an mt_rank_analysis_t. */

/* One GPU activity of a trace, with the start of its launch call copied in
 * (so the sorts by launch time do not chase it through the event table).
 * 56 bytes: the launching thread is read from the event table
 * (mt_act_launch_pid / _tid), which saved 16 bytes per activity (1.5 MiB
 * of a 157 MB rank's peak, docs/PERFORMANCE.md "Peak RSS per process"). */
typedef struct mt_gpu_act {
    int64_t start_ns, end_ns;
    int64_t device, stream;  /* the activity's pid and tid */
    int64_t launch_ns;       /* start of its launch call; the launch fields are 0 when launch == 0 */
    uint32_t event;          /* 0-based index of the activity in the trace */
    uint32_t launch;         /* 1-based index of its launch call, 0 = not linked */
    uint32_t name;           /* strtab id in the trace */
    uint8_t cls;             /* mt_class_t: COMPUTE, COMM, MEMCPY or MEMSET */
    uint8_t flags;           /* the event's MT_EV_PID_STR | MT_EV_TID_STR bits */
    uint8_t launch_flags;    /* the same bits of the launch call */
    uint8_t pad_;
} mt_gpu_act_t;
_Static_assert(sizeof(mt_gpu_act_t) == 56, "mt_gpu_act_t: one per GPU activity, live through every pass");

/* What every pass reads. Built by mt_an_input_build, freed by
 * mt_an_input_free; t and o are borrowed and must outlive it. */
typedef struct mt_an_input {
    const mt_trace_t *t;
    const mt_analysis_opts_t *o;
    mt_gpu_act_t *acts;                 /* sorted by (start, end, event) */
    size_t n_acts;
    mt_interval_t *u[MT_AN_CLASS_COUNT_]; /* unions per class, sorted and disjoint */
    size_t n_u[MT_AN_CLASS_COUNT_];
    mt_interval_t *busy;                /* union of every activity */
    size_t n_busy;
    uint32_t *ranges;                   /* event indices of the CPU ranges to project: user_annotation X */
    size_t n_ranges;                    /* (and cpu_op X with o->project_ops) events, in file order */
    uint32_t *launch_calls;             /* event indices of the cuda_runtime / cuda_driver X events whose */
    size_t n_launch_calls;              /* name contains "Launch", in file order */
    uint32_t *sync_calls;               /* ... whose name contains "Synchronize", in file order */
    size_t n_sync_calls;
} mt_an_input_t;

/* The pid and tid of x's launch call (0 when it has none). */
static inline int64_t mt_act_launch_pid(const mt_an_input_t *in, const mt_gpu_act_t *x)
{
    return x->launch ? mt_event_pid(in->t, &in->t->events[x->launch - 1]) : 0;
}
static inline int64_t mt_act_launch_tid(const mt_an_input_t *in, const mt_gpu_act_t *x)
{
    return x->launch ? mt_event_tid(in->t, &in->t->events[x->launch - 1]) : 0;
}

/* Collect t's GPU activities (sorted), their unions, the CPU ranges and the
 * launch and synchronisation calls, in one pass over the events. MT_OK or MT_ERR_NOMEM (in left
 * empty then). */
mt_status_t mt_an_input_build(const mt_trace_t *t, const mt_analysis_opts_t *o, mt_an_input_t *in);
void mt_an_input_free(mt_an_input_t *in);

/* Append len bytes (copied) to a's string pool, NUL added; *out gets where.
 * MT_OK, MT_ERR_NOMEM or MT_ERR_LIMIT (pool beyond 4 GiB). */
mt_status_t mt_an_string_add(mt_rank_analysis_t *a, const char *s, size_t len, mt_an_str_t *out);

/* The longest prefix of s[0..len) of at most max bytes that does not end
 * inside a UTF-8 sequence (names cut to MT_AN_NAME_MAX). */
static inline size_t mt_an_name_cut(const char *s, size_t len, size_t max)
{
    if (len <= max)
        return len;
    size_t cut = max;
    while (cut > 0 && ((unsigned char)s[cut] & 0xC0) == 0x80)
        cut--;
    return cut;
}

/* The passes: each reads in and fills only its own fields of a (temporal:
 * gpu_activities .. idle_ns; idle: host/kernel/other and streams;
 * projection: proj; kernels: kernels; launch: launched .. launch_bound_ns;
 * chunks (mt_an_chunks, pipeline.h): chunks),
 * so they may run in any order. Arrays a pass adds are owned by a. MT_OK,
 * MT_ERR_NOMEM or MT_ERR_LIMIT. */
mt_status_t mt_an_temporal(const mt_an_input_t *in, mt_rank_analysis_t *a);
mt_status_t mt_an_idle(const mt_an_input_t *in, mt_rank_analysis_t *a);
mt_status_t mt_an_projection(const mt_an_input_t *in, mt_rank_analysis_t *a);
mt_status_t mt_an_kernels(const mt_an_input_t *in, mt_rank_analysis_t *a);
mt_status_t mt_an_launch(const mt_an_input_t *in, mt_rank_analysis_t *a);
/* steps and graph (analysis.h "steps", "graph"): fills a->steps, a->gacts,
 * a->syncs. MT_OK, MT_ERR_NOMEM or MT_ERR_LIMIT. */
mt_status_t mt_an_steps(const mt_an_input_t *in, mt_rank_analysis_t *a);

/* waits (analysis.h "waits"): a->gdeps and a->swaits_* from in->t's
 * stream-wait records; runs after mt_an_steps (it reads a->gacts). Nothing
 * (no cost) without records. MT_OK or MT_ERR_NOMEM. */
mt_status_t mt_an_waits(const mt_an_input_t *in, mt_rank_analysis_t *a);

/* The per-rank pass: fills a->chunks from in (see "work"), with the
 * markers in->o->markers (nothing when NULL) and the rank's collective
 * rows in->o->rows (to tell all_to_all from point-to-point; may be NULL).
 * MT_OK or MT_ERR_NOMEM. */
mt_status_t mt_an_chunks(const mt_an_input_t *in, mt_rank_analysis_t *a);

/* The memory pass (analysis.h, "memory"): fills a->mem_devs, mem_steps,
 * mem_points and mem_issues from in->t's [memory] events; nothing to do
 * (and no cost) when the trace has none. MT_OK, MT_ERR_NOMEM or
 * MT_ERR_LIMIT. */
mt_status_t mt_an_memory(const mt_an_input_t *in, mt_rank_analysis_t *a);

#endif
