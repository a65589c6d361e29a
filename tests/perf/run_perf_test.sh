#!/usr/bin/env bash
# The fast paths give the same answers as the plain ones (no timings are
# checked). On a small job from the benchmark's generator (scripts/bench's
# options, ~1 MB per rank):
#  - report.json is byte-identical between two -n 1 runs, -n 2 and -n 2 on
#    the portable-scanner build (for gzip inputs it differs only in the input
#    paths and compressed sizes); the merged trace is byte-identical for the
#    same process count (run to run, portable vs SSE2, gzip vs plain) and
#    holds the same events for -n 1 and -n 2; the gzip merged trace of -n 1
#    deflated on a helper thread (--bind-to none) and in line (--bind-to
#    core) inflates to the plain one, and timings.json says which was used;
#  - timings.json holds every phase, the process count and the job's size
#    (JSON bytes = the files' sizes), and report.json holds no timing;
#  - the loader's tables (trace_digest) are identical with the SSE2 and the
#    portable scanner on the generated job, the sample sets, tests/data and
#    every fuzz corpus input (errors included), and between plain and gzip.
# Usage: run_perf_test.sh MPIEXEC MERGETRACE MERGETRACE_PORTABLE DIGEST DIGEST_PORTABLE REPO_ROOT WORKDIR
set -u
mpiexec=$1 bin=$2 pbin=$3 dig=$4 pdig=$5 root=$6 work=$7
rm -rf "$work" && mkdir -p "$work"
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
export OMPI_MCA_btl_vader_single_copy_mechanism=none
export ASAN_OPTIONS=detect_leaks=0 # Open MPI's own allocations are not ours
cd "$root" || exit 1
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
same() { # same FILE_A FILE_B WHAT
  if cmp -s "$1" "$2"; then ok; else bad "$3: $1 and $2 differ"; diff "$1" "$2" | head -10; fi
}
# The merged trace holds each rank's events as one block, blocks in the
# order of the processes that wrote them, so with more processes the blocks
# come in another order: compare the events (one per line) as sorted lists.
same_events() { # same_events MERGED_A MERGED_B WHAT
  LC_ALL=C sort "$1" >"$1.sorted" && LC_ALL=C sort "$2" >"$2.sorted"
  if [ "$(wc -l <"$1.sorted")" -gt 1000 ] && cmp -s "$1.sorted" "$2.sorted"; then ok
  else bad "$3: $1 and $2 hold different events"; diff "$1.sorted" "$2.sorted" | head -6; fi
}

job=$work/job
python3 scripts/gen_traces.py --kind dp --ranks 8 --seed 7 --size-mb 1 --format new --indent 2 \
  --no-collective-truth --quiet --out "$job" || { echo "FAIL: generator"; exit 1; }
mkdir -p "$job/gz"
for f in "$job"/rank-*.json; do gzip -6 -c "$f" >"$job/gz/$(basename "$f").gz"; done

run() { # run NP BIN OUT INPUTS...
  local np=$1 b=$2 out=$3
  shift 3
  if timeout 120 "$mpiexec" --oversubscribe -n "$np" "$b" --timings --no-progress -q --merged-format json \
      -o "$out" "$@" 2>"$out.err"; then
    ok
  else
    bad "mpirun -n $np $(basename "$b") -o $out"
    cat "$out.err"
  fi
}
run 1 "$bin" "$work/n1" "$job"/rank-*.json
run 1 "$bin" "$work/n1b" "$job"/rank-*.json
run 2 "$bin" "$work/n2" "$job"/rank-*.json
run 2 "$pbin" "$work/p2" "$job"/rank-*.json
run 1 "$bin" "$work/gz1" "$job"/gz/rank-*.json.gz
run 2 "$bin" "$work/gz2" "$job"/gz/rank-*.json.gz

for o in n1b n2 p2; do
  same "$work/n1/report.json" "$work/$o/report.json" "report.json ($o vs n1)"
done
same "$work/n2/merged.json" "$work/p2/merged.json" "merged trace (-n 2, portable vs SSE2)"
same "$work/n1/merged.json" "$work/n1b/merged.json" "merged trace (-n 1, run to run)"
same "$work/n1/merged.json" "$work/gz1/merged.json" "merged trace (-n 1, gzip vs plain inputs)"
same_events "$work/n2/merged.json" "$work/gz2/merged.json" "merged trace events (-n 2, gzip vs plain inputs: files are shared by their compressed size)"
same "$work/gz1/report.json" "$work/gz2/report.json" "report.json (gzip -n 2 vs -n 1)"
same_events "$work/n1/merged.json" "$work/n2/merged.json" "merged trace events (-n 2 vs -n 1)"

# gzip vs plain inputs: the same report but for paths and compressed sizes;
# timings.json against the files themselves.
python3 - "$work" "$job" <<'PY' && ok || bad "report.json gzip vs plain, or timings.json"
import glob, json, os, sys
work, job = sys.argv[1], sys.argv[2]
def strip(path):
    r = json.load(open(path))
    for i in r["inputs"]:
        assert i["path"].endswith(".json") or i["path"].endswith(".json.gz"), i["path"]
        i.pop("path"); i.pop("bytes")
    return r
a, b = strip(work + "/n1/report.json"), strip(work + "/gz1/report.json")
assert a == b, "report.json of gzip inputs differs beyond paths and sizes"
files = sorted(glob.glob(job + "/rank-*.json"))
size = sum(os.path.getsize(f) for f in files)
for run, np in (("n1", 1), ("n1b", 1), ("n2", 2), ("p2", 2), ("gz1", 1), ("gz2", 2)):
    t = json.load(open("%s/%s/timings.json" % (work, run)))
    r = json.load(open("%s/%s/report.json" % (work, run)))
    s = t["seconds"]
    phases = ["load", "parse", "rank_passes", "gather", "align", "match", "clock_fit", "cross_rank",
              "merged_write", "report", "total"]
    assert sorted(s) == sorted(phases), (run, sorted(s))
    assert all(v >= 0 for v in s.values()), (run, s)
    assert s["total"] >= s["load"] and s["total"] >= s["merged_write"], (run, s)
    assert t["processes"] == np and t["ranks"] == len(files), (run, t)
    assert t["json_bytes"] == size, (run, t["json_bytes"], size)
    assert t["events"] == sum(i["events"] for i in r["inputs"]) > 0, run
    assert t["peak_rss_bytes"] > 0 and 0 <= t["peak_rss_process"] < np, (run, t)
    assert t["largest_trace_bytes"] == max(os.path.getsize(f) for f in files), run
    # no timing in report.json (it stays the same from run to run): no key
    # of its names seconds, memory peaks or timings (keys, not the text:
    # the paths of the inputs are in it, and a checkout may be under any name)
    def keys(v):
        if isinstance(v, dict):
            for k, w in v.items():
                yield k
                yield from keys(w)
        elif isinstance(v, list):
            for w in v:
                yield from keys(w)
    bad = [k for k in keys(r) if "timings" in k or "seconds" in k or "rss" in k]
    assert not bad, (run, bad)
print("report.json gzip vs plain and timings.json: ok")
PY

# The gzip merged trace deflated on a helper thread (the program takes one
# when the process may run on two CPUs and the node has two per process:
# here with --bind-to none) holds the same JSON as deflated in line
# (--bind-to core: one CPU) and as the plain output. Compared inflated:
# igzip does not promise the same compressed bytes twice.
for b in core none; do
  if timeout 120 "$mpiexec" --oversubscribe --bind-to "$b" -n 1 "$bin" --timings --no-progress -q \
      -o "$work/z$b" "$job"/rank-*.json 2>"$work/z$b.err"; then ok
  else bad "mpirun --bind-to $b -n 1 (gzip merged output)"; cat "$work/z$b.err"; fi
done
for b in core none; do
  gzip -dc "$work/z$b/merged.json.gz" >"$work/z$b/merged.json" || bad "gzip -d of merged.json.gz (--bind-to $b)"
  same "$work/n1/merged.json" "$work/z$b/merged.json" "merged trace (gzip, --bind-to $b, vs plain output)"
done
python3 - "$work" <<'PY' && ok || bad "timings.json merged_deflate_threads"
import json, os, sys
work = sys.argv[1]
spare = len(os.sched_getaffinity(0)) >= 2 and os.cpu_count() >= 2
core = json.load(open(work + "/zcore/timings.json"))["merged_deflate_threads"]
none = json.load(open(work + "/znone/timings.json"))["merged_deflate_threads"]
assert core == 0, core
assert none == (1 if spare else 0), (none, spare)
print("merged_deflate_threads: bound %d, unbound %d (a core to spare: %s)" % (core, none, spare))
PY

# The loader's tables: SSE2 vs the portable scanner, on everything we have.
inputs=("$job"/rank-*.json "$job"/gz/rank-*.json.gz)
for f in sample_traces/*/rank-*.json tests/data/*/*.json tests/fuzz/corpus_loader/*; do
  [ -f "$f" ] && inputs+=("$f")
done
"$dig" "${inputs[@]}" >"$work/digest.sse2" 2>&1 || bad "trace_digest exited $?"
"$pdig" "${inputs[@]}" >"$work/digest.portable" 2>&1 || bad "trace_digest_portable exited $?"
# The portable build also inflates with zlib where the other may use ISA-L.
# A broken gzip input fails in both, but each inflater words it its own way
# (and may notice at another byte), so two gzip errors compare equal. And
# igzip is more lenient than zlib with a dynamic block whose Huffman code
# set is incomplete: zlib stops there ("invalid distances set"), igzip
# decodes on, and the bytes fail as JSON, or, in a copy cut before its
# trailer, even load. Such pairs (a zlib gzip error against anything from
# the other build, on a gzip input) are counted and listed, not failed;
# every other line must be identical.
python3 - "$work/digest.sse2" "$work/digest.portable" <<'PY' && ok || bad "loader tables, SSE2 + ISA-L vs portable scanner + zlib"
import sys
a = open(sys.argv[1]).read().splitlines()
b = open(sys.argv[2]).read().splitlines()
assert len(a) == len(b), (len(a), len(b))
def gz_error(line):
    return " error: " in line and ("gzip" in line or "inflate" in line)
lenient = []
for x, y in zip(a, b):
    path = x.split(" ", 1)[0]
    assert y.split(" ", 1)[0] == path, (x, y)
    if x == y or (gz_error(x) and gz_error(y)):
        continue
    with open(path, "rb") as f:
        is_gzip = f.read(2) == b"\x1f\x8b"
    if is_gzip and gz_error(y):
        lenient.append(path)
        continue
    sys.exit("differ:\n  %s\n  %s" % (x, y))
print("loader tables agree; %d broken gzip inputs that zlib rejects and igzip decodes on" % len(lenient))
for p in lenient:
    print("  " + p)
PY
n=$(wc -l <"$work/digest.sse2")
if [ "$n" -eq "${#inputs[@]}" ] && [ "$(grep -c ' events=' "$work/digest.sse2")" -ge 24 ] &&
   [ "$(grep -c ' error: ' "$work/digest.sse2")" -ge 1 ]; then ok; else bad "digest lines: $n for ${#inputs[@]} inputs"; fi
# the same tables from a plain file and its gzip copy
for r in 0 5; do
  a=$(grep -F "$job/rank-$r.json " "$work/digest.sse2" | cut -d' ' -f2-)
  b=$(grep -F "$job/gz/rank-$r.json.gz " "$work/digest.sse2" | cut -d' ' -f2-)
  if [ -n "$a" ] && [ "$a" = "$b" ]; then ok; else bad "rank-$r: plain and gzip tables differ ($a / $b)"; fi
done
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
