/* Rank of a trace file: rank map, distributedInfo.rank, or the file name
 * (a merged trace's "<file>#rank<R>" part names included). */
#define _POSIX_C_SOURCE 200809L
#include "mergetrace/rank.h"
#include "mergetrace/buf.h"
#include "mergetrace/loader.h"
#include "base/errpos.h"
#include "base/partpath.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const char *mt_rank_source_str(mt_rank_source_t s)
{
    switch (s) {
    case MT_RANK_FROM_TRACE: return "distributedInfo";
    case MT_RANK_FROM_MAP: return "rank-map";
    case MT_RANK_FROM_FILENAME: return "file name";
    case MT_RANK_FROM_DEFAULT: return "default";
    case MT_RANK_FROM_NCCL: return "NCCL communicator";
    case MT_RANK_FROM_MERGED: return "merged trace";
    default: return "none";
    }
}

static const char *base_name(const char *path)
{
    const char *b = strrchr(path, '/');
    return b ? b + 1 : path;
}

static bool word_at(const char *s, size_t n, size_t i, const char *w)
{
    size_t l = strlen(w);
    if (i + l > n)
        return false;
    for (size_t k = 0; k < l; k++) {
        char c = s[i + k];
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if (c != w[k])
            return false;
    }
    return true;
}

int64_t mt_rank_from_filename(const char *path)
{
    const char *b = base_name(path);
    size_t n = strlen(b);
    int64_t found = -1;
    static const char *const words[] = {"rank", "worker"};
    for (size_t i = 0; i < n; i++) {
        for (size_t w = 0; w < 2; w++) {
            if (!word_at(b, n, i, words[w]))
                continue;
            size_t j = i + strlen(words[w]);
            if (j < n && (b[j] == '-' || b[j] == '_'))
                j++;
            if (j >= n || (unsigned)(b[j] - '0') > 9)
                continue;
            int64_t v = 0;
            bool ok = true;
            for (; j < n && (unsigned)(b[j] - '0') <= 9; j++) {
                if (v > (INT32_MAX - 9) / 10) {
                    ok = false;
                    break;
                }
                v = v * 10 + (b[j] - '0');
            }
            if (ok)
                found = v; /* the last one wins: "run_rank0/worker3" style names */
        }
    }
    return found;
}

typedef struct entry {
    char *path;
    int64_t rank;
} entry_t;

struct mt_rankmap {
    entry_t *ents;
    size_t n;
};

void mt_rankmap_free(mt_rankmap_t *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n; i++)
        free(m->ents[i].path);
    free(m->ents);
    free(m);
}

mt_status_t mt_rankmap_parse(const char *text, size_t len, const char *name, mt_rankmap_t **out, mt_error_t *err)
{
    *out = NULL;
    mt_error_clear(err);
    if (err && name)
        snprintf(err->path, sizeof err->path, "%s", name);
    mt_rankmap_t *m = calloc(1, sizeof *m);
    if (!m)
        return mt_error_set(err, MT_ERR_NOMEM, "rank map");
    size_t cap = 0, lineno = 0;
    for (size_t i = 0; i < len;) {
        size_t j = i;
        while (j < len && text[j] != '\n')
            j++;
        lineno++;
        const char *s = text + i, *e = text + j;
        size_t line_off = i;
        i = j + 1;
        while (s < e && (*s == ' ' || *s == '\t'))
            s++;
        while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
            e--;
        if (s == e || *s == '#')
            continue;
        if (memchr(s, '\0', (size_t)(e - s))) {
            mt_rankmap_free(m);
            mt_errpos_set(err, NULL, (int64_t)line_off, (int64_t)lineno, 1);
            return mt_error_set(err, MT_ERR_FORMAT, "line %zu: NUL byte in the rank map", lineno);
        }
        /* The rank is the last field, so paths may hold spaces. */
        const char *r = e;
        while (r > s && (unsigned)(r[-1] - '0') <= 9)
            r--;
        const char *pe = r;
        while (pe > s && (pe[-1] == ' ' || pe[-1] == '\t'))
            pe--;
        if (r == e || pe == r || pe == s || e - r > 9) {
            mt_rankmap_free(m);
            mt_errpos_set(err, NULL, (int64_t)line_off, (int64_t)lineno, 1);
            return mt_error_set(err, MT_ERR_FORMAT, "line %zu: expected \"path rank\" (a path, blanks, a rank from 0 to 999999999)",
                                lineno);
        }
        int64_t rank = 0;
        for (const char *q = r; q < e; q++)
            rank = rank * 10 + (*q - '0');
        if (MT_GROW(m->ents, cap, m->n + 1, 16)) {
            mt_rankmap_free(m);
            return mt_error_set(err, MT_ERR_NOMEM, "rank map");
        }
        m->ents[m->n].path = strndup(s, (size_t)(pe - s));
        if (!m->ents[m->n].path) {
            mt_rankmap_free(m);
            return mt_error_set(err, MT_ERR_NOMEM, "rank map");
        }
        m->ents[m->n++].rank = rank;
    }
    *out = m;
    return MT_OK;
}

int64_t mt_rankmap_lookup(const mt_rankmap_t *m, const char *path)
{
    if (!m)
        return -1;
    for (size_t i = 0; i < m->n; i++)
        if (strcmp(m->ents[i].path, path) == 0)
            return m->ents[i].rank;
    const char *b = base_name(path);
    for (size_t i = 0; i < m->n; i++)
        if (strcmp(base_name(m->ents[i].path), b) == 0)
            return m->ents[i].rank;
    return -1;
}

mt_status_t mt_rank_resolve(const mt_trace_t *t, const char *path, const mt_rankmap_t *map, int64_t *rank,
                            mt_rank_source_t *src, mt_error_t *err)
{
    int64_t r = mt_rankmap_lookup(map, path);
    if (r >= 0) {
        *rank = r;
        *src = MT_RANK_FROM_MAP;
        return MT_OK;
    }
    size_t fl;
    int32_t part = mt_merged_part_parse(path, &fl);
    if (part >= 0) {
        *rank = part;
        *src = MT_RANK_FROM_MERGED;
        return MT_OK;
    }
    if (t && t->info.rank >= 0) {
        *rank = t->info.rank;
        *src = MT_RANK_FROM_TRACE;
        return MT_OK;
    }
    r = mt_rank_from_filename(path);
    if (r >= 0) {
        *rank = r;
        *src = MT_RANK_FROM_FILENAME;
        return MT_OK;
    }
    *src = MT_RANK_FROM_NONE;
    if (err)
        snprintf(err->path, sizeof err->path, "%s", path);
    return mt_error_set(err, MT_ERR_NO_RANK,
                        "no distributedInfo.rank and no rank number in the file name; "
                        "give one with --rank-map FILE (lines \"path rank\")");
}

size_t mt_merged_part_path(char *dst, size_t cap, const char *path, int32_t rank)
{
    int n = snprintf(dst, cap, "%s#rank%d", path, (int)rank);
    return n < 0 ? 0 : (size_t)n;
}

int32_t mt_merged_part_parse(const char *path, size_t *file_len)
{
    size_t n;
    int64_t r = mt_part_split(path, "rank", &n);
    if (r < 0 || r > INT32_MAX)
        return -1;
    struct stat sb;
    char *file = malloc(n + 1);
    if (!file)
        return -1;
    memcpy(file, path, n);
    file[n] = '\0';
    bool ok = stat(file, &sb) == 0 && S_ISREG(sb.st_mode);
    free(file);
    if (!ok)
        return -1;
    *file_len = n;
    return (int32_t)r;
}
