-- floor: the least Redis work of leaseq's two promises per task, for comparison only (bench/floor.ts).
-- An enqueue that is idempotent by id (a task known already is not written again), and a lease that
-- fences the ack (an ack whose token is not the lease's changes nothing). Nothing else: no argument
-- checks, one priority, no attempts, retries, delays, groups, types, wake-ups or history. Two ways to
-- keep the lease, chosen by ARGV[2]:
--   record  a state field per lease in the task hash, as leaseq keeps it ("<id>:s": "L|<token>|...")
--   score   the lease only as the leased set's score, its token that score: no record at all
--
-- KEYS[1] task hash      id -> payload; with "record", "<id>:s" -> the lease's state
-- KEYS[2] ready zset     ids by arrival
-- KEYS[3] seq string     the arrival counter
-- KEYS[4] leased zset    ids by their lease's end ("score": the end * 4096 + a claim's counter)
-- KEYS[5] done zset      ids acked, by when
-- ARGV[1] operation      enqueue | claim | ack
-- ARGV[2] lease          record | score
-- ARGV[3] now            ms since epoch
-- enqueue: ARGV[4..] id, payload pairs.  Returns per task 0 (enqueued) or 5 (known already).
-- claim:   ARGV[4] count.                Returns per task: id, token, payload.
-- ack:     ARGV[4..] id, token pairs.    Returns per task 0 (acked) or 3 (not its lease).
local op, lease, now = ARGV[1], ARGV[2], tonumber(ARGV[3])
local LEASE_MS = 60000

if op == 'enqueue' then
  local n = (#ARGV - 3) / 2
  local fields = {}
  for i = 1, n do
    local id = ARGV[2 + 2 * i]
    fields[2 * i - 1], fields[2 * i] = id .. ':s', id
  end
  local known = redis.call('HMGET', KEYS[1], unpack(fields))
  local first = redis.call('INCRBY', KEYS[3], n) - n
  local bodies, scores, out = {}, {}, {}
  for i = 1, n do
    local id = ARGV[2 + 2 * i]
    if known[2 * i - 1] or known[2 * i] then
      out[i] = 5
    else
      bodies[#bodies + 1], bodies[#bodies + 2] = id, ARGV[3 + 2 * i]
      scores[#scores + 1], scores[#scores + 2] = first + i, id
      out[i] = 0
    end
  end
  if #bodies > 0 then
    redis.call('HSET', KEYS[1], unpack(bodies))
    redis.call('ZADD', KEYS[2], unpack(scores))
  end
  return out
end

if op == 'claim' then
  local ids = redis.call('ZRANGE', KEYS[2], 0, tonumber(ARGV[4]) - 1)
  local n = #ids
  if n == 0 then return {} end
  redis.call('ZREMRANGEBYRANK', KEYS[2], 0, n - 1)
  local payloads = redis.call('HMGET', KEYS[1], unpack(ids))
  local deadline = now + LEASE_MS
  local leased, states, out = {}, {}, {}
  local score = lease == 'score' and string.format('%.0f', deadline * 4096 + redis.call('INCR', KEYS[3]) % 4096)
  for i = 1, n do
    local id = ids[i]
    local token = score or (now .. '-' .. i)
    if not score then
      states[#states + 1], states[#states + 2] = id .. ':s', 'L|' .. token .. '|' .. deadline
    end
    leased[#leased + 1], leased[#leased + 2] = score or deadline, id
    out[#out + 1], out[#out + 2], out[#out + 3] = id, token, payloads[i]
  end
  if not score then redis.call('HSET', KEYS[1], unpack(states)) end
  redis.call('ZADD', KEYS[4], unpack(leased))
  return out
end

if op == 'ack' then
  local n = (#ARGV - 3) / 2
  local ids, fields = {}, {}
  for i = 1, n do
    ids[i] = ARGV[2 + 2 * i]
    fields[i] = ids[i] .. ':s'
  end
  local held = lease == 'score' and redis.call('ZMSCORE', KEYS[4], unpack(ids)) or redis.call('HMGET', KEYS[1], unpack(fields))
  -- An acked task stays known (its id is not enqueued again): "record" sets its state to D and drops
  -- its payload, "score" puts D in place of the payload.
  local acked, marks, done, out = {}, {}, {}, {}
  for i = 1, n do
    local token = ARGV[3 + 2 * i]
    local lease_token = held[i] and (lease == 'score' and held[i] or string.match(held[i], '^L|([^|]*)|'))
    if lease_token == token then
      acked[#acked + 1] = ids[i]
      marks[#marks + 1], marks[#marks + 2] = lease == 'score' and ids[i] or fields[i], 'D'
      done[#done + 1], done[#done + 2] = now, ids[i]
      out[i] = 0
    else
      out[i] = 3
    end
  end
  if #acked > 0 then
    redis.call('HSET', KEYS[1], unpack(marks))
    if lease == 'record' then redis.call('HDEL', KEYS[1], unpack(acked)) end
    redis.call('ZREM', KEYS[4], unpack(acked))
    redis.call('ZADD', KEYS[5], unpack(done))
  end
  return out
end

return redis.error_reply('floor: unknown operation ' .. tostring(op))
