/* Loading: the input list and the rank map shared by every process, each
 * process's share of the files loaded one trace at a time into compact
 * per-rank results, a failure noticed by the others at once, and the
 * per-file results gathered on process 0. */
#ifndef MT_MPI_LOAD_H
#define MT_MPI_LOAD_H

#include <mpi.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mergetrace/discover.h"
#include "mergetrace/ingest.h"
#include "mergetrace/mergetrace.h"
#include "options.h"
#include "timings.h"

/* Collective over comm: process 0 expands the PATHs of o, every process
 * gets the list (*files) and its share of it; the --rank-map file is read
 * by process 0 and parsed everywhere (*map, NULL without one); the chunk
 * and --stage markers are compiled (*markers). Returns -1 to go on, or the
 * exit code, the same on every process, after process 0 printed why. What
 * was filled is the caller's to free (mt_discover_free, mt_rankmap_free,
 * mt_pp_markers_free), whatever is returned. */
int load_prepare(MPI_Comm comm, const options_t *o, mt_discover_list_t *files, mt_rankmap_t **map,
                 mt_pp_markers_t **markers);

/* Collective: this process loads its share of files into *L
 * (mt_ingest_init, _one, _parts; markers must outlive it; mt_ingest_free
 * it whatever is returned), every process learns whether any failed, and the per-file results of every process are gathered on
 * process 0 (*all, *n_all: malloc'd, the caller frees; NULL, 0 elsewhere).
 * pt->seconds[MT_TPH_LOAD] and pt->load_cpu get this process's time of it
 * all (timings_report takes the max over processes). Returns, on
 * process 0, the exit code of the failure of the lowest file index (after
 * printing its message) or MT_EXIT_OK; MT_EXIT_OK elsewhere. */
int load_share(MPI_Comm comm, const mt_comm_t *mc, const options_t *o, const mt_discover_list_t *files,
               const mt_rankmap_t *map, const mt_pp_markers_t *markers, mt_ingest_t *L, mt_ingest_result_t **all,
               size_t *n_all, mt_timings_t *pt);

#endif
