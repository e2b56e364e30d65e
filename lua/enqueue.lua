-- enqueue: add a batch of tasks; idempotent by id. A body is written once here and never rewritten.
--
-- KEYS the queue's keys (see lib/arguments.lua): task, config, ready, scheduled, seq, and for tasks of a
--   group (or once the queue has groups) grouped, groups, groupwait are used
-- ARGV[1] now              ms since epoch
-- ARGV[2] callId           1-64 characters of A-Z a-z 0-9 _ . -, the same for every sending of this
--                          call (or "" for none): a repeat after a lost reply is told the wake-up its
--                          first run arranged
-- ARGV[3..] per task, 4 each: id, priority (integer -1000..1000, lower runs sooner), runAtMs (ms
--          since epoch; <= now means ready now), body "1|<enqueuedAtMs>|<type>|<group>|<payload>"
--          (the library builds it; type 1-64 and group 0-128 characters of A-Z a-z 0-9 _ . -)
-- Reads config: maxPayloadBytes (the payload part of a body is capped by it), nextDue, wake, paused
--   (a paused queue asks for no wake-up), fair (the queue's tasks take fair turns: its first task
--   with a group sets it), and with strictTypes = 1 the policy p:<type> or the mark a:<type> of
--   each type in the batch (a type with neither is refused).
-- Returns: per task, 2 each: status, state; then one more: the time (ms) a wake-up must be sent
--   for, "" when none is needed (docs/wake-ups.md: the caller sends it, the library's producer
--   helper does)
--   status 0 enqueued  (state "R" ready or "S" scheduled)
--   status 5 duplicate (the id is already known; state is its current state, "C" if quarantined;
--            nothing changed)
-- Errors: LEASEQ_BAD_ARGUMENT when any argument is malformed, LEASEQ_FORMAT when the queue is in
--   another storage format; nothing is written then: every check, and every read of what exists,
--   comes before the first write (INCRBY of seq).
-- Uses: K, apply, as_time, bad, config_int, declared_types, enqueue_args, fair_turn, fmt, group_arg
-- Uses: group_policy, guard, id_arg, int_arg, int_text, is_id, item_count, lane_add, lane_of
-- Uses: lane_touch, lanes, lanes_flush, lanes_load, name_arg, need_wake, new_state, new_writes
-- Uses: note_due, put, put_state, read_config_fields, read_many, repeated_wake, start_fair
-- Uses: time_arg, upgrade_format, zadd

return guard('enqueue', function()
  local now, now_text, call = enqueue_args()
  local n = item_count(3, 4, BATCH_MAX)

  -- Checked before anything is written; a message is built only for the task that fails.
  local ids, fields, ranks, runs, types, groups_of, sizes = {}, {}, {}, {}, {}, {}, {}
  local config_names, type_seen = { 'maxPayloadBytes', 'nextDue', 'wake', 'strictTypes', 'paused', 'fair' }, {}
  local any_group = false
  for i = 1, n do
    local base = 3 + (i - 1) * 4
    local id, priority, body = ARGV[base], tonumber(ARGV[base + 1]), ARGV[base + 3]
    if not is_id(id) then id_arg('task ' .. i .. ' id', id) end
    if not (priority and priority % 1 == 0 and priority >= PRIORITY_MIN and priority <= PRIORITY_MAX) then
      int_arg('task ' .. i .. ' priority', ARGV[base + 1], PRIORITY_MIN, PRIORITY_MAX)
    end
    local run_at = as_time(ARGV[base + 2])
    if not run_at then time_arg('task ' .. i .. ' runAtMs', ARGV[base + 2]) end
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

  -- What exists already: a state (any state), or a body alone (READY, never claimed).
  local existing = read_many('HMGET', K.task, fields)
  local seen, fresh, known = {}, 0, {}
  for i, id in ipairs(ids) do
    local state, body, reason = existing[3 * i - 2], existing[3 * i - 1], existing[3 * i]
    if reason then known[i] = 'C'
    elseif state then known[i] = string.sub(state, 1, 1)
    elseif body then known[i] = string.byte(body, 1) == BODY_FORMAT_BYTE and 'R' or string.sub(body, 1, 1) end
    if not known[i] and not seen[id] then
      seen[id] = i
      fresh = fresh + 1
    end
  end

  local result = {}
  local last_seq = fresh > 0 and redis.call('INCRBY', K.seq, fresh) or 0
  local seq = last_seq - fresh
  -- The first task with a group: the queue's tasks take fair turns from now on.
  if any_group and fresh > 0 and config.fair ~= '1' then start_fair(config) end
  local fair = config.fair == '1'
  local writes = new_writes()
  local earliest, any_ready = nil, false
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
  for i, id in ipairs(ids) do
    if seen[id] == i then
      local base = 3 + (i - 1) * 4
      seq = seq + 1
      local rank = (ranks[i] - PRIORITY_MIN) * RANK_SEQ_SPAN + seq
      local run_at = runs[i]
      put(writes, id, ARGV[base + 3])
      if run_at > now then
        put_state(writes, id, new_state('S', int_text(ARGV[base + 2], run_at), fmt(rank), types[i], groups_of[i]))
        zadd(writes, K.scheduled, run_at, id)
        earliest = math.min(earliest or run_at, run_at)
        known[i] = 'S'
      elseif lane_names[i] then
        -- Into the ready set at its group's next turn. Inline: lane_add's common case (the group
        -- has no parked task and is not ordered; tasks without a group, once the queue takes fair
        -- turns), where the task needs no state: like an ungrouped one, its rank is its score, here
        -- its priority and turn (docs/groups.md).
        local lane = lane_names[i]
        local record = lanes[lane]
        if lane ~= UNGROUPED and (record.parked > 0 or group_policy(config, types[i]).ordered) then
          lane_add(writes, id, new_state('R', now_text, fmt(rank), types[i], groups_of[i]), config, now)
        else
          local band = ranks[i] - PRIORITY_MIN
          if lane ~= UNGROUPED then record.ready = record.ready + 1 end
          lane_touch(lane, record)
          zadd(writes, K.ready, band * RANK_SEQ_SPAN + fair_turn(record, band, last_seq - fresh), id)
        end
        known[i] = 'R'
        any_ready = true
      else
        zadd(writes, K.ready, rank, id)
        known[i] = 'R'
        any_ready = true
      end
      result[#result + 1] = 0
    else
      if not known[i] then known[i] = known[seen[id]] end -- the same id twice in one call
      result[#result + 1] = 5
    end
    result[#result + 1] = known[i]
  end
  apply(writes)
  upgrade_format(config)
  lanes_flush(now)
  if earliest then note_due(config, earliest) end
  local wake_at = nil
  if (any_ready or earliest) and config.paused ~= '1' then
    wake_at = need_wake(config, now, any_ready and now or earliest, WAKE_HORIZON_MAX_MS, call ~= '' and call or nil)
  end
  if not wake_at and call ~= '' then wake_at = repeated_wake(config, now, call) end
  result[#result + 1] = wake_at and fmt(wake_at) or ''
  return result
end)
