/* Part paths: "<file>#<tag><N>" names part N of <file> (an Nsight Systems
 * export's process, "#pid<N>"; a merged trace's rank, "#rank<N>") where no
 * file of the whole name exists. One parser for every reader of them. */
#ifndef MT_BASE_PARTPATH_H
#define MT_BASE_PARTPATH_H

#include <stddef.h>
#include <stdint.h>

/* N (0 to about 10^9) when path ends in "#<tag><N>", N all decimal digits,
 * and path itself is not an existing file; *file_len is then the length of
 * <file> (not checked to exist). Else -1. */
int64_t mt_part_split(const char *path, const char *tag, size_t *file_len);

#endif
