/* Part paths "<file>#<tag><N>" (partpath.h). */
#include "base/partpath.h"

#include <string.h>
#include <sys/stat.h>

int64_t mt_part_split(const char *path, const char *tag, size_t *file_len)
{
    const char *h = path ? strrchr(path, '#') : NULL;
    size_t tl = strlen(tag);
    if (!h || strncmp(h + 1, tag, tl) != 0 || !h[1 + tl])
        return -1;
    int64_t v = 0;
    for (const char *q = h + 1 + tl; *q; q++) {
        if ((unsigned)(*q - '0') > 9 || v > 100000000)
            return -1;
        v = v * 10 + (*q - '0');
    }
    struct stat sb;
    if (stat(path, &sb) == 0) /* a file of that very name is read as it is */
        return -1;
    *file_len = (size_t)(h - path);
    return v;
}
