-- stats: counters of shards and their ready hosts split at the server's clock. KEYS[1] = sp.."c" of the first
-- ARGV: sp of each shard (several only on a plain Redis: one call per trawl status / supervisor tick instead of one
--   per shard); returns per shard {ready now, ready later, in back-off, ms to the next back-off's end, waiting for
--   robots.txt, ms to the next robots.txt retry, ms to the next waiting host's turn (-1: none), the newest Bloom
--   filter of the shard's chain and the URLs it holds (add.lua), name, value, ...}
-- Read-only (it runs on a replica too): the back-off and robots.txt zsets still hold hosts whose time has passed
-- until reclaim.lua prunes them, so only the hosts still waiting are counted.
local now = now_ms()
local function earliest(key)
  local first = redis.call('ZRANGEBYSCORE', key, '(' .. now, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
  if first[2] then return tonumber(first[2]) - now end
  return -1
end
local function sooner(a, b)
  if a < 0 or (b >= 0 and b < a) then return b end
  return a
end
local function shard_stats(sp)
  local out = {0, 0, 0, -1, 0, -1, -1}
  for l = 0, LEVELS - 1 do
    out[1] = out[1] + redis.call('ZCOUNT', rkey(sp, l), '-inf', now)
    out[2] = out[2] + redis.call('ZCOUNT', rkey(sp, l), '(' .. now, '+inf')
    out[7] = sooner(out[7], earliest(rkey(sp, l)))
  end
  for j, kind in ipairs({W_BACKOFF, W_ROBOTS}) do
    local key = sp .. kind
    out[1 + 2 * j] = redis.call('ZCOUNT', key, '(' .. now, '+inf')
    out[2 + 2 * j] = earliest(key)
  end
  local bloom = redis.call('HMGET', sp .. 'bn', 'f', 'n')
  out[8], out[9] = tonumber(bloom[1] or 0), tonumber(bloom[2] or 0)
  for _, v in ipairs(redis.call('HGETALL', sp .. 'c')) do out[#out + 1] = v end
  return out
end
local all = {}
for s = 1, #ARGV do all[s] = shard_stats(ARGV[s]) end
return all
