#!/usr/bin/env bash
# Failover times over many failovers: builds the runtime benchmark
# (benchmarks/runtime, Release), starts a broker unless one runs, and runs
# `runtime_bench kills` under both guarantees, for a SIGKILL and for a
# clean stop (SIGTERM) and for a network partition of one instance (each
# instance runs in a network namespace of its own, reaching the broker
# through a TCP proxy on loopback that stalls to cut it off; root and
# iproute2): three instances with one standby each over an input written at
# a steady rate; again and again, once the group is at rest, one instance
# (in turn) is killed, stopped or cut off, the driver waits until every task
# it owned processed a record on another instance, and starts it again (or
# heals its network). Prints a Markdown table (median, p99 and maximum of the time from
# the signal to the last of the instance's tasks processing again, and the
# phases of that last task); raw JSON lines go to
# build-bench/results/failover/.
#
# Usage: scripts/bench-failover.sh [--kills 20] [--how "kill stop partition"]
#                                  [--guarantees "at_least_once exactly_once"]
set -euo pipefail
repo_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${repo_dir}"

kills=20
hows="kill stop partition"
guarantees="at_least_once exactly_once"
while (($#)); do
  case "$1" in
    --kills) kills="$2"; shift 2 ;;
    --how) hows="$2"; shift 2 ;;
    --guarantees) guarantees="$2"; shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench-failover: unknown option $1" >&2; exit 2 ;;
  esac
done
say() { echo "bench-failover: $*" >&2; }

source scripts/lib/runtime_bench.sh
runtime_bench_prepare failover

for g in ${guarantees}; do
  for how in ${hows}; do
    name="fo-${stamp,,}-${g%%_*}-${how}"
    say "${g}, ${kills} x ${how}"
    if line="$("${bench}" kills --system strata --bootstrap "${STRATA_KAFKA_BOOTSTRAP}" \
        --name "${name}" --work "${work_dir}" --logs "${out_dir}/logs" --guarantee "${g}" --standbys 1 \
        --kills "${kills}" --how "${how}" 2>>"${log}" | tail -n 1)" && [[ "${line}" == "{"* ]]; then
      echo "${line}" >>"${raw}"
    else
      say "  FAILED (see ${log})"
      echo "{\"guarantee\":\"${g}\",\"how\":\"${how}\",\"failed\":true}" >>"${raw}"
    fi
  done
done

python3 - "${raw}" "${commit}" "${kills}" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print(f"From `scripts/bench-failover.sh --kills {sys.argv[3]}` at {sys.argv[2]}: three instances, one standby "
      "each, six partitions, input at 2,000 records/s; milliseconds from the signal to the last of the "
      "instance's tasks processing a record on another instance, and the phases of that last task (medians).")
print()
print("| guarantee | signal | failovers | median | p99 | max | detection | assignment | restore | first record | output |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
for r in rows:
    g = r.get("guarantee")
    if r.get("failed"):
        print(f"| {g} | {r['how']} | failed | | | | | | | | |")
        continue
    done = [f for f in r["failovers"] if f["finished"]]
    def med(k):
        v = [f["last"][k] for f in done]
        return round(statistics.median(v)) if v else "-"
    verdict = "complete" if r["output_missing"] == 0 else f"{r['output_missing']:,} input records lost"
    verdict += f", {r['output_duplicates']:,} duplicates, {r['output_wrong_values']:,} wrong values"
    signal = {"kill": "SIGKILL", "stop": "SIGTERM", "partition": "partition"}[r["how"]]
    print(f"| {g} | {signal} | {len(done)} of {len(r['failovers'])} "
          f"| {r['total_median_ms']:,} | {r['total_p99_ms']:,} | {r['total_max_ms']:,} | {med('detection_ms')} "
          f"| {med('assignment_ms')} | {med('restore_ms')} | {med('first_record_ms')} | {verdict} |")
PY
