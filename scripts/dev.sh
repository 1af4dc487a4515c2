#!/usr/bin/env bash
# One entry point for setting up, building, testing and running the project.
#
#   scripts/dev.sh test          install what is missing, build the host configuration, run the tests
#   scripts/dev.sh run [ARGS]    build the best configuration this machine has (cuda with a GPU,
#                                else host) and run compare (default: --algo conv --size 1080p)
#   scripts/dev.sh build PRESET  install what is missing and build one configuration (host, cuda)
#   scripts/dev.sh setup         only install the Debian packages the project needs
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
jobs=${KBENCH_JOBS:-$(nproc)}
packages=(g++ make cmake patch tar ca-certificates catch2 libcli11-dev libstb-dev libopenmpi-dev
  openmpi-bin python3 python3-matplotlib)

setup() {
  local missing=() p
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
  done
  [[ ${#missing[@]} -eq 0 ]] && return 0
  echo "dev.sh: installing Debian packages: ${missing[*]}"
  local sudo=()
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || {
      echo "dev.sh: not root and no sudo; install these Debian packages first: ${missing[*]}" >&2
      exit 1
    }
    sudo=(sudo)
  fi
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
}

build() {
  local preset=$1
  setup
  cmake --preset "$preset" -S "$repo" >/dev/null
  cmake --build "$repo/build/$preset" -j "$jobs"
}

has_gpu() {
  command -v nvcc >/dev/null && command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1
}

# Kokkos's advice for OpenMP runs, unless the caller chose otherwise.
export OMP_PROC_BIND=${OMP_PROC_BIND:-spread} OMP_PLACES=${OMP_PLACES:-threads}

case "${1:-}" in
  setup) setup ;;
  build) build "${2:?dev.sh build host|cuda}" ;;
  test)
    build host
    OMP_PROC_BIND=false ctest --test-dir "$repo/build/host" --output-on-failure
    ;;
  run)
    shift
    preset=host
    has_gpu && preset=cuda
    build "$preset"
    [[ $# -gt 0 ]] || set -- --algo conv --size 1080p
    "$repo/build/$preset/bin/compare" "$@"
    ;;
  *)
    sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
