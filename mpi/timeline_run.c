/* An operation-level timeline through the program (timeline_run.h):
 * recognised by its first bytes (a JSON array whose first event has
 * args.step) or named by --timeline-map; analysed on process 0
 * (src/discover/tl_run.c), its failure said here. */
#include "timeline_run.h"
#include "say.h"

#include <stdio.h>
#include <stdlib.h>

#include "mergetrace/mergetrace.h"
#include "procs.h"

/* Process 0's work; the exit code. */
static int run0(const options_t *o)
{
    mt_tl_run_opts_t to = {.path = o->inputs[0],
                           .map_path = o->timeline_map,
                           .out_dir = o->out_dir,
                           .json = o->json,
                           .html = !o->no_html,
                           .quiet = o->quiet};
    char small[1400], *msg;
    size_t cap;
    if (!(msg = say_buf(&cap, to.path, to.map_path, to.out_dir))) {
        msg = small;
        cap = sizeof small;
    }
    msg[0] = '\0';
    mt_status_t st = mt_tl_run(&to, mt_file_write, stdout, msg, cap);
    if (st != MT_OK && msg[0])
        say("mergetrace: %s\n", msg);
    if (msg != small)
        free(msg);
    if (st == MT_OK && fflush(stdout) != 0)
        st = MT_ERR_IO;
    return options_exit_code(st);
}

int timeline_run(MPI_Comm comm, const options_t *o)
{
    int me;
    procs_comm_rank(comm, &me);
    int mode = 0; /* 0: not a timeline; 1: one; 2: --timeline-map with other than one file */
    if (me == 0) {
        if (o->timeline_map)
            mode = o->n_inputs == 1 ? 1 : 2;
        else if (o->n_inputs == 1 && mt_timeline_probe_file(o->inputs[0]))
            mode = 1;
    }
    procs_bcast(&mode, 1, MPI_INT, 0, comm);
    if (!mode)
        return -1;
    int code = MT_EXIT_USAGE;
    if (me == 0) {
        if (mode == 2)
            say("mergetrace: --timeline-map: expected exactly one timeline file\n");
        else
            code = run0(o);
    }
    procs_bcast(&code, 1, MPI_INT, 0, comm);
    return code;
}
