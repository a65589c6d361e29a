/* libFuzzer target: the NCCL plugin JSON-lines reader on arbitrary bytes,
 * then everything that consumes a parsed file (rows, matching). Must never
 * crash, hang or read out of bounds; any status is fine. Built with clang
 * when MT_FUZZ=ON; replayed over tests/fuzz/corpus_nccl_input by
 * fuzz_replay.c as an ordinary test. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mergetrace/collectives.h"
#include "mergetrace/nccl_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* An exact-size copy, so reading one byte too far is caught by ASan. */
    char *buf = malloc(size ? size : 1);
    if (!buf)
        return 0;
    if (size)
        memcpy(buf, data, size);
    mt_nccl_file_t *f = NULL;
    mt_error_t err;
    if (mt_nccl_parse(buf, size, "fuzz", &f, &err) == MT_OK) {
        mt_strtab_t *labels = mt_strtab_create(); /* the rows' labels */
        mt_cinst_t *rows = NULL;
        size_t n = 0, cap = 0;
        uint64_t skipped = 0;
        int32_t r = mt_nccl_world_rank(f, NULL);
        if (labels && mt_nccl_cinst_extract(f, r < 0 ? 0 : r, labels, &rows, &n, &cap, &skipped) == MT_OK &&
            mt_nccl_cinst_extract(f, r < 0 ? 1 : r + 1, labels, &rows, &n, &cap, &skipped) == MT_OK) {
            mt_match_t *m = NULL;
            mt_match_stats_t st;
            if (mt_match(rows, n, &m, &st) == MT_OK)
                mt_match_free(m);
        }
        free(rows);
        mt_strtab_free(labels);
        mt_nccl_file_free(f);
    }
    free(buf);
    return 0;
}
