/* Input discovery (discover.h): PATH arguments into the list of inputs
 * (each directory read once, each file once under its first name,
 * mergetrace's own outputs left out, a merged trace and a multi-process
 * Nsight Systems export split into their parts, Flight Recorder dumps put
 * apart), their sharing among processes by size, and a file's identity
 * for --local. */
#define _DEFAULT_SOURCE
#include "mergetrace/discover.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mergetrace/buf.h"
#include "mergetrace/fr_hang.h"
#include "mergetrace/input.h"
#include "mergetrace/loader.h"
#include "mergetrace/merge.h"
#include "mergetrace/nsys.h"
#include "mergetrace/warnings.h"

static int add(mt_discover_list_t *l, const char *path, const struct stat *st, bool from_dir)
{
    if (MT_GROW(l->files, l->cap, l->n + 1, 16))
        return -1;
    char *p = strdup(path);
    if (!p)
        return -1;
    l->files[l->n++] = (mt_discover_file_t){.path = p,
                                      .bytes = (uint64_t)st->st_size,
                                      .from_dir = from_dir,
                                      .kind = MT_DISCOVER_FILE,
                                      .part = -1};
    return 0;
}

typedef struct file_id {
    char *real; /* realpath(): NULL when it failed (the file is then kept) */
    size_t i;
} file_id_t;

static int by_real(const void *a, const void *b)
{
    const file_id_t *x = a, *y = b;
    if (!x->real || !y->real)
        return x->real ? -1 : y->real ? 1 : (x->i > y->i) - (x->i < y->i);
    int c = strcmp(x->real, y->real);
    return c ? c : (x->i > y->i) - (x->i < y->i);
}

/* One file under two names in l (sorted by path, each name once): the
 * later names in path order dropped, the first one kept (named
 * explicitly if any was). Else it would be loaded twice and its rank
 * refused as a duplicate of itself. By realpath(), not by device and
 * inode: a network or FUSE file system may give two files one inode
 * number, and a rank dropped for that would go without a word; a hard
 * link (two paths, one inode) stays two files, refused as a duplicate
 * rank with both names. 0, or -1 out of memory. */
static int drop_second_names(mt_discover_list_t *l)
{
    if (l->n < 2)
        return 0;
    file_id_t *id = malloc(l->n * sizeof *id);
    if (!id)
        return -1;
    for (size_t i = 0; i < l->n; i++)
        id[i] = (file_id_t){realpath(l->files[i].path, NULL), i};
    qsort(id, l->n, sizeof *id, by_real);
    for (size_t a = 0, b; a < l->n; a = b) {
        for (b = a + 1; b < l->n && id[a].real && id[b].real && !strcmp(id[a].real, id[b].real); b++) {
            l->files[id[a].i].from_dir &= l->files[id[b].i].from_dir;
            free(l->files[id[b].i].path);
            l->files[id[b].i].path = NULL;
        }
    }
    for (size_t i = 0; i < l->n; i++)
        free(id[i].real);
    free(id);
    size_t k = 0;
    for (size_t i = 0; i < l->n; i++)
        if (l->files[i].path)
            l->files[k++] = l->files[i];
    l->n = k;
    return 0;
}

static bool is_fr_dump(const char *path);

static bool ends_with(const char *s, const char *suf)
{
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && strcmp(s + n - m, suf) == 0;
}

/* The NCCL plugin's file of a process that never finished (it hung and
 * was killed): the plugin renames ".<host>-pid<pid>.jsonl.tmp" into place
 * only at a clean end, and that file is what a hang post-mortem needs. */
static bool is_plugin_temp(const char *n)
{
    return n[0] == '.' && ends_with(n, ".jsonl.tmp") && strlen(n) > strlen("..jsonl.tmp");
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
static int split_nsys(mt_discover_list_t *l)
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
        mt_discover_file_t whole = l->files[i];
        memmove(&l->files[i + np], &l->files[i + 1], (l->n - i - 1) * sizeof *l->files);
        for (size_t k = 0; k < np; k++)
            l->files[i + k] = (mt_discover_file_t){.path = parts[k],
                                                   .bytes = whole.bytes / np,
                                                   .from_dir = whole.from_dir,
                                                   .kind = MT_DISCOVER_NSYS_PART,
                                                   .part = procs[k].pid};
        free(parts);
        l->n += np - 1;
        i += np - 1;
        free(whole.path);
        free(procs);
    }
    return 0;
}

/* The directories read so far, by device and inode, with the path each
 * was read by: -r reads each once, so links cannot lead it round a loop. */
typedef struct walk {
    bool recursive;
    struct seen {
        dev_t dev;
        ino_t ino;
        char *path;
    } *seen;
    size_t n_seen, cap_seen;
    mt_discover_list_t *l;
    char *msg;
    size_t cap;
} walk_t;

static const char *seen_before(const walk_t *w, const struct stat *st)
{
    for (size_t i = 0; i < w->n_seen; i++)
        if (w->seen[i].dev == st->st_dev && w->seen[i].ino == st->st_ino)
            return w->seen[i].path;
    return NULL;
}

int mt_discover_skip_add(mt_discover_list_t *l, const char *path, const char *why, const char *first)
{
    if (MT_GROW(l->skipped, l->cap_skipped, l->n_skipped + 1, 8))
        return -1;
    mt_discover_skip_t k = {.path = strdup(path), .why = strdup(why), .first = first ? strdup(first) : NULL};
    if (!k.path || !k.why || (first && !k.first)) {
        free(k.path);
        free(k.why);
        free(k.first);
        return -1;
    }
    l->skipped[l->n_skipped++] = k;
    return 0;
}

static int oom(walk_t *w)
{
    snprintf(w->msg, w->cap, "out of memory");
    return 1;
}

/* Read directory dir (st: its stat), entries in name order so that which
 * of two links to one directory is followed does not depend on the file
 * system. */
static int walk(walk_t *w, const char *dir, const struct stat *dst)
{
    if (MT_GROW(w->seen, w->cap_seen, w->n_seen + 1, 16))
        return oom(w);
    w->seen[w->n_seen] = (struct seen){dst->st_dev, dst->st_ino, strdup(dir)};
    if (!w->seen[w->n_seen++].path)
        return oom(w);
    struct dirent **ents = NULL;
    int n_ents = scandir(dir, &ents, NULL, alphasort);
    if (n_ents < 0) {
        snprintf(w->msg, w->cap, "%s: cannot open directory (%s)", dir, strerror(errno));
        return 1;
    }
    int rc = 0;
    for (int e = 0; e < n_ents; e++) {
        const struct dirent *de = ents[e];
        if (rc || (de->d_name[0] == '.' && !is_plugin_temp(de->d_name)))
            continue;
        size_t n = strlen(dir) + strlen(de->d_name) + 2;
        char *p = malloc(n);
        if (!p) {
            rc = oom(w);
            continue;
        }
        snprintf(p, n, "%s%s%s", dir, ends_with(dir, "/") ? "" : "/", de->d_name);
        struct stat st;
        bool named = is_input_name(de->d_name) || is_plugin_temp(de->d_name);
        if (!named && stat(p, &st) == 0 && S_ISREG(st.st_mode))
            named = is_fr_dump(p); /* PyTorch names them <prefix><rank>: no extension */
        if (stat(p, &st) != 0) {
            /* A trace name we cannot follow (a dangling link): an error,
             * never a rank silently left out. Pipes and devices named like
             * traces are errors too: each file is read twice. */
            if (named) {
                snprintf(w->msg, w->cap, "%s: cannot read (%s)", p, strerror(errno));
                rc = 1;
            }
        } else if (S_ISDIR(st.st_mode)) {
            if (w->recursive) {
                const char *first = seen_before(w, &st);
                if (!first)
                    rc = walk(w, p, &st);
                else if (mt_discover_skip_add(w->l, p, "a link to a directory read already: not followed", first))
                    rc = oom(w);
            } else if (named) {
                snprintf(w->msg, w->cap, "%s: a directory named like a trace (-r looks inside)", p);
                rc = 2;
            }
        } else if (named) {
            if (!S_ISREG(st.st_mode)) {
                snprintf(w->msg, w->cap, "%s: not a regular file", p);
                rc = 2;
            } else if (add(w->l, p, &st, true)) {
                rc = oom(w);
            }
        }
        free(p);
    }
    for (int e = 0; e < n_ents; e++)
        free(ents[e]);
    free(ents);
    return rc;
}

/* A Flight Recorder dump, by its first bytes (an unreadable head: no). */
static bool is_fr_dump(const char *path)
{
    char head[256];
    size_t len = 0;
    mt_error_t err;
    return mt_input_read_head(path, head, sizeof head, &len, &err) == MT_OK && mt_fr_probe((const uint8_t *)head, len);
}

/* The Flight Recorder dumps of l->files moved to l->fr (path order kept).
 * 0, or -1 out of memory (l then still frees every path). */
static int split_fr(mt_discover_list_t *l)
{
    size_t w = 0;
    for (size_t i = 0; i < l->n; i++) {
        const char *p = l->files[i].path;
        if (ends_with(p, ".sqlite") || ends_with(p, ".sqlite3") || strchr(p, '#') || !is_fr_dump(p)) {
            l->files[w++] = l->files[i];
            continue;
        }
        if (MT_GROW(l->fr, l->cap_fr, l->n_fr + 1, 16)) {
            for (size_t k = i; k < l->n; k++)
                l->files[w++] = l->files[k];
            l->n = w;
            return -1;
        }
        l->fr[l->n_fr++] = l->files[i];
    }
    l->n = w;
    return 0;
}

static int by_path(const void *a, const void *b)
{
    return strcmp(((const mt_discover_file_t *)a)->path, ((const mt_discover_file_t *)b)->path);
}

/* The ranks of a merged trace named on the command line, as inputs
 * "<file>#rank<R>" (mt_merged_part_path) sharing its size, in place of
 * files[i]; one pass over the file finds them (mt_merged_ranks). 0; -1 on
 * allocation failure; 2 with msg when the file cannot be read or holds no
 * rank. */
static int split_merged(mt_discover_list_t *l, size_t i, char *msg, size_t msg_cap)
{
    int32_t *ranks = NULL;
    size_t nr = 0;
    mt_error_t err;
    mt_error_clear(&err);
    mt_status_t st = mt_merged_ranks(l->files[i].path, &ranks, &nr, &err);
    if (st == MT_ERR_NOMEM)
        return -1;
    if (st != MT_OK || !nr) {
        if (st != MT_OK)
            mt_error_format(&err, msg, msg_cap);
        else
            snprintf(msg, msg_cap, "%s: a merged trace written by mergetrace with no rank's events in it",
                     l->files[i].path);
        free(ranks);
        return 2;
    }
    char **parts = calloc(nr, sizeof *parts);
    bool ok = parts && !MT_GROW(l->files, l->cap, l->n + nr - 1, 16);
    for (size_t k = 0; ok && k < nr; k++) {
        size_t need = mt_merged_part_path(NULL, 0, l->files[i].path, ranks[k]) + 1;
        if ((parts[k] = malloc(need)))
            mt_merged_part_path(parts[k], need, l->files[i].path, ranks[k]);
        ok = parts[k] != NULL;
    }
    if (!ok) {
        for (size_t k = 0; parts && k < nr; k++)
            free(parts[k]);
        free(parts);
        free(ranks);
        return -1;
    }
    mt_discover_file_t whole = l->files[i];
    memmove(&l->files[i + nr], &l->files[i + 1], (l->n - i - 1) * sizeof *l->files);
    for (size_t k = 0; k < nr; k++)
        l->files[i + k] = (mt_discover_file_t){.path = parts[k],
                                               .bytes = whole.bytes / nr,
                                               .from_dir = false,
                                               .kind = MT_DISCOVER_MERGED_PART,
                                               .part = ranks[k]};
    l->n += nr - 1;
    free(parts);
    free(ranks);
    free(whole.path);
    return 0;
}

/* mergetrace's own outputs (a run with -o inside its input directory, or a
 * second run into the first one's): left out and listed. Only JSON names
 * are read; a file whose head cannot be read is left for the load to
 * report. A merged trace named on the command line (not found in a
 * directory) is read instead, one input per rank (split_merged). -1 on
 * allocation failure; 2 with msg for a merged trace that cannot be read. */
static int skip_own_outputs(mt_discover_list_t *l, char *msg, size_t msg_cap)
{
    size_t w = 0;
    for (size_t i = 0; i < l->n; i++) {
        const char *p = l->files[i].path;
        const char *what = NULL;
        if (ends_with(p, ".json") || ends_with(p, ".json.gz")) {
            char head[256];
            size_t len = 0;
            mt_error_t err;
            if (mt_input_read_head(p, head, sizeof head, &len, &err) == MT_OK)
                what = mt_merge_sniff_output(head, len);
        }
        if (what && !l->files[i].from_dir && mt_merge_sniff_merged(what)) {
            size_t before = l->n;
            int rc = split_merged(l, i, msg, msg_cap);
            if (rc) {
                for (size_t k = i; k < l->n; k++) /* keep the rest, so mt_discover_free frees every path */
                    l->files[w++] = l->files[k];
                l->n = w;
                return rc;
            }
            for (size_t k = 0; k <= l->n - before; k++)
                l->files[w++] = l->files[i + k];
            i += l->n - before;
            continue;
        }
        if (!what) {
            l->files[w++] = l->files[i];
            continue;
        }
        if (mt_discover_skip_add(l, p, what, NULL)) {
            for (size_t k = i; k < l->n; k++) /* keep the rest, so mt_discover_free frees every path */
                l->files[w++] = l->files[k];
            l->n = w;
            return -1;
        }
        free(l->files[i].path);
    }
    l->n = w;
    return 0;
}

bool mt_discover_all_merged(char *const *paths, size_t n_paths)
{
    for (size_t i = 0; i < n_paths; i++) {
        struct stat st;
        char head[256];
        size_t len = 0;
        mt_error_t err;
        if (stat(paths[i], &st) != 0 || !S_ISREG(st.st_mode) ||
            mt_input_read_head(paths[i], head, sizeof head, &len, &err) != MT_OK ||
            !mt_merge_sniff_merged(mt_merge_sniff_output(head, len)))
            return false;
    }
    return n_paths > 0;
}

int mt_discover_collect(char *const *paths, size_t n_paths, bool recursive, mt_discover_list_t *out, char *msg, size_t msg_cap)
{
    memset(out, 0, sizeof *out);
    walk_t w = {.recursive = recursive, .l = out, .msg = msg, .cap = msg_cap};
    int rc = 0;
    for (size_t i = 0; !rc && i < n_paths; i++) {
        struct stat st;
        if (stat(paths[i], &st) != 0) {
            snprintf(msg, msg_cap, "%s: %s", paths[i], strerror(errno));
            rc = 1;
        } else if (S_ISDIR(st.st_mode)) {
            if (seen_before(&w, &st))
                continue; /* named twice, or inside a directory named before (-r): read once */
            size_t before = out->n;
            rc = walk(&w, paths[i], &st);
            if (!rc && out->n == before) {
                snprintf(msg, msg_cap,
                         "%s: no *.json, *.jsonl or *.log files (or .gz) or *.sqlite exports in this directory%s",
                         paths[i], recursive ? " or below" : " (use -r for sub-directories)");
                rc = 2;
            }
        } else if (!S_ISREG(st.st_mode)) {
            /* Each file is read twice (load, then merge): no pipes. */
            snprintf(msg, msg_cap, "%s: not a regular file", paths[i]);
            rc = 2;
        } else if (add(out, paths[i], &st, false)) {
            snprintf(msg, msg_cap, "out of memory");
            rc = 1;
        }
    }
    for (size_t i = 0; i < w.n_seen; i++)
        free(w.seen[i].path);
    free(w.seen);
    if (rc)
        return rc;
    qsort(out->files, out->n, sizeof *out->files, by_path);
    /* The same file named twice (a file and its directory) is loaded once. */
    size_t k = 0;
    for (size_t i = 0; i < out->n; i++) {
        if (k && strcmp(out->files[k - 1].path, out->files[i].path) == 0) {
            out->files[k - 1].from_dir &= out->files[i].from_dir; /* named explicitly wins */
            free(out->files[i].path);
            continue;
        }
        out->files[k++] = out->files[i];
    }
    out->n = k;
    if (drop_second_names(out)) {
        snprintf(msg, msg_cap, "out of memory");
        return 1;
    }
    int so = skip_own_outputs(out, msg, msg_cap);
    if (so == 2)
        return 2;
    if (so || split_fr(out) || split_nsys(out)) {
        snprintf(msg, msg_cap, "out of memory");
        return 1;
    }
    for (size_t i = 0; !out->n && !out->n_fr && i < out->n_skipped; i++)
        if (!out->skipped[i].first) { /* nothing left but mergetrace's own outputs */
            snprintf(msg, msg_cap, "%s: %s, not a trace to read", out->skipped[i].path, out->skipped[i].why);
            return 2;
        }
    return 0;
}

void mt_discover_assign(mt_discover_list_t *l, int n_procs)
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

void mt_discover_free(mt_discover_list_t *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->files[i].path);
    free(l->files);
    for (size_t i = 0; i < l->n_skipped; i++) {
        free(l->skipped[i].path);
        free(l->skipped[i].why);
        free(l->skipped[i].first);
    }
    free(l->skipped);
    for (size_t i = 0; i < l->n_fr; i++)
        free(l->fr[i].path);
    free(l->fr);
    memset(l, 0, sizeof *l);
}

const char *mt_discover_base(const char *path)
{
    const char *b = strrchr(path, '/');
    return b ? b + 1 : path;
}


mt_discover_kind_t mt_discover_part(const char *path, int64_t *part)
{
    *part = -1;
    size_t len = 0;
    int32_t rank = mt_merged_part_parse(path, &len);
    if (rank >= 0) {
        *part = rank;
        return MT_DISCOVER_MERGED_PART;
    }
    size_t fl = mt_nsys_part_file(path);
    if (fl && !strncmp(path + fl, "#pid", 4)) {
        char *end = NULL;
        long long pid = strtoll(path + fl + 4, &end, 10);
        if (end && end != path + fl + 4 && !*end) {
            *part = pid;
            return MT_DISCOVER_NSYS_PART;
        }
    }
    return MT_DISCOVER_FILE;
}

char *mt_discover_identity(const char *path, struct stat *st)
{
    if (stat(path, st) == 0)
        return realpath(path, NULL);
    const char *part = strrchr(path, '#');
    char *file = part ? strndup(path, (size_t)(part - path)) : NULL;
    char *real = file && stat(file, st) == 0 ? realpath(file, NULL) : NULL;
    free(file);
    char *id = real ? malloc(strlen(real) + strlen(part) + 1) : NULL;
    if (id) {
        memcpy(id, real, strlen(real));
        strcpy(id + strlen(real), part);
    }
    free(real);
    return id;
}

void mt_discover_node(char *host, size_t cap)
{
    if (!cap)
        return;
    host[0] = '\0';
    const char *env = getenv("MERGETRACE_NODE");
    if (env && *env)
        snprintf(host, cap, "%s", env);
    else if (cap < 2 || gethostname(host, cap - 1) != 0)
        host[0] = '\0'; /* then the other fields still tell two files apart */
    else
        host[cap - 1] = '\0';
}

/* --local: one file listed by several processes of a node kept once. */

static int by_identity(const void *a, const void *b)
{
    const mt_discover_rec_t *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    if (!c)
        c = strcmp(x->key + strlen(x->key) + 1, y->key + strlen(y->key) + 1);
    if (!c)
        c = x->dev != y->dev ? (x->dev < y->dev ? -1 : 1) : x->ino != y->ino ? (x->ino < y->ino ? -1 : 1) : 0;
    if (!c)
        c = x->f.bytes != y->f.bytes ? (x->f.bytes < y->f.bytes ? -1 : 1)
            : x->mtime_ns != y->mtime_ns ? (x->mtime_ns < y->mtime_ns ? -1 : 1) : 0;
    return c ? c : (x->f.owner > y->f.owner) - (x->f.owner < y->f.owner);
}

static bool same_file(const mt_discover_rec_t *x, const mt_discover_rec_t *y)
{
    const char *rx = x->key + strlen(x->key) + 1;
    return *rx && x->dev == y->dev && x->ino == y->ino && x->f.bytes == y->f.bytes && x->mtime_ns == y->mtime_ns &&
           !strcmp(x->key, y->key) && !strcmp(rx, y->key + strlen(y->key) + 1);
}

/* A file listed by several processes: its size and its first record. */
typedef struct shared_grp {
    uint64_t bytes;
    size_t at, end; /* its records: rec[at .. end) */
} shared_grp_t;

static int larger_first(const void *a, const void *b)
{
    const shared_grp_t *x = a, *y = b;
    return x->bytes != y->bytes ? (x->bytes > y->bytes ? -1 : 1) : (x->at > y->at) - (x->at < y->at);
}

long mt_discover_share_node(mt_discover_rec_t *rec, size_t n, int n_procs)
{
    if (n) /* rec may be NULL: no process listed a trace (--local, dumps alone) */
        qsort(rec, n, sizeof *rec, by_identity);
    uint64_t *load = calloc((size_t)n_procs, sizeof *load);
    shared_grp_t *grp = malloc((n ? n : 1) * sizeof *grp);
    if (!load || !grp) {
        free(load);
        free(grp);
        return -1;
    }
    size_t n_grp = 0;
    for (size_t a = 0, b; a < n; a = b) {
        for (b = a + 1; b < n && same_file(&rec[a], &rec[b]); b++)
            ;
        if (b - a == 1)
            load[rec[a].f.owner] += rec[a].f.bytes;
        else
            grp[n_grp++] = (shared_grp_t){rec[a].f.bytes, a, b};
    }
    qsort(grp, n_grp, sizeof *grp, larger_first); /* ties in identity order */
    for (size_t g = 0; g < n_grp; g++) {
        size_t a = grp[g].at, end = grp[g].end, best = a;
        for (size_t b = a + 1; b < end; b++)
            if (load[rec[b].f.owner] < load[rec[best].f.owner])
                best = b;
        load[rec[best].f.owner] += rec[best].f.bytes;
        /* under its first name in path order, as by one process
         * (mt_discover_collect), when every name is absolute: any of them opens
         * the file on this host; a relative one only in its process's
         * working directory, so then the loader's own */
        size_t name = best;
        bool absolute = true;
        for (size_t b = a; b < end; b++) {
            absolute &= rec[b].f.path[0] == '/';
            if (strcmp(rec[b].f.path, rec[name].f.path) < 0)
                name = b;
        }
        if (absolute && name != best) {
            char *t = rec[best].f.path;
            rec[best].f.path = rec[name].f.path;
            rec[name].f.path = t;
        }
        bool from_dir = true; /* named explicitly by any process wins, as by one process (mt_discover_collect) */
        for (size_t b = a; b < end; b++) {
            from_dir &= rec[b].f.from_dir;
            if (b != best) {
                free(rec[b].f.path);
                rec[b].f.path = NULL;
            }
        }
        rec[best].f.from_dir = from_dir;
    }
    free(load);
    free(grp);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (rec[i].f.path)
            rec[k++] = rec[i];
    return (long)k;
}

uint64_t mt_discover_largest_json(const mt_discover_list_t *l)
{
    if (!l->n)
        return 0;
    const mt_discover_file_t *big = &l->files[0];
    for (size_t i = 1; i < l->n; i++)
        if (l->files[i].bytes > big->bytes)
            big = &l->files[i];
    /* gzip: its JSON's size guessed (mt_input_size_hint) */
    uint64_t json = big->bytes;
    mt_input_t *in = NULL;
    mt_error_t err;
    if (mt_input_open(big->path, NULL, 0, &in, &err) == MT_OK) {
        uint64_t hint = mt_input_size_hint(in);
        json = hint > json ? hint : json;
        mt_input_close(in);
    }
    return json;
}

size_t mt_discover_part_run(const mt_discover_list_t *l, size_t i, int me, size_t *mine)
{
    const char *p = l->files[i].path;
    size_t flen = mt_nsys_part_file(p), end = i + 1;
    while (flen && end < l->n && mt_nsys_part_file(l->files[end].path) == flen &&
           strncmp(l->files[end].path, p, flen) == 0)
        end++;
    *mine = 0;
    for (size_t j = i; j < end; j++)
        *mine += l->files[j].owner == me;
    return end - i;
}

bool mt_discover_is_trace_head(const char *head, size_t len)
{
    static const char sqlite[16] = "SQLite format 3";
    if (len >= 16 && !memcmp(head, sqlite, 16))
        return true;
    if (len >= 2 && (unsigned char)head[0] == 0x1f && (unsigned char)head[1] == 0x8b)
        return true;
    size_t look = len < 4096 ? len : 4096;
    static const char key[] = "\"traceEvents\"";
    for (size_t i = 0; i + sizeof key - 1 <= look; i++)
        if (!memcmp(head + i, key, sizeof key - 1))
            return true;
    return false;
}
