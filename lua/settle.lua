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
  local now, now_text = time_arg('now', ARGV[1])
  local n = groups(2, 5, BATCH_MAX)
  local all_acks, ids = true, {}
  for i = 1, n do
    local base = 2 + (i - 1) * 5
    local outcome = ARGV[base + 2]
    local id = ARGV[base]
    if not is_name(id, ID_MAX_BYTES) then name_arg('item ' .. i .. ' id', id, ID_MAX_BYTES) end
    ids[i] = id
    if outcome ~= 'ack' then
      if outcome ~= 'retry' and outcome ~= 'fail' then
        bad('item ' .. i .. ' outcome must be "ack", "retry" or "fail", got "' .. string.sub(outcome, 1, 20) .. '"')
      end
      all_acks = false
    end
    if not as_time(ARGV[base + 3]) then time_arg('item ' .. i .. ' retryAtMs', ARGV[base + 3]) end
  end
  local config = all_acks and {} or read_config_fields({ 'maxErrorBytes', 'ordered', 'nextDue' })
  local max_error = config_int(config, 'maxErrorBytes', DEFAULT_MAX_ERROR_BYTES)
  local ordered = config.ordered == '1'

  local tasks = load(ids, false)
  local result, writes, hold, earliest = {}, new_writes(), nil, nil
  local replayed = { retry = { S = true, R = true, F = true }, fail = { F = true } }
  for i, id in ipairs(ids) do
    local base = 2 + (i - 1) * 5
    local token, outcome = ARGV[base + 1], ARGV[base + 2]
    local task = tasks[id]
    local state = task.state
    local status = presence_status(task)
    if status then
      if status == 6 then
        quarantine(writes, id, nil, task.problem, now)
        for _, key in ipairs({ K.leased, K.ready, K.scheduled, K.done, K.failed }) do zrem(writes, key, id) end
      end
    elseif outcome ~= 'ack' and replayed[outcome][state.letter] and token_matches(state, token) then
      -- The same retry or fail ran already (a retry after a lost reply), and no claim came since:
      -- answer what it did. An ack is never answered this way: a DONE task says already_done.
      status = 0
    elseif state.letter ~= 'L' or not token_matches(state, token) then
      status = 1
    else
      status = 0
      zrem(writes, K.leased, id)
      state.at, state.claim, state.flags = now_text, '', ''
      if outcome == 'ack' then
        state.letter, state.error = 'D', ''
        zadd(writes, K.done, now_text, id)
        drop_field(writes, id)
        task.upgraded = false -- a v0 record's body goes with the ack
      else
        local retry_at, retry_text = time_arg('retryAtMs', ARGV[base + 3])
        state.error = string.sub(ARGV[base + 4], 1, max_error)
        if outcome == 'fail' or tonumber(state.attempts) >= tonumber(state.max) then
          state.letter = 'F'
          zadd(writes, K.failed, now_text, id)
        elseif retry_at > now and not ordered then
          state.letter, state.at = 'S', retry_text
          zadd(writes, K.scheduled, retry_text, id)
          earliest = math.min(earliest or retry_at, retry_at)
        else
          state.letter = 'R'
          zadd(writes, K.ready, state.rank, id)
          if ordered and retry_at > now then hold = math.max(hold or 0, retry_at) end
        end
      end
      put_state(writes, id, state)
    end
    write_upgrade(writes, id, task)
    result[#result + 1] = status
    result[#result + 1] = status == 6 and 'C' or (state and state.letter) or (task.body_info and 'R' or '')
  end
  apply(writes)
  -- The hold is compared with the callers' `now`, never with Redis's clock.
  if hold then redis.call('HSET', K.config, 'hold', fmt(hold)) end
  if earliest then note_due(config, earliest) end
  return result
end)
