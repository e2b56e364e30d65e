-- extend: push the lease deadline of leased tasks, each fenced by its lease token.
--
-- KEYS the queue's keys (see lib/arguments.lua): task, config, leased, corrupt (and for a task of a
--   group grouped, groups, groupwait) are used
-- ARGV[1] now   ms since epoch
-- ARGV[2..] per item, 4 each: id, token, leaseMs (1..86400000: the new deadline is now + leaseMs),
--   progress (JSON text the handler reported, at most PROGRESS_MAX_BYTES, or "" for none: kept in
--   "<id>:p" until the task is trimmed or deleted, written with the state: no command more)
-- Returns: per item, 2 each: status, lease deadline (ms; 0 unless status is 0)
--   status 0 ok, 1 stale token, 2 already done, 3 unknown id, 6 corrupt (its record cannot be read:
--   set aside in corrupt, as settle and release do)
--   A lease past its deadline that no reclaim has taken yet can still be extended. An extend confirms
--   the lease (flag r): its holder runs it, so if it runs out later, the reclaim keeps the attempt
--   (one never confirmed gives it back: its handler may never have started).
-- Errors: LEASEQ_BAD_ARGUMENT when any argument is malformed, LEASEQ_FORMAT when the queue is in
--   another storage format; nothing is written then (both are checked before the first write).
-- Uses: K, apply, bad, extend_args, extend_item, extend_items, fenced_presence, fmt, guard, id_arg
-- Uses: int_arg, load, new_writes, put, put_state, require_format, token_matches, zadd

return guard('extend', function()
  local now = extend_args()
  local items, ids = {}, {}
  for i = 1, extend_items(BATCH_MAX) do
    local id, token, lease, progress = extend_item(i)
    items[i] = {
      id = id_arg('item ' .. i .. ' id', id),
      token = token,
      lease = int_arg('item ' .. i .. ' leaseMs', lease, 1, LEASE_MAX_MS),
      progress = progress,
    }
    if #progress > PROGRESS_MAX_BYTES then
      bad('item ' .. i .. ' progress is ' .. #progress .. ' bytes; at most ' .. PROGRESS_MAX_BYTES)
    end
    ids[i] = items[i].id
  end
  require_format()

  local tasks = load(ids, false)
  local result, writes, config = {}, new_writes(), {}
  for _, item in ipairs(items) do
    local task = tasks[item.id]
    local state = task.state
    local status, deadline = 0, 0
    local present = fenced_presence(writes, item.id, task, config, now)
    if present then
      status = present
    elseif state.letter ~= 'L' or not token_matches(state, item.token) then
      status = 1
    else
      deadline = now + item.lease
      state.at = fmt(deadline)
      -- Its holder is alive and running it: a reclaim from now on charges the attempt.
      if not string.find(state.flags, 'r', 1, true) then state.flags = state.flags .. 'r' end
      zadd(writes, K.leased, deadline, item.id)
      put_state(writes, item.id, state)
      if item.progress ~= '' then put(writes, item.id .. PROGRESS, item.progress) end
    end
    result[#result + 1] = status
    result[#result + 1] = deadline
  end
  apply(writes)
  return result
end)
