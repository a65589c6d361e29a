/* libFuzzer target: the --rank-map file parser (src/rank.c) on arbitrary
 * bytes, then lookups by full and base name. Must never crash or read out
 * of bounds; any status is fine, and an error must carry a message. */
#include <stdint.h>
#include <stdlib.h>

#include "mergetrace/mergetrace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mt_rankmap_t *m = NULL;
    mt_error_t err;
    mt_status_t st = mt_rankmap_parse((const char *)data, size, "map.txt", &m, &err);
    if (st != MT_OK) {
        if (m || !err.msg[0])
            abort();
        return 0;
    }
    const char *paths[] = {"traces/rank-3.json", "a", "/x/y/worker0.json.gz", "map.txt"};
    for (int i = 0; i < 4; i++)
        if (mt_rankmap_lookup(m, paths[i]) < -1)
            abort(); /* a rank is -1 (absent) or >= 0 */
    mt_rankmap_free(m);
    return 0;
}
