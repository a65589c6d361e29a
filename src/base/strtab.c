/* String interning with an open-addressing hash table over one byte arena. */
#include "mergetrace/strtab.h"
#include "base/bigmem.h"

#include <stdlib.h>
#include <string.h>

typedef struct entry {
    uint64_t off;   /* offset of the bytes in the arena */
    uint32_t len;
    uint32_t hash;  /* low 32 bits of the hash, to skip most memcmp calls */
} entry_t;

struct mt_strtab {
    char *arena;
    size_t arena_len, arena_cap;
    entry_t *ents;        /* id -> entry */
    uint32_t n_ents, cap_ents;
    uint32_t *slots;      /* hash slot -> id + 1 (0 = empty) */
    size_t n_slots;       /* power of two */
};

/* A multiply-xorshift hash over 8-byte words. Interning sits on the loader's
 * hot path (one name per event), so it reads words, not bytes. */
static inline uint64_t load64(const char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static inline uint64_t mix(uint64_t a, uint64_t b)
{
    __uint128_t r = (__uint128_t)a * b;
    return (uint64_t)r ^ (uint64_t)(r >> 64);
}

static uint64_t hash_bytes(const char *s, size_t len)
{
    const uint64_t k0 = 0x9e3779b97f4a7c15ull, k1 = 0xc2b2ae3d27d4eb4full;
    uint64_t h = k0 ^ (len * k1);
    size_t i = 0;
    for (; i + 16 <= len; i += 16)
        h = mix(h ^ load64(s + i) ^ k0, load64(s + i + 8) ^ k1) + h;
    if (i + 8 <= len) {
        h = mix(h ^ load64(s + i), k1) + h;
        i += 8;
    }
    uint64_t tail = 0;
    if (len >= 8) {
        /* The last 8 bytes, overlapping what was already mixed: one load
         * instead of a byte loop. */
        if (i < len)
            tail = load64(s + len - 8);
    } else {
        for (size_t j = 0; i + j < len; j++)
            tail |= (uint64_t)(unsigned char)s[i + j] << (8 * j);
    }
    h = mix(h ^ tail, k0 ^ len);
    return mix(h, k1);
}

mt_strtab_t *mt_strtab_create(void)
{
    mt_strtab_t *st = calloc(1, sizeof *st);
    if (!st)
        return NULL;
    st->n_slots = 1024;
    st->slots = mt_big_calloc(st->n_slots, sizeof *st->slots);
    st->cap_ents = 256;
    st->ents = mt_big_malloc(st->cap_ents * sizeof *st->ents);
    st->arena_cap = 16384;
    st->arena = mt_big_malloc(st->arena_cap);
    if (!st->slots || !st->ents || !st->arena) {
        mt_strtab_free(st);
        return NULL;
    }
    /* id 0: the empty string. */
    st->arena[0] = '\0';
    st->arena_len = 1;
    st->ents[0] = (entry_t){.off = 0, .len = 0, .hash = (uint32_t)hash_bytes("", 0)};
    st->n_ents = 1;
    st->slots[st->ents[0].hash & (st->n_slots - 1)] = 1;
    return st;
}

void mt_strtab_free(mt_strtab_t *st)
{
    if (!st)
        return;
    free(st->arena);
    free(st->ents);
    free(st->slots);
    free(st);
}

static int grow_slots(mt_strtab_t *st)
{
    size_t n = st->n_slots * 2;
    uint32_t *s = calloc(n, sizeof *s);
    if (!s)
        return -1;
    for (uint32_t id = 0; id < st->n_ents; id++) {
        size_t i = st->ents[id].hash & (n - 1);
        while (s[i])
            i = (i + 1) & (n - 1);
        s[i] = id + 1;
    }
    free(st->slots);
    st->slots = s;
    st->n_slots = n;
    return 0;
}

int mt_strtab_find(const mt_strtab_t *st, const char *s, size_t len, uint32_t *id)
{
    uint32_t h = (uint32_t)hash_bytes(s, len);
    size_t mask = st->n_slots - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        uint32_t v = st->slots[i];
        if (!v)
            return 0;
        const entry_t *e = &st->ents[v - 1];
        if (e->hash == h && e->len == len && memcmp(st->arena + e->off, s, len) == 0) {
            *id = v - 1;
            return 1;
        }
    }
}

mt_status_t mt_strtab_intern(mt_strtab_t *st, const char *s, size_t len, uint32_t *id)
{
    if (len > UINT32_MAX - 1)
        return MT_ERR_LIMIT;
    uint32_t h = (uint32_t)hash_bytes(s, len);
    size_t mask = st->n_slots - 1;
    size_t i = h & mask;
    for (;; i = (i + 1) & mask) {
        uint32_t v = st->slots[i];
        if (!v)
            break;
        const entry_t *e = &st->ents[v - 1];
        if (e->hash == h && e->len == len && memcmp(st->arena + e->off, s, len) == 0) {
            *id = v - 1;
            return MT_OK;
        }
    }
    if (st->n_ents == UINT32_MAX)
        return MT_ERR_LIMIT;
    /* Make room before touching anything, so failure leaves the table as it was. */
    if (len > SIZE_MAX - 1 - st->arena_len || MT_GROW_BIG(st->arena, st->arena_cap, st->arena_len + len + 1, 4096))
        return MT_ERR_NOMEM;
    if (st->n_ents == st->cap_ents) {
        uint32_t cap = st->cap_ents > UINT32_MAX / 2 ? UINT32_MAX : st->cap_ents * 2;
        entry_t *e = mt_big_realloc(st->ents, (size_t)cap * sizeof *e);
        if (!e)
            return MT_ERR_NOMEM;
        st->ents = e;
        st->cap_ents = cap;
    }
    if ((size_t)(st->n_ents + 1) * 2 > st->n_slots) {
        if (grow_slots(st))
            return MT_ERR_NOMEM;
        mask = st->n_slots - 1;
        for (i = h & mask; st->slots[i]; i = (i + 1) & mask)
            ;
    }
    entry_t *e = &st->ents[st->n_ents];
    e->off = st->arena_len;
    e->len = (uint32_t)len;
    e->hash = h;
    if (len)
        memcpy(st->arena + st->arena_len, s, len);
    st->arena[st->arena_len + len] = '\0';
    st->arena_len += len + 1;
    st->slots[i] = st->n_ents + 1;
    *id = st->n_ents++;
    return MT_OK;
}

const char *mt_strtab_get(const mt_strtab_t *st, uint32_t id, size_t *len)
{
    if (!st || id >= st->n_ents) {
        if (len)
            *len = 0;
        return "";
    }
    if (len)
        *len = st->ents[id].len;
    return st->arena + st->ents[id].off;
}

uint32_t mt_strtab_count(const mt_strtab_t *st)
{
    return st->n_ents;
}

size_t mt_strtab_bytes(const mt_strtab_t *st)
{
    return st->arena_cap + (size_t)st->cap_ents * sizeof(entry_t) + st->n_slots * sizeof(uint32_t);
}
