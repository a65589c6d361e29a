/* What a --baseline PATH is (discover.h, mt_discover_baseline_read): a
 * report.json read and checked, or traces (a directory without one, or a
 * trace file) the program analyses first. In discover/ because a file of
 * traces is known by its first bytes (mt_discover_is_trace_head). */
#include "mergetrace/discover.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "mergetrace/compare.h"
#include "mergetrace/input.h"

int mt_discover_baseline_read(const char *b, char *file, size_t cap, mt_discover_baseline_t *kind, mt_buf_t *text,
                              char *msg, size_t msg_cap)
{
    struct stat sb;
    *kind = MT_DISCOVER_BASELINE_REPORT;
    if (stat(b, &sb) != 0) {
        snprintf(msg, msg_cap, "--baseline %s: %s", b, strerror(errno));
        return 2;
    }
    bool dir = S_ISDIR(sb.st_mode);
    snprintf(file, cap, dir ? "%s/report.json" : "%s", b);
    FILE *f = NULL;
    struct stat fb;
    if (stat(file, &fb) == 0 || !dir) {
        /* a regular file of a sane size before it is opened: a FIFO blocked
         * here, /dev/zero read until memory ran out */
        mt_error_t cerr;
        mt_error_clear(&cerr);
        mt_status_t cs = mt_input_check_file(file, MT_SIDE_FILE_MAX, "--baseline", &cerr);
        if (cs != MT_OK) {
            snprintf(msg, msg_cap, "%s", cerr.msg);
            return cs == MT_ERR_IO ? 1 : 2;
        }
        f = fopen(file, "rb");
    } else {
        errno = ENOENT;
    }
    if (!f && dir && errno == ENOENT) {
        *kind = MT_DISCOVER_BASELINE_TRACE_DIR; /* no report.json: a directory of traces */
        return 0;
    }
    if (!f) {
        snprintf(msg, msg_cap, "--baseline %s: %s", dir ? file : b, strerror(errno));
        return 2;
    }
    size_t at = text->len;
    char chunk[65536];
    size_t n;
    mt_status_t st = MT_OK;
    while (st == MT_OK && (n = fread(chunk, 1, sizeof chunk, f)) > 0)
        st = mt_buf_append(text, chunk, n);
    bool rd_err = ferror(f) != 0;
    fclose(f);
    if (st != MT_OK || rd_err) {
        text->len = at;
        snprintf(msg, msg_cap, "--baseline %s: %s", file, rd_err ? "read error" : "out of memory");
        return 1;
    }
    const char *got = text->data ? text->data + at : ""; /* an empty file: no bytes at all */
    mt_error_t err;
    mt_error_clear(&err);
    st = mt_compare_check(got, text->len - at, file, &err);
    if (st != MT_OK && st != MT_ERR_NOMEM && !dir && mt_discover_is_trace_head(got, text->len - at)) {
        /* a file of traces (an Nsight export, a Kineto trace) is analysed
         * as a directory of them is: a baseline may be any input the
         * program reads (issue 39 papercut: 'invalid JSON ... byte 0' for
         * before.sqlite) */
        text->len = at;
        *kind = MT_DISCOVER_BASELINE_TRACE_FILE;
        return 0;
    }
    if (st != MT_OK) {
        char line[1200];
        snprintf(msg, msg_cap, "--baseline: %s", mt_error_format(&err, line, sizeof line));
        text->len = at;
        return st == MT_ERR_NOMEM ? 1 : 2;
    }
    return 0;
}

int mt_discover_baseline_plan(const char *path, const char *out_dir, const char *conflict, char *file, size_t cap,
                              bool *traces, mt_buf_t *text, char *msg, size_t msg_cap)
{
    mt_discover_baseline_t kind;
    *traces = false;
    int rc = mt_discover_baseline_read(path, file, cap, &kind, text, msg, msg_cap);
    if (rc || kind == MT_DISCOVER_BASELINE_REPORT)
        return rc;
    /* traces, analysed in this run; their report goes to baseline/report.json of -o */
    mt_buf_free(text); /* what was looked at to tell: nothing to keep */
    if (conflict) {
        snprintf(msg, msg_cap, "--baseline %s: %s as the baseline does not go with %s", path,
                 kind == MT_DISCOVER_BASELINE_TRACE_DIR ? "a directory of traces" : "a trace", conflict);
        return 3;
    }
    snprintf(file, cap, "%.4000s/baseline/report.json", out_dir);
    *traces = true;
    return 0;
}
