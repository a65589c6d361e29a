/* How this process was started (mergetrace/launcher.h), with the
 * environment set by hand: each launcher's variables, MERGETRACE_MPI both
 * ways, the rank and size they give, and the worker count against
 * hand-worked limits. */
#define _POSIX_C_SOURCE 200809L /* setenv, unsetenv */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "mergetrace/launcher.h"

static const char *const all_vars[] = {"MERGETRACE_MPI", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "PMIX_RANK",
                                       "PMI_RANK",       "PMI_SIZE",             "PMI_FD",               "PMI_PORT",
                                       "SLURM_PROCID",   "SLURM_STEP_ID",        "SLURM_STEP_NUM_TASKS", "PALS_RANKID",
                                       "ALPS_APP_PE"};

static void clear(void)
{
    for (size_t i = 0; i < sizeof all_vars / sizeof *all_vars; i++)
        unsetenv(all_vars[i]);
}

static void test_launchers(void **state)
{
    (void)state;
    clear();
    assert_false(mt_launcher_mpi());
    assert_int_equal(mt_launcher_rank(), 0);
    assert_int_equal(mt_launcher_size(), 1);
    assert_int_equal(mt_launcher_env_size(), 0);

    /* Open MPI's mpirun: rank 3 of 8 */
    setenv("OMPI_COMM_WORLD_SIZE", "8", 1);
    setenv("OMPI_COMM_WORLD_RANK", "3", 1);
    assert_true(mt_launcher_mpi());
    assert_int_equal(mt_launcher_rank(), 3);
    assert_int_equal(mt_launcher_size(), 8);
    /* forced off: one process, though the launcher's size stays known */
    setenv("MERGETRACE_MPI", "0", 1);
    assert_false(mt_launcher_mpi());
    assert_int_equal(mt_launcher_size(), 1);
    assert_int_equal(mt_launcher_env_size(), 8);
    /* an empty value is no value */
    setenv("MERGETRACE_MPI", "", 1);
    assert_true(mt_launcher_mpi());
    clear();

    /* a Slurm batch script is no job step; srun is */
    setenv("SLURM_PROCID", "5", 1);
    assert_false(mt_launcher_mpi());
    setenv("SLURM_STEP_ID", "0", 1);
    setenv("SLURM_STEP_NUM_TASKS", "16", 1);
    assert_true(mt_launcher_mpi());
    assert_int_equal(mt_launcher_rank(), 5);
    assert_int_equal(mt_launcher_size(), 16);
    clear();

    /* PMIx alone names no size */
    setenv("PMIX_RANK", "2", 1);
    assert_true(mt_launcher_mpi());
    assert_int_equal(mt_launcher_rank(), 2);
    assert_int_equal(mt_launcher_size(), 0);
    clear();

    /* the others, each alone */
    static const char *const one[] = {"PMI_RANK", "PMI_SIZE", "PMI_FD", "PMI_PORT", "PALS_RANKID", "ALPS_APP_PE"};
    for (size_t i = 0; i < sizeof one / sizeof *one; i++) {
        setenv(one[i], "1", 1);
        assert_true(mt_launcher_mpi());
        clear();
    }
    /* forced on without a launcher (an Open MPI singleton) */
    setenv("MERGETRACE_MPI", "1", 1);
    assert_true(mt_launcher_mpi());
    assert_int_equal(mt_launcher_size(), 0);
    clear();
}

static void test_workers(void **state)
{
    (void)state;
    int cpus = mt_launcher_cpus();
    assert_true(cpus >= 1);
    assert_int_equal(mt_launcher_workers(8, 100, 0, 0), 8);          /* as asked */
    assert_int_equal(mt_launcher_workers(8, 3, 0, 0), 3);            /* no more than files */
    assert_int_equal(mt_launcher_workers(8, 100, 1000, 2500), 2);    /* 2,500 / 1,000 fit */
    assert_int_equal(mt_launcher_workers(8, 100, 1000, 500), 1);     /* at least one */
    assert_int_equal(mt_launcher_workers(8, 0, 0, 0), 1);            /* no file: still one */
    assert_int_equal(mt_launcher_workers(9000, 10000, 0, 0), 4096);  /* at most 4096 */
    assert_int_equal(mt_launcher_workers(0, 100000, 0, 0), cpus < 4096 ? cpus : 4096); /* 0: the CPUs */
    assert_int_equal(mt_launcher_workers(8, 100, 1000, 0), 8);       /* memory unknown */
}

/* -j, else MERGETRACE_JOBS when it is a whole number 0-4096, else 0. */
static void test_jobs(void **state)
{
    (void)state;
    unsetenv("MERGETRACE_JOBS");
    assert_int_equal(mt_launcher_jobs(-1), 0);
    assert_int_equal(mt_launcher_jobs(3), 3);
    setenv("MERGETRACE_JOBS", "7", 1);
    assert_int_equal(mt_launcher_jobs(-1), 7);
    assert_int_equal(mt_launcher_jobs(2), 2); /* -j wins */
    assert_int_equal(mt_launcher_jobs(0), 0);
    static const char *const aside[] = {"", "x", "7x", "-1", "4097", " "};
    for (size_t i = 0; i < sizeof aside / sizeof *aside; i++) {
        setenv("MERGETRACE_JOBS", aside[i], 1);
        assert_int_equal(mt_launcher_jobs(-1), 0);
    }
    setenv("MERGETRACE_JOBS", "4096", 1);
    assert_int_equal(mt_launcher_jobs(-1), 4096);
    setenv("MERGETRACE_JOBS", "0", 1);
    assert_int_equal(mt_launcher_jobs(-1), 0);
    unsetenv("MERGETRACE_JOBS");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_launchers),
        cmocka_unit_test(test_workers),
        cmocka_unit_test(test_jobs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
