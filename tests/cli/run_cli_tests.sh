#!/usr/bin/env bash
# Golden CLI tests: run mergetrace with each line of cases.txt and compare
# stdout, stderr and the exit code with golden/<name>.{out,err,code}.
# Times and rates are masked. MT_UPDATE_GOLDEN=1 rewrites the golden files.
# Usage: run_cli_tests.sh MERGETRACE CASEDIR REPO_ROOT WORKDIR
set -u
bin=$1 dir=$2 root=$3 work=$4
mkdir -p "$work"
rm -rf "$work/empty" && mkdir -p "$work/empty"
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
# The goldens are the runs of one process: the worker threads' count would
# follow the machine's CPUs (-j has its own test, tests/mpi/jobs_same.sh).
export MERGETRACE_JOBS=1
# Open MPI's singleton start-up allocations are not ours: no leak check here.
export ASAN_OPTIONS=detect_leaks=0
cd "$root" || exit 1
mask() {
  sed -E 's/[0-9]+\.[0-9]+ s \([0-9]+ MB\/s\)/T s (R MB\/s)/; s/(aligned in|merged trace in) [0-9.]+ s/\1 T s/g' \
    | sed -E 's/events in [0-9.]+ s; a merged trace/events in T s; a merged trace/; s/ in all, [0-9]+ MB\/s\)/ in all, R MB\/s)/' \
    | sed -E "s#$work/empty#@empty#g; s#$work/#@work/#g"
}
fail=0 n=0
while IFS= read -r line; do
  case "$line" in ''|'#'*) continue ;; esac
  name=$(printf '%s' "${line%%|*}" | tr -d ' ')
  args=${line#*|}
  args=${args# }
  args=${args//@empty/$work/empty}
  # "@fresh": a path under WORK that does not exist when the case starts
  rm -rf "$work/fresh-$name"
  args=${args//@fresh/$work/fresh-$name}
  n=$((n + 1))
  # shellcheck disable=SC2086
  "$bin" --no-progress -o "$work/out-$name" $args >"$work/$name.out.raw" 2>"$work/$name.err.raw" </dev/null
  code=$?
  mask <"$work/$name.out.raw" >"$work/$name.out"
  mask <"$work/$name.err.raw" >"$work/$name.err"
  echo "$code" >"$work/$name.code"
  if [ "${MT_UPDATE_GOLDEN:-0}" = 1 ]; then
    cp "$work/$name.out" "$dir/golden/$name.out"
    cp "$work/$name.err" "$dir/golden/$name.err"
    cp "$work/$name.code" "$dir/golden/$name.code"
    continue
  fi
  for k in out err code; do
    if ! diff -u "$dir/golden/$name.$k" "$work/$name.$k" >"$work/$name.$k.diff" 2>&1; then
      echo "FAIL $name ($k):"
      cat "$work/$name.$k.diff"
      fail=$((fail + 1))
    fi
  done
done <"$dir/cases.txt"
echo "$((n - fail)) passed, $fail failed"
[ "$fail" = 0 ]
