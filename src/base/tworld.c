/* Worker threads as the processes of a world (mergetrace/tworld.h): one
 * mutex and condition variable. A collective is two rendezvous: at the
 * first every thread has published its arguments (tw.slots), so each may
 * read the others' buffers; the copies are made (each thread into its own
 * buffers, or thread 0 for the reductions, element by element so that
 * in-place buffers are read before they are written); at the second every
 * thread is done reading, so each may go on and change its buffers.
 * Point-to-point messages are a list of sends waiting for their receive;
 * the receiver copies straight from the sender's buffer (one copy: the
 * program's gathers move tens of MB). */
#include "mergetrace/tworld.h"

#include <assert.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* What one thread brought to the current collective. */
typedef struct tw_slot {
    const void *send;
    void *recv;
} tw_slot_t;

struct mt_tw_msg {
    mt_tw_msg_t *next;
    const void *data;
    size_t len;
    int from, to, tag;
    bool taken; /* the receiver copied it (it no longer touches data) */
    bool eager; /* data is the copy after this struct; the receiver frees the message */
};

static struct {
    int n; /* 0: no world */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int arrived;
    unsigned long gen; /* rendezvous completed */
    tw_slot_t *slots;
    mt_tw_msg_t *head; /* sends waiting for their receive, in the order sent */
    int (*fn)(void *arg, int rank);
    void *arg;
    int *codes;
    bool go; /* the world's size is final: threads may begin */
} tw = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static _Thread_local int tw_rank;

typedef struct {
    long v;
    int i;
} long_int_t;

size_t mt_tw_type_size(mt_tw_type_t t)
{
    switch (t) {
    case MT_TW_CHAR:
    case MT_TW_BYTE: return 1;
    case MT_TW_I32: return sizeof(int32_t);
    case MT_TW_LONG: return sizeof(long);
    case MT_TW_I64:
    case MT_TW_U64: return sizeof(int64_t);
    case MT_TW_ULL: return sizeof(unsigned long long);
    case MT_TW_DOUBLE: return sizeof(double);
    case MT_TW_LONG_INT: return sizeof(long_int_t);
    }
    assert(!"mt_tw_type_size: not a type");
    return 0;
}

static size_t bytes_of(size_t count, mt_tw_type_t t)
{
    return count * mt_tw_type_size(t);
}

/* ------------------------------------------------------------ the world */

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

int mt_tw_run(int n, int (*fn)(void *arg, int rank), void *arg, int *codes)
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

int mt_tw_size(void)
{
    return tw.n;
}

int mt_tw_rank(void)
{
    return tw.n ? tw_rank : 0;
}

/* ------------------------------------------------------------ collectives */

static void copy(const void *send, void *recv, size_t count, mt_tw_type_t t)
{
    if (send != MT_TW_IN_PLACE && send != recv && count > 0)
        memcpy(recv, send, bytes_of(count, t));
}

/* One element of type T: a = a op b. */
#define RED(T)                                                                                                         \
    do {                                                                                                               \
        T *x = a;                                                                                                      \
        T y = *(const T *)b;                                                                                           \
        if (op == MT_TW_SUM)                                                                                           \
            *x += y;                                                                                                   \
        else if (op == MT_TW_MIN)                                                                                      \
            *x = y < *x ? y : *x;                                                                                      \
        else                                                                                                           \
            *x = y > *x ? y : *x;                                                                                      \
    } while (0)

static void reduce_one(void *a, const void *b, mt_tw_type_t t, mt_tw_op_t op)
{
    assert((t == MT_TW_LONG_INT) == (op == MT_TW_MAXLOC) && "mt_tw: maxloc is of MT_TW_LONG_INT alone");
    switch (t) {
    case MT_TW_CHAR: RED(char); break;
    case MT_TW_BYTE: RED(unsigned char); break;
    case MT_TW_I32: RED(int32_t); break;
    case MT_TW_LONG: RED(long); break;
    case MT_TW_I64: RED(int64_t); break;
    case MT_TW_U64: RED(uint64_t); break;
    case MT_TW_ULL: RED(unsigned long long); break;
    case MT_TW_DOUBLE: RED(double); break;
    case MT_TW_LONG_INT: {
        /* the larger value; on a tie the lower index, as MPI says */
        long_int_t *x = a;
        const long_int_t *y = b;
        if (y->v > x->v || (y->v == x->v && y->i < x->i))
            *x = *y;
        break;
    }
    }
}

void mt_tw_bcast(void *buf, size_t count, mt_tw_type_t t, int root)
{
    if (!tw.n)
        return;
    tw_slot_t *sl = tw_arrive(buf, buf);
    if (tw_rank != root && count > 0)
        memcpy(buf, sl[root].send, bytes_of(count, t));
    tw_sync();
}

/* Thread 0 reduces between the two rendezvous, element by element: all
 * the inputs of element i are read before any output of it is written. */
void mt_tw_reduce(const void *send, void *recv, size_t count, mt_tw_type_t t, mt_tw_op_t op, int root, bool all)
{
    if (!tw.n) {
        copy(send, recv, count, t);
        return;
    }
    tw_slot_t *sl = tw_arrive(send == MT_TW_IN_PLACE ? recv : send, recv);
    if (tw_rank == 0 && count > 0) {
        size_t k = mt_tw_type_size(t);
        unsigned char acc[32];
        assert(k <= sizeof acc);
        for (size_t i = 0; i < count; i++) {
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

void mt_tw_exscan(const void *send, void *recv, size_t count, mt_tw_type_t t, mt_tw_op_t op)
{
    if (!tw.n)
        return;
    /* each input read before its recv is written */
    tw_slot_t *sl = tw_arrive(send == MT_TW_IN_PLACE ? recv : send, recv);
    if (tw_rank == 0 && count > 0) {
        size_t k = mt_tw_type_size(t);
        unsigned char acc[32], next[32];
        assert(k <= sizeof acc);
        for (size_t i = 0; i < count; i++) {
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

void mt_tw_gather(const void *send, size_t scount, mt_tw_type_t st, void *recv, size_t rcount, mt_tw_type_t rt,
                  int root)
{
    if (!tw.n) {
        copy(send, recv, scount, st);
        return;
    }
    tw_slot_t *sl = tw_arrive(send, recv);
    if (tw_rank == root)
        for (int q = 0; q < tw.n; q++)
            if (sl[q].send != MT_TW_IN_PLACE)
                copy(sl[q].send, (char *)recv + bytes_of((size_t)q * rcount, rt), rcount, rt);
    tw_sync();
}

void mt_tw_gatherv(const void *send, size_t scount, mt_tw_type_t st, void *recv, const int *rcounts, const int *displs,
                   mt_tw_type_t rt, int root)
{
    if (!tw.n) {
        copy(send, (char *)recv + bytes_of((size_t)displs[0], rt), scount, st);
        return;
    }
    tw_slot_t *sl = tw_arrive(send, recv);
    if (tw_rank == root)
        for (int q = 0; q < tw.n; q++)
            if (sl[q].send != MT_TW_IN_PLACE && rcounts[q] > 0)
                copy(sl[q].send, (char *)recv + bytes_of((size_t)displs[q], rt), (size_t)rcounts[q], rt);
    tw_sync();
}

void mt_tw_alltoall(const void *send, size_t scount, mt_tw_type_t st, void *recv, size_t rcount, mt_tw_type_t rt)
{
    if (!tw.n) {
        copy(send, recv, scount, st);
        return;
    }
    tw_slot_t *sl = tw_arrive(send, recv);
    for (int q = 0; q < tw.n; q++) /* block tw_rank of each thread's send */
        copy((const char *)sl[q].send + bytes_of((size_t)tw_rank * scount, st),
             (char *)recv + bytes_of((size_t)q * rcount, rt), rcount, rt);
    tw_sync();
}

/* ------------------------------------------------------------ point to point */

/* Under tw.mu: the first waiting message to this thread with tag from src. */
static mt_tw_msg_t **tw_find(int src, int tag)
{
    for (mt_tw_msg_t **p = &tw.head; *p; p = &(*p)->next)
        if ((*p)->to == tw_rank && (*p)->tag == tag && (src == MT_TW_ANY_SOURCE || (*p)->from == src))
            return p;
    return NULL;
}

/* Under tw.mu: m at the end of the list, and the waiters told. */
static void tw_post(mt_tw_msg_t *m)
{
    mt_tw_msg_t **p = &tw.head;
    while (*p)
        p = &(*p)->next;
    m->next = NULL;
    *p = m;
    pthread_cond_broadcast(&tw.cv);
}

/* Under tw.mu: wait until the receiver copied m. */
static void tw_wait_taken(mt_tw_msg_t *m)
{
    while (!m->taken)
        pthread_cond_wait(&tw.cv, &tw.mu);
}

void mt_tw_recv(void *buf, size_t cap, int src, int tag, int *from)
{
    assert(tw.n && "mt_tw: a receive without another process");
    pthread_mutex_lock(&tw.mu);
    mt_tw_msg_t **p;
    while (!(p = tw_find(src, tag)))
        pthread_cond_wait(&tw.cv, &tw.mu);
    mt_tw_msg_t *m = *p;
    *p = m->next;
    assert(m->len <= cap && "mt_tw: a message longer than its receive");
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

void mt_tw_send(const void *buf, size_t len, int dest, int tag)
{
    assert(tw.n && "mt_tw: a send without another process");
    mt_tw_msg_t m = {.data = buf, .len = len, .from = tw_rank, .to = dest, .tag = tag};
    pthread_mutex_lock(&tw.mu);
    tw_post(&m);
    tw_wait_taken(&m);
    pthread_mutex_unlock(&tw.mu);
}

bool mt_tw_iprobe(int src, int tag)
{
    if (!tw.n)
        return false;
    pthread_mutex_lock(&tw.mu);
    bool flag = tw_find(src, tag) != NULL;
    pthread_mutex_unlock(&tw.mu);
    return flag;
}

void mt_tw_isend(const void *buf, size_t len, int dest, int tag, mt_tw_req_t *r)
{
    *r = (mt_tw_req_t){0};
    assert(tw.n && "mt_tw: a send without another process");
    mt_tw_msg_t *m = NULL;
    if (len <= MT_TW_EAGER && (m = malloc(sizeof *m + len))) {
        /* copied: the receiver frees it, the request is done */
        *m = (mt_tw_msg_t){.data = m + 1, .len = len, .from = tw_rank, .to = dest, .tag = tag, .eager = true};
        memcpy(m + 1, buf, len);
    } else if ((m = malloc(sizeof *m))) {
        *m = (mt_tw_msg_t){.data = buf, .len = len, .from = tw_rank, .to = dest, .tag = tag};
        r->kind = 1;
        r->msg = m;
    } else {
        mt_tw_send(buf, len, dest, tag); /* out of memory: wait for the receive here */
        return;
    }
    pthread_mutex_lock(&tw.mu);
    tw_post(m);
    pthread_mutex_unlock(&tw.mu);
}

void mt_tw_irecv(void *buf, size_t cap, int src, int tag, mt_tw_req_t *r)
{
    /* received at mt_tw_wait; every send it may wait for is posted
     * before its sender waits */
    *r = (mt_tw_req_t){.kind = 2, .rbuf = buf, .rlen = cap, .peer = src, .tag = tag};
}

void mt_tw_wait(mt_tw_req_t *r)
{
    if (r->kind == 2) {
        mt_tw_recv(r->rbuf, r->rlen, r->peer, r->tag, NULL);
    } else if (r->kind == 1) {
        pthread_mutex_lock(&tw.mu);
        tw_wait_taken(r->msg);
        pthread_mutex_unlock(&tw.mu);
        free(r->msg);
        r->msg = NULL;
    }
    r->kind = 0;
}
