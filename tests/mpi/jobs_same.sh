#!/usr/bin/env bash
# A run by hand on worker threads (-j N, mpi/procs.c procs_run_threads)
# writes the same outputs as -j 1 and as `mpirun -n 2`, byte for byte:
# report.json, report.html (every run has the same argv but -j, which the
# command line in the outputs leaves out, and the same output directory,
# moved aside after each run) and the merged trace, plain JSON, and gzip
# both inflated and as written (the ranks in rank order whatever process
# merged each, mpi/merged_io.h; the same compressed bytes whatever the
# compressor's address, src/io/gzout.c: before that, about 1 run in 300
# had another header member),
# at -j 1, 2, 3 (3 splits 8 ranks unevenly) and under mpirun -n 2, on the
# sample jobs, an 8-rank corpus job (param's DLRM traces) and a generated
# 12-rank job. A bad trace on one worker: the same one-line error and exit
# code at -j 1, -j 3 and under mpirun -n 3, no hang (timeout), and the
# outputs of an earlier run left as they were. A 1-file job at -j 4 runs on
# one thread (its summary says "1 process"), and the summary names the
# worker threads when there are some.
# Usage: jobs_same.sh MPIEXEC MERGETRACE REPO_ROOT WORKDIR [CORPUS_DIR]
set -u
mpiexec=$1 bin=$2 root=$3 work=$4 corpus=${5:-}
rm -rf "$work" && mkdir -p "$work"
. "$(dirname "$0")/harness.sh" # Open MPI set-up, ok/bad/check, harness_end
cd "$root" || exit 1
inflate() { python3 -c 'import gzip, sys; sys.stdout.buffer.write(gzip.open(sys.argv[1]).read())' "$1"; }
by_hand() {
  env -u OMPI_COMM_WORLD_SIZE -u OMPI_COMM_WORLD_RANK -u PMIX_RANK -u PMI_RANK -u PMI_SIZE -u PMI_FD \
    -u PMI_PORT -u SLURM_PROCID -u SLURM_STEP_ID -u PALS_RANKID -u ALPS_APP_PE -u MERGETRACE_MPI \
    -u MERGETRACE_JOBS OMPI_MCA_pml=no_such_component timeout 120 "$@"
}

python3 scripts/gen_traces.py --ranks 12 --seed 7 --steps 3 --out "$work/gen12" --gzip --quiet >/dev/null ||
  bad "gen_traces.py"
sets=(sample_traces/dp8 sample_traces/pp8 "$work/gen12")
dlrm=$corpus/facebookresearch__param/et_replay/tests/inputs/dlrm_kineto.tar.gz.extracted/dlrm_kineto
[ -n "$corpus" ] && [ -d "$dlrm" ] && sets+=("$dlrm")

i=0
for s in "${sets[@]}"; do
  for fmt in gzip json; do
    i=$((i + 1))
    if [ "$fmt" = gzip ]; then m=merged.json.gz; else m=merged.json; fi
    args=(--no-progress --merged-format "$fmt" -o "$work/out" "$s")
    for run in j1 j2 j3 np2; do
      case $run in
        j*) by_hand "$bin" -j "${run#j}" "${args[@]}" >"$work/$run-$i.stdout" 2>"$work/$run-$i.err" ;;
        np2) timeout 120 "$mpiexec" --oversubscribe -n 2 "$bin" "${args[@]}" >"$work/$run-$i.stdout" 2>"$work/$run-$i.err" ;;
      esac
      rc=$?
      [ $rc = 0 ] || bad "$run on $s ($fmt): exit $rc: $(head -c 300 "$work/$run-$i.err")"
      mv "$work/out" "$work/$run-$i"
    done
    [ -s "$work/j1-$i/$m" ] || bad "no $m at -j 1 on $s"
    for run in j1 j2 j3 np2; do
      if [ "$fmt" = gzip ]; then inflate "$work/$run-$i/$m" >"$work/$run-$i.merged"; else
        cp "$work/$run-$i/$m" "$work/$run-$i.merged"; fi
    done
    for run in j2 j3 np2; do
      for f in report.json report.html; do
        if cmp -s "$work/j1-$i/$f" "$work/$run-$i/$f"; then ok; else bad "$f at -j 1 vs $run on $s ($fmt)"; fi
      done
      if cmp -s "$work/j1-$i.merged" "$work/$run-$i.merged"; then ok; else bad "$m at -j 1 vs $run on $s"; fi
      if cmp -s "$work/j1-$i/$m" "$work/$run-$i/$m"; then ok; else bad "$m bytes at -j 1 vs $run on $s"; fi
      if [ "$(ls "$work/j1-$i")" = "$(ls "$work/$run-$i")" ]; then ok; else bad "files at -j 1 vs $run on $s"; fi
    done
    # the summary names what ran: one process, worker threads, MPI processes
    check grep -q ", 1 process$" "$work/j1-$i.stdout"
    check grep -q ", 3 worker threads$" "$work/j3-$i.stdout"
    check grep -q ", 2 processes$" "$work/np2-$i.stdout"
  done
done

# One trace file: no threads whatever -j asks.
by_hand "$bin" --no-progress -j 4 -o "$work/one" tests/data/tiny/rank-0.json >"$work/one.stdout" 2>&1 ||
  bad "one file at -j 4: $(head -c 300 "$work/one.stdout")"
check grep -q "rank of world size .*, 1 process$" "$work/one.stdout"

# A bad trace among good ones (it lands on a worker other than 0 at -j 3):
# one line naming it, exit 2, everywhere the same; no hang; an earlier
# run's outputs in -o untouched.
mkdir -p "$work/badjob"
cp sample_traces/dp8/*.json "$work/badjob/"
cp tests/data/bad/syntax.json "$work/badjob/rank5_bad.json"
rm -rf "$work/prev" && cp -r "$work/j1-1" "$work/prev"
for run in j1 j3 np3; do
  case $run in
    j*) by_hand "$bin" -q -j "${run#j}" -o "$work/prev" "$work/badjob" >"$work/bad-$run.out" 2>"$work/bad-$run.err" ;;
    np3) timeout 120 "$mpiexec" --oversubscribe -n 3 "$bin" -q -o "$work/prev" "$work/badjob" >"$work/bad-$run.out" 2>"$work/bad-$run.err" ;;
  esac
  rc=$?
  if [ $rc = 2 ]; then ok; else bad "bad trace at $run: exit $rc, expected 2"; fi
  # (mpirun adds its own lines about the exit code: the program's are ours)
  grep "^mergetrace: " "$work/bad-$run.err" >"$work/bad-$run.ours"
  if [ "$(wc -l <"$work/bad-$run.ours")" = 1 ] && grep -q "rank5_bad.json: rank 5: byte 40 (line 2:23): invalid JSON" \
    "$work/bad-$run.ours"; then ok; else
    bad "bad trace at $run: $(head -c 400 "$work/bad-$run.err")"
  fi
  if cmp -s "$work/bad-j1.ours" "$work/bad-$run.ours"; then ok; else bad "bad trace: -j 1 vs $run said something else"; fi
  for f in report.json report.html merged.json.gz; do
    check cmp -s "$work/j1-1/$f" "$work/prev/$f"
  done
done
harness_end
