#!/usr/bin/env bash
# filter, lbp and match as a user runs them (and compare's sad-pruned --top): --variant and --backend choose what runs, --verbose
# says what ran, every choice gives the same output, and a choice that cannot run fails with one
# line and no output file.
#
#   tests/tools/run_tool_tests.sh BIN_DIR
set -euo pipefail

bin=$(cd "${1:?the folder of filter, lbp and match}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/kbench-tools-XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work"
export OMP_PROC_BIND=false OMP_NUM_THREADS=2

fail() {
  echo "FAIL: $*" >&2
  [[ -s err.txt ]] && sed 's/^/  stderr: /' err.txt >&2
  exit 1
}
pass() { echo "ok: $*"; }

# A 64×48 gray target with a pattern and a 16×12 query cut from it at (row 20, col 30).
python3 "$here/target_and_query.py"

# filter: a named variant gives the default's output and says so.
"$bin/filter" target.pgm default.pgm 2>/dev/null
"$bin/filter" target.pgm chosen.pgm --variant seq-aos --verbose 2>err.txt
grep -q "^filter: conv variant seq-aos (sequential, serial): compute .* ms, .* ms with transfers$" \
  err.txt || fail "filter --verbose line"
cmp -s default.pgm chosen.pgm || fail "filter: seq-aos output differs from the default's"
"$bin/filter" target.pgm serial.pgm --backend serial 2>/dev/null
cmp -s default.pgm serial.pgm || fail "filter: --backend serial output differs"
pass "filter --variant, --backend, --verbose"

# lbp: the same for codes and histogram.
"$bin/lbp" target.pgm codes.pgm --hist hist.csv 2>/dev/null
"$bin/lbp" target.pgm codes2.pgm --hist hist2.csv --variant seq-plain --verbose 2>err.txt
grep -q "^lbp: lbp variant seq-plain (sequential, serial)" err.txt || fail "lbp --verbose line"
cmp -s codes.pgm codes2.pgm && cmp -s hist.csv hist2.csv || fail "lbp: seq-plain differs"
pass "lbp --variant, --verbose"

# match: the variant's algorithm chooses the method; the answer is the cut position.
"$bin/match" target.pgm query.pgm --variant seq-strips --verbose >out.txt 2>err.txt
grep -q "^match: sad-pruned variant seq-strips" err.txt || fail "match pruned --verbose line"
grep -q "^1 *20 *30 *0 *0.000$" out.txt || fail "match seq-strips: $(cat out.txt)"
"$bin/match" target.pgm query.pgm --variant seq --verbose >out.txt 2>err.txt
grep -q "^match: sad variant seq " err.txt || fail "match full --verbose line"
grep -q "^1 *20 *30 *0 *0.000$" out.txt || fail "match seq: $(cat out.txt)"
pass "match --variant chooses the method"

# match --top without separation: auto prunes and prints what full search prints.
"$bin/match" target.pgm query.pgm --top 5 --separation 1 --verbose >pruned.txt 2>err.txt
grep -q "^match: sad-pruned variant " err.txt || fail "match --top 5 pruned: $(cat err.txt)"
"$bin/match" target.pgm query.pgm --top 5 --separation 1 --method full >full.txt 2>/dev/null
[[ $(grep -c . pruned.txt) -eq 6 ]] || fail "match --top 5: $(cat pruned.txt)"
cmp -s pruned.txt full.txt || fail "match --top 5 pruned differs from full search"
pass "match --top without separation: pruned, as full search"

# compare --top: the portable pruned variants against full search's map, the others n/a.
"$bin/compare" --algo sad-pruned --size 160x120 --query-size 24x18 --top 7 --check-only \
  >out.txt 2>err.txt || fail "compare --top 7: $(grep -E 'WRONG|FAILED' out.txt)"
grep -q "^sad-pruned on 160x120-top7 " out.txt || fail "compare --top 7 case name"
grep -q "^kokkos-pruned-serial .* checked, max error 0$" out.txt || fail "compare --top 7: kokkos-pruned-serial"
grep -q "^seq-strips .*n/a: does not handle" out.txt || fail "compare --top 7: seq-strips"
pass "compare --algo sad-pruned --top"

# Choices that cannot run: one line, status 1 (2 for options that exclude each other), no output
# file.
expect_refusal() {
  local what=$1 pattern=$2 output=$3 expected=1
  shift 3
  [[ $1 == --usage ]] && expected=2 && shift
  local status=0
  "$@" >/dev/null 2>err.txt || status=$?
  [[ $status -eq $expected ]] || fail "$what: exit status $status, expected $expected"
  grep -q "$pattern" err.txt || fail "$what: message"
  [[ ! -e $output ]] || fail "$what: $output was written"
}
expect_refusal "unknown variant" "^filter: no conv variant named 'nope'" bad.pgm \
  "$bin/filter" target.pgm bad.pgm --variant nope
expect_refusal "variant of another backend" "runs on the serial backend, not openmp" bad.pgm \
  "$bin/filter" target.pgm bad.pgm --variant seq-aos --backend openmp
expect_refusal "pruned method with a full-search variant" "is not a pruned" /dev/null/none \
  --usage "$bin/match" target.pgm query.pgm --method pruned --variant seq
expect_refusal "pruned top-k kept apart" "without separation" /dev/null/none \
  --usage "$bin/match" target.pgm query.pgm --method pruned --top 3
pass "refused choices: one line, status 1, no file"

# Hostile images: a PNG whose header claims 60000 × 60000 pixels and holds 20 bytes of data, and
# a PPM over the reader's limits; each tool says what is wrong, with status 1 and no file.
python3 - <<'PY'
import struct, zlib
def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
header = struct.pack(">IIBBBBB", 60000, 60000, 8, 2, 0, 0, 0)
with open("huge.png", "wb") as f:
    f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", bytes(20)) +
            chunk(b"IEND", b""))
with open("wide.ppm", "wb") as f:
    f.write(b"P6\n16777217 1\n255\n" + bytes(3 * 16777217))
PY
expect_refusal "huge PNG header" \
  "^filter: 'huge.png' is truncated or corrupt: its PNG header claims 60000 x 60000 pixels" \
  out.png "$bin/filter" huge.png out.png
expect_refusal "huge PNG header" "^lbp: 'huge.png' is truncated or corrupt" out.pgm \
  "$bin/lbp" huge.png out.pgm
expect_refusal "side over the limit" "^match: 'wide.ppm' is too large: .* 16777216 pixels a side" \
  /dev/null/none "$bin/match" wide.ppm query.pgm
pass "hostile images: what is wrong, status 1, no file"
