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
--          since epoch; <= now means ready now), body "1|<enqueuedAtMs>|<type>|<group>|<trace>|<payload>"
--          (the library builds it; type 1-64 characters of A-Z a-z 0-9 _ . -, group 0-128 of those
--          and : @, trace empty or a W3C traceparent; a body of the layout without the trace, as
--          leaseq wrote it before, is taken too: lib/records.lua parse_body)
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
-- Uses: K, apply, arrange_wakes, as_time, bad, body_trace, config_int, decision_time
-- Uses: declared_types, drop_field, earliest_due, enqueue_args, enqueue_item, fair_turn, flow_args, flow_decide
-- Uses: flow_over, flow_runs, fmt, group_arg, group_policy, guard, id_arg, int_arg, int_text, is_id
-- Uses: lane_add, lane_of, lane_remove, lane_touch, lanes, lanes_flush, lanes_load, lanes_verify
-- Uses: name_arg, new_state, new_writes, note_due, parked_gone, parse_body, parse_state, put
-- Uses: put_state, read_config_fields, read_many, record_letter, replaced_line, set_next_due, stamp_format
-- Uses: start_fair, time_arg, type_scope, zadd, zrem

-- The batch: every task's arguments, checked, before the config is read. Fills b with the tasks'
-- ids, ranks, runs, types, groups, bodies and payload sizes, the task hash fields to read (state,
-- and body per task) and the config fields this batch needs.
local function read_tasks(b)
  local now, now_text, call, flow_text = enqueue_args()
  b.now, b.now_text, b.call = now, now_text, call
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
  b.n, b.flow_spans = n, flow_spans

  -- A message is built only for the task that fails.
  local ids, fields, ranks, runs, types, groups_of, sizes = {}, {}, {}, {}, {}, {}, {}
  local bodies, run_given = {}, {} -- as given: written as they are
  local config_names, type_seen = { 'maxPayloadBytes', 'nextDue', 'wake', 'active', 'strictTypes', 'paused', 'fair',
    'skewMs', 'callerClock', 'deps', 'doneRetentionMs' }, {}
  local any_group = false
  for i = 1, n do
    local id, priority_text, run_text, body = enqueue_item(i)
    -- The common values without parsing them: priority 0, a run at the call's now.
    local priority = priority_text == '0' and 0 or tonumber(priority_text)
    if not is_id(id) then id_arg('task ' .. i .. ' id', id) end
    if not (priority and priority % 1 == 0 and priority >= PRIORITY_MIN and priority <= PRIORITY_MAX) then
      int_arg('task ' .. i .. ' priority', priority_text, PRIORITY_MIN, PRIORITY_MAX)
    end
    local run_at = run_text == now_text and now or as_time(run_text)
    if not run_at then time_arg('task ' .. i .. ' runAtMs', run_text) end
    -- Its prefix with one match (body_prefix inline: the common body is untraced); body_trace reads
    -- past the group only when what follows could start a trace ("|" for an empty one, "0" for "00-").
    local enqueued, task_type, group, payload_at = string.match(body, LEGACY_BODY_PATTERN)
    local first = payload_at and string.byte(body, payload_at)
    if first == 124 or first == 48 then payload_at = select(2, body_trace(body, payload_at)) end
    if not enqueued or #enqueued > DIGITS_ENQUEUED then
      bad('task ' .. i .. ' body must be "1|<enqueuedAtMs>|<type>|<group>|<trace>|<payload>"')
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
    -- Its state and body: a quarantined record's state is marked (QUARANTINED, lib/writes.lua
    -- quarantine), so its `:x` need not be read to tell it apart.
    fields[#fields + 1] = id .. ':s'
    fields[#fields + 1] = id
  end
  b.ids, b.fields, b.ranks, b.runs, b.types, b.groups_of, b.sizes = ids, fields, ranks, runs, types, groups_of, sizes
  b.bodies, b.run_given, b.config_names, b.any_group = bodies, run_given, config_names, any_group
end

-- The config (one HMGET), and what it refuses: a payload over the queue's cap, a type it does not
-- declare (strictTypes).
local function read_config_for(b)
  local config = read_config_fields(b.config_names)
  local max_payload = config_int(config, 'maxPayloadBytes', DEFAULT_MAX_PAYLOAD_BYTES)
  local sizes, types = b.sizes, b.types
  for i = 1, b.n do
    if sizes[i] > max_payload then
      bad('task ' .. i .. ' payload is ' .. sizes[i] .. ' bytes; the cap is ' .. max_payload)
    end
    if config.strictTypes == '1' and not config['p:' .. types[i]] and not config['a:' .. types[i]] then
      bad('task ' .. i .. ' type "' .. types[i] .. '" is not declared for this queue; its types: ' .. declared_types())
    end
  end
  b.config = config
end

-- Flow control's entries, checked (b.flows, nil without any); their fields go after the tasks' in
-- b.fields, to be read with the tasks' records. A task a debounce or a singleton replaced is
-- remembered (REPLACED_PREFIX .. id, by the flow fields): sent again (an SQS message delivered
-- twice, a call repeated), it is that id, not a new task bringing back a payload a later one
-- replaced. Its field is read with the records, for those tasks only (b.tomb_at).
local function read_flows(b)
  local n, fields, groups_of = b.n, b.fields, b.groups_of
  local flows = b.flow_spans and flow_args(b.flow_spans, n, fields) or nil
  -- A singleton's group is its key's (SINGLETON_GROUP_PREFIX .. key), and no other task's.
  if b.any_group then
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
  if flows and flows.singletons and not b.any_group then
    for i = 1, n do
      if flows.spec[i] and flows.spec[i].letter == 's' then bad('task ' .. i .. ' singleton: its group must be "' .. SINGLETON_GROUP_PREFIX .. '<key>"') end
    end
  end
  local tomb_at = {}
  if flows then
    -- A window's end, and a replaced id's memory, on the store's clock, bounded (a fast caller ends none early).
    flows.decided = decision_time(b.config, b.now)
    for i = 1, n do
      local spec = flows.spec[i]
      if spec and (spec.letter == 'b' or spec.letter == 's') then
        fields[#fields + 1] = REPLACED_PREFIX .. b.ids[i]
        tomb_at[i] = #fields
      end
    end
  end
  b.flows, b.tomb_at = flows, tomb_at
end

-- What exists already (one HMGET): a state (any state), or a body alone (READY, never claimed).
-- Fills b.known (each task's letter, nil when new), b.seen (each new id's first index) and b.fresh.
local function read_existing(b)
  local ids, tomb_at, flows = b.ids, b.tomb_at, b.flows
  local existing = read_many('HMGET', K.task, b.fields)
  local seen, fresh, known, other = {}, 0, {}, {}
  for i, id in ipairs(ids) do
    known[i] = record_letter(existing[2 * i - 1], existing[2 * i], nil)
    local tomb = tomb_at[i] and existing[tomb_at[i]]
    if not known[i] and tomb and not flow_over(tomb, flows.decided) then
      known[i], other[i] = '', string.match(tomb, REPLACED_PATTERN) -- a duplicate: replaced, by that task
    end
    if not known[i] and not seen[id] then
      seen[id] = i
      fresh = fresh + 1
    end
  end
  b.existing, b.seen, b.fresh, b.known, b.other = existing, seen, fresh, known, other
end

-- Flow control: every decision is taken here, before the first write (docs/flow-control.md).
local function decide_flows(b)
  b.outcome, b.run_texts, b.replaced, b.values = {}, {}, {}, {}
  local flows = b.flows
  if not flows then return end
  local n, fields, existing, values = b.n, b.fields, b.existing, b.values
  for j = 2 * n + 1, 2 * n + flows.count do values[fields[j]] = existing[j] end
  flows.gone = {} -- the ids replaced: { id, by }
  b.fresh = b.fresh - flow_decide(b)
end

-- The lane of each task that takes turns (b.lane_names), their records loaded (one HMGET), and the
-- ordered ones checked (one HMGET).
local function load_lanes(b)
  local fair = b.config.fair == '1'
  local lane_names, lanes_named, types, groups_of = {}, {}, b.types, b.groups_of
  for i = 1, b.n do
    if groups_of[i] ~= '' then
      lane_names[i] = lane_of(types[i], groups_of[i])
      lanes_named[#lanes_named + 1] = lane_names[i]
    elseif fair then
      lane_names[i] = UNGROUPED
    end
  end
  if fair then lanes_named[#lanes_named + 1] = UNGROUPED end
  lanes_load(lanes_named)
  b.lane_names = lane_names
  -- The ordered lanes' slots checked for the batch with one HMGET (lane_add would check each).
  local ordered = {}
  for i = 1, b.n do
    local lane = lane_names[i]
    if lane and lane ~= UNGROUPED and group_policy(b.config, types[i], lane).ordered then ordered[#ordered + 1] = lane end
  end
  if #ordered > 0 then lanes_verify(ordered) end
end

-- The flow values that changed (a field twice when two tasks share it: the same value), and the
-- tasks a debounce or a singleton replaced: they leave as delete takes a waiting task out, and each
-- id is remembered, as a finished task's id is, for the DONE retention. Returns the replaced tasks
-- that leave a lane (lane_remove after the writes).
local function write_flows(b, writes)
  local flows, left_lanes = b.flows, {}
  if not flows then return left_lanes end
  local n, fields, values, existing = b.n, b.fields, b.values, b.existing
  local list = writes.fields
  local k = #list
  for j = 2 * n + 1, 2 * n + flows.count do
    local field = fields[j]
    local value = values[field]
    if value ~= existing[j] then
      list[k + 1], list[k + 2], k = field, value, k + 2
    end
  end
  for _, gone in ipairs(b.replaced) do
    local id = gone.id
    drop_field(writes, id)
    drop_field(writes, id .. ':s')
    if gone.letter == 'S' then
      zrem(writes, K.scheduled, id)
      b.unscheduled = true -- config nextDue may name its time: set again after the writes
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
  for _, gone in ipairs(flows.gone) do
    local until_ms = flows.decided + config_int(b.config, 'doneRetentionMs', DEFAULT_DONE_RETENTION_MS)
    put(writes, REPLACED_PREFIX .. gone.id, replaced_line(gone.by, fmt(until_ms)))
  end
  return left_lanes
end

-- Writes each new task (its body; its state when it needs one) into its set, and answers every
-- task: status, state, other. Fills b.earliest (the first SCHEDULED due time) and b.dues (when work
-- falls due, per wake-up scope: the deployment running its type on a shared queue, docs/wake-ups.md;
-- else the queue's own, "").
local function write_tasks(b, writes, last_seq)
  local ids, ranks, runs, types, groups_of, bodies = b.ids, b.ranks, b.runs, b.types, b.groups_of, b.bodies
  local known, other, outcome, seen, run_texts, run_given = b.known, b.other, b.outcome, b.seen, b.run_texts, b.run_given
  local config, now, now_text, lane_names = b.config, b.now, b.now_text, b.lane_names
  local shared = config.deps ~= nil
  local earliest, dues, result = nil, {}, {}
  local seq = last_seq - b.fresh
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
          lane_add(writes, id, new_state('R', now_text, fmt(rank), types[i], groups_of[i]), config, now, true)
        else
          local band = ranks[i] - PRIORITY_MIN
          if lane ~= UNGROUPED then record.ready = record.ready + 1 end
          lane_touch(lane, record)
          zadd(writes, K.ready, band * RANK_SEQ_SPAN + fair_turn(record, band, last_seq - b.fresh), id)
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
  b.earliest, b.dues = earliest, dues
  return result
end

-- The steps: read and check everything, decide the flows, then write (the first write is INCRBY
-- of seq: nothing before it writes, so an error leaves the queue as it was), then arrange the
-- wake-ups the new work needs.
return guard('enqueue', function()
  local b = {}
  read_tasks(b)
  read_config_for(b)
  read_flows(b)
  read_existing(b)
  decide_flows(b)

  local config, fresh, now = b.config, b.fresh, b.now
  local last_seq = fresh > 0 and redis.call('INCRBY', K.seq, fresh) or 0
  -- A new queue's format mark first: its long text makes the task hash a hash table before the
  -- batch's fields go in (a small hash is a listpack, each field found by a scan of them all).
  stamp_format(config)
  -- The first task with a group: the queue's tasks take fair turns from now on.
  if b.any_group and fresh > 0 and config.fair ~= '1' then start_fair(config) end
  load_lanes(b)
  local writes = new_writes()
  local left_lanes = write_flows(b, writes)
  local result = write_tasks(b, writes, last_seq)
  apply(writes)
  for _, item in ipairs(left_lanes) do lane_remove(item.id, item.state, config, nil) end
  lanes_flush(now)

  -- A debounce or a singleton took a SCHEDULED task's place: nextDue is what is due now (a
  -- hand-off or a resume arranges wake-ups from it), else the batch's earliest lowers it.
  if b.unscheduled then set_next_due(config, earliest_due())
  elseif b.earliest then note_due(config, b.earliest) end
  local dues = config.paused == '1' and {} or b.dues
  result[#result + 1] = arrange_wakes(config, now, dues, WAKE_HORIZON_MAX_MS, b.call ~= '' and b.call or nil, b.call ~= '', '')
  return result
end)
