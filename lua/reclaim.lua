-- reclaim: return a bounded batch of expired leases. Safe when several run at once: each call is
-- atomic and only sees leases the others left, so each expired id moves exactly once.
--
-- KEYS[1] task hash   KEYS[2] leased zset (deadline ms)   KEYS[3] ready zset   KEYS[4] failed zset
-- KEYS[5] solo set (reclaimed ids the next claim hands out alone)
-- ARGV[1] now     ms since epoch
-- ARGV[2] skewMs  0..3600000: a lease counts as expired only when deadline < now - skewMs
-- ARGV[3] limit   1..10000 leases per call
-- Returns: per reclaimed task, 2 each: id, state ("R" back to READY with its original rank, or
--   "F" FAILED with error "lease expired after attempt n of m" when its attempts are used up).
--   A task back in READY joins the solo set: if it crashed its worker, it must not take batch-mates along.
--   Fewer than `limit` tasks means no expired lease is left.
-- Errors: LEASEQ_BAD_ARGUMENT when any argument is malformed; nothing is written then.
return guard('reclaim', function()
  local now = int_arg('now', ARGV[1], 0, 2 ^ 52)
  local skew = int_arg('skewMs', ARGV[2], 0, 3600000)
  local limit = count_arg('limit', ARGV[3], 10000)
  local keys = { task = KEYS[1], leased = KEYS[2], ready = KEYS[3], failed = KEYS[4], solo = KEYS[5] }
  return reclaim_expired(keys, now, skew, limit)
end)
