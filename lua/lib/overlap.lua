-- Schedules' overlap rule (docs/schedules.md "Overlap"): a slot of a schedule with overlap "skip"
-- is passed over while the schedule's previous slot's task still waits or runs.

-- A schedule's slot task with overlap "skip" falls due (flag k): whether it is passed over, its
-- schedule's previous slot's task (`<name>:r`) still waiting (READY, parked, a retry) or running.
-- When it is not, it becomes the schedule's running slot. A passed-over slot counts in `<name>:m`.
local function overlap_passed(id)
  local name = string.match(id, '^(.+)@[^@]+$')
  if not name then return false end
  local previous = redis.call('HGET', K.schedules, name .. ':r')
  if previous then
    local found = redis.call('HMGET', K.task, previous .. ':s', previous)
    local letter = found[1] and string.sub(found[1], 1, 1) or (found[2] and 'R') or nil
    if letter == 'R' or letter == 'W' or letter == 'L' or letter == 'S' then
      local done, passed = string.match(redis.call('HGET', K.schedules, name .. ':m') or '', SCHEDULE_COUNTS_PATTERN)
      redis.call('HSET', K.schedules, name .. ':m', schedule_counts_line(done or '0', fmt((tonumber(passed) or 0) + 1)))
      return true
    end
  end
  redis.call('HSET', K.schedules, name .. ':r', id)
  return false
end
