/* PyTorch Flight Recorder dumps as inputs of the program: the hang
 * post-mortem of a job that hung, from the dumps alone or beside the
 * job's traces. */
#ifndef MT_MPI_FR_RUN_H
#define MT_MPI_FR_RUN_H

#include <mpi.h>
#include <stdbool.h>
#include <stddef.h>

#include "mergetrace/discover.h"
#include "mergetrace/fr_share.h"
#include "mergetrace/mergetrace.h"
#include "merged_io.h"
#include "options.h"


/* Collective over comm, after load_prepare: the Flight Recorder dumps that
 * process 0's listing put apart (files->fr) are ranked on process 0 (the
 * --rank-map entry map gives, else the file name, mt_fr_rank_from_name),
 * shared among the processes largest first, read there (either encoding)
 * and kept; process 0 gets what the analysis reads of them (each group's
 * entries from its members' last completed collective on, and each
 * dump's clock offset fitted where it was read: mergetrace/fr_hang.h), or
 * every entry when that cannot be, and runs the hang analysis into *fr
 * (zeroed first; mt_fr_job_free frees it). Returns -1 to go on (no dump, or dumps
 * beside traces: the verdict joins the job's outputs), or the exit code,
 * the same on every process, after process 0 said why: MT_EXIT_BAD_INPUT
 * for a dump that cannot be read (one line: file, rank, byte offset),
 * no rank in a dump's name, two dumps of one rank, or dumps of different
 * jobs (a group with other ranks; with --force the later dump is left
 * out and a warning says so). When the inputs are dumps alone this is the
 * whole run: it writes report.json, report.html and the dumps' entries as
 * the merged trace into -o (each process writes the dumps it read, in rank
 * order, as merged_io.c writes the traces), prints the verdict (or report.json with
 * --json), and returns MT_EXIT_HANG when a hang was found, else
 * MT_EXIT_OK (MT_EXIT_ERROR when an output cannot be written). */
int fr_stage(MPI_Comm comm, const mt_comm_t *mc, const options_t *o, mt_discover_list_t *files,
             const mt_rankmap_t *map, mt_fr_job_t *fr);

/* Process 0, after the job's NCCL files were loaded (nj), when no Flight
 * Recorder dump was given (fr->any false): if a plugin file ends with
 * tasks in flight (a process that hung or was killed inside a
 * collective), every plugin file of the job is read again here, turned
 * into dumps (mt_fr_from_nccl) and analysed into *fr, which then joins the
 * outputs as dumps beside traces do (exit 4 for a hang). 0, or an exit
 * code after saying why (a file that cannot be read again, out of
 * memory). */
int fr_from_nccl(const options_t *o, const mt_discover_list_t *files, const mt_nccl_job_t *nj, mt_fr_job_t *fr);

/* Collective, beside traces, before the job's clocks are aligned: the
 * collectives of the traces this process loaded (L->rows) that pair with
 * dumps kept in fr (mt_fr_tcolls_take), when the job has dumps and writes
 * a merged trace. MT_EXIT_OK, or MT_EXIT_ERROR on every process after
 * process 0 said so (out of memory). */
int fr_keep_tcolls(MPI_Comm comm, const mt_ingest_t *L, mt_fr_job_t *fr);

/* The dumps' parts of the traces' merged trace on one process
 * (fr_merged_prepare, fr_merged_done). */
typedef struct fr_merged fr_merged_t;

/* Collective, beside traces, before merged_write: for each rank of
 * mi[0..n_mi) (this process's part of the merged trace; its ranks from
 * L's results) whose dump the job has, the dump read again, placed on the
 * rank's trace (mt_fr_place_fit) and hooked as mi[k].after, so that its
 * entries follow the rank's events (mt_fr_trace_rank_merged) on the
 * rank's corrected clock. fr NULL: nothing. *out (free with
 * fr_merged_done) NULL when nothing is hooked. MT_EXIT_OK, or an exit
 * code on every process after the lowest failing process said why (a
 * dump that cannot be read again). */
int fr_merged_prepare(MPI_Comm comm, const options_t *o, const mt_fr_job_t *fr, const mt_ingest_t *L,
                      mt_merged_input_t *mi, size_t n_mi, fr_merged_t **out);

/* Collective, after merged_write (written: it succeeded): how the dumps
 * were placed, summed into *placed on process 0 (zeroed elsewhere); m
 * freed. fr NULL: nothing. */
void fr_merged_done(MPI_Comm comm, const mt_fr_job_t *fr, fr_merged_t *m, bool written, mt_fr_placed_t *placed);

#endif
