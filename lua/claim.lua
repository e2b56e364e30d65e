-- claim: promote due scheduled tasks, then lease up to `count` ready tasks in rank order. Retry-safe:
-- a repeat with the same claim id (a store's retry after a lost reply) returns the batch the first
-- run leased, with the same tokens, and charges no second attempt.
--
-- KEYS the queue's keys (see lib/arguments.lua): all of them
-- ARGV[1] now            ms since epoch
-- ARGV[2] count          1..1000, the most tasks to lease
-- ARGV[3] maxLeaseMs     1..86400000: lease only tasks whose type's lease is at most this (the time
--                        the caller has left); longer ones stay READY. An ordered queue stops at the
--                        first such task.
-- ARGV[4] claimId        1-64 characters of A-Z a-z 0-9 _ . -, new for every claim
-- ARGV[5] repeat         1 when this may repeat an earlier call of the same claim id (a retry), else 0
-- ARGV[6] promoteLimit   1..10000, the most due scheduled tasks to promote first
-- ARGV[7] types          the task types the caller has a handler for, comma-separated, or "" (any):
--                        a task of a type the queue declares (a policy p:<type>, or accepted a:<type>)
--                        that is not among them stays READY for a worker that has it, with no
--                        attempt used; a type the queue does not declare is leased (its worker
--                        fails it: the queue, not the worker, lacks it)
-- ARGV[8] busy           1 when the caller runs other tasks now: a task that stalled twice (flag s,
--                        "solo") is left READY for a caller running nothing, and the reply says one
--                        waits; 0 when it runs none
-- ARGV[9] room           the caller's types it may run only so many more of now, as "<type>:<n>",
--                        comma-separated, or "": at most n of each is leased, the rest stay READY, and
--                        when it leaves one a wake-up is arranged now for another worker (wakeAt)
-- ARGV[10] woken         1 for a claim a wake-up brought: the first of an invocation a wake-up
--                        started, or one a running worker makes for a wake-up it took from the wake
--                        queue (a free slot listening). It answers that wake-up (the earliest one
--                        due), so a worker that fills its slots with work left waiting wakes another
-- ARGV[11] lingers       1 when the caller, its claim leasing nothing, looks again soon on its own (it
--                        drains, within its linger): its claim marks it active, and work made ready
--                        meanwhile needs no wake-up; 0 when it has handed the queue back to wake-ups
--                        (it claims as its slots free, or for a wake-up it took): only a claim that
--                        leases something marks it (it lingers again after work)
-- Reads config: the type policies (p:<type>, a:<type>, d, leases), ordered, hold, nextDue, paused (a
--   paused queue leases nothing), pauses and rates (a type that may not run now is set aside, see
--   type_park), fair, wake; keeps `active` (a worker with room is draining: mark_active), `wake`
--   (a wake-up for the tasks its room left READY) and `#lease`, the lease
--   counter whose next value is the generation of every lease of this claim.
-- Returns: per leased task, 6 each, in rank order:
--   id, body (as enqueued: "1|<enqueuedAtMs>|<type>|<group>|<trace>|<payload>"), attempt (1 = first),
--   lease token ("<rank>.<generation>": the rank is its first part), lease deadline (ms), solo ("1"
--   when the task stalled twice: the caller runs it alone, else "")
--   then 3 values: next (when nothing is leased: when scheduled work next falls due, or an ordered
--   queue's hold ends, for a worker deciding whether to wait for it; "" when nothing is due, when
--   an ordered queue is busy with a leased task, when the queue is paused, or when tasks were
--   leased), soloWaiting ("1" when a solo task was left for a caller running nothing, else ""),
--   wakeAt (the time to send a wake-up for, or "": the claim filled the caller's free slots, or its
--   room for a type, and left tasks READY for another worker).
--   A solo task comes alone, in a batch of its own. A record that cannot be read is moved to the
--   corrupt set with its reason, and the claim goes on without it.
-- Errors: LEASEQ_BAD_ARGUMENT when any argument is malformed, LEASEQ_FORMAT when the queue is in
--   another storage format. Both come before the first write: after its checks the claim only
--   reads, parses (never raising) and writes.
-- Uses: K, add_slot, apply, bad, claim_args, drop_slot, flag_bare_lease, fmt, group_policy, guard
-- Uses: has_slot, hold_of, int_text, lane_get, lane_of, lane_park, lane_touch, lane_wait, lanes
-- Uses: lanes_flush, lanes_load, lanes_unpark, lanes_verify, lease_lengths, lease_line
-- Uses: leased_count, load, mark_active, name_arg, need_wake, new_state, new_writes, next_due_of
-- Uses: parse_body, parse_state, paused_types_of, plus, policy_of, promote_due, put, put_state
-- Uses: quarantine, rate_count, rate_open, read_config, read_many, read_record, repeated_wake
-- Uses: run_line, slot_count, slot_ids, token_of, type_park, type_scope, wake_answered, write_many

-- 1. The batch a claim with this id leased at now + one of the queue's lease lengths, as its first
-- run returned it (a repeat after a lost reply); nil when it leased none.
local function repeated_batch(leases, now, claim_id)
  local candidates = {}
  for _, lease in ipairs(leases) do
    local deadline = fmt(now + lease)
    for _, id in ipairs(redis.call('ZRANGEBYSCORE', K.leased, deadline, deadline)) do candidates[#candidates + 1] = id end
  end
  local tasks = load(candidates, true)
  local batch = {}
  for _, id in ipairs(candidates) do
    local task = tasks[id]
    if task.state and task.state.letter == 'L' and task.state.claim == claim_id and task.body then
      batch[#batch + 1] = { id = id, state = task.state, body = task.body }
    end
  end
  if #batch == 0 then return nil end
  table.sort(batch, function(a, b) return tonumber(a.state.rank) < tonumber(b.state.rank) end)
  local result = {}
  for _, item in ipairs(batch) do
    local state = item.state
    local solo = string.find(state.flags, 'a', 1, true) and '1' or ''
    local _, since = string.match(state.run or '', RUN_PATTERN)
    since = since or ''
    for _, value in ipairs({ item.id, item.body, state.attempts, token_of(state), state.at, solo, since }) do
      result[#result + 1] = value
    end
  end
  return result
end

-- 3. An ordered queue's claim waits while a task is leased ({}), or while the retry it runs next
-- holds it ({ hold time }). A hold whose task is no longer READY (cancelled, deleted, quarantined,
-- done) ends: the queue goes on. Returns nil when the claim may go on.
local function ordered_gate(config, now)
  if leased_count() > 0 then return {} end
  local hold, id = hold_of(config)
  if not hold or hold <= now then return nil end
  if id then
    local state = redis.call('HGET', K.task, id .. ':s')
    if not state or string.sub(state, 1, 1) ~= 'R' then
      redis.call('HDEL', K.config, 'hold')
      config.hold = nil
      return nil
    end
  end
  return { fmt(hold) }
end

-- 4. What this claim does with each type's tasks, worked out at its first task: "lease" them (with
-- the type's lease, attempts and deadline), "park" them (set aside by type_park: the type is paused,
-- or its rate across groups is used up), "skip" them (they stay READY: the lease is longer than the
-- time left, or the caller has no handler for a type the queue declares), or "stop" (an ordered
-- queue stops at the first task it may not lease). `all_fit`: every task of the queue may be leased,
-- so the first `count` heads are the batch.
local function claim_choices(config, now, max_lease, runs, room, paused_types)
  local ordered = config.ordered == '1'
  local type_rates, foreign = false, false
  for field, value in pairs(config) do
    local prefix = string.sub(field, 1, 2)
    if (field == 'gd' or prefix == 'g:') and not string.find(value, ',0,%d+$') then type_rates = true end
    if runs and (prefix == 'p:' or prefix == 'a:') and not runs[string.sub(field, 3)] then foreign = true end
  end
  local leases = lease_lengths(config)
  local choices = {}
  local known = {}
  choices.all_fit = leases[#leases] <= max_lease and not paused_types and not type_rates and not foreign and not room
  local held_back = ordered and 'stop' or 'park'
  local left = ordered and 'stop' or 'skip'
  function choices.of(task_type)
    local choice = known[task_type]
    if choice then return choice end
    if paused_types and paused_types[task_type] then
      choice = { action = held_back }
    elseif room and room[task_type] == 0 then
      choice = { action = left, own = true }
    elseif runs and not runs[task_type] and (config['p:' .. task_type] or config['a:' .. task_type]) then
      choice = { action = left }
    else
      local lease, max = policy_of(config, task_type)
      if lease > max_lease then
        choice = { action = left }
      else
        choice = { action = 'lease', max = tostring(max), deadline = fmt(now + lease) }
        choice.counts = room and room[task_type] ~= nil
        local rules = type_rates and group_policy(config, task_type)
        if rules and rules.type_max > 0 then
          choice.rated, choice.counts = true, true
          local open, opens_at = rate_open(lane_get('@' .. task_type), rules.type_max, rules.type_ms, now)
          if not open then
            choice.action = held_back
            lane_wait('@' .. task_type, opens_at, config)
          end
        end
      end
    end
    known[task_type] = choice
    return choice
  end
  -- A task of a type with a room or a rate was leased: once the caller's room for its type is used,
  -- the rest stay READY for another worker; once its rate window is full, its type waits.
  function choices.counted(task_type)
    local chosen = known[task_type]
    if room and room[task_type] then
      room[task_type] = room[task_type] - 1
      if room[task_type] <= 0 then
        known[task_type] = { action = left, own = true }
        return
      end
    end
    if not chosen.rated then return end
    local name, rules = '@' .. task_type, group_policy(config, task_type)
    local record = lane_get(name)
    rate_count(name, record, rules.type_max, rules.type_ms, now)
    local open, opens_at = rate_open(record, rules.type_max, rules.type_ms, now)
    if not open then
      chosen.action = held_back
      lane_wait(name, opens_at, config)
    end
  end
  return choices
end

-- 5. The state of one claim's scan. The writes are collected in the lists apply() runs; the common
-- task (READY, never claimed, so no state yet) is leased inline, without a table of its own.
local function new_scan(config, now, now_text, count, max_lease, claim_id, ordered, choice, busy)
  local writes = new_writes()
  local scan = {
    config = config, now = now, now_text = now_text, count = count, max_lease = max_lease, claim_id = claim_id,
    ordered = ordered, choice = choice, writes = writes, states = writes.fields, result = {}, taken = 0, busy = busy,
    solo_waiting = false, -- a solo task was left for a caller running nothing
    left_own = false, -- a task of the caller's types was left READY for want of room
    more = false, -- the batch filled with heads left after it: another worker may take them
    -- leased: the leases' (deadline, id), after the anchor, so the set is a skiplist before they go
    -- in; popped: the ids leaving READY: leased, parked or quarantined
    leased = { '+inf', LEASED_ANCHOR }, popped = {},
    prefix = true, -- every head so far left READY: they go with one ZREMRANGEBYRANK, not by id
    unpark = {}, -- lanes that gave a task or parked one: they may let out the next
    holding = {}, -- the states of the lanes' leases from earlier claims, by id (lanes_verify)
    leased_here = {}, indexed = 0, -- this claim's leases without flags, by id: their state's place
    stop = false,
  }
  writes.removes[K.ready] = scan.popped
  return scan
end

-- This claim's leases without flags, by id, from the states written since it last looked.
local function leases_here(s)
  local states = s.states
  for at = s.indexed + 2, #states, 2 do
    if string.find(states[at], BARE_LEASE_PATTERN) then
      local field = states[at - 1]
      s.leased_here[string.sub(field, 1, #field - 2)] = at
    end
  end
  s.indexed = #states
  return s.leased_here
end

-- A lane full of leases parks a task behind them: its leases are flagged "p", so their settle lets it out.
local function flag_leases(s, record)
  local here_now = leases_here(s)
  for _, holder in ipairs(slot_ids(record)) do
    local text, here = s.holding[holder], here_now[holder]
    if here then
      s.states[here] = flag_bare_lease(s.states[here], 'p')
      s.leased_here[holder] = nil
    elseif text and string.sub(text, 1, 1) == 'L' then
      local state = parse_state(text)
      if state and not string.find(state.flags, 'p', 1, true) then
        state.flags = state.flags .. 'p'
        put_state(s.writes, holder, state)
      end
      s.holding[holder] = nil
    end
  end
end

-- Whether a task of a lane must be parked: parked tasks go first (it waits behind them unless it
-- was let out, "u"), at most `concurrency` slots used (a task let out uses the one it holds), at
-- most `rate` claims per window.
local function gate(s, lane, record, rules, out, id)
  if record.parked > 0 and not out then return true end
  -- The common lane, nothing used and no rate, is decided without counting slots or windows.
  if record.slots == '' and rules.rate_max == 0 then return false end
  if rules.conc > 0 and not (out and has_slot(record, id)) and slot_count(record) >= rules.conc then
    flag_leases(s, record)
    return true
  end
  local open, opens_at = rate_open(record, rules.rate_max, rules.rate_ms, s.now)
  if open then return false end
  lane_wait(lane, opens_at, s.config)
  return true
end

-- A task of a lane is leased: it holds a slot (a lane with a concurrency; one let out keeps the
-- slot it held), one less READY, one more claim in its window. Returns its lease's flags: "p" when
-- its settle must let the lane's parked tasks out (an ordered lane, or one with parked tasks;
-- flag_leases flags the others when a task is parked behind them).
local function take_lane(s, lane, record, rules, out, id)
  record.ready = record.ready - 1
  if rules.rate_max > 0 then rate_count(lane, record, rules.rate_max, rules.rate_ms, s.now) end
  lane_touch(lane, record)
  if record.parked > 0 then s.unpark[#s.unpark + 1] = lane end
  if out and has_slot(record, id) then
    if record.outs then record.outs = record.outs - 1 end
    if rules.conc == 0 then drop_slot(lane, record, id) end
  else
    if rules.conc > 0 then add_slot(lane, record, id) end
  end
  if rules.conc > 0 and (rules.ordered or record.parked > 0) then return 'p' end
  return ''
end

-- A head whose record cannot be read: quarantined. When its body names its group, the group counts
-- it no more, and may let out its next task (a slot it held is freed when the group's slots are
-- checked against the states).
local function quarantine_head(s, id, task)
  quarantine(s.writes, id, task.problem or 'a READY task without its body', s.now)
  local info = task.body_info
  if not info and task.body then info = parse_body(task.body) end
  if info and info.group ~= '' then
    local lane = lane_of(info.type, info.group)
    local record = lane_get(lane)
    record.ready = record.ready - 1
    lane_touch(lane, record)
    s.unpark[#s.unpark + 1] = lane
  end
end

-- The fresh tasks of a page (READY, never claimed), read with one match each: a task with no state
-- from its body (ungrouped, or of a group and enqueued READY: its rank is its score), one of a group
-- let out of parking ("u") from the state it was given. Indexed by the head's place in the page (1,
-- 2, ...), so the lists stay arrays; `lane` is false for an ungrouped task. Returns the lanes of the
-- page (the other tasks of groups too), to load with one HMGET, then those lists.
local function fresh_of(heads, values)
  local names, f_type, f_lane, f_rank, f_out, f_state, f_since = {}, {}, {}, {}, {}, {}, {}
  for i = 1, #heads, 2 do
    local value, body, at = values[i], values[i + 1], (i + 1) / 2
    if not value then
      local enqueued, task_type, group = nil, nil, nil
      if body then enqueued, task_type, group = string.match(body, FRESH_BODY_PATTERN) end
      local rank = heads[i + 1]
      if task_type and (#enqueued < DIGITS_ENQUEUED or tonumber(enqueued) <= TIME_MAX_MS) and #rank <= DIGITS_RANK and
        string.find(rank, '^%d+$') then
        local lane = group ~= '' and lane_of(task_type, group)
        f_type[at], f_lane[at], f_rank[at], f_out[at], f_since[at] = task_type, lane, rank, false, enqueued
        if lane then names[#names + 1] = lane end
      end
    else
      local since, flags, grank, lane, task_type = string.match(value, FRESH_GROUPED_PATTERN)
      if flags and body and string.byte(body, 1) == BODY_FORMAT_BYTE and #grank <= DIGITS_RANK and #since <= DIGITS_AT then
        f_type[at], f_lane[at], f_rank[at], f_out[at], f_state[at] = task_type, lane, grank, flags == 'u', true
        f_since[at] = since
      else
        local other_type, group = string.match(value, LANE_OF_STATE_PATTERN)
        lane = other_type and lane_of(other_type, group)
      end
      if lane then names[#names + 1] = lane end
    end
  end
  return names, f_type, f_lane, f_rank, f_out, f_state, f_since
end

-- The state a fresh task gets when it is parked: the one enqueue gave it, else READY since its
-- enqueue, its rank its score.
local function fresh_state(has_state, rank, state_value, body, task_type, lane)
  if has_state then return parse_state(state_value) end
  return new_state('R', string.match(body, FRESH_BODY_PATTERN), rank, task_type,
    lane and string.sub(lane, #task_type + 2) or '')
end

-- One page of heads: each leased, parked in its lane, set aside by its type, left READY, or
-- quarantined, in rank order, until the batch is full or the claim must stop. The scan's lists are
-- locals here (the common lease is a few table appends, per task), written back as the page ends.
local function take_page(s, heads, values, fields)
  local config, choice, count = s.config, s.choice, s.count
  local states, result, leased, popped = s.states, s.result, s.leased, s.popped
  local gen_text, claim_id, taken = s.gen_text, s.claim_id, s.taken
  local now_text = s.now_text
  local type_lanes = {} -- each type's lane without a group, "<type>|", made once per page

  -- Leases a READY task never claimed (no state, or the state enqueue gave a task of a group)
  -- inline, without a table: its state text, its lease, its place in the result.
  local function lease_fresh(id, field, body, rank, type_group, flags, chosen, task_type, since)
    since = since or ''
    states[#states + 1] = field
    states[#states + 1] = lease_line('1', gen_text, chosen.max, chosen.deadline, flags, rank, type_group, claim_id, now_text,
      since)
    leased[#leased + 1] = chosen.deadline
    leased[#leased + 1] = id
    popped[#popped + 1] = id
    local n = #result
    result[n + 1], result[n + 2], result[n + 3], result[n + 4], result[n + 5], result[n + 6], result[n + 7] =
      id, body, '1', rank .. '.' .. gen_text, chosen.deadline, '', since
    taken = taken + 1
    if chosen.counts then choice.counted(task_type) end
  end
  -- Leases a task read through its record (claimed before, let out of a lane...).
  local function lease_read(id, task, state, chosen, flags, solo)
    local since = state.at -- READY since its `at`, before the lease's deadline takes it
    state.run = run_line(now_text, since)
    state.letter, state.attempts, state.gen = 'L', plus(state.attempts, 1), gen_text
    state.max, state.at, state.flags, state.claim = chosen.max, chosen.deadline, solo and flags .. 'a' or flags, claim_id
    put_state(s.writes, id, state)
    leased[#leased + 1] = chosen.deadline
    leased[#leased + 1] = id
    popped[#popped + 1] = id
    local n = #result
    result[n + 1], result[n + 2], result[n + 3], result[n + 4], result[n + 5], result[n + 6], result[n + 7] =
      id, task.body, state.attempts, token_of(state), state.at, solo and '1' or '', since
    taken = taken + 1
    if chosen.counts then choice.counted(state.type) end
  end
  -- The batch ends; `at` (the place of the head just leased) when it is full: heads left after it
  -- mean another worker may take them.
  local function stop(at)
    s.taken, s.stop = taken, true
    if at and (at + 2 <= #heads or s.page_full) then s.more = true end
  end

  local names, f_type, f_lane, f_rank, f_out, f_state, f_since = fresh_of(heads, values)
  if #names > 0 then
    lanes_load(names)
    -- The heads' states were read above (a task let out holds its lane's slot): not read again.
    local read_states = {}
    for i = 1, #heads, 2 do read_states[heads[i]] = values[i] end
    for holder, text in pairs(lanes_verify(names, read_states)) do s.holding[holder] = text end
  end
  for i = 1, #heads, 2 do
    local id, state_value, body, score, at = heads[i], values[i], values[i + 1], heads[i + 1], (i + 1) / 2
    local task_type, lane = f_type[at], f_lane[at]
    if task_type then
      local chosen = choice.of(task_type)
      local action = chosen.action
      if chosen.own then s.left_own = true end
      if action == 'stop' then return stop() end
      if action == 'skip' then
        s.prefix = false
      elseif action == 'park' then
        type_park(s.writes, task_type, id, fresh_state(f_state[at], f_rank[at], state_value, body, task_type, lane))
        popped[#popped + 1] = id
      elseif lane then
        local record, rules = lanes[lane], group_policy(config, task_type, lane)
        local out = f_out[at]
        if gate(s, lane, record, rules, out, id) then
          lane_park(s.writes, lane, record, id, fresh_state(f_state[at], f_rank[at], state_value, body, task_type, lane))
          popped[#popped + 1] = id
          s.unpark[#s.unpark + 1] = lane -- it may be let out at once if its lane has room
        else
          lease_fresh(id, fields[i], body, f_rank[at], lane, take_lane(s, lane, record, rules, out, id), chosen,
            task_type, f_since[at])
          if taken == count then return stop(i) end
        end
      else
        local type_lane = type_lanes[task_type]
        if not type_lane then
          type_lane = lane_of(task_type, '')
          type_lanes[task_type] = type_lane
        end
        lease_fresh(id, fields[i], body, f_rank[at], type_lane, '', chosen, task_type, f_since[at])
        if taken == count then return stop(i) end
      end
    else
      local task = read_record(state_value or nil, body or nil)
      local info = task.body_info
      if task.problem or not info then
        quarantine_head(s, id, task)
      else
        local state = task.state or new_state('R', s.now_text, int_text(score, tonumber(score)), info.type, info.group)
        local solo = string.find(state.flags, 's', 1, true) ~= nil
        local chosen = choice.of(state.type)
        local action = chosen.action
        if chosen.own then s.left_own = true end
        -- A task that stalled twice runs alone: the batch stops before it, and a caller running other
        -- tasks leaves it READY for one running none (told it waits), unless it stays READY anyway.
        if solo and action == 'lease' then
          if s.busy then
            s.solo_waiting = true
            action = 'skip'
          elseif taken > 0 then
            return stop()
          end
        end
        if action == 'stop' then return stop() end
        if action == 'skip' then
          s.prefix = false
        elseif action == 'park' then
          type_park(s.writes, state.type, id, state)
          popped[#popped + 1] = id
        else
          local task_lane = state.group ~= '' and lane_of(state.type, state.group)
          local record = task_lane and lane_get(task_lane)
          local out = task_lane and string.find(state.flags, 'u', 1, true) ~= nil
          local rules = task_lane and group_policy(config, state.type, task_lane)
          if task_lane and gate(s, task_lane, record, rules, out, id) then
            lane_park(s.writes, task_lane, record, id, state)
              popped[#popped + 1] = id
            s.unpark[#s.unpark + 1] = task_lane
          else
            lease_read(id, task, state, chosen, task_lane and take_lane(s, task_lane, record, rules, out, id) or '', solo)
            if solo or taken == count then return stop(i) end
          end
        end
      end
    end
  end
  s.taken = taken
end

-- The ready set's heads, in pages: when every lease fits, the first `count` heads are the batch;
-- otherwise pages grow from a few times the batch, so a claim reads past what it leaves READY
-- without reading 1000 heads every time. A head that was set aside leaves a gap the next page
-- fills. The first page's read also fetches the lease counter: this claim's leases get its next value.
local function take_heads(s)
  local page = s.choice.all_fit and s.count or math.min(CLAIM_SCAN_MAX, math.max(4 * s.count, 64))
  local offset = 0
  while not s.stop and offset < CLAIM_SCAN_MAX do
    -- One head more than the page, not read: whether heads are left after it.
    local heads = redis.call('ZRANGE', K.ready, offset, offset + page, 'WITHSCORES')
    if #heads == 0 then break end
    s.page_full = #heads > 2 * page
    if s.page_full then
      heads[#heads] = nil
      heads[#heads] = nil
    end
    offset = offset + #heads / 2
    local fields = {}
    for i = 1, #heads, 2 do
      fields[i] = heads[i] .. ':s'
      fields[i + 1] = heads[i]
    end
    if not s.gen_text then fields[#fields + 1] = LEASE_COUNTER end
    local values = read_many('HMGET', K.task, fields)
    if not s.gen_text then
      s.gen_text = fmt((tonumber(values[#fields]) or s.now) + 1)
      values[#fields] = nil
    end
    take_page(s, heads, values, fields)
    if not s.page_full then break end
    if s.choice.all_fit then page = s.count - s.taken else page = math.min(2 * page, CLAIM_SCAN_MAX - offset) end
    if page <= 0 then break end
  end
end

-- 6. The scan's writes: states and leases (apply), the heads out of READY, the lease counter, and
-- the lanes that gave a task or parked one let out what they may.
local function finish_scan(s)
  if #s.leased > 2 then s.writes.adds[K.leased] = s.leased end
  s.writes.removes[K.ready] = nil
  if s.taken > 0 then put(s.writes, LEASE_COUNTER, s.gen_text) end
  apply(s.writes)
  local popped = s.popped
  if #popped > 0 then
    if s.prefix then redis.call('ZREMRANGEBYRANK', K.ready, 0, #popped - 1) else write_many('ZREM', K.ready, popped) end
  end
  if #s.unpark > 0 then lanes_unpark(s.unpark, s.config, s.now) end
end

-- The reply's last values: next due (when nothing was leased), whether a solo task waits, the
-- wake-up to send.
local function claim_tail(result, next_due, solo_waiting, wake_at)
  result[#result + 1] = next_due and fmt(next_due) or ''
  result[#result + 1] = solo_waiting and '1' or ''
  result[#result + 1] = wake_at and fmt(wake_at) or ''
  return result
end

-- The set of the comma-separated type names of a claim argument, or nil for "".
local function type_set(name, text)
  if text == '' then return nil end
  local set = {}
  for task_type in string.gmatch(text, '[^,]+') do set[name_arg(name, task_type, TYPE_MAX_BYTES)] = true end
  return set
end

-- The room argument: "<type>:<n>" entries, comma-separated, as a table type -> n, or nil for "".
local function room_of(text)
  if text == '' then return nil end
  local room = {}
  for entry in string.gmatch(text, '[^,]+') do
    local task_type, n = string.match(entry, '^([^:]+):(%d+)$')
    if not task_type or #n > 4 then bad('room must be "<type>:<n>" entries (n 0..9999), comma-separated, or ""') end
    room[name_arg('room', task_type, TYPE_MAX_BYTES)] = tonumber(n)
  end
  return room
end

return guard('claim', function()
  local now, now_text, count, max_lease, claim_id, is_repeat, promote_limit, types, busy, room_text, woken, lingers =
    claim_args()
  local runs = type_set('types', types) -- the caller's types, or nil: any
  local room = room_of(room_text)
  local config = read_config()
  local ordered, paused = config.ordered == '1', config.paused == '1'
  -- The caller's wake-up marks: its deployment's on a shared queue (the one running its types).
  local scope = runs and type_scope(config, string.match(types, '^[^,]+')) or ''
  local leases = lease_lengths(config)

  -- 1. A repeat of a claim whose reply was lost: the batch it leased, as it was.
  if is_repeat then
    local batch = repeated_batch(leases, now, claim_id)
    if batch then return claim_tail(batch, nil, false, repeated_wake(config, now, claim_id, scope)) end
  end
  -- The wake-up that brought this claim is answered: its worker is here.
  if woken then wake_answered(config, now, scope) end
  if paused then return claim_tail({}, nil, false, nil) end

  -- 2. Due scheduled tasks become READY; groups and types whose time came run again.
  local paused_types = paused_types_of(config)
  promote_due(config, now, now_text, promote_limit, OPEN_PER_CLAIM)

  -- 3. An ordered queue: nothing while a task is leased, or while the retry it waits for holds it.
  if ordered then
    local gate = ordered_gate(config, now)
    if gate then
      mark_active(config, now, lingers, scope)
      lanes_flush(now)
      return claim_tail({}, gate[1], false, nil)
    end
  end

  -- 4. Each type's lease and what a claim does with its tasks now: lease them, set them aside (a
  -- type paused or out of its rate), or leave them READY for another caller (a lease longer than
  -- the time left, a type the caller has no handler for or no room for).
  local choice = claim_choices(config, now, max_lease, runs, room, paused_types)

  -- 5. The ready set's heads, in pages, leased inline or parked; see take_heads.
  local scan = new_scan(config, now, now_text, count, max_lease, claim_id, ordered, choice, busy)
  take_heads(scan)

  -- 6. Writes: the leases and states, the heads out of READY, the lanes that may let out more, the
  -- lease counter, the lane records, the marks: a worker with room drains (active); another worker
  -- for the tasks it had no room for (its free slots full, or its room for a type: a wake-up now).
  finish_scan(scan)
  lanes_flush(now)
  mark_active(config, now, (lingers or scan.taken > 0) and scan.taken < count and not scan.left_own, scope)
  local wake_at = (scan.left_own or scan.more) and need_wake(config, now, now, WAKE_HORIZON_MAX_MS, claim_id, true, scope)
    or nil
  if scan.taken == 0 then return claim_tail({}, next_due_of(config, now), scan.solo_waiting, wake_at) end
  return claim_tail(scan.result, nil, scan.solo_waiting, wake_at)
end)
