-- tick: one reclaimer pass in one call: reclaim expired leases, promote due tasks, trim retention,
-- then read the stats. An idle queue costs 6 commands (this EVALSHA and 5 ZCARD).
--
-- KEYS[1] task hash   KEYS[2] ready   KEYS[3] scheduled   KEYS[4] leased   KEYS[5] done
-- KEYS[6] failed   KEYS[7] solo set (see reclaim)
-- ARGV[1] now                ms since epoch
-- ARGV[2] skewMs             0..3600000, as in reclaim
-- ARGV[3] limit              1..10000, the most tasks each step moves or deletes
-- ARGV[4] doneRetentionMs    0..31622400000
-- ARGV[5] failedRetentionMs  0..31622400000
-- Returns: { reclaimed, reclaimFailed, promoted, doneTrimmed, failedTrimmed, then the 8 values of
--   stats (ready, scheduled, leased, done, failed, oldestReadyAgeMs, mostOverdueLeaseMs,
--   dueScheduled) }
-- Errors: LEASEQ_BAD_ARGUMENT when any argument is malformed; nothing is written then.
return guard('tick', function()
  local now = int_arg('now', ARGV[1], 0, 2 ^ 52)
  local skew = int_arg('skewMs', ARGV[2], 0, 3600000)
  local limit = count_arg('limit', ARGV[3], 10000)
  local done_retention = int_arg('doneRetentionMs', ARGV[4], 0, 31622400000)
  local failed_retention = int_arg('failedRetentionMs', ARGV[5], 0, 31622400000)
  local keys = {
    task = KEYS[1], ready = KEYS[2], scheduled = KEYS[3], leased = KEYS[4], done = KEYS[5], failed = KEYS[6],
    solo = KEYS[7],
  }

  local counts = {}
  for _, name in ipairs({ 'leased', 'scheduled', 'done', 'failed' }) do
    counts[name] = redis.call('ZCARD', keys[name])
  end
  local reclaimed, reclaim_failed = 0, 0
  if counts.leased > 0 then
    local moved = reclaim_expired(keys, now, skew, limit)
    for i = 2, #moved, 2 do
      if moved[i] == 'R' then reclaimed = reclaimed + 1 else reclaim_failed = reclaim_failed + 1 end
    end
  end
  local promoted = counts.scheduled > 0 and promote_due(keys.task, keys.scheduled, keys.ready, now, limit) or 0
  local done_trimmed = counts.done > 0 and trim_before(keys.task, keys.done, now - done_retention, limit) or 0
  local failed_trimmed = (counts.failed + reclaim_failed) > 0
    and trim_before(keys.task, keys.failed, now - failed_retention, limit) or 0

  local result = { reclaimed, reclaim_failed, promoted, done_trimmed, failed_trimmed }
  local after = {
    scheduled = counts.scheduled - promoted,
    leased = counts.leased - reclaimed - reclaim_failed,
    done = counts.done - done_trimmed,
    failed = counts.failed + reclaim_failed - failed_trimmed,
  }
  for _, value in ipairs(queue_stats(keys, now, after)) do result[#result + 1] = value end
  return result
end)
