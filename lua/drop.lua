-- drop: delete a whole queue, every key of it: tasks in every state, config, counters. Irreversible.
--
-- KEYS the queue's keys (see lib/arguments.lua): all of them
-- ARGV[1] confirm   the queue's name, repeated: a guard against dropping the wrong queue by mistake
-- ARGV[2] name      the name the keys were built from (the caller's)
-- Returns: the number of keys that existed and were deleted (UNLINK: Redis frees big hashes in the
--   background, so a queue of millions of tasks does not block the server).
-- Errors: LEASEQ_BAD_ARGUMENT when confirm differs from name; nothing is deleted then.
-- Uses: bad, drop_args, guard, write_many

return guard('drop', function()
  local confirm, name = drop_args()
  if confirm ~= name then bad('confirm must repeat the queue name exactly') end
  local rest = {}
  for i = 2, #KEYS do rest[#rest + 1] = KEYS[i] end
  return write_many('UNLINK', KEYS[1], rest)
end)
