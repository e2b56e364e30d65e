-- schedules: read the schedules (docs/schedules.md), in the order of their next planning: those
-- due for planning by `until` (the reclaimer's), or all of them, paused ones last (the CLI's and
-- the dashboard's). Read-only.
--
-- KEYS the queue's keys (see lib/arguments.lua): task, config, schedules, plan are used
-- ARGV[1] until   ms since epoch: the schedules whose next planning is due by then
-- ARGV[2] all     1: every schedule (until ignored)
-- ARGV[3] offset  0..1000000000, where the page starts
-- ARGV[4] count   1..1000, the most schedules answered
-- Reads config: v, callerClock. Reads per schedule its hash fields and its last slot's task state.
-- Returns: the store's clock (ms; "" when the queue trusts its callers' clocks: callerClock), then
--   per schedule 12 values: name, definition, revision, cursor, next, paused, owner,
--   lastId, lastState, made, passedOver, aside (why the planner set it aside, or "") (the
--   planner's read, not all, answers the first five and defaults for the rest: it reads only what
--   planning needs)
-- Errors: LEASEQ_BAD_ARGUMENT when any argument is malformed, LEASEQ_FORMAT when the queue is in
--   another storage format.
-- Uses: K, fmt, guard, read_config_fields, read_many, schedules_args, store_time

return guard('schedules', function()
  local until_ms, _, all, offset, count = schedules_args()
  local config = read_config_fields({ 'callerClock' })
  local page
  if all then
    page = redis.call('ZRANGE', K.plan, offset, offset + count - 1, 'WITHSCORES')
  else
    page = redis.call('ZRANGEBYSCORE', K.plan, '-inf', fmt(until_ms), 'WITHSCORES', 'LIMIT', offset, count)
  end
  local names, fields = {}, {}
  -- The planner's read (not all) needs only the definition, revision and cursor of each.
  local suffixes = all and { '', ':v', ':c', ':p', ':d', ':l', ':m', ':e' } or { '', ':v', ':c' }
  local width = #suffixes
  for i = 1, #page, 2 do
    local name = page[i]
    names[#names + 1] = name
    for _, suffix in ipairs(suffixes) do fields[#fields + 1] = name .. suffix end
  end
  local values = read_many('HMGET', K.schedules, fields)
  local lasts = {}
  if all then
    local last_fields = {}
    for i = 1, #names do
      local last = values[width * (i - 1) + 6]
      last_fields[#last_fields + 1] = (last or '#none') .. ':s'
      last_fields[#last_fields + 1] = last or '#none'
    end
    lasts = read_many('HMGET', K.task, last_fields)
  end
  -- The store's clock: a planner whose clock runs ahead plans at this time (decision_time).
  local store_now = config.callerClock ~= '1' and store_time()
  local result = { store_now and fmt(store_now) or '' }
  for i, name in ipairs(names) do
    local at = width * (i - 1)
    local v = function(k) return values[at + k] or '' end
    if all then
      local state, body = lasts[2 * i - 1], lasts[2 * i]
      local letter = ''
      if state then letter = string.sub(state, 1, 1) elseif body then letter = 'R' end
      local done, passed = string.match(v(7), SCHEDULE_COUNTS_PATTERN)
      for _, value in ipairs({ name, v(1), v(2), v(3), page[2 * i], v(4) == '1' and '1' or '0',
        (v(5) == '0' and '') or v(5), v(6), letter, done or '0', passed or '0', v(8) }) do
        result[#result + 1] = value
      end
    else
      for _, value in ipairs({ name, v(1), v(2), v(3), page[2 * i], '0', '', '', '', '0', '0', '' }) do
        result[#result + 1] = value
      end
    end
  end
  return result
end)
