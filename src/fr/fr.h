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

/* mt_fr_dump_read with its fast path over entries of plain forms on (quick
 * true: what mt_fr_dump_read does) or off (every value through the JSON
 * cursor): the same dump, status and error either way (the fuzz target
 * and test_fr_pickle compare them). */
mt_status_t mt_fr_dump_read_with(const uint8_t *data, size_t len, const char *path, int rank, bool quick,
                                 mt_fr_dump_t *out, mt_error_t *err);


#endif
