/* The JSON scanner's general paths (trace/json_scan.h has the inline fast
 * paths and the contracts): the run of blanks, errors at a byte, skipping
 * a whole value, names interned through a small cache, numbers beyond
 * plain digits, string values. */
#define _POSIX_C_SOURCE 200809L
#include "trace/json_scan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mergetrace/buf.h"
#include "base/numparse.h"
#include "base/text.h"

/* ------------------------------------------------------------- scanning */

/* A run of blanks: Kineto indents every line ("\n    " between the
 * members of an event, more inside "args"), and those runs were a sixth of
 * a load's instructions byte by byte. 16 bytes are tested at once with
 * SSE2 (part of every x86-64 CPU, so no run-time check). The load may read
 * past the data: the scan ends at the NUL sentinel at the latest, and the
 * buffer has MT_PAD readable bytes after it. */
__attribute__((noinline)) const char *mt_json_skip_ws_run(const char *p)
{
#if defined(MT_SSE2)
    if (*p == '\n') {
        /* A line break and its indent, most runs: the spaces after the
         * break found with one compare; anything else after them (more
         * than 16, another blank) goes on below from there. */
        const __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + 1));
        unsigned m = ~(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(' ')));
        p += 1 + __builtin_ctz(m); /* m has bits above 15: never 0 */
        if ((unsigned char)*p > ' ')
            return p;
    }
    for (;;) {
        const __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
        const __m128i w = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8(' ')),
                                                     _mm_cmpeq_epi8(v, _mm_set1_epi8('\n'))),
                                        _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('\r')),
                                                     _mm_cmpeq_epi8(v, _mm_set1_epi8('\t'))));
        unsigned m = ~(unsigned)_mm_movemask_epi8(w) & 0xffffu;
        if (m)
            return p + __builtin_ctz(m);
        p += 16;
    }
#else
    static const unsigned char ws_char[256] = {[' '] = 1, ['\n'] = 1, ['\r'] = 1, ['\t'] = 1};
    while (ws_char[(unsigned char)*p])
        p++;
    return p;
#endif
}


/* A parse stops at p. If p is at (or past) the end of the buffered data the
 * unit is incomplete, else the input is wrong there: code MT_ERR_SYNTAX
 * (not JSON) or MT_ERR_FORMAT (JSON, but not what a trace holds there). */
__attribute__((noinline)) int mt_json_fail_as(parser_t *ps, const char *p, mt_status_t code, const char *what)
{
    if (p >= data_end(ps))
        return NEED_MORE;
    ps->fail_at = p;
    if (ps->err) {
        ps->err->offset = (int64_t)(ps->base_off + (uint64_t)(p - ps->buf));
        unsigned char c = (unsigned char)*p;
        if (c >= 0x20 && c < 0x7f)
            mt_error_set(ps->err, code, "expected %s, found '%c'", what, c);
        else
            mt_error_set(ps->err, code, "expected %s, found byte 0x%02x", what, c);
    }
    return (int)code;
}

__attribute__((noinline)) int mt_json_fail(parser_t *ps, const char *p, const char *what)
{
    return mt_json_fail_as(ps, p, MT_ERR_SYNTAX, what);
}

int mt_json_fail_code(parser_t *ps, const char *p, mt_status_t code, const char *what)
{
    ps->fail_at = p;
    if (ps->err) {
        ps->err->offset = (int64_t)(ps->base_off + (uint64_t)(p - ps->buf));
        mt_error_set(ps->err, code, "%s", what);
    }
    return (int)code;
}
/* ------------------------------------------------------------ values */

/* An object's key and its ':' skipped (*pp at the key's quote, then past
 * the ':'): MT_OK or the error. Both places in mt_json_skip_value that
 * read a key call it: the first member and the members after a ','. */
static inline int skip_key(parser_t *ps, const char **pp)
{
    const char *p = *pp;
    bool esc = false;
    if (*p != '"')
        return mt_json_fail(ps, p, "an object key");
    p = scan_string(p + 1, &esc);
    if (*p != '"')
        return mt_json_fail(ps, p, "a string character or '\"'");
    p = skip_ws(p + 1);
    if (*p != ':')
        return mt_json_fail(ps, p, "':'");
    *pp = p + 1;
    return MT_OK;
}

/* Skip one JSON value starting at p (after whitespace), validating it. No
 * recursion: nesting depth is limited only by memory. *out = after it. */
int mt_json_skip_value(parser_t *ps, const char *p, const char **out)
{
    size_t depth = 0;
    for (;;) {
        p = skip_ws(p);
        /* A value. */
        switch (*p) {
        case '"': {
            bool esc = false;
            p = scan_string(p + 1, &esc);
            if (*p != '"')
                return mt_json_fail(ps, p, "a string character or '\"'");
            p++;
            break;
        }
        case '{':
        case '[': {
            bool obj = *p == '{';
            if (MT_GROW(ps->stack, ps->stack_cap, depth + 1, 256))
                return mt_json_fail_code(ps, p, MT_ERR_NOMEM, "nesting stack");
            ps->stack[depth++] = obj;
            p = skip_ws(p + 1);
            if (*p == (obj ? '}' : ']')) {
                p++;
                depth--;
                break;
            }
            int r;
            if (obj && (r = skip_key(ps, &p)))
                return r;
            continue; /* the first element is a value */
        }
        case 't':
            if (memcmp(p, "true", 4))
                return mt_json_fail(ps, p, "a JSON value");
            p += 4;
            break;
        case 'f':
            if (memcmp(p, "false", 5))
                return mt_json_fail(ps, p, "a JSON value");
            p += 5;
            break;
        case 'n':
            if (memcmp(p, "null", 4))
                return mt_json_fail(ps, p, "a JSON value");
            p += 4;
            break;
        default: {
            /* Plain digits ("grid": [132, 1, 1]) need no grammar check. */
            uint64_t u;
            const char *e = fast_digits(ps, p, &u);
            if (e) {
                p = e;
                break;
            }
            e = scan_number(p);
            if (e == p)
                return mt_json_fail(ps, p, "a JSON value");
            if (*e == '\0' && e >= data_end(ps))
                return NEED_MORE;
            /* Validate the grammar only; range does not matter for a skip. */
            if (!mt_number_valid(p, (size_t)(e - p)))
                return mt_json_fail_code(ps, p, MT_ERR_SYNTAX, "malformed number");
            p = e;
            break;
        }
        }
        /* After a value: close containers or move to the next element. */
        for (;;) {
            if (!depth) {
                *out = p;
                return MT_OK;
            }
            p = skip_ws(p);
            bool obj = ps->stack[depth - 1];
            if (*p == ',') {
                p = skip_ws(p + 1);
                int r;
                if (obj && (r = skip_key(ps, &p)))
                    return r;
                break; /* next value */
            }
            if (*p == (obj ? '}' : ']')) {
                p++;
                depth--;
                continue;
            }
            return mt_json_fail(ps, p, obj ? "',' or '}'" : "',' or ']'");
        }
    }
}
static void put_utf8(char **q, unsigned cp)
{
    unsigned char *o = (unsigned char *)*q;
    if (cp < 0x80) {
        *o++ = (unsigned char)cp;
    } else if (cp < 0x800) {
        *o++ = (unsigned char)(0xc0 | cp >> 6);
        *o++ = (unsigned char)(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
        *o++ = (unsigned char)(0xe0 | cp >> 12);
        *o++ = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
        *o++ = (unsigned char)(0x80 | (cp & 0x3f));
    } else {
        *o++ = (unsigned char)(0xf0 | cp >> 18);
        *o++ = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
        *o++ = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
        *o++ = (unsigned char)(0x80 | (cp & 0x3f));
    }
    *q = (char *)o;
}

static unsigned hex4(const char *s)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned c = (unsigned char)s[i];
        v = v * 16 + (c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
    }
    return v;
}

static bool has_high(const char *s, size_t n)
{
    size_t i = 0;
#if defined(MT_SSE2)
    /* The token lies inside the buffer, which has MT_PAD readable bytes
     * after the data, so 16-byte loads may run past the token's end; the
     * mask drops those bytes. */
    for (; i < n; i += 16) {
        unsigned m = (unsigned)_mm_movemask_epi8(_mm_loadu_si128((const __m128i *)(const void *)(s + i)));
        if (n - i < 16)
            m &= (1u << (n - i)) - 1;
        if (m)
            return true;
    }
    return false;
#endif
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        if (w & 0x8080808080808080ull)
            return true;
    }
    for (; i < n; i++)
        if ((unsigned char)s[i] & 0x80)
            return true;
    return false;
}

static int ensure_scratch(parser_t *ps, size_t need)
{
    if (need <= ps->scratch_cap)
        return 0;
    size_t nc = ps->scratch_cap ? ps->scratch_cap : 256;
    while (nc < need)
        nc *= 2;
    char *s = realloc(ps->scratch, nc);
    if (!s)
        return -1;
    ps->scratch = s;
    ps->scratch_cap = nc;
    return 0;
}

/* Why: a trace repeats a few thousand names hundreds of thousands of times,
 * and the string table hashes every byte of each (kernel names run to
 * hundreds of bytes) before it finds the one it has. Here a name is first
 * looked up by its length and its first and last 8 bytes in a small
 * direct-mapped table of names interned before. Up to 16 bytes those
 * describe the whole string, so a hit is that string; longer hits are
 * compared with the interned bytes. The ids are the string table's own
 * (interned strings are never undone, not even with a partial unit), so
 * the result is what mt_strtab_intern returns. s lies in the parse buffer
 * (8-byte loads past the token stay inside its padding). */
/* A gloo collective is a complete event named "gloo:*" on the CPU (docs/
 * FORMATS.md "gloo collectives"). Looking up every complete event's name
 * to see cost the loader 0.7 % more instructions on a generated 20 MB
 * trace, which has none; so a string that starts with "gloo:" sets
 * has_gloo where it enters the table (a miss of intern_cached's cache, or
 * an unescaped string), and only a trace with one looks names up. */
static inline void note_gloo(parser_t *ps, const char *s, size_t n)
{
    uint32_t w, g;
    if (n <= 5)
        return;
    memcpy(&w, s, 4); /* a word compare: a call to memcmp for each new string cost more */
    memcpy(&g, "gloo", 4);
    if (w == g && s[4] == ':')
        ps->has_gloo = true;
}

static int intern_cached(parser_t *ps, const char *s, size_t n, uint32_t *id)
{
    static const unsigned char ones[16] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    uint64_t head, tail, mask;
    size_t k = n < 8 ? n : 8;
    memcpy(&mask, ones + 8 - k, 8); /* the first k bytes kept, in memory order */
    memcpy(&head, s, 8);
    memcpy(&tail, s + n - k, 8);
    head &= mask;
    tail &= mask;
    uint64_t h = (head * 0x9e3779b97f4a7c15ull) ^ (tail * 0xc2b2ae3d27d4eb4full) ^ n;
    struct name_slot *slot = &ps->names[(h >> 32) & (NAME_SLOTS - 1)];
    if (slot->len == n && slot->head == head && slot->tail == tail && n) {
        if (n <= 16 || memcmp(mt_strtab_get(ps->t->strings, slot->id, NULL), s, n) == 0) {
            *id = slot->id;
            return MT_OK;
        }
    }
    mt_status_t st = mt_strtab_intern(ps->t->strings, s, n, id);
    if (st)
        return mt_json_fail_code(ps, s, st, st == MT_ERR_NOMEM ? "interning a string" : "string too long");
    note_gloo(ps, s, n);
    if (n <= UINT32_MAX)
        *slot = (struct name_slot){.head = head, .tail = tail, .len = (uint32_t)n, .id = *id};
    return MT_OK;
}

/* Decode escapes and repair invalid UTF-8 (each bad byte -> U+FFFD), then
 * intern. The common case (no escape, ASCII) interns the raw bytes. */
int mt_json_intern(parser_t *ps, const strtok_t *tok, uint32_t *id)
{
    const char *s = tok->s;
    size_t n = tok->len;
    if (!tok->esc && !has_high(s, n))
        return intern_cached(ps, s, n, id);
    /* Worst case growth: every byte -> 3 bytes of U+FFFD. */
    if (ensure_scratch(ps, n * 3 + 8))
        return mt_json_fail_code(ps, s, MT_ERR_NOMEM, "string scratch");
    char *q = ps->scratch;
    bool bad = false;
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\\') {
            char e = s[i + 1];
            i += 2;
            switch (e) {
            case 'b': *q++ = '\b'; break;
            case 'f': *q++ = '\f'; break;
            case 'n': *q++ = '\n'; break;
            case 'r': *q++ = '\r'; break;
            case 't': *q++ = '\t'; break;
            case 'u': {
                unsigned cp = hex4(s + i);
                i += 4;
                if (cp >= 0xd800 && cp <= 0xdbff && i + 6 <= n && s[i] == '\\' && s[i + 1] == 'u') {
                    unsigned lo = hex4(s + i + 2);
                    if (lo >= 0xdc00 && lo <= 0xdfff) {
                        cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                        i += 6;
                    }
                }
                if (cp >= 0xd800 && cp <= 0xdfff) {
                    cp = 0xfffd; /* lone surrogate */
                    bad = true;
                }
                put_utf8(&q, cp);
                break;
            }
            default: *q++ = e; break; /* " \ / */
            }
        } else if (c < 0x80) {
            *q++ = (char)c;
            i++;
        } else {
            size_t k = mt_utf8_seq((const unsigned char *)s + i, n - i);
            if (k) {
                memcpy(q, s + i, k);
                q += k;
                i += k;
            } else {
                put_utf8(&q, 0xfffd);
                bad = true;
                i++;
            }
        }
    }
    if (bad)
        ps->t->stats.bad_utf8++;
    mt_status_t st = mt_strtab_intern(ps->t->strings, ps->scratch, (size_t)(q - ps->scratch), id);
    if (st)
        return mt_json_fail_code(ps, tok->s, st, st == MT_ERR_NOMEM ? "interning a string" : "string too long");
    note_gloo(ps, ps->scratch, (size_t)(q - ps->scratch));
    return MT_OK;
}
int mt_json_num_error(parser_t *ps, const char *p, mt_status_t st, const char *what)
{
    char msg[128];
    if (st == MT_ERR_RANGE)
        snprintf(msg, sizeof msg, "%s does not fit a 64-bit integer", what);
    else
        snprintf(msg, sizeof msg, "malformed number in %s", what);
    return mt_json_fail_code(ps, p, st, msg);
}
/* The general paths live apart from the inline fast paths below, so the
 * common case (plain digits) pays for no stack frame. */
__attribute__((noinline)) int mt_json_int64_slow(parser_t *ps, const char *p, int64_t *v, bool *ok,
                                              const char **out, const char *what)
{
    if (*p == '-' || (unsigned)(*p - '0') <= 9) {
        strtok_t tok = {0};
        int r = number_tok(ps, p, &tok, out);
        if (r)
            return r;
        mt_status_t st = mt_parse_int64(tok.s, tok.len, v);
        if (st == MT_ERR_SYNTAX)
            return mt_json_num_error(ps, p, st, what);
        if (st == MT_OK)
            *ok = true;
        else
            ps->t->stats.bad_values++; /* fractional or too large: not an id we can use */
        return MT_OK;
    }
    ps->t->stats.bad_values++;
    return mt_json_skip_value(ps, p, out);
}

__attribute__((noinline)) int mt_json_uint64_slow(parser_t *ps, const char *p, uint64_t *v, bool *ok,
                                               const char **out, const char *what)
{
    if (*p == '-' || (unsigned)(*p - '0') <= 9) {
        strtok_t tok = {0};
        int r = number_tok(ps, p, &tok, out);
        if (r)
            return r;
        mt_status_t st = mt_parse_uint64(tok.s, tok.len, v);
        if (st == MT_ERR_SYNTAX)
            return mt_json_num_error(ps, p, st, what);
        if (st == MT_OK) {
            *ok = true;
        } else {
            /* Negative ids (seen for some correlation fallbacks): keep the
             * two's complement so equal inputs stay equal. */
            int64_t s;
            if (mt_parse_int64(tok.s, tok.len, &s) == MT_OK) {
                *v = (uint64_t)s;
                *ok = true;
            } else {
                ps->t->stats.bad_values++;
            }
        }
        return MT_OK;
    }
    ps->t->stats.bad_values++;
    return mt_json_skip_value(ps, p, out);
}
int mt_json_value_str(parser_t *ps, const char *p, uint32_t *id, bool *ok, const char **out)
{
    *ok = false;
    if (*p == '"') {
        strtok_t tok = {0};
        int r = parse_string(ps, p, &tok, out);
        if (r)
            return r;
        r = mt_json_intern(ps, &tok, id);
        if (r)
            return r;
        *ok = true;
        return MT_OK;
    }
    ps->t->stats.bad_values++;
    return mt_json_skip_value(ps, p, out);
}

/* "Process Group Ranks": in a job of thousands of ranks every collective
 * event carries the full list of its group ("[0, 1, ..., 4095]", 24 KB at
 * 4096 ranks), and a process takes part in a few groups only. The last
 * RANK_LISTS distinct lists interned from raw bytes (no escape, ASCII) are
 * remembered; a value whose bytes equal one of them followed by its
 * closing quote is that string (it holds no quote, backslash or control
 * byte, so the scan would end there too): one memcmp instead of scanning,
 * hashing and comparing it again. Interned strings are never undone with a
 * partial unit, so the ids stay valid. */
int mt_json_value_rank_list(parser_t *ps, const char *p, uint32_t *id, bool *ok, const char **out)
{
    if (*p == '"') {
        size_t avail = (size_t)(data_end(ps) - p) - 1;
        for (unsigned i = 0; i < ps->n_rank_lists; i++) {
            size_t len;
            const char *s = mt_strtab_get(ps->t->strings, ps->rank_list[i], &len);
            if (avail > len && p[1 + len] == '"' && memcmp(p + 1, s, len) == 0) {
                *id = ps->rank_list[i];
                *ok = true;
                *out = p + 2 + len;
                return MT_OK;
            }
        }
        *ok = false;
        strtok_t tok = {0};
        int r = parse_string(ps, p, &tok, out);
        if (r)
            return r;
        if ((r = mt_json_intern(ps, &tok, id)))
            return r;
        *ok = true;
        if (!tok.esc && !has_high(tok.s, tok.len)) {
            ps->rank_list[ps->next_rank_list] = *id;
            ps->next_rank_list = (ps->next_rank_list + 1) % RANK_LISTS;
            if (ps->n_rank_lists < RANK_LISTS)
                ps->n_rank_lists++;
        }
        return MT_OK;
    }
    return mt_json_value_str(ps, p, id, ok, out);
}

/* A string or a number as a string id (pg names appear as both). */
int mt_json_value_str_or_num(parser_t *ps, const char *p, uint32_t *id, bool *ok, const char **out)
{
    if (*p == '-' || (unsigned)(*p - '0') <= 9) {
        strtok_t tok = {0};
        int r = number_tok(ps, p, &tok, out);
        if (r)
            return r;
        r = mt_json_intern(ps, &tok, id);
        *ok = r == MT_OK;
        return r;
    }
    return mt_json_value_str(ps, p, id, ok, out);
}
