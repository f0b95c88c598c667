-- gate: one request at a time per server address, and the politeness gap between them (--politeness-key ip).
-- The host queues stay per host name (an address is known only once a fetcher resolved the name); the fetcher
-- takes the address's gate before each request and frees it after, so all names on one address share one gap,
-- on every node of the crawl. KEYS[1] = sp.."a:"..address (the address's own shard)
-- ARGV: op ('take' or 'free'), token (the lease), ms (take: how long the lock holds if its holder dies; free: the gap)
-- take returns 0 when the caller holds the address now, else the ms until it may be free (>= 1): the rest of the
-- gap, or while a request is in flight the address's last gap (g; 100 ms before the first): the request ends at
-- an unknown time, and the lock's lapse time (x, for a dead holder) would make every other name wait far too long.
-- free returns 0.
-- The key expires a minute after it last mattered, so addresses seen once leave nothing behind.
local key, op, token, ms = KEYS[1], ARGV[1], ARGV[2], tonumber(ARGV[3])
local now = now_ms()
local v = redis.call('HMGET', key, 'l', 'x', 'n', 'g')
if op == 'take' then
  local holder, held_until, nxt = v[1], tonumber(v[2] or 0), tonumber(v[3] or 0)
  if holder and holder ~= token and held_until > now then return math.max(1, math.min(held_until - now, tonumber(v[4] or 100))) end
  if nxt > now then return nxt - now end
  redis.call('HSET', key, 'l', token, 'x', now + ms)
  redis.call('PEXPIRE', key, ms + 60000)
  return 0
end
if v[1] == token then
  local nxt = now_ms_up() + ms
  redis.call('HSET', key, 'n', nxt, 'g', ms)
  redis.call('HDEL', key, 'l', 'x')
  redis.call('PEXPIRE', key, ms + 60000)
end
return 0
