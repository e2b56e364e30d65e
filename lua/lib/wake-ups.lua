-- Wake-ups (docs/wake-ups.md). On AWS a worker runs only when something invokes it, so whoever
-- makes work fall due arranges for a worker to look then. Two marks in the config say who will:
--   `wake`    the wake-up messages arranged and not answered yet: "<ms>|<call id>" entries, comma-
--             separated, earliest first (at most WAKE_PENDING_MAX). The call id says which call
--             arranged it, so the same call repeated after a lost reply is told again. The first claim
--             of the invocation a wake-up started answers it (removes the earliest one due); one due
--             WAKE_PENDING_MS ago and not answered is taken for lost. A claim never removes another:
--             a wake-up arranged is never arranged a second time. An entry a claim arranged for the
--             tasks its worker had no room for ends in ROOM ("<ms>|<call>+"): it covers only that.
--   `active`  "<ms>": the last claim of a worker still draining with room for more work (it
--             arranges the next wake-up itself when it stops, handoff.lua); "<ms>!" once ready
--             work came under it (new_work_flagged).

-- The calls of the reclaimer's tick say so in their ids (Queue.tick).
local TICK_CALL = 'tick-'

-- Appended to the active mark when ready work came under it; a call id never holds it.
local NEW_WORK = '!'

-- Appended to a `wake` entry a claim arranged for tasks its worker had no room for (a type at its
-- concurrency, its slots full): a worker must come that has room, and the workers running may have
-- none for those tasks for a long time (long tasks in their slots, the event source at its maximum
-- concurrency), so such an entry covers no other work: a short task enqueued meanwhile gets a
-- wake-up of its own, which a running worker with a free slot takes (docs/wake-ups.md).
local ROOM = '+'

-- The most wake-ups the `wake` mark keeps: the earliest ones (a later one dropped may be arranged
-- again, one message too many, never one too few).
local WAKE_PENDING_MAX = 8

-- The wake-ups arranged and not answered, earliest first, as { at, call, room } (an entry of the
-- release before, "<ms>" alone, reads with call ""), without those due more than WAKE_PENDING_MS
-- ago: lost.
local function wake_list(config, now)
  local list = {}
  for at, call in string.gmatch(config.wake or '', '(%d+)|?([^,]*)') do
    local time = tonumber(at)
    if time >= now - WAKE_PENDING_MS then
      local room = string.sub(call, -1) == ROOM
      list[#list + 1] = { at = time, call = room and string.sub(call, 1, -2) or call, room = room }
    end
  end
  table.sort(list, function(a, b) return a.at < b.at end)
  return list
end

-- Writes the `wake` mark from `list` (wake_list's form), its earliest WAKE_PENDING_MAX entries.
local function wake_write(config, list)
  local parts = {}
  for i = 1, math.min(#list, WAKE_PENDING_MAX) do
    parts[i] = fmt(list[i].at) .. '|' .. list[i].call .. (list[i].room and ROOM or '')
  end
  local text = table.concat(parts, ',')
  if text == (config.wake or '') then return end
  if text == '' then
    redis.call('HDEL', K.config, 'wake')
    config.wake = nil
  else
    redis.call('HSET', K.config, 'wake', text)
    config.wake = text
  end
end

-- The time of the active mark, or nil.
local function active_time(config)
  local active = config.active
  return active and tonumber(string.match(active, '^%d+')) or nil
end

-- Whether a worker will look at the queue by `due`: a wake-up arranged for no later and not answered
-- yet (its worker is still to start; for the reclaimer's tick, one later than now counts only when a
-- tick arranged it: the tick cannot know another was ever sent, a producer's reply lost after the
-- mark was written, and one message too many costs an empty claim), or a worker with room that
-- claimed within WAKE_ACTIVE_MS. An entry for tasks left for want of room (ROOM) covers only
-- another such (`room`). Returns whether it is covered, and the entry of `list` that covers it.
local function wake_covers(config, list, now, due, from_tick, room)
  for _, entry in ipairs(list) do
    if entry.at > due then break end
    -- The tick, the safety net, trusts no entry due more than WAKE_ACTIVE_MS ago and not answered:
    -- it cannot tell a message waiting for the event source's concurrency from one never sent.
    if (room or not entry.room) and (not from_tick or (entry.at <= now and entry.at > now - WAKE_ACTIVE_MS) or
      (entry.at > now and string.sub(entry.call, 1, #TICK_CALL) == TICK_CALL)) then
      return true, entry
    end
  end
  local active = active_time(config)
  return active ~= nil and active >= now - WAKE_ACTIVE_MS and active <= now + WAKE_ACTIVE_MS, nil
end

-- The wake-up a call arranged in an earlier run of itself (a store's repeat after a lost reply):
-- its time, while it still matters; else nil.
local function repeated_wake(config, now, call)
  for _, entry in ipairs(wake_list(config, now)) do
    if entry.call == call then return entry.at end
  end
  return nil
end

-- Whether ready work came under the active mark since it was last written: the worker that stops
-- under it may have made its last claim before that work came, and must arrange a wake-up for it
-- (handoff.lua).
local function new_work_flagged(config)
  return config.active ~= nil and string.sub(config.active, -1) == NEW_WORK
end

-- Work falls due at `due` (ms; before now means now). Returns the time the caller must send a
-- wake-up for, and records it in config `wake` (with `call`, the caller's id for this call); nil
-- when one is arranged already, or when `due` is more than `horizon` ms away (a reclaimer run
-- closer to it arranges that one). A repeat of the call that recorded the mark (a store's retry
-- after a lost reply) is answered the mark's time again. `room`: for tasks a claim left for want of
-- room (the entry is marked ROOM). `config` carries wake and active.
local function need_wake(config, now, due, horizon, call, room)
  if due < now then due = now end
  if due > now + horizon then return nil end
  local from_tick = call ~= nil and string.sub(call, 1, #TICK_CALL) == TICK_CALL
  local list = wake_list(config, now)
  if call then
    for _, entry in ipairs(list) do
      if entry.call == call then return entry.at end
    end
  end
  local covered, entry = wake_covers(config, list, now, due, from_tick, room)
  if covered then
    -- Ready work under the active mark: the worker under it may have claimed for the last time
    -- before this call; flag the mark, so that its handoff looks at the ready set (once per mark).
    if not entry and due <= now and not new_work_flagged(config) then
      config.active = config.active .. NEW_WORK
      redis.call('HSET', K.config, 'active', config.active)
    end
    return nil
  end
  list[#list + 1] = { at = due, call = call or '', room = room or false }
  table.sort(list, function(a, b) return a.at < b.at end)
  wake_write(config, list)
  return due
end

-- A claim: a worker is draining now. Written at most every WAKE_ACTIVE_MS / 2, so a busy queue pays
-- one HSET every few seconds, not one per claim. Rewriting drops a NEW_WORK flag: this claim came
-- after that work and saw it. A claim that filled the room its worker had (`room` false) writes
-- nothing: that worker covers no new work, so what comes meanwhile gets a wake-up of its own.
local function mark_active(config, now, room)
  if not room then return end
  local active = active_time(config)
  if active == nil or active > now or active < now - WAKE_ACTIVE_MS / 2 then
    local text = fmt(now)
    redis.call('HSET', K.config, 'active', text)
    config.active = text
  end
end

-- A worker stops draining: its active mark covers nothing any more (the wake-ups still to be
-- answered stay: their workers are to come).
local function wake_stopped(config)
  if config.active then
    redis.call('HDEL', K.config, 'active')
    config.active = nil
  end
end

-- A worker a wake-up brought claims: that wake-up is answered (the earliest one due by now, one
-- for any work before one for tasks left for want of room: any of them brought a worker like this
-- one, and a ROOM entry covers no other work), so what its worker cannot take (its slots full)
-- gets a wake-up of its own.
local function wake_answered(config, now)
  local list, kept, answer = wake_list(config, now), {}, nil
  for i, entry in ipairs(list) do
    if entry.at > now then break end
    if not entry.room then
      answer = i
      break
    end
    if answer == nil then answer = i end
  end
  if answer == nil then return end
  for i, entry in ipairs(list) do
    if i ~= answer then kept[#kept + 1] = entry end
  end
  wake_write(config, kept)
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

-- Work was taken away (cancel, delete): the wake-ups arranged for later, when nothing falls due
-- by then any more, are forgotten (`now` 0: unknown, kept), and so is an ordered queue's hold for a
-- task that left. `config` carries wake, nextDue, ordered, hold.
local function forget_marks(config, now, gone)
  local hold, held = hold_of(config)
  if held and gone[held] then
    redis.call('HDEL', K.config, 'hold')
    config.hold = nil
  end
  if now == 0 or not config.wake then return end
  local list = wake_list(config, now)
  if #list == 0 or list[#list].at <= now then return end
  if redis.call('ZCARD', K.ready) + redis.call('ZCARD', K.leased) > 0 then return end
  config.nextDue = fmt(earliest_due())
  local due = next_due_of(config, now)
  local kept = {}
  for _, entry in ipairs(list) do
    if entry.at <= now or (due ~= nil and due <= entry.at) then kept[#kept + 1] = entry end
  end
  wake_write(config, kept)
end

-- The checks a call id passes: 1-64 characters of A-Z a-z 0-9 _ . - ("" for none).
local function call_arg(value)
  return name_arg('callId', value or '', 64, true)
end

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
  local stall_fields = {}
  for i, id in ipairs(expired) do stall_fields[i] = id .. STALLS end
  local stall_counts = read_many('HMGET', K.task, stall_fields)
  local max_stalls = tonumber(config_get(config, 'maxStalls')) or DEFAULT_MAX_STALLS
  for i, id in ipairs(expired) do
    local task = tasks[id]
    if not task.problem then
      local state = task.state
      local started = string.find(state.flags, 'r', 1, true) ~= nil
      local stalls = (tonumber(stall_counts[i]) or 0) + 1
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
