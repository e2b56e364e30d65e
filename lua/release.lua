-- release: give back leased tasks that were never started, without using an attempt.
--
-- KEYS[1] task hash   KEYS[2] leased zset   KEYS[3] ready zset (rank)
-- ARGV[1] now   ms since epoch
-- ARGV[2..] per item, 2 each: id, token
-- Returns: per item, 1 each: status 0 ok (back to READY with its rank), 1 stale token,
--   2 already done, 3 unknown id (as in settle). The next claim issues a new token.
-- Errors: LEASEQ_BAD_ARGUMENT when any argument is malformed; nothing is written then.
return guard('release', function()
  local now = int_arg('now', ARGV[1], 0, 2 ^ 52)
  local items, ids = {}, {}
  for i = 1, groups(2, 2, 1000) do
    local base = 2 + (i - 1) * 2
    items[i] = { id = name_arg('item ' .. i .. ' id', ARGV[base], ID_MAX_BYTES), token = ARGV[base + 1] }
    ids[i] = items[i].id
  end

  local tasks = load_tasks(KEYS[1], ids)
  local result, writes = {}, new_writes()
  for _, item in ipairs(items) do
    local task = tasks[item.id]
    local status = 0
    if task == nil then
      status = 3
    elseif task.state == 'D' then
      status = 2
    elseif task.state ~= 'L' or token_of(task) ~= item.token then
      status = 1
    else
      -- The attempt is given back; the lease generation moves on, so the token is stale from now.
      task.state, task.at, task.attempts, task.claims = 'R', now, task.attempts - 1, task.claims + 1
      zrem(writes, KEYS[2], item.id)
      zadd(writes, KEYS[3], task.rank, item.id)
      write_task(writes, item.id, task)
    end
    result[#result + 1] = status
  end
  apply(writes, KEYS[1])
  return result
end)
