-- release: the fetch is over; set the host's next-allowed time and move the URL on. KEYS[1] = sp.."L"
-- ARGV: sp, backoff_base_ms, backoff_max_ms, park_after, process_ttl_ms, lease_ttl_ms,
--       {token, action, delay_ms, failed, retry_after_ms, jitter_permille, hold, ncounters, {name, n} * ncounters} * N
-- failed: '1' a failure (back-off), 'r' waiting for a robots.txt retry (delay_ms is that wait), '0' otherwise; the
-- hosts of the first two also go to the shard's W_BACKOFF / W_ROBOTS zset (next-allowed ms), read by stats.lua,
-- pruned by reclaim.lua
-- action: 0 KEEP (stays leased, same owner, until the parser completes it), 1 HEAD (back to the head), 2 RETRY (tail, retries + 1)
-- hold = 1 (a host session): if the host has more URLs, its next one is leased to the same owner at once, due at
-- the next-allowed time, and the host never goes back to the ready set, so the owner's open connection to it is
-- reused. The new lease's deadline counts from that time.
-- A failure that parks the host (park_after > 0 and its failures in a row reach it; or one more while it is parked)
-- ends its URL: a RETRY becomes a KEEP (its 'retries' counter is not counted), so the fetcher hands the page it got to
-- the parsers as a URL whose retries ran out; the reply names the release, and the fetcher gives up the host's queued
-- URLs with giveup.lua. Converting here, not in the fetcher, because only this script knows the failure count.
-- returns {stale, {index of the release (1-based), token, origin, entry, wait_ms} * held, {index} * stale,
--          {index, failures in a row} * parked}
local sp = ARGV[1]
local base, max, park_after, process_ttl = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local lease_ttl = tonumber(ARGV[6])
local leases, deadlines = sp .. 'L', sp .. 'dl'
local now = now_ms()
local now_up = now_ms_up()
local held = {}
local stale_at = {}
local parked = {}
local index = 0
local stale = 0
local i = 7
while i <= #ARGV do
  local token, action, delay = ARGV[i], tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
  local failed, retry_after, jitter = ARGV[i + 3] == '1', tonumber(ARGV[i + 4]), tonumber(ARGV[i + 5])
  local robots_wait = ARGV[i + 3] == 'r'
  local hold = ARGV[i + 6] == '1'
  local first_counter = i + 8
  i = first_counter + 2 * tonumber(ARGV[i + 7])
  index = index + 1
  local rec = redis.call('HGET', leases, token)
  local owner, host, entry
  if rec then owner, host, entry = split_lease(rec) end
  local hk = host and (sp .. 'h:' .. host)
  if not host then
    stale = stale + 1  -- reclaimed (expired, or its owner died): someone else owns this URL now
    stale_at[stale] = index
  elseif redis.call('HGET', hk, 'l') ~= token then
    -- released already (KEEP): the same release sent again after its reply was lost; it was done once
    count('repeated-release', 1)
  else
    local wait = delay
    local f = failed and redis.call('HINCRBY', hk, 'f', 1) or 0
    local parks = failed and park_after > 0 and f >= park_after
    if parks then
      parked[#parked + 1] = index
      parked[#parked + 1] = f
      if action == 2 then action = 0 end  -- its retries end here: kept for the parsers as a failed page
    end
    for j = first_counter, i - 1, 2 do
      if not (parks and ARGV[j] == 'retries') then count(ARGV[j], tonumber(ARGV[j + 1])) end
    end
    if failed then
      if retry_after > 0 then
        wait = retry_after
      else
        wait = math.min(base * 2 ^ (f - 1), max) * jitter / 1000
      end
      if parks then
        wait = max
        if f == park_after then count('hosts-parked', 1) end
      end
      if wait < delay then wait = delay end  -- a back-off never undercuts the politeness gap (or Crawl-delay)
    else
      redis.call('HDEL', hk, 'f')
    end
    local nxt = now
    if wait > 0 then nxt = now_up + math.ceil(wait) end
    redis.call('HSET', hk, 'n', nxt)
    if failed then
      redis.call('ZADD', sp .. W_BACKOFF, nxt, host)
    elseif robots_wait then
      redis.call('ZADD', sp .. W_ROBOTS, nxt, host)
    end
    if delay > 0 then redis.call('HSET', hk, 'd', delay) end  -- the host's gap, for reclaim after a crash
    redis.call('HDEL', hk, 'l')
    if action == 0 then
      -- The owner stays the fetcher: if it dies before its page reaches a parser, its restart takes the URL back
      -- at once instead of waiting for process_ttl.
      redis.call('ZADD', deadlines, now + process_ttl, token)
    else
      redis.call('HDEL', leases, token)
      redis.call('ZREM', deadlines, token)
      if action == 1 then
        requeue(sp, host, entry, true)
      else
        local d, h, r, rest = split_entry(entry)
        requeue(sp, host, join_meta(d, h, r + 1) .. rest, false)
      end
      count(C_INFLIGHT, -1)
      count(C_QUEUED, 1)
    end
    local next_entry = hold and not failed and pop_best(sp, host)
    if next_entry then
      local next_token = string.match(token, '^(.*%-)%d+$') .. next_seq(sp)
      redis.call('HSET', leases, next_token, owner .. ' ' .. host .. ' ' .. next_entry)
      redis.call('ZADD', deadlines, nxt + lease_ttl, next_token)
      redis.call('HSET', hk, 'l', next_token)
      count(C_QUEUED, -1)
      count(C_INFLIGHT, 1)
      count('session-leases', 1)
      local n = #held
      held[n + 1], held[n + 2], held[n + 3] = index, next_token, redis.call('HGET', hk, 'o') or ''
      held[n + 4], held[n + 5] = next_entry, nxt - now
    else
      local level = best_level(sp, host)
      if level >= 0 then redis.call('ZADD', rkey(sp, level), nxt, host) end
    end
  end
end
count('stale-release', stale)
flush_counts(sp .. 'c')
return {stale, held, stale_at, parked}
