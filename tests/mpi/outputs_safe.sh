#!/usr/bin/env bash
# Outputs never overwrite an input (issue 40 item 0): a trace copied into
# the output directory under the name of an output this run writes
# (report.json, report.html, timings.json with --timings, compare.json with
# --baseline), named as an input, is refused before anything is written,
# exit 1, the file's bytes unchanged; by hand and under mpirun -n 2. And
# the temporaries a killed run left are removed by the next one; a FIFO
# named by an option is refused.
# Usage: outputs_safe.sh MPIEXEC MERGETRACE REPO_ROOT WORKDIR
set -u
mpiexec=$1 bin=$2 root=$3 work=$4
rm -rf "$work" && mkdir -p "$work" && work=$(cd "$work" && pwd)
. "$(dirname "$0")/harness.sh"
cd "$root" || exit 1
src=sample_traces/dp8
"$bin" -q --no-progress --no-merge -o "$work/base" "$src/rank-0.json" "$src/rank-1.json" || bad "baseline run"
for how in hand mpi; do
  for name in report.json report.html timings.json compare.json; do
    d="$work/$how-$name"
    mkdir -p "$d"
    cp "$src/rank-0.json" "$d/"
    cp "$src/rank-1.json" "$d/$name"
    sum=$(sha256sum <"$d/$name")
    extra=()
    [ "$name" = timings.json ] && extra=(--timings)
    [ "$name" = compare.json ] && extra=(--baseline "$work/base/report.json")
    if [ "$how" = hand ]; then
      "$bin" -q --no-progress "${extra[@]}" -o "$d" "$d/rank-0.json" "$d/$name" >"$d.out" 2>"$d.err"
    else
      timeout -k 5 120 "$mpiexec" --oversubscribe -n 2 "$bin" -q --no-progress "${extra[@]}" -o "$d" \
        "$d/rank-0.json" "$d/$name" >"$d.out" 2>"$d.err"
    fi
    code=$?
    check test "$code" = 1
    check grep -q "^mergetrace: .*$name is one of the inputs" "$d.err"
    check test "$(sha256sum <"$d/$name")" = "$sum"
    for other in report.json report.html merged.json.gz; do
      [ "$other" = "$name" ] || check test ! -e "$d/$other"
    done
  done
done
# A killed run's temporaries (its process gone) are removed by the next
# run, which says so; a live process's are left alone (pid 1).
d="$work/stale"
"$bin" -q --no-progress -o "$d" "$src" || bad "first run"
echo half >"$d/merged.json.gz.tmp.4194305.1a2b"
echo half >"$d/report.json.tmp.4194305.99"
echo live >"$d/report.json.tmp.1.77"
"$bin" --no-progress --no-merge -o "$d" "$src" >"$d.out" 2>"$d.err"
check test $? = 0
check test ! -e "$d/merged.json.gz.tmp.4194305.1a2b"
check test ! -e "$d/report.json.tmp.4194305.99"
check test -e "$d/report.json.tmp.1.77"
check grep -q "^mergetrace: removed 2 temporary files of an earlier run that was stopped" "$d.err"
# A run that fails (its merged trace cannot be written: a "dur" of 9e15
# us in rank 0) writes none of its outputs: the last run's stay, whole
# (they were report.json and report.html of the new run beside the old
# merged trace); by hand and under mpirun -n 2.
mkdir -p "$work/bad4"
for r in 0 1 2 3; do cp "$src/rank-$r.json" "$work/bad4/"; done
python3 - "$work/bad4/rank-0.json" <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
i = s.index('"dur":')
s = s[:i] + '"dur": 9e15' + s[s.index(",", i):]
open(p, "w").write(s)
PY
for how in hand mpi; do
  d="$work/mix-$how"
  "$bin" -q --no-progress --timings -o "$d" "$src" 2>/dev/null || bad "$how: first run"
  before=$(cd "$d" && sha256sum report.json report.html merged.json.gz timings.json)
  if [ "$how" = hand ]; then
    "$bin" -q --no-progress --timings -o "$d" "$work/bad4" >"$d.out" 2>"$d.err"
  else
    timeout -k 5 120 "$mpiexec" --oversubscribe -n 2 "$bin" -q --no-progress --timings -o "$d" "$work/bad4" \
      >"$d.out" 2>"$d.err"
  fi
  check test $? != 0
  check test "$(cd "$d" && sha256sum report.json report.html merged.json.gz timings.json)" = "$before"
  check test "$(ls -a "$d" | grep -c '\.tmp\.')" = 0
done
# The merged trace's own failure (its rename refused: merged.json is a
# directory now): exit 1, the last run's reports kept, no temporary left.
for how in hand mpi; do
  d="$work/mj-$how"
  "$bin" -q --no-progress --merged-format json -o "$d" "$src" 2>/dev/null || bad "$how: first run"
  rm -f "$d/merged.json" && mkdir -p "$d/merged.json/x"
  before=$(cd "$d" && sha256sum report.json report.html)
  if [ "$how" = hand ]; then
    "$bin" -q --no-progress --merged-format json -o "$d" tests/data/tiny >"$d.out" 2>"$d.err"
  else
    timeout -k 5 120 "$mpiexec" --oversubscribe -n 2 "$bin" -q --no-progress --merged-format json -o "$d" \
      tests/data/tiny >"$d.out" 2>"$d.err"
  fi
  check test $? = 1
  check grep -q "merged.json" "$d.err"
  check test "$(cd "$d" && sha256sum report.json report.html)" = "$before"
  check test "$(ls -a "$d" | grep -c '\.tmp\.')" = 0
done
# A FIFO named by an option is refused before it is opened (it blocked
# the run forever): exit 2 within the time limit.
mkfifo "$work/fifo"
for opt in --rank-map --baseline; do
  timeout -k 5 20 "$bin" -q --no-progress "$opt" "$work/fifo" -o "$work/fifo-out" tests/data/tiny \
    >"$work/fifo.out" 2>"$work/fifo.err"
  check test $? = 2
  check grep -q "^mergetrace: $opt $work/fifo: not a regular file" "$work/fifo.err"
done
# An output directory of 300 characters under MPI (Open MPI's shared
# file pointer component overflowed a buffer at about 220 and killed the
# run with *** buffer overflow detected ***, writing nothing).
long="$work/$(printf 'd%.0s' $(seq 1 120))/$(printf 'e%.0s' $(seq 1 150))"
long=${long:0:300}
timeout -k 5 120 "$mpiexec" --oversubscribe -n 2 "$bin" -q --no-progress -o "$long" "$src" >"$work/long.out" 2>&1
check test $? = 0
check test -s "$long/merged.json.gz"
MERGETRACE_MPI=1 timeout -k 5 120 "$bin" -q --no-progress -o "$long-1" "$src" >"$work/long1.out" 2>&1
check test $? = 0
check test -s "$long-1/report.json"
# A file name that is not UTF-8 reaches report.json and report.html as
# UTF-8 (U+FFFD for the bad byte): both decode strictly.
d="$work/u8"
mkdir -p "$d"
cp "$src/rank-0.json" "$d/$(printf 'r\xff.json')"
"$bin" -q --no-progress -o "$d-out" "$d" >/dev/null 2>&1
check test $? = 0
check python3 -c 'import json, sys; json.load(open(sys.argv[1], encoding="utf-8")); open(sys.argv[2], encoding="utf-8").read()' \
  "$d-out/report.json" "$d-out/report.html"
# The mark of a run stopped while renaming (mergetrace.renaming.<pid>) is
# read only when it is a plain file: a FIFO planted under that name in a
# shared directory would block the next run.
d="$work/fifo-mark"
"$bin" -q --no-progress -o "$d" tests/data/tiny || bad "fifo-mark: first run"
mkfifo "$d/mergetrace.renaming.4194305"
timeout -k 5 60 "$bin" -q --no-progress -o "$d" tests/data/tiny
check test $? = 0
# An operation-level timeline's run (report.json and report.html) that
# cannot write report.html (a full 120 KiB file system: report.json fits)
# keeps the last run's pair: it renamed report.json first and left it beside
# the old report.html. Needs root (mount) and the corpus's timeline.
tl="$root/../shared/corpus/ByteDance-Seed__StragglerAnalysis/data/timeline-ST.json.gz"
d="$work/tl-full"
mkdir -p "$d"
if [ -f "$tl" ] && [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=120k tmpfs "$d" 2>/dev/null; then
  echo old >"$d/report.json" && echo old >"$d/report.html"
  "$bin" -q --no-progress -o "$d" "$tl" 2>"$work/tl-full.err"
  check test $? = 1
  check grep -q "report.html: cannot write" "$work/tl-full.err"
  check test "$(cat "$d/report.json" "$d/report.html")" = "old
old"
  check test "$(ls -a "$d" | grep -c '\.tmp\.')" = 0
  umount "$d"
else
  echo "tl-full: skipped (not root, no tmpfs or no corpus timeline)"
fi
harness_end
