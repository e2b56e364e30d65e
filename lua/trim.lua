-- trim: delete DONE and FAILED tasks older than their retention, records included. Once trimmed,
-- an id is unknown again: enqueueing it again creates a new task.
--
-- KEYS the queue's keys (see lib/arguments.lua): task, config, done, failed (and for a FAILED task its
--   ordered group waited behind, groups and groupwait) are used
-- ARGV[1] now                ms since epoch
-- ARGV[2] limit              1..10000 tasks per set per call
-- ARGV[3] doneRetentionMs    -1 (the queue's config: doneRetentionMs, default 24 h) or 0..31622400000
-- ARGV[4] failedRetentionMs  -1 (config failedRetentionMs, default 7 days) or 0..31622400000
-- Returns: { doneTrimmed, failedTrimmed } (a count equal to `limit` means more may be left).
-- Errors: LEASEQ_BAD_ARGUMENT when any argument is malformed; nothing is written then.
-- Uses: K, config_int, decision_time, guard, lanes_flush, read_config_fields, trim_args, trim_before

return guard('trim', function()
  local now, _, limit, done_given, failed_given = trim_args()
  local config = read_config_fields({ 'doneRetentionMs', 'failedRetentionMs', 'skewMs', 'callerClock' })
  local done_retention = done_given >= 0 and done_given or config_int(config, 'doneRetentionMs', DEFAULT_DONE_RETENTION_MS)
  local failed_retention = failed_given >= 0 and failed_given
    or config_int(config, 'failedRetentionMs', DEFAULT_FAILED_RETENTION_MS)
  -- Retention runs on the store's clock, bounded (decision_time): a fast caller trims nothing early.
  local decided = decision_time(config, now)
  local result = {
    trim_before(K.done, decided - done_retention, limit, config),
    trim_before(K.failed, decided - failed_retention, limit, config),
  }
  lanes_flush(now)
  return result
end)
