-- wrk script: POST one body to PATH, each request with the next of many merchants' keys (a crawler
-- going through every shop in turn, from a random one on). Args: KEYS_FILE (one API key a line)
-- BODY PATH.
local keys = {}
local body
local path
local at = 1
-- `thread_no`, each thread's own (threads.lua, beside this script): each starts from a shop of its own.
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "") .. "threads.lua")

function init(args)
  for line in io.lines(args[1]) do
    if #line > 0 then table.insert(keys, line) end
  end
  body = args[2]
  path = args[3]
  math.randomseed(os.time() + #keys + thread_no * 7919)
  at = math.random(#keys)
end

function request()
  at = at % #keys + 1
  return wrk.format("POST", path,
    {["Content-Type"] = "application/json", ["Authorization"] = "Bearer " .. keys[at]}, body)
end

-- The RESULT line (result.lua, beside this script).
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "") .. "result.lua")
