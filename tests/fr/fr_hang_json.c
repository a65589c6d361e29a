/* Test tool: Flight Recorder dumps named on the command line (the rank is
 * the number the file name ends with) -> the hang verdict as one JSON
 * object on stdout (check_fr_truth.py compares it with gen_fr.py's truth),
 * and with FR_TEXT set in the environment the terminal verdict after it,
 * or the one-line error on stderr and exit 2. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fr/fr.h"
#include "mergetrace/buf.h"

static mt_status_t write_stdout(void *ctx, const void *data, size_t len)
{
    (void)ctx;
    return fwrite(data, 1, len, stdout) == len ? MT_OK : MT_ERR_IO;
}

static int rank_of(const char *path)
{
    size_t n = strlen(path), k = n;
    while (k > 0 && path[k - 1] >= '0' && path[k - 1] <= '9')
        k--;
    return k < n && n - k < 5 ? atoi(path + k) : -1;
}

int main(int argc, char **argv)
{
    mt_fr_dump_t *d = calloc((size_t)argc, sizeof *d);
    size_t n = 0;
    mt_error_t err;
    char msg[1200];
    for (int i = 1; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        int r = rank_of(argv[i]);
        if (!f || r < 0 || r >= MT_FR_MAX_RANKS) {
            fprintf(stderr, "%s: cannot open, or no rank at the end of its name\n", argv[i]);
            return 1;
        }
        mt_buf_t in = {0};
        char b[65536];
        size_t k;
        while ((k = fread(b, 1, sizeof b, f)) > 0)
            if (mt_buf_append(&in, b, k) != MT_OK)
                return 1;
        fclose(f);
        mt_error_clear(&err);
        if (mt_fr_dump_read((const uint8_t *)in.data, in.len, argv[i], r, &d[n], &err) != MT_OK) {
            fprintf(stderr, "%s\n", mt_error_format(&err, msg, sizeof msg));
            return 2;
        }
        n++;
        mt_buf_free(&in);
    }
    mt_fr_hang_t h;
    mt_error_clear(&err);
    if (mt_fr_hang_analyse(d, n, &h, &err) != MT_OK) {
        fprintf(stderr, "%s\n", mt_error_format(&err, msg, sizeof msg));
        return 2;
    }
    printf("{\"verdict\":\"%s\",\"group\":\"%s\",\"group_desc\":\"%s\",\"collective_seq_id\":%lld,"
           "\"profiling_name\":\"%s\",\"last_arrival\":%d,\"slowdown_before\":%s,\"fit_pairs\":%d,\"culprit_ranks\":[",
           mt_fr_kind_name(h.kind), h.pg, h.pg_desc, (long long)h.seq, h.name, h.last_arrival,
           h.slowdown ? "true" : "false", h.fit_pairs);
    for (int i = 0; i < h.nculprits; i++)
        printf("%s%d", i ? "," : "", h.culprits[i]);
    printf("],\"no_dump_ranks\":[");
    for (int i = 0; i < h.nno_dump; i++)
        printf("%s%d", i ? "," : "", h.no_dump[i]);
    printf("],\"offsets_ns\":{");
    for (int r = 0, k = 0; r < h.world; r++)
        if (h.offset_ns[r] != MT_FR_NONE)
            printf("%s\"%d\":%lld", k++ ? "," : "", r, (long long)h.offset_ns[r]);
    printf("},\"waits_ns\":{");
    for (int r = 0, k = 0; r < h.world; r++)
        if (h.wait_ns[r] >= 0)
            printf("%s\"%d\":%lld", k++ ? "," : "", r, (long long)h.wait_ns[r]);
    printf("},\"chain\":[");
    for (int i = 0; i < h.nchain && i < 16; i++)
        printf("%s%d", i ? "," : "", h.chain[i]);
    if (h.p2p)
        printf("],\"p2p\":{\"waiter\":%d,\"peer\":%d,\"p2p_seq_id\":%lld}}\n", h.p2p_rank, h.p2p_peer,
               (long long)h.p2p_op.p2p_seq);
    else
        printf("],\"p2p\":null}\n");
    if (getenv("FR_TEXT")) {
        mt_out_t o = {.w = write_stdout};
        mt_fr_hang_text(&h, &o);
    }
    mt_fr_hang_free(&h);
    for (size_t i = 0; i < n; i++)
        mt_fr_dump_free(&d[i]);
    free(d);
    return 0;
}
