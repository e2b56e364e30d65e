-- extend: push the lease deadline of leased tasks, each fenced by its lease token.
--
-- KEYS[1] task hash   KEYS[2] leased zset (lease deadline ms)
-- ARGV[1] now   ms since epoch
-- ARGV[2..] per item, 3 each: id, token, leaseMs (1..86400000: the new deadline is now + leaseMs)
-- Returns: per item, 2 each: status, lease deadline (ms; 0 unless status is 0)
--   status 0 ok, 1 stale token, 2 already done, 3 unknown id (as in settle)
--   A lease past its deadline that no reclaim has taken yet can still be extended.
-- Errors: LEASEQ_BAD_ARGUMENT when any argument is malformed; nothing is written then.
return guard('extend', function()
  local now = int_arg('now', ARGV[1], 0, 2 ^ 52)
  local items, ids = {}, {}
  for i = 1, groups(2, 3, 1000) do
    local base = 2 + (i - 1) * 3
    items[i] = {
      id = name_arg('item ' .. i .. ' id', ARGV[base], ID_MAX_BYTES),
      token = ARGV[base + 1],
      lease = count_arg('item ' .. i .. ' leaseMs', ARGV[base + 2], 86400000),
    }
    ids[i] = items[i].id
  end

  local tasks = load_tasks(KEYS[1], ids)
  local result, writes = {}, new_writes()
  for _, item in ipairs(items) do
    local task = tasks[item.id]
    local status, deadline = 0, 0
    if task == nil then
      status = 3
    elseif task.state == 'D' then
      status = 2
    elseif task.state ~= 'L' or token_of(task) ~= item.token then
      status = 1
    else
      deadline = now + item.lease
      task.at = deadline
      zadd(writes, KEYS[2], deadline, item.id)
      write_task(writes, item.id, task)
    end
    result[#result + 1] = status
    result[#result + 1] = deadline
  end
  apply(writes, KEYS[1])
  return result
end)
