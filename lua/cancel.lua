-- cancel: stop tasks from running (again): a READY, SCHEDULED or LEASED task ends FAILED with the
-- error "cancelled", its lease generation moved on, so a worker still running it is answered
-- stale_token when it settles, and nothing it does changes the task. `requeue` brings it back,
-- `delete` removes it. What followed the task follows it out: its group's slot and count, an
-- ordered queue's hold for it, a wake-up arranged only for it.
--
-- KEYS the queue's keys (see lib/arguments.lua): all of them
-- ARGV[1] now   ms since epoch
-- ARGV[2..] ids, 1..1000 of them (an id named twice is cancelled once: its second mention answers
--   what a second call would, 9 for a task it cancelled, 6 for a record it quarantined)
-- Returns: per id, 1 each: status 0 cancelled, 2 already DONE, 3 unknown id, 9 already FAILED,
--   6 corrupt (its record cannot be read: it was moved to the corrupt set, out of every other)
-- Errors: LEASEQ_BAD_ARGUMENT when any argument is malformed, LEASEQ_FORMAT when the queue is in
--   another storage format; nothing is written then: the arguments, the config and every record
--   are read and checked before the first write.
-- Uses: K, after_quarantine, apply, cancel_args, cancel_item, cancel_items, forget_marks, guard
-- Uses: id_arg, lane_of, lane_release, lane_remove, lanes_flush, load, new_state, new_writes
-- Uses: parked_gone, plus, put_state, quarantine, read_config_fields, zadd, zrem

local CANCELLED = 'cancelled'

return guard('cancel', function()
  local now, now_text = cancel_args()
  local ids = {}
  for i = 1, cancel_items(BATCH_MAX) do ids[i] = id_arg('id ' .. i, cancel_item(i)) end
  local config = read_config_fields({ 'wake', 'nextDue', 'ordered', 'hold', 'fair', 'deps' })
  local tasks = load(ids, true)
  local sets = { R = K.ready, S = K.scheduled, L = K.leased }
  local result, writes, seen = {}, new_writes(), {}
  local left = {} -- tasks of groups, as they were: their group is updated once they are FAILED
  for i, id in ipairs(ids) do
    local task = tasks[id]
    local state = task.state
    if seen[id] then
      result[i] = seen[id] -- the same id twice in one call: answered as a second call would be
    elseif task.problem == 'no record' then
      result[i] = 3
    elseif task.problem then
      -- The set a record that cannot be read names is not to be trusted: out of every one.
      quarantine(writes, id, task.problem, now)
      after_quarantine(id, task, config)
      seen[id] = 6
      result[i] = 6
    elseif state and state.letter == 'D' then
      result[i] = 2
    elseif state and state.letter == 'F' then
      result[i] = 9
    else
      seen[id] = 9
      local letter = state and state.letter or 'R'
      if not state then
        local info = task.body_info
        state = new_state('R', now_text, redis.call('ZSCORE', K.ready, id) or '0', info.type, info.group)
      end
      local was = { letter = letter, flags = state.flags, rank = state.rank, type = state.type, group = state.group }
      if letter == 'W' then
        zrem(writes, K.grouped, parked_gone(id, state))
      else
        zrem(writes, sets[letter], id)
      end
      if state.group ~= '' then left[#left + 1] = { id = id, was = was } end
      -- A lease its holder never confirmed (no heartbeat): its handler may never have started.
      if letter == 'L' and not string.find(state.flags, 'r', 1, true) then state.attempts = plus(state.attempts, -1) end
      state.letter, state.gen, state.at, state.flags, state.claim, state.error =
        'F', plus(state.gen, 1), now_text, '', '', CANCELLED
      put_state(writes, id, state)
      zadd(writes, K.failed, now, id)
      result[i] = 0
    end
  end
  apply(writes)
  for _, item in ipairs(left) do
    local was = item.was
    if was.letter == 'L' or (was.letter == 'S' and was.flags == 'h') then
      lane_release(lane_of(was.type, was.group), item.id, config, now) -- its slot is free
    elseif was.letter == 'R' or was.letter == 'W' then
      lane_remove(item.id, was, config, now)
    end
  end
  forget_marks(config, now, seen)
  lanes_flush(now)
  return result
end)
