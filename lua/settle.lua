-- settle: finish a batch of leased tasks, each fenced by the lease token its claim returned.
--
-- KEYS[1] task hash   KEYS[2] leased zset   KEYS[3] scheduled zset   KEYS[4] ready zset
-- KEYS[5] done zset (finish ms)   KEYS[6] failed zset (finish ms)   KEYS[7] hold string
-- ARGV[1] now             ms since epoch
-- ARGV[2] maxErrorBytes   error text is cut to this many bytes
-- ARGV[3] ordered         1 = strict-order queue: a retry goes back to READY at once (rank kept)
--                         and holds the whole queue until its retry time
-- ARGV[4..] per item, 5 each: id, token, outcome ("ack" | "retry" | "fail"),
--          retryAtMs (retry only: when to run again; <= now means ready now), error text
-- Returns: per item, 2 each: status, state after the call
--   status 0 ok             state D done, S scheduled or R ready (retry), F failed (fail, or
--                            retry with no attempts left); also for a retry or fail repeated with
--                            the same token (no claim since), which changes nothing
--   status 1 stale token    the task is not leased under this token; nothing changed
--   status 2 already done   the task is DONE; nothing changed (a repeated ack)
--   status 3 unknown id     no such task (never enqueued, or trimmed)
-- Errors: LEASEQ_BAD_ARGUMENT when any argument is malformed; nothing is written then.
return guard('settle', function()
  local now = int_arg('now', ARGV[1], 0, 2 ^ 52)
  local max_error = int_arg('maxErrorBytes', ARGV[2], 0, 65536)
  local ordered = int_arg('ordered', ARGV[3], 0, 1) == 1
  local n = groups(4, 5, 1000)
  local items = {}
  local ids = {}
  for i = 1, n do
    local base = 4 + (i - 1) * 5
    local label = 'item ' .. i
    local outcome = ARGV[base + 2]
    if outcome ~= 'ack' and outcome ~= 'retry' and outcome ~= 'fail' then
      bad(label .. ' outcome must be "ack", "retry" or "fail", got "' .. string.sub(outcome, 1, 20) .. '"')
    end
    items[i] = {
      id = name_arg(label .. ' id', ARGV[base], ID_MAX_BYTES),
      token = ARGV[base + 1],
      outcome = outcome,
      retry_at = int_arg(label .. ' retryAtMs', ARGV[base + 3], 0, 2 ^ 52),
      error = string.sub(ARGV[base + 4], 1, max_error),
    }
    ids[i] = items[i].id
  end

  local tasks = load_tasks(KEYS[1], ids)
  local result, writes, hold = {}, new_writes(), nil
  local replayed = { retry = { S = true, R = true, F = true }, fail = { F = true } }
  for _, item in ipairs(items) do
    local task = tasks[item.id]
    local status = 0
    if task == nil then
      status = 3
    elseif task.state == 'D' then
      status = 2
    elseif token_of(task) == item.token and item.outcome ~= 'ack' and replayed[item.outcome][task.state] then
      -- The same retry or fail ran already (a retry after a lost reply), and no claim came since:
      -- answer what it did. An ack is never answered this way: a DONE task says already_done.
      status = 0
    elseif task.state ~= 'L' or token_of(task) ~= item.token then
      status = 1
    else
      zrem(writes, KEYS[2], item.id)
      task.at = now
      if item.outcome == 'ack' then
        task.state, task.error, task.payload = 'D', '', ''
        zadd(writes, KEYS[5], now, item.id)
      else
        task.error = item.error
        if item.outcome == 'fail' or task.attempts >= task.max_attempts then
          task.state = 'F'
          zadd(writes, KEYS[6], now, item.id)
        elseif item.retry_at > now and not ordered then
          task.state, task.at = 'S', item.retry_at
          zadd(writes, KEYS[3], item.retry_at, item.id)
        else
          task.state = 'R'
          zadd(writes, KEYS[4], task.rank, item.id)
          if ordered and item.retry_at > now then hold = math.max(hold or 0, item.retry_at) end
        end
      end
      write_task(writes, item.id, task)
    end
    result[#result + 1] = status
    result[#result + 1] = task and task.state or ''
  end
  apply(writes, KEYS[1])
  -- No expiry: the hold is compared with the callers' `now`, never with Redis's clock.
  if hold then redis.call('SET', KEYS[7], fmt(hold)) end
  return result
end)
