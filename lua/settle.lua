-- settle: finish a batch of leased tasks, each fenced by the lease token its claim returned.
--
-- KEYS the queue's keys (see _lib.lua): task, config, ready, scheduled, leased, done, failed,
--   corrupt are used
-- ARGV[1] now             ms since epoch
-- ARGV[2..] per item, 5 each: id, token, outcome ("ack" | "retry" | "fail"),
--          retryAtMs (retry only: when to run again; <= now means ready now), error text
-- Reads config (only when an item is not an ack): maxErrorBytes (error text is cut to it), ordered
--   (a retry goes back to READY at once, rank kept, and holds the whole queue until its retry
--   time), nextDue.
-- Returns: per item, 2 each: status, state after the call
--   status 0 ok             state D done, S scheduled or R ready (retry), F failed (fail, or
--                            retry with no attempts left); also for a retry or fail repeated with
--                            the same token (no claim since), which changes nothing
--   status 1 stale token    the task is not leased under this token; nothing changed
--   status 2 already done   the task is DONE; nothing changed (a repeated ack)
--   status 3 unknown id     no such task (never enqueued, or trimmed)
--   status 6 corrupt        its record cannot be read: it was moved to the corrupt set
-- An ack drops the body (the payload). Nothing here reads or rewrites a body.
-- Errors: LEASEQ_BAD_ARGUMENT when any argument is malformed, LEASEQ_FORMAT when the queue is in
--   another storage format; nothing is written then.
return guard('settle', function()
  local now = time_arg('now', ARGV[1])
  local n = groups(2, 5, BATCH_MAX)
  local items, ids, all_acks = {}, {}, true
  for i = 1, n do
    local base = 2 + (i - 1) * 5
    local label = 'item ' .. i
    local outcome = ARGV[base + 2]
    if outcome ~= 'ack' and outcome ~= 'retry' and outcome ~= 'fail' then
      bad(label .. ' outcome must be "ack", "retry" or "fail", got "' .. string.sub(outcome, 1, 20) .. '"')
    end
    if outcome ~= 'ack' then all_acks = false end
    items[i] = {
      id = name_arg(label .. ' id', ARGV[base], ID_MAX_BYTES),
      token = ARGV[base + 1],
      outcome = outcome,
      retry_at = time_arg(label .. ' retryAtMs', ARGV[base + 3]),
      error = ARGV[base + 4],
    }
    ids[i] = items[i].id
  end
  local config = all_acks and {} or read_config_fields({ 'maxErrorBytes', 'ordered', 'nextDue' })
  local max_error = config_int(config, 'maxErrorBytes', DEFAULT_MAX_ERROR_BYTES)
  local ordered = config.ordered == '1'

  local tasks = load(ids, false)
  local result, writes, hold, earliest = {}, new_writes(), nil, nil
  local replayed = { retry = { S = true, R = true, F = true }, fail = { F = true } }
  for _, item in ipairs(items) do
    local task = tasks[item.id]
    local state = task.state
    local status = 0
    local present = presence_status(task)
    if present then
      status = present
      if status == 6 then
        quarantine(writes, item.id, nil, task.problem, now)
        for _, key in ipairs({ K.leased, K.ready, K.scheduled, K.done, K.failed }) do zrem(writes, key, item.id) end
      end
    elseif token_of(state) == item.token and item.outcome ~= 'ack' and replayed[item.outcome][state.letter] then
      -- The same retry or fail ran already (a retry after a lost reply), and no claim came since:
      -- answer what it did. An ack is never answered this way: a DONE task says already_done.
      status = 0
    elseif state.letter ~= 'L' or token_of(state) ~= item.token then
      status = 1
    else
      zrem(writes, K.leased, item.id)
      state.at, state.claim = now, ''
      if item.outcome == 'ack' then
        state.letter, state.error = 'D', ''
        zadd(writes, K.done, now, item.id)
        drop_field(writes, item.id)
      else
        state.error = string.sub(item.error, 1, max_error)
        if item.outcome == 'fail' or state.attempts >= state.max then
          state.letter = 'F'
          zadd(writes, K.failed, now, item.id)
        elseif item.retry_at > now and not ordered then
          state.letter, state.at = 'S', item.retry_at
          zadd(writes, K.scheduled, item.retry_at, item.id)
          earliest = math.min(earliest or item.retry_at, item.retry_at)
        else
          state.letter = 'R'
          zadd(writes, K.ready, state.rank, item.id)
          if ordered and item.retry_at > now then hold = math.max(hold or 0, item.retry_at) end
        end
      end
      -- A v0 record is upgraded by this write; its body too, unless the ack drops it.
      task.upgraded = task.upgraded and state.letter ~= 'D'
      put_state(writes, item.id, state)
      if task.upgraded then put(writes, item.id, task.body); task.upgraded = false end
    end
    write_upgrade(writes, item.id, task)
    result[#result + 1] = status
    result[#result + 1] = status == 6 and 'C' or (state and state.letter) or (task.body_info and 'R' or '')
  end
  apply(writes)
  -- The hold is compared with the callers' `now`, never with Redis's clock.
  if hold then redis.call('HSET', K.config, 'hold', fmt(hold)) end
  if earliest then note_due(config, earliest) end
  return result
end)
