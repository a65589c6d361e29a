#!/usr/bin/env bash
# --baseline with a directory of traces (issue 21), by hand (one process,
# no MPI) and under mpirun -n 2 and -n 3:
#  1. the same compare.json (but its "baseline" path) as two runs: the
#     baseline's traces analysed first into OUT/report.json, then
#     --baseline OUT/report.json; and baseline/report.json of -o equal to
#     that OUT/report.json but for "merged" (the baseline's merged trace is
#     not written); on two generated jobs (one kernel 20 % slower);
#  2. a bad trace in the baseline's directory: exit 2 on every process
#     count within the timeout (no hang), one "mergetrace:" line, naming
#     the baseline and the file;
#  3. a baseline directory without traces: exit 2, one line saying so;
#  4. later runs into the same -o: --baseline OUT/baseline (the report
#     written by the earlier run) keeps it and compares the same; a saved
#     report as the baseline removes baseline/ of the earlier run; no
#     --baseline removes compare.json.
# Usage: baseline_dir.sh MPIEXEC MERGETRACE REPO_ROOT WORKDIR
set -u
mpiexec=$1 bin=$2 root=$3 work=$4
rm -rf "$work" && mkdir -p "$work" && work=$(cd "$work" && pwd)
. "$(dirname "$0")/harness.sh" # Open MPI set-up, ok/bad/check, harness_end
cd "$root" || exit 1
PP=(--kind pp --ranks 4 --pp-stages 2 --chunks 20 --seed 7)
python3 scripts/gen_traces.py --quiet --out "$work/a" "${PP[@]}" || exit 1
python3 scripts/gen_traces.py --quiet --out "$work/b" "${PP[@]}" --slow-kernel gemm_bf16:1.2 || exit 1
# launch NP ARGS...: by hand for NP 0, else under mpirun -n NP; within 60 s
launch() {
  local np=$1; shift
  if [ "$np" = 0 ]; then
    timeout -k 5 60 "$bin" --no-progress -q "$@"
  else
    timeout -k 5 60 "$mpiexec" --oversubscribe -n "$np" "$bin" --no-progress -q "$@"
  fi
}
# same_json A B [KEY...]: the two JSON files equal once KEYs are removed
same_json() {
  python3 - "$@" <<'EOF'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for k in sys.argv[3:]:
    a.pop(k, None)
    b.pop(k, None)
sys.exit(0 if a == b else 1)
EOF
}

# ---- 1. one run with the traces == two runs ----
timeout 60 "$bin" --no-progress -q --no-merge -o "$work/two-a" "$work/a" || bad "analysing the baseline alone"
timeout 60 "$bin" --no-progress -q --no-merge -o "$work/two-b" --baseline "$work/two-a/report.json" "$work/b" ||
  bad "two runs: the comparison"
for np in 0 2 3; do
  out="$work/one-$np"
  launch "$np" --no-merge -o "$out" --baseline "$work/a" "$work/b" 2>"$out.err"
  code=$?
  check test "$code" = 0
  if same_json "$work/two-b/compare.json" "$out/compare.json" baseline; then ok; else
    bad "np $np: compare.json differs from the two runs'"
  fi
  check grep -q "\"baseline\": \"$out/baseline/report.json\"" "$out/compare.json"
  if same_json "$work/two-a/report.json" "$out/baseline/report.json" merged; then ok; else
    bad "np $np: baseline/report.json differs from the baseline's own run"
  fi
  check test ! -e "$out/baseline/merged.json.gz"
done

# ---- 2. a bad trace in the baseline: every process ends, one line ----
mkdir -p "$work/bad"
cp "$work/a"/rank-*.json "$work/bad/"
python3 - "$work/bad/rank-1.json" <<'EOF'
import sys
p = sys.argv[1]
s = open(p).read()
i = s.index('"ts"', len(s) // 2)
open(p, "w").write(s[:i] + '"ts": nope' + s[i + 4:])
EOF
for np in 0 2 3; do
  launch "$np" --no-merge -o "$work/bad-$np" --baseline "$work/bad" "$work/b" >/dev/null 2>"$work/bad-$np.err"
  code=$?
  lines=$(grep -c '^mergetrace:' "$work/bad-$np.err")
  if [ "$code" = 2 ] && [ "$lines" = 1 ] &&
    grep -q "^mergetrace: --baseline: $work/bad/rank-1.json: rank 1: byte [0-9]* (line [0-9]*:[0-9]*): " \
      "$work/bad-$np.err"; then ok; else
    bad "np $np, a bad baseline trace: exit $code, $lines lines: $(grep '^mergetrace' "$work/bad-$np.err")"
  fi
  check test ! -e "$work/bad-$np/compare.json"
done

# ---- 3. no traces in the baseline's directory ----
mkdir -p "$work/none"
for np in 0 2; do
  launch "$np" -o "$work/none-$np" --baseline "$work/none" "$work/b" 2>"$work/none-$np.err"
  code=$?
  if [ "$code" = 2 ] && [ "$(grep -c '^mergetrace:' "$work/none-$np.err")" = 1 ] &&
    grep -q "^mergetrace: --baseline: $work/none: no \*.json" "$work/none-$np.err"; then ok; else
    bad "np $np, an empty baseline directory: exit $code: $(cat "$work/none-$np.err")"
  fi
done

# ---- 4. later runs into the same -o: no stale baseline/ or compare.json,
# but the baseline this run read stays ----
timeout 60 "$bin" --no-progress -q --no-merge -o "$work/one-3" --baseline "$work/one-3/baseline" "$work/b"
check test -s "$work/one-3/baseline/report.json"
check grep -q "\"baseline\": \"$work/one-3/baseline/report.json\"" "$work/one-3/compare.json"
if same_json "$work/two-b/compare.json" "$work/one-3/compare.json" baseline; then ok; else
  bad "--baseline OUT/baseline: compare.json differs from the two runs'"
fi
timeout 60 "$bin" --no-progress -q --no-merge -o "$work/one-0" --baseline "$work/two-a" "$work/b"
check test ! -e "$work/one-0/baseline"
check grep -q "\"baseline\": \"$work/two-a/report.json\"" "$work/one-0/compare.json"
timeout 60 "$bin" --no-progress -q --no-merge -o "$work/one-0" "$work/b"
check test ! -e "$work/one-0/compare.json"

harness_end
