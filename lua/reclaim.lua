-- reclaim: return a bounded batch of expired leases. Safe when several run at once: each call is
-- atomic and only sees leases the others left, so each expired id moves exactly once.
--
-- KEYS the queue's keys (see lib/arguments.lua): task, config, ready, leased, failed, corrupt are used
-- ARGV[1] now     ms since epoch
-- ARGV[2] limit   1..10000 leases per call
-- Reads config: skewMs (a lease counts as expired only when deadline < now - skewMs; default 2000;
--   now bounded by the store's clock plus skewMs unless callerClock is 1: decision_time).
-- Returns: per reclaimed task, 2 each: id, state ("R" back to READY with its original rank, marked
--   to be claimed alone next time, or "F" FAILED with error "lease expired after attempt n of m"
--   when its attempts are used up). Fewer than `limit` tasks means no expired lease is left.
-- Errors: LEASEQ_BAD_ARGUMENT when any argument is malformed, LEASEQ_FORMAT when the queue is in
--   another storage format; nothing is written then (both are checked before the first write).
-- Uses: config_int, guard, lanes_flush, read_config_fields, reclaim_args, reclaim_expired

return guard('reclaim', function()
  local now, now_text, limit = reclaim_args()
  local config = read_config_fields({ 'skewMs', 'fair', 'callerClock' })
  local moved = reclaim_expired(config, now, now_text, config_int(config, 'skewMs', DEFAULT_SKEW_MS), limit)
  lanes_flush(now)
  return moved
end)
