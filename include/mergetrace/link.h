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

/* mt_link_stats_t is defined in trace.h (the trace keeps the last one). */

/* Link t in place: sets aux (launch event) on GPU activities and coll on
 * communication kernels, adding synthesised mt_coll_t records for nccl:*
 * ranges that carry no metadata. Requires classified events (the loader
 * does both). Idempotent. The stats are also kept in t->link (t->linked
 * set). stats may be NULL. Returns MT_OK or MT_ERR_NOMEM. */
mt_status_t mt_trace_link(mt_trace_t *t, mt_link_stats_t *stats);

#ifdef __cplusplus
}
#endif
#endif /* MERGETRACE_LINK_H */
