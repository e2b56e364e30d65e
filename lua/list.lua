-- list: a page of the tasks in one state, in that state's order. Read-only.
--
-- KEYS the queue's keys (see lib/arguments.lua): task, config, and the state's set (ready: rank, scheduled: due ms,
--   leased: lease deadline ms, done/failed: finish ms, corrupt: quarantine ms)
-- ARGV[1] state   ready | scheduled | leased | done | failed | corrupt
-- ARGV[2] offset  0..1000000000
-- ARGV[3] limit   1..1000
-- Returns: per task, 6 each: id, score, type, attempts, last error (the reason, for corrupt), group
--   ready lists the ready set (by rank; a group's head by its turn), then the parked ones (the
--   grouped set: behind their group's head by group, then rank; set aside while their type may not
--   run, by type, then rank)
--   A READY task never claimed keeps its type in its body: the page reads those bodies.
-- Errors: LEASEQ_BAD_ARGUMENT when any argument is malformed, LEASEQ_FORMAT when the queue is in
--   another storage format.
-- Uses: K, guard, list_args, load, read_many, require_format

return guard('list', function()
  local sets = { ready = K.ready, scheduled = K.scheduled, leased = K.leased, done = K.done, failed = K.failed, corrupt = K.corrupt }
  local state, offset, limit = list_args()
  local set = sets[state]
  require_format()
  local page
  if set == K.scheduled then -- the v0 guard (score 0) aside
    page = redis.call('ZRANGEBYSCORE', set, SCHEDULED_FROM, '+inf', 'WITHSCORES', 'LIMIT', offset, limit)
  elseif set == K.leased then -- the anchor (+inf) aside
    page = redis.call('ZRANGEBYSCORE', set, '-inf', '(+inf', 'WITHSCORES', 'LIMIT', offset, limit)
  else
    page = redis.call('ZRANGE', set, offset, offset + limit - 1, 'WITHSCORES')
  end
  if set == K.ready and #page < 2 * limit then
    -- Then the READY tasks behind their group's head, by group and rank.
    local from = math.max(0, offset - redis.call('ZCARD', K.ready))
    local rest = limit - #page / 2
    for _, member in ipairs(redis.call('ZRANGE', K.grouped, from, from + rest - 1)) do
      local rank, id = string.match(member, MEMBER_PATTERN)
      if id then
        page[#page + 1] = id
        page[#page + 1] = tostring(tonumber(rank))
      end
    end
  end
  local ids = {}
  for i = 1, #page, 2 do ids[#ids + 1] = page[i] end
  local reasons = {}
  if set == K.corrupt and #ids > 0 then
    local fields = {}
    for i, id in ipairs(ids) do fields[i] = id .. ':x' end
    reasons = read_many('HMGET', K.task, fields)
  end
  local tasks = load(ids, false)
  local result = {}
  for i = 1, #page, 2 do
    local id = page[i]
    local task = tasks[id]
    local state, info = task.state, task.body_info
    result[#result + 1] = id
    result[#result + 1] = page[i + 1]
    result[#result + 1] = (state and state.type) or (info and info.type) or ''
    result[#result + 1] = state and state.attempts or 0
    result[#result + 1] = reasons[(i + 1) / 2] or (state and state.letter ~= 'D' and state.error) or '' -- a DONE one's is its result
    result[#result + 1] = (state and state.group) or (info and info.group) or ''
  end
  return result
end)
