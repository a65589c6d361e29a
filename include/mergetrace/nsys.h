/* Nsight Systems SQLite exports (`nsys export --type sqlite`) as input: one
 * process of such a file becomes one mt_trace_t in the Kineto loader's
 * model (kernels, memcpy, memset, CUDA runtime calls, synchronisation, NVTX
 * ranges), so every pass, the merged trace and the reports work on it
 * unchanged. mt_trace_load() and mt_trace_load_buffer() hand SQLite files
 * here by their first bytes; these functions are for the program, which
 * must turn a file with several GPU processes into one input per process. */
#ifndef MERGETRACE_NSYS_H
#define MERGETRACE_NSYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mergetrace/loader.h"
#include "mergetrace/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Does a file start with these bytes ("SQLite format 3\0", 16 bytes)? */
bool mt_nsys_sniff(const void *head, size_t n);

/* Was the core built with SQLite (CMake MT_SQLITE)? Without it every
 * function below fails with MT_ERR_NSYS and a message saying so. */
bool mt_nsys_available(void);

/* One process of an export that has GPU activity. */
typedef struct mt_nsys_proc {
    int64_t global_pid;  /* nsys's serialised id of the process */
    int64_t pid;         /* the OS pid */
    int64_t device;      /* the lowest CUDA device it used */
    int64_t rank;        /* from an NVTX "MPI Rank N" text of the process, else -1 */
    uint64_t kernels;    /* its kernels */
} mt_nsys_proc_t;

/* The GPU processes of the export at path (a plain file name, not a
 * part path), ordered by device, then pid: the order that gives ranks
 * 0, 1, ... when nothing else names them. *procs is malloc'd (free()),
 * *n may be 0. Errors as for mt_trace_load. Not collective. */
mt_status_t mt_nsys_procs(const char *path, mt_nsys_proc_t **procs, size_t *n, mt_error_t *err);

/* The name of one process of a file, "<path>#pid<pid>", as the program
 * lists it among its inputs; mt_trace_load() reads that process only.
 * Writes at most cap bytes (NUL included) and returns the length it needed. */
size_t mt_nsys_part_path(char *dst, size_t cap, const char *path, int64_t pid);

/* Load one process of an export as a trace (opts and ownership as for
 * mt_trace_load; on_event gets each event as Kineto JSON text, so the
 * merged writer copies it like a Kineto event). path may be a part path;
 * a file with one GPU process needs none. info.rank is set from NVTX "MPI
 * Rank N", else (several GPU processes in the file) from the process's
 * place in mt_nsys_procs' order; info.base_ns is the session's UTC start.
 * Errors (MT_ERR_NSYS, one line each): not an nsys export, no GPU
 * tables, a truncated or corrupt database, a file with several GPU
 * processes named without a part, a part that is not in the file. */
mt_status_t mt_nsys_load(const char *path, const mt_load_opts_t *opts, mt_trace_t **out, mt_error_t *err);

/* The same from memory (copied for the call; name is used in messages). */
mt_status_t mt_nsys_load_buffer(const void *buf, size_t len, const char *name, const mt_load_opts_t *opts,
                                mt_trace_t **out, mt_error_t *err);

/* If path is a part path ("<file>#pid<N>" where path itself is no file),
 * the length of its <file>, else 0: parts of one file share that prefix. */
size_t mt_nsys_part_file(const char *path);

/* Load several parts of one export, paths[0..n) (each "<file>#pid<N>",
 * one <file>), reading each table once for all of them: as n calls of
 * mt_nsys_load with opts[k] for paths[k] (the same traces, and the same
 * events handed to each opts[k].on_event, in each part's order; the
 * parts' calls interleave), but every trace is in memory at once. On
 * success out[k] is part k's trace (the caller frees each). On failure
 * all out[k] are NULL, *failed is the part the error belongs to (0 for an
 * error of the file itself, including a bad row of a table read for all
 * parts at once) and err names that part; a path that is not
 * a part of the same file as paths[0] is MT_ERR_USAGE. should_stop is
 * taken from opts[0]. Not collective. */
mt_status_t mt_nsys_load_parts(const char *const *paths, size_t n, const mt_load_opts_t *opts, mt_trace_t **out,
                               size_t *failed, mt_error_t *err);

#ifdef __cplusplus
}
#endif
#endif /* MERGETRACE_NSYS_H */
