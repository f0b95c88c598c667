-- lease: take up to n ready hosts of this shard, one URL each, the hosts of the best priority level first (each
-- level's ready set in order of due time), each host's best URL. KEYS[1] = sp.."ready" (level 0; the others share
-- its slot)
-- ARGV: sp, shard, owner, n, lease_ttl_ms, request id ('': none)
-- returns {now, earliest remaining ready score or -1, {token, host, origin, entry, render flag} * got}
-- The owner's last call that leased something is remembered in the shard's LEASE_REPLY hash (owner -> "<request
-- id> <token>..."): the same call sent again (its reply was lost with the connection) gets the same leases, those
-- still held, instead of leasing more and leaving the first ones to expire with their hosts blocked. A fetcher's
-- lease calls follow one another, so its last call is the only one that can come again.
local sp, shard, owner = ARGV[1], ARGV[2], ARGV[3]
local n, ttl, rid = tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6]
local leases, memo = sp .. 'L', sp .. LEASE_REPLY
local now = now_ms()
local out = {now, -1}
local function give(token, host, entry)
  local v = redis.call('HMGET', sp .. 'h:' .. host, 'o', 'js')
  local n = #out
  out[n + 1], out[n + 2], out[n + 3], out[n + 4], out[n + 5] = token, host, v[1] or '', entry, v[2] or ''
end
local take_seq, end_seq = token_seqs(sp)
local last = rid ~= '' and redis.call('HGET', memo, owner)
if last and string.sub(last, 1, #rid + 1) == rid .. ' ' then
  for token in string.gmatch(string.sub(last, #rid + 2), '%S+') do
    local rec = redis.call('HGET', leases, token)
    if rec then
      local _, host, entry = split_lease(rec)
      give(token, host, entry)
    end
  end
  count('lease-repeats', 1)
  flush_counts(sp .. 'c')
else
  local tokens = {}
  for level = 0, LEVELS - 1 do
    if #tokens >= n then break end
    local ready = rkey(sp, level)
    for _, host in ipairs(redis.call('ZRANGEBYSCORE', ready, '-inf', now, 'LIMIT', 0, n - #tokens)) do
      redis.call('ZREM', ready, host)
      -- a host waits in the ready set of its best level: its URL comes from that level's queue (the others only if
      -- that one is empty, which the scripts never leave so)
      local entry = redis.call('LPOP', qkey(sp, host, level))
      if entry then
        adjust_q(sp, host, -1)
      else
        entry = pop_best(sp, host)
      end
      if entry then
        local token = owner .. '.' .. shard .. '-' .. take_seq()
        redis.call('HSET', leases, token, owner .. ' ' .. host .. ' ' .. entry)
        redis.call('ZADD', sp .. 'dl', now + ttl, token)
        redis.call('HSET', sp .. 'h:' .. host, 'l', token)
        give(token, host, entry)
        tokens[#tokens + 1] = token
      end
    end
  end
  end_seq()
  if #tokens > 0 then
    count(C_QUEUED, -#tokens)
    count(C_INFLIGHT, #tokens)
    flush_counts(sp .. 'c')
    if rid ~= '' then redis.call('HSET', memo, owner, rid .. ' ' .. table.concat(tokens, ' ')) end
  end
end
for level = 0, LEVELS - 1 do
  local first = redis.call('ZRANGE', rkey(sp, level), 0, 0, 'WITHSCORES')
  if first[2] and (out[2] < 0 or tonumber(first[2]) < out[2]) then out[2] = tonumber(first[2]) end
end
return out
