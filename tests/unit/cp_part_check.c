/* The partitioned replay checked against the one-process sweeps
 * (cp_part_check.h): the probe, the virtual processes with their own
 * graphs, their rounds and their bytes. */
#include "cp_part_check.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cross/cp_part.h"

cp_part_stats_t cp_part_stats;

static void fail(const char *fmt, ...)
{
    if (!cp_part_stats.failures++) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(cp_part_stats.first, sizeof cp_part_stats.first, fmt, ap);
        va_end(ap);
    }
}

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p) {
        fprintf(stderr, "cp_part_check: out of memory\n");
        abort();
    }
    return p;
}

/* The rank_i of member q of instance u (g->inst below g->n_inst, then
 * g->hin). */
static int32_t mrank(const cp_graph_t *g, size_t u, uint32_t q)
{
    if (u < g->n_inst)
        return g->nodes[g->imem[g->inst[u].m0 + q]].rank_i;
    return g->syncs[g->hmem[g->hin[u - g->n_inst].m0 + q]].rank_i;
}

/* The design's round estimates for a layout: the most instances shared
 * between processes that one rank meets in one job step, and in the run. */
static void estimates(const cp_graph_t *g, const uint32_t *proc_of, uint64_t *step, uint64_t *run)
{
    size_t NR = g->n_ranks, NU = g->n_inst + g->n_hin;
    int32_t nj = 0;
    for (size_t i = 0; i < g->n_rs; i++)
        if (g->rs[i].job + 1 > nj)
            nj = g->rs[i].job + 1;
    size_t W = (size_t)nj + 1; /* job -1 first */
    uint64_t *per = xcalloc(NR * W, sizeof *per), *all = xcalloc(NR, sizeof *all);
    int32_t *seen = xcalloc(NR, sizeof *seen);
    for (size_t r = 0; r < NR; r++)
        seen[r] = -1;
    for (size_t u = 0; u < NU; u++) {
        const cp_inst_t *I = u < g->n_inst ? &g->inst[u] : &g->hin[u - g->n_inst];
        bool shared = false;
        for (uint32_t m = 1; m < I->n && !shared; m++) {
            shared = proc_of[mrank(g, u, 0)] != proc_of[mrank(g, u, m)];
        }
        if (!shared)
            continue;
        for (uint32_t m = 0; m < I->n; m++) {
            int32_t ri, job;
            if (u < g->n_inst) {
                ri = g->nodes[g->imem[I->m0 + m]].rank_i;
                job = g->nodes[g->imem[I->m0 + m]].job;
            } else {
                ri = g->syncs[g->hmem[I->m0 + m]].rank_i;
                job = g->syncs[g->hmem[I->m0 + m]].job;
            }
            if (seen[ri] == (int32_t)u) /* a rank twice in one instance: once */
                continue;
            seen[ri] = (int32_t)u;
            per[(size_t)ri * W + (size_t)(job + 1)]++;
            all[ri]++;
        }
    }
    *step = *run = 0;
    for (size_t r = 0; r < NR; r++) {
        for (size_t j = 0; j < W; j++)
            if (per[r * W + j] > *step)
                *step = per[r * W + j];
        if (all[r] > *run)
            *run = all[r];
    }
    free(per);
    free(all);
    free(seen);
}

/* The rounds the supersteps must take at least: the longest chain of
 * shared instances in the replay order, an instance one round after the
 * latest one any of its member ranks read before it in its stream (an
 * instance of one process alone costs no round; comm: lanes that read no
 * instance but host collectives). */
static uint64_t chain(const cp_graph_t *g, const uint32_t *proc_of, bool carry, bool comm)
{
    size_t NR = g->n_ranks, NU = g->n_inst + g->n_hin;
    int32_t nj = 0;
    for (size_t i = 0; i < g->n_rs; i++)
        if (g->rs[i].job + 1 > nj)
            nj = g->rs[i].job + 1;
    size_t W = carry ? 1 : (size_t)nj + 1;
    uint64_t *lv = xcalloc(NR * W, sizeof *lv), best = 0;
    uint8_t *seen = xcalloc(NU, 1);
    for (size_t k = 0; k < g->n_ev; k++) {
        int64_t v = g->ev[k];
        int type = (int)(v >> 32);
        int32_t id = (int32_t)(v & 0xffffffff);
        long u = type == 0                              ? g->hot[id].inst
                 : type == 1 && g->syncs[id].hi >= 0 ? (long)g->n_inst + g->syncs[id].hi
                                                     : -1;
        if (u < 0 || seen[u] || (comm && (size_t)u < g->n_inst))
            continue;
        seen[u] = 1;
        int32_t job = type == 0 ? g->hot[id].job : g->syncs[id].job;
        size_t w = carry ? 0 : (size_t)(job + 1);
        const cp_inst_t *I = (size_t)u < g->n_inst ? &g->inst[u] : &g->hin[(size_t)u - g->n_inst];
        uint64_t m = 0;
        bool shared = false;
        for (uint32_t q = 0; q < I->n; q++) {
            int32_t ri = mrank(g, (size_t)u, q);
            shared = shared || proc_of[ri] != proc_of[mrank(g, (size_t)u, 0)];
            if (lv[(size_t)ri * W + w] > m)
                m = lv[(size_t)ri * W + w];
        }
        m += shared;
        for (uint32_t q = 0; q < I->n; q++) {
            lv[(size_t)mrank(g, (size_t)u, q) * W + w] = m;
        }
        if (m > best)
            best = m;
    }
    free(lv);
    free(seen);
    return best;
}

/* Append msgs to box (grown). */
static void box_add(cp_part_msg_t **box, size_t *n, size_t *cap, const cp_part_msg_t *m, size_t k)
{
    if (*n + k > *cap) {
        *cap = 2 * (*n + k) + 64;
        *box = realloc(*box, *cap * sizeof **box);
        if (!*box) {
            fprintf(stderr, "cp_part_check: out of memory\n");
            abort();
        }
    }
    memcpy(*box + *n, m, k * sizeof *m);
    *n += k;
}

#define MAXP 3

/* One process's graph (cp_part_cut) and the scenarios' per-node and
 * per-rank arrays cut to it. */
typedef struct share {
    cp_graph_t g;
    cp_part_inst_t *ui;
    int32_t *rank_of;     /* its rank_i -> the whole graph's */
    double *factor[CP_PART_LANES];
    uint8_t *late[CP_PART_LANES];
} share_t;

/* The bytes of a lane's replay arrays over g (cp_rp_alloc's). */
static uint64_t rp_bytes(const cp_graph_t *g)
{
    return g->n_nodes * (2 * sizeof(int64_t) + 1) + g->n_syncs * 2 * sizeof(int64_t) +
           (g->n_inst + g->n_hin) * (sizeof(int64_t) + 1) + g->n_rs * 3 * sizeof(int64_t);
}

/* Node k of the whole graph's rank ri in share S (ri's local index li). */
static size_t lnode(const cp_graph_t *g, const share_t *S, int32_t li, size_t id)
{
    return id - g->ranks[S->rank_of[li]].node0 + S->g.ranks[li].node0;
}

/* One layout: the ranks on P processes (blocked: in P runs of ranks, else
 * dealt in turn), lanes sc[lanes[..]] of the sweep r, each process
 * replaying the graph of its own ranks (cp_part_cut). */
static void one_layout(const cp_graph_t *g, const cp_scen_t *sc, const cp_rp_t *r, const int *lanes, int nl, uint32_t P,
                       bool blocked)
{
    size_t NR = g->n_ranks;
    bool carry = sc[lanes[0]].carry;
    uint32_t *proc_of = xcalloc(NR, sizeof *proc_of);
    for (size_t i = 0; i < NR; i++)
        proc_of[i] = blocked ? (uint32_t)(i * P / NR) : (uint32_t)(i % P);
    share_t sh[MAXP];
    cp_part_plan_t plan[MAXP];
    cp_part_t part[MAXP];
    cp_part_own_t own[MAXP];
    cp_rp_t rp[MAXP][CP_PART_LANES];
    memset(rp, 0, sizeof rp);
    memset(sh, 0, sizeof sh);
    size_t whole = cp_part_graph_bytes(g), most = 0;
    cp_part_stats.rp_whole = rp_bytes(g);
    for (uint32_t q = 0; q < P; q++) {
        share_t *S = &sh[q];
        if (cp_part_cut(g, proc_of, P, q, &S->g, &S->ui, &S->rank_of) != MT_OK ||
            cp_part_plan(&S->g, S->ui, P, q, carry, &plan[q]) != MT_OK)
            abort();
        const cp_graph_t *lg = &S->g;
        size_t b = cp_part_graph_bytes(lg) + (lg->n_inst + lg->n_hin) * sizeof *S->ui;
        if (b > most)
            most = b;
        cp_part_stats.bytes[P - 2][blocked][q] = b;
        cp_part_stats.rp_bytes[P - 2][blocked][q] = rp_bytes(lg);
        cp_scen_t scl[CP_PART_LANES];
        cp_rp_t *rl[CP_PART_LANES];
        for (int li = 0; li < nl; li++) {
            const cp_rp_t *R = &r[lanes[li]];
            const cp_scen_t *W = &sc[lanes[li]];
            scl[li] = *W;
            /* a scenario's per-node factors and per-rank marks, at the
             * process's nodes and ranks */
            if (W->factor) {
                S->factor[li] = xcalloc(lg->n_nodes, sizeof *S->factor[li]);
                for (size_t i = 0; i < lg->n_ranks; i++)
                    for (size_t k = 0; k < lg->ranks[i].n_nodes; k++)
                        S->factor[li][lg->ranks[i].node0 + k] = W->factor[g->ranks[S->rank_of[i]].node0 + k];
                scl[li].factor = S->factor[li];
            }
            if (W->late) {
                S->late[li] = xcalloc(lg->n_ranks, 1);
                for (size_t i = 0; i < lg->n_ranks; i++)
                    S->late[li][i] = W->late[S->rank_of[i]];
                scl[li].late = S->late[li];
            }
            if (cp_rp_alloc(lg, &rp[q][li]))
                abort();
            cp_rp_init(lg, &scl[li], &rp[q][li]);
            /* a second pass: its edge's shifts come from the first (a reduction
             * per job step, not part of this exchange) */
            if (R->cd_on)
                for (size_t i = 0; i < lg->n_ranks; i++)
                    for (size_t k = 0; k < lg->ranks[i].n_syncs; k++)
                        rp[q][li].cd[lg->ranks[i].sync0 + k] = R->cd[g->ranks[S->rank_of[i]].sync0 + k];
            rp[q][li].cd_on = R->cd_on;
            rl[li] = &rp[q][li];
        }
        if (cp_part_start(&part[q], lg, &plan[q], scl, rl, nl) != MT_OK ||
            cp_part_own_init(&own[q], g->n_inst + g->n_hin, q, P, nl) != MT_OK)
            abort();
        const cp_part_plan_t *pl = &plan[q];
        size_t nu = lg->n_inst + lg->n_hin;
        cp_part_stats.eng_bytes[P - 2][blocked][q] =
            pl->n_ev * sizeof *pl->ev + pl->n_rd * sizeof *pl->rd + pl->n_seg * sizeof *pl->seg +
            nu * (1 + sizeof *pl->lneed) + pl->n_seg * (2 * sizeof(size_t) + sizeof(int64_t) + 1) +
            nu * (sizeof(int64_t) + sizeof(uint32_t));
    }
    /* a process's graph against the whole job's: the largest share's */
    if (whole) {
        double f = (double)most / (double)whole;
        uint32_t k = P - 2;
        if (f > cp_part_stats.share_max[k]) {
            cp_part_stats.share_max[k] = f;
            cp_part_stats.bytes_whole = whole;
            cp_part_stats.bytes_most[k] = most;
        }
    }
    cp_part_msg_t *in[MAXP] = {0}, *ans[MAXP] = {0}, *got = NULL;
    size_t n_in[MAXP], cap_in[MAXP] = {0}, n_ans[MAXP], cap_ans[MAXP] = {0}, n_got = 0, cap_got = 0;
    uint64_t rounds = 0, msgs = 0;
    for (;;) {
        bool all = true;
        size_t sent = 0;
        for (uint32_t q = 0; q < P; q++) {
            bool done;
            if (cp_part_advance(&part[q], &done) != MT_OK)
                abort();
            all = all && done;
            n_in[q] = n_ans[q] = 0;
        }
        for (uint32_t q = 0; q < P; q++) {
            for (size_t k = 0; k < part[q].n_out; k++) {
                uint32_t o = cp_part_owner(part[q].out[k].u, P);
                box_add(&in[o], &n_in[o], &cap_in[o], &part[q].out[k], 1);
            }
            sent += part[q].n_out;
        }
        if (!sent) {
            if (!all)
                fail("supersteps stopped: no message and not done (P %u%s)", P, blocked ? " blocked" : "");
            break;
        }
        rounds++;
        msgs += sent;
        for (uint32_t o = 0; o < P; o++) {
            n_got = 0;
            if (cp_part_own_take(&own[o], in[o], n_in[o], &got, &n_got, &cap_got) != MT_OK)
                abort();
            for (size_t k = 0; k < n_got; k++)
                box_add(&ans[got[k].proc], &n_ans[got[k].proc], &cap_ans[got[k].proc], &got[k], 1);
            msgs += n_got;
        }
        for (uint32_t q = 0; q < P; q++)
            cp_part_take(&part[q], ans[q], n_ans[q]);
        if (rounds > g->n_ev + 1) {
            fail("supersteps do not end");
            break;
        }
    }
    /* the processes' graphs together hold the whole graph's nodes, syncs,
     * rank steps, events and instance members, each once */
    size_t sn = 0, ss = 0, sr = 0, se = 0, sm = 0, wm = g->n_imem + g->n_hmem;
    for (uint32_t q = 0; q < P; q++) {
        sn += sh[q].g.n_nodes;
        ss += sh[q].g.n_syncs;
        sr += sh[q].g.n_rs;
        se += sh[q].g.n_ev;
        sm += sh[q].g.n_imem + sh[q].g.n_hmem;
    }
    if (sn != g->n_nodes || ss != g->n_syncs || sr != g->n_rs || se != g->n_ev || sm != wm)
        fail("P %u: the processes' graphs hold %zu nodes, %zu syncs, %zu rank steps, %zu events, %zu members; the "
             "whole %zu, %zu, %zu, %zu, %zu",
             P, sn, ss, sr, se, sm, g->n_nodes, g->n_syncs, g->n_rs, g->n_ev, wm);
    /* every value against the one-process sweep's, to the bit: each
     * process's, mapped back to the whole graph's nodes, syncs, rank
     * steps and instances */
    int32_t *li_of = xcalloc(NR, sizeof *li_of);
    for (uint32_t q = 0; q < P; q++)
        for (size_t i = 0; i < sh[q].g.n_ranks; i++)
            li_of[sh[q].rank_of[i]] = (int32_t)i;
    for (int li = 0; li < nl; li++) {
        const cp_rp_t *R = &r[lanes[li]];
        for (size_t i = 0; i < g->n_nodes; i++) {
            int32_t ri = g->nodes[i].rank_i;
            const share_t *S = &sh[proc_of[ri]];
            const cp_rp_t *A = &rp[proc_of[ri]][li];
            size_t k = lnode(g, S, li_of[ri], i);
            cp_part_stats.values += 2;
            if (A->sdone[k] != R->sdone[i] || (R->sdone[i] && A->s[k] != R->s[i]) || A->e[k] != R->e[i])
                fail("lane %d (P %u%s, carry %d): node %zu of rank_i %d: start %lld end %lld, the sweep's %lld %lld",
                     lanes[li], P, blocked ? " blocked" : "", (int)carry, i, ri, (long long)A->s[k],
                     (long long)A->e[k], (long long)R->s[i], (long long)R->e[i]);
        }
        for (size_t j = 0; j < g->n_syncs; j++) {
            int32_t ri = g->syncs[j].rank_i;
            const share_t *S = &sh[proc_of[ri]];
            const cp_rp_t *A = &rp[proc_of[ri]][li];
            size_t k = j - g->ranks[ri].sync0 + S->g.ranks[li_of[ri]].sync0;
            cp_part_stats.values++;
            if (A->sd[k] != R->sd[j])
                fail("lane %d (P %u): sync %zu: shift %lld, the sweep's %lld", lanes[li], P, j, (long long)A->sd[k],
                     (long long)R->sd[j]);
        }
        for (size_t i = 0; i < g->n_rs; i++) {
            int32_t ri = g->rs[i].rank_i;
            const share_t *S = &sh[proc_of[ri]];
            const cp_rp_t *A = &rp[proc_of[ri]][li];
            size_t k = i - g->ranks[ri].rs0 + S->g.ranks[li_of[ri]].rs0;
            cp_part_stats.values += 2;
            if (A->rend[k] != R->rend[i] || A->hc[k] != R->hc[i])
                fail("lane %d (P %u): rank step %zu: end %lld, the sweep's %lld", lanes[li], P, i,
                     (long long)A->rend[k], (long long)R->rend[i]);
        }
        /* each process's instances (every member's process has its
         * instance): the last arrival the sweep read */
        for (uint32_t q = 0; q < P; q++) {
            const share_t *S = &sh[q];
            const cp_rp_t *A = &rp[q][li];
            for (size_t x = 0; x < S->g.n_inst + S->g.n_hin; x++) {
                size_t u = S->ui[x].u;
                bool node = u < g->n_inst;
                size_t i = node ? u : u - g->n_inst, l = node ? x : x - S->g.n_inst;
                if (node != (x < S->g.n_inst))
                    fail("P %u: instance %zu of process %u is %zu of the job's", P, x, q, u);
                if (!(node ? R->idone[i] : R->hidone[i]))
                    continue;
                bool ok = node ? A->idone[l] && A->ims[l] == R->ims[i] : A->hidone[l] && A->hims[l] == R->hims[i];
                cp_part_stats.values++;
                if (!ok)
                    fail("lane %d (P %u): %s %zu: last arrival %lld, the sweep's %lld", lanes[li], P,
                         node ? "instance" : "host collective", i, (long long)(node ? A->ims[l] : A->hims[l]),
                         (long long)(node ? R->ims[i] : R->hims[i]));
            }
        }
    }
    free(li_of);
    cp_part_stats.sweeps += (uint64_t)nl;
    for (int li = 0; li < nl; li++)
        cp_part_stats.second += r[lanes[li]].cd_on != 0;
    int k = carry ? 1 : 0;
    /* one round a link of the longest chain: no round lost waiting */
    bool comm = true; /* lanes side by side: the longest of theirs */
    for (int li = 0; li < nl; li++)
        comm = comm && sc[lanes[li]].comm_transfer;
    uint64_t least = chain(g, proc_of, carry, comm);
    if (rounds != least)
        fail("P %u%s, carry %d: %llu rounds, the longest chain of shared instances %llu", P, blocked ? " blocked" : "",
             (int)carry, (unsigned long long)rounds, (unsigned long long)least);
    if (rounds >= cp_part_stats.rounds_max[k]) {
        cp_part_stats.rounds_max[k] = rounds;
        estimates(g, proc_of, &cp_part_stats.est_step[k], &cp_part_stats.est_run[k]);
        cp_part_stats.chain[k] = least;
        cp_part_stats.msgs_max[k] = msgs;
    }
    for (uint32_t q = 0; q < P; q++) {
        for (int li = 0; li < nl; li++) {
            cp_rp_free(&rp[q][li]);
            free(sh[q].factor[li]);
            free(sh[q].late[li]);
        }
        cp_part_free(&part[q]);
        cp_part_own_free(&own[q]);
        cp_part_plan_free(&plan[q]);
        cp_part_cut_free(&sh[q].g);
        free(sh[q].ui);
        free(sh[q].rank_of);
        free(in[q]);
        free(ans[q]);
    }
    free(got);
    free(proc_of);
}

static void probe(const cp_graph_t *g, const cp_scen_t *sc, const cp_rp_t *r, const bool *on, int n)
{
    int lanes[CP_PART_LANES], nl = 0;
    for (int l = 0; l < n; l++)
        if (on[l])
            lanes[nl++] = l;
    if (!nl || g->order_cycle || g->topo_cycle) /* a replay order with a cycle reads measured ends: not checked */
        return;
    for (uint32_t P = 2; P <= MAXP; P++) {
        one_layout(g, sc, r, lanes, nl, P, false);
        one_layout(g, sc, r, lanes, nl, P, true);
    }
}

void cp_part_check_install(void)
{
    cp_replay_probe = probe;
}

void cp_part_check_remove(void)
{
    cp_replay_probe = NULL;
}

void cp_part_check_print(FILE *f, const char *tag)
{
    const cp_part_stats_t *s = &cp_part_stats;
    fprintf(f,
            "cp_part_check %s: %llu lane replays in supersteps (%llu second passes), %llu values, %llu failures; "
            "rounds: steps apart "
            "at most %llu (estimate: the most shared instances a rank meets in a step %llu, in the run %llu; %llu "
            "messages; the longest chain of shared instances %llu), carried at most %llu (estimates %llu, %llu; %llu "
            "messages; chain %llu)\n",
            tag, (unsigned long long)s->sweeps, (unsigned long long)s->second, (unsigned long long)s->values, (unsigned long long)s->failures,
            (unsigned long long)s->rounds_max[0], (unsigned long long)s->est_step[0],
            (unsigned long long)s->est_run[0], (unsigned long long)s->msgs_max[0], (unsigned long long)s->chain[0],
            (unsigned long long)s->rounds_max[1], (unsigned long long)s->est_step[1],
            (unsigned long long)s->est_run[1], (unsigned long long)s->msgs_max[1], (unsigned long long)s->chain[1]);
    fprintf(f,
            "cp_part_check %s: a process's graph at most %.3f of the whole job's %llu bytes at 2 processes "
            "(%llu), %.3f at 3 (%llu)\n",
            tag, s->share_max[0], (unsigned long long)s->bytes_whole, (unsigned long long)s->bytes_most[0],
            s->share_max[1], (unsigned long long)s->bytes_most[1]);
    for (int p = 0; p < 2; p++)
        for (int b = 0; b < 2; b++) {
            fprintf(f, "cp_part_check %s: %d processes, ranks %s: graph bytes", tag, p + 2, b ? "in blocks" : "in turn");
            for (int q = 0; q < p + 2; q++)
                fprintf(f, " %llu (%.3f)", (unsigned long long)s->bytes[p][b][q],
                        s->bytes_whole ? (double)s->bytes[p][b][q] / (double)s->bytes_whole : 0.0);
            fprintf(f, ", replay arrays a lane");
            for (int q = 0; q < p + 2; q++)
                fprintf(f, " %llu", (unsigned long long)s->rp_bytes[p][b][q]);
            fprintf(f, " (whole: %llu), plan and supersteps' state (a lane)", (unsigned long long)s->rp_whole);
            for (int q = 0; q < p + 2; q++)
                fprintf(f, " %llu", (unsigned long long)s->eng_bytes[p][b][q]);
            fprintf(f, "\n");
        }
    if (s->failures)
        fprintf(f, "cp_part_check %s: first failure: %s\n", tag, s->first);
}
