-- wrk script: POST to a list endpoint with 100-item pages at random positions. Args: API_KEY
-- BODIES_FILE (one request body per line: the first page and pages reached by real cursors)
-- [PATH] (default /v1/categories/list).
local key
local path = "/v1/categories/list"
local bodies = {}

function init(args)
  key = args[1]
  if args[3] then path = args[3] end
  for line in io.lines(args[2]) do
    if #line > 0 then table.insert(bodies, line) end
  end
  math.randomseed(os.time() + #bodies)
end

function request()
  local body = bodies[math.random(#bodies)]
  return wrk.format("POST", path,
    {["Content-Type"] = "application/json", ["Authorization"] = "Bearer " .. key}, body)
end

function done(summary, latency, requests)
  local errors = summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.status + summary.errors.timeout
  io.write(string.format('RESULT {"requests":%d,"duration_us":%d,"errors":%d,"p50_us":%d,"p99_us":%d}\n',
    summary.requests, summary.duration, errors, latency:percentile(50), latency:percentile(99)))
end
