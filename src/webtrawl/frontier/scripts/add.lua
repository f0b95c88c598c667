-- add: dedup (Bloom), caps, enqueue. KEYS[1] = sp.."c"
-- ARGV: sp, m, k, host_queue_cap, host_budget, nextra, {name, n} * nextra, {host, origin, rest, meta} * N
-- returns {added, seen, dropped_cap, dropped_budget, earliest score of hosts made ready or -1, now or -1,
--          one letter per URL: a(dded) s(een) c(ap) b(udget)}
local sp = ARGV[1]
local m, k = tonumber(ARGV[2]), tonumber(ARGV[3])
local cap, budget = tonumber(ARGV[4]), tonumber(ARGV[5])
local i = 7
for _ = 1, tonumber(ARGV[6]) do
  count(ARGV[i], tonumber(ARGV[i + 1]))
  i = i + 2
end
local bloom = sp .. 'bloom'
local hosts = {}
local fate = {}
local added, seen, dcap, dbudget = 0, 0, 0, 0
-- one BITFIELD per URL: SET returns the old bits, so testing and marking the URL seen is a single command
local set = {}
for j = 1, k do
  set[4 * j - 3], set[4 * j - 2], set[4 * j] = 'SET', 'u1', 1
end
while i <= #ARGV do
  local host, origin, rest, meta = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  i = i + 4
  local st = hosts[host]
  if not st then
    local hk, qk = sp .. 'h:' .. host, sp .. 'q:' .. host
    local v = redis.call('HMGET', hk, 'o', 'a', 'l')
    local len = redis.call('LLEN', qk)
    st = {hk = hk, qk = qk, o = v[1], a0 = tonumber(v[2] or 0), leased = v[3], len0 = len, push = {}}
    st.a, st.len = st.a0, len
    hosts[host] = st
  end
  -- caps first: a refused URL is not marked seen, so it can get in once the host's queue has room again
  if budget > 0 and st.a >= budget then
    dbudget = dbudget + 1
    fate[#fate + 1] = 'b'
  elseif cap > 0 and st.len >= cap then
    dcap = dcap + 1
    fate[#fate + 1] = 'c'
  else
    local url = origin .. rest
    local sha = redis.sha1hex(url)
    local h1 = tonumber(string.sub(sha, 1, 8), 16)
    local h2 = tonumber(string.sub(sha, 9, 16), 16)
    if h2 == 0 then h2 = 1 end
    for j = 1, k do
      set[4 * j - 1] = (h1 + (j - 1) * h2) % m
    end
    local old = redis.call('BITFIELD', bloom, unpack(set))
    local new = false
    for j = 1, k do
      if old[j] == 0 then new = true; break end
    end
    if not new then
      seen = seen + 1
      fate[#fate + 1] = 's'
    else
      if not st.o then
        st.o = origin
        redis.call('HSET', st.hk, 'o', origin)
        count('hosts', 1)
      end
      local push = st.push
      if origin == st.o then
        push[#push + 1] = meta .. rest
      else
        push[#push + 1] = meta .. url
      end
      st.a, st.len = st.a + 1, st.len + 1
      added = added + 1
      fate[#fate + 1] = 'a'
    end
  end
end
local now, earliest = -1, -1
-- one RPUSH per host (in slices: unpack has a stack limit) instead of one per URL
for _, st in pairs(hosts) do
  local push = st.push
  for first = 1, #push, 1000 do
    redis.call('RPUSH', st.qk, unpack(push, first, math.min(first + 999, #push)))
  end
end
for host, st in pairs(hosts) do
  if st.a > st.a0 then redis.call('HINCRBY', st.hk, 'a', st.a - st.a0) end
  if st.len0 == 0 and st.len > 0 and not st.leased then
    if now < 0 then now = now_ms() end
    local score = make_ready(sp, host, st.hk, now, false)
    if earliest < 0 or score < earliest then earliest = score end
  end
end
count('added', added)
count('queued', added)
count('seen', seen)
count('drop:host-queue-cap', dcap)
count('drop:budget', dbudget)
flush_counts(sp .. 'c')
return {added, seen, dcap, dbudget, earliest, now, table.concat(fate)}
