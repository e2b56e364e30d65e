-- requeue: send FAILED tasks back to READY with their original rank and a fresh set of attempts.
--
-- KEYS[1] task hash   KEYS[2] failed zset   KEYS[3] ready zset (rank)
-- ARGV[1] now   ms since epoch
-- ARGV[2..] ids, 1..1000 of them
-- Returns: per id, 1 each: status 0 ok (also for an id requeued already and not claimed since),
--   2 already done, 3 unknown id, 4 not failed (the task is READY, SCHEDULED or LEASED; nothing
--   changed). The last error stays visible to inspect.
-- Errors: LEASEQ_BAD_ARGUMENT when any argument is malformed; nothing is written then.
return guard('requeue', function()
  local now = int_arg('now', ARGV[1], 0, 2 ^ 52)
  local ids = {}
  for i = 1, groups(2, 1, 1000) do ids[i] = name_arg('id ' .. i, ARGV[1 + i], ID_MAX_BYTES) end

  local tasks = load_tasks(KEYS[1], ids)
  local result, writes = {}, new_writes()
  for _, id in ipairs(ids) do
    local task = tasks[id]
    local status = 0
    if task == nil then
      status = 3
    elseif task.state == 'D' then
      status = 2
    elseif task.state == 'R' and task.attempts == 0 and task.error ~= '' then
      -- Only a requeue leaves a READY task with no attempts and an error: a repeated requeue (a
      -- retry after a lost reply) answers ok and changes nothing.
      status = 0
    elseif task.state ~= 'F' then
      status = 4
    else
      task.state, task.at, task.attempts = 'R', now, 0
      zrem(writes, KEYS[2], id)
      zadd(writes, KEYS[3], task.rank, id)
      write_task(writes, id, task)
    end
    result[#result + 1] = status
  end
  apply(writes, KEYS[1])
  return result
end)
