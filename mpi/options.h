/* Command-line options of the mergetrace program. */
#ifndef MT_MPI_OPTIONS_H
#define MT_MPI_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>

/* Exit codes (documented in README.md). */
enum {
    MT_EXIT_OK = 0,
    MT_EXIT_ERROR = 1,     /* I/O error, out of memory, internal error */
    MT_EXIT_BAD_INPUT = 2, /* a trace is not valid JSON / not a trace / no rank / truncated with --strict */
    MT_EXIT_GATE = 3,      /* reserved: a --gate check failed */
    MT_EXIT_USAGE = 64,    /* bad command line */
};

typedef struct options {
    char **inputs;          /* files and directories, borrowed from argv */
    size_t n_inputs;
    bool recursive;
    bool strict;
    bool quiet;
    bool json;
    bool progress;          /* progress on stderr (default: when stderr is a terminal) */
    const char *rank_map;
    const char *out_dir;
    int color;              /* -1 auto, 0 never, 1 always */
} options_t;

/* Parse argv. Returns -1 to continue, or an exit code to stop with (after
 * printing --help / --version to stdout or a usage error to stderr). Only
 * the process that prints (print == true) writes anything. */
int options_parse(int argc, char **argv, options_t *o, bool print);

#endif
