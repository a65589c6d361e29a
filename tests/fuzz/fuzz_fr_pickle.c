/* libFuzzer target: the Flight Recorder unpickler (src/fr/fr_pickle.c) on
 * arbitrary bytes. Must never crash or read out of bounds; an error must
 * carry a message and leave the output as it was; a success must be JSON
 * that the document reader accepts. */
#include <stdint.h>
#include <stdlib.h>

#include "base/jdoc.h"
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
    return 0;
}
