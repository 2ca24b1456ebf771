#!/usr/bin/env bash
# Fuzzes every decoder of untrusted bytes with libFuzzer (test/fuzz/, see
# docs/fuzzing.md): builds the targets with clang-15 and
# -fsanitize=fuzzer,address,undefined into build-fuzz/, then runs each one for
# a while from its seed corpus (a copy in a scratch directory: a run never
# writes into the repository). Fails if any target crashes, leaks, hangs, hits
# undefined behaviour, breaks one of its checks or allocates past its bound.
#
#   scripts/fuzz.sh                     every target for 10 seconds (the short run)
#   scripts/fuzz.sh --seconds 600       every target for 10 minutes (the long run)
#   scripts/fuzz.sh --seconds 60 serde_fuzz frame_fuzz   some targets only
#   scripts/fuzz.sh --regenerate-corpus  rewrite test/fuzz/corpus/ and exit
#
# Per target it prints executions, executions per second, coverage (cov:
# edges, ft: features, from libFuzzer's final stats) and crashes. The inputs
# that crashed are kept in build-fuzz/artifacts/<target>/; replay one with
# `build-fuzz/test/fuzz/<target> <file>`.
#
# Environment: STRATA_FUZZ_BUILD_DIR (build-fuzz/), STRATA_FUZZ_JOBS (2, the
# build's parallelism and the targets fuzzed at once), STRATA_FUZZ_MAX_LEN (4096 bytes per input),
# STRATA_FUZZ_MALLOC_LIMIT_MB (64: one allocation larger than this is a
# finding), STRATA_FUZZ_RSS_LIMIT_MB (2048), STRATA_FUZZ_TIMEOUT (10 seconds
# per input: a slower one is a hang).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${STRATA_FUZZ_BUILD_DIR:-${root}/build-fuzz}"
jobs="${STRATA_FUZZ_JOBS:-2}"
((jobs >= 1)) || jobs=1  # the build's -j and the fuzzers at once: 0 would stop both
max_len="${STRATA_FUZZ_MAX_LEN:-4096}"
malloc_limit="${STRATA_FUZZ_MALLOC_LIMIT_MB:-64}"
rss_limit="${STRATA_FUZZ_RSS_LIMIT_MB:-2048}"
timeout="${STRATA_FUZZ_TIMEOUT:-10}"

all_targets=(file_log_fuzz frame_fuzz log_metadata_fuzz serde_fuzz checkpoint_fuzz codec_fuzz http_fuzz)
seconds=10
regenerate=0
targets=()
while (($#)); do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --seconds=*) seconds="${1#--seconds=}"; shift ;;
    --regenerate-corpus) regenerate=1; shift ;;
    -h|--help) sed -n '2,26p' "${BASH_SOURCE[0]}"; exit 0 ;;
    -*) echo "fuzz: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
((${#targets[@]})) || targets=("${all_targets[@]}")
for t in "${targets[@]}"; do
  [[ " ${all_targets[*]} " == *" ${t} "* ]] || { echo "fuzz: no target ${t} (${all_targets[*]})" >&2; exit 2; }
done

start_all=$(date +%s)

# clang-15 and libFuzzer; libc++, because clang 15 cannot compile the <ranges>
# of Debian's libstdc++ 12 (test/fuzz/CMakeLists.txt says more).
packages=(clang-15 libfuzzer-15-dev libc++-15-dev libc++abi-15-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "fuzz: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
bash "${root}/scripts/setup.sh" >/dev/null

# The targets only: no tests, examples, tools, RocksDB or SQLite
# (strata::http and strata::gateway stay: http_fuzz reads the gateway's parameters too).
CXX=clang++-15 cmake -S "${root}" -B "${build}" -G Ninja -DCMAKE_BUILD_TYPE= -DSTRATA_BUILD_FUZZERS=ON \
  -DSTRATA_BUILD_TESTS=OFF -DSTRATA_BUILD_EXAMPLES=OFF -DSTRATA_BUILD_TOOLS=OFF \
  -DSTRATA_WITH_KAFKA=ON -DSTRATA_WITH_GATEWAY=ON -DSTRATA_WITH_ROCKSDB=OFF -DSTRATA_WITH_SQLITE=OFF >/dev/null

if ((regenerate)); then
  cmake --build "${build}" -j "${jobs}" --target strata_fuzz_corpus
  rm -rf "${root}/test/fuzz/corpus"
  "${build}/test/fuzz/strata_fuzz_corpus" "${root}/test/fuzz/corpus"
  echo "fuzz: wrote $(find "${root}/test/fuzz/corpus" -type f | wc -l) seeds ($(du -sh "${root}/test/fuzz/corpus" | cut -f1)) to test/fuzz/corpus"
  exit 0
fi

cmake --build "${build}" -j "${jobs}" --target "${targets[@]}"
built=$(date +%s)

# Scratch space in memory when there is some: the corpora grow there, and
# checkpoint_fuzz writes its file there on every input.
scratch_parent="${TMPDIR:-/tmp}"
[ -d /dev/shm ] && [ -w /dev/shm ] && scratch_parent=/dev/shm
scratch="$(mktemp -d "${scratch_parent}/strata-fuzz.XXXXXX")"
trap 'rm -rf "${scratch}"' EXIT

export ASAN_OPTIONS="detect_leaks=1 ${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1 halt_on_error=1 ${UBSAN_OPTIONS:-}"
symbolizer="$(command -v llvm-symbolizer-15 || command -v llvm-symbolizer || true)"
[ -n "${symbolizer}" ] && export ASAN_SYMBOLIZER_PATH="${symbolizer}"

# One target's run; its exit status goes to <scratch>/<target>/status.
fuzz_one() {
  local t="$1" status=0
  TMPDIR="${scratch}/${t}/tmp" "${build}/test/fuzz/${t}" \
    -max_total_time="${seconds}" -max_len="${max_len}" -malloc_limit_mb="${malloc_limit}" \
    -rss_limit_mb="${rss_limit}" -timeout="${timeout}" -print_final_stats=1 \
    -dict="${root}/test/fuzz/strata.dict" -artifact_prefix="${scratch}/${t}/artifacts/" \
    "${scratch}/${t}/corpus" >"${scratch}/${t}/fuzz.log" 2>&1 || status=$?
  echo "${status}" >"${scratch}/${t}/status"
}

# STRATA_FUZZ_JOBS targets at a time (each fuzzer is one process on one core).
for t in "${targets[@]}"; do
  mkdir -p "${scratch}/${t}/corpus" "${scratch}/${t}/artifacts" "${scratch}/${t}/tmp"
  cp -r "${root}/test/fuzz/corpus/${t}/." "${scratch}/${t}/corpus/"
  while (($(jobs -rp | wc -l) >= jobs)); do wait -n || true; done
  echo "fuzz: ${t} for ${seconds} s"
  fuzz_one "${t}" &
done
wait

failed=()
rows=()
for t in "${targets[@]}"; do
  log="${scratch}/${t}/fuzz.log"
  status="$(cat "${scratch}/${t}/status" 2>/dev/null || echo 1)"

  # A run that fails while it loads its corpus prints no figures at all.
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "${log}" | tail -1 || true)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "${log}" | tail -1 || true)
  cov=$( (grep -o 'cov: [0-9]*' "${log}" || true) | tail -1 | cut -d' ' -f2)
  ft=$( (grep -o 'ft: [0-9]*' "${log}" || true) | tail -1 | cut -d' ' -f2)
  corpus=$(find "${scratch}/${t}/corpus" -type f | wc -l)
  crashes=$(find "${scratch}/${t}/artifacts" -type f ! -name 'slow-unit-*' | wc -l)
  if ((status != 0 || crashes != 0)); then
    failed+=("${t}")
    keep="${build}/artifacts/${t}"
    mkdir -p "${keep}"
    cp "${scratch}/${t}/artifacts/"* "${keep}/" 2>/dev/null || true
    cp "${log}" "${keep}/fuzz.log"
    echo "fuzz: ${t} FAILED (exit ${status}); inputs and log in ${keep}:"
    grep -E 'ERROR|strata fuzz finding|SUMMARY|runtime error|Test unit written' "${log}" | head -20 || true
    ((crashes == 0)) && crashes="?"
  fi
  rows+=("$(printf '%-18s %8s %12s %9s %7s %7s %7s %8s' "${t}" "${seconds}" "${execs:-?}" "${rate:-?}" \
            "${cov:-?}" "${ft:-?}" "${corpus}" "${crashes}")")
done
end_all=$(date +%s)

echo
printf '%-18s %8s %12s %9s %7s %7s %7s %8s\n' target seconds executions execs/s cov ft corpus crashes
printf '%s\n' "${rows[@]}"
echo "fuzz: set-up and build $((built - start_all)) s, fuzzing $((end_all - built)) s, total $((end_all - start_all)) s"
if ((${#failed[@]})); then
  echo "fuzz: FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: no crash, leak, hang, undefined behaviour, broken check or excess allocation"
