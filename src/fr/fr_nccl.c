/* Flight Recorder dumps made from the NCCL plugin's files (one per
 * process), so that a job profiled with libnccl-profiler-mergetrace.so gets
 * the same hang verdict as one with PyTorch's dumps (issue 41).
 *
 * The mapping, fact by fact:
 * - a process group per (communicator, collective function): NCCL numbers
 *   a communicator's collectives per function ("seq" of AllReduce and of
 *   AllGather count apart), where a Flight Recorder group numbers all of
 *   them; the group's name is "<comm hash>:<func>", its description the
 *   communicator's name;
 * - its members' global ranks come from every file that has the
 *   communicator (a file's global rank is the caller's); a member no file
 *   names is the global rank of the same number when the communicator spans
 *   the whole job, and otherwise left out (the verdict then cannot name it);
 * - entries are the collectives and the P2P tasks; created = the host
 *   start of the enqueue, started = the kernel's first channel start on the
 *   host clock, completed = its last channel stop on the host clock (GPU
 *   stamp + the file's offset bound); state from the task's (done,
 *   running, else scheduled);
 * - a communicator's P2P tasks (NCCL gives them no sequence number) make
 *   one more group, "<comm hash>:p2p", named as Flight Recorder names
 *   sends and recvs ("nccl:send A->B", "nccl:recv A<-B", A and B places in
 *   the group's sorted global ranks, as the analysis reads them), with
 *   p2p_seq_id counting the process's P2P tasks of the communicator; the
 *   analysis pairs them by order per (communicator, src, dst) like a dump's.
 *   A task whose peer no file names is left out;
 * - the dump's time: a stuck entry's timeout is the time from its start to
 *   the file's last host time (the process's last clock line), so the
 *   analysis's "first watchdog to fire" becomes the first process that
 *   stopped writing. */
#include "fr/fr.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mergetrace/buf.h"
#include "mergetrace/nccl_input.h"

typedef struct comm_members {
    uint64_t hash;
    int nranks;
    int *global; /* [nranks], -1 unknown */
    char name[48];
} comm_members_t;

static comm_members_t *members_of(comm_members_t *m, size_t n, uint64_t hash)
{
    for (size_t i = 0; i < n; i++)
        if (m[i].hash == hash)
            return &m[i];
    return NULL;
}

/* "AllReduce" -> "nccl:all_reduce", as Flight Recorder names them */
static void fr_name(char *dst, size_t cap, const char *func)
{
    size_t o = (size_t)snprintf(dst, cap, "nccl:");
    for (const char *p = func; *p && o + 2 < cap; p++) {
        char c = *p;
        if (c >= 'A' && c <= 'Z') {
            if (p != func && o + 3 < cap)
                dst[o++] = '_';
            c = (char)(c - 'A' + 'a');
        }
        dst[o++] = c;
    }
    dst[o] = '\0';
}

static void pg_name(char *dst, size_t cap, uint64_t hash, const char *func)
{
    snprintf(dst, cap, "%016llx:%s", (unsigned long long)hash, func);
}

static int64_t on_host(const mt_nccl_file_t *f, int64_t gpu)
{
    return f->has_offset_bound ? gpu + f->gpu_offset_bound_ns : gpu;
}

static void free_members(comm_members_t *m, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(m[i].global);
    free(m);
}

mt_status_t mt_fr_from_nccl(const mt_nccl_file_t *const *files, const int32_t *ranks, size_t n, mt_fr_dump_t *out,
                            mt_error_t *err)
{
    memset(out, 0, n * sizeof *out);
    comm_members_t *m = NULL;
    size_t nm = 0, cap = 0;
    int world = 0;
    for (size_t i = 0; i < n; i++) {
        if (ranks[i] < 0 || ranks[i] >= MT_FR_MAX_RANKS)
            return mt_error_set(err, MT_ERR_LIMIT, "NCCL files: global rank %d is beyond the hang analysis's %d ranks",
                                (int)ranks[i], MT_FR_MAX_RANKS);
        for (size_t c = 0; c < files[i]->n_comms; c++)
            if (files[i]->comms[c].nranks > world)
                world = files[i]->comms[c].nranks;
    }
    /* every communicator's members, from every file that has it */
    for (size_t i = 0; i < n; i++)
        for (size_t c = 0; c < files[i]->n_comms; c++) {
            const mt_nccl_comm_t *cm = &files[i]->comms[c];
            if (cm->nranks <= 0 || cm->nranks > MT_FR_MAX_RANKS || cm->rank < 0 || cm->rank >= cm->nranks)
                continue;
            comm_members_t *e = members_of(m, nm, cm->hash);
            if (!e) {
                if (MT_GROW(m, cap, nm + 1, 16)) {
                    free_members(m, nm);
                    return mt_error_set(err, MT_ERR_NOMEM, "NCCL files: hang analysis");
                }
                e = &m[nm];
                *e = (comm_members_t){.hash = cm->hash, .nranks = cm->nranks,
                                      .global = malloc((size_t)cm->nranks * sizeof *e->global)};
                if (!e->global) {
                    free_members(m, nm);
                    return mt_error_set(err, MT_ERR_NOMEM, "NCCL files: hang analysis");
                }
                nm++;
                for (int k = 0; k < cm->nranks; k++)
                    e->global[k] = cm->nranks == world ? k : -1;
                snprintf(e->name, sizeof e->name, "%s", cm->name);
            }
            if (e->nranks == cm->nranks)
                e->global[cm->rank] = ranks[i];
        }
    mt_status_t st = MT_OK;
    for (size_t i = 0; i < n && st == MT_OK; i++) {
        const mt_nccl_file_t *f = files[i];
        mt_fr_dump_t *d = &out[i];
        d->rank = ranks[i];
        snprintf(d->version, sizeof d->version, "nccl-plugin");
        size_t cap_e = 0, cap_g = 0, cap_c = 0;
        int64_t *p2p_count = NULL; /* [npgs]: P2P tasks so far per group */
        for (size_t k = 0; k < f->n_tasks && st == MT_OK; k++) {
            const mt_nccl_task_t *t = &f->tasks[k];
            const comm_members_t *cm = members_of(m, nm, t->comm);
            if ((!t->is_p2p && t->seq < 0) || !cm)
                continue;
            char pg[64], name[MT_FR_NAME_MAX + 1];
            if (t->is_p2p) {
                int peer = t->root_or_peer >= 0 && t->root_or_peer < cm->nranks ? cm->global[t->root_or_peer] : -1;
                if (peer < 0 || peer == ranks[i])
                    continue;
                /* places in the group's sorted ranks */
                int me_at = 0, peer_at = 0;
                for (int r = 0; r < cm->nranks; r++) {
                    me_at += cm->global[r] >= 0 && cm->global[r] < ranks[i];
                    peer_at += cm->global[r] >= 0 && cm->global[r] < peer;
                }
                bool send = !strcmp(t->func, "Send");
                if (!send && strcmp(t->func, "Recv"))
                    continue;
                snprintf(name, sizeof name, send ? "nccl:send %d->%d" : "nccl:recv %d<-%d", me_at, peer_at);
                pg_name(pg, sizeof pg, t->comm, "p2p");
            } else {
                fr_name(name, sizeof name, t->func);
                pg_name(pg, sizeof pg, t->comm, t->func);
            }
            size_t g = 0;
            while (g < d->npgs && strcmp(d->pgs[g].name, pg) != 0)
                g++;
            if (g == d->npgs) {
                if (MT_GROW(d->pgs, cap_g, d->npgs + 1, 8)) {
                    st = MT_ERR_NOMEM;
                    break;
                }
                mt_fr_pg_t *p = &d->pgs[d->npgs];
                *p = (mt_fr_pg_t){.ranks = malloc((size_t)cm->nranks * sizeof *p->ranks)};
                if (!p->ranks) {
                    st = MT_ERR_NOMEM;
                    break;
                }
                snprintf(p->name, sizeof p->name, "%s", pg);
                snprintf(p->desc, sizeof p->desc, "%s", cm->name);
                for (int r = 0; r < cm->nranks; r++)
                    if (cm->global[r] >= 0)
                        p->ranks[p->nranks++] = cm->global[r];
                d->npgs++;
                if (MT_GROW(p2p_count, cap_c, d->npgs, 8)) {
                    st = MT_ERR_NOMEM;
                    break;
                }
                p2p_count[g] = 0;
            }
            if (MT_GROW(d->entries, cap_e, d->n + 1, 64)) {
                st = MT_ERR_NOMEM;
                break;
            }
            mt_fr_entry_t *e = &d->entries[d->n++];
            memset(e, 0, sizeof *e);
            e->record_id = t->id;
            if (t->is_p2p) {
                e->is_p2p = true;
                e->seq = 0; /* the group has no collectives */
                e->p2p_seq = ++p2p_count[g];
            } else {
                e->seq = t->seq + 1; /* NCCL counts from 0, Flight Recorder from 1 (0: none completed) */
                e->p2p_seq = -1;
            }
            e->created = t->host_start_ns;
            e->started = t->kernel_open_ns >= 0 ? on_host(f, t->kernel_open_ns)
                         : t->gpu_start_ns >= 0  ? on_host(f, t->gpu_start_ns)
                                                 : MT_FR_NONE;
            e->completed = t->state == MT_NCCL_TASK_DONE && t->gpu_stop_ns >= 0 ? on_host(f, t->gpu_stop_ns) : MT_FR_NONE;
            e->state = e->completed != MT_FR_NONE ? MT_FR_COMPLETED
                       : e->started != MT_FR_NONE ? MT_FR_STARTED
                                                  : MT_FR_SCHEDULED;
            if (e->state == MT_FR_COMPLETED && e->started == MT_FR_NONE)
                e->started = e->completed;
            if (e->state != MT_FR_COMPLETED && e->started != MT_FR_NONE && f->last_seen_ns > e->started)
                e->timeout_ms = (f->last_seen_ns - e->started) / 1000000 > INT32_MAX
                                    ? INT32_MAX
                                    : (int32_t)((f->last_seen_ns - e->started) / 1000000);
            e->in_numel = e->out_numel = t->count > 0 ? (uint64_t)t->count : 0;
            const char *dt = t->datatype;
            if ((st = mt_fr_intern(d, pg, strlen(pg), MT_FR_PG_MAX + 1, &e->pg)) == MT_OK &&
                (st = mt_fr_intern(d, name, strlen(name), MT_FR_NAME_MAX + 1, &e->name)) == MT_OK)
                st = mt_fr_intern(d, dt, strlen(dt), MT_FR_DTYPE_MAX + 1, &e->dtype);
        }
        free(p2p_count);
    }
    free_members(m, nm);
    if (st != MT_OK) {
        for (size_t i = 0; i < n; i++)
            mt_fr_dump_free(&out[i]);
        return mt_error_set(err, st, "NCCL files: hang analysis");
    }
    return MT_OK;
}
