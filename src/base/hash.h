/* A 64-bit hash for group and signature keys: stable across processes and
 * runs (rows are hashed where they are made and compared on process 0). */
#ifndef MT_BASE_HASH_H
#define MT_BASE_HASH_H

#include <stddef.h>
#include <stdint.h>

/* 64-bit FNV-1a of data[0..len), starting from seed. */
uint64_t mt_hash64(const void *data, size_t len, uint64_t seed);

#endif
