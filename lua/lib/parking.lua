-- Parking (docs/groups.md): a task its lane may not run now waits in the grouped set (state W) until
-- the lane may run one again, and a type that may not run sets its READY tasks aside the same way.

-- The most parked tasks one step lets out of a lane.
local UNPARK_MAX = 100
-- The most tasks set aside by their type one step puts back.
local TYPE_UNPARK_MAX = 1000

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
  ahead_add(record, state.rank)
  record.parked = record.parked + 1
  note_parked(record, state)
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

-- The first parked members of each of `prefixes` (lanes, or "@<type>"s), at most limits[k] of the
-- k-th, and their tasks' states (one HMGET for them all): pages[k] lists the k-th prefix's members
-- as { member, id, number (rank or score), value (the state as stored, false when absent), state (as
-- parsed), problem (why it cannot be read), named (taken from the lane's `ahead`, not read from
-- grouped) }. With `records` (lanes'), a lane whose record names more tasks ahead than its page
-- takes them from there; any other reads grouped (one ZRANGE), and its record then names the
-- members after the page, up to AHEAD_MAX.
local function parked_pages(prefixes, limits, records)
  local pages, entries, fields = {}, {}, {}
  for k, prefix in ipairs(prefixes) do
    local page, limit, record = {}, limits[k], records and records[k]
    -- Named ahead: more tasks than the page, or exactly the page when they are all it has parked.
    local named
    if record and record.ahead ~= '' then named = ahead_front(record.ahead, limit + 1) end
    if named and (#named > limit or (#named == limit and limit == record.parked)) then
      for j, text in ipairs(named) do
        local id = string.sub(text, 18)
        local entry = { member = prefix .. NUL .. text, id = id, number = string.sub(text, 1, 16), named = true }
        if j > limit then page.next, entry.after = entry, true else page[#page + 1] = entry end
        entries[#entries + 1] = entry
        fields[#fields + 1] = id .. ':s'
      end
      -- What follows the page: the text from its next entry on.
      local from = 1
      for j = 1, limit do from = from + #named[j] + 1 end
      record.ahead = #named > limit and string.sub(record.ahead, from) or ''
    else
      -- One more than asked: the member after the page, read with it (page.next), tells when the
      -- lane's next parked task became READY once the page is let out (parkedsince); a lane's
      -- record keeps the members after the page, that one first.
      local more = record and AHEAD_MAX - 1 or 0
      local members = redis.call('ZRANGE', K.grouped, '[' .. prefix .. NUL, '[' .. prefix .. LEX_END, 'BYLEX', 'LIMIT', 0,
        limit + 1 + more)
      local ahead, cut = {}, #prefix + 2
      for j, member in ipairs(members) do
        if j <= limit + 1 then
          local number, id = string.match(member, MEMBER_PATTERN)
          local entry = { member = member, id = id or '', number = number or '0' }
          if j > limit then page.next, entry.after = entry, true else page[#page + 1] = entry end
          entries[#entries + 1] = entry
          fields[#fields + 1] = entry.id .. ':s'
        end
        if j > limit then ahead[#ahead + 1] = string.sub(member, cut) end
      end
      if record then
        -- (Members as lane_member writes them; one holding a field separator is not kept.)
        local text = table.concat(ahead, ',')
        record.ahead = string.find(text, LANE_SEPARATOR, 1, true) and '' or text
      end
    end
    pages[k] = page
  end
  local values = read_many('HMGET', K.task, fields)
  for i, entry in ipairs(entries) do
    entry.value = values[i]
    -- The task after a page is not let out here: only its time is read (note_next_parked).
    if values[i] and not entry.after then entry.state, entry.problem = parse_state(values[i]) end
  end
  return pages
end

-- A page of a lane's parked tasks went (let out, or dropped): the lane's parked work now waits
-- since its next parked task became READY (page.next; `now` when it cannot be read), for
-- parkedsince (lanes_flush).
local function note_next_parked(record, page, now)
  if #page > 0 and record.parked > 0 then
    local value = page.next and page.next.value
    local at = value and string.match(value, PARKED_AT_PATTERN)
    record.since = at and #at <= DIGITS_AT and tonumber(at) or now
  end
end

-- A task of `lane` is let out to run next: READY right behind the head of its priority, flagged
-- "u", holding a slot of its lane until it is claimed.
local function let_out(writes, lane, record, id, state)
  state.letter, state.flags = 'R', state.flags .. 'u'
  put_state(writes, id, state)
  zadd(writes, K.ready, behind_front(state.rank), id)
  add_slot(lane, record, id)
  record.outs = (record.outs or 0) + 1
end

-- Lanes with parked tasks let out as many as each may run now, first by rank: back into the ready
-- set right behind the head of their priority, flagged "u", each holding a slot until it is claimed
-- (written before it returns). A lane its rate stops waits in groupwait for the next window. A
-- member whose task cannot be read is quarantined; one whose task moved on, or that has no state,
-- is dropped. For any number of lanes: their slots checked with one HMGET, one ZRANGE of the parked
-- set per lane, one HMGET of the parked tasks' states, and one write of each kind for them all.
local function lanes_unpark(names, config, now)
  lanes_load(names)
  lanes_verify(names)
  local todo, limits, seen = {}, {}, {}
  for _, lane in ipairs(names) do
    local record = lanes[lane]
    if not seen[lane] and record.parked > 0 then
      seen[lane] = true
      local room, opens_at = lane_room(lane, record, config, now)
      if opens_at then lane_wait(lane, opens_at, config) end
      if room > 0 then
        todo[#todo + 1] = lane
        limits[#todo] = math.min(room, record.parked)
      end
    end
  end
  if #todo == 0 then return end
  local records = {}
  for k, lane in ipairs(todo) do records[k] = lanes[lane] end
  local pages, writes = parked_pages(todo, limits, records), new_writes()
  for k, lane in ipairs(todo) do
    local record, page, dropped = lanes[lane], pages[k], false
    if #page == 0 then record.parked = 0 end
    for _, entry in ipairs(page) do
      local member, id, state = entry.member, entry.id, entry.state
      local parked = state and state.letter == 'W' and lane_of(state.type, state.group) == lane and
        padded(state.rank) == entry.number
      local there = true
      if entry.named and not parked then
        -- Named ahead, yet not parked here: a task a repair set aside or removed since (every other
        -- step keeps the list). The list is read from grouped again; its member counts, as one
        -- read from grouped does, only if it is still there.
        record.ahead = ''
        there = redis.call('ZSCORE', K.grouped, member) ~= false
      end
      if not there then
        dropped = true
      elseif not entry.value then
        record.parked = record.parked - 1
        -- No state: no parked task (parking writes one). A member of a task deleted or quarantined
        -- while its record could not be read (nothing could name its member), its id perhaps given
        -- to a task since: dropped. (A member's rank names the task it was, below.)
        record.ready = record.ready - 1
        zrem(writes, K.grouped, member)
        dropped = true
      elseif not state then
        record.parked = record.parked - 1
        record.ready = record.ready - 1
        quarantine(writes, id, entry.problem, now, member)
        dropped = true
      else
        record.parked = record.parked - 1
        zrem(writes, K.grouped, member)
        if parked then
          let_out(writes, lane, record, id, state)
        else
          dropped = true -- a member whose task moved on
        end
      end
    end
    note_next_parked(record, page, now)
    lane_touch(lane, record)
    -- A member it could not let out took a place of this step: the next claim lets out the next.
    if dropped and record.parked > 0 then lane_wait(lane, 0, config) end
  end
  apply(writes)
end

-- One lane lets out what it may (lanes_unpark).
local function lane_unpark(lane, config, now)
  lanes_unpark({ lane }, config, now)
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
  note_parked(record, state)
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
  local page = parked_pages({ name }, { math.min(limit, record.parked) })[1]
  if #page == 0 then record.parked = 0; lane_touch(name, record); return 0 end
  local writes = new_writes()
  local fair = config_get(config, 'fair') == '1'
  local placed = {}
  for _, entry in ipairs(page) do
    local member, id, state = entry.member, entry.id, entry.state
    record.parked = record.parked - 1
    if not entry.value then
      zrem(writes, K.grouped, member) -- no parked task: a member left by one (see lanes_unpark)
    elseif not state then
      quarantine(writes, id, entry.problem, now, member)
      after_quarantine(id, {}, config) -- a task let out of its group may have held its slot
    else
      zrem(writes, K.grouped, member)
      if state.letter == 'W' and string.find(state.flags, 't', 1, true) and state.type == task_type
        and padded(state.rank) == entry.number then
        state.letter, state.flags = 'R', string.gsub(state.flags, 't', '')
        put_state(writes, id, state)
        local score = entry.number
        if fair then
          local band = band_of(score)
          placed[band] = (placed[band] or 0) + 1
          score = band * RANK_SEQ_SPAN + front_or_start(band) + placed[band]
        end
        zadd(writes, K.ready, score, id)
      end
    end
  end
  note_next_parked(record, page, now)
  lane_touch(name, record)
  apply(writes)
  return record.parked
end
