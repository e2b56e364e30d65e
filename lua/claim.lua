-- claim: promote due scheduled tasks, then lease up to `count` ready tasks in rank order. Retry-safe:
-- a repeat with the same claim id (a store's retry after a lost reply) returns the batch the first
-- run leased, with the same tokens, and charges no second attempt.
--
-- KEYS the queue's keys (see _lib.lua): task, config, ready, scheduled, leased, corrupt are used
-- ARGV[1] now            ms since epoch
-- ARGV[2] count          1..1000, the most tasks to lease
-- ARGV[3] maxLeaseMs     1..86400000: lease only tasks whose type's lease is at most this (the time
--                        the caller has left); longer ones stay READY. An ordered queue stops at the
--                        first such task.
-- ARGV[4] claimId        1-64 characters of A-Z a-z 0-9 _ . -, new for every claim
-- ARGV[5] repeat         1 when this may repeat an earlier call of the same claim id (a retry), else 0
-- ARGV[6] promoteLimit   1..10000, the most due scheduled tasks to promote first
-- Reads config: the type policies (p:<type>, d, leases), ordered, hold, nextDue, paused (a paused
--   queue leases nothing), pauses (paused types stay READY); keeps `wake` (a worker is draining:
--   mark_active).
-- Returns: per leased task, 5 each, in rank order:
--   id, body (as enqueued: "1|<enqueuedAtMs>|<type>|<group>|<payload>"), attempt (1 = first),
--   lease token ("<rank>.<generation>": the rank is its first part), lease deadline (ms)
--   When nothing is leased, one value: when scheduled work next falls due (or an ordered queue's
--   hold ends), for a worker deciding whether to wait for it; an empty array when nothing is due,
--   when an ordered queue is busy with a leased task, or when the queue is paused.
--   A task a reclaim returned comes alone, in a batch of its own. A record that cannot be read is
--   moved to the corrupt set with its reason, and the claim goes on without it.
-- Errors: LEASEQ_BAD_ARGUMENT when any argument is malformed, LEASEQ_FORMAT when the queue is in
--   another storage format; nothing is written then.
return guard('claim', function()
  local now, now_text = time_arg('now', ARGV[1])
  local count = int_arg('count', ARGV[2], 1, CLAIM_MAX)
  local max_lease = int_arg('maxLeaseMs', ARGV[3], 1, LEASE_MAX_MS)
  local claim_id = name_arg('claimId', ARGV[4], 64)
  local is_repeat = int_arg('repeat', ARGV[5], 0, 1) == 1
  local promote_limit = int_arg('promoteLimit', ARGV[6], 1, MAINTENANCE_MAX)
  local config = read_config()
  local ordered, paused = config.ordered == '1', config.paused == '1'
  if not paused then mark_active(config, now) end

  -- Each type's lease, attempts and deadline, worked out at its first task. A paused type's tasks
  -- fit no time left: they stay READY, as a task too long for the time left does.
  local policies, paused_types = {}, nil
  if config.pauses then
    paused_types = {}
    for name in string.gmatch(config.pauses, '[^,]+') do paused_types[name] = true end
  end
  -- A type with a rate across its groups (g:<type> or gd): its tasks fit no time left once its
  -- window is used up, as a paused type's do.
  local type_rates = false
  for field, value in pairs(config) do
    if (field == 'gd' or string.sub(field, 1, 2) == 'g:') and not string.find(value, ',0,%d+$') then type_rates = true end
  end
  local function policy(task_type)
    local known = policies[task_type]
    if known then return known end
    if paused_types and paused_types[task_type] then
      known = { lease = math.huge, max = '0', deadline = '' }
    else
      local lease, max = policy_of(config, task_type)
      known = { lease = lease, max = tostring(max), deadline = fmt(now + lease) }
      local rules = type_rates and group_policy(config, task_type)
      if rules and rules.type_max > 0 then
        known.rated = true
        local open, opens_at = rate_open(lane_get('@' .. task_type), rules.type_max, rules.type_ms, now)
        if not open then
          known.lease = math.huge
          lane_wait('@' .. task_type, opens_at, config)
        end
      end
    end
    policies[task_type] = known
    return known
  end
  -- A task of a rated type was leased: its window counts it, and once full its type waits.
  local function counted(task_type)
    local name, rules = '@' .. task_type, group_policy(config, task_type)
    local record = lane_get(name)
    rate_count(name, record, rules.type_max, rules.type_ms, now)
    local open, opens_at = rate_open(record, rules.type_max, rules.type_ms, now)
    if not open then
      policies[task_type].lease = math.huge
      lane_wait(name, opens_at, config)
    end
  end
  local leases = lease_lengths(config)

  if is_repeat then
    -- The first run leased its tasks at now + their lease exactly: look there for this claim id.
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
    if #batch > 0 then
      table.sort(batch, function(a, b) return tonumber(a.state.rank) < tonumber(b.state.rank) end)
      local result = {}
      for _, item in ipairs(batch) do
        local state = item.state
        for _, value in ipairs({ item.id, item.body, state.attempts, token_of(state), state.at }) do
          result[#result + 1] = value
        end
      end
      return result
    end
  end

  if paused then return {} end
  promote_due(config, now, now_text, promote_limit)
  if ordered then
    if redis.call('ZCARD', K.leased) > 0 then lanes_flush(now); return {} end
    local hold = tonumber(config.hold)
    if hold and hold > now then lanes_flush(now); return { config.hold } end
  end

  -- Every lease fits the time left: the first `count` ready tasks are the batch. Otherwise read
  -- further (bounded) for tasks that fit. A head that was set aside (its record unreadable) leaves a
  -- gap the next page fills, so the batch is as full as the ready set allows.
  local all_fit = leases[#leases] <= max_lease and not paused_types and not type_rates
  -- When some tasks may be skipped (a paused type, a lease longer than the time left), pages grow
  -- from a few times the batch, so a claim reads past what it skips without reading 1000 heads
  -- every time.
  local page = all_fit and count or math.min(CLAIM_SCAN_MAX, math.max(4 * count, 64))

  -- The writes are collected in the lists apply() runs; the common task (READY, never claimed, so
  -- no state yet) is leased inline, without a table of its own.
  local writes, result, taken = new_writes(), {}, 0
  local states, leased, popped = writes.fields, {}, {} -- popped: the ids leaving READY, leased or quarantined
  writes.zrem[K.ready] = popped
  local prefix = true -- every head so far left READY: they go with one ZREMRANGEBYRANK, not by id
  local unpark = {} -- lanes that gave a task and have parked ones: they may run the next
  local holding = {} -- the states of the lanes' holders from earlier claims, by id (lanes_verify)
  -- The leases of this claim without flags, by id: their state's place in `states`. Kept only
  -- when a full lane asks (gate), from the states written since it last asked.
  local leased_here, indexed = {}, 0
  local function leases_here()
    for at = indexed + 2, #states, 2 do
      if string.find(states[at], '^L|%d+|%d+|%d+|%d+||') then
        local field = states[at - 1]
        leased_here[string.sub(field, 1, #field - 2)] = at
      end
    end
    indexed = #states
    return leased_here
  end

  -- Whether a task of a lane must be parked: parked tasks go first (it waits behind them unless it
  -- was let out, "u"), at most `concurrency` leased, at most `rate` claims per window. A lane full
  -- of leases flags them "p", so their settle lets this one out.
  local function gate(lane, record, rules, out)
    if record.parked > 0 and not out then return true end
    -- The common lane, nothing held and no rate, is decided without counting holders or windows.
    if record.held == '' and rules.rate_max == 0 then return false end
    if rules.conc > 0 and holder_count(record) >= rules.conc then
      local here_now = leases_here()
      for _, holder in ipairs(holder_ids(record)) do
        local text, here = holding[holder], here_now[holder]
        if here then
          -- Its state has no flags yet: the first "||" of its text is where they go.
          states[here] = string.gsub(states[here], '||', '|p|', 1)
          leased_here[holder] = nil
        elseif text and string.sub(text, 1, 1) == 'L' then
          local state = parse_state(text)
          if state and not string.find(state.flags, 'p', 1, true) then
            state.flags = state.flags .. 'p'
            put_state(writes, holder, state)
          end
          holding[holder] = nil
        end
      end
      return true
    end
    local open, opens_at = rate_open(record, rules.rate_max, rules.rate_ms, now)
    if open then return false end
    lane_wait(lane, opens_at, config)
    return true
  end
  -- A task of a lane is leased: it holds a slot (when the lane has a concurrency), one less READY,
  -- one more claim in its window. Returns its lease's flags: "p" when its settle must let the
  -- lane's parked tasks out (an ordered lane, or one with parked tasks; gate flags the others when
  -- it parks a task behind them).
  local function take_lane(lane, record, rules, out, id)
    record.ready = record.ready - 1
    if out then record.heads = record.heads - 1 end
    if rules.rate_max > 0 then rate_count(lane, record, rules.rate_max, rules.rate_ms, now) end
    lane_touch(lane, record)
    if record.parked > 0 then unpark[#unpark + 1] = lane end
    if rules.conc == 0 then return '' end
    lane_add_holder(lane, record, id)
    if rules.ordered or record.parked > 0 then return 'p' end
    return ''
  end
  -- Leases a READY task never claimed (no state, or the state enqueue gave a task of a group) inline,
  -- without a table: its state text, its lease, its place in the result.
  local function lease_fresh(id, body, rank, type_group, flags, chosen, task_type)
    states[#states + 1] = id .. ':s'
    states[#states + 1] = 'L|1|1|' .. chosen.max .. '|' .. chosen.deadline .. '|' .. flags .. '|' .. rank .. '|' ..
      type_group .. '|' .. claim_id .. '|'
    leased[#leased + 1] = chosen.deadline
    leased[#leased + 1] = id
    popped[#popped + 1] = id
    local n = #result
    result[n + 1], result[n + 2], result[n + 3], result[n + 4], result[n + 5] = id, body, '1', rank .. '.1', chosen.deadline
    taken = taken + 1
    if chosen.rated then counted(task_type) end
  end
  local offset, stop = 0, false
  while not stop and offset < CLAIM_SCAN_MAX do
    local heads = redis.call('ZRANGE', K.ready, offset, offset + page - 1, 'WITHSCORES')
    if #heads == 0 then break end
    offset = offset + #heads / 2
    local fields = {}
    for i = 1, #heads, 2 do
      fields[i] = heads[i] .. ':s'
      fields[i + 1] = heads[i]
    end
    local values = redis.call('HMGET', K.task, unpack(fields))
    -- The fresh tasks of the page (READY, never claimed), read with one match each: a task with no
    -- state from its body (ungrouped, or of a group and enqueued READY: its rank is its score), one
    -- of a group let out of parking ("u") from the state it was given. Their lanes, and those of the
    -- other tasks of groups, are loaded with one HMGET. Indexed by the head's place in the page (1,
    -- 2, ...), so the lists stay arrays; f_lane is false for an ungrouped task.
    local names, f_type, f_lane, f_rank, f_out, f_state = {}, {}, {}, {}, {}, {}
    for i = 1, #heads, 2 do
      local value, body, at = values[i], values[i + 1], (i + 1) / 2
      if not value then
        local enqueued, task_type, group = nil, nil, nil
        if body then enqueued, task_type, group = string.match(body, FRESH_BODY_PATTERN) end
        local rank = heads[i + 1]
        if task_type and (#enqueued < 15 or tonumber(enqueued) <= TIME_MAX_MS) and #rank <= 16 and
          string.find(rank, '^%d+$') then
          local lane = group ~= '' and lane_of(task_type, group)
          f_type[at], f_lane[at], f_rank[at], f_out[at] = task_type, lane, rank, false
          if lane then names[#names + 1] = lane end
        end
      else
        local flags, grank, lane, task_type = string.match(value, FRESH_GROUPED_PATTERN)
        if flags and body and string.byte(body, 1) == 49 and #grank <= 16 then
          f_type[at], f_lane[at], f_rank[at], f_out[at], f_state[at] = task_type, lane, grank, flags == 'u', true
        else
          local other_type, group = string.match(value, LANE_OF_STATE_PATTERN)
          lane = other_type and lane_of(other_type, group)
        end
        if lane then names[#names + 1] = lane end
      end
    end
    lanes_load(names)
    for holder, text in pairs(lanes_verify(names)) do holding[holder] = text end
    for i = 1, #heads, 2 do
      local id, state_value, body, rank, at = heads[i], values[i], values[i + 1], heads[i + 1], (i + 1) / 2
      local task_type, lane = f_type[at], f_lane[at]
      if lane then
        -- A fresh task of a group: leased inline, or parked when its lane says so.
        local out, task_rank = f_out[at], f_rank[at]
        local chosen = policy(task_type)
        local record, rules = lanes[lane], group_policy(config, task_type)
        if chosen.lease > max_lease then
          if ordered then stop = true; break end
          prefix = false
        elseif gate(lane, record, rules, out) then
          -- One without a state gets one: READY since its enqueue, its rank its score.
          local state = f_state[at] and parse_state(state_value) or
            new_state('R', string.match(body, FRESH_BODY_PATTERN), task_rank, task_type, string.sub(lane, #task_type + 2))
          lane_park(writes, lane, record, id, state)
          popped[#popped + 1] = id
          unpark[#unpark + 1] = lane -- it may be let out at once if its lane has room
        else
          local flags = take_lane(lane, record, rules, out, id)
          lease_fresh(id, body, task_rank, lane, flags, chosen, task_type)
          if taken == count then stop = true; break end
        end
      elseif task_type then
        local chosen = policy(task_type)
        if chosen.lease <= max_lease then
          lease_fresh(id, body, f_rank[at], task_type .. '|', '', chosen, task_type)
          if taken == count then stop = true; break end
        elseif ordered then
          stop = true
          break
        else
          prefix = false
        end
      else
        local task = read_record(state_value or nil, body or nil)
        local info = task.body_info
        if task.problem or not info then
          quarantine(writes, id, K.ready, task.problem or 'a READY task without its body', now)
        else
          local state = task.state or new_state('R', now_text, int_text(rank, tonumber(rank)), info.type, info.group)
          local solo = string.find(state.flags, 's', 1, true) ~= nil
          local chosen = policy(state.type)
          -- A reclaimed task goes alone: the batch stops before it, unless it stays READY anyway
          -- (a paused type, a lease longer than the time left).
          if solo and taken > 0 and chosen.lease <= max_lease then stop = true; break end
          local lane = state.group ~= '' and lane_of(state.type, state.group)
          local record = lane and lane_get(lane)
          local out = lane and string.find(state.flags, 'u', 1, true) ~= nil
          local rules = lane and group_policy(config, state.type)
          if lane and chosen.lease <= max_lease and gate(lane, record, rules, out) then
            lane_park(writes, lane, record, id, state)
            popped[#popped + 1] = id
            unpark[#unpark + 1] = lane -- it may be let out at once if its lane has room
          elseif chosen.lease <= max_lease then
            local flags = lane and take_lane(lane, record, rules, out, id) or ''
            state.letter, state.attempts, state.gen = 'L', plus(state.attempts, 1), plus(state.gen, 1)
            state.max, state.at, state.flags, state.claim = chosen.max, chosen.deadline, flags, claim_id
            put_state(writes, id, state)
            if task.upgraded then put(writes, id, task.body) end
            leased[#leased + 1] = chosen.deadline
            leased[#leased + 1] = id
            popped[#popped + 1] = id
            local n = #result
            result[n + 1], result[n + 2], result[n + 3], result[n + 4], result[n + 5] =
              id, task.body, state.attempts, token_of(state), state.at
            taken = taken + 1
            if chosen.rated then counted(state.type) end
            if solo or taken == count then stop = true; break end
          elseif ordered then
            stop = true
            break
          else
            prefix = false
          end
        end
      end
    end
    if #heads < 2 * page then break end
    if all_fit then page = count - taken else page = math.min(2 * page, CLAIM_SCAN_MAX - offset) end
    if page <= 0 then break end
  end
  if #leased > 0 then writes.zadd[K.leased] = leased end
  writes.zrem[K.ready] = nil
  apply(writes)
  if #popped > 0 then
    if prefix then redis.call('ZREMRANGEBYRANK', K.ready, 0, #popped - 1) else redis.call('ZREM', K.ready, unpack(popped)) end
  end
  -- A lane that gave a task, or had one parked, lets out its next parked tasks if its concurrency
  -- and rate allow (lane_unpark does nothing for a lane without room).
  for _, lane in ipairs(unpark) do lane_unpark(lane, config, now) end
  lanes_flush(now)
  if taken == 0 then
    local due = next_due_of(config, now)
    return due and { fmt(due) } or {}
  end
  return result
end)
