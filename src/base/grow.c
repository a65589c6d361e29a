/* Doubling growth of arrays: mt_grow (mergetrace/buf.h) and mt_grow_big
 * (base/bigmem.h), one implementation over either reallocator. */
#include "mergetrace/buf.h"

#include <stdint.h>
#include <stdlib.h>

#include "base/bigmem.h"

static mt_status_t grow_with(void *(*re)(void *, size_t), void **arr, size_t *cap, size_t need, size_t size,
                             size_t first)
{
    if (need <= *cap)
        return MT_OK;
    size_t nc = *cap ? *cap : (first ? first : 1);
    while (nc < need) {
        if (nc > SIZE_MAX / 2)
            return MT_ERR_NOMEM;
        nc *= 2;
    }
    if (size && nc > SIZE_MAX / size)
        return MT_ERR_NOMEM;
    void *p = re(*arr, nc * size);
    if (!p)
        return MT_ERR_NOMEM;
    *arr = p;
    *cap = nc;
    return MT_OK;
}

mt_status_t mt_grow(void **arr, size_t *cap, size_t need, size_t size, size_t first)
{
    return grow_with(realloc, arr, cap, need, size, first);
}

mt_status_t mt_grow_big(void **arr, size_t *cap, size_t need, size_t size, size_t first)
{
    return grow_with(mt_big_realloc, arr, cap, need, size, first);
}
