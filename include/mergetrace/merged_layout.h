/* Where each rank's part goes in a merged trace that several processes
 * write (mpi/merged_io.c): the file is the header, every rank's part in
 * ascending rank order whatever process wrote it, then the footer. A
 * rank's offset is the header's size plus the sizes of the ranks before
 * it; the sizes may become known a few at a time (the gzip rounds: each
 * process compresses one rank a round), and a rank is placed once every
 * rank before it has a size. Serial: the program sums the sizes over the
 * processes. */
#ifndef MERGETRACE_MERGED_LAYOUT_H
#define MERGETRACE_MERGED_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mergetrace/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The index of rank in ranks[0..n), sorted ascending, where it is (the
 * first of equal ones); n when every rank is lower. */
size_t mt_layout_rank_index(const int32_t *ranks, size_t n, int32_t rank);

/* The layout of n ranks' parts after a header of header_bytes. Plain
 * data: read placed and end; change it only through the calls below. */
typedef struct mt_layout {
    size_t n;
    uint64_t *size1;   /* by index: size + 1 once known, 0 before */
    uint64_t *at;      /* by index: the offset, for the ranks below placed */
    size_t placed;     /* the ranks 0..placed-1 have every size before them */
    uint64_t end;      /* the offset after the placed ranks: the footer's, once all are */
} mt_layout_t;

/* An empty layout of n ranks (n may be 0) after header_bytes. MT_OK, or
 * MT_ERR_NOMEM (l freed). Free with mt_layout_free (NULL-safe members). */
mt_status_t mt_layout_init(mt_layout_t *l, size_t n, uint64_t header_bytes);
void mt_layout_free(mt_layout_t *l);

/* Take the sizes of one round: round[g] is the size + 1 of rank index g
 * when it became known in this round (as summed over the processes, each
 * rank's set by one of them), else 0; round is zeroed for the next round.
 * Places every rank whose predecessors are now all known. */
void mt_layout_round(mt_layout_t *l, uint64_t *round);

/* Whether rank index g is placed; then *off is its offset. */
bool mt_layout_placed(const mt_layout_t *l, size_t g, uint64_t *off);

#ifdef __cplusplus
}
#endif

#endif
