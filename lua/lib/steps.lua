-- Steps several scripts share.

-- config nextDue when nothing is scheduled: claims skip the scheduled set entirely.
local NOTHING_DUE = TIME_MAX_MS + 1

local function set_next_due(config, due)
  local text = fmt(due)
  if config.nextDue ~= text then
    redis.call('HSET', K.config, 'nextDue', text)
    config.nextDue = text
  end
end

-- The earliest time something waiting becomes ready: the head of the scheduled set (the v0 guard
-- at score 0 aside), or of groupwait (a group or a type waiting to run again); NOTHING_DUE when
-- neither.
local function earliest_due()
  local due = NOTHING_DUE
  local head = redis.call('ZRANGEBYSCORE', K.scheduled, SCHEDULED_FROM, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
  if #head > 0 then due = tonumber(head[2]) end
  head = redis.call('ZRANGE', K.groupwait, 0, 0, 'WITHSCORES')
  if #head > 0 and tonumber(head[2]) < due then due = tonumber(head[2]) end
  return due
end

-- A task became SCHEDULED at `due`: keep config nextDue the earliest due time, so a claim knows
-- without reading the scheduled set whether anything is due. `config` must carry nextDue.
local function note_due(config, due)
  local known = tonumber(config.nextDue)
  if known == nil then set_next_due(config, math.min(due, earliest_due()))
  elseif due < known then set_next_due(config, due) end
end

-- LEASED tasks: the leased set without its anchor.
local function leased_count()
  return redis.call('ZCOUNT', K.leased, '-inf', '(+inf')
end

-- SCHEDULED tasks: the scheduled set without the v0 guard.
local function scheduled_count()
  return redis.call('ZCOUNT', K.scheduled, SCHEDULED_FROM, '+inf')
end
