#!/usr/bin/env bash
# Strong and weak scaling of cemd-match over GPUs with MPI (issues 11 and 36), on one machine with
# two or four GPUs. Every study runs the same matching these ways:
#   alone      cemd-match without a launcher, one GPU (the single-process rate)
#   np1        mpirun -np 1: one rank, one GPU (the cost of MPI itself)
#   np2        mpirun -np 2: two ranks, one GPU each (by node-local rank)
#   np1-gpr2   mpirun -np 1 --gpus-per-rank 2: one rank driving two GPUs, one host thread each
#   np4, np1-gpr4   the same with four GPUs (machines with four or more)
# strong: the same queries x database on 1, 2 and 4 GPUs; weak: database rows per GPU fixed (the
# 2- and 4-GPU runs match a database 2 and 4 times the 1-GPU one). Each run records what
# cemd-match --verbose prints: the match time (the slowest rank's or GPU's variant runs on its
# pieces, host<->device copies included), the end-to-end time (start to written file: reading the
# files, broadcast, reduction, CSV), the time spent reading database rows and the time the
# matching waited for them (the reading it did not hide; docs/scale-out.md). The result files of
# every run are compared byte for byte with the single-process one.
#
#   perf/cemd_mpi_scaling.sh OUTDIR
#
# OUTDIR receives device.txt, runs.csv, scaling.jsonl (one JSON line per run, keys as compare's
# where they mean the same), scaling.md and logs/. Binaries from KBENCH_BUILD (default
# build/cuda); nothing is built here. Sizes and settings from the environment:
#   CEMD_QUERIES        queries (default 65536)
#   CEMD_DATABASE       strong-scaling database rows (default 16777216: 2 GiB of .npy)
#   CEMD_WEAK_DATABASE  weak-scaling database rows per GPU (default CEMD_DATABASE / 4)
#   CEMD_TIME_BUDGET_S  seconds of matching all runs may take (default 300): a calibration run
#                       measures the rate first and, unless CEMD_DATABASE is set, the databases
#                       are halved until the predicted total fits
#   CEMD_DISTANCE       normalised, raw or l2 (default normalised)
#   CEMD_VARIANT        registry variant for every run (default: cemd-match's choice)
#   CEMD_SEED           seed of the generated sets (default 1)
#   CEMD_WORK           folder for the generated inputs (default a new one under /tmp; removed)
#   CEMD_MATCH_ARGS     more cemd-match options for every run (e.g. --reader-threads 4)
#   MPIEXEC             the MPI launcher and its options (default mpirun)
set -uo pipefail

out=${1:?usage: perf/cemd_mpi_scaling.sh OUTDIR}
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${KBENCH_BUILD:-$repo/build/cuda}
bin=$build/bin
read -ra mpiexec <<<"${MPIEXEC:-mpirun}"
queries=${CEMD_QUERIES:-65536}
database=${CEMD_DATABASE:-16777216}
weak_database=${CEMD_WEAK_DATABASE:-}
budget_s=${CEMD_TIME_BUDGET_S:-300}
distance=${CEMD_DISTANCE:-normalised}
seed=${CEMD_SEED:-1}
variant_args=()
[[ -n ${CEMD_VARIANT:-} ]] && variant_args=(--variant "$CEMD_VARIANT")
read -ra match_args <<<"${CEMD_MATCH_ARGS:-}"
distance_args=(--mode "$distance")
[[ $distance == l2 ]] && distance_args=(--metric l2)

for tool in cemd-match cemd-generate; do
  [[ -x $bin/$tool ]] || { echo "cemd_mpi_scaling: no $bin/$tool (set KBENCH_BUILD)" >&2; exit 1; }
done
mkdir -p "$out/logs"
out=$(cd "$out" && pwd)
work=${CEMD_WORK:-$(mktemp -d /tmp/kbench-cemd-scaling-XXXXXX)}
[[ -z ${CEMD_WORK:-} ]] && trap 'rm -rf "$work"' EXIT
mkdir -p "$work"

# Open MPI as root on a rented machine; one rank per GPU needs no binding to cores (and no
# OpenMP binding, which would put every rank's threads on the same first cores).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export NCCL_NVLS_ENABLE=0
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}/usr/local/cuda/lib64
launch=("${mpiexec[@]}" --bind-to none)

gpus=0
command -v nvidia-smi >/dev/null && gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
device=$( ((gpus > 0)) && nvidia-smi --query-gpu=name --format=csv,noheader | head -1 ||
  echo "host (no GPU)")
commit=$(cat "$build/commit.txt" 2>/dev/null || git -C "$repo" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
{
  echo "$date"
  ((gpus > 0)) && nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm \
    --format=csv,noheader
  echo "commit $commit (the binaries' build)"
  echo "host $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//') x $(nproc)"
  "${mpiexec[0]}" --version 2>&1 | head -1
} >"$out/device.txt"
cat "$out/device.txt"
((gpus >= 2)) || echo "cemd_mpi_scaling: $gpus GPU(s): the 2-GPU runs are skipped" >&2

# Rows as the cases name them (65536 -> 64Ki).
size_name() {
  local n=$1
  if ((n % 1048576 == 0)); then echo "$((n / 1048576))Mi"
  elif ((n % 1024 == 0)); then echo "$((n / 1024))Ki"
  else echo "$n"; fi
}

# generate FILE ROWS [more cemd-generate arguments]
generate() {
  local file=$1 rows=$2
  shift 2
  [[ -s $work/$file ]] && return 0
  echo "generating $file ($rows rows)"
  "$bin/cemd-generate" --database "$work/$file" --rows "$rows" --seed "$seed" "$@" \
    >>"$out/logs/generate.log" 2>&1 || { echo "cemd-generate failed (logs/generate.log)" >&2; exit 1; }
}

echo "study,config,ranks,gpus_per_rank,gpus,queries,database,comparisons,variant,backend,match_s,end_to_end_s,match_rate,end_to_end_rate,identical,read_s,waited_s" \
  >"$out/runs.csv"
: >"$out/scaling.jsonl"

# run STUDY CONFIG RANKS GPUS_PER_RANK DATABASE_FILE ROWS: one run, one line of runs.csv and
# scaling.jsonl. RANKS 0 runs cemd-match without the launcher.
run() {
  local study=$1 config=$2 ranks=$3 per_rank=$4 db=$5 rows=$6
  local result="$work/$study-$config.csv" log="$out/logs/$study-$config.log"
  local prefix=() extra=()
  ((ranks > 0)) && prefix=("${launch[@]}" -np "$ranks")
  ((per_rank > 1)) && extra=(--gpus-per-rank "$per_rank")
  local used=$((ranks > 0 ? ranks * per_rank : 1))
  echo "$study $config: $(size_name "$queries") x $(size_name "$rows") on $used GPU(s)"
  rm -f "$result"
  if ! "${prefix[@]}" "$bin/cemd-match" "$work/q.npy" "$work/$db" -o "$result" --verbose \
    "${distance_args[@]}" "${variant_args[@]}" "${match_args[@]}" "${extra[@]}" >"$log" 2>&1; then
    echo "  FAILED (logs/$study-$config.log)" >&2
    status=1
    return 1
  fi
  local variant backend timing match_s total_s identical=reference
  variant=$(sed -n 's/^cemd-match: cemd variant \([^ ]*\) ([a-z_]*, \([a-z]*\)):.*/\1/p' "$log")
  backend=$(sed -n 's/^cemd-match: cemd variant \([^ ]*\) ([a-z_]*, \([a-z]*\)):.*/\2/p' "$log")
  timing=$(sed -n 's/^cemd-match: .* comparisons in \([0-9.]*\) s .*; \([0-9.]*\) s from start.*/\1 \2/p' "$log")
  read -r match_s total_s <<<"$timing"
  local reading read_s waited_s
  reading=$(sed -n 's/^cemd-match: database rows read in \([0-9.]*\) s .* waited \([0-9.]*\) s.*/\1 \2/p' "$log")
  read -r read_s waited_s <<<"$reading"
  if [[ -z ${match_s:-} || -z ${total_s:-} ]]; then
    echo "  no timing in logs/$study-$config.log" >&2
    status=1
    return 1
  fi
  local alone="$work/$study-alone.csv"
  if [[ $config != alone ]]; then
    if [[ ! -e $alone ]]; then identical=unchecked
    elif cmp -s "$alone" "$result"; then identical=yes
    else identical=no; status=1; echo "  results differ from the single process" >&2; fi
  fi
  local comparisons=$((queries * rows))
  awk -v s="$study" -v c="$config" -v r="$ranks" -v g="$per_rank" -v u="$used" -v q="$queries" \
    -v d="$rows" -v n="$comparisons" -v v="$variant" -v b="$backend" -v m="$match_s" \
    -v t="$total_s" -v i="$identical" -v rs="${read_s:-}" -v ws="${waited_s:-}" 'BEGIN {
      printf "%s,%s,%d,%d,%d,%d,%d,%.0f,%s,%s,%s,%s,%.6g,%.6g,%s,%s,%s\n", s, c, r, g, u, q, d, n, v, b,
        m, t, (m > 0 ? n / m : 0), (t > 0 ? n / t : 0), i, rs, ws }' >>"$out/runs.csv"
  awk -v s="$study" -v c="$config" -v r="$ranks" -v g="$per_rank" -v u="$used" -v n="$comparisons" \
    -v v="$variant" -v b="$backend" -v m="$match_s" -v t="$total_s" -v i="$identical" \
    -v cs="$(size_name "$queries")x$(size_name "$rows")" -v dv="$device" -v dt="$date" \
    -v cm="$commit" -v di="$distance" -v rs="${read_s:-0}" -v ws="${waited_s:-0}" 'BEGIN {
      printf "{\"algorithm\": \"cemd\", \"variant\": \"%s\", \"backend\": \"%s\", \"case\": \"%s\", ", v, b, cs
      printf "\"description\": \"%s scaling, %s, %s\", \"study\": \"%s\", \"config\": \"%s\", ", s, c, di, s, c
      printf "\"ranks\": %d, \"gpus_per_rank\": %d, \"gpus\": %d, \"reps\": 1, ", r, g, u
      printf "\"compute_median_ms\": %.6g, \"e2e_median_ms\": %.6g, ", m * 1000, t * 1000
      printf "\"read_ms\": %.6g, \"read_waited_ms\": %.6g, ", rs * 1000, ws * 1000
      printf "\"operations\": %.0f, \"operation_unit\": \"comparison\", ", n
      printf "\"gops_per_s\": %.6g, \"e2e_gops_per_s\": %.6g, ", (m > 0 ? n / m / 1e9 : 0), (t > 0 ? n / t / 1e9 : 0)
      printf "\"identical_to_one_process\": \"%s\", \"device\": \"%s\", \"date\": \"%s\", \"commit\": \"%s\"}\n", i, dv, dt, cm
    }' >>"$out/scaling.jsonl"
}

status=0
# Calibration: the single-process rate on a small database, to fit the sizes into the budget.
calibration_rows=$((database / 4 < 1048576 ? database / 4 : 1048576))
generate calibration.npy "$calibration_rows" --queries "$work/q.npy" --query-rows "$queries"
run calibration alone 0 1 calibration.npy "$calibration_rows" || exit 1
rate=$(awk -F, '$1 == "calibration" { print $13 }' "$out/runs.csv")
if [[ -z ${CEMD_DATABASE:-} ]]; then
  # In single-GPU times of their database, the runs below cost 3 strong and 6 weak ones (with
  # four GPUs 3.5 and 12).
  strong_cost=3 weak_cost=6
  ((gpus >= 4)) && strong_cost=3.5 weak_cost=12
  while ((database > 2 * calibration_rows)) &&
    awk -v q="$queries" -v d="$database" -v w="${weak_database:-$((database / 4))}" -v r="$rate" \
      -v b="$budget_s" -v sc="$strong_cost" -v wc="$weak_cost" \
      'BEGIN { exit !((sc * q * d + wc * q * w) / r > b) }'; do
    database=$((database / 2))
    echo "cemd_mpi_scaling: at $(awk -v r="$rate" 'BEGIN { printf "%.3g", r / 1e9 }') G/s the" \
      "runs would exceed ${budget_s} s; database halved to $(size_name "$database")"
  done
fi
weak_database=${weak_database:-$((database / 4))}

# Every 64 Ki-row chunk of cemd-generate depends only on the seed and its position, so each
# database starts with the calibration rows, the queries' sources.
generate strong.npy "$database"
generate weak1.npy "$weak_database"
generate weak2.npy "$((2 * weak_database))"
((gpus >= 4)) && generate weak4.npy "$((4 * weak_database))"
# The generated files reach the disk before any run, so that no run's file waits behind their
# writeback.
sync

run strong alone 0 1 strong.npy "$database"
run strong np1 1 1 strong.npy "$database"
# Without GPUs (a host build, to try the script) two CPU ranks stand in for two GPUs.
((gpus >= 2 || gpus == 0)) && run strong np2 2 1 strong.npy "$database"
((gpus >= 2)) && run strong np1-gpr2 1 2 strong.npy "$database"
((gpus >= 4)) && run strong np4 4 1 strong.npy "$database"
((gpus >= 4)) && run strong np1-gpr4 1 4 strong.npy "$database"
run weak alone 0 1 weak1.npy "$weak_database"
run weak np1 1 1 weak1.npy "$weak_database"
if ((gpus >= 2 || gpus == 0)); then
  # The 2-GPU runs' results are checked against one process on the same (doubled) database.
  run weak2 alone 0 1 weak2.npy "$((2 * weak_database))"
  run weak2 np2 2 1 weak2.npy "$((2 * weak_database))"
  ((gpus >= 2)) && run weak2 np1-gpr2 1 2 weak2.npy "$((2 * weak_database))"
fi
if ((gpus >= 4)); then
  run weak4 alone 0 1 weak4.npy "$((4 * weak_database))"
  run weak4 np4 4 1 weak4.npy "$((4 * weak_database))"
  run weak4 np1-gpr4 1 4 weak4.npy "$((4 * weak_database))"
fi

# scaling.md: per study, each run against the study's single process.
awk -F, -v device="$device" -v date="$date" -v commit="$commit" '
  NR == 1 { next }
  { study[NR] = $1; config[NR] = $2; ranks[NR] = $3; per[NR] = $4; gpus[NR] = $5
    q[NR] = $6; d[NR] = $7; variant[NR] = $9; m[NR] = $11; t[NR] = $12; mr[NR] = $13
    tr[NR] = $14; same[NR] = $15; rd[NR] = $16; wt[NR] = $17; last = NR
    if ($2 == "alone" && $1 !~ /^weak[24]$/) { base_m[$1] = $13; base_t[$1] = $14 } }
  function size(n) { return n % 1048576 == 0 ? n / 1048576 "Mi" : n % 1024 == 0 ? n / 1024 "Ki" : n }
  function layout(i) { return ranks[i] == 0 ? "1 process" : ranks[i] " rank(s) x " per[i] " GPU(s)" }
  END {
    printf "# cemd-match over MPI: strong and weak scaling\n\n"
    printf "%s, %s, commit %s. Rates in G comparisons/s. *match*: slowest rank'"'"'s or GPU'"'"'s variant run, " \
      "host<->device copies included; *end to end*: start to written file (file reads, " \
      "broadcast, reduction, CSV); *read*: the slowest rank'"'"'s or GPU'"'"'s reading of its " \
      "database rows; *waited*: the part of it the matching waited for (not hidden behind the " \
      "matching). Speedup and efficiency against the study'"'"'s single " \
      "process (weak: the 1-GPU run on the per-GPU database). *same*: result file byte-identical " \
      "to one process on the same database.\n\n", device, date, commit
    printf "| study | run | layout | GPUs | queries x database | variant | match s | match rate | " \
      "speedup | efficiency | end to end s | e2e rate | e2e speedup | e2e / match | read s | " \
      "waited s | same |\n"
    printf "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
    for (i = 2; i <= last; ++i) {
      key = study[i] ~ /^weak[24]$/ ? "weak" : study[i]
      sm = base_m[key] > 0 ? mr[i] / base_m[key] : 0
      st = base_t[key] > 0 ? tr[i] / base_t[key] : 0
      printf "| %s | %s | %s | %d | %sx%s | %s | %.2f | %.3g | %.2fx | %.0f%% | %.2f | %.3g | " \
        "%.2fx | %.2fx | %s | %s | %s |\n", key, config[i], layout(i), gpus[i], size(q[i]),
        size(d[i]), variant[i], m[i], mr[i] / 1e9, sm, 100 * sm / gpus[i], t[i], tr[i] / 1e9, st,
        (m[i] > 0 ? t[i] / m[i] : 0), rd[i], wt[i], same[i]
    }
    printf "\nTargets (issue 11): 2 GPUs >= 1.9x one GPU (strong, match rate); per-GPU rate " \
      "within 5%% of the single-process rate (weak efficiency >= 95%%). Issue 36: 4 GPUs >= " \
      "3.8x one GPU (strong), byte-identical, end to end within 1.1x of the match time.\n"
  }' "$out/runs.csv" >"$out/scaling.md"
cat "$out/scaling.md"
exit $status
