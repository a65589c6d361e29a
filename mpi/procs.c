/* The program's processes (procs.h): MPI under an MPI launcher, one
 * process without MPI otherwise, alone or as worker threads, and the
 * program's MPI calls with their one-process and their threads' meaning.
 *
 * The threads' world: one mutex and condition variable. A collective is
 * two rendezvous: at the first every thread has published its arguments
 * (tw.slots), so each may read the others' buffers; the copies are made
 * (each thread into its own buffers, or thread 0 for the reductions,
 * element by element so that MPI_IN_PLACE buffers read before they are
 * written); at the second every thread is done reading, so each may go on
 * and change its buffers. Point-to-point messages are a list of sends
 * waiting for their receive; the receiver copies straight from the
 * sender's buffer (one copy, as the gathers of mpi/comm_mpi.c move tens of
 * MB). */
#define _GNU_SOURCE /* clock_gettime */
#include "procs.h"
#include "say.h"

#include <assert.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static bool use_mpi;

/* What one thread brought to the current collective. */
typedef struct tw_slot {
    const void *send;
    void *recv;
} tw_slot_t;

struct procs_msg {
    procs_msg_t *next;
    const void *data;
    size_t len;
    int from, to, tag;
    bool taken;           /* the receiver copied it (it no longer touches data) */
    bool eager;           /* data is the copy after this struct; the receiver frees the message */
};

static struct {
    int n;                /* 0: no threads */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int arrived;
    unsigned long gen;    /* rendezvous completed */
    tw_slot_t *slots;
    procs_msg_t *head;    /* sends waiting for their receive, in the order sent */
    int (*fn)(void *arg, int rank);
    void *arg;
    int *codes;
    bool go;              /* the world's size is final: threads may begin */
} tw = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static _Thread_local int tw_rank;

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
    return tw.n;
}

int procs_node_size(MPI_Comm c)
{
    if (tw.n)
        return tw.n;
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

/* ------------------------------------------------------------ threads */

/* Wait until every thread of the world has called this as often. */
static void tw_sync(void)
{
    pthread_mutex_lock(&tw.mu);
    unsigned long gen = tw.gen;
    if (++tw.arrived == tw.n) {
        tw.arrived = 0;
        tw.gen++;
        pthread_cond_broadcast(&tw.cv);
    } else {
        while (tw.gen == gen)
            pthread_cond_wait(&tw.cv, &tw.mu);
    }
    pthread_mutex_unlock(&tw.mu);
}

/* Publish this thread's buffers and wait for everyone's. */
static tw_slot_t *tw_arrive(const void *send, void *recv)
{
    tw.slots[tw_rank] = (tw_slot_t){.send = send, .recv = recv};
    tw_sync();
    return tw.slots;
}

static void *tw_main(void *arg)
{
    tw_rank = (int)(intptr_t)arg;
    pthread_mutex_lock(&tw.mu);
    while (!tw.go)
        pthread_cond_wait(&tw.cv, &tw.mu);
    bool in_world = tw_rank < tw.n;
    pthread_mutex_unlock(&tw.mu);
    if (in_world)
        tw.codes[tw_rank] = tw.fn(tw.arg, tw_rank);
    return NULL;
}

int procs_run_threads(int n, int (*fn)(void *arg, int rank), void *arg, int *codes)
{
    if (n < 1)
        return 0;
    pthread_t *th = malloc((size_t)n * sizeof *th);
    tw.slots = calloc((size_t)n, sizeof *tw.slots);
    if (!th || !tw.slots)
        n = 1;
    tw.fn = fn;
    tw.arg = arg;
    tw.codes = codes;
    tw.go = false;
    int started = 1;
    for (; started < n; started++)
        if (pthread_create(&th[started], NULL, tw_main, (void *)(intptr_t)started))
            break;
    /* The world is what started; the threads wait for its size before
     * their first call (a thread beyond it returns at once). */
    pthread_mutex_lock(&tw.mu);
    tw.n = started > 1 ? started : 0;
    tw.go = true;
    pthread_cond_broadcast(&tw.cv);
    pthread_mutex_unlock(&tw.mu);
    tw_rank = 0;
    codes[0] = fn(arg, 0);
    for (int r = 1; r < started; r++)
        pthread_join(th[r], NULL);
    tw.n = 0;
    free(th);
    free(tw.slots);
    tw.slots = NULL;
    return started;
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

/* Bytes of count elements of a predefined type, for the one-process
 * copies. Handles compare without MPI_Init (constants or addresses). */
static size_t bytes_of(int count, MPI_Datatype t)
{
    size_t k = 0;
    if (t == MPI_CHAR || t == MPI_BYTE)
        k = 1;
    else if (t == MPI_INT || t == MPI_INT32_T)
        k = sizeof(int32_t);
    else if (t == MPI_LONG)
        k = sizeof(long);
    else if (t == MPI_INT64_T || t == MPI_UINT64_T)
        k = sizeof(int64_t);
    else if (t == MPI_UNSIGNED_LONG_LONG)
        k = sizeof(unsigned long long);
    else if (t == MPI_DOUBLE)
        k = sizeof(double);
    else if (t == MPI_LONG_INT)
        k = sizeof(struct { long v; int i; });
    if (!k) /* a type this file does not know: every build stops here, not only those with asserts */
        internal_error("a type without its one-process size");
    return k * (size_t)(count > 0 ? count : 0);
}

static void copy(const void *send, void *recv, int count, MPI_Datatype t)
{
    if (send != MPI_IN_PLACE && send != recv && count > 0)
        memcpy(recv, send, bytes_of(count, t));
}

/* One element of type t: a = a op b. */
#define RED(T)                                                                                                         \
    do {                                                                                                               \
        T *x = a;                                                                                                      \
        T y = *(const T *)b;                                                                                           \
        if (op == MPI_SUM)                                                                                             \
            *x += y;                                                                                                   \
        else if (op == MPI_MIN)                                                                                        \
            *x = y < *x ? y : *x;                                                                                      \
        else if (op == MPI_MAX)                                                                                        \
            *x = y > *x ? y : *x;                                                                                      \
        else                                                                                                           \
            internal_error("an operation without its threads' meaning");                                              \
    } while (0)

typedef struct {
    long v;
    int i;
} long_int_t;

static void reduce_one(void *a, const void *b, MPI_Datatype t, MPI_Op op)
{
    if (t == MPI_CHAR)
        RED(char);
    else if (t == MPI_BYTE)
        RED(unsigned char);
    else if (t == MPI_INT || t == MPI_INT32_T)
        RED(int32_t);
    else if (t == MPI_LONG)
        RED(long);
    else if (t == MPI_INT64_T)
        RED(int64_t);
    else if (t == MPI_UINT64_T)
        RED(uint64_t);
    else if (t == MPI_UNSIGNED_LONG_LONG)
        RED(unsigned long long);
    else if (t == MPI_DOUBLE)
        RED(double);
    else if (t == MPI_LONG_INT && op == MPI_MAXLOC) {
        /* the larger value; on a tie the lower index, as MPI says */
        long_int_t *x = a;
        const long_int_t *y = b;
        if (y->v > x->v || (y->v == x->v && y->i < x->i))
            *x = *y;
    } else
        internal_error("a type without its threads' reduction");
}

/* Threads: reduce count elements over the world into every recv (all) or
 * root's. Thread 0 does it between the two rendezvous, element by element:
 * all the inputs of element i are read before any output of it is
 * written, so in-place buffers are fine. */
static void tw_reduce(const void *send, void *recv, int count, MPI_Datatype t, MPI_Op op, int root, bool all)
{
    tw_slot_t *sl = tw_arrive(send == MPI_IN_PLACE ? recv : send, recv);
    if (tw_rank == 0 && count > 0) {
        size_t k = bytes_of(1, t);
        unsigned char acc[32];
        assert(k <= sizeof acc);
        for (size_t i = 0; i < (size_t)count; i++) {
            memcpy(acc, (const char *)sl[0].send + i * k, k);
            for (int q = 1; q < tw.n; q++)
                reduce_one(acc, (const char *)sl[q].send + i * k, t, op);
            for (int q = 0; q < tw.n; q++)
                if (all || q == root)
                    memcpy((char *)sl[q].recv + i * k, acc, k);
        }
    }
    tw_sync();
}

void procs_comm_rank(MPI_Comm c, int *rank)
{
    if (use_mpi)
        MPI_Comm_rank(c, rank);
    else
        *rank = tw.n ? tw_rank : 0;
}

void procs_comm_size(MPI_Comm c, int *size)
{
    if (use_mpi)
        MPI_Comm_size(c, size);
    else
        *size = tw.n ? tw.n : 1;
}

void procs_bcast(void *buf, int count, MPI_Datatype t, int root, MPI_Comm c)
{
    if (use_mpi) {
        MPI_Bcast(buf, count, t, root, c);
    } else if (tw.n) {
        tw_slot_t *sl = tw_arrive(buf, buf);
        if (tw_rank != root && count > 0)
            memcpy(buf, sl[root].send, bytes_of(count, t));
        tw_sync();
    }
}

void procs_allreduce(const void *send, void *recv, int count, MPI_Datatype t, MPI_Op op, MPI_Comm c)
{
    if (use_mpi)
        MPI_Allreduce(send, recv, count, t, op, c);
    else if (tw.n)
        tw_reduce(send, recv, count, t, op, 0, true);
    else
        copy(send, recv, count, t);
}

void procs_reduce(const void *send, void *recv, int count, MPI_Datatype t, MPI_Op op, int root, MPI_Comm c)
{
    if (use_mpi)
        MPI_Reduce(send, recv, count, t, op, root, c);
    else if (tw.n)
        tw_reduce(send, recv, count, t, op, root, false);
    else
        copy(send, recv, count, t);
}

void procs_exscan(const void *send, void *recv, int count, MPI_Datatype t, MPI_Op op, MPI_Comm c)
{
    if (use_mpi) {
        MPI_Exscan(send, recv, count, t, op, c);
    } else if (tw.n) {
        /* process q gets the reduction over 0 .. q-1 (process 0: unchanged,
         * undefined in MPI); each input read before its recv is written */
        tw_slot_t *sl = tw_arrive(send == MPI_IN_PLACE ? recv : send, recv);
        if (tw_rank == 0 && count > 0) {
            size_t k = bytes_of(1, t);
            unsigned char acc[32], next[32];
            assert(k <= sizeof acc);
            for (size_t i = 0; i < (size_t)count; i++) {
                memcpy(acc, (const char *)sl[0].send + i * k, k);
                for (int q = 1; q < tw.n; q++) {
                    memcpy(next, (const char *)sl[q].send + i * k, k);
                    memcpy((char *)sl[q].recv + i * k, acc, k);
                    reduce_one(acc, next, t, op);
                }
            }
        }
        tw_sync();
    }
}

void procs_gather(const void *send, int scount, MPI_Datatype st, void *recv, int rcount, MPI_Datatype rt, int root,
                  MPI_Comm c)
{
    if (use_mpi) {
        MPI_Gather(send, scount, st, recv, rcount, rt, root, c);
    } else if (tw.n) {
        tw_slot_t *sl = tw_arrive(send, recv);
        if (tw_rank == root)
            for (int q = 0; q < tw.n; q++)
                if (sl[q].send != MPI_IN_PLACE)
                    copy(sl[q].send, (char *)recv + bytes_of(q * rcount, rt), rcount, rt);
        tw_sync();
    } else {
        copy(send, recv, scount, st);
    }
}

void procs_gatherv(const void *send, int scount, MPI_Datatype st, void *recv, const int *rcounts, const int *displs,
                   MPI_Datatype rt, int root, MPI_Comm c)
{
    if (use_mpi) {
        MPI_Gatherv(send, scount, st, recv, rcounts, displs, rt, root, c);
    } else if (tw.n) {
        tw_slot_t *sl = tw_arrive(send, recv);
        if (tw_rank == root)
            for (int q = 0; q < tw.n; q++)
                if (sl[q].send != MPI_IN_PLACE)
                    copy(sl[q].send, (char *)recv + bytes_of(displs[q], rt), rcounts[q], rt);
        tw_sync();
    } else {
        (void)rcounts;
        copy(send, (char *)recv + bytes_of(displs[0], rt), scount, st);
    }
}

void procs_alltoall(const void *send, int scount, MPI_Datatype st, void *recv, int rcount, MPI_Datatype rt, MPI_Comm c)
{
    if (use_mpi) {
        MPI_Alltoall(send, scount, st, recv, rcount, rt, c);
    } else if (tw.n) {
        tw_slot_t *sl = tw_arrive(send, recv);
        for (int q = 0; q < tw.n; q++) /* block tw_rank of each process's send */
            copy((const char *)sl[q].send + bytes_of(tw_rank * scount, st), (char *)recv + bytes_of(q * rcount, rt),
                 rcount, rt);
        tw_sync();
    } else {
        copy(send, recv, scount, st);
    }
}

/* ------------------------------------------------------------ point to point */

/* Under tw.mu: the first waiting message to this thread with tag from src. */
static procs_msg_t **tw_find(int src, int tag)
{
    for (procs_msg_t **p = &tw.head; *p; p = &(*p)->next)
        if ((*p)->to == tw_rank && (*p)->tag == tag && (src == PROCS_ANY_SOURCE || (*p)->from == src))
            return p;
    return NULL;
}

/* Under tw.mu: m at the end of the list, and the waiters told. */
static void tw_post(procs_msg_t *m)
{
    procs_msg_t **p = &tw.head;
    while (*p)
        p = &(*p)->next;
    m->next = NULL;
    *p = m;
    pthread_cond_broadcast(&tw.cv);
}

static void tw_recv(void *buf, size_t cap, int src, int tag, int *from)
{
    pthread_mutex_lock(&tw.mu);
    procs_msg_t **p;
    while (!(p = tw_find(src, tag)))
        pthread_cond_wait(&tw.cv, &tw.mu);
    procs_msg_t *m = *p;
    *p = m->next;
    assert(m->len <= cap && "procs: a message longer than its receive");
    if (m->len)
        memcpy(buf, m->data, m->len < cap ? m->len : cap);
    if (from)
        *from = m->from;
    if (m->eager) {
        free(m);
    } else {
        m->taken = true;
        pthread_cond_broadcast(&tw.cv);
    }
    pthread_mutex_unlock(&tw.mu);
}

/* Under tw.mu: wait until the receiver copied m. */
static void tw_wait_taken(procs_msg_t *m)
{
    while (!m->taken)
        pthread_cond_wait(&tw.cv, &tw.mu);
}

static int mpi_src(int src)
{
    return src == PROCS_ANY_SOURCE ? MPI_ANY_SOURCE : src;
}

void procs_send(const void *buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm c)
{
    if (use_mpi) {
        MPI_Send(buf, count, t, dest, tag, c);
        return;
    }
    assert(tw.n && "procs: a send without another process");
    procs_msg_t m = {.data = buf, .len = bytes_of(count, t), .from = tw_rank, .to = dest, .tag = tag};
    pthread_mutex_lock(&tw.mu);
    tw_post(&m);
    tw_wait_taken(&m);
    pthread_mutex_unlock(&tw.mu);
}

void procs_recv(void *buf, int count, MPI_Datatype t, int src, int tag, MPI_Comm c, int *from)
{
    if (use_mpi) {
        MPI_Status ms;
        MPI_Recv(buf, count, t, mpi_src(src), tag, c, &ms);
        if (from)
            *from = ms.MPI_SOURCE;
        return;
    }
    assert(tw.n && "procs: a receive without another process");
    tw_recv(buf, bytes_of(count, t), src, tag, from);
}

bool procs_iprobe(int src, int tag, MPI_Comm c)
{
    int flag = 0;
    if (use_mpi) {
        MPI_Iprobe(mpi_src(src), tag, c, &flag, MPI_STATUS_IGNORE);
    } else if (tw.n) {
        pthread_mutex_lock(&tw.mu);
        flag = tw_find(src, tag) != NULL;
        pthread_mutex_unlock(&tw.mu);
    }
    return flag != 0;
}

void procs_req_null(procs_req_t *r)
{
    *r = (procs_req_t){.mpi = MPI_REQUEST_NULL};
}

void procs_isend(const void *buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm c, procs_req_t *r)
{
    procs_req_null(r);
    if (use_mpi) {
        MPI_Isend(buf, count, t, dest, tag, c, &r->mpi);
        return;
    }
    assert(tw.n && "procs: a send without another process");
    size_t len = bytes_of(count, t);
    procs_msg_t *m = NULL;
    if (len <= PROCS_EAGER && (m = malloc(sizeof *m + len))) {
        /* copied: the receiver frees it, the request is done */
        *m = (procs_msg_t){.data = m + 1, .len = len, .from = tw_rank, .to = dest, .tag = tag, .eager = true};
        memcpy(m + 1, buf, len);
    } else if ((m = malloc(sizeof *m))) {
        *m = (procs_msg_t){.data = buf, .len = len, .from = tw_rank, .to = dest, .tag = tag};
        r->kind = 1;
        r->msg = m;
    } else {
        procs_send(buf, count, t, dest, tag, c); /* out of memory: wait for the receive here */
        return;
    }
    pthread_mutex_lock(&tw.mu);
    tw_post(m);
    pthread_mutex_unlock(&tw.mu);
}

void procs_irecv(void *buf, int count, MPI_Datatype t, int src, int tag, MPI_Comm c, procs_req_t *r)
{
    procs_req_null(r);
    if (use_mpi) {
        MPI_Irecv(buf, count, t, mpi_src(src), tag, c, &r->mpi);
        return;
    }
    /* received at procs_waitall; every send it may wait for is posted
     * before its sender waits */
    *r = (procs_req_t){.mpi = MPI_REQUEST_NULL, .kind = 2, .rbuf = buf, .rlen = bytes_of(count, t), .peer = src,
                       .tag = tag};
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
        if (r[i].kind == 2) {
            tw_recv(r[i].rbuf, r[i].rlen, r[i].peer, r[i].tag, NULL);
            r[i].kind = 0;
        }
    pthread_mutex_lock(&tw.mu);
    for (int i = 0; i < n; i++)
        if (r[i].kind == 1) {
            tw_wait_taken(r[i].msg);
            free(r[i].msg);
            r[i].msg = NULL;
            r[i].kind = 0;
        }
    pthread_mutex_unlock(&tw.mu);
}
