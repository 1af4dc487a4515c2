#!/usr/bin/env bash
# End-to-end tests of cemd-match, alone and under mpirun (host backend, CPU ranks).
#
#   tests/mpi/run_mpi_tests.sh tool   BIN_DIR               cemd-match alone: results, bad input
#   tests/mpi/run_mpi_tests.sh match  BIN_DIR MPIEXEC       np 1, 2, 3: byte-identical to alone
#   tests/mpi/run_mpi_tests.sh faults BIN_DIR MPIEXEC       one rank failing ends the job
#
# BIN_DIR holds cemd-match and cemd-generate. ctest runs the modes (the MPI ones when the build
# has KBENCH_MPI).
set -euo pipefail

mode=${1:?mode: tool, match or faults}
bin=$(cd "${2:?folder of cemd-match and cemd-generate}" && pwd)
mpiexec=${3:-mpirun}
match="$bin/cemd-match"
work=$(mktemp -d /tmp/kbench-cemd-mpi-XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work"

# Open MPI under CI (root, containers, few cores): allow root, more ranks than cores, no
# binding and no ptrace-based single-copy transport; one OpenMP thread per rank.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMP_NUM_THREADS=1 OMP_PROC_BIND=false
# Seconds a job that must fail may take before the test calls it a hang.
fault_limit=60

# Failing runs' messages are in err.txt.
fail() {
  echo "FAIL: $*" >&2
  [[ -s err.txt ]] && sed 's/^/  stderr: /' err.txt >&2
  exit 1
}
pass() { echo "ok: $*"; }

# Runs under mpirun, its messages (Kokkos' oversubscription warnings among them) in err.txt.
mpi() {
  local np=$1
  shift
  "$mpiexec" --oversubscribe --bind-to none -np "$np" "$@" 2>err.txt
}

# No result and no temporary file may be left in the folder.
expect_no_output() {
  local name=$1
  [[ ! -e $name ]] || fail "$name was written by a failed run"
  if compgen -G "$name.partial-*" >/dev/null; then fail "a temporary $name.partial-* was left"; fi
}

"$bin/cemd-generate" --database db.npy --rows 37 --queries q.npy --query-rows 40 --seed 7 >/dev/null
"$bin/cemd-generate" --database ties.npy --rows 6 --copies 3 --seed 8 >/dev/null
"$bin/cemd-generate" --database one.npy --rows 1 --seed 9 >/dev/null
"$bin/cemd-generate" --database two.npy --rows 2 --seed 10 >/dev/null

case "$mode" in
  tool)
    "$match" q.npy db.npy -o m.csv --all-pairs d.csv >out.txt
    grep -q "40 queries, 37 database descriptors" out.txt || fail "summary line: $(cat out.txt)"
    [[ $(head -1 m.csv) == query,index,distance,second_index,second_distance,accepted ]] ||
      fail "matches header"
    [[ $(wc -l <m.csv) -eq 41 ]] || fail "matches: 40 rows expected"
    # A header line naming the database rows, then one line per query led by its row.
    [[ $(head -1 d.csv) == "query,$(seq -s, 0 36)" ]] || fail "matrix header: $(head -1 d.csv)"
    [[ $(tail -n +2 d.csv | cut -d, -f1 | paste -sd,) == "$(seq -s, 0 39)" ]] ||
      fail "matrix: query rows 0 to 39 expected"
    # Each query's line holds 37 distances, whose minimum is the match's distance (same bits,
    # same printing).
    awk -F, 'NR == FNR { if (FNR == 1) next
                         if (NF != 38) bad = 1
                         best = $2; for (i = 3; i <= NF; ++i) if ($i + 0 < best + 0) best = $i
                         min[$1] = best; next }
             FNR > 1 && $3 != min[$1] { bad = 1 } END { exit bad }' d.csv m.csv ||
      fail "matrix minima differ from the matched distances"
    "$match" q.npy db.npy -o m2.csv >/dev/null
    cmp -s m.csv m2.csv || fail "matches with and without --all-pairs differ"
    pass "matches and all-pairs matrix"

    # The database read by range on several threads, in pieces matched one by one (one-row
    # pieces, pieces that do not divide the 37 rows, more rows than the file): the same bytes.
    for threads in 1 2 5; do
      for piece in 1 7 100; do
        "$match" q.npy db.npy -o p.csv --all-pairs pd.csv --reader-threads "$threads" \
          --piece-rows "$piece" >/dev/null
        cmp -s m.csv p.csv || fail "$threads reader threads, pieces of $piece: matches differ"
        cmp -s d.csv pd.csv || fail "$threads reader threads, pieces of $piece: matrix differs"
      done
    done
    KBENCH_READER_THREADS=3 "$match" q.npy db.npy -o p.csv --piece-rows 4 --verbose 2>err.txt >/dev/null
    cmp -s m.csv p.csv || fail "KBENCH_READER_THREADS=3: matches differ"
    grep -q "3 reader thread(s) per GPU or rank, up to 10 piece(s)" err.txt ||
      fail "--verbose does not tell the reading: $(cat err.txt)"
    pass "reader threads and pieces: byte-identical"
    for bad in "--reader-threads 0" "--reader-threads 257" "--reader-threads x" "--piece-rows 0"; do
      set +e
      # shellcheck disable=SC2086
      "$match" q.npy db.npy -o bad.csv $bad 2>err.txt
      status=$?
      set -e
      [[ $status -eq 2 ]] || fail "$bad: exit status $status, expected 2"
      expect_no_output bad.csv
    done
    set +e
    KBENCH_READER_THREADS=0 "$match" q.npy db.npy -o bad.csv 2>err.txt
    status=$?
    set -e
    [[ $status -eq 2 ]] || fail "KBENCH_READER_THREADS=0: exit status $status, expected 2"
    grep -q "reader-threads" err.txt || fail "KBENCH_READER_THREADS=0: $(cat err.txt)"
    pass "bad reader threads and piece sizes refused"

    # Exact ties across copies go to the smallest row: the best is in the first copy, the second
    # at the same distance (its copy 6 rows on, unless another first-copy row ties too).
    "$match" q.npy ties.npy -o t.csv --mode raw >/dev/null
    awk -F, 'NR > 1 && !($2 < 6 && ($4 == $2 + 6 || $4 < 6) && $3 == $5) { bad = 1 }
             END { exit bad }' t.csv || fail "tie rule"
    pass "ties to the smallest database row"

    # --gpus-per-rank: on two GPUs or more, one process on two gives one GPU's bytes (ties across
    # the GPUs' parts included) and tells its start-up; elsewhere it is refused before any file.
    gpus=0
    command -v nvidia-smi >/dev/null && gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
    if ((gpus >= 2)); then
      for distance in "--mode raw" "--mode normalised" "--metric l2"; do
        # shellcheck disable=SC2086
        "$match" q.npy ties.npy -o g1.csv $distance >/dev/null
        # shellcheck disable=SC2086
        "$match" q.npy ties.npy -o g2.csv $distance --gpus-per-rank 2 --piece-rows 5 --verbose \
          2>err.txt >/dev/null
        cmp -s g1.csv g2.csv || fail "--gpus-per-rank 2 $distance: matches differ from one GPU's"
        grep -q "1 rank(s) x 2 GPU(s)" err.txt && grep -q "^cemd-match: started in" err.txt ||
          fail "--gpus-per-rank 2 --verbose: $(cat err.txt)"
      done
      pass "--gpus-per-rank 2: one GPU's bytes"
    else
      set +e
      "$match" q.npy db.npy -o bad.csv --gpus-per-rank 2 2>err.txt
      status=$?
      set -e
      [[ $status -eq 1 ]] || fail "--gpus-per-rank 2 on $gpus GPU(s): exit status $status"
      grep -q "GPUs per rank\|--gpus-per-rank 2 needs" err.txt ||
        fail "--gpus-per-rank 2 on $gpus GPU(s): $(cat err.txt)"
      expect_no_output bad.csv
      pass "--gpus-per-rank 2 refused on $gpus GPU(s)"
    fi

    "$match" q.npy one.npy -o o.csv >/dev/null
    awk -F, 'NR > 1 && !($2 == 0 && $4 == -1 && $5 == "" && $6 == 0) { bad = 1 } END { exit bad }' \
      o.csv || fail "one-row database"
    pass "one-row database: no second neighbour"

    # Bad input: a clear message, exit status 1, no file.
    head -c 1000 db.npy >short.npy
    for args in "q.npy short.npy" "q.npy missing.npy" "short.npy db.npy"; do
      set +e
      # shellcheck disable=SC2086
      "$match" $args -o bad.csv 2>err.txt
      status=$?
      set -e
      [[ $status -eq 1 ]] || fail "$args: exit status $status, expected 1"
      grep -q "^cemd-match: .*\(truncated\|cannot open\)" err.txt || fail "$args: $(cat err.txt)"
      expect_no_output bad.csv
    done
    if "$match" q.npy db.npy -o bad.csv --ratio 1.5 2>err.txt; then fail "ratio 1.5 accepted"; fi
    expect_no_output bad.csv
    pass "bad input refused without output"
    ;;

  match)
    for case in "db.npy:normalised" "ties.npy:raw" "two.npy:normalised" "one.npy:raw"; do
      database=${case%%:*}
      distance=${case##*:}
      "$match" q.npy "$database" -o alone.csv --mode "$distance" --all-pairs alone-d.csv >/dev/null
      for np in 1 2 3; do
        rm -f mpi.csv mpi-d.csv
        mpi "$np" "$match" q.npy "$database" -o mpi.csv --mode "$distance" \
          --all-pairs mpi-d.csv >/dev/null
        cmp -s alone.csv mpi.csv || fail "$database $distance: np $np matches differ"
        cmp -s alone-d.csv mpi-d.csv || fail "$database $distance: np $np matrix differs"
        rm -f mpi.csv
        mpi "$np" "$match" q.npy "$database" -o mpi.csv --mode "$distance" >/dev/null
        cmp -s alone.csv mpi.csv || fail "$database $distance: np $np (fused) matches differ"
      done
      pass "$database ($distance): np 1, 2, 3 byte-identical to one process"
    done
    "$match" q.npy db.npy -o alone.csv --metric l2 >/dev/null
    mpi 3 "$match" q.npy db.npy -o mpi.csv --metric l2 >/dev/null
    cmp -s alone.csv mpi.csv || fail "l2: np 3 differs"
    pass "l2: np 3 byte-identical"
    # Each rank's shard in pieces read by several threads.
    for np in 2 3; do
      mpi "$np" "$match" q.npy db.npy -o mpi.csv --metric l2 --reader-threads 3 --piece-rows 4 \
        >/dev/null
      cmp -s alone.csv mpi.csv || fail "l2: np $np with pieces and reader threads differs"
    done
    pass "l2: np 2, 3 in pieces, 3 reader threads each: byte-identical"
    # Every rank reads the query file itself when its copy holds rank 0's bytes; a rank whose
    # copy differs, or that has none, gets rank 0's queries by broadcast.
    "$bin/cemd-generate" --database other-db.npy --rows 37 --queries other-q.npy --query-rows 40 \
      --seed 11 >/dev/null
    mpi 2 "$match" q.npy db.npy -o mpi.csv --metric l2 --verbose >/dev/null
    cmp -s alone.csv mpi.csv || fail "l2: np 2 with --verbose differs"
    grep -q "queries read by every rank" err.txt || fail "np 2: the ranks did not read the queries"
    for other in other-q.npy missing.npy; do
      rm -f mpi.csv
      "$mpiexec" --oversubscribe --bind-to none -np 2 "$match" q.npy db.npy -o mpi.csv --metric l2 \
        --verbose : -np 1 "$match" "$other" db.npy -o mpi.csv --metric l2 --verbose \
        >/dev/null 2>err.txt
      cmp -s alone.csv mpi.csv || fail "queries $other on rank 2: the matches differ"
      grep -q "queries read and broadcast" err.txt || fail "queries $other on rank 2: no broadcast"
    done
    pass "queries read by every rank; another file or none on rank 2: rank 0's broadcast"
    ;;

  faults)
    # Every job below must fail, name the failing rank, stop within the limit and write nothing.
    expect_job_failure() {
      local what=$1 pattern=$2
      shift 2
      local status=0
      # timeout's own status for a job it had to stop is 124 (mpirun's for a rank killed by a
      # signal is 128 + the signal).
      timeout "$fault_limit" "$@" >out.txt 2>err.txt || status=$?
      [[ $status -ne 124 ]] || fail "$what: still running after ${fault_limit} s"
      [[ $status -ne 0 ]] || fail "$what: exit status 0"
      if [[ -n $pattern ]] && ! grep -q "$pattern" err.txt; then
        fail "$what: no message matching '$pattern': $(cat err.txt)"
      fi
      expect_no_output m.csv
      pass "$what (exit status $status)"
    }
    # Same header, data cut short: only rank 2 reads this copy.
    head -c $(($(stat -c %s db.npy) - 300)) db.npy >short.npy
    expect_job_failure "truncated file on rank 2" "cemd-match: rank 2: .*truncated" \
      "$mpiexec" --oversubscribe --bind-to none -np 2 "$match" q.npy db.npy -o m.csv \
      : -np 1 "$match" q.npy short.npy -o m.csv
    # A valid file of another size on rank 1.
    expect_job_failure "another database on rank 1" "cemd-match: rank 1: .*but 37 on rank 0" \
      "$mpiexec" --oversubscribe --bind-to none -np 1 "$match" q.npy db.npy -o m.csv \
      : -np 1 "$match" q.npy two.npy -o m.csv : -np 1 "$match" q.npy db.npy -o m.csv
    # Bad queries: rank 0 reads them, the others wait for the broadcast.
    expect_job_failure "truncated queries" "cemd-match: rank 0: .*truncated" \
      "$mpiexec" --oversubscribe --bind-to none -np 3 "$match" short.npy db.npy -o m.csv
    # A rank that dies (killed) before it ever joins the job.
    expect_job_failure "a rank killed" "" \
      "$mpiexec" --oversubscribe --bind-to none -np 2 "$match" q.npy db.npy -o m.csv \
      : -np 1 sh -c 'kill -9 $$'
    ;;

  *)
    fail "unknown mode $mode (tool, match or faults)"
    ;;
esac
