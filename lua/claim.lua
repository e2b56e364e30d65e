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
          redis.call('ZADD', K.groupwait, opens_at, '@' .. task_type)
          note_due(config, opens_at)
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
      redis.call('ZADD', K.groupwait, opens_at, '@' .. task_type)
      note_due(config, opens_at)
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
  local result, taken = {}, 0
  -- Rounds: a claim that took a group's head may find the group's next task made head after it;
  -- when the ready set ran out before the batch was full, another round takes those. Lanes take
  -- turns: each round gives a group one task at most.
  for _ = 1, count do
    local before, exhausted = turns.used, false
    -- When some tasks may be skipped (a paused type, a lease longer than the time left), pages grow
    -- from a few times the batch, so a claim reads past what it skips without reading 1000 heads
    -- every time.
    local want = count - taken
    local page = all_fit and want or math.min(CLAIM_SCAN_MAX, math.max(4 * want, 64))

    -- The writes are collected in the lists apply() runs; the common task (READY, never claimed, so
    -- no state yet) is leased inline, without a table of its own.
    local writes, grouped = new_writes(), {} -- grouped: the leased tasks of groups, id and lane
    local states, leased, popped = writes.fields, {}, {} -- popped: the ids leaving READY, leased or quarantined
    writes.zrem[K.ready] = popped
    local prefix = true -- every head so far left READY: they go with one ZREMRANGEBYRANK, not by id
    local offset, stop = 0, false
    while not stop and offset < CLAIM_SCAN_MAX do
      local heads = redis.call('ZRANGE', K.ready, offset, offset + page - 1, 'WITHSCORES')
      if #heads == 0 then exhausted = true; break end
      offset = offset + #heads / 2
      local fields = {}
      for i = 1, #heads, 2 do
        fields[i] = heads[i] .. ':s'
        fields[i + 1] = heads[i]
      end
      local values = redis.call('HMGET', K.task, unpack(fields))
      for i = 1, #heads, 2 do
        local id, state_value, body, rank = heads[i], values[i], values[i + 1], heads[i + 1]
        local enqueued, task_type, group
        if not state_value and body then enqueued, task_type, group = string.match(body, FRESH_BODY_PATTERN) end
        if task_type and (#enqueued < 15 or tonumber(enqueued) <= TIME_MAX_MS) and #rank <= 16 and
          string.find(rank, '^%d+$') then
          local chosen = policy(task_type)
          if chosen.lease <= max_lease then
            states[#states + 1] = id .. ':s'
            states[#states + 1] = 'L|1|1|' .. chosen.max .. '|' .. chosen.deadline .. '||' .. rank .. '|' .. task_type ..
              '|' .. group .. '|' .. claim_id .. '|'
            leased[#leased + 1] = chosen.deadline
            leased[#leased + 1] = id
            popped[#popped + 1] = id
            local n = #result
            result[n + 1], result[n + 2], result[n + 3], result[n + 4], result[n + 5] = id, body, '1', rank .. '.1', chosen.deadline
            taken = taken + 1
            if chosen.rated then counted(task_type) end
            if group ~= '' then grouped[#grouped + 1] = { id, lane_of(task_type, group) } end
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
            local solo = state.flags == 's'
            if solo and taken > 0 then stop = true; break end
            local chosen = policy(state.type)
            if chosen.lease <= max_lease then
              state.letter, state.attempts, state.gen = 'L', plus(state.attempts, 1), plus(state.gen, 1)
              state.max, state.at, state.flags, state.claim = chosen.max, chosen.deadline, '', claim_id
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
              if state.group ~= '' then grouped[#grouped + 1] = { id, lane_of(state.type, state.group) } end
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
      if #heads < 2 * page then exhausted = true; break end
      if all_fit then page = count - taken else page = math.min(2 * page, CLAIM_SCAN_MAX - offset) end
      if page <= 0 then break end
    end
    if #leased > 0 then writes.zadd[K.leased] = leased end
    writes.zrem[K.ready] = nil
    apply(writes)
    if #popped > 0 then
      if prefix then redis.call('ZREMRANGEBYRANK', K.ready, 0, #popped - 1) else redis.call('ZREM', K.ready, unpack(popped)) end
    end
    -- Each group whose head was taken: one more task leased, one more claim in its rate window,
    -- and its next task becomes its head if its concurrency and rate allow.
    for _, item in ipairs(grouped) do
      local id, lane = item[1], item[2]
      local record = lane_get(lane)
      record.active = record.active + 1
      if record.head == id then record.head, record.head_rank = '', '' end
      local rules = group_policy(config, lane_type(lane))
      rate_count(lane, record, rules.rate_max, rules.rate_ms, now)
      lane_touch(lane, record)
      lane_fill(lane, config, now)
    end
    if stop or not exhausted or ordered or turns.used == before then break end
  end
  lanes_flush(now)
  if taken == 0 then
    local due = next_due_of(config, now)
    return due and { fmt(due) } or {}
  end
  return result
end)
