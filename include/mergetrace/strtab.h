/* String interning: each distinct byte string gets one small integer id, so
 * the event table stores 4-byte ids instead of names. */
#ifndef MERGETRACE_STRTAB_H
#define MERGETRACE_STRTAB_H

#include <stddef.h>
#include <stdint.h>

#include "mergetrace/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mt_strtab mt_strtab_t;

/* Id 0 is always the empty string; it also means "absent" in records. */
#define MT_STR_NONE 0u

/* Create an empty table. Returns NULL on allocation failure. */
mt_strtab_t *mt_strtab_create(void);

/* Free the table and all its strings. NULL does nothing. */
void mt_strtab_free(mt_strtab_t *st);

/* Intern len bytes at s (copied; s need not be NUL-terminated and may hold
 * NULs). Stores the id in *id. Returns MT_OK or MT_ERR_NOMEM (table
 * unchanged). Strings longer than 4 GiB - 1 are MT_ERR_LIMIT. */
mt_status_t mt_strtab_intern(mt_strtab_t *st, const char *s, size_t len, uint32_t *id);

/* The bytes of id, NUL-terminated; *len (if non-NULL) gets the length.
 * Borrowed: valid until the next mt_strtab_intern on this table or its
 * free. Unknown ids give "". */
const char *mt_strtab_get(const mt_strtab_t *st, uint32_t id, size_t *len);

/* Look up without inserting. Returns 1 and sets *id when present, else 0. */
int mt_strtab_find(const mt_strtab_t *st, const char *s, size_t len, uint32_t *id);

/* Number of ids handed out (including id 0). */
uint32_t mt_strtab_count(const mt_strtab_t *st);

/* Bytes held by the table (strings + index), for memory accounting. */
size_t mt_strtab_bytes(const mt_strtab_t *st);

#ifdef __cplusplus
}
#endif
#endif /* MERGETRACE_STRTAB_H */
