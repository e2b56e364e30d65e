-- requeue: send FAILED tasks back to READY with their original rank and a fresh set of attempts
-- (a task of a group takes its turn in its group; once the queue takes fair turns, one without a
-- group takes its turn among those: docs/groups.md).
--
-- KEYS the queue's keys (see lib/arguments.lua): all of them
-- ARGV[1] now   ms since epoch
-- ARGV[2..] ids, 1..1000 of them (an id named twice is requeued once, and answered alike twice)
-- Returns: per id, 1 each: status 0 ok (also for an id requeued already and not claimed since),
--   2 already done, 3 unknown id, 4 not failed (the task is READY, SCHEDULED or LEASED; nothing
--   changed), 6 corrupt. The last error stays visible to inspect. An ordered queue's hold for a
--   task requeued ends: it runs as a new attempt.
-- Errors: LEASEQ_BAD_ARGUMENT when any argument is malformed, LEASEQ_FORMAT when the queue is in
--   another storage format; nothing is written then: the arguments, the config and every record
--   are read and checked before the first write.
-- Uses: K, after_quarantine, apply, guard, hold_of, id_arg, lanes_flush, load, new_writes
-- Uses: presence_status, quarantine, read_config_fields, requeue_args, requeue_failed
-- Uses: requeue_item, requeue_items

return guard('requeue', function()
  local now, now_text = requeue_args()
  local ids = {}
  for i = 1, requeue_items(BATCH_MAX) do ids[i] = id_arg('id ' .. i, requeue_item(i)) end
  local config = read_config_fields({ 'hold', 'fair' })

  local tasks = load(ids, false)
  local result, writes, answered, requeued = {}, new_writes(), {}, {}
  for i, id in ipairs(ids) do
    local task = tasks[id]
    local state = task.state
    local status = presence_status(task)
    if answered[id] then
      status = answered[id] -- the same id twice in one call
    elseif status == 1 then
      status = 4 -- READY, never claimed
    elseif status == nil then
      status = 0
      if (state.letter == 'R' or state.letter == 'W') and state.attempts == '0' and state.error ~= '' then
        -- Only a requeue leaves a READY task with no attempts and an error: a repeated requeue (a
        -- retry after a lost reply) answers ok and changes nothing.
      elseif state.letter ~= 'F' then
        status = 4
      else
        requeue_failed(writes, id, state, config, now, now_text)
        requeued[id] = true
      end
    end
    if status == 6 then
      quarantine(writes, id, task.problem, now)
      after_quarantine(id, task, config)
    end
    answered[id] = status
    result[i] = status
  end
  apply(writes)
  local _, held = hold_of(config)
  if held and requeued[held] then redis.call('HDEL', K.config, 'hold') end
  lanes_flush(now)
  return result
end)
