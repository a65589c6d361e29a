/* A mistyped long option's likely meaning (mergetrace/suggest.h): edit
 * distance with neighbour swaps over the options a help text lists. */
#include "mergetrace/suggest.h"

#include <ctype.h>
#include <string.h>

int mt_suggest_edits(const char *a, size_t la, const char *b, size_t lb)
{
    int d[64][64];
    for (size_t i = 0; i <= la; i++)
        d[i][0] = (int)i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = (int)j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            int c = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            c = d[i - 1][j] + 1 < c ? d[i - 1][j] + 1 : c;
            c = d[i][j - 1] + 1 < c ? d[i][j - 1] + 1 : c;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < c)
                c = d[i - 2][j - 2] + 1;
            d[i][j] = c;
        }
    return d[la][lb];
}

const char *mt_suggest_option(const char *name, const char *text, size_t *len)
{
    size_t ln = strlen(name);
    if (ln < 4 || ln >= 64 || strncmp(name, "--", 2))
        return NULL;
    int best = 3;
    const char *bs = NULL;
    size_t bl = 0;
    for (const char *p = strstr(text, "--"); p; p = strstr(p + 2, "--")) {
        if (p > text && p[-1] != ' ' && p[-1] != ',')
            continue;
        size_t l = 2;
        while (isalnum((unsigned char)p[l]) || p[l] == '-')
            l++;
        if (l < 4 || l >= 64)
            continue;
        int e = mt_suggest_edits(name, ln, p, l);
        if (e < best && e > 0) {
            best = e;
            bs = p;
            bl = l;
        }
    }
    *len = bl;
    return bs;
}
