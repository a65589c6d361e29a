/* The collective match sharded across processes (align.c): which process
 * matches a row, and the match with each instance's key, so that the
 * instances of every process can be put in the order one match of all the
 * rows gives them. Internal to src/align. */
#ifndef MT_ALIGN_SHARD_H
#define MT_ALIGN_SHARD_H

#include <stdint.h>

#include "mergetrace/collectives.h"

/* The process (0 .. size-1) that matches row r when each process matches
 * a share of the job's rows: a hash of the row's own match key, so every
 * member of an instance lands on one process. -1 when the row's match
 * needs rows of the whole job: ordinal keys (anchored against other
 * ranks' sequences, or streams paired across ranks) and rows that expect
 * as many participants as there are ranks with rows of their group (no
 * group size, not P2P). */
int mt_match_shard_of(const mt_cinst_t *r, int size);

/* mt_match, and *keys (mt_big_malloc'd, the caller frees) the key fields
 * (a, b, c) of instance i at keys[3i .. 3i+2]; with the tier in m->key[i],
 * instances are in ascending (tier, a, b, c). */
mt_status_t mt_match_keyed(const mt_cinst_t *rows, size_t n, mt_match_t **out, mt_match_stats_t *stats,
                           uint64_t **keys);

#endif
