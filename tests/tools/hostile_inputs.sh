#!/usr/bin/env bash
# The hostile-input suite: every tool given what careless and hostile users give it. Each case
# states the exit status it expects (0 done, 1 run failed, 2 usage error) and checks that:
# - no case ends by a signal (status > 128) or runs past its time limit;
# - a refused run prints one line on stderr, "<tool>: <what is wrong>", matching the case's pattern;
# - every output path holds a sentinel file before the run, and a refused run leaves each one
#   byte for byte as it was, with no temporary (*.partial-*) beside it.
# Then the things that must work on unusual input (streams, devices, alpha, headers) give the
# right bytes. Prints "N passed, M failed" and exits non-zero on any failure.
#
#   tests/tools/hostile_inputs.sh BIN_DIR [asan]
#
# With "asan" (a sanitizer build) the cases that cap the address space are skipped: the
# sanitizers reserve more address space than any useful cap.
set -uo pipefail

bin=$(cd "${1:?the folder of the tools}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
sanitized=${2:-}
work=$(mktemp -d /tmp/kbench-hostile-XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work"
# Kokkos' advice about OMP_PROC_BIND must not reach users: the variable is left unset here.
unset OMP_PROC_BIND OMP_PLACES
export OMP_NUM_THREADS=2
limit=60
passed=0
failed=0

bad() {
  echo "FAIL: $*"
  [[ -s err.txt ]] && sed 's/^/  stderr: /' err.txt | head -n 5
  failed=$((failed + 1))
}
good() {
  echo "ok: $*"
  passed=$((passed + 1))
}

# Sentinels: every output path a refused run names holds one beforehand.
sentinel_text="sentinel: must survive a refused run"
plant() {
  local p
  for p in "$@"; do printf '%s\n' "$sentinel_text" >"$p"; done
}
sentinels_intact() {
  local p
  for p in "$@"; do
    [[ -f $p && $(cat "$p") == "$sentinel_text" ]] || return 1
    compgen -G "$p.partial-*" >/dev/null && return 1
  done
  return 0
}

# expect STATUS PATTERN "OUT1 OUT2 ..." -- COMMAND...: runs COMMAND with sentinels at the outputs
# (for a refusal); for status 0 the outputs are only checked to exist afterwards.
expect() {
  local want=$1 pattern=$2 outputs=$3
  shift 4
  local name="$*"
  # shellcheck disable=SC2086
  [[ $want -ne 0 ]] && plant $outputs
  local status=0
  timeout "$limit" "$@" >out.txt 2>err.txt </dev/null || status=$?
  if [[ $status -ge 124 ]]; then
    bad "$name: status $status (a signal or the time limit), expected $want"
    return
  fi
  if [[ $status -ne $want ]]; then
    bad "$name: status $status, expected $want"
    return
  fi
  if [[ $want -ne 0 ]]; then
    if [[ $(grep -c . err.txt) -ne 1 ]] || ! grep -Eq "^[a-z-]+: .*$pattern" err.txt; then
      bad "$name: expected one line on stderr matching '$pattern'"
      return
    fi
    # shellcheck disable=SC2086
    if ! sentinels_intact $outputs; then
      bad "$name: an output was clobbered or a temporary left"
      return
    fi
  fi
  good "$name"
}

# --- Fixtures -------------------------------------------------------------------------------
python3 "$here/target_and_query.py"
python3 - <<'PY'
import struct, zlib

def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

def png(w, h, colour, channels, rows):
    raw = b"".join(b"\x00" + bytes(r) for r in rows)
    header = struct.pack(">IIBBBBB", w, h, 8, colour, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw))
            + chunk(b"IEND", b""))

w, h = 64, 48
# An opaque RGBA photo-like image, and one whose alpha varies.
rgba = [[c for x in range(w) for c in ((x * 5) % 256, (y * 9) % 256, (x * y) % 256, 255)]
        for y in range(h)]
open("opaque.png", "wb").write(png(w, h, 6, 4, rgba))
varying = [[c for x in range(w) for c in ((x * 5) % 256, (y * 9) % 256, 77, (x * 4 + y) % 256)]
           for y in range(h)]
open("alpha.png", "wb").write(png(w, h, 6, 4, varying))
# The same RGB image with one byte of its compressed data flipped: the chunk's CRC no longer
# matches.
good = bytearray(png(w, h, 2, 3, [[c for x in range(w) for c in ((x * 5) % 256, y, 9)]
                                  for y in range(h)]))
open("rgb.png", "wb").write(good)
idat = good.index(b"IDAT")
good[idat + 4 + 10] ^= 0x40
open("flipped.png", "wb").write(good)
# Descriptors as pandas writes them (a header of column numbers), with a byte-order mark, and
# as .npy, all holding the same 20 rows.
import random
random.seed(5)
rows = [[random.randrange(256) for _ in range(128)] for _ in range(20)]
with open("pandas.csv", "w") as f:
    f.write(",".join(str(i) for i in range(128)) + "\n")
    for r in rows:
        f.write(",".join(map(str, r)) + "\n")
with open("bom.csv", "wb") as f:
    f.write(b"\xef\xbb\xbf" + "\r\n".join(",".join(map(str, r)) for r in rows).encode() + b"\r\n")
def npy(path, count, data=b""):
    d = "{'descr': '|u1', 'fortran_order': False, 'shape': (%d, 128), }" % count
    d += " " * ((64 - (10 + len(d) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(d)) + d.encode() + data)
npy("plain.npy", 20, bytes(v for r in rows for v in r))
# A database header claiming 100 million rows (a sparse file of that size is made below).
npy("huge.npy", 100_000_000)
with open("mask.txt", "w") as f:
    f.write("0 -1 0\n-1 5 -1\n0 -1 0\n")
PY
truncate -s $((128 + 128 * 100000000)) huge.npy
"$bin/cemd-generate" --database db.npy --rows 300 --queries q.npy --query-rows 50 >/dev/null
"$bin/cemd-generate" --database p.npy --rows 200 --queries pq.npy --query-rows 4000 >/dev/null

# --- Unknown options and stray arguments: status 2, the word named, nothing written ---------
expect 2 "unknown option '--maks'" "out.png" -- "$bin/filter" target.pgm out.png --maks sharpen
expect 2 "unknown option '--unifrom'" "out.pgm" -- "$bin/lbp" target.pgm out.pgm --unifrom
expect 2 "unexpected argument 'extra'" "out.png" -- "$bin/filter" target.pgm out.png extra
expect 2 "unexpected argument 'extra'" "out.pgm" -- "$bin/lbp" target.pgm out.pgm extra
expect 2 "unexpected argument 'extra'" "" -- "$bin/match" target.pgm query.pgm extra
expect 2 "unknown option '--tpo'" "" -- "$bin/match" target.pgm query.pgm --tpo 3
expect 2 "unknown option '--ration'" "m.csv" -- "$bin/cemd-match" q.npy db.npy -o m.csv --ration 0.7
expect 2 "unknown option '--row'" "g.npy" -- "$bin/cemd-generate" --database g.npy --row 10 --rows 10
expect 2 "unknown option '--algorithm'" "" -- "$bin/compare" --algorithm conv
expect 2 "unknown option '--kokkos-thread=2'" "out.png" -- "$bin/filter" target.pgm out.png --kokkos-thread=2
expect 2 "unknown option '--kokkos-threads' .*--kokkos-threads=" "out.png" -- \
  "$bin/filter" target.pgm out.png --kokkos-threads 2
expect 2 "required" "out.png" -- "$bin/filter" target.pgm
expect 2 "--top" "" -- "$bin/match" target.pgm query.pgm --top many
expect 0 "" "" -- "$bin/filter" target.pgm ok.png --kokkos-threads=1

# --- Numbers out of range: refused, not wrapped; short messages -----------------------------
expect 2 "--seed: '-1' is not a whole number" "g.npy" -- "$bin/cemd-generate" --database g.npy --rows 5 --seed -1
expect 2 "--seed: '99999999999999999999999' is larger" "g.npy" -- \
  "$bin/cemd-generate" --database g.npy --rows 5 --seed 99999999999999999999999
expect 2 "--separation: Value -1 not in range 0 to 16777216" "" -- \
  "$bin/match" target.pgm query.pgm --separation -1
[[ $(wc -c <err.txt) -lt 200 ]] && good "--separation's message is short" ||
  bad "--separation's message is $(wc -c <err.txt) bytes"
expect 2 "ratio must be above 0" "m.csv" -- "$bin/cemd-match" q.npy db.npy -o m.csv --ratio 0
expect 2 "ratio must be above 0" "m.csv" -- "$bin/cemd-match" q.npy db.npy -o m.csv --ratio 1.5
expect 2 "ratio must be above 0" "" -- "$bin/compare" --algo cemd --size 8x8 --ratio 2

# --- Outputs that are inputs or each other: refused before any work -------------------------
cp target.pgm in.pgm
ln in.pgm hard.pgm
ln -s in.pgm soft.pgm
mkdir -p sub
for tool in filter lbp; do
  expect 2 "is the input image" "" -- "$bin/$tool" in.pgm in.pgm
  expect 2 "is the input image" "" -- "$bin/$tool" in.pgm hard.pgm
  expect 2 "is the input image" "" -- "$bin/$tool" in.pgm soft.pgm
  expect 2 "is the input image" "" -- "$bin/$tool" in.pgm ./sub/../in.pgm
done
cmp -s in.pgm target.pgm && good "the input survived every attempt" || bad "the input was changed"
expect 2 "is also the code image" "codes.pgm" -- "$bin/lbp" target.pgm codes.pgm --hist codes.pgm
expect 2 "is the target image" "" -- "$bin/match" in.pgm query.pgm -o in.pgm
expect 2 "is the query file" "" -- "$bin/cemd-match" q.npy db.npy -o q.npy
expect 2 "is the database file" "" -- "$bin/cemd-match" q.npy db.npy -o db.npy
expect 2 "is also the matches file" "m.csv" -- "$bin/cemd-match" q.npy db.npy -o m.csv --all-pairs m.csv
expect 2 "is also --database" "g.npy" -- \
  "$bin/cemd-generate" --database g.npy --rows 5 --queries g.npy --query-rows 5
expect 2 "is the mask file" "" -- "$bin/filter" target.pgm mask.txt --mask mask.txt
expect 2 "--json .* is --image" "" -- "$bin/compare" --algo conv --image in.pgm --json in.pgm
mkdir -p folder
expect 2 "is a folder" "" -- "$bin/filter" target.pgm folder
cmp -s db.npy <("$bin/cemd-generate" --database - --rows 300 --queries /dev/null --query-rows 50 2>/dev/null) &&
  good "the database survived" || bad "db.npy changed"

# --- A failed second output leaves every output as it was -----------------------------------
expect 1 "cannot write 'missing/dir/h.csv'" "codes.pgm" -- \
  "$bin/lbp" target.pgm codes.pgm --hist missing/dir/h.csv
expect 1 "cannot write 'missing/q.npy'" "g.npy" -- \
  "$bin/cemd-generate" --database g.npy --rows 5 --queries missing/q.npy --query-rows 5
expect 1 "cannot write 'missing/a.csv'" "m.csv" -- \
  "$bin/cemd-match" q.npy db.npy -o m.csv --all-pairs missing/a.csv
# A write that fails part way (a file-size limit standing in for a full disk): the first output
# is complete, the matrix is not, and neither replaces its old file.
plant m.csv a.csv
status=0
(trap '' XFSZ; ulimit -f 64; exec "$bin/cemd-match" q.npy db.npy -o m.csv --all-pairs a.csv) \
  >out.txt 2>err.txt || status=$?
if [[ $status -eq 1 ]] && grep -q "cannot write 'a.csv'" err.txt && sentinels_intact m.csv a.csv; then
  good "a full disk during the matrix leaves both old files"
else
  bad "full disk: status $status"
fi

# --- Signals: SIGINT and SIGTERM remove the temporaries, old files stay ---------------------
# A shell starts background jobs with SIGINT ignored; the launcher gives it back its default.
default_signals() {
  exec python3 -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.execv(sys.argv[1], sys.argv[1:])' "$@"
}
for signal in INT TERM; do
  plant big.npy bigq.npy
  default_signals "$bin/cemd-generate" --database big.npy --rows 2000000 --queries bigq.npy \
    --query-rows 1000 >/dev/null 2>&1 &
  pid=$!
  sleep 0.5
  kill -s "$signal" "$pid"
  wait "$pid"
  status=$?
  if [[ $status -gt 128 ]] && sentinels_intact big.npy bigq.npy; then
    good "SIG$signal mid-run: status $status, old files intact, no temporary"
  else
    bad "SIG$signal mid-run: status $status; $(ls)"
  fi
done

# --- Character devices and standard output are written in place -----------------------------
"$bin/filter" target.pgm file.pgm --mask sharpen
expect 0 "" "" -- "$bin/filter" target.pgm /dev/null --mask sharpen
[[ -c /dev/null ]] && good "/dev/null is still a device" || bad "/dev/null was replaced"
"$bin/filter" target.pgm - --mask sharpen >stdout.pgm 2>err.txt
cmp -s file.pgm stdout.pgm && good "filter - writes the PGM to standard output" || bad "filter -"
[[ ! -e ./- ]] && good "no file named -" || bad "a file named - was created"
"$bin/lbp" target.pgm codes.pgm --hist - >hist.txt 2>err.txt
head -n 1 hist.txt | grep -q "^bin,count$" && good "lbp --hist - writes CSV to standard output" ||
  bad "lbp --hist -"
"$bin/match" target.pgm query.pgm -o - >boxes.ppm 2>table.txt
head -c 2 boxes.ppm | grep -q P6 && grep -q "^1 *20 *30 *0 *0.000$" table.txt &&
  good "match -o -: the image on stdout, the table on stderr" || bad "match -o -"
"$bin/cemd-match" q.npy db.npy -o - >stdout.csv 2>err.txt
"$bin/cemd-match" q.npy db.npy -o file.csv >/dev/null 2>&1
cmp -s stdout.csv file.csv && good "cemd-match -o - writes the CSV alone to standard output" ||
  bad "cemd-match -o -"
expect 2 "cannot hold a 4-channel image" "" -- "$bin/filter" opaque.png -
# A symbolic link to an output is kept, its target replaced; an existing file keeps its mode.
cp file.pgm real.pgm
chmod 600 real.pgm
ln -s real.pgm link.pgm
"$bin/filter" target.pgm link.pgm --mask identity
[[ -L link.pgm ]] && cmp -s real.pgm target.pgm && [[ $(stat -c %a real.pgm) == 600 ]] &&
  good "a symlinked output: link kept, target written, mode kept" || bad "symlinked output"

# --- Endless and oversized streams: bounded, refused with a message -------------------------
expect 1 "signature" "out.png" -- "$bin/filter" /dev/zero out.png
expect 1 "signature" "out.pgm" -- "$bin/lbp" /dev/zero out.pgm
expect 1 "signature" "" -- "$bin/match" /dev/zero query.pgm
expect 1 "limit" "out.png" -- "$bin/filter" target.pgm out.png --mask /dev/zero
ln -s /dev/zero zero.csv
ln -s /dev/zero zero.key
ln -s /dev/zero zero.npy
expect 1 "longer than 65536 bytes" "m.csv" -- "$bin/cemd-match" zero.csv db.npy -o m.csv
expect 1 "longer than 1024 bytes" "m.csv" -- "$bin/cemd-match" zero.key db.npy -o m.csv
expect 1 "npy" "m.csv" -- "$bin/cemd-match" zero.npy db.npy -o m.csv
plant out.png
status=0
timeout "$limit" bash -c "cat /dev/zero | '$bin/filter' - out.png" 2>err.txt || status=$?
[[ $status -eq 1 ]] && grep -q signature err.txt && sentinels_intact out.png &&
  good "an endless stream on stdin is refused" || bad "endless stdin: status $status"
# A valid PGM followed by endless bytes: read to the PGM's end, the rest ignored.
(printf 'P5\n64 48\n255\n'; tail -c +14 target.pgm; cat /dev/zero) |
  timeout "$limit" "$bin/filter" - piped.pgm --mask identity 2>err.txt
cmp -s piped.pgm target.pgm && good "a PGM on a pipe is read to its end" || bad "PGM on a pipe"

# --- Memory: an allocation that fails names its size, never a signal ------------------------
if [[ $sanitized != asan ]]; then
  python3 -c "import sys; sys.stdout.buffer.write(b'P6\n12000 12000\n255\n')" >big.ppm
  truncate -s $((15 + 3 * 12000 * 12000)) big.ppm
  plant out.ppm
  status=0
  (ulimit -v 400000; exec timeout "$limit" "$bin/filter" big.ppm out.ppm) >out.txt 2>err.txt ||
    status=$?
  if [[ $status -eq 1 && $(grep -c . err.txt) -eq 1 ]] && grep -Eq "memory.*[0-9]+ bytes" err.txt &&
    sentinels_intact out.ppm; then
    good "out of memory: one line naming the size, status 1"
  else
    bad "out of memory: status $status"
  fi
fi
expect 1 "--all-pairs: the 4000 x 100000000 distance matrix needs 1490.12 GiB of memory" \
  "m.csv a.csv" -- "$bin/cemd-match" pq.npy huge.npy -o m.csv --all-pairs a.csv

# --- Images users have: alpha kept, corrupt data refused, labels viewable -------------------
# Reads an 8-bit PNG's pixels (stored or deflated, filters 0-4) for the checks below.
png_pixels() {
  python3 - "$1" <<'PY'
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
pos, idat = 8, b""
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR":
        w, h, depth, colour = struct.unpack(">IIBB", body[:10])
    if kind == b"IDAT":
        idat += body
    pos += 12 + n
channels = {0: 1, 2: 3, 4: 2, 6: 4}[colour]
raw, stride, out, prev = zlib.decompress(idat), w * channels, [], bytearray(w * channels)
for y in range(h):
    f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - channels] if i >= channels else 0
        b, c = prev[i], prev[i - channels] if i >= channels else 0
        p = a + b - c
        pred = [0, a, b, (a + b) // 2,
                a if abs(p - a) <= min(abs(p - b), abs(p - c)) else b if abs(p - b) <= abs(p - c) else c][f]
        line[i] = (line[i] + pred) & 255
    out.append(bytes(line))
    prev = line
print(channels, " ".join(str(v) for row in out for v in row[channels - 1::channels]))
PY
}
"$bin/filter" opaque.png edged.png --mask edge
read -r channels alphas < <(png_pixels edged.png)
[[ $channels == 4 ]] && ! grep -qv '^255$' <(tr ' ' '\n' <<<"$alphas") &&
  good "filter --mask edge keeps an opaque RGBA image opaque" || bad "opaque RGBA lost its alpha"
"$bin/filter" alpha.png cropped.png --mask box --border crop
expected=$(python3 -c "print(' '.join(str((x * 4 + y) % 256) for y in range(1, 47) for x in range(1, 63)))")
read -r channels alphas < <(png_pixels cropped.png)
[[ $channels == 4 && $alphas == "$expected" ]] &&
  good "filter --border crop passes the alpha channel through, cropped" || bad "alpha not passed through"
expect 1 "CRC" "out.png" -- "$bin/filter" flipped.png out.png
expect 1 "CRC" "out.pgm" -- "$bin/lbp" flipped.png out.pgm
"$bin/lbp" target.pgm uniform.png --uniform --scale
read -r channels labels < <(png_pixels uniform.png)
python3 -c "
import sys
values = set(int(v) for v in sys.argv[1].split())
steps = {round(l * 255 / 58) for l in range(59)}
sys.exit(0 if values <= steps and max(values) > 58 else 1)" "$labels" &&
  good "lbp --uniform --scale spreads the labels over 0..255" || bad "lbp --scale"

# --- Descriptor files as users have them ----------------------------------------------------
"$bin/cemd-match" plain.npy db.npy -o from_npy.csv >/dev/null
"$bin/cemd-match" pandas.csv db.npy -o from_pandas.csv --verbose >/dev/null 2>err.txt
cmp -s from_npy.csv from_pandas.csv && good "a pandas CSV (header 0..127) gives the .npy's matches" ||
  bad "pandas CSV header read as a row"
grep -q "header" err.txt && good "--verbose says the header line was skipped" ||
  bad "--verbose did not mention the header"
"$bin/cemd-match" bom.csv db.npy -o from_bom.csv >/dev/null 2>err.txt
cmp -s from_npy.csv from_bom.csv && good "a CSV with a BOM and CRLF gives the .npy's matches" ||
  bad "BOM CSV"
"$bin/cemd-match" q.npy db.npy -o m.csv --all-pairs a.csv >/dev/null
[[ $(head -c 12 a.csv) == "query,0,1,2," && $(wc -l <a.csv) -eq 51 ]] &&
  good "the matrix CSV has a header row" || bad "matrix header"

# --- What the user sees --------------------------------------------------------------------
for tool in filter lbp; do
  "$bin/$tool" target.pgm shown.png >out.txt 2>err.txt
  [[ ! -s out.txt && ! -s err.txt ]] && good "$tool prints nothing by default (no Kokkos warning)" ||
    bad "$tool printed: $(cat out.txt err.txt | head -n 2)"
done
"$bin/filter" target.pgm v.png --verbose 2>err.txt
"$bin/lbp" target.pgm v.pgm --verbose 2>>err.txt
"$bin/match" target.pgm query.pgm --verbose >/dev/null 2>>err.txt
"$bin/cemd-match" q.npy db.npy -o m.csv --verbose >/dev/null 2>>err.txt
[[ $(grep -Ec '^(filter|lbp|match|cemd-match): [a-z-]+ variant [a-z0-9-]+ \([a-z_]+, [a-z]+\): ' err.txt) -eq 4 ]] &&
  good "--verbose: one variant line in one form on stderr in every tool" || bad "--verbose lines"
"$bin/match" target.pgm query.pgm --top 2 >out.txt
head -n 1 out.txt | grep -q "mean_diff" && grep -q "^1 *20 *30 *0 *0.000$" out.txt &&
  good "match prints the mean difference per pixel" || bad "match's table: $(cat out.txt)"
for tool in filter lbp match cemd-match cemd-generate compare; do
  "$bin/$tool" --help >help.txt 2>&1
  grep -q "Exit status: 0 done; 1 .*; 2 usage error" help.txt && good "$tool --help states the exit statuses" ||
    bad "$tool --help"
done
"$bin/match" --help | grep -q "red for the best" && good "match --help says what the colours mean" ||
  bad "match --help colours"
"$bin/filter" --help | grep -q "N×N numbers" && good "filter --help states the mask file format" ||
  bad "filter --help mask format"
"$bin/cemd-match" --help | grep -q "whole number from 0 to 255" && "$bin/cemd-match" --help | grep -q "above 0 and at most 1" &&
  good "cemd-match --help states the value and ratio ranges" || bad "cemd-match --help ranges"
# The progress line: on a terminal for a run over a second, never with --quiet or into a file.
# About 10^8 comparisons on one core: a few seconds (a tenth of it under the sanitizers).
slow_rows=25000
[[ $sanitized == asan ]] && slow_rows=2500
"$bin/cemd-generate" --database slow.npy --rows $slow_rows >/dev/null
script -qec "$bin/cemd-match pq.npy slow.npy -o /dev/null --backend serial" /dev/null >tty.txt 2>&1
grep -q "matching .*database rows" tty.txt && good "cemd-match shows its progress on a terminal" ||
  bad "no progress line on a terminal: $(tr '\r' '\n' <tty.txt | tail -n 2)"
script -qec "$bin/cemd-match pq.npy slow.npy -o /dev/null --backend serial --quiet" /dev/null >tty.txt 2>&1
! grep -q "matching" tty.txt && good "--quiet silences it" || bad "--quiet still showed progress"
"$bin/cemd-match" pq.npy slow.npy -o /dev/null --backend serial >/dev/null 2>err.txt
[[ ! -s err.txt ]] && good "no progress line into a file" || bad "progress written to a file"

echo "hostile inputs: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
