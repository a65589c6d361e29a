/* --timings: phase wall times and peak RSS over all processes, on stderr and
 * in timings.json next to report.json. */
#define _POSIX_C_SOURCE 200809L
#include "timings.h"
#include "say.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mergetrace/outdir.h"
#include "procs.h"
#include "mergetrace/heap.h"
#include "mergetrace/report_timings.h"

double timings_cpu(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0)
        return 0;
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static mt_status_t render_timings(const void *arg, mt_write_fn write, void *ctx)
{
    return mt_timings_json(arg, write, ctx);
}

int timings_report(MPI_Comm comm, const mt_timings_t *mine, const char *dir, char *msg, size_t cap)
{
    int me;
    procs_comm_rank(comm, &me);
    mt_timings_t t = *mine;
    procs_reduce(mine->seconds, t.seconds, MT_TPH_COUNT_, MPI_DOUBLE, MPI_MAX, 0, comm);
    /* MPI_LONG_INT pairs a long with the process that holds it. */
    struct {
        long v;
        int who;
    } rss = {(long)mt_heap_peak(), me}, peak;
    procs_reduce(&rss, &peak, 1, MPI_LONG_INT, MPI_MAXLOC, 0, comm);
    uint64_t largest = mine->largest;
    procs_reduce(&largest, &t.largest, 1, MPI_UINT64_T, MPI_MAX, 0, comm);
    procs_reduce(&mine->helpers, &t.helpers, 1, MPI_INT, MPI_SUM, 0, comm);
    /* the largest trace that the process with the highest peak handled */
    procs_bcast(&peak.who, 1, MPI_INT, 0, comm);
    if (me == peak.who && me != 0)
        procs_send(&largest, 1, MPI_UINT64_T, 0, 9002, comm);
    if (me == 0)
        t.largest_on_peak = largest;
    if (me == 0 && peak.who != 0)
        procs_recv(&t.largest_on_peak, 1, MPI_UINT64_T, peak.who, 9002, comm, NULL);
    if (me != 0)
        return 0;
    for (int i = 0; i < MT_TPH_COUNT_; i++)
        if (mt_timings_root_only((mt_timings_phase_t)i))
            t.seconds[i] = mine->seconds[i];
    t.peak = peak.v;
    t.peak_who = peak.who;
    t.p0_peak = mt_heap_peak();
    mt_buf_t text = {0};
    if (mt_timings_text(&t, mt_buf_write, &text) == MT_OK) /* each line said whole */
        for (size_t at = 0, end; at < text.len; at = end + 1) {
            for (end = at; end < text.len && text.data[end] != '\n'; end++)
                ;
            say("%.*s\n", (int)(end - at), text.data + at);
        }
    mt_buf_free(&text);

    if (!dir)
        return 0; /* the run failed before its output directory existed */
    return mt_outdir_write(dir, "timings.json", render_timings, &t, 0, msg, cap);
}
