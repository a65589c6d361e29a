/* The input list as bytes between processes (discover.h): the list process
 * 0 broadcasts, and --local's records of every process with process 0's
 * union of them. Serial: the program moves the bytes. */
#define _DEFAULT_SOURCE /* strdup, st_mtim */
#include "mergetrace/discover.h"

#include <stdlib.h>
#include <string.h>

/* A file of the broadcast list: uint64 bytes, part; int32 owner; uint8
 * from_dir, kind; the path with its NUL. */
enum { FILE_HEAD = 8 + 8 + 4 + 1 + 1 };

int mt_discover_pack(const mt_discover_list_t *l, mt_buf_t *out)
{
    for (size_t i = 0; i < l->n; i++) {
        const mt_discover_file_t *f = &l->files[i];
        unsigned char h[FILE_HEAD];
        uint64_t part = (uint64_t)f->part;
        int32_t owner = f->owner;
        memcpy(h, &f->bytes, 8);
        memcpy(h + 8, &part, 8);
        memcpy(h + 16, &owner, 4);
        h[20] = f->from_dir;
        h[21] = (unsigned char)f->kind;
        if (mt_buf_append(out, h, sizeof h) || mt_buf_append(out, f->path, strlen(f->path) + 1))
            return -1;
    }
    return 0;
}

/* The NUL-terminated string at p within end, or NULL when it runs past. */
static const char *str_at(const char *p, const char *end)
{
    return p < end && memchr(p, '\0', (size_t)(end - p)) ? p : NULL;
}

int mt_discover_unpack(const void *bytes, size_t len, mt_discover_list_t *out)
{
    memset(out, 0, sizeof *out);
    const char *p = bytes, *end = p + len;
    while (p < end) {
        const char *path = end - p > FILE_HEAD ? str_at(p + FILE_HEAD, end) : NULL;
        if (!path || MT_GROW(out->files, out->cap, out->n + 1, 64) != MT_OK)
            return -1;
        mt_discover_file_t f = {0};
        uint64_t part;
        int32_t owner;
        memcpy(&f.bytes, p, 8);
        memcpy(&part, p + 8, 8);
        memcpy(&owner, p + 16, 4);
        f.part = (int64_t)part;
        f.owner = owner;
        f.from_dir = p[20] != 0;
        f.kind = (mt_discover_kind_t)(unsigned char)p[21];
        if (!(f.path = strdup(path)))
            return -1;
        out->files[out->n++] = f;
        p = path + strlen(path) + 1;
    }
    return 0;
}

/* --local's record of a file: uint64 bytes, dev, inode, int64 mtime (ns),
 * int64 part, int32 owner, uint8 from_dir, uint8 kind, then the host name,
 * the real path and the path, each with its NUL. Of a skipped path: uint8
 * 1 for a link, the path, why and the first path (or ""), each with its
 * NUL. */
enum { REC_HEAD = 5 * 8 + 4 + 2 };

int mt_discover_local_pack(const mt_discover_list_t *l, int me, mt_buf_t *files, mt_buf_t *skipped)
{
    char host[256];
    mt_discover_node(host, sizeof host);
    for (size_t i = 0; i < l->n; i++) {
        const mt_discover_file_t *f = &l->files[i];
        struct stat st;
        char *real = mt_discover_identity(f->path, &st);
        uint64_t head[5] = {f->bytes, real ? (uint64_t)st.st_dev : 0, real ? (uint64_t)st.st_ino : 0,
                            real ? (uint64_t)((int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec) : 0,
                            (uint64_t)f->part};
        int32_t owner = me;
        uint8_t flags[2] = {f->from_dir, (uint8_t)f->kind};
        int bad = mt_buf_append(files, head, sizeof head) || mt_buf_append(files, &owner, sizeof owner) ||
                  mt_buf_append(files, flags, sizeof flags) || mt_buf_append(files, host, strlen(host) + 1) ||
                  mt_buf_append(files, real ? real : "", real ? strlen(real) + 1 : 1) ||
                  mt_buf_append(files, f->path, strlen(f->path) + 1);
        free(real);
        if (bad)
            return -1;
    }
    for (size_t i = 0; i < l->n_skipped; i++) {
        const mt_discover_skip_t *k = &l->skipped[i];
        uint8_t link = k->first != NULL;
        const char *fp = k->first ? k->first : "";
        if (mt_buf_append(skipped, &link, 1) || mt_buf_append(skipped, k->path, strlen(k->path) + 1) ||
            mt_buf_append(skipped, k->why, strlen(k->why) + 1) || mt_buf_append(skipped, fp, strlen(fp) + 1))
            return -1;
    }
    return 0;
}

static int by_path_then_owner(const void *a, const void *b)
{
    const mt_discover_file_t *x = a, *y = b;
    int c = strcmp(x->path, y->path);
    return c ? c : (x->owner > y->owner) - (x->owner < y->owner);
}

static int by_skip_path(const void *a, const void *b)
{
    return strcmp(((const mt_discover_skip_t *)a)->path, ((const mt_discover_skip_t *)b)->path);
}

/* The skipped paths of every process into l->skipped (each path once: the
 * processes of one host given one directory all find its outputs), the
 * links not followed first, then the own outputs by path. */
static int union_skipped(mt_discover_list_t *l, const char *all, size_t len)
{
    const char *end = all + len;
    for (int pass = 1; pass >= 0; pass--) { /* links, then own outputs */
        size_t from = l->n_skipped;
        for (const char *p = all; p < end;) {
            const char *path = str_at(p + 1, end), *why = path ? str_at(path + strlen(path) + 1, end) : NULL,
                       *first = why ? str_at(why + strlen(why) + 1, end) : NULL;
            if (!first)
                return -1;
            bool link = *p != 0, seen = false;
            p = first + strlen(first) + 1;
            for (size_t i = 0; link == pass && i < l->n_skipped && !seen; i++)
                seen = !strcmp(l->skipped[i].path, path);
            if (link == pass && !seen && mt_discover_skip_add(l, path, why, link ? first : NULL))
                return -1;
        }
        if (!pass && l->n_skipped > from) /* l->skipped may be NULL */
            qsort(l->skipped + from, l->n_skipped - from, sizeof *l->skipped, by_skip_path);
    }
    return 0;
}

int mt_discover_local_union(const void *files, size_t len, const void *skipped, size_t slen, int n_procs,
                            mt_discover_list_t *out)
{
    mt_discover_list_t own_fr = {.fr = out->fr, .n_fr = out->n_fr, .cap_fr = out->cap_fr};
    out->fr = NULL;
    out->n_fr = out->cap_fr = 0;
    mt_discover_free(out);
    out->fr = own_fr.fr;
    out->n_fr = own_fr.n_fr;
    out->cap_fr = own_fr.cap_fr;
    mt_discover_rec_t *rec = NULL;
    size_t n = 0, cap = 0;
    int bad = 0;
    const char *all = files, *end = all + len;
    for (const char *p = all; !bad && p < end;) {
        mt_discover_rec_t r = {0};
        uint64_t head[5];
        int32_t owner;
        const char *key = end - p > REC_HEAD ? str_at(p + REC_HEAD, end) : NULL;
        const char *real = key ? str_at(key + strlen(key) + 1, end) : NULL;
        const char *path = real ? str_at(real + strlen(real) + 1, end) : NULL;
        if (!path) {
            bad = 1;
            break;
        }
        memcpy(head, p, sizeof head);
        memcpy(&owner, p + 40, sizeof owner);
        r.f.bytes = head[0];
        r.dev = head[1];
        r.ino = head[2];
        r.mtime_ns = (int64_t)head[3];
        r.f.owner = owner;
        r.f.from_dir = p[44] != 0;
        r.f.kind = (mt_discover_kind_t)(uint8_t)p[45];
        r.f.part = (int64_t)head[4];
        r.key = key; /* host, real path: in files, alive until the end */
        r.f.path = strdup(path);
        p = path + strlen(path) + 1;
        if (!r.f.path || MT_GROW(rec, cap, n + 1, 64) != MT_OK) {
            free(r.f.path);
            bad = 1;
        } else {
            rec[n++] = r;
        }
    }
    long kept = bad ? -1 : mt_discover_share_node(rec, n, n_procs);
    if (kept < 0) {
        for (size_t i = 0; i < n; i++)
            free(rec[i].f.path);
        bad = 1;
    }
    for (long i = 0; i < kept && !bad; i++) {
        if (MT_GROW(out->files, out->cap, out->n + 1, 64) != MT_OK) {
            for (long k = i; k < kept; k++)
                free(rec[k].f.path);
            bad = 1;
        } else {
            out->files[out->n++] = rec[i].f;
        }
    }
    free(rec);
    if (!bad && out->n) /* out->files NULL when no process listed a trace */
        qsort(out->files, out->n, sizeof *out->files, by_path_then_owner);
    if (!bad)
        bad = union_skipped(out, skipped, slen) != 0;
    return bad ? -1 : 0;
}
