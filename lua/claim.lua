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
-- Reads config: the type policies (p:<type>, d), ordered, hold, nextDue.
-- Returns: per leased task, 6 each, in rank order:
--   id, body (as enqueued: "1|<enqueuedAtMs>|<type>|<group>|<payload>"), attempt (1 = first),
--   lease token, rank, lease deadline (ms)
--   An empty array when nothing is ready (or the ordered gate is closed, or nothing fits).
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

  -- Each type's lease, attempts and deadline, worked out once per call.
  local policies = {}
  local function policy(task_type)
    local known = policies[task_type]
    if known then return known end
    local lease, max = policy_of(config, task_type)
    known = { lease = lease, max = tostring(max), deadline = fmt(now + lease) }
    policies[task_type] = known
    return known
  end
  local leases = { [policy('').lease] = true } -- the default policy's, then each declared type's
  for field in pairs(config) do
    if string.sub(field, 1, 2) == 'p:' then leases[policy(string.sub(field, 3)).lease] = true end
  end

  local function reply(batch)
    local result = {}
    for _, item in ipairs(batch) do
      local state = item.state
      result[#result + 1] = item.id
      result[#result + 1] = item.body
      result[#result + 1] = state.attempts
      result[#result + 1] = token_of(state)
      result[#result + 1] = state.rank
      result[#result + 1] = state.at
    end
    return result
  end

  if is_repeat then
    -- The first run leased its tasks at now + their lease exactly: look there for this claim id.
    local candidates = {}
    for lease in pairs(leases) do
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
      return reply(batch)
    end
  end

  promote_due(config, now, now_text, promote_limit)
  if config.ordered == '1' then
    if redis.call('ZCARD', K.leased) > 0 then return {} end
    local hold = tonumber(config.hold)
    if hold and hold > now then return {} end
  end

  -- Every lease fits the time left: the first `count` ready tasks are the batch. Otherwise read
  -- further (bounded) for tasks that fit.
  local all_fit = true
  for lease in pairs(leases) do
    if lease > max_lease then all_fit = false end
  end
  local heads = redis.call('ZRANGE', K.ready, 0, (all_fit and count or CLAIM_SCAN_MAX) - 1, 'WITHSCORES')
  if #heads == 0 then return {} end
  local ids = {}
  for i = 1, #heads, 2 do ids[#ids + 1] = heads[i] end
  local tasks = load(ids, true)

  local writes, batch = new_writes(), {}
  for i, id in ipairs(ids) do
    local task = tasks[id]
    local info = task.body_info
    if task.problem or not info then
      quarantine(writes, id, K.ready, task.problem or 'a READY task without its body', now)
    else
      local state = task.state or new_state('R', now_text, int_text(heads[2 * i], tonumber(heads[2 * i])), info.type, info.group)
      local solo = state.flags == 's'
      if solo and #batch > 0 then break end
      local chosen = policy(state.type)
      if chosen.lease <= max_lease then
        state.letter, state.attempts, state.gen = 'L', plus(state.attempts, 1), plus(state.gen, 1)
        state.max, state.at, state.flags, state.claim = chosen.max, chosen.deadline, '', claim_id
        put_state(writes, id, state)
        if task.upgraded then put(writes, id, task.body) end
        zadd(writes, K.leased, chosen.deadline, id)
        zrem(writes, K.ready, id)
        batch[#batch + 1] = { id = id, state = state, body = task.body }
        if solo or #batch == count then break end
      elseif config.ordered == '1' then
        break
      end
    end
  end
  apply(writes)
  return reply(batch)
end)
