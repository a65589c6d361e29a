/* Input files: expanding the command line into a list of trace files, and
 * sharing them among processes by size. */
#ifndef MT_MPI_INPUTS_H
#define MT_MPI_INPUTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct input_file {
    char *path;
    uint64_t bytes;
    int owner;        /* process that loads it */
    bool from_dir;    /* found in a directory (not named on the command line) */
} input_file_t;

/* A path left out before loading, to be listed: one of mergetrace's own
 * outputs, or a link to a directory that -r had read already. */
typedef struct input_skip {
    char *path;
    char *why;        /* why ("a merged trace written by mergetrace"), copied */
    char *first;      /* a link not followed: the path by which the directory was read; else NULL */
} input_skip_t;

typedef struct input_list {
    input_file_t *files;
    size_t n, cap;
    input_skip_t *skipped; /* process 0 only (not broadcast) */
    size_t n_skipped, cap_skipped;
    input_file_t *fr;      /* PyTorch Flight Recorder dumps, put apart (fr_run.c reads them); process 0 only */
    size_t n_fr, cap_fr;
} input_list_t;

/* Expand paths: files as given, directories to their *.json, *.jsonl,
 * *.log and *.sqlite entries (and those with .gz) and the files whose
 * first bytes are a Flight Recorder dump's (mt_fr_probe: PyTorch names
 * them <prefix><rank>, no extension) (sub-directories too
 * when recursive: each directory once, by device and inode, so a link
 * into a directory already read is not followed, and listed in
 * out->skipped), sorted by path; a file named twice, under one name or
 * two (./t/a.json and t/a.json, a symbolic link: by realpath()), is listed
 * once, under its first name in path order. Files that are mergetrace's own outputs
 * (report.json, the merged trace, timings.json: by their first bytes) go
 * to out->skipped instead, and Flight Recorder dumps (by their first
 * bytes, named or found) to out->fr. On error writes a one-line message to msg and
 * returns 1 (I/O) or 2 (bad input). */
int inputs_collect(char **paths, size_t n_paths, bool recursive, input_list_t *out,
                   char *msg, size_t msg_cap);

/* Appends a skipped path to l->skipped (path, why and first, which may
 * be NULL, copied). 0, or -1 out of memory (l unchanged). */
int inputs_skip_add(input_list_t *l, const char *path, const char *why, const char *first);

/* Largest file first onto the least-loaded process (ties: lowest process). */
void inputs_assign(input_list_t *l, int n_procs);

/* The base name of path (what follows its last '/'), within path. */
const char *inputs_base(const char *path);

/* Whether every path is a regular file that is mergetrace's own merged
 * trace (by its first bytes): the run reads it back by rank. */
bool inputs_all_merged(char *const *paths, size_t n_paths);

void inputs_free(input_list_t *l);

#endif
