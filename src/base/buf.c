/* The growable byte buffer of mergetrace/buf.h. */
#include "mergetrace/buf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

mt_status_t mt_buf_reserve(mt_buf_t *b, size_t len)
{
    if (len > SIZE_MAX - b->len)
        return MT_ERR_NOMEM;
    return mt_grow((void **)&b->data, &b->cap, b->len + len, 1, 256);
}

void mt_buf_free(mt_buf_t *b)
{
    if (!b)
        return;
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

mt_status_t mt_buf_write(void *ctx, const void *data, size_t len)
{
    return mt_buf_append(ctx, data, len);
}

mt_status_t mt_file_write(void *ctx, const void *data, size_t len)
{
    return fwrite(data, 1, len, (FILE *)ctx) == len ? MT_OK : MT_ERR_IO;
}

