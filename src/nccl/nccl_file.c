/* The NCCL file model shared by the readers that produce mt_nccl_file_t
 * (nccl_input.c: the mergetrace plugin's JSON lines; nccl_example.c: the
 * example profiler's traces): reading a whole file, freeing. */
#include "nccl/nccl_file.h"

#include <stdbool.h>
#include <stdlib.h>

#include "mergetrace/input.h"

void mt_nccl_file_free(mt_nccl_file_t *f)
{
    if (!f)
        return;
    free(f->comms);
    free(f->tasks);
    free(f);
}

mt_status_t mt_nccl_load_with(const char *path, mt_nccl_parse_fn parse, mt_nccl_file_t **out, mt_error_t *err)
{
    *out = NULL;
    char *buf = NULL;
    size_t len = 0;
    bool truncated = false;
    mt_status_t st = mt_input_read_file(path, &buf, &len, &truncated, err);
    if (st == MT_OK)
        st = parse(buf, len, path, out, err);
    if (st == MT_OK && truncated)
        (*out)->truncated = true;
    free(buf);
    return st;
}
