#!/usr/bin/env bash
# One entry point for setting up, building, testing and running the project.
#
#   scripts/dev.sh test          install what is missing, build the host configuration, run the tests,
#                                then install it and build and run examples/consumer against it,
#                                then build the Python package into build/python-venv and run its
#                                tests (python/tests)
#   scripts/dev.sh run [ARGS]    build the best configuration this machine has (cuda with a GPU,
#                                else host) and run compare (default: --algo conv --size 1080p)
#   scripts/dev.sh build PRESET  install what is missing and build one configuration (host, host-native, cuda,
#                                asan, fuzz)
#   scripts/dev.sh sanitize      build the asan configuration (AddressSanitizer + UBSan) and run
#                                the tests in it
#   scripts/dev.sh fuzz [SECONDS] build the readers' libFuzzer targets (clang) and run each for
#                                SECONDS (default 60) from tests/fuzz/corpus; a crash exits
#                                non-zero and leaves its input in build/fuzz/findings
#   scripts/dev.sh setup         only install the Debian packages the project needs
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
jobs=${KBENCH_JOBS:-$(nproc)}
packages=(g++ make cmake patch tar ca-certificates catch2 libcli11-dev libstb-dev libopenmpi-dev
  openmpi-bin python3 python3-dev python3-venv python3-matplotlib)
# Only for `fuzz`: clang with its libFuzzer and sanitizer runtimes.
fuzz_packages=(clang-14 libclang-rt-14-dev)

setup() {
  local missing=() p
  for p in "${packages[@]}" "$@"; do
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
  if [[ $preset == fuzz ]]; then setup "${fuzz_packages[@]}"; else setup; fi
  cmake --preset "$preset" -S "$repo" >/dev/null
  cmake --build "$repo/build/$preset" -j "$jobs"
}

# Runs each fuzz target for $1 seconds on its committed corpus plus what earlier runs here added
# (kept in build/fuzz/corpus/, so the source tree is left alone and long runs build on each
# other). A finding stops the run with the target's report; its input is kept under
# build/fuzz/findings/<target>/ to reproduce with `build/fuzz/bin/fuzz_<target> FILE`.
fuzz() {
  local seconds=$1 target status=0
  [[ $seconds =~ ^[0-9]+$ && $seconds -gt 0 ]] || {
    echo "dev.sh fuzz: SECONDS must be a positive whole number, not '$seconds'" >&2
    exit 2
  }
  build fuzz
  for target in image_reader descriptor_reader mask_reader; do
    local work="$repo/build/fuzz/corpus/$target" findings="$repo/build/fuzz/findings/$target"
    mkdir -p "$work" "$findings"
    cp "$repo/tests/fuzz/corpus/$target/"* "$work/"
    echo "dev.sh fuzz: fuzz_$target for ${seconds} s"
    # One process, so SECONDS costs one core for that long. An input that runs 10 s (a hang)
    # or makes the process pass 2 GB is a finding too. libFuzzer also prints a small finding's
    # bytes (Base64) in the log tail shown below, so a CI log alone can reproduce it.
    if ! "$repo/build/fuzz/bin/fuzz_$target" -max_total_time="$seconds" -timeout=10 \
        -rss_limit_mb=2048 -print_final_stats=1 -dict="$repo/tests/fuzz/$target.dict" \
        -artifact_prefix="$findings/" "$work" \
        2>"$repo/build/fuzz/$target.log"; then
      tail -n 60 "$repo/build/fuzz/$target.log" >&2
      echo "dev.sh fuzz: fuzz_$target found a problem; its input: $(ls -t "$findings" | head -n 1)" \
        "in $findings (full log: build/fuzz/$target.log)" >&2
      status=1
    else
      grep -E '^stat::(number_of_executed_units|new_units_added)' "$repo/build/fuzz/$target.log" |
        sed "s/^/  fuzz_$target /"
    fi
  done
  return "$status"
}

# Installs the host build into build/install and builds and runs examples/consumer against it, as
# another project's CMake build would use kbench (find_package(kbench)).
consumer() {
  local prefix="$repo/build/install" work="$repo/build/consumer"
  cmake --install "$repo/build/host" --prefix "$prefix" >/dev/null
  cmake -S "$repo/examples/consumer" -B "$work" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$work" -j "$jobs" >/dev/null
  echo "dev.sh: examples/consumer against the installed library:"
  "$work/consumer"
}

# Builds the Python package (pyproject.toml, python/) into a virtual environment and runs its
# pytest suite. Its build tools and NumPy come from PyPI.
python_package() {
  local venv="$repo/build/python-venv"
  [[ -x $venv/bin/python ]] || python3 -m venv "$venv"
  "$venv/bin/pip" install -q numpy pytest nanobind scikit-build-core
  "$venv/bin/pip" install -q --no-build-isolation "$repo"
  echo "dev.sh: the Python package's tests:"
  "$venv/bin/python" -m pytest -q "$repo/python/tests"
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
    OMP_PROC_BIND=false consumer
    OMP_PROC_BIND=false python_package
    ;;
  sanitize)
    build asan
    OMP_PROC_BIND=false UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1} \
      ctest --test-dir "$repo/build/asan" --output-on-failure
    ;;
  fuzz) fuzz "${2:-60}" ;;
  run)
    shift
    preset=host
    has_gpu && preset=cuda
    build "$preset"
    [[ $# -gt 0 ]] || set -- --algo conv --size 1080p
    "$repo/build/$preset/bin/compare" "$@"
    ;;
  *)
    sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
