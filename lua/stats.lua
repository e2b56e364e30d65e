-- stats: counts per state and the two ages an operator alarms on. Read-only.
--
-- KEYS[1] task hash   KEYS[2] ready   KEYS[3] scheduled   KEYS[4] leased   KEYS[5] done
-- KEYS[6] failed
-- ARGV[1] now  ms since epoch
-- Returns: { ready, scheduled, leased, done, failed, oldestReadyAgeMs, mostOverdueLeaseMs,
--   dueScheduled }
--   oldestReadyAgeMs    how long the task at the head of the ready queue has waited (0 if none)
--   mostOverdueLeaseMs  now - the earliest lease deadline, when that is in the past (else 0)
--   dueScheduled        scheduled tasks whose due time has passed (waiting for promotion)
-- Errors: LEASEQ_BAD_ARGUMENT when `now` is malformed.
return guard('stats', function()
  local now = int_arg('now', ARGV[1], 0, 2 ^ 52)
  return queue_stats({ task = KEYS[1], ready = KEYS[2], scheduled = KEYS[3], leased = KEYS[4], done = KEYS[5], failed = KEYS[6] }, now)
end)
