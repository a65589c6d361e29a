/* Input discovery without MPI (discover.h): a directory walked with and
 * without -r (each file once under its first name, links to a directory
 * read already listed, not followed), mergetrace's own outputs left out,
 * a merged trace named on the command line split into its ranks, Flight
 * Recorder dumps put apart, the errors, the sharing by size, parts and a
 * file's identity. */
#define _DEFAULT_SOURCE /* symlink, mkfifo, realpath, setenv */
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

#include "mergetrace/mergetrace.h"
#include "test_util.h"

#define OWN MT_SAMPLES_DIR "/../tests/data/own"
#define FR MT_SAMPLES_DIR "/../tests/data/fr-skip"

static char root[512];

static void put(const char *rel, const char *text)
{
    tu_put(root, rel, text);
}

static const char *base_of(const char *p)
{
    return mt_discover_base(p);
}

/* root/: a.json, link.json -> a.json, notes.txt, .hidden.json, sub/b.json,
 * subl -> sub, empty/ */
static int setup(void **state)
{
    (void)state;
    snprintf(root, sizeof root, "%s/discover_%d", MT_TEST_TMP, (int)getpid());
    char cmd[1100];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(mkdir(root, 0755), 0);
    char p[1024];
    snprintf(p, sizeof p, "%s/sub", root);
    assert_int_equal(mkdir(p, 0755), 0);
    snprintf(p, sizeof p, "%s/empty", root);
    assert_int_equal(mkdir(p, 0755), 0);
    put("a.json", "{\"traceEvents\":[]}");
    put("notes.txt", "not an input");
    put(".hidden.json", "{}");
    put("sub/b.json", "{\"traceEvents\":[]}");
    snprintf(p, sizeof p, "%s/link.json", root);
    assert_int_equal(symlink("a.json", p), 0);
    snprintf(p, sizeof p, "%s/subl", root);
    assert_int_equal(symlink("sub", p), 0);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[1100];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_walk(void **state)
{
    (void)state;
    char msg[1400] = "";
    char *paths[] = {root};
    mt_discover_list_t l;
    /* without -r: a.json once (link.json is the same file, a later name) */
    assert_int_equal(mt_discover_collect(paths, 1, false, &l, msg, sizeof msg), 0);
    assert_int_equal(l.n, 1);
    assert_string_equal(base_of(l.files[0].path), "a.json");
    assert_true(l.files[0].from_dir);
    assert_int_equal(l.files[0].bytes, 18);
    assert_int_equal(l.files[0].kind, MT_DISCOVER_FILE);
    assert_int_equal(l.files[0].part, -1);
    assert_int_equal(l.n_skipped, 0);
    mt_discover_free(&l);
    assert_null(l.files);

    /* -r: sub/b.json too; subl is a link to sub, read already */
    assert_int_equal(mt_discover_collect(paths, 1, true, &l, msg, sizeof msg), 0);
    assert_int_equal(l.n, 2);
    assert_string_equal(base_of(l.files[0].path), "a.json");
    assert_non_null(strstr(l.files[1].path, "/sub/b.json"));
    assert_int_equal(l.n_skipped, 1);
    assert_non_null(strstr(l.skipped[0].path, "/subl"));
    assert_non_null(l.skipped[0].first);
    assert_non_null(strstr(l.skipped[0].first, "/sub"));
    assert_string_equal(l.skipped[0].why, "a link to a directory read already: not followed");
    mt_discover_free(&l);

    /* a file named and found in its directory: once, named explicitly */
    char a[1024];
    snprintf(a, sizeof a, "%s/a.json", root);
    char *two[] = {root, a};
    assert_int_equal(mt_discover_collect(two, 2, false, &l, msg, sizeof msg), 0);
    assert_int_equal(l.n, 1);
    assert_false(l.files[0].from_dir);
    mt_discover_free(&l);
}

/* tests/data/own: two traces, and mergetrace's merged trace, report.json
 * and timings.json (left out, each with what it is); the merged trace
 * named on the command line is read back: one input per rank (0 and 1),
 * each with half of its 1267 bytes. */
static void test_own_outputs_and_merged(void **state)
{
    (void)state;
    char msg[1400] = "";
    char *paths[] = {OWN};
    mt_discover_list_t l;
    assert_int_equal(mt_discover_collect(paths, 1, false, &l, msg, sizeof msg), 0);
    assert_int_equal(l.n, 2);
    assert_string_equal(base_of(l.files[0].path), "rank-0.json");
    assert_string_equal(base_of(l.files[1].path), "rank-1.json");
    assert_int_equal(l.n_skipped, 3);
    assert_string_equal(base_of(l.skipped[0].path), "merged.json.gz");
    assert_string_equal(l.skipped[0].why, "a merged trace written by mergetrace");
    assert_string_equal(base_of(l.skipped[1].path), "report.json");
    assert_string_equal(l.skipped[1].why, "a report.json written by mergetrace");
    assert_string_equal(base_of(l.skipped[2].path), "timings.json");
    assert_null(l.skipped[2].first);
    mt_discover_free(&l);

    char *merged[] = {OWN "/merged.json.gz"};
    assert_true(mt_discover_all_merged(merged, 1));
    assert_false(mt_discover_all_merged(paths, 1));
    assert_int_equal(mt_discover_collect(merged, 1, false, &l, msg, sizeof msg), 0);
    assert_int_equal(l.n, 2);
    for (int r = 0; r < 2; r++) {
        int64_t part = -2;
        assert_int_equal(mt_discover_part(l.files[r].path, &part), MT_DISCOVER_MERGED_PART);
        assert_int_equal(part, r);
        assert_int_equal(l.files[r].kind, MT_DISCOVER_MERGED_PART);
        assert_int_equal(l.files[r].part, r);
        assert_int_equal(l.files[r].bytes, 1267 / 2);
        assert_false(l.files[r].from_dir);
    }
    /* a part's identity: the file's real path with the part's suffix */
    struct stat st;
    char *id = mt_discover_identity(l.files[1].path, &st);
    char *real = realpath(OWN "/merged.json.gz", NULL);
    assert_non_null(id);
    assert_non_null(real);
    assert_int_equal(strncmp(id, real, strlen(real)), 0);
    assert_string_equal(id + strlen(real), "#rank1");
    assert_int_equal(st.st_size, 1267);
    free(id);
    free(real);
    int64_t part = 0;
    assert_int_equal(mt_discover_part(OWN "/rank-0.json", &part), MT_DISCOVER_FILE);
    assert_int_equal(part, -1);
    mt_discover_free(&l);

    /* nothing but own outputs: an error naming one */
    char *only[] = {OWN "/report.json"};
    assert_int_equal(mt_discover_collect(only, 1, false, &l, msg, sizeof msg), 2);
    assert_non_null(strstr(msg, "report.json: a report.json written by mergetrace, not a trace to read"));
    mt_discover_free(&l);
}

/* Flight Recorder dumps have no extension: found by their first bytes and
 * put apart, in path order. */
static void test_fr_dumps(void **state)
{
    (void)state;
    char msg[1400] = "";
    char *paths[] = {FR};
    mt_discover_list_t l;
    assert_int_equal(mt_discover_collect(paths, 1, false, &l, msg, sizeof msg), 0);
    assert_int_equal(l.n, 0);
    assert_int_equal(l.n_fr, 4);
    for (int i = 0; i < 4; i++) {
        char want[32];
        snprintf(want, sizeof want, "comm_lib_trace_rank_%d", i);
        assert_string_equal(base_of(l.fr[i].path), want);
    }
    mt_discover_free(&l);
}

static void test_errors(void **state)
{
    (void)state;
    char msg[1400] = "", p[1024];
    mt_discover_list_t l;
    snprintf(p, sizeof p, "%s/nothere.json", root);
    char *missing[] = {p};
    assert_int_equal(mt_discover_collect(missing, 1, false, &l, msg, sizeof msg), 1);
    assert_non_null(strstr(msg, "nothere.json: No such file or directory"));
    mt_discover_free(&l);

    snprintf(p, sizeof p, "%s/empty", root);
    char *empty[] = {p};
    assert_int_equal(mt_discover_collect(empty, 1, false, &l, msg, sizeof msg), 2);
    assert_non_null(strstr(msg, "no *.json, *.jsonl or *.log files (or .gz) or *.sqlite exports in this directory "
                                "(use -r for sub-directories)"));
    mt_discover_free(&l);

    snprintf(p, sizeof p, "%s/pipe.json", root);
    assert_int_equal(mkfifo(p, 0600), 0);
    char *pipe[] = {p};
    assert_int_equal(mt_discover_collect(pipe, 1, false, &l, msg, sizeof msg), 2);
    assert_non_null(strstr(msg, "pipe.json: not a regular file"));
    mt_discover_free(&l);
    char *dir[] = {root}; /* found in a directory, a pipe named like a trace is an error too */
    assert_int_equal(mt_discover_collect(dir, 1, false, &l, msg, sizeof msg), 2);
    assert_non_null(strstr(msg, "pipe.json: not a regular file"));
    mt_discover_free(&l);
    unlink(p);
}

/* Largest first onto the least-loaded process (each file counts its bytes
 * + 1): 5 -> p0 (6); 3 -> p1 (4); 3 -> p1 (8, as 4 < 6); 1 -> p0 (8). */
static void test_assign(void **state)
{
    (void)state;
    mt_discover_file_t f[4] = {{.path = "a", .bytes = 1}, {.path = "b", .bytes = 3}, {.path = "c", .bytes = 5},
                               {.path = "d", .bytes = 3}};
    mt_discover_list_t l = {.files = f, .n = 4};
    mt_discover_assign(&l, 2);
    assert_int_equal(f[0].owner, 0);
    assert_int_equal(f[1].owner, 1);
    assert_int_equal(f[2].owner, 0);
    assert_int_equal(f[3].owner, 1);
    mt_discover_assign(&l, 1);
    for (int i = 0; i < 4; i++)
        assert_int_equal(f[i].owner, 0);
}

static void test_node(void **state)
{
    (void)state;
    char host[64];
    assert_int_equal(setenv("MERGETRACE_NODE", "node-7", 1), 0);
    mt_discover_node(host, sizeof host);
    assert_string_equal(host, "node-7");
    mt_discover_node(host, 4); /* cut, always terminated */
    assert_string_equal(host, "nod");
    assert_int_equal(unsetenv("MERGETRACE_NODE"), 0);
    char want[64] = "";
    assert_int_equal(gethostname(want, sizeof want - 1), 0);
    mt_discover_node(host, sizeof host);
    assert_string_equal(host, want);
}

/* --local: records as three processes listed them. x.json is one file
 * on node a, listed by processes 0 and 1 (same identity): kept once, with
 * process 1, which loads less so far (0 also listed its own 100-byte
 * y.json), named as the first absolute name, found in a directory only as
 * both found it. The same real path on node b (process 2) is another file;
 * a record without a real path equals no other. */
static void test_share_node(void **state)
{
    (void)state;
    static const char ka[] = "a\0/data/x.json", kb[] = "b\0/data/x.json", ky[] = "a\0/data/y.json",
                      kz[] = "a\0";
    mt_discover_rec_t rec[5] = {
        {.f = {.path = strdup("/data/x.json"), .bytes = 50, .owner = 0, .from_dir = true}, .key = ka, .dev = 1,
         .ino = 7, .mtime_ns = 5},
        {.f = {.path = strdup("/mnt/../data/x.json"), .bytes = 50, .owner = 1, .from_dir = false}, .key = ka,
         .dev = 1, .ino = 7, .mtime_ns = 5},
        {.f = {.path = strdup("/data/y.json"), .bytes = 100, .owner = 0, .from_dir = true}, .key = ky, .dev = 1,
         .ino = 8, .mtime_ns = 5},
        {.f = {.path = strdup("/data/x.json"), .bytes = 50, .owner = 2, .from_dir = true}, .key = kb, .dev = 1,
         .ino = 7, .mtime_ns = 5},
        {.f = {.path = strdup("z.json"), .bytes = 1, .owner = 1, .from_dir = true}, .key = kz, .dev = 0, .ino = 0},
    };
    long kept = mt_discover_share_node(rec, 5, 3);
    assert_int_equal(kept, 4);
    int seen_x_a = 0, seen_x_b = 0;
    for (long i = 0; i < kept; i++) {
        const mt_discover_rec_t *r = &rec[i];
        if (!strcmp(r->key, "a") && !strcmp(r->key + 2, "/data/x.json")) {
            seen_x_a++;
            assert_int_equal(r->f.owner, 1);
            assert_string_equal(r->f.path, "/data/x.json"); /* the first name in path order */
            assert_false(r->f.from_dir);
        } else if (!strcmp(r->key, "b")) {
            seen_x_b++;
            assert_int_equal(r->f.owner, 2);
        }
    }
    assert_int_equal(seen_x_a, 1);
    assert_int_equal(seen_x_b, 1);
    for (long i = 0; i < kept; i++)
        free(rec[i].f.path);
}

/* The parts of one Nsight Systems export in a row, and who owns them:
 * by hand, a.sqlite's three parts (two on process 1), then b.json. */
/* The largest input's JSON bytes: the largest on disk, a gzip one by
 * mt_input_size_hint (tests/data/own: the traces 1,084 bytes each;
 * merged.json.gz 1,267 on disk, 3,293 inflated by zcat | wc -c, so the
 * hint's floor of 8 times the compressed bytes, 10,136, wins). */
static void test_largest(void **state)
{
    (void)state;
    mt_discover_file_t f[3] = {
        {.path = OWN "/rank-0.json", .bytes = 1084, .part = -1},
        {.path = OWN "/rank-1.json", .bytes = 1084, .part = -1},
        {.path = OWN "/merged.json.gz", .bytes = 1267, .part = -1},
    };
    mt_discover_list_t l = {.files = f, .n = 2};
    assert_int_equal(mt_discover_largest_json(&l), 1084);
    l.n = 3;
    assert_int_equal(mt_discover_largest_json(&l), 8 * 1267);
    f[2].bytes = 1000; /* smaller on disk: not looked at */
    assert_int_equal(mt_discover_largest_json(&l), 1084);
    l.n = 0;
    assert_int_equal(mt_discover_largest_json(&l), 0);
}

static void test_part_run(void **state)
{
    (void)state;
    mt_discover_file_t f[5] = {
        {.path = "/t/a.sqlite#pid11", .owner = 0}, {.path = "/t/a.sqlite#pid12", .owner = 1},
        {.path = "/t/a.sqlite#pid13", .owner = 1}, {.path = "/t/b.json", .owner = 1},
        {.path = "/t/c.sqlite#pid1", .owner = 0},
    };
    mt_discover_list_t l = {.files = f, .n = 5};
    size_t mine = 9;
    assert_int_equal(mt_discover_part_run(&l, 0, 1, &mine), 3);
    assert_int_equal(mine, 2);
    assert_int_equal(mt_discover_part_run(&l, 0, 0, &mine), 3);
    assert_int_equal(mine, 1);
    assert_int_equal(mt_discover_part_run(&l, 1, 2, &mine), 2); /* from the second part on */
    assert_int_equal(mine, 0);
    assert_int_equal(mt_discover_part_run(&l, 3, 1, &mine), 1);
    assert_int_equal(mine, 1);
    assert_int_equal(mt_discover_part_run(&l, 4, 1, &mine), 1); /* another export's part, alone */
    assert_int_equal(mine, 0);
}

/* What a --baseline that is no report is read as. */
static void test_trace_head(void **state)
{
    (void)state;
    assert_true(mt_discover_is_trace_head("SQLite format 3\0rest", 20));
    assert_false(mt_discover_is_trace_head("SQLite format 3", 15));
    assert_true(mt_discover_is_trace_head("\x1f\x8b\x08", 3));
    assert_true(mt_discover_is_trace_head("{\"schemaVersion\":1,\"traceEvents\":[", 35));
    assert_false(mt_discover_is_trace_head("{\"generator\":\"mergetrace\"}", 26));
    char big[5000];
    memset(big, ' ', sizeof big);
    memcpy(big + 4090, "\"traceEvents\"", 13); /* past the first 4 KiB */
    assert_false(mt_discover_is_trace_head(big, sizeof big));
    memcpy(big + 4000, "\"traceEvents\"", 13);
    assert_true(mt_discover_is_trace_head(big, sizeof big));
}

/* What a --baseline is: tests/data/own's report.json (named, or its
 * directory), a directory without one, a trace, JSON that is neither, a
 * missing path. */
static void test_baseline(void **state)
{
    (void)state;
    char file[4096], msg[5000], p[1024];
    mt_discover_baseline_t kind;
    mt_buf_t text = {0};
    size_t len = 0;
    char *want = read_file(OWN "/report.json", &len);
    assert_non_null(want);
    assert_int_equal(mt_discover_baseline_read(OWN "/report.json", file, sizeof file, &kind, &text, msg, sizeof msg), 0);
    assert_int_equal(kind, MT_DISCOVER_BASELINE_REPORT);
    assert_string_equal(file, OWN "/report.json");
    assert_int_equal(text.len, len);
    assert_memory_equal(text.data, want, len);
    mt_buf_free(&text);
    assert_int_equal(mt_discover_baseline_read(OWN, file, sizeof file, &kind, &text, msg, sizeof msg), 0);
    assert_int_equal(kind, MT_DISCOVER_BASELINE_REPORT);
    assert_string_equal(file, OWN "/report.json");
    assert_int_equal(text.len, len);
    mt_buf_free(&text);
    free(want);

    snprintf(p, sizeof p, "%s/empty", root);
    assert_int_equal(mt_discover_baseline_read(p, file, sizeof file, &kind, &text, msg, sizeof msg), 0);
    assert_int_equal(kind, MT_DISCOVER_BASELINE_TRACE_DIR);
    assert_int_equal(text.len, 0);
    assert_int_equal(mt_discover_baseline_read(OWN "/rank-0.json", file, sizeof file, &kind, &text, msg, sizeof msg), 0);
    assert_int_equal(kind, MT_DISCOVER_BASELINE_TRACE_FILE);
    assert_int_equal(text.len, 0);

    put("notes.json", "{\"a\": 1}");
    snprintf(p, sizeof p, "%s/notes.json", root);
    assert_int_equal(mt_discover_baseline_read(p, file, sizeof file, &kind, &text, msg, sizeof msg), 2);
    assert_int_equal(strncmp(msg, "--baseline: ", 12), 0);
    assert_non_null(strstr(msg, "notes.json"));
    assert_int_equal(text.len, 0);
    snprintf(p, sizeof p, "%s/none", root);
    assert_int_equal(mt_discover_baseline_read(p, file, sizeof file, &kind, &text, msg, sizeof msg), 2);
    char w[1200];
    snprintf(w, sizeof w, "--baseline %s: No such file or directory", p);
    assert_string_equal(msg, w);
    mt_buf_free(&text);

    /* for a run into out: a report read; traces analysed into
     * out/baseline/report.json, but not with --local */
    bool traces = true;
    assert_int_equal(mt_discover_baseline_plan(OWN, "out", NULL, file, sizeof file, &traces, &text, msg, sizeof msg), 0);
    assert_false(traces);
    assert_string_equal(file, OWN "/report.json");
    assert_true(text.len > 0);
    mt_buf_free(&text);
    snprintf(p, sizeof p, "%s/empty", root);
    assert_int_equal(mt_discover_baseline_plan(p, "out", NULL, file, sizeof file, &traces, &text, msg, sizeof msg), 0);
    assert_true(traces);
    assert_string_equal(file, "out/baseline/report.json");
    assert_null(text.data); /* nothing kept */
    assert_int_equal(mt_discover_baseline_plan(p, "out", "--local", file, sizeof file, &traces, &text, msg, sizeof msg),
                     3);
    assert_false(traces);
    snprintf(w, sizeof w, "--baseline %s: a directory of traces as the baseline does not go with --local", p);
    assert_string_equal(msg, w);
    assert_int_equal(mt_discover_baseline_plan(OWN "/rank-0.json", "out", "--timeline-map", file, sizeof file, &traces,
                                               &text, msg, sizeof msg),
                     3);
    assert_string_equal(msg, "--baseline " OWN "/rank-0.json: a trace as the baseline does not go with --timeline-map");
    mt_buf_free(&text); /* the usage error's: the caller's to free */
    assert_int_equal(mt_discover_baseline_plan(OWN "/rank-0.json", "out", NULL, file, sizeof file, &traces, &text, msg,
                                               sizeof msg),
                     0);
    assert_null(text.data);
    snprintf(p, sizeof p, "%s/none", root);
    assert_int_equal(mt_discover_baseline_plan(p, "out", NULL, file, sizeof file, &traces, &text, msg, sizeof msg), 2);
    assert_false(traces);
    mt_buf_free(&text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_walk),
        cmocka_unit_test(test_own_outputs_and_merged),
        cmocka_unit_test(test_fr_dumps),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_assign),
        cmocka_unit_test(test_node),
        cmocka_unit_test(test_share_node),
        cmocka_unit_test(test_part_run),
        cmocka_unit_test(test_largest),
        cmocka_unit_test(test_trace_head),
        cmocka_unit_test(test_baseline),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
