-- reclaim: leases past their deadline (mode "expired"), of one owner (mode "owner") or the ones named (mode
-- "tokens": the pages a dead parser held, ARGV[6..]; a completed one has no lease left) go back to the head of
-- their host's queue. KEYS[1] = sp.."dl"
-- Mode "expired" is also the shard's upkeep (the supervisors run it every few seconds): the back-off and robots.txt
-- zsets (release.lua adds to them) lose the hosts whose time has passed here, so stats.lua stays read-only.
-- ARGV: sp, mode, owner_prefix, limit, default_gap_ms; returns {leases looked at (== limit: call again), leases taken back}
local sp, mode, prefix, limit, default_gap = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5])
local leases, deadlines = sp .. 'L', sp .. 'dl'
local now = now_ms()
local tokens = {}
if mode == 'expired' then
  tokens = redis.call('ZRANGEBYSCORE', deadlines, '-inf', now, 'LIMIT', 0, limit)
  for _, kind in ipairs({W_BACKOFF, W_ROBOTS}) do redis.call('ZREMRANGEBYSCORE', sp .. kind, '-inf', now) end
elseif mode == 'tokens' then
  for i = 6, #ARGV do tokens[#tokens + 1] = ARGV[i] end
else
  local all = redis.call('HGETALL', leases)
  local sub = prefix .. '/'
  for j = 1, #all, 2 do
    local owner = split_lease(all[j + 1])
    if owner == prefix or string.sub(owner, 1, #sub) == sub then
      tokens[#tokens + 1] = all[j]
      if #tokens >= limit then break end
    end
  end
end
-- Newest lease first, so that LPUSH leaves several URLs of one host at the head in their original order.
local function seq(token) return tonumber(string.match(token, '(%d+)$')) or 0 end
table.sort(tokens, function(a, b) return seq(a) > seq(b) end)
local taken = 0
for _, token in ipairs(tokens) do
  local rec = redis.call('HGET', leases, token)
  redis.call('ZREM', deadlines, token)
  if rec then
    local _, host, entry = split_lease(rec)
    local hk = sp .. 'h:' .. host
    redis.call('HDEL', leases, token)
    requeue(sp, host, entry, true)
    local holder = redis.call('HGET', hk, 'l')
    if holder == token then
      -- The dead fetch may have had a request in flight until just now: the host waits its gap from now.
      redis.call('HDEL', hk, 'l')
      gap_from_now(hk, now, default_gap)
      make_ready(sp, host, hk, now, false)
    elseif not holder then
      make_ready(sp, host, hk, now, true)  -- idle host: ready again; a waiting one keeps its time
    end
    taken = taken + 1
  end
end
count('reclaimed', taken)
count(C_INFLIGHT, -taken)
count(C_QUEUED, taken)
flush_counts(sp .. 'c')
return {#tokens, taken}
