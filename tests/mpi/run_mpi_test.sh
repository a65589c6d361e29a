#!/usr/bin/env bash
# MPI integration test: mergetrace under mpirun -n NP writes the same
# report.json as one process, on the sample sets and the real 8-rank DLRM
# set, the match sharded over the processes where every row's key is its
# own (timings.json match_processes); its merged trace holds every input
# event exactly once on the corrected clock (tests/merge/check_merged.py);
# a bad file on one process ends every process with one message and exit
# code 2, within seconds; of two bad files, the one of the lower index is
# named in every run.
# Usage: run_mpi_test.sh MPIEXEC NP MERGETRACE REPO_ROOT WORKDIR
set -u
mpiexec=$1 np=$2 bin=$3 root=$4 work=$5
rm -rf "$work" && mkdir -p "$work"
. "$(dirname "$0")/harness.sh" # Open MPI set-up, ok/bad/check, harness_end
cd "$root" || exit 1
run() { timeout 120 "$mpiexec" --oversubscribe -n "$@"; }

sets="tests/data/tiny"
for s in sample_traces/dp8 sample_traces/pp8 sample_traces/dp4-old; do [ -d "$s" ] && sets="$sets $s"; done
dlrm="$root/../shared/corpus/facebookresearch__param/et_replay/tests/inputs/dlrm_kineto.tar.gz.extracted/dlrm_kineto"
[ -d "$dlrm" ] && sets="$sets $dlrm"

i=0
for s in $sets; do
  i=$((i + 1))
  fmt=gzip
  [ $((i % 2)) = 0 ] && fmt=json
  run 1 "$bin" --no-progress -q --merged-format $fmt -o "$work/ref$i" "$s" 2>"$work/ref$i.err"
  check test $? = 0
  run "$np" "$bin" --no-progress -q --timings --merged-format $fmt -o "$work/np$i" "$s" 2>"$work/np$i.err"
  check test $? = 0
  # dp8 and pp8 key every row by itself (Comms Id, group size): their match
  # is sharded over the processes; dp4-old's rows are keyed by stream and
  # order: matched on process 0 alone
  want=
  case $s in
  */dp8 | */pp8) want=$np ;;
  */dp4-old) want=1 ;;
  esac
  [ -n "$want" ] && check grep -q "\"match_processes\": $want," "$work/np$i/timings.json"
  if ! cmp -s "$work/ref$i/report.json" "$work/np$i/report.json"; then
    echo "FAIL: report.json of -n $np differs from -n 1 on $s"
    diff "$work/ref$i/report.json" "$work/np$i/report.json" | head -20
    fail=$((fail + 1))
  else
    pass=$((pass + 1))
  fi
  merged=$(ls "$work/np$i"/merged.json* 2>/dev/null | head -1)
  check test -n "$merged"
  # every input event exactly once, on the corrected clock
  python3 - "$work/np$i/report.json" "$work/clocks$i.json" <<'PY'
import json, sys
from decimal import Decimal
r = json.load(open(sys.argv[1]), parse_float=Decimal)  # anchor_us needs every digit
paths = {i["rank"]: i["path"] for i in r["inputs"]}
out = {"ranks": [{"rank": c["rank"], "path": paths[c["rank"]],
                  "offset_ns": int(Decimal(str(c["offset_us"])) * 1000),
                  "drift_ppm": float(c["drift_ppm"]),
                  "anchor_ns": int(Decimal(str(c["anchor_us"])) * 1000)} for c in r["clock"]["ranks"]]}
json.dump(out, open(sys.argv[2], "w"))
PY
  check python3 tests/merge/check_merged.py "$merged" --input "$s" --clocks "$work/clocks$i.json" \
    --report "$work/np$i/report.json"
  check test "$(ls -a "$work/np$i" | grep -c tmp)" = 0
done

# A bad file among good ones: every process ends, one message, exit 2.
rm -rf "$work/badset" && mkdir -p "$work/badset"
cp tests/data/tiny/*.json "$work/badset/"
for r in 2 3 4 6 7; do sed "s/\"rank\": 0/\"rank\": $r/" tests/data/tiny/rank-0.json >"$work/badset/rank-$r.json"; done
printf '{"traceEvents": [{"ph": "X", "ts": 1}, oops]}' >"$work/badset/rank-5.json"
start=$(date +%s)
run "$np" "$bin" --no-progress -o "$work/badout" "$work/badset" >"$work/bad.out" 2>"$work/bad.err"
code=$?
took=$(($(date +%s) - start))
check test "$code" = 2
check test "$(grep -c 'mergetrace:' "$work/bad.err")" = 1
check grep -q 'rank-5.json: rank 5: byte 39 (line 1:40)' "$work/bad.err"
check test "$took" -lt 60
check test ! -e "$work/badout/report.json"

# Two bad files: the one of the lowest index is named, every run, though a
# process that owns the other (small, bad at byte 1) fails long before the
# big one's error (at its very end) is reached.
rm -rf "$work/bad2" && mkdir -p "$work/bad2"
cp "$work/badset"/rank-[2-7].json "$work/bad2/"
rm "$work/bad2/rank-5.json"
python3 -c '
import sys
ev = ",".join("{\"ph\": \"X\", \"name\": \"k\", \"ts\": %d, \"dur\": 1, \"pid\": 0, \"tid\": 7}" % i for i in range(400000))
open(sys.argv[1], "w").write("{\"traceEvents\": [" + ev + ", oops]}")
' "$work/bad2/rank-0.json"
printf 'x' >"$work/bad2/rank-1.json"
for k in 1 2 3; do
  run "$np" "$bin" --no-progress -o "$work/bad2out" "$work/bad2" >"$work/bad2.out" 2>"$work/bad2.err"
  check test $? = 2
  check test "$(grep -c 'mergetrace:' "$work/bad2.err")" = 1
  check grep -q 'rank-0.json: rank 0: byte' "$work/bad2.err"
done
# by hand, the same over worker threads
"$bin" -j "$np" --no-progress -o "$work/bad2out" "$work/bad2" >"$work/bad2.out" 2>"$work/bad2.err"
check test $? = 2
check grep -q 'rank-0.json: rank 0: byte' "$work/bad2.err"
harness_end
