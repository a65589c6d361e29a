/* Messages on stderr, escaped and written whole (say.h). */
#include "say.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mergetrace/warnings.h"

void say(const char *fmt, ...)
{
    char small[1024], *s = small;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (k < 0)
        return;
    if ((size_t)k >= sizeof small) {
        s = malloc((size_t)k + 1);
        if (!s) { /* out of memory: the line cut short beats no line */
            s = small;
            k = (int)sizeof small - 1;
        } else {
            va_start(ap, fmt);
            vsnprintf(s, (size_t)k + 1, fmt, ap);
            va_end(ap);
        }
    }
    size_t n = (size_t)k, nl = n && s[n - 1] == '\n';
    size_t cap = (n - nl) * 6 + 2; /* the longest escape is 6 bytes */
    char lsmall[4096], *line = cap <= sizeof lsmall ? lsmall : malloc(cap);
    if (!line) {
        line = lsmall;
        cap = sizeof lsmall;
    }
    size_t m = mt_text_line(line, cap - 1, s, n - nl);
    if (nl)
        line[m++] = '\n';
    fwrite(line, 1, m, stderr);
    fflush(stderr);
    if (line != lsmall)
        free(line);
    if (s != small)
        free(s);
}

void say_note(void *ctx, const char *line)
{
    (void)ctx;
    say("mergetrace: %s\n", line);
}

char *say_buf(size_t *cap, const char *a, const char *b, const char *c)
{
    *cap = 1400 + (a ? strlen(a) : 0) + (b ? strlen(b) : 0) + (c ? strlen(c) : 0);
    return malloc(*cap);
}
