-- groups: a page of the queue's groups with their counts, for stats per group. Read-only: one
-- HSCAN step over the groups hash (docs/groups.md), so a queue with many groups is read in pages.
--
-- KEYS the queue's keys (see lib/arguments.lua): config, groups are used
-- ARGV[1] cursor   the HSCAN cursor: "0" to start, then the cursor the last page returned
-- ARGV[2] count    1..1000, about how many records one page reads (HSCAN's COUNT)
-- Returns: { next cursor ("" when the scan is complete), then per group, 7 each: type, group,
--   leased (held retries of ordered groups included), ready (parked included), parked, held (the
--   FAILED task an ordered group with onFailure hold waits behind, or ""), parkedSince (when its
--   next parked task became READY, ms, from parkedsince; "" when none is parked) }
--   (types' own records, "@<type>", and the lane of the tasks without a group are not groups)
--   A group with nothing READY or leased has no record, so it is not listed (one whose holders
--   were all acked may be listed with 0 and 0 until tick sweeps its record).
-- Errors: LEASEQ_BAD_ARGUMENT when any argument is malformed, LEASEQ_FORMAT when the queue is in
--   another storage format.
-- Uses: K, bad, groups_args, guard, lane_fields, read_many, require_format, slot_kind

return guard('groups', function()
  local cursor, count = groups_args()
  if not string.find(cursor, '^%d+$') or #cursor > 20 then bad('cursor must be the digits of an HSCAN cursor ("0" to start)') end
  require_format()
  local page = redis.call('HSCAN', K.groups, cursor, 'COUNT', count)
  local result = { page[1] == '0' and '' or page[1] }
  local entries = page[2]
  -- The records, and their holders' states (one HMGET): a holder acked since is not counted.
  local rows, ids, owners = {}, {}, {}
  for i = 1, #entries, 2 do
    local name, text = entries[i], entries[i + 1]
    local task_type, group = string.match(name, LANE_NAME_PATTERN)
    local ready, _, holders, parked = lane_fields(text)
    if task_type and ready then
      local row = { task_type, group, 0, ready, parked, '', name }
      rows[#rows + 1] = row
      for id in string.gmatch(holders, '[^,]+') do
        ids[#ids + 1] = id
        owners[#owners + 1] = row
      end
    end
  end
  if #ids > 0 then
    local fields = {}
    for i, id in ipairs(ids) do fields[i] = id .. ':s' end
    local states = read_many('HMGET', K.task, fields)
    for i = 1, #ids do
      local row = owners[i]
      local kind = states[i] and slot_kind(states[i], row[7])
      if kind == 'lease' or kind == 'held' then row[3] = row[3] + 1 end
      if kind == 'failed' then row[6] = ids[i] end
    end
  end
  -- When each group's parked work started waiting: one ZMSCORE for the page.
  local names = {}
  for i, row in ipairs(rows) do names[i] = row[7] end
  local since = read_many('ZMSCORE', K.parkedsince, names)
  for i, row in ipairs(rows) do
    for j = 1, 6 do result[#result + 1] = row[j] end
    result[#result + 1] = since[i] or ''
  end
  return result
end)
