/* The strict Flight Recorder unpickler: a stack machine over a few opcodes
 * building plain values, then written out as JSON text. */
#include "fr/fr_pickle.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/errpos.h"
#include "base/text.h"

enum { V_NONE, V_TRUE, V_FALSE, V_INT, V_UINT, V_FLOAT, V_STR, V_LIST, V_DICT, V_BUILDER, V_MARKER };

#define MAX_DEPTH 64
#define MAX_MEMO (1u << 24)

/* One value. Strings borrow the input; containers own their item list
 * (a dict's items alternate key, value). */
typedef struct pv {
    uint8_t type;
    union {
        int64_t i;
        uint64_t u;
        double f;
        struct {
            size_t off, len;
        } s;
    } v;
    uint32_t *items;
    size_t n, cap;
} pv_t;

typedef struct up {
    const uint8_t *d;
    size_t len, pos, op; /* op: offset of the opcode being read */
    const char *path;
    mt_error_t *err;
    pv_t *vals;
    size_t nvals, capvals;
    uint32_t *stack;
    size_t nstack, capstack;
    size_t *marks;
    size_t nmarks, capmarks;
    uint32_t *memo; /* value id + 1; 0 = empty slot */
    size_t capmemo, nmemo_seq;
    size_t out_limit;
} up_t;

static mt_status_t fail(up_t *p, mt_status_t code, const char *what)
{
    mt_error_set(p->err, code, "pickle: %s", what);
    mt_errpos_set(p->err, p->path, (int64_t)p->op, -1, -1);
    return code;
}

static mt_status_t need(up_t *p, size_t n)
{
    if (p->len - p->pos < n)
        return fail(p, MT_ERR_TRUNCATED, "the bytes end inside an operand");
    return MT_OK;
}

static uint64_t le(const uint8_t *b, size_t n)
{
    uint64_t v = 0;
    for (size_t i = n; i-- > 0;)
        v = v << 8 | b[i];
    return v;
}

static mt_status_t new_val(up_t *p, uint8_t type, uint32_t *id)
{
    if (p->nvals >= UINT32_MAX - 1)
        return fail(p, MT_ERR_LIMIT, "more than 2^32 values");
    if (MT_GROW(p->vals, p->capvals, p->nvals + 1, 64) != MT_OK)
        return MT_ERR_NOMEM;
    p->vals[p->nvals] = (pv_t){.type = type};
    *id = (uint32_t)p->nvals++;
    return MT_OK;
}

static mt_status_t push(up_t *p, uint32_t id)
{
    if (MT_GROW(p->stack, p->capstack, p->nstack + 1, 64) != MT_OK)
        return MT_ERR_NOMEM;
    p->stack[p->nstack++] = id;
    return MT_OK;
}

static mt_status_t push_new(up_t *p, uint8_t type, pv_t **v)
{
    uint32_t id;
    mt_status_t st = new_val(p, type, &id);
    if (st == MT_OK)
        st = push(p, id);
    if (st == MT_OK && v)
        *v = &p->vals[id];
    return st;
}

/* The stack's top above the innermost mark must hold at least n values. */
static mt_status_t pop(up_t *p, uint32_t *id)
{
    size_t floor = p->nmarks ? p->marks[p->nmarks - 1] : 0;
    if (p->nstack <= floor)
        return fail(p, MT_ERR_FORMAT, "stack underflow");
    *id = p->stack[--p->nstack];
    return MT_OK;
}

static mt_status_t add_item(up_t *p, uint32_t cont, uint32_t item)
{
    pv_t *c = &p->vals[cont];
    if (MT_GROW(c->items, c->cap, c->n + 1, 8) != MT_OK)
        return MT_ERR_NOMEM;
    c->items[c->n++] = item;
    return MT_OK;
}

/* Items from the innermost mark to the top, in order; pops the mark. */
static mt_status_t pop_mark(up_t *p, size_t *from)
{
    if (!p->nmarks)
        return fail(p, MT_ERR_FORMAT, "no MARK to end");
    *from = p->marks[--p->nmarks];
    return MT_OK;
}

static mt_status_t memo_put(up_t *p, uint64_t key)
{
    if (!p->nstack)
        return fail(p, MT_ERR_FORMAT, "memo store of an empty stack");
    if (key >= MAX_MEMO)
        return fail(p, MT_ERR_LIMIT, "memo index over 2^24");
    if (key >= p->capmemo) {
        size_t old = p->capmemo;
        if (MT_GROW(p->memo, p->capmemo, key + 1, 64) != MT_OK)
            return MT_ERR_NOMEM;
        memset(p->memo + old, 0, (p->capmemo - old) * sizeof *p->memo);
    }
    p->memo[key] = p->stack[p->nstack - 1] + 1;
    return MT_OK;
}

static mt_status_t memo_get(up_t *p, uint64_t key)
{
    if (key >= p->capmemo || !p->memo[key])
        return fail(p, MT_ERR_FORMAT, "memo get of a slot never stored");
    return push(p, p->memo[key] - 1);
}

static bool builder_name(const char *mod, size_t ml, const char *name, size_t nl)
{
    static const char *const ok[] = {"build_intlist", "build_doublelist", "build_boollist", "build_genericlist"};
    if (ml != 17 || memcmp(mod, "torch.jit._pickle", 17))
        return false;
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++)
        if (strlen(ok[i]) == nl && !memcmp(ok[i], name, nl))
            return true;
    return false;
}

static mt_status_t global(up_t *p, const char *mod, size_t ml, const char *name, size_t nl)
{
    if (!builder_name(mod, ml, name, nl)) {
        char what[200];
        snprintf(what, sizeof what, "refused global %.*s.%.*s (only plain containers are read)", (int)(ml > 60 ? 60 : ml),
                 mod, (int)(nl > 60 ? 60 : nl), name);
        for (char *c = what; *c; c++)
            if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f)
                *c = '?';
        return fail(p, MT_ERR_FORMAT, what);
    }
    return push_new(p, V_BUILDER, NULL);
}

static mt_status_t str_op(up_t *p, size_t n_len)
{
    mt_status_t st = need(p, n_len);
    if (st)
        return st;
    uint64_t n = le(p->d + p->pos, n_len);
    p->pos += n_len;
    if (n > p->len - p->pos)
        return fail(p, MT_ERR_TRUNCATED, "the bytes end inside a string");
    pv_t *v;
    if ((st = push_new(p, V_STR, &v)) != MT_OK)
        return st;
    v->v.s.off = p->pos;
    v->v.s.len = (size_t)n;
    p->pos += (size_t)n;
    return MT_OK;
}

static mt_status_t long_op(up_t *p, size_t n)
{
    mt_status_t st = need(p, n);
    if (st)
        return st;
    const uint8_t *b = p->d + p->pos;
    p->pos += n;
    pv_t *v;
    if ((st = push_new(p, V_INT, &v)) != MT_OK)
        return st;
    bool neg = n && (b[n - 1] & 0x80);
    /* little-endian two's complement: bytes past the 8th only repeat the sign */
    for (size_t i = 8; i < n; i++)
        if (b[i] != (neg ? 0xff : 0x00))
            return fail(p, MT_ERR_RANGE, "an int wider than 64 bits");
    uint64_t u = le(b, n < 8 ? n : 8);
    if (neg && n < 8)
        u |= ~UINT64_C(0) << (8 * n);
    if (!neg && (u >> 63)) {
        v->type = V_UINT; /* 2^63 .. 2^64-1: a uint64 id */
        v->v.u = u;
        return MT_OK;
    }
    if (neg && n > 8 && !(u >> 63))
        return fail(p, MT_ERR_RANGE, "an int below -2^63");
    v->v.i = (int64_t)u;
    return MT_OK;
}

static mt_status_t step(up_t *p, bool *stop)
{
    p->op = p->pos;
    if (p->pos >= p->len)
        return fail(p, MT_ERR_TRUNCATED, "the bytes end before STOP");
    uint8_t c = p->d[p->pos++];
    mt_status_t st = MT_OK;
    uint32_t a, b, id;
    size_t from;
    pv_t *v;
    switch (c) {
    case 0x80: /* PROTO */
        if ((st = need(p, 1)))
            return st;
        if (p->d[p->pos] < 2 || p->d[p->pos] > 5)
            return fail(p, MT_ERR_FORMAT, "protocol not 2 to 5");
        p->pos++;
        return MT_OK;
    case 0x95: /* FRAME: a length hint */
        if ((st = need(p, 8)))
            return st;
        p->pos += 8;
        return MT_OK;
    case '.':
        *stop = true;
        return MT_OK;
    case '(':
        if (MT_GROW(p->marks, p->capmarks, p->nmarks + 1, 16) != MT_OK)
            return MT_ERR_NOMEM;
        p->marks[p->nmarks++] = p->nstack;
        return MT_OK;
    case '}': return push_new(p, V_DICT, NULL);
    case ']':
    case ')': return push_new(p, V_LIST, NULL);
    case 'N': return push_new(p, V_NONE, NULL);
    case 0x88: return push_new(p, V_TRUE, NULL);
    case 0x89: return push_new(p, V_FALSE, NULL);
    case 'J':
    case 'K':
    case 'M': {
        size_t n = c == 'J' ? 4 : c == 'K' ? 1 : 2;
        if ((st = need(p, n)))
            return st;
        uint64_t u = le(p->d + p->pos, n);
        p->pos += n;
        if ((st = push_new(p, V_INT, &v)))
            return st;
        v->v.i = c == 'J' ? (int64_t)(int32_t)(uint32_t)u : (int64_t)u;
        return MT_OK;
    }
    case 0x8a: /* LONG1 */
        if ((st = need(p, 1)))
            return st;
        return long_op(p, p->d[p->pos++]);
    case 0x8b: { /* LONG4 */
        if ((st = need(p, 4)))
            return st;
        uint64_t n = le(p->d + p->pos, 4);
        p->pos += 4;
        if (n > 9)
            return fail(p, MT_ERR_RANGE, "an int wider than 64 bits");
        return long_op(p, (size_t)n);
    }
    case 'G': {
        if ((st = need(p, 8)))
            return st;
        uint64_t u = 0;
        for (int i = 0; i < 8; i++)
            u = u << 8 | p->d[p->pos + i];
        p->pos += 8;
        if ((st = push_new(p, V_FLOAT, &v)))
            return st;
        memcpy(&v->v.f, &u, sizeof u);
        return MT_OK;
    }
    case 0x8c: return str_op(p, 1);
    case 'X': return str_op(p, 4);
    case 0x8d: return str_op(p, 8);
    case 'q':
    case 'r': {
        size_t n = c == 'q' ? 1 : 4;
        if ((st = need(p, n)))
            return st;
        uint64_t k = le(p->d + p->pos, n);
        p->pos += n;
        return memo_put(p, k);
    }
    case 0x94: return memo_put(p, p->nmemo_seq++);
    case 'h':
    case 'j': {
        size_t n = c == 'h' ? 1 : 4;
        if ((st = need(p, n)))
            return st;
        uint64_t k = le(p->d + p->pos, n);
        p->pos += n;
        return memo_get(p, k);
    }
    case 's': /* SETITEM */
        if ((st = pop(p, &b)) || (st = pop(p, &a)))
            return st;
        if (!p->nstack || p->vals[p->stack[p->nstack - 1]].type != V_DICT)
            return fail(p, MT_ERR_FORMAT, "SETITEM on something that is not a dict");
        id = p->stack[p->nstack - 1];
        if ((st = add_item(p, id, a)))
            return st;
        return add_item(p, id, b);
    case 'u':
    case 'e':
        if ((st = pop_mark(p, &from)))
            return st;
        if (!from || p->vals[p->stack[from - 1]].type != (c == 'u' ? V_DICT : V_LIST))
            return fail(p, MT_ERR_FORMAT, c == 'u' ? "SETITEMS on something that is not a dict"
                                                   : "APPENDS on something that is not a list");
        if (c == 'u' && (p->nstack - from) % 2)
            return fail(p, MT_ERR_FORMAT, "SETITEMS with an odd number of items");
        id = p->stack[from - 1];
        for (size_t i = from; i < p->nstack; i++)
            if ((st = add_item(p, id, p->stack[i])))
                return st;
        p->nstack = from;
        return MT_OK;
    case 'a':
        if ((st = pop(p, &a)))
            return st;
        if (!p->nstack || p->vals[p->stack[p->nstack - 1]].type != V_LIST)
            return fail(p, MT_ERR_FORMAT, "APPEND on something that is not a list");
        return add_item(p, p->stack[p->nstack - 1], a);
    case 't':
    case 0x85:
    case 0x86:
    case 0x87: {
        if (c == 't') {
            if ((st = pop_mark(p, &from)))
                return st;
        } else {
            size_t k = (size_t)(c - 0x84);
            size_t floor = p->nmarks ? p->marks[p->nmarks - 1] : 0;
            if (p->nstack - floor < k)
                return fail(p, MT_ERR_FORMAT, "stack underflow");
            from = p->nstack - k;
        }
        if ((st = new_val(p, V_LIST, &id)))
            return st;
        for (size_t i = from; i < p->nstack; i++)
            if ((st = add_item(p, id, p->stack[i])))
                return st;
        p->nstack = from;
        return push(p, id);
    }
    case 'c': { /* GLOBAL "module\nname\n" */
        const uint8_t *m = p->d + p->pos, *e1 = memchr(m, '\n', p->len - p->pos);
        if (!e1)
            return fail(p, MT_ERR_TRUNCATED, "the bytes end inside GLOBAL");
        const uint8_t *nm = e1 + 1, *e2 = memchr(nm, '\n', (size_t)(p->d + p->len - nm));
        if (!e2)
            return fail(p, MT_ERR_TRUNCATED, "the bytes end inside GLOBAL");
        p->pos = (size_t)(e2 + 1 - p->d);
        return global(p, (const char *)m, (size_t)(e1 - m), (const char *)nm, (size_t)(e2 - nm));
    }
    case 0x93: /* STACK_GLOBAL */
        if ((st = pop(p, &b)) || (st = pop(p, &a)))
            return st;
        if (p->vals[a].type != V_STR || p->vals[b].type != V_STR)
            return fail(p, MT_ERR_FORMAT, "STACK_GLOBAL of something that is not a string");
        return global(p, (const char *)p->d + p->vals[a].v.s.off, p->vals[a].v.s.len,
                      (const char *)p->d + p->vals[b].v.s.off, p->vals[b].v.s.len);
    case 'R': /* REDUCE: only a list builder applied to a 1-tuple */
        if ((st = pop(p, &b)) || (st = pop(p, &a)))
            return st;
        if (p->vals[a].type != V_BUILDER)
            return fail(p, MT_ERR_FORMAT, "refused REDUCE of something that is not an allowed global");
        if (p->vals[b].type != V_LIST || p->vals[b].n != 1 || p->vals[p->vals[b].items[0]].type != V_LIST)
            return fail(p, MT_ERR_FORMAT, "REDUCE of a list builder without one list argument");
        return push(p, p->vals[b].items[0]);
    default: {
        char what[64];
        snprintf(what, sizeof what, "unknown opcode 0x%02x", c);
        return fail(p, MT_ERR_FORMAT, what);
    }
    }
}

/* The string at d[off..off+len) as JSON text: most are quoted as they
 * are, straight into the buffer; the rest through mt_json_string. */
static mt_status_t emit_str(const uint8_t *d, size_t off, size_t len, mt_buf_t *o)
{
    const char *str = (const char *)d + off;
    if (mt_json_plain_len(str, len) < len)
        return mt_json_string(str, len, mt_buf_write, o);
    mt_status_t st = mt_buf_reserve(o, len + 2);
    if (st != MT_OK)
        return st;
    o->data[o->len++] = '"';
    memcpy(o->data + o->len, str, len);
    o->len += len;
    o->data[o->len++] = '"';
    return MT_OK;
}

static mt_status_t emit(up_t *p, uint32_t id, int depth, mt_buf_t *o);

static mt_status_t emit_key(up_t *p, uint32_t id, mt_buf_t *o)
{
    const pv_t *v = &p->vals[id];
    if (v->type == V_STR)
        return emit_str(p->d, v->v.s.off, v->v.s.len, o);
    if (v->type == V_INT || v->type == V_UINT) {
        char b[24];
        size_t n = v->type == V_INT ? mt_fmt_i64(v->v.i, b) : mt_fmt_u64(v->v.u, b);
        mt_status_t st = mt_buf_append(o, "\"", 1);
        if (!st)
            st = mt_buf_append(o, b, n);
        return st ? st : mt_buf_append(o, "\"", 1);
    }
    return fail(p, MT_ERR_FORMAT, "a dict key that is neither a string nor an int");
}

static mt_status_t emit(up_t *p, uint32_t id, int depth, mt_buf_t *o)
{
    if (depth > MAX_DEPTH)
        return fail(p, MT_ERR_LIMIT, "nested deeper than 64");
    if (o->len > p->out_limit)
        return fail(p, MT_ERR_LIMIT, "decoded text over 64 times the input (memo references)");
    const pv_t *v = &p->vals[id];
    char b[40];
    size_t n;
    mt_status_t st = MT_OK;
    switch (v->type) {
    case V_NONE: return mt_buf_append(o, "null", 4);
    case V_TRUE: return mt_buf_append(o, "true", 4);
    case V_FALSE: return mt_buf_append(o, "false", 5);
    case V_INT: n = mt_fmt_i64(v->v.i, b); return mt_buf_append(o, b, n);
    case V_UINT: n = mt_fmt_u64(v->v.u, b); return mt_buf_append(o, b, n);
    case V_FLOAT:
        if (!isfinite(v->v.f))
            return mt_buf_append(o, "null", 4);
        n = (size_t)snprintf(b, sizeof b, "%.17g", v->v.f);
        if (!strpbrk(b, ".eE")) /* keep it a float: 2.0, not 2 */
            b[n++] = '.', b[n++] = '0';
        return mt_buf_append(o, b, n);
    case V_STR: return emit_str(p->d, v->v.s.off, v->v.s.len, o);
    case V_LIST:
    case V_DICT: {
        bool dict = v->type == V_DICT;
        if ((st = mt_buf_append(o, dict ? "{" : "[", 1)))
            return st;
        for (size_t i = 0; i < p->vals[id].n && !st; i++) {
            uint32_t it = p->vals[id].items[i];
            if (i && (st = mt_buf_append(o, dict && i % 2 ? ":" : ",", 1)))
                break;
            st = dict && i % 2 == 0 ? emit_key(p, it, o) : emit(p, it, depth + 1, o);
        }
        return st ? st : mt_buf_append(o, dict ? "}" : "]", 1);
    }
    default: return fail(p, MT_ERR_FORMAT, "a global that was never applied");
    }
}

int mt_fr_pickle_sniff(const uint8_t *data, size_t len)
{
    return len >= 2 && data[0] == 0x80 && data[1] >= 2 && data[1] <= 5;
}

mt_status_t mt_fr_pickle_to_json(const uint8_t *data, size_t len, const char *path, mt_buf_t *out,
                                 mt_error_t *err)
{
    up_t p = {.d = data, .len = len, .path = path, .err = err};
    p.out_limit = (len > (SIZE_MAX - (1u << 20)) / 64 ? SIZE_MAX / 2 : 64 * len + (1u << 20));
    mt_status_t st = MT_OK;
    bool stop = false;
    if (!mt_fr_pickle_sniff(data, len)) {
        st = fail(&p, len < 2 ? MT_ERR_TRUNCATED : MT_ERR_FORMAT, "expected PROTO 2 to 5 at the start");
        goto done;
    }
    while (!st && !stop)
        st = step(&p, &stop);
    if (!st && (p.nstack != 1 || p.nmarks))
        st = fail(&p, MT_ERR_FORMAT, "STOP with other than one value on the stack");
    if (!st && p.pos != len) {
        p.op = p.pos;
        st = fail(&p, MT_ERR_FORMAT, "bytes after STOP");
    }
    if (!st) {
        size_t before = out->len;
        p.op = p.pos - 1;
        st = emit(&p, p.stack[0], 0, out);
        if (st)
            out->len = before;
    }
done:
    for (size_t i = 0; i < p.nvals; i++)
        free(p.vals[i].items);
    free(p.vals);
    free(p.stack);
    free(p.marks);
    free(p.memo);
    if (st == MT_ERR_NOMEM && err && err->code == MT_OK)
        mt_error_set(err, MT_ERR_NOMEM, "pickle: out of memory");
    return st;
}
