-- schedule: set, remove, retire, pause or resume one schedule (docs/schedules.md).
--   set     a new schedule starts at now: its first slot is its first after now (or after the
--           cursor a removed schedule of that name left, when later); a changed one keeps its
--           cursor, behind now too, so no slot already made or passed over comes again and none
--           after it is skipped (the new definition's, under its catch-up), and is planned at once
--           with its new definition (its revision changed: a plan computed from the old one is
--           stale). A schedule belongs to the deployment whose declaration set it (owner): a
--           run-time caller (owner "") may not set a declared one, and a deployment may not set
--           another's (5); a deploy takes over a run-time one of that name, and one declared before
--           owners were kept ("1").
--   remove  the definition goes; its cursor stays, so a schedule set again under that name never
--           makes a slot the removed one made. Its tasks already made stay.
--   retire  a cold start's remove of a schedule its deployment no longer declares: only the owner's
--           (else 5, nothing changed). It notes who retired it and when, so that the same owner
--           setting it again within TYPE_RETIRE_MS (a worker of the release before, cold-starting
--           during a rolling deploy or a rollback) takes it back at its cursor: the slots between
--           are made or passed over by its catch-up policy, and counted, never lost unseen.
--   pause   no slot is planned while paused; resume starts again from now (the slots of the pause
--           are passed over, not caught up).
--   aside   the planner's, for a schedule it cannot compute (a cron croner refuses, a definition
--           that no longer reads): kept unplanned, with the reason in <name>:e, so every other
--           schedule is planned; a set that changes it plans it again (a resume of a paused one tries
--           again). Nothing changes when its revision is no longer the one the planner read (1).
--
-- KEYS the queue's keys (see lib/arguments.lua): config, schedules, plan are used
-- ARGV[1] now          ms since epoch
-- ARGV[2] action       set | remove | retire | pause | resume | aside
-- ARGV[3] name         1-SCHEDULE_NAME_MAX_BYTES characters of A-Z a-z 0-9 _ . -
-- ARGV[4] revision     set: 1-64 hex characters (the definition's digest); aside: the one read; else ""
-- ARGV[5] definition   set: the definition's canonical JSON (checked by the library); aside: the
--                      reason (cut to 500 bytes); resume: the slots between the cursor and now
--                      (counted as passed over); else ""
-- ARGV[6] owner        the deployment whose declaration sets it (a cold start), or "": a run-time caller
-- Reads config: v, skewMs, callerClock (a start or a resume at now: decision_time). Reads and writes the schedule's fields and its score in plan.
-- Returns: { status, cursor, owner }: 0 done, 1 unchanged, 3 unknown schedule, 4 declared (a
--   run-time caller refused), 5 another deployment's (refused); owner the schedule's after the call
-- Errors: LEASEQ_BAD_ARGUMENT when any argument is malformed, LEASEQ_FORMAT when the queue is in
--   another storage format; nothing is written then (both are checked before the first write).
-- Uses: K, NOTHING_DUE, bad, decision_time, fmt, guard, read_config_fields, schedule_args
-- Uses: schedule_counts_line, schedule_retired_line, write_many

-- Who a stored owner field names: "" a run-time schedule ("0" was written for one before owners
-- were kept), "1" one declared before owners were kept (any deployment's declaration adopts it).
local function owner_of(stored)
  if not stored or stored == '0' then return '' end
  return stored
end

return guard('schedule', function()
  local now, _, action, name, revision, definition, owner = schedule_args()
  if action == 'set' and (not string.find(revision, '^%x+$') or #revision > 64 or definition == '') then
    bad('set needs the revision (1-64 hex characters) and the definition')
  end
  local config = read_config_fields({ 'skewMs', 'callerClock' })
  local stored = redis.call('HMGET', K.schedules, name, name .. ':v', name .. ':c', name .. ':p', name .. ':d',
    name .. ':x', name .. ':e')
  local exists, cursor = stored[1] ~= false, tonumber(stored[3])
  local cursor_text, held_by = stored[3] or '', owner_of(stored[5])
  if action == 'set' then
    if exists and held_by ~= '' then
      if owner == '' then return { 4, cursor_text, held_by } end
      if held_by ~= '1' and held_by ~= owner then return { 5, cursor_text, held_by } end
    end
    if exists and stored[2] == revision then
      if held_by ~= owner then redis.call('HSET', K.schedules, name .. ':d', owner == '' and '0' or owner) end
      return { 1, cursor_text, owner }
    end
    -- A new schedule starts at now (or at a removed one's cursor, when later). A changed one keeps
    -- its cursor even when it lags behind now (its planners were away): the slots after it are the
    -- new definition's, made or passed over by its catch-up policy, never skipped unseen. So does
    -- one its owner retired a moment ago, set again by that owner (a rolling deploy's two releases).
    local retired_at, retired_by = string.match(stored[6] or '', SCHEDULE_RETIRED_PATTERN)
    local taken_back = not exists and owner ~= '' and retired_by == owner and now - tonumber(retired_at) <= TYPE_RETIRE_MS
    -- Starting at now passes over nothing but must not start past the store's clock (decision_time):
    -- a caller whose clock runs ahead would leave the slots between unmade and uncounted.
    local start = decision_time(config, now)
    if not cursor or (not exists and not taken_back and cursor < start) then cursor = start end
    cursor_text = fmt(cursor)
    redis.call('HSET', K.schedules, name, definition, name .. ':v', revision, name .. ':c', cursor_text,
      name .. ':d', owner == '' and '0' or owner)
    -- Set aside no longer, retired no longer; a retired one's counts go on when it is taken back, a
    -- new one of its name starts afresh.
    local gone = {}
    if stored[7] then gone[#gone + 1] = name .. ':e' end
    if stored[6] then
      gone[#gone + 1] = name .. ':x'
      if not taken_back then
        gone[#gone + 1], gone[#gone + 2], gone[#gone + 3] = name .. ':l', name .. ':r', name .. ':m'
      end
    end
    write_many('HDEL', K.schedules, gone)
    -- Planned at once (its first slot may fall within the horizon), unless paused.
    if stored[4] ~= '1' then redis.call('ZADD', K.plan, now, name) end
    return { 0, cursor_text, owner }
  end
  if not exists then return { 3, cursor_text, '' } end
  if action == 'remove' or action == 'retire' then
    if action == 'retire' and (owner == '' or (held_by ~= owner and held_by ~= '1')) then
      return { 5, cursor_text, held_by }
    end
    if action == 'retire' then
      redis.call('HDEL', K.schedules, name, name .. ':v', name .. ':p', name .. ':d', name .. ':e')
      redis.call('HSET', K.schedules, name .. ':x', schedule_retired_line(fmt(now), owner))
    else
      redis.call('HDEL', K.schedules, name, name .. ':v', name .. ':p', name .. ':d', name .. ':l', name .. ':r',
        name .. ':m', name .. ':x', name .. ':e')
    end
    redis.call('ZREM', K.plan, name)
    return { 0, cursor_text, '' }
  elseif action == 'aside' then
    if stored[2] ~= revision then return { 1, cursor_text, held_by } end
    redis.call('HSET', K.schedules, name .. ':e', string.sub(definition, 1, 500))
    if stored[4] ~= '1' then redis.call('ZADD', K.plan, NOTHING_DUE, name) end
    return { 0, cursor_text, held_by }
  elseif action == 'pause' then
    if stored[4] == '1' then return { 1, cursor_text, held_by } end
    redis.call('HSET', K.schedules, name .. ':p', '1')
    redis.call('ZADD', K.plan, NOTHING_DUE, name)
    return { 0, cursor_text, held_by }
  end
  if stored[4] ~= '1' then return { 1, cursor_text, held_by } end
  -- The slots of the pause are passed over, up to now on the store's clock (decision_time), and
  -- counted: the caller says how many fall between the cursor and its now (`definition`).
  local start = decision_time(config, now)
  if not cursor or cursor < start then
    cursor = start
    local passed = tonumber(definition) or 0
    if passed > 0 then
      local made_count, passed_count = string.match(redis.call('HGET', K.schedules, name .. ':m') or '', SCHEDULE_COUNTS_PATTERN)
      redis.call('HSET', K.schedules, name .. ':m', schedule_counts_line(made_count or '0', fmt((tonumber(passed_count) or 0) + passed)))
    end
  end
  cursor_text = fmt(cursor)
  redis.call('HDEL', K.schedules, name .. ':p')
  redis.call('HSET', K.schedules, name .. ':c', cursor_text)
  redis.call('ZADD', K.plan, now, name)
  return { 0, cursor_text, held_by }
end)
