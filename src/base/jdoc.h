/* A small validating JSON document reader (RFC 8259) for JSON that is ours
 * but arrives as user input: a saved report.json read back as a baseline.
 * The whole text becomes one flat array of nodes; no recursion (nesting is
 * kept on an explicit stack, bounded by a depth limit), errors are one line
 * with the byte offset and line:col (base/errpos.h). The Kineto loader
 * (trace/loader.c) is the fast, specialised reader for traces; this one is
 * for small documents that are walked by key, and, through its cursor
 * (mt_jcur_*, below), for large ones read once in order (Flight Recorder
 * dumps). */
#ifndef MT_BASE_JDOC_H
#define MT_BASE_JDOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mergetrace/status.h"

typedef enum mt_jtype {
    MT_J_NULL = 0,
    MT_J_FALSE,
    MT_J_TRUE,
    MT_J_NUM,
    MT_J_STR,
    MT_J_ARR,
    MT_J_OBJ
} mt_jtype_t;

/* One value. Node 0 is the document's root. Indices refer to the
 * document's node array; 0 as `next` or `child` means none (the root is
 * nobody's child or sibling). */
typedef struct mt_jnode {
    uint8_t type;   /* mt_jtype_t */
    uint32_t key;   /* member of an object: its name in the string arena; else 0 */
    uint32_t key_len;
    uint32_t str;   /* MT_J_STR: decoded bytes in the arena (NUL after them) */
    uint32_t len;   /* MT_J_STR: bytes; MT_J_ARR/OBJ: children */
    uint32_t child; /* MT_J_ARR/OBJ: first child */
    uint32_t next;  /* the next sibling */
    double num;     /* MT_J_NUM */
    uint8_t exact;  /* MT_J_NUM: 1 an integer token that fits int64 (ival), 2 one
                       over INT64_MAX that fits uint64 (ival's bits); else 0 */
    int64_t ival;
} mt_jnode_t;

/* An opaque parsed document. */
typedef struct mt_jdoc mt_jdoc_t;

/* Parse text[0..len) (need not be NUL-terminated; copied from, not kept).
 * max_depth bounds the nesting of arrays and objects (at least 1). path
 * names the input in errors (may be NULL). Returns MT_OK with *out (free
 * with mt_jdoc_free), or MT_ERR_SYNTAX (not JSON: err says what was
 * expected at which byte and line:col), MT_ERR_LIMIT (nested deeper than
 * max_depth, or more than 2^31 nodes or bytes of strings), MT_ERR_NOMEM.
 * Strings are decoded (escapes, surrogate pairs into UTF-8); invalid UTF-8
 * and lone surrogates are errors; a NUL escape (\u0000) is kept. Numbers
 * are doubles (strtod on the validated token). Duplicate keys are kept;
 * lookups find the first. */
mt_status_t mt_jdoc_parse(const char *text, size_t len, int max_depth, const char *path, mt_jdoc_t **out,
                          mt_error_t *err);

/* Free a document. NULL does nothing. */
void mt_jdoc_free(mt_jdoc_t *d);

/* The node at index i (0 = the root), valid until mt_jdoc_free. i must be a
 * node of d. */
const mt_jnode_t *mt_jdoc_node(const mt_jdoc_t *d, uint32_t i);

/* Member `key` of object node obj; 0 when obj is not an object or has no
 * such key. */
uint32_t mt_jdoc_get(const mt_jdoc_t *d, uint32_t obj, const char *key);

/* Follow a dotted path of member names ("pipeline.period_us.p50") from
 * node from; 0 when a step is missing. */
uint32_t mt_jdoc_path(const mt_jdoc_t *d, uint32_t from, const char *dotted);

/* Type of node i, or MT_J_NULL for i = 0 when 0 was returned as "missing"
 * (callers test the index first when the root matters). */
mt_jtype_t mt_jdoc_type(const mt_jdoc_t *d, uint32_t i);

/* The number at node i into *v: true when it is a number. */
bool mt_jdoc_num(const mt_jdoc_t *d, uint32_t i, double *v);

/* The number at node i exactly, when its text is an integer that fits:
 * mt_jdoc_i64 for int64, mt_jdoc_u64 for uint64 (a negative one is not).
 * False otherwise (not a number, a fraction or exponent, too wide). */
bool mt_jdoc_i64(const mt_jdoc_t *d, uint32_t i, int64_t *v);
bool mt_jdoc_u64(const mt_jdoc_t *d, uint32_t i, uint64_t *v);

/* The string at node i (NUL-terminated, borrowed from d) and its length in
 * *len (may be NULL); NULL when i is not a string. */
const char *mt_jdoc_str(const mt_jdoc_t *d, uint32_t i, size_t *len);

/* The member name of node i (NUL-terminated, borrowed); "" when none. */
const char *mt_jdoc_key(const mt_jdoc_t *d, uint32_t i);

/* First child of an array/object node and the next sibling: 0 at the end.
 * for (uint32_t c = mt_jdoc_first(d, a); c; c = mt_jdoc_next(d, c)) ... */
uint32_t mt_jdoc_first(const mt_jdoc_t *d, uint32_t i);
uint32_t mt_jdoc_next(const mt_jdoc_t *d, uint32_t i);

/* A cursor over one JSON text for large documents read once, in order:
 * the same scanner and the same errors as mt_jdoc_parse, with no node
 * array of the whole text. The caller walks containers (mt_jcur_enter,
 * mt_jcur_next) and reads each member's value once, as a scalar
 * (mt_jcur_i64, _u64, _str), as a small document (mt_jcur_value) or not
 * at all (mt_jcur_skip); every value is checked all the same. Errors:
 * MT_ERR_SYNTAX (with the byte offset and line:col, as mt_jdoc_parse's),
 * MT_ERR_LIMIT (nested deeper than max_depth), MT_ERR_NOMEM. After an
 * error the cursor is only good for mt_jcur_free. */
typedef struct mt_jcur mt_jcur_t;

/* text[0..len) is borrowed (must outlive the cursor); max_depth and path as
 * for mt_jdoc_parse. MT_OK with *out (free with mt_jcur_free) or
 * MT_ERR_NOMEM. */
mt_status_t mt_jcur_new(const char *text, size_t len, int max_depth, const char *path, mt_error_t *err,
                        mt_jcur_t **out);
void mt_jcur_free(mt_jcur_t *c); /* NULL does nothing */

/* The type of the next value, by its first byte (whitespace skipped;
 * anything not another type's first byte is MT_J_NUM, checked when read). */
mt_status_t mt_jcur_peek(mt_jcur_t *c, mt_jtype_t *t);

/* Into the next value, which must be an object or array as t says (else
 * MT_ERR_SYNTAX: callers peek first to say their own error). */
mt_status_t mt_jcur_enter(mt_jcur_t *c, mt_jtype_t t);

/* In the container entered last: *more true when a member follows (read
 * its value next, exactly once), false when the container closed (the
 * cursor is back in its parent). In an object, the member's name in *key,
 * *klen (key may be NULL): not NUL-terminated, borrowed until the next
 * call. */
mt_status_t mt_jcur_next(mt_jcur_t *c, bool *more, const char **key, size_t *klen);

/* The next value as mt_jdoc_i64 / mt_jdoc_u64 read a node: *ok false (the
 * value read all the same) when it is not such an integer. */
mt_status_t mt_jcur_i64(mt_jcur_t *c, int64_t *v, bool *ok);
mt_status_t mt_jcur_u64(mt_jcur_t *c, uint64_t *v, bool *ok);

/* The next value as a string, decoded: *s (not NUL-terminated, borrowed
 * until the next call) and *len; *s NULL (the value read all the same)
 * when it is not a string. */
mt_status_t mt_jcur_str(mt_jcur_t *c, const char **s, size_t *len);

/* The next value as a document (its root is node 0), borrowed until the
 * next call; the way to skip a value. */
mt_status_t mt_jcur_value(mt_jcur_t *c, const mt_jdoc_t **doc);

/* Read past the next value (checked as any other). */
mt_status_t mt_jcur_skip(mt_jcur_t *c);

/* The byte offset of the cursor in the text. */
size_t mt_jcur_offset(const mt_jcur_t *c);

/* After the top value: MT_OK when only whitespace is left. */
mt_status_t mt_jcur_finish(mt_jcur_t *c);

#endif
