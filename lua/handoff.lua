-- handoff: a worker stops draining and hands the queue back to wake-ups. While it drained, its
-- claims kept config `wake` fresh (it covered work falling due while it ran); now it arranges the
-- wake-up it would have been: for the ready work it leaves behind when its time ran out or when
-- work was made ready under its mark (it may have claimed for the last time before), else for when
-- scheduled work (or an ordered queue's hold) falls due.
--
-- KEYS the queue's keys (see lib/arguments.lua): config, ready, scheduled, leased are used
-- ARGV[1] now         ms since epoch
-- ARGV[2] horizonMs   0..900000: wake-ups further away than this are left to the reclaimer (the
--                     longest SQS DelaySeconds is 900 s)
-- ARGV[3] cutOff      1 when the worker stops because its time ran out (ready work may be left for a
--                     fresh invocation), 0 when its claims came back empty
-- ARGV[4] callId      1-64 characters of A-Z a-z 0-9 _ . -, the same for every sending of this call,
--                     or "" (none): a repeat after a lost reply is told the wake-up its first run arranged
-- ARGV[5] woken       1 when a wake-up started the worker and none of its claims answered it (its time
--                     ran out first): the hand-off answers it
-- ARGV[6] deployment  the caller's (LEASEQ_DEPLOYMENT), or "": on a queue deployments share, the
--                     deployment whose wake-up marks it stops, for the work of the types it runs
-- Reads config: wake, active, nextDue (scheduled work, and groups or types waiting to run again), ordered,
--   hold, paused (nothing to arrange). Writes wake, removes active.
-- Returns: the time (ms) a wake-up message must be sent for, or "" when none is needed (nothing
--   falls due within the horizon, or a wake-up is arranged for it already).
-- Errors: LEASEQ_BAD_ARGUMENT when any argument is malformed, LEASEQ_FORMAT when the queue is in
--   another storage format; nothing is written then (both are checked before the first write).
-- Uses: deployment_scope, fmt, guard, handoff_args, leased_count, need_wake, new_work_flagged
-- Uses: next_due_for, read_config_fields, ready_for, repeated_wake, wake_answered, wake_stopped

return guard('handoff', function()
  local now, _, horizon, cut_off, call, woken, deployment = handoff_args()
  local config = read_config_fields({ 'wake', 'active', 'nextDue', 'ordered', 'hold', 'paused', 'deps' })
  local scope = deployment_scope(config, deployment)
  -- A repeat of this call after a lost reply: the first run stopped the mark it read, so it is told
  -- the wake-up that run arranged, not what the marks say now.
  local repeated = call ~= '' and repeated_wake(config, now, call, scope)
  if repeated then return fmt(repeated) end
  -- Work made ready under the active mark may have come after this worker's last claim (need_wake).
  local new_work = new_work_flagged(config, scope)
  -- This worker's mark (or that of one that stopped without handing off) covers nothing once it
  -- stops; the wake-ups arranged stay (those due and not answered: their workers are to come).
  wake_stopped(config, scope)
  if woken then wake_answered(config, now, scope) end
  local due
  if config.paused == '1' then
    return '' -- a paused queue: its resume arranges the wake-up
  elseif config.ordered == '1' and leased_count() > 0 then
    return '' -- the worker holding the lease hands off after it
  elseif (cut_off or new_work) and ready_for(config, scope) then
    due = now
  else
    due = next_due_for(config, now, scope)
  end
  if due == nil then return '' end
  local wake_at = need_wake(config, now, due, horizon, call ~= '' and call or nil, false, scope)
  return wake_at and fmt(wake_at) or ''
end)
