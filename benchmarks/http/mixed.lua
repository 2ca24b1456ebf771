-- wrk script for the soak of scripts/bench-http.sh: nine GETs of an object
-- for each PUT of a new state, over the ids in the file named by PATHS (one
-- per line, "/objects/<id>"); the result line as get.lua's.
local paths = {}
for line in io.lines(os.getenv("PATHS")) do paths[#paths + 1] = line end
local states = {"ok", "degraded", "down"}
local i = 0
request = function()
  i = i + 1
  local p = paths[i % #paths + 1]
  if i % 10 == 0 then
    return wrk.format("PUT", p, {["Content-Type"] = "application/json"},
                      '{"state": "' .. states[i % 3 + 1] .. '", "agent": "soak"}')
  end
  return wrk.format("GET", p)
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'result {"requests":%d,"seconds":%.3f,"non_2xx":%d,"errors":%d,"p50_us":%d,"p99_us":%d,"p999_us":%d,"max_us":%d}\n',
    summary.requests, summary.duration / 1e6, summary.errors.status, e.connect + e.read + e.write + e.timeout,
    latency:percentile(50), latency:percentile(99), latency:percentile(99.9), latency.max))
end
