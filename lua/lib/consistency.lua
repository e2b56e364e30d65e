-- The consistency check (check.lua, docs/design.md "Checking a queue"): reads the queue in bounded
-- steps and reports every broken invariant it finds, each with a code, the id or group it is about,
-- and what was wrong; with `repair`, it repairs what can be repaired safely, in the same step. A
-- step reads at most `count` records; its cursor says where the next goes on: "" to start, then
-- "tasks:<hscan cursor>", "sets:<set>:<offset>", "lanes:<hscan cursor>", and "" again at the end.
-- Each step is one script call, so what it sees of the records it reads is consistent; across
-- steps a live queue moves on (a task may be seen twice, or not at all, in a step of its set).
-- The reclaimer's tick runs a step of it every run, repairing (sweep_step).

-- The sets the check reads member by member, in order (after the task hash).
local CHECK_SETS = { 'ready', 'scheduled', 'leased', 'done', 'failed', 'corrupt', 'grouped' }
local SET_OF_LETTER = { R = 'ready', S = 'scheduled', L = 'leased', D = 'done', F = 'failed', W = 'grouped' }
-- The records one tick's sweep reads.
local SWEEP_PAGE = 100

local function report(problems, code, subject, detail, repaired)
  problems[#problems + 1] = code
  problems[#problems + 1] = subject
  problems[#problems + 1] = detail
  problems[#problems + 1] = repaired and 1 or 0
end

-- The queue's config: the format guard, nextDue, an ordered queue's hold, the wake mark.
local function check_config(config, now, problems, repair)
  if config.v == FORMAT_TEXT and (not redis.call('ZSCORE', K.scheduled, V0_GUARD) or
    redis.call('HGET', K.task, V0_GUARD) ~= V0_GUARD_TEXT) then
    if repair then
      redis.call('HSET', K.task, V0_GUARD, V0_GUARD_TEXT)
      redis.call('ZADD', K.scheduled, 0, V0_GUARD)
    end
    report(problems, 'v0_guard', V0_GUARD, 'the guard that stops workers of leaseq 0.1.0 is missing', repair)
  end
  local next_due, earliest = tonumber(config.nextDue), earliest_due()
  if next_due and next_due > earliest then
    if repair then set_next_due(config, earliest) end
    report(problems, 'next_due', 'nextDue', 'config nextDue is ' .. fmt(next_due) .. ', after work due at ' ..
      fmt(earliest) .. ': claims would not promote it', repair)
  end
  local hold, id = hold_of(config)
  if hold and hold > now and id then
    local state = redis.call('HGET', K.task, id .. ':s')
    if not state or string.sub(state, 1, 1) ~= 'R' then
      if repair then redis.call('HDEL', K.config, 'hold') end
      report(problems, 'hold', id, 'the ordered queue is held until ' .. fmt(hold) .. ' for a task that is not READY', repair)
    end
  end
  -- A wake-up ahead of `now` by less than WAKE_ACTIVE_MS points at nothing for a moment at most (a
  -- worker's claim whose clock is ahead, a wake-up for work just taken away): not a problem.
  -- Each deployment's marks on a shared queue, each against any work due (never dropping one a
  -- deployment may need).
  local skew = WAKE_ACTIVE_MS
  for _, scope in ipairs(all_scopes(config)) do
    local list = wake_list(config, now, scope)
    if #list > 0 and list[#list].at > now + skew then
      local due = earliest_due() -- what is due, not what config nextDue says
      if due >= NOTHING_DUE then due = nil end
      if config.ordered == '1' and hold and hold > now and (due == nil or hold < due) then due = hold end
      local idle = redis.call('ZCARD', K.ready) + leased_count() == 0
      local kept, dropped = {}, nil
      for _, entry in ipairs(list) do
        if entry.at > now + skew and (entry.at > now + skew + WAKE_HORIZON_MAX_MS or (idle and (due == nil or due > entry.at))) then
          dropped = dropped or entry.at
        else
          kept[#kept + 1] = entry
        end
      end
      if dropped then
        if repair then wake_write(config, kept, scope) end
        report(problems, 'wake', 'wake' .. scope, 'a wake-up is arranged for ' .. fmt(dropped) .. ', when nothing falls due', repair)
      end
    end
  end
end

-- A repair changed a group's parked tasks: its record no longer names its first ones, and its next
-- let-out reads grouped again.
local function ahead_clear(lane, record)
  if record.ahead ~= '' then
    record.ahead = ''
    lane_touch(lane, record)
  end
end

-- A repair took a member out of grouped: its group's list is cleared (a type's record keeps none).
local function ahead_forget(member)
  local owner = string.match(member, '^([^%z]+)%z')
  if owner and string.byte(owner, 1) ~= AT then ahead_clear(owner, lane_get(owner)) end
end

-- Puts an id back into the set its readable state names (a repair): READY at its rank (its group's
-- turn is lost: right behind the head of its priority), the others at their time.
local function put_back(writes, id, state, now)
  local letter = state.letter
  if letter == 'R' then
    zadd(writes, K.ready, state.group ~= '' and behind_front(state.rank) or state.rank, id)
  elseif letter == 'W' then
    if string.find(state.flags, 't', 1, true) then
      zadd(writes, K.grouped, 0, type_member(state.type, state.rank, id))
    else
      local lane = lane_of(state.type, state.group)
      zadd(writes, K.grouped, 0, lane_member(lane, state.rank, id))
      -- Its lane's tasks ahead are read from grouped again (it may come before them).
      ahead_clear(lane, lane_get(lane))
    end
  else
    zadd(writes, K[SET_OF_LETTER[letter]], state.at, id)
  end
end

-- One page of the task hash: flow fields (lib/flow.lua) are no tasks; with `repair`, those whose
-- time is over are removed. Every id met is in exactly the set its record names (a quarantined
-- one in corrupt only), its record can be read, it has its body unless DONE, its attempts are
-- within its maximum, a lease's generation is not above the lease counter, and a task using a
-- slot of a group with a concurrency (a lease, a held retry, one let out) is named by the group's
-- record.
local function check_tasks(config, now, cursor, count, problems, repair)
  local page = redis.call('HSCAN', K.task, cursor, 'COUNT', count)
  local ids, seen, flows_over, singletons = {}, {}, {}, {}
  -- A window over, a replaced id forgotten: on the store's clock, bounded (read at the first one).
  local decided
  for i = 1, #page[2], 2 do
    local field = page[2][i]
    local first = string.byte(field, 1)
    if first == FLOW_FIELD_BYTE then
      -- A flow key's state (lib/flow.lua), not a task: once over, the sweep removes it; a
      -- singleton's names its task, and is over once that task no longer waits (read below).
      local value = page[2][i + 1]
      if string.sub(field, 1, 3) == '!s:' then
        singletons[#singletons + 1] = field
        singletons[#singletons + 1] = value
      else
        if not string.find(value, '%d$') then
          report(problems, 'flow_field', field, 'a flow-control value without its end time', repair)
        end
        decided = decided or decision_time(config, now)
        if flow_over(value, decided) then flows_over[#flows_over + 1] = field end
      end
    elseif first ~= OWN_FIELD_BYTE then -- not the lease counter, the v0 guard
      local id = string.match(field, '^(.*):%l$') or field -- a task's own fields (<id>:s, :x, :t, :h)
      if not seen[id] then
        seen[id] = true
        ids[#ids + 1] = id
      end
    end
  end
  if #singletons > 0 then
    local names = {}
    for j = 2, #singletons, 2 do
      names[#names + 1] = singletons[j] .. ':s'
      names[#names + 1] = singletons[j]
    end
    local records = read_many('HMGET', K.task, names)
    for j = 1, #singletons, 2 do
      if not singleton_waiting(records[j] or nil, records[j + 1] or nil) then flows_over[#flows_over + 1] = singletons[j] end
    end
  end
  if repair then write_many('HDEL', K.task, flows_over) end
  if #ids == 0 then return page[1] end
  local fields = {}
  for _, id in ipairs(ids) do
    fields[#fields + 1] = id .. ':s'
    fields[#fields + 1] = id
    fields[#fields + 1] = id .. ':x'
  end
  fields[#fields + 1] = LEASE_COUNTER
  local values = read_many('HMGET', K.task, fields)
  local counter = tonumber(values[#fields])
  local scores = {}
  for _, name in ipairs(CHECK_SETS) do
    if name ~= 'grouped' then scores[name] = read_many('ZMSCORE', K[name], ids) end
  end
  -- Each task's record, and the member a parked one must have in grouped.
  local records, members, member_of = {}, {}, {}
  local lane_names = {}
  for i, id in ipairs(ids) do
    local task = read_record(values[3 * i - 2] or nil, values[3 * i - 1] or nil)
    task.reason = values[3 * i] or nil
    records[i] = task
    local state = task.state
    if not task.reason and state and state.letter == 'W' then
      local member = string.find(state.flags, 't', 1, true) and type_member(state.type, state.rank, id) or
        lane_member(lane_of(state.type, state.group), state.rank, id)
      member_of[i] = member
      members[#members + 1] = member
    end
    if not task.reason and state and state.group ~= '' then lane_names[#lane_names + 1] = lane_of(state.type, state.group) end
  end
  local in_grouped = {}
  if #members > 0 then
    local found = read_many('ZMSCORE', K.grouped, members)
    for j, member in ipairs(members) do in_grouped[member] = found[j] end
  end
  lanes_load(lane_names)
  local writes = new_writes()
  for i, id in ipairs(ids) do
    local task = records[i]
    local state = task.state
    local expected
    if task.reason then
      expected = 'corrupt'
      local value = values[3 * i - 2] or nil
      if not value or string.sub(value, 1, 2) ~= QUARANTINED then
        report(problems, 'quarantine_mark', id, 'quarantined, but its state does not say so: a script reading ' ..
          'the state alone would take it for a task in its queue', repair)
        if repair then put(writes, id .. ':s', QUARANTINED .. (value or '')) end
      end
    elseif task.problem == 'no record' then
      expected = nil -- a field alone (a quarantine reason without its set is reported below)
    elseif task.problem then
      report(problems, 'unreadable', id, 'its record cannot be read (' .. task.problem .. ') and is not quarantined', repair)
      if repair then
        quarantine(writes, id, task.problem, now)
        after_quarantine(id, task, config)
      end
    else
      expected = state and SET_OF_LETTER[state.letter] or 'ready'
    end
    if expected then
      local found = {}
      for _, name in ipairs(CHECK_SETS) do
        local member = name == 'grouped' and member_of[i]
        if (name == 'grouped' and member and in_grouped[member]) or (name ~= 'grouped' and scores[name][i]) then
          found[#found + 1] = name
        end
      end
      local here, others = false, {}
      for _, name in ipairs(found) do
        if name == expected then here = true else others[#others + 1] = name end
      end
      if not here and not state and expected == 'ready' and #found == 0 then
        -- READY and never claimed: its rank lived only as its score, so it cannot be put back where
        -- it was. Set aside with a reason: counted, listed, and READY again by repair.
        report(problems, 'no_set', id, 'its record says ready, and it is in no set' ..
          (repair and ' (set aside in corrupt: its rank was not recorded; leaseq repair makes it READY)' or ''), repair)
        if repair then
          quarantine(writes, id, 'found in no set by the check: its rank was not recorded', now)
          after_quarantine(id, task, config)
        end
      elseif not here then
        -- Put back where its record says (a quarantined one: in corrupt, its reason kept).
        local fixable = expected == 'corrupt' or state ~= nil
        report(problems, #found == 0 and 'no_set' or 'wrong_set', id, 'its record says ' .. expected ..
          (#found == 0 and ', and it is in no set' or ', and it is in ' .. table.concat(found, ', ')), repair and fixable)
        if repair and fixable then
          if expected == 'corrupt' then zadd(writes, K.corrupt, now, id) else put_back(writes, id, state, now) end
          for _, name in ipairs(others) do
            if name ~= 'grouped' then zrem(writes, K[name], id) end
          end
        end
      end
      if #others > 0 and (here or #found > 1) then
        report(problems, 'two_sets', id, 'it is in ' .. table.concat(found, ' and ') .. '; its record says ' .. expected, repair)
        if repair then
          for _, name in ipairs(others) do
            if name ~= 'grouped' then zrem(writes, K[name], id) end
          end
        end
      end
    end
    if state and not task.reason and not task.problem then
      local has_body = task.body ~= nil
      if state.letter ~= 'D' and not has_body then
        report(problems, 'no_body', id, 'a ' .. expected .. ' task without its body (payload)', repair)
        if repair then
          quarantine(writes, id, 'a task without its body', now, member_of[i])
          if member_of[i] then ahead_forget(member_of[i]) end
        end
      elseif state.letter == 'D' and has_body then
        report(problems, 'done_body', id, 'a DONE task still has its body', repair)
        if repair then drop_field(writes, id) end
      end
      if tonumber(state.max) > 0 and tonumber(state.attempts) > tonumber(state.max) then
        report(problems, 'attempts', id, 'attempt ' .. state.attempts .. ' of at most ' .. state.max, false)
      end
      -- (Before its first claim under format v2, a queue has no counter: that claim starts it at its `now`.)
      if state.letter == 'L' and counter and tonumber(state.gen) > counter then
        report(problems, 'lease_counter', id, 'its lease generation ' .. state.gen .. ' is above the lease counter ' ..
          fmt(counter) .. ': a later claim could reissue its token', repair)
        if repair then
          counter = tonumber(state.gen)
          put(writes, LEASE_COUNTER, state.gen)
        end
      end
      if state.group ~= '' then
        local lane = lane_of(state.type, state.group)
        local record, rules = lanes[lane], group_policy(config, state.type, lane)
        local kind = slot_kind(state_text(state), lane)
        local needs = kind == 'out' or ((kind == 'lease' or kind == 'held' or kind == 'failed') and rules.conc > 0)
        if needs and not has_slot(record, id) then
          report(problems, 'group_slots', lane, id .. ' (' .. kind .. ') uses a slot its group\'s record does not name', repair)
          if repair then add_slot(lane, record, id) end
        end
      end
    end
  end
  apply(writes)
  return page[1]
end

-- One page of a set: every member has a record that names that set (for grouped: the very member
-- its parked task has). A member without one is an orphan, dropped on repair; a record that names
-- another set is reported by the task hash's pages.
local function check_set(name, offset, count, now, problems, repair)
  local key = K[name]
  local page = redis.call('ZRANGE', key, offset, offset + count - 1)
  if #page == 0 then return nil end
  local ids = {}
  for i, member in ipairs(page) do
    if name == 'grouped' then ids[i] = select(2, string.match(member, MEMBER_PATTERN)) or ''
    else ids[i] = member end
  end
  local values = record_fields(ids, true, true)
  local writes, orphans = new_writes(), {}
  local parked_by = {}
  for i, member in ipairs(page) do
    local id = ids[i]
    if not (name == 'scheduled' and member == V0_GUARD) and not (name == 'leased' and member == LEASED_ANCHOR) then
      local state_text_value, body, reason = values[3 * i - 2], values[3 * i - 1], values[3 * i]
      local orphan = false
      if name == 'grouped' then
        local state = state_text_value and not reason and parse_state(state_text_value)
        local expected = state and state.letter == 'W' and (string.find(state.flags, 't', 1, true) and
          type_member(state.type, state.rank, id) or lane_member(lane_of(state.type, state.group), state.rank, id))
        orphan = expected ~= member and not (state == nil and state_text_value and not reason) -- unreadable: the task hash's page reports it
        if not orphan then
          local owner = string.match(member, '^([^%z]+)%z')
          parked_by[owner] = (parked_by[owner] or 0) + 1
        end
      else
        orphan = not state_text_value and not body and not reason
      end
      if orphan then
        orphans[#orphans + 1] = member
        report(problems, 'orphan_member', id, 'a member of ' .. name .. ' whose task is not there', repair)
      end
    end
  end
  if repair and #orphans > 0 then
    write_many('ZREM', key, orphans)
    if name == 'grouped' then
      for _, member in ipairs(orphans) do ahead_forget(member) end
    end
  end
  -- A group or type with parked members must count them (its record may have gone).
  if name == 'grouped' then
    local owners = {}
    for owner in pairs(parked_by) do owners[#owners + 1] = owner end
    lanes_load(owners)
    for _, owner in ipairs(owners) do
      local record = lanes[owner]
      if record.parked <= 0 then
        local parked = redis.call('ZLEXCOUNT', K.grouped, '[' .. owner .. NUL, '[' .. owner .. LEX_END)
        report(problems, 'group_parked', owner, 'its record counts ' .. record.parked .. ' parked tasks; ' .. parked ..
          ' are parked', repair)
        if repair then
          record.parked = parked
          if string.byte(owner, 1) ~= AT then record.ready = math.max(record.ready, parked) end
          lane_touch(owner, record)
          lane_wait(owner, 0, {})
        end
      end
    end
  end
  return offset + #page
end

-- One page of the groups hash: each record can be read, counts its parked tasks exactly, its slots
-- hold at most its concurrency, and a group (or type) with parked tasks can let one out now, or
-- waits in groupwait for when it can. Slots whose tasks moved on are dropped (the sweep that takes
-- the place of the acks, which write no record), and records with nothing left go.
-- `position` is an HSCAN cursor, and after a ":" how many records of that cursor's page were read
-- already: a small hash (a listpack) comes whole from one HSCAN, and a step reads at most `count` of
-- its records. Returns the position to go on from, "0" when the groups are done.
local function check_lanes(config, now, position, count, problems, repair)
  local cursor, skip = string.match(position, CHECK_POSITION_PATTERN)
  cursor, skip = cursor or position, tonumber(skip) or 0
  local page = redis.call('HSCAN', K.groups, cursor, 'COUNT', count)
  local entries = page[2]
  local last = math.min(#entries / 2, skip + count)
  local names, texts = {}, {}
  for i = 2 * skip + 1, 2 * last, 2 do
    names[#names + 1] = entries[i]
    texts[entries[i]] = entries[i + 1]
  end
  local after = last < #entries / 2 and check_position_line(cursor, last) or page[1]
  if #names == 0 then return after end
  lanes_load(names)
  lanes_verify(names)
  local paused = paused_types_of(config)
  -- Whether each record with parked tasks waits in groupwait: one ZMSCORE for the page.
  local parked_names = {}
  for _, name in ipairs(names) do
    if name ~= UNGROUPED and lanes[name].parked > 0 then parked_names[#parked_names + 1] = name end
  end
  local waiting = {}
  local scores = read_many('ZMSCORE', K.groupwait, parked_names)
  for i, name in ipairs(parked_names) do waiting[name] = scores[i] end
  -- Whether each record is in parkedsince: one ZMSCORE for the page.
  local listed = {}
  local since = read_many('ZMSCORE', K.parkedsince, names)
  for i, name in ipairs(names) do listed[name] = since[i] ~= false end
  for _, name in ipairs(names) do
    local record, text = lanes[name], texts[name]
    if not lane_fields(text) then
      report(problems, 'group_record', name, 'its record cannot be read', repair)
      if repair then lane_touch(name, record) end -- written again from what is known (parked counted below)
    end
    if name ~= UNGROUPED then
      -- Counted when the record says some are parked (members of a record that says none are found
      -- by the grouped set's own step): one command per group with parked tasks, none for the rest.
      local parked = record.parked > 0 and
        redis.call('ZLEXCOUNT', K.grouped, '[' .. name .. NUL, '[' .. name .. LEX_END) or 0
      if parked ~= record.parked then
        report(problems, 'group_parked', name, 'its record counts ' .. record.parked .. ' parked tasks; ' .. parked ..
          ' are parked', repair)
        if repair then
          record.parked = parked
          lane_touch(name, record)
        end
      end
      -- The tasks its record names ahead are its first parked ones, in order: one command per
      -- group that names any.
      if record.ahead ~= '' then
        local named = ahead_front(record.ahead, math.huge)
        local members = redis.call('ZRANGE', K.grouped, '[' .. name .. NUL, '[' .. name .. LEX_END, 'BYLEX', 'LIMIT', 0, #named)
        local same = #members == #named
        for j = 1, same and #named or 0 do
          if string.sub(members[j], #name + 2) ~= named[j] then same = false end
        end
        if not same then
          report(problems, 'group_ahead', name, 'its record names as its first parked tasks ' .. #named ..
            ' that are not its first ' .. #named .. ' in grouped', repair)
          if repair then ahead_clear(name, record) end
        end
      end
      -- In parkedsince exactly when it has parked tasks (counted here when its record says none
      -- and it is listed: the grouped set's own step finds a record that says none wrongly).
      if listed[name] and record.parked <= 0 then
        parked = redis.call('ZLEXCOUNT', K.grouped, '[' .. name .. NUL, '[' .. name .. LEX_END)
      end
      if listed[name] ~= (parked > 0) then
        report(problems, 'parked_since', name, parked > 0 and
          'it has parked tasks, and is not in parkedsince: the oldest waiting age does not see them' or
          'it has no parked tasks, and is in parkedsince: the oldest waiting age counts it', repair)
        -- lanes_flush puts it right: it enters parkedsince (by now) or leaves it as if its count changed.
        if repair then
          record.parked_was = parked > 0 and 0 or 1
          lane_touch(name, record)
        end
      end
      local is_type = string.byte(name, 1) == AT
      local task_type = is_type and string.sub(name, 2) or lane_type(name)
      local rules = group_policy(config, task_type, not is_type and name or nil)
      local limit = rules.ordered and 1 or rules.conc
      if not is_type and limit > 0 and slot_count(record) > limit then
        report(problems, 'concurrency', name, slot_count(record) .. ' tasks use its slots; its concurrency is ' ..
          limit, false)
      end
      if record.parked > 0 and not waiting[name] then
        local stalled, at = false, now
        if is_type then
          stalled = not (paused and paused[task_type])
        else
          local room, opens_at = lane_room(name, record, config, now)
          stalled, at = room > 0 or opens_at ~= nil, opens_at or now
        end
        if stalled then
          report(problems, 'group_stalled', name, record.parked .. ' parked tasks, and nothing will let them out', repair)
          if repair then lane_wait(name, at > now and at or 0, config) end
        end
      end
    end
  end
  return after
end

-- The schedules (docs/schedules.md): every schedule has its revision and a cursor that is a time,
-- and waits in the plan set (else no planner would ever look at it: repair puts it there, due now);
-- every member of the plan set is a schedule (repair removes one that is not). `position` is an
-- HSCAN cursor of the schedules hash, then "p<offset>" for the plan set's members. Returns the
-- position to go on from, "" when done.
local function check_schedules(position, count, now, problems, repair)
  if string.sub(position, 1, 1) == 'p' then
    local offset = tonumber(string.sub(position, 2)) or 0
    local members = redis.call('ZRANGE', K.plan, offset, offset + count - 1)
    if #members == 0 then return '' end
    local found = read_many('HMGET', K.schedules, members)
    local kept = 0
    for i, name in ipairs(members) do
      if not found[i] then
        report(problems, 'plan_orphan', name, 'the plan set names a schedule that does not exist', repair)
        if repair then redis.call('ZREM', K.plan, name) end
      else
        kept = kept + 1
      end
    end
    if #members < count then return '' end
    return 'p' .. fmt(offset + (repair and kept or #members))
  end
  local page = redis.call('HSCAN', K.schedules, position, 'COUNT', count)
  local names = {}
  for i = 1, #page[2], 2 do
    local field = page[2][i]
    if not string.find(field, ':', 1, true) then names[#names + 1] = field end
  end
  if #names > 0 then
    local fields = {}
    for _, name in ipairs(names) do
      fields[#fields + 1] = name .. ':v'
      fields[#fields + 1] = name .. ':c'
      fields[#fields + 1] = name .. ':e'
    end
    local values = read_many('HMGET', K.schedules, fields)
    local scores = read_many('ZMSCORE', K.plan, names)
    for i, name in ipairs(names) do
      local revision, cursor, aside = values[3 * i - 2], values[3 * i - 1], values[3 * i]
      if not revision or not cursor or not tonumber(cursor) then
        report(problems, 'schedule_record', name, 'its revision or cursor is missing or unreadable', false)
      elseif aside then
        report(problems, 'schedule_aside', name, 'the planner set it aside, no slot is made: ' .. aside, false)
      elseif not scores[i] then
        report(problems, 'schedule_unplanned', name, 'it is not in the plan set: no planner would look at it', repair)
        if repair then redis.call('ZADD', K.plan, now, name) end
      end
    end
  end
  if page[1] == '0' then return 'p0' end
  return page[1]
end

-- One step of the check from `cursor`: the problems found (4 values each: code, subject, detail,
-- repaired 1/0) and the cursor to go on from ("" when the check is complete). `count` bounds the
-- records a step reads; the config's checks come with the first step.
local function check_step(config, now, cursor, count, repair)
  local problems = {}
  local phase, position = string.match(cursor, CHECK_CURSOR_PATTERN)
  if not phase then
    check_config(config, now, problems, repair)
    phase, position = 'tasks', '0'
  end
  local next_cursor = ''
  if phase == 'tasks' then
    local after = check_tasks(config, now, position, count, problems, repair)
    if after == '0' then next_cursor = check_cursor_line('sets', check_position_line(1, 0))
    else next_cursor = check_cursor_line('tasks', after) end
  elseif phase == 'sets' then
    local index, offset = string.match(position, CHECK_POSITION_PATTERN)
    index, offset = tonumber(index) or 1, tonumber(offset) or 0
    local name = CHECK_SETS[index]
    if not name then
      next_cursor = check_cursor_line('lanes', '0')
    else
      local after = check_set(name, offset, count, now, problems, repair)
      if after and after - offset >= count then next_cursor = check_cursor_line('sets', check_position_line(index, after))
      elseif index < #CHECK_SETS then next_cursor = check_cursor_line('sets', check_position_line(index + 1, 0))
      else next_cursor = check_cursor_line('lanes', '0') end
    end
  elseif phase == 'lanes' then
    local after = check_lanes(config, now, position, count, problems, repair)
    next_cursor = check_cursor_line(after == '0' and 'plans' or 'lanes', after)
  elseif phase == 'plans' then
    local after = check_schedules(position, count, now, problems, repair)
    next_cursor = after == '' and '' or check_cursor_line('plans', after)
  end
  return problems, next_cursor
end

-- The tick's slice of the check, repairing what it finds: one step of SWEEP_PAGE records of the whole
-- check from where the last tick's stopped (config `sweep`), and one step of the groups alone (config
-- `lsweep`: their records, then the parked tasks, round and round), so a group nothing would let run
-- starts again within (HLEN(groups) + ZCARD(grouped)) / SWEEP_PAGE runs, a group record lost while
-- only parked tasks remain included, and the records of groups whose slots were all acked since go.
local GROUPED_STEP = check_cursor_line('sets', check_position_line(#CHECK_SETS, 0))
local function sweep_step(config, now, count)
  for _, field in ipairs({ 'sweep', 'lsweep' }) do
    local cursor = config_get(config, field) or (field == 'lsweep' and check_cursor_line('lanes', '0') or '')
    local problems, next_cursor = check_step(config, now, cursor, count, true)
    if field == 'lsweep' then
      local phase = string.match(next_cursor, CHECK_CURSOR_PATTERN)
      if phase ~= 'lanes' and phase ~= 'sets' then next_cursor = GROUPED_STEP end
    end
    if next_cursor ~= cursor then
      if next_cursor == '' then redis.call('HDEL', K.config, field)
      else redis.call('HSET', K.config, field, next_cursor) end
      config[field] = next_cursor ~= '' and next_cursor or nil
    end
    if field == 'sweep' and redis.call('EXISTS', K.groups) == 0 then break end
  end
end
