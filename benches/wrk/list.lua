-- wrk script: POST to a list endpoint with 100-item pages at random positions. Args: API_KEY
-- BODIES_FILE (one request body per line: the first page and pages reached by real cursors)
-- [PATH] (default /v1/categories/list).
local key
local path = "/v1/categories/list"
local bodies = {}
-- `thread_no`, each thread's own (threads.lua, beside this script).
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "") .. "threads.lua")

function init(args)
  key = args[1]
  if args[3] then path = args[3] end
  for line in io.lines(args[2]) do
    if #line > 0 then table.insert(bodies, line) end
  end
  math.randomseed(os.time() + #bodies + thread_no * 7919)
end

function request()
  local body = bodies[math.random(#bodies)]
  return wrk.format("POST", path,
    {["Content-Type"] = "application/json", ["Authorization"] = "Bearer " .. key}, body)
end

-- The RESULT line (result.lua, beside this script).
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "") .. "result.lua")
