#!/usr/bin/env bash
# The LBP report's small-image study: runs compare --algo lbp over square images from 20x20 to
# 200x200 and from 200x200 to 8000x8000, and shows where each parallel variant starts beating the
# sequential reference (perf/report.py's crossover table).
#
#   perf/lbp_size_sweep.sh OUTDIR [COMPARE ARGS...]     e.g. --backend openmp --border crop
# LBP_SWEEP_SIZES="20 200 2000" sweeps other side lengths.
# Writes OUTDIR/lbp_sweep.jsonl (JSON lines), OUTDIR/lbp_sweep.log (compare's tables) and
# OUTDIR/lbp_sweep.md (the report). The binaries come from KBENCH_BUILD (default build/cuda when
# it exists, else build/host); nothing is built here.
set -uo pipefail

out=${1:?usage: perf/lbp_size_sweep.sh OUTDIR [COMPARE ARGS...]}
shift
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${KBENCH_BUILD:-$repo/build/cuda}
[[ -x $build/bin/compare ]] || build=${KBENCH_BUILD:-$repo/build/host}
mkdir -p "$out"
export OMP_PROC_BIND=${OMP_PROC_BIND:-spread} OMP_PLACES=${OMP_PLACES:-threads}

read -r -a sizes <<<"${LBP_SWEEP_SIZES:-20 40 60 80 100 120 140 160 180 200 400 600 800 1000 1500 2000 3000 4000 6000 8000}"
: >"$out/lbp_sweep.jsonl"
: >"$out/lbp_sweep.log"
status=0
for n in "${sizes[@]}"; do
  echo "== ${n}x${n}"
  # Small images run in microseconds: many reps keep their medians steady; large ones are capped
  # by compare's time budget per variant.
  "$build/bin/compare" --algo lbp --size "${n}x${n}" --reps 50 --json "$out/lbp_sweep.jsonl" "$@" \
    >>"$out/lbp_sweep.log" 2>&1 || status=1
done

if command -v python3 >/dev/null; then
  python3 "$repo/perf/report.py" "$out/lbp_sweep.jsonl" --markdown "$out/lbp_sweep.md" || status=1
  # The crossover table, up to the next heading.
  awk '/^### .*crossover/ {show = 1; print; next} /^### / {show = 0} show' "$out/lbp_sweep.md"
fi
exit $status
