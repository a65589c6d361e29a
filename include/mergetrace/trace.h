/* The per-rank event model: what one Kineto trace file becomes after loading.
 * Compact fixed-size event records (64 bytes) with interned strings, a side
 * table of collective metadata, and the header facts (rank, world size,
 * process groups, devices, time base). No JSON DOM is kept. */
#ifndef MERGETRACE_TRACE_H
#define MERGETRACE_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mergetrace/status.h"
#include "mergetrace/strtab.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Event phase ("ph"). */
typedef enum mt_phase {
    MT_PH_OTHER = 0, /* any phase Kineto does not write (B, E, b, e, P, ...) */
    MT_PH_X,         /* complete (duration) event */
    MT_PH_I,         /* instant ("i" or legacy "I") */
    MT_PH_S,         /* flow start "s" */
    MT_PH_F,         /* flow finish "f" */
    MT_PH_T,         /* flow step "t" */
    MT_PH_M,         /* metadata */
    MT_PH_C,         /* counter */
    MT_PH_NONE,      /* no "ph" key at all */
    MT_PH_COUNT_
} mt_phase_t;

/* Category ("cat"), every spelling seen in real traces (FORMAT.md 5).
 * Legacy spellings keep their own value so counts stay exact; use
 * mt_cat_normal() for the modern equivalent. */
typedef enum mt_cat {
    MT_CAT_OTHER = 0,      /* a category we do not know: counted by name */
    MT_CAT_NONE,           /* no "cat" key */
    MT_CAT_CPU_OP,
    MT_CAT_USER_ANNOTATION,
    MT_CAT_GPU_USER_ANNOTATION,
    MT_CAT_CUDA_RUNTIME,
    MT_CAT_CUDA_DRIVER,
    MT_CAT_KERNEL,
    MT_CAT_GPU_MEMCPY,
    MT_CAT_GPU_MEMSET,
    MT_CAT_CUDA_SYNC,
    MT_CAT_AC2G,
    MT_CAT_FWDBWD,
    MT_CAT_PYTHON_FUNCTION,
    MT_CAT_CPU_INSTANT_EVENT,
    MT_CAT_TRACE,
    MT_CAT_OVERHEAD,
    MT_CAT_CUDA_PROFILER_RANGE,
    MT_CAT_MTIA_RUNTIME,
    MT_CAT_MTIA_CCP_EVENTS,
    MT_CAT_CRITICAL_PATH,
    MT_CAT_LEGACY_OPERATOR,      /* "Operator"  -> cpu_op */
    MT_CAT_LEGACY_RUNTIME,       /* "Runtime"   -> cuda_runtime */
    MT_CAT_LEGACY_KERNEL,        /* "Kernel"    -> kernel */
    MT_CAT_LEGACY_MEMCPY,        /* "Memcpy"    -> gpu_memcpy */
    MT_CAT_LEGACY_MEMSET,        /* "Memset"    -> gpu_memset */
    MT_CAT_LEGACY_ASYNC,         /* "async"     -> ac2g (2021) */
    MT_CAT_LEGACY_ASYNC_CPU_TO_GPU, /* "async_cpu_to_gpu" -> ac2g (2022) */
    MT_CAT_LEGACY_ASYNC_GPU,     /* "async_gpu" -> ac2g */
    MT_CAT_COUNT_
} mt_cat_t;

/* What a GPU-side event is, for busy-time accounting (set by classify). */
typedef enum mt_class {
    MT_CLASS_NONE = 0,   /* not a GPU activity (CPU events, flows, M, ...) */
    MT_CLASS_COMPUTE,    /* compute kernel */
    MT_CLASS_COMM,       /* communication kernel (NCCL/RCCL/MSCCL or with collective metadata) */
    MT_CLASS_MEMCPY,
    MT_CLASS_MEMSET,
    MT_CLASS_SYNC,       /* cuda_sync: never busy time */
    MT_CLASS_GPU_ANNOTATION, /* gpu_user_annotation: a marker, not work */
    MT_CLASS_COUNT_
} mt_class_t;

/* mt_event_t.flags */
enum {
    MT_EV_HAS_CORR = 1u << 0, /* corr holds "correlation" (or a flow id for s/f/t) */
    MT_EV_HAS_EXT = 1u << 1,  /* ext holds "External id" */
    MT_EV_PID_STR = 1u << 2,  /* pid is a string id (e.g. "Spans"), not a number */
    MT_EV_TID_STR = 1u << 3,  /* tid is a string id */
    MT_EV_COLL_OWN = 1u << 4, /* the collective metadata sat on this event itself */
    MT_EV_HAS_DUR = 1u << 5,  /* a "dur" key was present */
    MT_EV_NEG_DUR = 1u << 6,  /* "dur" was negative in the file (stored as 0) */
    MT_EV_ID_STR = 1u << 7,   /* corr is a strtab id: the flow "id" was a string */
};

/* A bound on |time| in a trace, in ns (2^62, about 146 years from 0:
 * absolute epoch times reach the year 2116): the loader refuses a "ts", a
 * "dur" or ts + dur at or beyond it, so that the difference of any two
 * times (spans, waits, offsets between clocks) fits int64. */
#define MT_TIME_LIMIT_NS (INT64_C(1) << 62)

/* One trace event. 48 bytes on purpose: a 150 MB trace holds ~600k events,
 * and the table should stay well under the JSON size (see docs/ARCHITECTURE.md;
 * 64 bytes until 2026-11-25: 16 bytes per event were a tenth of a rank's
 * peak memory, docs/PERFORMANCE.md "Peak RSS per process").
 *
 * pid, tid, correlation and External id are kept in 32 bits: read them
 * with mt_event_pid(), mt_event_tid(), mt_event_corr() and mt_event_ext(),
 * which return the full values; set them with mt_event_set_ids(). Values
 * that do not fit (pids and tids outside [-2^30, 2^31), ids from 0xC0000000
 * on, rare in real traces) are kept in the trace's side table
 * (mt_trace_t.wide) and the 32-bit field names their slot there. */
typedef struct mt_event {
    int64_t ts;      /* start, ns since the Unix epoch (or the trace's own zero when it has no absolute base) */
    int64_t dur;     /* duration in ns (0 for non-X events) */
    int32_t pid32;   /* mt_event_pid(): OS pid or GPU device index; a strtab id when MT_EV_PID_STR */
    int32_t tid32;   /* mt_event_tid(): OS tid or stream id ("stream 7" -> 7); a strtab id when MT_EV_TID_STR */
    uint32_t corr32; /* mt_event_corr(): correlation id (runtime/driver/kernel/memcpy) or flow id (s/f/t) */
    uint32_t ext32;  /* mt_event_ext(): External id */
    uint32_t name;   /* strtab id of "name" */
    uint32_t coll;   /* 1-based index into mt_trace_t.colls, 0 = none (set by loader/link) */
    uint32_t aux;    /* GPU activity: 1-based index of its launch event (link);
                      * M event: 1-based index into mt_trace_t.meta (loader) */
    uint8_t ph;      /* mt_phase_t */
    uint8_t cat;     /* mt_cat_t */
    uint8_t cls;     /* mt_class_t */
    uint8_t flags;   /* MT_EV_* */
} mt_event_t;

/* The 32-bit forms (mt_event_t): pid32 / tid32 at or above MT_EV_I32_MIN
 * are the value itself, below it INT32_MIN + k names mt_trace_t.wide[k];
 * corr32 / ext32 below MT_EV_U32_WIDE are the value itself, from it on
 * MT_EV_U32_WIDE + k names wide[k]. At most MT_EV_WIDE_MAX slots. */
#define MT_EV_I32_MIN (-(INT32_C(1) << 30))
#define MT_EV_U32_WIDE UINT32_C(0xC0000000)
#define MT_EV_WIDE_MAX ((size_t)1 << 30)

/* Which fields of an mt_coll_t are present (bit set). */
enum {
    MT_COLL_F_NAME = 1u << 0,
    MT_COLL_F_DTYPE = 1u << 1,
    MT_COLL_F_IN_NELEMS = 1u << 2,
    MT_COLL_F_OUT_NELEMS = 1u << 3,
    MT_COLL_F_GROUP_SIZE = 1u << 4,
    MT_COLL_F_PG_NAME = 1u << 5,
    MT_COLL_F_PG_DESC = 1u << 6,
    MT_COLL_F_PG_RANKS = 1u << 7,
    MT_COLL_F_PG_ID = 1u << 8,
    MT_COLL_F_SEQ = 1u << 9,
    MT_COLL_F_COMMS_ID = 1u << 10,
    MT_COLL_F_SRC_RANK = 1u << 11,
    MT_COLL_F_DST_RANK = 1u << 12,
    MT_COLL_F_RANK = 1u << 13,
    MT_COLL_F_GRANK_START = 1u << 14,
    MT_COLL_F_GRANK_STRIDE = 1u << 15,
    MT_COLL_F_SPLITS = 1u << 16,
    MT_COLL_F_INPUT_DIMS = 1u << 17,  /* in_nelems came from "Input Dims" (pre-2.2 traces) */
    MT_COLL_F_FROM_RANGE = 1u << 18,  /* record synthesised by link from an nccl:* range */
    MT_COLL_F_GLOO = 1u << 19,        /* record of a gloo:* CPU range (the gloo worker running the
                                       * collective; name, "Input Dims" and "Input type" only) */
};

/* Collective metadata of one event (record_param_comms, an NCCL kernel, or an
 * nccl:* annotation's "Input Dims"). Strings are strtab ids, 0 = absent. */
typedef struct mt_coll {
    uint64_t comms_id;    /* "Comms Id" (full uint64) */
    int64_t seq;          /* "Seq" */
    int64_t in_nelems;    /* "In msg nelems" (or product of Input Dims[0]) */
    int64_t out_nelems;   /* "Out msg nelems" */
    int64_t group_size;   /* "Group size" */
    int64_t pg_id;        /* "Process Group ID" (2024 variant) */
    int64_t src_rank, dst_rank, rank; /* "Src Rank", "Dst Rank", "Rank" */
    int64_t grank_start, grank_stride;
    uint32_t name;        /* "Collective name" (or the nccl:* suffix) */
    uint32_t dtype;       /* "dtype" (or "Input type"[0]) */
    uint32_t pg_name, pg_desc, pg_ranks; /* pg_ranks: the raw string "[0, 1]" */
    uint32_t in_split, out_split;        /* raw strings */
    uint32_t event;       /* 1-based index of the event it was read from */
    uint32_t fields;      /* MT_COLL_F_* */
    uint32_t pad_;
} mt_coll_t;

/* Which fields of an mt_mem_t were present (bit set). */
enum {
    MT_MEM_F_ALLOC = 1u << 0,    /* "Total Allocated" */
    MT_MEM_F_RESERVED = 1u << 1, /* "Total Reserved" */
    MT_MEM_F_BYTES = 1u << 2,    /* "Bytes" */
    MT_MEM_F_DEV_ID = 1u << 3,   /* "Device Id" */
    MT_MEM_F_DEV_TYPE = 1u << 4, /* "Device Type" */
    MT_MEM_F_ADDR = 1u << 5,     /* "Addr" */
};

/* The args of one [memory] instant event (profile_memory=True; FORMAT.md
 * 5): the allocator's totals after the allocation (Bytes > 0) or free
 * (Bytes < 0). Values as written (a negative total is kept: bad input
 * that the memory pass reports); fields says which were present. */
typedef struct mt_mem {
    int64_t total_allocated, total_reserved, bytes;
    int64_t device_id;    /* -1 for the CPU */
    uint64_t addr;
    int32_t device_type;  /* 0 CPU, 1 CUDA (ROCm writes 1 too) */
    uint32_t event;       /* 1-based index of the event */
    uint32_t fields;      /* MT_MEM_F_* */
    uint32_t pad_;
} mt_mem_t;

/* One cuda_sync stream-wait record ("Stream Wait Event"; Kineto with
 * enable_cuda_sync_events, FORMAT.md 5): the event itself names the waiting
 * stream (its tid) and the cudaStreamWaitEvent call (its correlation);
 * these args name what the stream waits for. Kept for every event that
 * carries at least one of them (Kineto writes them on cuda_sync events). */
typedef struct mt_swait {
    int64_t wait_stream;  /* "wait_on_stream": the stream the CUDA event was recorded on, -1 unknown */
    int64_t record_corr;  /* "wait_on_cuda_event_record_corr_id": the cudaEventRecord call's correlation,
                           * -1 unknown */
    uint32_t event;       /* 1-based index of the cuda_sync event */
    uint32_t pad_;
} mt_swait_t;

/* One "M" metadata event's payload. */
typedef struct mt_meta {
    uint32_t event;    /* 1-based event index */
    uint32_t str;      /* args.name / args.labels (strtab id), 0 if none */
    int64_t value;     /* args.sort_index, or 0 */
} mt_meta_t;

/* One process group from distributedInfo.pg_config. */
typedef struct mt_pg {
    uint32_t name;     /* pg_name */
    uint32_t desc;     /* pg_desc */
    uint32_t backend;  /* backend_config */
    int64_t size;      /* pg_size, -1 if absent */
    uint32_t rank_off; /* ranks: trace->pg_rank_pool[rank_off .. rank_off+n_ranks) */
    uint32_t n_ranks;
} mt_pg_t;

/* One deviceProperties entry. */
typedef struct mt_device {
    int64_t id;
    uint32_t name;
    int64_t total_mem;
    int64_t num_sms;
    int64_t compute_major, compute_minor;
} mt_device_t;

/* How "ts" was written in the file (FORMAT.md 3). */
typedef enum mt_ts_style {
    MT_TS_UNKNOWN = 0,
    MT_TS_ABS_INT,     /* absolute integer us */
    MT_TS_ABS_FRAC,    /* absolute us with a fraction */
    MT_TS_REL,         /* relative to baseTimeNanoseconds */
} mt_ts_style_t;

/* Header facts. -1 = absent for integers, 0 for string ids. */
typedef struct mt_trace_info {
    int64_t rank;          /* distributedInfo.rank */
    int64_t world_size;    /* distributedInfo.world_size */
    int64_t base_ns;       /* baseTimeNanoseconds (0 when absent) */
    bool has_base;
    bool bare_array;       /* the file was a top-level array of events */
    bool nsys;             /* from an Nsight Systems export: base_ns is the session's UTC start */
    bool has_dist_info;
    mt_ts_style_t ts_style;
    uint32_t backend;      /* distributedInfo.backend */
    uint32_t nccl_version; /* distributedInfo.nccl_version */
    uint32_t trace_name;   /* traceName */
    int64_t schema_version;
} mt_trace_info_t;

/* Counters of what the loader saw but does not model. */
typedef struct mt_load_stats {
    uint64_t bytes_in;        /* bytes read from the file (compressed size for gzip) */
    uint64_t bytes_json;      /* uncompressed JSON bytes consumed */
    uint64_t by_ph[MT_PH_COUNT_];
    uint64_t by_cat[MT_CAT_COUNT_];
    uint64_t unknown_fields;  /* event keys we skip (e.g. "cname") */
    uint64_t unknown_top_keys;
    uint64_t bad_values;      /* a known key with a value of the wrong type: skipped */
    uint64_t neg_dur;         /* negative durations, stored as 0 */
    uint64_t no_ts;           /* complete (X) events without "ts", stored at 0 */
    uint64_t no_ts_kernels;   /* ... of them kernels */
    uint64_t bad_utf8;        /* strings with invalid UTF-8 (bytes replaced by U+FFFD) */
    bool truncated;           /* input ended inside the event array */
    uint64_t truncated_at;    /* byte offset where the usable input stopped */
} mt_load_stats_t;

/* What linking achieved (filled by mt_trace_link, see link.h). */
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

/* A loaded trace. Plain data owned by the trace: free with mt_trace_free().
 * Index arrays are 0-based; 1-based references (coll, aux, event) use 0 for
 * "none". */
typedef struct mt_trace {
    char *path;              /* copy of the path it was loaded from (may be NULL for buffers) */
    mt_trace_info_t info;
    mt_strtab_t *strings;
    mt_event_t *events;
    size_t n_events, cap_events;
    mt_coll_t *colls;
    size_t n_colls, cap_colls;
    mt_meta_t *meta;
    size_t n_meta, cap_meta;
    mt_mem_t *mems;          /* [memory] instant events, in file order */
    size_t n_mems, cap_mems;
    mt_swait_t *swaits;      /* cuda_sync stream-wait records, in file order (none without
                              * enable_cuda_sync_events) */
    size_t n_swaits, cap_swaits;
    mt_pg_t *pgs;
    size_t n_pgs, cap_pgs;
    int64_t *pg_rank_pool;
    size_t n_pg_rank_pool, cap_pg_rank_pool;
    mt_device_t *devices;
    size_t n_devices, cap_devices;
    /* The event ids that do not fit their 32-bit fields (mt_event_t): pids
     * and tids as int64_t bits, ids as they are; read them through
     * mt_event_pid() and the others. */
    uint64_t *wide;
    size_t n_wide, cap_wide;
    /* Categories we did not recognise: name id -> count. */
    uint32_t *other_cat_names;
    uint64_t *other_cat_counts;
    size_t n_other_cats, cap_other_cats;
    mt_load_stats_t stats;
    mt_link_stats_t link;    /* from the last mt_trace_link */
    bool linked;
} mt_trace_t;

_Static_assert(sizeof(mt_event_t) == 48, "mt_event_t must stay 48 bytes: it dominates memory");

/* Free everything the trace owns, then the trace itself. NULL does nothing. */
void mt_trace_free(mt_trace_t *t);

/* Text of an enum value ("cpu_op", "X", "compute", ...). Never NULL. */
const char *mt_cat_str(mt_cat_t c);
const char *mt_phase_str(mt_phase_t p);
const char *mt_class_str(mt_class_t c);

/* The modern category for a legacy spelling (Kernel -> kernel, ...);
 * other values are returned unchanged. */
mt_cat_t mt_cat_normal(mt_cat_t c);

/* Look up a category by its exact spelling; MT_CAT_OTHER when unknown. */
mt_cat_t mt_cat_lookup(const char *s, size_t len);

/* Convenience accessors. */
static inline const char *mt_event_name(const mt_trace_t *t, const mt_event_t *e)
{
    return mt_strtab_get(t->strings, e->name, NULL);
}
static inline const mt_coll_t *mt_event_coll(const mt_trace_t *t, const mt_event_t *e)
{
    return e->coll ? &t->colls[e->coll - 1] : NULL;
}

/* The full pid, tid, correlation and External id of an event of t (see
 * mt_event_t). Fast path: a compare; the side table only for wide values. */
static inline int64_t mt_event_pid(const mt_trace_t *t, const mt_event_t *e)
{
    return e->pid32 >= MT_EV_I32_MIN ? (int64_t)e->pid32 : (int64_t)t->wide[(uint32_t)e->pid32 - UINT32_C(0x80000000)];
}
static inline int64_t mt_event_tid(const mt_trace_t *t, const mt_event_t *e)
{
    return e->tid32 >= MT_EV_I32_MIN ? (int64_t)e->tid32 : (int64_t)t->wide[(uint32_t)e->tid32 - UINT32_C(0x80000000)];
}
static inline uint64_t mt_event_corr(const mt_trace_t *t, const mt_event_t *e)
{
    return e->corr32 < MT_EV_U32_WIDE ? e->corr32 : t->wide[e->corr32 - MT_EV_U32_WIDE];
}
static inline uint64_t mt_event_ext(const mt_trace_t *t, const mt_event_t *e)
{
    return e->ext32 < MT_EV_U32_WIDE ? e->ext32 : t->wide[e->ext32 - MT_EV_U32_WIDE];
}

/* Slow path of mt_event_set_ids: the same, any value. */
mt_status_t mt_event_set_ids_wide(mt_trace_t *t, mt_event_t *e, int64_t pid, int64_t tid, uint64_t corr, uint64_t ext);

/* Set e's pid, tid, correlation and External id (e need not be in
 * t->events yet, but must end up in t: values that do not fit 32 bits go
 * to t->wide, which e then names). A field set again over a wide value
 * leaves its old slot unused. MT_OK, MT_ERR_NOMEM, or MT_ERR_LIMIT (more
 * than MT_EV_WIDE_MAX wide values in one trace). */
static inline mt_status_t mt_event_set_ids(mt_trace_t *t, mt_event_t *e, int64_t pid, int64_t tid, uint64_t corr,
                                           uint64_t ext)
{
    /* One test for the common case (the loader's per-event cost): pid + 2^30
     * is below 0xC0000000 exactly when pid is in [-2^30, 2^31), and four
     * values whose OR is below it are each below it (the converse need not
     * hold: such events take the exact path, with the same result). */
    uint64_t p = (uint64_t)pid + (UINT64_C(1) << 30), q = (uint64_t)tid + (UINT64_C(1) << 30);
    if ((p | q | corr | ext) < MT_EV_U32_WIDE) {
        e->pid32 = (int32_t)pid;
        e->tid32 = (int32_t)tid;
        e->corr32 = (uint32_t)corr;
        e->ext32 = (uint32_t)ext;
        return MT_OK;
    }
    return mt_event_set_ids_wide(t, e, pid, tid, corr, ext);
}

#ifdef __cplusplus
}
#endif
#endif /* MERGETRACE_TRACE_H */
