-- Groups (docs/groups.md). A task with a group belongs to the lane "<type>|<group>": the tasks of
-- one type and group. Its READY tasks are in the ready set like any other, scored by fair queuing
-- instead of arrival: a lane's next task gets the virtual time max(the head of its priority in the
-- ready set, the lane's last at that priority) + 1, so lanes take turns, one task each, and a lane
-- with 100,000 waiting does not delay one with a single task. Once a queue has a task with a group
-- (config fair = 1), its tasks without one take turns the same way, as one more lane ("|", with no
-- policy), so they are neither starved by the groups nor ahead of them: every READY task of a
-- priority waits at most a bounded number of rounds (docs/groups.md "Fair turns").
-- A claim that meets a task its lane may not run now (the lane is at its concurrency, or its rate
-- is used up, or older tasks of the lane wait parked) parks it: state W, in the grouped set, a
-- sorted set of score 0 whose members "<lane>\0<rank>\0<id>" (rank as 16 digits) sort by lane, then
-- rank. When the lane may run one again, its first parked tasks go back behind the head of the
-- ready set, flagged "u", each holding one of the lane's slots until it is claimed. Every common
-- step (enqueue, claim, ack) reads and writes the lanes of a whole batch with one HMGET and one
-- HSET; only parking and letting out cost a command per task.
--   groups hash, field <lane>   "<ready>|<last>|<slots>[|<parked>|<window>|<count>]" (declared in
--                               shared/protocol/groups.ts, read with LANE_PATTERN, written by lane_line):
--     ready    tasks READY (parked included): what `groups` shows, and when the record may go
--     last     the lane's last virtual time per priority, as the ready-set score it gave
--              ("<score>[,<score>...]": at most LAST_BANDS_MAX priorities, the newest first)
--     slots    the ids (comma-separated) of the tasks using the lane's slots: leased (a lane with a
--              concurrency), an ordered group's retry keeping its place (S, flag h), and tasks let
--              out not claimed yet (R, flag u). Every read checks them against their states
--              (lanes_verify): a task that moved on (acked, cancelled, deleted, quarantined) is
--              dropped, so no count can outlive its task. An ack writes no record.
--     parked   tasks parked in grouped under this lane
--     window, count  the rate window's start (ms) and its claims
--     The record goes when nothing is READY, held, parked or counted in a live window (tick's check
--     sweeps the records whose slots were all acked since); the "|" lane's stays.
--   groups hash, field @<type>  the type's record: its rate window (window, count) and its parked
--     count: READY tasks of the type set aside in grouped under "@<type>" while the type is paused
--     or its window is used up (state W, flag t), by their ready-set score (type_park).
-- Names never collide: a lane starts with its type, and a type has no "@" or "|" (a group may have
-- "@" and ":", never "|", "," or NUL), so "<type>|<group>" (a group "@email" too: "send|@email"), "|"
-- and "@<type>" are three kinds of name, in the groups hash, in groupwait and before a grouped
-- member's NUL alike.
-- Config g:<type> (else gd): "<concurrency>,<ordered>,<groupRateMax>,<groupRateMs>,<typeRateMax>,
-- <typeRateMs>"; concurrency 0 and rate 0 mean no limit.

-- The separator of a grouped member's parts, and the byte after it (the end of a BYLEX range).
local NUL = '\0'
local LEX_END = '\1'
local AT = 64 -- "@", the first byte of a type's own record
-- The most parked tasks one step lets out of a lane.
local UNPARK_MAX = 100
-- The most tasks set aside by their type one step puts back.
local TYPE_UNPARK_MAX = 1000
-- The most lanes and types whose time came one claim opens (a tick opens up to its limit).
local OPEN_PER_CLAIM = 100
local NO_GROUP_POLICY = { conc = 0, ordered = false, rate_max = 0, rate_ms = 0, type_max = 0, type_ms = 0 }
-- The lane of the tasks without a group (config fair = 1).
local UNGROUPED = '|'
local LAST_BANDS_MAX = 4

-- The lanes this script read (name -> record, false while being read), those it changed (in
-- order), those whose slots it checked, and the head of each priority in the ready set.
local group_policies = {}
local lanes = {}
local lanes_dirty = {}
local lanes_checked = {}
local fronts = {}

-- A type's group policy: g:<type>, else the queue's gd, else none (lanes only take turns). With
-- `lane` (its group's "<type>|<group>"), a singleton's lane ("<type>|@@s:<key>", a group form no
-- caller may give: docs/flow-control.md) runs one task at a time, in no order and under no group
-- rate; its type's rate (type_max, type_ms) counts as for any task of the type.
local singleton_policies = {}
local function group_policy(config, task_type, lane)
  if lane and string.sub(lane, #task_type + 2, #task_type + 1 + #SINGLETON_GROUP_PREFIX) == SINGLETON_GROUP_PREFIX then
    local singleton = singleton_policies[task_type]
    if not singleton then
      local own = group_policy(config, task_type)
      singleton = { conc = 1, ordered = false, rate_max = 0, rate_ms = 0, type_max = own.type_max, type_ms = own.type_ms }
      singleton_policies[task_type] = singleton
    end
    return singleton
  end
  local known = group_policies[task_type]
  if known then return known end
  local own = config_get(config, 'g:' .. task_type)
  local text = own or config_get(config, 'gd')
  known = NO_GROUP_POLICY
  if text then
    local conc, ordered, rate_max, rate_ms, type_max, type_ms = string.match(text, GROUP_POLICY_PATTERN)
    if conc then
      known = {
        conc = tonumber(conc), ordered = ordered == '1', rate_max = tonumber(rate_max), rate_ms = tonumber(rate_ms),
        type_max = tonumber(type_max), type_ms = tonumber(type_ms),
      }
      -- onFailure of an ordered group (o:<type>, else od, with the policy it goes with): "hold"
      -- keeps the group behind its FAILED task (fail_in_lane).
      known.hold = known.ordered and config_get(config, own and 'o:' .. task_type or 'od') == 'hold'
    end
  end
  group_policies[task_type] = known
  return known
end

-- A lane's name: "<type>|<group>", the very text a state holds (so an ack reads it with no copy).
local function lane_of(task_type, group)
  return task_type .. '|' .. group
end

local function lane_type(lane)
  return string.match(lane, '^([^|]+)|')
end

-- The policy of a lane's group (the "|" lane has none).
local function lane_policy(config, lane)
  local task_type = lane_type(lane)
  if not task_type then return NO_GROUP_POLICY end
  return group_policy(config, task_type, lane)
end

local function padded(number_text)
  return string.rep('0', 16 - #number_text) .. number_text
end

local function lane_member(lane, rank, id)
  return lane .. NUL .. padded(rank) .. NUL .. id
end

-- A task set aside by its type: "@<type>\0<rank, 16 digits>\0<id>", so a type's tasks come back in
-- rank order.
local function type_member(task_type, rank, id)
  return '@' .. task_type .. NUL .. padded(rank) .. NUL .. id
end

-- A count as text (0 for a negative one): a batch's lanes mostly share a few small counts.
local function count_text(n)
  return fmt_once(n < 0 and 0 or n)
end

-- A record's table has room for the fields scripts add as they work on it (outs, span, last_score),
-- so adding them rehashes nothing.
local function empty_record()
  return {
    ready = 0, last = '', slots = '', parked = 0, window = 0, count = 0, dirty = false, outs = false,
    span = false, last_score = false,
  }
end

-- Loads the records of the lanes (or @<type>s) named that this script has not read yet: one HMGET.
-- A record is a table of its fields, built once; its slots stay the record's text ("" or ids
-- joined by ","), and its last times the text they were read as until enqueue gives a new one.
local function lanes_load(names)
  local missing = {}
  for _, name in ipairs(names) do
    if lanes[name] == nil then
      lanes[name] = false -- asked for: read below
      missing[#missing + 1] = name
    end
  end
  if #missing == 0 then return end
  local values = read_many('HMGET', K.groups, missing)
  for i, name in ipairs(missing) do
    local text, record = values[i], nil
    if text then
      local ready, last, slots = string.match(text, LANE_HEAD_PATTERN)
      if ready then
        record = {
          ready = tonumber(ready), last = last, slots = slots, parked = 0, window = 0, count = 0, dirty = false,
          outs = false, span = false, last_score = false,
        }
      else
        local parked, window, count
        ready, last, slots, parked, window, count = string.match(text, LANE_PATTERN)
        if ready then
          record = {
            ready = tonumber(ready), last = last, slots = slots, parked = tonumber(parked),
            window = tonumber(window), count = tonumber(count), dirty = false,
            outs = false, span = false, last_score = false,
          }
        end
      end
    end
    lanes[name] = record or empty_record()
  end
end

local function lane_get(name)
  if lanes[name] == nil then lanes_load({ name }) end
  return lanes[name]
end

local function lane_touch(name, record)
  if not record.dirty then
    record.dirty = true
    lanes_dirty[#lanes_dirty + 1] = name
  end
end

-- How many tasks a lane's record names in its slots.
local function slot_count(record)
  local slots = record.slots
  if slots == '' then return 0 end
  local n, at = 1, string.find(slots, ',', 1, true)
  while at do
    n = n + 1
    at = string.find(slots, ',', at + 1, true)
  end
  return n
end

local function slot_ids(record)
  local list = {}
  for id in string.gmatch(record.slots, '[^,]+') do list[#list + 1] = id end
  return list
end

local function has_slot(record, id)
  local slots = record.slots
  if slots == id then return true end
  return slots ~= '' and string.find(',' .. slots .. ',', ',' .. id .. ',', 1, true) ~= nil
end

local function add_slot(name, record, id)
  record.slots = record.slots == '' and id or record.slots .. ',' .. id
  lane_touch(name, record)
end

local function drop_slot(name, record, id)
  local slots = record.slots
  if slots == id then
    record.slots = ''
  elseif string.find(slots, ',', 1, true) then
    local kept = {}
    for slot in string.gmatch(slots, '[^,]+') do
      if slot ~= id then kept[#kept + 1] = slot end
    end
    record.slots = table.concat(kept, ',')
  end
  lane_touch(name, record)
end

-- The first bytes of the states that may use a slot: L, S, R, W (the common D of an acked lease
-- needs no match).
local LEASED_BYTE = 76 -- "L"
local SCHEDULED_BYTE = 83 -- "S"
local READY_BYTE = 82 -- "R"
local PARKED_BYTE = 87 -- "W"
local FAILED_BYTE = 70 -- "F"
local SLOT_LETTERS = {
  [LEASED_BYTE] = true, [SCHEDULED_BYTE] = true, [READY_BYTE] = true, [PARKED_BYTE] = true, [FAILED_BYTE] = true,
}

-- What a state's task does with a slot of `lane`: "lease" (leased), "held" (an ordered group's
-- retry keeping its place), "failed" (a FAILED task an ordered group with onFailure hold waits
-- behind), "out" (let out, not claimed yet: READY, or set aside by its type with its slot kept), or
-- nil (it uses none).
local function slot_kind(text, lane)
  if not SLOT_LETTERS[string.byte(text, 1)] then return nil end
  local letter, flags, task_lane = string.match(text, SLOT_STATE_PATTERN)
  if not letter or task_lane ~= lane then return nil end
  if letter == 'L' then return 'lease' end
  if letter == 'S' then return string.find(flags, 'h', 1, true) and 'held' or nil end
  if letter == 'F' then return string.find(flags, 'h', 1, true) and 'failed' or nil end
  return string.find(flags, 'u', 1, true) and 'out' or nil
end

local NO_TEXTS = {}

-- Checks the slots of the loaded lanes `names` against their tasks' states (one HMGET for all),
-- once per lane per script (slots this script adds are in its writes, not written yet): a task
-- that no longer uses its slot is dropped, and `outs` counts the lanes' tasks let out. Returns the
-- state texts of the leases still holding, by id. The common lane, one lease acked since, costs
-- one field of the HMGET and no table.
local function lanes_verify(names)
  local fields, ids, owners = {}, {}, {}
  for _, name in ipairs(names) do
    local r = lanes[name]
    if r and not lanes_checked[name] then
      lanes_checked[name] = true
      r.outs = 0
      if r.slots ~= '' then
        if string.find(r.slots, ',', 1, true) then
          for id in string.gmatch(r.slots, '[^,]+') do
            ids[#ids + 1], owners[#owners + 1], fields[#fields + 1] = id, name, id .. ':s'
          end
        else
          ids[#ids + 1], owners[#owners + 1], fields[#fields + 1] = r.slots, name, r.slots .. ':s'
        end
        r.slots = '' -- rebuilt below from the tasks still using a slot
      end
    end
  end
  if #ids == 0 then return NO_TEXTS end
  local values = read_many('HMGET', K.task, fields)
  local texts = NO_TEXTS
  for i, id in ipairs(ids) do
    local name, value = owners[i], values[i]
    local r = lanes[name]
    -- (The common state here, an acked lease's D, needs no match.)
    local kind = value and SLOT_LETTERS[string.byte(value, 1)] and slot_kind(value, name)
    -- A state that cannot be read may be a lease still running: it keeps its slot until a script
    -- that meets it in its set (the reclaim at its deadline, a claim, the check) quarantines it.
    if not kind and value and SLOT_LETTERS[string.byte(value, 1)] and not string.match(value, SLOT_STATE_PATTERN) then
      kind = 'unread'
    end
    if kind then
      r.slots = r.slots == '' and id or r.slots .. ',' .. id
      if kind == 'out' then
        r.outs = r.outs + 1
      elseif kind == 'lease' then
        if texts == NO_TEXTS then texts = {} end
        texts[id] = value
      end
    else
      lane_touch(name, r)
    end
  end
  return texts
end

-- Writes the lane records this script changed: one HSET and at most one HDEL. `now` 0: unknown
-- (a rate window is then kept).
local function lanes_flush(now)
  local fields, gone = {}, {}
  for _, name in ipairs(lanes_dirty) do
    local r = lanes[name]
    r.dirty = false
    local slots = r.slots
    if name ~= UNGROUPED and slots == '' and r.ready <= 0 and r.parked <= 0 and
      (r.count == 0 or (r.span and r.window + r.span <= now)) then
      gone[#gone + 1] = name
    else
      fields[#fields + 1] = name
      fields[#fields + 1] = lane_line(count_text(r.ready), r.last_score and fmt(r.last_score) or r.last, slots,
        count_text(r.parked), fmt(r.window), count_text(r.count))
    end
  end
  lanes_dirty = {}
  write_many('HSET', K.groups, fields, 2)
  write_many('HDEL', K.groups, gone)
end

-- The time rate windows are decided at: a caller's now, never past the store's clock plus the skew
-- the queue allows (decision_bound, read once per script: one HMGET and TIME, only where a rate is
-- set), so a caller whose clock runs ahead opens no window early and lets no task out before its
-- rate allows. A queue that trusts its callers' clocks (callerClock) takes now as given.
local rate_bound = nil
local function rate_time(now)
  if rate_bound == nil then rate_bound = decision_bound(read_config_fields({ 'callerClock', 'skewMs' })) or false end
  return rate_bound and math.min(now, rate_bound) or now
end

-- The window a claim at `now` counts in: now's window, or a later one a caller with a clock ahead
-- opened already (a window never moves backwards, so clocks that disagree cannot reopen one).
local function rate_window(record, span, now)
  now = rate_time(now)
  local window = now - now % span
  if record.window > window then return record.window end
  return window
end

-- Whether a rate of `max` claims per `span` ms lets one more claim happen now; else when it will.
local function rate_open(record, max, span, now)
  if max == 0 then return true end
  record.span = span
  local window = rate_window(record, span, now)
  if record.window ~= window or record.count < max then return true end
  return false, window + span
end

-- Counts one claim in a rate window.
local function rate_count(name, record, max, span, now)
  if max == 0 then return end
  local window = rate_window(record, span, now)
  if record.window ~= window then record.window, record.count = window, 0 end
  record.count, record.span = record.count + 1, span
  lane_touch(name, record)
end

-- Claims left in the window of `now` (after `reserved` let out for it).
local function rate_room(record, max, span, now, reserved)
  local window = rate_window(record, span, now)
  local used = record.window == window and record.count or 0
  return max - used - reserved
end

-- The virtual time of the head of a priority in the ready set (its score's low part), or false
-- when none of that priority is READY. Read once per priority per script.
local function front_of(band)
  local known = fronts[band]
  if known ~= nil then return known end
  local head = redis.call('ZRANGEBYSCORE', K.ready, fmt(band * RANK_SEQ_SPAN), '(' .. fmt((band + 1) * RANK_SEQ_SPAN),
    'WITHSCORES', 'LIMIT', 0, 1)
  known = #head > 0 and tonumber(head[2]) - band * RANK_SEQ_SPAN
  fronts[band] = known
  return known
end

local function band_of(rank)
  return math.floor(tonumber(rank) / RANK_SEQ_SPAN)
end

-- The arrival counter as it stands (GET, once per script): no virtual time given so far is above
-- it by more than a few, so it starts a priority that has nothing READY without going back.
local seq_known = nil
local function seq_now()
  if not seq_known then seq_known = tonumber(redis.call('GET', K.seq)) or 0 end
  return seq_known
end

-- The head of a priority, or, when none of it is READY, where its next round starts: `seed` (an
-- enqueue's arrival before its batch), else the arrival counter.
local function front_or_start(band, seed)
  local front = front_of(band)
  if front then return front end
  front = seed or seq_now()
  fronts[band] = front
  return front
end

-- The ready-set score right behind the head of a rank's priority: where tasks let out or returned go.
local function behind_front(rank)
  local band = band_of(rank)
  return band * RANK_SEQ_SPAN + front_or_start(band) + 1
end

-- The lane's last virtual time at priority `band`, or nil. `last` holds full ready-set scores
-- (priority band and virtual time in one number), one per band, the newest first; the common lane
-- has one, kept as a number (`last_score`) while a script works on it, printed once when written.
local function last_of(record, band)
  local score = record.last_score
  if not score then
    local last = record.last
    if last == '' then return nil end
    score = tonumber(last)
    if not score then -- several bands: "<score>,<score>,..."
      for entry in string.gmatch(last, '%d+') do
        local n = tonumber(entry)
        if math.floor(n / RANK_SEQ_SPAN) == band then return n - band * RANK_SEQ_SPAN end
      end
      return nil
    end
    record.last_score = score
  end
  if math.floor(score / RANK_SEQ_SPAN) == band then return score - band * RANK_SEQ_SPAN end
  return nil
end

-- Records `time` as the lane's last at `band`: newest first, at most LAST_BANDS_MAX bands.
local function set_last(record, band, time)
  local score = band * RANK_SEQ_SPAN + time
  local known = record.last_score or (record.last == '' and score) or tonumber(record.last)
  if known and math.floor(known / RANK_SEQ_SPAN) == band then
    record.last_score = score -- the one band it had: printed by lanes_flush
    return
  end
  local entries = { fmt(score) }
  for entry in string.gmatch(record.last_score and fmt(record.last_score) or record.last, '%d+') do
    if #entries >= LAST_BANDS_MAX then break end
    if math.floor(tonumber(entry) / RANK_SEQ_SPAN) ~= band then entries[#entries + 1] = entry end
  end
  record.last, record.last_score = table.concat(entries, ','), nil
end

-- A new task's turn in its lane: right behind the head of its priority (a lane's first task runs in
-- the next round), and after its lane's last at that priority, which it becomes. With none of its
-- priority READY, `seed` (an enqueue's arrival before its batch) or the arrival counter starts the
-- round, so the virtual time of a priority never goes back.
local function fair_turn(record, band, seed)
  local front = front_or_start(band, seed)
  local last = last_of(record, band)
  local turn = (last and last > front) and last + 1 or front + 1
  set_last(record, band, turn)
  return turn
end

-- A lane or a type (`@<type>`) waits in groupwait until `opens_at`, when it may run again; config
-- nextDue counts it, so a claim (and a wake-up) comes then.
local function lane_wait(name, opens_at, config)
  redis.call('ZADD', K.groupwait, opens_at, name)
  config_get(config, 'nextDue')
  note_due(config, opens_at)
end

-- A task was quarantined (its record could not be read): when its body names a group, the group may
-- have lost a task that held its slot or its turn, so the next claim looks at it (groupwait, due at
-- once) and lets out what it may; its slots are checked against the states then, and an unreadable
-- one holds none. `task` is read_record()'s; the body is read when it was not loaded.
local function after_quarantine(id, task, config)
  local info = task.body_info
  if not info then
    local body = task.body or redis.call('HGET', K.task, id)
    info = body and string.byte(body, 1) == BODY_FORMAT_BYTE and parse_body(body) or nil
  end
  if info and info.group ~= '' then lane_wait(lane_of(info.type, info.group), 0, config) end
end

-- The status of a task a fenced call (settle, extend, release) names, before its token is compared
-- (presence_status); a record that cannot be read is set aside at once (6), whichever call met it.
local function fenced_presence(writes, id, task, config, now)
  local status = presence_status(task)
  if status == 6 then
    quarantine(writes, id, task.problem, now)
    after_quarantine(id, task, config)
  end
  return status
end

-- Parks a READY task of a lane: state W, in the grouped set (the caller takes it out of ready). A
-- task let out gives its slot back.
local function lane_park(writes, lane, record, id, state)
  if string.find(state.flags, 'u', 1, true) then
    state.flags = string.gsub(state.flags, 'u', '')
    if has_slot(record, id) then
      drop_slot(lane, record, id)
      if record.outs then record.outs = record.outs - 1 end
    end
  end
  state.letter = 'W'
  put_state(writes, id, state)
  zadd(writes, K.grouped, 0, lane_member(lane, state.rank, id))
  record.parked = record.parked + 1
  lane_touch(lane, record)
end

-- How many more tasks a lane may let out now (its concurrency, its rate window), and when its
-- window opens if the rate is what stops it.
local function lane_room(lane, record, config, now)
  local policy = lane_policy(config, lane)
  local room = UNPARK_MAX
  lanes_verify({ lane })
  if policy.conc > 0 then
    room = math.min(room, policy.conc - slot_count(record))
  end
  if policy.rate_max > 0 then
    local open, opens_at = rate_open(record, policy.rate_max, policy.rate_ms, now)
    if not open then return 0, opens_at end
    room = math.min(room, rate_room(record, policy.rate_max, policy.rate_ms, now, record.outs or 0))
  end
  return room, nil
end

-- The first parked members of `prefix` (a lane, or "@<type>"), at most `limit`, with their ids, the
-- number parsed from each (rank or score) and the states of their tasks (one HMGET).
local function parked_page(prefix, limit)
  local members = redis.call('ZRANGE', K.grouped, '[' .. prefix .. NUL, '[' .. prefix .. LEX_END, 'BYLEX', 'LIMIT', 0, limit)
  local ids, numbers, fields = {}, {}, {}
  for i, member in ipairs(members) do
    local number, id = string.match(member, MEMBER_PATTERN)
    ids[i], numbers[i] = id or '', number or '0'
    fields[i] = (id or '') .. ':s'
  end
  local values = read_many('HMGET', K.task, fields)
  return members, ids, numbers, values
end

-- A lane with parked tasks lets out as many as it may run now, first by rank: back into the ready
-- set right behind the head of their priority, flagged "u", each holding a slot until it is claimed
-- (immediate writes). A lane its rate stops waits in groupwait for the next window. A member whose
-- task cannot be read is quarantined; one whose task moved on, or that has no state, is dropped.
local function lane_unpark(lane, config, now)
  local record = lane_get(lane)
  if record.parked <= 0 then return end
  local room, opens_at = lane_room(lane, record, config, now)
  if opens_at then lane_wait(lane, opens_at, config) end
  if room <= 0 then return end
  local members, ids, ranks, values = parked_page(lane, math.min(room, record.parked))
  if #members == 0 then record.parked = 0; lane_touch(lane, record); return end
  local writes, dropped = new_writes(), false
  for i, id in ipairs(ids) do
    local value = values[i]
    local state, problem = nil, nil
    if value then state, problem = parse_state(value) end
    record.parked = record.parked - 1
    if not value then
      -- No state: no parked task (parking writes one). A member of a task deleted or quarantined
      -- while its record could not be read (nothing could name its member), its id perhaps given
      -- to a task since: dropped. (A member's rank names the task it was, below.)
      record.ready = record.ready - 1
      zrem(writes, K.grouped, members[i])
      dropped = true
    elseif not state then
      record.ready = record.ready - 1
      quarantine(writes, id, problem, now, members[i])
      dropped = true
    else
      zrem(writes, K.grouped, members[i])
      if state.letter == 'W' and lane_of(state.type, state.group) == lane and padded(state.rank) == ranks[i] then
        state.letter, state.flags = 'R', state.flags .. 'u'
        put_state(writes, id, state)
        zadd(writes, K.ready, behind_front(state.rank), id)
        add_slot(lane, record, id)
        record.outs = (record.outs or 0) + 1
      else
        dropped = true -- a member whose task moved on
      end
    end
  end
  lane_touch(lane, record)
  apply(writes)
  -- A member it could not let out took a place of this step: the next claim lets out the next.
  if dropped and record.parked > 0 then lane_wait(lane, 0, config) end
end

-- A READY task of a type that may not run now (paused, or its rate window used up) is set aside: in
-- grouped under "@<type>" by its rank, state W with flag t (a task let out keeps its
-- "u" and its lane's slot), so it holds no place among the heads of the ready set; type_unpark puts
-- it back when the type may run. The caller takes it out of ready.
local function type_park(writes, task_type, id, state)
  state.letter, state.flags = 'W', state.flags .. 't'
  put_state(writes, id, state)
  zadd(writes, K.grouped, 0, type_member(task_type, state.rank, id))
  local name = '@' .. task_type
  local record = lane_get(name)
  record.parked = record.parked + 1
  lane_touch(name, record)
end

-- Puts back up to `limit` tasks set aside by their type, in rank order: at their rank while the queue
-- takes no fair turns (where they were), else right behind the head of their priority, keeping
-- their order (the virtual time of a priority never goes back).
-- Returns how many are still set aside.
local function type_unpark(task_type, limit, config, now)
  local name = '@' .. task_type
  local record = lane_get(name)
  if record.parked <= 0 or limit <= 0 then return record.parked end
  local members, ids, ranks, values = parked_page(name, math.min(limit, record.parked))
  if #members == 0 then record.parked = 0; lane_touch(name, record); return 0 end
  local writes = new_writes()
  local fair = config_get(config, 'fair') == '1'
  local placed = {}
  for i, id in ipairs(ids) do
    local value = values[i]
    local state, problem = nil, nil
    if value then state, problem = parse_state(value) end
    record.parked = record.parked - 1
    if not value then
      zrem(writes, K.grouped, members[i]) -- no parked task: a member left by one (see lane_unpark)
    elseif not state then
      quarantine(writes, id, problem, now, members[i])
      after_quarantine(id, {}, config) -- a task let out of its group may have held its slot
    else
      zrem(writes, K.grouped, members[i])
      if state.letter == 'W' and string.find(state.flags, 't', 1, true) and state.type == task_type
        and padded(state.rank) == ranks[i] then
        state.letter, state.flags = 'R', string.gsub(state.flags, 't', '')
        put_state(writes, id, state)
        local score = ranks[i]
        if fair then
          local band = band_of(score)
          placed[band] = (placed[band] or 0) + 1
          score = band * RANK_SEQ_SPAN + front_or_start(band) + placed[band]
        end
        zadd(writes, K.ready, score, id)
      end
    end
  end
  lane_touch(name, record)
  apply(writes)
  return record.parked
end

-- A task of a lane becomes READY at its turn (enqueue, a due scheduled task, requeue, repair): into
-- the ready set at its lane's next virtual time, or parked when the lane has parked tasks (it waits
-- its turn behind them, by rank). An ordered lane keeps all its READY tasks parked but one, its
-- head, so they run in rank order whenever they became READY: this one is parked (written at once),
-- and the lane given a head if it has none and nothing held. Other writes go to `writes`; the caller
-- takes the task out of the set it was in.
local function lane_add(writes, id, state, config, now)
  local lane = lane_of(state.type, state.group)
  local record = lane_get(lane)
  record.ready = record.ready + 1
  lane_touch(lane, record)
  if group_policy(config, state.type, lane).ordered then
    state.letter = 'W'
    redis.call('HSET', K.task, id .. ':s', state_text(state))
    redis.call('ZADD', K.grouped, 0, lane_member(lane, state.rank, id))
    record.parked = record.parked + 1
    lanes_verify({ lane })
    if record.slots == '' then lane_unpark(lane, config, now) end
    return
  end
  if record.parked > 0 then return lane_park(writes, lane, record, id, state) end
  local band = band_of(state.rank)
  state.letter = 'R'
  put_state(writes, id, state)
  zadd(writes, K.ready, band * RANK_SEQ_SPAN + fair_turn(record, band), id)
end

-- A leased (or held) task of a lane is READY again (a retry due now, a release, a reclaim): its
-- slot is free, and it goes right behind the head of its priority, before the rest of its lane;
-- when the lane has parked tasks, or is ordered (it is the lane's head again), it is let out ahead
-- of them ("u"), keeping its slot.
local function lane_return(writes, id, state, config, now)
  local lane = lane_of(state.type, state.group)
  local record = lane_get(lane)
  drop_slot(lane, record, id)
  record.ready = record.ready + 1
  if record.parked > 0 or group_policy(config, state.type, lane).ordered then
    state.flags = state.flags .. 'u'
    add_slot(lane, record, id)
    if record.outs then record.outs = record.outs + 1 end
  end
  state.letter = 'R'
  put_state(writes, id, state)
  zadd(writes, K.ready, behind_front(state.rank), id)
end

-- A task of a lane stopped using one of its slots (done, failed, retried later, cancelled):
-- the lane may run its next parked task.
local function lane_release(lane, id, config, now)
  local record = lane_get(lane)
  drop_slot(lane, record, id)
  if record.parked > 0 then lane_unpark(lane, config, now) end
end

-- A task of a group became FAILED (its last attempt, a PermanentError, its stalls): an ordered group
-- with onFailure "hold" keeps waiting behind it (flag h: it keeps its slot, so nothing of the group
-- runs until it is requeued, and runs first, or skipped); any other lets its next task run.
-- `state` is written by the caller.
local function fail_in_lane(state, id, config, now)
  if state.group == '' then return end
  local lane = lane_of(state.type, state.group)
  if group_policy(config, state.type, lane).hold then
    state.flags = 'h'
    local record = lane_get(lane)
    if not has_slot(record, id) then add_slot(lane, record, id) end
  else
    lane_release(lane, id, config, now)
  end
end

-- A parked task (W) leaves grouped for good (cancel, delete): one parked less in its lane's record,
-- or its type's (flag t). Returns its member.
local function parked_gone(id, state)
  local name, member
  if string.find(state.flags, 't', 1, true) then
    name, member = '@' .. state.type, type_member(state.type, state.rank, id)
  else
    name = lane_of(state.type, state.group)
    member = lane_member(name, state.rank, id)
  end
  local record = lane_get(name)
  record.parked = record.parked - 1
  lane_touch(name, record)
  return member
end

-- A READY task of a lane leaves it for good (cancel, delete, quarantine), once it is out of its
-- set (parked_gone for a parked one): its slot (a task let out) is free for the next parked one.
-- `now` nil: unknown (delete), the next claim lets it out.
local function lane_remove(id, state, config, now)
  local lane = lane_of(state.type, state.group)
  local record = lane_get(lane)
  record.ready = record.ready - 1
  if string.find(state.flags, 'u', 1, true) then
    if has_slot(record, id) then drop_slot(lane, record, id) end
  end
  lane_touch(lane, record)
  if record.parked > 0 then
    if now then lane_unpark(lane, config, now) else lane_wait(lane, 0, config) end
  end
end

-- A task is READY again: an ungrouped one by its rank (or, once the queue takes fair turns, in the
-- "|" lane: at its turn, or right behind the head when `returning`); one of a group back into its
-- lane, first (`returning`: it held a slot, as a retry due now, a release or a reclaim) or at its
-- turn (lane_add: a due scheduled task, a requeue, a repair). The caller takes it out of its set.
-- `config` carries fair (config_get).
local function make_ready(writes, id, state, config, now, returning)
  if state.group ~= '' then
    if returning then lane_return(writes, id, state, config, now) else lane_add(writes, id, state, config, now) end
    return
  end
  state.letter = 'R'
  put_state(writes, id, state)
  if config_get(config, 'fair') ~= '1' then
    zadd(writes, K.ready, state.rank, id)
  elseif returning then
    zadd(writes, K.ready, behind_front(state.rank), id)
  else
    local band = band_of(state.rank)
    local record = lane_get(UNGROUPED)
    lane_touch(UNGROUPED, record)
    zadd(writes, K.ready, band * RANK_SEQ_SPAN + fair_turn(record, band), id)
  end
end

-- The queue takes fair turns from now on (its first task with a group): its tasks without one form
-- the "|" lane. The tasks without a group already waiting keep their places: the lane's last starts
-- at the last of them in the ready set (of its priority; one of another priority may be passed by
-- the first tasks without a group that follow, once).
local function start_fair(config)
  redis.call('HSET', K.config, 'fair', '1')
  config.fair = '1'
  local record = lane_get(UNGROUPED)
  local tail = redis.call('ZRANGE', K.ready, -1, -1, 'WITHSCORES')
  if record.last == '' and #tail > 0 then record.last = tail[2] end
  lane_touch(UNGROUPED, record)
end

-- Lanes and types whose time came (a rate window opened, a type resumed), at most `limit` of them:
-- lanes let their parked tasks out, types put back what they set aside. The rest stay due in
-- groupwait for the next call.
local function open_windows(config, now, limit, paused_types)
  local due = redis.call('ZRANGEBYSCORE', K.groupwait, '-inf', fmt(now), 'LIMIT', 0, limit)
  if #due == 0 then return end
  write_many('ZREM', K.groupwait, due)
  for _, name in ipairs(due) do
    if string.byte(name, 1) ~= AT then
      lane_unpark(name, config, now)
    else
      local task_type = string.sub(name, 2)
      local paused = paused_types and paused_types[task_type]
      if not paused then
        local rules = group_policy(config, task_type)
        local limit_now, next_time = TYPE_UNPARK_MAX, 0
        if rules.type_max > 0 then
          local record = lane_get(name)
          local open, opens_at = rate_open(record, rules.type_max, rules.type_ms, now)
          if open then
            limit_now = math.min(limit_now, rate_room(record, rules.type_max, rules.type_ms, now, 0))
            next_time = rate_window(record, rules.type_ms, now) + rules.type_ms
          else
            limit_now, next_time = 0, opens_at
          end
        end
        if type_unpark(task_type, limit_now, config, now) > 0 then lane_wait(name, next_time, config) end
      end
    end
  end
end

-- The types paused on their own (config pauses), as a set, or nil.
local function paused_types_of(config)
  local text = config_get(config, 'pauses')
  if not text then return nil end
  local set = {}
  for name in string.gmatch(text, '[^,]+') do set[name] = true end
  return set
end

-- Loads the tasks a maintenance step moves (`ids`, a page of one set) and the records of their
-- groups, checking their slots (one HMGET for the records and one for the slots' states, instead
-- of one of each per group as the moves meet them). A task that cannot be read, or has no state
-- (`missing` says why then), is set aside in `writes` and gets `problem`: the caller moves the
-- others. Returns the tasks by id.
local function load_to_move(ids, writes, config, now, missing)
  local tasks = load(ids, false)
  local names = {}
  for _, id in ipairs(ids) do
    local task = tasks[id]
    if task.problem or not task.state then
      task.problem = task.problem or missing
      quarantine(writes, id, task.problem, now)
      after_quarantine(id, task, config)
    elseif task.state.group ~= '' then
      names[#names + 1] = lane_of(task.state.type, task.state.group)
    end
  end
  lanes_load(names)
  lanes_verify(names)
  return tasks
end

-- Moves up to `limit` due SCHEDULED tasks to READY with the rank they were given at enqueue (a
-- task of a group into its lane), opens up to `open_limit` lanes and types whose time came, and
-- keeps config nextDue exact. Costs nothing while nothing is due. The caller runs lanes_flush().
-- A schedule's slot task with overlap "skip" falls due (flag k): whether it is passed over, its
-- schedule's previous slot's task (`<name>:r`) still waiting (READY, parked, a retry) or running.
-- When it is not, it becomes the schedule's running slot. A passed-over slot counts in `<name>:m`.
local function overlap_passed(id)
  local name = string.match(id, '^(.+)@[^@]+$')
  if not name then return false end
  local previous = redis.call('HGET', K.schedules, name .. ':r')
  if previous then
    local found = redis.call('HMGET', K.task, previous .. ':s', previous)
    local letter = found[1] and string.sub(found[1], 1, 1) or (found[2] and 'R') or nil
    if letter == 'R' or letter == 'W' or letter == 'L' or letter == 'S' then
      local done, passed = string.match(redis.call('HGET', K.schedules, name .. ':m') or '0|0', '^(%d+)|(%d+)$')
      redis.call('HSET', K.schedules, name .. ':m', (done or '0') .. '|' .. fmt((tonumber(passed) or 0) + 1))
      return true
    end
  end
  redis.call('HSET', K.schedules, name .. ':r', id)
  return false
end

local function promote_due(config, now, now_text, limit, open_limit)
  local next_due = tonumber(config.nextDue)
  if next_due ~= nil and next_due > now then return 0 end
  local due = redis.call('ZRANGEBYSCORE', K.scheduled, SCHEDULED_FROM, fmt(now), 'LIMIT', 0, limit)
  if #due > 0 then
    local writes = new_writes()
    local tasks = load_to_move(due, writes, config, now, 'a SCHEDULED task without its state')
    for _, id in ipairs(due) do
      local task = tasks[id]
      if task.problem then
        -- set aside by load_to_move
      elseif task.state.flags == 'k' and overlap_passed(id) then
        -- A schedule's slot whose previous slot's task still waits or runs (overlap: skip).
        drop_field(writes, id)
        drop_field(writes, id .. ':s')
        zrem(writes, K.scheduled, id)
      else
        local state = task.state
        state.letter, state.at = 'R', now_text
        -- A held retry of an ordered group gives back its slot as it goes first in its group.
        local held = state.flags == 'h'
        state.flags = ''
        make_ready(writes, id, state, config, now, held)
        zrem(writes, K.scheduled, id)
      end
    end
    apply(writes)
  end
  open_windows(config, now, open_limit or limit, paused_types_of(config))
  set_next_due(config, earliest_due())
  return #due
end
