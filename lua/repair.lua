-- repair: bring quarantined tasks back to READY, when their body can still be read.
--
-- KEYS the queue's keys (see lib/arguments.lua): all of them
-- ARGV[1] now   ms since epoch
-- ARGV[2..] ids, 1..1000 of them
-- Returns: per id, 1 each: status 0 repaired (READY again: its rank if its state could be read,
--   else a new one at priority 0; attempts 0; a token generation above any it had), 3 unknown id
--   (not quarantined), 7 unrepairable (its body cannot be read either: only `delete` is left). An
--   id named twice is repaired once, and answered alike twice.
-- Errors: LEASEQ_BAD_ARGUMENT when any argument is malformed, LEASEQ_FORMAT when the queue is in
--   another storage format; nothing is written then: the arguments, the config and every record
--   are read and checked before the first write.
-- Uses: K, apply, drop_field, fmt, guard, id_arg, lanes_flush, make_ready, new_state, new_writes
-- Uses: parse_body, parse_state, put, read_config_fields, read_many, record_fields, repair_args
-- Uses: repair_item, repair_items, unmarked, zrem

return guard('repair', function()
  local now = repair_args()
  local ids = {}
  for i = 1, repair_items(BATCH_MAX) do ids[i] = id_arg('id ' .. i, repair_item(i)) end
  local config = read_config_fields({ 'fair' })

  local scores = read_many('ZMSCORE', K.corrupt, ids)
  local values = record_fields(ids, true, false)
  local result, writes, fresh, answered = {}, new_writes(), {}, {}
  for i, id in ipairs(ids) do
    local status = 3
    if answered[id] then
      status = answered[id] -- the same id twice in one call
    elseif scores[i] then
      local state = values[2 * i - 1] and parse_state(unmarked(values[2 * i - 1])) or nil
      local body = values[2 * i] or nil
      local info = body and string.byte(body, 1) == BODY_FORMAT_BYTE and parse_body(body) or nil
      if info then
        status = 0
        local repaired = new_state('R', fmt(now), state and state.rank or nil, info.type, info.group)
        repaired.gen, repaired.error = fmt(math.max(state and tonumber(state.gen) + 1 or 0, now)), 'repaired' 
        if not repaired.rank then fresh[#fresh + 1] = repaired end
        writes.repaired = writes.repaired or {}
        writes.repaired[#writes.repaired + 1] = { id = id, state = repaired, body = body }
      else
        status = 7
      end
    end
    answered[id] = status
    result[i] = status
  end
  if #fresh > 0 then
    local seq = redis.call('INCRBY', K.seq, #fresh) - #fresh
    for _, state in ipairs(fresh) do
      seq = seq + 1
      state.rank = fmt((0 - PRIORITY_MIN) * RANK_SEQ_SPAN + seq)
    end
  end
  for _, item in ipairs(writes.repaired or {}) do
    make_ready(writes, item.id, item.state, config, now, false)
    put(writes, item.id, item.body)
    drop_field(writes, item.id .. ':x')
    drop_field(writes, item.id .. STALLS)
    zrem(writes, K.corrupt, item.id)
  end
  apply(writes)
  lanes_flush(now)
  return result
end)
