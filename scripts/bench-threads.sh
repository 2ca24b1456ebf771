#!/usr/bin/env bash
# Throughput against processing threads: builds the runtime benchmark
# (benchmarks/runtime, Release), starts a broker unless one runs, and runs
# `runtime_bench throughput` for strata with 1 and 2 processing threads under
# both guarantees, each next to the ceiling (ceiling_app: the same input,
# totals and output from plain librdkafka consume-process-produce loops,
# one per thread, each with its own consumer and producer) with as many
# threads, REPS times, alternating the order; and the ceiling once more
# with a changelog (ceiling_app --changelog: each commit also writes every
# key changed since the last, as a logged store behind a cache does), to
# tell the runtime's cost from the changelog's. Prints a Markdown table of
# medians: records/s processed (from the start of the process until every
# input's output was written; the rate until every input offset was
# committed, which waits up to a commit interval more, is in the raw
# results), strata / ceiling, strata / ceiling with changelog, CPU seconds
# per million records; raw JSON lines go to build-bench/results/threads/.
#
# Usage: scripts/bench-threads.sh [--records 1M] [--keys 100k] [--reps 3] [--threads "1 2"]
#                                 [--guarantees "at_least_once exactly_once"]
set -euo pipefail
repo_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${repo_dir}"

records=1M keys=100k reps=3 threads_list="1 2" guarantees="at_least_once exactly_once"
while (($#)); do
  case "$1" in
    --records) records="$2"; shift 2 ;;
    --keys) keys="$2"; shift 2 ;;
    --reps) reps="$2"; shift 2 ;;
    --threads) threads_list="$2"; shift 2 ;;
    --guarantees) guarantees="$2"; shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench-threads: unknown option $1" >&2; exit 2 ;;
  esac
done
say() { echo "bench-threads: $*" >&2; }

source scripts/lib/runtime_bench.sh
runtime_bench_prepare threads

# run CASE ARGS...: one run of the driver, its JSON line tagged with the case.
run() {
  local case="$1" line
  shift
  say "rep ${rep}: ${case}"
  if line="$("${bench}" throughput --bootstrap "${STRATA_KAFKA_BOOTSTRAP}" --work "${work_dir}" \
      --logs "${out_dir}/logs" --records "${records}" --keys "${keys}" "$@" 2>>"${log}" | tail -n 1)" \
      && [[ "${line}" == "{"* ]]; then
    echo "{\"rep\":${rep},\"case\":\"${case}\",\"result\":${line}}" >>"${raw}"
  else
    say "  FAILED (see ${log})"
    echo "{\"rep\":${rep},\"case\":\"${case}\",\"failed\":true}" >>"${raw}"
  fi
}

for ((rep = 1; rep <= reps; rep++)); do
  for t in ${threads_list}; do
    for g in ${guarantees}; do
      commit_ms=1000
      [[ "${g}" == exactly_once ]] && commit_ms=100
      systems=(strata ceiling ceiling-changelog)
      ((rep % 2 == 0)) && systems=(ceiling-changelog ceiling strata)
      for s in "${systems[@]}"; do
        # The ceiling commits like at-least-once whatever the guarantee: it
        # runs once per thread count, in the at-least-once row.
        [[ "${s}" != strata && "${g}" != at_least_once ]] && continue
        extra=()
        [[ "${s}" == ceiling-changelog ]] && extra=(--ceiling-changelog 1)
        run "${s}/${g}/${t}" --system "${s%-changelog}" --name "th-${stamp,,}-r${rep}-${s:0:1}${#s}-${g%%_*}-${t}" \
          --guarantee "${g}" --commit-ms "${commit_ms}" --threads "${t}" "${extra[@]}"
      done
    done
  done
done

python3 - "${raw}" "${commit}" "${records}" "${keys}" "${reps}" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
ok = [r for r in rows if not r.get("failed")]
def med(case, key):
    v = [r["result"][key] for r in ok if r["case"] == case and key in r["result"]]
    return statistics.median(v) if v else None
threads = sorted({int(r["case"].split("/")[2]) for r in rows})
print(f"From `scripts/bench-threads.sh --records {sys.argv[3]} --keys {sys.argv[4]} --reps {sys.argv[5]}` at "
      f"{sys.argv[2]}: one instance over the runtime benchmark's topology (six partitions), medians of "
      f"{sys.argv[5]} runs; the ceiling is plain librdkafka loops, one per thread.")
print()
print("| threads | guarantee | strata records/s | ceiling records/s | strata / ceiling | ceiling with changelog "
      "records/s | strata / ceiling with changelog | from the first record: strata / ceiling | CPU s per M: strata / "
      "ceiling | output |")
print("|---:|---|---:|---:|---:|---:|---:|---:|---|---|")
for t in threads:
    ceiling = med(f"ceiling/at_least_once/{t}", "processed_records_per_s")
    logged = med(f"ceiling-changelog/at_least_once/{t}", "processed_records_per_s")
    ceiling_steady = med(f"ceiling/at_least_once/{t}", "processed_steady_records_per_s")
    ceiling_cpu = med(f"ceiling/at_least_once/{t}", "cpu_s_per_million")
    for g in ("at_least_once", "exactly_once"):
        case = f"strata/{g}/{t}"
        s = med(case, "processed_records_per_s")
        if s is None:
            if any(r["case"] == case for r in rows):
                print(f"| {t} | {g} | failed | | | | | | | |")
            continue
        steady = med(case, "processed_steady_records_per_s")
        cpu = med(case, "cpu_s_per_million")
        missing = sum(r["result"].get("output_missing", 0) for r in ok if r["case"] == case)
        dups = sum(r["result"].get("output_duplicates", 0) for r in ok if r["case"] == case)
        verdict = ("complete" if missing == 0 else f"{missing:,} missing") + f", {dups:,} duplicates"
        ratio = f"{s / ceiling:.2f}" if ceiling else "-"
        sratio = f"{steady / ceiling_steady:.2f}" if steady and ceiling_steady else "-"
        cpus = f"{cpu:.2f} / {ceiling_cpu:.2f}" if ceiling_cpu else f"{cpu:.2f} / -"
        lratio = f"{s / logged:.2f}" if logged else "-"
        lrate = f"{logged / 1e3:.1f}k" if logged else "-"
        print(f"| {t} | {g} | {s / 1e3:.1f}k | {ceiling / 1e3 if ceiling else 0:.1f}k | {ratio} | {lrate} | {lratio} "
              f"| {sratio} | {cpus} | {verdict} |")
PY
say "raw results and every instance's log in ${out_dir}"
