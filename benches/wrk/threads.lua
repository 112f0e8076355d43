-- Each wrk thread's number, from 1: `thread_no`, a global that wrk's setup() sets in each thread's
-- own Lua state before its init() runs. A script seeds its random numbers with it, so that each
-- thread draws a sequence of its own (seeded alike, two threads would send the same requests in
-- the same order, each one twice at nearly the same moment). Loaded by each script with dofile,
-- from beside it, before its init().
thread_no = 0
local started = 0

function setup(thread)
  started = started + 1
  thread:set("thread_no", started)
end
