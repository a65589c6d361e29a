/* report.json sections of the per-rank analyses: temporal, overlap, idle,
 * projection (per rank and summed over ranks), kernels, launch. */
#include "mergetrace/analysis.h"
#include "mergetrace/report.h"
#include "base/text.h"
#include "report/sections.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* `, "key": <us>` with exactly 3 decimals from integer ns. */
static void us(mt_out_t *o, const char *key, int64_t ns)
{
    mt_out_printf(o, ", \"%s\": ", key);
    mt_out_us(o, ns);
}

/* `, "key": <num / den * 100>` with 2 decimals; 0 when den is not positive. */
static void pct(mt_out_t *o, const char *key, int64_t num, int64_t den)
{
    mt_out_printf(o, ", \"%s\": %.2f", key, den > 0 ? 100.0 * (double)num / (double)den : 0.0);
}

static void str(mt_out_t *o, const mt_rank_analysis_t *a, mt_an_str_t s)
{
    if (o->st == MT_OK)
        o->st = mt_json_string(s.len ? a->strings + s.off : "", s.len, o->w, o->ctx);
}

/* "key": [ then rows; each row starts with "\n  {" after a comma when not first. */
static void open_list(mt_out_t *o, const char *key, int first_section)
{
    mt_out_printf(o, "%s\"%s\": [", first_section ? "" : ",\n ", key);
}

static void row(mt_out_t *o, int *first, int32_t rank)
{
    mt_out_printf(o, "%s\n  {\"rank\": %d", *first ? "" : ",", rank);
    *first = 0;
}

static void close_list(mt_out_t *o, int first)
{
    mt_out_put(o, first ? "]" : "\n ]", first ? 1 : 3);
}

/* One name's totals across ranks. */
typedef struct tot {
    const char *nm;
    size_t len;
    uint64_t count;
    int64_t cpu, gpu, gpu_same;
} tot_t;

static int tot_name_cmp(const void *pa, const void *pb)
{
    const tot_t *a = pa, *b = pb;
    int c = memcmp(a->nm, b->nm, a->len < b->len ? a->len : b->len);
    if (c)
        return c;
    return (a->len > b->len) - (a->len < b->len);
}

static int tot_gpu_cmp(const void *pa, const void *pb)
{
    const tot_t *a = pa, *b = pb;
    if (a->gpu != b->gpu)
        return a->gpu > b->gpu ? -1 : 1;
    return tot_name_cmp(pa, pb);
}

static void projection_total(mt_out_t *o, const mt_rank_analysis_t *const *a, size_t n)
{
    size_t nt = 0;
    int64_t busy = 0;
    for (size_t r = 0; r < n; r++) {
        nt += a[r]->n_proj;
        busy += a[r]->busy_ns;
    }
    tot_t *t = malloc((nt ? nt : 1) * sizeof *t);
    if (!t) {
        if (o->st == MT_OK)
            o->st = MT_ERR_NOMEM;
        return;
    }
    nt = 0;
    for (size_t r = 0; r < n; r++)
        for (size_t i = 0; i < a[r]->n_proj; i++) {
            const mt_an_proj_t *p = &a[r]->proj[i];
            t[nt++] = (tot_t){p->name.len ? a[r]->strings + p->name.off : "", p->name.len, p->count, p->cpu_ns,
                              p->gpu_ns, p->gpu_same_thread_ns};
        }
    qsort(t, nt, sizeof *t, tot_name_cmp);
    size_t k = 0;
    for (size_t i = 0; i < nt; i++) {
        if (k && tot_name_cmp(&t[k - 1], &t[i]) == 0) {
            t[k - 1].count += t[i].count;
            t[k - 1].cpu += t[i].cpu;
            t[k - 1].gpu += t[i].gpu;
            t[k - 1].gpu_same += t[i].gpu_same;
        } else {
            t[k++] = t[i];
        }
    }
    qsort(t, k, sizeof *t, tot_gpu_cmp);
    open_list(o, "projection_total", 0);
    for (size_t i = 0; i < k; i++) {
        mt_out_printf(o, "%s\n  {\"name\": ", i ? "," : "");
        if (o->st == MT_OK)
            o->st = mt_json_string(t[i].nm, t[i].len, o->w, o->ctx);
        mt_out_printf(o, ", \"count\": %llu", (unsigned long long)t[i].count);
        us(o, "cpu_us", t[i].cpu);
        us(o, "gpu_us", t[i].gpu);
        pct(o, "gpu_pct", t[i].gpu, busy);
        us(o, "gpu_same_thread_us", t[i].gpu_same);
        mt_out_put(o, "}", 1);
    }
    close_list(o, k == 0);
    free(t);
}

mt_status_t mt_report_rank_sections(const mt_rank_analysis_t *const *a, size_t n, mt_write_fn w, void *ctx)
{
    mt_out_t o = {w, ctx, MT_OK};
    int first;

    open_list(&o, "temporal", 1);
    first = 1;
    for (size_t r = 0; r < n; r++) {
        const mt_rank_analysis_t *x = a[r];
        row(&o, &first, x->rank);
        us(&o, "span_us", x->span_ns);
        us(&o, "compute_us", x->compute_ns);
        us(&o, "comm_us", x->comm_ns);
        us(&o, "memory_us", x->memory_ns);
        us(&o, "idle_us", x->idle_ns);
        pct(&o, "compute_pct", x->compute_ns, x->span_ns);
        pct(&o, "comm_pct", x->comm_ns, x->span_ns);
        pct(&o, "memory_pct", x->memory_ns, x->span_ns);
        pct(&o, "idle_pct", x->idle_ns, x->span_ns);
        mt_out_put(&o, "}", 1);
    }
    close_list(&o, first);

    open_list(&o, "overlap", 0);
    first = 1;
    for (size_t r = 0; r < n; r++) {
        const mt_rank_analysis_t *x = a[r];
        row(&o, &first, x->rank);
        us(&o, "comm_us", x->comm_total_ns);
        us(&o, "overlapped_us", x->overlap_ns);
        pct(&o, "overlap_pct", x->overlap_ns, x->comm_total_ns);
        mt_out_put(&o, "}", 1);
    }
    close_list(&o, first);

    open_list(&o, "idle", 0);
    first = 1;
    for (size_t r = 0; r < n; r++) {
        const mt_rank_analysis_t *x = a[r];
        row(&o, &first, x->rank);
        us(&o, "host_wait_us", x->host_wait_ns);
        us(&o, "kernel_wait_us", x->kernel_wait_ns);
        us(&o, "other_us", x->other_ns);
        pct(&o, "host_wait_pct", mt_an_host_wait(x), x->span_ns); /* the terminal's and report.html's */
        mt_out_printf(&o, ", \"streams\": [");
        for (size_t i = 0; i < x->n_streams; i++) {
            const mt_an_stream_t *s = &x->streams[i];
            mt_out_printf(&o, "%s{\"device\": %lld, \"stream\": ", i ? ", " : "", (long long)s->device);
            if (s->name.len)
                str(&o, x, s->name);
            else
                mt_out_printf(&o, "%lld", (long long)s->stream);
            us(&o, "host_wait_us", s->host_wait_ns);
            us(&o, "kernel_wait_us", s->kernel_wait_ns);
            us(&o, "other_us", s->other_ns);
            mt_out_printf(&o, ", \"work\": %s", s->work ? "true" : "false");
            mt_out_put(&o, "}", 1);
        }
        mt_out_put(&o, "]}", 2);
    }
    close_list(&o, first);

    open_list(&o, "projection", 0);
    first = 1;
    for (size_t r = 0; r < n; r++) {
        const mt_rank_analysis_t *x = a[r];
        for (size_t i = 0; i < x->n_proj; i++) {
            const mt_an_proj_t *p = &x->proj[i];
            row(&o, &first, x->rank);
            mt_out_put(&o, ", \"name\": ", 10);
            str(&o, x, p->name);
            mt_out_printf(&o, ", \"count\": %llu", (unsigned long long)p->count);
            us(&o, "cpu_us", p->cpu_ns);
            us(&o, "gpu_us", p->gpu_ns);
            us(&o, "gpu_span_us", p->gpu_span_ns);
            pct(&o, "gpu_pct", p->gpu_ns, x->busy_ns);
            us(&o, "gpu_same_thread_us", p->gpu_same_thread_ns);
            mt_out_put(&o, "}", 1);
        }
    }
    close_list(&o, first);

    projection_total(&o, a, n);

    open_list(&o, "kernels", 0);
    first = 1;
    for (size_t r = 0; r < n; r++) {
        const mt_rank_analysis_t *x = a[r];
        for (size_t i = 0; i < x->n_kernels; i++) {
            const mt_an_kernel_t *k = &x->kernels[i];
            row(&o, &first, x->rank);
            mt_out_printf(&o, ", \"class\": \"%s\", \"name\": ", mt_an_class_str((mt_an_class_t)k->cls));
            str(&o, x, k->name);
            mt_out_printf(&o, ", \"count\": %llu", (unsigned long long)k->count);
            us(&o, "total_us", k->total_ns);
            us(&o, "mean_us", k->mean_ns);
            us(&o, "p50_us", k->p50_ns);
            us(&o, "p99_us", k->p99_ns);
            us(&o, "max_us", k->max_ns);
            mt_out_put(&o, "}", 1);
        }
    }
    close_list(&o, first);

    open_list(&o, "launch", 0);
    first = 1;
    for (size_t r = 0; r < n; r++) {
        const mt_rank_analysis_t *x = a[r];
        row(&o, &first, x->rank);
        mt_out_printf(&o, ", \"kernels_launched\": %llu", (unsigned long long)x->launched);
        us(&o, "delay_p50_us", x->delay_p50_ns);
        us(&o, "delay_p90_us", x->delay_p90_ns);
        us(&o, "delay_p99_us", x->delay_p99_ns);
        us(&o, "delay_max_us", x->delay_max_ns);
        us(&o, "idle_us", x->idle_ns);
        us(&o, "launch_bound_us", x->launch_bound_ns);
        pct(&o, "launch_bound_pct", x->launch_bound_ns, x->idle_ns);
        mt_out_put(&o, "}", 1);
    }
    close_list(&o, first);
    return o.st;
}

/* ---- terminal text ---- */

/* Idle or communication time below this is a few launch latencies (5-10 us
 * each) or a few short gaps: a share of it would describe a handful of
 * events, not the rank, so the terminal prints "-" instead (report.json
 * keeps the number). Shares of the span are always printed: the span is
 * the whole of the rank's GPU timeline, however short. */
#define TEXT_PCT_MIN_NS 100000

/* "  61.2%" right-aligned in w columns, or "-" when den < min (or 0). */
static void text_pct(mt_out_t *o, int w, int64_t num, int64_t den, int64_t min)
{
    if (den <= 0 || den < min)
        mt_out_printf(o, " %*s", w, "-");
    else
        mt_out_printf(o, " %*.1f%%", w - 1, 100.0 * (double)num / (double)den);
}

/* Past this many ranks the GPU-time table shows its extremes and a
 * summary line (issue 39 papercut: 305 terminal lines at 128 ranks); every
 * rank stays in report.json and report.html. */
#define TEXT_RANKS_MAX 32
#define TEXT_RANKS_EXTREME 5

typedef struct idle_key {
    double idle;
    size_t i;
} idle_key_t;

static int idle_key_cmp(const void *pa, const void *pb)
{
    const idle_key_t *a = pa, *b = pb;
    if (a->idle != b->idle)
        return a->idle < b->idle ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

static double share(int64_t num, int64_t den)
{
    return den > 0 ? 100.0 * (double)num / (double)den : 0.0;
}

static int dbl_cmp(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

mt_status_t mt_report_rank_text(const mt_rank_analysis_t *const *a, size_t n, mt_write_fn w, void *ctx)
{
    mt_out_t o = {w, ctx, MT_OK};
    size_t first = 0;
    while (first < n && !a[first])
        first++;
    if (first == n)
        return MT_OK;
    mt_out_puts(&o, "GPU time per rank (% of the span from the rank's first to its last GPU activity)\n");
    mt_out_printf(&o, "%5s %10s %8s %13s %8s %8s %12s %10s %13s\n", "rank", "span ms", "compute", "exposed comm",
                  "memory", "idle", "comm hidden", "host wait", "launch-bound");
    /* many ranks: the TEXT_RANKS_EXTREME least and most idle, in rank order */
    size_t present = 0;
    for (size_t i = first; i < n; i++)
        present += a[i] != NULL;
    unsigned char *show = NULL;
    if (present > TEXT_RANKS_MAX) {
        idle_key_t *k = malloc(present * sizeof *k);
        show = calloc(n, 1);
        if (!k || !show) {
            free(k);
            free(show);
            return MT_ERR_NOMEM;
        }
        size_t m = 0;
        for (size_t i = first; i < n; i++)
            if (a[i])
                k[m++] = (idle_key_t){share(a[i]->idle_ns, a[i]->span_ns), i};
        qsort(k, m, sizeof *k, idle_key_cmp);
        for (size_t q = 0; q < TEXT_RANKS_EXTREME; q++) {
            show[k[q].i] = 1;
            show[k[m - 1 - q].i] = 1;
        }
        free(k);
    }
    for (size_t i = first; i < n; i++) {
        const mt_rank_analysis_t *x = a[i];
        if (!x || (show && !show[i]))
            continue;
        int64_t hw = mt_an_host_wait(x);
        mt_out_printf(&o, "%5d %10.3f", x->rank, (double)x->span_ns / 1e6);
        text_pct(&o, 8, x->compute_ns, x->span_ns, 1);
        text_pct(&o, 13, x->comm_ns, x->span_ns, 1);
        text_pct(&o, 8, x->memory_ns, x->span_ns, 1);
        text_pct(&o, 8, x->idle_ns, x->span_ns, 1);
        text_pct(&o, 12, x->overlap_ns, x->comm_total_ns, TEXT_PCT_MIN_NS);
        text_pct(&o, 10, hw, x->span_ns, 1);
        text_pct(&o, 13, x->launch_bound_ns, x->idle_ns, TEXT_PCT_MIN_NS);
        mt_out_puts(&o, "\n");
    }
    if (show) {
        /* the median of each column over every rank, one line */
        double *v = malloc(present * sizeof *v), med[6];
        if (!v) {
            free(show);
            return MT_ERR_NOMEM;
        }
        for (int c = 0; c < 6; c++) {
            size_t m = 0;
            for (size_t i = first; i < n; i++) {
                const mt_rank_analysis_t *x = a[i];
                if (!x)
                    continue;
                v[m++] = c == 0   ? (double)x->span_ns / 1e6
                         : c == 1 ? share(x->compute_ns, x->span_ns)
                         : c == 2 ? share(x->comm_ns, x->span_ns)
                         : c == 3 ? share(x->memory_ns, x->span_ns)
                         : c == 4 ? share(x->idle_ns, x->span_ns)
                                  : share(mt_an_host_wait(x), x->span_ns);
            }
            qsort(v, m, sizeof *v, dbl_cmp);
            med[c] = m % 2 ? v[m / 2] : (v[m / 2 - 1] + v[m / 2]) / 2;
        }
        free(v);
        free(show);
        mt_out_printf(&o, "  ... %zu more ranks in report.json and report.html (above: the %d least and most idle)\n",
                      present - 2 * TEXT_RANKS_EXTREME, TEXT_RANKS_EXTREME);
        mt_out_printf(&o, "  median of %zu ranks: span %.3f ms, compute %.1f%%, exposed comm %.1f%%, memory %.1f%%, "
                      "idle %.1f%%,\n  host wait %.1f%%\n",
                      present, med[0], med[1], med[2], med[3], med[4], med[5]);
    }
    mt_out_puts(&o, "  compute + exposed comm (communication not hidden behind compute) + memory + idle = 100 %;\n"
                    "  comm hidden: share of the communication time that ran under compute; host wait: of the\n"
                    "  streams that compute or copy (not one that only runs collectives), the one that waited\n"
                    "  longest for the CPU to launch work, % of the span; launch-bound: share of the idle time\n"
                    "  with the CPU busy launching; -: communication or idle time under 100 us (a few launch\n"
                    "  latencies), too little for a share of it to mean anything\n");

    /* The heaviest annotations of the first rank with results, each summed
     * over the ranks (the GPU time they caused). */
    typedef struct ttot {
        const char *nm;
        size_t len;
        uint64_t count;
        int64_t cpu, gpu, same;
    } ttot_t;
    ttot_t t[6];
    size_t nt = 0;
    int64_t busy = 0;
    for (size_t i = first; i < n; i++)
        busy += a[i] ? a[i]->busy_ns : 0;
    const mt_rank_analysis_t *f = a[first];
    for (size_t p = 0; p < f->n_proj && nt < 6; p++) {
        ttot_t x = {f->strings + f->proj[p].name.off, f->proj[p].name.len, 0, 0, 0, 0};
        for (size_t r = first; r < n; r++)
            for (size_t q = 0; a[r] && q < a[r]->n_proj; q++) {
                const mt_an_proj_t *y = &a[r]->proj[q];
                if (y->name.len == x.len && !memcmp(a[r]->strings + y->name.off, x.nm, x.len)) {
                    x.count += y->count;
                    x.cpu += y->cpu_ns;
                    x.gpu += y->gpu_ns;
                    x.same += y->gpu_same_thread_ns;
                }
            }
        t[nt++] = x;
    }
    if (!nt)
        return o.st;
    mt_out_puts(&o, "\nGPU projection (GPU work launched while each annotation was open, on any thread of its\n"
                    "process; all ranks)\n");
    char cell[4 * 40 + 1];
    mt_fmt_cell(cell, sizeof cell, "annotation", 10, 40);
    mt_out_printf(&o, "%s %8s %11s %11s %7s %13s\n", cell, "count", "CPU ms", "GPU ms", "GPU %", "own thread ms");
    for (size_t k = 0; k < nt; k++) {
        mt_fmt_cell(cell, sizeof cell, t[k].nm, t[k].len, 40);
        mt_out_printf(&o, "%s %8llu %11.3f %11.3f %6.1f%% %13.3f\n", cell, (unsigned long long)t[k].count,
                      (double)t[k].cpu / 1e6, (double)t[k].gpu / 1e6,
                      busy > 0 ? 100.0 * (double)t[k].gpu / (double)busy : 0.0, (double)t[k].same / 1e6);
    }
    mt_out_puts(&o, "  own thread ms: only the work launched from the annotation's own thread (HTA's rule)\n");
    return o.st;
}
