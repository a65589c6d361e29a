#!/usr/bin/env bash
# MPI integration test: mergetrace under mpirun -n NP gives the same summary
# as one process, on the sample sets and the real 8-rank DLRM set; a bad file
# on one process ends every process with one message and exit code 2.
# Usage: run_mpi_test.sh MPIEXEC NP MERGETRACE REPO_ROOT WORKDIR
set -u
mpiexec=$1 np=$2 bin=$3 root=$4 work=$5
mkdir -p "$work"
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
export OMPI_MCA_btl_vader_single_copy_mechanism=none
# Open MPI's own allocations are not ours: no leak check under ASan here.
export ASAN_OPTIONS=detect_leaks=0
cd "$root" || exit 1
run() { timeout 120 "$mpiexec" --oversubscribe -n "$@"; }
norm() { sed -E 's/"(load_s|load_wall_s)": [0-9.]+/"\1": T/g; s/"processes": [0-9]+/"processes": P/'; }
pass=0 fail=0
check() { if "$@"; then pass=$((pass + 1)); else echo "FAIL: $*"; fail=$((fail + 1)); fi; }

sets="tests/data/tiny"
for s in sample_traces/dp8 sample_traces/pp8 sample_traces/dp4-old; do [ -d "$s" ] && sets="$sets $s"; done
dlrm="$root/../shared/corpus/facebookresearch__param/et_replay/tests/inputs/dlrm_kineto.tar.gz.extracted/dlrm_kineto"
[ -d "$dlrm" ] && sets="$sets $dlrm"

i=0
for s in $sets; do
  i=$((i + 1))
  run 1 "$bin" --json --no-progress "$s" >"$work/ref$i.json" 2>"$work/ref$i.err"
  check test $? = 0
  run "$np" "$bin" --json --no-progress "$s" >"$work/np$i.json" 2>"$work/np$i.err"
  check test $? = 0
  norm <"$work/ref$i.json" >"$work/ref$i.n"
  norm <"$work/np$i.json" >"$work/np$i.n"
  if ! diff -u "$work/ref$i.n" "$work/np$i.n" >"$work/diff$i"; then
    echo "FAIL: -n $np differs from -n 1 on $s"; head -20 "$work/diff$i"; fail=$((fail + 1))
  else
    pass=$((pass + 1))
  fi
  check python3 -c "import json,sys; d=json.load(open('$work/np$i.json')); sys.exit(0 if d['inputs'] else 1)"
done

# A bad file among good ones: every process ends, one message, exit 2.
rm -rf "$work/badset" && mkdir -p "$work/badset"
cp tests/data/tiny/*.json "$work/badset/"
for r in 2 3 4 5 6 7; do sed "s/\"rank\": 0/\"rank\": $r/" tests/data/tiny/rank-0.json >"$work/badset/rank-$r.json"; done
printf '{"traceEvents": [{"ph": "X", "ts": 1}, oops]}' >"$work/badset/rank-5.json"
start=$(date +%s)
run "$np" "$bin" --no-progress "$work/badset" >"$work/bad.out" 2>"$work/bad.err"
code=$?
took=$(( $(date +%s) - start ))
check test "$code" = 2
check test "$(grep -c 'mergetrace:' "$work/bad.err")" = 1
check grep -q 'rank-5.json: rank 5: byte 39 (line 1:40)' "$work/bad.err"
check test "$took" -lt 60
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
