# Shared by scripts/demo, scripts/test and scripts/bench: install what is
# missing from Debian's packages, set up Open MPI for root, build.
# Sourced, not run.

MT_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MT_PACKAGES="build-essential cmake pkg-config libopenmpi-dev openmpi-bin libcmocka-dev zlib1g-dev libdeflate-dev python3"
# Nice to have: the report.html browser test (ctest html_browser) renders the
# pages with chromium and is skipped without it; ISA-L (libisal-dev) inflates
# gzip inputs 3x faster than zlib and deflates the gzip merged trace 2.8x
# faster than libdeflate; the build falls back to those two without it.
# SQLite (libsqlite3-dev) reads Nsight Systems exports (*.sqlite).
MT_OPTIONAL_PACKAGES="chromium libisal-dev libsqlite3-dev"

mt_say() { printf '%s\n' "$*" >&2; }

# Install the Debian packages that are not installed yet (only those).
mt_install() {
  local missing="" p
  for p in $MT_PACKAGES "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
  done
  [ -z "$missing" ] && return 0
  mt_say "installing:$missing"
  local sudo=""
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null || { mt_say "need root (or sudo) to install:$missing"; return 1; }
    sudo="sudo"
  fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $missing >/dev/null
}

# Install packages that are nice to have; never fail on them.
mt_install_optional() {
  local p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" && continue
    mt_install "$p" || mt_say "optional package $p could not be installed; tests that need it are skipped"
  done
}

# What scripts/demo and scripts/test install: the same set in both, so that
# the program a user builds with either reads gzip the same way.
mt_install_all() {
  mt_install
  mt_install_optional $MT_OPTIONAL_PACKAGES
}

# Open MPI refuses to run as root unless told; mpirun needs --oversubscribe
# for more ranks than cores (8 ranks on 2 cores here).
mt_mpi_env() {
  if [ "$(id -u)" = 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  fi
  # No network here: keep Open MPI on shared memory and loopback.
  export OMPI_MCA_btl_vader_single_copy_mechanism=none
  export OMPI_MCA_rmaps_base_oversubscribe=1
}

# mt_build DIR [cmake args...]: configure quietly but for what the build
# found (the gzip library, SQLite), which goes to stderr; then build.
mt_build() {
  local dir=$1 log
  shift
  log=$(mktemp)
  if ! cmake -S "$MT_ROOT" -B "$dir" "$@" >"$log"; then
    cat "$log" >&2
    rm -f "$log"
    return 1
  fi
  sed -n 's/^-- \(gzip: .*\|Nsight Systems exports: .*\)$/build: \1/p' "$log" >&2
  rm -f "$log"
  cmake --build "$dir" -j "$(nproc)"
}
