-- Helpers prepended to every frontier script by the loader (scripts.py). Every key a script touches starts
-- with the shard prefix sp = ARGV[1] ("P:{P:s}:"), so all of them live in the slot of KEYS[1].

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- Politeness times are rounded up: "next allowed = now + gap" must never fall a fraction of a millisecond
-- before the true end of the request plus the gap (lease compares against the rounded-down now).
local function now_ms_up()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.ceil(tonumber(t[2]) / 1000)
end

-- entry = <depth>[.<hops>[.<retries>]]<rest>; see keys.py
local function split_entry(entry)
  local d, h, r, rest = string.match(entry, '^(%d+)%.(%d+)%.(%d+)(.*)$')
  if d then return tonumber(d), tonumber(h), tonumber(r), rest end
  d, h, rest = string.match(entry, '^(%d+)%.(%d+)(.*)$')
  if d then return tonumber(d), tonumber(h), 0, rest end
  d, rest = string.match(entry, '^(%d+)(.*)$')
  if d then return tonumber(d), 0, 0, rest end
  return 0, 0, 0, entry
end

local function join_meta(d, h, r)
  if r > 0 then return string.format('%d.%d.%d', d, h, r) end
  if h > 0 then return string.format('%d.%d', d, h) end
  return string.format('%d', d)
end

-- lease record = "<owner> <host> <entry>"
local function split_lease(rec)
  return string.match(rec, '^(%S+) (%S+) (.*)$')
end

-- counter deltas, written once at the end with flush_counts
local COUNTS = {}
local function count(name, n)
  COUNTS[name] = (COUNTS[name] or 0) + n
end
local function flush_counts(key)
  for name, n in pairs(COUNTS) do
    if n ~= 0 then redis.call('HINCRBY', key, name, n) end
  end
end

-- put an unleased host with queued URLs back among the ready ones (never earlier than now)
local function make_ready(sp, host, hk, now, only_if_absent)
  local nxt = tonumber(redis.call('HGET', hk, 'n') or 0)
  if nxt < now then nxt = now end
  if only_if_absent then
    redis.call('ZADD', sp .. 'ready', 'NX', nxt, host)
  else
    redis.call('ZADD', sp .. 'ready', nxt, host)
  end
  return nxt
end

