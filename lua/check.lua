-- check: reads a queue in bounded steps and reports every broken invariant it finds (docs/design.md
-- "Checking a queue"): an id in no set or in two, a record that cannot be read and is not
-- quarantined, a task without its body, a lease above the lease counter, a group whose record
-- disagrees with its parked and slot-holding tasks or that nothing will let run, an ordered queue's
-- hold or a wake-up mark that points at nothing, config nextDue after work already due. With
-- repair, it also repairs what can be repaired safely, in the same step.
--
-- KEYS the queue's keys (see lib/arguments.lua): all of them
-- ARGV[1] now      ms since epoch
-- ARGV[2] cursor   "" to start, then the cursor the last step returned (at most 64 characters)
-- ARGV[3] count    1..1000, the most records (tasks, set members, groups) this step reads
-- ARGV[4] repair   1 to repair what can be repaired safely, 0 to only report (then nothing is written)
-- Returns: { the cursor to go on from ("" when the check is complete), then per problem 4 values:
--   code, the id or group it is about, what was wrong (words), repaired (1/0) }. Codes: v0_guard,
--   next_due, hold, wake, unreadable, quarantine_mark, no_set, wrong_set, two_sets, no_body, done_body, attempts,
--   lease_counter, group_slots, orphan_member, group_parked, group_record, concurrency,
--   group_stalled, schedule_record, schedule_unplanned, plan_orphan.
-- Errors: LEASEQ_BAD_ARGUMENT when any argument is malformed, LEASEQ_FORMAT when the queue is in
--   another storage format; nothing is written then (both are checked before the first write).
-- Uses: bad, check_args, check_step, guard, lanes_flush, read_config

return guard('check', function()
  local now, _, cursor, count, repair = check_args()
  local phase, position = string.match(cursor, CHECK_CURSOR_PATTERN)
  if cursor ~= '' and (#cursor > 64 or not phase or not (string.find(position, '^p?%d+$') or
    string.find(position, CHECK_POSITION_PATTERN))) then
    bad('cursor must be "" or a cursor a previous step returned, got "' .. string.sub(cursor, 1, 40) .. '"')
  end
  local config = read_config()
  local problems, next_cursor = check_step(config, now, cursor, count, repair)
  if repair then lanes_flush(now) end
  local result = { next_cursor }
  for _, value in ipairs(problems) do result[#result + 1] = value end
  return result
end)
