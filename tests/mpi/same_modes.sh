#!/usr/bin/env bash
# The two ways mergetrace runs write the same outputs: started by hand (no
# MPI launcher in the environment: one process that never initialises MPI,
# mpi/procs.c) against `mpirun -n 1`, `-n 2` and `-n 3` (MPI, MPI-IO; 3
# splits 8 ranks unevenly).
# For sample jobs in both merged formats, byte for byte: report.json,
# report.html (it holds the command line: every run has the same argv and
# output directory, moved aside after each run), the merged trace (gzip
# inflated and as written) and the files written; also for a two-process Nsight Systems
# export (read in one pass by one process, a part each by two); the summary on stdout of the run by hand equals that of
# `-n 1` but for wall times. The run by hand is one thread (MERGETRACE_JOBS=1;
# worker threads: jobs_same.sh) and has OMPI_MCA_pml set to a
# component that does not exist, which makes any MPI_Init fail: it passes
# only if MPI was never initialised. --help and --version likewise.
# Usage: same_modes.sh MPIEXEC MERGETRACE REPO_ROOT WORKDIR
set -u
mpiexec=$1 bin=$2 root=$3 work=$4
rm -rf "$work" && mkdir -p "$work"
. "$(dirname "$0")/harness.sh" # Open MPI set-up, ok/bad/check, harness_end
cd "$root" || exit 1
# Whatever launcher this test itself runs under, the run by hand sees none.
by_hand() {
  env -u OMPI_COMM_WORLD_SIZE -u OMPI_COMM_WORLD_RANK -u PMIX_RANK -u PMI_RANK -u PMI_SIZE -u PMI_FD \
    -u PMI_PORT -u SLURM_PROCID -u SLURM_STEP_ID -u PALS_RANKID -u ALPS_APP_PE -u MERGETRACE_MPI \
    MERGETRACE_JOBS=1 OMPI_MCA_pml=no_such_component timeout 60 "$@"
}
mask() { sed -E 's/[0-9]+\.[0-9]+ s \([0-9]+ MB\/s\)/T s (R MB\/s)/; s/(aligned in|merged trace in) [0-9.]+ s/\1 T s/g'; }
inflate() { python3 -c 'import gzip, sys; sys.stdout.buffer.write(gzip.open(sys.argv[1]).read())' "$1"; }

for what in --version --help; do
  if by_hand "$bin" $what >"$work/hand$what.out" && timeout 60 "$mpiexec" -n 1 "$bin" $what >"$work/np1$what.out" &&
    cmp -s "$work/hand$what.out" "$work/np1$what.out"; then ok; else bad "$what by hand vs mpirun -n 1"; fi
done

# The seed export with two GPU processes (tests/nsys/make_nsys_seeds.py):
# one process reads both of its parts in one pass per table, two read one
# part each. Left out when the build has no SQLite.
nsys=tests/fuzz/corpus_nsys/two_procs.sqlite
by_hand "$bin" -q --no-html -o "$work/probe" "$nsys" 2>&1 | grep -q "built without SQLite" && nsys=
rm -rf "$work/probe"

i=0
for s in sample_traces/dp8 sample_traces/pp8 sample_traces/dp4-old tests/data/tiny $nsys; do
  [ -e "$s" ] || continue
  for fmt in gzip json; do
    i=$((i + 1))
    args=(--no-progress --merged-format "$fmt" -o "$work/out" "$s")
    by_hand "$bin" "${args[@]}" >"$work/hand$i.stdout" 2>"$work/hand$i.err" || bad "by hand on $s ($(head -c 300 "$work/hand$i.err"))"
    mv "$work/out" "$work/hand$i"
    for np in 1 2 3; do
      timeout 120 "$mpiexec" --oversubscribe -n $np "$bin" "${args[@]}" >"$work/np$np-$i.stdout" 2>"$work/np$np-$i.err" ||
        bad "mpirun -n $np on $s"
      mv "$work/out" "$work/np$np-$i"
      for f in report.json report.html; do
        if cmp -s "$work/hand$i/$f" "$work/np$np-$i/$f"; then ok; else bad "$f by hand vs -n $np on $s ($fmt)"; fi
      done
      if [ "$fmt" = gzip ]; then m=merged.json.gz; else m=merged.json; fi
      if [ -f "$work/hand$i/$m" ] && [ "$fmt" = gzip ]; then
        inflate "$work/hand$i/$m" >"$work/hand$i.merged" && inflate "$work/np$np-$i/$m" >"$work/np$np-$i.merged"
      else
        cp "$work/hand$i/$m" "$work/hand$i.merged" 2>/dev/null
        cp "$work/np$np-$i/$m" "$work/np$np-$i.merged" 2>/dev/null
      fi
      # The same bytes at every -n: the ranks in rank order whatever
      # process wrote each (mpi/merged_io.h), gzip inflated and as written
      # (igzip's members the same whatever the compressor's address,
      # src/io/gzout.c; before that the header's member differed in about
      # one run of this test in four on the loaded 2-core VM)
      a="$work/hand$i.merged" b="$work/np$np-$i.merged"
      if [ -s "$a" ] && cmp -s "$a" "$b"; then ok; else bad "$m by hand vs -n $np on $s"; fi
      if cmp -s "$work/hand$i/$m" "$work/np$np-$i/$m"; then ok; else bad "$m bytes by hand vs -n $np on $s"; fi
      if [ "$(ls "$work/hand$i")" = "$(ls "$work/np$np-$i")" ]; then ok; else bad "files written by hand vs -n $np on $s"; fi
    done
    if cmp -s <(mask <"$work/hand$i.stdout") <(mask <"$work/np1-$i.stdout"); then ok; else
      bad "summary by hand vs -n 1 on $s"
      diff <(mask <"$work/hand$i.stdout") <(mask <"$work/np1-$i.stdout") | head -5
    fi
  done
done
harness_end
