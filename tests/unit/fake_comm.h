/* A fake multi-process mt_comm_t for unit tests: N POSIX threads stand for
 * N processes and exchange real bytes through the table of
 * include/mergetrace/comm.h, so collective code (mt_align_job) runs with
 * several processes under plain cmocka, without MPI. It can make one
 * collective fail, and it turns a hang (a process that returns or takes
 * another collective while the others wait) into a report instead of a
 * blocked test. */
#ifndef MT_FAKE_COMM_H
#define MT_FAKE_COMM_H

#include <stdbool.h>

#include "mergetrace/comm.h"
#include "mergetrace/status.h"

/* The operations of mt_comm_t. */
typedef enum fake_comm_op {
    FAKE_COMM_GATHERV = 0,
    FAKE_COMM_BCAST,
    FAKE_COMM_ALLREDUCE_MAX,
    FAKE_COMM_ALLTOALLV,
    FAKE_COMM_OP_COUNT_
} fake_comm_op_t;

/* An injected failure: the `call`-th call (0-based) of `op` made by process
 * `proc` fails with `status`. As comm.h requires, the whole collective then
 * returns that status on every process (the way mpi/comm_mpi.c agrees on a
 * failed allocation before it gathers), and no data moves: the gatherv
 * root and every alltoallv process get NULL, bcast and allreduce buffers
 * are left as they were. */
typedef struct fake_comm_fault {
    int proc;
    fake_comm_op_t op;
    unsigned call;
    mt_status_t status;
} fake_comm_fault_t;

typedef struct fake_comm_opts {
    const fake_comm_fault_t *fault; /* NULL: no failure */
    unsigned timeout_ms;            /* longest wait for the other processes in one collective; 0: 30 s */
} fake_comm_opts_t;

/* What the run saw, filled by fake_comm_run. */
typedef struct fake_comm_report {
    /* The collectives went wrong: a process returned from fn while others
     * waited in a collective, processes called different collectives (or the
     * same one with a different root, length or count), or a wait ran past
     * timeout_ms. Every waiting and later collective then returns
     * MT_ERR_CANCELLED at once, so all threads end and can be joined. */
    bool broken;
    char why[256];               /* what broke it, "" when not broken */
    unsigned long completed;     /* collectives all processes completed (an injected failure counts, a mismatch not) */
    unsigned long per_op[FAKE_COMM_OP_COUNT_]; /* of completed, each operation's */
    bool fault_fired;            /* the injected fault was reached */
} fake_comm_report_t;

/* Run fn(comm, args[r]) on nproc threads at once, r = 0 .. nproc-1; each
 * thread's comm has rank r and size nproc, is valid only during its fn, and
 * must be used from that thread only. Collectives block until all nproc
 * processes have called them; the last to arrive does the exchange for all
 * under one mutex, so buffers are touched only while their owner waits.
 * fn must not call cmocka's assertions (they long-jump out of the thread):
 * it records what it sees in its argument for the caller to check after
 * the join. args may be NULL (every fn gets NULL); opts may be NULL.
 * Returns MT_OK when every thread was started and joined (the report says
 * whether the collectives went well), MT_ERR_NOMEM when threads or memory
 * could not be had (nothing was run then, or the started threads are
 * cancelled through the broken state and joined). */
mt_status_t fake_comm_run(int nproc, void (*fn)(const mt_comm_t *comm, void *arg), void **args,
                          const fake_comm_opts_t *opts, fake_comm_report_t *report);

/* "gatherv", "bcast", "allreduce_max", "alltoallv". */
const char *fake_comm_op_name(fake_comm_op_t op);

#endif
