-- enqueue: add a batch of tasks; idempotent by id. A body is written once here and never rewritten.
--
-- KEYS the queue's keys (see _lib.lua): task, config, ready, scheduled, seq are used
-- ARGV[1] now              ms since epoch
-- ARGV[2..] per task, 4 each: id, priority (integer -1000..1000, lower runs sooner), runAtMs (ms
--          since epoch; <= now means ready now), body "1|<enqueuedAtMs>|<type>|<group>|<payload>"
--          (the library builds it; type 1-64 and group 0-128 characters of A-Z a-z 0-9 _ . -)
-- Reads config: maxPayloadBytes (the payload part of a body is capped by it), nextDue.
-- Returns: per task, 2 each: status, state
--   status 0 enqueued  (state "R" ready or "S" scheduled)
--   status 5 duplicate (the id is already known; state is its current state, "C" if quarantined;
--            nothing changed)
-- Errors: LEASEQ_BAD_ARGUMENT when any argument is malformed, LEASEQ_FORMAT when the queue is in
--   another storage format; nothing is written then.
return guard('enqueue', function()
  local now = time_arg('now', ARGV[1])
  local n = groups(2, 4, BATCH_MAX)
  local config = read_config_fields({ 'maxPayloadBytes', 'nextDue' })
  local max_payload = config_int(config, 'maxPayloadBytes', DEFAULT_MAX_PAYLOAD_BYTES)

  local ids, tasks = {}, {}
  for i = 1, n do
    local base = 2 + (i - 1) * 4
    local label = 'task ' .. i
    local id = name_arg(label .. ' id', ARGV[base], ID_MAX_BYTES)
    local body = ARGV[base + 3]
    local info = parse_body(body)
    if not info then bad(label .. ' body must be "1|<enqueuedAtMs>|<type>|<group>|<payload>"') end
    name_arg(label .. ' type', info.type, TYPE_MAX_BYTES)
    name_arg(label .. ' group', info.group, GROUP_MAX_BYTES, true)
    local payload_bytes = #body - info.payload_at + 1
    if payload_bytes > max_payload then
      bad(label .. ' payload is ' .. payload_bytes .. ' bytes; the cap is ' .. max_payload)
    end
    ids[i] = id
    tasks[i] = {
      priority = int_arg(label .. ' priority', ARGV[base + 1], PRIORITY_MIN, PRIORITY_MAX),
      run_at = time_arg(label .. ' runAtMs', ARGV[base + 2]),
      body = body,
      info = info,
    }
  end

  -- What exists already: a state (any state), or a body alone (READY, never claimed).
  local fields = {}
  for _, id in ipairs(ids) do
    fields[#fields + 1] = id .. ':s'
    fields[#fields + 1] = id
    fields[#fields + 1] = id .. ':x'
  end
  local existing = redis.call('HMGET', K.task, unpack(fields))
  local seen, fresh, known = {}, 0, {}
  for i, id in ipairs(ids) do
    local state, body, reason = existing[3 * i - 2], existing[3 * i - 1], existing[3 * i]
    if reason then known[i] = 'C'
    elseif state then known[i] = string.sub(state, 1, 1)
    elseif body then known[i] = string.byte(body, 1) == 49 and 'R' or string.sub(body, 1, 1) end
    if not known[i] and not seen[id] then
      seen[id] = i
      fresh = fresh + 1
    end
  end

  local result = {}
  local last_seq = fresh > 0 and redis.call('INCRBY', K.seq, fresh) or 0
  local seq = last_seq - fresh
  local writes = new_writes()
  local earliest = nil
  for i, id in ipairs(ids) do
    local t = tasks[i]
    if seen[id] == i then
      seq = seq + 1
      local rank = (t.priority - PRIORITY_MIN) * RANK_SEQ_SPAN + seq
      put(writes, id, t.body)
      if t.run_at > now then
        put_state(writes, id, {
          letter = 'S', attempts = 0, gen = 0, max = 0, at = t.run_at, flags = '', rank = rank,
          type = t.info.type, group = t.info.group, claim = '', error = '',
        })
        zadd(writes, K.scheduled, t.run_at, id)
        earliest = math.min(earliest or t.run_at, t.run_at)
        known[i] = 'S'
      else
        zadd(writes, K.ready, rank, id)
        known[i] = 'R'
      end
      result[#result + 1] = 0
    else
      if not known[i] then known[i] = known[seen[id]] end -- the same id twice in one call
      result[#result + 1] = 5
    end
    result[#result + 1] = known[i]
  end
  apply(writes)
  if config.v == nil then redis.call('HSET', K.config, 'v', FORMAT_VERSION) end
  if earliest then note_due(config, earliest) end
  return result
end)
