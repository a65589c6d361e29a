/* The places of the ranks' parts in a merged trace written by several
 * processes (mergetrace/merged_layout.h), without MPI: offsets worked out
 * by hand, and simulated writes of P processes in gzip-like rounds whose
 * file must be the header and the parts concatenated in rank order. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mergetrace/mergetrace.h"

static void test_rank_index(void **state)
{
    (void)state;
    const int32_t r[4] = {0, 3, 5, 9};
    assert_int_equal(mt_layout_rank_index(r, 4, 0), 0);
    assert_int_equal(mt_layout_rank_index(r, 4, 3), 1);
    assert_int_equal(mt_layout_rank_index(r, 4, 5), 2);
    assert_int_equal(mt_layout_rank_index(r, 4, 9), 3);
    assert_int_equal(mt_layout_rank_index(r, 4, 4), 2);  /* absent: where it would go */
    assert_int_equal(mt_layout_rank_index(r, 4, 10), 4); /* past every rank */
    assert_int_equal(mt_layout_rank_index(r, 0, 1), 0);
}

/* Four ranks of 10, 0, 7 and 20 bytes after a header of 100, their sizes
 * known in two rounds: ranks 1 and 3 first (nothing placed: rank 0's size
 * is missing), then 0 and 2 (all placed). */
static void test_rounds_by_hand(void **state)
{
    (void)state;
    mt_layout_t l;
    assert_int_equal(mt_layout_init(&l, 4, 100), MT_OK);
    uint64_t off = 0;
    uint64_t round1[4] = {0, 0 + 1, 0, 20 + 1};
    mt_layout_round(&l, round1);
    for (size_t g = 0; g < 4; g++) {
        assert_int_equal(round1[g], 0); /* zeroed for the next round */
        assert_false(mt_layout_placed(&l, g, &off));
    }
    assert_int_equal(l.placed, 0);
    assert_int_equal(l.end, 100);
    uint64_t round2[4] = {10 + 1, 0, 7 + 1, 0};
    mt_layout_round(&l, round2);
    assert_int_equal(l.placed, 4);
    const uint64_t want[4] = {100, 110, 110, 117}; /* the empty rank 1 at rank 2's offset */
    for (size_t g = 0; g < 4; g++) {
        assert_true(mt_layout_placed(&l, g, &off));
        assert_int_equal(off, want[g]);
    }
    assert_int_equal(l.end, 137); /* the footer: 100 + 10 + 0 + 7 + 20 */
    mt_layout_free(&l);
    mt_layout_free(&l); /* freed twice: nothing */
}

/* The plain write: every size in one round. */
static void test_one_round(void **state)
{
    (void)state;
    mt_layout_t l;
    assert_int_equal(mt_layout_init(&l, 3, 5), MT_OK);
    uint64_t round[3] = {4 + 1, 0 + 1, 6 + 1};
    mt_layout_round(&l, round);
    uint64_t off = 0;
    assert_true(mt_layout_placed(&l, 0, &off));
    assert_int_equal(off, 5);
    assert_true(mt_layout_placed(&l, 1, &off));
    assert_int_equal(off, 9);
    assert_true(mt_layout_placed(&l, 2, &off));
    assert_int_equal(off, 9);
    assert_int_equal(l.end, 15);
    mt_layout_free(&l);

    assert_int_equal(mt_layout_init(&l, 0, 42), MT_OK); /* no rank: the footer after the header */
    mt_layout_round(&l, round);
    assert_false(mt_layout_placed(&l, 0, &off));
    assert_int_equal(l.end, 42);
    mt_layout_free(&l);
}

static uint64_t lcg(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

/* P processes hold n ranks (shuffled among them, each process's own in
 * rank order, as merged_io.c sorts them); in round r each compresses its
 * r-th rank (a part of random size, filled with a byte of its rank), the
 * round's sizes are summed, and each process writes its held parts once
 * placed. The file must be the header and the parts in rank order. */
static void test_simulated_processes(void **state)
{
    (void)state;
    uint64_t seed = 12345;
    for (int trial = 0; trial < 200; trial++) {
        size_t n = 1 + lcg(&seed) % 40, procs = 1 + lcg(&seed) % 6;
        uint64_t header = lcg(&seed) % 50, size[40], total = header;
        size_t owner[40], mine[6][40], n_mine[6] = {0};
        for (size_t g = 0; g < n; g++) {
            size[g] = lcg(&seed) % 4 ? lcg(&seed) % 300 : 0; /* a quarter empty */
            owner[g] = lcg(&seed) % procs;
            mine[owner[g]][n_mine[owner[g]]++] = g;
            total += size[g];
        }
        /* the expected file: header 'H', then each rank's bytes */
        unsigned char *want = malloc(total + 1), *file = malloc(total + 1);
        assert_non_null(want);
        assert_non_null(file);
        memset(want, 'H', header);
        memset(file, 0, total + 1);
        memset(file, 'H', header);
        uint64_t at = header;
        for (size_t g = 0; g < n; g++) {
            memset(want + at, (int)('a' + g % 26), size[g]);
            at += size[g];
        }
        mt_layout_t l;
        assert_int_equal(mt_layout_init(&l, n, header), MT_OK);
        bool written[40] = {false};
        size_t rounds = 0;
        for (size_t p = 0; p < procs; p++)
            rounds = n_mine[p] > rounds ? n_mine[p] : rounds;
        for (size_t r = 0; r < rounds; r++) {
            uint64_t round[40] = {0};
            for (size_t p = 0; p < procs; p++)
                if (r < n_mine[p])
                    round[mine[p][r]] += size[mine[p][r]] + 1; /* the sum over processes */
            mt_layout_round(&l, round);
            for (size_t g = 0; g < n; g++) {
                uint64_t off;
                bool compressed = false;
                for (size_t k = 0; k <= r && k < n_mine[owner[g]]; k++)
                    compressed |= mine[owner[g]][k] == g;
                if (!written[g] && compressed && mt_layout_placed(&l, g, &off)) {
                    assert_true(off + size[g] <= total);
                    memset(file + off, (int)('a' + g % 26), size[g]);
                    written[g] = true;
                }
            }
        }
        for (size_t g = 0; g < n; g++)
            assert_true(written[g]);
        assert_int_equal(l.end, total);
        assert_memory_equal(file, want, total);
        mt_layout_free(&l);
        free(want);
        free(file);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rank_index),
        cmocka_unit_test(test_rounds_by_hand),
        cmocka_unit_test(test_one_round),
        cmocka_unit_test(test_simulated_processes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
