/* The strict Flight Recorder unpickler: a stack machine over a few opcodes
 * building plain values, then written out as JSON text. */
#include "fr/fr_pickle.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/errpos.h"
#include "base/text.h"

#define MAX_DEPTH 64
#define MAX_MEMO (1u << 24)
#define PLAIN_DEPTH 32

_Static_assert(sizeof(mt_fr_pv_t) == 16, "a dump's values under the mmap threshold: see fr_pickle.h");

/* The machine. The values go to pk; the stack and the memo hold value ids;
 * a container's items sit in one run of pk->items, moved to the end of it
 * (twice the room) when they outgrow their run: no allocation per value. */
typedef struct up {
    const uint8_t *d;
    size_t len, pos, op; /* op: offset of the opcode being read */
    const char *path;
    mt_error_t *err;
    mt_fr_pickle_t *pk;
    uint32_t *stack;
    size_t nstack, capstack;
    size_t *marks;
    size_t nmarks, capmarks;
    uint32_t *memo; /* value id + 1; 0 = empty slot */
    size_t capmemo, nmemo_seq;
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

/* A little-endian uint32 at b (one load on the machines we build for). */
static inline uint32_t le32(const uint8_t *b)
{
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static mt_status_t new_val(up_t *p, uint8_t type, uint32_t *id)
{
    mt_fr_pickle_t *pk = p->pk;
    if (pk->nvals >= UINT32_MAX - 1)
        return fail(p, MT_ERR_LIMIT, "more than 2^32 values");
    if (MT_GROW(pk->vals, pk->capvals, pk->nvals + 1, 64) != MT_OK)
        return MT_ERR_NOMEM;
    pk->vals[pk->nvals] = (mt_fr_pv_t){.type = type};
    *id = (uint32_t)pk->nvals++;
    return MT_OK;
}

static mt_status_t push(up_t *p, uint32_t id)
{
    if (MT_GROW(p->stack, p->capstack, p->nstack + 1, 64) != MT_OK)
        return MT_ERR_NOMEM;
    p->stack[p->nstack++] = id;
    return MT_OK;
}

static mt_status_t push_new(up_t *p, uint8_t type, mt_fr_pv_t **v)
{
    uint32_t id;
    mt_status_t st = new_val(p, type, &id);
    if (st == MT_OK)
        st = push(p, id);
    if (st == MT_OK && v)
        *v = &p->pk->vals[id];
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

/* What an item adds to mt_fr_pickle_plain's account (add_items' loop). */
static inline bool note_item(mt_fr_pv_t *it, bool self, unsigned *h, size_t *bound)
{
    switch (it->type) {
    case MT_PV_STR: *bound += it->n + 3; return !it->plain; /* quotes, then a comma or colon */
    case MT_PV_LIST:
    case MT_PV_DICT: {
        bool was = it->in | self;
        it->in = 1;
        if (it->height >= *h)
            *h = it->height + 1u;
        *bound += 3;
        return was;
    }
    case MT_PV_BUILDER: return true;
    default: *bound += 33; return false; /* an int or a float's %.17g, a comma */
    }
}

/* src[0..k) appended to container cont's items (src must not point into
 * pk->items). */
static mt_status_t add_items(up_t *p, uint32_t cont, const uint32_t *src, size_t k)
{
    mt_fr_pickle_t *pk = p->pk;
    mt_fr_pv_t *c = &pk->vals[cont];
    if (!k)
        return MT_OK;
    if (k > UINT32_MAX - c->n)
        return fail(p, MT_ERR_LIMIT, "more than 2^32 items in one container");
    size_t need = (size_t)c->n + k;
    if (need > c->v.c.cap) {
        if (c->v.c.cap && c->v.c.at + c->v.c.cap == pk->nitems) { /* the last run: it grows where it is */
            size_t more = need - c->v.c.cap > c->v.c.cap ? need - c->v.c.cap : c->v.c.cap;
            if (more > UINT32_MAX - c->v.c.cap)
                more = need - c->v.c.cap;
            if (pk->nitems + more > UINT32_MAX)
                return fail(p, MT_ERR_LIMIT, "more than 2^32 items");
            if (MT_GROW(pk->items, pk->capitems, pk->nitems + more, 1024) != MT_OK)
                return MT_ERR_NOMEM;
            pk->nitems += more;
            c->v.c.cap += (uint32_t)more;
        } else {
            size_t room = need < 4 ? 4 : need;
            if (room < 2 * (size_t)c->v.c.cap && 2 * (size_t)c->v.c.cap <= UINT32_MAX)
                room = 2 * (size_t)c->v.c.cap;
            if (pk->nitems + room > UINT32_MAX)
                return fail(p, MT_ERR_LIMIT, "more than 2^32 items");
            if (MT_GROW(pk->items, pk->capitems, pk->nitems + room, 1024) != MT_OK)
                return MT_ERR_NOMEM;
            if (c->n)
                memcpy(pk->items + pk->nitems, pk->items + c->v.c.at, c->n * sizeof *pk->items);
            c->v.c.at = (uint32_t)pk->nitems;
            c->v.c.cap = (uint32_t)room;
            pk->nitems += room;
        }
    }
    memcpy(pk->items + c->v.c.at + c->n, src, k * sizeof *src);
    /* what mt_fr_pickle_plain says, kept up */
    mt_fr_pv_t *vals = pk->vals;
    bool mixed = c->in; /* c's height is final once it is an item */
    unsigned h = c->height;
    size_t bound = 0, j = 0;
    if (c->type == MT_PV_DICT) { /* keys must be strings */
        if (c->n & 1)
            mixed |= note_item(&vals[src[j]], src[j] == cont, &h, &bound), j++;
        for (; j + 1 < k; j += 2) {
            mt_fr_pv_t *key = &vals[src[j]];
            mixed |= key->type != MT_PV_STR || !key->plain;
            bound += key->n + 3;
            mixed |= note_item(&vals[src[j + 1]], src[j + 1] == cont, &h, &bound);
        }
        if (j < k) {
            mixed |= vals[src[j]].type != MT_PV_STR;
            mixed |= note_item(&vals[src[j]], src[j] == cont, &h, &bound), j++;
        }
    }
    for (; j < k; j++)
        mixed |= note_item(&vals[src[j]], src[j] == cont, &h, &bound);
    c->height = (uint8_t)(h < 255 ? h : 255);
    c->n = (uint32_t)need;
    pk->mixed |= mixed;
    pk->bound += bound;
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
    return push_new(p, MT_PV_BUILDER, NULL);
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
    mt_fr_pv_t *v;
    if ((st = push_new(p, MT_PV_STR, &v)) != MT_OK)
        return st;
    v->v.c.at = (uint32_t)p->pos; /* the input is under 4 GiB */
    v->n = (uint32_t)n;
    v->plain = mt_json_plain_len((const char *)p->d + p->pos, (size_t)n) == (size_t)n;
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
    mt_fr_pv_t *v;
    if ((st = push_new(p, MT_PV_INT, &v)) != MT_OK)
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
        v->type = MT_PV_UINT; /* 2^63 .. 2^64-1: a uint64 id */
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
    mt_fr_pv_t *v, *vals = p->pk->vals;
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
    case '}': return push_new(p, MT_PV_DICT, NULL);
    case ']':
    case ')': return push_new(p, MT_PV_LIST, NULL);
    case 'N': return push_new(p, MT_PV_NONE, NULL);
    case 0x88: return push_new(p, MT_PV_TRUE, NULL);
    case 0x89: return push_new(p, MT_PV_FALSE, NULL);
    case 'J':
    case 'K':
    case 'M': {
        size_t n = c == 'J' ? 4 : c == 'K' ? 1 : 2;
        if ((st = need(p, n)))
            return st;
        uint64_t u = le(p->d + p->pos, n);
        p->pos += n;
        if ((st = push_new(p, MT_PV_INT, &v)))
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
        if ((st = push_new(p, MT_PV_FLOAT, &v)))
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
        if (!p->nstack || vals[p->stack[p->nstack - 1]].type != MT_PV_DICT)
            return fail(p, MT_ERR_FORMAT, "SETITEM on something that is not a dict");
        return add_items(p, p->stack[p->nstack - 1], (const uint32_t[]){a, b}, 2);
    case 'u':
    case 'e':
        if ((st = pop_mark(p, &from)))
            return st;
        if (!from || vals[p->stack[from - 1]].type != (c == 'u' ? MT_PV_DICT : MT_PV_LIST))
            return fail(p, MT_ERR_FORMAT, c == 'u' ? "SETITEMS on something that is not a dict"
                                                   : "APPENDS on something that is not a list");
        if (c == 'u' && (p->nstack - from) % 2)
            return fail(p, MT_ERR_FORMAT, "SETITEMS with an odd number of items");
        if ((st = add_items(p, p->stack[from - 1], p->stack + from, p->nstack - from)))
            return st;
        p->nstack = from;
        return MT_OK;
    case 'a':
        if ((st = pop(p, &a)))
            return st;
        if (!p->nstack || vals[p->stack[p->nstack - 1]].type != MT_PV_LIST)
            return fail(p, MT_ERR_FORMAT, "APPEND on something that is not a list");
        return add_items(p, p->stack[p->nstack - 1], &a, 1);
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
        if ((st = new_val(p, MT_PV_LIST, &id)))
            return st;
        if ((st = add_items(p, id, p->stack + from, p->nstack - from)))
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
        if (vals[a].type != MT_PV_STR || vals[b].type != MT_PV_STR)
            return fail(p, MT_ERR_FORMAT, "STACK_GLOBAL of something that is not a string");
        return global(p, (const char *)p->d + vals[a].v.c.at, vals[a].n, (const char *)p->d + vals[b].v.c.at,
                      vals[b].n);
    case 'R': /* REDUCE: only a list builder applied to a 1-tuple */
        if ((st = pop(p, &b)) || (st = pop(p, &a)))
            return st;
        if (vals[a].type != MT_PV_BUILDER)
            return fail(p, MT_ERR_FORMAT, "refused REDUCE of something that is not an allowed global");
        if (vals[b].type != MT_PV_LIST || vals[b].n != 1 || vals[p->pk->items[vals[b].v.c.at]].type != MT_PV_LIST)
            return fail(p, MT_ERR_FORMAT, "REDUCE of a list builder without one list argument");
        /* the argument's tuple is gone: its list may become an item; the
         * tuple may not (it would hold the list twice) */
        id = p->pk->items[vals[b].v.c.at];
        p->pk->mixed |= vals[b].in;
        vals[b].in = 1;
        vals[id].in = 0;
        return push(p, id);
    default: {
        char what[64];
        snprintf(what, sizeof what, "unknown opcode 0x%02x", c);
        return fail(p, MT_ERR_FORMAT, what);
    }
    }
}

/* The usual opcodes of a dump (memo gets and stores, ints, empty
 * containers, APPEND to a list with room) for as long as every operand is
 * in the bytes, there is room for the values and every check passes; the
 * state in locals, not behind p on every opcode. Stops before the first
 * other opcode, for step() to read it (and say what is wrong) from its
 * first byte. step() paid for its generality on every opcode: a dump's
 * opcodes are 40 % memo gets. */
static mt_status_t fast_run(up_t *p)
{
    mt_fr_pickle_t *pk = p->pk;
    const uint8_t *d = p->d;
    if (p->len < 10)
        return MT_OK;
    size_t pos = p->pos, last = p->len - 10; /* 10 bytes from pos on, the widest opcode here */
    uint32_t *stack = p->stack, *memo = p->memo;
    size_t ns = p->nstack, capst = p->capstack, capmemo = p->capmemo;
    mt_fr_pv_t *vals = pk->vals;
    size_t nv = pk->nvals, capv = pk->capvals < UINT32_MAX - 1 ? pk->capvals : UINT32_MAX - 1;
    size_t floor = p->nmarks ? p->marks[p->nmarks - 1] : 0;
    mt_status_t st = MT_OK;
    while (pos <= last && ns < capst && nv < capv) {
        const uint8_t *b = d + pos;
        mt_fr_pv_t *v = vals + nv;
        uint32_t k;
        switch (b[0]) {
        case 'h':
            k = b[1];
            if (k >= capmemo || !memo[k])
                goto out;
            stack[ns++] = memo[k] - 1;
            pos += 2;
            continue;
        case 'j':
            k = le32(b + 1);
            if (k >= capmemo || !memo[k])
                goto out;
            stack[ns++] = memo[k] - 1;
            pos += 5;
            continue;
        case 'q':
            k = b[1];
            if (!ns || k >= capmemo)
                goto out;
            memo[k] = stack[ns - 1] + 1;
            pos += 2;
            continue;
        case 'r':
            k = le32(b + 1);
            if (!ns || k >= capmemo)
                goto out;
            memo[k] = stack[ns - 1] + 1;
            pos += 5;
            continue;
        case 'a': {
            if (ns < floor + 2)
                goto out;
            uint32_t cid = stack[ns - 2], id = stack[ns - 1];
            mt_fr_pv_t *c = &vals[cid];
            if (c->type != MT_PV_LIST || c->in || c->n >= UINT32_MAX - 1)
                goto out;
            if (c->n == c->v.c.cap) {
                if (c->v.c.cap || pk->capitems - pk->nitems < 4 || pk->nitems + 4 > UINT32_MAX)
                    goto out; /* add_items moves it */
                c->v.c.at = (uint32_t)pk->nitems;
                c->v.c.cap = 4;
                pk->nitems += 4;
            }
            pk->items[c->v.c.at + c->n++] = id;
            unsigned h = c->height;
            size_t bound = 0;
            pk->mixed |= note_item(&vals[id], id == cid, &h, &bound);
            c->height = (uint8_t)(h < 255 ? h : 255);
            pk->bound += bound;
            ns--;
            pos++;
            continue;
        }
        case '}': *v = (mt_fr_pv_t){.type = MT_PV_DICT}; pos += 1; break;
        case ']':
        case ')': *v = (mt_fr_pv_t){.type = MT_PV_LIST}; pos += 1; break;
        case 'N': *v = (mt_fr_pv_t){.type = MT_PV_NONE}; pos += 1; break;
        case 0x88: *v = (mt_fr_pv_t){.type = MT_PV_TRUE}; pos += 1; break;
        case 0x89: *v = (mt_fr_pv_t){.type = MT_PV_FALSE}; pos += 1; break;
        case 'K': *v = (mt_fr_pv_t){.type = MT_PV_INT, .v.i = b[1]}; pos += 2; break;
        case 'M': *v = (mt_fr_pv_t){.type = MT_PV_INT, .v.i = (int64_t)le(b + 1, 2)}; pos += 3; break;
        case 'J': *v = (mt_fr_pv_t){.type = MT_PV_INT, .v.i = (int32_t)le32(b + 1)}; pos += 5; break;
        case 0x8a: { /* LONG1 of 8 bytes or fewer, as long_op reads it */
            size_t n = b[1];
            if (n > 8)
                goto out;
            uint64_t u = le(b + 2, n);
            bool neg = n && (b[1 + n] & 0x80);
            if (neg && n < 8)
                u |= ~UINT64_C(0) << (8 * n);
            if (!neg && (u >> 63))
                *v = (mt_fr_pv_t){.type = MT_PV_UINT, .v.u = u};
            else
                *v = (mt_fr_pv_t){.type = MT_PV_INT, .v.i = (int64_t)u};
            pos += 2 + n;
            break;
        }
        case 'G': {
            uint64_t u = 0;
            for (int i = 1; i <= 8; i++)
                u = u << 8 | b[i];
            *v = (mt_fr_pv_t){.type = MT_PV_FLOAT};
            memcpy(&v->v.f, &u, sizeof u);
            pos += 9;
            break;
        }
        default: goto out;
        }
        stack[ns++] = (uint32_t)nv++; /* a new value */
    }
out:
    p->pos = pos;
    p->nstack = ns;
    pk->nvals = nv;
    return st;
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

/* The writer: errors at the offset of STOP. */
typedef struct em {
    const mt_fr_pickle_t *pk;
    mt_error_t *err;
    size_t limit;
} em_t;

static size_t out_limit(size_t len)
{
    return len > (SIZE_MAX - (1u << 20)) / 64 ? SIZE_MAX / 2 : 64 * len + (1u << 20);
}

static mt_status_t em_fail(const em_t *e, mt_status_t code, const char *what)
{
    mt_error_set(e->err, code, "pickle: %s", what);
    mt_errpos_set(e->err, e->pk->path, (int64_t)e->pk->len - 1, -1, -1);
    return code;
}

static mt_status_t emit(const em_t *e, uint32_t id, int depth, mt_buf_t *o);

static mt_status_t emit_key(const em_t *e, uint32_t id, mt_buf_t *o)
{
    const mt_fr_pv_t *v = &e->pk->vals[id];
    if (v->type == MT_PV_STR)
        return emit_str(e->pk->data, v->v.c.at, v->n, o);
    if (v->type == MT_PV_INT || v->type == MT_PV_UINT) {
        char b[24];
        size_t n = v->type == MT_PV_INT ? mt_fmt_i64(v->v.i, b) : mt_fmt_u64(v->v.u, b);
        mt_status_t st = mt_buf_append(o, "\"", 1);
        if (!st)
            st = mt_buf_append(o, b, n);
        return st ? st : mt_buf_append(o, "\"", 1);
    }
    return em_fail(e, MT_ERR_FORMAT, "a dict key that is neither a string nor an int");
}

static mt_status_t emit(const em_t *e, uint32_t id, int depth, mt_buf_t *o)
{
    if (depth > MAX_DEPTH)
        return em_fail(e, MT_ERR_LIMIT, "nested deeper than 64");
    if (o->len > e->limit)
        return em_fail(e, MT_ERR_LIMIT, "decoded text over 64 times the input (memo references)");
    const mt_fr_pv_t *v = &e->pk->vals[id];
    char b[40];
    size_t n;
    mt_status_t st = MT_OK;
    switch (v->type) {
    case MT_PV_NONE: return mt_buf_append(o, "null", 4);
    case MT_PV_TRUE: return mt_buf_append(o, "true", 4);
    case MT_PV_FALSE: return mt_buf_append(o, "false", 5);
    case MT_PV_INT: n = mt_fmt_i64(v->v.i, b); return mt_buf_append(o, b, n);
    case MT_PV_UINT: n = mt_fmt_u64(v->v.u, b); return mt_buf_append(o, b, n);
    case MT_PV_FLOAT:
        if (!isfinite(v->v.f))
            return mt_buf_append(o, "null", 4);
        n = (size_t)snprintf(b, sizeof b, "%.17g", v->v.f);
        if (!strpbrk(b, ".eE")) /* keep it a float: 2.0, not 2 */
            b[n++] = '.', b[n++] = '0';
        return mt_buf_append(o, b, n);
    case MT_PV_STR: return emit_str(e->pk->data, v->v.c.at, v->n, o);
    case MT_PV_LIST:
    case MT_PV_DICT: {
        bool dict = v->type == MT_PV_DICT;
        if ((st = mt_buf_append(o, dict ? "{" : "[", 1)))
            return st;
        const uint32_t *items = e->pk->items + v->v.c.at;
        for (size_t i = 0; i < v->n && !st; i++) {
            if (i && (st = mt_buf_append(o, dict && i % 2 ? ":" : ",", 1)))
                break;
            st = dict && i % 2 == 0 ? emit_key(e, items[i], o) : emit(e, items[i], depth + 1, o);
        }
        return st ? st : mt_buf_append(o, dict ? "}" : "]", 1);
    }
    default: return em_fail(e, MT_ERR_FORMAT, "a global that was never applied");
    }
}

int mt_fr_pickle_sniff(const uint8_t *data, size_t len)
{
    return len >= 2 && data[0] == 0x80 && data[1] >= 2 && data[1] <= 5;
}

void mt_fr_pickle_free(mt_fr_pickle_t *pk)
{
    if (!pk)
        return;
    free(pk->vals);
    free(pk->items);
    *pk = (mt_fr_pickle_t){0};
}

mt_status_t mt_fr_pickle_load(const uint8_t *data, size_t len, const char *path, mt_fr_pickle_t *pk,
                              mt_error_t *err)
{
    *pk = (mt_fr_pickle_t){.data = data, .len = len, .path = path};
    up_t p = {.d = data, .len = len, .path = path, .err = err, .pk = pk};
    mt_status_t st = MT_OK;
    bool stop = false;
    if (!mt_fr_pickle_sniff(data, len)) {
        st = fail(&p, len < 2 ? MT_ERR_TRUNCATED : MT_ERR_FORMAT, "expected PROTO 2 to 5 at the start");
        goto done;
    }
    if (len > UINT32_MAX) { /* offsets into it are 32-bit */
        st = fail(&p, MT_ERR_LIMIT, "a pickle of 4 GiB or more");
        goto done;
    }
    /* room for a dump's values and items at once, sized as they are (not
     * MT_GROW's powers of two): a dump of PyTorch's, 400 KB of pickle,
     * holds 46,000 values and 143,000 items (their moves counted), and so
     * 740 + 570 KB, under the mmap threshold of 1 MiB (mt_fr_pv_t) */
    size_t gv = (len < (UINT32_MAX >> 2) ? len : (UINT32_MAX >> 2)) / 8 + 256, gi = 4 * gv;
    if (!(pk->vals = malloc(gv * sizeof *pk->vals)) || !(pk->items = malloc(gi * sizeof *pk->items))) {
        st = MT_ERR_NOMEM;
        goto done;
    }
    pk->capvals = gv;
    pk->capitems = gi;
    while (!st && !stop)
        if ((st = fast_run(&p)) == MT_OK)
            st = step(&p, &stop);
    if (!st && (p.nstack != 1 || p.nmarks))
        st = fail(&p, MT_ERR_FORMAT, "STOP with other than one value on the stack");
    if (!st && p.pos != len) {
        p.op = p.pos;
        st = fail(&p, MT_ERR_FORMAT, "bytes after STOP");
    }
    if (!st)
        pk->root = p.stack[0];
done:
    free(p.stack);
    free(p.marks);
    free(p.memo);
    if (st != MT_OK)
        mt_fr_pickle_free(pk);
    if (st == MT_ERR_NOMEM && err && err->code == MT_OK)
        mt_error_set(err, MT_ERR_NOMEM, "pickle: out of memory");
    return st;
}

mt_status_t mt_fr_pickle_json(const mt_fr_pickle_t *pk, mt_buf_t *out, mt_error_t *err)
{
    em_t e = {.pk = pk, .err = err, .limit = out_limit(pk->len)};
    size_t before = out->len;
    mt_status_t st = emit(&e, pk->root, 0, out);
    if (st != MT_OK)
        out->len = before;
    if (st == MT_ERR_NOMEM && err && err->code == MT_OK)
        mt_error_set(err, MT_ERR_NOMEM, "pickle: out of memory");
    return st;
}

bool mt_fr_pickle_plain(const mt_fr_pickle_t *pk)
{
    if (!pk->vals || pk->mixed)
        return false;
    const mt_fr_pv_t *r = &pk->vals[pk->root];
    if (r->type == MT_PV_BUILDER || (r->type == MT_PV_STR && !r->plain))
        return false;
    if ((r->type == MT_PV_LIST || r->type == MT_PV_DICT) && (r->in || r->height > PLAIN_DEPTH))
        return false;
    return pk->bound + 40 <= out_limit(pk->len) / 2;
}

mt_status_t mt_fr_pickle_to_json(const uint8_t *data, size_t len, const char *path, mt_buf_t *out,
                                 mt_error_t *err)
{
    mt_fr_pickle_t pk;
    mt_status_t st = mt_fr_pickle_load(data, len, path, &pk, err);
    if (st == MT_OK)
        st = mt_fr_pickle_json(&pk, out, err);
    mt_fr_pickle_free(&pk);
    return st;
}
