-- giveup: a parked host (release.lua) gives up up to `limit` of its queued URLs, best level first: each is leased to
-- the fetcher whose failure parked it, as release's KEEP leaves a fetched URL (owner the fetcher, deadline
-- process_ttl from now), so the fetcher hands a failed page for each to the parsers and complete.lua ends it like a
-- URL whose retries ran out (kept in SP err for trawl requeue). Nothing is requested for them. A kill of the fetcher
-- before its parsers have them leaves leases that reclaim.lua takes back (its restart's owner reclaim, or their
-- deadline), to the head of the queue: none is lost, none ends twice. KEYS[1] = sp.."L"
-- ARGV: sp, shard, owner, host, limit, process_ttl_ms, park_after
-- The fetcher calls again while `more` says URLs are left, so one call's work stays bounded whatever the host's queue
-- (up to host-queue-cap). Meanwhile the host is out of other fetchers' way as release left it: idle in the ready set
-- at its next-allowed time, now + the longest back-off (keeping it leased instead would need a lease that no
-- URL backs). Each call looks again whether it is still parked: a fetcher that leased it once its wait was over (a
-- tiny --backoff-max) and got an answer cleared its failures, and a host leased now is being tried: its queue is
-- left to that try.
-- returns {more (1: call again), origin, failures in a row, {token, entry} * given up}
local sp, shard, owner, host = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local limit, process_ttl, park_after = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local leases, hk = sp .. 'L', sp .. 'h:' .. host
local f = tonumber(redis.call('HGET', hk, 'f') or 0)
local out = {0, redis.call('HGET', hk, 'o') or '', f, {}}
if park_after <= 0 or f < park_after or redis.call('HGET', hk, 'l') then return out end
local now = now_ms()
local got = out[4]
local take_seq, end_seq = token_seqs(sp)  -- as lease.lua's tokens
while #got < 2 * limit do
  local entry = pop_best(sp, host)
  if not entry then break end
  local token = owner .. '.' .. shard .. '-' .. take_seq()
  redis.call('HSET', leases, token, owner .. ' ' .. host .. ' ' .. entry)
  redis.call('ZADD', sp .. 'dl', now + process_ttl, token)
  got[#got + 1] = token
  got[#got + 1] = entry
end
end_seq()
local n = #got / 2
if n > 0 then
  count(C_QUEUED, -n)
  count(C_INFLIGHT, n)
  count('given-up', n)
  flush_counts(sp .. 'c')
end
if best_level(sp, host) >= 0 then
  out[1] = 1
else
  local _, at = ready_score(sp, host)  -- nothing left to lease: out of the ready sets, until a URL comes
  if at >= 0 then redis.call('ZREM', rkey(sp, at), host) end
end
return out
