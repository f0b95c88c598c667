-- init: create the crawl's meta once; an existing crawl keeps its own (shards and Bloom size are immutable).
-- KEYS[1] = meta key; ARGV: name, value, ...; returns {1 if created now else 0, name, value, ...}
local created = 0
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('HSET', KEYS[1], 'created', redis.call('TIME')[1], unpack(ARGV))
  created = 1
end
local out = {created}
for _, v in ipairs(redis.call('HGETALL', KEYS[1])) do out[#out + 1] = v end
return out
