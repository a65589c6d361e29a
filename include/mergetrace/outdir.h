/* The output directory of a run on the file system: created with its
 * parents, checked against the inputs, outputs written under a temporary
 * name and renamed into place behind a mark, and what an earlier run left
 * there cleaned up (its dead temporaries, the older outputs beside a
 * stopped rename, outputs this run does not write). Serial, never prints:
 * what the program should say comes back as a message or through a note
 * callback. */
#ifndef MERGETRACE_OUTDIR_H
#define MERGETRACE_OUTDIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "mergetrace/buf.h"
#include "mergetrace/discover.h"
#include "mergetrace/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A one-line message for the program to say (without "mergetrace: " and
 * without the newline); line is valid during the call only. */
typedef void (*mt_outdir_note_fn)(void *ctx, const char *line);

/* mkdir -p: dir and its parents ("a//b" is "a/b"). 0, or 1 with a
 * one-line message in msg (cap bytes): the path is too long, a part cannot
 * be created, or exists and is not a directory. */
int mt_outdir_make(const char *dir, char *msg, size_t cap);

/* Whether path (existing) is one of l's inputs, or the file one of its
 * parts ("<file>#rank<R>", "<file>#pid<N>") is, by realpath(). A path that
 * does not exist is no input. */
bool mt_outdir_is_input(const char *path, const mt_discover_list_t *l);

/* The name of a temporary beside path: "<path>.tmp.<pid>.<hex>", hex the
 * real-time clock in ns plus salt (another try's other name), in tmp (cap
 * bytes). 0, or -1 with errno ENAMETOOLONG when it does not fit. */
int mt_outdir_tmp_name(const char *path, unsigned salt, char *tmp, size_t cap);

/* A new file beside path to write an output into, then rename:
 * "<path>.tmp.<pid>.<hex>", opened O_CREAT | O_EXCL | O_NOFOLLOW (never a
 * file or link that is already there: a link planted at the name in a
 * shared directory would make the output overwrite its target). Its name
 * in tmp (cap bytes). The stream (the caller fcloses), or NULL with errno
 * set. */
FILE *mt_outdir_tmp_create(const char *path, char *tmp, size_t cap);

/* The mark of a run putting its outputs in place:
 * "<dir>/mergetrace.renaming.<pid>", created (O_EXCL, O_NOFOLLOW) at the
 * first call, which is made before the first output of the run takes its
 * final name; each call appends "name<TAB>.tmp.<pid>.<hex>" (name relative
 * to dir, the suffix of tmp, the temporary about to become dir/name)
 * before the rename. A run stopped between two renames leaves it, and the
 * next run knows which outputs are the stopped run's (their temporary is
 * gone) and which are older (mt_outdir_repair). One mark per process (the
 * first call's dir), kept in static state: call from one thread. 0, or -1
 * with errno set. */
#define MT_OUTDIR_RENAMING "mergetrace.renaming."
int mt_outdir_renaming(const char *dir, const char *name, const char *tmp);

/* tmp renamed to path behind the mark: mt_outdir_renaming with path's
 * directory ("." for a bare name) and its last part, then rename(). 0, or
 * -1 with errno set (tmp left). */
int mt_outdir_rename(const char *tmp, const char *path);

/* Every output of the run is in place: remove the mark (nothing when none
 * was made). */
void mt_outdir_renamed_all(void);

/* An output's bytes through write (arg: what to render, borrowed). */
typedef mt_status_t (*mt_outdir_render_fn)(const void *arg, mt_write_fn write, void *ctx);

/* An mt_outdir_render_fn of bytes already rendered (arg: an mt_buf_t). */
mt_status_t mt_outdir_bytes(const void *arg, mt_write_fn write, void *ctx);

/* mt_outdir_write's flags: a temporary that cannot be created is named by
 * the output's path (not the temporary's name); a render that ran out of
 * memory says "out of memory" (not errno's text). */
#define MT_OUTDIR_NAME_PATH 1u
#define MT_OUTDIR_SAY_NOMEM 2u

/* dir/name (name relative to dir, e.g. "baseline/report.json") rendered
 * through render(arg) into a temporary beside it (mt_outdir_tmp_create),
 * closed and renamed into place behind the mark (mt_outdir_renaming). 0,
 * or 1 with a one-line message in msg (cap bytes): "<temporary>: cannot
 * create (<why>)", or "<path>: write failed (<why>)" when rendering,
 * writing, closing or renaming failed (the temporary removed). */
int mt_outdir_write(const char *dir, const char *name, mt_outdir_render_fn render, const void *arg, unsigned flags,
                    char *msg, size_t cap);

/* Remove the temporaries that a killed run left in dir
 * ("<output>.tmp.<pid>[.<hex>]" of the outputs' names,
 * mt_outdir_tmp_create) when their process is gone from this host (never
 * this process's). Returns how many were removed. */
size_t mt_outdir_remove_dead_temps(const char *dir);

/* A run stopped (killed, or failed) while renaming its outputs into dir
 * left its mark (mt_outdir_renaming), whose process is gone from this
 * host: the outputs it renamed (their temporary is gone) stay, and every
 * other output there, older, is removed, so that dir holds one run's
 * files; then the mark goes. Never removes an input (files), a file that
 * is not a regular one, baseline_file (when not NULL: this run's
 * baseline) or, when keep_baseline_report, baseline/report.json (this
 * run writes it). note (may be NULL) gets a line for each output that
 * cannot be removed and, unless quiet, one per mark repaired naming what
 * went. Call before mt_outdir_remove_dead_temps, which would take the
 * temporaries the mark is read by. */
void mt_outdir_repair(const char *dir, const mt_discover_list_t *files, bool keep_baseline_report,
                      const char *baseline_file, bool quiet, mt_outdir_note_fn note, void *ctx);

/* One output a run may write into its directory (name relative to it),
 * and whether this run keeps it (writes it, or keeps an earlier one). */
typedef struct mt_outdir_name {
    const char *name;
    bool keep;
} mt_outdir_name_t;

/* Which outputs a run writes (its options). */
typedef struct mt_outdir_outputs {
    bool merge;           /* the merged trace (not --no-merge) */
    bool merged_gzip;     /* ... as merged.json.gz, else merged.json */
    bool html;            /* report.html (not --no-html) */
    bool timings;         /* timings.json (--timings) */
    bool compare;         /* compare.json (--baseline) */
    bool baseline_report; /* baseline/report.json (--baseline of traces) */
} mt_outdir_outputs_t;

/* How many names the tables below have at most. */
#define MT_OUTDIR_N_NAMES 7

/* The merged trace's name in the directory: "merged.json.gz" or
 * "merged.json" (static). */
const char *mt_outdir_merged_name(bool gzip);

/* Before anything is written: the names the run writes, keep set on those
 * of w, in the order mt_outdir_check_inputs checks them (the merged trace,
 * report.json, report.html, timings.json, compare.json,
 * baseline/report.json) into names (MT_OUTDIR_N_NAMES slots; the names
 * static). Returns how many. */
size_t mt_outdir_written(const mt_outdir_outputs_t *w, mt_outdir_name_t *names);

/* After the reports: every name a run may own, keep set on those this run
 * wrote, in the order mt_outdir_remove_stale names the removed ones
 * (report.json, report.html, merged.json.gz, merged.json, timings.json,
 * baseline/report.json, compare.json); a failed merge (merge_failed)
 * keeps both merged traces, as an interrupted run does. Into names
 * (MT_OUTDIR_N_NAMES slots; static names). Returns how many. */
size_t mt_outdir_owned(const mt_outdir_outputs_t *w, bool merge_failed, mt_outdir_name_t *names);

/* Remove the outputs of names[0..n) that this run does not keep and an
 * earlier run left in dir, so that dir never holds two jobs' files: only
 * regular files, never an input (files) nor baseline_file (when not NULL);
 * a name with a '/' takes its directory along when that is left empty.
 * The removed names into removed (cap bytes): "a", "a and b", "a, b and
 * c" ("" when none). note (may be NULL) gets a line for each that cannot
 * be removed. */
void mt_outdir_remove_stale(const char *dir, const mt_outdir_name_t *names, size_t n,
                            const mt_discover_list_t *files, const char *baseline_file, char *removed, size_t cap,
                            mt_outdir_note_fn note, void *ctx);

/* Whether this run may write into dir: none of the outputs of
 * names[0..n) that it keeps ("<dir>/<name>", in order) is an input, nor
 * is dir itself (mt_outdir_is_input). 0; or 1 with the first that is in
 * msg ("<path> is one of the inputs: choose another -o", or "<dir> is one
 * of the inputs"). */
int mt_outdir_check_inputs(const char *dir, const mt_outdir_name_t *names, size_t n, const mt_discover_list_t *files,
                           char *msg, size_t cap);

/* Process 0, before the run writes anything into dir: dir made
 * (mt_outdir_make), the outputs of w (mt_outdir_written) and dir itself
 * checked against the inputs (mt_outdir_check_inputs), then what an
 * earlier run left repaired (mt_outdir_repair; baseline_file: this run's
 * baseline, kept, NULL none) and its dead temporaries removed
 * (mt_outdir_remove_dead_temps, said through note unless quiet, "removed
 * N temporary file(s) of an earlier run that was stopped, from DIR"). 0,
 * or 1 with the line to say in msg (nothing touched but dir made). */
int mt_outdir_prepare(const char *dir, const mt_outdir_outputs_t *w, const mt_discover_list_t *files,
                      const char *baseline_file, bool quiet, mt_outdir_note_fn note, void *ctx, char *msg, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
