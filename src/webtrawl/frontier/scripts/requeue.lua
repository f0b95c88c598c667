-- requeue: URLs whose retries ran out (kept by complete.lua in SP err) go back to the tail of their host's queue, past
-- the seen filter, with their retries reset (trawl requeue). KEYS[1] = sp..FAILED
-- ARGV: sp, cursor, count, reasons ("reason,reason,..."; '' all); one HSCAN step of the hash.
-- returns {next cursor ('0': done), URLs queued, {origin} of the URLs queued, each once, {reason, n, ...} of the URLs
-- not asked for} (trawl requeue has robots.txt asked again where it was given up, and says which reasons are kept:
-- node/requeue.py)
-- A URL of the recrawl set (its URL follows the entry) is also due again in a round: one waiting in the due set
-- leaves it (queued now, its completion sets its next due time), one a round queued already (in the set, not due:
-- queued or in flight) is left to that round, so it is never queued twice.
local sp, cursor, n, wanted = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local reasons = {}
for r in string.gmatch(wanted, '[^,]+') do reasons[r] = true end
local now = now_ms()
local step = redis.call('HSCAN', KEYS[1], cursor, 'COUNT', n)
local queued, left = 0, 0
local origins, seen, others = {}, {}, {}
local kv = step[2]
for j = 1, #kv, 2 do
  local field, value = kv[j], kv[j + 1]
  local reason, entry, url = string.match(value, '^([^\n]*)\n([^\n]*)\n?(.*)$')
  if reason and (wanted == '' or reasons[reason]) then
    local host = string.match(field, '^([^\n]*)\n')
    local hk = sp .. 'h:' .. host
    local state = url ~= '' and redis.call('HGET', sp .. 'rc', url)
    if not state or string.sub(state, 1, 1) == '~' or redis.call('ZREM', sp .. 'due', url) == 1 then
      requeue(sp, host, entry, false)
      if not redis.call('HGET', hk, 'l') then make_ready(sp, host, hk, now, true) end
      queued = queued + 1
      local origin = string.match(entry_url(entry, redis.call('HGET', hk, 'o') or ''), '^(%a[%w+.-]*://[^/?#]*)')
      if origin and not seen[origin] then
        seen[origin] = true
        origins[#origins + 1] = origin
      end
    else
      left = left + 1
    end
    redis.call('HDEL', KEYS[1], field)
  elseif reason then
    others[reason] = (others[reason] or 0) + 1
  end
end
local kept = {}
for reason, k in pairs(others) do
  kept[#kept + 1] = reason
  kept[#kept + 1] = k
end
count(C_QUEUED, queued)
count(C_FAILED_KEPT, -queued - left)
count('requeued', queued)
flush_counts(sp .. 'c')
return {step[1], queued, origins, kept}
