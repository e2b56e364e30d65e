-- requeue: send FAILED tasks back to READY with their original rank and a fresh set of attempts.
--
-- KEYS the queue's keys (see _lib.lua): task, config, ready, failed are used
-- ARGV[1] now   ms since epoch
-- ARGV[2..] ids, 1..1000 of them
-- Returns: per id, 1 each: status 0 ok (also for an id requeued already and not claimed since),
--   2 already done, 3 unknown id, 4 not failed (the task is READY, SCHEDULED or LEASED; nothing
--   changed), 6 corrupt. The last error stays visible to inspect.
-- Errors: LEASEQ_BAD_ARGUMENT when any argument is malformed, LEASEQ_FORMAT when the queue is in
--   another storage format; nothing is written then.
return guard('requeue', function()
  local now, now_text = time_arg('now', ARGV[1])
  local ids = {}
  for i = 1, groups(2, 1, BATCH_MAX) do ids[i] = name_arg('id ' .. i, ARGV[1 + i], ID_MAX_BYTES) end
  require_format()

  local tasks = load(ids, false)
  local result, writes, config = {}, new_writes(), {}
  for _, id in ipairs(ids) do
    local task = tasks[id]
    local state = task.state
    local status = presence_status(task)
    if status == 1 then
      status = 4 -- READY, never claimed
    elseif status == nil then
      status = 0
      if (state.letter == 'R' or state.letter == 'W') and state.attempts == '0' and state.error ~= '' then
        -- Only a requeue leaves a READY task with no attempts and an error: a repeated requeue (a
        -- retry after a lost reply) answers ok and changes nothing.
      elseif state.letter ~= 'F' then
        status = 4
      else
        state.letter, state.at, state.attempts, state.flags = 'R', now_text, '0', ''
        make_ready(writes, id, state, config, now, false)
        zrem(writes, K.failed, id)
        if task.upgraded then put(writes, id, task.body); task.upgraded = false end
      end
    end
    write_upgrade(writes, id, task)
    result[#result + 1] = status
  end
  apply(writes)
  lanes_flush(now)
  return result
end)
