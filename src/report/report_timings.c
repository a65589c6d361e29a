/* --timings (timings.h): the block for stderr and timings.json, from the
 * numbers the program reduced over its processes. */
#include "mergetrace/report_timings.h"

#include "base/text.h"
#include "mergetrace/version.h"

static const char *const phase_names[MT_TPH_COUNT_] = {"load",      "parse",      "rank_passes",  "gather",
                                                      "align",     "match",      "clock_fit",    "cross_rank",
                                                      "merged_write", "report",  "total"};

bool mt_timings_root_only(mt_timings_phase_t p)
{
    return p == MT_TPH_MATCH || p == MT_TPH_CLOCK_FIT || p == MT_TPH_CROSS_RANK || p == MT_TPH_REPORT;
}

mt_status_t mt_timings_text(const mt_timings_t *t, mt_write_fn write, void *ctx)
{
    mt_out_t o = {.w = write, .ctx = ctx, .st = MT_OK};
    int n_procs = t->n_procs;
    double mb = (double)t->json_bytes / 1e6, load = t->seconds[MT_TPH_LOAD];
    mt_out_printf(&o, "mergetrace: timings (%d process%s, %llu rank%s, %.1f MB of JSON, %llu events)\n", n_procs,
                  n_procs == 1 ? "" : "es", (unsigned long long)t->ranks, t->ranks == 1 ? "" : "s", mb,
                  (unsigned long long)t->events);
    for (int i = 0; i < MT_TPH_COUNT_; i++)
        mt_out_printf(&o, "  %-13s %9.3f s%s\n", phase_names[i], t->seconds[i],
                      mt_timings_root_only((mt_timings_phase_t)i)            ? "  (process 0)"
                      : (i == MT_TPH_PARSE || i == MT_TPH_RANK_PASSES)         ? "  (max over processes)"
                      : i == MT_TPH_MERGED_WRITE && t->helpers > 0            ? "  (deflated on a helper thread)"
                                                                             : "");
    if (t->helpers > 0 && t->helpers < n_procs)
        mt_out_printf(&o, "  helper threads for the merged trace's deflate: %d of %d processes\n", t->helpers,
                      n_procs);
    mt_out_printf(&o,
                  "  CPU s on process 0: load %.3f, match %.3f, clock_fit %.3f, cross_rank %.3f (critical path "
                  "%.3f)\n",
                  t->load_cpu, t->match_cpu, t->clock_fit_cpu, t->cross_rank_cpu, t->critpath_cpu);
    if (t->match_procs > 1)
        mt_out_printf(&o, "  match         sharded: each of the %d processes matched the rows whose key hashes to it\n",
                      t->match_procs);
    mt_out_printf(&o, "  critical path %9.3f s on process 0 (in cross_rank), peak RSS raised by %.1f MB\n",
                  t->critpath, (double)t->critpath_rss_growth / 1e6);
    char budget[64] = "no budget";
    if (t->plan_budget)
        snprintf(budget, sizeof budget, "budget %.1f MB", t->plan_budget / 1e6);
    /* the peak is over the whole run: the load's, when that was higher */
    mt_out_printf(&o,
                  "  memory plan   process 0 at %.1f MB after its load; projected +%.1f MB without the critical "
                  "path, +%.1f MB with it (%llu GPU activities, %llu rows); %s%s; process 0's peak over the run "
                  "%.1f MB\n",
                  t->plan_rss / 1e6, t->plan_without / 1e6, t->plan_with / 1e6, (unsigned long long)t->plan_acts,
                  (unsigned long long)t->plan_rows, budget, t->plan_skipped ? ": critical path left out" : "",
                  t->p0_peak / 1e6);
    if (t->files && n_procs > 1) { /* how the files were shared (--local: by node) */
        mt_out_puts(&o, "  files         per process, from process 0:");
        for (int p = 0; p < n_procs && p < 16; p++)
            mt_out_printf(&o, "%s %llu", p ? "," : "", (unsigned long long)t->files[p]);
        mt_out_printf(&o, "%s\n", n_procs > 16 ? ", ... (timings.json: every process)" : "");
    }
    mt_out_printf(&o, "  load rate     %9.1f MB/s, %.2f M events/s\n", load > 0 ? mb / load : 0.0,
                  load > 0 ? (double)t->events / 1e6 / load : 0.0);
    mt_out_printf(&o, "  peak RSS      %9.1f MB on process %d (%.2fx its largest trace, %.1f MB)\n", t->peak / 1e6,
                  t->peak_who, t->largest_on_peak ? (double)t->peak / (double)t->largest_on_peak : 0.0,
                  t->largest_on_peak / 1e6);
    return o.st;
}

mt_status_t mt_timings_json(const mt_timings_t *t, mt_write_fn write, void *ctx)
{
    mt_out_t o = {.w = write, .ctx = ctx, .st = MT_OK};
    mt_out_puts(&o, "{\n  \"generator\": \"mergetrace " MERGETRACE_VERSION "\",\n");
    mt_out_printf(&o, "  \"processes\": %d,\n  \"ranks\": %llu,\n  \"json_bytes\": %llu,\n  \"events\": %llu,\n",
                  t->n_procs, (unsigned long long)t->ranks, (unsigned long long)t->json_bytes,
                  (unsigned long long)t->events);
    mt_out_puts(&o, "  \"seconds\": {");
    for (int i = 0; i < MT_TPH_COUNT_; i++)
        mt_out_printf(&o, "%s\"%s\": %.6f", i ? ", " : "", phase_names[i], t->seconds[i]);
    mt_out_printf(&o,
                  "},\n  \"cpu_seconds\": {\"match\": %.6f, \"clock_fit\": %.6f, \"cross_rank\": %.6f, \"load\": "
                  "%.6f, \"critical_path\": %.6f",
                  t->match_cpu, t->clock_fit_cpu, t->cross_rank_cpu, t->load_cpu, t->critpath_cpu);
    mt_out_printf(&o, "},\n  \"critical_path\": {\"seconds\": %.6f, \"peak_rss_growth_bytes\": %llu", t->critpath,
                  (unsigned long long)t->critpath_rss_growth);
    mt_out_printf(&o,
                  "},\n  \"memory_plan\": {\"rss_after_load_bytes\": %llu, \"without_critical_path_bytes\": %llu, "
                  "\"with_critical_path_bytes\": %llu, \"budget_bytes\": %llu, \"gpu_activities\": %llu, \"rows\": "
                  "%llu, \"critical_path_left_out\": %s, \"process0_peak_rss_bytes\": %llu",
                  (unsigned long long)t->plan_rss, (unsigned long long)t->plan_without,
                  (unsigned long long)t->plan_with, (unsigned long long)t->plan_budget,
                  (unsigned long long)t->plan_acts, (unsigned long long)t->plan_rows,
                  t->plan_skipped ? "true" : "false", (unsigned long long)t->p0_peak);
    mt_out_printf(&o, "},\n  \"match_processes\": %d,\n  \"merged_deflate_threads\": %d,\n",
                  t->match_procs > 0 ? t->match_procs : 1, t->helpers);
    mt_out_puts(&o, "  \"files_per_process\": [");
    for (int p = 0; t->files && p < t->n_procs; p++)
        mt_out_printf(&o, "%s%llu", p ? ", " : "", (unsigned long long)t->files[p]);
    mt_out_printf(&o, "],\n  \"peak_rss_bytes\": %ld,\n  \"peak_rss_process\": %d,\n", t->peak, t->peak_who);
    mt_out_printf(&o, "  \"largest_trace_bytes\": %llu,\n  \"largest_trace_on_peak_process_bytes\": %llu\n}\n",
                  (unsigned long long)t->largest, (unsigned long long)t->largest_on_peak);
    return o.st;
}
