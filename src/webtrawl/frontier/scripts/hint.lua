-- hint: a sitemap's hints for URLs of one shard (--recrawl-after). KEYS[1] = sp.."rc"
-- ARGV: sp, {url, first interval ms (0: none), lastmod as ISO UTC like a record's fetch_time ('': none)} * N
-- returns how many URLs it queued again.
-- A URL without recrawl state gets the hint "~<interval>" (its first interval, read when its first fetch completes:
-- the only bytes hints cost, and only for sitemap URLs of a recrawl). A URL with a state whose lastmod is after the
-- last fetch that told us the page (the state's last field: a full fetch, or a 304 / same payload since, which
-- confirmed the copy we hold), and that waits in the due set (not queued or in flight), is queued again now,
-- unless its last fetch failed for good (kept in SP err: its retries used up): every read of the sitemap says the
-- same lastmod, and it waits for its round or trawl requeue instead of being fetched again at each one.
local sp = ARGV[1]
local rc, due = KEYS[1], sp .. 'due'
local now, queued = -1, 0
for i = 2, #ARGV, 3 do
  local url, interval, modified = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local state = redis.call('HGET', rc, url)
  if not state or string.sub(state, 1, 1) == '~' then
    if interval ~= '0' then redis.call('HSET', rc, url, '~' .. interval) end
  elseif modified ~= '' and modified > string.match(state, '([^\n]*)$') and redis.call('ZSCORE', due, url) then
    local key, entry = recrawl_entry(sp, state)
    if key and redis.call('HEXISTS', sp .. FAILED, failed_field(key, entry)) == 0 then
      if now < 0 then now = now_ms() end
      redis.call('ZREM', due, url)
      requeue_recrawl(sp, now, key, entry)
      queued = queued + 1
    end
  end
end
if queued > 0 then
  count(C_QUEUED, queued)
  count('recrawl-lastmod', queued)
  flush_counts(sp .. 'c')
end
return queued
