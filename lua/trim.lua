-- trim: delete DONE and FAILED tasks older than their retention, records included. Once trimmed,
-- an id is unknown again: enqueueing it again creates a new task.
--
-- KEYS[1] task hash   KEYS[2] done zset (finish ms)   KEYS[3] failed zset (finish ms)
-- ARGV[1] now                ms since epoch
-- ARGV[2] doneRetentionMs    0..31622400000 (366 days)
-- ARGV[3] failedRetentionMs  0..31622400000
-- ARGV[4] limit              1..10000 tasks per set per call
-- Returns: { doneTrimmed, failedTrimmed } (a count equal to `limit` means more may be left).
-- Errors: LEASEQ_BAD_ARGUMENT when any argument is malformed; nothing is written then.
return guard('trim', function()
  local now = int_arg('now', ARGV[1], 0, 2 ^ 52)
  local done_retention = int_arg('doneRetentionMs', ARGV[2], 0, 31622400000)
  local failed_retention = int_arg('failedRetentionMs', ARGV[3], 0, 31622400000)
  local limit = count_arg('limit', ARGV[4], 10000)
  return {
    trim_before(KEYS[1], KEYS[2], now - done_retention, limit),
    trim_before(KEYS[1], KEYS[3], now - failed_retention, limit),
  }
end)
