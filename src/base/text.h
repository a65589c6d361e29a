/* Text output, the one writer of the core's reports (report.json, report.html,
 * the terminal text, gates): mt_out_t over an mt_write_fn keeps the first
 * error so callers write on and check once; JSON and HTML escaping; time
 * formatting for people. */
#ifndef MT_BASE_TEXT_H
#define MT_BASE_TEXT_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "mergetrace/buf.h"

/* Length of the valid UTF-8 sequence at s (n >= 1 bytes left): 1 for
 * ASCII, 2 to 4, or 0 when invalid (a stray or overlong byte, a surrogate,
 * past U+10FFFF, cut short). */
size_t mt_utf8_seq(const unsigned char *s, size_t n);

/* JSON string (quotes included) of s[0..len) into the sink: valid UTF-8
 * passed through, each byte of an invalid sequence as U+FFFD (a file name
 * or an Nsight string of another encoding: the output stays UTF-8),
 * control characters, quotes and backslashes escaped. MT_OK or the sink's
 * error. */
mt_status_t mt_json_string(const char *s, size_t len, mt_write_fn write, void *ctx);

/* How many of s[0..len)'s first bytes mt_json_string copies as they are
 * with no check of UTF-8: ASCII from 0x20 on but for the quote and the
 * backslash (eight bytes at a time). When it is len, the JSON string is
 * the quotes around s. */
size_t mt_json_plain_len(const char *s, size_t len);

/* s[0..len) as HTML text or attribute value: & < > " ' become &amp; &lt;
 * &gt; &quot; &#39;; NUL and other control bytes except tab, LF and CR become
 * U+FFFD (they are parse errors in HTML), and so does each byte of an
 * invalid UTF-8 sequence. Other bytes pass through. MT_OK or the sink's
 * error. */
mt_status_t mt_html_escape(const char *s, size_t len, mt_write_fn write, void *ctx);

/* v in decimal into buf (24 bytes at least), NUL-terminated; returns the
 * length. No printf: the merged-trace writer formats several per event. */
size_t mt_fmt_i64(int64_t v, char *buf);
size_t mt_fmt_u64(uint64_t v, char *buf);
/* ns as microseconds with exactly three decimals ("-1234.567"), exact from
 * the integer, into buf (32 bytes at least), NUL-terminated; returns the
 * length. */
size_t mt_fmt_us(int64_t ns, char *buf);

/* A byte count for people: "512 B", "1.50 KiB", "32.00 MiB", "-2.25 GiB"
 * (powers of 1024, two decimals). */
void mt_fmt_bytes(char *b, size_t cap, int64_t v);

/* A duration for people: "850 ns", "12.3 us", "4.56 ms", "1.23 s". */
void mt_fmt_time(char *b, size_t cap, int64_t ns);

/* A terminal column of w characters (w >= 1): s[0..len) (stopping at a NUL)
 * padded with spaces, or, when longer than w characters, its first w - 1
 * characters and "…" (U+2026). Characters are UTF-8 sequences, never split;
 * control bytes become '?'. Writes at most 4 * w + 1 bytes into b (cap must
 * allow that; less is cut short safely) and returns the byte length. Only
 * terminal text is cut: report.json and report.html keep names whole. */
size_t mt_fmt_cell(char *b, size_t cap, const char *s, size_t len, int w);

/* A sink in front of another (w, ctx) that gathers writes into b and
 * passes them on a buffer at a time: report.json and report.html are
 * written a few bytes at a time, and a stdio call for each (fwrite, ~180
 * instructions) was half the cost of the steps section's rows. Start it as
 * {.w = w, .ctx = ctx}; mt_outbuf_flush passes on what is held (call it
 * before the sink behind is used otherwise). The caller owns it. */
typedef struct mt_outbuf {
    mt_write_fn w;
    void *ctx;
    size_t n;
    char b[16384];
} mt_outbuf_t;

/* An mt_write_fn over the mt_outbuf_t passed as ctx. MT_OK or the sink's
 * error (a write that fills the buffer passes it on). */
mt_status_t mt_outbuf_write(void *ctx, const void *data, size_t len);

/* Pass on what b holds. MT_OK or the sink's error. */
mt_status_t mt_outbuf_flush(mt_outbuf_t *b);

typedef struct mt_out {
    mt_write_fn w;
    void *ctx;
    mt_status_t st; /* the first error; later writes do nothing */
} mt_out_t;

static inline void mt_out_put(mt_out_t *o, const char *s, size_t n)
{
    if (o->st == MT_OK && n)
        o->st = o->w(o->ctx, s, n);
}

static inline void mt_out_puts(mt_out_t *o, const char *s)
{
    mt_out_put(o, s, strlen(s));
}

/* printf into the sink; any length (a long result is formatted twice). */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
void mt_out_printf(mt_out_t *o, const char *fmt, ...);

/* A JSON string of at most cap bytes of s (stops at a NUL). */
static inline void mt_out_str(mt_out_t *o, const char *s, size_t cap)
{
    size_t n = 0;
    while (n < cap && s[n])
        n++;
    if (o->st == MT_OK)
        o->st = mt_json_string(s, n, o->w, o->ctx);
}

/* Microseconds with exactly 3 decimals from integer ns (no key). */
static inline void mt_out_us(mt_out_t *o, int64_t ns)
{
    char b[32];
    mt_out_put(o, b, mt_fmt_us(ns, b));
}

/* v in decimal, as "%lld" writes it (no key): no printf, for rows written
 * thousands of times (report.json's per-step ranks). */
static inline void mt_out_i64(mt_out_t *o, int64_t v)
{
    char b[24];
    mt_out_put(o, b, mt_fmt_i64(v, b));
}

/* s[0..len) HTML-escaped (mt_html_escape); nothing for NULL. */
static inline void mt_out_html(mt_out_t *o, const char *s, size_t len)
{
    if (o->st == MT_OK && s)
        o->st = mt_html_escape(s, len, o->w, o->ctx);
}

#endif
