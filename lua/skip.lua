-- skip: an ordered group with onFailure "hold" waits behind its FAILED task until an operator
-- requeues it (it runs first) or skips it: the task stays FAILED (kept for its retention, requeued
-- later it takes its turn again), and the group goes on with its next task.
--
-- KEYS the queue's keys (see lib/arguments.lua): task, config, ready, grouped, groups, groupwait are used
-- ARGV[1] now   ms since epoch
-- ARGV[2..] the ids (1..1000 of them)
-- Returns: per id, 1 each: status 0 ok (its group goes on), 3 unknown id, 4 not failed, 12 not
--   holding (a FAILED task no group waits behind: nothing to skip), 6 corrupt (its record cannot be
--   read: set aside). An id named twice counts once (its second mention is answered as the first).
-- Errors: LEASEQ_BAD_ARGUMENT when any argument is malformed, LEASEQ_FORMAT when the queue is in
--   another storage format; nothing is written then (both are checked before the first write).
-- Uses: after_quarantine, apply, guard, id_arg, lane_of, lanes_flush, lanes_release, load
-- Uses: new_writes, presence_status, put_state, quarantine, read_config_fields, skip_args
-- Uses: skip_item, skip_items

return guard('skip', function()
  local now = skip_args()
  local ids = {}
  for i = 1, skip_items(BATCH_MAX) do ids[i] = id_arg('id ' .. i, skip_item(i)) end
  local config = read_config_fields({ 'fair' })
  local tasks = load(ids, false)
  local writes, result, answered, released = new_writes(), {}, {}, {}
  for i, id in ipairs(ids) do
    local task = tasks[id]
    local state = task.state
    local status = answered[id] or presence_status(task)
    if answered[id] then
      -- the same id twice in one call
    elseif status == 6 then
      quarantine(writes, id, task.problem, now)
      after_quarantine(id, task, config)
    elseif status == 1 or (status == nil and state.letter ~= 'F') then
      status = 4
    elseif status == nil then
      if state.group == '' or not string.find(state.flags, 'h', 1, true) then
        status = 12
      else
        status = 0
        state.flags = ''
        put_state(writes, id, state)
        released[#released + 1] = { lane = lane_of(state.type, state.group), id = id }
      end
    end
    answered[id] = status
    result[i] = status
  end
  apply(writes)
  if #released > 0 then lanes_release(released, config, now) end
  lanes_flush(now)
  return result
end)
