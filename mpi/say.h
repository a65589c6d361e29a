/* The program's messages on stderr: each is formatted whole, then made safe
 * for a terminal (mt_text_line: a control character in a file name cannot
 * forge a line), then written with one call so lines from several
 * processes do not interleave mid-line. */
#ifndef MT_MPI_SAY_H
#define MT_MPI_SAY_H

#include <stddef.h>

/* printf-like; a final '\n' in the format is kept as the line's end, every
 * other control character is escaped. */
void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A line the core hands the program to say (its note callbacks,
 * mt_outdir_note_fn): "mergetrace: LINE" on stderr. ctx unused. */
void say_note(void *ctx, const char *line);

/* A buffer for a message the core words into a caller's buffer that names
 * the strings given (NULL ones count nothing): 1,400 bytes more than their
 * lengths, so nothing it names is cut. *cap its size; NULL when out of
 * memory (then the caller's small buffer: a line cut short beats none). */
char *say_buf(size_t *cap, const char *a, const char *b, const char *c);

#endif
