# Shared by the shell tests that run the program under mpirun
# (tests/mpi/*.sh, tests/fault/run_fault_tests.sh): Open MPI as root and on
# one machine, no leak reports for Open MPI's own allocations, and the
# pass/fail counting with the closing "N passed, N failed" line ctest reads.
# Sourced, not run.
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
export OMPI_MCA_btl_vader_single_copy_mechanism=none
export ASAN_OPTIONS=detect_leaks=0
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
check() { if "$@"; then ok; else bad "$*"; fi; }
# The last command of a test: the summary and the exit status.
harness_end() {
    echo "$pass passed, $fail failed"
    [ "$fail" = 0 ]
}
