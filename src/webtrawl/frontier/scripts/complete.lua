-- complete: drop leases and apply their counters in one step. KEYS[1] = sp.."L" of the first segment
-- ARGV: default_gap_ms, watermark key ('' none), its field, the call's number, the number expected there ('' any:
--   resend.py), the number taken when a killed parser logged the batch this call redoes ('' none: parse/settle.py),
--   then one segment per shard (several only on a plain Redis: one call per parser batch instead
--   of one per shard; on a cluster a call holds the one shard of KEYS[1]'s slot): sp, N, {token, ncounters,
--   {name, n} * ncounters, url, recrawl state, due ms, failed} * N; returns the indexes (1-based, in call order) of the
--   completions discarded, after the watermark found ('' none). A negative N: the segment's completions are sent
--   again after an outage (a failover may have lost them with the master's last writes): one whose lease is gone
--   was done already (returned, not counted 'stale-complete'); one done now counts 'recompleted'.
-- A non-empty failed (a failure's reason, its retries used up) keeps the URL's entry in SP err for trawl requeue
-- (requeue.lua): its field the host and the URL's rest, its value the reason and the entry with no retries used,
-- and for a URL of the recrawl set its URL (requeue.lua then takes it out of its round's way, or leaves it to it).
-- Such a URL fetched again in a later round (or for a sitemap's lastmod) and completed without a failure leaves
-- SP err: its failure is over, and trawl requeue must not fetch it once more.
-- A non-empty state (--recrawl-after) puts the URL in the recrawl set (rc, due) in the same step. The counters of
-- all segments go to the first one's (every reader sums a counter over all shards).
-- Fencing: a completion whose lease is gone is discarded, its counters and state too. The lease was taken back (its
-- parser held the page past --process-ttl, or its fetcher died) and the URL is queued or fetched again: its new
-- lease completes it, and this one must not end another fetch's work. A lease past its deadline that no reclaim has
-- taken back yet is still ours: nobody else can have the URL.
-- A lease whose release never came (lost in a failover) still holds its host: the host is freed here, and as we
-- do not know when its fetch ended, it waits its gap from now, as a reclaim does.
local stale = {}
local now = -1
local recompleted, discarded = 0, 0
local index = 0
local default_gap = tonumber(ARGV[1])
local found = ''
if ARGV[2] ~= '' then  -- moved only from the number expected: what survived a failover is a chain of calls
  found = redis.call('HGET', ARGV[2], ARGV[3]) or ''
  if ARGV[5] == '' or found == ARGV[5] then redis.call('HSET', ARGV[2], ARGV[3], ARGV[4]) end
end
-- the watermark is this call's own number: the call ran already and its reply was lost (a timeout, a partition
-- that began just then); the leases it finds gone are its own doing, not stale
local repeated = ARGV[2] ~= '' and found == ARGV[4]
-- a redo of a batch a killed life of the parser had logged ready: that life's call for it ran when its watermark is
-- at or past the number taken then (its later calls only), and the leases gone are that call's doing, not stale
if ARGV[6] ~= '' and found ~= '' and tonumber(found) >= tonumber(ARGV[6]) then repeated = true end
local i = 7
while i <= #ARGV do
  local sp, n = ARGV[i], tonumber(ARGV[i + 1])
  local again = n < 0
  if again then n = -n end
  local leases, deadlines = sp .. 'L', sp .. 'dl'
  i = i + 2
  for _ = 1, n do
    local token = ARGV[i]
    local first_counter = i + 2
    local last = first_counter + 2 * tonumber(ARGV[i + 1])
    local url, state, due, failed = ARGV[last], ARGV[last + 1], ARGV[last + 2], ARGV[last + 3]
    i = last + 4
    index = index + 1
    local rec = redis.call('HGET', leases, token)
    if not rec then
      if not repeated then
        stale[#stale + 1] = index
        if not again then discarded = discarded + 1 end
      end
    else
      if again then recompleted = recompleted + 1 end
      redis.call('HDEL', leases, token)
      redis.call('ZREM', deadlines, token)
      count(C_INFLIGHT, -1)
      for j = first_counter, last - 1, 2 do count(ARGV[j], tonumber(ARGV[j + 1])) end
      if state ~= '' then
        redis.call('HSET', sp .. 'rc', url, state)
        redis.call('ZADD', sp .. 'due', due, url)
      end
      local _, host, entry = split_lease(rec)
      local hk = sp .. 'h:' .. host
      if failed ~= '' then
        local d, h, _, rest = split_entry(entry)
        local kept = failed .. '\n' .. join_meta(d, h, 0) .. rest
        if state ~= '' then kept = kept .. '\n' .. url end
        if redis.call('HSET', sp .. FAILED, failed_field(host, entry), kept) == 1 then
          count(C_FAILED_KEPT, 1)
        end
      elseif state ~= '' and redis.call('HDEL', sp .. FAILED, failed_field(host, entry)) == 1 then
        count(C_FAILED_KEPT, -1)  -- a URL of the recrawl set answered since its failure was kept: that is over
      end
      if redis.call('HGET', hk, 'l') == token then  -- completed without release: free the host too
        redis.call('HDEL', hk, 'l')
        if now < 0 then now = now_ms() end
        gap_from_now(hk, now, default_gap)
        make_ready(sp, host, hk, now, false)
      end
    end
  end
end
count('stale-complete', discarded)
if recompleted > 0 then count('recompleted', recompleted) end
flush_counts(ARGV[7] .. 'c')
return {found, stale}
