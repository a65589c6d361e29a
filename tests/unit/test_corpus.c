/* Every real trace in ../shared/corpus loads, with event counts per phase
 * and per category equal to the independent counts in MANIFEST.tsv
 * (corpus_manifest.h), NCCL kernels found and decoded as counted there, and
 * every NCCL kernel of the param DLRM 8-rank set tied to its collective;
 * every trace through the per-rank passes against an independent sweep. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "corpus_manifest.h"
#include "mergetrace/analysis.h"
#include "test_util.h"

static char path_buf[4096];

static const char *corpus_path(const char *rel)
{
    snprintf(path_buf, sizeof path_buf, "%s/%s", MT_CORPUS_DIR, rel);
    return path_buf;
}

static long count_of(const char *list, const char *key)
{
    size_t kl = strlen(key);
    for (const char *p = list; p && *p;) {
        const char *colon = strchr(p, ':');
        if (!colon)
            break;
        if ((size_t)(colon - p) == kl && memcmp(p, key, kl) == 0)
            return atol(colon + 1);
        p = strchr(colon, ',');
        if (p)
            p++;
    }
    return 0;
}

static const char *kernel_kind_manifest_name(mt_coll_kind_t k)
{
    switch (k) {
    case MT_COLLK_ALLREDUCE: return "AllReduce";
    case MT_COLLK_ALLGATHER: return "AllGather";
    case MT_COLLK_REDUCESCATTER: return "ReduceScatter";
    case MT_COLLK_BROADCAST: return "Broadcast";
    case MT_COLLK_REDUCE: return "Reduce";
    case MT_COLLK_SENDRECV: return "SendRecv";
    case MT_COLLK_GENERIC: return "Generic";
    default: return "?";
    }
}

static void check_row(const corpus_row_t *r)
{
    mt_trace_t *t = NULL;
    mt_error_t err;
    mt_status_t st = mt_trace_load(corpus_path(r->path), NULL, &t, &err);
    if (st != MT_OK) {
        char b[1200];
        fail_msg("%s: %s", r->path, mt_error_format(&err, b, sizeof b));
    }
    assert_false(t->stats.truncated);
    if ((long)t->n_events != r->events)
        fail_msg("%s: %zu events, manifest says %ld", r->path, t->n_events, r->events);
    assert_int_equal(t->stats.by_ph[MT_PH_X], r->ph_x);
    assert_int_equal(t->stats.by_ph[MT_PH_I], r->ph_i);
    assert_int_equal(t->stats.by_ph[MT_PH_S], r->ph_s);
    assert_int_equal(t->stats.by_ph[MT_PH_F], r->ph_f);
    assert_int_equal(t->stats.by_ph[MT_PH_M], r->ph_m);
    /* per category over non-M events, by the spelling in the file */
    long by_cat[MT_CAT_COUNT_] = {0};
    long other = 0;
    for (size_t i = 0; i < t->n_events; i++) {
        const mt_event_t *e = &t->events[i];
        if (e->ph == MT_PH_M)
            continue;
        if (e->cat == MT_CAT_OTHER)
            other++;
        else
            by_cat[e->cat]++;
    }
    long listed = 0;
    for (int c = MT_CAT_NONE; c < MT_CAT_COUNT_; c++) {
        long want = count_of(r->cats, mt_cat_str((mt_cat_t)c));
        listed += want;
        if (by_cat[c] != want)
            fail_msg("%s: %ld '%s' events, manifest says %ld", r->path, by_cat[c], mt_cat_str((mt_cat_t)c), want);
    }
    /* anything else in the manifest must be among the unknown categories */
    long want_other = 0;
    for (size_t i = 0; i < t->n_other_cats; i++) {
        long w = count_of(r->cats, mt_strtab_get(t->strings, t->other_cat_names[i], NULL));
        /* other_cat_counts include M events of that category, the manifest does not */
        want_other += w;
    }
    assert_int_equal(other, want_other);
    /* NCCL kernels by kind, decoded from their names */
    long nccl[MT_COLLK_COUNT_] = {0};
    long n_comm = 0;
    for (size_t i = 0; i < t->n_events; i++) {
        const mt_event_t *e = &t->events[i];
        if (mt_cat_normal((mt_cat_t)e->cat) != MT_CAT_KERNEL || e->ph != MT_PH_X)
            continue;
        size_t len;
        const char *nm = mt_strtab_get(t->strings, e->name, &len);
        mt_nccl_name_t d;
        if (mt_nccl_decode(nm, len, &d)) {
            nccl[d.kind]++;
            assert_int_equal(e->cls, MT_CLASS_COMM);
        }
        n_comm += e->cls == MT_CLASS_COMM;
    }
    long want_total = 0;
    for (int k = 0; k < MT_COLLK_COUNT_; k++) {
        long want = count_of(r->nccl, kernel_kind_manifest_name((mt_coll_kind_t)k));
        want_total += want;
        if (nccl[k] != want)
            fail_msg("%s: %ld %s kernels, manifest says %ld", r->path, nccl[k], mt_coll_kind_str((mt_coll_kind_t)k), want);
    }
    assert_true(n_comm >= want_total);
    (void)listed;
    mt_trace_free(t);
}

static void test_corpus_counts(void **state)
{
    (void)state;
    size_t n = sizeof corpus_rows / sizeof corpus_rows[0];
    assert_true(n >= 40);
    for (size_t i = 0; i < n; i++)
        check_row(&corpus_rows[i]);
}

/* A boundary of a GPU activity for the sweep below. */
typedef struct bnd {
    int64_t t;
    int delta;  /* +1 start, -1 end */
    int cls;    /* 0 compute, 1 comm, 2 memory */
} bnd_t;

static int bnd_cmp(const void *pa, const void *pb)
{
    const bnd_t *a = pa, *b = pb;
    return (a->t > b->t) - (a->t < b->t);
}

/* HTA's temporal breakdown by an independent method: sweep the start and
 * end points of every GPU activity, counting how many of each class run in
 * each elementary segment (the passes use sorted interval unions). */
static void sweep(const mt_trace_t *t, int64_t *span, int64_t *busy, int64_t *compute, int64_t *comm,
                  int64_t *memory, int64_t *overlap, size_t *acts)
{
    bnd_t *b = malloc((2 * t->n_events + 1) * sizeof *b);
    assert_non_null(b);
    size_t n = 0;
    int64_t lo = 0, hi = 0;
    *acts = 0;
    for (size_t i = 0; i < t->n_events; i++) {
        const mt_event_t *e = &t->events[i];
        int c = e->cls == MT_CLASS_COMPUTE ? 0 : e->cls == MT_CLASS_COMM ? 1
              : (e->cls == MT_CLASS_MEMCPY || e->cls == MT_CLASS_MEMSET) ? 2 : -1;
        if (e->ph != MT_PH_X || c < 0)
            continue;
        if (!*acts || e->ts < lo)
            lo = e->ts;
        if (!*acts || e->ts + e->dur > hi)
            hi = e->ts + e->dur;
        (*acts)++;
        if (e->dur <= 0)
            continue;
        b[n++] = (bnd_t){e->ts, 1, c};
        b[n++] = (bnd_t){e->ts + e->dur, -1, c};
    }
    qsort(b, n, sizeof *b, bnd_cmp);
    int run[3] = {0, 0, 0};
    *busy = *compute = *comm = *memory = *overlap = 0;
    for (size_t i = 0; i < n; i++) {
        run[b[i].cls] += b[i].delta;
        if (i + 1 < n && b[i + 1].t > b[i].t) {
            int64_t d = b[i + 1].t - b[i].t;
            if (run[0] || run[1] || run[2])
                *busy += d;
            if (run[0])
                *compute += d;
            else if (run[1])
                *comm += d;
            else if (run[2])
                *memory += d;
            if (run[0] && run[1])
                *overlap += d;
        }
    }
    *span = *acts ? hi - lo : 0;
    free(b);
}

/* Every corpus trace through the per-rank passes: the temporal breakdown
 * and overlap equal the independent sweep to the ns, and no section is
 * empty when the trace has what it needs (kernels -> top kernels and
 * launch numbers, annotations with launches -> projection, ProfilerSteps
 * -> one chunk each). */
static void test_corpus_analyses(void **state)
{
    (void)state;
    size_t n = sizeof corpus_rows / sizeof corpus_rows[0];
    mt_pp_markers_t *mk = NULL;
    assert_int_equal(mt_pp_markers_compile(NULL, NULL, 0, NULL, NULL, &mk, NULL), MT_OK);
    mt_analysis_opts_t o;
    mt_analysis_opts_init(&o);
    o.markers = mk;
    size_t with_gpu = 0, with_proj = 0, with_chunks = 0;
    for (size_t i = 0; i < n; i++) {
        const corpus_row_t *r = &corpus_rows[i];
        mt_trace_t *t = NULL;
        mt_error_t err;
        assert_int_equal(mt_trace_load(corpus_path(r->path), NULL, &t, &err), MT_OK);
        mt_rank_analysis_t *a = NULL;
        if (mt_analyze_rank(t, 0, &o, &a) != MT_OK)
            fail_msg("%s: mt_analyze_rank failed", r->path);
        int64_t span, busy, compute, comm, memory, overlap;
        size_t acts;
        sweep(t, &span, &busy, &compute, &comm, &memory, &overlap, &acts);
        if (a->span_ns != span || a->busy_ns != busy || a->compute_ns != compute || a->comm_ns != comm ||
            a->memory_ns != memory || a->overlap_ns != overlap || a->gpu_activities != acts)
            fail_msg("%s: analysis span %lld busy %lld compute %lld comm %lld memory %lld overlap %lld acts %llu; "
                     "sweep %lld %lld %lld %lld %lld %lld %zu",
                     r->path, (long long)a->span_ns, (long long)a->busy_ns, (long long)a->compute_ns,
                     (long long)a->comm_ns, (long long)a->memory_ns, (long long)a->overlap_ns,
                     (unsigned long long)a->gpu_activities, (long long)span, (long long)busy, (long long)compute,
                     (long long)comm, (long long)memory, (long long)overlap, acts);
        assert_int_equal(a->idle_ns, span - busy);
        assert_int_equal(a->compute_ns + a->comm_ns + a->memory_ns + a->idle_ns, a->span_ns);
        if (acts) {
            with_gpu++;
            if (!a->n_kernels || !a->n_streams)
                fail_msg("%s: %zu GPU activities but an empty kernel or stream list", r->path, acts);
        }
        assert_true(a->launched <= acts);
        /* Projection: whenever an annotation range holds a launch. */
        size_t steps = 0;
        for (size_t k = 0; k < t->n_events; k++) {
            const mt_event_t *e = &t->events[k];
            if (e->ph != MT_PH_X || mt_cat_normal((mt_cat_t)e->cat) != MT_CAT_USER_ANNOTATION)
                continue;
            size_t len;
            const char *nm = mt_strtab_get(t->strings, e->name, &len);
            steps += len > 13 && len <= 31 && !memcmp(nm, "ProfilerStep#", 13) && strspn(nm + 13, "0123456789") == len - 13;
        }
        for (size_t k = 0; k < a->n_proj; k++) {
            assert_true(a->proj[k].count > 0);
            assert_true(a->proj[k].gpu_ns <= a->busy_ns);
        }
        with_proj += a->n_proj > 0;
        if (a->n_chunks != steps)
            fail_msg("%s: %zu chunks for %zu ProfilerStep ranges", r->path, a->n_chunks, steps);
        for (size_t k = 0; k < a->n_chunks; k++) {
            const mt_pp_chunk_t *c = &a->chunks[k];
            assert_true(c->busy_ns <= (c->acts ? c->last_ns - c->first_ns : 0));
            assert_true(c->busy_ns <= a->busy_ns);
        }
        with_chunks += a->n_chunks > 0;
        mt_rank_analysis_free(a);
        mt_trace_free(t);
    }
    /* The corpus has GPU traces, annotated ones and profiled steps. */
    assert_true(with_gpu >= 35); /* 39 of 47 when written */
    assert_true(with_proj >= 35); /* 39 */
    assert_true(with_chunks >= 25); /* 29 */
    printf("corpus analyses: %zu traces, %zu with GPU activity, %zu with projections, %zu with ProfilerSteps\n", n,
           with_gpu, with_proj, with_chunks);
    mt_pp_markers_free(mk);
}

#define DLRM "facebookresearch__param/et_replay/tests/inputs/dlrm_kineto.tar.gz.extracted/dlrm_kineto/"

/* FORMAT.md 6.3: in DLRM all 64 NCCL kernels (8 per rank) resolve to their
 * collective by time containment of the launch in the nccl:* range. */
static void test_dlrm_links(void **state)
{
    (void)state;
    static const char *const files[8] = {
        "worker0_step_12.1694128201545.pt.trace.json", "worker1_step_12.1694128201556.pt.trace.json",
        "worker2_step_12.1694128201554.pt.trace.json", "worker3_step_12.1694128201557.pt.trace.json",
        "worker4_step_12.1694128201547.pt.trace.json", "worker5_step_12.1694128201549.pt.trace.json",
        "worker6_step_12.1694128201553.pt.trace.json", "worker7_step_12.1694128201553.pt.trace.json",
    };
    int total = 0;
    for (int r = 0; r < 8; r++) {
        char rel[512];
        snprintf(rel, sizeof rel, DLRM "%s", files[r]);
        mt_trace_t *t = NULL;
        mt_error_t err;
        assert_int_equal(mt_trace_load(corpus_path(rel), NULL, &t, &err), MT_OK);
        assert_int_equal(t->info.rank, r);
        assert_int_equal(t->info.world_size, 8);
        mt_link_stats_t ls;
        assert_int_equal(mt_trace_link(t, &ls), MT_OK);
        assert_int_equal(ls.comm_kernels, 8);
        assert_int_equal(ls.comm_with_coll, 8);
        assert_int_equal(ls.by_cpu_range, 8); /* no metadata in 2023: containment only */
        int a2a = 0, ar = 0;
        for (size_t i = 0; i < t->n_events; i++) {
            const mt_event_t *e = &t->events[i];
            if (e->cls != MT_CLASS_COMM)
                continue;
            total++;
            const mt_coll_t *c = mt_event_coll(t, e);
            assert_non_null(c);
            size_t n;
            const char *cn = mt_strtab_get(t->strings, c->name, &n);
            mt_coll_kind_t k = mt_coll_kind_from_name(cn, n);
            /* the kernel name agrees with the CPU side: SendRecv <-> all_to_all */
            mt_nccl_name_t d;
            size_t kl;
            const char *kn = mt_strtab_get(t->strings, e->name, &kl);
            assert_true(mt_nccl_decode(kn, kl, &d));
            if (d.kind == MT_COLLK_SENDRECV) {
                assert_int_equal(k, MT_COLLK_ALLTOALL);
                a2a++;
            } else {
                assert_int_equal(d.kind, MT_COLLK_ALLREDUCE);
                assert_int_equal(k, MT_COLLK_ALLREDUCE);
                ar++;
            }
            /* every kernel is linked to its launch call */
            assert_int_not_equal(e->aux, 0);
            /* the enclosing nccl:* range gave the message size */
            assert_true(c->in_nelems > 0);
        }
        assert_int_equal(a2a, 5);
        assert_int_equal(ar, 3);
        mt_trace_free(t);
    }
    assert_int_equal(total, 64);
}

/* HTA-NCCL-2024: metadata on the kernels themselves. */
static void test_nccl_metadata_2024(void **state)
{
    (void)state;
    mt_trace_t *t = NULL;
    mt_error_t err;
    assert_int_equal(mt_trace_load(corpus_path("facebookresearch__HolisticTraceAnalysis/tests/data/nccl_parser_config/nccl_data.json.gz"),
                                   NULL, &t, &err),
                     MT_OK);
    mt_link_stats_t ls;
    assert_int_equal(mt_trace_link(t, &ls), MT_OK);
    assert_int_equal(ls.comm_kernels, 21);
    assert_int_equal(ls.comm_with_coll, 21);
    assert_int_equal(ls.by_own_meta, 21);
    assert_int_equal(t->info.rank, 0);
    assert_int_equal(t->n_pgs, 1);
    assert_string_equal(mt_strtab_get(t->strings, t->pgs[0].desc, NULL), "default_pg");
    assert_int_equal(t->info.ts_style, MT_TS_REL);
    assert_true(t->info.has_base);
    mt_trace_free(t);
}

/* HTA large_integer_trace: a Comms Id above INT64_MAX survives exactly. */
static void test_large_comms_id(void **state)
{
    (void)state;
    mt_trace_t *t = NULL;
    mt_error_t err;
    assert_int_equal(mt_trace_load(corpus_path("facebookresearch__HolisticTraceAnalysis/tests/data/large_integer_trace/"
                                               "rank-70.Mar_25_20_48_12.2861.pt.trace.json.gz"),
                                   NULL, &t, &err),
                     MT_OK);
    bool found = false;
    for (size_t i = 0; i < t->n_colls; i++)
        if (t->colls[i].fields & MT_COLL_F_COMMS_ID) {
            assert_true(t->colls[i].comms_id > (uint64_t)INT64_MAX);
            found = true;
        }
    assert_true(found);
    mt_trace_free(t);
}

/* Kineto's own example of enable_cuda_sync_events (docs/traces/
 * before_fix_trace.json): a "Stream Wait Event" and an "Event Sync", both
 * with wait_on_stream and wait_on_cuda_event_record_corr_id -1 (the fix
 * the file documents had not yet filled them). Both records are read;
 * the analysis counts the stream wait unresolved (it names no kernel) and
 * leaves the Event Sync out (a host wait, not a stream's). */
static void test_cuda_sync_records(void **state)
{
    (void)state;
    mt_trace_t *t = NULL;
    mt_error_t err;
    assert_int_equal(mt_trace_load(corpus_path("pytorch__kineto/docs/traces/before_fix_trace.json"), NULL, &t, &err),
                     MT_OK);
    assert_int_equal(t->n_swaits, 2);
    int seen = 0;
    for (size_t i = 0; i < t->n_swaits; i++) {
        const mt_swait_t *w = &t->swaits[i];
        const mt_event_t *e = &t->events[w->event - 1];
        assert_int_equal(e->cat, MT_CAT_CUDA_SYNC);
        assert_int_equal(w->wait_stream, -1);
        assert_int_equal(w->record_corr, -1);
        if (strcmp(mt_event_name(t, e), "Stream Wait Event") == 0) {
            assert_int_equal(mt_event_tid(t, e), 1);
            assert_int_equal(mt_event_corr(t, e), 200);
            seen |= 1;
        } else {
            assert_string_equal(mt_event_name(t, e), "Event Sync");
            assert_int_equal(mt_event_corr(t, e), 300);
            seen |= 2;
        }
    }
    assert_int_equal(seen, 3);
    mt_rank_analysis_t *a = NULL;
    assert_int_equal(mt_analyze_rank(t, 0, NULL, &a), MT_OK);
    assert_int_equal(a->swaits_named, 0);
    assert_int_equal(a->swaits_unresolved, 1);
    assert_null(a->gdeps);
    mt_rank_analysis_free(a);
    mt_trace_free(t);
}

int main(void)
{
    if (access(MT_CORPUS_DIR "/MANIFEST.tsv", R_OK) != 0) {
        printf("SKIP: %s not found (the corpus lives in ../shared/corpus beside the checkout)\n", MT_CORPUS_DIR);
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_corpus_counts),
        cmocka_unit_test(test_corpus_analyses),
        cmocka_unit_test(test_dlrm_links),
        cmocka_unit_test(test_nccl_metadata_2024),
        cmocka_unit_test(test_large_comms_id),
        cmocka_unit_test(test_cuda_sync_records),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
