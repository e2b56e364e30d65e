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
--   groups hash, field <lane>   "<ready>|<last>|<slots>[|<parked>|<window>|<count>[|<ahead>]]" (declared in
--                               shared/protocol/groups.ts, read by lane_fields, written by lane_line):
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
--     ahead    the lane's first parked tasks, in grouped's order ("<rank, 16 digits>\0<id>", "," between
--              them; "" when not known): letting tasks out takes them from here and reads grouped
--              again only when it runs short (lib/parking.lua). A step that parks a task before the
--              last of them, or takes a named one away, clears it (the next let-out reads grouped),
--              so it is always the first of them (the check verifies it, and clears it if not).
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
local NO_GROUP_POLICY = { conc = 0, ordered = false, rate_max = 0, rate_ms = 0, type_max = 0, type_ms = 0 }

-- The lanes this script read (name -> record, false while being read), those it changed (in
-- order), those whose slots it checked, and the head of each priority in the ready set.
local group_policies = {}
local lanes = {}
local lanes_dirty = {}
local lanes_checked = {}

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
  -- The type's policy, the queue's, and their onFailure, with one read.
  config_prefetch(config, { 'g:' .. task_type, 'gd', 'o:' .. task_type, 'od' })
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


local function lane_type(lane)
  local task_type = string.match(lane, LANE_NAME_PATTERN)
  return task_type
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

-- The most parked tasks a lane's record names ahead: a lane lets its tasks out reading grouped once
-- per AHEAD_MAX of them (an ordered group, one at a time), not once per task.
local AHEAD_MAX = 8

-- A lane's `ahead` holds entries "<rank, 16 digits>\0<id>" (its members' part after "<lane>\0"),
-- "," between them, in grouped's order.

-- Up to `n` entries from the front of an `ahead` text: only the front is cut, whatever the list's
-- length.
local function ahead_front(text, n)
  local list, from = {}, 1
  for j = 1, n do
    local comma = string.find(text, ',', from, true)
    list[j] = string.sub(text, from, comma and comma - 1 or #text)
    if not comma then return list end
    from = comma + 1
  end
  return list
end

-- The rank of `ahead`'s last entry (16 digits), found once per text.
local function ahead_last_rank(record)
  local last = record.ahead_last
  if last and last.text == record.ahead then return last.rank end
  local text, from = record.ahead, 1
  while true do
    local comma = string.find(text, ',', from, true)
    if not comma then break end
    from = comma + 1
  end
  record.ahead_last = { text = text, rank = string.sub(text, from, from + 15) }
  return record.ahead_last.rank
end

-- A task is parked in a lane (rank as its state has it): when its record names tasks ahead and it
-- does not sort after the last of them (a higher priority, or a task older than them that fell due:
-- rare), the list is cleared, to be read from grouped again, so it stays the lane's first parked
-- tasks. A task parked after them (the common case: it came later) changes nothing. Ranks are 16
-- digits, so they compare as texts.
local function ahead_add(record, rank)
  if record.ahead ~= '' and padded(rank) <= ahead_last_rank(record) then record.ahead = '' end
end

-- A parked task of a lane went (cancelled, deleted, replaced): a list naming it is cleared.
local function ahead_drop(record, rank, id)
  local text = record.ahead
  if text ~= '' and string.find(',' .. text .. ',', ',' .. padded(rank) .. NUL .. id .. ',', 1, true) then
    record.ahead = ''
  end
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

-- A record's table has room for the fields scripts add as they work on it (outs, span, last_score,
-- since), so adding them rehashes nothing. `parked_was` is its parked count as last read or written,
-- `since` when its next parked task became READY once a step knows it (lanes_flush, parkedsince).
local function empty_record()
  return {
    ready = 0, last = '', slots = '', parked = 0, window = 0, count = 0, ahead = '', dirty = false, outs = false,
    span = false, last_score = false, parked_was = 0, since = false,
  }
end

-- A group record's fields, its counts as numbers (a short record's tail as 0 and ""), or nil when it
-- cannot be read. One pass: the fields through slots and where they end, then a long record's counts
-- from there, then nothing (no list), or the separator and the list, which holds no other field.
-- Every reader of a record reads it here (lanes_load, the check, the groups view).
local function lane_fields(text)
  local ready, last, slots, at = string.match(text, LANE_FRONT_PATTERN)
  if not ready then return nil end
  if at > #text then return tonumber(ready), last, slots, 0, 0, 0, '' end
  local parked, window, count, after = string.match(text, LANE_COUNTS_PATTERN, at)
  if not parked then return nil end
  local ahead = ''
  if after <= #text then
    ahead = string.sub(text, after + 1)
    if string.sub(text, after, after) ~= LANE_SEPARATOR or string.find(ahead, LANE_SEPARATOR, 1, true) then return nil end
  end
  return tonumber(ready), last, slots, tonumber(parked), tonumber(window), tonumber(count), ahead
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
    local ready, last, slots, parked, window, count, ahead
    if values[i] then ready, last, slots, parked, window, count, ahead = lane_fields(values[i]) end
    lanes[name] = ready and {
      ready = ready, last = last, slots = slots, parked = parked, window = window, count = count, ahead = ahead,
      dirty = false, outs = false, span = false, last_score = false, parked_was = parked, since = false,
    } or empty_record()
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
-- one field of the HMGET and no table. `known` (optional): state texts this script read already and
-- has not written since, by id (false: none), which need no second read.
local function lanes_verify(names, known)
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
  local values
  if known then
    local asked, at = {}, {}
    for i, id in ipairs(ids) do
      if known[id] == nil then
        asked[#asked + 1] = fields[i]
        at[#asked] = i
      end
    end
    values = {}
    for i, id in ipairs(ids) do values[i] = known[id] end
    if #asked > 0 then
      for k, value in ipairs(read_many('HMGET', K.task, asked)) do values[at[k]] = value end
    end
  else
    values = read_many('HMGET', K.task, fields)
  end
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
  local fields, gone, waits, waited = {}, {}, {}, {}
  for _, name in ipairs(lanes_dirty) do
    local r = lanes[name]
    r.dirty = false
    local slots = r.slots
    if name ~= UNGROUPED and slots == '' and r.ready <= 0 and r.parked <= 0 and
      (r.count == 0 or (r.span and r.window + r.span <= now)) then
      gone[#gone + 1] = name
    else
      fields[#fields + 1] = name
      if r.parked <= 0 then r.ahead = '' end
      fields[#fields + 1] = lane_line(count_text(r.ready), r.last_score and fmt(r.last_score) or r.last, slots,
        r.parked, r.window, r.count, r.ahead)
    end
    -- parkedsince follows: a lane that parks its first task enters it, by that task's time (or now),
    -- one that let its next parked task out moves to the one after it, one that has none leaves it.
    if r.parked > 0 then
      if r.since or r.parked_was <= 0 then
        waits[#waits + 1] = fmt(r.since or now)
        waits[#waits + 1] = name
      end
    elseif r.parked_was > 0 then
      waited[#waited + 1] = name
    end
    r.parked_was, r.since = r.parked, false
  end
  lanes_dirty = {}
  write_many('HSET', K.groups, fields, 2)
  write_many('HDEL', K.groups, gone)
  write_many('ZADD', K.parkedsince, waits, 2)
  write_many('ZREM', K.parkedsince, waited)
end

-- A task of `record` was parked: when the lane had none parked, its time (READY since) is when the
-- lane's parked work started waiting (lanes_flush; `now` there when no state said).
local function note_parked(record, state)
  local at = record.parked_was <= 0 and tonumber(state.at)
  if at and (not record.since or at < record.since) then record.since = at end
end
