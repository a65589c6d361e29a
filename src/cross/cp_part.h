/* The replay of one process's share of the ranks of the critical path's
 * graph in supersteps (docs/ARCHITECTURE.md, Design B, step 3): each
 * process advances its ranks until each is blocked at an instance end
 * whose last arrival it does not know, sends the instance's owner the
 * latest replayed arrival of its members, gets back the maximum, repeats.
 * The per-event rules are the one-process sweep's (cp_event_int.h); the
 * exchange is explicit arrays (no MPI here): a caller moves the messages
 * between processes (tests/unit/cp_part_check.c; later mt_comm_t's
 * alltoallv). Internal to src/cross/ and the unit tests. */
#ifndef MT_CROSS_CP_PART_H
#define MT_CROSS_CP_PART_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cross/cp_run_int.h"
#include "mergetrace/status.h"

/* The most scenarios (lanes) one replay runs side by side (cp_replay3's). */
enum { CP_PART_LANES = 4 };

/* A message about an instance's last arrival in one lane: a process's
 * contribution to the instance's owner (v: the latest replayed arrival of
 * its members, proc: the sender, need: how many processes hold members),
 * or the owner's answer (v: the last arrival, proc: the receiver). u
 * names the instance job-wide: the whole job's graph's g->inst[u] below
 * its n_inst, else its host collective g->hin[u - n_inst]; lu names it in
 * the sender's (the receiver's) graph, as cp_part_inst_t's index there:
 * the owner sends it back, so a process keeps no map from u. */
typedef struct cp_part_msg {
    uint32_t u;
    uint16_t lane;
    uint16_t proc;
    uint32_t need;
    uint32_t lu;
    int64_t v;
} cp_part_msg_t;
_Static_assert(sizeof(cp_part_msg_t) == 24, "cp_part_msg_t: 24 bytes a message");

/* What a process's graph (cp_part_cut) knows of an instance or host
 * collective it holds members of, beyond its own members: 20 bytes an
 * instance it touches, nothing a node of another process. Indexed as its
 * graph's instances, then its host collectives. */
typedef struct cp_part_inst {
    uint32_t u;           /* job-wide (cp_part_msg_t.u) */
    uint32_t need;        /* the processes holding members */
    uint32_t first;       /* the process's events (its g->ev) before the instance's first end in the
                           * job's replay order, where the one-process sweep reads it */
    int32_t job;          /* that first end's job step */
    int32_t at_rank;      /* the process's rank_i whose event that first end is, -1: another process's */
} cp_part_inst_t;

/* Where a rank of a process reads an instance that its members share
 * with other processes: before event ev[at] of its stream (its events up
 * to there replayed, as the one-process sweep's at the instance's first
 * end), as seen from job step job (the first end's: a member of another
 * step counts at its measured start). */
typedef struct cp_part_read {
    size_t at;
    uint32_t u;           /* the instance in the process's graph (cp_part_inst_t's index) */
    int32_t job;
    int32_t rank_i;
    bool mid;             /* ev[at] is that first end, a host collective member's return: read
                           * within it, after its own arrival (sync_arrival), as the sweep does */
} cp_part_read_t;

/* One stream of a process's events that replays on its own: one rank's
 * events in one job step (each step replays from its measured start,
 * reading nothing of another's, and a rank reads nothing of another rank
 * but the instances' last arrivals), or one rank's every event when the
 * replay carries shifts from step to step (a pipeline): ev[e0 .. e1) and
 * rd[r0 .. r1). */
typedef struct cp_part_seg {
    size_t e0, e1, r0, r1;
} cp_part_seg_t;

/* One process's share of a graph (malloc'd; cp_part_plan_free). */
typedef struct cp_part_plan {
    const cp_part_inst_t *ui; /* per instance of the process's graph (borrowed) */
    int64_t *ev;          /* its events, in g->ev's order within each stream */
    size_t n_ev;
    cp_part_read_t *rd;   /* its reads, by stream, each by at */
    size_t n_rd;
    cp_part_seg_t *seg;
    size_t n_seg;
    uint8_t *xi, *xh;     /* per instance / host collective: members here and on other processes */
    uint32_t *lneed;      /* per instance of its graph (cp_part_inst_t's index): its ranks holding members */
    uint32_t me, n_procs;
} cp_part_plan_t;

/* The graph of process me's ranks (rank_i i of g on process proc_of[i]
 * < n_procs), cut from the whole job's graph g (job fields and replay
 * order set, as mt_critpath_run leaves them), into *lg: its ranks' nodes,
 * syncs and rank steps, rank by rank in g's order (a rank's k-th node,
 * sync, rank step is its k-th in g: ranks[i].node0, sync0, rs0 map them
 * back), its events in g's replay order, the instances and host
 * collectives it holds members of in g's order with those members only
 * (their last arrival and transfer job-wide, as the graph's build gets
 * them from the instances' owners: docs/ARCHITECTURE.md step 2), and
 * *ui (malloc'd, lg->n_inst + lg->n_hin of them; the caller frees) what
 * it knows of them besides; *rank_of (malloc'd, lg->n_ranks; the caller
 * frees): each of its ranks' rank_i in g. Names, analyses and clocks
 * are borrowed from g's. lg is freed with cp_part_cut_free. The stand-in
 * of a graph built on the process from its own ranks' activities, which
 * would take from other processes what this reads of g beyond its ranks:
 * the instances' last arrival, transfer and member processes, the job
 * steps, each instance's first end in the job's order
 * (docs/ARCHITECTURE.md, step 3). MT_OK or MT_ERR_NOMEM (nothing kept). */
mt_status_t cp_part_cut(const cp_graph_t *g, const uint32_t *proc_of, uint32_t n_procs, uint32_t me, cp_graph_t *lg,
                        cp_part_inst_t **ui, int32_t **rank_of);
void cp_part_cut_free(cp_graph_t *lg);

/* ---- a process's graph built from its own ranks' analyses ----
 *
 * What cp_part_build takes from the rest of the job besides its ranks'
 * analyses (docs/ARCHITECTURE.md, step 3): in a run, from the other
 * processes; in the tests, worked out from the whole job's graph. */

/* An instance or host collective the process holds members of (in the
 * job's order, the instances before the host collectives): what its
 * owner knows of it, 64 bytes. */
typedef struct cp_part_xinst {
    int64_t maxstart;     /* its last arrival: the members' latest aligned start (a maximum at the owner) */
    int64_t transfer;     /* its shortest member's duration (a minimum at the owner) */
    int64_t med;          /* the median of its members' aligned starts; a host collective's, of their
                           * gaps (cp_host_gap): the host pauses' (cp_pauses_place) */
    int64_t fkey;         /* its first end in the job's replay order: the time (cp_end_key, a sync's end) */
    int32_t frank;        /* ... the rank (mt_rank_analysis_t.rank) whose event it is */
    uint32_t fk;          /* ... that event's node or sync, counted within that rank's */
    int32_t fjob;         /* ... its job step */
    uint32_t u;           /* its job-wide number (cp_part_msg_t.u) */
    uint32_t need;        /* the processes holding members */
    int32_t last;         /* its last arrival among its members here (index into them), -1: another process's */
    uint32_t n;           /* its members here (cp_part_in_t.mem) */
    uint8_t host;         /* a host collective */
    uint8_t ftype;        /* the first end's event: 0 a node's end, 1 a sync's; CP_PART_NO_END none */
    uint8_t absent;       /* cp_inst_t.absent */
} cp_part_xinst_t;

_Static_assert(sizeof(cp_part_xinst_t) == 64, "cp_part_xinst_t: 64 bytes an instance");

enum { CP_PART_NO_END = 0xff };

/* A node or sync of one of the process's ranks: li its index among
 * them (by rank), k the node (mt_rank_analysis_t.gacts) or sync (the
 * rank's, by end, host collective members and pauses included) within
 * that rank's. 8 bytes. */
typedef struct cp_part_xmem {
    int32_t li;
    uint32_t k;
} cp_part_xmem_t;

/* A sync of one of the process's ranks beyond its analysis's own: a host
 * collective member (its row, aligned, as the instance's owner keeps it:
 * step 2). 32 bytes. */
typedef struct cp_part_xsync {
    int64_t s, e;
    int32_t li;           /* its rank (cp_part_xmem_t.li) */
    uint32_t at;          /* its place among the rank's syncs (by end, before the pauses) */
    int32_t hi;           /* the process's host collective it is a member of (its index among
                           * cp_part_in_t.xi's host ones) */
    int32_t rstep;        /* its rank step, counted within the rank's; -1 */
} cp_part_xsync_t;
_Static_assert(sizeof(cp_part_xsync_t) == 32, "cp_part_xsync_t: 32 bytes a sync");

/* The inputs of a process's graph (all borrowed). */
typedef struct cp_part_in {
    const int64_t *steps; /* the job steps' numbers, ascending: job step j is step steps[j] (8 bytes
                           * a job step, the same on every process) */
    const int64_t *step_gap; /* per job step: cp_pause_med_t.step_gap (8 bytes a job step) */
    size_t n_steps;
    const cp_part_xinst_t *xi; /* the instances it touches (from their owners) */
    size_t n_xi;
    const cp_part_xmem_t *mem; /* their members here, instance by instance, each in the job's member
                           * order (the holder's from step 2: nothing more sent) */
    size_t n_mem;
    const cp_part_xsync_t *xs; /* its ranks' host collective members, by rank, then place */
    size_t n_xs;
    const cp_part_xmem_t *absent; /* its nodes with cp_node_t.absent (the match's short instances) */
    size_t n_absent;
    bool explicit_deps;   /* some rank of the job names its dependencies (cp_graph_t) */
    bool topo;            /* ... and the job has no sync: its replay order is topological
                           * (cp_order_build) */
} cp_part_in_t;

/* The graph of a process's ranks built from their analyses an[0..n_an)
 * (with their clocks as mt_critpath_run takes them; borrowed, must
 * outlive lg) and the job-wide inputs in, into *lg: the same graph as
 * cp_part_cut's of the whole job's (its nodes, syncs, rank steps, ranks,
 * instances with their members, replay order and hot records; not the
 * build's counters) and *ui (malloc'd, lg->n_inst + lg->n_hin; the
 * caller frees) as cp_part_cut's. The ranks' own fields come from
 * cp_graph_build over these ranks alone (no pauses), the host members'
 * lateness and the pauses from cp_pauses_place with the job's medians,
 * the job fields from cp_job_fields, the order from cp_order_build; each
 * instance's read
 * point counts the process's events before its first end's (time,
 * type, rank, node or sync) in the order. A job replayed in topological
 * order (in->topo: a queue's over the whole job's edges, which no
 * process can make of its own) is ordered here in time order made
 * topological (cp_order_build's, one order consistent across processes),
 * an instance read at its first end here (every member here started):
 * its replay is the same, its order and read points not cp_part_cut's.
 * lg is freed with
 * cp_graph_free. MT_OK, MT_ERR_NOMEM, MT_ERR_LIMIT (cp_graph_build's) or
 * MT_ERR_RANGE (an input names a rank, node, sync or step the process
 * does not have); lg empty on error. */
mt_status_t cp_part_build(const mt_rank_analysis_t *const *an, size_t n_an, const mt_clock_t *clocks,
                          const int32_t *ranks, size_t n_ranks, const cp_part_in_t *in, cp_graph_t *lg,
                          cp_part_inst_t **ui);

/* The bytes of g's tables that a replay reads (nodes, syncs, rank steps,
 * ranks, instances and members, the replay order and its records), the
 * same count for the whole job's graph and a process's. */
size_t cp_part_graph_bytes(const cp_graph_t *g);

/* Process me's plan over its graph g (cp_part_cut; ui its instances',
 * borrowed, must outlive p) of n_procs, for replays that carry shifts
 * over steps (carry) or not. MT_OK or MT_ERR_NOMEM (p empty). */
mt_status_t cp_part_plan(const cp_graph_t *g, const cp_part_inst_t *ui, uint32_t n_procs, uint32_t me, bool carry,
                         cp_part_plan_t *p);
void cp_part_plan_free(cp_part_plan_t *p);

/* A replay of a process's share: lanes sc[0..n_lanes) into r[l] (each
 * set by cp_rp_init, and for a second pass its cd and cd_on; borrowed,
 * written only at the process's ranks' entries and the instances it
 * reads). */
typedef struct cp_part {
    const cp_graph_t *g;
    const cp_part_plan_t *p;
    int n_lanes;
    cp_scen_t sc[CP_PART_LANES];
    cp_rp_t *r[CP_PART_LANES];
    size_t *at, *rat;     /* per lane and stream: its next event and next read */
    int64_t *held;        /* per lane and stream: the own arrival of a host collective member's
                           * return waiting for the last arrival (sync_arrival done), */
    uint8_t *half;        /* ... and whether one is */
    int64_t *lmax;        /* per lane and instance u: the latest arrival of this process's ranks read so far */
    uint32_t *lgot;       /* ... and how many of its ranks have read it */
    cp_part_msg_t *out;   /* the contributions of the last advance */
    size_t n_out, cap_out;
} cp_part_t;

/* x for the lanes above over plan p (both borrowed, must outlive x).
 * MT_OK or MT_ERR_NOMEM. */
mt_status_t cp_part_start(cp_part_t *x, const cp_graph_t *g, const cp_part_plan_t *p, const cp_scen_t *sc,
                          cp_rp_t *const *r, int n_lanes);

/* A superstep: every lane's streams replayed until each is blocked at an
 * instance whose last arrival has not come, or done; the contributions
 * of the instances all of whose ranks here have read them on the way
 * into x->out[0 .. x->n_out) (the previous ones dropped; one message an
 * instance and lane from a process).
 * *done: every stream of every lane at its end. MT_OK or MT_ERR_NOMEM. */
mt_status_t cp_part_advance(cp_part_t *x, bool *done);

/* The owners' answers addressed to this process: each instance's last
 * arrival set in its lane (at its lu). */
void cp_part_take(cp_part_t *x, const cp_part_msg_t *ans, size_t n);
void cp_part_free(cp_part_t *x);

/* The process that owns instance u (cp_part_msg_t.u) of n_procs. */
static inline uint32_t cp_part_owner(uint32_t u, uint32_t n_procs)
{
    return u % n_procs;
}

/* An owner's instances: the running maximum of each instance's
 * contributions per lane and who sent them. */
typedef struct cp_part_own {
    uint32_t me, n_procs;
    int n_lanes;
    size_t n_slots;       /* per lane: the instances u with u % n_procs == me, at u / n_procs */
    int64_t *max;
    uint32_t *got;
    int32_t *head;        /* per slot: the last sender's entry in who, -1 */
    struct cp_part_who {
        int32_t next;
        uint16_t proc;
        uint32_t lu;
    } *who;
    size_t n_who, cap_who;
} cp_part_own_t;

/* o for process me of n_procs owning among the job's n_u instances
 * (the whole graph's n_inst + n_hin), n_lanes lanes. MT_OK or MT_ERR_NOMEM. */
mt_status_t cp_part_own_init(cp_part_own_t *o, size_t n_u, uint32_t me, uint32_t n_procs, int n_lanes);

/* The contributions in[0..n) (all owned by o) taken in; the answers of
 * each instance that has all of them appended to *out (*n_out of *cap,
 * grown with realloc; the caller frees), one to each contributor, with
 * the lu it sent. MT_OK or MT_ERR_NOMEM. */
mt_status_t cp_part_own_take(cp_part_own_t *o, const cp_part_msg_t *in, size_t n, cp_part_msg_t **out, size_t *n_out,
                             size_t *cap);
void cp_part_own_free(cp_part_own_t *o);

#endif
