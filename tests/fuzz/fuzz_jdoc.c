/* libFuzzer target: the JSON document reader (src/base/jdoc.c) and the
 * comparison of a report with itself (src/report/compare.c) on arbitrary
 * bytes. Must never crash or read out of bounds; any status is fine, and an
 * error must carry a message. */
#include <stdint.h>
#include <stdlib.h>

#include "base/jdoc.h"
#include "mergetrace/mergetrace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mt_jdoc_t *d = NULL;
    mt_error_t err;
    mt_error_clear(&err);
    mt_status_t st = mt_jdoc_parse((const char *)data, size, 64, "f.json", &d, &err);
    if (st != MT_OK) {
        if (d || !err.msg[0])
            abort();
    } else {
        /* walk every node */
        for (uint32_t c = mt_jdoc_first(d, 0); c; c = mt_jdoc_next(d, c))
            (void)mt_jdoc_key(d, c);
        mt_jdoc_free(d);
    }
    mt_compare_t *c = NULL;
    mt_error_clear(&err);
    st = mt_compare_reports((const char *)data, size, "a", (const char *)data, size, "b", NULL, &c, &err);
    if (st != MT_OK && (c || !err.msg[0]))
        abort();
    mt_compare_free(c);
    return 0;
}
