/* The program's processes: MPI when an MPI launcher started this process,
 * otherwise one process that never initialises MPI (a run by hand starts
 * in milliseconds instead of the third of a second of an Open MPI
 * singleton), alone or as N worker threads that play N MPI processes
 * (procs_run_threads: -j N, a run by hand on every core). The program
 * makes its MPI calls through the wrappers below: with MPI they are the
 * MPI call of the same name; without it and without threads the world is
 * one process, so each collective is a copy or nothing; with threads each
 * thread is a process of the world and the calls move the bytes between
 * them in memory with MPI's meaning (mergetrace/tworld.h). */
#ifndef MT_MPI_PROCS_H
#define MT_MPI_PROCS_H

#include <mpi.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mergetrace/tworld.h"

/* Start: MPI_Init when use_mpi, else nothing. Once, first. */
void procs_start(int *argc, char ***argv, bool use_mpi);

/* End: MPI_Finalize when procs_start initialised MPI. */
void procs_end(void);

/* Whether MPI is in use (procs_start was told to). */
bool procs_mpi(void);

/* Worker threads as processes, without MPI: run fn(arg, rank) on n
 * threads at once, rank 0 on the calling thread, and wait for them all;
 * inside fn the wrappers below see a world of n processes, this thread's
 * rank its own. Every fn must make the same collective calls, as MPI
 * processes must. codes[rank] gets each fn's return (codes: n entries).
 * When not all threads can be started the world is the ones that were
 * (none of them has begun yet, so they agree on the size): returns that
 * number (1: fn ran on the calling thread alone), or 0 when n < 1. Call
 * once, after procs_start(..., false), from the main thread. */
int procs_run_threads(int n, int (*fn)(void *arg, int rank), void *arg, int *codes);

/* Worker threads in this run: procs_run_threads' world size, 0 when it is
 * not running (MPI, or one process alone). */
int procs_threads(void);

/* The processes of this run on this machine: MPI's node communicator's
 * size under MPI (collective then), the worker threads, or 1. */
int procs_node_size(MPI_Comm c);

/* Seconds on a monotonic clock (MPI_Wtime with MPI). */
double procs_wtime(void);

/* The MPI calls of the program. Without MPI the world is this one process:
 * rank 0 of 1; bcast and exscan do nothing (the exscan result of process 0
 * is undefined in MPI too); allreduce, reduce, gather and gatherv copy
 * send to recv (unless MPI_IN_PLACE). Types: the predefined ones the
 * program uses (char, byte, int, long, int32/64, uint64, unsigned long
 * long, double, long_int). */
void procs_comm_rank(MPI_Comm c, int *rank);
void procs_comm_size(MPI_Comm c, int *size);
void procs_bcast(void *buf, int count, MPI_Datatype t, int root, MPI_Comm c);
void procs_allreduce(const void *send, void *recv, int count, MPI_Datatype t, MPI_Op op, MPI_Comm c);
void procs_reduce(const void *send, void *recv, int count, MPI_Datatype t, MPI_Op op, int root, MPI_Comm c);
void procs_exscan(const void *send, void *recv, int count, MPI_Datatype t, MPI_Op op, MPI_Comm c);
void procs_gather(const void *send, int scount, MPI_Datatype st, void *recv, int rcount, MPI_Datatype rt, int root,
                  MPI_Comm c);
void procs_gatherv(const void *send, int scount, MPI_Datatype st, void *recv, const int *rcounts, const int *displs,
                   MPI_Datatype rt, int root, MPI_Comm c);
/* Each process's scount elements of block q of send to process q (same
 * counts and types everywhere, as the program uses it). */
void procs_alltoall(const void *send, int scount, MPI_Datatype st, void *recv, int rcount, MPI_Datatype rt, MPI_Comm c);

/* Point to point. Without MPI and threads there is no other process to
 * talk to: calling these is a bug (asserted). With threads a send waits
 * until the receiver has copied the bytes (MPI allows a send to wait for
 * its receive: a correct MPI program does not rely on buffering), except
 * procs_isend of a small message (at most MT_TW_EAGER bytes), which is
 * copied (as MPI sends small messages eagerly; the fail notes of
 * mpi/load.c are sent to processes that send theirs before receiving);
 * messages between two processes arrive in the order sent. */
typedef struct procs_req {
    MPI_Request mpi;
    mt_tw_req_t tw;      /* without MPI: the threads' request */
} procs_req_t;
#define PROCS_ANY_SOURCE MT_TW_ANY_SOURCE
void procs_send(const void *buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm c);
/* src: a process or PROCS_ANY_SOURCE; *from (may be NULL) gets the sender. */
void procs_recv(void *buf, int count, MPI_Datatype t, int src, int tag, MPI_Comm c, int *from);
/* Whether a message with tag from src (or PROCS_ANY_SOURCE) waits. */
bool procs_iprobe(int src, int tag, MPI_Comm c);
/* buf must outlive the request's completion (procs_waitall). */
void procs_isend(const void *buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm c, procs_req_t *r);
void procs_irecv(void *buf, int count, MPI_Datatype t, int src, int tag, MPI_Comm c, procs_req_t *r);
/* A request that is done already (for the process's own slot in an array). */
void procs_req_null(procs_req_t *r);
void procs_waitall(int n, procs_req_t *r);

#endif
