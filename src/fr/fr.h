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


#endif
