/* NCCL/RCCL kernel-name decoding and GPU activity classes, on real names
 * from ../shared/corpus/FORMAT.md 6.4. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "test_util.h"

static void expect(const char *name, int gen, mt_coll_kind_t kind, const char *algo, const char *proto,
                   const char *redop, const char *dtype)
{
    mt_nccl_name_t d;
    if (!mt_nccl_decode(name, strlen(name), &d))
        fail_msg("not decoded: %s", name);
    assert_int_equal(d.generation, gen);
    assert_int_equal(d.kind, kind);
#define FIELD(f, want)                                                                   \
    do {                                                                                 \
        if (!(want)) {                                                                   \
            assert_null(d.f);                                                            \
        } else {                                                                         \
            assert_non_null(d.f);                                                        \
            if (strlen(want) != d.f##_len || memcmp(d.f, want, d.f##_len))               \
                fail_msg("%s: %s is '%.*s', want '%s'", name, #f, (int)d.f##_len, d.f, want); \
        }                                                                                \
    } while (0)
    FIELD(algo, algo);
    FIELD(proto, proto);
    FIELD(redop, redop);
    FIELD(dtype, dtype);
#undef FIELD
}

static void test_decode_generations(void **state)
{
    (void)state;
    expect("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", 1, MT_COLLK_ALLREDUCE, "RING", "LL", "Sum", "float");
    expect("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", 1,
           MT_COLLK_SENDRECV, "RING", "SIMPLE", "Sum", "int8_t");
    expect("ncclKernel_Broadcast_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", 1, MT_COLLK_BROADCAST,
           "RING", "LL", "Sum", "int8_t");
    expect("ncclKernel_AllReduce_COLLNET_DIRECT_LL128_Sum_half(ncclDevComm*, unsigned long, ncclWork*)", 1,
           MT_COLLK_ALLREDUCE, "COLLNET_DIRECT", "LL128", "Sum", "half");
    expect("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 2, MT_COLLK_ALLGATHER, "RING", "LL",
           NULL, NULL);
    expect("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 2, MT_COLLK_ALLREDUCE, "RING", "LL", "Sum", "bf16");
    expect("ncclDevKernel_ReduceScatter_Sum_f32_NVLS_TREE_SIMPLE(ncclDevKernelArgsStorage<4096ul>)", 2,
           MT_COLLK_REDUCESCATTER, "NVLS_TREE", "SIMPLE", "Sum", "f32");
    expect("ncclDevKernel_AllReduce_Sum_f8e4m3_TREE_LL128", 2, MT_COLLK_ALLREDUCE, "TREE", "LL128", "Sum", "f8e4m3");
    expect("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", 2, MT_COLLK_SENDRECV, NULL, NULL, NULL, NULL);
    expect("ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)", 2, MT_COLLK_GENERIC, NULL, NULL, NULL, NULL);
    expect("mscclKernel_Sum_bf16_LL128(...)", 3, MT_COLLK_GENERIC, NULL, "LL128", "Sum", "bf16");
    mt_nccl_name_t d;
    const char *not_nccl[] = {"volta_sgemm_128x64_nn", "ncclKernel_Unknown_RING_LL_Sum_float()",
                              "cross_device_reduce_1stage", "void at::native::ncclish()", "nccl", ""};
    for (size_t i = 0; i < sizeof not_nccl / sizeof not_nccl[0]; i++)
        assert_false(mt_nccl_decode(not_nccl[i], strlen(not_nccl[i]), &d));
}

static void test_coll_kind_names(void **state)
{
    (void)state;
    struct { const char *s; mt_coll_kind_t k; } c[] = {
        {"allreduce", MT_COLLK_ALLREDUCE}, {"all_reduce", MT_COLLK_ALLREDUCE},
        {"_allgather_base", MT_COLLK_ALLGATHER}, {"_all_gather_base", MT_COLLK_ALLGATHER},
        {"allgather_into_tensor_coalesced", MT_COLLK_ALLGATHER}, {"_reduce_scatter_base", MT_COLLK_REDUCESCATTER},
        {"reduce_scatter_tensor_coalesced", MT_COLLK_REDUCESCATTER}, {"broadcast", MT_COLLK_BROADCAST},
        {"all_to_all", MT_COLLK_ALLTOALL}, {"alltoall_base", MT_COLLK_ALLTOALL}, {"send", MT_COLLK_SEND},
        {"recv", MT_COLLK_RECV}, {"barrier", MT_COLLK_BARRIER}, {"reduce", MT_COLLK_REDUCE},
        {"wait", MT_COLLK_WAIT}, {"gather", MT_COLLK_GATHER}, {"scatter", MT_COLLK_SCATTER},
        {"frobnicate", MT_COLLK_UNKNOWN},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
        if (mt_coll_kind_from_name(c[i].s, strlen(c[i].s)) != c[i].k)
            fail_msg("%s -> %s", c[i].s, mt_coll_kind_str(mt_coll_kind_from_name(c[i].s, strlen(c[i].s))));
}

static void test_classes(void **state)
{
    (void)state;
    mt_trace_t *t = load_str(
        "{\"traceEvents\":["
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"sm90_gemm\",\"ts\":1,\"dur\":1,\"pid\":0,\"tid\":7},"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"ncclDevKernel_Generic(x)\",\"ts\":1,\"dur\":1,\"pid\":0,\"tid\":9},"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"custom_allreduce\",\"ts\":1,\"dur\":1,\"pid\":0,\"tid\":9,"
        "\"args\":{\"Collective name\":\"allreduce\"}},"
        "{\"ph\":\"X\",\"cat\":\"Kernel\",\"name\":\"old\",\"ts\":1,\"dur\":1,\"pid\":0,\"tid\":7},"
        "{\"ph\":\"X\",\"cat\":\"gpu_memcpy\",\"name\":\"Memcpy DtoD (Device -> Device)\",\"ts\":1,\"dur\":1,\"pid\":0,\"tid\":7},"
        "{\"ph\":\"X\",\"cat\":\"Memset\",\"name\":\"Memset (Device)\",\"ts\":1,\"dur\":1,\"pid\":0,\"tid\":7},"
        "{\"ph\":\"X\",\"cat\":\"cuda_sync\",\"name\":\"Event Sync\",\"ts\":1,\"dur\":1,\"pid\":0,\"tid\":-1},"
        "{\"ph\":\"X\",\"cat\":\"gpu_user_annotation\",\"name\":\"nccl:all_reduce\",\"ts\":1,\"dur\":1,\"pid\":0,\"tid\":9},"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mm\",\"ts\":1,\"dur\":1,\"pid\":5,\"tid\":5},"
        "{\"ph\":\"i\",\"cat\":\"kernel\",\"name\":\"not a duration\",\"ts\":1,\"pid\":0,\"tid\":7}]}");
    const mt_class_t want[] = {MT_CLASS_COMPUTE, MT_CLASS_COMM, MT_CLASS_COMM, MT_CLASS_COMPUTE, MT_CLASS_MEMCPY,
                               MT_CLASS_MEMSET, MT_CLASS_SYNC, MT_CLASS_GPU_ANNOTATION, MT_CLASS_NONE, MT_CLASS_NONE};
    assert_int_equal(t->n_events, 10);
    for (size_t i = 0; i < 10; i++)
        if (t->events[i].cls != want[i])
            fail_msg("event %zu (%s): class %s, want %s", i, mt_event_name(t, &t->events[i]),
                     mt_class_str((mt_class_t)t->events[i].cls), mt_class_str(want[i]));
    mt_trace_free(t);
}

/* Every spelling maps back to its own category (the lookup is hand-switched). */
static void test_cat_lookup_roundtrip(void **state)
{
    (void)state;
    for (int c = MT_CAT_NONE + 1; c < MT_CAT_COUNT_; c++) {
        const char *s = mt_cat_str((mt_cat_t)c);
        if (mt_cat_lookup(s, strlen(s)) != (mt_cat_t)c)
            fail_msg("%s does not map back", s);
    }
    assert_int_equal(mt_cat_lookup("kernel2", 7), MT_CAT_OTHER);
    assert_int_equal(mt_cat_lookup("", 0), MT_CAT_OTHER);
    assert_int_equal(mt_cat_lookup("None", 4), MT_CAT_OTHER); /* "None" is our name for "no cat", not a spelling */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode_generations),
        cmocka_unit_test(test_coll_kind_names),
        cmocka_unit_test(test_classes),
        cmocka_unit_test(test_cat_lookup_roundtrip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
