/* The one hash for keys that must be the same in every process and run. */
#include "base/hash.h"

uint64_t mt_hash64(const void *data, size_t len, uint64_t seed)
{
    /* FNV-1a, 64-bit: simple and the same everywhere (keys travel between
     * processes). */
    const unsigned char *p = data;
    uint64_t h = 0xcbf29ce484222325ull ^ seed;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}
