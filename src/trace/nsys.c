/* The Nsight Systems reader: one process of an `nsys export --type sqlite`
 * file becomes an mt_trace_t shaped like a Kineto trace of that process
 * (docs/FORMATS.md, "Nsight Systems exports"). Tables and columns are found
 * by name, so exports of several schema eras load; one pass per table with
 * prepared statements, in the table's own (time) order, for all the parts
 * (processes) of the file read together: each row goes to its process's
 * trace. */
#define _POSIX_C_SOURCE 200809L
#include "mergetrace/nsys.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/partpath.h"
#include "mergetrace/buf.h"

size_t mt_nsys_part_path(char *dst, size_t cap, const char *path, int64_t pid)
{
    int n = snprintf(dst, cap, "%s#pid%lld", path, (long long)pid);
    return n < 0 ? 0 : (size_t)n;
}

bool mt_nsys_sniff(const void *head, size_t n)
{
    static const char magic[16] = "SQLite format 3"; /* and its NUL */
    return head && n >= sizeof magic && memcmp(head, magic, sizeof magic) == 0;
}

/* Split "<file>#pid<N>" (when path itself is not a file). */
static mt_status_t split_part(const char *path, char **file, int64_t *pid)
{
    *file = NULL;
    *pid = -1;
    size_t n;
    int64_t v = mt_part_split(path, "pid", &n);
    if (v < 0)
        return MT_OK;
    if (!(*file = strndup(path, n)))
        return MT_ERR_NOMEM;
    *pid = v;
    return MT_OK;
}

size_t mt_nsys_part_file(const char *path)
{
    char *file = NULL;
    int64_t pid;
    if (split_part(path, &file, &pid) || !file)
        return 0;
    size_t n = strlen(file);
    free(file);
    return n;
}

#ifndef MT_HAVE_SQLITE

bool mt_nsys_available(void)
{
    return false;
}

static mt_status_t no_sqlite(const char *name, mt_error_t *err)
{
    mt_error_clear(err);
    if (err)
        snprintf(err->path, sizeof err->path, "%s", name ? name : "");
    return mt_error_set(err, MT_ERR_NSYS,
                        "an SQLite file (Nsight Systems export?), but this mergetrace was built without SQLite "
                        "(install libsqlite3-dev and rebuild)");
}

mt_status_t mt_nsys_procs(const char *path, mt_nsys_proc_t **procs, size_t *n, mt_error_t *err)
{
    *procs = NULL;
    *n = 0;
    return no_sqlite(path, err);
}

mt_status_t mt_nsys_load(const char *path, const mt_load_opts_t *opts, mt_trace_t **out, mt_error_t *err)
{
    (void)opts;
    *out = NULL;
    return no_sqlite(path, err);
}

mt_status_t mt_nsys_load_buffer(const void *buf, size_t len, const char *name, const mt_load_opts_t *opts,
                                mt_trace_t **out, mt_error_t *err)
{
    (void)buf;
    (void)len;
    (void)opts;
    *out = NULL;
    return no_sqlite(name, err);
}

mt_status_t mt_nsys_load_parts(const char *const *paths, size_t n, const mt_load_opts_t *opts, mt_trace_t **out,
                               size_t *failed, mt_error_t *err)
{
    (void)opts;
    *failed = 0;
    for (size_t k = 0; k < n; k++)
        out[k] = NULL;
    return no_sqlite(n ? paths[0] : NULL, err);
}

#else /* MT_HAVE_SQLITE */

#include <sqlite3.h>

#include "base/bigmem.h"
#include "base/text.h"
#include "mergetrace/classify.h"
#include "mergetrace/link.h"

bool mt_nsys_available(void)
{
    return true;
}

/* nsys's serialised ids: bits 24..47 hold the OS pid, 0..23 the tid. */
#define GID_PID(g) (((g) >> 24) & 0xFFFFFF)
#define GID_TID(g) ((g)&0xFFFFFF)
#define GID_PROC(g) ((g) & ~(int64_t)0xFFFFFF)

/* StringIds id -> strtab id + 1 in v[slot], 0 = not read yet. The slot
 * of an id is the id itself when the ids are dense (sids NULL), else its
 * index in sids, the table's ids in order: real exports number their
 * strings sparsely too (126 strings up to id 3.4 M), and a map indexed by
 * id then grew to 16 MB and a fifth of a load. */
typedef struct smap {
    uint32_t *v;
} smap_t;

/* One process being read: its trace and what is learnt of it on the way. */
typedef struct part {
    mt_trace_t *t;
    const mt_load_opts_t *opts;
    const char *name;      /* for messages: the part path as given */
    int64_t want_pid;      /* the OS pid asked for, -1: the file's only process */
    int64_t gpid;          /* its process bits, when the reader filters */
    size_t idx;            /* its place in the process list */
    smap_t names, api_names;
    uint32_t *domains;     /* NVTX domainId -> strtab id (DomainCreate rows), small ids only */
    size_t n_domains;
    uint64_t open_ranges;  /* NVTX ranges without an end: left out */
    int64_t mpi_rank;      /* from NVTX "MPI Rank N", -1 */
    uint32_t thread_name;  /* "thread_name" in its strings */
} part_t;

/* The reader of one file: the statements and caches its processes share;
 * every table is read once, its rows dispatched to the parts. */
typedef struct rd {
    sqlite3 *db;
    mt_error_t *err;
    const mt_load_opts_t *opts; /* the first part's: should_stop */
    part_t *parts;
    size_t n_parts;
    part_t *p;             /* the part of the row being read */
    bool filter;           /* read only the rows of the parts' processes */
    bool one_check;        /* the file must hold one GPU process: checked in the kernel pass */
    bool one_seen;         /* a kernel row's process seen (one_gpid) */
    bool one_several;      /* ... and a kernel of another one */
    int64_t one_gpid;
    sqlite3_stmt *str_stmt;
    int64_t *sids;         /* StringIds ids in order when sparse, else NULL */
    size_t n_slots;        /* slots of each map; 0 before string_slots */
    bool slots_read;
    mt_buf_t raw;          /* one event as Kineto JSON, for on_event */
    mt_buf_t tables;       /* the database's table names, NUL-separated */
    uint64_t rows;
} rd_t;

static mt_status_t db_fail(rd_t *r, const char *what)
{
    int code = sqlite3_errcode(r->db);
    if (code == SQLITE_CORRUPT || code == SQLITE_NOTADB)
        return mt_error_set(r->err, MT_ERR_NSYS, "the SQLite database is truncated or corrupt (%s, %s)",
                            sqlite3_errmsg(r->db), what);
    if (code == SQLITE_NOMEM)
        return mt_error_set(r->err, MT_ERR_NOMEM, "SQLite: %s", what);
    if (code == SQLITE_INTERRUPT)
        return mt_error_set(r->err, MT_ERR_CANCELLED, "stopped: another process failed");
    return mt_error_set(r->err, MT_ERR_IO, "SQLite: %s (%s)", sqlite3_errmsg(r->db), what);
}

/* The end of a statement's row loop: st when the loop stopped on an error
 * of ours, else SQLite's own verdict (rc: the last sqlite3_step). */
static mt_status_t step_done(rd_t *r, sqlite3_stmt *s, int rc, mt_status_t st, const char *table)
{
    if (st == MT_OK && rc != SQLITE_DONE)
        st = db_fail(r, table);
    sqlite3_finalize(s);
    return st;
}

/* A column that may be NULL, dflt then (sqlite3_column_int64 itself
 * gives 0 for NULL: used directly where 0 is the default). */
static int64_t col_i64(sqlite3_stmt *s, int i, int64_t dflt)
{
    return sqlite3_column_type(s, i) == SQLITE_NULL ? dflt : sqlite3_column_int64(s, i);
}

/* The names of the database's tables, read once (tables: NUL-separated
 * names); every look-up below is then a scan of that short list. */
static mt_status_t read_tables(rd_t *r)
{
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(r->db, "SELECT name FROM sqlite_master WHERE type='table'", -1, &s, NULL) != SQLITE_OK)
        return db_fail(r, "reading the schema");
    int rc;
    mt_status_t st = MT_OK;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW && !st) {
        const char *n = (const char *)sqlite3_column_text(s, 0);
        if (n && (st = mt_buf_append(&r->tables, n, strlen(n) + 1)))
            st = mt_error_set(r->err, st, "table list");
    }
    return step_done(r, s, rc, st, "reading the schema");
}

static bool has_table(const rd_t *r, const char *name)
{
    for (size_t i = 0; i < r->tables.len; i += strlen(r->tables.data + i) + 1)
        if (strcmp(r->tables.data + i, name) == 0)
            return true;
    return false;
}

/* Which of want[0..n) the table has (have[i]). */
static mt_status_t columns(rd_t *r, const char *table, const char *const *want, size_t n, bool *have)
{
    char sql[160];
    snprintf(sql, sizeof sql, "PRAGMA table_info(\"%s\")", table);
    sqlite3_stmt *s = NULL;
    memset(have, 0, n * sizeof *have);
    if (sqlite3_prepare_v2(r->db, sql, -1, &s, NULL) != SQLITE_OK)
        return db_fail(r, table);
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        const char *c = (const char *)sqlite3_column_text(s, 1);
        for (size_t i = 0; c && i < n; i++)
            if (strcmp(c, want[i]) == 0)
                have[i] = true;
    }
    sqlite3_finalize(s);
    return rc == SQLITE_DONE ? MT_OK : db_fail(r, table);
}

/* SELECT of want[0..n) (NULL for the columns the table lacks; n < 24)
 * from table, restricted to the parts' processes when filtering: by
 * globalPid, or by the process bits of globalTid (proc_col). required[i]:
 * a missing column is an error. *pcol: the result column that says whose
 * a row is (proc_col, selected as column n), -1 when every part takes
 * every row (no filter, or a table not split by process); extra (may be
 * NULL): one more column to select after want's, *extra_col its index or
 * -1 when the table lacks it. */
static mt_status_t prepare_select(rd_t *r, const char *table, const char *const *want, const bool *required,
                                  size_t n, const char *proc_col, const char *extra, sqlite3_stmt **out, int *pcol,
                                  int *extra_col)
{
    const char *cols[24];
    bool have[24];
    *out = NULL;
    *pcol = -1;
    if (extra_col)
        *extra_col = -1;
    memcpy(cols, want, n * sizeof *cols);
    cols[n] = proc_col ? proc_col : "";
    cols[n + 1] = extra ? extra : "";
    mt_status_t st = columns(r, table, cols, n + 2, have);
    if (st)
        return st;
    mt_buf_t q = {0};
    st = mt_buf_append(&q, "SELECT ", 7);
    for (size_t i = 0; i < n && !st; i++) {
        if (!have[i] && required[i]) {
            mt_buf_free(&q);
            return mt_error_set(r->err, MT_ERR_NSYS, "table %s has no column %s (an nsys export schema we do not know)",
                                table, want[i]);
        }
        char part[80];
        int k = snprintf(part, sizeof part, "%s%s", i ? "," : "", have[i] ? want[i] : "NULL");
        st = mt_buf_append(&q, part, (size_t)k);
    }
    /* Without the column the table is not split by process. */
    bool by_pid = proc_col && r->filter && have[n];
    size_t next = n;
    char part[120];
    int k;
    if (by_pid && r->n_parts > 1) {
        /* several parts: say whose each row is (one part: the WHERE does),
         * by a column already selected when there is one */
        for (size_t i = 0; i < n && *pcol < 0; i++)
            if (have[i] && strcmp(want[i], proc_col) == 0)
                *pcol = (int)i;
        if (*pcol < 0 && !st) {
            k = snprintf(part, sizeof part, ",%s", proc_col);
            st = mt_buf_append(&q, part, (size_t)k);
            *pcol = (int)next++;
        }
    }
    if (extra && have[n + 1] && !st) {
        k = snprintf(part, sizeof part, ",%s", extra);
        st = mt_buf_append(&q, part, (size_t)k);
        *extra_col = (int)next++;
    }
    /* NOT INDEXED: rows in the table's own order, whatever indexes a tool
     * added to the file (nsys-ai's on globalTid would otherwise order a
     * part's rows by thread, and an or'ed WHERE may be planned otherwise
     * than one part's). */
    k = snprintf(part, sizeof part, " FROM %s NOT INDEXED", table);
    if (!st)
        st = mt_buf_append(&q, part, (size_t)k);
    /* The parts' processes, ?1.. ?n: the same test per row as one part's
     * load alone, or'ed. */
    for (size_t i = 0; by_pid && i < r->n_parts && !st; i++) {
        const char *pre = i ? " OR " : " WHERE ";
        if (strcmp(proc_col, "globalPid") == 0)
            k = snprintf(part, sizeof part, "%sglobalPid = ?%zu", pre, i + 1);
        else
            k = snprintf(part, sizeof part, "%s%s >= ?%zu AND %s <= ?%zu + 16777215", pre, proc_col, i + 1, proc_col,
                         i + 1);
        st = mt_buf_append(&q, part, (size_t)k);
    }
    if (!st)
        st = mt_buf_append(&q, "", 1);
    if (st) {
        mt_buf_free(&q);
        return mt_error_set(r->err, MT_ERR_NOMEM, "query text");
    }
    int rc = sqlite3_prepare_v2(r->db, q.data, -1, out, NULL);
    mt_buf_free(&q);
    if (rc != SQLITE_OK)
        return db_fail(r, table);
    for (size_t i = 0; by_pid && i < r->n_parts; i++)
        sqlite3_bind_int64(*out, (int)i + 1, r->parts[i].gpid);
    return MT_OK;
}

/* Whose the current row of s is, as the parts' gpid: its globalPid, or
 * the process bits of its globalTid (tid); 0 when every part takes every
 * row (pcol < 0). One integer read is exact: the row came through the
 * WHERE of prepare_select, so its value is NULL-free and numeric, and a
 * real one that passed (= a gpid, or within a gpid's 2^24 tids) truncates
 * into the same part's test. */
static inline int64_t row_key(sqlite3_stmt *s, int pcol, bool tid)
{
    if (pcol < 0)
        return 0;
    int64_t v = sqlite3_column_int64(s, pcol);
    return tid ? GID_PROC(v) : v;
}

/* The next part, from *k on, that takes a row of key (row_key; pcol < 0:
 * every part); sets r->p. False when none is left. Inline: it runs twice
 * per row, and a file of one process must not pay a call for it (1.8% of
 * a load's instructions as a call). */
static inline bool next_part(rd_t *r, int pcol, int64_t key, size_t *k)
{
    for (; *k < r->n_parts; (*k)++)
        if (pcol < 0 || r->parts[*k].gpid == key) {
            r->p = &r->parts[(*k)++];
            return true;
        }
    return false;
}

/* Strip nsys's API version suffix: "cudaLaunchKernel_v7000" ->
 * "cudaLaunchKernel", as Kineto names the call. */
static size_t api_len(const char *s, size_t n)
{
    size_t i = n;
    while (i > 0 && (unsigned)(s[i - 1] - '0') <= 9)
        i--;
    if (i < n && i >= 2 && s[i - 1] == 'v' && s[i - 2] == '_')
        return i - 2;
    return n;
}

/* How StringIds ids map to slots (see smap_t): the table's largest id
 * (one b-tree seek); when it is large, its size (a walk over its pages),
 * and when the ids are sparse, the ids themselves. A map is at most
 * max(64 Ki, 4 x the strings + 4 Ki) slots. */
static mt_status_t string_slots(rd_t *r)
{
    r->slots_read = true;
    if (!has_table(r, "StringIds"))
        return MT_OK;
    sqlite3_stmt *s;
    int64_t max = -1, count = 0;
    for (int q = 0; q < 2; q++) {
        if (sqlite3_prepare_v2(r->db, q ? "SELECT count(*) FROM StringIds" : "SELECT max(id) FROM StringIds", -1, &s,
                               NULL) != SQLITE_OK)
            return db_fail(r, "StringIds");
        int rc = sqlite3_step(s);
        if (rc == SQLITE_ROW) {
            *(q ? &count : &max) = col_i64(s, 0, -1);
            rc = SQLITE_DONE;
        }
        mt_status_t st = step_done(r, s, rc, MT_OK, "StringIds");
        if (st || max < 0)
            return st;
        if (max < 65536 || (q && max < 4 * count + 4096)) {
            r->n_slots = (size_t)max + 1;
            return MT_OK;
        }
    }
    if (count <= 0)
        return MT_OK;
    if (!(r->sids = malloc((size_t)count * sizeof *r->sids)))
        return mt_error_set(r->err, MT_ERR_NOMEM, "string ids");
    if (sqlite3_prepare_v2(r->db, "SELECT id FROM StringIds ORDER BY id", -1, &s, NULL) != SQLITE_OK)
        return db_fail(r, "StringIds");
    size_t n = 0;
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW && n < (size_t)count)
        r->sids[n++] = sqlite3_column_int64(s, 0);
    if (rc == SQLITE_ROW)
        rc = SQLITE_DONE; /* more rows than counted: cannot be, read no further */
    r->n_slots = n;
    return step_done(r, s, rc, MT_OK, "StringIds");
}

/* The slot of id, or false when it has none. */
static bool string_slot(const rd_t *r, int64_t id, size_t *slot)
{
    if (!r->sids) {
        *slot = (size_t)id;
        return id >= 0 && (size_t)id < r->n_slots;
    }
    size_t lo = 0, hi = r->n_slots;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->sids[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    *slot = lo;
    return lo < r->n_slots && r->sids[lo] == id;
}

/* The strtab id of StringIds row id (an API name when api); each id is
 * read from SQLite once. */
static mt_status_t string_id(rd_t *r, int64_t id, bool api, uint32_t *out)
{
    smap_t *m = api ? &r->p->api_names : &r->p->names;
    *out = MT_STR_NONE;
    mt_status_t st;
    if (!r->slots_read && (st = string_slots(r)))
        return st;
    size_t slot;
    bool cached = string_slot(r, id, &slot);
    if (cached && m->v && m->v[slot]) {
        *out = m->v[slot] - 1;
        return MT_OK;
    }
    if (!r->str_stmt &&
        sqlite3_prepare_v2(r->db, "SELECT value FROM StringIds WHERE id = ?1", -1, &r->str_stmt, NULL) != SQLITE_OK)
        return db_fail(r, "StringIds");
    sqlite3_reset(r->str_stmt);
    sqlite3_bind_int64(r->str_stmt, 1, id);
    int rc = sqlite3_step(r->str_stmt);
    const char *s = "";
    size_t n = 0;
    if (rc == SQLITE_ROW) {
        s = (const char *)sqlite3_column_text(r->str_stmt, 0);
        n = (size_t)sqlite3_column_bytes(r->str_stmt, 0);
        if (!s)
            s = "", n = 0;
    } else if (rc != SQLITE_DONE) {
        return db_fail(r, "StringIds");
    }
    if (api)
        n = api_len(s, n);
    if ((st = mt_strtab_intern(r->p->t->strings, s, n, out)))
        return mt_error_set(r->err, st, "string table");
    if (cached) {
        if (!m->v && !(m->v = calloc(r->n_slots, sizeof *m->v)))
            return mt_error_set(r->err, MT_ERR_NOMEM, "string map");
        m->v[slot] = *out + 1;
    }
    return MT_OK;
}

/* ------------------------------------------------------------ events */

static mt_status_t raw_put(rd_t *r, const char *s)
{
    return mt_buf_append(&r->raw, s, strlen(s));
}

static mt_status_t raw_num(rd_t *r, int64_t v, size_t *off, size_t *len)
{
    char b[32];
    size_t n = mt_fmt_i64(v, b);
    if (off)
        *off = r->raw.len, *len = n;
    return mt_buf_append(&r->raw, b, n);
}

static mt_status_t raw_us(rd_t *r, int64_t ns, size_t *off, size_t *len)
{
    char b[32];
    size_t n = mt_fmt_us(ns, b);
    *off = r->raw.len;
    *len = n;
    return mt_buf_append(&r->raw, b, n);
}

/* One event: counted, handed to on_event as Kineto JSON (args: a JSON
 * object's inside, or NULL), stored unless no_store. */
static mt_status_t emit(rd_t *r, const mt_event_t *e, const char *args)
{
    mt_trace_t *t = r->p->t;
    t->stats.by_ph[e->ph]++;
    t->stats.by_cat[e->cat]++;
    if (r->p->opts->on_event) {
        mt_raw_event_t raw = {0};
        mt_status_t st = MT_OK;
        r->raw.len = 0;
        size_t nl;
        const char *nm = mt_strtab_get(t->strings, e->name, &nl);
        if (e->ph == MT_PH_M) {
            st = raw_put(r, "{\"name\":");
        } else {
            st = raw_put(r, e->ph == MT_PH_X ? "{\"ph\":\"X\",\"cat\":\"" : "{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"");
            if (!st)
                st = raw_put(r, mt_cat_str((mt_cat_t)e->cat));
            if (!st)
                st = raw_put(r, "\",\"name\":");
        }
        if (!st)
            st = mt_json_string(nm, nl, mt_buf_write, &r->raw);
        if (!st && e->ph == MT_PH_M)
            st = raw_put(r, ",\"ph\":\"M\"");
        if (!st)
            st = raw_put(r, ",\"pid\":");
        if (!st)
            st = raw_num(r, mt_event_pid(t, e), &raw.pid_off, &raw.pid_len);
        if (!st)
            st = raw_put(r, ",\"tid\":");
        if (!st)
            st = raw_num(r, mt_event_tid(t, e), &raw.tid_off, &raw.tid_len);
        if (!st && e->ph != MT_PH_M) {
            st = raw_put(r, ",\"ts\":");
            if (!st)
                st = raw_us(r, e->ts, &raw.ts_off, &raw.ts_len);
            if (!st && e->ph == MT_PH_X) {
                st = raw_put(r, ",\"dur\":");
                if (!st)
                    st = raw_us(r, e->dur, &raw.dur_off, &raw.dur_len);
            }
        }
        if (!st && args) {
            st = raw_put(r, ",\"args\":{");
            if (!st)
                st = raw_put(r, args);
            if (!st)
                st = raw_put(r, "}");
        }
        if (!st)
            st = raw_put(r, "}");
        if (st)
            return mt_error_set(r->err, st, "event text");
        raw.text = r->raw.data;
        raw.len = r->raw.len;
        st = r->p->opts->on_event(r->p->opts->on_event_ctx, t, e, &raw, r->err);
        if (st)
            return st;
    }
    if (r->p->opts->no_store) {
        t->n_wide = 0; /* nothing is kept: no event but this one named a slot */
    } else {
        if (t->n_events >= UINT32_MAX - 1)
            return mt_error_set(r->err, MT_ERR_LIMIT, "more than 2^32 events in one process");
        if (MT_GROW_BIG(t->events, t->cap_events, t->n_events + 1, 4096))
            return mt_error_set(r->err, MT_ERR_NOMEM, "event table");
        mt_event_t *d = &t->events[t->n_events++];
        *d = *e;
    }
    return MT_OK;
}

static bool should_stop(rd_t *r)
{
    return (++r->rows & 0xFFFF) == 0 && r->opts->should_stop && r->opts->should_stop(r->opts->should_stop_ctx);
}

/* e's times from columns 0 (start) and 1 (end) of s, a row of table:
 * each an integer (a text or a blob there was read as 0 without a word),
 * within MT_TIME_LIMIT_NS of 0 (every later sum or difference of two
 * times must fit int64, as for a Kineto trace). MT_OK, or MT_ERR_RANGE
 * set in r->err. */
static mt_status_t set_times(rd_t *r, mt_event_t *e, sqlite3_stmt *s, const char *table)
{
    for (int c = 0; c < 2; c++)
        if (sqlite3_column_type(s, c) != SQLITE_INTEGER)
            return mt_error_set(r->err, MT_ERR_RANGE, "%s: a row whose %s is not an integer (ns)", table,
                                c ? "end" : "start");
    int64_t start = sqlite3_column_int64(s, 0), end = sqlite3_column_int64(s, 1);
    if (start > MT_TIME_LIMIT_NS || start < -MT_TIME_LIMIT_NS || end > MT_TIME_LIMIT_NS || end < -MT_TIME_LIMIT_NS)
        return mt_error_set(r->err, MT_ERR_RANGE, "%s: a row whose start or end is more than 2^62 ns (146 years) from 0",
                            table);
    e->ts = start;
    if (end < start) {
        r->p->t->stats.neg_dur++;
        e->flags |= MT_EV_NEG_DUR;
        e->dur = 0;
    } else {
        e->dur = end - start;
    }
    e->flags |= MT_EV_HAS_DUR;
    return MT_OK;
}

/* args[0..cap) = "\"key\":" and s[0..n) as a JSON string, cut to 200 bytes
 * (an arg for the merged trace; the model keeps the whole string); ""
 * when it does not fit. */
static void string_arg(char *args, size_t cap, const char *key, const char *s, size_t n)
{
    mt_buf_t b = {0};
    args[0] = '\0';
    if (mt_json_string(s, n > 200 ? 200 : n, mt_buf_write, &b) == MT_OK && b.len < 250)
        snprintf(args, cap, "\"%s\":%.*s", key, (int)b.len, b.data);
    mt_buf_free(&b);
}

typedef enum gpu_kind { GK_KERNEL, GK_MEMCPY, GK_MEMSET, GK_SYNC } gpu_kind_t;

static const char *memcpy_name(int64_t kind)
{
    static const char *const n[] = {"Memcpy", "Memcpy HtoD", "Memcpy DtoH", "Memcpy HtoA", "Memcpy AtoH",
                                    "Memcpy AtoA", "Memcpy AtoD", "Memcpy DtoA", "Memcpy DtoD", "Memcpy HtoH",
                                    "Memcpy PtoP", "Memcpy HtoD (unified)", "Memcpy DtoH (unified)",
                                    "Memcpy DtoD (unified)"};
    return kind >= 0 && kind < (int64_t)(sizeof n / sizeof n[0]) ? n[kind] : n[0];
}

static const char *sync_name(int64_t kind)
{
    static const char *const n[] = {"Unknown Sync", "Event Sync", "Stream Wait Event", "Stream Sync", "Context Sync"};
    return kind >= 0 && kind < (int64_t)(sizeof n / sizeof n[0]) ? n[kind] : n[0];
}

/* Kernels, memcpy, memset, synchronisation: GPU activity on (device,
 * stream), as Kineto writes it (pid = device, tid = stream). */
static mt_status_t read_gpu(rd_t *r, const char *table, gpu_kind_t kind)
{
    mt_status_t st;
    if (!has_table(r, table))
        return MT_OK;
    /* args only for a callback (the merged writer): formatting them for
     * every row was a third of the load, and SQLite decodes every column
     * selected, so the columns only args need come last and only then. */
    bool fmt = r->p->opts->on_event != NULL;
    /* 0 start, 1 end, 2 deviceId, 3 streamId, 4 correlationId, then per kind */
    const char *want[12] = {"start", "end", "deviceId", "streamId", "correlationId"};
    bool req[12] = {true, true, true, true, false};
    size_t n = 5;
    switch (kind) {
    case GK_KERNEL:
        want[n] = "demangledName", req[n++] = false;
        want[n] = "shortName", req[n++] = false;
        if (fmt) {
            want[n] = "gridX", req[n++] = false;
            want[n] = "gridY", req[n++] = false;
            want[n] = "gridZ", req[n++] = false;
            want[n] = "blockX", req[n++] = false;
        }
        break;
    case GK_MEMCPY:
        want[n] = "copyKind", req[n++] = false;
        if (fmt)
            want[n] = "bytes", req[n++] = false;
        break;
    case GK_MEMSET:
        if (fmt)
            want[n] = "bytes", req[n++] = false;
        break;
    case GK_SYNC: want[n] = "syncType", req[n++] = false; break;
    }
    sqlite3_stmt *s;
    int pcol, one_col;
    /* The file's only process, when no part was named, is checked in this
     * pass: a kernel of another process ends it (one_several). */
    bool one = kind == GK_KERNEL && r->one_check;
    if ((st = prepare_select(r, table, want, req, n, "globalPid", one ? "globalPid" : NULL, &s, &pcol, &one_col)))
        return st;
    static const uint8_t cats[] = {MT_CAT_KERNEL, MT_CAT_GPU_MEMCPY, MT_CAT_GPU_MEMSET, MT_CAT_CUDA_SYNC};
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (should_stop(r)) {
            sqlite3_finalize(s);
            return mt_error_set(r->err, MT_ERR_CANCELLED, "stopped: another process failed");
        }
        if (one && one_col >= 0) {
            /* the process list's key: NULL counts as -1 */
            int64_t g = col_i64(s, one_col, -1);
            if (r->one_seen && g != r->one_gpid) {
                r->one_several = true;
                rc = SQLITE_DONE;
                break;
            }
            r->one_seen = true;
            r->one_gpid = g;
        }
        int64_t key = row_key(s, pcol, false);
        for (size_t part = 0; next_part(r, pcol, key, &part);) {
            mt_event_t e = {.ph = MT_PH_X, .cat = cats[kind]};
            if ((st = set_times(r, &e, s, table)))
                goto fail;
            int64_t pid = sqlite3_column_int64(s, 2), tid = sqlite3_column_int64(s, 3);
            uint64_t corr = 0;
            if (sqlite3_column_type(s, 4) != SQLITE_NULL) {
                corr = (uint64_t)sqlite3_column_int64(s, 4);
                e.flags |= MT_EV_HAS_CORR;
            }
            if ((st = mt_event_set_ids(r->p->t, &e, pid, tid, corr, 0))) {
                mt_error_set(r->err, st, "event ids");
                goto fail;
            }
            char args[256] = "";
            int k = 0;
            if (fmt) {
                k = snprintf(args, sizeof args, "\"device\":%lld,\"stream\":%lld", (long long)pid, (long long)tid);
                if (e.flags & MT_EV_HAS_CORR)
                    k += snprintf(args + k, sizeof args - (size_t)k, ",\"correlation\":%llu", (unsigned long long)corr);
            }
            switch (kind) {
            case GK_KERNEL: {
                /* Kineto names a kernel by its demangled name; old exports
                 * may have only the short one. */
                int c = sqlite3_column_type(s, 5) != SQLITE_NULL ? 5 : sqlite3_column_type(s, 6) != SQLITE_NULL ? 6 : -1;
                if (c >= 0) {
                    if ((st = string_id(r, sqlite3_column_int64(s, c), false, &e.name)))
                        goto fail;
                }
                if (fmt && sqlite3_column_type(s, 7) != SQLITE_NULL)
                    snprintf(args + k, sizeof args - (size_t)k, ",\"grid\":[%lld,%lld,%lld],\"block\":[%lld,1,1]",
                             (long long)sqlite3_column_int64(s, 7), (long long)sqlite3_column_int64(s, 8),
                             (long long)sqlite3_column_int64(s, 9), (long long)sqlite3_column_int64(s, 10));
                break;
            }
            case GK_MEMCPY: {
                const char *nm = memcpy_name(sqlite3_column_int64(s, 5));
                if ((st = mt_strtab_intern(r->p->t->strings, nm, strlen(nm), &e.name)))
                    goto nomem;
                if (fmt)
                    snprintf(args + k, sizeof args - (size_t)k, ",\"bytes\":%lld", (long long)sqlite3_column_int64(s, 6));
                break;
            }
            case GK_MEMSET:
                if ((st = mt_strtab_intern(r->p->t->strings, "Memset (Device)", 15, &e.name)))
                    goto nomem;
                if (fmt)
                    snprintf(args + k, sizeof args - (size_t)k, ",\"bytes\":%lld", (long long)sqlite3_column_int64(s, 5));
                break;
            case GK_SYNC: {
                const char *nm = sync_name(sqlite3_column_int64(s, 5));
                if ((st = mt_strtab_intern(r->p->t->strings, nm, strlen(nm), &e.name)))
                    goto nomem;
                break;
            }
            }
            if ((st = emit(r, &e, fmt ? args : NULL)))
                goto fail;
        }
    }
    return step_done(r, s, rc, MT_OK, table);
nomem:
    st = mt_error_set(r->err, st, "string table");
fail:
    sqlite3_finalize(s);
    return st;
}

/* CUDA runtime and driver calls on the process's threads. */
static mt_status_t read_api(rd_t *r)
{
    static const char table[] = "CUPTI_ACTIVITY_KIND_RUNTIME";
    mt_status_t st;
    if (!has_table(r, table))
        return MT_OK;
    static const char *const want[] = {"start", "end", "globalTid", "correlationId", "nameId"};
    static const bool req[] = {true, true, false, false, true};
    sqlite3_stmt *s;
    int pcol;
    if ((st = prepare_select(r, table, want, req, 5, "globalTid", NULL, &s, &pcol, NULL)))
        return st;
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (should_stop(r)) {
            sqlite3_finalize(s);
            return mt_error_set(r->err, MT_ERR_CANCELLED, "stopped: another process failed");
        }
        int64_t key = row_key(s, pcol, true);
        for (size_t part = 0; next_part(r, pcol, key, &part);) {
            mt_event_t e = {.ph = MT_PH_X};
            if ((st = set_times(r, &e, s, table))) {
                sqlite3_finalize(s);
                return st;
            }
            int64_t g = sqlite3_column_int64(s, 2);
            if ((st = string_id(r, sqlite3_column_int64(s, 4), true, &e.name))) {
                sqlite3_finalize(s);
                return st;
            }
            size_t nl;
            const char *nm = mt_strtab_get(r->p->t->strings, e.name, &nl);
            /* The driver API ("cuLaunchKernelEx") shares the table. */
            e.cat = nl >= 4 && memcmp(nm, "cuda", 4) == 0 ? MT_CAT_CUDA_RUNTIME : MT_CAT_CUDA_DRIVER;
            char args[64] = "";
            uint64_t corr = 0;
            if (sqlite3_column_type(s, 3) != SQLITE_NULL) {
                corr = (uint64_t)sqlite3_column_int64(s, 3);
                e.flags |= MT_EV_HAS_CORR;
                if (r->p->opts->on_event)
                    snprintf(args, sizeof args, "\"correlation\":%llu", (unsigned long long)corr);
            }
            if ((st = mt_event_set_ids(r->p->t, &e, GID_PID(g), GID_TID(g), corr, 0))) {
                sqlite3_finalize(s);
                return mt_error_set(r->err, st, "event ids");
            }
            if ((st = emit(r, &e, args[0] ? args : NULL))) {
                sqlite3_finalize(s);
                return st;
            }
        }
    }
    return step_done(r, s, rc, MT_OK, table);
}

/* NVTX event types (ENUM_NSYS_EVENT_TYPE, stable across eras). */
enum { NVTX_MARK = 34, NVTX_THREAD = 39, NVTX_PUSHPOP = 59, NVTX_STARTEND = 60, NVTX_DOMAIN_CREATE = 75 };

/* "MPI Rank N" (what MPI wrappers and nsys's MPI tracing name a rank). */
static int64_t mpi_rank_text(const char *s, size_t n)
{
    if (n <= 9 || memcmp(s, "MPI Rank ", 9) != 0)
        return -1;
    int64_t v = 0;
    for (size_t i = 9; i < n; i++) {
        if ((unsigned)(s[i] - '0') > 9 || v > 100000000)
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

/* NVTX ranges (push/pop and start/end) become user annotations on the
 * thread that opened them, marks instants; domain names and "MPI Rank N"
 * are remembered. */
static mt_status_t read_nvtx(rd_t *r)
{
    static const char table[] = "NVTX_EVENTS";
    mt_status_t st;
    if (!has_table(r, table))
        return MT_OK;
    static const char *const want[] = {"start", "end", "eventType", "text", "textId", "globalTid", "domainId"};
    static const bool req[] = {true, false, true, false, false, false, false};
    sqlite3_stmt *s;
    int pcol;
    if ((st = prepare_select(r, table, want, req, 7, "globalTid", NULL, &s, &pcol, NULL)))
        return st;
    int rc;
    while (!st && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (should_stop(r)) {
            sqlite3_finalize(s);
            return mt_error_set(r->err, MT_ERR_CANCELLED, "stopped: another process failed");
        }
        int64_t key = row_key(s, pcol, true);
        for (size_t part = 0; !st && next_part(r, pcol, key, &part);) {
            int64_t type = sqlite3_column_int64(s, 2);
            uint32_t name = MT_STR_NONE;
            if (sqlite3_column_type(s, 3) != SQLITE_NULL) {
                const char *txt = (const char *)sqlite3_column_text(s, 3);
                size_t n = (size_t)sqlite3_column_bytes(s, 3);
                if ((st = mt_strtab_intern(r->p->t->strings, txt ? txt : "", txt ? n : 0, &name))) {
                    st = mt_error_set(r->err, st, "string table");
                    break;
                }
            } else if (sqlite3_column_type(s, 4) != SQLITE_NULL) {
                if ((st = string_id(r, sqlite3_column_int64(s, 4), false, &name)))
                    break;
            }
            size_t nl;
            const char *nm = mt_strtab_get(r->p->t->strings, name, &nl);
            int64_t dom = sqlite3_column_int64(s, 6);
            int64_t mr = mpi_rank_text(nm, nl);
            if (mr >= 0 && r->p->mpi_rank < 0)
                r->p->mpi_rank = mr;
            if (type == NVTX_DOMAIN_CREATE) {
                if (dom > 0 && dom < 4096) {
                    if ((size_t)dom >= r->p->n_domains) {
                        uint32_t *g = realloc(r->p->domains, 4096 * sizeof *g);
                        if (!g) {
                            st = mt_error_set(r->err, MT_ERR_NOMEM, "NVTX domains");
                            break;
                        }
                        memset(g + r->p->n_domains, 0, (4096 - r->p->n_domains) * sizeof *g);
                        r->p->domains = g;
                        r->p->n_domains = 4096;
                    }
                    r->p->domains[dom] = name;
                }
                continue;
            }
            if (type != NVTX_PUSHPOP && type != NVTX_STARTEND && type != NVTX_MARK)
                continue;
            mt_event_t e = {.cat = MT_CAT_USER_ANNOTATION, .name = name};
            int64_t g = sqlite3_column_int64(s, 5);
            if ((st = mt_event_set_ids(r->p->t, &e, GID_PID(g), GID_TID(g), 0, 0))) {
                st = mt_error_set(r->err, st, "event ids");
                break;
            }
            if (type == NVTX_MARK) {
                e.ph = MT_PH_I;
                e.ts = sqlite3_column_int64(s, 0);
                if (sqlite3_column_type(s, 0) != SQLITE_INTEGER || e.ts > MT_TIME_LIMIT_NS ||
                    e.ts < -MT_TIME_LIMIT_NS) {
                    st = mt_error_set(r->err, MT_ERR_RANGE,
                                      "%s: a mark whose start is not an integer within 2^62 ns of 0", table);
                    break;
                }
            } else if (sqlite3_column_type(s, 1) == SQLITE_NULL) {
                r->p->open_ranges++; /* never closed before the capture ended */
                continue;
            } else {
                e.ph = MT_PH_X;
                if ((st = set_times(r, &e, s, table)))
                    break;
            }
            char args[300] = "";
            if (r->p->opts->on_event && dom > 0 && (size_t)dom < r->p->n_domains && r->p->domains[dom]) {
                size_t dl;
                const char *d = mt_strtab_get(r->p->t->strings, r->p->domains[dom], &dl);
                string_arg(args, sizeof args, "domain", d, dl);
            }
            if ((st = emit(r, &e, args[0] ? args : NULL)))
                break;
        }
    }
    return step_done(r, s, rc, st, table);
}

/* Thread names of the process, as Kineto's thread_name metadata. */
static mt_status_t read_threads(rd_t *r)
{
    static const char table[] = "ThreadNames";
    mt_status_t st;
    if (!has_table(r, table))
        return MT_OK;
    static const char *const want[] = {"nameId", "globalTid"};
    static const bool req[] = {true, true};
    sqlite3_stmt *s;
    int pcol;
    if ((st = prepare_select(r, table, want, req, 2, "globalTid", NULL, &s, &pcol, NULL)))
        return st;
    for (size_t k = 0; k < r->n_parts && !st; k++)
        st = mt_strtab_intern(r->parts[k].t->strings, "thread_name", 11, &r->parts[k].thread_name);
    if (st) {
        sqlite3_finalize(s);
        return st;
    }
    int rc;
    while (!st && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        int64_t key = row_key(s, pcol, true);
        for (size_t part = 0; !st && next_part(r, pcol, key, &part);) {
            uint32_t tn = r->p->thread_name;
            int64_t g = sqlite3_column_int64(s, 1);
            uint32_t name;
            if ((st = string_id(r, sqlite3_column_int64(s, 0), false, &name)))
                break;
            mt_trace_t *t = r->p->t;
            if (MT_GROW(t->meta, t->cap_meta, t->n_meta + 1, 64)) {
                st = mt_error_set(r->err, MT_ERR_NOMEM, "metadata");
                break;
            }
            mt_event_t e = {.ph = MT_PH_M, .name = tn};
            if ((st = mt_event_set_ids(t, &e, GID_PID(g), GID_TID(g), 0, 0))) {
                st = mt_error_set(r->err, st, "event ids");
                break;
            }
            t->meta[t->n_meta++] = (mt_meta_t){.event = (uint32_t)t->n_events + 1, .str = name};
            e.aux = (uint32_t)t->n_meta;
            size_t nl;
            const char *nm = mt_strtab_get(t->strings, name, &nl);
            char args[300] = "";
            string_arg(args, sizeof args, "name", nm, nl);
            if ((st = emit(r, &e, args[0] ? args : NULL)))
                break;
        }
    }
    return step_done(r, s, rc, st, table);
}

static int proc_cmp(const void *a, const void *b)
{
    const mt_nsys_proc_t *x = a, *y = b;
    if (x->device != y->device)
        return x->device < y->device ? -1 : 1;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    return (x->global_pid > y->global_pid) - (x->global_pid < y->global_pid);
}

/* Is this an nsys export with GPU tables? One clear line when not. */
static mt_status_t check_export(rd_t *r)
{
    bool strings = has_table(r, "StringIds");
    bool meta = has_table(r, "META_DATA_EXPORT") || has_table(r, "EXPORT_META_DATA");
    if (!strings && !meta)
        return mt_error_set(r->err, MT_ERR_NSYS,
                            "an SQLite database, but not an Nsight Systems export (no StringIds or export metadata "
                            "table)");
    if (!has_table(r, "CUPTI_ACTIVITY_KIND_KERNEL"))
        return mt_error_set(r->err, MT_ERR_NSYS,
                            "an Nsight Systems export without GPU activity (no CUPTI_ACTIVITY_KIND_KERNEL table: "
                            "profile with --trace=cuda)");
    if (!strings)
        return mt_error_set(r->err, MT_ERR_NSYS, "an Nsight Systems export without its StringIds table");
    return MT_OK;
}

/* The GPU processes, by device then pid: one plain scan of the kernel
 * table's two columns, counted here (SQLite's GROUP BY sorted the whole
 * table first: a fifth of a load). A process's lowest device names it. */
static mt_status_t list_procs(rd_t *r, mt_nsys_proc_t **procs, size_t *n)
{
    *procs = NULL;
    *n = 0;
    static const char *const want[] = {"globalPid", "deviceId"};
    bool have[2];
    mt_status_t st = columns(r, "CUPTI_ACTIVITY_KIND_KERNEL", want, 2, have);
    if (st)
        return st;
    const char *sql = have[0] ? "SELECT globalPid, deviceId FROM CUPTI_ACTIVITY_KIND_KERNEL"
                              : "SELECT NULL, deviceId FROM CUPTI_ACTIVITY_KIND_KERNEL";
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(r->db, sql, -1, &s, NULL) != SQLITE_OK)
        return db_fail(r, "CUPTI_ACTIVITY_KIND_KERNEL");
    size_t cap = 0, last = 0;
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        int64_t g = col_i64(s, 0, -1);
        if (last >= *n || (*procs)[last].global_pid != g) {
            for (last = 0; last < *n && (*procs)[last].global_pid != g; last++)
                ;
            if (last == *n) {
                if (MT_GROW(*procs, cap, *n + 1, 8)) {
                    sqlite3_finalize(s);
                    return mt_error_set(r->err, MT_ERR_NOMEM, "process list");
                }
                (*procs)[(*n)++] = (mt_nsys_proc_t){.global_pid = g, .pid = g >= 0 ? GID_PID(g) : -1, .device = -1};
            }
        }
        mt_nsys_proc_t *p = &(*procs)[last];
        p->kernels++;
        if (sqlite3_column_type(s, 1) != SQLITE_NULL) {
            int64_t d = sqlite3_column_int64(s, 1);
            if (p->device < 0 || d < p->device)
                p->device = d;
        }
    }
    st = step_done(r, s, rc, MT_OK, "CUPTI_ACTIVITY_KIND_KERNEL");
    if (st == MT_OK && *n > 1)
        qsort(*procs, *n, sizeof **procs, proc_cmp);
    return st;
}

static mt_status_t session_start(rd_t *r)
{
    mt_status_t st;
    if (!has_table(r, "TARGET_INFO_SESSION_START_TIME"))
        return MT_OK; /* 2020-era exports: no absolute time; the clock fit aligns from the collectives alone */
    static const char *const want[] = {"utcEpochNs"};
    bool have[1];
    if ((st = columns(r, "TARGET_INFO_SESSION_START_TIME", want, 1, have)) || !have[0])
        return st;
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(r->db, "SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME", -1, &s, NULL) != SQLITE_OK)
        return db_fail(r, "TARGET_INFO_SESSION_START_TIME");
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL) {
        for (size_t k = 0; k < r->n_parts; k++) {
            r->parts[k].t->info.base_ns = sqlite3_column_int64(s, 0);
            r->parts[k].t->info.has_base = true;
        }
    }
    if (rc == SQLITE_ROW)
        rc = SQLITE_DONE;
    return step_done(r, s, rc, MT_OK, "TARGET_INFO_SESSION_START_TIME");
}

static int progress(void *ctx)
{
    const rd_t *r = ctx;
    return r->opts->should_stop && r->opts->should_stop(r->opts->should_stop_ctx);
}

/* "file:" URI of path, opened immutable: bytes other than letters,
 * digits and "/-._~" percent-encoded, an absolute path after an empty
 * authority ("file:///..."), u NUL-terminated. */
static mt_status_t file_uri(const char *path, mt_buf_t *u)
{
    mt_status_t st = mt_buf_append(u, path[0] == '/' ? "file://" : "file:", path[0] == '/' ? 7 : 5);
    for (const unsigned char *p = (const unsigned char *)path; *p && !st; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || strchr("/-._~", *p)) {
            st = mt_buf_append(u, (const char *)p, 1);
        } else {
            static const char hex[] = "0123456789ABCDEF";
            char b[3] = {'%', hex[*p >> 4], hex[*p & 15]};
            st = mt_buf_append(u, b, 3);
        }
    }
    return st ? st : mt_buf_append(u, "?immutable=1", 13);
}

static mt_status_t open_db(const char *file, const void *mem, size_t len, rd_t *r)
{
    int rc;
    if (mem) {
        rc = sqlite3_open_v2(":memory:", &r->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
        unsigned char *copy = rc == SQLITE_OK ? sqlite3_malloc64(len ? len : 1) : NULL;
        if (rc == SQLITE_OK && !copy)
            rc = SQLITE_NOMEM;
        if (copy) {
            memcpy(copy, mem, len);
            rc = sqlite3_deserialize(r->db, "main", copy, (sqlite3_int64)len, (sqlite3_int64)len,
                                     SQLITE_DESERIALIZE_FREEONCLOSE | SQLITE_DESERIALIZE_READONLY);
        }
    } else {
        /* An export is written once and read here: immutable=1 spares
         * SQLite the file locks and change checks around every statement
         * (36 fcntl and 8 reads a load; +7% events/s measured). */
        mt_buf_t u = {0};
        rc = file_uri(file, &u) ? SQLITE_NOMEM
                                : sqlite3_open_v2(u.data, &r->db,
                                                  SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI, NULL);
        mt_buf_free(&u);
    }
    if (rc != SQLITE_OK) {
        mt_status_t st = r->db ? db_fail(r, "opening") : mt_error_set(r->err, MT_ERR_NOMEM, "SQLite");
        return st;
    }
    /* A hostile file must not make SQLite write, run schema code or
     * follow corrupt records far. */
    sqlite3_db_config(r->db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
    sqlite3_db_config(r->db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, NULL);
    sqlite3_exec(r->db, "PRAGMA cell_size_check=ON", NULL, NULL, NULL);
    sqlite3_progress_handler(r->db, 100000, progress, r);
    return read_tables(r);
}

/* Errors from here on belong to part k (messages name it). */
static void blame(rd_t *r, size_t k, size_t *failed)
{
    *failed = k;
    r->err->rank = r->parts[k].opts->rank_hint;
    snprintf(r->err->path, sizeof r->err->path, "%s", r->parts[k].name ? r->parts[k].name : "");
}

/* Every part's trace in one pass per table. name: the file, for the
 * message that asks for a part. */
static mt_status_t read_export(rd_t *r, const char *name, size_t *failed)
{
    mt_status_t st = check_export(r);
    mt_nsys_proc_t *procs = NULL;
    size_t n_procs = 0;
    if (st)
        return st;
    if (r->parts[0].want_pid < 0) {
        /* The whole file: it must hold one GPU process, which the kernel
         * pass checks on its way (no scan of its own). */
        r->one_check = true;
    } else {
        if ((st = list_procs(r, &procs, &n_procs)))
            goto out;
        for (size_t k = 0; k < r->n_parts; k++) {
            part_t *p = &r->parts[k];
            for (p->idx = 0; p->idx < n_procs && procs[p->idx].pid != p->want_pid; p->idx++)
                ;
            if (p->idx == n_procs) {
                blame(r, k, failed);
                st = mt_error_set(r->err, MT_ERR_NSYS, "no GPU process with pid %lld in this export",
                                  (long long)p->want_pid);
                goto out;
            }
            /* a listed pid comes from a globalPid >= 0 */
            p->gpid = GID_PROC(procs[p->idx].global_pid);
        }
        r->filter = true;
    }
    if ((st = session_start(r)))
        goto out;
    r->p = &r->parts[0];
    if ((st = read_threads(r)) || (st = read_nvtx(r)) || (st = read_api(r)) ||
        (st = read_gpu(r, "CUPTI_ACTIVITY_KIND_KERNEL", GK_KERNEL)))
        goto out;
    if (r->one_several) {
        if (!(st = list_procs(r, &procs, &n_procs)))
            st = mt_error_set(r->err, MT_ERR_NSYS,
                              "%zu GPU processes in this export: name one as %s#pid<N> (the program lists them itself)",
                              n_procs, name ? name : "FILE");
        goto out;
    }
    if ((st = read_gpu(r, "CUPTI_ACTIVITY_KIND_MEMCPY", GK_MEMCPY)) ||
        (st = read_gpu(r, "CUPTI_ACTIVITY_KIND_MEMSET", GK_MEMSET)) ||
        (st = read_gpu(r, "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", GK_SYNC)))
        goto out;
    for (size_t k = 0; k < r->n_parts; k++) {
        part_t *p = &r->parts[k];
        mt_trace_t *t = p->t;
        if (p->mpi_rank >= 0)
            t->info.rank = p->mpi_rank;
        else if (n_procs > 1)
            t->info.rank = (int64_t)p->idx;
        t->info.has_dist_info = t->info.rank >= 0;
        if (!t->info.has_base) {
            t->info.ts_style = MT_TS_ABS_INT;
            continue;
        }
        t->info.ts_style = MT_TS_REL;
        for (size_t i = 0; i < t->n_events; i++)
            if (t->events[i].ph != MT_PH_M && __builtin_add_overflow(t->events[i].ts, t->info.base_ns, &t->events[i].ts)) {
                blame(r, k, failed);
                st = mt_error_set(r->err, MT_ERR_RANGE, "a time stamp + the session's UTC start does not fit int64 ns");
                goto out;
            }
    }
out:
    free(procs);
    return st;
}

static void parts_free(rd_t *r)
{
    for (size_t k = 0; k < r->n_parts; k++) {
        free(r->parts[k].names.v);
        free(r->parts[k].api_names.v);
        free(r->parts[k].domains);
    }
}

/* Load parts[0..n) of one file (file, or mem[0..len) when mem), each into
 * its parts[k].t; all or none: on failure every trace is freed and
 * *failed is the part the error belongs to (0 for the file's own). */
static mt_status_t load_file(const char *file, const void *mem, size_t len, part_t *parts, size_t n,
                             mt_error_t *err, size_t *failed)
{
    *failed = 0;
    mt_error_clear(err);
    rd_t r = {.err = err, .opts = parts[0].opts, .parts = parts, .n_parts = n};
    mt_status_t st = MT_OK;
    for (size_t k = 0; k < n && !st; k++) {
        part_t *p = &parts[k];
        p->mpi_rank = -1;
        mt_trace_t *t = p->t = calloc(1, sizeof *t);
        if (t) {
            t->info.rank = t->info.world_size = t->info.schema_version = -1;
            t->info.nsys = true;
            t->strings = mt_strtab_create();
        }
        if (!t || !t->strings || (p->name && !(t->path = strdup(p->name)))) {
            blame(&r, k, failed);
            st = mt_error_set(err, MT_ERR_NOMEM, "allocating the trace");
        }
    }
    if (!st) /* an allocation failure above names its own part */
        blame(&r, 0, failed);
    if (!st)
        st = open_db(file, mem, len, &r);
    if (!st)
        st = read_export(&r, file ? file : parts[0].name, failed);
    struct stat sb;
    uint64_t bytes = mem ? len : (stat(file, &sb) == 0 ? (uint64_t)sb.st_size : 0);
    for (size_t k = 0; k < n && !st; k++) {
        mt_trace_t *t = parts[k].t;
        const mt_load_opts_t *o = parts[k].opts;
        t->stats.bytes_in = bytes;
        t->stats.bytes_json = t->stats.bytes_in;
        if (!o->no_classify && (st = mt_trace_classify(t))) {
            blame(&r, k, failed);
            st = mt_error_set(err, st, "classifying");
        } else if (!o->no_classify && !o->no_link && (st = mt_trace_link(t, NULL))) {
            blame(&r, k, failed);
            st = mt_error_set(err, st, "linking");
        }
    }
    if (st && err->code == MT_OK)
        mt_error_set(err, st, "%s", "");
    if (!st && n == 1 && parts[0].t->info.rank >= 0 && parts[0].t->info.rank <= INT32_MAX)
        err->rank = (int)parts[0].t->info.rank;
    sqlite3_finalize(r.str_stmt);
    sqlite3_close(r.db);
    free(r.sids);
    mt_buf_free(&r.raw);
    mt_buf_free(&r.tables);
    parts_free(&r);
    for (size_t k = 0; st && k < n; k++) {
        mt_trace_free(parts[k].t);
        parts[k].t = NULL;
    }
    return st;
}

static mt_status_t load(const char *path, const void *mem, size_t len, const char *name, const mt_load_opts_t *opts,
                        mt_trace_t **out, mt_error_t *err)
{
    mt_load_opts_t defaults;
    if (!opts) {
        mt_load_opts_init(&defaults);
        opts = &defaults;
    }
    *out = NULL;
    mt_error_t local;
    if (!err)
        err = &local;
    char *file = NULL;
    part_t p = {.opts = opts, .name = name, .want_pid = -1};
    if (!mem && split_part(path, &file, &p.want_pid)) {
        mt_error_clear(err);
        err->rank = opts->rank_hint;
        snprintf(err->path, sizeof err->path, "%s", name ? name : "");
        return mt_error_set(err, MT_ERR_NOMEM, "allocating the trace");
    }
    size_t failed;
    mt_status_t st = load_file(file ? file : path, mem, len, &p, 1, err, &failed);
    free(file);
    *out = p.t;
    return st;
}

mt_status_t mt_nsys_load(const char *path, const mt_load_opts_t *opts, mt_trace_t **out, mt_error_t *err)
{
    return load(path, NULL, 0, path, opts, out, err);
}

mt_status_t mt_nsys_load_buffer(const void *buf, size_t len, const char *name, const mt_load_opts_t *opts,
                                mt_trace_t **out, mt_error_t *err)
{
    return load(NULL, buf ? buf : "", len, name, opts, out, err);
}

mt_status_t mt_nsys_load_parts(const char *const *paths, size_t n, const mt_load_opts_t *opts, mt_trace_t **out,
                               size_t *failed, mt_error_t *err)
{
    mt_error_t local;
    if (!err)
        err = &local;
    *failed = 0;
    for (size_t k = 0; k < n; k++)
        out[k] = NULL;
    part_t *parts = calloc(n ? n : 1, sizeof *parts);
    char *file = NULL;
    mt_status_t st = parts ? MT_OK : MT_ERR_NOMEM;
    for (size_t k = 0; k < n && !st; k++) {
        char *f = NULL;
        parts[k] = (part_t){.opts = &opts[k], .name = paths[k]};
        if ((st = split_part(paths[k], &f, &parts[k].want_pid)))
            break;
        if (!f || (file && strcmp(f, file) != 0)) {
            free(f);
            mt_error_clear(err);
            *failed = k;
            err->rank = opts[k].rank_hint;
            snprintf(err->path, sizeof err->path, "%s", paths[k]);
            st = mt_error_set(err, MT_ERR_USAGE, "not a part (<file>#pid<N>) of %s", file ? file : "an export");
            goto out;
        }
        if (file)
            free(f);
        else
            file = f;
    }
    if (st || n == 0) {
        mt_error_clear(err);
        if (n) {
            err->rank = opts[0].rank_hint;
            snprintf(err->path, sizeof err->path, "%s", paths[0]);
        }
        st = mt_error_set(err, st ? st : MT_ERR_USAGE, st ? "allocating the traces" : "no parts to load");
        goto out;
    }
    if ((st = load_file(file, NULL, 0, parts, n, err, failed)) == MT_OK)
        for (size_t k = 0; k < n; k++)
            out[k] = parts[k].t;
out:
    free(file);
    free(parts);
    return st;
}

mt_status_t mt_nsys_procs(const char *path, mt_nsys_proc_t **procs, size_t *n, mt_error_t *err)
{
    *procs = NULL;
    *n = 0;
    mt_error_t local;
    if (!err)
        err = &local;
    mt_error_clear(err);
    snprintf(err->path, sizeof err->path, "%s", path);
    mt_load_opts_t o;
    mt_load_opts_init(&o);
    rd_t r = {.err = err, .opts = &o};
    mt_status_t st = open_db(path, NULL, 0, &r);
    if (!st)
        st = check_export(&r);
    if (!st)
        st = list_procs(&r, procs, n);
    mt_buf_free(&r.tables);
    if (st) {
        free(*procs);
        *procs = NULL;
        *n = 0;
    }
    sqlite3_close(r.db);
    return st;
}

#endif /* MT_HAVE_SQLITE */
