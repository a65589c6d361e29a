/* Option parsing for mergetrace: long options, usage errors as
 * "mergetrace: <option>: <what was expected>". */
#define _POSIX_C_SOURCE 200809L
#include "options.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mergetrace/mergetrace.h"

static const char usage_text[] =
    "Usage: mergetrace [OPTIONS] PATH...\n"
    "       mpirun -n N mergetrace [OPTIONS] PATH...\n"
    "\n"
    "Load the per-rank PyTorch profiler (Kineto) traces of a distributed GPU job\n"
    "and report what each rank holds. PATH is a trace file (plain JSON or gzip,\n"
    "recognised by content) or a directory, of which every *.json and *.json.gz\n"
    "file is read. Under mpirun the files are shared among the processes by size.\n"
    "\n"
    "Options:\n"
    "  -r, --recursive      descend into sub-directories of directory arguments\n"
    "      --rank-map FILE  ranks of files that name none: lines \"path rank\"\n"
    "      --strict         a truncated trace is an error (default: use what loaded\n"
    "                       and warn)\n"
    "      --json           print the summary as JSON on stdout\n"
    "  -q, --quiet          print nothing but errors\n"
    "      --progress       show progress on stderr even when it is not a terminal\n"
    "      --no-progress    never show progress\n"
    "      --color WHEN     colour in the terminal report: auto, always, never\n"
    "  -h, --help           show this help and exit\n"
    "      --version        show the version and exit\n"
    "\n"
    "Exit codes: 0 success; 1 I/O or internal error; 2 invalid input (not JSON,\n"
    "not a trace, unknown rank, truncated with --strict); 64 usage error.\n";

static int usage_error(bool print, const char *opt, const char *what)
{
    if (print)
        fprintf(stderr, "mergetrace: %s: %s\nTry 'mergetrace --help'.\n", opt, what);
    return MT_EXIT_USAGE;
}

int options_parse(int argc, char **argv, options_t *o, bool print)
{
    memset(o, 0, sizeof *o);
    o->color = -1;
    o->progress = isatty(2);
    o->inputs = calloc((size_t)argc + 1, sizeof *o->inputs);
    if (!o->inputs)
        return MT_EXIT_ERROR;
    bool end_of_opts = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (end_of_opts || a[0] != '-' || !a[1]) {
            o->inputs[o->n_inputs++] = argv[i];
            continue;
        }
        /* "--opt=value" or "--opt value" */
        const char *val = NULL;
        char name[64];
        const char *eq = strchr(a, '=');
        if (a[1] == '-' && eq) {
            size_t l = (size_t)(eq - a);
            if (l >= sizeof name)
                return usage_error(print, a, "unknown option");
            memcpy(name, a, l);
            name[l] = '\0';
            val = eq + 1;
        } else {
            snprintf(name, sizeof name, "%s", a);
        }
#define TAKES_VALUE()                                                         \
    do {                                                                      \
        if (!val) {                                                           \
            if (i + 1 >= argc)                                                \
                return usage_error(print, name, "expected a value");          \
            val = argv[++i];                                                  \
        }                                                                     \
    } while (0)
#define NO_VALUE()                                                            \
    do {                                                                      \
        if (val)                                                              \
            return usage_error(print, name, "takes no value");                \
    } while (0)
        if (!strcmp(name, "--")) {
            end_of_opts = true;
        } else if (!strcmp(name, "-h") || !strcmp(name, "--help")) {
            NO_VALUE();
            if (print) {
                fputs(usage_text, stdout);
                if (fflush(stdout) || ferror(stdout))
                    return MT_EXIT_ERROR;
            }
            return MT_EXIT_OK;
        } else if (!strcmp(name, "--version")) {
            NO_VALUE();
            if (print) {
                printf("mergetrace %s\n", MERGETRACE_VERSION);
                if (fflush(stdout) || ferror(stdout))
                    return MT_EXIT_ERROR;
            }
            return MT_EXIT_OK;
        } else if (!strcmp(name, "-r") || !strcmp(name, "--recursive")) {
            NO_VALUE();
            o->recursive = true;
        } else if (!strcmp(name, "--strict")) {
            NO_VALUE();
            o->strict = true;
        } else if (!strcmp(name, "-q") || !strcmp(name, "--quiet")) {
            NO_VALUE();
            o->quiet = true;
        } else if (!strcmp(name, "--json")) {
            NO_VALUE();
            o->json = true;
        } else if (!strcmp(name, "--progress")) {
            NO_VALUE();
            o->progress = true;
        } else if (!strcmp(name, "--no-progress")) {
            NO_VALUE();
            o->progress = false;
        } else if (!strcmp(name, "--rank-map")) {
            TAKES_VALUE();
            if (!*val)
                return usage_error(print, name, "expected a file name");
            o->rank_map = val;
        } else if (!strcmp(name, "--color") || !strcmp(name, "--colour")) {
            TAKES_VALUE();
            if (!strcmp(val, "auto"))
                o->color = -1;
            else if (!strcmp(val, "always"))
                o->color = 1;
            else if (!strcmp(val, "never"))
                o->color = 0;
            else
                return usage_error(print, name, "expected auto, always or never");
        } else {
            return usage_error(print, name, "unknown option");
        }
#undef TAKES_VALUE
#undef NO_VALUE
    }
    if (!o->n_inputs)
        return usage_error(print, "PATH", "expected at least one trace file or directory");
    if (o->quiet)
        o->progress = false;
    return -1;
}
