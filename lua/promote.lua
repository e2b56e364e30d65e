-- promote: move due SCHEDULED tasks to READY with the rank they were given at enqueue.
--
-- KEYS the queue's keys (see lib/arguments.lua): task, config, ready, scheduled, corrupt are used
-- ARGV[1] now    ms since epoch
-- ARGV[2] limit  1..10000 tasks per call
-- Reads and keeps exact config nextDue (the earliest due time; claims skip the set until then); opens
--   up to `limit` groups and types whose time came (docs/groups.md).
-- Returns: the number of tasks promoted (fewer than `limit` means none due is left).
-- Errors: LEASEQ_BAD_ARGUMENT when any argument is malformed, LEASEQ_FORMAT when the queue is in
--   another storage format; nothing is written then (both are checked before the first write).
-- Uses: guard, lanes_flush, promote_args, promote_due, read_config_fields

return guard('promote', function()
  local now, now_text, limit = promote_args()
  local promoted = promote_due(read_config_fields({ 'nextDue', 'fair', 'pauses' }), now, now_text, limit, limit)
  lanes_flush(now)
  return promoted
end)
