/* Linking GPU activities to the CPU side: kernel -> launching runtime/driver
 * call (correlation), and each communication kernel -> its collective
 * (metadata on the kernel, on record_param_comms via External id, or by time
 * containment of the launch in an nccl:* / record_param_comms range). */
#ifndef MERGETRACE_LINK_H
#define MERGETRACE_LINK_H

#include <stdint.h>

#include "mergetrace/status.h"
#include "mergetrace/trace.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What linking achieved, for the report and for tests. */
typedef struct mt_link_stats {
    uint64_t gpu_activities;   /* kernels + memcpy + memset */
    uint64_t launched;         /* of those, with a launch event found by correlation */
    uint64_t comm_kernels;
    uint64_t comm_with_coll;   /* communication kernels that got a collective */
    uint64_t by_own_meta;      /* ... from metadata on the kernel itself */
    uint64_t by_ext_id;        /* ... from record_param_comms via External id */
    uint64_t by_cpu_range;     /* ... by containment of the launch in an nccl:* / record_param_comms range */
    uint64_t by_gpu_range;     /* ... by containment in a gpu_user_annotation nccl:* on the stream */
} mt_link_stats_t;

/* Link t in place: sets aux (launch event) on GPU activities and coll on
 * communication kernels, adding synthesised mt_coll_t records for nccl:*
 * ranges that carry no metadata. Requires mt_trace_classify() first.
 * Idempotent. stats may be NULL. Returns MT_OK or MT_ERR_NOMEM. */
mt_status_t mt_trace_link(mt_trace_t *t, mt_link_stats_t *stats);

#ifdef __cplusplus
}
#endif
#endif /* MERGETRACE_LINK_H */
