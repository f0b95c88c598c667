-- stats: counters of one shard and its ready hosts split at the shard's own clock. KEYS[1] = sp.."c"
-- ARGV: sp; returns {ready now, ready later, name, value, ...}
local sp = ARGV[1]
local now = now_ms()
local out = {0, 0}
for l = 0, LEVELS - 1 do
  out[1] = out[1] + redis.call('ZCOUNT', rkey(sp, l), '-inf', now)
  out[2] = out[2] + redis.call('ZCOUNT', rkey(sp, l), '(' .. now, '+inf')
end
for _, v in ipairs(redis.call('HGETALL', sp .. 'c')) do out[#out + 1] = v end
return out
