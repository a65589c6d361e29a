/* Helpers shared by the unit tests. */
#include "test_util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include <cmocka.h>

mt_trace_t *load_str(const char *json)
{
    mt_trace_t *t = NULL;
    mt_error_t err;
    mt_status_t st = mt_trace_load_buffer(json, strlen(json), "test.json", NULL, &t, &err);
    if (st != MT_OK) {
        char b[1200];
        fail_msg("load failed: %s", mt_error_format(&err, b, sizeof b));
    }
    return t;
}

mt_status_t load_str_err(const char *json, size_t len, const mt_load_opts_t *o, mt_error_t *err)
{
    mt_trace_t *t = NULL;
    mt_status_t st = mt_trace_load_buffer(json, len, "bad.json", o, &t, err);
    mt_trace_free(t);
    return st;
}

char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    if (b) {
        b[n] = '\0';
        *len = (size_t)n;
    }
    return b;
}

unsigned char *gzip_bytes(const void *buf, size_t len, size_t *out_len)
{
    z_stream z = {0};
    if (deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return NULL;
    size_t cap = deflateBound(&z, (uLong)len) + 64;
    unsigned char *o = malloc(cap);
    z.next_in = (unsigned char *)(uintptr_t)buf;
    z.avail_in = (uInt)len;
    z.next_out = o;
    z.avail_out = (uInt)cap;
    int r = deflate(&z, Z_FINISH);
    deflateEnd(&z);
    if (r != Z_STREAM_END) {
        free(o);
        return NULL;
    }
    *out_len = cap - z.avail_out;
    return o;
}

size_t count_cat(const mt_trace_t *t, mt_cat_t c)
{
    size_t n = 0;
    for (size_t i = 0; i < t->n_events; i++)
        n += t->events[i].ph == MT_PH_X && mt_cat_normal((mt_cat_t)t->events[i].cat) == c;
    return n;
}

const mt_event_t *find_event(const mt_trace_t *t, const char *name)
{
    for (size_t i = 0; i < t->n_events; i++)
        if (!strcmp(mt_event_name(t, &t->events[i]), name))
            return &t->events[i];
    return NULL;
}

uint64_t tu_rand(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *state = x;
}

double tu_unit(uint64_t *state)
{
    return (double)(tu_rand(state) >> 11) / 9007199254740992.0;
}

mt_strtab_t *tu_labels(void)
{
    static mt_strtab_t *t;
    if (!t)
        t = mt_strtab_create();
    assert_non_null(t);
    return t;
}

uint32_t tu_label(const char *s)
{
    uint32_t id = 0;
    assert_int_equal(mt_strtab_intern(tu_labels(), s, strlen(s), &id), MT_OK);
    return id;
}

const mt_crow_t *tu_crows(const mt_cinst_t *rows, size_t n)
{
    static mt_crow_t **kept; /* every copy made, so that all stay reachable */
    static size_t n_kept;
    mt_crow_t **k = realloc(kept, (n_kept + 1) * sizeof *k);
    assert_non_null(k);
    kept = k;
    mt_crow_t *c = malloc((n ? n : 1) * sizeof *c);
    assert_non_null(c);
    for (size_t i = 0; i < n; i++)
        c[i] = mt_crow_of(&rows[i]);
    kept[n_kept++] = c;
    return c;
}

#ifdef MT_TEST_TMP /* the unit tests' (mt_unit); not every user of this file has it */
int tu_tmpdir(char *root, size_t cap, const char *tag)
{
    snprintf(root, cap, "%s/%s_%d", MT_TEST_TMP, tag, (int)getpid());
    char cmd[1100];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", root, root);
    return system(cmd) == 0 ? 0 : -1;
}

int tu_tmpdir_remove(const char *root)
{
    char cmd[1100];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    return system(cmd) == 0 ? 0 : -1;
}

void tu_put(const char *root, const char *rel, const char *text)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", root, rel);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}
#endif
