/* HTA's idle-time categories per GPU stream: host wait (the GPU waited for
 * the CPU to launch), kernel wait (a short gap between back-to-back work)
 * and other, from the gaps between a stream's consecutive activities. */
#include "rank/passes.h"
#include "base/bigmem.h"

#include <stdlib.h>

static int same_stream(const mt_gpu_act_t *a, const mt_gpu_act_t *b)
{
    return a->device == b->device && a->stream == b->stream && a->flags == b->flags;
}

mt_status_t mt_an_idle(const mt_an_input_t *in, mt_rank_analysis_t *a)
{
    const size_t n = in->n_acts;
    const mt_gpu_act_t *acts = in->acts;
    a->host_wait_ns = a->kernel_wait_ns = a->other_ns = 0;
    a->n_streams = 0;
    if (!n)
        return MT_OK;
    mt_status_t st = MT_ERR_NOMEM;
    uint64_t *key = mt_big_malloc(n * sizeof *key);
    uint32_t *k = mt_big_malloc(n * sizeof *k);
    if (!key || !k)
        goto out;
    /* Activity positions by (device, flags, stream), each stream keeping
     * the (start, end, event) order of acts: stable sorts, least
     * significant field first. */
    for (size_t i = 0; i < n; i++) {
        k[i] = (uint32_t)i;
        key[i] = mt_sort_key_i64(acts[i].stream);
    }
    if (mt_sort_u64(key, k, n))
        goto out;
    for (size_t i = 0; i < n; i++)
        key[i] = acts[k[i]].flags;
    if (mt_sort_u64(key, k, n))
        goto out;
    for (size_t i = 0; i < n; i++)
        key[i] = mt_sort_key_i64(acts[k[i]].device);
    if (mt_sort_u64(key, k, n))
        goto out;
    size_t ns = 1;
    for (size_t i = 1; i < n; i++)
        ns += !same_stream(&acts[k[i]], &acts[k[i - 1]]);
    a->streams = calloc(ns, sizeof *a->streams);
    if (!a->streams)
        goto out;
    st = MT_OK;
    const int64_t kw = in->o->kernel_wait_ns;
    for (size_t i = 0; i < n && st == MT_OK;) {
        const mt_gpu_act_t *first = &acts[k[i]];
        mt_an_stream_t *s = &a->streams[a->n_streams++];
        s->device = first->device;
        s->stream = first->stream;
        if (first->flags & MT_EV_TID_STR) {
            size_t len;
            const char *txt = mt_strtab_get(in->t->strings, (uint32_t)first->stream, &len);
            st = mt_an_string_add(a, txt, len, &s->name);
        }
        int64_t last_end = first->end_ns; /* the latest end so far */
        s->work = first->cls != MT_CLASS_COMM;
        size_t j = i + 1;
        for (; j < n && same_stream(&acts[k[j]], first); j++) {
            const mt_gpu_act_t *x = &acts[k[j]];
            s->work += x->cls != MT_CLASS_COMM;
            if (x->start_ns > last_end) {
                int64_t gap = x->start_ns - last_end;
                if (x->launch && x->launch_ns > last_end)
                    s->host_wait_ns += gap;
                else if (gap < kw)
                    s->kernel_wait_ns += gap;
                else
                    s->other_ns += gap;
            }
            if (x->end_ns > last_end)
                last_end = x->end_ns;
        }
        a->host_wait_ns += s->host_wait_ns;
        a->kernel_wait_ns += s->kernel_wait_ns;
        a->other_ns += s->other_ns;
        i = j;
    }
out:
    free(key);
    free(k);
    return st;
}

int64_t mt_an_host_wait(const mt_rank_analysis_t *a)
{
    int64_t hw = 0, all = 0;
    for (size_t s = 0; s < a->n_streams; s++) {
        const mt_an_stream_t *x = &a->streams[s];
        all = x->host_wait_ns > all ? x->host_wait_ns : all;
        if (x->work)
            hw = x->host_wait_ns > hw ? x->host_wait_ns : hw;
    }
    for (size_t s = 0; s < a->n_streams; s++)
        if (a->streams[s].work)
            return hw;
    return all;
}
