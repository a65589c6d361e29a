/* The few collective operations the core needs, as a table of function
 * pointers: the core never includes <mpi.h>. mpi/ supplies the MPI table;
 * mt_comm_serial() is the one-process default that tests use. */
#ifndef MERGETRACE_COMM_H
#define MERGETRACE_COMM_H

#include <stddef.h>
#include <stdint.h>

#include "mergetrace/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mt_comm {
    void *ctx;
    int rank;   /* this process, 0 .. size-1 */
    int size;
    /* Collective. root receives every process's bytes concatenated in
     * process order: *recv (malloc'd, caller frees) and *recv_len; others
     * get NULL/0. Returns MT_OK or an error (the same on every process). */
    mt_status_t (*gatherv)(void *ctx, const void *send, size_t len, void **recv, size_t *recv_len, int root);
    /* Collective. root's buf[0..len) is copied to every process; len must be
     * the same everywhere. */
    mt_status_t (*bcast)(void *ctx, void *buf, size_t len, int root);
    /* Collective. Element-wise maximum over processes, in place. Used to
     * agree on status: everyone learns the worst. */
    mt_status_t (*allreduce_max)(void *ctx, int64_t *v, size_t n);
    /* Collective. Every process sends send_lens[q] bytes to each process q
     * (send: those blocks concatenated in process order, send_lens: size
     * entries) and receives what every process sent it, concatenated in
     * process order: *recv (malloc'd, caller frees; never NULL on MT_OK)
     * with recv_lens[q] (the caller's array of size entries) the bytes from
     * process q. Returns MT_OK or an error (the same on every process). */
    mt_status_t (*alltoallv)(void *ctx, const void *send, const size_t *send_lens, void **recv, size_t *recv_lens);
} mt_comm_t;

/* One process, no communication: gatherv and alltoallv copy, bcast and
 * allreduce do nothing. Never NULL; static storage. */
const mt_comm_t *mt_comm_serial(void);

#ifdef __cplusplus
}
#endif
#endif
