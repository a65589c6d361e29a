/* trace_digest: load traces with the core loader and print one line per file
 * with the table sizes and a 64-bit FNV-1a digest of everything the loader
 * built (events, strings in id order, collective records, metadata, header
 * facts, counters). Built twice, against the SSE2 and the portable scanner,
 * so run_perf_test.sh can check that both give the same tables. A file
 * that fails to load prints its error instead. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "mergetrace/mergetrace.h"

static uint64_t fnv(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

#define ADD(h, v) ((h) = fnv((h), &(v), sizeof(v)))

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: trace_digest FILE...\n");
        return 64;
    }
    for (int i = 1; i < argc; i++) {
        mt_load_opts_t o;
        mt_load_opts_init(&o);
        mt_trace_t *t = NULL;
        mt_error_t err;
        if (mt_trace_load(argv[i], &o, &t, &err) != MT_OK) {
            /* Bad input must fail the same way on both scanners: print the
             * whole message (code, offset, line:col) and go on. */
            char b[1200];
            printf("%s error: %s\n", argv[i], mt_error_format(&err, b, sizeof b));
            continue;
        }
        uint64_t h = 0xcbf29ce484222325ull;
        /* Each event as the 64-byte record it was until 2026-11-25 (ids at
         * full width, no padding), so digests compare across that change. */
        for (size_t k = 0; k < t->n_events; k++) {
            const mt_event_t *e = &t->events[k];
            struct {
                int64_t ts, dur, pid, tid;
                uint64_t corr, ext;
                uint32_t name, coll, aux;
                uint8_t ph, cat, cls, flags;
            } w = {e->ts, e->dur, mt_event_pid(t, e), mt_event_tid(t, e), mt_event_corr(t, e), mt_event_ext(t, e),
                   e->name, e->coll, e->aux, e->ph, e->cat, e->cls, e->flags};
            _Static_assert(sizeof w == 64, "the old record had no padding");
            h = fnv(h, &w, sizeof w);
        }
        uint32_t ns = mt_strtab_count(t->strings);
        for (uint32_t id = 0; id < ns; id++) {
            size_t len = 0;
            const char *s = mt_strtab_get(t->strings, id, &len);
            ADD(h, len);
            h = fnv(h, s, len);
        }
        for (size_t k = 0; k < t->n_colls; k++) /* every field before the padding */
            h = fnv(h, &t->colls[k], offsetof(mt_coll_t, pad_));
        for (size_t k = 0; k < t->n_meta; k++) {
            ADD(h, t->meta[k].event);
            ADD(h, t->meta[k].str);
            ADD(h, t->meta[k].value);
        }
        const mt_trace_info_t *in = &t->info;
        ADD(h, in->rank);
        ADD(h, in->world_size);
        ADD(h, in->base_ns);
        ADD(h, in->trace_name);
        const mt_load_stats_t *st = &t->stats;
        h = fnv(h, st->by_ph, sizeof st->by_ph);
        h = fnv(h, st->by_cat, sizeof st->by_cat);
        ADD(h, st->bytes_json);
        ADD(h, st->unknown_fields);
        ADD(h, st->bad_values);
        ADD(h, st->bad_utf8);
        ADD(h, st->no_ts);
        ADD(h, st->no_ts_kernels);
        printf("%s events=%zu strings=%u colls=%zu meta=%zu digest=%016llx\n", argv[i], t->n_events,
               ns, t->n_colls, t->n_meta, (unsigned long long)h);
        mt_trace_free(t);
    }
    return fflush(stdout) || ferror(stdout) ? 1 : 0;
}
