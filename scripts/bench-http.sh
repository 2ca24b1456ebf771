#!/usr/bin/env bash
# The shared-state service's HTTP serving under load, on this machine: a
# broker (scripts/kafka-broker.sh, unless one runs), three instances of
# docs/examples/shared_state/service.cpp (Release, build-bench/http) on
# 127.0.0.1:18081-18083 with one standby per partition, OBJECTS objects
# written through the API, then wrk (Debian's package, installed if missing):
#
#   - local GETs (the gateway's key route, asked of the instance that runs
#     the key) and forwarded GETs (asked of another), at 1, 64 and 512
#     connections: requests/s, p50, p99, p99.9, answers other than 2xx;
#   - the same at 64 connections while benchmarks/http/held_connections.py
#     holds IDLE idle keep-alive connections and SLOW slow clients (headers a
#     byte a second) open against the instance asked;
#   - memory per idle connection: the instance's RSS with them open, less
#     before, over IDLE;
#   - a soak of SOAK minutes, nine GETs of an object for each PUT, RSS of the
#     three instances sampled every 10 s.
#
# Prints a Markdown table; it replaces the generated section of
# docs/benchmarks-http.md unless --no-doc. Raw output: build-bench/results/http/.
#
# Usage: scripts/bench-http.sh [--duration 20] [--objects 10000] [--idle 10000]
#                              [--slow 100] [--soak 10] [--no-doc]
set -euo pipefail
repo_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${repo_dir}"

duration=20 objects=10000 idle=10000 slow=100 soak=10 doc=1
while (($#)); do
  case "$1" in
    --duration) duration="$2"; shift 2 ;;
    --objects) objects="$2"; shift 2 ;;
    --idle) idle="$2"; shift 2 ;;
    --slow) slow="$2"; shift 2 ;;
    --soak) soak="$2"; shift 2 ;;
    --no-doc) doc=0; shift ;;
    -h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench-http: unknown option $1" >&2; exit 2 ;;
  esac
done
say() { echo "bench-http: $*" >&2; }

if ! command -v wrk >/dev/null; then
  say "installing wrk"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends wrk
fi
bash scripts/setup.sh >/dev/null

stamp="$(date -u +%Y%m%dT%H%M%SZ)"
out_dir="${repo_dir}/build-bench/results/http/${stamp}"
mkdir -p "${out_dir}"
log="${out_dir}/run.log"
say "building the service (Release, build-bench/http); log ${log}"
cmake -S . -B build-bench/http -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTRATA_BUILD_TESTS=OFF >>"${log}" 2>&1
cmake --build build-bench/http --target shared_state_service >>"${log}" 2>&1
service="${repo_dir}/build-bench/http/docs/examples/shared_state_service"
commit="$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- include docs/examples || echo ' with uncommitted changes')"

source scripts/lib/broker.sh
broker_up "${log}"

work="$(mktemp -d /tmp/bench-http.XXXXXX)"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "${pid}" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "${pid}" 2>/dev/null || true; done
  broker_down "${log}"
  rm -rf "${work}"
}
trap cleanup EXIT INT TERM

app="bench-http-${stamp,,}"
ports=(18081 18082 18083)
for i in 0 1 2; do
  id="$(printf "\\x$(printf %x $((97 + i)))")"
  "${service}" --bootstrap "${STRATA_KAFKA_BOOTSTRAP}" --app "${app}" --reports "${app}-reports" \
    --states "${app}-states" --instance "${id}" --port "${ports[i]}" --state "${work}/${id}" --standbys 1 \
    >"${out_dir}/${id}.log" 2>&1 &
  pids+=("$!")
done

# Objects written through the API, each processed; each classified as local
# to instance a or not (the instance that answered the gateway's key route).
say "writing ${objects} objects"
python3 - "${ports[0]}" "${objects}" "${work}" <<'EOF' >>"${log}" 2>&1
import http.client, json, sys, time
port, n, work = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
def conn(): return http.client.HTTPConnection("127.0.0.1", port, timeout=10)
deadline = time.time() + 180
c = conn()
while True:  # every partition runs somewhere, with an endpoint
    try:
        c.request("GET", "/instances"); r = c.getresponse(); body = r.read()
        if r.status == 200:
            md = json.loads(body)
            if len(md.get("instances", [])) == 3 and all(p.get("active") for p in md["partitions"]): break
    except (OSError, http.client.HTTPException):
        c = conn()
    if time.time() > deadline: sys.exit("the instances did not settle")
    time.sleep(0.5)
for i in range(n):
    c.request("PUT", f"/objects/obj-{i}", body='{"state": "ok", "agent": "bench"}', headers={"Content-Type": "application/json"})
    r = c.getresponse(); r.read()
    if r.status != 202: sys.exit(f"PUT obj-{i}: {r.status}")
local, forwarded = [], []
for i in range(n):
    while True:
        c.request("GET", f"/strata/stores/states/keys/obj-{i}"); r = c.getresponse(); body = r.read()
        if r.status == 200: break
        if time.time() > deadline + 120: sys.exit(f"obj-{i} not processed: {r.status} {body[:200]}")
        time.sleep(0.05)
    (local if json.loads(body)["instance"] == "a" else forwarded).append(f"/strata/stores/states/keys/obj-{i}")
open(f"{work}/local.txt", "w").write("\n".join(local) + "\n")
open(f"{work}/forwarded.txt", "w").write("\n".join(forwarded) + "\n")
open(f"{work}/objects.txt", "w").write("\n".join(f"/objects/obj-{i}" for i in range(n)) + "\n")
print(f"local {len(local)} forwarded {len(forwarded)}")
EOF

rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
results="${out_dir}/results.jsonl"
: >"${results}"
# run NAME CONNECTIONS PATHS [SECONDS] [SCRIPT] [PORT]
run() {
  local name="$1" c="$2" paths="$3" secs="${4:-${duration}}" script="${5:-get.lua}" port="${6:-${ports[0]}}" line
  say "${name}, ${c} connections, ${secs} s"
  # wrk wants at least one connection per thread.
  line="$(PATHS="${paths}" wrk -t"$((c < 2 ? c : 2))" -c "${c}" -d "${secs}s" --timeout 10s -s "benchmarks/http/${script}" \
    "http://127.0.0.1:${port}" 2>>"${log}" | tee -a "${log}" | sed -n 's/^result //p')"
  echo "{\"name\":\"${name}\",\"connections\":${c},\"result\":${line:-null}}" >>"${results}"
}

for c in 1 64 512; do
  run "local" "${c}" "${work}/local.txt"
  run "forwarded" "${c}" "${work}/forwarded.txt"
done

say "holding ${idle} idle connections and ${slow} slow clients against instance a"
before_kb="$(rss_kb "${pids[0]}")"
held_out="${out_dir}/held.jsonl"
: >"${held_out}"  # before the background job opens it: the wait below reads it at once
python3 benchmarks/http/held_connections.py --port "${ports[0]}" --idle "${idle}" --slow "${slow}" --path /health \
  </dev/null >"${held_out}" 2>>"${log}" &
held_pid=$!
# The first line comes once every connection is open; the runs below need them all.
for ((i = 0; i < 600; i++)); do
  (($(wc -l <"${held_out}") >= 1)) && break
  kill -0 "${held_pid}" 2>/dev/null || { say "error: held_connections.py exited before opening its connections"; exit 1; }
  sleep 0.5
done
held_line="$(sed -n 1p "${held_out}")"
[[ -n "${held_line}" ]] || { say "error: the held connections were not open after 300 s"; exit 1; }
held_kb="$(rss_kb "${pids[0]}")"
run "local, connections held" 64 "${work}/local.txt"
run "forwarded, connections held" 64 "${work}/forwarded.txt"
kill -TERM "${held_pid}" 2>/dev/null || true
wait "${held_pid}" || true
held_end="$(sed -n 2p "${held_out}")"
[[ -n "${held_line}" ]] || held_line="{}"
[[ -n "${held_end}" ]] || held_end="{}"
echo "{\"held\":${held_line},\"held_end\":${held_end},\"rss_before_kb\":${before_kb},\"rss_held_kb\":${held_kb}}" \
  >>"${results}"

if ((soak > 0)); then
  say "soak: ${soak} minutes of GETs and PUTs against instance b"
  samples="${out_dir}/rss.tsv"
  (while :; do
     printf '%s' "$(date +%s)"; for pid in "${pids[@]}"; do printf '\t%s' "$(rss_kb "${pid}")"; done; echo
     sleep 10
   done) >"${samples}" &
  sampler=$!
  run "soak (9 GET : 1 PUT)" 64 "${work}/objects.txt" "$((soak * 60))" mixed.lua "${ports[1]}"
  kill "${sampler}" 2>/dev/null || true
fi

python3 - "${results}" "${out_dir}/rss.tsv" "${idle}" "${slow}" "${commit}" "${objects}" "${duration}" <<'EOF' | tee "${out_dir}/table.md"
import json, os, sys
results, samples, idle, slow, commit, objects, duration = sys.argv[1:]
rows = [json.loads(l) for l in open(results)]
print(f"From `scripts/bench-http.sh --duration {duration} --objects {objects} --idle {idle} --slow {slow}` at {commit}, "
      f"on {os.cpu_count()} cores: three instances, the broker, wrk (2 threads) and the held connections on one machine.\n")
print("| GET | connections | requests/s | p50 ms | p99 ms | p99.9 ms | not 2xx | errors |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
held = None
for r in rows:
    if "held" in r: held = r; continue
    x = r["result"]
    if x is None: print(f"| {r['name']} | {r['connections']} | failed | | | | | |"); continue
    print(f"| {r['name']} | {r['connections']} | {x['requests'] / x['seconds']:,.0f} | {x['p50_us'] / 1000:.2f} | "
          f"{x['p99_us'] / 1000:.2f} | {x['p999_us'] / 1000:.2f} | {x['non_2xx']} | {x['errors']} |")
if held:
    h = {"idle": 0, "slow": 0, "failed": 0, **held["held"]}
    per = (held["rss_held_kb"] - held["rss_before_kb"]) * 1024 / max(h["idle"], 1)
    print(f"\nHeld against instance a: {h['idle']} idle connections and {h['slow']} slow clients open "
          f"({h['failed']} failed to open); its RSS {held['rss_before_kb'] / 1024:.1f} MiB before, "
          f"{held['rss_held_kb'] / 1024:.1f} MiB with them: {per / 1024:.1f} KiB per idle connection. "
          f"Afterwards: {json.dumps(held['held_end'])}.")
if os.path.exists(samples):
    cols = list(zip(*[l.split("\t") for l in open(samples) if l.strip()]))
    for name, col in zip("abc", cols[1:]):
        v = [int(x) / 1024 for x in col if x.strip()]
        if v: print(f"\nSoak RSS of instance {name}: {v[0]:.1f} MiB at the start, {v[-1]:.1f} MiB at the end, {max(v):.1f} MiB at most.")
EOF

if ((doc)); then
  python3 - "${out_dir}/table.md" <<'EOF'
import sys
table = open(sys.argv[1]).read().strip()
path = "docs/benchmarks-http.md"
begin, end = "<!-- generated by scripts/bench-http.sh: begin -->", "<!-- generated by scripts/bench-http.sh: end -->"
text = open(path).read()
i, j = text.index(begin) + len(begin), text.index(end)
open(path, "w").write(text[:i] + "\n" + table + "\n" + text[j:])
EOF
  say "docs/benchmarks-http.md updated"
fi
