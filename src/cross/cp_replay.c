/* The replay of the critical path's graph (critpath.c builds it, cp_run.c
 * puts its events in replay order) under a scenario: the sweeps (the
 * measured run and what-ifs side by side) over the per-event rules of
 * cp_event_int.h, the edges' shifts; cp_run.c drives it (internal to
 * src/cross/, cp_run_int.h). */
#include "base/bigmem.h"
#include "cross/cp_event_int.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* ---- replay ---- */

void cp_rp_free(rp_t *r)
{
    free(r->s);
    free(r->e);
    free(r->sd);
    free(r->ims);
    free(r->hims);
    free(r->sdone);
    free(r->idone);
    free(r->hidone);
    free(r->jend);
    free(r->hc);
    free(r->rend);
    free(r->cd);
}

int cp_rp_alloc(const cp_graph_t *g, rp_t *r)
{
    size_t n = g->n_nodes ? g->n_nodes : 1;
    r->s = mt_big_malloc(n * sizeof *r->s);
    r->e = mt_big_malloc(n * sizeof *r->e);
    r->sdone = mt_big_malloc(n);
    r->sd = malloc((g->n_syncs ? g->n_syncs : 1) * sizeof *r->sd);
    r->ims = malloc((g->n_inst ? g->n_inst : 1) * sizeof *r->ims);
    r->idone = malloc(g->n_inst ? g->n_inst : 1);
    r->hims = malloc((g->n_hin ? g->n_hin : 1) * sizeof *r->hims);
    r->hidone = malloc(g->n_hin ? g->n_hin : 1);
    r->jend = malloc((g->n_rs ? g->n_rs : 1) * sizeof *r->jend);
    r->hc = malloc((g->n_rs ? g->n_rs : 1) * sizeof *r->hc);
    r->rend = malloc((g->n_rs ? g->n_rs : 1) * sizeof *r->rend);
    r->cd = malloc((g->n_syncs ? g->n_syncs : 1) * sizeof *r->cd);
    return r->s && r->e && r->sdone && r->sd && r->ims && r->idone && r->hims && r->hidone && r->jend && r->hc &&
                   r->rend && r->cd
               ? 0
               : -1;
}

/* sweep3's start event of the node at hot[k] in each lane (r[0] measured
 * under P, r[1] "comm" under C when comm, r[2] "launch" under L, r[3]
 * the straggler what-if under F when F->factor): start_of in each lane
 * whose start is not done yet (an instance member's start may have been
 * replayed at another member's end, in that lane's own order). The one
 * record and its predecessors are read once a lane from the cache: what
 * the side-by-side sweep saves is the passes over the graph, not these
 * reads. */
CP_INLINE void start3(const cp_graph_t *g, const scen_t *P, const scen_t *C, const scen_t *L, const scen_t *F,
                      rp_t *r, bool meas, bool comm, bool launch, int32_t k)
{
    int32_t id = g->hot[k].id;
    if (meas && !r[0].sdone[id])
        start_of(g, P, &r[0], k);
    if (comm && !r[1].sdone[id])
        start_of(g, C, &r[1], k);
    if (launch && !r[2].sdone[id])
        start_of(g, L, &r[2], k);
    if (F->factor && !r[3].sdone[id])
        start_of(g, F, &r[3], k);
}


/* The events of g in replay order under sc (a copy: see CP_INLINE). */
CP_INLINE void sweep(const cp_graph_t *g, const scen_t sc, rp_t *r)
{
    for (size_t k = 0; k < g->n_ev; k++)
        event_of(g, &sc, r, g->ev[k]);
}

/* The measured replay (r[0], when meas) and the what-ifs "communication
 * at its transfer time" (r[1], when comm) and "no launch gaps" (r[2],
 * when launch) side by side in one sweep of the events: each lane's steps
 * are exactly those of its own sweep (a lane reads and writes only its
 * own arrays, and the events come in the same order), but the events and
 * the nodes' records are read once, not once per scenario (fast path:
 * every run without a pipeline replays these three). The flags are
 * constants where the callers can make them so: see CP_INLINE. */
CP_INLINE void sweep3(const cp_graph_t *g, rp_t *r, bool meas, bool comm, bool launch, const double *f,
                      const uint8_t *late, int pin)
{
    const scen_t P = {.pin_inferred = pin}, C = {.comm_transfer = 1, .pin_inferred = pin},
                 L = {.drop_launch = 1, .pin_inferred = pin}, F = {.factor = f, .late = late, .pin_inferred = pin};
    for (size_t k = 0; k < g->n_ev; k++) {
        int64_t v = g->ev[k];
        int type = (int)(v >> 32);
        int32_t id = (int32_t)(v & 0xffffffff); /* a sync, or a node's index in hot */
        if (type == 0) {
            if (meas)
                end_of(g, &P, &r[0], id);
            if (comm)
                end_of(g, &C, &r[1], id);
            if (launch)
                end_of(g, &L, &r[2], id);
            if (f)
                end_of(g, &F, &r[3], id);
        } else if (type == 1) {
            const cp_rank_t *R = &g->ranks[g->syncs[id].rank_i];
            if (meas)
                sync_of(g, &P, &r[0], R, (size_t)id);
            if (comm)
                sync_of(g, &C, &r[1], R, (size_t)id);
            if (launch)
                sync_of(g, &L, &r[2], R, (size_t)id);
            if (f)
                sync_of(g, &F, &r[3], R, (size_t)id);
        } else {
            start3(g, &P, &C, &L, &F, r, meas, comm, launch, id);
        }
    }
}

void (*cp_replay_probe)(const cp_graph_t *g, const scen_t *sc, const rp_t *r, const bool *on, int n);

void cp_rp_init(const cp_graph_t *g, const scen_t *sc, rp_t *r)
{
    /* r->s needs no start: every node's start event sets it */
    memcpy(r->e, g->e0, g->n_nodes * sizeof *r->e);
    memset(r->sdone, 0, g->n_nodes ? g->n_nodes : 1);
    memset(r->idone, 0, g->n_inst ? g->n_inst : 1);
    memset(r->hidone, 0, g->n_hin ? g->n_hin : 1);
    memset(r->sd, 0, (g->n_syncs ? g->n_syncs : 1) * sizeof *r->sd);
    memset(r->hc, 0, (g->n_rs ? g->n_rs : 1) * sizeof *r->hc);
    for (size_t i = 0; i < g->n_rs; i++)
        r->rend[i] = INT64_MIN;
    r->carry = sc->carry;
    r->cd_on = 0;
}

/* Whether a replay under sc takes the edge from a rank step's last sync
 * to the rank's next step (cp_sync_t.jnext) in a second pass: one run
 * carries every shift anyway; with communication at its transfer time the
 * ranks never wait for each other, so their offsets would not settle. */
static bool edge_wanted(const cp_graph_t *g, const scen_t *sc)
{
    return g->n_jnext && !sc->carry && !sc->comm_transfer;
}

/* How far each sync that a rank step starts after (jnext) moved in a
 * first pass of r (r->sd, each step replayed from its measured start)
 * against the others of its job step: its shift less the largest of
 * theirs, into out (per sync), less base[q] when base (the same of the
 * unchanged run). */
static void edge_rel(const cp_graph_t *g, const mt_critpath_t *c, const rp_t *r, const int64_t *base, int64_t *out)
{
    for (size_t j = 0; j < c->n_steps; j++) {
        const mt_cp_step_t *s = &c->steps[j];
        int64_t o = INT64_MIN;
        for (uint32_t k = s->first; k < s->first + s->n; k++) {
            int32_t q = g->rs[g->js[k]].sb_start;
            if (q >= 0 && g->syncs[q].jnext == (int32_t)j && r->sd[q] > o)
                o = r->sd[q];
        }
        for (uint32_t k = s->first; k < s->first + s->n; k++) {
            int32_t q = g->rs[g->js[k]].sb_start;
            if (q >= 0 && g->syncs[q].jnext == (int32_t)j)
                out[q] = base && base[q] == CP_EDGE_OFF ? 0 : r->sd[q] - o - (base ? base[q] : 0);
        }
    }
}

/* The unchanged run r's offsets (edge_rel; r: its first pass, it has no
 * other) into out, what the other replays' edges are taken against
 * (edge_fill). */
static void edge_rel_base(const cp_graph_t *g, const mt_critpath_t *c, const rp_t *r, int64_t *out)
{
    edge_rel(g, c, r, NULL, out);
    /* a job step whose rank steps' syncs the unchanged run does not
     * replay within CP_NEXT_ERR of their measured ends takes no edge: the
     * offsets it would carry are the model's error (on gloo4, host-bound,
     * up to 432 us: its what-if moved 8.01 -> 8.24 ms, away from the
     * truth) */
    for (size_t j = 0; j < c->n_steps; j++) {
        const mt_cp_step_t *s = &c->steps[j];
        bool off = false;
        for (uint32_t k = s->first; k < s->first + s->n && !off; k++) {
            int32_t q = g->rs[g->js[k]].sb_start;
            off = q >= 0 && g->syncs[q].jnext == (int32_t)j && (r->sd[q] > CP_NEXT_ERR || r->sd[q] < -CP_NEXT_ERR);
        }
        for (uint32_t k = s->first; off && k < s->first + s->n; k++) {
            int32_t q = g->rs[g->js[k]].sb_start;
            if (q >= 0 && g->syncs[q].jnext == (int32_t)j)
                out[q] = CP_EDGE_OFF;
        }
    }
}

/* g->cd0 from the unchanged run r (edge_rel_base), for the replays after
 * it; nothing without an edge. 0, or -1 out of memory. */
int cp_edge_base(cp_graph_t *g, const mt_critpath_t *c, const rp_t *r)
{
    if (!g->n_jnext)
        return 0;
    if (!(g->cd0 = calloc(g->n_syncs, sizeof *g->cd0)))
        return -1;
    edge_rel_base(g, c, r, g->cd0);
    return 0;
}

/* The edge's shifts (r->cd) for r's second pass, from its first: what a
 * rank's start takes into the next step is how far its previous step's
 * end moved against the other ranks' (a slow GPU's host that waited for
 * it starts earlier once it is fast), never the step's common move, and
 * less what the unchanged run's first pass gave (r->cd0, else g->cd0:
 * the model's own error, so that the unchanged run replays as it did).
 * The next step is still replayed from its measured start and the shifts
 * come from a pass that carried nothing: no error adds up over the steps.
 * False when there is no unchanged run yet (r is it: nothing to move)
 * or when nothing moves by CP_EDGE_TOL or more (fast path: the second
 * pass would replay the first again; on the 256-rank job most replays). */
static bool edge_fill(const cp_graph_t *g, const mt_critpath_t *c, rp_t *r)
{
    const int64_t *base = r->cd0 ? r->cd0 : g->cd0;
    if (!base)
        return false;
    edge_rel(g, c, r, base, r->cd);
    for (size_t q = 0; q < g->n_syncs; q++)
        if (g->syncs[q].jnext >= 0 && (r->cd[q] >= CP_EDGE_TOL || r->cd[q] <= -CP_EDGE_TOL))
            return true;
    return false;
}

/* Whether r's edge (edge_fill's r->cd) moves any sync at all: else a
 * second pass would replay its first exactly (shift_of and pred_at add
 * r->cd, 0 everywhere). */
static bool edge_any(const cp_graph_t *g, const rp_t *r)
{
    for (size_t q = 0; q < g->n_syncs; q++)
        if (g->syncs[q].jnext >= 0 && r->cd[q])
            return true;
    return false;
}

/* The job step times of a replay (r swept): times[j] and r->jend[j]. */
static void replay_finish(const cp_graph_t *g, rp_t *r, const mt_critpath_t *c, int64_t *times)
{
    /* rank step ends: the host end shifted, or the latest replayed end of
     * its activities (end_of kept it in rend) */
    int64_t *rend = r->rend;
    for (size_t i = 0; i < g->n_rs; i++) {
        const cp_rs_t *x = &g->rs[i];
        int64_t v = x->cpu_end + shift_of(g, r, x->sb_end, x->job) + r->hc[i];
        if (v > rend[i])
            rend[i] = v;
    }
    for (size_t j = 0; j < c->n_steps; j++) {
        const mt_cp_step_t *s = &c->steps[j];
        int64_t lo = INT64_MAX, hi = INT64_MIN;
        for (uint32_t k = s->first; k < s->first + s->n; k++) {
            int32_t q = g->js[k];
            const cp_rs_t *x = &g->rs[q];
            /* each step replays from its measured start; in one run
             * (carry) from it shifted with its rank's host */
            int64_t st = x->start + (r->carry ? shift_of(g, r, x->sb_start, x->job) : 0);
            if (st < lo)
                lo = st;
            if (rend[q] > hi)
                hi = rend[q];
        }
        times[j] = hi - lo;
        r->jend[j] = hi;
    }
}

/* Replay under sc; times[j] gets the job step time of job step j. */
void cp_replay(const cp_graph_t *g, const scen_t *sc, rp_t *r, const mt_critpath_t *c, int64_t *times)
{
    for (int pass = 0; pass < 2; pass++) {
        if (pass) { /* the edge to the next step's start: its shifts from the first pass */
            if (!edge_fill(g, c, r))
                break;
            cp_rp_init(g, sc, r);
            r->cd_on = 1;
        } else {
            cp_rp_init(g, sc, r);
        }
        /* the scenarios every run replays (measured, the what-ifs "comm"
         * and "launch") each with its flags as constants: see CP_INLINE */
        /* (a pinned scenario, the ranges' other binding, is swept as it
         * is: the constant ones have pin_inferred 0) */
        bool plain = !sc->factor && !sc->carry && !sc->pin_inferred;
        if (plain && !sc->drop_launch && !sc->comm_transfer)
            sweep(g, (scen_t){0}, r);
        else if (plain && !sc->drop_launch && sc->comm_transfer)
            sweep(g, (scen_t){.comm_transfer = 1}, r);
        else if (plain && sc->drop_launch && !sc->comm_transfer)
            sweep(g, (scen_t){.drop_launch = 1}, r);
        else
            sweep(g, *sc, r);
        if (cp_replay_probe) {
            /* the scenario as swept: the constant ones above keep only their flag */
            scen_t u = *sc;
            if (plain && !(sc->drop_launch && sc->comm_transfer))
                u = (scen_t){.comm_transfer = sc->comm_transfer, .drop_launch = sc->drop_launch};
            cp_replay_probe(g, &u, r, (const bool[1]){true}, 1);
        }
        if (!edge_wanted(g, sc))
            break;
    }
    replay_finish(g, r, c, times);
}

/* sweep3's replays: r[0..3], times[0..3] as cp_replay's r and times (r[1]
 * and times[1] untouched without comm, r[2] and times[2] without launch,
 * r[3] and times[3] without f, the straggler what-if's factors); pin:
 * every lane with the inferred stream waits pinned (the ranges' other
 * binding, cp_scen_t.pin_inferred), and then at most one of comm and
 * launch (the ranges need the better one only). */
void cp_replay3(const cp_graph_t *g, rp_t *r, bool comm, bool launch, const double *f, const uint8_t *late,
                bool pin, const mt_critpath_t *c, int64_t *const *times)
{
    const scen_t sc[4] = {{0}, {.comm_transfer = 1}, {.drop_launch = 1}, {.factor = f, .late = late}};
    const bool on[4] = {true, comm, launch, f != NULL};
    for (int l = 0; l < 4; l++)
        if (on[l])
            cp_rp_init(g, &sc[l], &r[l]);
    /* each combination its own inlined sweep: the flags stay constants */
    if (!pin && comm)
        sweep3(g, r, true, true, true, f, late, 0);
    else if (!pin)
        sweep3(g, r, true, false, true, f, late, 0);
    else if (comm)
        sweep3(g, r, true, true, false, f, late, 1);
    else if (launch)
        sweep3(g, r, true, false, true, f, late, 1);
    else
        sweep3(g, r, true, false, false, f, late, 1);
    /* the lanes as sweep3 replays them */
    const scen_t sw[4] = {{.pin_inferred = pin},
                          {.comm_transfer = 1, .pin_inferred = pin},
                          {.drop_launch = 1, .pin_inferred = pin},
                          {.factor = f, .late = late, .pin_inferred = pin}};
    if (cp_replay_probe)
        cp_replay_probe(g, sw, r, (const bool[4]){true, comm, !pin || (!comm && launch), f != NULL}, 4);
    if (comm) /* "comm" takes no edge to the next step (edge_wanted) */
        replay_finish(g, &r[1], c, times[1]);
    if (g->n_jnext) {
        /* the second pass of the others (cp_replay), side by side again,
         * against the unchanged run of lane 0 (its offsets in its cd, its
         * second pass the same as its first: not replayed again). A lane
         * whose edge moves no sync at all would replay its first pass
         * again: it keeps it (fast path: on the 256-rank job the "launch"
         * lane moves none, and the second sweep was 2/3 of these replays) */
        edge_rel_base(g, c, &r[0], r[0].cd);
        bool again[4] = {false, false, false, false};
        for (int l = 2; l < 4; l++)
            if (on[l]) {
                r[l].cd0 = r[0].cd;
                edge_fill(g, c, &r[l]);
                r[l].cd0 = NULL;
                again[l] = edge_any(g, &r[l]);
                if (again[l]) {
                    cp_rp_init(g, &sc[l], &r[l]);
                    r[l].cd_on = 1;
                }
            }
        const double *f2 = again[3] ? f : NULL;
        if (!pin && again[2])
            sweep3(g, r, false, false, true, f2, late, 0);
        else if (!pin && f2)
            sweep3(g, r, false, false, false, f2, late, 0);
        else if (again[2])
            sweep3(g, r, false, false, true, f2, late, 1);
        else if (f2)
            sweep3(g, r, false, false, false, f2, late, 1);
        if (cp_replay_probe && (again[2] || f2))
            cp_replay_probe(g, sw, r, (const bool[4]){false, false, again[2], f2 != NULL}, 4);
    }
    for (int l = 0; l < 4; l++)
        if (on[l] && l != 1)
            replay_finish(g, &r[l], c, times[l]);
}
