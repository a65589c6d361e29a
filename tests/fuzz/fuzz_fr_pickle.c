/* libFuzzer target: the Flight Recorder unpickler (src/fr/fr_pickle.c) on
 * arbitrary bytes. Must never crash or read out of bounds; an error must
 * carry a message and leave the output as it was; a success must be JSON
 * that the document reader accepts. The same bytes then go through the
 * dump reader (either encoding), with and without its fast path over the
 * entries (the same status, message and entries), and, read as ranks 0
 * and 1, the hang analysis (src/fr/fr_dump.c, fr_hang.c). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/jdoc.h"
#include "fr/fr.h"
#include "fr/fr_pickle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mt_buf_t out = {0};
    mt_error_t err;
    mt_error_clear(&err);
    mt_status_t st = mt_fr_pickle_to_json(data, size, "f.pkl", &out, &err);
    if (st != MT_OK) {
        if (out.len || !err.msg[0])
            abort();
    } else {
        mt_jdoc_t *d = NULL;
        mt_error_clear(&err);
        /* strings are bytes as pickled: invalid UTF-8 is the reader's error, not a crash */
        if (mt_jdoc_parse(out.data, out.len, 80, "f.json", &d, &err) != MT_OK && err.code != MT_ERR_SYNTAX)
            abort();
        mt_jdoc_free(d);
    }
    mt_buf_free(&out);
    mt_fr_dump_t dd[2], slow;
    mt_error_t e2;
    mt_error_clear(&err);
    mt_error_clear(&e2);
    mt_status_t st0 = mt_fr_dump_read(data, size, "f", 0, &dd[0], &err);
    mt_status_t st1 = mt_fr_dump_read_with(data, size, "f", 0, false, &slow, &e2);
    if (st0 != st1 || strcmp(err.msg, e2.msg) || err.offset != e2.offset)
        abort(); /* the fast path read something the cursor reads otherwise */
    if (st1 == MT_OK) {
        if (slow.n != dd[0].n || (slow.n && memcmp(slow.entries, dd[0].entries, slow.n * sizeof *slow.entries)) ||
            !mt_fr_strs_equal(&slow, &dd[0]))
            abort();
        mt_fr_dump_free(&slow);
    }
    if (st0 != MT_OK) {
        if (!err.msg[0])
            abort();
        return 0;
    }
    mt_error_clear(&err);
    if (mt_fr_dump_read(data, size, "f", 1, &dd[1], &err) != MT_OK)
        abort(); /* the same bytes read once already */
    mt_fr_hang_t h;
    if (mt_fr_hang_analyse(dd, 2, &h, &err) == MT_OK)
        mt_fr_hang_free(&h);
    mt_fr_dump_free(&dd[0]);
    mt_fr_dump_free(&dd[1]);
    return 0;
}
