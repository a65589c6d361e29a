#!/bin/sh
# The NCCL profiler plugin exports exactly ncclProfiler_v4, _v5 and _v6 and
# needs no CUDA, NCCL or MPI library. Usage: check_exports.sh PLUGIN.so
set -eu
so=$1
command -v nm >/dev/null || { echo "nm not found (binutils)"; exit 77; }
got=$(nm -D --defined-only "$so" | awk 'NF == 3 { print $3 }' | sort | tr '\n' ' ')
want="ncclProfiler_v4 ncclProfiler_v5 ncclProfiler_v6 "
if [ "$got" != "$want" ]; then
  echo "exported: '$got'"
  echo "expected: '$want'"
  exit 1
fi
if command -v readelf >/dev/null; then
  bad=$(readelf -d "$so" | grep NEEDED | grep -Ei 'cuda|nccl|mpi|mergetrace' || true)
  if [ -n "$bad" ]; then
    echo "unexpected dependencies: $bad"
    exit 1
  fi
fi
echo "ok: $got"
