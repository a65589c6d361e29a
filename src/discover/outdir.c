/* The output directory on the file system (outdir.h): mkdir -p, outputs
 * checked against the inputs, temporaries and the renaming mark, and the
 * cleanup of what earlier runs left. In discover/ because telling an
 * output from an input needs the part paths of merge/ and trace/. */
#define _DEFAULT_SOURCE /* realpath */
#define _POSIX_C_SOURCE 200809L
#include "mergetrace/outdir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "mergetrace/merge.h"
#include "mergetrace/nsys.h"

int mt_outdir_make(const char *d, char *msg, size_t cap)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s", d) >= (int)sizeof path) {
        snprintf(msg, cap, "%.900s: the path is too long", d);
        return 1;
    }
    for (char *s = path + 1;; s++) {
        bool last = *s == '\0';
        if (!last && *s != '/')
            continue;
        *s = '\0';
        if (mkdir(path, 0777) != 0 && errno != EEXIST) {
            snprintf(msg, cap, "%.900s: cannot create the output directory (%s)", path, strerror(errno));
            return 1;
        }
        struct stat st;
        if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
            snprintf(msg, cap, "%.900s: exists and is not a directory", path);
            return 1;
        }
        if (last)
            return 0;
        *s = '/';
        while (s[1] == '/')
            s++; /* a//b */
    }
}

bool mt_outdir_is_input(const char *out_path, const mt_discover_list_t *l)
{
    char a[PATH_MAX], b[PATH_MAX];
    if (!realpath(out_path, a))
        return false; /* does not exist yet: cannot be an input */
    for (size_t i = 0; i < l->n; i++) {
        const char *p = l->files[i].path;
        if (realpath(p, b) && !strcmp(a, b))
            return true;
        /* one part of a file ("<file>#rank<R>", "<file>#pid<N>"): the file;
         * any other '#' is part of a file's name */
        size_t fl = 0;
        if (mt_merged_part_parse(p, &fl) < 0)
            fl = mt_nsys_part_file(p);
        char whole[PATH_MAX];
        if (fl && fl < sizeof whole) {
            memcpy(whole, p, fl);
            whole[fl] = '\0';
            if (realpath(whole, b) && !strcmp(a, b))
                return true;
        }
    }
    return false;
}

int mt_outdir_tmp_name(const char *path, unsigned salt, char *tmp, size_t cap)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int n = snprintf(tmp, cap, "%s.tmp.%ld.%lx", path, (long)getpid(),
                     (unsigned long)((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec + (uint64_t)salt));
    if (n < 0 || (size_t)n >= cap) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return 0;
}

FILE *mt_outdir_tmp_create(const char *path, char *tmp, size_t cap)
{
    for (unsigned tries = 0; tries < 8; tries++) {
        if (mt_outdir_tmp_name(path, tries, tmp, cap))
            return NULL;
        int fd = open(tmp, O_CREAT | O_WRONLY | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd < 0) {
            if (errno == EEXIST)
                continue;
            return NULL;
        }
        FILE *f = fdopen(fd, "wb");
        if (!f) {
            int e = errno;
            close(fd);
            remove(tmp);
            errno = e;
        }
        return f;
    }
    errno = EEXIST;
    return NULL;
}

static int renaming_fd_ = -1;
static char renaming_path_[PATH_MAX];

int mt_outdir_renaming(const char *dir, const char *name, const char *tmp)
{
    if (renaming_fd_ < 0) {
        int n = snprintf(renaming_path_, sizeof renaming_path_, "%s/" MT_OUTDIR_RENAMING "%ld", dir, (long)getpid());
        if (n < 0 || (size_t)n >= sizeof renaming_path_) {
            errno = ENAMETOOLONG;
            return -1;
        }
        renaming_fd_ = open(renaming_path_, O_CREAT | O_WRONLY | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_APPEND, 0666);
        if (renaming_fd_ < 0)
            return -1;
    }
    /* "name<TAB>.tmp.<pid>.<hex>" before the rename: after a kill, the
     * temporary still there says the rename did not happen */
    const char *suffix = NULL;
    for (const char *p = tmp; (p = strstr(p, ".tmp.")) != NULL; p++)
        suffix = p;
    char line[PATH_MAX];
    int len = snprintf(line, sizeof line, "%s\t%s\n", name, suffix ? suffix : "");
    if (len < 0 || (size_t)len >= sizeof line || !suffix) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return write(renaming_fd_, line, (size_t)len) == (ssize_t)len ? 0 : -1;
}

int mt_outdir_rename(const char *tmp, const char *path)
{
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/');
    size_t n = slash ? (size_t)(slash - path) : 0;
    if (n >= sizeof dir) {
        errno = ENAMETOOLONG;
        return -1;
    }
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(n ? n : 1), path); /* "/x": the root */
    return mt_outdir_renaming(dir, slash ? slash + 1 : path, tmp) || rename(tmp, path) != 0 ? -1 : 0;
}

void mt_outdir_renamed_all(void)
{
    if (renaming_fd_ < 0)
        return;
    close(renaming_fd_);
    renaming_fd_ = -1;
    unlink(renaming_path_);
}

mt_status_t mt_outdir_bytes(const void *arg, mt_write_fn write, void *ctx)
{
    const mt_buf_t *b = arg;
    return write(ctx, b->data, b->len);
}

int mt_outdir_write(const char *dir, const char *name, mt_outdir_render_fn render, const void *arg, unsigned flags,
                    char *msg, size_t cap)
{
    char path[PATH_MAX], tmp[PATH_MAX + 32];
    snprintf(path, sizeof path, "%.4000s/%s", dir, name);
    FILE *f = mt_outdir_tmp_create(path, tmp, sizeof tmp);
    if (!f) {
        snprintf(msg, cap, "%.900s: cannot create (%s)", flags & MT_OUTDIR_NAME_PATH ? path : tmp, strerror(errno));
        return 1;
    }
    mt_status_t st = render(arg, mt_file_write, f);
    if (ferror(f))
        st = MT_ERR_IO;
    if (fclose(f) != 0)
        st = MT_ERR_IO;
    if (st != MT_OK || mt_outdir_renaming(dir, name, tmp) || rename(tmp, path) != 0) {
        snprintf(msg, cap, "%.900s: write failed (%s)", path,
                 st == MT_ERR_NOMEM && (flags & MT_OUTDIR_SAY_NOMEM) ? "out of memory" : strerror(errno));
        remove(tmp);
        return 1;
    }
    return 0;
}

/* The process id that name carries after prefix (prefix "<pid>" then
 * nothing, or '.' and more when more_ok), when that process is gone from
 * this host and is not this one; else 0. */
static long dead_pid(const char *name, size_t prefix, bool more_ok)
{
    char *end = NULL;
    errno = 0;
    long pid = strtol(name + prefix, &end, 10);
    if (errno || end == name + prefix || (*end && (!more_ok || *end != '.')) || pid <= 0 || pid == (long)getpid())
        return 0;
    if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
        return 0; /* alive, or not ours to judge */
    return pid;
}

size_t mt_outdir_remove_dead_temps(const char *dir)
{
    static const char *const names[] = {"report.json", "report.html", "merged.json.gz", "merged.json",
                                        "timings.json", "compare.json"};
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
            size_t l = strlen(names[i]);
            if (strncmp(e->d_name, names[i], l) || strncmp(e->d_name + l, ".tmp.", 5))
                continue;
            if (!dead_pid(e->d_name, l + 5, true))
                continue;
            char path[PATH_MAX];
            snprintf(path, sizeof path, "%.3000s/%.1000s", dir, e->d_name);
            if (unlink(path) == 0)
                n++;
        }
    }
    closedir(d);
    return n;
}

/* Whether path and other name one file (by realpath). */
static bool same_file(const char *path, const char *other)
{
    char a[PATH_MAX], b[PATH_MAX];
    return other && realpath(path, a) && realpath(other, b) && !strcmp(a, b);
}

/* remove(path) for the cleanups; a failure goes to note. */
static bool remove_output(const char *path, mt_outdir_note_fn note, void *ctx)
{
    if (remove(path) == 0)
        return true;
    if (note) {
        char line[1200];
        snprintf(line, sizeof line, "%.900s: cannot remove this output of an earlier run (%s)", path, strerror(errno));
        note(ctx, line);
    }
    return false;
}

void mt_outdir_repair(const char *dir, const mt_discover_list_t *files, bool keep_baseline_report,
                      const char *baseline_file, bool quiet, mt_outdir_note_fn note, void *ctx)
{
    static const char *const names[] = {"merged.json.gz", "merged.json",  "report.json",         "report.html",
                                        "compare.json",   "timings.json", "baseline/report.json"};
    enum { N_NAMES = sizeof names / sizeof names[0] };
    size_t lm = strlen(MT_OUTDIR_RENAMING);
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, MT_OUTDIR_RENAMING, lm) || !dead_pid(e->d_name, lm, false))
            continue;
        char mark[PATH_MAX], line[PATH_MAX];
        snprintf(mark, sizeof mark, "%.3000s/%.1000s", dir, e->d_name);
        /* a plain file only: a FIFO planted under the name would block */
        int fd = open(mark, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
        struct stat ms;
        FILE *f = fd >= 0 && fstat(fd, &ms) == 0 && S_ISREG(ms.st_mode) ? fdopen(fd, "r") : NULL;
        if (!f) {
            if (fd >= 0)
                close(fd);
            continue;
        }
        bool renamed[N_NAMES] = {false}, any = false;
        while (fgets(line, sizeof line, f)) {
            char *tab = strchr(line, '\t'), *nl = strchr(line, '\n');
            if (!tab || !nl)
                continue; /* the last line, cut by the kill: its rename never came */
            *tab = *nl = '\0';
            for (size_t i = 0; i < N_NAMES; i++) {
                char tmp[PATH_MAX];
                struct stat st;
                if (strcmp(line, names[i]))
                    continue;
                snprintf(tmp, sizeof tmp, "%.3000s/%s%.200s", dir, names[i], tab + 1);
                if (lstat(tmp, &st) != 0 && errno == ENOENT)
                    renamed[i] = any = true;
            }
        }
        fclose(f);
        char removed[256] = "";
        for (size_t i = 0; any && i < N_NAMES; i++) {
            char path[PATH_MAX];
            struct stat st;
            if (renamed[i] || (i == N_NAMES - 1 && keep_baseline_report))
                continue; /* the stopped run's, or this run's own baseline */
            snprintf(path, sizeof path, "%.4000s/%s", dir, names[i]);
            if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode) || mt_outdir_is_input(path, files))
                continue;
            if (same_file(path, baseline_file))
                continue; /* this run's baseline */
            if (!remove_output(path, note, ctx))
                continue;
            size_t n = strlen(removed);
            snprintf(removed + n, sizeof removed - n, "%s%s", n ? ", " : "", names[i]);
        }
        unlink(mark);
        if (removed[0] && !quiet && note) {
            char msg[1400];
            snprintf(msg, sizeof msg,
                     "%.900s: an earlier run was stopped while renaming its outputs into place; removed "
                     "%s, older than its others",
                     dir, removed);
            note(ctx, msg);
        }
    }
    closedir(d);
}

void mt_outdir_remove_stale(const char *dir, const mt_outdir_name_t *names, size_t n_names,
                            const mt_discover_list_t *files, const char *baseline_file, char *removed, size_t cap,
                            mt_outdir_note_fn note, void *ctx)
{
    removed[0] = '\0';
    for (size_t i = 0; i < n_names; i++) {
        char path[PATH_MAX];
        struct stat st;
        if (names[i].keep)
            continue;
        snprintf(path, sizeof path, "%.4000s/%s", dir, names[i].name);
        if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode) || mt_outdir_is_input(path, files))
            continue;
        if (same_file(path, baseline_file))
            continue; /* -o DIR --baseline DIR/baseline: this run's baseline stays */
        if (!remove_output(path, note, ctx))
            continue;
        const char *slash = strrchr(names[i].name, '/');
        if (slash) { /* baseline/: gone with its only file, kept when it holds others */
            snprintf(path, sizeof path, "%.4000s/%.*s", dir, (int)(slash - names[i].name), names[i].name);
            rmdir(path);
        }
        size_t k = strlen(removed);
        snprintf(removed + k, cap - k, "%s%s", k ? ", " : "", names[i].name);
    }
    char *last = strrchr(removed, ',');
    if (last) { /* "a, b, c" -> "a, b and c" */
        char tail[64];
        snprintf(tail, sizeof tail, " and%s", last + 1);
        snprintf(last, cap - (size_t)(last - removed), "%s", tail);
    }
}

int mt_outdir_check_inputs(const char *dir, const mt_outdir_name_t *names, size_t n, const mt_discover_list_t *files,
                           char *msg, size_t cap)
{
    for (size_t i = 0; i < n; i++) {
        char path[PATH_MAX];
        if (!names[i].keep)
            continue;
        snprintf(path, sizeof path, "%.4000s/%s", dir, names[i].name);
        if (mt_outdir_is_input(path, files)) {
            snprintf(msg, cap, "%.900s is one of the inputs: choose another -o", path);
            return 1;
        }
    }
    if (mt_outdir_is_input(dir, files)) {
        snprintf(msg, cap, "%.900s is one of the inputs", dir);
        return 1;
    }
    return 0;
}

const char *mt_outdir_merged_name(bool gzip)
{
    return gzip ? "merged.json.gz" : "merged.json";
}

size_t mt_outdir_written(const mt_outdir_outputs_t *w, mt_outdir_name_t *names)
{
    const mt_outdir_name_t t[] = {
        {mt_outdir_merged_name(w->merged_gzip), w->merge},
        {"report.json", true},
        {"report.html", w->html},
        {"timings.json", w->timings},
        {"compare.json", w->compare},
        {"baseline/report.json", w->baseline_report},
    };
    _Static_assert(sizeof t / sizeof t[0] <= MT_OUTDIR_N_NAMES, "MT_OUTDIR_N_NAMES");
    memcpy(names, t, sizeof t);
    return sizeof t / sizeof t[0];
}

size_t mt_outdir_owned(const mt_outdir_outputs_t *w, bool merge_failed, mt_outdir_name_t *names)
{
    const mt_outdir_name_t t[] = {
        {"report.json", true},
        {"report.html", w->html},
        {"merged.json.gz", (w->merge && w->merged_gzip) || merge_failed},
        {"merged.json", (w->merge && !w->merged_gzip) || merge_failed},
        {"timings.json", w->timings},
        {"baseline/report.json", w->baseline_report},
        {"compare.json", w->compare},
    };
    _Static_assert(sizeof t / sizeof t[0] <= MT_OUTDIR_N_NAMES, "MT_OUTDIR_N_NAMES");
    memcpy(names, t, sizeof t);
    return sizeof t / sizeof t[0];
}

int mt_outdir_prepare(const char *dir, const mt_outdir_outputs_t *w, const mt_discover_list_t *files,
                      const char *baseline_file, bool quiet, mt_outdir_note_fn note, void *ctx, char *msg, size_t cap)
{
    msg[0] = '\0';
    if (mt_outdir_make(dir, msg, cap))
        return 1;
    /* the merged trace and every other name this run writes, before
     * anything is written (a trace copied in as DIR/report.json was
     * loaded, then replaced) */
    mt_outdir_name_t names[MT_OUTDIR_N_NAMES];
    size_t n = mt_outdir_written(w, names);
    if (mt_outdir_check_inputs(dir, names, n, files, msg, cap))
        return 1;
    mt_outdir_repair(dir, files, w->baseline_report, baseline_file, quiet, note, ctx);
    size_t dead = mt_outdir_remove_dead_temps(dir);
    if (dead && !quiet && note) {
        char line[PATH_MAX + 200];
        snprintf(line, sizeof line, "removed %zu temporary file%s of an earlier run that was stopped, from %s", dead,
                 dead == 1 ? "" : "s", dir);
        note(ctx, line);
    }
    return 0;
}
