#!/usr/bin/env bash
# Builds and runs strata's microbenchmarks, then draws the plots of
# docs/benchmarks.md. One command, safe to run again:
#
#   scripts/bench.sh
#
# Steps: system packages (scripts/setup.sh); a Release build with
# -DSTRATA_BUILD_BENCHMARKS=ON in build-bench/; every benchmarks/*_bench
# executable, with repetitions, JSON into build-bench/results/; the machine's
# description into build-bench/results/machine.txt; then
# benchmarks/plots/plot.py (matplotlib, from PyPI into .cache/bench-venv when
# missing) writes docs/benchmarks/*.png and build-bench/results/tables.md,
# which replaces the generated section of docs/benchmarks.md together with
# machine.txt.
#
# Knobs (environment):
#   BENCH_KEYS          key counts of store_ops_bench, comma separated (default
#                       1000000); each runs on its own, JSON store_ops_bench_<n>.json
#   BENCH_BIG_KEYS      more key counts, run with BENCH_BIG_REPS repetitions and a
#                       reduced set (8 B values; both stores bare, metered, logged, full stack;
#                       default 10000000; empty to skip)
#   BENCH_BIG_REPS      repetitions at BENCH_BIG_KEYS (default 3)
#   BENCH_SCALE_KEYS    key counts of scale_bench, one process each (default
#                       1000000,10000000,50000000)
#   BENCH_OPEN_100M     1 (default) adds the 100M-record log (4.5 GB) to
#                       file_log_open_bench; 0 stops at 10M
#   BENCH_REPS          repetitions of the fast benchmarks (default 5)
#   BENCH_SLOW_REPS     repetitions of store_ops, cache, file log and restore (default 3)
#   BENCH_ONLY          executables to run, space separated (default: every one);
#                       the results of the others are kept
#   BENCH_MIN_TIME      seconds per store_ops/serde measurement (default 0.2)
#   BENCH_FILTER        a --benchmark_filter regex applied to every executable
#   BENCH_JOBS          build parallelism (default 2)
#   BENCH_DOC           0 leaves docs/benchmarks.md alone (the plots are still drawn)
#   BENCH_KAFKA         0 skips the Kafka half (scripts/bench-kafka.sh), run last
#   BENCH_KAFKA_ARGS    options for scripts/bench-kafka.sh (e.g. "--updates 1M --reps 3")
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

build=build-bench
results=$build/results
scratch=$build/tmp
reps=${BENCH_REPS:-5}
slow_reps=${BENCH_SLOW_REPS:-3}
min_time=${BENCH_MIN_TIME:-0.2}
keys=${BENCH_KEYS:-1000000}
big_keys=${BENCH_BIG_KEYS-10000000}
big_reps=${BENCH_BIG_REPS:-3}
scale_keys=${BENCH_SCALE_KEYS:-1000000,10000000,50000000}
export STRATA_BENCH_OPEN_100M=${BENCH_OPEN_100M:-1}
export STRATA_BENCH_DIR=$root/$scratch

scripts/setup.sh

cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTRATA_BUILD_BENCHMARKS=ON \
  -DSTRATA_BUILD_TESTS=OFF -DSTRATA_BUILD_EXAMPLES=OFF >/dev/null

benches=()
for src in benchmarks/*_bench.cpp; do benches+=("$(basename "$src" .cpp)"); done
cmake --build "$build" -j "${BENCH_JOBS:-2}" --target "${benches[@]}"

mkdir -p "$results" "$scratch"
if [ -n "${BENCH_ONLY:-}" ]; then
  read -r -a benches <<<"$BENCH_ONLY"
else
  rm -f "$results"/*.json "$results/machine.txt"
fi

{
  echo "== run of: ${benches[*]}"
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
  [ -z "$(git status --porcelain -- include benchmarks 2>/dev/null)" ] || commit+=" with uncommitted changes in include/ or benchmarks/"
  echo "commit: $commit"
  echo "nproc: $(nproc)"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
  echo "memory: $(free -g | awk '/^Mem:/ {print $2 " GiB total, " $7 " GiB available"}')"
  echo "compiler: $(c++ --version | head -1)"
  echo "filesystem of $scratch: $(df -T "$scratch" | awk 'NR==2 {print $2 " on " $1}')"
  echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "store_ops key counts: $keys with $slow_reps repetitions; ${big_keys:-none} with $big_reps"
  echo "repetitions: $reps (serde), $slow_reps (cache, file log, restore)"
  echo "scale key counts: $scale_keys, one repetition each"
} >>"$results/machine.txt"

run() {
  local name=$1 out=$2
  shift 2
  local args=(--benchmark_out="$results/$out.json" --benchmark_out_format=json
              --benchmark_report_aggregates_only=true "$@")
  [ -n "${BENCH_FILTER:-}" ] && args+=(--benchmark_filter="$BENCH_FILTER")
  echo "== $out"
  "$build/benchmarks/$name" "${args[@]}"
}

for name in "${benches[@]}"; do
  case "$name" in
    store_ops_bench)
      rm -f "$results"/store_ops_bench*.json
      for n in ${keys//,/ }; do
        STRATA_BENCH_KEYS=$n run "$name" "${name}_$n" --benchmark_repetitions="$slow_reps" --benchmark_min_time="$min_time"
      done
      for n in ${big_keys//,/ }; do
        STRATA_BENCH_KEYS=$n run "$name" "${name}_$n" --benchmark_repetitions="$big_reps" --benchmark_min_time="$min_time"
      done ;;
    serde_bench) run "$name" "$name" --benchmark_repetitions="$reps" --benchmark_min_time="$min_time" ;;
    scale_bench)
      # One process per key count, one repetition: its memory figures need a
      # heap nothing else has used.
      rm -f "$results"/scale_bench*.json
      for n in ${scale_keys//,/ }; do
        STRATA_BENCH_SCALE_KEYS=$n run "$name" "${name}_$n" --benchmark_repetitions=1
      done ;;
    *) run "$name" "$name" --benchmark_repetitions="$slow_reps" ;;
  esac
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$results/machine.txt"
rm -rf "$scratch"

# Plots: matplotlib from the system, else from a venv under .cache/.
python=python3
if ! python3 -c 'import matplotlib' 2>/dev/null; then
  venv=.cache/bench-venv
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  "$venv/bin/python" -c 'import matplotlib' 2>/dev/null || "$venv/bin/pip" install -q matplotlib
  python=$venv/bin/python
fi
"$python" benchmarks/plots/plot.py "$results" docs/benchmarks
echo "results: $results (tables.md, machine.txt, *.json); plots: docs/benchmarks/*.png"

# The generated section of docs/benchmarks.md: the conditions and the tables.
if [ "${BENCH_DOC:-1}" != 0 ]; then
  python3 - "$results" docs/benchmarks.md <<'PY'
import pathlib, sys
results, doc = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
begin, end = "<!-- generated by scripts/bench.sh: begin -->", "<!-- generated by scripts/bench.sh: end -->"
text = doc.read_text()
if begin not in text or end not in text:
    sys.exit(f"{doc}: no generated section ({begin} ... {end}); left alone")
body = "\n".join([
    begin,
    "Machine and conditions, as `scripts/bench.sh` recorded them (`build-bench/results/machine.txt`):",
    "", "```text", (results / "machine.txt").read_text().rstrip(), "```", "",
    (results / "tables.md").read_text().rstrip(), end])
head, rest = text.split(begin, 1)
doc.write_text(head + body + rest.split(end, 1)[1])
print(f"rewrote the generated section of {doc}")
PY
fi

# Then the Kafka half of the benchmarks: strata through Kafka against the
# librdkafka ceilings and Kafka Streams, on one broker (docs/benchmarks-kafka.md).
# BENCH_KAFKA=0 skips it; BENCH_KAFKA_ARGS passes options to it.
if [ "${BENCH_KAFKA:-1}" != 0 ]; then
  # shellcheck disable=SC2086  # the options are meant to split into words
  scripts/bench-kafka.sh ${BENCH_KAFKA_ARGS:-}
fi
