/* The trace loader: a single streaming pass over the JSON bytes that builds
 * the compact per-rank model (mt_trace_t) without a DOM.
 *
 * Shape of the hot path (why it looks like this):
 * - Input arrives in chunks (read() or inflate) into one buffer that always
 *   has MT_PAD zero bytes after the valid data. Every scanner stops at a
 *   byte < 0x20, so the NUL sentinel ends any scan without a bounds check in
 *   the inner loops; only the slow path asks "was that the end?".
 * - Parsing is restartable at "units": one trace event, or one top-level
 *   member. A unit that runs past the buffered bytes returns NEED_MORE; the
 *   driver keeps the unit's bytes, reads more and parses the unit again from
 *   its start. Units are small, so the rare re-parse costs nothing, and
 *   memory is bounded by the chunk size plus the largest unit.
 * - Strings and blank runs are scanned 16 bytes at a time (SSE2, part of
 *   every x86-64 CPU, so chosen when compiling; byte loops elsewhere and in
 *   the MT_PORTABLE_SCAN build, which test_loader_portable and perf_paths
 *   compare); names are interned on the raw bytes when they hold no escape,
 *   through a small cache of the names seen (intern_cached).
 * - The keys Kineto writes are matched whole, quotes and colon included,
 *   as constants chosen by their first letter (ev_key_fast, arg_key_fast);
 *   other keys are read as strings and dispatched by length, then memcmp.
 * - Plain digits (ids, Kineto's "ts"/"dur") are converted in the scan that
 *   finds them; the rest exactly from their decimal text (numparse.c). */
#define _POSIX_C_SOURCE 200809L
#include "mergetrace/loader.h"
#include "mergetrace/buf.h"
#include "base/numparse.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mergetrace/input.h"
#include "mergetrace/classify.h"
#include "mergetrace/link.h"
#include "mergetrace/nsys.h"
#include "base/bigmem.h"
#include "base/errpos.h"
#include "base/text.h"

/* MT_PORTABLE_SCAN (cmake -DMT_PORTABLE_SCAN=ON, and the test build's
 * mergetrace_portable) forces the byte loops, so tests can check that both
 * scanners give the same tables. */
#if defined(__SSE2__) && !defined(MT_PORTABLE_SCAN)
#define MT_SSE2 1
#include <emmintrin.h>
#endif

#define MT_PAD 64u

/* Internal result of a unit parse: MT_OK, an mt_status_t error, or this. */
#define NEED_MORE (-1)

enum state {
    ST_START,      /* before the top-level value */
    ST_OBJ_FIRST,  /* after '{' of the top-level object */
    ST_OBJ_NEXT,   /* after a top-level member */
    ST_EV_FIRST,   /* after '[' of the event array */
    ST_EV_NEXT,    /* after an event */
    ST_END,        /* after the top-level value */
    ST_DONE,
};

/* "Process Group Ranks" values remembered per load (value_rank_list). */
#define RANK_LISTS 8
/* Slots of the parser's cache of interned names (intern_cached). */
#define NAME_SLOTS 512

typedef struct parser {
    mt_trace_t *t;
    mt_error_t *err;
    const mt_load_opts_t *opts;
    mt_input_t *in;
    char *buf;
    size_t cap;          /* bytes allocated for data (MT_PAD more are allocated) */
    size_t len;          /* valid bytes in buf */
    uint64_t base_off;   /* input offset of buf[0] */
    bool eof;
    bool gz_truncated;
    enum state state;
    bool saw_events;     /* a traceEvents array was found */
    bool values;         /* a bare array whose first element is not an object: JSON, not a trace */
    bool saw_fraction;   /* some ts had a fractional part */
    const char *fail_at; /* where a syntax error was found */
    /* Unescape scratch. */
    char *scratch;
    size_t scratch_cap;
    /* Depth stack for skipping nested values (1 = object, 0 = array). */
    unsigned char *stack;
    size_t stack_cap;
    /* Category cache: id of the last unknown category string seen. */
    mt_status_t oom;
    /* Classification at commit time, cached per name id. */
    bool classify;
    unsigned char *name_cls;   /* 0 unknown, 1 compute, 2 comm */
    size_t cap_name_cls;
    /* The last distinct "Process Group Ranks" values (value_rank_list). */
    uint32_t rank_list[RANK_LISTS];
    unsigned n_rank_lists, next_rank_list;
    /* One rank of a merged trace ("<file>#rank<R>"): only events whose
     * numeric pid is in [pid_lo, pid_hi) are kept; part_rank < 0: all. */
    int32_t part_rank;
    int64_t pid_lo, pid_hi;
    uint64_t part_kept;
    int64_t *part_pid;   /* per slot: the pid the rank's own trace had (GPU: the device); INT64_MIN unknown */
    bool part_done;      /* the rank's events are over: the rest of the file is not read */
    /* Strings interned from raw bytes, by their length and first and last
     * 8 bytes (intern_cached). */
    struct name_slot {
        uint64_t head, tail;
        uint32_t len, id;
    } names[NAME_SLOTS];
    bool has_gloo;       /* a string starts with "gloo:" (note_gloo) */
} parser_t;

/* ---------------------------------------------------------------- growth */

/* ------------------------------------------------------------- scanning */

/* A run of blanks: Kineto indents every line ("\n    " between the
 * members of an event, more inside "args"), and those runs were a sixth of
 * a load's instructions byte by byte. 16 bytes are tested at once with
 * SSE2 (part of every x86-64 CPU, so no run-time check). The load may read
 * past the data: the scan ends at the NUL sentinel at the latest, and the
 * buffer has MT_PAD readable bytes after it. */
__attribute__((noinline)) static const char *skip_ws_run(const char *p)
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

/* Most calls find no blank or exactly one space (": ", ", "), so those two
 * cases are tested before the run scanner. */
static inline const char *skip_ws(const char *p)
{
    if ((unsigned char)*p > ' ')
        return p;
    if (*p == ' ' && (unsigned char)p[1] > ' ')
        return p + 1;
    return skip_ws_run(p);
}

/* p points just after an opening quote. Returns a pointer to the closing
 * quote, or to the first byte that stops the scan otherwise (a control
 * byte, which includes the NUL sentinel at the end of the data). *esc is
 * set when a backslash was seen. Escapes are checked for form here so that
 * skipped strings are validated too. */
static inline const char *scan_string(const char *p, bool *esc)
{
    for (;;) {
#if defined(MT_SSE2)
        const __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
        const __m128i q = _mm_cmpeq_epi8(v, _mm_set1_epi8('"'));
        const __m128i b = _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'));
        /* v <= 0x1f (unsigned): max(v, 0x1f) == 0x1f */
        const __m128i c = _mm_cmpeq_epi8(_mm_max_epu8(v, _mm_set1_epi8(0x1f)), _mm_set1_epi8(0x1f));
        unsigned m = (unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_or_si128(q, b), c));
        if (!m) {
            p += 16;
            continue;
        }
        p += __builtin_ctz(m);
#else
        while ((unsigned char)*p >= 0x20 && *p != '"' && *p != '\\')
            p++;
#endif
        if (*p != '\\')
            return p;
        *esc = true;
        switch (p[1]) {
        case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
            p += 2;
            break;
        case 'u':
            for (int i = 2; i < 6; i++) {
                unsigned char h = (unsigned char)p[i];
                if (!((h >= '0' && h <= '9') || ((h | 0x20) >= 'a' && (h | 0x20) <= 'f')))
                    /* bad \u escape (or the end): stop here, but at the
                     * backslash when the bad byte is the closing quote
                     * ("\u12"), which would read as the string's end */
                    return h == '"' ? p : p + i;
            }
            p += 6;
            break;
        default:
            return p + 1; /* bad escape character (or the end) */
        }
    }
}

static const unsigned char num_char[256] = {
    ['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1, ['5'] = 1, ['6'] = 1,
    ['7'] = 1, ['8'] = 1, ['9'] = 1, ['-'] = 1, ['+'] = 1, ['.'] = 1, ['e'] = 1, ['E'] = 1,
};

static inline const char *scan_number(const char *p)
{
    while (num_char[(unsigned char)*p])
        p++;
    return p;
}

/* ------------------------------------------------------------ errors */

static inline const char *data_end(const parser_t *ps)
{
    return ps->buf + ps->len;
}

/* A parse stops at p. If p is at (or past) the end of the buffered data the
 * unit is incomplete, else the input is wrong there: code MT_ERR_SYNTAX
 * (not JSON) or MT_ERR_FORMAT (JSON, but not what a trace holds there). */
__attribute__((noinline)) static int fail_as(parser_t *ps, const char *p, mt_status_t code, const char *what)
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

__attribute__((noinline)) static int fail(parser_t *ps, const char *p, const char *what)
{
    return fail_as(ps, p, MT_ERR_SYNTAX, what);
}

static int fail_code(parser_t *ps, const char *p, mt_status_t code, const char *what)
{
    ps->fail_at = p;
    if (ps->err) {
        ps->err->offset = (int64_t)(ps->base_off + (uint64_t)(p - ps->buf));
        mt_error_set(ps->err, code, "%s", what);
    }
    return (int)code;
}

/* ------------------------------------------------------------ values */

static inline const char *fast_digits(const parser_t *ps, const char *p, uint64_t *v);
static inline const char *fast_digits_max(const parser_t *ps, const char *p, uint64_t *v, size_t max);

/* Skip one JSON value starting at p (after whitespace), validating it. No
 * recursion: nesting depth is limited only by memory. *out = after it. */
static int skip_value(parser_t *ps, const char *p, const char **out)
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
                return fail(ps, p, "a string character or '\"'");
            p++;
            break;
        }
        case '{':
        case '[': {
            bool obj = *p == '{';
            if (MT_GROW(ps->stack, ps->stack_cap, depth + 1, 256))
                return fail_code(ps, p, MT_ERR_NOMEM, "nesting stack");
            ps->stack[depth++] = obj;
            p = skip_ws(p + 1);
            if (*p == (obj ? '}' : ']')) {
                p++;
                depth--;
                break;
            }
            if (obj) {
                if (*p != '"')
                    return fail(ps, p, "an object key");
                bool esc = false;
                p = scan_string(p + 1, &esc);
                if (*p != '"')
                    return fail(ps, p, "a string character or '\"'");
                p = skip_ws(p + 1);
                if (*p != ':')
                    return fail(ps, p, "':'");
                p++;
            }
            continue; /* the first element is a value */
        }
        case 't':
            if (memcmp(p, "true", 4))
                return fail(ps, p, "a JSON value");
            p += 4;
            break;
        case 'f':
            if (memcmp(p, "false", 5))
                return fail(ps, p, "a JSON value");
            p += 5;
            break;
        case 'n':
            if (memcmp(p, "null", 4))
                return fail(ps, p, "a JSON value");
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
                return fail(ps, p, "a JSON value");
            if (*e == '\0' && e >= data_end(ps))
                return NEED_MORE;
            /* Validate the grammar only; range does not matter for a skip. */
            if (!mt_number_valid(p, (size_t)(e - p)))
                return fail_code(ps, p, MT_ERR_SYNTAX, "malformed number");
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
                if (obj) {
                    if (*p != '"')
                        return fail(ps, p, "an object key");
                    bool esc = false;
                    p = scan_string(p + 1, &esc);
                    if (*p != '"')
                        return fail(ps, p, "a string character or '\"'");
                    p = skip_ws(p + 1);
                    if (*p != ':')
                        return fail(ps, p, "':'");
                    p++;
                }
                break; /* next value */
            }
            if (*p == (obj ? '}' : ']')) {
                p++;
                depth--;
                continue;
            }
            return fail(ps, p, obj ? "',' or '}'" : "',' or ']'");
        }
    }
}

/* A string token: raw bytes between the quotes, and whether it had escapes. */
typedef struct strtok {
    const char *s;
    size_t len;
    bool esc;
} strtok_t;

/* p at the opening quote. */
static inline int parse_string(parser_t *ps, const char *p, strtok_t *tok, const char **out)
{
    if (*p != '"')
        return fail(ps, p, "'\"'");
    bool esc = false;
    const char *e = scan_string(p + 1, &esc);
    if (*e != '"')
        return fail(ps, e, "a string character or '\"'");
    tok->s = p + 1;
    tok->len = (size_t)(e - p - 1);
    tok->esc = esc;
    *out = e + 1;
    return MT_OK;
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
        return fail_code(ps, s, st, st == MT_ERR_NOMEM ? "interning a string" : "string too long");
    note_gloo(ps, s, n);
    if (n <= UINT32_MAX)
        *slot = (struct name_slot){.head = head, .tail = tail, .len = (uint32_t)n, .id = *id};
    return MT_OK;
}

/* Decode escapes and repair invalid UTF-8 (each bad byte -> U+FFFD), then
 * intern. The common case (no escape, ASCII) interns the raw bytes. */
static int intern_tok(parser_t *ps, const strtok_t *tok, uint32_t *id)
{
    const char *s = tok->s;
    size_t n = tok->len;
    if (!tok->esc && !has_high(s, n))
        return intern_cached(ps, s, n, id);
    /* Worst case growth: every byte -> 3 bytes of U+FFFD. */
    if (ensure_scratch(ps, n * 3 + 8))
        return fail_code(ps, s, MT_ERR_NOMEM, "string scratch");
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
        return fail_code(ps, tok->s, st, st == MT_ERR_NOMEM ? "interning a string" : "string too long");
    note_gloo(ps, ps->scratch, (size_t)(q - ps->scratch));
    return MT_OK;
}

/* "ts"/"dur" in the forms Kineto writes: digits (at most 16: older traces
 * write epoch microseconds, "ts": 1661203462598738) and an optional
 * fraction of 1 to 3 digits, then a byte that cannot continue a number.
 * Converted to ns in the same pass; NULL means "take the general path"
 * (sign, exponent, more digits, leading zero, end of buffer, a value past
 * INT64_MAX ns, which the general path reports). Below 10^16 us the value
 * in ns fits a uint64 and is exact, as the general path computes it. */
static inline const char *fast_us(const parser_t *ps, const char *p, int64_t *ns, bool *frac)
{
    const char *s = p;
    uint64_t x = 0;
    unsigned d;
    while ((d = (unsigned)(*p - '0')) <= 9) {
        x = x * 10 + d;
        p++;
    }
    size_t n = (size_t)(p - s);
    if (!n || n > 16 || (*s == '0' && n > 1))
        return NULL;
    uint64_t f = 0;
    size_t nf = 0;
    if (*p == '.') {
        p++;
        while (nf < 3 && (d = (unsigned)(*p - '0')) <= 9) {
            f = f * 10 + d;
            p++;
            nf++;
        }
        if (!nf)
            return NULL;
        static const uint64_t scale[4] = {1000, 100, 10, 1};
        f *= scale[nf];
        *frac = true;
    }
    if (*p != ',' && (num_char[(unsigned char)*p] || p >= data_end(ps)))
        return NULL; /* (a ',' passes both tests: fast_digits_max) */
    uint64_t r = x * 1000 + f;
    if (r > (uint64_t)INT64_MAX)
        return NULL;
    *ns = (int64_t)r;
    return p;
}

/* A number token at p. */
static inline int number_tok(parser_t *ps, const char *p, strtok_t *tok, const char **out)
{
    const char *e = scan_number(p);
    if (e == p)
        return fail(ps, p, "a number");
    if (e >= data_end(ps))
        return NEED_MORE;
    tok->s = p;
    tok->len = (size_t)(e - p);
    tok->esc = false;
    *out = e;
    return MT_OK;
}

static int num_error(parser_t *ps, const char *p, mt_status_t st, const char *what)
{
    char msg[128];
    if (st == MT_ERR_RANGE)
        snprintf(msg, sizeof msg, "%s does not fit a 64-bit integer", what);
    else
        snprintf(msg, sizeof msg, "malformed number in %s", what);
    return fail_code(ps, p, st, msg);
}

/* An integer value (int64); a string value or a non-integer is counted as a
 * bad value and skipped (*ok = false). */
/* Digits only (at most max: 18 always fit an int64, 19 a uint64; no
 * leading zero) followed by a byte that cannot continue a number: the
 * value, in one pass over the bytes. Anything else (sign, fraction,
 * exponent, long, the end of the buffer) returns NULL and the caller takes
 * the general path. */
static inline const char *fast_digits_max(const parser_t *ps, const char *p, uint64_t *v, size_t max)
{
    const char *s = p;
    uint64_t x = 0;
    unsigned d;
    while ((d = (unsigned)(*p - '0')) <= 9) {
        x = x * 10 + d;
        p++;
    }
    size_t n = (size_t)(p - s);
    if (!n || n > max || (*s == '0' && n > 1))
        return NULL;
    /* A ',' (after most numbers) neither continues a number nor is the
     * NUL sentinel past the data: the two tests are needed otherwise. */
    if (*p != ',' && (num_char[(unsigned char)*p] || p >= data_end(ps)))
        return NULL;
    *v = x;
    return p;
}

static inline const char *fast_digits(const parser_t *ps, const char *p, uint64_t *v)
{
    return fast_digits_max(ps, p, v, 18);
}

/* The general paths live apart from the inline fast paths below, so the
 * common case (plain digits) pays for no stack frame. */
__attribute__((noinline)) static int value_int64_slow(parser_t *ps, const char *p, int64_t *v, bool *ok,
                                                       const char **out, const char *what)
{
    if (*p == '-' || (unsigned)(*p - '0') <= 9) {
        strtok_t tok = {0};
        int r = number_tok(ps, p, &tok, out);
        if (r)
            return r;
        mt_status_t st = mt_parse_int64(tok.s, tok.len, v);
        if (st == MT_ERR_SYNTAX)
            return num_error(ps, p, st, what);
        if (st == MT_OK)
            *ok = true;
        else
            ps->t->stats.bad_values++; /* fractional or too large: not an id we can use */
        return MT_OK;
    }
    ps->t->stats.bad_values++;
    return skip_value(ps, p, out);
}

__attribute__((noinline)) static int value_uint64_slow(parser_t *ps, const char *p, uint64_t *v, bool *ok,
                                                        const char **out, const char *what)
{
    if (*p == '-' || (unsigned)(*p - '0') <= 9) {
        strtok_t tok = {0};
        int r = number_tok(ps, p, &tok, out);
        if (r)
            return r;
        mt_status_t st = mt_parse_uint64(tok.s, tok.len, v);
        if (st == MT_ERR_SYNTAX)
            return num_error(ps, p, st, what);
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
    return skip_value(ps, p, out);
}

static inline int value_int64(parser_t *ps, const char *p, int64_t *v, bool *ok, const char **out, const char *what)
{
    uint64_t u;
    const char *e = fast_digits(ps, p, &u);
    if (e) {
        *v = (int64_t)u;
        *ok = true;
        *out = e;
        return MT_OK;
    }
    *ok = false;
    return value_int64_slow(ps, p, v, ok, out, what);
}

static inline int value_uint64(parser_t *ps, const char *p, uint64_t *v, bool *ok, const char **out, const char *what)
{
    /* 19 digits always fit a uint64 ("Comms Id": 8568410204783148703). */
    const char *e = fast_digits_max(ps, p, v, 19);
    if (e) {
        *ok = true;
        *out = e;
        return MT_OK;
    }
    *ok = false;
    return value_uint64_slow(ps, p, v, ok, out, what);
}

/* The value of a member nobody reads ("queued": 0, "stream": 7, "device":
 * 0 in a kernel's args): plain digits and strings without the general
 * skipper's call and grammar check. Both are validated as skip_value would
 * (fast_digits takes only a valid number followed by a byte that cannot
 * continue it; a string must end at its quote); anything else goes there. */
static inline int skip_fast(parser_t *ps, const char *p, const char **out)
{
    if ((unsigned)(*p - '0') <= 9) {
        uint64_t u;
        const char *e = fast_digits(ps, p, &u);
        if (e) {
            *out = e;
            return MT_OK;
        }
    } else if (*p == '"') {
        bool esc = false;
        const char *e = scan_string(p + 1, &esc);
        if (*e == '"') {
            *out = e + 1;
            return MT_OK;
        }
    } else if (*p == '[') {
        /* A list of plain digits ("grid": [132, 1, 1]): valid JSON when
         * it closes; anything else is skipped again from its '['. */
        const char *q = skip_ws(p + 1);
        uint64_t u;
        const char *e;
        while ((e = fast_digits(ps, q, &u))) {
            q = skip_ws(e);
            if (*q == ']') {
                *out = q + 1;
                return MT_OK;
            }
            if (*q != ',')
                break;
            q = skip_ws(q + 1);
        }
    }
    return skip_value(ps, p, out);
}

static int value_str(parser_t *ps, const char *p, uint32_t *id, bool *ok, const char **out)
{
    *ok = false;
    if (*p == '"') {
        strtok_t tok = {0};
        int r = parse_string(ps, p, &tok, out);
        if (r)
            return r;
        r = intern_tok(ps, &tok, id);
        if (r)
            return r;
        *ok = true;
        return MT_OK;
    }
    ps->t->stats.bad_values++;
    return skip_value(ps, p, out);
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
static int value_rank_list(parser_t *ps, const char *p, uint32_t *id, bool *ok, const char **out)
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
        if ((r = intern_tok(ps, &tok, id)))
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
    return value_str(ps, p, id, ok, out);
}

/* A string or a number as a string id (pg names appear as both). */
static int value_str_or_num(parser_t *ps, const char *p, uint32_t *id, bool *ok, const char **out)
{
    if (*p == '-' || (unsigned)(*p - '0') <= 9) {
        strtok_t tok = {0};
        int r = number_tok(ps, p, &tok, out);
        if (r)
            return r;
        r = intern_tok(ps, &tok, id);
        *ok = r == MT_OK;
        return r;
    }
    return value_str(ps, p, id, ok, out);
}

/* ---------------------------------------------------------- key matching */

#define KEY_IS(tok, lit) ((tok).len == sizeof(lit) - 1 && memcmp((tok).s, lit, sizeof(lit) - 1) == 0)

/* Object iteration helpers. p at '{'. */
static inline int obj_begin(parser_t *ps, const char *p, const char **out, bool *empty)
{
    if (*p != '{')
        return fail(ps, p, "'{'");
    p = skip_ws(p + 1);
    *empty = *p == '}';
    *out = *empty ? p + 1 : p;
    return MT_OK;
}

/* Read `"key" :` at p (after whitespace); *out after the colon + ws. */
static inline int obj_key(parser_t *ps, const char *p, strtok_t *key, const char **out)
{
    if (*p != '"')
        return fail(ps, p, "an object key");
    int r = parse_string(ps, p, key, &p);
    if (r)
        return r;
    p = skip_ws(p);
    if (*p != ':')
        return fail(ps, p, "':'");
    *out = skip_ws(p + 1);
    return MT_OK;
}

/* After a member value: ',' -> *more = true, '}' -> false. */
static inline int obj_next(parser_t *ps, const char *p, bool *more, const char **out)
{
    p = skip_ws(p);
    if (*p == ',') {
        *more = true;
        *out = skip_ws(p + 1);
        return MT_OK;
    }
    if (*p == '}') {
        *more = false;
        *out = p + 1;
        return MT_OK;
    }
    return fail(ps, p, "',' or '}'");
}

/* --------------------------------------------------------------- args */

typedef struct ev_extra {
    bool coll_init;          /* coll holds its defaults (set on first use: most events have none) */
    mt_coll_t coll;          /* collective fields found in args */
    uint32_t meta_str;       /* args.name / args.labels */
    int64_t meta_value;      /* args.sort_index */
    bool has_meta;
    const char *dims;        /* "Input Dims" value span (buffer stays valid for the unit) */
    size_t dims_len;
    uint32_t input_type;     /* first "Input type" string */
    mt_mem_t mem;            /* [memory] args; only mem.fields is set before the first one */
    int64_t pid, tid;        /* the event's ids at full width until it is committed */
    uint64_t corr, ext;      /* (mt_event_set_ids narrows them) */
} ev_extra_t;

/* Product of the first inner list of an "Input Dims" value, e.g.
 * [[394241]] -> 394241, [[8, 16], []] -> 128. -1 when not of that shape. */
static int64_t dims_nelems(const char *s, size_t n)
{
    const char *p = s, *e = s + n;
    while (p < e && *p != '[')
        p++;
    p++;
    while (p < e && (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r'))
        p++;
    if (p >= e || *p != '[')
        return -1;
    p++;
    int64_t prod = 1;
    bool any = false;
    while (p < e && *p != ']') {
        if ((unsigned)(*p - '0') <= 9) {
            int64_t v = 0;
            while (p < e && (unsigned)(*p - '0') <= 9) {
                if (v > INT64_MAX / 10)
                    return -1;
                v = v * 10 + (*p++ - '0');
            }
            if (v && prod > INT64_MAX / v)
                return -1;
            prod *= v;
            any = true;
        } else {
            p++;
        }
    }
    return any ? prod : -1;
}

static const mt_coll_t coll_defaults = {.seq = -1, .in_nelems = -1, .out_nelems = -1, .group_size = -1,
                                        .pg_id = -1, .src_rank = -1, .dst_rank = -1, .rank = -1,
                                        .grank_start = -1, .grank_stride = -1};

static inline mt_coll_t *xcoll(ev_extra_t *x)
{
    if (!x->coll_init) {
        x->coll = coll_defaults;
        x->coll_init = true;
    }
    return &x->coll;
}

/* The args keys the loader reads. */
enum arg_key {
    AK_NONE,
    AK_OTHER,
    AK_SEQ, AK_NAME, AK_RANK, AK_ADDR,
    AK_DTYPE, AK_BYTES, AK_LABELS, AK_COMMS_ID,
    AK_SRC_RANK, AK_DST_RANK, AK_DEVICE_ID, AK_GROUP_SIZE,
    AK_SORT_INDEX, AK_INPUT_DIMS, AK_INPUT_TYPE, AK_EXTERNAL_ID,
    AK_CORRELATION, AK_DEVICE_TYPE, AK_IN_MSG_NELEMS, AK_IN_SPLIT_SIZE,
    AK_OUT_MSG_NELEMS, AK_OUT_SPLIT_SIZE, AK_TOTAL_RESERVED, AK_COLLECTIVE_NAME,
    AK_TOTAL_ALLOCATED, AK_PROCESS_GROUP_ID, AK_GLOBAL_RANK_START, AK_PROCESS_GROUP_NAME,
    AK_GLOBAL_RANK_STRIDE, AK_PROCESS_GROUP_RANKS, AK_PROCESS_GROUP_DESCRIPTION,
    AK_WAIT_ON_STREAM, AK_WAIT_RECORD_CORR,
};

/* An args key token to its id (raw bytes, as before: an escaped spelling
 * is another key). */
static int arg_key_of(const strtok_t *k)
{
    switch (k->len) {
    case 3:
        if (memcmp(k->s, "Seq", 3) == 0)
            return AK_SEQ;
        return AK_OTHER;
    case 4:
        if (memcmp(k->s, "name", 4) == 0)
            return AK_NAME;
        if (memcmp(k->s, "Rank", 4) == 0)
            return AK_RANK;
        if (memcmp(k->s, "Addr", 4) == 0)
            return AK_ADDR;
        return AK_OTHER;
    case 5:
        if (memcmp(k->s, "dtype", 5) == 0)
            return AK_DTYPE;
        if (memcmp(k->s, "Bytes", 5) == 0)
            return AK_BYTES;
        return AK_OTHER;
    case 6:
        if (memcmp(k->s, "labels", 6) == 0)
            return AK_LABELS;
        return AK_OTHER;
    case 8:
        if (memcmp(k->s, "Comms Id", 8) == 0)
            return AK_COMMS_ID;
        if (memcmp(k->s, "Src Rank", 8) == 0)
            return AK_SRC_RANK;
        if (memcmp(k->s, "Dst Rank", 8) == 0)
            return AK_DST_RANK;
        return AK_OTHER;
    case 9:
        if (memcmp(k->s, "Device Id", 9) == 0)
            return AK_DEVICE_ID;
        return AK_OTHER;
    case 10:
        if (memcmp(k->s, "Group size", 10) == 0)
            return AK_GROUP_SIZE;
        if (memcmp(k->s, "sort_index", 10) == 0)
            return AK_SORT_INDEX;
        if (memcmp(k->s, "Input Dims", 10) == 0)
            return AK_INPUT_DIMS;
        if (memcmp(k->s, "Input type", 10) == 0)
            return AK_INPUT_TYPE;
        return AK_OTHER;
    case 11:
        if (memcmp(k->s, "External id", 11) == 0)
            return AK_EXTERNAL_ID;
        if (memcmp(k->s, "external id", 11) == 0)
            return AK_EXTERNAL_ID;
        if (memcmp(k->s, "correlation", 11) == 0)
            return AK_CORRELATION;
        if (memcmp(k->s, "Device Type", 11) == 0)
            return AK_DEVICE_TYPE;
        return AK_OTHER;
    case 13:
        if (memcmp(k->s, "In msg nelems", 13) == 0)
            return AK_IN_MSG_NELEMS;
        if (memcmp(k->s, "In split size", 13) == 0)
            return AK_IN_SPLIT_SIZE;
        return AK_OTHER;
    case 14:
        if (memcmp(k->s, "Out msg nelems", 14) == 0)
            return AK_OUT_MSG_NELEMS;
        if (memcmp(k->s, "Out split size", 14) == 0)
            return AK_OUT_SPLIT_SIZE;
        if (memcmp(k->s, "Total Reserved", 14) == 0)
            return AK_TOTAL_RESERVED;
        if (memcmp(k->s, "wait_on_stream", 14) == 0)
            return AK_WAIT_ON_STREAM;
        return AK_OTHER;
    case 15:
        if (memcmp(k->s, "Collective name", 15) == 0)
            return AK_COLLECTIVE_NAME;
        if (memcmp(k->s, "Total Allocated", 15) == 0)
            return AK_TOTAL_ALLOCATED;
        return AK_OTHER;
    case 16:
        if (memcmp(k->s, "Process Group ID", 16) == 0)
            return AK_PROCESS_GROUP_ID;
        return AK_OTHER;
    case 17:
        if (memcmp(k->s, "Global rank start", 17) == 0)
            return AK_GLOBAL_RANK_START;
        return AK_OTHER;
    case 18:
        if (memcmp(k->s, "Process Group Name", 18) == 0)
            return AK_PROCESS_GROUP_NAME;
        if (memcmp(k->s, "Global rank stride", 18) == 0)
            return AK_GLOBAL_RANK_STRIDE;
        return AK_OTHER;
    case 19:
        if (memcmp(k->s, "Process Group Ranks", 19) == 0)
            return AK_PROCESS_GROUP_RANKS;
        return AK_OTHER;
    case 25:
        if (memcmp(k->s, "Process Group Description", 25) == 0)
            return AK_PROCESS_GROUP_DESCRIPTION;
        return AK_OTHER;
    case 33:
        if (memcmp(k->s, "wait_on_cuda_event_record_corr_id", 33) == 0)
            return AK_WAIT_RECORD_CORR;
        return AK_OTHER;
    default:
        return AK_OTHER;
    }
}

/* Why: as ev_key_fast, for the keys Kineto writes in args. Those the
 * loader reads, and the frequent ones it passes over (AK_OTHER: a kernel's
 * "queued", "device", "stream", "grid", ...; a CPU op's "Ev Idx", "Call
 * stack", ...), are compared whole with their quotes and colon; any other
 * key, or blanks before the colon, returns AK_NONE and obj_key reads it. */
static inline int arg_key_fast(const char *p, const char **out)
{
#define AK_AT(lit, id)                                                              \
    if (memcmp(p, "\"" lit "\":", sizeof(lit) + 2) == 0) {                             \
        /* the slow path's table agrees (checked in debug builds) */                \
        assert(arg_key_of(&(strtok_t){lit, sizeof(lit) - 1, false}) == (id));       \
        *out = skip_ws(p + sizeof(lit) + 2);                                        \
        return id;                                                                  \
    }
    switch (p[1]) {
    case 'E':
        AK_AT("External id", AK_EXTERNAL_ID)
        AK_AT("Ev Idx", AK_OTHER)
        break;
    case 'c':
        AK_AT("correlation", AK_CORRELATION)
        AK_AT("cbid", AK_OTHER)
        AK_AT("context", AK_OTHER)
        AK_AT("cuda_sync_kind", AK_OTHER)
        break;
    case 'd':
        AK_AT("device", AK_OTHER)
        AK_AT("dtype", AK_DTYPE)
        AK_AT("direction", AK_OTHER)
        break;
    case 's':
        AK_AT("stream", AK_OTHER)
        AK_AT("shared memory", AK_OTHER)
        AK_AT("sort_index", AK_SORT_INDEX)
        AK_AT("size", AK_OTHER)
        AK_AT("sqid", AK_OTHER)
        break;
    case 'q':
        AK_AT("queued", AK_OTHER)
        break;
    case 'r':
        AK_AT("registers per thread", AK_OTHER)
        AK_AT("row", AK_OTHER)
        break;
    case 'g':
        AK_AT("grid", AK_OTHER)
        break;
    case 'b':
        AK_AT("block", AK_OTHER)
        AK_AT("blocks per SM", AK_OTHER)
        AK_AT("bytes", AK_OTHER)
        break;
    case 'w':
        AK_AT("warps per SM", AK_OTHER)
        AK_AT("wait_on_stream", AK_WAIT_ON_STREAM)
        AK_AT("wait_on_cuda_event_record_corr_id", AK_WAIT_RECORD_CORR)
        AK_AT("wait_on_cuda_event_id", AK_OTHER)
        break;
    case 'e':
        AK_AT("est. achieved occupancy %", AK_OTHER)
        AK_AT("external id", AK_EXTERNAL_ID)
        break;
    case 'I':
        AK_AT("Input Dims", AK_INPUT_DIMS)
        AK_AT("Input type", AK_INPUT_TYPE)
        AK_AT("In msg nelems", AK_IN_MSG_NELEMS)
        AK_AT("In split size", AK_IN_SPLIT_SIZE)
        break;
    case 'O':
        AK_AT("Out msg nelems", AK_OUT_MSG_NELEMS)
        AK_AT("Out split size", AK_OUT_SPLIT_SIZE)
        AK_AT("Op count", AK_OTHER)
        break;
    case 'C':
        AK_AT("Collective name", AK_COLLECTIVE_NAME)
        AK_AT("Comms Id", AK_COMMS_ID)
        AK_AT("Call stack", AK_OTHER)
        AK_AT("Concrete Inputs", AK_OTHER)
        break;
    case 'G':
        AK_AT("Group size", AK_GROUP_SIZE)
        AK_AT("Global rank start", AK_GLOBAL_RANK_START)
        AK_AT("Global rank stride", AK_GLOBAL_RANK_STRIDE)
        break;
    case 'P':
        AK_AT("Process Group Name", AK_PROCESS_GROUP_NAME)
        AK_AT("Process Group Description", AK_PROCESS_GROUP_DESCRIPTION)
        AK_AT("Process Group Ranks", AK_PROCESS_GROUP_RANKS)
        AK_AT("Process Group ID", AK_PROCESS_GROUP_ID)
        AK_AT("Profiler Event Index", AK_OTHER)
        AK_AT("Python parent id", AK_OTHER)
        AK_AT("Python id", AK_OTHER)
        break;
    case 'S':
        AK_AT("Seq", AK_SEQ)
        AK_AT("Sequence number", AK_OTHER)
        AK_AT("Src Rank", AK_SRC_RANK)
        break;
    case 'R':
        AK_AT("Rank", AK_RANK)
        AK_AT("Record function id", AK_OTHER)
        break;
    case 'F':
        AK_AT("Fwd thread id", AK_OTHER)
        break;
    case 'T':
        AK_AT("Trace name", AK_OTHER)
        AK_AT("Trace iteration", AK_OTHER)
        AK_AT("Total Allocated", AK_TOTAL_ALLOCATED)
        AK_AT("Total Reserved", AK_TOTAL_RESERVED)
        break;
    case 'M':
        AK_AT("Module Hierarchy", AK_OTHER)
        break;
    case 'D':
        AK_AT("Device Type", AK_DEVICE_TYPE)
        AK_AT("Device Id", AK_DEVICE_ID)
        AK_AT("Dst Rank", AK_DST_RANK)
        break;
    case 'A':
        AK_AT("Addr", AK_ADDR)
        break;
    case 'B':
        AK_AT("Bytes", AK_BYTES)
        break;
    case 'm':
        AK_AT("memory bandwidth (GB/s)", AK_OTHER)
        break;
    case 'n':
        AK_AT("name", AK_NAME)
        break;
    case 'l':
        AK_AT("labels", AK_LABELS)
        break;
    case 'p':
        AK_AT("packet_ptr", AK_OTHER)
        break;
    case 'k':
        AK_AT("k_work_ptr", AK_OTHER)
        break;
    default:
        break;
    }
#undef AK_AT
    return AK_NONE;
}

/* A stream-wait arg of a cuda_sync event (enable_cuda_sync_events), at
 * its value: kept in the record of the event being parsed (the last of
 * t->swaits when it names event n_events + 1, else a new one), written
 * here so that events without these args pay nothing, not even a flag.
 * parse_event takes the record back when the event is not kept; the
 * analysis reads only cuda_sync events' records. */
static __attribute__((noinline, cold)) int swait_arg(parser_t *ps, const char *p, int key, const char **out)
{
    mt_trace_t *t = ps->t;
    int64_t v = -1;
    bool ok = false;
    int r = value_int64(ps, p, &v, &ok, out, key == AK_WAIT_ON_STREAM ? "wait_on_stream"
                                                                     : "wait_on_cuda_event_record_corr_id");
    if (r || !ok)
        return r;
    uint32_t ev = (uint32_t)t->n_events + 1;
    if (!t->n_swaits || t->swaits[t->n_swaits - 1].event != ev) {
        if (MT_GROW(t->swaits, t->cap_swaits, t->n_swaits + 1, 64))
            return fail_code(ps, p, MT_ERR_NOMEM, "stream wait table");
        t->swaits[t->n_swaits++] = (mt_swait_t){.wait_stream = -1, .record_corr = -1, .event = ev};
    }
    mt_swait_t *w = &t->swaits[t->n_swaits - 1];
    if (key == AK_WAIT_ON_STREAM)
        w->wait_stream = v;
    else
        w->record_corr = v;
    return MT_OK;
}

/* The stream-wait record of the event being parsed (swait_arg), if any,
 * taken back: the event is not kept. */
static __attribute__((noinline, cold)) void swait_drop(mt_trace_t *t)
{
    if (t->n_swaits && t->swaits[t->n_swaits - 1].event == (uint32_t)t->n_events + 1)
        t->n_swaits--;
}

/* p at '{' of "args". */
static int parse_args(parser_t *ps, const char *p, mt_event_t *ev, ev_extra_t *x, const char **out)
{
    bool empty = false, more = true, ok = false;
    int r = obj_begin(ps, p, &p, &empty);
    if (r)
        return r;
    if (empty) {
        *out = p;
        return MT_OK;
    }
    while (more) {
        int key = arg_key_fast(p, &p);
        if (key == AK_NONE) {
            strtok_t k = {0};
            if ((r = obj_key(ps, p, &k, &p)))
                return r;
            key = arg_key_of(&k);
        }
        r = -2; /* "not handled" */
        switch (key) {
        case AK_SEQ: {
            r = value_int64(ps, p, &xcoll(x)->seq, &ok, &p, "Seq");
            if (ok) xcoll(x)->fields |= MT_COLL_F_SEQ;
            break;
        }
        case AK_NAME: {
            r = value_str(ps, p, &x->meta_str, &ok, &p);
            if (ok) x->has_meta = true;
            break;
        }
        case AK_RANK: {
            r = value_int64(ps, p, &xcoll(x)->rank, &ok, &p, "Rank");
            if (ok) xcoll(x)->fields |= MT_COLL_F_RANK;
            break;
        }
        case AK_ADDR: {
            r = value_uint64(ps, p, &x->mem.addr, &ok, &p, "Addr");
            if (ok) x->mem.fields |= MT_MEM_F_ADDR;
            break;
        }
        case AK_DTYPE: {
            r = value_str(ps, p, &xcoll(x)->dtype, &ok, &p);
            if (ok) xcoll(x)->fields |= MT_COLL_F_DTYPE;
            break;
        }
        case AK_BYTES: {
            r = value_int64(ps, p, &x->mem.bytes, &ok, &p, "Bytes");
            if (ok) x->mem.fields |= MT_MEM_F_BYTES;
            break;
        }
        case AK_LABELS: {
            r = value_str(ps, p, &x->meta_str, &ok, &p);
            if (ok) x->has_meta = true;
            break;
        }
        case AK_COMMS_ID: {
            r = value_uint64(ps, p, &xcoll(x)->comms_id, &ok, &p, "Comms Id");
            if (ok) xcoll(x)->fields |= MT_COLL_F_COMMS_ID;
            break;
        }
        case AK_SRC_RANK: {
            r = value_int64(ps, p, &xcoll(x)->src_rank, &ok, &p, "Src Rank");
            if (ok) xcoll(x)->fields |= MT_COLL_F_SRC_RANK;
            break;
        }
        case AK_DST_RANK: {
            r = value_int64(ps, p, &xcoll(x)->dst_rank, &ok, &p, "Dst Rank");
            if (ok) xcoll(x)->fields |= MT_COLL_F_DST_RANK;
            break;
        }
        case AK_DEVICE_ID: {
            r = value_int64(ps, p, &x->mem.device_id, &ok, &p, "Device Id");
            if (ok) x->mem.fields |= MT_MEM_F_DEV_ID;
            break;
        }
        case AK_GROUP_SIZE: {
            r = value_int64(ps, p, &xcoll(x)->group_size, &ok, &p, "Group size");
            if (ok) xcoll(x)->fields |= MT_COLL_F_GROUP_SIZE;
            break;
        }
        case AK_SORT_INDEX: {
            r = value_int64(ps, p, &x->meta_value, &ok, &p, "sort_index");
            if (ok) x->has_meta = true;
            break;
        }
        case AK_INPUT_DIMS: {
            const char *v0 = p;
            r = skip_value(ps, p, &p);
            if (!r) {
                x->dims = v0;
                x->dims_len = (size_t)(p - v0);
            }
            break;
        }
        case AK_INPUT_TYPE: {
            /* Keep the first string of the list: the dtype of input 0. */
            const char *v0 = p;
            r = skip_value(ps, p, &p);
            if (!r && *v0 == '[') {
                const char *q = skip_ws(v0 + 1);
                strtok_t s = {0};
                const char *dummy;
                if (*q == '"' && parse_string(ps, q, &s, &dummy) == MT_OK)
                    r = intern_tok(ps, &s, &x->input_type);
            }
            break;
        }
        case AK_EXTERNAL_ID: {
            r = value_uint64(ps, p, &x->ext, &ok, &p, "External id");
            if (ok) ev->flags |= MT_EV_HAS_EXT;
            break;
        }
        case AK_CORRELATION: {
            r = value_uint64(ps, p, &x->corr, &ok, &p, "correlation");
            if (ok) ev->flags |= MT_EV_HAS_CORR;
            break;
        }
        case AK_DEVICE_TYPE: {
            int64_t v = 0;
            r = value_int64(ps, p, &v, &ok, &p, "Device Type");
            if (ok && v >= INT32_MIN && v <= INT32_MAX) {
                x->mem.device_type = (int32_t)v;
                x->mem.fields |= MT_MEM_F_DEV_TYPE;
            }
            break;
        }
        case AK_IN_MSG_NELEMS: {
            r = value_int64(ps, p, &xcoll(x)->in_nelems, &ok, &p, "In msg nelems");
            if (ok) xcoll(x)->fields |= MT_COLL_F_IN_NELEMS;
            break;
        }
        case AK_IN_SPLIT_SIZE: {
            r = value_str(ps, p, &xcoll(x)->in_split, &ok, &p);
            if (ok) xcoll(x)->fields |= MT_COLL_F_SPLITS;
            break;
        }
        case AK_OUT_MSG_NELEMS: {
            r = value_int64(ps, p, &xcoll(x)->out_nelems, &ok, &p, "Out msg nelems");
            if (ok) xcoll(x)->fields |= MT_COLL_F_OUT_NELEMS;
            break;
        }
        case AK_OUT_SPLIT_SIZE: {
            r = value_str(ps, p, &xcoll(x)->out_split, &ok, &p);
            if (ok) xcoll(x)->fields |= MT_COLL_F_SPLITS;
            break;
        }
        case AK_TOTAL_RESERVED: {
            r = value_int64(ps, p, &x->mem.total_reserved, &ok, &p, "Total Reserved");
            if (ok) x->mem.fields |= MT_MEM_F_RESERVED;
            break;
        }
        case AK_COLLECTIVE_NAME: {
            r = value_str(ps, p, &xcoll(x)->name, &ok, &p);
            if (ok) xcoll(x)->fields |= MT_COLL_F_NAME;
            break;
        }
        case AK_TOTAL_ALLOCATED: {
            r = value_int64(ps, p, &x->mem.total_allocated, &ok, &p, "Total Allocated");
            if (ok) x->mem.fields |= MT_MEM_F_ALLOC;
            break;
        }
        case AK_PROCESS_GROUP_ID: {
            r = value_int64(ps, p, &xcoll(x)->pg_id, &ok, &p, "Process Group ID");
            if (ok) xcoll(x)->fields |= MT_COLL_F_PG_ID;
            break;
        }
        case AK_GLOBAL_RANK_START: {
            r = value_int64(ps, p, &xcoll(x)->grank_start, &ok, &p, "Global rank start");
            if (ok) xcoll(x)->fields |= MT_COLL_F_GRANK_START;
            break;
        }
        case AK_PROCESS_GROUP_NAME: {
            r = value_str_or_num(ps, p, &xcoll(x)->pg_name, &ok, &p);
            if (ok) xcoll(x)->fields |= MT_COLL_F_PG_NAME;
            break;
        }
        case AK_GLOBAL_RANK_STRIDE: {
            r = value_int64(ps, p, &xcoll(x)->grank_stride, &ok, &p, "Global rank stride");
            if (ok) xcoll(x)->fields |= MT_COLL_F_GRANK_STRIDE;
            break;
        }
        case AK_PROCESS_GROUP_RANKS: {
            r = value_rank_list(ps, p, &xcoll(x)->pg_ranks, &ok, &p);
            if (ok) xcoll(x)->fields |= MT_COLL_F_PG_RANKS;
            break;
        }
        case AK_PROCESS_GROUP_DESCRIPTION: {
            r = value_str(ps, p, &xcoll(x)->pg_desc, &ok, &p);
            if (ok) xcoll(x)->fields |= MT_COLL_F_PG_DESC;
            break;
        }
        case AK_WAIT_ON_STREAM:
        case AK_WAIT_RECORD_CORR:
            r = swait_arg(ps, p, key, &p);
            break;
        default:
            break;
        }
        if (r == -2)
            r = skip_fast(ps, p, &p);
        if (r)
            return r;
        if ((r = obj_next(ps, p, &more, &p)))
            return r;
    }
    *out = p;
    return MT_OK;
}

/* ------------------------------------------------------------- events */

static mt_phase_t phase_of(const strtok_t *t)
{
    if (t->len != 1)
        return MT_PH_OTHER;
    switch (t->s[0]) {
    case 'X': return MT_PH_X;
    case 'i': case 'I': return MT_PH_I;
    case 's': return MT_PH_S;
    case 'f': return MT_PH_F;
    case 't': return MT_PH_T;
    case 'M': return MT_PH_M;
    case 'C': return MT_PH_C;
    default: return MT_PH_OTHER;
    }
}

/* "stream 7" -> 7 (legacy GPU tids); a plain numeric string -> its value. */
static bool numeric_id_string(const strtok_t *t, int64_t *v)
{
    const char *s = t->s;
    size_t n = t->len;
    if (n > 7 && memcmp(s, "stream ", 7) == 0) {
        s += 7;
        n -= 7;
    }
    if (!n || n > 18)
        return false;
    int64_t x = 0;
    size_t i = 0;
    bool neg = s[0] == '-';
    if (neg)
        i = 1;
    if (i == n)
        return false;
    for (; i < n; i++) {
        if ((unsigned)(s[i] - '0') > 9)
            return false;
        x = x * 10 + (s[i] - '0');
    }
    *v = neg ? -x : x;
    return true;
}

/* pid / tid: a number, or a string (numeric strings become numbers). */
__attribute__((noinline)) static int parse_id_field_slow(parser_t *ps, const char *p, int64_t *v, bool *is_str,
                                                          const char **out, const char *what)
{
    *is_str = false;
    if (*p == '"') {
        strtok_t tok = {0};
        int r = parse_string(ps, p, &tok, out);
        if (r)
            return r;
        if (!tok.esc && numeric_id_string(&tok, v))
            return MT_OK;
        uint32_t id;
        r = intern_tok(ps, &tok, &id);
        if (r)
            return r;
        *v = id;
        *is_str = true;
        return MT_OK;
    }
    bool ok;
    int r = value_int64(ps, p, v, &ok, out, what);
    if (!r && !ok)
        *v = 0;
    return r;
}

/* Most pids and tids are plain digits: those without a call. */
static inline int parse_id_field(parser_t *ps, const char *p, int64_t *v, bool *is_str, const char **out,
                                 const char *what)
{
    uint64_t u;
    const char *e = fast_digits(ps, p, &u);
    if (e) {
        *is_str = false;
        *v = (int64_t)u;
        *out = e;
        return MT_OK;
    }
    return parse_id_field_slow(ps, p, v, is_str, out, what);
}

static int add_other_cat(parser_t *ps, uint32_t name, const char *p)
{
    mt_trace_t *t = ps->t;
    for (size_t i = 0; i < t->n_other_cats; i++)
        if (t->other_cat_names[i] == name) {
            t->other_cat_counts[i]++;
            return MT_OK;
        }
    if (t->n_other_cats == t->cap_other_cats) {
        /* two arrays, one capacity: grow the names, then the counts to the same */
        size_t cn = t->cap_other_cats, cc = t->cap_other_cats;
        if (MT_GROW(t->other_cat_names, cn, t->n_other_cats + 1, 8) ||
            MT_GROW(t->other_cat_counts, cc, cn, 8))
            return fail_code(ps, p, MT_ERR_NOMEM, "category table");
        t->cap_other_cats = cn;
    }
    t->other_cat_names[t->n_other_cats] = name;
    t->other_cat_counts[t->n_other_cats++] = 1;
    return MT_OK;
}

/* The class of one event, as mt_trace_classify would set it; done here so
 * the table is not walked again. Kernel names are decoded once per name. */
static int classify_event(parser_t *ps, mt_event_t *ev, const char *at)
{
    switch (mt_cat_normal((mt_cat_t)ev->cat)) {
    case MT_CAT_KERNEL: {
        if (ev->name >= ps->cap_name_cls) {
            size_t nc = ps->cap_name_cls ? ps->cap_name_cls : 1024;
            while (nc <= ev->name)
                nc *= 2;
            unsigned char *a = realloc(ps->name_cls, nc);
            if (!a)
                return fail_code(ps, at, MT_ERR_NOMEM, "class cache");
            memset(a + ps->cap_name_cls, 0, nc - ps->cap_name_cls);
            ps->name_cls = a;
            ps->cap_name_cls = nc;
        }
        unsigned char *c = &ps->name_cls[ev->name];
        if (!*c) {
            size_t len;
            const char *nm = mt_strtab_get(ps->t->strings, ev->name, &len);
            *c = mt_nccl_decode(nm, len, NULL) ? 2 : 1;
        }
        const mt_coll_t *co = ev->coll ? &ps->t->colls[ev->coll - 1] : NULL;
        bool meta = co && (co->fields & (MT_COLL_F_NAME | MT_COLL_F_PG_NAME | MT_COLL_F_COMMS_ID));
        ev->cls = (uint8_t)(*c == 2 || meta ? MT_CLASS_COMM : MT_CLASS_COMPUTE);
        break;
    }
    case MT_CAT_GPU_MEMCPY: ev->cls = MT_CLASS_MEMCPY; break;
    case MT_CAT_GPU_MEMSET: ev->cls = MT_CLASS_MEMSET; break;
    case MT_CAT_CUDA_SYNC: ev->cls = MT_CLASS_SYNC; break;
    case MT_CAT_GPU_USER_ANNOTATION: ev->cls = MT_CLASS_GPU_ANNOTATION; break;
    default: break;
    }
    return MT_OK;
}

/* The merge's process metadata of one slot (src/merge/merge.c
 * write_process_meta): process_name "rank R GPU d" gives the GPU's pid d,
 * process_labels "pid N" a CPU process's own pid N. */
static void part_meta(parser_t *ps, const mt_event_t *ev, uint32_t value, size_t slot)
{
    size_t nl, vl;
    const char *nm = mt_strtab_get(ps->t->strings, ev->name, &nl);
    const char *v = mt_strtab_get(ps->t->strings, value, &vl);
    if (!nm || !v)
        return;
    const char *num = NULL;
    size_t skip = 0;
    if (nl == 12 && memcmp(nm, "process_name", 12) == 0) {
        char pre[40];
        int k = snprintf(pre, sizeof pre, "rank %d GPU ", (int)ps->part_rank);
        if (k > 0 && vl > (size_t)k && memcmp(v, pre, (size_t)k) == 0)
            num = v, skip = (size_t)k;
    } else if (nl == 14 && memcmp(nm, "process_labels", 14) == 0 && vl > 4 && memcmp(v, "pid ", 4) == 0) {
        num = v, skip = 4;
    }
    int64_t n;
    if (num && mt_parse_int64(num + skip, vl - skip, &n) == MT_OK)
        ps->part_pid[slot] = n;
}

/* The keys of an event that the loader reads or knows. */
enum ev_key { EK_NONE, EK_OTHER, EK_PH, EK_TS, EK_ID, EK_CAT, EK_PID, EK_TID, EK_DUR, EK_NAME, EK_ARGS, EK_S, EK_BP };

/* A key token (raw bytes, as the old length-then-memcmp dispatch compared
 * them: an escaped spelling is another key). */
static int ev_key_of(const strtok_t *k)
{
    switch (k->len) {
    case 1:
        return k->s[0] == 's' ? EK_S : EK_OTHER;
    case 2:
        if (k->s[0] == 'p' && k->s[1] == 'h')
            return EK_PH;
        if (k->s[0] == 't' && k->s[1] == 's')
            return EK_TS;
        if (k->s[0] == 'i' && k->s[1] == 'd')
            return EK_ID;
        if (k->s[0] == 'b' && k->s[1] == 'p')
            return EK_BP;
        return EK_OTHER;
    case 3:
        if (memcmp(k->s, "cat", 3) == 0)
            return EK_CAT;
        if (memcmp(k->s, "pid", 3) == 0)
            return EK_PID;
        if (memcmp(k->s, "tid", 3) == 0)
            return EK_TID;
        if (memcmp(k->s, "dur", 3) == 0)
            return EK_DUR;
        return EK_OTHER;
    case 4:
        if (memcmp(k->s, "name", 4) == 0)
            return EK_NAME;
        if (memcmp(k->s, "args", 4) == 0)
            return EK_ARGS;
        return EK_OTHER;
    default:
        return EK_OTHER;
    }
}

/* Why: every event spells the same few keys, and finding a key's closing
 * quote with the vector scan, then its colon, is a chain of dependent
 * loads (perf put a fifth of parse_event's samples on the load after the
 * scan). Here the key, its quotes and its colon are compared with the
 * bytes at p as one constant of 5 to 7 bytes, chosen by the key's first
 * letter, and p moves on by a length known in advance. p at the opening
 * quote; on a match *out is after the colon and any blanks, else EK_NONE
 * and obj_key reads the key (any other key, blanks before the colon). */
static inline int ev_key_fast(const char *p, const char **out)
{
#define EK_AT(lit, id)                                                              \
    if (memcmp(p, lit, sizeof(lit) - 1) == 0) {                                     \
        /* the slow path's table agrees (checked in debug builds) */                \
        assert(ev_key_of(&(strtok_t){lit + 1, sizeof(lit) - 4, false}) == (id));    \
        *out = skip_ws(p + sizeof(lit) - 1);                                        \
        return id;                                                                  \
    }
    switch (p[1]) {
    case 'p': EK_AT("\"ph\":", EK_PH) EK_AT("\"pid\":", EK_PID) break;
    case 't': EK_AT("\"tid\":", EK_TID) EK_AT("\"ts\":", EK_TS) break;
    case 'c': EK_AT("\"cat\":", EK_CAT) break;
    case 'n': EK_AT("\"name\":", EK_NAME) break;
    case 'd': EK_AT("\"dur\":", EK_DUR) break;
    case 'a': EK_AT("\"args\":", EK_ARGS) break;
    case 'i': EK_AT("\"id\":", EK_ID) break;
    case 'b': EK_AT("\"bp\":", EK_BP) break;
    case 's': EK_AT("\"s\":", EK_S) break;
    default: break;
    }
#undef EK_AT
    return EK_NONE;
}

/* One element of traceEvents, p at its first byte. */
static int parse_event(parser_t *ps, const char *p, const char **out)
{
    mt_trace_t *t = ps->t;
    const char *start = p;
    if (*p != '{') {
        if (*p == '\0' && p >= data_end(ps))
            return NEED_MORE;
        return fail(ps, p, "'{' (a trace event)");
    }
    mt_event_t ev = {.ph = MT_PH_NONE, .cat = MT_CAT_NONE};
    /* Value spans of the keys a pass-through writer rewrites. */
    const char *sp_ts = NULL, *sp_ts_e = NULL, *sp_dur = NULL, *sp_dur_e = NULL, *sp_pid = NULL, *sp_pid_e = NULL;
    const char *sp_tid = NULL, *sp_tid_e = NULL, *sp_id = NULL, *sp_id_e = NULL;
    ev_extra_t x;
    x.coll_init = false;
    x.coll.fields = 0;
    x.meta_str = 0;
    x.meta_value = 0;
    x.has_meta = false;
    x.dims = NULL;
    x.dims_len = 0;
    x.input_type = 0;
    x.mem.fields = 0;
    x.pid = x.tid = 0;
    x.corr = x.ext = 0;
    uint32_t other_cat = 0;
    bool has_other_cat = false;
    bool empty = false, more = true, ok = false, is_str = false, has_ts = false;
    int r = obj_begin(ps, p, &p, &empty);
    if (r)
        return r;
    more = !empty;
    while (more) {
        strtok_t k = {0};
        int key = ev_key_fast(p, &p);
        if (key == EK_NONE) {
            if ((r = obj_key(ps, p, &k, &p)))
                return r;
            key = ev_key_of(&k);
        }
        r = -2;
        const char *v0 = p;
        switch (key) {
        case EK_PH: {
            strtok_t v = {0};
            if (p[0] == '"' && p[2] == '"' && (unsigned char)p[1] >= 0x20 && p[1] != '"' && p[1] != '\\') {
                /* "X": one plain byte between quotes, which is what
                 * parse_string would find, without the scan. */
                v.s = p + 1;
                v.len = 1;
                ev.ph = (uint8_t)phase_of(&v);
                p += 3;
                r = MT_OK;
            } else if (*p == '"') {
                r = parse_string(ps, p, &v, &p);
                if (!r)
                    ev.ph = (uint8_t)phase_of(&v);
            }
            break;
        }
        case EK_TS: {
            strtok_t v = {0};
            const char *e = fast_us(ps, p, &ev.ts, &ps->saw_fraction);
            has_ts = true;
            if (e) {
                p = e;
                r = MT_OK;
            } else if (*p != '-' && (unsigned)(*p - '0') > 9) {
                /* not a number: an error where it stands, never an event at 0 */
                return fail_as(ps, p, MT_ERR_FORMAT, "a number for \"ts\" (microseconds)");
            } else if ((r = number_tok(ps, p, &v, &p)) == MT_OK) {
                mt_status_t st = mt_parse_us_to_ns(v.s, v.len, &ev.ts);
                if (st)
                    return num_error(ps, v.s, st, "\"ts\"");
                if (memchr(v.s, '.', v.len))
                    ps->saw_fraction = true;
            }
            break;
        }
        case EK_ID:
            if (*p == '"') {
                strtok_t v = {0};
                if ((r = parse_string(ps, p, &v, &p)) == MT_OK) {
                    int64_t nv;
                    if (!v.esc && numeric_id_string(&v, &nv)) {
                        x.corr = (uint64_t)nv;
                    } else {
                        uint32_t id;
                        if ((r = intern_tok(ps, &v, &id)))
                            return r;
                        x.corr = id;
                        ev.flags |= MT_EV_ID_STR;
                    }
                    ev.flags |= MT_EV_HAS_CORR;
                }
            } else {
                r = value_uint64(ps, p, &x.corr, &ok, &p, "\"id\"");
                if (!r && ok)
                    ev.flags |= MT_EV_HAS_CORR;
            }
            break;
        case EK_CAT: {
            strtok_t v = {0};
            if (*p == '"' && (r = parse_string(ps, p, &v, &p)) == MT_OK) {
                ev.cat = (uint8_t)mt_cat_lookup(v.s, v.len);
                if (ev.cat == MT_CAT_OTHER) {
                    if ((r = intern_tok(ps, &v, &other_cat)))
                        return r;
                    has_other_cat = true;
                }
            }
            break;
        }
        case EK_PID:
            r = parse_id_field(ps, p, &x.pid, &is_str, &p, "\"pid\"");
            if (!r && is_str)
                ev.flags |= MT_EV_PID_STR;
            break;
        case EK_TID:
            r = parse_id_field(ps, p, &x.tid, &is_str, &p, "\"tid\"");
            if (!r && is_str)
                ev.flags |= MT_EV_TID_STR;
            break;
        case EK_DUR: {
            strtok_t v = {0};
            const char *e = fast_us(ps, p, &ev.dur, &(bool){false});
            if (e) {
                p = e;
                ev.flags |= MT_EV_HAS_DUR;
                r = MT_OK;
            } else if (*p != '-' && (unsigned)(*p - '0') > 9) {
                return fail_as(ps, p, MT_ERR_FORMAT, "a number for \"dur\" (microseconds)");
            } else if ((r = number_tok(ps, p, &v, &p)) == MT_OK) {
                mt_status_t st = mt_parse_us_to_ns(v.s, v.len, &ev.dur);
                if (st)
                    return num_error(ps, v.s, st, "\"dur\"");
                ev.flags |= MT_EV_HAS_DUR;
                if (ev.dur < 0) {
                    ev.dur = 0;
                    ev.flags |= MT_EV_NEG_DUR;
                }
            }
            break;
        }
        case EK_NAME: {
            strtok_t v = {0};
            if (*p == '"' && (r = parse_string(ps, p, &v, &p)) == MT_OK)
                r = intern_tok(ps, &v, &ev.name);
            break;
        }
        case EK_ARGS:
            if (ps->opts->skim_args && ps->part_rank < 0) /* a part reads its process metadata's args */
                r = skip_value(ps, p, &p);
            else if (*p == '{')
                r = parse_args(ps, p, &ev, &x, &p);
            break;
        default:
            break;
        }
        if (r == -2) {
            /* An unknown key, or a known key with a value of another type. */
            if (key != EK_S && key != EK_BP)
                t->stats.unknown_fields++;
            r = skip_fast(ps, p, &p);
        }
        if (r)
            return r;
        switch (key) {
        case EK_TS: sp_ts = v0, sp_ts_e = p; break;
        case EK_ID: sp_id = v0, sp_id_e = p; break;
        case EK_PID: sp_pid = v0, sp_pid_e = p; break;
        case EK_TID: sp_tid = v0, sp_tid_e = p; break;
        case EK_DUR: sp_dur = v0, sp_dur_e = p; break;
        default: break;
        }
        if ((r = obj_next(ps, p, &more, &p)))
            return r;
    }

    /* One rank of a merged trace: another rank's event (or the header's
     * pid 0) is passed over before anything of it is committed; the rank's
     * pids get back the values of its own trace, as the merge's process
     * metadata (written first) names them, because the analyses take a
     * GPU's device from its pid. */
    if (ps->part_rank >= 0) {
        if (!sp_pid || (ev.flags & MT_EV_PID_STR) || x.pid < ps->pid_lo || x.pid >= ps->pid_hi) {
            /* The merge writes each rank's events together (one
             * mt_merge_rank call each; mt_merged_ranks refuses a file
             * where they are not): another rank's event after ours ends
             * them, and the rest of the file need not be read. */
            if (ps->part_kept && sp_pid && !(ev.flags & MT_EV_PID_STR) && x.pid >= MT_MERGE_PIDS_PER_RANK)
                ps->part_done = true;
            swait_drop(t);
            *out = p;
            return MT_OK;
        }
        ps->part_kept++;
        size_t slot = (size_t)(x.pid - ps->pid_lo);
        if (ev.ph == MT_PH_M && x.has_meta && x.meta_str)
            part_meta(ps, &ev, x.meta_str, slot);
        if (ps->part_pid[slot] != INT64_MIN)
            x.pid = ps->part_pid[slot];
    }
    /* The event is complete: commit it and its side records. Its ids
     * narrowed to the table's 32-bit fields (wide ones to t->wide; with
     * no_store, where no event is kept, the slots are taken back once the
     * callback has seen it). */
    mt_status_t ist = mt_event_set_ids(t, &ev, x.pid, x.tid, x.corr, x.ext);
    if (ist != MT_OK)
        return fail_code(ps, start, ist,
                         ist == MT_ERR_NOMEM ? "event id table" : "more than 2^30 ids wider than 32 bits");
    if (MT_GROW_BIG(t->events, t->cap_events, t->n_events + 1, 64))
        return fail_code(ps, start, MT_ERR_NOMEM, "event table");
    size_t idx = t->n_events;
    if (x.coll.fields) {
        if (MT_GROW_BIG(t->colls, t->cap_colls, t->n_colls + 1, 64))
            return fail_code(ps, start, MT_ERR_NOMEM, "collective table");
        x.coll.event = (uint32_t)idx + 1;
        t->colls[t->n_colls++] = x.coll;
        ev.coll = (uint32_t)t->n_colls;
        ev.flags |= MT_EV_COLL_OWN;
    } else if (x.dims || (ps->has_gloo && ev.ph == MT_PH_X)) {
        /* Pre-2.2 traces: the message size of an nccl:* range comes from
         * its "Input Dims" (FORMAT.md 6.2). A gloo:* range on the CPU (the
         * gloo worker thread running the collective; docs/FORMATS.md "gloo
         * collectives") gets a record too, with or without "Input Dims"
         * (a barrier has none): it is the only trace of a gloo collective. */
        size_t nlen;
        const char *nm = mt_strtab_get(t->strings, ev.name, &nlen);
        size_t skip = x.dims && nlen > 5 && memcmp(nm, "nccl:", 5) == 0 ? 5 : 0;
        bool gloo = !skip && ps->has_gloo && ev.ph == MT_PH_X && nlen > 5 && memcmp(nm, "gloo:", 5) == 0 &&
                    (ev.cat == MT_CAT_USER_ANNOTATION || ev.cat == MT_CAT_CPU_OP || ev.cat == MT_CAT_LEGACY_OPERATOR);
        if (skip || gloo) {
            skip = 5;
            mt_coll_t c = *xcoll(&x);
            c.in_nelems = x.dims ? dims_nelems(x.dims, x.dims_len) : -1;
            c.fields = (x.dims ? MT_COLL_F_INPUT_DIMS : 0) | (gloo ? MT_COLL_F_GLOO : 0) |
                       (c.in_nelems >= 0 ? MT_COLL_F_IN_NELEMS : 0);
            uint32_t cn;
            mt_status_t st = mt_strtab_intern(t->strings, nm + skip, nlen - skip, &cn);
            if (st)
                return fail_code(ps, start, st, "interning a string");
            c.name = cn;
            c.fields |= MT_COLL_F_NAME;
            if (x.input_type) {
                c.dtype = x.input_type;
                c.fields |= MT_COLL_F_DTYPE;
            }
            if (MT_GROW_BIG(t->colls, t->cap_colls, t->n_colls + 1, 64))
                return fail_code(ps, start, MT_ERR_NOMEM, "collective table");
            c.event = (uint32_t)idx + 1;
            t->colls[t->n_colls++] = c;
            ev.coll = (uint32_t)t->n_colls;
            ev.flags |= MT_EV_COLL_OWN;
        }
    }
    if (x.mem.fields && ev.ph == MT_PH_I) {
        /* A [memory] event (only instants carry these args): its record. */
        if (MT_GROW_BIG(t->mems, t->cap_mems, t->n_mems + 1, 256))
            return fail_code(ps, start, MT_ERR_NOMEM, "memory event table");
        mt_mem_t *m = &t->mems[t->n_mems++];
        *m = x.mem;
        if (!(m->fields & MT_MEM_F_ALLOC))
            m->total_allocated = 0;
        if (!(m->fields & MT_MEM_F_RESERVED))
            m->total_reserved = 0;
        if (!(m->fields & MT_MEM_F_BYTES))
            m->bytes = 0;
        if (!(m->fields & MT_MEM_F_DEV_ID))
            m->device_id = -1;
        if (!(m->fields & MT_MEM_F_DEV_TYPE))
            m->device_type = 0;
        if (!(m->fields & MT_MEM_F_ADDR))
            m->addr = 0;
        m->event = (uint32_t)idx + 1;
        m->pad_ = 0;
    }
    if (ev.ph == MT_PH_M) {
        if (MT_GROW_BIG(t->meta, t->cap_meta, t->n_meta + 1, 64))
            return fail_code(ps, start, MT_ERR_NOMEM, "metadata table");
        t->meta[t->n_meta++] = (mt_meta_t){.event = (uint32_t)idx + 1, .str = x.meta_str,
                                           .value = x.meta_value};
        ev.aux = (uint32_t)t->n_meta;
    }
    if (has_other_cat && (r = add_other_cat(ps, other_cat, start)))
        return r;
    if (ps->classify && ev.ph == MT_PH_X && (r = classify_event(ps, &ev, start)))
        return r;
    /* every later sum or difference of two times must fit int64 ns */
    if (__builtin_expect(ev.ts >= MT_TIME_LIMIT_NS || ev.ts <= -MT_TIME_LIMIT_NS, 0))
        return fail_code(ps, sp_ts ? sp_ts : start, MT_ERR_RANGE,
                         "\"ts\" more than 2^62 ns (146 years) from 0");
    if (__builtin_expect(ev.dur >= MT_TIME_LIMIT_NS || ev.ts + ev.dur >= MT_TIME_LIMIT_NS, 0))
        return fail_code(ps, sp_dur ? sp_dur : start, MT_ERR_RANGE,
                         "\"ts\" + \"dur\" more than 2^62 ns (146 years) from 0");
    if (ev.flags & MT_EV_NEG_DUR)
        t->stats.neg_dur++;
    if (__builtin_expect(!has_ts, 0) && ev.ph == MT_PH_X) {
        t->stats.no_ts++;
        t->stats.no_ts_kernels += ev.cat == MT_CAT_KERNEL;
    }
    t->stats.by_ph[ev.ph]++;
    t->stats.by_cat[ev.cat]++;
    if (!ps->opts->no_store)
        t->events[t->n_events++] = ev;
    if (ps->opts->on_event) {
        mt_raw_event_t raw = {.text = start, .len = (size_t)(p - start)};
#define SPAN(a, b, off, len)                                  \
    if (a) {                                                  \
        raw.off = (size_t)(a - start);                        \
        raw.len = (size_t)(b - a);                            \
    }
        SPAN(sp_ts, sp_ts_e, ts_off, ts_len)
        SPAN(sp_dur, sp_dur_e, dur_off, dur_len)
        SPAN(sp_pid, sp_pid_e, pid_off, pid_len)
        SPAN(sp_tid, sp_tid_e, tid_off, tid_len)
        SPAN(sp_id, sp_id_e, id_off, id_len)
#undef SPAN
        mt_status_t cst = ps->opts->on_event(ps->opts->on_event_ctx, t, &ev, &raw, ps->err);
        if (cst != MT_OK) {
            ps->fail_at = start;
            if (ps->err && ps->err->offset < 0)
                ps->err->offset = (int64_t)(ps->base_off + (uint64_t)(start - ps->buf));
            return (int)cst;
        }
    }
    /* (with no_store every record names event 1: swait_arg keeps one,
     * rewritten by each event that has these args; nobody reads it) */
    if (ps->opts->no_store)
        t->n_wide = 0;
    *out = p;
    return MT_OK;
}

/* ------------------------------------------------------- header values */

/* A list of ints given as a JSON array or as a string "[0, 1, 2]". */
static int parse_rank_list(parser_t *ps, const char *p, mt_pg_t *pg, const char **out)
{
    mt_trace_t *t = ps->t;
    pg->rank_off = (uint32_t)t->n_pg_rank_pool;
    pg->n_ranks = 0;
    const char *s, *e;
    if (*p == '"') {
        strtok_t tok = {0};
        int r = parse_string(ps, p, &tok, out);
        if (r)
            return r;
        s = tok.s;
        e = tok.s + tok.len;
    } else if (*p == '[') {
        s = p;
        int r = skip_value(ps, p, out);
        if (r)
            return r;
        e = *out;
    } else {
        t->stats.bad_values++;
        return skip_value(ps, p, out);
    }
    for (const char *q = s; q < e;) {
        if ((unsigned)(*q - '0') <= 9 || *q == '-') {
            const char *n0 = q;
            q++;
            while (q < e && (unsigned)(*q - '0') <= 9)
                q++;
            int64_t v;
            if (mt_parse_int64(n0, (size_t)(q - n0), &v) != MT_OK) {
                t->stats.bad_values++;
                continue;
            }
            if (MT_GROW_BIG(t->pg_rank_pool, t->cap_pg_rank_pool, t->n_pg_rank_pool + 1, 64))
                return fail_code(ps, p, MT_ERR_NOMEM, "process group table");
            t->pg_rank_pool[t->n_pg_rank_pool++] = v;
            pg->n_ranks++;
        } else {
            q++;
        }
    }
    return MT_OK;
}

static int parse_pg_config(parser_t *ps, const char *p, const char **out)
{
    mt_trace_t *t = ps->t;
    if (*p != '[') {
        t->stats.bad_values++;
        return skip_value(ps, p, out);
    }
    p = skip_ws(p + 1);
    if (*p == ']') {
        *out = p + 1;
        return MT_OK;
    }
    for (;;) {
        int r;
        if (*p != '{') {
            t->stats.bad_values++;
            if ((r = skip_value(ps, p, &p)))
                return r;
        } else {
            mt_pg_t pg = {.size = -1};
            bool empty = false, more = false, ok = false;
            if ((r = obj_begin(ps, p, &p, &empty)))
                return r;
            more = !empty;
            while (more) {
                strtok_t k = {0};
                if ((r = obj_key(ps, p, &k, &p)))
                    return r;
                if (KEY_IS(k, "pg_name"))
                    r = value_str_or_num(ps, p, &pg.name, &ok, &p);
                else if (KEY_IS(k, "pg_desc"))
                    r = value_str(ps, p, &pg.desc, &ok, &p);
                else if (KEY_IS(k, "backend_config"))
                    r = value_str(ps, p, &pg.backend, &ok, &p);
                else if (KEY_IS(k, "pg_size"))
                    r = value_int64(ps, p, &pg.size, &ok, &p, "pg_size");
                else if (KEY_IS(k, "ranks"))
                    r = parse_rank_list(ps, p, &pg, &p);
                else
                    r = skip_value(ps, p, &p);
                if (r)
                    return r;
                if ((r = obj_next(ps, p, &more, &p)))
                    return r;
            }
            if (MT_GROW_BIG(t->pgs, t->cap_pgs, t->n_pgs + 1, 64))
                return fail_code(ps, p, MT_ERR_NOMEM, "process group table");
            t->pgs[t->n_pgs++] = pg;
        }
        p = skip_ws(p);
        if (*p == ',') {
            p = skip_ws(p + 1);
            continue;
        }
        if (*p == ']') {
            *out = p + 1;
            return MT_OK;
        }
        return fail(ps, p, "',' or ']'");
    }
}

static int parse_dist_info(parser_t *ps, const char *p, const char **out)
{
    mt_trace_t *t = ps->t;
    bool empty = false, more = false, ok = false;
    int r;
    if (*p != '{') {
        t->stats.bad_values++;
        return skip_value(ps, p, out);
    }
    if ((r = obj_begin(ps, p, &p, &empty)))
        return r;
    t->info.has_dist_info = true;
    more = !empty;
    while (more) {
        strtok_t k = {0};
        if ((r = obj_key(ps, p, &k, &p)))
            return r;
        if (KEY_IS(k, "rank") || KEY_IS(k, "world_size")) {
            /* These decide where the trace goes in the job: a value we
             * cannot use is an error here, never a silent fall-back to the
             * file name. */
            bool is_rank = KEY_IS(k, "rank");
            int64_t *dst = is_rank ? &t->info.rank : &t->info.world_size;
            const char *at = p;
            r = value_int64(ps, p, dst, &ok, &p, is_rank ? "rank" : "world_size");
            if (!r && (!ok || *dst < (is_rank ? 0 : 1) || *dst > INT32_MAX - 1)) {
                *dst = -1;
                return fail_code(ps, at, MT_ERR_RANGE,
                                 is_rank ? "distributedInfo.rank: expected an integer from 0 to 2147483646"
                                         : "distributedInfo.world_size: expected an integer from 1 to 2147483646");
            }
        } else if (KEY_IS(k, "backend")) {
            r = value_str(ps, p, &t->info.backend, &ok, &p);
        } else if (KEY_IS(k, "nccl_version")) {
            r = value_str_or_num(ps, p, &t->info.nccl_version, &ok, &p);
        } else if (KEY_IS(k, "pg_config")) {
            r = parse_pg_config(ps, p, &p);
        } else {
            r = skip_value(ps, p, &p);
        }
        if (r)
            return r;
        if ((r = obj_next(ps, p, &more, &p)))
            return r;
    }
    *out = p;
    return MT_OK;
}

static int parse_devices(parser_t *ps, const char *p, const char **out)
{
    mt_trace_t *t = ps->t;
    int r;
    if (*p != '[') {
        t->stats.bad_values++;
        return skip_value(ps, p, out);
    }
    p = skip_ws(p + 1);
    if (*p == ']') {
        *out = p + 1;
        return MT_OK;
    }
    for (;;) {
        if (*p == '{') {
            mt_device_t d = {.id = -1, .total_mem = -1, .num_sms = -1, .compute_major = -1, .compute_minor = -1};
            bool empty = false, more = false, ok = false;
            if ((r = obj_begin(ps, p, &p, &empty)))
                return r;
            more = !empty;
            while (more) {
                strtok_t k = {0};
                if ((r = obj_key(ps, p, &k, &p)))
                    return r;
                if (KEY_IS(k, "id"))
                    r = value_int64(ps, p, &d.id, &ok, &p, "id");
                else if (KEY_IS(k, "name"))
                    r = value_str(ps, p, &d.name, &ok, &p);
                else if (KEY_IS(k, "totalGlobalMem"))
                    r = value_int64(ps, p, &d.total_mem, &ok, &p, "totalGlobalMem");
                else if (KEY_IS(k, "numSms"))
                    r = value_int64(ps, p, &d.num_sms, &ok, &p, "numSms");
                else if (KEY_IS(k, "computeMajor"))
                    r = value_int64(ps, p, &d.compute_major, &ok, &p, "computeMajor");
                else if (KEY_IS(k, "computeMinor"))
                    r = value_int64(ps, p, &d.compute_minor, &ok, &p, "computeMinor");
                else
                    r = skip_value(ps, p, &p);
                if (r)
                    return r;
                if ((r = obj_next(ps, p, &more, &p)))
                    return r;
            }
            if (MT_GROW_BIG(t->devices, t->cap_devices, t->n_devices + 1, 64))
                return fail_code(ps, p, MT_ERR_NOMEM, "device table");
            t->devices[t->n_devices++] = d;
        } else {
            t->stats.bad_values++;
            if ((r = skip_value(ps, p, &p)))
                return r;
        }
        p = skip_ws(p);
        if (*p == ',') {
            p = skip_ws(p + 1);
            continue;
        }
        if (*p == ']') {
            *out = p + 1;
            return MT_OK;
        }
        return fail(ps, p, "',' or ']'");
    }
}

/* One top-level member, p at its key. Sets *events_next when the member is
 * "traceEvents" (then p is left just after its '['). */
static int parse_member(parser_t *ps, const char *p, bool *events_next, const char **out)
{
    mt_trace_t *t = ps->t;
    strtok_t k = {0};
    bool ok;
    int r = obj_key(ps, p, &k, &p);
    if (r)
        return r;
    *events_next = false;
    if (KEY_IS(k, "traceEvents")) {
        if (*p != '[')
            return fail(ps, p, "'[' (the traceEvents array)");
        if (ps->saw_events)
            return fail_code(ps, p, MT_ERR_FORMAT, "a second \"traceEvents\" array");
        *events_next = true;
        *out = p + 1;
        return MT_OK;
    }
    if (KEY_IS(k, "baseTimeNanoseconds")) {
        int64_t v;
        r = value_int64(ps, p, &v, &ok, &p, "baseTimeNanoseconds");
        if (!r && ok) {
            t->info.base_ns = v;
            t->info.has_base = true;
        }
    } else if (KEY_IS(k, "distributedInfo")) {
        r = parse_dist_info(ps, p, &p);
    } else if (KEY_IS(k, "deviceProperties")) {
        r = parse_devices(ps, p, &p);
    } else if (KEY_IS(k, "traceName")) {
        r = value_str(ps, p, &t->info.trace_name, &ok, &p);
    } else if (KEY_IS(k, "schemaVersion")) {
        r = value_int64(ps, p, &t->info.schema_version, &ok, &p, "schemaVersion");
    } else {
        t->stats.unknown_top_keys++;
        r = skip_value(ps, p, &p);
    }
    if (r)
        return r;
    *out = p;
    return MT_OK;
}

/* ------------------------------------------------------------- driver */

/* Sizes of the side tables at a unit start, to undo a partial unit. */
typedef struct mark {
    size_t n_colls, n_meta, n_mems, n_pgs, n_pool, n_devices;
    /* not t->n_swaits: an event parsed again from its start finds its
     * record (swait_arg: the last one names n_events + 1) and reuses it */
    mt_trace_info_t info;
    uint64_t unknown_fields, unknown_top_keys, bad_values, bad_utf8;
} mark_t;

/* Events touch only the event-level tables and counters; header members
 * can touch everything, so only they pay for a copy of the header info. */
static void mark_take(const mt_trace_t *t, mark_t *m, bool header)
{
    m->n_colls = t->n_colls;
    m->n_meta = t->n_meta;
    m->n_mems = t->n_mems;
    m->n_pgs = t->n_pgs;
    m->n_pool = t->n_pg_rank_pool;
    m->n_devices = t->n_devices;
    if (header)
        m->info = t->info;
    m->unknown_fields = t->stats.unknown_fields;
    m->unknown_top_keys = t->stats.unknown_top_keys;
    m->bad_values = t->stats.bad_values;
    m->bad_utf8 = t->stats.bad_utf8;
}

static void mark_restore(mt_trace_t *t, const mark_t *m, bool header)
{
    t->n_colls = m->n_colls;
    t->n_meta = m->n_meta;
    t->n_mems = m->n_mems;
    t->n_pgs = m->n_pgs;
    t->n_pg_rank_pool = m->n_pool;
    t->n_devices = m->n_devices;
    if (header)
        t->info = m->info;
    t->stats.unknown_fields = m->unknown_fields;
    t->stats.unknown_top_keys = m->unknown_top_keys;
    t->stats.bad_values = m->bad_values;
    t->stats.bad_utf8 = m->bad_utf8;
}

/* Parse one unit at p according to the state. */
static int step(parser_t *ps, const char *p, const char **out)
{
    int r;
    bool events_next;
    p = skip_ws(p);
    switch (ps->state) {
    case ST_START:
        /* A UTF-8 byte order mark is tolerated. */
        if ((unsigned char)p[0] == 0xef && (unsigned char)p[1] == 0xbb && (unsigned char)p[2] == 0xbf)
            p = skip_ws(p + 3);
        if (*p == '{') {
            ps->state = ST_OBJ_FIRST;
        } else if (*p == '[') {
            ps->t->info.bare_array = true;
            ps->saw_events = true;
            ps->state = ST_EV_FIRST;
        } else {
            return fail(ps, p, "'{' or '[' at the start of a trace");
        }
        *out = p + 1;
        return MT_OK;
    case ST_OBJ_FIRST:
    case ST_OBJ_NEXT:
        if (*p == '}') {
            ps->state = ST_END;
            *out = p + 1;
            return MT_OK;
        }
        if (ps->state == ST_OBJ_NEXT) {
            if (*p != ',')
                return fail(ps, p, "',' or '}'");
            p = skip_ws(p + 1);
        }
        if ((r = parse_member(ps, p, &events_next, out)))
            return r;
        if (events_next) {
            ps->saw_events = true;
            ps->state = ST_EV_FIRST;
        } else {
            ps->state = ST_OBJ_NEXT;
        }
        return MT_OK;
    case ST_EV_FIRST:
    case ST_EV_NEXT:
        if (*p == ']') {
            ps->state = ps->t->info.bare_array ? ST_END : ST_OBJ_NEXT;
            *out = p + 1;
            return MT_OK;
        }
        if (ps->state == ST_EV_NEXT) {
            if (*p != ',')
                return fail(ps, p, "',' or ']'");
            p = skip_ws(p + 1);
        }
        if (ps->t->info.bare_array && ps->state == ST_EV_FIRST && *p != '{' && *p != '\0')
            ps->values = true; /* [0.51, 0.49]: a file of values beside the traces, checked as JSON */
        if ((r = ps->values ? skip_value(ps, p, out) : parse_event(ps, p, out)))
            return r;
        ps->state = ST_EV_NEXT;
        return MT_OK;
    case ST_END:
        if (p >= data_end(ps))
            return NEED_MORE;
        return fail(ps, p, "end of input after the top-level value");
    case ST_DONE:
        break;
    }
    return MT_OK;
}

/* Make room and read more input after keeping buf[keep..len). */
static mt_status_t refill(parser_t *ps, size_t keep)
{
    if (ps->opts->should_stop && ps->opts->should_stop(ps->opts->should_stop_ctx))
        return mt_error_set(ps->err, MT_ERR_CANCELLED, "stopped: another process failed");
    size_t live = ps->len - keep;
    if (keep) {
        memmove(ps->buf, ps->buf + keep, live);
        ps->base_off += keep;
        ps->len = live;
    }
    size_t chunk = ps->opts->chunk_bytes ? ps->opts->chunk_bytes : MT_LOAD_CHUNK_DEFAULT;
    if (ps->cap - ps->len < (chunk / 2 ? chunk / 2 : 1)) {
        /* One unit is bigger than what is free: grow. Not mt_grow: the
         * buffer keeps MT_PAD zero bytes beyond its capacity. */
        size_t nc = ps->cap * 2;
        while (nc - ps->len < chunk)
            nc *= 2;
        char *b = realloc(ps->buf, nc + MT_PAD);
        if (!b)
            return mt_error_set(ps->err, MT_ERR_NOMEM, "growing the read buffer to %zu bytes", nc);
        ps->buf = b;
        ps->cap = nc;
    }
    size_t n;
    bool trunc = false;
    mt_status_t st = mt_input_read(ps->in, ps->buf + ps->len, ps->cap - ps->len, &n, &trunc, ps->err);
    if (st) {
        if (ps->err && ps->err->offset < 0 && st != MT_ERR_GZIP)
            ps->err->offset = (int64_t)(ps->base_off + ps->len);
        return st;
    }
    if (trunc)
        ps->gz_truncated = true;
    if (!n)
        ps->eof = true;
    ps->len += n;
    memset(ps->buf + ps->len, 0, MT_PAD);
    return MT_OK;
}

static mt_status_t run(parser_t *ps)
{
    size_t unit = 0; /* start of the current unit in buf */
    mark_t mk;
    mt_status_t st = refill(ps, 0);
    if (st)
        return st;
    if (ps->len == 0 && ps->gz_truncated) {
        if (ps->err)
            ps->err->offset = 0;
        return mt_error_set(ps->err, MT_ERR_TRUNCATED, "the gzip stream is cut short before any JSON");
    }
    if (ps->len == 0)
        return mt_error_set(ps->err, MT_ERR_FORMAT, "empty file");
    while (ps->state != ST_DONE) {
        if (ps->state == ST_END) {
            const char *p = skip_ws(ps->buf + unit);
            if (p >= data_end(ps)) {
                if (ps->eof)
                    break;
                st = refill(ps, ps->len);
                if (st)
                    return st;
                unit = 0;
                continue;
            }
        }
        const char *out = NULL;
        size_t n_ev = ps->t->n_events;
        bool header = ps->state != ST_EV_FIRST && ps->state != ST_EV_NEXT;
        mark_take(ps->t, &mk, header);
        int r = step(ps, ps->buf + unit, &out);
        if (r == MT_OK) {
            unit = (size_t)(out - ps->buf);
            if (ps->part_done)
                return MT_OK; /* one rank of a merged trace, read to its last event */
            continue;
        }
        ps->t->n_events = n_ev;
        mark_restore(ps->t, &mk, header);
        if (r != NEED_MORE)
            return (mt_status_t)r;
        if (ps->eof) {
            if (ps->state == ST_START)
                return mt_error_set(ps->err, MT_ERR_FORMAT, "no JSON value in the file");
            /* The input ends inside a unit: a partial copy or a killed job. */
            ps->t->stats.truncated = true;
            ps->t->stats.truncated_at = ps->base_off + unit;
            break;
        }
        st = refill(ps, unit);
        if (st)
            return st;
        unit = 0;
    }
    if (ps->gz_truncated && !ps->t->stats.truncated) {
        ps->t->stats.truncated = true;
        ps->t->stats.truncated_at = ps->base_off + ps->len;
    }
    return MT_OK;
}

/* Count lines up to offset by reading the input again: errors are rare, so
 * the hot path never tracks line numbers. */
static void locate(const char *path, const void *mem, size_t len, int64_t offset, mt_error_t *err)
{
    mt_input_t *in;
    if (offset < 0 || mt_input_open(path, mem, len, &in, NULL) != MT_OK)
        return;
    char *b = malloc(1 << 16);
    int64_t pos = 0;
    mt_errpos_t p = {1, 1};
    bool trunc = false;
    while (b && pos < offset) {
        size_t n;
        if (mt_input_read(in, b, 1 << 16, &n, &trunc, NULL) != MT_OK || !n)
            break;
        size_t use = (uint64_t)(offset - pos) < n ? (size_t)(offset - pos) : n;
        mt_errpos_count(&p, b, use);
        pos += (int64_t)use;
    }
    if (pos == offset)
        mt_errpos_set(err, NULL, offset, p.line, p.col);
    free(b);
    mt_input_close(in);
}

static mt_status_t finish(mt_trace_t *t, parser_t *ps)
{
    mt_trace_info_t *in = &t->info;
    if (in->has_base) {
        in->ts_style = MT_TS_REL;
        /* Relative ts + base: shift once, now that the base is known (it may
         * come after traceEvents). */
        for (size_t i = 0; i < t->n_events; i++) {
            int64_t v;
            if (__builtin_add_overflow(t->events[i].ts, in->base_ns, &v) || v >= MT_TIME_LIMIT_NS ||
                v <= -MT_TIME_LIMIT_NS || v + t->events[i].dur >= MT_TIME_LIMIT_NS)
                return mt_error_set(ps->err, MT_ERR_RANGE,
                                    "event %zu: ts + baseTimeNanoseconds out of range (more than 2^62 ns from 0)", i);
            t->events[i].ts = v;
        }
    } else {
        in->ts_style = ps->saw_fraction ? MT_TS_ABS_FRAC : (t->n_events ? MT_TS_ABS_INT : MT_TS_UNKNOWN);
    }
    return MT_OK;
}

/* part_rank >= 0: only that rank of a merged trace (parser_t.part_rank). */
static mt_status_t load(const char *path, const void *mem, size_t len, const char *name,
                        const mt_load_opts_t *opts, int32_t part_rank, mt_trace_t **out, mt_error_t *err)
{
    mt_load_opts_t defaults;
    if (!opts) {
        mt_load_opts_init(&defaults);
        opts = &defaults;
    }
    *out = NULL;
    mt_error_t local;
    if (!err)
        err = &local;
    mt_error_clear(err);
    err->rank = opts->rank_hint;
    if (name)
        snprintf(err->path, sizeof err->path, "%s", name);

    mt_trace_t *t = calloc(1, sizeof *t);
    parser_t ps = {.t = t, .err = err, .opts = opts, .part_rank = part_rank};
    if (part_rank >= 0) {
        ps.pid_lo = mt_merge_pid(part_rank, 0);
        ps.pid_hi = mt_merge_pid(part_rank, MT_MERGE_FR_SLOT); /* its Flight Recorder entries are not read back */
    }
    mt_status_t st = MT_ERR_NOMEM;
    if (!t)
        goto fail;
    if (part_rank >= 0) {
        if (!(ps.part_pid = malloc(MT_MERGE_PIDS_PER_RANK * sizeof *ps.part_pid)))
            goto fail;
        for (size_t i = 0; i < MT_MERGE_PIDS_PER_RANK; i++)
            ps.part_pid[i] = INT64_MIN;
    }
    t->info.rank = t->info.world_size = t->info.schema_version = -1;
    t->strings = mt_strtab_create();
    if (name && !(t->path = strdup(name)))
        goto fail;
    size_t chunk = opts->chunk_bytes ? opts->chunk_bytes : MT_LOAD_CHUNK_DEFAULT;
    ps.cap = chunk;
    ps.buf = malloc(ps.cap + MT_PAD);
    if (!t->strings || !ps.buf) {
        mt_error_set(err, MT_ERR_NOMEM, "allocating the loader");
        goto fail;
    }
    st = mt_input_open(path, mem, len, &ps.in, err);
    if (st)
        goto fail;
    /* Size the event table from the input size (Kineto spends 150-300
     * bytes per event): no copying regrowth on the way. Pages are only
     * touched as events arrive, so an overestimate costs address space. */
    if (!opts->no_store) {
        uint64_t guess = mt_input_size_hint(ps.in) / 160 + 64;
        if (guess > ((uint64_t)1 << 32))
            guess = (uint64_t)1 << 32;
        t->events = mt_big_malloc((size_t)guess * sizeof *t->events);
        if (t->events)
            t->cap_events = (size_t)guess;
    }
    ps.classify = !opts->no_classify;
    st = run(&ps);
    if (st == MT_OK && ps.t->stats.truncated && opts->strict) {
        err->offset = (int64_t)ps.t->stats.truncated_at;
        st = mt_error_set(err, MT_ERR_TRUNCATED,
                          "input ends inside the trace (%zu events before the cut; without --strict they are kept)",
                          t->n_events);
    }
    if (st == MT_OK && !ps.saw_events && !t->stats.truncated) {
        st = mt_error_set(err, MT_ERR_NOT_TRACE, "valid JSON, but no \"traceEvents\" array");
    }
    if (st == MT_OK && ps.values)
        st = t->stats.truncated
                 ? mt_error_set(err, MT_ERR_TRUNCATED, "input ends inside an array of values (not a trace)")
                 : mt_error_set(err, MT_ERR_NOT_TRACE, "valid JSON, but an array of values, not of trace events");
    if (st == MT_OK && part_rank >= 0 && !ps.part_kept && !t->stats.truncated)
        st = mt_error_set(err, MT_ERR_NOT_TRACE, "no event of rank %d in this merged trace (pids %lld..%lld)",
                          (int)part_rank, (long long)ps.pid_lo, (long long)ps.pid_hi - 1);
    if (st == MT_OK && part_rank >= 0 && t->info.rank < 0)
        t->info.rank = part_rank; /* the merged trace keeps no header of its ranks: the pids say it */
    if (st == MT_OK)
        st = finish(t, &ps);
    if (st == MT_OK) {
        t->stats.bytes_in = mt_input_raw_bytes(ps.in);
        t->stats.bytes_json = ps.base_off + ps.len;
    }
    mt_input_close(ps.in);
    ps.in = NULL;
    /* The parser's buffers go before the link, whose indexes then reuse
     * their memory (the read buffer alone is MT_LOAD_CHUNK_DEFAULT bytes). */
    free(ps.buf);
    free(ps.scratch);
    free(ps.stack);
    free(ps.name_cls);
    ps.buf = ps.scratch = NULL;
    ps.stack = NULL;
    ps.name_cls = NULL;
    /* (classification already happened event by event) */
    if (st == MT_OK && !opts->no_classify && !opts->no_link)
        st = mt_trace_link(t, NULL);
    if (st)
        goto fail;
    if (t->info.rank >= 0 && t->info.rank <= INT32_MAX)
        err->rank = (int)t->info.rank;
    free(ps.part_pid); /* the parser's other buffers went before the link */
    *out = t;
    return MT_OK;

fail:
    if (st == MT_ERR_SYNTAX || st == MT_ERR_RANGE || st == MT_ERR_FORMAT)
        locate(path, mem, len, err->offset, err);
    if (t && t->info.rank >= 0 && t->info.rank <= INT32_MAX)
        err->rank = (int)t->info.rank;
    if (err->code == MT_OK)
        mt_error_set(err, st, "%s", "");
    mt_input_close(ps.in);
    free(ps.buf);
    free(ps.scratch);
    free(ps.stack);
    free(ps.name_cls);
    free(ps.part_pid);
    mt_trace_free(t);
    return st;
}

/* An Nsight Systems export (SQLite's first bytes), or one process of one
 * ("<file>#pid<N>", which is no file of its own): src/trace/nsys.c reads it. */
static bool nsys_input(const char *path)
{
    FILE *f = path ? fopen(path, "rb") : NULL;
    if (!f) {
        const char *h = path ? strrchr(path, '#') : NULL;
        return h && strncmp(h, "#pid", 4) == 0;
    }
    unsigned char head[16];
    size_t n = fread(head, 1, sizeof head, f);
    fclose(f);
    return mt_nsys_sniff(head, n);
}

mt_status_t mt_trace_load(const char *path, const mt_load_opts_t *opts, mt_trace_t **out, mt_error_t *err)
{
    if (nsys_input(path))
        return mt_nsys_load(path, opts, out, err);
    size_t plen;
    int32_t part = mt_merged_part_parse(path, &plen);
    if (part >= 0) {
        char *file = malloc(plen + 1);
        if (!file) {
            *out = NULL;
            return mt_error_set(err, MT_ERR_NOMEM, "path");
        }
        memcpy(file, path, plen);
        file[plen] = '\0';
        mt_status_t st = load(file, NULL, 0, path, opts, part, out, err);
        free(file);
        return st;
    }
    return load(path, NULL, 0, path, opts, -1, out, err);
}

mt_status_t mt_trace_load_buffer(const void *buf, size_t len, const char *name, const mt_load_opts_t *opts,
                                 mt_trace_t **out, mt_error_t *err)
{
    if (mt_nsys_sniff(buf, len))
        return mt_nsys_load_buffer(buf, len, name, opts, out, err);
    return load(NULL, buf ? buf : "", len, name, opts, -1, out, err);
}
