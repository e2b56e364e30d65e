-- Writes, collected so a batch ends with one variadic command per key. Apply adds before it
-- removes: an id is always in at least one set, whatever happens.

local function new_writes()
  return { fields = {}, drop = {}, adds = {}, removes = {} }
end

local function put(writes, field, value)
  local list = writes.fields
  list[#list + 1] = field
  list[#list + 1] = value
end

local function put_state(writes, id, state)
  put(writes, id .. ':s', state_text(state))
end

local function drop_field(writes, field)
  writes.drop[#writes.drop + 1] = field
end

-- Scores go printed by fmt (a Lua number would be printed by Redis with %.17g: exact for integers
-- below 2^53, but several times the cost).
local function zadd(writes, key, score, id)
  local list = writes.adds[key]
  if not list then list = {}; writes.adds[key] = list end
  list[#list + 1] = type(score) == 'number' and fmt(score) or score
  list[#list + 1] = id
end

local function zrem(writes, key, id)
  local list = writes.removes[key]
  if not list then list = {}; writes.removes[key] = list end
  list[#list + 1] = id
end

local function apply(writes)
  write_many('HSET', K.task, writes.fields, 2)
  for key, pairs_list in pairs(writes.adds) do write_many('ZADD', key, pairs_list, 2) end
  for key, ids in pairs(writes.removes) do write_many('ZREM', key, ids) end
  write_many('HDEL', K.task, writes.drop)
end

-- The sets a task's id may be in besides grouped (whose members carry its group and rank too).
local TASK_SETS = { K.ready, K.scheduled, K.leased, K.done, K.failed }

-- Sets aside an id whose record cannot be read: into the corrupt set with the reason, and out of
-- every set it may be in, whichever its unreadable record named; `member`, when known, is its
-- member in grouped. A parked task's member not known here is dropped by the next look at its
-- group (lane_unpark), or by check. Its state is marked (QUARANTINED before the text it had, kept
-- to read), so every script, reading the state alone, knows it as quarantined: a worker holding
-- its token cannot settle it, a cancel cannot bring it back into a set. A record already marked
-- keeps its reason and the time it was set aside.
local function quarantine(writes, id, reason, now, member)
  local old = redis.call('HGET', K.task, id .. ':s')
  if old and string.sub(old, 1, 2) == QUARANTINED then
    if redis.call('HEXISTS', K.task, id .. ':x') == 0 then put(writes, id .. ':x', reason) end
    if not redis.call('ZSCORE', K.corrupt, id) then zadd(writes, K.corrupt, now, id) end
  else
    zadd(writes, K.corrupt, now, id)
    put(writes, id .. ':x', reason)
    put(writes, id .. ':s', QUARANTINED .. (old or ''))
  end
  for _, key in ipairs(TASK_SETS) do zrem(writes, key, id) end
  if member then zrem(writes, K.grouped, member) end
end
