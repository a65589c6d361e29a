/* The core's own view of the Flight Recorder dumps: the public types and
 * functions (mergetrace/fr_hang.h) and the verdict as lines for the text
 * writer. */
#ifndef MT_FR_FR_H
#define MT_FR_FR_H

#include "base/text.h"
#include "mergetrace/fr_hang.h"

/* The verdict for the terminal, at most 6 lines, each ending in '\n',
 * into o (its first error kept in o->st). h as mt_fr_hang_analyse left it. */
void mt_fr_hang_text(const mt_fr_hang_t *h, mt_out_t *o);

/* mt_fr_dump_read with its fast paths on (quick true: what mt_fr_dump_read
 * does; a pickle whose text would be plain read from its decoded values,
 * JSON entries of plain forms straight from the text) or off (a pickle
 * through its JSON text, every value through the JSON cursor): the same
 * dump, status and error either way (the fuzz target and test_fr_pickle
 * compare them). */
mt_status_t mt_fr_dump_read_with(const uint8_t *data, size_t len, const char *path, int rank, bool quick,
                                 mt_fr_dump_t *out, mt_error_t *err);

/* s[0..n) cut as an entry's name of cap - 1 bytes at most (and at its
 * first NUL) interned into d's string table (created when NULL) into *id.
 * MT_OK, MT_ERR_NOMEM. */
mt_status_t mt_fr_intern(mt_fr_dump_t *d, const char *s, size_t n, size_t cap, uint32_t *id);

/* dst's string table made a copy of src's (the same ids); dst's own is
 * freed first. MT_OK or MT_ERR_NOMEM (dst's table then NULL). */
mt_status_t mt_fr_strs_copy(const mt_fr_dump_t *src, mt_fr_dump_t *dst);

/* a's and b's string tables hold the same names under the same ids (the
 * two readings of a dump, compared by test_fr_pickle and the fuzz target). */
bool mt_fr_strs_equal(const mt_fr_dump_t *a, const mt_fr_dump_t *b);

#endif
