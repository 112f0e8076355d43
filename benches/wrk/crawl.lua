-- wrk script: POST one body to PATH, each request with the next of many merchants' keys (a crawler
-- going through every shop in turn, from a random one on). Args: KEYS_FILE (one API key a line)
-- BODY PATH.
local keys = {}
local body
local path
local at = 1

function init(args)
  for line in io.lines(args[1]) do
    if #line > 0 then table.insert(keys, line) end
  end
  body = args[2]
  path = args[3]
  math.randomseed(os.time() + #keys)
  at = math.random(#keys)
end

function request()
  at = at % #keys + 1
  return wrk.format("POST", path,
    {["Content-Type"] = "application/json", ["Authorization"] = "Bearer " .. keys[at]}, body)
end

function done(summary, latency, requests)
  local errors = summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.status + summary.errors.timeout
  io.write(string.format('RESULT {"requests":%d,"duration_us":%d,"errors":%d,"p50_us":%d,"p99_us":%d}\n',
    summary.requests, summary.duration, errors, latency:percentile(50), latency:percentile(99)))
end
