/* libFuzzer target: the trace loader on arbitrary bytes (plain or gzip),
 * with small read chunks so units are cut everywhere, and the per-event
 * callback on. Must never crash, hang or read out of bounds; any status is
 * fine. Built by CMake with clang when MT_FUZZ=ON; replayed over the saved
 * corpus by fuzz_replay.c as an ordinary test. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "mergetrace/mergetrace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static mt_status_t count_event(void *ctx, const mt_trace_t *t, const mt_event_t *ev, const mt_raw_event_t *raw,
                               mt_error_t *err)
{
    (void)t;
    (void)ev;
    (void)err;
    /* Touch the spans: they must lie inside the event text. */
    size_t *n = ctx;
    const size_t offs[5][2] = {{raw->ts_off, raw->ts_len}, {raw->dur_off, raw->dur_len}, {raw->pid_off, raw->pid_len},
                               {raw->tid_off, raw->tid_len}, {raw->id_off, raw->id_len}};
    for (int i = 0; i < 5; i++)
        if (offs[i][1]) {
            if (offs[i][0] + offs[i][1] > raw->len)
                abort();
            *n += (unsigned char)raw->text[offs[i][0]];
        }
    return MT_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mt_load_opts_t o;
    mt_load_opts_init(&o);
    /* The first byte picks the chunk size (1..256) and strictness. */
    if (size) {
        o.chunk_bytes = 1 + data[0];
        o.strict = data[0] & 1;
    }
    size_t touched = 0;
    o.on_event = count_event;
    o.on_event_ctx = &touched;
    mt_trace_t *t = NULL;
    mt_error_t err;
    if (mt_trace_load_buffer(data, size, "fuzz.json", &o, &t, &err) == MT_OK) {
        /* Everything downstream of the loader must cope with what it made. */
        mt_trace_summary_t s;
        (void)mt_trace_summarize(t, &s);
        mt_strtab_t *labels = mt_strtab_create(); /* the rows' labels */
        mt_cinst_t *rows = NULL;
        size_t n = 0, cap = 0;
        if (labels && mt_cinst_extract(t, 0, labels, &rows, &n, &cap) == MT_OK && n) {
            mt_match_t *m = NULL;
            mt_match_stats_t ms;
            if (mt_match(rows, n, &m, &ms) == MT_OK) {
                int32_t r = 0;
                mt_clock_t c;
                /* as mt_align_job: compact once matched */
                (void)mt_clock_fit(mt_crow_compact(rows, n), n, m, &r, 1, NULL, &c);
            }
            mt_match_free(m);
        }
        free(rows);
        mt_strtab_free(labels);
        mt_trace_free(t);
    }
    char b[1200];
    (void)mt_error_format(&err, b, sizeof b);
    return 0;
}
