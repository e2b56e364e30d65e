-- Wake-ups (docs/wake-ups.md). On AWS a worker runs only when something invokes it, so whoever
-- makes work fall due arranges for a worker to look then. Config `wake` is the earliest time one is
-- arranged for: a wake-up message due then ("<ms>|<call id>": the call that asked for it, so the
-- same call repeated after a lost reply is told again), or, when in the past, the last claim of a
-- worker still draining, which arranges the next wake-up itself when it stops (handoff.lua).

-- The calls of the reclaimer's tick say so in their ids (Queue.tick).
local TICK_CALL = 'tick-'

-- Appended to a mark already past when ready work came under it (new_work_flagged); a call id never
-- holds it.
local NEW_WORK = '!'

-- Whether a worker will look at the queue by `due`: a wake-up arranged for no later, or a worker
-- that claimed within WAKE_ACTIVE_MS. For the reclaimer's tick (`from_tick`), a wake-up arranged for
-- later than now by anyone but a tick counts for nothing: the tick cannot know it was ever sent (a
-- producer's reply lost after the mark was written), and one more message costs an empty claim.
local function wake_covers(config, now, due, from_tick)
  local wake = wake_time(config)
  if wake == nil or wake > due or wake < now - WAKE_ACTIVE_MS then return false end
  if not from_tick or wake <= now then return true end
  return string.find(config.wake, '|' .. TICK_CALL, 1, true) ~= nil
end

-- The wake-up a call arranged in an earlier run of itself (a store's repeat after a lost reply):
-- its time, while it still matters; else nil. A NEW_WORK flag after the mark does not change whose it is.
local function repeated_wake(config, now, call)
  local wake = wake_time(config)
  if not wake or wake < now - WAKE_ACTIVE_MS then return nil end
  local mark = fmt(wake) .. '|' .. call
  if config.wake == mark or config.wake == mark .. NEW_WORK then return wake end
  return nil
end

-- Whether work was made ready, covered by a mark already past (a worker draining, or a wake-up
-- whose worker is running), since that mark was last written: the worker that stops under it may
-- have made its last claim before that work came, and must arrange a wake-up for it (handoff.lua).
local function new_work_flagged(config)
  return config.wake ~= nil and string.sub(config.wake, -1) == NEW_WORK
end

-- Work falls due at `due` (ms; before now means now). Returns the time the caller must send a
-- wake-up for, and records it in config `wake` (with `call`, the caller's id for this call); nil
-- when one is arranged already, or when `due` is more than `horizon` ms away (a reclaimer run
-- closer to it arranges that one). A repeat of the call that recorded the mark (a store's retry
-- after a lost reply) is answered the mark's time again.
local function need_wake(config, now, due, horizon, call)
  if due < now then due = now end
  if due > now + horizon then return nil end
  local from_tick = call ~= nil and string.sub(call, 1, #TICK_CALL) == TICK_CALL
  if wake_covers(config, now, due, from_tick) then
    -- Ready work under a mark already past: the worker under it may have claimed for the last time
    -- before this call; flag the mark, so that its handoff looks at the ready set (once per mark).
    if due <= now and wake_time(config) <= now and not new_work_flagged(config) then
      config.wake = config.wake .. NEW_WORK
      redis.call('HSET', K.config, 'wake', config.wake)
    end
    return call and repeated_wake(config, now, call)
  end
  local text = fmt(due)
  if call then text = text .. '|' .. call end
  redis.call('HSET', K.config, 'wake', text)
  config.wake = text
  return due
end

-- A claim: a worker is draining now. Written at most every WAKE_ACTIVE_MS / 2, so a busy queue pays
-- one HSET every few seconds, not one per claim. Rewriting drops a NEW_WORK flag: this claim came
-- after that work and saw it.
local function mark_active(config, now)
  local wake = wake_time(config)
  if wake == nil or wake > now or wake < now - WAKE_ACTIVE_MS / 2 then
    local text = fmt(now)
    redis.call('HSET', K.config, 'wake', text)
    config.wake = text
  end
end

-- When scheduled work (or a group or type waiting to run again) next falls due, or an ordered
-- queue's hold ends; nil when neither. `config` carries nextDue, ordered and hold.
local function next_due_of(config, now)
  local due = tonumber(config.nextDue)
  if due == nil then due = earliest_due() end
  if due >= NOTHING_DUE then due = nil end
  local hold = hold_of(config)
  if config.ordered == '1' and hold and hold > now and (due == nil or hold < due) then due = hold end
  return due
end

-- Work was taken away (cancel, delete): a wake-up arranged for later, when nothing falls due by
-- then any more, is forgotten (`now` 0: unknown, kept), and so is an ordered queue's hold for a
-- task that left. `config` carries wake, nextDue, ordered, hold.
local function forget_marks(config, now, gone)
  local hold, held = hold_of(config)
  if held and gone[held] then
    redis.call('HDEL', K.config, 'hold')
    config.hold = nil
  end
  local wake = wake_time(config)
  if now == 0 or not wake or wake <= now then return end
  config.nextDue = fmt(earliest_due())
  local due = next_due_of(config, now)
  if (due == nil or due > wake) and redis.call('ZCARD', K.ready) + redis.call('ZCARD', K.leased) == 0 then
    redis.call('HDEL', K.config, 'wake')
    config.wake = nil
  end
end

-- The checks a call id passes: 1-64 characters of A-Z a-z 0-9 _ . - ("" for none).
local function call_arg(value)
  return name_arg('callId', value or '', 64, true)
end

-- Returns up to `limit` leases that expired before now - skew: to READY with their rank (marked
-- solo: it may have crashed its worker, so the next claim hands it out alone), or to FAILED ("lease
-- expired") when their attempts are used up. Atomic, so concurrent reclaimers each see only what
-- the others left. Returns { id, letter, ... }. The caller runs lanes_flush().
local function reclaim_expired(config, now, now_text, skew, limit)
  local expired = redis.call('ZRANGEBYSCORE', K.leased, '-inf', '(' .. fmt(now - skew), 'LIMIT', 0, limit)
  local result = {}
  if #expired == 0 then return result end
  local writes = new_writes()
  local tasks = load_to_move(expired, writes, config, now, 'a LEASED task without its state')
  for _, id in ipairs(expired) do
    local task = tasks[id]
    if not task.problem then
      local state = task.state
      state.gen = plus(state.gen, 1) -- revokes the token: a late settle of this lease is stale
      state.claim = ''
      state.at = now_text
      if tonumber(state.attempts) >= tonumber(state.max) then
        state.letter, state.flags = 'F', ''
        state.error = 'lease expired after attempt ' .. state.attempts .. ' of ' .. state.max
        zadd(writes, K.failed, now_text, id)
        put_state(writes, id, state)
        if state.group ~= '' then lane_release(lane_of(state.type, state.group), id, config, now) end
      else
        state.flags = 's'
        make_ready(writes, id, state, config, now, true)
      end
      if task.upgraded and task.body then put(writes, id, task.body) end
      zrem(writes, K.leased, id)
      result[#result + 1] = id
      result[#result + 1] = state.letter == 'W' and 'R' or state.letter
    end
  end
  apply(writes)
  return result
end

-- Deletes up to `limit` members of a DONE or FAILED set finished before `cutoff`, with their records.
local function trim_before(set_key, cutoff, limit)
  local old = redis.call('ZRANGEBYSCORE', set_key, '-inf', '(' .. fmt(cutoff), 'LIMIT', 0, limit)
  if #old == 0 then return 0 end
  local fields = {}
  for _, id in ipairs(old) do
    fields[#fields + 1] = id
    fields[#fields + 1] = id .. ':s'
  end
  write_many('HDEL', K.task, fields)
  write_many('ZREM', set_key, old)
  return #old
end

-- { ready, scheduled, leased, done, failed, oldestReadyAgeMs, mostOverdueLeaseMs, dueScheduled,
-- corrupt }. `counts` may carry counts the caller already knows, to save their ZCARD.
local function queue_stats(now, counts, config)
  counts = counts or {}
  for _, name in ipairs({ 'ready', 'leased', 'done', 'failed', 'corrupt' }) do
    if counts[name] == nil then counts[name] = redis.call('ZCARD', K[name]) end
  end
  if counts.scheduled == nil then counts.scheduled = scheduled_count() end
  local heads = counts.ready
  counts.ready = heads + redis.call('ZCARD', K.grouped) -- READY tasks parked count too
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
    local earliest = tonumber(redis.call('ZRANGE', K.leased, 0, 0, 'WITHSCORES')[2])
    most_overdue = math.max(0, now - earliest)
  end
  if counts.scheduled > 0 then
    due_scheduled = redis.call('ZCOUNT', K.scheduled, SCHEDULED_FROM, fmt(now))
  end
  return {
    counts.ready, counts.scheduled, counts.leased, counts.done, counts.failed,
    oldest_ready_age, most_overdue, due_scheduled, counts.corrupt,
    config.paused == '1' and 1 or 0, config.pauses or '',
  }
end
