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
-- A queue shared by deployments (config `deps`, written by configure.lua: two or more deployments
-- run its types) keeps the two marks per deployment, `wake@<deployment>` and `active@<deployment>`
-- (its scope, "@<deployment>"; "" is the queue's own pair): a task's wake-up goes to the deployment
-- that runs its type (config `n:<type>`), to its wake queue (config `u:<deployment>`), and one
-- deployment's workers neither cover nor answer another's need.

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
local function wake_list(config, now, scope)
  local list = {}
  for at, call in string.gmatch(config_get(config, 'wake' .. (scope or '')) or '', WAKE_ENTRY_PATTERN) do
    local time = tonumber(at)
    if time >= now - WAKE_PENDING_MS then
      local room = string.sub(call, -1) == ROOM
      list[#list + 1] = { at = time, call = room and string.sub(call, 1, -2) or call, room = room }
    end
  end
  table.sort(list, function(a, b) return a.at < b.at end)
  return list
end

-- Writes a mark of `scope` (config field `name` .. scope), or removes it (`text` nil or "").
local function mark_put(config, name, scope, text)
  local field = name .. (scope or '')
  if text == '' then text = nil end
  if text == config_get(config, field) then return end
  if text then redis.call('HSET', K.config, field, text) else redis.call('HDEL', K.config, field) end
  config[field] = text
end

-- Writes the `wake` mark from `list` (wake_list's form), its earliest WAKE_PENDING_MAX entries.
local function wake_write(config, list, scope)
  local parts = {}
  for i = 1, math.min(#list, WAKE_PENDING_MAX) do
    parts[i] = wake_entry_line(fmt(list[i].at), list[i].call .. (list[i].room and ROOM or ''))
  end
  mark_put(config, 'wake', scope, table.concat(parts, ','))
end

-- The time of the active mark, or nil.
local function active_time(config, scope)
  local active = config_get(config, 'active' .. (scope or ''))
  return active and tonumber(string.match(active, '^%d+')) or nil
end

-- The mark scope of deployment `name`: "@<name>" on a queue shared by deployments, else "".
local function deployment_scope(config, name)
  if name == nil or name == '' or not config_get(config, 'deps') then return '' end
  return '@' .. name
end

-- The mark scope of the deployment that runs `task_type` ("" when the queue is not shared, or no
-- deployment declared the type).
local function type_scope(config, task_type)
  if not config_get(config, 'deps') then return '' end
  local name = config_get(config, 'n:' .. task_type)
  return name and ('@' .. name) or ''
end

-- Every scope a mark may be in: "" and, on a shared queue, each deployment's.
local function all_scopes(config)
  local scopes = { '' }
  for name in string.gmatch(config_get(config, 'deps') or '', '[^,]+') do scopes[#scopes + 1] = '@' .. name end
  return scopes
end

-- The reply's wakeAt text for the wake-ups arranged per scope (`times`: scope -> ms) by a caller
-- of scope `caller`: "<ms>" for the caller's own wake queue (its scope, "", or a deployment whose
-- wake queue the config does not name), then ",<ms> <url>" for each other deployment's wake queue
-- (config `u:<deployment>`); "" first when the caller's own needs none, "" alone when none does.
local function wake_reply(config, times, caller)
  local own, urls, at_url = nil, {}, {}
  for _, scope in ipairs(all_scopes(config)) do
    local at = times[scope]
    if at then
      local url = scope ~= '' and scope ~= caller and config_get(config, 'u:' .. string.sub(scope, 2))
      if not url then
        if own == nil or at < own then own = at end
      elseif at_url[url] == nil then
        urls[#urls + 1] = url
        at_url[url] = at
      elseif at < at_url[url] then
        at_url[url] = at
      end
    end
  end
  local parts = { own and fmt(own) or '' }
  for _, url in ipairs(urls) do parts[#parts + 1] = fmt(at_url[url]) .. ' ' .. url end
  return table.concat(parts, ',')
end

-- Whether a worker will look at the queue by `due`: a wake-up arranged for no later and not answered
-- yet (its worker is still to start; for the reclaimer's tick, one later than now counts only when a
-- tick arranged it: the tick cannot know another was ever sent, a producer's reply lost after the
-- mark was written, and one message too many costs an empty claim), or a worker with room that
-- claimed within WAKE_ACTIVE_MS. An entry for tasks left for want of room (ROOM) covers only
-- another such (`room`). Returns whether it is covered, and the entry of `list` that covers it.
local function wake_covers(config, list, now, due, from_tick, room, scope)
  for _, entry in ipairs(list) do
    if entry.at > due then break end
    -- The tick, the safety net, trusts no entry due more than WAKE_ACTIVE_MS ago and not answered:
    -- it cannot tell a message waiting for the event source's concurrency from one never sent.
    if (room or not entry.room) and (not from_tick or (entry.at <= now and entry.at > now - WAKE_ACTIVE_MS) or
      (entry.at > now and string.sub(entry.call, 1, #TICK_CALL) == TICK_CALL)) then
      return true, entry
    end
  end
  local active = active_time(config, scope)
  return active ~= nil and active >= now - WAKE_ACTIVE_MS and active <= now + WAKE_ACTIVE_MS, nil
end

-- The wake-up a call arranged in an earlier run of itself (a store's repeat after a lost reply):
-- its time, while it still matters; else nil.
local function repeated_wake(config, now, call, scope)
  for _, entry in ipairs(wake_list(config, now, scope)) do
    if entry.call == call then return entry.at end
  end
  return nil
end

-- Whether ready work came under the active mark since it was last written: the worker that stops
-- under it may have made its last claim before that work came, and must arrange a wake-up for it
-- (handoff.lua).
local function new_work_flagged(config, scope)
  local active = config_get(config, 'active' .. (scope or ''))
  return active ~= nil and string.sub(active, -1) == NEW_WORK
end

-- Work falls due at `due` (ms; before now means now). Returns the time the caller must send a
-- wake-up for, and records it in config `wake` (with `call`, the caller's id for this call); nil
-- when one is arranged already, or when `due` is more than `horizon` ms away (a reclaimer run
-- closer to it arranges that one). A repeat of the call that recorded the mark (a store's retry
-- after a lost reply) is answered the mark's time again. `room`: for tasks a claim left for want of
-- room (the entry is marked ROOM). `scope`: whose marks (deployment_scope; nil: the queue's).
local function need_wake(config, now, due, horizon, call, room, scope)
  if due < now then due = now end
  if due > now + horizon then return nil end
  local from_tick = call ~= nil and string.sub(call, 1, #TICK_CALL) == TICK_CALL
  local list = wake_list(config, now, scope)
  if call then
    for _, entry in ipairs(list) do
      if entry.call == call then return entry.at end
    end
  end
  local covered, entry = wake_covers(config, list, now, due, from_tick, room, scope)
  if covered then
    -- Ready work under the active mark: the worker under it may have claimed for the last time
    -- before this call; flag the mark, so that its handoff looks at the ready set (once per mark).
    if not entry and due <= now and not new_work_flagged(config, scope) then
      mark_put(config, 'active', scope, config_get(config, 'active' .. (scope or '')) .. NEW_WORK)
    end
    return nil
  end
  list[#list + 1] = { at = due, call = call or '', room = room or false }
  table.sort(list, function(a, b) return a.at < b.at end)
  wake_write(config, list, scope)
  return due
end

-- Work fell due for several scopes (`dues`: scope -> ms, from type_scope): need_wake for each, by
-- a caller of scope `caller` (deployment_scope; "" for a caller of no deployment: a producer, the
-- planner, a resume). A repeat of the call (a store's retry after a lost reply) is told again what
-- its first run arranged in any scope (`repeatable`: the call id is the caller's own, not nil or
-- a stand-in). Returns the reply's wakeAt text (wake_reply).
local function arrange_wakes(config, now, dues, horizon, call, repeatable, caller)
  local times = {}
  for _, scope in ipairs(all_scopes(config)) do
    local due = dues[scope]
    local at = due and need_wake(config, now, due, horizon, call, false, scope)
    if not at and repeatable then at = repeated_wake(config, now, call, scope) end
    times[scope] = at
  end
  return wake_reply(config, times, caller)
end

-- A claim: a worker is draining now. Written at most every WAKE_ACTIVE_MS / 2, so a busy queue pays
-- one HSET every few seconds, not one per claim. Rewriting drops a NEW_WORK flag: this claim came
-- after that work and saw it. A claim that filled the room its worker had (`room` false) writes
-- nothing: that worker covers no new work, so what comes meanwhile gets a wake-up of its own.
local function mark_active(config, now, room, scope)
  if not room then return end
  local active = active_time(config, scope)
  if active == nil or active > now or active < now - WAKE_ACTIVE_MS / 2 then mark_put(config, 'active', scope, fmt(now)) end
end

-- A worker stops draining: its active mark covers nothing any more (the wake-ups still to be
-- answered stay: their workers are to come).
local function wake_stopped(config, scope)
  mark_put(config, 'active', scope, nil)
end

-- A worker a wake-up brought claims: that wake-up is answered (the earliest one due by now, one
-- for any work before one for tasks left for want of room: any of them brought a worker like this
-- one, and a ROOM entry covers no other work), so what its worker cannot take (its slots full)
-- gets a wake-up of its own.
local function wake_answered(config, now, scope)
  local list, kept, answer = wake_list(config, now, scope), {}, nil
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
  wake_write(config, kept, scope)
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

-- How many members of the scheduled set (and of groupwait) a deployment's next due time reads at
-- most on a shared queue (next_due_for).
local DUE_SCAN = 32

-- Of `head` (task ids, each followed by its score when `scored`), the position of the first whose
-- type the deployment of `scope` runs, or nil. Its state names the type; a READY task never claimed
-- has none, and only such a task's body is read (a second HMGET, when there is one). A task whose
-- record cannot be read counts for every deployment: its worker finds out.
local function first_in_scope(config, head, scored, scope)
  local step = scored and 2 or 1
  local fields = {}
  for i = 1, #head, step do fields[#fields + 1] = head[i] .. ':s' end
  if #fields == 0 then return nil end
  local states = read_many('HMGET', K.task, fields)
  local types, bodies, without = {}, {}, {}
  for k = 1, #fields do
    local state = states[k] and parse_state(states[k])
    if state then
      types[k] = state.type
    elseif not states[k] then
      without[#without + 1] = k
      bodies[#bodies + 1] = head[1 + (k - 1) * step]
    end
  end
  if #bodies > 0 then
    local values = read_many('HMGET', K.task, bodies)
    for j, k in ipairs(without) do
      local info = values[j] and parse_body(values[j])
      types[k] = info and info.type
    end
  end
  for k = 1, #fields do
    if not types[k] or type_scope(config, types[k]) == scope then return k end
  end
  return nil
end

-- When work of the deployment of `scope` next falls due (next_due_of's, for its types): on a
-- shared queue, the first of the scheduled set's and groupwait's earliest DUE_SCAN members whose
-- type it runs; none among DUE_SCAN: the last one read's time, which its work comes no sooner
-- than (a wake-up then finds nothing of its and hands off, reading on from there).
local function next_due_for(config, now, scope)
  local due = next_due_of(config, now)
  if due == nil or scope == '' then return due end
  local hold = hold_of(config)
  local found = (config.ordered == '1' and hold and hold > now) and hold or nil
  local function earlier(at)
    if found == nil or at < found then found = at end
  end
  local head = redis.call('ZRANGEBYSCORE', K.scheduled, SCHEDULED_FROM, '+inf', 'WITHSCORES', 'LIMIT', 0, DUE_SCAN)
  local k = first_in_scope(config, head, true, scope) or (#head == 2 * DUE_SCAN and DUE_SCAN)
  if k then earlier(tonumber(head[2 * k])) end
  local waiting = redis.call('ZRANGE', K.groupwait, 0, DUE_SCAN - 1, 'WITHSCORES')
  for i = 1, #waiting, 2 do
    local name = waiting[i]
    local task_type = string.sub(name, 1, 1) == '@' and string.sub(name, 2) or lane_type(name)
    if not task_type or type_scope(config, task_type) == scope or i + 1 == 2 * DUE_SCAN then
      earlier(tonumber(waiting[i + 1]))
      break
    end
  end
  return found
end

-- When the earliest lease of the deployment of `scope` ends (ms), nil when none: on a shared
-- queue, the first of the leased set's earliest DUE_SCAN members whose type it runs, or the last
-- one read's (as next_due_for).
local function lease_end_for(config, scope)
  local head = redis.call('ZRANGEBYSCORE', K.leased, '-inf', '(+inf', 'WITHSCORES', 'LIMIT', 0,
    scope == '' and 1 or DUE_SCAN)
  if #head == 0 or scope == '' then return tonumber(head[2]) end
  local k = first_in_scope(config, head, true, scope) or (#head == 2 * DUE_SCAN and DUE_SCAN)
  return k and tonumber(head[2 * k]) or nil
end

-- Whether READY work of the deployment of `scope` waits in the ready set: on a shared queue, a task
-- of a type it runs among the set's first DUE_SCAN (or a set longer than that: it may be further on).
local function ready_for(config, scope)
  if scope == '' then return redis.call('ZCARD', K.ready) > 0 end
  local head = redis.call('ZRANGE', K.ready, 0, DUE_SCAN)
  return #head > DUE_SCAN or first_in_scope(config, head, false, scope) ~= nil
end

-- Work was taken away (cancel, delete): the wake-ups arranged for later, when nothing falls due
-- by then any more, are forgotten (`now` 0: unknown, kept), config nextDue is set to what is due
-- now that it left, and an ordered queue's hold for a task that left goes. `config` carries wake,
-- nextDue, ordered, hold.
local function forget_marks(config, now, gone)
  local hold, held = hold_of(config)
  if held and gone[held] then
    redis.call('HDEL', K.config, 'hold')
    config.hold = nil
  end
  local any = false
  for _ in pairs(gone) do
    any = true
    break
  end
  if not any then return end
  -- nextDue may name what left: written as what is due now, since a later step (a resume, a
  -- hand-off) arranges wake-ups from it.
  set_next_due(config, earliest_due())
  if now == 0 then return end
  local checked = false
  for _, scope in ipairs(all_scopes(config)) do
    local list = wake_list(config, now, scope)
    if #list > 0 and list[#list].at > now then
      if not checked then
        if redis.call('ZCARD', K.ready) + leased_count() > 0 then return end
        checked = true
      end
      local due = next_due_for(config, now, scope)
      local kept = {}
      for _, entry in ipairs(list) do
        if entry.at <= now or (due ~= nil and due <= entry.at) then kept[#kept + 1] = entry end
      end
      wake_write(config, kept, scope)
    end
  end
end

-- The checks a call id passes: 1-64 characters of A-Z a-z 0-9 _ . - ("" for none).
local function call_arg(value)
  return name_arg('callId', value or '', 64, true)
end
