/* The output directory without MPI (outdir.h): mkdir -p and its errors,
 * an output that is an input (or the file of an input's part), the
 * temporary names and the renaming mark, the repair after a run stopped
 * while renaming, dead temporaries, and the removal of outputs a run does
 * not write, each against files laid out by hand; the tables of the
 * names a run writes and owns. */
#define _DEFAULT_SOURCE /* realpath */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "mergetrace/mergetrace.h"
#include "test_util.h"

static char root[512];

static void put(const char *rel, const char *text)
{
    tu_put(root, rel, text);
}

static bool there(const char *rel)
{
    char p[1024];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", root, rel);
    return lstat(p, &st) == 0;
}

static int setup(void **state)
{
    (void)state;
    return tu_tmpdir(root, sizeof root, "outdir");
}

static int teardown(void **state)
{
    (void)state;
    return tu_tmpdir_remove(root);
}

/* A process id that was this test's child and has exited (reaped). */
static long dead_pid(void)
{
    pid_t p = fork();
    assert_true(p >= 0);
    if (p == 0)
        _exit(0);
    int ws;
    assert_int_equal(waitpid(p, &ws, 0), p);
    return (long)p;
}

typedef struct notes {
    char text[4][1400];
    int n;
} notes_t;

static void note(void *ctx, const char *line)
{
    notes_t *n = ctx;
    assert_true(n->n < 4);
    snprintf(n->text[n->n++], sizeof n->text[0], "%s", line);
}

static void test_make(void **state)
{
    (void)state;
    char d[1100], msg[1400] = "";
    snprintf(d, sizeof d, "%s/a//b/c", root);
    assert_int_equal(mt_outdir_make(d, msg, sizeof msg), 0);
    assert_true(there("a/b/c"));
    assert_int_equal(mt_outdir_make(d, msg, sizeof msg), 0); /* exists: fine */
    put("file", "x");
    snprintf(d, sizeof d, "%s/file/sub", root);
    assert_int_equal(mt_outdir_make(d, msg, sizeof msg), 1);
    char want[1400];
    snprintf(want, sizeof want, "%s/file: exists and is not a directory", root);
    assert_string_equal(msg, want);
}

static void test_is_input(void **state)
{
    (void)state;
    put("in.json", "{}");
    put("merged.json", "{}");
    put("other.json", "{}");
    char p0[1100], p1[1100], q[1100];
    snprintf(p0, sizeof p0, "%s/in.json", root);
    snprintf(p1, sizeof p1, "%s/merged.json#rank3", root);
    mt_discover_file_t f[2] = {{.path = p0, .part = -1}, {.path = p1, .kind = MT_DISCOVER_MERGED_PART, .part = 3}};
    mt_discover_list_t l = {.files = f, .n = 2};
    snprintf(q, sizeof q, "%s/./in.json", root);
    assert_true(mt_outdir_is_input(q, &l));
    snprintf(q, sizeof q, "%s/merged.json", root); /* the file of a part */
    assert_true(mt_outdir_is_input(q, &l));
    snprintf(q, sizeof q, "%s/other.json", root);
    assert_false(mt_outdir_is_input(q, &l));
    snprintf(q, sizeof q, "%s/none.json", root); /* not yet written */
    assert_false(mt_outdir_is_input(q, &l));
}

/* The outputs a run keeps, and its directory, are no input. */
static void test_check_inputs(void **state)
{
    (void)state;
    put("report.json", "{}");
    put("merged.json", "{}");
    put("out", "{}");
    char p0[1100], p1[1100], p2[1100], want[1200], msg[1400] = "";
    snprintf(p0, sizeof p0, "%s/report.json", root);
    snprintf(p1, sizeof p1, "%s/merged.json", root);
    snprintf(p2, sizeof p2, "%s/out", root);
    mt_discover_file_t f[3] = {{.path = p0, .part = -1}, {.path = p1, .part = -1}, {.path = p2, .part = -1}};
    mt_discover_list_t l = {.files = f, .n = 2};
    mt_outdir_name_t names[] = {{"merged.json", false}, {"report.html", true}, {"report.json", true}};
    /* merged.json is an input but not written (--no-merge): report.json is the one */
    assert_int_equal(mt_outdir_check_inputs(root, names, 3, &l, msg, sizeof msg), 1);
    snprintf(want, sizeof want, "%s/report.json is one of the inputs: choose another -o", root);
    assert_string_equal(msg, want);
    names[0].keep = true; /* the first in order */
    assert_int_equal(mt_outdir_check_inputs(root, names, 3, &l, msg, sizeof msg), 1);
    snprintf(want, sizeof want, "%s/merged.json is one of the inputs: choose another -o", root);
    assert_string_equal(msg, want);
    assert_int_equal(mt_outdir_check_inputs(root, names + 1, 1, &l, msg, sizeof msg), 0); /* report.html: none */
    /* the directory itself */
    l.files = f + 2;
    l.n = 1;
    assert_int_equal(mt_outdir_check_inputs(p2, names, 3, &l, msg, sizeof msg), 1);
    snprintf(want, sizeof want, "%s/out is one of the inputs", root);
    assert_string_equal(msg, want);
}

static void test_tmp_and_mark(void **state)
{
    (void)state;
    char path[1100], tmp[1200], mark[1200], want[64];
    snprintf(path, sizeof path, "%s/report.json", root);
    FILE *f = mt_outdir_tmp_create(path, tmp, sizeof tmp);
    assert_non_null(f);
    fclose(f);
    snprintf(want, sizeof want, ".tmp.%ld.", (long)getpid());
    assert_memory_equal(tmp, path, strlen(path));
    assert_memory_equal(tmp + strlen(path), want, strlen(want));
    char tmp2[1200];
    f = mt_outdir_tmp_create(path, tmp2, sizeof tmp2);
    assert_non_null(f);
    fclose(f);
    assert_string_not_equal(tmp, tmp2); /* never one already there */
    char small[1200];
    assert_null(mt_outdir_tmp_create(path, small, strlen(path) + 4)); /* no room for the name */

    assert_int_equal(mt_outdir_renaming(root, "report.json", tmp), 0);
    assert_int_equal(mt_outdir_renaming(root, "report.html", tmp2), 0);
    snprintf(mark, sizeof mark, "%s/" MT_OUTDIR_RENAMING "%ld", root, (long)getpid());
    size_t len = 0;
    char buf[4096];
    f = fopen(mark, "r");
    assert_non_null(f);
    len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[len] = '\0';
    char expect[4096];
    snprintf(expect, sizeof expect, "report.json\t%s\nreport.html\t%s\n", tmp + strlen(path), tmp2 + strlen(path));
    assert_string_equal(buf, expect);
    mt_outdir_renamed_all();
    struct stat st;
    assert_int_not_equal(stat(mark, &st), 0);
    remove(tmp);
    remove(tmp2);
}

/* A temporary's name, and one renamed into place behind the mark with its
 * directory taken from the path (mt_outdir_rename, as the merged trace's
 * is). */
static void test_tmp_name_and_rename(void **state)
{
    (void)state;
    char path[1100], tmp[1200], mark[1200], want[64];
    snprintf(path, sizeof path, "%s/merged.json", root);
    assert_int_equal(mt_outdir_tmp_name(path, 0, tmp, sizeof tmp), 0);
    snprintf(want, sizeof want, ".tmp.%ld.", (long)getpid());
    assert_memory_equal(tmp, path, strlen(path));
    assert_memory_equal(tmp + strlen(path), want, strlen(want));
    const char *hex = tmp + strlen(path) + strlen(want);
    assert_true(strlen(hex) >= 1 && strspn(hex, "0123456789abcdef") == strlen(hex));
    char small[1200];
    errno = 0;
    assert_int_equal(mt_outdir_tmp_name(path, 0, small, strlen(path) + 4), -1);
    assert_int_equal(errno, ENAMETOOLONG);

    FILE *f = mt_outdir_tmp_create(path, tmp, sizeof tmp);
    assert_non_null(f);
    fputs("x", f);
    fclose(f);
    assert_int_equal(mt_outdir_rename(tmp, path), 0);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_size, 1);
    assert_int_not_equal(stat(tmp, &st), 0); /* moved, not copied */
    snprintf(mark, sizeof mark, "%s/" MT_OUTDIR_RENAMING "%ld", root, (long)getpid());
    char buf[4096], expect[4096];
    f = fopen(mark, "r");
    assert_non_null(f); /* in the path's directory */
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[len] = '\0';
    snprintf(expect, sizeof expect, "merged.json\t%s\n", tmp + strlen(path));
    assert_string_equal(buf, expect);
    assert_int_equal(mt_outdir_rename(tmp, path), -1); /* no temporary any more */
    mt_outdir_renamed_all();
    remove(path);
}

/* A render that writes "a", then "bc", or runs out of memory after "a". */
static mt_status_t render_abc(const void *arg, mt_write_fn write, void *ctx)
{
    mt_status_t st = write(ctx, "a", 1);
    if (st == MT_OK && arg)
        return MT_ERR_NOMEM;
    return st == MT_OK ? write(ctx, "bc", 2) : st;
}

/* How many entries of root start with prefix. */
static int count_named(const char *prefix)
{
    DIR *d = opendir(root);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    closedir(d);
    return n;
}

/* An output written through mt_outdir_write: in place with its bytes,
 * behind the mark; a failed render leaves nothing (no temporary either)
 * and says so; a temporary that cannot be created is named as the flags
 * say. mt_file_write onto a stream. */
static void test_write(void **state)
{
    (void)state;
    char msg[2048] = "", path[1100], want[2300];
    assert_int_equal(mt_outdir_write(root, "out.json", render_abc, NULL, 0, msg, sizeof msg), 0);
    size_t len = 0;
    snprintf(path, sizeof path, "%s/out.json", root);
    char *got = read_file(path, &len);
    assert_non_null(got);
    assert_int_equal(len, 3);
    assert_memory_equal(got, "abc", 3);
    free(got);
    mt_buf_t b = {0};
    assert_int_equal(mt_buf_append(&b, "xyz\n", 4), MT_OK);
    assert_int_equal(mt_outdir_write(root, "out.json", mt_outdir_bytes, &b, 0, msg, sizeof msg), 0);
    got = read_file(path, &len);
    assert_int_equal(len, 4);
    assert_memory_equal(got, "xyz\n", 4);
    free(got);
    mt_buf_free(&b);
    assert_int_equal(count_named(MT_OUTDIR_RENAMING), 1); /* the mark, until every output is in place */
    mt_outdir_renamed_all();
    assert_int_equal(count_named(MT_OUTDIR_RENAMING), 0);

    /* out of memory: said as such with MT_OUTDIR_SAY_NOMEM; the earlier file stays */
    assert_int_equal(mt_outdir_write(root, "out.json", render_abc, "", MT_OUTDIR_SAY_NOMEM, msg, sizeof msg), 1);
    snprintf(want, sizeof want, "%s: write failed (out of memory)", path);
    assert_string_equal(msg, want);
    assert_int_equal(mt_outdir_write(root, "out.json", render_abc, "", 0, msg, sizeof msg), 1);
    snprintf(want, sizeof want, "%s: write failed (", path);
    assert_memory_equal(msg, want, strlen(want));
    assert_int_equal(count_named("out.json"), 1); /* no temporary left */
    got = read_file(path, &len);
    assert_int_equal(len, 4);
    free(got);

    /* a directory that is not there */
    assert_int_equal(mt_outdir_write(root, "none/out.json", render_abc, NULL, MT_OUTDIR_NAME_PATH, msg, sizeof msg), 1);
    snprintf(want, sizeof want, "%s/none/out.json: cannot create (No such file or directory)", root);
    assert_string_equal(msg, want);
    assert_int_equal(mt_outdir_write(root, "none/out.json", render_abc, NULL, 0, msg, sizeof msg), 1);
    snprintf(want, sizeof want, "%s/none/out.json.tmp.%ld.", root, (long)getpid());
    assert_memory_equal(msg, want, strlen(want));
    assert_non_null(strstr(msg, ": cannot create (No such file or directory)"));
    assert_false(there("none"));

    /* mt_file_write */
    snprintf(path, sizeof path, "%s/stream", root);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(mt_file_write(f, "hello", 5), MT_OK);
    fclose(f);
    got = read_file(path, &len);
    assert_int_equal(len, 5);
    assert_memory_equal(got, "hello", 5);
    free(got);
    f = fopen(path, "rb"); /* read-only: fwrite writes nothing */
    assert_int_equal(mt_file_write(f, "x", 1), MT_ERR_IO);
    fclose(f);
}

/* A run (a dead process) stopped after renaming report.json, before
 * report.html: its report.json stays, the older merged.json, report.html
 * and timings.json go, an input named compare.json stays; then its
 * temporary of report.html is a dead one. */
static void test_repair(void **state)
{
    (void)state;
    long dead = dead_pid();
    char name[256], text[512];
    snprintf(name, sizeof name, MT_OUTDIR_RENAMING "%ld", dead);
    snprintf(text, sizeof text, "report.json\t.tmp.%ld.1\nreport.html\t.tmp.%ld.2\nmerged.json\t.tmp.%ld.3", dead,
             dead, dead);
    put(name, text); /* the last line cut by the kill */
    put("report.json", "new");
    put("report.html", "old");
    put("merged.json", "old");
    put("timings.json", "old");
    put("compare.json", "an input");
    snprintf(name, sizeof name, "report.html.tmp.%ld.2", dead);
    put(name, "the stopped run's temporary");
    snprintf(name, sizeof name, "report.json.tmp.%ld.7", (long)getpid());
    put(name, "this process's own");
    put("report.json.tmp.1", "pid 1 lives");

    char in[1100];
    snprintf(in, sizeof in, "%s/compare.json", root);
    mt_discover_file_t f = {.path = in, .part = -1};
    mt_discover_list_t l = {.files = &f, .n = 1};
    notes_t n = {0};
    mt_outdir_repair(root, &l, false, NULL, false, note, &n);
    assert_int_equal(n.n, 1);
    char want[1400];
    snprintf(want, sizeof want,
             "%s: an earlier run was stopped while renaming its outputs into place; removed merged.json, report.html, "
             "timings.json, older than its others",
             root);
    assert_string_equal(n.text[0], want);
    assert_true(there("report.json"));
    assert_true(there("compare.json"));
    assert_false(there("report.html"));
    assert_false(there("merged.json"));
    assert_false(there("timings.json"));
    snprintf(name, sizeof name, MT_OUTDIR_RENAMING "%ld", dead);
    assert_false(there(name));

    assert_int_equal(mt_outdir_remove_dead_temps(root), 1);
    snprintf(name, sizeof name, "report.html.tmp.%ld.2", dead);
    assert_false(there(name));
    snprintf(name, sizeof name, "report.json.tmp.%ld.7", (long)getpid());
    assert_true(there(name));
    assert_true(there("report.json.tmp.1"));
    assert_int_equal(mt_outdir_remove_dead_temps(root), 0);
}

/* quiet: nothing said; a mark whose process lives is left alone. */
static void test_repair_quiet_and_alive(void **state)
{
    (void)state;
    char name[256], text[256];
    long dead = dead_pid();
    snprintf(name, sizeof name, MT_OUTDIR_RENAMING "%ld", dead);
    snprintf(text, sizeof text, "report.json\t.tmp.%ld.1\n", dead);
    put(name, text);
    put("report.json", "new");
    put("report.html", "old");
    mkdir(strcat(strcpy(text, root), "/baseline"), 0755);
    put("baseline/report.json", "this run's baseline");
    mt_discover_list_t l = {0};
    notes_t n = {0};
    mt_outdir_repair(root, &l, true, NULL, true, note, &n);
    assert_int_equal(n.n, 0);
    assert_false(there("report.html"));
    assert_true(there("baseline/report.json"));

    snprintf(name, sizeof name, MT_OUTDIR_RENAMING "1");
    snprintf(text, sizeof text, "report.json\t.tmp.1.1\n");
    put(name, text);
    put("report.html", "old");
    mt_outdir_repair(root, &l, false, NULL, false, note, &n);
    assert_int_equal(n.n, 0);
    assert_true(there("report.html"));
    assert_true(there(name));
}

static void test_remove_stale(void **state)
{
    (void)state;
    put("report.json", "kept");
    put("report.html", "stale");
    put("merged.json", "stale");
    put("timings.json", "an input");
    put("compare.json", "the baseline");
    char d[1100];
    snprintf(d, sizeof d, "%s/baseline", root);
    assert_int_equal(mkdir(d, 0755), 0);
    put("baseline/report.json", "stale");
    char in[1100], base[1100];
    snprintf(in, sizeof in, "%s/timings.json", root);
    snprintf(base, sizeof base, "%s/compare.json", root);
    mt_discover_file_t f = {.path = in, .part = -1};
    mt_discover_list_t l = {.files = &f, .n = 1};
    const mt_outdir_name_t names[] = {
        {"report.json", true},   {"report.html", false},  {"merged.json.gz", false},      {"merged.json", false},
        {"timings.json", false}, {"compare.json", false}, {"baseline/report.json", false},
    };
    char removed[256];
    notes_t n = {0};
    mt_outdir_remove_stale(root, names, sizeof names / sizeof names[0], &l, base, removed, sizeof removed, note, &n);
    assert_string_equal(removed, "report.html, merged.json and baseline/report.json");
    assert_int_equal(n.n, 0);
    assert_true(there("report.json"));
    assert_true(there("timings.json"));
    assert_true(there("compare.json"));
    assert_false(there("baseline")); /* gone with its only file */

    put("report.html", "stale");
    mt_outdir_remove_stale(root, names, 2, &l, NULL, removed, sizeof removed, note, &n);
    assert_string_equal(removed, "report.html");
    mt_outdir_remove_stale(root, names, 2, &l, NULL, removed, sizeof removed, note, &n);
    assert_string_equal(removed, "");
}

/* The tables of output names (mt_outdir_written, mt_outdir_owned) against
 * the options' meaning written out by hand: a run with --no-html, the
 * merged trace as JSON and --timings writes merged.json, report.json and
 * timings.json, in the check's order; what it owns afterwards keeps
 * report.json, merged.json and timings.json, in the removal's order; a
 * failed merge keeps both merged names; --no-merge keeps neither. */
static void test_names(void **state)
{
    (void)state;
    mt_outdir_name_t n[MT_OUTDIR_N_NAMES];
    mt_outdir_outputs_t w = {.merge = true, .merged_gzip = false, .html = false, .timings = true};
    const char *wn[] = {"merged.json", "report.json", "report.html", "timings.json", "compare.json",
                        "baseline/report.json"};
    const bool wk[] = {true, true, false, true, false, false};
    assert_int_equal(mt_outdir_written(&w, n), 6);
    for (size_t i = 0; i < 6; i++) {
        assert_string_equal(n[i].name, wn[i]);
        assert_int_equal(n[i].keep, wk[i]);
    }
    const char *on[] = {"report.json", "report.html", "merged.json.gz", "merged.json", "timings.json",
                        "baseline/report.json", "compare.json"};
    const bool ok[] = {true, false, false, true, true, false, false};
    assert_int_equal(mt_outdir_owned(&w, false, n), 7);
    for (size_t i = 0; i < 7; i++) {
        assert_string_equal(n[i].name, on[i]);
        assert_int_equal(n[i].keep, ok[i]);
    }
    assert_int_equal(mt_outdir_owned(&w, true, n), 7);
    assert_true(n[2].keep && n[3].keep);
    w.merged_gzip = true;
    assert_int_equal(mt_outdir_owned(&w, true, n), 7);
    assert_true(n[2].keep && n[3].keep);
    assert_int_equal(mt_outdir_owned(&w, false, n), 7);
    assert_true(n[2].keep && !n[3].keep);
    w = (mt_outdir_outputs_t){.merge = false, .merged_gzip = true, .html = true, .compare = true,
                              .baseline_report = true};
    assert_int_equal(mt_outdir_written(&w, n), 6);
    assert_string_equal(n[0].name, "merged.json.gz");
    assert_false(n[0].keep);
    assert_true(n[2].keep && n[4].keep && n[5].keep && !n[3].keep);
    assert_int_equal(mt_outdir_owned(&w, false, n), 7);
    assert_true(!n[2].keep && !n[3].keep && n[1].keep && n[5].keep && n[6].keep && !n[4].keep);
    assert_string_equal(mt_outdir_merged_name(true), "merged.json.gz");
    assert_string_equal(mt_outdir_merged_name(false), "merged.json");
}

/* Before a run writes: the directory made, an output that is an input
 * refused (nothing else done), two dead temporaries removed and said, or
 * not said with quiet. */
static void test_prepare(void **state)
{
    (void)state;
    char d[1100], in[1200], msg[1400], want[1400];
    snprintf(d, sizeof d, "%s/out/x", root);
    mt_discover_list_t none = {0};
    mt_outdir_outputs_t w = {.merge = true, .merged_gzip = true, .html = true};
    notes_t n = {0};
    assert_int_equal(mt_outdir_prepare(d, &w, &none, NULL, false, note, &n, msg, sizeof msg), 0);
    assert_true(there("out/x"));
    assert_int_equal(n.n, 0);
    /* report.html in it is an input: refused, its dead temporary left */
    long dead = dead_pid();
    char name[200];
    snprintf(name, sizeof name, "out/x/report.json.tmp.%ld.1", dead);
    put(name, "{");
    put("out/x/report.html", "<html>");
    snprintf(in, sizeof in, "%s/report.html", d);
    mt_discover_file_t f[1] = {{.path = in, .part = -1}};
    mt_discover_list_t l = {.files = f, .n = 1};
    assert_int_equal(mt_outdir_prepare(d, &w, &l, NULL, false, note, &n, msg, sizeof msg), 1);
    snprintf(want, sizeof want, "%s/report.html is one of the inputs: choose another -o", d);
    assert_string_equal(msg, want);
    assert_true(there(name));
    /* without it: the temporaries go, said once */
    put("out/x/merged.json.gz.tmp.1.2", "x"); /* no pid of ours: "1" is init, alive */
    snprintf(name, sizeof name, "out/x/merged.json.gz.tmp.%ld.3", dead);
    put(name, "x");
    w.html = false;
    assert_int_equal(mt_outdir_prepare(d, &w, &l, NULL, false, note, &n, msg, sizeof msg), 0);
    assert_int_equal(n.n, 1);
    snprintf(want, sizeof want, "removed 2 temporary files of an earlier run that was stopped, from %s", d);
    assert_string_equal(n.text[0], want);
    assert_false(there(name));
    assert_true(there("out/x/merged.json.gz.tmp.1.2"));
    snprintf(name, sizeof name, "out/x/report.json.tmp.%ld.4", dead);
    put(name, "{");
    assert_int_equal(mt_outdir_prepare(d, &w, &l, NULL, true, note, &n, msg, sizeof msg), 0);
    assert_int_equal(n.n, 1); /* quiet */
    assert_false(there(name));
    /* a directory that cannot be made */
    snprintf(d, sizeof d, "%s/out/x/report.html/y", root);
    assert_int_equal(mt_outdir_prepare(d, &w, &none, NULL, false, note, &n, msg, sizeof msg), 1);
    snprintf(want, sizeof want, "%s/out/x/report.html: exists and is not a directory", root);
    assert_string_equal(msg, want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_make, setup, teardown),
        cmocka_unit_test_setup_teardown(test_is_input, setup, teardown),
        cmocka_unit_test_setup_teardown(test_check_inputs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tmp_and_mark, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tmp_name_and_rename, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write, setup, teardown),
        cmocka_unit_test_setup_teardown(test_repair, setup, teardown),
        cmocka_unit_test_setup_teardown(test_repair_quiet_and_alive, setup, teardown),
        cmocka_unit_test_setup_teardown(test_remove_stale, setup, teardown),
        cmocka_unit_test_setup_teardown(test_prepare, setup, teardown),
        cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
