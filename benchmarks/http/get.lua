-- wrk script for scripts/bench-http.sh: GETs the paths (common.lua) in turn.
dofile("benchmarks/http/common.lua")
local paths = load_paths()
local i = 0
request = function()
  i = i % #paths + 1
  return wrk.format("GET", paths[i])
end
