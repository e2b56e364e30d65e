-- plan: make the slots of schedules into tasks, each slot once (docs/schedules.md). The caller (the
-- reclaimer, through queue.schedules.plan) read each schedule's definition, revision and cursor,
-- computed its slots after the cursor with croner, and sends them here; this script makes them only
-- when the schedule still has that revision and that cursor, and moves the cursor past them in the
-- same atomic step. So two planners (overlapping reclaimer runs, a redeploy's, a cold start's) that
-- read the same cursor cannot both make a slot: the second finds the cursor moved and makes
-- nothing (-1, stale). A changed or removed schedule changes the revision: a plan computed from the
-- old definition makes nothing either. A slot's task id is `<schedule>@<ISO time of the slot>`; an
-- id that exists already is left as it is (a schedule removed and set again).
--
-- KEYS the queue's keys (see lib/arguments.lua): task, config, scheduled, seq, schedules, plan,
--   and groups for fair turns
-- ARGV[1] now        ms since epoch
-- ARGV[2] horizonMs  0..900000: a wake-up is arranged for the first slot made when it falls due
--                    within this long (the time to the reclaimer's next run)
-- ARGV[3] callId     the reclaimer's ("tick-..."), or "": the wake-up mark it records
-- ARGV[4..] per schedule, 10 each: name, revision, from, to, next, priority, flags, body, slots,
--   passedOver (shared/protocol/operations.ts): the slots are "<runAtMs> <id>" pairs, runAtMs being
--   the slot plus its jitter
-- Reads config: v, nextDue, fair, wake, paused, skewMs and callerClock (passing over: decision_time),
--   strictTypes, p:<type> and a:<type>, maxPayloadBytes (admission). Reads the schedules' `:v`, `:c`, `:p`, `:m` and the slots' ids.
-- Writes: per fresh slot the body, a SCHEDULED state (flag k for overlap skip) and the scheduled
--   set; per schedule planned its `:c`, `:l`, `:m` and its score in `plan`; config nextDue, fair.
-- Returns: per schedule, the tasks made (0 or more), or -1 when stale (nothing written for it), or
--   -2 when it passes over slots and now is later than the store's clock plus skewMs (decision_time),
--   -3 when its type is not declared for the queue (strictTypes), -4 when its payload is over the
--   queue's maxPayloadBytes: its tasks would not be admitted, nothing is written for it;
--   then the wake-ups to send, "" when none (as enqueue's: wake_reply; docs/wake-ups.md).
-- Errors: LEASEQ_BAD_ARGUMENT when any argument is malformed, LEASEQ_FORMAT when the queue is in
--   another storage format; nothing is written then: every item is checked, and every record read,
--   before the first write.
-- Uses: K, apply, arrange_wakes, as_time, bad, config_int, decision_time, fmt, guard, id_arg
-- Uses: int_arg, is_id, name_arg, new_state, new_writes, note_due, parse_body, plan_args, plan_item
-- Uses: plan_items, put, put_state, read_config_fields, read_many, schedule_counts_line, stamp_format
-- Uses: start_fair, time_arg, type_scope, write_many, zadd

return guard('plan', function()
  local now, _, horizon, call = plan_args()
  local n = plan_items(PLAN_ITEMS_MAX)
  local items, fields = {}, {}
  for i = 1, n do
    local name, revision, from, to, next, priority, flags, body, slots, passed = plan_item(i)
    local item = {
      name = name_arg('schedule ' .. i .. ' name', name, SCHEDULE_NAME_MAX_BYTES),
      revision = revision,
      from = from,
      to = time_arg('schedule ' .. i .. ' to', to),
      next = time_arg('schedule ' .. i .. ' next', next),
      priority = int_arg('schedule ' .. i .. ' priority', priority, PRIORITY_MIN, PRIORITY_MAX),
      flags = flags,
      body = body,
      passed = int_arg('schedule ' .. i .. ' passedOver', passed, 0, 1000000000),
      runs = {},
      ids = {},
    }
    time_arg('schedule ' .. i .. ' from', item.from)
    if item.flags ~= '' and item.flags ~= 'k' then bad('schedule ' .. i .. ' flags must be "k" or ""') end
    local info = parse_body(item.body)
    if not info then bad('schedule ' .. i .. ' body must be "1|<enqueuedAtMs>|<type>|<group>|<trace>|<payload>"') end
    item.type, item.group, item.payload_at = info.type, info.group, info.payload_at
    for run_at, id in string.gmatch(slots, '(%d+) (%S+)') do
      if not as_time(run_at) then time_arg('schedule ' .. i .. ' slot runAtMs', run_at) end
      if not is_id(id) then id_arg('schedule ' .. i .. ' slot id', id) end
      item.runs[#item.runs + 1], item.ids[#item.ids + 1] = run_at, id
    end
    if #item.ids > SCHEDULE_SLOTS_MAX then bad('schedule ' .. i .. ' has more than ' .. SCHEDULE_SLOTS_MAX .. ' slots') end
    items[i] = item
    for _, suffix in ipairs({ ':v', ':c', ':p', ':m' }) do fields[#fields + 1] = item.name .. suffix end
  end

  local config_names = { 'nextDue', 'fair', 'wake', 'active', 'paused', 'skewMs', 'callerClock', 'strictTypes', 'deps',
    'maxPayloadBytes' }
  for _, item in ipairs(items) do
    config_names[#config_names + 1] = 'p:' .. item.type
    config_names[#config_names + 1] = 'a:' .. item.type
  end
  local config = read_config_fields(config_names)
  -- A slot's task is admitted as an enqueue admits one: a type the queue declares (strictTypes), a
  -- payload within the queue's cap. A schedule whose tasks would not be is refused (-3, -4): the
  -- planner sets it aside with why, and no task of it is made.
  local max_payload = config_int(config, 'maxPayloadBytes', DEFAULT_MAX_PAYLOAD_BYTES)
  -- Passing a slot over cannot be undone: it rests on the store's clock, not on the caller's alone.
  -- A plan that passes over slots from a `now` later than the store's clock plus the skew is refused.
  local clock_ahead = nil
  local stored = read_many('HMGET', K.schedules, fields)
  -- The slots of the schedules still current: which ids exist already.
  local current, task_fields = {}, {}
  for i, item in ipairs(items) do
    local revision, cursor, paused = stored[4 * i - 3], stored[4 * i - 2], stored[4 * i - 1]
    item.counts = stored[4 * i] or ''
    if item.passed > 0 and clock_ahead == nil then clock_ahead = decision_time(config, now) < now end
    item.refused = item.passed > 0 and clock_ahead
    if config.strictTypes == '1' and not config['p:' .. item.type] and not config['a:' .. item.type] then
      item.inadmissible = -3
    elseif #item.body - item.payload_at + 1 > max_payload then
      item.inadmissible = -4
    end
    -- Two items of one schedule in a call: the second is stale (its cursor is the first's from).
    if revision == item.revision and cursor == item.from and paused ~= '1' and not current[item.name] and not item.refused and
      not item.inadmissible then
      current[item.name] = item
      item.current = true
      for _, id in ipairs(item.ids) do
        task_fields[#task_fields + 1] = id .. ':s'
        task_fields[#task_fields + 1] = id
        task_fields[#task_fields + 1] = id .. ':x'
      end
    end
  end
  local existing = read_many('HMGET', K.task, task_fields)

  local writes, result, schedule_fields, at = new_writes(), {}, {}, 0
  local earliest, dues = nil, {} -- dues: per wake-up scope (docs/wake-ups.md)
  for _, item in ipairs(items) do
    if item.inadmissible then
      result[#result + 1] = item.inadmissible
    elseif item.refused then
      result[#result + 1] = -2
    elseif not item.current then
      result[#result + 1] = -1
    else
      local made, last = 0, nil
      for j, id in ipairs(item.ids) do
        local known = existing[at + 1] or existing[at + 2] or existing[at + 3]
        at = at + 3
        if not known then
          made = made + 1
          last = id
          local run_at = tonumber(item.runs[j])
          put(writes, id, item.body)
          local state = new_state('S', item.runs[j], '', item.type, item.group)
          state.flags = item.flags
          item.states = item.states or {}
          item.states[#item.states + 1] = { id = id, state = state }
          zadd(writes, K.scheduled, run_at, id)
          if not earliest or run_at < earliest then earliest = run_at end
          local scope = type_scope(config, item.type)
          if not dues[scope] or run_at < dues[scope] then dues[scope] = run_at end
        end
      end
      local done, passed = string.match(item.counts, SCHEDULE_COUNTS_PATTERN)
      schedule_fields[#schedule_fields + 1] = item.name .. ':c'
      schedule_fields[#schedule_fields + 1] = fmt(item.to)
      schedule_fields[#schedule_fields + 1] = item.name .. ':m'
      schedule_fields[#schedule_fields + 1] = schedule_counts_line(fmt((tonumber(done) or 0) + made), fmt((tonumber(passed) or 0) + item.passed))
      if last then
        schedule_fields[#schedule_fields + 1] = item.name .. ':l'
        schedule_fields[#schedule_fields + 1] = last
      end
      zadd(writes, K.plan, item.next, item.name)
      item.made = made
      result[#result + 1] = made
    end
  end

  -- Ranks: one arrival each, in the order made, at each schedule's priority.
  local fresh = 0
  for _, item in ipairs(items) do fresh = fresh + (item.made or 0) end
  if fresh > 0 then
    stamp_format(config)
    local seq = redis.call('INCRBY', K.seq, fresh) - fresh
    local any_group = false
    for _, item in ipairs(items) do
      for _, made in ipairs(item.states or {}) do
        seq = seq + 1
        made.state.rank = fmt((item.priority - PRIORITY_MIN) * RANK_SEQ_SPAN + seq)
        put_state(writes, made.id, made.state)
        if item.group ~= '' then any_group = true end
      end
    end
    if any_group and config.fair ~= '1' then start_fair(config) end
  end
  apply(writes)
  if #schedule_fields > 0 then write_many('HSET', K.schedules, schedule_fields, 2) end
  if earliest then note_due(config, earliest) end
  if config.paused == '1' or horizon == 0 then dues = {} end
  -- A repeat of this call after a lost reply (its plans now stale) is told the wake-ups it arranged.
  result[#result + 1] = arrange_wakes(config, now, dues, horizon, call ~= '' and call or TICK_CALL, call ~= '', '')
  return result
end)
