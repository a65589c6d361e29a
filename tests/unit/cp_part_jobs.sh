#!/bin/sh
# mergetrace_partcheck (tests/unit/partcheck_main.c) on the generated dp
# and pp jobs (sample_traces: the pp one as a 2-stage pipeline, its
# replays carried), the real gloo4 and the slow-GPU straggler case: every
# critical-path sweep replayed in supersteps on 2 and 3 virtual processes
# must give the sweep's values to the bit. Usage: cp_part_jobs.sh
# PARTCHECK SOURCE_DIR WORK_DIR
set -u
bin=$1 src=$2 work=$3
rm -rf "$work" && mkdir -p "$work" || exit 1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
bad=0 n=0
one() { # NAME ARGS...
    name=$1
    shift
    n=$((n + 1))
    if "$bin" -q --no-progress --no-merge -o "$work/$name" "$@" > "$work/$name.out" 2> "$work/$name.err"; then
        grep '^cp_part_check' "$work/$name.err" | sed "s/^/$name: /"
    else
        echo "$name: FAILED"
        cat "$work/$name.err"
        bad=$((bad + 1))
    fi
}
one dp8 "$src/sample_traces/dp8"
one pp8 --pp 2 "$src/sample_traces/pp8"
one gloo4 "$src/tests/data/real/gloo4"
case_dir="$src/../shared/cases/slow-gpu-straggler/with-straggler"
if [ -d "$case_dir" ]; then
    one slow_gpu "$case_dir"
fi
echo "cp_part_jobs: $n jobs, $bad failed"
[ "$bad" -eq 0 ]
