/* Shared by the two readers that produce mt_nccl_file_t (nccl_input.c: the
 * plugin's JSON lines; nccl_example.c: the example profiler's traces).
 * Internal to the core. */
#ifndef MT_NCCL_FILE_H
#define MT_NCCL_FILE_H

#include "mergetrace/nccl_input.h"

typedef mt_status_t (*mt_nccl_parse_fn)(const char *buf, size_t len, const char *path, mt_nccl_file_t **out,
                                        mt_error_t *err);

/* Read the whole file (plain or gzip) and parse it with parse; a gzip copy
 * cut short marks *out truncated. As parse, plus MT_ERR_IO and
 * MT_ERR_GZIP. Whole files because the byte offsets in errors then count
 * from the start, and these files are small next to a Kineto trace. */
mt_status_t mt_nccl_load_with(const char *path, mt_nccl_parse_fn parse, mt_nccl_file_t **out, mt_error_t *err);

#endif
