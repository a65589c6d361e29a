/* libFuzzer target: the command line (mpi/options.c, with every value
 * parser: --window, --ranks, --ref-rank, numbers with overflow checks) on
 * arbitrary bytes split at NUL into arguments. Must never crash or read out
 * of bounds; any exit code is fine. Nothing is printed (print = false). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096)
        return 0;
    /* One copy with a NUL after it; argv points into it. */
    char *buf = malloc(size + 1);
    char **argv = malloc((size + 2) * sizeof *argv);
    if (!buf || !argv) {
        free(buf);
        free(argv);
        return 0;
    }
    memcpy(buf, data, size);
    buf[size] = '\0';
    int argc = 0;
    argv[argc++] = "mergetrace";
    for (size_t i = 0; i < size;) {
        argv[argc++] = buf + i;
        i += strlen(buf + i) + 1;
    }
    argv[argc] = NULL;
    options_t o;
    memset(&o, 0, sizeof o);
    (void)options_parse(argc, argv, &o, false);
    options_free(&o);
    free(argv);
    free(buf);
    return 0;
}
