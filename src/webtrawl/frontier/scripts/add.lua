-- add: dedup (Bloom), caps, enqueue (each URL in its host's queue of the URL's priority level, see _common.lua).
-- KEYS[1] = sp.."c" of the first segment
-- ARGV: Bloom chain, hashing scheme, host_queue_cap, host_budget, ready channel ('' none), then one segment per shard
--   (several only on a plain Redis; on a cluster a call holds the one shard of KEYS[1]'s slot):
--   sp, nextra, {name, n} * nextra, nruns, run * nruns
--   a run is consecutive URLs of one host with the same origin and metadata, in the caller's order, in one
--   argument (each argument costs the client, the protocol and the ARGV table): "host\norigin\nmeta\n" and a line
--   per URL: 20 bytes (SHA-1(url): the Bloom hashes, see bloom.py) and its rest (the URL without its origin), lines
--   joined by "\n"; or, for text with a newline of its own (never a
--   canonical URL), 5 arguments: '' host origin meta rest (the script hashes the URL itself)
-- A call that made hosts ready publishes "SP\nms\n..." (each such segment's prefix and how long until its earliest
--   one is due) on the ready channel: fetchers that found nothing to lease hear of new work at once (keys.py).
-- returns a flat array (each nested one costs Redis a reply buffer): {now or -1, added, seen, dropped_cap,
--   dropped_budget, nready, {segment, earliest score of the hosts it made ready} * nready,
--   {index, letter} of each refused URL: c(ap) b(udget); segments and URLs are counted in call order from 1}
-- Redis converts every Lua number argument with printf("%.17g"): the Bloom offsets go as string.format('%d')
-- strings and the bit value as the string '1', which halves the cost of the BITFIELD.
-- The seen filter is a chain of bitmaps per shard (bloom.py): ARGV[1] = "m,k,capacity;..." of each, ARGV[2] 'e'
-- for blocked filters (new crawls: a URL's hashes all in one 512-bit block, read with one GETRANGE and written with one
-- SETRANGE), 'e' for enhanced double hashing over the whole bitmap (bloom.py), 'd' for the plain one of older crawls. A shard's newest filter and the URLs it holds are in its hash SP bn (f, n; absent: the first, empty);
-- a URL set in any filter is seen, a new one goes to the newest, which is followed by the next one when full.
local chain, enhanced, blocked = {}, ARGV[2] == 'e', ARGV[2] == 'b'
for fm, fk, fc in string.gmatch(ARGV[1], '(%d+),(%d+),(%d+)') do
  chain[#chain + 1] = {tonumber(fm), tonumber(fk), tonumber(fc)}
end
local nfilters = #chain
local cap, budget = tonumber(ARGV[3]), tonumber(ARGV[4])
local nargs = #ARGV
local fmt, find, sub, sha1hex, call = string.format, string.find, string.sub, redis.sha1hex, redis.call
local bunpack = struct.unpack
local sbyte, schar = string.byte, string.char
local function filter_key(sp, f)
  if f == 0 then return sp .. 'bloom' end
  return sp .. 'bloom' .. f
end
-- the BITFIELD SET operations of one URL (offsets filled in per URL), for the most hashes of any filter (not for
-- blocked filters)
local set = {}
for j = 1, blocked and 0 or chain[nfilters][2] do
  set[4 * j - 3], set[4 * j - 2], set[4 * j - 1], set[4 * j] = 'SET', 'u1', 0, '1'
end
-- a blocked filter: the URL's block of a filter, read with one GETRANGE into a table of its 64 bytes (zeros past the
-- end of a bitmap still growing); whether the URL's k bits in it (bloom.block_positions, from the 16-bit words f1..f8
-- of the digest) were all set; and the bytes with them set, for one SETRANGE of the whole block at off if it is added.
-- Test and set in one pass (a new URL needs every bit computed anyway), and the block's offset formatted once.
-- Plain arithmetic, no bit library: each C call costs more than a few Lua operators
local W = {128, 64, 32, 16, 8, 4, 2, 1}
local W2 = {256, 128, 64, 32, 16, 8, 4, 2} -- W + W
local words = {}
local function block_test_set(key, fm, fk, h1)
  local first = (h1 % (fm / 512)) * 64
  local off = fmt('%d', first)
  local blk = call('GETRANGE', key, off, fmt('%d', first + 63))
  local bytes, has, n = {sbyte(blk, 1, 64)}, true, #blk
  if n < 64 then
    for j = n + 1, 64 do bytes[j] = 0 end
  end
  for j = 1, fk < 8 and fk or 8 do
    local p = words[j] % 512
    local r = p % 8
    local b = (p - r) / 8 + 1
    local v, w = bytes[b], W[r + 1]
    if v % W2[r + 1] < w then bytes[b], has = v + w, false end
  end
  for j = 9, fk do
    local u = words[j - 7 > 8 and j - 15 or j - 7] -- f_(j-7), wrapping after f8
    local p = (words[j - 8] + 2 * ((u - u % 512) / 512) + 1) % 512
    local r = p % 8
    local b = (p - r) / 8 + 1
    local v, w = bytes[b], W[r + 1]
    if v % W2[r + 1] < w then bytes[b], has = v + w, false end
  end
  return has, bytes, off
end
-- whether an older filter (full: never written again) has the URL: block_test_set's bits read from the block's
-- string, up to the first one not set (a new URL is tested against every older filter, and usually fails at once)
local function block_has(key, fm, fk, h1)
  local first = (h1 % (fm / 512)) * 64
  local blk = call('GETRANGE', key, fmt('%d', first), fmt('%d', first + 63))
  for j = 1, fk do
    local p
    if j <= 8 then
      p = words[j] % 512
    else
      local u = words[j - 7 > 8 and j - 15 or j - 7]
      p = (words[j - 8] + 2 * ((u - u % 512) / 512) + 1) % 512
    end
    local r = p % 8
    local v = sbyte(blk, (p - r) / 8 + 1) -- nil past the end of a bitmap that never grew that far: not set
    if not v or v % W2[r + 1] < W[r + 1] then return false end
  end
  return true
end
-- write back the bytes of block_test_set (a bitmap still growing grows to the block's end, within its size)
local function block_write(key, bytes, off)
  call('SETRANGE', key, off, schar(unpack(bytes, 1, 64)))
end
-- a host's state, read once per call: its origin, admitted URLs (budget), lease, next-allowed time and queued URLs
local function load_host(sp, host)
  local hk = sp .. 'h:' .. host
  local v = call('HMGET', hk, 'o', 'a', 'l', 'n', 'q')
  -- q: the host's queued URLs over all levels (the cap counts them all); a host of a crawl from before that
  -- count has its queues counted once
  local len = tonumber(v[5] or -1)
  if len < 0 then
    len = 0
    if v[1] then
      for l = 0, LEVELS - 1 do len = len + call('LLEN', qkey(sp, host, l)) end
    end
  end
  local a = tonumber(v[2] or 0)
  return {
    hk = hk, o = v[1], oset = false, a0 = a, a = a, leased = v[3], n = v[4], len0 = len, len = len,
    best = LEVELS, push = {}, np = {},
  }
end
local now = -1
local added, seen, dcap, dbudget, nready = 0, 0, 0, 0, 0
local ready_at, refused, newhosts = {}, {}, 0
-- the counters of all segments go to KEYS[1]: every reader sums a counter over all shards, and one HINCRBY per
-- counter and call costs less than one per counter and shard
local counts = {}
local nrefused, idx, segment = 0, 0, 0
local channel = ARGV[5]
local published = {}
local i = 6
while i <= nargs do
  segment = segment + 1
  local sp = ARGV[i]
  local newest, filled = 0, 0
  if nfilters > 1 then
    local st = call('HMGET', sp .. 'bn', 'f', 'n')
    newest, filled = tonumber(st[1] or 0), tonumber(st[2] or 0)
  end
  local newest0, filled0 = newest, filled
  local bloom, m, k, room = filter_key(sp, newest), chain[newest + 1][1], chain[newest + 1][2], chain[newest + 1][3]
  local nextra = tonumber(ARGV[i + 1])
  i = i + 2
  for _ = 1, nextra do
    counts[ARGV[i]] = (counts[ARGV[i]] or 0) + tonumber(ARGV[i + 1])
    i = i + 2
  end
  local nruns = tonumber(ARGV[i])
  i = i + 1
  local hosts, order = {}, {}
  local earliest = -1
  for _ = 1, nruns do
    local run, host, origin, meta = ARGV[i], nil, nil, nil
    local pos, stop
    if run == '' then
      host, origin, meta, run = ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4]
      i = i + 5
    else
      i = i + 1
      local a = find(run, '\n', 1, true)
      local b = find(run, '\n', a + 1, true)
      stop = find(run, '\n', b + 1, true)
      host, origin, meta = sub(run, 1, a - 1), sub(run, a + 1, b - 1), sub(run, b + 1, stop - 1)
    end
    -- the host's state and queue are read for its first new URL only: a run of seen URLs costs no HMGET
    local st, push, level = hosts[host], nil, 0
    repeat
      local rest, h1, h2 = nil, nil, nil
      if stop then
        pos = stop + 1
        if blocked then
          h1, words[1], words[2], words[3], words[4], words[5], words[6], words[7], words[8] =
            bunpack('>I4HHHHHHHH', run, pos)
        else
          h1, h2 = bunpack('>I4I4', run, pos)
        end
        stop = find(run, '\n', pos + 20, true) -- the rest (the URL's text after its origin) is cut if it is added
      else
        rest = run
        local sha = sha1hex(origin .. rest)
        h1, h2 = tonumber(sub(sha, 1, 8), 16), tonumber(sub(sha, 9, 16), 16)
        for j = 1, 8 do words[j] = tonumber(sub(sha, 5 + 4 * j, 8 + 4 * j), 16) end
      end
      idx = idx + 1
      -- the seen filter first: a URL already admitted is "seen" whatever its host's budget and queue are now
      -- (checking the caps first counted every rediscovered link of a full host as a drop); a seen URL writes nothing
      local new, zero = false, 0
      local bytes, off
      if blocked then
        local has
        has, bytes, off = block_test_set(bloom, m, k, h1)
        new = not has
        -- not in the newest filter: a URL all of whose bits one older filter has was seen before it started
        local older = newest - 1
        while new and older >= 0 do
          if block_has(filter_key(sp, older), chain[older + 1][1], chain[older + 1][2], h1) then new = false end
          older = older - 1
        end
      else
        -- GETBIT until the first zero bit (a read costs little and is not written to the AOF)
        if not h2 or h2 == 0 then h2 = 1 end
        local x, y = h1 % m, h2 % m -- enhanced double hashing: x is the next offset, x += y, y += b + 1 (mod m)
        for b = 0, k - 1 do
          local o
          if enhanced then
            o = fmt('%d', x)
            x, y = (x + y) % m, (y + b + 1) % m
          else
            o = fmt('%d', (h1 + b * h2) % m)
          end
          if new then
            set[4 * (b - zero) + 3] = o
          elseif call('GETBIT', bloom, o) == 0 then
            new, zero = true, b
            set[3] = o
          end
        end
        local older = newest - 1
        while new and older >= 0 do
          local okey, om, ok_k = filter_key(sp, older), chain[older + 1][1], chain[older + 1][2]
          local all = true
          local ox, oy = h1 % om, h2 % om -- (only chains have older filters: enhanced double hashing)
          for b = 0, ok_k - 1 do
            if call('GETBIT', okey, fmt('%d', ox)) == 0 then
              all = false
              break
            end
            ox, oy = (ox + oy) % om, (oy + b + 1) % om
          end
          if all then new = false end
          older = older - 1
        end
      end
      if new and not push then
        if not st then
          st = load_host(sp, host)
          hosts[host] = st
          order[#order + 1] = host
        end
        level = level_of(meta)
        push = st.push[level]
        if not push then
          push = {}
          st.push[level], st.np[level] = push, 0
        end
      end
      if not new then
        seen = seen + 1
      -- then the caps: a refused URL is not marked seen, so it can get in once the host's queue has room again
      elseif budget > 0 and st.a >= budget then
        dbudget = dbudget + 1
        refused[nrefused + 1], refused[nrefused + 2] = idx, 'b'
        nrefused = nrefused + 2
      elseif cap > 0 and st.len >= cap then
        dcap = dcap + 1
        refused[nrefused + 1], refused[nrefused + 2] = idx, 'c'
        nrefused = nrefused + 2
      else
        if blocked then
          block_write(bloom, bytes, off)
        else
          -- one BITFIELD sets the bits from the first zero one on
          call('BITFIELD', bloom, unpack(set, 1, 4 * (k - zero)))
        end
        filled = filled + 1
        if room > 0 and filled >= room and newest + 1 < nfilters then
          -- the newest filter is full: the next one, allocated at its exact size (grown bit by bit, Redis would
          -- allocate up to twice its length)
          newest, filled = newest + 1, 0
          bloom, m, k, room = filter_key(sp, newest), chain[newest + 1][1], chain[newest + 1][2], chain[newest + 1][3]
          call('SETRANGE', bloom, fmt('%d', m / 8 - 1), '\0')
        end
        if not st.o then
          st.o, st.oset = origin, true
          newhosts = newhosts + 1
        end
        local np = st.np[level] + 1
        st.np[level] = np
        if level < st.best then st.best = level end
        rest = rest or sub(run, pos + 20, (stop or 0) - 1)
        if origin == st.o then
          push[np] = meta .. rest
        else
          push[np] = meta .. origin .. rest
        end
        st.a, st.len = st.a + 1, st.len + 1
        added = added + 1
      end
    until not stop
  end
  for _, host in ipairs(order) do
    local st = hosts[host]
    -- one RPUSH per host and level (in slices: unpack has a stack limit) instead of one per URL
    for level, push in pairs(st.push) do
      local qk, np = qkey(sp, host, level), st.np[level]
      for first = 1, np, 1000 do
        call('RPUSH', qk, unpack(push, first, math.min(first + 999, np)))
      end
    end
    if st.len > st.len0 then
      if st.oset then
        call('HSET', st.hk, 'o', st.o, 'a', fmt('%d', st.a), 'q', fmt('%d', st.len))
      else
        call('HSET', st.hk, 'a', fmt('%d', st.a), 'q', fmt('%d', st.len))
      end
      if not st.leased then
        if st.len0 == 0 then
          if now < 0 then now = now_ms() end
          -- put the host among the ready ones of its best level, never earlier than now
          local nxt = tonumber(st.n or 0)
          if nxt < now then nxt = now end
          call('ZADD', rkey(sp, st.best), nxt, host)
          if earliest < 0 or nxt < earliest then earliest = nxt end
        else
          -- it waits in the ready set of its best level: a better URL than any it had moves it up, keeping its time
          for l = st.best + 1, LEVELS - 1 do
            local score = call('ZSCORE', rkey(sp, l), host)
            if score then
              call('ZREM', rkey(sp, l), host)
              call('ZADD', rkey(sp, st.best), score, host)
              break
            end
          end
        end
      end
    end
  end
  if nfilters > 1 and (newest ~= newest0 or filled ~= filled0) then
    call('HSET', sp .. 'bn', 'f', fmt('%d', newest), 'n', fmt('%d', filled))
  end
  if earliest >= 0 then
    ready_at[2 * nready + 1], ready_at[2 * nready + 2] = segment, earliest
    nready = nready + 1
    published[#published + 1] = sp .. '\n' .. fmt('%d', earliest - now)
  end
end
counts['added'] = (counts['added'] or 0) + added
counts[C_QUEUED] = (counts[C_QUEUED] or 0) + added
counts['seen'] = (counts['seen'] or 0) + seen
counts['hosts'] = (counts['hosts'] or 0) + newhosts
counts[DROP .. R_HOST_QUEUE_CAP] = (counts[DROP .. R_HOST_QUEUE_CAP] or 0) + dcap
counts[DROP .. R_BUDGET] = (counts[DROP .. R_BUDGET] or 0) + dbudget
for name, c in pairs(counts) do
  if c ~= 0 then call('HINCRBY', KEYS[1], name, fmt('%d', c)) end
end
-- pcall: a user whose ACL grants no channels (Redis 7's default for new users) still adds; its fetchers poll
if channel ~= '' and nready > 0 then redis.pcall('PUBLISH', channel, table.concat(published, '\n')) end
local reply = {now, added, seen, dcap, dbudget, nready}
for j = 1, 2 * nready do reply[6 + j] = ready_at[j] end
local base = 6 + 2 * nready
for j = 1, nrefused do reply[base + j] = refused[j] end
return reply
