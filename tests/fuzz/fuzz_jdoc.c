/* libFuzzer target: the JSON document reader (src/base/jdoc.c), its cursor
 * (which must accept exactly what the reader accepts, with the same error
 * message) and the comparison of a report with itself (src/report/compare.c)
 * on arbitrary bytes. Must never crash or read out of bounds; any status
 * is fine, and an error must carry a message. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/jdoc.h"
#include "mergetrace/mergetrace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Every value of the text through the cursor: containers entered, scalars
 * read by one of its readers (chosen by the offset). */
static mt_status_t cur_walk(const uint8_t *data, size_t size, mt_error_t *err)
{
    mt_jcur_t *c = NULL;
    mt_status_t st = mt_jcur_new((const char *)data, size, 64, "f.json", err, &c);
    int depth = 0;
    bool value = true;
    while (st == MT_OK) {
        if (value) {
            mt_jtype_t t;
            if ((st = mt_jcur_peek(c, &t)) != MT_OK)
                break;
            if (t == MT_J_OBJ || t == MT_J_ARR) {
                if ((st = mt_jcur_enter(c, t)) == MT_OK)
                    depth++;
            } else {
                int64_t v;
                uint64_t u;
                bool ok;
                const char *s;
                size_t n;
                switch (mt_jcur_offset(c) % 4) {
                case 0: st = mt_jcur_i64(c, &v, &ok); break;
                case 1: st = mt_jcur_u64(c, &u, &ok); break;
                case 2: st = mt_jcur_str(c, &s, &n); break;
                default: st = mt_jcur_skip(c); break;
                }
            }
            value = false;
            continue;
        }
        if (!depth) {
            st = mt_jcur_finish(c);
            break;
        }
        bool more;
        const char *k;
        size_t kn;
        if ((st = mt_jcur_next(c, &more, &k, &kn)) != MT_OK)
            break;
        if (more)
            value = true;
        else
            depth--;
    }
    mt_jcur_free(c);
    return st;
}

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
    mt_error_t cerr;
    mt_error_clear(&cerr);
    mt_status_t cst = cur_walk(data, size, &cerr);
    if (cst != st || (st != MT_OK && st != MT_ERR_NOMEM && strcmp(err.msg, cerr.msg)))
        abort();
    mt_compare_t *c = NULL;
    mt_error_clear(&err);
    st = mt_compare_reports((const char *)data, size, "a", (const char *)data, size, "b", NULL, &c, &err);
    if (st != MT_OK && (c || !err.msg[0]))
        abort();
    mt_compare_free(c);
    return 0;
}
