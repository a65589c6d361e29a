/* The dumps' entries as a Chrome trace for Perfetto: one track per rank
 * and process group, each entry a slice coloured by its state, on the
 * reference clock of the hang analysis (dumps alone), or as a process of
 * each rank in the traces' merged trace, on the traces' corrected clock
 * (beside traces: mt_fr_trace_rank_merged). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "fr/fr.h"
#include "mergetrace/loader.h"

/* The group's index among the dump's groups, as a thread id (0 when the
 * entry's group is not in pg_config). */
static int group_tid(const mt_fr_dump_t *d, const char *pg)
{
    for (size_t g = 0; g < d->npgs; g++)
        if (!strcmp(d->pgs[g].name, pg))
            return (int)g + 1;
    return 0;
}

static void meta(mt_out_t *o, bool *first, const char *what, int pid, int tid, const char *name, const char *desc)
{
    mt_out_printf(o, "%s\n{\"ph\":\"M\",\"name\":\"%s\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":", *first ? "" : ",",
                  what, pid, tid);
    *first = false;
    if (desc) {
        char b[160];
        snprintf(b, sizeof b, "group %s (%s)", name, desc);
        mt_out_str(o, b, sizeof b);
    } else
        mt_out_str(o, name, 128);
    mt_out_puts(o, "}}");
}

mt_status_t mt_fr_trace_header(mt_write_fn write, void *ctx)
{
    static const char head[] = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[";
    return write(ctx, head, sizeof head - 1);
}

mt_status_t mt_fr_trace_footer(mt_write_fn write, void *ctx)
{
    static const char foot[] = "\n]}\n";
    return write(ctx, foot, sizeof foot - 1);
}

/* An mt_write_fn appending to the char * at ctx (room known to be there). */
static mt_status_t append(void *ctx, const void *data, size_t len)
{
    char **p = ctx;
    memcpy(*p, data, len);
    *p += len;
    return MT_OK;
}

/* s[0..n) (n < 96) as a JSON string at p, as mt_json_string writes it (at
 * most 6 bytes per byte, and the quotes); the end returned. */
static char *json_str(char *p, const char *s, size_t n)
{
    if (mt_json_plain_len(s, n) == n) {
        *p++ = '"';
        memcpy(p, s, n);
        p += n;
        *p++ = '"';
        return p;
    }
    mt_json_string(s, n, append, &p);
    return p;
}

/* Where a rank's slices go and how their times are placed: out(t) =
 * clock(t - off) (clock NULL: the identity), on process pid. */
typedef struct place {
    int64_t pid;
    int64_t off;
    const mt_clock_t *clock;
} place_t;

static int64_t place_at(const place_t *pl, int64_t t)
{
    return pl->clock ? mt_clock_apply(pl->clock, t - pl->off) : t - pl->off;
}

/* d's entries as slices on pl (tids: each group's index in pg_config + 1,
 * 0 for a group not in it), each preceded by ",\n" but the very first
 * when first; an entry not completed ends at end_ns (the dump's time on
 * the dump's own clock; MT_FR_NONE: where it starts). */
static mt_status_t write_slices(const mt_fr_dump_t *d, bool first, const place_t *pl, int64_t end_ns,
                                mt_write_fn write, void *ctx, uint64_t *events)
{
    /* gathered a buffer at a time, formatted without printf: the slices
     * are most of the run's writing at 4,096 dumps */
    mt_outbuf_t ob = {.w = write, .ctx = ctx};
    mt_out_t o = {.w = mt_outbuf_write, .ctx = &ob};
    uint64_t written = 0;
    /* each group id's thread, found once (-1: not yet) */
    uint32_t nstr = d->strs ? mt_strtab_count(d->strs) : 1;
    int *tid = malloc(nstr * sizeof *tid);
    if (!tid)
        o.st = MT_ERR_NOMEM;
    for (uint32_t k = 0; tid && k < nstr; k++)
        tid[k] = -1;
    for (size_t k = 0; k < d->n && o.st == MT_OK; k++) {
        const mt_fr_entry_t *e = &d->entries[k];
        size_t pgn, namen, dtn;
        const char *pg = mt_strtab_get(d->strs, e->pg, &pgn), *name = mt_strtab_get(d->strs, e->name, &namen),
                   *dtype = mt_strtab_get(d->strs, e->dtype, &dtn);
        int *t = e->pg < nstr ? &tid[e->pg] : NULL, unknown = 0; /* an id past the table reads "" */
        if (!t)
            t = &unknown, unknown = -1;
        if (*t < 0)
            *t = group_tid(d, pg);
        int64_t a = e->started != MT_FR_NONE ? e->started : e->created;
        if (a == MT_FR_NONE)
            continue;
        int64_t b = e->completed;
        if (b == MT_FR_NONE)
            b = end_ns != MT_FR_NONE ? end_ns : a;
        if (b < a)
            b = a;
        int64_t pa = place_at(pl, a), pb = place_at(pl, b);
        if (pb < pa)
            pb = pa;
        /* the slice formatted into sl, then one write: at 4,096 dumps
         * the slices are millions, and a write per field was most of
         * their cost */
        char sl[2048], *p = sl;
#define LIT(lit) (memcpy(p, lit, sizeof lit - 1), p += sizeof lit - 1)
        if (first)
            LIT("\n{\"ph\":\"X\",\"pid\":");
        else
            LIT(",\n{\"ph\":\"X\",\"pid\":");
        first = false;
        p += mt_fmt_i64(pl->pid, p);
        LIT(",\"tid\":");
        p += mt_fmt_i64(*t, p);
        LIT(",\"ts\":");
        p += mt_fmt_us(pa, p);
        LIT(",\"dur\":");
        p += mt_fmt_us(pb - pa, p);
        /* "<profiling_name> #<seq>": at most 63 + 2 + 20 bytes */
        char nm[96];
        size_t nl = 0;
        memcpy(nm, name, namen); /* at most MT_FR_NAME_MAX */
        nl = namen;
        nm[nl++] = ' ';
        nm[nl++] = '#';
        nl += mt_fmt_i64(e->is_p2p ? e->p2p_seq : e->seq, nm + nl);
        LIT(",\"name\":");
        p = json_str(p, nm, nl);
        LIT(",\"cat\":\"");
        if (e->state == MT_FR_COMPLETED)
            LIT("completed\",\"cname\":\"good\",\"args\":{\"state\":\"completed");
        else if (e->state == MT_FR_STARTED)
            LIT("started\",\"cname\":\"terrible\",\"args\":{\"state\":\"started");
        else
            LIT("scheduled\",\"cname\":\"grey\",\"args\":{\"state\":\"scheduled");
        LIT("\",\"record_id\":");
        p += mt_fmt_u64(e->record_id, p);
        LIT(",\"collective_seq_id\":");
        p += mt_fmt_i64(e->seq, p);
        LIT(",\"p2p_seq_id\":");
        p += mt_fmt_i64(e->p2p_seq, p);
        LIT(",\"process_group\":");
        p = json_str(p, pg, pgn);
        LIT(",\"input_numel\":");
        p += mt_fmt_u64(e->in_numel, p);
        LIT(",\"output_numel\":");
        p += mt_fmt_u64(e->out_numel, p);
        LIT(",\"dtype\":");
        p = json_str(p, dtype, dtn);
        if (e->completed != MT_FR_NONE)
            LIT(",\"completed\":true}}");
        else
            LIT(",\"completed\":false}}");
#undef LIT
        mt_out_put(&o, sl, (size_t)(p - sl));
        written++;
    }
    free(tid);
    if (o.st == MT_OK)
        o.st = mt_outbuf_flush(&ob);
    if (events)
        *events = written;
    return o.st;
}

mt_status_t mt_fr_trace_rank(const mt_fr_dump_t *d, bool first, int64_t off, int64_t dump_ns, mt_write_fn write,
                             void *ctx, uint64_t *events)
{
    mt_outbuf_t ob = {.w = write, .ctx = ctx};
    mt_out_t o = {.w = mt_outbuf_write, .ctx = &ob};
    int r = d->rank;
    char pname[64];
    snprintf(pname, sizeof pname, "rank %d (flight recorder)", r);
    meta(&o, &first, "process_name", r, 0, pname, NULL);
    meta(&o, &first, "thread_name", r, 0, "(group not in pg_config)", NULL);
    for (size_t g = 0; g < d->npgs; g++)
        meta(&o, &first, "thread_name", r, (int)g + 1, d->pgs[g].name, d->pgs[g].desc);
    if (o.st == MT_OK)
        o.st = mt_outbuf_flush(&ob);
    if (o.st != MT_OK)
        return o.st;
    place_t pl = {.pid = r, .off = off, .clock = NULL};
    return write_slices(d, first, &pl, dump_ns != MT_FR_NONE ? dump_ns + off : MT_FR_NONE, write, ctx, events);
}

mt_status_t mt_fr_trace_rank_merged(const mt_fr_dump_t *d, const mt_fr_place_t *p, const mt_clock_t *clock,
                                    int64_t end_ns, mt_write_fn write, void *ctx, uint64_t *events)
{
    if (events)
        *events = 0;
    if (!p->placed)
        return MT_OK;
    mt_outbuf_t ob = {.w = write, .ctx = ctx};
    mt_out_t o = {.w = mt_outbuf_write, .ctx = &ob};
    int64_t pid = mt_merge_pid(d->rank, MT_MERGE_FR_SLOT);
    char pidt[24];
    pidt[mt_fmt_i64(pid, pidt)] = '\0';
    /* the process and its tracks, as the traces' processes are named
     * (mt_merge_rank), sorted after them */
    mt_out_printf(&o, ",\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%s,\"tid\":0,\"args\":{\"name\":"
                      "\"rank %d Flight Recorder\"}}",
                  pidt, d->rank);
    mt_out_printf(&o, ",\n{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%s,\"tid\":0,\"args\":"
                      "{\"sort_index\":%s}}",
                  pidt, pidt);
    mt_out_printf(&o, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%s,\"tid\":0,\"args\":{\"name\":"
                      "\"Flight Recorder: (group not in pg_config)\"}}",
                  pidt);
    for (size_t g = 0; g < d->npgs; g++) {
        char b[200];
        snprintf(b, sizeof b, "Flight Recorder: group %s (%s)", d->pgs[g].name, d->pgs[g].desc);
        mt_out_printf(&o, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%s,\"tid\":%zu,\"args\":{\"name\":",
                      pidt, g + 1);
        mt_out_str(&o, b, sizeof b);
        mt_out_puts(&o, "}}");
    }
    if (o.st == MT_OK)
        o.st = mt_outbuf_flush(&ob);
    if (o.st != MT_OK)
        return o.st;
    place_t pl = {.pid = pid, .off = p->shift_ns, .clock = clock};
    uint64_t k = 0;
    mt_status_t st = write_slices(d, false, &pl, end_ns, write, ctx, &k);
    if (events)
        *events = k + 3 + d->npgs;
    return st;
}

mt_status_t mt_fr_trace_json(const mt_fr_dump_t *dumps, size_t n, const mt_fr_hang_t *h, mt_write_fn write,
                             void *ctx)
{
    mt_status_t st = mt_fr_trace_header(write, ctx);
    for (size_t i = 0; i < n && st == MT_OK; i++) {
        int r = dumps[i].rank;
        int64_t off = r < h->world && h->offset_ns[r] != MT_FR_NONE ? h->offset_ns[r] : 0;
        st = mt_fr_trace_rank(&dumps[i], i == 0, off, h->dump_ns, write, ctx, NULL);
    }
    return st == MT_OK ? mt_fr_trace_footer(write, ctx) : st;
}
