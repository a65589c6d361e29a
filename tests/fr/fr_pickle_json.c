/* Test tool: each pickle file named on the command line -> its JSON text
 * on stdout, one line per file (check_unpickle.py compares it with Python's
 * pickle), or the one-line error on stderr and exit 2. */
#include <stdio.h>
#include <stdlib.h>

#include "fr/fr_pickle.h"

int main(int argc, char **argv)
{
    int rc = 0;
    for (int i = 1; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        if (!f) {
            fprintf(stderr, "%s: cannot open\n", argv[i]);
            return 1;
        }
        mt_buf_t in = {0}, out = {0};
        char b[65536];
        size_t n;
        while ((n = fread(b, 1, sizeof b, f)) > 0)
            if (mt_buf_append(&in, b, n) != MT_OK)
                return 1;
        fclose(f);
        mt_error_t err;
        mt_error_clear(&err);
        if (mt_fr_pickle_to_json((const uint8_t *)in.data, in.len, argv[i], &out, &err) != MT_OK) {
            char msg[1200];
            fprintf(stderr, "%s\n", mt_error_format(&err, msg, sizeof msg));
            rc = 2;
        } else {
            fwrite(out.data, 1, out.len, stdout);
            fputc('\n', stdout);
        }
        mt_buf_free(&in);
        mt_buf_free(&out);
    }
    return rc;
}
