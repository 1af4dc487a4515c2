#!/usr/bin/env bash
# The CUDA build's tools where no GPU can be used (CI's machines): each must end with status 0
# (a GPU was usable after all) or 1 with a single line on stderr saying why, never by a signal.
#
#   tests/cuda_without_gpu.sh BIN_DIR      (the CUDA build's bin folder)
set -uo pipefail

bin=$(cd "${1:?the CUDA build bin folder}" && pwd)
work=$(mktemp -d /tmp/kbench-no-gpu-XXXXXX)
trap 'rm -rf "$work"' EXIT

# A 4×3 gray image.
printf 'P5\n4 3\n255\n\001\002\003\004\005\006\007\010\011\012\013\014' >"$work/in.pgm"

failed=0
expect_clean_end() {
  local name=$1
  shift
  "$@" >"$work/out.txt" 2>"$work/err.txt"
  local status=$?
  if ((status > 128)); then
    echo "FAIL: $name ended by signal $((status - 128))"
    sed 's/^/  stderr: /' "$work/err.txt"
    failed=1
  elif ((status != 0 && status != 1)); then
    echo "FAIL: $name exit status $status (0 or 1 expected)"
    failed=1
  elif ((status == 1)) && [[ $(wc -l <"$work/err.txt") -ne 1 ]]; then
    echo "FAIL: $name exit status 1 without exactly one line on stderr:"
    sed 's/^/  stderr: /' "$work/err.txt"
    failed=1
  else
    echo "ok: $name (exit status $status) $(head -n 1 "$work/err.txt")"
  fi
}

expect_clean_end compare "$bin/compare" --algo conv --size 64x48
expect_clean_end filter "$bin/filter" "$work/in.pgm" "$work/out.pgm" --mask gaussian
expect_clean_end "CUDA_VISIBLE_DEVICES= compare" env CUDA_VISIBLE_DEVICES= "$bin/compare" \
  --algo lbp --size 64x48
exit $failed
