/* The dumps' entries as a Chrome trace for Perfetto: one track per rank
 * and process group, each entry a slice coloured by its state, on the
 * reference clock of the hang analysis. */
#include <inttypes.h>

#include "fr/fr.h"

static const char *state_name(uint8_t s)
{
    return s == MT_FR_COMPLETED ? "completed" : s == MT_FR_STARTED ? "started" : "scheduled";
}

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

static void out_u64(mt_out_t *o, uint64_t v)
{
    char b[24];
    mt_out_put(o, b, mt_fmt_u64(v, b));
}

mt_status_t mt_fr_trace_rank(const mt_fr_dump_t *d, bool first, int64_t off, int64_t dump_ns, mt_write_fn write,
                             void *ctx, uint64_t *events)
{
    /* gathered a buffer at a time, formatted without printf: the slices
     * are most of the run's writing at 4,096 dumps */
    mt_outbuf_t ob = {.w = write, .ctx = ctx};
    mt_out_t o = {.w = mt_outbuf_write, .ctx = &ob};
    uint64_t written = 0;
    int r = d->rank;
    char pname[64];
    snprintf(pname, sizeof pname, "rank %d (flight recorder)", r);
    meta(&o, &first, "process_name", r, 0, pname, NULL);
    meta(&o, &first, "thread_name", r, 0, "(group not in pg_config)", NULL);
    for (size_t g = 0; g < d->npgs; g++)
        meta(&o, &first, "thread_name", r, (int)g + 1, d->pgs[g].name, d->pgs[g].desc);
    for (size_t k = 0; k < d->n && o.st == MT_OK; k++) {
        const mt_fr_entry_t *e = &d->entries[k];
        int64_t a = e->started != MT_FR_NONE ? e->started : e->created;
        if (a == MT_FR_NONE)
            continue;
        int64_t b = e->completed;
        if (b == MT_FR_NONE)
            b = dump_ns != MT_FR_NONE ? dump_ns + off : a;
        if (b < a)
            b = a;
        mt_out_puts(&o, ",\n{\"ph\":\"X\",\"pid\":");
        mt_out_i64(&o, r);
        mt_out_puts(&o, ",\"tid\":");
        mt_out_i64(&o, group_tid(d, e->pg));
        mt_out_puts(&o, ",\"ts\":");
        mt_out_us(&o, a - off);
        mt_out_puts(&o, ",\"dur\":");
        mt_out_us(&o, b - a);
        /* "<profiling_name> #<seq>": at most 63 + 2 + 20 bytes */
        char nm[96];
        size_t nl = 0;
        for (; nl < sizeof e->name && e->name[nl]; nl++)
            nm[nl] = e->name[nl];
        nm[nl++] = ' ';
        nm[nl++] = '#';
        nl += mt_fmt_i64(e->is_p2p ? e->p2p_seq : e->seq, nm + nl);
        mt_out_puts(&o, ",\"name\":");
        mt_out_str(&o, nm, nl);
        const char *sn = state_name(e->state);
        mt_out_puts(&o, ",\"cat\":\"");
        mt_out_puts(&o, sn);
        mt_out_puts(&o, e->state == MT_FR_COMPLETED ? "\",\"cname\":\"good\",\"args\":{\"state\":\""
                        : e->state == MT_FR_STARTED ? "\",\"cname\":\"terrible\",\"args\":{\"state\":\""
                                                    : "\",\"cname\":\"grey\",\"args\":{\"state\":\"");
        mt_out_puts(&o, sn);
        mt_out_puts(&o, "\",\"record_id\":");
        out_u64(&o, e->record_id);
        mt_out_puts(&o, ",\"collective_seq_id\":");
        mt_out_i64(&o, e->seq);
        mt_out_puts(&o, ",\"p2p_seq_id\":");
        mt_out_i64(&o, e->p2p_seq);
        mt_out_puts(&o, ",\"process_group\":");
        mt_out_str(&o, e->pg, sizeof e->pg);
        mt_out_puts(&o, ",\"input_numel\":");
        out_u64(&o, e->in_numel);
        mt_out_puts(&o, ",\"output_numel\":");
        out_u64(&o, e->out_numel);
        mt_out_puts(&o, ",\"dtype\":");
        mt_out_str(&o, e->dtype, sizeof e->dtype);
        mt_out_puts(&o, e->completed != MT_FR_NONE ? ",\"completed\":true}}" : ",\"completed\":false}}");
        written++;
    }
    if (o.st == MT_OK)
        o.st = mt_outbuf_flush(&ob);
    if (events)
        *events = written;
    return o.st;
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
