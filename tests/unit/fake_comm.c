/* A fake multi-process mt_comm_t on POSIX threads, for unit tests: one
 * thread per simulated process, one mutex and condition variable over a
 * shared staging area of one slot per process (fake_comm.h). */
#define _POSIX_C_SOURCE 200809L
#include "fake_comm.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* What one process brought to the current collective. Written by its owner
 * on arrival; the exchange (done by the last to arrive) reads every slot
 * and writes recv/recv_len of the gatherv root. All under world.mu. */
typedef struct slot {
    fake_comm_op_t op;
    unsigned call;        /* this process's call number of op, from 0 */
    int root;
    const void *send;     /* gatherv */
    void *buf;            /* bcast */
    size_t len;           /* gatherv: bytes sent; bcast: bytes */
    int64_t *v;           /* allreduce_max */
    size_t n;
    const size_t *send_lens; /* alltoallv: bytes to each process */
    size_t *recv_lens;    /* alltoallv: bytes from each process (the owner's array) */
    void *recv;           /* gatherv root's or alltoallv's result */
    size_t recv_len;
} slot_t;

typedef struct world {
    pthread_mutex_t mu;
    pthread_cond_t cv;     /* a collective completed, or the world broke */
    int size;
    int arrived;           /* processes waiting in the current collective */
    int exited;            /* processes whose fn returned */
    int first_exited;
    fake_comm_op_t first_op; /* of the first process to arrive at the current collective */
    unsigned long gen;     /* collectives ended (mismatched ones too); a waiter leaves when it moves */
    unsigned long completed; /* collectives ended with the same call everywhere (injected failures too) */
    unsigned long per_op[FAKE_COMM_OP_COUNT_];
    mt_status_t result;    /* of collective number gen - 1, the same for everyone */
    bool broken;
    char why[256];
    const fake_comm_fault_t *fault;
    bool fault_fired;
    unsigned timeout_ms;
    slot_t *slots;
} world_t;

typedef struct proc {
    world_t *w;
    int rank;
    unsigned calls[FAKE_COMM_OP_COUNT_]; /* touched by this process's thread only */
    mt_comm_t comm;
    void (*fn)(const mt_comm_t *comm, void *arg);
    void *arg;
} proc_t;

const char *fake_comm_op_name(fake_comm_op_t op)
{
    static const char *const names[FAKE_COMM_OP_COUNT_] = {"gatherv", "bcast", "allreduce_max", "alltoallv"};
    return (unsigned)op < FAKE_COMM_OP_COUNT_ ? names[op] : "?";
}

/* Under w->mu. Keeps the first reason; wakes every waiter, who then
 * returns MT_ERR_CANCELLED (a real job would hang there). */
static void break_world(world_t *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void break_world(world_t *w, const char *fmt, ...)
{
    if (!w->broken) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(w->why, sizeof w->why, fmt, ap);
        va_end(ap);
        w->broken = true;
    }
    pthread_cond_broadcast(&w->cv);
}

/* Under w->mu, by the last process to arrive: every slot is filled and
 * every other owner is blocked, so their buffers may be read and written. */
static mt_status_t exchange(world_t *w)
{
    const slot_t *s0 = &w->slots[0];
    for (int r = 1; r < w->size; r++) {
        const slot_t *s = &w->slots[r];
        bool same = s->op == s0->op;
        if (same && s->op != FAKE_COMM_ALLREDUCE_MAX && s->op != FAKE_COMM_ALLTOALLV)
            same = s->root == s0->root;
        if (same && s->op == FAKE_COMM_BCAST)
            same = s->len == s0->len;
        if (same && s->op == FAKE_COMM_ALLREDUCE_MAX)
            same = s->n == s0->n;
        if (!same) {
            break_world(w,
                        "mismatched collectives: process 0 in %s (root %d, len %zu, n %zu), "
                        "process %d in %s (root %d, len %zu, n %zu)",
                        fake_comm_op_name(s0->op), s0->root, s0->len, s0->n, r, fake_comm_op_name(s->op), s->root,
                        s->len, s->n);
            return MT_ERR_CANCELLED;
        }
    }
    if (s0->op != FAKE_COMM_ALLREDUCE_MAX && s0->op != FAKE_COMM_ALLTOALLV && (s0->root < 0 || s0->root >= w->size)) {
        break_world(w, "%s with root %d of %d processes", fake_comm_op_name(s0->op), s0->root, w->size);
        return MT_ERR_CANCELLED;
    }
    const fake_comm_fault_t *f = w->fault;
    if (f && !w->fault_fired && f->proc >= 0 && f->proc < w->size && w->slots[f->proc].op == f->op &&
        w->slots[f->proc].call == f->call) {
        w->fault_fired = true;
        return f->status;
    }
    switch (s0->op) {
    case FAKE_COMM_GATHERV: {
        size_t total = 0;
        for (int r = 0; r < w->size; r++)
            total += w->slots[r].len;
        char *all = malloc(total ? total : 1);
        if (!all)
            return MT_ERR_NOMEM; /* for everyone, like mpi/comm_mpi.c */
        size_t off = 0;
        for (int r = 0; r < w->size; r++) {
            if (w->slots[r].len)
                memcpy(all + off, w->slots[r].send, w->slots[r].len);
            off += w->slots[r].len;
        }
        w->slots[s0->root].recv = all;
        w->slots[s0->root].recv_len = total;
        return MT_OK;
    }
    case FAKE_COMM_BCAST: {
        const slot_t *from = &w->slots[s0->root];
        for (int r = 0; r < w->size; r++)
            if (r != s0->root && from->len)
                memcpy(w->slots[r].buf, from->buf, from->len);
        return MT_OK;
    }
    case FAKE_COMM_ALLREDUCE_MAX:
        for (size_t i = 0; i < s0->n; i++) {
            int64_t m = s0->v[i];
            for (int r = 1; r < w->size; r++)
                if (w->slots[r].v[i] > m)
                    m = w->slots[r].v[i];
            for (int r = 0; r < w->size; r++)
                w->slots[r].v[i] = m;
        }
        return MT_OK;
    case FAKE_COMM_ALLTOALLV: {
        char **all = calloc((size_t)w->size, sizeof *all);
        if (!all)
            return MT_ERR_NOMEM;
        for (int r = 0; r < w->size; r++) {
            size_t total = 0;
            for (int p = 0; p < w->size; p++)
                total += w->slots[p].send_lens[r];
            if (!(all[r] = malloc(total ? total : 1))) {
                for (int q = 0; q < r; q++)
                    free(all[q]);
                free(all);
                return MT_ERR_NOMEM; /* for everyone, like mpi/comm_mpi.c */
            }
        }
        for (int r = 0; r < w->size; r++) {
            size_t off = 0;
            for (int p = 0; p < w->size; p++) {
                const slot_t *s = &w->slots[p];
                size_t at = 0; /* block r of p's send buffer */
                for (int q = 0; q < r; q++)
                    at += s->send_lens[q];
                if (s->send_lens[r])
                    memcpy(all[r] + off, (const char *)s->send + at, s->send_lens[r]);
                w->slots[r].recv_lens[p] = s->send_lens[r];
                off += s->send_lens[r];
            }
            w->slots[r].recv = all[r];
        }
        free(all);
        return MT_OK;
    }
    default:
        break_world(w, "unknown collective %d", (int)s0->op);
        return MT_ERR_CANCELLED;
    }
}

/* Arrive with *in, wait until every process has, return the collective's
 * status; *out gets this process's slot after the exchange. */
static mt_status_t collective(proc_t *p, const slot_t *in, slot_t *out)
{
    world_t *w = p->w;
    pthread_mutex_lock(&w->mu);
    slot_t *mine = &w->slots[p->rank];
    *mine = *in;
    mine->call = p->calls[in->op]++;
    mine->recv = NULL;
    mine->recv_len = 0;
    if (w->broken) {
        pthread_mutex_unlock(&w->mu);
        return MT_ERR_CANCELLED;
    }
    if (w->exited) {
        break_world(w, "process %d called %s (call %u) after process %d returned", p->rank,
                    fake_comm_op_name(in->op), mine->call, w->first_exited);
        pthread_mutex_unlock(&w->mu);
        return MT_ERR_CANCELLED;
    }
    unsigned long gen = w->gen;
    if (!w->arrived)
        w->first_op = in->op;
    if (++w->arrived == w->size) {
        w->result = exchange(w);
        if (!w->broken) {
            w->completed++;
            w->per_op[w->slots[0].op]++;
        }
        w->arrived = 0;
        w->gen++;
        pthread_cond_broadcast(&w->cv);
    } else {
        struct timespec deadline;
        clock_gettime(CLOCK_MONOTONIC, &deadline);
        deadline.tv_sec += (time_t)(w->timeout_ms / 1000);
        deadline.tv_nsec += (long)(w->timeout_ms % 1000) * 1000000L;
        if (deadline.tv_nsec >= 1000000000L) {
            deadline.tv_sec++;
            deadline.tv_nsec -= 1000000000L;
        }
        while (w->gen == gen && !w->broken)
            if (pthread_cond_timedwait(&w->cv, &w->mu, &deadline) == ETIMEDOUT && w->gen == gen && !w->broken)
                break_world(w, "process %d waited %u ms in %s (call %u): %d of %d processes arrived", p->rank,
                            w->timeout_ms, fake_comm_op_name(in->op), mine->call, w->arrived, w->size);
    }
    /* Completed (gen moved): its result, even if the world broke since. */
    mt_status_t st = w->gen != gen ? w->result : MT_ERR_CANCELLED;
    *out = *mine;
    pthread_mutex_unlock(&w->mu);
    return st;
}

static mt_status_t f_gatherv(void *ctx, const void *send, size_t len, void **recv, size_t *recv_len, int root)
{
    proc_t *p = ctx;
    *recv = NULL;
    *recv_len = 0;
    slot_t in = {.op = FAKE_COMM_GATHERV, .root = root, .send = send, .len = len}, out;
    mt_status_t st = collective(p, &in, &out);
    if (st == MT_OK && p->rank == root) {
        *recv = out.recv;
        *recv_len = out.recv_len;
    }
    return st;
}

static mt_status_t f_bcast(void *ctx, void *buf, size_t len, int root)
{
    slot_t in = {.op = FAKE_COMM_BCAST, .root = root, .buf = buf, .len = len}, out;
    return collective(ctx, &in, &out);
}

static mt_status_t f_allreduce_max(void *ctx, int64_t *v, size_t n)
{
    slot_t in = {.op = FAKE_COMM_ALLREDUCE_MAX, .v = v, .n = n}, out;
    return collective(ctx, &in, &out);
}

static mt_status_t f_alltoallv(void *ctx, const void *send, const size_t *send_lens, void **recv, size_t *recv_lens)
{
    proc_t *p = ctx;
    *recv = NULL;
    slot_t in = {.op = FAKE_COMM_ALLTOALLV, .send = send, .send_lens = send_lens, .recv_lens = recv_lens}, out;
    mt_status_t st = collective(p, &in, &out);
    if (st == MT_OK)
        *recv = out.recv;
    return st;
}

static void *proc_main(void *arg)
{
    proc_t *p = arg;
    p->fn(&p->comm, p->arg);
    world_t *w = p->w;
    pthread_mutex_lock(&w->mu);
    if (!w->exited++)
        w->first_exited = p->rank;
    /* Nobody can complete a collective without this process any more. */
    if (w->arrived > 0)
        break_world(w, "process %d returned while %d of %d processes wait in %s", p->rank, w->arrived, w->size,
                    fake_comm_op_name(w->first_op));
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

mt_status_t fake_comm_run(int nproc, void (*fn)(const mt_comm_t *comm, void *arg), void **args,
                          const fake_comm_opts_t *opts, fake_comm_report_t *report)
{
    memset(report, 0, sizeof *report);
    if (nproc < 1)
        return MT_ERR_USAGE;
    world_t w = {.size = nproc, .fault = opts ? opts->fault : NULL};
    w.timeout_ms = opts && opts->timeout_ms ? opts->timeout_ms : 30000;
    w.slots = calloc((size_t)nproc, sizeof *w.slots);
    proc_t *procs = calloc((size_t)nproc, sizeof *procs);
    pthread_t *threads = calloc((size_t)nproc, sizeof *threads);
    pthread_condattr_t ca;
    if (!w.slots || !procs || !threads || pthread_condattr_init(&ca)) {
        free(w.slots);
        free(procs);
        free(threads);
        return MT_ERR_NOMEM;
    }
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w.cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&w.mu, NULL);

    mt_status_t st = MT_OK;
    int started = 0;
    for (int r = 0; r < nproc; r++) {
        proc_t *p = &procs[r];
        p->w = &w;
        p->rank = r;
        p->fn = fn;
        p->arg = args ? args[r] : NULL;
        p->comm = (mt_comm_t){
            .ctx = p, .rank = r, .size = nproc, .gatherv = f_gatherv, .bcast = f_bcast,
            .allreduce_max = f_allreduce_max, .alltoallv = f_alltoallv,
        };
    }
    for (; started < nproc; started++)
        if (pthread_create(&threads[started], NULL, proc_main, &procs[started])) {
            /* the started ones would wait for this one for ever */
            pthread_mutex_lock(&w.mu);
            break_world(&w, "the thread of process %d could not be started", started);
            pthread_mutex_unlock(&w.mu);
            st = MT_ERR_NOMEM;
            break;
        }
    for (int r = 0; r < started; r++)
        pthread_join(threads[r], NULL);

    report->broken = w.broken;
    memcpy(report->why, w.why, sizeof report->why);
    report->completed = w.completed;
    memcpy(report->per_op, w.per_op, sizeof report->per_op);
    report->fault_fired = w.fault_fired;
    pthread_cond_destroy(&w.cv);
    pthread_mutex_destroy(&w.mu);
    free(w.slots);
    free(procs);
    free(threads);
    return st;
}
