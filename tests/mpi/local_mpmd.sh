#!/usr/bin/env bash
# --local on one machine: traces split over directories that only one
# process each is told about (MPMD: mpirun -n 1 mergetrace --local A :
# -n 1 mergetrace --local B), as on node-local disks. Checks, against one
# run by hand that reads both directories: the same report.json byte for
# byte, and the same merged trace lines (each process writes its own
# ranks' events together: lines sorted, the comma after all but the last
# event dropped), in both merged formats; once with the output directory
# seen by every process (MPI-IO) and once with MERGETRACE_SEND_PARTS=1
# (as when it is on process 0's disk alone: the others send their parts to
# process 0). Also: three processes over three directories, a process
# given --local when another is not (exit 64, no hang), a bad option on
# process 1 alone, on processes 1 and 2 of one group, and beside --help on
# process 0 (exit 64, the bad option's message once), options that differ
# between the processes (exit 64, one message, no hang; -o and option
# spelling or order may differ), one directory given to processes standing
# for two hosts (exit 2, the duplicate named with the process that listed
# each), one
# directory given to several processes of one host (each file loaded
# once; a non-trace JSON named by one of them an error; an Nsight Systems
# export's parts shared), and a
# process whose directory holds no trace (exit 2, its message once, naming
# the process: one path may be on every node); Flight Recorder dumps on
# process 0's disk beside the traces, and alone.
# Usage: local_mpmd.sh MPIEXEC MERGETRACE REPO_ROOT WORKDIR
set -u
mpiexec=$1 bin=$2 root=$3 work=$4
rm -rf "$work" && mkdir -p "$work"
. "$(dirname "$0")/harness.sh" # Open MPI set-up, ok/bad/check, harness_end
cd "$root" || exit 1
run() { timeout 120 "$mpiexec" --oversubscribe "$@"; }
lines() {
  if [ "${1%.gz}" != "$1" ]; then python3 -c 'import gzip, sys; sys.stdout.buffer.write(gzip.open(sys.argv[1]).read())' "$1"; else cat "$1"; fi |
    sed 's/,$//' | sort
}

for set in dp8 pp8; do
  src=sample_traces/$set
  [ -d "$src" ] || continue
  d=$work/$set
  mkdir -p "$d/A" "$d/B" "$d/C"
  cp "$src"/rank-[0-2].json "$d/A/" && cp "$src"/rank-[3-4].json "$d/B/" && cp "$src"/rank-[5-7].json "$d/C/"
  for fmt in gzip json; do
    if [ $fmt = gzip ]; then m=merged.json.gz; else m=merged.json; fi
    env -u OMPI_COMM_WORLD_SIZE -u PMIX_RANK -u PMI_RANK -u PMI_SIZE timeout 60 \
      "$bin" -q --no-progress --merged-format $fmt -o "$d/ref-$fmt" "$d/A" "$d/B" "$d/C" || bad "by hand on $set"
    for send in 0 1; do
      out=$d/mpmd-$fmt-$send
      MERGETRACE_SEND_PARTS=$send run -x MERGETRACE_SEND_PARTS \
        -n 1 "$bin" -q --no-progress --local --merged-format $fmt -o "$out" "$d/A" "$d/B" : \
        -n 1 "$bin" -q --no-progress --local --merged-format $fmt -o "$out" "$d/C" 2>"$out.err" ||
        bad "mpmd on $set ($fmt, send $send): $(head -c 300 "$out.err")"
      if cmp -s "$d/ref-$fmt/report.json" "$out/report.json"; then ok; else bad "report.json of --local on $set ($fmt, send $send)"; fi
      if [ -s "$out/$m" ] && cmp -s <(lines "$d/ref-$fmt/$m") <(lines "$out/$m"); then ok; else
        bad "$m of --local on $set ($fmt, send $send)"
      fi
      if [ "$(ls -a "$out" | grep -c tmp)" = 0 ]; then ok; else bad "a temporary file left in $out"; fi
    done
  done
  # three processes, one directory each, parts sent
  out=$d/three
  MERGETRACE_SEND_PARTS=1 run -x MERGETRACE_SEND_PARTS -n 1 "$bin" -q --local -o "$out" "$d/A" : \
    -n 1 "$bin" -q --local -o "$out" "$d/B" : -n 1 "$bin" -q --local -o "$out" "$d/C" || bad "three processes on $set"
  if cmp -s "$d/ref-gzip/report.json" "$out/report.json" &&
    cmp -s <(lines "$d/ref-gzip/merged.json.gz") <(lines "$out/merged.json.gz"); then ok; else
    bad "three processes on $set: outputs differ"
  fi
done

# --local on one process only: a usage error, everywhere, no hang
d=$work/dp8
run -n 1 "$bin" -q --local -o "$work/half" "$d/A" : -n 1 "$bin" -q -o "$work/half" "$d/B" >/dev/null 2>"$work/half.err"
code=$?
if [ $code = 64 ] && [ "$(grep -c 'mergetrace:' "$work/half.err")" = 1 ]; then ok; else bad "--local on one process: exit $code"; fi
# a bad option on a process other than 0 (its own MPMD arguments): exit 64,
# that process's own message once (process 0 used to say "out of memory")
run -n 1 "$bin" -q --local -o "$work/bo" "$d/A" : -n 1 "$bin" -q --local --memory-budget 12Q -o "$work/bo" "$d/B" \
  >/dev/null 2>"$work/bo.err"
code=$?
if [ $code = 64 ] && [ "$(grep -c 'mergetrace:' "$work/bo.err")" = 1 ] &&
  grep -q -- '--memory-budget: expected a size' "$work/bo.err"; then ok; else
  bad "a bad option on process 1: exit $code, $(cat "$work/bo.err")"
fi
# the same bad option on two processes of one group: said once, not twice
run -n 1 "$bin" -q --local -o "$work/bo2" "$d/A" : -n 2 "$bin" -q --local --memory-budget 12Q -o "$work/bo2" "$d/B" \
  >/dev/null 2>"$work/bo2.err"
code=$?
if [ $code = 64 ] && [ "$(grep -c 'mergetrace:' "$work/bo2.err")" = 1 ] &&
  grep -q -- '--memory-budget: expected a size' "$work/bo2.err"; then ok; else
  bad "a bad option on processes 1 and 2: exit $code, $(cat "$work/bo2.err")"
fi
# --help on process 0, a bad option on process 1: the help, and exit 64
# with process 1's message (not exit 64 with none)
run -n 1 "$bin" -q --local --help -o "$work/bo3" "$d/A" : -n 1 "$bin" -q --local --memory-budget 12Q -o "$work/bo3" \
  "$d/B" >"$work/bo3.out" 2>"$work/bo3.err"
code=$?
if [ $code = 64 ] && grep -q '^Usage: mergetrace' "$work/bo3.out" && [ "$(grep -c 'mergetrace:' "$work/bo3.err")" = 1 ] &&
  grep -q -- '--memory-budget: expected a size' "$work/bo3.err"; then ok; else
  bad "--help on process 0, a bad option on process 1: exit $code, $(cat "$work/bo3.err")"
fi
# --version on process 1 alone: the version, then exit 64 with one line
# (it used to exit 0 having analysed nothing, which a CI step takes for a
# run that worked)
run -n 1 "$bin" -q --local -o "$work/bo4" "$d/A" : -n 1 "$bin" -q --local --version -o "$work/bo4" "$d/B" \
  >"$work/bo4.out" 2>"$work/bo4.err"
code=$?
if [ $code = 64 ] && grep -q '^mergetrace [0-9]' "$work/bo4.out" && [ "$(grep -c 'mergetrace:' "$work/bo4.err")" = 1 ] &&
  grep -q 'process 1 was given --help or --version and another process a job' "$work/bo4.err" &&
  [ ! -e "$work/bo4/report.json" ]; then ok; else
  bad "--version on process 1 alone: exit $code, $(cat "$work/bo4.err")"
fi
# options that differ between the processes (but -o and the PATHs): each
# decides which collective calls a process makes, so they must be the
# same. Exit 64 with one message naming both option lists, no hang (before:
# --rank-map on process 1 alone and --no-merge on process 0 alone waited
# until killed; --merged-format json on process 1 alone aborted in
# MPI_Allreduce with MPI_ERR_TRUNCATE).
echo "rank-7.json 7" >"$work/map.txt"
i=0
for pair in "|--rank-map $work/map.txt" "--no-merge|" "|--merged-format json" "--strict|--force"; do
  i=$((i + 1))
  a=${pair%%|*} b=${pair#*|}
  timeout 60 "$mpiexec" --oversubscribe -n 1 "$bin" -q --local $a -o "$work/d$i" "$d/A" : \
    -n 1 "$bin" -q --local $b -o "$work/d$i" "$d/B" >/dev/null 2>"$work/d$i.err"
  code=$?
  if [ $code = 64 ] && [ "$(grep -c 'mergetrace:' "$work/d$i.err")" = 1 ] &&
    grep -q "mergetrace: process 1's options differ from process 0's" "$work/d$i.err"; then ok; else
    bad "options '$a' against '$b': exit $code, $(head -c 300 "$work/d$i.err")"
  fi
done
# an MPMD launch without --local whose processes name other PATHs: only
# process 0's are read, so it is the same usage error (before: a job of
# process 0's PATHs alone, exit 0, one rank missing)
run -n 1 "$bin" -q -o "$work/nl" "$d/A" "$d/B" : -n 1 "$bin" -q -o "$work/nl" "$d/C" >/dev/null 2>"$work/nl.err"
code=$?
if [ $code = 64 ] && [ "$(grep -c 'mergetrace:' "$work/nl.err")" = 1 ] &&
  grep -qF "mergetrace: process 1's options differ from process 0's: --quiet $d/C against --quiet $d/A $d/B (" "$work/nl.err"; then ok; else
  bad "other PATHs without --local: exit $code, $(head -c 300 "$work/nl.err")"
fi
# the same options spelled and ordered differently, and another -o: the
# same run, outputs in process 0's -o
run -n 1 "$bin" -q --local --merged-format=json -o "$work/same" "$d/A" "$d/B" : \
  -n 1 "$bin" --merged-format json --output "$work/other" --local --quiet "$d/C" >/dev/null 2>"$work/same.err" ||
  bad "options spelled differently: $(head -c 300 "$work/same.err")"
if cmp -s "$d/ref-json/report.json" "$work/same/report.json" && [ ! -e "$work/other" ]; then ok; else
  bad "options spelled differently: not the outputs of one run in process 0's -o"
fi
# no option but --local and -o (another -o on process 1): the same run
run -n 1 "$bin" --local -o "$work/bare" "$d/A" "$d/B" : -n 1 "$bin" --local -o "$work/bare1" "$d/C" >/dev/null \
  2>"$work/bare.err" || bad "only --local and -o: $(head -c 300 "$work/bare.err")"
if cmp -s "$d/ref-gzip/report.json" "$work/bare/report.json" && [ ! -e "$work/bare1" ]; then ok; else
  bad "only --local and -o: not the outputs of one run in process 0's -o"
fi
# several processes of one node given one directory (mpirun -n 16 on two
# nodes, every process given /local/traces): each file loaded once, by one
# of the processes that listed it, the node's files shared among them; the
# same report.json and merged trace as one run by hand (before: every rank
# refused as a duplicate of itself, exit 2)
for n in 2 3; do
  out=$d/node-$n
  run -n $n "$bin" -q --local --timings -o "$out" "$d/A" "$d/B" "$d/C" >/dev/null 2>"$out.err" ||
    bad "-n $n --local on one node: $(head -c 300 "$out.err")"
  if cmp -s "$d/ref-gzip/report.json" "$out/report.json" &&
    cmp -s <(lines "$d/ref-gzip/merged.json.gz") <(lines "$out/merged.json.gz") &&
    python3 -c 'import json, sys; f = json.load(open(sys.argv[1]))["files_per_process"]
sys.exit(not (len(f) == int(sys.argv[2]) and min(f) > 0 and sum(f) == 8))' "$out/timings.json" $n; then ok; else
    bad "-n $n --local on one node: outputs, or the files not shared: $(grep files_per "$out/timings.json")"
  fi
done
# a JSON file that is not a trace, in a directory every process is given
# and named explicitly by one of them: an error (exit 2, its message once)
# whichever process loads it, as by hand; found in the directory alone it
# is left out (before: left out when the process that loads it had found it
# in the directory, which depended on the share of the files)
mkdir -p "$work/cf"
cp "$d"/A/rank-[01].json "$work/cf/" && echo '{"a": 1}' >"$work/cf/config.json"
for pair in "|$work/cf/config.json" "$work/cf/config.json|"; do
  a=${pair%%|*} b=${pair#*|}
  run -n 1 "$bin" -q --local -o "$work/cf-out" "$work/cf" $a : -n 1 "$bin" -q --local -o "$work/cf-out" "$work/cf" $b \
    >/dev/null 2>"$work/cf.err"
  code=$?
  if [ $code = 2 ] && [ "$(grep -c 'mergetrace:' "$work/cf.err")" = 1 ] &&
    grep -qE "^mergetrace: --local: process [01]: $work/cf/config.json: not a trace" "$work/cf.err"; then ok; else
    bad "config.json named on one process ('$a' against '$b'): exit $code, $(head -c 300 "$work/cf.err")"
  fi
done
run -n 2 "$bin" -q --local -o "$work/cf-dir" "$work/cf" >/dev/null 2>"$work/cf-dir.err" ||
  bad "config.json in the directory of two processes: $(head -c 300 "$work/cf-dir.err")"
# an Nsight Systems export with two GPU processes in one directory given to
# two processes of one host: each part ("<file>#pid<N>", no file of its
# own) loaded once, the same report.json as by hand (before: every rank
# refused as a duplicate of itself); left out without SQLite
nsys=tests/fuzz/corpus_nsys/two_procs.sqlite
mkdir -p "$work/ns"
cp "$nsys" "$work/ns/"
if env -u OMPI_COMM_WORLD_SIZE -u PMIX_RANK -u PMI_RANK -u PMI_SIZE timeout 60 "$bin" -q -o "$work/ns-ref" "$work/ns" \
  2>"$work/ns-ref.err"; then
  run -n 2 "$bin" -q --local -o "$work/ns-2" "$work/ns" >/dev/null 2>"$work/ns-2.err"
  code=$?
  if [ $code = 0 ] && cmp -s "$work/ns-ref/report.json" "$work/ns-2/report.json"; then ok; else
    bad "an export of two processes, one directory on two processes: exit $code, $(head -c 300 "$work/ns-2.err")"
  fi
elif ! grep -q "built without SQLite" "$work/ns-ref.err"; then
  bad "by hand on $nsys: $(head -c 300 "$work/ns-ref.err")"
fi
# what a process leaves out (mergetrace's own outputs in its directory, a
# link to a directory read already under -r) is listed in report.json as
# by hand, each path once (before: none listed with --local, process 0's
# own list dropped with the others'): a directory holding a run's outputs
# and a link to its sub-directory, by hand against -n 1 and -n 2 given it
mkdir -p "$work/so/sub"
cp "$d"/A/rank-[01].json "$work/so/sub/" && ln -s sub "$work/so/zlink"
env -u OMPI_COMM_WORLD_SIZE -u PMIX_RANK -u PMI_RANK -u PMI_SIZE timeout 60 "$bin" -q -r -o "$work/so" "$work/so" ||
  bad "a run into its input directory"
env -u OMPI_COMM_WORLD_SIZE -u PMIX_RANK -u PMI_RANK -u PMI_SIZE timeout 60 "$bin" -q -r -o "$work/so-hand" "$work/so" ||
  bad "by hand over a directory with outputs"
if python3 -c 'import json, sys; s = sorted(k["path"] for k in json.load(open(sys.argv[1]))["skipped"])
sys.exit(s != [sys.argv[2] + p for p in ("/merged.json.gz", "/report.json", "/zlink")])' "$work/so-hand/report.json" "$work/so"
then ok; else bad "by hand: skipped $(grep -o '"path": "[^"]*"' "$work/so-hand/report.json" | tail -3)"; fi
for n in 1 2; do
  run -n $n "$bin" -q -r --local -o "$work/so-$n" "$work/so" >/dev/null 2>"$work/so-$n.err" ||
    bad "-n $n over a directory with outputs: $(head -c 300 "$work/so-$n.err")"
  if cmp -s "$work/so-hand/report.json" "$work/so-$n/report.json"; then ok; else
    bad "-n $n --local over a directory with outputs: report.json differs from by hand"
  fi
done
# one directory under two absolute names (the directory and a link to it),
# one per process of one host: each file loaded once under its first name
# in path order, as by hand over both (before: under the name of the
# process that loaded it, a mix of the two in report.json)
env -u OMPI_COMM_WORLD_SIZE -u PMIX_RANK -u PMI_RANK -u PMI_SIZE timeout 60 "$bin" -q -o "$work/two-names-hand" \
  "$work/so/sub" "$work/so/zlink" || bad "by hand over a directory and a link to it"
for pair in "sub|zlink" "zlink|sub"; do
  a=${pair%%|*} b=${pair#*|}
  run -n 1 "$bin" -q --local -o "$work/two-names" "$work/so/$a" : -n 1 "$bin" -q --local -o "$work/two-names" \
    "$work/so/$b" >/dev/null 2>"$work/two-names.err" || bad "$a and $b on two processes: $(head -c 300 "$work/two-names.err")"
  if cmp -s "$work/two-names-hand/report.json" "$work/two-names/report.json"; then ok; else
    bad "$a on process 0, $b on process 1: report.json differs from by hand"
  fi
  rm -rf "$work/two-names"
done
# one directory given to processes on two nodes (MERGETRACE_NODE stands for
# the host name): every rank twice, with one path; the message says which
# process listed each (it named the same path twice)
run -n 1 env MERGETRACE_NODE=n0 "$bin" -q --local -o "$work/twice" "$d/A" : \
  -n 1 env MERGETRACE_NODE=n1 "$bin" -q --local -o "$work/twice" "$d/A" >/dev/null 2>"$work/twice.err"
code=$?
if [ $code = 2 ] && [ "$(grep -c 'mergetrace:' "$work/twice.err")" = 1 ] &&
  grep -qF "rank 0 appears twice: $d/A/rank-0.json on process 0 and $d/A/rank-0.json on process 1 (" "$work/twice.err"; then ok; else
  bad "one directory on both processes: exit $code, $(cat "$work/twice.err")"
fi
# a trace that does not parse in process 1's directory: exit 2, one line
# naming process 1 (one path may be on every node; it named none)
mkdir -p "$work/badB" && cp "$d/B"/*.json "$work/badB/" && printf '{"traceEvents": [{"ph": "X", "ts": oops}]}' >"$work/badB/rank-9.json"
run -n 1 "$bin" -q --local -o "$work/bl" "$d/A" : -n 1 "$bin" -q --local -o "$work/bl" "$work/badB" >/dev/null \
  2>"$work/bl.err"
code=$?
if [ $code = 2 ] && [ "$(grep -c 'mergetrace:' "$work/bl.err")" = 1 ] &&
  grep -q "^mergetrace: --local: process 1: .*rank-9.json" "$work/bl.err"; then ok; else
  bad "a bad trace on process 1 under --local: exit $code, $(cat "$work/bl.err")"
fi
# MERGETRACE_MPI=0 under mpirun -n 2: two whole runs, said once (it said
# nothing: two summaries, one -o)
MERGETRACE_MPI=0 run -x MERGETRACE_MPI -n 2 "$bin" -q --no-merge --no-html -o "$work/forced" "$d/A" >/dev/null \
  2>"$work/forced.err"
code=$?
if [ $code = 0 ] && [ "$(grep -c 'MERGETRACE_MPI=0 under a launcher of 2 processes' "$work/forced.err")" = 1 ] &&
  [ -s "$work/forced/report.json" ]; then ok; else
  bad "MERGETRACE_MPI=0 under mpirun -n 2: exit $code, $(cat "$work/forced.err")"
fi
# a process with nothing to read: exit 2, one message
mkdir -p "$work/empty"
run -n 1 "$bin" -q --local -o "$work/e" "$d/A" : -n 1 "$bin" -q --local -o "$work/e" "$work/empty" >/dev/null 2>"$work/e.err"
code=$?
if [ $code = 2 ] && [ "$(grep -c 'mergetrace:' "$work/e.err")" = 1 ] &&
  grep -qF -- "mergetrace: --local: process 1: $work/empty: no " "$work/e.err"; then ok; else
  bad "--local with an empty directory: exit $code, $(cat "$work/e.err")"
fi
# Flight Recorder dumps on process 0's disk (docs/FORMATS.md: with --local
# only process 0's PATHs are searched for dumps): the hang verdict of the
# dumps (exit 4) and the same report.json as by hand over every PATH; the
# dumps alone on two processes, each given them, the same (before: process
# 0's own dumps dropped with its file list, exit 0 and no verdict; the
# dumps alone "no trace")
fr=$work/frl
mkdir -p "$fr/T" "$fr/A" "$fr/B" "$fr/D"
python3 scripts/gen_traces.py --ranks 4 --out "$fr/T" --quiet && python3 scripts/gen_fr.py --from-traces "$fr/T" --out "$fr/D" &&
  rm -f "$fr/D/fr_truth.json" && cp "$fr/T"/rank-[01].json "$fr/A/" && cp "$fr/T"/rank-[23].json "$fr/B/" || bad "generating traces and dumps"
env -u OMPI_COMM_WORLD_SIZE -u PMIX_RANK -u PMI_RANK -u PMI_SIZE timeout 60 "$bin" -q --no-merge -o "$fr/ref" "$fr/A" "$fr/B" "$fr/D" \
  2>"$fr/ref.err"
code=$?
[ $code = 4 ] || bad "dumps beside traces by hand: exit $code, $(head -c 300 "$fr/ref.err")"
run -n 1 "$bin" -q --local --no-merge -o "$fr/l" "$fr/A" "$fr/D" : -n 1 "$bin" -q --local --no-merge -o "$fr/l" "$fr/B" \
  >/dev/null 2>"$fr/l.err"
code=$?
if [ $code = 4 ] && cmp -s "$fr/ref/report.json" "$fr/l/report.json"; then ok; else
  bad "dumps on process 0 under --local: exit $code (4 expected), report.json $(cmp "$fr/ref/report.json" "$fr/l/report.json" 2>&1 | head -c 200)"
fi
env -u OMPI_COMM_WORLD_SIZE -u PMIX_RANK -u PMI_RANK -u PMI_SIZE timeout 60 "$bin" -q -o "$fr/dref" "$fr/D" 2>/dev/null
run -n 2 "$bin" -q --local -o "$fr/dl" "$fr/D" >/dev/null 2>"$fr/dl.err"
code=$?
if [ $code = 4 ] && cmp -s "$fr/dref/report.json" "$fr/dl/report.json"; then ok; else
  bad "dumps alone under --local -n 2: exit $code (4 expected), $(head -c 300 "$fr/dl.err")"
fi
harness_end
