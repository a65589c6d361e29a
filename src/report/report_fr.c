/* The hang post-mortem of Flight Recorder dumps in report.json ("hang",
 * docs/report-schema.md) and report.html (the "Hang" section). */
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/text.h"
#include "mergetrace/fr_hang.h"
#include "mergetrace/fr_share.h"
#include "mergetrace/report.h"
#include "mergetrace/version.h"
#include "report/sections.h"

static const char *state_name(uint8_t s)
{
    return s == MT_FR_COMPLETED ? "completed" : s == MT_FR_STARTED ? "started" : "scheduled";
}

static void ranks_json(mt_out_t *j, const int *r, int n)
{
    mt_out_puts(j, "[");
    for (int i = 0; i < n; i++)
        mt_out_printf(j, "%s%d", i ? ", " : "", r[i]);
    mt_out_puts(j, "]");
}

/* An entry as {"process_group", "profiling_name", "collective_seq_id", "state"}. */
static void entry_json(mt_out_t *j, const mt_fr_op_t *e)
{
    mt_out_puts(j, "{\"process_group\": ");
    mt_out_str(j, e->pg, sizeof e->pg);
    mt_out_puts(j, ", \"profiling_name\": ");
    mt_out_str(j, e->name, sizeof e->name);
    mt_out_printf(j, ", \"collective_seq_id\": %" PRId64 ", \"state\": \"%s\"", e->seq, state_name(e->state));
    if (e->is_p2p)
        mt_out_printf(j, ", \"p2p_seq_id\": %" PRId64, e->p2p_seq);
    mt_out_puts(j, "}");
}

static void size_json(mt_out_t *j, const mt_fr_op_t *e)
{
    mt_out_puts(j, "{\"profiling_name\": ");
    mt_out_str(j, e->name, sizeof e->name);
    mt_out_printf(j, ", \"input_numel\": %" PRIu64 ", \"output_numel\": %" PRIu64 ", \"dtype\": ", e->in_numel,
                  e->out_numel);
    mt_out_str(j, e->dtype, sizeof e->dtype);
    mt_out_puts(j, "}");
}

/* `"merged_trace": {...}` of hang: p's counts (mt_fr_placed_t), times in us. */
static void placed_json(mt_out_t *j, const mt_fr_placed_t *p)
{
    mt_out_printf(j, "\"merged_trace\": {\"aligned\": %" PRId64 ", \"wall_clock\": %" PRId64 ", \"left_out\": %" PRId64
                  ", \"no_trace\": %" PRId64 ", \"pairs_min\": %" PRId64 ", \"lag_max_us\": ",
                  p->aligned, p->wall, p->left_out, p->no_trace, p->pairs_min);
    mt_out_us(j, p->lag_max_ns);
    mt_out_puts(j, ", \"gap_max_us\": ");
    mt_out_us(j, p->gap_max_ns);
    mt_out_puts(j, "}");
}

mt_status_t mt_report_hang_json(const mt_fr_hang_t *h, const mt_fr_placed_t *placed, mt_write_fn w, void *ctx)
{
    mt_out_t j = {.w = w, .ctx = ctx};
    bool hung = h->kind != MT_FR_NO_HANG;
    mt_out_printf(&j, "\"hang\": {\"hung\": %s, \"verdict\": \"%s\", \"group\": ", hung ? "true" : "false",
                  mt_fr_kind_name(h->kind));
    if (hung) {
        mt_out_str(&j, h->pg, sizeof h->pg);
        mt_out_puts(&j, ", \"group_desc\": ");
        mt_out_str(&j, h->pg_desc, sizeof h->pg_desc);
        mt_out_printf(&j, ", \"collective_seq_id\": %" PRId64 ", \"profiling_name\": ", h->seq);
        mt_out_str(&j, h->name, sizeof h->name);
    } else
        mt_out_puts(&j, "null, \"group_desc\": null, \"collective_seq_id\": null, \"profiling_name\": null");
    mt_out_puts(&j, ",\n  \"culprit_ranks\": ");
    ranks_json(&j, h->culprits, h->nculprits);
    mt_out_puts(&j, ", \"no_dump_ranks\": ");
    ranks_json(&j, h->no_dump, h->nno_dump);
    mt_out_puts(&j, ", \"entered_ranks\": ");
    ranks_json(&j, h->entered, h->nentered);
    mt_out_printf(&j, ", \"entered\": %d", h->entered_total);
    mt_out_puts(&j, ", \"culprit_last\": ");
    if (h->nculprits && h->culprit_last.name[0] &&
        (h->kind == MT_FR_NEVER_ENQUEUED || h->kind == MT_FR_DESYNC || h->kind == MT_FR_ORDER_MISMATCH)) {
        mt_out_printf(&j, "{\"rank\": %d, \"entry\": ", h->culprit_last_rank);
        entry_json(&j, &h->culprit_last);
        mt_out_puts(&j, "}");
    } else
        mt_out_puts(&j, "null");
    if (h->kind == MT_FR_SIZE_MISMATCH) {
        mt_out_puts(&j, ", \"size_mismatch\": {\"culprit\": ");
        size_json(&j, &h->hung_culprit);
        mt_out_puts(&j, ", \"others\": ");
        size_json(&j, &h->hung_first);
        mt_out_puts(&j, "}");
    }
    mt_out_puts(&j, ",\n  \"p2p\": ");
    if (h->p2p) {
        mt_out_printf(&j, "{\"rank\": %d, \"peer\": %d, \"entry\": ", h->p2p_rank, h->p2p_peer);
        entry_json(&j, &h->p2p_op);
        mt_out_puts(&j, ", \"peer_entry\": ");
        if (h->p2p_peer_op.name[0])
            entry_json(&j, &h->p2p_peer_op);
        else
            mt_out_puts(&j, "null");
        mt_out_puts(&j, "}");
    } else
        mt_out_puts(&j, "null");
    mt_out_puts(&j, ", \"chain\": [");
    for (int i = 0; i < h->nchain && i < 16; i++) {
        mt_out_printf(&j, "%s{\"rank\": %d, \"entry\": ", i ? ", " : "", h->chain[i]);
        if (h->chain_op[i].name[0])
            entry_json(&j, &h->chain_op[i]);
        else
            mt_out_puts(&j, "null");
        mt_out_puts(&j, "}");
    }
    mt_out_printf(&j, "], \"chain_length\": %d", h->nchain);
    mt_out_puts(&j, ",\n  \"last_arrival\": ");
    if (h->last_arrival >= 0)
        mt_out_printf(&j, "%d", h->last_arrival);
    else
        mt_out_puts(&j, "null");
    mt_out_printf(&j, ", \"slowdown_before\": %s, \"reference_rank\": ", h->slowdown ? "true" : "false");
    if (h->ref_rank >= 0)
        mt_out_printf(&j, "%d", h->ref_rank);
    else
        mt_out_puts(&j, "null");
    mt_out_printf(&j, ", \"fit_pairs\": %d, \"stateless_dumps\": %d, \"groups_from_dumps\": %d, \"dump_time_us\": ",
                  h->fit_pairs, h->stateless, h->guessed_pgs);
    if (h->dump_ns != MT_FR_NONE)
        mt_out_us(&j, h->dump_ns);
    else
        mt_out_puts(&j, "null");
    if (placed && placed->written) {
        mt_out_puts(&j, ",\n  ");
        placed_json(&j, placed);
    }
    mt_out_puts(&j, ",\n  \"ranks\": [");
    bool first = true;
    for (int r = 0; r < h->world; r++) {
        mt_out_printf(&j, "%s\n   {\"rank\": %d, \"dump\": %s, \"offset_us\": ", first ? "" : ",", r,
                      h->has_dump[r] ? "true" : "false");
        first = false;
        if (h->offset_ns[r] != MT_FR_NONE)
            mt_out_us(&j, h->offset_ns[r]);
        else
            mt_out_puts(&j, "null");
        mt_out_puts(&j, ", \"wait_us\": ");
        if (h->wait_ns[r] >= 0)
            mt_out_us(&j, h->wait_ns[r]);
        else
            mt_out_puts(&j, "null");
        mt_out_puts(&j, ", \"last_completed\": ");
        if (h->last_done[r].name[0])
            entry_json(&j, &h->last_done[r]);
        else
            mt_out_puts(&j, "null");
        mt_out_puts(&j, "}");
    }
    mt_out_puts(&j, "\n  ]}");
    return j.st;
}

mt_status_t mt_report_hang_html(const mt_fr_hang_t *h, const mt_fr_placed_t *placed, mt_write_fn w, void *ctx)
{
    mt_out_t o = {.w = w, .ctx = ctx};
    mt_out_puts(&o, "<section id=\"hang\"><h2>Hang (Flight Recorder dumps)</h2>\n<pre class=\"cmd\">");
    mt_buf_t text = {0};
    mt_status_t st = mt_fr_hang_write_text(h, mt_buf_write, &text);
    if (st == MT_OK && placed) /* nothing unless a merged trace was written */
        st = mt_fr_placed_write_text(placed, mt_buf_write, &text);
    if (st != MT_OK) {
        mt_buf_free(&text);
        return st;
    }
    mt_out_html(&o, text.data, text.len);
    mt_buf_free(&text);
    mt_out_puts(&o, "</pre>\n");
    if (h->kind != MT_FR_NO_HANG) {
        mt_out_puts(&o, "<table><thead><tr><th>rank</th><th>dump</th><th>clock offset</th><th>waiting in ");
        if (h->p2p) /* each rank's wait is in its own first entry not completed */
            mt_out_puts(&o, "its first entry not completed</th><th>last completed</th></tr></thead><tbody>\n");
        else {
            mt_out_html(&o, h->name, strlen(h->name));
            mt_out_printf(&o, " #%" PRId64 "</th><th>last completed</th></tr></thead><tbody>\n", h->seq);
        }
        for (int r = 0; r < h->world; r++) {
            bool culprit = false;
            for (int i = 0; i < h->nculprits; i++)
                culprit |= h->culprits[i] == r;
            char off[40] = "-", wait[40] = "-";
            if (h->offset_ns[r] != MT_FR_NONE)
                mt_fmt_time(off, sizeof off, h->offset_ns[r]);
            if (h->wait_ns[r] >= 0)
                mt_fmt_time(wait, sizeof wait, h->wait_ns[r]);
            mt_out_printf(&o, "<tr%s><td>%d%s</td><td>%s</td><td>%s</td><td>%s</td><td>", culprit ? " class=\"bad\"" : "",
                          r, culprit ? " (culprit)" : "", h->has_dump[r] ? "yes" : "<strong>none</strong>", off, wait);
            const mt_fr_op_t *e = &h->last_done[r];
            if (e->name[0]) {
                mt_out_html(&o, e->name, strlen(e->name));
                mt_out_printf(&o, e->is_p2p ? " (p2p #%" PRId64 ") in group " : " #%" PRId64 " in group ",
                              e->is_p2p ? e->p2p_seq : e->seq);
                mt_out_html(&o, e->pg, strlen(e->pg));
            } else
                mt_out_puts(&o, "-");
            mt_out_puts(&o, "</td></tr>\n");
        }
        mt_out_puts(&o, "</tbody></table>\n");
    }
    mt_out_puts(&o, "</section>\n");
    return o.st;
}

mt_status_t mt_report_fr_alone(const mt_fr_job_t *fr, const char *merged, mt_report_t *rep)
{
    memset(rep, 0, sizeof *rep);
    mt_report_input_t *ri = calloc(fr->n ? fr->n : 1, sizeof *ri);
    int64_t *missing = calloc((size_t)(fr->hang.world ? fr->hang.world : 1), sizeof *missing);
    if (!ri || !missing) {
        free(ri);
        free(missing);
        return MT_ERR_NOMEM;
    }
    uint64_t entries = 0;
    for (size_t i = 0; i < fr->n; i++) {
        ri[i] = (mt_report_input_t){.rank = fr->dumps[i].rank,
                                    .rank_source = "file name",
                                    .path = fr->paths[i],
                                    .bytes = fr->bytes[i],
                                    .events = fr->counts[i]};
        entries += fr->counts[i];
    }
    size_t n_missing = 0;
    for (int r = 0; r < fr->hang.world; r++)
        if (!fr->hang.has_dump[r])
            missing[n_missing++] = r;
    *rep = (mt_report_t){.version = MERGETRACE_VERSION,
                         .world_size = fr->hang.world,
                         .inputs = ri,
                         .n_inputs = fr->n,
                         .missing = missing,
                         .n_missing = n_missing,
                         .reference_rank = fr->hang.ref_rank,
                         .merged = merged,
                         .merged_events = entries,
                         .hang = &fr->hang};
    return MT_OK;
}

void mt_report_fr_free(mt_report_t *rep)
{
    free((void *)(uintptr_t)rep->inputs); /* allocated by mt_report_fr_alone */
    free((void *)(uintptr_t)rep->missing);
    rep->inputs = NULL;
    rep->missing = NULL;
}
