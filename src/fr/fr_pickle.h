/* A strict unpickler for PyTorch Flight Recorder dumps: pickle bytes ->
 * the same JSON text the dump's JSON encoding would hold, never executing
 * anything. */
#ifndef MT_FR_PICKLE_H
#define MT_FR_PICKLE_H

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
 * MT_ERR_LIMIT (nested deeper than 64, more than 2^24 memo slots, or
 * output over 64 times the input plus 1 MiB: a memo bomb), MT_ERR_NOMEM. */
mt_status_t mt_fr_pickle_to_json(const uint8_t *data, size_t len, const char *path, mt_buf_t *out,
                                 mt_error_t *err);

/* True when data starts like a pickle of protocol 2 to 5 (PROTO n). */
int mt_fr_pickle_sniff(const uint8_t *data, size_t len);

#endif
