-- list: a page of the tasks in one state, in that state's order. Read-only.
--
-- KEYS[1] task hash   KEYS[2] the state's zset (ready: rank, scheduled: due ms, leased: lease
--         deadline ms, done/failed: finish ms)
-- ARGV[1] offset  0..1000000000
-- ARGV[2] limit   1..1000
-- Returns: per task, 4 each: id, score, type, attempts
-- Errors: LEASEQ_BAD_ARGUMENT when any argument is malformed.
return guard('list', function()
  local offset = int_arg('offset', ARGV[1], 0, 1000000000)
  local limit = count_arg('limit', ARGV[2], 1000)
  local page = redis.call('ZRANGE', KEYS[2], offset, offset + limit - 1, 'WITHSCORES')
  local ids = {}
  for i = 1, #page, 2 do ids[#ids + 1] = page[i] end
  local tasks = load_tasks(KEYS[1], ids)
  local result = {}
  for i = 1, #page, 2 do
    local task = tasks[page[i]]
    result[#result + 1] = page[i]
    result[#result + 1] = page[i + 1]
    result[#result + 1] = task and task.type or ''
    result[#result + 1] = task and task.attempts or 0
  end
  return result
end)
