-- stats: counters of one shard and its ready hosts split at the shard's own clock. KEYS[1] = sp.."c"
-- ARGV: sp; returns {ready now, ready later, name, value, ...}
local sp = ARGV[1]
local now = now_ms()
local out = {
  redis.call('ZCOUNT', sp .. 'ready', '-inf', now),
  redis.call('ZCOUNT', sp .. 'ready', '(' .. now, '+inf'),
}
for _, v in ipairs(redis.call('HGETALL', sp .. 'c')) do out[#out + 1] = v end
return out
