-- tick: one reclaimer pass in one call: reclaim expired leases, promote due tasks (and let out the
-- groups and types whose time came), check a slice of the queue (check.lua's sweep: the records of
-- groups whose slots were all acked since go, and what a check may repair safely is repaired),
-- trim retention, then read the stats. An idle empty queue costs 9 commands (this EVALSHA, HGETALL
-- config, ZCARD and ZCOUNT of the sets).
--
-- KEYS the queue's keys (see lib/arguments.lua): all of them
-- ARGV[1] now     ms since epoch
-- ARGV[2] limit   1..10000, the most tasks each step moves or deletes
-- ARGV[3] wakeHorizonMs  0..900000 (default 0: none): arrange a wake-up for what falls due within
--                 this long (the time to the reclaimer's next run)
-- ARGV[4] callId  "tick-" and 1-59 characters of A-Z a-z 0-9 _ . -, the same for every sending of
--                 this call (or "" for none): a repeat after a lost reply is told the wake-up again
-- ARGV[5] deployment  the caller's (LEASEQ_DEPLOYMENT), or "": on a queue deployments share, the
--                 deployment whose wake-up marks it keeps, for the work of the types it runs
-- Reads config: skewMs (as in reclaim), doneRetentionMs, failedRetentionMs (as in trim), nextDue,
--   ordered, hold, wake, paused (a paused queue gets no wake-up), pauses, fair, sweep (where the
--   sweep goes on). Writes wake when it arranges one: it trusts no wake-up arranged for later than
--   now but a tick's own, for it cannot know another was ever sent (a producer's reply lost), so
--   what falls due before its next run gets one from it.
--   Writes finishedTo: the finish time up to which tasks were counted (below).
-- Returns: { reclaimed, reclaimFailed, promoted, doneTrimmed, failedTrimmed, then the 12 values of
--   stats (ready, scheduled, leased, done, failed, oldestReadyAgeMs, mostOverdueLeaseMs,
--   dueScheduled, corrupt, paused, pauses, oldestWaitingAgeMs), then the time (ms) a wake-up must be
--   sent for, "" when none, then when the first schedule is due for planning, "" when none is, then
--   finishedDone and finishedFailed: the tasks that finished DONE and FAILED (by their finish time)
--   since the previous tick counted them (config finishedTo), for a failure rate; 0 on a first tick }
-- Errors: LEASEQ_BAD_ARGUMENT when any argument is malformed, LEASEQ_FORMAT when the queue is in
--   another storage format; nothing is written then (both are checked before the first write).
-- Uses: K, NOTHING_DUE, config_int, decision_time, deployment_scope, fmt, guard, lanes_flush
-- Uses: lease_end_for, leased_count, need_wake, next_due_for, promote_due, queue_stats, read_config
-- Uses: reclaim_expired, scheduled_count, stamp_format, sweep_step, tick_args, trim_before

return guard('tick', function()
  local now, now_text, limit, horizon, call, deployment = tick_args()
  local config = read_config()
  -- The reclaimer ticks a queue before anything is written to it (no worker woken yet): it stamps
  -- it, so its idle ticks read no more than a written queue's (an unstamped config is looked up).
  stamp_format(config)
  local scope = deployment_scope(config, deployment)

  local counts = { scheduled = scheduled_count() }
  counts.leased = leased_count()
  for _, name in ipairs({ 'done', 'failed' }) do counts[name] = redis.call('ZCARD', K[name]) end
  local reclaimed, reclaim_failed = 0, 0
  if counts.leased > 0 then
    local moved = reclaim_expired(config, now, now_text, config_int(config, 'skewMs', DEFAULT_SKEW_MS), limit)
    for i = 2, #moved, 2 do
      if moved[i] == 'R' then reclaimed = reclaimed + 1 else reclaim_failed = reclaim_failed + 1 end
    end
  end
  -- promote_due also opens the rate windows of groups (it reads nothing before one is due).
  local promoted = promote_due(config, now, now_text, limit, limit)
  lanes_flush(now)
  local done_retention = config_int(config, 'doneRetentionMs', DEFAULT_DONE_RETENTION_MS)
  local failed_retention = config_int(config, 'failedRetentionMs', DEFAULT_FAILED_RETENTION_MS)
  -- Retention on the store's clock, bounded (decision_time): read only when there is something to trim.
  local decided = (counts.done > 0 or counts.failed + reclaim_failed > 0) and decision_time(config, now) or now
  local done_trimmed = counts.done > 0 and trim_before(K.done, decided - done_retention, limit, config) or 0
  local failed_trimmed = (counts.failed + reclaim_failed) > 0 and trim_before(K.failed, decided - failed_retention, limit, config) or 0

  local result = { reclaimed, reclaim_failed, promoted, done_trimmed, failed_trimmed }
  -- A quarantined id left the set it was in: those counts are read again (ZCARD) when it happened.
  local after = {}
  if redis.call('ZCARD', K.corrupt) == 0 then
    after = {
      scheduled = counts.scheduled - promoted,
      leased = counts.leased - reclaimed - reclaim_failed,
      done = counts.done - done_trimmed,
      failed = counts.failed + reclaim_failed - failed_trimmed,
      corrupt = 0,
    }
  end
  local stats = queue_stats(now, after, config, true)
  for _, value in ipairs(stats) do result[#result + 1] = value end
  -- A slice of the queue is checked, repairing, while it has tasks (or a sweep is under way): an
  -- idle empty queue's tick stays a few commands. Its stats above come before the slice's repairs.
  if stats[1] + stats[2] + stats[3] + stats[4] + stats[5] + stats[9] > 0 or config.sweep then
    sweep_step(config, now, SWEEP_PAGE)
  end
  lanes_flush(now)

  -- What falls due before the reclaimer's next run: a wake-up for it (sent with DelaySeconds).
  -- Ready work is the reclaimer's own business (a drain invocation); an idle queue costs nothing.
  local wake_at = nil
  if horizon > 0 and config.paused ~= '1' then
    -- Its deployment's work (docs/wake-ups.md): each deployment sharing the queue runs a reclaimer.
    local due = next_due_for(config, now, scope)
    local deadline = stats[3] > 0 and lease_end_for(config, scope)
    if deadline then
      -- A lease that ends before then is reclaimed by the worker that wake-up starts.
      local reclaimable = deadline + config_int(config, 'skewMs', DEFAULT_SKEW_MS) + 1
      if due == nil or reclaimable < due then due = reclaimable end
    end
    if due then wake_at = need_wake(config, now, due, horizon, call ~= '' and call or TICK_CALL, false, scope) end
  end
  result[#result + 1] = wake_at and fmt(wake_at) or ''
  -- Schedules due for planning (lua/plan.lua): the reclaimer plans only when one is.
  local plan = redis.call('ZRANGE', K.plan, 0, 0, 'WITHSCORES')
  result[#result + 1] = (#plan > 0 and tonumber(plan[2]) < NOTHING_DUE) and plan[2] or ''
  -- Tasks finished since the last tick counted them, by their finish time (the done and failed sets'
  -- scores): each counted once, whichever reclaimer ticks (a queue deployments share has several).
  local counted = tonumber(config.finishedTo)
  local done_now, failed_now = 0, 0
  if counted and counted < now then
    if stats[4] > 0 then done_now = redis.call('ZCOUNT', K.done, '(' .. fmt(counted), now_text) end
    if stats[5] > 0 then failed_now = redis.call('ZCOUNT', K.failed, '(' .. fmt(counted), now_text) end
  end
  -- An empty done and failed set has nothing to count: an idle queue's tick writes nothing.
  if stats[4] + stats[5] > 0 and (not counted or counted < now) then
    redis.call('HSET', K.config, 'finishedTo', now_text)
  end
  result[#result + 1] = done_now
  result[#result + 1] = failed_now
  return result
end)
