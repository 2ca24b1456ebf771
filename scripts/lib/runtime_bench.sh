# Sourced by the scripts that run benchmarks/runtime's driver on its own
# (bench-failover.sh, bench-runtime-scale.sh): one place for the results
# folder, the Release build and the broker.
#
#   runtime_bench_prepare NAME   makes build-bench/results/NAME/<stamp>/ and
#                                a scratch folder, builds benchmarks/runtime
#                                (Release), brings a broker up and removes
#                                both at exit. Sets stamp, out_dir, work_dir,
#                                raw (the JSON lines, emptied), log, commit
#                                (HEAD, and whether the runtime differs from it)
#                                and bench (the driver). Needs say().

source "$(dirname "${BASH_SOURCE[0]}")/broker.sh"

runtime_bench_prepare() {
  local name="$1"
  stamp="$(date -u +%Y%m%dT%H%M%SZ)"
  out_dir="${repo_dir}/build-bench/results/${name}/${stamp}"
  work_dir="$(mktemp -d "/tmp/strata-${name}.XXXXXX")"
  mkdir -p "${out_dir}"
  raw="${out_dir}/raw.jsonl"
  log="${out_dir}/run.log"
  : >"${raw}"

  bash "${repo_dir}/scripts/setup.sh" >/dev/null
  say "building benchmarks/runtime (Release)"
  commit="$(git -C "${repo_dir}" rev-parse --short HEAD)"
  [[ -z "$(git -C "${repo_dir}" status --porcelain -- include test/runtime/app benchmarks/runtime)" ]] \
    || commit+=" with uncommitted changes"
  cmake -S "${repo_dir}/benchmarks/runtime" -B "${repo_dir}/build-bench/runtime" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release >>"${log}" 2>&1
  cmake --build "${repo_dir}/build-bench/runtime" -j2 >>"${log}" 2>&1
  bench="${repo_dir}/build-bench/runtime/runtime_bench"

  broker_up "${log}"
  trap 'rm -rf "${work_dir}"; broker_down "${log}"' EXIT
}
