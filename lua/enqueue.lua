-- enqueue: add a batch of tasks; idempotent by id.
--
-- KEYS[1] task hash        id -> task record (see _lib.lua)
-- KEYS[2] ready zset       id scored by rank
-- KEYS[3] scheduled zset   id scored by due time (ms)
-- KEYS[4] seq string       arrival counter of the queue
-- ARGV[1] now              ms since epoch
-- ARGV[2] maxPayloadBytes  payload size cap, bytes
-- ARGV[3..] per task, 5 each: id, type, priority (integer -1000..1000, lower runs sooner),
--          runAtMs (ms since epoch; <= now means ready now), payload (JSON text)
-- Returns: per task, 2 each: status, state
--   status 0 enqueued  (state "R" ready or "S" scheduled)
--   status 5 duplicate (the id is already known; state is its current state, nothing changed)
-- Errors: LEASEQ_BAD_ARGUMENT when any argument is malformed; nothing is written then.
return guard('enqueue', function()
  local now = int_arg('now', ARGV[1], 0, 2 ^ 52)
  local max_payload = int_arg('maxPayloadBytes', ARGV[2], 1, 512 * 1024 * 1024)
  local n = groups(3, 5, 1000)

  local ids, tasks = {}, {}
  for i = 1, n do
    local base = 3 + (i - 1) * 5
    local label = 'task ' .. i
    local id = name_arg(label .. ' id', ARGV[base], ID_MAX_BYTES)
    local payload = ARGV[base + 4]
    if #payload > max_payload then
      bad(label .. ' payload is ' .. #payload .. ' bytes; the cap is ' .. max_payload)
    end
    ids[i] = id
    tasks[i] = {
      type = name_arg(label .. ' type', ARGV[base + 1], TYPE_MAX_BYTES),
      priority = int_arg(label .. ' priority', ARGV[base + 2], PRIORITY_MIN, PRIORITY_MAX),
      run_at = int_arg(label .. ' runAtMs', ARGV[base + 3], 0, 2 ^ 52),
      payload = payload,
    }
  end

  local existing = load_tasks(KEYS[1], ids)
  local seen, fresh = {}, 0
  for i, id in ipairs(ids) do
    if existing[id] == nil and not seen[id] then
      seen[id] = i
      fresh = fresh + 1
    end
  end

  local result = {}
  local last_seq = fresh > 0 and redis.call('INCRBY', KEYS[4], fresh) or 0
  local seq = last_seq - fresh
  local writes = new_writes()
  for i, id in ipairs(ids) do
    if seen[id] == i then
      seq = seq + 1
      local t = tasks[i]
      local task = {
        type = t.type, rank = (t.priority - PRIORITY_MIN) * RANK_SEQ_SPAN + seq, attempts = 0,
        claims = 0, max_attempts = 0, error = '', payload = t.payload,
      }
      if t.run_at > now then
        task.state, task.at = 'S', t.run_at
        zadd(writes, KEYS[3], t.run_at, id)
      else
        task.state, task.at = 'R', now
        zadd(writes, KEYS[2], task.rank, id)
      end
      write_task(writes, id, task)
      result[#result + 1] = 0
      result[#result + 1] = task.state
    else
      result[#result + 1] = 5
      result[#result + 1] = existing[id] and existing[id].state or (tasks[seen[id]].run_at > now and 'S' or 'R')
    end
  end
  apply(writes, KEYS[1])
  return result
end)
