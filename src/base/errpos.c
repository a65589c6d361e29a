/* Error positions (see errpos.h). */
#include "base/errpos.h"

#include <stdio.h>
#include <string.h>

void mt_errpos_count(mt_errpos_t *p, const char *b, size_t n)
{
    const char *e = b + n, *nl;
    while ((nl = memchr(b, '\n', (size_t)(e - b))) != NULL) {
        p->line++;
        p->col = 1;
        b = nl + 1;
    }
    p->col += (int64_t)(e - b);
}

void mt_errpos_set(mt_error_t *err, const char *path, int64_t offset, int64_t line, int64_t col)
{
    if (!err)
        return;
    if (path)
        snprintf(err->path, sizeof err->path, "%s", path);
    err->offset = offset;
    err->line = line;
    err->col = col;
}

void mt_errpos_in(mt_error_t *err, const char *path, const char *text, size_t offset)
{
    mt_errpos_t p = {1, 1};
    mt_errpos_count(&p, text, offset);
    mt_errpos_set(err, path, (int64_t)offset, p.line, p.col);
}
