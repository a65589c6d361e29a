/* mergetrace_partcheck: the program itself (mpi/main.c and the rest of
 * MT_PROGRAM_SOURCES) with every critical-path sweep also replayed in
 * supersteps on virtual processes and compared (cp_part_check.c): the
 * check installed before main, its line printed at exit, and the exit
 * status 1 when a value differed, or no sweep was checked or no process's
 * graph built from its ranks' analyses. Not installed; a test tool. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cp_part_check.h"

static void at_exit(void)
{
    cp_part_check_print(stderr, "program");
    if (cp_part_stats.failures || !cp_part_stats.sweeps || !cp_part_stats.graphs_built)
        _exit(1);
}

__attribute__((constructor)) static void install(void)
{
    cp_part_check_install();
    atexit(at_exit);
}
