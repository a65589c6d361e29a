/* The event model's enum names, category lookup and freeing. */
#include "mergetrace/trace.h"

#include <stdlib.h>
#include <string.h>

/* Spelling and length of each category (the length saves a strlen per event). */
static const struct { const char *s; unsigned char len; } cats[MT_CAT_COUNT_] = {
    [MT_CAT_OTHER] = {"other", sizeof "other" - 1},
    [MT_CAT_NONE] = {"None", sizeof "None" - 1},
    [MT_CAT_CPU_OP] = {"cpu_op", sizeof "cpu_op" - 1},
    [MT_CAT_USER_ANNOTATION] = {"user_annotation", sizeof "user_annotation" - 1},
    [MT_CAT_GPU_USER_ANNOTATION] = {"gpu_user_annotation", sizeof "gpu_user_annotation" - 1},
    [MT_CAT_CUDA_RUNTIME] = {"cuda_runtime", sizeof "cuda_runtime" - 1},
    [MT_CAT_CUDA_DRIVER] = {"cuda_driver", sizeof "cuda_driver" - 1},
    [MT_CAT_KERNEL] = {"kernel", sizeof "kernel" - 1},
    [MT_CAT_GPU_MEMCPY] = {"gpu_memcpy", sizeof "gpu_memcpy" - 1},
    [MT_CAT_GPU_MEMSET] = {"gpu_memset", sizeof "gpu_memset" - 1},
    [MT_CAT_CUDA_SYNC] = {"cuda_sync", sizeof "cuda_sync" - 1},
    [MT_CAT_AC2G] = {"ac2g", sizeof "ac2g" - 1},
    [MT_CAT_FWDBWD] = {"fwdbwd", sizeof "fwdbwd" - 1},
    [MT_CAT_PYTHON_FUNCTION] = {"python_function", sizeof "python_function" - 1},
    [MT_CAT_CPU_INSTANT_EVENT] = {"cpu_instant_event", sizeof "cpu_instant_event" - 1},
    [MT_CAT_TRACE] = {"Trace", sizeof "Trace" - 1},
    [MT_CAT_OVERHEAD] = {"overhead", sizeof "overhead" - 1},
    [MT_CAT_CUDA_PROFILER_RANGE] = {"cuda_profiler_range", sizeof "cuda_profiler_range" - 1},
    [MT_CAT_MTIA_RUNTIME] = {"mtia_runtime", sizeof "mtia_runtime" - 1},
    [MT_CAT_MTIA_CCP_EVENTS] = {"mtia_ccp_events", sizeof "mtia_ccp_events" - 1},
    [MT_CAT_CRITICAL_PATH] = {"critical_path", sizeof "critical_path" - 1},
    [MT_CAT_LEGACY_OPERATOR] = {"Operator", sizeof "Operator" - 1},
    [MT_CAT_LEGACY_RUNTIME] = {"Runtime", sizeof "Runtime" - 1},
    [MT_CAT_LEGACY_KERNEL] = {"Kernel", sizeof "Kernel" - 1},
    [MT_CAT_LEGACY_MEMCPY] = {"Memcpy", sizeof "Memcpy" - 1},
    [MT_CAT_LEGACY_MEMSET] = {"Memset", sizeof "Memset" - 1},
    [MT_CAT_LEGACY_ASYNC] = {"async", sizeof "async" - 1},
    [MT_CAT_LEGACY_ASYNC_CPU_TO_GPU] = {"async_cpu_to_gpu", sizeof "async_cpu_to_gpu" - 1},
    [MT_CAT_LEGACY_ASYNC_GPU] = {"async_gpu", sizeof "async_gpu" - 1},
};

const char *mt_cat_str(mt_cat_t c)
{
    return (unsigned)c < MT_CAT_COUNT_ ? cats[c].s : "other";
}

/* Called once per event: compare length and first byte before memcmp. */
mt_cat_t mt_cat_lookup(const char *s, size_t len)
{
#define TRY(c)                                          \
    do {                                                \
        if (cats[c].len == len && memcmp(cats[c].s, s, len) == 0) \
            return c;                                   \
    } while (0)
    switch (len) {
    case 4: TRY(MT_CAT_AC2G); break;
    case 5: TRY(MT_CAT_TRACE); TRY(MT_CAT_LEGACY_ASYNC); break;
    case 6:
        TRY(MT_CAT_CPU_OP); TRY(MT_CAT_KERNEL); TRY(MT_CAT_FWDBWD); TRY(MT_CAT_LEGACY_KERNEL);
        TRY(MT_CAT_LEGACY_MEMCPY); TRY(MT_CAT_LEGACY_MEMSET);
        break;
    case 7: TRY(MT_CAT_LEGACY_RUNTIME); break;
    case 8: TRY(MT_CAT_OVERHEAD); TRY(MT_CAT_LEGACY_OPERATOR); break;
    case 9: TRY(MT_CAT_CUDA_SYNC); TRY(MT_CAT_LEGACY_ASYNC_GPU); break;
    case 10: TRY(MT_CAT_GPU_MEMCPY); TRY(MT_CAT_GPU_MEMSET); break;
    case 11: TRY(MT_CAT_CUDA_DRIVER); break;
    case 12: TRY(MT_CAT_CUDA_RUNTIME); TRY(MT_CAT_MTIA_RUNTIME); break;
    case 13: TRY(MT_CAT_CRITICAL_PATH); break;
    case 15: TRY(MT_CAT_USER_ANNOTATION); TRY(MT_CAT_PYTHON_FUNCTION); TRY(MT_CAT_MTIA_CCP_EVENTS); break;
    case 16: TRY(MT_CAT_LEGACY_ASYNC_CPU_TO_GPU); break;
    case 17: TRY(MT_CAT_CPU_INSTANT_EVENT); break;
    case 19: TRY(MT_CAT_GPU_USER_ANNOTATION); TRY(MT_CAT_CUDA_PROFILER_RANGE); break;
    default: break;
    }
#undef TRY
    return MT_CAT_OTHER;
}

mt_cat_t mt_cat_normal(mt_cat_t c)
{
    switch (c) {
    case MT_CAT_LEGACY_OPERATOR: return MT_CAT_CPU_OP;
    case MT_CAT_LEGACY_RUNTIME: return MT_CAT_CUDA_RUNTIME;
    case MT_CAT_LEGACY_KERNEL: return MT_CAT_KERNEL;
    case MT_CAT_LEGACY_MEMCPY: return MT_CAT_GPU_MEMCPY;
    case MT_CAT_LEGACY_MEMSET: return MT_CAT_GPU_MEMSET;
    case MT_CAT_LEGACY_ASYNC:
    case MT_CAT_LEGACY_ASYNC_CPU_TO_GPU:
    case MT_CAT_LEGACY_ASYNC_GPU: return MT_CAT_AC2G;
    default: return c;
    }
}

const char *mt_phase_str(mt_phase_t p)
{
    static const char *const t[MT_PH_COUNT_] = {
        [MT_PH_OTHER] = "other", [MT_PH_X] = "X", [MT_PH_I] = "i", [MT_PH_S] = "s",
        [MT_PH_F] = "f", [MT_PH_T] = "t", [MT_PH_M] = "M", [MT_PH_C] = "C",
        [MT_PH_NONE] = "none",
    };
    return (unsigned)p < MT_PH_COUNT_ ? t[p] : "other";
}

const char *mt_class_str(mt_class_t c)
{
    static const char *const t[MT_CLASS_COUNT_] = {
        [MT_CLASS_NONE] = "none", [MT_CLASS_COMPUTE] = "compute", [MT_CLASS_COMM] = "comm",
        [MT_CLASS_MEMCPY] = "memcpy", [MT_CLASS_MEMSET] = "memset", [MT_CLASS_SYNC] = "sync",
        [MT_CLASS_GPU_ANNOTATION] = "gpu_annotation",
    };
    return (unsigned)c < MT_CLASS_COUNT_ ? t[c] : "none";
}

void mt_trace_free(mt_trace_t *t)
{
    if (!t)
        return;
    free(t->path);
    mt_strtab_free(t->strings);
    free(t->events);
    free(t->colls);
    free(t->mems);
    free(t->swaits);
    free(t->meta);
    free(t->pgs);
    free(t->pg_rank_pool);
    free(t->devices);
    free(t->other_cat_names);
    free(t->other_cat_counts);
    free(t->wide);
    free(t);
}

/* A wide value's slot: the 32-bit field's code for it, or false when the
 * table is full or out of memory (*st says which). */
static bool wide_slot(mt_trace_t *t, uint64_t v, uint32_t *k, mt_status_t *st)
{
    if (t->n_wide >= MT_EV_WIDE_MAX) {
        *st = MT_ERR_LIMIT;
        return false;
    }
    if (t->n_wide == t->cap_wide) {
        size_t cap = t->cap_wide ? t->cap_wide * 2 : 64;
        uint64_t *g = realloc(t->wide, cap * sizeof *g);
        if (!g) {
            *st = MT_ERR_NOMEM;
            return false;
        }
        t->wide = g;
        t->cap_wide = cap;
    }
    *k = (uint32_t)t->n_wide;
    t->wide[t->n_wide++] = v;
    return true;
}

mt_status_t mt_event_set_ids_wide(mt_trace_t *t, mt_event_t *e, int64_t pid, int64_t tid, uint64_t corr, uint64_t ext)
{
    mt_status_t st = MT_OK;
    uint32_t k;
    if (pid >= MT_EV_I32_MIN && pid <= INT32_MAX)
        e->pid32 = (int32_t)pid;
    else if (wide_slot(t, (uint64_t)pid, &k, &st))
        e->pid32 = (int32_t)(k - UINT32_C(0x80000000)); /* INT32_MIN + k, k < 2^30 */
    else
        return st;
    if (tid >= MT_EV_I32_MIN && tid <= INT32_MAX)
        e->tid32 = (int32_t)tid;
    else if (wide_slot(t, (uint64_t)tid, &k, &st))
        e->tid32 = (int32_t)(k - UINT32_C(0x80000000));
    else
        return st;
    if (corr < MT_EV_U32_WIDE)
        e->corr32 = (uint32_t)corr;
    else if (wide_slot(t, corr, &k, &st))
        e->corr32 = MT_EV_U32_WIDE + k;
    else
        return st;
    if (ext < MT_EV_U32_WIDE)
        e->ext32 = (uint32_t)ext;
    else if (wide_slot(t, ext, &k, &st))
        e->ext32 = MT_EV_U32_WIDE + k;
    else
        return st;
    return MT_OK;
}
