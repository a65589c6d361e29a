/* The core's own view of the Flight Recorder dumps: the public types and
 * functions (mergetrace/fr_hang.h) and the verdict as lines for the text
 * writer. */
#ifndef MT_FR_FR_H
#define MT_FR_FR_H

#include "base/text.h"
#include "mergetrace/fr_hang.h"

/* The verdict for the terminal, at most 6 lines, each ending in '\n',
 * into o (its first error kept in o->st). h as mt_fr_hang_analyse left it. */
void mt_fr_hang_text(const mt_fr_hang_t *h, mt_out_t *o);

/* Dumps from the NCCL plugin's files (src/fr/fr_nccl.c says how each
 * field maps): out[i] for files[i], whose process has global rank
 * ranks[i] (below MT_FR_MAX_RANKS). Free each with mt_fr_dump_free.
 * MT_ERR_NOMEM, MT_ERR_LIMIT. */
struct mt_nccl_file;
mt_status_t mt_fr_from_nccl(const struct mt_nccl_file *const *files, const int32_t *ranks, size_t n,
                            mt_fr_dump_t *out, mt_error_t *err);

#endif
