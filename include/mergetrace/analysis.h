/* The per-rank analyses: what one trace says about its own GPU, on its own
 * clock (no alignment needed), with definitions comparable to Holistic
 * Trace Analysis (HTA). Run once per rank by the process that loaded the
 * trace; the result (mt_rank_analysis_t) is compact, self-contained plain
 * data (no pointers into the trace) that packs to bytes so the program can
 * gather every rank's result on process 0 and write report.json.
 *
 * Definitions (all times integer ns on the rank's own clock; an interval is
 * [start, start + dur), so zero-length activities never count as busy):
 *
 *  GPU activity   an X event of class MT_CLASS_COMPUTE, MT_CLASS_COMM,
 *                 MT_CLASS_MEMCPY or MT_CLASS_MEMSET (kernels, memcpy,
 *                 memset). cuda_sync and gpu_user_annotation events are
 *                 never GPU activity and never busy.
 *  launch call    the cuda_runtime / cuda_driver event a GPU activity is
 *                 linked to by correlation (mt_event_t.aux, src/link.c).
 *  several GPUs   when a trace holds activities of more than one device
 *                 (pid), the busy-time measures take the union across all
 *                 of them: a rank is "busy" when any of its GPUs is.
 *
 *  temporal       span = last activity end - first activity start;
 *                 compute = |U(compute kernels)|;
 *                 comm = |U(comm kernels) \ U(compute)| (comm not hidden
 *                 behind compute); memory = |U(memcpy, memset) \ (U(compute)
 *                 u U(comm))|; idle = span - |U(all activities)|, so that
 *                 compute + comm + memory + idle = span.
 *  overlap        comm_total = |U(comm)|; overlapped = |U(comm) n U(compute)|;
 *                 overlap_pct = overlapped / comm_total * 100.
 *  idle (streams) HTA's idle-time categories per (device, stream): the
 *                 stream's activities sorted by start; a gap is the time from
 *                 the latest end so far to the next start, counted only when
 *                 positive. A gap is host wait when the next activity's
 *                 launch call started strictly after that latest end (the
 *                 GPU waited for the CPU to launch); else kernel wait when it
 *                 is shorter than kernel_wait_ns; else other. Unlinked
 *                 activities are never host wait. The rank's numbers are the
 *                 sums over its streams; time before a stream's first and
 *                 after its last activity is not a gap of that stream (so the
 *                 sum is not the temporal idle time, which is over the union).
 *  projection     the CPU ranges are user_annotation X events (and cpu_op X
 *                 events with project_ops). An activity belongs to a range
 *                 when its launch call started inside the range, both ends
 *                 inclusive, on any thread of the range's process (same
 *                 pid); it counts even when it runs after the range ended.
 *                 Any thread, because PyTorch launches the backward pass's
 *                 kernels from the autograd engine's thread while the main
 *                 thread sits in "## backward ##" (or whatever annotation
 *                 encloses loss.backward()), and DDP's all-reduces from
 *                 there too: a range's GPU work is what the process launched
 *                 while it was open. gpu_same_thread counts only launches
 *                 on the range's own (pid, tid), the rule of earlier
 *                 versions and of HTA. Ranges are grouped by name
 *                 ("ProfilerStep#N" -> "ProfilerStep#*"). Per name: count of
 *                 ranges; cpu = sum of the ranges' durations (nested ranges of
 *                 one name are each counted); gpu = |union of the intervals of
 *                 every activity of every range of the name| (an activity
 *                 counts once however many of the name's ranges hold it);
 *                 gpu_same_thread the same over same-thread launches;
 *                 gpu_span = sum over the ranges that hold at least one
 *                 activity of (last end - first start of its activities);
 *                 gpu_pct = gpu / busy * 100 where busy = |U(all
 *                 activities)| of the rank. Sorted by gpu descending, then
 *                 name. Cost O(n log n + c log c), c = sum over activities of
 *                 the number of distinct names enclosing their launch.
 *  kernels        per class (compute, comm, memory = memcpy + memset) and
 *                 name: count, total, mean (total / count rounded half up),
 *                 p50, p99, max of the durations; the top `top_kernels` per
 *                 class by total (ties: name bytes ascending). Names are
 *                 truncated to MT_AN_NAME_MAX bytes without splitting a UTF-8
 *                 sequence (activities are grouped on the full name).
 *  launch         kernels_launched = GPU activities (kernels, memcpy, memset)
 *                 with a launch call; delay = activity start - launch call
 *                 start over those (may be negative on a skewed trace).
 *                 launch_bound: the idle gaps are the complement of U(all
 *                 activities) within the span (their sum is the temporal
 *                 idle time); a gap is ended by the activity that starts at
 *                 its end (the first linked, non-empty one in (start, end,
 *                 event index) order when several start there; none linked:
 *                 the gap adds nothing). The launching thread of that
 *                 activity (the (pid, tid) of its launch call) is "launch
 *                 busy" while inside a Launch call (a cuda_runtime /
 *                 cuda_driver X event whose name contains "Launch":
 *                 cudaLaunchKernel, cuLaunchKernelEx, cudaLaunchKernelExC,
 *                 hipExtLaunchKernel, ...; whether or not the trace holds
 *                 what it launched; cudaMemcpyAsync and the like are not
 *                 Launch calls) or in a gap between consecutive Launch calls
 *                 of that thread (next start - latest end so far) shorter
 *                 than kernel_wait_ns. launch_bound = sum over gaps of
 *                 |gap n launch busy of its thread|; launch_bound_pct =
 *                 launch_bound / idle * 100: the share of GPU idle time
 *                 during which the CPU was busy launching, i.e. the GPU was
 *                 starved by launch overhead rather than by the program.
 *  steps          one entry per ProfilerStep#N user_annotation range of the
 *                 trace (sorted by start; a step number seen twice keeps
 *                 both). An activity belongs to the step whose range holds
 *                 its launch call's start (unlinked: its own start); end =
 *                 max(range end, last end of its activities). Over the
 *                 window [range start, end): compute = |U(compute) n W|,
 *                 comm = |(U(compute) u U(comm)) n W| - compute, memory =
 *                 |U(all) n W| - |(U(compute) u U(comm)) n W|, idle = |W| -
 *                 |U(all) n W|: the temporal breakdown of the step window.
 *  graph          what the cross-rank dependency graph needs of the rank
 *                 (include/mergetrace/critpath.h): every GPU activity in
 *                 (start, end, event) order with its stream (numbered from
 *                 0 in order of first appearance), class, launch call
 *                 (start and end, -1 when not linked) and name (cut to
 *                 MT_AN_NAME_MAX bytes); and every host synchronisation
 *                 call (a cuda_runtime / cuda_driver X event whose name
 *                 contains "Synchronize") by start. Each activity also names
 *                 its annotation: the innermost user_annotation range other
 *                 than ProfilerStep#N and nccl:* holding its launch call's
 *                 start (both ends inclusive) on any thread of the launching
 *                 process (the projection's rule, so backward kernels the
 *                 autograd thread launches fall in "## backward ##");
 *                 innermost = latest start, then shortest; none when not
 *                 linked or no range holds it. ProfilerStep ranges are left
 *                 out because the steps are already the unit of the graph,
 *                 nccl:* ranges because they are the profiler's wrapper of
 *                 one collective, which its kernel's name already says (the
 *                 phase that launched it says more); the innermost rather
 *                 than the outermost because it is the most specific phase
 *                 the program named. Names are kept once per rank in a table
 *                 (annots) the activities index; cost O((n + r) log r) for n
 *                 activities and r ranges.
 *  waits          the stream waits the trace names (mt_trace_t.swaits:
 *                 cuda_sync "Stream Wait Event", or "Wait on CUDA event",
 *                 with enable_cuda_sync_events) as gdeps: the consumer is
 *                 the first activity on the waiting stream (the event's
 *                 device and tid) launched after the cudaStreamWaitEvent
 *                 call (correlation above the event's own), the producer
 *                 the last activity on wait_on_stream launched before the
 *                 cudaEventRecord call (correlation below
 *                 wait_on_cuda_event_record_corr_id): CUDA numbers a
 *                 process's runtime calls in call order, so correlation
 *                 order is launch order and the event record's own call
 *                 need not be in the trace. A record without those ids,
 *                 with no activity on either side, or whose producer ends
 *                 more than 1 us after the consumer starts (another
 *                 launch's ids) is unresolved: the consumer's wait stays
 *                 inferred. A consumer named by more than two records
 *                 keeps the two latest-ending producers (the latest binds).
 *                 Nothing to do (and no cost) without records. Cost O(n
 *                 log n) in the activities when there are records.
 *  memory         from the [memory] instant events (mt_trace_t.mems), per
 *                 device (Device Type, Device Id). Each event is a state:
 *                 allocated = "Total Allocated", reserved = "Total
 *                 Reserved" after it. Events are taken in (ts, file order):
 *                 Kineto writes them thread by thread, so file order is not
 *                 time order across threads. An event without "Total
 *                 Allocated" on a device where others have it, or with a
 *                 negative total, is left out (counted: MT_AN_MEM_MISSING,
 *                 MT_AN_MEM_NEGATIVE). A device where no event has the
 *                 totals (2021 traces) gets allocated reconstructed as the
 *                 running sum of "Bytes" from 0 at its first event, reserved
 *                 unknown (-1), and the flag MT_AN_MEM_RECONSTRUCTED.
 *                 peak allocated: the largest allocated, at its first
 *                 event in time order; step: the ProfilerStep#N range that
 *                 holds its ts (start <= ts < end; the latest-starting
 *                 when nested; -1 none); op: the innermost cpu_op X event
 *                 on the event's (pid, tid) holding ts (start <= ts <=
 *                 end; innermost = latest start, then shortest);
 *                 annotation: the innermost user_annotation the same way
 *                 on the event's thread, else on any thread of its pid
 *                 (the autograd thread allocates under the main thread's
 *                 annotations); the allocation: that event's Bytes and
 *                 Addr. peak reserved likewise over reserved.
 *                 per step (ProfilerStep#N ranges sorted by start): allocs
 *                 / frees = events with Bytes > 0 / < 0 and ts in [start,
 *                 end); alloc_end = allocated after the last event with ts
 *                 <= end (-1 when none yet); peak = the largest allocated
 *                 in [start, end) (-1 none). trend: over the steps after
 *                 the first (warm-up) with alloc_end >= 0, the least-
 *                 squares slope of alloc_end against the step's position,
 *                 bytes per step (rounded to nearest); grows_every_step
 *                 when there are 2 or more such steps and each alloc_end
 *                 exceeds the one before (including the warm-up step's).
 *                 series: the states in time order, at most a budget per
 *                 device (MT_AN_MEM_POINTS and below); beyond that,
 *                 equal-count buckets of events
 *                 each keep the states of largest and smallest allocated
 *                 and largest reserved (so the peaks stay), plus the last.
 *                 Issues: MT_AN_MEM_ORDER counts events whose ts is before
 *                 the previous memory event of the same (pid, tid) in file
 *                 order; MT_AN_MEM_NO_GPU the events of a non-CPU device
 *                 whose id is no pid of a GPU activity in the trace.
 *  percentiles    nearest rank on the sorted values: p-th = v[ceil(p * n /
 *                 100) - 1] (the smallest value with at least p % of the
 *                 values at or below it); max = v[n - 1]; 0 when n = 0.
 *  percentages    in report.json, 0 when the denominator is 0. */
#ifndef MERGETRACE_ANALYSIS_H
#define MERGETRACE_ANALYSIS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mergetrace/collectives.h"
#include "mergetrace/buf.h"
#include "mergetrace/chunks.h"
#include "mergetrace/status.h"
#include "mergetrace/trace.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Kernel names in mt_rank_analysis_t are cut to at most this many bytes. */
#define MT_AN_NAME_MAX 200

typedef struct mt_analysis_opts {
    int64_t kernel_wait_ns; /* --kernel-wait-us: gaps shorter than this are kernel wait; default 30 us */
    bool project_ops;       /* --project-ops: also project cpu_op ranges, not only user_annotation */
    int top_kernels;        /* kernels kept per class, default 10; <= 0 keeps none */
    const mt_pp_markers_t *markers; /* chunk and stage markers for the pipeline pass (borrowed); NULL: none */
    const mt_cinst_t *rows; /* collective rows of the rank (mt_cinst_extract; borrowed, may hold other */
    size_t n_rows;          /* ranks' rows too): tell all_to_all from point-to-point kernels; NULL: names only */
} mt_analysis_opts_t;

/* Defaults: kernel_wait_ns 30000, project_ops false, top_kernels 10, no
 * markers, no rows. */
void mt_analysis_opts_init(mt_analysis_opts_t *o);

/* Kernel classes of mt_an_kernel_t.cls. */
typedef enum mt_an_class {
    MT_AN_COMPUTE = 0,
    MT_AN_COMM = 1,
    MT_AN_MEMORY = 2, /* memcpy + memset */
    MT_AN_CLASS_COUNT_
} mt_an_class_t;

/* Text of a class: "compute", "comm", "memory". Never NULL. */
const char *mt_an_class_str(mt_an_class_t c);

/* A string of mt_rank_analysis_t.strings: bytes [off, off + len), followed
 * by a NUL that is not part of it (a name may itself hold NUL bytes). */
typedef struct mt_an_str {
    uint32_t off, len;
} mt_an_str_t;

/* Idle time of one GPU stream (see "idle (streams)" above). */
typedef struct mt_an_stream {
    int64_t device;          /* pid of the activities (the device index) */
    int64_t stream;          /* tid (stream id); meaningless when name.len > 0 */
    int64_t host_wait_ns, kernel_wait_ns, other_ns;
    mt_an_str_t name;        /* the tid text when the trace gave the stream as a string, else {0, 0} */
    uint64_t work;           /* its activities that are not communication (compute, memcpy, memset) */
} mt_an_stream_t;

/* The GPU projection of one CPU range name (see "projection" above). */
typedef struct mt_an_proj {
    mt_an_str_t name;        /* "ProfilerStep#*" for every ProfilerStep#N */
    uint64_t count;          /* ranges */
    int64_t cpu_ns;          /* sum of the ranges' durations */
    int64_t gpu_ns;          /* measure of the union of their activities (launched on any thread) */
    int64_t gpu_span_ns;     /* sum over ranges of (last end - first start) */
    int64_t gpu_same_thread_ns; /* gpu_ns over the launches on the ranges' own threads only */
} mt_an_proj_t;

/* One kernel name of the top list of a class (see "kernels" above). */
typedef struct mt_an_kernel {
    uint32_t cls;            /* mt_an_class_t */
    uint32_t pad_;           /* 0 */
    mt_an_str_t name;        /* truncated to MT_AN_NAME_MAX bytes */
    uint64_t count;
    int64_t total_ns, mean_ns, p50_ns, p99_ns, max_ns;
} mt_an_kernel_t;

/* One ProfilerStep of a rank (see "steps" above); times on its own clock. */
typedef struct mt_an_step {
    int64_t step;            /* N of ProfilerStep#N */
    int64_t cpu_start_ns, cpu_end_ns; /* the range */
    int64_t end_ns;          /* max(cpu_end_ns, last end of the step's activities) */
    int64_t compute_ns, comm_ns, memory_ns, idle_ns; /* over [cpu_start_ns, end_ns) */
} mt_an_step_t;

/* One GPU activity of the graph (see "graph" above). */
typedef struct mt_an_gact {
    int64_t start_ns, end_ns;
    int64_t launch_ns, launch_end_ns; /* the launch call; both -1 when not linked */
    mt_an_str_t name;        /* the activity's name, cut to MT_AN_NAME_MAX bytes */
    uint32_t stream;         /* 0.. in order of first appearance of (device, stream) */
    uint32_t cls;            /* mt_an_class_t */
    uint32_t annot;          /* its annotation: 0 none, else mt_rank_analysis_t.annots[annot - 1] */
    uint32_t pad_;           /* 0 */
} mt_an_gact_t;

/* One host synchronisation call (see "graph" above). */
typedef struct mt_an_sync {
    int64_t start_ns, end_ns;
} mt_an_sync_t;

_Static_assert(sizeof(mt_an_step_t) == 64, "packed as bytes: no padding");
_Static_assert(sizeof(mt_an_gact_t) == 56, "packed as bytes: no padding");
_Static_assert(sizeof(mt_an_sync_t) == 16, "packed as bytes: no padding");
/* Memory: at most this many series points per device; fewer in a small
 * trace (2 % of its JSON bytes at MT_AN_MEM_POINT_BYTES per point, for
 * every device together, at least 16 per device): the merged trace writes
 * each point as a counter event of about that size. */
#define MT_AN_MEM_POINTS 512
#define MT_AN_MEM_POINT_BYTES 130

/* mt_an_mem_dev_t.flags */
enum {
    MT_AN_MEM_RECONSTRUCTED = 1u << 0, /* no totals in the trace: allocated = running sum of Bytes */
    MT_AN_MEM_NO_RESERVED = 1u << 1,   /* no "Total Reserved": reserved values are -1 */
};

/* Memory of one device of a rank (see "memory" above). Times in ns on the
 * rank's own clock. */
typedef struct mt_an_mem_dev {
    int64_t device;          /* "Device Id" (-1: the CPU) */
    int32_t device_type;     /* "Device Type": 0 CPU, 1 CUDA/ROCm */
    uint32_t flags;          /* MT_AN_MEM_* */
    uint64_t events;         /* memory events used */
    int64_t peak_alloc, peak_alloc_ns, peak_alloc_step;
    int64_t peak_alloc_reserved; /* reserved at that event (-1 unknown) */
    int64_t peak_alloc_bytes;    /* the event's Bytes: the allocation that made the peak */
    uint64_t peak_alloc_addr;
    int64_t peak_reserved, peak_reserved_ns, peak_reserved_step; /* -1 when unknown */
    int64_t end_alloc, end_reserved; /* after the last event */
    mt_an_str_t peak_op, peak_annotation; /* {0, 0}: none active */
    int64_t trend_bytes_per_step;
    uint32_t trend_steps;    /* steps the trend is over (0 or 1: no trend) */
    uint32_t grows_every_step;
    uint32_t first_step, n_steps;   /* a->mem_steps[first_step ..] */
    uint32_t first_point, n_points; /* a->mem_points[first_point ..] */
} mt_an_mem_dev_t;

/* One ProfilerStep of one device. */
typedef struct mt_an_mem_step {
    int64_t step, start_ns, end_ns;
    int64_t alloc_end, reserved_end; /* -1: no memory event yet */
    int64_t peak_alloc;              /* -1: no event inside the step */
    uint64_t allocs, frees;
    int64_t bytes_alloc, bytes_freed; /* sums of Bytes of those (frees as a positive number) */
} mt_an_mem_step_t;

/* One point of a device's downsampled series. */
typedef struct mt_an_mem_point {
    int64_t ns, alloc, reserved; /* reserved -1 unknown */
} mt_an_mem_point_t;

/* Bad or doubtful memory events of a rank: how many, and the first. */
typedef enum mt_an_mem_issue_kind {
    MT_AN_MEM_NEGATIVE = 0, /* a negative "Total Allocated" or "Total Reserved": left out */
    MT_AN_MEM_MISSING,      /* no "Total Allocated" where the device's other events have it: left out */
    MT_AN_MEM_ORDER,        /* ts before the previous memory event of the same thread */
    MT_AN_MEM_NO_GPU,       /* a GPU device id that no GPU activity of the trace has */
    MT_AN_MEM_ISSUE_COUNT_
} mt_an_mem_issue_kind_t;

typedef struct mt_an_mem_issue {
    uint64_t count;
    int64_t event;           /* 0-based index in the file's traceEvents of the first (-1 none) */
    int64_t ts_ns;           /* its ts (rank's own clock) */
    int64_t device;          /* its Device Id */
} mt_an_mem_issue_t;

_Static_assert(sizeof(mt_an_str_t) == 8, "packed as bytes: no padding");
_Static_assert(sizeof(mt_an_mem_dev_t) == 160, "packed as bytes: no padding");
_Static_assert(sizeof(mt_an_mem_step_t) == 80, "packed as bytes: no padding");
_Static_assert(sizeof(mt_an_mem_point_t) == 24, "packed as bytes: no padding");
_Static_assert(sizeof(mt_an_stream_t) == 56, "packed as bytes: no padding");
_Static_assert(sizeof(mt_an_proj_t) == 48, "packed as bytes: no padding");
_Static_assert(sizeof(mt_an_kernel_t) == 64, "packed as bytes: no padding");

/* Everything the per-rank passes found. Plain data: the struct owns its
 * arrays and the string pool (free with mt_rank_analysis_free); nothing
 * points into the trace. Times in ns on the rank's own clock. */
typedef struct mt_rank_analysis {
    int32_t rank;             /* global rank, as passed to mt_analyze_rank */
    int32_t opt_project_ops;  /* the options used: 1 when cpu_op ranges were projected */
    int64_t opt_kernel_wait_ns; /* the options used: the kernel-wait threshold */
    /* temporal + overlap */
    uint64_t gpu_activities;  /* kernels + memcpy + memset */
    int64_t gpu_first_ns, gpu_last_ns; /* first start, last end (0, 0 without activity) */
    int64_t span_ns;          /* gpu_last_ns - gpu_first_ns */
    int64_t busy_ns;          /* |U(all activities)| */
    int64_t compute_ns;       /* |U(compute)| */
    int64_t comm_ns;          /* |U(comm) \ U(compute)| */
    int64_t comm_total_ns;    /* |U(comm)| */
    int64_t overlap_ns;       /* |U(comm) n U(compute)| */
    int64_t memory_ns;        /* |U(memcpy, memset) \ (U(compute) u U(comm))| */
    int64_t idle_ns;          /* span_ns - busy_ns */
    /* idle categories: sums over streams[] */
    int64_t host_wait_ns, kernel_wait_ns, other_ns;
    mt_an_stream_t *streams;  /* sorted by (device, stream) */
    size_t n_streams;
    /* projection, sorted by gpu_ns descending then name */
    mt_an_proj_t *proj;
    size_t n_proj;
    /* kernels: the top lists of the classes, class by class, each by total descending */
    mt_an_kernel_t *kernels;
    size_t n_kernels;
    /* launch */
    uint64_t launched;        /* GPU activities with a launch call */
    int64_t delay_p50_ns, delay_p90_ns, delay_p99_ns, delay_max_ns;
    int64_t launch_bound_ns;  /* part of idle_ns with the launching thread busy launching */
    /* pipeline markers: every marker range with its work, by (marker, start) */
    mt_pp_chunk_t *chunks;
    size_t n_chunks;
    /* steps: the ProfilerStep ranges by start */
    mt_an_step_t *steps;
    size_t n_steps;
    /* graph: GPU activities by (start, end, event), host syncs by start */
    mt_an_gact_t *gacts;
    size_t n_gacts;
    mt_an_sync_t *syncs;
    size_t n_syncs;
    /* the graph's annotation names, each once (mt_an_gact_t.annot) */
    mt_an_str_t *annots;
    size_t n_annots;
    /* memory, per device by (device type, device id) */
    mt_an_mem_dev_t *mem_devs;
    size_t n_mem_devs;
    mt_an_mem_step_t *mem_steps;
    size_t n_mem_steps;
    mt_an_mem_point_t *mem_points;
    size_t n_mem_points;
    mt_an_mem_issue_t mem_issues[MT_AN_MEM_ISSUE_COUNT_];
    /* explicit dependencies of the graph: per activity k, gdeps[2k] and
     * gdeps[2k + 1] are indices of activities of the same rank it waits
     * for (-1 none), or gdeps[2k] is MT_AN_GDEP_INFER: no event names its
     * waits, they are inferred from the times (critpath.h "graph"), as for
     * every activity when gdeps is NULL. Set by the operation-level
     * timelines (cross/tljob.c: every activity's, never packed, with gstep)
     * and by the pass "waits" below for a Kineto trace whose cuda_sync
     * records name stream waits (packed: n_gacts pairs, or none). gstep[k]
     * is activity k's step's index in steps (-1 none; timelines only). */
    int32_t *gdeps;
    int32_t *gstep;
    /* waits: the trace's cuda_sync stream-wait records (mt_trace_t.swaits,
     * enable_cuda_sync_events) turned into gdeps edges (named) or left to
     * the inference (unresolved: no event record correlation or stream,
     * no activity launched on either side, a producer ending after the
     * consumer starts) */
    uint64_t swaits_named, swaits_unresolved;
    /* the string pool every mt_an_str_t indexes */
    char *strings;
    size_t strings_len;
    size_t strings_cap;       /* bytes allocated for strings (not packed) */
} mt_rank_analysis_t;

/* mt_rank_analysis_t.gdeps[2k]: activity k's waits are not named */
#define MT_AN_GDEP_INFER (-2)

/* Run every per-rank pass over t (global rank `rank`) and return the result
 * in *out (owned by the caller: mt_rank_analysis_free). t must be classified
 * and linked (the loader does both unless told not to); it is only read.
 * o may be NULL for defaults. Returns MT_OK, MT_ERR_NOMEM, or MT_ERR_LIMIT
 * when the string pool would pass 4 GiB; *out is NULL on error. Not
 * collective; cost O(n log n) in the events of t. */
mt_status_t mt_analyze_rank(const mt_trace_t *t, int32_t rank, const mt_analysis_opts_t *o,
                            mt_rank_analysis_t **out);

/* Free a result and everything it owns. NULL does nothing. */
void mt_rank_analysis_free(mt_rank_analysis_t *a);

/* The rank's host wait as every output shows it (issue 39): the longest
 * host wait (mt_an_stream_t.host_wait_ns) among the streams that do work
 * (work > 0), all streams when none does. A stream that only runs
 * collectives idles between them by design: taking it made every
 * GPU-bound data-parallel job read 40 % "host wait". A share of the span
 * can never pass 100 %, unlike the sum over streams (host_wait_ns). */
int64_t mt_an_host_wait(const mt_rank_analysis_t *a);

/* Free a's GPU activities (gacts, gdeps, gstep; n_gacts 0): what only the
 * critical path's graph reads, done with once it is built (critpath.h
 * mt_cp_request_t.built). The rest of a, the syncs, annotation names and
 * strings the graph borrows included, stays. NULL does nothing. */
void mt_rank_analysis_drop_gacts(mt_rank_analysis_t *a);

/* Self-contained bytes of a, for gathering between the processes of one
 * run (same binary, same machine type: native byte order, no versioning
 * across builds beyond a magic number and a format number). *bytes is
 * malloc'd and owned by the caller (free()); *len gets its size. Returns
 * MT_OK or MT_ERR_NOMEM (then *bytes is NULL). */
mt_status_t mt_rank_analysis_pack(const mt_rank_analysis_t *a, void **bytes, size_t *len);

/* The same bytes appended to out in place (no copy of them on the way:
 * the program packs each rank's result at its per-rank memory peak).
 * MT_OK, or MT_ERR_NOMEM with out unchanged. */
mt_status_t mt_rank_analysis_pack_append(const mt_rank_analysis_t *a, mt_buf_t *out);

/* Every packed result in b (concatenated, as mt_rank_analysis_pack_append
 * leaves them) rewritten in place without its GPU activities, as if
 * mt_rank_analysis_drop_gacts had run before the pack: for a job whose
 * critical path is not run (the program's memory budget), so that they
 * are not sent. MT_OK, or MT_ERR_FORMAT (b unchanged) for bytes that are
 * not packed results. */
mt_status_t mt_rank_analysis_packed_drop_gacts(mt_buf_t *b);

/* Read one packed result from the start of bytes[0..len) (several may be
 * concatenated, as gatherv delivers them); *consumed (may be NULL) gets the
 * bytes it used. bytes is borrowed for the call. *out is owned by the
 * caller. Returns MT_OK, MT_ERR_NOMEM, or MT_ERR_FORMAT for bytes that are
 * not a complete, consistent packed result (*out NULL then). */
mt_status_t mt_rank_analysis_unpack(const void *bytes, size_t len, mt_rank_analysis_t **out, size_t *consumed);

/* Every packed result of bytes[0..len), back to back (a process's own,
 * as it gathers them to process 0), unpacked in order into *out (an
 * array of *n, malloc'd; free each with mt_rank_analysis_free, then the
 * array). MT_OK; or MT_ERR_NOMEM / MT_ERR_FORMAT with *out NULL and *n 0
 * (nothing left to free). */
mt_status_t mt_rank_analysis_unpack_all(const void *bytes, size_t len, mt_rank_analysis_t ***out, size_t *n);


#ifdef __cplusplus
}
#endif
#endif /* MERGETRACE_ANALYSIS_H */
