/* The program's processes (procs.h): MPI under an MPI launcher, one
 * process without MPI otherwise, alone or as worker threads, and the
 * program's MPI calls: MPI's own, or their one-process and threads'
 * meaning from mergetrace/tworld.h (this file maps MPI's types and
 * operations onto its own). */
#define _GNU_SOURCE /* clock_gettime */
#include "procs.h"
#include "say.h"

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

static bool use_mpi;

void procs_start(int *argc, char ***argv, bool mpi)
{
    use_mpi = mpi;
    if (mpi) {
        /* The program never uses a shared file pointer, but Open MPI 4.1's
         * default one (sharedfp/lockedfile) is set up at every
         * MPI_File_open and overflows a fixed buffer with a path of about
         * 220 characters (*** buffer overflow detected ***, issue 40):
         * take the component that does nothing until used, unless the
         * user chose one (OMPI_MCA_* variables are read at MPI_Init; other
         * MPIs ignore it). */
        setenv("OMPI_MCA_sharedfp", "individual", 0);
        MPI_Init(argc, argv);
    }
}

int procs_threads(void)
{
    return mt_tw_size();
}

int procs_node_size(MPI_Comm c)
{
    if (mt_tw_size())
        return mt_tw_size();
    if (!use_mpi)
        return 1;
    MPI_Comm node;
    int on_node = 1;
    if (MPI_Comm_split_type(c, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
        MPI_Comm_size(node, &on_node);
        MPI_Comm_free(&node);
    }
    return on_node;
}

int procs_run_threads(int n, int (*fn)(void *arg, int rank), void *arg, int *codes)
{
    return mt_tw_run(n, fn, arg, codes);
}

void procs_end(void)
{
    if (use_mpi)
        MPI_Finalize();
}

bool procs_mpi(void)
{
    return use_mpi;
}

double procs_wtime(void)
{
    if (use_mpi)
        return MPI_Wtime();
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A call this file cannot give its meaning (a datatype or operation not
 * listed below): a bug of the program, said and stopped in every build
 * (an assert would let a Release build copy the wrong number of bytes). */
static _Noreturn void internal_error(const char *what)
{
    say("mergetrace: internal error: procs: %s\n", what);
    abort();
}

/* The threads' type of a predefined MPI type. Handles compare without
 * MPI_Init (constants or addresses). */
static mt_tw_type_t tw_type(MPI_Datatype t)
{
    if (t == MPI_CHAR)
        return MT_TW_CHAR;
    if (t == MPI_BYTE)
        return MT_TW_BYTE;
    if (t == MPI_INT || t == MPI_INT32_T)
        return MT_TW_I32;
    if (t == MPI_LONG)
        return MT_TW_LONG;
    if (t == MPI_INT64_T)
        return MT_TW_I64;
    if (t == MPI_UINT64_T)
        return MT_TW_U64;
    if (t == MPI_UNSIGNED_LONG_LONG)
        return MT_TW_ULL;
    if (t == MPI_DOUBLE)
        return MT_TW_DOUBLE;
    if (t == MPI_LONG_INT)
        return MT_TW_LONG_INT;
    internal_error("a type without its one-process size");
}

/* The threads' operation of op on t (maxloc of long_int alone, the others
 * of every other type). */
static mt_tw_op_t tw_op(MPI_Op op, MPI_Datatype t)
{
    bool pair = t == MPI_LONG_INT;
    if (op == MPI_SUM && !pair)
        return MT_TW_SUM;
    if (op == MPI_MIN && !pair)
        return MT_TW_MIN;
    if (op == MPI_MAX && !pair)
        return MT_TW_MAX;
    if (op == MPI_MAXLOC && pair)
        return MT_TW_MAXLOC;
    internal_error("an operation without its threads' meaning");
}

static size_t count_of(int count)
{
    return count > 0 ? (size_t)count : 0;
}

static size_t bytes_of(int count, MPI_Datatype t)
{
    return count_of(count) * mt_tw_type_size(tw_type(t));
}

static const void *tw_send(const void *send)
{
    return send == MPI_IN_PLACE ? MT_TW_IN_PLACE : send;
}

void procs_comm_rank(MPI_Comm c, int *rank)
{
    if (use_mpi)
        MPI_Comm_rank(c, rank);
    else
        *rank = mt_tw_rank();
}

void procs_comm_size(MPI_Comm c, int *size)
{
    if (use_mpi)
        MPI_Comm_size(c, size);
    else
        *size = mt_tw_size() ? mt_tw_size() : 1;
}

void procs_bcast(void *buf, int count, MPI_Datatype t, int root, MPI_Comm c)
{
    if (use_mpi)
        MPI_Bcast(buf, count, t, root, c);
    else
        mt_tw_bcast(buf, count_of(count), tw_type(t), root);
}

void procs_allreduce(const void *send, void *recv, int count, MPI_Datatype t, MPI_Op op, MPI_Comm c)
{
    if (use_mpi)
        MPI_Allreduce(send, recv, count, t, op, c);
    else
        mt_tw_reduce(tw_send(send), recv, count_of(count), tw_type(t), tw_op(op, t), 0, true);
}

void procs_reduce(const void *send, void *recv, int count, MPI_Datatype t, MPI_Op op, int root, MPI_Comm c)
{
    if (use_mpi)
        MPI_Reduce(send, recv, count, t, op, root, c);
    else
        mt_tw_reduce(tw_send(send), recv, count_of(count), tw_type(t), tw_op(op, t), root, false);
}

void procs_exscan(const void *send, void *recv, int count, MPI_Datatype t, MPI_Op op, MPI_Comm c)
{
    if (use_mpi)
        MPI_Exscan(send, recv, count, t, op, c);
    else
        mt_tw_exscan(tw_send(send), recv, count_of(count), tw_type(t), tw_op(op, t));
}

void procs_gather(const void *send, int scount, MPI_Datatype st, void *recv, int rcount, MPI_Datatype rt, int root,
                  MPI_Comm c)
{
    if (use_mpi)
        MPI_Gather(send, scount, st, recv, rcount, rt, root, c);
    else
        mt_tw_gather(tw_send(send), count_of(scount), tw_type(st), recv, count_of(rcount), tw_type(rt), root);
}

void procs_gatherv(const void *send, int scount, MPI_Datatype st, void *recv, const int *rcounts, const int *displs,
                   MPI_Datatype rt, int root, MPI_Comm c)
{
    if (use_mpi)
        MPI_Gatherv(send, scount, st, recv, rcounts, displs, rt, root, c);
    else
        mt_tw_gatherv(tw_send(send), count_of(scount), tw_type(st), recv, rcounts, displs, tw_type(rt), root);
}

void procs_alltoall(const void *send, int scount, MPI_Datatype st, void *recv, int rcount, MPI_Datatype rt, MPI_Comm c)
{
    if (use_mpi)
        MPI_Alltoall(send, scount, st, recv, rcount, rt, c);
    else
        mt_tw_alltoall(send, count_of(scount), tw_type(st), recv, count_of(rcount), tw_type(rt));
}

/* ------------------------------------------------------------ point to point */

static int mpi_src(int src)
{
    return src == PROCS_ANY_SOURCE ? MPI_ANY_SOURCE : src;
}

void procs_send(const void *buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm c)
{
    if (use_mpi)
        MPI_Send(buf, count, t, dest, tag, c);
    else
        mt_tw_send(buf, bytes_of(count, t), dest, tag);
}

void procs_recv(void *buf, int count, MPI_Datatype t, int src, int tag, MPI_Comm c, int *from)
{
    if (!use_mpi) {
        mt_tw_recv(buf, bytes_of(count, t), src, tag, from);
        return;
    }
    MPI_Status ms;
    MPI_Recv(buf, count, t, mpi_src(src), tag, c, &ms);
    if (from)
        *from = ms.MPI_SOURCE;
}

bool procs_iprobe(int src, int tag, MPI_Comm c)
{
    if (!use_mpi)
        return mt_tw_iprobe(src, tag);
    int flag = 0;
    MPI_Iprobe(mpi_src(src), tag, c, &flag, MPI_STATUS_IGNORE);
    return flag != 0;
}

void procs_req_null(procs_req_t *r)
{
    *r = (procs_req_t){.mpi = MPI_REQUEST_NULL};
}

void procs_isend(const void *buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm c, procs_req_t *r)
{
    procs_req_null(r);
    if (use_mpi)
        MPI_Isend(buf, count, t, dest, tag, c, &r->mpi);
    else
        mt_tw_isend(buf, bytes_of(count, t), dest, tag, &r->tw);
}

void procs_irecv(void *buf, int count, MPI_Datatype t, int src, int tag, MPI_Comm c, procs_req_t *r)
{
    procs_req_null(r);
    if (use_mpi)
        MPI_Irecv(buf, count, t, mpi_src(src), tag, c, &r->mpi);
    else
        mt_tw_irecv(buf, bytes_of(count, t), src, tag, &r->tw);
}

void procs_waitall(int n, procs_req_t *r)
{
    if (use_mpi) {
        for (int i = 0; i < n; i++)
            MPI_Wait(&r[i].mpi, MPI_STATUS_IGNORE);
        return;
    }
    /* the receives first: a thread waits for its own sends only after it
     * took what the others sent it */
    for (int i = 0; i < n; i++)
        if (r[i].tw.kind == 2)
            mt_tw_wait(&r[i].tw);
    for (int i = 0; i < n; i++)
        mt_tw_wait(&r[i].tw);
}
