-- Flow control per key (docs/flow-control.md): dedupe, debounce and throttle at enqueue. A key's
-- state is a field of the queue's task hash, named with a first character no id can have ("!"; the
-- hash's own fields start with "#"), so the HMGET that reads a batch's tasks reads it and the
-- batch's HSET writes it: a batch pays no command per task for it.
--   !d:<key>   "<taskId>|<untilMs>"             the task enqueued first in the window, the window's end
--   !b:<key>   "<taskId>|<firstAtMs>|<untilMs>" the task holding the key, when its window began and
--                                                when it ends (firstAtMs + the maxWaitMs it began with)
--   !t:<key>   "<nextFreeAtMs>"                  the end of the last period taken
--   !s:<key>   "<taskId>"                        the singleton task enqueued last (the one that
--                                                waits, until it is claimed); its task runs in the
--                                                lane "<type>|@@s:<key>", one at a time (lanes.lua)
-- The last number of the others is their end: decisions compare it with the caller's `now` (as
-- every script does; tests travel in time so), a value whose end is past counts as absent, and the
-- tick's check sweep removes it then (check_tasks, flow_over); a singleton's goes once its task no
-- longer waits (singleton_waiting). A batch without flow control reads and writes none of them.

-- The first byte of a flow field: ids never start with it, nor do the hash's own fields.
local FLOW_FIELD_BYTE = 33 -- "!"

-- The field remembering a task a debounce or a singleton replaced: "!r:<id>" = "<replacerId>|<untilMs>"
-- (enqueue.lua): sent again, that id is a duplicate, not a new task; the sweep removes it once over.
local REPLACED_PREFIX = '!r:'

-- Per mode, by its letter: its name, the prefix of its fields ("!<letter>:"), the names and bounds
-- of its two numbers, the most bytes of its key.
local FLOW_MODES = {
  d = { name = 'dedupe', prefix = '!d:', a = 'ttlMs', a_min = 1, a_max = FLOW_WINDOW_MAX_MS, b_min = 0, b_max = 0, key_max = FLOW_KEY_MAX_BYTES },
  b = {
    name = 'debounce', prefix = '!b:', a = 'delayMs', a_min = 0, a_max = FLOW_WINDOW_MAX_MS, b = 'maxWaitMs', b_min = 1,
    b_max = FLOW_WINDOW_MAX_MS, key_max = FLOW_KEY_MAX_BYTES,
  },
  t = {
    name = 'throttle', prefix = '!t:', a = 'perMs', a_min = 1, a_max = FLOW_WINDOW_MAX_MS, b = 'defer', b_min = 0, b_max = 1,
    key_max = FLOW_KEY_MAX_BYTES,
  },
  s = { name = 'singleton', prefix = '!s:', a_min = 0, a_max = 0, b_min = 0, b_max = 0, key_max = SINGLETON_KEY_MAX_BYTES },
}
-- A flow, "<m>|<a>|<b>" (m: d, b, t or s), checked: its mode's entry of FLOW_MODES, then its two
-- numbers. Raises naming `where` (the tasks it is for), what was wrong and what is allowed.
local function flow_spec(where, text)
  local letter, a, b = string.match(text, FLOW_PATTERN)
  local spec = FLOW_MODES[letter]
  if not spec then
    bad(where .. ' flow must be "<m>|<a>|<b>" with m d (dedupe), b (debounce), t (throttle) or s (singleton), got "' ..
      string.sub(text, 1, 40) .. '"')
  end
  a, b = tonumber(a), tonumber(b)
  if not (a >= spec.a_min and a <= spec.a_max and b >= spec.b_min and b <= spec.b_max) then
    if not spec.a then bad(where .. ' ' .. spec.name .. ' takes no numbers: 0 and 0') end
    int_arg(where .. ' ' .. spec.name .. '.' .. spec.a, a, spec.a_min, spec.a_max)
    if not spec.b then bad(where .. ' ' .. spec.name .. ' takes one number, then 0') end
    int_arg(where .. ' ' .. spec.name .. '.' .. spec.b, b, spec.b_min, spec.b_max)
  end
  return { letter = letter, prefix = spec.prefix, a = a, b = b, name = spec.name, key_max = spec.key_max }
end

-- An enqueue's `flows` (ARGV[3]), read: "" when no task has flow control; else runs that cover the
-- tasks in order, joined by ",": "<count>:-" for count tasks without, "<count>:<m>|<a>|<b>" for
-- count tasks with that flow (m d dedupe: ttlMs, 0; b debounce: delayMs, maxWaitMs; t throttle:
-- perMs, and 1 to defer or 0 to drop; s singleton: 0, 0), each with its key among the values after
-- the tasks, in task order. A batch's tasks mostly share one flow: a run is read once, whatever its
-- length. Returns the runs (each { count, spec }, spec false for "-"), how many tasks they cover and
-- how many keys follow the tasks; nil for "".
local function flow_runs(text)
  if text == '' then return nil, nil, 0 end
  local runs, n, keyed = {}, 0, 0
  for run in string.gmatch(text .. ',', '([^,]*),') do
    local count, flow = string.match(run, FLOW_RUN_PATTERN)
    count = tonumber(count)
    if not (count and count >= 1 and n + count <= BATCH_MAX) then
      bad('flows run ' .. (#runs + 1) .. ' must be "<count>:-" or "<count>:<m>|<a>|<b>", 1 or more tasks and ' ..
        BATCH_MAX .. ' in all, got "' .. string.sub(run, 1, 40) .. '"')
    end
    local spec = false
    if flow ~= '-' then
      spec = flow_spec('task' .. (count > 1 and 's ' .. (n + 1) .. '-' .. (n + count) or ' ' .. (n + 1)), flow)
      keyed = keyed + count
    end
    runs[#runs + 1] = { count = count, spec = spec }
    n = n + count
  end
  return runs, n, keyed
end

-- The flow control of an enqueue's tasks, from its runs (flow_runs) and their keys, one per task with
-- a flow, after the `tasks` tasks in task order (enqueue_key): 1-FLOW_KEY_MAX_BYTES characters of ID_CHARACTERS, a
-- singleton's 1-SINGLETON_KEY_MAX_BYTES (its task's group must be SINGLETON_GROUP_PREFIX .. key:
-- lanes.lua gives that lane a concurrency of 1). The keys are checked together, joined, by one
-- match: the cost per task is a few table reads and one join for its field (a batch of keys is most
-- of the cost flow control adds, docs/flow-control.md). Appends each task's field in the task hash,
-- "!<m>:<key>", to `names` (a field twice when two tasks share it). Returns, by task index, its flow
-- (`spec`: letter, prefix, a, b, name, key_max; one table per run) and its field (`field`), how many
-- fields it appended (`count`), and whether a task is a singleton (`singletons`); nil when no task
-- has flow control.
local function flow_args(runs, tasks, names)
  local spec_of, field_of, keys = {}, {}, {}
  local count, named, i, singletons = 0, #names, 0, false
  for _, run in ipairs(runs) do
    local spec = run.spec
    if spec then
      local prefix, key_max = spec.prefix, spec.key_max
      singletons = singletons or spec.letter == 's'
      for _ = 1, run.count do
        i, count = i + 1, count + 1
        local key = enqueue_key(tasks, count)
        local size = #key
        if size < 1 or size > key_max then
          bad('task ' .. i .. ' ' .. spec.name .. ' key must be 1-' .. key_max .. ' characters of ' .. ID_CHARACTERS)
        end
        local field = prefix .. key
        spec_of[i], field_of[i], keys[count], names[named + count] = spec, field, key, field
      end
    else
      i = i + run.count
    end
  end
  if count == 0 then return nil end
  -- Each key's length is checked above: the characters of them all, joined, are checked at once.
  if not string.find(table.concat(keys), ID_PATTERN) then
    for task = 1, i do -- the slow path: which key it is
      local spec = spec_of[task]
      if spec and not string.find(string.sub(field_of[task], 4), ID_PATTERN) then
        bad('task ' .. task .. ' ' .. spec.name .. ' key must be 1-' .. spec.key_max .. ' characters of ' .. ID_CHARACTERS)
      end
    end
  end
  return { spec = spec_of, field = field_of, count = count, singletons = singletons }
end

-- A dedupe or debounce value: the task holding the key, then its numbers (a dedupe's window end;
-- a debounce's window start and end); nil when absent or unreadable.
local function held_value(text)
  if not text then return nil end
  local id, first, until_ms = string.match(text, FLOW_HELD_PATTERN)
  if not id then return nil end
  return id, tonumber(first), tonumber(until_ms)
end

-- Whether a task waits, never claimed (READY, parked or SCHEDULED, 0 attempts, no slot it must
-- keep), from its state text and body as the task hash holds them: what a singleton replaces.
-- Never raises.
local function singleton_waiting(state_value, body)
  if not state_value then return body ~= nil and body ~= false end -- READY, never claimed
  local state = parse_state(state_value)
  if not state or state.attempts ~= '0' then return false end
  local letter = state.letter
  return (letter == 'R' or letter == 'W' or letter == 'S') and not string.find(state.flags, 'h', 1, true)
end

-- Whether a flow field's value is over at `now`: its last number (its end) is past, or it cannot
-- be read. Never raises.
local function flow_over(text, now)
  local end_ms = tonumber(string.match(text, '(%d+)$') or '')
  return not end_ms or end_ms <= now
end

-- Whether a task's record says it is waiting, never claimed, for its time: SCHEDULED with no
-- attempt and not holding its group (so removing it is all delete.lua would do for it).
local function replaceable(state_value)
  if not state_value then return false end
  local state = parse_state(state_value)
  return state ~= nil and state.letter == 'S' and state.attempts == '0' and state.flags == ''
end

-- Takes each flow-controlled task's decision for enqueue's batch `b`, in the call's order (a later
-- task of a key sees what an earlier one did), from the flow fields' values (read with the tasks'
-- records: b.values, by field, false when absent) and the records of the tasks they hold (one
-- HMGET, none when no field holds a task). Fills b.outcome[i] (the status of a task answered
-- without being written), b.other[i] (the task a dedupe found or a debounce replaced), b.runs[i]
-- and b.run_texts[i] (a debounce's time, a deferred task's), b.replaced (the tasks debounces and
-- singletons replace) and flows.gone (their ids, each with its replacer), and changes b.values
-- (the caller writes each value that changed). Returns how many of the fresh tasks it answered so.
local function flow_decide(b)
  local ids, seen, known, runs, flows, values, now = b.ids, b.seen, b.known, b.runs, b.flows, b.values, b.now
  local outcome, other, run_texts, replaced = b.outcome, b.other, b.run_texts, b.replaced
  local specs, field_of, held_ids = flows.spec, flows.field, {}
  for i = 1, #ids do
    local field = field_of[i]
    local value = field and values[field]
    if value then
      local kind, id = string.byte(field, 2), nil
      if kind == 115 then id = value elseif kind ~= 116 then id = held_value(value) end -- s, t
      if id then held_ids[#held_ids + 1] = id end
    end
  end
  local held = {}
  if #held_ids > 0 then
    local records = record_fields(held_ids, true, true)
    for j, id in ipairs(held_ids) do
      held[id] = {
        id = id, letter = record_letter(records[3 * j - 2], records[3 * j - 1], records[3 * j]), state = records[3 * j - 2],
        body = records[3 * j - 1], reason = records[3 * j],
      }
    end
  end
  -- The debounced and singleton tasks of this call that a later one may replace, by id: their index.
  local pending, answered = {}, 0
  for i = 1, #ids do
    local spec, id = specs[i], ids[i]
    if spec and seen[id] == i then
      local mode, field, a = spec.letter, field_of[i], spec.a
      local value = values[field]
      if mode == 'd' then
        local first_id, until_ms
        if value then first_id, until_ms = held_value(value) end
        if first_id and until_ms > flows.decided then
          -- Within the window (on the store's clock, bounded: decision_time): the task enqueued
          -- first answers for it.
          outcome[i], other[i], answered = 5, first_id, answered + 1
          local same = seen[first_id]
          if same and same < i and not outcome[same] then known[i] = runs[same] > now and 'S' or 'R'
          elseif held[first_id] then known[i] = held[first_id].letter end
        else
          -- A window's end: the same for every task of this flow (now + its ttlMs), printed once.
          values[field] = flow_held_line(id, fmt_once(now + a))
        end
      elseif mode == 't' then
        -- A task due in the past runs now: its period starts now, so a value already over (absent
        -- once the sweep removed it) never stops it. "Now" on the store's clock, bounded
        -- (decision_time): a caller whose clock runs ahead frees no period early.
        local free, run_at = tonumber(value) or 0, runs[i] <= now and flows.decided or runs[i]
        if run_at < free and spec.b == 0 then
          outcome[i], answered = 11, answered + 1
        else
          if run_at < free then
            run_at = free
            runs[i], run_texts[i] = free, fmt(free)
          end
          local next_free = run_at + a
          if next_free > TIME_MAX_MS then
            bad('task ' .. i .. ' throttle: its next free period would start after 9999-12-31')
          end
          values[field] = fmt_once(next_free)
        end
      elseif mode == 'b' then
        -- Debounce: the task holding the key is replaced while it still waits for its time;
        -- once it started (or is gone), or the window is over, a new window begins.
        local held_id, first, until_ms
        if value then held_id, first, until_ms = held_value(value) end
        local start, window_end = now, now + spec.b
        if held_id and until_ms and until_ms > flows.decided then
          if pending[held_id] then
            local earlier = pending[held_id]
            outcome[earlier], known[earlier], answered = 0, 'S', answered + 1
            pending[held_id] = nil
            flows.gone[#flows.gone + 1] = { id = held_id, by = id }
            other[i], start, window_end = held_id, first, until_ms
          elseif held[held_id] and held[held_id].letter == 'S' and replaceable(held[held_id].state) then
            replaced[#replaced + 1] = held[held_id]
            flows.gone[#flows.gone + 1] = { id = held_id, by = id }
            held[held_id] = nil
            other[i], start, window_end = held_id, first, until_ms
          end
        end
        if window_end > TIME_MAX_MS then bad('task ' .. i .. ' debounce: its window would end after 9999-12-31') end
        local run_at = math.min(now + a, window_end)
        runs[i], run_texts[i] = run_at, fmt_once(run_at)
        values[field] = flow_held_line(id, fmt_once(start), fmt_once(window_end))
        if run_at > now then pending[id] = i end
      else
        -- Singleton, one waiting per key: the task the key names is replaced while it waits, never
        -- claimed (an earlier task of this call is never written); one running is left to run, and
        -- its lane's concurrency of 1 keeps the new one waiting until it settles.
        if value then
          local earlier, record = pending[value], held[value]
          if earlier then
            outcome[earlier], known[earlier], answered = 0, runs[earlier] > now and 'S' or 'R', answered + 1
            pending[value] = nil
            flows.gone[#flows.gone + 1] = { id = value, by = id }
            other[i] = value
          elseif record and not record.reason and singleton_waiting(record.state or nil, record.body or nil) then
            replaced[#replaced + 1] = record
            flows.gone[#flows.gone + 1] = { id = value, by = id }
            held[value] = nil
            other[i] = value
          end
        end
        values[field], pending[id] = id, i
      end
    end
  end
  return answered
end
