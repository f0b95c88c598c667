-- reclaim: leases past their deadline (mode "expired") or of one owner (mode "owner") go back to the head of
-- their host's queue. KEYS[1] = sp.."dl"
-- ARGV: sp, mode, owner_prefix, limit; returns {leases looked at (== limit: call again), leases taken back}
local sp, mode, prefix, limit = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local leases, deadlines = sp .. 'L', sp .. 'dl'
local now = now_ms()
local tokens = {}
if mode == 'expired' then
  tokens = redis.call('ZRANGEBYSCORE', deadlines, '-inf', now, 'LIMIT', 0, limit)
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
local taken = 0
for _, token in ipairs(tokens) do
  local rec = redis.call('HGET', leases, token)
  redis.call('ZREM', deadlines, token)
  if rec then
    local _, host, entry = split_lease(rec)
    local hk = sp .. 'h:' .. host
    redis.call('HDEL', leases, token)
    redis.call('LPUSH', sp .. 'q:' .. host, entry)
    local holder = redis.call('HGET', hk, 'l')
    if holder == token then
      redis.call('HDEL', hk, 'l')
      make_ready(sp, host, hk, now, false)
    elseif not holder then
      make_ready(sp, host, hk, now, true)  -- idle host: ready again; a waiting one keeps its time
    end
    taken = taken + 1
  end
end
count('reclaimed', taken)
count('inflight', -taken)
count('queued', taken)
flush_counts(sp .. 'c')
return {#tokens, taken}
