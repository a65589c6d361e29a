/* Option parsing for mergetrace: long options, usage errors as
 * "mergetrace: <option>: <what was expected>"; the exit codes. */
#define _POSIX_C_SOURCE 200809L
#include "options.h"
#include "say.h"

#include <ctype.h>
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
    "*.json and *.json.gz file is read (other JSON there is skipped and listed),\n"
    "and every *.jsonl / *.jsonl.gz written by libnccl-profiler-mergetrace.so (NCCL's\n"
    "own record of a process's collectives; alone or beside the Kineto traces) and\n"
    "every NCCL Inspector log *.log / *.log.gz (recognised by content), and every\n"
    "Nsight Systems SQLite export *.sqlite. The\n"
    "*.json files of NCCL's example profiler plugin (<dump>_<commHash>_<rank>.json)\n"
    "are recognised by content too; of those, only the communicator with the most\n"
    "files is used. mergetrace's own merged trace named as the only PATH (without\n"
    "--local) is read back by rank (no clock fit, no merged trace written): a job\n"
    "re-analysed without its per-rank traces; named beside other traces, its ranks\n"
    "are aligned and merged with theirs. PyTorch Flight Recorder dumps (pickle or\n"
    "JSON, any name, e.g. comm_lib_trace_rank_3; recognised by content), alone or\n"
    "beside traces, are analysed for a hang: who hung where, and who is to blame;\n"
    "beside traces, each rank's entries join the merged trace on the traces' clock.\n"
    "Under mpirun the files are shared among the processes by size; without a\n"
    "launcher among worker threads that play the processes' part (-j).\n"
    "\n"
    "Input:\n"
    "  -r, --recursive      descend into sub-directories of directory arguments\n"
    "                       (each directory once: links to one read already are\n"
    "                       not followed, and listed)\n"
    "      --rank-map FILE  ranks of files that name none: lines \"path rank\"\n"
    "      --strict         a truncated trace is an error (default: use what loaded\n"
    "                       and warn)\n"
    "      --force          merge traces that look like different runs (world\n"
    "                       sizes, clock fit, collectives disagree; default: exit 2)\n"
    "      --timeline-map FILE  read the one PATH as an operation-level timeline of\n"
    "                       every rank with this mapping of its threads, names and\n"
    "                       args (a JSON array with args.step is recognised without)\n"
    "      --local          each process reads only the PATHs on its own command\n"
    "                       line, e.g. traces on node-local disks (mpirun -n 1\n"
    "                       mergetrace --local /local/a : -n 1 mergetrace --local\n"
    "                       /local/b); the job is all processes' files, and the\n"
    "                       outputs go to -o on process 0's file system; the\n"
    "                       processes of one host may share one directory\n"
    "                       (each file is loaded once, by one of them)\n"
    "\n"
    "Alignment:\n"
    "      --ref-rank R     align onto rank R's clock (default: the lowest rank)\n"
    "      --no-align       keep every rank's raw timestamps\n"
    "      --no-drift       fit clock offsets only, no drift\n"
    "\n"
    "Output:\n"
    "  -o, --output DIR     where report.json, report.html and the merged trace go\n"
    "                       (default: mergetrace-out; created with its parents).\n"
    "                       Those of an earlier run that this run does not write\n"
    "                       are removed; mergetrace's own outputs among the\n"
    "                       inputs are skipped\n"
    "      --no-html        do not write report.html (the report as a web page)\n"
    "      --merged-format FORMAT\n"
    "                       gzip (merged.json.gz, default) or json (merged.json)\n"
    "      --no-merge       do not write the merged trace (then --ranks, --window and\n"
    "                       --gpu-only are usage errors: they select what goes into it)\n"
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
    "      --memory-budget SIZE  memory process 0 may use for the cross-rank\n"
    "                       steps (SIZE: bytes, or with K, M, G or T, powers of\n"
    "                       1024; none: no limit). When its projected need with\n"
    "                       the critical path is above it, the steps section\n"
    "                       (critical path, what-ifs) is left out, said in\n"
    "                       the terminal's first line and among the warnings\n"
    "                       (and --gate on step metrics fails: not\n"
    "                       measured). Default: 90% of the memory available to\n"
    "                       process 0 after the load (its machine's, or less\n"
    "                       where its memory cgroup's limit leaves less)\n"
    "\n"
    "Pipeline (a pipeline section appears when stages are given or the\n"
    "point-to-point traffic shows them):\n"
    "      --pp-stages LIST stages in pipeline order, e.g. 0-3,4-7 (',' between\n"
    "                       stages; '+' joins ranks of one stage: 0+2,1+3)\n"
    "      --pp N           N stages of contiguous rank blocks\n"
    "      --chunk REGEX    the CPU range that delimits one chunk of work on each\n"
    "                       stage (default: ProfilerStep#N)\n"
    "      --stage NAME=REGEX[@RANKS]\n"
    "                       a stage made of annotation ranges instead of ranks\n"
    "                       (repeatable, in pipeline order), e.g. A=encode@0\n"
    "      --warmup W       chunks (and steps) left out of the summary (default 1)\n"
    "      --what-if kernel:GLOB=F\n"
    "                       project the step time with the kernels whose name\n"
    "                       matches GLOB lasting F times as long (0 < F <= 100;\n"
    "                       a collective's transfer, not its wait)\n"
    "      --gate EXPR      fail with exit code 3 unless EXPR holds (repeatable);\n"
    "                       EXPR is METRIC OP X, OP one of <= >= < > ==:\n"
    "                         pipeline_overlap_score  OverlapScore, 0..1 (old name:\n"
    "                                                 overlap)\n"
    "                         period_p99_us           pipeline period p99, us\n"
    "                         straggler_wait_pct      most collective time a rank\n"
    "                                                 spent waiting, 0..100\n"
    "                         idle_pct                most GPU idle time of a rank,\n"
    "                                                 % of its span, 0..100\n"
    "                         alignment_p99_us        worst clock residual p99, us\n"
    "                         step_p50_us, step_p99_us  step time p50 / p99, us\n"
    "                         period_p50_us           pipeline period p50, us\n"
    "                       X is a number, or relative to the baseline run:\n"
    "                       1.05*baseline, baseline-0.05\n"
    "      --baseline DIR   compare with an earlier run: DIR is its output directory\n"
    "                       (or its report.json), or its directory of traces or\n"
    "                       one trace file (Kineto, Nsight Systems .sqlite),\n"
    "                       then analysed first in this run, with this run's\n"
    "                       Input, Alignment, Analysis and Pipeline options but\n"
    "                       --gate (not with --local or --timeline-map), into\n"
    "                       baseline/report.json of -o. Writes compare.json\n"
    "                       beside report.json and a comparison section\n"
    "                       (docs/compare.md)\n"
    "      --strict-gates   a relative gate fails even when its metric changed\n"
    "                       within noise\n"
    "      --too-few-passes a relative gate that fails while its metric has too\n"
    "                       few samples to tell (2 ranks against 2) passes\n"
    "\n"
    "  -j, --jobs N         without an MPI launcher: N worker threads, each loading\n"
    "                       one trace at a time as an MPI process does (default 0:\n"
    "                       one per CPU this process may use, at most one per\n"
    "                       trace file; 1: one thread). Each needs about half the\n"
    "                       largest trace's JSON in memory, so -j N about N x 0.5x\n"
    "                       the largest trace: fewer are started when the\n"
    "                       machine's available memory (MemAvailable) is short.\n"
    "                       The critical path after the loading holds its graph\n"
    "                       of every rank whatever N (about 1.5x the largest\n"
    "                       trace for 8 ranks of 157 MB; docs/PERFORMANCE.md).\n"
    "                       The outputs are the same whatever N. Without -j,\n"
    "                       MERGETRACE_JOBS=N in the environment sets it. Ignored\n"
    "                       under mpirun (its processes are the workers)\n"
    "  -q, --quiet          print nothing but errors\n"
    "      --progress       show progress on stderr even when it is not a terminal\n"
    "      --no-progress    never show progress\n"
    "      --timings        print wall time per phase and the peak memory of the\n"
    "                       largest process on stderr, and write them to\n"
    "                       DIR/timings.json (never into report.json)\n"
    "      --color WHEN     colour in the terminal report: auto, always, never\n"
    "  -h, --help           show this help and exit\n"
    "      --version        show the version and exit\n"
    "\n"
    "Exit codes: 0 success; 1 I/O or internal error, or a --ranks / --window that\n"
    "selects nothing; 2 invalid input (not JSON, not a trace, unknown rank,\n"
    "duplicate ranks, truncated with --strict, traces of different runs without\n"
    "--force, a Flight Recorder dump that cannot be read); 3 a --gate failed;\n"
    "4 Flight Recorder dumps show a hang; 64 usage error.\n";

static int usage_error(bool print, const char *opt, const char *what)
{
    if (print)
        say("mergetrace: %s: %s\n", opt, what);
    return MT_EXIT_USAGE;
}

/* An allocation failed while reading the command line: one line, exit 1. */
static int out_of_memory(bool print)
{
    if (print)
        say("mergetrace: out of memory\n");
    return MT_EXIT_ERROR;
}

/* The unknown long option name as "unknown option (did you mean --x?)" in
 * msg when one documented option is within 2 edits of it (a typo:
 * --basline), else plain "unknown option". The options are read from
 * usage_text, which lists every one the parser takes: one list to keep. */
static const char *unknown_option(const char *name, char *msg, size_t cap)
{
    size_t bl = 0;
    const char *bs = mt_suggest_option(name, usage_text, &bl);
    if (bs)
        snprintf(msg, cap, "unknown option (did you mean %.*s?)", (int)bl, bs);
    else
        snprintf(msg, cap, "unknown option");
    return msg;
}

int parse_rank_list(const char *s, int32_t **out, size_t *n, char *msg, size_t cap)
{
    mt_error_t err;
    mt_error_clear(&err);
    mt_status_t st = mt_pp_ranks_parse(s, out, n, &err);
    if (st != MT_OK)
        snprintf(msg, cap, "%s", st == MT_ERR_NOMEM ? "out of memory" : err.msg);
    return st == MT_OK ? 0 : -1;
}

/* --stage NAME=REGEX[@RANKS]: returns -1 when added, else an exit code. */
static int add_stage(options_t *o, const char *val, bool print, const char *opt)
{
    const char *eq = strchr(val, '=');
    if (!eq || eq == val || (size_t)(eq - val) > 31)
        return usage_error(print, opt, "expected NAME=REGEX[@RANKS] with a NAME of 1 to 31 characters");
    const char *re = eq + 1, *at = strrchr(re, '@');
    int32_t *ranks = NULL;
    size_t n_ranks = 0;
    size_t re_len = strlen(re);
    if (at) {
        mt_error_t err;
        mt_error_clear(&err);
        mt_status_t rc = mt_pp_ranks_parse(at + 1, &ranks, &n_ranks, &err);
        if (rc == MT_ERR_NOMEM)
            return out_of_memory(print);
        if (rc != MT_OK)
            return usage_error(print, opt, err.msg);
        re_len = (size_t)(at - re);
    }
    if (!re_len) {
        free(ranks);
        return usage_error(print, opt, "expected a regular expression after NAME=");
    }
    size_t n = o->n_stage + 1;
    char **nm = realloc(o->stage_name, n * sizeof *nm);
    if (nm)
        o->stage_name = nm;
    char **rx = realloc(o->stage_regex, n * sizeof *rx);
    if (rx)
        o->stage_regex = rx;
    int32_t **rk = realloc(o->stage_ranks, n * sizeof *rk);
    if (rk)
        o->stage_ranks = rk;
    size_t *nr = realloc(o->stage_n_ranks, n * sizeof *nr);
    if (nr)
        o->stage_n_ranks = nr;
    char *name = strndup(val, (size_t)(eq - val)), *regex = strndup(re, re_len);
    if (!nm || !rx || !rk || !nr || !name || !regex) {
        free(name);
        free(regex);
        free(ranks);
        return out_of_memory(print);
    }
    o->stage_name[o->n_stage] = name;
    o->stage_regex[o->n_stage] = regex;
    o->stage_ranks[o->n_stage] = ranks;
    o->stage_n_ranks[o->n_stage] = n_ranks;
    o->n_stage = n;
    return -1;
}

int options_exit_code(mt_status_t st)
{
    switch (st) {
    case MT_OK: return MT_EXIT_OK;
    case MT_ERR_SYNTAX:
    case MT_ERR_FORMAT:
    case MT_ERR_RANGE:
    case MT_ERR_TRUNCATED:
    case MT_ERR_GZIP:
    case MT_ERR_NO_RANK:
    case MT_ERR_LIMIT:
    case MT_ERR_NOT_TRACE:
    case MT_ERR_NSYS:
    case MT_ERR_FR:
    case MT_ERR_NOT_REPORT: return MT_EXIT_BAD_INPUT;
    case MT_ERR_USAGE: return MT_EXIT_USAGE;
    default: return MT_EXIT_ERROR;
    }
}

void options_free(options_t *o)
{
    free(o->inputs);
    free(o->what_if_pattern);
    free(o->merge_ranks);
    free(o->command_line);
    free(o->same);
    for (size_t i = 0; i < o->n_stage; i++) {
        free(o->stage_name[i]);
        free(o->stage_regex[i]);
        free(o->stage_ranks[i]);
    }
    free(o->stage_name);
    free(o->stage_regex);
    free(o->stage_ranks);
    free(o->stage_n_ranks);
    free(o->gates);
    free(o->baseline_text);
    memset(o, 0, sizeof *o);
}

/* One more option in options_t.same, as the processes of a launch compare
 * it: its long name, and its value after '='. 0, or -1 out of memory. */
static int same_add(options_t *o, const char *name, const char *val)
{
    static const char *const alias[][2] = {
        {"-o", "--output"}, {"-q", "--quiet"}, {"-r", "--recursive"}, {"--colour", "--color"}};
    for (size_t k = 0; k < sizeof alias / sizeof alias[0]; k++)
        if (!strcmp(name, alias[k][0]))
            name = alias[k][1];
    size_t n = strlen(name) + (val ? strlen(val) + 1 : 0) + 1;
    char *grown = realloc(o->same, o->same_len + n);
    if (!grown)
        return -1;
    o->same = grown;
    snprintf(o->same + o->same_len, n, "%s%s%s", name, val ? "=" : "", val ? val : "");
    o->same_len += n;
    return 0;
}

/* The length of an entry's name (before its '='). */
static size_t same_name_len(const char *e)
{
    const char *eq = strchr(e, '=');
    return eq ? (size_t)(eq - e) : strlen(e);
}

/* options_t.same's entries in the order of their names, stably (an
 * insertion sort; a command line has few), so that the order in which
 * different options are given does not matter and that of a repeated one
 * (--gate, --stage: pipeline order) does. 0, or -1 out of memory. */
static int same_sort(options_t *o)
{
    size_t n = 0;
    for (size_t off = 0; off < o->same_len; off += strlen(o->same + off) + 1)
        n++;
    if (n < 2)
        return 0;
    const char **ent = malloc(n * sizeof *ent);
    char *sorted = malloc(o->same_len);
    if (!ent || !sorted) {
        free(ent);
        free(sorted);
        return -1;
    }
    size_t k = 0;
    for (size_t off = 0; off < o->same_len; off += strlen(o->same + off) + 1) {
        const char *e = o->same + off;
        size_t j = k++;
        for (; j > 0; j--) {
            size_t a = same_name_len(ent[j - 1]), b = same_name_len(e);
            int c = strncmp(ent[j - 1], e, a < b ? a : b);
            if (c < 0 || (c == 0 && a <= b))
                break;
            ent[j] = ent[j - 1];
        }
        ent[j] = e;
    }
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        size_t l = strlen(ent[i]) + 1;
        memcpy(sorted + len, ent[i], l);
        len += l;
    }
    free(ent);
    free(o->same);
    o->same = sorted;
    return 0;
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
    o->jobs = -1;
    o->mem_budget = -1;
    o->warmup = 1;
    o->job_tag = "";
    {
        size_t len = 1;
        for (int i = 0; i < argc; i++)
            len += strlen(argv[i]) + 1;
        o->command_line = malloc(len);
        if (!o->command_line)
            return out_of_memory(print);
        o->command_line[0] = '\0';
    }
    /* -j (and its value) is left out of the command line the outputs
     * show: they are the same whatever it is */
    int jobs_at = -1, jobs_end = -1;
    o->progress = isatty(2);
    o->inputs = calloc((size_t)argc + 1, sizeof *o->inputs);
    if (!o->inputs)
        return out_of_memory(print);
    bool end_of_opts = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int arg_at = i;
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
        } else if (a[1] == 'j' && a[2]) { /* -jN */
            snprintf(name, sizeof name, "-j");
            val = a + 2;
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
        } else if (!strcmp(name, "--force")) {
            NO_VALUE();
            o->force = true;
        } else if (!strcmp(name, "-q") || !strcmp(name, "--quiet")) {
            NO_VALUE();
            o->quiet = true;
        } else if (!strcmp(name, "--json")) {
            NO_VALUE();
            o->json = true;
        } else if (!strcmp(name, "--progress")) {
            NO_VALUE();
            o->progress = true;
        } else if (!strcmp(name, "--timings")) {
            NO_VALUE();
            o->timings = true;
        } else if (!strcmp(name, "--no-progress")) {
            NO_VALUE();
            o->progress = false;
        } else if (!strcmp(name, "--timeline-map")) {
            TAKES_VALUE();
            if (!*val)
                return usage_error(print, name, "expected a file name");
            o->timeline_map = val;
        } else if (!strcmp(name, "--rank-map")) {
            TAKES_VALUE();
            if (!*val)
                return usage_error(print, name, "expected a file name");
            o->rank_map = val;
        } else if (!strcmp(name, "-j") || !strcmp(name, "--jobs")) {
            TAKES_VALUE();
            char *e;
            errno = 0;
            long v = strtol(val, &e, 10);
            if (e == val || *e || errno || v < 0 || v > 4096)
                return usage_error(print, name, "expected a number of worker threads (0 to 4096; 0: one per CPU)");
            o->jobs = (int)v;
            jobs_at = arg_at;
            jobs_end = i;
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
        } else if (!strcmp(name, "--memory-budget")) {
            TAKES_VALUE();
            if (!strcmp(val, "none")) {
                o->mem_budget = 0;
            } else {
                char *e;
                errno = 0;
                double v = strtod(val, &e);
                const char *units = "KMGT", *u = *e ? strchr(units, toupper((unsigned char)*e)) : NULL;
                if (u)
                    for (const char *k = units; k <= u; k++)
                        v *= 1024;
                /* digits first (strtod would take " 16", "0x10", "inf") */
                if (!isdigit((unsigned char)val[0]) || strpbrk(val, "xXpP") || e == val || (*e && (!u || e[1])) ||
                    errno || !(v >= 1) || v > 9e18)
                    return usage_error(print, name, "expected a size (bytes, or a number with K, M, G or T) or none");
                o->mem_budget = (int64_t)v;
            }
        } else if (!strcmp(name, "--pp-stages")) {
            TAKES_VALUE();
            mt_error_t err;
            mt_error_clear(&err);
            mt_pp_stages_t st;
            mt_status_t rc = mt_pp_stages_parse(val, &st, &err);
            mt_pp_stages_free(&st);
            if (rc == MT_ERR_NOMEM)
                return out_of_memory(print);
            if (rc != MT_OK)
                return usage_error(print, name, err.msg);
            o->pp_stages = val;
        } else if (!strcmp(name, "--pp")) {
            TAKES_VALUE();
            char *e;
            errno = 0;
            long v = strtol(val, &e, 10);
            if (e == val || *e || errno || v < 2 || v > 1000000)
                return usage_error(print, name, "expected a number of stages (2 or more)");
            o->pp_blocks = (int)v;
        } else if (!strcmp(name, "--chunk")) {
            TAKES_VALUE();
            if (!*val)
                return usage_error(print, name, "expected a regular expression");
            o->chunk_regex = val;
        } else if (!strcmp(name, "--warmup")) {
            TAKES_VALUE();
            char *e;
            errno = 0;
            long v = strtol(val, &e, 10);
            if (e == val || *e || errno || v < 0 || v > 1000000)
                return usage_error(print, name, "expected a number of chunks (0 or more)");
            o->warmup = (int)v;
        } else if (!strcmp(name, "--what-if")) {
            TAKES_VALUE();
            const char *fe = strrchr(val, '=');
            char *e = NULL;
            double f = 0;
            if (fe) {
                errno = 0;
                f = strtod(fe + 1, &e);
            }
            if (strncmp(val, "kernel:", 7) || !fe || fe == val + 7 || e == fe + 1 || *e || errno || !(f > 0) ||
                f > 100)
                return usage_error(print, name, "expected kernel:GLOB=F with a factor 0 < F <= 100");
            free(o->what_if_pattern);
            o->what_if_pattern = strndup(val + 7, (size_t)(fe - val - 7));
            if (!o->what_if_pattern)
                return usage_error(print, name, "out of memory");
            o->what_if_factor = f;
        } else if (!strcmp(name, "--stage")) {
            TAKES_VALUE();
            int rc = add_stage(o, val, print, name);
            if (rc >= 0)
                return rc;
        } else if (!strcmp(name, "--gate")) {
            TAKES_VALUE();
            mt_error_t err;
            mt_error_clear(&err);
            mt_gate_t g;
            if (mt_gate_parse(val, &g, &err) != MT_OK)
                return usage_error(print, name, err.msg);
            mt_gate_t *ng = realloc(o->gates, (o->n_gates + 1) * sizeof *ng);
            if (!ng)
                return out_of_memory(print);
            o->gates = ng;
            o->gates[o->n_gates++] = g;
        } else if (!strcmp(name, "--baseline")) {
            TAKES_VALUE();
            if (!*val)
                return usage_error(print, name, "expected an output directory, a report.json or a directory of traces");
            o->baseline = val;
        } else if (!strcmp(name, "--strict-gates")) {
            NO_VALUE();
            o->strict_gates = true;
        } else if (!strcmp(name, "--too-few-passes")) {
            NO_VALUE();
            o->too_few_pass = true;
        } else if (!strcmp(name, "--no-align")) {
            NO_VALUE();
            o->no_align = true;
        } else if (!strcmp(name, "--no-drift")) {
            NO_VALUE();
            o->no_drift = true;
        } else if (!strcmp(name, "--local")) {
            NO_VALUE();
            o->local = true;
        } else if (!strcmp(name, "--no-merge")) {
            NO_VALUE();
            o->no_merge = true;
        } else if (!strcmp(name, "--no-html")) {
            NO_VALUE();
            o->no_html = true;
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
            o->ranks_arg = val;
        } else if (!strcmp(name, "--window")) {
            TAKES_VALUE();
            char msg[256];
            if (mt_select_window_parse(val, &o->window_steps, &o->window_a, &o->window_b, msg, sizeof msg))
                return usage_error(print, name, msg);
            o->has_window = true;
            o->window_arg = val;
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
            char msg[128];
            return usage_error(print, name, unknown_option(name, msg, sizeof msg));
        }
        /* -o may differ between the processes (process 0's is used); -j
         * is for a run without a launcher */
        if (!end_of_opts && strcmp(name, "-o") && strcmp(name, "--output") && strcmp(name, "-j") &&
            strcmp(name, "--jobs") && same_add(o, name, val))
            return out_of_memory(print);
#undef TAKES_VALUE
#undef NO_VALUE
    }
    for (int i = 0; i < argc; i++) {
        if (i >= jobs_at && i <= jobs_end)
            continue;
        if (i)
            strcat(o->command_line, " ");
        strcat(o->command_line, argv[i]);
    }
    if (!o->n_inputs)
        return usage_error(print, "PATH", "expected at least one trace file or directory");
    /* without --local only process 0's PATHs are read: another process's
     * must be the same (an MPMD launch that forgot --local would
     * otherwise leave its PATHs out without a word) */
    bool nomem = same_sort(o) != 0;
    for (size_t i = 0; !nomem && !o->local && i < o->n_inputs; i++)
        nomem = same_add(o, o->inputs[i], NULL) != 0;
    if (nomem)
        return out_of_memory(print);
    if (o->quiet)
        o->progress = false;
    if ((o->pp_stages != NULL) + (o->pp_blocks > 0) > 1)
        return usage_error(print, "--pp", "give either --pp-stages or --pp, not both");
    if (o->no_merge && (o->merge_ranks || o->has_window || o->gpu_only))
        return usage_error(print, o->merge_ranks ? "--ranks" : o->has_window ? "--window" : "--gpu-only",
                           "selects what goes into the merged trace, and --no-merge writes none");
    for (size_t i = 0; i < o->n_gates; i++)
        if (o->gates[i].relative && !o->baseline)
            return usage_error(print, "--gate", "a gate relative to \"baseline\" needs --baseline DIR");
    {
        /* The regexes must compile; main compiles them again for the run. */
        mt_error_t err;
        mt_error_clear(&err);
        mt_pp_markers_t *mk = NULL;
        mt_status_t rc = mt_pp_markers_compile(o->chunk_regex, (const char *const *)o->stage_regex, o->n_stage,
                                               (const int32_t *const *)o->stage_ranks, o->stage_n_ranks, &mk, &err);
        mt_pp_markers_free(mk);
        if (rc == MT_ERR_NOMEM)
            return out_of_memory(print);
        if (rc != MT_OK)
            return usage_error(print, o->n_stage ? "--stage / --chunk" : "--chunk", err.msg);
    }
    return -1;
}
