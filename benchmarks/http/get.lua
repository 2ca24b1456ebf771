-- wrk script for scripts/bench-http.sh: GETs paths read from the file named
-- by the environment variable PATHS, one per line, in turn; at the end one
-- line "result {json}" with requests, errors, non-2xx answers, requests per
-- second and the latency percentiles (µs) wrk kept.
local paths = {}
for line in io.lines(os.getenv("PATHS")) do paths[#paths + 1] = line end
local i = 0
request = function()
  i = i % #paths + 1
  return wrk.format("GET", paths[i])
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'result {"requests":%d,"seconds":%.3f,"non_2xx":%d,"errors":%d,"p50_us":%d,"p99_us":%d,"p999_us":%d,"max_us":%d}\n',
    summary.requests, summary.duration / 1e6, summary.errors.status, e.connect + e.read + e.write + e.timeout,
    latency:percentile(50), latency:percentile(99), latency:percentile(99.9), latency.max))
end
