/* Linking kernels to launches and communication kernels to collectives, one
 * hand-built trace per path of FORMAT.md 6.3. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "test_util.h"

static const mt_coll_t *coll_of(const mt_trace_t *t, const char *kernel)
{
    const mt_event_t *e = find_event(t, kernel);
    assert_non_null(e);
    return mt_event_coll(t, e);
}

static const char *coll_name(const mt_trace_t *t, const mt_coll_t *c)
{
    return c ? mt_strtab_get(t->strings, c->name, NULL) : "(none)";
}

static void test_link_paths(void **state)
{
    (void)state;
    mt_trace_t *t = load_str(
        "{\"traceEvents\":[\n"
        /* 2: linked External id -> record_param_comms with metadata */
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"record_param_comms\",\"pid\":1,\"tid\":1,\"ts\":100,\"dur\":50,"
        "\"args\":{\"External id\":7,\"Collective name\":\"broadcast\",\"In msg nelems\":10,\"dtype\":\"Float\"}},\n"
        "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,\"tid\":1,\"ts\":120,\"dur\":5,"
        "\"args\":{\"correlation\":500,\"External id\":7}},\n"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"ncclKernel_Broadcast_RING_LL_Sum_int8_t(a)\",\"pid\":0,\"tid\":40,"
        "\"ts\":130,\"dur\":10,\"args\":{\"correlation\":500,\"External id\":7}},\n"
        /* 3a: unlinked (External id == correlation); the launch sits in nccl:all_reduce
         * inside a record_param_comms that carries metadata: the metadata wins */
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"record_param_comms\",\"pid\":1,\"tid\":1,\"ts\":200,\"dur\":50,"
        "\"args\":{\"External id\":8,\"Collective name\":\"allreduce\",\"In msg nelems\":20}},\n"
        "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"nccl:all_reduce\",\"pid\":1,\"tid\":1,\"ts\":210,\"dur\":30,"
        "\"args\":{\"External id\":9}},\n"
        "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,\"tid\":1,\"ts\":220,\"dur\":5,"
        "\"args\":{\"correlation\":501,\"External id\":501}},\n"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"ncclKernel_AllReduce_RING_LL_Sum_float(a)\",\"pid\":0,\"tid\":40,"
        "\"ts\":230,\"dur\":10,\"args\":{\"correlation\":501,\"External id\":501}},\n"
        /* 3b: no metadata anywhere (2023): two kernels launched in one nccl:all_to_all
         * share one collective made from the range, with its Input Dims */
        "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"nccl:all_to_all\",\"pid\":1,\"tid\":1,\"ts\":300,\"dur\":40,"
        "\"args\":{\"External id\":10,\"Input Dims\":[[64,4]]}},\n"
        "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,\"tid\":1,\"ts\":310,\"dur\":5,"
        "\"args\":{\"correlation\":502,\"External id\":502}},\n"
        "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,\"tid\":1,\"ts\":320,\"dur\":5,"
        "\"args\":{\"correlation\":503,\"External id\":503}},\n"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(a)\",\"pid\":0,\"tid\":40,"
        "\"ts\":330,\"dur\":10,\"args\":{\"correlation\":502,\"External id\":502}},\n"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(b)\",\"pid\":0,\"tid\":40,"
        "\"ts\":345,\"dur\":10,\"args\":{\"correlation\":503,\"External id\":503}},\n"
        /* the same correlation on another thread's range must not leak in */
        "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"nccl:broadcast\",\"pid\":1,\"tid\":2,\"ts\":300,\"dur\":40},\n"
        /* 4: no launch captured (ROCm): the gpu_user_annotation on the stream */
        "{\"ph\":\"X\",\"cat\":\"gpu_user_annotation\",\"name\":\"nccl:broadcast\",\"pid\":0,\"tid\":41,\"ts\":399.999,\"dur\":20.003},\n"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)\",\"pid\":0,"
        "\"tid\":41,\"ts\":400,\"dur\":20},\n"
        /* nothing to link to */
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"ncclDevKernel_SendRecv(lonely)\",\"pid\":0,\"tid\":42,\"ts\":500,\"dur\":5,"
        "\"args\":{\"correlation\":999}}\n"
        "]}");
    mt_link_stats_t s;
    assert_int_equal(mt_trace_link(t, &s), MT_OK);
    assert_int_equal(s.comm_kernels, 6);
    assert_int_equal(s.comm_with_coll, 5);
    assert_int_equal(s.by_own_meta, 0);
    assert_int_equal(s.by_ext_id, 1);
    assert_int_equal(s.by_cpu_range, 3);
    assert_int_equal(s.by_gpu_range, 1);
    assert_int_equal(s.gpu_activities, 6);
    assert_int_equal(s.launched, 4);

    const mt_coll_t *b = coll_of(t, "ncclKernel_Broadcast_RING_LL_Sum_int8_t(a)");
    assert_string_equal(coll_name(t, b), "broadcast");
    assert_int_equal(b->in_nelems, 10);
    const mt_coll_t *ar = coll_of(t, "ncclKernel_AllReduce_RING_LL_Sum_float(a)");
    assert_string_equal(coll_name(t, ar), "allreduce");
    assert_int_equal(ar->in_nelems, 20);
    const mt_coll_t *a1 = coll_of(t, "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(a)");
    const mt_coll_t *a2 = coll_of(t, "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(b)");
    assert_ptr_equal(a1, a2);
    assert_string_equal(coll_name(t, a1), "all_to_all");
    assert_int_equal(a1->in_nelems, 256);
    const mt_coll_t *g = coll_of(t, "ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)");
    assert_string_equal(coll_name(t, g), "broadcast");
    assert_true(g->fields & MT_COLL_F_FROM_RANGE);
    assert_null(coll_of(t, "ncclDevKernel_SendRecv(lonely)"));

    /* idempotent: linking again changes nothing and adds no records */
    size_t n_colls = t->n_colls;
    mt_link_stats_t s2;
    assert_int_equal(mt_trace_link(t, &s2), MT_OK);
    assert_int_equal(t->n_colls, n_colls);
    assert_memory_equal(&s, &s2, sizeof s);
    mt_trace_free(t);
}

/* A gloo:* range's record (MT_COLL_F_GLOO: the name, and Input Dims when
 * there are any, of a collective gloo ran on the CPU) is gloo's collective,
 * never an NCCL kernel's: not even one whose External id names that range
 * (here a cpu_op, a category the loader takes gloo ranges from too). A
 * barrier has no Input Dims, so only MT_COLL_F_GLOO keeps it apart; the
 * record_param_comms of test_link_paths path 2 links this way. */
static void test_link_not_gloo(void **state)
{
    (void)state;
    mt_trace_t *t = load_str(
        "{\"traceEvents\":[\n"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"gloo:barrier\",\"pid\":1,\"tid\":3,\"ts\":100,\"dur\":50,"
        "\"args\":{\"External id\":11}},\n"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"ncclDevKernel_AllReduce_Sum_f32_RING_LL(x)\",\"pid\":0,"
        "\"tid\":40,\"ts\":130,\"dur\":10,\"args\":{\"correlation\":600,\"External id\":11}}\n"
        "]}");
    const mt_event_t *g = find_event(t, "gloo:barrier");
    assert_non_null(g);
    const mt_coll_t *gc = mt_event_coll(t, g);
    assert_non_null(gc);
    assert_true(gc->fields & MT_COLL_F_GLOO);
    assert_string_equal(coll_name(t, gc), "barrier");
    mt_link_stats_t s;
    assert_int_equal(mt_trace_link(t, &s), MT_OK);
    assert_int_equal(s.comm_kernels, 1);
    assert_int_equal(s.by_ext_id, 0);
    assert_int_equal(s.comm_with_coll, 0);
    assert_null(coll_of(t, "ncclDevKernel_AllReduce_Sum_f32_RING_LL(x)"));
    mt_trace_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_link_paths),
        cmocka_unit_test(test_link_not_gloo),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
