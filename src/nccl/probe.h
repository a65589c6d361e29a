/* Format recognition from a file's first bytes and other helpers the NCCL
 * readers share: internal to src/nccl/ and the unit tests. */
#ifndef MT_NCCL_PROBE_H
#define MT_NCCL_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Whether buf[0..len) (the start of a file, uncompressed) is the plugin's
 * format: its first line is a "process" object with "format" set to
 * "mergetrace-nccl". A first line cut by len counts when what is there
 * already says so. Decides by content, never by the file name. */
bool mt_nccl_sniff(const char *buf, size_t len);

/* Whether buf[0..len) (the start of a file) is such a trace: a '[' and a
 * first event whose "cat" is one of the plugin's categories and whose
 * "ph" is "b", written as the plugin writes them. */
bool mt_nccl_example_sniff(const char *buf, size_t len);

/* Whether buf[0..len) (the start of a file) is an Inspector log: its first
 * line is an object whose first key is "header" and that holds
 * "coll_perf" or "metadata" (what is there, when the line is cut). */
bool mt_insp_sniff(const char *buf, size_t len);

/* Whether the Inspector id (comm, digits) names the communicator whose
 * full hash is `hash` (as the NCCL plugin writes it): the id is the
 * leading digits of the hash's unpadded hex. */
bool mt_insp_comm_is(uint64_t comm, uint8_t digits, uint64_t hash);

#endif
