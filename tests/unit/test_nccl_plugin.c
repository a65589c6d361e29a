/* Tests of libnccl-profiler-mergetrace.so without a GPU: each case forks a
 * child that dlopens the built plugin, drives it the way NCCL does with
 * descriptors built here from raw byte offsets (not from the plugin's own
 * struct declarations), and exits; the parent then parses the JSON lines
 * with the small flat-object reader below and checks every field against
 * what the child fed in. */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "mergetrace/collectives.h"
#include "mergetrace/nccl_input.h"
#include "fr/fr.h"
#include "test_util.h"

#ifndef MT_NCCL_PLUGIN_PATH
#error "MT_NCCL_PLUGIN_PATH must name the built plugin"
#endif

/* ---- the interface as raw bytes ---- */

enum { T_COLL = 1 << 1, T_P2P = 1 << 2, T_PROXY_OP = 1 << 3, T_KCH = 1 << 6 };
enum { KCH_STOP = 22 };

typedef int (*init56_fn)(void **, uint64_t, int *, const char *, int, int, int, void *);
typedef int (*init4_fn)(void **, int *, const char *, uint64_t, int, int, int, void *);
typedef int (*start_fn)(void *, void **, void *);
typedef int (*stop_fn)(void *);
typedef int (*state_fn)(void *, int, void *);
typedef int (*fin_fn)(void *);

typedef struct api {
    int abi;
    const char *name;
    void *init;
    start_fn start;
    stop_fn stop;
    state_fn state;
    fin_fn fin;
} api_t;

/* Reads the table: a name pointer then five function pointers, 8 bytes
 * apart. */
static bool api_load(void *lib, int abi, api_t *a)
{
    char sym[32];
    snprintf(sym, sizeof sym, "ncclProfiler_v%d", abi);
    const unsigned char *t = dlsym(lib, sym);
    if (!t)
        return false;
    a->abi = abi;
    memcpy(&a->name, t + 0, 8);
    memcpy(&a->init, t + 8, 8);
    memcpy(&a->start, t + 16, 8);
    memcpy(&a->stop, t + 24, 8);
    memcpy(&a->state, t + 32, 8);
    memcpy(&a->fin, t + 40, 8);
    return true;
}

static int api_init(const api_t *a, void **ctx, uint64_t hash, int *mask, const char *name,
                    int n_nodes, int nranks, int rank)
{
    if (a->abi == 4) {
        init4_fn f;
        memcpy(&f, &a->init, sizeof f);
        return f(ctx, mask, name, hash, n_nodes, nranks, rank, NULL);
    }
    init56_fn f;
    memcpy(&f, &a->init, sizeof f);
    return f(ctx, hash, mask, name, n_nodes, nranks, rank, NULL);
}

typedef struct descr {
    _Alignas(8) unsigned char b[112];
} descr_t;

static void put8(descr_t *d, size_t off, uint64_t v) { memcpy(d->b + off, &v, 8); }
static void put4(descr_t *d, size_t off, int32_t v) { memcpy(d->b + off, &v, 4); }
static void putp(descr_t *d, size_t off, const void *p) { memcpy(d->b + off, &p, 8); }

/* v4 has a one-byte type: the other seven bytes are left as garbage to
 * check that the plugin reads only the one. */
static void put_type(descr_t *d, int abi, int type)
{
    memset(d->b, 0xA5, 8);
    if (abi == 4)
        d->b[0] = (unsigned char)type;
    else
        put8(d, 0, (uint64_t)type);
}

typedef struct coll_in {
    uint64_t seq;
    const char *func, *datatype, *algo, *proto;
    uint64_t count;
    int root, rank;
    uint8_t nch, nwarps;
} coll_in_t;

static void make_coll(descr_t *d, int abi, const coll_in_t *c)
{
    memset(d->b, 0x5A, sizeof d->b);
    put_type(d, abi, T_COLL);
    putp(d, 8, NULL);
    put4(d, 16, c->rank);
    put8(d, 24, c->seq);
    putp(d, 32, c->func);
    putp(d, 40, (void *)0x1000);
    putp(d, 48, (void *)0x2000);
    put8(d, 56, c->count);
    put4(d, 64, c->root);
    putp(d, 72, c->datatype);
    d->b[80] = c->nch;
    d->b[81] = c->nwarps;
    putp(d, 88, c->algo);
    putp(d, 96, c->proto);
    if (abi != 4)
        putp(d, 104, NULL);
}

static void make_p2p(descr_t *d, int abi, int rank, const char *func, const char *dt,
                     uint64_t count, int peer, uint8_t nch)
{
    memset(d->b, 0x5A, sizeof d->b);
    put_type(d, abi, T_P2P);
    putp(d, 8, NULL);
    put4(d, 16, rank);
    putp(d, 24, func);
    putp(d, 32, (void *)0x3000);
    putp(d, 40, dt);
    put8(d, 48, count);
    put4(d, 56, peer);
    d->b[60] = nch;
}

static void make_kch(descr_t *d, int abi, void *parent, int rank, uint8_t ch, uint64_t gpu_start)
{
    memset(d->b, 0x5A, sizeof d->b);
    put_type(d, abi, T_KCH);
    putp(d, 8, parent);
    put4(d, 16, rank);
    d->b[24] = ch;
    put8(d, 32, gpu_start);
}

static int kch_stop(const api_t *a, void *h, uint64_t gpu_stop)
{
    _Alignas(8) unsigned char args[8];
    memcpy(args, &gpu_stop, 8);
    return a->state(h, KCH_STOP, args);
}

/* ---- what the child feeds in (the parent recomputes the same values) ---- */

#define NTHREADS 4
#define NCOLL 40
#define NP2P 6

static const char *const FUNCS[] = {"AllReduce", "AllGather", "ReduceScatter"};
static const char *const DTYPES[] = {"ncclFloat32", "ncclBfloat16"};
static const char *const ALGOS[] = {"RING", "TREE", "NVLS"};
static const char *const PROTOS[] = {"SIMPLE", "LL128", "LL"};

static uint64_t comm_hash(int t) { return 0xf0e1d2c3b4a59687ULL ^ (uint64_t)t; }

static coll_in_t coll_of(int t, int i)
{
    coll_in_t c = {
        .seq = (uint64_t)(i / 3), /* per func: each func appears every 3rd call */
        .func = FUNCS[i % 3],
        .datatype = DTYPES[(i + t) % 2],
        .algo = ALGOS[i % 3],
        .proto = PROTOS[(i + 1) % 3],
        .count = 1000000ULL * (uint64_t)(t + 1) + (uint64_t)i,
        .root = i % 3 == 0 ? -1 : t,
        .rank = t,
        .nch = (uint8_t)(2 + i % 5),
        .nwarps = 16,
    };
    return c;
}

/* GPU stamps: distinct per thread, collective and channel. */
static uint64_t gpu_start(int t, int i, int ch)
{
    return 5000000000000ULL + (uint64_t)t * 100000000ULL + (uint64_t)i * 10000ULL + (uint64_t)ch * 7ULL;
}
static uint64_t gpu_stop(int t, int i, int ch) { return gpu_start(t, i, ch) + 3000 + (uint64_t)ch; }

/* ---- child side ---- */

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "child: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    _exit(3);
}

static api_t g_api;

/* One communicator per thread, driven like NCCL: Coll start, two kernel
 * channels start, Coll stop, the channels' stop stamps, channel stops.
 * Every fourth collective gets a third channel that starts only after the
 * collective stopped. Then P2P sends with one channel each. */
static void *drive_thread(void *arg)
{
    int t = (int)(intptr_t)arg;
    const api_t *a = &g_api;
    void *ctx = NULL;
    int mask = -1;
    char name[32];
    snprintf(name, sizeof name, "comm \"%d\"\\\t\xc3\xa9\xff", t);
    if (api_init(a, &ctx, comm_hash(t), &mask, name, 2, 16, t) != 0 || !ctx)
        die("init failed");
    if (mask != (T_COLL | T_P2P | T_KCH))
        die("mask %d", mask);
    for (int i = 0; i < NCOLL; i++) {
        coll_in_t c = coll_of(t, i);
        descr_t d;
        make_coll(&d, a->abi, &c);
        void *ch = NULL, *k[3] = {NULL, NULL, NULL};
        if (a->start(ctx, &ch, &d) != 0 || !ch)
            die("coll start");
        for (int j = 0; j < 2; j++) {
            make_kch(&d, a->abi, ch, t, (uint8_t)j, gpu_start(t, i, j));
            if (a->start(ctx, &k[j], &d) != 0 || !k[j])
                die("kch start");
        }
        if (a->stop(ch) != 0)
            die("coll stop");
        int nk = 2;
        if (i % 4 == 0) {
            make_kch(&d, a->abi, ch, t, 2, gpu_start(t, i, 2));
            if (a->start(ctx, &k[2], &d) != 0 || !k[2])
                die("late kch start");
            nk = 3;
        }
        for (int j = 0; j < nk; j++)
            if (kch_stop(a, k[j], gpu_stop(t, i, j)) != 0)
                die("kch state");
        for (int j = 0; j < nk; j++)
            if (a->stop(k[j]) != 0)
                die("kch stop");
    }
    for (int i = 0; i < NP2P; i++) {
        descr_t d;
        make_p2p(&d, a->abi, t, i % 2 ? "Recv" : "Send", "ncclInt8", 4096u * (unsigned)(i + 1),
                 (t + 1) % NTHREADS, 1);
        void *ph = NULL, *kh = NULL;
        if (a->start(ctx, &ph, &d) != 0 || !ph)
            die("p2p start");
        make_kch(&d, a->abi, ph, t, 9, gpu_start(t, 1000 + i, 9));
        if (a->start(ctx, &kh, &d) != 0 || !kh)
            die("p2p kch start");
        if (kch_stop(a, kh, gpu_stop(t, 1000 + i, 9)) || a->stop(kh) || a->stop(ph))
            die("p2p stops");
    }
    if (a->fin(ctx) != 0)
        die("finalize");
    return NULL;
}

static void *child_open(int abi)
{
    void *lib = dlopen(MT_NCCL_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        die("dlopen: %s", dlerror());
    if (!api_load(lib, abi, &g_api))
        die("no table v%d", abi);
    return lib;
}

static void child_env(const char *dir, const char *ring, const char *pool)
{
    setenv("MERGETRACE_NCCL_DIR", dir, 1);
    setenv("MERGETRACE_NCCL_FLUSH_MS", "0", 1); /* no writer thread: drops are exact */
    unsetenv("MERGETRACE_NCCL_MASK");
    if (ring)
        setenv("MERGETRACE_NCCL_RING", ring, 1);
    else
        unsetenv("MERGETRACE_NCCL_RING");
    if (pool)
        setenv("MERGETRACE_NCCL_POOL", pool, 1);
    else
        unsetenv("MERGETRACE_NCCL_POOL");
}

static void child_threads(int abi, const char *dir)
{
    child_env(dir, NULL, NULL);
    if (abi < 0) { /* the writer thread on, a ring too small to keep up */
        abi = -abi;
        setenv("MERGETRACE_NCCL_FLUSH_MS", "1", 1);
        setenv("MERGETRACE_NCCL_CLOCK_MS", "1", 1);
        setenv("MERGETRACE_NCCL_RING", "16", 1);
    }
    child_open(abi);
    pthread_t th[NTHREADS];
    for (int t = 0; t < NTHREADS; t++)
        if (pthread_create(&th[t], NULL, drive_thread, (void *)(intptr_t)t) != 0)
            die("pthread_create");
    for (int t = 0; t < NTHREADS; t++)
        pthread_join(th[t], NULL);
    exit(0);
}

/* ---- parent side: run a child, read its file ---- */

static int64_t realtime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void fresh_dir(char *dir, size_t cap, const char *tag)
{
    snprintf(dir, cap, "%s/nccl_plugin_%s", MT_TEST_TMP, tag);
    DIR *dp = opendir(dir);
    if (dp) {
        struct dirent *e;
        char p[1024];
        while ((e = readdir(dp)))
            if (e->d_name[0] != '.' || strlen(e->d_name) > 2) {
                snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
                unlink(p);
            }
        closedir(dp);
        rmdir(dir);
    }
}

typedef void (*child_fn)(int abi, const char *dir);

static int run_child(child_fn fn, int abi, const char *dir)
{
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        fn(abi, dir);
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    return pid;
}

/* Lines of the file <dir>/<host>-pid<pid>.jsonl; NULL-terminated. */
static char **read_lines(const char *dir, int pid, size_t *n)
{
    char host[256] = "unknown-host", path[1024];
    gethostname(host, sizeof host - 1);
    snprintf(path, sizeof path, "%s/%s-pid%d.jsonl", dir, host, pid);
    FILE *f = fopen(path, "r");
    if (!f)
        fail_msg("no output file %s", path);
    size_t cap = 256;
    char **lines = calloc(cap, sizeof *lines);
    *n = 0;
    char *line = NULL;
    size_t lcap = 0;
    ssize_t len;
    while ((len = getline(&line, &lcap, f)) > 0) {
        assert_int_equal(line[len - 1], '\n');
        line[len - 1] = '\0';
        if (*n + 1 >= cap) {
            cap *= 2;
            lines = realloc(lines, cap * sizeof *lines);
        }
        lines[(*n)++] = strdup(line);
    }
    lines[*n] = NULL;
    free(line);
    fclose(f);
    /* The temporary name is gone once the file is in place. */
    snprintf(path, sizeof path, "%s/.%s-pid%d.jsonl.tmp", dir, host, pid);
    assert_int_equal(access(path, F_OK), -1);
    return lines;
}

static void free_lines(char **lines)
{
    for (size_t i = 0; lines[i]; i++)
        free(lines[i]);
    free(lines);
}

/* ---- a strict reader for flat JSON objects ---- */

enum { V_STR, V_INT, V_NULL };
typedef struct kv {
    char key[32];
    int kind;
    char str[160];
    int64_t num;
    bool is_uint_big;
    uint64_t unum;
} kv_t;

typedef struct obj {
    kv_t kv[40];
    int n;
} obj_t;

/* Parses one line; fails the test on anything but a flat object of
 * strings, integers and nulls with no duplicate keys. */
static void parse_obj(const char *s, obj_t *o)
{
    const char *line = s;
    o->n = 0;
    if (*s++ != '{')
        fail_msg("not an object: %s", line);
    for (;;) {
        if (o->n == 40)
            fail_msg("too many keys: %s", line);
        kv_t *kv = &o->kv[o->n];
        memset(kv, 0, sizeof *kv);
        if (*s++ != '"')
            fail_msg("expected key: %s", line);
        size_t k = 0;
        while (*s && *s != '"') {
            if (k + 1 >= sizeof kv->key)
                fail_msg("key too long: %s", line);
            kv->key[k++] = *s++;
        }
        if (*s++ != '"' || *s++ != ':')
            fail_msg("expected ':' : %s", line);
        for (int j = 0; j < o->n; j++)
            if (!strcmp(o->kv[j].key, kv->key))
                fail_msg("duplicate key %s: %s", kv->key, line);
        if (*s == '"') {
            s++;
            size_t m = 0;
            while (*s != '"') {
                unsigned c = (unsigned char)*s++;
                if (c < 0x20)
                    fail_msg("raw control byte: %s", line);
                if (c == '\\') {
                    c = (unsigned char)*s++;
                    if (c == 'u') {
                        unsigned v = 0;
                        for (int d = 0; d < 4; d++) {
                            char h = *s++;
                            v = v * 16 + (unsigned)(h >= 'a' ? h - 'a' + 10 : h >= 'A' ? h - 'A' + 10 : h - '0');
                        }
                        c = v;
                    } else if (c != '"' && c != '\\' && c != '/') {
                        fail_msg("unexpected escape: %s", line);
                    }
                }
                if (m + 1 >= sizeof kv->str)
                    fail_msg("string too long: %s", line);
                kv->str[m++] = (char)c;
            }
            s++;
            kv->kind = V_STR;
        } else if (!strncmp(s, "null", 4)) {
            s += 4;
            kv->kind = V_NULL;
        } else {
            bool neg = *s == '-';
            if (neg)
                s++;
            if (*s < '0' || *s > '9')
                fail_msg("bad value for %s: %s", kv->key, line);
            uint64_t v = 0;
            while (*s >= '0' && *s <= '9')
                v = v * 10 + (uint64_t)(*s++ - '0');
            kv->kind = V_INT;
            kv->unum = v;
            kv->num = neg ? -(int64_t)v : (int64_t)v;
        }
        o->n++;
        if (*s == ',') {
            s++;
            continue;
        }
        if (*s++ != '}' || *s != '\0')
            fail_msg("expected '}' at the end: %s", line);
        return;
    }
}

static const kv_t *get(const obj_t *o, const char *key)
{
    for (int i = 0; i < o->n; i++)
        if (!strcmp(o->kv[i].key, key))
            return &o->kv[i];
    fail_msg("missing key %s", key);
    return NULL;
}

static int64_t geti(const obj_t *o, const char *key)
{
    const kv_t *kv = get(o, key);
    if (kv->kind != V_INT)
        fail_msg("%s is not an integer", key);
    return kv->num;
}

static uint64_t getu(const obj_t *o, const char *key)
{
    const kv_t *kv = get(o, key);
    if (kv->kind != V_INT)
        fail_msg("%s is not an integer", key);
    return kv->unum;
}

static const char *gets_(const obj_t *o, const char *key)
{
    const kv_t *kv = get(o, key);
    if (kv->kind != V_STR)
        fail_msg("%s is not a string", key);
    return kv->str;
}

static bool is_type(const obj_t *o, const char *type) { return !strcmp(gets_(o, "type"), type); }

/* Every record of a driving thread carries that thread's id, and no two
 * threads share one. */
static void check_tid(int64_t tids[], int t, const obj_t *o)
{
    int64_t tid = geti(o, "tid");
    assert_true(tid > 0);
    if (tids[t] == 0) {
        for (int u = 0; u < NTHREADS; u++)
            assert_true(tids[u] != tid);
        tids[t] = tid;
    }
    assert_int_equal(tids[t], tid);
}

static int thread_of_comm(const char *hex)
{
    for (int t = 0; t < NTHREADS; t++) {
        char want[17];
        snprintf(want, sizeof want, "%016" PRIx64, comm_hash(t));
        if (!strcmp(hex, want))
            return t;
    }
    fail_msg("unknown comm %s", hex);
    return -1;
}

/* ---- the cases ---- */

static void test_exports(void **state)
{
    (void)state;
    void *lib = dlopen(MT_NCCL_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
    assert_non_null(lib);
    for (int abi = 4; abi <= 6; abi++) {
        api_t a;
        assert_true(api_load(lib, abi, &a));
        assert_string_equal(a.name, "mergetrace");
        assert_non_null(a.init);
        assert_non_null(a.start);
        assert_non_null(a.stop);
        assert_non_null(a.state);
        assert_non_null(a.fin);
    }
    /* Nothing else is visible: internal functions and state are hidden. */
    const char *hidden[] = {"ncclProfiler_v3", "ncclProfiler_v7", "start_common", "init_common",
                            "drain_locked", "g_pool", "g_cfg", "push", "finalize", "stop_event"};
    for (size_t i = 0; i < sizeof hidden / sizeof *hidden; i++)
        assert_null(dlsym(lib, hidden[i]));
    /* Loading alone creates no file and no thread; unloading is clean. */
    assert_int_equal(dlclose(lib), 0);
}

/* Checks the file of child_threads: every record, every field. lossy:
 * records may be missing, but then the final count of dropped records
 * says how many, and none is written twice. */
static void check_threads_file(int abi, const char *dir, int pid, int64_t t0, int64_t t1,
                               bool lossy)
{
    int64_t records = 0, final_drops = -1;
    int64_t tids[NTHREADS] = {0};
    size_t n;
    char **lines = read_lines(dir, pid, &n);
    static obj_t o;
    int inits[NTHREADS] = {0};
    int colls[NTHREADS][NCOLL];
    int kchs[NTHREADS][NCOLL][3];
    int p2ps[NTHREADS][NP2P], p2pk[NTHREADS][NP2P];
    memset(colls, 0, sizeof colls);
    memset(kchs, 0, sizeof kchs);
    memset(p2ps, 0, sizeof p2ps);
    memset(p2pk, 0, sizeof p2pk);
    uint64_t coll_id[NTHREADS][NCOLL], p2p_id[NTHREADS][NP2P];
    int64_t coll_hs[NTHREADS][NCOLL], p2p_hs[NTHREADS][NP2P];
    int opens[NTHREADS][NCOLL + NP2P], kopens[NTHREADS][NCOLL + NP2P]; /* open lines per task, of it and its kernel */
    memset(opens, 0, sizeof opens);
    memset(kopens, 0, sizeof kopens);
    int clocks = 0, stats = 0;
    bool saw_end = false;
    assert_true(n > 0);
    parse_obj(lines[0], &o);
    assert_true(is_type(&o, "process"));
    assert_string_equal(gets_(&o, "format"), "mergetrace-nccl");
    assert_int_equal(geti(&o, "version"), 1);
    assert_int_equal(geti(&o, "pid"), pid);
    assert_int_equal(geti(&o, "abi"), abi);
    assert_int_equal(geti(&o, "mask"), T_COLL | T_P2P | T_KCH);
    char host[256] = "unknown-host";
    gethostname(host, sizeof host - 1);
    assert_string_equal(gets_(&o, "host"), host);

    /* First pass: coll/p2p ids, so channels can be checked against them. */
    for (size_t i = 1; i < n; i++) {
        parse_obj(lines[i], &o);
        if (is_type(&o, "coll")) {
            int t = thread_of_comm(gets_(&o, "comm"));
            /* identify the collective by count (unique per thread) */
            uint64_t cnt = getu(&o, "count");
            int ci = (int)(cnt - 1000000ULL * (uint64_t)(t + 1));
            assert_true(ci >= 0 && ci < NCOLL);
            coll_in_t c = coll_of(t, ci);
            assert_int_equal(colls[t][ci]++, 0);
            records++;
            check_tid(tids, t, &o);
            coll_id[t][ci] = getu(&o, "id");
            assert_int_equal(geti(&o, "rank"), t);
            assert_string_equal(gets_(&o, "func"), c.func);
            assert_int_equal(getu(&o, "seq"), c.seq);
            assert_string_equal(gets_(&o, "datatype"), c.datatype);
            assert_int_equal(geti(&o, "root"), c.root);
            assert_string_equal(gets_(&o, "algo"), c.algo);
            assert_string_equal(gets_(&o, "proto"), c.proto);
            assert_int_equal(geti(&o, "nChannels"), c.nch);
            assert_int_equal(geti(&o, "nWarps"), c.nwarps);
            int64_t hs = geti(&o, "host_start_ns"), he = geti(&o, "host_stop_ns");
            assert_true(t0 <= hs && hs <= he && he <= t1);
            coll_hs[t][ci] = hs;
        } else if (is_type(&o, "p2p")) {
            int t = thread_of_comm(gets_(&o, "comm"));
            uint64_t cnt = getu(&o, "count");
            assert_true(cnt % 4096 == 0 && cnt / 4096 >= 1 && cnt / 4096 <= NP2P);
            int pi = (int)(cnt / 4096) - 1;
            assert_int_equal(p2ps[t][pi]++, 0);
            records++;
            check_tid(tids, t, &o);
            p2p_id[t][pi] = getu(&o, "id");
            assert_int_equal(geti(&o, "rank"), t);
            assert_string_equal(gets_(&o, "func"), pi % 2 ? "Recv" : "Send");
            assert_string_equal(gets_(&o, "datatype"), "ncclInt8");
            assert_int_equal(geti(&o, "peer"), (t + 1) % NTHREADS);
            assert_int_equal(geti(&o, "nChannels"), 1);
            int64_t hs = geti(&o, "host_start_ns"), he = geti(&o, "host_stop_ns");
            assert_true(t0 <= hs && hs <= he && he <= t1);
            p2p_hs[t][pi] = hs;
        }
    }
    for (size_t i = 1; i < n; i++) {
        parse_obj(lines[i], &o);
        if (is_type(&o, "init")) {
            int t = thread_of_comm(gets_(&o, "comm"));
            inits[t]++;
            records++;
            check_tid(tids, t, &o);
            char name[32];
            snprintf(name, sizeof name, "comm \"%d\"\\\t\xc3\xa9\xff", t);
            assert_string_equal(gets_(&o, "name"), name);
            assert_int_equal(geti(&o, "rank"), t);
            assert_int_equal(geti(&o, "nranks"), 16);
            assert_int_equal(geti(&o, "nNodes"), 2);
            int64_t rt = geti(&o, "realtime_ns");
            assert_true(t0 <= rt && rt <= t1);
            assert_true(geti(&o, "monotonic_ns") > 0);
        } else if (is_type(&o, "kch")) {
            int t = thread_of_comm(gets_(&o, "comm"));
            assert_int_equal(geti(&o, "rank"), t);
            records++;
            check_tid(tids, t, &o);
            int ch = (int)geti(&o, "channel");
            uint64_t gs = getu(&o, "gpu_start_ns");
            int64_t seen_s = geti(&o, "gpu_start_seen_ns"), seen_e = geti(&o, "gpu_stop_seen_ns");
            assert_true(t0 <= seen_s && seen_s <= seen_e && seen_e <= t1);
            uint64_t parent = getu(&o, "parent");
            if (!strcmp(gets_(&o, "parent_type"), "coll")) {
                int ci = (int)((gs - gpu_start(t, 0, ch)) / 10000);
                assert_true(ci >= 0 && ci < NCOLL && ch >= 0 && ch < 3);
                assert_int_equal(gs, gpu_start(t, ci, ch));
                assert_int_equal(getu(&o, "gpu_stop_ns"), gpu_stop(t, ci, ch));
                if (colls[t][ci])
                    assert_int_equal(parent, coll_id[t][ci]);
                assert_string_equal(gets_(&o, "func"), coll_of(t, ci).func);
                assert_int_equal(getu(&o, "seq"), coll_of(t, ci).seq);
                assert_int_equal(kchs[t][ci][ch]++, 0);
            } else {
                assert_string_equal(gets_(&o, "parent_type"), "p2p");
                assert_int_equal(ch, 9);
                int pi = (int)((gs - gpu_start(t, 1000, 9)) / 10000);
                assert_true(pi >= 0 && pi < NP2P);
                assert_int_equal(gs, gpu_start(t, 1000 + pi, 9));
                assert_int_equal(getu(&o, "gpu_stop_ns"), gpu_stop(t, 1000 + pi, 9));
                if (p2ps[t][pi])
                    assert_int_equal(parent, p2p_id[t][pi]);
                assert_string_equal(gets_(&o, "func"), pi % 2 ? "Recv" : "Send");
                assert_int_equal(p2pk[t][pi]++, 0);
            }
        } else if (is_type(&o, "open")) {
            /* a task's start, with the fields its coll/p2p line repeats, or
             * its kernel's first channel start (channel 0, or 9 for P2P) */
            int t = thread_of_comm(gets_(&o, "comm"));
            assert_int_equal(geti(&o, "rank"), t);
            records++;
            check_tid(tids, t, &o);
            const char *of = gets_(&o, "of");
            if (!strcmp(of, "coll")) {
                int ci = (int)(getu(&o, "count") - 1000000ULL * (uint64_t)(t + 1));
                assert_true(ci >= 0 && ci < NCOLL);
                assert_int_equal(opens[t][ci]++, 0);
                assert_string_equal(gets_(&o, "func"), coll_of(t, ci).func);
                assert_int_equal(getu(&o, "seq"), coll_of(t, ci).seq);
                assert_string_equal(gets_(&o, "datatype"), coll_of(t, ci).datatype);
                if (colls[t][ci]) {
                    assert_int_equal(getu(&o, "id"), coll_id[t][ci]);
                    assert_int_equal(geti(&o, "host_start_ns"), coll_hs[t][ci]);
                }
            } else if (!strcmp(of, "p2p")) {
                uint64_t cnt = getu(&o, "count");
                assert_true(cnt % 4096 == 0 && cnt / 4096 >= 1 && cnt / 4096 <= NP2P);
                int pi = (int)(cnt / 4096) - 1;
                assert_int_equal(opens[t][NCOLL + pi]++, 0);
                assert_string_equal(gets_(&o, "func"), pi % 2 ? "Recv" : "Send");
                assert_int_equal(geti(&o, "peer"), (t + 1) % NTHREADS);
                if (p2ps[t][pi]) {
                    assert_int_equal(getu(&o, "id"), p2p_id[t][pi]);
                    assert_int_equal(geti(&o, "host_start_ns"), p2p_hs[t][pi]);
                }
            } else {
                assert_string_equal(of, "kch");
                uint64_t gs = getu(&o, "gpu_start_ns");
                int64_t seen = geti(&o, "gpu_start_seen_ns");
                assert_true(t0 <= seen && seen <= t1);
                if (!strcmp(gets_(&o, "parent_type"), "coll")) {
                    assert_int_equal(geti(&o, "channel"), 0);
                    int ci = (int)((gs - gpu_start(t, 0, 0)) / 10000);
                    assert_true(ci >= 0 && ci < NCOLL);
                    assert_int_equal(gs, gpu_start(t, ci, 0));
                    assert_int_equal(getu(&o, "seq"), coll_of(t, ci).seq);
                    assert_int_equal(kopens[t][ci]++, 0);
                    if (colls[t][ci])
                        assert_int_equal(getu(&o, "parent"), coll_id[t][ci]);
                } else {
                    assert_string_equal(gets_(&o, "parent_type"), "p2p");
                    assert_int_equal(geti(&o, "channel"), 9);
                    int pi = (int)((gs - gpu_start(t, 1000, 9)) / 10000);
                    assert_true(pi >= 0 && pi < NP2P);
                    assert_int_equal(kopens[t][NCOLL + pi]++, 0);
                    if (p2ps[t][pi])
                        assert_int_equal(getu(&o, "parent"), p2p_id[t][pi]);
                }
            }
        } else if (is_type(&o, "clock")) {
            clocks++;
            int64_t rt = geti(&o, "realtime_ns");
            assert_true(t0 <= rt && rt <= t1);
        } else if (is_type(&o, "stats")) {
            stats++;
            if (!lossy)
                assert_int_equal(geti(&o, "dropped_ring_full"), 0);
            assert_int_equal(geti(&o, "dropped_no_ring"), 0);
            assert_int_equal(geti(&o, "dropped_pool_full"), 0);
            assert_int_equal(geti(&o, "unhandled_events"), 0);
            assert_int_equal(geti(&o, "unknown_handles"), 0);
            if (!strcmp(gets_(&o, "why"), "exit")) {
                saw_end = true;
                final_drops = geti(&o, "dropped_ring_full");
                assert_int_equal(geti(&o, "open_events"), 0);
            }
        } else {
            assert_true(is_type(&o, "coll") || is_type(&o, "p2p"));
        }
    }
    /* per thread: init, the collectives, 2 channels each plus a late third
     * for every fourth, the P2P tasks with one channel each, and two open
     * records per task (its start, its kernel's first channel) */
    const int64_t per_thread = 1 + NCOLL + 2 * NCOLL + (NCOLL + 3) / 4 + 2 * NP2P + 2 * (NCOLL + NP2P);
    assert_int_equal(records + final_drops, NTHREADS * per_thread);
    for (int t = 0; t < NTHREADS && !lossy; t++) {
        assert_int_equal(inits[t], 1);
        for (int i = 0; i < NCOLL; i++) {
            assert_int_equal(colls[t][i], 1);
            for (int ch = 0; ch < 3; ch++)
                assert_int_equal(kchs[t][i][ch], ch < 2 || i % 4 == 0 ? 1 : 0);
        }
        for (int i = 0; i < NP2P; i++) {
            assert_int_equal(p2ps[t][i], 1);
            assert_int_equal(p2pk[t][i], 1);
        }
        for (int i = 0; i < NCOLL + NP2P; i++) {
            assert_int_equal(opens[t][i], 1);
            assert_int_equal(kopens[t][i], 1);
        }
    }
    assert_true(clocks >= 2); /* one at the start, one at the end */
    assert_true(stats >= 1);
    assert_true(saw_end);
    free_lines(lines);
}

static void run_threads(int abi)
{
    char dir[512], tag[16];
    snprintf(tag, sizeof tag, "v%d", abi);  /* "v-6": the writer case */
    fresh_dir(dir, sizeof dir, tag);
    int64_t t0 = realtime_ns();
    int pid = run_child(child_threads, abi, dir);
    int64_t t1 = realtime_ns();
    check_threads_file(abi < 0 ? -abi : abi, dir, pid, t0, t1, abi < 0);
}

static void test_threads_v6(void **state) { (void)state; run_threads(6); }
static void test_threads_v5(void **state) { (void)state; run_threads(5); }
static void test_threads_v4(void **state) { (void)state; run_threads(4); }
/* With the writer thread draining while four threads fill 16-record rings:
 * whatever was not dropped is written exactly once. */
static void test_threads_writer(void **state) { (void)state; run_threads(-6); }

/* Ring of 8 records per thread, pool of 4 handles, no writer: each thread
 * keeps exactly its first 8 records and counts the rest as dropped; a
 * fifth open handle is refused (NULL) and counted; an event type the
 * plugin does not model gets no handle and is counted. */
#define OV_COLLS 10
static void child_overflow(int abi, const char *dir)
{
    child_env(dir, "8", "4");
    child_open(abi);
    const api_t *a = &g_api;
    void *ctx = NULL;
    int mask = 0;
    if (api_init(a, &ctx, 0x1ULL, &mask, "ov", 1, 2, 0) != 0)
        die("init");
    /* 1 init + 10 x (open, kernel open, coll, 2 channels) = 51 records for
     * an 8-record ring */
    for (int i = 0; i < OV_COLLS; i++) {
        coll_in_t c = coll_of(0, i);
        descr_t d;
        make_coll(&d, a->abi, &c);
        void *h = NULL, *k[2];
        a->start(ctx, &h, &d);
        for (int j = 0; j < 2; j++) {
            make_kch(&d, a->abi, h, 0, (uint8_t)j, gpu_start(0, i, j));
            a->start(ctx, &k[j], &d);
        }
        a->stop(h);
        for (int j = 0; j < 2; j++) {
            kch_stop(a, k[j], gpu_stop(0, i, j));
            a->stop(k[j]);
        }
    }
    /* pool: four open handles, the fifth is refused */
    void *open_h[5];
    for (int i = 0; i < 5; i++) {
        coll_in_t c = coll_of(0, 100 + i);
        descr_t d;
        make_coll(&d, a->abi, &c);
        if (a->start(ctx, &open_h[i], &d) != 0)
            die("start must succeed even when refusing");
        if ((open_h[i] == NULL) != (i == 4))
            die("handle %d", i);
    }
    if (a->stop(open_h[4]) != 0 || kch_stop(a, open_h[4], 1) != 0)
        die("NULL handle calls must succeed");
    /* an unmodelled event type */
    descr_t d;
    memset(d.b, 0, sizeof d.b);
    put_type(&d, a->abi, T_PROXY_OP);
    void *ph = (void *)1;
    if (a->start(ctx, &ph, &d) != 0 || ph != NULL)
        die("proxy op");
    /* a type no version defines: counted as "other" */
    put_type(&d, a->abi, 0);
    ph = (void *)1;
    if (a->start(ctx, &ph, &d) != 0 || ph != NULL)
        die("type 0");
    /* a handle that is not ours */
    int not_ours;
    if (a->stop(&not_ours) != 0)
        die("foreign handle");
    /* two of the four stay open at exit */
    a->stop(open_h[0]);
    a->stop(open_h[1]);
    if (a->fin(ctx) != 0)
        die("fin");
    exit(0);
}

static void run_overflow(int abi)
{
    char dir[512], tag[16];
    snprintf(tag, sizeof tag, "ov%d", abi);
    fresh_dir(dir, sizeof dir, tag);
    int pid = run_child(child_overflow, abi, dir);
    size_t n;
    char **lines = read_lines(dir, pid, &n);
    static obj_t o;
    int kinds[5] = {0}; /* init, coll, kch, other, open */
    int order = 0;
    /* ring order: init, then per collective its open, its kernel's open
     * (the first channel's start), the coll line, its two channels; the
     * 8-record ring keeps init, collective 0 whole and collective 1's two
     * open records */
    static const char *const want[8] = {"init", "open coll", "open kch", "coll", "kch", "kch", "open coll", "open kch"};
    bool saw_final = false;
    for (size_t i = 0; i < n; i++) {
        parse_obj(lines[i], &o);
        if (is_type(&o, "init")) {
            assert_int_equal(order++, 0);
            kinds[0]++;
        } else if (is_type(&o, "coll") || is_type(&o, "kch") || is_type(&o, "open")) {
            char what[32];
            snprintf(what, sizeof what, "%s%s%s", gets_(&o, "type"), is_type(&o, "open") ? " " : "",
                     is_type(&o, "open") ? gets_(&o, "of") : "");
            assert_true(order < 8);
            assert_string_equal(what, want[order]);
            int ci = order < 6 ? 0 : 1;
            if (is_type(&o, "coll") || !strcmp(what, "open coll")) {
                assert_int_equal(getu(&o, "count"), coll_of(0, ci).count);
                assert_int_equal(getu(&o, "seq"), coll_of(0, ci).seq);
            } else {
                int ch = is_type(&o, "kch") ? order - 4 : 0;
                assert_int_equal(getu(&o, "gpu_start_ns"), gpu_start(0, ci, ch));
                if (is_type(&o, "kch"))
                    assert_int_equal(getu(&o, "gpu_stop_ns"), gpu_stop(0, ci, ch));
                else
                    assert_int_equal(geti(&o, "channel"), 0);
            }
            order++;
            kinds[is_type(&o, "coll") ? 1 : is_type(&o, "kch") ? 2 : 4]++;
        } else if (is_type(&o, "stats")) {
            /* the final numbers: records 9..51 of the ring, plus the four
             * pool handles' open records and the two stopped ones (ring
             * already full) */
            assert_int_equal(geti(&o, "dropped_ring_full"), 51 - 8 + 4 + 2);
            assert_int_equal(geti(&o, "dropped_pool_full"), 1);
            assert_int_equal(geti(&o, "unhandled_events"), 2);
            assert_int_equal(geti(&o, "unhandled_ProxyOp"), 1);
            assert_int_equal(geti(&o, "unhandled_other"), 1);
            assert_int_equal(geti(&o, "unknown_handles"), 1);
            assert_int_equal(geti(&o, "dropped_no_ring"), 0);
            assert_int_equal(geti(&o, "threads"), 1);
            if (!strcmp(gets_(&o, "why"), "exit")) {
                assert_int_equal(geti(&o, "open_events"), 2);
                saw_final = true;
            }
        } else {
            assert_true(is_type(&o, "process") || is_type(&o, "clock"));
            kinds[3]++;
        }
    }
    assert_int_equal(kinds[0], 1);
    assert_int_equal(kinds[1], 1);
    assert_int_equal(kinds[2], 2);
    assert_int_equal(kinds[4], 4);
    assert_true(saw_final);
    free_lines(lines);
}

static void test_overflow_v6(void **state) { (void)state; run_overflow(6); }
static void test_overflow_v4(void **state) { (void)state; run_overflow(4); }

/* No finalize at all: the library's destructor at exit writes what the
 * rings hold and puts the file in place; channels whose stop stamp never
 * came are written with nulls; the open collective is counted. A mask
 * from the environment in hex selects Coll only (then no KernelCh bit). */
static void child_exit(int abi, const char *dir)
{
    child_env(dir, NULL, NULL);
    setenv("MERGETRACE_NCCL_MASK", "0x42", 1); /* Coll | KernelCh */
    child_open(abi);
    const api_t *a = &g_api;
    void *ctx = NULL;
    int mask = 0;
    if (api_init(a, &ctx, 0xabcdef0123456789ULL, &mask, "", 1, 1, 0) != 0)
        die("init");
    if (mask != (T_COLL | T_KCH))
        die("mask %d", mask);
    coll_in_t c = coll_of(0, 7);
    descr_t d;
    make_coll(&d, a->abi, &c);
    void *h = NULL, *k = NULL, *open_h = NULL;
    a->start(ctx, &h, &d);
    make_kch(&d, a->abi, h, 0, 5, 123456789);
    a->start(ctx, &k, &d);
    a->stop(h);
    a->stop(k); /* no KernelChStop state: stop stamp unknown */
    make_coll(&d, a->abi, &c);
    a->start(ctx, &open_h, &d);
    /* a forked child (a data-loader worker) exits through the destructor
     * too: it must leave this process's file alone */
    fflush(NULL);
    pid_t w = fork();
    if (w == 0)
        exit(0);
    int st;
    if (w < 0 || waitpid(w, &st, 0) != w || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        die("worker");
    exit(0);
}

static void test_exit_flush(void **state)
{
    (void)state;
    char dir[512];
    fresh_dir(dir, sizeof dir, "exit");
    int pid = run_child(child_exit, 6, dir);
    size_t n;
    char **lines = read_lines(dir, pid, &n);
    static obj_t o;
    int coll = 0, kch = 0, exits = 0;
    for (size_t i = 0; i < n; i++) {
        parse_obj(lines[i], &o);
        if (is_type(&o, "process")) {
            assert_int_equal(geti(&o, "mask"), T_COLL | T_KCH);
        } else if (is_type(&o, "init")) {
            assert_string_equal(gets_(&o, "comm"), "abcdef0123456789");
            assert_string_equal(gets_(&o, "name"), "");
        } else if (is_type(&o, "coll")) {
            coll++;
            assert_int_equal(getu(&o, "count"), coll_of(0, 7).count);
        } else if (is_type(&o, "kch")) {
            kch++;
            assert_int_equal(geti(&o, "channel"), 5);
            assert_int_equal(getu(&o, "gpu_start_ns"), 123456789);
            assert_int_equal(get(&o, "gpu_stop_ns")->kind, V_NULL);
            assert_int_equal(get(&o, "gpu_stop_seen_ns")->kind, V_NULL);
        } else if (is_type(&o, "stats")) {
            assert_string_equal(gets_(&o, "why"), "exit");
            assert_int_equal(geti(&o, "open_events"), 1);
            exits++;
        }
    }
    assert_int_equal(coll, 1);
    assert_int_equal(kch, 1);
    assert_int_equal(exits, 1);
    free_lines(lines);
}

/* A bad variable disables the plugin (init fails) and writes no file. */
static void child_bad_env(int abi, const char *dir)
{
    child_env(dir, NULL, NULL);
    setenv("MERGETRACE_NCCL_MASK", "0xzz", 1);
    child_open(abi);
    void *ctx = (void *)1;
    int mask = 0;
    if (api_init(&g_api, &ctx, 1, &mask, "x", 1, 1, 0) == 0 || ctx != NULL)
        die("a bad MERGETRACE_NCCL_MASK must fail init");
    exit(0);
}

static void test_bad_env(void **state)
{
    (void)state;
    char dir[512];
    fresh_dir(dir, sizeof dir, "badenv");
    run_child(child_bad_env, 5, dir);
    struct stat st;
    assert_int_equal(stat(dir, &st), -1);
}

/* Two processes as ranks 0 and 1 of one communicator, GPU clocks 777 ns
 * apart; their files, read back with mt_nccl_load, match instance by
 * instance on (communicator, func, seq). */
#define E2E_N 6
static int e2e_rank;
static void child_rank(int abi, const char *dir)
{
    child_env(dir, NULL, NULL);
    child_open(abi);
    const api_t *a = &g_api;
    void *ctx = NULL;
    int mask = 0;
    if (api_init(a, &ctx, 0x1122334455667788ULL, &mask, "world", 1, 2, e2e_rank) != 0)
        die("init");
    for (int i = 0; i < 2 * E2E_N; i++) {
        coll_in_t c = coll_of(0, i % 2); /* AllReduce, AllGather, AllReduce, ... */
        c.seq = (uint64_t)(i / 2);
        c.rank = e2e_rank;
        c.count = 64;
        descr_t d;
        make_coll(&d, a->abi, &c);
        void *h = NULL, *k[2];
        a->start(ctx, &h, &d);
        for (int j = 0; j < 2; j++) {
            uint64_t gs = 9000000000ULL + (uint64_t)i * 100000 + (uint64_t)e2e_rank * 777;
            make_kch(&d, a->abi, h, e2e_rank, (uint8_t)j, gs + (uint64_t)j);
            a->start(ctx, &k[j], &d);
            kch_stop(a, k[j], gs + 40000 - (uint64_t)j);
        }
        a->stop(h);
        a->stop(k[0]);
        a->stop(k[1]);
    }
    a->fin(ctx);
    exit(0);
}

static void test_two_ranks_match(void **state)
{
    (void)state;
    char dir[512], host[256] = "unknown-host", path[1024];
    gethostname(host, sizeof host - 1);
    fresh_dir(dir, sizeof dir, "e2e");
    mt_cinst_t *rows = NULL;
    size_t n = 0, cap = 0;
    int64_t bound[2];
    for (int r = 0; r < 2; r++) {
        e2e_rank = r;
        int pid = run_child(child_rank, 6, dir);
        snprintf(path, sizeof path, "%s/%s-pid%d.jsonl", dir, host, pid);
        mt_nccl_file_t *f = NULL;
        mt_error_t err;
        mt_error_clear(&err);
        assert_int_equal(mt_nccl_load(path, &f, &err), MT_OK);
        assert_false(f->truncated);
        assert_int_equal(f->n_tasks, 2 * E2E_N);
        assert_int_equal(f->orphan_kch, 0);
        assert_int_equal(f->dropped, 0);
        assert_int_equal(mt_nccl_world_rank(f, NULL), r);
        assert_true(f->ended); /* finalized and exited: the exit's stats line */
        assert_int_equal(f->in_flight, 0);
        assert_true(f->has_offset_bound);
        bound[r] = f->gpu_offset_bound_ns;
        for (size_t i = 0; i < f->n_tasks; i++)
            assert_int_equal(f->tasks[i].n_kch, 2);
        assert_int_equal(mt_nccl_cinst_extract(f, r, tu_labels(), &rows, &n, &cap, NULL), MT_OK);
        mt_nccl_file_free(f);
    }
    assert_int_equal(n, 4 * E2E_N);
    mt_match_t *m = NULL;
    mt_match_stats_t ms;
    assert_int_equal(mt_match(rows, n, &m, &ms), MT_OK);
    assert_int_equal(m->n_inst, 2 * E2E_N);
    assert_int_equal(ms.full, 2 * E2E_N);
    assert_int_equal(ms.by_key[MT_KEY_COMMS_ID], 2 * E2E_N);
    for (size_t i = 0; i < m->n_inst; i++) {
        const mt_cinst_t *x = &rows[m->members[m->first[i]]];
        const mt_cinst_t *y = &rows[m->members[m->first[i] + 1]];
        assert_int_equal(x->seq, y->seq);
        assert_int_equal(x->kind, y->kind);
        /* GPU stop on each rank mapped with its own bound */
        assert_int_equal((y->end_ns - bound[1]) - (x->end_ns - bound[0]), 777);
    }
    mt_match_free(m);
    free(rows);
}

/* A hang through the plugin, end to end: four processes of one 4-rank
 * communicator run AllReduce #0-#4; then ranks 0, 1 and 3 enqueue
 * AllReduce #5, whose kernel starts and never ends, while rank 2 runs an
 * AllGather instead; every process is killed (SIGKILL, as the watchdog's
 * abort) 60 ms later, with the writer thread draining every 5 ms. The
 * files keep their temporary names; read back, converted to Flight
 * Recorder dumps and analysed, the verdict is rank 2, that never enqueued
 * AllReduce #5, and the others waited about the 60 ms. */
#define HANG_COMM 0x0a0b0c0d0e0f1011ULL
static void child_hang(int abi, const char *dir)
{
    child_env(dir, NULL, NULL);
    setenv("MERGETRACE_NCCL_FLUSH_MS", "5", 1);
    setenv("MERGETRACE_NCCL_CLOCK_MS", "5", 1);
    child_open(abi);
    const api_t *a = &g_api;
    void *ctx = NULL;
    int mask = 0;
    if (api_init(a, &ctx, HANG_COMM, &mask, "world", 1, 4, e2e_rank) != 0)
        die("init");
    uint64_t gpu0 = 5000000000ULL + (uint64_t)e2e_rank * 777;
    for (int i = 0; i <= 5; i++) {
        bool hang = i == 5;
        coll_in_t c = coll_of(0, hang && e2e_rank == 2 ? 1 : 0); /* AllReduce; rank 2's last: AllGather */
        c.seq = hang && e2e_rank == 2 ? 0 : (uint64_t)i;
        c.rank = e2e_rank;
        c.count = 1024;
        descr_t d;
        make_coll(&d, a->abi, &c);
        void *h = NULL, *k[2];
        a->start(ctx, &h, &d);
        a->stop(h); /* the enqueue returns */
        for (int j = 0; j < 2; j++) {
            make_kch(&d, a->abi, h, e2e_rank, (uint8_t)j, gpu0 + (uint64_t)i * 100000 + (uint64_t)j);
            a->start(ctx, &k[j], &d);
            if (!hang || e2e_rank == 2) {
                kch_stop(a, k[j], gpu0 + (uint64_t)i * 100000 + 40000);
                a->stop(k[j]);
            }
        }
    }
    struct timespec nap = {0, 60000000};
    nanosleep(&nap, NULL);
    raise(SIGKILL);
}

static void test_hang_verdict(void **state)
{
    (void)state;
    char dir[512], host[256] = "unknown-host", path[1024];
    gethostname(host, sizeof host - 1);
    fresh_dir(dir, sizeof dir, "hang");
    mt_nccl_file_t *files[4];
    int32_t ranks[4];
    for (int r = 0; r < 4; r++) {
        e2e_rank = r;
        fflush(NULL);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0)
            child_hang(6, dir);
        int st = 0;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
        snprintf(path, sizeof path, "%s/.%s-pid%d.jsonl.tmp", dir, host, (int)pid);
        mt_error_t err;
        mt_error_clear(&err);
        files[r] = NULL;
        assert_int_equal(mt_nccl_load(path, &files[r], &err), MT_OK);
        ranks[r] = mt_nccl_world_rank(files[r], NULL);
        assert_int_equal(ranks[r], r);
        /* in flight at the kill: AllReduce #5 on ranks 0, 1, 3, running */
        assert_int_equal(files[r]->in_flight, r == 2 ? 0 : 1);
        assert_false(files[r]->ended); /* killed: no stats line of an exit */
        for (size_t i = 0; i < files[r]->n_tasks; i++)
            if (files[r]->tasks[i].state != MT_NCCL_TASK_DONE) {
                assert_int_equal(files[r]->tasks[i].state, MT_NCCL_TASK_RUNNING);
                assert_int_equal(files[r]->tasks[i].seq, 5);
            }
    }
    mt_fr_dump_t dumps[4];
    mt_error_t err;
    assert_int_equal(mt_fr_from_nccl((const mt_nccl_file_t *const *)files, ranks, 4, dumps, &err), MT_OK);
    mt_fr_hang_t h;
    assert_int_equal(mt_fr_hang_analyse(dumps, 4, &h, &err), MT_OK);
    assert_int_equal(h.kind, MT_FR_NEVER_ENQUEUED);
    assert_int_equal(h.nculprits, 1);
    assert_int_equal(h.culprits[0], 2);
    char pg[64];
    snprintf(pg, sizeof pg, "%016llx:AllReduce", (unsigned long long)HANG_COMM);
    assert_string_equal(h.pg, pg);
    assert_string_equal(h.pg_desc, "world");
    assert_int_equal(h.seq, 6); /* NCCL's #5, counted from 1 */
    assert_string_equal(h.name, "nccl:all_reduce");
    assert_string_equal(h.culprit_last.name, "nccl:all_gather");
    for (int r = 0; r < 4; r++) {
        if (r == 2) {
            assert_int_equal(h.wait_ns[r], -1);
            continue;
        }
        /* stuck from the kernel's start to the first process's last clock
         * line: the 60 ms, less up to one 5 ms drain, plus scheduling */
        assert_true(h.wait_ns[r] > 40000000 && h.wait_ns[r] < 5000000000LL);
    }
    mt_fr_hang_free(&h);
    for (int r = 0; r < 4; r++) {
        mt_fr_dump_free(&dumps[r]);
        mt_nccl_file_free(files[r]);
    }
}

/* A pipeline of 4 processes on one communicator: each step an AllReduce
 * (for the clocks), then rank r receives from r - 1 and sends to r + 1.
 * In the 5th step rank 0 sends nothing (it is elsewhere) and ranks 1-3
 * wait in their recv from the rank before, killed 60 ms later. */
#define PIPE_COMM 0x1112131415161718ULL
static void run_task(const api_t *a, void *ctx, descr_t *d, uint64_t gpu, uint8_t ch, bool finish)
{
    void *h = NULL, *k = NULL;
    if (a->start(ctx, &h, d) != 0 || !h)
        die("task start");
    a->stop(h); /* the enqueue returns */
    make_kch(d, a->abi, h, e2e_rank, ch, gpu);
    if (a->start(ctx, &k, d) != 0 || !k)
        die("kch start");
    if (finish && (kch_stop(a, k, gpu + 40000) != 0 || a->stop(k) != 0))
        die("kch stop");
}

static void child_hang_p2p(int abi, const char *dir)
{
    child_env(dir, NULL, NULL);
    setenv("MERGETRACE_NCCL_FLUSH_MS", "5", 1);
    setenv("MERGETRACE_NCCL_CLOCK_MS", "5", 1);
    child_open(abi);
    const api_t *a = &g_api;
    void *ctx = NULL;
    int mask = 0;
    if (api_init(a, &ctx, PIPE_COMM, &mask, "pipe", 1, 4, e2e_rank) != 0)
        die("init");
    uint64_t gpu0 = 5000000000ULL + (uint64_t)e2e_rank * 777;
    for (int i = 0; i <= 4; i++) {
        bool hang = i == 4;
        uint64_t g = gpu0 + (uint64_t)i * 1000000;
        descr_t d;
        if (!hang) {
            coll_in_t c = coll_of(0, 0); /* AllReduce */
            c.seq = (uint64_t)i;
            c.rank = e2e_rank;
            c.count = 1024;
            make_coll(&d, a->abi, &c);
            run_task(a, ctx, &d, g, 0, true);
        }
        if (e2e_rank > 0) {
            make_p2p(&d, a->abi, e2e_rank, "Recv", "ncclFloat32", 4096, e2e_rank - 1, 1);
            run_task(a, ctx, &d, g + 100000, 1, !hang);
        }
        if (e2e_rank < 3 && !hang) {
            make_p2p(&d, a->abi, e2e_rank, "Send", "ncclFloat32", 4096, e2e_rank + 1, 1);
            run_task(a, ctx, &d, g + 200000, 2, true);
        }
    }
    struct timespec nap = {0, 60000000};
    nanosleep(&nap, NULL);
    raise(SIGKILL);
}

/* The pipeline's files read back and analysed: rank 1 waits in its recv
 * from rank 0, which never sent (p2p tasks were left out before: no
 * verdict), and the chain 3 -> 2 -> 1 -> 0 ends at rank 0. */
static void test_hang_p2p(void **state)
{
    (void)state;
    char dir[512], host[256] = "unknown-host", path[1024];
    gethostname(host, sizeof host - 1);
    fresh_dir(dir, sizeof dir, "hangp2p");
    mt_nccl_file_t *files[4];
    int32_t ranks[4];
    for (int r = 0; r < 4; r++) {
        e2e_rank = r;
        fflush(NULL);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0)
            child_hang_p2p(6, dir);
        int st = 0;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
        snprintf(path, sizeof path, "%s/.%s-pid%d.jsonl.tmp", dir, host, (int)pid);
        mt_error_t err;
        mt_error_clear(&err);
        files[r] = NULL;
        assert_int_equal(mt_nccl_load(path, &files[r], &err), MT_OK);
        ranks[r] = mt_nccl_world_rank(files[r], NULL);
        assert_int_equal(ranks[r], r);
        assert_int_equal(files[r]->in_flight, r == 0 ? 0 : 1); /* the recv */
    }
    mt_fr_dump_t dumps[4];
    mt_error_t err;
    assert_int_equal(mt_fr_from_nccl((const mt_nccl_file_t *const *)files, ranks, 4, dumps, &err), MT_OK);
    mt_fr_hang_t h;
    assert_int_equal(mt_fr_hang_analyse(dumps, 4, &h, &err), MT_OK);
    assert_int_equal(h.kind, MT_FR_NEVER_ENQUEUED);
    assert_int_equal(h.nculprits, 1);
    assert_int_equal(h.culprits[0], 0);
    assert_true(h.p2p);
    assert_int_equal(h.p2p_rank, 1);
    assert_int_equal(h.p2p_peer, 0);
    char pg[64];
    snprintf(pg, sizeof pg, "%016llx:p2p", (unsigned long long)PIPE_COMM);
    assert_string_equal(h.pg, pg);
    assert_string_equal(h.pg_desc, "pipe");
    assert_string_equal(h.name, "nccl:recv 1<-0");
    assert_int_equal(h.p2p_op.p2p_seq, 9); /* 4 steps of a recv and a send, then the recv */
    assert_string_equal(h.culprit_last.name, "nccl:send 0->1");
    assert_int_equal(h.nchain, 4);
    for (int i = 0; i < 4; i++)
        assert_int_equal(h.chain[i], 3 - i);
    for (int r = 0; r < 4; r++) {
        if (r == 0) {
            assert_int_equal(h.wait_ns[r], -1);
            continue;
        }
        assert_true(h.wait_ns[r] > 40000000 && h.wait_ns[r] < 5000000000LL);
    }
    mt_fr_hang_free(&h);
    for (int r = 0; r < 4; r++) {
        mt_fr_dump_free(&dumps[r]);
        mt_nccl_file_free(files[r]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exports),
        cmocka_unit_test(test_threads_v6),
        cmocka_unit_test(test_threads_v5),
        cmocka_unit_test(test_threads_v4),
        cmocka_unit_test(test_threads_writer),
        cmocka_unit_test(test_overflow_v6),
        cmocka_unit_test(test_overflow_v4),
        cmocka_unit_test(test_exit_flush),
        cmocka_unit_test(test_bad_env),
        cmocka_unit_test(test_two_ranks_match),
        cmocka_unit_test(test_hang_verdict),
        cmocka_unit_test(test_hang_p2p),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
