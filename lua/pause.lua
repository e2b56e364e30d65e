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
-- Returns: { changed (1, or 0 when it was so already), the wake-ups to send (a resume with work
--   ready now, or falling due within 15 minutes; as enqueue's: wake_reply, docs/wake-ups.md), "" when none }
-- Errors: LEASEQ_BAD_ARGUMENT when any argument is malformed, LEASEQ_FORMAT when the queue is in
--   another storage format; nothing is written then (both are checked before the first write).
-- Uses: K, bad, guard, lane_wait, lanes_flush, pause_args
-- Uses: read_config_fields, type_unpark, wake_list, wake_write
-- Uses: all_scopes, arrange_wakes, config_get, next_due_for, type_scope
-- Uses: ready_for

return guard('pause', function()
  local now, _, action, task_type, call = pause_args()
  local config = read_config_fields({ 'paused', 'pauses', 'wake', 'active', 'nextDue', 'ordered', 'hold', 'deps' })
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
  local dues = {}
  if not pausing and config.paused ~= '1' then
    -- The deployments whose work it lets run: the type's, or every one (a shared queue's).
    -- (On a shared queue, work of a type no deployment runs has no worker to wake.)
    local scopes = { type_scope(config, task_type) }
    if task_type == '' then
      scopes = all_scopes(config)
      if #scopes > 1 then table.remove(scopes, 1) end
    end
    local parked = redis.call('ZCARD', K.grouped) > 0
    for _, scope in ipairs(scopes) do
      -- A wake-up sent while the work was paused found nothing to claim: it covers nothing now.
      config_get(config, 'active' .. scope)
      config['active' .. scope] = nil
      local list, kept = wake_list(config, now, scope), {}
      for _, entry in ipairs(list) do
        if entry.at > now then kept[#kept + 1] = entry end
      end
      wake_write(config, kept, scope)
      dues[scope] = (parked or ready_for(config, scope)) and now or next_due_for(config, now, scope)
    end
  end
  local wake = arrange_wakes(config, now, dues, WAKE_HORIZON_MAX_MS, call ~= '' and call or nil, call ~= '', '')
  lanes_flush(now)
  return { changed, wake }
end)
