/* Worker threads that play the processes of an MPI world (a run by hand
 * on every core: -j N): the world, its collectives with MPI's meaning on
 * plain memory, and point-to-point messages between its threads. For
 * programs (mpi/procs.c maps MPI's calls onto these when MPI is not in
 * use); never called by the core. One world per process at a time; it
 * never prints and never exits.
 *
 * Outside a world (mt_tw_run not running) the world is one process:
 * rank 0 of 1; bcast and exscan do nothing; reduce, gather and gatherv
 * copy send to recv (unless send is MT_TW_IN_PLACE). A collective is two
 * rendezvous of every thread: at the first each has published its
 * buffers, the copies are made, and at the second each is done reading
 * the others', so every buffer may change again on return. */
#ifndef MERGETRACE_TWORLD_H
#define MERGETRACE_TWORLD_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The element types the collectives move (MPI's predefined ones that the
 * program uses). MT_TW_LONG_INT is MPI_LONG_INT: {long value; int index}. */
typedef enum {
    MT_TW_CHAR,
    MT_TW_BYTE,
    MT_TW_I32,
    MT_TW_LONG,
    MT_TW_I64,
    MT_TW_U64,
    MT_TW_ULL,
    MT_TW_DOUBLE,
    MT_TW_LONG_INT,
} mt_tw_type_t;

/* Reductions: sum, min and max of any type but MT_TW_LONG_INT; maxloc of
 * MT_TW_LONG_INT alone (the larger value; on a tie the lower index, as MPI
 * says). Another pairing is a bug of the caller (asserted). */
typedef enum { MT_TW_SUM, MT_TW_MIN, MT_TW_MAX, MT_TW_MAXLOC } mt_tw_op_t;

/* MPI_IN_PLACE's meaning: recv is also the input (reduce, exscan), or the
 * root's block is already in place (gather, gatherv). */
#define MT_TW_IN_PLACE ((const void *)1)

/* Any sender, for mt_tw_recv, mt_tw_irecv and mt_tw_iprobe. */
#define MT_TW_ANY_SOURCE (-1)

/* mt_tw_isend copies a message of at most this many bytes and returns (as
 * MPI sends small messages eagerly); a longer one waits in mt_tw_wait
 * until its receiver copied it. */
#define MT_TW_EAGER 64

/* The bytes of one element of t. */
size_t mt_tw_type_size(mt_tw_type_t t);

/* Run fn(arg, rank) on n threads at once, rank 0 on the calling thread,
 * and wait for them all; inside fn the calls below see a world of n
 * processes, this thread's rank its own. Every fn must make the same
 * collective calls, as MPI processes must. codes[rank] gets each fn's
 * return (codes: n entries). When not all threads can be started the
 * world is the ones that were (none of them has begun, so they agree on
 * its size): returns that number (1: fn ran on the calling thread
 * alone), or 0 when n < 1. One world at a time, from one thread. */
int mt_tw_run(int n, int (*fn)(void *arg, int rank), void *arg, int *codes);

/* The world's size while mt_tw_run runs, 0 otherwise; this thread's rank
 * in it (0 outside one). */
int mt_tw_size(void);
int mt_tw_rank(void);

/* Collective: count elements of root's buf into every thread's. */
void mt_tw_bcast(void *buf, size_t count, mt_tw_type_t t, int root);

/* Collective: count elements reduced with op over the world, into every
 * thread's recv (all) or root's alone. Element by element, all inputs of
 * one read before its outputs are written: send may be MT_TW_IN_PLACE. */
void mt_tw_reduce(const void *send, void *recv, size_t count, mt_tw_type_t t, mt_tw_op_t op, int root, bool all);

/* Collective: rank q's recv gets the reduction over ranks 0 .. q-1;
 * rank 0's is left as it was (undefined in MPI). */
void mt_tw_exscan(const void *send, void *recv, size_t count, mt_tw_type_t t, mt_tw_op_t op);

/* Collective: each rank's send (scount elements of st) into root's recv,
 * rank q's block at q * rcount elements of rt (gather), or at displs[q]
 * with rcounts[q] elements (gatherv; rcounts and displs are root's). */
void mt_tw_gather(const void *send, size_t scount, mt_tw_type_t st, void *recv, size_t rcount, mt_tw_type_t rt,
                  int root);
void mt_tw_gatherv(const void *send, size_t scount, mt_tw_type_t st, void *recv, const int *rcounts, const int *displs,
                   mt_tw_type_t rt, int root);

/* Collective: block q (scount elements) of each rank's send to rank q,
 * rank p's into block p of recv (rcount elements); the same counts and
 * types everywhere. */
void mt_tw_alltoall(const void *send, size_t scount, mt_tw_type_t st, void *recv, size_t rcount, mt_tw_type_t rt);

/* Point to point, inside a world only (outside one there is no other
 * process: a call is a bug, asserted). A send waits until the receiver
 * copied the bytes (MPI allows a send to wait for its receive); messages
 * between two threads arrive in the order sent. A message longer than
 * its receive is a bug (asserted). */
typedef struct mt_tw_msg mt_tw_msg_t;
typedef struct mt_tw_req {
    int kind;          /* 0 none (done), 1 a send, 2 a receive */
    mt_tw_msg_t *msg;  /* a send in flight (this request's until received) */
    void *rbuf;        /* a receive: where, how much, from whom, which tag */
    size_t rlen;
    int peer, tag;
} mt_tw_req_t;

void mt_tw_send(const void *buf, size_t len, int dest, int tag);
/* src: a rank or MT_TW_ANY_SOURCE; *from (may be NULL) gets the sender. */
void mt_tw_recv(void *buf, size_t cap, int src, int tag, int *from);
/* Whether a message with tag from src (or MT_TW_ANY_SOURCE) waits; false
 * outside a world. */
bool mt_tw_iprobe(int src, int tag);
/* buf must outlive the request's completion (mt_tw_wait) unless the
 * message is eager (at most MT_TW_EAGER bytes). */
void mt_tw_isend(const void *buf, size_t len, int dest, int tag, mt_tw_req_t *r);
/* The receive happens in mt_tw_wait. */
void mt_tw_irecv(void *buf, size_t cap, int src, int tag, mt_tw_req_t *r);
/* Complete r: a receive takes its message (waiting for it), a send waits
 * until its receiver copied it; a request that is done returns at once.
 * Of several, complete the receives first: a thread that waits for its
 * own sends before it takes what the others sent it can deadlock. */
void mt_tw_wait(mt_tw_req_t *r);

#ifdef __cplusplus
}
#endif

#endif
