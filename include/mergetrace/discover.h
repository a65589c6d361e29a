/* Input discovery: the PATH arguments of a run turned into the list of
 * inputs it reads (files as given, directories walked, each file once,
 * mergetrace's own outputs left out and listed, a merged trace named on
 * the command line and an Nsight Systems export of several GPU processes
 * split into one input per part, PyTorch Flight Recorder dumps put apart),
 * the sharing of that list among processes by size, and a file's identity
 * on a node for --local. Serial: the program broadcasts the list. What
 * each input holds is decided when it is loaded, by its first bytes. */
#ifndef MERGETRACE_DISCOVER_H
#define MERGETRACE_DISCOVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "mergetrace/buf.h"
#include "mergetrace/fr_share.h"
#include "mergetrace/nccl_join.h"
#include "mergetrace/rank.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What an input is, by its path: a file, or a part of one (a part's path
 * is "<file>#rank<R>" for a rank of a merged trace, "<file>#pid<N>" for a
 * process of an Nsight Systems export; part is R or N). */
typedef enum mt_discover_kind {
    MT_DISCOVER_FILE = 0,
    MT_DISCOVER_MERGED_PART, /* one rank of mergetrace's merged trace, read back */
    MT_DISCOVER_NSYS_PART,   /* one GPU process of an Nsight Systems export */
} mt_discover_kind_t;

typedef struct mt_discover_file {
    char *path;       /* owned by the list */
    uint64_t bytes;   /* on disk (a part: the file's share) */
    int owner;        /* process that loads it (mt_discover_assign) */
    bool from_dir;    /* found in a directory (not named on the command line) */
    mt_discover_kind_t kind;
    int64_t part;     /* a part's rank (a merged trace) or process id (Nsight Systems); -1 for a file */
} mt_discover_file_t;

/* A path left out before loading, to be listed: one of mergetrace's own
 * outputs, or a link to a directory that -r had read already. */
typedef struct mt_discover_skip {
    char *path;
    char *why;        /* why ("a merged trace written by mergetrace"), copied */
    char *first;      /* a link not followed: the path by which the directory was read; else NULL */
} mt_discover_skip_t;

/* The inputs of a run. Start zeroed; free with mt_discover_free. */
typedef struct mt_discover_list {
    mt_discover_file_t *files; /* sorted by path; parts in place of their file */
    size_t n, cap;
    mt_discover_skip_t *skipped;
    size_t n_skipped, cap_skipped;
    mt_discover_file_t *fr;    /* PyTorch Flight Recorder dumps, put apart (by their first bytes) */
    size_t n_fr, cap_fr;
} mt_discover_list_t;

/* Expand paths[0..n_paths): files as given, directories to their *.json,
 * *.jsonl, *.log and *.sqlite entries (and those with .gz) and the files
 * whose first bytes are a Flight Recorder dump's (mt_fr_probe: PyTorch
 * names them <prefix><rank>, no extension) (sub-directories too when
 * recursive: each directory once, by device and inode, so a link into a
 * directory already read is not followed, and listed in out->skipped),
 * sorted by path; a file named twice, under one name or two (./t/a.json
 * and t/a.json, a symbolic link: by realpath()), is listed once, under
 * its first name in path order. Files that are mergetrace's own outputs
 * (report.json, the merged trace, timings.json: by their first bytes) go
 * to out->skipped instead, and Flight Recorder dumps (by their first
 * bytes, named or found) to out->fr. A merged trace named on the command
 * line becomes one input per rank, an Nsight Systems export of several
 * GPU processes one per process (mt_discover_part). *out is zeroed first
 * and always freed with mt_discover_free. Returns 0; or 1 (the system:
 * I/O, out of memory) or 2 (the input: a missing trace, a pipe, an empty
 * directory, nothing but own outputs) with a one-line message in msg. */
int mt_discover_collect(char *const *paths, size_t n_paths, bool recursive, mt_discover_list_t *out, char *msg,
                        size_t msg_cap);

/* Appends a skipped path to l->skipped (path, why and first, which may
 * be NULL, copied). 0, or -1 out of memory (l unchanged). */
int mt_discover_skip_add(mt_discover_list_t *l, const char *path, const char *why, const char *first);

/* Sets every file's owner: largest file first onto the least-loaded of
 * n_procs processes (ties: lowest process; equal sizes keep path order).
 * Out of memory: round robin. */
void mt_discover_assign(mt_discover_list_t *l, int n_procs);

/* What path is (a part of a file, or a file) and, for a part, *part (the
 * rank or the process id; -1 for a file). */
mt_discover_kind_t mt_discover_part(const char *path, int64_t *part);

/* How many inputs from l->files[i] on are parts of one Nsight Systems
 * export (consecutive in the list: mt_discover_collect puts them there),
 * and how many of those process me owns (*mine); 1, and *mine 0 or 1,
 * for any other input. */
size_t mt_discover_part_run(const mt_discover_list_t *l, size_t i, int me, size_t *mine);

/* The JSON bytes of the largest input of l by its size on disk (a gzip
 * file: mt_input_size_hint's guess, when larger), for how many workers a
 * run by hand can afford; 0 for an empty list. */
uint64_t mt_discover_largest_json(const mt_discover_list_t *l);

/* Whether head, the first len bytes of a file, is one the program reads
 * as traces: an SQLite database (Nsight Systems), gzip (a .json.gz
 * trace), or JSON with "traceEvents" in its first 4 KiB (Kineto). */
bool mt_discover_is_trace_head(const char *head, size_t len);

/* What a --baseline PATH is (src/discover/baseline.c). */
typedef enum mt_discover_baseline {
    MT_DISCOVER_BASELINE_REPORT = 0, /* a mergetrace report.json (the file, or DIR/report.json) */
    MT_DISCOVER_BASELINE_TRACE_DIR,  /* a directory without report.json: of traces */
    MT_DISCOVER_BASELINE_TRACE_FILE, /* a file that is no report but one the program reads as traces */
} mt_discover_baseline_t;

/* Read the baseline at path: a report.json file, or a directory's
 * report.json, into *text (appended; the caller frees it with mt_buf_free)
 * after checking it is a mergetrace report (mt_compare_check; a regular
 * file of a sane size, MT_SIDE_FILE_MAX, before it is opened); its path
 * into file (cap bytes). A directory without report.json, or a file of
 * traces (mt_discover_is_trace_head), is told by *kind and nothing is
 * read. Returns 0; or 1 (the system: a read error, out of memory) or 2
 * (the input: missing, not JSON, not a report) with a one-line message in
 * msg ("--baseline PATH: ..."). */
int mt_discover_baseline_read(const char *path, char *file, size_t cap, mt_discover_baseline_t *kind, mt_buf_t *text,
                              char *msg, size_t msg_cap);

/* The baseline at path for a run into out_dir (mt_discover_baseline_read,
 * its path into file): a report, read into *text; or traces (*traces
 * set, *text freed), analysed in the run into out_dir/baseline/
 * report.json (then in file), which a run with conflict (the option in
 * the way, "--local" or "--timeline-map"; NULL: none) cannot do. 0; 1
 * or 2 as mt_discover_baseline_read's; 3, a usage error, for traces with
 * conflict; with the line to say in msg. */
int mt_discover_baseline_plan(const char *path, const char *out_dir, const char *conflict, char *file, size_t cap,
                              bool *traces, mt_buf_t *text, char *msg, size_t msg_cap);

/* The base name of path (what follows its last '/'), within path. */
const char *mt_discover_base(const char *path);

/* Whether every path is a regular file that is mergetrace's own merged
 * trace (by its first bytes): the run reads it back by rank. */
bool mt_discover_all_merged(char *const *paths, size_t n_paths);

/* A listed input's identity on its node, for --local: its stat (*st) and
 * its real path (malloc'd, the caller frees; NULL when stat or realpath
 * failed, or out of memory: the file then equals no other). A part of a
 * file is no file of its own: the file's stat, and its real path with the
 * part's suffix. */
char *mt_discover_identity(const char *path, struct stat *st);

/* The name of this node into host (cap bytes, NUL-terminated): the
 * environment's MERGETRACE_NODE when set and not empty, else the host
 * name; "" when neither is known. */
void mt_discover_node(char *host, size_t cap);

/* --local: a file as one process listed it, with its identity, to tell
 * one file listed by several processes of a node (mpirun -n 16 on two
 * nodes, every process given /local/traces) from two files under one path
 * on two nodes. The node's name (mt_discover_node), the real path
 * (mt_discover_identity), device, inode, size and modification time must
 * all be equal: a file system that reuses inode numbers, or a real path on
 * two hosts, cannot make two files one. */
typedef struct mt_discover_rec {
    mt_discover_file_t f;  /* f.owner: the process that listed it; f.path owned (malloc'd) */
    const char *key;       /* borrowed: node name, NUL, real path ("" when unknown: never one with another), NUL */
    uint64_t dev, ino;
    int64_t mtime_ns;
} mt_discover_rec_t;

/* The root's union of every process's records rec[0..n) (owners below
 * n_procs): each file listed by several processes of one node kept once,
 * with the one of them that has the fewest bytes to load so far (files
 * listed by one process first, then the shared ones largest first), so
 * the processes of a node share its files as those of a shared file
 * system do (mt_discover_assign); found in a directory only when every one
 * of them found it in one, under its first name in path order when all
 * names are absolute (else the loader's own: a relative name opens only
 * in its process's working directory). Sorts rec, frees the dropped
 * records' paths, and returns the count kept (rec compacted), or -1 out
 * of memory (rec sorted, nothing freed). */
long mt_discover_share_node(mt_discover_rec_t *rec, size_t n, int n_procs);

/* The list between processes (src/discover/wire.c), as bytes the
 * program broadcasts or gathers; none of these is collective.
 *
 * l's files (paths, sizes, kinds, parts, owners, from_dir; not the
 * skipped nor the Flight Recorder dumps) appended to out. 0, or -1 out of
 * memory. */
int mt_discover_pack(const mt_discover_list_t *l, mt_buf_t *out);

/* The files that mt_discover_pack wrote into bytes[0..len) as *out
 * (zeroed first; free with mt_discover_free whatever is returned). 0, or
 * -1 out of memory or bytes cut short. */
int mt_discover_unpack(const void *bytes, size_t len, mt_discover_list_t *out);

/* --local: what process me listed in l as bytes for process 0: its files
 * with their identity on this node (mt_discover_node,
 * mt_discover_identity) appended to files, what it left out (its own
 * outputs, links not followed) to skipped. 0, or -1 out of memory. */
int mt_discover_local_pack(const mt_discover_list_t *l, int me, mt_buf_t *files, mt_buf_t *skipped);

/* --local, process 0: the union of every process's mt_discover_local_pack
 * bytes (concatenated: files[0..len), skipped[0..slen)) in place of
 * *out's own files and skipped paths (freed first), its Flight Recorder
 * dumps kept (only process 0's PATHs are searched for them; free with
 * mt_discover_free whatever is returned), as one process listing them
 * all would: files sorted by path then process, one listed by
 * several processes of a node kept once (mt_discover_share_node); each
 * skipped path once, the links not followed first (in process order),
 * then the own outputs by path. 0, or -1 out of memory or bytes cut
 * short. */
int mt_discover_local_union(const void *files, size_t len, const void *skipped, size_t slen, int n_procs,
                            mt_discover_list_t *out);

/* Flight Recorder dumps (l->fr) planned for reading (src/discover/fr_plan.c). */

/* Process 0: each dump of l->fr ranked (map, may be NULL, else the file
 * name: mt_fr_rank_from_name) and checked, each given an owner among
 * n_procs processes (consecutive ranks in blocks of about equal bytes, so
 * that each process's dumps are one piece of the merged trace: its
 * owner), and the list appended to out as mt_fr_share_put records in l's
 * order. 0; 1 when a dump cannot be planned, nothing appended, a line
 * for the program to say told to note (after tag, "--baseline: " or "")
 * for each: the first dump with no rank, neither in map nor in its file
 * name ("TAG PATH: a Flight Recorder dump with no rank in its file name
 * (...): give --rank-map FILE"), or every earlier dump of a rank named
 * again ("TAG FIRST and PATH: two Flight Recorder dumps of rank R"); -1
 * out of memory (nothing told). */
int mt_discover_fr_plan(mt_discover_list_t *l, const mt_rankmap_t *map, int n_procs, const char *tag,
                        void (*note)(void *ctx, const char *line), void *ctx, mt_buf_t *out);

/* Process 0: fr's dumps (sorted by rank) given their file's path
 * (borrowed from l) and size, by the ranks of list (len bytes: what
 * mt_discover_fr_plan wrote for l). */
void mt_discover_fr_attach(const mt_discover_list_t *l, const void *list, size_t len, mt_fr_job_t *fr);

/* Process 0, the whole dumps gathered (all, len bytes: every process's
 * mt_fr_dump_pack_append) of l's l->n_fr dumps planned in list (llen
 * bytes): unpacked into fr, given their files (mt_discover_fr_attach)
 * and analysed (mt_fr_job_analyse). With force a dump of another job is
 * left out, its line ("warning: PATH: rank R: WHY: left out (--force)")
 * told to note unless quiet. MT_OK; MT_ERR_FORMAT, dumps of different
 * jobs without force, with the line in msg ("TAG PATH: rank R: WHY
 * (--force leaves such a dump out)"); MT_ERR_NOMEM, msg "out of memory"
 * (or "internal error: a packed dump" for bytes that are not what was
 * sent). */
mt_status_t mt_discover_fr_whole(const mt_discover_list_t *l, const void *list, size_t llen, const uint8_t *all,
                                 size_t len, bool force, bool quiet, const char *tag,
                                 void (*note)(void *ctx, const char *line), void *ctx, mt_fr_job_t *fr, char *msg,
                                 size_t cap);

/* Process 0, when no Flight Recorder dump was given: if an NCCL plugin
 * file of nj (paths and sizes from l) ends with tasks in flight (a
 * process that hung or was killed inside a collective), every plugin file
 * of the job is read again (mt_nccl_load), turned into dumps and analysed
 * into *fr (mt_fr_job_from_nccl; zeroed first, free with mt_fr_job_free).
 * MT_OK (fr->any false when no file had tasks in flight); else fr freed
 * and the status, with the line to say in msg, after tag ("--baseline: "
 * or ""): "PATH: rank R: read again for the hang analysis: WHY" for a
 * file that cannot be read again, "the hang analysis of the NCCL
 * plugin's files: WHY", or "out of memory" (no tag). */
mt_status_t mt_discover_fr_from_nccl(const mt_discover_list_t *l, const mt_nccl_job_t *nj, const char *tag,
                                     mt_fr_job_t *fr, char *msg, size_t cap);

void mt_discover_free(mt_discover_list_t *l);

#ifdef __cplusplus
}
#endif
#endif
