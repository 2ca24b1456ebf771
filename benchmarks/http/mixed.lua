-- wrk script for the soak of scripts/bench-http.sh: nine GETs of an object
-- for each PUT of a new state, over the paths (common.lua: "/objects/<id>").
dofile("benchmarks/http/common.lua")
local paths = load_paths()
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
