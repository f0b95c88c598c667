-- requeue: URLs whose retries ran out (kept by complete.lua in SP err) go back to the tail of their host's queue, past
-- the seen filter, with their retries reset (trawl requeue). KEYS[1] = sp..FAILED
-- ARGV: sp, cursor, count, reasons ("reason,reason,..."; '' all); one HSCAN step of the hash.
-- returns {next cursor ('0': done), URLs queued}
local sp, cursor, n, wanted = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local reasons = {}
for r in string.gmatch(wanted, '[^,]+') do reasons[r] = true end
local now = now_ms()
local step = redis.call('HSCAN', KEYS[1], cursor, 'COUNT', n)
local queued = 0
local kv = step[2]
for j = 1, #kv, 2 do
  local field, value = kv[j], kv[j + 1]
  local reason, entry = string.match(value, '^([^\n]*)\n(.*)$')
  if reason and (wanted == '' or reasons[reason]) then
    local host = string.match(field, '^([^\n]*)\n')
    local hk = sp .. 'h:' .. host
    requeue(sp, host, entry, false)
    if not redis.call('HGET', hk, 'l') then make_ready(sp, host, hk, now, true) end
    redis.call('HDEL', KEYS[1], field)
    queued = queued + 1
  end
end
count(C_QUEUED, queued)
count(C_FAILED_KEPT, -queued)
count('requeued', queued)
flush_counts(sp .. 'c')
return {step[1], queued}
