/* The loader's event builder (internal to src/trace/): one element of
 * "traceEvents" -> the trace's tables, over the JSON scanner. */
#ifndef MT_TRACE_LOADER_EVENT_H
#define MT_TRACE_LOADER_EVENT_H

#include "trace/json_scan.h"

/* One element of traceEvents at p (its first byte) into ps->t: the event,
 * its collective, metadata, memory and wait records, the counters; with a
 * part_rank only the rank's events are kept (ps->part_done once they are
 * over). Returns MT_OK (*out after the element), an error, or NEED_MORE:
 * the driver then puts the event tables back as they were (loader.c's
 * mark) and parses the unit again from p after a refill. */
int mt_loader_parse_event(parser_t *ps, const char *p, const char **out);

#endif
