/* Helpers shared by the unit tests. */
#ifndef MT_TEST_UTIL_H
#define MT_TEST_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "mergetrace/mergetrace.h"

/* Load a trace from a NUL-terminated JSON string with default options;
 * asserts success. */
mt_trace_t *load_str(const char *json);

/* Load; returns the status and fills err (trace freed). */
mt_status_t load_str_err(const char *json, size_t len, const mt_load_opts_t *o, mt_error_t *err);

/* Read a whole file; NULL if it cannot be read. *len gets the size. */
char *read_file(const char *path, size_t *len);

/* gzip-compress buf (one member) with zlib; caller frees. */
unsigned char *gzip_bytes(const void *buf, size_t len, size_t *out_len);

/* Count of events with a given normalised category and phase X. */
size_t count_cat(const mt_trace_t *t, mt_cat_t c);

/* The first event with this name, or NULL. */
const mt_event_t *find_event(const mt_trace_t *t, const char *name);

/* Seeded pseudo-random numbers for test data (xorshift64; *state must not
 * be 0): the next 64 bits, and a double in [0, 1). */
uint64_t tu_rand(uint64_t *state);
double tu_unit(uint64_t *state);

/* Rows made by hand: their labels' ids in one label table shared by the
 * whole test program (created on first use, never freed: it stays
 * reachable). tu_label asserts the interning worked. */
mt_strtab_t *tu_labels(void);
uint32_t tu_label(const char *s);

/* rows[0..n) as the passes after the match take them: a compact copy
 * (mt_crow_of of each row) that the test program keeps until it exits
 * (reachable, never freed, like tu_labels), so a call can stand where the
 * rows did. Asserts the allocation worked; n 0 gives a valid pointer. */
const mt_crow_t *tu_crows(const mt_cinst_t *rows, size_t n);

/* A fresh, empty directory MT_TEST_TMP/<tag>_<pid> into root (cap
 * bytes): 0, or -1 (a cmocka setup's return). tu_tmpdir_remove removes
 * it (a teardown's). */
int tu_tmpdir(char *root, size_t cap, const char *tag);
int tu_tmpdir_remove(const char *root);

/* root/rel written with text (asserted). */
void tu_put(const char *root, const char *rel, const char *text);

#endif
