/* Which NCCL format a file is, from its first bytes: the mergetrace
 * plugin's JSON lines, an NCCL Inspector log, or the example profiler's
 * Chrome trace. Apart from the three readers so that none of them includes
 * another. */
#include <stdbool.h>

#include "mergetrace/input.h"
#include "mergetrace/nccl_input.h"
#include "mergetrace/nccl_inspector.h"
#include "nccl/probe.h"

mt_status_t mt_nccl_probe(const char *path, mt_nccl_format_t *fmt, mt_error_t *err)
{
    *fmt = MT_NCCL_FMT_NONE;
    char buf[256];
    size_t len = 0;
    mt_status_t st = mt_input_read_head(path, buf, sizeof buf, &len, err);
    if (st == MT_OK)
        *fmt = mt_nccl_sniff(buf, len) ? MT_NCCL_FMT_PLUGIN
               : mt_insp_sniff(buf, len)         ? MT_NCCL_FMT_INSPECTOR
               : mt_nccl_example_sniff(buf, len) ? MT_NCCL_FMT_EXAMPLE
                                                 : MT_NCCL_FMT_NONE;
    return st;
}
