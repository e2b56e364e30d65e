-- delete: remove tasks by id, records included: READY, SCHEDULED, DONE, FAILED or quarantined ones.
-- A LEASED task is refused: a worker is running it (cancel it, or delete it once its lease ends).
--
-- KEYS the queue's keys (see _lib.lua): task, config, ready, scheduled, leased, done, failed, corrupt
--   are used
-- ARGV[1..] ids, 1..1000 of them
-- Returns: per id, 1 each: status 0 deleted, 3 unknown id, 8 leased (refused; nothing changed).
-- Errors: LEASEQ_BAD_ARGUMENT when any argument is malformed, LEASEQ_FORMAT when the queue is in
--   another storage format; nothing is written then.
return guard('delete', function()
  local ids = {}
  for i = 1, groups(1, 1, BATCH_MAX) do ids[i] = name_arg('id ' .. i, ARGV[i], ID_MAX_BYTES) end
  require_format()
  local fields = {}
  for _, id in ipairs(ids) do
    fields[#fields + 1] = id .. ':s'
    fields[#fields + 1] = id
    fields[#fields + 1] = id .. ':x'
  end
  local values = redis.call('HMGET', K.task, unpack(fields))
  local sets = { R = K.ready, S = K.scheduled, D = K.done, F = K.failed }
  local result, writes, left = {}, new_writes(), {}
  for i, id in ipairs(ids) do
    local state_text, body, reason = values[3 * i - 2], values[3 * i - 1], values[3 * i]
    local letter = nil
    if reason then letter = 'C'
    elseif state_text then letter = string.sub(state_text, 1, 1)
    elseif body then letter = string.byte(body, 1) == 49 and 'R' or string.sub(body, 1, 1) end
    if letter == nil then
      result[i] = 3
    elseif letter == 'L' then
      result[i] = 8
    else
      result[i] = 0
      drop_field(writes, id)
      drop_field(writes, id .. ':s')
      drop_field(writes, id .. ':x')
      -- A record that cannot be trusted may name the wrong set: take it out of every one.
      local state = state_text and (letter == 'R' or letter == 'W' or letter == 'S') and parse_state(state_text)
      if not state_text and letter == 'R' then
        -- READY and never claimed: its type and group are its body's (a task of a group too).
        local info = parse_body(body)
        if info then state = new_state('R', '0', '0', info.type, info.group) end
      end
      if state and state.group ~= '' then left[#left + 1] = { id = id, state = state } end
      if letter == 'W' and state then
        zrem(writes, K.grouped, lane_member(lane_of(state.type, state.group), state.rank, id))
      elseif letter == 'C' or not sets[letter] then
        for _, key in ipairs({ K.ready, K.scheduled, K.done, K.failed, K.corrupt }) do zrem(writes, key, id) end
      else
        zrem(writes, sets[letter], id)
      end
    end
  end
  apply(writes)
  -- Its group counts one task less; a task let out or a held retry frees its group's place, which
  -- the next claim fills (delete has no `now` to check a rate window with).
  local config = {}
  for _, was in ipairs(left) do
    local state = was.state
    local lane = lane_of(state.type, state.group)
    local record = lane_get(lane)
    if state.letter == 'S' then
      if state.flags == 'h' then
        lane_drop_holder(lane, record, was.id)
        lane_later(lane, config)
      end
    else
      record.ready = record.ready - 1
      if state.letter == 'W' then record.parked = record.parked - 1 end
      if string.find(state.flags, 'u', 1, true) then record.heads = record.heads - 1 end
      if record.parked > 0 then lane_later(lane, config) end
    end
    lane_touch(lane, record)
  end
  lanes_flush(0)
  return result
end)
