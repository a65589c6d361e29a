/* Writing the merged timeline (mt_merge_*) to one file with MPI-IO (POSIX
 * I/O when the program runs without MPI, one process or worker threads):
 * every process serialises the ranks it loaded, offsets come from the
 * sizes of the ranks before each in rank order, and the file appears under
 * its name only when everyone succeeded. */
#ifndef MT_MPI_MERGED_IO_H
#define MT_MPI_MERGED_IO_H

#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>

#include "mergetrace/collectives.h"
#include "mergetrace/merge.h"

/* Another kind of merged file written the same way (merged_write_format):
 * the header, each rank's part (first: the file's first rank; *events the
 * events it wrote; err the reason of a failure), the footer. */
typedef struct merged_format {
    mt_status_t (*header)(mt_write_fn write, void *ctx);
    mt_status_t (*rank)(const mt_merged_input_t *in, bool first, mt_write_fn write, void *ctx, uint64_t *events,
                        mt_error_t *err);
    mt_status_t (*footer)(mt_write_fn write, void *ctx);
} merged_format_t;

/* Collective over comm: every process calls it, each with the ranks it
 * loaded (mine[0..n_mine), borrowed; n_mine may be 0). Writes out_path as
 * gzip (independent members of 1-2 MiB of JSON each, which
 * concatenate into one valid gzip file) when gzip is set, else plain JSON. Within the file the header comes first,
 * then every rank in ascending order, whatever process merged it (so the
 * file is byte for byte the same with any number of processes or worker
 * threads: plain JSON, each rank at an offset from a table of every rank's
 * size; gzip, in rounds of one rank per process, each rank written once
 * the ranks before it are compressed, its members the same bytes whatever
 * compressed them, src/io/gzout.c), then the footer, whose "ranks"
 * list holds every rank in ascending order.
 * The bytes go to "<out_path>.tmp.<unique>" in the same directory, which
 * process 0 renames to out_path once every process succeeded, and deletes
 * otherwise. local (--local, the same on every process): the directory
 * may be on process 0's disk alone; when another process does not see the
 * temporary file process 0 created, process 0 writes every part, the
 * others sending theirs (in pieces of 4 MiB; MERGETRACE_SEND_PARTS=1
 * forces this). opts: NULL = everything.
 * Memory: gzip keeps the compressed members of the ranks it compressed
 * before a lower rank of another process was (one or two when the ranks
 * are spread over the processes evenly, as the load shares them); plain JSON
 * serialises twice (counting, then writing in ~4 MiB pieces).
 * Returns 0 on every process on success, with *events_written (may be
 * NULL) = events written by all processes together. On failure returns the
 * same non-zero mt_status_t on every process, and msg (msg_cap bytes, may
 * be 0) holds the one-line message of the lowest failing process; every
 * process returns, none hangs. Never prints. *helper (may be NULL): whether
 * this process deflated on a helper thread (gzip, with a core to spare). */
int merged_write(MPI_Comm comm, const char *out_path, bool gzip, bool local, const mt_merged_input_t *mine,
                 size_t n_mine, const mt_merge_opts_t *opts, uint64_t *events_written, bool *helper, char *msg, size_t msg_cap);

/* merged_write with the parts fmt writes in place of the traces'
 * (mt_merge_*): the same collective, file, order, temporary, renaming and
 * errors. */
int merged_write_format(const merged_format_t *fmt, MPI_Comm comm, const char *out_path, bool gzip, bool local,
                        const mt_merged_input_t *mine, size_t n_mine, uint64_t *events_written, char *msg, size_t msg_cap);

#endif
