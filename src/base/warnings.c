/* The run's warning list, and messages made safe for a terminal
 * (mergetrace/warnings.h). */
#include "mergetrace/warnings.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/text.h"
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

size_t mt_text_line(char *dst, size_t cap, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *u = (const unsigned char *)s;
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        char e[8];
        size_t el = 0, k = 1;
        unsigned c = u[i];
        if (c >= 0x80) {
            k = mt_utf8_seq(u + i, n - i);
            if (k == 2 && c == 0xc2 && u[i + 1] < 0xa0) { /* C1 control */
                memcpy(e, "\\u00", 4);
                e[4] = hex[u[i + 1] >> 4];
                e[5] = hex[u[i + 1] & 15];
                el = 6;
            } else if (!k) {
                k = 1;
                e[0] = '\\', e[1] = 'x', e[2] = hex[c >> 4], e[3] = hex[c & 15];
                el = 4;
            }
        } else if (c < 0x20 || c == 0x7f) {
            e[0] = '\\';
            e[1] = c == '\n' ? 'n' : c == '\r' ? 'r' : c == '\t' ? 't' : 'x';
            el = 2;
            if (e[1] == 'x')
                e[2] = hex[c >> 4], e[3] = hex[c & 15], el = 4;
        }
        const char *src = el ? e : s + i;
        size_t len = el ? el : k;
        if (o + len + 1 > cap)
            break;
        memcpy(dst + o, src, len);
        o += len;
        i += k;
    }
    if (cap)
        dst[o] = '\0';
    return o;
}
