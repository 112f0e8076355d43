-- wrk script: POST /v1/location/create with 200 realistic, valid, distinct locations per request
-- (mixed types, full weekly schedules, holidays; about 300 KB), each with a merchant_location_id
-- never sent before, so every item is stored. Args: API_KEYS RUN_TAG, where API_KEYS is one key or
-- several joined by commas (one per merchant; requests take them in turn).
local keys, tag = {}
local counter = 0
-- `thread_no`, each thread's own (threads.lua, beside this script).
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "") .. "threads.lua")

local days = {"MONDAY", "TUESDAY", "WEDNESDAY", "THURSDAY", "FRIDAY", "SATURDAY", "SUNDAY"}

local function schedule(cutoff)
  local parts = {}
  for i, d in ipairs(days) do
    local extra = cutoff and ',"shipping_cutoff":"17:00"' or ''
    parts[i] = string.format('{"day":"%s","schedule":{"time_start":"08:00","time_end":"21:00","break":"13:00-13:45"%s}}', d, extra)
  end
  return "[" .. table.concat(parts, ",") .. "]"
end

local weekly_plain, weekly_cutoff = schedule(false), schedule(true)
local holidays = '[{"date":"2026-12-31","schedule":{"time_start":"10:00","time_end":"16:00"},"is_works":true},' ..
  '{"date":"2027-01-01","schedule":{"time_start":"00:00","time_end":"24:00"},"is_works":false},' ..
  '{"date":"2027-01-07","schedule":{"time_start":"10:00","time_end":"18:00","break":"14:00-15:00"},"is_works":true}]'

local pickup = '{"merchant_location_id":"%s","location_types":["PICKUP_POINT"],"name":"Pickup point %s",' ..
  '"address_tail":"190000, Russia, Saint Petersburg, Nevsky prospekt, %d, 2, 1, 15",' ..
  '"comment":"Entrance from the courtyard, second door on the left; ring the bell twice and wait for the operator.",' ..
  '"latitude":%.6f,"longitude":%.6f,"provider_id":"PROVIDER_%d","provider_location_id":"PVZ-%d",' ..
  '"pickup_point_type":"%s","payment_methods":%s,"storage_period_days":7,' ..
  '"limits":{"length":120,"width":80,"height":80,"weight":30},' ..
  '"instruction":"Show the order code from the app. Parcels larger than 60 cm are handed out at the back door.",' ..
  '%s"working_schedule":' .. weekly_plain .. ',"individual_schedule":' .. holidays .. ',"is_accepts_returns":true}'

local warehouse = '{"merchant_location_id":"%s","location_types":["WAREHOUSE","CLICK_AND_COLLECT"],"name":"Store %s",' ..
  '"address_tail":"101000, Russia, Moscow, Tverskaya street, %d",' ..
  '"comment":"Loading dock at the back of the building, trucks up to 7.5 t; call the shift manager on arrival.",' ..
  '"latitude":%.6f,"longitude":%.6f,"payment_methods":["ALREADY_PAID","CARD","CASH"],"storage_period_days":14,' ..
  '"limits":{"length":400,"width":200,"height":200,"weight":1500},"instruction":"Pick-up desk at the main entrance.",' ..
  '"pickup_services":["FITTING"],"working_schedule":' .. weekly_cutoff .. ',"individual_schedule":' .. holidays ..
  ',"is_accepts_returns":false}'

function init(args)
  for k in string.gmatch(args[1], "[^,]+") do table.insert(keys, k) end
  tag = args[2]
  math.randomseed(os.time() + thread_no * 7919)
end

function request()
  counter = counter + 1
  local items = {}
  for i = 1, 200 do
    local id = string.format("%s-t%d-r%d-i%d", tag, thread_no, counter, i)
    -- Places spread over the map: distinct and never within 50 m of each other.
    local n = (thread_no * 1000003 + counter * 211 + i) % 1000000
    local lat = -60 + (n % 1000) * 0.12 + thread_no * 0.0007
    local lon = -170 + math.floor(n / 1000) * 0.34
    if i % 3 == 0 then
      items[i] = string.format(warehouse, id, id, i, lat, lon)
    else
      local postamat = (i % 3 == 1)
      local methods = postamat and '["ALREADY_PAID","CARD"]' or '["ALREADY_PAID","CARD","CASH"]'
      local services = postamat and '' or '"pickup_services":["FITTING"],'
      items[i] = string.format(pickup, id, id, i, lat, lon, 1 + i % 16, i, postamat and "POSTAMAT" or "PICKUP_POINT", methods, services)
    end
  end
  local body = '{"locations":[' .. table.concat(items, ",") .. ']}'
  local key = keys[1 + counter % #keys]
  return wrk.format("POST", "/v1/location/create",
    {["Content-Type"] = "application/json", ["Authorization"] = "Bearer " .. key}, body)
end

-- The RESULT line (result.lua, beside this script).
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "") .. "result.lua")
