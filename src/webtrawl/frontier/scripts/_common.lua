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

-- The number that ends a lease token. It never falls behind the Redis clock in microseconds, so a counter that went
-- back in time (a failover to a replica that missed its last increments, a restart from an AOF that missed its last
-- second) gives out no token again: a late completion or release of a lost lease would otherwise match a new lease
-- of another URL and complete it unfetched (lost). Holds while the clock moved on by more than the lost increments
-- had run ahead of it (they run ahead only past one lease per microsecond), i.e. unless the new master's clock is
-- behind the old one's by more than the failover took.
local function next_seq(sp)
  local k = sp .. 'seq'
  local t = redis.call('TIME')
  local s = math.max((tonumber(redis.call('GET', k)) or 0) + 1, tonumber(t[1]) * 1000000 + tonumber(t[2]))
  s = string.format('%d', s)
  redis.call('SET', k, s)
  return s
end

-- the lease tokens' numbers of one call (lease.lua, giveup.lua): take() gives next_seq's for the first (never behind
-- the clock), 1 more for each next one (unique and rising; they run ahead of the clock less than next_seq's own
-- would); finish() writes the counter once at the end: one TIME, GET and SET per call, not per lease
local function token_seqs(sp)
  local seq, seq0 = nil, nil
  local function take()
    if seq then
      seq = seq + 1
    else
      seq = tonumber(next_seq(sp))
      seq0 = seq
    end
    return string.format('%d', seq)
  end
  local function finish()
    if seq ~= seq0 then redis.call('SET', sp .. 'seq', string.format('%d', seq)) end
  end
  return take, finish
end

-- entry = <depth>[.<hops>[.<retries>]][~<level>]<rest>; see keys.py (an explicit level stays at the head of rest)
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

-- Priority levels (keys.py): a queued URL's level is its explicit one or its depth, capped at LEVELS - 1. A host has one queue per
-- level (level 0 keeps the plain name q:<host>) and, while idle with URLs queued, waits in the ready set of its best
-- (lowest) non-empty level (level 0: sp..'ready'), so lease takes the hosts of level 0 first.
local function qkey(sp, host, level)
  if level == 0 then return sp .. 'q:' .. host end
  return sp .. 'q' .. level .. ':' .. host
end

local function rkey(sp, level)
  if level == 0 then return sp .. 'ready' end
  return sp .. 'ready' .. level
end

-- An entry (or metadata) with an explicit level "~<l>" after its digits is at that level instead (keys.py).
local function level_of(entry)
  local d = tonumber(string.match(entry, '^[%d.]+~(%d+)') or string.match(entry, '^(%d+)')) or 0
  if d >= LEVELS then return LEVELS - 1 end
  return d
end

-- the host's best non-empty level, or -1 if nothing is queued (no probe when its count q says so)
local function best_level(sp, host)
  if redis.call('HGET', sp .. 'h:' .. host, 'q') == '0' then return -1 end
  for l = 0, LEVELS - 1 do
    if redis.call('LLEN', qkey(sp, host, l)) > 0 then return l end
  end
  return -1
end

-- change the host's count of queued URLs (q); a host of a crawl from before the count has none until add.lua
-- counts its queues, and none is made up here (a partial count would hide URLs)
local function adjust_q(sp, host, delta)
  local hk = sp .. 'h:' .. host
  if redis.call('HEXISTS', hk, 'q') == 1 then redis.call('HINCRBY', hk, 'q', delta) end
end

-- the head entry of the host's best non-empty level (removed, and counted off the host's q), or nil
local function pop_best(sp, host)
  for l = 0, LEVELS - 1 do
    local entry = redis.call('LPOP', qkey(sp, host, l))
    if entry then
      adjust_q(sp, host, -1)
      return entry
    end
  end
  return nil
end

-- put an entry back in its level's queue (head or tail) and count it in the host's q
local function requeue(sp, host, entry, at_head)
  if at_head then
    redis.call('LPUSH', qkey(sp, host, level_of(entry)), entry)
  else
    redis.call('RPUSH', qkey(sp, host, level_of(entry)), entry)
  end
  adjust_q(sp, host, 1)
end

-- the host's score in the ready set that holds it and that set's level, or nil, -1
local function ready_score(sp, host)
  for l = 0, LEVELS - 1 do
    local score = redis.call('ZSCORE', rkey(sp, l), host)
    if score then return tonumber(score), l end
  end
  return nil, -1
end

-- put an unleased host with queued URLs back among the ready ones of its best level (never earlier than now);
-- only_if_absent: a host already waiting keeps its time (it may move to a better level)
-- a host whose fetch may have ended just now (its lease taken back, or completed without a release) waits its gap
-- from now: its last answer's ('d'), else the crawl's default
local function gap_from_now(hk, now, default_gap)
  local gap = tonumber(redis.call('HGET', hk, 'd') or default_gap)
  local up = now + gap
  if gap > 0 then up = now_ms_up() + gap end
  if tonumber(redis.call('HGET', hk, 'n') or 0) < up then redis.call('HSET', hk, 'n', up) end
end

local function make_ready(sp, host, hk, now, only_if_absent)
  local level = best_level(sp, host)
  if level < 0 then return nil end
  local score, at = ready_score(sp, host)
  local nxt = tonumber(redis.call('HGET', hk, 'n') or 0)
  if nxt < now then nxt = now end
  if score and only_if_absent then nxt = score end
  if at >= 0 and at ~= level then redis.call('ZREM', rkey(sp, at), host) end
  redis.call('ZADD', rkey(sp, level), nxt, host)
  return nxt
end


-- the queue key and entry of a URL of the recrawl set, from its rc value "<key>\n<depth>\n<origin>\n<rest>\n..."
-- (formats/recrawl.py; a routed URL's depth is followed by its route "^<n>:<route>", which then heads the entry's
-- rest as in keys.py); nil if it is not a full state (a sitemap hint "~<interval>"). The entry is at level 0
-- ("~0" after its depth): a page due for a recheck is leased before the links queued at any depth, so that what a
-- round's --max-pages leaves unfetched is new links, not the known pages monitoring is for; the level stays with
-- the entry when it goes back to its queue (robots.txt first, a retry, a reclaim).
local function recrawl_entry(sp, state)
  local key, depth, route, origin, rest = string.match(state, '^([^\n]*)\n(%d+)([^\n]*)\n([^\n]*)\n([^\n]*)')
  if not key then return nil end
  local entry = depth .. '~0' .. route
  if origin ~= redis.call('HGET', sp .. 'h:' .. key, 'o') then entry = entry .. origin end
  return key, entry .. rest
end

-- the URL of a queue entry of a host whose origin is host_origin: a rest that starts with a letter is a whole URL
-- (of another origin than the host's), else it follows the host's origin (keys.py decode_entry); the entry's
-- metadata and route go first
local function entry_url(entry, host_origin)
  local rest = string.gsub((string.gsub(entry, '^[%d.]*', '', 1)), '^~%d+', '', 1)
  local n, after = string.match(rest, '^%^(%d+):()')
  if n then rest = string.sub(rest, after + tonumber(n)) end
  if string.match(rest, '^%a') then return rest end
  return host_origin .. rest
end

-- the field of SP err that keeps the URL of this queue entry once its retries ran out (complete.lua)
local function failed_field(host, entry)
  local _, _, _, rest = split_entry(entry)
  return host .. '\n' .. rest
end

-- queue a URL of the recrawl set again (due.lua, hint.lua), by its recrawl_entry; false if it has none (a sitemap
-- hint)
local function requeue_recrawl(sp, now, key, entry)
  if not key then return false end
  requeue(sp, key, entry, false)
  local hk = sp .. 'h:' .. key
  if not redis.call('HGET', hk, 'l') then make_ready(sp, key, hk, now, true) end
  return true
end
