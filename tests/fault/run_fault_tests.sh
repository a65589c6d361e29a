#!/usr/bin/env bash
# Faults under MPI, with mergetrace_faults (tests/fault/fault_inject.c):
#  1. allocations fail on one process from the Nth on, for N spread over the
#     whole run: every process ends (a `timeout` turns a hang into a
#     failure), exit 1, exactly one "mergetrace:" line saying "out of
#     memory", no temporary file left behind; again with --baseline DIR of
#     traces (both jobs analysed in the run); by hand on Flight Recorder
#     dumps, every allocation in turn;
#  2. one process killed with SIGKILL (by the injector mid-load, and from
#     outside by pid, with the real mergetrace): mpirun ends, non-zero;
#  3. killed during the merged write or just before a rename: the previous
#     outputs are untouched (same bytes) and no final name holds a half file;
#  4. the inputs have the same checksums after all of it.
# Usage: run_fault_tests.sh MPIEXEC MERGETRACE_FAULTS MERGETRACE REPO_ROOT WORKDIR
set -u
mpiexec=$1 fbin=$2 bin=$3 root=$4 work=$5
rm -rf "$work" && mkdir -p "$work" && work=$(cd "$work" && pwd)
. "$(dirname "$0")/../mpi/harness.sh" # Open MPI set-up, ok/bad/check, harness_end
cd "$root" || exit 1
# run NP OUT [ENV=V...] -- ARGS: the fault build under mpirun, within 60 s
frun() {
  local np=$1 out=$2; shift 2
  local envs=() xs=()
  while [ "$1" != -- ]; do envs+=("$1"); xs+=(-x "${1%%=*}"); shift; done
  shift
  env "${envs[@]}" timeout -k 5 60 "$mpiexec" --oversubscribe -n "$np" "${xs[@]}" "$fbin" --no-progress -q -o "$out" "$@"
}
set_in=sample_traces/dp8
sums() { sha256sum "$set_in"/* tests/data/tiny/*; }
sums >"$work/inputs.before"

# ---- 1. allocation failures on one process ----
for np in 2 4; do
  for proc in 0 $((np - 1)); do
    frun "$np" "$work/count" MERGETRACE_FAULT_PROC=$proc MERGETRACE_FAULT_COUNT=1 -- "$set_in" 2>"$work/count.err"
    total=$(sed -n "s/^fault_inject: process $proc: \([0-9]*\) allocations$/\1/p" "$work/count.err")
    if [ -z "$total" ]; then bad "np $np proc $proc: no allocation count"; continue; fi
    for i in 0 1 2 3 4 5 6 7 8 9 10 11; do
      n=$((total * i / 12))
      out="$work/oom-$np-$proc-$n"
      frun "$np" "$out" MERGETRACE_FAULT_PROC=$proc MERGETRACE_FAIL_ALLOC_AFTER=$n -- "$set_in" \
        >"$out.stdout" 2>"$out.err"
      code=$?
      lines=$(grep -c '^mergetrace:' "$out.err")
      if [ "$code" != 1 ] || [ "$lines" != 1 ] || ! grep -q '^mergetrace: .*out of memory' "$out.err"; then
        bad "np $np, process $proc out of memory after $n of $total allocations: exit $code, $lines messages:"
        grep -v '^---\|^$' "$out.err" | head -5
      else
        ok
      fi
      if ls -a "$out" 2>/dev/null | grep -q '\.tmp\.'; then bad "np $np proc $proc n $n: temporary file left: $(ls -a "$out")"; else ok; fi
    done
  done
done

# ---- 1a. Flight Recorder dumps by hand (no launcher), every allocation in
# turn: exit 1 and one "out of memory" line (two early failures, in the
# option check and in the dumps' gather, exited 1 without a word) ----
python3 scripts/gen_fr.py --out "$work/frg" --scenario skip >/dev/null
fr_in="$work/frg/skip/pickle"
MERGETRACE_FAULT_PROC=0 MERGETRACE_FAULT_COUNT=1 "$fbin" --no-progress -q -o "$work/frcount" "$fr_in" \
  >/dev/null 2>"$work/frcount.err"
total=$(sed -n "s/^fault_inject: process 0: \([0-9]*\) allocations$/\1/p" "$work/frcount.err")
if [ -z "$total" ]; then bad "dumps by hand: no allocation count"; total=0; fi
fr_bad=0
for n in $(seq 0 $((total - 1))); do
  out="$work/froom"
  MERGETRACE_FAULT_PROC=0 MERGETRACE_FAIL_ALLOC_AFTER=$n timeout 60 "$fbin" --no-progress -q -o "$out" "$fr_in" \
    >/dev/null 2>"$out.err"
  code=$?
  lines=$(grep -c '^mergetrace:' "$out.err")
  if [ "$code" != 1 ] || [ "$lines" != 1 ] || ! grep -q '^mergetrace: .*out of memory' "$out.err"; then
    bad "dumps by hand, out of memory after $n of $total allocations: exit $code, $lines messages"
    fr_bad=$((fr_bad + 1))
  fi
  rm -rf "$out"
done
[ "$total" -gt 0 ] && [ "$fr_bad" = 0 ] && ok

# ---- 1b. the same while a baseline of traces is analysed (--baseline DIR):
# the baseline is the larger job, so most failure points fall in its part ----
for proc in 0 1; do
  frun 2 "$work/bcount" MERGETRACE_FAULT_PROC=$proc MERGETRACE_FAULT_COUNT=1 -- --baseline "$set_in" tests/data/tiny \
    2>"$work/bcount.err"
  total=$(sed -n "s/^fault_inject: process $proc: \([0-9]*\) allocations$/\1/p" "$work/bcount.err")
  if [ -z "$total" ]; then bad "baseline, proc $proc: no allocation count"; continue; fi
  for i in 0 1 2 3 4 5 6 7 8 9 10 11; do
    n=$((total * i / 12))
    out="$work/boom-$proc-$n"
    frun 2 "$out" MERGETRACE_FAULT_PROC=$proc MERGETRACE_FAIL_ALLOC_AFTER=$n -- --baseline "$set_in" tests/data/tiny \
      >"$out.stdout" 2>"$out.err"
    code=$?
    lines=$(grep -c '^mergetrace:' "$out.err")
    if [ "$code" != 1 ] || [ "$lines" != 1 ] || ! grep -q '^mergetrace: .*out of memory' "$out.err"; then
      bad "baseline, process $proc out of memory after $n of $total allocations: exit $code, $lines messages:"
      grep -v '^---\|^$' "$out.err" | head -5
    else
      ok
    fi
    if ls -a "$out" "$out/baseline" 2>/dev/null | grep -q '\.tmp\.'; then bad "baseline, proc $proc n $n: temporary file left"; else ok; fi
  done
done

# ---- 1c. an Nsight Systems export of 2 ranks under 3 processes (the
# third process lists, shares and waits): the first allocations of input
# setup too, where process 2 once left for MPI_Finalize while 0 and 1
# waited in load_share for ever ----
nsys=../shared/corpus/GindaChen__nsys-ai/tests/fixtures/mfu_2gpu_before.sqlite
if [ -f "$nsys" ]; then
  for proc in 0 2; do
    frun 3 "$work/ncount" MERGETRACE_FAULT_PROC=$proc MERGETRACE_FAULT_COUNT=1 -- "$nsys" 2>"$work/ncount.err"
    total=$(sed -n "s/^fault_inject: process $proc: \([0-9]*\) allocations$/\1/p" "$work/ncount.err")
    if [ -z "$total" ]; then bad "nsys, proc $proc: no allocation count"; continue; fi
    for n in 5 10 15 16 17 20 30 $((total / 4)) $((total / 2)) $((total * 3 / 4)) $((total - 1)); do
      out="$work/noom-$proc-$n"
      frun 3 "$out" MERGETRACE_FAULT_PROC=$proc MERGETRACE_FAIL_ALLOC_AFTER=$n -- "$nsys" >"$out.stdout" 2>"$out.err"
      code=$?
      lines=$(grep -c '^mergetrace:' "$out.err")
      if [ "$code" != 1 ] || [ "$lines" != 1 ] || ! grep -q '^mergetrace: .*out of memory' "$out.err"; then
        bad "nsys, process $proc out of memory after $n of $total allocations: exit $code, $lines messages:"
        grep -v '^---\|^$' "$out.err" | head -5
      else
        ok
      fi
    done
  done
fi

# ---- 2. a process killed with SIGKILL ----
frun 4 "$work/killed" MERGETRACE_FAULT_PROC=1 MERGETRACE_KILL_AFTER_ALLOC=100 -- "$set_in" >/dev/null 2>"$work/killed.err"
code=$?
check test "$code" != 0
check test "$code" != 124
check test ! -e "$work/killed/report.json"
check grep -q 'signal 9' "$work/killed.err"

# From outside, with the real program: kill one rank by pid once the ranks
# have started. Every other rank must end soon after (they may be waiting
# in a collective for the dead one), and mpirun must say which rank died.
# Open MPI 4.1.4's mpirun was seen, on this loaded machine, to print that
# note and then not exit although all its ranks had ended (zombies; SIGTERM
# ignored): that is mpirun's teardown, not ours, so it is reported as a
# note and `timeout -k` ends it; our ranks still running would fail.
timeout -k 5 60 "$mpiexec" --oversubscribe -n 4 "$bin" --no-progress -q -o "$work/ext" "$set_in" \
  </dev/null >/dev/null 2>"$work/ext.err" &
mp=$!
victim="" launcher=""
for _ in $(seq 1 300); do
  launcher=$(ps -o pid= --ppid "$mp" 2>/dev/null | head -1 | tr -d ' ')
  kids=$(ps -o pid=,comm= --ppid "$launcher" 2>/dev/null | awk '$2 ~ /mergetrace/ {print $1}' | sed -n 2p)
  [ -n "$kids" ] && { victim=$kids; break; }
  sleep 0.05
done
if [ -n "$victim" ]; then
  sleep 0.3
  kill -9 "$victim" 2>/dev/null
  alive=1
  for _ in $(seq 1 300); do # 30 s
    alive=$(ps -o stat=,comm= --ppid "$launcher" 2>/dev/null | awk '$1 !~ /^Z/ && $2 ~ /mergetrace/' | wc -l)
    [ "$alive" = 0 ] && break
    sleep 0.1
  done
  wait "$mp"
  code=$?
  if [ "$code" = 0 ] && [ -e "$work/ext/report.json" ]; then
    echo "note: the external kill came after the run had finished; not counted"
  else
    check test "$alive" = 0
    check test "$code" != 0
    check grep -q 'signal 9' "$work/ext.err"
    if [ "$code" = 124 ] || [ "$code" = 137 ]; then
      echo "note: mpirun reported the killed rank but did not exit after every rank had ended; ended by timeout"
    fi
  fi
else
  wait "$mp"
  bad "no mergetrace process seen under mpirun"
fi

# ---- 3. killed while writing: the previous outputs survive, whole ----
for fmt in gzip json; do
  name=merged.json.gz
  [ $fmt = json ] && name=merged.json
  out="$work/write-$fmt"
  timeout -k 5 60 "$mpiexec" --oversubscribe -n 2 "$bin" --no-progress -q --merged-format $fmt -o "$out" "$set_in"
  check test -s "$out/$name"
  (cd "$out" && sha256sum report.json report.html "$name") >"$work/prev.sum"
  # every process writes its part; process 0 alone renames
  for hook in MERGETRACE_KILL_IN_WRITE:0 MERGETRACE_KILL_IN_WRITE:1 MERGETRACE_KILL_BEFORE_RENAME:0; do
    proc=${hook#*:} hook=${hook%:*}
    {
      frun 2 "$out" MERGETRACE_FAULT_PROC=$proc "$hook=1" -- --merged-format $fmt "$set_in" >/dev/null 2>&1
      code=$?
      check test "$code" != 0
      check test "$code" != 124
      (cd "$out" && sha256sum -c --quiet "$work/prev.sum") || bad "$fmt $hook proc $proc: previous outputs changed"
      # nothing but the previous outputs under final names
      extra=$(ls "$out" | grep -v '\.tmp\.\|^mergetrace\.renaming\.' | grep -vx "report.json\|report.html\|$name")
      check test -z "$extra"
    }
  done
  # into an empty directory: no final name at all
  rm -rf "$out"
  frun 2 "$out" MERGETRACE_FAULT_PROC=1 MERGETRACE_KILL_IN_WRITE=1 -- --merged-format $fmt "$set_in" >/dev/null 2>&1
  check test ! -e "$out/$name"
  check test ! -e "$out/report.json"
  check test ! -e "$out/report.html"
done

# ---- 3b. killed between two renames (issue 40 item 2): the killed run's
# mark names what it renamed; the next run, even one that goes no further
# than its start, removes the older outputs beside them, so the directory
# never holds two runs' files without the mark ----
for k in 2 3; do
  out="$work/between-$k"
  timeout -k 5 60 "$mpiexec" --oversubscribe -n 2 "$bin" --no-progress -q -o "$out" "$set_in"
  # the killed run is another job (tests/data/tiny), so its files differ
  frun 2 "$out" MERGETRACE_KILL_AT_RENAME=$k -- tests/data/tiny >/dev/null 2>&1
  code=$?
  check test "$code" != 0
  check test "$code" != 124
  marks=$(ls "$out" | grep -c '^mergetrace\.renaming\.[0-9]*$')
  check test "$marks" = 1
  new_merged=$(sha256sum <"$out/merged.json.gz")
  # the mark names each output it was about to rename: merged trace first
  check grep -q "^merged.json.gz	\.tmp\." "$out"/mergetrace.renaming.*
  # the next run: the real program, stopped at its merged write by the fault build
  frun 2 "$out" MERGETRACE_KILL_IN_WRITE=1 -- "$set_in" >/dev/null 2>&1
  check test "$(ls "$out" | grep -c '^mergetrace\.renaming\.')" = 0
  check test "$(sha256sum <"$out/merged.json.gz")" = "$new_merged"
  check test ! -e "$out/report.html" # renamed third: the older one, removed
  if [ $k = 2 ]; then
    check test ! -e "$out/report.json"
  else # report.json was the killed run's own: kept
    check grep -q '"world_size": 2' "$out/report.json"
  fi
  # a whole run after that says nothing more and leaves the set whole
  timeout -k 5 60 "$mpiexec" --oversubscribe -n 2 "$bin" --no-progress -o "$out" "$set_in" >/dev/null 2>"$out.err"
  check grep -q '"world_size": 8' "$out/report.json"
  check test "$(ls "$out" | grep -vc '\.tmp\.')" = 3
done
# said without -q
out="$work/between-say"
timeout -k 5 60 "$mpiexec" --oversubscribe -n 2 "$bin" --no-progress -q -o "$out" "$set_in"
frun 2 "$out" MERGETRACE_KILL_AT_RENAME=2 -- tests/data/tiny >/dev/null 2>&1
timeout -k 5 60 "$mpiexec" --oversubscribe -n 2 "$bin" --no-progress -o "$out" "$set_in" >/dev/null 2>"$out.err"
check grep -q "^mergetrace: .*between-say: an earlier run was stopped while renaming its outputs into place; removed report.json, report.html, older than its others\$" "$out.err"

# ---- 4. the inputs were never written ----
sums >"$work/inputs.after"
check cmp -s "$work/inputs.before" "$work/inputs.after"

harness_end
