#!/usr/bin/env bash
# --memory-budget: process 0 leaves the critical path out when its
# projected need with it is above the budget (mpi/job.c job_plan).
# Checked on sample_traces/dp8, by hand and under mpirun -n 2:
# - the rule at its edge: a budget equal to the projection (timings.json
#   "memory_plan".with_critical_path_bytes of a run without a limit) keeps
#   the steps, one byte less leaves them out; "none" keeps them;
# - a run that leaves them out has every other section of report.json
#   equal to the full run's, and one more warning, critical_path_skipped,
#   whose counts are the traces' own (GPU activities: kernel, gpu_memcpy
#   and gpu_memset events; rows: NCCL kernels, counted here from the JSON);
# - by hand and -n 2 give the same report.json (the -n 2 processes take
#   the activities out of their packed analyses before the gather);
# - report.html has the warning where its steps section would be (dp8's
#   864 GPU activities and 192 NCCL kernels, counted by hand from its JSON);
# - sizes that are not sizes are usage errors (exit 64).
# Usage: memory_budget.sh MPIEXEC MERGETRACE REPO_ROOT WORKDIR
set -u
mpiexec=$1 bin=$2 root=$3 work=$4
rm -rf "$work" && mkdir -p "$work"
. "$(dirname "$0")/harness.sh" # Open MPI set-up, ok/bad/check, harness_end
cd "$root" || exit 1
job=sample_traces/dp8
# one output directory for every run (report.json holds the command line's
# -o), moved aside after each
run() { # NAME NP ARGS...
  local name=$1 np=$2
  shift 2
  rm -rf "$work/out"
  if [ "$np" = 0 ]; then
    env -u OMPI_COMM_WORLD_SIZE -u OMPI_COMM_WORLD_RANK -u PMIX_RANK -u PMI_RANK -u PMI_SIZE -u MERGETRACE_MPI \
      timeout 60 "$bin" --no-progress -q --no-merge --no-html --timings -o "$work/out" "$@" $job 2>"$work/$name.err"
  else
    timeout 120 "$mpiexec" --oversubscribe -n "$np" "$bin" --no-progress -q --no-merge --no-html --timings \
      -o "$work/out" "$@" $job 2>"$work/$name.err"
  fi
  local rc=$?
  mv "$work/out" "$work/$name" 2>/dev/null
  return $rc
}
check run full 0 --memory-budget none
need=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["memory_plan"]["with_critical_path_bytes"])' \
  "$work/full/timings.json")
check run edge 0 --memory-budget $((need - 1))
check run above 0 --memory-budget "$need"
check run cut 0 --memory-budget 1K
check run cut_np2 2 --memory-budget 1K
check run auto_np2 2
if python3 - "$work" "$job" <<'PY'; then ok; else bad "report checks (above)"; fi
import glob, json, os, sys
work, job = sys.argv[1], sys.argv[2]
rep = lambda n: json.load(open(os.path.join(work, n, "report.json")))
tim = lambda n: json.load(open(os.path.join(work, n, "timings.json")))["memory_plan"]
errs = []
def want(cond, what):
    if not cond:
        errs.append(what)
full, edge, above, cut, cut2, auto = (rep(n) for n in ("full", "edge", "above", "cut", "cut_np2", "auto_np2"))
want("steps" in full and "steps" in above and "steps" in auto, "steps kept under no limit, at the projection, the default")
want("steps" not in edge and "steps" not in cut and "steps" not in cut2, "steps left out a byte below and under 1K")
want(tim("edge")["critical_path_left_out"] and not tim("above")["critical_path_left_out"], "timings.json says which")
want(tim("cut_np2")["budget_bytes"] == 1024 and tim("full")["budget_bytes"] == 0, "budget_bytes")
# the traces' own counts
acts = rows = 0
for f in glob.glob(os.path.join(job, "rank-*.json")):
    for e in json.load(open(f))["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
            acts += 1
            rows += e.get("cat") == "kernel" and "nccl" in e.get("name", "").lower()
want(tim("full")["gpu_activities"] == acts and tim("full")["rows"] == rows, "plan counts %s vs %d, %d" % (tim("full"), acts, rows))
w = [x for x in cut["warnings"] if x["code"] == "critical_path_skipped"]
want(len(w) == 1 and w[0]["rank"] is None, "one critical_path_skipped warning for the job")
want(w and ("(%d GPU activities, %d collective rows)" % (acts, rows)) in w[0]["message"], "its counts: %s" % w)
want([x for x in cut["warnings"] if x["code"] != "critical_path_skipped"] == full["warnings"], "other warnings equal")
for k in full:
    if k in ("steps", "warnings", "command_line"):
        continue
    want(k in cut and cut[k] == full[k], "section %s equal without the critical path" % k)
want(set(cut) == set(full) - {"steps"}, "the same sections but steps")
want(cut == cut2, "by hand and -n 2 equal")
for e in errs:
    print("FAIL:", e)
sys.exit(1 if errs else 0)
PY
for v in 12X 0 -5 1.5.5 KB "" 0x10 " 16G" inf 16GB; do
  timeout 60 "$bin" --no-progress -q --memory-budget "$v" -o "$work/bad" $job 2>"$work/bad.err"
  rc=$?
  if [ $rc = 64 ] && grep -q -- "--memory-budget" "$work/bad.err"; then ok; else bad "--memory-budget '$v': exit $rc"; fi
done
check run lower 0 --memory-budget 2g
# report.html says it where the steps section would be
rm -rf "$work/html"
timeout 60 "$bin" --no-progress -q --no-merge --memory-budget 1K -o "$work/html" $job 2>/dev/null
if grep -q '<section id="steps"><h2>Steps and critical path</h2>' "$work/html/report.html" &&
  grep -q 'left out: with them process 0 would need about [0-9.]* [KMG]iB more .*(864 GPU activities, 192 collective rows)' \
    "$work/html/report.html"; then ok; else bad "report.html: the steps section's note"; fi
# the terminal says it in its first line (issue 43: a last resort, stated
# first), and again among the warnings
timeout 60 "$bin" --no-progress --no-merge --color=never --memory-budget 1K -o "$work/first" $job >"$work/first.out" 2>&1
if head -1 "$work/first.out" | grep -q '^steps, critical path and what-ifs left out: with them process 0 would need' &&
  [ "$(grep -c 'what-ifs left out' "$work/first.out")" = 2 ]; then ok; else bad "the terminal's first line: $(head -1 "$work/first.out")"; fi
harness_end
