-- due: start a recrawl round on one shard: URLs of the recrawl set whose time has come go back into their host's
-- queue (past the seen filter: they are in it already). KEYS[1] = sp.."due"
-- ARGV: sp, limit; returns {URLs queued, URLs left due (== limit: call again)}
local sp, limit = ARGV[1], tonumber(ARGV[2])
local now = now_ms()
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, limit)
local queued = 0
for _, url in ipairs(due) do
  redis.call('ZREM', KEYS[1], url)
  local state = redis.call('HGET', sp .. 'rc', url)
  if state and requeue_recrawl(sp, now, recrawl_entry(sp, state)) then queued = queued + 1 end
end
count(C_QUEUED, queued)
count('recrawl-queued', queued)
flush_counts(sp .. 'c')
return {queued, #due}
