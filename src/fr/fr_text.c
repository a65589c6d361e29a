/* The hang verdict as a few terminal lines. */
#include <inttypes.h>

#include "fr/fr.h"

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

static void entry(mt_out_t *o, const mt_fr_op_t *e)
{
    mt_out_printf(o, "%s #%" PRId64 " in group %s, %s", e->name, e->seq, e->pg, state_name(e->state));
}

void mt_fr_hang_text(const mt_fr_hang_t *h, mt_out_t *o)
{
    if (h->kind == MT_FR_NO_HANG) {
        mt_out_puts(o, "flight recorder: no hang: every group's ranks completed the same collectives\n");
        return;
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
    mt_out_printf(o, "hang in group %s (%s) at %s #%" PRId64, h->pg, h->pg_desc, h->name, h->seq);
    if (nstuck) {
        mt_out_puts(o, ": ");
        ranks(o, stuck, nstuck);
        mt_out_printf(o, " started it %.1f s ago", (double)hi / 1e9);
        if (hi - lo >= 100000000)
            mt_out_printf(o, " (the last %.1f s ago)", (double)lo / 1e9);
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
    if (h->slowdown)
        mt_out_printf(o, "rank %d arrived later and later in the collectives before the hang (a slow-down)\n",
                      h->culprits[0]);
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
