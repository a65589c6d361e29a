/* Umbrella header: the whole public API of the mergetrace core library, in
 * the order of the stages (docs/ARCHITECTURE.md). A program that embeds the
 * core includes this one header. */
#ifndef MERGETRACE_MERGETRACE_H
#define MERGETRACE_MERGETRACE_H

/* base: version, status and errors, byte output, string interning */
#include "mergetrace/version.h"
#include "mergetrace/status.h"
#include "mergetrace/warnings.h"
#include "mergetrace/buf.h"
#include "mergetrace/heap.h"
#include "mergetrace/launcher.h"
#include "mergetrace/suggest.h"
#include "mergetrace/tworld.h"
#include "mergetrace/strtab.h"
/* io: reading (plain or gzip) and gzip output */
#include "mergetrace/input.h"
#include "mergetrace/gzout.h"
/* trace: the trace model and its loader */
#include "mergetrace/trace.h"
#include "mergetrace/loader.h"
#include "mergetrace/classify.h"
#include "mergetrace/link.h"
#include "mergetrace/rank.h"
#include "mergetrace/summary.h"
/* align: collective rows, matching, the clock fit, the job step */
#include "mergetrace/collectives.h"
#include "mergetrace/comm.h"
/* nccl: the NCCL readers */
#include "mergetrace/nccl_input.h"
#include "mergetrace/nccl_inspector.h"
#include "mergetrace/nccl_join.h"
#include "mergetrace/fr_hang.h"
#include "mergetrace/fr_share.h"
/* rank: per-rank analyses */
#include "mergetrace/analysis.h"
#include "mergetrace/chunks.h"
/* cross: cross-rank analyses */
#include "mergetrace/crossrank.h"
#include "mergetrace/critpath.h"
#include "mergetrace/trust.h"
#include "mergetrace/pipeline.h"
#include "mergetrace/gates.h"
#include "mergetrace/memory.h"
/* report: report.json, report.html, terminal text */
#include "mergetrace/report.h"
#include "mergetrace/report_html.h"
#include "mergetrace/report_timings.h"
#include "mergetrace/compare.h"
/* merge: the merged trace */
#include "mergetrace/merge.h"
#include "mergetrace/merged_layout.h"
#include "mergetrace/discover.h"
#include "mergetrace/outdir.h"
#include "mergetrace/ingest.h"
#include "mergetrace/job_state.h"
#include "mergetrace/tl_run.h"
#include "mergetrace/job_outputs.h"
#include "mergetrace/nsys.h"
#include "mergetrace/timeline.h"
#include "mergetrace/tljob.h"

#endif
