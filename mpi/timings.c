/* --timings: phase wall times and peak RSS over all processes, on stderr and
 * in timings.json next to report.json. */
#define _POSIX_C_SOURCE 200809L
#include "timings.h"
#include "say.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "merged_io.h"
#include "procs.h"
#include "mergetrace/heap.h"
#include "mergetrace/version.h"

double timings_cpu(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0)
        return 0;
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#define N_PHASES 11

static void to_array(const phase_times_t *t, double *a)
{
    const double v[N_PHASES] = {t->load,       t->parse,      t->rank_passes,  t->gather, t->align, t->match,
                                t->clock_fit,  t->cross_rank, t->merged_write, t->report, t->total};
    memcpy(a, v, sizeof v);
}

static const char *const phase_names[N_PHASES] = {"load",      "parse",      "rank_passes",  "gather",
                                                  "align",     "match",      "clock_fit",    "cross_rank",
                                                  "merged_write", "report",  "total"};
/* Phases measured on process 0 only: their value comes from there. */
static const int root_only[N_PHASES] = {[5] = 1, [6] = 1, [7] = 1, [9] = 1};

int timings_report(MPI_Comm comm, const phase_times_t *mine, const job_size_t *size, int n_procs, const char *dir,
                   char *msg, size_t cap)
{
    int me;
    procs_comm_rank(comm, &me);
    double local[N_PHASES], maxed[N_PHASES];
    to_array(mine, local);
    procs_reduce(local, maxed, N_PHASES, MPI_DOUBLE, MPI_MAX, 0, comm);
    /* MPI_LONG_INT pairs a long with the process that holds it. */
    struct {
        long v;
        int who;
    } rss = {(long)mt_heap_peak(), me}, peak;
    procs_reduce(&rss, &peak, 1, MPI_LONG_INT, MPI_MAXLOC, 0, comm);
    uint64_t largest = size->largest_trace, largest_all = 0, largest_on_peak = 0;
    procs_reduce(&largest, &largest_all, 1, MPI_UINT64_T, MPI_MAX, 0, comm);
    int helpers = 0;
    procs_reduce(&mine->merged_helper, &helpers, 1, MPI_INT, MPI_SUM, 0, comm);
    /* the largest trace that the process with the highest peak handled */
    procs_bcast(&peak.who, 1, MPI_INT, 0, comm);
    if (me == peak.who && me != 0)
        procs_send(&largest, 1, MPI_UINT64_T, 0, 9002, comm);
    if (me == 0)
        largest_on_peak = largest;
    if (me == 0 && peak.who != 0)
        procs_recv(&largest_on_peak, 1, MPI_UINT64_T, peak.who, 9002, comm, NULL);
    if (me != 0)
        return 0;
    for (int i = 0; i < N_PHASES; i++)
        if (root_only[i])
            maxed[i] = local[i];

    double mb = (double)size->json_bytes / 1e6, load = maxed[0];
    say("mergetrace: timings (%d process%s, %llu rank%s, %.1f MB of JSON, %llu events)\n", n_procs,
            n_procs == 1 ? "" : "es", (unsigned long long)size->ranks, size->ranks == 1 ? "" : "s", mb,
            (unsigned long long)size->events);
    for (int i = 0; i < N_PHASES; i++)
        say("  %-13s %9.3f s%s\n", phase_names[i], maxed[i],
                root_only[i]             ? "  (process 0)"
                : (i == 1 || i == 2)     ? "  (max over processes)"
                : i == 8 && helpers > 0 ? "  (deflated on a helper thread)"
                                         : "");
    if (helpers > 0 && helpers < n_procs)
        say("  helper threads for the merged trace's deflate: %d of %d processes\n", helpers, n_procs);
    say("  CPU s on process 0: load %.3f, match %.3f, clock_fit %.3f, cross_rank %.3f (critical path %.3f)\n",
            mine->load_cpu, mine->match_cpu, mine->clock_fit_cpu, mine->cross_rank_cpu, mine->critpath_cpu);
    if (mine->match_procs > 1)
        say("  match         sharded: each of the %d processes matched the rows whose key hashes to it\n",
                mine->match_procs);
    say("  critical path %9.3f s on process 0 (in cross_rank), peak RSS raised by %.1f MB\n",
            mine->critpath, (double)mine->critpath_rss_growth / 1e6);
    uint64_t p0 = mt_heap_peak();
    char budget[64] = "no budget";
    if (mine->plan.budget)
        snprintf(budget, sizeof budget, "budget %.1f MB", mine->plan.budget / 1e6);
    /* the peak is over the whole run: the load's, when that was higher */
    say("  memory plan   process 0 at %.1f MB after its load; projected +%.1f MB without the critical "
                    "path, +%.1f MB with it (%llu GPU activities, %llu rows); %s%s; process 0's peak over the run "
                    "%.1f MB\n",
            mine->plan.rss / 1e6, mine->plan.without / 1e6, mine->plan.with / 1e6,
            (unsigned long long)mine->plan.acts, (unsigned long long)mine->plan.rows, budget,
            mine->plan.skipped ? ": critical path left out" : "", p0 / 1e6);
    if (size->files && n_procs > 1) { /* how the files were shared (--local: by node, share_node_files) */
        say("  files         per process, from process 0:");
        for (int p = 0; p < n_procs && p < 16; p++)
            say("%s %llu", p ? "," : "", (unsigned long long)size->files[p]);
        say("%s\n", n_procs > 16 ? ", ... (timings.json: every process)" : "");
    }
    say("  load rate     %9.1f MB/s, %.2f M events/s\n", load > 0 ? mb / load : 0.0,
            load > 0 ? (double)size->events / 1e6 / load : 0.0);
    say("  peak RSS      %9.1f MB on process %d (%.2fx its largest trace, %.1f MB)\n", peak.v / 1e6,
            peak.who, largest_on_peak ? (double)peak.v / (double)largest_on_peak : 0.0, largest_on_peak / 1e6);

    if (!dir)
        return 0; /* the run failed before its output directory existed */
    char path[PATH_MAX], tmp[PATH_MAX + 32];
    snprintf(path, sizeof path, "%.4000s/timings.json", dir);
    FILE *f = mt_outdir_tmp_create(path, tmp, sizeof tmp);
    if (!f) {
        snprintf(msg, cap, "%.900s: cannot create (%s)", tmp, strerror(errno));
        return 1;
    }
    /* the generator first: mt_merge_sniff_output knows the file by it */
    fprintf(f, "{\n  \"generator\": \"mergetrace " MERGETRACE_VERSION "\",\n");
    fprintf(f, "  \"processes\": %d,\n  \"ranks\": %llu,\n  \"json_bytes\": %llu,\n  \"events\": %llu,\n", n_procs,
            (unsigned long long)size->ranks, (unsigned long long)size->json_bytes,
            (unsigned long long)size->events);
    fprintf(f, "  \"seconds\": {");
    for (int i = 0; i < N_PHASES; i++)
        fprintf(f, "%s\"%s\": %.6f", i ? ", " : "", phase_names[i], maxed[i]);
    fprintf(f, "},\n  \"cpu_seconds\": {\"match\": %.6f, \"clock_fit\": %.6f, \"cross_rank\": %.6f, \"load\": %.6f, "
               "\"critical_path\": %.6f",
            mine->match_cpu, mine->clock_fit_cpu, mine->cross_rank_cpu, mine->load_cpu, mine->critpath_cpu);
    fprintf(f, "},\n  \"critical_path\": {\"seconds\": %.6f, \"peak_rss_growth_bytes\": %llu",
            mine->critpath, (unsigned long long)mine->critpath_rss_growth);
    fprintf(f, "},\n  \"memory_plan\": {\"rss_after_load_bytes\": %llu, \"without_critical_path_bytes\": %llu, "
               "\"with_critical_path_bytes\": %llu, \"budget_bytes\": %llu, \"gpu_activities\": %llu, \"rows\": %llu, "
               "\"critical_path_left_out\": %s, \"process0_peak_rss_bytes\": %llu",
            (unsigned long long)mine->plan.rss, (unsigned long long)mine->plan.without,
            (unsigned long long)mine->plan.with, (unsigned long long)mine->plan.budget,
            (unsigned long long)mine->plan.acts, (unsigned long long)mine->plan.rows,
            mine->plan.skipped ? "true" : "false", (unsigned long long)p0);
    fprintf(f, "},\n  \"match_processes\": %d,\n  \"merged_deflate_threads\": %d,\n", mine->match_procs > 0 ? mine->match_procs : 1,
            helpers);
    fprintf(f, "  \"files_per_process\": [");
    for (int p = 0; size->files && p < n_procs; p++)
        fprintf(f, "%s%llu", p ? ", " : "", (unsigned long long)size->files[p]);
    fprintf(f, "],\n  \"peak_rss_bytes\": %ld,\n  \"peak_rss_process\": %d,\n", peak.v, peak.who);
    fprintf(f, "  \"largest_trace_bytes\": %llu,\n  \"largest_trace_on_peak_process_bytes\": %llu\n}\n",
            (unsigned long long)largest_all, (unsigned long long)largest_on_peak);
    int bad = ferror(f) != 0;
    bad |= fclose(f) != 0;
    if (bad || mt_outdir_renaming(dir, "timings.json", tmp) || rename(tmp, path) != 0) {
        snprintf(msg, cap, "%.900s: write failed (%s)", path, strerror(errno));
        remove(tmp);
        return 1;
    }
    return 0;
}
