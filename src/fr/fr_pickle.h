/* A strict unpickler for PyTorch Flight Recorder dumps: pickle bytes ->
 * the same JSON text the dump's JSON encoding would hold, never executing
 * anything. */
#ifndef MT_FR_PICKLE_H
#define MT_FR_PICKLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mergetrace/buf.h"
#include "mergetrace/status.h"

/* Decode one pickle (protocol 2 to 5) of plain containers and scalars into
 * JSON text appended to *out (owned by the caller; its length left as it
 * was on an error, though it may have grown: free it). Opcodes read: PROTO FRAME STOP MARK, EMPTY_DICT/LIST/TUPLE,
 * SETITEM(S) APPEND(S) TUPLE TUPLE1-3, BININT BININT1 BININT2 LONG1 LONG4,
 * BINFLOAT, NONE NEWTRUE NEWFALSE, SHORT_BINUNICODE BINUNICODE
 * BINUNICODE8, BINPUT LONG_BINPUT MEMOIZE BINGET LONG_BINGET, and GLOBAL /
 * STACK_GLOBAL + REDUCE only for torch.jit._pickle's list builders
 * (build_intlist, build_doublelist, build_boollist, build_genericlist),
 * which return their one argument. Tuples become arrays; ints are written
 * exactly (int64 and uint64: anything wider is MT_ERR_RANGE); a float
 * that is not finite becomes null; a dict key must be a string or an int
 * (written as its decimal text). path names the input in errors (may be
 * NULL). Errors, each with the byte offset of the opcode: MT_ERR_TRUNCATED
 * (the bytes end before STOP or inside an operand), MT_ERR_FORMAT (an
 * unknown opcode, a global or reduce that is not allowed, an operand of
 * the wrong type, a stack underflow, bytes after STOP), MT_ERR_RANGE,
 * MT_ERR_LIMIT (nested deeper than 64, more than 2^24 memo slots, output
 * over 64 times the input plus 1 MiB: a memo bomb, or 4 GiB of input or
 * more), MT_ERR_NOMEM. */
mt_status_t mt_fr_pickle_to_json(const uint8_t *data, size_t len, const char *path, mt_buf_t *out,
                                 mt_error_t *err);

/* ---- the decoded values, for a reader that takes them as they are ----
 * mt_fr_pickle_to_json is mt_fr_pickle_load, mt_fr_pickle_json and
 * mt_fr_pickle_free; the dump reader (fr_dump.c) reads the values of a
 * dump whose text would be plain (mt_fr_pickle_plain) without the text. */

enum { MT_PV_NONE, MT_PV_TRUE, MT_PV_FALSE, MT_PV_INT, MT_PV_UINT, MT_PV_FLOAT, MT_PV_STR, MT_PV_LIST, MT_PV_DICT,
       MT_PV_BUILDER };

/* One value, 16 bytes: a dump's ~50,000 values stay under glibc's mmap
 * threshold of 1 MiB (mt_heap_setup), so they come from the heap and are
 * not faulted in again for every dump. Tuples are lists. A dict's items
 * alternate key, value. */
typedef struct mt_fr_pv {
    uint8_t type;   /* MT_PV_* */
    uint8_t plain;  /* MT_PV_STR: 1 when no byte of it is escaped in JSON */
    uint8_t in;     /* private: 1 once an item of a container */
    uint8_t height; /* private: containers' nesting, 255 at most */
    uint32_t n;     /* MT_PV_LIST, MT_PV_DICT: items; MT_PV_STR: its length in bytes */
    union {
        int64_t i;  /* MT_PV_INT */
        uint64_t u; /* MT_PV_UINT: 2^63 and over */
        double f;   /* MT_PV_FLOAT */
        struct {
            uint32_t at;  /* containers: their first item in items[]; MT_PV_STR: its first byte in data */
            uint32_t cap; /* private: containers' room at items[at..] */
        } c;
    } v;
} mt_fr_pv_t;

/* A decoded pickle: plain data, owned (free with mt_fr_pickle_free) but
 * for data, which is borrowed (strings point into it: it must outlive). */
typedef struct mt_fr_pickle {
    const uint8_t *data;
    size_t len;
    const char *path; /* borrowed, for errors */
    mt_fr_pv_t *vals; /* value ids index it */
    size_t nvals, capvals;
    uint32_t *items; /* value ids */
    size_t nitems, capitems;
    uint32_t root;
    bool mixed;   /* private: something mt_fr_pickle_plain refuses */
    size_t bound; /* private: over the text's length, less the root's brackets */
} mt_fr_pickle_t;

/* Decode data[0..len) into *pk, which holds nothing before (every error of
 * mt_fr_pickle_to_json but those of the writing, with the same message and
 * offset). On an error *pk is freed. */
mt_status_t mt_fr_pickle_load(const uint8_t *data, size_t len, const char *path, mt_fr_pickle_t *pk,
                              mt_error_t *err);

/* pk's root as JSON text appended to *out, as mt_fr_pickle_to_json writes
 * it (its errors from writing: MT_ERR_LIMIT, MT_ERR_FORMAT, MT_ERR_NOMEM,
 * at the offset of STOP; out's length then as it was). */
mt_status_t mt_fr_pickle_json(const mt_fr_pickle_t *pk, mt_buf_t *out, mt_error_t *err);

/* True when mt_fr_pickle_json of pk cannot fail and its text, read by the
 * JSON reader, is the values as they are: every string and dict key a
 * string of no byte to escape, every container the item of one container
 * at most (no sharing, no cycle) and complete before it became one, the
 * root nested at most 32 deep, no global left unapplied, and the text
 * under half its limit. Kept as the values are decoded (conservative: a
 * value out of the root's reach counts too). */
bool mt_fr_pickle_plain(const mt_fr_pickle_t *pk);

/* Frees what pk owns (not data) and empties it; NULL or an empty one: nothing. */
void mt_fr_pickle_free(mt_fr_pickle_t *pk);

/* True when data starts like a pickle of protocol 2 to 5 (PROTO n). */
int mt_fr_pickle_sniff(const uint8_t *data, size_t len);

#endif
