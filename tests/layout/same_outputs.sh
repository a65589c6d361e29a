#!/usr/bin/env bash
# same_outputs.sh: proves that two mergetrace binaries write the same outputs
# (for a pure restructuring of the sources, e.g. moving files of src/ into
# folders). Runs both binaries, one after the other, on the same jobs
# (sample_traces, every directory of tests/data, every trace of the corpus
# alone, the corpus's multi-rank sets, and option variants) and compares
# byte for byte: report.json, report.html, the merged trace (merged.json.gz is
# inflated first: gzip bytes depend on the deflate library and its threads),
# the list of files written, stdout, stderr and the exit code.
#
# Usage: tests/layout/same_outputs.sh OLD_BIN NEW_BIN [CORPUS_DIR]
#        tests/layout/same_outputs.sh --base-rev REV NEW_BIN [CORPUS_DIR]
#   --base-rev builds REV in a temporary git worktree (cmake, tests off,
#   default build type RelWithDebInfo) and uses its mergetrace as OLD_BIN;
#   build NEW_BIN the same way. CORPUS_DIR defaults to ../shared/corpus
#   beside the repository root; a missing corpus is skipped with a note.
# Prints "same  JOB" or "DIFF  JOB: what" per job, then "N passed, N failed";
# exits 1 if any job differs, 2 on a usage or build error.
#
# Both runs of a job use the same output directory path and the same argv[0]
# (a symlink swapped between the two binaries), so report.html's command line
# and the messages naming outputs need no rewriting. The only things masked are
# wall times: the summary's "in 0.011 s (119 MB/s)", "aligned in", "merged
# trace in" (stdout), and with --timings the decimal numbers of the timing
# block on stderr (times, rates, peak RSS, and the runs of spaces that pad
# them); timings.json is listed but its content is not compared.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

usage() {
  sed -n '11,18p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

base_rev=""
case "${1:-}" in
  -h | --help) usage ;;
  --base-rev)
    if [ $# -lt 3 ] || [ $# -gt 4 ]; then usage; fi
    base_rev=$2 new_bin=$3 corpus=${4:-}
    ;;
  *)
    if [ $# -lt 2 ] || [ $# -gt 3 ]; then usage; fi
    old_bin=$1 new_bin=$2 corpus=${3:-}
    ;;
esac
[ -n "$corpus" ] || corpus="$root/../shared/corpus"

abspath() { (cd "$(dirname "$1")" && printf '%s/%s\n' "$(pwd)" "$(basename "$1")"); }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/same_outputs.XXXXXX")
base_wt=""
cleanup() {
  if [ -n "$base_wt" ]; then
    git -C "$root" worktree remove --force "$base_wt" >/dev/null 2>&1 || true
    git -C "$root" worktree prune >/dev/null 2>&1 || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ -n "$base_rev" ]; then
  base_wt="$tmp/base-src"
  git -C "$root" worktree add --detach --quiet "$base_wt" "$base_rev"
  echo "building $base_rev in a temporary worktree..." >&2
  if ! { cmake -S "$base_wt" -B "$base_wt/build" -DMT_BUILD_TESTS=OFF &&
    cmake --build "$base_wt/build" -j "$(nproc)" --target mergetrace; } >"$tmp/build.log" 2>&1; then
    tail -n 30 "$tmp/build.log" >&2
    echo "same_outputs.sh: building $base_rev failed" >&2
    exit 2
  fi
  old_bin="$base_wt/build/mergetrace"
fi
for b in "$old_bin" "$new_bin"; do
  if ! [ -f "$b" ] || ! [ -x "$b" ]; then
    echo "same_outputs.sh: $b: not an executable" >&2
    exit 2
  fi
done
old_bin=$(abspath "$old_bin")
new_bin=$(abspath "$new_bin")

# Open MPI as root, shared memory only (scripts/lib.sh).
# shellcheck source=SCRIPTDIR/../../scripts/lib.sh
. "$root/scripts/lib.sh"
mt_mpi_env

cd "$root"
mkdir -p "$tmp/bin" "$tmp/run" "$tmp/res"
exe="$tmp/bin/mergetrace"
out="$tmp/run/out"

# The binary runs as an MPI singleton; where that cannot start, mpirun -n 1
# (-q: no mpirun note of its own on a non-zero exit).
launch=()
ln -sfn "$old_bin" "$exe"
if ! "$exe" -q -o "$tmp/probe" tests/data/tiny >/dev/null 2>"$tmp/probe.err" </dev/null; then
  if mpirun -q -n 1 "$exe" -q -o "$tmp/probe" tests/data/tiny >/dev/null 2>>"$tmp/probe.err" </dev/null; then
    launch=(mpirun -q -n 1)
  else
    cat "$tmp/probe.err" >&2
    echo "same_outputs.sh: $old_bin runs neither as a singleton nor under mpirun -n 1" >&2
    exit 2
  fi
fi
echo "old: $old_bin" >&2
echo "new: $new_bin" >&2
echo "launcher: ${launch[*]:-MPI singleton}" >&2

# Wall times only (and, in the timing block, the padding that their widths
# move); everything else must match as written.
mask() {
  sed -E 's/[0-9]+\.[0-9]+ s \([0-9.]+ MB\/s\)/T s (R MB\/s)/; s/(aligned in|merged trace in) [0-9.]+ s/\1 T s/g' |
    awk '/^mergetrace: timings \(/ { t = 1; print; next }
         t && /^  / { gsub(/[0-9]+\.[0-9]+/, "T"); gsub(/  +/, " "); print; next }
         { t = 0; print }'
}

# run_side SIDE BIN ARGS...: one run into $out, results kept in $tmp/res/SIDE.
run_side() {
  local bin=$2 d="$tmp/res/$1" rc=0
  shift 2
  ln -sfn "$bin" "$exe"
  rm -rf "$out" "$d"
  mkdir -p "$d"
  "${launch[@]}" "$exe" -o "$out" "$@" >"$tmp/run/stdout" 2>"$tmp/run/stderr" </dev/null || rc=$?
  echo "$rc" >"$d/exit code"
  mask <"$tmp/run/stdout" >"$d/stdout"
  mask <"$tmp/run/stderr" >"$d/stderr"
  if [ -d "$out" ]; then
    (cd "$out" && find . -print | LC_ALL=C sort) >"$d/files written"
    local f
    for f in report.json report.html merged.json; do
      [ -f "$out/$f" ] && mv "$out/$f" "$d/$f"
    done
    if [ -f "$out/merged.json.gz" ]; then
      gzip -dc "$out/merged.json.gz" >"$d/merged.json.gz (inflated)" 2>&1 ||
        echo "gzip -dc failed with $?" >>"$d/merged.json.gz (inflated)"
    fi
  else
    echo "(no output directory)" >"$d/files written"
  fi
  rm -rf "$out"
}

passed=0 failed=0
# job NAME ARGS...: run the old binary, then the new one, and compare.
job() {
  local name=$1 f diffs=()
  shift
  run_side old "$old_bin" "$@"
  run_side new "$new_bin" "$@"
  for f in "exit code" stdout stderr "files written" report.json report.html merged.json "merged.json.gz (inflated)"; do
    if [ -e "$tmp/res/old/$f" ] || [ -e "$tmp/res/new/$f" ]; then
      cmp -s "$tmp/res/old/$f" "$tmp/res/new/$f" 2>/dev/null || diffs+=("$f")
    fi
  done
  if [ ${#diffs[@]} = 0 ]; then
    echo "same  $name"
    passed=$((passed + 1))
  else
    local IFS=,
    echo "DIFF  $name: ${diffs[*]}"
    unset IFS
    for f in "${diffs[@]}"; do
      { cmp "$tmp/res/old/$f" "$tmp/res/new/$f" 2>&1 || true; } | sed 's/^/        /'
      { diff "$tmp/res/old/$f" "$tmp/res/new/$f" 2>&1 || true; } | head -n 6 | cut -c1-160 | sed 's/^/        /'
    done
    failed=$((failed + 1))
  fi
  rm -rf "$tmp/res/old" "$tmp/res/new"
}

start=$SECONDS

# Pass 1: default options (all three outputs, gzip merged trace).
for d in sample_traces/dp4-old sample_traces/dp8 sample_traces/pp8; do
  job "$d" "$d"
done
# Some of these are bad inputs on purpose: then exit code and stderr count.
for d in tests/data/*/; do
  d=${d%/}
  job "$d" "$d"
done

if [ -d "$corpus" ]; then
  corpus=$(cd "$corpus" && pwd)
  # Every trace alone. Left out: the straggler study's result files
  # (result/ms/mw-ST.json: numbers, not events). Its timelines and
  # nsightful's nsys conversion are Chrome traces that mergetrace loads, so
  # they stay.
  while IFS= read -r f; do
    job "corpus/${f#"$corpus"/}" "$f"
  done < <(find "$corpus" \( -name '*.json' -o -name '*.json.gz' \) -type f |
    grep -v -E '/ByteDance-Seed__StragglerAnalysis/data/(result|ms|mw)-ST\.json$' | LC_ALL=C sort)
  # The multi-rank sets together.
  dlrm="$corpus/facebookresearch__param/et_replay/tests/inputs/dlrm_kineto.tar.gz.extracted/dlrm_kineto"
  hta="$corpus/facebookresearch__HolisticTraceAnalysis/tests/data/trace_filter"
  job "corpus set: param dlrm 8 ranks" "$dlrm"
  job "corpus set: hta sampled_rank-0,1" "$hta/sampled_rank-0.json.gz" "$hta/sampled_rank-1.json.gz"
  job "corpus set: dlrm --ranks 0-3 --merged-format json --ref-rank 2" --ranks 0-3 --merged-format json --ref-rank 2 "$dlrm"
  job "corpus set: hta --no-drift --gpu-only" --no-drift --gpu-only "$hta/sampled_rank-0.json.gz" "$hta/sampled_rank-1.json.gz"
  job "corpus: -r param (exit 2: a file with no rank)" -r "$corpus/facebookresearch__param"
else
  echo "note: no corpus at $corpus; corpus jobs skipped" >&2
fi

# Pass 2: option variants, for the other writers and the cross-rank and
# pipeline passes.
printf 'train.json 0\neval.json 1\n' >"$tmp/rank-map"
set -f # no globbing of the arguments below (ProfilerStep#[0-9]+)
while IFS='|' read -r name args; do
  case "$name" in '' | '#'*) continue ;; esac
  # shellcheck disable=SC2086  # the arguments are split on spaces on purpose
  job "variant: $name" $args
done <<EOF
dp8 json writer|--merged-format json sample_traces/dp8
pp8 json writer|--merged-format json sample_traces/pp8
dp4-old json writer no align|--no-align --merged-format json sample_traces/dp4-old
dp8 ranks window steps gpu-only|--ranks 0-3,6 --window #8:#10 --gpu-only sample_traces/dp8
dp8 window seconds json writer|--window 0.005:0.015 --merged-format json sample_traces/dp8
dp8 ref-rank 5 no-drift|--ref-rank 5 --no-drift sample_traces/dp8
dp8 report on stdout|--json --no-merge sample_traces/dp8
dp8 no-html colour|--no-html --color always sample_traces/dp8
dp8 gates (fail)|--gate straggler_wait_pct<=1 --gate alignment_p99_us<=5 sample_traces/dp8
dp8 timings|--timings sample_traces/dp8
dp4-old analysis options|--kernel-wait-us 5 --project-ops --top-kernels 3 sample_traces/dp4-old
pp8 pp 2 warmup 2|--pp 2 --warmup 2 sample_traces/pp8
pp8 pp-stages chunk|--pp-stages 0-3,4-7 --chunk ProfilerStep#[0-9]+ sample_traces/pp8
pp8 pp-stages joined ranks|--pp-stages 0+1+2+3,4+5+6+7 --warmup 0 sample_traces/pp8
pp8 annotation stages|--stage fwd0=forward@0-3 --stage fwd1=forward@4-7 --warmup 2 sample_traces/pp8
pp8 gates (pass)|--gate overlap>=0.9 --gate period_p99_us<=5000 --gate alignment_p99_us<=5 sample_traces/pp8
pp8 gates (fail)|--gate overlap>=0.99 --gate idle_pct<=1 --gate straggler_wait_pct<=100 sample_traces/pp8
trunc strict|--strict tests/data/trunc
norank rank-map|--rank-map $tmp/rank-map tests/data/norank
nccl-mixed json writer|--merged-format json tests/data/nccl-mixed
nccl-only report on stdout|--json tests/data/nccl-only
tiny window no match (usage error)|--window #100:#200 tests/data/tiny
EOF
set +f

echo "$passed passed, $failed failed ($((SECONDS - start)) s)"
[ "$failed" = 0 ]
