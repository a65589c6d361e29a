/* The worker threads' world (mergetrace/tworld.h): one process outside a
 * world, then each collective and the point-to-point messages on 4 and 5
 * threads against hand-worked values (rank q brings q + 1, or a block
 * that names its sender and receiver). A hang fails through alarm(). */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "mergetrace/tworld.h"

static void test_one_process(void **state)
{
    (void)state;
    assert_int_equal(mt_tw_size(), 0);
    assert_int_equal(mt_tw_rank(), 0);
    int32_t a[2] = {5, 7}, b[2] = {0, 0};
    mt_tw_reduce(a, b, 2, MT_TW_I32, MT_TW_SUM, 0, true);
    assert_int_equal(b[0], 5);
    assert_int_equal(b[1], 7);
    mt_tw_reduce(MT_TW_IN_PLACE, b, 2, MT_TW_I32, MT_TW_MAX, 0, true); /* nothing to copy */
    assert_int_equal(b[1], 7);
    double d = 2.5, e = -1;
    mt_tw_exscan(&d, &e, 1, MT_TW_DOUBLE, MT_TW_SUM); /* undefined on process 0: left as it was */
    assert_true(e == -1);
    mt_tw_bcast(a, 2, MT_TW_I32, 0);
    assert_int_equal(a[0], 5);
    /* gatherv: the one block at displs[0] */
    int64_t g[4] = {0, 0, 0, 0}, v[2] = {11, 12};
    int counts[1] = {2}, displs[1] = {1};
    mt_tw_gatherv(v, 2, MT_TW_I64, g, counts, displs, MT_TW_I64, 0);
    assert_true(g[0] == 0 && g[1] == 11 && g[2] == 12 && g[3] == 0);
    assert_false(mt_tw_iprobe(MT_TW_ANY_SOURCE, 1));
    assert_int_equal(mt_tw_type_size(MT_TW_LONG_INT), sizeof(struct { long v; int i; }));
    assert_int_equal(mt_tw_type_size(MT_TW_BYTE), 1);
    assert_int_equal(mt_tw_type_size(MT_TW_U64), 8);
}

/* What a thread found wrong (0: nothing), by rank. */
static int collectives(void *arg, int rank)
{
    (void)arg;
    int n = mt_tw_size();
    if (mt_tw_rank() != rank)
        return 1;
    /* allreduce, in place and not: sum 1..n, min 1, max n */
    int32_t x = rank + 1, sum = 0, mn = 0, mx = x;
    mt_tw_reduce(&x, &sum, 1, MT_TW_I32, MT_TW_SUM, 0, true);
    mt_tw_reduce(&x, &mn, 1, MT_TW_I32, MT_TW_MIN, 0, true);
    mt_tw_reduce(MT_TW_IN_PLACE, &mx, 1, MT_TW_I32, MT_TW_MAX, 0, true);
    if (sum != n * (n + 1) / 2 || mn != 1 || mx != n)
        return 2;
    /* reduce to rank 2 only: the others' recv untouched */
    uint64_t big = (uint64_t)1 << 40, got = 7;
    mt_tw_reduce(&big, &got, 1, MT_TW_U64, MT_TW_SUM, 2, false);
    if (got != (rank == 2 ? (uint64_t)n << 40 : 7))
        return 3;
    /* maxloc: values 9, 9, 3, ...: the lower index of the tie */
    struct {
        long v;
        int i;
    } me = {rank < 2 ? 9 : 3, rank}, best = {0, -1};
    mt_tw_reduce(&me, &best, 1, MT_TW_LONG_INT, MT_TW_MAXLOC, 0, true);
    if (best.v != 9 || best.i != 0)
        return 4;
    /* exscan: rank q gets 1 + ... + q (rank 0's left as it was) */
    int64_t ex = -5, mine = rank + 1;
    mt_tw_exscan(&mine, &ex, 1, MT_TW_I64, MT_TW_SUM);
    if (ex != (rank == 0 ? -5 : (int64_t)rank * (rank + 1) / 2))
        return 5;
    /* bcast from the last rank */
    double bc[2] = {rank, -rank};
    mt_tw_bcast(bc, 2, MT_TW_DOUBLE, n - 1);
    if (bc[0] != n - 1 || bc[1] != -(n - 1))
        return 6;
    /* gather to rank 1: block q is q + 1 */
    int32_t all[8] = {0};
    mt_tw_gather(&x, 1, MT_TW_I32, all, 1, MT_TW_I32, 1);
    for (int q = 0; rank == 1 && q < n; q++)
        if (all[q] != q + 1)
            return 7;
    if (rank != 1 && all[0] != 0)
        return 8;
    /* gatherv to rank 0: rank q sends q elements of value q, packed in
     * rank order (displacements 0, 0, 1, 3, 6) */
    char part[8], packed[16];
    memset(part, 'a' + rank, sizeof part);
    memset(packed, '.', sizeof packed);
    int counts[8], displs[8], at = 0;
    for (int q = 0; q < n; q++) {
        counts[q] = q;
        displs[q] = at;
        at += q;
    }
    mt_tw_gatherv(part, (size_t)rank, MT_TW_CHAR, packed, counts, displs, MT_TW_CHAR, 0);
    if (rank == 0 && n == 5 && memcmp(packed, "bccdddeeee.", 11))
        return 9;
    /* alltoall: rank p sends block q = 10 p + q; rank q gets 10 p + q from each p */
    int64_t out[8], in[8];
    for (int q = 0; q < n; q++)
        out[q] = 10 * rank + q;
    mt_tw_alltoall(out, 1, MT_TW_I64, in, 1, MT_TW_I64);
    for (int p = 0; p < n; p++)
        if (in[p] != 10 * p + rank)
            return 10;
    return 0;
}

static void test_collectives(void **state)
{
    (void)state;
    for (int n = 4; n <= 5; n++) {
        int codes[5] = {-1, -1, -1, -1, -1};
        alarm(30);
        assert_int_equal(mt_tw_run(n, collectives, NULL, codes), n);
        alarm(0);
        for (int q = 0; q < n; q++)
            assert_int_equal(codes[q], 0);
        assert_int_equal(mt_tw_size(), 0); /* the world is gone */
    }
}

/* Point to point on n threads: a ring of blocking sends (rank q to q + 1)
 * received from any sender, then every rank isends an eager note and a
 * long block to rank 0, which probes, irecvs them all and waits. */
static int messages(void *arg, int rank)
{
    (void)arg;
    int n = mt_tw_size();
    int to = (rank + 1) % n, fromr = (rank + n - 1) % n;
    int32_t token = 100 + rank, got = -1;
    int from = -1;
    if (rank % 2 == 0) { /* even ranks send first; with an odd n rank n-1 sends to 0, which sent already */
        mt_tw_send(&token, sizeof token, to, 5);
        mt_tw_recv(&got, sizeof got, MT_TW_ANY_SOURCE, 5, &from);
    } else {
        mt_tw_recv(&got, sizeof got, MT_TW_ANY_SOURCE, 5, &from);
        mt_tw_send(&token, sizeof token, to, 5);
    }
    if (got != 100 + fromr || from != fromr)
        return 1;
    /* eager (8 bytes) and long (1 KiB) sends to rank 0 */
    int64_t note = 1000 + rank;
    static char blocks[8][1024];
    memset(blocks[rank], 'A' + rank, sizeof blocks[rank]);
    mt_tw_req_t sr[2];
    if (rank != 0) {
        mt_tw_isend(&note, sizeof note, 0, 7, &sr[0]);
        if (sr[0].kind != 0) /* eager: done already */
            return 2;
        mt_tw_isend(blocks[rank], sizeof blocks[rank], 0, 8, &sr[1]);
        if (sr[1].kind != 1)
            return 3;
        note = -1; /* an eager message was copied: its buffer may change */
        mt_tw_wait(&sr[0]);
        mt_tw_wait(&sr[1]);
        return 0;
    }
    int64_t notes[8];
    char recv[8][1024];
    mt_tw_req_t rr[16];
    for (int p = 1; p < n; p++) {
        mt_tw_irecv(&notes[p], sizeof notes[p], p, 7, &rr[2 * p]);
        mt_tw_irecv(recv[p], sizeof recv[p], p, 8, &rr[2 * p + 1]);
    }
    for (int i = 2; i < 2 * n; i++)
        mt_tw_wait(&rr[i]);
    for (int p = 1; p < n; p++) {
        if (notes[p] != 1000 + p)
            return 4;
        for (size_t k = 0; k < sizeof recv[p]; k++)
            if (recv[p][k] != 'A' + p)
                return 5;
    }
    return mt_tw_iprobe(MT_TW_ANY_SOURCE, 7) ? 6 : 0; /* nothing left */
}

static void test_messages(void **state)
{
    (void)state;
    for (int n = 4; n <= 5; n++) {
        int codes[5] = {-1, -1, -1, -1, -1};
        alarm(30);
        assert_int_equal(mt_tw_run(n, messages, NULL, codes), n);
        alarm(0);
        for (int q = 0; q < n; q++)
            assert_int_equal(codes[q], 0);
    }
}

static int alone(void *arg, int rank)
{
    *(int *)arg = mt_tw_size();
    return 40 + rank;
}

static void test_run_edges(void **state)
{
    (void)state;
    int codes[1] = {-1}, size = -1;
    assert_int_equal(mt_tw_run(0, alone, &size, codes), 0);
    assert_int_equal(codes[0], -1);
    /* one thread: fn on the calling thread, outside a world */
    assert_int_equal(mt_tw_run(1, alone, &size, codes), 1);
    assert_int_equal(codes[0], 40);
    assert_int_equal(size, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_process),
        cmocka_unit_test(test_collectives),
        cmocka_unit_test(test_messages),
        cmocka_unit_test(test_run_edges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
