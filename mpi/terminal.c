/* The terminal summary on process 0 (terminal.h): what was loaded and
 * matched, the clock of every rank, NCCL data, per-rank GPU time, the
 * cross-rank and pipeline sections, the gates, and every warning. */
#include "terminal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "procs.h"

mt_status_t terminal_write(void *ctx, const void *data, size_t len)
{
    (void)ctx;
    return fwrite(data, 1, len, stdout) == len ? MT_OK : MT_ERR_IO;
}

static double pct(int64_t part, int64_t whole)
{
    return whole > 0 ? 100.0 * (double)part / (double)whole : 0.0;
}

/* Per-rank GPU time and the heaviest annotations, at a glance. */
static void print_analyses(FILE *out, const char *B, const char *N, const job_t *j,
                           const mt_rank_analysis_t *const *an)
{
    if (!an || !an[0])
        return; /* none, or NCCL data only (results come first) */
    fprintf(out, "\n%sGPU time per rank%s (%% of the span from first to last GPU activity)\n", B, N);
    fprintf(out, "%s%5s %10s %8s %8s %8s %8s %9s %13s %11s%s\n", B, "rank", "span ms", "compute", "comm", "memory",
            "idle", "overlap", "host wait ms", "launch-bd", N);
    for (size_t i = 0; i < j->n; i++) {
        const mt_rank_analysis_t *a = an[i];
        if (!a)
            continue;
        /* host wait is summed over streams, so it can exceed the rank's idle time */
        fprintf(out, "%5d %10.3f %7.1f%% %7.1f%% %7.1f%% %7.1f%% %8.1f%% %13.3f %10.1f%%\n", a->rank, a->span_ns / 1e6,
                pct(a->compute_ns, a->span_ns), pct(a->comm_ns, a->span_ns), pct(a->memory_ns, a->span_ns),
                pct(a->idle_ns, a->span_ns), pct(a->overlap_ns, a->comm_total_ns), a->host_wait_ns / 1e6,
                pct(a->launch_bound_ns, a->idle_ns));
    }
    /* The heaviest annotations summed over ranks (GPU time they caused). */
    typedef struct tot {
        const char *name;
        uint64_t count;
        int64_t cpu, gpu;
    } tot_t;
    tot_t t[8];
    size_t nt = 0;
    int64_t busy = 0;
    for (size_t i = 0; i < j->n; i++)
        if (an[i])
            busy += an[i]->busy_ns;
    /* names of rank order's first result with the most GPU time; sum each over ranks */
    for (size_t i = 0; i < j->n && nt < 8; i++) {
        const mt_rank_analysis_t *a = an[i];
        for (size_t p = 0; a && p < a->n_proj && nt < 8; p++) {
            const char *nm = a->strings + a->proj[p].name.off;
            bool seen = false;
            for (size_t k = 0; k < nt; k++)
                seen |= !strcmp(t[k].name, nm);
            if (seen)
                continue;
            tot_t x = {nm, 0, 0, 0};
            for (size_t r = 0; r < j->n; r++)
                for (size_t q = 0; an[r] && q < an[r]->n_proj; q++)
                    if (!strcmp(an[r]->strings + an[r]->proj[q].name.off, nm)) {
                        x.count += an[r]->proj[q].count;
                        x.cpu += an[r]->proj[q].cpu_ns;
                        x.gpu += an[r]->proj[q].gpu_ns;
                    }
            t[nt++] = x;
        }
        break; /* the first rank's list names the candidates */
    }
    if (!nt)
        return;
    fprintf(out, "\n%sGPU projection%s (GPU work launched inside each annotation, all ranks)\n", B, N);
    fprintf(out, "%s%-40s %8s %12s %12s %8s%s\n", B, "annotation", "count", "CPU ms", "GPU ms", "GPU %", N);
    for (size_t k = 0; k < nt && k < 6; k++)
        fprintf(out, "%-40.40s %8llu %12.3f %12.3f %7.1f%%\n", t[k].name, (unsigned long long)t[k].count,
                t[k].cpu / 1e6, t[k].gpu / 1e6, pct(t[k].gpu, busy));
}

/* Ranks that share no collective with the reference's group cannot be
 * aligned with it; when they form groups of their own, the directory most
 * likely holds traces of more than one job. Say so, with the groups. */
static void warn_groups(FILE *out, const job_t *j, const mt_align_result_t *al, bool *head, const char *Y,
                        const char *N)
{
    int32_t n_groups = 0, multi = 0;
    for (size_t i = 0; i < al->n_clocks; i++)
        n_groups = al->clocks[i].group + 1 > n_groups ? al->clocks[i].group + 1 : n_groups;
    for (int32_t g = 0; g < n_groups; g++) {
        size_t k = 0;
        for (size_t i = 0; i < al->n_clocks; i++)
            k += al->clocks[i].group == g;
        multi += k >= 2;
    }
    if (multi < 2)
        return;
    if (!*head) {
        fprintf(out, "\n%swarnings%s\n", Y, N);
        *head = true;
    }
    fprintf(out, "  the ranks form %d groups that share no collective:", (int)n_groups);
    for (int32_t g = 0; g < n_groups; g++) {
        fprintf(out, "%s ranks", g ? " |" : "");
        size_t shown = 0;
        for (size_t i = 0; i < al->n_clocks && i < j->n; i++)
            if (al->clocks[i].group == g && shown++ < 8)
                fprintf(out, " %lld", (long long)j->res[i].rank);
        if (shown > 8)
            fprintf(out, " ...");
    }
    fprintf(out, "\n  they look like traces of different jobs%s: only group 0 (with the reference rank) is aligned\n",
            j->world_disagree ? " (their world sizes differ too)" : "");
}

void terminal_summary(const options_t *o, const input_list_t *l, const job_t *j, const phase_times_t *pt, int n_procs,
                      const char *merged_path, uint64_t merged_events, bool merge_failed)
{
    const mt_align_result_t *al = &j->al;
    const mt_rank_analysis_t *const *an = (const mt_rank_analysis_t *const *)j->an;
    const mt_cross_t *cross = j->cross;
    const mt_pipeline_t *pipe = j->pipe;
    const char *pipe_note = j->pipe_note[0] ? j->pipe_note : NULL;
    const mt_gate_t *gates = o->gates;
    size_t n_gates = o->n_gates;
    double t_load = pt->load, t_align = pt->align, t_merge = pt->merged_write;
    FILE *out = stdout;
    /* Under mpirun stdout is often a pseudo-terminal even when the user
     * pipes mpirun's output, so "auto" means no colour there. */
    bool under_mpirun = procs_mpi();
    bool color = o->color == 1 || (o->color < 0 && isatty(1) && !under_mpirun && !getenv("NO_COLOR"));
    const char *B = color ? "\033[1m" : "", *Y = color ? "\033[33m" : "", *N = color ? "\033[0m" : "";
    uint64_t json = 0, events = 0, kernels = 0;
    for (size_t i = 0; i < j->n; i++) {
        json += j->res[i].sum.bytes_json;
        events += j->res[i].sum.events;
        kernels += j->res[i].sum.by_class[MT_CLASS_COMM];
    }
    fprintf(out, "%smergetrace %s%s: %zu rank%s of world size %lld, %d process%s\n", B, MERGETRACE_VERSION, N, j->n,
            j->n == 1 ? "" : "s", (long long)j->world, n_procs, n_procs == 1 ? "" : "es");
    fprintf(out, "loaded %.1f MB of JSON, %llu events in %.3f s (%.0f MB/s); aligned in %.3f s", json / 1e6,
            (unsigned long long)events, t_load, t_load > 0 ? json / 1e6 / t_load : 0.0, t_align);
    if (merged_path)
        fprintf(out, "; merged trace in %.3f s", t_merge);
    fprintf(out, "\n\n");
    const mt_match_stats_t *m = &al->match;
    uint64_t inst = m->full + m->partial + m->unmatched + m->mismatched;
    fprintf(out, "collectives: %llu kernel%s -> %llu instance%s: %llu full, %llu partial, %llu unmatched, %llu mismatched\n",
            (unsigned long long)m->rows, m->rows == 1 ? "" : "s", (unsigned long long)inst, inst == 1 ? "" : "s",
            (unsigned long long)m->full,
            (unsigned long long)m->partial, (unsigned long long)m->unmatched, (unsigned long long)m->mismatched);
    static const char *const key_names[MT_KEY_COUNT_] = {"Comms Id", "group+Seq", "group+order", "stream+order", "P2P"};
    fprintf(out, "  matched by:");
    for (int k = 0; k < MT_KEY_COUNT_; k++)
        if (m->by_key[k])
            fprintf(out, " %s %llu", key_names[k], (unsigned long long)m->by_key[k]);
    fprintf(out, "%s\n\n", inst ? "" : " (none)");
    int32_t ref = -1;
    for (size_t i = 0; i < al->n_clocks; i++)
        if (al->clocks[i].reference)
            ref = al->clocks[i].rank;
    fprintf(out, "%sclock alignment%s onto rank %d%s\n", B, N, ref, o->no_align ? " (disabled: --no-align)" : "");
    fprintf(out, "%s%5s  %-26s %9s %11s %10s %8s %17s %5s%s\n", B, "rank", "file", "events", "offset ms", "drift ppm",
            "matched", "resid p50/p99 us", "viol", N);
    for (size_t i = 0; i < j->n; i++) {
        const file_result_t *r = &j->res[i];
        const mt_clock_t *c = &al->clocks[i];
        char resid[32], name[32];
        snprintf(resid, sizeof resid, "%.1f / %.1f", c->residual_p50_ns / 1e3, c->residual_p99_ns / 1e3);
        fprintf(out, "%5lld  %-26.26s %9llu %11.3f %10.3f %8llu %17s %5llu  %s\n", (long long)r->rank,
                inputs_label(l->files[r->index].path, 26, name, sizeof name), (unsigned long long)r->sum.events,
                c->offset_ns / 1e6, c->drift_ppm, (unsigned long long)c->matched, resid, (unsigned long long)c->violations,
                c->reference ? "ref" : c->connected ? "" : "NOT CONNECTED");
    }
    nccl_print(out, B, N, &j->nccl, l);
    print_analyses(out, B, N, j, an);
    if (cross) {
        fprintf(out, "\n");
        (void)mt_report_cross_text(cross, terminal_write, NULL);
    }
    if (pipe) {
        fprintf(out, "\n");
        (void)mt_report_pipeline_text(pipe, terminal_write, NULL);
    }
    if (pipe_note)
        fprintf(out, "%spipeline: %s\n", pipe ? "" : "\n", pipe_note);
    if (n_gates) {
        size_t passed = 0;
        for (size_t i = 0; i < n_gates; i++)
            passed += gates[i].pass;
        fprintf(out, "\n%sgates%s: %zu of %zu passed\n", B, N, passed, n_gates);
        for (size_t i = 0; i < n_gates; i++) {
            if (gates[i].measured)
                fprintf(out, "  %s %s (%.6g)\n", gates[i].pass ? "pass" : "FAIL", gates[i].expr, gates[i].value);
            else
                fprintf(out, "  FAIL %s (not measured: %s)\n", gates[i].expr, gates[i].why);
        }
    }
    /* Warnings: everything skipped or doubtful, so the numbers can be trusted. */
    bool head = false;
#define WARN(...)                                                      \
    do {                                                               \
        if (!head) {                                                   \
            fprintf(out, "\n%swarnings%s\n", Y, N);                    \
            head = true;                                               \
        }                                                              \
        fprintf(out, "  " __VA_ARGS__);                                \
    } while (0)
    if (j->n_missing) {
        WARN("%zu of %lld ranks have no trace:", j->n_missing, (long long)j->world);
        for (size_t i = 0; i < j->n_missing && i < 32; i++)
            fprintf(out, " %lld", (long long)j->missing[i]);
        fprintf(out, "%s\n", j->n_missing > 32 ? " ..." : "");
    }
    for (size_t i = 0; i < j->n_skipped; i++)
        if (j->skipped[i].nccl.left_out)
            WARN("left out %s: %s\n", l->files[j->skipped[i].index].path, j->skipped[i].message);
        else
            WARN("skipped %s: not a trace (%s)\n", l->files[j->skipped[i].index].path, j->skipped[i].message);
    if (j->world_disagree)
        WARN("the traces disagree on world_size; using the largest, %lld\n", (long long)j->world);
    if (kernels == 0 && nccl_job_rows(&j->nccl) == 0)
        WARN("no communication kernels in any trace: nothing to align the clocks with\n");
    nccl_warn(out, Y, N, &head, &j->nccl, l);
    for (size_t i = 0; i < j->n; i++) {
        const file_result_t *r = &j->res[i];
        const mt_trace_summary_t *s = &r->sum;
        const mt_clock_t *c = &al->clocks[i];
        const char *p = l->files[r->index].path;
        if (!c->connected)
            WARN("rank %lld shares no matched collective with rank %d: its clock is left uncorrected\n",
                 (long long)r->rank, ref);
        if (c->violations)
            WARN("rank %lld: %llu collectives end before their last participant started, beyond the residual "
                 "(clock fit doubtful)\n",
                 (long long)r->rank, (unsigned long long)c->violations);
        if (s->truncated)
            WARN("rank %lld: %s is truncated at byte %llu: %llu events loaded, the rest is lost (--strict makes "
                 "this an error)\n",
                 (long long)r->rank, p, (unsigned long long)s->truncated_at, (unsigned long long)s->events);
        if (s->events && s->first_ns < 100000000000000000LL && s->ts_style != MT_TS_REL)
            WARN("rank %lld: %s: timestamps are not on the Unix epoch%s\n", (long long)r->rank, inputs_base(p),
                 s->truncated ? " (baseTimeNanoseconds was probably in the lost tail)" : "");
        if (s->world_size > 0 && r->rank >= s->world_size)
            WARN("rank %lld: %s: rank is not below the trace's world_size %lld\n", (long long)r->rank, p,
                 (long long)s->world_size);
        if (s->other_cats)
            WARN("rank %lld: %llu events of unknown categories kept but not analysed\n", (long long)r->rank,
                 (unsigned long long)s->other_cats);
        if (s->bad_utf8)
            WARN("rank %lld: %llu strings held invalid UTF-8 (replaced by U+FFFD)\n", (long long)r->rank,
                 (unsigned long long)s->bad_utf8);
        if (s->neg_dur)
            WARN("rank %lld: %llu events had a negative duration (taken as 0)\n", (long long)r->rank,
                 (unsigned long long)s->neg_dur);
        if (s->by_class[MT_CLASS_COMM] > s->link.comm_with_coll)
            WARN("rank %lld: %llu communication kernels could not be tied to a collective\n", (long long)r->rank,
                 (unsigned long long)(s->by_class[MT_CLASS_COMM] - s->link.comm_with_coll));
        if (r->rank_source == MT_RANK_FROM_FILENAME)
            WARN("rank %lld: %s has no distributedInfo.rank; rank taken from the file name\n", (long long)r->rank,
                 inputs_base(p));
        if (r->rank_source == MT_RANK_FROM_DEFAULT)
            WARN("%s names no rank; as the only input it is taken as rank 0\n", inputs_base(p));
    }
    warn_groups(out, j, al, &head, Y, N);
    if (m->partial)
        WARN("%llu collective instances lack some participants (those ranks' traces miss the kernels: cut short, "
             "dropped events, or not the same job)\n",
             (unsigned long long)m->partial);
    if (m->mismatched)
        WARN("%llu collective instances disagree across ranks (collective or size): not used for alignment\n",
             (unsigned long long)m->mismatched);
    if (merge_failed)
        WARN("the merged trace was not written (see the error above)\n");
#undef WARN
    fprintf(out, "\nwrote %s/report.json", o->out_dir);
    if (merged_path)
        fprintf(out, " and %s (%llu events)", merged_path, (unsigned long long)merged_events);
    fprintf(out, "\n");
}

