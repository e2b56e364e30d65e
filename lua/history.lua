-- history: how many tasks finished DONE and FAILED in each minute of the last `minutes`, from the
-- finish times that score the done and failed sets (so what retention trimmed is not counted).
-- Read-only; one ZCOUNT per minute and set.
--
-- KEYS the queue's keys (see lib/arguments.lua): config, done, failed are used
-- ARGV[1] now      ms since epoch
-- ARGV[2] minutes  1..240
-- Returns: { startMs (the first minute's start: the minute `now` is in, minus minutes - 1), then per
--   minute, oldest first, 2 each: done, failed }
-- Errors: LEASEQ_BAD_ARGUMENT when any argument is malformed, LEASEQ_FORMAT when the queue is in
--   another storage format.
-- Uses: K, fmt, guard, history_args, require_format

return guard('history', function()
  local now, _, minutes = history_args()
  require_format()
  local start = (math.floor(now / 60000) - minutes + 1) * 60000
  local result = { fmt(start) }
  local any_done, any_failed = redis.call('ZCARD', K.done) > 0, redis.call('ZCARD', K.failed) > 0
  for i = 0, minutes - 1 do
    local from, to = fmt(start + i * 60000), '(' .. fmt(start + (i + 1) * 60000)
    result[#result + 1] = any_done and redis.call('ZCOUNT', K.done, from, to) or 0
    result[#result + 1] = any_failed and redis.call('ZCOUNT', K.failed, from, to) or 0
  end
  return result
end)
