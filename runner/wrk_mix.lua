-- wrk script of `make bench-server` (harness/bench_server/ writes its inputs).
--
--   wrk ... -s runner/wrk_mix.lua URL -- MANIFEST [WRONG_FILE]
--
-- MANIFEST: one line per request, `path<TAB>body file<TAB>expected answer
-- file` (the expected file may be `-`: not checked), in the order they are
-- sent; the list repeats. Every request carries a uid of its own in its
-- body, which the answer echoes: an answer is checked by comparing it byte
-- for byte with the answer policy-server gave that body alone.
-- WRONG_FILE: the first wrong answer of each thread is appended to it.
-- done() prints one line `WRK_RESULT {json}` with the counts and latencies.

local requests = {}
local expected = {}
local wrong_file = nil
local index = 0
-- per thread, read back in done()
ok = 0
wrong = 0
unchecked = 0
bad_status = 0

local threads = {}

function setup(thread)
  table.insert(threads, thread)
  thread:set("id", #threads)
end

local function read(path)
  local f = assert(io.open(path, "rb"))
  local data = f:read("*a")
  f:close()
  return data
end

function init(args)
  local manifest = args[1]
  wrong_file = args[2]
  for line in io.lines(manifest) do
    local path, body_file, expected_file = line:match("^([^\t]+)\t([^\t]+)\t([^\t]+)$")
    if path then
      local body = read(body_file)
      local headers = { ["Content-Type"] = "application/json" }
      table.insert(requests, wrk.format("POST", path, headers, body))
      local uid = body:match('"uid":"([^"]*)"')
      if expected_file ~= "-" and uid then
        expected[uid] = read(expected_file)
      end
    end
  end
  -- Threads start at different places of the list.
  index = ((tonumber(id) or 1) - 1) * 7 % #requests
end

function request()
  index = index + 1
  if index > #requests then
    index = 1
  end
  return requests[index]
end

function response(status, headers, body)
  if status ~= 200 then
    bad_status = bad_status + 1
    return
  end
  local uid = body:match('"uid":"([^"]*)"')
  local want = uid and expected[uid]
  if want == nil then
    unchecked = unchecked + 1
  elseif want == body then
    ok = ok + 1
  else
    wrong = wrong + 1
    if wrong == 1 and wrong_file then
      local f = io.open(wrong_file, "ab")
      if f then
        f:write("uid ", tostring(uid), "\n", body, "\n")
        f:close()
      end
    end
  end
end

function done(summary, latency, requests)
  local counts = { ok = 0, wrong = 0, unchecked = 0, bad_status = 0 }
  for _, t in ipairs(threads) do
    for k, _ in pairs(counts) do
      counts[k] = counts[k] + (tonumber(t:get(k)) or 0)
    end
  end
  local e = summary.errors
  io.write(string.format(
    'WRK_RESULT {"requests":%d,"duration_us":%d,"bytes":%d,"connect_errors":%d,"read_errors":%d,' ..
    '"write_errors":%d,"status_errors":%d,"timeouts":%d,"ok":%d,"wrong":%d,"unchecked":%d,' ..
    '"bad_status":%d,"p50_us":%d,"p95_us":%d,"p99_us":%d,"max_us":%d}\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout,
    counts.ok, counts.wrong, counts.unchecked, counts.bad_status,
    latency:percentile(50), latency:percentile(95), latency:percentile(99), latency.max))
end
