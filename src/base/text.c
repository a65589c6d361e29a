/* Text output helpers (see text.h). */
#include "base/text.h"

#include <stdlib.h>

/* ---- integers and microseconds without printf: the merged trace writes
 * several per event, and printf cost a tenth of the whole write ---- */

/* Decimal digits of v, written backwards ending at end; returns the start.
 * Two digits per division, from a table: half the divisions of one digit
 * at a time (report.json's step rows put 7 numbers per rank and step). */
static char *u64_digits(uint64_t v, char *end)
{
    static const char d2[] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                             "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                             "8081828384858687888990919293949596979899";
    while (v >= 100) {
        unsigned r = (unsigned)(v % 100);
        v /= 100;
        end -= 2;
        memcpy(end, d2 + 2 * r, 2);
    }
    if (v >= 10) {
        end -= 2;
        memcpy(end, d2 + 2 * v, 2);
    } else {
        *--end = (char)('0' + v);
    }
    return end;
}

size_t mt_fmt_i64(int64_t v, char *buf)
{
    char tmp[24];
    char *e = tmp + sizeof tmp;
    uint64_t mag = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    char *s = u64_digits(mag, e);
    if (v < 0)
        *--s = '-';
    size_t n = (size_t)(e - s);
    memcpy(buf, s, n);
    buf[n] = '\0';
    return n;
}

size_t mt_fmt_u64(uint64_t v, char *buf)
{
    char tmp[24];
    char *e = tmp + sizeof tmp;
    char *s = u64_digits(v, e);
    size_t n = (size_t)(e - s);
    memcpy(buf, s, n);
    buf[n] = '\0';
    return n;
}

size_t mt_fmt_us(int64_t ns, char *buf)
{
    /* The magnitude as uint64 so that INT64_MIN has one too. */
    uint64_t mag = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
    char tmp[32];
    char *e = tmp + sizeof tmp;
    uint64_t frac = mag % 1000;
    *--e = (char)('0' + frac % 10);
    *--e = (char)('0' + frac / 10 % 10);
    *--e = (char)('0' + frac / 100);
    *--e = '.';
    char *s = u64_digits(mag / 1000, e);
    if (ns < 0)
        *--s = '-';
    size_t n = (size_t)(tmp + sizeof tmp - s);
    memcpy(buf, s, n);
    buf[n] = '\0';
    return n;
}

mt_status_t mt_outbuf_flush(mt_outbuf_t *b)
{
    size_t n = b->n;
    b->n = 0;
    return n ? b->w(b->ctx, b->b, n) : MT_OK;
}

mt_status_t mt_outbuf_write(void *ctx, const void *data, size_t len)
{
    mt_outbuf_t *b = ctx;
    if (len > sizeof b->b - b->n) {
        mt_status_t st = mt_outbuf_flush(b);
        if (st != MT_OK)
            return st;
        if (len >= sizeof b->b) /* larger than the buffer: on as it is */
            return b->w(b->ctx, data, len);
    }
    memcpy(b->b + b->n, data, len);
    b->n += len;
    return MT_OK;
}

void mt_out_printf(mt_out_t *o, const char *fmt, ...)
{
    char b[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b, sizeof b, fmt, ap);
    va_end(ap);
    if (n <= 0 || o->st != MT_OK)
        return;
    if ((size_t)n < sizeof b) {
        mt_out_put(o, b, (size_t)n);
        return;
    }
    /* longer than the stack buffer: format again into one of its size */
    char *big = malloc((size_t)n + 1);
    if (!big) {
        o->st = MT_ERR_NOMEM;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    mt_out_put(o, big, (size_t)n);
    free(big);
}

size_t mt_utf8_seq(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    if (c < 0x80)
        return 1;
    size_t k;
    unsigned min;
    if (c >= 0xc2 && c <= 0xdf) {
        k = 2;
        min = 0x80;
    } else if (c >= 0xe0 && c <= 0xef) {
        k = 3;
        min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
        k = 4;
        min = 0x10000;
    } else {
        return 0;
    }
    if (n < k)
        return 0;
    unsigned cp = c & (0xff >> (k + 1));
    for (size_t i = 1; i < k; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return k;
}

size_t mt_json_plain_len(const char *s, size_t len)
{
    size_t i = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    /* the mask's lowest bit marks the first quote, backslash, control byte
     * or byte outside ASCII (the borrows that may set higher ones start at
     * such a byte) */
    const uint64_t ones = UINT64_C(0x0101010101010101), high = ones << 7;
    for (; len - i >= 8; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        uint64_t q = w ^ (ones * '"'), b = w ^ (ones * '\\');
        uint64_t m = (((q - ones) & ~q) | ((b - ones) & ~b) | (w - ones * 0x20) | w) & high;
        if (m)
            return i + ((size_t)__builtin_ctzll(m) >> 3);
    }
#endif
    for (; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c >= 0x80 || c == '"' || c == '\\')
            break;
    }
    return i;
}

mt_status_t mt_json_string(const char *s, size_t len, mt_write_fn write, void *ctx)
{
    mt_out_t j = {write, ctx, MT_OK};
    mt_out_put(&j, "\"", 1);
    size_t run = 0;
    for (size_t i = 0; i < len; i++) {
        i += mt_json_plain_len(s + i, len - i); /* the bytes passed as they are */
        if (i >= len)
            break;
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x80) { /* valid UTF-8 passes, each byte of an invalid sequence is U+FFFD */
            size_t k = mt_utf8_seq((const unsigned char *)s + i, len - i);
            if (k) {
                i += k - 1;
                continue;
            }
            mt_out_put(&j, s + run, i - run);
            run = i + 1;
            mt_out_put(&j, "\xef\xbf\xbd", 3);
            continue;
        }
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        mt_out_put(&j, s + run, i - run);
        run = i + 1;
        char e[8];
        if (c == '"' || c == '\\') {
            e[0] = '\\';
            e[1] = (char)c;
            mt_out_put(&j, e, 2);
        } else {
            snprintf(e, sizeof e, "\\u%04x", c);
            mt_out_put(&j, e, 6);
        }
    }
    mt_out_put(&j, s + run, len - run);
    mt_out_put(&j, "\"", 1);
    return j.st;
}

mt_status_t mt_html_escape(const char *s, size_t len, mt_write_fn write, void *ctx)
{
    mt_out_t h = {write, ctx, MT_OK};
    size_t run = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *e;
        switch (c) {
        case '&': e = "&amp;"; break;
        case '<': e = "&lt;"; break;
        case '>': e = "&gt;"; break;
        case '"': e = "&quot;"; break;
        case '\'': e = "&#39;"; break;
        default:
            if (c >= 0x80) {
                size_t k = mt_utf8_seq((const unsigned char *)s + i, len - i);
                if (k) {
                    i += k - 1;
                    continue;
                }
                e = "\xef\xbf\xbd"; /* an invalid sequence's byte */
            } else if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f) {
                e = "\xef\xbf\xbd"; /* U+FFFD */
            } else {
                continue;
            }
        }
        mt_out_put(&h, s + run, i - run);
        mt_out_puts(&h, e);
        run = i + 1;
    }
    mt_out_put(&h, s + run, len - run);
    return h.st;
}

void mt_fmt_time(char *b, size_t cap, int64_t ns)
{
    double a = (double)(ns < 0 ? -ns : ns);
    if (a < 1e3)
        snprintf(b, cap, "%lld ns", (long long)ns);
    else if (a < 1e6)
        snprintf(b, cap, "%.1f us", (double)ns / 1e3);
    else if (a < 1e9)
        snprintf(b, cap, "%.2f ms", (double)ns / 1e6);
    else
        snprintf(b, cap, "%.2f s", (double)ns / 1e9);
}

/* Length of the UTF-8 sequence that starts with byte c (1 for a stray
 * continuation or an invalid lead byte, which then counts as a character). */
static size_t u8_len(unsigned char c)
{
    return c >= 0xf0 && c < 0xf8 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
}

size_t mt_fmt_cell(char *b, size_t cap, const char *s, size_t len, int w)
{
    size_t n = 0;
    while (n < len && s[n])
        n++;
    len = n;
    size_t chars = 0;
    for (size_t i = 0; i < len; chars++)
        i += u8_len((unsigned char)s[i]);
    size_t keep = chars > (size_t)w ? (size_t)(w > 1 ? w - 1 : 0) : chars, o = 0;
    for (size_t i = 0, c = 0; i < len && c < keep; c++) {
        size_t k = u8_len((unsigned char)s[i]);
        if (i + k > len)
            k = len - i;
        if (o + k + 1 > cap)
            break;
        for (size_t q = 0; q < k; q++) {
            unsigned char ch = (unsigned char)s[i + q];
            b[o++] = ch < 0x20 || ch == 0x7f ? '?' : (char)ch;
        }
        i += k;
    }
    if (chars > (size_t)w && o + 4 <= cap) {
        memcpy(b + o, "\xe2\x80\xa6", 3);
        o += 3;
    }
    for (size_t c = chars > (size_t)w ? (size_t)w : chars; c < (size_t)w && o + 1 < cap; c++)
        b[o++] = ' ';
    if (cap)
        b[o < cap ? o : cap - 1] = '\0';
    return o;
}

void mt_fmt_bytes(char *b, size_t cap, int64_t v)
{
    double x = v < 0 ? -(double)v : (double)v;
    const char *sign = v < 0 ? "-" : "";
    if (x < 1024)
        snprintf(b, cap, "%s%.0f B", sign, x);
    else if (x < 1024.0 * 1024)
        snprintf(b, cap, "%s%.2f KiB", sign, x / 1024);
    else if (x < 1024.0 * 1024 * 1024)
        snprintf(b, cap, "%s%.2f MiB", sign, x / (1024.0 * 1024));
    else
        snprintf(b, cap, "%s%.2f GiB", sign, x / (1024.0 * 1024 * 1024));
}
