/* The JSON document reader (base/jdoc.h): one pass over the text into a
 * flat node array and a string arena, containers kept on an explicit,
 * bounded stack instead of recursion; and its cursor, the same scanner one
 * value at a time. */
#include "base/jdoc.h"
#include "base/text.h"

#include <stdlib.h>
#include <string.h>

#include "base/errpos.h"
#include "mergetrace/buf.h"
#include "base/numparse.h"

struct mt_jdoc {
    mt_jnode_t *nodes;
    size_t n, cap;
    char *arena; /* byte 0 is "" (the empty key) */
    size_t alen, acap;
};

typedef struct open_ctr {
    uint32_t node; /* the container */
    uint32_t last; /* its last child so far; 0 none */
} open_ctr_t;

typedef struct parser {
    const char *s;
    size_t n, i;
    const char *path;
    mt_error_t *err;
    mt_jdoc_t *d;
} parser_t;

static mt_status_t fail(parser_t *p, size_t at, mt_status_t code, const char *what)
{
    mt_error_set(p->err, code, "%s", what);
    mt_errpos_in(p->err, p->path, p->s, at);
    return code;
}

static inline void skip_ws(parser_t *p)
{
    if (p->i < p->n && (unsigned char)p->s[p->i] > ' ') /* the usual case: no blank */
        return;
    while (p->i < p->n) {
        char c = p->s[p->i];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
            return;
        p->i++;
    }
}

static mt_status_t arena_put(parser_t *p, const char *b, size_t n)
{
    mt_jdoc_t *d = p->d;
    if (d->alen + n + 1 > UINT32_MAX / 2)
        return fail(p, p->i, MT_ERR_LIMIT, "more than 2^31 bytes of strings");
    if (MT_GROW(d->arena, d->acap, d->alen + n + 1, 4096) != MT_OK)
        return MT_ERR_NOMEM;
    memcpy(d->arena + d->alen, b, n);
    d->alen += n;
    return MT_OK;
}

static bool hex4(const parser_t *p, size_t at, uint32_t *v)
{
    if (at + 4 > p->n)
        return false;
    uint32_t x = 0;
    for (int k = 0; k < 4; k++) {
        int h = mt_parse_hex_digit(p->s[at + (size_t)k]);
        if (h < 0)
            return false;
        x = x * 16 + (uint32_t)h;
    }
    *v = x;
    return true;
}

static size_t utf8_put(uint32_t v, char *b)
{
    if (v < 0x80) {
        b[0] = (char)v;
        return 1;
    }
    if (v < 0x800) {
        b[0] = (char)(0xc0 | (v >> 6));
        b[1] = (char)(0x80 | (v & 0x3f));
        return 2;
    }
    if (v < 0x10000) {
        b[0] = (char)(0xe0 | (v >> 12));
        b[1] = (char)(0x80 | ((v >> 6) & 0x3f));
        b[2] = (char)(0x80 | (v & 0x3f));
        return 3;
    }
    b[0] = (char)(0xf0 | (v >> 18));
    b[1] = (char)(0x80 | ((v >> 12) & 0x3f));
    b[2] = (char)(0x80 | ((v >> 6) & 0x3f));
    b[3] = (char)(0x80 | (v & 0x3f));
    return 4;
}

/* The string starting at the quote p->s[p->i], decoded into the arena:
 * *off and *len say where. */
static mt_status_t parse_string(parser_t *p, uint32_t *off, uint32_t *len)
{
    size_t start = p->d->alen;
    p->i++; /* the quote */
    for (;;) {
        size_t run = p->i;
        while (run < p->n) {
            unsigned char c = (unsigned char)p->s[run];
            if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80)
                break;
            run++;
        }
        if (run > p->i) {
            mt_status_t st = arena_put(p, p->s + p->i, run - p->i);
            if (st != MT_OK)
                return st;
            p->i = run;
        }
        if (p->i >= p->n)
            return fail(p, p->i, MT_ERR_SYNTAX, "the text ends inside a string");
        unsigned char c = (unsigned char)p->s[p->i];
        if (c == '"') {
            p->i++;
            break;
        }
        if (c < 0x20)
            return fail(p, p->i, MT_ERR_SYNTAX, "a control character in a string (escape it)");
        if (c >= 0x80) {
            size_t k = mt_utf8_seq((const unsigned char *)p->s + p->i, p->n - p->i);
            if (k == 0)
                return fail(p, p->i, MT_ERR_SYNTAX, "invalid UTF-8 in a string");
            mt_status_t st = arena_put(p, p->s + p->i, k);
            if (st != MT_OK)
                return st;
            p->i += k;
            continue;
        }
        /* a backslash */
        size_t at = p->i;
        if (p->i + 1 >= p->n)
            return fail(p, at, MT_ERR_SYNTAX, "the text ends inside a string");
        char e = p->s[p->i + 1], out[4];
        size_t k = 1;
        p->i += 2;
        switch (e) {
        case '"': out[0] = '"'; break;
        case '\\': out[0] = '\\'; break;
        case '/': out[0] = '/'; break;
        case 'b': out[0] = '\b'; break;
        case 'f': out[0] = '\f'; break;
        case 'n': out[0] = '\n'; break;
        case 'r': out[0] = '\r'; break;
        case 't': out[0] = '\t'; break;
        case 'u': {
            uint32_t v, lo;
            if (!hex4(p, p->i, &v))
                return fail(p, at, MT_ERR_SYNTAX, "\\u must be followed by 4 hex digits");
            p->i += 4;
            if (v >= 0xdc00 && v <= 0xdfff)
                return fail(p, at, MT_ERR_SYNTAX, "a lone low surrogate in \\u escapes");
            if (v >= 0xd800 && v <= 0xdbff) {
                if (p->i + 1 >= p->n || p->s[p->i] != '\\' || p->s[p->i + 1] != 'u' || !hex4(p, p->i + 2, &lo) ||
                    lo < 0xdc00 || lo > 0xdfff)
                    return fail(p, at, MT_ERR_SYNTAX, "a high surrogate not followed by a low one in \\u escapes");
                p->i += 6;
                v = 0x10000 + ((v - 0xd800) << 10) + (lo - 0xdc00);
            }
            k = utf8_put(v, out);
            break;
        }
        default:
            return fail(p, at, MT_ERR_SYNTAX, "unknown escape in a string");
        }
        mt_status_t st = arena_put(p, out, k);
        if (st != MT_OK)
            return st;
    }
    mt_status_t st = arena_put(p, "", 1); /* the NUL */
    if (st != MT_OK)
        return st;
    *off = (uint32_t)start;
    *len = (uint32_t)(p->d->alen - start - 1);
    return MT_OK;
}

/* An integer token (no fraction, no exponent) of at most 19 digits, kept
 * by parse_number for exact_int: its magnitude and sign. */
typedef struct int_tok {
    bool is_int;
    bool neg;
    uint64_t m;
} int_tok_t;

/* Powers of ten that are exact doubles (10^22 is the largest). */
static const double pow10_exact[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                     1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* A number token per RFC 8259's grammar. Fast path, because a report.json
 * is mostly numbers and strtod cost ~580 instructions each (half of
 * reading a baseline): without an exponent, a value whose digits form an
 * integer m <= 2^53 with at most 22 of them after the point is m / 10^k
 * with both operands exact doubles, so one IEEE division rounds it
 * correctly, as strtod would; an integer of up to 19 digits converts
 * from m directly. Anything else goes to strtod. *it says whether the
 * token was such an integer. */
static mt_status_t parse_number(parser_t *p, double *v, int_tok_t *it)
{
    size_t a = p->i, i = p->i;
    const char *s = p->s;
    bool neg = false;
    uint64_t m = 0;
    unsigned ndig = 0, nfrac = 0;
    if (i < p->n && s[i] == '-') {
        neg = true;
        i++;
    }
    if (i >= p->n || s[i] < '0' || s[i] > '9')
        return fail(p, a, MT_ERR_SYNTAX, "expected a value");
    if (s[i] == '0')
        i++;
    else
        for (; i < p->n && s[i] >= '0' && s[i] <= '9'; i++, ndig++)
            m = m * 10 + (uint64_t)(s[i] - '0'); /* wraps past 19 digits: ndig says so */
    if (i < p->n && s[i] == '.') {
        i++;
        if (i >= p->n || s[i] < '0' || s[i] > '9')
            return fail(p, i, MT_ERR_SYNTAX, "expected a digit after the decimal point");
        for (; i < p->n && s[i] >= '0' && s[i] <= '9'; i++, nfrac++)
            if (m || s[i] != '0') { /* leading zeros of the fraction add no digit to m */
                m = m * 10 + (uint64_t)(s[i] - '0');
                ndig++;
            }
    }
    bool expo = i < p->n && (s[i] == 'e' || s[i] == 'E');
    /* an integer of up to 19 digits: m is exact, and its conversion to a
     * double is correctly rounded, as strtod's (ns since the epoch pass
     * 2^53 and were half of a Flight Recorder dump's strtod calls) */
    it->is_int = ndig <= 19 && !nfrac && !expo;
    it->neg = neg;
    it->m = m;
    if (it->is_int) {
        double x = (double)m;
        *v = neg ? -x : x;
        p->i = i;
        return MT_OK;
    }
    if (ndig <= 19 && m <= (UINT64_C(1) << 53) && nfrac <= 22 && !expo) {
        double x = (double)m / pow10_exact[nfrac];
        *v = neg ? -x : x;
        p->i = i;
        return MT_OK;
    }
    if (i < p->n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < p->n && (s[i] == '+' || s[i] == '-'))
            i++;
        if (i >= p->n || s[i] < '0' || s[i] > '9')
            return fail(p, i, MT_ERR_SYNTAX, "expected a digit in the exponent");
        while (i < p->n && s[i] >= '0' && s[i] <= '9')
            i++;
    }
    char buf[64];
    size_t len = i - a;
    if (len >= sizeof buf) {
        char *t = malloc(len + 1);
        if (!t)
            return MT_ERR_NOMEM;
        memcpy(t, s + a, len);
        t[len] = 0;
        *v = strtod(t, NULL);
        free(t);
    } else {
        memcpy(buf, s + a, len);
        buf[len] = 0;
        *v = strtod(buf, NULL);
    }
    p->i = i;
    return MT_OK;
}

/* An integer token (no fraction, no exponent) that fits int64 or uint64 is
 * kept exactly beside its double: ids and ns since the epoch pass 2^53. */
static void exact_int(const char *t, size_t n, const int_tok_t *it, mt_jnode_t *nd)
{
    if (it->is_int) { /* as the parses below would have it, without them */
        if (!it->neg) {
            nd->exact = it->m > (uint64_t)INT64_MAX ? 2 : 1;
            nd->ival = (int64_t)it->m;
        } else if (it->m <= (uint64_t)INT64_MAX + 1) {
            nd->exact = 1;
            nd->ival = (int64_t)(0 - it->m);
        }
        return;
    }
    for (size_t i = t[0] == '-'; i < n; i++)
        if (t[i] < '0' || t[i] > '9')
            return;
    uint64_t u;
    int64_t v;
    if (t[0] != '-' && mt_parse_uint64(t, n, &u) == MT_OK) {
        nd->exact = u > (uint64_t)INT64_MAX ? 2 : 1;
        nd->ival = (int64_t)u;
    } else if (mt_parse_int64(t, n, &v) == MT_OK) {
        nd->exact = 1;
        nd->ival = v;
    }
}

static mt_status_t new_node(parser_t *p, uint8_t type, uint32_t *idx)
{
    mt_jdoc_t *d = p->d;
    if (d->n >= INT32_MAX)
        return fail(p, p->i, MT_ERR_LIMIT, "more than 2^31 values");
    if (MT_GROW(d->nodes, d->cap, d->n + 1, 256) != MT_OK)
        return MT_ERR_NOMEM;
    d->nodes[d->n] = (mt_jnode_t){.type = type};
    *idx = (uint32_t)d->n++;
    return MT_OK;
}

static bool word(parser_t *p, const char *w, size_t n)
{
    if (p->n - p->i < n || memcmp(p->s + p->i, w, n) != 0)
        return false;
    p->i += n;
    return true;
}

/* One value from p->i (leading whitespace and the whitespace after it
 * read) into p->d, nested at most max_depth deep (0: scalars only) on
 * stack[max_depth]. */
static mt_status_t parse_all(parser_t *p, int max_depth, open_ctr_t *stack)
{
    int depth = 0;
    mt_status_t st = MT_OK;
    mt_jdoc_t *d = p->d;
    uint32_t key = 0, key_len = 0;
    bool have_key = false;
    for (;;) {
        /* expecting a value (inside an object, its key was read) */
        skip_ws(p);
        if (p->i >= p->n) {
            st = fail(p, p->i, MT_ERR_SYNTAX, depth ? "the text ends inside an array or object" : "expected a value");
            break;
        }
        size_t at = p->i;
        char c = p->s[p->i];
        uint32_t idx = 0;
        uint8_t type;
        switch (c) {
        case '{': type = MT_J_OBJ; break;
        case '[': type = MT_J_ARR; break;
        case '"': type = MT_J_STR; break;
        case 't': type = MT_J_TRUE; break;
        case 'f': type = MT_J_FALSE; break;
        case 'n': type = MT_J_NULL; break;
        default: type = MT_J_NUM; break;
        }
        if ((st = new_node(p, type, &idx)) != MT_OK)
            break;
        if (depth > 0) {
            open_ctr_t *o = &stack[depth - 1];
            if (o->last)
                d->nodes[o->last].next = idx;
            else
                d->nodes[o->node].child = idx;
            o->last = idx;
            d->nodes[o->node].len++;
            if (have_key) {
                d->nodes[idx].key = key;
                d->nodes[idx].key_len = key_len;
            }
        }
        have_key = false;
        if (type == MT_J_OBJ || type == MT_J_ARR) {
            if (depth >= max_depth) {
                st = fail(p, at, MT_ERR_LIMIT, "nested deeper than the limit");
                break;
            }
            stack[depth++] = (open_ctr_t){idx, 0};
            p->i++;
            skip_ws(p);
            if (p->i < p->n && p->s[p->i] == (type == MT_J_OBJ ? '}' : ']')) {
                p->i++;
                depth--;
                goto after_value;
            }
            if (type == MT_J_OBJ)
                goto read_key;
            continue;
        }
        if (type == MT_J_STR) {
            uint32_t off, len;
            if ((st = parse_string(p, &off, &len)) != MT_OK)
                break;
            d->nodes[idx].str = off;
            d->nodes[idx].len = len;
        } else if (type == MT_J_TRUE || type == MT_J_FALSE || type == MT_J_NULL) {
            bool ok = type == MT_J_TRUE ? word(p, "true", 4) : type == MT_J_FALSE ? word(p, "false", 5)
                                                                                   : word(p, "null", 4);
            if (!ok) {
                st = fail(p, at, MT_ERR_SYNTAX, "expected a value");
                break;
            }
        } else {
            double v;
            int_tok_t it;
            size_t from = p->i;
            if ((st = parse_number(p, &v, &it)) != MT_OK)
                break;
            d->nodes[idx].num = v;
            exact_int(p->s + from, p->i - from, &it, &d->nodes[idx]);
        }
    after_value:
        /* a value ended: close containers or go on to the next member */
        for (;;) {
            skip_ws(p);
            if (depth == 0)
                goto done;
            uint8_t t = d->nodes[stack[depth - 1].node].type;
            if (p->i >= p->n) {
                st = fail(p, p->i, MT_ERR_SYNTAX, "the text ends inside an array or object");
                goto done;
            }
            char e = p->s[p->i];
            if (e == (t == MT_J_OBJ ? '}' : ']')) {
                p->i++;
                depth--;
                continue;
            }
            if (e != ',') {
                st = fail(p, p->i, MT_ERR_SYNTAX, t == MT_J_OBJ ? "expected ',' or '}'" : "expected ',' or ']'");
                goto done;
            }
            p->i++;
            if (t == MT_J_OBJ)
                goto read_key;
            break;
        }
        continue;
    read_key:
        skip_ws(p);
        if (p->i >= p->n || p->s[p->i] != '"') {
            st = fail(p, p->i, MT_ERR_SYNTAX, "expected a member name in double quotes");
            break;
        }
        if ((st = parse_string(p, &key, &key_len)) != MT_OK)
            break;
        skip_ws(p);
        if (p->i >= p->n || p->s[p->i] != ':') {
            st = fail(p, p->i, MT_ERR_SYNTAX, "expected ':' after a member name");
            break;
        }
        p->i++;
        have_key = true;
    }
done:
    return st;
}

mt_status_t mt_jdoc_parse(const char *text, size_t len, int max_depth, const char *path, mt_jdoc_t **out,
                          mt_error_t *err)
{
    *out = NULL;
    if (max_depth < 1)
        max_depth = 1;
    mt_jdoc_t *d = calloc(1, sizeof *d);
    if (!d)
        return mt_error_set(err, MT_ERR_NOMEM, "reading JSON");
    parser_t p = {text, len, 0, path, err, d};
    open_ctr_t *stack = malloc(sizeof *stack * (size_t)max_depth);
    mt_status_t st = stack ? arena_put(&p, "", 1) : MT_ERR_NOMEM; /* offset 0: "" */
    if (st == MT_OK)
        st = parse_all(&p, max_depth, stack);
    free(stack);
    if (st == MT_OK && p.i < p.n)
        st = fail(&p, p.i, MT_ERR_SYNTAX, "unexpected text after the value");
    if (st != MT_OK) {
        if (st == MT_ERR_NOMEM)
            mt_error_set(err, MT_ERR_NOMEM, "reading JSON");
        mt_jdoc_free(d);
        return st;
    }
    *out = d;
    return MT_OK;
}

void mt_jdoc_free(mt_jdoc_t *d)
{
    if (!d)
        return;
    free(d->nodes);
    free(d->arena);
    free(d);
}

const mt_jnode_t *mt_jdoc_node(const mt_jdoc_t *d, uint32_t i)
{
    return &d->nodes[i];
}

mt_jtype_t mt_jdoc_type(const mt_jdoc_t *d, uint32_t i)
{
    return i < d->n ? (mt_jtype_t)d->nodes[i].type : MT_J_NULL;
}

uint32_t mt_jdoc_get(const mt_jdoc_t *d, uint32_t obj, const char *key)
{
    if (obj >= d->n || d->nodes[obj].type != MT_J_OBJ)
        return 0;
    size_t kl = strlen(key);
    for (uint32_t c = d->nodes[obj].child; c; c = d->nodes[c].next)
        if (d->nodes[c].key_len == kl && memcmp(d->arena + d->nodes[c].key, key, kl) == 0)
            return c;
    return 0;
}

uint32_t mt_jdoc_path(const mt_jdoc_t *d, uint32_t from, const char *dotted)
{
    uint32_t cur = from;
    char part[128];
    while (*dotted) {
        const char *dot = strchr(dotted, '.');
        size_t n = dot ? (size_t)(dot - dotted) : strlen(dotted);
        if (n >= sizeof part)
            return 0;
        memcpy(part, dotted, n);
        part[n] = 0;
        cur = mt_jdoc_get(d, cur, part);
        if (!cur)
            return 0;
        dotted += n + (dot ? 1 : 0);
    }
    return cur;
}

bool mt_jdoc_num(const mt_jdoc_t *d, uint32_t i, double *v)
{
    if (i >= d->n || d->nodes[i].type != MT_J_NUM)
        return false;
    *v = d->nodes[i].num;
    return true;
}

bool mt_jdoc_i64(const mt_jdoc_t *d, uint32_t i, int64_t *v)
{
    if (i >= d->n || d->nodes[i].type != MT_J_NUM || d->nodes[i].exact != 1)
        return false;
    *v = d->nodes[i].ival;
    return true;
}

bool mt_jdoc_u64(const mt_jdoc_t *d, uint32_t i, uint64_t *v)
{
    if (i >= d->n || d->nodes[i].type != MT_J_NUM || !d->nodes[i].exact || (d->nodes[i].exact == 1 && d->nodes[i].ival < 0))
        return false;
    *v = (uint64_t)d->nodes[i].ival;
    return true;
}

const char *mt_jdoc_str(const mt_jdoc_t *d, uint32_t i, size_t *len)
{
    if (i >= d->n || d->nodes[i].type != MT_J_STR)
        return NULL;
    if (len)
        *len = d->nodes[i].len;
    return d->arena + d->nodes[i].str;
}

const char *mt_jdoc_key(const mt_jdoc_t *d, uint32_t i)
{
    return i < d->n ? d->arena + d->nodes[i].key : "";
}

uint32_t mt_jdoc_first(const mt_jdoc_t *d, uint32_t i)
{
    if (i >= d->n || (d->nodes[i].type != MT_J_ARR && d->nodes[i].type != MT_J_OBJ))
        return 0;
    return d->nodes[i].child;
}

uint32_t mt_jdoc_next(const mt_jdoc_t *d, uint32_t i)
{
    return i < d->n ? d->nodes[i].next : 0;
}

/* ---- the cursor: the same scanner, one value at a time ---- */

/* 1 for the bytes a string's plain run is made of: ASCII from 0x20 on,
 * but for the quote and the backslash */
#define R4 1, 1, 1, 1
#define R16 R4, R4, R4, R4
static const uint8_t plain[256] = {
    [0x20] = 1, 1, 0 /* " */, 1, R4, R4, R4,   /* 0x20-0x2f */
    R16, R16,                                  /* 0x30-0x4f */
    R4, R4, R4, 0 /* \\ */, 1, 1, 1,          /* 0x50-0x5f */
    R16, R16,                                  /* 0x60-0x7f */
};
#undef R16
#undef R4

struct mt_jcur {
    parser_t p;       /* p.d is &doc */
    mt_jdoc_t doc;    /* the last value read whole, and decoded strings */
    int depth, max_depth;
    uint8_t *ctr;     /* [max_depth]: per open container, MT_J_OBJ/ARR, | 0x80 before its first member */
    open_ctr_t *stack; /* [max_depth], for parse_all */
};

mt_status_t mt_jcur_new(const char *text, size_t len, int max_depth, const char *path, mt_error_t *err,
                        mt_jcur_t **out)
{
    *out = NULL;
    if (max_depth < 1)
        max_depth = 1;
    mt_jcur_t *c = calloc(1, sizeof *c);
    if (c) {
        c->p = (parser_t){text, len, 0, path, err, &c->doc};
        c->max_depth = max_depth;
        c->ctr = malloc((size_t)max_depth);
        c->stack = malloc(sizeof *c->stack * (size_t)max_depth);
    }
    if (!c || !c->ctr || !c->stack || arena_put(&c->p, "", 1) != MT_OK) {
        mt_jcur_free(c);
        return mt_error_set(err, MT_ERR_NOMEM, "reading JSON");
    }
    *out = c;
    return MT_OK;
}

void mt_jcur_free(mt_jcur_t *c)
{
    if (!c)
        return;
    free(c->doc.nodes);
    free(c->doc.arena);
    free(c->ctr);
    free(c->stack);
    free(c);
}

size_t mt_jcur_offset(const mt_jcur_t *c)
{
    return c->p.i;
}

mt_status_t mt_jcur_peek(mt_jcur_t *c, mt_jtype_t *t)
{
    parser_t *p = &c->p;
    skip_ws(p);
    if (p->i >= p->n)
        return fail(p, p->i, MT_ERR_SYNTAX, c->depth ? "the text ends inside an array or object" : "expected a value");
    switch (p->s[p->i]) {
    case '{': *t = MT_J_OBJ; break;
    case '[': *t = MT_J_ARR; break;
    case '"': *t = MT_J_STR; break;
    case 't': *t = MT_J_TRUE; break;
    case 'f': *t = MT_J_FALSE; break;
    case 'n': *t = MT_J_NULL; break;
    default: *t = MT_J_NUM; break;
    }
    return MT_OK;
}

mt_status_t mt_jcur_enter(mt_jcur_t *c, mt_jtype_t t)
{
    parser_t *p = &c->p;
    mt_jtype_t at;
    mt_status_t st = mt_jcur_peek(c, &at);
    if (st != MT_OK)
        return st;
    if (at != t || (t != MT_J_OBJ && t != MT_J_ARR))
        return fail(p, p->i, MT_ERR_SYNTAX, t == MT_J_OBJ ? "expected an object" : "expected an array");
    if (c->depth >= c->max_depth)
        return fail(p, p->i, MT_ERR_LIMIT, "nested deeper than the limit");
    c->ctr[c->depth++] = (uint8_t)(t | 0x80);
    p->i++;
    return MT_OK;
}

/* The string at the quote p->s[p->i]: borrowed from the text when it has
 * no escape and only ASCII (the common case: no copy), else decoded into
 * the document's arena (emptied first). */
static mt_status_t cur_string(mt_jcur_t *c, const char **s, size_t *len)
{
    parser_t *p = &c->p;
    size_t run = p->i + 1;
    while (run < p->n && plain[(unsigned char)p->s[run]])
        run++;
    if (run < p->n && p->s[run] == '"') {
        *s = p->s + p->i + 1;
        *len = run - p->i - 1;
        p->i = run + 1;
        return MT_OK;
    }
    c->doc.n = 0;
    c->doc.alen = 1; /* offset 0 stays "" */
    uint32_t off, n;
    mt_status_t st = parse_string(p, &off, &n);
    if (st == MT_OK) {
        *s = c->doc.arena + off;
        *len = n;
    }
    return st;
}

mt_status_t mt_jcur_next(mt_jcur_t *c, bool *more, const char **key, size_t *klen)
{
    parser_t *p = &c->p;
    *more = false;
    if (key)
        *key = NULL, *klen = 0;
    if (c->depth == 0)
        return fail(p, p->i, MT_ERR_SYNTAX, "expected a value");
    uint8_t *top = &c->ctr[c->depth - 1];
    bool obj = (*top & 0x7f) == MT_J_OBJ, first = *top & 0x80;
    char close = obj ? '}' : ']';
    skip_ws(p);
    if (p->i >= p->n)
        return fail(p, p->i, MT_ERR_SYNTAX, "the text ends inside an array or object");
    char e = p->s[p->i];
    if (e == close) {
        p->i++;
        c->depth--;
        return MT_OK;
    }
    if (!first) {
        if (e != ',')
            return fail(p, p->i, MT_ERR_SYNTAX, obj ? "expected ',' or '}'" : "expected ',' or ']'");
        p->i++;
    }
    *top &= 0x7f;
    if (obj) {
        skip_ws(p);
        if (p->i >= p->n || p->s[p->i] != '"')
            return fail(p, p->i, MT_ERR_SYNTAX, "expected a member name in double quotes");
        const char *k;
        size_t kn;
        mt_status_t st = cur_string(c, &k, &kn);
        if (st != MT_OK)
            return st;
        skip_ws(p);
        if (p->i >= p->n || p->s[p->i] != ':')
            return fail(p, p->i, MT_ERR_SYNTAX, "expected ':' after a member name");
        p->i++;
        if (key)
            *key = k, *klen = kn;
    }
    *more = true;
    return MT_OK;
}

mt_status_t mt_jcur_skip(mt_jcur_t *c)
{
    mt_jtype_t t;
    mt_status_t st = mt_jcur_peek(c, &t);
    if (st != MT_OK)
        return st;
    if (t == MT_J_STR) {
        const char *s;
        size_t n;
        return cur_string(c, &s, &n);
    }
    if (t == MT_J_NUM) {
        double v;
        int_tok_t it;
        return parse_number(&c->p, &v, &it);
    }
    const mt_jdoc_t *d;
    return mt_jcur_value(c, &d);
}

mt_status_t mt_jcur_value(mt_jcur_t *c, const mt_jdoc_t **doc)
{
    c->doc.n = 0;
    c->doc.alen = 1;
    mt_status_t st = parse_all(&c->p, c->max_depth - c->depth, c->stack);
    *doc = st == MT_OK ? &c->doc : NULL;
    return st;
}

/* The next value when it is a number, as a node (exact set as the
 * document's); *is false (the value read whole) when it is not. */
static mt_status_t cur_number(mt_jcur_t *c, mt_jnode_t *nd, bool *is)
{
    mt_jtype_t t;
    mt_status_t st = mt_jcur_peek(c, &t);
    if (st != MT_OK)
        return st;
    *is = t == MT_J_NUM;
    if (!*is)
        return mt_jcur_skip(c);
    parser_t *p = &c->p;
    size_t from = p->i;
    int_tok_t it;
    *nd = (mt_jnode_t){.type = MT_J_NUM};
    if ((st = parse_number(p, &nd->num, &it)) == MT_OK)
        exact_int(p->s + from, p->i - from, &it, nd);
    return st;
}

mt_status_t mt_jcur_i64(mt_jcur_t *c, int64_t *v, bool *ok)
{
    mt_jnode_t nd;
    bool is;
    mt_status_t st = cur_number(c, &nd, &is);
    *ok = st == MT_OK && is && nd.exact == 1;
    if (*ok)
        *v = nd.ival;
    return st;
}

mt_status_t mt_jcur_u64(mt_jcur_t *c, uint64_t *v, bool *ok)
{
    mt_jnode_t nd;
    bool is;
    mt_status_t st = cur_number(c, &nd, &is);
    *ok = st == MT_OK && is && nd.exact && !(nd.exact == 1 && nd.ival < 0);
    if (*ok)
        *v = (uint64_t)nd.ival;
    return st;
}

mt_status_t mt_jcur_str(mt_jcur_t *c, const char **s, size_t *len)
{
    *s = NULL;
    *len = 0;
    mt_jtype_t t;
    mt_status_t st = mt_jcur_peek(c, &t);
    if (st != MT_OK)
        return st;
    if (t == MT_J_STR)
        return cur_string(c, s, len);
    return mt_jcur_skip(c);
}

mt_status_t mt_jcur_finish(mt_jcur_t *c)
{
    parser_t *p = &c->p;
    skip_ws(p);
    if (c->depth || p->i < p->n)
        return fail(p, p->i, MT_ERR_SYNTAX, c->depth ? "the text ends inside an array or object"
                                                     : "unexpected text after the value");
    return MT_OK;
}

const char *mt_jcur_text(const mt_jcur_t *c, size_t *len)
{
    *len = c->p.n;
    return c->p.s;
}

void mt_jcur_seek(mt_jcur_t *c, size_t to)
{
    c->p.i = to;
}

/* ---- quick scans of the plain forms (jdoc.h) ---- */

/* A number token by the grammar parse_number checks. */
static bool scan_number(const char *s, size_t n, size_t *i)
{
    size_t k = *i;
    if (k < n && s[k] == '-')
        k++;
    if (k >= n || s[k] < '0' || s[k] > '9')
        return false;
    if (s[k] == '0')
        k++;
    else
        while (k < n && s[k] >= '0' && s[k] <= '9')
            k++;
    if (k < n && s[k] == '.') {
        k++;
        if (k >= n || s[k] < '0' || s[k] > '9')
            return false;
        while (k < n && s[k] >= '0' && s[k] <= '9')
            k++;
    }
    if (k < n && (s[k] == 'e' || s[k] == 'E')) {
        k++;
        if (k < n && (s[k] == '+' || s[k] == '-'))
            k++;
        if (k >= n || s[k] < '0' || s[k] > '9')
            return false;
        while (k < n && s[k] >= '0' && s[k] <= '9')
            k++;
    }
    *i = k;
    return true;
}

static bool scan_word(const char *s, size_t n, size_t *i, const char *w, size_t wl)
{
    if (n - *i < wl || memcmp(s + *i, w, wl))
        return false;
    *i += wl;
    return true;
}

bool mt_jscan_skip(const char *s, size_t n, size_t *i, int depth)
{
    size_t k = *i;
    const char *str;
    size_t len;
    if (k >= n)
        return false;
    switch (s[k]) {
    case '"': return mt_jscan_str(s, n, i, &str, &len);
    case 't': return scan_word(s, n, i, "true", 4);
    case 'f': return scan_word(s, n, i, "false", 5);
    case 'n': return scan_word(s, n, i, "null", 4);
    case '[':
    case '{': {
        bool obj = s[k] == '{';
        char close = obj ? '}' : ']';
        if (depth < 1)
            return false;
        k++;
        mt_jscan_ws(s, n, &k);
        if (k < n && s[k] == close) {
            *i = k + 1;
            return true;
        }
        for (;;) {
            if (obj) {
                if (!mt_jscan_str(s, n, &k, &str, &len))
                    return false;
                mt_jscan_ws(s, n, &k);
                if (k >= n || s[k] != ':')
                    return false;
                k++;
                mt_jscan_ws(s, n, &k);
            }
            if (!mt_jscan_skip(s, n, &k, depth - 1))
                return false;
            mt_jscan_ws(s, n, &k);
            if (k < n && s[k] == close) {
                *i = k + 1;
                return true;
            }
            if (k >= n || s[k] != ',')
                return false;
            k++;
            mt_jscan_ws(s, n, &k);
        }
    }
    default: return scan_number(s, n, i);
    }
}
