#!/usr/bin/env bash
# Measures the CPU layer against the host's ceilings (issue 13) and writes into OUTDIR:
#   ceilings.jsonl  cpu-ceiling's JSON lines: copy bandwidth and packed-SAD rates, all threads
#   ceilings.log    the same as printed, with the host's description
#   compare.jsonl   compare's JSON lines: the OpenMP variants of sad test1, lbp 4k and
#                   conv 4k on all threads, and the OpenMP thread sweep (1, 2, 4, 8, 16 … up to
#                   nproc threads) of the best sad and cemd CPU variants
#   compare.log     compare's tables as printed
#   ceiling_sweep.jsonl  cpu-ceiling at each thread count of the sweep: what the hardware itself
#                   gains from more threads (clocks fall as more cores run, and hardware threads
#                   of one core share its SIMD ports)
#   report.md       perf/report.py's tables, with each CPU variant's fraction of its ceiling and
#                   the thread sweep's speedups
#
#   perf/cpu_check.sh OUTDIR
# The binaries come from KBENCH_BUILD (default build/host; build/cuda works too); nothing is
# built here.
set -uo pipefail

out=${1:?usage: perf/cpu_check.sh OUTDIR}
repo=$(cd "$(dirname "$0")/.." && pwd)
bin=${KBENCH_BUILD:-$repo/build/host}/bin
mkdir -p "$out"
export OMP_PROC_BIND=${OMP_PROC_BIND:-spread} OMP_PLACES=${OMP_PLACES:-threads}
status=0
cores=$(nproc)

# The cases: the report's sad test1, and 4K images for lbp and conv; cemd's sweep case is large
# enough for 16 threads (≈ 20 ms with AVX-512) and small enough for one (≈ 0.5 s a run).
main_cases=("sad test1" "lbp 4k" "conv 4k")
cemd_case=1Kix64Ki

echo "== ceilings ($cores threads)"
{
  echo "host: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $cores threads, $(date -u)"
  lscpu | grep -E '^(Thread|Core|Socket|NUMA node\(s\)|CPU max MHz)' || true
  "$bin/cpu-ceiling" | tee "$out/ceilings.jsonl"
} >"$out/ceilings.log" 2>&1 || status=1
cat "$out/ceilings.log"
level=$(sed -n 's/.*"level": "\([a-z0-9]*\)".*/\1/p' "$out/ceilings.jsonl" | head -n 1)
level=${level:-generic}

echo "== OpenMP variants on all threads"
for entry in "${main_cases[@]}"; do
  read -r algo case <<<"$entry"
  # OpenMP only: the serial backend's dozen Kokkos and sequential variants take many minutes
  # here and answer nothing these tables ask.
  "$bin/compare" --algo "$algo" --size "$case" --backend openmp --json "$out/compare.jsonl" \
    >>"$out/compare.log" 2>&1 || status=1
done
grep -E "^(variant|seq|omp|kokkos)" "$out/compare.log" | tail -60

echo "== OpenMP thread sweep (omp-simd-$level on sad test1 and on cemd $cemd_case)"
thread_counts=()
for threads in 1 2 4 8 16 32 64 128; do
  [[ $threads -lt $cores ]] && thread_counts+=("$threads")
done
thread_counts+=("$cores")
for threads in "${thread_counts[@]}"; do
  OMP_NUM_THREADS=$threads "$bin/cpu-ceiling" >>"$out/ceiling_sweep.jsonl" 2>>"$out/compare.log" ||
    status=1
  # sad checks against omp-blocked (itself checked on a crop) rather than the single-core
  # reference, so each thread count costs seconds, not minutes.
  OMP_NUM_THREADS=$threads "$bin/compare" --algo sad --size test1 --variant "omp-simd-$level" \
    --max-sequential-gsad 0 --reps 5 --json "$out/compare.jsonl" >>"$out/compare.log" 2>&1 ||
    status=1
  OMP_NUM_THREADS=$threads "$bin/compare" --algo cemd --size "$cemd_case" --variant "omp-simd-$level" \
    --max-sequential-gcmp 0 --reps 5 --json "$out/compare.jsonl" >>"$out/compare.log" 2>&1 ||
    status=1
done

if command -v python3 >/dev/null; then
  python3 "$repo/perf/report.py" "$out/compare.jsonl" --ceilings "$out/ceilings.jsonl" \
    --markdown "$out/report.md" || status=1
  sed -n '/^## CPU variants against/,$p; /OpenMP thread sweep/,/^$/p' "$out/report.md"
fi
exit $status
