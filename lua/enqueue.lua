-- enqueue: add a batch of tasks; idempotent by id. A body is written once here and never rewritten.
-- A task may carry flow control by key (docs/flow-control.md): dedupe, debounce, throttle or singleton.
--
-- KEYS the queue's keys (see lib/arguments.lua): task, config, ready, scheduled, seq, and for tasks of a
--   group (or once the queue has groups) grouped, groups, groupwait are used. A flow key's state is a
--   field of the task hash ("!d:<key>", "!b:<key>", "!t:<key>", lib/flow.lua)
-- ARGV[1] now              ms since epoch
-- ARGV[2] callId           1-64 characters of A-Z a-z 0-9 _ . -, the same for every sending of this
--                          call (or "" for none): a repeat after a lost reply is told the wake-up its
--                          first run arranged
-- ARGV[3] flows            "" when no task has flow control (nothing of it is read or written);
--                          else runs covering the tasks in order, joined by ",": "<count>:-" for
--                          count tasks without, "<count>:<m>|<a>|<b>" for count tasks with that
--                          flow, each with a key after the tasks (below)
-- ARGV[4..] per task, 4 each: id, priority (integer -1000..1000, lower runs sooner), runAtMs (ms
--          since epoch; <= now means ready now), body "1|<enqueuedAtMs>|<type>|<group>|<payload>"
--          (the library builds it; type 1-64 and group 0-128 characters of A-Z a-z 0-9 _ . -)
-- then one key per task with a flow, in task order (1-128 characters of A-Z a-z 0-9 _ . - : @). A
--          flow's m is its mode: d dedupe (a ttlMs, b 0), b debounce (delayMs, maxWaitMs: the task's
--          runAtMs is replaced by min(now + delayMs, the window's end)), t throttle (perMs, and 1 to
--          defer or 0 to drop a task whose key's period is taken), s singleton (0, 0; its key 1-124
--          characters, its task's group "@@s:<key>": one at a time in its lane, and a new one
--          replaces the one waiting)
-- Reads config: maxPayloadBytes (the payload part of a body is capped by it), nextDue, wake, paused
--   (a paused queue asks for no wake-up), fair (the queue's tasks take fair turns: its first task
--   with a group sets it), and with strictTypes = 1 the policy p:<type> or the mark a:<type> of
--   each type in the batch (a type with neither is refused).
-- Returns: per task, 3 each: status, state, other; then one more: the wake-ups to send, "" when
--   none is needed: "<ms>" for the caller's wake queue, then ",<ms> <url>" for another deployment's
--   of a shared queue (wake_reply; docs/wake-ups.md: the caller sends them, the library's producer
--   helper does)
--   status 0  enqueued  (state "R" ready or "S" scheduled; other: the id of the task a debounce
--             or a singleton replaced, or "")
--   status 5  duplicate (the id is already known, or its dedupe key holds a task of the window:
--             other is that task's id; state is the known task's state, "C" if quarantined, "" when
--             it is gone; nothing changed)
--   status 11 throttled (its throttle key's period is taken and it asked to be dropped: nothing
--             was written; state "")
-- Errors: LEASEQ_BAD_ARGUMENT when any argument is malformed, LEASEQ_FORMAT when the queue is in
--   another storage format; nothing is written then: every check, and every read of what exists
--   (the flow fields and the tasks they hold too), comes before the first write (INCRBY of seq).
-- Uses: K, apply, arrange_wakes, as_time, bad, config_int, decision_time, declared_types
-- Uses: drop_field, enqueue_args, enqueue_item, fair_turn, flow_args, flow_held_line, flow_over
-- Uses: flow_runs, fmt, fmt_once, group_arg, group_policy, guard, held_value, id_arg, int_arg
-- Uses: int_text, is_id, lane_add, lane_of, lane_remove, lane_touch, lanes, lanes_flush, lanes_load
-- Uses: name_arg, new_state, new_writes, note_due, parked_gone, parse_body, parse_state, put
-- Uses: put_state, read_config_fields, read_many, record_fields, replaceable, replaced_line
-- Uses: singleton_waiting, stamp_format, start_fair, time_arg, type_scope, zadd, zrem

-- What a task's fields say it is: the letter of its state ("R" for a body alone, never claimed;
-- "C" quarantined), or nil when the id is unknown.
local function letter_of(state, body, reason)
  if reason then return 'C' end
  if state then return string.sub(state, 1, 1) end
  if body then return string.byte(body, 1) == BODY_FORMAT_BYTE and 'R' or string.sub(body, 1, 1) end
  return nil
end

-- Takes each flow-controlled task's decision, in the call's order (a later task of a key sees what
-- an earlier one did), from the flow fields' values (read with the tasks' records: `values`, by
-- field, false when absent) and the records of the tasks they hold (one HMGET, none when no field
-- holds a task). Fills outcome[i] (the status of a task answered without being written), other[i]
-- (the task a dedupe found or a debounce replaced), runs[i] and run_texts[i] (a debounce's time, a
-- deferred task's) and replaced (the tasks debounces and singletons replace), and changes `values`
-- (the caller writes each value that changed). Returns how many of the fresh tasks it answered so.
local function flow_decide(ids, seen, known, runs, flows, values, now, outcome, other, run_texts, replaced)
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
        id = id, letter = letter_of(records[3 * j - 2], records[3 * j - 1], records[3 * j]), state = records[3 * j - 2],
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

return guard('enqueue', function()
  local now, now_text, call, flow_text = enqueue_args()
  -- With flow control, the runs of flows say how many tasks there are, and one key follows the
  -- tasks per task with a flow.
  local flow_spans, n, keyed = flow_runs(flow_text)
  local values_given = #ARGV - 3 - keyed
  if values_given < 4 or values_given % 4 ~= 0 or (n and values_given ~= 4 * n) then
    bad('expected groups of 4 arguments from ARGV[4]' .. (flow_spans and (' for ' .. n .. ' tasks and ' .. keyed .. ' flow keys') or '') ..
      ', got ' .. (#ARGV - 3) .. ' arguments')
  end
  n = values_given / 4
  if n > BATCH_MAX then bad('at most ' .. BATCH_MAX .. ' items per call, got ' .. n) end

  -- Checked before anything is written; a message is built only for the task that fails.
  local ids, fields, ranks, runs, types, groups_of, sizes = {}, {}, {}, {}, {}, {}, {}
  local bodies, run_given = {}, {} -- as given: written as they are
  local config_names, type_seen = { 'maxPayloadBytes', 'nextDue', 'wake', 'active', 'strictTypes', 'paused', 'fair',
    'skewMs', 'callerClock', 'deps', 'doneRetentionMs' }, {}
  local any_group = false
  for i = 1, n do
    local id, priority_text, run_text, body = enqueue_item(i)
    local priority = tonumber(priority_text)
    if not is_id(id) then id_arg('task ' .. i .. ' id', id) end
    if not (priority and priority % 1 == 0 and priority >= PRIORITY_MIN and priority <= PRIORITY_MAX) then
      int_arg('task ' .. i .. ' priority', priority_text, PRIORITY_MIN, PRIORITY_MAX)
    end
    local run_at = as_time(run_text)
    if not run_at then time_arg('task ' .. i .. ' runAtMs', run_text) end
    local enqueued, task_type, group, payload_at = string.match(body, BODY_PATTERN)
    if not enqueued or #enqueued > DIGITS_ENQUEUED then
      bad('task ' .. i .. ' body must be "1|<enqueuedAtMs>|<type>|<group>|<payload>"')
    end
    if #task_type > TYPE_MAX_BYTES then name_arg('task ' .. i .. ' type', task_type, TYPE_MAX_BYTES) end
    if #group > GROUP_MAX_BYTES then group_arg('task ' .. i .. ' group', group) end
    if not type_seen[task_type] then
      type_seen[task_type] = true
      config_names[#config_names + 1] = 'p:' .. task_type
      config_names[#config_names + 1] = 'a:' .. task_type
    end
    if group ~= '' then any_group = true end
    ids[i], ranks[i], runs[i], types[i], groups_of[i] = id, priority, run_at, task_type, group
    bodies[i], run_given[i] = body, run_text
    sizes[i] = #body - payload_at + 1
    fields[#fields + 1] = id .. ':s'
    fields[#fields + 1] = id
    fields[#fields + 1] = id .. ':x'
  end

  local config = read_config_fields(config_names)
  local max_payload = config_int(config, 'maxPayloadBytes', DEFAULT_MAX_PAYLOAD_BYTES)
  for i = 1, n do
    if sizes[i] > max_payload then
      bad('task ' .. i .. ' payload is ' .. sizes[i] .. ' bytes; the cap is ' .. max_payload)
    end
    if config.strictTypes == '1' and not config['p:' .. types[i]] and not config['a:' .. types[i]] then
      bad('task ' .. i .. ' type "' .. types[i] .. '" is not declared for this queue; its types: ' .. declared_types())
    end
  end

  -- Flow control's entries, checked; their fields are read with the tasks' records.
  -- Flow control's fields go after the tasks' in the HMGET, from fields[3n + 1].
  local flows = flow_spans and flow_args(flow_spans, n, fields) or nil
  -- A singleton's group is its key's (SINGLETON_GROUP_PREFIX .. key), and no other task's.
  if any_group then
    local spec_of = flows and flows.spec or {}
    for i = 1, n do
      local group = groups_of[i]
      local reserved = string.sub(group, 1, #SINGLETON_GROUP_PREFIX) == SINGLETON_GROUP_PREFIX
      if spec_of[i] and spec_of[i].letter == 's' then
        if group ~= SINGLETON_GROUP_PREFIX .. string.sub(flows.field[i], 4) then
          bad('task ' .. i .. ' singleton: its group must be "' .. SINGLETON_GROUP_PREFIX .. '<key>"')
        end
      elseif reserved then
        bad('task ' .. i .. ' group "' .. SINGLETON_GROUP_PREFIX .. '..." is a singleton\'s; it needs a singleton flow entry')
      end
    end
  end
  if flows and flows.singletons and not any_group then
    for i = 1, n do
      if flows.spec[i] and flows.spec[i].letter == 's' then bad('task ' .. i .. ' singleton: its group must be "' .. SINGLETON_GROUP_PREFIX .. '<key>"') end
    end
  end

  -- A task a debounce or a singleton replaced is remembered (REPLACED_PREFIX .. id, by the flow
  -- fields): sent again (an SQS message delivered twice, a call repeated), it is that id, not a new
  -- task bringing back a payload a later one replaced. Read with the records, for those tasks only.
  local tomb_at = {}
  -- A window's end, and a replaced id's memory, on the store's clock, bounded (a fast caller ends none early).
  local decided = flows and decision_time(config, now)
  if flows then
    for i = 1, n do
      local spec = flows.spec[i]
      if spec and (spec.letter == 'b' or spec.letter == 's') then
        fields[#fields + 1] = REPLACED_PREFIX .. ids[i]
        tomb_at[i] = #fields
      end
    end
  end

  -- What exists already: a state (any state), or a body alone (READY, never claimed).
  local existing = read_many('HMGET', K.task, fields)
  local seen, fresh, known, other = {}, 0, {}, {}
  for i, id in ipairs(ids) do
    known[i] = letter_of(existing[3 * i - 2], existing[3 * i - 1], existing[3 * i])
    local tomb = tomb_at[i] and existing[tomb_at[i]]
    if not known[i] and tomb and not flow_over(tomb, decided) then
      known[i], other[i] = '', string.match(tomb, REPLACED_PATTERN) -- a duplicate: replaced, by that task
    end
    if not known[i] and not seen[id] then
      seen[id] = i
      fresh = fresh + 1
    end
  end

  -- Flow control: every decision is taken here, before the first write (docs/flow-control.md).
  local outcome, run_texts, replaced, values = {}, {}, {}, {}
  if flows then
    for j = 3 * n + 1, 3 * n + flows.count do values[fields[j]] = existing[j] end
    flows.gone = {} -- the ids replaced: { id, by }
    flows.decided = decided
    fresh = fresh - flow_decide(ids, seen, known, runs, flows, values, now, outcome, other, run_texts, replaced)
  end

  local result = {}
  local last_seq = fresh > 0 and redis.call('INCRBY', K.seq, fresh) or 0
  local seq = last_seq - fresh
  -- A new queue's format mark first: its long text makes the task hash a hash table before the
  -- batch's fields go in (a small hash is a listpack, each field found by a scan of them all).
  stamp_format(config)
  -- The first task with a group: the queue's tasks take fair turns from now on.
  if any_group and fresh > 0 and config.fair ~= '1' then start_fair(config) end
  local fair = config.fair == '1'
  local writes = new_writes()
  -- When work falls due, per wake-up scope (the deployment running its type on a shared queue:
  -- docs/wake-ups.md; else the queue's own, "").
  local earliest, dues, shared = nil, {}, config.deps ~= nil
  local lane_names, lanes_named = {}, {}
  for i = 1, n do
    if groups_of[i] ~= '' then
      lane_names[i] = lane_of(types[i], groups_of[i])
      lanes_named[#lanes_named + 1] = lane_names[i]
    elseif fair then
      lane_names[i] = UNGROUPED
    end
  end
  if fair then lanes_named[#lanes_named + 1] = UNGROUPED end
  lanes_load(lanes_named)
  if flows then
    -- Each value that changed (a field twice when two tasks share it: the same value).
    local list = writes.fields
    local k = #list
    for j = 3 * n + 1, 3 * n + flows.count do
      local field = fields[j]
      local value = values[field]
      if value ~= existing[j] then
        list[k + 1], list[k + 2], k = field, value, k + 2
      end
    end
  end
  -- The tasks a debounce or a singleton replaced leave as delete takes a waiting task out.
  local left_lanes = {}
  for _, gone in ipairs(replaced) do
    local id = gone.id
    drop_field(writes, id)
    drop_field(writes, id .. ':s')
    if gone.letter == 'S' then
      zrem(writes, K.scheduled, id)
    else
      local state = gone.state and parse_state(gone.state)
      if not state then
        local info = parse_body(gone.body)
        state = info and new_state('R', '0', '0', info.type, info.group)
      end
      if gone.letter == 'W' and state then zrem(writes, K.grouped, parked_gone(id, state)) else zrem(writes, K.ready, id) end
      if state and state.group ~= '' then left_lanes[#left_lanes + 1] = { id = id, state = state } end
    end
  end
  -- Each id replaced is remembered, as a finished task's id is, for the DONE retention.
  if flows then
    for _, gone in ipairs(flows.gone) do
      local until_ms = flows.decided + config_int(config, 'doneRetentionMs', DEFAULT_DONE_RETENTION_MS)
      put(writes, REPLACED_PREFIX .. gone.id, replaced_line(gone.by, fmt(until_ms)))
    end
  end
  for i, id in ipairs(ids) do
    if outcome[i] then
      -- Answered by its flow control: a dedupe's duplicate, a throttled task, or one a later
      -- task of this call replaced before it was written (answered as enqueued, as two calls would).
      result[#result + 1] = outcome[i]
    elseif seen[id] == i then
      seq = seq + 1
      local rank = (ranks[i] - PRIORITY_MIN) * RANK_SEQ_SPAN + seq
      local run_at = runs[i]
      put(writes, id, bodies[i])
      if run_at > now then
        put_state(writes, id, new_state('S', run_texts[i] or int_text(run_given[i], run_at), fmt(rank), types[i], groups_of[i]))
        zadd(writes, K.scheduled, run_at, id)
        earliest = math.min(earliest or run_at, run_at)
        local scope = shared and type_scope(config, types[i]) or ''
        dues[scope] = math.min(dues[scope] or run_at, run_at)
        known[i] = 'S'
      elseif lane_names[i] then
        -- Into the ready set at its group's next turn. Inline: lane_add's common case (the group
        -- has no parked task and is not ordered; tasks without a group, once the queue takes fair
        -- turns), where the task needs no state: like an ungrouped one, its rank is its score, here
        -- its priority and turn (docs/groups.md).
        local lane = lane_names[i]
        local record = lanes[lane]
        if lane ~= UNGROUPED and (record.parked > 0 or group_policy(config, types[i], lane).ordered) then
          lane_add(writes, id, new_state('R', now_text, fmt(rank), types[i], groups_of[i]), config, now)
        else
          local band = ranks[i] - PRIORITY_MIN
          if lane ~= UNGROUPED then record.ready = record.ready + 1 end
          lane_touch(lane, record)
          zadd(writes, K.ready, band * RANK_SEQ_SPAN + fair_turn(record, band, last_seq - fresh), id)
        end
        known[i] = 'R'
        dues[shared and type_scope(config, types[i]) or ''] = now
      else
        zadd(writes, K.ready, rank, id)
        known[i] = 'R'
        dues[shared and type_scope(config, types[i]) or ''] = now
      end
      result[#result + 1] = 0
    else
      if not known[i] then -- the same id twice in one call: answered as the first was
        known[i], other[i] = known[seen[id]], other[seen[id]]
        result[#result + 1] = outcome[seen[id]] or 5
      else
        result[#result + 1] = 5
      end
    end
    result[#result + 1] = known[i] or ''
    result[#result + 1] = other[i] or ''
  end
  apply(writes)
  for _, item in ipairs(left_lanes) do lane_remove(item.id, item.state, config, nil) end
  lanes_flush(now)
  if earliest then note_due(config, earliest) end
  if config.paused == '1' then dues = {} end
  result[#result + 1] = arrange_wakes(config, now, dues, WAKE_HORIZON_MAX_MS, call ~= '' and call or nil, call ~= '', '')
  return result
end)
