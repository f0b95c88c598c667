-- lease: take up to n ready hosts of this shard, one URL each. KEYS[1] = sp.."ready"
-- ARGV: sp, shard, owner, n, lease_ttl_ms
-- returns {now, earliest remaining ready score or -1, {token, host, origin, entry, render flag} * got}
local sp, shard, owner = ARGV[1], ARGV[2], ARGV[3]
local n, ttl = tonumber(ARGV[4]), tonumber(ARGV[5])
local ready = sp .. 'ready'
local now = now_ms()
local out = {now, -1}
local got = 0
if n > 0 then
  for _, host in ipairs(redis.call('ZRANGEBYSCORE', ready, '-inf', now, 'LIMIT', 0, n)) do
    redis.call('ZREM', ready, host)
    local entry = redis.call('LPOP', sp .. 'q:' .. host)
    if entry then
      local hk = sp .. 'h:' .. host
      local token = owner .. '.' .. shard .. '-' .. redis.call('INCR', sp .. 'seq')
      redis.call('HSET', sp .. 'L', token, owner .. ' ' .. host .. ' ' .. entry)
      redis.call('ZADD', sp .. 'dl', now + ttl, token)
      redis.call('HSET', hk, 'l', token)
      out[#out + 1] = token
      out[#out + 1] = host
      out[#out + 1] = redis.call('HGET', hk, 'o') or ''
      out[#out + 1] = entry
      out[#out + 1] = redis.call('HGET', hk, 'js') or ''
      got = got + 1
    end
  end
end
if got > 0 then
  count(C_QUEUED, -got)
  count(C_INFLIGHT, got)
  flush_counts(sp .. 'c')
end
local first = redis.call('ZRANGE', ready, 0, 0, 'WITHSCORES')
if first[2] then out[2] = tonumber(first[2]) end
return out
