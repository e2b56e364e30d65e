-- stats: counts per state and the two ages an operator alarms on. Read-only.
--
-- KEYS the queue's keys (see lib/arguments.lua): task, config, ready, scheduled, leased, done, failed, corrupt are
--   used
-- ARGV[1] now  ms since epoch
-- Returns: { ready, scheduled, leased, done, failed, oldestReadyAgeMs, mostOverdueLeaseMs,
--   dueScheduled, corrupt, paused, pauses }
--   oldestReadyAgeMs    how long the task at the head of the ready queue has waited (0 if none)
--   mostOverdueLeaseMs  now - the earliest lease deadline, when that is in the past (else 0)
--   dueScheduled        scheduled tasks whose due time has passed (waiting for promotion)
--   corrupt             ids quarantined because their record could not be read
--   paused              1 when the queue is paused, else 0
--   pauses              the paused task types, comma-separated ("" when none)
-- Errors: LEASEQ_BAD_ARGUMENT when `now` is malformed, LEASEQ_FORMAT when the queue is in another
--   storage format.
-- Uses: guard, queue_stats, read_config_fields, stats_args

return guard('stats', function()
  local now = stats_args()
  return queue_stats(now, nil, read_config_fields({ 'paused', 'pauses' }))
end)
