-- The reclaimer's steps (docs/reliability.md): expired leases returned or ended, finished tasks
-- trimmed past their retention, and the queue's counts.

-- Returns up to `limit` leases that expired before now - skew (now bounded by the store's clock:
-- decision_time): each a stall (counted in the task's
-- "<id>:t"). A lease its holder confirmed (flag r: an extend, so its handler had started) keeps its
-- attempt; one never confirmed gives it back (its handler may never have run). The task goes to
-- FAILED when a confirmed run was its last attempt ("lease expired after attempt n of m") or when it
-- stalled maxStalls times ("stalled n times"), else READY with its rank: from its second stall
-- marked solo (it may be what crashes its workers: the next claim hands it out alone, to a caller
-- running nothing else). Atomic, so concurrent reclaimers each see only what the others left.
-- Returns { id, letter, ... }. The caller runs lanes_flush().
local function reclaim_expired(config, now, now_text, skew, limit)
  local expired = redis.call('ZRANGEBYSCORE', K.leased, '-inf', '(' .. fmt(decision_time(config, now) - skew), 'LIMIT', 0, limit)
  local result = {}
  if #expired == 0 then return result end
  local writes = new_writes()
  local tasks = load_to_move(expired, writes, config, now, 'a LEASED task without its state')
  -- Each task's stalls and history (one HMGET).
  local keep = tonumber(config_get(config, 'historyAttempts')) or DEFAULT_HISTORY_ATTEMPTS
  local stall_fields, fields = {}, {}
  for i, id in ipairs(expired) do
    stall_fields[i] = id .. STALLS
    fields[#fields + 1] = stall_fields[i]
    if keep > 0 then fields[#fields + 1] = id .. HISTORY end
  end
  local found = read_many('HMGET', K.task, fields)
  local step = keep > 0 and 2 or 1
  local max_stalls = tonumber(config_get(config, 'maxStalls')) or DEFAULT_MAX_STALLS
  for i, id in ipairs(expired) do
    local task = tasks[id]
    if not task.problem then
      local state = task.state
      local ran = { attempts = state.attempts, run = state.run } -- the attempt, as it ran
      local started = string.find(state.flags, 'r', 1, true) ~= nil
      local stalls = (tonumber(found[step * (i - 1) + 1]) or 0) + 1
      put(writes, stall_fields[i], fmt(stalls))
      if not started then state.attempts = plus(state.attempts, -1) end
      state.gen = plus(state.gen, 1) -- revokes the token: a late settle of this lease is stale
      state.claim = ''
      state.at = now_text
      local max = tonumber(state.max)
      if (started and tonumber(state.attempts) >= max) or stalls >= max_stalls then
        state.letter, state.flags = 'F', ''
        if started and tonumber(state.attempts) >= max then
          state.error = 'lease expired after attempt ' .. state.attempts .. ' of ' .. state.max
        else
          state.error = 'stalled ' .. stalls .. ' times (the lease ran out while held: its worker stopped), at most ' ..
            max_stalls
        end
        zadd(writes, K.failed, now_text, id)
        fail_in_lane(state, id, config, now)
        put_state(writes, id, state)
      else
        state.flags = stalls >= 2 and 's' or ''
        make_ready(writes, id, state, config, now, true)
      end
      -- The attempt its lease ran out on (a run its holder never confirmed is not charged, but ran).
      if keep > 0 then
        put(writes, id .. HISTORY, history_add(found[step * i] or '', ran, now_text, 'expired',
          state.letter == 'F' and state.error or '', keep))
      end
      zrem(writes, K.leased, id)
      result[#result + 1] = id
      result[#result + 1] = state.letter == 'W' and 'R' or state.letter
    end
  end
  apply(writes)
  return result
end

-- Deletes up to `limit` members of a DONE or FAILED set finished before `cutoff`, with their records.
-- A FAILED task its ordered group waited behind (onFailure hold) lets the group go on as it goes.
local function trim_before(set_key, cutoff, limit, config)
  local old = redis.call('ZRANGEBYSCORE', set_key, '-inf', '(' .. fmt(cutoff), 'LIMIT', 0, limit)
  if #old == 0 then return 0 end
  if set_key == K.failed then
    local states = record_fields(old, false, false)
    for i, id in ipairs(old) do
      local state = states[i] and parse_state(states[i])
      if state and state.letter == 'F' and state.flags == 'h' and state.group ~= '' then
        do
          local lane = lane_of(state.type, state.group)
          local record = lane_get(lane)
          drop_slot(lane, record, id)
          if record.parked > 0 then lane_wait(lane, 0, config) end
        end
      end
    end
  end
  local fields = {}
  for _, id in ipairs(old) do
    fields[#fields + 1] = id
    fields[#fields + 1] = id .. ':s'
    fields[#fields + 1] = id .. STALLS
    fields[#fields + 1] = id .. HISTORY
    fields[#fields + 1] = id .. PROGRESS
  end
  write_many('HDEL', K.task, fields)
  write_many('ZREM', set_key, old)
  return #old
end

-- The most heads of parkedsince one tick puts right.
local PARKED_HEAD_CHECKS = 3

-- The age (ms) of the oldest parked task's wait: the head of parkedsince, the group or type whose
-- parked work has waited longest (0 when none is parked). With `repair` (the tick), the head is
-- read against its group's next parked task first, and put right: a parked task cancelled or
-- deleted left its group's time behind (its next one came later), a group with none parked left it
-- there (up to PARKED_HEAD_CHECKS heads, each read as a let-out reads a lane: parked_pages).
local function oldest_parked_age(now, repair)
  local head = redis.call('ZRANGE', K.parkedsince, 0, 0, 'WITHSCORES')
  for _ = 1, repair and PARKED_HEAD_CHECKS or 0 do
    if not head[2] then break end
    local name, score = head[1], tonumber(head[2])
    local first = parked_pages({ name }, { 1 })[1][1]
    local since = first and first.state and tonumber(first.state.at)
    if not first then
      redis.call('ZREM', K.parkedsince, name)
    elseif since and since ~= score then
      redis.call('ZADD', K.parkedsince, since, name)
    else
      break
    end
    head = redis.call('ZRANGE', K.parkedsince, 0, 0, 'WITHSCORES')
  end
  return head[2] and math.max(0, now - tonumber(head[2])) or 0
end

-- { ready, scheduled, leased, done, failed, oldestReadyAgeMs, mostOverdueLeaseMs, dueScheduled,
-- corrupt, paused, pauses, oldestWaitingAgeMs }. `counts` may carry counts the caller already
-- knows, to save their ZCARD; `repair` (the tick) puts parkedsince's head right first.
local function queue_stats(now, counts, config, repair)
  counts = counts or {}
  for _, name in ipairs({ 'ready', 'done', 'failed', 'corrupt' }) do
    if counts[name] == nil then counts[name] = redis.call('ZCARD', K[name]) end
  end
  if counts.leased == nil then counts.leased = leased_count() end
  if counts.scheduled == nil then counts.scheduled = scheduled_count() end
  local heads = counts.ready
  local parked = redis.call('ZCARD', K.grouped)
  counts.ready = heads + parked -- READY tasks parked count too
  local oldest_ready_age, most_overdue, due_scheduled = 0, 0, 0
  if heads > 0 then
    local head = redis.call('ZRANGE', K.ready, 0, 0)[1]
    local values = redis.call('HMGET', K.task, head .. ':s', head)
    local since = nil
    if values[1] then
      local state = parse_state(values[1])
      if state then since = tonumber(state.at) end
    elseif values[2] then
      local info = parse_body(values[2])
      if info then since = info.enqueued end
    end
    if since then oldest_ready_age = math.max(0, now - since) end
  end
  if counts.leased > 0 then
    local earliest = tonumber(redis.call('ZRANGEBYSCORE', K.leased, '-inf', '(+inf', 'WITHSCORES', 'LIMIT', 0, 1)[2])
    most_overdue = math.max(0, now - earliest)
  end
  if counts.scheduled > 0 then
    due_scheduled = redis.call('ZCOUNT', K.scheduled, SCHEDULED_FROM, fmt(now))
  end
  -- Waiting counts parked tasks too: a group that holds its tasks back (a long head, a FAILED task
  -- held, a rate) shows here while the ready set's head moves on.
  local oldest_waiting_age = math.max(oldest_ready_age, parked > 0 and oldest_parked_age(now, repair) or 0)
  return {
    counts.ready, counts.scheduled, counts.leased, counts.done, counts.failed,
    oldest_ready_age, most_overdue, due_scheduled, counts.corrupt,
    config.paused == '1' and 1 or 0, config.pauses or '', oldest_waiting_age,
  }
end
