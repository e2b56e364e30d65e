-- Work whose time came: lanes and types whose window opened, and SCHEDULED tasks due, moved to
-- READY by claims and ticks.

-- The most lanes and types whose time came one claim opens (a tick opens up to its limit).
local OPEN_PER_CLAIM = 100

-- Lanes and types whose time came (a rate window opened, a type resumed), at most `limit` of them:
-- lanes let their parked tasks out, types put back what they set aside. The rest stay due in
-- groupwait for the next call.
local function open_windows(config, now, limit, paused_types)
  local due = redis.call('ZRANGEBYSCORE', K.groupwait, '-inf', fmt(now), 'LIMIT', 0, limit)
  if #due == 0 then return end
  write_many('ZREM', K.groupwait, due)
  local lanes_due = {}
  for _, name in ipairs(due) do
    if string.byte(name, 1) ~= AT then
      lanes_due[#lanes_due + 1] = name
    else
      local task_type = string.sub(name, 2)
      local paused = paused_types and paused_types[task_type]
      if not paused then
        local rules = group_policy(config, task_type)
        local limit_now, next_time = TYPE_UNPARK_MAX, 0
        if rules.type_max > 0 then
          local record = lane_get(name)
          local open, opens_at = rate_open(record, rules.type_max, rules.type_ms, now)
          if open then
            limit_now = math.min(limit_now, rate_room(record, rules.type_max, rules.type_ms, now, 0))
            next_time = rate_window(record, rules.type_ms, now) + rules.type_ms
          else
            limit_now, next_time = 0, opens_at
          end
        end
        if type_unpark(task_type, limit_now, config, now) > 0 then lane_wait(name, next_time, config) end
      end
    end
  end
  if #lanes_due > 0 then lanes_unpark(lanes_due, config, now) end
end

-- The types paused on their own (config pauses), as a set, or nil.
local function paused_types_of(config)
  local text = config_get(config, 'pauses')
  if not text then return nil end
  local set = {}
  for name in string.gmatch(text, '[^,]+') do set[name] = true end
  return set
end

-- Loads the tasks a maintenance step moves (`ids`, a page of one set) and the records of their
-- groups, checking their slots (one HMGET for the records and one for the slots' states, instead
-- of one of each per group as the moves meet them). A task that cannot be read, or has no state
-- (`missing` says why then), is set aside in `writes` and gets `problem`: the caller moves the
-- others. Returns the tasks by id.
local function load_to_move(ids, writes, config, now, missing)
  local tasks = load(ids, false)
  local names = {}
  for _, id in ipairs(ids) do
    local task = tasks[id]
    if task.problem or not task.state then
      task.problem = task.problem or missing
      quarantine(writes, id, task.problem, now)
      after_quarantine(id, task, config)
    elseif task.state.group ~= '' then
      names[#names + 1] = lane_of(task.state.type, task.state.group)
    end
  end
  lanes_load(names)
  lanes_verify(names)
  return tasks
end

-- Moves up to `limit` due SCHEDULED tasks to READY with the rank they were given at enqueue (a
-- task of a group into its lane), opens up to `open_limit` lanes and types whose time came, and
-- keeps config nextDue exact. Costs nothing while nothing is due. The caller runs lanes_flush().
local function promote_due(config, now, now_text, limit, open_limit)
  local next_due = tonumber(config.nextDue)
  if next_due ~= nil and next_due > now then return 0 end
  local due = redis.call('ZRANGEBYSCORE', K.scheduled, SCHEDULED_FROM, fmt(now), 'LIMIT', 0, limit)
  if #due > 0 then
    local writes = new_writes()
    local tasks = load_to_move(due, writes, config, now, 'a SCHEDULED task without its state')
    for _, id in ipairs(due) do
      local task = tasks[id]
      if task.problem then
        -- set aside by load_to_move
      elseif task.state.flags == 'k' and overlap_passed(id) then
        -- A schedule's slot whose previous slot's task still waits or runs (overlap: skip).
        drop_field(writes, id)
        drop_field(writes, id .. ':s')
        zrem(writes, K.scheduled, id)
      else
        local state = task.state
        -- READY since it fell due (its `at`, the due time): what it waited counts from then.
        state.letter = 'R'
        if not (tonumber(state.at) and tonumber(state.at) <= now) then state.at = now_text end
        -- A held retry of an ordered group gives back its slot as it goes first in its group.
        local held = state.flags == 'h'
        state.flags = ''
        make_ready(writes, id, state, config, now, held)
        zrem(writes, K.scheduled, id)
      end
    end
    apply(writes)
  end
  open_windows(config, now, open_limit or limit, paused_types_of(config))
  set_next_due(config, earliest_due())
  return #due
end
