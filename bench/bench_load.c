/* Loader benchmark: load each file N times with the core loader and print
 * MB/s, events/s and peak RSS. Used by scripts/bench; not a test. With
 * --parts each FILE is a comma-separated list of parts of one Nsight
 * Systems export ("x.sqlite#pid1,x.sqlite#pid2"), read together by
 * mt_nsys_load_parts (events: all parts'; MB: the file once). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "mergetrace/heap.h"
#include "mergetrace/input.h"
#include "mergetrace/mergetrace.h"

int main(int argc, char **argv)
{
    mt_heap_setup(); /* the memory policy of mergetrace itself */
    int reps = 3;
    int argi = 1;
    bool no_post = false, inflate_only = false, parts = false;
    while (argi < argc && argv[argi][0] == '-') {
        if (!strcmp(argv[argi], "--reps") && argi + 1 < argc)
            reps = atoi(argv[++argi]);
        else if (!strcmp(argv[argi], "--parse-only"))
            no_post = true;
        else if (!strcmp(argv[argi], "--inflate-only"))
            inflate_only = true;
        else if (!strcmp(argv[argi], "--parts"))
            parts = true;
        else {
            fprintf(stderr, "usage: bench_load [--reps N] [--parse-only | --inflate-only | --parts] FILE...\n");
            return 64;
        }
        argi++;
    }
    if (argi >= argc) {
        fprintf(stderr, "usage: bench_load [--reps N] [--parse-only | --inflate-only | --parts] FILE...\n");
        return 64;
    }
    printf("%-40s %10s %10s %9s %11s %10s %9s\n", "file", "JSON MB", "events", "best s", "MB/s", "Mevents/s", "bytes/ev");
    for (; argi < argc; argi++) {
        double best = 1e30;
        mt_trace_summary_t sum = {0};
        for (int r = 0; r < reps; r++) {
            mt_load_opts_t o;
            mt_load_opts_init(&o);
            o.no_classify = no_post;
            o.no_link = no_post;
            mt_trace_t *t = NULL;
            mt_error_t err;
            double t0 = bench_seconds(CLOCK_MONOTONIC);
            if (inflate_only) {
                /* Only the byte source (read + inflate), for the "limited by
                 * inflate" comparison. */
                mt_input_t *in;
                static char buf[4 << 20];
                size_t n, total = 0;
                bool trunc = false;
                if (mt_input_open(argv[argi], NULL, 0, &in, &err) != MT_OK)
                    return 1;
                while (mt_input_read(in, buf, sizeof buf, &n, &trunc, &err) == MT_OK && n)
                    total += n;
                mt_input_close(in);
                double dt = bench_seconds(CLOCK_MONOTONIC) - t0;
                if (dt < best)
                    best = dt;
                sum.bytes_json = total;
                continue;
            }
            if (parts) {
                char *list = strdup(argv[argi]);
                const char *paths[64];
                mt_load_opts_t os[64];
                mt_trace_t *ts[64];
                size_t n = 0, failed;
                for (char *p = list ? strtok(list, ",") : NULL; p && n < 64; p = strtok(NULL, ","))
                    os[n] = o, paths[n++] = p;
                t0 = bench_seconds(CLOCK_MONOTONIC);
                mt_status_t st = list ? mt_nsys_load_parts(paths, n, os, ts, &failed, &err) : MT_ERR_NOMEM;
                double dt = bench_seconds(CLOCK_MONOTONIC) - t0;
                free(list);
                if (st) {
                    char b[1200];
                    fprintf(stderr, "bench_load: %s\n", mt_error_format(&err, b, sizeof b));
                    return 1;
                }
                if (dt < best)
                    best = dt;
                sum.events = 0;
                sum.bytes_json = ts[0]->stats.bytes_json;
                for (size_t k = 0; k < n; k++) {
                    sum.events += ts[k]->n_events;
                    mt_trace_free(ts[k]);
                }
                mt_heap_release(sum.bytes_json);
                continue;
            }
            mt_status_t st = mt_trace_load(argv[argi], &o, &t, &err);
            double dt = bench_seconds(CLOCK_MONOTONIC) - t0;
            if (st) {
                char b[1200];
                fprintf(stderr, "bench_load: %s\n", mt_error_format(&err, b, sizeof b));
                return 1;
            }
            if (dt < best)
                best = dt;
            sum.events = t->n_events;
            sum.bytes_json = t->stats.bytes_json;
            mt_trace_free(t);
            mt_heap_release(sum.bytes_json); /* as after each rank in mergetrace */
        }
        const char *b = strrchr(argv[argi], '/');
        printf("%-40.40s %10.1f %10llu %9.3f %11.1f %10.2f %9.1f\n", b ? b + 1 : argv[argi], sum.bytes_json / 1e6,
               (unsigned long long)sum.events, best, sum.bytes_json / 1e6 / best, sum.events / 1e6 / best,
               (double)sum.bytes_json / (sum.events ? sum.events : 1));
    }
    printf("peak RSS %.1f MB\n", bench_peak_mb());
    return 0;
}
