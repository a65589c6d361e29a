/* The JSON scanner under the trace loader (internal to src/trace/): the
 * state of one load (parser_t) and the scanners of blanks, strings,
 * numbers, values and objects over a buffer that ends in MT_PAD zero
 * bytes. The fast paths are inline here, for the event builder
 * (loader_event.c) and the driver (loader.c); the general paths, the
 * skipping of whole values and the interning of names are in json_scan.c.
 * loader.c's opening comment says why the hot path looks as it does.
 *
 * Every int-returning function returns MT_OK, an mt_status_t error (with
 * ps->err filled at the byte where it was found and ps->fail_at set), or
 * NEED_MORE when the unit runs past the buffered bytes. p arguments point
 * into ps->buf; *out is set after what was read. Nothing here allocates
 * but the scratch, the nesting stack and the string table, owned by the
 * parser and its trace. */
#ifndef MT_TRACE_JSON_SCAN_H
#define MT_TRACE_JSON_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mergetrace/input.h"
#include "mergetrace/loader.h"

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

/* "Process Group Ranks" values remembered per load (mt_json_value_rank_list). */
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
    /* The last distinct "Process Group Ranks" values (mt_json_value_rank_list). */
    uint32_t rank_list[RANK_LISTS];
    unsigned n_rank_lists, next_rank_list;
    /* One rank of a merged trace ("<file>#rank<R>"): only events whose
     * numeric pid is in [pid_lo, pid_hi) are kept; part_rank < 0: all. */
    int32_t part_rank;
    int64_t pid_lo, pid_hi;
    uint64_t part_kept;
    int64_t *part_pid;   /* per slot: the pid the rank's own trace had (GPU: the device); INT64_MIN unknown */
    bool *part_pid_str;  /* per slot: part_pid is a string pid's id in the trace's strings ("Spans") */
    bool part_done;      /* the rank's events are over: the rest of the file is not read */
    /* Strings interned from raw bytes, by their length and first and last
     * 8 bytes (intern_cached). */
    struct name_slot {
        uint64_t head, tail;
        uint32_t len, id;
    } names[NAME_SLOTS];
    bool has_gloo;       /* a string starts with "gloo:" (note_gloo) */
} parser_t;


/* A string token: raw bytes between the quotes, and whether it had escapes. */
typedef struct strtok {
    const char *s;
    size_t len;
    bool esc;
} strtok_t;

/* ---------------------------------------------------- the general paths */

/* The rest of a run of blanks at p (skip_ws's slow path). */
const char *mt_json_skip_ws_run(const char *p);

/* A syntax error at p (the expected thing named by what), or NEED_MORE
 * when p is at the end of the buffered data; _as with another code
 * (MT_ERR_FORMAT: JSON, but not what a trace holds there). */
int mt_json_fail(parser_t *ps, const char *p, const char *what);
int mt_json_fail_as(parser_t *ps, const char *p, mt_status_t code, const char *what);
/* The error code at p with the message what, wherever p is. */
int mt_json_fail_code(parser_t *ps, const char *p, mt_status_t code, const char *what);
/* A number that did not parse as what (MT_ERR_RANGE or MT_ERR_SYNTAX). */
int mt_json_num_error(parser_t *ps, const char *p, mt_status_t st, const char *what);

/* Skip one JSON value at p (after blanks), validating it. */
int mt_json_skip_value(parser_t *ps, const char *p, const char **out);

/* The string of tok (escapes decoded, bad UTF-8 repaired) interned in the
 * trace's string table: *id. */
int mt_json_intern(parser_t *ps, const strtok_t *tok, uint32_t *id);

/* value_int64's and value_uint64's general paths. */
int mt_json_int64_slow(parser_t *ps, const char *p, int64_t *v, bool *ok, const char **out, const char *what);
int mt_json_uint64_slow(parser_t *ps, const char *p, uint64_t *v, bool *ok, const char **out, const char *what);

/* A string value interned (*ok = true), or any other value counted as
 * bad and skipped (*ok = false). */
int mt_json_value_str(parser_t *ps, const char *p, uint32_t *id, bool *ok, const char **out);
/* The same for "Process Group Ranks", with the last lists remembered. */
int mt_json_value_rank_list(parser_t *ps, const char *p, uint32_t *id, bool *ok, const char **out);
/* A string or a number as a string id (pg names appear as both). */
int mt_json_value_str_or_num(parser_t *ps, const char *p, uint32_t *id, bool *ok, const char **out);

/* ------------------------------------------------------- the fast paths */

/* Most calls find no blank or exactly one space (": ", ", "), so those two
 * cases are tested before the run scanner. */
static inline const char *skip_ws(const char *p)
{
    if ((unsigned char)*p > ' ')
        return p;
    if (*p == ' ' && (unsigned char)p[1] > ' ')
        return p + 1;
    return mt_json_skip_ws_run(p);
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

static inline const char *data_end(const parser_t *ps)
{
    return ps->buf + ps->len;
}

/* p at the opening quote. */
static inline int parse_string(parser_t *ps, const char *p, strtok_t *tok, const char **out)
{
    if (*p != '"')
        return mt_json_fail(ps, p, "'\"'");
    bool esc = false;
    const char *e = scan_string(p + 1, &esc);
    if (*e != '"')
        return mt_json_fail(ps, e, "a string character or '\"'");
    tok->s = p + 1;
    tok->len = (size_t)(e - p - 1);
    tok->esc = esc;
    *out = e + 1;
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
        return mt_json_fail(ps, p, "a number");
    if (e >= data_end(ps))
        return NEED_MORE;
    tok->s = p;
    tok->len = (size_t)(e - p);
    tok->esc = false;
    *out = e;
    return MT_OK;
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
    return mt_json_int64_slow(ps, p, v, ok, out, what);
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
    return mt_json_uint64_slow(ps, p, v, ok, out, what);
}


/* The value of a member nobody reads ("queued": 0, "stream": 7, "device":
 * 0 in a kernel's args): plain digits and strings without the general
 * skipper's call and grammar check. Both are validated as mt_json_skip_value would
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
    return mt_json_skip_value(ps, p, out);
}

/* ---------------------------------------------------------- key matching */

#define KEY_IS(tok, lit) ((tok).len == sizeof(lit) - 1 && memcmp((tok).s, lit, sizeof(lit) - 1) == 0)

/* Object iteration helpers. p at '{'. */
static inline int obj_begin(parser_t *ps, const char *p, const char **out, bool *empty)
{
    if (*p != '{')
        return mt_json_fail(ps, p, "'{'");
    p = skip_ws(p + 1);
    *empty = *p == '}';
    *out = *empty ? p + 1 : p;
    return MT_OK;
}

/* Read `"key" :` at p (after whitespace); *out after the colon + ws. */
static inline int obj_key(parser_t *ps, const char *p, strtok_t *key, const char **out)
{
    if (*p != '"')
        return mt_json_fail(ps, p, "an object key");
    int r = parse_string(ps, p, key, &p);
    if (r)
        return r;
    p = skip_ws(p);
    if (*p != ':')
        return mt_json_fail(ps, p, "':'");
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
    return mt_json_fail(ps, p, "',' or '}'");
}

#endif
