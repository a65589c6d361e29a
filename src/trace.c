/* The event model's enum names, category lookup and freeing. */
#include "mergetrace/trace.h"

#include <stdlib.h>
#include <string.h>

static const char *const cat_text[MT_CAT_COUNT_] = {
    [MT_CAT_OTHER] = "other",
    [MT_CAT_NONE] = "None",
    [MT_CAT_CPU_OP] = "cpu_op",
    [MT_CAT_USER_ANNOTATION] = "user_annotation",
    [MT_CAT_GPU_USER_ANNOTATION] = "gpu_user_annotation",
    [MT_CAT_CUDA_RUNTIME] = "cuda_runtime",
    [MT_CAT_CUDA_DRIVER] = "cuda_driver",
    [MT_CAT_KERNEL] = "kernel",
    [MT_CAT_GPU_MEMCPY] = "gpu_memcpy",
    [MT_CAT_GPU_MEMSET] = "gpu_memset",
    [MT_CAT_CUDA_SYNC] = "cuda_sync",
    [MT_CAT_AC2G] = "ac2g",
    [MT_CAT_FWDBWD] = "fwdbwd",
    [MT_CAT_PYTHON_FUNCTION] = "python_function",
    [MT_CAT_CPU_INSTANT_EVENT] = "cpu_instant_event",
    [MT_CAT_TRACE] = "Trace",
    [MT_CAT_OVERHEAD] = "overhead",
    [MT_CAT_CUDA_PROFILER_RANGE] = "cuda_profiler_range",
    [MT_CAT_MTIA_RUNTIME] = "mtia_runtime",
    [MT_CAT_MTIA_CCP_EVENTS] = "mtia_ccp_events",
    [MT_CAT_CRITICAL_PATH] = "critical_path",
    [MT_CAT_LEGACY_OPERATOR] = "Operator",
    [MT_CAT_LEGACY_RUNTIME] = "Runtime",
    [MT_CAT_LEGACY_KERNEL] = "Kernel",
    [MT_CAT_LEGACY_MEMCPY] = "Memcpy",
    [MT_CAT_LEGACY_MEMSET] = "Memset",
    [MT_CAT_LEGACY_ASYNC] = "async",
    [MT_CAT_LEGACY_ASYNC_CPU_TO_GPU] = "async_cpu_to_gpu",
    [MT_CAT_LEGACY_ASYNC_GPU] = "async_gpu",
};

const char *mt_cat_str(mt_cat_t c)
{
    return (unsigned)c < MT_CAT_COUNT_ ? cat_text[c] : "other";
}

mt_cat_t mt_cat_lookup(const char *s, size_t len)
{
    /* Linear over ~30 entries, but first on length, which almost always
     * decides; the loader caches the result per distinct spelling anyway. */
    for (int c = MT_CAT_CPU_OP; c < MT_CAT_COUNT_; c++) {
        const char *t = cat_text[c];
        if (strlen(t) == len && memcmp(t, s, len) == 0)
            return (mt_cat_t)c;
    }
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
    free(t->meta);
    free(t->pgs);
    free(t->pg_rank_pool);
    free(t->devices);
    free(t->other_cat_names);
    free(t->other_cat_counts);
    free(t);
}
