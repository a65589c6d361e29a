/* mt_comm_t over MPI, or over the worker threads of a run by hand (both
 * through procs.h): gatherv and alltoallv of bytes (sizes first, the
 * payload in 1 GiB pieces so no count overflows an int), bcast, allreduce
 * of int64 maxima; comm_mpi_agree, the agreement on a status; and
 * process 0's bytes to everyone (comm_mpi_bcast_bytes). */
#include "comm_mpi.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>

#include "procs.h"

static MPI_Comm comm_of(void *ctx)
{
    return *(MPI_Comm *)ctx;
}

static mt_status_t m_gatherv(void *ctx, const void *send, size_t len, void **recv, size_t *recv_len, int root)
{
    MPI_Comm comm = comm_of(ctx);
    int me, n;
    procs_comm_rank(comm, &me);
    procs_comm_size(comm, &n);
    *recv = NULL;
    *recv_len = 0;
    /* Sizes travel as 64-bit; the payload in chunks below INT_MAX. */
    unsigned long long mine = len, *sizes = NULL;
    if (me == root)
        sizes = malloc((size_t)n * sizeof *sizes);
    int ok = me != root || sizes != NULL;
    /* Agree before the gather: the root cannot receive into NULL. */
    if (comm_mpi_agree(comm, !ok)) {
        free(sizes);
        return MT_ERR_NOMEM;
    }
    procs_gather(&mine, 1, MPI_UNSIGNED_LONG_LONG, sizes, 1, MPI_UNSIGNED_LONG_LONG, root, comm);
    char *all = NULL;
    size_t total = 0;
    if (me == root && ok) {
        for (int p = 0; p < n; p++)
            total += sizes[p];
        all = malloc(total ? total : 1);
        ok = all != NULL;
    }
    if (comm_mpi_agree(comm, !ok)) {
        free(sizes);
        free(all);
        return MT_ERR_NOMEM;
    }
    const size_t piece = (size_t)1 << 30;
    if (me == root) {
        size_t off = 0;
        for (int p = 0; p < n; p++) {
            for (size_t done = 0; done < sizes[p];) {
                size_t k = sizes[p] - done < piece ? sizes[p] - done : piece;
                if (p == me)
                    __builtin_memcpy(all + off + done, (const char *)send + done, k);
                else
                    procs_recv(all + off + done, (int)k, MPI_BYTE, p, 77, comm, NULL);
                done += k;
            }
            off += sizes[p];
        }
        *recv = all;
        *recv_len = total;
    } else {
        for (size_t done = 0; done < len;) {
            size_t k = len - done < piece ? len - done : piece;
            procs_send((const char *)send + done, (int)k, MPI_BYTE, root, 77, comm);
            done += k;
        }
    }
    free(sizes);
    return MT_OK;
}

static mt_status_t m_bcast(void *ctx, void *buf, size_t len, int root)
{
    const size_t piece = (size_t)1 << 30;
    for (size_t done = 0; done < len;) {
        size_t k = len - done < piece ? len - done : piece;
        procs_bcast((char *)buf + done, (int)k, MPI_BYTE, root, comm_of(ctx));
        done += k;
    }
    return MT_OK;
}

static mt_status_t m_allreduce_max(void *ctx, int64_t *v, size_t n)
{
    procs_allreduce(MPI_IN_PLACE, v, (int)n, MPI_INT64_T, MPI_MAX, comm_of(ctx));
    return MT_OK;
}

/* Sizes by MPI_Alltoall, then each pair's bytes as nonblocking pieces of
 * at most 1 GiB (every receive posted before any send, so no order of
 * sends can block), this process's own block copied. */
static mt_status_t m_alltoallv(void *ctx, const void *send, const size_t *send_lens, void **recv, size_t *recv_lens)
{
    MPI_Comm comm = comm_of(ctx);
    int me, n;
    procs_comm_rank(comm, &me);
    procs_comm_size(comm, &n);
    *recv = NULL;
    const size_t piece = (size_t)1 << 30;
    unsigned long long *out = malloc((size_t)n * sizeof *out), *in = malloc((size_t)n * sizeof *in);
    int ok = out && in;
    if (comm_mpi_agree(comm, !ok)) {
        free(out);
        free(in);
        return MT_ERR_NOMEM;
    }
    for (int q = 0; q < n; q++)
        out[q] = send_lens[q];
    if (n == 1)
        in[0] = out[0];
    else
        procs_alltoall(out, 1, MPI_UNSIGNED_LONG_LONG, in, 1, MPI_UNSIGNED_LONG_LONG, comm);
    size_t total = 0, n_req = 0;
    for (int q = 0; q < n; q++) {
        recv_lens[q] = in[q];
        total += in[q];
        if (q != me)
            n_req += (in[q] + piece - 1) / piece + (out[q] + piece - 1) / piece;
    }
    char *all = malloc(total ? total : 1);
    procs_req_t *req = malloc((n_req ? n_req : 1) * sizeof *req);
    ok = all && req;
    if (comm_mpi_agree(comm, !ok)) {
        free(out);
        free(in);
        free(all);
        free(req);
        return MT_ERR_NOMEM;
    }
    size_t k = 0, off = 0;
    for (int q = 0; q < n; q++) {
        for (size_t done = 0; q != me && done < in[q]; done += piece) {
            size_t len = in[q] - done < piece ? in[q] - done : piece;
            procs_irecv(all + off + done, (int)len, MPI_BYTE, q, 78, comm, &req[k++]);
        }
        off += in[q];
    }
    const char *from = send;
    for (int q = 0; q < n; q++) {
        for (size_t done = 0; q != me && done < out[q]; done += piece) {
            size_t len = out[q] - done < piece ? out[q] - done : piece;
            procs_isend(from + done, (int)len, MPI_BYTE, q, 78, comm, &req[k++]);
        }
        if (q == me && out[q]) {
            size_t at = 0;
            for (int p = 0; p < me; p++)
                at += in[p];
            __builtin_memcpy(all + at, from, out[q]);
        }
        from += out[q];
    }
    if (k)
        procs_waitall((int)k, req);
    free(out);
    free(in);
    free(req);
    *recv = all;
    return MT_OK;
}

void comm_mpi_init(mt_comm_t *c, MPI_Comm *comm)
{
    procs_comm_rank(*comm, &c->rank);
    procs_comm_size(*comm, &c->size);
    c->ctx = comm;
    c->gatherv = m_gatherv;
    c->bcast = m_bcast;
    c->allreduce_max = m_allreduce_max;
    c->alltoallv = m_alltoallv;
}

int comm_mpi_agree(MPI_Comm comm, int status)
{
    int worst = status;
    procs_allreduce(&status, &worst, 1, MPI_INT, MPI_MAX, comm);
    return worst;
}

int comm_mpi_bcast_bytes(MPI_Comm comm, bool ok, void **buf, size_t *len)
{
    int me;
    procs_comm_rank(comm, &me);
    uint64_t n = *len;
    procs_bcast(&n, 1, MPI_UINT64_T, 0, comm);
    char *p = me == 0 ? *buf : n < SIZE_MAX ? malloc((size_t)n + 1) : NULL;
    if (comm_mpi_agree(comm, !ok || (me != 0 && p == NULL))) {
        if (me != 0) {
            free(p);
            *buf = NULL;
        }
        return 1;
    }
    m_bcast(&comm, p, (size_t)n, 0);
    if (me != 0) {
        p[n] = '\0';
        *buf = p;
        *len = (size_t)n;
    }
    return 0;
}

int comm_mpi_first_failed(MPI_Comm comm, bool failed)
{
    int me, n;
    procs_comm_rank(comm, &me);
    procs_comm_size(comm, &n);
    int mine = failed ? me : n, first = mine;
    procs_allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
    return first < n ? first : -1;
}
