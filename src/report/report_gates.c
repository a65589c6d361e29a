/* report.json's "gates" section (the gates themselves: src/cross/gates.c). */
#include "base/text.h"
#include "mergetrace/gates.h"
#include "mergetrace/report.h"
#include "report/sections.h"

mt_status_t mt_report_gates_json(const mt_gate_t *g, size_t n, mt_write_fn w, void *ctx)
{
    mt_out_t o = {w, ctx, MT_OK};
    mt_out_puts(&o, "\"gates\": [");
    for (size_t i = 0; i < n; i++) {
        mt_out_puts(&o, i ? ",\n  {\"expr\": " : "\n  {\"expr\": ");
        mt_out_str(&o, g[i].expr, sizeof g[i].expr);
        mt_out_printf(&o, ", \"metric\": \"%s\", \"op\": \"%s\", \"threshold\": %.17g, \"value\": ",
                      mt_gate_metric_str(g[i].metric), mt_gate_op_str(g[i].op), g[i].threshold);
        if (g[i].measured)
            mt_out_printf(&o, "%.6g", g[i].value);
        else
            mt_out_puts(&o, "null");
        mt_out_printf(&o, ", \"pass\": %s", g[i].pass ? "true" : "false");
        if (g[i].relative) {
            mt_out_puts(&o, ", \"baseline\": ");
            if (g[i].has_baseline)
                mt_out_printf(&o, "%.6g", g[i].baseline);
            else
                mt_out_puts(&o, "null");
            mt_out_printf(&o, ", \"within_noise\": %s, \"too_few\": %s", g[i].noise_pass ? "true" : "false",
                          g[i].too_few ? "true" : "false");
        }
        if (!g[i].measured) {
            mt_out_puts(&o, ", \"why\": ");
            mt_out_str(&o, g[i].why ? g[i].why : "", 200);
        }
        mt_out_puts(&o, "}");
    }
    mt_out_puts(&o, n ? "\n ]" : "]");
    return o.st;
}
