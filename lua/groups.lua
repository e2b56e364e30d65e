-- groups: a page of the queue's groups with their counts, for stats per group. Read-only: one
-- HSCAN step over the groups hash (docs/groups.md), so a queue with many groups is read in pages.
--
-- KEYS the queue's keys (see _lib.lua): config, groups are used
-- ARGV[1] cursor   the HSCAN cursor: "0" to start, then the cursor the last page returned
-- ARGV[2] count    1..1000, about how many records one page reads (HSCAN's COUNT)
-- Returns: { next cursor ("0" when the scan is complete), then per group, 5 each: type, group,
--   leased (held retries of ordered groups included), ready (parked included), parked }
--   A group with nothing READY or leased has no record, so it is not listed.
-- Errors: LEASEQ_BAD_ARGUMENT when any argument is malformed, LEASEQ_FORMAT when the queue is in
--   another storage format.
return guard('groups', function()
  local cursor = ARGV[1]
  if type(cursor) ~= 'string' or not string.find(cursor, '^%d+$') or #cursor > 20 then
    bad('cursor must be the digits of an HSCAN cursor ("0" to start)')
  end
  local count = int_arg('count', ARGV[2], 1, 1000)
  require_format()
  local page = redis.call('HSCAN', K.groups, cursor, 'COUNT', count)
  local result = { page[1] }
  local entries = page[2]
  for i = 1, #entries, 2 do
    local name, text = entries[i], entries[i + 1]
    local task_type, group = string.match(name, '^([^|]+)|(.+)$')
    if task_type then
      local active, ready, parked = string.match(text, '^(%d+)|(%d+)|%d+|?(%d*)')
      if active then
        result[#result + 1] = task_type
        result[#result + 1] = group
        result[#result + 1] = tonumber(active)
        result[#result + 1] = tonumber(ready)
        result[#result + 1] = tonumber(parked) or 0
      end
    end
  end
  return result
end)
