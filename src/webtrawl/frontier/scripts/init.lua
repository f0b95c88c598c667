-- init: create the crawl's meta once; an existing crawl keeps its own (shards and Bloom size are immutable).
-- KEYS[1] = meta key; ARGV: name, value, ...; returns the stored meta as name, value, ...
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('HSET', KEYS[1], 'created', redis.call('TIME')[1], unpack(ARGV))
end
return redis.call('HGETALL', KEYS[1])
