-- promote: move due SCHEDULED tasks to READY with the rank they were given at enqueue.
--
-- KEYS[1] task hash   KEYS[2] scheduled zset (due ms)   KEYS[3] ready zset (rank)
-- ARGV[1] now    ms since epoch
-- ARGV[2] limit  1..10000 tasks per call
-- Returns: the number of tasks promoted (fewer than `limit` means none due is left).
-- Errors: LEASEQ_BAD_ARGUMENT when any argument is malformed.
return guard('promote', function()
  local now = int_arg('now', ARGV[1], 0, 2 ^ 52)
  local limit = count_arg('limit', ARGV[2], 10000)
  return promote_due(KEYS[1], KEYS[2], KEYS[3], now, limit)
end)
