/* GPU activity classes and NCCL/RCCL kernel-name decoding (FORMAT.md 6.4). */
#include "mergetrace/classify.h"

#include <stdlib.h>
#include <string.h>

static const char *const kind_text[MT_COLLK_COUNT_] = {
    [MT_COLLK_UNKNOWN] = "unknown", [MT_COLLK_ALLREDUCE] = "allreduce",
    [MT_COLLK_ALLGATHER] = "allgather", [MT_COLLK_REDUCESCATTER] = "reducescatter",
    [MT_COLLK_BROADCAST] = "broadcast", [MT_COLLK_REDUCE] = "reduce",
    [MT_COLLK_ALLTOALL] = "alltoall", [MT_COLLK_SENDRECV] = "sendrecv",
    [MT_COLLK_SEND] = "send", [MT_COLLK_RECV] = "recv", [MT_COLLK_BARRIER] = "barrier",
    [MT_COLLK_GATHER] = "gather", [MT_COLLK_SCATTER] = "scatter",
    [MT_COLLK_GENERIC] = "generic", [MT_COLLK_WAIT] = "wait",
};

const char *mt_coll_kind_str(mt_coll_kind_t k)
{
    return (unsigned)k < MT_COLLK_COUNT_ ? kind_text[k] : "unknown";
}

static bool starts(const char *s, size_t n, const char *lit)
{
    size_t l = strlen(lit);
    return n >= l && memcmp(s, lit, l) == 0;
}

mt_coll_kind_t mt_coll_kind_from_name(const char *s, size_t len)
{
    /* Normalise: lower case, letters only ("_allgather_base" -> "allgatherbase"). */
    char b[64];
    size_t n = 0;
    for (size_t i = 0; i < len && n < sizeof b; i++) {
        char c = s[i];
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if (c >= 'a' && c <= 'z')
            b[n++] = c;
    }
    if (starts(b, n, "allreduce")) return MT_COLLK_ALLREDUCE;
    if (starts(b, n, "allgather")) return MT_COLLK_ALLGATHER;
    if (starts(b, n, "reducescatter")) return MT_COLLK_REDUCESCATTER;
    if (starts(b, n, "broadcast")) return MT_COLLK_BROADCAST;
    if (starts(b, n, "alltoall")) return MT_COLLK_ALLTOALL;
    if (starts(b, n, "sendrecv")) return MT_COLLK_SENDRECV;
    if (starts(b, n, "send")) return MT_COLLK_SEND;
    if (starts(b, n, "recv")) return MT_COLLK_RECV;
    if (starts(b, n, "barrier")) return MT_COLLK_BARRIER;
    if (starts(b, n, "reduce")) return MT_COLLK_REDUCE;
    if (starts(b, n, "gather")) return MT_COLLK_GATHER;
    if (starts(b, n, "scatter")) return MT_COLLK_SCATTER;
    if (starts(b, n, "wait")) return MT_COLLK_WAIT;
    return MT_COLLK_UNKNOWN;
}

static mt_coll_kind_t kernel_coll(const char *s, size_t n)
{
    static const struct { const char *name; mt_coll_kind_t k; } tab[] = {
        {"AllReduce", MT_COLLK_ALLREDUCE}, {"AllGather", MT_COLLK_ALLGATHER},
        {"ReduceScatter", MT_COLLK_REDUCESCATTER}, {"Broadcast", MT_COLLK_BROADCAST},
        {"Reduce", MT_COLLK_REDUCE}, {"SendRecv", MT_COLLK_SENDRECV},
        {"AllToAllPivot", MT_COLLK_ALLTOALL}, {"AllToAll", MT_COLLK_ALLTOALL},
        {"Generic", MT_COLLK_GENERIC}, {"Send", MT_COLLK_SEND}, {"Recv", MT_COLLK_RECV},
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        if (strlen(tab[i].name) == n && memcmp(tab[i].name, s, n) == 0)
            return tab[i].k;
    return MT_COLLK_UNKNOWN;
}

/* Algorithms, two-word ones first so NVLS_TREE is not read as NVLS. */
static const char *const algos[] = {
    "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS_TREE", "COLLNET", "NVLS", "TREE", "RING", "PAT",
};

static size_t match_algo(const char *s, size_t n)
{
    for (size_t i = 0; i < sizeof algos / sizeof algos[0]; i++) {
        size_t l = strlen(algos[i]);
        if (n >= l && memcmp(s, algos[i], l) == 0 && (n == l || s[l] == '_'))
            return l;
    }
    return 0;
}

static bool is_proto(const char *s, size_t n)
{
    return (n == 2 && memcmp(s, "LL", 2) == 0) || (n == 5 && memcmp(s, "LL128", 5) == 0) ||
           (n == 6 && memcmp(s, "SIMPLE", 6) == 0);
}

int mt_nccl_decode(const char *name, size_t len, mt_nccl_name_t *out)
{
    mt_nccl_name_t r = {0};
    const char *paren = memchr(name, '(', len);
    size_t n = paren ? (size_t)(paren - name) : len;
    const char *s;
    if (starts(name, n, "ncclDevKernel_")) {
        r.generation = 2;
        s = name + 14;
    } else if (starts(name, n, "ncclKernel_")) {
        r.generation = 1;
        s = name + 11;
    } else if (starts(name, n, "mscclKernel_")) {
        r.generation = 3;
        r.kind = MT_COLLK_GENERIC;
        s = name + 12;
        /* mscclKernel_<redop>_<type>_<proto>...: the collective is not named. */
        const char *e = name + n, *u = memchr(s, '_', (size_t)(e - s));
        if (u) {
            r.redop = s;
            r.redop_len = (size_t)(u - s);
            const char *t = u + 1, *u2 = memchr(t, '_', (size_t)(e - t));
            r.dtype = t;
            r.dtype_len = u2 ? (size_t)(u2 - t) : (size_t)(e - t);
            if (u2) {
                r.proto = u2 + 1;
                const char *u3 = memchr(r.proto, '_', (size_t)(e - r.proto));
                r.proto_len = u3 ? (size_t)(u3 - r.proto) : (size_t)(e - r.proto);
            }
        }
        if (out)
            *out = r;
        return 1;
    } else {
        return 0;
    }
    const char *e = name + n;
    /* Collective: up to the next '_' or the end. */
    const char *u = memchr(s, '_', (size_t)(e - s));
    size_t cl = u ? (size_t)(u - s) : (size_t)(e - s);
    r.kind = kernel_coll(s, cl);
    if (r.kind == MT_COLLK_UNKNOWN)
        return 0;
    const char *rest = u ? u + 1 : e;
    size_t rn = (size_t)(e - rest);
    if (r.generation == 1) {
        /* <ALGO>_<PROTO>_<RedOp>_<type> */
        size_t al = match_algo(rest, rn);
        if (al) {
            r.algo = rest;
            r.algo_len = al;
            const char *p = rest + al + (al < rn);
            const char *q = memchr(p, '_', (size_t)(e - p));
            size_t pl = q ? (size_t)(q - p) : (size_t)(e - p);
            if (is_proto(p, pl)) {
                r.proto = p;
                r.proto_len = pl;
                if (q) {
                    const char *ro = q + 1;
                    const char *q2 = memchr(ro, '_', (size_t)(e - ro));
                    r.redop = ro;
                    r.redop_len = q2 ? (size_t)(q2 - ro) : (size_t)(e - ro);
                    if (q2) {
                        r.dtype = q2 + 1;
                        r.dtype_len = (size_t)(e - q2 - 1);
                    }
                }
            }
        }
    } else if (rn) {
        /* [<RedOp>_<type>_]<ALGO>_<PROTO>: read the protocol from the end,
         * then find the algorithm before it. */
        const char *lu = NULL;
        for (const char *p = e - 1; p >= rest; p--)
            if (*p == '_') {
                lu = p;
                break;
            }
        const char *pp = lu ? lu + 1 : rest;
        size_t pl = (size_t)(e - pp);
        if (is_proto(pp, pl)) {
            r.proto = pp;
            r.proto_len = pl;
            /* The algorithm ends at lu; try each known algorithm as a suffix. */
            for (size_t i = 0; lu && i < sizeof algos / sizeof algos[0]; i++) {
                size_t l = strlen(algos[i]);
                if ((size_t)(lu - rest) >= l && memcmp(lu - l, algos[i], l) == 0 &&
                    (lu - l == rest || lu[-(ptrdiff_t)l - 1] == '_')) {
                    r.algo = lu - l;
                    r.algo_len = l;
                    break;
                }
            }
            if (r.algo && r.algo > rest) {
                const char *mid = rest, *mend = r.algo - 1; /* "<RedOp>_<type>" */
                const char *q = memchr(mid, '_', (size_t)(mend - mid));
                r.redop = mid;
                r.redop_len = q ? (size_t)(q - mid) : (size_t)(mend - mid);
                if (q) {
                    r.dtype = q + 1;
                    r.dtype_len = (size_t)(mend - q - 1);
                }
            }
        }
    }
    if (out)
        *out = r;
    return 1;
}

mt_status_t mt_trace_classify(mt_trace_t *t)
{
    /* Kernel names repeat: decode each distinct name once. */
    uint32_t n_names = mt_strtab_count(t->strings);
    unsigned char *is_comm = calloc(n_names ? n_names : 1, 1); /* 0 unknown, 1 no, 2 yes */
    if (!is_comm)
        return MT_ERR_NOMEM;
    for (size_t i = 0; i < t->n_events; i++) {
        mt_event_t *e = &t->events[i];
        mt_class_t c = MT_CLASS_NONE;
        if (e->ph == MT_PH_X) {
            switch (mt_cat_normal((mt_cat_t)e->cat)) {
            case MT_CAT_KERNEL: {
                if (!is_comm[e->name]) {
                    size_t len;
                    const char *nm = mt_strtab_get(t->strings, e->name, &len);
                    is_comm[e->name] = mt_nccl_decode(nm, len, NULL) ? 2 : 1;
                }
                const mt_coll_t *co = mt_event_coll(t, e);
                bool meta = co && (co->fields & (MT_COLL_F_NAME | MT_COLL_F_PG_NAME | MT_COLL_F_COMMS_ID));
                c = is_comm[e->name] == 2 || meta ? MT_CLASS_COMM : MT_CLASS_COMPUTE;
                break;
            }
            case MT_CAT_GPU_MEMCPY: c = MT_CLASS_MEMCPY; break;
            case MT_CAT_GPU_MEMSET: c = MT_CLASS_MEMSET; break;
            case MT_CAT_CUDA_SYNC: c = MT_CLASS_SYNC; break;
            case MT_CAT_GPU_USER_ANNOTATION: c = MT_CLASS_GPU_ANNOTATION; break;
            default: break;
            }
        }
        e->cls = (uint8_t)c;
    }
    free(is_comm);
    return MT_OK;
}
