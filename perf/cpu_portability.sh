#!/usr/bin/env bash
# The portable layer on the CPU against the native CPU layer, in one or more builds of this
# machine (the baseline x86-64 build and a host-ISA build, KBENCH_HOST_ARCH; docs/building.md):
# for each case, every OpenMP variant on all threads, then the best Kokkos and the best native
# variant over 1, 2, 4 … all threads. Writes OUTDIR/<build>/compare.jsonl and compare.log, and
# OUTDIR/portability.md (perf/portability_table.py: per case and build, the best of each layer
# and their ratio, and the thread sweep).
#
#   perf/cpu_portability.sh OUTDIR BUILD_DIR [BUILD_DIR ...]     e.g. build/host build/host-native
# KBENCH_PORTABILITY_CASES picks cases by number (default all, "1 2 …" in the order below);
# KBENCH_SWEEP names the builds whose thread sweep runs (default all; "none"), and
# KBENCH_SWEEP_THREADS its thread counts (default 1, 2, 4 … up to all); KBENCH_BUDGET_MS caps
# each variant's timing (compare's --budget-ms, default 15000). Nothing is built here.
set -uo pipefail

out=${1:?usage: perf/cpu_portability.sh OUTDIR BUILD_DIR [BUILD_DIR ...]}
shift
[[ $# -gt 0 ]] || { echo "usage: perf/cpu_portability.sh OUTDIR BUILD_DIR [BUILD_DIR ...]" >&2; exit 2; }
repo=$(cd "$(dirname "$0")/.." && pwd)
export OMP_PROC_BIND=${OMP_PROC_BIND:-spread} OMP_PLACES=${OMP_PLACES:-threads}
status=0
cores=$(nproc)

# The issue's cases. Checks go against the OpenMP full search and omp-simd where the single-core
# reference would take minutes (--max-sequential-*), and sad-pruned skips timing full search.
cases=(
  "conv --size 4k"
  "lbp --size 4k"
  "sad --size test1 --max-sequential-gsad 0"
  "sad-pruned --size photo3072-q128 --noise 0 --no-baseline --max-sequential-gsad 0"
  "sad-pruned --size photo3072-q128 --noise 5 --no-baseline --max-sequential-gsad 0"
  "sad-pruned --size photo3072-q128 --noise 10 --no-baseline --max-sequential-gsad 0"
  "cemd --size 1Kix64Ki --mode normalised --max-sequential-gcmp 0"
  "cemd --size 1Kix64Ki --mode raw --max-sequential-gcmp 0"
)
picked=${KBENCH_PORTABILITY_CASES:-$(seq -s ' ' 1 ${#cases[@]})}
thread_counts=()
for threads in 1 2 4 8 16 32 64 128; do
  [[ $threads -lt $cores ]] && thread_counts+=("$threads")
done
read -r -a thread_counts <<<"${KBENCH_SWEEP_THREADS:-${thread_counts[*]}}"
sweep=" ${KBENCH_SWEEP:-all} "
budget=${KBENCH_BUDGET_MS:-15000}

for build in "$@"; do
  name=$(basename "$build")
  bin=$build/bin
  dir=$out/$name
  mkdir -p "$dir"
  touch "$dir/compare.jsonl"
  sweeping=0
  [[ $sweep == " all " || $sweep == *" $name "* ]] && sweeping=1
  echo "== $name: OpenMP variants on $cores threads, then the best of each layer over threads"
  for n in $picked; do
    entry=${cases[$((n - 1))]}
    before=$(wc -l <"$dir/compare.jsonl")
    # shellcheck disable=SC2086
    "$bin/compare" --algo $entry --backend openmp --reps 10 --budget-ms "$budget" \
      --json "$dir/compare.jsonl" >>"$dir/compare.log" 2>&1 || status=1
    [[ $sweeping == 1 ]] || continue
    # The fastest native and Kokkos variants of this case: the lines this run appended.
    read -r native portable < <(python3 "$repo/perf/portability_table.py" --best \
      "$dir/compare.jsonl" "$before") || { status=1; continue; }
    [[ -n $native && -n $portable ]] || continue
    for threads in "${thread_counts[@]}"; do
      [[ $threads -ge $cores ]] && continue  # the all-threads run above
      # shellcheck disable=SC2086
      OMP_NUM_THREADS=$threads "$bin/compare" --algo $entry --variant "$native" "$portable" \
        --reps 5 --budget-ms "$budget" --json "$dir/sweep.jsonl" >>"$dir/sweep.log" 2>&1 ||
        status=1
    done
  done
done

python3 "$repo/perf/portability_table.py" "$out" "$@" >"$out/portability.md" || status=1
cat "$out/portability.md"
exit $status
