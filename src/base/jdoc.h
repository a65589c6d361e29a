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
#include <string.h>

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

/* The cursor's text (borrowed, as given to mt_jcur_new) and its length,
 * for a caller's own quick scan of the next value (mt_jscan_*). */
const char *mt_jcur_text(const mt_jcur_t *c, size_t *len);

/* Past a value the caller read whole from the text itself: to is the
 * offset just after it, where the cursor was before it (at the value,
 * after mt_jcur_next or mt_jcur_peek). The caller answers for the value
 * being one the cursor would have read without an error. */
void mt_jcur_seek(mt_jcur_t *c, size_t to);

/* Quick scans of the plain forms of JSON tokens, for a caller's fast path
 * over many small values that falls back on the cursor: each reads one
 * token at s[*i] (s[0..n)) and moves *i past it when it is of the plain
 * form, else returns false with *i as it was. Whatever they take the
 * cursor takes too, with the same value; what they refuse (escapes,
 * bytes outside ASCII, wider or signed integers, bad syntax) the caller
 * reads through the cursor, which takes every form and says the errors. */

/* JSON whitespace from s[*i] on. */
static inline void mt_jscan_ws(const char *s, size_t n, size_t *i)
{
    size_t k = *i;
    while (k < n && (s[k] == ' ' || s[k] == '\n' || s[k] == '\t' || s[k] == '\r'))
        k++;
    *i = k;
}

/* A string of printable ASCII without escapes: its bytes, borrowed from s.
 * Eight bytes at a time (inline: it is the scan of every member name): the
 * mask's lowest bit marks the first quote, backslash, control byte or byte
 * outside ASCII (the borrows that may set higher ones start at such a
 * byte); the last bytes of the text are padded with NULs, control bytes. */
static inline bool mt_jscan_str(const char *s, size_t n, size_t *i, const char **str, size_t *len)
{
    size_t k = *i, run = k + 1;
    if (k >= n || s[k] != '"')
        return false;
    const uint64_t ones = UINT64_C(0x0101010101010101), high = ones << 7;
    for (;;) {
        uint64_t w = 0;
        if (n - run >= 8)
            memcpy(&w, s + run, 8);
        else if (run < n)
            memcpy(&w, s + run, n - run);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        w = __builtin_bswap64(w); /* the first byte lowest */
#endif
        uint64_t q = w ^ (ones * '"'), b = w ^ (ones * '\\');
        uint64_t m = (((q - ones) & ~q) | ((b - ones) & ~b) | (w - ones * 0x20) | w) & high;
        if (m) {
            run += (size_t)__builtin_ctzll(m) >> 3;
            break;
        }
        run += 8;
    }
    if (run >= n || s[run] != '"')
        return false;
    *str = s + k + 1;
    *len = run - k - 1;
    *i = run + 1;
    return true;
}

/* An integer token of 1 to 19 digits, no sign (0 or no leading zero; a
 * '.', 'e' or digit after it is the caller's to refuse as it reads on). */
static inline bool mt_jscan_uint(const char *s, size_t n, size_t *i, uint64_t *v)
{
    size_t k = *i;
    if (k >= n || s[k] < '0' || s[k] > '9')
        return false;
    if (s[k] == '0') {
        *v = 0;
        *i = k + 1;
        return true;
    }
    uint64_t m = 0;
    size_t end = n - k > 19 ? k + 19 : n;
    for (; k < end && s[k] >= '0' && s[k] <= '9'; k++)
        m = m * 10 + (uint64_t)(s[k] - '0');
    if (k < n && s[k] >= '0' && s[k] <= '9')
        return false; /* a 20th digit */
    *v = m;
    *i = k;
    return true;
}

/* Any value whose strings are plain (mt_jscan_str), numbers checked by the
 * grammar, nested at most depth deep; read past. */
bool mt_jscan_skip(const char *s, size_t n, size_t *i, int depth);

#endif
