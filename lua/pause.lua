-- pause: pause or resume a queue, or one task type of it. A paused queue's claims lease nothing
-- (a claim repeated after a lost reply still returns its batch); a paused type's tasks are set aside
-- as claims meet them (an ordered queue stops at one), so they hold back no other type. The
-- reclaimer still reclaims, promotes and trims, and sends no wake-up nor drain invocation for what
-- is paused.
--
-- KEYS the queue's keys (see lib/arguments.lua): config, ready, scheduled, groupwait are used
-- ARGV[1] now     ms since epoch
-- ARGV[2] action  "pause" or "resume"
-- ARGV[3] type    "" for the whole queue, else a task type (1-64 characters of A-Z a-z 0-9 _ . -)
-- ARGV[4] callId  1-64 characters of A-Z a-z 0-9 _ . -, the same for every sending of this call, or
--                 "" (none): a repeat after a lost reply is told the wake-up its first run arranged
-- Writes config: paused ("1" while the queue is paused), pauses (the paused types, sorted,
--   comma-separated); wake when a resume leaves work for a worker. A resumed type's tasks set aside
--   go back to READY at their ranks, up to 1000 at once, the rest with the next claims (groupwait:
--   "@<type>" due at once).
-- Returns: { changed (1, or 0 when it was so already), the time (ms) a wake-up must be sent for
--   (a resume with work ready now, or falling due within 15 minutes: docs/wake-ups.md), "" when none }
-- Errors: LEASEQ_BAD_ARGUMENT when any argument is malformed, LEASEQ_FORMAT when the queue is in
--   another storage format; nothing is written then (both are checked before the first write).
-- Uses: K, bad, fmt, guard, lane_wait, lanes_flush, need_wake, next_due_of, pause_args
-- Uses: read_config_fields, repeated_wake, type_unpark, wake_list, wake_write

return guard('pause', function()
  local now, _, action, task_type, call = pause_args()
  local config = read_config_fields({ 'paused', 'pauses', 'wake', 'active', 'nextDue', 'ordered', 'hold' })
  local pausing, changed = action == 'pause', 0
  if task_type == '' then
    if pausing and config.paused ~= '1' then
      redis.call('HSET', K.config, 'paused', '1')
      config.paused = '1'
      changed = 1
    elseif not pausing and config.paused == '1' then
      redis.call('HDEL', K.config, 'paused')
      config.paused = nil
      changed = 1
    end
  else
    local types, found = {}, false
    for name in string.gmatch(config.pauses or '', '[^,]+') do
      if name == task_type then found = true
      else types[#types + 1] = name end
    end
    if pausing and not found then
      if #types >= PAUSED_TYPES_MAX then bad('at most ' .. PAUSED_TYPES_MAX .. ' task types may be paused at once') end
      types[#types + 1] = task_type
      changed = 1
    elseif not pausing and found then
      changed = 1
    end
    if changed == 1 then
      table.sort(types)
      if #types > 0 then redis.call('HSET', K.config, 'pauses', table.concat(types, ','))
      else redis.call('HDEL', K.config, 'pauses') end
    end
    -- The type's tasks set aside while it was paused go back at their ranks: the first ones now,
    -- the rest (a long backlog) with the next claims.
    if not pausing and type_unpark(task_type, TYPE_UNPARK_MAX, config, now) > 0 then lane_wait('@' .. task_type, 0, config) end
  end
  local wake_at = nil
  if not pausing and config.paused ~= '1' then
    -- A wake-up sent while the work was paused found nothing to claim: it covers nothing now.
    config.active = nil
    local list, kept = wake_list(config, now), {}
    for _, entry in ipairs(list) do
      if entry.at > now then kept[#kept + 1] = entry end
    end
    wake_write(config, kept)
    local due = nil
    if redis.call('ZCARD', K.ready) > 0 or redis.call('ZCARD', K.grouped) > 0 then due = now
    else due = next_due_of(config, now) end
    if due then wake_at = need_wake(config, now, due, WAKE_HORIZON_MAX_MS, call ~= '' and call or nil) end
  end
  if not wake_at and call ~= '' then wake_at = repeated_wake(config, now, call) end
  lanes_flush(now)
  return { changed, wake_at and fmt(wake_at) or '' }
end)
