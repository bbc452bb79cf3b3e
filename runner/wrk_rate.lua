-- wrk script of `make bench-server`: a constant offered load, as
-- `oha -q RATE --latency-correction -w --output-format csv` gives it, from
-- the wrk that drives the saturation rows (no generator of its own to build).
--
--   wrk -t1 -cN -dD -s runner/wrk_rate.lua URL -- RATE BODY_FILE SECONDS CSV_FILE [CONTENT_TYPE]
--
-- POSTs BODY_FILE (Content-Type CONTENT_TYPE, application/json by default)
-- on N keep-alive connections, the k-th request scheduled at start + k/RATE
-- for SECONDS (an open-loop schedule: a late answer does not delay the
-- schedule); wrk exits as soon as every request sent has its answer, or at
-- its -d, which must leave time for the last answers (the unanswered are
-- written as such). One thread only (-t1): the schedule is one.
--
-- Latency corrected for coordinated omission, as oha's --latency-correction:
-- a request sent late because every connection was still waiting for an
-- answer counts from its scheduled time; one sent when its slot came counts
-- from when it was sent (the event loop's timers are whole milliseconds:
-- their lateness is the generator's, not the server's).
--
-- Every request carries a uid of its own in place of the body's first
-- "uid" (same length, so the same bytes on the wire), which the answer
-- echoes: that is how an answer finds its request. CSV_FILE has oha's
-- columns, one row per request sent, written as its answer comes:
--   request-start,request-duration,status
-- (seconds from the start of the schedule, seconds, HTTP status; status 0:
-- no answer before wrk stopped).

local ffi = require("ffi")
ffi.cdef [[
typedef struct { long tv_sec; long tv_nsec; } wrk_rate_timespec;
int clock_gettime(int clk_id, wrk_rate_timespec *tp);
]]
local CLOCK_MONOTONIC = 1
local ts = ffi.new("wrk_rate_timespec")
local function now()
  ffi.C.clock_gettime(CLOCK_MONOTONIC, ts)
  return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end

local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

-- The thread's state; done() reads the globals (thread:get reads only
-- those, and copies numbers and strings only).
local rate, seconds
local headers = {}
local prefix, uid_width, suffix
local start = nil     -- the schedule's start
local ready = {}      -- when each connection waiting for its slot became free, oldest first:
local ready_head, ready_tail = 1, 0  -- ready[ready_head .. ready_tail]
local inflight = {}   -- uid -> { scheduled start, reference start }
local out             -- CSV_FILE, a row written as each answer comes
sent = 0              -- requests handed to wrk: the slots taken
answered = 0
unmatched = 0         -- answers whose uid is no request's
last_scheduled = 0    -- the last request's scheduled start, from the schedule's start
csv_file = nil

function init(args)
  rate = tonumber(args[1])
  local body_file = args[2]
  seconds = tonumber(args[3])
  csv_file = args[4]
  assert(rate and rate > 0 and body_file and seconds and csv_file,
    "usage: wrk ... -s wrk_rate.lua URL -- RATE BODY_FILE SECONDS CSV_FILE [CONTENT_TYPE]")
  headers["Content-Type"] = args[5] or "application/json"
  local f = assert(io.open(body_file, "rb"))
  local body = f:read("*a")
  f:close()
  local s, e, uid = body:find('"uid":"([^"]*)"')
  assert(s and #uid >= 8, body_file .. ": no \"uid\" of at least 8 characters to make unique")
  prefix = body:sub(1, s - 1) .. '"uid":"'
  uid_width = #uid
  suffix = body:sub(e)
  out = assert(io.open(csv_file, "w"))
  out:setvbuf("line")
  out:write("request-start,request-duration,status\n")
end

-- The time of the n-th slot (0-based).
local function slot(n)
  return start + n / rate
end

-- A connection is free: it waits for the first slot no waiting connection
-- has taken yet; past the schedule's end it waits out wrk's -d.
function delay()
  local t = now()
  if start == nil then
    start = t
  end
  ready_tail = ready_tail + 1
  ready[ready_tail] = t
  local n = sent + (ready_tail - ready_head)
  local at = slot(n)
  if at >= start + seconds then
    return 3600 * 1000
  end
  if at <= t then
    return 0
  end
  return math.ceil((at - t) * 1000)
end

function request()
  if ready_head > ready_tail then
    -- wrk's own call before the connections start (it counts the requests
    -- a call returns): nothing is scheduled, nothing is recorded
    return wrk.format("POST", nil, headers, prefix .. string.rep("0", uid_width) .. suffix)
  end
  local t = now()
  local free_since = ready[ready_head]
  ready[ready_head] = nil
  ready_head = ready_head + 1
  local scheduled = slot(sent)
  sent = sent + 1
  -- no connection was free when the slot came: the request is late because
  -- the server was slow, and counts from its slot
  local reference = free_since > scheduled and scheduled or t
  local uid = string.format("%0" .. uid_width .. "d", sent)
  inflight[uid] = { scheduled, reference }
  last_scheduled = scheduled - start
  return wrk.format("POST", nil, headers, prefix .. uid .. suffix)
end

function response(status, headers, body)
  local t = now()
  local uid = body and body:match('"uid":"([^"]*)"')
  local r = uid and inflight[uid]
  if r == nil then
    unmatched = unmatched + 1
    return
  end
  inflight[uid] = nil
  answered = answered + 1
  out:write(string.format("%.6f,%.6f,%d\n", r[1] - start, t - r[2], status))
  -- the schedule is over and every request answered: the run ends here,
  -- without waiting out wrk's -d (the CSV is whole)
  if slot(sent) >= start + seconds and answered + unmatched >= sent then
    out:close()
    os.exit(0)
  end
end

-- Each request never answered: a row of status 0 (its start: the last
-- request's, near the end, where it was).
function done(summary, latency, requests)
  for _, thread in ipairs(threads) do
    local lost = thread:get("sent") - thread:get("answered")
    if lost > 0 then
      local f = assert(io.open(thread:get("csv_file"), "a"))
      for _ = 1, lost do
        f:write(string.format("%.6f,0,0\n", thread:get("last_scheduled")))
      end
      f:close()
    end
    local unmatched = thread:get("unmatched")
    if unmatched > 0 then
      io.stderr:write(string.format("wrk_rate.lua: %d answers with a uid no request had\n", unmatched))
    end
  end
end
