-- wrk script: POST /v1/location/update or archive/restore over locations seeded beforehand
-- (benches/bench.py seeds BATCHES batches of 200 warehouses named gen-<n>, as location(n) there).
-- Args: API_KEY MODE (update | archive) BATCHES.
--   update:  200 items a request, each the location's whole content with another working
--            schedule (no coordinates moved), so every item changes its location.
--   archive: 200 items a request naming locations by merchant_location_id; a batch's visits
--            alternate archive and restore, so every item changes its location.
-- Each wrk thread walks its own share of the batches, so no two requests race on one location.
local key, mode, batches
local counter = 0
thread_no = 0
local started = 0

function setup(thread)
  started = started + 1
  thread:set("thread_no", started)
  thread:set("threads", 0)
end

function init(args)
  key, mode, batches = args[1], args[2], tonumber(args[3])
end

local function item(n, variant)
  local lat = -60 + math.floor(n / 1000) * 0.002
  local lon = -170 + (n % 1000) * 0.003
  local close = string.format("%02d:00", 12 + variant)
  local days = {}
  for i, d in ipairs({"MONDAY", "TUESDAY", "WEDNESDAY", "THURSDAY", "FRIDAY"}) do
    days[i] = string.format('{"day":"%s","schedule":{"time_start":"09:00","time_end":"%s","break":"10:00-10:30"}}', d, close)
  end
  return string.format('{"merchant_location_id":"gen-%d","location_types":["WAREHOUSE"],"name":"Warehouse %d",' ..
    '"address_tail":"101000, Russia, Moscow, Tverskaya street, 1","latitude":%s,"longitude":%s,' ..
    '"limits":{"length":200,"width":120,"height":150,"weight":500},"working_schedule":[%s],"is_accepts_returns":true}',
    n, n, string.format("%.6f", lat), string.format("%.6f", lon), table.concat(days, ","))
end

function request()
  -- Two threads: thread 1 walks the even batches, thread 2 the odd ones.
  local share = math.floor(batches / 2)
  local visit = math.floor(counter / share)
  local batch = (counter % share) * 2 + (thread_no - 1)
  counter = counter + 1
  local items = {}
  local path
  if mode == "update" then
    path = "/v1/location/update"
    for i = 0, 199 do items[#items + 1] = item(batch * 200 + i, visit % 10) end
  else
    path = (visit % 2 == 0) and "/v1/location/archive" or "/v1/location/restore"
    for i = 0, 199 do items[#items + 1] = string.format('{"merchant_location_id":"gen-%d"}', batch * 200 + i) end
  end
  return wrk.format("POST", path, {["Content-Type"] = "application/json", ["Authorization"] = "Bearer " .. key},
    '{"locations":[' .. table.concat(items, ",") .. ']}')
end

-- The RESULT line (result.lua, beside this script).
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "") .. "result.lua")
