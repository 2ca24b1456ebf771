#!/usr/bin/env bash
# strata against its ceilings and against Kafka Streams, end to end, on one
# broker and one machine: builds the e2e benchmark (benchmarks/e2e, Release),
# starts a broker with scripts/kafka-broker.sh unless one is running, builds
# the Kafka Streams peer, runs every scenario of strata and the matching peer
# scenario alternately, REPS times, and prints a Markdown table of medians
# with ratios. The table replaces the generated section of
# docs/benchmarks-kafka.md; raw JSON lines go to build-bench/results/kafka/.
#
# Usage: scripts/bench-kafka.sh [--updates 1M] [--keys 100k] [--reps 3]
#                               [--value-bytes 100] [--cache-bytes 10MiB]
#                               [--flush-ms 100] [--no-peer] [--no-doc]
#
# Environment (optional): the broker's (STRATA_KAFKA_PORT, STRATA_KAFKA_RUN_DIR,
# ..., see scripts/kafka-broker.sh) and the peer's (STRATA_PEER_HEAP, ...).
# A broker this script started is stopped at the end unless
# STRATA_BENCH_KEEP_BROKER=1.
set -euo pipefail

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_dir="$(cd "${script_dir}/.." && pwd)"
cd "${repo_dir}"

updates=1M keys=100k reps=3 value_bytes=100 cache_bytes=10MiB flush_ms=100 peer=1 doc=1
while (($#)); do
  case "$1" in
    --updates) updates="$2"; shift 2 ;;
    --keys) keys="$2"; shift 2 ;;
    --reps) reps="$2"; shift 2 ;;
    --value-bytes) value_bytes="$2"; shift 2 ;;
    --cache-bytes) cache_bytes="$2"; shift 2 ;;
    --flush-ms) flush_ms="$2"; shift 2 ;;
    --no-peer) peer=0; shift ;;
    --no-doc) doc=0; shift ;;
    -h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench-kafka: unknown option $1" >&2; exit 2 ;;
  esac
done

say() { echo "bench-kafka: $*" >&2; }

stamp="$(date -u +%Y%m%dT%H%M%SZ)"
out_dir="${repo_dir}/build-bench/results/kafka/${stamp}"
work_dir="${repo_dir}/build-bench/tmp/e2e-${stamp}"  # the file logs: same filesystem as the repo
mkdir -p "${out_dir}" "${work_dir}"
raw="${out_dir}/raw.jsonl"
log="${out_dir}/run.log"
: >"${raw}"

# --- build ------------------------------------------------------------------
say "building benchmarks/e2e (Release)"
# The library the program is built from: HEAD, and whether include/ differs from it.
build_commit="$(git rev-parse --short HEAD)"
[[ -z "$(git status --porcelain -- include benchmarks/e2e)" ]] || build_commit+=" with uncommitted changes in include/ or benchmarks/e2e"
cmake -S benchmarks/e2e -B build-bench/e2e -G Ninja -DCMAKE_BUILD_TYPE=Release >>"${log}" 2>&1
cmake --build build-bench/e2e -j2 >>"${log}" 2>&1
e2e="${repo_dir}/build-bench/e2e/e2e"

# --- broker -----------------------------------------------------------------
source scripts/lib/broker.sh
broker_up "${log}"
cleanup() {
  rm -rf "${work_dir}"
  broker_down "${log}"
}
trap cleanup EXIT
bootstrap="${STRATA_KAFKA_BOOTSTRAP}"

if ((peer)); then
  say "building the Kafka Streams peer"
  scripts/peer-kafka-streams.sh build >>"${log}" 2>&1
fi

# --- running ----------------------------------------------------------------
rep=0
# run CASE COMMAND...: runs one scenario, keeps its JSON line (the last line
# on stdout) tagged with the case and repetition.
run() {
  local case="$1" line
  shift
  say "rep ${rep}: ${case}"
  if ! line="$("$@" 2>>"${log}" | tail -n 1)" || [[ "${line}" != "{"* ]]; then
    say "  FAILED (see ${log})"
    echo "{\"rep\":${rep},\"case\":\"${case}\",\"failed\":true}" >>"${raw}"
    return 0
  fi
  echo "{\"rep\":${rep},\"case\":\"${case}\",\"result\":${line}}" >>"${raw}"
}

workload=(--updates "${updates}" --keys "${keys}" --value-bytes "${value_bytes}")
peer_write() {  # STORE DIST CACHE
  scripts/peer-kafka-streams.sh write "${workload[@]}" --dist "$2" --store "$1" --cache-bytes "$3" \
    --commit-ms "${flush_ms}" --input-topic "e2e-${stamp}-input-$2" --reuse-input
}

load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
for ((rep = 1; rep <= reps; rep++)); do
  t="e2e-${stamp}-r${rep}"
  run disk "${e2e}" disk --dir "${work_dir}"
  for dist in uniform zipf; do
    for cache in 0 "${cache_bytes}"; do
      c="c${cache}"
      [[ "${cache}" == 0 ]] || c="cache"
      if [[ "${cache}" == 0 ]]; then
        run "ceiling/produce/${dist}" "${e2e}" produce-ceiling --bootstrap "${bootstrap}" --topic "${t}-ceiling-${dist}" \
          --dist "${dist}" "${workload[@]}"
        run "ceiling/produce-flush/${dist}" "${e2e}" produce-ceiling --bootstrap "${bootstrap}" \
          --topic "${t}-ceiling-flush-${dist}" --dist "${dist}" --flush-ms "${flush_ms}" "${workload[@]}"
      fi
      run "write/strata-kafka/${dist}/${c}" "${e2e}" write --sink kafka --bootstrap "${bootstrap}" \
        --topic "${t}-${dist}-${c}-kv-changelog" --dist "${dist}" --cache-bytes "${cache}" --flush-ms "${flush_ms}" \
        "${workload[@]}"
      ((peer)) && run "write/ks-inmemory/${dist}/${c}" peer_write inmemory "${dist}" "${cache}"
      run "write/strata-file/${dist}/${c}" "${e2e}" write --sink file --dir "${work_dir}/log-${dist}-${c}" \
        --dist "${dist}" --cache-bytes "${cache}" --flush-ms "${flush_ms}" "${workload[@]}"
      ((peer)) && run "write/ks-rocksdb/${dist}/${c}" peer_write rocksdb "${dist}" "${cache}"
      run "write/strata-rocksdb/${dist}/${c}" "${e2e}" write --sink kafka --bootstrap "${bootstrap}" \
        --topic "${t}-${dist}-${c}-rocks-changelog" --store rocksdb --store-dir "${work_dir}/rocks-${dist}-${c}" \
        --dist "${dist}" --cache-bytes "${cache}" --flush-ms "${flush_ms}" "${workload[@]}"
      rm -rf "${work_dir}/rocks-${dist}-${c}"
      [[ "${dist}/${c}" == uniform/c0 ]] || rm -rf "${work_dir}/log-${dist}-${c}"
      if [[ "${cache}" != 0 ]]; then
        # Coalescing by the cache alone: no flush (commit) until the end, so
        # neither side's throughput decides how many updates a flush covers.
        run "coalesce/strata-kafka/${dist}" "${e2e}" write --sink kafka --bootstrap "${bootstrap}" \
          --topic "${t}-${dist}-coalesce" --dist "${dist}" --cache-bytes "${cache}" --flush-ms 0 "${workload[@]}"
        ((peer)) && run "coalesce/ks-inmemory/${dist}" scripts/peer-kafka-streams.sh write "${workload[@]}" \
          --dist "${dist}" --store inmemory --cache-bytes "${cache}" --commit-ms 3600000 \
          --input-topic "e2e-${stamp}-input-${dist}" --reuse-input
      fi
    done
  done

  # Restore of the changelog the uncached uniform run wrote (N records over K keys).
  full="${t}-uniform-c0-kv-changelog"
  run restore/ceiling/full "${e2e}" consume-ceiling --bootstrap "${bootstrap}" --topic "${full}"
  run restore/strata-kafka/full "${e2e}" restore --source kafka --bootstrap "${bootstrap}" --topic "${full}"
  ((peer)) && run restore/ks-inmemory/full scripts/peer-kafka-streams.sh restore --changelog-topic "${full}" --store inmemory
  run restore/strata-file/full "${e2e}" restore --source file --dir "${work_dir}/log-uniform-c0"
  ((peer)) && run restore/ks-rocksdb/full scripts/peer-kafka-streams.sh restore --changelog-topic "${full}" --store rocksdb
  run restore/strata-rocksdb/full "${e2e}" restore --source kafka --bootstrap "${bootstrap}" --topic "${full}" \
    --store rocksdb --store-dir "${work_dir}/rocks-restore"
  rm -rf "${work_dir}/rocks-restore"
  rm -rf "${work_dir}/log-uniform-c0"

  # Restore of a compacted changelog: one record per key (what compaction
  # leaves of the one above), written by strata.
  compact="${t}-compact-kv-changelog"
  run write/strata-kafka/sequential/c0 "${e2e}" write --sink kafka --bootstrap "${bootstrap}" --topic "${compact}" \
    --dist sequential --updates "${keys}" --keys "${keys}" --value-bytes "${value_bytes}" --flush-ms "${flush_ms}"
  run restore/ceiling/compact "${e2e}" consume-ceiling --bootstrap "${bootstrap}" --topic "${compact}"
  run restore/strata-kafka/compact "${e2e}" restore --source kafka --bootstrap "${bootstrap}" --topic "${compact}"
  ((peer)) && run restore/ks-inmemory/compact scripts/peer-kafka-streams.sh restore --changelog-topic "${compact}" --store inmemory
  ((peer)) && run restore/ks-rocksdb/compact scripts/peer-kafka-streams.sh restore --changelog-topic "${compact}" --store rocksdb
  run restore/strata-rocksdb/compact "${e2e}" restore --source kafka --bootstrap "${bootstrap}" --topic "${compact}" \
    --store rocksdb --store-dir "${work_dir}/rocks-restore"
  rm -rf "${work_dir}/rocks-restore"
done
load_after="$(cut -d' ' -f1-3 /proc/loadavg)"

# --- the table ----------------------------------------------------------------
cat >"${out_dir}/conditions.json" <<EOF
{"date":"$(date -u +%Y-%m-%dT%H:%M:%SZ)","updates":"${updates}","keys":"${keys}","reps":${reps},
 "value_bytes":${value_bytes},"cache_bytes":"${cache_bytes}","flush_ms":${flush_ms},
 "nproc":$(nproc),"mem":"$(free -g | awk '/^Mem:/{print $2}') GiB",
 "cpu":"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')",
 "load_before":"${load_before}","load_after":"${load_after}",
 "kernel":"$(uname -r)","librdkafka":"$(pkg-config --modversion rdkafka)",
 "kafka":"${STRATA_KAFKA_VERSION:-3.9.1}","broker_heap":"${STRATA_KAFKA_HEAP:-256m}",
 "broker_jvm":"${STRATA_KAFKA_JVM_OPTS:-default (SerialGC, C1)}",
 "commit":"${build_commit}",
 "command":"scripts/bench-kafka.sh --updates ${updates} --keys ${keys} --reps ${reps}$( ((peer)) || echo ' --no-peer')"}
EOF
table="${out_dir}/table.md"
python3 benchmarks/e2e/table.py "${raw}" "${out_dir}/conditions.json" >"${table}"
cat "${table}"
if ((doc)); then
  python3 - "${table}" docs/benchmarks-kafka.md <<'EOF'
import sys, pathlib
table = pathlib.Path(sys.argv[1]).read_text()
doc = pathlib.Path(sys.argv[2])
begin, end = "<!-- generated by scripts/bench-kafka.sh: begin -->", "<!-- generated by scripts/bench-kafka.sh: end -->"
text = doc.read_text() if doc.exists() else "# strata end to end: Kafka and the file log\n\n" + begin + "\n" + end + "\n"
if begin not in text or end not in text:
    text += "\n" + begin + "\n" + end + "\n"
head, rest = text.split(begin, 1)
_, tail = rest.split(end, 1)
doc.write_text(head + begin + "\n" + table.rstrip() + "\n" + end + tail)
EOF
  say "wrote docs/benchmarks-kafka.md"
fi
say "raw results in ${out_dir}"
