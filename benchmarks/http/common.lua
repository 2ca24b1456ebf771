-- What the wrk scripts of scripts/bench-http.sh share: the paths to ask for,
-- read from the file named by the environment variable PATHS (one per line),
-- and the result line printed at the end: "result {json}" with requests,
-- errors, answers other than 2xx/3xx, and the latency percentiles (µs).
function load_paths()
  local paths = {}
  for line in io.lines(os.getenv("PATHS")) do paths[#paths + 1] = line end
  return paths
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'result {"requests":%d,"seconds":%.3f,"non_2xx":%d,"errors":%d,"p50_us":%d,"p99_us":%d,"p999_us":%d,"max_us":%d}\n',
    summary.requests, summary.duration / 1e6, summary.errors.status, e.connect + e.read + e.write + e.timeout,
    latency:percentile(50), latency:percentile(99), latency:percentile(99.9), latency.max))
end
