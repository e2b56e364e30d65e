-- _lib.lua: helpers shared by every leaseq script. shared/scripts.ts prepends this file to each
-- operation script before it is sent, so each EVAL body is self-contained.
--
-- The task record. Every task is one field of the queue's task hash (KEYS "task"), its value a
-- string "state|type|rank|attempts|claims|maxAttempts|atMs|errorBytes|" followed by the last error
-- (errorBytes long) and then the payload (the rest). One field per task keeps a batch of N tasks to
-- one HMGET and one HSET, and costs less memory than several hashes.
--   state        R ready, S scheduled, L leased, D done, F failed
--   rank         (priority + 1000) * 2^42 + arrival sequence: an exact integer below 2^53
--   attempts     claims that counted (release gives one back)
--   claims       the lease generation: +1 at every claim, and at every reclaim and release, which
--                revoke the lease; never decreases. The lease token is "<seq>.<claims>"
--   maxAttempts  the type's policy, recorded at claim (0 before the first claim)
--   atMs         R: ready since, S: due at, L: lease deadline, D/F: finished at (ms since epoch)

local RANK_SEQ_SPAN = 4398046511104 -- 2^42 arrival sequence numbers per priority level
local PRIORITY_MIN, PRIORITY_MAX = -1000, 1000
local ID_MAX_BYTES, TYPE_MAX_BYTES = 128, 64
local NAME_PATTERN = '^[%w_%.%-]+$'

-- Raised by the validators; guard() turns it into a LEASEQ_BAD_ARGUMENT error reply.
local function bad(message)
  error({ leaseq = message })
end

-- Runs an operation; a validation failure becomes an error reply, and an error Redis raised keeps
-- its code (WRONGTYPE, OOM, ...) instead of being wrapped as "ERR user_script:N: ...".
local function guard(operation, body)
  local ok, result = pcall(body)
  if ok then return result end
  if type(result) == 'table' and result.leaseq then
    return redis.error_reply('LEASEQ_BAD_ARGUMENT ' .. operation .. ': ' .. result.leaseq)
  end
  if type(result) == 'string' and string.find(result, '^%u[%u_]+ ') then
    return redis.error_reply(result)
  end
  error(result, 0)
end

local function fmt(n)
  return string.format('%.0f', n)
end

-- An integer within [low, high]; names the argument and echoes the value when it is not.
local function int_arg(name, value, low, high)
  local n = tonumber(value)
  if n == nil or n ~= n or n ~= math.floor(n) or n < low or n > high then
    bad(name .. ' must be an integer from ' .. fmt(low) .. ' to ' .. fmt(high) .. ', got "' ..
      string.sub(tostring(value), 1, 40) .. '"')
  end
  return n
end

local function name_arg(name, value, max_bytes)
  if type(value) ~= 'string' or #value < 1 or #value > max_bytes or not string.find(value, NAME_PATTERN) then
    bad(name .. ' must be 1-' .. max_bytes .. ' characters of A-Z a-z 0-9 _ . -')
  end
  return value
end

local function count_arg(name, value, max)
  return int_arg(name, value, 1, max)
end

-- Number of repeated groups after `first` - 1 fixed arguments, each `size` long: at least `min`
-- (default 1), at most `max`.
local function groups(first, size, max, min)
  local rest = #ARGV - first + 1
  if rest < size * (min or 1) or rest % size ~= 0 then
    bad('expected groups of ' .. size .. ' arguments from ARGV[' .. first .. '], got ' .. rest .. ' arguments')
  end
  local n = rest / size
  if n > max then
    bad('at most ' .. max .. ' items per call, got ' .. n)
  end
  return n
end

-- Reads a record. The payload is not copied out until payload_of() asks for it (an ack drops it),
-- and the rank keeps the text it was stored as, so writing it back needs no formatting.
local function parse(record)
  local state, task_type, rank, attempts, claims, max_attempts, at, error_bytes, body =
    string.match(record, '^(%u)|([^|]*)|(%d+)|(%d+)|(%d+)|(%d+)|(%-?%d+)|(%d+)|()')
  local payload_at = body + error_bytes
  return {
    state = state,
    type = task_type,
    rank_text = rank,
    rank = tonumber(rank),
    attempts = tonumber(attempts),
    claims = tonumber(claims),
    max_attempts = tonumber(max_attempts),
    at = tonumber(at),
    error = string.sub(record, body, payload_at - 1),
    record = record,
    payload_at = payload_at,
  }
end

local function payload_of(task)
  if task.payload == nil then task.payload = string.sub(task.record, task.payload_at) end
  return task.payload
end

-- Numbers below 10^14 (times in ms, counts) print exactly with `..`; the rank (up to 2^53) does not,
-- so it is formatted once, when the task is created.
local function serialize(task)
  return task.state .. '|' .. task.type .. '|' .. (task.rank_text or fmt(task.rank)) .. '|' .. task.attempts ..
    '|' .. task.claims .. '|' .. task.max_attempts .. '|' .. task.at .. '|' .. #task.error .. '|' ..
    task.error .. payload_of(task)
end

local function token_of(task)
  return (task.rank % RANK_SEQ_SPAN) .. '.' .. task.claims
end

-- Loads the records of `ids` with one HMGET; missing ids map to nil.
local function load_tasks(task_key, ids)
  local tasks = {}
  if #ids == 0 then return tasks end
  local records = redis.call('HMGET', task_key, unpack(ids))
  for i, id in ipairs(ids) do
    if records[i] then tasks[id] = parse(records[i]) end
  end
  return tasks
end

-- Collects writes so a batch ends with one variadic command per key.
local function new_writes()
  return { records = {}, zadd = {}, zrem = {} }
end

local function write_task(writes, id, task)
  local records = writes.records
  records[#records + 1] = id
  records[#records + 1] = serialize(task)
end

-- Scores go as Lua numbers: Redis prints them with %.17g, exact for integers below 2^53.
local function zadd(writes, key, score, id)
  local list = writes.zadd[key]
  if not list then list = {}; writes.zadd[key] = list end
  list[#list + 1] = score
  list[#list + 1] = id
end

local function zrem(writes, key, id)
  local list = writes.zrem[key]
  if not list then list = {}; writes.zrem[key] = list end
  list[#list + 1] = id
end

local function apply(writes, task_key)
  for key, ids in pairs(writes.zrem) do redis.call('ZREM', key, unpack(ids)) end
  for key, pairs_list in pairs(writes.zadd) do redis.call('ZADD', key, unpack(pairs_list)) end
  if #writes.records > 0 then redis.call('HSET', task_key, unpack(writes.records)) end
end

-- Moves up to `limit` due SCHEDULED tasks to READY with the rank they were given at enqueue.
local function promote_due(task_key, scheduled_key, ready_key, now, limit)
  local due = redis.call('ZRANGEBYSCORE', scheduled_key, '-inf', fmt(now), 'LIMIT', 0, limit)
  if #due == 0 then return 0 end
  local tasks = load_tasks(task_key, due)
  local writes = new_writes()
  for _, id in ipairs(due) do
    zrem(writes, scheduled_key, id)
    local task = tasks[id]
    if task then
      task.state = 'R'
      task.at = now
      zadd(writes, ready_key, task.rank, id)
      write_task(writes, id, task)
    end
  end
  apply(writes, task_key)
  return #due
end

-- Returns up to `limit` leases that expired before now - skew: to READY with their rank, or to
-- FAILED ("lease expired") when their attempts are used up. Atomic, so concurrent reclaimers each
-- see only what the others left. A task back in READY is marked solo (keys.solo): its lease may have
-- expired because it crashed its worker, so the next claim hands it out alone, never with batch-mates.
local function reclaim_expired(keys, now, skew, limit)
  local expired = redis.call('ZRANGEBYSCORE', keys.leased, '-inf', '(' .. fmt(now - skew), 'LIMIT', 0, limit)
  local result = {}
  if #expired == 0 then return result end
  local tasks = load_tasks(keys.task, expired)
  local writes = new_writes()
  local solo = {}
  for _, id in ipairs(expired) do
    zrem(writes, keys.leased, id)
    local task = tasks[id]
    if task then
      task.claims = task.claims + 1 -- revokes the token: a late settle of this lease is stale
      if task.attempts >= task.max_attempts then
        task.state = 'F'
        task.error = 'lease expired after attempt ' .. task.attempts .. ' of ' .. task.max_attempts
        zadd(writes, keys.failed, now, id)
      else
        task.state = 'R'
        zadd(writes, keys.ready, task.rank, id)
        solo[#solo + 1] = id
      end
      task.at = now
      write_task(writes, id, task)
      result[#result + 1] = id
      result[#result + 1] = task.state
    end
  end
  apply(writes, keys.task)
  if #solo > 0 then redis.call('SADD', keys.solo, unpack(solo)) end
  return result
end

-- Deletes up to `limit` members of a DONE or FAILED set finished before `cutoff`, with their records.
local function trim_before(task_key, set_key, cutoff, limit)
  local old = redis.call('ZRANGEBYSCORE', set_key, '-inf', '(' .. fmt(cutoff), 'LIMIT', 0, limit)
  if #old == 0 then return 0 end
  redis.call('ZREM', set_key, unpack(old))
  redis.call('HDEL', task_key, unpack(old))
  return #old
end

-- { ready, scheduled, leased, done, failed, oldestReadyAgeMs, mostOverdueLeaseMs, dueScheduled }.
-- `counts` may carry counts the caller already knows, to save their ZCARD.
local function queue_stats(keys, now, counts)
  counts = counts or {}
  for _, name in ipairs({ 'ready', 'scheduled', 'leased', 'done', 'failed' }) do
    if counts[name] == nil then counts[name] = redis.call('ZCARD', keys[name]) end
  end
  local oldest_ready_age, most_overdue, due_scheduled = 0, 0, 0
  if counts.ready > 0 then
    local head = redis.call('ZRANGE', keys.ready, 0, 0)[1]
    local record = redis.call('HGET', keys.task, head)
    if record then oldest_ready_age = math.max(0, now - parse(record).at) end
  end
  if counts.leased > 0 then
    local earliest = tonumber(redis.call('ZRANGE', keys.leased, 0, 0, 'WITHSCORES')[2])
    most_overdue = math.max(0, now - earliest)
  end
  if counts.scheduled > 0 then
    due_scheduled = redis.call('ZCOUNT', keys.scheduled, '-inf', fmt(now))
  end
  return {
    counts.ready, counts.scheduled, counts.leased, counts.done, counts.failed,
    oldest_ready_age, most_overdue, due_scheduled,
  }
end
