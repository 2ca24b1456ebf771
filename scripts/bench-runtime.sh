#!/usr/bin/env bash
# strata's stream runtime against Kafka Streams, the same topology on one
# broker and one machine: builds the runtime benchmark (benchmarks/runtime,
# Release: the driver and strata's aggregate_app), starts a broker with
# scripts/kafka-broker.sh unless one is running, builds the Kafka Streams
# peer, runs the throughput and failover scenarios with strata and Kafka
# Streams alternating, REPS times, and prints a Markdown table of medians
# with ratios. The table replaces the generated section of
# docs/benchmarks-runtime.md; raw JSON lines go to build-bench/results/runtime/.
#
# Usage: scripts/bench-runtime.sh [--records 1M] [--keys 100k] [--rate 5000]
#                                 [--reps 3] [--duration 40] [--kill-after 15]
#                                 [--only throughput|failover] [--no-peer] [--no-doc]
#
#   --records     input records of the throughput runs (prefilled)
#   --keys        distinct keys (k<i % keys>)
#   --rate        input records per second during the failover runs
#   --duration    seconds of input in a failover run; --kill-after: seconds
#                 until one of the three instances is killed
#   --only        run one of the two scenarios
#   --no-peer     strata alone (no Kafka Streams runs, no ratios)
#   --no-doc      leave docs/benchmarks-runtime.md alone
#
# Environment (optional): the broker's (STRATA_KAFKA_PORT, STRATA_KAFKA_RUN_DIR,
# ..., see scripts/kafka-broker.sh) and the peer's (STRATA_PEER_HEAP, ...).
# A broker this script started is stopped at the end unless
# STRATA_BENCH_KEEP_BROKER=1.
set -euo pipefail

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_dir="$(cd "${script_dir}/.." && pwd)"
cd "${repo_dir}"

records=1M keys=100k rate=5000 reps=3 duration=40 kill_after=15 only=all peer=1 doc=1
while (($#)); do
  case "$1" in
    --records) records="$2"; shift 2 ;;
    --keys) keys="$2"; shift 2 ;;
    --rate) rate="$2"; shift 2 ;;
    --reps) reps="$2"; shift 2 ;;
    --duration) duration="$2"; shift 2 ;;
    --kill-after) kill_after="$2"; shift 2 ;;
    --only) only="$2"; shift 2 ;;
    --no-peer) peer=0; shift ;;
    --no-doc) doc=0; shift ;;
    -h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench-runtime: unknown option $1" >&2; exit 2 ;;
  esac
done
case "${only}" in all | throughput | failover) ;; *) echo "bench-runtime: --only is throughput or failover" >&2; exit 2 ;; esac

say() { echo "bench-runtime: $*" >&2; }

# The settings both systems get (the table prints them).
session_ms=6000 commit_ms_alos=1000 commit_ms_eos=100 transaction_ms=10000 standbys_list=(0 1)

stamp="$(date -u +%Y%m%dT%H%M%SZ)"
out_dir="${repo_dir}/build-bench/results/runtime/${stamp}"
work_dir="${repo_dir}/build-bench/tmp/runtime-${stamp}"  # state directories
logs_dir="${out_dir}/logs"                               # every instance's stdout and stderr
mkdir -p "${out_dir}" "${work_dir}" "${logs_dir}"
raw="${out_dir}/raw.jsonl"
log="${out_dir}/run.log"
: >"${raw}"

# --- build ------------------------------------------------------------------
say "building benchmarks/runtime (Release)"
# The runtime the program is built from: HEAD, and whether it differs from it.
if build_commit="$(git rev-parse --short HEAD 2>/dev/null)"; then
  [[ -z "$(git status --porcelain -- include test/runtime/app benchmarks/runtime)" ]] \
    || build_commit+=" with uncommitted changes in include/, test/runtime/app or benchmarks/runtime"
else
  build_commit="unknown (not a git checkout)"
fi
cmake -S benchmarks/runtime -B build-bench/runtime -G Ninja -DCMAKE_BUILD_TYPE=Release >>"${log}" 2>&1
cmake --build build-bench/runtime -j2 >>"${log}" 2>&1
bench="${repo_dir}/build-bench/runtime/runtime_bench"

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
# run CASE ARGS...: one run of the driver; keeps its JSON line (the last line
# on stdout) tagged with the case and repetition.
run() {
  local case="$1" line
  shift
  say "rep ${rep}: ${case}"
  if ! line="$("${bench}" "$@" --bootstrap "${bootstrap}" --work "${work_dir}" --logs "${logs_dir}" \
      --peer "${repo_dir}/scripts/peer-kafka-streams.sh" 2>>"${log}" | tail -n 1)" || [[ "${line}" != "{"* ]]; then
    say "  FAILED (see ${log})"
    echo "{\"rep\":${rep},\"case\":\"${case}\",\"failed\":true}" >>"${raw}"
    return 0
  fi
  echo "{\"rep\":${rep},\"case\":\"${case}\",\"result\":${line}}" >>"${raw}"
}

systems=(strata)
((peer)) && systems+=(kafka-streams)
name_of() { echo "rt-${stamp,,}-r${rep}-$1"; }
short() { [[ "$1" == strata ]] && echo s || echo k; }

load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
for ((rep = 1; rep <= reps; rep++)); do
  # Alternate which system goes first, so a drift of the machine's load
  # favours neither.
  order=("${systems[@]}")
  if ((rep % 2 == 0 && ${#systems[@]} == 2)); then order=(kafka-streams strata); fi
  if [[ "${only}" != failover ]]; then
    for g in at_least_once exactly_once; do
      commit="${commit_ms_alos}"
      [[ "${g}" == exactly_once ]] && commit="${commit_ms_eos}"
      for s in "${order[@]}"; do
        run "throughput/${s}/${g}" throughput --system "${s}" --name "$(name_of "tp-${g%%_*}-$(short "${s}")")" \
          --records "${records}" --keys "${keys}" --guarantee "${g}" --commit-ms "${commit}" \
          --session-ms "${session_ms}" --transaction-ms "${transaction_ms}"
      done
    done
    # The ceiling: the same work from librdkafka and a hash map, nothing else.
    run "throughput/ceiling/at_least_once" throughput --system ceiling --name "$(name_of "tp-ceiling")" \
      --records "${records}" --keys "${keys}" --guarantee at_least_once --commit-ms "${commit_ms_alos}" \
      --session-ms "${session_ms}" --transaction-ms "${transaction_ms}"
  fi
  if [[ "${only}" != throughput ]]; then
    for sb in "${standbys_list[@]}"; do
      for s in "${order[@]}"; do
        run "failover/${s}/standbys${sb}" failover --system "${s}" --name "$(name_of "fo-sb${sb}-$(short "${s}")")" \
          --keys "${keys}" --rate "${rate}" --duration-s "${duration}" --kill-after-s "${kill_after}" \
          --standbys "${sb}" --guarantee at_least_once --commit-ms "${commit_ms_alos}" \
          --session-ms "${session_ms}" --transaction-ms "${transaction_ms}"
      done
    done
  fi
done
load_after="$(cut -d' ' -f1-3 /proc/loadavg)"

# --- the table ----------------------------------------------------------------
command_line="scripts/bench-runtime.sh --records ${records} --keys ${keys} --rate ${rate} --reps ${reps}"
[[ "${duration}" == 40 && "${kill_after}" == 15 ]] || command_line+=" --duration ${duration} --kill-after ${kill_after}"
[[ "${only}" == all ]] || command_line+=" --only ${only}"
((peer)) || command_line+=" --no-peer"
cat >"${out_dir}/conditions.json" <<EOF
{"date":"$(date -u +%Y-%m-%dT%H:%M:%SZ)","records":"${records}","keys":"${keys}","reps":${reps},
 "rate":"${rate}","duration_s":${duration},"kill_after_s":${kill_after},
 "session_ms":${session_ms},"commit_ms_alos":${commit_ms_alos},"commit_ms_eos":${commit_ms_eos},
 "transaction_ms":${transaction_ms},"standbys":[$(IFS=,; echo "${standbys_list[*]}")],
 "nproc":$(nproc),"mem":"$(free -g | awk '/^Mem:/{print $2}') GiB",
 "cpu":"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')",
 "load_before":"${load_before}","load_after":"${load_after}",
 "kernel":"$(uname -r)","librdkafka":"$(pkg-config --modversion rdkafka)",
 "kafka":"${STRATA_KAFKA_VERSION:-3.9.1}","broker_heap":"${STRATA_KAFKA_HEAP:-256m}",
 "broker_jvm":"${STRATA_KAFKA_JVM_OPTS:-default (SerialGC, C1)}",
 "java":"$(java -version 2>&1 | head -n 1 | tr -d '"')","peer_heap":"${STRATA_PEER_HEAP:-1g}",
 "commit":"${build_commit}",
 "command":"${command_line}"}
EOF
table="${out_dir}/table.md"
python3 benchmarks/runtime/table.py "${raw}" "${out_dir}/conditions.json" >"${table}"
cat "${table}"
if ((doc)); then
  python3 - "${table}" docs/benchmarks-runtime.md <<'EOF'
import sys, pathlib
table = pathlib.Path(sys.argv[1]).read_text()
doc = pathlib.Path(sys.argv[2])
begin, end = "<!-- generated by scripts/bench-runtime.sh: begin -->", "<!-- generated by scripts/bench-runtime.sh: end -->"
text = doc.read_text() if doc.exists() else "# strata's runtime and Kafka Streams\n\n" + begin + "\n" + end + "\n"
if begin not in text or end not in text:
    text += "\n" + begin + "\n" + end + "\n"
head, rest = text.split(begin, 1)
_, tail = rest.split(end, 1)
doc.write_text(head + begin + "\n" + table.rstrip() + "\n" + end + tail)
EOF
  say "wrote docs/benchmarks-runtime.md"
fi
say "raw results and every instance's log in ${out_dir}"
