-- delete: remove tasks by id, records included: READY, SCHEDULED, DONE, FAILED or quarantined ones.
-- A LEASED task is refused: a worker is running it (cancel it, or delete it once its lease ends).
-- With a state, only tasks still in that state are deleted: a filter's page (`delete --state`,
-- `purge`) never deletes a task that moved on after it was found. What followed a task follows it
-- out: its group's count and slot, an ordered queue's hold for it, a wake-up arranged only for it.
--
-- KEYS the queue's keys (see lib/arguments.lua): all of them
-- ARGV[1] now     ms since epoch, or 0 when the caller gave none (a wake-up arranged only for what
--                 it deleted is then forgotten by the store's clock, TIME; kept only when the store
--                 gives none)
-- ARGV[2] state   "" (any state), or the state each task must be in: ready (parked ones too),
--                 scheduled, done, failed, corrupt
-- ARGV[3..] ids, 1..1000 of them (an id named twice is deleted once, and answered alike twice)
-- Returns: per id, 1 each: status 0 deleted, 3 unknown id, 8 leased (refused; nothing changed),
--   10 not in the state asked for (nothing changed).
-- Errors: LEASEQ_BAD_ARGUMENT when any argument is malformed, LEASEQ_FORMAT when the queue is in
--   another storage format; nothing is written then: the arguments, the config and every record
--   are read and checked before the first write.
-- Uses: K, apply, delete_args, drop_field, drop_slot, forget_marks, guard, id_arg
-- Uses: lane_get, lane_of, lane_remove, lane_wait, lanes_flush, new_state, new_writes, parked_gone
-- Uses: parse_body, parse_state, read_config_fields, record_fields, store_time, zrem
-- Uses: delete_item, delete_items

local LETTERS_OF = { ready = { R = true, W = true }, scheduled = { S = true }, done = { D = true },
  failed = { F = true }, corrupt = { C = true } }

return guard('delete', function()
  local now, _, wanted = delete_args()
  local letters = LETTERS_OF[wanted]
  local ids = {}
  for i = 1, delete_items(BATCH_MAX) do ids[i] = id_arg('id ' .. i, delete_item(i)) end
  local config = read_config_fields({ 'wake', 'nextDue', 'ordered', 'hold', 'fair', 'deps' })
  local values = record_fields(ids, true, true)
  local sets = { R = K.ready, S = K.scheduled, D = K.done, F = K.failed }
  local result, writes, left, answered, gone = {}, new_writes(), {}, {}, {}
  for i, id in ipairs(ids) do
    local state_text_value, body, reason = values[3 * i - 2], values[3 * i - 1], values[3 * i]
    local letter = nil
    if reason then letter = 'C'
    elseif state_text_value then letter = string.sub(state_text_value, 1, 1)
    elseif body then letter = string.byte(body, 1) == BODY_FORMAT_BYTE and 'R' or string.sub(body, 1, 1) end
    if answered[id] then
      result[i] = answered[id] -- the same id twice in one call: deleted (or refused) once
    elseif letter == nil then
      result[i] = 3
    elseif letter == 'L' then
      result[i] = 8
    elseif letters and not letters[letter] then
      result[i] = 10
    else
      result[i] = 0
      gone[id] = true
      drop_field(writes, id)
      drop_field(writes, id .. ':s')
      drop_field(writes, id .. ':x')
      drop_field(writes, id .. STALLS)
      drop_field(writes, id .. HISTORY)
      drop_field(writes, id .. PROGRESS)
      local state = state_text_value and (letter == 'R' or letter == 'W' or letter == 'S' or letter == 'F') and
        parse_state(state_text_value)
      if not state_text_value and letter == 'R' then
        -- READY and never claimed: its type and group are its body's (a task of a group too).
        local info = parse_body(body)
        if info then state = new_state('R', '0', '0', info.type, info.group) end
      end
      if letter == 'W' and state then
        zrem(writes, K.grouped, parked_gone(id, state))
      elseif letter == 'C' or not sets[letter] or not state and letter ~= 'D' and letter ~= 'F' then
        -- A record that cannot be trusted may name the wrong set: take it out of every one.
        for _, key in ipairs({ K.ready, K.scheduled, K.done, K.failed, K.corrupt }) do zrem(writes, key, id) end
      else
        zrem(writes, sets[letter], id)
      end
      if state and state.group ~= '' then left[#left + 1] = { id = id, state = state } end
    end
    answered[id] = result[i]
  end
  apply(writes)
  -- Its group counts one task less; a task let out or a held retry frees its group's place, which
  -- the next claim fills (delete has no `now` to check a rate window with).
  for _, item in ipairs(left) do
    local state = item.state
    local lane = lane_of(state.type, state.group)
    if state.letter == 'S' or state.letter == 'F' then
      -- A held retry, or a FAILED task its ordered group waits behind (onFailure hold).
      if state.flags == 'h' then
        local record = lane_get(lane)
        drop_slot(lane, record, item.id)
        if record.parked > 0 then lane_wait(lane, 0, config) end
      end
    else
      lane_remove(item.id, state, config, nil)
    end
  end
  -- Whichever path called (the CLI's delete and purge give no now), a wake-up arranged only for
  -- what left goes with it: by the store's clock when the caller gave none.
  forget_marks(config, now ~= 0 and now or store_time() or 0, gone)
  lanes_flush(now)
  return result
end)
