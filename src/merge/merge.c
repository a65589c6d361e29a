/* The merged-timeline writer: two loader passes over one rank's file. Pass 1
 * learns the time base and the pids (which are GPUs, which have real
 * events); pass 2 copies every event's text through, replacing only the
 * value spans of "ts", "dur", "pid" and "id". */
#include "mergetrace/merge.h"
#include "base/numparse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mergetrace/loader.h"
#include "mergetrace/version.h"
#include "mergetrace/buf.h"
#include "base/text.h"

/* Output is staged and handed to the write callback in pieces of about
 * this size: few calls, bounded memory. */
#define FLUSH_BYTES ((size_t)1 << 20)

/* Append s to b as the inside of a JSON string (no quotes added). */
static mt_status_t append_json_chars(mt_buf_t *b, const char *s, size_t n)
{
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        mt_status_t st = mt_buf_append(b, s + run, i - run);
        if (st)
            return st;
        char esc[8];
        size_t k;
        if (c == '"' || c == '\\') {
            esc[0] = '\\';
            esc[1] = (char)c;
            k = 2;
        } else {
            static const char hex[] = "0123456789abcdef";
            memcpy(esc, "\\u00", 4);
            esc[4] = hex[c >> 4];
            esc[5] = hex[c & 15];
            k = 6;
        }
        if ((st = mt_buf_append(b, esc, k)))
            return st;
        run = i + 1;
    }
    return mt_buf_append(b, s + run, n - run);
}

/* Length of the valid UTF-8 sequence at s[0..n), 0 when invalid there. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t k;
    unsigned lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        k = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        k = 3;
        lo = c == 0xE0 ? 0xA0 : 0x80; /* no overlong forms */
        hi = c == 0xED ? 0x9F : 0xBF; /* no surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        k = 4;
        lo = c == 0xF0 ? 0x90 : 0x80;
        hi = c == 0xF4 ? 0x8F : 0xBF; /* nothing above U+10FFFF */
    } else
        return 0;
    if (n < k || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < k; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    return k;
}

/* Event text copied through, except that bytes which are not UTF-8 (the
 * loader accepts them inside strings) become U+FFFD, so the merged trace is
 * valid JSON for strict readers. Structure bytes are ASCII, so only string
 * contents change. */
static mt_status_t append_utf8(mt_buf_t *b, const char *text, size_t n)
{
    const unsigned char *s = (const unsigned char *)text;
    size_t run = 0, i = 0;
    while (i < n) {
        /* Event text is nearly all ASCII: test eight bytes at a time (this
         * scan was 5% of a run with the merged trace when it went byte by
         * byte). */
        uint64_t w;
        while (n - i >= 8 && (memcpy(&w, s + i, 8), (w & 0x8080808080808080ULL) == 0))
            i += 8;
        if (i == n)
            break;
        if (s[i] < 0x80) {
            i++;
            continue;
        }
        size_t k = utf8_len(s + i, n - i);
        if (k) {
            i += k;
            continue;
        }
        mt_status_t st = mt_buf_append(b, text + run, i - run);
        if (!st)
            st = mt_buf_append(b, "\xEF\xBF\xBD", 3);
        if (st)
            return st;
        run = ++i;
    }
    return mt_buf_append(b, text + run, n - run);
}

static mt_status_t append_str(mt_buf_t *b, const char *s)
{
    return mt_buf_append(b, s, strlen(s));
}

/* ---------------------------------------------------------- pid table */

typedef struct pid_ent {
    int64_t num;        /* numeric pid (when str is NULL) */
    char *str;          /* string pid, decoded (owned); NULL for numeric pids */
    size_t str_len;
    uint64_t hash;
    int64_t device;     /* from a "GPU n" process label, -1 if none */
    uint32_t first;     /* order of first appearance */
    int32_t slot;       /* -1: no slot (only M events) */
    bool gpu, live;     /* live: has a non-M event */
} pid_ent_t;

typedef struct pid_tab {
    pid_ent_t *e;
    size_t n, cap;
    uint32_t *idx;      /* open addressing: entry index + 1, 0 = empty */
    size_t idx_cap;     /* power of two */
} pid_tab_t;

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static uint64_t str_hash(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 0x100000001b3ULL;
    return mix64(h ^ 0x5bd1e9955bd1e995ULL);
}

static void pid_tab_free(pid_tab_t *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->e[i].str);
    free(t->e);
    free(t->idx);
    memset(t, 0, sizeof *t);
}

static bool ent_equal(const pid_ent_t *e, uint64_t h, const char *s, size_t n, int64_t num)
{
    if (e->hash != h)
        return false;
    if (s)
        return e->str && e->str_len == n && memcmp(e->str, s, n) == 0;
    return !e->str && e->num == num;
}

static mt_status_t pid_tab_rehash(pid_tab_t *t, size_t cap)
{
    uint32_t *idx = calloc(cap, sizeof *idx);
    if (!idx)
        return MT_ERR_NOMEM;
    for (size_t i = 0; i < t->n; i++) {
        size_t j = (size_t)t->e[i].hash & (cap - 1);
        while (idx[j])
            j = (j + 1) & (cap - 1);
        idx[j] = (uint32_t)i + 1;
    }
    free(t->idx);
    t->idx = idx;
    t->idx_cap = cap;
    return MT_OK;
}

/* The entry of a pid (s == NULL: numeric num), created when create is set.
 * *out = NULL when absent and not created. */
static mt_status_t pid_tab_get(pid_tab_t *t, const char *s, size_t n, int64_t num, bool create, pid_ent_t **out)
{
    *out = NULL;
    uint64_t h = s ? str_hash(s, n) : mix64((uint64_t)num);
    if (t->idx_cap) {
        size_t j = (size_t)h & (t->idx_cap - 1);
        for (; t->idx[j]; j = (j + 1) & (t->idx_cap - 1)) {
            pid_ent_t *e = &t->e[t->idx[j] - 1];
            if (ent_equal(e, h, s, n, num)) {
                *out = e;
                return MT_OK;
            }
        }
    }
    if (!create)
        return MT_OK;
    if (t->n >= UINT32_MAX - 1)
        return MT_ERR_LIMIT;
    if ((t->n + 1) * 2 > t->idx_cap) {
        mt_status_t st = pid_tab_rehash(t, t->idx_cap ? t->idx_cap * 2 : 64);
        if (st)
            return st;
    }
    if (MT_GROW(t->e, t->cap, t->n + 1, 16))
        return MT_ERR_NOMEM;
    pid_ent_t *e = &t->e[t->n];
    *e = (pid_ent_t){.num = s ? 0 : num, .hash = h, .device = -1, .first = (uint32_t)t->n, .slot = -1};
    if (s) {
        if (!(e->str = malloc(n ? n : 1)))
            return MT_ERR_NOMEM;
        memcpy(e->str, s, n);
        e->str_len = n;
    }
    size_t j = (size_t)h & (t->idx_cap - 1);
    while (t->idx[j])
        j = (j + 1) & (t->idx_cap - 1);
    t->idx[j] = (uint32_t)++t->n;
    *out = e;
    return MT_OK;
}

/* --------------------------------------------------------- the writer */

typedef struct merge_ctx {
    pid_tab_t pids;
    int32_t rank;
    const mt_clock_t *clock;
    bool gpu_only, window;
    int64_t win_start, win_end;
    int64_t base_ns;
    mt_write_fn write;
    void *wctx;
    mt_buf_t out;
    uint64_t n_written;
    mt_status_t write_st;  /* what the write callback returned, when it failed */
    mt_status_t out_st;    /* a failure of our own while producing output */
    pid_ent_t *last;       /* the last pid looked up (events come in runs) */
    pid_ent_t **slots;     /* the live pids by slot */
    size_t n_slots;
    int64_t min_ts;        /* the earliest raw "ts" of a non-M event */
    bool has_min_ts;
    char meta_ts[32];      /* "ts" of the process metadata we add */
} merge_ctx_t;

static bool name_is(const mt_trace_t *t, const mt_event_t *ev, const char *s)
{
    size_t n;
    const char *nm = mt_strtab_get(t->strings, ev->name, &n);
    return nm && n == strlen(s) && memcmp(nm, s, n) == 0;
}

static bool is_process_meta(const mt_trace_t *t, const mt_event_t *ev)
{
    return name_is(t, ev, "process_name") || name_is(t, ev, "process_labels") || name_is(t, ev, "process_sort_index");
}

/* The pid entry of an event (an absent "pid" counts as 0, as viewers take it). */
static mt_status_t event_pid(merge_ctx_t *c, const mt_trace_t *t, const mt_event_t *ev, const mt_raw_event_t *raw,
                             bool create, pid_ent_t **out)
{
    if (raw->pid_len && (ev->flags & MT_EV_PID_STR)) {
        size_t n;
        const char *s = mt_strtab_get(t->strings, (uint32_t)mt_event_pid(t, ev), &n);
        if (!s) {
            s = "";
            n = 0;
        }
        if (c->last && c->last->str && c->last->str_len == n && memcmp(c->last->str, s, n) == 0) {
            *out = c->last;
            return MT_OK;
        }
        mt_status_t st = pid_tab_get(&c->pids, s, n, 0, create, out);
        if (!st && *out)
            c->last = *out;
        return st;
    }
    int64_t num = raw->pid_len ? mt_event_pid(t, ev) : 0;
    if (c->last && !c->last->str && c->last->num == num) {
        *out = c->last;
        return MT_OK;
    }
    mt_status_t st = pid_tab_get(&c->pids, NULL, 0, num, create, out);
    if (!st && *out)
        c->last = *out;
    return st;
}

static bool number_start(char ch)
{
    return ch == '-' || (unsigned)(ch - '0') <= 9;
}

static bool gpu_category(mt_cat_t cat)
{
    switch (mt_cat_normal(cat)) {
    case MT_CAT_KERNEL:
    case MT_CAT_GPU_MEMCPY:
    case MT_CAT_GPU_MEMSET:
    case MT_CAT_CUDA_SYNC:
    case MT_CAT_GPU_USER_ANNOTATION: return true;
    default: return false;
    }
}

/* "GPU n" (Kineto's process label of a device) -> n, else -1. */
static int64_t gpu_label(const char *s, size_t n)
{
    if (!s || n < 5 || memcmp(s, "GPU ", 4) != 0)
        return -1;
    int64_t v = 0;
    size_t i = 4;
    for (; i < n && (unsigned)(s[i] - '0') <= 9 && v < 100000000; i++)
        v = v * 10 + (s[i] - '0');
    return i == 4 ? -1 : v;
}

static mt_status_t pass1_event(void *ctx, const mt_trace_t *t, const mt_event_t *ev, const mt_raw_event_t *raw,
                               mt_error_t *err)
{
    merge_ctx_t *c = ctx;
    pid_ent_t *p;
    mt_status_t st = event_pid(c, t, ev, raw, true, &p);
    if (st == MT_ERR_NOMEM)
        return mt_error_set(err, st, "pid table");
    if (st)
        return mt_error_set(err, st, "too many distinct pids");
    if (ev->ph != MT_PH_M) {
        p->live = true;
        if (raw->ts_len && number_start(raw->text[raw->ts_off]) && (!c->has_min_ts || ev->ts < c->min_ts)) {
            c->min_ts = ev->ts;
            c->has_min_ts = true;
        }
    }
    if (!p->str) {
        if (ev->cls != MT_CLASS_NONE || gpu_category((mt_cat_t)ev->cat))
            p->gpu = true;
        if (ev->ph == MT_PH_M && ev->aux && name_is(t, ev, "process_labels")) {
            size_t n;
            const char *lab = mt_strtab_get(t->strings, t->meta[ev->aux - 1].str, &n);
            int64_t dev = gpu_label(lab, n);
            if (dev >= 0) {
                p->gpu = true;
                p->device = dev;
            }
        }
    }
    return MT_OK;
}

/* Slot order: GPU pids by device, numeric CPU pids ascending, string pids
 * by first appearance. */
static int slot_class(const pid_ent_t *e)
{
    return e->str ? 2 : e->gpu ? 0 : 1;
}

static int slot_cmp(const void *a, const void *b)
{
    const pid_ent_t *x = *(const pid_ent_t *const *)a, *y = *(const pid_ent_t *const *)b;
    int cx = slot_class(x), cy = slot_class(y);
    if (cx != cy)
        return cx < cy ? -1 : 1;
    if (cx == 0) {
        int64_t dx = x->device >= 0 ? x->device : x->num, dy = y->device >= 0 ? y->device : y->num;
        if (dx != dy)
            return dx < dy ? -1 : 1;
    }
    if (cx != 2 && x->num != y->num)
        return x->num < y->num ? -1 : 1;
    return x->first < y->first ? -1 : x->first > y->first;
}

static mt_status_t assign_slots(merge_ctx_t *c, const char *path, mt_error_t *err)
{
    size_t n_live = 0;
    for (size_t i = 0; i < c->pids.n; i++)
        n_live += c->pids.e[i].live;
    if (n_live > MT_MERGE_FR_SLOT) { /* the last slot is the rank's Flight Recorder entries' */
        mt_error_clear(err);
        if (err) {
            snprintf(err->path, sizeof err->path, "%s", path);
            err->rank = c->rank;
        }
        return mt_error_set(err, MT_ERR_LIMIT, "%zu distinct pids in one rank's trace (the merged trace has room for %d)",
                            n_live, MT_MERGE_FR_SLOT);
    }
    pid_ent_t **order = malloc((n_live ? n_live : 1) * sizeof *order);
    if (!order)
        return mt_error_set(err, MT_ERR_NOMEM, "pid table");
    size_t k = 0;
    for (size_t i = 0; i < c->pids.n; i++)
        if (c->pids.e[i].live)
            order[k++] = &c->pids.e[i];
    qsort(order, n_live, sizeof *order, slot_cmp);
    for (size_t i = 0; i < n_live; i++)
        order[i]->slot = (int32_t)i;
    c->slots = order;
    c->n_slots = n_live;
    return MT_OK;
}

static mt_status_t flush(merge_ctx_t *c)
{
    if (!c->out.len)
        return MT_OK;
    mt_status_t st = c->write(c->wctx, c->out.data, c->out.len);
    c->out.len = 0;
    if (st)
        c->write_st = st;
    return st;
}

/* The process metadata of one slot: name, (labels), sort index. */
static mt_status_t write_process_meta(merge_ctx_t *c, const pid_ent_t *p)
{
    char pid[24], num[24];
    mt_fmt_i64(mt_merge_pid(c->rank, (uint32_t)p->slot), pid);
    mt_fmt_i64(c->rank, num);
    mt_buf_t *b = &c->out;
    mt_status_t st = MT_OK;
#define A(s) \
    if (!st) \
    st = append_str(b, s)
    A(",\n{\"name\":\"process_name\",\"ph\":\"M\",\"ts\":");
    A(c->meta_ts);
    A(",\"pid\":");
    A(pid);
    A(",\"tid\":0,\"args\":{\"name\":\"rank ");
    A(num);
    if (p->str) {
        A(" ");
        if (!st)
            st = p->str_len ? append_json_chars(b, p->str, p->str_len) : append_str(b, "(empty pid)");
    } else if (p->gpu) {
        char dev[24];
        mt_fmt_i64(p->device >= 0 ? p->device : p->num, dev);
        A(" GPU ");
        A(dev);
    } else {
        A(" CPU");
    }
    A("\"}}");
    if (!p->str && !p->gpu) {
        char opid[24];
        mt_fmt_i64(p->num, opid);
        A(",\n{\"name\":\"process_labels\",\"ph\":\"M\",\"ts\":");
        A(c->meta_ts);
        A(",\"pid\":");
        A(pid);
        A(",\"tid\":0,\"args\":{\"labels\":\"pid ");
        A(opid);
        A("\"}}");
        c->n_written++;
    }
    A(",\n{\"name\":\"process_sort_index\",\"ph\":\"M\",\"ts\":");
    A(c->meta_ts);
    A(",\"pid\":");
    A(pid);
    A(",\"tid\":0,\"args\":{\"sort_index\":");
    A(pid);
    A("}}");
#undef A
    c->n_written += 2;
    return st;
}

/* One replacement of a value span: text[off, off+len) becomes rep. */
typedef struct span_rep {
    size_t off, len;
    const char *rep;
    size_t rep_len;
    const char *pre, *post; /* optional text around rep (string ids) */
    size_t pre_len, post_len;
} span_rep_t;

static mt_status_t corrected(const merge_ctx_t *c, int64_t raw_ns, int64_t *out)
{
    int64_t abs_ns;
    if (__builtin_add_overflow(raw_ns, c->base_ns, &abs_ns))
        return MT_ERR_RANGE;
    *out = c->clock ? mt_clock_apply(c->clock, abs_ns) : abs_ns;
    return MT_OK;
}

static mt_status_t pass2_event(void *ctx, const mt_trace_t *t, const mt_event_t *ev, const mt_raw_event_t *raw,
                               mt_error_t *err)
{
    merge_ctx_t *c = ctx;
    pid_ent_t *p;
    mt_status_t st = event_pid(c, t, ev, raw, false, &p);
    if (st)
        return mt_error_set(err, st, "pid table");
    if (!p)
        return mt_error_set(err, MT_ERR_FORMAT, "the file changed while it was merged (a pid not seen before)");
    if (p->slot < 0 || (c->gpu_only && !p->gpu))
        return MT_OK;
    if (ev->ph == MT_PH_M && is_process_meta(t, ev))
        return MT_OK;

    span_rep_t rep[4];
    size_t n_rep = 0;
    char ts_txt[32], dur_txt[32], pid_txt[32], id_txt[32], id_pre[32];

    bool has_ts = raw->ts_len && number_start(raw->text[raw->ts_off]);
    bool has_dur = has_ts && raw->dur_len && number_start(raw->text[raw->dur_off]);
    if (has_ts) {
        int64_t cts, cend = 0, cdur = 0;
        if (corrected(c, ev->ts, &cts))
            return mt_error_set(err, MT_ERR_RANGE, "\"ts\" + baseTimeNanoseconds does not fit int64 ns");
        if (has_dur) {
            int64_t end;
            if (__builtin_add_overflow(ev->ts, ev->dur, &end) || corrected(c, end, &cend))
                return mt_error_set(err, MT_ERR_RANGE, "\"ts\" + \"dur\" does not fit int64 ns");
            if (__builtin_sub_overflow(cend, cts, &cdur) || cdur < 0)
                cdur = 0;
        }
        if (c->window && ev->ph != MT_PH_M) {
            int64_t e = has_dur ? cend : cts;
            if (has_dur && e < cts)
                e = cts;
            if (e < c->win_start || cts > c->win_end)
                return MT_OK;
        }
        rep[n_rep++] = (span_rep_t){.off = raw->ts_off, .len = raw->ts_len, .rep = ts_txt,
                                    .rep_len = mt_fmt_us(cts, ts_txt)};
        if (has_dur)
            rep[n_rep++] = (span_rep_t){.off = raw->dur_off, .len = raw->dur_len, .rep = dur_txt,
                                        .rep_len = mt_fmt_us(cdur, dur_txt)};
    }

    size_t pl = mt_fmt_i64(mt_merge_pid(c->rank, (uint32_t)p->slot), pid_txt);
    bool empty_obj = false;
    if (raw->pid_len) {
        rep[n_rep++] = (span_rep_t){.off = raw->pid_off, .len = raw->pid_len, .rep = pid_txt, .rep_len = pl};
    } else {
        /* No "pid" key: add one right after the '{'. */
        size_t i = 1;
        while (i < raw->len && (raw->text[i] == ' ' || raw->text[i] == '\t' || raw->text[i] == '\n' || raw->text[i] == '\r'))
            i++;
        empty_obj = i < raw->len && raw->text[i] == '}';
        rep[n_rep++] = (span_rep_t){.off = 1, .len = 0, .pre = "\"pid\":", .pre_len = 6, .rep = pid_txt, .rep_len = pl};
        if (!empty_obj) {
            pid_txt[pl++] = ',';
            pid_txt[pl] = '\0';
            rep[n_rep - 1].rep_len = pl;
        }
    }

    if (raw->id_len) {
        const char *v = raw->text + raw->id_off;
        span_rep_t r = {.off = raw->id_off, .len = raw->id_len};
        size_t rl = mt_fmt_i64(c->rank, id_pre + 2);
        id_pre[0] = '"';
        id_pre[1] = 'r';
        id_pre[2 + rl] = ':';
        r.pre = id_pre;
        r.pre_len = rl + 3;
        if (v[0] == '"') {
            /* "x" -> "r<rank>:x": the original's escapes are kept as they are. */
            r.rep = v + 1;
            r.rep_len = raw->id_len - 1;
            rep[n_rep++] = r;
        } else if (number_start(v[0])) {
            uint64_t u;
            int64_t s;
            if (mt_parse_uint64(v, raw->id_len, &u) == MT_OK || (mt_parse_int64(v, raw->id_len, &s) == MT_OK &&
                                                                  (u = (uint64_t)s, true))) {
                /* Two's complement makes (uint64_t)s mod 2^32 the true residue. */
                uint64_t nid = ((uint64_t)c->rank << 32) | (u & 0xffffffffu);
                r.pre_len = 0;
                r.rep = id_txt;
                r.rep_len = mt_fmt_u64(nid, id_txt);
                rep[n_rep++] = r;
            } else {
                /* A fraction or beyond 64 bits: keep it apart as a string. */
                r.rep = v;
                r.rep_len = raw->id_len;
                r.post = "\"";
                r.post_len = 1;
                rep[n_rep++] = r;
            }
        }
    }

    /* Replacements in text order (at most 4: insertion sort). */
    for (size_t i = 1; i < n_rep; i++)
        for (size_t j = i; j > 0 && rep[j].off < rep[j - 1].off; j--) {
            span_rep_t tmp = rep[j];
            rep[j] = rep[j - 1];
            rep[j - 1] = tmp;
        }

    mt_buf_t *b = &c->out;
    st = mt_buf_append(b, ",\n", 2);
    size_t at = 0;
    for (size_t i = 0; i < n_rep && !st; i++) {
        st = append_utf8(b, raw->text + at, rep[i].off - at);
        if (!st && rep[i].pre_len)
            st = mt_buf_append(b, rep[i].pre, rep[i].pre_len);
        if (!st)
            st = mt_buf_append(b, rep[i].rep, rep[i].rep_len);
        if (!st && rep[i].post_len)
            st = mt_buf_append(b, rep[i].post, rep[i].post_len);
        at = rep[i].off + rep[i].len;
    }
    if (!st)
        st = append_utf8(b, raw->text + at, raw->len - at);
    if (st) {
        c->out_st = st;
        return mt_error_set(err, st, "output buffer");
    }
    c->n_written++;
    if (b->len >= FLUSH_BYTES && (st = flush(c)))
        return mt_error_set(err, st, "writing the merged trace");
    return MT_OK;
}

struct mt_merge_facts {
    merge_ctx_t c;      /* pids, last, min_ts: what pass 1 fills */
    int64_t base_ns;
    bool finished, unusable;
    mt_an_mem_dev_t *mdevs; /* memory counter tracks (mt_merge_facts_memory), owned */
    size_t n_mdevs;
    mt_an_mem_point_t *mpts;
    size_t n_mpts;
};

mt_status_t mt_merge_facts_memory(mt_merge_facts_t *f, const mt_rank_analysis_t *a)
{
    if (!f || !a->n_mem_devs)
        return MT_OK;
    mt_an_mem_dev_t *d = malloc(a->n_mem_devs * sizeof *d);
    mt_an_mem_point_t *p = malloc((a->n_mem_points ? a->n_mem_points : 1) * sizeof *p);
    if (!d || !p) {
        free(d);
        free(p);
        return MT_ERR_NOMEM;
    }
    memcpy(d, a->mem_devs, a->n_mem_devs * sizeof *d);
    if (a->n_mem_points)
        memcpy(p, a->mem_points, a->n_mem_points * sizeof *p);
    free(f->mdevs);
    free(f->mpts);
    f->mdevs = d;
    f->n_mdevs = a->n_mem_devs;
    f->mpts = p;
    f->n_mpts = a->n_mem_points;
    return MT_OK;
}

/* The slot a memory device's counters go on: its GPU process, else the
 * first numeric CPU process; NULL when the rank has neither (or only the
 * other with --gpu-only). */
static const pid_ent_t *counter_slot(const merge_ctx_t *c, const mt_an_mem_dev_t *d)
{
    const pid_ent_t *cpu = NULL;
    for (size_t i = 0; i < c->n_slots; i++) {
        const pid_ent_t *p = c->slots[i];
        if (p->gpu && d->device_type != 0 && (p->device >= 0 ? p->device : p->num) == d->device)
            return p;
        if (!cpu && !p->gpu && !p->str)
            cpu = p;
    }
    if (!cpu && c->n_slots)
        cpu = c->slots[0]; /* no CPU process of its own (the rank's pids are all labelled GPUs) */
    return c->gpu_only ? NULL : cpu;
}

/* The memory counter tracks of mt_merge_facts_memory. */
static mt_status_t write_counters(merge_ctx_t *c, const mt_merge_facts_t *f)
{
    mt_buf_t *b = &c->out;
    mt_status_t st = MT_OK;
    for (size_t k = 0; k < f->n_mdevs && !st; k++) {
        const mt_an_mem_dev_t *d = &f->mdevs[k];
        if (c->gpu_only && d->device_type == 0)
            continue;
        const pid_ent_t *p = counter_slot(c, d);
        if (!p || (size_t)d->first_point + d->n_points > f->n_mpts)
            continue;
        char pid[24], dev[24], num[24], ts[32];
        mt_fmt_i64(mt_merge_pid(c->rank, (uint32_t)p->slot), pid);
        mt_fmt_i64(d->device, dev);
        for (uint32_t i = 0; i < d->n_points && !st; i++) {
            const mt_an_mem_point_t *q = &f->mpts[d->first_point + i];
            int64_t t = c->clock ? mt_clock_apply(c->clock, q->ns) : q->ns; /* points hold absolute ns */
            if (c->window && (t < c->win_start || t > c->win_end))
                continue;
            mt_fmt_us(t, ts);
#define A(s) \
    if (!st) \
    st = append_str(b, s)
            A(",\n{\"name\":\"memory ");
            if (d->device_type == 0) {
                A("CPU");
            } else {
                A("GPU ");
                A(dev);
            }
            A("\",\"ph\":\"C\",\"ts\":");
            A(ts);
            A(",\"pid\":");
            A(pid);
            A(",\"tid\":0,\"args\":{\"allocated\":");
            mt_fmt_i64(q->alloc, num);
            A(num);
            if (q->reserved >= 0) {
                A(",\"reserved\":");
                mt_fmt_i64(q->reserved, num);
                A(num);
            }
            A("}}");
#undef A
            c->n_written++;
            if (!st && b->len >= FLUSH_BYTES)
                st = flush(c);
        }
    }
    return st;
}

mt_status_t mt_merge_facts_new(mt_merge_facts_t **out)
{
    *out = calloc(1, sizeof **out);
    return *out ? MT_OK : MT_ERR_NOMEM;
}

mt_status_t mt_merge_facts_event(void *facts, const mt_trace_t *t, const mt_event_t *ev, const mt_raw_event_t *raw,
                                 mt_error_t *err)
{
    mt_merge_facts_t *f = facts;
    if (f->unusable)
        return MT_OK;
    mt_error_t e2;
    if (pass1_event(&f->c, t, ev, raw, &e2) != MT_OK)
        f->unusable = true; /* the merged write finds out again by itself */
    (void)err;
    return MT_OK;
}

void mt_merge_facts_finish(mt_merge_facts_t *f, const mt_trace_t *t)
{
    if (!f)
        return;
    f->base_ns = t->info.has_base ? t->info.base_ns : 0;
    f->finished = true;
}

void mt_merge_facts_free(mt_merge_facts_t *f)
{
    if (!f)
        return;
    pid_tab_free(&f->c.pids);
    free(f->mdevs);
    free(f->mpts);
    free(f);
}

mt_status_t mt_merge_rank(const char *path, int32_t rank, const mt_clock_t *clock, const mt_merge_opts_t *opts,
                          mt_write_fn write, void *ctx, uint64_t *n_written, mt_error_t *err)
{
    return mt_merge_rank_with(path, rank, clock, opts, NULL, write, ctx, n_written, err);
}

mt_status_t mt_merge_rank_with(const char *path, int32_t rank, const mt_clock_t *clock, const mt_merge_opts_t *opts,
                               mt_merge_facts_t *facts, mt_write_fn write, void *ctx, uint64_t *n_written,
                               mt_error_t *err)
{
    if (n_written)
        *n_written = 0;
    mt_error_clear(err);
    if (err) {
        snprintf(err->path, sizeof err->path, "%s", path ? path : "");
        err->rank = rank;
    }
    if (rank < 0 || rank > MT_MERGE_MAX_RANK)
        return mt_error_set(err, MT_ERR_LIMIT, "rank %d is outside what the merged trace can hold (0..%d)", (int)rank,
                            MT_MERGE_MAX_RANK);
    merge_ctx_t c = {.rank = rank, .clock = clock, .write = write, .wctx = ctx};
    if (opts) {
        c.gpu_only = opts->gpu_only;
        c.window = opts->window_start_ns != 0 || opts->window_end_ns != 0;
        c.win_start = opts->window_start_ns;
        c.win_end = opts->window_end_ns;
        if (c.window && c.win_end < c.win_start)
            return mt_error_set(err, MT_ERR_USAGE, "the time window ends before it starts");
    }

    /* Pass 1: time base, pids, which pids are GPUs; or what the load for
     * the analyses collected of them (the same events, the same code). */
    mt_load_opts_t lo;
    mt_load_opts_init(&lo);
    lo.no_store = true;
    lo.no_link = true;
    lo.rank_hint = rank;
    mt_trace_t *t = NULL;
    mt_status_t st = MT_OK;
    bool borrowed = false;
    if (facts && facts->finished && !facts->unusable) {
        /* Borrowed: pass 2 only looks pids up, and the slots it assigns
         * below are the same every time, so the facts serve again (the
         * plain output merges each rank twice: to measure, then to write). */
        c.pids = facts->c.pids;
        borrowed = true;
        c.min_ts = facts->c.min_ts;
        c.has_min_ts = facts->c.has_min_ts;
        c.base_ns = facts->base_ns;
    } else {
        lo.on_event = pass1_event;
        lo.on_event_ctx = &c;
        st = mt_trace_load(path, &lo, &t, err);
        if (st)
            goto done;
        c.base_ns = t->info.has_base ? t->info.base_ns : 0;
        mt_trace_free(t);
        t = NULL;
    }
    if ((st = assign_slots(&c, path, err)))
        goto done;

    /* Pass 2: the new process metadata, then every event. The metadata
     * gets a "ts" (some viewer versions reject M events without one): the
     * rank's first event, so it stretches no timeline. */
    int64_t mts;
    if (corrected(&c, c.has_min_ts ? c.min_ts : 0, &mts)) {
        st = mt_error_set(err, MT_ERR_RANGE, "\"ts\" + baseTimeNanoseconds does not fit int64 ns");
        goto done;
    }
    mt_fmt_us(mts, c.meta_ts);
    for (size_t i = 0; i < c.n_slots && !st; i++)
        if (!c.gpu_only || c.slots[i]->gpu)
            st = write_process_meta(&c, c.slots[i]);
    /* the memory counter tracks, next to the metadata: the rank's events
     * then end the rank's part as they always did */
    if (!st && facts && facts->n_mdevs && (st = write_counters(&c, facts)) && c.write_st) {
        st = mt_error_set(err, c.write_st, "writing the merged trace");
        goto done;
    }
    if (st) {
        st = mt_error_set(err, st, "output buffer");
        goto done;
    }
    c.last = NULL;
    lo.on_event = pass2_event;
    lo.on_event_ctx = &c;
    lo.no_classify = true;
    lo.skim_args = true; /* pass 2 reads only top-level keys; args is copied as text */
    st = mt_trace_load(path, &lo, &t, err);
    mt_trace_free(t);
    if (!st && (st = flush(&c)))
        mt_error_set(err, st, "writing the merged trace");
    if (st && (c.write_st || c.out_st)) {
        /* Not the input's fault: no byte offset into it. */
        mt_status_t code = c.write_st ? c.write_st : c.out_st;
        mt_error_clear(err);
        if (err)
            err->rank = rank;
        st = mt_error_set(err, code, "writing the merged events of %s", path ? path : "(null)");
    }
done:
    if (n_written)
        *n_written = c.n_written;
    mt_buf_free(&c.out);
    free(c.slots);
    if (!borrowed)
        pid_tab_free(&c.pids);
    return st;
}

static const char merged_what[] = "a merged trace written by mergetrace";

static const char merged_header[] = "{\"traceEvents\":[\n"
                                    "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":0,\"tid\":0,"
                                    "\"args\":{\"name\":\"mergetrace merged timeline\"}}";

mt_status_t mt_merge_header(mt_write_fn write, void *ctx)
{
    return write(ctx, merged_header, sizeof merged_header - 1);
}

/* The openings mergetrace writes: the merged trace's header (the same in
 * every version), report.json's schema line (src/report/report.c) and
 * timings.json's generator line (mpi/timings.c). */
const char *mt_merge_sniff_output(const char *head, size_t len)
{
    static const struct {
        const char *prefix, *what;
    } own[] = {
        {merged_header, merged_what},
        {"{\n \"schema\": \"mergetrace.report/", "a report.json written by mergetrace"},
        {"{\n  \"generator\": \"mergetrace ", "a timings.json written by mergetrace"},
    };
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++) {
        size_t n = strlen(own[i].prefix);
        if (len >= n && memcmp(head, own[i].prefix, n) == 0)
            return own[i].what;
    }
    return NULL;
}

bool mt_merge_sniff_merged(const char *what)
{
    return what && strcmp(what, merged_what) == 0;
}

mt_status_t mt_merge_footer(const int32_t *ranks, size_t n_ranks, mt_write_fn write, void *ctx)
{
    mt_buf_t b = {0};
    mt_status_t st = append_str(&b, "\n],\n\"displayTimeUnit\":\"ms\",\n\"otherData\":{\"generator\":\"mergetrace "
                                    MERGETRACE_VERSION "\",\"ranks\":[");
    for (size_t i = 0; i < n_ranks && !st; i++) {
        char num[24];
        size_t n = mt_fmt_i64(ranks[i], num);
        if (i)
            st = mt_buf_append(&b, ",", 1);
        if (!st)
            st = mt_buf_append(&b, num, n);
    }
    if (!st)
        st = append_str(&b, "]}\n}\n");
    if (!st)
        st = write(ctx, b.data, b.len);
    mt_buf_free(&b);
    return st;
}
