-- lease: take up to n ready hosts of this shard, one URL each, the hosts of the best priority level first (each
-- level's ready set in order of due time), each host's best URL. KEYS[1] = sp.."ready" (level 0; the others share
-- its slot)
-- ARGV: sp, shard, owner, n, lease_ttl_ms, request id, reply_ttl_ms
-- returns {now, earliest remaining ready score or -1, {token, host, origin, entry, render flag} * got}
-- A call that leased something keeps its leases under LEASE_REPLY..<request id> for reply_ttl_ms: the same call sent
-- again (its reply was lost with the connection) gets the same leases, those still held, instead of leasing more
-- and leaving the first ones to expire with their hosts blocked.
local sp, shard, owner = ARGV[1], ARGV[2], ARGV[3]
local n, ttl = tonumber(ARGV[4]), tonumber(ARGV[5])
local rid, reply_ttl = ARGV[6], tonumber(ARGV[7])
local now = now_ms()
local out = {now, -1}
local got = 0
local function give(token, host, origin, entry, js)
  out[#out + 1] = token
  out[#out + 1] = host
  out[#out + 1] = origin
  out[#out + 1] = entry
  out[#out + 1] = js
end
local saved = rid ~= '' and redis.call('GET', sp .. LEASE_REPLY .. rid)
if saved then
  local leases = sp .. 'L'
  local before = cmsgpack.unpack(saved)
  for i = 3, #before, 5 do
    if redis.call('HEXISTS', leases, before[i]) == 1 then give(unpack(before, i, i + 4)) end
  end
  count('lease-repeats', 1)
  flush_counts(sp .. 'c')
else
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
        give(token, host, redis.call('HGET', hk, 'o') or '', entry, redis.call('HGET', hk, 'js') or '')
        got = got + 1
      end
    end
  end
  if got > 0 then
    count(C_QUEUED, -got)
    count(C_INFLIGHT, got)
    flush_counts(sp .. 'c')
    if rid ~= '' and reply_ttl > 0 then
      redis.call('SET', sp .. LEASE_REPLY .. rid, cmsgpack.pack(out), 'PX', reply_ttl)
    end
  end
end
for level = 0, LEVELS - 1 do
  local first = redis.call('ZRANGE', rkey(sp, level), 0, 0, 'WITHSCORES')
  if first[2] and (out[2] < 0 or tonumber(first[2]) < out[2]) then out[2] = tonumber(first[2]) end
end
return out
