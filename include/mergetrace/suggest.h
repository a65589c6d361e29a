/* A mistyped long option's likely meaning: the closest option of a
 * program's help text by edits (for "unknown option (did you mean
 * --x?)"). Pure; never prints. */
#ifndef MERGETRACE_SUGGEST_H
#define MERGETRACE_SUGGEST_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Edits (insert, delete, replace, swap two neighbours) from a[0..la) to
 * b[0..lb), both under 64 characters. */
int mt_suggest_edits(const char *a, size_t la, const char *b, size_t lb);

/* The option of text closest to name: of the words of text that start
 * with "--" (at its start or after a space or a comma; letters, digits
 * and '-' after it) and are 4 to 63 characters long, the first of those
 * fewest edits from name, when that is 1 or 2. Its start in text (its
 * length in *len), or NULL when none is, or name is no such word. */
const char *mt_suggest_option(const char *name, const char *text, size_t *len);

#ifdef __cplusplus
}
#endif
#endif
