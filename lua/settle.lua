-- settle: finish a batch of leased tasks, each fenced by the lease token its claim returned.
--
-- KEYS the queue's keys (see lib/arguments.lua): task, config, ready, scheduled, leased, done, failed,
--   corrupt are used
-- ARGV[1] now             ms since epoch
-- ARGV[2..] per item: id, token, outcome, then for "retry", "fail" and "done" two more:
--            id, token, "ack"
--            id, token, "retry", retryAtMs (when to run again; <= now means ready now), error text
--            id, token, "fail", 0, error text
--            id, token, "done", 0, result (an ack that keeps the handler's result, JSON text, at
--              most the queue's maxResultBytes, in the DONE state until it is trimmed)
--          (an ack, the common item, costs three arguments instead of five)
-- Reads config (only when an item is not an ack: a batch of acks alone reads no config, not even
--   the format version; its tokens came from a claim, which checked it): maxErrorBytes (error text
--   is cut to it), ordered (a retry goes back to READY at once, rank kept, and holds the whole queue
--   until its retry time: config hold "<retryAtMs>|<id>", which ends with that task), nextDue, fair,
--   historyAttempts (lib/records.lua history_add), maxResultBytes (a longer result is refused).
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
--   another storage format; nothing is written then: every argument is checked, and the config
--   and the states read, before the first write.
-- Uses: K, apply, as_time, bad, config_get, config_int, drop_field, fail_in_lane, fenced_presence
-- Uses: fmt, group_policy, guard, history_add, hold_line, id_arg, is_id, lane_of, lanes_flush
-- Uses: lanes_release, make_ready, new_writes, note_due, put, put_state, read_config_fields
-- Uses: read_many, read_record, settle_args, settle_item, state_line, time_arg, token_matches
-- Uses: zadd

return guard('settle', function()
  local now, now_text = settle_args()
  -- Items of 3 (ack) or 5 (retry, fail) arguments; where each starts, and what each asks.
  local all_acks, ids, tokens, outcomes, retries, errors, at = true, {}, {}, {}, {}, {}, SETTLE_ITEMS_AT
  while at <= #ARGV do
    local i = #ids + 1
    if i > BATCH_MAX then bad('at most ' .. BATCH_MAX .. ' items per call') end
    local id, token, outcome, retry_at, error_text, next_at = settle_item(at)
    if not is_id(id) then id_arg('item ' .. i .. ' id', id) end
    if outcome == nil then bad('item ' .. i .. ' needs id, token and outcome') end
    ids[i], tokens[i], outcomes[i] = id, token, outcome
    if outcome ~= 'ack' then
      if outcome ~= 'retry' and outcome ~= 'fail' and outcome ~= 'done' then
        bad('item ' .. i .. ' outcome must be "ack", "done", "retry" or "fail", got "' .. string.sub(outcome, 1, 20) .. '"')
      end
      if error_text == nil then
        bad('item ' .. i .. ' (' .. outcome .. ') needs ' .. (outcome == 'done' and '0 and its result' or 'retryAtMs and error text'))
      end
      if not as_time(retry_at) then time_arg('item ' .. i .. ' retryAtMs', retry_at) end
      retries[i], errors[i] = retry_at, error_text
      all_acks = false
    end
    at = next_at
  end
  if #ids == 0 then bad('expected at least one item') end
  local config = all_acks and {} or
    read_config_fields({ 'maxErrorBytes', 'ordered', 'nextDue', 'fair', 'historyAttempts', 'maxResultBytes' })
  local max_error = config_int(config, 'maxErrorBytes', DEFAULT_MAX_ERROR_BYTES)
  local ordered = config.ordered == '1'
  local max_result = config_int(config, 'maxResultBytes', DEFAULT_MAX_RESULT_BYTES)
  for i = 1, all_acks and 0 or #ids do
    if outcomes[i] == 'done' and #errors[i] > max_result then
      bad('item ' .. i .. ' (id ' .. ids[i] .. ') result is ' .. #errors[i] .. ' bytes; the queue keeps at most ' ..
        max_result .. ' (maxResultBytes)')
    end
  end

  -- The states, then the histories of the tasks a retry or a fail ends an attempt of (none for
  -- acks): one HMGET.
  local fields, named = {}, {}
  for i, id in ipairs(ids) do fields[i] = id .. ':s' end
  local histories, keep = {}, config_int(config, 'historyAttempts', DEFAULT_HISTORY_ATTEMPTS)
  if not all_acks and keep > 0 then
    for i, id in ipairs(ids) do
      if outcomes[i] == 'retry' or outcomes[i] == 'fail' then
        named[#named + 1] = id
        fields[#ids + #named] = id .. HISTORY
      end
    end
  end
  local values = read_many('HMGET', K.task, fields)
  for j, id in ipairs(named) do histories[id] = values[#ids + j] or '' end
  local result, writes, hold, hold_id, earliest = {}, new_writes(), nil, nil, nil
  local released = {} -- the slots given back: { lane, id } (lanes_release, after the loop)
  local tasks = {} -- by id, once an item of this call met it: a second item on it sees the first's change
  local ACKED = { state = { letter = 'D' } } -- what a later item sees of a task an ack here finished
  local replayed = { retry = { S = true, R = true, W = true, F = true }, fail = { F = true } }
  local states, done, finished, dropped = writes.fields, {}, {}, writes.drop
  for i, id in ipairs(ids) do
    local token, outcome = tokens[i], outcomes[i]
    -- The common item, an ack of a current lease, inline: its state read with one match, no table.
    local attempts, gen, max, flags, rank, type_group, run
    local acked = outcome == 'ack' or outcome == 'done'
    if acked and values[i] and not tasks[id] then
      local value, claim_at = values[i], nil
      attempts, gen, max, flags, rank, type_group, claim_at = string.match(value, ACK_STATE_PATTERN)
      -- The claim skipped and the run cut out to the next separator, with plain finds.
      local run_at = attempts and string.find(value, STATE_SEPARATOR, claim_at, true)
      local run_end = run_at and string.find(value, STATE_SEPARATOR, run_at + 1, true)
      if run_end then run = string.sub(value, run_at + 1, run_end - 1) else attempts = nil end
    end
    if attempts and (flags == '' or flags == 'r') and #rank <= DIGITS_RANK and #gen <= DIGITS_GEN and
      #attempts <= DIGITS_ATTEMPTS and #max <= DIGITS_MAX and token == rank .. '.' .. gen then
      states[#states + 1] = fields[i]
      states[#states + 1] = state_line('D', attempts, gen, max, now_text, '', rank, type_group, '', run,
        outcome == 'done' and errors[i] or '')
      done[#done + 1] = now_text
      done[#done + 1] = id
      finished[#finished + 1] = id
      dropped[#dropped + 1] = id
      tasks[id] = ACKED
      result[#result + 1] = 0
      result[#result + 1] = 'D'
    else
      local task = tasks[id]
      if not task then
        local body = nil
        if not values[i] then body = redis.call('HGET', K.task, id) or nil end
        task = read_record(values[i] or nil, body)
        tasks[id] = task
      end
      local state = task.state
      local status = fenced_presence(writes, id, task, config, now)
      if status then
        -- nothing more: a record that cannot be read was set aside
      elseif not acked and replayed[outcome][state.letter] and token_matches(state, token) then
        -- The same retry or fail ran already (a retry after a lost reply), and no claim came since:
        -- answer what it did. An ack is never answered this way: a DONE task says already_done.
        status = 0
      elseif state.letter ~= 'L' or not token_matches(state, token) then
        status = 1
      else
        status = 0
        finished[#finished + 1] = id
        state.at, state.claim, state.flags = now_text, '', ''
        local lane = state.group ~= '' and lane_of(state.type, state.group)
        if acked then
          state.letter, state.error = 'D', outcome == 'done' and errors[i] or ''
          done[#done + 1] = now_text
          done[#done + 1] = id
          drop_field(writes, id)
          if lane then released[#released + 1] = { lane = lane, id = id } end
        else
          local retry_at, retry_text = time_arg('retryAtMs', retries[i])
          state.error = string.sub(errors[i], 1, max_error)
          if keep > 0 then
            local ends = (outcome == 'fail' or tonumber(state.attempts) >= tonumber(state.max)) and 'failed' or 'retried'
            histories[id] = history_add(histories[id], state, now_text, ends, state.error, keep)
            put(writes, id .. HISTORY, histories[id])
          end
          if outcome == 'fail' or tonumber(state.attempts) >= tonumber(state.max) then
            state.letter = 'F'
            zadd(writes, K.failed, now_text, id)
            fail_in_lane(state, id, config, now)
          elseif retry_at > now and not ordered then
            state.letter, state.at = 'S', retry_text
            zadd(writes, K.scheduled, retry_text, id)
            earliest = math.min(earliest or retry_at, retry_at)
            -- An ordered group's retry keeps its slot: the group runs nothing else before it.
            if lane then
              if group_policy(config, state.type, lane).ordered then
                state.flags = 'h'
              else
                released[#released + 1] = { lane = lane, id = id }
              end
            end
          else
            if ordered and retry_at > now and retry_at > (hold or 0) then hold, hold_id = retry_at, id end
            make_ready(writes, id, state, config, now, true) -- a task of a group: first in it again
          end
        end
        if state.letter ~= 'R' and state.letter ~= 'W' then put_state(writes, id, state) end
      end
      result[#result + 1] = status
      result[#result + 1] = status == 6 and 'C' or (state and state.letter) or (task.body_info and 'R' or '')
    end
  end
  if #done > 0 then writes.adds[K.done] = done end
  if #finished > 0 then
    local list = writes.removes[K.leased]
    if list then
      for _, id in ipairs(finished) do list[#list + 1] = id end
    else
      writes.removes[K.leased] = finished
    end
  end
  apply(writes)
  -- The slots this batch gave back, and what their lanes may let out now: together, after the
  -- batch's own writes (one read of the lanes, of their parked tasks, one write of each kind).
  if #released > 0 then lanes_release(released, config, now) end
  lanes_flush(now)
  -- The hold is compared with the callers' `now`, never with Redis's clock.
  if hold then redis.call('HSET', K.config, 'hold', hold_line(fmt(hold), hold_id)) end
  if earliest then config_get(config, 'nextDue'); note_due(config, earliest) end
  return result
end)
