/* Option parsing for mergetrace: long options, usage errors as
 * "mergetrace: <option>: <what was expected>". */
#define _POSIX_C_SOURCE 200809L
#include "options.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mergetrace/mergetrace.h"

static const char usage_text[] =
    "Usage: mergetrace [OPTIONS] PATH...\n"
    "       mpirun -n N mergetrace [OPTIONS] PATH...\n"
    "\n"
    "Load the per-rank PyTorch profiler (Kineto) traces of a distributed GPU job,\n"
    "match the NCCL collectives across ranks, align every rank's clock onto a\n"
    "reference rank from the collectives' end times, and write one merged,\n"
    "clock-corrected trace for Perfetto plus report.json. PATH is a trace file\n"
    "(plain JSON or gzip, recognised by content) or a directory, of which every\n"
    "*.json and *.json.gz file is read (other JSON there is skipped and listed).\n"
    "Under mpirun the files are shared among the processes by size.\n"
    "\n"
    "Input:\n"
    "  -r, --recursive      descend into sub-directories of directory arguments\n"
    "      --rank-map FILE  ranks of files that name none: lines \"path rank\"\n"
    "      --strict         a truncated trace is an error (default: use what loaded\n"
    "                       and warn)\n"
    "\n"
    "Alignment:\n"
    "      --ref-rank R     align onto rank R's clock (default: the lowest rank)\n"
    "      --no-align       keep every rank's raw timestamps\n"
    "      --no-drift       fit clock offsets only, no drift\n"
    "\n"
    "Output:\n"
    "  -o, --output DIR     where report.json and the merged trace go\n"
    "                       (default: mergetrace-out)\n"
    "      --merged-format FORMAT\n"
    "                       gzip (merged.json.gz, default) or json (merged.json)\n"
    "      --no-merge       do not write the merged trace\n"
    "      --ranks LIST     only these ranks in the merged trace, e.g. 0-3,8\n"
    "      --window A:B     only events between A and B seconds from the start of\n"
    "                       the job, or #A:#B for ProfilerStep#A to #B\n"
    "      --gpu-only       only GPU tracks in the merged trace\n"
    "      --json           print report.json on stdout instead of the summary\n"
    "\n"
    "Analysis:\n"
    "      --kernel-wait-us N  idle gaps on a stream shorter than N us count as\n"
    "                       kernel wait (default 30)\n"
    "      --project-ops    also project cpu_op ranges onto the GPU, not only\n"
    "                       user annotations (record_function ranges)\n"
    "      --top-kernels N  kernels listed per class (compute, comm, memory;\n"
    "                       default 10)\n"
    "  -q, --quiet          print nothing but errors\n"
    "      --progress       show progress on stderr even when it is not a terminal\n"
    "      --no-progress    never show progress\n"
    "      --color WHEN     colour in the terminal report: auto, always, never\n"
    "  -h, --help           show this help and exit\n"
    "      --version        show the version and exit\n"
    "\n"
    "Exit codes: 0 success; 1 I/O or internal error; 2 invalid input (not JSON,\n"
    "not a trace, unknown rank, duplicate ranks, truncated with --strict);\n"
    "64 usage error.\n";

static int usage_error(bool print, const char *opt, const char *what)
{
    if (print)
        fprintf(stderr, "mergetrace: %s: %s\nTry 'mergetrace --help'.\n", opt, what);
    return MT_EXIT_USAGE;
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

int parse_rank_list(const char *s, int32_t **out, size_t *n, char *msg, size_t cap)
{
    *out = NULL;
    *n = 0;
    size_t cap_l = 0;
    const char *p = s;
    if (!*p) {
        snprintf(msg, cap, "expected ranks like 0-3,8");
        return -1;
    }
    while (*p) {
        char *e;
        errno = 0;
        long a = strtol(p, &e, 10), b;
        if (e == p || a < 0 || a > INT32_MAX || errno) {
            snprintf(msg, cap, "expected ranks like 0-3,8 at \"%s\"", p);
            free(*out);
            *out = NULL;
            return -1;
        }
        p = e;
        b = a;
        if (*p == '-') {
            p++;
            b = strtol(p, &e, 10);
            if (e == p || b < a || b > INT32_MAX || errno || b - a > (1 << 24)) {
                snprintf(msg, cap, "expected a range A-B with A <= B at \"%s\"", p);
                free(*out);
                *out = NULL;
                return -1;
            }
            p = e;
        }
        if (*n + (size_t)(b - a) >= (size_t)1 << 20) {
            /* a bound on memory and time, far above any job's rank count */
            snprintf(msg, cap, "more than 1048576 ranks listed");
            free(*out);
            *out = NULL;
            return -1;
        }
        for (long r = a; r <= b; r++) {
            if (*n == cap_l) {
                cap_l = cap_l ? cap_l * 2 : 16;
                int32_t *g = realloc(*out, cap_l * sizeof *g);
                if (!g) {
                    free(*out);
                    *out = NULL;
                    snprintf(msg, cap, "out of memory");
                    return -1;
                }
                *out = g;
            }
            (*out)[(*n)++] = (int32_t)r;
        }
        if (*p == ',')
            p++;
        else if (*p) {
            snprintf(msg, cap, "expected ',' or '-' at \"%s\"", p);
            free(*out);
            *out = NULL;
            return -1;
        }
    }
    /* sort + unique: a range can list millions */
    qsort(*out, *n, sizeof **out, cmp_i32);
    size_t w = 0;
    for (size_t i = 0; i < *n; i++)
        if (!w || (*out)[w - 1] != (*out)[i])
            (*out)[w++] = (*out)[i];
    *n = w;
    return 0;
}

int parse_window(const char *s, bool *steps, double *a, double *b, char *msg, size_t cap)
{
    const char *colon = strchr(s, ':');
    if (!colon) {
        snprintf(msg, cap, "expected START:END (seconds) or #A:#B (ProfilerStep numbers)");
        return -1;
    }
    *steps = s[0] == '#';
    char *e;
    const char *p = s + *steps;
    errno = 0;
    *a = strtod(p, &e);
    if (e == p || e != colon || errno || !isfinite(*a)) {
        snprintf(msg, cap, "expected a number before ':'");
        return -1;
    }
    p = colon + 1;
    if (*steps) {
        if (*p != '#') {
            snprintf(msg, cap, "expected #A:#B (ProfilerStep numbers)");
            return -1;
        }
        p++;
    }
    *b = strtod(p, &e);
    if (e == p || *e || errno || !isfinite(*b)) {
        snprintf(msg, cap, "expected a number after ':'");
        return -1;
    }
    if (*b < *a || *a < 0) {
        snprintf(msg, cap, "expected 0 <= START <= END");
        return -1;
    }
    if (*steps && (*a != floor(*a) || *b != floor(*b))) {
        snprintf(msg, cap, "ProfilerStep numbers are integers");
        return -1;
    }
    return 0;
}

void options_free(options_t *o)
{
    free(o->inputs);
    free(o->merge_ranks);
    free(o->command_line);
    memset(o, 0, sizeof *o);
}

int options_parse(int argc, char **argv, options_t *o, bool print)
{
    memset(o, 0, sizeof *o);
    o->color = -1;
    o->ref_rank = -1;
    o->merged_gzip = true;
    o->out_dir = "mergetrace-out";
    o->kernel_wait_ns = 30000;
    o->top_kernels = 10;
    {
        size_t len = 1;
        for (int i = 0; i < argc; i++)
            len += strlen(argv[i]) + 1;
        o->command_line = malloc(len);
        if (!o->command_line) {
            if (print)
                fputs("mergetrace: out of memory\n", stderr);
            return MT_EXIT_ERROR;
        }
        o->command_line[0] = '\0';
        for (int i = 0; i < argc; i++) {
            if (i)
                strcat(o->command_line, " ");
            strcat(o->command_line, argv[i]);
        }
    }
    o->progress = isatty(2);
    o->inputs = calloc((size_t)argc + 1, sizeof *o->inputs);
    if (!o->inputs) {
        if (print)
            fputs("mergetrace: out of memory\n", stderr);
        return MT_EXIT_ERROR;
    }
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
        } else if (!strcmp(name, "-o") || !strcmp(name, "--output")) {
            TAKES_VALUE();
            if (!*val)
                return usage_error(print, name, "expected a directory");
            o->out_dir = val;
        } else if (!strcmp(name, "--ref-rank")) {
            TAKES_VALUE();
            char *e;
            errno = 0;
            long r = strtol(val, &e, 10);
            if (e == val || *e || errno || r < 0 || r > INT32_MAX)
                return usage_error(print, name, "expected a rank (an integer >= 0)");
            o->ref_rank = (int)r;
        } else if (!strcmp(name, "--kernel-wait-us")) {
            TAKES_VALUE();
            char *e;
            errno = 0;
            double v = strtod(val, &e);
            if (e == val || *e || errno || !(v >= 0) || v > 1e9)
                return usage_error(print, name, "expected microseconds (a number >= 0)");
            o->kernel_wait_ns = (int64_t)llround(v * 1000);
        } else if (!strcmp(name, "--project-ops")) {
            NO_VALUE();
            o->project_ops = true;
        } else if (!strcmp(name, "--top-kernels")) {
            TAKES_VALUE();
            char *e;
            errno = 0;
            long v = strtol(val, &e, 10);
            if (e == val || *e || errno || v < 0 || v > 100000)
                return usage_error(print, name, "expected a count (0 to 100000)");
            o->top_kernels = (int)v;
        } else if (!strcmp(name, "--no-align")) {
            NO_VALUE();
            o->no_align = true;
        } else if (!strcmp(name, "--no-drift")) {
            NO_VALUE();
            o->no_drift = true;
        } else if (!strcmp(name, "--no-merge")) {
            NO_VALUE();
            o->no_merge = true;
        } else if (!strcmp(name, "--gpu-only")) {
            NO_VALUE();
            o->gpu_only = true;
        } else if (!strcmp(name, "--merged-format")) {
            TAKES_VALUE();
            if (!strcmp(val, "gzip"))
                o->merged_gzip = true;
            else if (!strcmp(val, "json"))
                o->merged_gzip = false;
            else
                return usage_error(print, name, "expected gzip or json");
        } else if (!strcmp(name, "--ranks")) {
            TAKES_VALUE();
            char msg[256];
            free(o->merge_ranks);
            if (parse_rank_list(val, &o->merge_ranks, &o->n_merge_ranks, msg, sizeof msg))
                return usage_error(print, name, msg);
        } else if (!strcmp(name, "--window")) {
            TAKES_VALUE();
            char msg[256];
            if (parse_window(val, &o->window_steps, &o->window_a, &o->window_b, msg, sizeof msg))
                return usage_error(print, name, msg);
            o->has_window = true;
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
