/* The hang verdict as a few terminal lines, and the line of how dumps
 * beside traces were placed in the merged trace. */
#include <inttypes.h>
#include <string.h>

#include "fr/fr.h"
#include "mergetrace/fr_share.h"

static void ranks(mt_out_t *o, const int *r, int n)
{
    mt_out_printf(o, n == 1 ? "rank " : "ranks ");
    for (int i = 0; i < n && i < 8; i++)
        mt_out_printf(o, "%s%d", i == 0 ? "" : i == n - 1 ? " and " : ", ", r[i]);
    if (n > 8)
        mt_out_printf(o, " and %d more", n - 8);
}

static const char *state_name(uint8_t s)
{
    return s == MT_FR_COMPLETED ? "completed" : s == MT_FR_STARTED ? "started" : "scheduled";
}

/* A send or recv by its rank's p2p number (its collective_seq_id is the
 * group's last collective's), a collective by its sequence number. */
static void op_name(mt_out_t *o, const mt_fr_op_t *e)
{
    if (e->is_p2p)
        mt_out_printf(o, "%s (p2p #%" PRId64 ")", e->name, e->p2p_seq);
    else
        mt_out_printf(o, "%s #%" PRId64, e->name, e->seq);
}

static void entry(mt_out_t *o, const mt_fr_op_t *e)
{
    op_name(o, e);
    mt_out_printf(o, " in group %s, %s", e->pg, state_name(e->state));
}

/* "waiting chain: rank 3 in nccl:recv 3<-2 (p2p #9) -> rank 2 in ... ->
 * rank 0, not waiting": the first 4 and the last of a longer one. */
static void chain(const mt_fr_hang_t *h, mt_out_t *o)
{
    int n = h->nchain, shown = n < 16 ? n : 16;
    mt_out_puts(o, "waiting chain (each waits for the next): ");
    for (int i = 0; i < shown; i++) {
        if (i >= 4 && i < shown - 1) {
            if (i == 4)
                mt_out_printf(o, " -> ... (%d more)", n - 5);
            continue;
        }
        mt_out_printf(o, "%srank %d", i ? " -> " : "", h->chain[i]);
        const mt_fr_op_t *e = &h->chain_op[i];
        if (!e->name[0])
            mt_out_puts(o, ", not waiting");
        else {
            mt_out_puts(o, " in ");
            op_name(o, e);
            if (!e->is_p2p)
                mt_out_printf(o, " in group %s", e->pg);
        }
    }
    mt_out_puts(o, "\n");
}

/* The verdict's first lines when it is of a send or recv. */
static void p2p_text(const mt_fr_hang_t *h, mt_out_t *o)
{
    const mt_fr_op_t *e = &h->p2p_op;
    bool send = strstr(e->name, "send ") != NULL;
    mt_out_printf(o, "hang in group %s", h->pg);
    if (h->pg_desc[0])
        mt_out_printf(o, " (%s)", h->pg_desc);
    mt_out_printf(o, " at a point-to-point operation: rank %d waits in ", h->p2p_rank);
    op_name(o, e);
    mt_out_printf(o, " %s rank %d", send ? "to" : "from", h->p2p_peer);
    if (h->wait_ns[h->p2p_rank] >= 0)
        mt_out_printf(o, ", started %.1f s ago", (double)h->wait_ns[h->p2p_rank] / 1e9);
    mt_out_puts(o, "\n");
    switch (h->kind) {
    case MT_FR_NEVER_ENQUEUED:
        mt_out_printf(o, "rank %d never enqueued the matching %s", h->culprits[0], send ? "recv" : "send");
        if (h->culprit_last.name[0]) {
            mt_out_puts(o, ": its last entry is ");
            entry(o, &h->culprit_last);
        }
        mt_out_puts(o, "\n");
        break;
    case MT_FR_SIZE_MISMATCH: {
        int from = send ? h->p2p_rank : h->p2p_peer, to = send ? h->p2p_peer : h->p2p_rank;
        uint64_t got = h->hung_first.out_numel ? h->hung_first.out_numel : h->hung_first.in_numel;
        mt_out_printf(o,
                      "rank %d sends %" PRIu64 " elements (%s) to rank %d, which receives %" PRIu64
                      " (%s): the dumps cannot tell which side is wrong\n",
                      from, h->hung_culprit.in_numel, h->hung_culprit.dtype, to, got, h->hung_first.dtype);
        break;
    }
    case MT_FR_ORDER_MISMATCH:
        ranks(o, h->culprits, h->nculprits);
        mt_out_puts(o, " wait for each other (operations issued in another order)");
        if (h->culprit_last.name[0]) {
            mt_out_printf(o, ": rank %d is in ", h->culprit_last_rank);
            entry(o, &h->culprit_last);
        }
        mt_out_puts(o, "\n");
        break;
    case MT_FR_NO_DUMP:
        mt_out_puts(o, "cannot decide: ");
        ranks(o, h->no_dump, h->nno_dump);
        mt_out_puts(o, h->nno_dump == 1 ? " has no dump\n" : " have no dump\n");
        break;
    default: mt_out_puts(o, "both ends have it open: no rank to blame (ambiguous)\n"); break;
    }
}

void mt_fr_hang_text(const mt_fr_hang_t *h, mt_out_t *o)
{
    if (h->kind == MT_FR_NO_HANG && h->empty) {
        mt_out_puts(o, "flight recorder: the dumps hold no entries, nothing to analyse (a recorder that recorded "
                       "nothing writes only its header: in an NCCL job, PyTorch 2.11's _dump_fr_trace; "
                       "_dump_nccl_trace holds the NCCL entries)\n");
        return;
    }
    if (h->kind == MT_FR_NO_HANG && h->stateless) {
        mt_out_printf(o,
                      "flight recorder: no disagreement: every group's members with a dump are at the same "
                      "collective; %d dump%s record%s no start or completion (gloo's recorder), so a hang inside "
                      "it, or in a rank without a dump, cannot be told\n",
                      h->stateless, h->stateless == 1 ? "" : "s", h->stateless == 1 ? "s" : "");
        return;
    }
    if (h->kind == MT_FR_NO_HANG) {
        mt_out_puts(o, "flight recorder: no hang: every group's ranks completed the same collectives\n");
        return;
    }
    if (h->p2p) {
        p2p_text(h, o);
        goto tail;
    }
    int stuck[16], nstuck = 0;
    int64_t lo = INT64_MAX, hi = 0;
    for (int r = 0; r < h->world; r++)
        if (h->wait_ns[r] >= 0) {
            if (nstuck < 16)
                stuck[nstuck++] = r;
            lo = h->wait_ns[r] < lo ? h->wait_ns[r] : lo;
            hi = h->wait_ns[r] > hi ? h->wait_ns[r] : hi;
        }
    mt_out_printf(o, "hang in group %s", h->pg);
    if (h->pg_desc[0])
        mt_out_printf(o, " (%s)", h->pg_desc);
    mt_out_printf(o, " at %s #%" PRId64, h->name, h->seq);
    if (nstuck) {
        mt_out_puts(o, ": ");
        ranks(o, stuck, nstuck);
        mt_out_printf(o, " started it %.1f s ago", (double)hi / 1e9);
        if (hi - lo >= 100000000)
            mt_out_printf(o, " (the last %.1f s ago)", (double)lo / 1e9);
    } else if (h->entered_total) { /* no start recorded: who is in it */
        mt_out_puts(o, ": ");
        ranks(o, h->entered, h->entered_total);
        mt_out_puts(o, " entered it");
    }
    mt_out_puts(o, "\n");
    switch (h->kind) {
    case MT_FR_NEVER_ENQUEUED:
    case MT_FR_DESYNC:
        ranks(o, h->culprits, h->nculprits);
        mt_out_puts(o, h->kind == MT_FR_DESYNC ? " is behind the others (restarted?)" : " never enqueued it");
        if (h->culprit_last.name[0]) {
            mt_out_printf(o, ": %s last entry is ", h->nculprits == 1 ? "its" : "the first one's");
            entry(o, &h->culprit_last);
        }
        mt_out_puts(o, "\n");
        break;
    case MT_FR_ORDER_MISMATCH:
        ranks(o, h->culprits, h->nculprits);
        mt_out_puts(o, " wait in each other's groups (the collectives are issued in another order)");
        if (h->culprit_last.name[0]) {
            mt_out_printf(o, ": rank %d is in ", h->culprit_last_rank);
            entry(o, &h->culprit_last);
        }
        mt_out_puts(o, "\n");
        break;
    case MT_FR_SIZE_MISMATCH:
        ranks(o, h->culprits, h->nculprits);
        mt_out_printf(o, " enqueued it as %s of %" PRIu64 " elements (%s); the others as %s of %" PRIu64 " (%s)\n",
                      h->hung_culprit.name, h->hung_culprit.in_numel, h->hung_culprit.dtype, h->hung_first.name,
                      h->hung_first.in_numel, h->hung_first.dtype);
        break;
    case MT_FR_NO_DUMP:
        mt_out_printf(o, "cannot decide for group %s: ", h->pg);
        ranks(o, h->no_dump, h->nno_dump);
        mt_out_puts(o, h->nno_dump == 1 ? " has no dump\n" : " have no dump\n");
        break;
    default: mt_out_puts(o, "every rank of the group is in it: no rank to blame (ambiguous)\n"); break;
    }
    if (h->last_arrival >= 0)
        mt_out_printf(o, "last to arrive: rank %d\n", h->last_arrival);
tail:
    if (h->nchain > 1)
        chain(h, o);
    if (h->slowdown)
        mt_out_printf(o, "rank %d arrived later and later in the collectives before the hang (a slow-down)\n",
                      h->culprits[0]);
    if (h->stateless)
        mt_out_printf(o,
                      "%d dump%s record%s no start or completion (gloo's recorder): ranks placed by sequence "
                      "numbers alone; no wait times\n",
                      h->stateless, h->stateless == 1 ? "" : "s", h->stateless == 1 ? "s" : "");
    if (h->guessed_pgs)
        mt_out_printf(o, "%d group%s with no ranks in pg_config: members are the ranks whose dumps name %s\n",
                      h->guessed_pgs, h->guessed_pgs == 1 ? "" : "s", h->guessed_pgs == 1 ? "it" : "them");
    mt_out_printf(o, "clocks: offsets fitted on %d completed collectives", h->fit_pairs);
    int unfit[16], nunfit = 0;
    for (int r = 0; r < h->world; r++)
        if (h->offset_ns[r] == MT_FR_NONE && nunfit < 16)
            unfit[nunfit++] = r;
    if (nunfit) {
        mt_out_puts(o, "; no fit for ");
        ranks(o, unfit, nunfit);
    }
    mt_out_puts(o, "\n");
}

mt_status_t mt_fr_hang_write_text(const mt_fr_hang_t *h, mt_write_fn write, void *ctx)
{
    mt_out_t o = {.w = write, .ctx = ctx};
    mt_fr_hang_text(h, &o);
    return o.st;
}

mt_status_t mt_fr_placed_write_text(const mt_fr_placed_t *p, mt_write_fn write, void *ctx)
{
    mt_out_t o = {.w = write, .ctx = ctx};
    if (!p->written)
        return MT_OK;
    mt_out_printf(&o, "merged trace: Flight Recorder entries of %" PRId64 " dump%s beside the traces", p->aligned,
                  p->aligned == 1 ? "" : "s");
    if (p->aligned)
        mt_out_printf(&o,
                      " (aligned by %" PRId64 "+ collectives each; completions discovered %.3f ms after the kernels' "
                      "end at the median, at most)",
                      p->pairs_min, (double)p->lag_max_ns / 1e6);
    const char *its = p->wall == 1 ? "its" : "their";
    if (p->wall)
        mt_out_printf(&o,
                      "; %" PRId64 " dump%s with no collective in common with %s trace placed on %s wall clock, "
                      "unaligned (shift 0; at most %.3f s from the trace)",
                      p->wall, p->wall == 1 ? "" : "s", its, its, (double)p->gap_max_ns / 1e9);
    if (p->left_out)
        mt_out_printf(&o, "; %" PRId64 " left out (no collective in common, and a day or more from %s trace: not %s clock)",
                      p->left_out, p->left_out == 1 ? "its" : "their", p->left_out == 1 ? "its" : "their");
    if (p->no_trace)
        mt_out_printf(&o, "; %" PRId64 " %s not in the merged trace, left out", p->no_trace,
                      p->no_trace == 1 ? "dump of a rank" : "dumps of ranks");
    mt_out_puts(&o, "\n");
    return o.st;
}
