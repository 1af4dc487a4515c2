#!/usr/bin/env bash
# Runs the CUDA build's test suite and the compare suite on a GPU machine and writes the results
# into OUTDIR:
#   device.txt      GPU, driver, date and commit
#   tests.log       the Catch2 suite on every backend, CUDA included
#   tools.log       the tools as users run them: tests/tools/ (choices, hostile input) and
#                   cemd-match's end-to-end test, on this build's default (GPU) variants
#   sanitizer.log   compute-sanitizer memcheck and racecheck over the CUDA variants
#   profile.log     ncu's per-kernel summary of the GPU variants on one case per algorithm
#   compare.jsonl   JSON lines from compare (perf/report.py turns them into tables and plots)
#   compare.log     compare's tables as printed
#   report.md       the Markdown tables made from compare.jsonl
#   widths/         throughput against image width (perf/width_sweep.sh: widths.md, *_widths.png)
#
#   perf/gpu_check.sh OUTDIR [ALGO...]      (default: every algorithm in the build)
# KBENCH_STEPS picks steps (default "tests tools sanitizer compare threads sweep widths noise topk
# peers python": threads is the OpenMP thread sweep, sweep the LBP size sweep, widths throughput against
# image width (perf/width_sweep.sh into OUTDIR/widths), noise the sad-pruned noise sweep against
# full search, the paper's Fig. 6, topk sad-pruned's best positions without separation against
# full search with its map; "profile" adds the ncu summary, "cemd-sweep" cemd's throughput
# against size, the paper's Fig. 1; "cpu-portability" times Kokkos-OpenMP against the native CPU
# layer on the host CPU in the host builds KBENCH_HOST_BUILDS names (default build/host; add a
# host-ISA build, docs/building.md) through perf/cpu_portability.sh into OUTDIR/host-cpu-portability;
# "peers" times perf/peers.py's libraries on the same cases;
# "big" runs conv on 30000×30000 RGB and lbp on 50000×50000 gray, 2.7 and 2.5 GB, past 2^31
# bytes, on the CUDA variants with sampled-row checks, then 600000-row images, into big.log and
# big.jsonl); "batch" runs conv and lbp in batches of 64 frames at 480p and 1080p (every frame
# through the variant's runner, and the library's call on device views with all frames at once,
# into batch.jsonl, batch.md against the device's copy floor) and api-overhead (the library call
# against the bare kernel, into api.jsonl); "python", where `import kbench` works (python/README.md
# says how to build it for this machine), runs the Python suite (python-tests.log) and
# perf/python_overhead.py (the binding against the C++ call, python.jsonl and python.md); the
# binaries come from KBENCH_BUILD (default build/cuda); nothing is built here.
set -uo pipefail

out=${1:?usage: perf/gpu_check.sh OUTDIR [ALGO...]}
shift
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${KBENCH_BUILD:-$repo/build/cuda}
bin=$build/bin
steps=" ${KBENCH_STEPS:-tests tools sanitizer compare threads sweep widths noise topk peers python} "
mkdir -p "$out"
export OMP_PROC_BIND=${OMP_PROC_BIND:-spread} OMP_PLACES=${OMP_PLACES:-threads}
# The CUDA runtime the binaries link against, where the toolkit keeps it.
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}/usr/local/cuda/lib64
status=0
# A step's command failed: named on the console, and the script's exit status is 1.
failed() {
  echo "FAILED: $1 (see its log in $out)"
  status=1
}

algorithms=("$@")
if [[ ${#algorithms[@]} -eq 0 ]]; then
  mapfile -t algorithms < <("$bin/compare" --list | awk 'NR > 1 {print $1}' | uniq)
fi

# Small inputs for the sanitizer runs: each algorithm's argument lists, separated by ';'. Odd
# widths run the pitched images' row tails (issue 12).
declare -A sanitizer_cases=(
  [conv]="--size 320x240;--size 301x37;--size 301x37 --border crop;--size 7x5 --channels 1"
  [lbp]="--size 320x240;--size 301x37;--size 301x37 --border crop;--size 7x5"
  [sad]="--size 320x240;--size 320x240 --no-map"
  [sad-pruned]="--size 320x240 --query-size 40x36;--size 320x240 --query-size 40x36 --noise 70;\
--size 320x240 --query-size 40x36 --top 10;--size 320x240 --query-size 40x36 --noise 300 --top 10"
  [cemd]="--size 96x200;--size 96x200-raw;--size 40x70-all;--size 130x263-l2"
)
# The batch step's cases and variants (the runner frame by frame, and the call on device views).
batch_frames=64
batch_sizes=(480p 1080p)
declare -A batch_variants=(
  [conv]="cuda-u8-vec cuda-u8-vec-views kokkos-band-cuda kokkos-band-cuda-views"
  [lbp]="cuda-vec cuda-vec-views kokkos-vec-cuda kokkos-vec-cuda-views"
)
# cemd's size sweep (the paper's Fig. 1: throughput against comparisons per run), GPU variants:
# normalised, then Euclidean (issue 36; the compare step adds 64 Ki x 1 Mi).
cemd_sweep_cases=(64x256 256x1Ki 1Kix4Ki 4Kix16Ki 8Kix64Ki
  256x1Ki-l2 1Kix4Ki-l2 4Kix16Ki-l2 8Kix64Ki-l2 16Kix256Ki-l2)
# The case ncu profiles per algorithm (one timed repetition of each CUDA variant).
declare -A profile_cases=(
  [sad-pruned]="--size photo3072-q128 --noise 10 --no-baseline"
  [cemd]="--size 4Kix64Ki;--size 16Kix1Mi-l2 --variant cuda-tensor"
)
# compare's options for its standard cases that are too long for every variant: cemd's 64 Ki x
# 1 Mi cases (68.7 G comparisons, tens of seconds a run for the simple GPU variants) on the fast
# GPU variants, whose simple forms the 4Mi cases time.
big_cemd_variants="--variant cuda-final cuda-streamed cuda-tensor kokkos-tiled-cuda"
declare -A compare_options=([64Kix1Mi]=$big_cemd_variants [64Kix1Mi-raw]=$big_cemd_variants
  [64Kix1Mi-l2]=$big_cemd_variants)
# The cases perf/peers.py times per algorithm, and the options of some cases: 64Kix1Mi-l2 (issue
# 36's Euclidean case, 68.7 G comparisons: seconds a repetition for the GEMM peers) runs few.
declare -A peer_cases=([conv]="480p 1080p 4k" [lbp]="480p 1080p 4k" [sad]="test1 test2 test3"
  [cemd]="4Mi 4Mi-raw 64Kix1Mi-l2")
declare -A peer_options=([64Kix1Mi-l2]="--reps 3 --budget-s 10")
# The big step's cases: images of more than 2^31 bytes, checked on this many sampled rows (whose
# reference is computed on the host; lbp also counts its whole histogram there).
big_cases=("conv --size 30000x30000 --channels 3" "lbp --size 50000x50000")
big_check_rows=64
# Tall, narrow images (10 MB): more row blocks and row tiles than a grid has in y (65535), so the
# kernels' grid-stride rows and the Kokkos launches' row chunks run; checked against the whole
# reference.
tall_cases=("conv --size 16x600000 --channels 1" "conv --size 16x600000 --channels 3"
  "lbp --size 16x600000")
# sad-pruned's noise sweep (the paper's σ values) on the paper's photo sizes (KBENCH_NOISE_CASES,
# space-separated, picks some).
noise_levels=(0 5 10 20 40 70)
read -r -a noise_cases <<<"${KBENCH_NOISE_CASES:-photo3072-q128 photo2306-q64}"
# The topk step: this many best positions without separation (match --top K --separation 1), on
# the first noise case at the noise step's σ.
topk_positions=10
# The thread sweep's case: the largest standard case, unless a single-thread run of it would take
# minutes.
declare -A sweep_cases=([sad]=test1)

{
  date -u +%Y-%m-%dT%H:%M:%SZ
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
  echo "commit $(cat "$build/commit.txt" 2>/dev/null || echo unknown)"
  echo "host $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2) x $(nproc)"
} >>"$out/device.txt" 2>&1

if [[ $steps == *" tests "* ]]; then
  echo "== tests"
  OMP_PROC_BIND=false "$bin/kbench_tests" 2>&1 | tee -a "$out/tests.log" | tail -3 || failed tests
fi

if [[ $steps == *" tools "* ]]; then
  echo "== tools"
  for script in tools/run_tool_tests.sh tools/hostile_inputs.sh "mpi/run_mpi_tests.sh tool"; do
    read -r file mode <<<"$script"
    echo "-- $script" >>"$out/tools.log"
    if [[ -n $mode ]]; then
      "$repo/tests/$file" "$mode" "$bin" >>"$out/tools.log" 2>&1 || failed tools
    else
      "$repo/tests/$file" "$bin" >>"$out/tools.log" 2>&1 || failed tools
    fi
  done
  grep -E "^(FAIL|hostile inputs:)" "$out/tools.log"
fi

# memcheck and racecheck (or TOOLS) over compare's CUDA variants: sanitize_compare ALGO "ARGS"
# [TOOLS].
sanitize_compare() {
  local algo=$1 case=$2 tool
  for tool in ${3:-memcheck racecheck}; do
    echo "-- $algo $tool $case" >>"$out/sanitizer.log"
    # shellcheck disable=SC2086
    compute-sanitizer --tool "$tool" --error-exitcode 3 "$bin/compare" --algo "$algo" \
      $case --backend cuda --check-only >>"$out/sanitizer.log" 2>&1 || failed sanitizer
  done
}

if [[ $steps == *" sanitizer "* ]]; then
  echo "== compute-sanitizer over the CUDA variants"
  for algo in "${algorithms[@]}"; do
    IFS=';' read -ra cases <<<"${sanitizer_cases[$algo]:-}"
    for case in "${cases[@]}"; do sanitize_compare "$algo" "$case"; done
  done
  # Calls on device views: batches in place and staged (odd widths), and the GPU suite's
  # device-view cases (every layout, alpha, other masks, two contexts on their own streams).
  for algo in conv lbp; do
    for case in "--size 320x240 --batch 3" "--size 301x37 --batch 3 --border crop"; do
      sanitize_compare "$algo" "$case"
    done
  done
  # cemd on many row tiles a split, where cuda-tensor's buffers are reused: racecheck reports
  # its raw bulk copies' hand-over on mbarriers there whatever the order (bulk-copy-racecheck,
  # perf/notes/cemd.md), so memcheck and synccheck.
  if [[ " ${algorithms[*]} " == *" cemd "* ]]; then
    for case in "--size 1000x3001" "--size 1000x3001 --metric l2"; do
      sanitize_compare cemd "$case" "memcheck synccheck"
    done
  fi
  echo "-- kbench_tests memcheck [api_device]" >>"$out/sanitizer.log"
  compute-sanitizer --tool memcheck --error-exitcode 3 "$bin/kbench_tests" "[api_device]" \
    >>"$out/sanitizer.log" 2>&1 || failed sanitizer
  grep -E "^-- |ERROR SUMMARY|RACECHECK SUMMARY" "$out/sanitizer.log"
fi

if [[ $steps == *" batch "* ]]; then
  echo "== batches of $batch_frames frames, and the library call against the bare kernel"
  for algo in conv lbp; do
    variant_args=()
    for v in ${batch_variants[$algo]}; do variant_args+=(--variant "$v"); done
    for size in "${batch_sizes[@]}"; do
      "$bin/compare" --algo "$algo" --size "$size" --batch "$batch_frames" "${variant_args[@]}" \
        --json "$out/batch.jsonl" >>"$out/batch.log" 2>&1 || failed batch
    done
  done
  "$bin/api-overhead" 1080p 4k >"$out/api.jsonl" 2>>"$out/batch.log" || failed batch
  if command -v python3 >/dev/null; then
    python3 "$repo/perf/batch_table.py" "$out/batch.jsonl" >"$out/batch.md" || failed batch
    cat "$out/batch.md"
  fi
  cat "$out/api.jsonl"
fi

if [[ $steps == *" compare "* ]]; then
  echo "== compare"
  for algo in "${algorithms[@]}"; do
    mapfile -t cases < <("$bin/compare" --algo "$algo" --list-cases)
    for case in "${cases[@]}"; do
      # shellcheck disable=SC2086
      "$bin/compare" --algo "$algo" --size "$case" ${compare_options[$case]:-} \
        --json "$out/compare.jsonl" >>"$out/compare.log" 2>&1 || failed compare
    done
  done
  grep -E "^(variant|cuda|kokkos)|^[a-z]+ on " "$out/compare.log" | tail -60
fi

if [[ $steps == *" threads "* ]]; then
  echo "== OpenMP thread sweep"
  for algo in "${algorithms[@]}"; do
    mapfile -t cases < <("$bin/compare" --algo "$algo" --list-cases)
    sweep_case=${sweep_cases[$algo]:-${cases[-1]}}
    for threads in 1 2 4 8 16; do
      [[ $threads -le $(nproc) ]] || continue
      OMP_NUM_THREADS=$threads "$bin/compare" --algo "$algo" --size "$sweep_case" \
        --backend openmp --reps 5 --json "$out/compare.jsonl" >>"$out/compare.log" 2>&1 || failed threads
    done
  done
fi

if [[ $steps == *" cpu-portability "* ]]; then
  echo "== Kokkos-OpenMP against the native CPU layer"
  read -ra host_builds <<<"${KBENCH_HOST_BUILDS:-$repo/build/host}"
  "$repo/perf/cpu_portability.sh" "$out/host-cpu-portability" "${host_builds[@]}" ||
    failed cpu-portability
fi

if [[ $steps == *" widths "* ]]; then
  echo "== throughput against width"
  widths=()
  for algo in conv lbp sad; do
    [[ " ${algorithms[*]} " == *" $algo "* ]] && widths+=("$algo")
  done
  if [[ ${#widths[@]} -gt 0 ]]; then
    KBENCH_BUILD=$build "$repo/perf/width_sweep.sh" "$out/widths" "${widths[@]}" \
      >"$out/widths.log" 2>&1 || failed widths
    tail -40 "$out/widths.log"
  fi
fi

if [[ $steps == *" big "* ]]; then
  echo "== images past 2^31 bytes (CUDA variants, sampled-row checks)"
  for case in "${big_cases[@]}"; do
    # shellcheck disable=SC2086
    "$bin/compare" --algo $case --backend cuda --check-rows "$big_check_rows" --reps 5 \
      --json "$out/big.jsonl" >>"$out/big.log" 2>&1 || failed big
  done
  for case in "${tall_cases[@]}"; do
    # shellcheck disable=SC2086
    "$bin/compare" --algo $case --backend cuda --check-only >>"$out/big.log" 2>&1 || failed big
  done
  grep -E "^(conv|lbp) on |^(GPU )?memory:|^(cuda|kokkos)-|skipping" "$out/big.log" | tail -90
fi

if [[ $steps == *" noise "* && " ${algorithms[*]} " == *" sad-pruned "* ]]; then
  echo "== sad-pruned noise sweep (GPU variants and full search on the same inputs)"
  for case in "${noise_cases[@]}"; do
    for sigma in "${noise_levels[@]}"; do
      "$bin/compare" --algo sad-pruned --size "$case" --noise "$sigma" --backend cuda \
        --json "$out/compare.jsonl" >>"$out/noise.log" 2>&1 || failed noise
    done
  done
  grep -E "^(sad-pruned|sad) on |^(cuda|kokkos)-.*(pruned|regblock-vsad-p32|fused)" \
    "$out/noise.log" | tail -40
fi

if [[ $steps == *" topk "* && " ${algorithms[*]} " == *" sad-pruned "* ]]; then
  echo "== sad-pruned top-$topk_positions without separation (GPU variants; full search with its map)"
  for sigma in "${noise_levels[@]}"; do
    "$bin/compare" --algo sad-pruned --size "${noise_cases[0]}" --noise "$sigma" \
      --top "$topk_positions" --backend cuda --json "$out/compare.jsonl" >>"$out/topk.log" 2>&1 ||
      failed profile
  done
  grep -E "^(sad-pruned|sad) on |^(cuda|kokkos)-.*(pruned|regblock-vsad-p32|team)" \
    "$out/topk.log" | tail -40
fi

if [[ $steps == *" cemd-sweep "* && " ${algorithms[*]} " == *" cemd "* ]]; then
  echo "== cemd size sweep (GPU variants)"
  for case in "${cemd_sweep_cases[@]}"; do
    "$bin/compare" --algo cemd --size "$case" --backend cuda --json "$out/compare.jsonl" \
      >>"$out/cemd_sweep.log" 2>&1 || failed cemd-sweep
  done
  grep -E "^cemd on |^(cuda|kokkos)-" "$out/cemd_sweep.log" | tail -40
fi

if [[ $steps == *" peers "* ]] && command -v python3 >/dev/null; then
  echo "== peers (perf/peers.py)"
  for algo in "${algorithms[@]}"; do
    for case in ${peer_cases[$algo]:-}; do
      # shellcheck disable=SC2086
      python3 "$repo/perf/peers.py" --algo "$algo" --size "$case" --bin "$bin" \
        ${peer_options[$case]:-} --json "$out/compare.jsonl" 2>&1 | tee -a "$out/peers.log" ||
        failed peers
    done
  done
fi

if [[ $steps == *" python "* ]] && python3 -c "import kbench" 2>/dev/null; then
  echo "== the Python package: its tests, and the binding against the C++ call"
  python3 -m pytest -q -p no:cacheprovider -rs "$repo/python/tests" >"$out/python-tests.log" 2>&1 ||
    failed python
  tail -n 3 "$out/python-tests.log"
  python3 "$repo/perf/python_overhead.py" --bin "$bin" --json "$out/python.jsonl" \
    >"$out/python.md" 2>>"$out/python-tests.log" || failed python
  cat "$out/python.md"
fi

if [[ $steps == *" profile "* ]]; then
  echo "== ncu per-kernel summary"
  for algo in "${algorithms[@]}"; do
    IFS=';' read -ra cases <<<"${profile_cases[$algo]:-}"
    for case in "${cases[@]}"; do
      echo "-- $algo $case" >>"$out/profile.log"
      # shellcheck disable=SC2086
      ncu --clock-control none --print-summary per-kernel "$bin/compare" --algo "$algo" \
        $case --backend cuda --reps 1 --budget-ms 1 >>"$out/profile.log" 2>&1 || failed profile
    done
  done
  grep -E "^-- |^  [a-z_].*\(|Duration" "$out/profile.log" | head -80
fi

if [[ $steps == *" compare "* || $steps == *" threads "* || $steps == *" noise "* ||
  $steps == *" topk "* ||
  $steps == *" cemd-sweep "* || $steps == *" peers "* ]] &&
  command -v python3 >/dev/null; then
  python3 "$repo/perf/report.py" "$out/compare.jsonl" --markdown "$out/report.md" || failed report
fi

if [[ $steps == *" sweep "* && " ${algorithms[*]} " == *" lbp "* ]]; then
  echo "== lbp size sweep"
  KBENCH_BUILD=$build "$repo/perf/lbp_size_sweep.sh" "$out" | tail -30 || failed sweep
fi
exit $status
