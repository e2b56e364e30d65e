-- drop: delete a whole queue, every key of it: tasks in every state, config, counters. Irreversible.
--
-- KEYS the queue's keys (see lib/arguments.lua): all of them
-- ARGV[1] confirm   the queue's name, repeated: a guard against dropping the wrong queue by mistake
-- ARGV[2] name      the name the keys were built from (the caller's)
-- ARGV[3] only      "drained": only when no task waits or runs there (READY, SCHEDULED, LEASED,
--                   parked in a group, set aside as corrupt), checked in this call, so a task added
--                   meanwhile (a producer of the count before a shrink) is never dropped with it; ""
--                   (or absent): whatever it holds
-- Returns: the number of keys that existed and were deleted (UNLINK: Redis frees big hashes in the
--   background, so a queue of millions of tasks does not block the server), or -1 when `only` is
--   "drained" and a task waits or runs (nothing deleted).
-- Errors: LEASEQ_BAD_ARGUMENT when confirm differs from name; nothing is deleted then.
-- Uses: K, bad, drop_args, guard, leased_count, scheduled_count, write_many

return guard('drop', function()
  local confirm, name, only = drop_args()
  if confirm ~= name then bad('confirm must repeat the queue name exactly') end
  if only == 'drained' then
    -- The sets' anchors are no tasks: the counts stats gives.
    local waiting = leased_count() + scheduled_count() + redis.call('ZCARD', K.ready)
      + redis.call('ZCARD', K.grouped) + redis.call('ZCARD', K.corrupt)
    if waiting > 0 then return -1 end
  end
  local rest = {}
  for i = 2, #KEYS do rest[#rest + 1] = KEYS[i] end
  return write_many('UNLINK', KEYS[1], rest)
end)
