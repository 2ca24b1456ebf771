#!/usr/bin/env bash
# How an instance's costs grow with its partitions: builds the runtime
# benchmark (benchmarks/runtime, Release), starts a broker unless one runs,
# and for each partition count runs `runtime_bench scale` under both
# guarantees, with one instance and with two instances and one standby each.
# Each run reports the time from the start until every task processed a
# record, and the threads, Kafka clients (librdkafka handles), sockets and
# resident memory of an instance then (the larger of the two instances').
# Prints a Markdown table; raw JSON lines go to
# build-bench/results/runtime-scale/.
#
# Usage: scripts/bench-runtime-scale.sh [--partitions "16 64 256"] [--stores "1 10"] [--liveness-ms N]
#        [--standby-fetch-ms N] [--standby-pacing-from N] [--again]
#        [--guarantees "at_least_once exactly_once"] [--instances "1 2"]
#
# --stores: logged stores a task (1: aggregate_app's totals; 10: the totals
# and nine more, each updated by every record), each with its changelog.
# At 1,024 partitions and ten stores the broker holds over 12,000
# partitions: the broker this script starts gets a 2 GiB heap
# (STRATA_KAFKA_HEAP; the test broker's 256 MiB runs out), and each run
# starts on a freshly formatted broker (one run leaves 11,000 partitions
# behind, and the next one's topics timed out becoming available). Stop a
# broker that runs already for a clean run: the script uses it as it is,
# for every run.
#
# --liveness-ms: the instances' liveness_timeout (default 600 ms); under
# at-least-once a record must be acknowledged within a third of it.
# --standby-fetch-ms, --standby-pacing-from: the instances'
# standby_fetch_interval and standby_pacing_from_partitions (the library's
# defaults unless given: an instance that follows 1,000 standby partitions
# or more fetches for them in a window once a second; --standby-fetch-ms 0
# fetches all the time: docs/runtime.md).
# --guarantees, --instances: the rows to run (by default all four; 2 means
# two instances with one standby each).
# --again: each run starts its instances a second time, with no local state,
# on the topics the first start made, and reports that start (and the
# first one as first_start_s): the broker's creation of the changelogs'
# partitions is then out of the figure.
set -euo pipefail
repo_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${repo_dir}"

partition_counts="16 64 256"
guarantees="at_least_once exactly_once"
instance_counts="1 2"
store_counts="1"
liveness_args=()
pacing_args=()
again_args=()
while (($#)); do
  case "$1" in
    --partitions) partition_counts="$2"; shift 2 ;;
    --stores) store_counts="$2"; shift 2 ;;
    --liveness-ms) liveness_args=(--liveness-ms "$2"); shift 2 ;;
    --standby-fetch-ms) pacing_args+=(--standby-fetch-ms "$2"); shift 2 ;;
    --standby-pacing-from) pacing_args+=(--standby-pacing-from "$2"); shift 2 ;;
    --again) again_args=(--again 1); shift ;;
    --guarantees) guarantees="$2"; shift 2 ;;
    --instances) instance_counts="$2"; shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench-runtime-scale: unknown option $1" >&2; exit 2 ;;
  esac
done
say() { echo "bench-runtime-scale: $*" >&2; }

export STRATA_KAFKA_HEAP="${STRATA_KAFKA_HEAP:-2g}"
source scripts/lib/runtime_bench.sh
runtime_bench_prepare runtime-scale

for p in ${partition_counts}; do
  for stores in ${store_counts}; do
    for g in ${guarantees}; do
      for instances in ${instance_counts}; do
        standbys=$((instances > 1 ? 1 : 0))
        name="sc-${stamp,,}-p${p}-s${stores}-${g%%_*}-i${instances}"
        if ((strata_broker_started)); then
          broker_down "${log}"
          broker_up "${log}"
        fi
        say "${p} partitions, ${stores} store(s) a task, ${g}, ${instances} instance(s), ${standbys} standby"
        if line="$("${bench}" scale --system strata --bootstrap "${STRATA_KAFKA_BOOTSTRAP}" \
            --name "${name}" --work "${work_dir}" --logs "${out_dir}/logs" --partitions "${p}" --stores "${stores}" \
            --guarantee "${g}" --instances "${instances}" --standbys "${standbys}" --timeout-s 300 "${liveness_args[@]}" "${pacing_args[@]}" "${again_args[@]}" \
            2>>"${log}" | tail -n 1)" && [[ "${line}" == "{"* ]]; then
          echo "${line}" >>"${raw}"
        else
          say "  FAILED (see ${log})"
          echo "{\"partitions\":${p},\"stores\":${stores},\"guarantee\":\"${g}\",\"instances\":${instances},\"standbys\":${standbys},\"failed\":true}" >>"${raw}"
        fi
      done
    done
  done
done

python3 - "${raw}" "${commit}" "${partition_counts}" "${store_counts}" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print(f"From `scripts/bench-runtime-scale.sh --partitions \"{sys.argv[3]}\" --stores \"{sys.argv[4]}\"` at {sys.argv[2]}: "
      "per instance (the larger of two).")
print()
print("| partitions | stores a task | guarantee | instances (standbys) | all tasks running s | threads | Kafka clients | sockets | RSS MiB |")
print("|---:|---:|---|---|---:|---:|---:|---:|---:|")
for r in rows:
    layout = f"{r['instances']} ({r.get('standbys', 0)} each)"
    head = f"| {r['partitions']} | {r.get('stores', 1)} | {r['guarantee']} | {layout}"
    if r.get("failed"):
        print(f"{head} | failed | | | | |")
        continue
    first = f" (first start {r['first_start_s']:.2f})" if "first_start_s" in r else ""
    print(f"{head} | {r['all_running_s']:.2f}{first} | {r['threads']} "
          f"| {r['kafka_clients']} | {r['sockets']} | {r['rss_mib']:.0f} |")
EOF
