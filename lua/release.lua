-- release: give back leased tasks that were never started, without using an attempt (one whose lease
-- its holder confirmed, flag r, keeps it: its handler had started; FAILED when that was its last).
--
-- KEYS the queue's keys (see lib/arguments.lua): task, config, ready, leased, corrupt (and for a task of a
--   group grouped, groups, groupwait) are used
-- ARGV[1] now   ms since epoch
-- ARGV[2..] per item, 2 each: id, token
-- Returns: per item, 1 each: status 0 ok (back to READY with its rank, attempt given back, or FAILED: token
--   revoked), 1 stale token, 2 already done, 3 unknown id, 6 corrupt (its record cannot be read: set
--   aside in corrupt, as settle does). The next claim issues a new token.
-- Errors: LEASEQ_BAD_ARGUMENT when any argument is malformed, LEASEQ_FORMAT when the queue is in
--   another storage format; nothing is written then (both are checked before the first write).
-- Uses: K, apply, fail_in_lane, fenced_presence, guard, id_arg, lanes_flush, load, make_ready
-- Uses: new_writes, plus, put_state, release_args, release_item, release_items, require_format
-- Uses: token_matches, zadd, zrem

return guard('release', function()
  local now, now_text = release_args()
  local items, ids = {}, {}
  for i = 1, release_items(BATCH_MAX) do
    local id, token = release_item(i)
    items[i] = { id = id_arg('item ' .. i .. ' id', id), token = token }
    ids[i] = items[i].id
  end
  require_format()

  local tasks = load(ids, false)
  local result, writes, config = {}, new_writes(), {}
  for _, item in ipairs(items) do
    local task = tasks[item.id]
    local state = task.state
    local status = 0
    local present = fenced_presence(writes, item.id, task, config, now)
    if present then
      status = present
    elseif state.letter ~= 'L' or not token_matches(state, item.token) then
      status = 1
    else
      -- The attempt is given back (unless its holder confirmed the lease: its handler ran); the lease
      -- generation moves on, so the token is stale from now. A confirmed run that was the last
      -- attempt ends FAILED, as a reclaim would end it: no claim may run it past its maxAttempts.
      local started = string.find(state.flags, 'r', 1, true) ~= nil
      if not started then state.attempts = plus(state.attempts, -1) end
      state.at, state.claim, state.flags = now_text, '', ''
      state.gen = plus(state.gen, 1)
      if started and tonumber(state.attempts) >= tonumber(state.max) then
        state.letter = 'F'
        state.error = 'released after attempt ' .. state.attempts .. ' of ' .. state.max
        zadd(writes, K.failed, now_text, item.id)
        fail_in_lane(state, item.id, config, now)
        put_state(writes, item.id, state)
      else
        state.letter = 'R'
        make_ready(writes, item.id, state, config, now, true) -- a task of a group: first in it again
      end
      zrem(writes, K.leased, item.id)
    end
    result[#result + 1] = status
  end
  apply(writes)
  lanes_flush(now)
  return result
end)
