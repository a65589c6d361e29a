/* Expanding PATH arguments into trace files and sharing them by size. */
#define _DEFAULT_SOURCE
#include "inputs.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mergetrace/buf.h"
#include "mergetrace/nsys.h"

static int add(input_list_t *l, const char *path, uint64_t bytes, bool from_dir)
{
    if (MT_GROW(l->files, l->cap, l->n + 1, 16))
        return -1;
    char *p = strdup(path);
    if (!p)
        return -1;
    l->files[l->n++] = (input_file_t){.path = p, .bytes = bytes, .from_dir = from_dir};
    return 0;
}

static bool ends_with(const char *s, const char *suf)
{
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && strcmp(s + n - m, suf) == 0;
}

/* Kineto traces (.json, .json.gz), NCCL plugin files (.jsonl, .jsonl.gz),
 * NCCL Inspector logs (.log, .log.gz) and Nsight Systems exports (.sqlite);
 * what a file is gets decided by its content when loaded. */
static bool is_input_name(const char *n)
{
    return ends_with(n, ".json") || ends_with(n, ".json.gz") || ends_with(n, ".jsonl") || ends_with(n, ".jsonl.gz") ||
           ends_with(n, ".log") || ends_with(n, ".log.gz") || ends_with(n, ".sqlite") || ends_with(n, ".sqlite3");
}

/* An Nsight Systems export with several GPU processes (one report of a
 * whole node) becomes one input per process, "<file>#pid<N>", each loaded
 * as a rank of its own (mt_nsys_load). A file SQLite cannot list is left
 * whole: its load says what is wrong. -1 on allocation failure. */
static int split_nsys(input_list_t *l)
{
    for (size_t i = 0; i < l->n; i++) {
        FILE *f = fopen(l->files[i].path, "rb");
        unsigned char head[16];
        size_t got = f ? fread(head, 1, sizeof head, f) : 0;
        if (f)
            fclose(f);
        mt_nsys_proc_t *procs = NULL;
        size_t np = 0;
        if (!mt_nsys_sniff(head, got) || mt_nsys_procs(l->files[i].path, &procs, &np, NULL) != MT_OK || np < 2) {
            free(procs);
            continue;
        }
        char **parts = calloc(np, sizeof *parts);
        bool ok = parts && !MT_GROW(l->files, l->cap, l->n + np - 1, 16);
        for (size_t k = 0; ok && k < np; k++) {
            size_t need = mt_nsys_part_path(NULL, 0, l->files[i].path, procs[k].pid) + 1;
            if ((parts[k] = malloc(need)))
                mt_nsys_part_path(parts[k], need, l->files[i].path, procs[k].pid);
            ok = parts[k] != NULL;
        }
        if (!ok) {
            for (size_t k = 0; parts && k < np; k++)
                free(parts[k]);
            free(parts);
            free(procs);
            return -1;
        }
        input_file_t whole = l->files[i];
        memmove(&l->files[i + np], &l->files[i + 1], (l->n - i - 1) * sizeof *l->files);
        for (size_t k = 0; k < np; k++)
            l->files[i + k] = (input_file_t){.path = parts[k], .bytes = whole.bytes / np, .from_dir = whole.from_dir};
        free(parts);
        l->n += np - 1;
        i += np - 1;
        free(whole.path);
        free(procs);
    }
    return 0;
}

static int walk(const char *dir, bool recursive, input_list_t *l, char *msg, size_t cap)
{
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(msg, cap, "%s: cannot open directory (%s)", dir, strerror(errno));
        return 1;
    }
    struct dirent *de;
    int rc = 0;
    while (!rc && (de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        size_t n = strlen(dir) + strlen(de->d_name) + 2;
        char *p = malloc(n);
        if (!p) {
            snprintf(msg, cap, "out of memory");
            rc = 1;
            break;
        }
        snprintf(p, n, "%s%s%s", dir, ends_with(dir, "/") ? "" : "/", de->d_name);
        struct stat st;
        bool named = is_input_name(de->d_name);
        if (stat(p, &st) != 0) {
            /* A trace name we cannot follow (a dangling link): an error,
             * never a rank silently left out. Pipes and devices named like
             * traces are errors too: each file is read twice. */
            if (named) {
                snprintf(msg, cap, "%s: cannot read (%s)", p, strerror(errno));
                rc = 1;
            }
        } else if (S_ISDIR(st.st_mode)) {
            if (recursive) {
                rc = walk(p, recursive, l, msg, cap);
            } else if (named) {
                snprintf(msg, cap, "%s: a directory named like a trace (-r looks inside)", p);
                rc = 2;
            }
        } else if (named) {
            if (!S_ISREG(st.st_mode)) {
                snprintf(msg, cap, "%s: not a regular file", p);
                rc = 2;
            } else if (add(l, p, (uint64_t)st.st_size, true)) {
                snprintf(msg, cap, "out of memory");
                rc = 1;
            }
        }
        free(p);
    }
    closedir(d);
    return rc;
}

static int by_path(const void *a, const void *b)
{
    return strcmp(((const input_file_t *)a)->path, ((const input_file_t *)b)->path);
}

int inputs_collect(char **paths, size_t n_paths, bool recursive, input_list_t *out, char *msg, size_t msg_cap)
{
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < n_paths; i++) {
        struct stat st;
        if (stat(paths[i], &st) != 0) {
            snprintf(msg, msg_cap, "%s: %s", paths[i], strerror(errno));
            return 1;
        }
        if (S_ISDIR(st.st_mode)) {
            size_t before = out->n;
            int w = walk(paths[i], recursive, out, msg, msg_cap);
            if (w)
                return w;
            if (out->n == before) {
                snprintf(msg, msg_cap, "%s: no *.json, *.jsonl or *.log files (or .gz) in this directory%s", paths[i],
                         recursive ? " or below" : " (use -r for sub-directories)");
                return 2;
            }
        } else if (!S_ISREG(st.st_mode)) {
            /* Each file is read twice (load, then merge): no pipes. */
            snprintf(msg, msg_cap, "%s: not a regular file", paths[i]);
            return 2;
        } else if (add(out, paths[i], (uint64_t)st.st_size, false)) {
            snprintf(msg, msg_cap, "out of memory");
            return 1;
        }
    }
    qsort(out->files, out->n, sizeof *out->files, by_path);
    /* The same file named twice (a file and its directory) is loaded once. */
    size_t w = 0;
    for (size_t i = 0; i < out->n; i++) {
        if (w && strcmp(out->files[w - 1].path, out->files[i].path) == 0) {
            out->files[w - 1].from_dir &= out->files[i].from_dir; /* named explicitly wins */
            free(out->files[i].path);
            continue;
        }
        out->files[w++] = out->files[i];
    }
    out->n = w;
    if (split_nsys(out)) {
        snprintf(msg, msg_cap, "out of memory");
        return 1;
    }
    return 0;
}

void inputs_assign(input_list_t *l, int n_procs)
{
    size_t *order = malloc((l->n ? l->n : 1) * sizeof *order);
    uint64_t *load = calloc((size_t)n_procs, sizeof *load);
    if (!order || !load) {
        /* Fall back to round robin rather than fail. */
        for (size_t i = 0; i < l->n; i++)
            l->files[i].owner = (int)(i % (size_t)n_procs);
        free(order);
        free(load);
        return;
    }
    for (size_t i = 0; i < l->n; i++)
        order[i] = i;
    /* Insertion sort by size, descending (stable: ties keep path order). */
    for (size_t i = 1; i < l->n; i++) {
        size_t k = order[i], j = i;
        while (j && l->files[order[j - 1]].bytes < l->files[k].bytes) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = k;
    }
    for (size_t i = 0; i < l->n; i++) {
        int best = 0;
        for (int p = 1; p < n_procs; p++)
            if (load[p] < load[best])
                best = p;
        l->files[order[i]].owner = best;
        load[best] += l->files[order[i]].bytes + 1;
    }
    free(order);
    free(load);
}

void inputs_free(input_list_t *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->files[i].path);
    free(l->files);
    memset(l, 0, sizeof *l);
}

const char *inputs_base(const char *path)
{
    const char *b = strrchr(path, '/');
    return b ? b + 1 : path;
}

const char *inputs_label(const char *path, size_t width, char *buf, size_t cap)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    size_t n = strlen(b);
    if (width >= cap)
        width = cap - 1;
    if (n <= width || width < 12) {
        snprintf(buf, cap, "%.*s", (int)width, b);
        return buf;
    }
    size_t head = 10, tail = width - head - 1;
    snprintf(buf, cap, "%.*s~%s", (int)head, b, b + n - tail);
    return buf;
}
