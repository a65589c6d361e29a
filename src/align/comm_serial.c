/* The one-process mt_comm_t: what tests and single-process runs use. */
#include <stdlib.h>
#include <string.h>

#include "mergetrace/comm.h"

static mt_status_t s_gatherv(void *ctx, const void *send, size_t len, void **recv, size_t *recv_len, int root)
{
    (void)ctx;
    (void)root;
    *recv = malloc(len ? len : 1);
    if (!*recv)
        return MT_ERR_NOMEM;
    if (len)
        memcpy(*recv, send, len);
    *recv_len = len;
    return MT_OK;
}

static mt_status_t s_bcast(void *ctx, void *buf, size_t len, int root)
{
    (void)ctx;
    (void)buf;
    (void)len;
    (void)root;
    return MT_OK;
}

static mt_status_t s_allreduce_max(void *ctx, int64_t *v, size_t n)
{
    (void)ctx;
    (void)v;
    (void)n;
    return MT_OK;
}

static mt_status_t s_alltoallv(void *ctx, const void *send, const size_t *send_lens, void **recv, size_t *recv_lens)
{
    return s_gatherv(ctx, send, send_lens[0], recv, &recv_lens[0], 0);
}

const mt_comm_t *mt_comm_serial(void)
{
    static const mt_comm_t serial = {
        .ctx = NULL, .rank = 0, .size = 1, .gatherv = s_gatherv, .bcast = s_bcast, .allreduce_max = s_allreduce_max,
        .alltoallv = s_alltoallv,
    };
    return &serial;
}
