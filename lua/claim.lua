-- claim: promote due scheduled tasks, then lease up to `count` ready tasks in rank order.
--
-- KEYS[1] task hash      KEYS[2] ready zset (rank)       KEYS[3] scheduled zset (due ms)
-- KEYS[4] leased zset (lease deadline ms)                KEYS[5] hold string (ordered queues:
--         no claim before this time, ms, set when a task of the queue is retried; compared
--         with `now`, never expired by Redis's clock)
-- KEYS[6] solo set        ids a reclaim returned: each is leased alone, in a batch of its own (it
--         may be what crashed its last worker), and leaves the set when it is
-- ARGV[1] now               ms since epoch
-- ARGV[2] count             1..1000, the most tasks to lease
-- ARGV[3] ordered           1 = strict order: claim nothing while any task is leased or held
-- ARGV[4] promoteLimit      1..10000, the most due scheduled tasks to promote first
-- ARGV[5] defaultLeaseMs    1..86400000, lease of types missing from the table
-- ARGV[6] defaultMaxAttempts 1..1000
-- ARGV[7] maxLeaseMs        1..86400000: lease only tasks whose lease is at most this (the time the
--         caller has left); longer ones stay READY. An ordered queue stops at the first such task.
-- ARGV[8..] per-type policy, 3 each: type, leaseMs, maxAttempts
-- Returns: per leased task, 7 each, in rank order:
--   id, type, payload, attempt (1 = first), lease token, rank, lease deadline (ms)
--   An empty array when nothing is ready (or the ordered gate is closed, or nothing fits).
--   When every lease fits maxLeaseMs, the tasks are popped with one ZPOPMIN; otherwise the first
--   SCAN_LIMIT ready tasks are read and the fitting ones taken, so the work stays bounded.
-- Errors: LEASEQ_BAD_ARGUMENT when any argument is malformed; nothing is written then.
local SCAN_LIMIT = 1000 -- ready tasks read at most when not every lease fits

return guard('claim', function()
  local now = int_arg('now', ARGV[1], 0, 2 ^ 52)
  local count = count_arg('count', ARGV[2], 1000)
  local ordered = int_arg('ordered', ARGV[3], 0, 1) == 1
  local promote_limit = count_arg('promoteLimit', ARGV[4], 10000)
  local default_lease = count_arg('defaultLeaseMs', ARGV[5], 86400000)
  local default_max = count_arg('defaultMaxAttempts', ARGV[6], 1000)
  local max_lease = count_arg('maxLeaseMs', ARGV[7], 86400000)
  local policies = {}
  local all_fit = default_lease <= max_lease
  for i = 1, groups(8, 3, 1000, 0) do
    local base = 8 + (i - 1) * 3
    local task_type = name_arg('policy ' .. i .. ' type', ARGV[base], TYPE_MAX_BYTES)
    policies[task_type] = {
      lease = count_arg('policy ' .. i .. ' leaseMs', ARGV[base + 1], 86400000),
      max = count_arg('policy ' .. i .. ' maxAttempts', ARGV[base + 2], 1000),
    }
    if policies[task_type].lease > max_lease then all_fit = false end
  end
  local function lease_of(task)
    local policy = policies[task.type]
    return policy and policy.lease or default_lease
  end

  promote_due(KEYS[1], KEYS[3], KEYS[2], now, promote_limit)
  if ordered then
    if redis.call('ZCARD', KEYS[4]) > 0 then return {} end
    local hold = tonumber(redis.call('GET', KEYS[5]))
    if hold and hold > now then return {} end
  end

  local ids, tasks = {}, nil
  if all_fit then
    local popped = redis.call('ZPOPMIN', KEYS[2], count)
    if #popped == 0 then return {} end
    for i = 1, #popped, 2 do ids[#ids + 1] = popped[i] end
    tasks = load_tasks(KEYS[1], ids)
  else
    -- Near the end of an invocation: take only what can finish in the time left.
    local heads = redis.call('ZRANGE', KEYS[2], 0, SCAN_LIMIT - 1)
    if #heads == 0 then return {} end
    tasks = load_tasks(KEYS[1], heads)
    for _, id in ipairs(heads) do
      local task = tasks[id]
      if task and lease_of(task) <= max_lease then
        ids[#ids + 1] = id
        if #ids == count then break end
      elseif ordered then
        break
      end
    end
    if #ids == 0 then return {} end
    redis.call('ZREM', KEYS[2], unpack(ids))
  end

  -- A reclaimed task goes alone: the batch is cut before it, or is just it when it comes first.
  if redis.call('SCARD', KEYS[6]) > 0 then
    local flags = redis.call('SMISMEMBER', KEYS[6], unpack(ids))
    local cut = nil
    if flags[1] == 1 then
      cut = 2
      redis.call('SREM', KEYS[6], ids[1])
    else
      for i = 2, #ids do
        if flags[i] == 1 then cut = i; break end
      end
    end
    if cut and cut <= #ids then
      local back = {}
      for i = cut, #ids do
        local task = tasks[ids[i]]
        if task then back[#back + 1] = task.rank; back[#back + 1] = ids[i] end
        ids[i] = nil
      end
      if #back > 0 then redis.call('ZADD', KEYS[2], unpack(back)) end
    end
  end

  local result, writes = {}, new_writes()
  for _, id in ipairs(ids) do
    local task = tasks[id]
    if task then
      local policy = policies[task.type]
      task.state = 'L'
      task.attempts = task.attempts + 1
      task.claims = task.claims + 1
      task.max_attempts = policy and policy.max or default_max
      task.at = now + lease_of(task)
      zadd(writes, KEYS[4], task.at, id)
      write_task(writes, id, task)
      local n = #result
      result[n + 1] = id
      result[n + 2] = task.type
      result[n + 3] = payload_of(task)
      result[n + 4] = task.attempts
      result[n + 5] = token_of(task)
      result[n + 6] = task.rank
      result[n + 7] = task.at
    end
  end
  apply(writes, KEYS[1])
  return result
end)
