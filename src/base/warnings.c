/* The run's warning list (mergetrace/warnings.h). */
#include "mergetrace/warnings.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mergetrace/buf.h"

void mt_warnings_add(mt_warnings_t *w, const char *code, int32_t rank, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = k >= 0 ? malloc((size_t)k + 1) : NULL;
    if (!s || MT_GROW(w->v, w->cap, w->n + 1, 16)) {
        free(s);
        w->st = MT_ERR_NOMEM;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(s, (size_t)k + 1, fmt, ap);
    va_end(ap);
    if (k > 0 && s[k - 1] == '\n')
        s[k - 1] = '\0';
    w->v[w->n++] = (mt_warning_t){code, rank, s};
}

void mt_warnings_free(mt_warnings_t *w)
{
    if (!w)
        return;
    for (size_t i = 0; i < w->n; i++)
        free(w->v[i].text);
    free(w->v);
    memset(w, 0, sizeof *w);
}
