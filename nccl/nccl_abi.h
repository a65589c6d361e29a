/* Our own declarations of the parts of NCCL's profiler-plugin interface
 * (versions 4, 5 and 6) that the mergetrace plugin reads, with the byte
 * layout pinned by _Static_assert. Written from NCCL's documentation of the
 * interface, not copied from its headers; nothing here needs CUDA or NCCL.
 * Only the members the plugin uses are named; the rest of each union arm is
 * padding that keeps the offsets right. LP64 (x86-64, aarch64) only. */
#ifndef MT_NCCL_ABI_H
#define MT_NCCL_ABI_H

#include <stddef.h>
#include <stdint.h>

/* ncclResult_t values the plugin returns. */
enum {
    MT_NCCL_SUCCESS = 0,
    MT_NCCL_SYSTEM_ERROR = 2,
    MT_NCCL_INVALID_USAGE = 5,
};

/* Event types; each is also its bit in the activation mask. */
enum {
    MT_NCCL_EV_GROUP = 1 << 0,
    MT_NCCL_EV_COLL = 1 << 1,
    MT_NCCL_EV_P2P = 1 << 2,
    MT_NCCL_EV_PROXY_OP = 1 << 3,
    MT_NCCL_EV_PROXY_STEP = 1 << 4,
    MT_NCCL_EV_PROXY_CTRL = 1 << 5,
    MT_NCCL_EV_KERNEL_CH = 1 << 6,
    MT_NCCL_EV_NET_PLUGIN = 1 << 7,
    MT_NCCL_EV_GROUP_API = 1 << 8,     /* v5+ */
    MT_NCCL_EV_COLL_API = 1 << 9,      /* v5+ */
    MT_NCCL_EV_P2P_API = 1 << 10,      /* v5+ */
    MT_NCCL_EV_KERNEL_LAUNCH = 1 << 11, /* v5+ */
    MT_NCCL_EV_CE_COLL = 1 << 12,      /* v6 */
    MT_NCCL_EV_CE_SYNC = 1 << 13,      /* v6 */
    MT_NCCL_EV_CE_BATCH = 1 << 14,     /* v6 */
};

/* The one event state the plugin acts on: a kernel channel's GPU stop
 * stamp arrives with it (same value in v4, v5 and v6). */
enum { MT_NCCL_STATE_KERNEL_CH_STOP = 22 };

/* A collective task (type Coll). */
typedef struct mt_nccl_coll {
    uint64_t seq_number;     /* per communicator and per collective type */
    const char *func;        /* "AllReduce", ... */
    const void *send_buff;
    void *recv_buff;
    size_t count;            /* elements */
    int root;
    const char *datatype;    /* "ncclFloat32", ... */
    uint8_t n_channels;
    uint8_t n_warps;
    const char *algo;        /* "RING", ... */
    const char *proto;       /* "SIMPLE", ... */
} mt_nccl_coll_t;

/* A point-to-point task (type P2p). No sequence number. */
typedef struct mt_nccl_p2p {
    const char *func;        /* "Send" / "Recv" */
    void *buff;
    const char *datatype;
    size_t count;
    int peer;
    uint8_t n_channels;
} mt_nccl_p2p_t;

/* One channel of a kernel (type KernelCh): its start stamp from the GPU's
 * global timer, in ns. */
typedef struct mt_nccl_kernel_ch {
    uint8_t channel_id;
    uint64_t gpu_start;
} mt_nccl_kernel_ch_t;

/* Event descriptor of v5 and v6 (identical for the arms we read; v6 adds
 * copy-engine arms that fit in the same 88 bytes of union). */
typedef struct mt_nccl_descr_v5 {
    uint64_t type;           /* one MT_NCCL_EV_* value */
    void *parent_obj;        /* the parent event's handle, or NULL */
    int rank;                /* rank within the communicator */
    union {
        struct {
            mt_nccl_coll_t c;
            void *parent_group;
        } coll;
        struct {
            mt_nccl_p2p_t p;
            void *parent_group;
        } p2p;
        mt_nccl_kernel_ch_t kernel_ch;
    } as;
} mt_nccl_descr_v5_t;

/* Event descriptor of v4: the type is one byte and the task arms end
 * before the parent group pointer that v5 added. */
typedef struct mt_nccl_descr_v4 {
    uint8_t type;
    void *parent_obj;
    int rank;
    union {
        mt_nccl_coll_t coll;
        mt_nccl_p2p_t p2p;
        mt_nccl_kernel_ch_t kernel_ch;
    } as;
} mt_nccl_descr_v4_t;

/* The 8-byte argument of recordEventState (a union in NCCL; the kernel
 * channel arm is the GPU stop stamp). */
typedef union mt_nccl_state_args {
    uint64_t kernel_ch_gpu_stop;
    size_t proxy_step_trans_size;
    int proxy_ctrl_appended;
    void *net_plugin_data;
} mt_nccl_state_args_t;

/* NCCL's logger: (level, subsystem flags, file, line, format, ...). */
typedef void (*mt_nccl_logger_t)(int level, unsigned long flags, const char *file,
                                 int line, const char *fmt, ...);

/* The exported table of v5 and v6 (same member order; only the descriptor
 * type grew). */
typedef struct mt_nccl_profiler_v5 {
    const char *name;
    int (*init)(void **context, uint64_t comm_id, int *activation_mask,
                const char *comm_name, int n_nodes, int nranks, int rank,
                mt_nccl_logger_t logfn);
    int (*start_event)(void *context, void **handle, mt_nccl_descr_v5_t *descr);
    int (*stop_event)(void *handle);
    int (*record_event_state)(void *handle, int state, mt_nccl_state_args_t *args);
    int (*finalize)(void *context);
} mt_nccl_profiler_v5_t;

/* The exported table of v4: init takes the mask before the name and the
 * communicator hash after it. */
typedef struct mt_nccl_profiler_v4 {
    const char *name;
    int (*init)(void **context, int *activation_mask, const char *comm_name,
                uint64_t comm_hash, int n_nodes, int nranks, int rank,
                mt_nccl_logger_t logfn);
    int (*start_event)(void *context, void **handle, mt_nccl_descr_v4_t *descr);
    int (*stop_event)(void *handle);
    int (*record_event_state)(void *handle, int state, mt_nccl_state_args_t *args);
    int (*finalize)(void *context);
} mt_nccl_profiler_v4_t;

/* The layout NCCL passes on LP64 targets. If one of these fails, the
 * plugin would read the wrong bytes: do not build it there. */
#define MT_OFF(T, m) offsetof(T, m)
_Static_assert(sizeof(void *) == 8 && sizeof(size_t) == 8 && sizeof(int) == 4,
               "the NCCL plugin layout below is for LP64 targets");
_Static_assert(MT_OFF(mt_nccl_descr_v5_t, type) == 0, "v5 type");
_Static_assert(MT_OFF(mt_nccl_descr_v5_t, parent_obj) == 8, "v5 parentObj");
_Static_assert(MT_OFF(mt_nccl_descr_v5_t, rank) == 16, "v5 rank");
_Static_assert(MT_OFF(mt_nccl_descr_v5_t, as) == 24, "v5 union");
_Static_assert(MT_OFF(mt_nccl_descr_v5_t, as.coll.c.seq_number) == 24, "v5 coll.seqNumber");
_Static_assert(MT_OFF(mt_nccl_descr_v5_t, as.coll.c.func) == 32, "v5 coll.func");
_Static_assert(MT_OFF(mt_nccl_descr_v5_t, as.coll.c.send_buff) == 40, "v5 coll.sendBuff");
_Static_assert(MT_OFF(mt_nccl_descr_v5_t, as.coll.c.recv_buff) == 48, "v5 coll.recvBuff");
_Static_assert(MT_OFF(mt_nccl_descr_v5_t, as.coll.c.count) == 56, "v5 coll.count");
_Static_assert(MT_OFF(mt_nccl_descr_v5_t, as.coll.c.root) == 64, "v5 coll.root");
_Static_assert(MT_OFF(mt_nccl_descr_v5_t, as.coll.c.datatype) == 72, "v5 coll.datatype");
_Static_assert(MT_OFF(mt_nccl_descr_v5_t, as.coll.c.n_channels) == 80, "v5 coll.nChannels");
_Static_assert(MT_OFF(mt_nccl_descr_v5_t, as.coll.c.n_warps) == 81, "v5 coll.nWarps");
_Static_assert(MT_OFF(mt_nccl_descr_v5_t, as.coll.c.algo) == 88, "v5 coll.algo");
_Static_assert(MT_OFF(mt_nccl_descr_v5_t, as.coll.c.proto) == 96, "v5 coll.proto");
_Static_assert(MT_OFF(mt_nccl_descr_v5_t, as.coll.parent_group) == 104, "v5 coll.parentGroup");
_Static_assert(MT_OFF(mt_nccl_descr_v5_t, as.p2p.p.func) == 24, "v5 p2p.func");
_Static_assert(MT_OFF(mt_nccl_descr_v5_t, as.p2p.p.buff) == 32, "v5 p2p.buff");
_Static_assert(MT_OFF(mt_nccl_descr_v5_t, as.p2p.p.datatype) == 40, "v5 p2p.datatype");
_Static_assert(MT_OFF(mt_nccl_descr_v5_t, as.p2p.p.count) == 48, "v5 p2p.count");
_Static_assert(MT_OFF(mt_nccl_descr_v5_t, as.p2p.p.peer) == 56, "v5 p2p.peer");
_Static_assert(MT_OFF(mt_nccl_descr_v5_t, as.p2p.p.n_channels) == 60, "v5 p2p.nChannels");
_Static_assert(MT_OFF(mt_nccl_descr_v5_t, as.p2p.parent_group) == 64, "v5 p2p.parentGroup");
_Static_assert(MT_OFF(mt_nccl_descr_v5_t, as.kernel_ch.channel_id) == 24, "v5 kernelCh.channelId");
_Static_assert(MT_OFF(mt_nccl_descr_v5_t, as.kernel_ch.gpu_start) == 32, "v5 kernelCh.pTimer");
_Static_assert(sizeof(mt_nccl_descr_v5_t) == 112, "v5/v6 descriptor size");
_Static_assert(MT_OFF(mt_nccl_descr_v4_t, type) == 0, "v4 type");
_Static_assert(MT_OFF(mt_nccl_descr_v4_t, parent_obj) == 8, "v4 parentObj");
_Static_assert(MT_OFF(mt_nccl_descr_v4_t, rank) == 16, "v4 rank");
_Static_assert(MT_OFF(mt_nccl_descr_v4_t, as.coll.seq_number) == 24, "v4 coll.seqNumber");
_Static_assert(MT_OFF(mt_nccl_descr_v4_t, as.coll.count) == 56, "v4 coll.count");
_Static_assert(MT_OFF(mt_nccl_descr_v4_t, as.coll.datatype) == 72, "v4 coll.datatype");
_Static_assert(MT_OFF(mt_nccl_descr_v4_t, as.coll.n_channels) == 80, "v4 coll.nChannels");
_Static_assert(MT_OFF(mt_nccl_descr_v4_t, as.coll.algo) == 88, "v4 coll.algo");
_Static_assert(MT_OFF(mt_nccl_descr_v4_t, as.coll.proto) == 96, "v4 coll.proto");
_Static_assert(MT_OFF(mt_nccl_descr_v4_t, as.p2p.peer) == 56, "v4 p2p.peer");
_Static_assert(MT_OFF(mt_nccl_descr_v4_t, as.p2p.n_channels) == 60, "v4 p2p.nChannels");
_Static_assert(MT_OFF(mt_nccl_descr_v4_t, as.kernel_ch.gpu_start) == 32, "v4 kernelCh.pTimer");
_Static_assert(sizeof(mt_nccl_descr_v4_t) == 104, "v4 descriptor size");
_Static_assert(sizeof(mt_nccl_state_args_t) == 8, "state args union");
_Static_assert(MT_OFF(mt_nccl_profiler_v5_t, init) == 8, "table init");
_Static_assert(MT_OFF(mt_nccl_profiler_v5_t, start_event) == 16, "table startEvent");
_Static_assert(MT_OFF(mt_nccl_profiler_v5_t, stop_event) == 24, "table stopEvent");
_Static_assert(MT_OFF(mt_nccl_profiler_v5_t, record_event_state) == 32, "table recordEventState");
_Static_assert(MT_OFF(mt_nccl_profiler_v5_t, finalize) == 40, "table finalize");
_Static_assert(sizeof(mt_nccl_profiler_v5_t) == 48 && sizeof(mt_nccl_profiler_v4_t) == 48,
               "tables: name + five functions");
#undef MT_OFF

#endif /* MT_NCCL_ABI_H */
