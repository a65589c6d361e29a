/* Classification of GPU activities (compute / communication / memory / sync)
 * and decoding of NCCL/RCCL kernel names. */
#ifndef MERGETRACE_CLASSIFY_H
#define MERGETRACE_CLASSIFY_H

#include <stddef.h>

#include "mergetrace/status.h"
#include "mergetrace/trace.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Collective kind, from a kernel name or a "Collective name". */
typedef enum mt_coll_kind {
    MT_COLLK_UNKNOWN = 0,
    MT_COLLK_ALLREDUCE,
    MT_COLLK_ALLGATHER,
    MT_COLLK_REDUCESCATTER,
    MT_COLLK_BROADCAST,
    MT_COLLK_REDUCE,
    MT_COLLK_ALLTOALL,
    MT_COLLK_SENDRECV,      /* kernel-level: all_to_all and P2P both run as SendRecv */
    MT_COLLK_SEND,
    MT_COLLK_RECV,
    MT_COLLK_BARRIER,
    MT_COLLK_GATHER,
    MT_COLLK_SCATTER,
    MT_COLLK_GENERIC,       /* ncclDevKernel_Generic / MSCCL: kind not in the name */
    MT_COLLK_WAIT,          /* record_param_comms "wait": no kernel */
    MT_COLLK_COUNT_
} mt_coll_kind_t;

/* What an NCCL/RCCL kernel name says. Strings are borrowed slices of the
 * name passed in (not NUL-terminated): valid as long as that name is. The
 * algorithm and protocol are hints only (NCCL may run another). */
typedef struct mt_nccl_name {
    int generation;          /* 1: ncclKernel_* (<= 2.18), 2: ncclDevKernel_* (>= 2.19), 3: mscclKernel_* */
    mt_coll_kind_t kind;
    const char *algo; size_t algo_len;   /* RING, TREE, NVLS, ... */
    const char *proto; size_t proto_len; /* LL, LL128, SIMPLE */
    const char *redop; size_t redop_len; /* Sum, Prod, MinMax, ... */
    const char *dtype; size_t dtype_len; /* float, f32, bf16, int8_t, ... */
} mt_nccl_name_t;

/* Decode an NCCL/RCCL/MSCCL kernel name (full signature or short name).
 * Returns 1 and fills *out when the name is a collective kernel, else 0. */
int mt_nccl_decode(const char *name, size_t len, mt_nccl_name_t *out);

/* Collective kind of a PyTorch "Collective name" ("allreduce",
 * "_allgather_base", "all_to_all", "send", ...) or of an nccl:* annotation
 * suffix ("all_reduce", "_all_gather_base"). */
mt_coll_kind_t mt_coll_kind_from_name(const char *s, size_t len);

/* Short stable text of a kind ("allreduce", "sendrecv", ...). */
const char *mt_coll_kind_str(mt_coll_kind_t k);

/* Set ev->cls for every event of t (kernels by name and metadata, memcpy,
 * memset, sync, GPU annotations). Idempotent. Returns MT_OK or
 * MT_ERR_NOMEM. Run by mt_trace_load unless opts.no_classify. */
mt_status_t mt_trace_classify(mt_trace_t *t);

#ifdef __cplusplus
}
#endif
#endif /* MERGETRACE_CLASSIFY_H */
