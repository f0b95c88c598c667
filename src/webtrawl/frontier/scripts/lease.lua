-- lease: take up to n ready hosts of this shard, one URL each, the hosts of the best priority level first (each
-- level's ready set in order of due time), each host's best URL. KEYS[1] = sp.."ready" (level 0; the others share
-- its slot)
-- ARGV: sp, shard, owner, n, lease_ttl_ms
-- returns {now, earliest remaining ready score or -1, {token, host, origin, entry, render flag} * got}
local sp, shard, owner = ARGV[1], ARGV[2], ARGV[3]
local n, ttl = tonumber(ARGV[4]), tonumber(ARGV[5])
local now = now_ms()
local out = {now, -1}
local got = 0
for level = 0, LEVELS - 1 do
  if got >= n then break end
  local ready = rkey(sp, level)
  for _, host in ipairs(redis.call('ZRANGEBYSCORE', ready, '-inf', now, 'LIMIT', 0, n - got)) do
    redis.call('ZREM', ready, host)
    -- a host waits in the ready set of its best level: its URL comes from that level's queue (the others only if
    -- that one is empty, which the scripts never leave so)
    local hk = sp .. 'h:' .. host
    local entry = redis.call('LPOP', qkey(sp, host, level))
    if entry then
      adjust_q(sp, host, -1)
    else
      entry = pop_best(sp, host)
    end
    if entry then
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
for level = 0, LEVELS - 1 do
  local first = redis.call('ZRANGE', rkey(sp, level), 0, 0, 'WITHSCORES')
  if first[2] and (out[2] < 0 or tonumber(first[2]) < out[2]) then out[2] = tonumber(first[2]) end
end
return out
