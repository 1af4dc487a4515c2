#!/usr/bin/env bash
# Throughput against image width (issue 12): runs compare's CUDA variants of conv and lbp (and
# sad with a small query) on images of a fixed height over widths from 1 to 8192, and reports
# pixels per second against width, native against Kokkos, compute-only and end to end, with each
# width's time per pixel over the 3840-wide one's (target: within 1.15x).
#
#   perf/width_sweep.sh OUTDIR [ALGO...]         (default: conv lbp sad)
# WIDTH_SWEEP_WIDTHS="..." and WIDTH_SWEEP_ROWS=N (default 2160) change the images; sad uses
# WIDTH_SWEEP_SAD_ROWS (default 512) rows and a WIDTH_SWEEP_SAD_QUERY query (default 16x16, cut
# to the width where the target is narrower); WIDTH_SWEEP_VARIANTS_<algo> (e.g.
# WIDTH_SWEEP_VARIANTS_conv="cuda-u8-vec kokkos-band-cuda") limits an algorithm to those variants
# (default: all its CUDA variants). Writes OUTDIR/widths.jsonl, OUTDIR/widths.log,
# OUTDIR/widths.md and OUTDIR/<algo>_widths.png. The binaries come from KBENCH_BUILD (default
# build/cuda); nothing is built here.
set -uo pipefail

out=${1:?usage: perf/width_sweep.sh OUTDIR [ALGO...]}
shift
repo=$(cd "$(dirname "$0")/.." && pwd)
bin=${KBENCH_BUILD:-$repo/build/cuda}/bin
mkdir -p "$out"
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}/usr/local/cuda/lib64

algorithms=("$@")
[[ ${#algorithms[@]} -gt 0 ]] || algorithms=(conv lbp sad)
read -r -a widths <<<"${WIDTH_SWEEP_WIDTHS:-1 2 3 7 16 31 64 127 130 257 1000 1920 2306 3001 3840 4031 4096 6000 8191 8192}"
rows=${WIDTH_SWEEP_ROWS:-2160}
sad_rows=${WIDTH_SWEEP_SAD_ROWS:-512}
sad_query=${WIDTH_SWEEP_SAD_QUERY:-16x16}

: >"$out/widths.jsonl"
: >"$out/widths.log"
status=0
for algo in "${algorithms[@]}"; do
  for w in "${widths[@]}"; do
    case $algo in
      sad)
        qw=${sad_query%x*} qh=${sad_query#*x}
        size=(--size "${w}x${sad_rows}" --query-size "$((qw < w ? qw : w))x${qh}") ;;
      *) size=(--size "${w}x${rows}") ;;
    esac
    only_name="WIDTH_SWEEP_VARIANTS_${algo}"
    read -r -a only <<<"${!only_name:-}"
    [[ ${#only[@]} -gt 0 ]] && size+=(--variant "${only[@]}")
    echo "== $algo ${size[*]}"
    # Many reps keep the small images' medians steady; compare's time budget caps large ones.
    "$bin/compare" --algo "$algo" "${size[@]}" --backend cuda --reps 30 \
      --json "$out/widths.jsonl" >>"$out/widths.log" 2>&1 || status=1
  done
done

if command -v python3 >/dev/null; then
  python3 "$repo/perf/report.py" "$out/widths.jsonl" --widths --markdown "$out/widths.md" \
    --plots "$out" || status=1
  cat "$out/widths.md"
fi
exit $status
