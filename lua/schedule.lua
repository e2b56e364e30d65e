-- schedule: set, remove, pause or resume one schedule (docs/schedules.md).
--   set     a new schedule starts at now: its first slot is its first after now (or after the
--           cursor a removed schedule of that name left, when later); a changed one keeps its
--           cursor, behind now too, so no slot already made or passed over comes again and none
--           after it is skipped (the new definition's, under its catch-up), and is planned at once
--           with its new definition (its revision changed: a plan computed from the old one is
--           stale). A run-time caller (declared 0) may not set a schedule the task declaration
--           owns; a deploy (declared 1) takes over a run-time one of that name.
--   remove  the definition goes; its cursor stays, so a schedule set again under that name never
--           makes a slot the removed one made. Its tasks already made stay.
--   pause   no slot is planned while paused; resume starts again from now (the slots of the pause
--           are passed over, not caught up).
--
-- KEYS the queue's keys (see lib/arguments.lua): config, schedules, plan are used
-- ARGV[1] now          ms since epoch
-- ARGV[2] action       set | remove | pause | resume
-- ARGV[3] name         1-SCHEDULE_NAME_MAX_BYTES characters of A-Z a-z 0-9 _ . -
-- ARGV[4] revision     set: 1-64 hex characters (the definition's digest); else ""
-- ARGV[5] definition   set: the definition's canonical JSON (checked by the library); else ""
-- ARGV[6] declared     1: the task declaration's (a deploy), 0: a run-time caller's
-- Reads config: v. Reads and writes the schedule's fields and its score in plan.
-- Returns: { status, cursor }: 0 done, 1 unchanged, 3 unknown schedule, 4 declared (refused)
-- Errors: LEASEQ_BAD_ARGUMENT when any argument is malformed, LEASEQ_FORMAT when the queue is in
--   another storage format; nothing is written then (both are checked before the first write).
-- Uses: K, NOTHING_DUE, bad, fmt, guard, read_config_fields, schedule_args

return guard('schedule', function()
  local now, _, action, name, revision, definition, declared = schedule_args()
  if action == 'set' and (not string.find(revision, '^%x+$') or #revision > 64 or definition == '') then
    bad('set needs the revision (1-64 hex characters) and the definition')
  end
  read_config_fields({})
  local stored = redis.call('HMGET', K.schedules, name, name .. ':v', name .. ':c', name .. ':p', name .. ':d')
  local exists, cursor = stored[1] ~= false, tonumber(stored[3])
  local cursor_text = stored[3] or ''
  if action == 'set' then
    if exists and stored[5] == '1' and not declared then return { 4, cursor_text } end
    if exists and stored[2] == revision then
      if declared and stored[5] ~= '1' then redis.call('HSET', K.schedules, name .. ':d', '1') end
      return { 1, cursor_text }
    end
    -- A new schedule starts at now (or at a removed one's cursor, when later). A changed one keeps
    -- its cursor even when it lags behind now (its planners were away): the slots after it are the
    -- new definition's, made or passed over by its catch-up policy, never skipped unseen.
    if not cursor or (not exists and cursor < now) then cursor = now end
    cursor_text = fmt(cursor)
    redis.call('HSET', K.schedules, name, definition, name .. ':v', revision, name .. ':c', cursor_text,
      name .. ':d', declared and '1' or '0')
    -- Planned at once (its first slot may fall within the horizon), unless paused.
    if stored[4] ~= '1' then redis.call('ZADD', K.plan, now, name) end
    return { 0, cursor_text }
  end
  if not exists then return { 3, cursor_text } end
  if action == 'remove' then
    redis.call('HDEL', K.schedules, name, name .. ':v', name .. ':p', name .. ':d', name .. ':l', name .. ':r', name .. ':m')
    redis.call('ZREM', K.plan, name)
    return { 0, cursor_text }
  elseif action == 'pause' then
    if stored[4] == '1' then return { 1, cursor_text } end
    redis.call('HSET', K.schedules, name .. ':p', '1')
    redis.call('ZADD', K.plan, NOTHING_DUE, name)
    return { 0, cursor_text }
  end
  if stored[4] ~= '1' then return { 1, cursor_text } end
  if not cursor or cursor < now then cursor = now end
  cursor_text = fmt(cursor)
  redis.call('HDEL', K.schedules, name .. ':p')
  redis.call('HSET', K.schedules, name .. ':c', cursor_text)
  redis.call('ZADD', K.plan, now, name)
  return { 0, cursor_text }
end)
