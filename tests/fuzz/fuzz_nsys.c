/* libFuzzer target: the Nsight Systems reader on arbitrary bytes taken as
 * an SQLite database (mt_nsys_load_buffer), then what consumes a loaded
 * trace (summary, collective rows, matching). Must never crash, hang or
 * read out of bounds; any status is fine. Built with clang when MT_FUZZ=ON;
 * replayed over tests/fuzz/corpus_nsys by fuzz_replay.c as an ordinary
 * test. Seeds: small exports written by tests/nsys/make_nsys_seeds.py. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "mergetrace/collectives.h"
#include "mergetrace/nsys.h"
#include "mergetrace/summary.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mt_trace_t *t = NULL;
    mt_error_t err;
    if (mt_nsys_load_buffer(data, size, "fuzz.sqlite", NULL, &t, &err) == MT_OK) {
        mt_trace_summary_t s;
        (void)mt_trace_summarize(t, &s);
        mt_strtab_t *labels = mt_strtab_create(); /* the rows' labels */
        mt_cinst_t *rows = NULL;
        size_t n = 0, cap = 0;
        if (labels && mt_cinst_extract(t, 0, labels, &rows, &n, &cap) == MT_OK &&
            mt_cinst_extract(t, 1, labels, &rows, &n, &cap) == MT_OK) {
            mt_match_t *m = NULL;
            mt_match_stats_t st;
            if (mt_match(rows, n, &m, &st) == MT_OK)
                mt_match_free(m);
        }
        free(rows);
        mt_strtab_free(labels);
        mt_trace_free(t);
    }
    return 0;
}
