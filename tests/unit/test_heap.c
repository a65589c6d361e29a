/* The memory figures of heap.h without MPI: the cgroup room against
 * hand-made cgroup v1 and v2 trees (limit less usage, the least over the
 * levels, "max" and v1's "no limit"), MemAvailable and the resident set
 * against /proc read here independently, the peak against the resident
 * set after touching memory, and the policy calls that must not break a
 * process's allocations. */
#define _DEFAULT_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/cgroup.h"
#include "mergetrace/mergetrace.h"
#include "test_util.h"

static char root[512];

static void put(const char *rel, const char *text)
{
    char p[1024], cmd[2200];
    snprintf(p, sizeof p, "%s/%s", root, rel);
    snprintf(cmd, sizeof cmd, "mkdir -p \"$(dirname '%s')\"", p);
    assert_int_equal(system(cmd), 0);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int setup(void **state)
{
    (void)state;
    return tu_tmpdir(root, sizeof root, "heap");
}

static int teardown(void **state)
{
    (void)state;
    return tu_tmpdir_remove(root);
}

static uint64_t room(void)
{
    char self[1024], sys[1024];
    snprintf(self, sizeof self, "%s/self_cgroup", root);
    snprintf(sys, sizeof sys, "%s/sys", root);
    return mt_heap_cgroup_room(self, sys);
}

/* v2: /job/step: the step has no limit ("max"), the job 1000 with 400
 * used, the root 5000 with 4900 used: the least room is the root's 100. */
static void test_cgroup_v2(void **state)
{
    (void)state;
    put("self_cgroup", "0::/job/step\n");
    put("sys/job/step/memory.max", "max\n");
    put("sys/job/step/memory.current", "300\n");
    put("sys/job/memory.max", "1000\n");
    put("sys/job/memory.current", "400\n");
    assert_int_equal(room(), 600);
    put("sys/memory.max", "5000\n");
    put("sys/memory.current", "4900\n");
    assert_int_equal(room(), 100);
    put("sys/job/memory.current", "1200\n"); /* over its limit: nothing left */
    assert_int_equal(room(), 0);
}

/* v1's memory controller wins over a v2 line; its "no limit" (about
 * 2^63) is none. */
static void test_cgroup_v1(void **state)
{
    (void)state;
    put("self_cgroup", "0::/ignored\n5:cpu,memory:/slurm/job7\n3:pids:/x\n");
    put("sys/ignored/memory.max", "10\n");
    put("sys/ignored/memory.current", "1\n");
    put("sys/memory/slurm/job7/memory.limit_in_bytes", "8192\n");
    put("sys/memory/slurm/job7/memory.usage_in_bytes", "4096\n");
    put("sys/memory/slurm/memory.limit_in_bytes", "9223372036854771712\n");
    put("sys/memory/slurm/memory.usage_in_bytes", "100000\n");
    assert_int_equal(room(), 4096);
}

static void test_cgroup_none(void **state)
{
    (void)state;
    assert_true(room() == UINT64_MAX); /* no cgroup file */
    put("self_cgroup", "0::/\n");
    assert_true(room() == UINT64_MAX); /* nothing readable */
    put("sys/memory.max", "max\n");
    put("sys/memory.current", "12\n");
    assert_true(room() == UINT64_MAX);
}

/* A number from a "Key: N kB" line of a /proc file, in bytes. */
static uint64_t proc_kb(const char *file, const char *key)
{
    FILE *f = fopen(file, "r");
    char line[256];
    unsigned long long v = 0;
    size_t kl = strlen(key);
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, key, kl) && sscanf(line + kl, " %llu", &v) == 1)
            break;
    if (f)
        fclose(f);
    return (uint64_t)v * 1024;
}

static void test_process(void **state)
{
    (void)state;
    if (access("/proc/self/status", R_OK) != 0)
        skip();
    mt_heap_setup();
    /* touch 64 MiB: the resident set and the peak grow by about that */
    size_t n = (size_t)64 << 20;
    char *p = malloc(n);
    assert_non_null(p);
    memset(p, 1, n);
    uint64_t rss = mt_heap_resident(), vm = proc_kb("/proc/self/status", "VmRSS:");
    assert_true(rss >= n);
    assert_true(rss + ((uint64_t)8 << 20) >= vm && vm + ((uint64_t)8 << 20) >= rss);
    uint64_t peak = mt_heap_peak(), hwm = proc_kb("/proc/self/status", "VmHWM:");
    assert_true(peak >= n && peak + ((uint64_t)8 << 20) >= rss); /* statm and getrusage count a little apart */
    assert_true(peak + ((uint64_t)8 << 20) >= hwm && hwm + ((uint64_t)8 << 20) >= peak);
    free(p);
    mt_heap_release((uint64_t)128 << 20); /* over the trim size: trims now */
    mt_heap_give_back();
#if !defined(__SANITIZE_ADDRESS__)
    assert_true(mt_heap_resident() < rss); /* (a sanitizer keeps freed blocks in quarantine) */
#endif
    uint64_t avail = mt_heap_available(), mem = proc_kb("/proc/meminfo", "MemAvailable:");
    assert_true(avail > 0);
    assert_true(avail <= mem + ((uint64_t)256 << 20)); /* never more than the machine's (it moves meanwhile) */
    char *q = malloc(1 << 20); /* the heap still serves */
    assert_non_null(q);
    memset(q, 2, 1 << 20);
    free(q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_cgroup_v2, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cgroup_v1, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cgroup_none, setup, teardown),
        cmocka_unit_test(test_process),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
