/* Which rank a trace file belongs to: distributedInfo.rank, a rank map
 * file (lines "path rank"), or a number in the file name. */
#ifndef MERGETRACE_RANK_H
#define MERGETRACE_RANK_H

#include <stddef.h>
#include <stdint.h>

#include "mergetrace/status.h"
#include "mergetrace/trace.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where a rank came from. */
typedef enum mt_rank_source {
    MT_RANK_FROM_NONE = 0,
    MT_RANK_FROM_TRACE,     /* distributedInfo.rank */
    MT_RANK_FROM_MAP,       /* --rank-map FILE */
    MT_RANK_FROM_FILENAME,  /* rank-3, rank3, rank_3, worker3 in the base name */
    MT_RANK_FROM_DEFAULT,   /* the only input file of a run: rank 0 (decided by the program) */
    MT_RANK_FROM_NCCL,      /* an NCCL plugin file: the rank in its largest communicator */
    MT_RANK_FROM_MERGED,    /* one rank of a merged trace ("<file>#rank<R>": its pids) */
} mt_rank_source_t;

const char *mt_rank_source_str(mt_rank_source_t s);

/* The rank number in a file's base name: the last "rank" or "worker" word
 * (any case) followed by an optional '-' or '_' and digits. Returns the
 * rank (>= 0) or -1 when the name has none. */
int64_t mt_rank_from_filename(const char *path);

/* A parsed rank map. Opaque; create with mt_rankmap_parse. */
typedef struct mt_rankmap mt_rankmap_t;

/* Parse rank-map text: one "path rank" per line (the path may contain
 * spaces: the rank is the last field), '#' comments and blank lines
 * ignored. text is borrowed for the call. name is used in errors. Errors
 * name the line. On success *out owns a new map (mt_rankmap_free). */
mt_status_t mt_rankmap_parse(const char *text, size_t len, const char *name,
                             mt_rankmap_t **out, mt_error_t *err);

void mt_rankmap_free(mt_rankmap_t *m);

/* The rank the map gives path: matched by the exact string, else by base
 * name. -1 when absent. */
int64_t mt_rankmap_lookup(const mt_rankmap_t *m, const char *path);

/* Decide the rank of a loaded trace: the map first (explicit beats
 * implicit), then distributedInfo.rank, then the file name. map may be NULL.
 * Returns MT_OK with *rank and *src set, or MT_ERR_NO_RANK with a message
 * in err that names the file and points to --rank-map. */
mt_status_t mt_rank_resolve(const mt_trace_t *t, const char *path,
                            const mt_rankmap_t *map, int64_t *rank,
                            mt_rank_source_t *src, mt_error_t *err);

#ifdef __cplusplus
}
#endif
#endif /* MERGETRACE_RANK_H */
