-- giveup: a host that is down gives up up to `limit` of its queued URLs, best level first: each is leased to the
-- fetcher that found it down, as release's KEEP leaves a fetched URL (owner the fetcher, deadline process_ttl from
-- now), so the fetcher hands a failed page for each to the parsers and complete.lua ends it like a URL whose
-- retries ran out (kept in SP err for trawl requeue). Nothing is requested for them. A kill of the fetcher before
-- its parsers have them leaves leases that reclaim.lua takes back (its restart's owner reclaim, or their deadline),
-- to the head of the queue: none is lost, none ends twice. KEYS[1] = sp.."L"
-- ARGV: sp, shard, owner, host, limit, process_ttl_ms, park_after, origin
-- Two kinds of down, told by origin:
-- '': the host is parked (release.lua), all its queue goes. Each call looks again whether it is still parked: a
--   fetcher that leased it once its wait was over (a tiny --backoff-max) and got an answer cleared its failures,
--   and a host leased now is being tried: its queue is left to that try.
-- 'scheme://host[:port]': that origin's robots.txt was given up (--robots-give-up, fetch/visit.py): only the
--   queued URLs of that origin go (a host's queue may hold others: http and https, other ports, and every host of
--   a registered domain with --politeness-key domain), whether or not the host is leased now (a URL of it in
--   flight meets the same robots.txt). The fetcher decides; the script cannot read robots.txt's state.
-- The fetcher calls again while `more` says URLs are left, so one call's work stays bounded whatever the host's queue
-- (up to host-queue-cap). Meanwhile the host is out of other fetchers' way as release left it: idle in the ready set
-- at its next-allowed time (parked: now + the longest back-off; keeping it leased instead would need a lease that
-- no URL backs), and out of the ready sets once nothing is queued, until a URL comes.
-- returns {more (1: call again), origin, failures in a row, {token, entry} * given up}
local sp, shard, owner, host = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local limit, process_ttl, park_after = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local origin = ARGV[8] or ''
local leases, hk = sp .. 'L', sp .. 'h:' .. host
local f = tonumber(redis.call('HGET', hk, 'f') or 0)
local host_origin = redis.call('HGET', hk, 'o') or ''
local out = {0, host_origin, f, {}}
local leased = redis.call('HGET', hk, 'l')
if origin == '' and (park_after <= 0 or f < park_after or leased) then return out end
local now = now_ms()
local got = out[4]
local take_seq, end_seq = token_seqs(sp)  -- as lease.lua's tokens

local function give(entry)
  local token = owner .. '.' .. shard .. '-' .. take_seq()
  redis.call('HSET', leases, token, owner .. ' ' .. host .. ' ' .. entry)
  redis.call('ZADD', sp .. 'dl', now + process_ttl, token)
  got[#got + 1] = token
  got[#got + 1] = entry
end

-- whether a queue entry's URL is of `origin` (not only starts with it: another port's would)
local function of_origin(entry)
  local url = entry_url(entry, host_origin)
  local next_char = string.sub(url, #origin + 1, #origin + 1)
  return string.sub(url, 1, #origin) == origin and (next_char == '' or string.find('/?#', next_char, 1, true) ~= nil)
end

-- the queued URLs of `origin`, best level first, each level read in pages from its head: the others read before the
-- limit was reached go back to its head in their order. Returns true if it stopped at the limit.
local PAGE = 500
local function take_origin()
  for l = 0, LEVELS - 1 do
    local key = qkey(sp, host, l)
    local kept, pos, taken, full = {}, 0, 0, false
    while not full do
      local batch = redis.call('LRANGE', key, pos, pos + PAGE - 1)
      for _, entry in ipairs(batch) do
        if #got >= 2 * limit then
          full = true
          break
        end
        pos = pos + 1
        if of_origin(entry) then
          give(entry)
          taken = taken + 1
        else
          kept[#kept + 1] = entry
        end
      end
      if #batch < PAGE then break end
    end
    if taken > 0 then
      redis.call('LTRIM', key, pos, -1)
      for i = #kept, 1, -1 do redis.call('LPUSH', key, kept[i]) end
      adjust_q(sp, host, -taken)
    end
    if full then return true end
  end
  return false
end

if origin == '' then
  while #got < 2 * limit do
    local entry = pop_best(sp, host)
    if not entry then break end
    give(entry)
  end
elseif take_origin() then
  out[1] = 1
end
end_seq()
local n = #got / 2
if n > 0 then
  count(C_QUEUED, -n)
  count(C_INFLIGHT, n)
  flush_counts(sp .. 'c')
end
local left = best_level(sp, host) >= 0
if origin == '' and left then out[1] = 1 end
if leased then return out end  -- its release puts it back among the ready ones
if not left then
  local _, at = ready_score(sp, host)  -- nothing left to lease: out of the ready sets, until a URL comes
  if at >= 0 then redis.call('ZREM', rkey(sp, at), host) end
elseif n > 0 then
  make_ready(sp, host, hk, now, true)  -- keeps its time; the level of what is left may be another
end
return out
