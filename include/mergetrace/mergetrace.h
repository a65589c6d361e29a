/* Umbrella header: the whole public API of the mergetrace core library. */
#ifndef MERGETRACE_MERGETRACE_H
#define MERGETRACE_MERGETRACE_H

#include "mergetrace/status.h"
#include "mergetrace/strtab.h"
#include "mergetrace/trace.h"
#include "mergetrace/loader.h"
#include "mergetrace/classify.h"
#include "mergetrace/link.h"
#include "mergetrace/rank.h"
#include "mergetrace/summary.h"
#include "mergetrace/collectives.h"
#include "mergetrace/comm.h"
#include "mergetrace/merge.h"
#include "mergetrace/report.h"
#include "mergetrace/analysis.h"
#include "mergetrace/crossrank.h"
#include "mergetrace/report_html.h"
#include "mergetrace/nccl_input.h"
#include "mergetrace/nccl_inspector.h"

#define MERGETRACE_VERSION "0.1.0"

#endif
