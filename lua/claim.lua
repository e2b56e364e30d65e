-- claim: promote due scheduled tasks, then lease up to `count` ready tasks in rank order.
--
-- KEYS[1] task hash      KEYS[2] ready zset (rank)       KEYS[3] scheduled zset (due ms)
-- KEYS[4] leased zset (lease deadline ms)                KEYS[5] hold string (ordered queues:
--         no claim before this time, ms, set when a task of the queue is retried; compared
--         with `now`, never expired by Redis's clock)
-- ARGV[1] now               ms since epoch
-- ARGV[2] count             1..1000, the most tasks to lease
-- ARGV[3] ordered           1 = strict order: claim nothing while any task is leased or held
-- ARGV[4] promoteLimit      1..10000, the most due scheduled tasks to promote first
-- ARGV[5] defaultLeaseMs    1..86400000, lease of types missing from the table
-- ARGV[6] defaultMaxAttempts 1..1000
-- ARGV[7..] per-type policy, 3 each: type, leaseMs, maxAttempts
-- Returns: per leased task, 7 each, in rank order:
--   id, type, payload, attempt (1 = first), lease token, rank, lease deadline (ms)
--   An empty array when nothing is ready (or the ordered gate is closed).
-- Errors: LEASEQ_BAD_ARGUMENT when any argument is malformed; nothing is written then.
return guard('claim', function()
  local now = int_arg('now', ARGV[1], 0, 2 ^ 52)
  local count = count_arg('count', ARGV[2], 1000)
  local ordered = int_arg('ordered', ARGV[3], 0, 1) == 1
  local promote_limit = count_arg('promoteLimit', ARGV[4], 10000)
  local default_lease = count_arg('defaultLeaseMs', ARGV[5], 86400000)
  local default_max = count_arg('defaultMaxAttempts', ARGV[6], 1000)
  local policies = {}
  for i = 1, groups(7, 3, 1000, 0) do
    local base = 7 + (i - 1) * 3
    local task_type = name_arg('policy ' .. i .. ' type', ARGV[base], TYPE_MAX_BYTES)
    policies[task_type] = {
      lease = count_arg('policy ' .. i .. ' leaseMs', ARGV[base + 1], 86400000),
      max = count_arg('policy ' .. i .. ' maxAttempts', ARGV[base + 2], 1000),
    }
  end

  promote_due(KEYS[1], KEYS[3], KEYS[2], now, promote_limit)
  if ordered then
    if redis.call('ZCARD', KEYS[4]) > 0 then return {} end
    local hold = tonumber(redis.call('GET', KEYS[5]))
    if hold and hold > now then return {} end
  end

  local popped = redis.call('ZPOPMIN', KEYS[2], count)
  if #popped == 0 then return {} end
  local ids = {}
  for i = 1, #popped, 2 do ids[#ids + 1] = popped[i] end
  local tasks = load_tasks(KEYS[1], ids)

  local result, writes = {}, new_writes()
  for _, id in ipairs(ids) do
    local task = tasks[id]
    if task then
      local policy = policies[task.type]
      task.state = 'L'
      task.attempts = task.attempts + 1
      task.claims = task.claims + 1
      task.max_attempts = policy and policy.max or default_max
      task.at = now + (policy and policy.lease or default_lease)
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
